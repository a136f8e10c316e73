//! DualPI2: the DualQ Coupled AQM of RFC 9332 as Linux `sch_dualpi2` (6.17).
//!
//! Principles (RFC 9332 §2):
//! - **Two queues, one classifier.** A packet whose ECN field matches `ecn_mask`
//!   (default `l4s_ect`: ECT(1) or CE, the L4S identifier of RFC 9331) goes to the L
//!   queue, everything else to the C (classic) queue.
//! - **One PI controller, two probabilities.** Every `tupdate` (16 ms) the base
//!   probability p' is updated from the larger of the two head-of-line queue delays:
//!   p' += alpha·(qdelay − target) + beta·(qdelay − qdelay_prev) (target 15 ms,
//!   alpha 0.16 Hz, beta 3.2 Hz). Classic packets see p_C = p'² (the "square" of PI2,
//!   which a Reno/CUBIC flow's 1/√p response linearises); L4S packets see the coupled
//!   p_CL = k·p' (k = `coupling_factor` = 2), so scalable (1/p) and classic flows get
//!   roughly equal windows (RFC 9332 §2.4).
//! - **Native L4S marking.** On dequeue an L4S packet is also CE-marked when the L
//!   queue exceeds `step_thresh` (1 ms sojourn, or a packet count), so p_L =
//!   max(p_CL, step), the shallow immediate signal that keeps the L queue below a
//!   millisecond.
//! - **Scheduling.** A weighted round robin between the queues on byte credit:
//!   `classic_protection` (wc = 10 %) of the bandwidth is guaranteed to C when both are
//!   backlogged, L has priority otherwise (the credit starts at MTU·(wc − wl)).
//! - **Overload.** When k·p' exceeds 1, L4S traffic is treated as classic: with
//!   `overload = "drop"` (default) it is dropped with p'² like classic traffic; with
//!   `"overflow"` it is marked and p' is capped at 1/k, letting the queue grow to the
//!   limit. Classic packets are never marked during overload, only dropped.
//! - **When.** Marks and drops from p' happen at dequeue (`drop_at = "dequeue"`,
//!   default) or at enqueue; never while the whole qdisc holds less than 2 MTU.
//!
//! Fixed point as in Linux: probabilities are u32 with 2^32 − 1 = 1 (`MAX_PROB`);
//! alpha and beta are given in Hz, turned into tc's 1/256 units and scaled as
//! `dualpi2_scale_alpha_beta` does (internal units of 64 ns), so the integer
//! trajectory of p' equals the kernel's. A random draw "passes" p when a uniform u32 is
//! ≤ p (`dualpi2_roll`); p_C = p'² is two independent draws.
//!
//! Drops and marks carry reasons: overlimit (limit or memlimit), `early` (a p'
//! decision; Linux `QDISC_DROP_CONGESTED`), `l4s_step` (Not-ECT above the step in the
//! L queue); marks `early` (C queue, p_C), `coupled` (L queue, p_CL, also overload
//! marking), `step` (L queue step). A mark is counted when it turns a packet CE.
//!
//! Deviations: `memlimit` counts IP bytes (Linux counts `skb->truesize`, larger per
//! packet); no tc filter or `skb->priority` classification (ECN only); GSO splitting
//! is moot (packets are never aggregated).

use super::pi_core::{pi_step_fixed, UpdateTimer};
use super::{
    BuildCtx, DropReason, MarkReason, ParamDoc, ParamError, Qdisc, QdiscOut, QdiscStats, Verdict,
};
use crate::metrics::Histogram;
use crate::packet::{Ecn, Packet};
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};
use crate::units::{parse_duration, DurationSpec, SizeSpec};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::collections::VecDeque;
use std::fmt;

/// 1 in the u32 fixed point of probabilities (`MAX_PROB = U32_MAX`).
pub const MAX_PROB: u32 = u32::MAX;
/// alpha/beta are carried in 1/256 Hz by tc (`ALPHA_BETA_SHIFT`) ...
const ALPHA_BETA_SHIFT: u32 = 8;
/// ... and kept internally in units of 64 ns (`ALPHA_BETA_GRANULARITY`).
const ALPHA_BETA_GRANULARITY: u32 = 6;

/// The step threshold: a sojourn time ("1ms") or a packet count (an integer).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StepThresh {
    Time(SimDuration),
    Packets(u32),
}

impl<'de> Deserialize<'de> for StepThresh {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StepThresh;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a time such as \"1ms\" or a packet count such as 10")
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<StepThresh, E> {
                if n < 0 || n > u32::MAX as i64 {
                    return Err(E::custom(format!(
                        "step_thresh {n} must be a packet count ≥ 0"
                    )));
                }
                Ok(StepThresh::Packets(n as u32))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<StepThresh, E> {
                self.visit_i64(n.min(i64::MAX as u64) as i64)
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<StepThresh, E> {
                parse_duration(s).map(StepThresh::Time).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for StepThresh {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            StepThresh::Packets(n) => s.serialize_u32(*n),
            StepThresh::Time(t) => s.serialize_str(&format!("{}ns", t.as_nanos())),
        }
    }
}

/// What happens to L4S traffic when k·p' exceeds 1.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Overload {
    /// tc `drop_on_overload` (default): drop L4S packets like classic ones.
    Drop,
    /// tc `overflow`: keep marking, cap p' at 1/k, let the queue reach the limit.
    Overflow,
}

