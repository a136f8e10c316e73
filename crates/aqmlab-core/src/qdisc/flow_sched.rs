//! Flow-queueing building blocks shared by `fq_codel`, `sfq`, `drr` (and later `fq_pie`):
//! packet storage with per-flow FIFO queues, salted flow hashing, and the fq_codel-style
//! deficit round robin over a "new flows" and an "old flows" list.
//!
//! ## Storage: one packet slab, index-linked per-flow queues
//! Every queued packet of a qdisc lives in one [`PacketStore`]: a `Vec` of nodes holding the
//! packet and the `u32` indices of its neighbours in its flow's queue, plus a free list. A
//! flow's queue ([`PktQueue`]) is just head/tail indices and counters (24 bytes), so
//! - memory is bounded by the qdisc's packet limit (the slab never holds more nodes than
//!   the most packets ever queued at once), however the packets spread over 1024 hash
//!   buckets or over an unbounded number of exact flows (DRR);
//! - creating a flow costs nothing (no per-flow buffer), which matters for DRR where every
//!   new connection gets its own queue;
//! - push/pop at either end are O(1) with no allocation once the slab has grown to the
//!   peak backlog (it is pre-sized to the limit, capped at 4096 nodes, like `fifo`).
//!
//! The alternative, 1024 `VecDeque`s, would be equally fast per operation but each bucket
//! grows its own buffer to its own peak, so memory would follow the sum of per-flow peaks
//! instead of the total limit. Doubly linked nodes let SFQ drop from a flow's tail.
//!
//! ## Scheduling: new/old lists with DRR deficits (RFC 8290 §4.2, Linux sch_fq_codel)
//! [`FqScheduler`] keeps flows on two round-robin lists. A flow that becomes active joins
//! the tail of *new* with `deficit = quantum`; dequeue serves the head of *new* (else
//! *old*); a flow whose deficit is used up gets `quantum` more and moves to the tail of
//! *old*; a flow found empty leaves the lists, except that an empty flow taken from *new*
//! goes to the tail of *old* when *old* is non-empty (RFC 8290 §4.2: this stops a flow that
//! sends one packet per round from starving the old flows). The deficit counts frame bytes
//! (`size + overhead`), as Linux charges `qdisc_pkt_len` (IP packet + link header).

use crate::packet::Packet;

/// "No node" / "no flow" index.
pub const NIL: u32 = u32::MAX;

/// Mixes a packet's unsalted 5-tuple stand-in hash with a qdisc's salt (Linux: jhash of the
/// flow keys with the qdisc's random `perturbation`, or the boot-time `hashrnd`).
#[inline]
pub fn salted_hash(hash: u32, salt: u32) -> u32 {
    // murmur3 fmix64 over (salt, hash): a full-avalanche mix, so changing the salt
    // re-shuffles every flow's bucket independently.
    let mut x = ((salt as u64) << 32) | hash as u64;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    (x >> 32) as u32
}

/// Maps a 32-bit hash uniformly onto `0..n` (Linux `reciprocal_scale`).
#[inline]
pub fn reciprocal_scale(v: u32, n: u32) -> u32 {
    ((v as u64 * n as u64) >> 32) as u32
}

#[derive(Copy, Clone, Debug)]
struct Node {
    pkt: Packet,
    next: u32,
    prev: u32,
}

/// The packets of one qdisc, stored once, linked into per-flow FIFO queues.
#[derive(Debug)]
pub struct PacketStore {
    nodes: Vec<Node>,
    /// Head of the free-node list (linked through `next`).
    free: u32,
}

/// One flow's FIFO inside a [`PacketStore`]: indices and counters only.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PktQueue {
    head: u32,
    tail: u32,
    len: u32,
    /// Sum of `Packet::size` (IP bytes).
    bytes: u64,
}

impl PktQueue {
    pub const EMPTY: PktQueue = PktQueue {
        head: NIL,
        tail: NIL,
        len: 0,
        bytes: 0,
    };
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// IP bytes queued.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// Bytes as the link frames them (`size + overhead` per packet), what Linux calls
    /// the backlog (`qdisc_pkt_len` includes the hard header).
    #[inline]
    pub fn frame_bytes(&self, overhead: u32) -> u64 {
        self.bytes + self.len as u64 * overhead as u64
    }
}

