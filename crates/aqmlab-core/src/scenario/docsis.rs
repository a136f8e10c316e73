//! The `[docsis]` topology: a CMTS whose downstream (service-flow regulators → the
//! qdisc under test → bonded channels) reaches every cable modem, one upstream per modem,
//! a core router and the servers. [`Builder::resolve_docsis`] checks every key and
//! builds nothing; [`Builder::build_docsis`] adds the nodes and links. The model itself
//! is `link::docsis`; `docs/link-models.md` has examples.
//!
//! ```toml
//! [docsis]                              # CMTS + 10 cable modems, 4 bonded channels
//! channels = 4
//! downstream_qdisc = { kind = "fifo", limit = 2048 }
//! server_delays = ["15ms", "20ms", ...]
//! [[docsis.tier]]
//! count = 9
//! max_rate = "6Mbit"
//! [[docsis.tier]]
//! count = 1
//! max_rate = "12Mbit"
//! ```

use super::build::{check_qdisc, Builder, LinkSpec};
use super::{d_mtu, d_zero, NodeKind, ScenarioError, ScenarioWarning};
use crate::link::docsis::{DocsisParams, ServiceFlowParams};
use crate::link::{LinkParams, LowerParams};
use crate::packet::NodeId;
use crate::params::{check_range, ParamDoc};
use crate::qdisc::fifo::FifoConfig;
use crate::qdisc::QdiscConfig;
use crate::time::{Rate, SimDuration};
use crate::units::{DurationSpec, Limit, RateSpec, SizeSpec};
use serde::{Deserialize, Serialize};

fn fifo(n: u32) -> QdiscConfig {
    QdiscConfig::Fifo(FifoConfig {
        limit: Limit::Packets(n),
    })
}
fn d_one() -> u32 {
    1
}
fn d_channel_rate() -> RateSpec {
    RateSpec(38_000_000)
}
fn d_upstream_rate() -> RateSpec {
    RateSpec(27_000_000)
}
fn d_cmts_q() -> QdiscConfig {
    fifo(2048)
}
fn d_router_q() -> QdiscConfig {
    fifo(4096)
}
fn d_docsis_overhead() -> u32 {
    18
}
fn d_regulator_limit() -> u32 {
    2048
}
fn d_bucket() -> SizeSpec {
    SizeSpec(3044)
}
fn d_peak_bucket() -> SizeSpec {
    SizeSpec(1522)
}

/// `[[docsis.tier]]`: a service tier; `count` consecutive cable modems get its service
/// flow. Modems not covered by any tier are unregulated.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TierConfig {
    /// Name for reports. Default `tier{k}` (k = position, from 1).
    pub name: Option<String>,
    /// Number of cable modems in this tier. Default 1.
    #[serde(default = "d_one")]
    pub count: u32,
    /// Maximum Sustained Traffic Rate (bit/s of Ethernet frames). Required.
    pub max_rate: RateSpec,
    /// Maximum Traffic Burst. Default 3044 bytes (DOCSIS 3.0 default, two 1522-byte frames).
    #[serde(default = "d_bucket")]
    pub bucket: SizeSpec,
    /// Peak Traffic Rate. Default: none (no peak limiter).
    pub peak_rate: Option<RateSpec>,
    /// Bucket of the peak limiter. Default 1522 bytes (one maximum frame, as ns-2's DelayTb).
    #[serde(default = "d_peak_bucket")]
    pub peak_bucket: SizeSpec,
}

