//! TCP Prague, as the L4S team's Linux tree implements it (`net/ipv4/tcp_prague.c`,
//! module version 0.7, the one maintained for 6.x kernels), in its fractional-window
//! mode.
//!
//! What makes it a scalable control for the L4S low-latency queue (RFC 9331 §4):
//! - **ECT(1) and Accurate ECN**: data goes out as ECT(1) and the sender sees the
//!   count of CE-marked segments on every ACK (`AckSample::ce`).
//! - **DCTCP-like response with a fractional window**: `frac_cwnd` is cwnd × 2^20.
//!   Once per round trip alpha ← alpha·(1 − g) + F·g with g = 1/16 (kept upscaled by
//!   1/g as Linux does, so remainders carry over); entering CWR cuts
//!   `frac_cwnd` by alpha/2; every ACK grows it by `acked_not_CE × ai / cwnd`, so a
//!   flow under a steady marking probability p grows by (1 − p)/p per RTT instead of
//!   saturating. The integer cwnd follows `frac_cwnd` one segment per ACK
//!   (`prague_update_cwnd` "adjust"), and ssthresh follows cwnd down, which is how
//!   Prague leaves slow start: the first mark halves `frac_cwnd`
//!   (`prague_alpha_mode = 0`, alpha starts at 0).
//! - **Owns the window**: Prague is a `cong_control` module, so Linux applies neither
//!   PRR nor the cwnd = ssthresh step at the end of a reduction to it.
//! - **RTT independence** (`prague_rtt_scaling`, RTT_CONTROL_RATE): after
//!   `rtt_transition` (4) rounds of congestion avoidance, a flow with srtt below the
//!   25 ms target grows by (srtt/target)² segments per round (the rate growth of a
//!   flow at the target RTT), updates alpha and reduces at most once per target RTT.
//! - **Pacing** at cwnd × MTU / srtt, ×2 while cwnd < ssthresh / 2 (Prague's own
//!   100 % / 200 % rate).
//! - **Fallbacks**: without ECN it is Reno (`prague_reno`). The classic-ECN AQM
//!   detection of the earlier tree (module 0.6, `prague_ecn_fallback = 1`) is offered
//!   as `ecn_fallback = true`: a score rises with the RTT variation (log2 of mdev over
//!   ~750 µs) and the queueing delay (log2 of srtt − min_rtt over ~2 ms) seen each
//!   round, and above its L4S region alpha is held at least 0.625 × (score − 8), so
//!   Prague backs off like a classic flow in a classic ECN queue. The tree computes
//!   the logarithms in integer arithmetic with carried remainders; this model uses
//!   `f64::log2` with the same weights, references and clamps.
//!
//! Not modelled: the rate-based mode for windows below 4 MTU (`prague_cwnd_mode = 2`
//! switches to it only there), MTU adaptation and TSO burst sizing, the ±3 % pacing
//! modulation of the rate-based mode.

use super::cc::{AckSample, CcBuild, CcParams, CongestionControl, Window};
use super::config::{RttScaling, TcpConfig};
use crate::time::{SimDuration, SimTime};

/// Fixed point of `frac_cwnd` (`CWND_UNIT`).
const CWND_UNIT: u32 = 20;
const ONE_CWND: u64 = 1 << CWND_UNIT;
/// Fixed point of alpha (`PRAGUE_ALPHA_BITS`).
pub const ALPHA_BITS: u32 = 24;
pub const MAX_ALPHA: u64 = 1 << ALPHA_BITS;
/// g = 1/2^4.
const SHIFT_G: u32 = 4;
/// `MIN_CWND_RTT`.
const MIN_CWND: u32 = 2;
/// `MTU_SYS`: the additive increase is per 1500-byte packet.
const MTU_SYS: u64 = 1500;
/// `MAX_SCALED_RTT`: no RTT scaling above 100 ms.
const MAX_SCALED_RTT: SimDuration = SimDuration::from_millis(100);

