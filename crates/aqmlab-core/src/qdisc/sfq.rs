//! `sfq`: Stochastic Fairness Queueing as Linux `sch_sfq` implements it (McKenney 1990
//! with deficit round robin).
//!
//! - Packets hash (salted, `& (divisor − 1)`) into `divisor` buckets (default 1024); each
//!   busy bucket is bound to one of at most `flows` slots (default 128) with its own FIFO.
//!   A packet whose bucket needs a slot when none is free is dropped.
//! - Busy slots form a ring served round robin; a slot newly busy joins at the end of the
//!   round with an allotment of one `quantum`. The slot at the head sends while its
//!   allotment is positive (one packet per turn at least, so the allotment may go
//!   negative); when it is used up the slot gets one more quantum and the turn passes on.
//!   Linux keeps allotments in units of 8 bytes, rounded up; so do we.
//! - A slot holding `depth` packets (default and maximum 127) drops arrivals (or, with
//!   `headdrop`, its head). When the qdisc exceeds `limit` packets (default 127), the
//!   longest slot loses its tail packet (its head with `headdrop`); ties go to the slot
//!   that reached that depth last. If every slot holds one packet, the slot next in turn
//!   loses it.
//! - `perturb = "10s"` re-salts the hash every period and re-files queued packets (in slot
//!   order) so flows keep their packet order. Linux does this from a timer; we do it at the
//!   first enqueue/dequeue at or after each period's end, which is the same queue state
//!   because nothing changes between calls.
//!
//! Lengths charged to allotments are frame bytes (`size + overhead`), like Linux's
//! `qdisc_pkt_len`. SFQ's optional RED mode is not modelled.

use super::flow_sched::{salted_hash, PacketStore, PktQueue, NIL};
use super::{BuildCtx, DropReason, ParamDoc, ParamError, Qdisc, QdiscOut, QdiscStats, Verdict};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};
use crate::units::DurationSpec;
use serde::{Deserialize, Serialize};

/// Linux `SFQ_MAX_DEPTH`.
pub const MAX_DEPTH: u32 = 127;
/// Linux `SFQ_MAX_FLOWS` (0x10000 − 127 − 1).
pub const MAX_FLOWS: u32 = 0x10000 - MAX_DEPTH - 1;
const ALLOT_SHIFT: u32 = 3;

/// Linux `SFQ_ALLOT_SIZE`: bytes in units of 8, rounded up.
#[inline]
fn allot_size(bytes: u32) -> i32 {
    bytes.div_ceil(1 << ALLOT_SHIFT) as i32
}

fn d_limit() -> u32 {
    127
}
fn d_depth() -> u32 {
    MAX_DEPTH
}
fn d_divisor() -> u32 {
    1024
}
fn d_flows() -> u32 {
    128
}

/// `{ kind = "sfq", ... }`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SfqConfig {
    /// Packet limit of the qdisc. Default 127 (Linux `SFQ_MAX_DEPTH`).
    #[serde(default = "d_limit")]
    pub limit: u32,
    /// Packet limit per flow, 1..=127. Default 127.
    #[serde(default = "d_depth")]
    pub depth: u32,
    /// Hash buckets, a power of two up to 65536. Default 1024 (Linux `SFQ_DEFAULT_HASH_DIVISOR`).
    #[serde(default = "d_divisor")]
    pub divisor: u32,
    /// Most flows queued at once. Default 128 (Linux `SFQ_DEFAULT_FLOWS`).
    #[serde(default = "d_flows")]
    pub flows: u32,
    /// Allotment per round in frame bytes. Default MTU + overhead (Linux `psched_mtu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantum: Option<u32>,
    /// Re-salt the hash every this long. Default off (Linux `perturb 0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturb: Option<DurationSpec>,
    /// Drop from the head instead of the tail when a flow or the qdisc is full. Default false.
    #[serde(default)]
    pub headdrop: bool,
}

impl Default for SfqConfig {
    fn default() -> Self {
        SfqConfig {
            limit: d_limit(),
            depth: d_depth(),
            divisor: d_divisor(),
            flows: d_flows(),
            quantum: None,
            perturb: None,
            headdrop: false,
        }
    }
}

