//! The receiving half of an endpoint: reassembly, cumulative ACK, SACK blocks
//! (RFC 2018), delayed ACKs, the timestamp echo (RFC 7323) and the ECN echo (RFC 3168).
//!
//! The application reads at once, so in-order data is delivered as soon as it arrives.
//! The advertised window is `rcv_window` throughout, or, with `rcv_autotune`, starts at
//! the kernel's initial window and grows as Linux grows it ([`super::rcvbuf`]); the
//! right edge it advertises never moves back.
//!
//! ACK policy, per [`DelayedAck`] mode:
//! - every mode ACKs at once for out-of-order data, for a segment that fills (part of)
//!   a hole, for duplicates and for the FIN (RFC 5681 §4.2, Linux `tcp_data_queue`);
//! - `linux`: at once while in quick-ACK mode (the first min(16, rcv_window / 2·MSS)
//!   segments, again after an idle period longer than the RTO, two more on the first CE
//!   mark), or when more than one full segment is unacknowledged
//!   (`__tcp_ack_snd_check`); otherwise after the delayed-ACK timeout of 40 ms
//!   (TCP_ATO_MIN; Linux's adaptive `ato` stays at this floor for back-to-back data);
//! - `ns2`: every second segment, 100 ms timeout;
//! - `ns3`: every second segment, 200 ms timeout (ns-3 `DelAckCount`, `DelAckTimeout`);
//! - `off`: every segment.
//!
//! D-SACK (RFC 2883) with `dsack`: a duplicate segment's range is reported first in
//! the SACK option until the next data segment (Linux `tcp_dsack_set`).
//!
//! Not modelled: receiver-side silly window avoidance.

use super::config::{DelayedAck, RcvTune};
use super::rcvbuf::RcvBuf;
use crate::packet::{tcp_flags, SackBlock, TcpHeader};
use crate::time::{SimDuration, SimTime};

/// Linux TCP_MAX_QUICKACKS.
const MAX_QUICKACKS: u32 = 16;
/// Linux TCP_ATO_MIN.
const LINUX_ATO: SimDuration = SimDuration::from_millis(40);
/// ns-2 `DelAckSink` interval.
const NS2_ATO: SimDuration = SimDuration::from_millis(100);
/// ns-3 `TcpSocket::DelAckTimeout` default (3.44).
const NS3_ATO: SimDuration = SimDuration::from_millis(200);
/// SACK blocks remembered (Linux keeps 4, the option carries at most 3 with timestamps).
const MAX_SACKS: usize = 4;

/// What one arriving segment did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RcvOutcome {
    /// Payload bytes newly delivered in order.
    pub delivered: u64,
    /// The peer's FIN was reached in order by this segment.
    pub fin: bool,
    /// Send an ACK now (or piggyback one on data sent now).
    pub ack_now: bool,
}

/// Receiver state of one endpoint. Laid out in declaration order (`repr(C)`), 64-byte
/// aligned, by use: what every segment reads (a pure ACK too) in the first two cache
/// lines, the rest of a data segment's state in the third, the SACK blocks after.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct Receiver {
    /// Next sequence number expected.
    pub rcv_nxt: u64,
    /// `rcv_nxt` when the last ACK was sent (Linux `rcv_wup`).
    rcv_wup: u64,
    delack_deadline: SimTime,
    /// RFC 7323 TS.Recent.
    pub ts_recent: SimTime,
    last_ack_sent: u64,
    /// The right edge of the window last advertised (`rcv_wup + rcv_wnd`).
    adv_edge: u64,
    mss: u32,
    /// Advertised window in bytes.
    pub wnd: u32,
    segs_unacked: u32,
    quick: u32,
    n_sacks: usize,
    /// Total payload bytes delivered in order.
    pub delivered: u64,
    /// CE-marked packets received (AccECN `r.cep`), fed back in every ACK's `ace`.
    pub ce_packets: u32,
    mode: DelayedAck,
    ecn: bool,
    /// D-SACK (RFC 2883, Linux `tcp_dsack = 1`): report a duplicate segment as the first
    /// SACK block (`dsack`: `out` holds that block and then the SACK blocks) until the
    /// next data segment arrives (Linux `tcp_dsack_set`, cleared in `tcp_data_queue`).
    dsack_on: bool,
    dsack: bool,
    pub fin_received: bool,
    ack_pending: bool,
    /// ECN-Echo: set on a CE mark, cleared by the peer's CWR.
    pub ece: bool,
    /// Accurate ECN negotiated: count CE marks instead of the ECE handshake.
    accecn: bool,
    /// Whether the last data packet was CE (for change-triggered ACKs).
    last_ce: bool,
    /// Out-of-order intervals above `rcv_nxt`, sorted and disjoint.
    ooo: Vec<(u64, u64)>,
    n_out: usize,
    lrcvtime: Option<SimTime>,
    fin_seq: Option<u64>,
    /// Receive-buffer autotuning (None: the window stays `wnd`).
    tune: Option<RcvBuf>,
    /// SACK blocks, most recent first.
    sacks: [SackBlock; MAX_SACKS],
    out: [SackBlock; MAX_SACKS],
}

