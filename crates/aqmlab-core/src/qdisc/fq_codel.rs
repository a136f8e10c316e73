//! `fq_codel`: flow queueing with CoDel per flow (RFC 8290, Linux `sch_fq_codel`), and
//! `fq_nocodel`, the same scheduler with CoDel effectively off (target 100 s), as the
//! residential study defines it.
//!
//! Packets are hashed (salted 5-tuple stand-in, `reciprocal_scale` onto `flows` buckets)
//! into per-flow FIFOs served by the new/old-list deficit round robin of
//! [`FqScheduler`](super::flow_sched::FqScheduler); each bucket has its own [`CodelVars`],
//! all share one [`CodelParams`]. As in Linux:
//! - the "backlog ≤ one MTU" rule of every flow's CoDel looks at the *whole qdisc's*
//!   backlog, not the flow's (`backlog_rule = "ns3"` takes ns-3's per-flow rule instead,
//!   for cross-checks against ns-3's `FqCoDelQueueDisc`; see [`BacklogRule`]);
//! - when the packet count exceeds `limit` (or memory exceeds `memory_limit`) after an
//!   enqueue, the fattest flow (most frame bytes) loses packets from its head until half of
//!   its backlog is gone or `drop_batch` packets have been dropped, and its CoDel count is
//!   raised by the number dropped so that CoDel signals harder;
//! - the arriving packet is always enqueued first (it is dropped only if its own flow is
//!   the fattest and the batch reaches it).
//!
//! Deviation: Linux charges `skb->truesize` (the buffer allocation, driver dependent) to
//! `memory_limit`; we charge the frame length, so the memory limit binds later than in a
//! kernel. With the defaults it cannot bind before the packet limit does (10240 × 1514 B
//! ≈ 15.5 MB < 32 MiB).
//!
//! Kernels before 4.7 (e.g. the residential study's 3.14) dropped a single packet per
//! overflow and did not raise the count; `drop_batch = 1` reproduces the former.

use super::codel::validate_codel_times;
use super::codel_core::{
    BacklogRule, CodelParams, CodelQueue, CodelStats, CodelVariant, CodelVars,
};
use super::flow_sched::FqScheduler;
use super::{BuildCtx, DropReason, ParamDoc, ParamError, Qdisc, QdiscOut, QdiscStats, Verdict};
use crate::packet::Packet;
use crate::time::{SimDuration, SimTime};
use crate::units::{DurationSpec, SizeSpec};
use serde::{Deserialize, Serialize};

fn d_limit() -> u32 {
    10240
}
fn d_flows() -> u32 {
    1024
}
fn d_interval() -> DurationSpec {
    DurationSpec(SimDuration::from_millis(100))
}
fn d_true() -> bool {
    true
}
fn d_memory() -> SizeSpec {
    SizeSpec(32 << 20)
}
fn d_batch() -> u32 {
    64
}

/// `{ kind = "fq_codel", ... }`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FqCodelConfig {
    /// Packet limit of the whole qdisc. Default 10240 (Linux `10*1024`).
    #[serde(default = "d_limit")]
    pub limit: u32,
    /// Number of flow buckets. Default 1024 (Linux, RFC 8290).
    #[serde(default = "d_flows")]
    pub flows: u32,
    /// DRR quantum in frame bytes. Default MTU + link overhead (Linux `psched_mtu`, 1514).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantum: Option<u32>,
    /// CoDel target. Default 5 ms (fq_codel) or 100 s (fq_nocodel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<DurationSpec>,
    /// CoDel interval. Default 100 ms.
    #[serde(default = "d_interval")]
    pub interval: DurationSpec,
    /// CE-mark instead of drop. Default true (fq_codel turns ECN on).
    #[serde(default = "d_true")]
    pub ecn: bool,
    /// CE-mark ECN-capable packets whose sojourn exceeds this. Default off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ce_threshold: Option<DurationSpec>,
    /// Memory limit (frame bytes here). Default 32 MiB (Linux `32 << 20`).
    #[serde(default = "d_memory")]
    pub memory_limit: SizeSpec,
    /// Most packets dropped from the fat flow per overflow. Default 64 (Linux).
    #[serde(default = "d_batch")]
    pub drop_batch: u32,
    /// CoDel variant of the per-flow AQM. Default linux.
    #[serde(default)]
    pub variant: CodelVariant,
    /// Which backlog stops a flow's drops: "linux" (the whole qdisc's) or "ns3" (the
    /// flow's own, as ns-3's `FqCoDelQueueDisc`). Default linux.
    #[serde(default)]
    pub backlog_rule: BacklogRule,
}

