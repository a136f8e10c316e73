//! The sender's record of outstanding segments: Linux's retransmission queue with its
//! SACK scoreboard, and RFC 6675's `IsLost` / `NextSeg` / `SetPipe` on top of it.
//!
//! Each transmitted segment keeps `[start, end)` (absolute sequence numbers), its last
//! transmission time and flags. Segments are never split or merged, so a segment is
//! cumulatively acknowledged or SACKed as a whole, and each one counts as one packet
//! in the counters Linux keeps:
//!
//! ```text
//!   in_flight ("pipe") = packets_out − sacked_out − lost_out + retrans_out
//! ```
//!
//! which is RFC 6675's SetPipe() counted in segments: an unSACKed segment counts once
//! unless it is deemed lost, and once more while a retransmission of it is in flight.
//!
//! Loss marking (RFC 6675 IsLost with DupThresh = 3): a segment is lost when at least
//! DupThresh SACKed segments lie above it (with segments of at most one SMSS this covers
//! both of IsLost's tests). The marking point only moves forward, so each segment is
//! examined once. Without SACK the sender emulates SACK by counting duplicate ACKs in
//! `sacked_out` (Linux `tcp_add_reno_sack`) and marks only the head lost.
//!
//! RACK (RFC 8985 §6, as Linux 6.1 `net/ipv4/tcp_recovery.c`), when enabled with
//! [`Scoreboard::enable_rack`], replaces that marking: every newly delivered segment
//! advances `RACK.xmit_ts` / `RACK.end_seq` / `RACK.rtt` (`tcp_rack_advance`), and a
//! segment sent before the most recently sent delivered one is lost once `RACK.rtt +
//! reo_wnd` has passed since its (last) transmission (`tcp_rack_detect_loss`). Like
//! Linux's `tsorted_sent_queue`, a time-ordered list of transmissions (a retransmission
//! moves a segment to its tail) lets the walk start at the oldest outstanding
//! transmission and stop at the first one that is not yet due, so each ACK costs
//! O(newly delivered + newly lost). Entries are deleted lazily: an entry whose segment
//! was acknowledged, SACKed or sent again since is skipped (and dropped) when met.
//!
//! The deque grows to the largest window and is then reused: no allocation per packet.

use crate::packet::SackBlock;
use crate::time::{SimDuration, SimTime};
use std::collections::VecDeque;

/// The receiver holds this segment (SACKed).
pub const SACKED: u8 = 1;
/// Deemed lost and not SACKed since.
pub const LOST: u8 = 2;
/// A retransmission of this segment is in flight.
pub const RETRANS: u8 = 4;
/// Was retransmitted at least once (Karn: no RTT sample from it).
pub const EVER_RETRANS: u8 = 8;
/// The segment carries the FIN (one sequence number, no payload).
pub const FIN: u8 = 16;

/// RFC 6675 DupThresh (also Linux's default `tcp_reordering`).
pub const DUP_THRESH: u32 = 3;

/// What the sender knew when it (re)transmitted a segment: the per-skb state of
/// Linux's delivery-rate estimation (`tcp_rate.c` `tcp_rate_skb_sent`, `skb->tx`), which
/// turns the segment's later delivery into a rate sample.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TxStamp {
    /// Segments delivered before this one was sent (`tx.delivered`).
    pub delivered: u64,
    /// When that count was last raised (`tx.delivered_mstamp`).
    pub delivered_time: SimTime,
    /// Start of the send phase this segment belongs to (`tx.first_tx_mstamp`).
    pub first_tx: SimTime,
    /// The sender was application-limited (`tx.is_app_limited`).
    pub app_limited: bool,
    /// Segments marked lost before this one was sent (BBRv3's `tx.lost`).
    pub lost: u64,
    /// Segments in flight when it was sent, itself included (BBRv3's `tx.in_flight`).
    pub in_flight: u32,
}

/// One transmitted segment.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Seg {
    pub start: u64,
    pub end: u64,
    /// Time of the last (re)transmission.
    pub sent: SimTime,
    pub flags: u8,
    pub tx: TxStamp,
    /// `snd_nxt` when it was last retransmitted (Linux keeps it in the retransmitted
    /// skb's `ack_seq` for `tcp_mark_lost_retrans`); 0 before any retransmission.
    pub rtx_nxt: u64,
}

impl Seg {
    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
    /// Payload bytes (the FIN occupies a sequence number but no payload).
    pub fn payload(&self) -> u32 {
        (self.end - self.start) as u32 - self.has(FIN) as u32
    }
}

/// The segment whose delivery makes an ACK's rate sample (Linux
/// `tcp_rate_skb_delivered`): of the newly delivered segments, the one sent last (highest
/// `tx.delivered`, ties by send time), as kernels since 4.19 choose.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RateSeg {
    pub tx: TxStamp,
    /// Its (last) send time.
    pub sent: SimTime,
    /// It had been retransmitted.
    pub retrans: bool,
}

impl RateSeg {
    fn newer_than(&self, o: &RateSeg) -> bool {
        (self.tx.delivered, self.sent) > (o.tx.delivered, o.sent)
    }
}

/// Send times of newly delivered never-retransmitted segments, for RTT samples.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Delivered {
    /// Segments newly delivered.
    pub pkts: u32,
    /// Earliest send time (Linux `first_ackt`: the RTO estimator's sample).
    pub first_sent: Option<SimTime>,
    /// Latest send time (Linux `last_ackt`: the congestion control's sample).
    pub last_sent: Option<SimTime>,
    /// A retransmitted segment was among them.
    pub retrans: bool,
    /// The segment the rate sample is taken from.
    pub rate: Option<RateSeg>,
}

