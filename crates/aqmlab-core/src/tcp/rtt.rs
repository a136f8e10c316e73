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

use crate::time::SimDuration;

/// Upper bound of the timeout (Linux TCP_RTO_MAX; RFC 6298 allows ≥ 60 s).
pub const MAX_RTO: SimDuration = SimDuration::from_secs(120);

/// RTT estimator and RTO computation of one sender.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<SimDuration>,
    rttvar: SimDuration,
    min_rtt: SimDuration,
    latest: SimDuration,
    min_rto: SimDuration,
    initial_rto: SimDuration,
    backoff: u32,
    /// `rto_floor = "sum"`: RFC 6298 (2.4) max(min_rto, SRTT + 4·RTTVAR).
    floor_on_sum: bool,
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
        }
    }

    /// RFC 6298 (2.4) form: `min_rto` bounds the whole timeout (ns-2, ns-3).
    pub fn with_floor_on_sum(mut self, on_sum: bool) -> Self {
        self.floor_on_sum = on_sum;
        self
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
    }

    /// Smoothed RTT, if any sample was taken.
    pub fn srtt(&self) -> Option<SimDuration> {
        self.srtt
    }
    pub fn rttvar(&self) -> SimDuration {
        self.rttvar
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
        match self.srtt {
            None => self.initial_rto,
            Some(s) if self.floor_on_sum => (s + self.rttvar * 4).max(self.min_rto).min(MAX_RTO),
            Some(s) => (s + (self.rttvar * 4).max(self.min_rto)).min(MAX_RTO),
        }
    }

    /// The timeout to arm now: the base timeout doubled per backoff step, capped.
    pub fn rto(&self) -> SimDuration {
        let b = self.base_rto();
        if self.backoff >= 20 {
            return MAX_RTO;
        }
        (b * (1u64 << self.backoff)).min(MAX_RTO)
    }

    /// The timer expired: back off (RFC 6298 5.5).
    pub fn on_timeout(&mut self) {
        self.backoff = (self.backoff + 1).min(30);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
