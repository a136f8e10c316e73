//! Strict-priority band qdiscs: Linux `prio` (`sch_prio.c`) and `pfifo_fast`
//! (`sch_generic.c`, the default qdisc of Linux interfaces before `fq_codel`).
//!
//! ## Classification (both)
//! Without filters, Linux places a packet by its `skb->priority`: band =
//! `priomap[priority & TC_PRIO_MAX]`. For a forwarded IPv4 packet `ip_forward`
//! (`net/ipv4/ip_forward.c`) sets `skb->priority = rt_tos2priority(iph->tos)`, which
//! looks up `ip_tos2prio[(tos & 0x1e) >> 1]` (`include/net/route.h`,
//! `net/ipv4/route.c`): the four RFC 1349 TOS bits of the byte, not the DSCP classes.
//! This module computes the same from the packet's TOS byte, DSCP << 2 | ECN bits
//! ([`tos2priority`]). Consequences worth knowing (tests `tos_priority_table_*`):
//! EF (TOS 0xb8) maps to `TC_PRIO_INTERACTIVE_BULK` (4) and so to band 1 like best
//! effort; CS1/CS5 map to best effort; AF11/AF21/AF31/AF41 to `TC_PRIO_BULK` (band 2);
//! AF12/AF22/AF32/AF42 and VA to `TC_PRIO_INTERACTIVE` (band 0); and an ECT(0) or CE
//! packet has the "min cost" bit 0x02 set, so `ip_tos2prio[1]` = `TC_PRIO_FILLER` puts
//! it in band 2.
//!
//! Deviation: a packet is classified by its TOS byte at every hop. At the sending host
//! Linux uses the socket's priority instead (`IP_TOS` sets it from the TOS without the
//! ECN bits), so an ECN-capable packet there is not demoted to band 2; the bottleneck
//! qdiscs of the studies sit at routers, where the forwarding rule above holds.
//!
//! ## Scheduling
//! Dequeue takes the head of the lowest-numbered non-empty band (strict priority; a
//! loaded band 0 starves the others). Each band is a tail-drop FIFO of `limit` packets:
//! for `prio`, its default child `pfifo` whose limit is the device's `txqueuelen`
//! (default 1000, `qdisc_create_dflt` → `pfifo_init`); for `pfifo_fast` the per-band
//! ring of `tx_queue_len` entries of Linux 4.16 and later. (Linux before 4.16 bounded
//! the three bands of `pfifo_fast` together by `txqueuelen`; the difference shows only
//! when more than one band is loaded.)

use super::{BuildCtx, DropReason, ParamError, Qdisc, QdiscOut, QdiscStats, Verdict};
use crate::packet::Packet;
use crate::time::SimTime;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `TC_PRIO_*` (`include/uapi/linux/pkt_sched.h`).
pub const TC_PRIO_BESTEFFORT: u8 = 0;
pub const TC_PRIO_FILLER: u8 = 1;
pub const TC_PRIO_BULK: u8 = 2;
pub const TC_PRIO_INTERACTIVE_BULK: u8 = 4;
pub const TC_PRIO_INTERACTIVE: u8 = 6;
pub const TC_PRIO_CONTROL: u8 = 7;

/// `ip_tos2prio` of `net/ipv4/route.c`, indexed by `(tos & 0x1e) >> 1`
/// (`ECN_OR_COST(class)` is `TC_PRIO_##class`).
pub const IP_TOS2PRIO: [u8; 16] = [
    TC_PRIO_BESTEFFORT,
    TC_PRIO_FILLER,
    TC_PRIO_BESTEFFORT,
    TC_PRIO_BESTEFFORT,
    TC_PRIO_BULK,
    TC_PRIO_BULK,
    TC_PRIO_BULK,
    TC_PRIO_BULK,
    TC_PRIO_INTERACTIVE,
    TC_PRIO_INTERACTIVE,
    TC_PRIO_INTERACTIVE,
    TC_PRIO_INTERACTIVE,
    TC_PRIO_INTERACTIVE_BULK,
    TC_PRIO_INTERACTIVE_BULK,
    TC_PRIO_INTERACTIVE_BULK,
    TC_PRIO_INTERACTIVE_BULK,
];