/// Where p'-based drops and marks are applied.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DropAt {
    /// tc `drop_dequeue` (default).
    Dequeue,
    /// tc `drop_enqueue`.
    Enqueue,
}

/// Which ECN codepoints are classified into the L queue.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnMask {
    /// ECT(1) and CE (mask 0b01, default).
    L4sEct,
    /// ECT(0) and CE (mask 0b10).
    ClaEct,
    /// Any ECN-capable packet (mask 0b11): e.g. DCTCP's ECT(0) in the L queue.
    AnyEct,
}

impl EcnMask {
    fn bits(self) -> u8 {
        match self {
            EcnMask::L4sEct => 0b01,
            EcnMask::ClaEct => 0b10,
            EcnMask::AnyEct => 0b11,
        }
    }
}

/// `{ kind = "dualpi2", ... }`: the tc parameters with Linux's defaults
/// (`dualpi2_reset_default`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DualPi2Config {
    /// Packets in both queues together. Default 10000 (Linux: "max 125 ms at 1 Gbps").
    #[serde(default = "d_limit")]
    pub limit: u32,
    /// Bytes in both queues together. Default limit × 2 × (MTU + link header).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memlimit: Option<SizeSpec>,
    /// PI2 target queue delay. Default 15 ms.
    #[serde(default = "d_target")]
    pub target: DurationSpec,
    /// PI2 update interval. Default 16 ms.
    #[serde(default = "d_tupdate")]
    pub tupdate: DurationSpec,
    /// Integral gain in Hz. Default 0.16 (tc 41/256).
    #[serde(default = "d_alpha")]
    pub alpha: f64,
    /// Proportional gain in Hz. Default 3.2 (tc 819/256).
    #[serde(default = "d_beta")]
    pub beta: f64,
    /// k in p_CL = k·p'. Default 2.
    #[serde(default = "d_k")]
    pub coupling_factor: u32,
    /// L-queue step: a sojourn ("1ms", default) or a packet count.
    #[serde(default = "d_step")]
    pub step_thresh: StepThresh,
    /// Apply the step only when the L queue holds at least this many packets. Default 0.
    #[serde(default)]
    pub min_qlen_step: u32,
    /// "drop" (default) or "overflow".
    #[serde(default = "d_overload")]
    pub overload: Overload,
    /// "dequeue" (default) or "enqueue".
    #[serde(default = "d_drop_at")]
    pub drop_at: DropAt,
    /// C-queue weight wc in percent of the WRR (wl = 100 − wc). Default 10.
    #[serde(default = "d_wc")]
    pub classic_protection: u32,
    /// "l4s_ect" (default), "cla_ect" or "any_ect".
    #[serde(default = "d_mask")]
    pub ecn_mask: EcnMask,
}

fn d_limit() -> u32 {
    10_000
}
fn d_target() -> DurationSpec {
    DurationSpec(SimDuration::from_millis(15))
}
fn d_tupdate() -> DurationSpec {
    DurationSpec(SimDuration::from_millis(16))
}
fn d_alpha() -> f64 {
    41.0 / 256.0
}
fn d_beta() -> f64 {
    819.0 / 256.0
}
fn d_k() -> u32 {
    2
}
fn d_step() -> StepThresh {
    StepThresh::Time(SimDuration::from_millis(1))
}
fn d_overload() -> Overload {
    Overload::Drop
}
fn d_drop_at() -> DropAt {
    DropAt::Dequeue
}
fn d_wc() -> u32 {
    10
}
fn d_mask() -> EcnMask {
    EcnMask::L4sEct
}

/// tc's 1/256 Hz units (what `tc qdisc ... alpha 0.16` sends to the kernel).
fn tc_units(hz: f64) -> u32 {
    (hz * (1u32 << ALPHA_BETA_SHIFT) as f64).round() as u32
}

/// `dualpi2_scale_alpha_beta`: tc units → probability per 64 ns of delay.
pub fn scale_alpha_beta(tc: u32) -> u32 {
    (((tc as u64 * MAX_PROB as u64) >> (ALPHA_BETA_SHIFT - ALPHA_BETA_GRANULARITY)) / 1_000_000_000)
        as u32
}

