//! Traffic sources and sinks. Each `[[flow]]` instance becomes one flow slot holding an
//! application; the application sees its packets (both directions) and its timers through
//! a [`FlowCtx`], which is also how it sends packets and records metrics.
//!
//! ## Adding a workload
//! Write `app/NAME.rs` with a config struct (serde, `deny_unknown_fields`, documented
//! defaults, a `validate`, a `load_profile` for the resource model), the application
//! implementing [`Application`], and tests; then
//! add one arm to `workload_registry!` below. `tests/defaults.rs` checks the `PARAMS`
//! defaults against the serde defaults (`required` for a key without one).

pub mod bulk;
pub mod cbr;
pub mod has;
pub mod http;
pub mod probe;
pub mod rrul;
pub mod voip;
pub mod web;
pub mod web_users;
pub mod wrt;

use crate::event::Event;
use crate::metrics::Bins;
use crate::net::Net;
use crate::packet::{flow_hash, FlowId, NodeId, Packet, PacketKind};
use crate::params::ScenarioError;
pub use crate::resources::LoadProfile;
use crate::rng::Rng;
use crate::tcp::TcpHost;
use crate::time::{SimDuration, SimTime};
use serde::{Deserialize, Serialize};

/// Scenario-wide settings a workload is validated and built with (the `[tcp]` table's
/// defaults, which a flow's own `tcp = { ... }` overrides field by field).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AppEnv {
    pub tcp: crate::tcp::TcpOptions,
}

impl AppEnv {
    /// The load of a TCP-based workload with the flow's `tcp = { ... }` options `o` over
    /// the scenario's `[tcp]` ([`LoadProfile::tcp`], tracing as the merged options say),
    /// its window the smaller of the receive window and the cwnd cap, in segments, and its
    /// initial window.
    pub fn tcp_load(&self, o: &crate::tcp::TcpOptions) -> LoadProfile {
        let merged = self.tcp.merged(o);
        let resolved = merged.resolve("tcp").ok();
        let window = resolved.as_ref().map_or(f64::INFINITY, |c| {
            (c.rcv_window as f64 / c.mss.max(1) as f64).min(c.max_cwnd as f64)
        });
        LoadProfile {
            window_pkts: window,
            init_window_pkts: resolved.map_or(10.0, |c| c.init_cwnd as f64).min(window),
            ..LoadProfile::tcp(merged.trace.unwrap_or(false))
        }
    }
}

/// A time-stamped measurement of a flow (probe RTT, one-way delay, cwnd ...).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Sample {
    pub t: SimTime,
    pub metric: &'static str,
    pub value: f64,
}

/// Counters and outputs of one flow.
#[derive(Clone, Debug)]
pub struct FlowStats {
    pub warmup: SimTime,
    /// Packets/bytes the flow's endpoints put on the network (both directions).
    pub sent_pkts: u64,
    pub sent_bytes: u64,
    /// Packets of this flow dropped anywhere (qdisc, wire, lower layer).
    pub lost_pkts: u64,
    /// Packets of this flow that arrived CE-marked.
    pub ce_pkts: u64,
    /// Application payload delivered to the receiver (goodput).
    pub delivered_bytes: u64,
    /// Delivered bytes counted from the warm-up on.
    pub delivered_bytes_warm: u64,
    pub delivered_pkts: u64,
    /// Delivered payload bytes per time bin.
    pub goodput_bins: Bins,
    pub samples: Vec<Sample>,
}

impl FlowStats {
    pub fn new(warmup: SimTime, bin: SimDuration) -> Self {
        FlowStats {
            warmup,
            sent_pkts: 0,
            sent_bytes: 0,
            lost_pkts: 0,
            ce_pkts: 0,
            delivered_bytes: 0,
            delivered_bytes_warm: 0,
            delivered_pkts: 0,
            goodput_bins: Bins::new(bin),
            samples: Vec::new(),
        }
    }
}

