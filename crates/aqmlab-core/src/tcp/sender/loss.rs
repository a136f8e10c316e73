//! Loss marking (Linux `tcp_fastretrans_alert`, `tcp_recovery.c`): DupThresh, FACK or RACK.
//!
//! ## Loss detection: DupThresh, FACK or RACK
//! `loss_detection = "dupthresh"` (RFC 6675, Linux < 4.4, ns-2, ns-3) marks a segment
//! lost when DupThresh segments above it are SACKed; a lost retransmission then waits
//! for the RTO. `loss_detection = "rack"` (the `linux` profile; RFC 8985 §6 as Linux 6.1
//! `tcp_recovery.c`, RACK-only since 4.18) marks by time instead (see `scoreboard.rs`):
//! on every ACK that is a duplicate, carries new SACK or ECE, or arrives outside Open
//! (`tcp_ack_is_dubious`) and after anything was newly delivered, a segment sent before
//! the most recently sent delivered one is lost once `RACK.rtt + reo_wnd` has passed
//! since its transmission, lost retransmissions included (from Loss this starts fast
//! recovery, as Linux's `FLAG_LOST_RETRANS`). `reo_wnd` (`tcp_rack_reo_wnd`) is 0 while
//! no reordering was seen and the sender is in Recovery/Loss or has DupThresh segments
//! SACKed, else min_rtt / 4 capped at SRTT. A segment not yet due arms the reorder
//! timeout (its remaining wait in whole jiffies + 2 jiffies, `hz`); when it fires, whatever is due is marked and
//! recovery entered (`tcp_rack_reo_timeout`). Recovery starts only on a marked loss. On
//! an RTO, segments sent within the last `RACK.rtt` (but the first) stay unmarked
//! (`tcp_timeout_mark_lost`). Reordering (a never-retransmitted segment delivered below
//! the highest SACK) is remembered; the D-SACK-driven widening of `reo_wnd`
//! (`reo_wnd_steps`) is not modelled (`reo_wnd` stays one step; D-SACKs only end probe episodes).
//!
//! `loss_detection = "fack"` (Linux 2.4–4.14 with `tcp_fack = 1`, the `linux-3.14` and
//! `linux-2.6.29` profiles) counts positions instead of SACKed segments: recovery starts
//! once the highest SACKed segment lies more than 3 segments above `snd_una`
//! (`fackets_out`) or the head's transmission is older than the RTO; in recovery every
//! unSACKed segment more than 3 below the highest SACK (up to the recovery point) is
//! lost, and so is a retransmission once data first sent after it has been SACKed
//! (`tcp_mark_lost_retrans`), which is then resent without waiting for the RTO.
//! Linux disables FACK when it detects reordering (`tcp_disable_fack`); the model keeps
//! it (the simulated paths do not reorder).

use super::*;

impl Sender {
    /// Linux `tcp_rack_reo_wnd`: no reordering window while no reordering was seen and
    /// the sender is in Recovery/Loss or has DupThresh segments SACKed; else
    /// min_rtt / 4 (one step: the D-SACK-driven growth is not modelled),
    /// at most SRTT.
    pub(super) fn rack_reo_wnd(&self) -> SimDuration {
        if self.sb.rack.reord_seen == 0
            && (matches!(self.state, CaState::Recovery | CaState::Loss)
                || self.sb.sacked_out >= DUP_THRESH)
        {
            return SimDuration::ZERO;
        }
        let quarter = self.min_rtt.map_or(SimDuration::MAX, |m| m / 4);
        quarter.min(self.rtt.srtt().unwrap_or(SimDuration::ZERO))
    }

    /// One RACK pass over the transmissions with the current reordering window, lost
    /// retransmissions counted (Linux `tcp_rack_detect_loss` + `TCPLostRetransmit`).
    pub(super) fn rack_detect(&mut self, now: SimTime) -> crate::tcp::scoreboard::RackOutcome {
        let reo_wnd = self.rack_reo_wnd();
        let r = self.sb.rack_detect_loss(now, reo_wnd);
        self.stats.lost_retransmits += r.lost_retrans as u64;
        r
    }

    /// RACK loss detection on an ACK (`tcp_rack_mark_lost`): arms the reorder timer if a
    /// segment is not yet due. Returns (newly lost, lost retransmissions, reo armed).
    #[inline(never)]
    pub(super) fn rack_mark_lost(&mut self, now: SimTime) -> (u32, u32, bool) {
        if !self.sb.rack.advanced {
            return (0, 0, false);
        }
        self.sb.rack.advanced = false;
        let r = self.rack_detect(now);
        let armed = if let Some(t) = r.timeout {
            // inet_csk_reset_xmit_timer caps the wait at the RTO.
            // usecs_to_jiffies(timeout) + TCP_TIMEOUT_MIN.
            let wait = (self.jiffies(t) + self.timeout_min()).min(self.rtt.rto());
            self.arm(XmitTimer::Reo, now + wait);
            true
        } else {
            false
        };
        (r.marked, r.lost_retrans, armed)
    }

