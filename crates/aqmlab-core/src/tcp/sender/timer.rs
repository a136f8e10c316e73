//! The one retransmission-timer slot (Linux `icsk_pending`): RTO, tail loss probe, RACK
//! reorder timeout and delayed early retransmit.
//!
//! ## Tail loss probes and early retransmit
//! `tlp` (RFC 8985 §7, Linux `tcp_schedule_loss_probe` / `tcp_send_loss_probe`): in
//! Open (6.1: also CWR; not in Linux's Disorder, i.e. with SACKed, lost or
//! retransmitted data out) the timer slot holds a probe timeout (PTO) instead of the
//! RTO; see [`Tlp`] for the PTO of each flavour. When it fires the sender sends one
//! segment, new data if the receive window allows (ignoring cwnd), else the last segment
//! again (not counted as a retransmission in flight), and opens a probe episode
//! (`tlp_high_seq`); an ACK above it after a retransmitted probe means the probe
//! repaired a loss: cwnd is reduced once (CWR entered and left at once), unless a D-SACK
//! (`dsack`) or a duplicate ACK showed that the probe was redundant. Linux keeps one
//! timer for RTO, probe and reorder timeout: [`Sender::rto_deadline`] and
//! [`Sender::timer_kind`] are that slot, [`Sender::on_xmit_timer`] fires it; the RTO
//! re-armed over a probe or reorder timeout counts from the oldest outstanding
//! transmission (`tcp_rearm_rto`).
//!
//! `early_retransmit` (RFC 5827 as Linux 3.5–4.10 with `tcp_early_retrans = 3`, the
//! `linux-3.14` profile; RACK replaced it in 4.11): an ACK that does not start recovery
//! while fewer than 4 segments are out, at least one is SACKed, none is retransmitted and
//! no new segment may go (`tcp_may_send_now`) arms the delayed-ER timer in the same slot
//! for max(SRTT/4, 2 ms) in jiffies (`tcp_pause_early_retransmit`; at once with ECE, no
//! SRTT, or when the armed timer would fire first); when it fires, fast recovery starts
//! with the head marked lost (`tcp_resume_early_retransmit`). A loss probe is not
//! scheduled over it (3.14 probes only when the RTO holds the slot).

use super::*;

impl Sender {
    /// Deadline of the retransmission-timer slot (RTO, tail loss probe or RACK reorder
    /// timeout: Linux keeps one timer for the three); `NEVER` when unarmed.
    pub fn rto_deadline(&self) -> SimTime {
        self.rto_deadline
    }

    /// What the timer slot is armed for.
    pub fn timer_kind(&self) -> XmitTimer {
        self.timer
    }

    pub(super) fn arm(&mut self, kind: XmitTimer, at: SimTime) {
        self.timer = kind;
        self.rto_deadline = at;
    }

    /// Linux `tcp_rearm_rto`: no timer with nothing outstanding; else the RTO, counted
    /// from the oldest outstanding transmission when a probe or reorder timeout held
    /// the slot (`tcp_rto_delta_us`), from now otherwise.
    pub(super) fn rearm_rto(&mut self, now: SimTime) {
        if self.sb.packets_out == 0 {
            self.arm(XmitTimer::Rto, SimTime::NEVER);
            return;
        }
        let at = if self.timer == XmitTimer::Rto {
            now + self.rtt.rto()
        } else {
            self.head_rto_deadline()
                .max(now + SimDuration::from_nanos(1_000))
        };
        self.arm(XmitTimer::Rto, at);
    }

    /// RTO deadline counted from the oldest outstanding transmission.
    pub(super) fn head_rto_deadline(&self) -> SimTime {
        self.sb.get(0).sent + self.rtt.rto()
    }

    /// `d` rounded up to whole jiffies (Linux `usecs_to_jiffies`, `msecs_to_jiffies`).
    pub(super) fn jiffies(&self, d: SimDuration) -> SimDuration {
        let j = self.jiffy.as_nanos();
        SimDuration::from_nanos(d.as_nanos().div_ceil(j) * j)
    }

    /// Linux `TCP_TIMEOUT_MIN` (2 jiffies: 8 ms at 250 Hz).
    pub(super) fn timeout_min(&self) -> SimDuration {
        SimDuration::from_nanos(self.jiffy.as_nanos() * TIMEOUT_MIN_JIFFIES)
    }

