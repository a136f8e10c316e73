//! Latency probes: ICMP echo (`ping`) and UDP request/response (`udp_rr`), one request
//! every `interval` (Flent samples every 0.2 s). The responder answers at once; each
//! reply yields samples `rtt`, `owd_fwd` and `owd_rev` (seconds) at the reply's arrival.
//! A request or reply that is lost yields no sample and counts in `loss_rate`.

use super::{AppEnv, Application, FlowCtx, FlowStats};
use crate::metrics::Histogram;
use crate::packet::{Packet, PacketKind};
use crate::params::ScenarioError;
use crate::time::SimDuration;
use crate::units::DurationSpec;
use serde::{Deserialize, Serialize};

fn d_interval() -> DurationSpec {
    DurationSpec(SimDuration::from_millis(200))
}
fn d_ping_size() -> u32 {
    84 // 20 IP + 8 ICMP + 56 data: Linux ping's default
}
fn d_rr_size() -> u32 {
    29 // 20 IP + 8 UDP + 1 byte: netperf UDP_RR's default request
}

macro_rules! probe_config {
    ($name:ident, $size:literal, $sizedoc:literal, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Debug, Deserialize, Serialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// Time between requests. Default 200 ms.
            #[serde(default = "d_interval")]
            pub interval: DurationSpec,
            /// IP packet size of request and reply.
            #[serde(default = $size)]
            pub size: u32,
        }
        impl $name {
            /// Load on the network, for the resource model: a request per interval,
            /// a reply each, RTT and both one-way delays sampled.
            pub fn load_profile(&self, _env: &AppEnv) -> super::LoadProfile {
                super::LoadProfile {
                    fixed_pps: Some(super::LoadProfile::per_interval(self.interval)),
                    reverse_per_pkt: 1.0,
                    samples_per_pkt: 3.0,
                    fwd_bytes: Some(self.size as f64),
                    rev_bytes: self.size as f64,
                    download: false,
                    units: None,
                    window_pkts: f64::INFINITY,
                    init_window_pkts: 0.0,
                }
            }
            pub const PARAMS: &'static [crate::params::ParamDoc] = &[
                crate::params::ParamDoc {
                    name: "interval",
                    default: "200ms",
                    doc: "time between requests (Flent samples every 0.2 s)",
                },
                crate::params::ParamDoc {
                    name: "size",
                    default: $sizedoc,
                    doc: "IP packet size of request and reply in bytes",
                },
            ];
            pub fn validate(&self, field: &str, _env: &AppEnv) -> Result<(), ScenarioError> {
                if self.interval.0.is_zero() {
                    return Err(ScenarioError::new(
                        format!("{field}.interval"),
                        "must be positive",
                    ));
                }
                if self.size < 28 || self.size > 65535 {
                    return Err(ScenarioError::new(
                        format!("{field}.size"),
                        format!("{} is not allowed (28 to 65535 bytes)", self.size),
                    ));
                }
                Ok(())
            }
        }
    };
}
probe_config!(
    PingConfig,
    "d_ping_size",
    "84",
    "`ping`: ICMP echo. Default size 84 bytes (Linux ping)."
);
probe_config!(
    UdpRrConfig,
    "d_rr_size",
    "29",
    "`udp_rr`: UDP request/response. Default size 29 bytes (netperf UDP_RR)."
);

/// The shared probe engine.
#[derive(Debug)]
pub struct Probe {
    interval: SimDuration,
    size: u32,
    req: PacketKind,
    rep: PacketKind,
    sent: u64,
    rtt: Histogram,
}

impl Probe {
    fn with(interval: SimDuration, size: u32, req: PacketKind, rep: PacketKind) -> Self {
        Probe {
            interval,
            size,
            req,
            rep,
            sent: 0,
            rtt: Histogram::new(),
        }
    }
}

