//! `drr`: per-flow Deficit Round Robin (Shreedhar & Varghese 1995) with **exact** flow
//! classification, as the DOCSIS study's CMTS scheduler ("one queue per flow, each queue
//! 1/10 of 2048 packets").
//!
//! - Every flow gets its own queue, keyed by `(Packet::flow, Packet::src, Packet::hash)`:
//!   the flow and its direction, and the sub-connection hash of multi-connection
//!   applications. No hashing into buckets, so no collisions (unlike `sfq`/`fq_codel`).
//!   Queues are created on a flow's first packet and kept (a few bytes each).
//! - Active queues are served round robin. A queue at the head of the round receives one
//!   `quantum` of credit when its turn starts and sends head packets while the head fits
//!   in its credit; then the turn passes and the remainder carries over. A queue that
//!   empties leaves the round and forfeits its credit (deficit reset to 0), and a queue
//!   becoming active joins the end of the round with no credit — the classic DRR rules
//!   (and ns-2's `DRR`).
//! - Credit and packet lengths are frame bytes (`size + overhead`), as Linux qdiscs count
//!   `qdisc_pkt_len`; the default quantum is one frame of MTU size (1514 on Ethernet), the
//!   smallest quantum that lets every queue send a packet per round.
//! - Limits: a queue holding `flow_limit` packets drops arrivals (reason `overlimit`); when
//!   the qdisc holds more than `limit` packets after an arrival, the queue with the most
//!   frame bytes loses its head packet (reason `fat_flow`), as ns-2's DRR evicts from its
//!   longest queue. Defaults are the DOCSIS study's: 2048 packets in all, 204 per queue.

use super::flow_sched::{PacketStore, PktQueue};
use super::{BuildCtx, DropReason, ParamDoc, ParamError, Qdisc, QdiscOut, QdiscStats, Verdict};
use crate::packet::Packet;
use crate::time::SimTime;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

fn d_limit() -> u32 {
    2048
}
fn d_flow_limit() -> u32 {
    204
}

/// `{ kind = "drr", ... }`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DrrConfig {
    /// Packet limit of the qdisc. Default 2048 (DOCSIS study QUEUE_CAPACITY).
    #[serde(default = "d_limit")]
    pub limit: u32,
    /// Packet limit per flow queue. Default 204 (DOCSIS study: 1/10 of 2048, rounded down).
    #[serde(default = "d_flow_limit")]
    pub flow_limit: u32,
    /// Credit per round in frame bytes. Default MTU + overhead (1514 on Ethernet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantum: Option<u32>,
}

impl Default for DrrConfig {
    fn default() -> Self {
        DrrConfig {
            limit: d_limit(),
            flow_limit: d_flow_limit(),
            quantum: None,
        }
    }
}

impl DrrConfig {
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc { name: "limit", default: "2048", doc: "packet limit of the qdisc (DOCSIS study CMTS capacity); overflow evicts the head of the longest queue" },
        ParamDoc { name: "flow_limit", default: "204", doc: "packet limit of each flow's queue (DOCSIS study: 1/10 of 2048); a full queue drops arrivals" },
        ParamDoc { name: "quantum", default: "MTU + overhead", doc: "credit per round in frame bytes (one MTU frame: 1514 on Ethernet)" },
    ];

    pub fn validate(&self, _ctx: &BuildCtx) -> Result<(), ParamError> {
        if self.limit == 0 {
            return Err(ParamError::new("limit", 0, "a packet count of at least 1"));
        }
        if self.flow_limit == 0 {
            return Err(ParamError::new(
                "flow_limit",
                0,
                "a packet count of at least 1",
            ));
        }
        if self.quantum == Some(0) {
            return Err(ParamError::new(
                "quantum",
                0,
                "at least 1 byte (usually one MTU frame)",
            ));
        }
        Ok(())
    }
}

/// A fixed, seedless hasher for flow keys (FxHash-style multiply–rotate), so that the
/// map's behaviour never depends on process-random state.
#[derive(Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

type FlowKey = (u32, u32, u32);

#[derive(Copy, Clone, Debug)]
struct DrrQueue {
    q: PktQueue,
    /// Unused credit in frame bytes.
    deficit: u64,
    /// Whether this queue's current turn has received its quantum.
    in_turn: bool,
    active: bool,
}

/// The per-flow DRR qdisc.
#[derive(Debug)]
pub struct Drr {
    store: PacketStore,
    queues: Vec<DrrQueue>,
    index: HashMap<FlowKey, u32, BuildHasherDefault<KeyHasher>>,
    round: VecDeque<u32>,
    quantum: u64,
    limit: u32,
    flow_limit: u32,
    overhead: u32,
    len: u32,
    bytes: u64,
    stats: QdiscStats,
    traced: f64,
}

