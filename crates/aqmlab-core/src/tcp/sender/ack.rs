//! ACK processing (Linux `tcp_ack`): the steps of one ACK in order over an [`AckCtx`]:
//! SACK tagging and the cumulative ACK, the delivery count and RTT sample, the
//! congestion control's per-ACK hooks, loss detection and state exits, the window
//! update and the timer. The order of the steps that differs between the modelled
//! kernels is in [`TlpAckPoint`].

use super::*;

impl Sender {
    /// `rtt_timing = "ns2"` (ns-2 `newack`): the timed segment's sample once an ACK
    /// covers it; a partial ACK in fast recovery clears the backoff (Sack1
    /// `t_backoff_ = 1`).
    #[inline(never)]
    pub(super) fn ns2_rtt(
        &mut self,
        now: SimTime,
        ack: u64,
        una_advanced: bool,
    ) -> Option<SimDuration> {
        match self.rtt_timed {
            Some((end, sent)) if ack >= end => {
                self.rtt_timed = None;
                self.rtt.sample_ns2(sent, now);
                Some(now.saturating_since(sent))
            }
            _ => {
                if una_advanced && self.state == CaState::Recovery && ack < self.high_seq {
                    self.rtt.clear_backoff();
                }
                None
            }
        }
    }

    /// An ACK that can teach an idle sender nothing: nothing is outstanding (the ACK
    /// repeats `snd_una` = `snd_nxt`), it carries no SACK block, no ECN signal, and it is
    /// not a pure duplicate (it carries data or moves the window), and the sender is in
    /// Open with no undo, loss probe or RTT-setting control pending. This is every
    /// segment arriving at the receiving end of a one-way transfer. For such an ACK
    /// [`Sender::on_ack`] changes only what [`Sender::on_idle_ack`] changes (each step of
    /// the general path is a no-op on these conditions; the golden fingerprints and
    /// `idle_ack_fast_path_matches_the_general_path` check it).
    #[inline]
    pub(super) fn is_idle_ack(&self, h: &TcpHeader, carries_data: bool) -> bool {
        h.ack == self.snd_nxt
            && h.ack == self.snd_una
            && self.sb.packets_out == 0
            && h.n_sack == 0
            && self.state == CaState::Open
            && self.undo_marker == 0
            && self.retrans_stamp.is_none()
            && self.tlp_high_seq == 0
            && !self.accecn
            && !(self.ecn_ok && h.flags & tcp_flags::ECE != 0)
            && (carries_data || h.wnd as u64 != self.rwnd)
            && !self.cc.owns_cwnd()
    }

    /// [`Sender::on_ack`] for an ACK that [`Sender::is_idle_ack`] accepts: the counters,
    /// the receive window and the control's per-ACK hook. (The Linux 3.14 probe check at
    /// the end of an ACK arms nothing here: there is no data outstanding.)
    #[inline(never)]
    pub(super) fn on_idle_ack(&mut self, now: SimTime, h: &TcpHeader) {
        self.stats.acks += 1;
        if self.rack {
            self.sb.begin_ack(now, self.min_rtt);
        }
        self.rwnd = h.wnd as u64;
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        let sample = self.ack_sample(now, 0, None, 0);
        self.cc.on_ack_event(&mut self.w, &sample);
        self.stats.cwnd_sum += self.w.cwnd as f64;
        // schedule_probe returns at once without outstanding data
        debug_assert_eq!(self.sb.packets_out, 0);
    }

    /// What the congestion control is told about an ACK (no rate sample: the general path
    /// adds one for controls that own cwnd).
    pub(super) fn ack_sample(
        &self,
        now: SimTime,
        acked: u32,
        rtt: Option<SimDuration>,
        ce: u32,
    ) -> AckSample {
        AckSample {
            now,
            acked,
            rtt,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            cwnd_limited: self.cwnd_limited(),
            ce,
            srtt: self.rtt.srtt(),
            rs: RateSample::default(),
        }
    }

