//! `cake`: Common Applications Kept Enhanced (Linux `sch_cake`, 4.19+; Høiland-Jørgensen,
//! Täht, Morton, "Piece of CAKE", IEEE LANMAN 2018; tc-cake(8)).
//!
//! ```text
//!  enqueue ─► tin (DSCP) ─► 8-way set-associative flow queue ─► [COBALT per flow]
//!                                                                 │
//!  dequeue ◄─ deficit-mode shaper ◄─ tin scheduler ◄─ DRR++ with host fairness
//! ```
//! - **Tins** ([`Diffserv`]): the packet's DSCP picks a tin through the kernel's tables
//!   (`diffserv3` default, `diffserv4`, `diffserv8`, `precedence`, `besteffort`). Each tin
//!   has a bandwidth threshold (diffserv4: best effort 100 %, bulk 1/16, video 1/2, voice
//!   1/4 of `bandwidth`) tracked by its own deficit-mode shaper. When shaped, dequeue
//!   serves the highest-numbered tin that is within its threshold, else the tin
//!   whose schedule is earliest — so a saturating voice flow gets its 1/4 when best effort
//!   competes, and everything when alone. Unshaped, tins share by weighted DRR with the
//!   same proportions as quanta.
//! - **Flows**: 1024 queues per tin, 8-way set-associative hashing on the isolation key
//!   ([`FlowMode`]); within a tin, DRR++ (new/old/decaying lists as fq_codel plus a
//!   decaying list that keeps an emptied flow's COBALT state until it has decayed).
//!   Host isolation (`dual-srchost`, `dual-dsthost`, `triple-isolate`) divides a flow's
//!   quantum by the number of bulk flows of its source and/or destination host, so each
//!   host gets an equal share whatever its flow count.
//! - **AQM**: [`CobaltVars`] per flow (CoDel + BLUE, see `cobalt.rs`); target/interval
//!   from `rtt` (default 5 ms / 100 ms, auto-raised on slow links to 1.5 MTU times).
//! - **Shaper**: `bandwidth` (unlimited by default) in deficit mode: each dequeued packet
//!   moves `time_next_packet` on by its *adjusted* length (overhead, mpu, ATM cells, PTM
//!   64/65) at the rate; no packet leaves before it. The qdisc is then not
//!   work-conserving: [`Qdisc::next_ready`] tells the link when to come back.
//! - **Overflow**: over the memory limit, the longest queue of any tin loses its head
//!   packet and its BLUE probability rises (`cobalt_queue_full`).
//!
//! ## Simplifications and deviations (all documented)
//! - `nat`/`nonat`: there is no NAT in the model; hosts are the packets' `src`/`dst`.
//! - Hashes: Linux hashes the dissected 5-tuple with a boot-time key; here the packet's
//!   5-tuple stand-in `hash` and its `src`/`dst` node ids are mixed with a per-qdisc salt.
//! - Memory: Linux charges `skb->truesize`; here the frame length (size + link overhead),
//!   so the memory limit binds later than in a kernel.
//! - The overflow victim is the flow with the largest byte backlog (Linux keeps a heap;
//!   ties are broken by tin then queue index here).
//! - `raw` (the default) charges the frame length Linux sees (`size` + the link's
//!   framing overhead, which stands for the 14-byte Ethernet header); `overhead N`
//!   charges `size + N` (Linux subtracts the network offset first).
//! - ACK filter: see [`ack_filter`](Cake::ack_filter) for the header fields the model has.
//! - No GSO (no `split-gso`), no `fwmark`, no `autorate-ingress`, no tc filters.
//! - The control-law product is computed in full width (a kernel truncates intervals
//!   above 4.29 s, e.g. `interplanetary`).

use super::cobalt::{CobaltParams, CobaltVars, CobaltVerdict, P_DEC, P_INC};
use super::{
    BuildCtx, DropReason, MarkReason, ParamDoc, ParamError, Qdisc, QdiscOut, QdiscStats, Verdict,
};
use crate::packet::{tcp_flags, Packet, PacketKind, SackBlock};
use crate::rng::Rng;
use crate::time::SimTime;
use crate::units::{parse_duration, RateSpec, SizeSpec};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Queues per tin (Linux `CAKE_QUEUES`).
pub const QUEUES: usize = 1024;
/// Set associativity (Linux `CAKE_SET_WAYS`).
pub const WAYS: usize = 8;

/// `diffserv` keyword: tin layout and DSCP map.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Diffserv {
    Besteffort,
    Precedence,
    /// Bulk (CS1, LE) 1/16, best effort, voice (CS7, CS6, EF, VA, CS5…) 1/4. Linux default.
    #[default]
    Diffserv3,
    /// Bulk 1/16, best effort, video 1/2, voice 1/4.
    Diffserv4,
    Diffserv8,
}

/// Flow isolation mode (tc-cake keywords).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlowMode {
    Flowblind,
    Srchost,
    Dsthost,
    Hosts,
    Flows,
    DualSrchost,
    DualDsthost,
    #[default]
    TripleIsolate,
}

impl FlowMode {
    /// Linux `CAKE_FLOW_*` bits: SRC_IP 1, DST_IP 2, FLOWS 4.
    fn bits(self) -> u8 {
        match self {
            FlowMode::Flowblind => 0,
            FlowMode::Srchost => 1,
            FlowMode::Dsthost => 2,
            FlowMode::Hosts => 3,
            FlowMode::Flows => 4,
            FlowMode::DualSrchost => 5,
            FlowMode::DualDsthost => 6,
            FlowMode::TripleIsolate => 7,
        }
    }
    fn dsrc(self) -> bool {
        self.bits() & 5 == 5
    }
    fn ddst(self) -> bool {
        self.bits() & 6 == 6
    }
}

/// ATM/PTM link-layer compensation.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AtmMode {
    #[default]
    Noatm,
    /// 53-byte cells carrying 48 bytes each (ADSL).
    Atm,
    /// 64b/65b encoding (VDSL2): one byte per 64 or part thereof.
    Ptm,
}

/// `ack_filter` setting.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AckFilter {
    #[default]
    Off,
    On,
    Aggressive,
}

/// tc-cake overhead keywords: `(name, overhead, mpu, atm)`.
pub const OVERHEAD_PRESETS: &[(&str, i32, u32, AtmMode)] = &[
    ("raw", 0, 0, AtmMode::Noatm),
    ("conservative", 48, 0, AtmMode::Atm),
    ("ethernet", 38, 84, AtmMode::Noatm),
    ("docsis", 18, 64, AtmMode::Noatm),
    ("pppoe-ptm", 30, 0, AtmMode::Ptm),
    ("bridged-ptm", 22, 0, AtmMode::Ptm),
    ("pppoa-vcmux", 10, 0, AtmMode::Atm),
    ("pppoa-llc", 14, 0, AtmMode::Atm),
    ("pppoe-vcmux", 32, 0, AtmMode::Atm),
    ("pppoe-llcsnap", 40, 0, AtmMode::Atm),
    ("bridged-vcmux", 24, 0, AtmMode::Atm),
    ("bridged-llcsnap", 32, 0, AtmMode::Atm),
    ("ipoa-vcmux", 8, 0, AtmMode::Atm),
    ("ipoa-llcsnap", 16, 0, AtmMode::Atm),
];

/// tc-cake rtt keywords: `(name, target µs, interval µs)` (iproute2 `q_cake.c` presets).
pub const RTT_PRESETS: &[(&str, u64, u64)] = &[
    ("datacentre", 5, 100),
    ("lan", 50, 1_000),
    ("metro", 500, 10_000),
    ("regional", 1_500, 30_000),
    ("internet", 5_000, 100_000),
    ("oceanic", 15_000, 300_000),
    ("satellite", 50_000, 1_000_000),
    ("interplanetary", 50_000_000, 1_000_000_000),
];

/// `{ kind = "cake", ... }`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CakeConfig {
    /// Shaper rate; absent, `"unlimited"` or 0 = unlimited (Linux default).
    #[serde(
        default,
        deserialize_with = "de_bandwidth",
        skip_serializing_if = "Option::is_none"
    )]
    pub bandwidth: Option<RateSpec>,
    /// RTT keyword or a duration (interval = rtt, target = rtt/20). Default "internet".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt: Option<String>,
    /// Overrides the target the rtt setting implies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<crate::units::DurationSpec>,
    #[serde(default)]
    pub diffserv: Diffserv,
    #[serde(default)]
    pub isolation: FlowMode,
    /// Accepted for tc compatibility; no effect (the model has no NAT).
    #[serde(default)]
    pub nat: bool,
    #[serde(default)]
    pub wash: bool,
    #[serde(default)]
    pub ingress: bool,
    #[serde(default)]
    pub ack_filter: AckFilter,
    /// Split GSO super-packets into their segments at enqueue (Linux
    /// `CAKE_FLAG_SPLIT_GSO`, tc `split-gso`; unset: on). Off: a GSO skb is queued,
    /// scheduled and dropped whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_gso: Option<bool>,
    /// An overhead keyword (raw, conservative, ethernet, docsis, pppoe-ptm, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Bytes added to each packet (-64 to 256); implies overhead compensation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead: Option<i32>,
    /// Minimum adjusted packet length (0 to 256).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atm: Option<AtmMode>,
    /// VLAN tags added to the overhead (4 bytes each; tc `ether-vlan`).
    #[serde(default)]
    pub ether_vlan: u32,
    /// Memory limit; default max(4 MiB, 4 × bandwidth-delay of one interval) when shaped,
    /// capped at 10240 × (MTU + header) (Linux `cake_reconfigure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memlimit: Option<SizeSpec>,
}

