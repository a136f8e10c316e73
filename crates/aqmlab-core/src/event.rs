//! The event queue: min-heaps keyed by `(time, insertion sequence)`, so events
//! at the same instant run in the order they were scheduled (deterministic FIFO ties).
//! Entries are 32 bytes of plain data; packets never ride in the heap (links keep them).

use crate::packet::{FlowId, LinkId};
use crate::time::SimTime;

/// Event counters by kind for profiling (`--features event-stats`; `aqmlab-bench` prints
/// them). Absent from normal builds.
#[cfg(feature = "event-stats")]
pub mod stats {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    /// Names of the counters, in index order.
    pub const NAMES: [&str; 17] = [
        "tx_done",
        "arrive",
        "flow_timer",
        "flow_start",
        "link_timer_shaper",
        "link_timer_regulator",
        "link_timer_channel",
        "link_timer_medium",
        "link_timer_arrive",
        "link_timer_qdisc",
        "tcp_timer_superseded",
        "tcp_timer_rearmed",
        "tcp_timer_fired",
        "tcp_rto_fired",
        "tcp_delack_fired",
        "tcp_pace_fired",
        "tx_complete",
    ];
    pub static COUNTS: [AtomicU64; 17] = [const { AtomicU64::new(0) }; 17];
    #[inline(always)]
    pub fn count(i: usize) {
        COUNTS[i].fetch_add(1, Relaxed);
    }
    pub fn snapshot() -> Vec<(&'static str, u64)> {
        NAMES
            .iter()
            .zip(COUNTS.iter())
            .map(|(n, c)| (*n, c.load(Relaxed)))
            .collect()
    }
    /// Counter index of an event.
    pub fn index(ev: &super::Event) -> usize {
        use super::Event::*;
        match ev {
            TxDone(_) => 0,
            Arrive(_) => 1,
            FlowTimer { .. } => 2,
            FlowStart(_) => 3,
            TxComplete { .. } => 16,
            LinkTimer { kind, .. } => match kind >> 28 {
                1 => 4,
                2 => 5,
                3 => 6,
                4..=6 => 7,
                7 => 8,
                _ => 9,
            },
        }
    }
}

/// What happens at an instant.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A link finished serialising the packet at the head of its device queue.
    TxDone(LinkId),
    /// The oldest packet propagating on a link reaches the far end.
    Arrive(LinkId),
    /// A timer of a flow's application or transport; `kind` is the flow's own code.
    FlowTimer { flow: FlowId, kind: u32 },
    /// A timer of a link's lower layer (shaper refill, MAC); `kind` is the link's own code.
    LinkTimer { link: LinkId, kind: u32 },
    /// Start of a flow.
    FlowStart(FlowId),
    /// `bytes` of a TCP sender's GSO skbs left the first link of its host (or were
    /// dropped there): the TX completion TCP Small Queues waits for. `conn`: the
    /// packet's sub-connection × 2, plus 1 if its source node's id is above its
    /// destination's (the application tells the direction from that).
    TxComplete { flow: FlowId, conn: u32, bytes: u32 },
}

// The heap entry stays 32 bytes (a 16-byte key and a 16-byte event).
const _: () = assert!(std::mem::size_of::<Event>() <= 16);

/// A heap entry. `key` packs (time, seq) into one integer, `time << 64 | seq`, so the
/// heap's comparisons are a single (branch-free) 128-bit compare with the same order as
/// comparing time, then seq.
#[derive(Copy, Clone, Debug)]
struct Entry {
    key: u128,
    ev: Event,
}

impl Entry {
    #[inline(always)]
    fn time(&self) -> SimTime {
        SimTime::from_nanos((self.key >> 64) as u64)
    }
}

/// A 4-ary min-heap of entries by key. Against `std`'s binary heap (a max-heap over the
/// reversed order) a pop walks half as many levels — the 10,000-flow benchmark keeps
/// ~30,000 timers pending, 15 binary levels, most of them cache misses — for three
/// key compares per level instead of one; a node's four children are adjacent (128
/// bytes). Keys are unique, so the pop order is exactly that of any other priority
/// queue over them.
#[derive(Debug)]
struct QuadHeap {
    v: Vec<Entry>,
}

