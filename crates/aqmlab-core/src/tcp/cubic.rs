//! CUBIC (RFC 9438) as Linux implements it (`net/ipv4/tcp_cubic.c`).
//!
//! Principles:
//! - After a reduction the window follows W(t) = C·(t − K)³ + W_max, with
//!   K = ∛((W_max − cwnd_epoch)/C): concave up to the previous maximum, flat around it,
//!   convex beyond. Linux evaluates the curve one minimum RTT ahead (t + delay_min), in
//!   integer arithmetic with time in 2⁻¹⁰ s units, and turns the distance to the target
//!   into `cnt` = segments to acknowledge per one-segment increase (at least 2, so the
//!   window grows at most 1.5× per RTT).
//! - Linux constants: β = 717/1024 ≈ 0.7, C = 410/1024 ≈ 0.4 (bic_scale 41 × 10),
//!   fast convergence on (W_max = cwnd·(1 + β)/2 when a reduction comes below the last
//!   maximum), TCP-friendly region on (an emulated Reno window growing
//!   3(1 − β)/(1 + β) segments per RTT; CUBIC never grows slower than it), cnt ≤ 20
//!   while no maximum is known.
//! - HyStart (on by default): in slow start from 16 segments on, leave slow start
//!   (ssthresh = cwnd) when an ACK train of closely spaced ACKs (≤ 2 ms apart) lasts
//!   longer than half the minimum RTT, or when the minimum RTT of the first 8 ACKs of a
//!   round exceeds the overall minimum by clamp(min/8, 4 ms, 16 ms).
//! - Time: Linux's jiffies are taken at HZ = 1000 (1 ms); HyStart uses microseconds.
//!
//! Deviations: the cube root is exact (Linux uses a table lookup and one Newton step,
//! within 0.2 %); HyStart's TSO/GRO cushion (`hystart_ack_delay`) is zero because no
//! segmentation offload is modelled.

use super::cc::{AckSample, CcBuild, CcParams, CongestionControl, Window};
use super::config::CaGrowth;
use crate::time::{SimDuration, SimTime};

/// β scaled by 1024 (Linux `beta = 717`).
pub const BETA: u32 = 717;
const BETA_SCALE: u32 = 1024;
/// C scaled by 1024 (Linux `cube_rtt_scale = bic_scale * 10 = 410`, C ≈ 0.4).
pub const C_SCALED: u64 = 410;
/// 2⁴⁰ / 410: turns W_max − cwnd into K³ in (2⁻¹⁰ s)³ units (Linux `cube_factor`).
pub const CUBE_FACTOR: u64 = (1u64 << 40) / C_SCALED;
/// ack_cnt per emulated Reno increment, ×8 (Linux `beta_scale`): 8(1+β)/3/(1−β) = 15.
const FRIENDLY_SCALE: u32 = 8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA);
const HZ: u64 = 1000;
/// Linux < 4.0 `ACK_RATIO_SHIFT`: the delayed-ACK ratio is kept ×16.
const ACK_RATIO_SHIFT: u32 = 4;
/// Linux `ACK_RATIO_LIMIT` (32 segments per ACK, ×16).
const ACK_RATIO_LIMIT: i32 = 32 << ACK_RATIO_SHIFT;
const HYSTART_LOW_WINDOW: u32 = 16;
const HYSTART_ACK_DELTA_US: u64 = 2000;
const HYSTART_MIN_SAMPLES: u8 = 8;
const HYSTART_DELAY_MIN_US: u32 = 4000;
const HYSTART_DELAY_MAX_US: u32 = 16000;

fn jiffies(t: SimTime) -> u64 {
    t.as_nanos() / 1_000_000
}
fn micros(t: SimTime) -> u64 {
    t.as_nanos() / 1_000
}

/// ⌊∛a⌋ by integer Newton iteration from above.
pub fn cubic_root(a: u64) -> u32 {
    if a == 0 {
        return 0;
    }
    let bits = 64 - a.leading_zeros();
    let mut x: u64 = 1 << bits.div_ceil(3);
    loop {
        let y = (2 * x + a / (x * x)) / 3;
        if y >= x {
            return x as u32;
        }
        x = y;
    }
}