    /// Processes the acknowledgement fields of an arriving segment. (Inlined into the
    /// caller, the general path kept out of line: an idle ACK then pays no part of the
    /// general path's large stack frame.)
    #[inline(always)]
    pub fn on_ack(&mut self, now: SimTime, h: &TcpHeader, carries_data: bool) -> AckOutcome {
        if self.established && h.flags & tcp_flags::ACK != 0 && self.is_idle_ack(h, carries_data) {
            self.on_idle_ack(now, h);
            return AckOutcome::default();
        }
        self.on_busy_ack(now, h, carries_data)
    }

    /// [`Sender::on_ack`] for an ACK that is not idle: the clean-ACK fast path when it
    /// applies, else the general path.
    #[inline(never)]
    fn on_busy_ack(&mut self, now: SimTime, h: &TcpHeader, carries_data: bool) -> AckOutcome {
        if self.established && h.flags & tcp_flags::ACK != 0 && self.is_clean_ack(h) {
            return self.on_clean_ack(now, h, carries_data);
        }
        self.on_ack_general(now, h, carries_data)
    }

    /// The common ACK of a transfer without trouble: it advances `snd_una` (within what
    /// was sent), carries no SACK block and no ECN signal (no ECE; with Accurate ECN no
    /// new CE count), and finds the sender in Open with nothing SACKed, lost or
    /// retransmitted in flight, no duplicate ACKs counted, no retransmission to time,
    /// no loss-probe episode, no undo due (an earlier reduction may still be undone by
    /// a later D-SACK: `undo_retrans` > 0 keeps it waiting), and a control that leaves
    /// cwnd to the sender. Every step of the general path that reads only what these
    /// conditions fix is a no-op for it; [`Sender::on_clean_ack`] skips those steps
    /// (`clean_ack_fast_path_matches_the_general_path` compares the two on random runs).
    #[inline]
    pub(super) fn is_clean_ack(&self, h: &TcpHeader) -> bool {
        h.ack > self.snd_una
            && h.ack <= self.snd_nxt
            && h.n_sack == 0
            && self.state == CaState::Open
            && (self.sb.sacked_out | self.sb.lost_out | self.sb.retrans_out | self.reno_sacked)
                == 0
            && self.retrans_stamp.is_none()
            && self.tlp_high_seq == 0
            // an undo that is still possible (a late D-SACK) but not due on this ACK
            && (self.undo_marker == 0 || (self.undo_retrans != 0 && self.undo != Undo::Linux2_6))
            && !(if self.accecn {
                h.ace != self.last_ace
            } else {
                self.ecn_ok && h.flags & tcp_flags::ECE != 0
            })
            && !self.cc.owns_cwnd()
    }

    /// [`Sender::on_ack_general`] for an ACK that [`Sender::is_clean_ack`] accepts: the
    /// general path's steps with those that are no-ops under its conditions left out.
    #[inline(always)]
    pub(super) fn on_clean_ack(
        &mut self,
        now: SimTime,
        h: &TcpHeader,
        carries_data: bool,
    ) -> AckOutcome {
        self.on_ack_steps::<true>(now, h, carries_data)
    }

    /// [`Sender::on_ack`] without the idle fast path: the steps of Linux `tcp_ack` in
    /// order. The steps whose place differs between the modelled kernels are placed by
    /// [`AckOrder`].
    #[inline(never)]
    pub(super) fn on_ack_general(
        &mut self,
        now: SimTime,
        h: &TcpHeader,
        carries_data: bool,
    ) -> AckOutcome {
        if !self.established
            || h.flags & tcp_flags::ACK == 0
            || h.ack > self.snd_nxt
            || h.ack < self.snd_una
        {
            // Not acceptable / old: ACKs are not reordered on FIFO paths, so an old one
            // carries nothing new.
            return AckOutcome::default();
        }
        self.on_ack_steps::<false>(now, h, carries_data)
    }

