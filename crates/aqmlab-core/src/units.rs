//! Quantities as people write them in scenario files: `"10Mbit"`, `"1.5Mbit"`, `"25ms"`,
//! `"250KB"`.
//!
//! Conventions (documented in the README's scenario reference):
//! - rates are **bits** per second in `tc`'s spellings with `tc`'s meaning: `bit`, `kbit`,
//!   `Mbit`, `Gbit`, `Tbit` (decimal, 1 Mbit = 10^6 bit), `Kibit`, `Mibit`, `Gibit`
//!   (binary), or `Mbit/s` etc.; a bare number is bit/s. `bps`, `kbps`, `Mbps`, `Gbps` are
//!   refused with a hint: `tc` reads them as **bytes** per second, ns-3 as bits.
//! - durations: `ns`, `us`, `ms`, `s`, `min`; a bare number is seconds.
//! - sizes: `B`, `KB`/`kB`, `MB`, `GB` (decimal, 1 KB = 1000 B), `KiB`, `MiB`, `GiB`
//!   (binary); a bare number is bytes.
//!
//! Unit names are matched case-insensitively except `b`/`B`-style ambiguity does not
//! arise because sizes and rates are parsed by different functions.

use crate::time::{Rate, SimDuration};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

fn split_number(s: &str) -> Result<(f64, String), String> {
    let s = s.trim();
    let idx = s
        .find(|c: char| {
            !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')
        })
        .unwrap_or(s.len());
    // "1e3ms" is fine but "5ms" must not eat the 'e' of nothing: take the longest prefix
    // that parses as a number.
    let mut cut = idx;
    while cut > 0 && s[..cut].parse::<f64>().is_err() {
        cut -= 1;
    }
    if cut == 0 {
        return Err(format!("'{s}' does not start with a number"));
    }
    let n: f64 = s[..cut]
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if !n.is_finite() {
        return Err(format!("'{s}' is not a finite number"));
    }
    Ok((n, s[cut..].trim().to_string()))
}

/// 2^64 as f64: integers at or above it do not fit the simulator's u64 quantities.
const U64_LIMIT: f64 = 18_446_744_073_709_551_616.0;

/// `v` rounded to u64, or an error if it does not fit (instead of saturating silently).
fn to_u64(v: f64, what: &str, shown: &str, max_shown: &str) -> Result<u64, String> {
    let r = v.round();
    if r.is_nan() || r >= U64_LIMIT {
        return Err(format!(
            "{what} {shown} is too large (the largest is {max_shown})"
        ));
    }
    Ok(r as u64)
}

/// Nanoseconds of `secs` seconds, or an error above u64::MAX ns (about 584 years).
fn to_nanos(secs: f64, shown: &str) -> Result<SimDuration, String> {
    let ns = to_u64(
        secs * 1e9,
        "duration",
        shown,
        "18446744073s, about 584 years",
    )?;
    Ok(SimDuration::from_nanos(ns))
}

/// Parses a rate such as `"10Mbit"` into bits per second. Zero and negative rates are errors.
///
/// Accepted units are `tc`'s bit spellings with `tc`'s meaning (tc(8), "RATES";
/// iproute2 `tc/tc_util.c` `get_rate`, matched case-insensitively): `bit` (or a bare
/// number), `kbit`, `mbit`, `gbit`, `tbit` with decimal prefixes, `kibit`, `mibit`,
/// `gibit`, `tibit` with binary ones, plus the unambiguous `bit/s`, `kbit/s`, `Mbit/s`,
/// `Gbit/s`, `Tbit/s`.
///
/// The `bps` family is refused with a hint: `tc` reads `mbps` as **megabytes** per second
/// while ns-3 and most papers read `Mbps` as megabits, so `"10Mbps"` has no single
/// meaning and guessing would silently be off by a factor of 8.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let (n, unit) = split_number(s)?;
    let lower = unit.to_ascii_lowercase();
    let mult = match lower.as_str() {
        "" | "bit" | "bit/s" => 1.0,
        "kbit" | "kbit/s" => 1e3,
        "mbit" | "mbit/s" => 1e6,
        "gbit" | "gbit/s" => 1e9,
        "tbit" | "tbit/s" => 1e12,
        "kibit" => 1024.0,
        "mibit" => 1024.0 * 1024.0,
        "gibit" => 1024.0 * 1024.0 * 1024.0,
        "tibit" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "bps" | "kbps" | "mbps" | "gbps" | "tbps" | "kibps" | "mibps" | "gibps" | "tibps" => {
            let prefix = &unit[..unit.len() - 3];
            let bits = n * 8.0;
            return Err(format!(
                "'{s}' is ambiguous: in tc '{lower}' means {prefix}bytes per second ({bits}{prefix}bit), \
                 in ns-3 and most papers {prefix}bits per second ({n}{prefix}bit); write the rate in \
                 bits, e.g. '{n}{prefix}bit'"
            ));
        }
        _ => {
            return Err(format!(
                "unknown rate unit '{unit}' in '{s}' (allowed: bit, kbit, Mbit, Gbit, Tbit, Kibit, Mibit, Gibit, Tibit, or bit/s, kbit/s, Mbit/s, Gbit/s; a bare number is bit/s)"
            ))
        }
    };
    let v = n * mult;
    if v <= 0.0 {
        return Err(format!("rate '{s}' must be positive"));
    }
    if v < 1.0 {
        return Err(format!("rate '{s}' is below 1 bit/s"));
    }
    to_u64(
        v,
        "rate",
        &format!("'{s}'"),
        "18446744073709551615 bit/s, about 18 Ebit/s",
    )
}

