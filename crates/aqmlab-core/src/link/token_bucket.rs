//! The token bucket shared by the link shaper (tbf/htb-like) and the DOCSIS service-flow
//! regulator.
//!
//! Principles:
//! - Tokens are counted in **nano-bits** (10⁻⁹ bit): a rate of `r` bit/s adds exactly
//!   `r` nano-bits per nanosecond and a byte costs 8·10⁹ nano-bits, so refill, charge
//!   and "when will the bucket hold enough" are exact integer arithmetic. (Linux keeps
//!   tokens as nanoseconds of transmission time, which rounds once per packet; here
//!   nothing rounds except the wake-up instant, which rounds *up* so a wake-up is never
//!   early.)
//! - The bucket starts full, like a freshly configured tbf/htb class or a DOCSIS service
//!   flow that has been idle.
//! - The core never reads a clock: every call takes `now`.
//! - Two ways to spend tokens: **strict** (`conforms` then `charge`: a packet leaves only
//!   if the bucket holds its full size, so the output obeys
//!   `bytes(any window T) ≤ depth + rate·T` exactly — tbf and the DOCSIS regulator) and
//!   **debt** (`may_send` then `charge`: a packet leaves whenever the bucket is not
//!   negative and may drive it negative by up to one packet — htb's `tokens >= 0` test
//!   with charging after dequeue).

use crate::time::{Rate, SimDuration, SimTime};

/// Nano-bits per byte.
const PER_BYTE: i128 = 8 * 1_000_000_000;

/// A token bucket with rate `rate` and depth `depth_bytes`. Laid out in declaration
/// order (`repr(C)`): the state a refill and a test read and write (tokens, depth, last
/// refill) is the first 40 bytes, the rate follows.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct TokenBucket {
    /// Current tokens in nano-bits (negative = debt, only in debt mode).
    tokens: i128,
    /// Bucket depth in nano-bits.
    depth: i128,
    /// Instant up to which `tokens` is accounted.
    last: SimTime,
    rate: Rate,
}

impl TokenBucket {
    /// A full bucket at time zero.
    pub fn new(rate: Rate, depth_bytes: u64) -> Self {
        let depth = depth_bytes as i128 * PER_BYTE;
        TokenBucket {
            rate,
            depth,
            tokens: depth,
            last: SimTime::ZERO,
        }
    }

    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// Bucket depth in bytes.
    pub fn depth_bytes(&self) -> u64 {
        (self.depth / PER_BYTE) as u64
    }

    /// Tokens in bytes (rounded down; negative while in debt).
    pub fn tokens_bytes(&self) -> i64 {
        (self.tokens.div_euclid(PER_BYTE)) as i64
    }

    /// Adds the tokens earned since the last call, capped at the depth.
    #[inline]
    pub fn refill(&mut self, now: SimTime) {
        if now > self.last {
            let dt = (now - self.last).as_nanos() as i128;
            self.tokens = (self.tokens + dt * self.rate.bps() as i128).min(self.depth);
            self.last = now;
        }
    }

    /// Strict test: does the bucket hold `bytes` now?
    #[inline]
    pub fn conforms(&mut self, now: SimTime, bytes: u64) -> bool {
        self.refill(now);
        self.tokens >= bytes as i128 * PER_BYTE
    }

    /// Debt test (htb): is the bucket not negative now?
    #[inline]
    pub fn may_send(&mut self, now: SimTime) -> bool {
        self.refill(now);
        self.tokens >= 0
    }

    /// Spends `bytes` worth of tokens (call after `conforms`/`may_send` at the same `now`).
    #[inline]
    pub fn charge(&mut self, bytes: u64) {
        self.tokens -= bytes as i128 * PER_BYTE;
    }

    /// The earliest instant at which the bucket will hold `bytes` (0 = "not negative"),
    /// assuming nothing is charged meanwhile. Rounded up to the next nanosecond, and
    /// never before `now`. Call after a `refill(now)` (the tests do this).
    pub fn ready_at(&self, now: SimTime, bytes: u64) -> SimTime {
        let need = bytes as i128 * PER_BYTE;
        debug_assert!(
            need <= self.depth || bytes == 0,
            "a {bytes}-byte packet can never fit a {}-byte bucket",
            self.depth_bytes()
        );
        let deficit = need - self.tokens;
        if deficit <= 0 {
            return now.max(self.last);
        }
        // A deficit of at most one packet (or a bucket) fits 64 bits by far (a 64 KB
        // packet is 5.2e14 nano-bits): divide in 64 bits then, by the rate's reciprocal
        // (the same rounded-up quotient without a division; `Rate::div_ceil`).
        let wait = match u64::try_from(deficit) {
            Ok(d) => self.rate.div_ceil(d),
            Err(_) => {
                let r = self.rate.bps() as i128;
                ((deficit + r - 1) / r).min(u64::MAX as i128) as u64
            }
        };
        self.last.max(now) + SimDuration::from_nanos(wait)
    }
}

#[cfg(test)]
mod tests {

    /// A refill and a test read and write the first 40 bytes only.
    #[test]
    fn state_read_per_packet_is_the_first_40_bytes() {
        use std::mem::offset_of;
        assert_eq!(offset_of!(TokenBucket, tokens), 0);
        assert_eq!(offset_of!(TokenBucket, depth), 16);
        assert_eq!(offset_of!(TokenBucket, last), 32);
    }
    use super::*;

