//! Links: a qdisc feeding a lower layer, then propagation.
//!
//! ```text
//!   enqueue ─► [ qdisc ] ─dequeue─► lower layer ─► propagate ─► far end (next hop)
//! ```
//! The lower layer is one of ([`Lower`]):
//! - **wire** (the plain link, and the fast path): a small device queue (BQL-like,
//!   default 1 packet) and a serialiser at the link rate.
//!   - The device queue counts the packet being serialised, so with the default of one
//!     packet the qdisc hands over a packet exactly when the wire goes idle, like a Linux
//!     interface with a byte queue limit of one packet and no offloads. A deeper device
//!     queue holds packets the qdisc can no longer drop or reorder (a driver ring).
//!   - Serialisation time counts `size + overhead` bytes (framing the qdisc does not see).
//! - **shaper** ([`shaper`]): a tbf/htb token bucket between the qdisc and the device
//!   queue, so a faster physical link is shaped to a service rate and the queue builds
//!   in the qdisc.
//! - **docsis** ([`docsis`]): a CMTS downstream: per-cable-modem service-flow regulators
//!   in front of the qdisc, a bonding group of parallel channels behind it.
//! - **wifi** ([`wifi`]): an 802.11n interface: driver and hardware queues below the qdisc,
//!   A-MPDU aggregation, retransmissions, and a medium shared with the other interfaces
//!   of its BSS.
//!
//! Common rules:
//! - Propagation delay is constant, so packets on the wire stay in order and one pending
//!   `Arrive` event per link suffices. An end host's egress link may add host processing
//!   jitter ([`HostJitter`]), which never lets a packet overtake the one ahead of it.
//! - A link may have several far ends (`LinkParams::peers`: the CMTS downstream channel,
//!   a WiFi access point); the next hop of a packet is then looked up by its destination
//!   in a table built from the routes, and its arrivals are `LinkTimer { kind: ARRIVE }`
//!   events (`Event::Arrive` stays the plain far-end case of the hot path).
//! - Lower layers wake themselves with `Event::LinkTimer { link, kind }`; `kind` carries
//!   a [`timer`] tag and an index.
//! - An optional loss model drops packets on the wire (Bernoulli per packet, with
//!   scheduled periods of different loss such as outages); the WiFi model has its own
//!   frame error rate instead.
//! - Every packet a link holds is counted by [`Link::packets_inside`], which packet
//!   conservation checks rely on.

pub mod docsis;
pub mod shaper;
pub mod token_bucket;
pub mod wifi;
pub mod wifi_budget;

use crate::event::{Event, EventQueue};
use crate::metrics::{Histogram, LinkField, LinkSeries};
use crate::packet::{Ecn, LinkId, NodeId, Packet};
use crate::qdisc::{AnyQdisc, DropReason, Qdisc, QdiscOut};
use crate::rng::Rng;
use crate::time::{Rate, SimDuration, SimTime};
use std::collections::VecDeque;

pub use docsis::{DocsisDown, DocsisParams, ServiceFlowParams};
pub use shaper::{Shaper, ShaperConfig, ShaperKind, ShaperParams};
pub use wifi::{MediumParams, WifiMedium, WifiPort, WifiPortParams};

/// `Event::LinkTimer` kinds: the top four bits are a tag, the rest an index.
pub mod timer {
    /// The shaper's token wake-up.
    pub const SHAPER: u32 = 1 << 28;
    /// DOCSIS regulator wake-up; index = cable modem (peer) index.
    pub const REGULATOR: u32 = 2 << 28;
    /// DOCSIS channel finished a packet; index = channel.
    pub const CHANNEL: u32 = 3 << 28;
    /// WiFi medium: a backoff ends (the link is the medium's anchor).
    pub const MEDIUM_ACCESS: u32 = 4 << 28;
    /// WiFi medium: the PPDU(s) on air end.
    pub const MEDIUM_END: u32 = 5 << 28;
    /// WiFi medium: an interface has a new aggregate ready (it joins the contention).
    pub const MEDIUM_POKE: u32 = 6 << 28;
    /// A multi-peer link's oldest packet on the wire reaches its next hop (point-to-point
    /// links use `Event::Arrive`, whose far end needs no lookup).
    pub const ARRIVE: u32 = 7 << 28;
    /// A throttling qdisc (CAKE's shaper) will release a packet now (`Qdisc::next_ready`).
    pub const QDISC: u32 = 8 << 28;
    pub const TAG: u32 = 0xF << 28;
    pub const INDEX: u32 = !TAG;
}

/// A period with its own loss probability (an outage is `loss = 1`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct LossPeriod {
    pub start: SimTime,
    pub stop: SimTime,
    pub loss: f64,
}

/// Per-link measurements. Laid out in declaration order (`repr(C)`): the fields a packet
/// crossing a lazy wire reads or counts into (`warmup` .. `packet_windows`) fill one
/// cache line, the series' state follows.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct LinkStats {
    /// Statistics exclude what happens before this instant.
    pub warmup: SimTime,
    /// Transmitter time used after warm-up (for a bonding group, divided by the number
    /// of channels; for WiFi, the airtime of this interface's PPDUs incl. SIFS + block ack).
    pub busy: SimDuration,
    pub tx_pkts: u64,
    /// IP bytes transmitted (after warm-up); for WiFi, bytes acknowledged.
    pub tx_bytes: u64,
    pub ce_marked_seen: u64,
    /// `run.packet_trace` windows (empty: no per-packet log).
    pub packet_windows: Vec<(SimTime, SimTime)>,
    /// Per-bin series: bytes sent, sojourn sum and count, drops, largest backlog.
    pub series: LinkSeries,
    /// Qdisc sojourn times in ns (after warm-up).
    pub sojourn: Histogram,
    pub wire_drops: u64,
    /// Drops below the qdisc: DOCSIS regulator overflow, WiFi retry limit.
    pub lower_drops: u64,
    /// Per-packet log inside the windows: (time, PKT_SOJOURN, PKT_DROP or PKT_QLEN, value).
    pub packet_log: Vec<(SimTime, u8, f64)>,
}

impl LinkStats {
    pub(crate) fn new(warmup: SimTime, bin: SimDuration) -> Self {
        LinkStats {
            warmup,
            tx_pkts: 0,
            tx_bytes: 0,
            busy: SimDuration::ZERO,
            sojourn: Histogram::new(),
            wire_drops: 0,
            lower_drops: 0,
            ce_marked_seen: 0,
            series: LinkSeries::new(bin),
            packet_windows: Vec::new(),
            packet_log: Vec::new(),
        }
    }
}

/// The resolved lower layer of a link.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum LowerParams {
    #[default]
    Wire,
    Shaper(ShaperParams),
    Docsis(DocsisParams),
    Wifi(WifiPortParams),
}

impl LowerParams {
    pub fn kind_name(&self) -> &'static str {
        match self {
            LowerParams::Wire => "wire",
            LowerParams::Shaper(s) => match s.kind {
                ShaperKind::Htb => "htb",
                ShaperKind::Tbf => "tbf",
            },
            LowerParams::Docsis(_) => "docsis",
            LowerParams::Wifi(_) => "wifi",
        }
    }
}

/// Per-packet log codes.
pub const PKT_SOJOURN: u8 = 0;
pub const PKT_DROP: u8 = 1;
/// Queue length (packets in the qdisc) found by an arriving packet.
pub const PKT_QLEN: u8 = 2;

impl LinkStats {
    /// Appends to the per-packet log if `now` falls in a `run.packet_trace` window.
    #[cold]
    pub fn log_packet(&mut self, now: SimTime, what: u8, value: f64) {
        if self
            .packet_windows
            .iter()
            .any(|&(a, b)| now >= a && now < b)
        {
            self.packet_log.push((now, what, value));
        }
    }
}

/// Static description of a link, resolved from the scenario.
#[derive(Clone, Debug)]
pub struct LinkParams {
    pub name: String,
    pub from: NodeId,
    /// The far end; for a multi-peer link, its first peer.
    pub to: NodeId,
    /// All far ends of a multi-peer link (empty for a point-to-point link).
    pub peers: Vec<NodeId>,
    /// Physical rate (wire, shaper: the line; docsis: the bonding group; wifi: PHY rate).
    pub rate: Rate,
    pub delay: SimDuration,
    pub overhead: u32,
    pub mtu: u32,
    pub device_queue: u32,
    pub loss: f64,
    pub loss_periods: Vec<LossPeriod>,
    /// Whether this link's qdisc records state traces.
    pub trace: bool,
    /// GRO at the far end on packets from this link ([`Link::arrive_gro`]).
    pub gro: bool,
    pub lower: LowerParams,
}

impl LinkParams {
    /// A lossless point-to-point wire with a one-packet device queue: with a qdisc that
    /// does not throttle, the lazy wire (`Link::enqueue_lazy`).
    pub fn is_plain_wire(&self) -> bool {
        matches!(self.lower, LowerParams::Wire)
            && self.device_queue == 1
            && self.loss == 0.0
            && self.loss_periods.is_empty()
            && self.peers.is_empty()
    }

    /// Whether this link can hand its packets to the next link without an arrival event
    /// (see [`fold_arrivals`]): a point-to-point wire or shaper (the links that put
    /// packets on their wire through `Link::wire_started`) without GRO at the far end.
    pub fn can_feed_fold(&self) -> bool {
        self.peers.is_empty()
            && !self.gro
            && matches!(self.lower, LowerParams::Wire | LowerParams::Shaper(_))
    }

    /// Whether this link logs packets inside `run.packet_trace` windows: the measured
    /// queues (`trace`, the `bottleneck*` links, `docsis_down`).
    pub fn packet_traced(&self) -> bool {
        self.trace || self.name.starts_with("bottleneck") || self.name == "docsis_down"
    }

    /// The rate the qdisc drains at, as the qdisc should be told (`BuildCtx::rate`).
    pub fn qdisc_rate(&self) -> Rate {
        match &self.lower {
            LowerParams::Shaper(s) => s.rate,
            _ => self.rate,
        }
    }
}

/// The lower layer of a link at run time. The wire comes first: it is the hot path.
#[derive(Debug)]
pub enum Lower {
    Wire,
    Shaper(Box<Shaper>),
    Docsis(Box<DocsisDown>),
    Wifi(Box<WifiPort>),
}

impl Lower {
    fn new(p: &LowerParams) -> Lower {
        match p {
            LowerParams::Wire => Lower::Wire,
            LowerParams::Shaper(s) => Lower::Shaper(Box::new(Shaper::new(s.clone()))),
            LowerParams::Docsis(d) => Lower::Docsis(Box::new(DocsisDown::new(d.clone()))),
            LowerParams::Wifi(w) => Lower::Wifi(Box::new(WifiPort::new(w.clone()))),
        }
    }
}

