//! An 802.11n WiFi hop: a half-duplex shared medium between an access point (AP) and
//! its stations, with EDCA contention, A-MPDU aggregation, block acks, frame errors with
//! link-layer retransmission, and the driver/hardware queues below the qdisc.
//!
//! ## Structure
//! Every WiFi interface (the AP's, and each station's) is one [`Link`](super::Link)
//! whose lower layer is a [`WifiPort`]; the AP's link is a *multi-peer* link (one qdisc
//! for the whole interface, as a Linux `wlan0`, with one next hop per station). All
//! interfaces of one BSS share a [`WifiMedium`], which arbitrates airtime.
//!
//! ```text
//!  qdisc (under test) ─► driver queue (per-station TID queues, ≤ driver_queue frames in total, retries at the head)
//!                        ─► hardware queue (≤ hw_aggregates A-MPDUs, built as soon as there is room)
//!                        ─► contention (AIFS + backoff) ─► PPDU on air ─► SIFS + block ack
//!                        ─► receiver reorder buffer ─► next hop
//! ```
//!
//! ## Driver and hardware queues (per interface: `ap_driver` / `station_driver`)
//! - The driver takes packets from the qdisc until it holds `driver_queue` frames, then
//!   stops the qdisc (mac80211's queue stop) until it is back at `driver_wake` frames.
//!   Frames stay counted until their block ack (or drop); the qdisc cannot see, drop or
//!   reorder them. ath9k (the AP): 123 (`ATH_MAX_QDEPTH` = 512 / 4 − 5), woken below
//!   that; iwlwifi (the Intel 5100 client): its 256-slot TFD ring, stopped when fewer
//!   than 32 slots are free (224 frames), woken when more than 64 are (190 frames).
//! - Aggregates are built into the hardware queue whenever it holds fewer than
//!   `hw_aggregates` of them (ath9k's `ATH_AGGR_MIN_QDEPTH` 2; iwlwifi's firmware
//!   aggregates one at a time from the ring), so under load full A-MPDUs wait and at
//!   light load a lone packet becomes a one-frame aggregate at once. Stations with queued
//!   frames are served round robin.
//! - An A-MPDU holds at most `max_frames` subframes (ath9k 32, iwlwifi 63), `max_bytes`
//!   bytes (65535, the 802.11n maximum A-MPDU length) and `max_airtime` of PPDU (4 ms
//!   in both drivers), and only frames inside the `ba_window` (at most 64) that starts at
//!   the receiver's oldest missing frame.
//!
//! ## Airtime (802.11n HT-mixed format, 5 GHz OFDM timing)
//! - Subframe bytes: `pad4(4 delimiter + 26 QoS MAC header + 8 LLC/SNAP + IP packet + 4 FCS)`
//!   = `pad4(size + 42)` (no encryption).
//! - PPDU ([`PhyMode::ppdu_time`]): HT-mixed preamble (36 µs with one spatial stream, 40
//!   µs with two, 48 µs with three or four) + `⌈(16 + 8·bytes + 6) / N_DBPS⌉` symbols of
//!   4 µs (3.6 µs with the 400 ns guard interval, rounded up to whole 4-µs units as the
//!   standard's TXTIME does); `N_DBPS` from the MCS table ([`HT_NDBPS`]) times the
//!   streams. A fixed `phy_rate` uses `N_DBPS = phy_rate × 4 µs` and the BSS's preamble.
//! - After the PPDU: SIFS (16 µs) + a 32-byte compressed block ack at the legacy
//!   `control_rate` (default 24 Mbit/s: 20 µs legacy preamble + 3 symbols = 32 µs).
//! - Before a transmission: AIFS = SIFS + AIFSN × slot (slot 9 µs) and a backoff of
//!   `b` slots, `b` uniform in `0..=CW`, with the parameters of the access category
//!   (below). Per-node access parameters and per-direction PHY rates let airtime
//!   unfairness emerge.
//!
//! ## Access categories (WMM)
//! With `wmm` each packet goes to the access category (AC) of its DSCP as Linux 3.14's
//! mac80211 picks it ([`ac_of_dscp`]: user priority = DSCP >> 3, then
//! `ieee802_1d_to_ac`); without it everything is best effort. Every AC of every
//! interface has its own driver queue (with its own `driver_queue` / `driver_wake`
//! marks: ath9k's per-AC `txq_max_pending`, iwlwifi's per-AC ring), hardware queue,
//! sequence numbers and block-ack state, and contends on its own with its own AIFSN,
//! CWmin, CWmax and TXOP limit (an A-MPDU's PPDU + SIFS + block ack stays within a
//! non-zero TXOP limit). Two ACs of one node that end their count in the same slot
//! collide internally: the higher AC transmits, the lower one doubles its CW and draws
//! again without losing a frame. The qdisc above is one queue for the interface: a
//! packet taken from it for a stopped AC waits as the requeued packet and blocks the
//! qdisc until that AC wakes (Linux's `dev_requeue_skb`). VO frames are not aggregated
//! where the rate control starts no block-ack session for them (`aggregate_vo`).
//!
//! ## Contention (event-driven DCF/EDCA)
//! Slots are counted on a grid that starts SIFS after the medium went idle. A node with
//! an aggregate ready draws a backoff when it becomes ready (or after each of its own
//! transmissions) and counts it from the end of its AIFS; a node that becomes ready after
//! the medium has been idle for longer than its AIFS plus that backoff transmits at the
//! next slot boundary (immediate access). The node whose count ends first transmits; the
//! others freeze their remaining count and resume after the next AIFS. Two nodes ending
//! in the same slot collide: both PPDUs are lost entirely, each doubles its CW
//! (`2·CW + 1`, capped at CWmax); a success resets CW to CWmin. One A-MPDU per channel
//! access (also within a non-zero TXOP limit: no bursts of several A-MPDUs).
//!
//! ## Errors and retransmission
//! Each subframe is lost independently with the receiving station's frame error rate
//! `fer`. Lost subframes (and all subframes of a collided PPDU) return to the head of
//! their station's driver queue in sequence order and go out in a later aggregate;
//! after `retry_limit` retransmissions (ath9k's `ATH_MAX_SW_RETRIES` 30; iwldvm's
//! `IWLAGN_DEFAULT_TX_RETRY` 15) a frame is dropped (reason `lower_layer`). The receiver hands frames up in sequence
//! order (802.11n block-ack reordering); a dropped frame releases the frames behind it,
//! as the block-ack-request that follows a give-up does.
//!
//! ## Efficiency formula (saturated single sender, no errors, no collisions)
//! With `n` subframes of `s`-byte IP packets per A-MPDU at PHY rate `R`:
//! `T_data = preamble + 4 µs · ⌈(22 + 8·n·pad4(s + 42)) / (R · 4 µs)⌉`,
//! `T_cycle = T_data + SIFS + T_BA + SIFS + AIFSN·slot + (CWmin/2)·slot`, and the IP-layer
//! throughput is `8·n·s / T_cycle` ([`saturated_throughput`]). With the defaults,
//! 1500-byte packets and 130 Mbit/s this is 32 × 1500 × 8 bit / 3242.5 µs = 118.4 Mbit/s
//! (91 % of the PHY rate).
//!
//! ## Simplifications (each a deliberate deviation)
//! - One MCS per direction for the whole run (a key, or the link budget of
//!   [`super::wifi_budget`]; no rate control such as minstrel reacting to losses); no RTS/CTS, no EIFS
//!   after a collision, no capture effect, no beacons or management traffic.
//! - Post-backoff: a node that runs dry after a transmission draws its next backoff when
//!   it next has an aggregate ready, counted as if it had started at the end of the busy
//!   period (the timing of counting it down while idle; only the draw is later).
//! - Received frames are handed up when the PPDU ends (the block ack follows 48 µs
//!   later); a collision's airtime ends when the longer PPDU ends, plus SIFS and the
//!   block-ack time as an ack timeout.
//! - Frames are delivered to one next hop per station; the station's interface has a
//!   single peer (the AP).
//! - One TID per AC and station (the two TIDs of an AC share its queue and sequence
//!   space); a TXOP carries one A-MPDU, not a burst; an internal collision costs the
//!   lower AC a doubled window but no retry count.

use super::{timer, Link, LinkStats, Lower};
use crate::event::{Event, EventQueue};
use crate::packet::{LinkId, Packet};
use crate::qdisc::{DropReason, QdiscOut};
use crate::rng::Rng;
use crate::time::{Rate, SimDuration, SimTime};
use std::collections::VecDeque;

