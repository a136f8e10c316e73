//! `rfc8033`: PIE as RFC 8033 specifies it (§4 and the Appendix A pseudocode) with the §5
//! enhancements of Appendix B: de-randomisation, the cap-drop adjustment, ECN up to
//! `ecn_prob`. Its drop decision and its drain-time departure-rate estimator are also the
//! draft's ([`super::draft00`] calls them).

use super::{Estimator, PieParams, PieVars, SpecDefaults};
use crate::qdisc::pi_core::pi_delta;
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};

/// RFC 8033 §6: QDELAY_REF 15 ms, T_UPDATE 15 ms, MAX_BURST 150 ms, alpha 0.125, beta
/// 1.25, DQ_THRESHOLD 16 KB (2^14); timestamps (Appendix A) for the delay.
pub const DEFAULTS: SpecDefaults = SpecDefaults {
    target: SimDuration::from_millis(15),
    tupdate: SimDuration::from_millis(15),
    max_burst: SimDuration::from_millis(150),
    alpha: 0.125,
    beta: 1.25,
    estimator: Estimator::Timestamp,
    dq_threshold: 16_384,
    mean_pktsize: None,
    bytemode: false,
    first_update: None,
    burst_at_start: true,
};

/// RFC 8033 §4.2 auto-tuning: the PI step is divided by this, by the current p.
pub fn rfc_autotune_divisor(prob: f64) -> f64 {
    if prob < 0.000001 {
        2048.0
    } else if prob < 0.00001 {
        512.0
    } else if prob < 0.0001 {
        128.0
    } else if prob < 0.001 {
        32.0
    } else if prob < 0.01 {
        8.0
    } else if prob < 0.1 {
        2.0
    } else {
        1.0
    }
}

impl PieParams {
    /// Appendix A `enqueue`: re-arm the burst allowance while the queue is calm and p is 0.
    pub(super) fn rearm_burst_rfc8033(&self, v: &mut PieVars) {
        let half = self.target / 2;
        if v.prob == 0.0 && v.qdelay < half && v.qdelay_old < half {
            v.burst_allowance = self.max_burst;
        }
    }

    pub(super) fn drop_early_rfc8033(
        &self,
        v: &mut PieVars,
        backlog: u64,
        size: u32,
        rng: &mut Rng,
    ) -> bool {
        // Checked first (as Linux does) so that the accumulator does not run during a
        // burst; the draft's `drop_early() && burst == 0` evaluates it regardless.
        if v.burst_allowance > SimDuration::ZERO {
            return false;
        }
        self.drop_decision_rfc(v, backlog, size, rng)
    }

    /// Appendix B `drop_early` once the burst allowance is spent: the §4.1 safeguards, the
    /// byte-mode scaling and the de-randomised decision (§5.4), or, with `derandomize`
    /// off, Appendix A's plain coin.
    pub(super) fn drop_decision_rfc(
        &self,
        v: &mut PieVars,
        backlog: u64,
        size: u32,
        rng: &mut Rng,
    ) -> bool {
        // Safeguard PIE to be work conserving (RFC 8033 §4.1).
        if (v.qdelay_old < self.target / 2 && v.prob < 0.2)
            || backlog <= 2 * self.mean_pktsize as u64
        {
            return false;
        }
        let local = if self.bytemode {
            v.prob * size as f64 / self.mean_pktsize as f64
        } else {
            v.prob
        };
        if !self.derandomize {
            // De-randomisation is optional (§5.4); without it every arrival past the
            // safeguards is a coin with probability p (§4.1, Appendix A `drop_early`).
            return rng.uniform() < local;
        }
        if v.prob == 0.0 {
            v.accu_prob = 0.0;
        }
        v.accu_prob += local;
        Self::derandomised_drop(v, local, rng)
    }

    /// RFC 8033 `calculate_drop_prob`.
    pub(super) fn update_rfc8033(&self, v: &mut PieVars, backlog: u64) {
        let qdelay = self.computed_qdelay(v, backlog);
        let mut p = pi_delta(self.alpha, self.beta, qdelay, v.qdelay_old, self.target);
        p /= rfc_autotune_divisor(v.prob);
        // Cap drop adjustment (RFC 8033 §5.5).
        if v.prob >= 0.1 && p > 0.02 {
            p = 0.02;
        }
        v.prob += p;
        if qdelay.is_zero() && v.qdelay_old.is_zero() {
            v.prob *= 0.98;
        }
        v.prob = v.prob.clamp(0.0, 1.0);
        v.qdelay = qdelay;
        v.qdelay_old = qdelay;
        v.burst_allowance = v.burst_allowance.saturating_sub(self.tupdate);
    }

