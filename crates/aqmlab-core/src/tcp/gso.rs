//! GSO/TSO super-packets of a Linux sender (`[tcp] gso = "on"`): how many segments one
//! skb carries (`tcp_tso_autosize`, per kernel version).
//!
//! Sources (read in Linux 6.1 and 3.14):
//! - 6.1 `net/ipv4/tcp_output.c` `tcp_tso_autosize`: bytes = `sk_pacing_rate >>
//!   sk_pacing_shift` (10: about 1 ms of data), plus `sk_gso_max_size >> (tcp_min_rtt
//!   >> tcp_tso_rtt_log)` (`tcp_tso_rtt_log` 9: min RTT in µs / 512; only below 32,
//!   i.e. a min RTT under 16.4 ms), capped at `sk_gso_max_size` (65,536,
//!   `GSO_LEGACY_MAX_SIZE`); segments = max(bytes / mss, `min_tso_segs`);
//!   `tcp_tso_segs`: `min_tso_segs` is the control's (`bbr_min_tso_segs`: 1 below
//!   1.2 Mbit/s, else 2) or `sysctl_tcp_min_tso_segs` (2); capped at `sk_gso_max_segs`.
//! - 3.14 `net/ipv4/tcp.c` `tcp_xmit_size_goal`: bytes = `sk_pacing_rate / (2 *
//!   MSEC_PER_SEC)` (half a millisecond), at least `sysctl_tcp_min_tso_segs` (2) × mss,
//!   at most `sk_gso_max_size - 1 - hlen`; rounded down to whole segments, at least one.
//!   (Not modelled: its one-segment hysteresis `xmit_size_goal_segs` and
//!   `tcp_bound_to_half_wnd`, which only binds with a receive window under 128 KB.)
//! - `sk_pacing_rate` starts unlimited (`~0UL`, `sock_init_data`) until the first RTT
//!   sample; Linux computes it whether or not anything paces (`tcp_update_pacing_rate`).
//! - TCP Small Queues (`[tcp] tsq`, on by default with GSO; [`tsq_limit`]): the bytes of
//!   a socket's skbs below it (`sk_wmem_alloc`: in the qdisc and device of its host's
//!   first link, released by `tcp_wfree` when the skb leaves that link or is dropped
//!   there) may not exceed a limit before the next skb goes; a throttled socket sends
//!   again at the next TX completion (`tcp_tsq_handler` → `tcp_write_xmit`).
//!   6.1 `tcp_small_queue_check`: limit = max(2 × `skb->truesize`, `sk_pacing_rate >>
//!   sk_pacing_shift`), capped at `tcp_limit_output_bytes` (16 × 65,536 = 1 MiB,
//!   `tcp_sk_init`) unless the socket paces (`sk_pacing_status` ≠ `SK_PACING_NONE`:
//!   BBR, or `[tcp] pacing`), doubled for a retransmission (`factor` 1 in
//!   `tcp_xmit_retransmit_queue`); never throttled while nothing is in flight
//!   (`tcp_rtx_queue_empty`). 3.14 `tcp_write_xmit`: limit = max(`sysctl_tcp_limit_output_bytes`
//!   (131,072), `sk_pacing_rate >> 10`), new data only. `truesize` is taken as the
//!   skb's IP bytes (the kernel adds its `sk_buff` overhead, a few hundred bytes).
//!   Only `bulk` flows (and RRUL's bulk flows) deliver TX completions; other TCP
//!   workloads send without TSQ.
//! - Not modelled: TSO deferral (`tcp_tso_should_defer`).

use serde::{Deserialize, Serialize};

use crate::time::SimDuration;

/// The `[tcp] gso` key.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum Gso {
    #[serde(rename = "off")]
    Off,
    #[serde(rename = "on")]
    On,
}

/// Whose autosizing rule a GSO sender follows (from the stack profile).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GsoKernel {
    /// Linux 6.1 (profile `linux`).
    Linux6_1,
    /// Linux 3.14 (profile `linux-3.14`).
    Linux3_14,
}

/// `sk_gso_max_size` (`GSO_LEGACY_MAX_SIZE`, 64 KiB).
pub const GSO_MAX_SIZE: u64 = 65_536;
/// `sysctl_tcp_min_tso_segs`.
pub const MIN_TSO_SEGS: u32 = 2;
/// `sk_pacing_shift` (`tcp_init_sock`: 10, about 1 ms).
const PACING_SHIFT: u32 = 10;
/// `sysctl_tcp_tso_rtt_log` (6.1 default 9).
const TSO_RTT_LOG: u32 = 9;