/// Bytes an IP packet occupies in an A-MPDU beyond its own size: 4 delimiter + 26 QoS
/// data header + 8 LLC/SNAP + 4 FCS.
pub const SUBFRAME_OVERHEAD: u32 = 42;
/// 802.11n block-ack window (frames).
pub const BA_WINDOW: u64 = 64;
/// OFDM symbol with the 800 ns guard interval.
pub const SYMBOL: SimDuration = SimDuration::from_nanos(4_000);
/// SERVICE (16) + tail (6) bits around the PSDU.
const SERVICE_TAIL_BITS: u64 = 22;
/// Compressed block ack frame length in bytes.
const BLOCK_ACK_BYTES: u64 = 32;
/// Legacy (non-HT) preamble + SIGNAL.
const LEGACY_PREAMBLE: SimDuration = SimDuration::from_micros(20);

/// Bytes of one A-MPDU subframe carrying an IP packet of `size` bytes (padded to 4).
pub fn subframe_bytes(size: u32) -> u64 {
    ((size + SUBFRAME_OVERHEAD + 3) & !3) as u64
}

/// Data bits per OFDM symbol of one spatial stream for HT MCS 0–7 (IEEE 802.11-2012
/// Tables 20-30 and 20-34: BPSK 1/2, QPSK 1/2, QPSK 3/4, 16-QAM 1/2, 16-QAM 3/4,
/// 64-QAM 2/3, 64-QAM 3/4, 64-QAM 5/6) at 20 MHz (52 data subcarriers) and 40 MHz (108).
pub const HT_NDBPS: [[u32; 8]; 2] = [
    [26, 52, 78, 104, 156, 208, 234, 260],
    [54, 108, 162, 216, 324, 432, 486, 540],
];

/// Highest equal-modulation HT MCS index for `streams` spatial streams (MCS 0–31).
pub fn max_mcs(streams: u32) -> u32 {
    8 * streams - 1
}

/// How one transmitter sends to one receiver: data bits per symbol, guard interval and
/// the preamble before the data symbols.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PhyMode {
    /// Data bits per OFDM symbol (all spatial streams).
    pub ndbps: u32,
    /// 400 ns short guard interval (3.6 µs symbols) instead of 800 ns (4 µs).
    pub short_gi: bool,
    /// HT-mixed preamble: L-STF 8 + L-LTF 8 + L-SIG 4 + HT-SIG 8 + HT-STF 4 µs and a
    /// 4-µs HT-LTF for each of 1, 2, 4, 4 LTFs with 1 to 4 spatial streams (IEEE
    /// 802.11-2012 20.3.9.4.6, Table 20-13): 36, 40, 48, 48 µs.
    pub preamble: SimDuration,
}

impl PhyMode {
    /// HT MCS `mcs` (0–31, `mcs / 8 + 1` spatial streams) at `width_mhz` (20 or 40).
    pub fn ht(mcs: u32, width_mhz: u32, short_gi: bool) -> PhyMode {
        let streams = mcs / 8 + 1;
        let w = usize::from(width_mhz == 40);
        PhyMode {
            ndbps: HT_NDBPS[w][(mcs % 8) as usize] * streams,
            short_gi,
            preamble: SimDuration::from_micros(32 + 4 * [1, 2, 4, 4][(streams - 1) as usize]),
        }
    }
    /// A given PHY rate with 4-µs symbols and the given preamble (the `phy_rate` key).
    pub fn from_rate(rate: Rate, preamble: SimDuration) -> PhyMode {
        PhyMode {
            ndbps: (rate.bps() as u128 * SYMBOL.as_nanos() as u128 / 1_000_000_000).max(1) as u32,
            short_gi: false,
            preamble,
        }
    }
    /// The PHY data rate: N_DBPS per symbol time.
    pub fn rate(&self) -> Rate {
        let sym_ns: u64 = if self.short_gi { 3_600 } else { 4_000 };
        Rate::from_bps(self.ndbps as u64 * 1_000_000_000 / sym_ns)
    }
    /// Duration of a PPDU carrying `bytes` of PSDU: `N_SYM = ⌈(16 + 8·bytes + 6) /
    /// N_DBPS⌉` symbols; with the short guard interval the data field lasts
    /// `4 µs · ⌈3.6 · N_SYM / 4⌉` (IEEE 802.11-2012 Equation 20-91).
    pub fn ppdu_time(&self, bytes: u64) -> SimDuration {
        let nsym = (SERVICE_TAIL_BITS + 8 * bytes).div_ceil(self.ndbps as u64);
        let data = if self.short_gi {
            SYMBOL * (9 * nsym).div_ceil(10)
        } else {
            SYMBOL * nsym
        };
        self.preamble + data
    }
}

/// PHY timing shared by a BSS.
#[derive(Clone, Debug, PartialEq)]
pub struct WifiPhy {
    pub slot: SimDuration,
    pub sifs: SimDuration,
    /// HT-mixed preamble and headers before the data symbols.
    pub preamble: SimDuration,
    /// Legacy rate of the block ack.
    pub control_rate: Rate,
}

impl WifiPhy {
    /// Duration of a PPDU carrying `bytes` of PSDU at `rate` with 4-µs symbols and this
    /// BSS's `preamble`.
    pub fn ppdu_time(&self, bytes: u64, rate: Rate) -> SimDuration {
        PhyMode::from_rate(rate, self.preamble).ppdu_time(bytes)
    }
    /// Duration of the block ack at the control rate.
    pub fn block_ack_time(&self) -> SimDuration {
        let ndbps = (self.control_rate.bps() as u128 * SYMBOL.as_nanos() as u128 / 1_000_000_000)
            .max(1) as u64;
        LEGACY_PREAMBLE + SYMBOL * (SERVICE_TAIL_BITS + 8 * BLOCK_ACK_BYTES).div_ceil(ndbps)
    }
}

/// The documented efficiency formula (module doc): IP-layer bit/s of one saturated
/// sender with `n`-frame aggregates of `size`-byte packets, no errors or collisions.
pub fn saturated_throughput(
    phy: &WifiPhy,
    rate: Rate,
    n: u64,
    size: u32,
    aifsn: u32,
    cwmin: u32,
) -> f64 {
    let data = phy.ppdu_time(n * subframe_bytes(size), rate);
    let cycle = data.as_secs_f64()
        + phy.sifs.as_secs_f64()
        + phy.block_ack_time().as_secs_f64()
        + phy.sifs.as_secs_f64()
        + aifsn as f64 * phy.slot.as_secs_f64()
        + cwmin as f64 / 2.0 * phy.slot.as_secs_f64();
    (n * size as u64 * 8) as f64 / cycle
}

/// Access categories in mac80211's queue order (`IEEE80211_AC_VO` = 0 … `AC_BK` = 3).
pub const AC_VO: usize = 0;
pub const AC_VI: usize = 1;
pub const AC_BE: usize = 2;
pub const AC_BK: usize = 3;
/// Names of the access categories, index = AC (the keys of `ac` / `ap_ac`).
pub const AC_NAMES: [&str; 4] = ["vo", "vi", "be", "bk"];

/// 802.1D user priority → access category: mac80211's `ieee802_1d_to_ac` (IEEE
/// 802.11-2012 Table 9-1): UP 1, 2 → BK; 0, 3 → BE; 4, 5 → VI; 6, 7 → VO.
pub const UP_TO_AC: [usize; 8] = [AC_BE, AC_BK, AC_BK, AC_BE, AC_VI, AC_VI, AC_VO, AC_VO];

/// The access category of a packet with this DSCP on a WMM link: Linux 3.14's
/// `cfg80211_classify8021d` takes the user priority from the top three bits of the DS
/// field (`(tos & 0xfc) >> 5`, i.e. DSCP >> 3, the class selector), then
/// [`UP_TO_AC`]. So CS1 (8) → UP 1 → BK; CS5 (40) and EF (46) → UP 5 → VI; CS0 → BE.
#[inline]
pub fn ac_of_dscp(dscp: u8) -> usize {
    UP_TO_AC[((dscp & 0x3f) >> 3) as usize]
}

/// Resolved parameters of one WiFi interface.
#[derive(Clone, Debug, PartialEq)]
pub struct WifiPortParams {
    /// Index of the BSS (medium) in the plan.
    pub medium: u32,
    /// PHY mode towards each peer (index = peer index of the link).
    pub peer_mode: Vec<PhyMode>,
    /// Subframe error rate towards each peer.
    pub peer_fer: Vec<f64>,
    /// Frames in one access category's driver queue at which it stops (mac80211 queue stop).
    pub driver_queue: u32,
    /// Frames at or below which a stopped access category wakes again.
    pub driver_wake: u32,
    /// Block-ack window of the receivers (frames, at most 64).
    pub ba_window: u64,
    pub hw_aggregates: u32,
    pub max_frames: u32,
    pub max_bytes: u64,
    pub max_airtime: SimDuration,
    pub retry_limit: u32,
    pub phy: WifiPhy,
    /// WMM: packets go to the access category of their DSCP ([`ac_of_dscp`]); without
    /// it every packet is best effort.
    pub wmm: bool,
    /// TXOP limit of each access category (index = AC; zero: one frame exchange per
    /// access); an A-MPDU's PPDU + SIFS + block ack stays within it.
    pub txop: [SimDuration; 4],
    /// Whether voice frames are aggregated (a block-ack session on VO TIDs).
    pub aggregate_vo: bool,
}

