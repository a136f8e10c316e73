//! The event queue: binary min-heaps keyed by `(time, insertion sequence)`, so events
//! at the same instant run in the order they were scheduled (deterministic FIFO ties).
//! Entries are 32 bytes of plain data; packets never ride in the heap (links keep them).

use crate::packet::{FlowId, LinkId};
use crate::time::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

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
}

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

impl PartialEq for Entry {
    #[inline(always)]
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    #[inline(always)]
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
    #[inline(always)]
    fn le(&self, o: &Self) -> bool {
        o.key <= self.key
    }
    #[inline(always)]
    fn lt(&self, o: &Self) -> bool {
        o.key < self.key
    }
    #[inline(always)]
    fn ge(&self, o: &Self) -> bool {
        o.key >= self.key
    }
    #[inline(always)]
    fn gt(&self, o: &Self) -> bool {
        o.key > self.key
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap, we want the earliest (then lowest seq) first.
    #[inline(always)]
    fn cmp(&self, o: &Self) -> Ordering {
        o.key.cmp(&self.key)
    }
}

/// Pending events. `pop` never returns an event earlier than one already popped, because
/// `push` refuses to schedule into the past (checked in debug builds).
///
/// Two heaps share one insertion counter: packet events (`TxDone`, `Arrive`: at most one
/// of each per link, mostly less than a round trip ahead) and the rest (timers, flow
/// starts: one or two per flow, often far ahead). `pop` takes the smaller key of the two
/// tops, so the order is exactly that of one heap, while the packet events — most of
/// the work — move through a heap without the flows' timers in it (the headline's
/// 48 pending events are ~2/3 timers).
#[derive(Debug, Default)]
pub struct EventQueue {
    packets: BinaryHeap<Entry>,
    timers: BinaryHeap<Entry>,
    seq: u64,
    last: SimTime,
}

impl EventQueue {
    pub fn new() -> Self {
        EventQueue {
            packets: BinaryHeap::with_capacity(256),
            timers: BinaryHeap::with_capacity(256),
            seq: 0,
            last: SimTime::ZERO,
        }
    }
    #[inline]
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
            Event::TxDone(_) | Event::Arrive(_) => self.packets.push(e),
            _ => self.timers.push(e),
        }
    }
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        match (self.packets.peek(), self.timers.peek()) {
            (Some(p), Some(t)) => Some(if p.key < t.key { p.time() } else { t.time() }),
            (Some(e), None) | (None, Some(e)) => Some(e.time()),
            (None, None) => None,
        }
    }
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        self.pop_due(SimTime::NEVER)
    }
    /// Pops the next event if it is due at or before `t` (else leaves it): `peek_time`
    /// and `pop` in one look at the two heaps' tops, for the event loop.
    #[inline]
    pub fn pop_due(&mut self, t: SimTime) -> Option<(SimTime, Event)> {
        let limit = ((t.as_nanos() as u128) << 64) | u64::MAX as u128;
        let heap = match (self.packets.peek(), self.timers.peek()) {
            (Some(p), Some(q)) => {
                if p.key < q.key {
                    if p.key > limit {
                        return None;
                    }
                    &mut self.packets
                } else {
                    if q.key > limit {
                        return None;
                    }
                    &mut self.timers
                }
            }
            (Some(p), None) if p.key <= limit => &mut self.packets,
            (None, Some(q)) if q.key <= limit => &mut self.timers,
            _ => return None,
        };
        let e = heap.pop()?;
        let at = e.time();
        self.last = at;
        Some((at, e.ev))
    }
    pub fn len(&self) -> usize {
        self.packets.len() + self.timers.len()
    }
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty() && self.timers.is_empty()
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
    /// smallest pending (time, insertion order), also with many equal times.
    #[test]
    fn matches_sorted_reference() {
        // a third are timers (the second heap), the rest packet events
        let ev_of = |id: u32| {
            if id.is_multiple_of(3) {
                Event::FlowTimer { flow: id, kind: 0 }
            } else {
                Event::TxDone(id)
            }
        };
        let mut q = EventQueue::new();
        let mut reference: Vec<(u64, u64, u32)> = Vec::new();
        let mut x: u64 = 0x9e3779b97f4a7c15;
        let mut seq = 0u64;
        let mut now = 0u64;
        for step in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if !x.is_multiple_of(3) || reference.is_empty() {
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
        }
        reference.sort();
        for (t, _, id) in reference {
            assert_eq!(q.pop(), Some((SimTime::from_nanos(t), ev_of(id))));
        }
        assert!(q.pop().is_none());
    }
}
