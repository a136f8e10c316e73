//! Linux receive-buffer autotuning ([`RcvTune`]): the advertised window's start and
//! growth at a receiver whose application reads at once.
//!
//! State (Linux names): `rcvbuf` (`sk_rcvbuf`), `window_clamp`, `rcv_ssthresh` (the
//! window actually offered, rounded up to the window-scale unit), `rcvq_space` (bytes
//! read in the last measured RTT) and the receiver's RTT estimate `rcv_rtt_est` (eight
//! times the estimate, as the kernel keeps it).
//!
//! - start (`tcp_select_initial_window`, `tcp_init_buffer_space`): the buffer is
//!   `tcp_rmem[1]`; `window_clamp` is its window share less one segment (the "force
//!   reservation of one segment" rule); the first window is that share rounded down to
//!   whole segments and, before 4.19, cut to 10 (3.x) or 4 (2.6) segments;
//! - per data segment of at least 128 bytes, in order or not (`tcp_grow_window`):
//!   `rcv_ssthresh` grows by max(2·advmss, 2·len) up to `window_clamp`, and the next
//!   ACK goes out at once (`icsk_ack.quick |= 1`);
//! - RTT (`tcp_rcv_rtt_measure`, `tcp_rcv_rtt_measure_ts`): with timestamps a 1/8
//!   EWMA of now − TSecr over full-sized segments (timestamp-clock ticks); always also
//!   the time to receive one advertised window, kept as a minimum;
//! - once per estimated RTT, as the application reads (`tcp_rcv_space_adjust`): if it
//!   read more than in the last RTT, the buffer is resized — 4.19–6.5: (2·copied +
//!   16·advmss, plus twice the growth over the last RTT) in `SKB_TRUESIZE` units and
//!   `window_clamp` its window share; 2.6–4.18: twice the bytes read, `window_clamp`
//!   = that — never beyond `tcp_rmem[2]` (twice the configured `rcv_window` with
//!   `tcp_adv_win_scale` 1, 4/3 of it with 2).
//!
//! Not modelled: memory charged by out-of-order data and memory pressure (the window
//! never shrinks here), the active opener's first window computed from the 1460-byte
//! `advmss` instead of the payload MSS (a segment's difference).

use super::config::RcvTune;
use crate::time::{SimDuration, SimTime};

/// `SKB_TRUESIZE(x)` on x86-64 (3.x–6.x): the data rounded up to 64 bytes plus the
/// cache-aligned `struct sk_buff` (256) and `struct skb_shared_info` (320).
fn skb_truesize(x: u64) -> u64 {
    x.div_ceil(64) * 64 + 256 + 320
}
/// `MAX_TCP_HEADER` on x86-64 (`L1_CACHE_ALIGN(128 + MAX_HEADER)`, 176 with tunnels).
const MAX_TCP_HEADER: u64 = 320;
/// `TCP_INIT_CWND`.
const TCP_INIT_CWND: u64 = 10;
/// The window-scale unit with `tcp_rmem[2]` = 6 MiB (`rcv_wscale` 7).
const WSCALE_UNIT: u64 = 128;

/// Receive-buffer autotuning state of one receiver.
#[derive(Clone, Debug)]
pub struct RcvBuf {
    kind: RcvTune,
    advmss: u64,
    rmem_max: u64,
    rcvbuf: u64,
    window_clamp: u64,
    rcv_ssthresh: u64,
    /// Buffer bytes per advertised segment (`rcvmem` of `tcp_rcv_space_adjust`).
    rcvmem: u64,
    /// `rcvq_space`: bytes read in the last measured RTT, and where / when it started.
    space: u64,
    space_seq: u64,
    space_time: SimTime,
    /// `rcv_rtt_est.rtt_us` (eight times the estimate); zero before a sample.
    rtt8: SimDuration,
    rtt_seq: u64,
    rtt_time: Option<SimTime>,
    last_tsecr: SimTime,
    /// Timestamp-clock tick of the receiver's RTT samples (1 ms; jiffies before 4.13).
    ts_tick: SimDuration,
}

