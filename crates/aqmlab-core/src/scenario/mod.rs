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
mod build;
pub mod docsis;
pub mod routes;
mod validate;

pub use crate::params::{ScenarioError, ScenarioWarning};
pub use routes::Routes;

use crate::app::{AppConfig, AppEnv};
use crate::link::{LinkParams, MediumParams, ShaperConfig};
use crate::packet::NodeId;
use crate::params::{split_field_prefixes, ParamDoc};
use crate::qdisc::QdiscConfig;
use crate::time::{SimDuration, SimTime};
use crate::units::{DurationSpec, RateSpec};
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

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
    /// Seed used when none is given on the command line / API call. Default 1. An
    /// integer up to 2⁶³−1 (TOML integers are signed 64-bit), or a string of digits for
    /// the whole range up to 2⁶⁴−1 (`seed = "18446744073709551615"`).
    #[serde(default = "d_seed", with = "crate::units::seed")]
    pub seed: u64,
    /// Memory the run may use (see `crate::resources`), e.g. "32GB". Default: half the
    /// machine's physical memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_memory: Option<crate::units::SizeSpec>,
    /// Events the run may process (see `crate::resources`). Default 1e11.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_events: Option<f64>,
    /// Record qdisc state traces (CoDel count, PIE p, ...) on bottleneck links. Default false.
    #[serde(default)]
    pub trace: bool,
    /// Time windows `[start, stop]` in which every packet leaving a measured queue (the
    /// dumbbell bottlenecks, the DOCSIS downstream, links with `trace = true`) is recorded
    /// as a sample `sojourn` (seconds), every drop there as a sample `drop`, and every
    /// arrival as a sample `qlen` (packets it finds in the qdisc, so the arrival-sampled
    /// queue-length distribution). Default none.
    #[serde(default)]
    pub packet_trace: Vec<[DurationSpec; 2]>,
    /// Run-to-run variability (see [`NoiseConfig`]): on by default, so that different
    /// seeds give different runs the way repeated testbed runs differ. `false` turns
    /// every mechanism off: a bit-exact "no noise" run (the seed then only drives the
    /// model's own randomness: PIE/RED drop draws, hash salts, loss, WiFi backoff).
    #[serde(default = "d_true")]
    pub noise: bool,
    /// Flows with neither `start` nor `start_spread` start at a uniformly random instant
    /// in `[0, start_jitter)`. Default 100 ms (see [`NoiseConfig::DEFAULT_START_JITTER`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_jitter: Option<DurationSpec>,
    /// Per-packet processing delay at end hosts, uniform in `[0, host_jitter]`, never
    /// reordering. Default 50 µs (see [`NoiseConfig::DEFAULT_HOST_JITTER`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_jitter: Option<DurationSpec>,
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
            max_memory: None,
            max_events: None,
            trace: false,
            packet_trace: Vec::new(),
            noise: true,
            start_jitter: None,
            host_jitter: None,
        }
    }
}

/// The run-to-run variability mechanisms of a run, resolved from `[run]` (`noise`,
/// `start_jitter`, `host_jitter`). Every draw comes from its own seeded stream
/// ([`Rng::stream`]), so the same (scenario, seed) stays bit-identical.
///
/// Real experiments differ from run to run because flows do not start at the same
/// nanosecond and hosts do not process packets at exact instants; a simulator without
/// either repeats one trajectory for every seed. Two mechanisms put that variability
/// back, each small enough not to bias what is measured:
///
/// - **start jitter**: a flow with neither `start` nor `start_spread` starts at a
///   uniformly random instant in `[0, start_jitter)` (each flow a composite such as
///   `rrul` expands into draws its own). The default, 100 ms, is a few base RTTs of the
///   studies' paths (10–100 ms), enough to desynchronise slow starts, and at most 1 % of
///   a 10 s run (runs with a warm-up do not count it at all). A test script starting
///   netperf/iperf processes "together" spreads them over milliseconds to tens of ms.
///   Flows with an explicit `start` (e.g. a flow joining at 5 s) or `start_spread` keep
///   exactly what they say.
/// - **host jitter**: every packet leaving an end host (its egress link's wire) is
///   delayed by a uniform draw in `[0, host_jitter]`, but never overtakes the packet
///   before it on that link (arrival = max(draw, previous arrival)), so a flow's packets
///   stay in order, as with netem behind a FIFO. The default, 50 µs, is Linux's default
///   timer slack for ordinary threads (`PR_SET_TIMERSLACK`, 50 µs) and the order of NIC
///   interrupt moderation (tens of µs): the scale at which host timing really wanders.
///   It adds at most 2 × 50 µs (mean ≈ 50 µs) to a round trip — 0.1 % of a 50 ms base
///   RTT, 0.5 % of a 10 ms one — and nothing to queueing delay or to the goodput of a
///   bottleneck-limited flow. WiFi station interfaces do not get it (their medium access
///   is random already).
///
/// What is already seeded and stays on with `noise = false`: qdisc hash salts (fq_codel,
/// fq_pie and sfq draw theirs from the seed at setup, as Linux draws a random
/// perturbation, so which flows share a bucket changes with the seed), PIE/RED/ARED drop
/// draws, wire loss, WiFi backoff and frame errors, workloads' own random draws (web
/// users' think times and sizes), and `start_spread`. The model has no TCP initial
/// sequence numbers or ports to randomise: sequence numbers are offsets from the SYN
/// (nothing depends on their absolute value), and the 5-tuple hash is only ever used
/// salted by the seeded qdisc salt, so an ephemeral-port draw would add nothing.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct NoiseConfig {
    /// Start-time jitter for flows without `start`/`start_spread` (zero: off).
    pub start_jitter: SimDuration,
    /// Per-packet delay bound at end hosts' egress (zero: off).
    pub host_jitter: SimDuration,
}