/// Parses a duration such as `"25ms"`. Negative durations are errors.
pub fn parse_duration(s: &str) -> Result<SimDuration, String> {
    let (n, unit) = split_number(s)?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "" | "s" | "sec" => 1.0,
        "min" => 60.0,
        _ => {
            return Err(format!(
                "unknown time unit '{unit}' in '{s}' (allowed: ns, us, ms, s, min)"
            ))
        }
    };
    if n < 0.0 {
        return Err(format!("duration '{s}' must not be negative"));
    }
    to_nanos(n * mult, &format!("'{s}'"))
}

/// Parses a size such as `"250KB"` into bytes. Negative sizes are errors.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (n, unit) = split_number(s)?;
    let mult = match unit.as_str() {
        "" | "B" | "b" | "bytes" => 1.0,
        "KB" | "kB" | "kb" => 1e3,
        "MB" | "mb" => 1e6,
        "GB" | "gb" => 1e9,
        "KiB" | "kib" => 1024.0,
        "MiB" | "mib" => 1024.0 * 1024.0,
        "GiB" | "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(format!(
                "unknown size unit '{unit}' in '{s}' (allowed: B, KB, MB, GB, KiB, MiB, GiB)"
            ))
        }
    };
    if n < 0.0 {
        return Err(format!("size '{s}' must not be negative"));
    }
    to_u64(
        n * mult,
        "size",
        &format!("'{s}'"),
        "18446744073709551615 bytes",
    )
}

macro_rules! quantity {
    ($name:ident, $inner:ty, $parse:ident, $what:literal, $from_num:expr, $to_str:expr) => {
        #[doc = concat!("A ", $what, " in a scenario file: a string with a unit or a bare number.")]
        #[derive(Copy, Clone, Debug, PartialEq)]
        pub struct $name(pub $inner);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        write!(f, concat!("a ", $what, " such as {}"), $name::EXAMPLE)
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$name, E> {
                        $parse(s).map($name).map_err(E::custom)
                    }
                    fn visit_i64<E: de::Error>(self, n: i64) -> Result<$name, E> {
                        self.visit_f64(n as f64)
                    }
                    fn visit_u64<E: de::Error>(self, n: u64) -> Result<$name, E> {
                        self.visit_f64(n as f64)
                    }
                    fn visit_f64<E: de::Error>(self, n: f64) -> Result<$name, E> {
                        let f: fn(f64) -> Result<$inner, String> = $from_num;
                        f(n).map($name).map_err(E::custom)
                    }
                }
                d.deserialize_any(V)
            }
        }
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let f: fn(&$inner) -> String = $to_str;
                s.serialize_str(&f(&self.0))
            }
        }
    };
}

quantity!(
    RateSpec,
    u64,
    parse_rate,
    "rate",
    |n| if n >= 1.0 {
        to_u64(n, "rate", &n.to_string(), "18446744073709551615 bit/s")
    } else if n > 0.0 {
        Err(format!("rate {n} is below 1 bit/s"))
    } else {
        Err(format!("rate {n} must be positive"))
    },
    |b| Rate::from_bps((*b).max(1)).to_string()
);
quantity!(
    DurationSpec,
    SimDuration,
    parse_duration,
    "duration",
    |n| if n >= 0.0 {
        to_nanos(n, &n.to_string())
    } else {
        Err(format!("duration {n} must not be negative"))
    },
    |d| format!("{}ns", d.as_nanos())
);
quantity!(
    SizeSpec,
    u64,
    parse_size,
    "size",
    |n| if n >= 0.0 {
        to_u64(n, "size", &n.to_string(), "18446744073709551615 bytes")
    } else {
        Err(format!("size {n} must not be negative"))
    },
    |b| format!("{b}B")
);

impl RateSpec {
    const EXAMPLE: &'static str = "\"10Mbit\"";
    pub fn rate(self) -> Rate {
        Rate::from_bps(self.0)
    }
}
impl DurationSpec {
    const EXAMPLE: &'static str = "\"25ms\"";
}
impl SizeSpec {
    const EXAMPLE: &'static str = "\"250KB\"";
}

