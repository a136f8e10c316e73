//! Transmission (Linux `tcp_write_xmit`, `tcp_xmit_retransmit_queue`): lost segments
//! first, then new data; loss probes; the restart of the window after idle.

use super::*;

impl Sender {
    pub(super) fn cwnd_restart(&mut self, idle: SimDuration) {
        let restart = self.init_cwnd.min(self.w.cwnd);
        if !self.in_reduction() {
            // Linux tcp_current_ssthresh: remember 3/4 of the window.
            self.w.ssthresh = self.w.ssthresh.max((self.w.cwnd >> 1) + (self.w.cwnd >> 2));
        }
        let rto = self.rtt.rto().as_nanos().max(1);
        let mut cwnd = self.w.cwnd;
        let mut left = idle.as_nanos() as i128 - rto as i128;
        while left > 0 && cwnd > restart {
            cwnd >>= 1;
            left -= rto as i128;
        }
        self.w.cwnd = cwnd.max(restart);
    }

    /// Nothing outstanding, nothing to send and nothing pending at the end of a burst:
    /// [`Sender::next_segment`] would return `None` and change nothing (every branch it
    /// takes is a no-op on these conditions: no probe, pacing or TSQ; an empty
    /// scoreboard, so no loss to resend; no new data or FIN; the application-limited
    /// mark already where the empty burst would set it). This is the sending half of
    /// the receiving end of a one-way transfer, on every data segment it receives;
    /// `quiescent_sender_skips_only_no_op_sends` checks the equivalence.
    #[inline]
    pub fn is_quiescent(&self) -> bool {
        self.established
            && self.sb.is_empty()
            && self.probe.is_none()
            && !self.pacing
            && !self.pace_blocked
            && self.tsq.is_none()
            && (self.fin_sent || (self.write_end <= self.snd_nxt && !self.fin_requested))
            && self.w.cwnd > 0
            && self.reno_sacked == 0
            && self.app_limited == self.delivered.max(1)
            && self.burst_sent == 0
            && !self.probe_after_send
            && !self.rearm_after_send
    }

