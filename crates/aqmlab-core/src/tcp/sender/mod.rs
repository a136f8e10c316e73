//! The sending half of an endpoint: sequence space, loss recovery, cwnd control, RTO.
//!
//! An algorithm core: it never reads a clock or touches the event queue. The connection
//! feeds it ACKs (`on_ack`) and timeouts (`on_rto`), pulls segments to transmit
//! (`next_segment`) and arms the retransmission timer at `rto_deadline()`.
//!
//! ## States (Linux `icsk_ca_state`)
//! - `Open`: growth by the congestion control on ACKs of new data. SACKed or
//!   duplicate-ACKed segments free room in the pipe, so new data keeps flowing before
//!   recovery starts (RFC 3042 limited transmit falls out of the pipe accounting).
//! - `Recovery` (fast retransmit/recovery), entered when the first outstanding segment is
//!   deemed lost: with SACK by RFC 6675 (DupThresh SACKed segments above it), without
//!   SACK after three duplicate ACKs, counted as emulated SACKs as Linux does, with
//!   RFC 6582's `recover` guard. ssthresh comes from the congestion control; cwnd then
//!   follows PRR (RFC 6937 as Linux `tcp_cwnd_reduction`, with Linux's choice of
//!   RecoverFS = cwnd before the reduction) or, with `prr = false`, is set to ssthresh
//!   at once (RFC 6675 §5 step 4.2) with one forced retransmission. Lost segments are
//!   retransmitted first, lowest first (NextSeg rule 1), then new data. Without SACK a
//!   partial ACK marks the new first segment lost and retransmits it (RFC 6582 §3.2
//!   step 3); counting duplicate ACKs as delivered segments makes the pipe estimate
//!   equal to RFC 6582's inflated-window arithmetic. Recovery ends when everything sent
//!   before it started is acknowledged; cwnd = ssthresh.
//! - `Cwr` (RFC 3168 ECN reduction): entered from `Open` on an ACK carrying ECE; same
//!   reduction as recovery without retransmission; at most one reduction per window of
//!   data (until everything sent before the reduction is acknowledged); the next new
//!   data segment carries CWR.
//! - `Loss` (after an RTO): ssthresh reduced once per episode, cwnd = 1, every
//!   unSACKed segment deemed lost and resent in order under slow start, backoff doubling
//!   the timer (RFC 6298 5.5–5.7, Linux `tcp_enter_loss`).
//!
//! ## Layout (Linux `tcp_input.c` / `tcp_output.c` / `tcp_timer.c` seams)
//! - `ack`: `on_ack` and its steps, in order, over an ACK context;
//! - `loss`: DupThresh / FACK / RACK marking;
//! - `reduction`: entering, stepping and leaving CWR / Recovery ([`Recovery`]);
//! - `undo`: undo of spurious reductions;
//! - `timer`: RTO, tail loss probe, RACK reorder timeout, early retransmit;
//! - `output`: choosing and stamping the next segment;
//! - `rate`: delivery-rate estimation (`tcp_rate.c`);
//! - `pacing`: internal pacing.
//!
//! ## Not modelled (deliberate)
//! RACK's D-SACK-driven `reo_wnd` widening (`reo_wnd_steps`, `reo_wnd_persist`): D-SACKs
//! end probe episodes and drive undo only; 6.1's D-SACK sanity checks
//! (`tcp_dsack_seen`: more duplicates than retransmissions) are not applied, the
//! model's network does not duplicate packets. NextSeg rules (3) and (4) are not applied (Linux does not retransmit
//! unmarked holes). No Nagle
//! (applications write whole messages, as with TCP_NODELAY), no pacing (Linux paces
//! CUBIC/Reno only under the fq qdisc), no TSO. RFC 2861 cwnd decay while
//! application-limited is not modelled, but Linux's restart after idle is
//! (`tcp_slow_start_after_idle`: cwnd halved per RTO idle, down to the initial window).