/// What an application gets when it runs: the clock, its identity, the network, its
/// stats and its random stream.
pub struct FlowCtx<'a> {
    pub now: SimTime,
    pub id: FlowId,
    /// The flow's two endpoints: `src` initiates (sends data for CBR/bulk, requests for probes).
    pub src: NodeId,
    pub dst: NodeId,
    /// When the flow stops generating new work.
    pub stop: SimTime,
    /// DSCP of every packet the flow sends, in both directions: the flow's `dscp` key.
    /// Like a Linux socket's `IP_TOS` set at both ends (netperf `-Y local,remote`, as
    /// Flent runs it), so TCP data, the receiver's ACKs, UDP requests and their
    /// replies all carry it; an ICMP echo reply copies the request's TOS
    /// (`net/ipv4/icmp.c`, `icmp_reply`), the same value.
    pub dscp: u8,
    pub net: &'a mut Net,
    pub stats: &'a mut FlowStats,
    pub rng: &'a mut Rng,
}

impl FlowCtx<'_> {
    /// A fresh packet of this flow from `from` to the other endpoint.
    pub fn packet(&mut self, from: NodeId, size: u32, kind: PacketKind) -> Packet {
        self.packet_conn(from, size, kind, 0)
    }
    /// Like [`packet`](Self::packet) for sub-connection `conn` of a multi-connection app:
    /// each sub-connection hashes like its own 5-tuple, and `seq` carries `conn` so the
    /// application can demultiplex (TCP packets do not use `seq` otherwise).
    pub fn packet_conn(&mut self, from: NodeId, size: u32, kind: PacketKind, conn: u32) -> Packet {
        let hash = self.conn_hash(from, conn);
        self.packet_hashed(from, size, kind, conn, hash)
    }
    /// The hash of sub-connection `conn`'s packets from `from` (a function of the flow,
    /// `conn` and the two endpoints only).
    #[inline]
    pub fn conn_hash(&self, from: NodeId, conn: u32) -> u32 {
        let to = if from == self.src { self.dst } else { self.src };
        // rotate, not shift: connection numbers above 4095 keep distinct hashes
        // (identical to `conn << 20` below 4096).
        flow_hash(self.id ^ conn.rotate_left(20), from.min(to), from.max(to))
    }
    /// [`packet_conn`](Self::packet_conn) with the hash given, `conn_hash(from, conn)`
    /// (TCP computes it once per connection side).
    #[inline]
    fn packet_hashed(
        &mut self,
        from: NodeId,
        size: u32,
        kind: PacketKind,
        conn: u32,
        hash: u32,
    ) -> Packet {
        debug_assert_eq!(hash, self.conn_hash(from, conn));
        let to = if from == self.src { self.dst } else { self.src };
        let uid = self.net.next_uid();
        Packet {
            uid,
            flow: self.id,
            src: from,
            dst: to,
            size,
            kind,
            hash,
            seq: conn as u64,
            sent_at: self.now,
            dscp: self.dscp,
            ..Default::default()
        }
    }
    /// Sends a packet into the network at its `src` host.
    #[inline]
    pub fn send(&mut self, pkt: Packet) {
        self.stats.sent_pkts += 1;
        self.stats.sent_bytes += pkt.size as u64;
        self.net.send(pkt.src, pkt);
    }
    /// Arms a timer of this flow; `kind` comes back in `on_timer`.
    #[inline]
    pub fn timer_at(&mut self, at: SimTime, kind: u32) {
        let at = at.max(self.now);
        self.net.events.push(
            at,
            Event::FlowTimer {
                flow: self.id,
                kind,
            },
        );
    }
    /// Counts application payload delivered to the receiving application.
    #[inline]
    pub fn delivered(&mut self, bytes: u64) {
        self.stats.delivered_bytes += bytes;
        self.stats.delivered_pkts += 1;
        if self.now >= self.stats.warmup {
            self.stats.delivered_bytes_warm += bytes;
        }
        self.stats.goodput_bins.add(self.now, bytes as f64);
    }
    /// Records a time-stamped sample.
    #[inline]
    pub fn sample(&mut self, metric: &'static str, value: f64) {
        self.stats.samples.push(Sample {
            t: self.now,
            metric,
            value,
        });
    }
}

