//! The stack profiles: each a fully set `[tcp]` table of one real implementation.

use super::options::*;
use super::{CcKind, TcpOptions, DEFAULT_RCV_WINDOW};
use crate::time::SimDuration;
use crate::units::{DurationSpec, Limit};
use serde::{Deserialize, Serialize};

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
        let halves = if self == Stack::Ns3 {
            RenoHalves::Flight
        } else {
            RenoHalves::Cwnd
        };
        let o = self.base_options();
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

    /// The keys every profile sets through the same constructor: control, initial
    /// window, growth, recovery, delayed ACK, RTO bounds and floor, HyStart, receive window.
    fn base_options(self) -> TcpOptions {
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
        match self {
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
        }
    }
}