/// `bandwidth`: a rate, or tc's `unlimited` (also 0, as the kernel reads rate 0).
fn de_bandwidth<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<RateSpec>, D::Error> {
    use serde::de::Error;
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Bw {
        Text(String),
        Int(i64),
        Float(f64),
    }
    let allowed = "a rate such as \"20Mbit\", or \"unlimited\"";
    let n = match Bw::deserialize(d)? {
        Bw::Text(t) if t == "unlimited" => return Ok(None),
        Bw::Text(t) => {
            return crate::units::parse_rate(&t)
                .map(|r| Some(RateSpec(r)))
                .map_err(|e| D::Error::custom(format!("{e} ({allowed})")))
        }
        Bw::Int(i) => i as f64,
        Bw::Float(f) => f,
    };
    if n == 0.0 {
        Ok(None)
    } else if (1.0..1.8e19).contains(&n) {
        Ok(Some(RateSpec(n as u64)))
    } else {
        Err(D::Error::custom(format!("{n} is not a rate ({allowed})")))
    }
}

fn rtt_of(s: &str) -> Result<(u64, u64), String> {
    if let Some(&(_, t, i)) = RTT_PRESETS.iter().find(|p| p.0 == s) {
        return Ok((t * 1000, i * 1000));
    }
    let d = parse_duration(s).map_err(|e| e.to_string())?;
    let i = d.as_nanos() / 1000; // tc works in µs
    if i == 0 {
        return Err("below 1 µs".into());
    }
    Ok(((i / 20).max(1) * 1000, i * 1000))
}

impl CakeConfig {
    /// The memory limit in bytes of frames (Linux `cake_reconfigure`) on a link whose
    /// frames are at most `mtu` bytes (MTU + hard header): `memlimit` if given; else,
    /// shaped (`bandwidth`), max(4 MiB, 4 × rate × interval) and at most 10240 × `mtu`;
    /// unshaped, 10240 × `mtu`.
    pub fn buffer_limit(&self, mtu: u64) -> u64 {
        let cap = 10240 * mtu;
        // tc bandwidth is stored in bytes per second, the interval in µs
        let rate = self.bandwidth.map(|r| r.0 / 8).unwrap_or(0);
        match self.memlimit {
            Some(m) => m.0.min(cap.max(m.0)),
            None if rate > 0 => {
                let (_, interval) =
                    rtt_of(self.rtt.as_deref().unwrap_or("internet")).expect("validated rtt");
                let t = rate * (interval / 1000) / 250_000;
                t.max(4 << 20).min(cap)
            }
            None => cap,
        }
    }

    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc { name: "bandwidth", default: "unlimited", doc: "deficit-mode shaper rate (tc-cake `bandwidth`); absent, \"unlimited\" or 0 = no shaper, tins then share by weighted DRR" },
        ParamDoc { name: "rtt", default: "internet", doc: "datacentre, lan, metro, regional, internet, oceanic, satellite, interplanetary (iproute2 presets, e.g. internet = 5ms/100ms) or a duration: interval = rtt, target = rtt/20" },
        ParamDoc { name: "target", default: "from rtt (5ms)", doc: "COBALT target; raised per tin to 1.5 MTU serialisation times at its rate (Linux cake_set_rate)" },
        ParamDoc { name: "diffserv", default: "diffserv3", doc: "besteffort, precedence, diffserv3, diffserv4, diffserv8: tins and DSCP map (Linux sch_cake tables; diffserv3 is the kernel and tc default)" },
        ParamDoc { name: "isolation", default: "triple-isolate", doc: "flowblind, srchost, dsthost, hosts, flows, dual-srchost, dual-dsthost, triple-isolate (Linux default): fairness between flows and/or hosts" },
        ParamDoc { name: "nat", default: "false", doc: "accepted; no effect (the model has no NAT: hosts are packets' src/dst)" },
        ParamDoc { name: "wash", default: "false", doc: "clear DSCP after tin selection (ECN bits kept)" },
        ParamDoc { name: "ingress", default: "false", doc: "ingress mode: dropped packets count against the shaper; COBALT's over-target floor scales with bulk flows" },
        ParamDoc { name: "ack_filter", default: "off", doc: "off, on, aggressive: drop redundant pure TCP ACKs queued in the same flow (Linux cake_ack_filter)" },
        ParamDoc { name: "split_gso", default: "on", doc: "true: split GSO super-packets into segments at enqueue (Linux cake_enqueue with CAKE_FLAG_SPLIT_GSO, tc split-gso); false: queue and drop them whole" },
        ParamDoc { name: "preset", default: "raw", doc: "overhead keyword: raw, conservative (48 atm), ethernet (38 mpu 84), docsis (18 mpu 64), pppoe-ptm (30 ptm), bridged-ptm (22 ptm), pppoa-vcmux, pppoa-llc, pppoe-vcmux, pppoe-llcsnap, bridged-vcmux, bridged-llcsnap, ipoa-vcmux, ipoa-llcsnap (tc-cake(8)); explicit keys override" },
        ParamDoc { name: "overhead", default: "raw", doc: "bytes added to the IP packet size (-64 to 256); raw = IP size + the link's framing overhead, as Linux sees skb->len" },
        ParamDoc { name: "mpu", default: "0", doc: "minimum adjusted packet size in bytes (0 to 256)" },
        ParamDoc { name: "atm", default: "noatm", doc: "noatm, atm (48-byte payload per 53-byte cell), ptm (64b/65b)" },
        ParamDoc { name: "ether_vlan", default: "0", doc: "VLAN tags: adds 4 bytes of overhead each (tc ether-vlan)" },
        ParamDoc { name: "memlimit", default: "auto", doc: "memory limit (frame bytes here; Linux charges truesize): shaped max(4MiB, 4 x rate x interval), unshaped 10240 x (MTU + header)" },
    ];

    pub fn validate(&self, _ctx: &BuildCtx) -> Result<(), ParamError> {
        if let Some(r) = &self.rtt {
            rtt_of(r).map_err(|e| {
                ParamError::new(
                    "rtt",
                    r,
                    format!("{e}; a duration or one of datacentre, lan, metro, regional, internet, oceanic, satellite, interplanetary"),
                )
            })?;
        }
        if let Some(t) = self.target {
            if t.0.as_nanos() < 1000 {
                return Err(ParamError::new(
                    "target",
                    format!("{}ns", t.0.as_nanos()),
                    "at least 1us",
                ));
            }
        }
        if let Some(p) = &self.preset {
            if !OVERHEAD_PRESETS.iter().any(|x| x.0 == p) {
                let names: Vec<&str> = OVERHEAD_PRESETS.iter().map(|x| x.0).collect();
                return Err(ParamError::new("preset", p, names.join(", ")));
            }
        }
        if let Some(o) = self.overhead {
            if !(-64..=256).contains(&o) {
                return Err(ParamError::new("overhead", o, "-64 to 256 bytes (tc-cake)"));
            }
        }
        if let Some(m) = self.mpu {
            if m > 256 {
                return Err(ParamError::new("mpu", m, "0 to 256 bytes (tc-cake)"));
            }
        }
        if self.ether_vlan > 8 {
            return Err(ParamError::new(
                "ether_vlan",
                self.ether_vlan,
                "0 to 8 tags",
            ));
        }
        if let Some(m) = self.memlimit {
            if m.0 < 3000 || m.0 > u32::MAX as u64 {
                return Err(ParamError::new(
                    "memlimit",
                    format!("{}B", m.0),
                    "3000 bytes to 4 GiB",
                ));
            }
        }
        Ok(())
    }
}

