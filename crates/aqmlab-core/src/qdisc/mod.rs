//! Queue disciplines: the contract every qdisc keeps, and the registry of disciplines.
//!
//! ## Contract
//! - `enqueue(pkt, now, out)` either accepts the packet or drops it; it may also drop
//!   *other* packets (fq_codel's fat-flow drop). Every dropped packet, the arriving one
//!   included, is pushed to `out.drops` with its [`DropReason`]; the caller (the link)
//!   drains that buffer after each call, so no packet disappears silently.
//! - `dequeue(now, out)` returns the next packet to transmit, or `None` when empty. AQMs
//!   that drop at the head (CoDel) push those drops to `out.drops` too.
//! - An ECN mark sets `pkt.ecn = Ecn::Ce` and counts in `QdiscStats::marks`.
//! - `pkt.enqueued_at` is set by the caller before `enqueue`; the sojourn time of a
//!   dequeued packet is `now - pkt.enqueued_at`.
//! - Qdiscs never read a clock, never touch the event queue and draw randomness only from
//!   their own stream.
//! - Stats identities (checked by [`QdiscStats::check`] in tests and debug builds):
//!   `arrivals = enqueued + dropped_on_arrival` and
//!   `enqueued = dequeued + dropped_after_enqueue + backlog` (in packets and in bytes).
//!
//! ## Adding a discipline
//! Write `qdisc/NAME.rs` with a config struct (serde, `deny_unknown_fields`, documented
//! defaults), the qdisc struct implementing [`Qdisc`], and tests; then add one arm to
//! `qdisc_registry!` at the bottom of this file. `PARAMS` documents every key with its
//! default as written in a scenario file; `tests/defaults.rs` checks it against the
//! serde defaults (docs/architecture.md, "Defaults are declared once").

pub mod cake;
pub mod cobalt;
pub mod codel;
pub mod codel_core;
pub mod drr;
pub mod dualpi2;
pub mod fifo;
pub mod flow_sched;
pub mod fq_codel;
pub mod fq_pie;
pub mod pi_core;
pub mod pie;
pub mod pie_core;
pub mod prio;
#[cfg(test)]
mod props_codel_fq;
#[cfg(test)]
mod proptests;
pub mod red;
pub mod sfq;

use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::{Rate, SimTime};
use serde::{Deserialize, Serialize};

pub use crate::params::{ParamDoc, ParamError};

/// Why a packet was dropped.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The queue was full (tail drop at the packet or byte limit).
    Overlimit,
    /// A probabilistic AQM decision at enqueue (RED early drop, PIE).
    Early,
    /// RED above max threshold (or gentle region exhausted): forced drop.
    Forced,
    /// A sojourn-time AQM decision (CoDel family), at dequeue or at enqueue.
    Codel,
    /// Flow-queueing overflow: dropped from the fattest flow's queue.
    FatFlow,
    /// A memory limit (fq_codel `memory_limit`) was reached.
    Memory,
    /// Lost on the wire (link loss model), not by a qdisc.
    Wire,
    /// Dropped by a lower layer below the qdisc (driver queue full, MAC retry limit).
    LowerLayer,
    /// DualPI2: a Not-ECT packet in the L queue above the step threshold (Linux
    /// `QDISC_DROP_L4S_STEP_NON_ECN`).
    L4sStep,
    /// CAKE's BLUE part (COBALT) dropped a packet of a flow that keeps overflowing the
    /// queue (Linux `SKB_DROP_REASON_CAKE_FLOOD`).
    Blue,
    /// CAKE's ACK filter dropped a pure ACK made redundant by a later one.
    AckFilter,
}

impl DropReason {
    pub const ALL: [DropReason; 11] = [
        DropReason::Overlimit,
        DropReason::Early,
        DropReason::Forced,
        DropReason::Codel,
        DropReason::FatFlow,
        DropReason::Memory,
        DropReason::Wire,
        DropReason::LowerLayer,
        DropReason::L4sStep,
        DropReason::Blue,
        DropReason::AckFilter,
    ];
    pub fn index(self) -> usize {
        self as usize
    }
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Overlimit => "overlimit",
            DropReason::Early => "early",
            DropReason::Forced => "forced",
            DropReason::Codel => "codel",
            DropReason::FatFlow => "fat_flow",
            DropReason::Memory => "memory",
            DropReason::Wire => "wire",
            DropReason::LowerLayer => "lower_layer",
            DropReason::L4sStep => "l4s_step",
            DropReason::Blue => "blue",
            DropReason::AckFilter => "ack_filter",
        }
    }
}