impl Receiver {
    pub fn new(mode: DelayedAck, mss: u32, wnd: u32) -> Self {
        Receiver {
            mode,
            mss,
            wnd,
            ecn: false,
            rcv_nxt: 0,
            rcv_wup: 0,
            segs_unacked: 0,
            ooo: Vec::new(),
            sacks: [SackBlock::default(); MAX_SACKS],
            n_sacks: 0,
            dsack_on: false,
            dsack: false,
            out: [SackBlock::default(); MAX_SACKS],
            n_out: 0,
            fin_seq: None,
            fin_received: false,
            quick: 0,
            delack_deadline: SimTime::NEVER,
            ack_pending: false,
            ts_recent: SimTime::ZERO,
            last_ack_sent: 0,
            ece: false,
            lrcvtime: None,
            delivered: 0,
            accecn: false,
            ce_packets: 0,
            last_ce: false,
            tune: None,
            adv_edge: 0,
        }
    }

    /// Grows the window as Linux does (`kind` not `Off`) up to the configured window,
    /// starting at the kernel's initial window. `advmss` is the MSS option's value
    /// (payload plus the timestamp option); `hz` the kernel's timer frequency.
    pub fn set_autotune(&mut self, kind: RcvTune, advmss: u32, hz: u32) {
        if kind == RcvTune::Off {
            self.tune = None;
            return;
        }
        let (b, first) = RcvBuf::new(kind, self.mss, advmss, self.wnd, hz);
        self.tune = Some(b);
        self.wnd = first;
    }

    /// The autotuning state, if on (`rcvbuf`, `window_clamp`, `rcv_ssthresh`).
    pub fn autotune_state(&self) -> Option<(u64, u64, u64)> {
        self.tune.as_ref().map(|b| b.state())
    }

    /// The peer's SYN (sequence number 0) was received at `now`: data starts at 1.
    pub fn on_syn(&mut self, now: SimTime, ts_val: SimTime, ecn: bool) {
        self.rcv_nxt = 1;
        self.rcv_wup = 1;
        self.last_ack_sent = 1;
        self.adv_edge = 1 + self.wnd as u64;
        if let Some(b) = self.tune.as_mut() {
            b.established(now);
        }
        self.ts_recent = ts_val;
        self.ecn = ecn;
    }

    /// Accurate ECN was negotiated (after `on_syn`).
    pub fn set_accecn(&mut self, on: bool) {
        self.accecn = on && self.ecn;
    }
    pub fn accecn(&self) -> bool {
        self.accecn
    }

    /// ECN was negotiated (the receiver echoes CE marks).
    pub fn ecn(&self) -> bool {
        self.ecn
    }

    /// Report duplicate segments by D-SACK (RFC 2883).
    pub fn set_dsack(&mut self, on: bool) {
        self.dsack_on = on;
    }

    /// A duplicate [start, end) arrived: it goes first in the ACKs until the next data.
    fn report_dsack(&mut self, start: u64, end: u64) {
        if !self.dsack_on {
            return;
        }
        self.out[0] = SackBlock { start, end };
        let n = self.n_sacks.min(MAX_SACKS - 1);
        self.out[1..=n].copy_from_slice(&self.sacks[..n]);
        self.n_out = n + 1;
        self.dsack = true;
    }