/// The fields a packet's passage over a lazy wire reads and writes (`enqueue_lazy`,
/// `transmit_lazy`, `arrive`), in two cache lines of their own: in a `Link` (1.9 KiB,
/// its qdisc, statistics and parameters) they were spread over a dozen lines, and with
/// thousands of links most of a hop's cost was missing the cache on them. `rate`,
/// `delay`, `overhead`, `from` and `to` are copies of the link's parameters (`p`),
/// which never change after the link is built.
///
/// The per-bin series' current bin (`bin_*`) and the queue-free passages (`zero_soj`)
/// are recorded here too, and written to `LinkStats` when the bin changes and when a
/// run stops (`Link::settle`): each was one more cache line per hop (the bin in the
/// series' storage, the histogram's first bucket). So are the lazy wire's transmit
/// counters (`busy`, `tx_pkts`, `tx_bytes`: added to `LinkStats` when a run stops),
/// with copies of `LinkStats::warmup` and of whether the link logs packets: with them,
/// a packet crossing a lazy wire reads no line of `LinkStats` but the series' (when
/// its bin changes) and the sojourn histogram (when it waited). 160 bytes: the third
/// cache line of a `Link` holds the last 32 and the wire.
#[derive(Debug)]
#[repr(C)]
struct WireHot {
    rate: Rate,
    /// Lazy mode: the instant the serialiser finishes the packet it last started.
    busy_until: SimTime,
    delay: SimDuration,
    overhead: u32,
    from: NodeId,
    to: NodeId,
    id: LinkId,
    /// Lazy mode: IP size of the packet that ends at `busy_until` and is not yet counted
    /// in the transmit statistics (0: none). It is counted once its end has passed, so a
    /// transmission the run stops in the middle of is not counted, as in the eager model.
    uncounted: u32,
    /// Lazy mode: packets on the wire that `uncounted` counts (a GSO skb's segments).
    uncounted_segs: u16,
    /// Lazy serialiser (see [`Link::enqueue_lazy`]): a lossless point-to-point wire with a
    /// one-packet device queue. Such a link schedules no `TxDone` while its qdisc is empty.
    lazy: bool,
    /// Lazy mode: a `TxDone` is scheduled at `busy_until` (the qdisc had packets waiting).
    txdone_pending: bool,
    /// Lazy mode: the qdisc was empty when the last transmission started, so the eager
    /// model's `TxDone` at `busy_until` would have found it empty; that (state-changing,
    /// e.g. CoDel leaves its dropping state) empty dequeue is owed and runs, stamped
    /// `busy_until`, before the qdisc's next operation.
    idle_deq: bool,
    /// Whether that empty dequeue matters (`!Qdisc::empty_dequeue_is_noop`): for a FIFO
    /// it changes nothing, and the access links' FIFOs skip it.
    owes_idle_deq: bool,
    /// Host processing jitter is on (`Link::jitter`; off, applying it changes nothing).
    jitter: bool,
    /// GRO at the far end (`LinkParams::gro`).
    gro: bool,
    /// Some link out of the far end (a router) takes this link's packets without an
    /// arrival event of their own ([`fold_arrivals`]): a packet put on the empty wire
    /// sets `fold_owed` instead of pushing its `Arrive`.
    fold: bool,
    /// A packet went on the empty wire and its `Arrive` is not pushed yet: the caller
    /// runs [`fold_arrivals`] before anything else happens.
    fold_owed: bool,
    /// This link takes the packets of the one link that feeds it (`Link::fold_from`)
    /// without their arrival event at the router.
    fold_target: bool,
    /// Which fields of the cached bin were recorded (`1 << LinkField as u8`; 0: no bin
    /// is cached), and `BIN_FRESH`.
    bin_recorded: u8,
    /// The link logs packets (`LinkStats::packet_windows` is not empty).
    traced: bool,
    /// The qdisc is a FIFO that takes any packet when empty
    /// (`Fifo::admits_any_when_empty`): a queue-free passage needs only its counters,
    /// since a lazy wire's qdisc holds packets only while a `TxDone` is pending.
    fifo_any: bool,
    /// Sojourns of 0 ns after warm-up not yet in `LinkStats::sojourn`.
    zero_soj: u32,
    /// The cached bin's packets dequeued and largest backlog (`LinkBin` fields).
    bin_soj_n: u32,
    bin_backlog: u32,
    /// The cached bin's range `[bin_lo, bin_hi)` in ns (empty: none cached).
    bin_lo: u64,
    bin_hi: u64,
    /// The cached bin's bytes transmitted and sojourn sum (`LinkBin` fields).
    bin_tx: u64,
    bin_soj_sum: f64,
    /// `LinkStats::warmup`.
    warmup: SimTime,
    /// Lazy wire: transmitter time, packets and bytes counted here and not yet in
    /// `LinkStats` (`busy`, `tx_pkts`, `tx_bytes`).
    busy: SimDuration,
    tx_pkts: u64,
    tx_bytes: u64,
}

const _: () = assert!(std::mem::size_of::<WireHot>() == 160);

/// `WireHot::bin_recorded`: the cached bin started from zeros and is added to the
/// series on write-back (`WireHot::load_bin`).
const BIN_FRESH: u8 = 0x80;

/// The statistics records kept in `WireHot` (the lazy wire's, and the shaped link's:
/// its `rate`..`gro` fields serve the wire only, the bin cache and the zero sojourns any
/// link whose every transmit, sojourn and backlog record goes through them). The
/// records are those of `note_dequeue` / `LinkSeries`, made into the cached bin and
/// written to `stats` when the bin changes and when a run stops (`Link::settle`).
impl WireHot {
    /// `note_dequeue` with the series' bin and the zero sojourns kept here.
    #[inline(always)]
    fn note_dequeue(
        &mut self,
        stats: &mut LinkStats,
        enqueued_at: SimTime,
        ecn: Ecn,
        now: SimTime,
    ) {
        let soj = now.saturating_since(enqueued_at).as_nanos();
        if now >= self.warmup {
            if soj == 0 {
                self.zero_soj += 1;
                if self.zero_soj == u32::MAX {
                    self.flush_zero_soj(stats);
                }
            } else {
                stats.sojourn.record(soj);
            }
        }
        self.bin(stats, now, LinkField::Sojourn);
        self.bin_soj_sum += soj as f64;
        self.bin_soj_n += 1;
        if self.traced {
            stats.log_packet(now, PKT_SOJOURN, soj as f64 * 1e-9);
        }
        if ecn == Ecn::Ce {
            stats.ce_marked_seen += 1;
        }
    }

    /// `LinkSeries::backlog` into the cached bin.
    #[inline(always)]
    fn backlog(&mut self, stats: &mut LinkStats, t: SimTime, packets: usize) {
        self.bin(stats, t, LinkField::BacklogMax);
        let n = u32::try_from(packets).unwrap_or(u32::MAX);
        if n > self.bin_backlog {
            self.bin_backlog = n;
        }
    }

    /// `LinkSeries::tx` into the cached bin.
    #[inline(always)]
    fn tx(&mut self, stats: &mut LinkStats, t: SimTime, bytes: u32) {
        self.bin(stats, t, LinkField::TxBytes);
        self.bin_tx += bytes as u64;
    }

    /// Makes the cached bin the one holding `t` and marks `field` recorded.
    #[inline(always)]
    fn bin(&mut self, stats: &mut LinkStats, t: SimTime, field: LinkField) {
        let tn = t.as_nanos();
        if !(tn >= self.bin_lo && tn < self.bin_hi) {
            self.load_bin(stats, t);
        }
        self.bin_recorded |= 1 << field as u8;
    }

    /// Writes the cached bin back and caches the one holding `t` (a write-back cache:
    /// the bin's values are loaded, so every record adds to the same running values in
    /// the same order as recording straight into the series).
    ///
    /// Moving on from a cached bin to a later one (time moved on: the common case), the
    /// new bin starts from zeros without being looked up in the series (`BIN_FRESH`):
    /// it is added to the series' bin on write-back (`LinkSeries::merge_bin`), which
    /// then holds at most drops and late transmissions recorded straight into it. On a
    /// link that sends a packet every few bins, this leaves one visit to the series'
    /// storage per bin instead of two.
    #[inline(never)]
    fn load_bin(&mut self, stats: &mut LinkStats, t: SimTime) {
        let tn = t.as_nanos();
        if self.bin_recorded & !BIN_FRESH != 0 && tn >= self.bin_hi && self.bin_hi < u64::MAX {
            // (`bin_hi - bin_lo` is the series' width unless `bin_hi` saturated)
            let width = self.bin_hi - self.bin_lo;
            self.store_bin(stats);
            self.bin_lo = tn / width * width;
            self.bin_hi = self.bin_lo.saturating_add(width);
            self.bin_tx = 0;
            self.bin_soj_sum = 0.0;
            self.bin_soj_n = 0;
            self.bin_backlog = 0;
            self.bin_recorded = BIN_FRESH;
            return;
        }
        self.store_bin(stats);
        let (b, lo, hi) = stats.series.bin_mut(t, 0);
        self.bin_tx = b.tx_bytes;
        self.bin_soj_sum = b.sojourn_sum;
        self.bin_soj_n = b.sojourn_n;
        self.bin_backlog = b.backlog_max;
        self.bin_lo = lo;
        self.bin_hi = hi;
    }

    /// Writes the cached bin (if any) back to the series and drops it from the cache.
    fn store_bin(&mut self, stats: &mut LinkStats) {
        let recorded = self.bin_recorded & !BIN_FRESH;
        if self.bin_recorded & BIN_FRESH != 0 {
            if recorded != 0 {
                stats.series.merge_bin(
                    self.bin_lo,
                    self.bin_tx,
                    self.bin_soj_sum,
                    self.bin_soj_n,
                    self.bin_backlog,
                    recorded,
                );
            }
        } else if recorded != 0 {
            let t = SimTime::from_nanos(self.bin_lo);
            let (b, _, _) = stats.series.bin_mut(t, recorded);
            b.tx_bytes = self.bin_tx;
            b.sojourn_sum = self.bin_soj_sum;
            b.sojourn_n = self.bin_soj_n;
            b.backlog_max = self.bin_backlog;
        }
        self.bin_recorded = 0;
        self.bin_lo = 0;
        self.bin_hi = 0;
    }

    #[cold]
    fn flush_zero_soj(&mut self, stats: &mut LinkStats) {
        stats.sojourn.record_zeros(self.zero_soj as u64);
        self.zero_soj = 0;
    }
}

/// A unidirectional link with its egress qdisc. Laid out in declaration order
/// (`repr(C, align(64))`): what a packet crossing a lazy wire touches comes first —
/// `hot` and the wire (three cache lines), then the qdisc's side output (which a lazy
/// wire's caller reads only when the qdisc may have dropped: `enqueue`'s result), the
/// statistics (the other lower layers' per-packet fields in one line, the series'
/// header in the next), the qdisc (a FIFO's queue-free passage reads two lines of it)
/// and the flags.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Link {
    /// The lazy wire's per-packet state and the link constants its path reads, together
    /// in two and a half cache lines (see [`WireHot`]).
    hot: WireHot,
    wire: VecDeque<(SimTime, Packet)>,
    /// Reused side-output buffer of the qdisc; drained by the simulator after each call.
    pub out: QdiscOut,
    pub id: LinkId,
    /// The only link whose packets this (lazy, FIFO) link forwards, if that link folds
    /// into it ([`fold_arrivals`]; `LinkId::MAX`: none).
    fold_from: LinkId,
    pub stats: LinkStats,
    /// (At a line boundary: a FIFO's queue and limit share the tag's line, its counters
    /// the next.)
    pub qdisc: AnyQdisc,
    pub lower: Lower,
    busy: bool,
    /// The qdisc may hold packets back (`Qdisc::throttles`): such a link asks it for
    /// `next_ready` after each operation and wakes itself with a `timer::QDISC`.
    throttles: bool,
    device: VecDeque<Packet>,
    rng: Rng,
    /// Host processing jitter (end hosts' egress links with noise on; else off).
    jitter: HostJitter,
    pub p: LinkParams,
    /// GRO: the packet (possibly merged segments) held for the next segment already on
    /// the wire.
    gro_held: Option<Packet>,
    /// Multi-peer links: destination node → index into `p.peers` (`u32::MAX` where
    /// this link is not the route). Empty for point-to-point links.
    peer_of: Vec<u32>,
    /// The instant of the pending `timer::QDISC` wake-up, if any.
    wake_at: Option<SimTime>,
}

/// Records a packet leaving the qdisc (sojourn, CE seen). Takes the two fields, not
/// `&Packet`: borrowing the packet makes the compiler copy it on the hot path.
#[inline(always)]
pub(crate) fn note_dequeue(stats: &mut LinkStats, enqueued_at: SimTime, ecn: Ecn, now: SimTime) {
    let soj = now.saturating_since(enqueued_at).as_nanos();
    if now >= stats.warmup {
        stats.sojourn.record(soj);
    }
    stats.series.sojourn(now, soj);
    if !stats.packet_windows.is_empty() {
        stats.log_packet(now, PKT_SOJOURN, soj as f64 * 1e-9);
    }
    if ecn == Ecn::Ce {
        stats.ce_marked_seen += 1;
    }
}

/// `qdisc.dequeue` for the lower layers other than the wire, kept out of line so the
/// compiler still inlines the qdisc dispatch into the wire's `kick` (the hot path):
/// with more inlined call sites it stops inlining it anywhere, which costs a copy of
/// every packet.
#[inline(never)]
pub(crate) fn dequeue_cold(
    qdisc: &mut AnyQdisc,
    now: SimTime,
    out: &mut QdiscOut,
) -> Option<Packet> {
    qdisc.dequeue(now, out)
}

/// Hands a packet to the qdisc, stamping its enqueue time.
#[inline(always)]
pub(crate) fn to_qdisc(
    qdisc: &mut AnyQdisc,
    out: &mut QdiscOut,
    stats: &mut LinkStats,
    pkt: Packet,
    now: SimTime,
) {
    to_qdisc_recording(qdisc, out, stats, pkt, now, |stats, n| {
        stats.series.backlog(now, n)
    });
}

