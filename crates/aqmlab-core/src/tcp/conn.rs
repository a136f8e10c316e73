//! A full-duplex TCP connection between the two endpoints of a flow.
//!
//! [`TcpConn`] holds both endpoints (side `A`, the active opener, and side `B`); each
//! endpoint has a [`Sender`] and a [`Receiver`]. Applications embed one or several
//! connections, forward `on_packet` / `on_timer` to the right one and act on the
//! returned [`TcpEvents`]. Data is a byte count (`write`), never a payload.
//!
//! ## Wire format
//! Packets are `PacketKind::Tcp` with a [`TcpHeader`]: absolute 64-bit sequence
//! numbers, SYN = sequence number 0, data from 1, the FIN after the data. IP packet
//! sizes are honest: 20 (IP) + 20 (TCP) + 12 (timestamp option, always on as in Linux)
//! = 52 bytes plus payload, plus the SACK option (2 + 8n bytes padded to 4, RFC 2018)
//! when blocks are carried; SYN and SYN-ACK are 60 bytes (MSS, SACK-permitted,
//! timestamps, window scale). Pure ACKs are 52 bytes, 64/72/80 with 1/2/3 SACK blocks.
//! As Linux does, a data segment that carries SACK blocks has its payload reduced so
//! the packet still fits `mss + 52`.
//!
//! ## Timers
//! Each endpoint has three timers: retransmission (also used for SYN / SYN-ACK, and,
//! as in Linux, for the sender's tail loss probe and RACK reorder timeout: the sender
//! exposes one deadline and what it is for), delayed ACK and pacing. The RTO deadline moves on almost every ACK; scheduling an event per
//! move would flood the event queue. Instead each timer keeps its `deadline` and the
//! time of the one event it has pending (`scheduled`): moving the deadline later costs
//! nothing; when the pending event fires early it re-schedules itself at the current
//! deadline; only a deadline moved *earlier* than the pending event schedules an extra
//! event, and the superseded one is recognised (its time is no longer `scheduled`) and
//! ignored when it fires. Timer `kind`s encode connection index, side and timer type
//! (see [`timer_kind`]); kinds with bit 31 set are left to the application.

use super::cc::CongestionControl;
use super::config::TcpConfig;
use super::receiver::Receiver;
use super::sender::{Sender, TxSeg};
use crate::packet::{tcp_flags, Ecn, NodeId, Packet, TcpHeader};
use crate::time::{SimDuration, SimTime};

pub use super::config::HEADER_BYTES;
/// SYN / SYN-ACK: 52 + MSS (4) + SACK-permitted (2) + window scale (3) + padding (1).
pub const SYN_BYTES: u32 = 60;
/// The same without the timestamp option: 40 + MSS (4) + NOP, NOP, SACK-permitted (4) +
/// NOP, window scale (4), as Linux lays them out.
pub const SYN_BYTES_NO_TS: u32 = 52;
/// Linux `tcp_syn_retries`: SYN retransmissions before giving up.
const SYN_RETRIES: u32 = 6;
/// Linux `tcp_synack_retries`.
const SYNACK_RETRIES: u32 = 5;
/// Application timer kinds have this bit set; TCP's never do.
pub const APP_TIMER_BIT: u32 = 1 << 31;

/// Bytes of the SACK option carrying `n` blocks: 2 + 8n padded to a multiple of 4.
pub fn sack_option_bytes(n: usize) -> u32 {
    if n == 0 {
        0
    } else {
        (2 + 8 * n as u32).div_ceil(4) * 4
    }
}

/// One end of the connection. `A` opens it (sends the SYN).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    A = 0,
    B = 1,
}

impl Side {
    pub fn other(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }
    fn idx(self) -> usize {
        self as usize
    }
}

/// The timer types of an endpoint.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TimerType {
    Rto = 0,
    DelAck = 1,
    /// Pacing: the sender may transmit again (Linux's pacing hrtimer).
    Pace = 2,
}

/// Timer `kind` for connection `conn`, side, type: bits 0–1 type, bit 2 side,
/// bits 3–30 connection index.
pub fn timer_kind(conn: u32, side: Side, t: TimerType) -> u32 {
    debug_assert!(conn < (1 << 28));
    (conn << 3) | ((side as u32) << 2) | t as u32
}

/// Inverse of [`timer_kind`]; `None` for application timers.
pub fn decode_timer(kind: u32) -> Option<(u32, Side, TimerType)> {
    if kind & APP_TIMER_BIT != 0 {
        return None;
    }
    let t = match kind & 3 {
        0 => TimerType::Rto,
        1 => TimerType::DelAck,
        2 => TimerType::Pace,
        _ => return None,
    };
    let side = if kind & 4 != 0 { Side::B } else { Side::A };
    Some((kind >> 3, side, t))
}