/// EDCA access parameters of one access category of one node.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Access {
    pub aifsn: u32,
    pub cwmin: u32,
    pub cwmax: u32,
    /// TXOP limit (zero: one frame exchange per channel access).
    pub txop: SimDuration,
}

/// Resolved parameters of a BSS: its member interfaces and their access parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct MediumParams {
    pub name: String,
    /// `(link, access per AC)`; the first member is the AP's interface. Each access
    /// category of each member contends on its own (EDCA).
    pub members: Vec<(LinkId, [Access; 4])>,
    pub phy: WifiPhy,
}

#[derive(Copy, Clone, Debug)]
struct Mpdu {
    pkt: Packet,
    seq: u64,
    tries: u32,
    /// When the driver took it from the qdisc.
    at: SimTime,
}

#[derive(Copy, Clone, Debug)]
struct Agg {
    peer: u32,
    n: u32,
    airtime: SimDuration,
}

#[derive(Debug)]
enum Slot {
    Empty,
    Got(Packet),
    Gone,
}

/// Receiver-side reorder buffer of one (transmitter, receiver, TID).
#[derive(Debug, Default)]
struct Reorder {
    /// Oldest sequence number not yet handed up or given up.
    next: u64,
    buf: VecDeque<Slot>,
    held: usize,
}

impl Reorder {
    /// Frame `seq` arrived (`Some`) or was given up (`None`); hands up every frame that is
    /// now in order.
    fn put(&mut self, seq: u64, pkt: Option<Packet>, mut up: impl FnMut(Packet)) {
        debug_assert!(
            seq >= self.next,
            "frame {seq} below the window start {}",
            self.next
        );
        let idx = (seq - self.next) as usize;
        if self.buf.len() <= idx {
            self.buf.resize_with(idx + 1, || Slot::Empty);
        }
        debug_assert!(matches!(self.buf[idx], Slot::Empty), "frame {seq} twice");
        self.buf[idx] = match pkt {
            Some(p) => {
                self.held += 1;
                Slot::Got(p)
            }
            None => Slot::Gone,
        };
        while let Some(front) = self.buf.front() {
            if matches!(front, Slot::Empty) {
                break;
            }
            if let Some(Slot::Got(p)) = self.buf.pop_front() {
                self.held -= 1;
                up(p);
            }
            self.next += 1;
        }
    }
}

/// Counters of one WiFi interface.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WifiStats {
    /// Channel accesses won (PPDUs sent, including collided ones).
    pub txops: u64,
    /// PPDUs lost to a collision.
    pub collisions: u64,
    /// Access categories of this interface that lost an internal collision to a
    /// higher one (their backoff restarted with a doubled window).
    pub internal_collisions: u64,
    /// Subframes sent, first transmissions and retries.
    pub subframes: u64,
    /// Subframe retransmissions.
    pub retries: u64,
    /// Frames delivered (acked).
    pub acked: u64,
    /// Frames dropped after the retry limit.
    pub dropped: u64,
    /// Most frames held in the driver + hardware queues at once.
    pub max_pending: u32,
    /// Sum over delivered frames (after warm-up) of the time from the driver taking
    /// the frame from the qdisc to the end of the PPDU that delivered it (ns).
    pub below_qdisc_ns: u128,
    /// Frames counted in `below_qdisc_ns`.
    pub below_qdisc_n: u64,
    /// Times the driver stopped the qdisc.
    pub stops: u64,
    /// Channel accesses won per access category (VO, VI, BE, BK).
    pub ac_txops: [u64; 4],
}

/// The driver and hardware queues of one access category.
#[derive(Debug)]
struct AcQueue {
    /// Per-peer driver (TID) queues, each sorted by sequence number.
    sw: Vec<VecDeque<Mpdu>>,
    next_seq: Vec<u64>,
    rx: Vec<Reorder>,
    rr: usize,
    hw_frames: VecDeque<Mpdu>,
    hw_aggs: VecDeque<Agg>,
    /// Frames in `sw` + `hw_frames`.
    pending: u32,
    /// This queue is stopped (until `pending <= driver_wake`).
    stopped: bool,
    /// Subframes per A-MPDU and PPDU duration limit of this AC.
    max_frames: u32,
    max_airtime: SimDuration,
}

impl AcQueue {
    fn new(n: usize, max_frames: u32, max_airtime: SimDuration, cap: usize) -> Self {
        AcQueue {
            sw: (0..n).map(|_| VecDeque::new()).collect(),
            next_seq: vec![0; n],
            rx: (0..n).map(|_| Reorder::default()).collect(),
            rr: 0,
            hw_frames: VecDeque::with_capacity(2 * max_frames as usize),
            hw_aggs: VecDeque::with_capacity(cap),
            pending: 0,
            stopped: false,
            max_frames,
            max_airtime,
        }
    }
}

/// One WiFi interface's driver, hardware queues (one per access category) and the
/// reorder state of its receivers.
#[derive(Debug)]
pub struct WifiPort {
    pub p: WifiPortParams,
    acs: Vec<AcQueue>,
    /// A packet taken from the qdisc whose access category was stopped: it blocks the
    /// qdisc until that category wakes (the requeue of Linux's `sch_direct_xmit`).
    requeued: Option<(Packet, usize, SimTime)>,
    /// Bit `a` set: `acs[a].hw_aggs` is not empty ([`ready_mask`](Self::ready_mask), which
    /// the link asks before and after every packet it hands over); kept where aggregates
    /// enter (`fill_hw`) and leave (`complete_head`).
    ready: u8,
    scratch: Vec<Mpdu>,
    pub stats: WifiStats,
}

impl WifiPort {
    pub fn new(p: WifiPortParams) -> Self {
        let n = p.peer_mode.len();
        let acs = (0..4)
            .map(|a| {
                let frames = if a == AC_VO && p.wmm && !p.aggregate_vo {
                    1
                } else {
                    p.max_frames
                };
                let air = if p.txop[a] > SimDuration::ZERO {
                    let exch = p.phy.sifs + p.phy.block_ack_time();
                    p.max_airtime.min(
                        p.txop[a]
                            .saturating_sub(exch)
                            .max(SimDuration::from_micros(1)),
                    )
                } else {
                    p.max_airtime
                };
                AcQueue::new(n, frames, air, p.hw_aggregates as usize)
            })
            .collect();
        WifiPort {
            acs,
            requeued: None,
            ready: 0,
            scratch: Vec::with_capacity(p.max_frames as usize),
            stats: WifiStats::default(),
            p,
        }
    }

    /// Frames in the driver and hardware queues (all access categories).
    pub fn pending(&self) -> u32 {
        self.acs.iter().map(|q| q.pending).sum()
    }

    /// Packets held anywhere in this port (driver, hardware, receivers' reorder buffers).
    pub fn held(&self) -> usize {
        self.pending() as usize
            + self.requeued.is_some() as usize
            + self
                .acs
                .iter()
                .flat_map(|q| q.rx.iter())
                .map(|r| r.held)
                .sum::<usize>()
    }

    /// The access category of a packet on this interface.
    #[inline]
    pub fn ac_of(&self, pkt: &Packet) -> usize {
        if self.p.wmm {
            ac_of_dscp(pkt.dscp)
        } else {
            AC_BE
        }
    }

    /// Whether the driver accepts another packet from the qdisc: not while a packet
    /// waits for its stopped access category; without WMM not while the (single)
    /// best-effort queue is stopped (from reaching `driver_queue` frames until it is
    /// back at `driver_wake`).
    #[inline]
    pub fn has_room(&self) -> bool {
        self.requeued.is_none() && (self.p.wmm || !self.acs[AC_BE].stopped)
    }

    /// Bit `a` set: access category `a` has an aggregate waiting in hardware (contends).
    #[inline]
    pub fn ready_mask(&self) -> u8 {
        debug_assert_eq!(self.ready, self.scan_ready_mask());
        self.ready
    }

    /// [`ready_mask`](Self::ready_mask) from the queues themselves.
    fn scan_ready_mask(&self) -> u8 {
        let mut m = 0;
        for (a, q) in self.acs.iter().enumerate() {
            if !q.hw_aggs.is_empty() {
                m |= 1 << a;
            }
        }
        m
    }

    /// Whether any aggregate waits in hardware (the node contends).
    #[inline]
    pub fn ready(&self) -> bool {
        self.ready_mask() != 0
    }

    /// Airtime of the PPDU at the head of `ac`'s hardware queue.
    pub fn head_airtime(&self, ac: usize) -> SimDuration {
        self.acs[ac]
            .hw_aggs
            .front()
            .map(|a| a.airtime)
            .unwrap_or(SimDuration::ZERO)
    }

