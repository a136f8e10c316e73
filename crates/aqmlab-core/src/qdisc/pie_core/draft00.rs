//! `draft00`: the draft-ietf-aqm-pie-00 appendix as the saturated-TCP study ran it: a plain
//! PI update with p clamped to [0, 1] (no auto-tuning, no decay), de-randomisation
//! 0.85/8.5 with the accumulator reset on every drop (the study's correction), the
//! drain-time departure-rate estimate of [`super::rfc8033`] (Δ_avg = ¼Δ + ¾Δ_avg at
//! 16 KB), and activation once the queue exceeds a third of the buffer (which arms the
//! burst allowance and restarts the measurement).

use super::{Estimator, PieParams, PieVars, SpecDefaults};
use crate::qdisc::pi_core::pi_delta;
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};

/// draft-ietf-aqm-pie-00 as the study configured it: QDELAY_REF 16 ms, T_UPDATE 16 ms,
/// MAX_BURST 150 ms, alpha 0.125, beta 1.25, DQ_THRESHOLD 16 KB, departure-rate estimate;
/// the burst allowance is armed on activation.
pub const DEFAULTS: SpecDefaults = SpecDefaults {
    target: SimDuration::from_millis(16),
    tupdate: SimDuration::from_millis(16),
    max_burst: SimDuration::from_millis(150),
    alpha: 0.125,
    beta: 1.25,
    estimator: Estimator::DqRate,
    dq_threshold: 16_384,
    mean_pktsize: None,
    bytemode: false,
    first_update: None,
    burst_at_start: false,
};

impl PieParams {
    pub(super) fn drop_early_draft00(
        &self,
        v: &mut PieVars,
        backlog: u64,
        size: u32,
        rng: &mut Rng,
    ) -> bool {
        // Burst first, as for rfc8033 (see there); inactive PIE never drops early.
        if v.burst_allowance > SimDuration::ZERO || !v.active {
            return false;
        }
        self.drop_decision_rfc(v, backlog, size, rng)
    }

    /// After each arrival: activate above a third of the buffer, deactivate once the queue
    /// and the controller are at rest.
    pub(super) fn activation_draft00(
        &self,
        v: &mut PieVars,
        backlog_bytes: u64,
        backlog_pkts: u32,
        now: SimTime,
    ) {
        if !v.active && self.over_third(backlog_bytes, backlog_pkts) {
            v.active = true;
            v.qdelay_old = SimDuration::ZERO;
            v.prob = 0.0;
            v.dq_count = Some(0);
            v.dq_tstamp = Some(now);
            v.avg_dq_time = 0.0;
            v.burst_allowance = self.max_burst;
            v.accu_prob = 0.0;
        }
        if v.prob == 0.0 && v.qdelay_old == SimDuration::ZERO && backlog_bytes == 0 {
            v.active = false;
            v.dq_count = None;
        }
    }

