//! `docsis`: DOCSIS-PIE (RFC 8034). The delay comes from the configured rate, the update
//! uses an auto-tuning table extended above 10 % and the 5 ms / 200 ms non-linear rules,
//! byte mode is on with MEAN_PKTSIZE 1024, ECN is never used, and bursts are protected by
//! the state machine shared with ns-2 ([`PieParams::burst_protection_tick`]): inactive
//! until the queue passes a third of the buffer, the allowance armed by the first drop.

use super::{BurstState, Estimator, PieParams, PieVars, SpecDefaults, PROB_HIGH, PROB_LOW};
use crate::qdisc::pi_core::pi_delta;
use crate::rng::Rng;
use crate::time::SimDuration;

/// RFC 8034: LATENCY_TARGET 10 ms, INTERVAL 16 ms, MAX_BURST 142 ms, ALPHA 0.25 (1/s),
/// BETA 2.5, MEAN_PKTSIZE 1024 with byte mode, delay from the configured rate.
pub const DEFAULTS: SpecDefaults = SpecDefaults {
    target: SimDuration::from_millis(10),
    tupdate: SimDuration::from_millis(16),
    max_burst: SimDuration::from_millis(142),
    alpha: 0.25,
    beta: 2.5,
    estimator: Estimator::LinkRate,
    dq_threshold: 16_384,
    mean_pktsize: Some(1024),
    bytemode: true,
    first_update: None,
    burst_at_start: false,
};

/// RFC 8034 constants.
const DOCSIS_LATENCY_LOW: SimDuration = SimDuration::from_millis(5);
const DOCSIS_LATENCY_HIGH: SimDuration = SimDuration::from_millis(200);
const DOCSIS_MIN_PKTSIZE: f64 = 64.0;
/// RFC 8034 BURST_RESET_TIMEOUT: quiet time before burst protection re-arms.
const DOCSIS_BURST_RESET_TIMEOUT: SimDuration = SimDuration::from_secs(1);

/// RFC 8034 extends the table above 10 %: ×2 below 1, ×8 below 10, ×32 above.
pub fn docsis_autotune_divisor(prob: f64) -> f64 {
    if prob < 0.1 {
        super::rfc_autotune_divisor(prob)
    } else if prob < 1.0 {
        0.5
    } else if prob < 10.0 {
        0.125
    } else {
        0.03125
    }
}

impl PieParams {
    pub(super) fn drop_early_docsis(
        &self,
        v: &mut PieVars,
        backlog: u64,
        backlog_pkts: u32,
        size: u32,
        rng: &mut Rng,
    ) -> bool {
        if v.burst_allowance > SimDuration::ZERO {
            return false;
        }
        if v.prob == 0.0 {
            v.accu_prob = 0.0;
        }
        if v.burst_state == BurstState::NoBurst {
            if !self.over_third(backlog, backlog_pkts) {
                return false;
            }
            v.burst_state = BurstState::InBurst;
        }
        let mut p = v.prob;
        if self.bytemode {
            // Byte mode scales by size / MEAN_PKTSIZE and caps at PROB_LOW.
            p = (p * size as f64 / self.mean_pktsize as f64).min(PROB_LOW);
        }
        v.accu_prob += p;
        if v.qdelay_old < self.target / 2 && v.prob < 0.2 {
            return false;
        }
        if backlog <= 2 * self.mean_pktsize as u64 {
            return false;
        }
        let drop = if v.accu_prob < PROB_LOW {
            false
        } else if v.accu_prob > PROB_HIGH {
            true
        } else {
            rng.uniform() <= p
        };
        if !drop {
            return false;
        }
        v.accu_prob = 0.0;
        if v.burst_state == BurstState::InBurst {
            v.burst_state = BurstState::InBurstProtecting;
            v.burst_allowance = self.max_burst;
        }
        true
    }