impl QuadHeap {
    fn with_capacity(n: usize) -> Self {
        QuadHeap {
            v: Vec::with_capacity(n),
        }
    }
    /// The smallest key (`u128::MAX` if empty).
    #[inline(always)]
    fn min_key(&self) -> u128 {
        self.v.first().map_or(u128::MAX, |e| e.key)
    }
    #[inline(always)]
    fn len(&self) -> usize {
        self.v.len()
    }
    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.v.is_empty()
    }
    #[cfg(test)]
    fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.v.iter()
    }
    /// Moves `e` up from the hole at `i` to its place.
    #[inline(always)]
    fn sift_up(&mut self, mut i: usize, e: Entry) {
        let v = &mut self.v[..];
        while i > 0 {
            let p = (i - 1) / 4;
            if v[p].key < e.key {
                break;
            }
            v[i] = v[p];
            i = p;
        }
        v[i] = e;
    }
    #[inline(always)]
    fn push(&mut self, e: Entry) {
        let i = self.v.len();
        self.v.push(e);
        self.sift_up(i, e);
    }
    /// Takes the smallest entry: the hole left at the root moves down along the smallest
    /// children to a leaf, and the last entry moves up into it from there (it usually
    /// belongs near the bottom: fewer compares than sifting it down from the root).
    #[inline]
    fn pop(&mut self) -> Option<Entry> {
        let last = self.v.pop()?;
        let n = self.v.len();
        if n == 0 {
            return Some(last);
        }
        let v = &mut self.v[..];
        let top = v[0];
        let mut i = 0;
        loop {
            let c = 4 * i + 1;
            if c + 4 <= n {
                let g = &v[c..c + 4];
                let a = if g[1].key < g[0].key { 1 } else { 0 };
                let b = if g[3].key < g[2].key { 3 } else { 2 };
                let m = c + if g[b].key < g[a].key { b } else { a };
                v[i] = v[m];
                i = m;
            } else {
                if c < n {
                    // the last, partial group: its entries are leaves
                    let mut m = c;
                    for j in c + 1..n {
                        if v[j].key < v[m].key {
                            m = j;
                        }
                    }
                    v[i] = v[m];
                    i = m;
                }
                break;
            }
        }
        self.sift_up(i, last);
        Some(top)
    }
}

/// A radix heap of entries by key (Ahuja, Mehlhorn, Orlin and Tarjan, 1990), for a
/// monotone queue: every key pushed is larger than every key popped before it, which
/// holds for the event queue (a push takes a fresh insertion number and is never in the
/// past). An entry sits in the bucket numbered by the highest bit in which its key
/// differs from the last key popped (1..=128; keys are unique, so none equals it). All
/// keys of a lower bucket are below all keys of a higher one, so the smallest key is in
/// the lowest non-empty bucket; a pop takes that bucket and moves its other entries to
/// lower buckets relative to the new last key. Each entry moves down a few times in its
/// life, by sequential reads and appends: against a heap of thousands of pending link
/// events, where each pop walks several levels of cache lines, that is fewer misses. It
/// is an exact priority queue over unique keys, so it pops in exactly the heap's order.
///
/// In front of the buckets it holds one entry aside (`held`): the earliest pushed since
/// the held one last popped or was displaced. The event a handler schedules for the
/// packet it just put on a wire is often the next one due (`tcp10k_docsis`: about one in
/// five of all events pops right after the handler that pushed it), and a held entry
/// pops without a bucket, nor moves down through them. Popping it leaves `last` as it
/// was: the buckets' entries keep their places relative to it, and every key pushed
/// afterwards still exceeds it.
#[derive(Debug)]
struct RadixHeap {
    /// The last key popped from the buckets (0 before the first).
    last: u128,
    /// `buckets[b]` for b in 1..=128 (`buckets[0]` stays empty).
    buckets: Vec<Vec<Entry>>,
    /// Bit `b - 1` is set when `buckets[b]` is not empty.
    mask: u128,
    /// The entry held aside (key `u128::MAX`: none).
    held: Entry,
    /// The smallest key in the buckets (`u128::MAX` if none).
    bmin: u128,
    /// The smallest pending key, held entry included (`u128::MAX` if empty).
    min: u128,
    len: usize,
}

/// A slot no entry occupies (an empty [`RadixHeap::held`]): no real key is this large,
/// it would be the insertion number `u64::MAX` at the instant `SimTime::NEVER`.
const NO_ENTRY: Entry = Entry {
    key: u128::MAX,
    ev: Event::TxDone(0),
};