impl RcvBuf {
    /// The state after the handshake and the first window (bytes) it advertises. `mss`
    /// is the payload MSS, `advmss` the MSS option (payload + timestamp option),
    /// `max_window` the configured `rcv_window` (the window share of `tcp_rmem[2]`),
    /// `hz` the kernel's timer frequency (the 2.6 and 3.x timestamp clock).
    pub fn new(kind: RcvTune, mss: u32, advmss: u32, max_window: u32, hz: u32) -> (Self, u32) {
        let (mss, advmss) = (mss as u64, advmss as u64);
        let (rmem_default, init_segs) = match kind {
            RcvTune::Linux => (131_072, None),
            RcvTune::Linux3_14 => (87_380, Some(10)),
            RcvTune::Linux2_6_29 | RcvTune::Off => (87_380, Some(4)),
        };
        let mut b = RcvBuf {
            kind,
            advmss,
            rmem_max: 0,
            rcvbuf: rmem_default,
            window_clamp: 0,
            rcv_ssthresh: 0,
            rcvmem: 0,
            space: 0,
            space_seq: 1,
            space_time: SimTime::ZERO,
            rtt8: SimDuration::ZERO,
            rtt_seq: 0,
            rtt_time: None,
            last_tsecr: SimTime::ZERO,
            ts_tick: if kind == RcvTune::Linux {
                SimDuration::from_millis(1)
            } else {
                SimDuration::from_nanos(1_000_000_000 / hz.max(1) as u64)
            },
        };
        // tcp_rmem[2] whose window share is max_window (space - space/2 or - space/4)
        b.rmem_max = match kind {
            RcvTune::Linux2_6_29 => max_window as u64 * 4 / 3,
            _ => max_window as u64 * 2,
        };
        b.rcvbuf = b.rcvbuf.min(b.rmem_max.max(1));
        // tcp_select_initial_window: the full window share, whole segments, at most
        // 64 KiB unscaled (the SYN's window), cut to the old initial segment counts.
        let full = b.win_from_space(b.rcvbuf);
        let mut rcv_wnd = if full > mss { full / mss * mss } else { full }.min(u16::MAX as u64);
        if let Some(n) = init_segs {
            rcv_wnd = rcv_wnd.min(n * mss);
        }
        // tcp_init_buffer_space: window_clamp = the full share, less one segment.
        b.window_clamp = full;
        if b.window_clamp > 2 * advmss && b.window_clamp + advmss > full {
            b.window_clamp = (2 * advmss).max(full - advmss);
        }
        b.rcv_ssthresh = rcv_wnd.min(b.window_clamp);
        b.space = match kind {
            RcvTune::Linux => b.rcv_ssthresh.min(rcv_wnd).min(TCP_INIT_CWND * advmss),
            _ => rcv_wnd,
        };
        let mut rcvmem = skb_truesize(advmss + MAX_TCP_HEADER);
        while b.win_from_space(rcvmem) < advmss {
            rcvmem += 128;
        }
        b.rcvmem = rcvmem;
        (b, rcv_wnd as u32)
    }

    /// `tcp_win_from_space`: the window share of buffer space (`tcp_adv_win_scale`).
    fn win_from_space(&self, space: u64) -> u64 {
        match self.kind {
            RcvTune::Linux2_6_29 => space - space / 4,
            _ => space - space / 2,
        }
    }

    /// The connection is established at `now` (`rcvq_space.time`).
    pub fn established(&mut self, now: SimTime) {
        self.space_time = now;
    }

    /// The window the receiver would offer now (`__tcp_select_window` without memory
    /// pressure): `rcv_ssthresh`, within the buffer's window share, rounded up to the
    /// window-scale unit.
    pub fn window(&self) -> u64 {
        let w = self.rcv_ssthresh.min(self.win_from_space(self.rcvbuf));
        w.div_ceil(WSCALE_UNIT) * WSCALE_UNIT
    }

    /// `tcp_grow_window` for a data segment of `len` bytes; true if the window grew
    /// (the kernel then ACKs the next segment at once).
    pub fn grow(&mut self, len: u32) -> bool {
        if len < 128 {
            return false;
        }
        let cap = self.window_clamp.min(self.win_from_space(self.rcvbuf));
        if self.rcv_ssthresh >= cap {
            return false;
        }
        let incr = (2 * self.advmss).max(2 * len as u64);
        self.rcv_ssthresh = (self.rcv_ssthresh + incr).min(cap);
        true
    }

    /// `tcp_rcv_rtt_update`: `win_dep` samples (one window's worth of data) are kept as
    /// a minimum, timestamp samples smoothed by 1/8.
    fn rtt_update(&mut self, sample: SimDuration, win_dep: bool) {
        let m8 = sample * 8;
        if self.rtt8 == SimDuration::ZERO {
            self.rtt8 = m8;
        } else if !win_dep {
            self.rtt8 = self.rtt8 + sample - self.rtt8 / 8;
        } else if m8 < self.rtt8 {
            self.rtt8 = m8;
        }
    }