    /// The draft's plain PI update, clamped to [0, 1].
    pub(super) fn update_draft00(&self, v: &mut PieVars, backlog: u64) {
        let qdelay = self.computed_qdelay(v, backlog);
        let p = pi_delta(self.alpha, self.beta, qdelay, v.qdelay_old, self.target);
        v.prob += p;
        v.prob = v.prob.clamp(0.0, 1.0);
        v.qdelay = qdelay;
        v.qdelay_old = qdelay;
        v.burst_allowance = v.burst_allowance.saturating_sub(self.tupdate);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{EarlyVerdict, PieVariant};
    use super::*;

    #[test]
    fn draft00_plain_pi_clamped() {
        let pp = params(PieVariant::Draft00);
        let mut v = pp.new_vars();
        // Drain time 13.1072 ms per 16384 B → backlog 40960 B ⇒ qdelay 32.768 ms.
        v.avg_dq_time = 13_107_200.0;
        v.qdelay_old = ms(20);
        pp.update(&mut v, 40_960);
        assert_eq!(v.qdelay, SimDuration::from_micros(32_768));
        // p = 0.125·(0.032768 − 0.016) + 1.25·(0.032768 − 0.020) = 0.002096 + 0.01596.
        assert!((v.prob - 0.018056).abs() < 1e-9);
        // No auto-tuning, clamped at 1.
        v.prob = 0.999;
        pp.update(&mut v, 4_000_000);
        assert_eq!(v.prob, 1.0);
        v.avg_dq_time = 0.0;
        v.qdelay_old = SimDuration::ZERO;
        v.prob = 0.001;
        pp.update(&mut v, 0);
        assert_eq!(v.prob, 0.0, "0.001 − 0.125·0.016 clamps at 0");
    }

    #[test]
    fn draft00_derandomisation_bounds() {
        let pp = params(PieVariant::Draft00);
        let mut rng = Rng::stream(3, "t", 0);
        // Congested, active, no burst: p = 0.1. The first 8 arrivals bring accu to 0.8 <
        // 0.85: never dropped whatever the coin says.
        let mut v = pp.new_vars();
        v.active = true;
        v.prob = 0.1;
        v.qdelay_old = ms(30);
        for i in 0..8 {
            assert_eq!(
                pp.drop_early(&mut v, 100_000, 70, 1500, &mut rng),
                EarlyVerdict::Enqueue,
                "arrival {i}"
            );
        }
        assert!((v.accu_prob - 0.8).abs() < 1e-12);
        // accu reaching 8.5 is a certain drop, whatever the coin would say.
        let mut v = pp.new_vars();
        v.active = true;
        v.prob = 0.01;
        v.qdelay_old = ms(30);
        v.accu_prob = 8.495;
        assert_eq!(
            pp.drop_early(&mut v, 100_000, 70, 1500, &mut rng),
            EarlyVerdict::MarkOrDrop
        );
        // Over many arrivals at p = 1/8 (exact in binary, so the sums are exact) no gap
        // between drops is shorter than 7 arrivals (accu 0.875 is the first ≥ 0.85) nor
        // longer than 68 (accu = 8.5).
        let mut v = pp.new_vars();
        v.active = true;
        v.prob = 0.125;
        v.qdelay_old = ms(30);
        let mut gap = 0u32;
        let (mut min_gap, mut max_gap, mut drops) = (u32::MAX, 0, 0);
        for _ in 0..200_000 {
            gap += 1;
            if pp.drop_early(&mut v, 100_000, 70, 1500, &mut rng) == EarlyVerdict::MarkOrDrop {
                pp.on_drop(&mut v);
                min_gap = min_gap.min(gap);
                max_gap = max_gap.max(gap);
                gap = 0;
                drops += 1;
            }
        }
        assert!(drops > 2000);
        assert!(min_gap >= 7, "min gap {min_gap}");
        assert!(max_gap <= 68, "max gap {max_gap}");
    }

    /// 1000-packet limit: activation at 334 packets arms the allowance; an empty queue
    /// with p = 0 and no delay deactivates; inactive PIE never drops.
    #[test]
    fn draft00_activation_at_a_third() {
        let pp = params(PieVariant::Draft00);
        let mut rng = Rng::stream(4, "t", 0);
        let mut v = pp.new_vars();
        v.prob = 1.0;
        v.qdelay_old = ms(30);
        assert_eq!(
            pp.drop_early(&mut v, 400_000, 300, 1500, &mut rng),
            EarlyVerdict::Enqueue
        );
        pp.after_enqueue(&mut v, 499_500, 333, SimTime::from_nanos(1));
        assert!(!v.active);
        pp.after_enqueue(&mut v, 501_000, 334, SimTime::from_nanos(2));
        assert!(v.active);
        assert_eq!(
            (v.prob, v.burst_allowance, v.dq_count),
            (0.0, ms(150), Some(0))
        );
        pp.after_enqueue(&mut v, 0, 0, SimTime::from_nanos(3));
        assert!(!v.active);
        assert_eq!(v.dq_count, None);
    }
}