    /// Marking as the SACK blocks are tagged: FACK's lost retransmissions in Recovery
    /// (`tcp_sacktag_write_queue` → `tcp_mark_lost_retrans`), DupThresh's RFC 6675 rule.
    #[inline]
    pub(super) fn mark_losses_on_sack(&mut self, c: &AckCtx) {
        if self.fack {
            if c.sacked_new && self.state == CaState::Recovery {
                self.stats.lost_retransmits += self.sb.mark_lost_retrans_fack() as u64;
            }
        } else if self.sack && c.sacked_new && !self.rack {
            self.sb.mark_lost_sack();
        }
    }

    /// RACK (Linux `tcp_identify_packet_loss`) on "dubious" ACKs (`tcp_ack_is_dubious`: a
    /// duplicate, SACK or ECE, or not in Open; Disorder counts as not Open). A lost
    /// retransmission found in Loss starts fast recovery (`FLAG_LOST_RETRANS`).
    #[inline]
    pub(super) fn rack_on_ack(&mut self, c: &mut AckCtx) {
        if !self.rack || c.hold {
            return;
        }
        let dubious = c.pure_dup
            || c.sacked_new
            || c.ece
            || self.state != CaState::Open
            || self.sb.sacked_out + self.sb.lost_out + self.sb.retrans_out > 0;
        if dubious {
            let (_, lost_retrans, armed) = self.rack_mark_lost(c.now);
            c.reo_armed = armed;
            if self.state == CaState::Loss && lost_retrans > 0 {
                self.enter_recovery(c.now, c.ece);
            }
        }
    }

    /// Linux `tcp_time_to_recover` per loss detection: RACK only on a loss proven by
    /// marking; FACK when the highest SACK lies more than `tcp_reordering` above snd_una
    /// (`tcp_dupack_heuristics`) or the head timed out (trick 3); DupThresh SACKed
    /// segments; without SACK DupThresh duplicate ACKs past the `recover` guard.
    fn time_to_recover(&self, head_timed_out: bool) -> bool {
        if self.rack {
            self.sb.lost_out > 0
        } else if self.fack {
            self.sb.lost_out > 0 || self.sb.fackets_out() > DUP_THRESH || head_timed_out
        } else if self.sack {
            self.sb.lost_out > 0 || self.sb.sacked_out >= DUP_THRESH
        } else {
            self.reno_sacked >= DUP_THRESH && self.snd_una >= self.high_seq
        }
    }

    /// From Open or CWR: fast recovery when it is time to recover or early retransmit
    /// says so (then, without FACK, the head is marked lost:
    /// `tcp_update_scoreboard(fast_rexmit = 1)`), else CWR on ECE.
    #[inline]
    pub(super) fn start_recovery(&mut self, c: &mut AckCtx) {
        c.newly_lost = self.sb.lost_total > c.lost_before;
        c.head_timed_out = self.fack && self.sb.head_timed_out(c.now, self.rtt.rto());
        if !matches!(self.state, CaState::Open | CaState::Cwr) {
            return;
        }
        let time_to_recover = self.time_to_recover(c.head_timed_out);
        let early = !time_to_recover
            && !c.hold
            && !self.rack
            && self.early_retransmit(c.now, c.ece) == Some(true);
        if (time_to_recover || early) && !c.hold {
            self.enter_recovery(c.now, c.ece);
            if early {
                self.stats.early_retransmits += 1;
                if !self.fack {
                    self.sb.mark_head_lost();
                }
            }
        } else if c.ece && self.state == CaState::Open {
            self.enter_cwr(c.now);
        }
    }

    /// FACK in Recovery (`tcp_fastretrans_alert`'s `do_lost` → `tcp_update_scoreboard`):
    /// on a duplicate ACK, or when the highest SACK lies beyond `tcp_reordering` (new
    /// SACK or a partial ACK), or with the head timed out (2.6.29's explicit case).
    #[inline]
    pub(super) fn fack_mark_on_ack(&mut self, c: &mut AckCtx) {
        if !self.fack || self.state != CaState::Recovery || c.hold {
            return;
        }
        let do_lost = c.is_dupack
            || ((c.sacked_new || c.una_advanced) && self.sb.fackets_out() > DUP_THRESH)
            || c.head_timed_out;
        if do_lost {
            c.newly_lost |= self.sb.mark_lost_fack(self.high_seq, c.now, self.rtt.rto()) > 0;
        }
    }
}
