//! DOCSIS 3.0 downstream: per-service-flow token-bucket regulators in front of the CMTS
//! downstream scheduler (the qdisc under test), feeding a bonding group of downstream
//! channels that serialise in parallel.
//!
//! ```text
//!            ┌ regulator cm0 (token bucket, holding queue) ┐
//!  arrival ─►┼ regulator cm1                               ┼─► [ CMTS qdisc under test ] ─► first free channel ─┬ ch0 38 Mbit/s ┐
//!            └ regulator cmN (or none: unregulated)        ┘                                                   └ ch3 38 Mbit/s ┴► resequence per CM ─► CMs
//! ```
//!
//! ## The model and where it comes from
//! - **Regulator before the scheduler.** As in the Clemson ns-2 DOCSIS model used by the
//!   downstream study (its CMTS model: arrivals → per-service-flow regulator with a token
//!   bucket timer → downstream scheduler/AQM → channels), a packet that exceeds its
//!   service flow's rate is *held by that flow's regulator* and enters the shared CMTS
//!   queue only when it conforms. Each service flow has its own holding queue, so a
//!   held packet never blocks another cable modem's packets, and the queue under test
//!   only sees conforming traffic. Its sojourn time is measured from the moment the
//!   regulator releases the packet.
//! - **Token bucket** (DOCSIS 3.0 MULPI, Maximum Sustained Traffic Rate R and Maximum
//!   Traffic Burst B): over any interval T the flow forwards at most `B + R·T/8` bytes.
//!   The bytes counted are the Ethernet frame (the MAC PDU from DA through CRC), i.e.
//!   `size + overhead` with the DOCSIS topology's default overhead of 18 bytes. Default
//!   B = 3044 bytes (two 1522-byte frames). Optional **peak rate** P: a second bucket of
//!   `peak_bucket` bytes (default 1522, one maximum frame, as ns-2's DelayTb) that a
//!   packet must also satisfy. The regulator is strict: a packet leaves only if every
//!   bucket holds its full length, so the invariant holds exactly.
//! - **Holding queue limit** `regulator_limit` packets per service flow (default 2048, the
//!   study's CMTS queue capacity); a packet arriving to a full holding queue is dropped
//!   with reason `lower_layer`.
//! - **Channels.** One downstream channel carries 38 Mbit/s of MAC frames (256-QAM in a
//!   6 MHz channel after FEC and MPEG framing: the study's "ideal" rate; the 6-byte DOCSIS
//!   MAC header is folded into that rate). A bonding group of k channels serialises k
//!   frames at once: whenever a channel is free the scheduler dequeues the next packet
//!   and it goes to the lowest-numbered free channel (packet striping, as DOCSIS 3.0
//!   bonding distributes a flow's packets over the channels of its bonding group).
//! - **Resequencing.** Parallel channels finish packets of different lengths out of
//!   order; the cable modem restores the order of its service flow (DOCSIS 3.0
//!   downstream resequencing), so a completed packet is handed up only when every
//!   earlier packet of the same CM has completed.
//! - Not modelled: the upstream request/grant MAC (the DOCSIS topology gives each CM a
//!   dedicated upstream link at the upstream rate; the study's upstream is never
//!   congested), MAP/scheduling jitter, minimum reserved rates, and CM-side buffering.

use super::token_bucket::TokenBucket;
use super::{note_dequeue, timer, to_qdisc, LinkStats};
use crate::event::{Event, EventQueue};
use crate::packet::{LinkId, Packet};
use crate::qdisc::{AnyQdisc, DropReason, QdiscOut};
use crate::time::{Rate, SimDuration, SimTime};
use std::collections::VecDeque;

/// A resolved service flow's regulator.
#[derive(Clone, Debug, PartialEq)]
pub struct ServiceFlowParams {
    /// Tier name for reports.
    pub tier: String,
    /// Maximum sustained traffic rate R.
    pub max_rate: Rate,
    /// Maximum traffic burst B in bytes.
    pub bucket: u64,
    /// Optional peak traffic rate P and its bucket in bytes.
    pub peak: Option<(Rate, u64)>,
}

