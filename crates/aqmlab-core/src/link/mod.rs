//! Links: a qdisc feeding a small device queue feeding a serialiser, then propagation.
//!
//! ```text
//!   enqueue ─► [ qdisc ] ─dequeue─► [ device queue (BQL-like, default 1 pkt) ] ─► serialise ─► propagate ─► far end
//! ```
//! - The device queue counts the packet being serialised, so with the default of one
//!   packet the qdisc hands over a packet exactly when the wire goes idle, like a Linux
//!   interface with a byte queue limit of one packet and no offloads. A deeper device
//!   queue holds packets the qdisc can no longer drop or reorder (a driver ring).
//! - Serialisation time counts `size + overhead` bytes (framing the qdisc does not see).
//! - Propagation delay is constant, so packets on the wire stay in order and one pending
//!   `Arrive` event per link suffices.
//! - An optional loss model drops packets on the wire (Bernoulli per packet, with
//!   scheduled periods of different loss such as outages).

use crate::event::{Event, EventQueue};
use crate::metrics::{Bins, Histogram};
use crate::packet::{Ecn, LinkId, NodeId, Packet};
use crate::qdisc::{AnyQdisc, DropReason, Qdisc, QdiscOut};
use crate::rng::Rng;
use crate::time::{Rate, SimDuration, SimTime};
use std::collections::VecDeque;

/// A period with its own loss probability (an outage is `loss = 1`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct LossPeriod {
    pub start: SimTime,
    pub stop: SimTime,
    pub loss: f64,
}

/// Per-link measurements.
#[derive(Clone, Debug)]
pub struct LinkStats {
    /// Statistics exclude what happens before this instant.
    pub warmup: SimTime,
    pub tx_pkts: u64,
    /// IP bytes transmitted (after warm-up).
    pub tx_bytes: u64,
    /// Wire time spent transmitting after warm-up.
    pub busy: SimDuration,
    /// Qdisc sojourn times in ns (after warm-up).
    pub sojourn: Histogram,
    pub wire_drops: u64,
    pub ce_marked_seen: u64,
    pub bin_tx_bytes: Bins,
    pub bin_sojourn_sum: Bins,
    pub bin_sojourn_n: Bins,
    pub bin_drops: Bins,
    pub bin_backlog_max: Bins,
}

impl LinkStats {
    fn new(warmup: SimTime, bin: SimDuration) -> Self {
        LinkStats {
            warmup,
            tx_pkts: 0,
            tx_bytes: 0,
            busy: SimDuration::ZERO,
            sojourn: Histogram::new(),
            wire_drops: 0,
            ce_marked_seen: 0,
            bin_tx_bytes: Bins::new(bin),
            bin_sojourn_sum: Bins::new(bin),
            bin_sojourn_n: Bins::new(bin),
            bin_drops: Bins::new(bin),
            bin_backlog_max: Bins::new(bin),
        }
    }
}

/// Static description of a link, resolved from the scenario.
#[derive(Clone, Debug)]
pub struct LinkParams {
    pub name: String,
    pub from: NodeId,
    pub to: NodeId,
    pub rate: Rate,
    pub delay: SimDuration,
    pub overhead: u32,
    pub mtu: u32,
    pub device_queue: u32,
    pub loss: f64,
    pub loss_periods: Vec<LossPeriod>,
    /// Whether this link's qdisc records state traces.
    pub trace: bool,
}

/// A unidirectional link with its egress qdisc.
#[derive(Debug)]
pub struct Link {
    pub id: LinkId,
    pub p: LinkParams,
    pub qdisc: AnyQdisc,
    /// Reused side-output buffer of the qdisc; drained by the simulator after each call.
    pub out: QdiscOut,
    device: VecDeque<Packet>,
    busy: bool,
    wire: VecDeque<(SimTime, Packet)>,
    rng: Rng,
    pub stats: LinkStats,
}