/// Why a packet was ECN-marked instead of dropped.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum MarkReason {
    Early,
    Forced,
    Codel,
    /// CoDel's `ce_threshold`: marked because sojourn exceeded a fixed threshold.
    CeThreshold,
    /// DualPI2: an L4S packet marked with the coupled probability p_CL = k·p'.
    Coupled,
    /// DualPI2: an L4S packet marked by the L queue's step threshold.
    Step,
}

impl MarkReason {
    pub const ALL: [MarkReason; 6] = [
        MarkReason::Early,
        MarkReason::Forced,
        MarkReason::Codel,
        MarkReason::CeThreshold,
        MarkReason::Coupled,
        MarkReason::Step,
    ];
    pub fn index(self) -> usize {
        self as usize
    }
    pub fn name(self) -> &'static str {
        match self {
            MarkReason::Early => "early",
            MarkReason::Forced => "forced",
            MarkReason::Codel => "codel",
            MarkReason::CeThreshold => "ce_threshold",
            MarkReason::Coupled => "coupled",
            MarkReason::Step => "step",
        }
    }
}

/// What `enqueue` did with the arriving packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Enqueued,
    /// Enqueued with its ECN field set to CE.
    Marked(MarkReason),
    /// The arriving packet was dropped (and pushed to `out.drops`).
    Dropped(DropReason),
}

/// Counters every qdisc keeps. See the module doc for the identities. Laid out in
/// declaration order (`repr(C)`): the six a packet passing through counts come first,
/// in 48 bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct QdiscStats {
    pub arrivals: u64,
    pub arrival_bytes: u64,
    pub enqueued: u64,
    pub enqueued_bytes: u64,
    pub dequeued: u64,
    pub dequeued_bytes: u64,
    pub dropped_on_arrival: u64,
    pub dropped_on_arrival_bytes: u64,
    pub dropped_after_enqueue: u64,
    pub dropped_after_enqueue_bytes: u64,
    pub drops: [u64; 11],
    pub marks: [u64; 6],
}

impl QdiscStats {
    /// A packet of `size` bytes passed through the empty queue (`Qdisc::pass_through`):
    /// `on_enqueue` and `on_dequeue` of it.
    #[inline(always)]
    pub fn on_pass(&mut self, size: u32) {
        self.arrivals += 1;
        self.arrival_bytes += size as u64;
        self.enqueued += 1;
        self.enqueued_bytes += size as u64;
        self.dequeued += 1;
        self.dequeued_bytes += size as u64;
    }
    /// The arriving packet was accepted into the queue.
    pub fn on_enqueue(&mut self, p: &Packet) {
        self.arrivals += 1;
        self.arrival_bytes += p.size as u64;
        self.enqueued += 1;
        self.enqueued_bytes += p.size as u64;
    }
    /// The arriving packet was dropped without being queued.
    pub fn on_drop_arrival(&mut self, p: &Packet, why: DropReason) {
        self.arrivals += 1;
        self.arrival_bytes += p.size as u64;
        self.dropped_on_arrival += 1;
        self.dropped_on_arrival_bytes += p.size as u64;
        self.drops[why.index()] += 1;
    }
    /// A packet that was queued has been dropped (head drop, fat-flow drop).
    pub fn on_drop_queued(&mut self, p: &Packet, why: DropReason) {
        self.dropped_after_enqueue += 1;
        self.dropped_after_enqueue_bytes += p.size as u64;
        self.drops[why.index()] += 1;
    }
    pub fn on_dequeue(&mut self, p: &Packet) {
        self.dequeued += 1;
        self.dequeued_bytes += p.size as u64;
    }
    pub fn on_mark(&mut self, why: MarkReason) {
        self.marks[why.index()] += 1;
    }
    pub fn total_drops(&self) -> u64 {
        self.dropped_on_arrival + self.dropped_after_enqueue
    }
    pub fn total_marks(&self) -> u64 {
        self.marks.iter().sum()
    }
    /// Checks the conservation identities against the current backlog.
    pub fn check(&self, backlog_pkts: u64, backlog_bytes: u64) -> Result<(), String> {
        if self.arrivals != self.enqueued + self.dropped_on_arrival {
            return Err(format!(
                "arrivals {} != enqueued {} + dropped_on_arrival {}",
                self.arrivals, self.enqueued, self.dropped_on_arrival
            ));
        }
        if self.arrival_bytes != self.enqueued_bytes + self.dropped_on_arrival_bytes {
            return Err("arrival bytes != enqueued + dropped_on_arrival bytes".into());
        }
        if self.enqueued != self.dequeued + self.dropped_after_enqueue + backlog_pkts {
            return Err(format!(
                "enqueued {} != dequeued {} + dropped_after_enqueue {} + backlog {}",
                self.enqueued, self.dequeued, self.dropped_after_enqueue, backlog_pkts
            ));
        }
        if self.enqueued_bytes
            != self.dequeued_bytes + self.dropped_after_enqueue_bytes + backlog_bytes
        {
            return Err(format!(
                "enqueued bytes {} != dequeued {} + dropped_after_enqueue {} + backlog {}",
                self.enqueued_bytes,
                self.dequeued_bytes,
                self.dropped_after_enqueue_bytes,
                backlog_bytes
            ));
        }
        if self.drops.iter().sum::<u64>() != self.total_drops() {
            return Err("drops by reason do not add up to total drops".into());
        }
        Ok(())
    }
}