/// A queue limit: a bare integer is packets (`limit = 127`), a string with a unit is bytes
/// (`limit = "250KB"`), as `pfifo`/`bfifo` distinguish them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Limit {
    Packets(u32),
    Bytes(u64),
}

impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Limit;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(
                    f,
                    "a packet count such as 127 or a byte size such as \"250KB\""
                )
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Limit, E> {
                if n <= 0 || n > u32::MAX as i64 {
                    return Err(E::custom(format!(
                        "limit {n} must be a positive packet count"
                    )));
                }
                Ok(Limit::Packets(n as u32))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Limit, E> {
                self.visit_i64(n.min(i64::MAX as u64) as i64)
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Limit, E> {
                let b = parse_size(s).map_err(E::custom)?;
                if b == 0 {
                    return Err(E::custom(format!("limit '{s}' must be positive")));
                }
                Ok(Limit::Bytes(b))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Limit {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Limit::Packets(n) => s.serialize_u32(*n),
            Limit::Bytes(b) => s.serialize_str(&format!("{b}B")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("10Mbit").unwrap(), 10_000_000);
        assert_eq!(parse_rate("1.5Mbit").unwrap(), 1_500_000);
        assert_eq!(parse_rate("1Gbit/s").unwrap(), 1_000_000_000);
        assert_eq!(parse_rate("1mbit").unwrap(), 1_000_000);
        assert_eq!(parse_rate("2Kibit").unwrap(), 2048);
        assert_eq!(parse_rate("1mibit").unwrap(), 1_048_576);
        // tc's byte spellings are ambiguous with ns-3's bit spellings: refused, both
        // readings in the hint
        for s in ["10MBps", "10mbps", "10Mbps", "1Gbps", "100kbps", "8bps"] {
            let e = parse_rate(s).unwrap_err();
            assert!(
                e.contains("ambiguous") && e.contains("bytes per second"),
                "{s}: {e}"
            );
        }
        let e = parse_rate("10MBps").unwrap_err();
        assert!(e.contains("80Mbit") && e.contains("'10Mbit'"), "{e}");
        assert_eq!(parse_rate("64 kbit").unwrap(), 64_000);
        assert!(parse_rate("-1Mbit").unwrap_err().contains("positive"));
        assert!(parse_rate("0Mbit").unwrap_err().contains("positive"));
        assert!(parse_rate("10Mbyte").unwrap_err().contains("allowed"));
        assert!(parse_rate("fast").is_err());
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration("25ms").unwrap().as_nanos(), 25_000_000);
        assert_eq!(parse_duration("0.1ms").unwrap().as_nanos(), 100_000);
        assert_eq!(parse_duration("2").unwrap().as_nanos(), 2_000_000_000);
        assert_eq!(parse_duration("1e-3s").unwrap().as_nanos(), 1_000_000);
        assert!(parse_duration("5 fortnights")
            .unwrap_err()
            .contains("allowed"));
        assert!(parse_duration("-5ms").is_err());
        assert_eq!(parse_size("250KB").unwrap(), 250_000);
        assert_eq!(parse_size("32MiB").unwrap(), 32 * 1024 * 1024);
        assert_eq!(parse_size("1514").unwrap(), 1514);
    }

    #[test]
    fn limit_forms() {
        #[derive(Deserialize)]
        struct T {
            limit: Limit,
        }
        let t: T = toml::from_str("limit = 127").unwrap();
        assert_eq!(t.limit, Limit::Packets(127));
        let t: T = toml::from_str("limit = \"250KB\"").unwrap();
        assert_eq!(t.limit, Limit::Bytes(250_000));
        assert!(toml::from_str::<T>("limit = -3").is_err());
    }
}

/// `run.seed`: a TOML integer 0 … 2⁶³−1 or, for the full u64 range up to 2⁶⁴−1 that
/// `--seed` accepts, a string of decimal digits (TOML integers are signed 64-bit).
pub mod seed {
    use serde::de::{self, Deserializer, Visitor};
    use serde::Serializer;
    use std::fmt;

    const RANGE: &str =
        "an integer 0 to 9223372036854775807, or a string \"0\" to \"18446744073709551615\"";

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = u64;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a seed: {RANGE}")
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<u64, E> {
                u64::try_from(n)
                    .map_err(|_| E::custom(format!("seed {n} is negative (allowed: {RANGE})")))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<u64, E> {
                Ok(n)
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<u64, E> {
                let t = s.trim();
                if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(E::custom(format!(
                        "seed '{s}' is not a whole number (allowed: {RANGE})"
                    )));
                }
                t.parse::<u64>()
                    .map_err(|_| E::custom(format!("seed '{s}' is too large (allowed: {RANGE})")))
            }
        }
        d.deserialize_any(V)
    }

    /// Seeds above 2⁶³−1 are written as strings, the others as integers.
    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        if *v <= i64::MAX as u64 {
            s.serialize_i64(*v as i64)
        } else {
            s.serialize_str(&v.to_string())
        }
    }
}
