//! The PIE control law (Proportional Integral controller Enhanced), shared by `pie` and
//! `fq_pie` (as Linux shares `net/sched/pie.c` between `sch_pie` and `sch_fq_pie`).
//!
//! ## Principles
//! - A queueing-delay estimate (per-packet timestamps, a departure-rate estimate, or the
//!   link rate) is compared with a target every `tupdate`; the drop probability `p`
//!   integrates the PI step of [`super::pi_core::pi_delta`],
//!   `alpha·(qdelay − target) + beta·(qdelay − qdelay_old)`.
//! - Arriving packets are dropped (or ECN-marked) with probability `p`, except during a
//!   burst allowance, when the queue is clearly uncongested, or when it holds less than
//!   two packets.
//! - The core never reads a clock and never touches the event queue: the glue calls
//!   [`PieParams::update`] once per due `tupdate` tick (see [`UpdateTimer`]), and passes
//!   `now`, the backlog and a random stream to the per-packet hooks.
//! - `PieParams` is shared and read-only; `PieVars` is per queue (one per flow in fq_pie).
//!
//! ## Layout
//! This file holds what every specification shares: the parameter and state types, the
//! dispatch by [`PieVariant`], the delay estimate, the de-randomised drop decision and the
//! burst-protection state machine. Each specification lives in its own file with its
//! defaults ([`SpecDefaults`]), its early-drop test and its probability update:
//!
//! | variant | file | what it is |
//! |---|---|---|
//! | `linux` (default) | [`linux`] | today's Linux `net/sched/pie.c` (RFC 8033-aligned rewrite): timestamp delay estimate by default, multi-level auto-tuning, de-randomisation with the accumulated probability, 2 % step cap above 10 %, +2 % above 250 ms, decay by 1/64 when the queue stays empty, burst allowance consumed by elapsed dequeue time, first update 500 ms after creation |
//! | `linux-3.14` | [`linux314`] | the original Linux `sch_pie` (3.14 until its RFC alignment), the PIE of the residential study: departure-rate estimate only, 3-level auto-tuning, no de-randomisation, defaults 20 ms / 30 ms / 100 ms burst |
//! | `rfc8033` | [`rfc8033`] | RFC 8033 §4 / Appendix A with the §5 enhancements of Appendix B (de-randomisation, cap-drop adjustment, ECN up to `ecn_prob`) |
//! | `draft00` | [`draft00`] | the draft-ietf-aqm-pie-00 appendix as the saturated-TCP study ran it: PI update scaled by the draft's case analysis of p (÷8 below 1 %, ÷2 below 10 %), p clamped to [0, 1], de-randomisation 0.85/8.5 with the accumulator reset on every drop, departure-rate estimate (Δ_avg = ¼Δ + ¾Δ_avg), activation when the queue exceeds a third of the buffer |
//! | `docsis` | [`docsis`] | DOCSIS-PIE (RFC 8034): delay from the configured rate, alpha 0.25 / beta 2.5, extended auto-tuning table, 5 ms / 200 ms non-linear rules, byte mode with mean packet size 1024, burst-protection state machine, no ECN |
//! | `ns2` | [`ns2`] | the ns-2.36 `Queue/PIE` of Cisco/CableLabs in its normal (non-DOCSIS) mode, the PIE of ns-2 studies such as the DOCSIS-downstream one, whose quoted parameters (20 ms, 30 ms, 100 ms burst, 0.125, 1.25) are its defaults: departure rate averaged with weight 1/2, auto-tuning from /32 below 0.1 % to ×2 above 10 %, +2 % above 200 ms, ×0.98 when idle, no de-randomisation, p not bounded above 1 |
//!
//! Adding a specification: a new file with its `DEFAULTS`, `drop_early_*` and `update_*`,
//! one `PieVariant` arm, and one arm in each dispatch below.
//!
//! Probabilities are `f64` in [0, 1] (Linux keeps a 56-bit fixed point; the arithmetic
//! differs only in the last bits) except where a Linux quirk of the fixed-point form is
//! reproduced on purpose (commented where it happens). Times are integer nanoseconds.

pub mod docsis;
pub mod draft00;
pub mod linux;
pub mod linux314;
pub mod ns2;
pub mod rfc8033;

