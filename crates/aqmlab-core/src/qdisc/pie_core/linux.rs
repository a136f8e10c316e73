//! `linux`: today's Linux PIE (`net/sched/pie.c`, include/net/pie.h; the RFC 8033-aligned
//! rewrite of v5.x), plus the machinery both Linux generations share: the update skeleton
//! of `pie_calculate_probability` (parameterised by a [`Generation`]), the safeguards of
//! `pie_drop_early`, the departure-rate estimator and the dequeue-time burst accounting of
//! `pie_process_dequeue`. The original 3.14 code is in [`super::linux314`].

use super::{Estimator, PieParams, PieVars, SpecDefaults};
use crate::qdisc::pi_core::{linux_coef, pi_delta, MAX_PROB_56};
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};

/// include/net/pie.h `pie_params_init`: target 15 ms, tupdate 15 ms (HZ·15/1000), alpha 2
/// and beta 20 (in 1/16), burst 150 ms, `dq_rate_estimator` off (timestamps),
/// QUEUE_THRESHOLD 16384; the timer first fires HZ/2 after `pie_init`.
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
    first_update: Some(LINUX_FIRST_UPDATE),
    burst_at_start: true,
};

/// Linux: above this delay, p grows by a further 2 % per update.
const LINUX_HIGH_DELAY: SimDuration = SimDuration::from_millis(250);
/// Linux arms the update timer HZ/2 after the qdisc is created.
pub(super) const LINUX_FIRST_UPDATE: SimDuration = SimDuration::from_millis(500);

/// What differs between the Linux generations in the probability update.
pub(super) struct Generation {
    /// `MAX_PROB` of the fixed-point form (scales the coefficients, see `linux_coef`).
    pub max_prob: u64,
    /// Auto-tuning: the right shift of the coefficients at probability `p`.
    pub shift: fn(f64) -> u32,
    /// Bounds p after adding `delta`; false when p hit its ceiling (then no decay).
    pub bound: fn(&mut f64, f64) -> bool,
    /// The decay applied after two updates with an empty queue.
    pub decay: fn(f64) -> f64,
    /// `pie_vars_init`-style restart once the queue is calm and p is zero.
    pub restart: fn(&PieParams, &mut PieVars),
}

/// Today's Linux.
const TODAY: Generation = Generation {
    max_prob: MAX_PROB_56,
    // Auto-tuning: halve below 10 %, then a further quarter per decade below 1 %
    // (down to 1e-6), which reproduces RFC 8033's /2 … /2048 table.
    shift: |prob| {
        let mut shift = 4;
        if prob < 0.1 {
            shift += 1;
            let mut power = 100.0;
            while prob < 1.0 / power && power <= 1_000_000.0 {
                shift += 2;
                power *= 10.0;
            }
        }
        shift
    },
    bound: |prob, delta| {
        if delta > 0.0 {
            // Linux keeps p as a 56-bit fixed point in a u64, so p may grow past 1 (every
            // packet then meets the drop test) until the u64 itself would overflow, at 256.
            if *prob >= 256.0 {
                *prob = 1.0;
                return false;
            }
        } else if *prob < 0.0 {
            *prob = 0.0;
        }
        true
    },
    // Queue empty for two updates: decay p by 1/64.
    decay: |prob| prob - prob / 64.0,
    // pie_vars_init: restart measurements and re-arm the burst allowance.
    restart: |pp, v| {
        v.burst_allowance = pp.max_burst;
        v.dq_tstamp = None;
        v.accu_prob = 0.0;
        v.dq_count = None;
        v.avg_dq_rate = 0.0;
    },
};

impl PieParams {
    /// Linux `pie_drop_early` safeguards: true when the packet must not be dropped.
    /// `backlog`, `pkts`: frame bytes and packets queued before it.
    pub(super) fn linux_safeguards(&self, v: &PieVars, backlog: u64, pkts: u32) -> bool {
        if v.burst_allowance > SimDuration::ZERO {
            return true;
        }
        // Safeguard: low delay and p below 20 %.
        if v.qdelay < self.target / 2 && v.prob < 0.2 {
            return true;
        }
        match self.spare_pkts {
            // Fewer than two MTU-sized packets queued, like RED's min_th.
            None => backlog < 2 * self.mtu as u64,
            Some(n) => pkts <= n,
        }
    }