    /// SACK blocks to report, most recent first (a D-SACK block before them).
    pub fn sack_blocks(&self) -> &[SackBlock] {
        if self.dsack {
            return &self.out[..self.n_out];
        }
        &self.sacks[..self.n_sacks]
    }

    /// When the delayed-ACK timer should fire (`NEVER` if no ACK is being delayed).
    pub fn delack_deadline(&self) -> SimTime {
        self.delack_deadline
    }

    /// Whether data has been received since the last ACK.
    pub fn ack_pending(&self) -> bool {
        self.ack_pending
    }

    fn enter_quickack(&mut self, max: u32) {
        if self.mode != DelayedAck::Linux {
            return;
        }
        let q = (self.wnd / (2 * self.mss)).clamp(2, max);
        self.quick = self.quick.max(q);
    }

    /// A segment without data or FIN (a pure ACK) arrived: it refreshes TS.Recent as any
    /// segment at the left window edge does (RFC 7323 §4.3; Linux `tcp_replace_ts_recent`
    /// runs for pure ACKs too), so the data this side sends next echoes it.
    pub fn on_pure_ack(&mut self, h: &TcpHeader) {
        if h.seq <= self.last_ack_sent {
            self.ts_recent = h.ts_val;
        }
    }

    /// Processes the sequence part of an arriving segment. `rto` is the local sender's
    /// current timeout (idle detection for quick-ACK mode); `ce` is the IP CE mark.
    pub fn on_segment(
        &mut self,
        now: SimTime,
        h: &TcpHeader,
        ce: bool,
        rto: SimDuration,
    ) -> RcvOutcome {
        let mut out = RcvOutcome::default();
        // RFC 7323 4.3: remember the timestamp of segments at the left window edge.
        if h.seq <= self.last_ack_sent {
            self.ts_recent = h.ts_val;
        }
        if self.ecn && h.flags & tcp_flags::CWR != 0 {
            self.ece = false;
        }
        let fin = h.flags & tcp_flags::FIN != 0;
        let seq_len = h.len as u64 + fin as u64;
        // AccECN: every CE-marked packet counts; a change of CE state between data
        // packets is acknowledged at once (AccECN's change-triggered ACK, also what
        // DCTCP's receiver state machine does), so the sender sees marks promptly.
        let mut ce_changed = false;
        if self.accecn {
            if ce {
                self.ce_packets = self.ce_packets.wrapping_add(1);
            }
            if seq_len > 0 {
                ce_changed = ce != self.last_ce;
                self.last_ce = ce;
            }
        }
        if seq_len == 0 {
            return out;
        }
        if self.ecn && !self.accecn && ce && !self.ece {
            // RFC 3168 6.1.3; Linux also ACKs the next two segments at once.
            self.ece = true;
            self.enter_quickack(2);
        }
        let (start, end) = (h.seq, h.seq + seq_len);
        self.dsack = false;
        if fin {
            self.fin_seq = Some(end - 1);
        }
        // Linux tcp_event_data_recv: quick-ACK at the first data and after idle gaps.
        match self.lrcvtime {
            None => self.enter_quickack(MAX_QUICKACKS),
            Some(t) if now.saturating_since(t) > rto => self.enter_quickack(MAX_QUICKACKS),
            _ => {}
        }
        self.lrcvtime = Some(now);
        self.ack_pending = true;
        if end <= self.rcv_nxt {
            // A duplicate: ACK at once (Linux enters quick-ACK mode), with a D-SACK.
            self.enter_quickack(MAX_QUICKACKS);
            self.report_dsack(start, end);
            out.ack_now = true;
            return out;
        }
        if let Some(b) = self.tune.as_mut() {
            // tcp_rcv_rtt_measure_ts (tcp_rcv_established, before the data is queued)
            if h.ts_ecr != SimTime::ZERO {
                b.rtt_measure_ts(now, h.ts_ecr, h.len, self.mss);
            }
        }
        if start > self.rcv_nxt {
            self.queue_ofo(h.len, start, end);
            out.ack_now = true;
            return out;
        }
        let had_ooo = !self.ooo.is_empty();
        let old = self.rcv_nxt;
        self.advance_to(end);
        let mut advanced = self.rcv_nxt - old;
        if let Some(f) = self.fin_seq {
            if !self.fin_received && self.rcv_nxt > f {
                self.fin_received = true;
                out.fin = true;
                advanced -= 1;
            }
        }
        self.delivered += advanced;
        out.delivered = advanced;
        if self.tune.is_some() {
            // tcp_event_data_recv, then the application's read (tcp_rcv_space_adjust)
            let (rcv_nxt, wnd) = (self.rcv_nxt, self.wnd as u64);
            if let Some(b) = self.tune.as_mut() {
                b.rtt_measure(now, rcv_nxt, wnd);
            }
            self.grow_window(h.len);
            if let Some(b) = self.tune.as_mut() {
                b.space_adjust(now, rcv_nxt);
            }
            self.wnd = self.tuned_window();
        }
        self.segs_unacked += 1;
        out.ack_now = had_ooo
            || ce_changed
            || out.fin
            || match self.mode {
                DelayedAck::Off => true,
                DelayedAck::Ns2 | DelayedAck::Ns3 => self.segs_unacked >= 2,
                DelayedAck::Linux => {
                    self.quick > 0 || self.rcv_nxt - self.rcv_wup > self.mss as u64
                }
            };
        if !out.ack_now && self.delack_deadline == SimTime::NEVER {
            let ato = match self.mode {
                DelayedAck::Ns2 => NS2_ATO,
                DelayedAck::Ns3 => NS3_ATO,
                _ => LINUX_ATO,
            };
            self.delack_deadline = now + ato;
        }
        out
    }