/// A resolved DOCSIS downstream.
#[derive(Clone, Debug, PartialEq)]
pub struct DocsisParams {
    /// Channels in the bonding group (≥ 1).
    pub channels: u32,
    /// Rate of one channel.
    pub channel_rate: Rate,
    /// Per cable modem (index = the link's peer index): its regulator, or `None` for an
    /// unregulated service flow.
    pub flows: Vec<Option<ServiceFlowParams>>,
    /// Holding-queue limit of each regulator, in packets.
    pub regulator_limit: u32,
}

/// One cable modem's regulator, on cache lines of its own (`repr(C)`, 64-byte aligned):
/// a packet's arrival reads the sustained bucket's state (`TokenBucket` keeps its
/// tokens, depth and last refill first) in the first line, and its rate, the holding
/// queue and whether there is a peak bucket in the second (unaligned, the 240-byte
/// regulators of a 1,000-modem downstream straddled three or four lines per arrival).
#[derive(Debug)]
#[repr(C, align(64))]
struct Regulator {
    sustained: TokenBucket,
    queue: VecDeque<Packet>,
    peak: Option<TokenBucket>,
    armed: SimTime,
    drops: u64,
    held_back: u64,
}

impl Regulator {
    #[inline]
    fn conforms(&mut self, now: SimTime, bytes: u64) -> bool {
        self.sustained.conforms(now, bytes)
            && self.peak.as_mut().is_none_or(|p| p.conforms(now, bytes))
    }
    #[inline]
    fn charge(&mut self, bytes: u64) {
        self.sustained.charge(bytes);
        if let Some(p) = self.peak.as_mut() {
            p.charge(bytes);
        }
    }
    fn ready_at(&mut self, now: SimTime, bytes: u64) -> SimTime {
        self.sustained.refill(now);
        let mut at = self.sustained.ready_at(now, bytes);
        if let Some(p) = self.peak.as_mut() {
            p.refill(now);
            at = at.max(p.ready_at(now, bytes));
        }
        at
    }
}

/// Runtime state of a DOCSIS downstream.
#[derive(Debug)]
pub struct DocsisDown {
    pub p: DocsisParams,
    regs: Vec<Option<Regulator>>,
    /// Packet being serialised on each channel.
    channels: Vec<Option<Packet>>,
    /// Bit `c` set: channel `c` is free (`channels[c]` is `None`; at most 64 channels).
    /// `pull` takes the lowest free channel from it instead of scanning the channels'
    /// packet slots (136 bytes each: 32 channels are 68 cache lines) on every call.
    free: u64,
    /// Per CM: uids of its packets on the channels or finished and waiting (in
    /// `waiting`), in dequeue order (resequencing): the front one goes up next.
    reseq: Vec<VecDeque<u64>>,
    /// Packets that finished their channel before an earlier packet of their cable modem
    /// (at most one per channel): a packet finishing in order, the usual case, goes up
    /// at once and is never stored.
    waiting: Vec<Packet>,
    /// Whether a packet that reaches its cable modem at the instant it leaves the
    /// channels may do so without an arrival event of its own ([`Self::owe_arrival`]).
    pub(crate) inline_arrivals: bool,
    /// The oldest packet on the link's wire arrives now, before anything else happens
    /// (set by `owe_arrival`, taken by `Link::take_arrival_owed`).
    pub(crate) arrival_owed: bool,
}

impl DocsisDown {
    pub fn new(p: DocsisParams) -> Self {
        let regs = p
            .flows
            .iter()
            .map(|f| {
                f.as_ref().map(|f| Regulator {
                    sustained: TokenBucket::new(f.max_rate, f.bucket),
                    peak: f.peak.map(|(r, b)| TokenBucket::new(r, b)),
                    queue: VecDeque::new(),
                    armed: SimTime::NEVER,
                    drops: 0,
                    held_back: 0,
                })
            })
            .collect();
        let n = p.flows.len();
        DocsisDown {
            regs,
            channels: vec![None; p.channels as usize],
            free: all_free(p.channels),
            reseq: (0..n)
                .map(|_| VecDeque::with_capacity(p.channels as usize))
                .collect(),
            waiting: Vec::with_capacity(p.channels as usize),
            inline_arrivals: true,
            arrival_owed: false,
            p,
        }
    }