impl RadixHeap {
    fn new() -> Self {
        RadixHeap {
            last: 0,
            buckets: (0..129).map(|_| Vec::new()).collect(),
            mask: 0,
            held: NO_ENTRY,
            bmin: u128::MAX,
            min: u128::MAX,
            len: 0,
        }
    }
    /// The bucket of `key` relative to the last popped key `last` (`key > last`).
    #[inline(always)]
    fn bucket(key: u128, last: u128) -> usize {
        128 - (key ^ last).leading_zeros() as usize
    }
    #[inline(always)]
    fn min_key(&self) -> u128 {
        self.min
    }
    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }
    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.len == 0
    }
    #[cfg(test)]
    fn iter(&self) -> impl Iterator<Item = &Entry> {
        std::iter::once(&self.held)
            .filter(|e| e.key != u128::MAX)
            .chain(self.buckets.iter().flatten())
    }
    #[inline(always)]
    fn push(&mut self, e: Entry) {
        debug_assert!(e.key > self.last, "radix heap: key below the last pop");
        self.len += 1;
        let e = if e.key < self.held.key {
            // the new entry is held; the one it displaces (if any) goes to a bucket
            self.min = self.min.min(e.key);
            let old = std::mem::replace(&mut self.held, e);
            if old.key == u128::MAX {
                return;
            }
            old
        } else {
            e
        };
        let b = Self::bucket(e.key, self.last);
        self.buckets[b].push(e);
        self.mask |= 1 << (b - 1);
        self.bmin = self.bmin.min(e.key);
    }
    /// Takes the smallest entry.
    #[inline]
    fn pop(&mut self) -> Option<Entry> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        if self.held.key < self.bmin {
            self.min = self.bmin;
            return Some(std::mem::replace(&mut self.held, NO_ENTRY));
        }
        let top = self.pop_bucket();
        self.min = self.bmin.min(self.held.key);
        top
    }
    /// Takes the smallest entry of the buckets.
    #[inline]
    fn pop_bucket(&mut self) -> Option<Entry> {
        let m = self.bmin;
        let b = self.mask.trailing_zeros() as usize + 1;
        self.last = m;
        let mut v = std::mem::take(&mut self.buckets[b]);
        self.mask &= !(1 << (b - 1));
        let top;
        if v.len() == 1 {
            top = v.pop();
        } else {
            let mut found = None;
            let mut next = u128::MAX;
            for e in v.drain(..) {
                if e.key == m {
                    found = Some(e);
                } else {
                    let nb = Self::bucket(e.key, m);
                    self.buckets[nb].push(e);
                    self.mask |= 1 << (nb - 1);
                    next = next.min(e.key);
                }
            }
            top = found;
            if next != u128::MAX {
                // the moved entries are all below every entry of the higher buckets
                self.buckets[b] = v;
                self.bmin = next;
                return top;
            }
        }
        self.buckets[b] = v;
        // the next smallest key is in the lowest non-empty bucket (above b)
        self.bmin = if self.mask == 0 {
            u128::MAX
        } else {
            let nb = self.mask.trailing_zeros() as usize + 1;
            self.buckets[nb]
                .iter()
                .map(|e| e.key)
                .min()
                .unwrap_or(u128::MAX)
        };
        debug_assert!(
            top.is_some_and(|e| e.key == m),
            "radix heap lost its minimum"
        );
        top
    }
}

/// How many entries [`Near`] keeps in its sorted vector before the rest go to its heap.
const NEAR_CAP: usize = 16;

/// A priority queue for the per-link events, of which only a handful are pending at a
/// time (a scenario's links each have at most one `TxDone` and one `Arrive` scheduled:
/// 2.2–7.8 on average in the residential study's 100 Mbit/s runs): a short vector kept sorted by
/// descending key, so the earliest entry is its last and a pop is `Vec::pop`, and a
/// [`RadixHeap`] for whatever arrives while the vector holds [`NEAR_CAP`] entries (large
/// topologies: the 10,000-flow benchmark keeps ~3,000 link events pending; there the
/// radix heap executes 5 % fewer instructions than the 4-ary heap did, and misses the
/// cache less; the timers stay in a 4-ary heap, where a radix heap measured 1-2 % more
/// instructions). A pop takes the smaller of the two fronts; keys are unique, so the order
/// is exactly that of one heap.
#[derive(Debug)]
struct Near {
    sorted: Vec<Entry>,
    overflow: RadixHeap,
}

impl Near {
    fn new() -> Self {
        Near {
            sorted: Vec::with_capacity(NEAR_CAP),
            overflow: RadixHeap::new(),
        }
    }
    #[inline(always)]
    fn push(&mut self, e: Entry) {
        let n = self.sorted.len();
        if n < NEAR_CAP {
            // A new event usually goes near the back (the earliest end): the pending
            // ones it must pass are the far arrivals on long links. Measured insertion
            // points: on average 0.4–0.8 entries from the back, against 1.8–7.1 from
            // the front, in the headline and the residential study's 100 Mbit/s runs.
            // Keys are unique, so the place is the one a scan from the front finds.
            // The entries it passes move up one place as the scan goes (an insertion
            // sort step): no `memmove` call for the usual shift of zero or one entry.
            self.sorted.push(e);
            let v = &mut self.sorted[..];
            let mut i = n;
            while i > 0 && v[i - 1].key < e.key {
                v[i] = v[i - 1];
                i -= 1;
            }
            v[i] = e;
        } else {
            self.overflow.push(e);
        }
    }
    /// The smallest key in the vector (`u128::MAX` if it is empty).
    #[inline(always)]
    fn sorted_min(&self) -> u128 {
        self.sorted.last().map_or(u128::MAX, |e| e.key)
    }
    /// The smallest key (`u128::MAX` if empty).
    #[inline(always)]
    fn min_key(&self) -> u128 {
        self.sorted_min().min(self.overflow.min_key())
    }
    #[inline(always)]
    fn pop(&mut self) -> Option<Entry> {
        if self.overflow.min_key() < self.sorted_min() {
            self.overflow.pop()
        } else {
            self.sorted.pop()
        }
    }
    fn len(&self) -> usize {
        self.sorted.len() + self.overflow.len()
    }
    fn is_empty(&self) -> bool {
        self.sorted.is_empty() && self.overflow.is_empty()
    }
    #[cfg(test)]
    fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.sorted.iter().chain(self.overflow.iter())
    }
}

