//! `fq_pie`: flow queueing with PIE per flow (Linux `sch_fq_pie`, 5.6+).
//!
//! Thin glue, as in the kernel: the new/old-list deficit round robin of
//! [`FqScheduler`](super::flow_sched::FqScheduler) (shared with `fq_codel`) over
//! hash buckets, each bucket with its own [`PieVars`], all sharing one [`PieParams`] of
//! today's Linux PIE (`variant = "linux"` of [`super::pie_core`], shared with `pie`).
//!
//! ## What happens where (as in `sch_fq_pie.c`)
//! - **Enqueue.** The arriving packet is classified; if the qdisc already holds `limit`
//!   packets it is dropped (`overlimit`). Otherwise its flow's PIE decides with the
//!   flow's own probability and the flow's own backlog (so the "fewer than two MTUs
//!   queued" safeguard is per flow): enqueue, CE-mark (ECN on, ECN-capable packet, flow
//!   p ≤ `ecn_prob`) or drop (`early`). Every drop of an arriving packet restarts the
//!   flow's de-randomisation accumulator. There is no fat-flow drop and no drop at
//!   dequeue: all losses happen at enqueue, to the arriving packet.
//! - **Dequeue.** DRR over the new/old lists; the dequeued packet feeds its flow's delay
//!   estimator (per-packet sojourn by default, or the departure rate with
//!   `dq_rate_estimator`) and burst allowance.
//! - **Update.** Every `tupdate` (first one 500 ms after creation, Linux `HZ/2`) every
//!   flow's probability is recomputed from its own delay estimate and backlog.
//! - **Memory limit.** Linux only counts arrivals that find the memory above
//!   `memory_limit` (`overmemory`); it does not drop for it. Same here
//!   ([`FqPie::overmemory`]), with memory charged as the frame length (Linux: `truesize`).
//!
//! All byte quantities the PIE law sees are frame bytes (`size + overhead`), and its MTU
//! is `mtu + overhead`, as Linux's `qdisc_pkt_len` and `psched_mtu` are (so the two-MTU
//! safeguard is 2 × 1514 B on Ethernet).
//!
//! ## The update timer without a timer
//! The core never schedules events: due ticks run lazily before each packet (see
//! [`UpdateTimer`]). An update is a pure function of a flow's (state, backlog), and
//! neither changes between packets, so running a tick late changes nothing. Updating
//! all 1024 flows per tick would cost ~70 k updates per simulated second even when two
//! flows are busy, so only *awake* flows are updated: a flow wakes when a packet arrives
//! for it and sleeps once it is empty and an update left its state unchanged. A sleeping
//! flow's state is then a fixed point of the update with backlog 0 (which forces p = 0),
//! so skipping it gives exactly what the kernel's full sweep gives; a test checks this
//! against an exhaustive sweep.
//!
//! ## Deviations from the kernel
//! - Linux's timer visits at most 2048 flows per run and re-fires at once for the rest,
//!   so with more than 2048 buckets a sweep spans a few jiffies; here every flow is
//!   updated at the tick. Ticks fall on exact multiples of `tupdate`, not on jiffies.
//! - Memory is charged as the frame length, not `skb->truesize` (see above).
//! - No tc filters or `skb->priority` classification: packets are always hashed.
//!
//! Behaviour worth knowing (Linux's, reproduced): with no update for 500 ms and a
//! 150 ms burst allowance, an unresponsive overload builds a long queue before PIE
//! reacts; p then winds up past 1 (no clamp in the kernel's 56-bit form) and the flow is
//! held at the two-MTU floor until p unwinds at about −0.1 per second, after which its
//! queueing delay settles on the target (`tests/fq_pie_cbr.rs` measures both phases).
//!
//! Trace variables (`run.trace = true`): `active_flows`, `new_flows`, `old_flows`
//! (recorded on change at every packet), `mean_p` (mean p of the flows holding packets)
//! and `max_p` (largest p of any flow), recorded on change at each update tick.

use super::codel_core::BacklogRule;
use super::flow_sched::FqScheduler;
use super::pie::PieConfig;
use super::pie_core::{EarlyVerdict, Estimator, PieParams, PieVariant, PieVars, UpdateTimer};
use super::{
    BuildCtx, DropReason, MarkReason, ParamDoc, ParamError, Qdisc, QdiscOut, QdiscStats, Verdict,
};
use crate::packet::{Ecn, Packet};
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};
use crate::units::{DurationSpec, Limit, SizeSpec};
use serde::{Deserialize, Serialize};

fn d_limit() -> u32 {
    10 * 1024
}
fn d_flows() -> u32 {
    1024
}
fn d_15ms() -> DurationSpec {
    DurationSpec(SimDuration::from_millis(15))
}
fn d_alpha() -> f64 {
    0.125
}
fn d_beta() -> f64 {
    1.25
}
fn d_memory() -> SizeSpec {
    SizeSpec(32 << 20)
}
fn d_ecn_prob() -> f64 {
    0.1
}

