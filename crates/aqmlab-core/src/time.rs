//! Simulated time: integer nanoseconds.
//!
//! `SimTime` is an instant since the start of a run, `SimDuration` a span. Both are
//! `u64` nanoseconds, which covers 584 years of simulated time without floats, so two
//! runs that do the same arithmetic get the same instants on every machine. Nothing in
//! the simulator reads a wall clock: `now` is always passed in.

use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub};

/// An instant of simulated time, in nanoseconds since the start of the run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(u64);

/// A span of simulated time, in nanoseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimDuration(u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    /// Far in the future; used as "never".
    pub const NEVER: SimTime = SimTime(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Self {
        SimTime(ns)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    pub fn from_secs_f64(s: f64) -> Self {
        SimTime(SimDuration::from_secs_f64(s).0)
    }
    /// `self - earlier`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
    pub fn since_start(self) -> SimDuration {
        SimDuration(self.0)
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);
    pub const MAX: SimDuration = SimDuration(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Self {
        SimDuration(ns)
    }
    pub const fn from_micros(us: u64) -> Self {
        SimDuration(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        SimDuration(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        SimDuration(s * 1_000_000_000)
    }
    /// Rounds to the nearest nanosecond; negative or NaN input gives zero.
    pub fn from_secs_f64(s: f64) -> Self {
        if s.is_nan() || s <= 0.0 {
            return SimDuration(0);
        }
        SimDuration((s * 1e9).round().min(u64::MAX as f64) as u64)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }
    pub fn saturating_sub(self, o: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_sub(o.0))
    }
    pub fn mul_f64(self, f: f64) -> SimDuration {
        SimDuration::from_secs_f64(self.as_secs_f64() * f)
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    fn add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}
impl AddAssign<SimDuration> for SimTime {
    fn add_assign(&mut self, d: SimDuration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<SimDuration> for SimTime {
    type Output = SimTime;
    fn sub(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_sub(d.0))
    }
}
impl Sub<SimTime> for SimTime {
    type Output = SimDuration;
    /// Panics in debug builds if `rhs` is later than `self` (time travel).
    fn sub(self, rhs: SimTime) -> SimDuration {
        debug_assert!(self.0 >= rhs.0, "time travel: {} - {}", self, rhs);
        SimDuration(self.0.saturating_sub(rhs.0))
    }
}
impl Add for SimDuration {
    type Output = SimDuration;
    fn add(self, o: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_add(o.0))
    }
}
impl AddAssign for SimDuration {
    fn add_assign(&mut self, o: SimDuration) {
        self.0 = self.0.saturating_add(o.0);
    }
}
impl Sub for SimDuration {
    type Output = SimDuration;
    fn sub(self, o: SimDuration) -> SimDuration {
        debug_assert!(self.0 >= o.0, "negative duration");
        SimDuration(self.0.saturating_sub(o.0))
    }
}
impl Mul<u64> for SimDuration {
    type Output = SimDuration;
    fn mul(self, k: u64) -> SimDuration {
        SimDuration(self.0.saturating_mul(k))
    }
}
impl Div<u64> for SimDuration {
    type Output = SimDuration;
    fn div(self, k: u64) -> SimDuration {
        SimDuration(self.0 / k)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.9}s", self.as_secs_f64())
    }
}

/// Writes `ns / unit` exactly in decimal (no binary-float noise such as
/// `15.000000000000002`), trailing zeros dropped, then `suffix`.
fn write_exact(
    f: &mut fmt::Formatter<'_>,
    ns: u64,
    unit: u64,
    digits: usize,
    suffix: &str,
) -> fmt::Result {
    let (whole, frac) = (ns / unit, ns % unit);
    if frac == 0 {
        return write!(f, "{whole}{suffix}");
    }
    let s = format!("{frac:0digits$}");
    write!(f, "{whole}.{}{suffix}", s.trim_end_matches('0'))
}

impl fmt::Display for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 >= 1_000_000_000 {
            write_exact(f, self.0, 1_000_000_000, 9, "s")
        } else if self.0 >= 1_000_000 {
            write_exact(f, self.0, 1_000_000, 6, "ms")
        } else if self.0 >= 1_000 {
            write_exact(f, self.0, 1_000, 3, "us")
        } else {
            write!(f, "{}ns", self.0)
        }
    }
}

/// A data rate in bits per second.
///
/// It carries the reciprocal of its value, so that dividing by the rate (a packet's
/// serialisation time, a token bucket's wait: once or twice per packet on every link)
/// is two multiplications instead of a hardware division (tens of cycles) or the
/// 128-bit division routine. The quotient is exact, not an approximation: see
/// [`Rate::div_floor`].
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate {
    bps: u64,
    /// ⌈2¹²⁸ / bps⌉ (0 for 1 bit/s, whose quotients are the dividends themselves).
    inv: u128,
}

impl fmt::Debug for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Rate({})", self.bps)
    }
}

