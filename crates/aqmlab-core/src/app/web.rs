//! `web`: a browser fetching a web page, again and again for the whole run (the
//! residential study's web test; the edge-router study's page-load test). `from` is the
//! browser, `to` the web server.
//!
//! ## One page fetch
//! 1. **Name lookup** of the page's host: a UDP query (64 bytes: an A query for a
//!    ~20-character name) and its answer (128 bytes: a CNAME and an A record), to a
//!    resolver at the `to` host, which answers at once (the studies' resolvers sit beyond
//!    the bottleneck; a recursive resolver's own work is not modelled). An unanswered
//!    query is repeated every 5 s (glibc's resolver timeout). Every page fetch looks the
//!    name up again (a cold cache, as a fresh `curl` process has); `lookup = false`
//!    skips lookups.
//! 2. **Main document** on a new TCP connection: handshake, GET (`request_size` bytes
//!    upstream), response.
//! 3. **The remaining objects** of that host over up to `connections` concurrent
//!    persistent connections (the main document's connection is reused; HTTP/1.1
//!    without pipelining: a connection takes the next object when its response is
//!    complete). Pages with several hosts (`heavy`): once the main document is in, every
//!    other host is looked up (all lookups at once) and, when its answer arrives, gets
//!    its own connections, up to `connections` per host, each new. Real browsers
//!    discover objects while parsing; here every object is known once the main
//!    document is in (deliberate simplification: no dependency chains).
//! 4. The page is complete when every object is. Its **page fetch time** (start of the
//!    first lookup to the last byte of the last object) is recorded as sample
//!    `page_time` (s); all connections are closed and the next page starts after
//!    `think` (default 0: at once).
//!
//! All hosts of a page are the `to` host (a different server per host would need a
//! flow per server; the delay structure, one lookup plus new connections per host, is
//! what the many-servers page costs). No new page starts after the flow's `stop`; a
//! page in progress then still completes.
//!
//! ## Built-in pages (objects in bytes of TCP payload, headers included)
//! - `small` (residential study: a search-engine front page, 56 kB in 3 requests):
//!   main document 30 000, then 16 000 and 10 000.
//! - `large` (residential study: a news front page, 3 MB in 110 requests): main
//!   document 100 000, then 109 objects totalling 2 900 000 bytes.
//! - `heavy` (edge-router study: a heavy news front page with ≈ 60 lookups and ≈ 200
//!   short connections to many servers): 60 hosts, 297 objects, 4 000 000 bytes.
//!   Host 0 serves the main document (150 000) and 99 objects; host h = 1…59 serves
//!   n_h = max(1, round(9.5 · h^−0.35)) objects (10, 7, 6, 6, 5, …, 2: 197 in all).
//!   With 6 connections per host that is 60 lookups and 198 connections per page.
//!
//! The sizes of the non-document objects (`large`: 109, `heavy`: 296) follow a
//! rank-size law: the object of rank r (1 = largest) gets total · r^−0.8 / Σ r^−0.8
//! bytes (rounded down, the remainder to rank 1), a few large images and many small
//! objects (largest ≈ 345 kB, smallest ≈ 8 kB for `large`); the k-th object requested
//! (k = 0, 1, …) has rank ((41 k) mod n) + 1, which interleaves large and small objects
//! deterministically. `heavy` hands its 296 objects out in that order: the first 99 to
//! host 0, the next 10 to host 1, and so on.
//!
//! A custom page is `objects = ["30KB", "16KB", ...]`: one host, the first object is
//! the main document.
//!
//! ## Results
//! Samples: `page_time` (s) per completed page. Summary columns (pages started after the
//! warm-up): `pages`, `page_time_mean`, `page_time_median`, `page_time_p90`,
//! `page_time_sd`; and `lookups`, `lookup_time_mean` (s), `connections` (opened),
//! `connection_failures`, `page_bytes` (bytes of one page), `pages_unfinished` (1 if a
//! page was still loading at the end). Goodput counts response bytes at the browser.