    /// `tcp_rcv_rtt_measure` for in-order data: the time to receive one advertised
    /// window (`rcv_wnd`) beyond `rcv_nxt`.
    pub fn rtt_measure(&mut self, now: SimTime, rcv_nxt: u64, rcv_wnd: u64) {
        if let Some(t) = self.rtt_time {
            if rcv_nxt < self.rtt_seq {
                return;
            }
            let d = now.saturating_since(t).max(SimDuration::from_micros(1));
            self.rtt_update(d, true);
        }
        self.rtt_seq = rcv_nxt + rcv_wnd;
        self.rtt_time = Some(now);
    }

    /// `tcp_rcv_rtt_measure_ts`: a full-sized segment echoing `tsecr` (once per echoed
    /// value from 4.14 on), measured in timestamp-clock ticks.
    pub fn rtt_measure_ts(&mut self, now: SimTime, tsecr: SimTime, len: u32, rcv_mss: u32) {
        if self.kind == RcvTune::Linux {
            if tsecr == self.last_tsecr {
                return;
            }
            self.last_tsecr = tsecr;
        }
        if len < rcv_mss {
            return;
        }
        let tick = self.ts_tick.as_nanos().max(1);
        let ticks = (now.as_nanos() / tick)
            .saturating_sub(tsecr.as_nanos() / tick)
            .max(1);
        self.rtt_update(SimDuration::from_nanos(ticks * tick), false);
    }

    /// `tcp_rcv_space_adjust` after the application read up to `copied_seq`.
    pub fn space_adjust(&mut self, now: SimTime, copied_seq: u64) {
        if self.rtt8 == SimDuration::ZERO || now.saturating_since(self.space_time) < self.rtt8 / 8 {
            return;
        }
        let copied = copied_seq - self.space_seq;
        match self.kind {
            RcvTune::Linux => {
                if copied > self.space {
                    let mut rcvwin = 2 * copied + 16 * self.advmss;
                    let grow = rcvwin * (copied - self.space) / self.space;
                    rcvwin += 2 * grow;
                    let rcvbuf = (rcvwin / self.advmss * self.rcvmem).min(self.rmem_max);
                    if rcvbuf > self.rcvbuf {
                        self.rcvbuf = rcvbuf;
                        self.window_clamp = self.win_from_space(rcvbuf);
                    }
                    self.space = copied;
                }
            }
            _ => {
                let space = (2 * copied).max(self.space);
                if space != self.space {
                    self.space = space;
                    let rcvbuf = ((space / self.advmss).max(1) * self.rcvmem).min(self.rmem_max);
                    if rcvbuf > self.rcvbuf {
                        self.rcvbuf = rcvbuf;
                        self.window_clamp = space;
                    }
                }
            }
        }
        self.space_seq = copied_seq;
        self.space_time = now;
    }

