//! The scenario file schema (TOML), its defaults, and validation into a resolved [`Plan`].
//!
//! A scenario has these parts:
//! - `[run]`: duration, warm-up, time-series bin width, default seed, tracing.
//! - a topology: either the `[dumbbell]` builder, or explicit `[[node]]` + `[[link]]`
//!   tables (or both: explicit tables add to the dumbbell).
//! - `[[flow]]`: traffic, each with a `kind` (see `aqmlab list workloads`).
//! - `[tcp]` (optional): scenario-wide TCP defaults (see `crate::tcp::TcpOptions`).
//!
//! Access-network models (see [`access`] and `docs/link-models.md`): a `shaper` on a
//! link or dumbbell direction, the `[docsis]` topology builder, and WiFi BSSes
//! (`[[wifi]]`, or `[dumbbell.wifi]` to put the dumbbell's clients behind a WiFi hop).
//!
//! Validation may also produce [`ScenarioWarning`]s (in [`Plan::warnings`]): legal but
//! probably unintended combinations, such as a shaper or service-flow rate above the
//! rate of the link it sits on.
//!
//! Every field has a documented default. Parsing and validation errors are
//! [`ScenarioError`]s whose `field` is the dotted path of the offending key (for example
//! `dumbbell.qdisc.kind` or `flow[2].to`) and whose message names the bad value and what
//! is allowed. See `docs/scenario.md` for the reference with examples.

pub mod access;

use crate::app::{AppConfig, AppEnv};
use crate::link::{LinkParams, LossPeriod, LowerParams, MediumParams, ShaperConfig};
use crate::packet::NodeId;
use crate::qdisc::{BuildCtx, QdiscConfig};
use crate::rng::Rng;
use crate::time::{Rate, SimDuration, SimTime};
use crate::units::{DurationSpec, RateSpec};
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::fmt;

/// A bad scenario: which field, and what is wrong with it (one line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// Dotted path of the offending field, e.g. `flow[0].rate`; empty for whole-file errors.
    pub field: String,
    /// What is wrong, including the bad value and the allowed values.
    pub message: String,
}

impl ScenarioError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

/// A legal but suspicious scenario setting: which field, and why it is probably not what
/// was meant. Runs go ahead; warnings are kept in the `Plan` and the results.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioWarning {
    /// Dotted path of the field, as in [`ScenarioError`].
    pub field: String,
    pub message: String,
}

impl fmt::Display for ScenarioWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "warning: {}: {}", self.field, self.message)
    }
}

fn d_duration_10s() -> DurationSpec {
    DurationSpec(SimDuration::from_secs(10))
}
fn d_zero() -> DurationSpec {
    DurationSpec(SimDuration::ZERO)
}
fn d_bin() -> DurationSpec {
    DurationSpec(SimDuration::from_millis(200))
}
fn d_seed() -> u64 {
    1
}
fn d_overhead() -> u32 {
    14
}
fn d_mtu() -> u32 {
    1500
}
fn d_devq() -> u32 {
    1
}
fn d_true() -> bool {
    true
}
fn d_pairs() -> u32 {
    1
}

/// `[run]`: how long and how to measure.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    pub name: Option<String>,
    pub description: Option<String>,
    /// Simulated duration. Default 10 s.
    #[serde(default = "d_duration_10s")]
    pub duration: DurationSpec,
    /// Summary statistics (goodput means, sojourn percentiles, utilisation) ignore what
    /// happens before this. Time series and samples cover the whole run. Default 0.
    #[serde(default = "d_zero")]
    pub warmup: DurationSpec,
    /// Width of time-series bins. Default 200 ms (Flent's sampling interval).
    #[serde(default = "d_bin")]
    pub bin: DurationSpec,
    /// Seed used when none is given on the command line / API call. Default 1.
    #[serde(default = "d_seed")]
    pub seed: u64,
    /// Record qdisc state traces (CoDel count, PIE p, ...) on bottleneck links. Default false.
    #[serde(default)]
    pub trace: bool,
    /// Time windows `[start, stop]` in which every packet leaving a measured queue (the
    /// dumbbell bottlenecks, the DOCSIS downstream, links with `trace = true`) is recorded
    /// as a sample `sojourn` (seconds) and every drop there as a sample `drop`. Default none.
    #[serde(default)]
    pub packet_trace: Vec<[DurationSpec; 2]>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            name: None,
            description: None,
            duration: d_duration_10s(),
            warmup: d_zero(),
            bin: d_bin(),
            seed: d_seed(),
            trace: false,
            packet_trace: Vec::new(),
        }
    }
}

/// A scheduled loss period on a link, e.g. an outage: `{ start = "10s", stop = "11s", loss = 1.0 }`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LossPeriodConfig {
    pub start: DurationSpec,
    pub stop: DurationSpec,
    /// Loss probability in [0, 1] during the period. Default 1 (outage).
    #[serde(default = "d_one")]
    pub loss: f64,
}
fn d_one() -> f64 {
    1.0
}