impl Application for Probe {
    fn start(&mut self, cx: &mut FlowCtx) {
        self.on_timer(cx, 0);
    }
    fn on_timer(&mut self, cx: &mut FlowCtx, _kind: u32) {
        if cx.now >= cx.stop {
            return;
        }
        let mut p = cx.packet(cx.src, self.size, self.req);
        p.seq = self.sent;
        self.sent += 1;
        cx.send(p);
        cx.timer_at(cx.now + self.interval, 0);
    }
    fn on_packet(&mut self, cx: &mut FlowCtx, pkt: &Packet) {
        if pkt.kind == self.req {
            // At the responder: answer at once, echoing the request's send instant (as
            // ping and irtt carry their timestamps in the payload; see `Packet::tcp`).
            let mut r = cx.packet(cx.dst, self.size, self.rep);
            r.seq = pkt.seq;
            r.tcp.ts_ecr = pkt.sent_at;
            cx.send(r);
        } else {
            // The reply left the responder the instant the request arrived, so its
            // `sent_at` splits the round trip into the two one-way delays.
            let fwd = pkt.sent_at.saturating_since(pkt.tcp.ts_ecr).as_nanos();
            let rev = cx.now.saturating_since(pkt.sent_at).as_nanos();
            let rtt = fwd + rev;
            if cx.now >= cx.stats.warmup {
                self.rtt.record(rtt);
            }
            cx.sample("rtt", rtt as f64 * 1e-9);
            cx.sample("owd_fwd", fwd as f64 * 1e-9);
            cx.sample("owd_rev", rev as f64 * 1e-9);
            cx.delivered(0);
        }
    }
    fn summary(&self, stats: &FlowStats, out: &mut Vec<(&'static str, f64)>) {
        out.push(("probes_sent", self.sent as f64));
        out.push((
            "loss_rate",
            // A probe loses at most one packet (a lost request is never answered), so the
            // flow's dropped packets count lost probes exactly; a probe whose reply is
            // still on its way when the run ends is not lost (`ping` prints such a
            // request as unanswered only after its deadline; here the run simply ends).
            if self.sent > 0 {
                stats.lost_pkts as f64 / self.sent as f64
            } else {
                0.0
            },
        ));
        out.push(("rtt_mean", self.rtt.mean() * 1e-9));
        out.push(("rtt_p50", self.rtt.quantile(0.5) * 1e-9));
        out.push(("rtt_p90", self.rtt.quantile(0.9) * 1e-9));
        out.push(("rtt_p99", self.rtt.quantile(0.99) * 1e-9));
        out.push((
            "rtt_min",
            if self.rtt.count > 0 {
                self.rtt.min as f64 * 1e-9
            } else {
                f64::NAN
            },
        ));
        out.push((
            "rtt_max",
            if self.rtt.count > 0 {
                self.rtt.max as f64 * 1e-9
            } else {
                f64::NAN
            },
        ));
    }
}

/// `ping`.
#[derive(Debug)]
pub struct Ping(Probe);
/// `udp_rr`.
#[derive(Debug)]
pub struct UdpRr(Probe);

impl Ping {
    pub fn new(c: &PingConfig, _env: &AppEnv) -> Self {
        Ping(Probe::with(
            c.interval.0,
            c.size,
            PacketKind::EchoRequest,
            PacketKind::EchoReply,
        ))
    }
}
impl UdpRr {
    pub fn new(c: &UdpRrConfig, _env: &AppEnv) -> Self {
        UdpRr(Probe::with(
            c.interval.0,
            c.size,
            PacketKind::Udp,
            PacketKind::UdpReply,
        ))
    }
}

macro_rules! delegate {
    ($t:ty) => {
        impl Application for $t {
            fn start(&mut self, cx: &mut FlowCtx) {
                self.0.start(cx)
            }
            fn on_packet(&mut self, cx: &mut FlowCtx, pkt: &Packet) {
                self.0.on_packet(cx, pkt)
            }
            fn on_timer(&mut self, cx: &mut FlowCtx, kind: u32) {
                self.0.on_timer(cx, kind)
            }
            fn summary(&self, s: &FlowStats, out: &mut Vec<(&'static str, f64)>) {
                self.0.summary(s, out)
            }
        }
    };
}
delegate!(Ping);
delegate!(UdpRr);
