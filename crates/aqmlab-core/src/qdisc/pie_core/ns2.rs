//! `ns2`: the ns-2.36 `Queue/PIE` of Cisco/CableLabs in its normal (non-DOCSIS) mode, the
//! PIE of ns-2 studies such as the DOCSIS-downstream one, whose quoted parameters (20 ms,
//! 30 ms, 100 ms burst, 0.125, 1.25) are its defaults. Departure rate averaged with weight
//! 1/2, auto-tuning from /32 below 0.1 % to ×2 above 10 %, +2 % above 200 ms, ×0.98 when
//! idle, no de-randomisation, p not bounded above 1; bursts are protected by the state
//! machine shared with DOCSIS-PIE ([`PieParams::burst_protection_tick`]), armed by the
//! first drop test after a quiet period.

use super::{BurstState, Estimator, PieParams, PieVars, SpecDefaults};
use crate::qdisc::pi_core::pi_delta;
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};

/// ns-2 pie.cc defaults: qdelay_ref_ 20 ms, tUpdate_ 30 ms, max_burst_ 100 ms, a_ 0.125,
/// b_ 1.25, dq_threshold_ 10000, mean_pktsize_ 1000, departure-rate estimate; the timer
/// starts at sUpdate_ = 0.
pub const DEFAULTS: SpecDefaults = SpecDefaults {
    target: SimDuration::from_millis(20),
    tupdate: SimDuration::from_millis(30),
    max_burst: SimDuration::from_millis(100),
    alpha: 0.125,
    beta: 1.25,
    estimator: Estimator::DqRate,
    dq_threshold: 10_000,
    mean_pktsize: Some(1000),
    bytemode: false,
    first_update: Some(SimDuration::ZERO),
    burst_at_start: false,
};

/// ns-2 pie.h BURST_RESET_TIMEOUT (1.5 s) and its non-linear threshold (0.2 s).
const NS2_BURST_RESET_TIMEOUT: SimDuration = SimDuration::from_millis(1500);
const NS2_HIGH_DELAY: SimDuration = SimDuration::from_millis(200);

/// ns-2 (normal mode) starts the table at /32 below 0.1 % and extends it like RFC 8034.
pub fn ns2_autotune_divisor(prob: f64) -> f64 {
    if prob < 0.001 {
        32.0
    } else {
        super::docsis_autotune_divisor(prob)
    }
}

impl PieParams {
    /// ns-2 `PIEQueue::drop_early` (normal mode).
    pub(super) fn drop_early_ns2(
        &self,
        v: &mut PieVars,
        backlog: u64,
        size: u32,
        rng: &mut Rng,
    ) -> bool {
        if v.burst_allowance > SimDuration::ZERO {
            return false;
        }
        if v.prob == 0.0 {
            v.accu_prob = 0.0;
        }
        // The first test after a quiet period arms the burst allowance, and (as ns-2 does)
        // still goes on to decide about this packet.
        if v.burst_state == BurstState::NoBurst {
            v.burst_state = BurstState::InBurstProtecting;
            v.burst_allowance = self.max_burst;
        }
        let p = if self.bytemode {
            v.prob * size as f64 / self.mean_pktsize as f64
        } else {
            v.prob
        };
        let u = rng.uniform();
        if v.qdelay_old < self.target / 2 && v.prob < 0.2 {
            return false;
        }
        if backlog <= 2 * self.mean_pktsize as u64 {
            return false;
        }
        u <= p
    }

    /// ns-2 `PIEQueue::calculate_p` (normal mode).
    pub(super) fn update_ns2(&self, v: &mut PieVars, backlog: u64) {
        let qdelay = self.computed_qdelay(v, backlog);
        let missing_init = self.estimator == Estimator::DqRate && v.avg_dq_rate == 0.0;
        if v.burst_allowance > SimDuration::ZERO {
            v.prob = 0.0;
        } else {
            let mut p = pi_delta(self.alpha, self.beta, qdelay, v.qdelay_old, self.target);
            p /= ns2_autotune_divisor(v.prob);
            if v.prob >= 0.1 && p > 0.02 {
                p = 0.02;
            }
            p += v.prob;
            if qdelay.is_zero() && v.qdelay_old.is_zero() {
                p *= 0.98;
            } else if qdelay > NS2_HIGH_DELAY {
                p += 0.02;
            }
            // Bounded below only: above 1 every tested packet is dropped.
            v.prob = p.max(0.0);
        }
        v.burst_allowance = v.burst_allowance.saturating_sub(self.tupdate);
        let half = self.target / 2;
        let calm = qdelay < half && v.qdelay_old < half && v.prob == 0.0;
        if calm && !missing_init {
            // Forget the departure rate (ns-2 also sets its byte count to −1; a running
            // measurement here restarts at 0).
            v.avg_dq_rate = 0.0;
            if v.dq_count.is_some() {
                v.dq_count = Some(0);
            }
        }
        self.burst_protection_tick(
            v,
            calm && v.burst_allowance.is_zero(),
            NS2_BURST_RESET_TIMEOUT,
        );
        v.qdelay = qdelay;
        v.qdelay_old = qdelay;
    }