/// `{ kind = "fq_pie", ... }`. Names follow `tc qdisc ... fq_pie`; defaults are the
/// kernel's (`fq_pie_init` and `pie_params_init`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FqPieConfig {
    /// Packet limit of the whole qdisc. Default 10240 (Linux `10 * 1024`).
    #[serde(default = "d_limit")]
    pub limit: u32,
    /// Number of flow buckets. Default 1024 (Linux).
    #[serde(default = "d_flows")]
    pub flows: u32,
    /// Target queueing delay of each flow. Default 15 ms (Linux `pie_params_init`).
    #[serde(default = "d_15ms")]
    pub target: DurationSpec,
    /// Probability update period. Default 15 ms (Linux `pie_params_init`).
    #[serde(default = "d_15ms")]
    pub tupdate: DurationSpec,
    /// Weight of (qdelay − target) in 1/s, a multiple of 1/16 in [0, 2]. Default 0.125
    /// (Linux `alpha 2`, in sixteenths).
    #[serde(default = "d_alpha")]
    pub alpha: f64,
    /// Weight of (qdelay − qdelay_old) in 1/s, a multiple of 1/16 in [0, 2]. Default 1.25
    /// (Linux `beta 20`).
    #[serde(default = "d_beta")]
    pub beta: f64,
    /// DRR quantum in frame bytes. Default MTU + link overhead (Linux `psched_mtu`, 1514).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantum: Option<u32>,
    /// Memory limit (frame bytes here); only counted, never enforced, as in Linux.
    /// Default 32 MiB (Linux `SZ_32M`).
    #[serde(default = "d_memory")]
    pub memory_limit: SizeSpec,
    /// CE-mark ECN-capable packets instead of dropping while the flow's p ≤ `ecn_prob`.
    /// Default false (Linux: "ECN capability is off by default").
    #[serde(default)]
    pub ecn: bool,
    /// Highest flow probability at which packets are marked rather than dropped, as a
    /// fraction. Default 0.1 (Linux `ecn_prob 10`, in percent).
    #[serde(default = "d_ecn_prob")]
    pub ecn_prob: f64,
    /// Scale the drop probability by packet size. Default false (Linux).
    #[serde(default)]
    pub bytemode: bool,
    /// Estimate the queueing delay from the departure rate (Little's law) instead of
    /// per-packet timestamps. Default false (Linux).
    #[serde(default)]
    pub dq_rate_estimator: bool,
    /// What keeps a flow from early drops: "linux" (the flow holds less than two MTUs,
    /// `pie_drop_early`) or "ns3" (the flow holds at most two packets, ns-3's
    /// `PieQueueDisc::DropEarly` in packet mode, as its `FqPieQueueDisc` children run).
    /// Default linux.
    #[serde(default)]
    pub backlog_rule: BacklogRule,
}

impl Default for FqPieConfig {
    fn default() -> Self {
        FqPieConfig {
            limit: d_limit(),
            flows: d_flows(),
            target: d_15ms(),
            tupdate: d_15ms(),
            alpha: d_alpha(),
            beta: d_beta(),
            quantum: None,
            memory_limit: d_memory(),
            ecn: false,
            ecn_prob: d_ecn_prob(),
            bytemode: false,
            dq_rate_estimator: false,
            backlog_rule: BacklogRule::Linux,
        }
    }
}

impl FqPieConfig {
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc { name: "limit", default: "10240", doc: "packet limit of the whole qdisc (Linux fq_pie 10*1024); a full qdisc drops the arriving packet" },
        ParamDoc { name: "flows", default: "1024", doc: "number of hash buckets, 1 to 65536 (Linux fq_pie)" },
        ParamDoc { name: "target", default: "15ms", doc: "target queueing delay of each flow's PIE (Linux include/net/pie.h pie_params_init)" },
        ParamDoc { name: "tupdate", default: "15ms", doc: "period of the per-flow probability update (Linux pie_params_init); the first update is 500 ms after creation (Linux HZ/2)" },
        ParamDoc { name: "alpha", default: "0.125", doc: "weight of (qdelay - target) in 1/s, a multiple of 1/16 in [0, 2] (tc alpha 2 = 2/16)" },
        ParamDoc { name: "beta", default: "1.25", doc: "weight of (qdelay - qdelay_old) in 1/s, a multiple of 1/16 in [0, 2] (tc beta 20 = 20/16)" },
        ParamDoc { name: "quantum", default: "MTU + overhead", doc: "DRR quantum in frame bytes, 1 to 1048576 (Linux psched_mtu: 1514 on Ethernet)" },
        ParamDoc { name: "memory_limit", default: "32MiB", doc: "memory limit (Linux SZ_32M); as in Linux only counted (overmemory), never enforced; charged as the frame length (Linux: skb truesize)" },
        ParamDoc { name: "ecn", default: "false", doc: "CE-mark ECN-capable packets instead of dropping while the flow's p <= ecn_prob (off by default in Linux fq_pie)" },
        ParamDoc { name: "ecn_prob", default: "0.1", doc: "highest flow drop probability at which packets are marked, as a fraction (tc ecn_prob 10 is in percent)" },
        ParamDoc { name: "bytemode", default: "false", doc: "scale the drop probability by packet size relative to the MTU (Linux)" },
        ParamDoc { name: "dq_rate_estimator", default: "false", doc: "delay from the measured departure rate (Little's law, 16 KB cycles) instead of per-packet timestamps (Linux)" },
        ParamDoc { name: "backlog_rule", default: "linux", doc: "what keeps a flow from early drops: linux (it holds less than two MTUs, pie_drop_early) or ns3 (it holds at most two packets, ns-3 FqPieQueueDisc's PieQueueDisc children)" },
    ];

    /// Checks the fq_pie fields, then resolves the PIE parameters through `pie`'s checks
    /// (so `target`, `tupdate`, `alpha` and `beta` get the same errors as in `pie`).
    pub fn resolve(&self, ctx: &BuildCtx) -> Result<PieParams, ParamError> {
        if self.limit == 0 {
            return Err(ParamError::new("limit", 0, "a packet count of at least 1"));
        }
        if self.flows == 0 || self.flows > 65536 {
            return Err(ParamError::new("flows", self.flows, "1 to 65536 (Linux)"));
        }
        if let Some(q) = self.quantum {
            if q == 0 || q > 1 << 20 {
                return Err(ParamError::new("quantum", q, "1 to 1048576 bytes (Linux)"));
            }
        }
        if self.memory_limit.0 == 0 || self.memory_limit.0 > u32::MAX as u64 {
            return Err(ParamError::new(
                "memory_limit",
                format!("{}B", self.memory_limit.0),
                "1 byte to 4 GiB - 1 (a u32 in Linux)",
            ));
        }
        if !(self.ecn_prob > 0.0 && self.ecn_prob <= 1.0) {
            return Err(ParamError::new(
                "ecn_prob",
                self.ecn_prob,
                "a fraction more than 0 and at most 1 (tc's ecn_prob 10, in percent, is 0.1)",
            ));
        }
        let pie = PieConfig {
            variant: PieVariant::Linux,
            target: Some(self.target),
            tupdate: Some(self.tupdate),
            limit: Some(Limit::Packets(self.limit)),
            alpha: Some(self.alpha),
            beta: Some(self.beta),
            max_burst: None,
            ecn: self.ecn,
            ecn_prob: Some(self.ecn_prob),
            bytemode: Some(self.bytemode),
            estimator: Some(if self.dq_rate_estimator {
                Estimator::DqRate
            } else {
                Estimator::Timestamp
            }),
            dq_threshold: None,
            mean_pktsize: None,
            derandomize: None,
        };
        let mut params = pie.resolve(ctx)?;
        // Linux's psched_mtu includes the link header, and so do the backlog and the
        // packet sizes fq_pie hands to PIE.
        params.mtu = ctx.mtu + ctx.overhead;
        // ns-3's children spare a flow holding at most two packets (`qSize <= 2`)
        params.spare_pkts = (self.backlog_rule == BacklogRule::Ns3).then_some(2);
        Ok(params)
    }

    pub fn validate(&self, ctx: &BuildCtx) -> Result<(), ParamError> {
        self.resolve(ctx).map(|_| ())
    }
}

