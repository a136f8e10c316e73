//! DCTCP (RFC 8257; Linux `net/ipv4/tcp_dctcp.c`).
//!
//! The sender keeps `alpha`, an estimate of the fraction of its packets that are
//! CE-marked, in Linux's fixed point (1024 = 1). Once per window of data (when
//! `snd_una` passes the `snd_nxt` recorded at the previous update) it folds the
//! window's marked fraction F into it:
//!
//! alpha ← alpha − alpha·g + g·F, g = 1/16 (`dctcp_shift_g = 4`),
//!
//! computed as Linux does: `alpha -= min_not_zero(alpha, alpha >> 4)`, then, if any
//! segment was marked, `alpha += (ce << 6) / delivered` capped at 1024. alpha starts at
//! 1024 (`dctcp_alpha_on_init`). A CE echo makes the sender enter CWR (once per
//! window, as RFC 3168) with ssthresh = cwnd − cwnd·alpha/2 (`cwnd − (cwnd·alpha >>
//! 11)`, at least 2); the window then falls to it by PRR, as in Linux. Loss and
//! timeouts halve the window as Reno; growth is Reno's.
//!
//! Feedback: Linux DCTCP echoes the exact CE state through its receiver state machine
//! (`dctcp_ece_ack_update`) or, since 6.18, through Accurate ECN counters. Here the
//! connection negotiates AccECN and the sender sees the count of CE-marked delivered
//! segments per ACK (`AckSample::ce`), which is the same information.

use super::cc::{AckSample, CcBuild, CcParams, CongestionControl, Window};
use super::config::TcpConfig;
use crate::time::SimTime;

/// alpha = 1 in Linux's fixed point (`DCTCP_MAX_ALPHA`).
pub const MAX_ALPHA: u32 = 1024;
/// g = 1/2^4 (`dctcp_shift_g` default).
pub const SHIFT_G: u32 = 4;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dctcp {
    /// Marked-fraction estimate, 1024 = 1.
    pub alpha: u32,
    /// Segments delivered / CE-marked since the last alpha update.
    delivered: u32,
    delivered_ce: u32,
    /// `snd_nxt` at the last update: the window ends when `snd_una` reaches it.
    next_seq: u64,
    ecn_ok: bool,
}

impl Dctcp {
    pub fn new(cfg: &TcpConfig) -> Self {
        Self::build(&CcParams::from_config(cfg))
    }
}

impl CcBuild for Dctcp {
    fn build(_p: &CcParams) -> Self {
        Dctcp {
            alpha: MAX_ALPHA,
            delivered: 0,
            delivered_ce: 0,
            next_seq: 0,
            ecn_ok: true,
        }
    }
}

impl Dctcp {
    /// One alpha update over a window with `delivered` segments, `ce` of them marked
    /// (Linux `dctcp_update_alpha`, the expired-RTT branch).
    pub fn fold(alpha: u32, delivered: u32, ce: u32) -> u32 {
        let mut a = alpha;
        // min_not_zero(alpha, alpha >> g): below 16 the decay takes alpha to 0.
        let dec = if a >> SHIFT_G == 0 { a } else { a >> SHIFT_G };
        a -= dec;
        if ce > 0 {
            let f = ((ce as u64) << (10 - SHIFT_G)) / delivered.max(1) as u64;
            a = (a as u64 + f).min(MAX_ALPHA as u64) as u32;
        }
        a
    }

    fn reno_ssthresh(w: &Window) -> u32 {
        (w.cwnd / 2).max(2)
    }
}

impl CongestionControl for Dctcp {
    fn init(&mut self, _w: &mut Window, _now: SimTime, snd_nxt: u64) {
        self.next_seq = snd_nxt;
        self.delivered = 0;
        self.delivered_ce = 0;
    }

    fn set_ecn_ok(&mut self, ok: bool) {
        // Without ECN Linux switches to `dctcp_reno`: Reno's ssthresh on every signal.
        self.ecn_ok = ok;
    }

    fn on_ack_event(&mut self, _w: &mut Window, a: &AckSample) {
        self.delivered += a.acked;
        self.delivered_ce += a.ce;
        if a.snd_una >= self.next_seq {
            self.alpha = Self::fold(self.alpha, self.delivered, self.delivered_ce);
            self.next_seq = a.snd_nxt;
            self.delivered = 0;
            self.delivered_ce = 0;
        }
    }

    fn on_ack(&mut self, w: &mut Window, a: &AckSample) {
        // tcp_reno_cong_avoid.
        w.reno_on_ack(a);
    }