/// 6.1 `tcp_limit_output_bytes` (`tcp_sk_init`: 16 × 65,536).
pub const LIMIT_OUTPUT_BYTES_6_1: u64 = 16 * 65_536;
/// 3.14 `sysctl_tcp_limit_output_bytes` (`tcp_output.c`: two 64 KB TSO skbs).
pub const LIMIT_OUTPUT_BYTES_3_14: u64 = 131_072;

/// The TCP Small Queues limit (`tcp_small_queue_check` in 6.1, the check in 3.14's
/// `tcp_write_xmit`): the most bytes of this socket's skbs that may sit below it before
/// the next skb of `truesize` bytes goes (the socket waits while `sk_wmem_alloc` is
/// above it). `rate`: `sk_pacing_rate` in bytes per second (`None`: the unlimited initial
/// rate); `paced`: the socket paces (`SK_PACING_NEEDED`); `retrans`: the skb is a
/// retransmission (6.1 doubles the limit; 3.14 checks new data only: `None`).
pub fn tsq_limit(
    kernel: GsoKernel,
    rate: Option<f64>,
    truesize: u32,
    paced: bool,
    retrans: bool,
) -> Option<u64> {
    match kernel {
        GsoKernel::Linux6_1 => {
            let per_ms = rate.map_or(u64::MAX, |r| r.max(0.0) as u64) >> PACING_SHIFT;
            let mut limit = (2 * truesize as u64).max(per_ms);
            if !paced {
                limit = limit.min(LIMIT_OUTPUT_BYTES_6_1);
            }
            Some(if retrans {
                limit.saturating_mul(2)
            } else {
                limit
            })
        }
        GsoKernel::Linux3_14 => {
            // (3.14's sk_pacing_rate is a u32: the initial ~0U >> 10 is 4,194,303)
            let per_ms = rate.map_or(u32::MAX as u64, |r| r.max(0.0) as u64) >> 10;
            (!retrans).then_some(LIMIT_OUTPUT_BYTES_3_14.max(per_ms))
        }
    }
}

/// Segments per skb (`tcp_tso_segs` / `tcp_xmit_size_goal`). `rate`: `sk_pacing_rate`
/// in bytes per second (`None`: no RTT sample yet, the unlimited initial rate);
/// `min_rtt`: the connection's minimum RTT (`SimDuration::MAX` before a sample);
/// `hlen`: IP + TCP header bytes; `min_tso`: the control's `min_tso_segs`.
pub fn tso_segs(
    kernel: GsoKernel,
    rate: Option<f64>,
    min_rtt: SimDuration,
    mss: u32,
    hlen: u32,
    min_tso: u32,
) -> u32 {
    let rate = rate.map_or(u64::MAX, |r| r.max(0.0) as u64);
    let mss = mss.max(1) as u64;
    match kernel {
        GsoKernel::Linux6_1 => {
            let mut bytes = rate >> PACING_SHIFT;
            let r = (min_rtt.as_nanos() / 1000).min(u32::MAX as u64) >> TSO_RTT_LOG;
            if r < 32 {
                bytes = bytes.saturating_add(GSO_MAX_SIZE >> r);
            }
            let bytes = bytes.min(GSO_MAX_SIZE);
            ((bytes / mss) as u32).max(min_tso)
        }
        GsoKernel::Linux3_14 => {
            let goal = (rate / 2000)
                .max(MIN_TSO_SEGS as u64 * mss)
                .min(GSO_MAX_SIZE - 1 - hlen as u64);
            ((goal / mss) as u32).max(1)
        }
    }
}