pub use super::cc::CaState;
use super::cc::RateSample;
use super::cc::{AckSample, CcParams, CongestionControl, Window, INFINITE_SSTHRESH};
use super::config::{
    CcKind, LossDetection, Recovery, RenoHalves, RtoFloor, RttTiming, TcpConfig, Tlp, Undo,
};
use super::rtt::RttEstimator;
use super::scoreboard::{Delivered, Scoreboard, TxStamp, DUP_THRESH, EVER_RETRANS};
use super::AnyCc;
use crate::packet::{tcp_flags, SackBlock, TcpHeader};
use crate::time::{SimDuration, SimTime};

mod ack;
mod loss;
mod output;
mod pacing;
mod rate;
mod reduction;
mod timer;
mod tsq;
mod undo;

use ack::{AckCtx, AckOrder};

/// "Unlimited" application data: a byte count no run reaches.
pub const UNLIMITED: u64 = u64::MAX / 4;

/// A segment the sender wants transmitted.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TxSeg {
    pub seq: u64,
    /// Sequence number after the segment (includes the FIN).
    pub end: u64,
    pub payload: u32,
    pub fin: bool,
    /// Set CWR (first new data after a reduction, RFC 3168 6.1.2).
    pub cwr: bool,
    /// Send as ECT(0): new data of an ECN connection; never retransmissions (6.1.5).
    pub ect: bool,
    pub retrans: bool,
}

/// What the sender's one retransmission-timer slot is armed for (Linux
/// `icsk_pending`: `ICSK_TIME_RETRANS`, `ICSK_TIME_LOSS_PROBE`, `ICSK_TIME_REO_TIMEOUT`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum XmitTimer {
    Rto,
    /// Tail loss probe.
    Probe,
    /// RACK reordering timeout.
    Reo,
    /// Delayed early retransmit (Linux 3.x `ICSK_TIME_EARLY_RETRANS`).
    EarlyRetrans,
}

/// The segment a fired loss probe sends.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Probe {
    NewData,
    Last,
}

/// Linux `TCP_TIMEOUT_MIN`, in jiffies: added to the RACK reorder timeout and to the
/// probe timeout.
const TIMEOUT_MIN_JIFFIES: u64 = 2;

/// Counters of one sender. Laid out in declaration order (`repr(C)`), 64-byte aligned,
/// the counters every ACK updates in the first cache line.
#[derive(Clone, Debug, Default, PartialEq)]
#[repr(C, align(64))]
pub struct SenderStats {
    pub acks: u64,
    /// Sum of cwnd (segments) over ACKs, for the mean.
    pub cwnd_sum: f64,
    /// Payload bytes cumulatively acknowledged.
    pub bytes_acked: u64,
    pub rtt_samples: u64,
    /// Sum of SRTT (seconds) after each RTT sample, for the mean.
    pub srtt_sum: f64,
    /// Segments transmitted (first transmissions and retransmissions).
    pub segs_sent: u64,
    pub retransmits: u64,
    /// Retransmissions of segments marked lost that were found lost again, by RACK, by
    /// a timeout with RACK, or by FACK's `tcp_mark_lost_retrans` (`TCPLostRetransmit`).
    pub lost_retransmits: u64,
    pub rtos: u64,
    /// Timeouts found spurious and undone (Linux MIB `TCPLossUndo`).
    pub rto_undos: u64,
    /// Fast recoveries undone when they ended (`TCPFullUndo`), on a partial ACK
    /// (`TCPPartialUndo`) and by D-SACKs of every retransmission (`TCPDSACKUndo`, also
    /// after the recovery or timeout ended).
    pub full_undos: u64,
    pub partial_undos: u64,
    pub dsack_undos: u64,
    pub fast_recoveries: u64,
    /// Tail loss probes sent (Linux MIB `TCPLossProbes`).
    pub loss_probes: u64,
    /// Probe episodes that repaired a loss and reduced cwnd (`TCPLossProbeRecovery`).
    pub loss_probe_recoveries: u64,
    /// RACK reorder timeouts that fired.
    pub reo_timeouts: u64,
    /// Fast recoveries started by early retransmit (RFC 5827), at once or by its timer.
    pub early_retransmits: u64,
    /// Window reductions caused by ECN-Echo.
    pub ecn_reductions: u64,
    /// ACKs that carried ECE.
    pub ece_acks: u64,
}

