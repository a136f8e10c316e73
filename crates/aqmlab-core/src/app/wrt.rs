//! `wrt`: the DOCSIS study's designated web-response-time client. `from` is the client,
//! `to` the server. The client sends an HTTP GET (`request_size` bytes) for an object of
//! `size` bytes, waits for the whole response, thinks for `think`, and repeats until the
//! flow's `stop`.
//!
//! Each request uses a **new TCP connection** that the server closes after the response
//! (default `persistent = false`): the study's ns-2 client sets up a FullTcp
//! connection per request, so every response time includes a handshake and a fresh
//! slow start. `persistent = true` keeps one connection for all requests instead.
//!
//! Response time = from opening the connection (persistent: from sending the request)
//! to the arrival of the last byte of the response; sample `response_time` (s). If a
//! handshake fails (Linux's 6 SYN retries), the request is repeated on a new
//! connection and its response time still counts from the first attempt.
//!
//! Summary columns (requests issued after the warm-up): `responses`,
//! `response_time_mean`, `response_time_sd`, `response_time_median`,
//! `response_time_p90`, `response_time_max`. Goodput counts response bytes.

use super::http::{HttpConns, Values, DEFAULT_REQUEST_BYTES};
use super::{AppEnv, Application, FlowCtx, FlowStats};
use crate::packet::{Packet, PacketKind};
use crate::params::ParamDoc;
use crate::params::ScenarioError;
use crate::tcp::{TcpConfig, TcpOptions, APP_TIMER_BIT};
use crate::time::{SimDuration, SimTime};
use crate::units::{DurationSpec, SizeSpec};
use serde::{Deserialize, Serialize};

const T_NEXT: u32 = APP_TIMER_BIT | 1;

fn d_size() -> SizeSpec {
    SizeSpec(20_000)
}
fn d_think() -> DurationSpec {
    DurationSpec(SimDuration::from_secs(10))
}
fn d_request() -> u32 {
    DEFAULT_REQUEST_BYTES
}

/// The `[[flow]]` keys of `wrt`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WrtConfig {
    /// Object size. Default "20KB" (the DOCSIS study; its second experiment 32 KB … 2048 KB).
    #[serde(default = "d_size")]
    pub size: SizeSpec,
    /// Think time after each response. Default 10 s (the DOCSIS study).
    #[serde(default = "d_think")]
    pub think: DurationSpec,
    /// HTTP request size in bytes. Default 400.
    #[serde(default = "d_request")]
    pub request_size: u32,
    /// One connection for all requests instead of one per request. Default false.
    #[serde(default)]
    pub persistent: bool,
    /// TCP settings, overriding `[tcp]` field by field.
    #[serde(default, skip_serializing_if = "TcpOptions::is_empty")]
    pub tcp: TcpOptions,
}

impl WrtConfig {
    /// Load on the network, for the resource model: a TCP download of `size` bytes,
    /// then `think`; a request each (one round trip), and a new connection's handshake
    /// (another) and FINs unless `persistent`.
    pub fn load_profile(&self, env: &AppEnv) -> super::LoadProfile {
        use crate::resources::CONNECTION_PACKETS;
        let size = self.size.0 as f64;
        let think = self.think.0.as_secs_f64();
        let small = if self.persistent {
            1.0
        } else {
            1.0 + CONNECTION_PACKETS
        };
        let units = crate::resources::Units {
            bytes: size,
            rounds: if self.persistent { 1.0 } else { 2.0 },
            think,
        };
        env.tcp_load(&self.tcp).download(size, small, Some(units))
    }
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc {
            name: "size",
            default: "20KB",
            doc: "object size (DOCSIS study: 20 KB; 32 KB to 2048 KB in its second experiment)",
        },
        ParamDoc {
            name: "think",
            default: "10s",
            doc: "think time between the end of a response and the next request",
        },
        ParamDoc {
            name: "request_size",
            default: "400",
            doc: "HTTP request bytes sent upstream",
        },
        ParamDoc {
            name: "persistent",
            default: "false",
            doc: "reuse one connection; false = a new connection per request (ns-2 FullTcp per request)",
        },
        ParamDoc {
            name: "tcp",
            default: "{}",
            doc: "TCP settings overriding [tcp]",
        },
    ];

    fn resolve(&self, field: &str, env: &AppEnv) -> Result<TcpConfig, ScenarioError> {
        env.tcp.merged(&self.tcp).resolve(&format!("{field}.tcp"))
    }

    pub fn validate(&self, field: &str, env: &AppEnv) -> Result<(), ScenarioError> {
        if self.size.0 == 0 || self.size.0 > 1 << 40 {
            return Err(ScenarioError::new(
                format!("{field}.size"),
                format!("{} bytes is not allowed (1 byte to 1 TB)", self.size.0),
            ));
        }
        if self.request_size < 1 || self.request_size > 1 << 20 {
            return Err(ScenarioError::new(
                format!("{field}.request_size"),
                format!("{} is not allowed (1 to 1048576 bytes)", self.request_size),
            ));
        }
        self.resolve(field, env).map(|_| ())
    }
}