    /// This packet's probability (byte mode scales by size / MTU).
    pub(super) fn linux_local_prob(&self, v: &PieVars, size: u32) -> f64 {
        if self.bytemode && size <= self.mtu {
            v.prob * size as f64 / self.mtu as f64
        } else {
            v.prob
        }
    }

    pub(super) fn drop_early_linux(
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
        let local = self.linux_local_prob(v, size);
        if local == 0.0 {
            v.accu_prob = 0.0;
        } else {
            v.accu_prob += local;
        }
        Self::derandomised_drop(v, local, rng)
    }

    /// `pie_calculate_probability` of today's Linux.
    pub(super) fn update_linux(&self, v: &mut PieVars, backlog: u64) {
        self.update_linux_generation(v, backlog, &TODAY)
    }

    /// The update both Linux generations run, with their differences in `g`.
    pub(super) fn update_linux_generation(&self, v: &mut PieVars, backlog: u64, g: &Generation) {
        let per_packet = self.estimator == Estimator::Timestamp;
        let (qdelay, qdelay_old) = if per_packet {
            (v.qdelay, v.qdelay_old)
        } else {
            let old = v.qdelay;
            v.qdelay_old = v.qdelay;
            (self.computed_qdelay(v, backlog), old)
        };
        // A zero estimate with a non-empty queue means the queue is very short: no decay.
        let mut update_prob = !(qdelay.is_zero() && backlog != 0);
        let shift = (g.shift)(v.prob);
        let a16 = (self.alpha * 16.0).round() as u64;
        let b16 = (self.beta * 16.0).round() as u64;
        let alpha = linux_coef(a16, g.max_prob, shift);
        let beta = linux_coef(b16, g.max_prob, shift);
        let mut delta = pi_delta(alpha, beta, qdelay, qdelay_old, self.target);
        // Steps of at most 2 % once p ≥ 10 %.
        if delta > 0.02 && v.prob >= 0.1 {
            delta = 0.02;
        }
        if qdelay > LINUX_HIGH_DELAY {
            delta += 0.02;
        }
        v.prob += delta;
        if !(g.bound)(&mut v.prob, delta) {
            update_prob = false;
        }
        if qdelay.is_zero() && qdelay_old.is_zero() && update_prob {
            v.prob = (g.decay)(v.prob);
        }
        v.qdelay = qdelay;
        let half = self.target / 2;
        if v.qdelay < half
            && v.qdelay_old < half
            && v.prob == 0.0
            && (self.estimator != Estimator::DqRate || v.avg_dq_rate > 0.0)
        {
            (g.restart)(self, v);
        }
        if per_packet {
            v.qdelay_old = qdelay;
        }
    }

    /// `pie_process_dequeue` without the rate estimator: the timestamp delay sample, and
    /// the burst allowance consumed by the time between dequeues.
    pub(super) fn dequeue_linux_timestamp(
        &self,
        v: &mut PieVars,
        est: Estimator,
        sojourn: SimDuration,
        backlog_after: u64,
        now: SimTime,
    ) {
        if est == Estimator::Timestamp {
            v.qdelay = if backlog_after == 0 {
                SimDuration::ZERO
            } else {
                sojourn
            };
        }
        let dtime = v
            .dq_tstamp
            .map(|t| now.saturating_since(t))
            .unwrap_or(SimDuration::ZERO);
        v.dq_tstamp = Some(now);
        if !dtime.is_zero() {
            v.burst_allowance = v.burst_allowance.saturating_sub(dtime);
        }
    }

