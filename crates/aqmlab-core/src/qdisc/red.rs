//! RED and Adaptive RED as Linux `sch_red` runs them (`include/net/red.h`), with the
//! parameters derived the way `tc` derives them (`tc/q_red.c`, `tc/tc_red.c`).
//!
//! ## Principles
//! - On every arrival the average queue `avg` is updated, `avg += W·(backlog − avg)` with
//!   W = 2^−ewma_log, kept as Linux keeps it: a fixed-point number with `ewma_log`
//!   fraction bits. After an idle period the average decays instead, through the
//!   idle-damping table tc computes from `bandwidth` and `avpkt`.
//! - Below `min` nothing happens; between `min` and `max` a packet is marked with a
//!   probability rising linearly to `max_p`, spaced by Linux's count method (a uniform
//!   number is drawn after each mark, the next mark comes when `p_b · count` reaches it,
//!   so gaps are uniform in [1, 1/p_b]); at or above `max` every packet is marked.
//!   "Marked" means ECN-marked when `ecn` is on and the packet is ECN-capable, dropped
//!   otherwise; `harddrop` drops above `max` even with ECN.
//! - `gentle` (Floyd 2000, ns-2; not in Linux's sch_red): between `max` and 2·`max` the
//!   probability rises from `max_p` to 1 instead of jumping to 1.
//! - `adaptive` (ARED, Floyd, Gummadi & Shenker 2001, as Linux `red adaptive`): every
//!   500 ms, `max_p += min(0.01, max_p/4)` if `avg` is above min + 0.6·(max − min) and
//!   `max_p ≤ 0.5`; `max_p *= 0.9` if `avg` is below min + 0.4·(max − min) and
//!   `max_p ≥ 0.01` (so max_p ends in about [0.009, 0.51], as in the kernel).
//! - The hard limit (a byte FIFO under Linux's RED) drops after the RED decision.
//!
//! ## Thresholds in bytes or packets
//! `min = "12500B"` (a size string) is bytes and the average is taken over the byte
//! backlog, as Linux does. `min = 102` (an integer) is packets and the average is taken
//! over the packet count, as ns-2's packet mode (the DOCSIS study's ARED: min_th = 102,
//! max_th = 1024 of a 2048-packet buffer). `min` and `max` must use the same unit; in
//! packet mode `avpkt` counts as one packet in tc's formulas. `limit` may use either unit.
//!
//! ## tc's derivations (defaults)
//! `max = 3·min` if only `min` is given, `limit/4` if neither; `min = max/3`;
//! `burst = (2·min + max)/(3·avpkt)`; `ewma_log` = the smallest log with
//! `burst + 1 − min/avpkt ≤ (1 − (1−W)^burst)/W`; `max_p = probability · 2^32`.
//!
//! ## `variant = "ns2"`: ns-2's `Queue/RED` (ns-2.35 `queue/red.cc`, `ns-default.tcl`)
//! For studies run in ns-2 (the DOCSIS study's ARED). What differs from Linux:
//! - the average is a floating-point EWMA with weight `weight` (ns-2 `q_weight_`); by
//!   default ns-2's automatic rule for `q_weight_ = 0`, w = 1 − exp(−1/C) with C the link
//!   rate in `avpkt`-sized packets per second; after an idle period the average decays as
//!   if ⌊C · idle time⌋ packets had arrived to an empty queue (`q_weight_ = 0` is the
//!   setting of Floyd, Gummadi and Shenker's Adaptive RED);
//! - `avpkt` defaults to ns-2's `mean_pktsize_` 500, `probability` to 1/`linterm_` = 0.1,
//!   `gentle` to true (ns-2.35's defaults);
//! - no early drop while the instantaneous queue holds at most one packet, and none for the
//!   first arrival after the average crosses `min` (it only restarts the count);
//! - drops are spaced with ns-2's `wait_` (default true): with c arrivals since the last
//!   drop, p_a = 0 while c·p_b < 1 and p_b/(2 − c·p_b) after, so gaps are uniform in
//!   [1/p_b, 2/p_b] (Linux: in [1, 1/p_b]);
//! - the gentle region rises from the *initial* max_p at `max` to 1 at 2·`max` (ns-2 sets
//!   its slope once, at reset, and ARED does not move it);
//! - ARED (`adaptive`) adapts at arrivals, once at least 500 ms have passed since max_p
//!   last changed: ×0.9 below min + 0.4·Δ while max_p > bottom, +min(0.01, max_p/4) above
//!   max − 0.4·Δ while max_p < 0.5; bottom = min(0.01, 80 000 / link rate in bit/s)
//!   (ns-2 `bottom_ = 0`, automatic);
//! - with `ecn` an ECN-capable packet is marked only while p_b ≤ 0.1 (ns-2 `mark_p_`,
//!   `use_mark_p_`), dropped otherwise;
//! - thresholds in bytes mean ns-2's `queue_in_bytes_` and `bytes_`: the count runs in
//!   `avpkt` units and p is scaled by packet size / `avpkt`.
//!
//! `ewma_log`, `burst` and `harddrop` are Linux's and are refused with this variant.
//!
//! Trace variables: `avg` (average queue, bytes or packets) and `max_p`.

use super::pi_core::UpdateTimer;
use super::{
    BuildCtx, DropReason, MarkReason, ParamDoc, ParamError, Qdisc, QdiscOut, QdiscStats, Verdict,
};
use crate::packet::{Ecn, Packet};
use crate::rng::Rng;
use crate::time::{Rate, SimDuration, SimTime};
use crate::units::{Limit, RateSpec, SizeSpec};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `{ kind = "red", ... }` (and `kind = "ared"`, which defaults `adaptive` to true).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RedConfig {
    /// Hard queue limit, bytes ("400KB") or packets (integer). Default 4·max (tc requires
    /// it; tc-red(8) advises "a few times higher than max"), or 1000 MTU-sized packets in
    /// bytes when no threshold is given either.
    pub limit: Option<Limit>,
    /// Lower threshold of the average, bytes ("12500B") or packets (102). Default max/3.
    pub min: Option<Limit>,
    /// Upper threshold, same unit as `min`. Default 3·min, or limit/4 (tc).
    pub max: Option<Limit>,
    /// Average packet size in bytes for tc's burst and idle formulas. Default 1000 (tc
    /// requires it; 1000 is the tc-red(8) example).
    pub avpkt: Option<SizeSpec>,
    /// Packets the average should absorb as a burst: sets ewma_log. Default (2·min+max)/(3·avpkt).
    pub burst: Option<u32>,
    /// log2(1/W) of the averaging weight, overriding `burst`. 1..31.
    pub ewma_log: Option<u8>,
    /// Rate for the idle-time decay of the average. Default: the link rate (tc falls back
    /// to 10 Mbit/s; we know the real rate).
    pub bandwidth: Option<RateSpec>,
    /// max_p, the marking probability at `max`. Default 0.02 (tc).
    pub probability: Option<f64>,
    /// Adapt max_p every 500 ms (ARED). Default false for `red`, true for `ared`.
    pub adaptive: Option<bool>,
    /// Mark ECN-capable packets instead of dropping them. Default false.
    #[serde(default)]
    pub ecn: bool,
    /// Gentle RED between max and 2·max (ns-2 feature; Linux has none). Default false,
    /// true with `variant = "ns2"`.
    pub gentle: Option<bool>,
    /// With `ecn`, still drop (not mark) above `max`. Default false.
    #[serde(default)]
    pub harddrop: bool,
    /// Whose RED: `linux` (sch_red, default) or `ns2` (ns-2's Queue/RED, module docs).
    #[serde(default)]
    pub variant: RedVariant,
    /// ns-2 `q_weight_` (variant ns2 only): the EWMA weight, 0 < w < 1. Default
    /// 1 − exp(−1/C), C = link rate / (8 · avpkt).
    pub weight: Option<f64>,
}

/// `variant` of `red`/`ared`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RedVariant {
    #[default]
    Linux,
    Ns2,
}

/// `{ kind = "ared", ... }`: the same table as `red`; `adaptive` defaults to true.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(transparent)]
pub struct AredConfig(pub RedConfig);

const fn red_params(adaptive_default: &'static str) -> [ParamDoc; 14] {
    [
        ParamDoc { name: "limit", default: "4*max", doc: "hard limit, bytes (\"400KB\") or packets (integer); tc requires it, default 4*max (or 1000 MTU-sized packets in bytes if no threshold is given)" },
        ParamDoc { name: "min", default: "max/3", doc: "lower threshold of the average queue: bytes (\"12500B\", Linux) or packets (102, ns-2 packet mode); tc default max/3" },
        ParamDoc { name: "max", default: "3*min", doc: "upper threshold, same unit as min; tc default 3*min, or limit/4 when min is not given" },
        ParamDoc { name: "avpkt", default: "1000 (variant ns2: 500)", doc: "average packet size in bytes for tc's burst/ewma and idle-decay formulas (tc requires it; 1000 as in tc-red(8)); ns2: mean_pktsize_" },
        ParamDoc { name: "burst", default: "(2*min+max)/(3*avpkt)", doc: "burst in packets the average absorbs; sets ewma_log as tc does" },
        ParamDoc { name: "ewma_log", default: "from burst", doc: "log2(1/W) of the EWMA weight W, 1..31; overrides burst" },
        ParamDoc { name: "bandwidth", default: "link rate", doc: "rate for the idle-time decay of the average (tc falls back to 10Mbit)" },
        ParamDoc { name: "probability", default: "0.02 (variant ns2: 0.1)", doc: "max_p: marking probability at max (tc default 0.02); ARED's start value" },
        ParamDoc { name: "adaptive", default: adaptive_default, doc: "ARED: every 500 ms move max_p towards the band min+[0.4,0.6](max-min): +min(0.01, max_p/4) / x0.9, bounds 0.01..0.5 (Linux red adaptive; a kernel set up by iproute2 5.8 or later never arms this timer, see docs/validation.md \"ARED on the kernel\": model such a box with kind = \"red\")" },
        ParamDoc { name: "ecn", default: "false", doc: "mark ECN-capable packets instead of dropping them" },
        ParamDoc { name: "gentle", default: "false (variant ns2: true)", doc: "gentle RED: probability rises from max_p to 1 between max and 2*max (ns-2; not in Linux sch_red)" },
        ParamDoc { name: "harddrop", default: "false", doc: "with ecn, drop rather than mark when the average is above max (Linux harddrop)" },
        ParamDoc { name: "variant", default: "linux", doc: "linux (sch_red as tc sets it up) or ns2 (ns-2.35 Queue/RED: float EWMA, wait_ drop spacing, ns-2's ARED rule; defaults avpkt 500, probability 0.1, gentle)" },
        ParamDoc { name: "weight", default: "1-exp(-1/C)", doc: "variant ns2: EWMA weight q_weight_ (0..1); default ns-2's automatic rule with C = link rate / (8*avpkt) packets per second" },
    ]
}
const RED_PARAMS: [ParamDoc; 14] = red_params("false");
const ARED_PARAMS: [ParamDoc; 14] = red_params("true");