/// What an ACK did, for the connection.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct AckOutcome {
    /// Payload bytes newly acknowledged cumulatively.
    pub newly_acked: u64,
    /// The ACK advanced `snd_una`.
    pub advanced: bool,
    /// An RTT sample was taken.
    pub rtt_sampled: bool,
}

/// Sender state of one endpoint.
///
/// Laid out in declaration order (`repr(C)`), 64-byte aligned, by use: an ACK or
/// segment of a many-flow run finds the connection cold in cache, so what it reads
/// comes first and together. The first three cache lines hold what every arriving
/// segment reads (the idle-ACK and quiescent-sender tests, the sequence space, the
/// window, the timer slot: also at the receiving end of a transfer); the fourth the
/// per-ACK `u64`s of a data sender; then the congestion control (its variant and
/// small states first), the RTT estimator, the scoreboard and the counters, each
/// with its per-ACK fields first; the rest (undo, probes, pacing, GSO/TSQ,
/// configuration) after. `layout_puts_the_per_ack_fields_first` pins it.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct Sender {
    // -- lines 0-1: read by every arriving segment --
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Data occupies sequence numbers [1, write_end).
    write_end: u64,
    rwnd: u64,
    /// Deadline of the retransmission-timer slot (what it is armed for: `timer`).
    rto_deadline: SimTime,
    /// The open loss-probe episode (Linux `tlp_high_seq`, 0 = none; see `tlp`).
    tlp_high_seq: u64,
    /// snd_una when the reduction that may be undone began (Linux `undo_marker`, 0 =
    /// none; see `undo`).
    undo_marker: u64,
    /// Delivery-rate estimation (Linux `tcp_rate.c`): segments delivered so far
    /// (`tp->delivered`), when that count last grew (`delivered_time`), the start of the
    /// current send phase (`first_tx`), and the application-limited mark
    /// (`tp->app_limited`: the delivery count that ends it, 0 = not limited).
    delivered: u64,
    app_limited: u64,
    /// The time of the first retransmission of the episode (Linux `retrans_stamp`).
    retrans_stamp: Option<SimTime>,
    /// Minimum RTT seen (Linux `tcp_min_rtt`; its window is 300 s, longer than runs).
    min_rtt: Option<SimDuration>,
    pub w: Window,
    // -- line 2: the counters and flags of the same tests --
    /// Duplicate ACKs counted as delivered segments when SACK is off (Linux reno SACK).
    reno_sacked: u32,
    burst_sent: u32,
    max_packets_out: u32,
    last_ace: u32,
    /// Retransmissions since the undo marker less the D-SACKed ones (`undo_retrans`;
    /// 6.1: -1 = none yet).
    undo_retrans: i32,
    mss: u32,
    /// IP + TCP header bytes of a segment (52 with timestamps, 40 without).
    hdr: u32,
    /// cwnd when the reduction began (PRR's `prior_cwnd`).
    prior_cwnd: u32,
    established: bool,
    sack: bool,
    ecn_ok: bool,
    /// Accurate ECN negotiated: the ACK's `ace` counter gives the CE count.
    accecn: bool,
    pub state: CaState,
    fin_requested: bool,
    fin_sent: bool,
    /// RACK loss detection is on (`loss_detection = "rack"` with SACK).
    rack: bool,
    /// FACK loss detection is on (`loss_detection = "fack"` with SACK).
    fack: bool,
    is_cwnd_limited: bool,
    /// Pacing (Linux internal pacing): on, and waiting for `wstamp` (the earliest time
    /// of the next transmission).
    pacing: bool,
    pace_blocked: bool,
    /// The loss probe waiting to be sent, and a deferred RTO re-arm (after the
    /// transmissions a reorder timeout triggers).
    probe: Option<Probe>,
    probe_after_send: bool,
    rearm_after_send: bool,
    /// TCP Small Queues (`tsq.rs`): the kernel whose limit applies (`None`: off, or the
    /// application delivers no TX completions), and whether it waits for a completion
    /// (`TSQ_THROTTLED`; the bytes below it: `wmem`).
    tsq: Option<super::gso::GsoKernel>,
    tsq_throttled: bool,
    /// GSO super-packets (`[tcp] gso = "on"`): the kernel whose rules apply
    /// (`skb_bytes`: the skb being built).
    gso: Option<super::gso::GsoKernel>,
    /// GSO: `next_segment` returned the first segment of an skb not yet closed.
    skb_open: bool,
    /// What the retransmission-timer slot is armed for.
    timer: XmitTimer,
    /// Tail loss probes (`Tlp::Off` without SACK); the episode (`tlp_high_seq`) and
    /// whether its probe was a retransmission (`tlp_retrans`).
    tlp: Tlp,
    tlp_retrans: bool,
    /// Undo of spurious reductions (`TcpConfig::undo`; `Off` also for controls that own
    /// cwnd) and its state, as Linux's: `undo_marker`, `undo_retrans`, cwnd and
    /// ssthresh before the reduction (`undo_cwnd` for `ca_ops->undo_cwnd`,
    /// `prior_ssthresh`; 0 = none), when the last timeout fired (`loss_time`),
    /// `retrans_stamp`, F-RTO armed (`tp->frto`) and past its step 2b, and (2.6) the
    /// sequence after which the Disorder state that keeps a late D-SACK undo possible
    /// ends (`undo_until`).
    undo: Undo,
    frto: bool,
    frto_2b: bool,
    queue_cwr: bool,
    force_rtx: bool,
    /// Send data as ECT(1) (L4S) rather than ECT(0).
    ect1: bool,
    want_accecn: bool,
    /// Rate halving's floor is ssthresh/2 for Reno (`tcp_reno_min_cwnd`), else ssthresh.
    reno_floor: bool,
    recovery: Recovery,
    /// RFC 5827 early retransmit with Linux's delay (`early_retransmit` with SACK).
    early_rtx: bool,
    // -- line 3: the per-ACK fields of a sender with data in flight --
    /// One jiffy of the modelled kernel (`TcpConfig::hz`).
    jiffy: SimDuration,
    lsndtime: SimTime,
    cwnd_usage_seq: u64,
    delivered_time: SimTime,
    first_tx: SimTime,
    /// CE-marked segments delivered (Accurate ECN).
    delivered_ce: u64,
    /// Proportional rate reduction (RFC 6937): segments delivered and sent in the
    /// reduction (`prr_out` counts every transmission).
    prr_delivered: u32,
    prr_out: u32,
    /// Recovery point (RFC 6675 RecoveryPoint, RFC 6582 `recover`, Linux `high_seq`).
    high_seq: u64,
    // -- then each part with its per-ACK fields first (the control's variant at the
    // end of line 3) --
    pub cc: AnyCc,
    pub rtt: RttEstimator,
    pub sb: Scoreboard,
    pub stats: SenderStats,
    // -- cold: per timeout, per probe, or configuration --
    /// `rtt_timing = "ns2"`: the segment being timed, as (its end, its send time).
    rtt_timed: Option<(u64, SimTime)>,
    wstamp: SimTime,
    loss_time: SimTime,
    undo_until: u64,
    /// TSQ: the bytes of this socket's skbs below the first link (`sk_wmem_alloc`).
    wmem: u64,
    min_rto: SimDuration,
    /// 10 ms in whole jiffies: the 3.14 probe timeout's floor (fixed per sender).
    probe_floor_3_14: SimDuration,
    /// GSO: the bytes of the skb being built (paced once, when it closes: `pacing.rs`).
    skb_bytes: u32,
    /// Timeouts since the last forward progress (Linux `icsk_retransmits`).
    rto_retrans: u32,
    undo_cwnd: u32,
    prior_ssthresh: u32,
    init_cwnd: u32,
    pacing_ss_ratio: u32,
    pacing_ca_ratio: u32,
}

