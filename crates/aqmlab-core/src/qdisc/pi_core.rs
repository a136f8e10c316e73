//! The proportional-integral (PI) controller that PIE and its relatives share, and the
//! lazily run periodic timer that drives it.
//!
//! A PI AQM compares a queueing-delay estimate with a target every `tupdate` and moves a
//! probability by `alpha·(qdelay − target) + beta·(qdelay − qdelay_old)` ([`pi_delta`]):
//! the first term is the integral action on the error, the second the proportional action
//! on its change. PIE (`pie_core`) adds auto-tuning, burst allowances and de-randomisation
//! around it; a dual-queue coupled AQM (DualPI2, RFC 9332) uses the same step for its base
//! probability. Everything here is a pure function of its arguments: no clock, no event
//! queue, no randomness.
//!
//! Linux computes the step in fixed point; [`linux_coef`] reproduces the integer scaling of
//! the coefficients (`alpha`, `beta` in units of 1/16 per second, as tc takes them) so that
//! kernel quirks of the coarse 32-bit form stay visible.

use crate::time::{SimDuration, SimTime};

/// Linux's psched clock: 64 ns ticks, so PSCHED_TICKS_PER_SEC = 10^9 / 64.
pub const PSCHED_TICKS_PER_SEC: u64 = 15_625_000;

/// Today's Linux `MAX_PROB` (56-bit fixed point, include/net/pie.h).
pub const MAX_PROB_56: u64 = u64::MAX >> 8;
/// The original sch_pie's 32-bit `MAX_PROB` (Linux 3.14).
pub const MAX_PROB_32: u64 = u32::MAX as u64;

/// A duration in seconds (the unit of the PI weights, 1/s).
#[inline]
pub fn dur_s(d: SimDuration) -> f64 {
    d.as_secs_f64()
}

/// The PI step `alpha·(qdelay − target) + beta·(qdelay − qdelay_old)`, weights in 1/s.
#[inline]
pub fn pi_delta(
    alpha: f64,
    beta: f64,
    qdelay: SimDuration,
    qdelay_old: SimDuration,
    target: SimDuration,
) -> f64 {
    alpha * (dur_s(qdelay) - dur_s(target)) + beta * (dur_s(qdelay) - dur_s(qdelay_old))
}

/// One Linux alpha/beta coefficient in 1/s, reproducing the kernel's integer scaling
/// `(a16 · ⌊MAX_PROB / PSCHED_TICKS_PER_SEC⌋) >> shift` (a16 in units of 1/16). With the
/// 32-bit `MAX_PROB` of the original sch_pie the truncation is visible (alpha 0.125
/// becomes 0.1237 at >>4 and 0.01455 instead of 0.015625 at >>7); with today's 56-bit
/// `MAX_PROB` it is negligible.
pub fn linux_coef(a16: u64, max_prob: u64, shift: u32) -> f64 {
    let k = max_prob / PSCHED_TICKS_PER_SEC;
    ((a16 * k) >> shift) as f64 * PSCHED_TICKS_PER_SEC as f64 / max_prob as f64
}

/// The PI step in the integer form of Linux `sch_dualpi2` (`calculate_probability`):
/// delays in ns, coefficients in probability units (2^32 = 1) per 2^`granularity` ns,
/// the result in probability units (signed). It is [`pi_delta`] in fixed point:
/// `pi_step_fixed(a, b, ...) · 2^-32 ≈ pi_delta(a·10^9/2^(32+g), b·10^9/2^(32+g), ...)`.
#[inline]
pub fn pi_step_fixed(
    alpha: u32,
    beta: u32,
    qdelay_ns: u64,
    qdelay_old_ns: u64,
    target_ns: u64,
    granularity: u32,
) -> i128 {
    let q = qdelay_ns as i128;
    let delta =
        (q - target_ns as i128) * alpha as i128 + (q - qdelay_old_ns as i128) * beta as i128;
    // do_div on the magnitude: truncation towards zero, as the kernel does.
    let m = (delta.unsigned_abs() >> granularity) as i128;
    if delta < 0 {
        -m
    } else {
        m
    }
}

/// The periodic `tupdate` timer, run lazily: the glue asks for every due tick up to `now`
/// before handling a packet. Updates depend only on the state and the backlog, and the
/// backlog does not change between calls, so running them late gives the same result as
/// running them on time.
#[derive(Copy, Clone, Debug)]
pub struct UpdateTimer {
    next: SimTime,
    period: SimDuration,
}