use super::http::{HttpConns, Outcome, Values, DEFAULT_REQUEST_BYTES};
use super::{AppEnv, Application, FlowCtx, FlowStats};
use crate::packet::{Packet, PacketKind};
use crate::params::ParamDoc;
use crate::params::ScenarioError;
use crate::tcp::{TcpConfig, TcpOptions, APP_TIMER_BIT};
use crate::time::{SimDuration, SimTime};
use crate::units::{DurationSpec, SizeSpec};
use serde::{Deserialize, Serialize};

/// IP bytes of a name-lookup query and of its answer (see the module doc).
pub const LOOKUP_QUERY_BYTES: u32 = 64;
pub const LOOKUP_ANSWER_BYTES: u32 = 128;
/// glibc's resolver timeout (RES_TIMEOUT): an unanswered query is repeated after it.
pub const LOOKUP_TIMEOUT: SimDuration = SimDuration::from_secs(5);

const T_NEXT_PAGE: u32 = APP_TIMER_BIT | (1 << 24);
const T_LOOKUP: u32 = APP_TIMER_BIT | (2 << 24);
const PAYLOAD: u32 = (1 << 24) - 1;

fn d_connections() -> u32 {
    6
}
fn d_request() -> u32 {
    DEFAULT_REQUEST_BYTES
}
fn d_true() -> bool {
    true
}

/// The `[[flow]]` keys of `web`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WebConfig {
    /// Built-in page: "small", "large" or "heavy". Default "small". Not with `objects`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
    /// A custom page: object sizes, the first is the main document (one host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects: Option<Vec<SizeSpec>>,
    /// Concurrent persistent connections per host. Default 6 (browsers' per-host limit).
    #[serde(default = "d_connections")]
    pub connections: u32,
    /// Pause between the end of one page and the start of the next. Default 0.
    #[serde(default)]
    pub think: Option<DurationSpec>,
    /// HTTP request size in bytes. Default 400.
    #[serde(default = "d_request")]
    pub request_size: u32,
    /// Look the host name up before connecting. Default true.
    #[serde(default = "d_true")]
    pub lookup: bool,
    /// TCP settings, overriding `[tcp]` field by field.
    #[serde(default, skip_serializing_if = "TcpOptions::is_empty")]
    pub tcp: TcpOptions,
}