/// The behaviour of a workload.
pub trait Application {
    /// The flow starts (at its start time).
    fn start(&mut self, cx: &mut FlowCtx);
    /// A packet of this flow arrived at one of its endpoints (`pkt.dst`).
    fn on_packet(&mut self, cx: &mut FlowCtx, pkt: &Packet);
    /// A timer armed with `timer_at` fired.
    fn on_timer(&mut self, cx: &mut FlowCtx, kind: u32);
    /// `bytes` of a GSO sender's skbs left its host's first link (`Event::TxComplete`;
    /// `conn` as there). Applications whose connections run TCP Small Queues pass it on.
    fn on_tx_complete(&mut self, _cx: &mut FlowCtx, _conn: u32, _bytes: u32) {}
    /// Summary metrics added to the flow's row in the results (name, value).
    fn summary(&self, _stats: &FlowStats, _out: &mut Vec<(&'static str, f64)>) {}
}

macro_rules! workload_registry {
    ($( $variant:ident : $name:literal => $cfg:ty => $app:ty, reverse = $rev:expr, $about:literal ;)*) => {
        /// The `kind`-specific part of a `[[flow]]` table.
        #[derive(Clone, Debug, Deserialize, Serialize)]
        #[serde(tag = "kind", try_from = "toml::Table")]
        pub enum AppConfig {
            $( #[serde(rename = $name)] $variant($cfg), )*
        }

        // Deserialization goes through a table so that an error inside the kind's own
        // fields names its key (see `scenario::from_tagged_table`).
        impl TryFrom<toml::Table> for AppConfig {
            type Error = String;
            fn try_from(t: toml::Table) -> Result<Self, String> {
                #[derive(Deserialize)]
                #[serde(tag = "kind")]
                enum Repr {
                    $( #[serde(rename = $name)] $variant($cfg), )*
                }
                fn locate(kind: &str, v: toml::Value) -> Option<(String, String)> {
                    match kind {
                        $( $name => crate::params::locate_error::<$cfg>(v), )*
                        _ => None,
                    }
                }
                Ok(match crate::params::from_tagged_table::<Repr>(t, locate)? {
                    $( Repr::$variant(c) => AppConfig::$variant(c), )*
                })
            }
        }

        /// `(name, one-line description)` of every workload kind.
        pub const WORKLOAD_KINDS: &[(&str, &str)] = &[ $( ($name, $about), )* ];

        /// A running application, statically dispatched.
        #[derive(Debug)]
        pub enum AnyApp {
            $( $variant($app), )*
        }

        /// Parameter documentation of a workload kind (None if unknown).
        pub fn workload_params(kind: &str) -> Option<&'static [crate::params::ParamDoc]> {
            match kind { $( $name => Some(<$cfg>::PARAMS), )* _ => None }
        }

        impl AppConfig {
            pub fn kind_name(&self) -> &'static str {
                match self { $( AppConfig::$variant(_) => $name, )* }
            }
            /// Validates the kind-specific fields; `field` is the flow's path (`flow[3]`).
            pub fn validate(&self, field: &str, env: &AppEnv) -> Result<(), ScenarioError> {
                match self { $( AppConfig::$variant(c) => c.validate(field, env), )* }
            }
            /// The load this workload puts on the network (an upper bound per packet),
            /// for the resource model: each kind's `load_profile`.
            pub fn load_profile(&self, env: &AppEnv) -> LoadProfile {
                match self { $( AppConfig::$variant(c) => c.load_profile(env), )* }
            }
            /// Whether packets must be able to travel back from `to` to `from`.
            pub fn needs_reverse_path(&self) -> bool {
                match self { $( AppConfig::$variant(_) => $rev, )* }
            }
            /// Builds the application (after `validate` succeeded with the same `env`).
            /// Composites (`rrul`) have no running form: `Scenario::validate` expands them.
            #[allow(unreachable_code)]
            pub fn build(&self, env: &AppEnv) -> AnyApp {
                match self { $( AppConfig::$variant(c) => AnyApp::$variant(<$app>::new(c, env)), )* }
            }
        }

        impl Application for AnyApp {
            #[inline]
            fn start(&mut self, cx: &mut FlowCtx) {
                match self { $( AnyApp::$variant(a) => a.start(cx), )* }
            }
            #[inline]
            fn on_packet(&mut self, cx: &mut FlowCtx, pkt: &Packet) {
                match self { $( AnyApp::$variant(a) => a.on_packet(cx, pkt), )* }
            }
            #[inline]
            fn on_timer(&mut self, cx: &mut FlowCtx, kind: u32) {
                match self { $( AnyApp::$variant(a) => a.on_timer(cx, kind), )* }
            }
            #[inline]
            fn on_tx_complete(&mut self, cx: &mut FlowCtx, conn: u32, bytes: u32) {
                match self { $( AnyApp::$variant(a) => a.on_tx_complete(cx, conn, bytes), )* }
            }
            fn summary(&self, stats: &FlowStats, out: &mut Vec<(&'static str, f64)>) {
                match self { $( AnyApp::$variant(a) => a.summary(stats, out), )* }
            }
        }
    };
}

workload_registry! {
    Bulk: "bulk" => bulk::BulkConfig => bulk::Bulk, reverse = true,
        "TCP bulk transfer from `from` to `to`, unlimited or `bytes` long";
    Rrul: "rrul" => rrul::RrulMarkedConfig => rrul::Composite, reverse = true,
        "Flent RRUL: 4 TCP up + 4 TCP down marked BE, BK, CS5, EF + UDP EF/BK/BE and ICMP latency probes (expands into bulk/udp_rr/ping flows)";
    RrulBe: "rrul_be" => rrul::RrulConfig => rrul::Composite, reverse = true,
        "Flent RRUL best effort: 4 TCP up + 4 TCP down + 3 UDP and 1 ICMP latency probes (expands into bulk/udp_rr/ping flows)";
    Voip: "voip" => voip::VoipConfig => voip::Voip, reverse = false,
        "isochronous UDP voice stream (G.711 64 kbit/s, 20 ms) with one-way delay, jitter, loss and E-model R";
    Web: "web" => web::WebConfig => web::Web, reverse = true,
        "browser page fetches repeated for the whole run (lookup, main document, objects over 6 connections); sample page_time";
    Wrt: "wrt" => wrt::WrtConfig => wrt::Wrt, reverse = true,
        "web response time client: GET a fixed-size object on a new connection, think, repeat; sample response_time";
    WebUsers: "web_users" => web_users::WebUsersConfig => web_users::WebUsers, reverse = true,
        "Feldmann-style heavy-tailed web user (Pareto pages, objects, think times, sizes); sample object_time";
    Has: "has" => has::HasConfig => has::Has, reverse = true,
        "HTTP adaptive streaming client (4 s segments, capacity-based adaptation or max_always); playback rate, stalls";
    Cbr: "cbr" => cbr::CbrConfig => cbr::Cbr, reverse = false,
        "unresponsive UDP constant bit rate (rate, size)";
    Ping: "ping" => probe::PingConfig => probe::Ping, reverse = true,
        "ICMP echo latency probe at a fixed interval (Flent: 0.2 s)";
    UdpRr: "udp_rr" => probe::UdpRrConfig => probe::UdpRr, reverse = true,
        "UDP request/response latency probe at a fixed interval";
}

/// One flow instance a composite workload (`rrul`) expands into.
#[derive(Clone, Debug)]
pub struct SubFlow {
    /// Appended to the instance's name with a dot (`rrul0.tcp_up0`).
    pub suffix: String,
    /// True if the sub-flow runs from the instance's `to` host to its `from` host.
    pub reversed: bool,
    pub app: AppConfig,
    /// The DSCP the composite gives this sub-flow (`rrul`'s classes), or None: the
    /// instance's `dscp` (default best effort).
    pub dscp: Option<u8>,
}

impl AppConfig {
    /// The ordinary flows a composite workload stands for (validated already), or None
    /// for an ordinary workload. `Scenario::validate` replaces composites by these.
    pub fn expand(&self) -> Option<Vec<SubFlow>> {
        match self {
            AppConfig::Rrul(c) => Some(c.0.expand_marked()),
            AppConfig::RrulBe(c) => Some(c.expand()),
            _ => None,
        }
    }
}

/// Connections embedded in applications send through their flow's context.
impl TcpHost for FlowCtx<'_> {
    #[inline]
    fn now(&self) -> SimTime {
        self.now
    }
    #[inline]
    fn packet_hash(&self, from: NodeId, conn: u32) -> u32 {
        self.conn_hash(from, conn)
    }
    #[inline]
    fn new_packet(&mut self, from: NodeId, size: u32, conn: u32, hash: u32) -> Packet {
        self.packet_hashed(from, size, PacketKind::Tcp, conn, hash)
    }
    #[inline]
    fn send(&mut self, pkt: Packet) {
        FlowCtx::send(self, pkt)
    }
    #[inline]
    fn timer_at(&mut self, at: SimTime, kind: u32) {
        FlowCtx::timer_at(self, at, kind)
    }
    #[inline]
    fn sample(&mut self, metric: &'static str, value: f64) {
        FlowCtx::sample(self, metric, value)
    }
    #[inline]
    fn random_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }
}
