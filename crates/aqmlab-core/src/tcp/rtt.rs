//! Round-trip time estimation and the retransmission timeout (RFC 6298).
//!
//! SRTT and RTTVAR follow RFC 6298 §2 exactly (α = 1/8, β = 1/4, first sample
//! SRTT = R, RTTVAR = R/2), in integer nanoseconds. The timeout itself follows Linux
//! (`tcp_set_rto`): the floor `min_rto` applies to the variance term, not to the sum,
//!
//! ```text
//!     RTO = SRTT + max(4·RTTVAR, min_rto),   capped at 120 s (TCP_RTO_MAX)
//! ```
//!
//! where RFC 6298 (2.4) takes max(min_rto, SRTT + 4·RTTVAR). With Linux's 200 ms floor a
//! 50 ms path therefore times out after about 250 ms, as a Linux sender does.
//! Deviation: Linux also holds its variance term at its per-flight maximum and decays
//! it once per RTT (`mdev_max_us`); the RFC's smoothing is used instead.
//! Exponential backoff doubles the timeout per expiry (RFC 6298 5.5) and is cleared by
//! the next valid RTT sample (Linux `tcp_ack_update_rtt`).
//!
//! With `rtt_timing = "ns2"` the estimator is ns-2's instead (ns-2.35 `tcp/tcp.cc`,
//! `rtt_update`, `rtt_timeout`, `rtt_backoff`; see [`RttTiming`](super::RttTiming)):
//! samples counted in 10 ms ticks of a clock with a random phase, SRTT and RTTVAR in
//! fixed point, the floor on the whole timeout, at most 60 s.

use crate::time::{SimDuration, SimTime};

/// Upper bound of the timeout (Linux TCP_RTO_MAX; RFC 6298 allows ≥ 60 s).
pub const MAX_RTO: SimDuration = SimDuration::from_secs(120);

/// ns-2's TCP clock granularity (`Agent/TCP set tcpTick_ 0.01`).
pub const NS2_TICK: SimDuration = SimDuration::from_millis(10);
/// ns-2's upper bound of the timeout (`Agent/TCP set maxrto_ 60`).
pub const NS2_MAX_RTO: SimDuration = SimDuration::from_secs(60);

/// ns-2's retransmit-timer state (`RttTiming::Ns2`).
#[derive(Clone, Debug)]
struct Ns2Clock {
    /// `boot_time_`: the phase of the sender's tick clock, in [0, tick) nanoseconds.
    boot: u64,
    /// `t_srtt_`: SRTT in ticks with 3 fractional bits; 0 = no estimate.
    srtt8: i64,
    /// `t_rttvar_`: RTTVAR in ticks with 2 fractional bits.
    rttvar4: i64,
    /// `t_rtxcur_`: SRTT + 4·RTTVAR in whole ticks (the initial RTO before a sample).
    rtxcur: SimDuration,
}

/// RTT estimator and RTO computation of one sender. Laid out in declaration order
/// (`repr(C)`), 64-byte aligned: what every segment reads (the estimator in use, SRTT,
/// the timeout) in the first cache line, the rest of a sample's update in the second.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct RttEstimator {
    /// `rtt_timing = "ns2"`: ns-2's estimator replaces the RFC 6298 one.
    ns2: Option<Ns2Clock>,
    srtt: Option<SimDuration>,
    /// [`RttEstimator::compute_rto`] of the current state: every method that changes
    /// an input of it refreshes it (the timeout is read on every ACK and segment).
    rto: SimDuration,
    rttvar: SimDuration,
    min_rtt: SimDuration,
    latest: SimDuration,
    min_rto: SimDuration,
    backoff: u32,
    /// `rto_floor = "sum"`: RFC 6298 (2.4) max(min_rto, SRTT + 4·RTTVAR).
    floor_on_sum: bool,
    initial_rto: SimDuration,
}