impl Rate {
    /// Panics on zero: a zero rate is rejected by scenario validation before this.
    pub fn from_bps(bps: u64) -> Self {
        assert!(bps > 0, "rate must be positive");
        // ⌈2¹²⁸/d⌉ = ⌊(2¹²⁸ − 1)/d⌋ + 1 for every d ≥ 2 (also powers of two)
        let inv = if bps == 1 {
            0
        } else {
            u128::MAX / bps as u128 + 1
        };
        Rate { bps, inv }
    }
    pub const fn bps(self) -> u64 {
        self.bps
    }
    /// ⌊x / bps⌋, exactly, for every 64-bit `x`: ⌊c·x / 2¹²⁸⌋ with c = ⌈2¹²⁸/d⌉.
    /// (Write c = 2¹²⁸/d + e, 0 ≤ e < 1, and x = qd + r, r ≤ d − 1: then
    /// c·x/2¹²⁸ = q + r/d + e·x/2¹²⁸, and e·x/2¹²⁸ < 2⁻⁶⁴ ≤ 1/d, so the floor is q —
    /// Lemire, Kaser & Kurz, "Faster remainder by direct computation", 2019, Thm. 1
    /// with N = 64, F = 128.)
    #[inline(always)]
    pub fn div_floor(self, x: u64) -> u64 {
        if self.inv == 0 {
            return x;
        }
        let (hi, lo) = ((self.inv >> 64) as u64, self.inv as u64);
        // c·x / 2⁶⁴ = hi·x + ⌊lo·x / 2⁶⁴⌋ (+ a fraction that cannot carry into 2¹²⁸'s
        // place, since the sum stays below 2¹²⁷ + 2⁶⁴)
        let mid = hi as u128 * x as u128 + ((lo as u128 * x as u128) >> 64);
        (mid >> 64) as u64
    }
    /// ⌈x / bps⌉, exactly.
    #[inline(always)]
    pub fn div_ceil(self, x: u64) -> u64 {
        let q = self.div_floor(x);
        q + (q * self.bps != x) as u64
    }
    /// Time to serialise `bytes` at this rate, rounded up to the next nanosecond.
    #[inline]
    pub fn tx_time(self, bytes: u32) -> SimDuration {
        self.bytes_time(bytes as u64)
    }
    /// Time to serialise `bytes` (a packet, or a queue's backlog) at this rate, rounded up
    /// to the next nanosecond; saturates at `u64::MAX` ns.
    #[inline]
    pub fn bytes_time(self, bytes: u64) -> SimDuration {
        match bytes.checked_mul(8_000_000_000) {
            Some(bits) => SimDuration(self.div_ceil(bits)),
            None => self.bytes_time_huge(bytes),
        }
    }
    /// `bytes_time` of over 2.3 GB in one go: not a packet, but exact all the same. (Out
    /// of line, so that `tx_time` stays small enough to inline on the packet path.)
    #[cold]
    #[inline(never)]
    fn bytes_time_huge(self, bytes: u64) -> SimDuration {
        let bits = bytes as u128 * 8 * 1_000_000_000;
        SimDuration(bits.div_ceil(self.bps as u128).min(u64::MAX as u128) as u64)
    }
    /// Bytes that can be sent in `d` (rounded down).
    pub fn bytes_in(self, d: SimDuration) -> u64 {
        (d.0 as u128 * self.bps as u128 / 8 / 1_000_000_000) as u64
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.bps as f64;
        if b >= 1e9 {
            write!(f, "{}Gbit", b / 1e9)
        } else if b >= 1e6 {
            write!(f, "{}Mbit", b / 1e6)
        } else if b >= 1e3 {
            write!(f, "{}kbit", b / 1e3)
        } else {
            write!(f, "{}bit", b)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Durations in messages are exact decimals: 15 s is "15s", not the binary-float
    /// product "15.000000000000002s"; fractions keep their digits without trailing zeros.
    #[test]
    fn durations_display_exactly() {
        let show = |ns: u64| SimDuration(ns).to_string();
        assert_eq!(show(15_000_000_000), "15s");
        assert_eq!(show(30_000_000_000), "30s");
        assert_eq!(show(1_500_000_000), "1.5s");
        assert_eq!(show(100_000_000), "100ms");
        assert_eq!(show(2_500_000), "2.5ms");
        assert_eq!(show(1_000_001), "1.000001ms");
        assert_eq!(show(50_000), "50us");
        assert_eq!(show(1_234), "1.234us");
        assert_eq!(show(999), "999ns");
        assert_eq!(show(0), "0ns");
    }

    #[test]
    fn tx_time_matches_study_number() {
        // The saturated-TCP study: a 1500-byte packet takes 1.2056 ms at 10 Mbit/s, which
        // is 1507 bytes on the wire.
        let r = Rate::from_bps(10_000_000);
        assert_eq!(r.tx_time(1500).as_nanos(), 1_200_000);
        assert_eq!(r.tx_time(1507).as_nanos(), 1_205_600);
        // Rounds up: 1 byte at 3 bit/s is 2.666..s.
        assert_eq!(Rate::from_bps(3).tx_time(1).as_nanos(), 2_666_666_667);
    }

    /// The reciprocal division against the plain one: edge divisors and dividends and a
    /// million pseudo-random pairs over all magnitudes.
    #[test]
    fn reciprocal_division_is_exact() {
        let check = |d: u64, x: u64| {
            let r = Rate::from_bps(d);
            assert_eq!(r.div_floor(x), x / d, "{x} / {d}");
            assert_eq!(r.div_ceil(x), x.div_ceil(d), "{x} / {d} rounded up");
        };
        let ds = [
            1,
            2,
            3,
            7,
            1 << 20,
            1_000_000_007,
            100_000_000,
            (1 << 32) - 1,
            1 << 32,
            (1 << 63) + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        for &d in &ds {
            for x in [
                0,
                1,
                d - 1,
                d,
                d.wrapping_add(1),
                d.wrapping_mul(2),
                u64::MAX,
                u64::MAX - 1,
            ] {
                check(d, x);
            }
            for k in [1u64, 2, 3, 1000, 12_345_678] {
                if let Some(m) = d.checked_mul(k) {
                    check(d, m);
                    check(d, m - 1);
                    check(d, m.saturating_add(1));
                }
            }
        }
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for _ in 0..1_000_000 {
            let (a, b) = (next(), next());
            let d = (a >> (a % 64)).max(1);
            let x = b >> (b % 64);
            check(d, x);
        }
        // and the packet sizes the study links see, at their rates
        for bps in [
            1_000_000,
            10_000_000,
            100_000_000,
            1_000_000_000,
            10_000_000_000,
            3,
        ] {
            let r = Rate::from_bps(bps);
            for bytes in (0..70_000u32).chain([u32::MAX / 4, u32::MAX]) {
                let want = (bytes as u128 * 8_000_000_000).div_ceil(bps as u128) as u64;
                assert_eq!(r.tx_time(bytes).as_nanos(), want, "{bytes} B at {bps}");
            }
        }
        // a backlog beyond 2.3 GB takes the 128-bit path, and saturates
        let r = Rate::from_bps(10_000_000);
        let b = 5_000_000_000u64;
        assert_eq!(
            r.bytes_time(b).as_nanos(),
            (b as u128 * 8_000_000_000 / 10_000_000) as u64
        );
        assert_eq!(Rate::from_bps(1).bytes_time(u64::MAX).as_nanos(), u64::MAX);
    }

    #[test]
    fn arithmetic_saturates_and_orders() {
        let t = SimTime::from_nanos(10) + SimDuration::from_nanos(5);
        assert_eq!(t.as_nanos(), 15);
        assert_eq!((t - SimTime::from_nanos(3)).as_nanos(), 12);
        assert_eq!(SimTime::NEVER + SimDuration::from_secs(1), SimTime::NEVER);
        assert_eq!(SimDuration::from_secs_f64(-1.0), SimDuration::ZERO);
        assert_eq!(SimDuration::from_secs_f64(0.0015).as_nanos(), 1_500_000);
        assert_eq!(
            Rate::from_bps(8_000_000).bytes_in(SimDuration::from_secs(1)),
            1_000_000
        );
    }
}