/// Linux's psched ticks per microsecond (64 ns ticks). tc computes the idle-damping table
/// with packet times in ticks while the kernel indexes it with idle microseconds, so the
/// average decays 15.625 times more slowly than the table intends; reproduced as is.
const PSCHED_TICKS_PER_US: f64 = 15.625;
/// ARED bounds and step, in Linux's Q0.32 fixed point (`RED_ONE_PERCENT` rounds 2^32/100).
const RED_ONE_PERCENT: u32 = 42_949_673;
const MAX_P_MIN: u32 = RED_ONE_PERCENT;
const MAX_P_MAX: u32 = 50 * RED_ONE_PERCENT;
const ADAPT_PERIOD: SimDuration = SimDuration::from_millis(500);
const TWO32: f64 = 4_294_967_296.0;

/// RED parameters after tc's derivations.
#[derive(Clone, Debug)]
pub struct RedParams {
    /// Thresholds (and the average) in bytes; false = packets.
    pub bytes_mode: bool,
    pub qth_min: u64,
    pub qth_max: u64,
    pub limit: Limit,
    pub avpkt: u32,
    pub burst: u32,
    pub wlog: u8,
    /// Initial max_p in Q0.32.
    pub max_p: u32,
    pub bandwidth: Rate,
    pub scell_log: u8,
    pub stab: [u8; 256],
    pub ecn: bool,
    pub gentle: bool,
    pub harddrop: bool,
    pub adaptive: bool,
    /// `Some` for `variant = "ns2"`.
    pub ns2: Option<Ns2Params>,
}

/// The settings of ns-2's RED that Linux has no counterpart for.
#[derive(Clone, Debug)]
pub struct Ns2Params {
    /// EWMA weight (`q_weight_`).
    pub weight: f64,
    /// Packets of `avpkt` bytes the link sends per second (ns-2 `ptc`).
    pub ptc: f64,
    /// ARED's lower bound of max_p (`bottom_`).
    pub bottom: f64,
    /// Initial max_p, 1/`linterm_` (a float, not Linux's Q0.32).
    pub max_p0: f64,
}

impl RedParams {
    pub fn qth_delta(&self) -> u64 {
        (self.qth_max - self.qth_min).max(1)
    }
    /// ARED target band [min + 0.4·Δ, min + 0.6·Δ], with Linux's integer Δ/5.
    pub fn target_band(&self) -> (u64, u64) {
        let d5 = self.qth_delta() / 5;
        (self.qth_min + 2 * d5, self.qth_min + 3 * d5)
    }
}

/// `tc_red_eval_ewma`: the smallest log2(1/W) with burst + 1 − min/avpkt ≤ (1 − (1−W)^burst)/W.
pub fn tc_eval_ewma(qmin: f64, burst: u32, avpkt: f64) -> Option<u8> {
    let a = burst as f64 + 1.0 - qmin / avpkt;
    if a < 1.0 {
        return None;
    }
    let mut w = 0.5f64;
    for wlog in 1..32u8 {
        if a <= (1.0 - (1.0 - w).powi(burst as i32)) / w {
            return Some(wlog);
        }
        w /= 2.0;
    }
    None
}

/// `tc_red_eval_idle_damping`: (Scell_log, Stab) for `avpkt` bytes at `bytes_per_s`.
pub fn tc_eval_idle_damping(wlog: u8, avpkt: u32, bytes_per_s: f64) -> Option<(u8, [u8; 256])> {
    // tc_calc_xmittime: whole microseconds, then psched ticks, truncated. A zero time (a
    // packet faster than 1 µs) would make tc divide by zero; we take one tick.
    let us = (1e6 * avpkt as f64 / bytes_per_s).floor();
    let xmit = (us * PSCHED_TICKS_PER_US).floor().max(1.0);
    let lw = -(1.0 - 1.0 / (1u64 << wlog) as f64).ln() / xmit;
    let maxtime = 31.0 / lw;
    let clog = (0..32u8).find(|&c| maxtime / ((1u64 << c) as f64) < 512.0)?;
    let mut stab = [0u8; 256];
    for (i, s) in stab.iter_mut().enumerate().skip(1) {
        *s = (((i as u64) << clog) as f64 * lw).min(31.0) as u8;
    }
    stab[255] = 31;
    Some((clog, stab))
}

