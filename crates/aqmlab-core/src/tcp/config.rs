//! TCP settings: the scenario-file table ([`TcpOptions`], every field optional so that a
//! flow's `tcp = { ... }` can override single fields of the scenario-wide `[tcp]` table)
//! and the resolved, validated [`TcpConfig`] a connection runs with.
//!
//! Resolution order for each field: flow table > scenario `[tcp]` table > built-in
//! default. The built-in defaults are Linux's (the studies ran Linux hosts) unless the
//! doc comment says otherwise.

use crate::params::ParamDoc;
use crate::params::ScenarioError;
use crate::time::SimDuration;
use crate::units::{DurationSpec, Limit};
use serde::{Deserialize, Serialize};

pub use super::CcKind;

/// IPv4 (20) + TCP (20) + timestamp option (12) bytes: a segment's IP size is
/// payload + `HEADER_BYTES` (+ SACK option bytes).
pub const HEADER_BYTES: u32 = 52;
/// The same without the timestamp option (`timestamps = false`): 40 bytes.
pub const HEADER_BYTES_NO_TS: u32 = 40;

/// Prague's RTT-independence heuristic (`prague_rtt_scaling`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RttScaling {
    /// No RTT independence: classic 1 segment per RTT additive increase.
    None,
    /// `RTT_CONTROL_RATE` (the module default): below the target RTT the additive
    /// increase is scaled by (rtt / target)², so flows with RTT ≤ target get the same
    /// rate; at most one reduction per target RTT.
    Rate,
}

/// How the receiver delays ACKs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DelayedAck {
    /// Linux: ACK when more than one full-sized segment is unacknowledged, else after
    /// 40 ms (TCP_ATO_MIN); quick-ACK mode for the first 16 segments
    /// (TCP_MAX_QUICKACKS), after an idle period, on the first CE mark, and immediate
    /// ACKs while data is out of order.
    Linux,
    /// ns-2 `DelAckSink` style: ACK every 2nd segment, 100 ms timeout, immediate ACK
    /// for out-of-order data; no quick-ACK mode (the DOCSIS study's setting).
    Ns2,
    /// ns-3 `TcpSocketBase` (3.44): ACK every 2nd segment (`DelAckCount = 2`), 200 ms
    /// timeout (`DelAckTimeout`), immediate ACK for out-of-order data; no quick-ACK mode.
    Ns3,
    /// ACK every segment.
    Off,
}

/// How the congestion window grows in slow start.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SsGrowth {
    /// One segment per segment acknowledged (RFC 3465 counting without the L limit):
    /// Linux since 3.13 (`tcp_slow_start(tp, acked)`, commit "tcp: properly handle stretch
    /// acks in slow start"), ns-3 `TcpLinuxReno::SlowStart`.
    Segments,
    /// One segment per ACK of new data, however many segments it acknowledges: Linux up to
    /// 3.12 with `tcp_abc = 0` (`tcp_slow_start(tp)`: `snd_cwnd_cnt += snd_cwnd` per call),
    /// ns-2 `TcpAgent::opencwnd` (`cwnd_ += 1`), ns-3 `TcpNewReno::SlowStart`.
    Acks,
}

/// How the congestion window grows in congestion avoidance.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CaGrowth {
    /// One segment per window of segments acknowledged (RFC 3465 byte counting): Linux since
    /// 4.0 (`tcp_cong_avoid_ai(tp, w, acked)`, N. Cardwell, "tcp: fix the timid additive
    /// increase on stretch ACKs"), ns-3 `TcpLinuxReno::CongestionAvoidance`.
    Segments,
    /// 1/cwnd of a segment per ACK of new data: ns-2 `TcpAgent::opencwnd` (`windowOption_ 1`:
    /// `cwnd_ += increase_num_ / cwnd_`), ns-3 `TcpNewReno::CongestionAvoidance`
    /// (`cWnd += max(1, MSS²/cWnd)` bytes per ACK). Modelled as a fractional window that
    /// grows by 1/cwnd of a segment per ACK (so from w to w + 1 in about w + ½ ACKs);
    /// only whole segments are sent.
    Acks,
    /// Linux before 4.0 (`tcp_cong_avoid_ai(tp, w)`): `snd_cwnd_cnt` counts ACKs, and the ACK
    /// that finds `snd_cwnd_cnt >= w` raises cwnd and zeroes the counter, so one segment per
    /// w + 1 ACKs. With it go that era's slow-start test `snd_cwnd <= snd_ssthresh` (Linux
    /// before 4.3), slow start stopping at ssthresh + 1 (3.13–3.19), and CUBIC's per-ACK
    /// `cnt` scaled by the measured delayed-ACK ratio (`bictcp_acked`, `ACK_RATIO_SHIFT`).
    AcksLinux,
}

/// Window reduction during fast recovery and ECN reaction.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Recovery {
    /// Proportional rate reduction (RFC 6937), Linux since 3.2 (`tcp_cwnd_reduction`).
    Prr,
    /// cwnd = ssthresh on entering recovery, then pipe-limited transmission (RFC 6675 §5
    /// step 4.2 / RFC 3517; ns-2 `Sack1TcpAgent`, ns-3 `TcpClassicRecovery`).
    Rfc6675,
    /// Linux before 3.2 "rate halving" (`tcp_cwnd_down`): cwnd − 1 every second ACK that
    /// makes progress, down to the congestion control's floor (ssthresh/2 for Reno's
    /// `tcp_reno_min_cwnd`, ssthresh for CUBIC), never above in-flight + 1; recovery ends
    /// with cwnd = min(cwnd, ssthresh) (`tcp_complete_cwr`).
    RateHalving,
}

/// What Reno halves on a congestion signal.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RenoHalves {
    /// cwnd (Linux `tcp_reno_ssthresh`; ns-2 `slowdown` halves `window()` = min(cwnd, wnd)).
    Cwnd,
    /// The segments in flight (RFC 5681 eq. 4 FlightSize; ns-3.44
    /// `TcpNewReno::GetSsThresh(tcb, BytesInFlight())`).
    Flight,
}

/// Where the minimum RTO applies.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RtoFloor {
    /// Linux `tcp_set_rto` / `tcp_rtt_estimator`: RTO = SRTT + max(4·RTTVAR, min_rto).
    Variance,
    /// RFC 6298 (2.4): RTO = max(min_rto, SRTT + 4·RTTVAR) (ns-2 `rtt_timeout` with
    /// `rfc2988_ true`, ns-3 `TcpSocketBase` with `MinRto`).
    Sum,
}

/// How the sender measures the round-trip time that sets its retransmission timeout.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RttTiming {
    /// Every ACK of new data gives a sample (Karn's rule on the segments' send times,
    /// the timestamp echo when only retransmitted data was acknowledged), in exact
    /// time; a valid sample clears the timeout backoff (Linux `tcp_ack_update_rtt`,
    /// ns-3 with timestamps).
    Ack,
    /// ns-2's `TcpAgent` without timestamps (`timestamps_ false`, the default; ns-2.35
    /// `tcp/tcp.cc`): one segment per flight is timed — the next new segment sent
    /// while none is timed (`output`: `rtt_active_`, `rtt_seq_`, `rtt_ts_`) — and the
    /// timing is abandoned when the retransmission timer is reset by a timeout or a
    /// fast retransmit (`reset_rtx_timer`). The sample is counted in 10 ms clock ticks
    /// (`tcpTick_ 0.01`) from a random phase of the sender's clock (`boot_time_`) and
    /// smoothed in ns-2's fixed point (`rtt_update`: SRTT with 3 fractional bits,
    /// RTTVAR with 2, RTO = SRTT + 4·RTTVAR in whole ticks); the timeout is
    /// max(min_rto, RTO) times the backoff, at most 60 s (`maxrto_`) and at least two
    /// ticks (`rtt_timeout`); the backoff stays until the timed segment is acknowledged
    /// or a partial ACK arrives in fast recovery, and after more than three doublings
    /// the SRTT is forgotten (`rtt_backoff`).
    Ns2,
}