/// One sample of a qdisc state variable (e.g. CoDel's `count`, PIE's `p`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct TracePoint {
    pub t: SimTime,
    /// Index into the qdisc's `trace_vars()`.
    pub var: u8,
    pub value: f64,
}

/// Side outputs of a qdisc call: dropped packets and (opt-in) state-trace samples.
/// Owned by the link and reused, so steady-state calls do not allocate.
#[derive(Debug, Default)]
pub struct QdiscOut {
    pub drops: Vec<(Packet, DropReason)>,
    pub tracing: bool,
    pub trace: Vec<TracePoint>,
}

impl QdiscOut {
    pub fn new(tracing: bool) -> Self {
        QdiscOut {
            drops: Vec::with_capacity(64),
            tracing,
            trace: Vec::new(),
        }
    }
    /// Records a state variable sample if tracing is on.
    #[inline]
    pub fn trace(&mut self, t: SimTime, var: u8, value: f64) {
        if self.tracing {
            self.trace.push(TracePoint { t, var, value });
        }
    }
    /// Drops the arriving packet: counts it, hands it to the caller, returns the verdict.
    pub fn drop_arrival(
        &mut self,
        stats: &mut QdiscStats,
        pkt: Packet,
        why: DropReason,
    ) -> Verdict {
        stats.on_drop_arrival(&pkt, why);
        self.drops.push((pkt, why));
        Verdict::Dropped(why)
    }
    /// Drops a packet that had been queued.
    pub fn drop_queued(&mut self, stats: &mut QdiscStats, pkt: Packet, why: DropReason) {
        stats.on_drop_queued(&pkt, why);
        self.drops.push((pkt, why));
    }
}