/// Per-direction overrides of the dumbbell bottleneck (`[dumbbell.up]`, `[dumbbell.down]`).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DirConfig {
    pub rate: Option<RateSpec>,
    pub qdisc: Option<QdiscConfig>,
    /// Bernoulli loss probability on the wire. Default 0.
    pub loss: Option<f64>,
    #[serde(default)]
    pub loss_periods: Vec<LossPeriodConfig>,
    /// Token-bucket shaper between this direction's qdisc and the bottleneck wire, e.g.
    /// `shaper = { rate = "14Mbit" }` on a faster `rate`. Default: none.
    pub shaper: Option<ShaperConfig>,
}

/// `[dumbbell]`: N clients ↔ router_a ⇄ bottleneck ⇄ router_b ↔ N servers.
///
/// "up" is client → server (router_a → router_b), "down" is server → client.
/// Hosts are named `client0..`, `server0..`; routers `router_a` (client side) and
/// `router_b`; the bottleneck links `bottleneck_up` and `bottleneck_down`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DumbbellConfig {
    /// Number of client/server host pairs. Default 1.
    #[serde(default = "d_pairs")]
    pub pairs: u32,
    /// Bottleneck rate in both directions (overridden by `up.rate` / `down.rate`).
    pub rate: Option<RateSpec>,
    /// One-way propagation delay of the bottleneck. Default 0.
    #[serde(default = "d_zero")]
    pub delay: DurationSpec,
    /// Bottleneck qdisc in both directions (overridden per direction). Default fifo 1000.
    pub qdisc: Option<QdiscConfig>,
    #[serde(default)]
    pub up: DirConfig,
    #[serde(default)]
    pub down: DirConfig,
    /// Access link rate. Default: 10 × the faster bottleneck direction, at least 1 Gbit/s.
    pub access_rate: Option<RateSpec>,
    /// One-way delay of every access link unless given per host. Default 0.
    #[serde(default = "d_zero")]
    pub access_delay: DurationSpec,
    /// Per-client one-way access delays (length = pairs), so each flow can have its own RTT.
    pub client_delays: Option<Vec<DurationSpec>>,
    /// Per-server one-way access delays (length = pairs).
    pub server_delays: Option<Vec<DurationSpec>>,
    /// Qdisc on access links (hosts' and routers' egress towards hosts). Default fifo 1000.
    pub access_qdisc: Option<QdiscConfig>,
    /// Framing bytes added per packet on the wire (Ethernet header = 14). Default 14.
    #[serde(default = "d_overhead")]
    pub overhead: u32,
    /// Largest IP packet. Default 1500.
    #[serde(default = "d_mtu")]
    pub mtu: u32,
    /// Device queue below the bottleneck qdisc, in packets, counting the one being sent. Default 1.
    #[serde(default = "d_devq")]
    pub device_queue: u32,
    /// Replaces the client access links by one WiFi BSS with `router_a` as the access
    /// point and every client as a station (`[dumbbell.wifi]`). Default: wired clients.
    pub wifi: Option<access::WifiConfig>,
}

#[derive(Copy, Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    Host,
    Router,
}

/// `[[node]]`: a host (runs applications) or a router (forwards).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    pub name: String,
    pub kind: NodeKind,
}

/// `[[link]]`: a link between two nodes; `duplex = true` (default) also creates the reverse.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    pub name: Option<String>,
    pub from: String,
    pub to: String,
    pub rate: RateSpec,
    #[serde(default = "d_zero")]
    pub delay: DurationSpec,
    #[serde(default)]
    pub qdisc: QdiscConfig,
    #[serde(default = "d_overhead")]
    pub overhead: u32,
    #[serde(default = "d_mtu")]
    pub mtu: u32,
    #[serde(default = "d_devq")]
    pub device_queue: u32,
    #[serde(default)]
    pub loss: f64,
    #[serde(default)]
    pub loss_periods: Vec<LossPeriodConfig>,
    #[serde(default = "d_true")]
    pub duplex: bool,
    /// Record qdisc state traces on this link. Default false (or `run.trace`).
    #[serde(default)]
    pub trace: bool,
    /// Token-bucket shaper between the qdisc and the wire (each direction of a duplex
    /// link gets its own). Default: none.
    pub shaper: Option<ShaperConfig>,
}

/// `[[flow]]`: one traffic source. Common keys: `kind`, `from`, `to`, `start`, `stop`,
/// `start_spread`, `count`, `name`; the rest depends on `kind`.
#[derive(Clone, Debug, Serialize)]
pub struct FlowConfig {
    pub name: Option<String>,
    /// Sending host; with `count > 1`, `{i}` is replaced by the instance number.
    pub from: String,
    /// Receiving host; `{i}` as for `from`.
    pub to: String,
    /// Start time. Default 0.
    pub start: DurationSpec,
    /// Each instance starts at a uniformly random time in [start, start + start_spread).
    pub start_spread: DurationSpec,
    /// Stop time. Default: end of run.
    pub stop: Option<DurationSpec>,
    /// Number of identical instances. Default 1.
    pub count: u32,
    #[serde(flatten)]
    pub app: AppConfig,
}

const FLOW_COMMON: &[&str] = &[
    "name",
    "from",
    "to",
    "start",
    "start_spread",
    "stop",
    "count",
];