    /// A packet from the qdisc enters the driver queue of `peer` in its access
    /// category, or waits as the requeued packet if that category is stopped.
    #[inline]
    pub fn accept(&mut self, pkt: Packet, peer: usize, now: SimTime) {
        let ac = self.ac_of(&pkt);
        if self.p.wmm && self.acs[ac].stopped {
            debug_assert!(self.requeued.is_none());
            self.requeued = Some((pkt, peer, now));
            return;
        }
        self.enqueue(ac, pkt, peer, now);
    }

    fn enqueue(&mut self, ac: usize, pkt: Packet, peer: usize, now: SimTime) {
        let q = &mut self.acs[ac];
        let seq = q.next_seq[peer];
        q.next_seq[peer] += 1;
        q.sw[peer].push_back(Mpdu {
            pkt,
            seq,
            tries: 0,
            at: now,
        });
        q.pending += 1;
        if q.pending >= self.p.driver_queue && !q.stopped {
            q.stopped = true;
            self.stats.stops += 1;
        }
        let total = self.pending();
        self.stats.max_pending = self.stats.max_pending.max(total);
    }

    /// Builds aggregates into each access category's hardware queue while it has room.
    pub fn fill_hw(&mut self) {
        let (ba_window, max_bytes) = (self.p.ba_window, self.p.max_bytes);
        for (a, q) in self.acs.iter_mut().enumerate() {
            let np = q.sw.len();
            while q.hw_aggs.len() < self.p.hw_aggregates as usize {
                let mut chosen = None;
                for k in 0..np {
                    // (q.rr + k) % np without the division: rr < np and k < np
                    let peer = if q.rr + k >= np {
                        q.rr + k - np
                    } else {
                        q.rr + k
                    };
                    if let Some(h) = q.sw[peer].front() {
                        if h.seq < q.rx[peer].next + ba_window {
                            chosen = Some(peer);
                            break;
                        }
                    }
                }
                let Some(peer) = chosen else { break };
                q.rr = (peer + 1) % np;
                let mode = self.p.peer_mode[peer];
                let limit = q.rx[peer].next + ba_window;
                let (mut n, mut bytes) = (0u32, 0u64);
                while let Some(h) = q.sw[peer].front() {
                    if n >= q.max_frames || h.seq >= limit {
                        break;
                    }
                    let b = bytes + subframe_bytes(h.pkt.size);
                    if n > 0 && (b > max_bytes || mode.ppdu_time(b) > q.max_airtime) {
                        break;
                    }
                    bytes = b;
                    n += 1;
                    let m = q.sw[peer].pop_front().expect("head");
                    q.hw_frames.push_back(m);
                }
                q.hw_aggs.push_back(Agg {
                    peer: peer as u32,
                    n,
                    airtime: mode.ppdu_time(bytes),
                });
                self.ready |= 1 << a;
            }
        }
    }

    /// The head aggregate of `ac`'s PPDU ended: if `ok` (no collision) each subframe
    /// survives with probability `1 - fer`; survivors go through the reorder buffer to
    /// `wire` (arriving at `arrive_at`), failures back to the driver queue or, past the
    /// retry limit, to `out.drops`.
    #[allow(clippy::too_many_arguments)]
    fn complete_head(
        &mut self,
        ac: usize,
        ok: bool,
        now: SimTime,
        arrive_at: SimTime,
        rng: &mut Rng,
        wire: &mut VecDeque<(SimTime, Packet)>,
        out: &mut QdiscOut,
        stats: &mut LinkStats,
    ) {
        let q = &mut self.acs[ac];
        let agg = q
            .hw_aggs
            .pop_front()
            .expect("completion without an aggregate");
        if q.hw_aggs.is_empty() {
            self.ready &= !(1 << ac);
        }
        let peer = agg.peer as usize;
        let fer = self.p.peer_fer[peer];
        let warm = now >= stats.warmup;
        for _ in 0..agg.n {
            let mut m = q.hw_frames.pop_front().expect("aggregate frames");
            self.stats.subframes += 1;
            if m.tries > 0 {
                self.stats.retries += 1;
            }
            let good = ok && !rng.bernoulli(fer);
            if good {
                q.pending -= 1;
                self.stats.acked += 1;
                if warm {
                    stats.tx_pkts += 1;
                    stats.tx_bytes += m.pkt.size as u64;
                    self.stats.below_qdisc_ns += (now - m.at).as_nanos() as u128;
                    self.stats.below_qdisc_n += 1;
                }
                stats.series.tx(now, m.pkt.size);
                q.rx[peer].put(m.seq, Some(m.pkt), |p| wire.push_back((arrive_at, p)));
            } else {
                m.tries += 1;
                if m.tries > self.p.retry_limit {
                    q.pending -= 1;
                    self.stats.dropped += 1;
                    stats.lower_drops += 1;
                    out.drops.push((m.pkt, DropReason::LowerLayer));
                    q.rx[peer].put(m.seq, None, |p| wire.push_back((arrive_at, p)));
                } else {
                    self.scratch.push(m);
                }
            }
        }
        // Failed frames go back in sequence order ahead of newer frames (the driver
        // queue stays sorted: retries are older than anything not yet aggregated).
        let sw = &mut q.sw[peer];
        while let Some(m) = self.scratch.pop() {
            let pos = sw.iter().position(|x| x.seq > m.seq).unwrap_or(sw.len());
            sw.insert(pos, m);
        }
        if q.stopped && q.pending <= self.p.driver_wake {
            q.stopped = false;
            // the packet that waited for this category goes in; the qdisc runs again
            if self.requeued.is_some_and(|(p, _, _)| self.ac_of(&p) == ac) {
                let (p, peer, at) = self.requeued.take().expect("requeued");
                self.enqueue(ac, p, peer, at);
            }
        }
    }
}

#[derive(Copy, Clone, Debug)]
struct MemberState {
    cw: u32,
    /// Remaining backoff slots; `None` = not contending.
    backoff: Option<u32>,
    /// Grid slot from which this contender counts its backoff.
    start: u64,
}

/// The shared medium of one BSS: who transmits when. The contenders are the access
/// categories of the members: contender `4 · member + ac`.
#[derive(Debug)]
pub struct WifiMedium {
    pub p: MediumParams,
    /// Link id that carries this medium's timers.
    anchor: LinkId,
    st: Vec<MemberState>,
    /// End of the last busy period: slots are counted from `idle_from + SIFS`.
    idle_from: SimTime,
    /// Instant of the scheduled access timer (`NEVER` if none).
    access_at: SimTime,
    in_txop: bool,
    collided: bool,
    /// Contenders transmitting in the current busy period.
    tx: Vec<usize>,
    ba: SimDuration,
    rng: Rng,
    /// Channel accesses and collisions over the whole BSS.
    pub txops: u64,
    pub collisions: u64,
}

impl WifiMedium {
    pub fn new(p: MediumParams, rng: Rng) -> Self {
        let st = p
            .members
            .iter()
            .flat_map(|(_, acc)| acc.iter())
            .map(|a| MemberState {
                cw: a.cwmin,
                backoff: None,
                start: 0,
            })
            .collect();
        let ba = p.phy.block_ack_time();
        WifiMedium {
            anchor: p.members[0].0,
            st,
            idle_from: SimTime::ZERO,
            access_at: SimTime::NEVER,
            in_txop: false,
            collided: false,
            tx: Vec::new(),
            ba,
            rng,
            txops: 0,
            collisions: 0,
            p,
        }
    }

    fn slot_time(&self, k: u64) -> SimTime {
        self.idle_from + self.p.phy.sifs + self.p.phy.slot * k
    }

    /// Lets access categories that have an aggregate ready join the contention and
    /// schedules the next access. Call after anything may have made one ready.
    pub fn poke(&mut self, links: &mut [Link], now: SimTime, ev: &mut EventQueue) {
        let origin = self.idle_from + self.p.phy.sifs;
        for (i, (l, acc)) in self.p.members.iter().enumerate() {
            let mask = links[*l as usize].wifi().map_or(0, |w| w.ready_mask());
            if mask == 0 {
                continue;
            }
            for (ac, a) in acc.iter().enumerate() {
                let c = 4 * i + ac;
                if mask & (1 << ac) == 0 || (self.in_txop && self.tx.contains(&c)) {
                    continue; // a transmitter draws its next backoff when its PPDU is over
                }
                let s = &mut self.st[c];
                if s.backoff.is_none() {
                    // The backoff counts from the AIFS after the medium went idle, as a
                    // post-backoff would have; if that count has already run out (the
                    // medium has been idle longer), the category transmits at the next
                    // slot boundary (the standard's immediate access after an idle AIFS).
                    let b = self.rng.below(s.cw as u64 + 1);
                    let now_slot = if now <= origin {
                        0
                    } else {
                        (now - origin)
                            .as_nanos()
                            .div_ceil(self.p.phy.slot.as_nanos())
                    };
                    let aifs = a.aifsn as u64;
                    if aifs + b >= now_slot {
                        s.start = aifs;
                        s.backoff = Some(b as u32);
                    } else {
                        s.start = now_slot;
                        s.backoff = Some(0);
                    }
                }
            }
        }
        if !self.in_txop {
            self.schedule(ev);
        }
    }