    /// Linux `tcp_schedule_loss_probe` (`advancing_rto`: called for an ACK of new data,
    /// when the RTO would be restarted from now). Returns whether a probe was armed.
    #[inline(never)]
    pub(super) fn schedule_probe(&mut self, now: SimTime, advancing_rto: bool) -> bool {
        if self.sb.packets_out == 0 {
            return false;
        }
        // The cheap tests of each flavour first; `disorder` reads the head segment.
        match self.tlp {
            Tlp::Off => false,
            Tlp::Linux => {
                if !matches!(self.state, CaState::Open | CaState::Cwr) || self.disorder() {
                    return false;
                }
                let Some(srtt) = self.rtt.srtt() else {
                    return false;
                };
                // usecs_to_jiffies(srtt_us >> 2) + TCP_RTO_MIN or TCP_TIMEOUT_MIN.
                let mut pto = self.jiffies(srtt * 2)
                    + if self.sb.packets_out == 1 {
                        self.min_rto
                    } else {
                        self.timeout_min()
                    };
                let rto_at = if advancing_rto {
                    now + self.rtt.rto()
                } else {
                    self.head_rto_deadline()
                };
                if rto_at > now {
                    pto = pto.min(rto_at.saturating_since(now));
                }
                self.arm(XmitTimer::Probe, now + pto);
                true
            }
            Tlp::Linux3_14 => {
                // Only when the RTO is the pending timer, in Open, and when the sender
                // is cwnd- or application-limited.
                if self.timer != XmitTimer::Rto
                    || self.rto_deadline == SimTime::NEVER
                    || self.state != CaState::Open
                    || (self.w.cwnd > self.in_flight() && self.unsent() > 0)
                    || self.disorder()
                {
                    return false;
                }
                let Some(srtt) = self.rtt.srtt() else {
                    return false;
                };
                let mut pto = self.jiffies(srtt * 2);
                if self.sb.packets_out == 1 {
                    // 1.5·SRTT + TCP_DELACK_MAX (200 ms).
                    pto = pto.max(self.jiffies(srtt + srtt / 2) + SimDuration::from_millis(200));
                }
                debug_assert_eq!(
                    self.probe_floor_3_14,
                    self.jiffies(SimDuration::from_millis(10))
                );
                pto = pto.max(self.probe_floor_3_14);
                let rto_at = self.rto_deadline;
                if now + pto > rto_at && rto_at > now {
                    pto = rto_at.saturating_since(now);
                }
                self.arm(XmitTimer::Probe, now + pto);
                true
            }
        }
    }

    /// Linux's Disorder state (SACKed, lost or retransmitted data outstanding, or a
    /// retransmitted head), which counts as Open here but takes no probe.
    fn disorder(&self) -> bool {
        self.sb.sacked_out + self.sb.lost_out + self.sb.retrans_out > 0
            || self.sb.get(0).has(crate::tcp::scoreboard::EVER_RETRANS)
    }

    /// The retransmission-timer slot expired (`rto_deadline() <= now`): an RTO
    /// ([`Sender::on_rto`]), a tail loss probe (the probe segment is then the next one
    /// [`Sender::next_segment`] returns) or a RACK reorder timeout (lost segments are
    /// then retransmitted by `next_segment`). Returns what fired.
    pub fn on_xmit_timer(&mut self, now: SimTime) -> XmitTimer {
        let kind = self.timer;
        match kind {
            XmitTimer::Rto => self.on_rto(now),
            XmitTimer::Probe => self.on_probe_timer(now),
            XmitTimer::Reo => self.on_reo_timer(now),
            XmitTimer::EarlyRetrans => self.on_early_retransmit_timer(now),
        }
        kind
    }

    /// Linux `tcp_send_loss_probe` (6.1 / 3.14): new data if the receive window allows,
    /// else the last segment again.
    pub(super) fn on_probe_timer(&mut self, now: SimTime) {
        if self.sb.packets_out == 0 {
            self.arm(XmitTimer::Rto, SimTime::NEVER);
            return;
        }
        let room = (self.snd_una + self.rwnd).saturating_sub(self.snd_nxt);
        let avail = self
            .write_end
            .saturating_sub(self.snd_nxt)
            .min(self.mss as u64);
        let new_data = !self.fin_sent
            && (avail > 0 || self.fin_requested)
            && avail <= room
            && !(self.pacing && now < self.wstamp);
        match self.tlp {
            Tlp::Linux3_14 => {
                // 3.14 probes new data whenever some is queued; no episode for it.
                if self.unsent() > 0 && !self.fin_sent {
                    if new_data {
                        self.probe = Some(Probe::NewData);
                    }
                } else if self.tlp_high_seq == 0 {
                    let last = self.sb.get(self.sb.len() - 1);
                    // "Probe with zero data doesn't trigger fast recovery."
                    if last.payload() > 0 {
                        self.probe = Some(Probe::Last);
                    }
                }
                // The RTO restarts from now either way.
                self.arm(XmitTimer::Rto, now + self.rtt.rto());
            }
            _ => {
                if self.tlp_high_seq != 0 {
                    // At most one probe episode at a time.
                    self.rearm_rto(now);
                    return;
                }
                self.tlp_retrans = false;
                self.probe = Some(if new_data {
                    Probe::NewData
                } else {
                    Probe::Last
                });
                // Until the probe is sent (next_segment re-arms from its send time).
                self.rearm_rto(now);
            }
        }
    }

