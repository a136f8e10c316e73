//! Hand-driven sender traces: the test plays the network and the receiver.
use super::*;
use crate::packet::SackBlock;
use crate::tcp::config::{CcKind, TcpOptions};

/// What every arriving segment reads lies in the sender's first three cache lines, the
/// per-ACK fields of a data sender in the fourth (the control's variant after them);
/// each part starts on a line of its own with its per-ACK fields first.
#[test]
fn layout_puts_the_per_ack_fields_first() {
    use std::mem::{align_of, offset_of, size_of};
    let line = |off: usize| off / 64;
    assert_eq!(align_of::<Sender>(), 64);
    let every_segment = [
        (0, offset_of!(Sender, snd_una)),
        (0, offset_of!(Sender, snd_nxt)),
        (0, offset_of!(Sender, write_end)),
        (0, offset_of!(Sender, rwnd)),
        (0, offset_of!(Sender, rto_deadline)),
        (0, offset_of!(Sender, tlp_high_seq)),
        (0, offset_of!(Sender, undo_marker)),
        (0, offset_of!(Sender, delivered)),
        (1, offset_of!(Sender, app_limited)),
        (1, offset_of!(Sender, retrans_stamp)),
        (1, offset_of!(Sender, min_rtt)),
        (1, offset_of!(Sender, w) + size_of::<Window>() - 1),
        (2, offset_of!(Sender, reno_sacked)),
        (2, offset_of!(Sender, burst_sent)),
        (2, offset_of!(Sender, max_packets_out)),
        (2, offset_of!(Sender, mss)),
        (2, offset_of!(Sender, hdr)),
        (2, offset_of!(Sender, established)),
        (2, offset_of!(Sender, state)),
        (2, offset_of!(Sender, fin_sent)),
        (2, offset_of!(Sender, fin_requested)),
        (2, offset_of!(Sender, rack)),
        (2, offset_of!(Sender, pacing)),
        (2, offset_of!(Sender, pace_blocked)),
        (2, offset_of!(Sender, probe)),
        (2, offset_of!(Sender, tsq)),
        (2, offset_of!(Sender, gso)),
        (2, offset_of!(Sender, tlp)),
        (2, offset_of!(Sender, undo)),
        (2, offset_of!(Sender, prior_cwnd)),
        (3, offset_of!(Sender, jiffy)),
        (3, offset_of!(Sender, lsndtime)),
        (3, offset_of!(Sender, cwnd_usage_seq)),
        (3, offset_of!(Sender, delivered_time)),
        (3, offset_of!(Sender, first_tx)),
        (3, offset_of!(Sender, delivered_ce)),
        (3, offset_of!(Sender, prr_out)),
        (3, offset_of!(Sender, high_seq)),
        (4, offset_of!(Sender, cc)),
    ];
    for (l, off) in every_segment {
        assert_eq!(line(off), l, "offset {off}");
    }
    // the parts: each 64-byte aligned (their inner order: their own tests)
    for off in [
        offset_of!(Sender, rtt),
        offset_of!(Sender, sb),
        offset_of!(Sender, stats),
    ] {
        assert_eq!(off % 64, 0, "offset {off}");
    }
    let st = offset_of!(Sender, stats);
    for off in [
        offset_of!(SenderStats, acks),
        offset_of!(SenderStats, cwnd_sum),
        offset_of!(SenderStats, bytes_acked),
        offset_of!(SenderStats, rtt_samples),
        offset_of!(SenderStats, srtt_sum),
        offset_of!(SenderStats, segs_sent),
        offset_of!(SenderStats, retransmits),
        offset_of!(SenderStats, lost_retransmits),
    ] {
        assert_eq!(line(st + off), line(st), "offset {off}");
    }
    // the cold rest follows the parts
    assert!(offset_of!(Sender, rtt_timed) > st);
    assert!(offset_of!(Sender, skb_bytes) > st);
    assert!(offset_of!(Sender, wstamp) > st);
}

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
/// Every stack profile, for the tests that compare a fast path with the general one.
const STACKS: [crate::tcp::Stack; 5] = [
    crate::tcp::Stack::Linux,
    crate::tcp::Stack::Linux3_14,
    crate::tcp::Stack::Linux2_6_29,
    crate::tcp::Stack::Ns2Sack1,
    crate::tcp::Stack::Ns3,
];
/// The resolved configuration of `stack` with congestion control `cc` and segments of
/// `MSS` bytes.
fn stack_config(stack: crate::tcp::Stack, cc: CcKind) -> TcpConfig {
    TcpOptions {
        mss: Some(MSS as u32),
        stack: Some(stack),
        cc: Some(cc),
        ..Default::default()
    }
    .resolve("tcp")
    .unwrap()
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
fn karn_a_partial_ack_over_a_retransmission_times_by_the_echo_only() {
    // Segments 0..=9 sent at 100 ms (SRTT 100 ms from the handshake); segment 0 lost,
    // three duplicate ACKs, segment 0 resent at 202 ms. At 300 ms the ACK of 0..=2
    // arrives: it covers the retransmission, so the never-resent 1 and 2 (sent at
    // 100 ms, 200 ms ago) give no sample (Linux FLAG_RETRANS_DATA_ACKED).
    let srtt_after = |ts_ecr: SimTime| {
        let mut s = sender(cfg(|o| o.sack = Some(false)), false);
        drain(&mut s, ms(100));
        for k in 0..3 {
            s.on_ack(ms(200 + k), &ack(0, &[]), false);
            drain(&mut s, ms(200 + k));
        }
        assert_eq!(s.state, CaState::Recovery);
        let mut h = ack(3, &[]);
        h.ts_ecr = ts_ecr;
        s.on_ack(ms(300), &h, false);
        s.rtt.srtt()
    };
    // Without timestamps SRTT stays 100 ms.
    assert_eq!(
        srtt_after(SimTime::ZERO),
        Some(SimDuration::from_millis(100))
    );
    // With them the echo is the retransmission's (RFC 7323 §4.3): a 98 ms sample,
    // SRTT = 100 + (98 − 100) / 8 = 99.75 ms (not 100 + (200 − 100) / 8).
    assert_eq!(srtt_after(ms(202)), Some(SimDuration::from_micros(99_750)));
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
    let ccs = [
        CcKind::NewReno,
        CcKind::Cubic,
        CcKind::Dctcp,
        CcKind::Prague,
    ];
    let mut taken = 0;
    for stack in STACKS {
        for cc in ccs {
            for ecn in [false, true] {
                let c = stack_config(stack, cc);
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

#[test]
fn quiescent_sender_skips_only_no_op_sends() {
    let mut taken = 0;
    for stack in STACKS {
        for cc in [CcKind::NewReno, CcKind::Cubic, CcKind::Bbr, CcKind::Prague] {
            for ecn in [false, true] {
                let c = stack_config(stack, cc);
                let mut s = Sender::new(&c);
                let ctx = format!("{stack:?} {cc:?} ecn {ecn}");
                // not established: next_segment returns at once, but the fast path
                // claims only established senders
                assert!(!s.is_quiescent(), "{ctx}");
                s.establish(ms(100), Some(SimDuration::from_millis(100)), 0, ecn);
                // a sequence of states: fresh, after an empty burst, with data
                // written, with data outstanding, everything acknowledged, after the
                // empty burst that follows, closed with the FIN outstanding and acked
                let mut t = 100;
                let mut states = Vec::new();
                let mut step = |s: &mut Sender, what: &str, f: &dyn Fn(&mut Sender, SimTime)| {
                    t += 10;
                    f(s, ms(t));
                    states.push((what.to_string(), s.clone(), ms(t)));
                };
                step(&mut s, "fresh", &|_, _| {});
                step(&mut s, "empty burst", &|s, now| {
                    assert!(drain(s, now).is_empty())
                });
                step(&mut s, "written", &|s, now| s.write(now, MSS));
                step(&mut s, "sent", &|s, now| assert_eq!(drain(s, now).len(), 1));
                step(&mut s, "acked", &|s, now| {
                    s.on_ack(now, &ack(1, &[]), false);
                });
                step(&mut s, "burst after ack", &|s, now| {
                    assert!(drain(s, now).is_empty())
                });
                step(&mut s, "closed", &|s, _| s.close());
                step(&mut s, "fin sent", &|s, now| {
                    assert_eq!(drain(s, now).len(), 1)
                });
                step(&mut s, "fin acked", &|s, now| {
                    let mut h = ack(1, &[]);
                    h.ack += 1;
                    s.on_ack(now, &h, false);
                });
                step(&mut s, "final burst", &|s, now| {
                    assert!(drain(s, now).is_empty())
                });
                let mut quiet = Vec::new();
                for (what, st, now) in states {
                    // the slow path on a copy: what next_segment does from this state
                    let mut slow = st.clone();
                    let seg = slow.next_segment(now, MSS as u32);
                    let no_op = seg.is_none() && format!("{slow:?}") == format!("{st:?}");
                    if st.is_quiescent() {
                        assert!(
                            no_op,
                            "{ctx}: {what}: fast path taken but next_segment acts"
                        );
                        taken += 1;
                        quiet.push(what.clone());
                    }
                    if what == "written" || what == "closed" {
                        assert!(!st.is_quiescent(), "{ctx}: {what}");
                    }
                }
                // the receiving end's sender (never written to) is quiescent after its
                // first empty burst, and a finished sender after its last one (unless it
                // paces: BBR's pacing timestamp keeps the slow path)
                let expect: &[&str] = if s.pacing {
                    &[]
                } else {
                    &["empty burst", "burst after ack", "final burst"]
                };
                for w in expect {
                    assert!(
                        quiet.contains(&w.to_string()),
                        "{ctx}: {w} not quiescent: {quiet:?}"
                    );
                }
            }
        }
    }
    // 5 stacks x 3 non-pacing controls x ECN off/on, at least three states each
    assert!(taken >= 5 * 3 * 2 * 3, "fast path taken {taken}");
}

/// A lossy path for [`clean_ack_fast_path_matches_the_general_path`]: segments cross in
/// 20 ms (a burst spaced 0.1 ms), a few are dropped; the receiver acknowledges every
/// second in-order segment (or after 40 ms), at once when data arrives out of order,
/// with up to three SACK blocks (the one with the latest arrival first) and the
/// timestamp of the segment that triggered it; ACKs cross in 20 ms, a few are lost, and
/// now and then a delay spike holds them back for up to 1.5 s (longer than the RTO: with
/// the timer late, FACK then finds the head timed out on a clean ACK); sometimes ECE is
/// set.
struct LossyPath {
    rng: u64,
    /// (arrival time, kind, start, end, send time): kind 0 data at the receiver, 1 ACK
    /// at the sender (start = ack, end = ECE), 2 delayed-ACK timer.
    events: Vec<(SimTime, u8, u64, u64, SimTime)>,
    rcv_nxt: u64,
    ooo: std::collections::BTreeMap<u64, u64>,
    unacked: u32,
    last_ts: SimTime,
    last_start: u64,
    ack_free: SimTime,
}

impl LossyPath {
    fn rand(&mut self, n: u64) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) % n
    }
    fn push(&mut self, e: (SimTime, u8, u64, u64, SimTime)) {
        self.events.push(e);
    }
    fn pop(&mut self) -> Option<(SimTime, u8, u64, u64, SimTime)> {
        let i = (0..self.events.len()).min_by_key(|&i| (self.events[i].0, i))?;
        Some(self.events.remove(i))
    }
    fn sacks(&self) -> Vec<(u64, u64)> {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for (&s, &e) in &self.ooo {
            match runs.last_mut() {
                Some(r) if r.1 == s => r.1 = e,
                _ => runs.push((s, e)),
            }
        }
        let latest = runs
            .iter()
            .position(|r| r.0 <= self.last_start && self.last_start < r.1);
        if let Some(i) = latest {
            let r = runs.remove(i);
            runs.insert(0, r);
        }
        runs.truncate(3);
        runs
    }
    fn ack(&mut self, now: SimTime, ecn: bool) {
        self.unacked = 0;
        if self.rand(50) == 0 {
            return; // lost
        }
        if self.rand(200) == 0 {
            // a delay spike: this and the following ACKs wait (in order)
            self.ack_free = now + SimDuration::from_millis(300 + self.rand(1200));
        }
        let delay = (now + SimDuration::from_millis(20))
            .max(self.ack_free)
            .saturating_since(now);
        let ece = ecn && self.rand(20) == 0;
        let (ack, ts) = (self.rcv_nxt, self.last_ts);
        // the SACK blocks travel as a second event at the same instant, kind 3
        for (s, e) in self.sacks() {
            self.push((now + delay, 3, s, e, ts));
        }
        self.push((now + delay, 1, ack, ece as u64, ts));
    }
    fn on_data(&mut self, now: SimTime, start: u64, end: u64, sent: SimTime, ecn: bool) {
        self.last_ts = sent;
        self.last_start = start;
        let in_order = start == self.rcv_nxt;
        if end <= self.rcv_nxt || self.ooo.contains_key(&start) {
            return self.ack(now, ecn); // duplicate
        }
        self.ooo.insert(start, end);
        let had_hole = !in_order || self.ooo.len() > 1;
        while let Some(e) = self.ooo.remove(&self.rcv_nxt) {
            self.rcv_nxt = e;
        }
        self.unacked += 1;
        if had_hole || self.unacked >= 2 {
            self.ack(now, ecn);
        } else {
            self.push((now + SimDuration::from_millis(40), 2, self.rcv_nxt, 0, sent));
        }
    }
}

/// The clean-ACK fast path (`is_clean_ack` / `on_clean_ack`) leaves a sender exactly as
/// the general path does: on random lossy runs of every stack profile with NewReno,
/// CUBIC and DCTCP, with and without ECN, each ACK the fast path accepts is also given
/// to a clone through the general path, and the outcomes and the whole `Debug` state
/// (scoreboard, window, control, timers, stats) must agree; the run goes on with the
/// fast path's sender, so its later ACKs start from states it produced.
#[test]
fn clean_ack_fast_path_matches_the_general_path() {
    let (mut taken, mut rejected, mut undo_pending) = (0, 0, 0);
    for (k, stack) in STACKS.into_iter().enumerate() {
        for cc in [CcKind::NewReno, CcKind::Cubic, CcKind::Dctcp] {
            for ecn in [false, true] {
                let c = stack_config(stack, cc);
                let mut s = Sender::new(&c);
                s.establish(ms(100), Some(SimDuration::from_millis(60)), 0, ecn);
                s.write(ms(100), UNLIMITED);
                let mut p = LossyPath {
                    rng: 0x9E37_79B9_7F4A_7C15 ^ (k as u64 * 6 + cc as u64 * 2 + ecn as u64 + 1),
                    events: Vec::new(),
                    rcv_nxt: 1,
                    ooo: Default::default(),
                    unacked: 0,
                    last_ts: ms(100),
                    last_start: 1,
                    ack_free: SimTime::ZERO,
                };
                let ctx = format!("{stack:?} {cc:?} ecn {ecn}");
                let mut now = ms(100);
                let mut sacks: Vec<(u64, u64)> = Vec::new();
                let mut acks = 0;
                while acks < 1000 {
                    // send what the sender allows, each segment on its way
                    let mut gap = 0;
                    while let Some(t) = s.next_segment(now, MSS as u32) {
                        gap += 1;
                        if p.rand(100) != 0 {
                            let at = now
                                + SimDuration::from_millis(20)
                                + SimDuration::from_micros(100 * gap);
                            p.push((at, 0, t.seq, t.end, now));
                        }
                    }
                    let next = p.events.iter().map(|e| e.0).min().unwrap_or(SimTime::NEVER);
                    let timer = [s.rto_deadline(), s.pace_deadline()]
                        .into_iter()
                        .min()
                        .unwrap();
                    // a timer sometimes fires late (after the next arrival): a
                    // held-back ACK then finds the head older than the RTO
                    if timer <= next && (next == SimTime::NEVER || p.rand(3) != 0) {
                        assert!(timer < SimTime::NEVER, "{ctx}: stalled");
                        now = now.max(timer);
                        if s.rto_deadline() <= now {
                            s.on_xmit_timer(now);
                        }
                        continue;
                    }
                    let (at, kind, a, b, ts) = p.pop().unwrap();
                    now = at;
                    match kind {
                        0 => p.on_data(now, a, b, ts, ecn),
                        2 if p.unacked > 0 && p.rcv_nxt == a => p.ack(now, ecn),
                        3 => sacks.push((a, b)),
                        1 => {
                            acks += 1;
                            let mut h = TcpHeader {
                                ack: a,
                                flags: tcp_flags::ACK | if b != 0 { tcp_flags::ECE } else { 0 },
                                wnd: 3 << 20,
                                ts_ecr: ts,
                                ..Default::default()
                            };
                            let blocks: Vec<SackBlock> = sacks
                                .drain(..)
                                .map(|(start, end)| SackBlock { start, end })
                                .collect();
                            h.set_sacks(&blocks);
                            if s.is_clean_ack(&h) {
                                taken += 1;
                                let mut g = s.clone();
                                let of = s.on_ack(now, &h, false);
                                let og = g.on_ack_general(now, &h, false);
                                let at = format!("{ctx}, ACK {acks} at {now:?}");
                                assert_eq!(of, og, "{at}");
                                assert_eq!(format!("{s:?}"), format!("{g:?}"), "{at}");
                                undo_pending += (g.undo_marker != 0) as u32;
                            } else {
                                rejected += 1;
                                s.on_ack(now, &h, false);
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    // both paths were exercised, the fast one also with an undo still possible
    assert!(taken > 10_000 && rejected > 5_000, "{taken} {rejected}");
    assert!(undo_pending > 1_000, "{undo_pending}");
}

/// The clean-ACK fast path's rare branch: FACK finds the head older than the RTO
/// (`tcp_head_timedout`) and starts a recovery, as the general path does. A sequence
/// sample always makes the RTO exceed the head's age (the head was sent after the
/// segments acknowledged), so the ACK here covers a segment retransmitted before a
/// spurious timeout was undone (ever retransmitted, nothing in flight or lost): only its
/// timestamp echo, 10 ms old, times it.
#[test]
fn clean_ack_with_a_timed_out_head_starts_fack_recovery_as_the_general_path_does() {
    use crate::tcp::Stack;
    for stack in [Stack::Linux3_14, Stack::Linux2_6_29] {
        let c = TcpOptions {
            mss: Some(MSS as u32),
            stack: Some(stack),
            ..Default::default()
        }
        .resolve("tcp")
        .unwrap();
        let mut s = Sender::new(&c);
        s.establish(ms(100), Some(SimDuration::from_millis(60)), 0, false);
        s.write(ms(100), UNLIMITED);
        let n = drain(&mut s, ms(100)).len() as u64;
        assert!(n >= 3, "{stack:?}");
        // the head was retransmitted, a timeout marked everything lost, and its undo
        // unmarked it: ever retransmitted, neither lost nor in flight again
        s.sb.on_retransmit(0, ms(150));
        s.sb.mark_all_lost();
        s.sb.unmark_lost();
        let mut h = ack(1, &[]);
        h.ts_ecr = ms(590);
        assert!(s.is_clean_ack(&h), "{stack:?}");
        let mut g = s.clone();
        let of = s.on_ack(ms(600), &h, false);
        let og = g.on_ack_general(ms(600), &h, false);
        assert_eq!(s.state, CaState::Recovery, "{stack:?}");
        assert!(s.sb.lost_out > 0, "{stack:?}");
        assert_eq!(of, og, "{stack:?}");
        assert_eq!(format!("{s:?}"), format!("{g:?}"), "{stack:?}");
        assert_eq!(drain(&mut s, ms(600)), drain(&mut g, ms(600)), "{stack:?}");
        assert_eq!(format!("{s:?}"), format!("{g:?}"), "{stack:?}");
    }
}