/// Classic-ECN detection score bounds, in alpha units (module 0.6: V = D = 1/2,
/// L_STICKY = 16·V, CLASSIC_ECN = L_STICKY + 1, C_STICKY = CLASSIC_ECN + L_STICKY).
const L_STICKY: f64 = 8.0;
const CLASSIC_ECN: f64 = L_STICKY + 1.0;
const C_STICKY: f64 = CLASSIC_ECN + L_STICKY;
/// Reference RTT variation (~750 µs) and queue depth (~2 ms) of the detection.
const V0_US: f64 = 750.0;
const D0_US: f64 = 2000.0;

#[derive(Clone, Debug, PartialEq)]
pub struct Prague {
    ecn_ok: bool,
    /// alpha / g in 2^-24 units (Linux `upscaled_alpha`).
    pub upscaled_alpha: u64,
    /// cwnd × 2^20.
    pub frac_cwnd: u64,
    /// Additive increase per acknowledged non-CE 1500-byte packet, × 2^20 (before
    /// division by cwnd).
    pub ai_ack_increase: u64,
    loss_frac_cwnd: u64,
    delivered: u32,
    delivered_ce: u32,
    next_seq: u64,
    /// Rounds since slow start ended.
    pub round: u32,
    pub saw_ce: bool,
    in_loss: bool,
    cwr_stamp: SimTime,
    alpha_stamp: SimTime,
    srtt: Option<SimDuration>,
    mss: u32,
    /// IP + TCP header bytes of a full segment.
    hdr: u32,
    rtt_scaling: RttScaling,
    rtt_target: SimDuration,
    rtt_transition: u32,
    // classic-ECN detection (opt-in)
    fallback: bool,
    /// Detection score in alpha units (0 ..= 17); above 8 the path looks classic.
    pub classic_ecn: f64,
    srtt_pace_us: f64,
    mdev_pace_us: f64,
    min_rtt_us: f64,
    last_rtt_us: f64,
}

impl Prague {
    pub fn new(cfg: &TcpConfig) -> Self {
        Self::build(&CcParams::from_config(cfg))
    }
}

impl CcBuild for Prague {
    fn build(cfg: &CcParams) -> Self {
        Prague {
            ecn_ok: true,
            upscaled_alpha: 0,
            frac_cwnd: (cfg.init_cwnd as u64) << CWND_UNIT,
            ai_ack_increase: ONE_CWND,
            loss_frac_cwnd: 0,
            delivered: 0,
            delivered_ce: 0,
            next_seq: 0,
            round: 0,
            saw_ce: false,
            in_loss: false,
            cwr_stamp: SimTime::ZERO,
            alpha_stamp: SimTime::ZERO,
            srtt: None,
            mss: cfg.mss,
            hdr: cfg.header,
            rtt_scaling: cfg.rtt_scaling,
            rtt_target: cfg.rtt_target,
            rtt_transition: cfg.rtt_transition,
            fallback: cfg.ecn_fallback,
            classic_ecn: 0.0,
            srtt_pace_us: 0.0,
            mdev_pace_us: 0.0,
            min_rtt_us: f64::INFINITY,
            last_rtt_us: 0.0,
        }
    }
}

impl Prague {
    /// alpha as a fraction in [0, 1].
    pub fn alpha(&self) -> f64 {
        (self.upscaled_alpha >> SHIFT_G) as f64 / MAX_ALPHA as f64
    }

    fn mtu(&self) -> u64 {
        self.mss as u64 + self.hdr as u64
    }

    fn frac_to_cwnd(&self, clamp: u32) -> u32 {
        (((self.frac_cwnd + ONE_CWND - 1) >> CWND_UNIT) as u32)
            .max(MIN_CWND)
            .min(clamp)
    }

    fn is_rtt_indep(&self, w: &Window) -> bool {
        self.rtt_scaling != RttScaling::None
            && !w.in_slow_start()
            && self.round >= self.rtt_transition
    }

    /// `prague_ai_ack_increase`: (srtt / target)² × 2^20 below the target once RTT
    /// independent, else one segment.
    fn update_ai(&mut self) {
        self.ai_ack_increase = ONE_CWND;
        if self.rtt_scaling == RttScaling::None || self.round < self.rtt_transition {
            return;
        }
        let Some(srtt) = self.srtt else { return };
        let (rtt, target) = (srtt.as_nanos() as u128, self.rtt_target.as_nanos() as u128);
        if rtt == 0 || srtt > MAX_SCALED_RTT || rtt >= target {
            return;
        }
        let num = (rtt << CWND_UNIT) * rtt;
        let div = target * target;
        self.ai_ack_increase = ((num + div / 2) / div) as u64;
    }