impl Link {
    pub fn new(
        id: LinkId,
        p: LinkParams,
        qdisc: AnyQdisc,
        rng: Rng,
        warmup: SimTime,
        bin: SimDuration,
    ) -> Self {
        let trace = p.trace;
        Link {
            id,
            device: VecDeque::with_capacity(p.device_queue as usize + 1),
            busy: false,
            wire: VecDeque::with_capacity(64),
            qdisc,
            out: QdiscOut::new(trace),
            rng,
            stats: LinkStats::new(warmup, bin),
            p,
        }
    }

    /// Packets anywhere on this link: qdisc, device queue, on the wire.
    pub fn packets_inside(&self) -> u64 {
        (self.qdisc.len() + self.device.len() + self.wire.len()) as u64
    }

    /// A packet arrives for transmission on this link. Any drops are left in `self.out`.
    #[inline]
    pub fn enqueue(&mut self, mut pkt: Packet, now: SimTime, ev: &mut EventQueue) {
        pkt.enqueued_at = now;
        let _ = self.qdisc.enqueue(pkt, now, &mut self.out);
        let backlog = self.qdisc.len() as f64;
        self.stats.bin_backlog_max.max(now, backlog);
        self.kick(now, ev);
    }

    /// Moves packets from the qdisc to the device queue while it has room, and starts the
    /// serialiser if it is idle.
    #[inline]
    fn kick(&mut self, now: SimTime, ev: &mut EventQueue) {
        while self.device.len() < self.p.device_queue as usize {
            match self.qdisc.dequeue(now, &mut self.out) {
                Some(p) => {
                    let soj = now.saturating_since(p.enqueued_at).as_nanos();
                    if now >= self.stats.warmup {
                        self.stats.sojourn.record(soj);
                    }
                    self.stats.bin_sojourn_sum.add(now, soj as f64);
                    self.stats.bin_sojourn_n.add(now, 1.0);
                    if p.ecn == Ecn::Ce {
                        self.stats.ce_marked_seen += 1;
                    }
                    self.device.push_back(p);
                }
                None => break,
            }
        }
        if !self.busy {
            if let Some(head) = self.device.front() {
                let tx = self.p.rate.tx_time(head.size + self.p.overhead);
                if now >= self.stats.warmup {
                    self.stats.busy += tx;
                }
                self.busy = true;
                ev.push(now + tx, Event::TxDone(self.id));
            }
        }
    }

    /// The serialiser finished the head packet: put it on the wire (or lose it).
    pub fn tx_done(&mut self, now: SimTime, ev: &mut EventQueue) {
        self.busy = false;
        let pkt = self
            .device
            .pop_front()
            .expect("TxDone with an empty device queue");
        if now >= self.stats.warmup {
            self.stats.tx_pkts += 1;
            self.stats.tx_bytes += pkt.size as u64;
        }
        self.stats.bin_tx_bytes.add(now, pkt.size as f64);
        let loss = self.loss_at(now);
        if loss > 0.0 && self.rng.bernoulli(loss) {
            self.stats.wire_drops += 1;
            self.out.drops.push((pkt, DropReason::Wire));
        } else {
            let at = now + self.p.delay;
            self.wire.push_back((at, pkt));
            if self.wire.len() == 1 {
                ev.push(at, Event::Arrive(self.id));
            }
        }
        self.kick(now, ev);
    }

    /// The oldest packet on the wire reaches the far end.
    pub fn arrive(&mut self, now: SimTime, ev: &mut EventQueue) -> Packet {
        let (t, pkt) = self
            .wire
            .pop_front()
            .expect("Arrive with nothing on the wire");
        debug_assert_eq!(t, now);
        if let Some(&(next, _)) = self.wire.front() {
            ev.push(next, Event::Arrive(self.id));
        }
        pkt
    }

    fn loss_at(&self, now: SimTime) -> f64 {
        for lp in &self.p.loss_periods {
            if now >= lp.start && now < lp.stop {
                return lp.loss;
            }
        }
        self.p.loss
    }

    /// Counts a drop (qdisc or wire) into the per-bin series; the simulator calls this
    /// once per packet it drains from `out.drops`.
    pub fn note_drop(&mut self, now: SimTime) {
        self.stats.bin_drops.add(now, 1.0);
    }
}