impl Default for PktQueue {
    fn default() -> Self {
        PktQueue::EMPTY
    }
}

impl PacketStore {
    /// A store pre-sized for `cap` packets (more are allocated on demand).
    /// Reserves at most 64 nodes up front, whatever `cap` says: the slab grows on demand,
    /// so an idle queue with a large limit costs no address space (see fifo.rs).
    pub fn with_capacity(cap: usize) -> Self {
        PacketStore {
            nodes: Vec::with_capacity(cap.min(64)),
            free: NIL,
        }
    }

    /// Stores `pkt` in a free node (or a new one) linked after `prev`, with no successor.
    #[inline(always)]
    fn alloc(&mut self, pkt: Packet, prev: u32) -> u32 {
        if self.free != NIL {
            let i = self.free;
            let n = &mut self.nodes[i as usize];
            self.free = n.next;
            n.pkt = pkt;
            n.next = NIL;
            n.prev = prev;
            i
        } else {
            let i = self.nodes.len() as u32;
            assert!(i != NIL, "packet store full");
            self.nodes.push(Node {
                pkt,
                next: NIL,
                prev,
            });
            i
        }
    }

    #[inline]
    fn release(&mut self, i: u32) -> Packet {
        let n = &mut self.nodes[i as usize];
        n.next = self.free;
        n.prev = NIL;
        self.free = i;
        n.pkt
    }

    /// Appends `pkt` to `q`.
    #[inline(always)]
    pub fn push_back(&mut self, q: &mut PktQueue, pkt: Packet) {
        let size = pkt.size as u64;
        let i = self.alloc(pkt, q.tail);
        if q.tail == NIL {
            q.head = i;
        } else {
            self.nodes[q.tail as usize].next = i;
        }
        q.tail = i;
        q.len += 1;
        q.bytes += size;
    }

    /// Removes and returns the head of `q`.
    #[inline]
    pub fn pop_front(&mut self, q: &mut PktQueue) -> Option<Packet> {
        let i = self.unlink_front(q)?;
        Some(*self.packet(i))
    }

    /// Unlinks the head of `q` and frees its node, returning the node's index (None if
    /// `q` is empty). The packet stays readable through [`packet`](Self::packet) until
    /// the next push into this store: a caller that finishes its bookkeeping first and
    /// copies the packet out last saves the copy through a temporary that `pop_front`'s
    /// caller makes when it writes to its own state between the pop and its return.
    #[inline(always)]
    pub fn unlink_front(&mut self, q: &mut PktQueue) -> Option<u32> {
        if q.head == NIL {
            return None;
        }
        let i = q.head;
        let nodes = &mut self.nodes[..];
        let n = &mut nodes[i as usize];
        let next = n.next;
        let size = n.pkt.size;
        n.next = self.free;
        n.prev = NIL;
        self.free = i;
        q.head = next;
        if next == NIL {
            q.tail = NIL;
        } else {
            nodes[next as usize].prev = NIL;
        }
        q.len -= 1;
        q.bytes -= size as u64;
        Some(i)
    }

    /// The packet of node `i` (one just returned by [`unlink_front`](Self::unlink_front)).
    #[inline(always)]
    pub fn packet(&self, i: u32) -> &Packet {
        &self.nodes[i as usize].pkt
    }

    /// Removes and returns the tail of `q` (SFQ's overflow drop).
    #[inline]
    pub fn pop_back(&mut self, q: &mut PktQueue) -> Option<Packet> {
        if q.tail == NIL {
            return None;
        }
        let i = q.tail;
        let prev = self.nodes[i as usize].prev;
        q.tail = prev;
        if prev == NIL {
            q.head = NIL;
        } else {
            self.nodes[prev as usize].next = NIL;
        }
        let p = self.release(i);
        q.len -= 1;
        q.bytes -= p.size as u64;
        Some(p)
    }