/// `to_qdisc` with the backlog after the enqueue recorded by `backlog` (the series
/// itself, or a link's cached bin: `WireHot::backlog`).
#[inline(always)]
fn to_qdisc_recording(
    qdisc: &mut AnyQdisc,
    out: &mut QdiscOut,
    stats: &mut LinkStats,
    mut pkt: Packet,
    now: SimTime,
    backlog: impl FnOnce(&mut LinkStats, usize),
) {
    pkt.enqueued_at = now;
    // Inside a packet-trace window: the queue length this arrival finds (packets in the
    // qdisc before it, whether it is then accepted or dropped), the arrival-sampled
    // queue-length distribution.
    let seen = (!stats.packet_windows.is_empty()).then(|| qdisc.len());
    let _ = qdisc.enqueue(pkt, now, out);
    backlog(stats, qdisc.len());
    if let Some(n) = seen {
        stats.log_packet(now, PKT_QLEN, n as f64);
    }
}

/// Peer index of destination `dst` on a link (0 on a point-to-point link).
#[inline]
pub(crate) fn peer_index(peer_of: &[u32], dst: NodeId) -> usize {
    if peer_of.is_empty() {
        0
    } else {
        let i = peer_of[dst as usize];
        debug_assert!(
            i != u32::MAX,
            "packet for node {dst} on a link that does not lead there"
        );
        i as usize
    }
}

/// TCP Small Queues: a GSO sender's skb (or segment) `pkt` left the first link of its
/// host, `from`, at `at` (or was dropped there): its bytes are released to the socket
/// (Linux `tcp_wfree`). Packets of senders with GSO off (`gso_segs` 0) and packets at any
/// later link cost one comparison.
#[inline(always)]
pub(crate) fn tx_complete(from: NodeId, pkt: &Packet, at: SimTime, ev: &mut EventQueue) {
    if pkt.gso_segs != 0 && pkt.src == from {
        push_tx_complete(pkt, at, ev);
    }
}

#[inline(never)]
fn push_tx_complete(pkt: &Packet, at: SimTime, ev: &mut EventQueue) {
    let conn = ((pkt.seq as u32) << 1) | (pkt.src > pkt.dst) as u32;
    ev.push(
        at,
        Event::TxComplete {
            flow: pkt.flow,
            conn,
            bytes: pkt.size,
        },
    );
}

/// GRO: whether `p` can join the held packet `h` (see [`Link::arrive_gro`]).
fn gro_joins(h: &Packet, p: &Packet) -> bool {
    use crate::packet::{tcp_flags, PacketKind};
    let n = h.segs();
    let (ht, pt) = (&h.tcp, &p.tcp);
    h.kind == PacketKind::Tcp
        && p.kind == PacketKind::Tcp
        && p.gso_segs <= 1
        && n < 64
        && h.flow == p.flow
        && h.src == p.src
        && h.seq == p.seq
        && ht.len > 0
        && ht.len.is_multiple_of(n)
        && pt.len == ht.len / n
        && p.size - pt.len == (h.size - ht.len) / n
        && h.size + p.size < 65_536
        && pt.seq == ht.seq + ht.len as u64
        && pt.ack == ht.ack
        && pt.wnd == ht.wnd
        && pt.flags == ht.flags
        && pt.flags & (tcp_flags::CWR | tcp_flags::FIN | tcp_flags::SYN | tcp_flags::RST) == 0
        && ht.n_sack == 0
        && pt.n_sack == 0
        && h.ecn == p.ecn
        && ht.ts_val.as_nanos() / 1_000_000 == pt.ts_val.as_nanos() / 1_000_000
}

/// A packet finished its serialisation: count it, then the wire loses or carries it.
/// (`Link::tx_done` has the same steps written out.) Returns true instead of pushing
/// the arrival event when `inline` allows it and that event would be the very next one
/// (see [`DocsisDown::owe_arrival`]): the caller then owes the arrival at once.
#[allow(clippy::too_many_arguments)]
#[inline]
fn carry(
    p: &LinkParams,
    stats: &mut LinkStats,
    rng: &mut Rng,
    wire: &mut VecDeque<(SimTime, Packet)>,
    jitter: &mut HostJitter,
    out: &mut QdiscOut,
    id: LinkId,
    pkt: Packet,
    now: SimTime,
    ev: &mut EventQueue,
    inline: bool,
) -> bool {
    if now >= stats.warmup {
        stats.tx_pkts += 1;
        stats.tx_bytes += pkt.size as u64;
    }
    stats.series.tx(now, pkt.size);
    let loss = loss_at(p, now);
    if loss > 0.0 && rng.bernoulli(loss) {
        stats.wire_drops += 1;
        out.drops.push((pkt, DropReason::Wire));
    } else {
        let at = jitter.apply(now + p.delay);
        wire.push_back((at, pkt));
        if wire.len() == 1 {
            if docsis::arrival_owable(inline, at, now, ev) {
                return true;
            }
            ev.push(at, arrival_event(id, !p.peers.is_empty()));
        }
    }
    false
}

/// Host processing jitter on an end host's egress link (see
/// `crate::scenario::NoiseConfig`): each packet reaches the far end later by a uniform
/// draw in `[0, max]`, but never before the packet ahead of it on this link, so the
/// wire stays FIFO and no flow is reordered (netem delay jitter behind a FIFO). Off
/// (`max` = 0) it costs one branch per packet and draws nothing.
#[derive(Clone, Debug)]
pub struct HostJitter {
    max_ns: u64,
    rng: Rng,
    last: SimTime,
}

impl HostJitter {
    /// No jitter.
    pub fn off() -> Self {
        HostJitter {
            max_ns: 0,
            rng: Rng::default(),
            last: SimTime::ZERO,
        }
    }
    /// Jitter uniform in `[0, max]` (whole nanoseconds) from `rng`.
    pub fn new(max: SimDuration, rng: Rng) -> Self {
        HostJitter {
            max_ns: max.as_nanos(),
            rng,
            last: SimTime::ZERO,
        }
    }
    /// The (jittered, order-preserving) arrival instant of a packet due at `at`.
    #[inline(always)]
    pub fn apply(&mut self, at: SimTime) -> SimTime {
        if self.max_ns == 0 {
            return at;
        }
        let t = (at + SimDuration::from_nanos(self.rng.below(self.max_ns + 1))).max(self.last);
        self.last = t;
        t
    }
}

/// The event that delivers a link's next packet: `Arrive` for a point-to-point link,
/// `LinkTimer { ARRIVE }` for a multi-peer link.
#[inline]
pub(crate) fn arrival_event(link: LinkId, multi_peer: bool) -> Event {
    if multi_peer {
        Event::LinkTimer {
            link,
            kind: timer::ARRIVE,
        }
    } else {
        Event::Arrive(link)
    }
}

/// **Folded arrivals.** A router hands a packet arriving on link `a` to the next link at
/// the instant it arrives. When that link is fed by `a` alone (on every flow's path,
/// both ways, the hop before it is `a`: `Plan::find_fold_feeders`), is a lazy FIFO wire, and
/// will find the packet with its serialiser free and its queue empty, what happens at
/// the router is known as soon as the packet goes on `a`'s wire: nothing else can reach
/// the next link before it. The packet is then handed over at once, stamped with its
/// arrival instant at the router, and crosses both hops with one event (the next
/// link's `Arrive`) instead of two — in a dumbbell, the hop from the receiving router to
/// each host, for data and ACKs alike. A packet that would find the next link busy, and
/// any packet behind one still on `a`'s wire, takes the ordinary path (an `Arrive` on
/// `a`). Only packets due at the router by `horizon` (the end of the run) are folded, so
/// the run's statistics hold the same packets as with the ordinary path. The packets,
/// their instants and every statistic are those of the ordinary path; events at one and
/// the same nanosecond may run in another order (the far arrival is scheduled earlier,
/// so it takes an earlier insertion number).
///
/// `next_hop(node, dst)` is the routes' outgoing link (`Routes::next`, passed in so that
/// the link layer does not depend on the routing tables). Called when a packet went on
/// `a`'s empty wire, and when one that took the ordinary path has been handed over with
/// others behind it (`Link::fold_owed`), before any other event; folds on along a chain
/// of such links.
#[inline(never)]
pub(crate) fn fold_arrivals<R: Fn(NodeId, NodeId) -> Option<u32>>(
    links: &mut [Link],
    a: usize,
    next_hop: &R,
    horizon: SimTime,
    ev: &mut EventQueue,
) {
    links[a].hot.fold_owed = false;
    let router = links[a].hot.to;
    while let Some(&(t, ref pkt)) = links[a].wire.front() {
        if t > horizon || pkt.dst == router {
            break;
        }
        let Some(b) = next_hop(router, pkt.dst) else {
            break;
        };
        let b = b as usize;
        if !links[b].takes_folded(a as LinkId, t) {
            break;
        }
        let (t, pkt) = links[a].wire.pop_front().expect("the front packet");
        links[b].take_folded(pkt, t, ev);
        debug_assert!(links[b].out.drops.is_empty(), "a folded packet was dropped");
        if links[b].hot.fold_owed {
            fold_arrivals(links, b, next_hop, horizon, ev);
        }
    }
    if let Some(&(t, _)) = links[a].wire.front() {
        ev.push(t, Event::Arrive(a as LinkId));
    }
}

#[inline]
fn loss_at(p: &LinkParams, now: SimTime) -> f64 {
    if p.loss_periods.is_empty() {
        return p.loss;
    }
    for lp in &p.loss_periods {
        if now >= lp.start && now < lp.stop {
            return lp.loss;
        }
    }
    p.loss
}

impl Link {
    pub fn new(
        id: LinkId,
        p: LinkParams,
        mut qdisc: AnyQdisc,
        rng: Rng,
        warmup: SimTime,
        bin: SimDuration,
    ) -> Self {
        qdisc.set_warmup(warmup);
        let trace = p.trace;
        let throttles = qdisc.throttles();
        let lazy = !throttles && p.is_plain_wire();
        let mut lower = Lower::new(&p.lower);
        if let Lower::Shaper(s) = &mut lower {
            // the lazy wake-up (see `shaper`): what a tbf wake-up does is known in
            // advance when it can only move the stash into an empty one-packet device
            // queue and nothing else (no throttling child to ask at that instant)
            if s.p.kind == ShaperKind::Tbf && p.device_queue == 1 && !throttles {
                s.set_lazy_wake();
            }
        }
        Link {
            id,
            device: VecDeque::with_capacity(p.device_queue as usize + 1),
            busy: false,
            hot: WireHot {
                rate: p.rate,
                busy_until: SimTime::ZERO,
                delay: p.delay,
                overhead: p.overhead,
                from: p.from,
                to: p.to,
                id,
                uncounted: 0,
                uncounted_segs: 0,
                lazy,
                txdone_pending: false,
                idle_deq: false,
                owes_idle_deq: !qdisc.empty_dequeue_is_noop(),
                jitter: false,
                gro: p.gro,
                fold: false,
                fold_owed: false,
                fold_target: false,
                bin_recorded: 0,
                zero_soj: 0,
                bin_soj_n: 0,
                bin_backlog: 0,
                bin_lo: 0,
                bin_hi: 0,
                bin_tx: 0,
                bin_soj_sum: 0.0,
                traced: false,
                fifo_any: matches!(&qdisc, AnyQdisc::Fifo(f) if f.admits_any_when_empty()),
                warmup,
                busy: SimDuration::ZERO,
                tx_pkts: 0,
                tx_bytes: 0,
            },
            wire: VecDeque::new(),
            qdisc,
            out: QdiscOut::new(trace),
            rng,
            jitter: HostJitter::off(),
            stats: LinkStats::new(warmup, bin),
            lower,
            peer_of: Vec::new(),
            gro_held: None,
            throttles,
            wake_at: None,
            fold_from: LinkId::MAX,
            p,
        }
    }

    /// A throttling qdisc that holds packets but releases none before `next_ready`: set a
    /// wake-up for that instant unless an earlier one is pending. (Cold: only CAKE with a
    /// `bandwidth` throttles.)
    #[cold]
    #[inline(never)]
    fn arm_qdisc_wake(&mut self, now: SimTime, ev: &mut EventQueue) {
        if self.qdisc.is_empty() {
            return;
        }
        let Some(t) = self.qdisc.next_ready() else {
            return;
        };
        if t <= now {
            return;
        }
        if let Some(w) = self.wake_at {
            if w > now && w <= t {
                return;
            }
        }
        self.wake_at = Some(t);
        ev.push(
            t,
            Event::LinkTimer {
                link: self.id,
                kind: timer::QDISC,
            },
        );
    }

