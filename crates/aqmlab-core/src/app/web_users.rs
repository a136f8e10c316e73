//! `web_users`: one Feldmann-style web user with heavy-tailed page, object and think-time
//! distributions, as ns-2's `PagePool/WebTraf` generates them (the DOCSIS study's web
//! load). `from` is the user's browser, `to` the server. One flow is one user: give
//! `count = N` (with `from = "client{i}"` etc.) for N users and `start_spread = "1s"`
//! for the study's "users start in the first second".
//!
//! A user repeats: a page of ⌈P_objects⌉ objects; the first object is requested at once,
//! each further one an inter-object time later, whether or not the earlier ones are
//! complete (open loop within a page, as WebTraf). Every object is ⌈P_size⌉ bytes
//! fetched on a **new TCP connection** (GET of `request_size` bytes; the server closes
//! after the response), as WebTraf sets up a TCP connection per object. When every
//! object of the page is complete the user thinks for an inter-page time (WebTraf's
//! default `interPageOption`: end of one page to the start of the next), then starts
//! the next page. No page starts after the flow's `stop`.
//!
//! All four quantities are Pareto(mean, shape) (scale = mean (shape − 1)/shape), drawn
//! from the flow's random stream; defaults from the DOCSIS study: inter-page time mean
//! 5 s shape 2, objects per page mean 4 shape 1.2, inter-object time mean 0.5 s shape
//! 1.5, object size mean 20 KB shape 1.5. Rounding up (as WebTraf's `ceil`) adds about
//! half an object per page and half a byte per object to the means.
//!
//! Samples: `object_time` (s, from opening the object's connection to its last byte).
//! Summary columns (objects/pages started after the warm-up): `pages`, `objects`,
//! `object_time_mean`, `object_time_median`, `object_time_p90`, `page_time_mean` (s,
//! first request to last byte of a page), `object_bytes` (bytes of the completed
//! objects), `objects_unfinished`. Goodput counts response bytes.

use super::http::{HttpConns, Outcome, Values, DEFAULT_REQUEST_BYTES};
use super::{AppEnv, Application, FlowCtx, FlowStats};
use crate::packet::{Packet, PacketKind};
use crate::params::ParamDoc;
use crate::params::ScenarioError;
use crate::tcp::{TcpConfig, TcpOptions, APP_TIMER_BIT};
use crate::time::{SimDuration, SimTime};
use crate::units::{DurationSpec, SizeSpec};
use serde::{Deserialize, Serialize};

const T_PAGE: u32 = APP_TIMER_BIT | (1 << 24);
const T_OBJECT: u32 = APP_TIMER_BIT | (2 << 24);
const PAYLOAD: u32 = (1 << 24) - 1;
/// Largest object drawn (the Pareto tail is unbounded; 1 TB keeps byte counts finite).
const MAX_OBJECT: f64 = 1e12;

fn d_page_interval() -> DurationSpec {
    DurationSpec(SimDuration::from_secs(5))
}
fn d_2() -> f64 {
    2.0
}
fn d_objects() -> f64 {
    4.0
}
fn d_1_2() -> f64 {
    1.2
}
fn d_object_interval() -> DurationSpec {
    DurationSpec(SimDuration::from_millis(500))
}
fn d_1_5() -> f64 {
    1.5
}
fn d_object_size() -> SizeSpec {
    SizeSpec(20_000)
}
fn d_request() -> u32 {
    DEFAULT_REQUEST_BYTES
}

/// The `[[flow]]` keys of `web_users`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WebUsersConfig {
    /// Mean inter-page (think) time. Default 5 s.
    #[serde(default = "d_page_interval")]
    pub page_interval: DurationSpec,
    /// Pareto shape of the inter-page time. Default 2.
    #[serde(default = "d_2")]
    pub page_interval_shape: f64,
    /// Mean objects per page. Default 4.
    #[serde(default = "d_objects")]
    pub objects_per_page: f64,
    /// Pareto shape of the objects per page. Default 1.2.
    #[serde(default = "d_1_2")]
    pub objects_per_page_shape: f64,
    /// Mean time between object requests within a page. Default 0.5 s.
    #[serde(default = "d_object_interval")]
    pub object_interval: DurationSpec,
    /// Pareto shape of the inter-object time. Default 1.5.
    #[serde(default = "d_1_5")]
    pub object_interval_shape: f64,
    /// Mean object size. Default "20KB".
    #[serde(default = "d_object_size")]
    pub object_size: SizeSpec,
    /// Pareto shape of the object size. Default 1.5.
    #[serde(default = "d_1_5")]
    pub object_size_shape: f64,
    /// HTTP request size in bytes. Default 400.
    #[serde(default = "d_request")]
    pub request_size: u32,
    /// TCP settings, overriding `[tcp]` field by field.
    #[serde(default, skip_serializing_if = "TcpOptions::is_empty")]
    pub tcp: TcpOptions,
}