/// The default priomap of `prio` and `pfifo_fast` (`sch_generic.c` `prio2band`,
/// `sch_prio.c` `prio_tune` defaults; tc shows it as `1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1`).
pub const DEFAULT_PRIOMAP: [u8; 16] = [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];

/// Linux's `rt_tos2priority(tos)`.
pub fn tos2priority(tos: u8) -> u8 {
    IP_TOS2PRIO[((tos & 0x1e) >> 1) as usize]
}

/// The TOS byte of a packet: DSCP in the upper six bits, ECN in the lower two.
pub fn tos_of(p: &Packet) -> u8 {
    (p.dscp & 0x3f) << 2 | p.ecn.bits()
}

fn d_bands() -> u32 {
    3
}
fn d_priomap() -> Vec<u8> {
    DEFAULT_PRIOMAP.to_vec()
}
fn d_limit() -> u32 {
    1000
}

/// `prio`: `bands`, `priomap`, and the per-band `limit`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PrioConfig {
    /// Number of bands, 2 to 16 (`TCQ_PRIO_BANDS`). Default 3.
    #[serde(default = "d_bands")]
    pub bands: u32,
    /// Band of each of the 16 priorities. Default `1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1`.
    #[serde(default = "d_priomap")]
    pub priomap: Vec<u8>,
    /// Packets per band (the child pfifo's limit = txqueuelen). Default 1000.
    #[serde(default = "d_limit")]
    pub limit: u32,
}

impl Default for PrioConfig {
    fn default() -> Self {
        PrioConfig {
            bands: d_bands(),
            priomap: d_priomap(),
            limit: d_limit(),
        }
    }
}

impl PrioConfig {
    pub const PARAMS: &'static [super::ParamDoc] = &[
        super::ParamDoc {
            name: "bands",
            default: "3",
            doc: "number of strict-priority bands, 2 to 16 (Linux sch_prio, TCQ_PRIO_BANDS)",
        },
        super::ParamDoc {
            name: "priomap",
            default: "[1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]",
            doc: "band of each priority 0..15; priority = rt_tos2priority(TOS) as Linux ip_forward sets it (sch_prio default priomap)",
        },
        super::ParamDoc {
            name: "limit",
            default: "1000",
            doc: "packets per band: the default child pfifo's limit, the device txqueuelen (Linux default 1000)",
        },
    ];

    pub fn validate(&self, _ctx: &BuildCtx) -> Result<(), ParamError> {
        if !(2..=16).contains(&self.bands) {
            return Err(ParamError::new("bands", self.bands, "2 to 16"));
        }
        if self.priomap.len() != 16 {
            return Err(ParamError::new(
                "priomap",
                format!("{} entries", self.priomap.len()),
                "exactly 16 band numbers, one per priority 0..15",
            ));
        }
        if let Some(b) = self.priomap.iter().find(|&&b| b as u32 >= self.bands) {
            return Err(ParamError::new(
                "priomap",
                format!("band {b}"),
                format!("bands 0 to {} (bands = {})", self.bands - 1, self.bands),
            ));
        }
        if self.limit < 1 {
            return Err(ParamError::new("limit", self.limit, "at least 1 packet"));
        }
        Ok(())
    }
}

/// `pfifo_fast`: Linux's fixed three bands and priomap; only the per-band `limit`
/// (the device's `txqueuelen`) is configurable.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PfifoFastConfig {
    /// Packets per band (Linux: the device's txqueuelen). Default 1000.
    #[serde(default = "d_limit")]
    pub limit: u32,
}

impl Default for PfifoFastConfig {
    fn default() -> Self {
        PfifoFastConfig { limit: d_limit() }
    }
}