/// How the sender decides that a segment is lost (before the retransmission timeout).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LossDetection {
    /// RACK (RFC 8985 §6, Linux `tcp_recovery.c`; default since 4.4, the only SACK loss
    /// detection since 4.18): time-based, a segment is lost once a segment sent after it
    /// was delivered and `RACK.rtt + reo_wnd` has passed since its transmission; lost
    /// retransmissions are detected the same way. Needs SACK (without SACK Linux uses
    /// NewReno's duplicate-ACK counting, and so does the model).
    Rack,
    /// RFC 6675 DupThresh: a segment is lost when 3 SACKed segments lie above it; a lost
    /// retransmission is recovered only by the RTO (ns-2, ns-3; Linux with `tcp_fack = 0`).
    Dupthresh,
    /// Linux's SACK loss detection with forward acknowledgement (`tcp_fack = 1`, the
    /// default from 2.4 until FACK was removed in 4.15; `tcp_input.c` of 2.6.29 and 3.14):
    /// recovery starts when the highest SACKed segment lies more than `tcp_reordering`
    /// (3) segments above the first unacknowledged one (`tcp_time_to_recover`,
    /// `tcp_fackets_out`) or when the first one's last transmission is older than the
    /// RTO; in recovery every unSACKed segment more than 3 below the highest SACKed one,
    /// up to the recovery point, is lost (`tcp_update_scoreboard` → `tcp_mark_head_lost`),
    /// as is any whose transmission is older than the RTO (`tcp_timeout_skbs`); and a
    /// retransmission is lost again once data first sent after it is SACKed
    /// (`tcp_mark_lost_retrans`), so it is resent without waiting for the RTO.
    Fack,
}

/// Tail loss probe (RFC 8985 §7): after about two round trips without an ACK the sender
/// sends one segment (new data, else the last one again) so that a tail loss is
/// repaired by fast recovery instead of the RTO.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum Tlp {
    #[serde(rename = "off")]
    Off,
    /// As Linux 3.10–3.x (`tcp_schedule_loss_probe` of 3.14, `tcp_early_retrans = 3`):
    /// only in Open and only when the RTO is the pending timer and the sender is cwnd-
    /// or application-limited; PTO = max(2·SRTT, 10 ms), with one segment out
    /// max(PTO, 1.5·SRTT + 200 ms); a new-data probe opens no episode; a probe episode
    /// ends with a duplicate ACK for `tlp_high_seq` (no loss) or an ACK above it (loss:
    /// one cwnd reduction).
    #[serde(rename = "linux-3.14")]
    Linux3_14,
    /// As Linux 6.1: in Open or CWR; PTO = 2·SRTT in whole jiffies + `TCP_TIMEOUT_MIN` (2
    /// jiffies: 8 ms at the default `hz` 250), with one
    /// segment out 2·SRTT + `min_rto`; capped by the RTO deadline; every probe opens an
    /// episode (`tlp_high_seq`), and only a probe that retransmitted (`tlp_retrans`)
    /// and is followed by an ACK above `tlp_high_seq` reduces cwnd.
    #[serde(rename = "linux")]
    Linux,
}

impl Tlp {
    pub fn name(self) -> &'static str {
        match self {
            Tlp::Off => "off",
            Tlp::Linux3_14 => "linux-3.14",
            Tlp::Linux => "linux",
        }
    }
}

/// Receive-buffer autotuning: how the advertised window starts and grows (Linux
/// `tcp_select_initial_window`, `tcp_init_buffer_space`, `tcp_grow_window`,
/// `tcp_rcv_space_adjust` with `tcp_moderate_rcvbuf = 1`). With `off` the receiver
/// advertises `rcv_window` from the first segment on. Otherwise `rcv_window` is the
/// largest window (`tcp_rmem[2]` = twice it) and the window starts at the kernel's
/// initial one: `rcv_ssthresh` grows by two segments per data segment received up to
/// `window_clamp`, and once per receiver RTT (timestamps, else one window's worth of
/// data) the buffer is sized from the bytes the application read in the last RTT
/// (dynamic right-sizing), which raises `window_clamp`. The application is assumed to
/// read at once (no memory pressure, no out-of-order memory charged).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum RcvTune {
    #[serde(rename = "off")]
    Off,
    /// Linux 4.19–6.5 (`tcp_rmem[1]` 131072, `tcp_adv_win_scale` 1): first window 64 KB
    /// less one segment's reservation, buffer = (2·copied + 16·advmss) plus twice the
    /// growth since the last RTT, in `SKB_TRUESIZE` units.
    #[serde(rename = "linux")]
    Linux,
    /// Linux 3.4–4.18 (`tcp_rmem[1]` 87380, `tcp_adv_win_scale` 1): first window
    /// 10 segments (`TCP_DEFAULT_INIT_RCVWND`), `window_clamp` 42,230 bytes until the
    /// buffer is sized to twice the bytes read in the last RTT.
    #[serde(rename = "linux-3.14")]
    Linux3_14,
    /// Linux 2.6.29 (`tcp_adv_win_scale` 2: three quarters of the buffer is window): first
    /// window 4 segments (the 2.6 rule for MSS ≤ 1460), then as `linux-3.14`.
    #[serde(rename = "linux-2.6.29")]
    Linux2_6_29,
}

impl RcvTune {
    pub fn name(self) -> &'static str {
        match self {
            RcvTune::Off => "off",
            RcvTune::Linux => "linux",
            RcvTune::Linux3_14 => "linux-3.14",
            RcvTune::Linux2_6_29 => "linux-2.6.29",
        }
    }
}

/// Which Linux BBRv1 (`cc = "bbr"`) to follow. The kernel's `tcp_bbr.c` changed once in
/// a way that moves results: Linux 5.1 (commits "tcp_bbr: adapt cwnd based on ack
/// aggregation estimation" and "refactor bbr_target_cwnd() for general inflight
/// provisioning") added the ACK-aggregation allowance to the cwnd target and gave the
/// "+2 segments" of the quantisation budget to PROBE_BW's probing phase only.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum BbrVersion {
    /// Linux 5.1 to 6.x (the default; the linux engine's 6.1 kernel).
    #[serde(rename = "linux")]
    Linux,
    /// Linux 4.20: no ACK-aggregation allowance; +2 segments whenever the gain is above 1.
    #[serde(rename = "linux-4.20")]
    Linux4_20,
}

impl BbrVersion {
    pub fn name(self) -> &'static str {
        match self {
            BbrVersion::Linux => "linux",
            BbrVersion::Linux4_20 => "linux-4.20",
        }
    }
}

/// Undo of window reductions found spurious (Linux `tcp_input.c` undo machinery), per
/// kernel generation. Every flavour keeps Linux's undo state: `undo_marker` (snd_una
/// when the reduction started), `undo_retrans` (retransmissions since, less those a
/// D-SACK reported as duplicates: `tcp_retransmit_skb`, `tcp_check_dsack`,
/// `tcp_sacktag_one`), `prior_ssthresh` / prior cwnd and `retrans_stamp` (the first
/// retransmission's time). A reduction is undone (`tcp_may_undo`) while `undo_marker`
/// is set and either every retransmission was D-SACKed or the ACK echoes a timestamp
/// older than the first retransmission (Eifel detection, RFC 3522,
/// `tcp_packet_delayed`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum Undo {
    #[serde(rename = "off")]
    Off,
    /// As Linux 2.6.29: full undo at the end of fast recovery or Loss
    /// (`tcp_try_undo_recovery`), partial-ACK undo of cwnd only, staying in Recovery
    /// (`tcp_try_undo_partial` with `tcp_undo_cwr(sk, 0)`), D-SACK undo only after
    /// recovery ended (Disorder, `tcp_try_undo_dsack`), every undo followed by
    /// `tcp_moderate_cwnd` (cwnd ≤ in flight + 3); a timeout undoes nothing when any
    /// segment in the queue was ever retransmitted (`tcp_enter_loss` clears
    /// `undo_marker` on `TCPCB_RETRANS`); spurious-RTO detection by timestamps or by
    /// (S)ACKed never-retransmitted data (the model's stand-in for 2.6's F-RTO).
    #[serde(rename = "linux-2.6")]
    Linux2_6,
    /// As Linux 3.14: undo at the end of recovery, on a partial ACK when nothing
    /// retransmitted is still out (losses unmarked, back to Open), and by D-SACK in
    /// Recovery and Open; a timeout sets `undo_marker` unless a retransmission is still
    /// in flight (`TCPCB_SACKED_RETRANS`); F-RTO (RFC 5682, on a timeout that reduced
    /// ssthresh or a repeated one) undoes regardless of `undo_marker`.
    #[serde(rename = "linux-3.14")]
    Linux3_14,
    /// As Linux 6.1 (`tcp_init_undo`): a timeout that reduces ssthresh restarts the undo
    /// state with `undo_retrans` = retransmissions in flight (a retransmitted loss probe
    /// included), so a timeout with retransmissions in flight can still be undone by
    /// their D-SACKs or by timestamps; F-RTO on timeouts from Open/Disorder/CWR or
    /// repeated ones; otherwise as 3.14.
    #[serde(rename = "linux")]
    Linux,
}

impl Undo {
    pub fn name(self) -> &'static str {
        match self {
            Undo::Off => "off",
            Undo::Linux2_6 => "linux-2.6",
            Undo::Linux3_14 => "linux-3.14",
            Undo::Linux => "linux",
        }
    }
}