impl<'de> Deserialize<'de> for FlowConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut t = toml::Table::deserialize(d)?;
        fn take<T: serde::de::DeserializeOwned, E: de::Error>(
            t: &mut toml::Table,
            k: &str,
        ) -> Result<Option<T>, E> {
            match t.remove(k) {
                None => Ok(None),
                Some(v) => v.try_into().map(Some).map_err(|e: toml::de::Error| {
                    E::custom(format!("field `{k}`: {}", e.message().trim()))
                }),
            }
        }
        let from: Option<String> = take(&mut t, "from")?;
        let to: Option<String> = take(&mut t, "to")?;
        let name = take(&mut t, "name")?;
        let start = take(&mut t, "start")?.unwrap_or(d_zero());
        let start_spread = take(&mut t, "start_spread")?.unwrap_or(d_zero());
        let stop = take(&mut t, "stop")?;
        let count: i64 = take(&mut t, "count")?.unwrap_or(1);
        if !t.contains_key("kind") {
            return Err(de::Error::custom(format!(
                "missing field `kind` (allowed: {})",
                crate::app::WORKLOAD_KINDS
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let (Some(from), Some(to)) = (from, to) else {
            return Err(de::Error::custom(
                "missing field `from` or `to` (host names)",
            ));
        };
        if count < 1 || count > 1_000_000 {
            return Err(de::Error::custom(format!(
                "field `count`: {count} is not allowed (1 to 1000000)"
            )));
        }
        let app = AppConfig::deserialize(toml::Value::Table(t)).map_err(|e| {
            let m = e.message().trim().to_string();
            // "unknown field `x`, expected one of `a`, `b`" → name the kind's keys and the common keys.
            let unknown_key = m.contains("unknown field");
            let m = m
                .replace("unknown field", "unknown field for this kind")
                .replace("expected one of", "allowed for this kind:");
            de::Error::custom(if unknown_key && m.contains("allowed for this kind:") {
                format!("{m}; common keys: {}", FLOW_COMMON.join(", "))
            } else {
                m
            })
        })?;
        Ok(FlowConfig {
            name,
            from,
            to,
            start,
            start_spread,
            stop,
            count: count as u32,
            app,
        })
    }
}

/// Deserializes an internally tagged table (`kind = "..."` plus the kind's fields).
///
/// serde buffers a tagged table before it picks the variant, so an error inside the
/// variant's fields loses its key. On failure this re-reads the kind's own config
/// struct with path tracking (`locate`) and reports the key as a message prefix
/// "field `KEY`: ...", which [`Scenario::from_toml_str`] moves into `ScenarioError::field`.
pub(crate) fn from_tagged_table<T: serde::de::DeserializeOwned>(
    t: toml::Table,
    locate: fn(&str, toml::Value) -> Option<(String, String)>,
) -> Result<T, String> {
    let err = match toml::Value::Table(t.clone()).try_into::<T>() {
        Ok(v) => return Ok(v),
        Err(e) => e.message().trim().to_string(),
    };
    let Some(kind) = t.get("kind").and_then(|k| k.as_str()).map(str::to_string) else {
        return Err(format!("field `kind`: {err}"));
    };
    let mut rest = t;
    rest.remove("kind");
    // A known kind re-reads its own fields, so an unknown variant *inside* them (e.g.
    // `tcp = { cc = "bbr" }`) is located there; only an unknown kind is the kind's fault.
    match locate(&kind, toml::Value::Table(rest)) {
        Some((path, msg)) if !path.is_empty() && path != "." => {
            Err(format!("field `{path}`: {msg}"))
        }
        Some((_, msg)) => Err(msg),
        None if err.starts_with("unknown variant") => Err(format!("field `kind`: {err}")),
        None => Err(err),
    }
}

/// The path and message of the error deserializing `v` as `C`, if any.
pub(crate) fn locate_error<C: serde::de::DeserializeOwned>(
    v: toml::Value,
) -> Option<(String, String)> {
    serde_path_to_error::deserialize::<_, C>(v)
        .err()
        .map(|e| (e.path().to_string(), e.inner().message().trim().to_string()))
}

/// Moves leading "field `KEY`: " prefixes of a message into the dotted path.
fn split_field_prefixes(mut path: String, mut msg: &str) -> (String, String) {
    while let Some(rest) = msg.strip_prefix("field `") {
        let Some(end) = rest.find("`: ") else { break };
        let key = &rest[..end];
        if !path.is_empty() && !key.starts_with('[') {
            path.push('.');
        }
        path.push_str(key);
        msg = &rest[end + 3..];
    }
    (path, msg.to_string())
}

/// A whole scenario file.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub run: RunConfig,
    pub dumbbell: Option<DumbbellConfig>,
    #[serde(default, rename = "node")]
    pub nodes: Vec<NodeConfig>,
    #[serde(default, rename = "link")]
    pub links: Vec<LinkConfig>,
    /// `[docsis]`: a DOCSIS cable access network (CMTS, cable modems, servers).
    pub docsis: Option<access::DocsisConfig>,
    /// `[[wifi]]`: WiFi BSSes joining an access point to stations.
    #[serde(default, rename = "wifi")]
    pub wifi: Vec<access::WifiConfig>,
    #[serde(default, rename = "flow")]
    pub flows: Vec<FlowConfig>,
    /// `[tcp]`: scenario-wide TCP defaults; a flow's `tcp = { ... }` overrides fields.
    #[serde(default, skip_serializing_if = "crate::tcp::TcpOptions::is_empty")]
    pub tcp: crate::tcp::TcpOptions,
}

/// A resolved node.
#[derive(Clone, Debug)]
pub struct PlanNode {
    pub name: String,
    pub kind: NodeKind,
}

/// A resolved flow instance.
#[derive(Clone, Debug)]
pub struct PlanFlow {
    pub name: String,
    pub src: NodeId,
    pub dst: NodeId,
    pub start: SimTime,
    pub stop: SimTime,
    pub app: AppConfig,
    /// Index of the `[[flow]]` table this instance comes from.
    pub group: u32,
    /// Instance number within the table (`0..count`); the flows a composite workload
    /// expands into share their instance's number (and its start time).
    pub instance: u32,
    /// Sum of the propagation delays from `src` to `dst` and back (no serialisation).
    pub base_rtt: SimDuration,
}

/// A validated scenario with names resolved to indices, ready to build.
#[derive(Clone, Debug)]
pub struct Plan {
    pub duration: SimDuration,
    pub warmup: SimDuration,
    pub bin: SimDuration,
    /// `run.packet_trace` windows.
    pub packet_trace: Vec<(SimTime, SimTime)>,
    pub nodes: Vec<PlanNode>,
    pub links: Vec<(LinkParams, QdiscConfig)>,
    /// WiFi media (one per BSS); their member links are in `links`.
    pub media: Vec<MediumParams>,
    pub flows: Vec<PlanFlow>,
    /// Legal but suspicious settings found by validation.
    pub warnings: Vec<ScenarioWarning>,
    /// What applications are validated and built with (scenario-wide defaults).
    pub env: AppEnv,
}

impl Scenario {
    /// Parses TOML text. Errors carry the dotted path of the offending key and the line.
    pub fn from_toml_str(text: &str) -> Result<Scenario, ScenarioError> {
        let de = toml::Deserializer::new(text);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let line = inner
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            let path = if path == "." { String::new() } else { path };
            let (path, msg) =
                split_field_prefixes(path, &inner.message().trim().replace('\n', " "));
            let msg = match line {
                Some(l) => format!("{msg} (line {l})"),
                None => msg,
            };
            ScenarioError::new(path, msg)
        })
    }

    /// Reads and parses a scenario file.
    pub fn from_file(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScenarioError::new("", format!("cannot read {}: {e}", path.display())))?;
        Self::from_toml_str(&text)
    }

    pub fn to_toml_string(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Checks everything that can be checked before running and resolves names.
    pub fn validate(&self) -> Result<Plan, ScenarioError> {
        let run = &self.run;
        if run.duration.0.is_zero() {
            return Err(ScenarioError::new("run.duration", "must be positive"));
        }
        if run.bin.0.is_zero() {
            return Err(ScenarioError::new("run.bin", "must be positive"));
        }
        if run.warmup.0 >= run.duration.0 {
            return Err(ScenarioError::new(
                "run.warmup",
                format!(
                    "{} must be shorter than run.duration ({})",
                    run.warmup.0, run.duration.0
                ),
            ));
        }
        let mut b = Builder {
            nodes: Vec::new(),
            by_name: HashMap::new(),
            links: Vec::new(),
            media: Vec::new(),
            warnings: Vec::new(),
            trace: run.trace,
        };
        if let Some(d) = &self.dumbbell {
            b.dumbbell(d)?;
        }
        if let Some(d) = &self.docsis {
            if self.dumbbell.is_some() {
                return Err(ScenarioError::new("docsis", "use either [dumbbell] or [docsis], not both (both create hosts named server0..)"));
            }
            b.docsis(d)?;
        }
        for (i, n) in self.nodes.iter().enumerate() {
            b.add_node(&n.name, n.kind, &format!("node[{i}].name"))?;
        }
        for (i, l) in self.links.iter().enumerate() {
            b.explicit_link(l, &format!("link[{i}]"))?;
        }
        for (i, w) in self.wifi.iter().enumerate() {
            b.explicit_wifi(w, &format!("wifi[{i}]"))?;
        }
        if b.nodes.is_empty() {
            return Err(ScenarioError::new(
                "",
                "no topology: add a [dumbbell] table or [[node]] and [[link]] tables",
            ));
        }
        let routes = Routes::compute(b.nodes.len(), &b.links);
        self.tcp.resolve("tcp")?;
        let env = AppEnv {
            tcp: self.tcp.clone(),
        };
        let end = SimTime::ZERO + run.duration.0;
        let mut flows = Vec::new();
        for (gi, f) in self.flows.iter().enumerate() {
            let field = format!("flow[{gi}]");
            f.app.validate(&field, &env)?;
            let stop = match f.stop {
                Some(s) => SimTime::ZERO + s.0,
                None => end,
            };
            if f.start.0 >= run.duration.0 {
                return Err(ScenarioError::new(
                    format!("{field}.start"),
                    format!(
                        "{} is not before the end of the run ({})",
                        f.start.0, run.duration.0
                    ),
                ));
            }
            if stop <= SimTime::ZERO + f.start.0 {
                return Err(ScenarioError::new(
                    format!("{field}.stop"),
                    "must be after start",
                ));
            }
            for i in 0..f.count {
                let from = f.from.replace("{i}", &i.to_string());
                let to = f.to.replace("{i}", &i.to_string());
                let src = b.host(&from, &format!("{field}.from"))?;
                let dst = b.host(&to, &format!("{field}.to"))?;
                if src == dst {
                    return Err(ScenarioError::new(
                        format!("{field}.to"),
                        format!("'{to}' is the same host as `from`"),
                    ));
                }
                if !routes.reachable(src, dst) {
                    return Err(ScenarioError::new(
                        format!("{field}.to"),
                        format!("no route from '{from}' to '{to}'"),
                    ));
                }
                if f.app.needs_reverse_path() && !routes.reachable(dst, src) {
                    return Err(ScenarioError::new(
                        format!("{field}.from"),
                        format!("no route back from '{to}' to '{from}' (this kind needs replies)"),
                    ));
                }
                let name = match (&f.name, f.count) {
                    (Some(n), 1) => n.clone(),
                    (Some(n), _) => format!("{n}{i}"),
                    (None, 1) => format!("{}{}", f.app.kind_name(), gi),
                    (None, _) => format!("{}{}.{}", f.app.kind_name(), gi, i),
                };
                let base_rtt =
                    routes.path_delay(src, dst, &b.links) + routes.path_delay(dst, src, &b.links);
                let flow = |name: String, src, dst, app| PlanFlow {
                    base_rtt,
                    name,
                    src,
                    dst,
                    start: SimTime::ZERO + f.start.0,
                    stop: stop.min(end),
                    app,
                    group: gi as u32,
                    instance: i,
                };
                match f.app.expand() {
                    // A composite (rrul) becomes ordinary flows named `NAME.SUFFIX`.
                    Some(subs) => {
                        for sub in subs {
                            let (s, d) = if sub.reversed { (dst, src) } else { (src, dst) };
                            flows.push(flow(format!("{name}.{}", sub.suffix), s, d, sub.app));
                        }
                    }
                    None => flows.push(flow(name, src, dst, f.app.clone())),
                }
            }
            if f.start_spread.0 > SimDuration::ZERO && f.start.0 + f.start_spread.0 > run.duration.0
            {
                return Err(ScenarioError::new(
                    format!("{field}.start_spread"),
                    "start + start_spread goes past the end of the run",
                ));
            }
        }
        let mut names: HashMap<&str, usize> = HashMap::new();
        for (i, f) in flows.iter().enumerate() {
            if let Some(j) = names.insert(&f.name, i) {
                return Err(ScenarioError::new(
                    format!("flow[{}].name", flows[i].group),
                    format!("'{}' is used twice (also by flow instance {j})", f.name),
                ));
            }
        }
        let mut packet_trace = Vec::new();
        for (i, [a, b]) in run.packet_trace.iter().enumerate() {
            if b.0 <= a.0 {
                return Err(ScenarioError::new(
                    format!("run.packet_trace[{i}]"),
                    "a window is [start, stop] with stop after start",
                ));
            }
            packet_trace.push((SimTime::ZERO + a.0, SimTime::ZERO + b.0));
        }
        Ok(Plan {
            duration: run.duration.0,
            warmup: run.warmup.0,
            bin: run.bin.0,
            packet_trace,
            nodes: b.nodes,
            links: b.links,
            media: b.media,
            flows,
            warnings: b.warnings,
            env,
        })
    }

    /// Draws the random start times of flows with `start_spread` (from the run seed).
    /// Every instance of a table draws one offset, in instance order; the flows a
    /// composite instance expands into share it (they start together).
    pub fn spread_starts(&self, plan: &mut Plan, seed: u64) {
        let mut k = 0usize;
        for (gi, f) in self.flows.iter().enumerate() {
            let mut rng = Rng::stream(seed, "flow-start", gi as u64);
            for i in 0..f.count {
                let off = if f.start_spread.0.is_zero() {
                    0
                } else {
                    rng.below(f.start_spread.0.as_nanos())
                };
                while k < plan.flows.len()
                    && plan.flows[k].group == gi as u32
                    && plan.flows[k].instance == i
                {
                    plan.flows[k].start += SimDuration::from_nanos(off);
                    k += 1;
                }
            }
        }
    }
}