    fn new_round(&mut self, w: &Window, snd_nxt: u64) {
        self.next_seq = snd_nxt;
        self.delivered = 0;
        self.delivered_ce = 0;
        if !w.in_slow_start() {
            self.round = self.round.saturating_add(1);
        }
        self.update_ai();
    }

    /// `prague_update_alpha`.
    fn update_alpha(&mut self, w: &Window, now: SimTime, snd_nxt: u64) {
        if self.saw_ce {
            if self.fallback {
                self.classic_ecn_detection();
            }
            let mut ecn = self.delivered_ce as u64;
            if ecn > 0 {
                ecn = (ecn << ALPHA_BITS) / self.delivered.max(1) as u64;
            }
            let a = self.upscaled_alpha - (self.upscaled_alpha >> SHIFT_G) + ecn;
            self.upscaled_alpha = a.min(MAX_ALPHA << SHIFT_G);
            self.alpha_stamp = now;
        }
        self.new_round(w, snd_nxt);
    }

    /// Module 0.6's classic-ECN AQM detection, once per round (see the module doc).
    fn classic_ecn_detection(&mut self) {
        if self.srtt_pace_us <= 0.0 || !self.min_rtt_us.is_finite() {
            return;
        }
        let mut c = self.classic_ecn;
        c += 0.5 * (self.mdev_pace_us.max(1.0) / V0_US).log2();
        let depth = self.srtt_pace_us - self.min_rtt_us;
        if depth > 0.0 {
            // queue build-up only moves the score towards classic
            c += (0.5 * (depth / D0_US).log2()).max(0.0);
        }
        self.classic_ecn = c.clamp(0.0, C_STICKY);
    }

    /// The low-gain RTT estimator of the detection (`prague_rtt_estimator`): gain
    /// 1/2^shift with shift = 1.5·log2(cwnd) + 1 (at most 18), so a round trip's worth
    /// of samples moves the average by about one sample.
    fn rtt_sample(&mut self, rtt: SimDuration, cwnd: u32) {
        let m = rtt.as_nanos() as f64 / 1000.0;
        self.last_rtt_us = m;
        self.min_rtt_us = self.min_rtt_us.min(m);
        if !self.fallback {
            return;
        }
        let lg = 31 - cwnd.max(1).leading_zeros();
        let shift = (lg + (lg >> 1) + 1).min(18);
        let g = 1.0 / (1u64 << shift) as f64;
        let gm = g / 2.0;
        if self.srtt_pace_us == 0.0 {
            self.srtt_pace_us = m;
            self.mdev_pace_us = 0.0;
        } else {
            let err = m - self.srtt_pace_us;
            self.srtt_pace_us += g * err;
            self.mdev_pace_us += gm * (err.abs() - self.mdev_pace_us);
        }
    }

    fn enter_cwr(&mut self, w: &Window, now: SimTime) {
        if self.is_rtt_indep(w) && now.saturating_since(self.cwr_stamp) < self.rtt_target {
            return;
        }
        self.cwr_stamp = now;
        let mut alpha = self.upscaled_alpha >> SHIFT_G;
        if self.fallback && self.classic_ecn > L_STICKY {
            // prague_classic_ecn_fallback: hold alpha at ≥ ~0.6 × the classic score.
            let c = (self.classic_ecn.min(CLASSIC_ECN) - L_STICKY) * 0.625;
            alpha = alpha.max((c * MAX_ALPHA as f64) as u64);
        }
        let reduction = ((alpha as u128 * self.frac_cwnd as u128 + MAX_ALPHA as u128)
            >> (ALPHA_BITS + 1)) as u64;
        self.frac_cwnd -= reduction.min(self.frac_cwnd);
    }

    fn enter_loss(&mut self) {
        self.loss_frac_cwnd = self.frac_cwnd;
        self.frac_cwnd -= self.frac_cwnd >> 1;
        self.in_loss = true;
    }