    /// The next segment to transmit now, if cwnd and the receive window allow one.
    /// `max_payload` caps new segments (MSS minus option space on this segment).
    pub fn next_segment(&mut self, now: SimTime, max_payload: u32) -> Option<TxSeg> {
        if !self.established {
            return None;
        }
        if let Some(p) = self.probe.take() {
            if let Some(t) = self.send_probe(now, p, max_payload) {
                return Some(t);
            }
        }
        // Linux tcp_pacing_check: nothing leaves before the pacing timestamp.
        // (Checked per skb: the later segments of a GSO skb go with its first.)
        self.pace_blocked = false;
        if self.pacing && now < self.wstamp && self.skb_bytes == 0 {
            self.pace_blocked = true;
            self.after_send(now);
            return None;
        }
        let in_flight = self.in_flight();
        // TCP Small Queues (GSO senders): an skb waits while too many bytes of this socket
        // sit below it; `tcp_write_xmit` then ends as when the window is full
        let tsq = self.tsq.is_some() && self.tsq_blocks();
        let cwnd_ok = !tsq && (in_flight < self.w.cwnd || self.force_rtx);
        if cwnd_ok {
            if let Some(i) = self.sb.next_lost() {
                let tx = self.tx_stamp(now, in_flight + 1);
                self.sb.on_retransmit(i, now);
                self.sb.set_tx(i, tx);
                if self.undo != Undo::Off {
                    // Linux tcp_retransmit_skb: the first retransmission's time, and one
                    // more retransmission a D-SACK undo must see reported.
                    if self.retrans_stamp.is_none() {
                        self.retrans_stamp = Some(now);
                    }
                    if self.undo == Undo::Linux && self.undo_retrans < 0 {
                        self.undo_retrans = 0;
                    }
                    self.undo_retrans += 1;
                }
                if i == 0 && self.timer != XmitTimer::Reo {
                    // Linux re-arms the timer when it resends the first segment
                    // (tcp_xmit_retransmit_queue; not over a pending reorder timeout).
                    self.arm(XmitTimer::Rto, now + self.rtt.rto());
                }
                self.force_rtx = false;
                self.skb_open = self.gso.is_some();
                return Some(self.resent(now, i));
            }
        }
        if !tsq && in_flight < self.w.cwnd {
            if let Some(t) = self.send_new(now, max_payload, in_flight, false) {
                self.skb_open = self.gso.is_some();
                return Some(t);
            }
        }
        // Nothing (more) to send: Linux tcp_cwnd_validate at the end of a burst.
        let is_cwnd_limited = in_flight >= self.w.cwnd;
        // Linux tcp_rate_check_app_limited: the window has room but the application
        // gave nothing to send; rate samples until this flight is delivered are
        // application-limited.
        if !is_cwnd_limited
            && self.unsent() < self.mss as u64
            && self.sb.lost_out <= self.sb.retrans_out
        {
            self.app_limited = (self.delivered + in_flight as u64).max(1);
        }
        let validate = self.burst_sent > 0 || is_cwnd_limited;
        if validate
            && (self.snd_una >= self.cwnd_usage_seq
                || is_cwnd_limited
                || (!self.is_cwnd_limited && self.sb.packets_out > self.max_packets_out))
        {
            self.is_cwnd_limited = is_cwnd_limited;
            self.max_packets_out = self.sb.packets_out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
        self.burst_sent = 0;
        self.after_send(now);
        None
    }

    /// End of a burst: the loss probe scheduled after new data (Linux `tcp_write_xmit`
    /// ends with `tcp_schedule_loss_probe`), and the RTO re-arm a reorder timeout
    /// deferred (`tcp_rack_reo_timeout` calls `tcp_rearm_rto` after
    /// `tcp_xmit_retransmit_queue`).
    pub(super) fn after_send(&mut self, now: SimTime) {
        if self.probe_after_send {
            self.probe_after_send = false;
            self.schedule_probe(now, false);
        }
        if self.rearm_after_send {
            self.rearm_after_send = false;
            if self.timer == XmitTimer::Reo {
                self.rearm_rto(now);
            }
        }
    }

    /// A new data segment if the application and the receive window allow one (the
    /// caller checked cwnd; a loss probe ignores it). Always inlined: it runs once per
    /// segment, and its call frame cost as much as some of its steps.
    #[inline(always)]
    pub(super) fn send_new(
        &mut self,
        now: SimTime,
        max_payload: u32,
        in_flight: u32,
        probe: bool,
    ) -> Option<TxSeg> {
        if self.fin_sent {
            return None;
        }
        let avail = self.write_end.saturating_sub(self.snd_nxt);
        let len = avail.min(max_payload.min(self.mss) as u64);
        let fin = self.fin_requested && self.snd_nxt + len == self.write_end;
        let room = (self.snd_una + self.rwnd).saturating_sub(self.snd_nxt);
        if !((len > 0 || fin) && len <= room) {
            return None;
        }
        if in_flight == 0 {
            self.cc
                .on_tx_start(now, now.saturating_since(self.lsndtime));
        }
        let prior_packets = self.sb.packets_out;
        let seq = self.snd_nxt;
        let end = seq + len + fin as u64;
        let tx = self.tx_stamp(now, in_flight + 1);
        self.sb.push_sent(seq, end, now, fin, tx);
        self.snd_nxt = end;
        if self.rtt.is_ns2() && self.rtt_timed.is_none() {
            // ns-2 `output`: new data is timed when no segment is
            self.rtt_timed = Some((end, now));
        }
        self.fin_sent |= fin;
        if self.tlp == Tlp::Off {
            if self.rto_deadline == SimTime::NEVER {
                self.arm(XmitTimer::Rto, now + self.rtt.rto());
            }
        } else if !probe {
            // Linux tcp_event_new_data_sent (RTO from the oldest transmission when a
            // probe held the slot); tcp_write_xmit's tcp_schedule_loss_probe follows at
            // the end of the burst (`after_send`).
            if prior_packets == 0
                || matches!(self.timer, XmitTimer::Probe | XmitTimer::EarlyRetrans)
            {
                self.rearm_rto(now);
            }
            self.probe_after_send = true;
        }
        let ect = self.ecn_ok && len > 0;
        let cwr = ect && self.queue_cwr;
        if cwr {
            self.queue_cwr = false;
        }
        self.stats.segs_sent += 1;
        self.sent_one(now);
        self.paced(now, len as u32 + self.hdr);
        Some(TxSeg {
            seq,
            end,
            payload: len as u32,
            fin,
            cwr,
            ect,
            retrans: false,
        })
    }

    /// Sends the probe of a fired loss-probe timer (Linux `tcp_send_loss_probe`): new
    /// data regardless of cwnd, else the last segment again; opens the probe episode.
    #[inline(never)]
    pub(super) fn send_probe(&mut self, now: SimTime, p: Probe, max_payload: u32) -> Option<TxSeg> {
        let in_flight = self.in_flight();
        let t = match p {
            Probe::NewData => self.send_new(now, max_payload, in_flight, true)?,
            Probe::Last => {
                let i = self.sb.len().checked_sub(1)?;
                let tx = self.tx_stamp(now, in_flight + 1);
                self.sb.on_probe_retransmit(i, now);
                self.sb.set_tx(i, tx);
                self.resent(now, i)
            }
        };
        self.stats.loss_probes += 1;
        match self.tlp {
            Tlp::Linux => {
                self.tlp_retrans = p == Probe::Last;
                self.tlp_high_seq = self.snd_nxt;
                // "Reset s.t. tcp_rearm_rto will restart timer from now."
                self.arm(XmitTimer::Rto, now + self.rtt.rto());
            }
            _ => {
                if p == Probe::Last {
                    self.tlp_high_seq = self.snd_nxt;
                }
            }
        }
        Some(t)
    }

    /// Segment `i`, whose retransmission the scoreboard has recorded, as the
    /// transmission to make: counters, pacing and the `TxSeg` (never ECT or CWR, RFC 3168
    /// 6.1.5). Serves fast/RTO retransmissions and the loss probe of the last segment.
    pub(super) fn resent(&mut self, now: SimTime, i: usize) -> TxSeg {
        let s = *self.sb.get(i);
        self.stats.retransmits += 1;
        self.stats.segs_sent += 1;
        self.sent_one(now);
        self.paced(now, s.payload() + self.hdr);
        TxSeg {
            seq: s.start,
            end: s.end,
            payload: s.payload(),
            fin: s.has(crate::tcp::scoreboard::FIN),
            cwr: false,
            ect: false,
            retrans: true,
        }
    }

    pub(super) fn sent_one(&mut self, now: SimTime) {
        self.burst_sent += 1;
        self.lsndtime = now;
        if self.in_reduction() {
            self.prr_out += 1;
        }
    }
}