    /// Out-of-order data `[start, end)` (`len` payload bytes) beyond `rcv_nxt`
    /// (Linux `tcp_data_queue_ofo`): held, and reported as a D-SACK when already held.
    fn queue_ofo(&mut self, len: u32, start: u64, end: u64) {
        let held = self.ooo.iter().any(|&(s, e)| s <= start && end <= e);
        let dup = self.dsack_on && held;
        // data already held is dropped without growing the window (tcp_data_queue_ofo)
        if !held && self.grow_window(len) {
            self.wnd = self.tuned_window();
        }
        self.insert_ooo(start, end);
        if dup {
            // Out-of-order data already held (Linux tcp_data_queue_ofo).
            self.report_dsack(start, end);
        }
    }

    /// In-order data up to `end`: `rcv_nxt` moves past it and every held range it now
    /// reaches; SACK blocks below the new `rcv_nxt` are dropped.
    fn advance_to(&mut self, end: u64) {
        self.rcv_nxt = end;
        let mut merged = 0;
        while merged < self.ooo.len() && self.ooo[merged].0 <= self.rcv_nxt {
            self.rcv_nxt = self.rcv_nxt.max(self.ooo[merged].1);
            merged += 1;
        }
        self.ooo.drain(..merged);
        let rcv_nxt = self.rcv_nxt;
        let mut k = 0;
        for i in 0..self.n_sacks {
            if self.sacks[i].end > rcv_nxt {
                self.sacks[k] = self.sacks[i];
                k += 1;
            }
        }
        self.n_sacks = k;
    }

    /// `tcp_grow_window`; a window that grew is announced at once (`icsk_ack.quick |= 1`).
    fn grow_window(&mut self, len: u32) -> bool {
        let Some(b) = self.tune.as_mut() else {
            return false;
        };
        let grew = b.grow(len);
        if grew && self.mode == DelayedAck::Linux {
            self.quick |= 1;
        }
        grew
    }

    /// The autotuned window relative to `rcv_nxt`, never moving the advertised right
    /// edge back (`tcp_select_window`).
    fn tuned_window(&self) -> u32 {
        let w = self.tune.as_ref().map_or(0, |b| b.window());
        let kept = self.adv_edge.saturating_sub(self.rcv_nxt);
        w.max(kept).min(u32::MAX as u64) as u32
    }