/// A named TCP stack profile: the defaults of one real implementation. Every field a
/// profile sets is an ordinary `[tcp]` key, so single keys override the profile.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum Stack {
    /// Today's Linux (6.1: RACK-TLP loss detection): the default.
    #[serde(rename = "linux")]
    Linux,
    /// Linux 3.14 (residential and edge-router studies).
    #[serde(rename = "linux-3.14")]
    Linux3_14,
    /// Linux 2.6.29 (saturated-TCP study, via the Network Simulation Cradle).
    #[serde(rename = "linux-2.6.29")]
    Linux2_6_29,
    /// ns-2 `Agent/TCP/Sack1` + `DelAckSink` as the DOCSIS study configured it.
    #[serde(rename = "ns2-sack1")]
    Ns2Sack1,
    /// ns-3.44 `TcpNewReno` with `TcpClassicRecovery` and ns-3's socket defaults.
    #[serde(rename = "ns3")]
    Ns3,
}

/// `(name, one-line description)` of every stack profile, for `aqmlab describe tcp`.
pub const STACKS: &[(&str, &str)] = &[
    ("linux", "modern Linux (default, 6.1): CUBIC, IW 10, per-segment growth, PRR, HyStart, RACK-TLP loss detection, delack 40 ms with quick-ACK, RTO 1 s / min 200 ms, undo of spurious reductions as 6.1"),
    ("linux-3.14", "Linux 3.14: per-segment slow start, per-ACK congestion avoidance (w+1 ACKs per segment), CUBIC delayed-ACK ratio, PRR, FACK loss detection with early retransmit and tail loss probes, IW 10, undo as 3.14"),
    ("linux-2.6.29", "Linux 2.6.29: per-ACK slow start and congestion avoidance (tcp_abc = 0), rate halving, FACK loss detection, IW 3 (RFC 3390), initial RTO 3 s, undo as 2.6"),
    ("ns2-sack1", "ns-2 Sack1 agent + DelAckSink: NewReno, IW 2, per-ACK growth, RFC 6675-style recovery, ACK every 2 / 100 ms, window 10000, RTO 3 s / min 200 ms on the sum, one timed segment per flight on a 10 ms clock, no timestamp option"),
    ("ns3", "ns-3.44 TcpNewReno + TcpClassicRecovery: IW 10, per-ACK growth, ACK every 2 / 200 ms, min RTO 1 s on the sum, SYN timeout 3 s, receive buffer 128 KiB"),
];

impl Stack {
    pub fn name(self) -> &'static str {
        match self {
            Stack::Linux => "linux",
            Stack::Linux3_14 => "linux-3.14",
            Stack::Linux2_6_29 => "linux-2.6.29",
            Stack::Ns2Sack1 => "ns2-sack1",
            Stack::Ns3 => "ns3",
        }
    }

    /// The profile's settings as a `[tcp]` table (every behavioural key set).
    ///
    /// Sources, per profile:
    /// - every Linux profile: undo of spurious reductions (`undo`, one flavour per
    ///   kernel, see [`Undo`]): `tcp_input.c` `tcp_enter_loss`, `tcp_enter_recovery`,
    ///   `tcp_may_undo` / `tcp_packet_delayed`, `tcp_try_undo_recovery` / `_partial` /
    ///   `_dsack` / `_loss`, `tcp_check_dsack`, `tcp_sacktag_one`, `tcp_fastretrans_alert`
    ///   and `tcp_output.c` `tcp_retransmit_skb`, read in 2.6.29.4, 3.14.1 and 6.1.166;
    ///   F-RTO (`sysctl_tcp_frto` default 2 since 2.6.24; RFC 5682 since 3.10).
    /// - `linux`: the built-in defaults documented on each [`TcpOptions`] field; RACK
    ///   (`tcp_recovery.c`, `sysctl_tcp_recovery = 1`, RACK-only since 4.18) and TLP
    ///   (`tcp_output.c` `tcp_schedule_loss_probe` / `tcp_send_loss_probe`,
    ///   `sysctl_tcp_early_retrans = 3`) as in 6.1.
    /// - `linux-3.14`: TLP as in 3.14 (`tcp_early_retrans = 3` by default since 3.10:
    ///   delayed early retransmit + TLP: `tcp_time_to_recover` trick 6,
    ///   `tcp_pause_early_retransmit`, `tcp_resume_early_retransmit`), loss detection by
    ///   FACK (RACK came in 4.4).
    /// - `linux-3.14`, `linux-2.6.29`: FACK loss detection (`sysctl_tcp_fack = 1` in
    ///   `tcp_input.c` from 2.4 until its removal in 4.15): `tcp_time_to_recover`
    ///   (`tcp_dupack_heuristics` = `fackets_out` > `tcp_reordering` 3, or the head timed
    ///   out), `tcp_update_scoreboard` (`tcp_mark_head_lost(fackets_out − reordering)`
    ///   up to `high_seq`, `tcp_timeout_skbs`) and `tcp_mark_lost_retrans` (in Recovery,
    ///   a retransmission sent when `snd_nxt` was below the highest SACK is lost again).
    /// - `linux-2.6.29`, `ns2-sack1`, `ns3`: neither RACK nor TLP (TLP came in 3.10;
    ///   ns-2 has neither; ns-3.44's `TcpSocketBase` detects losses by DupThresh,
    ///   attribute `ReTxThreshold` 3, with `TcpTxBuffer::IsLost` of RFC 6675, and has no
    ///   RACK or loss probe: checked in the 3.44 wheel's `tcp-socket-base.h`,
    ///   `tcp-tx-buffer.h`, `tcp-recovery-ops.h`).
    /// - `linux-3.14`: `net/ipv4/tcp_cong.c` (`tcp_slow_start(tp, acked)` since 3.13,
    ///   `tcp_cong_avoid_ai(tp, w)` counting ACKs), `tcp_cubic.c` (`bictcp_acked`
    ///   delayed-ACK ratio, HyStart on), `include/net/tcp.h` (`TCP_INIT_CWND 10` since
    ///   2.6.39, `TCP_TIMEOUT_INIT` 1 s since 3.1, `TCP_RTO_MIN` 200 ms), PRR since 3.2
    ///   (`tcp_cwnd_reduction`), CUBIC the default since 2.6.19; receive window 3 MiB
    ///   (`tcp_rmem[2]` 6 MiB, `tcp_adv_win_scale` 1).
    /// - `linux-2.6.29`: `tcp_cong.c` with `sysctl_tcp_abc = 0` (`tcp_slow_start(tp)` +1
    ///   per ACK; `tcp_cong_avoid_ai(tp, w)`), `tcp_input.c` `tcp_init_cwnd` (3 segments
    ///   for MSS 1096–1460, RFC 3390) and `tcp_cwnd_down` (rate halving; PRR only came in
    ///   3.2), `TCP_TIMEOUT_INIT = 3*HZ` (RFC 2988), `TCP_RTO_MIN = HZ/5`; HyStart was
    ///   merged into CUBIC in 2.6.29; receive window 3 MiB (`tcp_rmem[2]` 4 MiB,
    ///   `tcp_adv_win_scale` 2).
    /// - `ns2-sack1`: ns-2.35 `tcl/lib/ns-default.tcl` (`windowInit_ 2`, `minrto_ 0.2`,
    ///   `rtxcur_init_ 3.0`, `rfc2988_ true`, `windowOption_ 1`), `tcp/tcp.cc`
    ///   (`opencwnd`, `output`'s timed segment, `rtt_update`, `rtt_timeout`, `rtt_backoff`:
    ///   `rtt_timing = "ns2"`), `tcp/tcp-sack1.cc` (cwnd = ssthresh on the third
    ///   duplicate ACK, pipe-limited sending), `tcp/tcp-sink.cc` `DelAckSink`
    ///   (`interval_ 100ms`, every 2nd segment); `window_ 10000` as the DOCSIS study set it.
    /// - `ns3`: ns-3.44 `src/internet/model/tcp-socket.cc` (`InitialCwnd 10`,
    ///   `DelAckCount 2`, `DelAckTimeout 200ms`, `RcvBufSize 131072`, `ConnTimeout 3s`: the
    ///   SYN timeout; values checked with `ns3-dumbbell --PrintAttributes=ns3::TcpSocket`),
    ///   `tcp-socket-base.cc` (`MinRto 1s`, RTO = max(MinRto, SRTT + max(G, 4·RTTVAR))),
    ///   `rtt-estimator.cc` (`InitialEstimation 1s`), `tcp-congestion-ops.cc`
    ///   (`TcpNewReno::SlowStart` +1 segment per ACK, `CongestionAvoidance`
    ///   MSS²/cWnd per ACK, `GetSsThresh` = max(2 MSS, BytesInFlight/2)),
    ///   `tcp-recovery-ops.cc` (`TcpClassicRecovery`: cwnd = ssthresh).
    pub fn options(self) -> TcpOptions {
        use Limit::{Bytes, Packets};
        let ms = |x: u64| Some(DurationSpec(SimDuration::from_millis(x)));
        let base =
            |cc, iw, ss, ca, rec, da, min_rto: u64, init_rto: u64, floor, hy, rwnd| TcpOptions {
                cc: Some(cc),
                init_cwnd: Some(iw),
                ss_growth: Some(ss),
                ca_growth: Some(ca),
                recovery: Some(rec),
                delayed_ack: Some(da),
                min_rto: ms(min_rto),
                initial_rto: ms(init_rto),
                rto_floor: Some(floor),
                hystart: Some(hy),
                rcv_window: Some(rwnd),
                sack: Some(true),
                ..Default::default()
            };
        let linux_rwnd = Bytes(DEFAULT_RCV_WINDOW as u64);
        let halves = if self == Stack::Ns3 {
            RenoHalves::Flight
        } else {
            RenoHalves::Cwnd
        };
        let o = match self {
            Stack::Linux => base(
                CcKind::Cubic,
                10,
                SsGrowth::Segments,
                CaGrowth::Segments,
                Recovery::Prr,
                DelayedAck::Linux,
                200,
                1000,
                RtoFloor::Variance,
                true,
                linux_rwnd,
            ),
            Stack::Linux3_14 => base(
                CcKind::Cubic,
                10,
                SsGrowth::Segments,
                CaGrowth::AcksLinux,
                Recovery::Prr,
                DelayedAck::Linux,
                200,
                1000,
                RtoFloor::Variance,
                true,
                linux_rwnd,
            ),
            Stack::Linux2_6_29 => base(
                CcKind::Cubic,
                3,
                SsGrowth::Acks,
                CaGrowth::AcksLinux,
                Recovery::RateHalving,
                DelayedAck::Linux,
                200,
                3000,
                RtoFloor::Variance,
                true,
                linux_rwnd,
            ),
            Stack::Ns2Sack1 => base(
                CcKind::NewReno,
                2,
                SsGrowth::Acks,
                CaGrowth::Acks,
                Recovery::Rfc6675,
                DelayedAck::Ns2,
                200,
                3000,
                RtoFloor::Sum,
                false,
                Packets(10_000),
            ),
            Stack::Ns3 => base(
                CcKind::NewReno,
                10,
                SsGrowth::Acks,
                CaGrowth::Acks,
                Recovery::Rfc6675,
                DelayedAck::Ns3,
                1000,
                3000,
                RtoFloor::Sum,
                false,
                Bytes(131_072),
            ),
        };
        // Undo of spurious reductions: every Linux profile, in its kernel's flavour
        // (timestamp and D-SACK undo since 2.4, F-RTO `tcp_frto` on by default since
        // 2.6.24); neither ns-2's Sack1 agent nor ns-3.44's TcpSocketBase undoes.
        let undo = match self {
            Stack::Linux => Undo::Linux,
            Stack::Linux3_14 => Undo::Linux3_14,
            Stack::Linux2_6_29 => Undo::Linux2_6,
            Stack::Ns2Sack1 | Stack::Ns3 => Undo::Off,
        };
        let linux = undo != Undo::Off;
        let (loss_detection, tlp) = match self {
            Stack::Linux => (LossDetection::Rack, Tlp::Linux),
            // FACK (`tcp_fack = 1`) is the SACK loss detection of 2.6.29 and 3.14.
            Stack::Linux3_14 => (LossDetection::Fack, Tlp::Linux3_14),
            Stack::Linux2_6_29 => (LossDetection::Fack, Tlp::Off),
            _ => (LossDetection::Dupthresh, Tlp::Off),
        };
        TcpOptions {
            reno_halves: Some(halves),
            // ns-2's agents time one segment per flight on a 10 ms clock
            // (`timestamps_ false`); Linux and ns-3 sample every ACK.
            rtt_timing: Some(if self == Stack::Ns2Sack1 {
                RttTiming::Ns2
            } else {
                RttTiming::Ack
            }),
            // ns-2's agents carry no timestamp option (`timestamps_ false`)
            timestamps: Some(self != Stack::Ns2Sack1),
            undo: Some(undo),
            loss_detection: Some(loss_detection),
            tlp: Some(tlp),
            // Early retransmit: 3.5 to 4.10 (`tcp_early_retrans` 3 = delayed ER + TLP by
            // default from 3.10); removed when RACK took over in 4.11.
            early_retransmit: Some(self == Stack::Linux3_14),
            // D-SACK: Linux receivers since 2.4 (`tcp_dsack = 1`); ns-2's and ns-3.44's
            // sinks send none.
            dsack: Some(linux),
            ..o
        }
    }
}

