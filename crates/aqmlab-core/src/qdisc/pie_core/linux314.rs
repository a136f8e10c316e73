//! `linux-3.14`: the original Linux `sch_pie` (3.14 until its RFC alignment), the PIE of
//! the residential study. It shares the update skeleton with today's Linux
//! ([`super::linux`]) and differs in the [`Generation`] below: the 32-bit `MAX_PROB`, three
//! auto-tuning levels, p bounded at 1, the wrapping ×0.98 decay, and a smaller restart; its
//! early-drop test has no de-randomisation.

use super::linux::{Generation, LINUX_FIRST_UPDATE};
use super::{Estimator, PieParams, PieVars, SpecDefaults};
use crate::qdisc::pi_core::MAX_PROB_32;
use crate::rng::Rng;
use crate::time::SimDuration;

/// The original sch_pie: target 20 ms, tupdate 30 ms, alpha 2 / beta 20 (in 1/16), burst
/// 100 ms, departure-rate estimate only, QUEUE_THRESHOLD 10000; timer first at HZ/2.
pub const DEFAULTS: SpecDefaults = SpecDefaults {
    target: SimDuration::from_millis(20),
    tupdate: SimDuration::from_millis(30),
    max_burst: SimDuration::from_millis(100),
    alpha: 0.125,
    beta: 1.25,
    estimator: Estimator::DqRate,
    dq_threshold: 10_000,
    mean_pktsize: None,
    bytemode: false,
    first_update: Some(LINUX_FIRST_UPDATE),
    burst_at_start: true,
};

const ORIGINAL: Generation = Generation {
    max_prob: MAX_PROB_32,
    // 3-level auto-tuning: alpha/8 below 1 %, alpha/2 below 10 %, alpha above.
    shift: |prob| {
        if prob < 0.01 {
            7
        } else if prob < 0.1 {
            5
        } else {
            4
        }
    },
    bound: |prob, _delta| {
        if *prob > 1.0 {
            *prob = 1.0;
            return false;
        } else if *prob < 0.0 {
            *prob = 0.0;
        }
        true
    },
    // The original code computes (prob * 98) / 100 in 32-bit arithmetic, which wraps for
    // p above ~1 %; reproduced because that is what ran.
    decay: |prob| {
        let p32 = (prob * MAX_PROB_32 as f64).round() as u32;
        (p32.wrapping_mul(98) / 100) as f64 / MAX_PROB_32 as f64
    },
    restart: |pp, v| {
        v.dq_count = None;
        v.avg_dq_rate = 0.0;
        v.burst_allowance = pp.max_burst;
    },
};

impl PieParams {
    /// `drop_early` of the original sch_pie: the Linux safeguards, then a plain coin.
    pub(super) fn drop_early_linux314(
        &self,
        v: &mut PieVars,
        backlog: u64,
        pkts: u32,
        size: u32,
        rng: &mut Rng,
    ) -> bool {
        if self.linux_safeguards(v, backlog, pkts) {
            return false;
        }
        rng.uniform() < self.linux_local_prob(v, size)
    }

    /// `calculate_probability` of the original sch_pie (Linux 3.14).
    pub(super) fn update_linux314(&self, v: &mut PieVars, backlog: u64) {
        self.update_linux_generation(v, backlog, &ORIGINAL)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::PieVariant;
    use super::*;

    /// The original sch_pie: 3 bands with its 32-bit coefficients.
    #[test]
    fn linux314_update_in_each_band() {
        let mut pp = params(PieVariant::Linux314);
        pp.estimator = Estimator::DqRate;
        // Departure rate 1250 bytes/ms = 1.25e-3 bytes/ns; backlog 31250 B → 25 ms.
        for (p0, shift) in [(0.2, 4u32), (0.05, 5), (0.001, 7)] {
            let mut v = pp.new_vars();
            v.prob = p0;
            v.avg_dq_rate = 1.25e-3;
            v.qdelay = ms(30); // previous estimate → qdelay_old
            pp.update(&mut v, 31_250);
            // 31250 B / 1.25e-3 B/ns ≈ 25 ms (to the float rounding of the division).
            assert_eq!(v.qdelay.as_nanos(), (31_250.0 / 1.25e-3) as u64);
            assert_eq!(v.qdelay_old, ms(30));
            let qd = v.qdelay.as_secs_f64();
            let a = ((2 * 274) >> shift) as f64 * 15_625_000.0 / 4_294_967_295.0;
            let b = ((20 * 274) >> shift) as f64 * 15_625_000.0 / 4_294_967_295.0;
            // qdelay − target ≈ 5 ms, qdelay − old ≈ −5 ms.
            let want = (p0 + a * (qd - 0.020) + b * (qd - 0.030)).max(0.0);
            assert!(
                (v.prob - want).abs() < 1e-9,
                "p0 {p0}: {} vs {want}",
                v.prob
            );
        }
    }

    #[test]
    fn linux314_decay_wraps_like_the_kernel() {
        let mut pp = params(PieVariant::Linux314);
        pp.target = ms(20);
        let mut v = pp.new_vars();
        v.avg_dq_rate = 1e-3;
        v.prob = 0.5;
        // qdelay 0, old 0, p = 0.5: step −0.1237·0.02 ≈ −0.00247, then (p32·98) wraps.
        pp.update(&mut v, 0);
        let a = 34.0 * 15_625_000.0 / 4_294_967_295.0;
        let p32 = ((0.5 - a * 0.020) * 4_294_967_295.0f64).round() as u32;
        let want = (p32.wrapping_mul(98) / 100) as f64 / 4_294_967_295.0;
        assert!((v.prob - want).abs() < 1e-9);
        assert!(v.prob < 0.45, "the wrapped product is far from 0.98·p");
    }

    /// p is bounded at 1 (32-bit fixed point) and then the empty-queue decay is skipped.
    #[test]
    fn linux314_bounds_p_at_one() {
        let pp = params(PieVariant::Linux314);
        let mut v = pp.new_vars();
        v.prob = 0.99;
        v.avg_dq_rate = 1.25e-3;
        v.qdelay = ms(300);
        pp.update(&mut v, 375_000); // 300 ms: capped step 0.02 + 0.02 → 1.03 → 1
        assert_eq!(v.prob, 1.0);
    }
}