impl DualPi2Config {
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc {
            name: "limit",
            default: "10000",
            doc: "packets in both queues (Linux default)",
        },
        ParamDoc {
            name: "memlimit",
            default: "limit x 2 x (mtu + header)",
            doc: "bytes in both queues (IP bytes; Linux counts truesize)",
        },
        ParamDoc {
            name: "target",
            default: "15ms",
            doc: "PI2 target queue delay (RFC 9332, Linux)",
        },
        ParamDoc {
            name: "tupdate",
            default: "16ms",
            doc: "PI2 update interval",
        },
        ParamDoc {
            name: "alpha",
            default: "0.16015625",
            doc: "integral gain, Hz: Linux's default 41/256 (tc shows 0.16); used in tc's 1/256 Hz steps",
        },
        ParamDoc {
            name: "beta",
            default: "3.19921875",
            doc: "proportional gain, Hz: Linux's default 819/256 (tc shows 3.2); used in tc's 1/256 Hz steps",
        },
        ParamDoc {
            name: "coupling_factor",
            default: "2",
            doc: "k: L4S marking p_CL = k p', classic p_C = p'^2",
        },
        ParamDoc {
            name: "step_thresh",
            default: "1ms",
            doc: "L-queue step marking threshold: sojourn (\"1ms\") or packets (integer)",
        },
        ParamDoc {
            name: "min_qlen_step",
            default: "0",
            doc: "apply the step only with at least this many L packets queued",
        },
        ParamDoc {
            name: "overload",
            default: "drop",
            doc: "drop (tc drop_on_overload) or overflow when k p' > 1",
        },
        ParamDoc {
            name: "drop_at",
            default: "dequeue",
            doc: "apply p' marks/drops at dequeue (default) or enqueue",
        },
        ParamDoc {
            name: "classic_protection",
            default: "10",
            doc: "WRR weight of the C queue in percent (L gets the rest)",
        },
        ParamDoc {
            name: "ecn_mask",
            default: "l4s_ect",
            doc: "L-queue classifier: l4s_ect (ECT(1)/CE), cla_ect (ECT(0)/CE), any_ect",
        },
    ];

    pub fn validate(&self, _ctx: &BuildCtx) -> Result<(), ParamError> {
        if self.limit == 0 {
            return Err(ParamError::new("limit", 0, "at least 1 packet"));
        }
        if let Some(m) = self.memlimit {
            if m.0 == 0 || m.0 > u32::MAX as u64 {
                return Err(ParamError::new(
                    "memlimit",
                    format!("{}B", m.0),
                    "1 byte to 4 GiB",
                ));
            }
        }
        if self.tupdate.0 < SimDuration::from_micros(1) {
            return Err(ParamError::new("tupdate", self.tupdate.0, "at least 1us"));
        }
        if self.target.0 > SimDuration::from_secs(4) {
            return Err(ParamError::new("target", self.target.0, "0 to 4s"));
        }
        for (k, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            // tc accepts 1 .. 2^23 − 1 in 1/256 Hz (ALPHA_BETA_MAX after scaling).
            let t = v * 256.0;
            if !v.is_finite() || t < 0.5 || t >= (1u64 << 23) as f64 {
                return Err(ParamError::new(k, v, "1/256 to 32767 Hz"));
            }
        }
        if !(1..=255).contains(&self.coupling_factor) {
            return Err(ParamError::new(
                "coupling_factor",
                self.coupling_factor,
                "1 to 255",
            ));
        }
        if self.classic_protection > 100 {
            return Err(ParamError::new(
                "classic_protection",
                self.classic_protection,
                "0 to 100 percent",
            ));
        }
        if let StepThresh::Time(t) = self.step_thresh {
            if t > SimDuration::from_secs(4) {
                return Err(ParamError::new(
                    "step_thresh",
                    t,
                    "0 to 4s or a packet count",
                ));
            }
        }
        Ok(())
    }
}

/// An entry of either queue: the packet and its classification at enqueue.
#[derive(Copy, Clone, Debug)]
struct Entry {
    pkt: Packet,
    /// `skb_apply_step`: L4S and the L queue was long enough at enqueue.
    apply_step: bool,
}

/// The marking decision of `must_drop`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Aqm {
    Pass,
    Mark(MarkReason),
    Drop,
}

#[derive(Debug)]
pub struct DualPi2 {
    limit: u32,
    memlimit: u64,
    /// `psched_mtu`: MTU plus the link-layer header.
    mtu: u64,
    overhead: u32,
    target: u64,
    alpha: u32,
    beta: u32,
    k: u32,
    step: StepThresh,
    min_qlen_step: u32,
    overload: Overload,
    drop_at: DropAt,
    mask: u8,
    wc: i64,
    wl: i64,
    credit_init: i64,
    credit: i64,
    /// p' (`pi2_prob`).
    prob: u32,
    last_qdelay: u64,
    lq: VecDeque<Entry>,
    cq: VecDeque<Entry>,
    bytes: u64,
    timer: UpdateTimer,
    rng: Rng,
    stats: QdiscStats,
    /// Queue delays seen at the last update (for the trace).
    qdelay_l: u64,
    qdelay_c: u64,
    traced: [f64; 5],
    warmup: SimTime,
    soj_l: Histogram,
    soj_c: Histogram,
    /// Σ p' and count over the updates after warm-up (time average of p').
    p_sum: f64,
    p_n: u64,
}