impl Delivered {
    fn note(&mut self, s: &Seg) {
        self.pkts += 1;
        let r = RateSeg {
            tx: s.tx,
            sent: s.sent,
            retrans: s.has(EVER_RETRANS),
        };
        if self.rate.is_none_or(|o| r.newer_than(&o)) {
            self.rate = Some(r);
        }
        if s.has(EVER_RETRANS) {
            self.retrans = true;
        } else {
            if self.first_sent.is_none_or(|f| s.sent < f) {
                self.first_sent = Some(s.sent);
            }
            if self.last_sent.is_none_or(|l| s.sent > l) {
                self.last_sent = Some(s.sent);
            }
        }
    }
    pub fn merge(&mut self, o: Delivered) {
        self.pkts += o.pkts;
        self.retrans |= o.retrans;
        self.first_sent = match (self.first_sent, o.first_sent) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_sent = match (self.last_sent, o.last_sent) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.rate = match (self.rate, o.rate) {
            (Some(a), Some(b)) => Some(if b.newer_than(&a) { b } else { a }),
            (a, b) => a.or(b),
        };
    }
}

/// One transmission in RACK's time-ordered list.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct TsEntry {
    /// Segment id (running index).
    id: u64,
    sent: SimTime,
    end: u64,
}

/// RACK state (RFC 8985 §6.1; Linux `tp->rack`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Rack {
    /// `RACK.xmit_ts`: latest send time of a delivered segment (`rack.mstamp`).
    pub xmit: SimTime,
    /// `RACK.end_seq`: its end (breaks ties between equal send times).
    pub end_seq: u64,
    /// `RACK.rtt`: RTT of the last segment that advanced RACK (`rack.rtt_us`).
    pub rtt: SimDuration,
    /// RACK advanced since the last loss detection (`rack.advanced`).
    pub advanced: bool,
    /// Reordering events seen (Linux `tp->reord_seen`): a never-retransmitted segment
    /// delivered below the highest SACKed sequence.
    pub reord_seen: u32,
}

/// RFC 8985 / Linux `tcp_skb_sent_after`: transmission (t1, seq1) is later than (t2, seq2).
fn sent_after(t1: SimTime, t2: SimTime, seq1: u64, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

/// What one RACK loss detection found.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RackOutcome {
    /// Segments newly marked lost (first loss or lost retransmission).
    pub marked: u32,
    /// Of those, retransmissions deemed lost again (Linux `TCPLostRetransmit`).
    pub lost_retrans: u32,
    /// Wait until the latest segment sent before `RACK.xmit_ts` is due (the reorder
    /// timer, `*reo_timeout` of `tcp_rack_detect_loss`); `None`: nothing pending.
    pub timeout: Option<SimDuration>,
}

/// Outstanding segments and the counters derived from them. Laid out in declaration
/// order (`repr(C)`), 64-byte aligned: the counters, the queue and what an ACK
/// reads first (an idle ACK: the first two cache lines), RACK's state in the third,
/// the rest after.
#[derive(Clone, Debug, Default)]
#[repr(C, align(64))]
pub struct Scoreboard {
    pub packets_out: u32,
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    /// Segments deemed lost, not SACKed and not being retransmitted: due for retransmission.
    pending_rtx: u32,
    /// RACK loss detection is on (its state: `rack`, `tsorted`).
    rack_on: bool,
    /// The next slot of `sack_cache` to write (in the first line's padding).
    sack_cache_next: u8,
    segs: VecDeque<Seg>,
    /// Id (running index) of `segs[0]`.
    base: u64,
    /// Id of the highest SACKed segment.
    high_sacked: Option<u64>,
    /// Clock and `tcp_min_rtt` of the ACK being processed ([`Scoreboard::begin_ack`]),
    /// and the highest SACKed sequence when it arrived (Linux `prior_fack`).
    now: SimTime,
    min_rtt: SimDuration,
    prior_fack: u64,
    /// Segments ever marked lost (Linux `tp->lost`).
    pub lost_total: u64,
    /// Segments with a lower id have been examined by loss marking.
    lost_mark: u64,
    /// Segments with a lower id need no retransmission (RFC 6675 HighRxt, as an index).
    rtx_hint: u64,
    /// RACK's state and the transmissions in time order.
    pub rack: Rack,
    tsorted: VecDeque<TsEntry>,
    /// The last SACK blocks processed (a ring; Linux keeps the previous ACK's blocks in
    /// `recv_sack_cache` for the same purpose): every segment wholly inside one of them
    /// is SACKed, and stays so until cumulatively acknowledged (a mark is never
    /// cleared), so a block that repeats or extends one of them starts its walk after it.
    sack_cache: [(u64, u64); SACK_CACHE],
    /// FACK: the lowest `rtx_nxt` of the retransmissions in flight (Linux
    /// `lost_retrans_low`), and the first segment `tcp_timeout_skbs` has not passed
    /// (`scoreboard_skb_hint`, as an id).
    lost_retrans_low: u64,
    timeout_mark: u64,
}

/// Bytes per slot of a sending end's rings: a segment and its RACK time-list entry (the
/// resource model's per-flow memory, `resources::ring_bytes`).
pub const RING_SLOT_BYTES: usize = std::mem::size_of::<Seg>() + std::mem::size_of::<TsEntry>();

/// Blocks remembered by `Scoreboard::sack` (an ACK carries up to four).
const SACK_CACHE: usize = 8;
/// `Scoreboard::sack` looks for an already SACKed prefix only in longer blocks.
const SACK_SKIP_MIN: usize = 8;

impl Scoreboard {
    /// An empty scoreboard. Its rings take no memory until the first segment is sent
    /// (a connection's receiving end never sends one), then grow by doubling to the
    /// next power of two at or above the segments in flight.
    pub fn new() -> Self {
        Scoreboard::default()
    }

