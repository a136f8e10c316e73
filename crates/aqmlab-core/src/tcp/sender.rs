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

//! ## Loss detection: DupThresh or RACK; tail loss probes
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
//!
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
use crate::packet::{tcp_flags, TcpHeader};
use crate::time::{SimDuration, SimTime};

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

/// Counters of one sender.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SenderStats {
    /// Segments transmitted (first transmissions and retransmissions).
    pub segs_sent: u64,
    pub retransmits: u64,
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
    /// Retransmissions of segments marked lost that were found lost again, by RACK, by
    /// a timeout with RACK, or by FACK's `tcp_mark_lost_retrans` (`TCPLostRetransmit`).
    pub lost_retransmits: u64,
    /// RACK reorder timeouts that fired.
    pub reo_timeouts: u64,
    /// Fast recoveries started by early retransmit (RFC 5827), at once or by its timer.
    pub early_retransmits: u64,
    /// Window reductions caused by ECN-Echo.
    pub ecn_reductions: u64,
    /// ACKs that carried ECE.
    pub ece_acks: u64,
    /// Payload bytes cumulatively acknowledged.
    pub bytes_acked: u64,
    pub acks: u64,
    /// Sum of cwnd (segments) over ACKs, for the mean.
    pub cwnd_sum: f64,
    pub rtt_samples: u64,
    /// Sum of SRTT (seconds) after each RTT sample, for the mean.
    pub srtt_sum: f64,
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
#[derive(Clone, Debug)]
pub struct Sender {
    mss: u32,
    sack: bool,
    recovery: Recovery,
    /// Rate halving's floor is ssthresh/2 for Reno (`tcp_reno_min_cwnd`), else ssthresh.
    reno_floor: bool,
    init_cwnd: u32,
    ecn_ok: bool,
    established: bool,
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Data occupies sequence numbers [1, write_end).
    write_end: u64,
    fin_requested: bool,
    fin_sent: bool,
    rwnd: u64,
    pub sb: Scoreboard,
    /// Duplicate ACKs counted as delivered segments when SACK is off (Linux reno SACK).
    reno_sacked: u32,
    pub w: Window,
    pub cc: AnyCc,
    pub state: CaState,
    /// Recovery point (RFC 6675 RecoveryPoint, RFC 6582 `recover`, Linux `high_seq`).
    high_seq: u64,
    prior_cwnd: u32,
    prr_delivered: u32,
    prr_out: u32,
    force_rtx: bool,
    pub rtt: RttEstimator,
    /// `rtt_timing = "ns2"`: the segment being timed, as (its end, its send time).
    rtt_timed: Option<(u64, SimTime)>,
    /// IP + TCP header bytes of a segment (52 with timestamps, 40 without).
    hdr: u32,
    /// Deadline of the retransmission-timer slot and what it is armed for.
    rto_deadline: SimTime,
    timer: XmitTimer,
    /// RACK loss detection is on (`loss_detection = "rack"` with SACK).
    rack: bool,
    /// FACK loss detection is on (`loss_detection = "fack"` with SACK).
    fack: bool,
    /// RFC 5827 early retransmit with Linux's delay (`early_retransmit` with SACK).
    early_rtx: bool,
    /// Tail loss probes (`Tlp::Off` without SACK), the open probe episode (Linux
    /// `tlp_high_seq`, 0 = none), whether its probe was a retransmission
    /// (`tlp_retrans`), the probe waiting to be sent, and a deferred RTO re-arm (after
    /// the transmissions a reorder timeout triggers).
    tlp: Tlp,
    tlp_high_seq: u64,
    tlp_retrans: bool,
    probe: Option<Probe>,
    probe_after_send: bool,
    rearm_after_send: bool,
    min_rto: SimDuration,
    /// One jiffy of the modelled kernel (`TcpConfig::hz`).
    jiffy: SimDuration,
    /// Timeouts since the last forward progress (Linux `icsk_retransmits`).
    rto_retrans: u32,
    /// Undo of spurious reductions (`TcpConfig::undo`; `Off` also for controls that own
    /// cwnd) and its state, as Linux's: snd_una when the reduction that may be undone
    /// began (`undo_marker`, 0 = none), retransmissions since less the D-SACKed ones
    /// (`undo_retrans`; 6.1: -1 = none yet), cwnd and ssthresh before it (`prior_cwnd`
    /// for `ca_ops->undo_cwnd`, `prior_ssthresh`; 0 = none), when the last timeout fired,
    /// the time of the first retransmission of the episode (`retrans_stamp`), F-RTO
    /// armed (`tp->frto`) and past its step 2b, and (2.6) the sequence after which the
    /// Disorder state that keeps a late D-SACK undo possible ends.
    undo: Undo,
    undo_marker: u64,
    undo_retrans: i32,
    undo_cwnd: u32,
    prior_ssthresh: u32,
    loss_time: SimTime,
    retrans_stamp: Option<SimTime>,
    frto: bool,
    frto_2b: bool,
    undo_until: u64,
    is_cwnd_limited: bool,
    max_packets_out: u32,
    cwnd_usage_seq: u64,
    burst_sent: u32,
    lsndtime: SimTime,
    queue_cwr: bool,
    /// Accurate ECN negotiated: the ACK's `ace` counter gives the CE count.
    accecn: bool,
    want_accecn: bool,
    last_ace: u32,
    /// Send data as ECT(1) (L4S) rather than ECT(0).
    ect1: bool,
    /// Pacing (Linux internal pacing): the earliest time of the next transmission.
    pacing: bool,
    pacing_ss_ratio: u32,
    pacing_ca_ratio: u32,
    wstamp: SimTime,
    pace_blocked: bool,
    /// Delivery-rate estimation (Linux `tcp_rate.c`): segments delivered so far
    /// (`tp->delivered`), when that count last grew, the start of the current send
    /// phase, and the application-limited mark (`tp->app_limited`: the delivery count
    /// that ends it, 0 = not limited).
    delivered: u64,
    delivered_time: SimTime,
    first_tx: SimTime,
    app_limited: u64,
    delivered_ce: u64,
    /// Minimum RTT seen (Linux `tcp_min_rtt`; its window is 300 s, longer than runs).
    min_rtt: Option<SimDuration>,
    pub stats: SenderStats,
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
    fn paced(&mut self, now: SimTime, bytes: u32) {
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
    /// Deadline of the retransmission-timer slot (RTO, tail loss probe or RACK reorder
    /// timeout: Linux keeps one timer for the three); `NEVER` when unarmed.
    pub fn rto_deadline(&self) -> SimTime {
        self.rto_deadline
    }
    /// What the timer slot is armed for.
    pub fn timer_kind(&self) -> XmitTimer {
        self.timer
    }

    fn arm(&mut self, kind: XmitTimer, at: SimTime) {
        self.timer = kind;
        self.rto_deadline = at;
    }

    /// Linux `tcp_rearm_rto`: no timer with nothing outstanding; else the RTO, counted
    /// from the oldest outstanding transmission when a probe or reorder timeout held
    /// the slot (`tcp_rto_delta_us`), from now otherwise.
    fn rearm_rto(&mut self, now: SimTime) {
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
    fn head_rto_deadline(&self) -> SimTime {
        self.sb.get(0).sent + self.rtt.rto()
    }

    /// `d` rounded up to whole jiffies (Linux `usecs_to_jiffies`, `msecs_to_jiffies`).
    fn jiffies(&self, d: SimDuration) -> SimDuration {
        let j = self.jiffy.as_nanos();
        SimDuration::from_nanos(d.as_nanos().div_ceil(j) * j)
    }

    /// Linux `TCP_TIMEOUT_MIN` (2 jiffies: 8 ms at 250 Hz).
    fn timeout_min(&self) -> SimDuration {
        SimDuration::from_nanos(self.jiffy.as_nanos() * TIMEOUT_MIN_JIFFIES)
    }

    /// Linux `tcp_schedule_loss_probe` (`advancing_rto`: called for an ACK of new data,
    /// when the RTO would be restarted from now). Returns whether a probe was armed.
    #[inline(never)]
    fn schedule_probe(&mut self, now: SimTime, advancing_rto: bool) -> bool {
        if self.tlp == Tlp::Off || self.sb.packets_out == 0 {
            return false;
        }
        let Some(srtt) = self.rtt.srtt() else {
            return false;
        };
        // Linux's Disorder state (SACKed, lost or retransmitted data outstanding, or a
        // retransmitted head) counts as Open here but takes no probe.
        let disorder = self.sb.sacked_out + self.sb.lost_out + self.sb.retrans_out > 0
            || self.sb.get(0).has(super::scoreboard::EVER_RETRANS);
        match self.tlp {
            Tlp::Linux => {
                if disorder || !matches!(self.state, CaState::Open | CaState::Cwr) {
                    return false;
                }
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
                    || disorder
                    || self.state != CaState::Open
                    || (self.w.cwnd > self.in_flight() && self.unsent() > 0)
                {
                    return false;
                }
                let mut pto = self.jiffies(srtt * 2);
                if self.sb.packets_out == 1 {
                    // 1.5·SRTT + TCP_DELACK_MAX (200 ms).
                    pto = pto.max(self.jiffies(srtt + srtt / 2) + SimDuration::from_millis(200));
                }
                pto = pto.max(self.jiffies(SimDuration::from_millis(10)));
                let rto_at = self.rto_deadline;
                if now + pto > rto_at && rto_at > now {
                    pto = rto_at.saturating_since(now);
                }
                self.arm(XmitTimer::Probe, now + pto);
                true
            }
            Tlp::Off => false,
        }
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
    fn on_probe_timer(&mut self, now: SimTime) {
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
    fn on_reo_timer(&mut self, now: SimTime) {
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
    fn on_early_retransmit_timer(&mut self, now: SimTime) {
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
    fn early_retransmit(&mut self, now: SimTime, ece: bool) -> Option<bool> {
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
    fn may_send_now(&self) -> bool {
        let avail = self.unsent().min(self.mss as u64);
        avail > 0
            && self.in_flight() < self.w.cwnd
            && self.snd_nxt + avail <= self.snd_una + self.rwnd
    }

    /// Linux `tcp_rack_reo_wnd`: no reordering window while no reordering was seen and
    /// the sender is in Recovery/Loss or has DupThresh segments SACKed; else
    /// min_rtt / 4 (one step: the D-SACK-driven growth is not modelled),
    /// at most SRTT.
    fn rack_reo_wnd(&self) -> SimDuration {
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
    fn rack_detect(&mut self, now: SimTime) -> super::scoreboard::RackOutcome {
        let reo_wnd = self.rack_reo_wnd();
        let r = self.sb.rack_detect_loss(now, reo_wnd);
        self.stats.lost_retransmits += r.lost_retrans as u64;
        r
    }

    /// RACK loss detection on an ACK (`tcp_rack_mark_lost`): arms the reorder timer if a
    /// segment is not yet due. Returns (newly lost, lost retransmissions, reo armed).
    #[inline(never)]
    fn rack_mark_lost(&mut self, now: SimTime) -> (u32, u32, bool) {
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
    fn in_reduction(&self) -> bool {
        matches!(self.state, CaState::Cwr | CaState::Recovery)
    }

    fn cwnd_restart(&mut self, idle: SimDuration) {
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

    fn init_cwnd_reduction(&mut self, now: SimTime, ecn: bool) {
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

    fn end_cwnd_reduction(&mut self) {
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
    fn cwnd_down(&mut self) {
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

    /// `rtt_timing = "ns2"` (ns-2 `newack`): the timed segment's sample once an ACK
    /// covers it; a partial ACK in fast recovery clears the backoff (Sack1
    /// `t_backoff_ = 1`).
    #[inline(never)]
    fn ns2_rtt(&mut self, now: SimTime, ack: u64, una_advanced: bool) -> Option<SimDuration> {
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

    fn enter_recovery(&mut self, now: SimTime, ece: bool) {
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
        self.rtt_timed = None;
        if !self.sack {
            self.sb.mark_head_lost();
        }
        self.force_rtx = self.recovery == Recovery::Rfc6675;
    }

    /// Linux tcp_enter_recovery's undo part: the clock of the first retransmission
    /// restarts with the fast retransmission; the undo state restarts, with the cwnd and
    /// ssthresh to restore when this recovery begins the reduction.
    #[inline(never)]
    fn undo_on_recovery(&mut self, ece: bool) {
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

    fn enter_cwr(&mut self, now: SimTime) {
        self.stats.ecn_reductions += 1;
        // Linux tcp_enter_cwr: congestion proven by ECN is never undone.
        self.undo_marker = 0;
        self.prior_ssthresh = 0;
        self.init_cwnd_reduction(now, true);
        self.state = CaState::Cwr;
    }

    /// PRR (RFC 6937), as Linux `tcp_cwnd_reduction`.
    fn cwnd_reduction(&mut self, newly: u32, newly_lost: bool, una_advanced: bool) {
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

    /// An ACK that can teach an idle sender nothing: nothing is outstanding (the ACK
    /// repeats `snd_una` = `snd_nxt`), it carries no SACK block, no ECN signal, and it is
    /// not a pure duplicate (it carries data or moves the window), and the sender is in
    /// Open with no undo, loss probe or RTT-setting control pending. This is every
    /// segment arriving at the receiving end of a one-way transfer. For such an ACK
    /// [`Sender::on_ack`] changes only what [`Sender::on_idle_ack`] changes (each step of
    /// the general path is a no-op on these conditions; the golden fingerprints and
    /// `idle_ack_fast_path_matches_the_general_path` check it).
    #[inline]
    fn is_idle_ack(&self, h: &TcpHeader, carries_data: bool) -> bool {
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
    /// the receive window, the control's per-ACK hook and the Linux 3.14 probe check.
    #[inline(never)]
    fn on_idle_ack(&mut self, now: SimTime, h: &TcpHeader) {
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
        if self.tlp == Tlp::Linux3_14 && self.timer == XmitTimer::Rto {
            self.schedule_probe(now, false);
        }
    }

    /// What the congestion control is told about an ACK (no rate sample: the general path
    /// adds one for controls that own cwnd).
    fn ack_sample(&self, now: SimTime, acked: u32, rtt: Option<SimDuration>, ce: u32) -> AckSample {
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

    /// Processes the acknowledgement fields of an arriving segment.
    pub fn on_ack(&mut self, now: SimTime, h: &TcpHeader, carries_data: bool) -> AckOutcome {
        if self.established && h.flags & tcp_flags::ACK != 0 && self.is_idle_ack(h, carries_data) {
            self.on_idle_ack(now, h);
            return AckOutcome::default();
        }
        self.on_ack_general(now, h, carries_data)
    }

    /// [`Sender::on_ack`] without the idle fast path.
    fn on_ack_general(&mut self, now: SimTime, h: &TcpHeader, carries_data: bool) -> AckOutcome {
        let mut out = AckOutcome::default();
        if !self.established
            || h.flags & tcp_flags::ACK == 0
            || h.ack > self.snd_nxt
            || h.ack < self.snd_una
        {
            // Not acceptable / old: ACKs are not reordered on FIFO paths, so an old one
            // carries nothing new.
            return out;
        }
        self.stats.acks += 1;
        if self.rack {
            self.sb.begin_ack(now, self.min_rtt);
        }
        let prior_in_flight = self.in_flight();
        let lost_before = self.sb.lost_total;
        let prior_una = self.snd_una;
        let prior_packets = self.sb.packets_out;
        let prior_sacked = self.sb.sacked_out + self.reno_sacked;
        let window_changed = h.wnd as u64 != self.rwnd;
        self.rwnd = h.wnd as u64;
        let una_advanced = h.ack > self.snd_una;

        if self.undo_marker != 0 && self.sack {
            if let Some(b) = self.dsack_of(h) {
                self.count_dsack(b, prior_una);
            }
        }
        // SACK blocks (RFC 2018), then the cumulative ACK.
        let mut d = Delivered::default();
        let mut sacked_new = false;
        if self.sack {
            for b in h.sacks() {
                if b.end > h.ack {
                    let s = self.sb.sack(b);
                    sacked_new |= s.pkts > 0;
                    d.merge(s);
                }
            }
        }
        if una_advanced {
            let c = self.sb.ack_cum(h.ack);
            if !self.sack && c.pkts > 0 {
                // One ACK fills the hole; the rest absorb counted duplicate ACKs.
                self.reno_sacked -= self.reno_sacked.min(c.pkts - 1);
            }
            d.merge(c);
            self.snd_una = h.ack;
            self.rto_retrans = 0;
            let data_end = self.write_end;
            out.newly_acked = h.ack.min(data_end).saturating_sub(prior_una.min(data_end));
            self.stats.bytes_acked += out.newly_acked;
            out.advanced = true;
        }
        let is_dupack =
            !una_advanced && !carries_data && !window_changed && self.sb.packets_out > 0;
        if is_dupack && !self.sack {
            // Linux tcp_add_reno_sack, limited so that one hole remains.
            let holes = self.sb.lost_out.max(1);
            self.reno_sacked =
                (self.reno_sacked + 1).min(self.sb.packets_out.saturating_sub(holes));
        }
        let delivered = (prior_packets - self.sb.packets_out) as i64
            + (self.sb.sacked_out + self.reno_sacked) as i64
            - prior_sacked as i64;
        let delivered = delivered.max(0) as u32;
        self.delivered += delivered as u64;
        if delivered > 0 {
            self.delivered_time = now;
        }
        if let Some(r) = d.rate {
            // Linux tcp_rate_skb_delivered: the next send phase is measured from the
            // sampled segment's transmission.
            self.first_tx = r.sent;
        }
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }

        // RTT: Karn's rule on segment send times, falling back on the timestamp echo
        // (RFC 7323 RTTM) when only retransmitted data was acknowledged (Linux order).
        let rtt = if self.rtt.is_ns2() {
            self.ns2_rtt(now, h.ack, una_advanced)
        } else {
            let r = d.first_sent.map(|t| now.saturating_since(t)).or_else(|| {
                (una_advanced && h.ts_ecr > SimTime::ZERO).then(|| now.saturating_since(h.ts_ecr))
            });
            if let Some(r) = r {
                self.rtt.sample(r);
            }
            r
        };
        if let Some(r) = rtt {
            self.stats.rtt_samples += 1;
            self.stats.srtt_sum += self.rtt.srtt().unwrap_or(r).as_secs_f64();
            out.rtt_sampled = true;
        }
        let ca_rtt = d.last_sent.map(|t| now.saturating_since(t)).or(rtt);
        if let Some(r) = ca_rtt {
            // Linux tcp_update_rtt_min is fed the congestion-control RTT.
            self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        }
        // Accurate ECN: the counter's increase is the number of CE-marked segments
        // delivered since the previous ACK. Deviation: the wire's ACE field is 3 bits
        // (the count mod 8, unwrapped by the sender); the model carries the whole
        // counter, which is what the sender recovers when no run of 8 ACKs is lost.
        let ce = if self.accecn {
            let c = h.ace.wrapping_sub(self.last_ace);
            self.last_ace = h.ace;
            c
        } else {
            0
        };
        self.delivered_ce += ce as u64;
        let sample = self.ack_sample(now, delivered, ca_rtt, ce);
        if delivered > 0 {
            self.cc.on_delivery(&mut self.w, &sample);
        }
        self.cc.on_ack_event(&mut self.w, &sample);

        // Loss detection and state transitions (Linux tcp_fastretrans_alert).
        if self.fack {
            if sacked_new && self.state == CaState::Recovery {
                // Linux tcp_sacktag_write_queue → tcp_mark_lost_retrans.
                self.stats.lost_retransmits += self.sb.mark_lost_retrans_fack() as u64;
            }
        } else if self.sack && sacked_new && !self.rack {
            self.sb.mark_lost_sack();
        }
        let pure_dup = !una_advanced && !carries_data && !window_changed && !sacked_new;
        let dsack = if self.tlp_high_seq != 0 {
            self.dsack_of(h)
        } else {
            None
        };
        if self.tlp == Tlp::Linux && self.tlp_high_seq != 0 {
            // Linux 6.1 tcp_ack: tcp_process_tlp_ack before tcp_fastretrans_alert.
            self.process_tlp_ack(now, h.ack, pure_dup, dsack);
        }
        let ece = if self.accecn {
            ce > 0
        } else {
            self.ecn_ok && h.flags & tcp_flags::ECE != 0
        };
        if ece {
            self.stats.ece_acks += 1;
        }
        // Undo of spurious reductions (Linux tcp_fastretrans_alert A, D, E).
        // (In Open without ECE the checks have work only with a retransmission clock
        // to clear or an undo that D-SACKs may have made possible.)
        let undo_work = self.undo != Undo::Off
            && (self.state != CaState::Open
                || ece
                || self.retrans_stamp.is_some()
                || (self.undo_marker != 0
                    && (self.undo_retrans == 0 || self.undo == Undo::Linux2_6)));
        let hold = undo_work && self.undo_on_ack(h, &d, una_advanced, ece, sacked_new, pure_dup);
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
            CaState::Recovery if !self.sack && una_advanced && !hold => {
                // RFC 6582 partial ACK: the next segment is lost too.
                self.sb.mark_head_lost();
            }
            _ => {}
        }
        // RACK (Linux tcp_identify_packet_loss) on "dubious" ACKs (tcp_ack_is_dubious:
        // a duplicate, SACK or ECE, or not in Open; Disorder counts as not Open).
        let mut reo_armed = false;
        if self.rack && !hold {
            let dubious = pure_dup
                || sacked_new
                || ece
                || self.state != CaState::Open
                || self.sb.sacked_out + self.sb.lost_out + self.sb.retrans_out > 0;
            if dubious {
                let (_, lost_retrans, armed) = self.rack_mark_lost(now);
                reo_armed = armed;
                if self.state == CaState::Loss && lost_retrans > 0 {
                    // A retransmission sent after the timeout was lost too: fast
                    // recovery from Loss (tcp_fastretrans_alert, FLAG_LOST_RETRANS).
                    self.enter_recovery(now, ece);
                }
            }
        }
        let mut newly_lost = self.sb.lost_total > lost_before;
        let head_timed_out = self.fack && self.sb.head_timed_out(now, self.rtt.rto());
        if matches!(self.state, CaState::Open | CaState::Cwr) {
            let time_to_recover = if self.rack {
                // tcp_time_to_recover with RACK: only a loss proven by marking.
                self.sb.lost_out > 0
            } else if self.fack {
                // tcp_time_to_recover with FACK: tcp_dupack_heuristics = fackets_out
                // above tcp_reordering, or the head timed out (Trick #3).
                self.sb.lost_out > 0 || self.sb.fackets_out() > DUP_THRESH || head_timed_out
            } else if self.sack {
                self.sb.lost_out > 0 || self.sb.sacked_out >= DUP_THRESH
            } else {
                self.reno_sacked >= DUP_THRESH && self.snd_una >= self.high_seq
            };
            let early = !time_to_recover
                && !hold
                && !self.rack
                && self.early_retransmit(now, ece) == Some(true);
            if (time_to_recover || early) && !hold {
                self.enter_recovery(now, ece);
                if early {
                    self.stats.early_retransmits += 1;
                    if !self.fack {
                        // tcp_update_scoreboard(sk, fast_rexmit = 1) without FACK: the head.
                        self.sb.mark_head_lost();
                    }
                }
            } else if ece && self.state == CaState::Open {
                self.enter_cwr(now);
            }
        }
        if self.fack && self.state == CaState::Recovery && !hold {
            // tcp_fastretrans_alert's do_lost → tcp_update_scoreboard: on a duplicate
            // ACK, or when the highest SACK lies beyond tcp_reordering (new SACK or a
            // partial ACK), or with the head timed out (2.6.29's explicit case).
            let do_lost = is_dupack
                || ((sacked_new || una_advanced) && self.sb.fackets_out() > DUP_THRESH)
                || head_timed_out;
            if do_lost {
                newly_lost |= self.sb.mark_lost_fack(self.high_seq, now, self.rtt.rto()) > 0;
            }
        }
        if self.tlp == Tlp::Linux3_14 && self.tlp_high_seq != 0 {
            // Linux 3.14 tcp_ack: tcp_process_tlp_ack after tcp_fastretrans_alert.
            self.process_tlp_ack(now, h.ack, pure_dup, dsack);
        }

        // Window: reduce during CWR/Recovery, grow otherwise (Linux tcp_cong_control);
        // a control with its own `cong_control` does either itself.
        if self.cc.owns_cwnd() {
            let sample = AckSample {
                snd_una: self.snd_una,
                rs: self.rate_sample(now, &d, prior_in_flight, lost_before),
                ..sample
            };
            self.cc.cong_control(&mut self.w, &sample);
            if self.cc.marks_app_limited() {
                // BBR's PROBE_RTT: its low-rate samples must not lower the bandwidth.
                self.app_limited = (self.delivered + self.in_flight() as u64).max(1);
            }
        } else if self.in_reduction() {
            match self.recovery {
                Recovery::Prr => self.cwnd_reduction(delivered, newly_lost, una_advanced),
                Recovery::RateHalving if delivered > 0 => self.cwnd_down(),
                _ => {}
            }
        } else if una_advanced {
            let sample = AckSample {
                snd_una: self.snd_una,
                ..sample
            };
            self.cc.on_ack(&mut self.w, &sample);
        } else if is_dupack {
            self.cc.on_dup_ack(&mut self.w, now);
        }
        self.stats.cwnd_sum += self.w.cwnd as f64;

        // RFC 6298 5.2 / 5.3: stop the timer when all is acknowledged, else restart it
        // (Linux tcp_set_xmit_timer: a loss probe instead where TLP allows one; left
        // alone when RACK armed its reorder timeout on this ACK).
        if una_advanced && !reo_armed && !(self.tlp == Tlp::Linux && self.schedule_probe(now, true))
        {
            self.rearm_rto(now);
        }
        if self.tlp == Tlp::Linux3_14 && self.timer == XmitTimer::Rto {
            // Linux 3.14 tcp_ack ends with tcp_schedule_loss_probe when the RTO is pending.
            self.schedule_probe(now, false);
        }
        out
    }

    /// The D-SACK block of an ACK (RFC 2883 / Linux `tcp_check_dsack`): a first SACK
    /// block below the cumulative ACK, or inside the second block.
    fn dsack_of(&self, h: &TcpHeader) -> Option<crate::packet::SackBlock> {
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

    /// Linux `tcp_process_tlp_ack`: the end of a probe episode. An ACK above
    /// `tlp_high_seq` after a retransmitted probe means the probe repaired a loss: cwnd
    /// is reduced once (CWR entered and left at once). The original and the probe both
    /// arrived when a D-SACK reports the probed segment (6.1: `FLAG_DSACK_TLP`, a D-SACK
    /// of at most one segment ending at `tlp_high_seq`; 3.14: any D-SACK on the ACK
    /// above `tlp_high_seq`) or a pure duplicate ACK for `tlp_high_seq` arrives.
    #[inline(never)]
    fn process_tlp_ack(
        &mut self,
        now: SimTime,
        ack: u64,
        pure_dup: bool,
        dsack: Option<crate::packet::SackBlock>,
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

    /// Linux `tcp_current_ssthresh`: ssthresh during a reduction, else at least 3/4 of cwnd.
    fn current_ssthresh(&self) -> u32 {
        if self.in_reduction() {
            self.w.ssthresh
        } else {
            self.w.ssthresh.max((self.w.cwnd >> 1) + (self.w.cwnd >> 2))
        }
    }

    /// Linux `tcp_any_retrans_done`: a retransmission in flight or a retransmitted head.
    fn any_retrans_done(&self) -> bool {
        self.sb.retrans_out > 0 || (!self.sb.is_empty() && self.sb.get(0).has(EVER_RETRANS))
    }

    /// The undo state restarts with a reduction (Linux `tcp_enter_recovery`, and 6.1's
    /// `tcp_init_undo` also on a timeout): `undo_marker` = snd_una, `undo_retrans` =
    /// retransmissions still in flight, which may yet be D-SACKed (6.1: a retransmitted
    /// loss probe in flight counts; none = -1, since 0 means "undo now").
    fn init_undo(&mut self) {
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
    fn packet_delayed(&self, h: &TcpHeader) -> bool {
        match self.retrans_stamp {
            Some(r) => h.ts_ecr > SimTime::ZERO && h.ts_ecr < r,
            None => self.undo != Undo::Linux || self.sack || self.snd_una < self.high_seq,
        }
    }

    /// Linux `tcp_may_undo`: the reduction can be undone while `undo_marker` is set and
    /// either every retransmission since was D-SACKed or the packet was merely delayed.
    fn may_undo(&self, h: &TcpHeader) -> bool {
        self.undo_marker != 0 && (self.undo_retrans == 0 || self.packet_delayed(h))
    }

    /// A D-SACK (RFC 2883) of a retransmission above `undo_marker`: one fewer
    /// retransmission stands between the sender and a D-SACK undo. Linux
    /// `tcp_check_dsack` for data acknowledged before this ACK ("dumb counting": 6.1 the
    /// block's segments, 2.6/3.14 one), `tcp_sacktag_one` for data still outstanding
    /// (its ever-retransmitted segments; a block starting at snd_una is invalid there).
    /// 3.14 and 6.1 stop at 0; 2.6 counts on below it.
    #[inline(never)]
    fn count_dsack(&mut self, b: crate::packet::SackBlock, prior_una: u64) {
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
    fn undo_reduction(&mut self, unmark: bool, ssthresh_too: bool) {
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
    fn reopen(&mut self) {
        if self.state != CaState::Open {
            self.reno_sacked = 0;
            self.state = CaState::Open;
            self.cc.on_open();
        }
    }

    /// Linux `tcp_try_undo_loss` (and 2.6's / 3.14's `tcp_try_undo_recovery` in Loss):
    /// the timeout was spurious. `unmark`: nothing is lost any more. Without SACK only
    /// an F-RTO undo leaves Loss (`frto_undo || tcp_is_sack`).
    fn undo_loss(&mut self, unmark: bool, frto: bool) {
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
    fn undo_on_ack(
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
    fn undo_in_loss(
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
    fn undo_on_rto(&mut self, now: SimTime, reduce: bool) {
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

    /// The window in the peer's SYN or SYN-ACK (not scaled, RFC 7323 §2.2).
    pub fn set_peer_window(&mut self, wnd: u32) {
        self.rwnd = wnd as u64;
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
        self.rtt_timed = None;
        self.rtt.on_timeout();
        self.arm(XmitTimer::Rto, now + self.rtt.rto());
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
        self.pace_blocked = false;
        if self.pacing && now < self.wstamp {
            self.pace_blocked = true;
            self.after_send(now);
            return None;
        }
        let in_flight = self.in_flight();
        let cwnd_ok = in_flight < self.w.cwnd || self.force_rtx;
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
                return Some(self.resent(now, i));
            }
        }
        if in_flight < self.w.cwnd {
            if let Some(t) = self.send_new(now, max_payload, in_flight, false) {
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
    fn after_send(&mut self, now: SimTime) {
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
    /// caller checked cwnd; a loss probe ignores it).
    #[inline]
    fn send_new(
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
        self.sb.push(seq, end, now, fin);
        self.sb.set_tx(self.sb.len() - 1, tx);
        self.snd_nxt = end;
        if self.rtt_timed.is_none() && self.rtt.is_ns2() {
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
    fn send_probe(&mut self, now: SimTime, p: Probe, max_payload: u32) -> Option<TxSeg> {
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
    fn resent(&mut self, now: SimTime, i: usize) -> TxSeg {
        let s = *self.sb.get(i);
        self.stats.retransmits += 1;
        self.stats.segs_sent += 1;
        self.sent_one(now);
        self.paced(now, s.payload() + self.hdr);
        TxSeg {
            seq: s.start,
            end: s.end,
            payload: s.payload(),
            fin: s.has(super::scoreboard::FIN),
            cwr: false,
            ect: false,
            retrans: true,
        }
    }

    fn sent_one(&mut self, now: SimTime) {
        self.burst_sent += 1;
        self.lsndtime = now;
        if self.in_reduction() {
            self.prr_out += 1;
        }
    }

    /// Linux `tcp_rate_skb_sent`: the rate-estimation state a (re)transmission carries.
    /// `in_flight` is the flight including this segment.
    fn tx_stamp(&mut self, now: SimTime, in_flight: u32) -> TxStamp {
        if self.sb.packets_out == 0 {
            // A new send phase starts with nothing in flight.
            self.first_tx = now;
            self.delivered_time = now;
        }
        TxStamp {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_tx: self.first_tx,
            app_limited: self.app_limited != 0,
            lost: self.sb.lost_total,
            in_flight,
        }
    }

    /// Linux `tcp_rate_gen`: the rate sample of an ACK that delivered `d`, after loss
    /// detection (`lost_before`: `tp->lost` when the ACK arrived).
    fn rate_sample(
        &mut self,
        now: SimTime,
        d: &Delivered,
        prior_in_flight: u32,
        lost_before: u64,
    ) -> RateSample {
        let mut rs = RateSample {
            losses: (self.sb.lost_total - lost_before) as u32,
            prior_in_flight,
            in_flight: self.in_flight(),
            delivered_total: self.delivered,
            delivered_time: self.delivered_time,
            lost_total: self.sb.lost_total,
            delivered_ce_total: self.delivered_ce,
            ca_state: self.state,
            app_limited_now: self.unsent() == 0 && !self.fin_requested,
            next_departure: if self.pacing {
                self.wstamp
            } else {
                SimTime::ZERO
            },
            ..RateSample::default()
        };
        let Some(r) = d.rate else {
            return rs;
        };
        rs.prior_delivered = r.tx.delivered;
        rs.is_app_limited = r.tx.app_limited;
        rs.delivered = self.delivered - r.tx.delivered;
        rs.lost = self.sb.lost_total - r.tx.lost;
        rs.tx_in_flight = r.tx.in_flight;
        // The longer of the send and the ACK phase: the rate cannot exceed either.
        let snd = r.sent.saturating_since(r.tx.first_tx);
        let ack = now.saturating_since(r.tx.delivered_time);
        rs.interval = snd.max(ack);
        rs.valid = !rs.interval.is_zero() && self.min_rtt.is_none_or(|m| rs.interval >= m);
        rs
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
mod tests {
    //! Hand-driven sender traces: the test plays the network and the receiver.
    use super::*;
    use crate::packet::SackBlock;
    use crate::tcp::config::{CcKind, TcpOptions};

    const MSS: u64 = 1000;

    /// NewReno with RFC 6675 DupThresh loss detection and no loss probes (the hand
    /// traces below follow RFC 6675); RACK-TLP tests turn those on.
    fn cfg(f: impl FnOnce(&mut TcpOptions)) -> TcpConfig {
        let mut o = TcpOptions {
            mss: Some(MSS as u32),
            cc: Some(CcKind::NewReno),
            loss_detection: Some(LossDetection::Dupthresh),
            tlp: Some(Tlp::Off),
            ..Default::default()
        };
        f(&mut o);
        o.resolve("tcp").unwrap()
    }
    /// RACK loss detection with the given loss-probe flavour, on a 1000 Hz kernel (one
    /// jiffy = 1 ms, so `TCP_TIMEOUT_MIN` = 2 ms in the hand traces; the 250 Hz default
    /// has its own test).
    fn rack_cfg(tlp: Tlp) -> TcpConfig {
        cfg(|o| {
            o.loss_detection = Some(LossDetection::Rack);
            o.tlp = Some(tlp);
            o.hz = Some(1000);
        })
    }
    fn kinds(out: &[TxSeg]) -> Vec<(u64, bool)> {
        out.iter().map(|t| ((t.seq - 1) / MSS, t.retrans)).collect()
    }
    fn ms(x: u64) -> SimTime {
        SimTime::from_nanos(x * 1_000_000)
    }
    /// An established sender with an RTT sample of 100 ms and unlimited data.
    fn sender(c: TcpConfig, ecn: bool) -> Sender {
        let mut s = Sender::new(&c);
        s.establish(ms(100), Some(SimDuration::from_millis(100)), 0, ecn);
        s.write(ms(100), UNLIMITED);
        s
    }
    fn drain(s: &mut Sender, now: SimTime) -> Vec<TxSeg> {
        std::iter::from_fn(|| s.next_segment(now, MSS as u32)).collect()
    }
    fn seq(i: u64) -> u64 {
        1 + i * MSS
    }
    fn ack(a: u64, sacks: &[(u64, u64)]) -> TcpHeader {
        let mut h = TcpHeader {
            ack: seq(a),
            flags: tcp_flags::ACK,
            wnd: 3 << 20,
            ..Default::default()
        };
        let blocks: Vec<SackBlock> = sacks
            .iter()
            .map(|&(f, t)| SackBlock {
                start: seq(f),
                end: seq(t),
            })
            .collect();
        h.set_sacks(&blocks);
        h
    }

    #[test]
    fn initial_window_and_slow_start() {
        let mut s = sender(cfg(|_| {}), false);
        let out = drain(&mut s, ms(100));
        assert_eq!(out.len(), 10, "initial window of 10 segments");
        assert!(out
            .iter()
            .all(|t| t.payload == MSS as u32 && !t.retrans && !t.ect));
        // Each ACK of 2 segments opens 2 + 2 new slots: 4 segments per ACK.
        s.on_ack(ms(200), &ack(2, &[]), false);
        assert_eq!(s.w.cwnd, 12);
        assert_eq!(drain(&mut s, ms(200)).len(), 4);
        assert_eq!(s.rto_deadline(), ms(200) + s.rtt.rto());
    }

    #[test]
    fn sack_fast_recovery_with_prr_hand_trace() {
        // cwnd 10, segment 0 lost; SACKs for 1, 2, 3 arrive.
        let mut s = sender(cfg(|_| {}), false);
        drain(&mut s, ms(100));
        // First dup ACK (SACK 1): limited transmit sends one new segment (10).
        s.on_ack(ms(200), &ack(0, &[(1, 2)]), false);
        assert_eq!(s.state, CaState::Open);
        assert_eq!(
            drain(&mut s, ms(200))
                .iter()
                .map(|t| t.seq)
                .collect::<Vec<_>>(),
            vec![seq(10)]
        );
        s.on_ack(ms(201), &ack(0, &[(1, 3)]), false);
        assert_eq!(drain(&mut s, ms(201)).len(), 1);
        // Third SACKed segment: segment 0 is lost → recovery, ssthresh = 10/2 = 5.
        s.on_ack(ms(202), &ack(0, &[(1, 4)]), false);
        assert_eq!(s.state, CaState::Recovery);
        assert_eq!(s.w.ssthresh, 5);
        assert_eq!(s.stats.fast_recoveries, 1);
        // PRR: pipe = 12 out − 3 SACKed − 1 lost = 8 > ssthresh; prr_delivered = 1:
        // sndcnt = ⌈5·1/10⌉ − 0 = 1 → cwnd = 9; the one segment is the retransmission.
        assert_eq!(s.w.cwnd, 9);
        let out = drain(&mut s, ms(202));
        assert_eq!(out.len(), 1);
        assert!(out[0].retrans && out[0].seq == seq(0));
        // Next SACK (segment 4): prr_delivered = 2 → ⌈10/10⌉ − 1 = 0: nothing sent.
        s.on_ack(ms(203), &ack(0, &[(1, 5)]), false);
        assert!(drain(&mut s, ms(203)).is_empty());
        // Segment 5: prr_delivered = 3 → ⌈15/10⌉ − 1 = 1: one new segment (12).
        s.on_ack(ms(204), &ack(0, &[(1, 6)]), false);
        let out = drain(&mut s, ms(204));
        assert_eq!(
            out.iter().map(|t| (t.seq, t.retrans)).collect::<Vec<_>>(),
            vec![(seq(12), false)]
        );
        // The retransmission arrives: cumulative ACK to 6, recovery point (12) not reached.
        s.on_ack(ms(300), &ack(6, &[]), false);
        assert_eq!(s.state, CaState::Recovery);
        // ACK of everything up to the recovery point ends recovery with cwnd = ssthresh
        // = 5; as in Linux the same ACK then counts for congestion avoidance: its 6
        // delivered segments (6..=11) exceed one window of 5, so cwnd = 6.
        s.on_ack(ms(310), &ack(12, &[]), false);
        assert_eq!(s.state, CaState::Open);
        assert_eq!(s.w.cwnd, 6);
        assert_eq!(s.stats.retransmits, 1);
        assert_eq!(s.stats.rtos, 0);
        s.sb.check().unwrap();
    }

    #[test]
    fn rfc6675_without_prr_sets_cwnd_to_ssthresh() {
        let mut s = sender(cfg(|o| o.prr = Some(false)), false);
        drain(&mut s, ms(100));
        for k in 2..=4 {
            s.on_ack(ms(200 + k), &ack(0, &[(1, k)]), false);
            drain(&mut s, ms(200 + k));
        }
        assert_eq!(s.state, CaState::Recovery);
        assert_eq!(s.w.cwnd, 5);
        // The forced retransmission went out although pipe (12 − 3 − 1 + 1 = 9) > cwnd.
        assert_eq!(s.stats.retransmits, 1);
        assert_eq!(s.in_flight(), 9);
    }

    #[test]
    fn linux_2_6_29_rate_halving_hand_trace() {
        // Linux 2.6.29 profile (Reno, IW overridden to 10), segment 0 lost, SACKs arrive.
        let mut s = sender(
            cfg(|o| {
                o.stack = Some(crate::tcp::Stack::Linux2_6_29);
                o.init_cwnd = Some(10);
            }),
            false,
        );
        drain(&mut s, ms(100));
        for k in 2..=3 {
            s.on_ack(ms(200 + k), &ack(0, &[(1, k)]), false);
            assert_eq!(drain(&mut s, ms(200 + k)).len(), 1, "limited transmit");
        }
        // Third SACKed segment: recovery, ssthresh 5, floor ssthresh/2 = 2. tcp_cwnd_down
        // on this ACK: counter 0 -> 1, no decrement; cwnd = min(10, in_flight + 1) with
        // in_flight = 12 − 3 SACKed − 1 lost = 8 -> 9: room for the retransmission only.
        s.on_ack(ms(204), &ack(0, &[(1, 4)]), false);
        assert_eq!((s.state, s.w.ssthresh, s.w.cwnd), (CaState::Recovery, 5, 9));
        let out = drain(&mut s, ms(204));
        assert_eq!(out.len(), 1);
        assert!(out[0].retrans && out[0].seq == seq(0));
        // Second ACK: decrement 9 -> 8; in_flight 8 + 1 = 9 does not bind: nothing sent.
        s.on_ack(ms(205), &ack(0, &[(1, 5)]), false);
        assert_eq!(s.w.cwnd, 8);
        assert!(drain(&mut s, ms(205)).is_empty());
        // Third: no decrement, in_flight 7: one new segment. Fourth: 8 -> 7, nothing.
        s.on_ack(ms(206), &ack(0, &[(1, 6)]), false);
        assert_eq!(s.w.cwnd, 8);
        assert_eq!(
            drain(&mut s, ms(206))
                .iter()
                .map(|t| t.seq)
                .collect::<Vec<_>>(),
            vec![seq(12)]
        );
        s.on_ack(ms(207), &ack(0, &[(1, 7)]), false);
        assert_eq!(s.w.cwnd, 7);
        assert!(drain(&mut s, ms(207)).is_empty());
        // Everything up to the recovery point: cwnd = min(cwnd, ssthresh) = 5
        // (tcp_complete_cwr); the same ACK then counts as slow start, since 2.6.29 tests
        // cwnd <= ssthresh and grows +1 per ACK: 6.
        s.on_ack(ms(300), &ack(12, &[]), false);
        assert_eq!((s.state, s.w.cwnd), (CaState::Open, 6));
        assert_eq!(s.stats.retransmits, 1);
        s.sb.check().unwrap();
    }

    #[test]
    fn ns3_profile_halves_flight_size() {
        // Same loss as the PRR trace: cwnd 10, segment 0 lost, SACKs for 1, 2, 3, limited
        // transmit sent 10 and 11. Entering recovery the pipe is 12 − 3 SACKed − 1 lost = 8:
        // ns-3 TcpNewReno sets ssthresh = 8/2 = 4 (RFC 5681 eq. 4) where Linux halves cwnd
        // (5); cwnd = ssthresh at once in both (classic recovery / prr = false).
        let run = |f: &dyn Fn(&mut TcpOptions)| {
            let mut s = sender(cfg(|o| f(o)), false);
            drain(&mut s, ms(100));
            for k in 2..=4 {
                s.on_ack(ms(200 + k), &ack(0, &[(1, k)]), false);
                drain(&mut s, ms(200 + k));
            }
            assert_eq!(s.state, CaState::Recovery);
            (s.w.ssthresh, s.w.cwnd)
        };
        assert_eq!(run(&|o| o.stack = Some(crate::tcp::Stack::Ns3)), (4, 4));
        assert_eq!(run(&|o| o.prr = Some(false)), (5, 5));
        // A single key switches it back: ns3 with reno_halves = "cwnd".
        assert_eq!(
            run(&|o| {
                o.stack = Some(crate::tcp::Stack::Ns3);
                o.reno_halves = Some(crate::tcp::RenoHalves::Cwnd);
            }),
            (5, 5)
        );
    }

    #[test]
    fn newreno_without_sack_partial_acks() {
        let mut s = sender(cfg(|o| o.sack = Some(false)), false);
        drain(&mut s, ms(100));
        // Segments 0 and 3 lost. Dup ACKs for 1 and 2 (limited transmit sends 10, 11).
        for k in 0..2 {
            s.on_ack(ms(200 + k), &ack(0, &[]), false);
            assert_eq!(drain(&mut s, ms(200 + k)).len(), 1);
        }
        // Third dup ACK (segment 4 arrived): fast retransmit of 0.
        s.on_ack(ms(202), &ack(0, &[]), false);
        assert_eq!(s.state, CaState::Recovery);
        let out = drain(&mut s, ms(202));
        assert!(out[0].retrans && out[0].seq == seq(0), "{out:?}");
        // More dup ACKs (5..=11 arrived): pipe shrinks, PRR lets new data out.
        for k in 0..7 {
            s.on_ack(ms(203 + k), &ack(0, &[]), false);
            drain(&mut s, ms(203 + k));
        }
        // Partial ACK up to 3 (the retransmitted 0 filled the first hole): retransmit 3.
        s.on_ack(ms(300), &ack(3, &[]), false);
        let out = drain(&mut s, ms(300));
        assert!(out.iter().any(|t| t.retrans && t.seq == seq(3)), "{out:?}");
        assert_eq!(s.state, CaState::Recovery);
        assert_eq!(
            s.stats.fast_recoveries, 1,
            "one recovery for two losses in a window"
        );
        // Full ACK up to the recovery point.
        let hs = (s.high_seq - 1) / MSS;
        s.on_ack(ms(400), &ack(hs, &[]), false);
        assert_eq!(s.state, CaState::Open);
        assert_eq!(s.w.cwnd, 5);
    }

    #[test]
    fn ecn_echo_reduces_once_per_window_without_retransmission() {
        let mut s = sender(cfg(|o| o.ecn = Some(true)), true);
        let first = drain(&mut s, ms(100));
        assert!(first.iter().all(|t| t.ect), "data is ECT(0)");
        let mut e = ack(2, &[]);
        e.flags |= tcp_flags::ECE;
        s.on_ack(ms(200), &e, false);
        assert_eq!(s.state, CaState::Cwr);
        assert_eq!(s.stats.ecn_reductions, 1);
        assert_eq!(s.w.ssthresh, 5);
        let out = drain(&mut s, ms(200));
        assert!(out.iter().all(|t| !t.retrans));
        assert_eq!(
            out.iter().filter(|t| t.cwr).count(),
            1,
            "exactly the first new segment carries CWR"
        );
        assert!(out[0].cwr);
        // More ECE ACKs within the same window: no further reduction.
        for k in 3..=10 {
            let mut e = ack(k, &[]);
            e.flags |= tcp_flags::ECE;
            s.on_ack(ms(200 + k), &e, false);
            drain(&mut s, ms(200 + k));
        }
        assert_eq!(s.stats.ecn_reductions, 1);
        assert!(s.w.cwnd <= 6, "cwnd {} reduced towards ssthresh", s.w.cwnd);
        // Past the reduction point the window is Open again; a new ECE reduces again.
        let hi = (s.snd_nxt - 1) / MSS;
        s.on_ack(ms(300), &ack(hi, &[]), false);
        assert_eq!(s.state, CaState::Open);
        assert_eq!(
            s.w.cwnd, 6,
            "cwnd = ssthresh = 5, plus one for the window acknowledged by this ACK"
        );
        drain(&mut s, ms(300));
        let mut e = ack(hi + 1, &[]);
        e.flags |= tcp_flags::ECE;
        s.on_ack(ms(310), &e, false);
        assert_eq!(s.stats.ecn_reductions, 2);
        assert_eq!(s.w.ssthresh, 3, "6 / 2");
        assert_eq!(s.stats.retransmits, 0);
    }

    #[test]
    fn rack_reordering_within_reo_wnd_is_not_loss() {
        // RFC 8985 6.2: while fewer than DupThresh segments are SACKed and no reordering
        // was seen, reo_wnd = min_rtt / 4 = 25 ms.
        let mut s = sender(rack_cfg(Tlp::Off), false);
        drain(&mut s, ms(100));
        // Segment 1 is SACKed at 200 ms: RACK.xmit_ts = 100 ms, RACK.rtt = 100 ms.
        // Segment 0 (sent at the same time, lower sequence: before RACK) is due at
        // 100 + 100 + 25 = 225 ms: not lost yet; reorder timer at 225 + 2 ms (2 jiffies).
        s.on_ack(ms(200), &ack(0, &[(1, 2)]), false);
        assert_eq!((s.state, s.sb.lost_out), (CaState::Open, 0));
        assert_eq!(s.rack_reo_wnd(), SimDuration::from_millis(25));
        assert_eq!(
            (s.timer_kind(), s.rto_deadline()),
            (XmitTimer::Reo, ms(227))
        );
        assert_eq!(kinds(&drain(&mut s, ms(200))), vec![(10, false)]);
        // Segment 0 was only reordered: it arrives at 210 ms. Nothing was marked lost;
        // the reordering is remembered and the RTO replaces the reorder timer.
        s.on_ack(ms(210), &ack(2, &[]), false);
        assert_eq!(
            (s.state, s.sb.lost_out, s.stats.retransmits),
            (CaState::Open, 0, 0)
        );
        assert_eq!(s.sb.rack.reord_seen, 1);
        assert_eq!(s.timer_kind(), XmitTimer::Rto);
        // With reordering seen, reo_wnd stays min_rtt / 4 even in recovery.
        s.state = CaState::Recovery;
        assert_eq!(s.rack_reo_wnd(), SimDuration::from_millis(25));
        s.sb.check().unwrap();
    }

    #[test]
    fn timers_count_whole_jiffies_at_250_hz() {
        // The reordering trace above on Debian's 250 Hz kernel: the remaining 25 ms wait
        // is 7 jiffies (28 ms) + TCP_TIMEOUT_MIN (2 jiffies, 8 ms) = 236 ms.
        let c = |hz| {
            cfg(|o| {
                o.loss_detection = Some(LossDetection::Rack);
                o.tlp = Some(Tlp::Linux);
                o.hz = hz;
            })
        };
        let mut s = sender(c(None), false);
        drain(&mut s, ms(100));
        // 6.1 probe timeout with 10 segments out: usecs_to_jiffies(2 SRTT = 200 ms) = 50
        // jiffies + 2 jiffies = 208 ms, after the send at 100 ms.
        assert_eq!(
            (s.timer_kind(), s.rto_deadline()),
            (XmitTimer::Probe, ms(308))
        );
        s.on_ack(ms(200), &ack(0, &[(1, 2)]), false);
        assert_eq!(
            (s.timer_kind(), s.rto_deadline()),
            (XmitTimer::Reo, ms(236))
        );
        // 100 Hz: 3 jiffies (30 ms) + 2 jiffies (20 ms).
        let mut s = sender(c(Some(100)), false);
        drain(&mut s, ms(100));
        s.on_ack(ms(200), &ack(0, &[(1, 2)]), false);
        assert_eq!(s.rto_deadline(), ms(250));
        // 3.14's probe floor msecs_to_jiffies(10) is 3 jiffies = 12 ms at 250 Hz: with a
        // 4 ms SRTT the probe waits 12 ms, not 10.
        let c314 = cfg(|o| {
            o.tlp = Some(Tlp::Linux3_14);
        });
        let mut s = Sender::new(&c314);
        s.establish(ms(100), Some(SimDuration::from_millis(4)), 0, false);
        s.write(ms(100), 4 * MSS);
        drain(&mut s, ms(100));
        assert_eq!(
            (s.timer_kind(), s.rto_deadline()),
            (XmitTimer::Probe, ms(112))
        );
        // Not a kernel's HZ: an error naming the key and the allowed values.
        let e = TcpOptions {
            hz: Some(200),
            ..Default::default()
        }
        .resolve("tcp")
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("tcp.hz") && e.contains("250") && e.contains("1000"),
            "{e}"
        );
    }

    #[test]
    fn rack_reorder_timeout_marks_the_hole_and_starts_recovery() {
        let mut s = sender(rack_cfg(Tlp::Off), false);
        drain(&mut s, ms(100));
        s.on_ack(ms(200), &ack(0, &[(1, 2)]), false);
        drain(&mut s, ms(200));
        assert_eq!(s.rto_deadline(), ms(227));
        // No further ACK: the reorder timeout fires, segment 0 is lost (it is 127 ms
        // old > RACK.rtt + reo_wnd = 125 ms), recovery starts with ssthresh 10 / 2.
        assert_eq!(s.on_xmit_timer(ms(227)), XmitTimer::Reo);
        assert_eq!(
            (s.state, s.sb.lost_out, s.w.ssthresh),
            (CaState::Recovery, 1, 5)
        );
        // PRR for one delivered segment: in flight 11 - 1 SACKed - 1 lost = 9,
        // sndcnt = ceil(5 * 1 / 10) = 1, cwnd 10: the retransmission goes out alone.
        assert_eq!(kinds(&drain(&mut s, ms(227))), vec![(0, true)]);
        // The RTO is re-armed after the retransmission, from the oldest transmission
        // (segment 0, just resent).
        assert_eq!(
            (s.timer_kind(), s.rto_deadline()),
            (XmitTimer::Rto, ms(227) + s.rtt.rto())
        );
        assert_eq!((s.stats.rtos, s.stats.reo_timeouts), (0, 1));
        s.sb.check().unwrap();
    }

    #[test]
    fn a_timeout_counts_the_lost_retransmissions_it_marks() {
        // Linux tcp_timeout_mark_lost marks through tcp_mark_skb_lost, which counts a
        // segment already lost and retransmitted as TCPLostRetransmit; first losses are not.
        let mut s = sender(rack_cfg(Tlp::Off), false);
        drain(&mut s, ms(100));
        s.on_ack(ms(200), &ack(0, &[(1, 4)]), false);
        assert_eq!((s.state, s.sb.lost_out), (CaState::Recovery, 1));
        assert_eq!(kinds(&drain(&mut s, ms(200)))[0], (0, true));
        assert_eq!((s.sb.retrans_out, s.stats.lost_retransmits), (1, 0));
        // Nothing more arrives: the timeout marks segment 0 (lost again) and the other
        // unSACKed segments (first losses).
        let deadline = s.rto_deadline();
        s.on_rto(deadline);
        assert_eq!((s.stats.rtos, s.stats.lost_retransmits), (1, 1));
        assert_eq!((s.sb.retrans_out, s.state), (0, CaState::Loss));
        s.sb.check().unwrap();
    }

    #[test]
    fn rack_detects_a_lost_retransmission_without_rto() {
        // RFC 8985 (section 3.4 example): segment 0 and then its retransmission are lost.
        let mut s = sender(rack_cfg(Tlp::Off), false);
        drain(&mut s, ms(100));
        s.on_ack(ms(200), &ack(0, &[(1, 2)]), false);
        drain(&mut s, ms(200));
        s.on_ack(ms(201), &ack(0, &[(1, 3)]), false);
        drain(&mut s, ms(201));
        // Third SACKed segment: reo_wnd = 0 and segment 0 (sent with segment 3) is lost.
        s.on_ack(ms(202), &ack(0, &[(1, 4)]), false);
        assert_eq!((s.state, s.sb.lost_out), (CaState::Recovery, 1));
        assert_eq!(kinds(&drain(&mut s, ms(202))), vec![(0, true)]);
        // The retransmission is lost. SACKs for 4..=9 (sent at 100 ms, before it)
        // cannot show that; PRR sends new data at 210 ms.
        s.on_ack(ms(210), &ack(0, &[(1, 10)]), false);
        assert_eq!(s.stats.lost_retransmits, 0);
        let sent = drain(&mut s, ms(210));
        assert!(!sent.is_empty() && sent.iter().all(|t| !t.retrans));
        let hi = (sent.last().unwrap().end - 1) / MSS;
        // Segments 10 and 11 (sent at 200/201 ms) are SACKed: still before the
        // retransmission (202 ms), nothing is marked.
        s.on_ack(ms(301), &ack(0, &[(1, 12)]), false);
        assert_eq!((s.sb.retrans_out, s.stats.lost_retransmits), (1, 0));
        drain(&mut s, ms(301));
        // A segment sent at 210 ms is SACKed at 310 ms: RACK.xmit_ts = 210 ms,
        // RACK.rtt = 100 ms; the retransmission sent at 202 ms is 108 ms old >
        // RACK.rtt + reo_wnd (0 in recovery): lost again, resent at once, no RTO.
        s.on_ack(ms(310), &ack(0, &[(1, hi)]), false);
        assert_eq!((s.stats.lost_retransmits, s.sb.retrans_out), (1, 0));
        assert_eq!(s.state, CaState::Recovery);
        let out = drain(&mut s, ms(310));
        assert_eq!(
            out.first().map(|t| (t.seq, t.retrans)),
            Some((seq(0), true))
        );
        assert_eq!((s.stats.rtos, s.stats.fast_recoveries), (0, 1));
        s.sb.check().unwrap();
    }

    /// FACK loss detection (Linux 2.6.29 / 3.14 with `tcp_fack = 1`).
    fn fack_cfg() -> TcpConfig {
        cfg(|o| o.loss_detection = Some(LossDetection::Fack))
    }

    #[test]
    fn fack_starts_recovery_from_the_highest_sack_and_marks_below_it() {
        // cwnd 10, segments 0..=3 lost, the first ACK SACKs segment 4 alone.
        let mut s = sender(fack_cfg(), false);
        drain(&mut s, ms(100));
        s.on_ack(ms(200), &ack(0, &[(4, 5)]), false);
        // fackets_out = 5 > tcp_reordering 3: recovery at once, although only one
        // segment is SACKed (DupThresh waits for three); tcp_mark_head_lost(5 − 3)
        // marks segments 0 and 1, not 2 and 3 (fewer than 3 segments below the SACK).
        assert_eq!(
            (s.state, s.sb.fackets_out(), s.sb.lost_out),
            (CaState::Recovery, 5, 2)
        );
        assert_eq!(s.w.ssthresh, 5);
        assert_eq!(
            (0..4)
                .map(|i| s.sb.get(i).has(super::super::scoreboard::LOST))
                .collect::<Vec<_>>(),
            vec![true, true, false, false]
        );
        // PRR: pipe = 10 − 1 SACKed − 2 lost = 7 > ssthresh; ⌈5·1/10⌉ = 1 segment: the
        // lowest lost one.
        assert_eq!(kinds(&drain(&mut s, ms(200))), vec![(0, true)]);
        // SACK of 5 as well: fackets_out 6 → segment 2 is lost now, 3 is not.
        s.on_ack(ms(201), &ack(0, &[(4, 6)]), false);
        assert_eq!(
            (0..4)
                .map(|i| s.sb.get(i).has(super::super::scoreboard::LOST))
                .collect::<Vec<_>>(),
            vec![true, true, true, false]
        );
        // The same first ACK under RFC 6675 DupThresh: one SACKed segment, no loss.
        let mut d = sender(cfg(|_| {}), false);
        drain(&mut d, ms(100));
        d.on_ack(ms(200), &ack(0, &[(4, 5)]), false);
        assert_eq!((d.state, d.sb.lost_out), (CaState::Open, 0));
        s.sb.check().unwrap();
        d.sb.check().unwrap();
    }

    #[test]
    fn fack_finds_a_lost_retransmission_when_later_data_is_sacked() {
        // Segment 0 is lost, then its retransmission too (Linux tcp_mark_lost_retrans).
        let mut s = sender(fack_cfg(), false);
        drain(&mut s, ms(100));
        // Two SACKs: limited transmit sends 10 and 11; the third (fackets_out 4)
        // starts recovery and marks segment 0.
        s.on_ack(ms(200), &ack(0, &[(1, 2)]), false);
        drain(&mut s, ms(200));
        s.on_ack(ms(201), &ack(0, &[(1, 3)]), false);
        drain(&mut s, ms(201));
        assert_eq!(s.state, CaState::Open);
        s.on_ack(ms(202), &ack(0, &[(1, 4)]), false);
        assert_eq!((s.state, s.sb.lost_out), (CaState::Recovery, 1));
        // Resent while snd_nxt = segment 12.
        assert_eq!(kinds(&drain(&mut s, ms(202))), vec![(0, true)]);
        // SACKs up to segment 11 were all sent before the retransmission: nothing.
        s.on_ack(ms(210), &ack(0, &[(1, 10)]), false);
        let sent = drain(&mut s, ms(210));
        assert!(!sent.is_empty() && sent.iter().all(|t| !t.retrans && t.seq >= seq(12)));
        s.on_ack(ms(301), &ack(0, &[(1, 12)]), false);
        assert_eq!((s.sb.retrans_out, s.stats.lost_retransmits), (1, 0));
        drain(&mut s, ms(301));
        // Segment 12, first sent after the retransmission, is SACKed: the retransmission
        // is lost; it is resent at once, without an RTO.
        s.on_ack(ms(310), &ack(0, &[(1, 13)]), false);
        assert_eq!((s.stats.lost_retransmits, s.sb.retrans_out), (1, 0));
        let out = drain(&mut s, ms(310));
        assert_eq!(
            out.first().map(|t| (t.seq, t.retrans)),
            Some((seq(0), true))
        );
        assert_eq!((s.state, s.stats.rtos), (CaState::Recovery, 0));
        // RFC 6675 DupThresh, same trace: the lost retransmission stays in flight.
        let mut d = sender(cfg(|_| {}), false);
        drain(&mut d, ms(100));
        for (t, hi) in [
            (200, 2),
            (201, 3),
            (202, 4),
            (210, 10),
            (301, 12),
            (310, 13),
        ] {
            d.on_ack(ms(t), &ack(0, &[(1, hi)]), false);
            drain(&mut d, ms(t));
        }
        assert_eq!((d.sb.retrans_out, d.stats.lost_retransmits), (1, 0));
        s.sb.check().unwrap();
    }

    #[test]
    fn early_retransmit_after_a_quarter_rtt_for_a_short_flight() {
        // Linux 3.14 (FACK, early retransmit, 250 Hz): a 3-segment message, segment 0 lost.
        let c = cfg(|o| {
            o.loss_detection = Some(LossDetection::Fack);
            o.early_retransmit = Some(true);
        });
        let mut s = Sender::new(&c);
        s.establish(ms(100), Some(SimDuration::from_millis(100)), 0, false);
        s.write(ms(100), 3 * MSS);
        assert_eq!(drain(&mut s, ms(100)).len(), 3);
        // The SACK of segment 1: 3 out, 1 SACKed, nothing new to send → no recovery yet
        // (fackets_out 2 ≤ 3), the ER timer instead: max(srtt >> 5, 2 ms) in jiffies,
        // SRTT 100 ms = 25 jiffies, a quarter rounded down to 6 jiffies = 24 ms.
        s.on_ack(ms(200), &ack(0, &[(1, 2)]), false);
        assert_eq!(
            (s.state, s.timer_kind(), s.rto_deadline()),
            (CaState::Open, XmitTimer::EarlyRetrans, ms(224))
        );
        // It fires: fast recovery, segment 0 resent, the RTO back in the slot.
        assert_eq!(s.on_xmit_timer(ms(224)), XmitTimer::EarlyRetrans);
        assert_eq!((s.state, s.stats.early_retransmits), (CaState::Recovery, 1));
        assert_eq!(kinds(&drain(&mut s, ms(224))), vec![(0, true)]);
        assert_eq!(s.timer_kind(), XmitTimer::Rto);
        s.sb.check().unwrap();

        // A second SACK while the timer runs (its deadline is not beyond now + delay):
        // recovery at once.
        let mut s = Sender::new(&c);
        s.establish(ms(100), Some(SimDuration::from_millis(100)), 0, false);
        s.write(ms(100), 3 * MSS);
        drain(&mut s, ms(100));
        s.on_ack(ms(200), &ack(0, &[(1, 2)]), false);
        s.on_ack(ms(201), &ack(0, &[(1, 3)]), false);
        assert_eq!((s.state, s.stats.early_retransmits), (CaState::Recovery, 1));
        assert_eq!(kinds(&drain(&mut s, ms(201))), vec![(0, true)]);

        // Without early retransmit (Linux 2.6.29, or 4 segments out) the SACK leaves the
        // RTO armed and the sender in Open.
        for (er, n) in [(false, 3), (true, 4)] {
            let c = cfg(|o| {
                o.loss_detection = Some(LossDetection::Fack);
                o.early_retransmit = Some(er);
            });
            let mut s = Sender::new(&c);
            s.establish(ms(100), Some(SimDuration::from_millis(100)), 0, false);
            s.write(ms(100), n * MSS);
            drain(&mut s, ms(100));
            s.on_ack(ms(200), &ack(0, &[(1, 2)]), false);
            assert_eq!(
                (s.state, s.timer_kind()),
                (CaState::Open, XmitTimer::Rto),
                "{er} {n}"
            );
        }
    }

    #[test]
    fn tlp_repairs_a_tail_loss_and_reduces_cwnd_once() {
        // Linux 6.1: ten segments of a 10-segment message; the last one is lost.
        let mut s = Sender::new(&rack_cfg(Tlp::Linux));
        s.establish(ms(100), Some(SimDuration::from_millis(100)), 0, false);
        s.write(ms(100), 10 * MSS);
        assert_eq!(drain(&mut s, ms(100)).len(), 10);
        // PTO = 2 SRTT + 2 ms = 202 ms (below the RTO, 300 ms).
        assert_eq!(
            (s.timer_kind(), s.rto_deadline()),
            (XmitTimer::Probe, ms(302))
        );
        s.on_ack(ms(200), &ack(9, &[]), false);
        // One segment out: PTO = 2 SRTT + min_rto = 400 ms, capped by the RTO.
        let rto = s.rtt.rto();
        assert!(rto < SimDuration::from_millis(400));
        assert_eq!(
            (s.timer_kind(), s.rto_deadline()),
            (XmitTimer::Probe, ms(200) + rto)
        );
        let cwnd = s.w.cwnd;
        // The probe fires: no new data, so the last segment is sent again.
        let t = ms(200) + rto;
        assert_eq!(s.on_xmit_timer(t), XmitTimer::Probe);
        assert_eq!(kinds(&drain(&mut s, t)), vec![(9, true)]);
        assert_eq!((s.stats.loss_probes, s.stats.rtos), (1, 0));
        assert_eq!((s.tlp_high_seq, s.tlp_retrans), (seq(10), true));
        assert_eq!(
            (s.timer_kind(), s.rto_deadline()),
            (XmitTimer::Rto, t + s.rtt.rto())
        );
        assert_eq!(
            (s.state, s.w.cwnd),
            (CaState::Open, cwnd),
            "no RTO: cwnd kept"
        );
        // The probe is acknowledged: whether it repaired a loss is not known yet.
        s.on_ack(t + SimDuration::from_millis(100), &ack(10, &[]), false);
        assert_eq!(s.tlp_high_seq, seq(10));
        // New data; an ACK above tlp_high_seq proves the loss: one reduction, Open.
        let t2 = t + SimDuration::from_millis(110);
        s.write(t2, 4 * MSS);
        assert_eq!(drain(&mut s, t2).len(), 4);
        let cwnd = s.w.cwnd;
        s.on_ack(t2 + SimDuration::from_millis(100), &ack(14, &[]), false);
        assert_eq!(s.stats.loss_probe_recoveries, 1);
        assert_eq!((s.state, s.tlp_high_seq), (CaState::Open, 0));
        assert_eq!(s.w.ssthresh, cwnd / 2);
        assert!(
            (s.w.ssthresh..=s.w.ssthresh + 1).contains(&s.w.cwnd),
            "cwnd {} = ssthresh {} (+ this ACK's growth)",
            s.w.cwnd,
            s.w.ssthresh
        );
        assert_eq!((s.stats.rtos, s.stats.fast_recoveries), (0, 0));
        s.sb.check().unwrap();
    }

    #[test]
    fn tlp_of_a_delivered_segment_is_not_a_loss() {
        let mut s = Sender::new(&rack_cfg(Tlp::Linux));
        s.establish(ms(100), Some(SimDuration::from_millis(100)), 0, false);
        s.write(ms(100), 10 * MSS);
        drain(&mut s, ms(100));
        s.on_ack(ms(200), &ack(9, &[]), false);
        let t = s.rto_deadline();
        s.on_xmit_timer(t);
        assert_eq!(kinds(&drain(&mut s, t)), vec![(9, true)]);
        // The original was only late; then the probe's copy brings a duplicate ACK.
        s.on_ack(t + SimDuration::from_millis(10), &ack(10, &[]), false);
        s.on_ack(t + SimDuration::from_millis(100), &ack(10, &[]), false);
        assert_eq!(s.tlp_high_seq, 0, "the duplicate ACK ends the episode");
        s.write(t + SimDuration::from_millis(110), 4 * MSS);
        drain(&mut s, t + SimDuration::from_millis(110));
        let cwnd = s.w.cwnd;
        s.on_ack(t + SimDuration::from_millis(210), &ack(14, &[]), false);
        assert_eq!(s.stats.loss_probe_recoveries, 0);
        assert!(s.w.cwnd >= cwnd);
    }

    #[test]
    fn tlp_episode_ends_on_the_dsack_of_a_redundant_probe() {
        // As above, but the ACK for the probe's copy carries data (a request/response
        // exchange), so only its D-SACK (RFC 2883) shows that the probe was redundant.
        // 6.1 (FLAG_DSACK_TLP) ends the episode on it; 3.14 looks for a D-SACK only on
        // the ACK above tlp_high_seq.
        for (tlp, dsack_at, reductions) in [
            (Tlp::Linux, Some(10), 0),
            (Tlp::Linux, None, 1),
            (Tlp::Linux3_14, Some(10), 1),
            (Tlp::Linux3_14, Some(14), 0),
        ] {
            let mut s = Sender::new(&rack_cfg(tlp));
            s.establish(ms(100), Some(SimDuration::from_millis(100)), 0, false);
            s.write(ms(100), 10 * MSS);
            drain(&mut s, ms(100));
            s.on_ack(ms(200), &ack(9, &[]), false);
            let t = s.rto_deadline();
            s.on_xmit_timer(t);
            assert_eq!(kinds(&drain(&mut s, t)), vec![(9, true)]);
            let with = |a: u64| {
                if dsack_at == Some(a) {
                    ack(a, &[(9, 10)])
                } else {
                    ack(a, &[])
                }
            };
            s.on_ack(t + SimDuration::from_millis(10), &ack(10, &[]), false);
            s.on_ack(t + SimDuration::from_millis(100), &with(10), true);
            s.write(t + SimDuration::from_millis(110), 4 * MSS);
            drain(&mut s, t + SimDuration::from_millis(110));
            s.on_ack(t + SimDuration::from_millis(210), &with(14), false);
            assert_eq!(
                (s.stats.loss_probe_recoveries, s.tlp_high_seq),
                (reductions, 0),
                "{tlp:?}, D-SACK on the ACK of {dsack_at:?}"
            );
        }
    }

    #[test]
    fn tlp_probes_new_data_and_recovers_a_two_segment_tail_by_rack() {
        // Unlimited data, cwnd-limited: every ACK is lost. The probe sends new data
        // (segment 10) regardless of cwnd.
        let mut s = sender(rack_cfg(Tlp::Linux), false);
        drain(&mut s, ms(100));
        assert_eq!(s.rto_deadline(), ms(302));
        s.on_xmit_timer(ms(302));
        assert_eq!(kinds(&drain(&mut s, ms(302))), vec![(10, false)]);
        assert_eq!((s.tlp_high_seq, s.tlp_retrans), (seq(11), false));
        // Its ACK ends the episode without a reduction.
        s.on_ack(ms(402), &ack(11, &[]), false);
        assert_eq!((s.tlp_high_seq, s.stats.loss_probe_recoveries), (0, 0));

        // A 10-segment message whose last two segments are lost: the probe resends
        // segment 9; its SACK lets RACK mark segment 8 (fast recovery, one reduction).
        let mut s = Sender::new(&rack_cfg(Tlp::Linux));
        s.establish(ms(100), Some(SimDuration::from_millis(100)), 0, false);
        s.write(ms(100), 10 * MSS);
        drain(&mut s, ms(100));
        s.on_ack(ms(200), &ack(8, &[]), false);
        // Two segments out: PTO = 2 SRTT + 2 ms.
        let srtt = s.rtt.srtt().unwrap();
        assert_eq!(s.rto_deadline(), ms(202) + srtt * 2);
        let t = s.rto_deadline();
        s.on_xmit_timer(t);
        assert_eq!(kinds(&drain(&mut s, t)), vec![(9, true)]);
        let cwnd = s.w.cwnd;
        s.on_ack(
            t + SimDuration::from_millis(100),
            &ack(8, &[(9, 10)]),
            false,
        );
        assert_eq!((s.state, s.w.ssthresh), (CaState::Recovery, cwnd / 2));
        assert_eq!(s.tlp_high_seq, 0, "recovery ends the probe episode");
        assert_eq!(
            kinds(&drain(&mut s, t + SimDuration::from_millis(100))),
            vec![(8, true)]
        );
        s.on_ack(t + SimDuration::from_millis(200), &ack(10, &[]), false);
        assert_eq!((s.state, s.w.cwnd), (CaState::Open, cwnd / 2));
        assert_eq!(
            (
                s.stats.rtos,
                s.stats.fast_recoveries,
                s.stats.loss_probe_recoveries
            ),
            (0, 1, 0)
        );
        s.sb.check().unwrap();
    }

    #[test]
    fn tlp_linux_3_14_timeout_rules() {
        // 3.14: PTO = max(2 SRTT, 10 ms) without the 2 ms, only when cwnd-limited or
        // application-limited, and max(2 SRTT, 1.5 SRTT + 200 ms) for one segment out.
        let mut s = sender(cfg(|o| o.tlp = Some(Tlp::Linux3_14)), false);
        drain(&mut s, ms(100));
        assert_eq!(
            (s.timer_kind(), s.rto_deadline()),
            (XmitTimer::Probe, ms(300))
        );
        let mut s = Sender::new(&cfg(|o| o.tlp = Some(Tlp::Linux3_14)));
        s.establish(ms(100), Some(SimDuration::from_millis(100)), 0, false);
        s.write(ms(100), MSS);
        drain(&mut s, ms(100));
        // 1.5 * 100 + 200 = 350 ms, later than the RTO (300 ms): the RTO's time.
        assert_eq!(
            (s.timer_kind(), s.rto_deadline()),
            (XmitTimer::Probe, ms(400))
        );
        // The probe resends the only segment; an ACK above tlp_high_seq would mean a
        // repaired loss, a duplicate ACK for it ends the episode.
        s.on_xmit_timer(ms(400));
        assert_eq!(kinds(&drain(&mut s, ms(400))), vec![(0, true)]);
        assert_eq!(s.tlp_high_seq, seq(1));
        assert_eq!(s.rto_deadline(), ms(400) + s.rtt.rto());
    }

    /// ns-2's timing (`rtt_timing = "ns2"`, ns-2.35 `tcp.cc`): one timed segment per
    /// flight, samples in 10 ms ticks, and a timeout's backoff that only the timed
    /// segment's ACK clears (hand-worked from `output`, `newack`, `rtt_update`).
    #[test]
    fn ns2_timing_one_timed_segment_and_backoff_until_its_ack() {
        let c = cfg(|o| {
            o.rtt_timing = Some(RttTiming::Ns2);
            o.rto_floor = Some(RtoFloor::Sum);
        });
        let d = SimDuration::from_millis;
        let mut s = Sender::new(&c);
        s.establish(ms(100), Some(d(100)), 0, false);
        // ns-2 has no handshake: the SYN's RTT is no sample, the initial RTO stands
        assert_eq!((s.rtt.srtt(), s.rtt.rto()), (None, d(1000)));
        s.write(ms(100), 4 * MSS);
        assert_eq!(drain(&mut s, ms(100)).len(), 4);
        // Only segment 0 is timed: sent on a tick (clock phase 0), acknowledged 95 ms
        // later = 9 ticks: SRTT 9 (t_srtt_ 72), RTTVAR 4.5 (t_rttvar_ 18),
        // RTO = (18·8 + 72) >> 3 = 27 ticks.
        s.on_ack(ms(195), &ack(1, &[]), false);
        assert_eq!(s.stats.rtt_samples, 1);
        assert_eq!((s.rtt.srtt(), s.rtt.rto()), (Some(d(90)), d(270)));
        s.on_ack(ms(196), &ack(2, &[]), false);
        assert_eq!(s.stats.rtt_samples, 1, "one timed segment per flight");
        // Segments 2 and 3 are lost: the timeout backs off and resends segment 2.
        assert_eq!(s.rto_deadline(), ms(196 + 270));
        s.on_rto(ms(466));
        assert_eq!((s.rtt.backoff(), s.rto_deadline()), (1, ms(466 + 540)));
        let out = drain(&mut s, ms(466));
        assert_eq!(kinds(&out), vec![(2, true)]);
        // Its ACK, even with a timestamp echo, is no sample: the backoff stays (the
        // per-ACK estimator would clear it here, see `rto_backoff_and_go_back`).
        let mut a = ack(3, &[]);
        a.ts_ecr = ms(466);
        s.on_ack(ms(560), &a, false);
        assert_eq!((s.rtt.backoff(), s.stats.rtt_samples), (1, 1));
        assert_eq!(s.rto_deadline(), ms(560 + 540));
        // New data sent now is timed; the ACK that covers it takes a sample of 100 ms
        // = 10 ticks and clears the backoff: delta 1, t_srtt_ 73, t_rttvar_
        // 18 + (1 − 4) = 15, RTO = (15·8 + 73) >> 3 = 24 ticks.
        s.write(ms(560), MSS);
        let out = drain(&mut s, ms(560));
        assert_eq!(kinds(&out), vec![(3, true), (4, false)]);
        s.on_ack(ms(660), &ack(5, &[]), false);
        assert_eq!((s.rtt.backoff(), s.stats.rtt_samples), (0, 2));
        assert_eq!(s.rtt.rto(), d(240));
        assert_eq!(s.rtt.srtt(), Some(SimDuration::from_micros(91_250)));
    }

    #[test]
    fn rto_backoff_and_go_back() {
        let mut s = sender(cfg(|_| {}), false);
        drain(&mut s, ms(100));
        // RTO = 100 + max(4·50, 200) = 300 ms after the first transmission.
        assert_eq!(s.rto_deadline(), ms(400));
        s.on_rto(ms(400));
        assert_eq!((s.state, s.w.cwnd, s.w.ssthresh), (CaState::Loss, 1, 5));
        assert_eq!(s.rto_deadline(), ms(400 + 600), "backed off to 600 ms");
        let out = drain(&mut s, ms(400));
        assert_eq!(out.len(), 1);
        assert!(out[0].retrans && out[0].seq == seq(0));
        // Lost again: second timeout doubles again, ssthresh unchanged.
        s.on_rto(ms(1000));
        assert_eq!(s.rto_deadline(), ms(1000 + 1200));
        assert_eq!(s.w.ssthresh, 5);
        drain(&mut s, ms(1000));
        // The retransmission is acknowledged (timestamp echo gives an RTT sample):
        // backoff cleared, slow start from 1 resends the rest in order.
        let mut a = ack(1, &[]);
        a.ts_ecr = ms(1000);
        s.on_ack(ms(1100), &a, false);
        assert_eq!(s.rtt.backoff(), 0);
        assert_eq!(s.w.cwnd, 2);
        let out = drain(&mut s, ms(1100));
        assert_eq!(
            out.iter().map(|t| (t.seq, t.retrans)).collect::<Vec<_>>(),
            vec![(seq(1), true), (seq(2), true)]
        );
        assert_eq!(s.stats.rtos, 2);
        s.sb.check().unwrap();
    }

    #[test]
    fn spurious_rto_is_undone_by_frto_or_timestamps() {
        // A flight of 10 (NewReno, ssthresh unset) whose ACKs are only delayed: the RTO
        // at 400 ms fires, the head is resent, then the ACK of the original first two
        // segments arrives (timestamp echo 100 ms, before the retransmission).
        for (label, acked, ecr) in [
            // F-RTO 3b: never-retransmitted segment 1 is acknowledged.
            ("frto", 2, ms(100)),
            // Eifel: only the (retransmitted) head is acknowledged, but the echo is
            // older than the retransmission.
            ("timestamp", 1, ms(100)),
        ] {
            for undo in [Undo::Linux, Undo::Linux3_14, Undo::Linux2_6] {
                let label = format!("{label} {undo:?}");
                let mut s = sender(cfg(|o| o.undo = Some(undo)), false);
                drain(&mut s, ms(100));
                s.on_rto(ms(400));
                assert_eq!((s.state, s.w.cwnd, s.w.ssthresh), (CaState::Loss, 1, 5));
                let out = drain(&mut s, ms(400));
                assert!(out.len() == 1 && out[0].retrans, "{label}");
                let mut a = ack(acked, &[]);
                a.ts_ecr = ecr;
                s.on_ack(ms(450), &a, false);
                // tcp_undo_cwnd_reduction: cwnd back to 10 (Reno: ssthresh << 1), ssthresh
                // back to prior_ssthresh (unset), nothing lost, state Open.
                assert_eq!(s.state, CaState::Open, "{label}");
                assert!(s.w.cwnd >= 10, "{label}: cwnd {}", s.w.cwnd);
                assert_eq!(s.w.ssthresh, INFINITE_SSTHRESH, "{label}");
                assert_eq!((s.sb.lost_out, s.stats.rto_undos), (0, 1), "{label}");
                // No go-back-N: the next transmissions are new data, not the flight again.
                let out = drain(&mut s, ms(450));
                assert!(
                    !out.is_empty() && out.iter().all(|t| !t.retrans),
                    "{label}: {out:?}"
                );
                s.sb.check().unwrap();
            }
        }
    }

    #[test]
    fn real_loss_and_backed_off_timeouts_are_not_undone() {
        // The retransmission's own ACK (echo = its send time) is no evidence.
        let mut s = sender(cfg(|_| {}), false);
        drain(&mut s, ms(100));
        s.on_rto(ms(400));
        drain(&mut s, ms(400));
        let mut a = ack(1, &[]);
        a.ts_ecr = ms(400);
        s.on_ack(ms(500), &a, false);
        assert_eq!(
            (s.state, s.w.cwnd, s.stats.rto_undos),
            (CaState::Loss, 2, 0)
        );
        // A backed-off timeout on a flight whose head was already resent, then an ACK
        // of never-retransmitted data echoing the original transmissions: 2.6's
        // tcp_enter_loss clears undo_marker (TCPCB_RETRANS in the queue) and has no
        // F-RTO for it; 3.14 undoes by F-RTO (armed on a repeated timeout, RFC 5682
        // 3.2), 6.1 by timestamps (the undo state of the first timeout stands).
        for (undo, undone) in [
            (Undo::Linux2_6, false),
            (Undo::Linux3_14, true),
            (Undo::Linux, true),
        ] {
            let mut s = sender(cfg(|o| o.undo = Some(undo)), false);
            drain(&mut s, ms(100));
            s.on_rto(ms(400));
            drain(&mut s, ms(400));
            s.on_rto(ms(1000));
            drain(&mut s, ms(1000));
            let mut a = ack(4, &[]);
            a.ts_ecr = ms(100);
            s.on_ack(ms(1100), &a, false);
            assert_eq!(s.stats.rto_undos, undone as u64, "{undo:?}");
            assert_eq!(s.state == CaState::Open, undone, "{undo:?}");
        }
        // ns-2 / ns-3 profiles (and rto_undo = false) never undo.
        for c in [
            cfg(|o| o.rto_undo = Some(false)),
            cfg(|o| o.stack = Some(crate::tcp::config::Stack::Ns3)),
        ] {
            let mut s = sender(c, false);
            drain(&mut s, ms(100));
            let deadline = s.rto_deadline();
            s.on_rto(deadline);
            drain(&mut s, deadline);
            let mut a = ack(2, &[]);
            a.ts_ecr = ms(100);
            s.on_ack(deadline + SimDuration::from_millis(50), &a, false);
            assert_eq!((s.state, s.stats.rto_undos), (CaState::Loss, 0));
        }
    }

    /// Fast recovery started by reordering: segment 0 is only delayed. Segments 0-9 go
    /// out at 100 ms, SACKs of 1, 2, 3 (limited transmit sends 10, 11) start recovery
    /// at 202 ms (ssthresh 5, cwnd 9 by PRR, prior cwnd 10, ssthresh unset before) and
    /// segment 0 is retransmitted.
    fn reordered_recovery(undo: Undo) -> Sender {
        let mut s = sender(cfg(|o| o.undo = Some(undo)), false);
        drain(&mut s, ms(100));
        s.on_ack(ms(200), &ack(0, &[(1, 2)]), false);
        drain(&mut s, ms(200));
        s.on_ack(ms(201), &ack(0, &[(1, 3)]), false);
        drain(&mut s, ms(201));
        s.on_ack(ms(202), &ack(0, &[(1, 4)]), false);
        assert_eq!((s.state, s.w.ssthresh, s.w.cwnd), (CaState::Recovery, 5, 9));
        assert_eq!(kinds(&drain(&mut s, ms(202))), vec![(0, true)]);
        s
    }

    #[test]
    fn spurious_fast_recovery_is_undone_by_dsack() {
        // The delayed original 0 arrives: ACK 4 (a partial ACK, recovery point 12); no
        // timestamps, so only D-SACKs can tell. Then the retransmission arrives as a
        // duplicate: a D-SACK of [0, 1) below the cumulative ACK ("forgotten data",
        // tcp_check_dsack) takes undo_retrans from 1 to 0.
        for undo in [Undo::Linux, Undo::Linux3_14, Undo::Linux2_6] {
            let mut s = reordered_recovery(undo);
            s.on_ack(ms(300), &ack(4, &[]), false);
            assert_eq!(
                (s.state, s.undo_retrans),
                (CaState::Recovery, 1),
                "{undo:?}"
            );
            drain(&mut s, ms(300));
            s.on_ack(ms(302), &ack(4, &[(0, 1)]), false);
            assert_eq!(s.undo_retrans, 0, "{undo:?}");
            if undo == Undo::Linux2_6 {
                // 2.6 checks D-SACKs only in Disorder: still in Recovery, undone in
                // full when the recovery point is acknowledged (tcp_may_undo).
                assert_eq!(s.state, CaState::Recovery);
                let flight = s.in_flight();
                s.on_ack(ms(310), &ack(12, &[]), false);
                assert_eq!((s.state, s.stats.full_undos), (CaState::Open, 1));
                // cwnd back to 10, then moderated to in flight + 3 (tcp_moderate_cwnd),
                // and the same ACK's 8 delivered segments grow it in slow start.
                let moderated = 10.min(s.in_flight() + 3);
                assert!(flight > 0 && moderated < 10, "flight {flight}");
                assert_eq!(s.w.cwnd, moderated + 8);
            } else {
                // tcp_try_undo_dsack in Recovery: cwnd back to 10, ssthresh back to
                // unset (prior_ssthresh = tcp_current_ssthresh), Open.
                assert_eq!(s.state, CaState::Open, "{undo:?}");
                assert_eq!(
                    (s.w.cwnd, s.w.ssthresh),
                    (10, INFINITE_SSTHRESH),
                    "{undo:?}"
                );
                assert_eq!((s.stats.dsack_undos, s.undo_marker), (1, 0), "{undo:?}");
            }
            s.sb.check().unwrap();
        }
    }

    #[test]
    fn dsack_after_recovery_undoes_late_but_a_real_loss_stays() {
        for undo in [Undo::Linux, Undo::Linux3_14, Undo::Linux2_6] {
            // Real loss: only the retransmission arrives (no D-SACK): the recovery ends
            // with cwnd = ssthresh = 5 and stays reduced.
            let mut s = reordered_recovery(undo);
            s.on_ack(ms(300), &ack(12, &[]), false);
            assert_eq!((s.state, s.w.ssthresh), (CaState::Open, 5), "{undo:?}");
            let full = s.stats.full_undos + s.stats.partial_undos + s.stats.dsack_undos;
            assert_eq!(full, 0, "{undo:?}");
            // Spurious, but the D-SACK of the retransmission comes after the recovery
            // ended: undo_marker is still set (it is cleared only by an undo, a new
            // reduction or ECN), so the late D-SACK undoes the reduction
            // (tcp_try_undo_dsack in Open; 2.6: in the Disorder state that follows).
            drain(&mut s, ms(300));
            s.on_ack(ms(305), &ack(12, &[(0, 1)]), false);
            assert_eq!(
                (s.state, s.stats.dsack_undos),
                (CaState::Open, 1),
                "{undo:?}"
            );
            assert_eq!(s.w.ssthresh, INFINITE_SSTHRESH, "{undo:?}");
            assert!(
                s.w.cwnd >= 10 || undo == Undo::Linux2_6,
                "{undo:?}: {}",
                s.w.cwnd
            );
        }
        // 2.6 keeps the chance only while the Disorder state lasts: once snd_una passed
        // what was sent when the recovery ended (segments 0-11), undo_marker is cleared
        // and the late D-SACK undoes nothing; 3.14 and 6.1 still undo.
        for undo in [Undo::Linux, Undo::Linux3_14, Undo::Linux2_6] {
            let mut s = reordered_recovery(undo);
            s.on_ack(ms(300), &ack(12, &[]), false);
            drain(&mut s, ms(300));
            assert_eq!(s.undo_until, seq(12), "{undo:?}");
            s.on_ack(ms(305), &ack(15, &[]), false);
            drain(&mut s, ms(305));
            s.on_ack(ms(306), &ack(15, &[(0, 1)]), false);
            let undone = undo != Undo::Linux2_6;
            assert_eq!(s.stats.dsack_undos, undone as u64, "{undo:?}");
            assert_eq!(s.w.ssthresh == INFINITE_SSTHRESH, undone, "{undo:?}");
        }
        // ns-2 / ns-3 profiles undo nothing.
        let mut s = reordered_recovery(Undo::Off);
        s.on_ack(ms(300), &ack(4, &[]), false);
        s.on_ack(ms(302), &ack(4, &[(0, 1)]), false);
        s.on_ack(ms(310), &ack(12, &[]), false);
        assert_eq!(
            (s.w.ssthresh, s.stats.dsack_undos + s.stats.full_undos),
            (5, 0)
        );
    }

    #[test]
    fn spurious_fast_recovery_is_undone_by_timestamps() {
        // The delayed original 0 fills the hole: ACK 4 echoes its timestamp (100 ms),
        // older than the retransmission (202 ms): tcp_packet_delayed on a partial ACK.
        for undo in [Undo::Linux, Undo::Linux3_14, Undo::Linux2_6] {
            let mut s = reordered_recovery(undo);
            let mut a = ack(4, &[]);
            a.ts_ecr = ms(100);
            s.on_ack(ms(300), &a, false);
            assert_eq!(s.stats.partial_undos, 1, "{undo:?}");
            if undo == Undo::Linux2_6 {
                // tcp_undo_cwr(sk, 0): cwnd only (the same ACK's reduction step then
                // sets it again), ssthresh stays 5, still in Recovery; undone in full
                // at its end (retrans_stamp cleared: nothing retransmitted is out).
                assert_eq!((s.state, s.w.ssthresh), (CaState::Recovery, 5));
                assert_eq!(s.retrans_stamp, None);
                s.on_ack(ms(310), &ack(12, &[]), false);
                assert_eq!((s.state, s.stats.full_undos), (CaState::Open, 1));
                assert_eq!(s.w.ssthresh, INFINITE_SSTHRESH);
            } else {
                // No retransmission out any more (segment 0 is acknowledged): undo,
                // losses unmarked, Open (tcp_try_undo_partial).
                assert_eq!(s.state, CaState::Open, "{undo:?}");
                assert_eq!(
                    (s.w.ssthresh, s.sb.lost_out),
                    (INFINITE_SSTHRESH, 0),
                    "{undo:?}"
                );
                assert!(s.w.cwnd >= 10, "{undo:?}: {}", s.w.cwnd);
            }
            s.sb.check().unwrap();
        }
        // The echo of the retransmission itself (202 ms) is no evidence: no undo.
        for undo in [Undo::Linux, Undo::Linux3_14, Undo::Linux2_6] {
            let mut s = reordered_recovery(undo);
            let mut a = ack(4, &[]);
            a.ts_ecr = ms(202);
            s.on_ack(ms(300), &a, false);
            let mut a = ack(12, &[]);
            a.ts_ecr = ms(202);
            s.on_ack(ms(310), &a, false);
            assert_eq!((s.state, s.w.ssthresh), (CaState::Open, 5), "{undo:?}");
            assert_eq!(s.stats.partial_undos + s.stats.full_undos, 0, "{undo:?}");
        }
    }

    #[test]
    fn timeout_with_a_retransmission_in_flight_is_undone_in_6_1_only() {
        // Recovery as above; the fast retransmission of 0 is still out when the RTO
        // fires (a delay spike). The RTO during Recovery does not reduce ssthresh again,
        // so 6.1 keeps the undo state of the recovery (tcp_init_undo runs only with a
        // reduction); 3.14's tcp_enter_loss clears undo_marker for the retransmission in
        // flight (TCPCB_SACKED_RETRANS), 2.6's for the retransmitted segment in the queue.
        // Then the original 0 arrives: ACK 4 echoing 100 ms, older than the first
        // retransmission (202 ms; retrans_stamp is not reset by the timeout).
        for (undo, undone) in [
            (Undo::Linux, true),
            (Undo::Linux3_14, false),
            (Undo::Linux2_6, false),
        ] {
            let mut s = reordered_recovery(undo);
            let deadline = s.rto_deadline();
            s.on_rto(deadline);
            assert_eq!((s.state, s.w.cwnd, s.w.ssthresh), (CaState::Loss, 1, 5));
            drain(&mut s, deadline);
            let mut a = ack(4, &[]);
            a.ts_ecr = ms(100);
            s.on_ack(deadline + SimDuration::from_millis(10), &a, false);
            assert_eq!(s.stats.rto_undos, undone as u64, "{undo:?}");
            if undone {
                // tcp_undo_cwnd_reduction with the recovery's prior cwnd and ssthresh.
                assert_eq!(s.state, CaState::Open);
                assert_eq!((s.w.ssthresh, s.sb.lost_out), (INFINITE_SSTHRESH, 0));
                assert!(s.w.cwnd >= 10, "cwnd {}", s.w.cwnd);
            } else {
                assert_eq!((s.state, s.w.ssthresh), (CaState::Loss, 5), "{undo:?}");
            }
            s.sb.check().unwrap();
        }
    }

    #[test]
    fn window_restarts_after_idle_like_linux() {
        // cwnd 40, everything acknowledged, RTO = 300 ms. Idle 1 s: the window halves
        // per elapsed RTO beyond the first (40 → 20 → 10) and stops at the initial window.
        let mut s = Sender::new(&cfg(|_| {}));
        s.establish(ms(0), Some(SimDuration::from_millis(100)), 0, false);
        s.w.cwnd = 40;
        s.w.ssthresh = 20;
        s.write(ms(0), 1000);
        assert_eq!(drain(&mut s, ms(0)).len(), 1);
        s.on_ack(ms(100), &ack(1, &[]), false);
        assert_eq!(s.rtt.rto(), SimDuration::from_millis(300));
        let w = s.w.cwnd;
        s.write(ms(1100), 1000);
        assert_eq!(s.w.cwnd, 10, "from {w}");
        assert_eq!(
            s.w.ssthresh, 30,
            "ssthresh = max(ssthresh, 3/4 of the old window)"
        );
        // A shorter pause (0.5 s: one RTO beyond the first) halves once.
        let mut s = Sender::new(&cfg(|_| {}));
        s.establish(ms(0), Some(SimDuration::from_millis(100)), 0, false);
        s.w.cwnd = 40;
        s.write(ms(0), 1000);
        drain(&mut s, ms(0));
        s.on_ack(ms(100), &ack(1, &[]), false);
        s.write(ms(600), 1000);
        assert_eq!(s.w.cwnd, 20);
        // Idle for less than one RTO: untouched.
        s.w.cwnd = 40;
        drain(&mut s, ms(600));
        s.on_ack(ms(700), &ack(2, &[]), false);
        s.write(ms(900), 1000);
        assert_eq!(s.w.cwnd, 40);
    }

    #[test]
    fn pacing_spaces_segments_at_cwnd_over_srtt_times_ratio() {
        // cwnd 20, ssthresh 20 (CA ratio 120 %), srtt 100 ms, MSS 1000:
        // rate = 1000 · 20 · 1.2 / 0.1 = 240 kB/s; a 1052-byte packet takes 4.383 ms.
        let mut s = sender(cfg(|o| o.pacing = Some(true)), false);
        s.w.cwnd = 20;
        s.w.ssthresh = 20;
        let rate = s.pacing_rate().unwrap();
        assert!((rate - 240_000.0).abs() < 1e-6, "{rate}");
        // The initial window goes unpaced; from the 10th data segment on (Linux
        // `data_segs_out >= 10`) each sets the next departure len/rate later.
        let t0 = ms(100);
        assert_eq!(drain(&mut s, t0).len(), 10);
        let gap = SimDuration::from_nanos((1052.0 * 1e9 / 240_000.0) as u64);
        assert_eq!(
            s.pace_deadline(),
            t0 + gap,
            "blocked until the pacing stamp"
        );
        assert!(s.next_segment(t0 + gap, MSS as u32).is_some());
        assert!(s.next_segment(t0 + gap, MSS as u32).is_none());
        assert_eq!(s.pace_deadline(), t0 + gap + gap);
        // Slow start (cwnd < ssthresh / 2) doubles the rate.
        s.w.ssthresh = 100;
        assert!((s.pacing_rate().unwrap() - 400_000.0).abs() < 1e-6);
        // Not paced by default.
        let u = sender(cfg(|_| {}), false);
        assert_eq!(u.pacing_rate(), None);
    }

    #[test]
    fn accecn_counter_drives_ecn_reduction_and_dctcp_alpha() {
        let mut s = sender(cfg(|o| o.cc = Some(CcKind::Dctcp)), true);
        assert!(s.accecn() && s.ecn_ok());
        let first = drain(&mut s, ms(100));
        assert!(first.iter().all(|t| t.ect));
        assert_eq!(
            s.ect_codepoint(),
            crate::packet::Ecn::Ect0,
            "DCTCP sends ECT(0)"
        );
        // Two segments acknowledged, one of them CE: ace counter 1, no ECE flag needed.
        let mut a = ack(2, &[]);
        a.ace = 1;
        s.on_ack(ms(200), &a, false);
        assert_eq!(s.state, CaState::Cwr);
        assert_eq!(s.stats.ecn_reductions, 1);
        // alpha starts at 1024; this first ACK ends DCTCP's first window (next_seq was
        // snd_nxt = 1 at init): alpha = 1024 − 64 + (1 << 6)/2 = 992, then
        // ssthresh = 10 − (10·992 >> 11) = 10 − 4 = 6.
        match &s.cc {
            AnyCc::Dctcp(d) => assert_eq!(d.alpha, 992),
            _ => unreachable!(),
        }
        assert_eq!(s.w.ssthresh, 6);
        let out = drain(&mut s, ms(200));
        assert!(out.iter().all(|t| !t.cwr), "AccECN has no CWR flag");
        // The same counter again: no new marks, no new reduction.
        let mut a = ack(3, &[]);
        a.ace = 1;
        s.on_ack(ms(201), &a, false);
        assert_eq!(s.stats.ecn_reductions, 1);
        let p = sender(cfg(|o| o.cc = Some(CcKind::Prague)), true);
        assert_eq!(
            p.ect_codepoint(),
            crate::packet::Ecn::Ect1,
            "Prague sends ECT(1)"
        );
        assert!(p.pacing_rate().is_some(), "Prague is paced");
    }

    #[test]
    fn receive_window_limits_and_fin() {
        let mut s = Sender::new(&cfg(|_| {}));
        s.establish(ms(0), None, 0, false);
        s.write(ms(0), 2500);
        s.close();
        let mut a = ack(0, &[]);
        a.wnd = 2000;
        s.on_ack(ms(0), &a, false);
        let out = drain(&mut s, ms(0));
        assert_eq!(out.len(), 2, "two segments fit the 2000-byte window");
        s.on_ack(ms(10), &ack(2, &[]), false);
        let out = drain(&mut s, ms(10));
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].payload, out[0].fin, out[0].end), (500, true, 2502));
        assert!(!s.fin_acked());
        let mut f = ack(0, &[]);
        f.ack = 2502;
        s.on_ack(ms(20), &f, false);
        assert!(s.fin_acked() && s.all_data_acked());
        assert_eq!(s.stats.bytes_acked, 2500);
        assert_eq!(s.rto_deadline(), SimTime::NEVER);
    }

    /// The idle-ACK fast path (`is_idle_ack` / `on_idle_ack`) leaves a sender exactly as
    /// the general path does, for every stack profile and congestion control, with and
    /// without ECN, on a fresh connection and after a transfer has been acknowledged
    /// (stats, app-limited mark, timers, RTT state: the whole `Debug` state).
    #[test]
    fn idle_ack_fast_path_matches_the_general_path() {
        use crate::tcp::Stack;
        let stacks = [
            Stack::Linux,
            Stack::Linux3_14,
            Stack::Linux2_6_29,
            Stack::Ns2Sack1,
            Stack::Ns3,
        ];
        let ccs = [
            CcKind::NewReno,
            CcKind::Cubic,
            CcKind::Dctcp,
            CcKind::Prague,
        ];
        let mut taken = 0;
        for stack in stacks {
            for cc in ccs {
                for ecn in [false, true] {
                    let c = TcpOptions {
                        mss: Some(MSS as u32),
                        stack: Some(stack),
                        cc: Some(cc),
                        ..Default::default()
                    }
                    .resolve("tcp")
                    .unwrap();
                    // a fresh receiver-side sender, and one whose segment was
                    // acknowledged (snd_una = snd_nxt after a transfer)
                    let fresh = {
                        let mut s = Sender::new(&c);
                        s.establish(ms(100), Some(SimDuration::from_millis(100)), 0, ecn);
                        s
                    };
                    let mut done = fresh.clone();
                    done.write(ms(100), MSS);
                    assert_eq!(drain(&mut done, ms(100)).len(), 1);
                    done.on_ack(ms(150), &ack(1, &[]), false);
                    for (k, base) in [fresh, done].into_iter().enumerate() {
                        let mut h = ack(k as u64, &[]);
                        h.seq = 1;
                        for (t, wnd, data) in [(200, 3 << 20, true), (210, 1 << 20, false)] {
                            h.wnd = wnd;
                            let now = ms(t);
                            let ctx = format!("{stack:?} {cc:?} ecn {ecn} case {k} t {t}");
                            if !base.is_idle_ack(&h, data) {
                                continue;
                            }
                            taken += 1;
                            let (mut a, mut b) = (base.clone(), base.clone());
                            let oa = a.on_ack(now, &h, data);
                            let ob = b.on_ack_general(now, &h, data);
                            assert_eq!(oa, ob, "{ctx}");
                            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{ctx}");
                            // and what follows the ACK (a write, sends, the timers) agrees
                            a.write(now, 2 * MSS);
                            b.write(now, 2 * MSS);
                            let (sa, sb) = (drain(&mut a, now), drain(&mut b, now));
                            assert_eq!(format!("{sa:?}"), format!("{sb:?}"), "{ctx}");
                            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{ctx}");
                        }
                    }
                }
            }
        }
        // every combination took the fast path on both ACKs (the comparison is not
        // vacuous) except DCTCP and Prague with ECN: they negotiate Accurate ECN, whose
        // counters the general path reads
        assert_eq!(taken, 5 * 4 * 2 * 2 * 2 - 5 * 2 * 2 * 2, "fast path taken");
    }
}