fn unit_of(l: Limit) -> bool {
    matches!(l, Limit::Bytes(_))
}
fn amount(l: Limit) -> u64 {
    match l {
        Limit::Packets(n) => n as u64,
        Limit::Bytes(b) => b,
    }
}
fn in_unit(x: u64, bytes: bool) -> Limit {
    if bytes {
        Limit::Bytes(x)
    } else {
        Limit::Packets(x.min(u32::MAX as u64) as u32)
    }
}
fn show(l: Limit) -> String {
    match l {
        Limit::Packets(n) => format!("{n} packets"),
        Limit::Bytes(b) => format!("{b}B"),
    }
}
/// Position of the highest set bit (Linux `fls`).
fn fls(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// red_check_params: Linux keeps the thresholds as 32-bit numbers scaled by 2^wlog.
fn check_scaled_max(
    is_ns2: bool,
    qth_max: u64,
    wlog: u8,
    bytes_mode: bool,
) -> Result<(), ParamError> {
    if !is_ns2 && fls(qth_max) + wlog as u32 >= 32 {
        return Err(ParamError::new(
            "max",
            show(in_unit(qth_max, bytes_mode)),
            format!(
                "below 2^{} with ewma_log {wlog} (Linux keeps max << ewma_log in 32 bits)",
                31 - wlog as u32
            ),
        ));
    }
    Ok(())
}

impl RedConfig {
    pub const PARAMS: &'static [ParamDoc] = &RED_PARAMS;

    /// Applies tc's derivations and the kernel's checks, one step per group of keys in
    /// tc's order: units, variant-only keys, avpkt, limit, thresholds, EWMA, max_p,
    /// idle damping (Linux) or ns-2's constants.
    pub fn resolve(&self, ctx: &BuildCtx, adaptive_default: bool) -> Result<RedParams, ParamError> {
        let bytes_mode = self.bytes_mode()?;
        let is_ns2 = self.variant == RedVariant::Ns2;
        self.check_variant_keys(is_ns2)?;
        let avpkt = self.avpkt(is_ns2)?;
        let unit_pkt = if bytes_mode { avpkt as u64 } else { 1 };
        let limit = self.limit(ctx, bytes_mode)?;
        let (qth_min, qth_max) = self.thresholds(limit, bytes_mode)?;
        let (burst, wlog) = self.ewma(is_ns2, (qth_min, qth_max), unit_pkt)?;
        check_scaled_max(is_ns2, qth_max, wlog, bytes_mode)?;
        let (probability, max_p) = self.max_p(is_ns2)?;
        let bandwidth = self.bandwidth.map(|r| r.rate()).unwrap_or(ctx.rate);
        let (scell_log, stab) = if is_ns2 {
            (0, [0u8; 256])
        } else {
            tc_eval_idle_damping(wlog, avpkt, bandwidth.bps() as f64 / 8.0).ok_or_else(|| {
                ParamError::new(
                    "bandwidth",
                    bandwidth,
                    "a rate for which tc can build the idle-damping table",
                )
            })?
        };
        let ns2 = if is_ns2 {
            Some(self.ns2_params(bandwidth, avpkt, probability)?)
        } else {
            None
        };
        Ok(RedParams {
            bytes_mode,
            qth_min,
            qth_max,
            limit,
            avpkt,
            burst,
            wlog,
            max_p,
            bandwidth,
            scell_log,
            stab,
            ecn: self.ecn,
            gentle: self.gentle.unwrap_or(ns2.is_some()),
            harddrop: self.harddrop,
            adaptive: self.adaptive.unwrap_or(adaptive_default),
            ns2,
        })
    }

    /// Whether the thresholds (and the average) count bytes: the unit of `min`, else
    /// `max`, else `limit`, else bytes; `min` and `max` must agree.
    fn bytes_mode(&self) -> Result<bool, ParamError> {
        if let (Some(a), Some(b)) = (self.min, self.max) {
            if unit_of(a) != unit_of(b) {
                return Err(ParamError::new(
                    "max",
                    show(b),
                    format!(
                        "the same unit as min ({}): both packets (integers) or both bytes (sizes)",
                        show(a)
                    ),
                ));
            }
        }
        Ok(match (self.min, self.max, self.limit) {
            (Some(t), _, _) | (None, Some(t), _) | (None, None, Some(t)) => unit_of(t),
            (None, None, None) => true,
        })
    }

    /// The keys only one variant has: ns-2 takes a weight, Linux/tc ewma_log or burst
    /// and harddrop.
    fn check_variant_keys(&self, is_ns2: bool) -> Result<(), ParamError> {
        if !is_ns2 {
            if let Some(w) = self.weight {
                return Err(ParamError::new(
                    "weight",
                    w,
                    "set only with variant = \"ns2\" (Linux takes ewma_log or burst)",
                ));
            }
            return Ok(());
        }
        // Linux/tc-only keys: ns-2 has a weight, not a burst, and no harddrop.
        if let Some(w) = self.ewma_log {
            return Err(ParamError::new(
                "ewma_log",
                w,
                "unset with variant = \"ns2\" (give weight, ns-2's q_weight_)",
            ));
        }
        if let Some(b) = self.burst {
            return Err(ParamError::new(
                "burst",
                b,
                "unset with variant = \"ns2\" (give weight, ns-2's q_weight_)",
            ));
        }
        if self.harddrop {
            return Err(ParamError::new(
                "harddrop",
                true,
                "false with variant = \"ns2\" (ns-2 drops above max unless p <= mark_p)",
            ));
        }
        if let Some(w) = self.weight {
            if !(w > 0.0 && w < 1.0) {
                return Err(ParamError::new("weight", w, "more than 0 and less than 1"));
            }
        }
        Ok(())
    }

    /// The average packet size in bytes (tc's default 1000, ns-2's 500).
    fn avpkt(&self, is_ns2: bool) -> Result<u32, ParamError> {
        let avpkt = self
            .avpkt
            .map(|s| s.0)
            .unwrap_or(if is_ns2 { 500 } else { 1000 });
        if avpkt == 0 || avpkt > 65535 {
            return Err(ParamError::new(
                "avpkt",
                format!("{avpkt}B"),
                "1 to 65535 bytes",
            ));
        }
        Ok(avpkt as u32)
    }

    /// The queue limit: given, else 4·max or 12·min (in the thresholds' unit), else
    /// 1000 MTU-sized packets in bytes; a byte limit holds at least one MTU.
    fn limit(&self, ctx: &BuildCtx, bytes_mode: bool) -> Result<Limit, ParamError> {
        let limit = match self.limit {
            Some(l) => l,
            None => match (self.max, self.min) {
                (Some(m), _) => in_unit(4 * amount(m), bytes_mode),
                (None, Some(m)) => in_unit(12 * amount(m), bytes_mode),
                (None, None) => Limit::Bytes(1000 * ctx.mtu as u64),
            },
        };
        match limit {
            Limit::Bytes(b) if b < ctx.mtu as u64 => Err(ParamError::new(
                "limit",
                format!("{b}B"),
                format!("at least one MTU ({} bytes) or a packet count", ctx.mtu),
            )),
            _ => Ok(limit),
        }
    }

    /// (min, max) in the thresholds' unit. tc: max = min ? 3·min : limit/4 (limit in the
    /// thresholds' unit); min = max/3.
    fn thresholds(&self, limit: Limit, bytes_mode: bool) -> Result<(u64, u64), ParamError> {
        let qth_max = match (self.max, self.min) {
            (Some(m), _) => amount(m),
            (None, Some(m)) => 3 * amount(m),
            (None, None) => {
                if unit_of(limit) == bytes_mode {
                    amount(limit) / 4
                } else {
                    return Err(ParamError::new(
                        "max",
                        "unset",
                        "given when limit and the thresholds use different units",
                    ));
                }
            }
        };
        let qth_min = self.min.map(amount).unwrap_or(qth_max / 3);
        if qth_min == 0 || qth_min >= qth_max {
            return Err(ParamError::new(
                "min",
                show(in_unit(qth_min, bytes_mode)),
                format!(
                    "positive and below max ({})",
                    show(in_unit(qth_max, bytes_mode))
                ),
            ));
        }
        Ok((qth_min, qth_max))
    }

    /// (burst, ewma_log): burst given or tc's (2·min + max) / (3·avpkt); ewma_log given
    /// or tc's smallest one for that burst (0 for ns-2, which averages in floating point).
    fn ewma(
        &self,
        is_ns2: bool,
        (qth_min, qth_max): (u64, u64),
        unit_pkt: u64,
    ) -> Result<(u32, u8), ParamError> {
        let burst = match self.burst {
            Some(0) => return Err(ParamError::new("burst", 0, "at least 1 packet")),
            Some(b) => b,
            None => ((2 * qth_min + qth_max) / (3 * unit_pkt)) as u32,
        };
        let wlog = match self.ewma_log {
            // ns-2 keeps a floating-point average; Linux's fixed point is not used.
            None if is_ns2 => 0,
            Some(w) if (1..=31).contains(&w) => w,
            Some(w) => return Err(ParamError::new("ewma_log", w, "1 to 31")),
            None => tc_eval_ewma(qth_min as f64, burst, unit_pkt as f64).ok_or_else(|| {
                ParamError::new("burst", burst, format!("at least {} (burst + 1 − min/avpkt must be ≥ 1; tc: \"burst is too small\")", 1 + qth_min / unit_pkt))
            })?,
        };
        Ok((burst, wlog))
    }

    /// (probability, max_p in Q0.32): tc's default 0.02, ns-2's linterm_ 10.
    fn max_p(&self, is_ns2: bool) -> Result<(f64, u32), ParamError> {
        let probability = self.probability.unwrap_or(if is_ns2 { 0.1 } else { 0.02 });
        if !(probability > 0.0 && probability <= 1.0) {
            return Err(ParamError::new(
                "probability",
                probability,
                "more than 0 and at most 1",
            ));
        }
        // tc: max_P = probability · 2^32 as a u32 (1.0 saturates).
        let max_p = (probability * TWO32).min(u32::MAX as f64) as u32;
        if max_p == 0 {
            return Err(ParamError::new(
                "probability",
                probability,
                "at least 2^-32",
            ));
        }
        Ok((probability, max_p))
    }

    /// ns-2's constants for a link of `bandwidth`: packet time constant, weight (given
    /// or 1 − e^(−1/ptc)), ARED's bottom and the initial max_p.
    fn ns2_params(
        &self,
        bandwidth: Rate,
        avpkt: u32,
        probability: f64,
    ) -> Result<Ns2Params, ParamError> {
        let bps = bandwidth.bps() as f64;
        if bps <= 0.0 {
            return Err(ParamError::new(
                "bandwidth",
                bandwidth,
                "a positive rate (ns-2's packet time constant)",
            ));
        }
        let ptc = bps / (8.0 * avpkt as f64);
        Ok(Ns2Params {
            weight: self.weight.unwrap_or_else(|| 1.0 - (-1.0 / ptc).exp()),
            ptc,
            bottom: (80_000.0 / bps).min(0.01),
            max_p0: probability,
        })
    }

    pub fn validate(&self, ctx: &BuildCtx) -> Result<(), ParamError> {
        self.resolve(ctx, false).map(|_| ())
    }
}

impl AredConfig {
    pub const PARAMS: &'static [ParamDoc] = &ARED_PARAMS;
    pub fn validate(&self, ctx: &BuildCtx) -> Result<(), ParamError> {
        self.0.resolve(ctx, true).map(|_| ())
    }
}

/// A config that builds a [`Red`]: `red` or `ared`.
pub trait RedKind {
    fn red_params(&self, ctx: &BuildCtx) -> Result<RedParams, ParamError>;
}
impl RedKind for RedConfig {
    fn red_params(&self, ctx: &BuildCtx) -> Result<RedParams, ParamError> {
        self.resolve(ctx, false)
    }
}
impl RedKind for AredConfig {
    fn red_params(&self, ctx: &BuildCtx) -> Result<RedParams, ParamError> {
        self.0.resolve(ctx, true)
    }
}

/// `red_action`'s outcome.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RedAction {
    DontMark,
    /// Probabilistic mark (between the thresholds, or in the gentle region).
    ProbMark,
    /// Forced mark (at or above max, or above 2·max with gentle).
    HardMark,
    /// ns-2: a probabilistic drop that is a drop even for an ECN-capable packet (p_b
    /// above ns-2's `mark_p_`).
    EarlyDrop,
}

/// Trace variable indices (`TracePoint::var`) of `avg` and `max_p`.
pub const TR_AVG: u8 = 0;
pub const TR_MAXP: u8 = 1;

#[derive(Debug)]
pub struct Red {
    p: RedParams,
    /// Current max_p (Q0.32) and Linux's `max_P / Δ` used for the marking test.
    max_p: u32,
    max_p_delta: u32,
    /// Average queue, fixed point with `wlog` fraction bits.
    qavg: u64,
    /// Packets since the last mark (−1: below min).
    qcount: i64,
    /// Uniform number the next mark is compared against.
    q_r: f64,
    idle_since: Option<SimTime>,
    timer: UpdateTimer,
    q: VecDeque<Packet>,
    bytes: u64,
    stats: QdiscStats,
    rng: Rng,
    traced: [f64; 2],
    /// ns-2's state (`variant = "ns2"`).
    ns2: Option<Ns2State>,
    /// ns-2 variant: the EWMA's decay `(1 − w)^(m + 1)` for `m` = 0, 1, … below
    /// [`NS2_DECAYS`] virtual arrivals (`ns2_decay_pow`, computed once; empty otherwise).
    ns2_decays: Box<[f64]>,
}