impl Default for FqCodelConfig {
    fn default() -> Self {
        FqCodelConfig {
            limit: d_limit(),
            flows: d_flows(),
            quantum: None,
            target: None,
            interval: d_interval(),
            ecn: true,
            ce_threshold: None,
            memory_limit: d_memory(),
            drop_batch: d_batch(),
            variant: CodelVariant::Linux,
            backlog_rule: BacklogRule::Linux,
        }
    }
}

/// `{ kind = "fq_nocodel", ... }`: fq_codel's table with target defaulting to 100 s.
/// The limit default stays fq_codel's 10240; the residential study sets 127 (1 and
/// 10 Mbit/s) or 1000 (100 Mbit/s) explicitly.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(transparent)]
pub struct FqNoCodelConfig(pub FqCodelConfig);

macro_rules! fq_codel_params_doc {
    ($target:literal, $target_doc:literal) => {
        &[
            ParamDoc { name: "limit", default: "10240", doc: "packet limit of the whole qdisc (Linux fq_codel 10*1024); overflow drops from the fattest flow" },
            ParamDoc { name: "flows", default: "1024", doc: "number of hash buckets (Linux, RFC 8290)" },
            ParamDoc { name: "quantum", default: "MTU + overhead", doc: "DRR quantum in frame bytes, at least 256 (Linux psched_mtu: 1514 on Ethernet)" },
            ParamDoc { name: "target", default: $target, doc: $target_doc },
            ParamDoc { name: "interval", default: "100ms", doc: "CoDel interval (Linux, RFC 8290)" },
            ParamDoc { name: "ecn", default: "true", doc: "CE-mark ECN-capable packets instead of dropping (on by default in fq_codel)" },
            ParamDoc { name: "ce_threshold", default: "off", doc: "CE-mark ECN-capable packets whose sojourn exceeds this duration" },
            ParamDoc { name: "memory_limit", default: "32MiB", doc: "memory limit; charged per packet as its frame length (Linux charges skb truesize), 32 MiB = Linux default" },
            ParamDoc { name: "drop_batch", default: "64", doc: "on overflow, drop up to this many packets (or half its backlog) from the fattest flow's head (Linux drop_batch_size)" },
            ParamDoc { name: "variant", default: "linux", doc: "CoDel variant of the per-flow AQM: linux, rfc8289, draft00, act" },
            ParamDoc { name: "backlog_rule", default: "linux", doc: "what keeps a flow's CoDel from dropping: linux (the whole qdisc holds at most one MTU, sch_fq_codel) or ns3 (the flow itself holds less than one MTU of IP bytes, ns-3 FqCoDelQueueDisc's per-flow MinBytes)" },
        ]
    };
}

/// Resolves an `fq_codel`/`fq_nocodel` table.
pub trait FqCodelSpec {
    fn config(&self) -> &FqCodelConfig;
    fn default_target(&self) -> SimDuration;
}
impl FqCodelSpec for FqCodelConfig {
    fn config(&self) -> &FqCodelConfig {
        self
    }
    fn default_target(&self) -> SimDuration {
        SimDuration::from_millis(5)
    }
}
impl FqCodelSpec for FqNoCodelConfig {
    fn config(&self) -> &FqCodelConfig {
        &self.0
    }
    fn default_target(&self) -> SimDuration {
        SimDuration::from_secs(100)
    }
}

fn validate_fq(spec: &impl FqCodelSpec) -> Result<(), ParamError> {
    let c = spec.config();
    if c.limit == 0 {
        return Err(ParamError::new("limit", 0, "a packet count of at least 1"));
    }
    if c.flows == 0 || c.flows > 65536 {
        return Err(ParamError::new("flows", c.flows, "1 to 65536 (Linux)"));
    }
    if let Some(q) = c.quantum {
        if q < 256 {
            return Err(ParamError::new(
                "quantum",
                q,
                "at least 256 bytes (Linux clamps smaller values to 256)",
            ));
        }
    }
    if c.drop_batch == 0 {
        return Err(ParamError::new("drop_batch", 0, "at least 1 packet"));
    }
    if c.memory_limit.0 == 0 || c.memory_limit.0 > 1 << 31 {
        return Err(ParamError::new(
            "memory_limit",
            format!("{}B", c.memory_limit.0),
            "1 byte to 2 GiB (Linux caps at 1 << 31)",
        ));
    }
    validate_codel_times(
        DurationSpec(c.target.map(|t| t.0).unwrap_or(spec.default_target())),
        c.interval,
        c.ce_threshold,
    )
}