    /// The `timer::QDISC` wake-up: pull from the qdisc into the lower layer again.
    #[cold]
    #[inline(never)]
    fn on_qdisc_wake(&mut self, now: SimTime, ev: &mut EventQueue) {
        if self.wake_at == Some(now) {
            self.wake_at = None;
        }
        if matches!(self.lower, Lower::Wire) {
            self.kick(now, ev);
        } else {
            let was_ready = self.wifi().map_or(0, |w| w.ready_mask());
            self.kick_lower(now, ev);
            if self.wifi().map_or(0, |w| w.ready_mask()) & !was_ready != 0 {
                ev.push(
                    now,
                    Event::LinkTimer {
                        link: self.id,
                        kind: timer::MEDIUM_POKE,
                    },
                );
            }
        }
        self.arm_qdisc_wake(now, ev);
    }

    /// The eager wire on a link that would be lazy (the tests compare the two).
    #[cfg(test)]
    pub(crate) fn set_eager(&mut self) {
        self.hot.lazy = false;
    }

    /// Gives this link host processing jitter (the simulator does it for end hosts'
    /// egress links when the run's noise is on).
    pub fn set_host_jitter(&mut self, j: HostJitter) {
        self.hot.jitter = j.max_ns > 0;
        self.jitter = j;
    }

    /// Installs the destination → peer table of a multi-peer link (from the routes).
    pub fn set_peer_table(&mut self, t: Vec<u32>) {
        self.peer_of = t;
    }

    /// The node a packet for `dst` reaches at the far end of this link. (Takes the
    /// destination, not `&Packet`: borrowing the packet here costs a copy of it in the
    /// event loop.)
    #[inline]
    pub fn next_hop(&self, dst: NodeId) -> NodeId {
        if self.peer_of.is_empty() {
            self.hot.to
        } else {
            self.p.peers[peer_index(&self.peer_of, dst)]
        }
    }

    /// The far end of a point-to-point link (`p.to`).
    #[inline(always)]
    pub fn far_end(&self) -> NodeId {
        self.hot.to
    }

    /// Whether the far end does GRO on this link's packets (`p.gro`).
    #[inline(always)]
    pub fn gro(&self) -> bool {
        self.hot.gro
    }

    /// The WiFi medium this link belongs to, if it is a WiFi interface.
    #[inline]
    pub fn medium(&self) -> Option<usize> {
        match &self.lower {
            Lower::Wifi(w) => Some(w.p.medium as usize),
            _ => None,
        }
    }

    /// Packets anywhere on this link: qdisc, lower layer (device queue, shaper stash,
    /// regulators, channels, driver/hardware queues, reorder buffers), on the wire.
    pub fn packets_inside(&self) -> u64 {
        let lower = match &self.lower {
            Lower::Wire => 0,
            Lower::Shaper(s) => s.held(),
            Lower::Docsis(d) => d.held(),
            Lower::Wifi(w) => w.held(),
        };
        (self.qdisc.len() + self.device.len() + lower + self.wire.len()) as u64
            + self.gro_held.is_some() as u64
    }

    /// Packets held below the qdisc (everything but the qdisc and the wire).
    pub fn lower_backlog(&self) -> u64 {
        self.packets_inside() - self.qdisc.len() as u64 - self.wire.len() as u64
    }

    /// A packet arrives for transmission on this link. Any drops are left in `self.out`;
    /// false if there are none for sure (a lazy wire's queue-free passage), so that the
    /// caller need not look.
    #[inline]
    pub fn enqueue(&mut self, mut pkt: Packet, now: SimTime, ev: &mut EventQueue) -> bool {
        if self.hot.traced && matches!(self.lower, Lower::Wire) {
            // the queue length this arrival finds (lower layers log it in `to_qdisc`,
            // when the packet reaches their qdisc)
            self.stats
                .log_packet(now, PKT_QLEN, self.qdisc.len() as f64);
        }
        if self.hot.lazy {
            return self.enqueue_lazy(pkt, now, ev);
        }
        if !matches!(self.lower, Lower::Wire) {
            self.enqueue_lower(pkt, now, ev);
            return !self.out.drops.is_empty();
        }
        pkt.enqueued_at = now;
        let _ = self.qdisc.enqueue(pkt, now, &mut self.out);
        self.stats.series.backlog(now, self.qdisc.len());
        self.kick(now, ev);
        if self.throttles {
            self.arm_qdisc_wake(now, ev);
        }
        !self.out.drops.is_empty()
    }

    /// The lazy wire (lossless, point-to-point, device queue of one packet). It gives the
    /// same results as the eager wire (`kick`/`tx_done`) with fewer events:
    /// - a packet is put on the wire when its serialisation *starts*, stamped with the
    ///   instant it will have left (`busy_until`) — that instant is known then, and a
    ///   lossless wire has nothing left to decide at the end;
    /// - `TxDone` is scheduled only when a packet waits in the qdisc for the serialiser,
    ///   so an idle access link costs one `Arrive` per packet instead of two events;
    /// - the dequeue the eager model makes on an empty qdisc when a transmission ends is
    ///   made later with its original timestamp (`idle_deq`), before the qdisc is touched
    ///   again or the run stops (`settle`).
    ///
    /// Returns whether the qdisc may have dropped (`enqueue`).
    #[inline]
    fn enqueue_lazy(&mut self, mut pkt: Packet, now: SimTime, ev: &mut EventQueue) -> bool {
        if self.hot.idle_deq && now >= self.hot.busy_until {
            self.hot.idle_deq = false;
            let none = self.qdisc.dequeue(self.hot.busy_until, &mut self.out);
            debug_assert!(none.is_none(), "owed dequeue found a packet");
        }
        pkt.enqueued_at = now;
        // fast path: a free serialiser would dequeue the packet at once; a qdisc that
        // can say so (`Qdisc::pass_through`: an empty FIFO) lets it skip the queue (same
        // stats, same backlog record)
        if !self.hot.txdone_pending && now >= self.hot.busy_until && self.passes(pkt.size, now) {
            self.hot_backlog(now, 1);
            let emptied = self.hot.fifo_any;
            self.transmit_lazy(pkt, now, ev, emptied);
            return false;
        }
        let _ = self.qdisc.enqueue(pkt, now, &mut self.out);
        self.hot_backlog(now, self.qdisc.len());
        if self.hot.txdone_pending {
            return true;
        }
        if now < self.hot.busy_until {
            // the serialiser is busy: wake when it ends (the eager model's TxDone, which
            // then dequeues; no empty dequeue is owed any more)
            self.hot.idle_deq = false;
            self.hot.txdone_pending = true;
            ev.push(self.hot.busy_until, Event::TxDone(self.hot.id));
            return true;
        }
        self.start_lazy(now, ev);
        true
    }

    /// Lazy wire: the serialiser is free at `now`; dequeue and transmit one packet.
    #[inline]
    fn start_lazy(&mut self, now: SimTime, ev: &mut EventQueue) {
        // `transmit_lazy` with the packet read where the dequeue returned it and moved
        // from there onto the wire (bound to a local first, it was copied once more)
        let head = self.qdisc.dequeue(now, &mut self.out);
        let Some(pkt) = &head else {
            return;
        };
        self.note_dequeue_lazy(pkt.enqueued_at, pkt.ecn, now);
        if pkt.gso_segs > 1 {
            let pkt = head.expect("a dequeued packet");
            return self.transmit_lazy_gso(pkt, now, ev, false);
        }
        let at = self.lazy_tx_begin(pkt, now, ev);
        self.wire.push_back((at, head.expect("a dequeued packet")));
        self.lazy_tx_end(at, ev, false);
    }

    /// Lazy wire, serialiser free and no `TxDone` pending (so the qdisc is empty):
    /// `Qdisc::pass_through`, for a FIFO that takes any packet when empty straight to its
    /// counters (`Fifo::count_pass`).
    #[inline(always)]
    fn passes(&mut self, size: u32, now: SimTime) -> bool {
        if self.hot.fifo_any {
            if let AnyQdisc::Fifo(f) = &mut self.qdisc {
                f.count_pass(size);
                return true;
            }
        }
        self.qdisc.pass_through(size, now)
    }

    /// Lazy wire: `pkt` has left the qdisc at `now` and the serialiser is free;
    /// `emptied`: the qdisc is known to be empty (a FIFO's queue-free passage), so
    /// `after_lazy_tx` need not ask it.
    #[inline(always)]
    fn transmit_lazy(&mut self, pkt: Packet, now: SimTime, ev: &mut EventQueue, emptied: bool) {
        self.note_dequeue_lazy(pkt.enqueued_at, pkt.ecn, now);
        if pkt.gso_segs > 1 {
            return self.transmit_lazy_gso(pkt, now, ev, emptied);
        }
        let at = self.lazy_tx_begin(&pkt, now, ev);
        self.wire.push_back((at, pkt));
        self.lazy_tx_end(at, ev, emptied);
    }

    /// `transmit_lazy` of a packet that is not a GSO skb, up to its push onto the wire:
    /// the transmission's accounting; returns the packet's arrival instant at the far end.
    #[inline(always)]
    fn lazy_tx_begin(&mut self, pkt: &Packet, now: SimTime, ev: &mut EventQueue) -> SimTime {
        let tx = self.hot.rate.tx_time(pkt.size + self.hot.overhead);
        if now >= self.hot.warmup {
            self.hot.busy += tx;
        }
        self.count_tx();
        let done = now + tx;
        tx_complete(self.hot.from, pkt, done, ev);
        self.hot.busy_until = done;
        self.hot.uncounted = pkt.size;
        self.hot.uncounted_segs = 1;
        self.jittered(done + self.hot.delay)
    }

    /// `transmit_lazy` after the packet due at `at` went on the wire.
    #[inline(always)]
    fn lazy_tx_end(&mut self, at: SimTime, ev: &mut EventQueue, emptied: bool) {
        if self.wire.len() == 1 {
            self.wire_started(at, ev);
        }
        self.after_lazy_tx(ev, emptied);
    }

    /// The first packet on the empty wire arrives at `at`: its `Arrive`, unless the link
    /// folds into the next (then the caller's [`fold_arrivals`] decides).
    #[inline(always)]
    fn wire_started(&mut self, at: SimTime, ev: &mut EventQueue) {
        if self.hot.fold {
            self.hot.fold_owed = true;
        } else {
            ev.push(at, Event::Arrive(self.hot.id));
        }
    }

    /// Whether a packet went on the empty wire of a folding link and
    /// [`fold_arrivals`] must run.
    #[inline(always)]
    pub(crate) fn fold_owed(&self) -> bool {
        self.hot.fold_owed
    }

    /// Makes this link take the packets of link `from` without their arrival event (see
    /// [`fold_arrivals`]), as `Plan::fold_feeders` allows: a lazy wire without host
    /// jitter, whose FIFO takes an MTU-sized packet when empty, outside any per-packet
    /// trace window.
    pub(crate) fn set_fold_from(&mut self, from: LinkId) {
        debug_assert!(
            self.hot.lazy
                && !self.hot.jitter
                && self.stats.packet_windows.is_empty()
                && matches!(self.qdisc, AnyQdisc::Fifo(_)),
            "link {} cannot take folded packets",
            self.p.name
        );
        self.fold_from = from;
        self.hot.fold_target = true;
    }

    /// Back to an `Arrive` per packet at the far end, as either end of a fold.
    pub(crate) fn clear_fold(&mut self) {
        debug_assert!(self.wire.is_empty() && !self.hot.fold_owed);
        self.hot.fold = false;
        self.hot.fold_target = false;
        self.fold_from = LinkId::MAX;
    }

    /// Makes this link fold its packets into the next link where one has accepted it
    /// (`set_fold_from`).
    pub(crate) fn set_fold(&mut self) {
        debug_assert!(self.p.can_feed_fold());
        self.hot.fold = true;
    }

    /// Whether this link can take a packet of link `a` that reaches it at `t`, as the
    /// router would hand it over then: it is fed by `a` alone, its serialiser is free at
    /// `t` and its queue empty (so the packet goes straight on the wire). Reads only
    /// `hot`: a lazy wire's qdisc holds packets only while a `TxDone` is pending, and a
    /// packet of `a` routed here is on a flow's path through `a` and this link, whose
    /// only feeder is then `a` (`set_fold_from`).
    #[inline(always)]
    fn takes_folded(&self, a: LinkId, t: SimTime) -> bool {
        let take = self.hot.fold_target
            && !self.hot.txdone_pending
            && !self.hot.idle_deq
            && t >= self.hot.busy_until;
        debug_assert!(!take || (self.fold_from == a && self.qdisc.is_empty()));
        take
    }