/// The `[tcp]` table / a flow's `tcp = { ... }`: every field optional.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpOptions {
    /// Stack profile ([`Stack`]): "linux" (default), "linux-3.14", "linux-2.6.29",
    /// "ns2-sack1" or "ns3". It supplies the defaults of every other key; keys set
    /// alongside it (or in a flow's table) override single settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack: Option<Stack>,
    /// Congestion control: "cubic" (default, Linux's default), "newreno" (alias "reno"),
    /// "dctcp" or "prague" (both force ECN on, with Accurate ECN feedback).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cc: Option<CcKind>,
    /// Maximum segment size (payload bytes). Default 1448: a 1500-byte MTU minus 20 (IP),
    /// 20 (TCP) and 12 (timestamp option) bytes of headers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mss: Option<u32>,
    /// Initial congestion window in segments. Default 10 (RFC 6928, Linux TCP_INIT_CWND).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub init_cwnd: Option<u32>,
    /// Selective acknowledgements (RFC 2018) with RFC 6675 recovery. Default true
    /// (Linux `tcp_sack = 1`); false gives NewReno recovery (RFC 6582).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sack: Option<bool>,
    /// Negotiate ECN (RFC 3168) and send data as ECT(0). Default false (Linux
    /// `tcp_ecn = 2` answers ECN but does not ask for it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn: Option<bool>,
    /// "linux" (default), "ns2", "ns3" or "off"; see [`DelayedAck`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delayed_ack: Option<DelayedAck>,
    /// Floor of the retransmission timeout's variance term. Default 200 ms (Linux TCP_RTO_MIN);
    /// "1s" approximates RFC 6298's minimum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rto: Option<DurationSpec>,
    /// Retransmission timeout before any RTT sample (SYN, SYN-ACK). Default 1 s (RFC 6298,
    /// Linux TCP_TIMEOUT_INIT).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_rto: Option<DurationSpec>,
    /// Cap on the congestion window: an integer is segments, a size ("1MB") is bytes.
    /// Default: no cap beyond the receive window (Linux `snd_cwnd_clamp`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_window: Option<Limit>,
    /// Receive window the receiver advertises: an integer is segments, a size is bytes.
    /// Default "3MiB": half of Linux's largest receive buffer (tcp_rmem[2] = 6 MiB with
    /// tcp_adv_win_scale = 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcv_window: Option<Limit>,
    /// Receive-buffer autotuning: "off" (default: the window is `rcv_window` from the
    /// start), "linux", "linux-3.14" or "linux-2.6.29" (the kernel's initial window and
    /// growth, up to `rcv_window`). See [`RcvTune`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcv_autotune: Option<RcvTune>,
    /// CUBIC's hybrid slow start (ACK-train and delay detection). Default true (Linux).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hystart: Option<bool>,
    /// BBRv1's Linux version: "linux" (5.1+, default) or "linux-4.20". See [`BbrVersion`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bbr_version: Option<BbrVersion>,
    /// Proportional rate reduction (RFC 6937) during recovery and ECN reduction.
    /// Default true (Linux); false gives RFC 6675's cwnd = ssthresh at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prr: Option<bool>,
    /// Undo of window reductions found spurious (fast recovery and timeouts; by D-SACK,
    /// timestamps or F-RTO): "linux" (6.1; the `linux` default), "linux-3.14",
    /// "linux-2.6" (the `linux-2.6.29` default) or "off" (ns2-sack1, ns3). See [`Undo`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undo: Option<Undo>,
    /// Older boolean form of `undo`: false = "off", true = the profile's flavour.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rto_undo: Option<bool>,
    /// Loss detection before the RTO: "rack" (RFC 8985, Linux ≥ 4.4; the `linux`
    /// default), "fack" (Linux 2.4–4.14 with `tcp_fack = 1`; the `linux-3.14` and
    /// `linux-2.6.29` profiles) or "dupthresh" (RFC 6675; ns2-sack1, ns3). See
    /// [`LossDetection`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_detection: Option<LossDetection>,
    /// Report duplicate segments to the sender by D-SACK (RFC 2883): the receiver puts
    /// the duplicate's range first in the SACK option of the ACKs it sends until the next
    /// data segment (Linux `tcp_dsack = 1`, `tcp_dsack_set`). Default true (every Linux
    /// profile); the ns2-sack1 and ns3 profiles set false (neither sends D-SACKs). The
    /// sender uses D-SACKs to end a tail-loss-probe episode without a reduction and for
    /// D-SACK undo (`undo`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dsack: Option<bool>,
    /// The modelled kernel's timer frequency (`CONFIG_HZ`: 100, 250, 300 or 1000; default
    /// 250, the Debian and Ubuntu kernels' and the Linux engine's). Linux timers count
    /// jiffies: the tail-loss-probe and RACK reorder timeouts are rounded up to whole
    /// jiffies and padded by `TCP_TIMEOUT_MIN` (2 jiffies: 8 ms at 250 Hz, 2 ms at
    /// 1000 Hz), and 3.14's 10 ms probe floor is `msecs_to_jiffies(10)`. The RTO and the
    /// RTT estimator keep microsecond resolution (as since 3.15).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hz: Option<u32>,
    /// Tail loss probes: "linux" (as Linux 6.1; the `linux` default), "linux-3.14" (as
    /// Linux 3.10–3.x; the `linux-3.14` default) or "off" (every other profile). Needs
    /// SACK. See [`Tlp`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tlp: Option<Tlp>,
    /// RFC 5827 early retransmit with Linux's delay (`tcp_early_retrans` = 2 or 3,
    /// Linux 3.5–4.10; the `linux-3.14` default): with fewer than 4 segments out, at
    /// least one SACKed, none retransmitted and no new segment allowed out, fast
    /// retransmit starts after max(SRTT/4, 2 ms) instead of waiting for 3 SACKs or the RTO.
    /// Needs SACK.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub early_retransmit: Option<bool>,
    /// Slow-start growth: "segments" (per segment acknowledged) or "acks" (per ACK).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ss_growth: Option<SsGrowth>,
    /// Congestion-avoidance growth: "segments", "acks" or "acks-linux"; see [`CaGrowth`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_growth: Option<CaGrowth>,
    /// Window reduction in recovery: "prr", "rfc6675" or "rate-halving". `prr = false` is
    /// the older spelling of "rfc6675".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
    /// Where `min_rto` applies: "variance" (Linux) or "sum" (RFC 6298, ns-2, ns-3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rto_floor: Option<RtoFloor>,
    /// NewReno's ssthresh halves "cwnd" (Linux, ns-2) or "flight" (RFC 5681, ns-3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reno_halves: Option<RenoHalves>,
    /// How the RTO's round-trip time is measured: "ack" (every ACK, exact time; Linux,
    /// ns-3) or "ns2" (one timed segment per flight in 10 ms ticks). See [`RttTiming`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_timing: Option<RttTiming>,
    /// The timestamp option (RFC 7323) on every segment: 12 header bytes, the echo
    /// that gives RTT samples of retransmitted data and timestamp undo. Default true
    /// (Linux, ns-3); false for `ns2-sack1` (ns-2 `timestamps_ false`: 40-byte headers;
    /// the handshake's RTT is then timed from the SYN's send time, Karn's rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamps: Option<bool>,
    /// Record samples `cwnd` and `ssthresh` (bytes), `srtt` and `rto` (seconds) of the
    /// data sender. Default false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<bool>,
    /// Pace transmissions (Linux internal TCP pacing, as with `fq`): rate = cwnd × MSS
    /// / srtt × ratio. Default: on for prague, off otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pacing: Option<bool>,
    /// Pacing ratio in percent while cwnd < ssthresh / 2. Default 200
    /// (Linux `tcp_pacing_ss_ratio`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pacing_ss_ratio: Option<u32>,
    /// Pacing ratio in percent otherwise. Default 120 (Linux `tcp_pacing_ca_ratio`);
    /// prague uses 100 (its own pacing rate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pacing_ca_ratio: Option<u32>,
    /// Prague's RTT independence: "rate" (default, `RTT_CONTROL_RATE`) or "none".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_scaling: Option<RttScaling>,
    /// Prague's RTT scaling target. Default 25 ms (`prague_rtt_target`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_target: Option<DurationSpec>,
    /// Rounds after slow start before Prague becomes RTT independent. Default 4
    /// (`prague_rtt_transition`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_transition: Option<u32>,
    /// Prague's classic-ECN AQM detection and fallback (`prague_ecn_fallback = 1`).
    /// Default false (the module default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn_fallback: Option<bool>,
}