struct Builder {
    nodes: Vec<PlanNode>,
    by_name: HashMap<String, NodeId>,
    links: Vec<(LinkParams, QdiscConfig)>,
    media: Vec<MediumParams>,
    warnings: Vec<ScenarioWarning>,
    trace: bool,
}

/// Checks a qdisc's parameters for a link whose qdisc drains at `rate`.
fn check_qdisc(
    qdisc: &QdiscConfig,
    rate: Rate,
    mtu: u32,
    overhead: u32,
    field: &str,
) -> Result<(), ScenarioError> {
    let ctx = BuildCtx {
        rate,
        mtu,
        overhead,
        rng: Rng::default(),
    };
    qdisc.validate(&ctx).map_err(|e| {
        ScenarioError::new(
            format!("{field}.qdisc.{}", e.field),
            format!("{} is not allowed ({})", e.value, e.allowed),
        )
    })
}

fn check_prob(p: f64, field: &str) -> Result<(), ScenarioError> {
    if !(0.0..=1.0).contains(&p) {
        return Err(ScenarioError::new(
            field,
            format!("{p} is not a probability (allowed: 0 to 1)"),
        ));
    }
    Ok(())
}

fn loss_periods(v: &[LossPeriodConfig], field: &str) -> Result<Vec<LossPeriod>, ScenarioError> {
    v.iter()
        .enumerate()
        .map(|(i, lp)| {
            check_prob(lp.loss, &format!("{field}[{i}].loss"))?;
            if lp.stop.0 <= lp.start.0 {
                return Err(ScenarioError::new(
                    format!("{field}[{i}].stop"),
                    "must be after start",
                ));
            }
            Ok(LossPeriod {
                start: SimTime::ZERO + lp.start.0,
                stop: SimTime::ZERO + lp.stop.0,
                loss: lp.loss,
            })
        })
        .collect()
}