impl Sender {
    pub fn new(cfg: &TcpConfig) -> Self {
        Sender {
            mss: cfg.mss,
            sack: cfg.sack,
            recovery: cfg.recovery,
            reno_floor: cfg.cc == CcKind::NewReno,
            init_cwnd: cfg.init_cwnd,
            ecn_ok: false,
            established: false,
            snd_una: 1,
            snd_nxt: 1,
            write_end: 1,
            fin_requested: false,
            fin_sent: false,
            rwnd: cfg.rcv_window as u64,
            sb: Scoreboard::new(),
            reno_sacked: 0,
            w: Window {
                halve_flight: cfg.reno_halves == RenoHalves::Flight,
                ..Window::with_growth(cfg.init_cwnd, cfg.max_cwnd, cfg.ss_growth, cfg.ca_growth)
            },
            cc: AnyCc::new(cfg.cc, &CcParams::from_config(cfg)),
            state: CaState::Open,
            high_seq: 0,
            prior_cwnd: 0,
            prr_delivered: 0,
            prr_out: 0,
            force_rtx: false,
            rtt: RttEstimator::new(cfg.min_rto, cfg.initial_rto)
                .with_floor_on_sum(cfg.rto_floor == RtoFloor::Sum)
                .with_ns2_clock(cfg.rtt_timing == RttTiming::Ns2),
            rtt_timed: None,
            hdr: cfg.header_bytes(),
            rto_deadline: SimTime::NEVER,
            timer: XmitTimer::Rto,
            rack: cfg.loss_detection == LossDetection::Rack && cfg.sack,
            fack: cfg.loss_detection == LossDetection::Fack && cfg.sack,
            early_rtx: cfg.early_retransmit
                && cfg.sack
                && cfg.loss_detection != LossDetection::Rack,
            tlp: if cfg.sack { cfg.tlp } else { Tlp::Off },
            tlp_high_seq: 0,
            tlp_retrans: false,
            probe: None,
            probe_after_send: false,
            rearm_after_send: false,
            min_rto: cfg.min_rto,
            jiffy: SimDuration::from_nanos(1_000_000_000 / cfg.hz as u64),
            probe_floor_3_14: {
                let j = 1_000_000_000 / cfg.hz as u64;
                SimDuration::from_nanos(10_000_000u64.div_ceil(j) * j)
            },
            rto_retrans: 0,
            undo: cfg.undo,
            undo_marker: 0,
            undo_retrans: 0,
            undo_cwnd: 0,
            prior_ssthresh: 0,
            loss_time: SimTime::ZERO,
            retrans_stamp: None,
            frto: false,
            frto_2b: false,
            undo_until: 0,
            is_cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            burst_sent: 0,
            lsndtime: SimTime::ZERO,
            queue_cwr: false,
            accecn: false,
            want_accecn: cfg.cc.needs_accecn(),
            last_ace: 0,
            ect1: cfg.cc.sends_ect1(),
            pacing: cfg.pacing,
            pacing_ss_ratio: cfg.pacing_ss_ratio,
            pacing_ca_ratio: cfg.pacing_ca_ratio,
            wstamp: SimTime::ZERO,
            pace_blocked: false,
            delivered: 0,
            delivered_time: SimTime::ZERO,
            first_tx: SimTime::ZERO,
            app_limited: 0,
            delivered_ce: 0,
            min_rtt: None,
            gso: cfg.gso,
            skb_bytes: 0,
            tsq: None,
            skb_open: false,
            wmem: 0,
            tsq_throttled: false,
            stats: SenderStats::default(),
        }
        .with_rack()
    }