/// Parameter documentation for `aqmlab describe tcp`.
pub const TCP_PARAMS: &[ParamDoc] = &[
    ParamDoc {
        name: "stack",
        default: "linux",
        doc: "stack profile: linux, linux-3.14, linux-2.6.29, ns2-sack1 or ns3; it sets the defaults of the keys below (the defaults shown are linux's), keys set next to it override",
    },
    ParamDoc {
        name: "cc",
        default: "cubic",
        doc: "congestion control: cubic (Linux default), newreno (alias reno), dctcp, prague, bbr (BBRv1 as Linux tcp_bbr, 5.1+ or 4.20 by bbr_version: gains 2.885/1.25/0.75, 10-round bw and 10 s RTprop filters, PROBE_RTT 200 ms at 4 segments) or bbr3 (BBRv3 as draft-ietf-ccwg-bbr / Google v3: loss threshold 2 %, beta 0.7, headroom 0.15, startup gain 2.77); aqmlab describe NAME for each",
    },
    ParamDoc {
        name: "mss",
        default: "1448",
        doc: "maximum segment size in bytes; IP packet = mss + 52 (IP, TCP, timestamps)",
    },
    ParamDoc {
        name: "init_cwnd",
        default: "10",
        doc: "initial window in segments (RFC 6928, Linux)",
    },
    ParamDoc {
        name: "sack",
        default: "true",
        doc: "SACK with RFC 6675 recovery; false = NewReno (RFC 6582)",
    },
    ParamDoc {
        name: "ecn",
        default: "false",
        doc: "negotiate ECN (RFC 3168); data sent as ECT(0)",
    },
    ParamDoc {
        name: "delayed_ack",
        default: "linux",
        doc: "linux (2 segments / 40 ms, quick-ack), ns2 (2 segments / 100 ms), ns3 (2 segments / 200 ms) or off",
    },
    ParamDoc {
        name: "min_rto",
        default: "200ms",
        doc: "floor of the RTO variance term (Linux TCP_RTO_MIN)",
    },
    ParamDoc {
        name: "initial_rto",
        default: "1s",
        doc: "RTO before the first RTT sample (RFC 6298)",
    },
    ParamDoc {
        name: "max_window",
        default: "none",
        doc: "cwnd cap: integer = segments, size = bytes",
    },
    ParamDoc {
        name: "rcv_window",
        default: "3MiB",
        doc: "advertised receive window: integer = segments, size = bytes",
    },
    ParamDoc {
        name: "rcv_autotune",
        default: "off",
        doc: "receive-buffer autotuning: off (rcv_window from the start), linux (4.19-6.5: first window ~64 KB), linux-3.14 (3.4-4.18: 10 segments), linux-2.6.29 (4 segments); then Linux's tcp_grow_window and dynamic right-sizing up to rcv_window",
    },
    ParamDoc {
        name: "hystart",
        default: "true",
        doc: "CUBIC hybrid slow start (Linux default on)",
    },
    ParamDoc {
        name: "bbr_version",
        default: "linux",
        doc: "which Linux BBRv1 cc = \"bbr\" follows: linux (5.1-6.x: ACK-aggregation allowance extra_acked in the cwnd target, +2 segments only in the probing phase) or linux-4.20 (neither)",
    },
    ParamDoc {
        name: "prr",
        default: "true",
        doc: "proportional rate reduction (RFC 6937, Linux)",
    },
    ParamDoc {
        name: "undo",
        default: "linux",
        doc: "undo spurious fast recoveries and timeouts (D-SACKs of every retransmission, timestamp echo older than the first retransmission, F-RTO): linux (as 6.1), linux-3.14, linux-2.6 (profile linux-2.6.29) or off (ns2-sack1, ns3)",
    },
    ParamDoc {
        name: "rto_undo",
        default: "true",
        doc: "older boolean form of undo: false = off, true = the profile's undo",
    },
    ParamDoc {
        name: "loss_detection",
        default: "rack",
        doc: "rack (RFC 8985 time-based, detects lost retransmissions; Linux >= 4.4, profile linux), fack (Linux 2.4-4.14 tcp_fack = 1: recovery once the highest SACK is > 3 segments above snd_una, lost retransmissions found when later data is SACKed; linux-3.14, linux-2.6.29) or dupthresh (RFC 6675, 3 SACKed segments above; ns2-sack1, ns3); rack and fack need sack",
    },
    ParamDoc {
        name: "dsack",
        default: "true",
        doc: "receiver reports duplicate segments by D-SACK (RFC 2883, Linux tcp_dsack); the sender uses it to end a loss-probe episode without reduction and for D-SACK undo; false in ns2-sack1/ns3",
    },
    ParamDoc {
        name: "early_retransmit",
        default: "false",
        doc: "RFC 5827 early retransmit with Linux's max(SRTT/4, 2 ms) delay (Linux 3.5-4.10; true in linux-3.14): fewer than 4 segments out, one SACKed, nothing new allowed out -> fast retransmit; needs sack",
    },
    ParamDoc {
        name: "hz",
        default: "250",
        doc: "kernel timer frequency CONFIG_HZ (100, 250, 300, 1000; Debian/Ubuntu 250): loss-probe and RACK reorder timeouts are whole jiffies plus TCP_TIMEOUT_MIN = 2 jiffies",
    },
    ParamDoc {
        name: "tlp",
        default: "linux",
        doc: "tail loss probe after ~2 SRTT (RFC 8985 section 7): linux (as 6.1), linux-3.14 (as 3.10-3.x, profile linux-3.14) or off (linux-2.6.29, ns2-sack1, ns3); needs sack",
    },
    ParamDoc {
        name: "ss_growth",
        default: "segments",
        doc: "slow start: segments (+1 per segment acknowledged, Linux >= 3.13) or acks (+1 per ACK: Linux <= 3.12, ns-2, ns-3 NewReno)",
    },
    ParamDoc {
        name: "ca_growth",
        default: "segments",
        doc: "congestion avoidance: segments (Linux >= 4.0), acks (1/cwnd per ACK: ns-2, ns-3 NewReno) or acks-linux (Linux < 4.0: +1 per cwnd+1 ACKs, CUBIC delayed-ACK ratio)",
    },
    ParamDoc {
        name: "recovery",
        default: "prr",
        doc: "prr (RFC 6937, Linux >= 3.2), rfc6675 (cwnd = ssthresh; ns-2 Sack1, ns-3 classic) or rate-halving (Linux < 3.2)",
    },
    ParamDoc {
        name: "rto_floor",
        default: "variance",
        doc: "min_rto floors the variance term (Linux) or the whole RTO (sum: RFC 6298, ns-2, ns-3)",
    },
    ParamDoc {
        name: "reno_halves",
        default: "cwnd",
        doc: "NewReno ssthresh = max(2, X/2) with X = cwnd (Linux, ns-2) or flight (RFC 5681, ns-3 TcpNewReno)",
    },
    ParamDoc {
        name: "timestamps",
        default: "true",
        doc: "the timestamp option on every segment (RFC 7323): packets are mss + 52 bytes, the echo gives RTT samples of retransmitted data and timestamp undo; false: mss + 40 bytes, neither (profile ns2-sack1, ns-2 timestamps_ false)",
    },
    ParamDoc {
        name: "rtt_timing",
        default: "ack",
        doc: "RTT for the RTO: ack (every ACK of new data, exact time: Linux, ns-3) or ns2 (one timed segment per flight in 10 ms ticks, backoff kept until it is acknowledged: ns-2 TcpAgent without timestamps; profile ns2-sack1)",
    },
    ParamDoc {
        name: "trace",
        default: "false",
        doc: "record cwnd, ssthresh (bytes), srtt, rto (s) samples of the sender",
    },
    ParamDoc {
        name: "pacing",
        default: "prague: true, else false",
        doc: "pace segments at cwnd/srtt x ratio (Linux internal pacing / fq)",
    },
    ParamDoc {
        name: "pacing_ss_ratio",
        default: "200",
        doc: "pacing ratio % while cwnd < ssthresh/2 (Linux tcp_pacing_ss_ratio)",
    },
    ParamDoc {
        name: "pacing_ca_ratio",
        default: "120 (prague 100)",
        doc: "pacing ratio % otherwise (Linux tcp_pacing_ca_ratio)",
    },
    ParamDoc {
        name: "rtt_scaling",
        default: "rate",
        doc: "prague RTT independence: rate (RTT_CONTROL_RATE) or none",
    },
    ParamDoc {
        name: "rtt_target",
        default: "25ms",
        doc: "prague RTT scaling target (prague_rtt_target)",
    },
    ParamDoc {
        name: "rtt_transition",
        default: "4",
        doc: "prague rounds after slow start before RTT independence applies",
    },
    ParamDoc {
        name: "ecn_fallback",
        default: "false",
        doc: "prague classic-ECN AQM detection and fallback (prague_ecn_fallback = 1)",
    },
];