impl NoiseConfig {
    /// Default start jitter: 100 ms.
    pub const DEFAULT_START_JITTER: SimDuration = SimDuration::from_millis(100);
    /// Default host jitter: 50 µs (Linux's default timer slack).
    pub const DEFAULT_HOST_JITTER: SimDuration = SimDuration::from_micros(50);

    /// Resolves `[run]`'s noise keys; an explicit jitter with `noise = false` is an error
    /// (it would be silently ignored).
    pub fn resolve(run: &RunConfig) -> Result<NoiseConfig, ScenarioError> {
        if !run.noise {
            for (k, v) in [
                ("start_jitter", &run.start_jitter),
                ("host_jitter", &run.host_jitter),
            ] {
                if v.is_some_and(|d| !d.0.is_zero()) {
                    return Err(ScenarioError::new(
                        format!("run.{k}"),
                        "is set but run.noise = false turns every noise mechanism off; remove one of them",
                    ));
                }
            }
            return Ok(NoiseConfig::default());
        }
        let start_jitter = run.start_jitter.map_or(Self::DEFAULT_START_JITTER, |d| d.0);
        let host_jitter = run.host_jitter.map_or(Self::DEFAULT_HOST_JITTER, |d| d.0);
        if host_jitter > SimDuration::from_secs(1) {
            return Err(ScenarioError::new(
                "run.host_jitter",
                format!("{host_jitter} is not allowed (0 to 1s; it models host timing noise, typically tens of µs)"),
            ));
        }
        // only a jitter the user wrote must fit the run: the default (100 ms) is capped
        // per flow at half its start-to-stop span anyway (spread_starts), so a run
        // shorter than it is no mistake
        if run.start_jitter.is_some() && start_jitter >= run.duration.0 {
            return Err(ScenarioError::new(
                "run.start_jitter",
                format!(
                    "{start_jitter} must be shorter than run.duration ({})",
                    run.duration.0
                ),
            ));
        }
        Ok(NoiseConfig {
            start_jitter,
            host_jitter,
        })
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
    /// GRO at every node's ingress from the dumbbell's point-to-point links (see
    /// `[[link]] gro`). Default false.
    #[serde(default)]
    pub gro: bool,
}

impl DumbbellConfig {
    /// Parameter documentation for `aqmlab describe dumbbell`.
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc::new("pairs", "1", "client/server host pairs (client0.., server0..)"),
        ParamDoc::new("rate", "required unless up.rate and down.rate", "bottleneck rate in both directions"),
        ParamDoc::new("delay", "0ms", "one-way propagation delay of the bottleneck"),
        ParamDoc::new("qdisc", "fifo 1000", "bottleneck qdisc in both directions"),
        ParamDoc::new("up", "{}", "client -> server direction (bottleneck_up) overrides: rate, qdisc, loss, loss_periods, shaper"),
        ParamDoc::new("down", "{}", "server -> client direction (bottleneck_down) overrides: rate, qdisc, loss, loss_periods, shaper"),
        ParamDoc::new("access_rate", "10 x the faster bottleneck direction, at least 1Gbit", "rate of the access links"),
        ParamDoc::new("access_delay", "0ms", "one-way delay of every access link unless given per host"),
        ParamDoc::new("client_delays", "access_delay for each", "per-client one-way access delays (length = pairs), for per-flow RTTs"),
        ParamDoc::new("server_delays", "access_delay for each", "per-server one-way access delays (length = pairs)"),
        ParamDoc::new("access_qdisc", "fifo 1000", "qdisc on access links (hosts' and routers' egress towards hosts)"),
        ParamDoc::new("overhead", "14", "framing bytes added per packet on the wire (Ethernet header)"),
        ParamDoc::new("mtu", "1500", "largest IP packet"),
        ParamDoc::new("device_queue", "1", "device queue below the bottleneck qdisc in packets, counting the one being sent"),
        ParamDoc::new("wifi", "none (wired clients)", "[dumbbell.wifi]: the clients reach router_a over one WiFi BSS (see describe wifi)"),
        ParamDoc::new("gro", "false", "GRO at every node's ingress from the point-to-point links (see describe link)"),
    ];
}