/// Pending events. `pop` never returns an event earlier than one already popped, because
/// `push` refuses to schedule into the past (checked in debug builds).
///
/// Two queues share one insertion counter: the links' events (`TxDone`, `Arrive`,
/// `LinkTimer`: a few per link, mostly less than a round trip ahead) in a `Near`, and
/// the rest (flows' timers, flow starts: one or two per flow, often far ahead) in a
/// 4-ary heap ([`QuadHeap`]). `pop` takes the smaller key of the two fronts, so the order is exactly
/// that of one heap, while the packet events — most of the work — move through a short
/// sorted vector without the flows' timers in it (the headline's 48 pending events are
/// ~2/3 timers).
///
/// **Deferred pushes** ([`EventQueue::defer`]) let a component skip an event whose only
/// effect would be to schedule another one: the skipped event keeps its place in the
/// order (an insertion number is taken for it, as `push` would), and when the queue
/// reaches that place — before it returns anything ordered after it — it pushes the
/// follow-up event, which so gets exactly the insertion number it would have had.
/// Whatever else the skipped event would have done at its instant is then up to the
/// component to account for (the tbf shaper's wake-up: see `link::shaper`).
#[derive(Debug)]
pub struct EventQueue {
    packets: Near,
    timers: QuadHeap,
    seq: u64,
    last: SimTime,
    /// Deferred pushes: (key of the skipped event, time of the follow-up, follow-up). At
    /// most one per component that uses them (a shaped link), so a short list.
    deferred: Vec<(u128, SimTime, Event)>,
    /// The smallest key in `deferred` (`u128::MAX` if none).
    deferred_min: u128,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl EventQueue {
    pub fn new() -> Self {
        EventQueue {
            packets: Near::new(),
            timers: QuadHeap::with_capacity(256),
            seq: 0,
            last: SimTime::ZERO,
            deferred: Vec::new(),
            deferred_min: u128::MAX,
        }
    }
    // always inlined: with one codegen unit LLVM otherwise keeps one out-of-line copy
    // for its ~40 call sites (−2.5 % instructions on residential runs, −0.8 % CPU)
    #[inline(always)]
    pub fn push(&mut self, time: SimTime, ev: Event) {
        debug_assert!(
            time >= self.last,
            "event scheduled in the past: {time} < {}",
            self.last
        );
        self.seq += 1;
        let e = Entry {
            key: (time.as_nanos() as u128) << 64 | self.seq as u128,
            ev,
        };
        match ev {
            Event::TxDone(_) | Event::Arrive(_) | Event::LinkTimer { .. } => self.packets.push(e),
            _ => self.timers.push(e),
        }
    }
    /// The smallest keys of the links' events and of the timers (`u128::MAX` for none).
    #[inline(always)]
    fn front_keys(&self) -> (u128, u128) {
        (self.packets.min_key(), self.timers.min_key())
    }
    /// The instant of the next event `pop` will return.
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        let (p, q) = self.front_keys();
        let key = p.min(q);
        let heaps = (key != u128::MAX).then(|| SimTime::from_nanos((key >> 64) as u64));
        // a deferred follow-up is pushed before anything after its skipped event pops
        let deferred = self.deferred.iter().map(|d| d.1).min();
        match (heaps, deferred) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
    /// Whether nothing is due at or before `t`: no pending event and no deferred push
    /// whose place lies at or before `t`. An event pushed now at `t` would then be the
    /// next one popped, whatever else is pushed at `t` afterwards.
    #[inline]
    pub fn nothing_due_by(&self, t: SimTime) -> bool {
        let limit = ((t.as_nanos() as u128) << 64) | u64::MAX as u128;
        let (p, q) = self.front_keys();
        p.min(q).min(self.deferred_min) > limit
    }
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        self.pop_due(SimTime::NEVER)
    }
    /// Pops the next event if it is due at or before `t` (else leaves it): `peek_time`
    /// and `pop` in one look at the two heaps' tops, for the event loop. Deferred pushes
    /// whose place comes first (and is at or before `t`) are made on the way.
    #[inline]
    pub fn pop_due(&mut self, t: SimTime) -> Option<(SimTime, Event)> {
        let limit = ((t.as_nanos() as u128) << 64) | u64::MAX as u128;
        let (mut p, mut q) = self.front_keys();
        let mut key = p.min(q);
        while self.deferred_min < key && self.deferred_min <= limit {
            self.reach_deferred();
            (p, q) = self.front_keys();
            key = p.min(q);
        }
        if key > limit {
            return None;
        }
        let e = if p < q {
            self.packets.pop()?
        } else {
            self.timers.pop()?
        };
        let at = e.time();
        self.last = at;
        Some((at, e.ev))
    }

