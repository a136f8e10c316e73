//! The packet: plain data, moved by value, never heap-allocated.
//!
//! `size` is the IP packet size in bytes (headers + payload), what a qdisc's byte limit
//! and a `bfifo` count. The link adds its framing overhead (e.g. 14 bytes of Ethernet
//! header) when it computes serialisation time.

use crate::time::SimTime;

/// Index of a node (host or router) in the simulator.
pub type NodeId = u32;
/// Index of a flow (one transport connection or datagram stream) in the simulator.
pub type FlowId = u32;
/// Index of a unidirectional link.
pub type LinkId = u32;

/// The ECN field of the IP header (RFC 3168): Not-ECT 0b00, ECT(1) 0b01, ECT(0) 0b10,
/// CE 0b11. ECT(1) is the L4S identifier (RFC 9331); classic ECN senders use ECT(0).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Ecn {
    #[default]
    NotEct,
    Ect0,
    Ect1,
    Ce,
}

impl Ecn {
    /// True if the sender declared the packet ECN-capable (ECT(0), ECT(1) or already CE).
    pub fn is_capable(self) -> bool {
        !matches!(self, Ecn::NotEct)
    }
    /// The two-bit codepoint as carried in the IP header.
    pub fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }
}

/// What the packet carries, for demultiplexing at the receiving host.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum PacketKind {
    /// A UDP datagram (CBR, VoIP, the request half of a UDP request/response probe).
    #[default]
    Udp,
    /// The response half of a UDP request/response probe.
    UdpReply,
    /// ICMP echo request / reply.
    EchoRequest,
    EchoReply,
    /// A TCP segment (see `TcpHeader`).
    Tcp,
}

/// TCP flag bits.
pub mod tcp_flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const ACK: u8 = 0x10;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
}

/// A SACK block `[start, end)` in absolute byte sequence numbers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// The TCP header fields the model uses. Sequence numbers are absolute 64-bit byte
/// offsets (no wrap-around), with the SYN occupying sequence number 0.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct TcpHeader {
    pub seq: u64,
    pub ack: u64,
    /// Payload bytes.
    pub len: u32,
    pub flags: u8,
    /// Advertised receive window in bytes (already scaled).
    pub wnd: u32,
    /// Up to three SACK blocks (RFC 2018 with timestamps leaves room for three), stored
    /// compactly as 32-bit offsets from `ack` (see [`TcpHeader::set_sacks`]); read them
    /// with [`TcpHeader::sacks`]; write them with [`TcpHeader::set_sacks`].
    pub sack: [(u32, u32); 3],
    /// Number of SACK blocks in `sack`.
    pub n_sack: u8,
    /// Timestamp option (RFC 7323): value and echo reply, as simulated instants.
    pub ts_val: SimTime,
    pub ts_ecr: SimTime,
    /// Accurate ECN (RFC 9331 feedback, draft-ietf-tcpm-accurate-ecn): on a SYN, the AE
    /// flag that, with ECE and CWR, asks for AccECN; afterwards unused.
    pub ae: bool,
    /// Accurate ECN's ACE counter: CE-marked packets the sender of this segment has
    /// received so far (see `Sender::on_ack` for the width deviation).
    pub ace: u32,
}

impl TcpHeader {
    /// Sets the SACK blocks (at most three; RFC 2018 with timestamps has room for three).
    /// Set `ack` first: a block is kept as two 32-bit offsets from `ack` (signed, so a
    /// block up to 2 GiB either side of `ack` round-trips exactly), which keeps a
    /// [`Packet`] within two cache lines. A receiver only reports data inside its
    /// receive window, and Linux's largest window is 1 GiB (`TCP_MAX_WSCALE` 14 ×
    /// 65,535, `include/net/tcp.h`), so real blocks always fit.
    #[inline]
    pub fn set_sacks(&mut self, blocks: &[SackBlock]) {
        debug_assert!(blocks.len() <= 3, "at most three SACK blocks fit");
        let n = blocks.len().min(3);
        for (slot, b) in self.sack.iter_mut().zip(&blocks[..n]) {
            let (s, e) = (b.start.wrapping_sub(self.ack), b.end.wrapping_sub(self.ack));
            debug_assert!(
                (s as i64) >= i32::MIN as i64 && (s as i64) <= i32::MAX as i64,
                "SACK block start {} too far from ack {}",
                b.start,
                self.ack
            );
            debug_assert!(
                (e as i64) >= i32::MIN as i64 && (e as i64) <= i32::MAX as i64,
                "SACK block end {} too far from ack {}",
                b.end,
                self.ack
            );
            *slot = (s as u32, e as u32);
        }
        self.n_sack = n as u8;
    }
    /// Number of SACK blocks carried.
    #[inline]
    pub fn n_sacks(&self) -> usize {
        self.n_sack as usize
    }
    /// The SACK blocks carried, in the order they were set (most recent first).
    #[inline]
    pub fn sacks(&self) -> impl Iterator<Item = SackBlock> + '_ {
        let ack = self.ack;
        let abs = move |off: u32| ack.wrapping_add(off as i32 as i64 as u64);
        self.sack[..self.n_sack as usize]
            .iter()
            .map(move |&(s, e)| SackBlock {
                start: abs(s),
                end: abs(e),
            })
    }
}