/// Names of the traced variables (index = `TracePoint::var`).
pub const FQ_PIE_TRACE_VARS: &[&str] =
    &["active_flows", "new_flows", "old_flows", "mean_p", "max_p"];

/// The fq_pie qdisc.
#[derive(Debug)]
pub struct FqPie {
    sched: FqScheduler,
    vars: Vec<PieVars>,
    params: PieParams,
    timer: UpdateTimer,
    /// Flows whose PIE state an update may still change (see the module doc).
    awake: Vec<u32>,
    is_awake: Vec<bool>,
    /// Test hook: update every flow at every tick, like the kernel's sweep.
    sweep_all: bool,
    limit: u32,
    memory_limit: u64,
    overmemory: u64,
    stats: QdiscStats,
    rng: Rng,
    /// Last traced values.
    traced: [f64; 5],
}

impl FqPie {
    /// Panics on parameters that `FqPieConfig::validate` rejects.
    pub fn new(cfg: &FqPieConfig, mut ctx: BuildCtx) -> Self {
        let params = cfg
            .resolve(&ctx)
            .unwrap_or_else(|e| panic!("invalid fq_pie parameters (validate first): {e:?}"));
        let quantum = cfg.quantum.unwrap_or(ctx.mtu + ctx.overhead);
        // Linux hashes with a boot-time random key; ours comes from the qdisc's stream.
        let salt = ctx.rng.next_u32();
        let cap = (cfg.limit as usize + 1).min(4096);
        FqPie {
            sched: FqScheduler::new(cfg.flows, quantum, ctx.overhead, salt, cap),
            vars: vec![params.new_vars(); cfg.flows as usize],
            timer: UpdateTimer::new(SimTime::ZERO + params.first_update(), params.tupdate),
            params,
            awake: Vec::with_capacity(64),
            is_awake: vec![false; cfg.flows as usize],
            sweep_all: false,
            limit: cfg.limit,
            memory_limit: cfg.memory_limit.0,
            overmemory: 0,
            stats: QdiscStats::default(),
            rng: ctx.rng,
            traced: [f64::NAN; 5],
        }
    }

    pub fn params(&self) -> &PieParams {
        &self.params
    }
    pub fn scheduler(&self) -> &FqScheduler {
        &self.sched
    }
    /// PIE state of bucket `idx`.
    pub fn flow_vars(&self, idx: usize) -> &PieVars {
        &self.vars[idx]
    }
    /// The bucket a packet hashes to.
    pub fn bucket_of(&self, pkt: &Packet) -> usize {
        self.sched.classify(pkt)
    }
    /// Arrivals that found the memory above `memory_limit` (Linux `overmemory`).
    pub fn overmemory(&self) -> u64 {
        self.overmemory
    }
    /// Flows currently updated at each tick (holding packets or not yet settled).
    pub fn awake_flows(&self) -> usize {
        self.awake.len()
    }

    #[inline]
    fn wake(&mut self, idx: usize) {
        if !self.is_awake[idx] {
            self.is_awake[idx] = true;
            self.awake.push(idx as u32);
        }
    }

    /// Runs the `tupdate` ticks due by `now`: an inline test, as most packets find none
    /// due (a call with the loop's frame cost more than the test).
    #[inline(always)]
    fn run_updates(&mut self, now: SimTime, out: &mut QdiscOut) {
        if self.timer.is_due(now) {
            self.run_due_updates(now, out);
        }
    }