impl Drr {
    pub fn new(c: &DrrConfig, ctx: BuildCtx) -> Self {
        Drr {
            store: PacketStore::with_capacity((c.limit as usize + 1).min(4096)),
            queues: Vec::with_capacity(64),
            index: HashMap::with_capacity_and_hasher(64, Default::default()),
            round: VecDeque::with_capacity(64),
            quantum: c.quantum.unwrap_or(ctx.mtu + ctx.overhead) as u64,
            limit: c.limit,
            flow_limit: c.flow_limit,
            overhead: ctx.overhead,
            len: 0,
            bytes: 0,
            stats: QdiscStats::default(),
            traced: f64::NAN,
        }
    }

    /// Flow queues ever created.
    pub fn queues_created(&self) -> usize {
        self.queues.len()
    }
    /// Queues currently in the round.
    pub fn active_flows(&self) -> usize {
        self.round.len()
    }

    #[inline]
    fn frame(&self, p: &Packet) -> u64 {
        p.size as u64 + self.overhead as u64
    }

    /// The active queue with the most frame bytes (earliest in the round on ties).
    fn longest(&self) -> Option<u32> {
        let mut best: Option<(u64, u32)> = None;
        for &i in &self.round {
            let b = self.queues[i as usize].q.frame_bytes(self.overhead);
            if best.is_none_or(|(bb, _)| b > bb) {
                best = Some((b, i));
            }
        }
        best.map(|(_, i)| i)
    }

    /// Takes queue `i` out of the round (it has become empty).
    fn retire(&mut self, i: u32) {
        let q = &mut self.queues[i as usize];
        q.active = false;
        q.in_turn = false;
        q.deficit = 0;
        if self.round.front() == Some(&i) {
            self.round.pop_front();
        } else if let Some(pos) = self.round.iter().position(|&x| x == i) {
            self.round.remove(pos);
        }
    }

    fn trace(&mut self, now: SimTime, out: &mut QdiscOut) {
        let v = self.round.len() as f64;
        if v != self.traced {
            self.traced = v;
            out.trace(now, 0, v);
        }
    }
}

impl Qdisc for Drr {
    fn enqueue(&mut self, pkt: Packet, now: SimTime, out: &mut QdiscOut) -> Verdict {
        let key = (pkt.flow, pkt.src, pkt.hash);
        let next = self.queues.len() as u32;
        let i = *self.index.entry(key).or_insert(next);
        if i == next {
            self.queues.push(DrrQueue {
                q: PktQueue::EMPTY,
                deficit: 0,
                in_turn: false,
                active: false,
            });
        }
        if self.queues[i as usize].q.len() >= self.flow_limit {
            return out.drop_arrival(&mut self.stats, pkt, DropReason::Overlimit);
        }
        self.stats.on_enqueue(&pkt);
        self.len += 1;
        self.bytes += pkt.size as u64;
        let q = &mut self.queues[i as usize];
        self.store.push_back(&mut q.q, pkt);
        if !q.active {
            q.active = true;
            q.deficit = 0;
            q.in_turn = false;
            self.round.push_back(i);
        }
        if self.len > self.limit {
            let v = self
                .longest()
                .expect("over the limit implies a queued packet");
            let p = self
                .store
                .pop_front(&mut self.queues[v as usize].q)
                .expect("longest queue is non-empty");
            self.len -= 1;
            self.bytes -= p.size as u64;
            out.drop_queued(&mut self.stats, p, DropReason::FatFlow);
            if self.queues[v as usize].q.is_empty() {
                self.retire(v);
            }
        }
        if out.tracing {
            self.trace(now, out);
        }
        Verdict::Enqueued
    }