/// A running `wrt` client.
#[derive(Debug)]
pub struct Wrt {
    size: u64,
    think: SimDuration,
    request: u32,
    persistent: bool,
    http: HttpConns,
    /// The persistent connection, if any.
    conn: Option<u32>,
    /// When the outstanding request was first issued.
    issued: Option<SimTime>,
    times: Values,
}

impl Wrt {
    /// TCP connections not yet fully closed (closed ones are forgotten).
    pub fn open_connections(&self) -> usize {
        self.http.len()
    }

    pub fn new(c: &WrtConfig, env: &AppEnv) -> Self {
        let cfg = c
            .resolve("flow", env)
            .expect("wrt flow validated before it is built");
        Wrt {
            size: c.size.0,
            think: c.think.0,
            request: c.request_size,
            persistent: c.persistent,
            http: HttpConns::new(cfg),
            conn: None,
            issued: None,
            times: Values::default(),
        }
    }

    /// Response times so far (s), requests issued after the warm-up.
    pub fn response_times(&self) -> &[f64] {
        self.times.as_slice()
    }
    /// Connections opened so far.
    pub fn connections(&self) -> u64 {
        self.http.opened
    }

    fn send(&mut self, cx: &mut FlowCtx) {
        let id = match self.conn {
            Some(id) if self.persistent && self.http.is_idle(id) => id,
            _ => {
                let id = self.http.open(cx, 0);
                if self.persistent {
                    self.conn = Some(id);
                }
                id
            }
        };
        self.http
            .request(cx, id, self.request, self.size, 0, !self.persistent);
    }

    fn issue(&mut self, cx: &mut FlowCtx) {
        if cx.now >= cx.stop || self.issued.is_some() {
            return;
        }
        self.issued = Some(cx.now);
        self.send(cx);
    }

    fn on_outcome(&mut self, cx: &mut FlowCtx, out: super::http::Outcome) {
        if out.delivered > 0 {
            cx.delivered(out.delivered);
        }
        if out.failed {
            self.conn = None;
            if self.issued.is_some() {
                self.send(cx);
            }
            return;
        }
        if out.done.is_some() {
            let issued = self.issued.take().expect("a request was outstanding");
            let t = cx.now.saturating_since(issued).as_secs_f64();
            cx.sample("response_time", t);
            if issued >= cx.stats.warmup {
                self.times.push(t);
            }
            cx.timer_at(cx.now + self.think, T_NEXT);
        }
    }
}

impl Application for Wrt {
    fn start(&mut self, cx: &mut FlowCtx) {
        self.issue(cx);
    }

    fn on_packet(&mut self, cx: &mut FlowCtx, pkt: &Packet) {
        if pkt.kind == PacketKind::Tcp {
            if let Some(out) = self.http.on_packet(cx, pkt) {
                self.on_outcome(cx, out);
            }
        }
    }

    fn on_timer(&mut self, cx: &mut FlowCtx, kind: u32) {
        if kind == T_NEXT {
            self.issue(cx);
        } else if let Some(out) = self.http.on_timer(cx, kind) {
            self.on_outcome(cx, out);
        }
    }

    fn summary(&self, _stats: &FlowStats, out: &mut Vec<(&'static str, f64)>) {
        let t = &self.times;
        out.push(("responses", t.len() as f64));
        out.push(("response_time_mean", t.mean()));
        out.push(("response_time_sd", t.sd()));
        out.push(("response_time_median", t.quantile(0.5)));
        out.push(("response_time_p90", t.quantile(0.9)));
        out.push(("response_time_max", t.quantile(1.0)));
        out.push(("connections", self.http.opened as f64));
    }
}