impl DualPi2 {
    pub fn new(cfg: &DualPi2Config, ctx: BuildCtx) -> Self {
        let mtu = (ctx.mtu + ctx.overhead) as u64;
        let wc = cfg.classic_protection as i64;
        let wl = 100 - wc;
        let credit_init = mtu as i64 * (wc - wl);
        let tupdate = cfg.tupdate.0;
        DualPi2 {
            limit: cfg.limit,
            memlimit: cfg
                .memlimit
                .map(|m| m.0)
                .unwrap_or(cfg.limit as u64 * 2 * mtu),
            mtu,
            overhead: ctx.overhead,
            target: cfg.target.0.as_nanos(),
            alpha: scale_alpha_beta(tc_units(cfg.alpha)),
            beta: scale_alpha_beta(tc_units(cfg.beta)),
            k: cfg.coupling_factor,
            step: cfg.step_thresh,
            min_qlen_step: cfg.min_qlen_step,
            overload: cfg.overload,
            drop_at: cfg.drop_at,
            mask: cfg.ecn_mask.bits(),
            wc,
            wl,
            credit_init,
            credit: credit_init,
            prob: 0,
            last_qdelay: 0,
            lq: VecDeque::with_capacity(64),
            cq: VecDeque::with_capacity(256),
            bytes: 0,
            timer: UpdateTimer::new(SimTime::ZERO + tupdate, tupdate),
            rng: ctx.rng,
            stats: QdiscStats::default(),
            qdelay_l: 0,
            qdelay_c: 0,
            traced: [f64::NAN; 5],
            warmup: SimTime::ZERO,
            soj_l: Histogram::new(),
            soj_c: Histogram::new(),
            p_sum: 0.0,
            p_n: 0,
        }
    }

    /// p' as a fraction.
    pub fn p_prime(&self) -> f64 {
        self.prob as f64 / MAX_PROB as f64
    }
    /// p_C = p'².
    pub fn p_classic(&self) -> f64 {
        self.p_prime() * self.p_prime()
    }
    /// p_CL = min(k·p', 1).
    pub fn p_coupled(&self) -> f64 {
        (self.k as f64 * self.p_prime()).min(1.0)
    }
    pub fn l_len(&self) -> usize {
        self.lq.len()
    }
    pub fn c_len(&self) -> usize {
        self.cq.len()
    }

    fn head_delay(q: &VecDeque<Entry>, t: SimTime) -> u64 {
        q.front()
            .map_or(0, |e| t.saturating_since(e.pkt.enqueued_at).as_nanos())
    }

    /// `calculate_probability` at tick `t`.
    fn update(&mut self, t: SimTime) {
        self.qdelay_c = Self::head_delay(&self.cq, t);
        self.qdelay_l = Self::head_delay(&self.lq, t);
        let qdelay = self.qdelay_c.max(self.qdelay_l);
        let step = pi_step_fixed(
            self.alpha,
            self.beta,
            qdelay,
            self.last_qdelay,
            self.target,
            ALPHA_BETA_GRANULARITY,
        );
        self.last_qdelay = qdelay;
        let new = (self.prob as i128 + step).clamp(0, MAX_PROB as i128) as u32;
        self.prob = match self.overload {
            // Without dropping on overload, k·p' is capped at 100 %.
            Overload::Overflow => new.min(MAX_PROB / self.k),
            Overload::Drop => new,
        };
    }

    /// Runs the `tupdate` ticks due by `now`: an inline test, as most packets find none
    /// due (a call with the loop's frame cost more than the test).
    #[inline(always)]
    fn run_updates(&mut self, now: SimTime, out: &mut QdiscOut) {
        if self.timer.is_due(now) {
            self.run_due_updates(now, out);
        }
    }

    #[inline(never)]
    fn run_due_updates(&mut self, now: SimTime, out: &mut QdiscOut) {
        while let Some(t) = self.timer.due(now) {
            let before = (self.prob, self.last_qdelay);
            self.update(t);
            if t >= self.warmup {
                self.p_sum += self.p_prime();
                self.p_n += 1;
            }
            self.trace(t, out);
            if (self.prob, self.last_qdelay) == before && self.lq.is_empty() && self.cq.is_empty() {
                // Empty and settled: the remaining ticks change nothing.
                self.timer.skip_through(now);
                break;
            }
        }
    }

    fn trace(&mut self, t: SimTime, out: &mut QdiscOut) {
        if !out.tracing {
            return;
        }
        let v = [
            self.p_prime(),
            self.p_classic(),
            self.p_coupled(),
            self.qdelay_l as f64 * 1e-9,
            self.qdelay_c as f64 * 1e-9,
        ];
        for (i, (&x, last)) in v.iter().zip(self.traced.iter_mut()).enumerate() {
            if x != *last {
                *last = x;
                out.trace(t, i as u8, x);
            }
        }
    }

    fn roll(&mut self, p: u32) -> bool {
        self.rng.next_u32() <= p
    }