impl FqCodelConfig {
    pub const PARAMS: &'static [ParamDoc] =
        fq_codel_params_doc!("5ms", "CoDel target (Linux, RFC 8290)");
    pub fn validate(&self, _ctx: &BuildCtx) -> Result<(), ParamError> {
        validate_fq(self)
    }
}

impl FqNoCodelConfig {
    pub const PARAMS: &'static [ParamDoc] = fq_codel_params_doc!(
        "100s",
        "CoDel target; 100 s turns CoDel effectively off (residential study's fq_nocodel)"
    );
    pub fn validate(&self, _ctx: &BuildCtx) -> Result<(), ParamError> {
        validate_fq(self)
    }
}

/// Names of the traced variables.
pub const FQ_TRACE_VARS: &[&str] = &["active_flows", "new_flows", "old_flows"];

/// The fq_codel qdisc.
#[derive(Debug)]
pub struct FqCodel {
    sched: FqScheduler,
    cvars: Vec<CodelVars>,
    params: CodelParams,
    cstats: CodelStats,
    limit: u32,
    memory_limit: u64,
    drop_batch: u32,
    /// `backlog_rule = "ns3"`: ns-3's per-flow `MinBytes` (the MTU in IP bytes).
    ns3_min_bytes: Option<u64>,
    stats: QdiscStats,
    traced: [f64; 3],
    /// Tests only: always take CoDel's general dequeue (to compare the fast path with it).
    #[cfg(test)]
    general_only: bool,
}

/// What [`FqCodel::fast_head`] did.
enum FastHead {
    /// Unlinked the head (its node in the packet store) to send it.
    Send(u32),
    /// The flow is empty; its CoDel left drop state.
    Empty,
    /// Neither: the general CoDel dequeue decides.
    General,
}

/// One flow's queue as its CoDel sees it.
struct FlowView<'a> {
    s: &'a mut FqScheduler,
    idx: usize,
    /// `backlog_rule = "ns3"`: ns-3's `MinBytes` (IP bytes); `None`: Linux's rule.
    ns3_min_bytes: Option<u64>,
}

impl CodelQueue for FlowView<'_> {
    #[inline]
    fn pop(&mut self) -> Option<Packet> {
        self.s.pop(self.idx)
    }
    /// Linux passes `&sch->qstats.backlog`: the whole qdisc's.
    #[inline]
    fn backlog(&self) -> u64 {
        self.s.frame_backlog()
    }
    #[inline]
    fn spared(&self, mtu: u64) -> bool {
        match self.ns3_min_bytes {
            None => self.backlog() <= mtu,
            // ns-3 `CoDelQueueDisc::OkToDrop`: the flow's own IP bytes below `MinBytes`
            Some(min) => self.s.flows[self.idx].q.bytes() < min,
        }
    }
}

impl FqCodel {
    pub fn new<C: FqCodelSpec>(spec: &C, mut ctx: BuildCtx) -> Self {
        let c = spec.config();
        let params = CodelParams {
            target: c.target.map(|t| t.0).unwrap_or(spec.default_target()),
            interval: c.interval.0,
            mtu: ctx.mtu as u64 + ctx.overhead as u64,
            ecn: c.ecn,
            ce_threshold: c.ce_threshold.map(|d| d.0),
            variant: c.variant,
            fixed_count: None,
        };
        let quantum = c.quantum.unwrap_or(ctx.mtu + ctx.overhead);
        // Linux hashes with a boot-time random key; ours comes from the qdisc's stream.
        let salt = ctx.rng.next_u32();
        let cap = (c.limit as usize + 1).min(4096);
        FqCodel {
            sched: FqScheduler::new(c.flows, quantum, ctx.overhead, salt, cap),
            cvars: vec![CodelVars::new(&params); c.flows as usize],
            params,
            cstats: CodelStats::default(),
            limit: c.limit,
            memory_limit: c.memory_limit.0,
            drop_batch: c.drop_batch,
            ns3_min_bytes: (c.backlog_rule == BacklogRule::Ns3).then_some(ctx.mtu as u64),
            stats: QdiscStats::default(),
            traced: [f64::NAN; 3],
            #[cfg(test)]
            general_only: false,
        }
    }

