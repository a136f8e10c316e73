//! `draft00`: the draft-ietf-aqm-pie-00 appendix as the saturated-TCP study ran it: the PI
//! update scaled by the draft's case analysis of p (÷8 while p < 1 %, ÷2 while p < 10 %,
//! in full above; see [`draft00_step_scale`]) with p clamped to [0, 1] (no decay),
//! de-randomisation
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

    /// The draft's PI update, scaled by the case analysis of the current p, clamped to
    /// [0, 1].
    pub(super) fn update_draft00(&self, v: &mut PieVars, backlog: u64) {
        let qdelay = self.computed_qdelay(v, backlog);
        let p = pi_delta(self.alpha, self.beta, qdelay, v.qdelay_old, self.target);
        v.prob += p * draft00_step_scale(v.prob);
        v.prob = v.prob.clamp(0.0, 1.0);
        v.qdelay = qdelay;
        v.qdelay_old = qdelay;
        v.burst_allowance = v.burst_allowance.saturating_sub(self.tupdate);
    }
}

/// draft-ietf-aqm-pie-00 §4.2 (the case analysis the saturated-TCP study "omits for
/// brevity"): the PI step α·(qdelay − ref) + β·(qdelay − qdelay_old) is applied in full
/// only once p ≥ 10 %; below it is halved, and below 1 % divided by 8, so that small drop
/// probabilities move in proportionally small steps. The same three bands are in the
/// draft authors' ns-2.36 Queue/PIE (`p /= 128`, `/= 32`, `/= 16` on a 16× larger step)
/// and in Linux 3.14's sch_pie (`>> 7`, `>> 5`, `>> 4`), both written from this draft.
pub fn draft00_step_scale(p: f64) -> f64 {
    if p < 0.01 {
        1.0 / 8.0
    } else if p < 0.1 {
        0.5
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{EarlyVerdict, PieVariant};
    use super::*;

    #[test]
    fn draft00_case_analysis_of_p_hand_trace() {
        let pp = params(PieVariant::Draft00);
        // Drain time 13.1072 ms per 16384 B → backlog 40960 B ⇒ qdelay 32.768 ms; with
        // qdelay_old 20 ms the PI step is 0.125·(0.032768 − 0.016) + 1.25·(0.032768 −
        // 0.020) = 0.002096 + 0.01596 = 0.018056.
        let step = |prob: f64| {
            let mut v = pp.new_vars();
            v.avg_dq_time = 13_107_200.0;
            v.qdelay_old = ms(20);
            v.prob = prob;
            pp.update(&mut v, 40_960);
            assert_eq!(v.qdelay, SimDuration::from_micros(32_768));
            v.prob - prob
        };
        // p < 1 %: an eighth of the step; 1 % ≤ p < 10 %: half; p ≥ 10 %: all of it.
        assert!((step(0.0) - 0.002257).abs() < 1e-9, "{}", step(0.0));
        assert!((step(0.0099) - 0.002257).abs() < 1e-9);
        assert!((step(0.01) - 0.009028).abs() < 1e-9);
        assert!((step(0.05) - 0.009028).abs() < 1e-9);
        assert!((step(0.1) - 0.018056).abs() < 1e-9);
        assert!((step(0.5) - 0.018056).abs() < 1e-9);
        // Six updates from 0 at the same delays: 0.002257 each while p < 1 %
        // (0.002257, 0.004514, 0.006771, 0.009028), then the fifth crosses 1 %:
        // 0.011285, and the sixth takes half steps: 0.011285 + 0.009028 = 0.020313.
        let mut v = pp.new_vars();
        let mut trace = vec![];
        for _ in 0..6 {
            v.avg_dq_time = 13_107_200.0;
            v.qdelay_old = ms(20);
            pp.update(&mut v, 40_960);
            trace.push(v.prob);
        }
        let want = [0.002257, 0.004514, 0.006771, 0.009028, 0.011285, 0.020313];
        for (got, want) in trace.iter().zip(want) {
            assert!((got - want).abs() < 1e-9, "{trace:?}");
        }
        // Clamped at 1 (a 3.2 s queue: the step is far above 0.001).
        let mut v = pp.new_vars();
        v.avg_dq_time = 13_107_200.0;
        v.qdelay_old = ms(20);
        v.prob = 0.999;
        pp.update(&mut v, 4_000_000);
        assert_eq!(v.prob, 1.0);
        // Falling: at p = 0.001 with an empty queue the step −0.125·0.016 = −0.002 is cut
        // to −0.00025 (p < 1 %): 0.00075, where the unscaled update would clamp at 0.
        v.avg_dq_time = 0.0;
        v.qdelay_old = SimDuration::ZERO;
        v.prob = 0.001;
        pp.update(&mut v, 0);
        assert!((v.prob - 0.00075).abs() < 1e-12, "{}", v.prob);
        v.prob = 0.0001;
        pp.update(&mut v, 0);
        assert_eq!(v.prob, 0.0, "0.0001 − 0.00025 clamps at 0");
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