    /// The head packet of `q`.
    #[inline]
    pub fn front(&self, q: &PktQueue) -> Option<&Packet> {
        (q.head != NIL).then(|| &self.nodes[q.head as usize].pkt)
    }

    /// The packets of `q`, head first.
    pub fn iter<'a>(&'a self, q: &PktQueue) -> impl Iterator<Item = &'a Packet> + 'a {
        let mut i = q.head;
        std::iter::from_fn(move || {
            if i == NIL {
                return None;
            }
            let n = &self.nodes[i as usize];
            i = n.next;
            Some(&n.pkt)
        })
    }

    /// Nodes ever allocated (the peak number of packets held at once).
    pub fn allocated(&self) -> usize {
        self.nodes.len()
    }
}

/// Which scheduling list a flow is on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FlowList {
    /// Not scheduled (no packets, or emptied and removed).
    Idle,
    New,
    Old,
}

/// One flow queue of an [`FqScheduler`].
#[derive(Copy, Clone, Debug)]
pub struct FqFlow {
    pub q: PktQueue,
    /// DRR deficit in frame bytes; may go negative (a packet is sent while it is > 0).
    pub deficit: i32,
    pub list: FlowList,
    /// The next flow on the same list (`NIL` at its tail or off the lists).
    next: u32,
}

/// A FIFO list of flows linked through [`FqFlow::next`] (Linux's `list_head` lists of
/// `new_flows` / `old_flows`): no ring-buffer index arithmetic, and a flow is on at most
/// one list at a time, so one link per flow serves both lists.
#[derive(Copy, Clone, Debug)]
struct FlowFifo {
    head: u32,
    tail: u32,
    len: u32,
}

impl FlowFifo {
    const EMPTY: FlowFifo = FlowFifo {
        head: NIL,
        tail: NIL,
        len: 0,
    };
    #[inline(always)]
    fn front(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }
    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.head == NIL
    }
    #[inline(always)]
    fn push_back(&mut self, flows: &mut [FqFlow], i: u32) {
        flows[i as usize].next = NIL;
        if self.tail == NIL {
            self.head = i;
        } else {
            flows[self.tail as usize].next = i;
        }
        self.tail = i;
        self.len += 1;
    }
    /// Removes the head (the list must not be empty).
    #[inline(always)]
    fn pop_front(&mut self, flows: &[FqFlow]) -> u32 {
        let i = self.head;
        debug_assert!(i != NIL, "pop_front on an empty flow list");
        self.head = flows[i as usize].next;
        if self.head == NIL {
            self.tail = NIL;
        }
        self.len -= 1;
        i
    }
    fn iter<'a>(&self, flows: &'a [FqFlow]) -> impl Iterator<Item = u32> + 'a {
        let mut i = self.head;
        std::iter::from_fn(move || {
            if i == NIL {
                return None;
            }
            let cur = i;
            i = flows[cur as usize].next;
            Some(cur)
        })
    }
}

/// Hash-bucketed flow queues with fq_codel's new/old-list deficit round robin.
///
/// The AQM of each flow (CoDel, PIE) is applied by the owning qdisc between
/// [`next_flow`](Self::next_flow) and [`charge`](Self::charge) /
/// [`flow_empty`](Self::flow_empty), exactly where Linux calls `codel_dequeue`.
#[derive(Debug)]
pub struct FqScheduler {
    pub store: PacketStore,
    pub flows: Vec<FqFlow>,
    new_flows: FlowFifo,
    old_flows: FlowFifo,
    quantum: i32,
    overhead: u32,
    salt: u32,
    len: u32,
    bytes: u64,
    /// Flows that became active (Linux `new_flow_count`).
    pub new_flow_count: u64,
}