    fn is_l4s(&self, p: &Packet) -> bool {
        p.ecn.bits() & self.mask != 0
    }

    /// `must_drop`: the p'-based decision for a packet of class `l4s`.
    fn must_drop(&mut self, l4s: bool, ecn: Ecn) -> Aqm {
        if self.bytes < 2 * self.mtu {
            return Aqm::Pass;
        }
        let prob = self.prob;
        let local_l = prob as u64 * self.k as u64;
        let overload = local_l > MAX_PROB as u64;
        if !l4s {
            // p_C = p'²: two draws.
            if self.roll(prob) && self.roll(prob) {
                if overload || ecn == Ecn::NotEct {
                    return Aqm::Drop;
                }
                return Aqm::Mark(MarkReason::Early);
            }
            return Aqm::Pass;
        }
        if overload {
            let drop = self.overload == Overload::Drop && self.roll(prob) && self.roll(prob);
            return if drop {
                Aqm::Drop
            } else {
                Aqm::Mark(MarkReason::Coupled)
            };
        }
        if self.roll(local_l as u32) {
            if ecn == Ecn::NotEct {
                return Aqm::Drop;
            }
            return Aqm::Mark(MarkReason::Coupled);
        }
        Aqm::Pass
    }

    /// Sets CE; true (and counted) if the packet was ECN-capable and not yet CE.
    fn mark(&mut self, p: &mut Packet, why: MarkReason) -> bool {
        match p.ecn {
            Ecn::Ect0 | Ecn::Ect1 => {
                p.ecn = Ecn::Ce;
                self.stats.on_mark(why);
                true
            }
            _ => false,
        }
    }

    /// `dequeue_packet`: WRR pick. Returns the entry, whether it is from L, and the
    /// credit change to apply if it is sent.
    fn pick(&mut self) -> Option<(Entry, bool, i64)> {
        let c_len = self.cq.len();
        if !self.lq.is_empty() && (c_len == 0 || self.credit <= 0) {
            let e = self.lq.pop_front().unwrap();
            let w = if c_len > 0 { self.wc } else { 0 };
            self.bytes -= e.pkt.size as u64;
            Some((e, true, w * self.wire_len(&e.pkt)))
        } else if c_len > 0 {
            let e = self.cq.pop_front().unwrap();
            let w = if !self.lq.is_empty() { -self.wl } else { 0 };
            self.bytes -= e.pkt.size as u64;
            Some((e, false, w * self.wire_len(&e.pkt)))
        } else {
            self.credit = self.credit_init;
            None
        }
    }

    /// `qdisc_pkt_len`: the packet with its link-layer header, as the MTU credit counts.
    fn wire_len(&self, p: &Packet) -> i64 {
        (p.size + self.overhead) as i64
    }
}

impl Qdisc for DualPi2 {
    fn enqueue(&mut self, mut pkt: Packet, now: SimTime, out: &mut QdiscOut) -> Verdict {
        self.run_updates(now, out);
        let l4s = self.is_l4s(&pkt);
        let qlen = self.lq.len() + self.cq.len();
        if qlen >= self.limit as usize || self.bytes + pkt.size as u64 > self.memlimit {
            return out.drop_arrival(&mut self.stats, pkt, DropReason::Overlimit);
        }
        let mut verdict = Verdict::Enqueued;
        if self.drop_at == DropAt::Enqueue {
            match self.must_drop(l4s, pkt.ecn) {
                Aqm::Drop => return out.drop_arrival(&mut self.stats, pkt, DropReason::Early),
                Aqm::Mark(why) => {
                    if self.mark(&mut pkt, why) {
                        verdict = Verdict::Marked(why);
                    }
                }
                Aqm::Pass => {}
            }
        }
        self.stats.on_enqueue(&pkt);
        self.bytes += pkt.size as u64;
        if l4s {
            let apply_step = self.lq.len() >= self.min_qlen_step as usize;
            self.lq.push_back(Entry { pkt, apply_step });
        } else {
            self.cq.push_back(Entry {
                pkt,
                apply_step: false,
            });
        }
        verdict
    }

    fn dequeue(&mut self, now: SimTime, out: &mut QdiscOut) -> Option<Packet> {
        self.run_updates(now, out);
        while let Some((mut e, from_l, credit_change)) = self.pick() {
            if self.drop_at == DropAt::Dequeue {
                match self.must_drop(from_l, e.pkt.ecn) {
                    Aqm::Drop => {
                        out.drop_queued(&mut self.stats, e.pkt, DropReason::Early);
                        continue;
                    }
                    Aqm::Mark(why) => {
                        self.mark(&mut e.pkt, why);
                    }
                    Aqm::Pass => {}
                }
            }
            let sojourn = now.saturating_since(e.pkt.enqueued_at).as_nanos();
            if from_l && e.apply_step {
                // do_step_aqm: the L queue's length after this dequeue, or the sojourn.
                let over = match self.step {
                    StepThresh::Packets(n) => self.lq.len() as u64 > n as u64,
                    StepThresh::Time(t) => sojourn > t.as_nanos(),
                };
                if over {
                    if e.pkt.ecn == Ecn::NotEct {
                        out.drop_queued(&mut self.stats, e.pkt, DropReason::L4sStep);
                        continue;
                    }
                    self.mark(&mut e.pkt, MarkReason::Step);
                }
            }
            self.credit += credit_change;
            self.stats.on_dequeue(&e.pkt);
            if now >= self.warmup {
                if from_l {
                    self.soj_l.record(sojourn);
                } else {
                    self.soj_c.record(sojourn);
                }
            }
            return Some(e.pkt);
        }
        None
    }