    /// Linux `tcp_rack_reo_timeout`: mark what has become due; entering recovery if
    /// something was; the RTO re-armed after the retransmissions.
    pub(super) fn on_reo_timer(&mut self, now: SimTime) {
        self.stats.reo_timeouts += 1;
        let prior_in_flight = self.in_flight();
        let lost_before = self.sb.lost_total;
        self.rack_detect(now);
        if self.in_flight() != prior_in_flight && self.state != CaState::Recovery {
            self.enter_recovery(now, false);
            if !self.cc.owns_cwnd() && self.recovery == Recovery::Prr {
                let newly_lost = self.sb.lost_total > lost_before;
                self.cwnd_reduction(1, newly_lost, false);
            }
        }
        // The slot still says "reorder timeout", so a retransmitted head does not
        // restart the RTO; it is re-armed once the retransmissions have gone out.
        self.rearm_after_send = true;
    }

    /// Linux 3.x `tcp_resume_early_retransmit`: the RTO takes the timer slot again
    /// (counted from the oldest transmission), fast recovery starts and the head (FACK:
    /// everything more than 3 below the highest SACK, at least the head) is marked lost
    /// and retransmitted; cwnd is left to the ACKs that follow.
    pub(super) fn on_early_retransmit_timer(&mut self, now: SimTime) {
        self.rearm_rto(now);
        if self.state == CaState::Recovery || self.sb.packets_out == 0 {
            return;
        }
        self.stats.early_retransmits += 1;
        self.enter_recovery(now, false);
        if self.fack {
            self.sb.mark_lost_fack(self.high_seq, now, self.rtt.rto());
        } else {
            self.sb.mark_head_lost();
        }
    }

    /// RFC 5827 early retransmit as Linux 3.14's `tcp_time_to_recover` (trick 6) and
    /// `tcp_pause_early_retransmit` decide it, for an ACK that did not start recovery:
    /// `Some(true)` = recover now, `Some(false)` = the delayed-ER timer was armed, `None`
    /// = not a case for early retransmit.
    pub(super) fn early_retransmit(&mut self, now: SimTime, ece: bool) -> Option<bool> {
        let (out, sacked) = (self.sb.packets_out, self.sb.sacked_out);
        if !self.early_rtx
            || self.sb.retrans_out > 0
            || sacked == 0
            || out < sacked + 1
            || out >= 4
            || self.may_send_now()
        {
            return None;
        }
        let Some(srtt) = self.rtt.srtt().filter(|_| !ece) else {
            return Some(true);
        };
        // max(srtt >> 5 in jiffies, msecs_to_jiffies(2)): SRTT/4 rounded down to jiffies.
        let j = self.jiffy.as_nanos();
        let quarter = SimDuration::from_nanos((srtt / 4).as_nanos() / j * j);
        let delay = quarter.max(self.jiffies(SimDuration::from_millis(2)));
        if self.rto_deadline <= now + delay {
            // The armed timer fires first: recover now.
            return Some(true);
        }
        self.arm(XmitTimer::EarlyRetrans, now + delay);
        Some(false)
    }

    /// Linux `tcp_may_send_now`: a new segment would pass the cwnd and receive-window
    /// tests (no Nagle: applications write whole messages).
    pub(super) fn may_send_now(&self) -> bool {
        let avail = self.unsent().min(self.mss as u64);
        avail > 0
            && self.in_flight() < self.w.cwnd
            && self.snd_nxt + avail <= self.snd_una + self.rwnd
    }