/// A packet in flight. `Copy` so it moves through queues without allocation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Packet {
    /// Unique per run, in creation order.
    pub uid: u64,
    pub flow: FlowId,
    pub src: NodeId,
    pub dst: NodeId,
    /// IP packet size in bytes.
    pub size: u32,
    pub kind: PacketKind,
    pub ecn: Ecn,
    /// Differentiated Services codepoint (RFC 2474): the upper six bits of the former TOS
    /// byte, 0 = default forwarding (CS0, best effort). Set by the sending application;
    /// read by DSCP-aware qdiscs (band and tin selection). Travels beside `ecn`, which
    /// holds the lower two bits.
    pub dscp: u8,
    /// Stand-in for the 5-tuple hash (unsalted); qdiscs that hash add their own salt.
    pub hash: u32,
    /// Datagram/probe sequence number (UDP and ICMP); for TCP the sub-connection number
    /// of a multi-connection application (`FlowCtx::packet_conn`).
    pub seq: u64,
    /// When the application created the packet (for one-way delay).
    pub sent_at: SimTime,
    /// When the packet entered the current qdisc (set by the link before enqueue).
    pub enqueued_at: SimTime,
    /// The TCP header (TCP segments). A UDP/ICMP probe reply carries the request's
    /// `sent_at` in `tcp.ts_ecr`, the timestamp it echoes (`app::probe`); other non-TCP
    /// packets leave it at its default.
    pub tcp: TcpHeader,
    /// GSO segments of a TCP super-packet (Linux `skb_shinfo(skb)->gso_segs`): 0 for an
    /// ordinary packet, n ≥ 1 for an skb built by a sender with `gso = "on"` (or merged
    /// by GRO) that carries n segments of `tcp.len / n` payload bytes each; `size` is
    /// then the sum of the segments' IP sizes (each with its own headers). A link puts
    /// the segments on the wire back to back ([`Packet::segment`]).
    pub gso_segs: u8,
}

// A packet is copied by value at every hop (qdisc, wire, event loop): keep it within
// two cache lines. A field added here or to `TcpHeader` that breaks this fails the build.
const _: () = assert!(std::mem::size_of::<Packet>() <= 128);

impl Packet {
    /// Segments this packet is on the wire (1 for an ordinary packet).
    #[inline]
    pub fn segs(&self) -> u32 {
        (self.gso_segs as u32).max(1)
    }

    /// Segment `i` (0-based) of a GSO super-packet, as Linux `tcp_gso_segment` cuts it:
    /// payload `tcp.len / segs` at `tcp.seq + i × that`, the per-segment headers of the
    /// skb, CWR only on the first segment (`th->cwr = 0` after it), a distinct `uid`
    /// (the index in the top byte). A segment is an ordinary packet of a GSO sender
    /// (`gso_segs` = 1).
    pub fn segment(&self, i: u32) -> Packet {
        let n = self.segs();
        debug_assert!(
            i < n && self.tcp.len.is_multiple_of(n) && (self.size - self.tcp.len).is_multiple_of(n)
        );
        let gso_size = self.tcp.len / n;
        let hdr = (self.size - self.tcp.len) / n;
        let mut p = *self;
        p.gso_segs = 1;
        p.size = hdr + gso_size;
        p.tcp.seq += i as u64 * gso_size as u64;
        p.tcp.len = gso_size;
        if i > 0 {
            p.tcp.flags &= !tcp_flags::CWR;
            p.uid ^= (i as u64) << 56;
        }
        p
    }
}

/// Mixes flow identity and endpoints into a 32-bit value, like a 5-tuple hash.
pub fn flow_hash(flow: FlowId, src: NodeId, dst: NodeId) -> u32 {
    let mut x = (flow as u64) << 40 ^ (src as u64) << 20 ^ dst as u64;
    // splitmix64 finaliser
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d049bb133111eb);
    x ^= x >> 31;
    (x ^ (x >> 32)) as u32
}

