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
        self.sk_pacing_rate()
    }

    /// `sk_pacing_rate` as Linux keeps it whether or not anything paces (the rate
    /// [`pacing_rate`](Self::pacing_rate) paces at; `None` before an RTT sample).
    pub fn sk_pacing_rate(&self) -> Option<f64> {
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
        if self.gso.is_some() {
            // inside a GSO skb: paced once for all its bytes when it closes
            self.skb_bytes += bytes;
            return;
        }
        self.paced_skb(now, bytes);
    }

    /// GSO: segments the next skb may carry (`tcp_tso_segs`; 1 with GSO off).
    pub fn tso_segs(&self) -> u32 {
        let Some(k) = self.gso else {
            return 1;
        };
        let rate = self.sk_pacing_rate();
        let min_tso = if matches!(self.cc, AnyCc::Bbr(_) | AnyCc::Bbr3(_)) {
            crate::tcp::gso::bbr_min_tso_segs(rate)
        } else {
            crate::tcp::gso::MIN_TSO_SEGS
        };
        let min_rtt = self.min_rtt.unwrap_or(SimDuration::MAX);
        crate::tcp::gso::tso_segs(k, rate, min_rtt, self.mss, self.hdr, min_tso)
    }

    /// GSO: the skb whose segments `next_segment` returned since the last call is
    /// complete; pace after it by its bytes (Linux `tcp_update_skb_after_send`, once
    /// per skb).
    pub fn close_skb(&mut self, now: SimTime) {
        self.skb_open = false;
        let bytes = std::mem::take(&mut self.skb_bytes);
        if bytes > 0 {
            self.paced_skb(now, bytes);
        }
    }

    fn paced_skb(&mut self, now: SimTime, bytes: u32) {
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