    /// Turns RACK loss detection on (before the first segment is sent).
    pub fn enable_rack(&mut self) {
        self.rack_on = true;
    }
    pub fn rack_enabled(&self) -> bool {
        self.rack_on
    }

    /// Starts processing an ACK at `now` (RACK needs the clock and `tcp_min_rtt`).
    pub fn begin_ack(&mut self, now: SimTime, min_rtt: Option<SimDuration>) {
        self.now = now;
        self.min_rtt = min_rtt.unwrap_or(SimDuration::MAX);
        self.prior_fack = self.fack();
    }

    /// End of the highest SACKed segment (Linux `tcp_highest_sack_seq`), 0 if none.
    fn fack(&self) -> u64 {
        self.high_sacked
            .map_or(0, |h| self.segs[(h - self.base) as usize].end)
    }

    /// Linux `tcp_rack_advance` for a newly (S)ACKed segment, and reordering detection
    /// (`tcp_check_sack_reordering`: a never-retransmitted segment delivered below the
    /// highest SACKed sequence `fack`).
    fn rack_delivered(&mut self, s: &Seg, fack: u64) {
        if !self.rack_on {
            return;
        }
        if !s.has(EVER_RETRANS) && s.start < fack {
            self.rack.reord_seen += 1;
        }
        let rtt = self.now.saturating_since(s.sent);
        if s.has(EVER_RETRANS) && rtt < self.min_rtt {
            // Ambiguous: the original may have been delivered (RFC 8985 §6.2 step 2).
            return;
        }
        self.rack.advanced = true;
        self.rack.rtt = rtt;
        if sent_after(s.sent, self.rack.xmit, s.end, self.rack.end_seq) {
            self.rack.xmit = s.sent;
            self.rack.end_seq = s.end;
        }
    }

    /// Segment `idx`'s latest transmission as a time-list entry.
    fn ts_entry(&self, idx: usize) -> TsEntry {
        let s = &self.segs[idx];
        TsEntry {
            id: self.base + idx as u64,
            sent: s.sent,
            end: s.end,
        }
    }

    fn ts_push(&mut self, idx: usize) {
        if self.rack_on {
            let e = self.ts_entry(idx);
            self.tsorted.push_back(e);
        }
    }

    /// The segment of a time-list entry, if the entry is still its latest transmission
    /// and the segment is neither delivered nor waiting for retransmission.
    fn ts_live(&self, e: &TsEntry) -> Option<usize> {
        let i = e.id.checked_sub(self.base)? as usize;
        let s = self.segs.get(i)?;
        if s.sent != e.sent || s.has(SACKED) || (s.has(LOST) && !s.has(RETRANS)) {
            return None;
        }
        Some(i)
    }

    /// RACK loss detection (Linux `tcp_rack_detect_loss`): walks the transmissions
    /// oldest first; each one sent before `RACK.xmit_ts` whose `RACK.rtt + reo_wnd` has
    /// passed is lost (a lost retransmission is due again). Stops at the first one sent
    /// after `RACK.xmit_ts` or not yet due; the remaining wait of the latest one sent
    /// before `RACK.xmit_ts` is the reorder timeout.
    pub fn rack_detect_loss(&mut self, now: SimTime, reo_wnd: SimDuration) -> RackOutcome {
        let mut out = RackOutcome::default();
        if !self.rack_on {
            return out;
        }
        let (rx, rend) = (self.rack.xmit, self.rack.end_seq);
        let wait = self.rack.rtt + reo_wnd;
        while let Some(e) = self.tsorted.front().copied() {
            let Some(i) = self.ts_live(&e) else {
                self.tsorted.pop_front();
                continue;
            };
            if !sent_after(rx, e.sent, rend, e.end) {
                return out;
            }
            if now.saturating_since(e.sent) < wait {
                break;
            }
            self.tsorted.pop_front();
            out.marked += 1;
            if self.mark_skb_lost(i) {
                out.lost_retrans += 1;
            }
        }
        // Not yet due: wait for the latest live transmission sent before RACK.xmit_ts
        // (later transmissions are due later; Linux takes the maximum).
        let p = self
            .tsorted
            .partition_point(|e| sent_after(rx, e.sent, rend, e.end));
        for j in (0..p).rev() {
            let e = self.tsorted[j];
            if self.ts_live(&e).is_some() {
                let due = e.sent + wait;
                out.timeout = Some(due.saturating_since(now));
                break;
            }
        }
        out
    }

    /// Linux `tcp_mark_skb_lost`: a first loss, or a lost retransmission (due again).
    /// Returns whether it was a retransmission of a segment already marked lost: the
    /// kernel's `TCPLostRetransmit` counts those, and only those (a probe's
    /// retransmission of a segment never marked lost is a first loss).
    fn mark_skb_lost(&mut self, i: usize) -> bool {
        let s = &mut self.segs[i];
        debug_assert!(!s.has(SACKED));
        let mut lost_again = false;
        if s.has(LOST) {
            if s.has(RETRANS) {
                s.flags &= !RETRANS;
                self.retrans_out -= 1;
                self.lost_total += 1;
                self.pending_rtx += 1;
                lost_again = true;
            }
        } else {
            s.flags |= LOST;
            self.lost_out += 1;
            self.lost_total += 1;
            if !s.has(RETRANS) {
                self.pending_rtx += 1;
            }
        }
        self.rtx_hint = self.rtx_hint.min(self.base + i as u64);
        lost_again
    }