/// ns-2 `Queue/RED` variables (`edv_`).
#[derive(Debug)]
struct Ns2State {
    /// Average queue (packets, or bytes with byte thresholds).
    ave: f64,
    /// Arrivals (and bytes) since the last drop.
    count: u64,
    count_bytes: u64,
    /// The average was at or above min with more than one packet queued at the last arrival.
    old: bool,
    cur_max_p: f64,
    /// When ARED last changed max_p.
    lastset: SimTime,
}

impl Red {
    /// Panics on parameters that `validate` rejects.
    pub fn new<C: RedKind>(cfg: &C, ctx: BuildCtx) -> Self {
        let p = cfg
            .red_params(&ctx)
            .unwrap_or_else(|e| panic!("invalid red parameters (validate first): {e:?}"));
        let max_p = p.max_p;
        let max_p_delta = (max_p / p.qth_delta().min(u32::MAX as u64) as u32).max(1);
        let p_ns2 = p.ns2.as_ref().map(|n| n.max_p0);
        let ns2_decays = match &p.ns2 {
            Some(n) => ns2_decay_table(n.weight),
            None => Box::default(),
        };
        Red {
            max_p,
            max_p_delta,
            qavg: 0,
            qcount: -1,
            q_r: 0.0,
            // red_change starts an idle period when the queue is empty.
            idle_since: Some(SimTime::ZERO),
            timer: UpdateTimer::new(SimTime::ZERO + ADAPT_PERIOD, ADAPT_PERIOD),
            p,
            q: VecDeque::new(),
            bytes: 0,
            stats: QdiscStats::default(),
            rng: ctx.rng,
            traced: [f64::NAN; 2],
            ns2: p_ns2.map(|max_p0| Ns2State {
                ave: 0.0,
                count: 0,
                count_bytes: 0,
                old: false,
                cur_max_p: max_p0,
                lastset: SimTime::ZERO,
            }),
            ns2_decays,
        }
    }

    pub fn params(&self) -> &RedParams {
        &self.p
    }
    /// The average queue in bytes or packets.
    pub fn avg(&self) -> f64 {
        match &self.ns2 {
            Some(n) => n.ave,
            None => self.qavg as f64 / (1u64 << self.p.wlog) as f64,
        }
    }
    /// Current max_p as a probability.
    pub fn max_p(&self) -> f64 {
        match &self.ns2 {
            Some(n) => n.cur_max_p,
            None => self.max_p as f64 / TWO32,
        }
    }

    fn backlog_units(&self) -> u64 {
        if self.p.bytes_mode {
            self.bytes
        } else {
            self.q.len() as u64
        }
    }

    /// `red_calc_qavg_from_idle_time` at `now`.
    fn qavg_from_idle(&self, start: SimTime, now: SimTime) -> u64 {
        let scell_max = 255u64 << self.p.scell_log;
        let us_idle = (now.saturating_since(start).as_nanos() / 1000).min(scell_max);
        let shift = self.p.stab[((us_idle >> self.p.scell_log) & 255) as usize];
        if shift != 0 {
            self.qavg >> shift
        } else {
            // (1−W)^m ≈ 1 − mW for the first part of the exponential.
            let dec = ((self.qavg as u128 * us_idle as u128) >> self.p.scell_log) as u64;
            if dec < self.qavg >> 1 {
                self.qavg - dec
            } else {
                self.qavg >> 1
            }
        }
    }

    /// `red_calc_qavg_no_idle_time`: qavg += backlog − qavg·W (in the fixed point).
    fn qavg_ewma(&self, backlog: u64) -> u64 {
        self.qavg
            .wrapping_add(backlog.wrapping_sub(self.qavg >> self.p.wlog))
    }

    /// Probability p_b at the (scaled) average `qavg` between min and 2·max.
    fn mark_probability(&self, qavg: u64) -> f64 {
        let w = self.p.wlog;
        if qavg < self.p.qth_max << w {
            // Linux: ((qavg − qth_min) >> Wlog) · (max_P / Δ) against a 32-bit random number.
            ((qavg - (self.p.qth_min << w)) >> w) as f64 * self.max_p_delta as f64 / TWO32
        } else {
            // Gentle region: from max_p at max to 1 at 2·max.
            let max_p = self.max_p();
            let avg = qavg as f64 / (1u64 << w) as f64;
            max_p + (1.0 - max_p) * (avg - self.p.qth_max as f64) / self.p.qth_max as f64
        }
    }

    /// `red_action` with the optional gentle region.
    pub fn action(&mut self, qavg: u64) -> RedAction {
        let w = self.p.wlog;
        let (min_s, max_s) = (self.p.qth_min << w, self.p.qth_max << w);
        if qavg < min_s {
            self.qcount = -1;
            return RedAction::DontMark;
        }
        if qavg >= max_s && !(self.p.gentle && qavg < 2 * max_s) {
            self.qcount = -1;
            return RedAction::HardMark;
        }
        self.qcount += 1;
        if self.qcount != 0 {
            if self.mark_probability(qavg) * self.qcount as f64 >= self.q_r {
                self.qcount = 0;
                self.q_r = self.rng.uniform();
                return RedAction::ProbMark;
            }
        } else {
            self.q_r = self.rng.uniform();
        }
        RedAction::DontMark
    }

    /// `red_adaptative_algo` at timer instant `t`.
    fn adapt(&mut self, t: SimTime) {
        let qavg = match self.idle_since {
            Some(start) => self.qavg_from_idle(start, t),
            None => self.qavg,
        };
        let avg = qavg >> self.p.wlog;
        let (lo, hi) = self.p.target_band();
        if avg > hi && self.max_p <= MAX_P_MAX {
            self.max_p += (self.max_p / 4).min(MAX_P_MIN);
        } else if avg < lo && self.max_p >= MAX_P_MIN {
            self.max_p = (self.max_p / 10) * 9;
        }
        let d = self.p.qth_delta().min(u32::MAX as u64) as u32;
        self.max_p_delta = ((self.max_p + d / 2) / d).max(1);
    }

    /// Runs the ARED timer ticks due by `now`: an inline test, as most packets find none
    /// due (a call with the loop's frame cost more than the test).
    #[inline(always)]
    fn run_adaptive(&mut self, now: SimTime, out: &mut QdiscOut) {
        if self.p.adaptive && self.timer.is_due(now) {
            self.run_due_adaptive(now, out);
        }
    }

    #[inline(never)]
    fn run_due_adaptive(&mut self, now: SimTime, out: &mut QdiscOut) {
        while let Some(t) = self.timer.due(now) {
            self.adapt(t);
            self.trace(t, out);
        }
    }

    /// Traces the average and max_p where they changed, if the run traces queues: the
    /// test inline (a call on every arrival cost more than it), the tracing out of line.
    #[inline(always)]
    fn trace(&mut self, t: SimTime, out: &mut QdiscOut) {
        if out.tracing {
            self.trace_vars_at(t, out);
        }
    }

    #[inline(never)]
    fn trace_vars_at(&mut self, t: SimTime, out: &mut QdiscOut) {
        let vals = [self.avg(), self.max_p()];
        for (i, (&x, last)) in vals.iter().zip(self.traced.iter_mut()).enumerate() {
            if x != *last {
                *last = x;
                out.trace(t, i as u8, x);
            }
        }
    }

    /// ns-2 `calculate_p_new`: p_b at the average `ave`. The gentle slope comes from the
    /// initial max_p (ns-2 sets `v_c`, `v_d` once, at reset).
    fn ns2_p(p: &RedParams, n: &Ns2State, ave: f64) -> f64 {
        let (min, max) = (p.qth_min as f64, p.qth_max as f64);
        let pb = if ave >= max {
            if p.gentle {
                let m0 = ns2_params(p).max_p0;
                (1.0 - m0) / max * ave + (2.0 * m0 - 1.0)
            } else {
                1.0
            }
        } else {
            (ave - min) / (max - min) * n.cur_max_p
        };
        pb.min(1.0)
    }

    /// ns-2 `modify_p` with `wait_` on: spaces drops uniformly over [1/p, 2/p] arrivals;
    /// with byte thresholds the count is in `avpkt` units and p scales with the size.
    fn ns2_spaced(rp: &RedParams, n: &Ns2State, p: f64, size: u32) -> f64 {
        let avpkt = rp.avpkt as u64;
        let c = if rp.bytes_mode {
            (n.count_bytes / avpkt) as f64
        } else {
            n.count as f64
        };
        let mut p = if c * p < 1.0 {
            0.0
        } else if c * p < 2.0 {
            p / (2.0 - c * p)
        } else {
            1.0
        };
        if rp.bytes_mode && p < 1.0 {
            p = p * size as f64 / avpkt as f64;
        }
        p.min(1.0)
    }

    /// ns-2 `updateMaxP`, run at an arrival once 500 ms have passed since the last change.
    fn ns2_adapt(p: &RedParams, n: &mut Ns2State, now: SimTime) {
        let bottom = ns2_params(p).bottom;
        let (min, max) = (p.qth_min as f64, p.qth_max as f64);
        let part = 0.4 * (max - min);
        if n.ave < min + part && n.cur_max_p > bottom {
            n.cur_max_p *= 0.9;
            n.lastset = now;
        } else if n.ave > max - part && n.cur_max_p < 0.5 {
            n.cur_max_p += (0.25 * n.cur_max_p).min(0.01);
            n.lastset = now;
        }
    }