impl SfqConfig {
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc { name: "limit", default: "127", doc: "packet limit of the qdisc (Linux SFQ default); overflow drops from the longest flow" },
        ParamDoc { name: "depth", default: "127", doc: "packet limit per flow, at most 127 (Linux SFQ_MAX_DEPTH)" },
        ParamDoc { name: "divisor", default: "1024", doc: "hash buckets, a power of two up to 65536 (Linux default 1024)" },
        ParamDoc { name: "flows", default: "128", doc: "most flows queued at once; a new flow finding none free is dropped (Linux default 128)" },
        ParamDoc { name: "quantum", default: "MTU + overhead", doc: "allotment per round in frame bytes (Linux psched_mtu: 1514 on Ethernet)" },
        ParamDoc { name: "perturb", default: "off", doc: "re-salt the flow hash every this long (tc sfq perturb SECS)" },
        ParamDoc { name: "headdrop", default: "false", doc: "drop the flow's head instead of the arriving/tail packet (tc sfq headdrop)" },
    ];

    pub fn validate(&self, _ctx: &BuildCtx) -> Result<(), ParamError> {
        if self.limit == 0 {
            return Err(ParamError::new("limit", 0, "a packet count of at least 1"));
        }
        if self.depth == 0 || self.depth > MAX_DEPTH {
            return Err(ParamError::new(
                "depth",
                self.depth,
                "1 to 127 packets (Linux SFQ_MAX_DEPTH)",
            ));
        }
        if !self.divisor.is_power_of_two() || self.divisor > 65536 {
            return Err(ParamError::new(
                "divisor",
                self.divisor,
                "a power of two up to 65536",
            ));
        }
        if self.flows == 0 || self.flows > MAX_FLOWS {
            return Err(ParamError::new(
                "flows",
                self.flows,
                format!("1 to {MAX_FLOWS}"),
            ));
        }
        if let Some(q) = self.quantum {
            if q == 0 || q > 1 << 18 {
                return Err(ParamError::new("quantum", q, "1 to 262144 bytes"));
            }
        }
        if let Some(p) = self.perturb {
            if p.0.is_zero() {
                return Err(ParamError::new(
                    "perturb",
                    "0",
                    "a positive duration (omit the key to disable)",
                ));
            }
        }
        Ok(())
    }
}

/// A flow slot, or (at indices `dep_base..`) the head of a per-depth list, of which only
/// `dep_next`/`dep_prev` are used: slots and heads share one link space, as Linux's
/// `sfq_index` does, so a link is written without asking which of the two it is.
#[derive(Copy, Clone, Debug)]
struct Slot {
    q: PktQueue,
    /// Next slot in the round-robin ring.
    next: u32,
    /// Links in the list of slots of equal depth (indices ≥ `dep_base` are list heads).
    dep_next: u32,
    dep_prev: u32,
    /// The bucket bound to this slot.
    hash: u32,
    /// Remaining allotment in 8-byte units.
    allot: i32,
}

/// The SFQ qdisc.
#[derive(Debug)]
pub struct Sfq {
    store: PacketStore,
    /// Bucket → slot (NIL: none).
    ht: Vec<u32>,
    /// The `dep_base` flow slots, then the heads of the per-depth slot lists: entry
    /// `dep_base + d` heads the list of slots holding `d` packets (`d = 0`: the free slots).
    slots: Vec<Slot>,
    /// Index of the first depth-list head in `slots` (= number of flow slots).
    dep_base: u32,
    /// The slot that was served last (the ring's current end), NIL when idle.
    tail: u32,
    cur_depth: u32,
    limit: u32,
    maxdepth: u32,
    divisor: u32,
    scaled_quantum: i32,
    headdrop: bool,
    overhead: u32,
    salt: u32,
    rng: Rng,
    perturb: Option<SimDuration>,
    /// End of the current perturbation period; `SimTime::NEVER` without `perturb`, so
    /// the per-packet check is one compare.
    next_perturb: SimTime,
    len: u32,
    bytes: u64,
    active: u32,
    stats: QdiscStats,
    scratch: Vec<Packet>,
    traced: f64,
}