    /// RFC 8034 DOCSIS-PIE `calculate_drop_prob` with its burst state machine.
    pub(super) fn update_docsis(&self, v: &mut PieVars, backlog: u64) {
        let qdelay = self.computed_qdelay(v, backlog);
        if v.burst_allowance > SimDuration::ZERO {
            v.prob = 0.0;
        } else {
            let mut p = pi_delta(self.alpha, self.beta, qdelay, v.qdelay_old, self.target);
            p /= docsis_autotune_divisor(v.prob);
            if v.prob >= 0.1 && p > 0.02 {
                p = 0.02;
            }
            let mut prob = v.prob + p;
            if qdelay < DOCSIS_LATENCY_LOW && v.qdelay_old < DOCSIS_LATENCY_LOW {
                prob *= 0.98;
            } else if qdelay > DOCSIS_LATENCY_HIGH {
                prob += 0.02;
            }
            // p may exceed 1 in byte mode: per-packet p is capped at PROB_LOW instead.
            let cap = if self.bytemode {
                PROB_LOW * self.mean_pktsize as f64 / DOCSIS_MIN_PKTSIZE
            } else {
                1.0
            };
            v.prob = prob.clamp(0.0, cap);
        }
        v.burst_allowance = v.burst_allowance.saturating_sub(self.tupdate);
        let half = self.target / 2;
        let quiet =
            qdelay < half && v.qdelay_old < half && v.prob == 0.0 && v.burst_allowance.is_zero();
        self.burst_protection_tick(v, quiet, DOCSIS_BURST_RESET_TIMEOUT);
        v.qdelay = qdelay;
        v.qdelay_old = qdelay;
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{EarlyVerdict, PieVariant};
    use super::*;

    #[test]
    fn docsis_update_and_burst_state_machine() {
        let pp = params(PieVariant::Docsis);
        let mut v = pp.new_vars();
        assert_eq!(v.burst_state, BurstState::NoBurst);
        // Link-rate estimate: 25000 B at 10 Mbit/s = 20 ms.
        // p = 0.25·(0.020−0.010) + 2.5·(0.020−0) = 0.0525, /2048 at p = 0 → 2.5634765625e-5.
        pp.update(&mut v, 25_000);
        assert_eq!(v.qdelay, ms(20));
        assert!((v.prob - 0.0525 / 2048.0).abs() < 1e-15);
        // Above 10 %: ×2 then capped at 2 %; above 200 ms: +2 %.
        let mut v = pp.new_vars();
        v.prob = 0.5;
        v.qdelay_old = ms(250);
        pp.update(&mut v, 312_500); // 250 ms
        assert!((v.prob - 0.54).abs() < 1e-12);
        // Inactive below a third of the buffer (1000 packets → 334).
        let mut rng = Rng::stream(2, "t", 0);
        let mut v = pp.new_vars();
        v.prob = 1.0;
        v.qdelay_old = ms(50);
        assert_eq!(
            pp.drop_early(&mut v, 400_000, 300, 1024, &mut rng),
            EarlyVerdict::Enqueue
        );
        assert_eq!(v.burst_state, BurstState::NoBurst);
        // Above a third it activates; p·size/1024 capped at 0.85 accumulates: 0.85 ≥ PROB_LOW,
        // coin u ≤ 0.85 decides; force a certain drop with accu > 8.5.
        v.accu_prob = 8.0;
        assert_eq!(
            pp.drop_early(&mut v, 400_000, 400, 1024, &mut rng),
            EarlyVerdict::MarkOrDrop
        );
        assert_eq!(v.burst_state, BurstState::InBurstProtecting);
        assert_eq!(v.burst_allowance, ms(142));
        assert_eq!(v.accu_prob, 0.0);
        // While protecting, p is held at 0 and the allowance runs down by 16 ms per update.
        pp.update(&mut v, 400_000);
        assert_eq!(v.prob, 0.0);
        assert_eq!(v.burst_allowance, ms(126));
        // 9 updates exhaust it; once quiet the state returns to InBurst, then to NoBurst
        // after more than 1 s / 16 ms = 62 quiet updates.
        for _ in 0..8 {
            pp.update(&mut v, 400_000);
        }
        assert_eq!(v.burst_allowance, SimDuration::ZERO);
        pp.update(&mut v, 0);
        pp.update(&mut v, 0);
        assert_eq!(v.burst_state, BurstState::InBurst);
        for _ in 0..63 {
            pp.update(&mut v, 0);
        }
        assert_eq!(v.burst_state, BurstState::NoBurst);
    }
}
