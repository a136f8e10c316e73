//! ## Undo of spurious reductions (`undo`, Linux `tcp_input.c`)
//! A reduction caused by reordering or delay rather than loss is undone as the kernel of
//! the profile does ([`Undo`]: 2.6.29, 3.14, 6.1; ns-2 and ns-3 undo nothing). The state
//! is Linux's: `undo_marker` (snd_una when the reduction began), `undo_retrans`
//! (retransmissions since, `tcp_retransmit_skb`, less those a D-SACK reported as
//! duplicates, `tcp_check_dsack` / `tcp_sacktag_one`), `prior_ssthresh` and the cwnd
//! before, and `retrans_stamp` (the episode's first retransmission). `tcp_may_undo`:
//! `undo_marker` set and every retransmission D-SACKed or the ACK's timestamp echo older
//! than `retrans_stamp` (Eifel, RFC 3522). Undo restores cwnd and ssthresh
//! (`tcp_undo_cwnd_reduction`) and returns to Open:
//! - fast recovery: at its end (`TCPFullUndo`), on a partial ACK of delayed data with no
//!   retransmission out (`TCPPartialUndo`, losses unmarked; 2.6: cwnd only, staying in
//!   Recovery) and on the D-SACK that reports the last retransmission (`TCPDSACKUndo`; in
//!   Recovery and, late, after it: 3.14/6.1 until the next reduction, 2.6 in the Disorder
//!   state that follows). 2.6 moderates cwnd to in flight + 3 after every undo.
//! - timeouts (`TCPLossUndo`): `tcp_may_undo` (6.1 on ACKs that advance snd_una, 2.6/3.14
//!   on any ACK), or F-RTO (RFC 5682 step 3b: never-retransmitted data sent before the
//!   timeout is (S)ACKed). 2.6 clears `undo_marker` on a timeout when a queued segment
//!   was ever retransmitted, 3.14 when a retransmission is in flight; 6.1 restarts the
//!   undo state only on a timeout that reduces ssthresh (`tcp_init_undo`, retransmissions
//!   in flight counted), so a timeout during fast recovery keeps the recovery's. F-RTO is
//!   armed on a reducing (3.14) or Open/CWR (6.1) timeout or a repeated one and undoes
//!   whatever `undo_marker` says; its step 2b (new data instead of retransmissions) is
//!   not modelled (see `undo_in_loss`). ECE forbids restoring ssthresh; an ECN reduction
//!   is never undone. Controls that own cwnd (BBR, Prague with ECN) undo nothing.

use super::*;

impl Sender {
    /// Linux tcp_enter_recovery's undo part: the clock of the first retransmission
    /// restarts with the fast retransmission; the undo state restarts, with the cwnd and
    /// ssthresh to restore when this recovery begins the reduction.
    #[inline(never)]
    pub(super) fn undo_on_recovery(&mut self, ece: bool) {
        if !self.any_retrans_done() {
            self.retrans_stamp = None;
        }
        self.prior_ssthresh = 0;
        self.init_undo();
        if !self.in_reduction() {
            if !ece {
                self.prior_ssthresh = self.current_ssthresh();
            }
            self.undo_cwnd = self.w.cwnd;
        }
    }

    /// Linux `tcp_any_retrans_done`: a retransmission in flight or a retransmitted head.
    pub(super) fn any_retrans_done(&self) -> bool {
        self.sb.retrans_out > 0 || (!self.sb.is_empty() && self.sb.get(0).has(EVER_RETRANS))
    }

    /// The undo state restarts with a reduction (Linux `tcp_enter_recovery`, and 6.1's
    /// `tcp_init_undo` also on a timeout): `undo_marker` = snd_una, `undo_retrans` =
    /// retransmissions still in flight, which may yet be D-SACKed (6.1: a retransmitted
    /// loss probe in flight counts; none = -1, since 0 means "undo now").
    pub(super) fn init_undo(&mut self) {
        self.undo_marker = self.snd_una;
        let mut r = self.sb.retrans_out as i32;
        if self.undo == Undo::Linux {
            if self.tlp_high_seq != 0 && self.tlp_retrans {
                r += 1;
            }
            if r == 0 {
                r = -1;
            }
        }
        self.undo_retrans = r;
    }