pub use super::pi_core::UpdateTimer;
pub use docsis::docsis_autotune_divisor;
pub use ns2::ns2_autotune_divisor;
pub use rfc8033::rfc_autotune_divisor;

use crate::rng::Rng;
use crate::time::{Rate, SimDuration, SimTime};
use crate::units::Limit;
use serde::{Deserialize, Serialize};

/// Which PIE specification to follow. See the module doc.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default, Deserialize, Serialize)]
pub enum PieVariant {
    #[default]
    #[serde(rename = "linux")]
    Linux,
    #[serde(rename = "linux-3.14")]
    Linux314,
    #[serde(rename = "rfc8033")]
    Rfc8033,
    #[serde(rename = "draft00")]
    Draft00,
    #[serde(rename = "docsis")]
    Docsis,
    #[serde(rename = "ns2")]
    Ns2,
}

/// How the queueing delay is estimated.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum Estimator {
    /// Sojourn time of the last dequeued packet (0 once the queue is empty).
    #[serde(rename = "timestamp")]
    Timestamp,
    /// Little's law with a measured departure rate (the flavour follows the variant:
    /// Linux averages the rate with weight 1/8; RFC 8033 / draft00 average the time to
    /// drain `dq_threshold` bytes with weight dq_threshold/2^16 = 1/4 at 16 KB).
    #[serde(rename = "dq_rate")]
    DqRate,
    /// Backlog divided by the configured link rate (DOCSIS-PIE's estimate).
    #[serde(rename = "link_rate")]
    LinkRate,
}

/// The defaults one specification declares (each file's `DEFAULTS`; the source of every
/// value is cited there).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct SpecDefaults {
    /// Target queueing delay (Linux `target`, RFC `QDELAY_REF`, RFC 8034 `LATENCY_TARGET`).
    pub target: SimDuration,
    /// Probability update period (Linux `tupdate`, RFC `T_UPDATE`, RFC 8034 `INTERVAL`).
    pub tupdate: SimDuration,
    /// Burst allowance (Linux initial `burst_time`, RFC `MAX_BURST`).
    pub max_burst: SimDuration,
    /// `alpha` in 1/s (Linux: `alpha 2` in units of 1/16 = 0.125).
    pub alpha: f64,
    /// `beta` in 1/s (Linux: `beta 20` in units of 1/16 = 1.25).
    pub beta: f64,
    pub estimator: Estimator,
    /// Bytes a departure-rate measurement spans (Linux `QUEUE_THRESHOLD`, RFC `DQ_THRESHOLD`).
    pub dq_threshold: u64,
    /// RFC `MEAN_PKTSIZE`, or `None` for the link MTU.
    pub mean_pktsize: Option<u32>,
    /// Scale p by packet size.
    pub bytemode: bool,
    /// First probability update after creation; `None`: one `tupdate`.
    pub first_update: Option<SimDuration>,
    /// A fresh queue starts with the full burst allowance (else it is armed later, on
    /// activation or on the first drop test, as the file says).
    pub burst_at_start: bool,
}

impl PieVariant {
    pub const ALL: [PieVariant; 6] = [
        PieVariant::Linux,
        PieVariant::Linux314,
        PieVariant::Rfc8033,
        PieVariant::Draft00,
        PieVariant::Docsis,
        PieVariant::Ns2,
    ];
    pub fn name(self) -> &'static str {
        match self {
            PieVariant::Linux => "linux",
            PieVariant::Linux314 => "linux-3.14",
            PieVariant::Rfc8033 => "rfc8033",
            PieVariant::Draft00 => "draft00",
            PieVariant::Docsis => "docsis",
            PieVariant::Ns2 => "ns2",
        }
    }
    /// The specification's defaults (declared in its file).
    pub fn defaults(self) -> &'static SpecDefaults {
        match self {
            PieVariant::Linux => &linux::DEFAULTS,
            PieVariant::Linux314 => &linux314::DEFAULTS,
            PieVariant::Rfc8033 => &rfc8033::DEFAULTS,
            PieVariant::Draft00 => &draft00::DEFAULTS,
            PieVariant::Docsis => &docsis::DEFAULTS,
            PieVariant::Ns2 => &ns2::DEFAULTS,
        }
    }
    pub fn default_target(self) -> SimDuration {
        self.defaults().target
    }
    pub fn default_tupdate(self) -> SimDuration {
        self.defaults().tupdate
    }
    pub fn default_max_burst(self) -> SimDuration {
        self.defaults().max_burst
    }
    pub fn default_alpha(self) -> f64 {
        self.defaults().alpha
    }
    pub fn default_beta(self) -> f64 {
        self.defaults().beta
    }
    pub fn default_estimator(self) -> Estimator {
        self.defaults().estimator
    }
    pub fn default_dq_threshold(self) -> u64 {
        self.defaults().dq_threshold
    }
    /// RFC `MEAN_PKTSIZE` default, or `None` for the link MTU.
    pub fn default_mean_pktsize(self) -> Option<u32> {
        self.defaults().mean_pktsize
    }
    pub fn default_bytemode(self) -> bool {
        self.defaults().bytemode
    }
    fn is_linux(self) -> bool {
        matches!(self, PieVariant::Linux | PieVariant::Linux314)
    }
}