    /// Whether packets may reach their modems without an arrival event of their own
    /// ([`Self::owe_arrival`]; on by default). Off: one event per packet, the reference
    /// the tests compare with. Only before the run starts.
    #[doc(hidden)]
    pub fn set_inline_arrivals(&mut self, on: bool) {
        self.inline_arrivals = on;
    }

    /// **Arrivals without an event.** A packet put on the link's empty wire at `now` and
    /// due at its cable modem at `at` would get an arrival event (`timer::ARRIVE`). When
    /// it is due at once (`at == now`: no propagation delay, the default) and nothing
    /// else is due by `now` — no event, no deferred push — that event would be the very
    /// next one popped: events pushed after it at `now` come after it, later ones later.
    /// Making the arrival right after the current event instead (the simulator does it
    /// when `Link::take_arrival_owed` says so) then runs the same steps in the same
    /// order; only the insertion counter skips one number, which keeps the order of
    /// every other pair of events. Returns whether the arrival is now owed.
    #[inline]
    pub(crate) fn owe_arrival(&mut self, at: SimTime, now: SimTime, ev: &EventQueue) -> bool {
        let owe = arrival_owable(self.inline_arrivals, at, now, ev);
        self.arrival_owed = owe;
        owe
    }

    /// Packets held below/beside the qdisc: regulator queues and channels (a packet that
    /// finished its channel but waits for resequencing is still on its channel's list).
    pub fn held(&self) -> usize {
        self.regs
            .iter()
            .flatten()
            .map(|r| r.queue.len())
            .sum::<usize>()
            + self.reseq.iter().map(|q| q.len()).sum::<usize>()
    }

    /// Regulator drops (holding queue full) per service flow.
    pub fn regulator_drops(&self) -> u64 {
        self.regs.iter().flatten().map(|r| r.drops).sum()
    }

    /// Times a regulator held a packet back, summed.
    pub fn held_back(&self) -> u64 {
        self.regs.iter().flatten().map(|r| r.held_back).sum()
    }