impl Sfq {
    pub fn new(c: &SfqConfig, mut ctx: BuildCtx) -> Self {
        // Linux sfq_change: maxflows ≤ divisor, limit ≤ depth·maxflows, maxflows ≤ limit.
        let mut maxflows = c.flows.min(c.divisor);
        let limit = c.limit.min(c.depth * maxflows);
        maxflows = maxflows.min(limit);
        let quantum = c.quantum.unwrap_or(ctx.mtu + ctx.overhead);
        let salt = ctx.rng.next_u32();
        let blank = Slot {
            q: PktQueue::EMPTY,
            next: NIL,
            dep_next: NIL,
            dep_prev: NIL,
            hash: 0,
            allot: 0,
        };
        let mut q = Sfq {
            store: PacketStore::with_capacity((limit as usize + 1).min(4096)),
            ht: vec![NIL; c.divisor as usize],
            slots: vec![blank; (maxflows + MAX_DEPTH + 1) as usize],
            dep_base: maxflows,
            tail: NIL,
            cur_depth: 0,
            limit,
            maxdepth: c.depth,
            divisor: c.divisor,
            scaled_quantum: allot_size(quantum),
            headdrop: c.headdrop,
            overhead: ctx.overhead,
            salt,
            rng: ctx.rng,
            perturb: c.perturb.map(|p| p.0),
            next_perturb: c
                .perturb
                .map(|p| SimTime::ZERO + p.0)
                .unwrap_or(SimTime::NEVER),
            len: 0,
            bytes: 0,
            active: 0,
            stats: QdiscStats::default(),
            scratch: Vec::new(),
            traced: f64::NAN,
        };
        for h in maxflows..q.slots.len() as u32 {
            q.slots[h as usize].dep_next = h;
            q.slots[h as usize].dep_prev = h;
        }
        for i in 0..maxflows {
            link(&mut q.slots, maxflows, i);
        }
        q
    }

    #[inline]
    fn bucket(&self, pkt: &Packet) -> u32 {
        salted_hash(pkt.hash, self.salt) & (self.divisor - 1)
    }

    /// Adds `pkt` to slot `x` (already bound to its bucket); a newly busy slot joins the
    /// ring at the end of the round with a full allotment.
    #[inline(always)]
    fn add(&mut self, x: u32, pkt: Packet) {
        self.len += 1;
        self.bytes += pkt.size as u64;
        let base = self.dep_base;
        // A local slice: its pointer and length stay in registers across the stores below
        // (through `self.slots` they are re-read after every store to the heap).
        let slots = &mut self.slots[..];
        self.store.push_back(&mut slots[x as usize].q, pkt);
        self.cur_depth = relink_inc(slots, base, x, self.cur_depth);
        if slots[x as usize].q.len() == 1 {
            if self.tail == NIL {
                slots[x as usize].next = x;
            } else {
                slots[x as usize].next = slots[self.tail as usize].next;
                slots[self.tail as usize].next = x;
            }
            self.tail = x;
            slots[x as usize].allot = self.scaled_quantum;
            self.active += 1;
        }
    }

    /// Removes one packet from slot `x` (head or tail) with depth bookkeeping.
    #[inline(always)]
    fn take(&mut self, x: u32, from_head: bool) -> Packet {
        let d = self.slots[x as usize].q.len();
        let q = &mut self.slots[x as usize].q;
        let p = if from_head {
            self.store.pop_front(q)
        } else {
            self.store.pop_back(q)
        }
        .expect("slot holds packets");
        self.cur_depth = relink_dec(&mut self.slots, self.dep_base, x, d, self.cur_depth);
        self.len -= 1;
        self.bytes -= p.size as u64;
        p
    }

    /// Linux `sfq_drop`: the qdisc is over its limit.
    fn drop_one(&mut self, out: &mut QdiscOut) {
        let d = self.cur_depth;
        let x = if d > 1 {
            self.slots[(self.dep_base + d) as usize].dep_next
        } else if d == 1 {
            // Every slot holds one packet: drop the one next in turn, retiring its slot.
            let x = self.slots[self.tail as usize].next;
            self.slots[self.tail as usize].next = self.slots[x as usize].next;
            self.ht[self.slots[x as usize].hash as usize] = NIL;
            self.active -= 1;
            x
        } else {
            return;
        };
        let p = self.take(x, self.headdrop);
        out.drop_queued(&mut self.stats, p, DropReason::FatFlow);
    }