/// Where a flow is in the DRR++ rotation (Linux `CAKE_SET_*`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
enum Set {
    #[default]
    None,
    Sparse,
    /// Counted as sparse, actually in the bulk rotation.
    SparseWait,
    Bulk,
    Decaying,
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
enum List {
    #[default]
    None,
    New,
    Old,
    Decaying,
}

#[derive(Clone, Debug, Default)]
struct Flow {
    q: VecDeque<Packet>,
    deficit: i32,
    cvars: CobaltVars,
    srchost: u16,
    dsthost: u16,
    set: Set,
    list: List,
}

#[derive(Copy, Clone, Debug, Default)]
struct Host {
    srchost_tag: u32,
    dsthost_tag: u32,
    src_bulk: u16,
    dst_bulk: u16,
}

/// The host slot for `hash` in its 8-way set (sch_cake's srchost/dsthost lookup): the way
/// already tagged with it, else the first way from the hashed one with no bulk flows (or,
/// all busy, the hashed way itself), re-tagged. `tag`/`bulk` pick the source or destination
/// fields.
fn host_slot(
    hosts: &mut [Host],
    hash: u32,
    tag: impl Fn(&mut Host) -> &mut u32,
    bulk: impl Fn(&Host) -> u16,
) -> usize {
    let idx = hash as usize % QUEUES;
    let (inner, outer) = (idx % WAYS, idx - idx % WAYS);
    let mut k = inner;
    for _ in 0..WAYS {
        if *tag(&mut hosts[outer + k]) == hash {
            return outer + k;
        }
        k = (k + 1) % WAYS;
    }
    for _ in 0..WAYS {
        if bulk(&hosts[outer + k]) == 0 {
            break;
        }
        k = (k + 1) % WAYS;
    }
    *tag(&mut hosts[outer + k]) = hash;
    outer + k
}

/// Per-tin counters (after warm-up), as `tc -s qdisc show` reports them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TinStats {
    pub sent_pkts: u64,
    pub sent_bytes: u64,
    pub drops: u64,
    pub marks: u64,
    pub ack_drops: u64,
    pub way_collisions: u64,
}

#[derive(Debug)]
struct Tin {
    flows: Vec<Flow>,
    backlogs: Vec<u32>,
    tags: Vec<u32>,
    hosts: Vec<Host>,
    flow_quantum: u32,
    cparams: CobaltParams,
    sparse: u32,
    bulk: u32,
    decaying: u32,
    unresponsive: u32,
    new: VecDeque<u16>,
    old: VecDeque<u16>,
    decay: VecDeque<u16>,
    time_next: i64,
    rate_ns: u64,
    rate_shft: u32,
    rate_bps: u64,
    quantum: i32,
    tin_deficit: i32,
    backlog: u64,
    stats: TinStats,
}

/// Linux `cake_set_rate`: byte rate → ns per byte in fixed point, flow quantum, COBALT
/// target/interval raised for slow rates.
fn set_rate(rate: u64, mtu: u64, target_ns: u64, rtt_ns: u64) -> (u64, u32, u32, CobaltParams) {
    let mut quantum = 1514u32;
    let (mut rate_ns, mut shft) = (0u64, 0u32);
    if rate > 0 {
        quantum = (rate >> 12).clamp(300, 1514) as u32;
        shft = 34;
        rate_ns = ((1_000_000_000u128 << shft) / rate.max(64) as u128) as u64;
        while rate_ns >> 34 != 0 {
            rate_ns >>= 1;
            shft -= 1;
        }
    }
    let byte_target_ns = (mtu * rate_ns) >> shft;
    let target = (byte_target_ns * 3 / 2).max(target_ns);
    let interval = (rtt_ns + target - target_ns).max(target * 2);
    (
        rate_ns,
        shft,
        quantum,
        CobaltParams {
            interval,
            target,
            mtu_time: byte_target_ns,
            p_inc: P_INC,
            p_dec: P_DEC,
        },
    )
}

// DSCP → tin tables (Linux sch_cake.c).
const PRECEDENCE: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        t[i] = (i / 8) as u8;
        i += 1;
    }
    t
};
#[rustfmt::skip]
const DIFFSERV8: [u8; 64] = [
    2, 0, 1, 2, 4, 2, 2, 2, 1, 2, 1, 2, 1, 2, 1, 2,
    5, 2, 4, 2, 4, 2, 4, 2, 3, 2, 3, 2, 3, 2, 3, 2,
    6, 2, 3, 2, 3, 2, 3, 2, 6, 2, 2, 2, 6, 2, 6, 2,
    7, 2, 2, 2, 2, 2, 2, 2, 7, 2, 2, 2, 2, 2, 2, 2,
];
#[rustfmt::skip]
const DIFFSERV4: [u8; 64] = [
    0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
    2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0,
    3, 0, 2, 0, 2, 0, 2, 0, 3, 0, 0, 0, 3, 0, 3, 0,
    3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0,
];
#[rustfmt::skip]
const DIFFSERV3: [u8; 64] = [
    0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0,
    2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
];

/// The tin a DSCP maps to under `mode` (Linux `cake_select_tin` without fwmark/priority).
pub fn tin_of(mode: Diffserv, dscp: u8) -> usize {
    let d = (dscp & 63) as usize;
    (match mode {
        Diffserv::Besteffort => 0,
        Diffserv::Precedence => PRECEDENCE[d],
        Diffserv::Diffserv3 => DIFFSERV3[d],
        Diffserv::Diffserv4 => DIFFSERV4[d],
        Diffserv::Diffserv8 => DIFFSERV8[d],
    }) as usize
}

/// splitmix-style 32-bit mixer for the salted hashes.
fn mix(x: u64, salt: u64) -> u32 {
    let mut z = x ^ salt;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^= z >> 31;
    (z ^ (z >> 32)) as u32
}

const TIN_KEYS: [[&str; 5]; 8] = {
    macro_rules! t {
        ($i:literal) => {
            [
                concat!("tin", $i, "_sent_bytes"),
                concat!("tin", $i, "_drops"),
                concat!("tin", $i, "_marks"),
                concat!("tin", $i, "_ack_drops"),
                concat!("tin", $i, "_threshold_bps"),
            ]
        };
    }
    [t!(0), t!(1), t!(2), t!(3), t!(4), t!(5), t!(6), t!(7)]
};

/// The cake qdisc.
#[derive(Debug)]
pub struct Cake {
    tins: Vec<Tin>,
    diffserv: Diffserv,
    mode: FlowMode,
    wash: bool,
    ingress: bool,
    ack: AckFilter,
    split_gso: bool,
    /// Overhead compensation on (an explicit overhead or a keyword other than raw).
    compensate: bool,
    rate_overhead: i32,
    mpu: u32,
    atm: AtmMode,
    /// The link framing overhead (Linux: the MAC header inside `skb->len`).
    link_hdr: u32,
    rate_ns: u64,
    rate_shft: u32,
    time_next: i64,
    failsafe_next: i64,
    buffer_used: u64,
    buffer_limit: u64,
    qlen: u32,
    bytes: u64,
    cur_tin: usize,
    salt: u64,
    rng: Rng,
    warmup: SimTime,
    stats: QdiscStats,
}

/// Linux `quantum_div[i] = 65535 / i` (i ≥ 1).
#[inline]
fn quantum_div(i: u32) -> u32 {
    65535u32.checked_div(i).unwrap_or(65535)
}

impl Cake {
    pub fn new(c: &CakeConfig, mut ctx: BuildCtx) -> Self {
        let (mut target, interval) =
            rtt_of(c.rtt.as_deref().unwrap_or("internet")).expect("validated rtt");
        if let Some(t) = c.target {
            target = t.0.as_nanos();
        }
        // tc bandwidth is stored in bytes per second.
        let rate = c.bandwidth.map(|r| r.0 / 8).unwrap_or(0);
        let mtu = (ctx.mtu + ctx.overhead) as u64; // psched_mtu: MTU + hard header
        let layout: Vec<(u64, i32)> = match c.diffserv {
            Diffserv::Besteffort => vec![(rate, 65535)],
            Diffserv::Precedence | Diffserv::Diffserv8 => {
                let (mut r, mut q) = (rate, 256i32);
                (0..8)
                    .map(|_| {
                        let x = (r, q.max(1));
                        r = (r * 7) >> 3;
                        q = (q * 7) >> 3;
                        x
                    })
                    .collect()
            }
            Diffserv::Diffserv4 => vec![
                (rate, 1024),
                (rate >> 4, 1024 >> 4),
                (rate >> 1, 1024 >> 1),
                (rate >> 2, 1024 >> 2),
            ],
            Diffserv::Diffserv3 => {
                vec![(rate, 1024), (rate >> 4, 1024 >> 4), (rate >> 2, 1024 >> 2)]
            }
        };
        let tins: Vec<Tin> = layout
            .iter()
            .map(|&(r, quantum)| {
                let (rate_ns, rate_shft, flow_quantum, cparams) =
                    set_rate(r, mtu, target, interval);
                Tin {
                    flows: vec![Flow::default(); QUEUES],
                    backlogs: vec![0; QUEUES],
                    tags: vec![0; QUEUES],
                    hosts: vec![Host::default(); QUEUES],
                    flow_quantum,
                    cparams,
                    sparse: 0,
                    bulk: 0,
                    decaying: 0,
                    unresponsive: 0,
                    new: VecDeque::new(),
                    old: VecDeque::new(),
                    decay: VecDeque::new(),
                    time_next: 0,
                    rate_ns,
                    rate_shft,
                    rate_bps: r * 8,
                    quantum,
                    tin_deficit: 0,
                    backlog: 0,
                    stats: TinStats::default(),
                }
            })
            .collect();
        let (rate_ns, rate_shft) = (tins[0].rate_ns, tins[0].rate_shft);
        let buffer_limit = c.buffer_limit(mtu);
        let preset = c
            .preset
            .as_deref()
            .and_then(|p| OVERHEAD_PRESETS.iter().find(|x| x.0 == p));
        let compensate = c.overhead.is_some() || preset.is_some_and(|p| p.0 != "raw");
        let rate_overhead =
            c.overhead.unwrap_or(preset.map_or(0, |p| p.1)) + 4 * c.ether_vlan as i32;
        let compensate = compensate || c.ether_vlan > 0;
        let salt = ctx.rng.next_u64();
        Cake {
            tins,
            diffserv: c.diffserv,
            mode: c.isolation,
            wash: c.wash,
            ingress: c.ingress,
            ack: c.ack_filter,
            split_gso: c.split_gso.unwrap_or(true),
            compensate,
            rate_overhead,
            mpu: c.mpu.unwrap_or(preset.map_or(0, |p| p.2)),
            atm: c.atm.unwrap_or(preset.map_or(AtmMode::Noatm, |p| p.3)),
            link_hdr: ctx.overhead,
            rate_ns,
            rate_shft,
            time_next: 0,
            failsafe_next: 0,
            buffer_used: 0,
            buffer_limit,
            qlen: 0,
            bytes: 0,
            cur_tin: 0,
            salt,
            rng: ctx.rng,
            warmup: SimTime::ZERO,
            stats: QdiscStats::default(),
        }
    }