    fn best_slot(&self) -> Option<u64> {
        self.st
            .iter()
            .filter_map(|s| s.backoff.map(|b| s.start + b as u64))
            .min()
    }

    fn schedule(&mut self, ev: &mut EventQueue) {
        if let Some(k) = self.best_slot() {
            let at = self.slot_time(k);
            if at < self.access_at {
                self.access_at = at;
                ev.push(
                    at,
                    Event::LinkTimer {
                        link: self.anchor,
                        kind: timer::MEDIUM_ACCESS,
                    },
                );
            }
        }
    }

    /// The access timer fired: the contender(s) whose backoff ends now transmit. Two
    /// categories of one node ending in the same slot collide internally: the higher
    /// one (lower AC index) transmits, the other doubles its window and draws a new
    /// backoff as after a collision, without losing a frame (802.11-2012 9.19.2.3).
    pub fn on_access(&mut self, links: &mut [Link], now: SimTime, ev: &mut EventQueue) {
        if now != self.access_at || self.in_txop {
            return; // stale
        }
        self.access_at = SimTime::NEVER;
        let Some(k) = self.best_slot() else { return };
        debug_assert_eq!(self.slot_time(k), now);
        self.tx.clear();
        for c in 0..self.st.len() {
            let s = &mut self.st[c];
            if let Some(b) = s.backoff {
                if s.start + b as u64 == k {
                    s.backoff = None;
                    let member = c / 4;
                    if self.tx.last().is_some_and(|&t| t / 4 == member) {
                        // a higher category of this node already won the slot
                        let a = self.p.members[member].1[c % 4];
                        s.cw = (2 * s.cw + 1).min(a.cwmax);
                        let l = self.p.members[member].0 as usize;
                        if let Some(w) = links[l].wifi_mut() {
                            w.stats.internal_collisions += 1;
                        }
                    } else {
                        self.tx.push(c);
                    }
                } else {
                    // freeze: the idle slots it counted are gone from its backoff
                    // (a contender still in its AIFS at slot k has counted nothing)
                    let counted = k.saturating_sub(s.start) as u32;
                    debug_assert!(s.start + b as u64 > k);
                    s.backoff = Some(b - counted);
                }
            }
        }
        self.collided = self.tx.len() > 1;
        self.in_txop = true;
        self.txops += 1;
        if self.collided {
            self.collisions += 1;
        }
        let mut longest = SimDuration::ZERO;
        for &c in &self.tx {
            let link = &mut links[self.p.members[c / 4].0 as usize];
            let warm = now >= link.stats.warmup;
            let w = link.wifi_mut().expect("wifi member");
            let air = w.head_airtime(c % 4);
            w.stats.txops += 1;
            w.stats.ac_txops[c % 4] += 1;
            if self.collided {
                w.stats.collisions += 1;
            }
            longest = longest.max(air);
            if warm {
                link.stats.busy += air + self.p.phy.sifs + self.ba;
            }
        }
        let data_end = now + longest;
        // the medium is busy until the block ack (or the ack timeout) is over
        self.idle_from = data_end + self.p.phy.sifs + self.ba;
        ev.push(
            data_end,
            Event::LinkTimer {
                link: self.anchor,
                kind: timer::MEDIUM_END,
            },
        );
    }

    /// The PPDU(s) ended: settle outcomes, refill the transmitters, contend again.
    pub fn on_end(&mut self, links: &mut [Link], now: SimTime, ev: &mut EventQueue) {
        debug_assert!(self.in_txop);
        self.in_txop = false;
        for t in 0..self.tx.len() {
            let c = self.tx[t];
            let (l, acc) = self.p.members[c / 4];
            let a = acc[c % 4];
            links[l as usize].wifi_complete(c % 4, !self.collided, now, ev);
            let s = &mut self.st[c];
            s.cw = if self.collided {
                (2 * s.cw + 1).min(a.cwmax)
            } else {
                a.cwmin
            };
        }
        // everyone who still counts resumes after AIFS from the end of this busy period
        for (i, (_, acc)) in self.p.members.iter().enumerate() {
            for (ac, a) in acc.iter().enumerate() {
                self.st[4 * i + ac].start = a.aifsn as u64;
            }
        }
        self.poke(links, now, ev);
    }

    /// Member links (for draining their drops).
    pub fn member_links(&self) -> impl Iterator<Item = LinkId> + '_ {
        self.p.members.iter().map(|(l, _)| *l)
    }
}

impl Link {
    /// This link's WiFi port, if it is a WiFi interface.
    pub fn wifi(&self) -> Option<&WifiPort> {
        match &self.lower {
            Lower::Wifi(w) => Some(w),
            _ => None,
        }
    }
    pub fn wifi_mut(&mut self) -> Option<&mut WifiPort> {
        match &mut self.lower {
            Lower::Wifi(w) => Some(w),
            _ => None,
        }
    }