impl FqScheduler {
    /// `n_flows` buckets, DRR `quantum` in frame bytes, link `overhead` per packet, hash
    /// `salt`, slab pre-sized for `cap` packets.
    pub fn new(n_flows: u32, quantum: u32, overhead: u32, salt: u32, cap: usize) -> Self {
        FqScheduler {
            store: PacketStore::with_capacity(cap),
            flows: vec![
                FqFlow {
                    q: PktQueue::EMPTY,
                    deficit: 0,
                    list: FlowList::Idle,
                    next: NIL,
                };
                n_flows as usize
            ],
            new_flows: FlowFifo::EMPTY,
            old_flows: FlowFifo::EMPTY,
            quantum: quantum.min(i32::MAX as u32) as i32,
            overhead,
            salt,
            len: 0,
            bytes: 0,
            new_flow_count: 0,
        }
    }

    /// The bucket of `pkt` (Linux `fq_codel_hash`: `reciprocal_scale(hash, flows)`).
    #[inline]
    pub fn classify(&self, pkt: &Packet) -> usize {
        reciprocal_scale(salted_hash(pkt.hash, self.salt), self.flows.len() as u32) as usize
    }

    /// Appends `pkt` to flow `idx`; a flow not on any list joins the tail of *new* with a
    /// full quantum. Returns true if the flow became active.
    #[inline(always)]
    pub fn enqueue(&mut self, idx: usize, pkt: Packet) -> bool {
        self.len += 1;
        self.bytes += pkt.size as u64;
        let f = &mut self.flows[idx];
        self.store.push_back(&mut f.q, pkt);
        if f.list == FlowList::Idle {
            f.list = FlowList::New;
            f.deficit = self.quantum;
            self.new_flows.push_back(&mut self.flows, idx as u32);
            self.new_flow_count += 1;
            true
        } else {
            false
        }
    }

    /// The flow to serve next, and whether it came from the *new* list. Flows at the head
    /// whose deficit is used up are topped up by one quantum and moved to the tail of
    /// *old* on the way. The flow may turn out empty: then call `flow_empty`.
    #[inline(always)]
    pub fn next_flow(&mut self) -> Option<(usize, bool)> {
        loop {
            let (idx, from_new) = match self.new_flows.front() {
                Some(i) => (i, true),
                None => (self.old_flows.front()?, false),
            };
            let f = &mut self.flows[idx as usize];
            if f.deficit <= 0 {
                f.deficit += self.quantum;
                f.list = FlowList::Old;
                if from_new {
                    self.new_flows.pop_front(&self.flows);
                } else {
                    self.old_flows.pop_front(&self.flows);
                }
                self.old_flows.push_back(&mut self.flows, idx);
                continue;
            }
            return Some((idx as usize, from_new));
        }
    }

    /// Flow `idx`, returned by `next_flow`, had nothing to send: it leaves its list, except
    /// that an empty *new* flow moves to the tail of *old* if *old* is non-empty.
    #[inline]
    pub fn flow_empty(&mut self, idx: usize, from_new: bool) {
        if from_new {
            let head = self.new_flows.pop_front(&self.flows);
            debug_assert_eq!(head, idx as u32);
            if !self.old_flows.is_empty() {
                self.flows[idx].list = FlowList::Old;
                self.old_flows.push_back(&mut self.flows, idx as u32);
                return;
            }
        } else {
            let head = self.old_flows.pop_front(&self.flows);
            debug_assert_eq!(head, idx as u32);
        }
        self.flows[idx].list = FlowList::Idle;
    }

    /// Charges a packet of `frame_len` bytes sent from flow `idx` to its deficit.
    #[inline]
    pub fn charge(&mut self, idx: usize, frame_len: u32) {
        self.flows[idx].deficit -= frame_len.min(i32::MAX as u32) as i32;
    }

    /// Removes the head packet of flow `idx` (no scheduling side effects).
    #[inline(always)]
    pub fn pop(&mut self, idx: usize) -> Option<Packet> {
        let i = self.unlink_front(idx)?;
        Some(*self.store.packet(i))
    }

    /// Removes the head of flow `idx` like [`pop`](Self::pop) but leaves the packet in its
    /// freed node, returning the node's index for [`PacketStore::packet`] (valid until
    /// the next enqueue): see [`PacketStore::unlink_front`].
    #[inline(always)]
    pub fn unlink_front(&mut self, idx: usize) -> Option<u32> {
        let i = self.store.unlink_front(&mut self.flows[idx].q)?;
        self.len -= 1;
        self.bytes -= self.store.packet(i).size as u64;
        Some(i)
    }