    /// Number of tins in use.
    pub fn tin_count(&self) -> usize {
        self.tins.len()
    }
    /// Counters of tin `i` (kernel numbering: diffserv4 0 = best effort, 1 = bulk,
    /// 2 = video, 3 = voice).
    pub fn tin_stats(&self, i: usize) -> &TinStats {
        &self.tins[i].stats
    }
    /// Threshold rate of tin `i` in bit/s (0 = unlimited).
    pub fn tin_rate_bps(&self, i: usize) -> u64 {
        self.tins[i].rate_bps
    }
    /// COBALT parameters of tin `i`.
    pub fn tin_params(&self, i: usize) -> CobaltParams {
        self.tins[i].cparams
    }
    /// The memory limit in bytes.
    pub fn buffer_limit(&self) -> u64 {
        self.buffer_limit
    }

    /// Linux `cake_calc_overhead`: the length the shaper charges for a packet.
    pub fn adjusted_len(&self, size: u32) -> u32 {
        let mut len = if self.compensate {
            size as i64
        } else {
            (size + self.link_hdr) as i64
        };
        len += self.rate_overhead as i64;
        let mut len = len.max(0) as u32;
        len = len.max(self.mpu);
        match self.atm {
            AtmMode::Atm => len = len.div_ceil(48) * 53,
            AtmMode::Ptm => len += len.div_ceil(64),
            AtmMode::Noatm => {}
        }
        len
    }

    #[inline]
    fn frame(&self, p: &Packet) -> u32 {
        p.size + self.link_hdr
    }

    /// Linux `cake_hash`: the queue index within `tin` for a packet, with the
    /// set-associative lookup and the host bookkeeping.
    fn hash(&mut self, tin: usize, pkt: &Packet) -> usize {
        let mode = self.mode;
        let bits = mode.bits();
        if bits == 0 {
            return 0;
        }
        let srchost_hash = mix(pkt.src as u64 | 1 << 40, self.salt);
        let dsthost_hash = mix(pkt.dst as u64 | 2 << 40, self.salt);
        let mut flow_hash = if bits & 4 != 0 {
            mix(pkt.hash as u64 | 3 << 40, self.salt)
        } else {
            0
        };
        if bits & 4 == 0 {
            if bits & 1 != 0 {
                flow_hash ^= srchost_hash;
            }
            if bits & 2 != 0 {
                flow_hash ^= dsthost_hash;
            }
        }
        let b = &mut self.tins[tin];
        let mut reduced = flow_hash as usize % QUEUES;
        if b.tags[reduced] == flow_hash && b.flows[reduced].set != Set::None {
            return reduced;
        }
        let inner = reduced % WAYS;
        let outer = reduced - inner;
        let (mut alloc_src, mut alloc_dst) = (false, false);
        let mut k = inner;
        let mut found = None;
        for _ in 0..WAYS {
            if b.tags[outer + k] == flow_hash {
                if b.flows[outer + k].set == Set::None {
                    alloc_src = mode.dsrc();
                    alloc_dst = mode.ddst();
                }
                found = Some(outer + k);
                break;
            }
            k = (k + 1) % WAYS;
        }
        if found.is_none() {
            for _ in 0..WAYS {
                if b.flows[outer + k].set == Set::None {
                    alloc_src = mode.dsrc();
                    alloc_dst = mode.ddst();
                    found = Some(outer + k);
                    break;
                }
                k = (k + 1) % WAYS;
            }
        }
        if found.is_none() {
            // No free way: take over the original queue and re-tag its hosts.
            b.stats.way_collisions += 1;
            alloc_src = mode.dsrc();
            alloc_dst = mode.ddst();
            let f = &b.flows[reduced];
            if f.set == Set::Bulk {
                let (s, d) = (f.srchost as usize, f.dsthost as usize);
                if alloc_src {
                    b.hosts[s].src_bulk -= 1;
                }
                if alloc_dst {
                    b.hosts[d].dst_bulk -= 1;
                }
            }
            found = Some(outer + k);
        }
        reduced = found.expect("set above");
        b.tags[reduced] = flow_hash;
        if alloc_src {
            let h = host_slot(
                &mut b.hosts,
                srchost_hash,
                |h| &mut h.srchost_tag,
                |h| h.src_bulk,
            );
            if b.flows[reduced].set == Set::Bulk {
                b.hosts[h].src_bulk += 1;
            }
            b.flows[reduced].srchost = h as u16;
        }
        if alloc_dst {
            let h = host_slot(
                &mut b.hosts,
                dsthost_hash,
                |h| &mut h.dsthost_tag,
                |h| h.dst_bulk,
            );
            if b.flows[reduced].set == Set::Bulk {
                b.hosts[h].dst_bulk += 1;
            }
            b.flows[reduced].dsthost = h as u16;
        }
        reduced
    }

    /// Linux `cake_advance_shaper`: charges `len` adjusted bytes to the tin's and the
    /// global shaper.
    fn advance_shaper(&mut self, tin: usize, len: u32, now: i64, drop: bool) {
        if self.rate_ns == 0 {
            return;
        }
        let b = &mut self.tins[tin];
        let tin_dur = ((len as u64 * b.rate_ns) >> b.rate_shft) as i64;
        let global_dur = ((len as u64 * self.rate_ns) >> self.rate_shft) as i64;
        let failsafe_dur = global_dur + (global_dur >> 1);
        if b.time_next < now {
            b.time_next += tin_dur;
        } else if b.time_next < now + tin_dur {
            b.time_next = now + tin_dur;
        }
        self.time_next += global_dur;
        if !drop {
            self.failsafe_next += failsafe_dur;
        }
    }

    /// Removes the head of a flow, keeping the byte/packet bookkeeping.
    fn pop(&mut self, tin: usize, idx: usize) -> Option<Packet> {
        let p = self.tins[tin].flows[idx].q.pop_front()?;
        let f = self.frame(&p);
        let b = &mut self.tins[tin];
        b.backlogs[idx] -= f;
        b.backlog -= f as u64;
        self.buffer_used -= f as u64;
        self.qlen -= 1;
        self.bytes -= p.size as u64;
        Some(p)
    }

    /// Linux `cake_drop`: the longest queue loses its head; its BLUE rises.
    fn drop_fattest(&mut self, now: SimTime, out: &mut QdiscOut) {
        let mut best: Option<(usize, usize)> = None;
        let mut best_len = 0u32;
        for (t, b) in self.tins.iter().enumerate() {
            for &i in b.new.iter().chain(b.old.iter()) {
                let l = b.backlogs[i as usize];
                if l > best_len {
                    best_len = l;
                    best = Some((t, i as usize));
                }
            }
        }
        let Some((t, i)) = best else { return };
        let n = now.as_nanos() as i64;
        let Some(p) = self.pop(t, i) else { return };
        let b = &mut self.tins[t];
        let cp = b.cparams;
        if b.flows[i].cvars.queue_full(&cp, n) {
            b.unresponsive += 1;
        }
        if now >= self.warmup {
            b.stats.drops += 1;
        }
        if self.ingress {
            let len = self.adjusted_len(p.size);
            self.advance_shaper(t, len, n, true);
        }
        out.drop_queued(&mut self.stats, p, DropReason::Overlimit);
    }

