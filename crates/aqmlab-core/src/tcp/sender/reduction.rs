//! Window reduction in CWR and Recovery (Linux `tcp_init_cwnd_reduction`,
//! `tcp_cwnd_reduction`, `tcp_end_cwnd_reduction`): the [`Recovery`] style enters,
//! steps on each ACK and exits:
//! - `Prr`: RFC 6937 proportional rate reduction (Linux 3.2+);
//! - `Rfc6675`: cwnd = ssthresh at once, one forced retransmission;
//! - `RateHalving`: Linux < 3.2 `tcp_cwnd_down`, cwnd − 1 every second ACK.

use super::*;

impl Sender {
    pub(super) fn in_reduction(&self) -> bool {
        matches!(self.state, CaState::Cwr | CaState::Recovery)
    }

    pub(super) fn init_cwnd_reduction(&mut self, now: SimTime, ecn: bool) {
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = 0;
        self.w.cnt = 0;
        self.prior_cwnd = self.w.cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.w.flight = self.in_flight();
        self.w.ssthresh = if ecn {
            self.cc.on_ecn(&self.w, now)
        } else {
            self.cc.on_loss(&self.w, now)
        };
        // AccECN has no CWR handshake (its feedback is a counter).
        self.queue_cwr = self.ecn_ok && !self.accecn;
        match self.recovery {
            _ if self.cc.owns_cwnd() => {}
            Recovery::Prr => {}
            Recovery::Rfc6675 => self.w.cwnd = self.w.ssthresh.min(self.w.cwnd).max(1),
            // Linux < 3.2 tcp_enter_cwr: cwnd = min(cwnd, in_flight + 1); recovery entry
            // leaves cwnd to the first tcp_cwnd_down of the same ACK.
            Recovery::RateHalving if ecn => {
                self.w.cwnd = self.w.cwnd.min(self.in_flight() + 1).max(1)
            }
            Recovery::RateHalving => {}
        }
    }

    pub(super) fn end_cwnd_reduction(&mut self) {
        self.cc.on_open();
        // Linux tcp_end_cwnd_reduction leaves cwnd alone for cong_control modules.
        if self.w.ssthresh < INFINITE_SSTHRESH && !self.cc.owns_cwnd() {
            let target = if self.recovery == Recovery::RateHalving {
                // Linux < 3.2 tcp_complete_cwr: never raise cwnd on leaving recovery.
                self.w.cwnd.min(self.w.ssthresh)
            } else {
                self.w.ssthresh
            };
            self.w.cwnd = target.min(self.w.clamp).max(1);
        }
        self.state = CaState::Open;
    }

    /// Linux < 3.2 rate halving (`tcp_input.c` `tcp_cwnd_down`), run on every ACK in
    /// CWR/Recovery that makes progress (new data acknowledged or SACKed, or a duplicate
    /// ACK without SACK): cwnd − 1 on every second such ACK while above the floor, and
    /// never more than in-flight + 1.
    pub(super) fn cwnd_down(&mut self) {
        let decr = self.w.cnt + 1;
        self.w.cnt = decr & 1;
        let decr = decr >> 1;
        let floor = if self.reno_floor {
            self.w.ssthresh / 2
        } else {
            self.w.ssthresh
        };
        if decr > 0 && self.w.cwnd > floor {
            self.w.cwnd -= decr;
        }
        self.w.cwnd = self.w.cwnd.min(self.in_flight() + 1).max(1);
    }

    pub(super) fn enter_recovery(&mut self, now: SimTime, ece: bool) {
        self.stats.fast_recoveries += 1;
        if self.undo != Undo::Off {
            self.undo_on_recovery(ece);
        }
        if !self.in_reduction() {
            self.init_cwnd_reduction(now, false);
        }
        self.high_seq = self.snd_nxt;
        self.state = CaState::Recovery;
        // ns-2 `dupack_action` resets the retransmit timer, which abandons the timing
        // (only ns-2 timing sets `rtt_timed`: the test keeps its cache line unread)
        if self.rtt.is_ns2() {
            self.rtt_timed = None;
        }
        if !self.sack {
            self.sb.mark_head_lost();
        }
        self.force_rtx = self.recovery == Recovery::Rfc6675;
    }