impl Builder {
    fn add_node(
        &mut self,
        name: &str,
        kind: NodeKind,
        field: &str,
    ) -> Result<NodeId, ScenarioError> {
        if name.is_empty() {
            return Err(ScenarioError::new(field, "node names must not be empty"));
        }
        if self.by_name.contains_key(name) {
            return Err(ScenarioError::new(
                field,
                format!("node '{name}' is defined twice"),
            ));
        }
        let id = self.nodes.len() as NodeId;
        self.nodes.push(PlanNode {
            name: name.to_string(),
            kind,
        });
        self.by_name.insert(name.to_string(), id);
        Ok(id)
    }

    fn node(&self, name: &str, field: &str) -> Result<NodeId, ScenarioError> {
        self.by_name.get(name).copied().ok_or_else(|| {
            let mut known: Vec<&str> = self.nodes.iter().map(|n| n.name.as_str()).collect();
            known.truncate(8);
            ScenarioError::new(
                field,
                format!(
                    "unknown node '{name}' (known: {}{})",
                    known.join(", "),
                    if self.nodes.len() > 8 { ", ..." } else { "" }
                ),
            )
        })
    }

    fn host(&self, name: &str, field: &str) -> Result<NodeId, ScenarioError> {
        let id = self.node(name, field)?;
        if self.nodes[id as usize].kind != NodeKind::Host {
            return Err(ScenarioError::new(
                field,
                format!("'{name}' is a router; flows run between hosts"),
            ));
        }
        Ok(id)
    }