    fn with_rack(mut self) -> Self {
        if self.rack {
            self.sb.enable_rack();
        }
        self
    }

    /// The handshake completed. `rtt` is the handshake's RTT sample; `syn_retrans` how
    /// often this side had to resend its SYN / SYN-ACK.
    pub fn establish(
        &mut self,
        now: SimTime,
        rtt: Option<SimDuration>,
        syn_retrans: u32,
        ecn_ok: bool,
    ) {
        self.established = true;
        self.ecn_ok = ecn_ok;
        self.accecn = ecn_ok && self.want_accecn;
        self.cc.set_ecn_ok(ecn_ok);
        if self.cc.owns_cwnd() {
            // Controls with their own `cong_control` (BBR, Prague with ECN) keep their
            // window through loss recovery: the model undoes nothing for them.
            self.undo = Undo::Off;
        }
        if let Some(r) = rtt {
            if !self.rtt.is_ns2() {
                // (ns-2 has no handshake: its first sample is the first data segment's)
                self.rtt.sample(r);
            }
            self.min_rtt = Some(r);
        }
        // RFC 5681 3.1 / RFC 6298 5.7: a window of one segment after a lost SYN. Linux
        // (tcp_init_transfer) does so only after more than one retransmission.
        let iw = if syn_retrans > 1 { 1 } else { self.init_cwnd };
        self.w.cwnd = iw.min(self.w.clamp);
        self.cc.init(&mut self.w, now, self.snd_nxt);
        self.lsndtime = now;
    }