impl LinkConfig {
    /// Parameter documentation for `aqmlab describe link`.
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc::new("name", "FROM->TO", "link name in results; the reverse of a duplex link is NAME_rev (or TO->FROM)"),
        ParamDoc::new("from", "required", "sending node"),
        ParamDoc::new("to", "required", "receiving node"),
        ParamDoc::new("rate", "required", "line rate (\"10Mbit\"; a bare number is bit/s)"),
        ParamDoc::new("delay", "0ms", "one-way propagation delay"),
        ParamDoc::new("qdisc", "{ kind = \"fifo\", limit = 1000 }", "queue discipline at the sending end (see aqmlab list qdiscs)"),
        ParamDoc::new("overhead", "14", "framing bytes added per packet on the wire (Ethernet header)"),
        ParamDoc::new("mtu", "1500", "largest IP packet"),
        ParamDoc::new("device_queue", "1", "device queue below the qdisc in packets, counting the one being sent"),
        ParamDoc::new("loss", "0.0", "Bernoulli loss probability on the wire"),
        ParamDoc::new("loss_periods", "[]", "scheduled loss periods, e.g. [{ start = \"10s\", stop = \"11s\", loss = 1.0 }] (loss default 1: an outage)"),
        ParamDoc::new("duplex", "true", "also create the reverse link with the same settings"),
        ParamDoc::new("trace", "false", "record qdisc state traces on this link (or run.trace for all)"),
        ParamDoc::new("shaper", "none", "token-bucket shaper between the qdisc and the wire (see describe shaper)"),
        ParamDoc::new("gro", "false", "GRO at the receiving node: in-order TCP segments of one flow arriving back to back (one NAPI poll, at most 64) are merged into one packet before routing (Linux dev_gro_receive / napi_gro_flush)"),
    ];
}

#[derive(Copy, Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    Host,
    Router,
}

impl NodeKind {
    /// Every kind, in the order error messages list them.
    pub const ALL: [NodeKind; 2] = [NodeKind::Host, NodeKind::Router];

    /// The kind's name in a scenario file.
    pub fn name(self) -> &'static str {
        match self {
            NodeKind::Host => "host",
            NodeKind::Router => "router",
        }
    }
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
    /// GRO at the receiving node on packets from this link ([`crate::link::Link::arrive_gro`]).
    /// Default false.
    #[serde(default)]
    pub gro: bool,
}

/// `[[flow]]`: one traffic source. Common keys: `kind`, `from`, `to`, `start`, `stop`,
/// `start_spread`, `count`, `name`, `dscp`; the rest depends on `kind`.
#[derive(Clone, Debug, Serialize)]
pub struct FlowConfig {
    pub name: Option<String>,
    /// Sending host; with `count > 1`, `{i}` is replaced by the instance number.
    pub from: String,
    /// Receiving host; `{i}` as for `from`.
    pub to: String,
    /// Start time. Default 0, plus the run's start jitter (`run.start_jitter`, see
    /// [`NoiseConfig`]) when neither `start` nor `start_spread` is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<DurationSpec>,
    /// Each instance starts at a uniformly random time in [start, start + start_spread).
    /// Default 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_spread: Option<DurationSpec>,
    /// Stop time. Default: end of run.
    pub stop: Option<DurationSpec>,
    /// Number of identical instances. Default 1.
    pub count: u32,
    /// DSCP codepoint of every packet of the flow, both directions (see
    /// [`crate::packet::dscp`] for the names). Default: none given, which is best effort
    /// (0), except for `rrul`, whose sub-flows carry Flent's own marks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dscp: Option<u8>,
    #[serde(flatten)]
    pub app: AppConfig,
}