impl WebUsersConfig {
    /// Load on the network, for the resource model: a TCP download of `object_size`
    /// objects, each on a new connection (handshake, request, FINs): pages of at most
    /// `objects_per_page` + 1 (the rounding up) objects, two round trips (handshake,
    /// request), then `page_interval`.
    pub fn load_profile(&self, env: &AppEnv) -> super::LoadProfile {
        use crate::resources::CONNECTION_PACKETS;
        let size = self.object_size.0 as f64;
        let interval = self.page_interval.0.as_secs_f64();
        let units = crate::resources::Units {
            bytes: (self.objects_per_page + 1.0) * size,
            rounds: 2.0,
            think: interval,
        };
        env.tcp_load(&self.tcp)
            .download(size, CONNECTION_PACKETS + 1.0, Some(units))
    }
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc {
            name: "page_interval",
            default: "5s",
            doc: "mean inter-page time, end of a page to the next (DOCSIS study)",
        },
        ParamDoc {
            name: "page_interval_shape",
            default: "2",
            doc: "Pareto shape of the inter-page time (> 1)",
        },
        ParamDoc {
            name: "objects_per_page",
            default: "4",
            doc: "mean objects per page (rounded up per page, as ns-2 WebTraf)",
        },
        ParamDoc {
            name: "objects_per_page_shape",
            default: "1.2",
            doc: "Pareto shape of the objects per page (> 1)",
        },
        ParamDoc {
            name: "object_interval",
            default: "500ms",
            doc: "mean time between object requests of a page (open loop)",
        },
        ParamDoc {
            name: "object_interval_shape",
            default: "1.5",
            doc: "Pareto shape of the inter-object time (> 1)",
        },
        ParamDoc {
            name: "object_size",
            default: "20KB",
            doc: "mean object size; each object on a new TCP connection",
        },
        ParamDoc {
            name: "object_size_shape",
            default: "1.5",
            doc: "Pareto shape of the object size (> 1)",
        },
        ParamDoc {
            name: "request_size",
            default: "400",
            doc: "HTTP request bytes sent upstream per object",
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
        for (key, shape) in [
            ("page_interval_shape", self.page_interval_shape),
            ("objects_per_page_shape", self.objects_per_page_shape),
            ("object_interval_shape", self.object_interval_shape),
            ("object_size_shape", self.object_size_shape),
        ] {
            if !(shape > 1.0 && shape <= 100.0) {
                return Err(ScenarioError::new(
                    format!("{field}.{key}"),
                    format!("{shape} is not allowed (a Pareto shape above 1, at most 100, so the mean exists)"),
                ));
            }
        }
        if !(self.objects_per_page >= 1.0 && self.objects_per_page <= 1e6) {
            return Err(ScenarioError::new(
                format!("{field}.objects_per_page"),
                format!("{} is not allowed (1 to 1000000)", self.objects_per_page),
            ));
        }
        if self.object_size.0 == 0 || self.object_size.0 > 1 << 40 {
            return Err(ScenarioError::new(
                format!("{field}.object_size"),
                format!(
                    "{} bytes is not allowed (1 byte to 1 TB)",
                    self.object_size.0
                ),
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

/// A running web user.
#[derive(Debug)]
pub struct WebUsers {
    c: WebUsersConfig,
    http: HttpConns,
    page_seq: u32,
    page_start: SimTime,
    /// Objects of the current page still to request / not complete yet.
    to_launch: u32,
    outstanding: u32,
    in_page: bool,
    pages: u64,
    objects: u64,
    bytes: u64,
    times: Values,
    page_times: Values,
}

impl WebUsers {
    /// TCP connections not yet fully closed (closed ones are forgotten).
    pub fn open_connections(&self) -> usize {
        self.http.len()
    }

    pub fn new(c: &WebUsersConfig, env: &AppEnv) -> Self {
        let cfg = c
            .resolve("flow", env)
            .expect("web_users flow validated before it is built");
        WebUsers {
            c: c.clone(),
            http: HttpConns::new(cfg),
            page_seq: 0,
            page_start: SimTime::ZERO,
            to_launch: 0,
            outstanding: 0,
            in_page: false,
            pages: 0,
            objects: 0,
            bytes: 0,
            times: Values::default(),
            page_times: Values::default(),
        }
    }

    /// Object response times so far (s), objects requested after the warm-up.
    pub fn object_times(&self) -> &[f64] {
        self.times.as_slice()
    }
    /// Bytes of the completed objects requested after the warm-up.
    pub fn object_bytes(&self) -> u64 {
        self.bytes
    }

    fn begin_page(&mut self, cx: &mut FlowCtx) {
        if cx.now >= cx.stop {
            return;
        }
        let n = cx
            .rng
            .pareto(self.c.objects_per_page, self.c.objects_per_page_shape)
            .ceil()
            .min(1e6) as u32;
        self.page_seq = self.page_seq.wrapping_add(1);
        self.page_start = cx.now;
        self.in_page = true;
        self.to_launch = n.max(1);
        self.outstanding = 0;
        self.launch(cx);
    }

    fn launch(&mut self, cx: &mut FlowCtx) {
        let size = cx
            .rng
            .pareto(self.c.object_size.0 as f64, self.c.object_size_shape)
            .ceil()
            .min(MAX_OBJECT) as u64;
        let id = self.http.open(cx, 0);
        self.http
            .request(cx, id, self.c.request_size, size.max(1), 0, true);
        self.to_launch -= 1;
        self.outstanding += 1;
        if self.to_launch > 0 {
            let gap = cx.rng.pareto(
                self.c.object_interval.0.as_secs_f64(),
                self.c.object_interval_shape,
            );
            cx.timer_at(
                cx.now + SimDuration::from_secs_f64(gap),
                T_OBJECT | (self.page_seq & PAYLOAD),
            );
        }
    }

    fn on_outcome(&mut self, cx: &mut FlowCtx, out: Outcome) {
        if out.delivered > 0 {
            cx.delivered(out.delivered);
        }
        if let Some(ex) = out.unanswered {
            // The handshake gave up: request the object again on a new connection.
            let id = self.http.open(cx, 0);
            self.http.reissue(cx, id, self.c.request_size, ex, true);
            return;
        }
        let Some(d) = out.done else { return };
        let t = cx.now.saturating_since(d.issued).as_secs_f64();
        cx.sample("object_time", t);
        if d.issued >= cx.stats.warmup {
            self.times.push(t);
            self.objects += 1;
            self.bytes += d.bytes;
        }
        self.outstanding -= 1;
        if self.to_launch == 0 && self.outstanding == 0 {
            self.in_page = false;
            if self.page_start >= cx.stats.warmup {
                self.pages += 1;
                self.page_times
                    .push(cx.now.saturating_since(self.page_start).as_secs_f64());
            }
            let gap = cx.rng.pareto(
                self.c.page_interval.0.as_secs_f64(),
                self.c.page_interval_shape,
            );
            cx.timer_at(
                cx.now + SimDuration::from_secs_f64(gap),
                T_PAGE | (self.page_seq & PAYLOAD),
            );
        }
    }
}

impl Application for WebUsers {
    fn start(&mut self, cx: &mut FlowCtx) {
        self.begin_page(cx);
    }

    fn on_packet(&mut self, cx: &mut FlowCtx, pkt: &Packet) {
        if pkt.kind == PacketKind::Tcp {
            if let Some(out) = self.http.on_packet(cx, pkt) {
                self.on_outcome(cx, out);
            }
        }
    }

    fn on_timer(&mut self, cx: &mut FlowCtx, kind: u32) {
        if kind & APP_TIMER_BIT == 0 {
            if let Some(out) = self.http.on_timer(cx, kind) {
                self.on_outcome(cx, out);
            }
            return;
        }
        let current = (kind & PAYLOAD) == (self.page_seq & PAYLOAD);
        match kind & !PAYLOAD {
            T_PAGE if current && !self.in_page => self.begin_page(cx),
            T_OBJECT if current && self.in_page && self.to_launch > 0 => self.launch(cx),
            _ => {}
        }
    }

    fn summary(&self, _stats: &FlowStats, out: &mut Vec<(&'static str, f64)>) {
        out.push(("pages", self.pages as f64));
        out.push(("objects", self.objects as f64));
        out.push(("object_time_mean", self.times.mean()));
        out.push(("object_time_median", self.times.quantile(0.5)));
        out.push(("object_time_p90", self.times.quantile(0.9)));
        out.push(("page_time_mean", self.page_times.mean()));
        out.push(("object_bytes", self.bytes as f64));
        out.push(("objects_unfinished", self.outstanding as f64));
        out.push(("connections", self.http.opened as f64));
    }
}