    /// Re-salts the hash if a perturbation period has ended, re-filing queued packets.
    #[inline(always)]
    fn maybe_perturb(&mut self, now: SimTime, out: &mut QdiscOut) {
        if now >= self.next_perturb {
            self.perturb_now(now, out);
        }
    }

    #[cold]
    #[inline(never)]
    fn perturb_now(&mut self, now: SimTime, out: &mut QdiscOut) {
        let Some(period) = self.perturb else { return };
        while self.next_perturb <= now {
            self.salt = self.rng.next_u32();
            self.next_perturb += period;
        }
        if self.tail != NIL {
            self.rehash(out);
        }
    }

    /// Linux `sfq_rehash`: empties every slot in index order and re-files the packets
    /// under the new salt; packets that find no slot or a full one are dropped.
    fn rehash(&mut self, out: &mut QdiscOut) {
        let mut list = std::mem::take(&mut self.scratch);
        for i in 0..self.dep_base {
            if self.slots[i as usize].q.is_empty() {
                continue;
            }
            while !self.slots[i as usize].q.is_empty() {
                list.push(self.take(i, true));
            }
            self.ht[self.slots[i as usize].hash as usize] = NIL;
        }
        self.tail = NIL;
        self.active = 0;
        for p in list.drain(..) {
            let h = self.bucket(&p);
            let mut x = self.ht[h as usize];
            if x == NIL {
                x = self.slots[self.dep_base as usize].dep_next;
                if x >= self.dep_base {
                    out.drop_queued(&mut self.stats, p, DropReason::Overlimit);
                    continue;
                }
                self.ht[h as usize] = x;
                self.slots[x as usize].hash = h;
            }
            if self.slots[x as usize].q.len() >= self.maxdepth {
                out.drop_queued(&mut self.stats, p, DropReason::Overlimit);
                continue;
            }
            self.add(x, p);
        }
        self.scratch = list;
    }

    /// Flows currently queued.
    pub fn active_flows(&self) -> u32 {
        self.active
    }
    /// Effective limits after Linux's clamping: (limit, slots).
    pub fn limits(&self) -> (u32, u32) {
        (self.limit, self.dep_base)
    }

    fn trace(&mut self, now: SimTime, out: &mut QdiscOut) {
        let v = self.active as f64;
        if v != self.traced {
            self.traced = v;
            out.trace(now, 0, v);
        }
    }
}

// --- the depth lists (Linux sfq_link / sfq_unlink / sfq_inc / sfq_dec), over the link
// space of `Sfq::slots` (flow slots below `base`, list heads from `base` on) ---

/// Puts slot `x` at the head of the list for its current depth.
#[inline(always)]
fn link(slots: &mut [Slot], base: u32, x: u32) {
    let d = slots[x as usize].q.len();
    let p = base + d;
    let n = slots[p as usize].dep_next;
    slots[x as usize].dep_next = n;
    slots[x as usize].dep_prev = p;
    slots[p as usize].dep_next = x;
    slots[n as usize].dep_prev = x;
}

/// Takes slot `x` out of its depth list; returns its former `(next, prev)`.
#[inline(always)]
fn unlink(slots: &mut [Slot], x: u32) -> (u32, u32) {
    let (n, p) = (slots[x as usize].dep_next, slots[x as usize].dep_prev);
    slots[p as usize].dep_next = n;
    slots[n as usize].dep_prev = p;
    (n, p)
}

/// Slot `x` lost a packet and had `d` before; returns the new maximum depth.
#[inline(always)]
fn relink_dec(slots: &mut [Slot], base: u32, x: u32, d: u32, cur_depth: u32) -> u32 {
    let (n, p) = unlink(slots, x);
    let cur = if n == p && cur_depth == d {
        cur_depth - 1
    } else {
        cur_depth
    };
    link(slots, base, x);
    cur
}

/// Slot `x` gained a packet; returns the new maximum depth.
#[inline(always)]
fn relink_inc(slots: &mut [Slot], base: u32, x: u32, cur_depth: u32) -> u32 {
    unlink(slots, x);
    let d = slots[x as usize].q.len();
    link(slots, base, x);
    cur_depth.max(d)
}