impl WebConfig {
    /// Load on the network, for the resource model: a TCP download of the page's
    /// objects, with per page a lookup (query and answer) per host, a request per
    /// object and the handshake and FINs of every connection. A page takes at least the
    /// round trips of its first host (lookup, handshake, the main document, then its
    /// other objects `connections` at a time), and `think` after it.
    pub fn load_profile(&self, env: &AppEnv) -> super::LoadProfile {
        use crate::resources::CONNECTION_PACKETS;
        let tcp = env.tcp_load(&self.tcp);
        let page = match &self.objects {
            Some(o) => Some(PageModel {
                hosts: vec![o.iter().map(|s| s.0).collect()],
            }),
            None => PageModel::builtin(self.page.as_deref().unwrap_or("small")),
        };
        let Some(page) = page else {
            return tcp; // refused by `validate`
        };
        let objects = page.hosts.iter().map(Vec::len).sum::<usize>().max(1) as f64;
        let bytes = page.bytes() as f64;
        let lookups = if self.lookup {
            2.0 * page.lookups() as f64
        } else {
            0.0
        };
        let small =
            CONNECTION_PACKETS * page.connections(self.connections) as f64 + objects + lookups;
        let first = page.hosts.first().map_or(1, Vec::len).max(1);
        let rounds = f64::from(u8::from(self.lookup))
            + 2.0
            + ((first - 1) as f64 / self.connections.max(1) as f64).ceil();
        let units = crate::resources::Units {
            bytes,
            rounds,
            think: self.think.map_or(0.0, |t| t.0.as_secs_f64()),
        };
        tcp.download(bytes / objects, small / objects, Some(units))
    }
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc {
            name: "page",
            default: "small",
            doc: "built-in page: small (56 kB, 3 objects), large (3 MB, 110 objects), heavy (4 MB, 297 objects on 60 hosts); not with objects",
        },
        ParamDoc {
            name: "objects",
            default: "none",
            doc: "custom page as object sizes, e.g. [\"30KB\", \"16KB\"]; the first is the main document",
        },
        ParamDoc {
            name: "connections",
            default: "6",
            doc: "concurrent persistent connections per host (browsers' limit)",
        },
        ParamDoc {
            name: "think",
            default: "0s",
            doc: "pause between the end of a page and the next fetch",
        },
        ParamDoc {
            name: "request_size",
            default: "400",
            doc: "HTTP request bytes sent upstream per object (typical GET: 300-500)",
        },
        ParamDoc {
            name: "lookup",
            default: "true",
            doc: "UDP name lookup (64 B query, 128 B answer, resolver at `to`) per host and page",
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

    /// The page this config fetches (after `validate`).
    pub fn model(&self) -> PageModel {
        match &self.objects {
            Some(o) => PageModel {
                hosts: vec![o.iter().map(|s| s.0).collect()],
            },
            None => {
                PageModel::builtin(self.page.as_deref().unwrap_or("small")).expect("page validated")
            }
        }
    }

    pub fn validate(&self, field: &str, env: &AppEnv) -> Result<(), ScenarioError> {
        match (&self.page, &self.objects) {
            (Some(_), Some(_)) => {
                return Err(ScenarioError::new(
                    format!("{field}.objects"),
                    "give either `page` (a built-in page) or `objects` (a custom page), not both",
                ))
            }
            (Some(p), None) if PageModel::builtin(p).is_none() => {
                return Err(ScenarioError::new(
                    format!("{field}.page"),
                    format!("'{p}' is not a built-in page (allowed: small, large, heavy; or give `objects`)"),
                ))
            }
            (None, Some(o)) => {
                if o.is_empty() || o.len() > 100_000 {
                    return Err(ScenarioError::new(
                        format!("{field}.objects"),
                        format!("{} objects is not allowed (1 to 100000)", o.len()),
                    ));
                }
                if let Some((i, s)) = o
                    .iter()
                    .enumerate()
                    .find(|(_, s)| s.0 == 0 || s.0 > 1 << 40)
                {
                    return Err(ScenarioError::new(
                        format!("{field}.objects[{i}]"),
                        format!("{} bytes is not allowed (1 byte to 1 TB)", s.0),
                    ));
                }
            }
            _ => {}
        }
        if self.connections < 1 || self.connections > 256 {
            return Err(ScenarioError::new(
                format!("{field}.connections"),
                format!("{} is not allowed (1 to 256 per host)", self.connections),
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

/// A page: per host, its objects' sizes; `hosts[0][0]` is the main document.
#[derive(Clone, Debug, PartialEq)]
pub struct PageModel {
    pub hosts: Vec<Vec<u64>>,
}

/// Sizes of `n` objects totalling `total` bytes by the rank-size law r^−0.8, in request
/// order (rank ((41 k) mod n) + 1 for the k-th object); see the module doc.
pub fn rank_split(total: u64, n: usize) -> Vec<u64> {
    assert!(n > 0 && !n.is_multiple_of(41), "41 must be coprime with n");
    let w: Vec<f64> = (1..=n).map(|r| (r as f64).powf(-0.8)).collect();
    let sum: f64 = w.iter().sum();
    let mut by_rank: Vec<u64> = w
        .iter()
        .map(|x| (total as f64 * x / sum).floor() as u64)
        .collect();
    let assigned: u64 = by_rank.iter().sum();
    by_rank[0] += total - assigned;
    (0..n).map(|k| by_rank[(41 * k) % n]).collect()
}

impl PageModel {
    /// A built-in page by name (see the module doc).
    pub fn builtin(name: &str) -> Option<PageModel> {
        match name {
            "small" => Some(PageModel {
                hosts: vec![vec![30_000, 16_000, 10_000]],
            }),
            "large" => {
                let mut h = vec![100_000];
                h.extend(rank_split(2_900_000, 109));
                Some(PageModel { hosts: vec![h] })
            }
            "heavy" => {
                let objs = rank_split(3_850_000, 296);
                let mut it = objs.into_iter();
                let mut hosts = Vec::with_capacity(60);
                let mut h0 = vec![150_000];
                h0.extend(it.by_ref().take(99));
                hosts.push(h0);
                for h in 1..60 {
                    let n = (9.5 * (h as f64).powf(-0.35)).round().max(1.0) as usize;
                    hosts.push(it.by_ref().take(n).collect());
                }
                debug_assert!(it.next().is_none());
                Some(PageModel { hosts })
            }
            _ => None,
        }
    }
    pub fn objects(&self) -> usize {
        self.hosts.iter().map(Vec::len).sum()
    }
    pub fn bytes(&self) -> u64 {
        self.hosts.iter().flatten().sum()
    }
    /// Name lookups per page (one per host).
    pub fn lookups(&self) -> usize {
        self.hosts.len()
    }
    /// TCP connections per page with `k` connections per host.
    pub fn connections(&self, k: u32) -> usize {
        self.hosts.iter().map(|h| h.len().min(k as usize)).sum()
    }
}

#[derive(Clone, Debug, Default)]
struct HostState {
    /// Next object of the host to request.
    next: usize,
    /// Objects whose connection failed, to request again.
    retry: Vec<usize>,
    /// Open connections of this host in the current page.
    conns: u32,
    /// When the pending lookup was first sent (`None`: no lookup pending).
    lookup_since: Option<SimTime>,
}

/// A running `web` client.
#[derive(Debug)]
pub struct Web {
    model: PageModel,
    k: u32,
    think: SimDuration,
    request: u32,
    lookup: bool,
    http: HttpConns,
    page_seq: u32,
    page_start: SimTime,
    loading: bool,
    main_done: bool,
    hosts: Vec<HostState>,
    done: usize,
    total: usize,
    times: Values,
    lookups: u64,
    lookup_times: Values,
}

impl Web {
    /// TCP connections not yet fully closed (closed ones are forgotten).
    pub fn open_connections(&self) -> usize {
        self.http.len()
    }

    pub fn new(c: &WebConfig, env: &AppEnv) -> Self {
        let cfg = c
            .resolve("flow", env)
            .expect("web flow validated before it is built");
        let model = c.model();
        let total = model.objects();
        Web {
            hosts: vec![HostState::default(); model.hosts.len()],
            model,
            k: c.connections,
            think: c.think.map_or(SimDuration::ZERO, |d| d.0),
            request: c.request_size,
            lookup: c.lookup,
            http: HttpConns::new(cfg),
            page_seq: 0,
            page_start: SimTime::ZERO,
            loading: false,
            main_done: false,
            done: 0,
            total,
            times: Values::default(),
            lookups: 0,
            lookup_times: Values::default(),
        }
    }

    /// Page fetch times so far (s).
    pub fn page_times(&self) -> &[f64] {
        self.times.as_slice()
    }

    fn begin_page(&mut self, cx: &mut FlowCtx) {
        if cx.now >= cx.stop {
            return;
        }
        self.page_seq = self.page_seq.wrapping_add(1);
        self.page_start = cx.now;
        self.loading = true;
        self.main_done = false;
        self.done = 0;
        for h in self.hosts.iter_mut() {
            h.next = 0;
            h.conns = 0;
            h.retry.clear();
            h.lookup_since = None;
        }
        self.start_host(cx, 0);
    }

    fn lookup_key(&self, host: usize) -> u32 {
        ((self.page_seq & 0xFFFF) << 8) | host as u32
    }

    fn start_host(&mut self, cx: &mut FlowCtx, host: usize) {
        if self.lookup {
            self.hosts[host].lookup_since = Some(cx.now);
            self.lookups += 1;
            self.send_query(cx, host);
        } else {
            self.fill(cx, host);
        }
    }

    fn send_query(&mut self, cx: &mut FlowCtx, host: usize) {
        let key = self.lookup_key(host);
        let mut p = cx.packet(cx.src, LOOKUP_QUERY_BYTES, PacketKind::Udp);
        p.seq = key as u64;
        cx.send(p);
        cx.timer_at(cx.now + LOOKUP_TIMEOUT, T_LOOKUP | key);
    }

    /// Opens connections for `host` up to the limit while it has objects left.
    fn fill(&mut self, cx: &mut FlowCtx, host: usize) {
        // Until the main document is in, the browser knows of nothing else.
        let limit = if self.main_done { self.k } else { 1 };
        while self.hosts[host].conns < limit {
            let Some(obj) = self.next_object(host) else {
                break;
            };
            let id = self.http.open(cx, host as u32);
            self.hosts[host].conns += 1;
            let size = self.model.hosts[host][obj];
            self.http
                .request(cx, id, self.request, size, obj as u32, false);
        }
    }

    fn next_object(&mut self, host: usize) -> Option<usize> {
        let h = &mut self.hosts[host];
        if let Some(o) = h.retry.pop() {
            return Some(o);
        }
        if h.next < self.model.hosts[host].len() {
            h.next += 1;
            return Some(h.next - 1);
        }
        None
    }

    fn on_http(&mut self, cx: &mut FlowCtx, out: Outcome) {
        if out.delivered > 0 {
            cx.delivered(out.delivered);
        }
        let host = out.tag as usize;
        if out.failed {
            self.hosts[host].conns -= 1;
            if let Some(ex) = out.unanswered {
                self.hosts[host].retry.push(ex.obj as usize);
            }
            if self.loading {
                self.fill(cx, host);
            }
            return;
        }
        let Some(d) = out.done else { return };
        self.done += 1;
        if host == 0 && d.obj == 0 {
            self.main_done = true;
            // The main document is in: every other host can be looked up now.
            for h in 1..self.hosts.len() {
                self.start_host(cx, h);
            }
        }
        if self.done == self.total {
            self.finish_page(cx);
            return;
        }
        if let Some(obj) = self.next_object(host) {
            let size = self.model.hosts[host][obj];
            self.http
                .request(cx, out.id, self.request, size, obj as u32, false);
        }
        self.fill(cx, host);
    }

    fn finish_page(&mut self, cx: &mut FlowCtx) {
        self.loading = false;
        let t = cx.now.saturating_since(self.page_start).as_secs_f64();
        cx.sample("page_time", t);
        if self.page_start >= cx.stats.warmup {
            self.times.push(t);
        }
        self.http.close_idle(cx, None);
        if self.think.is_zero() {
            self.begin_page(cx);
        } else {
            cx.timer_at(cx.now + self.think, T_NEXT_PAGE | (self.page_seq & PAYLOAD));
        }
    }
}

impl Application for Web {
    fn start(&mut self, cx: &mut FlowCtx) {
        self.begin_page(cx);
    }

    fn on_packet(&mut self, cx: &mut FlowCtx, pkt: &Packet) {
        match pkt.kind {
            PacketKind::Tcp => {
                if let Some(out) = self.http.on_packet(cx, pkt) {
                    self.on_http(cx, out);
                }
            }
            PacketKind::Udp => {
                // At the resolver: answer at once.
                let mut r = cx.packet(cx.dst, LOOKUP_ANSWER_BYTES, PacketKind::UdpReply);
                r.seq = pkt.seq;
                cx.send(r);
            }
            PacketKind::UdpReply => {
                let key = pkt.seq as u32;
                let host = (key & 0xFF) as usize;
                if !self.loading || key != self.lookup_key(host) || host >= self.hosts.len() {
                    return; // an answer to a repeated query of an earlier page
                }
                if let Some(since) = self.hosts[host].lookup_since.take() {
                    let t = cx.now.saturating_since(since).as_secs_f64();
                    if self.page_start >= cx.stats.warmup {
                        self.lookup_times.push(t);
                    }
                    self.fill(cx, host);
                }
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, cx: &mut FlowCtx, kind: u32) {
        if kind & APP_TIMER_BIT == 0 {
            if let Some(out) = self.http.on_timer(cx, kind) {
                self.on_http(cx, out);
            }
            return;
        }
        match kind & !PAYLOAD {
            T_NEXT_PAGE if (kind & PAYLOAD) == (self.page_seq & PAYLOAD) && !self.loading => {
                self.begin_page(cx);
            }
            T_LOOKUP => {
                let key = kind & PAYLOAD;
                let host = (key & 0xFF) as usize;
                if self.loading
                    && key == self.lookup_key(host)
                    && host < self.hosts.len()
                    && self.hosts[host].lookup_since.is_some()
                {
                    self.send_query(cx, host);
                }
            }
            _ => {}
        }
    }

    fn summary(&self, _stats: &FlowStats, out: &mut Vec<(&'static str, f64)>) {
        out.push(("pages", self.times.len() as f64));
        out.push(("page_time_mean", self.times.mean()));
        out.push(("page_time_median", self.times.quantile(0.5)));
        out.push(("page_time_p90", self.times.quantile(0.9)));
        out.push(("page_time_sd", self.times.sd()));
        out.push(("lookups", self.lookups as f64));
        out.push(("lookup_time_mean", self.lookup_times.mean()));
        out.push(("connections", self.http.opened as f64));
        out.push(("connection_failures", self.http.failures as f64));
        out.push(("page_bytes", self.model.bytes() as f64));
        out.push(("pages_unfinished", if self.loading { 1.0 } else { 0.0 }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_pages_match_the_studies() {
        let s = PageModel::builtin("small").unwrap();
        assert_eq!((s.objects(), s.bytes(), s.lookups()), (3, 56_000, 1));
        let l = PageModel::builtin("large").unwrap();
        assert_eq!((l.objects(), l.bytes(), l.lookups()), (110, 3_000_000, 1));
        assert_eq!(l.connections(6), 6);
        let sizes = &l.hosts[0][1..];
        let max = *sizes.iter().max().unwrap();
        let min = *sizes.iter().min().unwrap();
        assert!((300_000..400_000).contains(&max), "largest {max}");
        assert!((5_000..12_000).contains(&min), "smallest {min}");
        // Interleaved: the largest object is requested first, not all big ones first.
        assert_eq!(sizes[0], max);
        assert!(sizes[1] < max / 3);
        let h = PageModel::builtin("heavy").unwrap();
        assert_eq!(h.lookups(), 60);
        assert_eq!(h.objects(), 297);
        assert_eq!(h.bytes(), 4_000_000);
        assert_eq!(h.connections(6), 198);
        assert_eq!(h.hosts[1].len(), 10);
        assert_eq!(h.hosts[59].len(), 2);
        assert!(PageModel::builtin("medium").is_none());
    }

    #[test]
    fn rank_split_is_exact_and_a_permutation() {
        for (total, n) in [(2_900_000, 109), (3_850_000, 296), (1000, 3)] {
            let v = rank_split(total, n);
            assert_eq!(v.len(), n);
            assert_eq!(v.iter().sum::<u64>(), total);
            let mut a = v.clone();
            a.sort_unstable_by(|x, y| y.cmp(x));
            // Sorted descending = by rank: the law's ratios hold.
            let r = a[1] as f64 / a[n - 1] as f64;
            let want = (n as f64 / 2.0).powf(0.8);
            assert!((r / want - 1.0).abs() < 0.01, "{r} vs {want}");
        }
    }

    #[test]
    fn config_errors_name_the_field() {
        let env = AppEnv::default();
        let c: WebConfig = toml::from_str("page = \"huge\"").unwrap();
        assert_eq!(
            c.validate("flow[1]", &env).unwrap_err().field,
            "flow[1].page"
        );
        let c: WebConfig = toml::from_str("page = \"small\"\nobjects = [\"1KB\"]").unwrap();
        assert_eq!(c.validate("f", &env).unwrap_err().field, "f.objects");
        let c: WebConfig = toml::from_str("objects = [\"1KB\", 0]").unwrap();
        assert_eq!(c.validate("f", &env).unwrap_err().field, "f.objects[1]");
        let c: WebConfig = toml::from_str("connections = 0").unwrap();
        assert_eq!(c.validate("f", &env).unwrap_err().field, "f.connections");
        assert!(toml::from_str::<WebConfig>("pages = \"small\"").is_err());
        let c: WebConfig = toml::from_str("objects = [\"14KB\", 2000]").unwrap();
        c.validate("f", &env).unwrap();
        assert_eq!(c.model().hosts, vec![vec![14_000, 2_000]]);
    }
}