    /// The steps of an acceptable ACK. With `CLEAN` (an ACK [`Sender::is_clean_ack`]
    /// accepts) the steps that are no-ops under its conditions are left out: no SACK
    /// blocks to tag or D-SACK to count, no duplicate ACK, no loss to mark, no ECN
    /// signal, no probe episode, undo or RACK work, no state to leave; recovery can
    /// start only because FACK finds the head timed out.
    #[inline(always)]
    fn on_ack_steps<const CLEAN: bool>(
        &mut self,
        now: SimTime,
        h: &TcpHeader,
        carries_data: bool,
    ) -> AckOutcome {
        let order = AckOrder::of(self.tlp);
        let mut c = self.ack_begin(now, h, carries_data);
        if CLEAN {
            self.cum_ack::<true>(&mut c, false);
        } else {
            self.tag_sacks_and_cum_ack(&mut c);
        }
        self.count_delivered(&mut c);
        self.ack_rtt_sample(&mut c);
        let sample = self.ack_cc_hooks(&mut c);
        if CLEAN {
            // (RACK: not a dubious ACK, `rack_on_ack` does nothing)
            if self.fack && self.sb.head_timed_out(now, self.rtt.rto()) {
                self.start_recovery(&mut c);
                self.fack_mark_on_ack(&mut c);
            }
        } else {
            // Loss detection and state transitions (Linux tcp_fastretrans_alert).
            self.mark_losses_on_sack(&c);
            self.ack_signals(&mut c);
            if order.tlp_ack == TlpAck::BeforeAlert {
                self.tlp_ack_step(&c);
            }
            self.undo_step(&mut c);
            self.exit_states(&c);
            self.rack_on_ack(&mut c);
            self.start_recovery(&mut c);
            self.fack_mark_on_ack(&mut c);
            if order.tlp_ack == TlpAck::AfterAlert {
                self.tlp_ack_step(&c);
            }
        }
        self.update_window(&c, sample);
        self.stats.cwnd_sum += self.w.cwnd as f64;
        self.set_xmit_timer(&c, order);
        c.out
    }

