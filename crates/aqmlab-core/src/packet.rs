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
    /// Up to three SACK blocks (RFC 2018 with timestamps leaves room for three).
    pub sack: [SackBlock; 3],
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
    /// For probes: the one-way delay of the request, carried back in the reply (ns).
    pub echo_owd: u64,
    pub tcp: TcpHeader,
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