/// CUBIC state (Linux `struct bictcp`).
#[derive(Clone, Debug)]
pub struct Cubic {
    hystart: bool,
    /// Segments to acknowledge per one-segment increase.
    pub cnt: u32,
    /// W_max in segments (0: unknown).
    pub last_max_cwnd: u32,
    last_cwnd: u32,
    last_time: u64,
    /// Window at the origin of the curve (W_max or cwnd at epoch start).
    pub origin: u32,
    /// K in 2⁻¹⁰ s.
    pub k: u32,
    /// Minimum RTT in µs (0: none yet).
    pub delay_min: u32,
    /// Start of the current epoch in jiffies (None: no epoch).
    pub epoch_start: Option<u64>,
    ack_cnt: u32,
    /// The emulated Reno window of the TCP-friendly region.
    pub tcp_cwnd: u32,
    /// HyStart found the exit point.
    pub found: bool,
    round_start: u64,
    end_seq: u64,
    last_ack: u64,
    curr_rtt: u32,
    sample_cnt: u8,
    /// Segments per ACK ×16, a 1/16-gain average (Linux < 4.0 `delayed_ack`, kept by
    /// `bictcp_acked`); used only with per-ACK counting (`ca_growth = "acks-linux"`).
    pub delayed_ack: i32,
}

impl Cubic {
    pub fn new(hystart: bool) -> Self {
        Cubic {
            hystart,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            origin: 0,
            k: 0,
            delay_min: 0,
            epoch_start: None,
            ack_cnt: 0,
            tcp_cwnd: 0,
            found: false,
            round_start: 0,
            end_seq: 0,
            last_ack: 0,
            curr_rtt: u32::MAX,
            sample_cnt: 0,
            delayed_ack: 2 << ACK_RATIO_SHIFT,
        }
    }

    fn reset(&mut self) {
        let h = self.hystart;
        *self = Cubic {
            hystart: h,
            ..Cubic::new(h)
        };
    }

    fn hystart_reset(&mut self, now: SimTime, snd_nxt: u64) {
        self.round_start = micros(now);
        self.last_ack = self.round_start;
        self.end_seq = snd_nxt;
        self.curr_rtt = u32::MAX;
        self.sample_cnt = 0;
    }

    /// W_cubic at `t` (2⁻¹⁰ s since the epoch start), in segments.
    pub fn w_cubic(&self, t: u64) -> u32 {
        let k = self.k as u64;
        let offs = t.abs_diff(k) as u128;
        let delta = ((C_SCALED as u128 * offs * offs * offs) >> 40).min(u32::MAX as u128) as u32;
        if t < k {
            self.origin.saturating_sub(delta)
        } else {
            self.origin.saturating_add(delta)
        }
    }

    /// Linux `bictcp_update`: recomputes `cnt` for the current window. With per-ACK
    /// counting (Linux < 4.0) `ack_cnt` counts ACKs, and `cnt` is divided by the measured
    /// delayed-ACK ratio with a floor of 1 instead of the later floor of 2.
    fn update(&mut self, cwnd: u32, acked: u32, now: SimTime, growth: CaGrowth) {
        let now_j = jiffies(now);
        let per_ack = growth != CaGrowth::Segments;
        self.ack_cnt = self.ack_cnt.saturating_add(if per_ack { 1 } else { acked });
        if self.last_cwnd == cwnd && now_j.saturating_sub(self.last_time) <= HZ / 32 {
            return;
        }
        // The curve is evaluated at most once per jiffy; every reduction clears the
        // epoch and so forces a fresh evaluation.
        if !(self.epoch_start.is_some() && now_j == self.last_time) {
            self.last_cwnd = cwnd;
            self.last_time = now_j;
            if self.epoch_start.is_none() {
                self.epoch_start = Some(now_j);
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.k = 0;
                    self.origin = cwnd;
                } else {
                    self.k = cubic_root(CUBE_FACTOR * (self.last_max_cwnd - cwnd) as u64);
                    self.origin = self.last_max_cwnd;
                }
            }
            // Evaluate one minimum RTT ahead (RFC 9438 §4.2 target W_cubic(t + RTT)).
            let epoch = self.epoch_start.unwrap_or(now_j);
            let ahead = (self.delay_min as u64).div_ceil(1000); // µs → jiffies, rounded up
            let t = ((now_j.saturating_sub(epoch) + ahead) << 10) / HZ;
            let target = self.w_cubic(t);
            self.cnt = if target > cwnd {
                cwnd / (target - cwnd)
            } else {
                100 * cwnd
            };
            if self.last_max_cwnd == 0 && self.cnt > 20 {
                self.cnt = 20; // no maximum known yet: grow at least 5 % per RTT
            }
        }
        // TCP-friendly region (RFC 9438 §4.3).
        let delta = ((cwnd as u64 * FRIENDLY_SCALE as u64) >> 3).max(1) as u32;
        while self.ack_cnt > delta {
            self.ack_cnt -= delta;
            self.tcp_cwnd += 1;
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
        if per_ack {
            let ratio = self.delayed_ack.max(1) as u64;
            self.cnt = (((self.cnt as u64) << ACK_RATIO_SHIFT) / ratio).max(1) as u32;
        } else {
            self.cnt = self.cnt.max(2);
        }
    }