/// What the network offers a connection. `app::FlowCtx` implements it (in `app`, so
/// that TCP does not depend on the application layer); tests can supply
/// their own network.
pub trait TcpHost {
    fn now(&self) -> SimTime;
    /// The 5-tuple hash of sub-connection `conn`'s packets from node `from`. It is
    /// constant for a connection's side: [`TcpConn::connect`] asks once per side.
    fn packet_hash(&self, from: NodeId, conn: u32) -> u32;
    /// A fresh packet of sub-connection `conn` from node `from` to the other endpoint,
    /// with `hash`, what [`TcpHost::packet_hash`] gave for `from` and `conn`.
    fn new_packet(&mut self, from: NodeId, size: u32, conn: u32, hash: u32) -> Packet;
    fn send(&mut self, pkt: Packet);
    fn timer_at(&mut self, at: SimTime, kind: u32);
    fn sample(&mut self, metric: &'static str, value: f64);
    /// A draw from the flow's random stream (only controls that randomise use it).
    fn random_u64(&mut self) -> u64;
}

/// A timer with one pending event (see the module doc).
#[derive(Copy, Clone, Debug)]
struct Timer {
    deadline: SimTime,
    scheduled: SimTime,
}

impl Timer {
    const fn new() -> Self {
        Timer {
            deadline: SimTime::NEVER,
            scheduled: SimTime::NEVER,
        }
    }
    fn set<H: TcpHost>(&mut self, h: &mut H, at: SimTime, kind: u32) {
        self.deadline = at;
        if at < self.scheduled {
            h.timer_at(at, kind);
            self.scheduled = at.max(h.now());
        }
    }
    /// The event scheduled for this timer fired: true if the deadline has come.
    fn fire<H: TcpHost>(&mut self, h: &mut H, kind: u32) -> bool {
        let now = h.now();
        #[cfg(feature = "event-stats")]
        {
            use crate::event::stats::count;
            if now != self.scheduled {
                count(10);
            } else if self.deadline == SimTime::NEVER || self.deadline > now {
                count(11);
            } else {
                count(12);
                match decode_timer(kind).map(|d| d.2) {
                    Some(TimerType::Rto) => count(13),
                    Some(TimerType::DelAck) => count(14),
                    _ => count(15),
                }
            }
        }
        if now != self.scheduled {
            return false; // superseded by an earlier event
        }
        self.scheduled = SimTime::NEVER;
        if self.deadline == SimTime::NEVER {
            false
        } else if self.deadline > now {
            h.timer_at(self.deadline, kind);
            self.scheduled = self.deadline;
            false
        } else {
            self.deadline = SimTime::NEVER;
            true
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Listen,
    SynSent,
    SynRcvd,
    Established,
    Failed,
}

/// Events of one `on_packet` / `on_timer` / `write` call, at endpoint `side`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TcpEvents {
    pub side: Side,
    /// The handshake completed at this side.
    pub connected: bool,
    /// Payload bytes newly delivered in order to this side's application.
    pub delivered: u64,
    /// The peer's FIN arrived (in order).
    pub peer_closed: bool,
    /// Everything this side wrote so far is now acknowledged.
    pub all_acked: bool,
    /// The handshake was abandoned after the SYN retries.
    pub failed: bool,
}

impl TcpEvents {
    fn at(side: Side) -> Self {
        TcpEvents {
            side,
            connected: false,
            delivered: 0,
            peer_closed: false,
            all_acked: false,
            failed: false,
        }
    }
}

/// One side of a connection. Laid out in declaration order (`repr(C)`), 64-byte
/// aligned: the timers and identity every segment and timer of this side reads share
/// the first cache line; the receiver and the sender (each with its per-segment state
/// first) follow; the handshake and trace state, read rarely, come last.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct Endpoint {
    rto: Timer,
    delack: Timer,
    pace: Timer,
    node: NodeId,
    /// `TcpHost::packet_hash` of this side's packets (set by `connect`).
    hash: u32,
    phase: Phase,
    /// Data written since the last `all_acked` event.
    unacked_writes: bool,
    trace: bool,
    rcv: Receiver,
    snd: Sender,
    /// Handshake retransmission state.
    hs_deadline: SimTime,
    hs_timeout: SimDuration,
    /// When this side last sent its SYN or SYN-ACK.
    hs_sent: SimTime,
    hs_retries: u32,
    last_trace: (u32, u32, SimDuration),
}

impl Endpoint {
    fn new(cfg: &TcpConfig) -> Self {
        Endpoint {
            phase: Phase::Idle,
            node: 0,
            hash: 0,
            snd: Sender::new(cfg),
            rcv: {
                let mut r = Receiver::new(cfg.delayed_ack, cfg.mss, cfg.rcv_window);
                r.set_dsack(cfg.dsack);
                // the MSS option: payload plus the timestamp option (Linux advmss)
                let advmss = cfg.mss + if cfg.timestamps { 12 } else { 0 };
                r.set_autotune(cfg.rcv_autotune, advmss, cfg.hz);
                r
            },
            rto: Timer::new(),
            delack: Timer::new(),
            pace: Timer::new(),
            hs_deadline: SimTime::NEVER,
            hs_timeout: cfg.initial_rto,
            hs_retries: 0,
            hs_sent: SimTime::ZERO,
            unacked_writes: false,
            trace: false,
            last_trace: (0, 0, SimDuration::ZERO),
        }
    }
}

/// The configuration every transmitted segment reads, copied from the connection's
/// [`TcpConfig`] into the connection's first cache line.
#[derive(Copy, Clone, Debug)]
struct SegCfg {
    mss: u32,
    timestamps: bool,
    gso: Option<super::gso::GsoKernel>,
}

impl SegCfg {
    fn of(cfg: &TcpConfig) -> Self {
        SegCfg {
            mss: cfg.mss,
            timestamps: cfg.timestamps,
            gso: cfg.gso,
        }
    }
    /// [`TcpConfig::header_bytes`].
    fn header_bytes(&self) -> u32 {
        super::config::header_bytes(self.timestamps)
    }
}

/// A TCP connection (both endpoints). See the module doc.
///
/// Laid out in declaration order (`repr(C)`), 64-byte aligned: a segment reads the
/// first cache line (the connection's number, which side it is for, the segment
/// configuration) and then only its own side's [`Endpoint`]; the full configuration,
/// read at set-up and on rare paths, comes last. `layout_keeps_each_path_on_few_lines`
/// pins it.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct TcpConn {
    idx: u32,
    /// `ends[0].node`, for [`TcpConn::side_at`] without reading side A's state.
    node_a: NodeId,
    seg: SegCfg,
    ends: [Endpoint; 2],
    cfg: TcpConfig,
}