    fn reno_ssthresh(w: &Window) -> u32 {
        (w.cwnd / 2).max(2)
    }
}

impl CongestionControl for Prague {
    fn init(&mut self, w: &mut Window, now: SimTime, snd_nxt: u64) {
        self.frac_cwnd = (w.cwnd as u64) << CWND_UNIT;
        self.alpha_stamp = now;
        self.round = 0;
        self.new_round(w, snd_nxt);
    }

    fn set_ecn_ok(&mut self, ok: bool) {
        self.ecn_ok = ok;
    }

    fn on_delivery(&mut self, w: &mut Window, a: &AckSample) {
        if let Some(r) = a.rtt {
            self.rtt_sample(r, w.cwnd);
        }
    }

    fn cong_control(&mut self, w: &mut Window, a: &AckSample) -> bool {
        if !self.ecn_ok {
            return false; // prague_reno
        }
        self.srtt = a.srtt.or(self.srtt);
        self.delivered += a.acked;
        self.delivered_ce += a.ce;
        // prague_update_cwnd
        let mut acked = a.acked as i64;
        if a.ce > 0 {
            if !self.saw_ce {
                // alpha_mode 0: the first mark halves the window.
                self.frac_cwnd = (self.frac_cwnd + 1) >> 1;
            }
            self.saw_ce = true;
            acked -= a.ce as i64;
        }
        let mut adjust_only = acked <= 0 || self.in_loss || !a.cwnd_limited;
        if !adjust_only && w.in_slow_start() {
            acked = w.slow_start(acked as u32) as i64;
            self.frac_cwnd = (w.cwnd as u64) << CWND_UNIT;
            if acked == 0 {
                self.update_ai();
                adjust_only = true;
            }
        }
        if !adjust_only {
            let mut inc = acked as u64 * self.ai_ack_increase;
            if self.frac_cwnd > 0 {
                let wide = (inc as u128) << CWND_UNIT;
                inc = ((wide + self.frac_cwnd as u128 / 2) / self.frac_cwnd as u128) as u64;
            }
            inc = inc * MTU_SYS / self.mtu();
            self.frac_cwnd += inc.max(acked as u64);
        }
        // adjust: the integer window follows one segment per ACK.
        let target = self.frac_to_cwnd(w.clamp);
        if w.cwnd > target {
            w.cwnd -= 1;
            w.ssthresh = w.cwnd;
            self.update_ai();
        } else if w.cwnd < target {
            w.cwnd += 1;
            self.update_ai();
        }
        // prague_should_update_ewma
        if a.snd_una >= self.next_seq
            && (!self.is_rtt_indep(w)
                || a.now.saturating_since(self.alpha_stamp) >= self.rtt_target)
        {
            self.update_alpha(w, a.now, a.snd_nxt);
        }
        true
    }

    fn on_ack(&mut self, w: &mut Window, a: &AckSample) {
        // Only without ECN (prague_reno): tcp_reno_cong_avoid.
        if let Some(acked) = w.limited_slow_start(a) {
            let cwnd = w.cwnd;
            w.cong_avoid_ai(cwnd, acked);
        }
    }

    fn on_open(&mut self) {
        self.in_loss = false;
    }

    fn owns_cwnd(&self) -> bool {
        self.ecn_ok
    }

    fn on_loss(&mut self, w: &Window, _now: SimTime) -> u32 {
        if !self.ecn_ok {
            return Self::reno_ssthresh(w);
        }
        self.enter_loss();
        w.ssthresh // prague_ssthresh leaves it alone
    }

    fn on_ecn(&mut self, w: &Window, now: SimTime) -> u32 {
        if !self.ecn_ok {
            return Self::reno_ssthresh(w);
        }
        self.enter_cwr(w, now);
        w.ssthresh
    }

    fn on_rto(&mut self, w: &Window, _now: SimTime, _snd_nxt: u64, reduce: bool) -> Option<u32> {
        if !self.ecn_ok {
            return reduce.then(|| Self::reno_ssthresh(w));
        }
        // CA_EVENT_LOSS → prague_enter_loss; ssthresh untouched.
        self.enter_loss();
        None
    }

