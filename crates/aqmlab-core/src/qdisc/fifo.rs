//! Tail-drop FIFO: Linux `pfifo` (limit in packets) and `bfifo` (limit in bytes).
//!
//! Defaults: `limit = 1000` packets, Linux's default `txqueuelen`, which is what `pfifo`
//! takes when no limit is given. A byte limit admits a packet only if the backlog plus
//! the packet fits (`bfifo` semantics: `sch->qstats.backlog + skb->len <= limit`).

use super::{BuildCtx, DropReason, ParamError, Qdisc, QdiscOut, QdiscStats, Verdict};
use crate::packet::Packet;
use crate::time::SimTime;
use crate::units::Limit;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FifoConfig {
    /// Packets (`limit = 127`) or bytes (`limit = "250KB"`). Default 1000 packets.
    #[serde(default = "default_limit")]
    pub limit: Limit,
}

fn default_limit() -> Limit {
    Limit::Packets(1000)
}

impl Default for FifoConfig {
    fn default() -> Self {
        FifoConfig {
            limit: default_limit(),
        }
    }
}

impl FifoConfig {
    pub const PARAMS: &'static [super::ParamDoc] = &[super::ParamDoc {
        name: "limit",
        default: "1000",
        doc: "queue limit: an integer is packets (pfifo), a size such as \"250KB\" is bytes (bfifo); 1000 = Linux default txqueuelen",
    }];

    pub fn validate(&self, ctx: &BuildCtx) -> Result<(), ParamError> {
        if let Limit::Bytes(b) = self.limit {
            if b < ctx.mtu as u64 {
                return Err(ParamError::new(
                    "limit",
                    format!("{b}B"),
                    format!("at least one MTU ({} bytes) or a packet count", ctx.mtu),
                ));
            }
        }
        Ok(())
    }
}

/// Laid out in declaration order (`repr(C)`): the counters first, whose six per-packet
/// ones share a cache line of a `Link` with the `AnyQdisc` tag in front, so that a lazy
/// link's queue-free passage (`count_pass`) reads that one line (`Link`'s layout test
/// pins it).
#[derive(Debug)]
#[repr(C)]
pub struct Fifo {
    pub(crate) stats: QdiscStats,
    pub(crate) q: VecDeque<Packet>,
    pub(crate) limit: Limit,
    pub(crate) bytes: u64,
}

/// Whether an empty FIFO of `limit` takes a packet of `size` bytes (`pass_through`'s
/// test; a link that folds arrivals into its FIFO needs it of every packet it can get).
#[inline]
pub(crate) fn admits_when_empty(limit: Limit, size: u32) -> bool {
    match limit {
        Limit::Packets(n) => n > 0,
        Limit::Bytes(b) => size as u64 <= b,
    }
}

impl Fifo {
    /// Whether an empty FIFO takes a packet of any size (a packet limit, or a byte limit
    /// of at least `u32::MAX`).
    pub(crate) fn admits_any_when_empty(&self) -> bool {
        match self.limit {
            Limit::Packets(n) => n > 0,
            Limit::Bytes(b) => b >= u32::MAX as u64,
        }
    }

    /// `pass_through` of a packet the caller knows this FIFO takes (its queue is empty,
    /// and it admits any packet when empty: `admits_any_when_empty`): counts the enqueue
    /// and the dequeue, without reading the queue or the limit.
    #[inline(always)]
    pub(crate) fn count_pass(&mut self, size: u32) {
        debug_assert!(self.q.is_empty() && admits_when_empty(self.limit, size));
        self.stats.on_pass(size);
    }

    pub fn new(cfg: &FifoConfig, _ctx: BuildCtx) -> Self {
        Fifo {
            limit: cfg.limit,
            // empty, grows on demand (a ring buffer touches every slot it has as it
            // cycles: reserving the limit made 10,000 links reserve ~7 GB, and even 64
            // slots per link are most of a many-flow run's memory)
            q: VecDeque::new(),
            bytes: 0,
            stats: QdiscStats::default(),
        }
    }
}

impl Qdisc for Fifo {
    /// An arrival that finds the queue empty and the link free to send it at once: counts
    /// the enqueue and the dequeue the link would make right after, without moving the
    /// packet through the queue. False (nothing done) unless the queue is empty and the
    /// packet fits.
    #[inline]
    fn pass_through(&mut self, size: u32, _now: SimTime) -> bool {
        if !self.q.is_empty() {
            return false;
        }
        if !admits_when_empty(self.limit, size) {
            return false;
        }
        self.count_pass(size);
        true
    }

    fn enqueue(&mut self, pkt: Packet, _now: SimTime, out: &mut QdiscOut) -> Verdict {
        let full = match self.limit {
            Limit::Packets(n) => self.q.len() >= n as usize,
            Limit::Bytes(b) => self.bytes + pkt.size as u64 > b,
        };
        if full {
            return out.drop_arrival(&mut self.stats, pkt, DropReason::Overlimit);
        }
        self.stats.on_enqueue(&pkt);
        self.bytes += pkt.size as u64;
        self.q.push_back(pkt);
        Verdict::Enqueued
    }

    /// An empty FIFO's dequeue returns `None` and touches nothing.
    fn empty_dequeue_is_noop(&self) -> bool {
        true
    }

    fn dequeue(&mut self, _now: SimTime, _out: &mut QdiscOut) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.size as u64;
        self.stats.on_dequeue(&p);
        Some(p)
    }

    fn len(&self) -> usize {
        self.q.len()
    }
    fn backlog_bytes(&self) -> u64 {
        self.bytes
    }
    fn stats(&self) -> &QdiscStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{ctx, pkt};
    use super::*;

    #[test]
    fn packet_limit_tail_drops() {
        let mut q = Fifo::new(
            &FifoConfig {
                limit: Limit::Packets(3),
            },
            ctx(10_000_000),
        );
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        for i in 0..5 {
            let v = q.enqueue(pkt(1, 1000, i, t), t, &mut out);
            assert_eq!(v == Verdict::Enqueued, i < 3);
        }
        assert_eq!(out.drops.len(), 2);
        assert_eq!(out.drops[0].0.uid, 3);
        assert_eq!(out.drops[0].1, DropReason::Overlimit);
        assert_eq!(q.dequeue(t, &mut out).unwrap().uid, 0);
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
        assert_eq!(q.backlog_bytes(), 2000);
    }

    #[test]
    fn byte_limit_admits_only_what_fits() {
        let mut q = Fifo::new(
            &FifoConfig {
                limit: Limit::Bytes(2500),
            },
            ctx(10_000_000),
        );
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        assert_eq!(
            q.enqueue(pkt(1, 1500, 0, t), t, &mut out),
            Verdict::Enqueued
        );
        assert_eq!(
            q.enqueue(pkt(1, 1500, 1, t), t, &mut out),
            Verdict::Dropped(DropReason::Overlimit)
        );
        assert_eq!(
            q.enqueue(pkt(1, 1000, 2, t), t, &mut out),
            Verdict::Enqueued
        );
        assert_eq!(q.backlog_bytes(), 2500);
        q.stats().check(2, 2500).unwrap();
    }
}