impl TcpConn {
    /// Connection number `idx` of its application (used in timer kinds and as the
    /// sub-connection of `FlowCtx::packet_conn`).
    pub fn new(cfg: &TcpConfig, idx: u32) -> Self {
        let mut ends = [Endpoint::new(cfg), Endpoint::new(cfg)];
        ends[0].trace = cfg.trace;
        TcpConn {
            idx,
            node_a: 0,
            seg: SegCfg::of(cfg),
            ends,
            cfg: *cfg,
        }
    }

    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }
    pub fn index(&self) -> u32 {
        self.idx
    }

    /// The application reports TX completions ([`on_tx_complete`](Self::on_tx_complete)):
    /// with `[tcp] tsq` both senders run TCP Small Queues.
    pub fn enable_tx_completions(&mut self) {
        if self.cfg.tsq {
            for e in self.ends.iter_mut() {
                e.snd.enable_tsq();
            }
        }
    }

    /// `bytes` of `side`'s skbs left its host's first link or were dropped there (Linux
    /// `tcp_wfree`); a throttled sender tries to send now (`tcp_tsq_handler`).
    pub fn on_tx_complete<H: TcpHost>(&mut self, h: &mut H, side: Side, bytes: u32) {
        let e = &mut self.ends[side.idx()];
        if e.snd.tx_complete(bytes) && e.phase == Phase::Established {
            self.transmit(h, side);
            self.trace(h, side);
            self.sync_timers(h, side);
        }
    }

    /// Which side's sender records traces (default: `A` when `trace` is on).
    pub fn set_trace_side(&mut self, side: Option<Side>) {
        for e in self.ends.iter_mut() {
            e.trace = false;
        }
        if let (Some(s), true) = (side, self.cfg.trace) {
            self.ends[s.idx()].trace = true;
        }
    }

    /// Opens the connection: side `A` at node `a` sends its SYN to side `B` at `b`.
    pub fn connect<H: TcpHost>(&mut self, h: &mut H, a: NodeId, b: NodeId) {
        self.ends[0].node = a;
        self.ends[1].node = b;
        self.node_a = a;
        for e in self.ends.iter_mut() {
            e.hash = h.packet_hash(e.node, self.idx);
        }
        self.ends[1].phase = Phase::Listen;
        self.ends[0].phase = Phase::SynSent;
        if self.cfg.cc.uses_rng() {
            for e in self.ends.iter_mut() {
                e.snd.cc.set_seed(h.random_u64());
            }
        }
        if self.ends[0].snd.rtt.is_ns2() {
            // each ns-2 agent's tick clock has its own random phase (`boot_time_`)
            for e in self.ends.iter_mut() {
                e.snd.rtt.set_ns2_phase(h.random_u64());
            }
        }
        self.send_syn(h, Side::A);
        self.sync_timers(h, Side::A);
    }

    /// The side whose endpoint is at `node`.
    pub fn side_at(&self, node: NodeId) -> Side {
        if self.node_a == node {
            Side::A
        } else {
            Side::B
        }
    }
    pub fn node(&self, side: Side) -> NodeId {
        self.ends[side.idx()].node
    }

    pub fn is_established(&self, side: Side) -> bool {
        self.ends[side.idx()].phase == Phase::Established
    }
    /// How often `side` had to resend its SYN (A) or SYN-ACK (B).
    pub fn handshake_retries(&self, side: Side) -> u32 {
        self.ends[side.idx()].hs_retries
    }
    pub fn has_failed(&self) -> bool {
        self.ends[0].phase == Phase::Failed
    }
    pub fn sender(&self, side: Side) -> &Sender {
        &self.ends[side.idx()].snd
    }
    pub fn receiver(&self, side: Side) -> &Receiver {
        &self.ends[side.idx()].rcv
    }
    /// Payload bytes delivered in order to `side`'s application so far.
    pub fn bytes_received(&self, side: Side) -> u64 {
        self.ends[side.idx()].rcv.delivered
    }
    /// Both directions are closed and every FIN acknowledged.
    pub fn is_closed(&self) -> bool {
        self.ends
            .iter()
            .all(|e| e.snd.fin_acked() && e.rcv.fin_received)
    }

    /// Queues `bytes` of application data at `side` (use [`super::UNLIMITED`] for an
    /// endless transfer) and sends what the windows allow.
    pub fn write<H: TcpHost>(&mut self, h: &mut H, side: Side, bytes: u64) {
        let e = &mut self.ends[side.idx()];
        e.snd.write(h.now(), bytes);
        if bytes > 0 {
            e.unacked_writes = true;
        }
        self.transmit(h, side);
        self.sync_timers(h, side);
    }

    /// No more data from `side`: its FIN follows the queued data.
    pub fn close<H: TcpHost>(&mut self, h: &mut H, side: Side) {
        self.ends[side.idx()].snd.close();
        self.transmit(h, side);
        self.sync_timers(h, side);
    }

    /// Drops `side`'s unsent data and closes (the application stops early).
    pub fn abort_unsent<H: TcpHost>(&mut self, h: &mut H, side: Side) {
        self.ends[side.idx()].snd.truncate_unsent();
        self.close(h, side);
    }

    /// Whether a timer `kind` belongs to this connection.
    pub fn owns_timer(&self, kind: u32) -> bool {
        decode_timer(kind).is_some_and(|(c, _, _)| c == self.idx)
    }

    /// A packet of this connection arrived at `pkt.dst`.
    pub fn on_packet<H: TcpHost>(&mut self, h: &mut H, pkt: &Packet) -> TcpEvents {
        let side = self.side_at(pkt.dst);
        let mut ev = TcpEvents::at(side);
        let hd = &pkt.tcp;
        let now = h.now();
        let syn = hd.flags & tcp_flags::SYN != 0;
        let ackf = hd.flags & tcp_flags::ACK != 0;
        let i = side.idx();
        match self.ends[i].phase {
            Phase::Idle | Phase::Failed => return ev,
            Phase::Listen => {
                if syn && !ackf {
                    let ecn = self.cfg.ecn
                        && hd.flags & (tcp_flags::ECE | tcp_flags::CWR)
                            == (tcp_flags::ECE | tcp_flags::CWR);
                    let e = &mut self.ends[i];
                    e.rcv.on_syn(now, hd.ts_val, ecn);
                    e.rcv.set_accecn(hd.ae && self.cfg.cc.needs_accecn());
                    e.snd.set_peer_window(hd.wnd);
                    e.phase = Phase::SynRcvd;
                    e.hs_timeout = self.cfg.initial_rto;
                    self.send_syn(h, side);
                    self.sync_timers(h, side);
                }
                return ev;
            }
            Phase::SynSent => {
                if syn && ackf && hd.ack == 1 {
                    let ecn = self.cfg.ecn && hd.flags & tcp_flags::ECE != 0;
                    let e = &mut self.ends[i];
                    e.rcv.on_syn(now, hd.ts_val, ecn);
                    e.rcv.set_accecn(hd.ae && self.cfg.cc.needs_accecn());
                    e.snd.set_peer_window(hd.wnd);
                    e.phase = Phase::Established;
                    e.hs_deadline = SimTime::NEVER;
                    let rtt = handshake_rtt(hd, now, e, self.cfg.timestamps);
                    e.snd.establish(now, rtt, e.hs_retries, ecn);
                    ev.connected = true;
                    // The third segment of the handshake, then any queued data.
                    self.send_ack(h, side);
                    self.transmit(h, side);
                    self.sync_timers(h, side);
                }
                return ev;
            }
            Phase::SynRcvd => {
                if syn && !ackf {
                    // Our SYN-ACK was lost: the peer repeats its SYN.
                    self.ends[i].rcv.ts_recent = hd.ts_val;
                    self.send_syn(h, side);
                    self.sync_timers(h, side);
                    return ev;
                }
                if !(ackf && hd.ack >= 1) {
                    return ev;
                }
                let e = &mut self.ends[i];
                e.phase = Phase::Established;
                e.hs_deadline = SimTime::NEVER;
                let rtt = handshake_rtt(hd, now, e, self.cfg.timestamps);
                let ecn = e.rcv.ecn();
                e.snd.establish(now, rtt, e.hs_retries, ecn);
                ev.connected = true;
                // Fall through: the segment may carry data.
            }
            Phase::Established => {
                if syn {
                    // A repeated SYN-ACK (our ACK was lost): acknowledge again.
                    self.send_ack(h, side);
                    return ev;
                }
            }
        }
        let e = &mut self.ends[i];
        let fin = hd.flags & tcp_flags::FIN != 0;
        let carries = hd.len > 0 || fin;
        if ackf {
            e.snd.on_ack(now, hd, carries);
        }
        let mut ack_now = false;
        if !carries {
            e.rcv.on_pure_ack(hd);
        } else {
            let rto = e.snd.rtt.rto();
            let o = e.rcv.on_segment(now, hd, pkt.ecn == Ecn::Ce, rto);
            ev.delivered = o.delivered;
            ev.peer_closed = o.fin;
            ack_now = o.ack_now;
        }
        if e.unacked_writes && e.snd.all_data_acked() {
            e.unacked_writes = false;
            ev.all_acked = true;
        }
        self.transmit(h, side);
        let e = &mut self.ends[i];
        if ack_now && e.rcv.ack_pending() {
            self.send_ack(h, side);
        }
        self.trace(h, side);
        self.sync_timers(h, side);
        ev
    }

    /// A timer armed by this connection fired (`kind` from [`timer_kind`]).
    pub fn on_timer<H: TcpHost>(&mut self, h: &mut H, kind: u32) -> TcpEvents {
        let Some((_, side, t)) = decode_timer(kind) else {
            return TcpEvents::at(Side::A);
        };
        let mut ev = TcpEvents::at(side);
        let i = side.idx();
        match t {
            TimerType::Rto => {
                if !self.ends[i].rto.fire(h, kind) {
                    return ev;
                }
                let now = h.now();
                let e = &mut self.ends[i];
                match e.phase {
                    Phase::SynSent | Phase::SynRcvd => {
                        if e.hs_deadline > now {
                            self.sync_timers(h, side);
                            return ev;
                        }
                        let limit = if e.phase == Phase::SynSent {
                            SYN_RETRIES
                        } else {
                            SYNACK_RETRIES
                        };
                        if e.hs_retries >= limit {
                            e.phase = if e.phase == Phase::SynSent {
                                Phase::Failed
                            } else {
                                Phase::Listen
                            };
                            e.hs_deadline = SimTime::NEVER;
                            ev.failed = side == Side::A;
                            return ev;
                        }
                        e.hs_retries += 1;
                        e.hs_timeout = (e.hs_timeout * 2).min(super::rtt::MAX_RTO);
                        self.send_syn(h, side);
                    }
                    Phase::Established => {
                        if e.snd.rto_deadline() > now {
                            self.sync_timers(h, side);
                            return ev;
                        }
                        // The slot also serves tail loss probes and RACK's reorder
                        // timeout (Linux tcp_write_timer_handler).
                        let fired = e.snd.on_xmit_timer(now);
                        if e.trace && fired == super::sender::XmitTimer::Rto {
                            h.sample("rto", e.snd.rtt.rto().as_secs_f64());
                        }
                        self.transmit(h, side);
                        self.trace(h, side);
                    }
                    _ => {}
                }
            }
            TimerType::DelAck => {
                if !self.ends[i].delack.fire(h, kind) {
                    return ev;
                }
                if self.ends[i].rcv.on_delack_timer() {
                    self.send_ack(h, side);
                }
            }
            TimerType::Pace => {
                if !self.ends[i].pace.fire(h, kind) {
                    return ev;
                }
                self.transmit(h, side);
                self.trace(h, side);
            }
        }
        self.sync_timers(h, side);
        ev
    }

    // always inlined: it runs after every segment and timer, and its out-of-line call
    // (frame and register saves) cost as much as its three compares (−23 instructions
    // per bottleneck packet on the ns-2 RED case, −25 on residential RRUL)
    #[inline(always)]
    fn sync_timers<H: TcpHost>(&mut self, h: &mut H, side: Side) {
        let e = &mut self.ends[side.idx()];
        let rto_at = match e.phase {
            Phase::SynSent | Phase::SynRcvd => e.hs_deadline,
            Phase::Established => e.snd.rto_deadline(),
            _ => SimTime::NEVER,
        };
        if rto_at != e.rto.deadline {
            e.rto
                .set(h, rto_at, timer_kind(self.idx, side, TimerType::Rto));
        }
        let d = e.rcv.delack_deadline();
        if d != e.delack.deadline {
            e.delack
                .set(h, d, timer_kind(self.idx, side, TimerType::DelAck));
        }
        let p = if e.phase == Phase::Established {
            e.snd.pace_deadline()
        } else {
            SimTime::NEVER
        };
        if p != e.pace.deadline {
            e.pace
                .set(h, p, timer_kind(self.idx, side, TimerType::Pace));
        }
    }

    fn send_syn<H: TcpHost>(&mut self, h: &mut H, side: Side) {
        let now = h.now();
        let ecn = self.cfg.ecn;
        let accecn = ecn && self.cfg.cc.needs_accecn();
        let (size, ts_val) = if self.cfg.timestamps {
            (SYN_BYTES, now)
        } else {
            (SYN_BYTES_NO_TS, SimTime::ZERO)
        };
        let e = &mut self.ends[side.idx()];
        let mut p = h.new_packet(e.node, size, self.idx, e.hash);
        let (flags, ack) = if side == Side::A {
            (
                tcp_flags::SYN
                    | if ecn {
                        tcp_flags::ECE | tcp_flags::CWR
                    } else {
                        0
                    },
                0,
            )
        } else {
            let ece = if e.rcv.ecn() { tcp_flags::ECE } else { 0 };
            (tcp_flags::SYN | tcp_flags::ACK | ece, 1)
        };
        p.tcp = TcpHeader {
            seq: 0,
            ack,
            flags,
            wnd: e.rcv.wnd,
            ts_val,
            ts_ecr: if side == Side::B {
                e.rcv.ts_recent
            } else {
                SimTime::ZERO
            },
            // AccECN: AE with ECE and CWR on the SYN asks for it; the SYN-ACK confirms.
            ae: if side == Side::A {
                accecn
            } else {
                e.rcv.accecn()
            },
            ..Default::default()
        };
        if side == Side::B {
            e.rcv.ack_sent();
        }
        e.hs_deadline = now + e.hs_timeout;
        e.hs_sent = now;
        h.send(p);
    }

    /// Sends everything the sender allows now, each segment carrying the current ACK.
    #[inline(always)]
    fn transmit<H: TcpHost>(&mut self, h: &mut H, side: Side) {
        // A sender with nothing to send (the receiving end of a one-way transfer, on most
        // segments): next_segment would return None and change nothing. Tested here, in
        // every caller, without a call.
        if self.seg.gso.is_none() && self.ends[side.idx()].snd.is_quiescent() {
            return;
        }
        self.transmit_some(h, side);
    }

    /// `transmit` once the sender may have something to send.
    fn transmit_some<H: TcpHost>(&mut self, h: &mut H, side: Side) {
        let now = h.now();
        let (idx, cfg) = (self.idx, &self.seg);
        let e = &mut self.ends[side.idx()];
        if e.phase != Phase::Established {
            return;
        }
        if cfg.gso.is_some() {
            return Self::transmit_gso(h, e, idx, cfg, now);
        }
        // Sending changes no SACK block: the option space is the same for the whole burst.
        let n_sack = e.rcv.sack_blocks().len().min(3);
        let budget = cfg.mss - sack_option_bytes(n_sack);
        while let Some(seg) = e.snd.next_segment(now, budget) {
            let pkt = build(h, e, &seg, 1, n_sack, idx, cfg);
            h.send(pkt);
        }
    }

    /// `transmit` with GSO on (Linux `tcp_write_xmit` building skbs of `tcp_tso_segs`
    /// segments): consecutive full-sized new-data segments join one skb (one packet
    /// with `gso_segs`); a retransmission, a short segment or a FIN goes in an skb of
    /// its own. The sender paces once per skb.
    #[inline(never)]
    fn transmit_gso<H: TcpHost>(h: &mut H, e: &mut Endpoint, idx: u32, cfg: &SegCfg, now: SimTime) {
        let joins = |s: &TxSeg, budget: u32| !s.retrans && !s.fin && s.payload == budget;
        // Sending changes no SACK block: the option space is the same for the whole burst.
        let n_sack = e.rcv.sack_blocks().len().min(3);
        let budget = cfg.mss - sack_option_bytes(n_sack);
        loop {
            let Some(first) = e.snd.next_segment(now, budget) else {
                e.snd.close_skb(now);
                break;
            };
            let mut skb = first;
            let mut segs = 1u32;
            let mut rest = None;
            if joins(&first, budget) {
                let goal = e.snd.tso_segs().min(u8::MAX as u32);
                while segs < goal {
                    match e.snd.next_segment(now, budget) {
                        Some(s) if joins(&s, budget) && s.seq == skb.end => {
                            skb.end = s.end;
                            skb.payload += s.payload;
                            segs += 1;
                        }
                        Some(s) => {
                            rest = Some(s);
                            break;
                        }
                        None => break,
                    }
                }
            }
            e.snd.close_skb(now);
            let pkt = build(h, e, &skb, segs, n_sack, idx, cfg);
            e.snd.tsq_sent(pkt.size);
            h.send(pkt);
            if let Some(s) = rest {
                let pkt = build(h, e, &s, 1, n_sack, idx, cfg);
                e.snd.tsq_sent(pkt.size);
                h.send(pkt);
            }
        }
    }

    fn send_ack<H: TcpHost>(&mut self, h: &mut H, side: Side) {
        let e = &mut self.ends[side.idx()];
        let seq = e.snd.snd_nxt;
        let n = e.rcv.sack_blocks().len().min(3);
        let mut p = h.new_packet(
            e.node,
            self.seg.header_bytes() + sack_option_bytes(n),
            self.idx,
            e.hash,
        );
        p.tcp = header(
            ts_clock(h.now(), self.seg.timestamps),
            e,
            seq,
            0,
            tcp_flags::ACK,
            n,
        );
        e.rcv.ack_sent();
        h.send(p);
    }

    /// Samples cwnd, ssthresh and srtt when they changed, at a traced endpoint. The test
    /// is inlined at the callers (after every segment), the sampling is not.
    #[inline(always)]
    fn trace<H: TcpHost>(&mut self, h: &mut H, side: Side) {
        if self.ends[side.idx()].trace {
            self.trace_sample(h, side);
        }
    }

    #[inline(never)]
    fn trace_sample<H: TcpHost>(&mut self, h: &mut H, side: Side) {
        let e = &mut self.ends[side.idx()];
        let cur = (
            e.snd.w.cwnd,
            e.snd.w.ssthresh,
            e.snd.rtt.srtt().unwrap_or(SimDuration::ZERO),
        );
        if cur.0 != e.last_trace.0 || cur.1 != e.last_trace.1 {
            h.sample("cwnd", e.snd.cwnd_bytes() as f64);
            if let Some(s) = e.snd.ssthresh_bytes() {
                h.sample("ssthresh", s as f64);
            }
        }
        if cur.2 != e.last_trace.2 {
            h.sample("srtt", cur.2.as_secs_f64());
        }
        e.last_trace = cur;
    }
}