    /// `enqueue_lazy` of a packet that `takes_folded` accepted (a free serialiser, an
    /// empty FIFO that admits it: the fast path of `enqueue_lazy`), kept apart so that
    /// `enqueue_lazy` keeps one call site and stays inlined into `Net::send`.
    #[inline(never)]
    fn take_folded(&mut self, mut pkt: Packet, t: SimTime, ev: &mut EventQueue) {
        pkt.enqueued_at = t;
        if self.passes(pkt.size, t) {
            self.hot_backlog(t, 1);
            let emptied = self.hot.fifo_any;
            return self.transmit_lazy(pkt, t, ev, emptied);
        }
        // (a FIFO that admits an MTU-sized packet takes every packet a wire carries)
        debug_assert!(false, "a folded packet did not pass through");
        let _ = self.qdisc.enqueue(pkt, t, &mut self.out);
        self.hot_backlog(t, self.qdisc.len());
        self.start_lazy(t, ev);
    }

    /// The arrival instant at the far end of a packet whose last bit leaves at `at`
    /// plus the delay (host processing jitter, if any, added: `HostJitter::apply`).
    #[inline(always)]
    fn jittered(&mut self, at: SimTime) -> SimTime {
        if self.hot.jitter {
            self.jitter.apply(at)
        } else {
            at
        }
    }

    /// Lazy wire, after a transmission started: wake at its end if packets wait
    /// (`emptied`: none do).
    #[inline(always)]
    fn after_lazy_tx(&mut self, ev: &mut EventQueue, emptied: bool) {
        let done = self.hot.busy_until;
        debug_assert!(!emptied || self.qdisc.is_empty());
        if !emptied && self.qdisc.len() > 0 {
            self.hot.txdone_pending = true;
            ev.push(done, Event::TxDone(self.hot.id));
        } else {
            // (a FIFO's empty dequeue changes nothing: none is owed)
            self.hot.idle_deq = self.hot.owes_idle_deq;
        }
    }

    /// Lazy wire: a GSO skb left the qdisc; its segments go on the wire back to back
    /// (Linux segments it in `validate_xmit_skb` → `skb_gso_segment` between the qdisc
    /// and the driver), each arriving when its own last bit has crossed.
    #[inline(never)]
    fn transmit_lazy_gso(&mut self, pkt: Packet, now: SimTime, ev: &mut EventQueue, emptied: bool) {
        let mut end = now;
        for i in 0..pkt.segs() {
            let seg = pkt.segment(i);
            let tx = self.p.rate.tx_time(seg.size + self.p.overhead);
            if now >= self.hot.warmup {
                self.hot.busy += tx;
            }
            end += tx;
            let at = self.jitter.apply(end + self.p.delay);
            self.wire.push_back((at, seg));
            if self.wire.len() == 1 {
                self.wire_started(at, ev);
            }
        }
        self.count_tx();
        tx_complete(self.p.from, &pkt, end, ev);
        self.hot.busy_until = end;
        self.hot.uncounted = pkt.size;
        self.hot.uncounted_segs = pkt.segs() as u16;
        self.after_lazy_tx(ev, emptied);
    }

    /// Lazy wire: the eager model's end-of-transmission accounting of the packet that
    /// ended at `busy_until` (called once that instant has passed).
    #[inline]
    fn count_tx(&mut self) {
        if self.hot.uncounted > 0 {
            let (done, size) = (self.hot.busy_until, self.hot.uncounted);
            self.hot.uncounted = 0;
            if done >= self.hot.warmup {
                self.hot.tx_pkts += self.hot.uncounted_segs as u64;
                self.hot.tx_bytes += size as u64;
            }
            let tn = done.as_nanos();
            if tn >= self.hot.bin_lo && tn < self.hot.bin_hi {
                self.hot.bin_recorded |= 1 << LinkField::TxBytes as u8;
                self.hot.bin_tx += size as u64;
            } else {
                // another bin than the cached one (on a link that sends rarely, the
                // previous packet's end is in an earlier bin): straight into the
                // series, keeping the cached bin (its write-back does not touch others)
                self.stats.series.tx(done, size);
            }
        }
    }

    /// Lazy wire: `note_dequeue` with the series' bin and the zero sojourns kept in
    /// `hot` (the same records, written to `stats` later: `flush_hot`).
    #[inline(always)]
    fn note_dequeue_lazy(&mut self, enqueued_at: SimTime, ecn: Ecn, now: SimTime) {
        let soj = now.saturating_since(enqueued_at).as_nanos();
        if now >= self.hot.warmup {
            if soj == 0 {
                self.hot.zero_soj += 1;
                if self.hot.zero_soj == u32::MAX {
                    self.hot.flush_zero_soj(&mut self.stats);
                }
            } else {
                self.stats.sojourn.record(soj);
            }
        }
        self.hot_bin(now, LinkField::Sojourn);
        self.hot.bin_soj_sum += soj as f64;
        self.hot.bin_soj_n += 1;
        if self.hot.traced {
            self.stats.log_packet(now, PKT_SOJOURN, soj as f64 * 1e-9);
        }
        if ecn == Ecn::Ce {
            self.stats.ce_marked_seen += 1;
        }
    }

    /// Lazy wire: `LinkSeries::backlog` into the cached bin.
    #[inline(always)]
    fn hot_backlog(&mut self, t: SimTime, packets: usize) {
        self.hot_bin(t, LinkField::BacklogMax);
        let n = u32::try_from(packets).unwrap_or(u32::MAX);
        if n > self.hot.bin_backlog {
            self.hot.bin_backlog = n;
        }
    }

    /// Lazy wire: makes the cached bin the one holding `t` and marks `field` recorded.
    #[inline(always)]
    fn hot_bin(&mut self, t: SimTime, field: LinkField) {
        let tn = t.as_nanos();
        if !(tn >= self.hot.bin_lo && tn < self.hot.bin_hi) {
            self.change_hot_bin(t);
        }
        self.hot.bin_recorded |= 1 << field as u8;
    }

    /// Lazy wire: the cached bin becomes the one holding `t`. A transmission that ended
    /// at or before `t` is counted first (`count_tx`, as the next transmission or
    /// `settle` would count it: its end has passed), while the bin it ended in — on a
    /// link that sends rarely, mostly the cached one — is still cached; counted after
    /// the change, it would go back into the series' earlier bin, one more search there.
    #[inline(never)]
    fn change_hot_bin(&mut self, t: SimTime) {
        if self.hot.busy_until <= t {
            self.count_tx();
        }
        self.hot.load_bin(&mut self.stats, t);
    }

    /// Writes what `hot` holds of the statistics (the series' bin, the zero sojourns,
    /// the transmit counters) to `stats`.
    fn flush_hot(&mut self) {
        self.hot.store_bin(&mut self.stats);
        self.hot.flush_zero_soj(&mut self.stats);
        self.stats.busy += self.hot.busy;
        self.stats.tx_pkts += self.hot.tx_pkts;
        self.stats.tx_bytes += self.hot.tx_bytes;
        self.hot.busy = SimDuration::ZERO;
        self.hot.tx_pkts = 0;
        self.hot.tx_bytes = 0;
    }

    /// Makes this link log packets inside the `run.packet_trace` windows `w`
    /// (`LinkStats::packet_windows`).
    pub fn set_packet_windows(&mut self, w: Vec<(SimTime, SimTime)>) {
        self.hot.traced = !w.is_empty();
        self.stats.packet_windows = w;
    }

    /// Makes an owed empty dequeue (lazy wire) that falls at or before `t`, so the qdisc's
    /// state at `t` is what the eager model leaves. The simulator calls this when
    /// `run_until(t)` returns.
    #[inline(never)]
    pub fn settle(&mut self, t: SimTime) {
        // a lazy shaper wake-up at or before `t` has moved its packet to the device
        if let Some(pkt) = self.released_stash(t) {
            self.device.push_back(pkt);
            self.busy = true;
        }
        if self.hot.busy_until <= t {
            self.count_tx();
        }
        if self.hot.idle_deq && self.hot.busy_until <= t {
            self.hot.idle_deq = false;
            let none = self.qdisc.dequeue(self.hot.busy_until, &mut self.out);
            debug_assert!(none.is_none(), "owed dequeue found a packet");
        }
        self.flush_hot();
    }

    /// tbf keeps a GSO skb whole when its length fits the bucket: Linux 6.1
    /// `net/sched/sch_tbf.c` `tbf_enqueue` segments (`tbf_segment` → `skb_gso_segment`,
    /// each segment enqueued to the child) only an skb whose `qdisc_pkt_len` (its
    /// segments' frames: IP bytes + `overhead` each) exceeds `max_size`, the bytes the
    /// burst holds at the rate (`tbf_change`: `psched_ns_t2l(&rate, buffer)`); a smaller
    /// one is queued, charged and sent whole (the device segments it).
    fn tbf_takes_whole(&self, pkt: &Packet) -> bool {
        match &self.lower {
            Lower::Shaper(s) if s.p.kind == ShaperKind::Tbf => {
                (pkt.size + pkt.segs() * self.p.overhead) as u64 <= s.p.burst
            }
            _ => false,
        }
    }

    /// `enqueue` for the lower layers other than the wire (kept out of line: the wire's
    /// path stays as small as it was). DOCSIS: the packet meets its service flow's
    /// regulator before the qdisc.
    #[inline(never)]
    fn enqueue_lower(&mut self, pkt: Packet, now: SimTime, ev: &mut EventQueue) {
        if pkt.gso_segs != 0 {
            return self.enqueue_lower_gso(pkt, now, ev);
        }
        self.enqueue_lower_one(pkt, now, ev);
    }

    /// `enqueue_lower` of a GSO skb or segment (out of line: the usual packet's path
    /// keeps a smaller frame).
    #[cold]
    #[inline(never)]
    fn enqueue_lower_gso(&mut self, mut pkt: Packet, now: SimTime, ev: &mut EventQueue) {
        if pkt.gso_segs != 0 && pkt.src == self.p.from {
            // TCP Small Queues: a lower layer's own queues are not modelled below the
            // socket; its skb completes at hand-off (and is not counted again)
            tx_complete(self.p.from, &pkt, now, ev);
            if pkt.gso_segs > 1 {
                for i in 0..pkt.segs() {
                    let mut seg = pkt.segment(i);
                    seg.gso_segs = 0;
                    self.enqueue_lower(seg, now, ev);
                }
                return;
            }
            pkt.gso_segs = 0;
        }
        if pkt.gso_segs > 1 && !self.tbf_takes_whole(&pkt) {
            // Lower layers other than the wire take GSO skbs as their segments, before
            // the qdisc (a modelling choice: their pulls and airtime count packets);
            // tbf segments only an skb above its burst (`tbf_takes_whole`).
            for i in 0..pkt.segs() {
                self.enqueue_lower(pkt.segment(i), now, ev);
            }
            return;
        }
        self.enqueue_lower_one(pkt, now, ev);
    }

    /// `enqueue_lower` of one packet the lower layer takes as it is.
    #[inline(always)]
    fn enqueue_lower_one(&mut self, pkt: Packet, now: SimTime, ev: &mut EventQueue) {
        if let Lower::Docsis(d) = &mut self.lower {
            let peer = peer_index(&self.peer_of, pkt.dst);
            d.arrive(
                peer,
                pkt,
                self.p.overhead,
                self.id,
                now,
                ev,
                &mut self.qdisc,
                &mut self.out,
                &mut self.stats,
            );
        } else if let Lower::Shaper(s) = &mut self.lower {
            // (a shaped link records its series and zero sojourns through `hot`)
            if s.records_direct() {
                to_qdisc(&mut self.qdisc, &mut self.out, &mut self.stats, pkt, now);
            } else {
                let hot = &mut self.hot;
                to_qdisc_recording(
                    &mut self.qdisc,
                    &mut self.out,
                    &mut self.stats,
                    pkt,
                    now,
                    |stats, n| hot.backlog(stats, now, n),
                );
            }
            // a tbf lazy wake-up is pending: the shaper's pull would only count the
            // stash as held back (no WiFi to poke; a lazy wake-up means the qdisc
            // does not throttle)
            if s.throttle_waiting(now) {
                debug_assert!(!self.throttles && self.device.is_empty());
                return;
            }
        } else {
            to_qdisc(&mut self.qdisc, &mut self.out, &mut self.stats, pkt, now);
        }
        let was_ready = self.wifi().map_or(0, |w| w.ready_mask());
        self.kick_lower(now, ev);
        if self.wifi().map_or(0, |w| w.ready_mask()) & !was_ready != 0 {
            // an access category of the interface has its first aggregate ready: it joins
            // the contention (the medium is shared state the link cannot reach; the
            // simulator pokes it)
            ev.push(
                now,
                Event::LinkTimer {
                    link: self.id,
                    kind: timer::MEDIUM_POKE,
                },
            );
        }
        if self.throttles {
            self.arm_qdisc_wake(now, ev);
        }
    }