impl FlowConfig {
    /// The start time (default 0).
    pub fn start_at(&self) -> SimDuration {
        self.start.map_or(SimDuration::ZERO, |d| d.0)
    }
    /// The start spread (default 0).
    pub fn spread(&self) -> SimDuration {
        self.start_spread.map_or(SimDuration::ZERO, |d| d.0)
    }
    /// True if the run's start jitter applies: neither `start` nor `start_spread` given.
    pub fn takes_start_jitter(&self) -> bool {
        self.start.is_none() && self.start_spread.is_none()
    }
}

const FLOW_COMMON: &[&str] = &[
    "name",
    "from",
    "to",
    "start",
    "start_spread",
    "stop",
    "count",
    "dscp",
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
        let start = take(&mut t, "start")?;
        let start_spread = take(&mut t, "start_spread")?;
        let stop = take(&mut t, "stop")?;
        let count: i64 = take(&mut t, "count")?.unwrap_or(1);
        let dscp = match t.remove("dscp") {
            None => None,
            Some(v) => Some(
                crate::packet::dscp::parse(&v)
                    .map_err(|m| de::Error::custom(format!("field `dscp`: {m}")))?,
            ),
        };
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
        if !(1..=1_000_000).contains(&count) {
            return Err(de::Error::custom(format!(
                "field `count`: {count} is not allowed (1 to 1000000)"
            )));
        }
        let app = AppConfig::deserialize(toml::Value::Table(t))
            .map_err(|e| de::Error::custom(flow_key_error(e.message())))?;
        Ok(FlowConfig {
            name,
            from,
            to,
            start,
            start_spread,
            stop,
            count: count as u32,
            dscp,
            app,
        })
    }
}

/// The message for a flow table the workload kind rejects. serde's "unknown field `x`,
/// expected one of `a`, `b`" (or "expected `a` or `b`", or "there are no fields") becomes
/// the kind's keys and the keys every flow has; a `[tcp]` key written directly in the flow
/// (`cc = "prague"`) is pointed at the flow's `tcp = { ... }` table.
fn flow_key_error(msg: &str) -> String {
    let m = msg.trim();
    // the kind's own check may have put the key's path first ("field `cc`: unknown ...")
    let Some(at) = m.find("unknown field `") else {
        return m.to_string();
    };
    let (prefix, rest) = (&m[..at], &m[at + "unknown field `".len()..]);
    let key = rest.split('`').next().unwrap_or("");
    let allowed = m
        .split_once(", expected one of ")
        .or_else(|| m.split_once(", expected "))
        .map_or("none", |(_, a)| a) // serde: "…, there are no fields"
        .replace("` or `", "`, `");
    let mut out = format!(
        "{prefix}unknown field for this kind `{key}`, allowed for this kind: {allowed}; common keys: {}",
        FLOW_COMMON.join(", ")
    );
    if crate::tcp::config::TCP_PARAMS.iter().any(|p| p.name == key) {
        out.push_str(&format!(
            "; `{key}` is a TCP setting: give it as tcp = {{ {key} = ... }} in this flow, or in [tcp] for every flow"
        ));
    }
    out
}

/// serde's "missing field `k`" of a table at `path` becomes the error of `path.k`,
/// with the allowed values where they are a fixed set (a `[[node]]`'s `kind`).
fn name_missing_key(path: String, msg: String) -> (String, String) {
    let Some(key) = msg
        .strip_prefix("missing field `")
        .and_then(|r| r.strip_suffix('`'))
    else {
        return (path, msg);
    };
    let allowed = if path.starts_with("node[") && key == "kind" {
        let names: Vec<&str> = NodeKind::ALL.iter().map(|k| k.name()).collect();
        format!(" (allowed: {})", names.join(", "))
    } else {
        String::new()
    };
    let full = if path.is_empty() {
        key.to_string()
    } else if path.rsplit('.').next() == Some(key) {
        path
    } else {
        format!("{path}.{key}")
    };
    (
        full,
        format!("missing field `{key}`: this key is required{allowed}"),
    )
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
    pub docsis: Option<docsis::DocsisConfig>,
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
    /// DSCP of every packet the flow's endpoints send (both directions).
    pub dscp: u8,
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
    /// The resource model's estimate of events and memory (`crate::resources`).
    pub estimate: crate::resources::Estimate,
    /// The run-to-run variability mechanisms (`[run]` `noise`, `start_jitter`, `host_jitter`).
    pub noise: NoiseConfig,
    /// For each link, the one link whose packets it takes without an arrival event at the
    /// router between them (`u32::MAX`: none; [`Plan::find_fold_feeders`]).
    pub fold_feeders: Vec<u32>,
}