/// BBR's `min_tso_segs` (`bbr_min_tso_segs`): one segment below `bbr_min_tso_rate`
/// (1.2 Mbit/s), else two.
pub fn bbr_min_tso_segs(rate: Option<f64>) -> u32 {
    match rate {
        Some(r) if r < 1_200_000.0 / 8.0 => 1,
        _ => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1448;
    const HLEN: u32 = 52;
    fn mbit(m: f64) -> Option<f64> {
        Some(m * 1e6 / 8.0)
    }

    /// Linux 6.1 at three pacing rates, min RTT 20 ms (20,000 µs >> 9 = 39: no RTT term):
    /// 1 Mbit/s: 125,000 >> 10 = 122 B → 0 segments → min_tso_segs 2;
    /// 100 Mbit/s: 12,500,000 >> 10 = 12,207 B → 8 segments;
    /// 1 Gbit/s: 122,070 B → capped at 65,536 → 45 segments.
    /// With a 1 ms min RTT (1,000 >> 9 = 1) 100 Mbit/s adds 65,536 >> 1: 44,975 B → 31.
    #[test]
    fn autosize_linux_6_1_at_three_rates() {
        let k = GsoKernel::Linux6_1;
        let rtt = SimDuration::from_millis(20);
        assert_eq!(tso_segs(k, mbit(1.0), rtt, MSS, HLEN, 2), 2);
        assert_eq!(tso_segs(k, mbit(100.0), rtt, MSS, HLEN, 2), 8);
        assert_eq!(tso_segs(k, mbit(1000.0), rtt, MSS, HLEN, 2), 45);
        let short = SimDuration::from_millis(1);
        assert_eq!(tso_segs(k, mbit(100.0), short, MSS, HLEN, 2), 31);
        // BBR below 1.2 Mbit/s: one segment
        assert_eq!(bbr_min_tso_segs(mbit(1.0)), 1);
        assert_eq!(
            tso_segs(k, mbit(1.0), rtt, MSS, HLEN, bbr_min_tso_segs(mbit(1.0))),
            1
        );
        // no RTT sample yet: the unlimited initial rate fills 64 KiB
        assert_eq!(tso_segs(k, None, SimDuration::MAX, MSS, HLEN, 2), 45);
    }

    /// TSQ limits. 6.1, an skb of 2 × 1,500 = 3,000 B: at 10 Mbit/s 1,250,000 >> 10 =
    /// 1,220 B < 6,000 → 6,000 (two skbs); at 100 Mbit/s 12,500,000 >> 10 = 12,207 B.
    /// At 10 Gbit/s 1,220,703 B: capped at 1,048,576 for a socket that does not pace,
    /// not for one that does. A retransmission doubles it (12,000 / 24,414). Before an
    /// RTT sample the unpaced limit is the cap. 3.14: 131,072 at both rates, 1,220,703 at
    /// 10 Gbit/s; retransmissions are not checked.
    #[test]
    fn tsq_limit_at_two_rates() {
        let k = GsoKernel::Linux6_1;
        assert_eq!(tsq_limit(k, mbit(10.0), 3000, false, false), Some(6000));
        assert_eq!(tsq_limit(k, mbit(100.0), 3000, false, false), Some(12_207));
        assert_eq!(tsq_limit(k, mbit(10.0), 3000, false, true), Some(12_000));
        assert_eq!(tsq_limit(k, mbit(100.0), 3000, true, true), Some(24_414));
        assert_eq!(
            tsq_limit(k, mbit(10_000.0), 3000, false, false),
            Some(1_048_576)
        );
        assert_eq!(
            tsq_limit(k, mbit(10_000.0), 3000, true, false),
            Some(1_220_703)
        );
        assert_eq!(tsq_limit(k, None, 3000, false, false), Some(1_048_576));
        let k = GsoKernel::Linux3_14;
        assert_eq!(tsq_limit(k, mbit(10.0), 3000, false, false), Some(131_072));
        assert_eq!(tsq_limit(k, mbit(100.0), 3000, true, false), Some(131_072));
        assert_eq!(
            tsq_limit(k, mbit(10_000.0), 3000, false, false),
            Some(1_220_703)
        );
        assert_eq!(tsq_limit(k, mbit(100.0), 3000, false, true), None);
    }

    /// Linux 3.14 at the same rates (half a millisecond of data, at least 2 × MSS, at
    /// most 65,536 − 1 − 52 = 65,483 B):
    /// 1 Mbit/s: 125,000 / 2000 = 62 B → 2,896 B → 2 segments;
    /// 100 Mbit/s: 6,250 B → 4 segments;
    /// 1 Gbit/s: 62,500 B → 43 segments. The RTT plays no part.
    #[test]
    fn autosize_linux_3_14_at_three_rates() {
        let k = GsoKernel::Linux3_14;
        let rtt = SimDuration::from_millis(1);
        assert_eq!(tso_segs(k, mbit(1.0), rtt, MSS, HLEN, 2), 2);
        assert_eq!(tso_segs(k, mbit(100.0), rtt, MSS, HLEN, 2), 4);
        assert_eq!(tso_segs(k, mbit(1000.0), rtt, MSS, HLEN, 2), 43);
        assert_eq!(tso_segs(k, mbit(10_000.0), rtt, MSS, HLEN, 2), 45);
    }
}