    /// Linux `tcp_timeout_mark_lost` with RACK: on a timeout every unSACKed segment is
    /// lost except those sent within the last `RACK.rtt` (the head always is). Returns
    /// the lost retransmissions among them (each one counts in `TCPLostRetransmit`, as
    /// the kernel marks them through `tcp_mark_skb_lost`).
    pub fn mark_all_lost_rack(&mut self, now: SimTime) -> u32 {
        let rtt = self.rack.rtt;
        let mut lost_again = 0;
        for i in 0..self.segs.len() {
            let s = self.segs[i];
            if s.has(SACKED) || (i > 0 && now.saturating_since(s.sent) < rtt) {
                continue;
            }
            lost_again += u32::from(self.mark_skb_lost(i));
        }
        self.lost_mark = self.base + self.segs.len() as u64;
        self.rtx_hint = self.base;
        lost_again
    }

    /// Rebuilds the time-ordered list from the scoreboard (after an undo unmarks losses).
    fn ts_rebuild(&mut self) {
        if !self.rack_on {
            return;
        }
        let mut v: Vec<TsEntry> = (0..self.segs.len())
            .filter(|&i| !self.segs[i].has(SACKED))
            .map(|i| self.ts_entry(i))
            .collect();
        v.sort_by_key(|e| (e.sent, e.end));
        self.tsorted = v.into();
    }

    /// Lowest segment due for retransmission with RACK (any segment may become lost at
    /// any time, so only `pending_rtx` bounds the search).
    fn next_lost_rack(&mut self) -> Option<usize> {
        if self.pending_rtx == 0 {
            return None;
        }
        loop {
            let i = (self.rtx_hint - self.base) as usize;
            let s = self.segs.get(i)?;
            if s.has(LOST) && !s.has(RETRANS | SACKED) {
                return Some(i);
            }
            self.rtx_hint += 1;
        }
    }

    /// A tail loss probe retransmits segment `idx` (Linux `__tcp_retransmit_skb` from
    /// `tcp_send_loss_probe`): a new transmission time, never again an RTT sample, but
    /// not counted as a retransmission in flight (`retrans_out`).
    pub fn on_probe_retransmit(&mut self, idx: usize, now: SimTime) {
        let s = &mut self.segs[idx];
        s.flags |= EVER_RETRANS;
        s.sent = now;
        self.ts_push(idx);
    }