    /// The start of an acceptable ACK: counters, the receive window, and what the steps
    /// compare against (the state before the ACK).
    #[inline]
    fn ack_begin<'h>(&mut self, now: SimTime, h: &'h TcpHeader, carries_data: bool) -> AckCtx<'h> {
        self.stats.acks += 1;
        if self.rack {
            self.sb.begin_ack(now, self.min_rtt);
        }
        let c = AckCtx {
            now,
            h,
            carries_data,
            prior_in_flight: self.in_flight(),
            lost_before: self.sb.lost_total,
            prior_una: self.snd_una,
            prior_packets: self.sb.packets_out,
            prior_sacked: self.sb.sacked_out + self.reno_sacked,
            window_changed: h.wnd as u64 != self.rwnd,
            una_advanced: h.ack > self.snd_una,
            d: Delivered::default(),
            timed: Delivered::default(),
            sacked_new: false,
            is_dupack: false,
            delivered: 0,
            ca_rtt: None,
            ce: 0,

            pure_dup: false,
            dsack: None,
            ece: false,
            hold: false,
            reo_armed: false,
            newly_lost: false,
            head_timed_out: false,
            out: AckOutcome::default(),
        };
        self.rwnd = h.wnd as u64;
        c
    }

    /// Linux `tcp_sacktag_write_queue` and `tcp_clean_rtx_queue`: D-SACKs counted for
    /// undo, SACK blocks (RFC 2018), then the cumulative ACK; without SACK a duplicate
    /// ACK counts as a SACKed segment (`tcp_add_reno_sack`).
    #[inline]
    fn tag_sacks_and_cum_ack(&mut self, c: &mut AckCtx) {
        let h = c.h;
        if self.undo_marker != 0 && self.sack {
            if let Some(b) = self.dsack_of(h) {
                self.count_dsack(b, c.prior_una);
            }
        }
        // Whether a SACK block delivered something; if none did, `c.d` and `c.timed`
        // are still empty and the cumulative part is assigned rather than merged
        // (merging into an empty `Delivered` is assignment: `merge_into_empty_is_assignment`)
        let mut sacked = false;
        if self.sack {
            for b in h.sacks() {
                if b.end > h.ack {
                    let s = self.sb.sack(b);
                    c.sacked_new |= s.pkts > 0;
                    c.d.merge(s);
                    sacked = true;
                }
            }
        }
        if sacked {
            c.timed = c.d;
        }
        if c.una_advanced {
            self.cum_ack::<false>(c, sacked);
        }
        c.is_dupack =
            !c.una_advanced && !c.carries_data && !c.window_changed && self.sb.packets_out > 0;
        if c.is_dupack && !self.sack {
            // Linux tcp_add_reno_sack, limited so that one hole remains.
            let holes = self.sb.lost_out.max(1);
            self.reno_sacked =
                (self.reno_sacked + 1).min(self.sb.packets_out.saturating_sub(holes));
        }
    }

    /// The cumulative part of an ACK that advances `snd_una` (Linux
    /// `tcp_clean_rtx_queue`); `sacked`: a SACK block of the same ACK delivered something
    /// (then `c.d` and `c.timed` hold it and are merged into, else they are assigned).
    /// With `CLEAN` (nothing SACKed, lost or retransmitted) the scoreboard's walk
    /// skips those flags.
    #[inline(always)]
    fn cum_ack<const CLEAN: bool>(&mut self, c: &mut AckCtx, sacked: bool) {
        let ack = c.h.ack;
        let cum = if CLEAN {
            self.sb.ack_cum_clean(ack)
        } else {
            self.sb.ack_cum(ack)
        };
        if !self.sack && cum.pkts > 0 {
            // One ACK fills the hole; the rest absorb counted duplicate ACKs.
            self.reno_sacked -= self.reno_sacked.min(cum.pkts - 1);
        }
        if sacked {
            if !cum.retrans {
                c.timed.merge(cum);
            }
            c.d.merge(cum);
        } else {
            if !cum.retrans {
                c.timed = cum;
            }
            c.d = cum;
        }
        self.snd_una = ack;
        self.rto_retrans = 0;
        let data_end = self.write_end;
        c.out.newly_acked = ack.min(data_end).saturating_sub(c.prior_una.min(data_end));
        self.stats.bytes_acked += c.out.newly_acked;
        c.out.advanced = true;
    }

    /// RTT: Karn's rule on segment send times, falling back on the timestamp echo
    /// (RFC 7323 RTTM) (Linux order); the congestion control's RTT (the latest send
    /// time) feeds the minimum RTT. A cumulative ACK that covers a retransmitted
    /// segment gives no sample from the segments it covers (Linux `tcp_clean_rtx_queue`:
    /// `first_ackt` only without FLAG_RETRANS_DATA_ACKED), although those above the
    /// retransmission were sent once: they were sent before it, on a NewReno partial
    /// ACK often many round trips earlier. The SACKed segments' sample, then the
    /// timestamp echo, stand in (`tcp_ack_update_rtt`).
    #[inline]
    fn ack_rtt_sample(&mut self, c: &mut AckCtx) {
        let (now, h) = (c.now, c.h);
        let rtt = if self.rtt.is_ns2() {
            self.ns2_rtt(now, h.ack, c.una_advanced)
        } else {
            let r = c
                .timed
                .first_sent
                .map(|t| now.saturating_since(t))
                .or_else(|| {
                    (c.una_advanced && h.ts_ecr > SimTime::ZERO)
                        .then(|| now.saturating_since(h.ts_ecr))
                });
            if let Some(r) = r {
                self.rtt.sample(r);
            }
            r
        };
        if let Some(r) = rtt {
            self.stats.rtt_samples += 1;
            self.stats.srtt_sum += self.rtt.srtt().unwrap_or(r).as_secs_f64();
            c.out.rtt_sampled = true;
        }
        c.ca_rtt = c.timed.last_sent.map(|t| now.saturating_since(t)).or(rtt);
        if let Some(r) = c.ca_rtt {
            // Linux tcp_update_rtt_min is fed the congestion-control RTT.
            self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        }
    }

    /// The control's per-ACK hooks (`tcp_in_ack_event`, and `pkts_acked` when something
    /// was delivered), with the sample they were given (the window update reuses it). Accurate ECN: the counter's increase is the number of CE-marked
    /// segments delivered since the previous ACK. Deviation: the wire's ACE field is 3
    /// bits (the count mod 8, unwrapped by the sender); the model carries the whole
    /// counter, which is what the sender recovers when no run of 8 ACKs is lost.
    #[inline]
    fn ack_cc_hooks(&mut self, c: &mut AckCtx) -> AckSample {
        c.ce = if self.accecn {
            let n = c.h.ace.wrapping_sub(self.last_ace);
            self.last_ace = c.h.ace;
            n
        } else {
            0
        };
        self.delivered_ce += c.ce as u64;
        let sample = self.ack_sample(c.now, c.delivered, c.ca_rtt, c.ce);
        if c.delivered > 0 {
            self.cc.on_delivery(&mut self.w, &sample);
        }
        self.cc.on_ack_event(&mut self.w, &sample);
        sample
    }

    /// What the ACK signals beyond delivery: a pure duplicate, the D-SACK that may end a
    /// probe episode, and congestion experienced (ECE, or AccECN's CE count).
    #[inline]
    fn ack_signals(&mut self, c: &mut AckCtx) {
        c.pure_dup = !c.una_advanced && !c.carries_data && !c.window_changed && !c.sacked_new;
        c.dsack = if self.tlp_high_seq != 0 {
            self.dsack_of(c.h)
        } else {
            None
        };
        c.ece = if self.accecn {
            c.ce > 0
        } else {
            self.ecn_ok && c.h.flags & tcp_flags::ECE != 0
        };
        if c.ece {
            self.stats.ece_acks += 1;
        }
    }

    /// Window: reduce during CWR/Recovery, grow otherwise (Linux `tcp_cong_control`); a
    /// control with its own `cong_control` does either itself.
    #[inline]
    fn update_window(&mut self, c: &AckCtx, sample: AckSample) {
        if self.cc.owns_cwnd() {
            let sample = AckSample {
                snd_una: self.snd_una,
                rs: self.rate_sample(c.now, &c.d, c.prior_in_flight, c.lost_before),
                ..sample
            };
            self.cc.cong_control(&mut self.w, &sample);
            if self.cc.marks_app_limited() {
                // BBR's PROBE_RTT: its low-rate samples must not lower the bandwidth.
                self.app_limited = (self.delivered + self.in_flight() as u64).max(1);
            }
        } else if self.in_reduction() {
            self.reduce_on_ack(c.delivered, c.newly_lost, c.una_advanced);
        } else if c.una_advanced {
            let sample = AckSample {
                snd_una: self.snd_una,
                ..sample
            };
            self.cc.on_ack(&mut self.w, &sample);
        } else if c.is_dupack {
            self.cc.on_dup_ack(&mut self.w, c.now);
        }
    }

    /// The D-SACK block of an ACK (RFC 2883 / Linux `tcp_check_dsack`): a first SACK
    /// block below the cumulative ACK, or inside the second block.
    pub(super) fn dsack_of(&self, h: &TcpHeader) -> Option<SackBlock> {
        let mut it = h.sacks();
        let first = it.next()?;
        if first.end <= h.ack
            || it
                .next()
                .is_some_and(|b| b.start <= first.start && first.end <= b.end)
        {
            Some(first)
        } else {
            None
        }
    }
}