    /// Linux `tcp_packet_delayed`: the ACK echoes a timestamp older than the first
    /// retransmission (Eifel detection, RFC 3522), or nothing was retransmitted yet
    /// (6.1.y: not for a connection without SACK at `high_seq`, whose `retrans_stamp`
    /// Linux clears there).
    pub(super) fn packet_delayed(&self, h: &TcpHeader) -> bool {
        match self.retrans_stamp {
            Some(r) => h.ts_ecr > SimTime::ZERO && h.ts_ecr < r,
            None => self.undo != Undo::Linux || self.sack || self.snd_una < self.high_seq,
        }
    }

    /// Linux `tcp_may_undo`: the reduction can be undone while `undo_marker` is set and
    /// either every retransmission since was D-SACKed or the packet was merely delayed.
    pub(super) fn may_undo(&self, h: &TcpHeader) -> bool {
        self.undo_marker != 0 && (self.undo_retrans == 0 || self.packet_delayed(h))
    }

    /// A D-SACK (RFC 2883) of a retransmission above `undo_marker`: one fewer
    /// retransmission stands between the sender and a D-SACK undo. Linux
    /// `tcp_check_dsack` for data acknowledged before this ACK ("dumb counting": 6.1 the
    /// block's segments, 2.6/3.14 one), `tcp_sacktag_one` for data still outstanding
    /// (its ever-retransmitted segments; a block starting at snd_una is invalid there).
    /// 3.14 and 6.1 stop at 0; 2.6 counts on below it.
    #[inline(never)]
    pub(super) fn count_dsack(&mut self, b: SackBlock, prior_una: u64) {
        let floor = self.undo != Undo::Linux2_6;
        if floor && self.undo_retrans <= 0 {
            return;
        }
        let n = if b.end <= prior_una {
            if b.end <= self.undo_marker {
                return;
            }
            if self.undo == Undo::Linux {
                (b.end - b.start).div_ceil(self.mss as u64).max(1) as i32
            } else {
                1
            }
        } else if b.start > prior_una {
            self.sb
                .retransmitted_within(b.start, b.end, self.undo_marker) as i32
        } else {
            0
        };
        self.undo_retrans -= n;
        if floor {
            self.undo_retrans = self.undo_retrans.max(0);
        }
    }

    /// Linux `tcp_undo_cwnd_reduction` (3.14, 6.1) / `tcp_undo_cwr` (2.6): cwnd back to
    /// its value before the reduction (the control's `undo_cwnd`: CUBIC's `loss_cwnd`,
    /// 6.1's `prior_cwnd`; 2.6/3.14 Reno's `ssthresh << 1` is the same up to rounding)
    /// and ssthresh to `prior_ssthresh` if higher (`ssthresh_too`); without a recorded
    /// `prior_ssthresh` (ECE seen, or the reduction began in CWR) 2.6 and 3.14 only
    /// raise cwnd to ssthresh and 6.1 leaves it. `unmark`: nothing is lost any more.
    /// 2.6 then moderates cwnd to in flight + 3 (`tcp_moderate_cwnd`). Clears
    /// `undo_marker` except for 2.6's partial undo.
    pub(super) fn undo_reduction(&mut self, unmark: bool, ssthresh_too: bool) {
        if unmark {
            self.sb.unmark_lost();
        }
        if self.prior_ssthresh > 0 {
            self.w.cwnd = self.w.cwnd.max(self.undo_cwnd);
            if ssthresh_too && self.prior_ssthresh > self.w.ssthresh {
                self.w.ssthresh = self.prior_ssthresh;
                // TCP_ECN_withdraw_cwr
                self.queue_cwr = false;
            }
        } else if self.undo != Undo::Linux && self.w.ssthresh < INFINITE_SSTHRESH {
            self.w.cwnd = self.w.cwnd.max(self.w.ssthresh);
        }
        if self.undo == Undo::Linux2_6 {
            self.w.cwnd = self.w.cwnd.min(self.in_flight() + 3);
        }
        self.w.cwnd = self.w.cwnd.min(self.w.clamp.max(1)).max(1);
        self.w.cnt = 0;
        if ssthresh_too || self.undo != Undo::Linux2_6 {
            self.undo_marker = 0;
        }
        if self.undo == Undo::Linux {
            // "Force RACK to re-exam losses".
            self.sb.rack.advanced = true;
        }
    }

    /// Back to Open after an undo.
    pub(super) fn reopen(&mut self) {
        if self.state != CaState::Open {
            self.reno_sacked = 0;
            self.state = CaState::Open;
            self.cc.on_open();
        }
    }