impl UpdateTimer {
    pub fn new(first: SimTime, period: SimDuration) -> Self {
        UpdateTimer {
            next: first,
            period,
        }
    }
    /// Whether a tick is due by `now` (the glue's inline test before its out-of-line loop).
    #[inline(always)]
    pub fn is_due(&self, now: SimTime) -> bool {
        self.next <= now
    }
    /// The next tick at or before `now`, advancing the timer; `None` when none is due.
    pub fn due(&mut self, now: SimTime) -> Option<SimTime> {
        if self.next <= now {
            let t = self.next;
            self.next += self.period;
            Some(t)
        } else {
            None
        }
    }
    /// Skips every tick at or before `now` (used once an update has reached a fixed point).
    pub fn skip_through(&mut self, now: SimTime) {
        if self.next <= now {
            let k = (now - self.next).as_nanos() / self.period.as_nanos() + 1;
            self.next += self.period * k;
        }
    }
    pub fn next(&self) -> SimTime {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1e-12)
    }

    #[test]
    fn linux_coefficients_match_kernel_scaling() {
        // Today's Linux: alpha = 2/16, beta = 20/16 per second; truncation below 1e-8.
        assert!((linux_coef(2, MAX_PROB_56, 4) - 0.125).abs() < 1e-8);
        assert!((linux_coef(20, MAX_PROB_56, 4) - 1.25).abs() < 1e-8);
        // Original sch_pie: ⌊(2^32−1)/15625000⌋ = 274; (2·274)>>4 = 34, (2·274)>>7 = 4,
        // (20·274)>>4 = 342: coefficients 34·15625000/(2^32−1) = 0.12369…, 4·… = 0.014552…
        assert!(close(
            linux_coef(2, MAX_PROB_32, 4),
            34.0 * 15_625_000.0 / 4_294_967_295.0
        ));
        assert!(close(
            linux_coef(2, MAX_PROB_32, 7),
            4.0 * 15_625_000.0 / 4_294_967_295.0
        ));
        assert!(close(
            linux_coef(20, MAX_PROB_32, 4),
            342.0 * 15_625_000.0 / 4_294_967_295.0
        ));
    }

    /// target 15 ms, qdelay 25 ms, old 20 ms: 0.125·0.010 + 1.25·0.005 = 0.0075; a falling
    /// delay below target gives a negative step.
    #[test]
    fn pi_step_is_integral_plus_proportional() {
        let ms = SimDuration::from_millis;
        assert!((pi_delta(0.125, 1.25, ms(25), ms(20), ms(15)) - 0.0075).abs() < 1e-15);
        assert!((pi_delta(0.125, 1.25, ms(10), ms(20), ms(15)) + 0.013125).abs() < 1e-15);
        assert_eq!(pi_delta(0.125, 1.25, ms(15), ms(15), ms(15)), 0.0);
    }

    #[test]
    fn timer_runs_every_due_tick_and_skips() {
        let mut t = UpdateTimer::new(SimTime::from_nanos(500), SimDuration::from_nanos(100));
        let now = SimTime::from_nanos(750);
        let ticks: Vec<u64> = std::iter::from_fn(|| t.due(now))
            .map(|s| s.as_nanos())
            .collect();
        assert_eq!(ticks, vec![500, 600, 700]);
        assert_eq!(t.next().as_nanos(), 800);
        t.skip_through(SimTime::from_nanos(1000));
        assert_eq!(t.next().as_nanos(), 1100);
    }

    #[test]
    fn is_due_is_exactly_when_due_yields() {
        // The glue's inline test must agree with the loop it guards, at every instant
        // around the ticks (before, at, just after a tick, after several missed ones).
        let mut t = UpdateTimer::new(SimTime::from_nanos(500), SimDuration::from_nanos(100));
        for now in [
            0u64, 499, 500, 501, 599, 600, 950, 950, 1000, 1099, 1100, 5000,
        ] {
            let now = SimTime::from_nanos(now);
            loop {
                let expect = t.is_due(now);
                assert_eq!(t.due(now).is_some(), expect, "at {now:?}");
                if !expect {
                    break;
                }
            }
        }
    }
}