/// One ACK on its way through the steps of [`Sender::on_ack`]: the ACK, the state it
/// found (`prior_*`), and what the earlier steps learnt from it.
pub(super) struct AckCtx<'h> {
    pub(super) now: SimTime,
    pub(super) h: &'h TcpHeader,
    pub(super) carries_data: bool,
    pub(super) prior_in_flight: u32,
    /// `tp->lost` when the ACK arrived.
    pub(super) lost_before: u64,
    pub(super) prior_una: u64,
    pub(super) prior_packets: u32,
    pub(super) prior_sacked: u32,
    pub(super) window_changed: bool,
    pub(super) una_advanced: bool,
    /// What the SACK blocks and the cumulative ACK delivered.
    pub(super) d: Delivered,
    /// The part of `d` whose send times may time this ACK (Karn's rule as Linux
    /// applies it: the SACKed segments, and the cumulatively acknowledged ones unless
    /// one of those was retransmitted).
    pub(super) timed: Delivered,
    /// Some SACK block covered data not SACKed before.
    pub(super) sacked_new: bool,
    /// A duplicate ACK with data outstanding (Linux's `is_dupack` for the window).
    pub(super) is_dupack: bool,
    /// Segments newly delivered (cumulatively, SACKed, or counted duplicate ACKs).
    pub(super) delivered: u32,
    /// The congestion control's RTT sample.
    pub(super) ca_rtt: Option<SimDuration>,
    /// CE-marked segments reported by AccECN.
    pub(super) ce: u32,
    /// Not advancing, no data, same window, no new SACK.
    pub(super) pure_dup: bool,
    /// The D-SACK block, looked for only during a probe episode.
    pub(super) dsack: Option<SackBlock>,
    /// Congestion experienced (ECE, or AccECN CE count).
    pub(super) ece: bool,
    /// The undo step forbids marking losses and starting a recovery on this ACK.
    pub(super) hold: bool,
    /// RACK armed its reorder timeout on this ACK.
    pub(super) reo_armed: bool,
    pub(super) newly_lost: bool,
    /// FACK: the head's transmission is older than the RTO.
    pub(super) head_timed_out: bool,
    pub(super) out: AckOutcome,
}