    /// The head aggregate's PPDU ended (see [`WifiPort::complete_head`]); then refills
    /// the driver from the qdisc.
    fn wifi_complete(&mut self, ac: usize, ok: bool, now: SimTime, ev: &mut EventQueue) {
        let arrive_at = now + self.p.delay;
        let was_empty = self.wire.is_empty();
        let Lower::Wifi(w) = &mut self.lower else {
            unreachable!("wifi member without a wifi port")
        };
        w.complete_head(
            ac,
            ok,
            now,
            arrive_at,
            &mut self.rng,
            &mut self.wire,
            &mut self.out,
            &mut self.stats,
        );
        if was_empty {
            if let Some(&(at, _)) = self.wire.front() {
                ev.push(at, super::arrival_event(self.id, !self.p.peers.is_empty()));
            }
        }
        self.kick_lower(now, ev);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phy() -> WifiPhy {
        WifiPhy {
            slot: SimDuration::from_micros(9),
            sifs: SimDuration::from_micros(16),
            preamble: SimDuration::from_micros(40),
            control_rate: Rate::from_bps(24_000_000),
        }
    }

    #[test]
    fn airtime_by_hand() {
        let p = phy();
        assert_eq!(subframe_bytes(1500), 1544);
        assert_eq!(subframe_bytes(84), 128);
        // 32 x 1544 B at 130 Mbit/s: N_DBPS 520, ceil((22 + 395264)/520) = 761 symbols
        assert_eq!(
            p.ppdu_time(32 * 1544, Rate::from_bps(130_000_000)),
            SimDuration::from_micros(40 + 761 * 4)
        );
        // block ack: 20 us + ceil(278/96)=3 symbols
        assert_eq!(p.block_ack_time(), SimDuration::from_micros(32));
        let thr = saturated_throughput(&p, Rate::from_bps(130_000_000), 32, 1500, 3, 15);
        // 384000 bit / 3242.5 us
        assert!((thr - 384_000.0 / 3242.5e-6).abs() < 1.0, "{thr}");
    }

    #[test]
    fn reorder_hands_up_in_sequence_and_skips_given_up_frames() {
        let mut r = Reorder::default();
        let mut got = vec![];
        let pk = |u| Packet {
            uid: u,
            ..Default::default()
        };
        r.put(1, Some(pk(1)), |p| got.push(p.uid));
        r.put(2, Some(pk(2)), |p| got.push(p.uid));
        assert!(got.is_empty());
        assert_eq!(r.held, 2);
        r.put(0, Some(pk(0)), |p| got.push(p.uid));
        assert_eq!(got, vec![0, 1, 2]);
        r.put(4, Some(pk(4)), |p| got.push(p.uid));
        r.put(3, None, |p| got.push(p.uid));
        assert_eq!(got, vec![0, 1, 2, 4]);
        assert_eq!(r.next, 5);
        assert_eq!(r.held, 0);
    }

    fn port(max_frames: u32) -> WifiPort {
        let p = phy();
        WifiPort::new(WifiPortParams {
            medium: 0,
            peer_mode: vec![
                PhyMode::from_rate(Rate::from_bps(130_000_000), p.preamble),
                PhyMode::from_rate(Rate::from_bps(6_500_000), p.preamble),
            ],
            peer_fer: vec![0.0, 0.0],
            driver_queue: 123,
            driver_wake: 122,
            ba_window: 64,
            hw_aggregates: 2,
            max_frames,
            max_bytes: 65535,
            max_airtime: SimDuration::from_millis(4),
            retry_limit: 2,
            phy: phy(),
            wmm: false,
            txop: [SimDuration::ZERO; 4],
            aggregate_vo: true,
        })
    }

    #[test]
    fn aggregates_respect_frame_byte_airtime_limits_and_round_robin() {
        let mut w = port(32);
        for i in 0..100 {
            w.accept(
                Packet {
                    uid: i,
                    size: 1500,
                    ..Default::default()
                },
                0,
                SimTime::ZERO,
            );
            w.accept(
                Packet {
                    uid: 1000 + i,
                    size: 1500,
                    ..Default::default()
                },
                1,
                SimTime::ZERO,
            );
        }
        w.fill_hw();
        assert_eq!(w.acs[AC_BE].hw_aggs.len(), 2);
        // peer 0 at 130 Mbit/s: 32 frames (3.08 ms < 4 ms, 49408 B < 65535)
        assert_eq!(
            (w.acs[AC_BE].hw_aggs[0].peer, w.acs[AC_BE].hw_aggs[0].n),
            (0, 32)
        );
        // peer 1 at 6.5 Mbit/s (N_DBPS 26): 4 ms leaves (4000-40)/4 = 990 symbols; 2 subframes
        // of 1544 B need ceil(24726/26) = 951, 3 need 1427
        assert_eq!(
            (w.acs[AC_BE].hw_aggs[1].peer, w.acs[AC_BE].hw_aggs[1].n),
            (1, 2)
        );
        assert_eq!(w.pending(), 200);
        // with the airtime limit relaxed, the 65535-byte limit binds
        let mut w = port(64);
        for i in 0..100 {
            w.accept(
                Packet {
                    uid: i,
                    size: 1500,
                    ..Default::default()
                },
                0,
                SimTime::ZERO,
            );
        }
        w.acs[AC_BE].max_airtime = SimDuration::from_millis(10);
        w.fill_hw();
        assert_eq!(w.acs[AC_BE].hw_aggs[0].n, 42); // 42 x 1544 = 64848 <= 65535 < 43 x 1544
    }

    #[test]
    fn failed_subframes_retry_in_order_and_drop_after_the_limit() {
        let mut w = port(4);
        for i in 0..8 {
            w.accept(
                Packet {
                    uid: i,
                    size: 1500,
                    ..Default::default()
                },
                0,
                SimTime::ZERO,
            );
        }
        w.fill_hw(); // [0..4), [4..8)
        let mut rng = Rng::stream(1, "t", 0);
        let mut wire = VecDeque::new();
        let mut out = QdiscOut::new(false);
        let mut st = LinkStats::new(SimTime::ZERO, SimDuration::from_millis(100));
        let t = SimTime::ZERO;
        // collision: all four frames back to the driver queue, in order
        w.complete_head(AC_BE, false, t, t, &mut rng, &mut wire, &mut out, &mut st);
        assert!(wire.is_empty());
        let seqs: Vec<u64> = w.acs[AC_BE].sw[0].iter().map(|m| m.seq).collect();
        assert_eq!(seqs, vec![0, 1, 2, 3]);
        w.fill_hw(); // hw: [4..8), [0..4)
                     // the second aggregate (4..8) gets through but is held for 0..3
        w.complete_head(AC_BE, true, t, t, &mut rng, &mut wire, &mut out, &mut st);
        assert!(wire.is_empty());
        assert_eq!(w.held(), 8);
        // 0..4 fail twice more -> dropped (retry_limit 2), releasing 4..8
        w.complete_head(AC_BE, false, t, t, &mut rng, &mut wire, &mut out, &mut st);
        w.fill_hw();
        w.complete_head(AC_BE, false, t, t, &mut rng, &mut wire, &mut out, &mut st);
        assert_eq!(out.drops.len(), 4);
        assert_eq!(
            wire.iter().map(|(_, p)| p.uid).collect::<Vec<_>>(),
            vec![4, 5, 6, 7]
        );
        assert_eq!(w.held(), 0);
        assert_eq!(st.lower_drops, 4);
    }

    #[test]
    fn ht_mcs_table_rates_and_short_guard_interval() {
        // 802.11-2012 Table 20-30 (20 MHz, 800 ns): MCS 0 6.5, MCS 7 65, MCS 15 130 Mbit/s;
        // Table 20-34 (40 MHz): MCS 7 135 Mbit/s; 400 ns GI: 260 / 3.6 us = 72.2 Mbit/s
        assert_eq!(PhyMode::ht(0, 20, false).rate().bps(), 6_500_000);
        assert_eq!(PhyMode::ht(7, 20, false).rate().bps(), 65_000_000);
        assert_eq!(PhyMode::ht(15, 20, false).rate().bps(), 130_000_000);
        assert_eq!(PhyMode::ht(7, 40, false).rate().bps(), 135_000_000);
        assert_eq!(PhyMode::ht(7, 20, true).rate().bps(), 72_222_222);
        assert_eq!(PhyMode::ht(15, 40, true).rate().bps(), 300_000_000);
        // HT-mixed preamble: 36 us + 4 us per HT-LTF (one per stream)
        assert_eq!(
            PhyMode::ht(7, 20, false).preamble,
            SimDuration::from_micros(36)
        );
        assert_eq!(
            PhyMode::ht(15, 20, false).preamble,
            SimDuration::from_micros(40)
        );
        assert_eq!(max_mcs(1), 7);
        assert_eq!(max_mcs(2), 15);
        // 4 x 1544 B at MCS 15: N_SYM = ceil((22 + 49408) / 520) = 96; long GI: 40 + 384 us;
        // short GI: 40 + 4 x ceil(3.6 x 96 / 4 = 86.4) = 40 + 348 us
        assert_eq!(
            PhyMode::ht(15, 20, false).ppdu_time(4 * 1544),
            SimDuration::from_micros(424)
        );
        assert_eq!(
            PhyMode::ht(15, 20, true).ppdu_time(4 * 1544),
            SimDuration::from_micros(388)
        );
        // the fixed-rate mode reproduces WifiPhy::ppdu_time
        let p = phy();
        let r = Rate::from_bps(130_000_000);
        assert_eq!(
            PhyMode::from_rate(r, p.preamble).ppdu_time(32 * 1544),
            p.ppdu_time(32 * 1544, r)
        );
    }

    #[test]
    fn driver_stops_the_qdisc_and_wakes_it_at_the_low_mark() {
        // iwlwifi's ring: stopped at 224 frames, woken at 190 or fewer. At MCS 7 (65
        // Mbit/s, 36 us preamble) the 4 ms limit leaves floor((4000 - 36) / 4) = 991
        // symbols = 257660 bits: 20 subframes of 1544 B (247062 bits with SERVICE and
        // tail), not 21 (259414).
        let mut w = WifiPort::new(WifiPortParams {
            medium: 0,
            peer_mode: vec![PhyMode::ht(7, 20, false)],
            peer_fer: vec![0.0],
            driver_queue: 224,
            driver_wake: 190,
            ba_window: 64,
            hw_aggregates: 1,
            max_frames: 63,
            max_bytes: 65535,
            max_airtime: SimDuration::from_millis(4),
            retry_limit: 15,
            phy: phy(),
            wmm: false,
            txop: [SimDuration::ZERO; 4],
            aggregate_vo: true,
        });
        for i in 0..224 {
            assert!(w.has_room(), "room at {i}");
            w.accept(
                Packet {
                    uid: i,
                    size: 1500,
                    ..Default::default()
                },
                0,
                SimTime::ZERO,
            );
        }
        assert!(!w.has_room());
        assert_eq!(w.stats.stops, 1);
        w.fill_hw();
        assert_eq!(w.acs[AC_BE].hw_aggs[0].n, 20);
        let mut rng = Rng::stream(1, "t", 0);
        let mut wire = VecDeque::new();
        let mut out = QdiscOut::new(false);
        let mut st = LinkStats::new(SimTime::ZERO, SimDuration::from_millis(100));
        let t = SimTime::from_nanos(1000 * (4000));
        w.complete_head(AC_BE, true, t, t, &mut rng, &mut wire, &mut out, &mut st);
        // 204 frames left: below the stop mark but above the wake mark, still stopped
        assert_eq!(w.pending(), 204);
        assert!(!w.has_room());
        w.fill_hw();
        w.complete_head(AC_BE, true, t, t, &mut rng, &mut wire, &mut out, &mut st);
        assert_eq!(w.pending(), 184);
        assert!(w.has_room());
        assert_eq!(wire.len(), 40);
        // each delivered frame spent 4 ms below the qdisc
        assert_eq!(w.stats.below_qdisc_n, 40);
        assert_eq!(w.stats.below_qdisc_ns, 40 * 4_000_000);
    }

    /// An AP interface (link 0, peer: the station) and a station interface (link 1) on
    /// one medium, both with fifo qdiscs and no propagation delay.
    fn bss(ap: Access, sta: Access, retry_limit: u32) -> (Vec<Link>, WifiMedium) {
        bss_acs([ap; 4], [sta; 4], retry_limit, false)
    }

    /// As [`bss`] with per-AC access parameters and WMM on or off.
    fn bss_acs(
        ap: [Access; 4],
        sta: [Access; 4],
        retry_limit: u32,
        wmm: bool,
    ) -> (Vec<Link>, WifiMedium) {
        use crate::link::{LinkParams, LowerParams};
        use crate::qdisc::{BuildCtx, QdiscConfig};
        let mk = |id: u32, mode: PhyMode, driver_queue: u32, max_frames: u32| {
            let p = LinkParams {
                name: format!("l{id}"),
                from: id,
                to: 1 - id,
                peers: if id == 0 { vec![1] } else { vec![] },
                rate: mode.rate(),
                delay: SimDuration::ZERO,
                overhead: 14,
                mtu: 1500,
                device_queue: 1,
                loss: 0.0,
                loss_periods: vec![],
                trace: false,
                gro: false,
                lower: LowerParams::Wifi(WifiPortParams {
                    medium: 0,
                    peer_mode: vec![mode],
                    peer_fer: vec![0.0],
                    driver_queue,
                    driver_wake: driver_queue - 1,
                    ba_window: 64,
                    hw_aggregates: 2,
                    max_frames,
                    max_bytes: 65535,
                    max_airtime: SimDuration::from_millis(4),
                    retry_limit,
                    phy: phy(),
                    wmm,
                    txop: [SimDuration::ZERO; 4],
                    aggregate_vo: true,
                }),
            };
            let q = QdiscConfig::default().build(BuildCtx {
                rate: mode.rate(),
                mtu: 1500,
                overhead: 14,
                rng: Rng::stream(1, "q", id as u64),
            });
            Link::new(
                id,
                p,
                q,
                Rng::stream(1, "link", id as u64),
                SimTime::ZERO,
                SimDuration::from_millis(100),
            )
        };
        let links = vec![
            mk(0, PhyMode::ht(15, 20, false), 123, 32),
            mk(1, PhyMode::ht(7, 20, false), 224, 63),
        ];
        let m = WifiMedium::new(
            MediumParams {
                name: "bss".into(),
                members: vec![(0, ap), (1, sta)],
                phy: phy(),
            },
            Rng::stream(1, "wifi", 0),
        );
        (links, m)
    }

    fn give(links: &mut [Link], l: usize, n: u64, now: SimTime) {
        let w = links[l].wifi_mut().unwrap();
        for i in 0..n {
            w.accept(
                Packet {
                    uid: 100 * l as u64 + i,
                    size: 1500,
                    ..Default::default()
                },
                0,
                now,
            );
        }
        w.fill_hw();
    }

    /// Runs the medium's timers until none is left; returns (time, kind) of each.
    fn drive(links: &mut [Link], m: &mut WifiMedium, ev: &mut EventQueue) -> Vec<(u64, u32)> {
        let mut seen = vec![];
        while let Some((t, e)) = ev.pop() {
            if let Event::LinkTimer { kind, .. } = e {
                if kind == timer::MEDIUM_ACCESS {
                    m.on_access(links, t, ev);
                } else if kind == timer::MEDIUM_END {
                    m.on_end(links, t, ev);
                } else {
                    continue; // arrivals of the multi-peer link
                }
                seen.push((t.as_nanos() / 1000, kind));
            }
        }
        seen
    }

    /// One A-MPDU exchange, by hand. The AP has 4 × 1500-byte packets for the station at
    /// MCS 15 (20 MHz, 800 ns GI); CWmin = 0 makes the backoff 0 slots. The medium has
    /// been idle since t = 0, so the AP transmits at SIFS + AIFSN × slot = 16 + 3 × 9 =
    /// 43 µs. PSDU: 4 × pad4(1500 + 42) = 6176 B; N_SYM = ⌈(22 + 8 × 6176) / 520⌉ = 96;
    /// PPDU = 40 µs HT-mixed preamble (2 HT-LTFs) + 96 × 4 µs = 424 µs, so it ends (and the
    /// frames are handed up) at 467 µs. The medium is then busy for SIFS + block ack (20 µs
    /// legacy preamble + ⌈(22 + 256) / 96⌉ = 3 symbols = 32 µs) until 515 µs.
    #[test]
    fn one_ampdu_exchange_by_hand() {
        let a = Access {
            aifsn: 3,
            cwmin: 0,
            cwmax: 0,
            txop: SimDuration::ZERO,
        };
        let (mut links, mut m) = bss(a, a, 30);
        let mut ev = EventQueue::new();
        give(&mut links, 0, 4, SimTime::ZERO);
        m.poke(&mut links, SimTime::ZERO, &mut ev);
        let seen = drive(&mut links, &mut m, &mut ev);
        assert_eq!(
            seen,
            vec![(43, timer::MEDIUM_ACCESS), (467, timer::MEDIUM_END)]
        );
        let got: Vec<(u64, u64)> = links[0]
            .wire
            .iter()
            .map(|(t, p)| (t.as_nanos() / 1000, p.uid))
            .collect();
        assert_eq!(got, vec![(467, 0), (467, 1), (467, 2), (467, 3)]);
        assert_eq!(m.idle_from, SimTime::from_nanos(1000 * (515)));
        let w = links[0].wifi().unwrap();
        assert_eq!((w.stats.txops, w.stats.subframes, w.stats.acked), (1, 4, 4));
        assert_eq!(w.stats.below_qdisc_ns, 4 * 467_000);
        assert_eq!(w.pending(), 0);
        // busy airtime counted on the link: PPDU + SIFS + block ack
        assert_eq!(links[0].stats.busy, SimDuration::from_micros(424 + 16 + 32));
    }

    /// One EDCA collision, by hand. AP and station both have a frame ready at t = 0 with
    /// AIFSN 2 and CW 0 (cwmin = cwmax = 0), so both count out at slot 2, 16 + 2 × 9 =
    /// 34 µs, and collide. AP PPDU: 2 × 1544 B at MCS 15: ⌈(22 + 24704) / 520⌉ = 48
    /// symbols, 40 + 192 = 232 µs; station PPDU: 1544 B at MCS 7: ⌈(22 + 12352) / 260⌉ = 48
    /// symbols, 36 + 192 = 228 µs. The medium is busy until the longer one ends (266 µs),
    /// then SIFS + the block-ack time as the ack timeout: idle from 314 µs. Every frame
    /// returns to its driver queue (one try used); CW stays 0 (capped at cwmax), so both
    /// collide again at 314 + 34 = 348 µs, ending at 580 µs; with retry_limit 1 every
    /// frame is now dropped and the medium falls silent.
    #[test]
    fn one_edca_collision_by_hand() {
        let a = Access {
            aifsn: 2,
            cwmin: 0,
            cwmax: 0,
            txop: SimDuration::ZERO,
        };
        let (mut links, mut m) = bss(a, a, 1);
        let mut ev = EventQueue::new();
        give(&mut links, 0, 2, SimTime::ZERO);
        give(&mut links, 1, 1, SimTime::ZERO);
        m.poke(&mut links, SimTime::ZERO, &mut ev);
        let seen = drive(&mut links, &mut m, &mut ev);
        assert_eq!(
            seen,
            vec![
                (34, timer::MEDIUM_ACCESS),
                (266, timer::MEDIUM_END),
                (348, timer::MEDIUM_ACCESS),
                (580, timer::MEDIUM_END)
            ]
        );
        assert_eq!((m.txops, m.collisions), (2, 2));
        for (l, n) in [(0usize, 2u64), (1, 1)] {
            let w = links[l].wifi().unwrap();
            assert_eq!(w.stats.collisions, 2);
            assert_eq!(w.stats.retries, n); // the second attempt of each frame
            assert_eq!(w.stats.dropped, n);
            assert_eq!(w.stats.acked, 0);
            assert_eq!(w.pending(), 0);
            assert_eq!(links[l].out.drops.len(), n as usize);
            assert!(links[l].wire.is_empty());
        }
        assert_eq!(m.idle_from, SimTime::from_nanos(1000 * (580 + 16 + 32)));
    }

    /// The same two senders, but the AP with AIFSN 2 and the station with AIFSN 3: the
    /// AP wins at 34 µs (its 2-frame PPDU ends at 266 µs, idle from 314 µs); the station,
    /// frozen with 0 slots left, resumes after its AIFS: 314 + 16 + 3 × 9 = 357 µs, and its
    /// 228-µs PPDU ends at 585 µs.
    #[test]
    fn shorter_aifs_wins_and_the_other_resumes_after_its_aifs() {
        let ap = Access {
            aifsn: 2,
            cwmin: 0,
            cwmax: 0,
            txop: SimDuration::ZERO,
        };
        let sta = Access { aifsn: 3, ..ap };
        let (mut links, mut m) = bss(ap, sta, 1);
        let mut ev = EventQueue::new();
        give(&mut links, 0, 2, SimTime::ZERO);
        give(&mut links, 1, 1, SimTime::ZERO);
        m.poke(&mut links, SimTime::ZERO, &mut ev);
        let seen = drive(&mut links, &mut m, &mut ev);
        assert_eq!(
            seen,
            vec![
                (34, timer::MEDIUM_ACCESS),
                (266, timer::MEDIUM_END),
                (357, timer::MEDIUM_ACCESS),
                (585, timer::MEDIUM_END)
            ]
        );
        assert_eq!(m.collisions, 0);
        assert_eq!(links[0].wire.len(), 2);
        assert_eq!(links[1].wire.len(), 1);
        assert_eq!(links[1].wire[0].0, SimTime::from_nanos(1000 * (585)));
    }

    #[test]
    fn dscp_to_access_category_as_mac80211() {
        use crate::packet::dscp;
        // cfg80211_classify8021d (3.14): UP = DSCP >> 3; ieee802_1d_to_ac
        let table = [
            (dscp::BE, AC_BE),  // CS0 -> UP 0
            (dscp::CS1, AC_BK), // 8 -> UP 1
            (16, AC_BK),        // CS2 -> UP 2
            (24, AC_BE),        // CS3 -> UP 3
            (32, AC_VI),        // CS4 -> UP 4
            (dscp::CS5, AC_VI), // 40 -> UP 5
            (dscp::EF, AC_VI),  // 46 -> UP 5
            (48, AC_VO),        // CS6 -> UP 6
            (56, AC_VO),        // CS7 -> UP 7
            (10, AC_BK),        // AF11 -> UP 1
            (34, AC_VI),        // AF41 -> UP 4
        ];
        for (d, ac) in table {
            assert_eq!(ac_of_dscp(d), ac, "dscp {d}");
        }
        // without WMM everything is best effort
        let mut w = port(32);
        let ef = Packet {
            dscp: dscp::EF,
            ..Default::default()
        };
        assert_eq!(w.ac_of(&ef), AC_BE);
        w.p.wmm = true;
        assert_eq!(w.ac_of(&ef), AC_VI);
    }

    fn wmm_port(driver_queue: u32, txop_vi: SimDuration) -> WifiPort {
        let mut txop = [SimDuration::ZERO; 4];
        txop[AC_VI] = txop_vi;
        WifiPort::new(WifiPortParams {
            medium: 0,
            peer_mode: vec![PhyMode::ht(15, 20, false)],
            peer_fer: vec![0.0],
            driver_queue,
            driver_wake: driver_queue - 1,
            ba_window: 64,
            hw_aggregates: 1,
            max_frames: 32,
            max_bytes: 65535,
            max_airtime: SimDuration::from_millis(4),
            retry_limit: 2,
            phy: phy(),
            wmm: true,
            txop,
            aggregate_vo: false,
        })
    }

    fn pkt(uid: u64, dscp: u8) -> Packet {
        Packet {
            uid,
            size: 1500,
            dscp,
            ..Default::default()
        }
    }

    /// Per-AC queues: VO unaggregated, VI's A-MPDU within its TXOP limit, and a packet
    /// for a stopped category blocks the qdisc until that category wakes.
    #[test]
    fn access_categories_queue_aggregate_and_stop_separately() {
        use crate::packet::dscp;
        // VI TXOP 1504 us leaves 1504 - 16 - 32 = 1456 us of PPDU. At MCS 15 (520 bits
        // per symbol): 14 x 1544 B = 22 + 172928 bits -> 333 symbols, 40 + 1332 = 1372 us;
        // 15 need 357 symbols, 1468 us.
        let mut w = wmm_port(100, SimDuration::from_micros(1504));
        for i in 0..40 {
            w.accept(pkt(i, dscp::EF), 0, SimTime::ZERO);
            w.accept(pkt(100 + i, 48), 0, SimTime::ZERO); // CS6: voice
            w.accept(pkt(200 + i, dscp::BE), 0, SimTime::ZERO);
        }
        w.fill_hw();
        assert_eq!(w.acs[AC_VI].hw_aggs[0].n, 14);
        assert_eq!(w.acs[AC_VO].hw_aggs[0].n, 1); // no block-ack session for voice
        assert_eq!(w.acs[AC_BE].hw_aggs[0].n, 32); // 32 x 1544 B: 3084 us < 4 ms
        assert_eq!(w.ready_mask(), 0b0111);
        assert_eq!(w.pending(), 120);

        // stop and wake: BK stops at 3 frames; the next BK packet waits as the requeued
        // packet and blocks the qdisc; the block ack of BK's aggregate wakes it.
        let mut w = wmm_port(3, SimDuration::ZERO);
        for i in 0..3 {
            assert!(w.has_room());
            w.accept(pkt(i, dscp::CS1), 0, SimTime::ZERO);
        }
        assert!(w.has_room()); // other categories still take packets
        w.accept(pkt(9, dscp::BE), 0, SimTime::ZERO);
        w.accept(pkt(3, dscp::CS1), 0, SimTime::ZERO);
        assert!(!w.has_room());
        assert_eq!(w.held(), 5);
        assert_eq!(w.stats.stops, 1);
        w.fill_hw();
        let mut rng = Rng::stream(1, "t", 0);
        let mut wire = VecDeque::new();
        let mut out = QdiscOut::new(false);
        let mut st = LinkStats::new(SimTime::ZERO, SimDuration::from_millis(100));
        let t = SimTime::from_nanos(1_000_000);
        w.complete_head(AC_BK, true, t, t, &mut rng, &mut wire, &mut out, &mut st);
        assert_eq!(wire.len(), 3);
        assert!(w.has_room());
        assert_eq!(w.acs[AC_BK].pending, 1); // the requeued packet went in
        assert_eq!(w.pending(), 2);
    }

    /// Two access categories of the AP and the station's best effort, by hand (CW 0
    /// everywhere, so every backoff is 0 slots). At t = 0 the AP has 2 EF packets (VI:
    /// AIFSN 2) and 2 best-effort ones (BE: AIFSN 2), the station one best-effort
    /// packet (AIFSN 3). Slots count from SIFS after idle (t = 0): the AP's VI and BE
    /// both end their count at slot 2 (16 + 2 × 9 = 34 µs): an internal collision,
    /// which VI (the higher category) wins; BE redraws with its window doubled (capped
    /// at CWmax 0) and loses no frame. The station, at slot 3, froze. VI's 2 × 1544 B
    /// at MCS 15: ⌈(22 + 24704) / 520⌉ = 48 symbols, 40 + 192 = 232 µs: ends at 266 µs,
    /// idle from 266 + 16 + 32 = 314 µs. Then AP BE (slot 2: 348 µs) beats the station
    /// (slot 3: 357 µs): its PPDU ends at 580 µs, idle from 628 µs; the station sends at
    /// 628 + 43 = 671 µs, 36 + ⌈(22 + 12352) / 260⌉ × 4 = 228 µs, ending at 899 µs.
    #[test]
    fn two_access_categories_contend_by_hand() {
        use crate::packet::dscp;
        let a = |aifsn| Access {
            aifsn,
            cwmin: 0,
            cwmax: 0,
            txop: SimDuration::ZERO,
        };
        let ap = [a(2), a(2), a(2), a(7)];
        let sta = [a(2), a(2), a(3), a(7)];
        let (mut links, mut m) = bss_acs(ap, sta, 4, true);
        let mut ev = EventQueue::new();
        {
            let w = links[0].wifi_mut().unwrap();
            for (u, d) in [(0, dscp::EF), (1, dscp::EF), (2, dscp::BE), (3, dscp::BE)] {
                w.accept(pkt(u, d), 0, SimTime::ZERO);
            }
            w.fill_hw();
            let w = links[1].wifi_mut().unwrap();
            w.accept(pkt(10, dscp::BE), 0, SimTime::ZERO);
            w.fill_hw();
        }
        m.poke(&mut links, SimTime::ZERO, &mut ev);
        let seen = drive(&mut links, &mut m, &mut ev);
        assert_eq!(
            seen,
            vec![
                (34, timer::MEDIUM_ACCESS),
                (266, timer::MEDIUM_END),
                (348, timer::MEDIUM_ACCESS),
                (580, timer::MEDIUM_END),
                (671, timer::MEDIUM_ACCESS),
                (899, timer::MEDIUM_END),
            ]
        );
        assert_eq!(m.collisions, 0);
        let w = links[0].wifi().unwrap();
        assert_eq!(w.stats.internal_collisions, 1);
        assert_eq!(w.stats.ac_txops, [0, 1, 1, 0]);
        assert_eq!(w.stats.retries, 0);
        let got: Vec<(u64, u64)> = links[0]
            .wire
            .iter()
            .map(|(t, p)| (t.as_nanos() / 1000, p.uid))
            .collect();
        assert_eq!(got, vec![(266, 0), (266, 1), (580, 2), (580, 3)]);
        assert_eq!(links[1].wifi().unwrap().stats.ac_txops, [0, 0, 1, 0]);
        assert_eq!(links[1].wire[0].0, SimTime::from_nanos(899_000));
    }
}