    #[allow(clippy::too_many_arguments)]
    fn link(
        &mut self,
        name: String,
        from: NodeId,
        to: NodeId,
        rate: Rate,
        delay: SimDuration,
        qdisc: QdiscConfig,
        overhead: u32,
        mtu: u32,
        devq: u32,
        loss: f64,
        lps: Vec<LossPeriod>,
        trace: bool,
        field: &str,
    ) -> Result<(), ScenarioError> {
        if mtu < 68 || mtu > 65535 {
            return Err(ScenarioError::new(
                format!("{field}.mtu"),
                format!("{mtu} is not allowed (68 to 65535)"),
            ));
        }
        if overhead > 1000 {
            return Err(ScenarioError::new(
                format!("{field}.overhead"),
                format!("{overhead} is not allowed (0 to 1000 bytes)"),
            ));
        }
        if devq < 1 || devq > 100_000 {
            return Err(ScenarioError::new(
                format!("{field}.device_queue"),
                format!("{devq} is not allowed (1 to 100000 packets; 1 = BQL of one packet)"),
            ));
        }
        check_qdisc(&qdisc, rate, mtu, overhead, field)?;
        let p = LinkParams {
            name,
            from,
            to,
            peers: Vec::new(),
            rate,
            delay,
            overhead,
            mtu,
            device_queue: devq,
            loss,
            loss_periods: lps,
            trace,
            lower: LowerParams::Wire,
        };
        self.links.push((p, qdisc));
        Ok(())
    }