    pub fn is_established(&self) -> bool {
        self.established
    }
    pub fn ecn_ok(&self) -> bool {
        self.ecn_ok
    }
    /// Accurate ECN feedback was negotiated.
    pub fn accecn(&self) -> bool {
        self.accecn
    }
    /// The ECN codepoint of this sender's data (`Ect1` for L4S senders).
    pub fn ect_codepoint(&self) -> crate::packet::Ecn {
        if self.ect1 {
            crate::packet::Ecn::Ect1
        } else {
            crate::packet::Ecn::Ect0
        }
    }

    /// Queues `bytes` more bytes of application data.
    pub fn write(&mut self, now: SimTime, bytes: u64) {
        debug_assert!(!self.fin_requested, "write after close");
        if bytes == 0 || self.fin_requested {
            return;
        }
        // Linux tcp_slow_start_after_idle: restart the window after an idle period.
        if self.established
            && self.sb.packets_out == 0
            && now.saturating_since(self.lsndtime) > self.rtt.rto()
        {
            self.cwnd_restart(now.saturating_since(self.lsndtime));
        }
        self.write_end = self.write_end.saturating_add(bytes).min(UNLIMITED);
    }

    /// No more data will be written: send a FIN after the queued data.
    pub fn close(&mut self) {
        self.fin_requested = true;
    }

    /// Drops queued data that has not been sent yet (the application stops).
    pub fn truncate_unsent(&mut self) {
        if !self.fin_sent {
            self.write_end = self.snd_nxt.max(1);
        }
    }

    /// Bytes written but not yet sent.
    pub fn unsent(&self) -> u64 {
        if self.fin_sent {
            0
        } else {
            self.write_end.saturating_sub(self.snd_nxt)
        }
    }
    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.write_end - 1
    }
    /// Every written byte has been acknowledged.
    pub fn all_data_acked(&self) -> bool {
        self.snd_una >= self.write_end
    }
    /// The FIN was sent and acknowledged.
    pub fn fin_acked(&self) -> bool {
        self.fin_sent && self.snd_una > self.write_end
    }

    /// Segments in flight (RFC 6675 pipe).
    pub fn in_flight(&self) -> u32 {
        self.sb.in_flight().saturating_sub(self.reno_sacked)
    }
    /// Linux `tcp_is_cwnd_limited`.
    pub fn cwnd_limited(&self) -> bool {
        if self.w.in_slow_start() {
            self.w.cwnd < 2 * self.max_packets_out
        } else {
            self.is_cwnd_limited
        }
    }

    /// The window in the peer's SYN or SYN-ACK (not scaled, RFC 7323 §2.2).
    pub fn set_peer_window(&mut self, wnd: u32) {
        self.rwnd = wnd as u64;
    }

    /// Bytes of cwnd and ssthresh (ssthresh `None` while unset), for traces.
    pub fn cwnd_bytes(&self) -> u64 {
        self.w.cwnd as u64 * self.mss as u64
    }
    pub fn ssthresh_bytes(&self) -> Option<u64> {
        (self.w.ssthresh < INFINITE_SSTHRESH).then(|| self.w.ssthresh as u64 * self.mss as u64)
    }
}

#[cfg(test)]
mod tests;