    /// Runs every `tupdate` tick due by `now` (Linux `fq_pie_timer`).
    #[inline(never)]
    fn run_due_updates(&mut self, now: SimTime, out: &mut QdiscOut) {
        let overhead = self.sched.overhead();
        while let Some(t) = self.timer.due(now) {
            let mut changed = false;
            if self.sweep_all {
                for (idx, v) in self.vars.iter_mut().enumerate() {
                    let before = *v;
                    self.params
                        .update(v, self.sched.flows[idx].q.frame_bytes(overhead));
                    changed |= *v != before;
                }
            } else {
                let mut i = 0;
                while i < self.awake.len() {
                    let idx = self.awake[i] as usize;
                    let backlog = self.sched.flows[idx].q.frame_bytes(overhead);
                    let before = self.vars[idx];
                    self.params.update(&mut self.vars[idx], backlog);
                    let same = self.vars[idx] == before;
                    changed |= !same;
                    if same && backlog == 0 {
                        // A fixed point with nothing queued: asleep until its next arrival.
                        self.is_awake[idx] = false;
                        self.awake.swap_remove(i);
                    } else {
                        i += 1;
                    }
                }
            }
            if out.tracing {
                self.trace_p(t, out);
            }
            if !changed {
                // Nothing changes before the next packet: the remaining ticks are no-ops.
                self.timer.skip_through(now);
                break;
            }
        }
    }

    fn trace_p(&mut self, t: SimTime, out: &mut QdiscOut) {
        let (mut sum, mut n, mut max) = (0.0, 0u32, 0.0f64);
        let mut visit = |idx: usize| {
            let p = self.vars[idx].prob;
            max = max.max(p);
            if !self.sched.flows[idx].q.is_empty() {
                sum += p;
                n += 1;
            }
        };
        if self.sweep_all {
            (0..self.vars.len()).for_each(&mut visit);
        } else {
            // Sleeping flows have p = 0, so the awake ones decide both values.
            self.awake.iter().for_each(|&i| visit(i as usize));
        }
        let mean = if n > 0 { sum / n as f64 } else { 0.0 };
        for (i, x) in [(3usize, mean), (4, max)] {
            if self.traced[i] != x {
                self.traced[i] = x;
                out.trace(t, i as u8, x);
            }
        }
    }

    fn trace_lists(&mut self, now: SimTime, out: &mut QdiscOut) {
        let (n, o) = (self.sched.new_len() as f64, self.sched.old_len() as f64);
        for (i, x) in [n + o, n, o].into_iter().enumerate() {
            if self.traced[i] != x {
                self.traced[i] = x;
                out.trace(now, i as u8, x);
            }
        }
    }
}

impl Qdisc for FqPie {
    fn enqueue(&mut self, mut pkt: Packet, now: SimTime, out: &mut QdiscOut) -> Verdict {
        self.run_updates(now, out);
        let idx = self.sched.classify(&pkt);
        self.wake(idx);
        let overhead = self.sched.overhead();
        let frame = pkt.size + overhead;
        let verdict = if self.sched.len() >= self.limit {
            self.params.on_drop(&mut self.vars[idx]);
            out.drop_arrival(&mut self.stats, pkt, DropReason::Overlimit)
        } else {
            // Linux: `memory_usage > memory_limit + truesize` is counted, not enforced.
            if self.sched.frame_backlog() > self.memory_limit + frame as u64 {
                self.overmemory += 1;
            }
            let q = &self.sched.flows[idx].q;
            let (backlog, pkts) = (q.frame_bytes(overhead), q.len());
            let v = &mut self.vars[idx];
            match self
                .params
                .drop_early(v, backlog, pkts, frame, &mut self.rng)
            {
                EarlyVerdict::Enqueue => {
                    self.stats.on_enqueue(&pkt);
                    self.sched.enqueue(idx, pkt);
                    Verdict::Enqueued
                }
                EarlyVerdict::MarkOrDrop if self.params.may_mark(v) && pkt.ecn.is_capable() => {
                    pkt.ecn = Ecn::Ce;
                    self.stats.on_mark(MarkReason::Early);
                    self.stats.on_enqueue(&pkt);
                    self.sched.enqueue(idx, pkt);
                    Verdict::Marked(MarkReason::Early)
                }
                EarlyVerdict::MarkOrDrop => {
                    self.params.on_drop(v);
                    out.drop_arrival(&mut self.stats, pkt, DropReason::Early)
                }
            }
        };
        if out.tracing {
            self.trace_lists(now, out);
        }
        verdict
    }