    pub fn params(&self) -> &CodelParams {
        &self.params
    }
    pub fn codel_stats(&self) -> &CodelStats {
        &self.cstats
    }
    pub fn scheduler(&self) -> &FqScheduler {
        &self.sched
    }
    /// CoDel state of bucket `idx`.
    pub fn flow_vars(&self, idx: usize) -> &CodelVars {
        &self.cvars[idx]
    }
    /// The bucket a packet hashes to.
    pub fn bucket_of(&self, pkt: &Packet) -> usize {
        self.sched.classify(pkt)
    }

    /// Linux `fq_codel_drop`: drops from the head of the fattest flow until half its
    /// backlog is gone or `drop_batch` packets are dropped; raises its CoDel count.
    fn drop_fat(&mut self, why: DropReason, out: &mut QdiscOut) {
        let Some(fat) = self.sched.fattest() else {
            return;
        };
        let overhead = self.sched.overhead() as u64;
        let threshold = self.sched.flows[fat].q.frame_bytes(overhead as u32) >> 1;
        let mut len = 0u64;
        let mut i = 0u32;
        // Linux's do-while: at least one packet, then while under both bounds.
        while let Some(p) = self.sched.pop(fat) {
            len += p.size as u64 + overhead;
            out.drop_queued(&mut self.stats, p, why);
            i += 1;
            if i >= self.drop_batch || len >= threshold {
                break;
            }
        }
        // "Tell codel to increase its signal strength also."
        self.cvars[fat].add_count(&self.params, i);
    }

    /// The common case of `codel_dequeue`, without its general machinery: flow `idx`'s
    /// CoDel is not in drop state and its head has waited less than `target`, and no
    /// `ce_threshold` is set. `CodelVars::dequeue` would then only record the head
    /// (`ldelay`, `maxpacket`, the sojourn back below target) and hand it over, whatever
    /// the backlog rule says; this does the same and unlinks the head, returning its node.
    /// An empty flow's CoDel only leaves drop state (`Empty`). `General`: neither case,
    /// nothing changed.
    #[inline(always)]
    fn fast_head(&mut self, idx: usize, now: SimTime) -> FastHead {
        #[cfg(test)]
        if self.general_only {
            return FastHead::General;
        }
        let Some(head) = self.sched.front(idx) else {
            self.cvars[idx].dropping = false;
            return FastHead::Empty;
        };
        let sojourn = now.saturating_since(head.enqueued_at);
        let size = head.size;
        let v = &mut self.cvars[idx];
        if v.dropping || sojourn >= self.params.target || self.params.ce_threshold.is_some() {
            return FastHead::General;
        }
        v.ldelay = sojourn;
        v.first_above_time = None;
        self.cstats.maxpacket = self.cstats.maxpacket.max(size);
        match self.sched.unlink_front(idx) {
            Some(i) => FastHead::Send(i),
            None => FastHead::General,
        }
    }

    fn trace(&mut self, now: SimTime, out: &mut QdiscOut) {
        let (n, o) = (self.sched.new_len() as f64, self.sched.old_len() as f64);
        let v = [n + o, n, o];
        for (i, (&new, old)) in v.iter().zip(self.traced.iter_mut()).enumerate() {
            if new != *old {
                *old = new;
                out.trace(now, i as u8, new);
            }
        }
    }
}

impl Qdisc for FqCodel {
    fn enqueue(&mut self, pkt: Packet, now: SimTime, out: &mut QdiscOut) -> Verdict {
        let idx = self.sched.classify(&pkt);
        self.stats.on_enqueue(&pkt);
        self.sched.enqueue(idx, pkt);
        let memory_limited = self.sched.frame_backlog() > self.memory_limit;
        if self.sched.len() > self.limit || memory_limited {
            self.drop_fat(
                if memory_limited {
                    DropReason::Memory
                } else {
                    DropReason::FatFlow
                },
                out,
            );
        }
        if out.tracing {
            self.trace(now, out);
        }
        Verdict::Enqueued
    }