    /// ns-2 departure-rate estimator: rate averaged with weight 1/2, a new cycle starts
    /// at once while more than `dq_threshold` bytes remain.
    pub(super) fn dq_rate_ns2(&self, v: &mut PieVars, size: u32, backlog: u64, now: SimTime) {
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
        let dt = now.saturating_since(v.dq_tstamp.unwrap_or(now));
        // ns-2 divides by zero here when the cycle took no time; such a sample is skipped.
        if !dt.is_zero() {
            let rate = count as f64 / dt.as_nanos() as f64;
            v.avg_dq_rate = if v.avg_dq_rate == 0.0 {
                rate
            } else {
                0.5 * v.avg_dq_rate + 0.5 * rate
            };
        }
        if backlog > thr {
            v.dq_count = Some(0);
            v.dq_tstamp = Some(now);
        } else {
            v.dq_count = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{EarlyVerdict, PieVariant};
    use super::*;

    /// ns-2 normal mode: qdelay from the departure rate 1.25 B/µs, target 20 ms.
    #[test]
    fn ns2_update_table_and_unbounded_p() {
        let pp = params(PieVariant::Ns2);
        assert_eq!(pp.first_update(), SimDuration::ZERO);
        // backlog 31250 B → 25 ms (rate 1.25e-3 B/ns is 2^-10 · 1.28, so compare with
        // the computed delay); old 20 ms.
        for (p0, mult) in [
            (0.0, 1.0 / 32.0),
            (0.005, 1.0 / 8.0),
            (0.05, 0.5),
            (0.5, 2.0),
        ] {
            let mut v = pp.new_vars();
            v.prob = p0;
            v.avg_dq_rate = 1.25e-3;
            v.qdelay_old = ms(20);
            pp.update(&mut v, 31_250);
            let qd = v.qdelay.as_secs_f64();
            let step = (0.125 * (qd - 0.020) + 1.25 * (qd - 0.020)) * mult;
            // Above 10 % the doubled step is capped at 2 %.
            let step = if p0 >= 0.1 { step.min(0.02) } else { step };
            assert!(
                (v.prob - (p0 + step)).abs() < 1e-12,
                "p0 {p0}: {} vs {}",
                v.prob,
                p0 + step
            );
        }
        // Above 200 ms: +2 %, and p may pass 1.
        let mut v = pp.new_vars();
        v.prob = 0.99;
        v.avg_dq_rate = 1.25e-3;
        v.qdelay_old = ms(300);
        pp.update(&mut v, 375_000); // 300 ms
        assert!((v.prob - (0.99 + 0.02 + 0.02)).abs() < 1e-9, "{}", v.prob);
        // Idle: ×0.98 after the (doubled, negative) step; the rate is forgotten once calm.
        let mut v = pp.new_vars();
        v.prob = 0.5;
        v.avg_dq_rate = 1.25e-3;
        pp.update(&mut v, 0);
        assert!((v.prob - (0.5 - 2.0 * 0.125 * 0.020) * 0.98).abs() < 1e-12);
    }

    #[test]
    fn ns2_burst_arming_and_rate_estimator() {
        let pp = params(PieVariant::Ns2);
        let mut rng = Rng::stream(9, "t", 0);
        let mut v = pp.new_vars();
        v.prob = 1.0;
        v.qdelay_old = ms(50);
        // First test in NoBurst arms 100 ms and still decides: p = 1 drops.
        assert_eq!(
            pp.drop_early(&mut v, 100_000, 70, 1500, &mut rng),
            EarlyVerdict::MarkOrDrop
        );
        assert_eq!(
            (v.burst_state, v.burst_allowance),
            (BurstState::InBurstProtecting, ms(100))
        );
        // Then nothing is dropped while the allowance lasts.
        assert_eq!(
            pp.drop_early(&mut v, 100_000, 70, 1500, &mut rng),
            EarlyVerdict::Enqueue
        );
        // Rate: cycles of 10000 B; 1000-byte packets every 0.8 ms, count includes the
        // starting packet: 10 packets over 7.2 ms, then (restart) 10 over 8 ms.
        let mut v = pp.new_vars();
        let mut now = SimTime::from_nanos(1_000_000);
        pp.on_dequeue(&mut v, 1000, ms(1), 50_000, now);
        for _ in 0..9 {
            now += SimDuration::from_micros(800);
            pp.on_dequeue(&mut v, 1000, ms(1), 50_000, now);
        }
        let r1 = 10_000.0 / 7_200_000.0;
        assert_eq!(v.avg_dq_rate, r1);
        assert_eq!(v.dq_count, Some(0));
        for _ in 0..10 {
            now += SimDuration::from_micros(800);
            pp.on_dequeue(&mut v, 1000, ms(1), 50_000, now);
        }
        assert!((v.avg_dq_rate - (0.5 * r1 + 0.5 * 10_000.0 / 8_000_000.0)).abs() < 1e-15);
    }
}