/// Where `tcp_ack` handles the end of a loss-probe episode (`tcp_process_tlp_ack`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum TlpAck {
    /// No loss probes.
    Never,
    /// Before `tcp_fastretrans_alert` (Linux 4.x–6.1).
    BeforeAlert,
    /// After `tcp_fastretrans_alert` (Linux 3.14).
    AfterAlert,
}

/// The steps of `tcp_ack` whose place differs between the modelled kernels (everything
/// else runs in the same order for all of them). One row per [`Tlp`] flavour, the
/// kernel setting that decides it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct AckOrder {
    pub(super) tlp_ack: TlpAck,
    /// A probe instead of the RTO when an ACK of new data restarts the timer
    /// (`tcp_set_xmit_timer`, 4.x+).
    pub(super) probe_on_rearm: bool,
    /// `tcp_schedule_loss_probe` at the end of every ACK while the RTO is pending (3.14).
    pub(super) probe_at_end: bool,
}

impl AckOrder {
    pub(super) const fn of(tlp: Tlp) -> AckOrder {
        match tlp {
            Tlp::Off => AckOrder {
                tlp_ack: TlpAck::Never,
                probe_on_rearm: false,
                probe_at_end: false,
            },
            Tlp::Linux => AckOrder {
                tlp_ack: TlpAck::BeforeAlert,
                probe_on_rearm: true,
                probe_at_end: false,
            },
            Tlp::Linux3_14 => AckOrder {
                tlp_ack: TlpAck::AfterAlert,
                probe_on_rearm: false,
                probe_at_end: true,
            },
        }
    }
}