/// RFC 8033 / RFC 8034 de-randomisation bounds on the accumulated probability.
pub const PROB_LOW: f64 = 0.85;
pub const PROB_HIGH: f64 = 8.5;

/// Burst-protection state of DOCSIS-PIE and ns-2 PIE (RFC 8034; named as in the
/// CableLabs ns-2 code). See [`PieParams::burst_protection_tick`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BurstState {
    /// Inactive: no burst allowance armed (DOCSIS: no early drop until the queue exceeds
    /// a third of the buffer).
    NoBurst,
    /// Active, not protecting a burst.
    InBurst,
    /// Protecting a burst: the burst allowance runs.
    InBurstProtecting,
}

/// Resolved, read-only PIE parameters (shared by all queues of a qdisc).
#[derive(Clone, Debug)]
pub struct PieParams {
    pub variant: PieVariant,
    pub target: SimDuration,
    pub tupdate: SimDuration,
    pub max_burst: SimDuration,
    /// Weights in 1/s.
    pub alpha: f64,
    pub beta: f64,
    pub ecn: bool,
    /// Mark instead of drop only while p ≤ ecn_prob.
    pub ecn_prob: f64,
    pub bytemode: bool,
    pub estimator: Estimator,
    pub dq_threshold: u64,
    /// RFC `MEAN_PKTSIZE`: the "two packets" safeguard and byte-mode scaling.
    pub mean_pktsize: u32,
    /// `rfc8033`: de-randomise the early drops (RFC 8033 §5.4). Only `rfc8033` reads it;
    /// the other variants follow their specification (see `PieConfig::derandomize`).
    pub derandomize: bool,
    /// Link MTU (Linux's `psched_mtu`: the two-packet safeguard and byte-mode bound).
    pub mtu: u32,
    /// `Some(n)`: a queue holding at most `n` packets is spared from early drops instead
    /// of one holding less than two MTUs — ns-3's packet-mode `PieQueueDisc::DropEarly`
    /// (`qSize <= 2`), set by fq_pie's `backlog_rule = "ns3"`. Read by the Linux variants
    /// (fq_pie runs `linux`); `None` everywhere else.
    pub spare_pkts: Option<u32>,
    /// Rate for the `link_rate` estimator.
    pub rate: Rate,
    /// The queue limit (draft00 activation and DOCSIS inactivity use a third of it).
    pub limit: Limit,
}

/// Per-queue PIE state.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct PieVars {
    /// Drop probability. Linux may exceed 1 (see `update_linux`).
    pub prob: f64,
    /// Accumulated probability since the last drop (de-randomisation).
    pub accu_prob: f64,
    /// Current queueing-delay estimate.
    pub qdelay: SimDuration,
    /// The estimate at the previous update.
    pub qdelay_old: SimDuration,
    /// Remaining burst allowance: no early drops while it is positive.
    pub burst_allowance: SimDuration,
    /// Linux: time of the last dequeue (timestamp mode) or start of the rate measurement;
    /// RFC flavour: start of the drain-time measurement.
    pub dq_tstamp: Option<SimTime>,
    /// Bytes dequeued in the running measurement (`None`: no measurement running).
    pub dq_count: Option<u64>,
    /// Linux estimator: average departure rate in bytes per ns (0: none yet).
    pub avg_dq_rate: f64,
    /// RFC estimator: average time in ns to drain `dq_threshold` bytes (0: none yet).
    pub avg_dq_time: f64,
    /// draft00: PIE is active (the queue exceeded a third of the buffer).
    pub active: bool,
    /// docsis, ns2: burst-protection state and quiet-update counter.
    pub burst_state: BurstState,
    pub burst_reset: u32,
}