    fn on_loss(&mut self, w: &Window, _now: SimTime) -> u32 {
        // dctcp_react_to_loss on entering Recovery.
        Self::reno_ssthresh(w)
    }

    fn on_ecn(&mut self, w: &Window, _now: SimTime) -> u32 {
        if !self.ecn_ok {
            return Self::reno_ssthresh(w);
        }
        // dctcp_ssthresh.
        let cut = ((w.cwnd as u64 * self.alpha as u64) >> 11) as u32;
        (w.cwnd - cut).max(2)
    }

    fn on_rto(&mut self, w: &Window, _now: SimTime, _snd_nxt: u64, reduce: bool) -> Option<u32> {
        reduce.then(|| Self::reno_ssthresh(w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(acked: u32, ce: u32, una: u64, nxt: u64) -> AckSample {
        AckSample {
            now: SimTime::ZERO,
            acked,
            rtt: None,
            snd_una: una,
            snd_nxt: nxt,
            cwnd_limited: true,
            ce,
            srtt: None,
            rs: Default::default(),
        }
    }

    #[test]
    fn alpha_follows_the_linux_update_hand_trace() {
        // Windows with marked fractions 0, 1/2, 1/4, 0 starting from alpha = 1024.
        // 1024 − 64 = 960;             F = 0
        // 960 − 60 = 900; + (5<<6)/10 = 32 → 932
        // 932 − 58 = 874; + (5<<6)/20 = 16 → 890
        // 890 − 55 = 835
        let windows = [(10u32, 0u32), (10, 5), (20, 5), (10, 0)];
        let mut d = Dctcp::new(&TcpConfig::default());
        let mut w = Window::new(10, 1000);
        // Each window is acknowledged one segment per ACK; the last ACK of a window
        // reaches the boundary while the next window is already sent.
        let mut start = 1u64;
        d.init(&mut w, SimTime::ZERO, start + windows[0].0 as u64);
        let mut trace = vec![];
        for (i, &(n, ce)) in windows.iter().enumerate() {
            let next_n = windows.get(i + 1).map_or(0, |x| x.0) as u64;
            for k in 1..=n {
                let marked = (k <= ce) as u32;
                let nxt = start + n as u64 + next_n;
                d.on_ack_event(&mut w, &ack(1, marked, start + k as u64, nxt));
                if k < n {
                    assert_eq!(
                        d.alpha,
                        trace.last().copied().unwrap_or(1024),
                        "no update inside a window"
                    );
                }
            }
            start += n as u64;
            trace.push(d.alpha);
        }
        assert_eq!(trace, vec![960, 932, 890, 835]);
        // The formula in floating point agrees within Linux's truncation.
        let mut a = 1.0f64;
        for f in [0.0, 0.5, 0.25, 0.0] {
            a = a * (1.0 - 1.0 / 16.0) + f / 16.0;
        }
        assert!((a - 835.0 / 1024.0).abs() < 0.01, "{a}");
    }

    #[test]
    fn small_alpha_decays_to_zero_and_saturates_at_one() {
        assert_eq!(
            Dctcp::fold(15, 10, 0),
            0,
            "min_not_zero: below 16 alpha drops to 0"
        );
        assert_eq!(Dctcp::fold(16, 10, 0), 15);
        assert_eq!(Dctcp::fold(1024, 10, 10), 1024, "capped at 1");
        assert_eq!(Dctcp::fold(0, 10, 10), 64, "an all-marked window adds g");
    }

    #[test]
    fn ssthresh_cuts_by_half_alpha() {
        let mut d = Dctcp::new(&TcpConfig::default());
        let w = Window::new(100, 1000);
        d.alpha = 1024;
        assert_eq!(
            d.on_ecn(&w, SimTime::ZERO),
            50,
            "alpha = 1 halves like Reno"
        );
        d.alpha = 256;
        assert_eq!(
            d.on_ecn(&w, SimTime::ZERO),
            88,
            "100 − 100·256 >> 11 = 100 − 12"
        );
        d.alpha = 0;
        assert_eq!(d.on_ecn(&w, SimTime::ZERO), 100);
        assert_eq!(d.on_loss(&w, SimTime::ZERO), 50, "loss halves");
        d.set_ecn_ok(false);
        d.alpha = 0;
        assert_eq!(d.on_ecn(&w, SimTime::ZERO), 50, "dctcp-reno without ECN");
    }
}