/// `[docsis]`: a DOCSIS 3.0 cable network.
///
/// Nodes: router `cmts`, router `core`, hosts `cm0..cm{modems-1}` (a cable modem and its
/// one subscriber host) and `server0..server{servers-1}`. Links: `docsis_down` (the CMTS
/// downstream to every modem: service-flow regulators → `downstream_qdisc` → bonded
/// channels), `cm{i}_up` (each modem's upstream to the CMTS), `cmts->core`/`core->cmts`,
/// and `server{j}->core`/`core->server{j}` with the server's own delay, so the base RTT
/// of a flow between server j and a modem is `2 × (server_delays[j] + delay)` plus
/// serialisation.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DocsisConfig {
    /// Number of cable modems. Default: the sum of the tiers' counts, or 1 without tiers.
    pub modems: Option<u32>,
    /// Downstream channels in the bonding group (1 to 64). Default 1.
    #[serde(default = "d_one")]
    pub channels: u32,
    /// Rate of one downstream channel. Default 38 Mbit/s (6 MHz, 256-QAM, after FEC/framing).
    #[serde(default = "d_channel_rate")]
    pub channel_rate: RateSpec,
    /// Each modem's upstream rate. Default 27 Mbit/s (the study's upstream channel).
    #[serde(default = "d_upstream_rate")]
    pub upstream_rate: RateSpec,
    /// One-way CMTS ↔ modem propagation delay. Default 0.
    #[serde(default = "d_zero")]
    pub delay: DurationSpec,
    /// The CMTS downstream scheduler under test. Default fifo 2048 packets (the study's
    /// QUEUE_CAPACITY).
    #[serde(default = "d_cmts_q")]
    pub downstream_qdisc: QdiscConfig,
    /// Modems' upstream queues. Default fifo 4096 (2× the CMTS capacity: never the bottleneck).
    #[serde(default = "d_router_q")]
    pub upstream_qdisc: QdiscConfig,
    /// Number of servers. Default: `modems`.
    pub servers: Option<u32>,
    /// One-way delay of every server's access link unless `server_delays` is given. Default 0.
    #[serde(default = "d_zero")]
    pub server_delay: DurationSpec,
    /// Per-server one-way access delays (one per server).
    pub server_delays: Option<Vec<DurationSpec>>,
    /// Rate of the core and server links. Default: 10 × the downstream capacity, at least 1 Gbit/s.
    pub core_rate: Option<RateSpec>,
    /// Qdisc of the core and server links. Default fifo 4096 (never the bottleneck).
    #[serde(default = "d_router_q")]
    pub core_qdisc: QdiscConfig,
    /// Framing bytes per packet, counted by the regulators and the channels. Default 18
    /// (Ethernet header + CRC: DOCSIS rates count the Ethernet frame).
    #[serde(default = "d_docsis_overhead")]
    pub overhead: u32,
    /// Largest IP packet. Default 1500.
    #[serde(default = "d_mtu")]
    pub mtu: u32,
    /// Holding queue of each service-flow regulator, in packets. Default 2048.
    #[serde(default = "d_regulator_limit")]
    pub regulator_limit: u32,
    /// Service tiers, assigned to modems in order (`[[docsis.tier]]`). Default: none.
    #[serde(default, rename = "tier")]
    pub tiers: Vec<TierConfig>,
}

impl TierConfig {
    /// Parameter documentation for `aqmlab describe docsis.tier`.
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc::new("name", "tier{k}", "name for reports (k = position, from 1)"),
        ParamDoc::new(
            "count",
            "1",
            "number of consecutive cable modems in this tier",
        ),
        ParamDoc::new(
            "max_rate",
            "required",
            "Maximum Sustained Traffic Rate (bit/s of Ethernet frames)",
        ),
        ParamDoc::new(
            "bucket",
            "3044B",
            "Maximum Traffic Burst (DOCSIS 3.0 default: two 1522-byte frames)",
        ),
        ParamDoc::new(
            "peak_rate",
            "off",
            "Peak Traffic Rate (a second token bucket)",
        ),
        ParamDoc::new(
            "peak_bucket",
            "1522B",
            "bucket of the peak limiter (one maximum frame, as ns-2's DelayTb)",
        ),
    ];
}

