//! The congestion-control contract.
//!
//! Windows are counted in segments, as Linux counts `snd_cwnd` in packets; for
//! full-sized segments this is the byte counting of RFC 3465 (cwnd grows by one segment
//! per cwnd segments *acknowledged*, not per ACK received, so delayed ACKs do not slow
//! growth). Loss recovery, PRR and the RTO live in the sender; a congestion control only
//! decides how the window grows and what the slow-start threshold becomes after a
//! congestion signal, through the hooks of [`CongestionControl`]:
//!
//! | hook | Linux `tcp_congestion_ops` | called |
//! |---|---|---|
//! | `init` | `init` | connection established |
//! | `on_delivery` | `pkts_acked` | every ACK that delivers data (delay samples) |
//! | `on_ack` | `cong_avoid` | ACKs of new data in a state that allows growth |
//! | `on_dup_ack` | — | duplicate ACKs in the open state |
//! | `on_loss` | `ssthresh` | fast retransmit (entering recovery) |
//! | `on_ecn` | `ssthresh` | ECN-Echo (entering CWR) |
//! | `on_rto` | `ssthresh` + `set_state(Loss)` | retransmission timeout |
//! | `on_tx_start` | `cwnd_event(TX_START)` | sending resumes from idle |
//!
//! Controls are statically dispatched through [`AnyCc`].

use super::config::CcKind;
use super::cubic::Cubic;
use super::newreno::NewReno;
use crate::time::{SimDuration, SimTime};

/// "No threshold yet" (Linux TCP_INFINITE_SSTHRESH).
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// The window variables a control reads and changes (Linux `snd_cwnd`,
/// `snd_ssthresh`, `snd_cwnd_cnt`, `snd_cwnd_clamp`), in segments.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Window {
    pub cwnd: u32,
    pub ssthresh: u32,
    /// Segments acknowledged towards the next additive increase.
    pub cnt: u32,
    /// Upper bound of `cwnd` (`max_window`).
    pub clamp: u32,
}

impl Window {
    pub fn new(cwnd: u32, clamp: u32) -> Self {
        Window {
            cwnd: cwnd.min(clamp),
            ssthresh: INFINITE_SSTHRESH,
            cnt: 0,
            clamp,
        }
    }
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
    /// Slow start (RFC 5681 3.1 with RFC 3465 counting, as Linux `tcp_slow_start`): one
    /// segment per segment acknowledged, up to ssthresh. Returns the acknowledged
    /// segments left over for congestion avoidance. Deviation: RFC 3465's per-ACK limit
    /// L = 2 segments is not applied, as Linux does not apply it.
    pub fn slow_start(&mut self, acked: u32) -> u32 {
        let target = self.cwnd.saturating_add(acked).min(self.ssthresh);
        let used = target.saturating_sub(self.cwnd);
        self.cwnd = target.min(self.clamp);
        acked - used.min(acked)
    }
    /// Additive increase (RFC 5681 3.1 with RFC 3465 byte counting; Linux
    /// `tcp_cong_avoid_ai`): one segment per `w` segments acknowledged.
    pub fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        if self.cnt >= w {
            self.cnt = 0;
            self.cwnd = self.cwnd.saturating_add(1);
        }
        self.cnt += acked;
        if self.cnt >= w {
            let delta = self.cnt / w;
            self.cnt -= delta * w;
            self.cwnd = self.cwnd.saturating_add(delta);
        }
        self.cwnd = self.cwnd.min(self.clamp);
    }
}

/// What an acknowledgement tells the control.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AckSample {
    pub now: SimTime,
    /// Segments newly delivered (cumulatively acknowledged or SACKed) by this ACK.
    pub acked: u32,
    /// RTT of the most recently sent never-retransmitted segment this ACK delivered.
    pub rtt: Option<SimDuration>,
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// The sender has been limited by cwnd recently (Linux `tcp_is_cwnd_limited`); a
    /// window that is not used must not grow (RFC 7661 spirit, Linux behaviour).
    pub cwnd_limited: bool,
}