    /// The head packet of flow `idx`.
    #[inline]
    pub fn front(&self, idx: usize) -> Option<&Packet> {
        self.store.front(&self.flows[idx].q)
    }

    /// The flow with the largest backlog in frame bytes, lowest index on ties (Linux
    /// `fq_codel_drop` scans `backlogs[]` for a strictly larger value). Only flows on a
    /// list can hold packets, so scanning the lists finds the same flow as scanning all
    /// buckets, in time proportional to the active flows.
    pub fn fattest(&self) -> Option<usize> {
        let mut best: Option<(u64, u32)> = None;
        for i in self
            .new_flows
            .iter(&self.flows)
            .chain(self.old_flows.iter(&self.flows))
        {
            let b = self.flows[i as usize].q.frame_bytes(self.overhead);
            let better = match best {
                None => b > 0,
                Some((bb, bi)) => b > bb || (b == bb && i < bi),
            };
            if better {
                best = Some((b, i));
            }
        }
        best.map(|(_, i)| i as usize)
    }

    /// Packets queued in all flows.
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// IP bytes queued in all flows.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// Frame bytes queued in all flows (Linux `sch->qstats.backlog`).
    #[inline]
    pub fn frame_backlog(&self) -> u64 {
        self.bytes + self.len as u64 * self.overhead as u64
    }
    pub fn overhead(&self) -> u32 {
        self.overhead
    }
    pub fn quantum(&self) -> i32 {
        self.quantum
    }
    pub fn new_len(&self) -> usize {
        self.new_flows.len as usize
    }
    pub fn old_len(&self) -> usize {
        self.old_flows.len as usize
    }
    /// The *new* and *old* lists, head first (for tests and traces).
    pub fn lists(&self) -> (Vec<u32>, Vec<u32>) {
        (
            self.new_flows.iter(&self.flows).collect(),
            self.old_flows.iter(&self.flows).collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::pkt;
    use super::*;
    use crate::time::SimTime;

    #[test]
    fn store_queues_are_independent_fifos_and_reuse_nodes() {
        let mut s = PacketStore::with_capacity(4);
        let (mut a, mut b) = (PktQueue::EMPTY, PktQueue::EMPTY);
        let t = SimTime::ZERO;
        for i in 0..3 {
            s.push_back(&mut a, pkt(1, 100 + i as u32, i, t));
            s.push_back(&mut b, pkt(2, 200, 10 + i, t));
        }
        assert_eq!((a.len(), a.bytes()), (3, 303));
        assert_eq!(a.frame_bytes(14), 303 + 42);
        assert_eq!(s.iter(&a).map(|p| p.uid).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(s.pop_back(&mut a).unwrap().uid, 2);
        assert_eq!(s.pop_front(&mut a).unwrap().uid, 0);
        assert_eq!(s.front(&a).unwrap().uid, 1);
        assert_eq!(s.pop_front(&mut a).unwrap().uid, 1);
        assert!(s.pop_front(&mut a).is_none() && s.pop_back(&mut a).is_none());
        assert_eq!(a, PktQueue::EMPTY);
        // Freed nodes are reused: six packets were live at most.
        for i in 0..3 {
            s.push_back(&mut a, pkt(1, 100, 20 + i, t));
        }
        assert_eq!(s.allocated(), 6);
        assert_eq!(
            s.iter(&b).map(|p| p.uid).collect::<Vec<_>>(),
            vec![10, 11, 12]
        );
        assert_eq!(
            s.iter(&a).map(|p| p.uid).collect::<Vec<_>>(),
            vec![20, 21, 22]
        );
    }

    /// `unlink_front` then `packet` is `pop_front`: same packets, same queue and slab
    /// state (node reuse order included), under random pushes and pops on three queues.
    #[test]
    fn unlink_front_then_packet_equals_pop_front() {
        let t = SimTime::ZERO;
        let mut rng = crate::rng::Rng::stream(3, "test", 0);
        let (mut a, mut b) = (PacketStore::with_capacity(4), PacketStore::with_capacity(4));
        let (mut qa, mut qb) = ([PktQueue::EMPTY; 3], [PktQueue::EMPTY; 3]);
        for uid in 0..2000u64 {
            let k = rng.below(3) as usize;
            if rng.below(2) == 0 {
                let p = pkt(k as u32, 64 + rng.below(1437) as u32, uid, t);
                a.push_back(&mut qa[k], p);
                b.push_back(&mut qb[k], p);
            } else {
                let want = a.pop_front(&mut qa[k]);
                let got = b.unlink_front(&mut qb[k]).map(|i| *b.packet(i));
                assert_eq!(got.map(|p| (p.uid, p.size)), want.map(|p| (p.uid, p.size)));
            }
            assert_eq!(qa, qb);
            assert_eq!(a.free, b.free);
            assert_eq!(a.allocated(), b.allocated());
            for k in 0..3 {
                let ia: Vec<u64> = a.iter(&qa[k]).map(|p| p.uid).collect();
                let ib: Vec<u64> = b.iter(&qb[k]).map(|p| p.uid).collect();
                assert_eq!(ia, ib);
            }
        }
    }

    #[test]
    fn salted_hash_spreads_and_depends_on_salt() {
        let n = 1024u32;
        let mut hits = vec![0u32; n as usize];
        for h in 0..(64 * n) {
            hits[reciprocal_scale(salted_hash(h, 7), n) as usize] += 1;
        }
        // 64 per bucket expected; a decent mix keeps every bucket within 64 ± 40.
        assert!(
            hits.iter().all(|&c| (24..=104).contains(&c)),
            "{:?}",
            hits.iter().max()
        );
        let moved = (0..1000u32)
            .filter(|&h| salted_hash(h, 1) % n != salted_hash(h, 2) % n)
            .count();
        assert!(
            moved > 990,
            "changing the salt must re-shuffle buckets ({moved}/1000 moved)"
        );
    }

    #[test]
    fn new_flows_first_then_old_with_deficits() {
        let t = SimTime::ZERO;
        let mut s = FqScheduler::new(8, 1514, 14, 0, 16);
        s.enqueue(3, pkt(3, 1500, 0, t));
        s.enqueue(3, pkt(3, 1500, 1, t));
        s.enqueue(5, pkt(5, 100, 2, t));
        assert_eq!(s.lists(), (vec![3, 5], vec![]));
        // Flow 3 at the head of new: send one 1514-byte frame, deficit 0.
        assert_eq!(s.next_flow(), Some((3, true)));
        let p = s.pop(3).unwrap();
        s.charge(3, p.size + 14);
        // Deficit used up: 3 moves to old with a fresh quantum; 5 is served.
        assert_eq!(s.next_flow(), Some((5, true)));
        assert_eq!(s.lists(), (vec![5], vec![3]));
        let p = s.pop(5).unwrap();
        s.charge(5, p.size + 14);
        // 5 still has deficit but no packet: empty new flow goes to old (old non-empty).
        assert_eq!(s.next_flow(), Some((5, true)));
        assert!(s.front(5).is_none());
        s.flow_empty(5, true);
        assert_eq!(s.lists(), (vec![], vec![3, 5]));
        assert_eq!(s.next_flow(), Some((3, false)));
        s.pop(3).unwrap();
        s.charge(3, 1514);
        // 3 exhausted again → tail of old; 5 (empty, from old) leaves the lists.
        assert_eq!(s.next_flow(), Some((5, false)));
        s.flow_empty(5, false);
        assert_eq!(s.flows[5].list, FlowList::Idle);
        assert_eq!(s.next_flow(), Some((3, false)));
        s.flow_empty(3, false);
        assert_eq!(s.next_flow(), None);
        assert!(s.is_empty());
    }

    /// The new/old lists as two `VecDeque`s (their form before the flows were linked
    /// through `FqFlow::next`), driven by the same operations as the scheduler.
    #[derive(Default)]
    struct RefLists {
        new: std::collections::VecDeque<u32>,
        old: std::collections::VecDeque<u32>,
        list: Vec<FlowList>,
        deficit: Vec<i32>,
    }

    #[test]
    fn linked_flow_lists_match_two_ring_buffers() {
        let t = SimTime::ZERO;
        let (n, quantum) = (8usize, 1514);
        let mut rng = crate::rng::Rng::stream(7, "test", 0);
        for round in 0..50 {
            let mut s = FqScheduler::new(n as u32, quantum as u32, 14, 0, 16);
            let mut r = RefLists {
                list: vec![FlowList::Idle; n],
                deficit: vec![0; n],
                ..Default::default()
            };
            for step in 0..400 {
                if rng.below(2) == 0 {
                    let idx = rng.below(n as u64) as usize;
                    let size = 64 + rng.below(1437) as u32;
                    s.enqueue(idx, pkt(idx as u32, size, step, t));
                    if r.list[idx] == FlowList::Idle {
                        r.list[idx] = FlowList::New;
                        r.deficit[idx] = quantum;
                        r.new.push_back(idx as u32);
                    }
                } else {
                    // one dequeue as fq_codel runs it (no AQM drops)
                    let got = s.next_flow();
                    let want = loop {
                        let (idx, from_new) = match r.new.front() {
                            Some(&i) => (i, true),
                            None => match r.old.front() {
                                Some(&i) => (i, false),
                                None => break None,
                            },
                        };
                        if r.deficit[idx as usize] <= 0 {
                            r.deficit[idx as usize] += quantum;
                            r.list[idx as usize] = FlowList::Old;
                            if from_new {
                                r.new.pop_front();
                            } else {
                                r.old.pop_front();
                            }
                            r.old.push_back(idx);
                            continue;
                        }
                        break Some((idx as usize, from_new));
                    };
                    assert_eq!(got, want, "round {round} step {step}");
                    if let Some((idx, from_new)) = got {
                        match s.pop(idx) {
                            Some(p) => {
                                s.charge(idx, p.size + 14);
                                r.deficit[idx] -= (p.size + 14) as i32;
                            }
                            None => {
                                s.flow_empty(idx, from_new);
                                if from_new {
                                    r.new.pop_front();
                                    if !r.old.is_empty() {
                                        r.list[idx] = FlowList::Old;
                                        r.old.push_back(idx as u32);
                                    } else {
                                        r.list[idx] = FlowList::Idle;
                                    }
                                } else {
                                    r.old.pop_front();
                                    r.list[idx] = FlowList::Idle;
                                }
                            }
                        }
                    }
                }
                let (new, old) = s.lists();
                assert_eq!(new, r.new.iter().copied().collect::<Vec<_>>());
                assert_eq!(old, r.old.iter().copied().collect::<Vec<_>>());
                assert_eq!((s.new_len(), s.old_len()), (r.new.len(), r.old.len()));
                for i in 0..n {
                    assert_eq!(
                        (s.flows[i].list, s.flows[i].deficit),
                        (r.list[i], r.deficit[i])
                    );
                }
            }
        }
    }

    #[test]
    fn fattest_is_largest_frame_backlog_lowest_index_on_ties() {
        let t = SimTime::ZERO;
        let mut s = FqScheduler::new(8, 1514, 14, 0, 16);
        assert_eq!(s.fattest(), None);
        s.enqueue(6, pkt(6, 1000, 0, t));
        s.enqueue(2, pkt(2, 500, 1, t));
        s.enqueue(2, pkt(2, 500, 2, t));
        // 6: 1014 frame bytes; 2: 1028 → 2 is fatter in frame bytes although equal in IP bytes.
        assert_eq!(s.fattest(), Some(2));
        s.enqueue(6, pkt(6, 14, 3, t));
        // 6: 1042 > 1028.
        assert_eq!(s.fattest(), Some(6));
        s.enqueue(2, pkt(2, 0, 4, t));
        // Both 1042: lowest index wins.
        assert_eq!(s.fattest(), Some(2));
    }
}