    /// Linux `cake_ack_filter`, on the flow's queue after the new packet (its tail) was
    /// added. Returns the index in the queue of an ACK made redundant by the tail, if any.
    ///
    /// The model's TCP header carries the fields the kernel inspects except the options
    /// list: a pure ACK here has no MSS/WS/SACK-permitted/fast-open options, timestamps
    /// are always present (so the "older or equal timestamps" rule applies to every
    /// candidate), SACK blocks are compared as the kernel does. Accurate ECN's ACE counter
    /// (in the flag bits on the wire) is compared with ECE/CWR as "flags". 5-tuple
    /// identity = same flow id, endpoints and sub-connection (`seq`).
    fn ack_filter(&self, q: &VecDeque<Packet>) -> Option<usize> {
        if q.len() < 2 {
            return None;
        }
        let aggressive = self.ack == AckFilter::Aggressive;
        let tail = q.back().expect("len >= 2");
        if tail.kind != PacketKind::Tcp
            || tail.tcp.flags & (tcp_flags::ACK | tcp_flags::SYN) != tcp_flags::ACK
        {
            return None;
        }
        let ecn_flags = |p: &Packet| (p.tcp.flags & (tcp_flags::ECE | tcp_flags::CWR), p.tcp.ace);
        let mut elig: Option<usize> = None;
        let mut elig_flags = (0u8, 0u32);
        let mut num_found = 0;
        let n = q.len() - 1;
        for (i, c) in q.iter().enumerate().take(n) {
            if c.kind != PacketKind::Tcp
                || c.flow != tail.flow
                || c.src != tail.src
                || c.dst != tail.dst
                || c.seq != tail.seq
            {
                continue;
            }
            if elig.is_some() && ecn_flags(c) != elig_flags {
                elig = None;
                num_found -= 1;
            }
            // cake_tcph_may_drop: only ACK (plus ECE/CWR) set; timestamps not newer.
            let may_drop = c.tcp.flags & !(tcp_flags::ECE | tcp_flags::CWR) == tcp_flags::ACK
                && c.tcp.ts_val <= tail.tcp.ts_val
                && c.tcp.ts_ecr <= tail.tcp.ts_ecr;
            if !may_drop || c.tcp.len != 0 || c.tcp.ack > tail.tcp.ack {
                continue;
            }
            let sack = sack_compare(c, tail);
            if sack < 0 || (c.tcp.ack == tail.tcp.ack && sack == 0) {
                continue;
            }
            if elig.is_none() {
                elig = Some(i);
                elig_flags = ecn_flags(c);
            }
            num_found += 1;
            if num_found > 1 {
                return elig;
            }
        }
        match elig {
            Some(i) if aggressive && i + 1 == n && elig_flags == ecn_flags(tail) => Some(i),
            _ => None,
        }
    }

    fn host_load(&self, tin: usize, idx: usize) -> u32 {
        let b = &self.tins[tin];
        let f = &b.flows[idx];
        let mut load = 1u32;
        if self.mode.dsrc() {
            load = load.max(b.hosts[f.srchost as usize].src_bulk as u32);
        }
        if self.mode.ddst() {
            load = load.max(b.hosts[f.dsthost as usize].dst_bulk as u32);
        }
        load
    }

    fn host_bulk(&mut self, tin: usize, idx: usize, up: bool) {
        let (dsrc, ddst) = (self.mode.dsrc(), self.mode.ddst());
        let b = &mut self.tins[tin];
        let (s, d) = (b.flows[idx].srchost as usize, b.flows[idx].dsthost as usize);
        if dsrc {
            let c = &mut b.hosts[s].src_bulk;
            *c = if up { *c + 1 } else { *c - 1 };
        }
        if ddst {
            let c = &mut b.hosts[d].dst_bulk;
            *c = if up { *c + 1 } else { *c - 1 };
        }
    }

    fn list_of(&mut self, tin: usize, l: List) -> &mut VecDeque<u16> {
        let b = &mut self.tins[tin];
        match l {
            List::New => &mut b.new,
            List::Old => &mut b.old,
            List::Decaying => &mut b.decay,
            List::None => unreachable!("no list"),
        }
    }

    /// Moves a flow to the tail of list `to` (Linux `list_move_tail`).
    fn move_tail(&mut self, tin: usize, idx: usize, to: List) {
        let from = self.tins[tin].flows[idx].list;
        if from != List::None {
            let l = self.list_of(tin, from);
            if l.front() == Some(&(idx as u16)) {
                l.pop_front();
            } else {
                l.retain(|&x| x != idx as u16);
            }
        }
        if to != List::None {
            self.list_of(tin, to).push_back(idx as u16);
        }
        self.tins[tin].flows[idx].list = to;
    }

    /// Picks the tin to serve (Linux `cake_dequeue` before `retry`); None if nothing
    /// can be served.
    fn choose_tin(&mut self, now: i64) -> Option<usize> {
        let n = self.tins.len();
        if self.rate_ns == 0 {
            let (mut wrapped, mut empty) = (false, true);
            loop {
                let b = &mut self.tins[self.cur_tin];
                if b.tin_deficit >= 0 && b.sparse + b.bulk > 0 {
                    return Some(self.cur_tin);
                }
                if b.tin_deficit <= 0 {
                    b.tin_deficit += b.quantum;
                }
                if b.sparse + b.bulk > 0 {
                    empty = false;
                }
                self.cur_tin += 1;
                if self.cur_tin >= n {
                    self.cur_tin = 0;
                    if wrapped {
                        if empty {
                            return None;
                        }
                    } else {
                        wrapped = true;
                    }
                }
            }
        } else {
            let mut best_time = i64::MAX;
            let mut best = 0;
            for (t, b) in self.tins.iter().enumerate() {
                if b.sparse + b.bulk > 0 {
                    let to_pkt = b.time_next - now;
                    if to_pkt <= 0 || to_pkt <= best_time {
                        best_time = to_pkt;
                        best = t;
                    }
                }
            }
            self.cur_tin = best;
            let b = &self.tins[best];
            (b.sparse + b.bulk > 0).then_some(best)
        }
    }

    /// An emptied flow leaves the rotation or waits in the decaying list.
    fn flow_emptied(&mut self, tin: usize, idx: usize, now: i64) {
        let b = &mut self.tins[tin];
        let cp = b.cparams;
        if b.flows[idx].cvars.queue_empty(&cp, now) {
            b.unresponsive = b.unresponsive.saturating_sub(1);
        }
        let cv = b.flows[idx].cvars;
        let set = b.flows[idx].set;
        if cv.p_drop != 0 || cv.count != 0 || now < cv.drop_next {
            self.move_tail(tin, idx, List::Decaying);
            let b = &mut self.tins[tin];
            match set {
                Set::Bulk => {
                    b.bulk -= 1;
                    b.decaying += 1;
                    self.host_bulk(tin, idx, false);
                }
                Set::Sparse | Set::SparseWait => {
                    b.sparse -= 1;
                    b.decaying += 1;
                }
                _ => {}
            }
            self.tins[tin].flows[idx].set = Set::Decaying;
        } else {
            self.move_tail(tin, idx, List::None);
            let b = &mut self.tins[tin];
            match set {
                Set::Sparse | Set::SparseWait => b.sparse -= 1,
                Set::Bulk => {
                    b.bulk -= 1;
                    self.host_bulk(tin, idx, false);
                }
                _ => b.decaying -= 1,
            }
            self.tins[tin].flows[idx].set = Set::None;
        }
    }
}

/// Linux `cake_tcph_sack_compare(a, b)`: -1 if `a` SACKs something `b` does not (or has a
/// DSACK), 1 if `b` SACKs more bytes, 0 if equal.
fn sack_compare(a: &Packet, b: &Packet) -> i32 {
    let blocks = |p: &Packet| {
        let mut v = [SackBlock::default(); 3];
        for (slot, blk) in v.iter_mut().zip(p.tcp.sacks()) {
            *slot = blk;
        }
        (v, p.tcp.n_sacks())
    };
    let ((va, na), (vb, nb)) = (blocks(a), blocks(b));
    let (sa, sb) = (&va[..na], &vb[..nb]);
    match (sa.is_empty(), sb.is_empty()) {
        (false, true) => return -1,
        (true, false) => return 1,
        (true, true) => return 0,
        _ => {}
    }
    let mut bytes_a = 0u64;
    let bytes_b: u64 = sb.iter().map(|s| s.end - s.start).sum();
    for x in sa {
        if x.start < a.tcp.ack {
            return -1; // DSACK: always keep
        }
        bytes_a += x.end - x.start;
        if !sb.iter().any(|y| y.start <= x.start && y.end >= x.end) {
            return -1;
        }
    }
    if bytes_b > bytes_a {
        1
    } else {
        0
    }
}