    fn t(ns: u64) -> SimTime {
        SimTime::from_nanos(ns)
    }

    #[test]
    fn starts_full_and_refills_exactly() {
        // 6 Mbit/s, DOCSIS default bucket 3044 bytes: two 1518-byte frames pass at once,
        // the third needs 1518 - (3044 - 3036) = 1510 bytes = 2.013333.. ms of refill.
        let mut tb = TokenBucket::new(Rate::from_bps(6_000_000), 3044);
        assert!(tb.conforms(t(0), 1518));
        tb.charge(1518);
        assert!(tb.conforms(t(0), 1518));
        tb.charge(1518);
        assert!(!tb.conforms(t(0), 1518));
        assert_eq!(tb.tokens_bytes(), 8);
        let at = tb.ready_at(t(0), 1518);
        // 1510 bytes * 8 / 6e6 = 2013333.33 ns -> rounded up
        assert_eq!(at, t(2_013_334));
        assert!(!tb.conforms(t(2_013_333), 1518));
        assert!(tb.conforms(at, 1518));
        // never more than the depth however long it idles
        tb.refill(t(10_000_000_000));
        assert_eq!(tb.tokens_bytes(), 3044);
    }

    /// `ready_at` divides in 64 bits when the deficit fits and in 128 bits beyond; both
    /// give the exact rounded-up wait (checked against the 128-bit formula).
    #[test]
    fn ready_at_rounds_up_exactly_in_both_widths() {
        let cases: [(u64, u64, u64); 5] = [
            // (rate bit/s, depth bytes, bytes wanted after emptying the bucket)
            (100_000_000, 12_500, 1514),
            (7, 1514, 1514),
            (999_999_937, 65_535, 65_535),
            // deficit 3e9 bytes * 8e9 = 2.4e19 nano-bits > u64::MAX: the 128-bit path
            (1_000_000_007, 3_000_000_000, 3_000_000_000),
            (1_000, 3_000_000_000, 3_000_000_000),
        ];
        for (bps, depth, want) in cases {
            let mut tb = TokenBucket::new(Rate::from_bps(bps), depth);
            tb.refill(t(5));
            tb.charge(depth);
            let deficit = want as i128 * PER_BYTE;
            let r = bps as i128;
            let wait = ((deficit + r - 1) / r).min(u64::MAX as i128) as u64;
            assert_eq!(
                tb.ready_at(t(5), want),
                t(5 + wait),
                "{bps} bit/s, {want} bytes"
            );
            // one nanosecond earlier the bucket is still short (exactness of the rounding)
            if wait > 0 {
                let mut early = tb.clone();
                assert!(!early.conforms(t(5 + wait - 1), want));
                assert!(early.conforms(t(5 + wait), want));
            }
        }
    }

    #[test]
    fn debt_mode_goes_negative_by_at_most_one_packet() {
        let mut tb = TokenBucket::new(Rate::from_bps(8_000_000), 1000); // 1 byte/us
        assert!(tb.may_send(t(0)));
        tb.charge(1500);
        assert_eq!(tb.tokens_bytes(), -500);
        assert!(!tb.may_send(t(499_000)));
        assert_eq!(tb.ready_at(t(499_000), 0), t(500_000));
        assert!(tb.may_send(t(500_000)));
    }

    /// Greedy strict use: the departures obey bytes(window) <= depth + rate * window for
    /// every window, and the long-run rate is the token rate.
    #[test]
    fn strict_output_obeys_the_bucket_invariant() {
        let rate = Rate::from_bps(6_000_000);
        let depth = 3044u64;
        let mut tb = TokenBucket::new(rate, depth);
        let sizes = [1518u64, 64, 600, 1518, 1518, 90, 1200];
        let mut now = t(0);
        let mut deps: Vec<(SimTime, u64)> = Vec::new();
        for i in 0..3000 {
            let b = sizes[i % sizes.len()];
            tb.refill(now);
            if !tb.conforms(now, b) {
                now = tb.ready_at(now, b);
                assert!(tb.conforms(now, b));
            }
            tb.charge(b);
            deps.push((now, b));
            // occasionally idle so the bucket refills and a burst follows
            if i % 500 == 499 {
                now += SimDuration::from_millis(50);
            }
        }
        for i in 0..deps.len() {
            let mut bytes = 0u128;
            for j in i..deps.len() {
                bytes += deps[j].1 as u128;
                let win = (deps[j].0 - deps[i].0).as_nanos() as u128;
                // bytes*8e9 <= depth*8e9 + rate*win  (exact, in nano-bits)
                assert!(
                    bytes * 8_000_000_000
                        <= depth as u128 * 8_000_000_000 + rate.bps() as u128 * win,
                    "window {i}..{j}: {bytes} bytes in {win} ns"
                );
            }
        }
        // long-run rate over the greedy stretch 0..500 (no idle): within 1 % of 6 Mbit/s
        let bytes: u64 = deps[..500].iter().map(|d| d.1).sum::<u64>() - depth;
        let span = (deps[499].0 - deps[0].0).as_secs_f64();
        let r = bytes as f64 * 8.0 / span;
        assert!((r / 6e6 - 1.0).abs() < 0.01, "rate {r}");
    }
}
