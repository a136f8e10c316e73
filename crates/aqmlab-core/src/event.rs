//! The event queue: a binary min-heap keyed by `(time, insertion sequence)`, so events
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

#[derive(Copy, Clone, Debug)]
struct Entry {
    time: SimTime,
    seq: u64,
    ev: Event,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap, we want the earliest (then lowest seq) first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.time.cmp(&self.time).then_with(|| o.seq.cmp(&self.seq))
    }
}

/// Pending events. `pop` never returns an event earlier than one already popped, because
/// `push` refuses to schedule into the past (checked in debug builds).
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
    last: SimTime,
}

impl EventQueue {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(1024),
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
        self.heap.push(Entry {
            time,
            seq: self.seq,
            ev,
        });
    }
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.time)
    }
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        let e = self.heap.pop()?;
        self.last = e.time;
        Some((e.time, e.ev))
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
}