impl Qdisc for Cake {
    fn enqueue(&mut self, mut pkt: Packet, now: SimTime, out: &mut QdiscOut) -> Verdict {
        if self.split_gso && pkt.gso_segs > 1 {
            // Linux cake_enqueue: a GSO skb is segmented (`skb_gso_segment`) and each
            // segment queued in the skb's flow as a packet of its own.
            let mut v = Verdict::Enqueued;
            for i in 0..pkt.segs() {
                v = self.enqueue(pkt.segment(i), now, out);
            }
            return v;
        }
        let n = now.as_nanos() as i64;
        let tin = tin_of(self.diffserv, pkt.dscp).min(self.tins.len() - 1);
        if self.wash {
            pkt.dscp = 0;
        }
        let idx = self.hash(tin, &pkt);
        // Keep the shapers from banking idle time.
        if self.tins[tin].backlog == 0 {
            let b = &mut self.tins[tin];
            if b.time_next < n {
                b.time_next = n;
            }
            if self.qlen == 0 && self.time_next < n {
                self.failsafe_next = n;
                self.time_next = n;
            }
        }
        self.stats.on_enqueue(&pkt);
        let f = self.frame(&pkt);
        pkt.enqueued_at = now;
        {
            let b = &mut self.tins[tin];
            b.flows[idx].q.push_back(pkt);
            b.backlogs[idx] += f;
            b.backlog += f as u64;
        }
        self.buffer_used += f as u64;
        self.qlen += 1;
        self.bytes += pkt.size as u64;
        if self.ack != AckFilter::Off {
            if let Some(i) = self.ack_filter(&self.tins[tin].flows[idx].q) {
                let b = &mut self.tins[tin];
                let a = b.flows[idx].q.remove(i).expect("index from the filter");
                let af = a.size + self.link_hdr;
                b.backlogs[idx] -= af;
                b.backlog -= af as u64;
                if now >= self.warmup {
                    b.stats.ack_drops += 1;
                    b.stats.drops += 1;
                }
                self.buffer_used -= af as u64;
                self.qlen -= 1;
                self.bytes -= a.size as u64;
                if self.ingress {
                    let len = self.adjusted_len(a.size);
                    self.advance_shaper(tin, len, n, true);
                }
                out.drop_queued(&mut self.stats, a, DropReason::AckFilter);
            }
        }
        // Flow chain.
        let set = self.tins[tin].flows[idx].set;
        if set == Set::None || set == Set::Decaying {
            self.move_tail(tin, idx, List::New);
            let load = self.host_load(tin, idx);
            let b = &mut self.tins[tin];
            if set == Set::Decaying {
                b.decaying -= 1;
            }
            b.flows[idx].set = Set::Sparse;
            b.sparse += 1;
            b.flows[idx].deficit = ((b.flow_quantum * quantum_div(load)) >> 16) as i32;
        } else if set == Set::SparseWait {
            let b = &mut self.tins[tin];
            b.flows[idx].set = Set::Bulk;
            b.sparse -= 1;
            b.bulk += 1;
            self.host_bulk(tin, idx, true);
        }
        while self.buffer_used > self.buffer_limit {
            self.drop_fattest(now, out);
        }
        Verdict::Enqueued
    }