    pub fn len(&self) -> usize {
        self.segs.len()
    }
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }
    pub fn get(&self, idx: usize) -> &Seg {
        &self.segs[idx]
    }
    pub fn iter(&self) -> impl Iterator<Item = &Seg> {
        self.segs.iter()
    }

    /// RFC 6675 pipe / Linux `tcp_packets_in_flight`.
    pub fn in_flight(&self) -> u32 {
        (self.packets_out + self.retrans_out).saturating_sub(self.sacked_out + self.lost_out)
    }

    /// Records a newly sent segment.
    #[inline]
    pub fn push(&mut self, start: u64, end: u64, now: SimTime, fin: bool) {
        self.push_sent(start, end, now, fin, TxStamp::default());
    }

    /// Records a newly sent segment with its rate-estimation state (one write of the
    /// segment, not a push and a [`Scoreboard::set_tx`]).
    #[inline(always)]
    pub fn push_sent(&mut self, start: u64, end: u64, now: SimTime, fin: bool, tx: TxStamp) {
        debug_assert!(
            self.segs.back().is_none_or(|b| b.end == start),
            "segments must be contiguous"
        );
        self.segs.push_back(Seg {
            start,
            end,
            sent: now,
            flags: if fin { FIN } else { 0 },
            tx,
            rtx_nxt: 0,
        });
        self.packets_out += 1;
        self.ts_push(self.segs.len() - 1);
    }

    fn forget(&mut self, s: &Seg) {
        self.packets_out -= 1;
        if s.has(SACKED) {
            self.sacked_out -= 1;
        }
        if s.has(LOST) {
            self.lost_out -= 1;
            if !s.has(RETRANS | SACKED) {
                self.pending_rtx -= 1;
            }
        }
        if s.has(RETRANS) {
            self.retrans_out -= 1;
        }
    }

    /// Removes every segment below the cumulative acknowledgement `ack`. SACKed segments
    /// were delivered earlier and are not counted again.
    pub fn ack_cum(&mut self, ack: u64) -> Delivered {
        let mut d = Delivered::default();
        while let Some(&s) = self.segs.front() {
            if s.end > ack {
                break;
            }
            self.segs.pop_front();
            self.base += 1;
            if !s.has(SACKED) {
                d.note(&s);
                let fack = self.prior_fack;
                self.rack_delivered(&s, fack);
            }
            self.forget(&s);
        }
        self.after_cum_ack();
        d
    }

    /// What a cumulative ACK leaves to tidy once the acknowledged segments are gone: the
    /// RACK list's entries for them, and the marks that must not point below `base`.
    #[inline(always)]
    fn after_cum_ack(&mut self) {
        if self.rack_on {
            while self.tsorted.front().is_some_and(|e| e.id < self.base) {
                self.tsorted.pop_front();
            }
        }
        self.lost_mark = self.lost_mark.max(self.base);
        self.rtx_hint = self.rtx_hint.max(self.base);
        if self.high_sacked.is_some_and(|h| h < self.base) {
            self.high_sacked = None;
        }
    }

    /// [`Scoreboard::ack_cum`] while no outstanding segment is SACKed, lost or being
    /// retransmitted (`sacked_out`, `lost_out` and `retrans_out` all 0): every segment
    /// removed is newly delivered, and only `packets_out` counts it.
    #[inline]
    pub fn ack_cum_clean(&mut self, ack: u64) -> Delivered {
        debug_assert!(self.sacked_out == 0 && self.lost_out == 0 && self.retrans_out == 0);
        let mut d = Delivered::default();
        let fack = self.prior_fack;
        while let Some(s) = self.segs.front() {
            if s.end > ack {
                break;
            }
            debug_assert!(!s.has(SACKED | LOST | RETRANS));
            d.note(s);
            let s = *s;
            self.rack_delivered(&s, fack);
            self.segs.pop_front();
            self.base += 1;
            self.packets_out -= 1;
        }
        self.after_cum_ack();
        d
    }

    /// Marks the segments inside one SACK block (RFC 2018) as SACKed.
    pub fn sack(&mut self, b: SackBlock) -> Delivered {
        let mut d = Delivered::default();
        let mut i = self.segs.partition_point(|s| s.start < b.start);
        // skip what an earlier block covering this one's start has SACKed already (the
        // walk would find every such segment marked and do nothing): with a long
        // SACKed run, each ACK re-reports the whole run, extended by a segment or two.
        // (Looked up only for a block of more than `SACK_SKIP_MIN` segments whose first
        // one is SACKed: a short walk costs less than the look-up.)
        if self
            .segs
            .get(i + SACK_SKIP_MIN)
            .is_some_and(|s| s.end <= b.end)
            && self.segs[i].has(SACKED)
        {
            let mut upto = 0;
            for c in &self.sack_cache {
                if c.0 <= b.start && b.start < c.1 {
                    upto = upto.max(c.1.min(b.end));
                }
            }
            let skip = self.segs.partition_point(|s| s.end <= upto);
            if skip > i {
                debug_assert!(self.segs.range(i..skip).all(|s| s.has(SACKED)));
                i = skip;
            }
        }
        self.sack_cache[self.sack_cache_next as usize] = (b.start, b.end);
        self.sack_cache_next = ((self.sack_cache_next as usize + 1) % SACK_CACHE) as u8;
        while i < self.segs.len() && self.segs[i].end <= b.end {
            let s = &mut self.segs[i];
            if !s.has(SACKED) {
                let before = *s;
                s.flags = (s.flags | SACKED) & !(LOST | RETRANS);
                self.sacked_out += 1;
                if before.has(LOST) {
                    self.lost_out -= 1;
                    if !before.has(RETRANS) {
                        self.pending_rtx -= 1;
                    }
                }
                if before.has(RETRANS) {
                    self.retrans_out -= 1;
                }
                d.note(&before);
                if self.rack_on {
                    let fack = self.fack();
                    self.rack_delivered(&before, fack);
                }
                let id = self.base + i as u64;
                if self.high_sacked.is_none_or(|h| id > h) {
                    self.high_sacked = Some(id);
                }
            }
            i += 1;
        }
        d
    }

    fn mark_lost_at(&mut self, i: usize) -> bool {
        let s = &mut self.segs[i];
        if s.has(SACKED | LOST) {
            return false;
        }
        s.flags |= LOST;
        self.lost_out += 1;
        self.lost_total += 1;
        if !s.has(RETRANS) {
            self.pending_rtx += 1;
        }
        true
    }

    /// RFC 6675 loss marking: every unSACKed segment with at least DupThresh SACKed
    /// segments above it is lost. Returns the number of segments newly marked.
    pub fn mark_lost_sack(&mut self) -> u32 {
        let Some(high) = self.high_sacked else {
            return 0;
        };
        // Walk down from the highest SACKed segment to the DupThresh-th SACKed one.
        let mut idx = (high - self.base) as usize;
        let mut count = 0;
        let point = loop {
            if self.segs[idx].has(SACKED) {
                count += 1;
                if count == DUP_THRESH {
                    break self.base + idx as u64;
                }
            }
            if idx == 0 || self.base + (idx as u64) <= self.lost_mark {
                return 0;
            }
            idx -= 1;
        };
        let mut newly = 0;
        let from = self.lost_mark.max(self.base);
        for id in from..point {
            if self.mark_lost_at((id - self.base) as usize) {
                newly += 1;
            }
        }
        self.lost_mark = self.lost_mark.max(point);
        newly
    }

    /// Linux `tcp_fackets_out`: the segments from the first unacknowledged one up to and
    /// including the highest SACKed one (0 while nothing is SACKed).
    pub fn fackets_out(&self) -> u32 {
        self.high_sacked.map_or(0, |h| (h - self.base + 1) as u32)
    }

    /// Whether the first outstanding segment's last transmission is more than `rto` old
    /// (Linux `tcp_head_timedout`).
    pub fn head_timed_out(&self, now: SimTime, rto: SimDuration) -> bool {
        self.segs
            .front()
            .is_some_and(|s| now.saturating_since(s.sent) > rto)
    }

    /// FACK loss marking in recovery (Linux `tcp_update_scoreboard` with `tcp_is_fack`):
    /// `tcp_mark_head_lost(max(fackets_out − reordering, 1))` marks the unSACKed segments
    /// among the first that many, stopping at the first one that ends beyond the recovery
    /// point `high_seq`; then `tcp_timeout_skbs` marks, from the head on, every segment
    /// whose last transmission is more than `rto` old, up to the first one that is not.
    /// Returns the number of segments newly marked.
    pub fn mark_lost_fack(&mut self, high_seq: u64, now: SimTime, rto: SimDuration) -> u32 {
        let n = self.fackets_out().saturating_sub(DUP_THRESH).max(1) as u64;
        let point = self.base + n.min(self.segs.len() as u64);
        let mut newly = 0;
        let mut id = self.lost_mark.max(self.base);
        while id < point {
            let i = (id - self.base) as usize;
            if self.segs[i].end > high_seq {
                break;
            }
            newly += self.mark_lost_at(i) as u32;
            id += 1;
        }
        self.lost_mark = self.lost_mark.max(id);
        if self.head_timed_out(now, rto) {
            let mut id = self.timeout_mark.max(self.base);
            while let Some(s) = self.segs.get((id - self.base) as usize) {
                if now.saturating_since(s.sent) <= rto {
                    break;
                }
                newly += self.mark_lost_at((id - self.base) as usize) as u32;
                id += 1;
            }
            self.timeout_mark = id;
        }
        newly
    }

    /// Linux `tcp_mark_lost_retrans` (FACK, called in Recovery on SACKs): a
    /// retransmission in flight that was sent when `snd_nxt` was below the highest SACKed
    /// sequence is lost again — data sent after it arrived, it did not — and is due for
    /// retransmission. Returns the number found (Linux `TCPLostRetransmit`).
    pub fn mark_lost_retrans_fack(&mut self) -> u32 {
        let fack = self.fack();
        if self.retrans_out == 0 || fack <= self.lost_retrans_low {
            return 0;
        }
        let mut low = self.segs.back().map_or(0, |s| s.end);
        let (mut still, mut found) = (0, 0);
        for i in 0..self.segs.len() {
            if still == self.retrans_out {
                break;
            }
            let s = self.segs[i];
            if !s.has(RETRANS) {
                continue;
            }
            if fack > s.rtx_nxt {
                // Linux 3.x counts every one found here, lost before or not.
                self.mark_skb_lost(i);
                found += 1;
            } else {
                low = low.min(s.rtx_nxt);
                still += 1;
            }
        }
        if self.retrans_out > 0 {
            self.lost_retrans_low = low;
        }
        found
    }

    /// Marks the first outstanding segment lost (recovery without SACK, RFC 6582).
    pub fn mark_head_lost(&mut self) -> bool {
        if self.segs.is_empty() {
            return false;
        }
        self.lost_mark = self.lost_mark.max(self.base + 1);
        self.mark_lost_at(0)
    }

    /// Retransmission timeout: everything not SACKed is lost and no retransmission is
    /// in flight any more (Linux `tcp_enter_loss`).
    pub fn mark_all_lost(&mut self) {
        for s in self.segs.iter_mut() {
            if s.has(LOST) && s.has(RETRANS) {
                // A lost retransmission counts as a loss again (Linux `tcp_sum_lost`).
                self.lost_total += 1;
            }
            s.flags &= !RETRANS;
            if !s.has(SACKED | LOST) {
                s.flags |= LOST;
                self.lost_out += 1;
                self.lost_total += 1;
            }
        }
        self.retrans_out = 0;
        self.pending_rtx = self.lost_out;
        self.lost_mark = self.base + self.segs.len() as u64;
        self.rtx_hint = self.base;
    }

    /// Whether an outstanding segment was ever retransmitted (Linux `tcp_enter_loss`
    /// clears `undo_marker` when it finds one: an undo needs a clean flight).
    pub fn any_ever_retransmitted(&self) -> bool {
        self.segs.iter().any(|s| s.has(EVER_RETRANS))
    }

    /// Segments inside `[start, end)` that were ever retransmitted and end above `above`:
    /// what a D-SACK of data still in the queue takes off Linux's `undo_retrans`
    /// (`tcp_sacktag_one`).
    pub fn retransmitted_within(&self, start: u64, end: u64, above: u64) -> u32 {
        let mut i = self.segs.partition_point(|s| s.start < start);
        let mut n = 0;
        while i < self.segs.len() && self.segs[i].end <= end {
            let s = &self.segs[i];
            n += (s.has(EVER_RETRANS) && s.end > above) as u32;
            i += 1;
        }
        n
    }

    /// Undo of a spurious timeout (Linux `tcp_undo_cwnd_reduction` with `unmark_loss`):
    /// no segment is lost any more; retransmissions in flight stay counted, and loss
    /// marking starts afresh.
    pub fn unmark_lost(&mut self) {
        for s in self.segs.iter_mut() {
            s.flags &= !LOST;
        }
        self.lost_out = 0;
        self.pending_rtx = 0;
        self.lost_mark = self.base;
        self.timeout_mark = self.base;
        self.rtx_hint = self.base;
        self.ts_rebuild();
    }

    /// RFC 6675 NextSeg rule (1): the lowest lost segment not yet retransmitted.
    #[inline]
    pub fn next_lost(&mut self) -> Option<usize> {
        if self.rack_on {
            return self.next_lost_rack();
        }
        loop {
            let i = (self.rtx_hint - self.base) as usize;
            let s = self.segs.get(i)?;
            if s.has(LOST) && !s.has(RETRANS) {
                return Some(i);
            }
            // Safe to skip: SACKed, already retransmitted, or examined and not lost.
            if s.has(SACKED) || s.has(RETRANS) || self.rtx_hint < self.lost_mark {
                self.rtx_hint += 1;
            } else {
                return None;
            }
        }
    }

    /// Records the retransmission of segment `idx` at `now`.
    pub fn on_retransmit(&mut self, idx: usize, now: SimTime) {
        let snd_nxt = self.segs.back().map_or(0, |s| s.end);
        if self.retrans_out == 0 {
            self.lost_retrans_low = snd_nxt;
        }
        let s = &mut self.segs[idx];
        debug_assert!(!s.has(RETRANS));
        if s.has(LOST) {
            self.pending_rtx -= 1;
        }
        s.flags |= RETRANS | EVER_RETRANS;
        s.sent = now;
        s.rtx_nxt = snd_nxt;
        self.retrans_out += 1;
        self.ts_push(idx);
    }

    /// Records the rate-estimation state of segment `idx`'s latest transmission.
    pub fn set_tx(&mut self, idx: usize, tx: TxStamp) {
        self.segs[idx].tx = tx;
    }

    /// Checks the counters against the flags (tests and debug builds).
    pub fn check(&self) -> Result<(), String> {
        let n = |f: u8| self.segs.iter().filter(|s| s.has(f)).count() as u32;
        let (p, s, l, r) = (self.segs.len() as u32, n(SACKED), n(LOST), n(RETRANS));
        if (p, s, l, r)
            != (
                self.packets_out,
                self.sacked_out,
                self.lost_out,
                self.retrans_out,
            )
        {
            return Err(format!(
                "counters (out {}, sacked {}, lost {}, retrans {}) != flags ({p}, {s}, {l}, {r})",
                self.packets_out, self.sacked_out, self.lost_out, self.retrans_out
            ));
        }
        if self
            .segs
            .iter()
            .any(|x| x.has(SACKED) && x.has(LOST | RETRANS))
        {
            return Err("a SACKed segment is also lost or in retransmission".into());
        }
        let pending = self
            .segs
            .iter()
            .filter(|x| x.has(LOST) && !x.has(RETRANS | SACKED))
            .count() as u32;
        if pending != self.pending_rtx {
            return Err(format!(
                "pending_rtx {} != {pending} lost segments awaiting retransmission",
                self.pending_rtx
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ACK reads the counters, the queue and the ACK's clock in the first two lines,
    /// RACK's state in the third; an ACK with SACK blocks the SACK cache in the next two.
    #[test]
    fn layout_puts_the_per_ack_fields_first() {
        use std::mem::{align_of, offset_of, size_of};
        let line = |off: usize| off / 64;
        assert_eq!(align_of::<Scoreboard>(), 64);
        for (l, off) in [
            (0, offset_of!(Scoreboard, packets_out)),
            (0, offset_of!(Scoreboard, sacked_out)),
            (0, offset_of!(Scoreboard, lost_out)),
            (0, offset_of!(Scoreboard, retrans_out)),
            (0, offset_of!(Scoreboard, pending_rtx)),
            (0, offset_of!(Scoreboard, rack_on)),
            (
                0,
                offset_of!(Scoreboard, segs) + size_of::<VecDeque<Seg>>() - 1,
            ),
            (0, offset_of!(Scoreboard, base)),
            (1, offset_of!(Scoreboard, high_sacked)),
            (1, offset_of!(Scoreboard, now)),
            (1, offset_of!(Scoreboard, min_rtt)),
            (1, offset_of!(Scoreboard, prior_fack)),
            (1, offset_of!(Scoreboard, lost_total)),
            (1, offset_of!(Scoreboard, lost_mark)),
            (1, offset_of!(Scoreboard, rtx_hint)),
            (2, offset_of!(Scoreboard, rack)),
            (
                2,
                offset_of!(Scoreboard, tsorted) + size_of::<VecDeque<TsEntry>>() - 1,
            ),
        ] {
            assert_eq!(line(off), l, "offset {off}");
        }
    }

    const MSS: u64 = 1000;

    /// Segments 0..n of MSS bytes each, starting at sequence number 1.
    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::new();
        for i in 0..n {
            b.push(
                1 + i * MSS,
                1 + (i + 1) * MSS,
                SimTime::from_nanos(i),
                false,
            );
        }
        b
    }
    fn blk(from_seg: u64, to_seg: u64) -> SackBlock {
        SackBlock {
            start: 1 + from_seg * MSS,
            end: 1 + to_seg * MSS,
        }
    }

    /// `Sender::on_ack` assigns a cumulative ACK's `Delivered` when no SACK block
    /// delivered anything, instead of merging it into the empty one: the two agree for
    /// what cumulative ACKs and SACK blocks return (plain, retransmitted, empty).
    #[test]
    fn merge_into_empty_is_assignment() {
        let mut b = board(8);
        b.set_tx(
            2,
            TxStamp {
                delivered: 7,
                delivered_time: SimTime::from_nanos(5),
                first_tx: SimTime::from_nanos(3),
                app_limited: true,
                lost: 1,
                in_flight: 4,
            },
        );
        b.mark_head_lost();
        b.on_retransmit(0, SimTime::from_nanos(40));
        let cases = [
            b.clone().ack_cum(1 + 3 * MSS), // over a retransmission
            b.clone().ack_cum(1),           // nothing
            b.clone().sack(blk(2, 5)),      // SACKed, with a rate stamp
            {
                let mut c = b.clone();
                c.ack_cum(1 + MSS);
                c.ack_cum(1 + 4 * MSS) // never retransmitted
            },
        ];
        assert!(cases.iter().any(|d| d.retrans) && cases.iter().any(|d| d.rate.is_some()));
        for d in cases {
            let mut m = Delivered::default();
            m.merge(d);
            assert_eq!(m, d);
        }
    }
    /// A SACKed run re-reported by every ACK, one segment longer each time, beside a
    /// second growing block and with cumulative ACKs below it: each call counts only
    /// the newly SACKed segments and the marks end up exactly on the blocks, with the
    /// already SACKed prefix skipped (debug builds check the skipped ones are SACKed).
    #[test]
    fn re_reported_sack_blocks_count_only_new_segments() {
        let mut b = board(200);
        let mut fresh_total = 0;
        for k in 11..=150 {
            let mut d = b.sack(blk(10, k));
            if k >= 60 {
                d.merge(b.sack(blk(160, 160 + (k - 59).min(40))));
            }
            if k % 25 == 0 {
                b.ack_cum(1 + (k / 25) * MSS);
            }
            // each call reported exactly the segments it newly SACKed
            fresh_total += d.pkts;
            assert_eq!(b.sacked_out as u64, fresh_total as u64, "k = {k}");
        }
        assert_eq!(b.sacked_out, 140 + 40);
        let sacked: Vec<bool> = b.iter().map(|s| s.has(SACKED)).collect();
        let first = b.iter().next().unwrap().start;
        assert_eq!(first, 1 + 6 * MSS);
        // segments 10..150 and 160..200 SACKed, the rest not
        for (i, &x) in sacked.iter().enumerate() {
            let id = i as u64 + 6;
            assert_eq!(
                x,
                (10..150).contains(&id) || (160..200).contains(&id),
                "segment {id}"
            );
        }
    }

    fn lost(b: &Scoreboard) -> Vec<usize> {
        b.iter()
            .enumerate()
            .filter(|(_, s)| s.has(LOST))
            .map(|(i, _)| i)
            .collect()
    }

    #[test]
    fn islost_needs_dupthresh_sacked_segments_above() {
        // Segment 0 lost, 1..=2 SACKed: only 2 SACKed above, not lost yet.
        let mut b = board(10);
        assert_eq!(b.sack(blk(1, 3)).pkts, 2);
        assert_eq!(b.mark_lost_sack(), 0);
        assert_eq!(b.in_flight(), 8);
        // Third SACKed segment: segment 0 is lost (RFC 6675 IsLost(HighACK)).
        b.sack(blk(1, 4));
        assert_eq!(b.mark_lost_sack(), 1);
        assert_eq!(lost(&b), vec![0]);
        // pipe = 10 out − 3 SACKed − 1 lost = 6.
        assert_eq!(b.in_flight(), 6);
        b.check().unwrap();
    }

    #[test]
    fn multiple_holes_and_discontiguous_blocks() {
        // Holes at 0, 2, 5; SACKed 1, 3, 4, 6, 7. Segment 5 has 2 SACKed above (6, 7):
        // not lost; 2 has 4 above: lost; 0 lost.
        let mut b = board(10);
        for (f, t) in [(1, 2), (3, 5), (6, 8)] {
            b.sack(blk(f, t));
        }
        b.mark_lost_sack();
        assert_eq!(lost(&b), vec![0, 2]);
        // One more SACK (segment 8) makes 5 lost; 9 stays outstanding.
        b.sack(blk(8, 9));
        assert_eq!(b.mark_lost_sack(), 1);
        assert_eq!(lost(&b), vec![0, 2, 5]);
        // pipe = 10 − 6 SACKed − 3 lost = 1 (segment 9).
        assert_eq!(b.in_flight(), 1);
        b.check().unwrap();
    }

    #[test]
    fn nextseg_retransmits_lost_in_order_and_pipe_counts_retransmissions() {
        let mut b = board(10);
        for (f, t) in [(1, 2), (3, 5), (6, 9)] {
            b.sack(blk(f, t));
        }
        b.mark_lost_sack();
        assert_eq!(lost(&b), vec![0, 2, 5]);
        let t = SimTime::from_nanos(1000);
        let first = b.next_lost().unwrap();
        assert_eq!(first, 0);
        b.on_retransmit(first, t);
        assert_eq!(b.in_flight(), 2, "segment 9 plus the retransmission of 0");
        assert_eq!(b.next_lost(), Some(2));
        b.on_retransmit(2, t);
        assert_eq!(b.next_lost(), Some(5));
        b.on_retransmit(5, t);
        assert_eq!(
            b.next_lost(),
            None,
            "segment 9 is not lost: rule (1) yields nothing"
        );
        assert_eq!(b.in_flight(), 4);
        // The retransmission of 0 arrives: cumulative ACK up to 2 (1 was SACKed).
        let d = b.ack_cum(1 + 2 * MSS);
        assert_eq!(d.pkts, 1, "only segment 0 is newly delivered");
        assert!(
            d.retrans && d.first_sent.is_none(),
            "Karn: no RTT sample from a retransmission"
        );
        // SACK of the retransmitted 5: its retransmission leaves the pipe.
        b.sack(blk(5, 6));
        assert_eq!(b.in_flight(), 2, "retransmission of 2 and segment 9");
        b.check().unwrap();
    }

    #[test]
    fn cumulative_ack_rtt_samples_and_sacked_segments() {
        let mut b = board(6);
        b.sack(blk(2, 4));
        let d = b.ack_cum(1 + 5 * MSS);
        // Segments 0, 1, 4 newly delivered; 2 and 3 were SACKed before.
        assert_eq!(d.pkts, 3);
        assert_eq!(d.first_sent, Some(SimTime::from_nanos(0)));
        assert_eq!(d.last_sent, Some(SimTime::from_nanos(4)));
        assert_eq!((b.packets_out, b.sacked_out), (1, 0));
        b.check().unwrap();
    }

    #[test]
    fn rto_marks_everything_unsacked_lost() {
        let mut b = board(5);
        b.sack(blk(3, 4));
        b.mark_head_lost();
        let i = b.next_lost().unwrap();
        b.on_retransmit(i, SimTime::from_nanos(9));
        b.mark_all_lost();
        assert_eq!(lost(&b), vec![0, 1, 2, 4]);
        assert_eq!(b.retrans_out, 0);
        assert_eq!(b.in_flight(), 0);
        assert_eq!(
            b.next_lost(),
            Some(0),
            "the retransmitted head is due again"
        );
        b.check().unwrap();
    }

    #[test]
    fn head_marking_without_sack() {
        let mut b = board(4);
        assert!(b.mark_head_lost());
        assert!(!b.mark_head_lost(), "already lost");
        assert_eq!(b.next_lost(), Some(0));
        b.on_retransmit(0, SimTime::ZERO);
        assert_eq!(b.next_lost(), None);
        b.ack_cum(1 + MSS);
        assert!(b.mark_head_lost(), "NewReno partial ACK: the new head");
        assert_eq!(b.next_lost(), Some(0));
        b.check().unwrap();
    }
}