/// A resolved TCP configuration.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TcpConfig {
    pub cc: CcKind,
    pub mss: u32,
    pub init_cwnd: u32,
    pub sack: bool,
    pub ecn: bool,
    pub delayed_ack: DelayedAck,
    pub min_rto: SimDuration,
    pub initial_rto: SimDuration,
    /// Congestion-window cap in segments.
    pub max_cwnd: u32,
    /// Advertised receive window in bytes.
    pub rcv_window: u32,
    pub rcv_autotune: RcvTune,
    pub hystart: bool,
    pub bbr_version: BbrVersion,
    /// `recovery == Recovery::Prr`.
    pub prr: bool,
    pub undo: Undo,
    pub loss_detection: LossDetection,
    pub tlp: Tlp,
    /// RFC 5827 early retransmit (Linux 3.5–4.10 `tcp_early_retrans`).
    pub early_retransmit: bool,
    pub dsack: bool,
    /// Kernel timer frequency (jiffies per second).
    pub hz: u32,
    pub recovery: Recovery,
    pub stack: Stack,
    pub ss_growth: SsGrowth,
    pub ca_growth: CaGrowth,
    pub rto_floor: RtoFloor,
    pub reno_halves: RenoHalves,
    pub rtt_timing: RttTiming,
    pub timestamps: bool,
    pub trace: bool,
    pub pacing: bool,
    pub pacing_ss_ratio: u32,
    pub pacing_ca_ratio: u32,
    pub rtt_scaling: RttScaling,
    pub rtt_target: SimDuration,
    pub rtt_transition: u32,
    pub ecn_fallback: bool,
}

/// Effectively unlimited window cap (segments).
pub const NO_CWND_CAP: u32 = u32::MAX / 4;
const DEFAULT_RCV_WINDOW: u32 = 3 * 1024 * 1024;

impl Default for TcpConfig {
    fn default() -> Self {
        TcpOptions::default()
            .resolve("tcp")
            .expect("built-in defaults are valid")
    }
}

impl TcpConfig {
    /// IP + TCP header bytes of a segment without SACK blocks: 52 with the timestamp
    /// option, 40 without.
    pub fn header_bytes(&self) -> u32 {
        if self.timestamps {
            HEADER_BYTES
        } else {
            HEADER_BYTES_NO_TS
        }
    }
}

impl TcpOptions {
    /// No field set.
    pub fn is_empty(&self) -> bool {
        *self == TcpOptions::default()
    }

    /// `over`'s fields where set, else `self`'s.
    pub fn merged(&self, over: &TcpOptions) -> TcpOptions {
        TcpOptions {
            stack: over.stack.or(self.stack),
            cc: over.cc.or(self.cc),
            mss: over.mss.or(self.mss),
            init_cwnd: over.init_cwnd.or(self.init_cwnd),
            sack: over.sack.or(self.sack),
            ecn: over.ecn.or(self.ecn),
            delayed_ack: over.delayed_ack.or(self.delayed_ack),
            min_rto: over.min_rto.or(self.min_rto),
            initial_rto: over.initial_rto.or(self.initial_rto),
            max_window: over.max_window.or(self.max_window),
            rcv_window: over.rcv_window.or(self.rcv_window),
            rcv_autotune: over.rcv_autotune.or(self.rcv_autotune),
            hystart: over.hystart.or(self.hystart),
            bbr_version: over.bbr_version.or(self.bbr_version),
            prr: over.prr.or(self.prr),
            undo: over.undo.or(self.undo),
            rto_undo: over.rto_undo.or(self.rto_undo),
            loss_detection: over.loss_detection.or(self.loss_detection),
            tlp: over.tlp.or(self.tlp),
            early_retransmit: over.early_retransmit.or(self.early_retransmit),
            dsack: over.dsack.or(self.dsack),
            hz: over.hz.or(self.hz),
            ss_growth: over.ss_growth.or(self.ss_growth),
            ca_growth: over.ca_growth.or(self.ca_growth),
            recovery: over.recovery.or(self.recovery),
            rto_floor: over.rto_floor.or(self.rto_floor),
            reno_halves: over.reno_halves.or(self.reno_halves),
            rtt_timing: over.rtt_timing.or(self.rtt_timing),
            timestamps: over.timestamps.or(self.timestamps),
            trace: over.trace.or(self.trace),
            pacing: over.pacing.or(self.pacing),
            pacing_ss_ratio: over.pacing_ss_ratio.or(self.pacing_ss_ratio),
            pacing_ca_ratio: over.pacing_ca_ratio.or(self.pacing_ca_ratio),
            rtt_scaling: over.rtt_scaling.or(self.rtt_scaling),
            rtt_target: over.rtt_target.or(self.rtt_target),
            rtt_transition: over.rtt_transition.or(self.rtt_transition),
            ecn_fallback: over.ecn_fallback.or(self.ecn_fallback),
        }
    }