    fn dumbbell(&mut self, d: &DumbbellConfig) -> Result<(), ScenarioError> {
        let f = "dumbbell";
        if d.pairs < 1 || d.pairs > 100_000 {
            return Err(ScenarioError::new(
                "dumbbell.pairs",
                format!("{} is not allowed (1 to 100000)", d.pairs),
            ));
        }
        let up_rate = d.up.rate.or(d.rate).ok_or_else(|| {
            ScenarioError::new(
                "dumbbell.rate",
                "missing: give `rate` (both directions) or both `up.rate` and `down.rate`",
            )
        })?;
        let down_rate = d.down.rate.or(d.rate).ok_or_else(|| {
            ScenarioError::new(
                "dumbbell.rate",
                "missing: give `rate` (both directions) or both `up.rate` and `down.rate`",
            )
        })?;
        let n = d.pairs as usize;
        for (key, v) in [
            ("client_delays", &d.client_delays),
            ("server_delays", &d.server_delays),
        ] {
            if let Some(v) = v {
                if v.len() != n {
                    return Err(ScenarioError::new(
                        format!("dumbbell.{key}"),
                        format!("has {} entries; it needs one per pair ({n})", v.len()),
                    ));
                }
            }
        }
        let access_rate = d.access_rate.map(|r| r.rate()).unwrap_or_else(|| {
            Rate::from_bps((up_rate.0.max(down_rate.0) * 10).max(1_000_000_000))
        });
        let access_q = d.access_qdisc.clone().unwrap_or_default();
        let ra = self.add_node("router_a", NodeKind::Router, f)?;
        let rb = self.add_node("router_b", NodeKind::Router, f)?;
        let base_q = d.qdisc.clone().unwrap_or_default();
        let tr = self.trace;
        for (dir, cfg, rate, from, to) in [
            ("up", &d.up, up_rate, ra, rb),
            ("down", &d.down, down_rate, rb, ra),
        ] {
            let field = format!("dumbbell.{dir}");
            let loss = cfg.loss.unwrap_or(0.0);
            check_prob(loss, &format!("{field}.loss"))?;
            let lps = loss_periods(&cfg.loss_periods, &format!("{field}.loss_periods"))?;
            let q = cfg.qdisc.clone().unwrap_or_else(|| base_q.clone());
            let qfield = if cfg.qdisc.is_some() {
                field.clone()
            } else {
                "dumbbell".to_string()
            };
            self.link(
                format!("bottleneck_{dir}"),
                from,
                to,
                rate.rate(),
                d.delay.0,
                q,
                d.overhead,
                d.mtu,
                d.device_queue,
                loss,
                lps,
                tr,
                &qfield,
            )?;
            if let Some(sh) = &cfg.shaper {
                self.attach_shaper(self.links.len() - 1, sh, &field)?;
            }
        }
        for i in 0..n {
            let c = self.add_node(&format!("client{i}"), NodeKind::Host, f)?;
            let s = self.add_node(&format!("server{i}"), NodeKind::Host, f)?;
            let cd = d
                .client_delays
                .as_ref()
                .map(|v| v[i].0)
                .unwrap_or(d.access_delay.0);
            let sd = d
                .server_delays
                .as_ref()
                .map(|v| v[i].0)
                .unwrap_or(d.access_delay.0);
            for (host, router, delay, hname, rname) in [
                (c, ra, cd, format!("client{i}"), "router_a"),
                (s, rb, sd, format!("server{i}"), "router_b"),
            ] {
                if host == c && d.wifi.is_some() {
                    continue; // the client reaches router_a over WiFi (below)
                }
                self.link(
                    format!("{hname}->{rname}"),
                    host,
                    router,
                    access_rate,
                    delay,
                    access_q.clone(),
                    d.overhead,
                    d.mtu,
                    1,
                    0.0,
                    vec![],
                    false,
                    "dumbbell.access",
                )?;
                self.link(
                    format!("{rname}->{hname}"),
                    router,
                    host,
                    access_rate,
                    delay,
                    access_q.clone(),
                    d.overhead,
                    d.mtu,
                    1,
                    0.0,
                    vec![],
                    false,
                    "dumbbell.access",
                )?;
            }
        }
        if let Some(w) = &d.wifi {
            if w.ap.is_some() || w.stations.is_some() {
                return Err(ScenarioError::new("dumbbell.wifi", "`ap` and `stations` are fixed in a dumbbell (router_a and the clients); remove them"));
            }
            let clients: Vec<NodeId> = (0..n)
                .map(|i| self.by_name[&format!("client{i}")])
                .collect();
            self.wifi_bss(w, "wifi", ra, &clients, &access_q, "dumbbell.wifi")?;
        }
        Ok(())
    }

    fn explicit_link(&mut self, l: &LinkConfig, field: &str) -> Result<(), ScenarioError> {
        let a = self.node(&l.from, &format!("{field}.from"))?;
        let b = self.node(&l.to, &format!("{field}.to"))?;
        if a == b {
            return Err(ScenarioError::new(
                format!("{field}.to"),
                "a link must join two different nodes",
            ));
        }
        check_prob(l.loss, &format!("{field}.loss"))?;
        let lps = loss_periods(&l.loss_periods, &format!("{field}.loss_periods"))?;
        let tr = l.trace || self.trace;
        let name = l
            .name
            .clone()
            .unwrap_or_else(|| format!("{}->{}", l.from, l.to));
        self.link(
            name.clone(),
            a,
            b,
            l.rate.rate(),
            l.delay.0,
            l.qdisc.clone(),
            l.overhead,
            l.mtu,
            l.device_queue,
            l.loss,
            lps.clone(),
            tr,
            field,
        )?;
        if let Some(sh) = &l.shaper {
            self.attach_shaper(self.links.len() - 1, sh, field)?;
        }
        if l.duplex {
            let rname = if l.name.is_some() {
                format!("{name}_rev")
            } else {
                format!("{}->{}", l.to, l.from)
            };
            self.link(
                rname,
                b,
                a,
                l.rate.rate(),
                l.delay.0,
                l.qdisc.clone(),
                l.overhead,
                l.mtu,
                l.device_queue,
                l.loss,
                lps,
                tr,
                field,
            )?;
            if let Some(sh) = &l.shaper {
                self.attach_shaper(self.links.len() - 1, sh, field)?;
            }
        }
        Ok(())
    }
}