    fn deferred_changed(&mut self) {
        self.deferred_min = self.deferred.iter().map(|d| d.0).min().unwrap_or(u128::MAX);
    }

    /// Skips an event at `at` whose only effect would be `push(time, follow)`: takes its
    /// place in the order now (an insertion number, as `push(at, ..)` would) and makes
    /// that push when the queue reaches the place. One deferred push per `follow` event
    /// at a time (the owner checks with [`is_deferred`](Self::is_deferred)).
    pub fn defer(&mut self, at: SimTime, time: SimTime, follow: Event) {
        debug_assert!(at >= self.last && time >= at, "deferred push into the past");
        debug_assert!(!self.is_deferred(follow), "{follow:?} is already deferred");
        self.seq += 1;
        let key = (at.as_nanos() as u128) << 64 | self.seq as u128;
        self.deferred.push((key, time, follow));
        self.deferred_min = self.deferred_min.min(key);
    }

    /// Whether a deferred push of `follow` waits for its place.
    pub fn is_deferred(&self, follow: Event) -> bool {
        self.deferred.iter().any(|d| d.2 == follow)
    }

    /// Makes the deferred push of `follow` now, before its place (the owner does at this
    /// instant what the skipped event would have done: the push takes the insertion
    /// number of now, as it would have then).
    pub fn push_deferred_now(&mut self, follow: Event) {
        if let Some(i) = self.deferred.iter().position(|d| d.2 == follow) {
            let (_, time, ev) = self.deferred.swap_remove(i);
            self.deferred_changed();
            self.push(time, ev);
        }
    }