impl Plan {
    /// For each link, the one link whose packets it takes without an arrival event at
    /// the router between them (`link::fold_arrivals`), if any (`u32::MAX`: none).
    ///
    /// A link is fed by another alone if on every flow's path, in both directions, the
    /// hop before it is that link (packets only travel between the two endpoints of a
    /// flow, `app::FlowCtx::packet`); a link that some path starts on (its node originates
    /// packets) or that several links feed is not. It takes folded packets if it is a lazy
    /// wire (point-to-point, lossless, one-packet device queue, no host jitter) with a FIFO
    /// that takes an MTU-sized packet when empty, outside any per-packet trace window; its
    /// feeder must be a point-to-point wire or shaper without GRO at the router.
    pub fn find_fold_feeders(&self, routes: &Routes) -> Vec<u32> {
        const UNSEEN: u32 = u32::MAX;
        const SEVERAL: u32 = u32::MAX - 1;
        const ORIGIN: u32 = u32::MAX - 2;
        let mut feeder = vec![UNSEEN; self.links.len()];
        let mut seen = std::collections::HashSet::new();
        for f in &self.flows {
            for (a, b) in [(f.src, f.dst), (f.dst, f.src)] {
                if !seen.insert((a, b)) {
                    continue;
                }
                let mut prev = ORIGIN;
                for l in routes.path(a, b, &self.links) {
                    let cur = &mut feeder[l as usize];
                    *cur = match *cur {
                        UNSEEN => prev,
                        c if c == prev => c,
                        _ => SEVERAL,
                    };
                    prev = l;
                }
            }
        }
        let jitter = !self.noise.host_jitter.is_zero();
        // (a FIFO does not throttle: a plain wire with one is a lazy wire)
        let takes = |(p, q): &(LinkParams, QdiscConfig)| {
            let fifo_admits = match q {
                QdiscConfig::Fifo(c) => crate::qdisc::fifo::admits_when_empty(c.limit, p.mtu),
                _ => false,
            };
            let host_egress = self.nodes[p.from as usize].kind == NodeKind::Host;
            p.is_plain_wire()
                && fifo_admits
                && !(jitter && host_egress)
                && (!p.packet_traced() || self.packet_trace.is_empty())
        };
        feeder
            .iter()
            .enumerate()
            .map(|(b, &a)| {
                let ok = (a as usize) < self.links.len()
                    && self.links[a as usize].0.can_feed_fold()
                    && takes(&self.links[b]);
                if ok {
                    a
                } else {
                    u32::MAX
                }
            })
            .collect()
    }

    /// What the resource model (`crate::resources`) reads of the plan.
    pub fn shape(&self) -> crate::resources::Shape<'_> {
        crate::resources::Shape {
            duration: self.duration,
            bin: self.bin,
            packet_trace: &self.packet_trace,
            links: &self.links,
            nodes: self.nodes.len(),
            flows: self.flows.len(),
        }
    }
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
            let mut path = if path == "." { String::new() } else { path };
            if path.is_empty() {
                // a parse error (e.g. an integer above 2^63-1) has a position but no key
                if let Some(k) = inner
                    .span()
                    .and_then(|sp| crate::tomlpath::key_at(text, sp.start))
                {
                    path = k;
                }
            }
            let (path, mut msg) =
                split_field_prefixes(path, &inner.message().trim().replace('\n', " "));
            let (path, msg0) = name_missing_key(path, msg);
            msg = msg0;
            if msg.trim().is_empty() {
                // toml's parser gives no text for some syntax errors (`x =` with no value)
                let at = inner.span().map_or(0, |s| s.start.min(text.len()));
                let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
                let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
                let shown: String = text[start..end].trim().chars().take(60).collect();
                msg = format!(
                    "TOML syntax error in '{shown}' (column {}): expected KEY = VALUE, with \
                     strings in quotes",
                    text[start..at].chars().count() + 1
                );
            }
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
}

#[cfg(test)]
mod node_kind_tests {
    use super::NodeKind;

    #[derive(serde::Deserialize)]
    struct Wrap {
        kind: NodeKind,
    }

    #[test]
    fn every_listed_node_kind_name_parses_to_that_kind() {
        for k in NodeKind::ALL {
            let w: Wrap = toml::from_str(&format!("kind = \"{}\"", k.name())).unwrap();
            assert_eq!(w.kind, k);
        }
    }
}