/// What the enqueue path should do with an arriving packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EarlyVerdict {
    Enqueue,
    /// Mark CE if allowed (ECN on, packet ECN-capable, p ≤ ecn_prob), else drop.
    MarkOrDrop,
}

impl PieParams {
    /// When the first probability update happens, relative to creation.
    pub fn first_update(&self) -> SimDuration {
        self.variant.defaults().first_update.unwrap_or(self.tupdate)
    }

    /// Fresh per-queue state.
    pub fn new_vars(&self) -> PieVars {
        let burst = if self.variant.defaults().burst_at_start {
            self.max_burst
        } else {
            SimDuration::ZERO
        };
        PieVars {
            prob: 0.0,
            accu_prob: 0.0,
            qdelay: SimDuration::ZERO,
            qdelay_old: SimDuration::ZERO,
            burst_allowance: burst,
            dq_tstamp: None,
            dq_count: None,
            avg_dq_rate: 0.0,
            avg_dq_time: 0.0,
            active: false,
            burst_state: BurstState::NoBurst,
            burst_reset: 0,
        }
    }

    /// The backlog has reached a third of the queue limit (draft00 activation, DOCSIS
    /// leaving its inactive state).
    fn over_third(&self, backlog_bytes: u64, backlog_pkts: u32) -> bool {
        match self.limit {
            Limit::Packets(n) => backlog_pkts as u64 * 3 >= n as u64,
            Limit::Bytes(b) => backlog_bytes * 3 >= b,
        }
    }

    /// Hook before the early-drop decision (RFC 8033 Appendix A re-arms the burst
    /// allowance when the queue is calm and p is zero).
    pub fn before_enqueue(&self, v: &mut PieVars) {
        if self.variant == PieVariant::Rfc8033 {
            self.rearm_burst_rfc8033(v);
        }
    }

    /// Early-drop decision for an arriving packet of `size` bytes, with `backlog_*` queued
    /// before it. Updates the de-randomisation accumulator.
    pub fn drop_early(
        &self,
        v: &mut PieVars,
        backlog_bytes: u64,
        backlog_pkts: u32,
        size: u32,
        rng: &mut Rng,
    ) -> EarlyVerdict {
        let drop = match self.variant {
            PieVariant::Linux => self.drop_early_linux(v, backlog_bytes, backlog_pkts, size, rng),
            PieVariant::Linux314 => {
                self.drop_early_linux314(v, backlog_bytes, backlog_pkts, size, rng)
            }
            PieVariant::Rfc8033 => self.drop_early_rfc8033(v, backlog_bytes, size, rng),
            PieVariant::Draft00 => self.drop_early_draft00(v, backlog_bytes, size, rng),
            PieVariant::Docsis => self.drop_early_docsis(v, backlog_bytes, backlog_pkts, size, rng),
            PieVariant::Ns2 => self.drop_early_ns2(v, backlog_bytes, size, rng),
        };
        if drop {
            EarlyVerdict::MarkOrDrop
        } else {
            EarlyVerdict::Enqueue
        }
    }

    /// May an early-dropped packet be marked instead (ECN on and p ≤ ecn_prob)?
    pub fn may_mark(&self, v: &PieVars) -> bool {
        // RFC 8034: DOCSIS-PIE never marks.
        self.ecn && self.variant != PieVariant::Docsis && v.prob <= self.ecn_prob
    }

    /// A packet was dropped (tail or early): restart the accumulator (Linux, RFC 8033
    /// Appendix B, and the study's correction of draft00).
    pub fn on_drop(&self, v: &mut PieVars) {
        v.accu_prob = 0.0;
    }