/// The header of a segment from `e`; `ts_val` is its timestamp (zero without the option).
/// (Inlined: the header is then written into the packet in place.)
#[inline(always)]
fn header(
    ts_val: SimTime,
    e: &Endpoint,
    seq: u64,
    len: u32,
    mut flags: u8,
    n_sack: usize,
) -> TcpHeader {
    if e.rcv.ece {
        flags |= tcp_flags::ECE;
    }
    let ace = e.rcv.ce_packets;
    let mut h = TcpHeader {
        seq,
        ack: e.rcv.rcv_nxt,
        len,
        flags,
        wnd: e.rcv.wnd,
        ts_val,
        ts_ecr: e.rcv.ts_recent,
        ae: false,
        ace,
        ..TcpHeader::default()
    };
    h.set_sacks(&e.rcv.sack_blocks()[..n_sack]);
    h
}

/// The handshake's RTT sample at the side that completes it: the time since this side's
/// SYN (SYN-ACK) was sent if it was not retransmitted (Karn), else the timestamp echo if
/// there is one. Linux prefers the sequence sample of the never-retransmitted SYN
/// (`tcp_clean_rtx_queue`'s `first_ackt`; `tcp_synack_rtt_meas` on the passive side) to the
/// echo (`tcp_ack_update_rtt` uses `rcv_tsecr` only when there is no such sample), so a SYN
/// sent at t = 0, whose timestamp value is 0, is timed like any other.
fn handshake_rtt(
    hd: &TcpHeader,
    now: SimTime,
    e: &Endpoint,
    timestamps: bool,
) -> Option<SimDuration> {
    if e.hs_retries == 0 {
        Some(now.saturating_since(e.hs_sent))
    } else if timestamps && hd.ts_ecr > SimTime::ZERO {
        Some(now.saturating_since(hd.ts_ecr))
    } else {
        None
    }
}