    /// Linux departure-rate estimator (`pie_process_dequeue` with `dq_rate_estimator`).
    pub(super) fn dq_rate_linux(&self, v: &mut PieVars, size: u32, backlog: u64, now: SimTime) {
        let thr = self.dq_threshold;
        if backlog >= thr && v.dq_count.is_none() {
            v.dq_tstamp = Some(now);
            v.dq_count = Some(0);
        }
        let Some(count) = v.dq_count else { return };
        let count = count + size as u64;
        v.dq_count = Some(count);
        if count < thr {
            return;
        }
        let start = v.dq_tstamp.unwrap_or(now);
        let dtime = now.saturating_since(start);
        if dtime.is_zero() {
            return;
        }
        let rate = count as f64 / dtime.as_nanos() as f64;
        v.avg_dq_rate = if v.avg_dq_rate == 0.0 {
            rate
        } else {
            v.avg_dq_rate * 7.0 / 8.0 + rate / 8.0
        };
        if backlog < thr {
            v.dq_count = None;
        } else {
            v.dq_count = Some(0);
            v.dq_tstamp = Some(now);
        }
        v.burst_allowance = v.burst_allowance.saturating_sub(dtime);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::PieVariant;
    use super::*;

    /// One update of today's Linux PIE in each auto-tuning band, timestamp mode, target
    /// 15 ms, qdelay 25 ms, qdelay_old 20 ms:
    ///   base step = 0.125·(0.025−0.015) + 1.25·(0.025−0.020) = 0.00125 + 0.00625 = 0.0075
    /// divided by 1 (p ≥ 10 %), 2 (1 % ≤ p < 10 %), 8 (0.1 % ≤ p < 1 %), 32, 128, 512, 2048.
    #[test]
    fn linux_update_in_each_autotune_band() {
        let pp = params(PieVariant::Linux);
        let cases: [(f64, f64); 7] = [
            (0.2, 1.0),
            (0.05, 2.0),
            (0.005, 8.0),
            (0.0005, 32.0),
            (0.00005, 128.0),
            (0.000005, 512.0),
            (0.0, 2048.0),
        ];
        for (p0, div) in cases {
            let mut v = pp.new_vars();
            v.prob = p0;
            v.qdelay = ms(25);
            v.qdelay_old = ms(20);
            pp.update(&mut v, 100_000);
            let want = p0 + 0.0075 / div;
            assert!(
                (v.prob - want).abs() < 1e-9,
                "p0 {p0}: got {} want {want}",
                v.prob
            );
            assert_eq!(v.qdelay_old, ms(25));
        }
    }

    #[test]
    fn linux_caps_step_at_two_percent_and_adds_two_above_250ms() {
        let pp = params(PieVariant::Linux);
        // p = 0.3, qdelay 100 ms, old 50 ms: step 0.125·0.085 + 1.25·0.05 = 0.073125 → 0.02.
        let mut v = pp.new_vars();
        v.prob = 0.3;
        v.qdelay = ms(100);
        v.qdelay_old = ms(50);
        pp.update(&mut v, 1_000_000);
        assert!((v.prob - 0.32).abs() < 1e-12);
        // Below 10 % there is no cap: p = 0.05, step 0.073125/2 = 0.0365625.
        let mut v = pp.new_vars();
        v.prob = 0.05;
        v.qdelay = ms(100);
        v.qdelay_old = ms(50);
        pp.update(&mut v, 1_000_000);
        assert!((v.prob - (0.05 + 0.0365625)).abs() < 1e-9);
        // qdelay 300 ms, old 300 ms, p = 0.5: step 0.125·0.285 = 0.035625 → capped 0.02,
        // plus 0.02 for the 250 ms rule: 0.54.
        let mut v = pp.new_vars();
        v.prob = 0.5;
        v.qdelay = ms(300);
        v.qdelay_old = ms(300);
        pp.update(&mut v, 1_000_000);
        assert!((v.prob - 0.54).abs() < 1e-9);
        // Linux lets p pass 1 (56-bit fixed point in a u64).
        let mut v = pp.new_vars();
        v.prob = 0.99;
        v.qdelay = ms(300);
        v.qdelay_old = ms(300);
        pp.update(&mut v, 1_000_000);
        assert!((v.prob - 1.03).abs() < 1e-9);
    }

    #[test]
    fn linux_decays_and_resets_when_idle() {
        let pp = params(PieVariant::Linux);
        let mut v = pp.new_vars();
        v.prob = 0.5;
        v.burst_allowance = SimDuration::ZERO;
        // Empty queue for two updates: step = 0.125·(0 − 0.015) = −0.001875 (no tuning at
        // p ≥ 10 %), then p −= p/64.
        pp.update(&mut v, 0);
        let p1 = (0.5 - 0.001875) * 63.0 / 64.0;
        assert!((v.prob - p1).abs() < 1e-12);
        // Run until p reaches 0: then the variables are re-initialised (burst re-armed).
        for _ in 0..2000 {
            pp.update(&mut v, 0);
        }
        assert_eq!(v.prob, 0.0);
        assert_eq!(v.burst_allowance, ms(150));
        let before = v;
        pp.update(&mut v, 0);
        assert_eq!(v, before, "idle state is a fixed point");
    }

    #[test]
    fn linux_dq_rate_estimator() {
        let mut pp = params(PieVariant::Linux);
        pp.estimator = Estimator::DqRate;
        let mut v = pp.new_vars();
        v.burst_allowance = ms(150);
        // Backlog stays ≥ 16384 B; 1000-byte packets leave every 0.8 ms (10 Mbit/s).
        let mut now = SimTime::from_nanos(1_000_000_000);
        let mut backlog = 40_000u64;
        backlog -= 1000;
        pp.on_dequeue(&mut v, 1000, ms(1), backlog, now); // starts the cycle, counts 1000
        assert_eq!(v.dq_count, Some(1000));
        for _ in 0..16 {
            now += SimDuration::from_micros(800);
            backlog -= 1000;
            pp.on_dequeue(&mut v, 1000, ms(1), backlog, now);
        }
        // 17000 B counted over 16·0.8 ms = 12.8 ms: rate 1.328125 B/µs, cycle restarted.
        assert!((v.avg_dq_rate - 17_000.0 / 12_800_000.0).abs() < 1e-12);
        assert_eq!(v.dq_count, Some(0));
        assert_eq!(
            v.burst_allowance,
            ms(150) - SimDuration::from_micros(12_800)
        );
        // A second cycle of 17 packets (count 0 + 17·1000 over 13.6 ms) averages with 1/8.
        for _ in 0..17 {
            now += SimDuration::from_micros(800);
            pp.on_dequeue(&mut v, 1000, ms(1), 30_000, now);
        }
        let r2 = 17_000.0 / 13_600_000.0;
        let want = (17_000.0 / 12_800_000.0) * 7.0 / 8.0 + r2 / 8.0;
        assert!((v.avg_dq_rate - want).abs() < 1e-12);
        // The delay estimate is backlog / rate.
        v.qdelay = ms(10);
        pp.update(&mut v, 25_000);
        assert_eq!(v.qdelay.as_nanos(), (25_000.0 / v.avg_dq_rate) as u64);
        assert_eq!(v.qdelay_old, ms(10));
    }

    /// Timestamp mode: the delay sample is the sojourn (0 once empty); the allowance runs
    /// down by the time between dequeues.
    #[test]
    fn timestamp_dequeue_consumes_burst_by_elapsed_time() {
        let pp = params(PieVariant::Linux);
        let mut v = pp.new_vars();
        pp.on_dequeue(&mut v, 1500, ms(4), 3000, SimTime::from_nanos(10_000_000));
        assert_eq!((v.qdelay, v.burst_allowance), (ms(4), ms(150)));
        pp.on_dequeue(&mut v, 1500, ms(5), 0, SimTime::from_nanos(13_000_000));
        assert_eq!((v.qdelay, v.burst_allowance), (SimDuration::ZERO, ms(147)));
    }
}