    /// Hook after an arriving packet was handled (draft00 activation / deactivation).
    pub fn after_enqueue(
        &self,
        v: &mut PieVars,
        backlog_bytes: u64,
        backlog_pkts: u32,
        now: SimTime,
    ) {
        if self.variant == PieVariant::Draft00 {
            self.activation_draft00(v, backlog_bytes, backlog_pkts, now);
        }
    }

    /// A packet of `size` bytes left the queue after `sojourn`; `backlog_after` bytes remain.
    pub fn on_dequeue(
        &self,
        v: &mut PieVars,
        size: u32,
        sojourn: SimDuration,
        backlog_after: u64,
        now: SimTime,
    ) {
        let ns2_like = matches!(self.variant, PieVariant::Ns2 | PieVariant::Docsis);
        match (self.variant.is_linux(), self.estimator) {
            (true, Estimator::DqRate) => self.dq_rate_linux(v, size, backlog_after, now),
            (false, Estimator::DqRate) if ns2_like => self.dq_rate_ns2(v, size, backlog_after, now),
            (true, est) => self.dequeue_linux_timestamp(v, est, sojourn, backlog_after, now),
            (false, Estimator::Timestamp) => {
                // RFC 8033 Appendix A takes the last packet's delay; like Linux and ns-3 we
                // set it to 0 once the queue is empty, else an idle queue never lets p decay.
                v.qdelay = if backlog_after == 0 {
                    SimDuration::ZERO
                } else {
                    sojourn
                };
            }
            (false, Estimator::DqRate) => self.dq_time_rfc(v, size, backlog_after, now),
            (false, Estimator::LinkRate) => {}
        }
    }

    /// The delay estimate an update uses when it is not the per-packet timestamp.
    fn computed_qdelay(&self, v: &PieVars, backlog: u64) -> SimDuration {
        match self.estimator {
            Estimator::Timestamp => v.qdelay,
            Estimator::LinkRate => self.rate.tx_time(backlog.min(u32::MAX as u64) as u32),
            Estimator::DqRate
                if !matches!(self.variant, PieVariant::Rfc8033 | PieVariant::Draft00) =>
            {
                if v.avg_dq_rate > 0.0 {
                    SimDuration::from_nanos((backlog as f64 / v.avg_dq_rate) as u64)
                } else {
                    SimDuration::ZERO
                }
            }
            Estimator::DqRate => SimDuration::from_nanos(
                (backlog as f64 * v.avg_dq_time / self.dq_threshold as f64) as u64,
            ),
        }
    }

    /// One `tupdate` tick with `backlog` bytes queued.
    pub fn update(&self, v: &mut PieVars, backlog: u64) {
        match self.variant {
            PieVariant::Linux => self.update_linux(v, backlog),
            PieVariant::Linux314 => self.update_linux314(v, backlog),
            PieVariant::Rfc8033 => self.update_rfc8033(v, backlog),
            PieVariant::Draft00 => self.update_draft00(v, backlog),
            PieVariant::Docsis => self.update_docsis(v, backlog),
            PieVariant::Ns2 => self.update_ns2(v, backlog),
        }
    }

    /// The de-randomised drop decision of Linux, RFC 8033 Appendix B and draft00, once
    /// `local` (this packet's probability) has been added to the accumulator: never below
    /// [`PROB_LOW`], always from [`PROB_HIGH`] on, else a coin; a coin drop restarts the
    /// accumulator.
    fn derandomised_drop(v: &mut PieVars, local: f64, rng: &mut Rng) -> bool {
        if v.accu_prob < PROB_LOW {
            return false;
        }
        if v.accu_prob >= PROB_HIGH {
            return true;
        }
        if rng.uniform() < local {
            v.accu_prob = 0.0;
            return true;
        }
        false
    }