    /// Linux `cubictcp_recalc_ssthresh`.
    fn recalc_ssthresh(&mut self, w: &Window) -> u32 {
        self.epoch_start = None;
        self.last_max_cwnd = if w.cwnd < self.last_max_cwnd {
            // Fast convergence: release bandwidth to newer flows.
            ((w.cwnd as u64 * (BETA_SCALE + BETA) as u64) / (2 * BETA_SCALE as u64)) as u32
        } else {
            w.cwnd
        };
        (((w.cwnd as u64 * BETA as u64) / BETA_SCALE as u64) as u32).max(2)
    }

    fn hystart_update(&mut self, w: &mut Window, delay: u32, a: &AckSample) {
        if a.snd_una > self.end_seq {
            self.hystart_reset(a.now, a.snd_nxt);
        }
        let now = micros(a.now);
        // ACK train: closely spaced ACKs for longer than half the minimum RTT.
        if now.saturating_sub(self.last_ack) <= HYSTART_ACK_DELTA_US {
            self.last_ack = now;
            let threshold = (self.delay_min >> 1) as u64;
            if now.saturating_sub(self.round_start) > threshold {
                self.found = true;
                w.ssthresh = w.cwnd;
            }
        }
        // Delay increase over the round's first samples.
        self.curr_rtt = self.curr_rtt.min(delay);
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.sample_cnt += 1;
        } else {
            let thresh = (self.delay_min >> 3).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US);
            if self.curr_rtt > self.delay_min.saturating_add(thresh) {
                self.found = true;
                w.ssthresh = w.cwnd;
            }
        }
    }
}

impl CcBuild for Cubic {
    fn build(p: &CcParams) -> Self {
        Cubic::new(p.hystart)
    }
}

impl CongestionControl for Cubic {
    fn init(&mut self, _w: &mut Window, now: SimTime, snd_nxt: u64) {
        self.reset();
        if self.hystart {
            self.hystart_reset(now, snd_nxt);
        }
    }

    fn on_delivery(&mut self, w: &mut Window, a: &AckSample) {
        let Some(rtt) = a.rtt else { return };
        // Discard delay samples right after a reduction.
        if let Some(e) = self.epoch_start {
            if jiffies(a.now).saturating_sub(e) < HZ {
                return;
            }
        }
        let delay = (rtt.as_nanos() / 1000).clamp(1, u32::MAX as u64) as u32;
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        if !self.found && w.in_slow_start() && self.hystart && w.cwnd >= HYSTART_LOW_WINDOW {
            self.hystart_update(w, delay, a);
        }
    }

    fn on_ack(&mut self, w: &mut Window, a: &AckSample) {
        if w.ca != CaGrowth::Segments && a.acked > 0 {
            // Linux < 4.0 `bictcp_acked` (open state): ratio += acked − ratio/16.
            let d = self.delayed_ack + a.acked as i32 - (self.delayed_ack >> ACK_RATIO_SHIFT);
            self.delayed_ack = d.clamp(1, ACK_RATIO_LIMIT);
        }
        let Some(acked) = w.limited_slow_start(a) else {
            return;
        };
        self.update(w.cwnd, acked, a.now, w.ca);
        let cnt = self.cnt;
        w.cong_avoid_ai(cnt, acked);
    }

    fn on_loss(&mut self, w: &Window, _now: SimTime) -> u32 {
        self.recalc_ssthresh(w)
    }

    fn on_rto(&mut self, w: &Window, now: SimTime, snd_nxt: u64, reduce: bool) -> Option<u32> {
        let s = reduce.then(|| self.recalc_ssthresh(w));
        // Linux set_state(TCP_CA_Loss): forget the curve and restart HyStart.
        self.reset();
        self.hystart_reset(now, snd_nxt);
        s
    }