/// A congestion control algorithm. See the module doc for when each hook runs.
pub trait CongestionControl {
    fn init(&mut self, w: &mut Window, now: SimTime, snd_nxt: u64);
    fn on_delivery(&mut self, _w: &mut Window, _a: &AckSample) {}
    fn on_ack(&mut self, w: &mut Window, a: &AckSample);
    fn on_dup_ack(&mut self, _w: &mut Window, _now: SimTime) {}
    /// Returns the new ssthresh.
    fn on_loss(&mut self, w: &Window, now: SimTime) -> u32;
    /// Returns the new ssthresh. RFC 3168 6.1.2: react as to a loss.
    fn on_ecn(&mut self, w: &Window, now: SimTime) -> u32 {
        self.on_loss(w, now)
    }
    /// `reduce` is true for the first timeout of a loss episode (Linux `tcp_enter_loss`
    /// recomputes ssthresh only then); returns the new ssthresh when reducing.
    fn on_rto(&mut self, w: &Window, now: SimTime, snd_nxt: u64, reduce: bool) -> Option<u32>;
    fn on_tx_start(&mut self, _now: SimTime, _idle: SimDuration) {}
}

/// Every congestion control, statically dispatched.
#[derive(Clone, Debug)]
pub enum AnyCc {
    NewReno(NewReno),
    Cubic(Cubic),
}

impl AnyCc {
    pub fn new(kind: CcKind, hystart: bool) -> Self {
        match kind {
            CcKind::NewReno => AnyCc::NewReno(NewReno),
            CcKind::Cubic => AnyCc::Cubic(Cubic::new(hystart)),
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            AnyCc::NewReno($c) => $e,
            AnyCc::Cubic($c) => $e,
        }
    };
}

impl CongestionControl for AnyCc {
    #[inline]
    fn init(&mut self, w: &mut Window, now: SimTime, snd_nxt: u64) {
        dispatch!(self, c => c.init(w, now, snd_nxt))
    }
    #[inline]
    fn on_delivery(&mut self, w: &mut Window, a: &AckSample) {
        dispatch!(self, c => c.on_delivery(w, a))
    }
    #[inline]
    fn on_ack(&mut self, w: &mut Window, a: &AckSample) {
        dispatch!(self, c => c.on_ack(w, a))
    }
    #[inline]
    fn on_dup_ack(&mut self, w: &mut Window, now: SimTime) {
        dispatch!(self, c => c.on_dup_ack(w, now))
    }
    #[inline]
    fn on_loss(&mut self, w: &Window, now: SimTime) -> u32 {
        dispatch!(self, c => c.on_loss(w, now))
    }
    #[inline]
    fn on_ecn(&mut self, w: &Window, now: SimTime) -> u32 {
        dispatch!(self, c => c.on_ecn(w, now))
    }
    #[inline]
    fn on_rto(&mut self, w: &Window, now: SimTime, snd_nxt: u64, reduce: bool) -> Option<u32> {
        dispatch!(self, c => c.on_rto(w, now, snd_nxt, reduce))
    }
    #[inline]
    fn on_tx_start(&mut self, now: SimTime, idle: SimDuration) {
        dispatch!(self, c => c.on_tx_start(now, idle))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_stops_at_ssthresh_and_hands_over() {
        let mut w = Window::new(10, 1000);
        w.ssthresh = 14;
        assert_eq!(w.slow_start(3), 0);
        assert_eq!(w.cwnd, 13);
        assert_eq!(
            w.slow_start(3),
            2,
            "one segment used to reach ssthresh, two left over"
        );
        assert_eq!(w.cwnd, 14);
    }

    #[test]
    fn additive_increase_counts_segments_not_acks() {
        let mut w = Window::new(10, 1000);
        w.ssthresh = 5;
        // 10 segments acknowledged by 5 stretch ACKs of 2: exactly one increase.
        for _ in 0..5 {
            w.cong_avoid_ai(10, 2);
        }
        assert_eq!((w.cwnd, w.cnt), (11, 0));
        // A single ACK of 23 segments at w = 11: +2, remainder 1.
        w.cong_avoid_ai(11, 23);
        assert_eq!((w.cwnd, w.cnt), (13, 1));
        let mut c = Window::new(10, 11);
        c.ssthresh = 1;
        c.cong_avoid_ai(1, 5);
        assert_eq!(c.cwnd, 11, "clamped");
    }
}