    /// One update's step of the burst-protection state machine shared by DOCSIS-PIE
    /// (RFC 8034) and ns-2 PIE: once the queue is `quiet` (calm, p zero, allowance used
    /// up), a protected burst is over (→ `InBurst`), and after more than `reset_timeout`
    /// of quiet updates the allowance is re-armed for the next burst (→ `NoBurst`); any
    /// non-quiet update restarts that count.
    fn burst_protection_tick(&self, v: &mut PieVars, quiet: bool, reset_timeout: SimDuration) {
        let limit = (reset_timeout.as_nanos() / self.tupdate.as_nanos().max(1)) as u32;
        if quiet {
            match v.burst_state {
                BurstState::InBurstProtecting => {
                    v.burst_state = BurstState::InBurst;
                    v.burst_reset = 0;
                }
                BurstState::InBurst => {
                    v.burst_reset += 1;
                    if v.burst_reset > limit {
                        v.burst_reset = 0;
                        v.burst_state = BurstState::NoBurst;
                    }
                }
                BurstState::NoBurst => {}
            }
        } else if v.burst_state == BurstState::InBurst {
            v.burst_reset = 0;
        }
    }
}

#[cfg(test)]
pub(super) mod testutil {
    use super::*;

    pub fn params(variant: PieVariant) -> PieParams {
        PieParams {
            variant,
            target: variant.default_target(),
            tupdate: variant.default_tupdate(),
            max_burst: variant.default_max_burst(),
            alpha: variant.default_alpha(),
            beta: variant.default_beta(),
            ecn: false,
            ecn_prob: 0.1,
            bytemode: variant == PieVariant::Docsis,
            estimator: variant.default_estimator(),
            dq_threshold: variant.default_dq_threshold(),
            mean_pktsize: variant.default_mean_pktsize().unwrap_or(1500),
            derandomize: true,
            mtu: 1500,
            spare_pkts: None,
            rate: Rate::from_bps(10_000_000),
            limit: Limit::Packets(1000),
        }
    }