    /// ns-2 `REDQueue::enque`'s early decision for `pkt`, after updating the average (and
    /// ARED's max_p). Drops at the hard limit are the caller's. (The state is updated
    /// where it lies: taken out of its `Option` and put back, it was copied twice.)
    fn ns2_arrival(&mut self, pkt: &Packet, now: SimTime) -> RedAction {
        let backlog = self.backlog_units();
        let Red {
            p,
            ns2,
            ns2_decays,
            idle_since,
            rng,
            ..
        } = self;
        let n = ns2.as_mut().expect("ns-2 state");
        let (w, ptc) = (ns2_params(p).weight, ns2_params(p).ptc);
        // Idle: as if ⌊C·idle⌋ packets had found the queue empty (estimator with m + 1).
        let m = match idle_since.take() {
            Some(start) => (ptc * now.saturating_since(start).as_secs_f64()).floor(),
            None => 0.0,
        };
        n.ave = n.ave * ns2_decay(ns2_decays, w, m) + w * backlog as f64;
        if p.adaptive && now > n.lastset + ADAPT_PERIOD {
            Self::ns2_adapt(p, n, now);
        }
        n.count += 1;
        n.count_bytes += pkt.size as u64;
        let mut action = RedAction::DontMark;
        // `qlen > 1`: packets, or bytes with byte thresholds, as ns-2 compares them
        if n.ave >= p.qth_min as f64 && backlog > 1 {
            if !n.old {
                // just crossed min (or the queue was nearly empty): restart the count
                n.count = 1;
                n.count_bytes = pkt.size as u64;
                n.old = true;
            } else {
                let p1 = Self::ns2_p(p, n, n.ave);
                let pm = Self::ns2_spaced(p, n, p1, pkt.size);
                if rng.uniform() <= pm {
                    n.count = 0;
                    n.count_bytes = 0;
                    // ns-2 marks (setbit_) only while p_b <= mark_p_ = 0.1
                    action = if p1 <= 0.1 {
                        RedAction::ProbMark
                    } else {
                        RedAction::EarlyDrop
                    };
                }
            }
        } else {
            n.old = false;
        }
        action
    }

    fn full(&self, pkt: &Packet) -> bool {
        match self.p.limit {
            Limit::Packets(n) => self.q.len() >= n as usize,
            Limit::Bytes(b) => self.bytes + pkt.size as u64 > b,
        }
    }
}

/// The ns-2 variant's settings (present whenever its state is).
fn ns2_params(p: &RedParams) -> &Ns2Params {
    p.ns2.as_ref().expect("ns-2 params")
}

/// Entries of `Red::ns2_decays`: the decays after up to 63 virtual arrivals (an idle
/// period of up to 64 packet times at ns-2's `ptc`, e.g. 25.6 ms at 10 Mbit/s and 500-byte
/// `avpkt`: the gap between two ACKs on a dumbbell's reverse link) come from the table.
const NS2_DECAYS: usize = 64;

/// The EWMA's decay over `m + 1` arrivals, `(1 − w)^(m + 1)`, for an arrival that follows
/// `m` (whole) virtual arrivals at an empty queue, as libm's `pow` gives it. `pow(x, 1)`
/// is `x` exactly (IEEE pow is correctly rounded to within half an ulp, and `x` is
/// representable), so `m = 0` needs no call. The exponent goes through `black_box`:
/// with an exponent the compiler can see, it may replace `powf` (by `x * x` for 2, which
/// can differ in the last bit), and the table must hold the bits the run-time call gives.
fn ns2_decay_pow(w: f64, m: f64) -> f64 {
    if m == 0.0 {
        1.0 - w
    } else {
        (1.0 - w).powf(std::hint::black_box(m + 1.0))
    }
}

/// `ns2_decay_pow(w, m)` for `m` = 0 … `NS2_DECAYS` − 1.
fn ns2_decay_table(w: f64) -> Box<[f64]> {
    (0..NS2_DECAYS)
        .map(|m| ns2_decay_pow(w, m as f64))
        .collect()
}

/// `ns2_decay_pow(w, m)`: computed for the usual arrival (`m = 0`, no idle period),
/// looked up in `table` (`ns2_decay_table(w)`) after a short idle period, and libm's `pow`
/// after a long one.
#[inline]
fn ns2_decay(table: &[f64], w: f64, m: f64) -> f64 {
    if m == 0.0 {
        1.0 - w
    } else if m < table.len() as f64 {
        table[m as usize]
    } else {
        (1.0 - w).powf(m + 1.0)
    }
}

impl Qdisc for Red {
    fn enqueue(&mut self, mut pkt: Packet, now: SimTime, out: &mut QdiscOut) -> Verdict {
        let action = if self.ns2.is_some() {
            self.ns2_arrival(&pkt, now)
        } else {
            self.run_adaptive(now, out);
            self.qavg = match self.idle_since.take() {
                Some(start) => self.qavg_from_idle(start, now),
                None => self.qavg_ewma(self.backlog_units()),
            };
            self.action(self.qavg)
        };
        self.trace(now, out);
        let ect = pkt.ecn.is_capable();
        let mark = match action {
            RedAction::DontMark => None,
            RedAction::ProbMark if self.p.ecn && ect => Some(MarkReason::Early),
            RedAction::ProbMark | RedAction::EarlyDrop => {
                return out.drop_arrival(&mut self.stats, pkt, DropReason::Early)
            }
            RedAction::HardMark if self.p.ecn && ect && !self.p.harddrop => {
                Some(MarkReason::Forced)
            }
            RedAction::HardMark => {
                return out.drop_arrival(&mut self.stats, pkt, DropReason::Forced)
            }
        };
        // Linux counts a RED mark even when the child FIFO then drops the packet at the
        // limit; we count only marks on packets that are queued.
        if self.full(&pkt) {
            if let Some(n) = self.ns2.as_mut() {
                // ns-2 resets the count on a forced drop too (ns1_compat_ false)
                n.count = 0;
                n.count_bytes = 0;
            }
            return out.drop_arrival(&mut self.stats, pkt, DropReason::Overlimit);
        }
        if let Some(why) = mark {
            pkt.ecn = Ecn::Ce;
            self.stats.on_mark(why);
        }
        self.stats.on_enqueue(&pkt);
        self.bytes += pkt.size as u64;
        self.q.push_back(pkt);
        match mark {
            Some(why) => Verdict::Marked(why),
            None => Verdict::Enqueued,
        }
    }

    fn dequeue(&mut self, now: SimTime, out: &mut QdiscOut) -> Option<Packet> {
        if self.ns2.is_none() {
            self.run_adaptive(now, out);
        }
        match self.q.pop_front() {
            Some(p) => {
                self.bytes -= p.size as u64;
                self.stats.on_dequeue(&p);
                Some(p)
            }
            None => {
                if self.idle_since.is_none() {
                    self.idle_since = Some(now);
                }
                None
            }
        }
    }