impl DocsisConfig {
    /// Parameter documentation for `aqmlab describe docsis`.
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc::new("modems", "sum of the tiers' counts, or 1", "number of cable modems (hosts cm0, cm1, ...)"),
        ParamDoc::new("channels", "1", "downstream channels in the bonding group (1 to 64)"),
        ParamDoc::new("channel_rate", "38Mbit", "rate of one downstream channel (6 MHz, 256-QAM, after FEC and framing)"),
        ParamDoc::new("upstream_rate", "27Mbit", "each modem's upstream rate (the DOCSIS study's upstream channel)"),
        ParamDoc::new("delay", "0ms", "one-way CMTS <-> modem propagation delay"),
        ParamDoc::new("downstream_qdisc", "{ kind = \"fifo\", limit = 2048 }", "the CMTS downstream qdisc under test (the study's QUEUE_CAPACITY)"),
        ParamDoc::new("upstream_qdisc", "{ kind = \"fifo\", limit = 4096 }", "each modem's upstream qdisc (twice the CMTS capacity: never the bottleneck)"),
        ParamDoc::new("servers", "modems", "number of servers (hosts server0, server1, ...)"),
        ParamDoc::new("server_delay", "0ms", "one-way delay of every server's access link unless server_delays is given"),
        ParamDoc::new("server_delays", "server_delay for each", "per-server one-way access delays (one per server)"),
        ParamDoc::new("core_rate", "10 x downstream capacity, at least 1Gbit", "rate of the core and server links"),
        ParamDoc::new("core_qdisc", "{ kind = \"fifo\", limit = 4096 }", "qdisc of the core and server links (never the bottleneck)"),
        ParamDoc::new("overhead", "18", "framing bytes per packet counted by the regulators and channels (Ethernet header + CRC)"),
        ParamDoc::new("mtu", "1500", "largest IP packet"),
        ParamDoc::new("regulator_limit", "2048", "holding queue of each service-flow regulator, in packets"),
        ParamDoc::new("tier", "[]", "service tiers [[docsis.tier]], assigned to modems in order (see describe docsis.tier); modems without a tier are unregulated"),
    ];
}

/// A `[docsis]` table with every key checked (see [`Builder::resolve_docsis`]).
pub(super) struct ResolvedDocsis<'a> {
    d: &'a DocsisConfig,
    modems: u32,
    servers: usize,
    /// The bonded downstream capacity (channels × channel rate).
    capacity: Rate,
    core_rate: Rate,
    /// Each modem's service flow, in modem order (`None`: unregulated).
    flows: Vec<Option<ServiceFlowParams>>,
    warnings: Vec<ScenarioWarning>,
}

impl ResolvedDocsis<'_> {
    /// A link of the DOCSIS network: its framing and MTU are the table's.
    fn spec(
        &self,
        name: String,
        (from, to): (NodeId, NodeId),
        rate: Rate,
        delay: SimDuration,
        qdisc: &QdiscConfig,
    ) -> LinkSpec {
        LinkSpec {
            overhead: self.d.overhead,
            mtu: self.d.mtu,
            ..LinkSpec::new(name, from, to, rate, delay, qdisc.clone())
        }
    }

    /// One-way delay of server `j`'s access link.
    fn server_delay(&self, j: usize) -> SimDuration {
        let d = self.d;
        d.server_delays
            .as_ref()
            .map(|v| v[j].0)
            .unwrap_or(d.server_delay.0)
    }
}

/// The number of modems and servers: `modems` (else the tiers' sum, else 1) and
/// `servers` (else one per modem), each 1 to 100000, with the tiers within the modems.
fn docsis_counts(d: &DocsisConfig) -> Result<(u32, usize), ScenarioError> {
    let tier_total: u64 = d.tiers.iter().map(|t| t.count as u64).sum();
    let modems =
        d.modems
            .map(|m| m as u64)
            .unwrap_or(if d.tiers.is_empty() { 1 } else { tier_total });
    check_range("docsis.modems", modems, 1, 100_000, "1 to 100000")?;
    if tier_total > modems {
        return Err(ScenarioError::new(
            "docsis.tier",
            format!(
                "the tiers cover {tier_total} modems but there are only {modems} (docsis.modems)"
            ),
        ));
    }
    let servers = d.servers.unwrap_or(modems as u32) as usize;
    check_range("docsis.servers", servers, 1, 100_000, "1 to 100000")?;
    if let Some(v) = &d.server_delays {
        if v.len() != servers {
            return Err(ScenarioError::new(
                "docsis.server_delays",
                format!(
                    "has {} entries; it needs one per server ({servers})",
                    v.len()
                ),
            ));
        }
    }
    Ok((modems as u32, servers))
}