/// The interface of a queue discipline. See the module doc for the contract.
pub trait Qdisc {
    fn enqueue(&mut self, pkt: Packet, now: SimTime, out: &mut QdiscOut) -> Verdict;
    fn dequeue(&mut self, now: SimTime, out: &mut QdiscOut) -> Option<Packet>;
    /// Packets currently queued.
    fn len(&self) -> usize;
    /// Bytes currently queued (sum of `Packet::size`).
    fn backlog_bytes(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn stats(&self) -> &QdiscStats;
    /// Names of the state variables this qdisc traces (index = `TracePoint::var`).
    fn trace_vars(&self) -> &'static [&'static str] {
        &[]
    }
    /// Fast path for a link that would dequeue an arriving packet at once (the lazy wire
    /// with a free serialiser): if the result is exactly `enqueue(pkt, now)` followed by a
    /// `dequeue(now)` that returns `pkt` unchanged, count both and return true; the
    /// packet then bypasses the queue. False (nothing done) otherwise. The default never
    /// takes the fast path; a qdisc may implement it only when an enqueue and dequeue on
    /// its empty queue change nothing but its stats (checked for every qdisc in
    /// `proptests.rs`), so the packet's size (`size`) is all it may read. (Given the
    /// size, not the packet: a borrow of the packet made the link copy it once more
    /// when it then goes into the queue.)
    fn pass_through(&mut self, _size: u32, _now: SimTime) -> bool {
        false
    }
    /// Whether `dequeue` on an empty queue changes nothing, at any instant (a plain FIFO,
    /// strict-priority bands of FIFOs). Other qdiscs may learn from it (RED starts its
    /// idle period, fq_codel and fq_pie retire the emptied flow from their lists), so the
    /// default is false; a link skips the eager model's empty dequeue at the end of a
    /// transmission only when this is true (checked for every qdisc in `proptests.rs`).
    fn empty_dequeue_is_noop(&self) -> bool {
        false
    }
    /// Statistics before this instant are warm-up (the qdisc's own summaries skip them).
    fn set_warmup(&mut self, _t: SimTime) {}
    /// Qdisc-specific summary metrics (e.g. DualPI2's per-queue sojourn), reported
    /// with the link's lower-layer metrics.
    fn summary(&self, _out: &mut Vec<(&'static str, f64)>) {}
    /// Whether this qdisc may hold packets back although it has some (a built-in shaper,
    /// e.g. CAKE's `bandwidth`): `dequeue` can then return `None` with `len() > 0`. The
    /// link reads this once, when it is built. Default false (work-conserving).
    fn throttles(&self) -> bool {
        false
    }
    /// For a throttling qdisc with packets: the earliest instant `dequeue` may return one.
    /// The link asks after each call and sets a timer for it when it lies in the future.
    /// Default None (work-conserving: a packet is ready whenever the qdisc has one).
    fn next_ready(&self) -> Option<SimTime> {
        None
    }
}

/// What a qdisc may know about where it is installed when it is built.
#[derive(Clone, Debug)]
pub struct BuildCtx {
    /// Rate of the link (or shaper) the qdisc feeds.
    pub rate: Rate,
    /// Link MTU in bytes (IP packet size).
    pub mtu: u32,
    /// Framing overhead the link adds per packet, in bytes.
    pub overhead: u32,
    /// The qdisc's own random stream.
    pub rng: Rng,
}

/// `AnyQdisc`'s enqueue of one discipline, in a function of its own. The dispatch is then
/// a jump to it: with the disciplines inlined into one dispatching function, every call
/// paid that function's frame (the largest any discipline needs, saved and restored
/// around the jump table), and those too large to inline (fq_codel, CoDel) paid it on
/// top of their own.
#[inline(never)]
fn enqueue_one<Q: Qdisc>(q: &mut Q, pkt: Packet, now: SimTime, out: &mut QdiscOut) -> Verdict {
    q.enqueue(pkt, now, out)
}

/// `AnyQdisc`'s dequeue of one discipline (see [`enqueue_one`]).
#[inline(never)]
fn dequeue_one<Q: Qdisc>(q: &mut Q, now: SimTime, out: &mut QdiscOut) -> Option<Packet> {
    q.dequeue(now, out)
}

/// Generates `QdiscConfig` (the scenario-file table, tagged by `kind`), `AnyQdisc` (static
/// dispatch over the implementations) and the name list for `aqmlab list qdiscs`.
macro_rules! qdisc_registry {
    ($( $(#[$meta:meta])* $variant:ident : $name:literal => $cfg:ty => $q:ty, $about:literal ;)*) => {
        /// A qdisc as written in a scenario file: `{ kind = "fifo", limit = 127 }`.
        #[derive(Clone, Debug, Deserialize, Serialize)]
        #[serde(tag = "kind", try_from = "toml::Table")]
        pub enum QdiscConfig {
            $( $(#[$meta])* #[serde(rename = $name)] $variant($cfg), )*
        }

        // Deserialization goes through a table so that an error inside the kind's own
        // fields names its key (see `scenario::from_tagged_table`).
        impl TryFrom<toml::Table> for QdiscConfig {
            type Error = String;
            fn try_from(t: toml::Table) -> Result<Self, String> {
                #[derive(Deserialize)]
                #[serde(tag = "kind")]
                enum Repr {
                    $( $(#[$meta])* #[serde(rename = $name)] $variant($cfg), )*
                }
                fn locate(kind: &str, v: toml::Value) -> Option<(String, String)> {
                    match kind {
                        $( $name => crate::params::locate_error::<$cfg>(v), )*
                        _ => None,
                    }
                }
                Ok(match crate::params::from_tagged_table::<Repr>(t, locate)? {
                    $( Repr::$variant(c) => QdiscConfig::$variant(c), )*
                })
            }
        }

        /// Every implemented qdisc, statically dispatched.
        #[derive(Debug)]
        pub enum AnyQdisc {
            $( $variant($q), )*
        }

        /// `(name, one-line description)` of every kind accepted in a scenario file.
        pub const QDISC_KINDS: &[(&str, &str)] = &[ $( ($name, $about), )* ];

        /// Parameter documentation of a qdisc kind (None if the kind is unknown).
        pub fn qdisc_params(kind: &str) -> Option<&'static [ParamDoc]> {
            match kind { $( $name => Some(<$cfg>::PARAMS), )* _ => None }
        }

        impl QdiscConfig {
            pub fn kind_name(&self) -> &'static str {
                match self { $( QdiscConfig::$variant(_) => $name, )* }
            }
            /// Checks parameters; the error names the field within the qdisc table.
            pub fn validate(&self, ctx: &BuildCtx) -> Result<(), ParamError> {
                match self { $( QdiscConfig::$variant(c) => c.validate(ctx), )* }
            }
            pub fn build(&self, ctx: BuildCtx) -> AnyQdisc {
                match self { $( QdiscConfig::$variant(c) => AnyQdisc::$variant(<$q>::new(c, ctx)), )* }
            }
        }

        impl Qdisc for AnyQdisc {
            #[inline]
            fn enqueue(&mut self, pkt: Packet, now: SimTime, out: &mut QdiscOut) -> Verdict {
                match self { $( AnyQdisc::$variant(q) => enqueue_one(q, pkt, now, out), )* }
            }
            #[inline]
            fn dequeue(&mut self, now: SimTime, out: &mut QdiscOut) -> Option<Packet> {
                match self { $( AnyQdisc::$variant(q) => dequeue_one(q, now, out), )* }
            }
            #[inline]
            fn len(&self) -> usize {
                match self { $( AnyQdisc::$variant(q) => q.len(), )* }
            }
            #[inline]
            fn backlog_bytes(&self) -> u64 {
                match self { $( AnyQdisc::$variant(q) => q.backlog_bytes(), )* }
            }
            fn stats(&self) -> &QdiscStats {
                match self { $( AnyQdisc::$variant(q) => q.stats(), )* }
            }
            fn trace_vars(&self) -> &'static [&'static str] {
                match self { $( AnyQdisc::$variant(q) => q.trace_vars(), )* }
            }
            #[inline]
            fn pass_through(&mut self, size: u32, now: SimTime) -> bool {
                match self { $( AnyQdisc::$variant(q) => q.pass_through(size, now), )* }
            }
            fn empty_dequeue_is_noop(&self) -> bool {
                match self { $( AnyQdisc::$variant(q) => q.empty_dequeue_is_noop(), )* }
            }
            fn set_warmup(&mut self, t: SimTime) {
                match self { $( AnyQdisc::$variant(q) => q.set_warmup(t), )* }
            }
            fn summary(&self, out: &mut Vec<(&'static str, f64)>) {
                match self { $( AnyQdisc::$variant(q) => q.summary(out), )* }
            }
            fn throttles(&self) -> bool {
                match self { $( AnyQdisc::$variant(q) => q.throttles(), )* }
            }
            #[inline]
            fn next_ready(&self) -> Option<SimTime> {
                match self { $( AnyQdisc::$variant(q) => q.next_ready(), )* }
            }
        }
    };
}

qdisc_registry! {
    #[serde(alias = "pfifo", alias = "bfifo")]
    Fifo: "fifo" => fifo::FifoConfig => fifo::Fifo,
        "tail-drop FIFO; limit in packets (pfifo) or bytes (bfifo), default 1000 packets";
    Codel: "codel" => codel::CodelConfig => codel::Codel,
        "CoDel (Linux sch_codel; variants rfc8289, draft00, act; fixed_count; drop_at = enqueue for tail-drop CoDel)";
    CodelAct: "codel_act" => codel::CodelActConfig => codel::Codel,
        "CoDel-ACT: codel with variant = \"act\" (window interval/sqrt(count), count decay above 126)";
    FqCodel: "fq_codel" => fq_codel::FqCodelConfig => fq_codel::FqCodel,
        "flow queueing with per-flow CoDel (RFC 8290 / Linux sch_fq_codel): 1024 flows, quantum 1514, limit 10240, ECN on";
    FqNoCodel: "fq_nocodel" => fq_codel::FqNoCodelConfig => fq_codel::FqCodel,
        "fq_codel with CoDel effectively off (target 100 s), as the residential study defines it";
    Sfq: "sfq" => sfq::SfqConfig => sfq::Sfq,
        "Stochastic Fairness Queueing (Linux sch_sfq): 1024 buckets, 128 flows, depth 127, limit 127, optional perturb";
    Drr: "drr" => drr::DrrConfig => drr::Drr,
        "per-flow deficit round robin with exact flow classification (DOCSIS study): limit 2048, 204 per flow";
    Red: "red" => red::RedConfig => red::Red,
        "RED (Linux sch_red; variant = ns2 for ns-2's Queue/RED): EWMA average queue, min/max thresholds in bytes or packets, ecn, harddrop, gentle, adaptive";
    Ared: "ared" => red::AredConfig => red::Red,
        "Adaptive RED: red with adaptive = true (max_p adapted every 500 ms, Floyd/Gummadi/Shenker 2001 as Linux; variant = ns2 as ns-2 runs it)";
    Pie: "pie" => pie::PieConfig => pie::Pie,
        "PIE (Linux sch_pie by default; variant = linux-3.14, rfc8033, draft00, docsis, ns2)";
    FqPie: "fq_pie" => fq_pie::FqPieConfig => fq_pie::FqPie,
        "flow queueing with per-flow PIE (Linux sch_fq_pie): 1024 flows, quantum 1514, limit 10240, target 15 ms, ECN off";
    PfifoFast: "pfifo_fast" => prio::PfifoFastConfig => prio::Prio,
        "Linux pfifo_fast: 3 strict-priority bands by TOS (rt_tos2priority, priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1), limit 1000 packets per band (txqueuelen)";
    Prio: "prio" => prio::PrioConfig => prio::Prio,
        "Linux sch_prio: strict-priority bands (default 3) chosen by priomap[rt_tos2priority(TOS)], pfifo of 1000 packets per band";
    DualPi2: "dualpi2" => dualpi2::DualPi2Config => dualpi2::DualPi2,
        "DualQ Coupled AQM (RFC 9332, Linux sch_dualpi2): L4S queue with 1 ms step marking, PI2 classic queue (target 15 ms), coupling k = 2, WRR 10/90";
    Cake: "cake" => cake::CakeConfig => cake::Cake,
        "CAKE (Linux sch_cake): COBALT per flow, 8-way set-associative hashing, triple-isolate host fairness, diffserv3 tins, optional deficit-mode shaper (bandwidth) with overhead/ATM/PTM compensation, ACK filter";
}

impl Default for QdiscConfig {
    fn default() -> Self {
        QdiscConfig::Fifo(fifo::FifoConfig::default())
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Helpers for qdisc unit tests.
    use super::*;
    use crate::packet::flow_hash;

    pub fn ctx(rate_bps: u64) -> BuildCtx {
        BuildCtx {
            rate: Rate::from_bps(rate_bps),
            mtu: 1500,
            overhead: 14,
            rng: Rng::stream(1, "qdisc", 0),
        }
    }

    pub fn pkt(flow: u32, size: u32, uid: u64, now: SimTime) -> Packet {
        Packet {
            uid,
            flow,
            src: 0,
            dst: 1,
            size,
            hash: flow_hash(flow, 0, 1),
            enqueued_at: now,
            ..Default::default()
        }
    }
}