    fn dequeue(&mut self, now: SimTime, out: &mut QdiscOut) -> Option<Packet> {
        self.run_updates(now, out);
        let overhead = self.sched.overhead();
        let res = loop {
            let Some((idx, from_new)) = self.sched.next_flow() else {
                break None;
            };
            let Some(p) = self.sched.pop(idx) else {
                self.sched.flow_empty(idx, from_new);
                continue;
            };
            let frame = p.size + overhead;
            self.sched.charge(idx, frame);
            self.stats.on_dequeue(&p);
            // A flow holding packets is always awake (it woke at the arrival and sleeps
            // only when empty), so its state changes below are seen by the next update.
            debug_assert!(self.is_awake[idx] || self.sweep_all);
            let backlog = self.sched.flows[idx].q.frame_bytes(overhead);
            self.params.on_dequeue(
                &mut self.vars[idx],
                frame,
                now.saturating_since(p.enqueued_at),
                backlog,
                now,
            );
            break Some(p);
        };
        if out.tracing {
            self.trace_lists(now, out);
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
        FQ_PIE_TRACE_VARS
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{ctx, pkt};
    use super::super::QdiscConfig;
    use super::*;
    use crate::packet::Ecn;

    fn ms(x: u64) -> SimDuration {
        SimDuration::from_millis(x)
    }

    fn build(body: &str) -> FqPie {
        let cfg: FqPieConfig = toml::from_str(body).unwrap();
        cfg.validate(&ctx(10_000_000)).unwrap();
        FqPie::new(&cfg, ctx(10_000_000))
    }

    /// Finds `n` flow ids that hash to distinct buckets of `q`.
    fn distinct_flows(q: &FqPie, n: usize) -> Vec<u32> {
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

    /// 1514 frame bytes at 10 Mbit/s, in ns.
    const TX: u64 = 1_211_200;

    #[test]
    fn defaults_match_linux_and_bad_values_name_the_field() {
        #[derive(Deserialize)]
        struct T {
            q: QdiscConfig,
        }
        let c = ctx(10_000_000);
        let t: T = toml::from_str("q = { kind = \"fq_pie\" }").unwrap();
        let QdiscConfig::FqPie(cfg) = &t.q else {
            panic!()
        };
        let q = FqPie::new(cfg, c.clone());
        let p = q.params();
        assert_eq!(p.variant, PieVariant::Linux);
        assert_eq!(
            (p.target, p.tupdate, p.max_burst),
            (ms(15), ms(15), ms(150))
        );
        assert_eq!((p.alpha, p.beta), (0.125, 1.25));
        assert_eq!((p.ecn, p.ecn_prob, p.bytemode), (false, 0.1, false));
        assert_eq!(p.estimator, Estimator::Timestamp);
        assert_eq!(p.first_update(), ms(500));
        assert_eq!(p.mtu, 1514, "psched_mtu includes the link header");
        assert_eq!(q.scheduler().quantum(), 1514);
        assert_eq!(q.scheduler().flows.len(), 1024);
        assert_eq!((q.limit, q.memory_limit), (10240, 32 << 20));
        assert_eq!(q.trace_vars(), FQ_PIE_TRACE_VARS);
        let q = build("ecn = true\ndq_rate_estimator = true\nbytemode = true\nquantum = 300");
        assert_eq!(q.params().estimator, Estimator::DqRate);
        assert!(q.params().ecn && q.params().bytemode);
        assert_eq!(q.scheduler().quantum(), 300);
        for bad in [
            "limit = 0",
            "flows = 0",
            "flows = 65537",
            "quantum = 0",
            "memory_limit = \"5GiB\"",
            "ecn_prob = 10",
            "ecn_prob = 0",
            "target = \"0s\"",
            "tupdate = \"1us\"",
            "alpha = 0.1",
            "beta = 3",
        ] {
            let t: T = toml::from_str(&format!("q = {{ kind = \"fq_pie\", {bad} }}")).unwrap();
            let e = t.q.validate(&c).unwrap_err();
            assert!(bad.starts_with(e.field), "{bad}: {e:?}");
        }
        assert!(toml::from_str::<T>("q = { kind = \"fq_pie\", max_burst = \"1ms\" }").is_err());
    }

    #[test]
    fn sparse_flow_is_served_before_backlogged_flows() {
        let mut q = build("");
        let f = distinct_flows(&q, 3);
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        for i in 0..20 {
            q.enqueue(pkt(f[0], 1500, i, t), t, &mut out);
            q.enqueue(pkt(f[1], 1500, 100 + i, t), t, &mut out);
        }
        let sent: Vec<u32> = (0..6)
            .map(|_| q.dequeue(t, &mut out).unwrap().flow)
            .collect();
        assert_eq!(sent, vec![f[0], f[1], f[0], f[1], f[0], f[1]]);
        assert_eq!((q.scheduler().new_len(), q.scheduler().old_len()), (0, 2));
        // A ping arrives behind 34 queued bulk packets: it is the very next one out.
        q.enqueue(pkt(f[2], 84, 999, t), t, &mut out);
        assert_eq!(q.scheduler().new_len(), 1);
        assert_eq!(q.dequeue(t, &mut out).unwrap().uid, 999);
        let next: Vec<u32> = (0..4)
            .map(|_| q.dequeue(t, &mut out).unwrap().flow)
            .collect();
        assert_eq!(next, vec![f[0], f[1], f[0], f[1]]);
        assert!(out.drops.is_empty());
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
    }

    /// The first update (500 ms after creation) raises p of the flow whose head packet
    /// waited, by the Linux formula with the auto-tuning of p < 1e-6 (alpha and beta
    /// scaled by 2^-15 relative to their tc values in 1/16), and leaves p = 0 for a flow
    /// that holds a packet but has no delay measurement yet.
    #[test]
    fn per_flow_probability_follows_the_flows_own_delay() {
        let mut q = build("");
        let f = distinct_flows(&q, 2);
        let (fat, thin) = (f[0], f[1]);
        let (bf, bt) = (
            q.bucket_of(&pkt(fat, 1, 0, SimTime::ZERO)),
            q.bucket_of(&pkt(thin, 1, 0, SimTime::ZERO)),
        );
        let mut out = QdiscOut::new(false);
        let t0 = SimTime::ZERO;
        for i in 0..20 {
            q.enqueue(pkt(fat, 1500, i, t0), t0, &mut out);
        }
        q.enqueue(pkt(thin, 1500, 100, t0), t0, &mut out);
        // At 100 ms the fat flow's head leaves after waiting 100 ms; 19 packets remain.
        let t1 = SimTime::ZERO + ms(100);
        assert_eq!(q.dequeue(t1, &mut out).unwrap().flow, fat);
        assert_eq!(q.flow_vars(bf).qdelay, ms(100));
        // Its burst allowance runs from its own first dequeue on: not consumed yet.
        assert_eq!(q.flow_vars(bf).burst_allowance, ms(150));
        // Nothing is updated before 500 ms.
        q.dequeue(SimTime::ZERO + ms(499), &mut out); // the thin flow's packet (new list)
        assert_eq!(q.flow_vars(bf).prob, 0.0);
        let thin_vars = *q.flow_vars(bt);
        assert_eq!(thin_vars.qdelay, SimDuration::ZERO, "its queue emptied");
        // First update at 500 ms, triggered by the next call.
        q.enqueue(
            pkt(thin, 1500, 101, SimTime::ZERO + ms(500)),
            SimTime::ZERO + ms(500),
            &mut out,
        );
        let want = (2.0 * (0.100 - 0.015) + 20.0 * (0.100 - 0.0)) / 32768.0;
        let p1 = q.flow_vars(bf).prob;
        assert!((p1 - want).abs() < 1e-6 * want, "{p1} vs {want}");
        assert_eq!(q.flow_vars(bf).qdelay_old, ms(100));
        assert_eq!(q.flow_vars(bt).prob, 0.0);
        // Second update: qdelay unchanged (no dequeue), so only the alpha term acts, with
        // p now in [1e-5, 1e-4): shift 4 + 1 + 2·3 = 11.
        q.enqueue(
            pkt(thin, 1500, 102, SimTime::ZERO + ms(515)),
            SimTime::ZERO + ms(515),
            &mut out,
        );
        let want2 = p1 + 2.0 * (0.100 - 0.015) / 2048.0;
        let p2 = q.flow_vars(bf).prob;
        assert!((p2 - want2).abs() < 1e-6 * want2, "{p2} vs {want2}");
        assert_eq!(q.flow_vars(bt).prob, 0.0);
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
    }

    /// Drives a qdisc like a 10 Mbit/s link (a dequeue opportunity every 1514-byte frame
    /// time) fed by CBR sources `(flow, size, gap_ns, ect)`, checking the stats identities
    /// and the limit after every call. Per source: sent, dropped, marked, dequeued, sum
    /// and max of the sojourn (ns).
    struct Driver {
        sources: Vec<(u32, u32, u64, bool)>,
        next: Vec<u64>,
        t_out: u64,
        uid: u64,
        res: Vec<[u64; 6]>,
        peak: usize,
    }

    impl Driver {
        fn new(sources: &[(u32, u32, u64, bool)]) -> Self {
            Driver {
                sources: sources.to_vec(),
                next: vec![0; sources.len()],
                t_out: TX,
                uid: 0,
                res: vec![[0; 6]; sources.len()],
                peak: 0,
            }
        }

        fn run_until(&mut self, q: &mut impl Qdisc, limit: usize, end_ns: u64, out: &mut QdiscOut) {
            loop {
                let (k, t_in) = self
                    .next
                    .iter()
                    .copied()
                    .enumerate()
                    .min_by_key(|&(_, t)| t)
                    .unwrap();
                if t_in.min(self.t_out) >= end_ns {
                    return;
                }
                if t_in <= self.t_out {
                    let now = SimTime::from_nanos(t_in);
                    let (flow, size, gap, ect) = self.sources[k];
                    let mut p = pkt(flow, size, self.uid, now);
                    if ect {
                        p.ecn = Ecn::Ect0;
                    }
                    self.uid += 1;
                    self.res[k][0] += 1;
                    match q.enqueue(p, now, out) {
                        Verdict::Dropped(_) => self.res[k][1] += 1,
                        Verdict::Marked(_) => self.res[k][2] += 1,
                        Verdict::Enqueued => {}
                    }
                    self.next[k] += gap;
                } else {
                    let now = SimTime::from_nanos(self.t_out);
                    if let Some(p) = q.dequeue(now, out) {
                        let k = self.sources.iter().position(|s| s.0 == p.flow).unwrap();
                        let soj = now.saturating_since(p.enqueued_at).as_nanos();
                        self.res[k][3] += 1;
                        self.res[k][4] += soj;
                        self.res[k][5] = self.res[k][5].max(soj);
                    }
                    self.t_out += TX;
                }
                self.peak = self.peak.max(q.len());
                assert!(
                    q.len() <= limit,
                    "{} packets over the limit {limit}",
                    q.len()
                );
                q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
            }
        }
    }

    /// A 20 Mbit/s unresponsive flow and a light flow (one packet per 20 ms) share a
    /// 10 Mbit/s link. Only the fat flow's PIE sees delay: its p rises and it takes every
    /// early drop; the light flow keeps p = 0, loses nothing and waits at most about one
    /// frame time (new-flow priority), while the fat flow's sojourn is bounded by PIE,
    /// not by the 10240-packet limit.
    #[test]
    fn an_unresponsive_overload_is_dropped_while_a_light_flow_is_not() {
        let mut q = build("");
        let f = distinct_flows(&q, 2);
        let (fat, light) = (f[0], f[1]);
        let (bf, bl) = (
            q.bucket_of(&pkt(fat, 1, 0, SimTime::ZERO)),
            q.bucket_of(&pkt(light, 1, 0, SimTime::ZERO)),
        );
        let mut out = QdiscOut::new(true);
        let mut d = Driver::new(&[
            (fat, 1500, 600_000, false),
            (light, 1500, 20_000_000, false),
        ]);
        let mut light_p_max = 0.0f64;
        let mut fat_p = vec![];
        for step in 1..=40u64 {
            d.run_until(&mut q, 10240, step * 100_000_000, &mut out);
            light_p_max = light_p_max.max(q.flow_vars(bl).prob);
            fat_p.push(q.flow_vars(bf).prob);
        }
        let [fat_r, light_r] = [d.res[0], d.res[1]];
        // p stays 0 until the first update at 500 ms, then rises for the fat flow only.
        assert!(fat_p[..4].iter().all(|&p| p == 0.0), "{fat_p:?}");
        assert!(fat_p[6] > 0.0 && fat_p[39] > 0.5, "{fat_p:?}");
        assert_eq!(light_p_max, 0.0);
        // About half of the fat flow's 6667 packets go, all as PIE drops.
        assert!(fat_r[1] > 3000, "{fat_r:?}");
        assert_eq!(q.stats().drops[DropReason::Early.index()], fat_r[1]);
        assert_eq!(q.stats().drops[DropReason::Overlimit.index()], 0);
        assert_eq!(light_r[1], 0, "{light_r:?}");
        assert_eq!(light_r[3], light_r[0], "every light packet got through");
        // The light flow waits at most for the frame on the wire (plus one dequeue slot
        // of slack, since arrivals fall between opportunities).
        assert!(light_r[5] <= 2 * TX, "light max sojourn {}", light_r[5]);
        // Without PIE the fat flow's queue would grow by ~825 packets per second; PIE
        // stops it well before the limit.
        assert!(d.peak < 1000, "peak backlog {}", d.peak);
        // Traces: at most two active flows, mean/max p recorded.
        assert!(out
            .trace
            .iter()
            .filter(|t| t.var == 0)
            .all(|t| t.value <= 2.0));
        assert!(out.trace.iter().any(|t| t.var == 4 && t.value > 0.0));
        assert!(out.trace.windows(2).all(|w| w[0].t <= w[1].t));
    }

    /// A full qdisc drops the arriving packet (not one from the fattest flow, unlike
    /// fq_codel), restarts that flow's accumulator, and never holds more than `limit`.
    /// The memory limit is only counted.
    #[test]
    fn a_full_qdisc_drops_the_arrival_and_memory_is_only_counted() {
        let mut q = build("limit = 20\nmemory_limit = \"10KB\"");
        let f = distinct_flows(&q, 2);
        let (bulk, sparse) = (f[0], f[1]);
        let bs = q.bucket_of(&pkt(sparse, 1, 0, SimTime::ZERO));
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        for i in 0..19 {
            q.enqueue(pkt(bulk, 1500, i, t), t, &mut out);
        }
        assert_eq!(
            q.enqueue(pkt(sparse, 200, 100, t), t, &mut out),
            Verdict::Enqueued
        );
        assert!(out.drops.is_empty());
        // Arrivals that found more than 10000 + 1514 frame bytes queued were counted:
        // the 9th bulk packet finds 8 × 1514 = 12112 > 11514, and so do the later ones.
        assert_eq!(q.overmemory(), 19 - 8 + 1);
        q.vars[bs].accu_prob = 0.5;
        let v = q.enqueue(pkt(sparse, 200, 101, t), t, &mut out);
        assert_eq!(v, Verdict::Dropped(DropReason::Overlimit));
        assert_eq!(out.drops.len(), 1);
        assert_eq!(
            out.drops[0].0.uid, 101,
            "the arriving packet is the one dropped"
        );
        assert_eq!(q.flow_vars(bs).accu_prob, 0.0);
        assert_eq!(q.len(), 20);
        assert_eq!(
            q.overmemory(),
            12,
            "a packet dropped for the limit is not counted"
        );
        // One departure makes room for exactly one more.
        q.dequeue(t, &mut out);
        assert_eq!(
            q.enqueue(pkt(bulk, 1500, 102, t), t, &mut out),
            Verdict::Enqueued
        );
        assert_eq!(
            q.enqueue(pkt(bulk, 1500, 103, t), t, &mut out),
            Verdict::Dropped(DropReason::Overlimit)
        );
        assert_eq!(q.stats().drops[DropReason::Memory.index()], 0);
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
    }

    /// With ECN on, an early "drop" of an ECN-capable packet becomes a CE mark while the
    /// flow's own p ≤ ecn_prob; a not-ECT packet is dropped; above ecn_prob ECT packets
    /// are dropped too. Another flow with p = 0 is untouched.
    #[test]
    fn ecn_marks_per_flow_below_ecn_prob() {
        let mut q = build("ecn = true");
        let f = distinct_flows(&q, 2);
        let (a, b) = (f[0], f[1]);
        let ba = q.bucket_of(&pkt(a, 1, 0, SimTime::ZERO));
        let mut out = QdiscOut::new(false);
        let t = SimTime::from_nanos(1_000_000); // before the first update at 500 ms
        for i in 0..4 {
            q.enqueue(pkt(a, 1500, i, t), t, &mut out);
            q.enqueue(pkt(b, 1500, 10 + i, t), t, &mut out);
        }
        let set = |q: &mut FqPie, p: f64| {
            let v = &mut q.vars[ba];
            v.burst_allowance = SimDuration::ZERO;
            v.qdelay = ms(40);
            v.prob = p;
            v.accu_prob = 100.0;
        };
        set(&mut q, 0.05);
        let mut p = pkt(a, 1500, 100, t);
        p.ecn = Ecn::Ect0;
        assert_eq!(
            q.enqueue(p, t, &mut out),
            Verdict::Marked(MarkReason::Early)
        );
        assert!(
            q.flow_vars(ba).accu_prob > 8.5,
            "a mark does not restart it"
        );
        assert_eq!(
            q.enqueue(pkt(a, 1500, 101, t), t, &mut out),
            Verdict::Dropped(DropReason::Early)
        );
        assert_eq!(q.flow_vars(ba).accu_prob, 0.0);
        set(&mut q, 0.2);
        let mut p = pkt(a, 1500, 102, t);
        p.ecn = Ecn::Ect0;
        assert_eq!(
            q.enqueue(p, t, &mut out),
            Verdict::Dropped(DropReason::Early)
        );
        // Flow b, same backlog, p = 0: always accepted.
        for i in 0..10 {
            assert_eq!(
                q.enqueue(pkt(b, 1500, 200 + i, t), t, &mut out),
                Verdict::Enqueued
            );
        }
        assert_eq!(q.stats().marks[MarkReason::Early.index()], 1);
        let ce: Vec<u64> = std::iter::from_fn(|| q.dequeue(t, &mut out))
            .filter(|p| p.ecn == Ecn::Ce)
            .map(|p| p.uid)
            .collect();
        assert_eq!(ce, vec![100]);
        // ECN off (the default): the same situation drops the ECT packet.
        let mut q = build("");
        for i in 0..4 {
            q.enqueue(pkt(a, 1500, i, t), t, &mut out);
        }
        set(&mut q, 0.05);
        let mut p = pkt(a, 1500, 100, t);
        p.ecn = Ecn::Ect0;
        assert_eq!(
            q.enqueue(p, t, &mut out),
            Verdict::Dropped(DropReason::Early)
        );
    }

    /// `backlog_rule = "ns3"`: ns-3's `PieQueueDisc::DropEarly` (packet mode) spares a
    /// flow holding at most two packets, where Linux spares less than two MTUs.
    #[test]
    fn ns3_backlog_rule_spares_two_queued_packets() {
        let mut q = build("backlog_rule = \"ns3\"");
        let f = distinct_flows(&q, 1);
        let ba = q.bucket_of(&pkt(f[0], 1, 0, SimTime::ZERO));
        let mut out = QdiscOut::new(false);
        let t = SimTime::from_nanos(1_000_000);
        q.enqueue(pkt(f[0], 1500, 100, t), t, &mut out);
        let v = &mut q.vars[ba];
        v.burst_allowance = SimDuration::ZERO;
        v.qdelay = ms(40);
        v.prob = 5.0;
        // One and two packets queued: both arrivals accepted (Linux drops the second,
        // see below); three queued: the next one is dropped.
        for uid in [101, 102] {
            assert_eq!(
                q.enqueue(pkt(f[0], 1500, uid, t), t, &mut out),
                Verdict::Enqueued
            );
        }
        assert_eq!(
            q.enqueue(pkt(f[0], 1500, 103, t), t, &mut out),
            Verdict::Dropped(DropReason::Early)
        );
    }

    /// The per-flow safeguard: a flow with fewer than two MTUs (2 × 1514 frame bytes)
    /// queued is never dropped early, whatever its p, although the qdisc holds much more.
    #[test]
    fn two_mtu_safeguard_looks_at_the_flows_own_backlog() {
        let mut q = build("");
        let f = distinct_flows(&q, 2);
        let (a, b) = (f[0], f[1]);
        let ba = q.bucket_of(&pkt(a, 1, 0, SimTime::ZERO));
        let mut out = QdiscOut::new(false);
        let t = SimTime::from_nanos(1_000_000);
        for i in 0..50 {
            q.enqueue(pkt(b, 1500, i, t), t, &mut out);
        }
        q.enqueue(pkt(a, 1500, 100, t), t, &mut out);
        let v = &mut q.vars[ba];
        v.burst_allowance = SimDuration::ZERO;
        v.qdelay = ms(40);
        v.prob = 5.0;
        // 1514 queued: accepted, 3028 queued: the next one is dropped.
        assert_eq!(
            q.enqueue(pkt(a, 1500, 101, t), t, &mut out),
            Verdict::Enqueued
        );
        assert_eq!(
            q.enqueue(pkt(a, 1500, 102, t), t, &mut out),
            Verdict::Dropped(DropReason::Early)
        );
    }

    /// The lazy, awake-flows-only update gives bit-identical results to the kernel's
    /// sweep over every flow at every tick, through bursts, idle gaps (flows settle and
    /// sleep) and restarts; and sleeping flows are really asleep afterwards.
    #[test]
    fn lazy_updates_match_the_full_sweep() {
        for body in [
            "flows = 64",
            "flows = 64\ndq_rate_estimator = true\nbytemode = true",
        ] {
            let mut lazy = build(body);
            let mut full = build(body);
            full.sweep_all = true;
            let (mut ol, mut of) = (QdiscOut::new(true), QdiscOut::new(true));
            let mut rng = Rng::stream(5, "t", 0);
            let mut now = SimTime::ZERO;
            let mut uid = 0;
            for phase in 0..6 {
                let busy = phase % 2 == 0;
                for _ in 0..4000 {
                    now += SimDuration::from_micros(if busy { 300 } else { 5_000 });
                    if busy || rng.uniform() < 0.05 {
                        for _ in 0..rng.below(4) {
                            let flow = rng.below(if busy { 12 } else { 3 }) as u32;
                            let size = [1500, 64, 600][rng.below(3) as usize];
                            let p = pkt(flow, size, uid, now);
                            uid += 1;
                            assert_eq!(
                                lazy.enqueue(p, now, &mut ol),
                                full.enqueue(p, now, &mut of)
                            );
                        }
                    }
                    let (a, b) = (lazy.dequeue(now, &mut ol), full.dequeue(now, &mut of));
                    assert_eq!(a.map(|p| p.uid), b.map(|p| p.uid));
                }
                assert_eq!(lazy.vars, full.vars, "{body}: phase {phase}");
                if !busy {
                    // Long quiet phases let every flow settle.
                    assert!(lazy.awake_flows() <= 3, "{}", lazy.awake_flows());
                }
            }
            assert_eq!(lazy.stats(), full.stats());
            assert!(
                lazy.stats().drops[DropReason::Early.index()] > 100,
                "{:?}",
                lazy.stats()
            );
            // Same trace points; mean_p may differ in the last bits (summation order).
            assert_eq!(ol.trace.len(), of.trace.len());
            for (a, b) in ol.trace.iter().zip(&of.trace) {
                assert_eq!((a.t, a.var), (b.t, b.var));
                assert!(
                    (a.value - b.value).abs() <= 1e-12 * b.value.abs(),
                    "{a:?} {b:?}"
                );
            }
        }
    }
}