impl RttEstimator {
    pub fn new(min_rto: SimDuration, initial_rto: SimDuration) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: SimDuration::ZERO,
            min_rtt: SimDuration::MAX,
            latest: SimDuration::ZERO,
            min_rto,
            initial_rto,
            backoff: 0,
            floor_on_sum: false,
            ns2: None,
            rto: SimDuration::ZERO,
        }
        .refreshed()
    }

    fn refreshed(mut self) -> Self {
        self.refresh();
        self
    }

    #[inline]
    fn refresh(&mut self) {
        self.rto = self.compute_rto();
    }

    /// ns-2's estimator (`rtt_timing = "ns2"`), with the clock's phase at 0 until
    /// [`RttEstimator::set_ns2_phase`].
    pub fn with_ns2_clock(mut self, on: bool) -> Self {
        self.ns2 = on.then_some(Ns2Clock {
            boot: 0,
            srtt8: 0,
            rttvar4: 0,
            rtxcur: self.initial_rto,
        });
        self.refreshed()
    }

    /// True with ns-2's estimator.
    pub fn is_ns2(&self) -> bool {
        self.ns2.is_some()
    }

    /// ns-2 draws each agent's clock phase uniformly in one tick (`boot_time_ =
    /// Random::uniform(tcp_tick_)`); `r` is a uniform 64-bit draw.
    pub fn set_ns2_phase(&mut self, r: u64) {
        if let Some(c) = &mut self.ns2 {
            c.boot = r % NS2_TICK.as_nanos();
        }
    }

    /// ns-2 `rtt_update` for the timed segment sent at `sent` and acknowledged at
    /// `now`: the ticks of the sender's clock between the two instants (at least one),
    /// smoothed in fixed point; clears the backoff.
    pub fn sample_ns2(&mut self, sent: SimTime, now: SimTime) {
        let tao = now.saturating_since(sent);
        self.latest = tao;
        self.min_rtt = self.min_rtt.min(tao);
        self.backoff = 0;
        let Some(c) = &mut self.ns2 else {
            self.refresh();
            return;
        };
        let tick = NS2_TICK.as_nanos();
        // ticks that have started between the send and now on a clock of phase `boot`
        let tickoff = (sent.as_nanos() + c.boot) % tick;
        let m = (((tao.as_nanos() + tickoff) / tick) as i64).max(1);
        if c.srtt8 != 0 {
            let mut delta = m - (c.srtt8 >> 3);
            c.srtt8 += delta;
            if c.srtt8 <= 0 {
                c.srtt8 = 1;
            }
            delta = delta.abs() - (c.rttvar4 >> 2);
            c.rttvar4 += delta;
            if c.rttvar4 <= 0 {
                c.rttvar4 = 1;
            }
        } else {
            c.srtt8 = m << 3;
            c.rttvar4 = m << 1;
        }
        // (rttvar << (rttvar_exp 2 + 3 − 2) + srtt) >> 3: SRTT + 4·RTTVAR, whole ticks
        let ticks = ((c.rttvar4 << 3) + c.srtt8) >> 3;
        c.rtxcur = SimDuration::from_nanos(ticks as u64 * tick);
        self.refresh();
    }

    /// Clears the timeout backoff without a sample (ns-2 Sack1 on a partial ACK in
    /// fast recovery: `t_backoff_ = 1`).
    pub fn clear_backoff(&mut self) {
        self.backoff = 0;
        self.refresh();
    }

    /// RFC 6298 (2.4) form: `min_rto` bounds the whole timeout (ns-2, ns-3).
    pub fn with_floor_on_sum(mut self, on_sum: bool) -> Self {
        self.floor_on_sum = on_sum;
        self.refreshed()
    }

    /// Takes one RTT measurement (RFC 6298 2.2 / 2.3) and clears the backoff.
    pub fn sample(&mut self, r: SimDuration) {
        let r = r.max(SimDuration::from_nanos(1));
        self.latest = r;
        self.min_rtt = self.min_rtt.min(r);
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let (s, rn) = (s.as_nanos(), r.as_nanos());
                let err = s.abs_diff(rn);
                // RTTVAR is updated with the old SRTT, then SRTT (RFC 6298 2.3 order).
                self.rttvar = SimDuration::from_nanos((3 * self.rttvar.as_nanos() + err) / 4);
                self.srtt = Some(SimDuration::from_nanos((7 * s + rn) / 8));
            }
        }
        self.backoff = 0;
        self.refresh();
    }

    /// Smoothed RTT, if any sample was taken (ns-2's: whole eighths of a tick, none
    /// again after the backoff forgot it).
    pub fn srtt(&self) -> Option<SimDuration> {
        match &self.ns2 {
            None => self.srtt,
            Some(c) => (c.srtt8 > 0)
                .then(|| SimDuration::from_nanos(c.srtt8 as u64 * NS2_TICK.as_nanos() / 8)),
        }
    }
    pub fn rttvar(&self) -> SimDuration {
        match &self.ns2 {
            None => self.rttvar,
            Some(c) => SimDuration::from_nanos(c.rttvar4.max(0) as u64 * NS2_TICK.as_nanos() / 4),
        }
    }
    /// Smallest sample so far (`SimDuration::MAX` before the first).
    pub fn min_rtt(&self) -> SimDuration {
        self.min_rtt
    }
    pub fn latest(&self) -> SimDuration {
        self.latest
    }
    pub fn backoff(&self) -> u32 {
        self.backoff
    }

    /// The timeout without backoff.
    pub fn base_rto(&self) -> SimDuration {
        if let Some(c) = &self.ns2 {
            // rtt_timeout with rfc2988_: the floor before the backoff
            return c.rtxcur.max(self.min_rto);
        }
        match self.srtt {
            None => self.initial_rto,
            Some(s) if self.floor_on_sum => (s + self.rttvar * 4).max(self.min_rto).min(MAX_RTO),
            Some(s) => (s + (self.rttvar * 4).max(self.min_rto)).min(MAX_RTO),
        }
    }

    /// The timeout to arm now: the base timeout doubled per backoff step, capped.
    #[inline]
    pub fn rto(&self) -> SimDuration {
        self.rto
    }

    /// [`RttEstimator::rto`] computed from the estimator's state.
    fn compute_rto(&self) -> SimDuration {
        // ns-2: at most maxrto_, at least two ticks (rtt_timeout)
        let (cap, floor) = if self.ns2.is_some() {
            (NS2_MAX_RTO, NS2_TICK * 2)
        } else {
            (MAX_RTO, SimDuration::ZERO)
        };
        let t = if self.backoff >= 20 {
            cap
        } else {
            (self.base_rto() * (1u64 << self.backoff)).min(cap)
        };
        t.max(floor)
    }

    /// The timer expired: back off (RFC 6298 5.5).
    pub fn on_timeout(&mut self) {
        if self.ns2.is_none() {
            self.backoff = (self.backoff + 1).min(30);
            self.refresh();
            return;
        }
        // rtt_backoff: double while t_backoff_ < 64 or the timeout is below maxrto_;
        // past 8 (a fourth doubling) the SRTT is folded into RTTVAR and forgotten
        if self.backoff < 6 || self.rto() < NS2_MAX_RTO {
            self.backoff = (self.backoff + 1).min(30);
        }
        if self.backoff > 3 {
            let c = self.ns2.as_mut().expect("checked above");
            c.rttvar4 += c.srtt8 >> 3;
            c.srtt8 = 0;
        }
        self.refresh();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every segment reads which estimator runs, SRTT and the timeout: the first line.
    #[test]
    fn layout_puts_the_per_segment_fields_first() {
        use std::mem::{align_of, offset_of, size_of};
        assert_eq!(align_of::<RttEstimator>(), 64);
        for off in [
            offset_of!(RttEstimator, ns2),
            offset_of!(RttEstimator, srtt),
            offset_of!(RttEstimator, rto) + size_of::<SimDuration>() - 1,
        ] {
            assert_eq!(off / 64, 0, "offset {off}");
        }
    }

    #[test]
    fn kept_timeout_equals_the_computed_one_after_every_change() {
        // a pseudo-random walk of samples, timeouts and cleared backoffs over every
        // flavour: the timeout read is the one computed from the state
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut backed_off = 0;
        for (ns2, on_sum) in [(false, false), (false, true), (true, false), (true, true)] {
            let mut e = RttEstimator::new(ms(200), ms(1000))
                .with_floor_on_sum(on_sum)
                .with_ns2_clock(ns2);
            e.set_ns2_phase(next());
            assert_eq!(e.rto(), e.compute_rto());
            let mut now = SimTime::from_nanos(1_000_000_000);
            for _ in 0..2000 {
                let r = SimDuration::from_nanos(1 + next() % 400_000_000);
                match next() % 8 {
                    0..=3 => e.sample(r),
                    4 | 5 => {
                        e.sample_ns2(now, now + r);
                        now += r;
                    }
                    6 => {
                        e.on_timeout();
                        backed_off += (e.backoff() > 0) as u32;
                    }
                    _ => e.clear_backoff(),
                }
                assert_eq!(e.rto(), e.compute_rto(), "ns2 {ns2} floor on sum {on_sum}");
            }
        }
        assert!(backed_off > 100, "the walk backs off ({backed_off})");
    }

    fn ms(x: u64) -> SimDuration {
        SimDuration::from_millis(x)
    }

    #[test]
    fn rfc6298_smoothing_hand_worked() {
        let mut e = RttEstimator::new(ms(200), ms(1000));
        assert_eq!(e.rto(), ms(1000), "initial RTO before any sample");
        // First sample R = 100 ms: SRTT = 100, RTTVAR = 50; RTO = 100 + max(200, 200) = 300.
        e.sample(ms(100));
        assert_eq!(e.srtt(), Some(ms(100)));
        assert_eq!(e.rttvar(), ms(50));
        assert_eq!(e.rto(), ms(300));
        // R' = 200: RTTVAR = 3/4·50 + 1/4·|100 − 200| = 62.5; SRTT = 7/8·100 + 1/8·200 = 112.5.
        e.sample(ms(200));
        assert_eq!(e.rttvar(), SimDuration::from_micros(62_500));
        assert_eq!(e.srtt(), Some(SimDuration::from_micros(112_500)));
        // RTO = 112.5 + 4·62.5 = 362.5 ms (variance term above the floor).
        assert_eq!(e.rto(), SimDuration::from_micros(362_500));
        // A run of equal samples shrinks RTTVAR geometrically until the floor applies.
        for _ in 0..40 {
            e.sample(ms(100));
        }
        let s = e.srtt().unwrap();
        assert!(s.as_nanos().abs_diff(100_000_000) < 100_000, "srtt {s}");
        assert_eq!(e.rto(), s + ms(200), "Linux form: SRTT + min_rto");
        assert_eq!(e.min_rtt(), ms(100));
    }

    /// ns-2's estimator (`rtt_update`, `rtt_timeout`, `rtt_backoff` of ns-2.35
    /// `tcp/tcp.cc`), worked by hand in ticks of 10 ms.
    #[test]
    fn ns2_clock_ticks_fixed_point_and_backoff() {
        let t = |x: u64| SimTime::from_nanos(x * 1_000_000);
        let mut e = RttEstimator::new(ms(200), ms(3000))
            .with_floor_on_sum(true)
            .with_ns2_clock(true);
        assert_eq!(e.rto(), ms(3000), "rtxcur_init_ before a sample");
        // A clock phase of 7 ms: a segment sent at 0 and acknowledged at 95 ms saw ten
        // ticks start (at 3, 13, ..., 93 ms): t_rtt_ = int((95 + 7) / 10) = 10.
        e.set_ns2_phase(7_000_000 + 5 * 10_000_000);
        e.sample_ns2(t(0), t(95));
        assert_eq!((e.srtt(), e.rttvar()), (Some(ms(100)), ms(50)));
        // (t_rttvar_ 20 << 3) + t_srtt_ 80 = 240, >> 3 = 30 ticks
        assert_eq!(e.rto(), ms(300));
        // 40 ms sent at 1 ms: (40 + 8) / 10 = 4 ticks; delta −6: t_srtt_ 74;
        // t_rttvar_ 20 + (6 − 5) = 21; (168 + 74) >> 3 = 30 ticks.
        e.sample_ns2(t(1), t(41));
        assert_eq!(e.srtt(), Some(SimDuration::from_micros(92_500)));
        assert_eq!(e.rto(), ms(300));
        // A run of 1 ms samples counts one tick each (never zero). The fixed point
        // truncates: t_srtt_ stops at 15 (delta = 1 − (15 >> 3) = 0), an SRTT of
        // 1.875 ticks, and t_rttvar_ at 3; RTO = (24 + 15) >> 3 = 4 ticks, under the
        // floor, which bounds the whole timeout.
        for i in 0..60 {
            e.sample_ns2(t(1000 + 10 * i), t(1000 + 10 * i + 1));
        }
        assert_eq!(e.srtt(), Some(SimDuration::from_micros(18_750)));
        assert_eq!(e.rttvar(), SimDuration::from_micros(7_500));
        assert_eq!(e.rto(), ms(200));
        // Backoff: doubling per timeout; the fourth forgets the SRTT (folded into
        // RTTVAR); the cap is maxrto_ 60 s and doubling stops there.
        for k in 1..=3 {
            e.on_timeout();
            assert_eq!(e.rto(), ms(200 << k));
            assert!(e.srtt().is_some());
        }
        e.on_timeout();
        assert_eq!((e.rto(), e.srtt()), (ms(3200), None));
        for _ in 0..20 {
            e.on_timeout();
        }
        assert_eq!((e.rto(), e.backoff()), (NS2_MAX_RTO, 9));
        // The next sample starts the estimate afresh and clears the backoff.
        e.sample_ns2(t(5000), t(5100));
        assert_eq!(
            (e.srtt(), e.rto(), e.backoff()),
            (Some(ms(100)), ms(300), 0)
        );
    }

    #[test]
    fn backoff_doubles_caps_and_clears() {
        let mut e = RttEstimator::new(ms(200), ms(1000));
        e.on_timeout();
        assert_eq!(e.rto(), ms(2000));
        e.on_timeout();
        assert_eq!(e.rto(), ms(4000));
        for _ in 0..10 {
            e.on_timeout();
        }
        assert_eq!(e.rto(), MAX_RTO);
        e.sample(ms(50));
        assert_eq!(e.backoff(), 0);
        // 50 + max(4·25, 200) = 250 ms
        assert_eq!(e.rto(), ms(250));
        // RFC-like floor of 1 s applied to the variance term.
        let mut r = RttEstimator::new(ms(1000), ms(1000));
        r.sample(ms(50));
        assert_eq!(r.rto(), ms(1050));
        // RFC 6298 (2.4) / ns-3: the floor bounds the sum: max(1 s, 50 + 4·25) = 1 s;
        // with a 400 ms sample (RTTVAR 200): 400 + 800 = 1.2 s is above the floor.
        let mut r = RttEstimator::new(ms(1000), ms(1000)).with_floor_on_sum(true);
        r.sample(ms(50));
        assert_eq!(r.rto(), ms(1000));
        let mut r = RttEstimator::new(ms(1000), ms(1000)).with_floor_on_sum(true);
        r.sample(ms(400));
        assert_eq!(r.rto(), ms(1200));
    }
}