    pub fn ms(x: u64) -> SimDuration {
        SimDuration::from_millis(x)
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    /// The declared defaults, variant by variant (each cited in its file).
    #[test]
    fn defaults_by_variant() {
        type Row = (
            &'static str,
            u64,
            u64,
            u64,
            f64,
            f64,
            Estimator,
            u64,
            Option<u32>,
            bool,
        );
        let rows: Vec<Row> = PieVariant::ALL
            .iter()
            .map(|v| {
                let d = v.defaults();
                (
                    v.name(),
                    d.target.as_nanos() / 1_000_000,
                    d.tupdate.as_nanos() / 1_000_000,
                    d.max_burst.as_nanos() / 1_000_000,
                    d.alpha,
                    d.beta,
                    d.estimator,
                    d.dq_threshold,
                    d.mean_pktsize,
                    d.bytemode,
                )
            })
            .collect();
        use Estimator::*;
        assert_eq!(
            rows,
            vec![
                ("linux", 15, 15, 150, 0.125, 1.25, Timestamp, 16_384, None, false),
                (
                    "linux-3.14",
                    20,
                    30,
                    100,
                    0.125,
                    1.25,
                    DqRate,
                    10_000,
                    None,
                    false
                ),
                ("rfc8033", 15, 15, 150, 0.125, 1.25, Timestamp, 16_384, None, false),
                ("draft00", 16, 16, 150, 0.125, 1.25, DqRate, 16_384, None, false),
                (
                    "docsis",
                    10,
                    16,
                    142,
                    0.25,
                    2.5,
                    LinkRate,
                    16_384,
                    Some(1024),
                    true
                ),
                (
                    "ns2",
                    20,
                    30,
                    100,
                    0.125,
                    1.25,
                    DqRate,
                    10_000,
                    Some(1000),
                    false
                ),
            ]
        );
        // Linux arms its timer 500 ms after creation, ns-2 at 0, the others one tupdate in.
        let first: Vec<u64> = PieVariant::ALL
            .iter()
            .map(|&v| params(v).first_update().as_nanos() / 1_000_000)
            .collect();
        assert_eq!(first, vec![500, 500, 15, 16, 16, 0]);
        let armed: Vec<bool> = PieVariant::ALL
            .iter()
            .map(|&v| !params(v).new_vars().burst_allowance.is_zero())
            .collect();
        assert_eq!(armed, vec![true, true, true, false, false, false]);
    }

    /// State where nothing but a safeguard keeps a packet: no burst allowance left,
    /// p = 1 with a full accumulator, 50 ms of delay now and at the last update.
    fn congested(pp: &PieParams) -> PieVars {
        let mut v = pp.new_vars();
        v.burst_allowance = SimDuration::ZERO;
        v.prob = 1.0;
        v.accu_prob = 100.0;
        v.qdelay = ms(50);
        v.qdelay_old = ms(50);
        v
    }

    #[test]
    fn safeguards_block_early_drops() {
        let mut rng = Rng::stream(1, "t", 0);
        for variant in [PieVariant::Linux, PieVariant::Linux314, PieVariant::Rfc8033] {
            let pp = params(variant);
            let mut v = congested(&pp);
            // Fewer than two MTUs queued: never dropped (Linux `backlog < 2·mtu`, RFC `≤ 2·MEAN_PKTSIZE`).
            assert_eq!(
                pp.drop_early(&mut v, 2999, 2, 1500, &mut rng),
                EarlyVerdict::Enqueue,
                "{variant:?}"
            );
            // Burst allowance left: never dropped.
            v.burst_allowance = ms(1);
            assert_eq!(
                pp.drop_early(&mut v, 100_000, 70, 1500, &mut rng),
                EarlyVerdict::Enqueue,
                "{variant:?}"
            );
            v.burst_allowance = SimDuration::ZERO;
            // Low delay and p < 20 %: never dropped.
            v.prob = 0.19;
            v.qdelay = ms(7);
            v.qdelay_old = ms(7);
            assert_eq!(
                pp.drop_early(&mut v, 100_000, 70, 1500, &mut rng),
                EarlyVerdict::Enqueue,
                "{variant:?}"
            );
            // Same delay but p = 20 %: the safeguard is off, p = 1 drops for sure.
            v.prob = 1.0;
            assert_eq!(
                pp.drop_early(&mut v, 100_000, 70, 1500, &mut rng),
                EarlyVerdict::MarkOrDrop,
                "{variant:?}"
            );
        }
    }

    /// `spare_pkts` (fq_pie's `backlog_rule = "ns3"`) replaces Linux's two-MTU test by
    /// ns-3's packet count: two full packets (3000 B, not spared by Linux) are spared,
    /// three small ones (2999 B, spared by Linux) are not.
    #[test]
    fn packet_count_safeguard_replaces_two_mtus() {
        let mut rng = Rng::stream(1, "t", 0);
        for variant in [PieVariant::Linux, PieVariant::Linux314] {
            let mut pp = params(variant);
            let mut v = congested(&pp);
            let verdicts = |pp: &PieParams, v: &mut PieVars, rng: &mut Rng| {
                [(3000, 2), (2999, 3)].map(|(b, n)| pp.drop_early(v, b, n, 1500, rng))
            };
            use EarlyVerdict::{Enqueue, MarkOrDrop};
            assert_eq!(
                verdicts(&pp, &mut v, &mut rng),
                [MarkOrDrop, Enqueue],
                "{variant:?}"
            );
            pp.spare_pkts = Some(2);
            assert_eq!(
                verdicts(&pp, &mut v, &mut rng),
                [Enqueue, MarkOrDrop],
                "{variant:?}"
            );
        }
    }

    /// The shared state machine, with DOCSIS's 1 s timeout at 16 ms updates (62 ticks).
    #[test]
    fn burst_protection_state_machine() {
        let pp = params(PieVariant::Docsis);
        let mut v = pp.new_vars();
        let t = SimDuration::from_secs(1);
        v.burst_state = BurstState::InBurstProtecting;
        pp.burst_protection_tick(&mut v, false, t);
        assert_eq!(v.burst_state, BurstState::InBurstProtecting);
        pp.burst_protection_tick(&mut v, true, t);
        assert_eq!((v.burst_state, v.burst_reset), (BurstState::InBurst, 0));
        for _ in 0..62 {
            pp.burst_protection_tick(&mut v, true, t);
        }
        assert_eq!((v.burst_state, v.burst_reset), (BurstState::InBurst, 62));
        // A busy update restarts the count.
        pp.burst_protection_tick(&mut v, false, t);
        assert_eq!(v.burst_reset, 0);
        for _ in 0..63 {
            pp.burst_protection_tick(&mut v, true, t);
        }
        assert_eq!((v.burst_state, v.burst_reset), (BurstState::NoBurst, 0));
    }
}