    /// Fills in defaults and checks every value; `field` is the table's path for errors
    /// (`tcp` or `flow[2].tcp`).
    pub fn resolve(&self, field: &str) -> Result<TcpConfig, ScenarioError> {
        let bad = |k: &str, v: String, allowed: &str| {
            ScenarioError::new(
                format!("{field}.{k}"),
                format!("{v} is not allowed ({allowed})"),
            )
        };
        // `prr` is the older spelling of `recovery`: an explicit key beats the profile.
        let recovery = match (self.recovery, self.prr) {
            (Some(r), Some(p)) if (r == Recovery::Prr) != p => {
                return Err(bad(
                    "prr",
                    p.to_string(),
                    &format!(
                        "contradicts recovery = \"{}\"; set only one of the two",
                        match r {
                            Recovery::Prr => "prr",
                            Recovery::Rfc6675 => "rfc6675",
                            Recovery::RateHalving => "rate-halving",
                        }
                    ),
                ))
            }
            (Some(r), _) => Some(r),
            (None, Some(true)) => Some(Recovery::Prr),
            (None, Some(false)) => Some(Recovery::Rfc6675),
            (None, None) => None,
        };
        let hz = self.hz.unwrap_or(250);
        if ![100, 250, 300, 1000].contains(&hz) {
            return Err(bad(
                "hz",
                hz.to_string(),
                "CONFIG_HZ: 100, 250, 300 or 1000",
            ));
        }
        // `rto_undo` is the older boolean form of `undo`: false beats the profile, true
        // keeps the profile's flavour.
        let undo = match (self.undo, self.rto_undo) {
            (Some(u), Some(r)) if (u != Undo::Off) != r => {
                return Err(bad(
                    "rto_undo",
                    r.to_string(),
                    &format!(
                        "contradicts undo = \"{}\"; set only undo (\"off\", \"linux-2.6\", \"linux-3.14\" or \"linux\")",
                        u.name()
                    ),
                ))
            }
            (Some(u), _) => Some(u),
            (None, Some(false)) => Some(Undo::Off),
            (None, _) => None,
        };
        let stack = self.stack.unwrap_or(Stack::Linux);
        let o = stack.options().merged(&TcpOptions {
            recovery,
            prr: None,
            undo,
            rto_undo: None,
            ..self.clone()
        });
        let undo = o.undo.unwrap_or(Undo::Linux);
        if self.rto_undo == Some(true) && undo == Undo::Off {
            return Err(bad(
                "rto_undo",
                "true".into(),
                &format!(
                    "profile {} undoes nothing; set undo = \"linux-2.6\", \"linux-3.14\" or \"linux\"",
                    stack.name()
                ),
            ));
        }
        let recovery = o.recovery.unwrap_or(Recovery::Prr);
        let mss = o.mss.unwrap_or(1448);
        if !(64..=65_000).contains(&mss) {
            return Err(bad("mss", mss.to_string(), "64 to 65000 bytes"));
        }
        let init_cwnd = o.init_cwnd.unwrap_or(10);
        if !(1..=10_000).contains(&init_cwnd) {
            return Err(bad(
                "init_cwnd",
                init_cwnd.to_string(),
                "1 to 10000 segments",
            ));
        }
        let min_rto = o
            .min_rto
            .map(|d| d.0)
            .unwrap_or(SimDuration::from_millis(200));
        if min_rto < SimDuration::from_millis(1) || min_rto > SimDuration::from_secs(60) {
            return Err(bad("min_rto", min_rto.to_string(), "1ms to 60s"));
        }
        let initial_rto = o
            .initial_rto
            .map(|d| d.0)
            .unwrap_or(SimDuration::from_secs(1));
        if initial_rto < SimDuration::from_millis(1) || initial_rto > SimDuration::from_secs(120) {
            return Err(bad("initial_rto", initial_rto.to_string(), "1ms to 120s"));
        }
        let max_cwnd = match o.max_window {
            None => NO_CWND_CAP,
            Some(Limit::Packets(n)) => n.min(NO_CWND_CAP),
            Some(Limit::Bytes(b)) => {
                if b < mss as u64 {
                    return Err(bad(
                        "max_window",
                        format!("{b}B"),
                        &format!("at least one segment ({mss} bytes)"),
                    ));
                }
                (b / mss as u64).min(NO_CWND_CAP as u64) as u32
            }
        };
        if max_cwnd < 1 {
            return Err(bad(
                "max_window",
                max_cwnd.to_string(),
                "at least 1 segment",
            ));
        }
        let rcv_window = match o.rcv_window {
            None => DEFAULT_RCV_WINDOW as u64,
            Some(Limit::Packets(n)) => n as u64 * mss as u64,
            Some(Limit::Bytes(b)) => b,
        };
        if rcv_window < mss as u64 || rcv_window > u32::MAX as u64 {
            return Err(bad(
                "rcv_window",
                format!("{rcv_window}B"),
                &format!("one segment ({mss} bytes) to 4 GiB"),
            ));
        }
        let cc = o.cc.unwrap_or(CcKind::Cubic);
        let pacing_ss_ratio = o.pacing_ss_ratio.unwrap_or(200);
        let pacing_ca_ratio =
            o.pacing_ca_ratio
                .unwrap_or(if cc == CcKind::Prague { 100 } else { 120 });
        for (k, v) in [
            ("pacing_ss_ratio", pacing_ss_ratio),
            ("pacing_ca_ratio", pacing_ca_ratio),
        ] {
            if !(10..=1000).contains(&v) {
                return Err(bad(k, v.to_string(), "10 to 1000 percent"));
            }
        }
        let rtt_target = self
            .rtt_target
            .map(|d| d.0)
            .unwrap_or(SimDuration::from_millis(25));
        if rtt_target > SimDuration::from_millis(100) {
            // Prague caps scaled RTTs at MAX_SCALED_RTT = 100 ms.
            return Err(bad("rtt_target", rtt_target.to_string(), "0 to 100ms"));
        }
        Ok(TcpConfig {
            cc,
            pacing: o.pacing.unwrap_or(cc.paced_by_default()),
            pacing_ss_ratio,
            pacing_ca_ratio,
            rtt_scaling: o.rtt_scaling.unwrap_or(RttScaling::Rate),
            rtt_target,
            rtt_transition: o.rtt_transition.unwrap_or(4),
            ecn_fallback: o.ecn_fallback.unwrap_or(false),
            mss,
            init_cwnd,
            sack: o.sack.unwrap_or(true),
            ecn: o.ecn.unwrap_or(false) || cc.needs_accecn(),
            delayed_ack: o.delayed_ack.unwrap_or(DelayedAck::Linux),
            min_rto,
            initial_rto,
            max_cwnd,
            rcv_window: rcv_window as u32,
            rcv_autotune: o.rcv_autotune.unwrap_or(RcvTune::Off),
            hystart: o.hystart.unwrap_or(true),
            bbr_version: o.bbr_version.unwrap_or(BbrVersion::Linux),
            prr: recovery == Recovery::Prr,
            undo,
            loss_detection: o.loss_detection.unwrap_or(LossDetection::Rack),
            tlp: o.tlp.unwrap_or(Tlp::Linux),
            early_retransmit: o.early_retransmit.unwrap_or(false),
            dsack: o.dsack.unwrap_or(true),
            hz,
            recovery,
            stack,
            ss_growth: o.ss_growth.unwrap_or(SsGrowth::Segments),
            ca_growth: o.ca_growth.unwrap_or(CaGrowth::Segments),
            rto_floor: o.rto_floor.unwrap_or(RtoFloor::Variance),
            reno_halves: o.reno_halves.unwrap_or(RenoHalves::Cwnd),
            rtt_timing: o.rtt_timing.unwrap_or(RttTiming::Ack),
            timestamps: o.timestamps.unwrap_or(true),
            trace: o.trace.unwrap_or(false),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_merge_and_errors() {
        let d = TcpConfig::default();
        assert_eq!(
            (d.cc, d.mss, d.init_cwnd, d.sack, d.ecn),
            (CcKind::Cubic, 1448, 10, true, false)
        );
        assert_eq!(d.min_rto, SimDuration::from_millis(200));
        assert_eq!(d.initial_rto, SimDuration::from_secs(1));
        assert_eq!(d.rcv_window, 3 * 1024 * 1024);
        let scen: TcpOptions =
            toml::from_str("cc = \"reno\"\nmss = 1000\nmax_window = \"10KB\"").unwrap();
        let flow: TcpOptions = toml::from_str("ecn = true\ndelayed_ack = \"ns2\"").unwrap();
        let c = scen.merged(&flow).resolve("flow[0].tcp").unwrap();
        assert_eq!(
            (c.cc, c.mss, c.ecn, c.delayed_ack, c.max_cwnd),
            (CcKind::NewReno, 1000, true, DelayedAck::Ns2, 10)
        );
        let over: TcpOptions = toml::from_str("cc = \"cubic\"").unwrap();
        assert_eq!(scen.merged(&over).resolve("x").unwrap().cc, CcKind::Cubic);
        let e = TcpOptions {
            mss: Some(10),
            ..Default::default()
        }
        .resolve("flow[1].tcp")
        .unwrap_err();
        assert_eq!(e.field, "flow[1].tcp.mss");
        assert!(
            e.message.contains("10") && e.message.contains("64 to 65000"),
            "{}",
            e.message
        );
        assert!(toml::from_str::<TcpOptions>("cc = \"vegas\"").is_err());
        assert!(toml::from_str::<TcpOptions>("sacks = true").is_err());
        let e = TcpOptions {
            rcv_window: Some(Limit::Bytes(100)),
            ..Default::default()
        }
        .resolve("tcp")
        .unwrap_err();
        assert_eq!(e.field, "tcp.rcv_window");
    }

    #[test]
    fn stack_profiles_and_single_key_overrides() {
        let r = |t: &str| toml::from_str::<TcpOptions>(t).unwrap().resolve("tcp");
        // The default profile is today's behaviour.
        let d = r("").unwrap();
        assert_eq!(d, r("stack = \"linux\"").unwrap());
        assert_eq!(
            (d.ss_growth, d.ca_growth, d.recovery, d.rto_floor, d.prr),
            (
                SsGrowth::Segments,
                CaGrowth::Segments,
                Recovery::Prr,
                RtoFloor::Variance,
                true
            )
        );
        let o = r("stack = \"linux-2.6.29\"").unwrap();
        assert_eq!(
            (o.cc, o.init_cwnd, o.initial_rto),
            (CcKind::Cubic, 3, SimDuration::from_secs(3))
        );
        assert_eq!(
            (o.ss_growth, o.ca_growth, o.recovery),
            (SsGrowth::Acks, CaGrowth::AcksLinux, Recovery::RateHalving)
        );
        assert!(!o.prr);
        let n = r("stack = \"ns2-sack1\"\nmss = 1460").unwrap();
        assert_eq!(
            (n.cc, n.init_cwnd, n.delayed_ack, n.rcv_window),
            (CcKind::NewReno, 2, DelayedAck::Ns2, 10_000 * 1460)
        );
        assert_eq!(
            (n.min_rto, n.rto_floor, n.hystart),
            (SimDuration::from_millis(200), RtoFloor::Sum, false)
        );
        // ns-2 agents carry no timestamp option and time one segment per flight.
        assert_eq!(
            (n.timestamps, n.header_bytes(), n.rtt_timing),
            (false, 40, RttTiming::Ns2)
        );
        assert_eq!(
            (d.timestamps, d.header_bytes(), d.rtt_timing),
            (true, 52, RttTiming::Ack)
        );
        let t = r("stack = \"ns3\"").unwrap();
        assert_eq!(
            (t.reno_halves, d.reno_halves),
            (RenoHalves::Flight, RenoHalves::Cwnd)
        );
        assert_eq!(
            (t.delayed_ack, t.min_rto, t.rcv_window, t.recovery),
            (
                DelayedAck::Ns3,
                SimDuration::from_secs(1),
                131_072,
                Recovery::Rfc6675
            )
        );
        let l = r("stack = \"linux-3.14\"").unwrap();
        assert_eq!(
            (l.ss_growth, l.ca_growth, l.recovery, l.init_cwnd),
            (SsGrowth::Segments, CaGrowth::AcksLinux, Recovery::Prr, 10)
        );
        // A single key overrides its profile setting and nothing else.
        let o2 = r("stack = \"linux-2.6.29\"\ninit_cwnd = 4").unwrap();
        assert_eq!(o2, TcpConfig { init_cwnd: 4, ..o });
        // `prr = true` is the older spelling of recovery = "prr" and beats the profile.
        let p = r("stack = \"linux-2.6.29\"\nprr = true").unwrap();
        assert_eq!((p.recovery, p.prr), (Recovery::Prr, true));
        // A flow table's profile applies under the scenario's single keys.
        let scen: TcpOptions = toml::from_str("init_cwnd = 5").unwrap();
        let flow: TcpOptions = toml::from_str("stack = \"ns3\"").unwrap();
        let c = scen.merged(&flow).resolve("flow[0].tcp").unwrap();
        assert_eq!(
            (c.stack, c.init_cwnd, c.delayed_ack),
            (Stack::Ns3, 5, DelayedAck::Ns3)
        );
        // Contradictions and unknown profiles are errors naming the key.
        let e = r("recovery = \"rfc6675\"\nprr = true").unwrap_err();
        assert_eq!(e.field, "tcp.prr");
        assert!(e.message.contains("rfc6675"), "{}", e.message);
        let e = toml::from_str::<TcpOptions>("stack = \"linux-4.19\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("linux-2.6.29") && e.contains("ns2-sack1"), "{e}");
        // Loss detection and tail loss probes per profile (RACK-TLP in 6.1, TLP since
        // 3.10, neither in 2.6.29, ns-2 or ns-3), and single-key overrides.
        for (name, ld, tlp) in [
            ("linux", LossDetection::Rack, Tlp::Linux),
            ("linux-3.14", LossDetection::Fack, Tlp::Linux3_14),
            ("linux-2.6.29", LossDetection::Fack, Tlp::Off),
            ("ns2-sack1", LossDetection::Dupthresh, Tlp::Off),
            ("ns3", LossDetection::Dupthresh, Tlp::Off),
        ] {
            let c = r(&format!("stack = \"{name}\"")).unwrap();
            assert_eq!((c.loss_detection, c.tlp), (ld, tlp), "{name}");
        }
        for (name, d) in [
            ("linux", true),
            ("linux-2.6.29", true),
            ("ns2-sack1", false),
            ("ns3", false),
        ] {
            assert_eq!(
                r(&format!("stack = \"{name}\"")).unwrap().dsack,
                d,
                "{name}"
            );
        }
        // Undo flavour per profile; `rto_undo` is its older boolean form.
        for (name, u) in [
            ("linux", Undo::Linux),
            ("linux-3.14", Undo::Linux3_14),
            ("linux-2.6.29", Undo::Linux2_6),
            ("ns2-sack1", Undo::Off),
            ("ns3", Undo::Off),
        ] {
            assert_eq!(r(&format!("stack = \"{name}\"")).unwrap().undo, u, "{name}");
        }
        let u = |t: &str| r(t).map(|c| c.undo);
        assert_eq!(u("stack = \"linux-3.14\"\nrto_undo = false"), Ok(Undo::Off));
        assert_eq!(
            u("stack = \"linux-3.14\"\nrto_undo = true"),
            Ok(Undo::Linux3_14)
        );
        assert_eq!(u("stack = \"ns3\"\nundo = \"linux\""), Ok(Undo::Linux));
        let e = r("stack = \"ns3\"\nrto_undo = true").unwrap_err();
        assert!(
            e.field == "tcp.rto_undo" && e.message.contains("undo ="),
            "{e:?}"
        );
        let e = r("undo = \"linux\"\nrto_undo = false").unwrap_err();
        assert!(
            e.field == "tcp.rto_undo" && e.message.contains("linux-2.6"),
            "{e:?}"
        );
        let e = toml::from_str::<TcpOptions>("undo = \"on\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("linux-2.6") && e.contains("off"), "{e}");
        let c = r("stack = \"ns3\"\nloss_detection = \"rack\"\ntlp = \"linux-3.14\"").unwrap();
        assert_eq!(
            (c.loss_detection, c.tlp),
            (LossDetection::Rack, Tlp::Linux3_14)
        );
        let e = toml::from_str::<TcpOptions>("tlp = true")
            .unwrap_err()
            .to_string();
        assert!(e.contains("tlp"), "{e}");
        let e = toml::from_str::<TcpOptions>("tlp = \"on\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("off") && e.contains("linux-3.14"), "{e}");
        let e = toml::from_str::<TcpOptions>("loss_detection = \"sack\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("rack") && e.contains("dupthresh") && e.contains("fack"),
            "{e}"
        );
        // Every profile is listed for `aqmlab describe tcp` and resolves.
        for (name, _) in STACKS {
            let c = r(&format!("stack = \"{name}\"")).unwrap();
            assert_eq!(c.stack.name(), *name);
        }
    }
}