    fn dequeue(&mut self, now: SimTime, out: &mut QdiscOut) -> Option<Packet> {
        let overhead = self.sched.overhead();
        let res = loop {
            let Some((idx, from_new)) = self.sched.next_flow() else {
                break None;
            };
            match self.fast_head(idx, now) {
                FastHead::Send(i) => {
                    let size = self.sched.store.packet(i).size;
                    self.sched.charge(idx, size + overhead);
                    self.stats.on_dequeue(self.sched.store.packet(i));
                    if out.tracing {
                        self.trace(now, out);
                    }
                    // Copied out of its freed node last, straight into the caller's slot.
                    return Some(*self.sched.store.packet(i));
                }
                FastHead::Empty => {
                    self.sched.flow_empty(idx, from_new);
                    continue;
                }
                FastHead::General => {}
            }
            let mut view = FlowView {
                s: &mut self.sched,
                idx,
                ns3_min_bytes: self.ns3_min_bytes,
            };
            match self.cvars[idx].dequeue(
                &self.params,
                &mut self.cstats,
                &mut view,
                now,
                &mut self.stats,
                out,
            ) {
                None => self.sched.flow_empty(idx, from_new),
                Some(p) => {
                    self.sched.charge(idx, p.size + overhead);
                    self.stats.on_dequeue(&p);
                    break Some(p);
                }
            }
        };
        if out.tracing {
            self.trace(now, out);
        }
        res
    }