    /// RFC 8033 Appendix B / draft drain-time estimator.
    pub(super) fn dq_time_rfc(&self, v: &mut PieVars, size: u32, backlog: u64, now: SimTime) {
        let thr = self.dq_threshold;
        if v.dq_count.is_none() && backlog >= thr {
            v.dq_count = Some(0);
            v.dq_tstamp = Some(now);
        }
        let Some(count) = v.dq_count else { return };
        let count = count + size as u64;
        if count < thr {
            v.dq_count = Some(count);
            return;
        }
        let dq_time = now.saturating_since(v.dq_tstamp.unwrap_or(now)).as_nanos() as f64;
        // weight = DQ_THRESHOLD / 2^16 (= 1/4 at the default 16 KB, the study's ¼Δ + ¾Δ_avg).
        let w = (thr as f64 / 65536.0).min(1.0);
        v.avg_dq_time = if v.avg_dq_time == 0.0 {
            dq_time
        } else {
            dq_time * w + v.avg_dq_time * (1.0 - w)
        };
        v.dq_count = None;
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::PieVariant;
    use super::*;

    /// RFC 8033 bands: same base step as above, with the cap-drop adjustment and the
    /// burst allowance consumed per update.
    #[test]
    fn rfc8033_update_bands_and_burst() {
        let pp = params(PieVariant::Rfc8033);
        for (p0, div) in [
            (0.2, 1.0),
            (0.05, 2.0),
            (0.005, 8.0),
            (0.0005, 32.0),
            (0.00005, 128.0),
            (0.000005, 512.0),
            (0.0, 2048.0),
        ] {
            let mut v = pp.new_vars();
            v.prob = p0;
            v.qdelay = ms(25);
            v.qdelay_old = ms(20);
            pp.update(&mut v, 50_000);
            assert!((v.prob - (p0 + 0.0075 / div)).abs() < 1e-12, "p0 {p0}");
            assert_eq!(v.burst_allowance, ms(135));
        }
        // Decay ×0.98 when both delays are zero; the base step is 0.125·(−0.015).
        let mut v = pp.new_vars();
        v.prob = 0.5;
        pp.update(&mut v, 0);
        assert!((v.prob - (0.5 - 0.001875) * 0.98).abs() < 1e-12);
    }

    /// Appendix A re-arms the allowance at enqueue only while calm with p = 0.
    #[test]
    fn rfc8033_rearms_burst_when_calm() {
        let pp = params(PieVariant::Rfc8033);
        let mut v = pp.new_vars();
        v.burst_allowance = SimDuration::ZERO;
        v.qdelay = ms(7);
        v.qdelay_old = ms(7);
        v.prob = 0.01;
        pp.before_enqueue(&mut v);
        assert_eq!(v.burst_allowance, SimDuration::ZERO);
        v.prob = 0.0;
        pp.before_enqueue(&mut v);
        assert_eq!(v.burst_allowance, ms(150));
    }

    #[test]
    fn rfc_drain_time_estimator() {
        let pp = params(PieVariant::Draft00);
        let mut v = pp.new_vars();
        let mut now = SimTime::from_nanos(5_000_000);
        // Starts when 16384 B or more remain; 1500-byte packets every 1.2 ms.
        pp.on_dequeue(&mut v, 1500, ms(1), 20_000, now);
        assert_eq!(v.dq_count, Some(1500));
        for _ in 0..10 {
            now += SimDuration::from_micros(1200);
            pp.on_dequeue(&mut v, 1500, ms(1), 20_000, now);
        }
        // 11 packets = 16500 B ≥ 16384 after 12 ms: first sample taken as is.
        assert_eq!(v.avg_dq_time, 12_000_000.0);
        assert_eq!(v.dq_count, None);
        // Next cycle: 11 packets over 14 ms → Δ_avg = ¼·14 + ¾·12 = 12.5 ms.
        now += SimDuration::from_micros(1400);
        pp.on_dequeue(&mut v, 1500, ms(1), 20_000, now);
        for _ in 0..10 {
            now += SimDuration::from_micros(1400);
            pp.on_dequeue(&mut v, 1500, ms(1), 20_000, now);
        }
        assert!((v.avg_dq_time - 12_500_000.0).abs() < 1e-6);
        // Little's law: 32768 B · 12.5 ms / 16384 B = 25 ms.
        pp.update(&mut v, 32_768);
        assert_eq!(v.qdelay, ms(25));
    }
}