    /// The wire: moves packets from the qdisc to the device queue while it has room, and
    /// starts the serialiser if it is idle.
    #[inline]
    fn kick(&mut self, now: SimTime, ev: &mut EventQueue) {
        while self.device.len() < self.p.device_queue as usize {
            match self.qdisc.dequeue(now, &mut self.out) {
                Some(p) => {
                    note_dequeue(&mut self.stats, p.enqueued_at, p.ecn, now);
                    if p.gso_segs > 1 {
                        // segmented between the qdisc and the driver (Linux
                        // `validate_xmit_skb` → `skb_gso_segment`)
                        self.device.extend((0..p.segs()).map(|i| p.segment(i)));
                    } else {
                        self.device.push_back(p);
                    }
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
                ev.push(now + tx, Event::TxDone(self.hot.id));
            }
        }
    }

    /// Starts serialising the head of the device queue if the serialiser is idle (the
    /// shaper's path; the wire's `kick` has the same steps inline).
    fn start_tx(&mut self, now: SimTime, ev: &mut EventQueue) {
        if !self.busy {
            if let Some(head) = self.device.front() {
                let tx = self.p.rate.tx_time(head.size + self.p.overhead);
                if now >= self.stats.warmup {
                    self.stats.busy += tx;
                }
                self.busy = true;
                ev.push(now + tx, Event::TxDone(self.hot.id));
            }
        }
    }

    /// A shaper's lazy wake-up (see `shaper`) at or before `t`: the packet it moved to
    /// the device queue and started to serialise then, with that transmission counted
    /// in the busy time as it would have been at the time.
    fn released_stash(&mut self, t: SimTime) -> Option<Packet> {
        let Lower::Shaper(s) = &mut self.lower else {
            return None;
        };
        let (at, tx) = s.release(t, self.p.overhead)?;
        if at >= self.stats.warmup {
            self.stats.busy += tx;
        }
        Some(s.take_stash())
    }

    /// `kick` for the lower layers other than the wire (kept out of line).
    #[inline(never)]
    pub(crate) fn kick_lower(&mut self, now: SimTime, ev: &mut EventQueue) {
        match &mut self.lower {
            Lower::Wire => unreachable!("the wire is handled by kick"),
            Lower::Shaper(s) => {
                s.pull(
                    &mut self.qdisc,
                    &mut self.out,
                    &mut self.stats,
                    &mut self.hot,
                    &mut self.device,
                    self.p.device_queue as usize,
                    self.p.overhead,
                    self.p.rate,
                    self.id,
                    now,
                    ev,
                );
                self.start_tx(now, ev);
            }
            Lower::Docsis(d) => {
                d.pull(
                    &self.peer_of,
                    self.p.overhead,
                    self.id,
                    now,
                    ev,
                    &mut self.qdisc,
                    &mut self.out,
                    &mut self.stats,
                );
            }
            Lower::Wifi(w) => {
                while w.has_room() {
                    match dequeue_cold(&mut self.qdisc, now, &mut self.out) {
                        Some(p) => {
                            note_dequeue(&mut self.stats, p.enqueued_at, p.ecn, now);
                            let peer = peer_index(&self.peer_of, p.dst);
                            w.accept(p, peer, now);
                        }
                        None => break,
                    }
                }
                w.fill_hw();
            }
        }
    }

    /// The serialiser finished the head packet: put it on the wire (or lose it).
    pub fn tx_done(&mut self, now: SimTime, ev: &mut EventQueue) {
        if self.hot.lazy {
            self.hot.txdone_pending = false;
            return self.start_lazy(now, ev);
        }
        self.busy = false;
        // (the body of `carry`, written out: moving the packet through one more call
        // costs a 176-byte copy on the hottest path). A shaper's lazy wake-up hands the
        // packet over only now (it would have been the device queue's only one): what
        // `released_stash` does, written out, so the packet moves once, from the stash.
        let pkt = match &mut self.lower {
            Lower::Shaper(s) => match s.release(now, self.p.overhead) {
                Some((at, tx)) => {
                    if at >= self.stats.warmup {
                        self.stats.busy += tx;
                    }
                    s.take_stash()
                }
                None => self
                    .device
                    .pop_front()
                    .expect("TxDone with an empty device queue"),
            },
            _ => self
                .device
                .pop_front()
                .expect("TxDone with an empty device queue"),
        };
        if now >= self.stats.warmup {
            self.stats.tx_pkts += 1;
            self.stats.tx_bytes += pkt.size as u64;
        }
        if matches!(&self.lower, Lower::Shaper(s) if !s.records_direct()) {
            // (a shaped link records its series through `hot`)
            self.hot.tx(&mut self.stats, now, pkt.size);
        } else {
            self.stats.series.tx(now, pkt.size);
        }
        tx_complete(self.p.from, &pkt, now, ev);
        let loss = loss_at(&self.p, now);
        if loss > 0.0 && self.rng.bernoulli(loss) {
            self.stats.wire_drops += 1;
            self.out.drops.push((pkt, DropReason::Wire));
        } else {
            let at = self.jitter.apply(now + self.p.delay);
            self.wire.push_back((at, pkt));
            if self.wire.len() == 1 {
                self.wire_started(at, ev);
            }
        }
        if matches!(self.lower, Lower::Wire) {
            self.kick(now, ev);
        } else {
            self.kick_lower(now, ev);
        }
        if self.throttles {
            self.arm_qdisc_wake(now, ev);
        }
    }

    /// A lower-layer timer of this link fired (shaper, regulator, channel). WiFi medium
    /// timers are handled by the simulator, which owns the media.
    pub fn on_timer(&mut self, kind: u32, now: SimTime, ev: &mut EventQueue) {
        if kind & timer::TAG == timer::QDISC {
            return self.on_qdisc_wake(now, ev);
        }
        let idx = (kind & timer::INDEX) as usize;
        match (kind & timer::TAG, &mut self.lower) {
            (timer::SHAPER, Lower::Shaper(s)) => {
                if s.on_timer(now) {
                    self.kick_lower(now, ev);
                }
            }
            (timer::REGULATOR, Lower::Docsis(d)) => {
                d.on_regulator_timer(
                    idx,
                    self.p.overhead,
                    self.id,
                    now,
                    ev,
                    &mut self.qdisc,
                    &mut self.out,
                    &mut self.stats,
                );
                self.kick_lower(now, ev);
            }
            (timer::CHANNEL, Lower::Docsis(d)) => {
                let (p, stats, rng, wire, jitter, out, id) = (
                    &self.p,
                    &mut self.stats,
                    &mut self.rng,
                    &mut self.wire,
                    &mut self.jitter,
                    &mut self.out,
                    self.id,
                );
                let (inline, mut owed) = (d.inline_arrivals, false);
                d.on_channel_done(idx, &self.peer_of, |pkt| {
                    owed |= carry(p, stats, rng, wire, jitter, out, id, pkt, now, ev, inline)
                });
                d.arrival_owed = owed;
                self.kick_lower(now, ev);
            }
            (tag, _) => debug_assert!(
                false,
                "link {} got timer tag {tag:#x} its lower layer does not use",
                self.p.name
            ),
        }
        if self.throttles {
            self.arm_qdisc_wake(now, ev);
        }
    }

    /// The oldest packet on the wire reaches the far end (point-to-point links).
    #[inline]
    pub fn arrive(&mut self, now: SimTime, ev: &mut EventQueue) -> Packet {
        debug_assert!(!self.hot.fold_owed, "an arrival while a fold is owed");
        let (t, pkt) = self
            .wire
            .pop_front()
            .expect("Arrive with nothing on the wire");
        debug_assert_eq!(t, now);
        if let Some(&(next, _)) = self.wire.front() {
            // a folding link: the packets behind may fold once this one is handed over
            self.wire_started(next, ev);
        }
        pkt
    }

    /// The oldest packet on the wire reaches the far end, which does GRO (`gro = true`;
    /// point-to-point links). Linux merges in-order segments of one TCP flow that
    /// arrive within one NAPI poll (`napi_gro_receive` → `dev_gro_receive` →
    /// `tcp_gro_receive`) and hands the merged skb up when the poll ends
    /// (`napi_complete_done` → `napi_gro_flush`). The model takes a poll to be a
    /// back-to-back arrival burst: a segment is held while the next packet on the wire
    /// arrives within its own serialisation time and can join it; the merged packet
    /// goes up when the burst (or the chain) ends. A segment joins when `tcp_gro_receive`
    /// would not flush: same flow and direction, payload, its sequence number right
    /// after the held data, the same ACK number, window, flags (a CWR, FIN, SYN or RST
    /// flushes), ECN field (`inet_gro_receive` compares the TOS), timestamp (to the
    /// millisecond, Linux's TS clock) and no SACK blocks; at most 64 segments (the poll
    /// budget) and 64 KiB. Only one flow is held at a time (Linux keeps up to 8,
    /// `MAX_GRO_SKBS`): another flow's packet flushes. Returns the packets to hand up,
    /// in order.
    #[inline(never)]
    pub fn arrive_gro(&mut self, now: SimTime, ev: &mut EventQueue) -> [Option<Packet>; 2] {
        let pkt = self.arrive(now, ev);
        let mut up = [None, None];
        let cur = match self.gro_held.take() {
            Some(mut h) if gro_joins(&h, &pkt) => {
                h.gso_segs = (h.segs() + 1) as u8;
                h.size += pkt.size;
                h.tcp.len += pkt.tcp.len;
                h
            }
            Some(h) => {
                up[0] = Some(h);
                pkt
            }
            None => pkt,
        };
        if let Some((t, next)) = self.wire.front() {
            let gap = self.p.rate.tx_time(next.size + self.p.overhead);
            if *t <= now + gap && gro_joins(&cur, next) {
                self.gro_held = Some(cur);
                return up;
            }
        }
        up[1] = Some(cur);
        up
    }

    /// The oldest packet on the wire reaches its next hop (multi-peer links): returns
    /// the node and the packet. A DOCSIS downstream may owe the next packet's arrival
    /// at once instead of pushing its event ([`take_arrival_owed`](Self::take_arrival_owed)).
    pub fn arrive_multi(&mut self, now: SimTime, ev: &mut EventQueue) -> (NodeId, Packet) {
        let (t, pkt) = self
            .wire
            .pop_front()
            .expect("Arrive with nothing on the wire");
        debug_assert_eq!(t, now);
        if let Some(&(next, _)) = self.wire.front() {
            if let Lower::Docsis(d) = &mut self.lower {
                if d.owe_arrival(next, now, ev) {
                    return (self.next_hop(pkt.dst), pkt);
                }
            }
            ev.push(
                next,
                Event::LinkTimer {
                    link: self.id,
                    kind: timer::ARRIVE,
                },
            );
        }
        (self.next_hop(pkt.dst), pkt)
    }

    /// Whether the link owes the arrival of its oldest packet on the wire now, with no
    /// event of its own (DOCSIS, `DocsisDown::owe_arrival`); clears the debt: the caller
    /// makes the arrival (`arrive_multi`) before anything else happens.
    #[inline]
    pub(crate) fn take_arrival_owed(&mut self) -> bool {
        match &mut self.lower {
            Lower::Docsis(d) => std::mem::take(&mut d.arrival_owed),
            _ => false,
        }
    }

    /// Counts a drop (qdisc or wire) into the per-bin series; the simulator calls this
    /// once per packet it drains from `out.drops`.
    pub fn note_drop(&mut self, now: SimTime) {
        self.stats.series.drop(now);
    }

    /// Lower-layer summary metrics for the queue's row in the results (name, value),
    /// followed by the qdisc's own (`Qdisc::summary`, e.g. DualPI2 per-queue delays).
    pub fn lower_summary(&self, out: &mut Vec<(&'static str, f64)>) {
        match &self.lower {
            Lower::Wire => {}
            Lower::Shaper(s) => {
                out.push(("shaper_rate_bps", s.p.rate.bps() as f64));
                out.push(("shaper_burst_bytes", s.p.burst as f64));
                out.push(("shaper_throttled", s.throttled as f64));
            }
            Lower::Docsis(d) => {
                out.push(("channels", d.p.channels as f64));
                out.push(("regulator_drops", d.regulator_drops() as f64));
                out.push(("regulator_held", d.held_back() as f64));
            }
            Lower::Wifi(w) => {
                let s = &w.stats;
                out.push(("txops", s.txops as f64));
                out.push(("collisions", s.collisions as f64));
                out.push(("subframes", s.subframes as f64));
                out.push(("retries", s.retries as f64));
                out.push((
                    "frames_per_ampdu",
                    if s.txops > 0 {
                        s.subframes as f64 / s.txops as f64
                    } else {
                        0.0
                    },
                ));
                out.push(("retry_drops", s.dropped as f64));
                out.push(("driver_max_frames", s.max_pending as f64));
                out.push(("driver_stops", s.stops as f64));
                if w.p.wmm {
                    out.push(("internal_collisions", s.internal_collisions as f64));
                    for (k, n) in ["txops_vo", "txops_vi", "txops_be", "txops_bk"]
                        .into_iter()
                        .zip(s.ac_txops)
                    {
                        out.push((k, n as f64));
                    }
                }
                out.push((
                    "below_qdisc_mean",
                    if s.below_qdisc_n > 0 {
                        s.below_qdisc_ns as f64 / s.below_qdisc_n as f64 / 1e9
                    } else {
                        f64::NAN
                    },
                ));
            }
        }
        self.qdisc.summary(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::{BuildCtx, QdiscConfig};

    /// A plain 100 Mbit/s wire (1514-byte frames take 121.12 us, 1 ms delay) with the
    /// qdisc `qdisc` (TOML), warm-up 3 ms and bins of `bin`.
    fn wire_link(qdisc: &str, bin: SimDuration, seed: u64) -> Link {
        let table: toml::Table = toml::from_str(qdisc).unwrap();
        let q = QdiscConfig::try_from(table).unwrap();
        let p = LinkParams {
            name: "wire".into(),
            from: 0,
            to: 1,
            peers: Vec::new(),
            rate: Rate::from_bps(100_000_000),
            delay: SimDuration::from_millis(1),
            overhead: 14,
            mtu: 1500,
            device_queue: 1,
            loss: 0.0,
            loss_periods: Vec::new(),
            trace: false,
            gro: false,
            lower: LowerParams::Wire,
        };
        let qd = q.build(BuildCtx {
            rate: p.rate,
            mtu: 1500,
            overhead: 14,
            rng: Rng::stream(seed, "qdisc", 0),
        });
        let warmup = SimTime::from_nanos(3_000_000);
        Link::new(0, p, qd, Rng::stream(seed, "link", 0), warmup, bin)
    }

    /// What a packet crossing a lazy wire touches of `Link` lies in its first three
    /// lines: `hot` (two and a half) and the wire. The qdisc's side output follows (one
    /// line), then the statistics: the other lower layers' per-packet fields in one
    /// line, what a bin's write-back reads of the series (`LinkSeries::merge_bin`) in
    /// the next.
    #[test]
    fn per_packet_fields_share_the_first_cache_lines() {
        use std::mem::{align_of, offset_of, size_of};
        let line = |off: usize| off / 64;
        assert_eq!(align_of::<Link>(), 64);
        assert_eq!(offset_of!(Link, hot), 0);
        assert_eq!(size_of::<WireHot>(), 160);
        for off in [
            offset_of!(WireHot, warmup),
            offset_of!(WireHot, busy),
            offset_of!(WireHot, tx_pkts),
            offset_of!(WireHot, tx_bytes) + 7,
            offset_of!(Link, wire),
            offset_of!(Link, wire) + size_of::<VecDeque<(SimTime, Packet)>>() - 1,
        ] {
            assert_eq!(line(off), 2, "offset {off}");
        }
        let out = offset_of!(Link, out);
        assert_eq!((line(out), line(out + size_of::<QdiscOut>() - 1)), (3, 3));
        let st = offset_of!(Link, stats);
        let pw = st + offset_of!(LinkStats, packet_windows);
        for off in [
            st + offset_of!(LinkStats, warmup),
            st + offset_of!(LinkStats, busy),
            st + offset_of!(LinkStats, tx_pkts),
            st + offset_of!(LinkStats, tx_bytes),
            st + offset_of!(LinkStats, ce_marked_seen),
            pw,
            pw + size_of::<Vec<(SimTime, SimTime)>>() - 1,
        ] {
            assert_eq!(line(off), 4, "offset {off}");
        }
        let se = st + offset_of!(LinkStats, series);
        assert_eq!((line(se), line(se + 55)), (5, 5));
        // a FIFO's queue-free passage (`Fifo::count_pass`): the tag and the six counters
        // it adds to in one line
        let link = wire_link("kind = \"fifo\"", SimDuration::from_millis(100), 1);
        let AnyQdisc::Fifo(f) = &link.qdisc else {
            panic!("a FIFO link")
        };
        let base = &link as *const Link as usize;
        let at = |p: usize| p - base;
        let q = offset_of!(Link, qdisc);
        assert_eq!(q % 64, 0, "offset {q}");
        let c = at(&f.stats.arrivals as *const _ as usize);
        let d = at(&f.stats.dequeued_bytes as *const _ as usize);
        assert_eq!(d, c + 40);
        assert_eq!((line(c), line(d + 7)), (line(q), line(q)));
        assert!(link.hot.fifo_any);
    }

    /// The lazy wire keeps its series' current bin and its zero sojourns in `WireHot`
    /// and writes them to `LinkStats` when the bin changes and when a run stops; the
    /// eager wire records each straight into `LinkStats`. Driven alike (bursts that
    /// queue, gaps that leave the queue empty, bins a few packets long, the run stopped
    /// and continued twice), the two links leave identical statistics: every bin of
    /// the series, the sojourn histogram, the counters, and the far-end arrivals.
    #[test]
    fn lazy_wire_statistics_match_the_eager_wire() {
        let run = |qdisc: &str, bin_us: u64, seed: u64, lazy: bool| {
            let bin = SimDuration::from_nanos(bin_us * 1000);
            let mut link = wire_link(qdisc, bin, seed);
            assert!(link.hot.lazy, "a plain wire is lazy");
            if !lazy {
                link.set_eager();
            }
            let mut rng = Rng::stream(seed, "test", 0);
            let mut ev = EventQueue::new();
            ev.push(SimTime::ZERO, Event::FlowTimer { flow: 0, kind: 0 });
            let mut log = Vec::new();
            let mut uid = 0;
            for stop_ms in [7, 19, 40, 120] {
                let stop = SimTime::from_nanos(stop_ms * 1_000_000);
                while let Some((now, e)) = ev.pop_due(stop) {
                    match e {
                        Event::FlowTimer { .. } => {
                            uid += 1;
                            let size = [60, 590, 1500][rng.below(3) as usize];
                            let pkt =
                                crate::qdisc::testutil::pkt(rng.below(3) as u32, size, uid, now);
                            link.enqueue(pkt, now, &mut ev);
                            for (p, _) in link.out.drops.drain(..) {
                                log.push((now.as_nanos(), p.uid, 0));
                                link.stats.series.drop(now);
                            }
                            // bursts (gaps of 0-40 us) and pauses (up to 2 ms)
                            let gap = if rng.below(8) == 0 {
                                rng.below(2_000_000)
                            } else {
                                rng.below(40_000)
                            };
                            ev.push(now + SimDuration::from_nanos(gap), e);
                        }
                        Event::TxDone(_) => link.tx_done(now, &mut ev),
                        Event::Arrive(_) => {
                            let p = link.arrive(now, &mut ev);
                            log.push((now.as_nanos(), p.uid, 1));
                        }
                        Event::TxComplete { .. } => {}
                        _ => unreachable!(),
                    }
                    for (p, _) in link.out.drops.drain(..) {
                        log.push((now.as_nanos(), p.uid, 0));
                        link.stats.series.drop(now);
                    }
                }
                link.settle(stop);
            }
            let st = &link.stats;
            let end = SimTime::from_nanos(120_000_000);
            let dense: Vec<Vec<f64>> = [
                (LinkField::TxBytes, 0),
                (LinkField::Sojourn, 1),
                (LinkField::Drops, 2),
                (LinkField::BacklogMax, 3),
            ]
            .into_iter()
            .map(|(f, i)| {
                st.series.dense(f, end, -1.0, |b| match i {
                    0 => b.tx_bytes as f64,
                    1 => b.sojourn_sum + b.sojourn_n as f64 * 1e12,
                    2 => b.drops as f64,
                    _ => b.backlog_max as f64,
                })
            })
            .collect();
            let h = &st.sojourn;
            let hist: Vec<_> = h.buckets().collect();
            (
                log,
                st.series.bins().to_vec(),
                dense,
                (h.count, h.sum, h.min, h.max, hist),
                (st.tx_pkts, st.tx_bytes, st.busy, st.ce_marked_seen),
            )
        };
        for qdisc in [
            "kind = 'fifo'",
            "kind = 'codel'",
            "kind = 'fifo'\nlimit = 5",
        ] {
            for (bin_us, seed) in [(250, 1), (1000, 2), (97, 3)] {
                let lazy = run(qdisc, bin_us, seed, true);
                let eager = run(qdisc, bin_us, seed, false);
                assert!(lazy.0.len() > 300, "{qdisc}: {} packets", lazy.0.len());
                assert!(
                    lazy.3 .2 == 0 && lazy.3 .3 > 100_000,
                    "zero and queued sojourns: {:?}",
                    lazy.3
                );
                assert_eq!(lazy, eager, "{qdisc}, bins of {bin_us} us, seed {seed}");
            }
        }
    }

    /// GRO, hand-worked (`Link::arrive_gro`). A 100 Mbit/s wire (1514-byte frames take
    /// 121.12 µs) with 1 ms delay. At t = 0 a 3-segment GSO skb of flow 1 (seq 1,
    /// 3 × 1448 bytes) and one segment of flow 2 enter the qdisc; at 5 ms the next
    /// segment of flow 1 (seq 4345). The wire carries the skb as three segments back to
    /// back, arriving at 1.12112, 1.24224 and 1.36336 ms; flow 2's at 1.48448 ms; the
    /// late one at 6.12112 ms. The far end holds the first segment (the second is on
    /// the wire and arrives within one frame time), merges the second, merges the third,
    /// and flushes the 3-segment packet when flow 2's packet follows (another flow);
    /// flow 2's goes up alone (nothing behind it); the late segment of flow 1 too (the
    /// burst had ended: a new poll).
    #[test]
    fn gro_merges_a_back_to_back_burst_and_flushes_at_its_end() {
        let table: toml::Table = toml::from_str("kind = 'fifo'").unwrap();
        let q = QdiscConfig::try_from(table).unwrap();
        let p = LinkParams {
            name: "gro".into(),
            from: 0,
            to: 1,
            peers: Vec::new(),
            rate: Rate::from_bps(100_000_000),
            delay: SimDuration::from_millis(1),
            overhead: 14,
            mtu: 1500,
            device_queue: 1,
            loss: 0.0,
            loss_periods: Vec::new(),
            trace: false,
            gro: true,
            lower: LowerParams::Wire,
        };
        let qd = q.build(BuildCtx {
            rate: p.rate,
            mtu: 1500,
            overhead: 14,
            rng: Rng::stream(1, "qdisc", 0),
        });
        let mut link = Link::new(
            0,
            p,
            qd,
            Rng::stream(1, "link", 0),
            SimTime::ZERO,
            SimDuration::from_millis(10),
        );
        let tcp = |flow: u32, seq: u64, segs: u8| {
            let mut pk =
                crate::qdisc::testutil::pkt(flow, 1500 * segs.max(1) as u32, seq, SimTime::ZERO);
            pk.kind = crate::packet::PacketKind::Tcp;
            pk.gso_segs = segs;
            pk.tcp.seq = seq;
            pk.tcp.len = 1448 * segs.max(1) as u32;
            pk
        };
        let mut ev = EventQueue::new();
        link.enqueue(tcp(1, 1, 3), SimTime::ZERO, &mut ev);
        link.enqueue(tcp(2, 1, 1), SimTime::ZERO, &mut ev);
        let late = SimTime::from_nanos(5_000_000);
        ev.push(late, Event::FlowTimer { flow: 1, kind: 0 });
        let mut up = Vec::new();
        let mut held = Vec::new();
        while let Some((now, e)) = ev.pop_due(SimTime::from_nanos(1_000_000_000)) {
            match e {
                Event::TxDone(_) => link.tx_done(now, &mut ev),
                Event::Arrive(_) => {
                    for pk in link.arrive_gro(now, &mut ev).into_iter().flatten() {
                        up.push((
                            now.as_nanos(),
                            pk.flow,
                            pk.tcp.seq,
                            pk.segs(),
                            pk.size,
                            pk.tcp.len,
                        ));
                    }
                    held.push(link.packets_inside());
                }
                Event::FlowTimer { .. } => {
                    link.enqueue(tcp(1, 4345, 1), now, &mut ev);
                }
                // (the test's packets start at the link's own node: TSQ completions)
                Event::TxComplete { .. } => {}
                _ => unreachable!(),
            }
        }
        assert_eq!(
            up,
            vec![
                (1_363_360, 1, 1, 3, 4500, 3 * 1448),
                (1_484_480, 2, 1, 1, 1500, 1448),
                (6_121_120, 1, 4345, 1, 1500, 1448),
            ]
        );
        // held in the link (and counted there) until flushed
        assert_eq!(held, vec![4, 3, 1, 0, 0]);
    }

    /// An 80 Mbit/s link (1 ms, 14 bytes of framing) behind an 8 Mbit/s tbf of `burst`
    /// bytes, with the qdisc `qdisc` (TOML) under the shaper.
    fn tbf_link(name: &str, qdisc: &str, burst: u64, seed: u64) -> (LinkParams, AnyQdisc) {
        shaped_link(name, qdisc, burst, seed, ShaperKind::Tbf)
    }

    fn shaped_link(
        name: &str,
        qdisc: &str,
        burst: u64,
        seed: u64,
        kind: ShaperKind,
    ) -> (LinkParams, AnyQdisc) {
        let table: toml::Table = toml::from_str(qdisc).unwrap();
        let q = QdiscConfig::try_from(table).unwrap();
        let shaper = ShaperParams {
            rate: Rate::from_bps(8_000_000),
            burst,
            kind,
        };
        let p = LinkParams {
            name: name.into(),
            from: 0,
            to: 1,
            peers: Vec::new(),
            rate: Rate::from_bps(80_000_000),
            delay: SimDuration::from_millis(1),
            overhead: 14,
            mtu: 1500,
            device_queue: 1,
            loss: 0.0,
            loss_periods: Vec::new(),
            trace: false,
            gro: false,
            lower: LowerParams::Shaper(shaper.clone()),
        };
        let qd = q.build(BuildCtx {
            rate: shaper.rate,
            mtu: 1500,
            overhead: 14,
            rng: Rng::stream(seed, "qdisc", 0),
        });
        (p, qd)
    }

    /// tbf and GSO skbs (Linux 6.1 `sch_tbf.c` `tbf_enqueue`: an skb whose
    /// `qdisc_pkt_len` exceeds `max_size`, the burst's bytes, goes to `tbf_segment`; a
    /// smaller one is queued whole). 8 Mbit/s shaper (1 µs per byte), 5,000-byte burst,
    /// 80 Mbit/s line (151.4 µs per 1,514-byte frame), 1 ms delay; at t = 0: a 1,500-byte
    /// packet (charged 1,514: 3,486 tokens left), skb A of 3 segments (3 × 1,514 = 4,542
    /// ≤ 5,000: one packet in the child FIFO) and skb B of 4 (6,056 > 5,000: four
    /// packets), behind the first packet in the device. A leaves when the bucket holds
    /// 4,542 (1,056 µs later) and its segments cross back to back: arrivals at 2.2074,
    /// 2.3588, 2.5102 ms; B's segments follow one per 1,514 µs of tokens: 2.570 ms +
    /// 0.1514 + 1 = 3.7214 ms, then 5.2354, 6.7494, 8.2634 ms.
    #[test]
    fn tbf_segments_only_gso_skbs_above_its_burst() {
        let (p, qd) = tbf_link("tbf", "kind = 'fifo'", 5000, 1);
        let mut link = Link::new(
            0,
            p,
            qd,
            Rng::stream(1, "link", 0),
            SimTime::ZERO,
            SimDuration::from_millis(10),
        );
        let tcp = |seq: u64, segs: u8| {
            let mut pk =
                crate::qdisc::testutil::pkt(1, 1500 * segs.max(1) as u32, seq, SimTime::ZERO);
            pk.src = 5; // another node's packets: no TX completions here
            pk.kind = crate::packet::PacketKind::Tcp;
            pk.gso_segs = segs;
            pk.tcp.seq = seq;
            pk.tcp.len = 1448 * segs.max(1) as u32;
            pk
        };
        let mut ev = EventQueue::new();
        link.enqueue(tcp(1, 0), SimTime::ZERO, &mut ev);
        link.enqueue(tcp(1449, 3), SimTime::ZERO, &mut ev);
        link.enqueue(tcp(1449 + 3 * 1448, 4), SimTime::ZERO, &mut ev);
        let Lower::Shaper(s) = &link.lower else {
            unreachable!()
        };
        assert_eq!(
            (link.qdisc.len(), s.held()),
            (5, 0),
            "A whole, B in segments"
        );
        let mut arrivals = Vec::new();
        while let Some((now, e)) = ev.pop_due(SimTime::from_nanos(1_000_000_000)) {
            match e {
                Event::TxDone(_) => link.tx_done(now, &mut ev),
                Event::LinkTimer { kind, .. } => link.on_timer(kind, now, &mut ev),
                Event::Arrive(_) => {
                    let pk = link.arrive(now, &mut ev);
                    arrivals.push((now.as_nanos(), pk.tcp.seq, pk.size, pk.segs()));
                }
                _ => unreachable!(),
            }
        }
        let seg = |i: u64| 1 + 1448 * i;
        assert_eq!(
            arrivals,
            vec![
                (1_151_400, seg(0), 1500, 1),
                (2_207_400, seg(1), 1500, 1),
                (2_358_800, seg(2), 1500, 1),
                (2_510_200, seg(3), 1500, 1),
                (3_721_400, seg(4), 1500, 1),
                (5_235_400, seg(5), 1500, 1),
                (6_749_400, seg(6), 1500, 1),
                (8_263_400, seg(7), 1500, 1),
            ]
        );
    }

    /// One tbf-shaped link (80 Mbit/s line, 8 Mbit/s shaper: 100 ns and 1 us per byte)
    /// fed by two packet sources on a 10-us grid, with frames of 100, 600 and 1500
    /// bytes, so that every instant (arrivals, transmission ends, the bucket's wake-ups)
    /// is on that grid and wake-ups and arrivals often share a nanosecond, in both
    /// orders. Returns everything the link
    /// did (far-end arrivals, drops, statistics, throttled count) and how many arrivals
    /// met the instant a wake-up was due.
    fn drive(qdisc: &str, lazy: bool, seed: u64) -> (String, u32) {
        drive_shaped(qdisc, ShaperKind::Tbf, lazy, false, seed)
    }

    /// `drive` with the shaper's kind, and the link's statistics recorded straight into
    /// `LinkStats` (`direct`) or through its cached bin.
    fn drive_shaped(
        qdisc: &str,
        kind: ShaperKind,
        lazy: bool,
        direct: bool,
        seed: u64,
    ) -> (String, u32) {
        let (p, qd) = shaped_link("shaped", qdisc, 3000, seed, kind);
        let warmup = SimTime::from_nanos(5_000_000);
        let bin = SimDuration::from_millis(10);
        let mut link = Link::new(0, p, qd, Rng::stream(seed, "link", 0), warmup, bin);
        let Lower::Shaper(s) = &mut link.lower else {
            unreachable!()
        };
        if !lazy && kind == ShaperKind::Tbf {
            s.clear_lazy_wake();
        }
        s.direct_records = direct;
        let mut rng = Rng::stream(seed, "test", 0);
        let mut ev = EventQueue::new();
        let end = SimTime::from_nanos(4_000_000_000);
        let mut log = Vec::new();
        let mut ties = 0;
        let mut uid = 0u64;
        let mut wakes = std::collections::BTreeSet::new();
        for src in 0..2 {
            ev.push(SimTime::ZERO, Event::FlowTimer { flow: src, kind: 0 });
        }
        while let Some((now, e)) = ev.pop_due(end) {
            match e {
                Event::FlowTimer { flow, .. } => {
                    if wakes.contains(&now) {
                        ties += 1;
                    }
                    uid += 1;
                    // frames of 100, 600 or 1500 bytes on the line; up to 4 flows
                    let size = [86, 586, 1486][rng.below(3) as usize];
                    let mut pkt = crate::qdisc::testutil::pkt(rng.below(4) as u32, size, uid, now);
                    pkt.flow += flow * 4;
                    link.enqueue(pkt, now, &mut ev);
                    // bursts and idle spells: ~1.2x the shaped rate on average
                    let gap = 10
                        * if rng.below(40) == 0 {
                            3_000 + rng.below(3_000)
                        } else {
                            rng.below(120)
                        };
                    ev.push(
                        now + SimDuration::from_micros(gap),
                        Event::FlowTimer { flow, kind: 0 },
                    );
                }
                Event::TxDone(_) => link.tx_done(now, &mut ev),
                Event::LinkTimer { kind, .. } => {
                    wakes.insert(now);
                    link.on_timer(kind, now, &mut ev)
                }
                Event::Arrive(_) => {
                    let p = link.arrive(now, &mut ev);
                    log.push(format!("arrive {} {}", now.as_nanos(), p.uid));
                }
                Event::FlowStart(_) | Event::TxComplete { .. } => unreachable!(),
            }
            for (p, why) in link.out.drops.drain(..) {
                log.push(format!("drop {} {} {why:?}", now.as_nanos(), p.uid));
                link.stats.series.drop(now);
            }
            if lazy {
                // the lazy link's wake-up instants, for counting ties
                if let Lower::Shaper(s) = &link.lower {
                    wakes.extend(s.lazy_wake_at());
                }
            }
        }
        link.settle(end);
        let throttled = match &link.lower {
            Lower::Shaper(s) => s.throttled,
            _ => unreachable!(),
        };
        log.push(format!(
            "throttled {throttled} inside {} qdisc {:?} stats {:?}",
            link.packets_inside(),
            link.qdisc.stats(),
            link.stats
        ));
        (log.join("\n"), ties)
    }

    /// The lazy tbf wake-up (no wake-up event) does exactly what the wake-up timer does:
    /// same packets leaving at the same instants, same drops, statistics and throttled
    /// count, also when an arrival and a wake-up share a nanosecond.
    #[test]
    fn lazy_tbf_wake_up_matches_the_timer() {
        for qdisc in [
            "kind = \"fifo\"\nlimit = 30",
            "kind = \"codel\"",
            "kind = \"fq_codel\"",
            "kind = \"pie\"",
        ] {
            for seed in 1..=3 {
                let (eager, _) = drive(qdisc, false, seed);
                let (lazy, ties) = drive(qdisc, true, seed);
                assert!(ties > 10, "{qdisc} seed {seed}: only {ties} ties exercised");
                assert!(eager.lines().count() > 3_000, "{qdisc}: too little traffic");
                if eager != lazy {
                    let (a, b): (Vec<_>, Vec<_>) =
                        (eager.lines().collect(), lazy.lines().collect());
                    let i = a
                        .iter()
                        .zip(&b)
                        .position(|(x, y)| x != y)
                        .unwrap_or(a.len().min(b.len()));
                    panic!(
                        "{qdisc} seed {seed}: line {i}: eager {:?} lazy {:?}",
                        a.get(i),
                        b.get(i)
                    );
                }
            }
        }
    }

    /// A shaped link's statistics recorded through its cached bin and zero-sojourn count
    /// (`WireHot`) equal those recorded straight into `LinkStats`: the same series (to
    /// the bit), histogram, counters and packets, for htb and tbf (lazy and timer
    /// wake-ups), over several qdiscs and bins that change mid-burst.
    #[test]
    fn shaped_bin_cache_matches_direct_records() {
        for qdisc in [
            "kind = \"fifo\"\nlimit = 30",
            "kind = \"codel\"",
            "kind = \"pie\"",
        ] {
            for (kind, lazy) in [
                (ShaperKind::Tbf, true),
                (ShaperKind::Tbf, false),
                (ShaperKind::Htb, false),
            ] {
                for seed in 1..=2 {
                    let (direct, _) = drive_shaped(qdisc, kind, lazy, true, seed);
                    let (cached, _) = drive_shaped(qdisc, kind, lazy, false, seed);
                    assert!(
                        direct.lines().count() > 3_000,
                        "{qdisc}: too little traffic"
                    );
                    assert!(
                        direct.contains("sojourn_n: "),
                        "the statistics are in the log"
                    );
                    assert!(
                        direct == cached,
                        "{qdisc} {kind:?} lazy {lazy} seed {seed}: the cached records differ"
                    );
                }
            }
        }
    }
}