    /// The queue has reached the place of the earliest deferred push: make it.
    #[inline(always)]
    fn reach_deferred(&mut self) {
        let (key, time, ev) = if self.deferred.len() == 1 {
            // the usual case (one shaped link waiting): no search, no new minimum
            self.deferred_min = u128::MAX;
            self.deferred.pop().expect("one deferred push")
        } else {
            self.take_earliest_deferred()
        };
        debug_assert!(self.deferred.iter().all(|d| d.0 > key));
        // the skipped event's instant is the queue's "now" while it pushes
        self.last = SimTime::from_nanos((key >> 64) as u64);
        self.push(time, ev);
    }
    /// `reach_deferred` with several pushes deferred: takes out the earliest.
    #[inline(never)]
    fn take_earliest_deferred(&mut self) -> (u128, SimTime, Event) {
        let i = self
            .deferred
            .iter()
            .position(|d| d.0 == self.deferred_min)
            .expect("deferred_min is in the list");
        let d = self.deferred.swap_remove(i);
        self.deferred_changed();
        d
    }
    /// Pending events, deferred pushes included.
    pub fn len(&self) -> usize {
        self.packets.len() + self.timers.len() + self.deferred.len()
    }
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty() && self.timers.is_empty() && self.deferred.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn ties_are_fifo_and_time_ordered() {
        let mut q = EventQueue::new();
        let t = SimTime::from_nanos(5);
        q.push(t, Event::TxDone(1));
        q.push(SimTime::from_nanos(3), Event::TxDone(0));
        q.push(t, Event::TxDone(2));
        q.push(t, Event::TxDone(3));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(
            order,
            vec![
                Event::TxDone(0),
                Event::TxDone(1),
                Event::TxDone(2),
                Event::TxDone(3)
            ]
        );
    }
    /// Ties across the two heaps keep the scheduling order too.
    #[test]
    fn ties_across_packet_events_and_timers_are_fifo() {
        let mut q = EventQueue::new();
        let t = SimTime::from_nanos(7);
        let timer = |k| Event::FlowTimer { flow: 0, kind: k };
        let pushed = [
            timer(1),
            Event::Arrive(1),
            timer(2),
            Event::TxDone(2),
            Event::Arrive(3),
            timer(3),
        ];
        for e in pushed {
            q.push(t, e);
        }
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, pushed.to_vec());
    }
    /// `pop_due(t)` returns exactly what `pop` would while the next event is at or before
    /// `t`, and nothing (leaving the queue as it was) once it is later.
    #[test]
    fn pop_due_stops_after_the_limit() {
        let mut q = EventQueue::new();
        let timer = |k| Event::FlowTimer { flow: 0, kind: k };
        q.push(SimTime::from_nanos(5), Event::Arrive(1));
        q.push(SimTime::from_nanos(5), timer(1));
        q.push(SimTime::from_nanos(9), timer(2));
        q.push(SimTime::from_nanos(10), Event::TxDone(2));
        let t = SimTime::from_nanos(9);
        assert_eq!(
            q.pop_due(t),
            Some((SimTime::from_nanos(5), Event::Arrive(1)))
        );
        assert_eq!(q.pop_due(t), Some((SimTime::from_nanos(5), timer(1))));
        assert_eq!(q.pop_due(t), Some((SimTime::from_nanos(9), timer(2))));
        assert_eq!(q.pop_due(t), None);
        assert_eq!(q.len(), 1);
        assert_eq!(
            q.pop_due(SimTime::from_nanos(10)),
            Some((SimTime::from_nanos(10), Event::TxDone(2)))
        );
        assert_eq!(q.pop_due(SimTime::NEVER), None);
        q.push(SimTime::NEVER, timer(3));
        assert_eq!(q.pop_due(SimTime::NEVER), Some((SimTime::NEVER, timer(3))));
    }
    /// Interleaved pushes and pops against a sorted reference: every pop returns the
    /// smallest pending (time, insertion order), also with many equal times. Run with a
    /// queue that stays short (the links' vector alone) and one that grows to thousands
    /// (its overflow heap too).
    #[test]
    fn matches_sorted_reference() {
        // a third are flows' timers (the heap), the rest links' events (the `Near`)
        let ev_of = |id: u32| match id % 3 {
            0 => Event::FlowTimer { flow: id, kind: 0 },
            1 => Event::TxDone(id),
            _ => Event::LinkTimer { link: id, kind: 1 },
        };
        for push_in_8 in [4u64, 6] {
            let mut q = EventQueue::new();
            let mut reference: Vec<(u64, u64, u32)> = Vec::new();
            let mut x: u64 = 0x9e3779b97f4a7c15;
            let mut seq = 0u64;
            let mut now = 0u64;
            let mut longest = 0;
            for step in 0..20_000u32 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if x % 8 < push_in_8 || reference.is_empty() {
                    let t = now + (x >> 20) % 50;
                    seq += 1;
                    q.push(SimTime::from_nanos(t), ev_of(step));
                    reference.push((t, seq, step));
                } else {
                    reference.sort();
                    let (t, _, id) = reference.remove(0);
                    let (gt, ge) = q.pop().unwrap();
                    assert_eq!((gt.as_nanos(), ge), (t, ev_of(id)));
                    now = t;
                }
                assert_eq!(q.len(), reference.len());
                longest = longest.max(q.len());
            }
            reference.sort();
            for (t, _, id) in reference {
                assert_eq!(q.pop(), Some((SimTime::from_nanos(t), ev_of(id))));
            }
            assert!(q.pop().is_none());
            // the short run stays within the vector most of the time, the long one not
            if push_in_8 == 6 {
                assert!(longest > 1000, "{longest}");
            } else {
                assert!(longest < 200, "{longest}");
            }
        }
    }

    /// A deferred push is the same as scheduling the skipped event and pushing the
    /// follow-up when it pops: against a queue that does exactly that (placeholder
    /// events), every other event pops in the same order, ties included; a follow-up
    /// pushed early (`push_deferred_now`) is the placeholder doing nothing when it pops.
    #[test]
    fn deferred_push_matches_a_real_placeholder_event() {
        let mut real = EventQueue::new();
        let mut lazy = EventQueue::new();
        // placeholder id -> (follow-up time, follow-up, still live)
        let mut placeholders: Vec<(SimTime, Event, bool)> = Vec::new();
        let mut x: u64 = 0x2545f4914f6cdd1d;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut now = 0u64;
        let (mut popped, mut early, mut deferred) = (0, 0, 0);
        for step in 0..30_000u32 {
            let r = rnd();
            match r % 8 {
                0..=2 => {
                    // a plain event on a coarse grid (many ties)
                    let t = SimTime::from_nanos(now + (r >> 8) % 6);
                    let e = if r & 0x10 != 0 {
                        Event::Arrive(step)
                    } else {
                        Event::FlowTimer {
                            flow: step,
                            kind: 0,
                        }
                    };
                    real.push(t, e);
                    lazy.push(t, e);
                }
                3 => {
                    // one deferred follow-up per link at a time (as the shaper does)
                    let link = ((r >> 8) % 4) as u32;
                    if lazy.is_deferred(Event::TxDone(link)) {
                        continue;
                    }
                    let at = SimTime::from_nanos(now + (r >> 12) % 5);
                    let time = at + crate::time::SimDuration::from_nanos(1 + (r >> 20) % 4);
                    placeholders.push((time, Event::TxDone(link), true));
                    let id = (placeholders.len() - 1) as u32;
                    real.push(at, Event::LinkTimer { link: 99, kind: id });
                    lazy.defer(at, time, Event::TxDone(link));
                    deferred += 1;
                }
                _ => {
                    let got = loop {
                        match real.pop() {
                            Some((t, Event::LinkTimer { link: 99, kind })) => {
                                let (time, follow, live) = placeholders[kind as usize];
                                if live {
                                    real.push(time, follow);
                                }
                                now = t.as_nanos();
                            }
                            other => break other,
                        }
                    };
                    let Some((t, e)) = got else {
                        assert_eq!(lazy.pop(), None);
                        continue;
                    };
                    assert_eq!(lazy.pop(), Some((t, e)), "step {step}");
                    popped += 1;
                    now = t.as_nanos();
                    // sometimes the owner takes a follow-up due at this very instant early
                    if r & 0x100 != 0 {
                        for (i, p) in placeholders.iter_mut().enumerate() {
                            let _ = i;
                            if p.2 && lazy.is_deferred(p.1) && rnd() % 2 == 0 {
                                // only a placeholder at `now` can be taken early
                                let at_now = real_placeholder_at(&real, i as u32, t);
                                if at_now {
                                    p.2 = false;
                                    real.push(p.0, p.1);
                                    lazy.push_deferred_now(p.1);
                                    early += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        // drain both
        loop {
            let got = loop {
                match real.pop() {
                    Some((_, Event::LinkTimer { link: 99, kind })) => {
                        let (time, follow, live) = placeholders[kind as usize];
                        if live {
                            real.push(time, follow);
                        }
                    }
                    other => break other,
                }
            };
            assert_eq!(lazy.pop(), got);
            if got.is_none() {
                break;
            }
        }
        assert!(lazy.is_empty());
        assert!(
            popped > 10_000 && deferred > 1_000 && early > 20,
            "{popped} {deferred} {early}"
        );
    }

    /// The radix heap's held entry (`RadixHeap::held`): it pops when it is the
    /// earliest, an earlier push moves it into a bucket, ties keep insertion order across
    /// the held entry and the buckets; through the event queue with the links' vector
    /// short, and full (the radix heap in use). `radix_heap_pops_in_key_order` and
    /// `matches_sorted_reference` check long random sequences.
    #[test]
    fn held_entry_pops_in_key_order() {
        let t = |n| SimTime::from_nanos(n);
        let key = |n: u128, seq: u128| n << 64 | seq;
        let e = |k| Entry {
            key: k,
            ev: Event::TxDone(0),
        };
        let mut h = RadixHeap::new();
        h.push(e(key(10, 1)));
        assert_eq!(h.held.key, key(10, 1));
        h.push(e(key(10, 2))); // later: to a bucket
        h.push(e(key(5, 3))); // earlier: held, (10, 1) to a bucket
        assert_eq!(
            (h.held.key, h.min_key(), h.len()),
            (key(5, 3), key(5, 3), 3)
        );
        assert_eq!(h.pop().map(|x| x.key), Some(key(5, 3)));
        assert_eq!(
            (h.held.key, h.min_key(), h.last),
            (u128::MAX, key(10, 1), 0)
        );
        h.push(e(key(7, 4))); // held again, before the buckets' entries
        assert_eq!(h.pop().map(|x| x.key), Some(key(7, 4)));
        assert_eq!(h.pop().map(|x| x.key), Some(key(10, 1)));
        h.push(e(key(10, 5))); // held, behind (10, 2)
        assert_eq!(h.min_key(), key(10, 2));
        assert_eq!(h.pop().map(|x| x.key), Some(key(10, 2)));
        assert_eq!(h.pop().map(|x| x.key), Some(key(10, 5)));
        assert!(h.pop().is_none() && h.is_empty() && h.min_key() == u128::MAX);

        for pending in [0u32, 3, 40] {
            let mut q = EventQueue::new();
            // far events: in the vector, and beyond NEAR_CAP in the radix heap
            for i in 0..pending {
                q.push(t(1_000 + u64::from(i)), Event::Arrive(100 + i));
            }
            q.push(t(10), Event::TxDone(1));
            q.push(t(10), Event::TxDone(2)); // a tie, later
            q.push(t(5), Event::TxDone(3)); // earlier
            if pending > NEAR_CAP as u32 {
                assert_eq!(q.packets.overflow.held.ev, Event::TxDone(3));
            }
            q.push(t(7), Event::FlowTimer { flow: 0, kind: 0 });
            assert_eq!(q.len(), pending as usize + 4);
            assert_eq!(q.pop(), Some((t(5), Event::TxDone(3))));
            assert_eq!(q.pop(), Some((t(7), Event::FlowTimer { flow: 0, kind: 0 })));
            q.push(t(10), Event::TxDone(4)); // after the pending ties
            assert!(q.nothing_due_by(t(9)) && !q.nothing_due_by(t(10)));
            assert_eq!(q.pop(), Some((t(10), Event::TxDone(1))));
            assert_eq!(q.pop(), Some((t(10), Event::TxDone(2))));
            assert_eq!(q.pop(), Some((t(10), Event::TxDone(4))));
            for i in (0..pending).rev() {
                // ties behind the far events, the earliest pushed last
                q.push(t(1_000 + u64::from(i)), Event::TxDone(200 + i));
            }
            for i in 0..pending {
                let at = t(1_000 + u64::from(i));
                assert_eq!(q.pop(), Some((at, Event::Arrive(100 + i))));
                assert_eq!(q.pop(), Some((at, Event::TxDone(200 + i))));
            }
            assert!(q.pop().is_none() && q.is_empty());
        }
    }

    /// The 4-ary heap alone against a sorted reference, through every shape of its last
    /// group (sizes 0 to a few thousand, growing and draining): each pop is the smallest
    /// key, and after every operation each entry's key exceeds its parent's.
    #[test]
    fn quad_heap_pops_in_key_order() {
        let mut h = QuadHeap::with_capacity(0);
        let mut reference = std::collections::BTreeSet::new();
        let mut x: u64 = 0x853c49e6748fea9b;
        let ev = Event::FlowStart(0);
        let mut seq = 0u128;
        for step in 0..40_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // grow for the first half, drain in the second
            let push = if step < 20_000 { x % 8 < 5 } else { x % 8 < 3 };
            if push || reference.is_empty() {
                seq += 1;
                let key = ((x >> 24) as u128 % 1000) << 64 | seq;
                h.push(Entry { key, ev });
                reference.insert(key);
            } else {
                let want = reference.pop_first();
                assert_eq!(h.pop().map(|e| e.key), want);
            }
            assert_eq!(h.len(), reference.len());
            assert_eq!(h.min_key(), reference.first().copied().unwrap_or(u128::MAX));
            if step % 97 == 0 {
                for i in 1..h.v.len() {
                    assert!(h.v[(i - 1) / 4].key < h.v[i].key, "heap order at {i}");
                }
            }
        }
        while let Some(k) = reference.pop_first() {
            assert_eq!(h.pop().map(|e| e.key), Some(k));
        }
        assert!(h.pop().is_none() && h.is_empty());
    }

    /// The radix heap alone against a sorted reference, as the event queue uses it
    /// (each key pushed above every key popped: a fresh insertion number, a time at or
    /// after the last pop's): each pop is the smallest key and `min_key` is always the
    /// smallest pending one, through growth to thousands of entries, many same-instant
    /// keys (buckets below 64) and gaps of up to 2^40 ns (buckets far above), and a full
    /// drain.
    #[test]
    fn radix_heap_pops_in_key_order() {
        let mut h = RadixHeap::new();
        let mut reference = std::collections::BTreeSet::new();
        let mut x: u64 = 0x2545f4914f6cdd1d;
        let ev = Event::FlowStart(0);
        let mut seq = 0u128;
        let mut now = 0u128;
        let mut longest = 0;
        for step in 0..60_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // grow for the first half, drain in the second
            let push = if step < 30_000 { x % 8 < 5 } else { x % 8 < 3 };
            if push || reference.is_empty() {
                seq += 1;
                let ahead = match (x >> 8) % 4 {
                    0 => 0,
                    1 => (x >> 16) as u128 % 16,
                    2 => (x >> 16) as u128 % 100_000,
                    _ => (x >> 16) as u128 % (1 << 40),
                };
                let key = (now + ahead) << 64 | seq;
                h.push(Entry { key, ev });
                reference.insert(key);
            } else {
                let want = reference.pop_first();
                assert_eq!(h.pop().map(|e| e.key), want);
                now = want.unwrap() >> 64;
            }
            assert_eq!(h.len(), reference.len());
            assert_eq!(h.min_key(), reference.first().copied().unwrap_or(u128::MAX));
            longest = longest.max(h.len());
        }
        assert!(longest > 5_000, "{longest}");
        while let Some(k) = reference.pop_first() {
            assert_eq!(h.pop().map(|e| e.key), Some(k));
            assert_eq!(h.min_key(), reference.first().copied().unwrap_or(u128::MAX));
        }
        assert!(h.pop().is_none() && h.is_empty() && h.mask == 0);
    }

    /// Whether placeholder `id` is pending in `q` at instant `t` (test helper: a linear
    /// scan of the heap).
    fn real_placeholder_at(q: &EventQueue, id: u32, t: SimTime) -> bool {
        q.timers
            .iter()
            .chain(q.packets.iter())
            .any(|e| e.ev == Event::LinkTimer { link: 99, kind: id } && e.time() == t)
    }
}
