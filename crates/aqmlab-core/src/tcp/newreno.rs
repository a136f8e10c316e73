//! NewReno / Reno congestion control (RFC 5681 window rules; Linux `tcp_reno`).
//!
//! Slow start below ssthresh, one segment per window of acknowledged segments above it,
//! and ssthresh = max(cwnd / 2, 2) on loss, ECN and the first timeout. RFC 5681 (eq. 4)
//! halves FlightSize; Linux halves cwnd (`tcp_reno_ssthresh`), which is the default here;
//! `reno_halves = "flight"` halves the segments in flight (RFC 5681, ns-3 `TcpNewReno`).
//! The NewReno part (RFC 6582, partial ACKs) is loss recovery and lives in the sender.

use super::cc::{AckSample, CcBuild, CcParams, CongestionControl, Window};
use crate::time::SimTime;

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct NewReno;

impl NewReno {
    fn ssthresh(w: &Window) -> u32 {
        let base = if w.halve_flight { w.flight } else { w.cwnd };
        (base / 2).max(2)
    }
}

impl CcBuild for NewReno {
    fn build(_: &CcParams) -> Self {
        NewReno
    }
}

impl CongestionControl for NewReno {
    fn init(&mut self, _w: &mut Window, _now: SimTime, _snd_nxt: u64) {}

    fn on_ack(&mut self, w: &mut Window, a: &AckSample) {
        w.reno_on_ack(a);
    }

    fn on_loss(&mut self, w: &Window, _now: SimTime) -> u32 {
        Self::ssthresh(w)
    }

    fn on_rto(&mut self, w: &Window, _now: SimTime, _snd_nxt: u64, reduce: bool) -> Option<u32> {
        reduce.then(|| Self::ssthresh(w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(acked: u32) -> AckSample {
        AckSample {
            now: SimTime::ZERO,
            acked,
            rtt: None,
            snd_una: 0,
            snd_nxt: 0,
            cwnd_limited: true,
            ce: 0,
            srtt: None,
            rs: Default::default(),
        }
    }

    #[test]
    fn doubles_in_slow_start_then_grows_one_per_rtt() {
        let mut r = NewReno;
        let mut w = Window::new(10, 10_000);
        // One round: 10 segments acknowledged (5 delayed ACKs) doubles the window.
        for _ in 0..5 {
            r.on_ack(&mut w, &ack(2));
        }
        assert_eq!(w.cwnd, 20);
        w.ssthresh = r.on_loss(&w, SimTime::ZERO);
        assert_eq!(w.ssthresh, 10);
        w.cwnd = w.ssthresh;
        // Congestion avoidance: a full window of 10 acknowledged segments adds one.
        for _ in 0..10 {
            r.on_ack(&mut w, &ack(1));
        }
        assert_eq!(w.cwnd, 11);
        // Not cwnd-limited: no growth.
        let mut idle = ack(50);
        idle.cwnd_limited = false;
        r.on_ack(&mut w, &idle);
        assert_eq!(w.cwnd, 11);
        assert_eq!(
            r.on_rto(&Window::new(3, 100), SimTime::ZERO, 0, true),
            Some(2),
            "floor of 2 segments"
        );
        assert_eq!(r.on_rto(&w, SimTime::ZERO, 0, false), None);
    }
}