    pub(super) fn enter_cwr(&mut self, now: SimTime) {
        self.stats.ecn_reductions += 1;
        // Linux tcp_enter_cwr: congestion proven by ECN is never undone.
        self.undo_marker = 0;
        self.prior_ssthresh = 0;
        self.init_cwnd_reduction(now, true);
        self.state = CaState::Cwr;
    }

    /// PRR (RFC 6937), as Linux `tcp_cwnd_reduction`.
    pub(super) fn cwnd_reduction(&mut self, newly: u32, newly_lost: bool, una_advanced: bool) {
        if newly == 0 || self.prior_cwnd == 0 {
            return;
        }
        self.prr_delivered += newly;
        let in_flight = self.in_flight() as i64;
        let ssthresh = self.w.ssthresh as i64;
        let delta = ssthresh - in_flight;
        let mut sndcnt = if delta < 0 {
            // Proportional part: spread the reduction over one round trip.
            let dividend =
                self.w.ssthresh as u64 * self.prr_delivered as u64 + self.prior_cwnd as u64 - 1;
            (dividend / self.prior_cwnd as u64) as i64 - self.prr_out as i64
        } else {
            // Slow-start reduction bound: grow back towards ssthresh.
            let mut s = (self.prr_delivered as i64 - self.prr_out as i64).max(newly as i64);
            if una_advanced && !newly_lost {
                s += 1;
            }
            s.min(delta)
        };
        // Force the fast retransmission on entering recovery.
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        self.w.cwnd = (in_flight + sndcnt).clamp(1, self.w.clamp.max(1) as i64) as u32;
    }

    /// Linux `tcp_current_ssthresh`: ssthresh during a reduction, else at least 3/4 of cwnd.
    pub(super) fn current_ssthresh(&self) -> u32 {
        if self.in_reduction() {
            self.w.ssthresh
        } else {
            self.w.ssthresh.max((self.w.cwnd >> 1) + (self.w.cwnd >> 2))
        }
    }

    /// The state exits of `tcp_fastretrans_alert`: Recovery ends when everything sent
    /// before it is acknowledged, CWR once past it, Loss likewise (back to Open). Without
    /// SACK a partial ACK in Recovery marks the next segment lost (RFC 6582 §3.2 step 3).
    #[inline]
    pub(super) fn exit_states(&mut self, c: &AckCtx) {
        match self.state {
            CaState::Recovery if self.snd_una >= self.high_seq => {
                self.reno_sacked = 0;
                self.end_cwnd_reduction();
                self.undo_until = self.snd_nxt;
            }
            CaState::Cwr if self.snd_una > self.high_seq => self.end_cwnd_reduction(),
            CaState::Loss if self.snd_una >= self.high_seq => {
                self.reno_sacked = 0;
                self.state = CaState::Open;
                self.cc.on_open();
                self.undo_until = self.snd_nxt;
            }
            CaState::Recovery if !self.sack && c.una_advanced && !c.hold => {
                self.sb.mark_head_lost();
            }
            _ => {}
        }
    }

    /// The per-ACK step of the reduction in CWR/Recovery: PRR, or rate halving on an ACK
    /// that delivered something; RFC 6675 set cwnd on entry and leaves it.
    #[inline]
    pub(super) fn reduce_on_ack(&mut self, delivered: u32, newly_lost: bool, una_advanced: bool) {
        match self.recovery {
            Recovery::Prr => self.cwnd_reduction(delivered, newly_lost, una_advanced),
            Recovery::RateHalving if delivered > 0 => self.cwnd_down(),
            Recovery::RateHalving | Recovery::Rfc6675 => {}
        }
    }
}
