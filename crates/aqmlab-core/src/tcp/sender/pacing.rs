//! Internal pacing (Linux `tcp_update_pacing_rate`, `tcp_update_skb_after_send`).

use super::*;

impl Sender {
    /// When pacing holds back a transmission, the time it may go (`NEVER` otherwise).
    pub fn pace_deadline(&self) -> SimTime {
        if self.pace_blocked {
            self.wstamp
        } else {
            SimTime::NEVER
        }
    }

    /// The current pacing rate in bytes per second (`None`: not paced / no RTT yet).
    /// Linux `tcp_update_pacing_rate`: MSS × max(cwnd, packets out) / srtt × ratio, the
    /// ratio 200 % while cwnd < ssthresh / 2 (slow start), else the CA ratio; a control
    /// may set its own rate (Prague).
    pub fn pacing_rate(&self) -> Option<f64> {
        if !self.pacing {
            return None;
        }
        let srtt = self.rtt.srtt()?;
        if srtt.as_nanos() == 0 {
            return None;
        }
        let mtu = self.mss + self.hdr;
        if let Some(r) = self.cc.pacing_rate(&self.w, srtt, mtu) {
            return Some(r);
        }
        let ratio = if self.w.cwnd < self.w.ssthresh / 2 {
            self.pacing_ss_ratio
        } else {
            self.pacing_ca_ratio
        };
        let pkts = self.w.cwnd.max(self.sb.packets_out) as f64;
        Some(self.mss as f64 * pkts * ratio as f64 / 100.0 / srtt.as_secs_f64())
    }

    /// Linux `tcp_update_skb_after_send`: the next departure is `len / rate` later; a
    /// sender that fell behind (the previous stamp already passed) earns back up to
    /// half of it. The initial window (the first 10 segments) is not paced.
    pub(super) fn paced(&mut self, now: SimTime, bytes: u32) {
        if !self.pacing {
            return;
        }
        let prior = self.wstamp;
        self.wstamp = self.wstamp.max(now);
        if self.stats.segs_sent < 10 {
            return;
        }
        let Some(rate) = self.pacing_rate() else {
            return;
        };
        let len_ns = (bytes as f64 * 1e9 / rate) as u64;
        let credit = self.wstamp.saturating_since(prior).as_nanos();
        let len_ns = len_ns - (len_ns / 2).min(credit);
        self.wstamp += SimDuration::from_nanos(len_ns);
    }
}