    /// A packet for cable modem `peer` arrives at the CMTS: pass it to the qdisc if its
    /// service flow conforms (and nothing of that flow is waiting), else hold or drop it.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn arrive(
        &mut self,
        peer: usize,
        pkt: Packet,
        overhead: u32,
        link: LinkId,
        now: SimTime,
        ev: &mut EventQueue,
        qdisc: &mut AnyQdisc,
        out: &mut QdiscOut,
        stats: &mut LinkStats,
    ) {
        let bytes = (pkt.size + overhead) as u64;
        let Some(reg) = self.regs[peer].as_mut() else {
            to_qdisc(qdisc, out, stats, pkt, now);
            return;
        };
        if reg.queue.is_empty() && reg.conforms(now, bytes) {
            reg.charge(bytes);
            to_qdisc(qdisc, out, stats, pkt, now);
        } else if reg.queue.len() < self.p.regulator_limit as usize {
            reg.held_back += 1;
            reg.queue.push_back(pkt);
            if reg.queue.len() == 1 {
                let at = reg.ready_at(now, bytes);
                Self::arm(reg, at, link, peer, ev);
            }
        } else {
            reg.drops += 1;
            stats.lower_drops += 1;
            out.drops.push((pkt, DropReason::LowerLayer));
        }
    }

    fn arm(reg: &mut Regulator, at: SimTime, link: LinkId, peer: usize, ev: &mut EventQueue) {
        if at < reg.armed {
            reg.armed = at;
            ev.push(
                at,
                Event::LinkTimer {
                    link,
                    kind: timer::REGULATOR | peer as u32,
                },
            );
        }
    }

    /// Regulator `peer`'s wake-up: release every head packet that now conforms.
    #[allow(clippy::too_many_arguments)]
    pub fn on_regulator_timer(
        &mut self,
        peer: usize,
        overhead: u32,
        link: LinkId,
        now: SimTime,
        ev: &mut EventQueue,
        qdisc: &mut AnyQdisc,
        out: &mut QdiscOut,
        stats: &mut LinkStats,
    ) {
        let Some(reg) = self.regs[peer].as_mut() else {
            return;
        };
        if reg.armed != now {
            return;
        }
        reg.armed = SimTime::NEVER;
        while let Some(head) = reg.queue.front() {
            let bytes = (head.size + overhead) as u64;
            if reg.conforms(now, bytes) {
                reg.charge(bytes);
                let p = reg.queue.pop_front().expect("head");
                to_qdisc(qdisc, out, stats, p, now);
            } else {
                let at = reg.ready_at(now, bytes);
                Self::arm(reg, at, link, peer, ev);
                break;
            }
        }
    }

    /// Starts every free channel on the next packet of the qdisc.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn pull(
        &mut self,
        peer_of: &[u32],
        overhead: u32,
        link: LinkId,
        now: SimTime,
        ev: &mut EventQueue,
        qdisc: &mut AnyQdisc,
        out: &mut QdiscOut,
        stats: &mut LinkStats,
    ) {
        let k = self.channels.len() as u64;
        // the free channels in increasing order, until the qdisc has nothing to send
        while self.free != 0 {
            let c = self.free.trailing_zeros() as usize;
            let Some(p) = super::dequeue_cold(qdisc, now, out) else {
                break;
            };
            self.free &= !(1u64 << c);
            note_dequeue(stats, p.enqueued_at, p.ecn, now);
            let tx = self.p.channel_rate.tx_time(p.size + overhead);
            if now >= stats.warmup {
                // utilisation of the bonding group as a whole
                stats.busy += SimDuration::from_nanos(tx.as_nanos() / k);
            }
            let peer = super::peer_index(peer_of, p.dst);
            self.reseq[peer].push_back(p.uid);
            self.channels[c] = Some(p);
            ev.push(
                now + tx,
                Event::LinkTimer {
                    link,
                    kind: timer::CHANNEL | c as u32,
                },
            );
        }
    }

    /// Channel `c` finished its packet: resequence it and return, in order, the packets of
    /// its cable modem that may now go up (through `deliver`).
    pub fn on_channel_done(&mut self, c: usize, peer_of: &[u32], mut deliver: impl FnMut(Packet)) {
        let p = self.channels[c]
            .take()
            .expect("channel timer without a packet");
        self.free |= 1u64 << c;
        let peer = super::peer_index(peer_of, p.dst);
        let q = &mut self.reseq[peer];
        if q.front() != Some(&p.uid) {
            // an earlier packet of this modem is still on a channel
            debug_assert!(q.contains(&p.uid), "packet missing from resequencing list");
            self.waiting.push(p);
            return;
        }
        q.pop_front();
        deliver(p);
        if self.waiting.is_empty() {
            return;
        }
        // the modem's packets that finished before this one and are now in order
        while let Some(&next) = q.front() {
            let Some(i) = self.waiting.iter().position(|w| w.uid == next) else {
                break;
            };
            q.pop_front();
            deliver(self.waiting.swap_remove(i));
        }
    }

    /// Number of busy channels.
    pub fn busy_channels(&self) -> usize {
        self.channels.len() - self.free.count_ones() as usize
    }
}

/// Whether an arrival due at `at`, scheduled at `now`, may be owed instead of pushed as
/// an event ([`DocsisDown::owe_arrival`]): `inline` (the link allows it), due at once,
/// and nothing else due by then.
#[inline]
pub(super) fn arrival_owable(inline: bool, at: SimTime, now: SimTime, ev: &EventQueue) -> bool {
    inline && at == now && ev.nothing_due_by(now)
}