    fn dequeue(&mut self, now: SimTime, out: &mut QdiscOut) -> Option<Packet> {
        let n = now.as_nanos() as i64;
        // Linux: the first flow looked at may come from the decaying list (so emptied
        // flows' COBALT state keeps decaying); afterwards new, old, then decaying.
        let mut first_flow = true;
        'begin: loop {
            if self.qlen == 0 {
                return None;
            }
            if self.time_next > n && self.failsafe_next > n {
                return None; // the shaper holds the next packet back
            }
            let tin = self.choose_tin(n)?;
            'retry: loop {
                let idx = {
                    let b = &self.tins[tin];
                    let pick = if first_flow && !b.decay.is_empty() {
                        b.decay.front()
                    } else {
                        b.new.front().or(b.old.front()).or(b.decay.front())
                    };
                    match pick {
                        Some(&i) => i as usize,
                        None => continue 'begin,
                    }
                };
                first_flow = false;
                if self.tins[tin].flows[idx].deficit <= 0 {
                    let set = self.tins[tin].flows[idx].set;
                    if set == Set::Sparse {
                        if !self.tins[tin].flows[idx].q.is_empty() {
                            let b = &mut self.tins[tin];
                            b.sparse -= 1;
                            b.bulk += 1;
                            b.flows[idx].set = Set::Bulk;
                            self.host_bulk(tin, idx, true);
                        } else {
                            self.tins[tin].flows[idx].set = Set::SparseWait;
                        }
                    }
                    let load = self.host_load(tin, idx);
                    let dither = self.rng.next_u32() & 0xffff;
                    let b = &mut self.tins[tin];
                    b.flows[idx].deficit +=
                        ((b.flow_quantum * quantum_div(load) + dither) >> 16) as i32;
                    self.move_tail(tin, idx, List::Old);
                    continue 'retry;
                }
                // Retrieve a packet via the AQM.
                loop {
                    let Some(mut p) = self.pop(tin, idx) else {
                        self.flow_emptied(tin, idx, n);
                        continue 'begin;
                    };
                    let bulk = if self.ingress { self.tins[tin].bulk } else { 0 };
                    let b = &mut self.tins[tin];
                    let cp = b.cparams;
                    let v = b.flows[idx]
                        .cvars
                        .should_drop(&cp, n, &mut p, bulk, &mut self.rng);
                    // The last packet of a queue is sent even if judged (it may be marked).
                    if v == CobaltVerdict::Pass || b.flows[idx].q.is_empty() {
                        let marked = b.flows[idx].cvars.ecn_marked;
                        if now >= self.warmup {
                            b.stats.sent_pkts += 1;
                            b.stats.sent_bytes += p.size as u64;
                            b.stats.marks += marked as u64;
                        }
                        if marked {
                            self.stats.on_mark(MarkReason::Codel);
                        }
                        let len = self.adjusted_len(p.size);
                        self.advance_shaper(tin, len, n, false);
                        let b = &mut self.tins[tin];
                        b.flows[idx].deficit -= len as i32;
                        b.tin_deficit -= len as i32;
                        self.stats.on_dequeue(&p);
                        return Some(p);
                    }
                    if now >= self.warmup {
                        b.stats.drops += 1;
                    }
                    let why = if v == CobaltVerdict::Flood {
                        DropReason::Blue
                    } else {
                        DropReason::Codel
                    };
                    if self.ingress {
                        let len = self.adjusted_len(p.size);
                        self.advance_shaper(tin, len, n, true);
                        let b = &mut self.tins[tin];
                        b.flows[idx].deficit -= len as i32;
                        b.tin_deficit -= len as i32;
                        out.drop_queued(&mut self.stats, p, why);
                        continue 'retry;
                    }
                    out.drop_queued(&mut self.stats, p, why);
                }
            }
        }
    }

    fn len(&self) -> usize {
        self.qlen as usize
    }
    fn backlog_bytes(&self) -> u64 {
        self.bytes
    }
    fn stats(&self) -> &QdiscStats {
        &self.stats
    }
    fn set_warmup(&mut self, t: SimTime) {
        self.warmup = t;
    }
    fn next_ready(&self) -> Option<SimTime> {
        if self.qlen == 0 || self.rate_ns == 0 {
            return None;
        }
        Some(SimTime::from_nanos(
            self.time_next.min(self.failsafe_next).max(0) as u64,
        ))
    }
    fn throttles(&self) -> bool {
        self.rate_ns != 0
    }
    fn summary(&self, out: &mut Vec<(&'static str, f64)>) {
        for (i, b) in self.tins.iter().enumerate() {
            let k = &TIN_KEYS[i];
            out.push((k[0], b.stats.sent_bytes as f64));
            out.push((k[1], b.stats.drops as f64));
            out.push((k[2], b.stats.marks as f64));
            out.push((k[3], b.stats.ack_drops as f64));
            out.push((k[4], b.rate_bps as f64));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{ctx, pkt};
    use super::super::QdiscConfig;
    use super::*;
    use crate::packet::{Ecn, SackBlock};

    fn cfg(t: &str) -> CakeConfig {
        match toml::from_str::<QdiscConfig>(&format!("kind = 'cake'\n{t}")).unwrap() {
            QdiscConfig::Cake(c) => c,
            other => panic!("{other:?}"),
        }
    }

    /// `split_gso` (Linux `cake_enqueue`, `CAKE_FLAG_SPLIT_GSO`): a 3-segment skb of
    /// 3 × 1500 bytes becomes three 1500-byte packets in the skb's flow, dequeued as
    /// segments at consecutive sequence numbers; with `split_gso = false` it stays one
    /// 4500-byte packet.
    #[test]
    fn split_gso_segments_super_packets_at_enqueue() {
        let skb = |now| {
            let mut p = pkt(1, 4500, 1, now);
            p.gso_segs = 3;
            p.tcp.len = 3 * 1448;
            p.tcp.seq = 1;
            p
        };
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        let mut q = Cake::new(&cfg(""), ctx(10_000_000));
        q.enqueue(skb(t), t, &mut out);
        assert_eq!((q.len(), q.backlog_bytes()), (3, 4500));
        let got: Vec<(u64, u32, u8)> = std::iter::from_fn(|| q.dequeue(t, &mut out))
            .map(|p| (p.tcp.seq, p.size, p.gso_segs))
            .collect();
        assert_eq!(got, vec![(1, 1500, 1), (1449, 1500, 1), (2897, 1500, 1)]);
        let mut q = Cake::new(&cfg("split_gso = false"), ctx(10_000_000));
        q.enqueue(skb(t), t, &mut out);
        assert_eq!((q.len(), q.backlog_bytes()), (1, 4500));
        assert_eq!(q.dequeue(t, &mut out).map(|p| p.gso_segs), Some(3));
        assert!(out.drops.is_empty());
    }

    #[test]
    fn defaults_and_presets_follow_linux_and_tc() {
        let q = Cake::new(&cfg(""), ctx(10_000_000));
        // diffserv3, unlimited, 5 ms / 100 ms, memory 10240 × 1514.
        assert_eq!(q.tin_count(), 3);
        assert_eq!(q.tin_rate_bps(0), 0);
        let p = q.tin_params(0);
        assert_eq!(
            (p.target, p.interval, p.mtu_time),
            (5_000_000, 100_000_000, 0)
        );
        assert_eq!(q.buffer_limit(), 10240 * 1514);
        assert!(!q.throttles());
        for unlimited in ["bandwidth = 'unlimited'", "bandwidth = 0"] {
            assert!(cfg(unlimited).bandwidth.is_none(), "{unlimited}");
        }
        assert_eq!(
            cfg("bandwidth = 2000000").bandwidth,
            Some(RateSpec(2_000_000))
        );
        // diffserv4 at 20 Mbit/s: thresholds 20, 1.25, 10, 5 Mbit/s; memory 4 MiB (4 ×
        // 2.5 MB/s × 100 ms = 1 MB < 4 MiB).
        let q = Cake::new(
            &cfg("diffserv = 'diffserv4'\nbandwidth = '20Mbit'"),
            ctx(10_000_000),
        );
        let rates: Vec<u64> = (0..4).map(|i| q.tin_rate_bps(i)).collect();
        assert_eq!(rates, vec![20_000_000, 1_250_000, 10_000_000, 5_000_000]);
        assert_eq!(q.buffer_limit(), 4 << 20);
        assert!(q.throttles());
        // The bulk tin's rate (156 250 B/s) makes one 1514-byte MTU take 9.69 ms:
        // target = 1.5 × that, interval = 100 ms + target − 5 ms (cake_set_rate).
        let p = q.tin_params(1);
        assert!(
            (p.mtu_time as f64 - 1514.0 / 156_250.0 * 1e9).abs() < 1e3,
            "{p:?}"
        );
        assert_eq!(p.target, p.mtu_time * 3 / 2);
        assert_eq!(p.interval, 100_000_000 + p.target - 5_000_000);
        // rtt keywords and durations.
        let q = Cake::new(&cfg("rtt = 'lan'"), ctx(10_000_000));
        assert_eq!(
            (q.tin_params(0).target, q.tin_params(0).interval),
            (50_000, 1_000_000)
        );
        let q = Cake::new(&cfg("rtt = '40ms'"), ctx(10_000_000));
        assert_eq!(
            (q.tin_params(0).target, q.tin_params(0).interval),
            (2_000_000, 40_000_000)
        );
        // Bad input names the field.
        let c = ctx(10_000_000);
        for bad in [
            "rtt = 'moon'",
            "preset = 'dsl'",
            "overhead = 300",
            "mpu = 500",
            "memlimit = '1KB'",
            "target = '0s'",
        ] {
            let e = cfg(bad).validate(&c).unwrap_err();
            assert!(bad.starts_with(e.field), "{bad}: {e:?}");
        }
        for bad in [
            "bandwidth = 'fast'",
            "bandwidth = -3",
            "diffserv = 'diffserv5'",
            "isolation = 'nat'",
            "ack_filter = 'yes'",
            "bogus = 1",
        ] {
            assert!(
                toml::from_str::<QdiscConfig>(&format!("kind = 'cake'\n{bad}")).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn overhead_compensation_matches_tc_cake() {
        let c = ctx(10_000_000); // link overhead 14 (the Ethernet header Linux sees)
        let q = Cake::new(&cfg(""), c.clone());
        assert_eq!(q.adjusted_len(1500), 1514); // raw
        let q = Cake::new(&cfg("overhead = 18"), c.clone());
        assert_eq!(q.adjusted_len(1500), 1518);
        let q = Cake::new(&cfg("preset = 'ethernet'"), c.clone());
        assert_eq!((q.adjusted_len(1500), q.adjusted_len(40)), (1538, 84));
        let q = Cake::new(&cfg("preset = 'docsis'"), c.clone());
        assert_eq!(q.adjusted_len(40), 64);
        // ATM: 1500 + 48 = 1548 → 33 cells of 48 → 1749 bytes.
        let q = Cake::new(&cfg("preset = 'conservative'"), c.clone());
        assert_eq!(q.adjusted_len(1500), 33 * 53);
        // PTM: 1500 + 30 = 1530, plus one byte per 64 or part: 24 → 1554.
        let q = Cake::new(&cfg("preset = 'pppoe-ptm'"), c.clone());
        assert_eq!(q.adjusted_len(1500), 1554);
        let q = Cake::new(&cfg("preset = 'bridged-ptm'\nether_vlan = 1"), c.clone());
        assert_eq!(q.adjusted_len(1000), 1026 + 1026usize.div_ceil(64) as u32);
        // Explicit keys override the keyword.
        let q = Cake::new(&cfg("preset = 'docsis'\nmpu = 0\natm = 'atm'"), c);
        assert_eq!(q.adjusted_len(30), 48usize.div_ceil(48) as u32 * 53);
    }

    #[test]
    fn dscp_tables_pick_the_kernel_tins() {
        // diffserv4: 0 best effort, 1 bulk, 2 video, 3 voice.
        for (dscp, tin) in [
            (0, 0),
            (8, 1),
            (1, 1),
            (46, 3),
            (40, 3),
            (48, 3),
            (56, 3),
            (32, 3),
            (34, 2),
            (24, 2),
            (10, 0),
            (16, 2),
            (4, 2),
        ] {
            assert_eq!(tin_of(Diffserv::Diffserv4, dscp), tin, "dscp {dscp}");
        }
        // diffserv3: EF and CS6/CS7 → voice (2), CS1 → bulk (1), AF41 → best effort.
        for (dscp, tin) in [(46, 2), (48, 2), (56, 2), (8, 1), (34, 0), (40, 0)] {
            assert_eq!(tin_of(Diffserv::Diffserv3, dscp), tin, "dscp {dscp}");
        }
        assert_eq!(tin_of(Diffserv::Precedence, 46), 5);
        assert_eq!(tin_of(Diffserv::Diffserv8, 46), 6);
        assert_eq!(tin_of(Diffserv::Besteffort, 46), 0);
    }

    /// Drives a shaped cake with two saturating sources and dequeues whenever it allows
    /// (the link's `next_ready` loop), returning IP bytes sent per tin.
    fn saturate(q: &mut Cake, srcs: &[(u8, u32)], secs: u64) -> Vec<u64> {
        let mut out = QdiscOut::new(false);
        let mut sent = vec![0u64; q.tin_count()];
        let mut now = SimTime::ZERO;
        let end = SimTime::ZERO + SimDuration::from_secs(secs);
        let mut uid = 0;
        let step = SimDuration::from_micros(100);
        while now < end {
            // Each source offers one 1000-byte packet per 100 µs (80 Mbit/s).
            for &(dscp, flow) in srcs {
                let mut p = pkt(flow, 1000, uid, now);
                p.dscp = dscp;
                p.src = flow;
                uid += 1;
                q.enqueue(p, now, &mut out);
            }
            while let Some(p) = q.dequeue(now, &mut out) {
                sent[tin_of(q.diffserv, p.dscp)] += p.size as u64;
            }
            out.drops.clear();
            now += step;
        }
        sent
    }
    use crate::time::SimDuration;

    #[test]
    fn diffserv4_voice_is_held_to_its_quarter_when_best_effort_competes() {
        let c = cfg("diffserv = 'diffserv4'\nbandwidth = '10Mbit'\noverhead = 0");
        let mut q = Cake::new(&c, ctx(100_000_000));
        let sent = saturate(&mut q, &[(46, 1), (0, 2)], 10);
        let total = (sent[0] + sent[3]) as f64 * 8.0 / 10.0;
        let voice = sent[3] as f64 * 8.0 / 10.0;
        // The shaper: 10 Mbit/s of adjusted bytes (overhead 0: IP bytes).
        assert!((total / 10e6 - 1.0).abs() < 0.01, "total {total}");
        // Voice is served first while under its threshold (10/4 Mbit/s), then only when
        // its schedule is earliest: it ends up with its quarter.
        assert!((voice / 2.5e6 - 1.0).abs() < 0.03, "voice {voice}");
        // Alone, voice may use the whole rate.
        let mut q = Cake::new(&c, ctx(100_000_000));
        let sent = saturate(&mut q, &[(46, 1)], 5);
        let voice = sent[3] as f64 * 8.0 / 5.0;
        assert!((voice / 10e6 - 1.0).abs() < 0.01, "voice alone {voice}");
        // Bulk (CS1) against best effort: 1/16.
        let mut q = Cake::new(&c, ctx(100_000_000));
        let sent = saturate(&mut q, &[(8, 1), (0, 2)], 10);
        let bulk = sent[1] as f64 * 8.0 / 10.0;
        assert!((bulk / 0.625e6 - 1.0).abs() < 0.05, "bulk {bulk}");
    }

    #[test]
    fn shaper_releases_nothing_before_next_ready() {
        let mut q = Cake::new(&cfg("bandwidth = '8Mbit'\noverhead = 0"), ctx(100_000_000));
        let mut out = QdiscOut::new(false);
        let t0 = SimTime::ZERO + SimDuration::from_millis(1);
        for i in 0..3 {
            q.enqueue(pkt(1, 1000, i, t0), t0, &mut out);
        }
        assert!(q.dequeue(t0, &mut out).is_some());
        // 1000 bytes at 1 MB/s: the next one is due 1 ms later.
        let due = q.next_ready().unwrap();
        assert!(
            due.as_nanos().abs_diff(t0.as_nanos() + 1_000_000) < 10,
            "{due:?}"
        );
        assert!(q
            .dequeue(due - SimDuration::from_nanos(100), &mut out)
            .is_none());
        assert_eq!(q.len(), 2);
        assert!(q.dequeue(due, &mut out).is_some());
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
    }

    fn ack(flow: u32, ackno: u64, uid: u64, ts: u64, now: SimTime) -> Packet {
        let mut p = pkt(flow, 52, uid, now);
        p.kind = PacketKind::Tcp;
        p.tcp.flags = tcp_flags::ACK;
        p.tcp.ack = ackno;
        p.tcp.ts_val = SimTime::ZERO + SimDuration::from_millis(ts);
        p
    }

    #[test]
    fn ack_filter_drops_redundant_acks_and_keeps_information() {
        let t = SimTime::ZERO;
        let mut out = QdiscOut::new(false);
        // Normal mode: a third ACK makes the oldest of two earlier ones redundant.
        let mut q = Cake::new(&cfg("ack_filter = 'on'"), ctx(10_000_000));
        q.enqueue(ack(1, 1000, 0, 1, t), t, &mut out);
        q.enqueue(ack(1, 2000, 1, 2, t), t, &mut out);
        assert!(
            out.drops.is_empty(),
            "one eligible ACK is not enough in normal mode"
        );
        q.enqueue(ack(1, 3000, 2, 3, t), t, &mut out);
        assert_eq!(out.drops.len(), 1);
        assert_eq!(
            (out.drops[0].0.uid, out.drops[0].1),
            (0, DropReason::AckFilter)
        );
        assert_eq!(q.len(), 2);
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
        // Aggressive: the single eligible ACK right before the new one goes.
        let mut q = Cake::new(&cfg("ack_filter = 'aggressive'"), ctx(10_000_000));
        out.drops.clear();
        q.enqueue(ack(1, 1000, 0, 1, t), t, &mut out);
        q.enqueue(ack(1, 2000, 1, 2, t), t, &mut out);
        assert_eq!(out.drops.len(), 1);
        assert_eq!(out.drops[0].0.uid, 0);
        // Never dropped: data segments, ACKs of another connection, an ACK carrying
        // SACK information the newer one lacks, an ECE change.
        let mut q = Cake::new(&cfg("ack_filter = 'aggressive'"), ctx(10_000_000));
        out.drops.clear();
        let mut data = ack(1, 1000, 0, 1, t);
        data.tcp.len = 1000;
        data.size = 1052;
        q.enqueue(data, t, &mut out);
        let mut other = ack(1, 1000, 1, 1, t);
        other.seq = 7;
        q.enqueue(other, t, &mut out);
        let mut sacked = ack(1, 1000, 2, 1, t);
        sacked.tcp.set_sacks(&[SackBlock {
            start: 2000,
            end: 3000,
        }]);
        q.enqueue(sacked, t, &mut out);
        q.enqueue(ack(1, 1000, 3, 2, t), t, &mut out);
        let mut ece = ack(1, 1000, 4, 3, t);
        ece.tcp.flags |= tcp_flags::ECE;
        q.enqueue(ece, t, &mut out);
        assert!(out.drops.is_empty(), "{:?}", out.drops);
        // A newer ACK covering the SACKed range makes the SACK ACK redundant.
        let mut cover = ack(1, 3000, 5, 4, t);
        cover.tcp.flags |= tcp_flags::ECE;
        q.enqueue(cover, t, &mut out);
        assert_eq!(out.drops.len(), 1);
        assert_eq!(
            out.drops[0].0.uid, 4,
            "the consecutive ECE ACK with equal flags"
        );
    }

    /// Ingress mode: a packet CAKE drops (here an ACK the filter removes) still costs its
    /// length on the shaper, as it already used the downstream link; the failsafe clock
    /// (1.5 × the rate, advanced by sent packets only) bounds how long that may stall.
    #[test]
    fn ingress_charges_dropped_packets_to_the_shaper() {
        let t = SimTime::ZERO + SimDuration::from_millis(1);
        let mut out = QdiscOut::new(false);
        // 52-byte ACKs at 1 MB/s: 52 µs each; failsafe 78 µs per sent packet.
        for (ingress, ready_us) in [(false, 52), (true, 78)] {
            let c = cfg(&format!(
                "bandwidth = '8Mbit'\noverhead = 0\nack_filter = 'on'\ningress = {ingress}"
            ));
            let mut q = Cake::new(&c, ctx(100_000_000));
            for i in 0..3 {
                q.enqueue(ack(1, 1000 * (i + 1), i, i, t), t, &mut out);
            }
            assert_eq!(q.len(), 2, "one ACK filtered");
            assert!(q.dequeue(t, &mut out).is_some());
            let due = q.next_ready().unwrap();
            assert!(
                due.as_nanos()
                    .abs_diff((t + SimDuration::from_micros(ready_us)).as_nanos())
                    < 10,
                "ingress {ingress}: {due:?}"
            );
            if ingress {
                // The shaper itself owes both ACKs: 104 µs.
                assert!((q.time_next - t.as_nanos() as i64 - 104_000).abs() < 10);
            }
        }
    }

    #[test]
    fn wash_clears_dscp_after_tin_selection_and_ect_is_marked() {
        let mut q = Cake::new(&cfg("wash = true\ndiffserv = 'diffserv4'"), ctx(10_000_000));
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        let mut p = pkt(1, 1500, 0, t);
        p.dscp = 46;
        q.enqueue(p, t, &mut out);
        let p = q.dequeue(t, &mut out).unwrap();
        assert_eq!(p.dscp, 0);
        assert_eq!(
            q.tin_stats(3).sent_pkts,
            1,
            "voice tin chosen before washing"
        );
        // A standing ECT queue gets CE marks, counted per tin and as CoDel marks.
        let mut q = Cake::new(&cfg("rtt = '10ms'"), ctx(10_000_000));
        let mut uid = 0;
        for ms in 0..400u64 {
            let now = SimTime::ZERO + SimDuration::from_millis(ms);
            for _ in 0..2 {
                let mut p = pkt(1, 1500, uid, now);
                p.ecn = Ecn::Ect0;
                uid += 1;
                q.enqueue(p, now, &mut out);
            }
            q.dequeue(now, &mut out);
        }
        assert!(q.tin_stats(0).marks > 5, "{:?}", q.tin_stats(0));
        assert_eq!(
            q.stats().marks[MarkReason::Codel.index()],
            q.tin_stats(0).marks
        );
        assert!(out.drops.iter().all(|d| d.1 != DropReason::Codel));
    }

    #[test]
    fn overflow_drops_from_the_longest_queue_and_raises_its_blue() {
        let mut q = Cake::new(
            &cfg("memlimit = '15140B'\nisolation = 'flows'"),
            ctx(10_000_000),
        );
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO + SimDuration::from_secs(1);
        for i in 0..9 {
            q.enqueue(pkt(1, 1500, i, t), t, &mut out);
        }
        q.enqueue(pkt(2, 1500, 100, t), t, &mut out);
        assert!(out.drops.is_empty());
        // The 11th frame (1514 bytes) overflows 15140: flow 1 (9 packets) loses its head.
        q.enqueue(pkt(2, 1500, 101, t), t, &mut out);
        assert_eq!(out.drops.len(), 1);
        assert_eq!(
            (out.drops[0].0.uid, out.drops[0].1),
            (0, DropReason::Overlimit)
        );
        let idx = {
            let mut found = None;
            for (i, f) in q.tins[0].flows.iter().enumerate() {
                if f.q.iter().any(|p| p.flow == 1) {
                    found = Some(i);
                }
            }
            found.unwrap()
        };
        assert_eq!(q.tins[0].flows[idx].cvars.p_drop, P_INC);
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
    }
}