    fn insert_ooo(&mut self, s: u64, e: u64) {
        let i = self.ooo.partition_point(|iv| iv.1 < s);
        let (mut ns, mut ne) = (s, e);
        while i < self.ooo.len() && self.ooo[i].0 <= ne {
            ns = ns.min(self.ooo[i].0);
            ne = ne.max(self.ooo[i].1);
            self.ooo.remove(i);
        }
        self.ooo.insert(i, (ns, ne));
        // RFC 2018 §4: the block holding the newest segment goes first; blocks it
        // absorbed disappear; older blocks follow in order of recency.
        let mut k = 0;
        let mut list = [SackBlock::default(); MAX_SACKS];
        list[0] = SackBlock { start: ns, end: ne };
        k += 1;
        for j in 0..self.n_sacks {
            let b = self.sacks[j];
            let overlaps = b.start <= ne && b.end >= ns;
            if !overlaps && k < MAX_SACKS {
                list[k] = b;
                k += 1;
            }
        }
        self.sacks = list;
        self.n_sacks = k;
    }

    /// An ACK (pure or on data) was sent now.
    pub fn ack_sent(&mut self) {
        self.rcv_wup = self.rcv_nxt;
        self.last_ack_sent = self.rcv_nxt;
        self.adv_edge = self.adv_edge.max(self.rcv_nxt + self.wnd as u64);
        self.segs_unacked = 0;
        self.delack_deadline = SimTime::NEVER;
        self.ack_pending = false;
        self.quick = self.quick.saturating_sub(1);
    }

