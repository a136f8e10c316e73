//! The `[tcp]` table ([`TcpOptions`], every field optional), the kinds of value its keys
//! take, and its parameter documentation ([`TCP_PARAMS`]).

use super::{CcKind, Stack};
use crate::params::ParamDoc;
use crate::units::{DurationSpec, Limit};
use serde::{Deserialize, Serialize};

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
    /// Every ACK of new data gives a sample (Karn's rule on the segments' send times;
    /// an ACK covering a retransmission is timed by SACKed segments or the timestamp
    /// echo, Linux `tcp_clean_rtx_queue`), in exact
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
    /// GSO/TSO super-packets and their pacing per skb ([`crate::tcp::gso`]): "on"
    /// builds skbs of `tcp_tso_autosize` segments (the rule of the profile's kernel);
    /// "off" (default) sends one segment per packet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gso: Option<crate::tcp::gso::Gso>,
    /// TCP Small Queues with GSO ([`crate::tcp::gso::tsq_limit`]): the socket waits for
    /// TX completions at its host's first link once its limit of bytes sit below it.
    /// Default: on when `gso = "on"`; needs it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tsq: Option<bool>,
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
    ParamDoc {
        name: "gso",
        default: "off",
        doc: "on: GSO super-packets of tcp_tso_autosize segments (linux: pacing rate >> 10 (~1 ms) plus the min-RTT term, >= 2 segments, <= 64 KB; linux-3.14: pacing rate / 2000), paced per skb; needs stack linux or linux-3.14; off: one segment per packet",
    },
    ParamDoc {
        name: "tsq",
        default: "true with gso = \"on\"",
        doc: "TCP Small Queues (needs gso = \"on\"): the socket sends no new skb while more than max(2 skbs, pacing rate >> 10) bytes of its skbs sit in its host's first link (linux: at most 1 MiB unless paced, doubled for retransmissions; linux-3.14: max(128 KiB, pacing rate >> 10)); it sends again when one leaves that link or is dropped there; bulk flows only",
    },
];

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
            gso: over.gso.or(self.gso),
            tsq: over.tsq.or(self.tsq),
        }
    }
}