/// The free-channel mask of `n` (1 to 64) idle channels.
fn all_free(n: u32) -> u64 {
    assert!((1..=64).contains(&n), "{n} channels (1 to 64)");
    u64::MAX >> (64 - n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil;
    use crate::qdisc::{Qdisc, QdiscConfig};
    use crate::time::SimDuration;

    fn stats() -> LinkStats {
        LinkStats::new(SimTime::ZERO, SimDuration::from_millis(100))
    }

    /// Drives one regulator directly with a burst of simultaneous arrivals (the worst
    /// case for the burst bound) and checks every window of the released stream.
    #[test]
    fn regulator_release_obeys_docsis_burst_bound_and_rate() {
        let flow = ServiceFlowParams {
            tier: "t1".into(),
            max_rate: Rate::from_bps(6_000_000),
            bucket: 3044,
            peak: None,
        };
        let p = DocsisParams {
            channels: 1,
            channel_rate: Rate::from_bps(38_000_000),
            flows: vec![Some(flow)],
            regulator_limit: 100_000,
        };
        let mut d = DocsisDown::new(p);
        let mut q = QdiscConfig::default().build(testutil::ctx(38_000_000));
        let mut out = QdiscOut::new(false);
        let mut st = stats();
        let mut ev = EventQueue::new();
        let oh = 18;
        // 400 packets of mixed sizes all arrive at t=0, another 400 at t=1 s
        let sizes = [1500u32, 40, 1500, 576, 1500, 1500, 100];
        let mut uid = 0;
        let mut released: Vec<(SimTime, u64)> = Vec::new();
        let mut feed = |d: &mut DocsisDown,
                        q: &mut AnyQdisc,
                        ev: &mut EventQueue,
                        out: &mut QdiscOut,
                        st: &mut LinkStats,
                        now: SimTime| {
            for i in 0..400 {
                uid += 1;
                let pkt = testutil::pkt(0, sizes[i % sizes.len()], uid, now);
                d.arrive(0, pkt, oh, 0, now, ev, q, out, st);
            }
        };
        feed(&mut d, &mut q, &mut ev, &mut out, &mut st, SimTime::ZERO);
        // the second batch arrives after the first has drained and the bucket refilled
        let mut second = Some(SimTime::from_nanos(1_000_000_000));
        loop {
            // what reached the qdisc carries its release instant in `enqueued_at`
            while let Some(p) = q.dequeue(SimTime::ZERO, &mut out) {
                released.push((p.enqueued_at, (p.size + oh) as u64));
            }
            if let Some(t2) = second {
                if ev.peek_time().is_none_or(|n| n >= t2) {
                    second = None;
                    feed(&mut d, &mut q, &mut ev, &mut out, &mut st, t2);
                    continue;
                }
            }
            match ev.pop() {
                Some((t, Event::LinkTimer { kind, .. })) => {
                    d.on_regulator_timer(
                        (kind & timer::INDEX) as usize,
                        oh,
                        0,
                        t,
                        &mut ev,
                        &mut q,
                        &mut out,
                        &mut st,
                    );
                }
                Some(_) => unreachable!(),
                None => break,
            }
        }
        assert_eq!(released.len(), 800);
        assert!(out.drops.is_empty());
        for i in 0..released.len() {
            let mut bytes = 0u128;
            for j in i..released.len() {
                bytes += released[j].1 as u128;
                let win = (released[j].0 - released[i].0).as_nanos() as u128;
                assert!(
                    bytes * 8_000_000_000 <= 3044 * 8_000_000_000 + 6_000_000 * win,
                    "window {i}..{j}: {bytes} B in {win} ns"
                );
            }
        }
        // rate over the first greedy stretch
        let first: Vec<_> = released
            .iter()
            .filter(|r| r.0 < SimTime::from_nanos(1_000_000_000))
            .collect();
        let bytes: u64 = first.iter().map(|r| r.1).sum();
        let span = (first.last().unwrap().0 - first[0].0).as_secs_f64();
        let rate = (bytes - 3044) as f64 * 8.0 / span;
        assert!((rate / 6e6 - 1.0).abs() < 0.005, "rate {rate}");
    }

    #[test]
    fn peak_rate_spaces_a_full_bucket() {
        // Big sustained bucket, peak 12 Mbit/s with a one-frame bucket: a burst leaves at
        // the peak rate, one 1518-byte frame per 1.012 ms.
        let flow = ServiceFlowParams {
            tier: "t".into(),
            max_rate: Rate::from_bps(6_000_000),
            bucket: 100_000,
            peak: Some((Rate::from_bps(12_000_000), 1522)),
        };
        let p = DocsisParams {
            channels: 1,
            channel_rate: Rate::from_bps(38_000_000),
            flows: vec![Some(flow)],
            regulator_limit: 1000,
        };
        let mut d = DocsisDown::new(p);
        let mut q = QdiscConfig::default().build(testutil::ctx(38_000_000));
        let mut out = QdiscOut::new(false);
        let mut st = stats();
        let mut ev = EventQueue::new();
        for uid in 0..10 {
            d.arrive(
                0,
                testutil::pkt(0, 1500, uid, SimTime::ZERO),
                18,
                0,
                SimTime::ZERO,
                &mut ev,
                &mut q,
                &mut out,
                &mut st,
            );
        }
        let mut times = vec![];
        while let Some(p) = q.dequeue(SimTime::ZERO, &mut out) {
            times.push(p.enqueued_at);
        }
        while let Some((t, Event::LinkTimer { kind, .. })) = ev.pop() {
            d.on_regulator_timer(
                (kind & timer::INDEX) as usize,
                18,
                0,
                t,
                &mut ev,
                &mut q,
                &mut out,
                &mut st,
            );
            while let Some(p) = q.dequeue(t, &mut out) {
                times.push(p.enqueued_at);
            }
        }
        assert_eq!(times.len(), 10);
        assert_eq!(times[0], SimTime::ZERO);
        for w in times.windows(2).skip(1) {
            let gap = (w[1] - w[0]).as_nanos();
            assert_eq!(gap, 1_012_000, "peak spacing");
        }
        // the first two: a 1522 bucket holds one 1518 frame, refilling 1514 more bytes takes 1.009333 ms
        assert_eq!((times[1] - times[0]).as_nanos(), 1_009_334);
    }

    /// What an arrival reads of its modem's regulator lies in two cache lines.
    #[test]
    fn regulator_arrival_fields_share_two_lines() {
        use std::mem::{align_of, offset_of, size_of};
        assert_eq!(align_of::<Regulator>(), 64);
        assert_eq!(offset_of!(Regulator, sustained), 0);
        // (`token_bucket::tests` pins the bucket's state in its first 40 bytes)
        assert!(size_of::<TokenBucket>() <= 128);
        assert!(offset_of!(Regulator, queue) + size_of::<VecDeque<Packet>>() <= 128);
        // the peak bucket's tag: `Option<TokenBucket>` starts with it or its niche
        assert!(offset_of!(Regulator, peak) + 16 <= 128);
    }

    /// The free-channel mask follows the channels' packet slots: a random mix of
    /// arrivals and channel completions (64 channels, the most) always starts the lowest
    /// free channels, as a scan of the slots would. Resequencing: a completion hands up
    /// exactly the longest finished prefix of its modem's packets in dequeue order.
    #[test]
    fn free_channel_mask_matches_the_slots() {
        use crate::rng::Rng;
        for channels in [1u32, 3, 32, 64] {
            let p = DocsisParams {
                channels,
                channel_rate: Rate::from_bps(38_000_000),
                flows: vec![None; 3],
                regulator_limit: 10,
            };
            let mut d = DocsisDown::new(p);
            let mut q = QdiscConfig::default().build(testutil::ctx(38_000_000));
            let mut out = QdiscOut::new(false);
            let mut st = stats();
            let mut ev = EventQueue::new();
            let peer_of = vec![0u32, 1, 2];
            let mut rng = Rng::stream(channels as u64, "test", 0);
            let mut uid = 0;
            let mut now = SimTime::ZERO;
            // per modem: (uid, finished) of its dequeued packets not yet handed up
            let mut model: Vec<VecDeque<(u64, bool)>> = vec![VecDeque::new(); 3];
            let mut out_of_order = 0;
            for _ in 0..3000 {
                if rng.below(2) == 0 {
                    for _ in 0..=rng.below(4) {
                        uid += 1;
                        let dst = rng.below(3) as u32;
                        let pkt = Packet {
                            uid,
                            size: 64 + rng.below(1437) as u32,
                            dst,
                            ..Default::default()
                        };
                        d.arrive(
                            dst as usize,
                            pkt,
                            18,
                            0,
                            now,
                            &mut ev,
                            &mut q,
                            &mut out,
                            &mut st,
                        );
                    }
                    // which channels a scan of the slots would start, lowest first
                    let idle: Vec<usize> = (0..channels as usize)
                        .filter(|&c| d.channels[c].is_none())
                        .take(q.len())
                        .collect();
                    let busy_before: Vec<bool> = d.channels.iter().map(|c| c.is_some()).collect();
                    d.pull(&peer_of, 18, 0, now, &mut ev, &mut q, &mut out, &mut st);
                    let started: Vec<usize> = (0..channels as usize)
                        .filter(|&c| d.channels[c].is_some() && !busy_before[c])
                        .collect();
                    assert_eq!(started, idle);
                    for &c in &started {
                        let p = d.channels[c].as_ref().unwrap();
                        model[p.dst as usize].push_back((p.uid, false));
                    }
                } else if let Some((t, Event::LinkTimer { kind, .. })) = ev.pop() {
                    now = t;
                    let c = (kind & timer::INDEX) as usize;
                    let (id, m) = d.channels[c].as_ref().map(|p| (p.uid, p.dst)).unwrap();
                    let m = &mut model[m as usize];
                    let at = m.iter().position(|e| e.0 == id).unwrap();
                    m[at].1 = true;
                    out_of_order += (at > 0) as u32;
                    let mut want = vec![];
                    while m.front().is_some_and(|e| e.1) {
                        want.push(m.pop_front().unwrap().0);
                    }
                    let mut got = vec![];
                    d.on_channel_done(c, &peer_of, |p| got.push(p.uid));
                    assert_eq!(got, want);
                }
                for c in 0..channels as usize {
                    assert_eq!(d.free >> c & 1 == 1, d.channels[c].is_none(), "channel {c}");
                }
                assert_eq!(
                    d.free >> (channels - 1) >> 1,
                    0,
                    "no bits past the channels"
                );
                assert_eq!(
                    d.busy_channels(),
                    d.channels.iter().filter(|c| c.is_some()).count()
                );
            }
            assert!(channels == 1 || out_of_order > 50, "{out_of_order}");
        }
    }

    /// Bonded channels finish a short packet before a long one sent earlier; the modem
    /// gets them in order, and another modem's packet is not held behind them.
    #[test]
    fn bonded_channels_stripe_to_the_first_free_channel_and_resequence_per_modem() {
        let p = DocsisParams {
            channels: 3,
            channel_rate: Rate::from_bps(38_000_000),
            flows: vec![None, None],
            regulator_limit: 10,
        };
        let mut d = DocsisDown::new(p);
        let mut q = QdiscConfig::default().build(testutil::ctx(114_000_000));
        let mut out = QdiscOut::new(false);
        let mut st = stats();
        let mut ev = EventQueue::new();
        let peer_of = vec![0u32, 1];
        let mk = |uid, size, dst| Packet {
            uid,
            size,
            dst,
            ..Default::default()
        };
        for (uid, size, dst) in [(1, 1500, 0), (2, 64, 0), (3, 64, 1), (4, 500, 1)] {
            d.arrive(
                dst as usize,
                mk(uid, size, dst),
                18,
                0,
                SimTime::ZERO,
                &mut ev,
                &mut q,
                &mut out,
                &mut st,
            );
        }
        d.pull(
            &peer_of,
            18,
            0,
            SimTime::ZERO,
            &mut ev,
            &mut q,
            &mut out,
            &mut st,
        );
        assert_eq!(d.busy_channels(), 3);
        assert_eq!(
            q.len(),
            1,
            "the fourth packet waits in the qdisc for a free channel"
        );
        assert_eq!(d.held(), 3);
        let mut got = vec![];
        // completion order: ch1 (64 B) and ch2 (64 B) at 17.3 us, ch0 (1500 B) at 319.6 us
        let mut order = vec![];
        while let Some((t, Event::LinkTimer { kind, .. })) = ev.pop() {
            let c = (kind & timer::INDEX) as usize;
            order.push((t.as_nanos(), c));
            d.on_channel_done(c, &peer_of, |p| got.push(p.uid));
            d.pull(&peer_of, 18, 0, t, &mut ev, &mut q, &mut out, &mut st);
        }
        assert_eq!(
            order[0],
            (Rate::from_bps(38_000_000).tx_time(82).as_nanos(), 1)
        );
        // modem 1's packets 3 and 4 (4 starts on the channel 3 freed, ends at 126.8 us) go up
        // at once; modem 0's packet 2 waits for packet 1
        assert_eq!(got, vec![3, 4, 1, 2]);
        assert_eq!(d.held(), 0);
    }
}