    fn len(&self) -> usize {
        self.q.len()
    }
    fn backlog_bytes(&self) -> u64 {
        self.bytes
    }
    fn stats(&self) -> &QdiscStats {
        &self.stats
    }
    fn trace_vars(&self) -> &'static [&'static str] {
        &["avg", "max_p"]
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{ctx, pkt};
    use super::*;

    fn red(body: &str) -> Red {
        let cfg: RedConfig = toml::from_str(body).unwrap();
        cfg.validate(&ctx(10_000_000)).unwrap();
        Red::new(&cfg, ctx(10_000_000))
    }

    #[test]
    fn tc_derivations() {
        let c = ctx(10_000_000);
        // Only limit: max = limit/4 = 100000, min = 33333, burst = 166666/3000 = 55,
        // a = 56 − 33.333 = 22.67; W = 2^-4 gives 16·(1 − (15/16)^55) = 15.5 < a,
        // W = 2^-5 gives 32·(1 − (31/32)^55) = 26.4 ≥ a ⇒ ewma_log 5.
        let p = toml::from_str::<RedConfig>("limit = \"400KB\"")
            .unwrap()
            .resolve(&c, false)
            .unwrap();
        assert!(p.bytes_mode);
        assert_eq!(
            (p.qth_min, p.qth_max, p.burst, p.wlog, p.avpkt),
            (33_333, 100_000, 55, 5, 1000)
        );
        assert_eq!(p.max_p, 85_899_345, "0.02 · 2^32 truncated");
        assert_eq!(p.bandwidth.bps(), 10_000_000, "link rate");
        // Residential 10 Mbit/s: min 12500 B → max 37500, limit 150000, burst 62500/3000
        // = 20, a = 21 − 12.5 = 8.5: 2^-3 gives 8·(1 − 0.875^20) = 7.45, 2^-4 gives
        // 16·(1 − 0.9375^20) = 11.6 ⇒ ewma_log 4.
        let p = toml::from_str::<RedConfig>("min = \"12500B\"\nbandwidth = \"10Mbit\"")
            .unwrap()
            .resolve(&c, true)
            .unwrap();
        assert_eq!(
            (p.qth_min, p.qth_max, p.limit, p.burst, p.wlog),
            (12_500, 37_500, Limit::Bytes(150_000), 20, 4)
        );
        assert!(p.adaptive);
        // DOCSIS study in packets: min 102, max 1024 → burst 1228/3 = 409, a = 410 − 102
        // = 308: 2^-9 gives 512·(1 − e^(409·ln(511/512))) = 281.9, 2^-10 gives 337.3 ⇒ 10.
        let p =
            toml::from_str::<RedConfig>("min = 102\nmax = 1024\nlimit = 2048\nprobability = 0.1")
                .unwrap()
                .resolve(&c, true)
                .unwrap();
        assert!(!p.bytes_mode);
        assert_eq!(
            (p.qth_min, p.qth_max, p.burst, p.wlog),
            (102, 1024, 409, 10)
        );
        assert_eq!(p.target_band(), (102 + 2 * 184, 102 + 3 * 184));
        // Nothing given: 1000 MTU-sized packets in bytes → max 375000, min 125000.
        let p = RedConfig::default().resolve(&c, false).unwrap();
        assert_eq!(
            (p.limit, p.qth_min, p.qth_max),
            (Limit::Bytes(1_500_000), 125_000, 375_000)
        );
    }

    #[test]
    fn validation_errors_name_the_field() {
        let c = ctx(10_000_000);
        let err = |s: &str| {
            toml::from_str::<RedConfig>(s)
                .unwrap()
                .validate(&c)
                .unwrap_err()
        };
        assert_eq!(err("min = 10\nmax = \"30KB\"").field, "max");
        assert_eq!(err("min = \"30KB\"\nmax = \"10KB\"").field, "min");
        assert_eq!(err("probability = 0.0").field, "probability");
        assert_eq!(err("probability = 1.5").field, "probability");
        assert_eq!(err("ewma_log = 0").field, "ewma_log");
        // burst 1 with min = 33 avpkt: 1 + 1 − 33 < 1.
        let e = err("min = \"33KB\"\nburst = 1");
        assert_eq!(e.field, "burst");
        assert!(e.allowed.contains("at least 34"), "{}", e.allowed);
        assert_eq!(err("limit = \"1KB\"").field, "limit");
        assert_eq!(err("avpkt = 0").field, "avpkt");
        // 2^23 bytes with ewma_log 9: 24 + 9 ≥ 32.
        assert_eq!(
            err("min = \"4MB\"\nmax = \"9MB\"\newma_log = 9").field,
            "max"
        );
        assert!(toml::from_str::<RedConfig>("mni = 3").is_err());
    }

    /// Linux's fixed-point EWMA with W = 1/4, packet thresholds (no marking):
    /// qavg (scaled by 4) = qavg + backlog − (qavg >> 2):
    ///   arrival 1: idle since t = 0, idle 0 µs → linear branch: dec 0, not < qavg/2 = 0,
    ///              so qavg = 0 >> 1 = 0
    ///   arrival 2: backlog 1 → 0 + 1 − 0 = 1        (0.25 packets)
    ///   arrival 3: backlog 2 → 1 + 2 − 0 = 3        (0.75)
    ///   arrival 4: backlog 3 → 3 + 3 − 0 = 6        (1.5)
    ///   arrival 5: backlog 4 → 6 + 4 − 1 = 9        (2.25)
    ///   arrival 6: backlog 5 → 9 + 5 − 2 = 12       (3.0)
    ///   arrival 7: backlog 6 → 12 + 6 − 3 = 15      (3.75)
    #[test]
    fn ewma_trace() {
        let mut q = red("min = 100\nmax = 300\nlimit = 1000\newma_log = 2");
        let mut out = QdiscOut::new(true);
        let t = SimTime::ZERO;
        let mut seen = vec![];
        for i in 0..7 {
            q.enqueue(pkt(1, 1500, i, t), t, &mut out);
            seen.push(q.qavg);
        }
        assert_eq!(seen, vec![0, 1, 3, 6, 9, 12, 15]);
        assert_eq!(q.avg(), 3.75);
        let avg_trace: Vec<f64> = out
            .trace
            .iter()
            .filter(|p| p.var == TR_AVG)
            .map(|p| p.value)
            .collect();
        assert_eq!(avg_trace, vec![0.0, 0.25, 0.75, 1.5, 2.25, 3.0, 3.75]);
    }

    /// Idle decay with the table tc builds for avpkt 1000 B at 10 Mbit/s, ewma_log 9:
    ///   xmit = ⌊800 µs⌋ · 15.625 = 12500 ticks; lW = −ln(1 − 1/512)/12500 = 1.56403e-7;
    ///   maxtime = 31/lW = 1.982e8 → Scell_log 19 (1.982e8/2^19 = 378 < 512);
    ///   Stab[i] = ⌊i · 2^19 · lW⌋ = ⌊0.0820 i⌋: 0 for i ≤ 12, 1 for i = 13.
    #[test]
    fn idle_decay_follows_the_kernel_table() {
        let mut q = red("min = \"30KB\"\nmax = \"90KB\"\newma_log = 9\nbandwidth = \"10Mbit\"");
        assert_eq!(q.p.scell_log, 19);
        assert_eq!(q.p.stab[12], 0);
        assert_eq!(q.p.stab[13], 1);
        assert_eq!(q.p.stab[255], 31);
        let mut out = QdiscOut::new(false);
        // An average of exactly 1000 bytes (scaled 512000), then the queue idles from 1 s.
        q.qavg = 1000 << 9;
        q.idle_since = None;
        let t1 = SimTime::from_nanos(1_000_000_000);
        assert!(q.dequeue(t1, &mut out).is_none());
        assert_eq!(q.idle_since, Some(t1));
        // 100 ms idle: index 100000 >> 19 = 0 → linear: dec = 512000·100000 >> 19 = 97656,
        // below qavg/2, so qavg = 512000 − 97656 = 414344 (809.27 bytes).
        assert_eq!(
            q.qavg_from_idle(t1, t1 + SimDuration::from_millis(100)),
            414_344
        );
        // 0.4 s idle: dec = 512000·400000 >> 19 = 390625 ≥ 256000 → qavg/2.
        assert_eq!(
            q.qavg_from_idle(t1, t1 + SimDuration::from_millis(400)),
            256_000
        );
        // 7 s idle: index 7000000 >> 19 = 13 → shift 1.
        assert_eq!(
            q.qavg_from_idle(t1, t1 + SimDuration::from_secs(7)),
            256_000
        );
        // Over 255·2^19 µs (133.7 s) the idle time saturates → shift 31 → 0.
        assert_eq!(q.qavg_from_idle(t1, t1 + SimDuration::from_secs(200)), 0);
        // The next arrival uses the idle formula and ends the idle period.
        let t2 = t1 + SimDuration::from_millis(100);
        q.enqueue(pkt(1, 1000, 1, t2), t2, &mut out);
        assert_eq!(q.qavg, 414_344);
        assert_eq!(q.idle_since, None);
        // And the one after it the EWMA: 414344 + 1000 − (414344 >> 9 = 809) = 414535.
        q.enqueue(pkt(1, 1000, 2, t2), t2, &mut out);
        assert_eq!(q.qavg, 414_535);
    }

    /// ARED: band for min 10, max 30 packets is [10 + 2·4, 10 + 3·4] = [18, 22].
    /// max_P (Q0.32) from 0.02·2^32 = 85899345, with avg 25 (above the band):
    ///   +min(42949673, 85899345/4 = 21474836)   → 107374181
    ///   +min(…, 26843545)                        → 134217726
    ///   +min(…, 33554431)                        → 167772157
    ///   +min(…, 41943039)                        → 209715196
    ///   +min(42949673, 52428799) = +42949673     → 252664869
    /// then avg 15 (below): (252664869/10)·9 = 227398374, (227398374/10)·9 = 204658533;
    /// then avg 20 (inside the band): unchanged.
    #[test]
    fn ared_adaptation_trace() {
        let cfg: AredConfig = toml::from_str("min = 10\nmax = 30\nlimit = 100").unwrap();
        cfg.validate(&ctx(10_000_000)).unwrap();
        let mut q = Red::new(&cfg, ctx(10_000_000));
        assert!(q.p.adaptive);
        assert_eq!(q.p.target_band(), (18, 22));
        assert_eq!(q.max_p, 85_899_345);
        let mut out = QdiscOut::new(true);
        q.idle_since = None;
        let w = q.p.wlog;
        let mut t = SimTime::ZERO;
        let step = |q: &mut Red, t: &mut SimTime, out: &mut QdiscOut| {
            *t += ADAPT_PERIOD;
            q.run_adaptive(*t, out);
            q.max_p
        };
        q.qavg = 25 << w;
        let up: Vec<u32> = (0..5).map(|_| step(&mut q, &mut t, &mut out)).collect();
        assert_eq!(
            up,
            vec![
                107_374_181,
                134_217_726,
                167_772_157,
                209_715_196,
                252_664_869
            ]
        );
        q.qavg = 15 << w;
        let down: Vec<u32> = (0..2).map(|_| step(&mut q, &mut t, &mut out)).collect();
        assert_eq!(down, vec![227_398_374, 204_658_533]);
        q.qavg = 20 << w;
        assert_eq!(step(&mut q, &mut t, &mut out), 204_658_533);
        // max_P / Δ (Δ = 20), rounded, is what the marking test uses.
        assert_eq!(q.max_p_delta, (204_658_533 + 10) / 20);
        // The trace recorded each change at its 500 ms tick.
        let mp: Vec<(u64, f64)> = out
            .trace
            .iter()
            .filter(|p| p.var == TR_MAXP)
            .map(|p| (p.t.as_nanos() / 1_000_000, p.value))
            .collect();
        assert_eq!(mp.len(), 7);
        assert_eq!(mp[0], (500, 107_374_181.0 / TWO32));
        assert_eq!(mp[6].0, 3500);
        // Bounds: from exactly 0.5 (50·RED_ONE_PERCENT) one more increase is allowed
        // (≤ test), to 0.51; then no more. From 0.01 one decrease, then no more.
        q.qavg = 25 << w;
        q.max_p = MAX_P_MAX;
        assert_eq!(step(&mut q, &mut t, &mut out), MAX_P_MAX + MAX_P_MIN);
        assert_eq!(step(&mut q, &mut t, &mut out), MAX_P_MAX + MAX_P_MIN);
        q.qavg = 5 << w;
        q.max_p = MAX_P_MIN;
        assert_eq!(step(&mut q, &mut t, &mut out), 4_294_967 * 9);
        assert_eq!(step(&mut q, &mut t, &mut out), 4_294_967 * 9);
        // The idle queue's decayed average drives the adaptation: a large average that
        // has been idle for 200 s counts as empty.
        q.max_p = 2 * MAX_P_MIN;
        q.qavg = 1000 << w;
        q.idle_since = Some(t);
        t += SimDuration::from_secs(200);
        q.run_adaptive(t, &mut out);
        assert!(q.max_p < 2 * MAX_P_MIN, "decreased while idle");
    }

    #[test]
    fn plain_red_does_not_adapt() {
        let mut q = red("min = 10\nmax = 30\nlimit = 100");
        let mut out = QdiscOut::new(false);
        q.idle_since = None;
        q.qavg = 25 << q.p.wlog;
        q.run_adaptive(SimTime::from_nanos(5_000_000_000), &mut out);
        assert_eq!(q.max_p, 85_899_345);
    }

    /// Linux's count method at a fixed average: p_b = 10 · ⌊max_P/Δ⌋ / 2^32 with
    /// probability 0.2, Δ = 20: ⌊858993459/20⌋ = 42949672 → p_b = 0.0999999978. Marks come
    /// when p_b · count ≥ U: gaps are uniform on 1..=10, mean 5.5 (rate 2p_b/(1+p_b)).
    #[test]
    fn count_method_spacing() {
        let mut q = red("min = 10\nmax = 30\nlimit = 100\nprobability = 0.2");
        let w = q.p.wlog;
        let qavg = 20 << w;
        assert_eq!(q.mark_probability(qavg), 429_496_720.0 / TWO32);
        // Entering the region: first packet draws U, never marks.
        assert_eq!(q.action(qavg), RedAction::DontMark);
        let (mut gap, mut gaps) = (0u32, vec![]);
        for _ in 0..100_000 {
            gap += 1;
            if q.action(qavg) == RedAction::ProbMark {
                gaps.push(gap);
                gap = 0;
            }
        }
        assert!(
            gaps.iter().all(|&g| (1..=11).contains(&g)),
            "{:?}",
            gaps.iter().max()
        );
        let mean = gaps.iter().sum::<u32>() as f64 / gaps.len() as f64;
        assert!((mean - 5.5).abs() < 0.1, "mean gap {mean}");
        // Below min resets the count; at max it is a forced mark.
        assert_eq!(q.action(5 << w), RedAction::DontMark);
        assert_eq!(q.qcount, -1);
        assert_eq!(q.action(30 << w), RedAction::HardMark);
    }

    #[test]
    fn gentle_region() {
        let mut q = red("min = 10\nmax = 30\nlimit = 100\ngentle = true\nprobability = 0.1");
        let w = q.p.wlog;
        // At 45 packets (halfway to 2·max): 0.1 + 0.9 · 15/30 = 0.55.
        let max_p = q.max_p();
        assert!((q.mark_probability(45 << w) - (max_p + (1.0 - max_p) * 0.5)).abs() < 1e-12);
        let mut marks = 0;
        for _ in 0..10_000 {
            match q.action(45 << w) {
                RedAction::ProbMark => marks += 1,
                RedAction::HardMark => panic!("no forced mark below 2·max"),
                RedAction::EarlyDrop => panic!("ns-2 only"),
                RedAction::DontMark => {}
            }
        }
        assert!(marks > 5000, "{marks}");
        assert_eq!(q.action(60 << w), RedAction::HardMark);
        // Without gentle, 45 is above max: forced.
        let mut q = red("min = 10\nmax = 30\nlimit = 100");
        assert_eq!(q.action(45 << q.p.wlog), RedAction::HardMark);
    }

    #[test]
    fn ecn_harddrop_and_reasons() {
        let mut out = QdiscOut::new(false);
        let t = SimTime::from_nanos(1000);
        let ect = |uid| {
            let mut p = pkt(1, 1000, uid, t);
            p.ecn = Ecn::Ect0;
            p
        };
        // Above max: ECN marks ECT packets (forced mark), drops not-ECT (forced drop).
        let mut q = red("min = 10\nmax = 30\nlimit = 100\necn = true");
        q.idle_since = None;
        q.qavg = 40 << q.p.wlog;
        assert_eq!(
            q.enqueue(ect(1), t, &mut out),
            Verdict::Marked(MarkReason::Forced)
        );
        assert_eq!(q.q.back().unwrap().ecn, Ecn::Ce);
        q.qavg = 40 << q.p.wlog;
        assert_eq!(
            q.enqueue(pkt(1, 1000, 2, t), t, &mut out),
            Verdict::Dropped(DropReason::Forced)
        );
        // harddrop: forced drops even for ECT.
        let mut q = red("min = 10\nmax = 30\nlimit = 100\necn = true\nharddrop = true");
        q.idle_since = None;
        q.qavg = 40 << q.p.wlog;
        assert_eq!(
            q.enqueue(ect(3), t, &mut out),
            Verdict::Dropped(DropReason::Forced)
        );
        // No ECN: probabilistic drops are Early. probability 1, empty queue and a scaled
        // average of 233 (wlog 3): the EWMA gives 233 − 29 = 204, (204 − 80) >> 3 = 15
        // packets above min → p_b = 15·⌊(2^32−1)/20⌋/2^32 ≈ 0.75.
        let mut q = red("min = 10\nmax = 30\nlimit = 100\nprobability = 1.0");
        assert_eq!(q.p.wlog, 3);
        let mut early = 0;
        for i in 0..50 {
            q.idle_since = None;
            q.qavg = 233;
            if q.enqueue(ect(10 + i), t, &mut out) == Verdict::Dropped(DropReason::Early) {
                early += 1;
            }
            while !q.is_empty() {
                q.dequeue(t, &mut out);
            }
        }
        assert!(early >= 20, "{early}");
        assert_eq!(q.stats().drops[DropReason::Early.index()], early);
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
    }

    #[test]
    fn hard_limit_in_bytes_after_red() {
        // Thresholds far above the limit: only the limit acts.
        let mut q = red("min = \"100KB\"\nmax = \"300KB\"\nlimit = \"3000B\"");
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        assert_eq!(
            q.enqueue(pkt(1, 1500, 0, t), t, &mut out),
            Verdict::Enqueued
        );
        assert_eq!(
            q.enqueue(pkt(1, 1500, 1, t), t, &mut out),
            Verdict::Enqueued
        );
        assert_eq!(
            q.enqueue(pkt(1, 1, 2, t), t, &mut out),
            Verdict::Dropped(DropReason::Overlimit)
        );
        assert_eq!(q.dequeue(t, &mut out).unwrap().uid, 0);
        assert_eq!(
            q.enqueue(pkt(1, 1500, 3, t), t, &mut out),
            Verdict::Enqueued
        );
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
    }

    // ---- variant = "ns2" (ns-2.35 queue/red.cc, tcl/lib/ns-default.tcl) ----

    fn ns2_red(body: &str, rate_bps: u64) -> Red {
        let cfg: AredConfig = toml::from_str(&format!("variant = \"ns2\"\n{body}")).unwrap();
        cfg.validate(&ctx(rate_bps)).unwrap();
        Red::new(&cfg, ctx(rate_bps))
    }

    #[test]
    fn ns2_defaults_and_key_errors() {
        // The DOCSIS study's channel: 38 Mbit/s, mean_pktsize_ 500 → C = 9500 pkt/s,
        // q_weight_ = 1 − exp(−1/9500) = 1.05257e-4; bottom = min(0.01, 80000/38e6)
        // = 0.0021053; linterm_ 10 → max_p 0.1; gentle on.
        let c = ctx(38_000_000);
        let p =
            toml::from_str::<AredConfig>("variant = \"ns2\"\nmin = 102\nmax = 1024\nlimit = 2048")
                .unwrap()
                .0
                .resolve(&c, true)
                .unwrap();
        let n = p.ns2.as_ref().unwrap();
        assert_eq!(p.avpkt, 500);
        assert!((n.ptc - 9500.0).abs() < 1e-9);
        assert!((n.weight - 1.05257e-4).abs() < 1e-9, "{}", n.weight);
        assert!((n.bottom - 0.0021053).abs() < 1e-7, "{}", n.bottom);
        assert!((p.max_p as f64 / TWO32 - 0.1).abs() < 1e-9);
        assert!(p.gentle && p.adaptive && !p.bytes_mode);
        // An explicit weight, and gentle switched off
        let p = toml::from_str::<RedConfig>(
            "variant = \"ns2\"\nmin = 5\nweight = 0.002\ngentle = false",
        )
        .unwrap()
        .resolve(&c, false)
        .unwrap();
        assert_eq!(p.ns2.unwrap().weight, 0.002);
        assert!(!p.gentle);
        let err = |s: &str| {
            toml::from_str::<RedConfig>(s)
                .unwrap()
                .validate(&c)
                .unwrap_err()
        };
        assert_eq!(
            err("variant = \"ns2\"\nmin = 5\newma_log = 9").field,
            "ewma_log"
        );
        assert_eq!(err("variant = \"ns2\"\nmin = 5\nburst = 20").field, "burst");
        assert_eq!(
            err("variant = \"ns2\"\nmin = 5\nharddrop = true").field,
            "harddrop"
        );
        assert_eq!(
            err("variant = \"ns2\"\nmin = 5\nweight = 1.5").field,
            "weight"
        );
        assert_eq!(err("min = 5\nweight = 0.002").field, "weight");
        assert!(toml::from_str::<RedConfig>("variant = \"ns3\"").is_err());
    }

    /// Float EWMA with weight 1/4 and ns-2's idle rule. Packet thresholds far away.
    ///   arrival 1 at t = 0, idle since 0: m = 0 → ave = 0·(3/4) + ¼·0 = 0
    ///   arrivals 2..4 at t = 0 with backlog 1, 2, 3 → 0.25, 0.6875, 1.265625
    ///   empty the queue at 1 ms; arrival 5 at 1 ms + 2 packet times (C = 10 Mbit/s / 4000
    ///   bit = 2500 pkt/s, 0.8 ms): m = ⌊2500 · 1.6 ms⌋ = 4 → ave = 1.265625·(3/4)^5
    ///   = 0.30034 (backlog 0)
    #[test]
    fn ns2_ewma_and_idle_trace() {
        let mut q = ns2_red(
            "min = 100\nmax = 300\nlimit = 1000\nweight = 0.25",
            10_000_000,
        );
        let mut out = QdiscOut::new(false);
        let t0 = SimTime::ZERO;
        let mut avgs = vec![];
        for i in 0..4 {
            q.enqueue(pkt(1, 1500, i, t0), t0, &mut out);
            avgs.push(q.avg());
        }
        assert_eq!(avgs, vec![0.0, 0.25, 0.6875, 1.265625]);
        let t1 = SimTime::from_nanos(1_000_000);
        while q.dequeue(t1, &mut out).is_some() {}
        assert!(q.dequeue(t1, &mut out).is_none());
        let t2 = t1 + SimDuration::from_micros(1600);
        q.enqueue(pkt(1, 1500, 9, t2), t2, &mut out);
        assert!(
            (q.avg() - 1.265625 * 0.75f64.powi(5)).abs() < 1e-12,
            "{}",
            q.avg()
        );
    }

    /// ns-2's `wait_` spacing: with the average held at 20 between min 10 and max 30 and
    /// max_p 0.1, p_b = 0.05, and drops come every 20 to 40 arrivals (mean 30); Linux's
    /// count method would space them 1 to 20 apart.
    #[test]
    fn ns2_wait_spaces_drops_between_one_and_two_over_p() {
        let mut q = {
            let cfg: RedConfig = toml::from_str(
                "variant = \"ns2\"\nmin = 10\nmax = 30\nlimit = 100\nweight = 0.5\nprobability = 0.1",
            )
            .unwrap();
            Red::new(&cfg, ctx(10_000_000))
        };
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        let mut uid = 0;
        for _ in 0..20 {
            q.enqueue(pkt(1, 1500, uid, t), t, &mut out);
            uid += 1;
        }
        let (mut gaps, mut since) = (vec![], 0u32);
        let mut drops = 0;
        while drops < 400 {
            since += 1;
            match q.enqueue(pkt(1, 1500, uid, t), t, &mut out) {
                Verdict::Dropped(DropReason::Early) => {
                    if drops > 0 {
                        gaps.push(since);
                    }
                    drops += 1;
                    since = 0;
                }
                Verdict::Enqueued => {
                    q.dequeue(t, &mut out).unwrap();
                }
                v => panic!("{v:?}"),
            }
            uid += 1;
            assert_eq!(q.len(), 20);
        }
        assert!((q.avg() - 20.0).abs() < 1e-9);
        let (lo, hi) = (*gaps.iter().min().unwrap(), *gaps.iter().max().unwrap());
        let mean = gaps.iter().sum::<u32>() as f64 / gaps.len() as f64;
        assert!(lo >= 20 && hi <= 40, "gaps {lo}..{hi}");
        assert!((mean - 30.0).abs() < 1.5, "mean gap {mean}");
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
    }

    /// No early drop for the first arrival after the average crosses min, nor while the
    /// queue holds at most one packet; the gentle region keeps the initial max_p.
    #[test]
    fn ns2_crossing_rules_and_gentle_slope() {
        let mut q = ns2_red("min = 2\nmax = 10\nlimit = 100\nweight = 0.9", 10_000_000);
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        // ave 0 → 0.9 → 1.89 → 2.889 (≥ min: the crossing arrival only restarts the count)
        for i in 0..4 {
            assert_eq!(
                q.enqueue(pkt(1, 1500, i, t), t, &mut out),
                Verdict::Enqueued
            );
        }
        let n = q.ns2.as_ref().unwrap();
        assert!(n.old && n.count == 1);
        // Gentle: from the initial max_p 0.1 at max to 1 at 2·max, whatever ARED did.
        let mut n2 = Ns2State {
            cur_max_p: 0.3,
            ..*q.ns2.as_ref().unwrap()
        };
        n2.ave = 10.0;
        assert!((Red::ns2_p(q.params(), &n2, 10.0) - 0.1).abs() < 1e-12);
        assert!((Red::ns2_p(q.params(), &n2, 15.0) - 0.55).abs() < 1e-12);
        assert!((Red::ns2_p(q.params(), &n2, 20.0) - 1.0).abs() < 1e-12);
        assert!(
            (Red::ns2_p(q.params(), &n2, 6.0) - 0.15).abs() < 1e-12,
            "between: (6-2)/8 · 0.3"
        );
        // wait_: 0 while c·p < 1, p/(2 − c·p) after, 1 from c·p = 2
        for (c, want) in [(5, 0.0), (10, 0.1), (15, 0.2), (20, 1.0)] {
            n2.count = c;
            assert!(
                (Red::ns2_spaced(q.params(), &n2, 0.1, 1500) - want).abs() < 1e-12,
                "count {c}"
            );
        }
        // One packet queued, average high: never an early drop.
        let mut q = ns2_red(
            "min = 1\nmax = 3\nlimit = 100\nweight = 0.5\nprobability = 1.0",
            10_000_000,
        );
        for i in 0..200 {
            assert_eq!(
                q.enqueue(pkt(1, 1500, i, t), t, &mut out),
                Verdict::Enqueued
            );
            q.dequeue(t, &mut out).unwrap();
        }
    }

    /// ARED as ns-2 runs it: max_p moves at arrivals, at most once per 500 ms (strictly
    /// more since the last change), ×0.9 down to the bottom min(0.01, 80000/bw):
    /// 38 Mbit/s → 0.0021; from 0.1 that takes 37 steps (0.1·0.9^37 = 0.00202 < bottom,
    /// 0.1·0.9^36 = 0.00225 > bottom). Arrivals every 100 ms to an empty queue: changes
    /// at 0.6, 1.2, … s.
    #[test]
    fn ns2_ared_adapts_at_arrivals_down_to_its_bottom() {
        let mut q = ns2_red("min = 102\nmax = 1024\nlimit = 2048", 38_000_000);
        let mut out = QdiscOut::new(false);
        let mut seen = vec![];
        for k in 0..400u64 {
            let t = SimTime::from_nanos(k * 100_000_000);
            q.enqueue(pkt(1, 1500, k, t), t, &mut out);
            q.dequeue(t, &mut out).unwrap();
            assert!(q.dequeue(t, &mut out).is_none());
            if seen.last() != Some(&q.max_p()) {
                seen.push(q.max_p());
                if seen.len() == 2 {
                    assert_eq!(k, 6, "first change at 0.6 s");
                }
            }
        }
        assert_eq!(seen.len(), 38, "0.1 and 37 decreases");
        assert!((q.max_p() - 0.1 * 0.9f64.powi(37)).abs() < 1e-12);
        // Above max − 0.4Δ: +min(0.01, max_p/4) per step, up to 0.5.
        let mut q = ns2_red(
            "min = 2\nmax = 10\nlimit = 1000\nweight = 0.5\nprobability = 0.02",
            38_000_000,
        );
        let mut t = SimTime::ZERO;
        for k in 0..200u64 {
            q.enqueue(pkt(1, 1500, k, t), t, &mut out);
            t += SimDuration::from_millis(10);
        }
        // 199 × 10 ms = 1.99 s with a full queue: changes at 0.51, 1.02, 1.53 s:
        // 0.02 → 0.025 → 0.03125 → 0.0390625
        assert!((q.max_p() - 0.0390625).abs() < 1e-12, "{}", q.max_p());
    }

    #[test]
    fn ns2_decay_is_pow_exactly() {
        // The arrival's decay skips `pow` when no virtual arrivals are due and looks it up
        // in a table after a short idle period: the result must be the bits `powf(m + 1)`
        // gives, for ns-2's automatic weights (1 − exp(−1/C) over link rates from 64 kbit/s
        // to 100 Gbit/s and avpkt 40..9000 B) and for random w, at every `m` the table
        // holds and past it.
        let mut ws: Vec<f64> = vec![0.5, 0.002, 1.0 / 3.0, f64::MIN_POSITIVE, 1.0 - f64::EPSILON];
        for bps in [64e3f64, 1e6, 10e6, 38e6, 100e6, 1e9, 10e9, 100e9] {
            for avpkt in [40.0, 500.0, 1000.0, 1500.0, 9000.0] {
                ws.push(1.0 - (-1.0 / (bps / (8.0 * avpkt))).exp());
            }
        }
        let mut rng = crate::rng::Rng::stream(11, "ns2-decay", 0);
        for _ in 0..10_000 {
            let w = rng.uniform();
            ws.push(w);
            ws.push(w * 1e-6);
        }
        let ms: Vec<f64> = (0..NS2_DECAYS as u32 + 2)
            .map(f64::from)
            .chain([1234.0])
            .collect();
        for &w in &ws {
            if !(w > 0.0 && w < 1.0) {
                continue;
            }
            // black_box: with a constant exponent the compiler may replace `powf` (by its
            // base for 1, by `x * x` for 2, which can differ in the last bit); both sides
            // must run as the simulator runs them, with `m` known only at run time
            let bb = std::hint::black_box::<f64>;
            let table = ns2_decay_table(bb(w));
            assert_eq!(table.len(), NS2_DECAYS);
            for &m in &ms {
                let e = (1.0 - w).powf(bb(m + 1.0));
                assert_eq!(
                    ns2_decay(&table, w, bb(m)).to_bits(),
                    e.to_bits(),
                    "w = {w:e}, m = {m}"
                );
            }
        }
    }
}