/// DSCP names and the `dscp` key of workloads.
///
/// A workload's `dscp` is a codepoint name or a number 0..63. The names are those of
/// netperf's `-Y` option and of `iptables -j DSCP --set-dscp-class` (RFC 2474 class
/// selectors, RFC 2597 assured forwarding, RFC 3246 expedited forwarding), plus VA
/// (RFC 5865 voice-admit), LE (RFC 8622 lower effort), BE (= CS0, default forwarding)
/// and BK (= CS1, the "background" class of Flent's RRUL).
pub mod dscp {
    /// `(name, codepoint)` of every accepted name (compared case-insensitively).
    pub const NAMES: &[(&str, u8)] = &[
        ("CS0", 0),
        ("CS1", 8),
        ("CS2", 16),
        ("CS3", 24),
        ("CS4", 32),
        ("CS5", 40),
        ("CS6", 48),
        ("CS7", 56),
        ("AF11", 10),
        ("AF12", 12),
        ("AF13", 14),
        ("AF21", 18),
        ("AF22", 20),
        ("AF23", 22),
        ("AF31", 26),
        ("AF32", 28),
        ("AF33", 30),
        ("AF41", 34),
        ("AF42", 36),
        ("AF43", 38),
        ("EF", 46),
        ("VA", 44),
        ("LE", 1),
        ("BE", 0),
        ("BK", 8),
    ];

    /// Best effort (CS0).
    pub const BE: u8 = 0;
    /// Flent's "BK" (netperf `-Y CS1`).
    pub const CS1: u8 = 8;
    pub const CS5: u8 = 40;
    /// Expedited forwarding (RFC 3246).
    pub const EF: u8 = 46;

    /// The codepoint of a `dscp` value: a name of [`NAMES`] or an integer 0..63.
    pub fn parse(v: &toml::Value) -> Result<u8, String> {
        let allowed = || {
            format!(
                "allowed: {} or a number 0 to 63",
                NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            )
        };
        match v {
            toml::Value::Integer(i) if (0..=63).contains(i) => Ok(*i as u8),
            toml::Value::Integer(i) => Err(format!("{i} is not a DSCP ({})", allowed())),
            toml::Value::String(s) => NAMES
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(s.trim()))
                .map(|(_, c)| *c)
                .ok_or_else(|| format!("'{s}' is not a DSCP name ({})", allowed())),
            other => Err(format!(
                "expected a DSCP name or number, got {} ({})",
                other.type_str(),
                allowed()
            )),
        }
    }

    /// The TOS byte a socket option `IP_TOS` would carry for `dscp` (ECN bits zero).
    pub fn tos(dscp: u8) -> u8 {
        (dscp & 0x3f) << 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SACK blocks survive the compact encoding exactly: above `ack` (the normal case),
    /// below it (a D-SACK-like block, RFC 2883) and 2 GiB away on either side.
    #[test]
    fn sack_blocks_round_trip() {
        let ack = 5_000_000_000u64; // above 2^32: offsets, not truncated absolutes
        let blocks = [
            SackBlock {
                start: ack + 1448,
                end: ack + 4344,
            },
            SackBlock {
                start: ack - 2896,
                end: ack - 1448,
            },
            SackBlock {
                start: ack - (1 << 31),
                end: ack + (1 << 31) - 1,
            },
        ];
        let mut h = TcpHeader {
            ack,
            ..Default::default()
        };
        h.set_sacks(&blocks);
        assert_eq!(h.n_sacks(), 3);
        assert_eq!(h.sacks().collect::<Vec<_>>(), blocks.to_vec());
        h.set_sacks(&blocks[1..2]);
        assert_eq!(h.sacks().collect::<Vec<_>>(), vec![blocks[1]]);
        h.set_sacks(&[]);
        assert_eq!(h.sacks().count(), 0);
    }

    /// A 3-segment skb of 1448-byte segments with 52-byte headers (3 × 1500 = 4500 IP
    /// bytes) cuts into three 1500-byte segments at seq 1, 1449, 2897; CWR only on the
    /// first; distinct uids.
    #[test]
    fn gso_skb_cuts_into_its_segments() {
        let skb = Packet {
            uid: 7,
            size: 4500,
            gso_segs: 3,
            tcp: TcpHeader {
                seq: 1,
                len: 3 * 1448,
                flags: tcp_flags::ACK | tcp_flags::CWR,
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(skb.segs(), 3);
        let segs: Vec<Packet> = (0..3).map(|i| skb.segment(i)).collect();
        assert_eq!(
            segs.iter()
                .map(|p| (p.tcp.seq, p.tcp.len, p.size))
                .collect::<Vec<_>>(),
            vec![(1, 1448, 1500), (1449, 1448, 1500), (2897, 1448, 1500)]
        );
        assert_eq!(segs[0].tcp.flags, tcp_flags::ACK | tcp_flags::CWR);
        assert_eq!(segs[1].tcp.flags, tcp_flags::ACK);
        assert!(segs.iter().all(|p| p.gso_segs == 1 && p.segs() == 1));
        assert_eq!(segs[0].uid, 7);
        assert!(segs[1].uid != segs[2].uid && segs[1].uid != 7);
        assert_eq!(Packet::default().segs(), 1);
    }
}