    fn dequeue(&mut self, now: SimTime, out: &mut QdiscOut) -> Option<Packet> {
        let res = loop {
            let &i = self.round.front()?;
            let q = &mut self.queues[i as usize];
            if !q.in_turn {
                q.deficit += self.quantum;
                q.in_turn = true;
            }
            let head = *self
                .store
                .front(&q.q)
                .expect("queues in the round hold packets");
            let len = self.frame(&head);
            let q = &mut self.queues[i as usize];
            if len <= q.deficit {
                q.deficit -= len;
                let p = self.store.pop_front(&mut q.q).expect("head exists");
                self.len -= 1;
                self.bytes -= p.size as u64;
                if self.queues[i as usize].q.is_empty() {
                    self.retire(i);
                }
                break p;
            }
            // The head does not fit: the turn ends, the credit carries over.
            q.in_turn = false;
            self.round.pop_front();
            self.round.push_back(i);
        };
        self.stats.on_dequeue(&res);
        if out.tracing {
            self.trace(now, out);
        }
        Some(res)
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

    #[test]
    fn byte_fairness_with_unequal_packet_sizes() {
        // Two backlogged flows, 1500-byte and 500-byte packets (1514 and 514 frame
        // bytes). Each round credits both with one quantum (1514): at the start of every
        // round their frame bytes differ by the small flow's carried-over credit (< 514),
        // and at any point by at most one quantum plus one packet (DRR's bound).
        let mut q = Drr::new(
            &DrrConfig {
                limit: 10_000,
                flow_limit: 10_000,
                quantum: None,
            },
            ctx(10_000_000),
        );
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        for i in 0..400 {
            q.enqueue(pkt(1, 1500, i, t), t, &mut out);
        }
        for i in 0..1200 {
            q.enqueue(pkt(2, 500, 1000 + i, t), t, &mut out);
        }
        let mut bytes = [0u64; 2];
        let mut pkts = [0u64; 2];
        for n in 0..1000 {
            let p = q.dequeue(t, &mut out).unwrap();
            let k = (p.flow == 2) as usize;
            if k == 0 {
                // A new round starts with the big flow's packet.
                assert!(
                    bytes[0].abs_diff(bytes[1]) < 514,
                    "round start after {n}: {bytes:?}"
                );
            }
            bytes[k] += p.size as u64 + 14;
            pkts[k] += 1;
            assert!(
                bytes[0].abs_diff(bytes[1]) <= 1514 + 514,
                "after {n}: {bytes:?}"
            );
        }
        // Per round: one 1514-byte frame vs two 514-byte frames (a third would need
        // 1542 > 1514), with the 486-byte remainder carrying over: 3 small packets every
        // few rounds. Packet counts are ≈ 1 : 2.95.
        let ratio = pkts[1] as f64 / pkts[0] as f64;
        assert!((ratio - 1514.0 / 514.0).abs() < 0.05, "{pkts:?}");
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
    }

    #[test]
    fn exact_classification_never_merges_flows() {
        // 500 flows share one queue in no case: each gets its own, and each sends one
        // packet per round.
        let mut q = Drr::new(
            &DrrConfig {
                limit: 5000,
                flow_limit: 100,
                quantum: None,
            },
            ctx(10_000_000),
        );
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        for r in 0..3u64 {
            for f in 0..500u32 {
                q.enqueue(pkt(f, 1500, r * 1000 + f as u64, t), t, &mut out);
            }
        }
        assert_eq!(q.queues_created(), 500);
        let first: Vec<u32> = (0..500)
            .map(|_| q.dequeue(t, &mut out).unwrap().flow)
            .collect();
        assert_eq!(first, (0..500).collect::<Vec<_>>());
        // Same flow id from a different source (the reverse direction) is another queue.
        let mut p = pkt(7, 100, 9999, t);
        p.src = 1;
        q.enqueue(p, t, &mut out);
        assert_eq!(q.queues_created(), 501);
    }

    #[test]
    fn flow_limit_and_total_limit() {
        let mut q = Drr::new(
            &DrrConfig {
                limit: 10,
                flow_limit: 6,
                quantum: None,
            },
            ctx(10_000_000),
        );
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        for i in 0..7 {
            let v = q.enqueue(pkt(1, 1000, i, t), t, &mut out);
            assert_eq!(v == Verdict::Enqueued, i < 6, "{i}");
        }
        assert_eq!(
            out.drops.last().map(|d| (d.0.uid, d.1)),
            Some((6, DropReason::Overlimit))
        );
        for i in 0..4 {
            q.enqueue(pkt(2, 500, 10 + i, t), t, &mut out);
        }
        assert_eq!(q.len(), 10);
        // The 11th packet overflows the qdisc: the longest queue (flow 1) loses its head.
        q.enqueue(pkt(2, 500, 14, t), t, &mut out);
        assert_eq!(
            out.drops.last().map(|d| (d.0.uid, d.1)),
            Some((0, DropReason::FatFlow))
        );
        assert_eq!(q.len(), 10);
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
    }

    #[test]
    fn new_flow_joins_end_of_round_and_empty_flow_forfeits_credit() {
        let mut q = Drr::new(&DrrConfig::default(), ctx(10_000_000));
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        // Flow 1 sends a 100-byte packet and leaves with 1400 bytes of unused credit.
        q.enqueue(pkt(1, 100, 0, t), t, &mut out);
        assert_eq!(q.dequeue(t, &mut out).unwrap().uid, 0);
        assert_eq!(q.active_flows(), 0);
        // Back with three full-size packets: no credit was kept, one packet per round.
        for i in 1..4 {
            q.enqueue(pkt(1, 1500, i, t), t, &mut out);
        }
        q.enqueue(pkt(2, 1500, 10, t), t, &mut out);
        let order: Vec<u64> = (0..4)
            .map(|_| q.dequeue(t, &mut out).unwrap().uid)
            .collect();
        assert_eq!(order, vec![1, 10, 2, 3]);
    }
}