    fn on_tx_start(&mut self, now: SimTime, idle: SimDuration) {
        // Application-limited idle period: shift the epoch so the curve does not jump.
        if let Some(e) = self.epoch_start {
            let now_j = jiffies(now);
            let delta = now_j - jiffies(now - idle);
            if delta > 0 {
                self.epoch_start = Some((e + delta).min(now_j));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_ms(ms: u64) -> SimTime {
        SimTime::from_nanos(ms * 1_000_000)
    }
    fn ack(now: SimTime, acked: u32) -> AckSample {
        AckSample {
            now,
            acked,
            rtt: None,
            snd_una: 0,
            snd_nxt: 0,
            cwnd_limited: true,
            ce: 0,
            srtt: None,
            rs: Default::default(),
        }
    }

    #[test]
    fn cube_root_is_exact_floor() {
        for a in [
            0u64,
            1,
            7,
            8,
            26,
            27,
            28,
            999,
            1000,
            1001,
            u32::MAX as u64,
            1 << 60,
            u64::MAX,
        ] {
            let r = cubic_root(a) as u128;
            assert!(
                r * r * r <= a as u128 && (r + 1) * (r + 1) * (r + 1) > a as u128,
                "cbrt({a}) = {r}"
            );
        }
        assert_eq!(FRIENDLY_SCALE, 15);
        assert_eq!(CUBE_FACTOR, 2_681_735_677);
    }

    #[test]
    fn k_and_window_curve_hand_computed() {
        // Loss at cwnd = 100 with no previous maximum: W_max = 100, ssthresh = ⌊100·717/1024⌋ = 70.
        let mut c = Cubic::new(false);
        let mut w = Window::new(100, 100_000);
        c.init(&mut w, SimTime::ZERO, 0);
        let ss = c.on_loss(&w, SimTime::ZERO);
        assert_eq!((ss, c.last_max_cwnd), (70, 100));
        w.cwnd = 70;
        w.ssthresh = 70;
        // First ACK in congestion avoidance starts the epoch at t = 10 s.
        c.on_ack(&mut w, &ack(at_ms(10_000), 1));
        // K = ∛((100 − 70)/C) with C = 410/1024: ∛74.927 = 4.2149 s = 4316.1 units of 2⁻¹⁰ s.
        assert_eq!(c.k, 4316);
        assert_eq!(c.origin, 100);
        assert_eq!(c.epoch_start, Some(10_000));
        // W(0) = W_max − ⌊C·K³⌋ = 100 − ⌊29.98⌋ = 71 (integer truncation, as Linux);
        // W(K) = 100; W(K + 1 s) = 100 + ⌊0.4004⌋ = 100; W(K + 3 s) = 100 + ⌊0.4004·27⌋ = 110;
        // W(K/2) = 100 − ⌊0.4004·2.1074³⌋ = 100 − ⌊3.75⌋ = 97.
        assert_eq!(c.w_cubic(0), 71);
        assert_eq!(c.w_cubic(4316), 100);
        assert_eq!(c.w_cubic(4316 + 1024), 100);
        assert_eq!(c.w_cubic(4316 + 3 * 1024), 110);
        assert_eq!(c.w_cubic(4316 / 2), 97);
        // Fast convergence: a new loss below W_max = 100 at cwnd 90 sets W_max = 90·1741/2048 = 76.
        w.cwnd = 90;
        let ss = c.on_loss(&w, at_ms(20_000));
        assert_eq!((ss, c.last_max_cwnd, c.epoch_start), (63, 76, None));
    }

    #[test]
    fn window_growth_follows_the_curve_over_time() {
        // Drive one epoch with one ACK per ms at cwnd acknowledged per RTT (100 ms) and
        // compare cwnd with the curve: it must reach W_max near t = K and stay below
        // W(t + RTT) + 1 throughout.
        let mut c = Cubic::new(false);
        let mut w = Window::new(100, 100_000);
        c.init(&mut w, SimTime::ZERO, 0);
        w.ssthresh = c.on_loss(&w, SimTime::ZERO);
        w.cwnd = w.ssthresh;
        c.delay_min = 100_000;
        let mut acked_frac = 0.0f64;
        let mut at_k = 0;
        for ms in 1..=8000u64 {
            // cwnd segments per 100 ms → cwnd/100 per ms.
            acked_frac += w.cwnd as f64 / 100.0;
            let n = acked_frac as u32;
            acked_frac -= n as f64;
            c.on_ack(&mut w, &ack(at_ms(ms), n));
            let t_units = ((ms - 1 + 100) << 10) / 1000;
            assert!(
                w.cwnd <= c.w_cubic(t_units).max(w.ssthresh) + 2,
                "t={ms}ms cwnd {} above curve {}",
                w.cwnd,
                c.w_cubic(t_units)
            );
            if ms == 4216 {
                at_k = w.cwnd;
            }
        }
        assert!((97..=101).contains(&at_k), "cwnd at K = {at_k}");
        assert!(w.cwnd > 105, "convex growth beyond W_max: {}", w.cwnd);
    }

    #[test]
    fn tcp_friendly_region_dominates_small_windows() {
        // With a tiny W_max − cwnd the cubic curve is flat; the emulated Reno window
        // (≈ 0.53 segment per RTT) must still grow cwnd.
        let mut c = Cubic::new(false);
        let mut w = Window::new(10, 100_000);
        c.init(&mut w, SimTime::ZERO, 0);
        w.ssthresh = c.on_loss(&w, SimTime::ZERO);
        w.cwnd = w.ssthresh; // 7
        c.delay_min = 10_000;
        let start = w.cwnd;
        // 20 RTTs of 10 ms, cwnd segments acknowledged per RTT, one ACK per segment.
        let mut t = 0;
        for _ in 0..20 {
            for _ in 0..w.cwnd {
                t += 10_000 / w.cwnd as u64;
                c.on_ack(&mut w, &ack(SimTime::from_nanos(t * 1000), 1));
            }
        }
        assert!(
            w.cwnd >= start + 8,
            "cwnd {} after 20 RTTs from {start}",
            w.cwnd
        );
    }

    #[test]
    fn hystart_delay_exit() {
        let mut c = Cubic::new(true);
        let mut w = Window::new(10, 100_000);
        c.init(&mut w, SimTime::ZERO, 1);
        let rtt = |ms| Some(SimDuration::from_millis(ms));
        let mut s = AckSample {
            now: at_ms(100),
            acked: 1,
            rtt: rtt(100),
            snd_una: 2,
            snd_nxt: 100_000,
            cwnd_limited: true,
            ce: 0,
            srtt: None,
            rs: Default::default(),
        };
        c.on_delivery(&mut w, &s);
        assert_eq!(c.delay_min, 100_000);
        w.cwnd = 32;
        // A new round whose 8 first samples show 120 ms > 100 + clamp(12.5, 4, 16) ms: exit.
        for i in 0..9 {
            s.now = at_ms(200 + 5 * i);
            s.snd_una = 30_000 + i;
            s.rtt = rtt(120);
            c.on_delivery(&mut w, &s);
            assert_eq!(c.found, i == 8, "sample {i}");
        }
        assert_eq!(w.ssthresh, 32);
        // Samples 110 ms < 100 + 12.5 do not trigger.
        let mut c2 = Cubic::new(true);
        let mut w2 = Window::new(32, 100_000);
        c2.init(&mut w2, SimTime::ZERO, 1);
        c2.delay_min = 100_000;
        for i in 0..20 {
            s.now = at_ms(300 + 5 * i);
            s.rtt = rtt(110);
            c2.on_delivery(&mut w2, &s);
        }
        assert!(!c2.found);
    }

    #[test]
    fn per_ack_cubic_scales_cnt_by_the_delayed_ack_ratio() {
        use crate::tcp::config::SsGrowth;
        // bictcp_acked: ratio += acked − ratio/16 from 2·16 = 32. ACKs of 2 keep it at 32;
        // ACKs of 4 raise it by 4 − 2, 4 − 2, ... until ratio/16 = 4 at 64; ACKs of one
        // segment settle at 31 (31/16 = 1 in integer arithmetic), as in the kernel.
        let ratio_after = |acked: u32, n: usize| {
            let mut c = Cubic::new(false);
            let mut w = Window::with_growth(10, 100_000, SsGrowth::Acks, CaGrowth::AcksLinux);
            w.ssthresh = 5;
            for i in 0..n {
                let mut a = ack(at_ms(i as u64), acked);
                a.cwnd_limited = false;
                c.on_ack(&mut w, &a);
            }
            c.delayed_ack
        };
        assert_eq!(ratio_after(2, 50), 32);
        assert_eq!(ratio_after(4, 100), 64);
        assert_eq!(ratio_after(1, 100), 31);
        // Same state, same ACK of 2 segments: the per-ACK control divides cnt by the ratio
        // (32/16 = 2), so per ACK it grows as fast as the per-segment control per segment.
        let mut seg = Cubic::new(false);
        let mut old = Cubic::new(false);
        let mut ws = Window::new(100, 100_000);
        let mut wo = Window::with_growth(100, 100_000, SsGrowth::Acks, CaGrowth::AcksLinux);
        for (c, w) in [(&mut seg, &mut ws), (&mut old, &mut wo)] {
            c.init(w, SimTime::ZERO, 0);
            w.ssthresh = c.on_loss(w, SimTime::ZERO);
            w.cwnd = 80;
            c.delay_min = 100_000;
            c.on_ack(w, &ack(at_ms(1000), 2));
        }
        assert!(seg.cnt >= 4, "cnt {}", seg.cnt);
        assert_eq!(old.cnt, seg.cnt * 16 / 32);
    }
}