    fn len(&self) -> usize {
        self.lq.len() + self.cq.len()
    }
    fn backlog_bytes(&self) -> u64 {
        self.bytes
    }
    fn stats(&self) -> &QdiscStats {
        &self.stats
    }
    fn trace_vars(&self) -> &'static [&'static str] {
        &["p_prime", "p_c", "p_l", "qdelay_l", "qdelay_c"]
    }
    fn set_warmup(&mut self, t: SimTime) {
        self.warmup = t;
    }
    fn summary(&self, out: &mut Vec<(&'static str, f64)>) {
        let s = |h: &Histogram, q: f64| {
            if h.count > 0 {
                h.quantile(q) * 1e-9
            } else {
                f64::NAN
            }
        };
        let mean = |h: &Histogram| {
            if h.count > 0 {
                h.mean() * 1e-9
            } else {
                f64::NAN
            }
        };
        out.push(("l_pkts", self.soj_l.count as f64));
        out.push(("l_sojourn_mean", mean(&self.soj_l)));
        out.push(("l_sojourn_p99", s(&self.soj_l, 0.99)));
        out.push((
            "l_sojourn_max",
            if self.soj_l.count > 0 {
                self.soj_l.max as f64 * 1e-9
            } else {
                f64::NAN
            },
        ));
        out.push(("c_pkts", self.soj_c.count as f64));
        out.push(("c_sojourn_mean", mean(&self.soj_c)));
        out.push(("c_sojourn_p99", s(&self.soj_c, 0.99)));
        out.push((
            "c_sojourn_max",
            if self.soj_c.count > 0 {
                self.soj_c.max as f64 * 1e-9
            } else {
                f64::NAN
            },
        ));
        out.push((
            "p_prime_mean",
            if self.p_n > 0 {
                self.p_sum / self.p_n as f64
            } else {
                f64::NAN
            },
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{ctx, pkt};
    use super::*;

    fn build(body: &str) -> DualPi2 {
        let cfg: DualPi2Config = toml::from_str(body).unwrap();
        cfg.validate(&ctx(10_000_000)).unwrap();
        DualPi2::new(&cfg, ctx(10_000_000))
    }
    fn ms(x: u64) -> SimTime {
        SimTime::from_nanos(x * 1_000_000)
    }
    fn ecn_pkt(uid: u64, e: Ecn, at: SimTime) -> Packet {
        let mut p = pkt(uid as u32 % 7, 1000, uid, at);
        p.ecn = e;
        p
    }

    #[test]
    fn defaults_and_alpha_beta_scaling_match_linux() {
        let q = build("");
        // 41 · 2^32 >> 2 / 1e9 = 44; 819 · 2^32 >> 2 / 1e9 = 879.
        assert_eq!((q.alpha, q.beta), (44, 879));
        assert_eq!(q.target, 15_000_000);
        assert_eq!(q.limit, 10_000);
        assert_eq!(q.credit_init, 1514 * (10 - 90));
        assert_eq!(q.k, 2);
        assert_eq!(q.step, StepThresh::Time(SimDuration::from_millis(1)));
        let q = build("step_thresh = 5\nalpha = 0.32\necn_mask = \"any_ect\"");
        assert_eq!(q.step, StepThresh::Packets(5));
        assert_eq!(q.alpha, scale_alpha_beta(82));
        assert_eq!(q.mask, 3);
        assert!(toml::from_str::<DualPi2Config>("step_thresh = \"fast\"").is_err());
        let bad: DualPi2Config = toml::from_str("coupling_factor = 0").unwrap();
        assert_eq!(bad.validate(&ctx(1)).unwrap_err().field, "coupling_factor");
    }

    #[test]
    fn classification_by_ecn_codepoint() {
        let mut q = build("");
        let mut out = QdiscOut::new(false);
        for (i, e) in [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce]
            .into_iter()
            .enumerate()
        {
            q.enqueue(ecn_pkt(i as u64, e, ms(0)), ms(0), &mut out);
        }
        assert_eq!(
            (q.l_len(), q.c_len()),
            (2, 2),
            "ECT(1) and CE to L; Not-ECT and ECT(0) to C"
        );
        let mut q = build("ecn_mask = \"any_ect\"");
        for (i, e) in [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce]
            .into_iter()
            .enumerate()
        {
            q.enqueue(ecn_pkt(i as u64, e, ms(0)), ms(0), &mut out);
        }
        assert_eq!((q.l_len(), q.c_len()), (3, 1));
    }

    /// Hand-worked PI2 trajectory: known queue delays at each tick give p' by the
    /// integer update, and p_C = p'², p_CL = 2p' (RFC 9332 §2.4, Figure 1).
    #[test]
    fn pi2_trajectory_and_coupled_probabilities_hand_trace() {
        let mut q = build("");
        let mut out = QdiscOut::new(false);
        // One classic packet enqueued at t = 0 stays at the head: its delay at tick n
        // (t = 16n ms) is 16n ms.
        q.enqueue(ecn_pkt(1, Ecn::NotEct, ms(0)), ms(0), &mut out);
        let (a, b) = (44i128, 879i128);
        let mut p: i128 = 0;
        let mut last: i128 = 0;
        for n in 1..=6u64 {
            let d = (16 * n * 1_000_000) as i128;
            let delta = (d - 15_000_000) * a + (d - last) * b;
            last = d;
            p = if delta > 0 {
                p + (delta >> 6)
            } else {
                (p - ((-delta) >> 6)).max(0)
            };
            q.run_updates(ms(16 * n), &mut out);
            assert_eq!(q.prob as i128, p, "tick {n}");
        }
        // Closed form in probability units: Σ alpha·(d − target) + beta·Δd, with the
        // gains as the kernel holds them (0.16 and 3.2 Hz quantised to 44 and 879).
        let pp = q.p_prime();
        let hz = |g: f64| g * 1e9 / 64.0 / MAX_PROB as f64;
        let approx: f64 = (1..=6)
            .map(|n| hz(44.0) * (0.016 * n as f64 - 0.015) + hz(879.0) * 0.016)
            .sum();
        assert!((pp - approx).abs() < 1e-6, "{pp} vs {approx}");
        assert!((hz(44.0) - 0.16).abs() < 1e-3 && (hz(879.0) - 3.2).abs() < 3e-3);
        // The shared PI core's floating-point step agrees with the fixed-point one.
        let f = crate::qdisc::pi_core::pi_delta(
            hz(44.0),
            hz(879.0),
            SimDuration::from_millis(96),
            SimDuration::from_millis(80),
            SimDuration::from_millis(15),
        );
        let i = pi_step_fixed(44, 879, 96_000_000, 80_000_000, 15_000_000, 6);
        assert!((f - i as f64 / MAX_PROB as f64).abs() < 1e-8);
        assert!((q.p_classic() - pp * pp).abs() < 1e-12);
        assert!((q.p_coupled() - (2.0 * pp).min(1.0)).abs() < 1e-12);
        // The queue empties: delay 0 → p' falls by alpha·target + beta·(last delay).
        let before = q.prob as i128;
        q.dequeue(ms(100), &mut out);
        q.run_updates(ms(112), &mut out);
        let delta = (0 - 15_000_000i128) * a + (0 - last) * b;
        assert_eq!(q.prob as i128, (before - ((-delta) >> 6)).max(0));
    }

    #[test]
    fn coupled_marking_frequencies_follow_k_p_and_p_squared() {
        // p' = 0.3: L packets marked with 0.6, C (ECT(0)) packets with 0.09.
        let mut q = build("");
        let mut out = QdiscOut::new(false);
        q.prob = (0.3 * MAX_PROB as f64) as u32;
        q.timer = UpdateTimer::new(SimTime::NEVER, SimDuration::from_millis(16));
        let n = 40_000u64;
        let (mut ml, mut mc) = (0u64, 0u64);
        for i in 0..n {
            let l = i % 2 == 0;
            q.enqueue(
                ecn_pkt(i, if l { Ecn::Ect1 } else { Ecn::Ect0 }, ms(0)),
                ms(0),
                &mut out,
            );
            // keep > 2 MTU backlog: dequeue once 4 are queued
            if q.len() > 4 {
                let p = q.dequeue(ms(0), &mut out).unwrap();
                if p.ecn == Ecn::Ce {
                    if p.uid.is_multiple_of(2) {
                        ml += 1
                    } else {
                        mc += 1
                    }
                }
            }
        }
        let fl = ml as f64 / (n / 2) as f64;
        let fc = mc as f64 / (n / 2) as f64;
        assert!((fl - 0.6).abs() < 0.02, "L marked {fl}");
        assert!((fc - 0.09).abs() < 0.01, "C marked {fc}");
        assert!(out.drops.is_empty());
        let st = q.stats();
        assert_eq!(st.marks[MarkReason::Coupled.index()], ml);
        assert_eq!(st.marks[MarkReason::Early.index()], mc);
    }

    #[test]
    fn step_marks_l_packets_above_threshold_and_drops_non_ect() {
        let mut q = build("");
        let mut out = QdiscOut::new(false);
        q.enqueue(ecn_pkt(1, Ecn::Ect1, ms(0)), ms(0), &mut out);
        q.enqueue(ecn_pkt(2, Ecn::Ect1, ms(0)), ms(0), &mut out);
        let a = q.dequeue(SimTime::from_nanos(900_000), &mut out).unwrap();
        assert_eq!(a.ecn, Ecn::Ect1, "0.9 ms sojourn: below the 1 ms step");
        let b = q.dequeue(SimTime::from_nanos(1_100_000), &mut out).unwrap();
        assert_eq!(b.ecn, Ecn::Ce, "1.1 ms: step mark");
        assert_eq!(q.stats().marks[MarkReason::Step.index()], 1);
        // Packet-count step: marked when more than 2 L packets remain after dequeue.
        let mut q = build("step_thresh = 2\necn_mask = \"any_ect\"");
        for i in 0..5 {
            q.enqueue(ecn_pkt(i, Ecn::Ect0, ms(0)), ms(0), &mut out);
        }
        let got: Vec<Ecn> = (0..5)
            .map(|_| q.dequeue(ms(0), &mut out).unwrap().ecn)
            .collect();
        assert_eq!(got, vec![Ecn::Ce, Ecn::Ce, Ecn::Ect0, Ecn::Ect0, Ecn::Ect0]);
        q.stats().check(0, 0).unwrap();
    }

    #[test]
    fn wrr_gives_classic_its_share_when_both_are_backlogged() {
        let mut q = build("");
        let mut out = QdiscOut::new(false);
        q.prob = 0;
        for i in 0..2000 {
            let e = if i % 2 == 0 { Ecn::Ect1 } else { Ecn::NotEct };
            let mut p = ecn_pkt(i, e, ms(0));
            p.size = 1500;
            q.enqueue(p, ms(0), &mut out);
        }
        // Dequeue at time 0 (no step marks, no updates): count classes in 500 packets.
        let mut c = 0;
        for _ in 0..500 {
            let p = q.dequeue(ms(0), &mut out).unwrap();
            c += (p.ecn == Ecn::NotEct) as u32;
        }
        // wc = 10 %: one classic packet per nine L packets.
        assert!((45..=56).contains(&c), "classic share {c}/500");
        // L empty: classic alone.
        let mut q = build("");
        q.enqueue(ecn_pkt(1, Ecn::NotEct, ms(0)), ms(0), &mut out);
        assert!(q.dequeue(ms(0), &mut out).is_some());
        assert!(q.dequeue(ms(0), &mut out).is_none());
        assert_eq!(q.credit, q.credit_init, "credit reset when both are empty");
    }

    #[test]
    fn overload_drops_l4s_like_classic_or_overflows() {
        let mut q = build("");
        let mut out = QdiscOut::new(false);
        q.timer = UpdateTimer::new(SimTime::NEVER, SimDuration::from_millis(16));
        q.prob = (0.8 * MAX_PROB as f64) as u32; // k·p' = 1.6 > 1
        for i in 0..4000 {
            q.enqueue(ecn_pkt(i, Ecn::Ect1, ms(0)), ms(0), &mut out);
        }
        let mut sent = 0;
        while q.len() > 2 {
            if q.dequeue(ms(0), &mut out).is_some() {
                sent += 1;
            }
        }
        let dropped = out.drops.len() as f64;
        let frac = dropped / (dropped + sent as f64);
        assert!((frac - 0.64).abs() < 0.03, "dropped {frac} ≈ p'² = 0.64");
        assert!(out.drops.iter().all(|d| d.1 == DropReason::Early));
        // Overflow: no drops, every L packet marked, p' capped at 1/k.
        let mut q = build("overload = \"overflow\"");
        let mut out = QdiscOut::new(false);
        q.prob = (0.8 * MAX_PROB as f64) as u32;
        for i in 0..100 {
            q.enqueue(ecn_pkt(i, Ecn::Ect1, ms(0)), ms(0), &mut out);
        }
        q.timer = UpdateTimer::new(SimTime::NEVER, SimDuration::from_millis(16));
        // (the last four leave at most 3000 B < 2 × 1514 behind: no AQM for them)
        while q.len() > 4 {
            assert_eq!(q.dequeue(ms(0), &mut out).unwrap().ecn, Ecn::Ce);
        }
        assert!(out.drops.is_empty());
        q.update(ms(5000));
        assert!(q.prob <= MAX_PROB / 2);
    }

    #[test]
    fn limits_and_no_aqm_below_two_mtu() {
        let mut q = build("limit = 3");
        let mut out = QdiscOut::new(false);
        q.prob = MAX_PROB;
        for i in 0..4 {
            q.enqueue(ecn_pkt(i, Ecn::NotEct, ms(0)), ms(0), &mut out);
        }
        assert_eq!(out.drops.len(), 1);
        assert_eq!(out.drops[0].1, DropReason::Overlimit);
        // 3 × 1000 B queued; the first dequeue leaves 2000 B < 2 × 1514: no AQM at all.
        let kept = (0..3)
            .filter(|_| q.dequeue(ms(0), &mut out).is_some())
            .count();
        assert_eq!(kept, 3);
        q.stats().check(0, 0).unwrap();
    }
}