    /// (`rcvbuf`, `window_clamp`, `rcv_ssthresh`) for tests and traces.
    pub fn state(&self) -> (u64, u64, u64) {
        (self.rcvbuf, self.window_clamp, self.rcv_ssthresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(x)
    }

    #[test]
    fn initial_windows_follow_each_kernel() {
        // 6.1: tcp_rmem[1] 131072 -> share 65536; first window 45 segments (65160);
        // clamp 65536 - 1460 = 64076 (one segment reserved); rcvq_space 10 advmss.
        let (b, w) = RcvBuf::new(RcvTune::Linux, 1448, 1460, 3 << 20, 250);
        assert_eq!(w, 65_160);
        assert_eq!(b.state(), (131_072, 64_076, 64_076));
        assert_eq!((b.space, b.window()), (14_600, 64_128));
        // rcvmem: SKB_TRUESIZE(1460 + 320) = 1792 + 576 = 2368, raised by 128 until
        // its half holds an advmss: 3008.
        assert_eq!(b.rcvmem, 3008);
        // 3.14: tcp_rmem[1] 87380 -> share 43690, clamp 42230, first window 10 segments.
        let (b, w) = RcvBuf::new(RcvTune::Linux3_14, 1448, 1460, 3 << 20, 250);
        assert_eq!(w, 14_480);
        assert_eq!(b.state(), (87_380, 42_230, 14_480));
        // 2.6.29: tcp_adv_win_scale 2 -> share 65535, first window 4 segments.
        let (b, w) = RcvBuf::new(RcvTune::Linux2_6_29, 1448, 1460, 3 << 20, 250);
        assert_eq!(w, 5_792);
        assert_eq!(b.state(), (87_380, 64_075, 5_792));
    }

    #[test]
    fn the_window_grows_two_segments_per_segment_up_to_the_clamp() {
        let (mut b, _) = RcvBuf::new(RcvTune::Linux3_14, 1448, 1460, 3 << 20, 250);
        let mut grew = 0;
        while b.grow(1448) {
            grew += 1;
        }
        // 14480 + k * 2920 reaches 42230 on the 10th segment
        assert_eq!((grew, b.state().2), (10, 42_230));
        assert!(!b.grow(100_000), "at the clamp nothing grows");
        let (mut b, _) = RcvBuf::new(RcvTune::Linux3_14, 1448, 1460, 3 << 20, 250);
        assert!(
            !b.grow(100),
            "segments under 128 bytes do not grow the window"
        );
        assert_eq!(b.state().2, 14_480);
    }

    #[test]
    fn right_sizing_follows_the_bytes_read_per_rtt() {
        // 6.1 hand-worked: rcvq_space 14600, RTT 10 ms; 29200 bytes read in the next
        // 10 ms: rcvwin = 2*29200 + 16*1460 = 81760; grow = 81760 * 14600/14600 = 81760;
        // rcvwin = 81760 + 2*81760 = 245280; rcvbuf = 245280/1460 * 3008 = 168*3008 =
        // 505344; window_clamp = 252672.
        let (mut b, _) = RcvBuf::new(RcvTune::Linux, 1448, 1460, 3 << 20, 250);
        b.established(ms(0));
        b.rtt_update(SimDuration::from_millis(10), false);
        b.space_adjust(ms(5), 1 + 10_000); // less than an RTT since the last measure
        assert_eq!(b.state().0, 131_072);
        b.space_adjust(ms(10), 1 + 29_200);
        assert_eq!(b.state(), (505_344, 252_672, 64_076));
        assert_eq!(b.space, 29_200);
        // reading no more than last time changes nothing but the measure's start
        b.space_adjust(ms(20), 1 + 29_200 + 20_000);
        assert_eq!(b.state().0, 505_344);
        // the buffer never exceeds tcp_rmem[2] (twice rcv_window)
        let (mut b, _) = RcvBuf::new(RcvTune::Linux, 1448, 1460, 200_000, 250);
        b.established(ms(0));
        b.rtt_update(SimDuration::from_millis(10), false);
        b.space_adjust(ms(10), 1 + 1_000_000);
        assert_eq!(b.state().0, 400_000);
        assert_eq!(b.state().1, 200_000);
        // 3.14: clamp = twice the bytes read, buffer in rcvmem units
        let (mut b, _) = RcvBuf::new(RcvTune::Linux3_14, 1448, 1460, 3 << 20, 250);
        b.established(ms(0));
        b.rtt_update(SimDuration::from_millis(10), false);
        b.space_adjust(ms(10), 1 + 40_000);
        assert_eq!(b.state(), (80_000 / 1460 * 3008, 80_000, 14_480));
    }

    #[test]
    fn receiver_rtt_estimate_smooths_timestamps_and_keeps_window_minimum() {
        let (mut b, _) = RcvBuf::new(RcvTune::Linux, 1448, 1460, 3 << 20, 250);
        // timestamp samples in whole milliseconds, once per echoed value
        b.rtt_measure_ts(ms(20) + SimDuration::from_micros(700), ms(10), 1448, 1448);
        assert_eq!(b.rtt8, SimDuration::from_millis(80));
        b.rtt_measure_ts(ms(40), ms(10), 1448, 1448);
        assert_eq!(
            b.rtt8,
            SimDuration::from_millis(80),
            "same TSecr: no sample"
        );
        b.rtt_measure_ts(ms(50), ms(20), 100, 1448);
        assert_eq!(
            b.rtt8,
            SimDuration::from_millis(80),
            "short segment: no sample"
        );
        b.rtt_measure_ts(ms(58), ms(40), 1448, 1448);
        // 80 + 18 - 10 = 88 ms (x8)
        assert_eq!(b.rtt8, SimDuration::from_millis(88));
        // window samples only lower it
        b.rtt_measure(ms(100), 1000, 50_000);
        b.rtt_measure(ms(130), 60_000, 50_000);
        assert_eq!(b.rtt8, SimDuration::from_millis(88), "30 ms x8 = 240 > 88");
        b.rtt_measure(ms(135), 120_000, 50_000);
        assert_eq!(b.rtt8, SimDuration::from_millis(40));
    }
}