impl Qdisc for Sfq {
    fn enqueue(&mut self, pkt: Packet, now: SimTime, out: &mut QdiscOut) -> Verdict {
        self.maybe_perturb(now, out);
        let h = self.bucket(&pkt);
        let mut x = self.ht[h as usize];
        if x == NIL {
            x = self.slots[self.dep_base as usize].dep_next; // a free slot
            if x >= self.dep_base {
                return out.drop_arrival(&mut self.stats, pkt, DropReason::Overlimit);
            }
            self.ht[h as usize] = x;
            self.slots[x as usize].hash = h;
        } else if self.slots[x as usize].q.len() >= self.maxdepth {
            if !self.headdrop {
                return out.drop_arrival(&mut self.stats, pkt, DropReason::Overlimit);
            }
            // Head drop: the arriving packet replaces the flow's oldest one.
            let head = self
                .store
                .pop_front(&mut self.slots[x as usize].q)
                .expect("full slot");
            self.bytes -= head.size as u64;
            out.drop_queued(&mut self.stats, head, DropReason::Overlimit);
            self.stats.on_enqueue(&pkt);
            self.bytes += pkt.size as u64;
            self.store.push_back(&mut self.slots[x as usize].q, pkt);
            return Verdict::Enqueued;
        }
        self.stats.on_enqueue(&pkt);
        self.add(x, pkt);
        if self.len > self.limit {
            self.drop_one(out);
        }
        if out.tracing {
            self.trace(now, out);
        }
        Verdict::Enqueued
    }

    fn dequeue(&mut self, now: SimTime, out: &mut QdiscOut) -> Option<Packet> {
        self.maybe_perturb(now, out);
        if self.tail == NIL {
            return None;
        }
        let base = self.dep_base;
        let slots = &mut self.slots[..];
        let a = loop {
            let a = slots[self.tail as usize].next;
            let s = &mut slots[a as usize];
            if s.allot <= 0 {
                s.allot += self.scaled_quantum;
                self.tail = a;
                continue;
            }
            break a;
        };
        // All bookkeeping first, the packet copied out of its (freed) node last: straight
        // into the caller's slot, not through a temporary.
        let d = slots[a as usize].q.len();
        let i = self
            .store
            .unlink_front(&mut slots[a as usize].q)
            .expect("a slot in the ring holds packets");
        let size = self.store.packet(i).size;
        self.cur_depth = relink_dec(slots, base, a, d, self.cur_depth);
        self.len -= 1;
        self.bytes -= size as u64;
        if slots[a as usize].q.is_empty() {
            self.ht[slots[a as usize].hash as usize] = NIL;
            self.active -= 1;
            let next_a = slots[a as usize].next;
            if a == next_a {
                self.tail = NIL;
            } else {
                slots[self.tail as usize].next = next_a;
            }
        } else {
            slots[a as usize].allot -= allot_size(size + self.overhead);
        }
        self.stats.on_dequeue(self.store.packet(i));
        if out.tracing {
            self.trace(now, out);
        }
        Some(*self.store.packet(i))
    }