/// The service flow of each of `modems` modems from `[[docsis.tier]]` (unregulated past
/// the tiers); warns (into `warnings`) about a tier the downstream `capacity` never
/// holds back.
fn service_flows(
    d: &DocsisConfig,
    modems: u32,
    capacity: Rate,
    warnings: &mut Vec<ScenarioWarning>,
) -> Result<Vec<Option<ServiceFlowParams>>, ScenarioError> {
    let frame = (d.mtu + d.overhead) as u64;
    let mut flows: Vec<Option<ServiceFlowParams>> = Vec::with_capacity(modems as usize);
    for (k, t) in d.tiers.iter().enumerate() {
        let tf = format!("docsis.tier[{k}]");
        check_range(
            format!("{tf}.count"),
            t.count,
            1,
            u32::MAX,
            "at least 1 modem",
        )?;
        if t.bucket.0 < frame {
            return Err(ScenarioError::new(format!("{tf}.bucket"), format!("{} bytes is less than one full-size frame ({frame} = mtu + overhead); DOCSIS requires at least 1522", t.bucket.0)));
        }
        let peak = match t.peak_rate {
            Some(pr) => {
                if pr.0 < t.max_rate.0 {
                    return Err(ScenarioError::new(format!("{tf}.peak_rate"), format!("{} is below max_rate {} (the peak rate must be at least the sustained rate)", pr.rate(), t.max_rate.rate())));
                }
                if t.peak_bucket.0 < frame {
                    return Err(ScenarioError::new(
                        format!("{tf}.peak_bucket"),
                        format!(
                            "{} bytes is less than one full-size frame ({frame} = mtu + overhead)",
                            t.peak_bucket.0
                        ),
                    ));
                }
                Some((pr.rate(), t.peak_bucket.0))
            }
            None => None,
        };
        if t.max_rate.0 > capacity.bps() {
            warnings.push(ScenarioWarning {
                field: format!("{tf}.max_rate"),
                message: format!("{} is above the downstream capacity {} ({} × {}): the regulator never holds traffic back", t.max_rate.rate(), capacity, d.channels, d.channel_rate.rate()),
            });
        }
        let name = t.name.clone().unwrap_or_else(|| format!("tier{}", k + 1));
        let sf = ServiceFlowParams {
            tier: name,
            max_rate: t.max_rate.rate(),
            bucket: t.bucket.0,
            peak,
        };
        for _ in 0..t.count {
            flows.push(Some(sf.clone()));
        }
    }
    flows.resize(modems as usize, None);
    Ok(flows)
}

impl Builder {
    /// Builds the `[docsis]` topology.
    pub(super) fn docsis(&mut self, d: &DocsisConfig) -> Result<(), ScenarioError> {
        let r = self.resolve_docsis(d)?;
        self.build_docsis(r);
        Ok(())
    }