    /// Linux `tcp_process_tlp_ack`: the end of a probe episode. An ACK above
    /// `tlp_high_seq` after a retransmitted probe means the probe repaired a loss: cwnd
    /// is reduced once (CWR entered and left at once). The original and the probe both
    /// arrived when a D-SACK reports the probed segment (6.1: `FLAG_DSACK_TLP`, a D-SACK
    /// of at most one segment ending at `tlp_high_seq`; 3.14: any D-SACK on the ACK
    /// above `tlp_high_seq`) or a pure duplicate ACK for `tlp_high_seq` arrives.
    #[inline(never)]
    pub(super) fn process_tlp_ack(
        &mut self,
        now: SimTime,
        ack: u64,
        pure_dup: bool,
        dsack: Option<SackBlock>,
    ) {
        let high = self.tlp_high_seq;
        let repaired = match self.tlp {
            Tlp::Linux => {
                if ack < high {
                    return;
                }
                let dsack_tlp =
                    dsack.is_some_and(|b| b.end == high && b.end - b.start <= self.mss as u64);
                if !self.tlp_retrans || dsack_tlp {
                    // A probe of new data was acknowledged, or the probe was redundant.
                    self.tlp_high_seq = 0;
                    false
                } else if ack > high {
                    true
                } else {
                    if pure_dup {
                        self.tlp_high_seq = 0;
                    }
                    false
                }
            }
            _ => {
                if ack == high && pure_dup {
                    self.tlp_high_seq = 0;
                    return;
                }
                if ack > high {
                    self.tlp_high_seq = 0;
                }
                // "Don't reduce cwnd if DSACK arrives for TLP retrans."
                ack > high && dsack.is_none()
            }
        };
        if repaired {
            self.init_cwnd_reduction(now, false);
            self.state = CaState::Cwr;
            self.end_cwnd_reduction();
            self.stats.loss_probe_recoveries += 1;
        }
    }

    /// The retransmission timer expired.
    pub fn on_rto(&mut self, now: SimTime) {
        if self.sb.packets_out == 0 {
            self.arm(XmitTimer::Rto, SimTime::NEVER);
            return;
        }
        self.stats.rtos += 1;
        // ssthresh once per loss episode (Linux tcp_enter_loss).
        let reduce = self.state == CaState::Open
            || self.snd_una >= self.high_seq
            || (self.state == CaState::Loss && self.rto_retrans == 0);
        self.w.flight = self.in_flight();
        if self.undo != Undo::Off {
            self.undo_on_rto(now, reduce);
        }
        if let Some(s) = self.cc.on_rto(&self.w, now, self.snd_nxt, reduce) {
            self.w.ssthresh = s;
        }
        if self.rack {
            self.stats.lost_retransmits += self.sb.mark_all_lost_rack(now) as u64;
        } else {
            self.sb.mark_all_lost();
        }
        if self.undo == Undo::Linux && reduce {
            self.init_undo();
        }
        self.tlp_high_seq = 0;
        self.probe = None;
        self.reno_sacked = 0;
        self.w.cwnd = (self.in_flight() + 1).min(self.w.clamp.max(1));
        self.w.cnt = 0;
        self.high_seq = self.snd_nxt;
        self.state = CaState::Loss;
        self.force_rtx = false;
        self.queue_cwr = self.ecn_ok && !self.accecn;
        self.rto_retrans += 1;
        if self.rtt.is_ns2() {
            // (only ns-2 timing sets `rtt_timed`)
            self.rtt_timed = None;
        }
        self.rtt.on_timeout();
        self.arm(XmitTimer::Rto, now + self.rtt.rto());
    }

    /// The end of a probe episode on an ACK, if one is open (see [`AckOrder`] for where).
    #[inline]
    pub(super) fn tlp_ack_step(&mut self, c: &AckCtx) {
        if self.tlp_high_seq != 0 {
            self.process_tlp_ack(c.now, c.h.ack, c.pure_dup, c.dsack);
        }
    }

    /// RFC 6298 5.2 / 5.3: stop the timer when all is acknowledged, else restart it
    /// (Linux `tcp_set_xmit_timer`: a loss probe instead where TLP allows one; left
    /// alone when RACK armed its reorder timeout on this ACK); 3.14 then schedules a
    /// probe whenever the RTO is pending.
    #[inline]
    pub(super) fn set_xmit_timer(&mut self, c: &AckCtx, order: AckOrder) {
        if c.una_advanced
            && !c.reo_armed
            && !(order.probe_on_rearm && self.schedule_probe(c.now, true))
        {
            self.rearm_rto(c.now);
        }
        if order.probe_at_end && self.timer == XmitTimer::Rto {
            self.schedule_probe(c.now, false);
        }
    }
}