impl PfifoFastConfig {
    pub const PARAMS: &'static [super::ParamDoc] = &[super::ParamDoc {
        name: "limit",
        default: "1000",
        doc: "packets per band, the device txqueuelen (Linux default 1000; bands 3 and priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1 are fixed)",
    }];

    pub fn validate(&self, _ctx: &BuildCtx) -> Result<(), ParamError> {
        if self.limit < 1 {
            return Err(ParamError::new("limit", self.limit, "at least 1 packet"));
        }
        Ok(())
    }
}

/// A running `prio` or `pfifo_fast`.
#[derive(Debug)]
pub struct Prio {
    priomap: [u8; 16],
    limit: usize,
    bands: Vec<VecDeque<Packet>>,
    len: usize,
    bytes: u64,
    /// Packets dequeued per band (reported as `band{i}_pkts` for the first three).
    sent: Vec<u64>,
    stats: QdiscStats,
}

/// What a band qdisc is built from: the priomap, the band count, the per-band limit.
pub trait BandSpec {
    fn layout(&self) -> ([u8; 16], usize, usize);
}

impl BandSpec for PrioConfig {
    fn layout(&self) -> ([u8; 16], usize, usize) {
        let mut priomap = DEFAULT_PRIOMAP;
        for (m, &b) in priomap.iter_mut().zip(&self.priomap) {
            *m = b;
        }
        (priomap, self.bands as usize, self.limit as usize)
    }
}

impl BandSpec for PfifoFastConfig {
    fn layout(&self) -> ([u8; 16], usize, usize) {
        (DEFAULT_PRIOMAP, 3, self.limit as usize)
    }
}

impl Prio {
    pub fn new<C: BandSpec>(cfg: &C, _ctx: BuildCtx) -> Self {
        let (priomap, bands, limit) = cfg.layout();
        Self::with(priomap, bands.max(1), limit)
    }

    fn with(priomap: [u8; 16], bands: usize, limit: usize) -> Self {
        Prio {
            priomap,
            limit,
            bands: (0..bands)
                .map(|_| VecDeque::with_capacity(limit.min(4096) + 1))
                .collect(),
            len: 0,
            bytes: 0,
            sent: vec![0; bands],
            stats: QdiscStats::default(),
        }
    }

    /// The band a packet goes to: `priomap[rt_tos2priority(tos) & TC_PRIO_MAX]`.
    pub fn band_of(&self, p: &Packet) -> usize {
        // validate keeps every priomap entry below the band count
        (self.priomap[(tos2priority(tos_of(p)) & 15) as usize] as usize).min(self.bands.len() - 1)
    }

    /// Packets queued in band `b`.
    pub fn band_len(&self, b: usize) -> usize {
        self.bands[b].len()
    }
}

impl Qdisc for Prio {
    fn enqueue(&mut self, pkt: Packet, _now: SimTime, out: &mut QdiscOut) -> Verdict {
        let b = self.band_of(&pkt);
        if self.bands[b].len() >= self.limit {
            return out.drop_arrival(&mut self.stats, pkt, DropReason::Overlimit);
        }
        self.stats.on_enqueue(&pkt);
        self.bytes += pkt.size as u64;
        self.len += 1;
        self.bands[b].push_back(pkt);
        Verdict::Enqueued
    }

    /// Empty bands: the dequeue finds nothing in any of them and changes nothing.
    fn empty_dequeue_is_noop(&self) -> bool {
        true
    }

    fn dequeue(&mut self, _now: SimTime, _out: &mut QdiscOut) -> Option<Packet> {
        for (b, q) in self.bands.iter_mut().enumerate() {
            if let Some(p) = q.pop_front() {
                self.bytes -= p.size as u64;
                self.len -= 1;
                self.sent[b] += 1;
                self.stats.on_dequeue(&p);
                return Some(p);
            }
        }
        None
    }