    /// Linux `tcp_try_undo_loss` (and 2.6's / 3.14's `tcp_try_undo_recovery` in Loss):
    /// the timeout was spurious. `unmark`: nothing is lost any more. Without SACK only
    /// an F-RTO undo leaves Loss (`frto_undo || tcp_is_sack`).
    pub(super) fn undo_loss(&mut self, unmark: bool, frto: bool) {
        self.undo_reduction(unmark, true);
        self.undo_marker = 0;
        self.rto_retrans = 0;
        self.frto = false;
        self.stats.rto_undos += 1;
        if self.sack || frto || !unmark {
            self.reopen();
        }
    }

    /// Linux's undo checks on an ACK, before the state exits (`tcp_fastretrans_alert` A,
    /// D, E; `tcp_process_loss`; `tcp_try_undo_recovery` / `_partial` / `_dsack` /
    /// `_loss`). Returns true when the rest of the ACK must neither mark losses nor
    /// start a recovery (a partial ACK of delayed data with retransmissions still out;
    /// 3.14's return after an undo in Recovery; 2.6's partial undo, which skips the
    /// head retransmission).
    #[inline(never)]
    pub(super) fn undo_on_ack(
        &mut self,
        h: &TcpHeader,
        d: &Delivered,
        una_advanced: bool,
        ece: bool,
        sacked_new: bool,
        pure_dup: bool,
    ) -> bool {
        if ece {
            // A: ECE forbids restoring ssthresh.
            self.prior_ssthresh = 0;
        }
        match self.state {
            CaState::Open => {
                if self.retrans_stamp.is_some() && !self.any_retrans_done() {
                    self.retrans_stamp = None;
                }
                if self.undo_marker != 0 {
                    // A late D-SACK undo: the recovery or timeout already ended (2.6: only
                    // in the Disorder state that follows it, until snd_una passes the
                    // sequence sent by then).
                    if self.undo_retrans == 0 {
                        self.undo_reduction(false, true);
                        self.undo_marker = 0;
                        self.stats.dsack_undos += 1;
                    } else if self.undo == Undo::Linux2_6 && self.snd_una > self.undo_until {
                        self.undo_marker = 0;
                    }
                }
                false
            }
            CaState::Cwr => false,
            CaState::Recovery => {
                if self.snd_una >= self.high_seq {
                    // tcp_try_undo_recovery; without an undo the caller ends the
                    // reduction (cwnd = ssthresh).
                    if self.may_undo(h) {
                        self.undo_reduction(false, true);
                        self.undo_marker = 0;
                        self.stats.full_undos += 1;
                        self.reopen();
                    }
                    return false;
                }
                if una_advanced {
                    if self.undo == Undo::Linux2_6 {
                        // "Hoe": undo cwnd only, stay in Recovery, no head retransmission.
                        if self.may_undo(h) {
                            if self.sb.retrans_out == 0 {
                                self.retrans_stamp = None;
                            }
                            self.undo_reduction(false, false);
                            self.stats.partial_undos += 1;
                            return true;
                        }
                    } else if self.undo_marker != 0 && self.packet_delayed(h) {
                        // The hole was filled by a delayed original: with
                        // retransmissions out, only stop marking; else undo.
                        if self.sb.retrans_out > 0 {
                            return true;
                        }
                        if !self.any_retrans_done() {
                            self.retrans_stamp = None;
                        }
                        self.undo_reduction(true, true);
                        self.stats.partial_undos += 1;
                        self.reopen();
                        return self.undo == Undo::Linux3_14;
                    }
                }
                if self.undo != Undo::Linux2_6 && self.undo_marker != 0 && self.undo_retrans == 0 {
                    // tcp_try_undo_dsack: every retransmission was a duplicate.
                    self.undo_reduction(false, true);
                    self.stats.dsack_undos += 1;
                    self.reopen();
                    return self.undo == Undo::Linux3_14;
                }
                false
            }
            CaState::Loss => {
                self.undo_in_loss(h, d, una_advanced, sacked_new, pure_dup);
                false
            }
        }
    }