/// Shortest-hop static routes: for each node, the outgoing link towards each destination.
/// Hosts with a single outgoing link use it for everything (no table). A multi-peer link
/// (DOCSIS downstream, WiFi access point) is one outgoing link with several far ends;
/// for each such link the routes also give the destination → peer table.
#[derive(Clone, Debug)]
pub struct Routes {
    n: usize,
    /// Per node: `Some(link)` if the node has exactly one outgoing link.
    default: Vec<Option<u32>>,
    /// Per node with several outgoing links: `n` entries, `u32::MAX` = unreachable.
    table: Vec<Option<Vec<u32>>>,
    reach: Vec<Vec<bool>>,
    /// `(link, table)` for every multi-peer link: destination → index into its `peers`.
    peer_tables: Vec<(u32, Vec<u32>)>,
}

impl Routes {
    pub fn compute(n: usize, links: &[(LinkParams, QdiscConfig)]) -> Routes {
        let mut out: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut inc: Vec<Vec<(u32, NodeId)>> = vec![Vec::new(); n];
        // nodes that originate a multi-peer link need the next *node* as well
        let mut hop: Vec<Option<Vec<NodeId>>> = vec![None; n];
        for (i, (p, _)) in links.iter().enumerate() {
            out[p.from as usize].push(i as u32);
            let ends: &[NodeId] = if p.peers.is_empty() {
                std::slice::from_ref(&p.to)
            } else {
                &p.peers
            };
            for &e in ends {
                inc[e as usize].push((i as u32, p.from));
            }
            if !p.peers.is_empty() && hop[p.from as usize].is_none() {
                hop[p.from as usize] = Some(vec![NodeId::MAX; n]);
            }
        }
        // next[src][dst] via reverse BFS from each destination.
        let mut next = vec![vec![u32::MAX; n]; n];
        let mut reach = vec![vec![false; n]; n];
        for dst in 0..n {
            let mut seen = vec![false; n];
            seen[dst] = true;
            reach[dst][dst] = true;
            let mut q = VecDeque::from([dst]);
            while let Some(v) = q.pop_front() {
                for &(li, u) in &inc[v] {
                    let u = u as usize;
                    if !seen[u] {
                        seen[u] = true;
                        reach[u][dst] = true;
                        next[u][dst] = li;
                        if let Some(h) = hop[u].as_mut() {
                            h[dst] = v as NodeId;
                        }
                        q.push_back(u);
                    }
                }
            }
        }
        let mut peer_tables = Vec::new();
        for (i, (p, _)) in links.iter().enumerate() {
            if p.peers.is_empty() {
                continue;
            }
            let u = p.from as usize;
            let h = hop[u].as_ref().expect("hop table of a multi-peer origin");
            let t: Vec<u32> = (0..n)
                .map(|dst| {
                    if next[u][dst] == i as u32 {
                        p.peers
                            .iter()
                            .position(|&x| x == h[dst])
                            .map(|k| k as u32)
                            .unwrap_or(u32::MAX)
                    } else {
                        u32::MAX
                    }
                })
                .collect();
            peer_tables.push((i as u32, t));
        }
        let mut default = vec![None; n];
        let mut table = vec![None; n];
        for v in 0..n {
            if out[v].len() == 1 {
                default[v] = Some(out[v][0]);
            } else {
                table[v] = Some(std::mem::take(&mut next[v]));
            }
        }
        Routes {
            n,
            default,
            table,
            reach,
            peer_tables,
        }
    }
    /// The destination → peer tables of the multi-peer links.
    pub fn peer_tables(&self) -> &[(u32, Vec<u32>)] {
        &self.peer_tables
    }
    /// The node after link `l` on the way to `dst` (its far end, or for a multi-peer
    /// link the peer that leads to `dst`).
    fn far_end(&self, l: u32, dst: NodeId, links: &[(LinkParams, QdiscConfig)]) -> NodeId {
        let p = &links[l as usize].0;
        if p.peers.is_empty() {
            return p.to;
        }
        self.peer_tables
            .iter()
            .find(|(li, _)| *li == l)
            .and_then(|(_, t)| p.peers.get(t[dst as usize] as usize).copied())
            .unwrap_or(p.to)
    }
    /// Sum of link propagation delays along the route from `a` to `b` (zero if unreachable).
    pub fn path_delay(
        &self,
        a: NodeId,
        b: NodeId,
        links: &[(LinkParams, QdiscConfig)],
    ) -> SimDuration {
        let mut at = a;
        let mut d = SimDuration::ZERO;
        let mut hops = 0;
        while at != b && hops <= self.n {
            let Some(l) = self.next(at, b) else {
                return SimDuration::ZERO;
            };
            d += links[l as usize].0.delay;
            at = self.far_end(l, b, links);
            hops += 1;
        }
        d
    }
    pub fn reachable(&self, a: NodeId, b: NodeId) -> bool {
        self.reach[a as usize][b as usize]
    }
    /// The outgoing link at `at` towards `dst`.
    #[inline]
    pub fn next(&self, at: NodeId, dst: NodeId) -> Option<u32> {
        if let Some(l) = self.default[at as usize] {
            return Some(l);
        }
        match &self.table[at as usize] {
            Some(t) => {
                let l = t[dst as usize];
                (l != u32::MAX).then_some(l)
            }
            None => None,
        }
    }
    pub fn nodes(&self) -> usize {
        self.n
    }
    /// Drops the reachability matrix (only needed for validation) to save memory.
    pub fn shrink(&mut self) {
        self.reach = Vec::new();
    }
}