    /// The delayed-ACK timer fired: whether an ACK is due.
    pub fn on_delack_timer(&mut self) -> bool {
        self.delack_deadline = SimTime::NEVER;
        self.ack_pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every segment (a pure ACK too) reads the first two lines; a data segment also
    /// the third (and the SACK blocks with data out of order).
    #[test]
    fn layout_puts_the_per_segment_fields_first() {
        use std::mem::{align_of, offset_of, size_of};
        let line = |off: usize| off / 64;
        assert_eq!(align_of::<Receiver>(), 64);
        for (l, off) in [
            (0, offset_of!(Receiver, rcv_nxt)),
            (0, offset_of!(Receiver, rcv_wup)),
            (0, offset_of!(Receiver, delack_deadline)),
            (0, offset_of!(Receiver, ts_recent)),
            (0, offset_of!(Receiver, last_ack_sent)),
            (0, offset_of!(Receiver, adv_edge)),
            (0, offset_of!(Receiver, mss)),
            (0, offset_of!(Receiver, wnd)),
            (0, offset_of!(Receiver, segs_unacked)),
            (0, offset_of!(Receiver, quick)),
            (1, offset_of!(Receiver, n_sacks)),
            (1, offset_of!(Receiver, delivered)),
            (1, offset_of!(Receiver, ce_packets)),
            (1, offset_of!(Receiver, mode)),
            (1, offset_of!(Receiver, ack_pending)),
            (1, offset_of!(Receiver, ece)),
            (1, offset_of!(Receiver, last_ce)),
            (
                1,
                offset_of!(Receiver, ooo) + size_of::<Vec<(u64, u64)>>() - 1,
            ),
            (2, offset_of!(Receiver, lrcvtime)),
            (2, offset_of!(Receiver, fin_seq)),
            (2, offset_of!(Receiver, tune)),
        ] {
            assert_eq!(line(off), l, "offset {off}");
        }
        assert!(offset_of!(Receiver, sacks) > offset_of!(Receiver, tune));
    }

    const MSS: u32 = 1000;

    fn seg(seq_no: u64, len: u32) -> TcpHeader {
        TcpHeader {
            seq: 1 + seq_no * MSS as u64,
            len,
            flags: tcp_flags::ACK,
            ..Default::default()
        }
    }
    fn ms(x: u64) -> SimTime {
        SimTime::from_nanos(x * 1_000_000)
    }
    fn rx(mode: DelayedAck) -> Receiver {
        let mut r = Receiver::new(mode, MSS, 64 * MSS);
        r.on_syn(SimTime::ZERO, SimTime::ZERO, true);
        r
    }
    const RTO: SimDuration = SimDuration::from_millis(300);

    #[test]
    fn pure_acks_at_the_window_edge_refresh_ts_recent() {
        // RFC 7323 4.3: the data this side sends next echoes the latest ACK's TSval.
        let mut r = rx(DelayedAck::Linux);
        let mut a = seg(0, 0);
        a.ts_val = ms(40);
        r.on_pure_ack(&a);
        assert_eq!(r.ts_recent, ms(40));
        // a segment beyond the last ACK sent (rcv_wup) does not
        a.seq = 1 + 5 * MSS as u64;
        a.ts_val = ms(50);
        r.on_pure_ack(&a);
        assert_eq!(r.ts_recent, ms(40));
    }

    #[test]
    fn autotuned_window_starts_small_grows_per_segment_and_never_retreats() {
        // Linux 3.14 with a 1460-byte MSS option: first window 10 segments; each data
        // segment adds 2 * 1460 to rcv_ssthresh (window rounded up to 128 bytes) up to
        // window_clamp 42230; the announced right edge never moves back.
        let mut r = Receiver::new(DelayedAck::Linux, 1448, 3 << 20);
        r.set_autotune(RcvTune::Linux3_14, 1460, 250);
        assert_eq!(r.wnd, 14_480);
        r.on_syn(SimTime::ZERO, SimTime::ZERO, false);
        let mut wnds = Vec::new();
        for i in 0..12u64 {
            let h = TcpHeader {
                seq: 1 + i * 1448,
                len: 1448,
                flags: tcp_flags::ACK,
                ..Default::default()
            };
            r.on_segment(ms(1 + i), &h, false, RTO);
            r.ack_sent();
            wnds.push(r.wnd);
        }
        // 14480 + 2920 = 17400 -> 17408, ... until the clamp 42230 -> 42240
        assert_eq!(&wnds[..3], &[17_408, 20_352, 23_296]);
        assert_eq!(wnds[9], 42_240);
        assert_eq!(r.autotune_state(), Some((87_380, 42_230, 42_230)));
        // out-of-order data grows it too, data already held does not
        let mut r = Receiver::new(DelayedAck::Linux, 1448, 3 << 20);
        r.set_autotune(RcvTune::Linux3_14, 1460, 250);
        r.on_syn(SimTime::ZERO, SimTime::ZERO, false);
        let ooo = TcpHeader {
            seq: 1 + 2 * 1448,
            len: 1448,
            flags: tcp_flags::ACK,
            ..Default::default()
        };
        r.on_segment(ms(1), &ooo, false, RTO);
        assert_eq!(r.autotune_state().map(|s| s.2), Some(17_400));
        r.on_segment(ms(2), &ooo, false, RTO);
        assert_eq!(r.autotune_state().map(|s| s.2), Some(17_400));
        // without autotuning the window is rcv_window throughout
        let mut plain = Receiver::new(DelayedAck::Linux, 1448, 3 << 20);
        plain.on_syn(SimTime::ZERO, SimTime::ZERO, false);
        assert_eq!((plain.wnd, plain.autotune_state()), (3 << 20, None));
    }

    #[test]
    fn linux_quickack_then_every_second_full_segment() {
        let mut r = rx(DelayedAck::Linux);
        let mut acks = Vec::new();
        for i in 0..24 {
            let o = r.on_segment(ms(i), &seg(i, MSS), false, RTO);
            assert_eq!(o.delivered, MSS as u64);
            if o.ack_now {
                r.ack_sent();
                acks.push(i);
            }
        }
        // 16 quick ACKs (one per segment), then one per two full segments.
        let expect: Vec<u64> = (0..16).chain([17, 19, 21, 23]).collect();
        assert_eq!(acks, expect);
        assert_eq!(r.delivered, 24 * MSS as u64);
    }

    #[test]
    fn lone_segment_waits_for_the_delack_timer() {
        let mut r = rx(DelayedAck::Linux);
        r.quick = 0;
        r.lrcvtime = Some(ms(0));
        let o = r.on_segment(ms(10), &seg(0, 100), false, RTO);
        assert!(!o.ack_now);
        assert_eq!(r.delack_deadline(), ms(50));
        // A second small segment (200 bytes < one MSS unacknowledged) still waits, and
        // does not push the deadline back.
        let o = r.on_segment(
            ms(20),
            &TcpHeader {
                seq: 101,
                len: 100,
                ..seg(0, 0)
            },
            false,
            RTO,
        );
        assert!(!o.ack_now);
        assert_eq!(r.delack_deadline(), ms(50));
        assert!(r.on_delack_timer());
        r.ack_sent();
        assert!(!r.on_delack_timer(), "nothing left to acknowledge");
        // An idle gap longer than the RTO re-enters quick-ACK mode.
        let o = r.on_segment(
            ms(1000),
            &TcpHeader {
                seq: 201,
                len: 100,
                ..seg(0, 0)
            },
            false,
            RTO,
        );
        assert!(o.ack_now);
    }

    #[test]
    fn ns2_and_off_modes() {
        let mut r = rx(DelayedAck::Ns2);
        let a: Vec<bool> = (0..4)
            .map(|i| r.on_segment(ms(i), &seg(i, 10), false, RTO).ack_now)
            .collect();
        assert_eq!(
            a,
            vec![false, true, true, true],
            "2nd segment triggers; no ack_sent() in between"
        );
        let mut r = rx(DelayedAck::Ns2);
        let o = r.on_segment(ms(0), &seg(0, MSS), false, RTO);
        assert!(!o.ack_now);
        assert_eq!(r.delack_deadline(), ms(100));
        let mut r = rx(DelayedAck::Off);
        r.quick = 0;
        assert!(r.on_segment(ms(0), &seg(0, MSS), false, RTO).ack_now);
    }

    #[test]
    fn out_of_order_sack_blocks_and_hole_filling() {
        let mut r = rx(DelayedAck::Linux);
        r.on_segment(ms(0), &seg(0, MSS), false, RTO);
        r.ack_sent();
        // Segment 1 lost; 2, 3 arrive: immediate dup ACKs with one block [2, 4).
        assert!(r.on_segment(ms(1), &seg(2, MSS), false, RTO).ack_now);
        let o = r.on_segment(ms(2), &seg(3, MSS), false, RTO);
        assert!(o.ack_now && o.delivered == 0);
        assert_eq!(
            r.sack_blocks(),
            &[SackBlock {
                start: 2001,
                end: 4001
            }]
        );
        // Segment 5 (4 lost too): new block first.
        r.on_segment(ms(3), &seg(5, MSS), false, RTO);
        assert_eq!(
            r.sack_blocks(),
            &[
                SackBlock {
                    start: 5001,
                    end: 6001
                },
                SackBlock {
                    start: 2001,
                    end: 4001
                }
            ]
        );
        // Segment 7, then 6 which joins 5..8: merged block first, [2,4) last.
        r.on_segment(ms(4), &seg(7, MSS), false, RTO);
        r.on_segment(ms(5), &seg(6, MSS), false, RTO);
        assert_eq!(
            r.sack_blocks(),
            &[
                SackBlock {
                    start: 5001,
                    end: 8001
                },
                SackBlock {
                    start: 2001,
                    end: 4001
                }
            ]
        );
        // The retransmission of 1 fills the first hole: 3 segments delivered, ACK at once.
        let o = r.on_segment(ms(6), &seg(1, MSS), false, RTO);
        assert_eq!((o.delivered, o.ack_now), (3 * MSS as u64, true));
        assert_eq!(r.rcv_nxt, 4001);
        assert_eq!(
            r.sack_blocks(),
            &[SackBlock {
                start: 5001,
                end: 8001
            }]
        );
        let o = r.on_segment(ms(7), &seg(4, MSS), false, RTO);
        assert_eq!((o.delivered, o.ack_now), (4 * MSS as u64, true));
        assert!(r.sack_blocks().is_empty());
        // A duplicate is acknowledged at once and delivers nothing.
        r.ack_sent();
        let o = r.on_segment(ms(8), &seg(2, MSS), false, RTO);
        assert_eq!((o.delivered, o.ack_now), (0, true));
    }

    #[test]
    fn sack_list_keeps_four_most_recent() {
        let mut r = rx(DelayedAck::Off);
        for i in [2u64, 4, 6, 8, 10] {
            r.on_segment(ms(i), &seg(i, MSS), false, RTO);
        }
        let starts: Vec<u64> = r
            .sack_blocks()
            .iter()
            .map(|b| (b.start - 1) / MSS as u64)
            .collect();
        assert_eq!(starts, vec![10, 8, 6, 4]);
    }

    #[test]
    fn ece_until_cwr_and_fin() {
        let mut r = rx(DelayedAck::Linux);
        r.quick = 0;
        r.lrcvtime = Some(ms(0));
        let o = r.on_segment(ms(1), &seg(0, MSS), true, RTO);
        assert!(r.ece && o.ack_now, "first CE: ECE and quick ACK");
        r.ack_sent();
        r.on_segment(ms(2), &seg(1, MSS), false, RTO);
        assert!(r.ece, "ECE persists until CWR");
        let mut h = seg(2, MSS);
        h.flags |= tcp_flags::CWR;
        r.on_segment(ms(3), &h, false, RTO);
        assert!(!r.ece);
        // FIN after 3 segments: delivered excludes the FIN's sequence number.
        let mut f = seg(3, 10);
        f.flags |= tcp_flags::FIN;
        let o = r.on_segment(ms(4), &f, false, RTO);
        assert_eq!((o.delivered, o.fin, o.ack_now), (10, true, true));
        assert_eq!(r.rcv_nxt, 1 + 3 * MSS as u64 + 11);
    }

    #[test]
    fn timestamp_echo_follows_rfc7323() {
        let mut r = rx(DelayedAck::Off);
        r.on_segment(
            ms(5),
            &TcpHeader {
                ts_val: ms(5),
                ..seg(0, MSS)
            },
            false,
            RTO,
        );
        r.ack_sent();
        assert_eq!(r.ts_recent, ms(5));
        // Out-of-order segment: TS.Recent unchanged (its seq is above Last.ACK.sent).
        r.on_segment(
            ms(7),
            &TcpHeader {
                ts_val: ms(7),
                ..seg(2, MSS)
            },
            false,
            RTO,
        );
        assert_eq!(r.ts_recent, ms(5));
        // The hole-filling segment updates it.
        r.on_segment(
            ms(9),
            &TcpHeader {
                ts_val: ms(9),
                ..seg(1, MSS)
            },
            false,
            RTO,
        );
        assert_eq!(r.ts_recent, ms(9));
    }

    #[test]
    fn dsack_reports_a_duplicate_first_until_the_next_data() {
        let h = |seq: u64| TcpHeader {
            seq,
            len: MSS,
            flags: tcp_flags::ACK,
            ..Default::default()
        };
        let mut r = Receiver::new(DelayedAck::Linux, MSS, 64 * MSS);
        r.set_dsack(true);
        r.on_syn(SimTime::ZERO, SimTime::ZERO, false);
        let t = SimTime::ZERO;
        let rto = SimDuration::from_millis(200);
        let seg = |i: u64| 1 + i * MSS as u64;
        for i in [0, 1, 3] {
            r.on_segment(t, &h(seg(i)), false, rto);
        }
        let sack3 = SackBlock {
            start: seg(3),
            end: seg(4),
        };
        assert_eq!(r.sack_blocks(), &[sack3]);
        // Segment 1 again: a D-SACK block below the cumulative ACK, before the SACK.
        assert!(r.on_segment(t, &h(seg(1)), false, rto).ack_now);
        let d1 = SackBlock {
            start: seg(1),
            end: seg(2),
        };
        assert_eq!(r.sack_blocks(), &[d1, sack3]);
        // Segment 3 again (held out of order): D-SACK inside the first SACK block.
        r.on_segment(t, &h(seg(3)), false, rto);
        assert_eq!(r.sack_blocks(), &[sack3, sack3]);
        // New data clears the D-SACK.
        r.on_segment(t, &h(seg(2)), false, rto);
        assert_eq!(r.sack_blocks(), &[] as &[SackBlock]);
        // Without D-SACK a duplicate reports nothing.
        let mut r = Receiver::new(DelayedAck::Linux, MSS, 64 * MSS);
        r.on_syn(SimTime::ZERO, SimTime::ZERO, false);
        r.on_segment(t, &h(seg(0)), false, rto);
        r.on_segment(t, &h(seg(0)), false, rto);
        assert!(r.sack_blocks().is_empty());
    }
}