    /// Linux `tcp_process_loss` (6.1, 3.14) / the Loss branch of 2.6's
    /// `tcp_fastretrans_alert`: a timeout found spurious by `tcp_may_undo` (6.1: only on
    /// an ACK that advances snd_una, since 4.4; 2.6/3.14: any ACK) or by F-RTO (RFC 5682
    /// step 3b: never-retransmitted data sent before the timeout was (S)ACKed; 3.14 and
    /// 6.1 whenever `frto` is armed, 2.6 only with `undo_marker` set). F-RTO's step 2b
    /// (new data instead of retransmissions) is not modelled: where Linux would send
    /// new data F-RTO stays armed for one more ACK, which then ends it if it SACKs data
    /// or is a duplicate (step 3a); where it could not, F-RTO ends.
    pub(super) fn undo_in_loss(
        &mut self,
        h: &TcpHeader,
        d: &Delivered,
        una_advanced: bool,
        sacked_new: bool,
        pure_dup: bool,
    ) {
        let recovered = self.snd_una >= self.high_seq;
        let orig_acked = d.first_sent.is_some_and(|t| t < self.loss_time);
        match self.undo {
            Undo::Linux => {
                if una_advanced && self.may_undo(h) {
                    return self.undo_loss(true, false);
                }
                if self.frto && orig_acked {
                    return self.undo_loss(true, true);
                }
            }
            Undo::Linux3_14 => {
                if self.frto && orig_acked {
                    return self.undo_loss(true, true);
                }
                if self.may_undo(h) {
                    // At high_seq tcp_try_undo_recovery, which leaves the losses marked.
                    return self.undo_loss(!recovered, false);
                }
            }
            _ => {
                if self.may_undo(h) || (self.undo_marker != 0 && orig_acked) {
                    return self.undo_loss(!recovered, false);
                }
            }
        }
        if self.frto && !recovered {
            if self.frto_2b {
                if sacked_new || pure_dup {
                    self.frto = false;
                }
            } else if una_advanced {
                let room = (self.snd_una + self.rwnd).saturating_sub(self.snd_nxt);
                if self.unsent() > 0 && room > 0 {
                    self.frto_2b = true;
                } else {
                    self.frto = false;
                }
            }
        }
    }

    /// Linux tcp_enter_loss's undo part (before the loss marking).
    #[inline(never)]
    pub(super) fn undo_on_rto(&mut self, now: SimTime, reduce: bool) {
        // Linux tcp_enter_loss: prior_ssthresh and prior cwnd when this timeout
        // reduces ssthresh (else those of the reduction under way stay); F-RTO armed
        // (3.14: on a reducing or repeated timeout; 6.1: from Open/Disorder/CWR or a
        // repeated one). 2.6 and 3.14 set undo_marker on every timeout, cleared when
        // a segment in the queue was ever retransmitted (2.6, TCPCB_RETRANS) or a
        // retransmission is in flight (3.14, TCPCB_SACKED_RETRANS); 6.1 restarts the
        // undo state only with a reduction (tcp_init_undo, after the loss marking).
        if reduce {
            self.prior_ssthresh = self.current_ssthresh();
            self.undo_cwnd = self.w.cwnd;
        }
        self.frto = match self.undo {
            Undo::Linux => self.state == CaState::Open || self.state == CaState::Cwr,
            Undo::Linux3_14 => reduce,
            _ => false,
        } || (self.undo != Undo::Linux2_6 && self.rto_retrans > 0);
        self.frto_2b = false;
        match self.undo {
            Undo::Linux3_14 => {
                self.undo_marker = if self.sb.retrans_out > 0 {
                    0
                } else {
                    self.snd_una
                };
                self.undo_retrans = 0;
            }
            Undo::Linux2_6 => {
                self.undo_marker = if self.sb.any_ever_retransmitted() {
                    0
                } else {
                    self.snd_una
                };
                self.undo_retrans = 0;
            }
            _ => {}
        }
        self.loss_time = now;
    }

    /// Undo of spurious reductions on an ACK (Linux `tcp_fastretrans_alert` A, D, E);
    /// sets `c.hold` (see [`Sender::undo_on_ack`]). In Open without ECE the checks have
    /// work only with a retransmission clock to clear or an undo that D-SACKs may have
    /// made possible.
    #[inline]
    pub(super) fn undo_step(&mut self, c: &mut AckCtx) {
        let undo_work = self.undo != Undo::Off
            && (self.state != CaState::Open
                || c.ece
                || self.retrans_stamp.is_some()
                || (self.undo_marker != 0
                    && (self.undo_retrans == 0 || self.undo == Undo::Linux2_6)));
        c.hold = undo_work
            && self.undo_on_ack(c.h, &c.d, c.una_advanced, c.ece, c.sacked_new, c.pure_dup);
    }
}