    fn len(&self) -> usize {
        self.sched.len() as usize
    }
    fn backlog_bytes(&self) -> u64 {
        self.sched.bytes()
    }
    fn stats(&self) -> &QdiscStats {
        &self.stats
    }
    fn trace_vars(&self) -> &'static [&'static str] {
        FQ_TRACE_VARS
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{ctx, pkt};
    use super::super::QdiscConfig;
    use super::*;
    use crate::packet::Ecn;

    const MS: u64 = 1_000_000;

    /// Finds `n` flow ids that hash to distinct buckets of `q`.
    fn distinct_flows(q: &FqCodel, n: usize) -> Vec<u32> {
        let mut seen = std::collections::HashSet::new();
        let mut v = vec![];
        for f in 1.. {
            if seen.insert(q.bucket_of(&pkt(f, 100, 0, SimTime::ZERO))) {
                v.push(f);
                if v.len() == n {
                    return v;
                }
            }
        }
        unreachable!()
    }

    /// The below-target fast path of `dequeue` against CoDel's general dequeue: the same
    /// packets out (ECN field included), the same drops, and the same CoDel state and
    /// statistics after every call, under random arrivals of ECN-capable and Not-ECT
    /// packets that build and drain queues across target (drop and mark states, fat-flow
    /// drops, ce_threshold, every variant, both backlog rules, fq_nocodel).
    #[test]
    fn below_target_fast_path_equals_general_dequeue() {
        let cfgs = [
            FqCodelConfig {
                limit: 60,
                ..Default::default()
            },
            FqCodelConfig {
                limit: 60,
                ecn: false,
                variant: CodelVariant::Rfc8289,
                ..Default::default()
            },
            FqCodelConfig {
                limit: 200,
                ce_threshold: Some(DurationSpec(SimDuration::from_millis(1))),
                backlog_rule: BacklogRule::Ns3,
                ..Default::default()
            },
            FqCodelConfig {
                limit: 60,
                ecn: false,
                variant: CodelVariant::Act,
                drop_batch: 1,
                ..Default::default()
            },
        ];
        let mut rng = crate::rng::Rng::stream(11, "test", 0);
        for (k, c) in cfgs.iter().enumerate() {
            for nocodel in [false, true] {
                let build = || {
                    if nocodel {
                        FqCodel::new(&FqNoCodelConfig(c.clone()), ctx(10_000_000))
                    } else {
                        FqCodel::new(c, ctx(10_000_000))
                    }
                };
                let (mut fast, mut general) = (build(), build());
                general.general_only = true;
                let (mut of, mut og) = (QdiscOut::new(false), QdiscOut::new(false));
                let mut now = SimTime::ZERO;
                for uid in 0..20_000u64 {
                    now += SimDuration::from_micros(rng.below(1500));
                    // Bursts of arrivals (queues build past target), then drain.
                    let arrive = (uid / 2000) % 2 == 0 && rng.below(3) > 0 || rng.below(4) == 0;
                    if arrive {
                        let mut p = pkt(rng.below(6) as u32, 64 + rng.below(1437) as u32, uid, now);
                        if rng.below(2) == 0 {
                            p.ecn = Ecn::Ect0;
                        }
                        assert_eq!(
                            fast.enqueue(p, now, &mut of),
                            general.enqueue(p, now, &mut og)
                        );
                    } else {
                        let (a, b) = (fast.dequeue(now, &mut of), general.dequeue(now, &mut og));
                        assert_eq!(
                            a.map(|p| (p.uid, p.ecn)),
                            b.map(|p| (p.uid, p.ecn)),
                            "config {k} nocodel {nocodel} step {uid}"
                        );
                    }
                    let drops = |o: &mut QdiscOut| {
                        o.drops
                            .drain(..)
                            .map(|(p, why)| (p.uid, why))
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(drops(&mut of), drops(&mut og));
                    assert_eq!(fast.stats, general.stats);
                    assert_eq!(fast.cstats, general.cstats);
                    assert_eq!(fast.cvars, general.cvars);
                    assert_eq!(fast.sched.lists(), general.sched.lists());
                }
                assert!(fast.cstats.drops + fast.cstats.ecn_marks > 0 || nocodel);
            }
        }
    }

    #[test]
    fn defaults_match_linux_and_nocodel_target() {
        #[derive(Deserialize)]
        struct T {
            q: QdiscConfig,
        }
        let c = ctx(10_000_000);
        let t: T = toml::from_str("q = { kind = \"fq_codel\" }").unwrap();
        let QdiscConfig::FqCodel(cfg) = &t.q else {
            panic!()
        };
        let q = FqCodel::new(cfg, c.clone());
        assert_eq!(q.params().target, SimDuration::from_millis(5));
        assert!(q.params().ecn);
        assert_eq!(q.scheduler().quantum(), 1514);
        assert_eq!(q.scheduler().flows.len(), 1024);
        assert_eq!(
            (q.limit, q.memory_limit, q.drop_batch),
            (10240, 32 << 20, 64)
        );
        let t: T = toml::from_str("q = { kind = \"fq_nocodel\", limit = 127 }").unwrap();
        let QdiscConfig::FqNoCodel(cfg) = &t.q else {
            panic!()
        };
        let q = FqCodel::new(cfg, c.clone());
        assert_eq!(q.params().target, SimDuration::from_secs(100));
        assert_eq!(q.limit, 127);
        for bad in [
            "quantum = 100",
            "flows = 0",
            "drop_batch = 0",
            "limit = 0",
            "target = \"0s\"",
            "memory_limit = \"4GiB\"",
        ] {
            let t: T = toml::from_str(&format!("q = {{ kind = \"fq_codel\", {bad} }}")).unwrap();
            let e = t.q.validate(&c).unwrap_err();
            assert!(bad.starts_with(e.field), "{bad}: {e:?}");
        }
    }

    #[test]
    fn sparse_flow_is_served_before_backlogged_flows() {
        let mut q = FqCodel::new(&FqCodelConfig::default(), ctx(10_000_000));
        let f = distinct_flows(&q, 3);
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        // Two bulk flows with 20 full-size packets each.
        for i in 0..20 {
            q.enqueue(pkt(f[0], 1500, i, t), t, &mut out);
            q.enqueue(pkt(f[1], 1500, 100 + i, t), t, &mut out);
        }
        // Run the round robin for a while: both bulk flows end up on the old list.
        let mut sent = vec![];
        for _ in 0..6 {
            sent.push(q.dequeue(t, &mut out).unwrap().flow);
        }
        assert_eq!(sent, vec![f[0], f[1], f[0], f[1], f[0], f[1]]);
        assert_eq!((q.scheduler().new_len(), q.scheduler().old_len()), (0, 2));
        // A ping arrives: it is the very next packet out, ahead of 28 queued bulk packets.
        q.enqueue(pkt(f[2], 84, 999, t), t, &mut out);
        assert_eq!(q.scheduler().new_len(), 1);
        assert_eq!(q.dequeue(t, &mut out).unwrap().uid, 999);
        // Its empty bucket then moves to the old list (old is non-empty) and leaves it
        // when visited empty: the round robin resumes with the bulk flows.
        let next: Vec<u32> = (0..4)
            .map(|_| q.dequeue(t, &mut out).unwrap().flow)
            .collect();
        assert_eq!(next, vec![f[0], f[1], f[0], f[1]]);
        assert_eq!(q.scheduler().old_len(), 2);
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
    }

    #[test]
    fn overflow_drops_half_the_fattest_flow_from_its_head() {
        let cfg = FqCodelConfig {
            limit: 20,
            ..Default::default()
        };
        let mut q = FqCodel::new(&cfg, ctx(10_000_000));
        let f = distinct_flows(&q, 2);
        let (bulk, sparse) = (f[0], f[1]);
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        for i in 0..19 {
            q.enqueue(pkt(bulk, 1500, i, t), t, &mut out);
        }
        q.enqueue(pkt(sparse, 200, 100, t), t, &mut out);
        assert!(out.drops.is_empty());
        // The 21st packet, of the sparse flow, overflows the limit. The bulk flow holds
        // 19 × 1514 = 28766 frame bytes; Linux drops from its head until ≥ 14383 bytes
        // are gone: 10 packets (9 × 1514 = 13626 < 14383 ≤ 10 × 1514).
        let v = q.enqueue(pkt(sparse, 200, 101, t), t, &mut out);
        assert_eq!(v, Verdict::Enqueued);
        let dropped: Vec<u64> = out.drops.iter().map(|d| d.0.uid).collect();
        assert_eq!(dropped, (0..10).collect::<Vec<_>>());
        assert!(out.drops.iter().all(|d| d.1 == DropReason::FatFlow));
        assert_eq!(q.len(), 11);
        // CoDel's count of the bulk bucket is raised by the number dropped.
        assert_eq!(q.flow_vars(q.bucket_of(&pkt(bulk, 1, 0, t))).count, 10);
        assert_eq!(q.flow_vars(q.bucket_of(&pkt(sparse, 1, 0, t))).count, 0);
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
        // drop_batch = 1 drops a single packet per overflow.
        let cfg = FqCodelConfig {
            limit: 20,
            drop_batch: 1,
            ..Default::default()
        };
        let mut q = FqCodel::new(&cfg, ctx(10_000_000));
        out.drops.clear();
        for i in 0..21 {
            q.enqueue(pkt(bulk, 1500, i, t), t, &mut out);
        }
        assert_eq!(out.drops.len(), 1);
        assert_eq!(out.drops[0].0.uid, 0);
    }

    #[test]
    fn memory_limit_drops_with_memory_reason() {
        let cfg = FqCodelConfig {
            memory_limit: SizeSpec(10 * 1514),
            ..Default::default()
        };
        let mut q = FqCodel::new(&cfg, ctx(10_000_000));
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        for i in 0..11 {
            q.enqueue(pkt(1, 1500, i, t), t, &mut out);
        }
        assert!(!out.drops.is_empty());
        assert!(out.drops.iter().all(|d| d.1 == DropReason::Memory));
        assert!(q.sched.frame_backlog() <= 10 * 1514);
    }

    #[test]
    fn drr_gives_equal_frame_bytes_to_unequal_packet_sizes() {
        let mut q = FqCodel::new(
            &FqCodelConfig {
                target: Some(DurationSpec(SimDuration::from_secs(100))),
                ..Default::default()
            },
            ctx(10_000_000),
        );
        let f = distinct_flows(&q, 2);
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        for i in 0..300 {
            q.enqueue(pkt(f[0], 1500, i, t), t, &mut out);
        }
        for i in 0..900 {
            q.enqueue(pkt(f[1], 500, 1000 + i, t), t, &mut out);
        }
        let mut bytes = [0u64; 2];
        for _ in 0..400 {
            let p = q.dequeue(t, &mut out).unwrap();
            bytes[(p.flow == f[1]) as usize] += p.size as u64 + 14;
        }
        let diff = bytes[0].abs_diff(bytes[1]);
        assert!(diff <= 1514, "{bytes:?}");
    }

    /// The "one MTU left" rule: Linux checks the whole qdisc's backlog, ns-3's
    /// `FqCoDelQueueDisc` each flow's own. Flow A (12 packets) and flow B (60) queued at
    /// 0, one packet leaves every 10 ms: A's CoDel is in drop state when A runs dry.
    #[test]
    fn backlog_rule_linux_whole_qdisc_ns3_per_flow() {
        const NA: u64 = 30;
        const NB: u64 = 100;
        let run = |rule: BacklogRule| {
            let c = FqCodelConfig {
                ecn: false,
                backlog_rule: rule,
                ..Default::default()
            };
            let mut q = FqCodel::new(&c, ctx(10_000_000));
            let f = distinct_flows(&q, 2);
            let mut out = QdiscOut::new(false);
            for i in 0..NB {
                if i < NA {
                    q.enqueue(pkt(f[0], 1500, i, SimTime::ZERO), SimTime::ZERO, &mut out);
                }
                q.enqueue(
                    pkt(f[1], 1500, 100 + i, SimTime::ZERO),
                    SimTime::ZERO,
                    &mut out,
                );
            }
            let mut sent = vec![];
            let mut step = 1;
            while let Some(p) = q.dequeue(SimTime::from_nanos(step * 10 * MS), &mut out) {
                if p.flow == f[0] {
                    sent.push(p.uid);
                }
                step += 1;
            }
            let dropped: Vec<u64> = out
                .drops
                .iter()
                .filter(|d| d.0.flow == f[0])
                .map(|d| d.0.uid)
                .collect();
            q.stats().check(0, 0).unwrap();
            (sent, dropped)
        };
        let (ls, ld) = run(BacklogRule::Linux);
        let (ns, nd) = run(BacklogRule::Ns3);
        // A is served at 10, 30, 50, ... ms; its head has waited > 5 ms since 10 ms, so
        // CoDel drops from 130 ms on (first_above 110 ms), then at interval/√count.
        // While A still holds a full packet after its head leaves, both rules agree.
        assert_eq!(&ld[..6], &[6, 12, 16, 20, 23, 26]);
        assert_eq!(nd, vec![6, 12, 16, 20, 23, 26]);
        // A's last packet: when it leaves, A is empty but B still fills the qdisc.
        // Linux (whole qdisc > one MTU) drops it; ns-3 (A < MinBytes) keeps it.
        assert_eq!(ld.len(), 7);
        assert_eq!(ld[6], 29);
        assert_eq!((ns.last(), ls.last()), (Some(&29), Some(&28)));
        assert_eq!(ls.len() + ld.len(), 30);
        assert_eq!(ns.len() + nd.len(), 30);
    }

    #[test]
    fn codel_acts_per_flow_and_marks_ect_by_default() {
        // A 10 Mbit/s link, an ECT bulk flow at 2× the rate and a sparse flow: the bulk
        // flow's packets get CE marks, the sparse flow's never do.
        let mut q = FqCodel::new(&FqCodelConfig::default(), ctx(10_000_000));
        let f = distinct_flows(&q, 2);
        let mut out = QdiscOut::new(true);
        let tx = 1_211_200u64; // 1514 B at 10 Mbit/s
        let mut next_tx = 0u64;
        let mut marked = [0u32; 2];
        let mut uid = 0;
        for step in 0..4000u64 {
            let now_ns = step * tx / 2;
            let now = SimTime::from_nanos(now_ns);
            let mut p = pkt(f[0], 1500, uid, now);
            p.ecn = Ecn::Ect0;
            uid += 1;
            q.enqueue(p, now, &mut out);
            if step % 100 == 0 {
                let mut s = pkt(f[1], 100, uid, now);
                s.ecn = Ecn::Ect0;
                uid += 1;
                q.enqueue(s, now, &mut out);
            }
            while next_tx <= now_ns {
                if let Some(p) = q.dequeue(SimTime::from_nanos(next_tx), &mut out) {
                    if p.ecn == Ecn::Ce {
                        marked[(p.flow == f[1]) as usize] += 1;
                    }
                }
                next_tx += tx;
            }
        }
        assert!(marked[0] > 20, "{marked:?}");
        assert_eq!(marked[1], 0);
        assert!(out.drops.iter().all(|d| d.1 != DropReason::Codel));
        assert!(q.codel_stats().ecn_marks as u32 >= marked[0]);
        // Traces: active flows never exceed the two buckets in use.
        assert!(out
            .trace
            .iter()
            .filter(|t| t.var == 0)
            .all(|t| t.value <= 2.0));
        assert!(!out.trace.is_empty());
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
        let _ = MS;
    }
}