/// The timestamp a segment carries: the clock, or none (zero: nothing to echo) when the
/// option is off.
#[inline]
fn ts_clock(now: SimTime, timestamps: bool) -> SimTime {
    if timestamps {
        now
    } else {
        SimTime::ZERO
    }
}

/// One data segment: the header (52 bytes with timestamps, 40 without) + payload + SACK;
/// or, with GSO on, an skb of `segs` segments of `seg.payload / segs` bytes each, every
/// one with its own headers (`gso_segs` = `segs`). Always inlined: at its callers
/// `segs` is a constant (1 without GSO) and the call frame goes (−27 instructions per
/// bottleneck packet on the ns-2 RED case and on residential RRUL). `n_sack` is the
/// number of the receiver's SACK blocks an option could carry, `sack_blocks().len()`
/// capped at 3.
#[inline(always)]
fn build<H: TcpHost>(
    h: &mut H,
    e: &mut Endpoint,
    seg: &TxSeg,
    segs: u32,
    n_sack: usize,
    idx: u32,
    cfg: &SegCfg,
) -> Packet {
    debug_assert_eq!(n_sack, e.rcv.sack_blocks().len().min(3));
    // As many SACK blocks as fit next to this segment's payload.
    let per_seg = seg.payload / segs;
    let mut n = n_sack;
    while n > 0 && per_seg + sack_option_bytes(n) > cfg.mss {
        n -= 1;
    }
    let mut flags = tcp_flags::ACK;
    if seg.fin {
        flags |= tcp_flags::FIN;
    }
    if seg.cwr {
        flags |= tcp_flags::CWR;
    }
    let size = segs * (cfg.header_bytes() + sack_option_bytes(n)) + seg.payload;
    let mut p = h.new_packet(e.node, size, idx, e.hash);
    if cfg.gso.is_some() {
        p.gso_segs = segs as u8;
    }
    p.tcp = header(
        ts_clock(h.now(), cfg.timestamps),
        e,
        seg.seq,
        seg.payload,
        flags,
        n,
    );
    if seg.ect {
        p.ecn = e.snd.ect_codepoint();
    }
    e.rcv.ack_sent();
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A segment reads the connection's first cache line and then its own side only;
    /// an endpoint's timers and identity fill its first line, the receiver and the
    /// sender start on lines of their own (their inner order: their own tests).
    #[test]
    fn layout_keeps_each_path_on_few_lines() {
        use std::mem::{align_of, offset_of, size_of};
        let line = |off: usize| off / 64;
        assert_eq!(align_of::<TcpConn>(), 64);
        assert_eq!(align_of::<Endpoint>(), 64);
        for off in [
            offset_of!(TcpConn, idx),
            offset_of!(TcpConn, node_a),
            offset_of!(TcpConn, seg) + size_of::<SegCfg>() - 1,
        ] {
            assert_eq!(line(off), 0, "offset {off}");
        }
        assert_eq!(offset_of!(TcpConn, ends), 64);
        assert!(offset_of!(TcpConn, cfg) >= 64 + 2 * size_of::<Endpoint>());
        for off in [
            offset_of!(Endpoint, rto),
            offset_of!(Endpoint, delack),
            offset_of!(Endpoint, pace) + size_of::<Timer>() - 1,
            offset_of!(Endpoint, node),
            offset_of!(Endpoint, hash),
            offset_of!(Endpoint, phase),
            offset_of!(Endpoint, unacked_writes),
            offset_of!(Endpoint, trace),
        ] {
            assert_eq!(line(off), 0, "offset {off}");
        }
        assert_eq!(offset_of!(Endpoint, rcv), 64);
        assert_eq!(offset_of!(Endpoint, snd) % 64, 0);
        assert!(
            offset_of!(Endpoint, hs_deadline) >= offset_of!(Endpoint, snd) + size_of::<Sender>()
        );
    }

    /// The copy of the segment configuration in the first line equals the configuration.
    #[test]
    fn segment_configuration_copy_matches_the_configuration() {
        for (ts, gso) in [
            (true, None),
            (false, Some(super::super::gso::GsoKernel::Linux6_1)),
        ] {
            let cfg = TcpConfig {
                timestamps: ts,
                gso,
                mss: 1448,
                ..Default::default()
            };
            let c = TcpConn::new(&cfg, 3);
            assert_eq!(c.seg.mss, cfg.mss);
            assert_eq!(c.seg.gso, cfg.gso);
            assert_eq!(c.seg.header_bytes(), cfg.header_bytes());
        }
    }

    #[test]
    fn timer_kinds_round_trip_and_leave_room_for_the_application() {
        for conn in [0, 1, 77, (1 << 28) - 1] {
            for side in [Side::A, Side::B] {
                for t in [TimerType::Rto, TimerType::DelAck, TimerType::Pace] {
                    let k = timer_kind(conn, side, t);
                    assert_eq!(k & APP_TIMER_BIT, 0);
                    assert_eq!(decode_timer(k), Some((conn, side, t)));
                }
            }
        }
        assert_eq!(decode_timer(APP_TIMER_BIT | 5), None);
    }

    #[test]
    fn handshake_rtt_times_the_syn_sent_at_zero_and_falls_back_to_the_echo_after_a_retry() {
        // A SYN sent at t = 0 carries the timestamp value 0; its SYN-ACK arrives at 50 ms
        // echoing 0. Linux times the never-retransmitted SYN by its send time (50 ms), with
        // or without timestamps; after a retransmitted SYN only the echo can be used (Karn).
        let ms = |v: u64| SimTime::ZERO + SimDuration::from_millis(v);
        let mut e = Endpoint::new(&TcpConfig::default());
        e.hs_sent = SimTime::ZERO;
        let hd = TcpHeader::default(); // ts_ecr = 0: the echo of the SYN's value 0
        assert_eq!(
            handshake_rtt(&hd, ms(50), &e, true),
            Some(SimDuration::from_millis(50))
        );
        assert_eq!(
            handshake_rtt(&hd, ms(50), &e, false),
            Some(SimDuration::from_millis(50))
        );
        // The SYN was retransmitted at 1 s; the SYN-ACK (at 1.05 s) echoes the second SYN's value.
        e.hs_retries = 1;
        e.hs_sent = ms(1000);
        let hd = TcpHeader {
            ts_ecr: ms(1000),
            ..TcpHeader::default()
        };
        assert_eq!(
            handshake_rtt(&hd, ms(1050), &e, true),
            Some(SimDuration::from_millis(50))
        );
        assert_eq!(handshake_rtt(&hd, ms(1050), &e, false), None);
    }

    #[test]
    fn sack_option_sizes_follow_rfc2018() {
        // 2 + 8n bytes, padded to 4 (Linux sends NOP, NOP, SACK).
        assert_eq!([0, 1, 2, 3].map(sack_option_bytes), [0, 12, 20, 28]);
        assert_eq!(HEADER_BYTES + sack_option_bytes(3), 80);
    }
}