    fn pacing_rate(&self, w: &Window, srtt: SimDuration, mtu: u32) -> Option<f64> {
        if !self.ecn_ok {
            return None;
        }
        let s = srtt.as_secs_f64();
        if s <= 0.0 {
            return None;
        }
        let cwnd = self.frac_cwnd as f64 / ONE_CWND as f64;
        let mut rate = (mtu as f64 * cwnd / s).max(12_500.0); // MINIMUM_RATE 100 kbit/s
        if w.cwnd < w.ssthresh / 2 {
            rate *= 2.0;
        }
        Some(rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::config::TcpOptions;

    fn cfg(f: impl FnOnce(&mut TcpOptions)) -> TcpConfig {
        let mut o = TcpOptions {
            cc: Some(super::super::config::CcKind::Prague),
            mss: Some(1448),
            ..Default::default()
        };
        f(&mut o);
        o.resolve("tcp").unwrap()
    }
    fn ack(now_ms: u64, acked: u32, ce: u32, una: u64, nxt: u64) -> AckSample {
        AckSample {
            now: SimTime::from_nanos(now_ms * 1_000_000),
            acked,
            rtt: Some(SimDuration::from_millis(20)),
            snd_una: una,
            snd_nxt: nxt,
            cwnd_limited: true,
            ce,
            srtt: Some(SimDuration::from_millis(20)),
            rs: Default::default(),
        }
    }

    #[test]
    fn first_mark_halves_then_alpha_ewma_and_cwr_cut() {
        let mut p = Prague::new(&cfg(|_| {}));
        let mut w = Window::new(10, 10_000);
        p.init(&mut w, SimTime::ZERO, 11);
        // Slow start: 10 ACKs of one segment double the window, frac follows.
        for k in 1..=10 {
            assert!(p.cong_control(&mut w, &ack(20, 1, 0, 1 + k, 21)));
        }
        assert_eq!(w.cwnd, 20);
        assert_eq!(p.frac_cwnd, 20 << CWND_UNIT);
        // The first CE halves frac_cwnd (alpha_mode 0); cwnd then steps down one per ACK
        // and ssthresh follows it, which ends slow start.
        p.cong_control(&mut w, &ack(40, 1, 1, 22, 41));
        assert!(p.saw_ce);
        assert_eq!(p.frac_cwnd, 10 << CWND_UNIT);
        assert_eq!((w.cwnd, w.ssthresh), (19, 19));
        // alpha: the slow-start round ended at snd_una = 11 (no CE yet: no update);
        // the marked ACK ends the next round alone, F = 1/1:
        // upscaled = 0 − 0 + (1 << 24), alpha = upscaled >> 4 = 1/16.
        assert_eq!(p.upscaled_alpha, 1u64 << 24);
        assert_eq!(p.alpha(), 1.0 / 16.0);
        // A CWR entry cuts frac_cwnd by alpha/2 with Linux's rounding.
        let before = p.frac_cwnd;
        let alpha = p.upscaled_alpha >> 4;
        p.on_ecn(&w, SimTime::from_nanos(40_000_000));
        let red = (alpha as u128 * before as u128 + (1u128 << 24)) >> 25;
        assert_eq!(p.frac_cwnd, before - red as u64);
        let want = before as f64 * (1.0 - p.alpha() / 2.0);
        assert!((p.frac_cwnd as f64 - want).abs() < 2.0);
    }

    #[test]
    fn additive_increase_is_one_segment_per_round_and_unsaturated() {
        let mut p = Prague::new(&cfg(|o| o.rtt_scaling = Some(RttScaling::None)));
        let mut w = Window::new(10, 10_000);
        p.init(&mut w, SimTime::ZERO, 1);
        w.ssthresh = 10;
        p.saw_ce = true;
        // A round of 10 unmarked segments: + one segment (MTU 1500 = MTU_SYS).
        let f0 = p.frac_cwnd;
        for k in 0..10 {
            p.cong_control(&mut w, &ack(1, 1, 0, 2 + k, 100));
        }
        let grown = (p.frac_cwnd - f0) as f64 / ONE_CWND as f64;
        assert!((grown - 1.0).abs() < 0.06, "{grown}");
        // With half the segments marked only the unmarked half counts.
        let f1 = p.frac_cwnd;
        for k in 0..10 {
            p.cong_control(&mut w, &ack(2, 1, (k % 2) as u32, 12 + k, 100));
        }
        let grown = (p.frac_cwnd - f1) as f64 / ONE_CWND as f64;
        assert!((grown - 0.5).abs() < 0.06, "{grown}");
    }

    #[test]
    fn rtt_independence_scales_the_increase_below_the_target() {
        let mut p = Prague::new(&cfg(|_| {}));
        let mut w = Window::new(10, 10_000);
        p.init(&mut w, SimTime::ZERO, 1);
        w.ssthresh = 5;
        p.srtt = Some(SimDuration::from_millis(10));
        p.round = 4;
        p.update_ai();
        // (10 / 25)² = 0.16 of a segment per round.
        let want = (0.16 * ONE_CWND as f64).round() as u64;
        assert_eq!(p.ai_ack_increase, want);
        p.srtt = Some(SimDuration::from_millis(40));
        p.update_ai();
        assert_eq!(p.ai_ack_increase, ONE_CWND, "no scaling above the target");
        // Reductions at most once per target RTT while RTT independent.
        p.srtt = Some(SimDuration::from_millis(10));
        p.upscaled_alpha = MAX_ALPHA << 4;
        let t0 = SimTime::from_nanos(1_000_000_000);
        p.on_ecn(&w, t0);
        let after = p.frac_cwnd;
        p.on_ecn(&w, t0 + SimDuration::from_millis(10));
        assert_eq!(p.frac_cwnd, after, "second CWR within 25 ms ignored");
        p.on_ecn(&w, t0 + SimDuration::from_millis(25));
        assert!(p.frac_cwnd < after);
    }

    #[test]
    fn without_ecn_it_is_reno() {
        let mut p = Prague::new(&cfg(|_| {}));
        p.set_ecn_ok(false);
        let mut w = Window::new(10, 10_000);
        p.init(&mut w, SimTime::ZERO, 1);
        assert!(!p.cong_control(&mut w, &ack(1, 1, 0, 2, 20)));
        w.cwnd = 40;
        assert_eq!(p.on_ecn(&w, SimTime::ZERO), 20);
        assert_eq!(p.pacing_rate(&w, SimDuration::from_millis(10), 1500), None);
    }

    #[test]
    fn classic_ecn_detection_raises_alpha_floor_in_a_deep_classic_queue() {
        let mut p = Prague::new(&cfg(|o| o.ecn_fallback = Some(true)));
        let mut w = Window::new(50, 10_000);
        p.init(&mut w, SimTime::ZERO, 1);
        p.saw_ce = true;
        // min RTT 20 ms; samples swing 30–40 ms: a 15 ms standing queue, ms jitter.
        p.rtt_sample(SimDuration::from_millis(20), 50);
        for r in 0..40 {
            for k in 0..50 {
                let ms = if (r + k) % 2 == 0 { 30 } else { 40 };
                p.rtt_sample(SimDuration::from_millis(ms), 50);
            }
            p.classic_ecn_detection();
        }
        assert!(
            p.classic_ecn > CLASSIC_ECN - 1e-9,
            "score {}",
            p.classic_ecn
        );
        // alpha 0 but the fallback cuts like a classic flow: by 0.625/2.
        p.upscaled_alpha = 0;
        let f = p.frac_cwnd;
        p.on_ecn(&w, SimTime::ZERO);
        let cut = 1.0 - p.frac_cwnd as f64 / f as f64;
        assert!((cut - 0.3125).abs() < 0.01, "{cut}");
        // A shallow, smooth L4S queue: the score decays to 0.
        let mut q = Prague::new(&cfg(|o| o.ecn_fallback = Some(true)));
        q.rtt_sample(SimDuration::from_millis(20), 50);
        for _ in 0..40 {
            for k in 0..50 {
                q.rtt_sample(SimDuration::from_micros(20_200 + (k % 2) * 100), 50);
            }
            q.classic_ecn_detection();
        }
        assert_eq!(q.classic_ecn, 0.0);
    }
}