    fn len(&self) -> usize {
        self.len as usize
    }
    fn backlog_bytes(&self) -> u64 {
        self.bytes
    }
    fn stats(&self) -> &QdiscStats {
        &self.stats
    }
    fn trace_vars(&self) -> &'static [&'static str] {
        &["active_flows"]
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{ctx, pkt};
    use super::*;

    /// `n` flow ids in distinct buckets of `q`.
    fn distinct_flows(q: &Sfq, n: usize) -> Vec<u32> {
        let mut seen = std::collections::HashSet::new();
        (1..)
            .filter(|&f| seen.insert(q.bucket(&pkt(f, 1, 0, SimTime::ZERO))))
            .take(n)
            .collect()
    }

    #[test]
    fn defaults_and_linux_clamping() {
        let q = Sfq::new(&SfqConfig::default(), ctx(10_000_000));
        // limit 127 also caps the slots at 127 (Linux: maxflows = min(maxflows, limit)).
        assert_eq!(q.limits(), (127, 127));
        assert_eq!(q.scaled_quantum, 190); // ⌈1514 / 8⌉
        let q = Sfq::new(
            &SfqConfig {
                limit: 10_000,
                depth: 10,
                ..Default::default()
            },
            ctx(10_000_000),
        );
        assert_eq!(q.limits(), (1280, 128)); // limit ≤ depth × flows
        let c = ctx(1);
        for (cfg, field) in [
            (
                SfqConfig {
                    depth: 128,
                    ..Default::default()
                },
                "depth",
            ),
            (
                SfqConfig {
                    divisor: 1000,
                    ..Default::default()
                },
                "divisor",
            ),
            (
                SfqConfig {
                    flows: 0,
                    ..Default::default()
                },
                "flows",
            ),
            (
                SfqConfig {
                    limit: 0,
                    ..Default::default()
                },
                "limit",
            ),
            (
                SfqConfig {
                    quantum: Some(0),
                    ..Default::default()
                },
                "quantum",
            ),
            (
                SfqConfig {
                    perturb: Some(DurationSpec(SimDuration::ZERO)),
                    ..Default::default()
                },
                "perturb",
            ),
        ] {
            assert_eq!(cfg.validate(&c).unwrap_err().field, field);
        }
    }

    #[test]
    fn round_robin_one_mtu_packet_per_turn_and_small_packets_by_bytes() {
        let mut q = Sfq::new(&SfqConfig::default(), ctx(10_000_000));
        let f = distinct_flows(&q, 3);
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        for i in 0..4 {
            q.enqueue(pkt(f[0], 1500, i, t), t, &mut out);
            q.enqueue(pkt(f[1], 1500, 10 + i, t), t, &mut out);
        }
        // Third flow: 100-byte packets (114 frame bytes = 15 units): a 190-unit
        // allotment sends 13 of them per turn (13 × 15 = 195 > 190 ≥ 12 × 15).
        for i in 0..30 {
            q.enqueue(pkt(f[2], 100, 100 + i, t), t, &mut out);
        }
        let order: Vec<u32> = (0..38)
            .map(|_| q.dequeue(t, &mut out).unwrap().flow)
            .collect();
        let mut expect = vec![f[0], f[1]];
        expect.extend(std::iter::repeat_n(f[2], 13));
        expect.extend([f[0], f[1]]);
        expect.extend(std::iter::repeat_n(f[2], 13));
        expect.extend([f[0], f[1], f[2], f[2], f[2], f[2]]);
        expect.extend([f[0], f[1]]);
        assert_eq!(order, expect);
        assert!(q.is_empty());
        assert_eq!(q.active_flows(), 0);
        q.stats().check(0, 0).unwrap();
    }

    #[test]
    fn overflow_drops_the_tail_of_the_longest_flow() {
        let mut q = Sfq::new(
            &SfqConfig {
                limit: 10,
                ..Default::default()
            },
            ctx(10_000_000),
        );
        let f = distinct_flows(&q, 2);
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        for i in 0..8 {
            q.enqueue(pkt(f[0], 1500, i, t), t, &mut out);
        }
        q.enqueue(pkt(f[1], 100, 100, t), t, &mut out);
        q.enqueue(pkt(f[1], 100, 101, t), t, &mut out);
        assert!(out.drops.is_empty());
        // The 11th packet (sparse flow) overflows: the long flow's *tail* goes.
        assert_eq!(
            q.enqueue(pkt(f[1], 100, 102, t), t, &mut out),
            Verdict::Enqueued
        );
        assert_eq!(out.drops.len(), 1);
        assert_eq!(
            (out.drops[0].0.uid, out.drops[0].1),
            (7, DropReason::FatFlow)
        );
        assert_eq!(q.len(), 10);
        // With headdrop, the long flow's head goes instead.
        let mut q = Sfq::new(
            &SfqConfig {
                limit: 10,
                headdrop: true,
                ..Default::default()
            },
            ctx(10_000_000),
        );
        out.drops.clear();
        for i in 0..11 {
            q.enqueue(pkt(f[0], 1500, i, t), t, &mut out);
        }
        assert_eq!(out.drops[0].0.uid, 0);
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
    }

    #[test]
    fn depth_limit_and_slot_exhaustion_drop_arrivals() {
        let mut q = Sfq::new(
            &SfqConfig {
                limit: 100,
                depth: 5,
                flows: 2,
                ..Default::default()
            },
            ctx(10_000_000),
        );
        let f = distinct_flows(&q, 3);
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        for i in 0..6 {
            let v = q.enqueue(pkt(f[0], 1000, i, t), t, &mut out);
            assert_eq!(v == Verdict::Enqueued, i < 5);
        }
        assert_eq!(
            q.enqueue(pkt(f[1], 1000, 10, t), t, &mut out),
            Verdict::Enqueued
        );
        // Two slots in use: a third flow finds none free.
        assert_eq!(
            q.enqueue(pkt(f[2], 1000, 20, t), t, &mut out),
            Verdict::Dropped(DropReason::Overlimit)
        );
        // When flow 1 drains, its slot is free again.
        while q.dequeue(t, &mut out).map(|p| p.flow) != Some(f[1]) {}
        assert_eq!(
            q.enqueue(pkt(f[2], 1000, 21, t), t, &mut out),
            Verdict::Enqueued
        );
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
    }

    #[test]
    fn limit_caps_slots_and_all_depth_one_overflow_drops_next_in_turn() {
        let mut q = Sfq::new(
            &SfqConfig {
                limit: 3,
                ..Default::default()
            },
            ctx(10_000_000),
        );
        let f = distinct_flows(&q, 4);
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        // Linux clamps the slots to the limit: a 4th concurrent flow finds no slot.
        for (i, &fl) in f.iter().enumerate() {
            let v = q.enqueue(pkt(fl, 500, i as u64, t), t, &mut out);
            assert_eq!(v == Verdict::Enqueued, i < 3);
        }
        // With more slots than the limit (reachable in Linux only before that clamp
        // existed), all-depth-one overflow drops the packet of the slot next in turn.
        let mut q = Sfq::new(
            &SfqConfig {
                limit: 4,
                ..Default::default()
            },
            ctx(10_000_000),
        );
        q.limit = 3;
        out.drops.clear();
        for (i, &fl) in f.iter().enumerate() {
            q.enqueue(pkt(fl, 500, i as u64, t), t, &mut out);
        }
        assert_eq!(out.drops.len(), 1);
        assert_eq!(
            (out.drops[0].0.flow, out.drops[0].1),
            (f[0], DropReason::FatFlow)
        );
        assert_eq!(q.active_flows(), 3);
        let order: Vec<u32> = (0..3)
            .map(|_| q.dequeue(t, &mut out).unwrap().flow)
            .collect();
        assert_eq!(order, vec![f[1], f[2], f[3]]);
        assert_eq!(q.active_flows(), 0);
        q.stats().check(0, 0).unwrap();
    }

    #[test]
    fn perturbation_resalts_and_keeps_per_flow_order() {
        let cfg = SfqConfig {
            perturb: Some(DurationSpec(SimDuration::from_secs(1))),
            limit: 1000,
            flows: 1024,
            ..Default::default()
        };
        let mut q = Sfq::new(&cfg, ctx(10_000_000));
        let mut out = QdiscOut::new(false);
        let salt0 = q.salt;
        let mut uid = 0;
        for f in 1..=40u32 {
            for _ in 0..5 {
                q.enqueue(pkt(f, 200, uid, SimTime::ZERO), SimTime::ZERO, &mut out);
                uid += 1;
            }
        }
        let before: Vec<u32> = (1..=40)
            .map(|f| q.bucket(&pkt(f, 1, 0, SimTime::ZERO)))
            .collect();
        let t = SimTime::from_secs_f64(1.5);
        let first = q.dequeue(t, &mut out).unwrap();
        assert_ne!(q.salt, salt0);
        let after: Vec<u32> = (1..=40)
            .map(|f| q.bucket(&pkt(f, 1, 0, SimTime::ZERO)))
            .collect();
        assert!(before.iter().zip(&after).filter(|(a, b)| a != b).count() > 30);
        // Every flow's packets still come out in order, none lost.
        let mut last = std::collections::HashMap::new();
        last.insert(first.flow, first.uid);
        let mut n = 1;
        while let Some(p) = q.dequeue(t, &mut out) {
            if let Some(&u) = last.get(&p.flow) {
                assert!(p.uid > u);
            }
            last.insert(p.flow, p.uid);
            n += 1;
        }
        assert_eq!(n, 200);
        assert!(out.drops.is_empty());
        // Next period: one more re-salt.
        let s1 = q.salt;
        q.enqueue(
            pkt(1, 200, 999, SimTime::from_secs_f64(2.0)),
            SimTime::from_secs_f64(2.0),
            &mut out,
        );
        assert_ne!(q.salt, s1);
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
    }
}