    fn len(&self) -> usize {
        self.len
    }
    fn backlog_bytes(&self) -> u64 {
        self.bytes
    }
    fn stats(&self) -> &QdiscStats {
        &self.stats
    }
    fn summary(&self, out: &mut Vec<(&'static str, f64)>) {
        const NAMES: [&str; 3] = ["band0_pkts", "band1_pkts", "band2_pkts"];
        for (name, n) in NAMES.iter().zip(&self.sent) {
            out.push((name, *n as f64));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{ctx, pkt};
    use super::*;
    use crate::packet::{dscp, Ecn};

    fn marked(flow: u32, uid: u64, d: u8, ecn: Ecn) -> Packet {
        let mut p = pkt(flow, 1000, uid, SimTime::ZERO);
        p.dscp = d;
        p.ecn = ecn;
        p
    }

    /// Every TOS value worked by hand from `ip_tos2prio` (route.c): index =
    /// (tos & 0x1e) >> 1; 0 BE, 1 FILLER, 2-3 BE, 4-7 BULK, 8-11 INTERACTIVE,
    /// 12-15 INTERACTIVE_BULK.
    #[test]
    fn tos_priority_table_matches_the_kernel_for_every_tos() {
        for tos in 0..=255u8 {
            let idx = (tos & 0x1e) >> 1;
            let want = match idx {
                0 | 2 | 3 => 0,
                1 => 1,
                4..=7 => 2,
                8..=11 => 6,
                _ => 4,
            };
            assert_eq!(tos2priority(tos), want, "tos {tos:#04x}");
        }
        // RFC 1349 names: IPTOS_LOWDELAY 0x10, THROUGHPUT 0x08, RELIABILITY 0x04, MINCOST 0x02
        assert_eq!(tos2priority(0x10), TC_PRIO_INTERACTIVE);
        assert_eq!(tos2priority(0x08), TC_PRIO_BULK);
        assert_eq!(tos2priority(0x04), TC_PRIO_BESTEFFORT);
        assert_eq!(tos2priority(0x02), TC_PRIO_FILLER);
    }

    /// The DSCP classes through pfifo_fast, by hand: TOS = DSCP << 2, then the table.
    #[test]
    fn tos_priority_table_of_the_dscp_classes_and_their_pfifo_fast_bands() {
        let q = Prio::new(&PfifoFastConfig::default(), ctx(10_000_000));
        let band = |name: &str, ecn: Ecn| {
            let d = dscp::parse(&toml::Value::String(name.into())).unwrap();
            q.band_of(&marked(1, 0, d, ecn))
        };
        // EF = 46, TOS 0xb8: 0xb8 & 0x1e = 0x18, index 12 → INTERACTIVE_BULK (4) → band 1
        assert_eq!(tos2priority(dscp::tos(dscp::EF)), TC_PRIO_INTERACTIVE_BULK);
        assert_eq!(band("EF", Ecn::NotEct), 1);
        // CS0..CS7: TOS 0x00, 0x20, … 0xe0 have no TOS bits → best effort → band 1
        for cs in ["CS0", "CS1", "CS2", "CS3", "CS4", "CS5", "CS6", "CS7"] {
            assert_eq!(band(cs, Ecn::NotEct), 1, "{cs}");
        }
        // AFx1 (TOS low bits 0x08: throughput) → BULK → band 2
        for af in ["AF11", "AF21", "AF31", "AF41"] {
            assert_eq!(band(af, Ecn::NotEct), 2, "{af}");
        }
        // AFx2 and VA (TOS bit 0x10: low delay) → INTERACTIVE → band 0
        for af in ["AF12", "AF22", "AF32", "AF42", "VA"] {
            assert_eq!(band(af, Ecn::NotEct), 0, "{af}");
        }
        // AFx3 (0x18) → INTERACTIVE_BULK → band 1
        for af in ["AF13", "AF23", "AF33", "AF43"] {
            assert_eq!(band(af, Ecn::NotEct), 1, "{af}");
        }
        // LE = 1: TOS 0x04 (reliability) → best effort → band 1
        assert_eq!(band("LE", Ecn::NotEct), 1);
        // ECT(0)/CE set the 0x02 bit: ip_tos2prio[1] = FILLER → band 2; ECT(1) does not
        assert_eq!(band("BE", Ecn::Ect0), 2);
        assert_eq!(band("BE", Ecn::Ce), 2);
        assert_eq!(band("BE", Ecn::Ect1), 1);
    }

    #[test]
    fn strict_priority_starves_the_lower_bands() {
        let mut q = Prio::new(&PfifoFastConfig { limit: 10 }, ctx(10_000_000));
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        // band 2 (AF11), band 1 (BE), band 0 (AF12) arrive in that order
        let mut uid = 0;
        for d in [dscp::parse(&"AF11".into()).unwrap(), 0, 12] {
            for _ in 0..3 {
                assert_eq!(
                    q.enqueue(marked(d as u32, uid, d, Ecn::NotEct), t, &mut out),
                    Verdict::Enqueued
                );
                uid += 1;
            }
        }
        let order: Vec<u64> = (0..9)
            .map(|_| q.dequeue(t, &mut out).unwrap().uid)
            .collect();
        assert_eq!(order, [6, 7, 8, 3, 4, 5, 0, 1, 2]);
        // overload: band 0 refilled before every dequeue keeps band 2 waiting forever
        for i in 0..3 {
            q.enqueue(marked(9, 100 + i, 10, Ecn::NotEct), t, &mut out); // AF11: band 2
        }
        for i in 0..50 {
            q.enqueue(marked(8, 200 + i, 12, Ecn::NotEct), t, &mut out); // AF12: band 0
            let p = q.dequeue(t, &mut out).unwrap();
            assert_eq!(p.uid, 200 + i, "band 0 always first");
        }
        assert_eq!(q.band_len(2), 3);
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
    }

    #[test]
    fn per_band_limit_tail_drops_only_the_full_band() {
        let mut q = Prio::new(&PfifoFastConfig { limit: 2 }, ctx(10_000_000));
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        let v: Vec<_> = (0..3)
            .map(|i| q.enqueue(marked(1, i, 0, Ecn::NotEct), t, &mut out))
            .collect();
        assert_eq!(v[2], Verdict::Dropped(DropReason::Overlimit));
        assert_eq!(
            q.enqueue(marked(2, 9, 10, Ecn::NotEct), t, &mut out),
            Verdict::Enqueued
        );
        assert_eq!((q.len(), q.band_len(1), q.band_len(2)), (3, 2, 1));
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
    }

    #[test]
    fn prio_takes_its_bands_and_priomap_and_checks_them() {
        let c: PrioConfig =
            toml::from_str("bands = 2\npriomap = [1,1,1,1,1,1,0,0,1,1,1,1,1,1,1,1]").unwrap();
        c.validate(&ctx(1_000_000)).unwrap();
        let q = Prio::new(&c, ctx(1_000_000));
        assert_eq!(q.band_of(&marked(1, 0, 12, Ecn::NotEct)), 0); // AF12 → INTERACTIVE (6)
        assert_eq!(q.band_of(&marked(1, 0, 46, Ecn::NotEct)), 1);
        let bad: PrioConfig = toml::from_str("bands = 2").unwrap(); // default map uses band 2
        assert_eq!(bad.validate(&ctx(1_000_000)).unwrap_err().field, "priomap");
        let bad: PrioConfig = toml::from_str("bands = 17").unwrap();
        assert_eq!(bad.validate(&ctx(1_000_000)).unwrap_err().field, "bands");
        let bad: PrioConfig = toml::from_str("priomap = [0, 1]").unwrap();
        assert_eq!(bad.validate(&ctx(1_000_000)).unwrap_err().field, "priomap");
    }
}