    /// Checks every key of `[docsis]` (and that its node names are free); builds nothing.
    fn resolve_docsis<'a>(&self, d: &'a DocsisConfig) -> Result<ResolvedDocsis<'a>, ScenarioError> {
        let f = "docsis";
        check_range(
            "docsis.channels",
            d.channels,
            1,
            64,
            "1 to 64 bonded downstream channels",
        )?;
        let (modems, servers) = docsis_counts(d)?;
        check_range(
            "docsis.regulator_limit",
            d.regulator_limit,
            1,
            u32::MAX,
            "at least 1 packet",
        )?;
        let capacity = Rate::from_bps(d.channel_rate.rate().bps() * d.channels as u64);
        let mut warnings = Vec::new();
        let flows = service_flows(d, modems, capacity, &mut warnings)?;
        self.check_new_node("cmts", f)?;
        self.check_new_node("core", f)?;
        for i in 0..modems {
            self.check_new_node(&format!("cm{i}"), f)?;
        }
        let core_rate = d
            .core_rate
            .map(|r| r.rate())
            .unwrap_or_else(|| Rate::from_bps((capacity.bps() * 10).max(1_000_000_000)));
        check_qdisc(
            &d.downstream_qdisc,
            capacity,
            d.mtu,
            d.overhead,
            "docsis.downstream",
        )?;
        check_range("docsis.mtu", d.mtu, 68, 65535, "68 to 65535")?;
        check_range("docsis.overhead", d.overhead, 0, 1000, "0 to 1000 bytes")?;
        let r = ResolvedDocsis {
            d,
            modems,
            servers,
            capacity,
            core_rate,
            flows,
            warnings,
        };
        // Every upstream, and every core and server link, has the same checked keys.
        let (zero, up) = (SimDuration::ZERO, d.upstream_rate.rate());
        let upstream = r.spec(String::new(), (0, 0), up, zero, &d.upstream_qdisc);
        Builder::check_link(&upstream, "docsis.upstream")?;
        let core_link = r.spec(String::new(), (0, 0), core_rate, zero, &d.core_qdisc);
        Builder::check_link(&core_link, "docsis.core")?;
        for j in 0..servers {
            self.check_new_node(&format!("server{j}"), f)?;
        }
        Ok(r)
    }

    /// Adds a resolved DOCSIS network: nodes `cmts`, `core`, `cm{i}`, `server{j}` and
    /// its links (see [`DocsisConfig`]).
    fn build_docsis(&mut self, mut r: ResolvedDocsis<'_>) {
        let d = r.d;
        self.warnings.append(&mut r.warnings);
        let cmts = self.push_node("cmts", NodeKind::Router);
        let core = self.push_node("core", NodeKind::Router);
        let cms: Vec<NodeId> = (0..r.modems)
            .map(|i| self.push_node(&format!("cm{i}"), NodeKind::Host))
            .collect();
        let lower = LowerParams::Docsis(DocsisParams {
            channels: d.channels,
            channel_rate: d.channel_rate.rate(),
            flows: std::mem::take(&mut r.flows),
            regulator_limit: d.regulator_limit,
        });
        let p = LinkParams {
            name: "docsis_down".into(),
            from: cmts,
            to: cms[0],
            peers: cms.clone(),
            rate: r.capacity,
            delay: d.delay.0,
            overhead: d.overhead,
            mtu: d.mtu,
            device_queue: 1,
            loss: 0.0,
            loss_periods: vec![],
            trace: self.trace,
            gro: false,
            lower,
        };
        self.links.push((p, d.downstream_qdisc.clone()));
        let (up, core_q) = (d.upstream_rate.rate(), &d.core_qdisc);
        for (i, &cm) in cms.iter().enumerate() {
            let s = r.spec(
                format!("cm{i}_up"),
                (cm, cmts),
                up,
                d.delay.0,
                &d.upstream_qdisc,
            );
            self.push_link(s);
        }
        let zero = SimDuration::ZERO;
        self.push_link(r.spec("cmts->core".into(), (cmts, core), r.core_rate, zero, core_q));
        self.push_link(r.spec("core->cmts".into(), (core, cmts), r.core_rate, zero, core_q));
        for j in 0..r.servers {
            let s = self.push_node(&format!("server{j}"), NodeKind::Host);
            let delay = r.server_delay(j);
            self.push_link(r.spec(
                format!("server{j}->core"),
                (s, core),
                r.core_rate,
                delay,
                core_q,
            ));
            self.push_link(r.spec(
                format!("core->server{j}"),
                (core, s),
                r.core_rate,
                delay,
                core_q,
            ));
        }
    }
}
