//! `has`: an HTTP adaptive streaming (DASH-like) video client as the DOCSIS study
//! specifies it. `from` is the player, `to` the video server.
//!
//! ## Model
//! - The video is cut into `segment`-long segments (default 4 s), each available in
//!   every bitrate of the ladder (default {0.5, 1, 2, 3, 4, 5} Mbit/s); a segment of
//!   bitrate br is ⌈br · segment / 8⌉ bytes. The player fetches segments one after the
//!   other over **one persistent TCP connection** (GET of `request_size` bytes each).
//! - Playback buffer of `buffer` seconds of video (default 240 s). No request is sent
//!   while the next segment would not fit (level + segment > buffer): the request
//!   waits until playback has drained enough.
//! - Startup: requests back to back; playback starts when `startup_segments` (default
//!   2) segments are buffered.
//! - Playback takes one segment at a time from the buffer; when a segment has been
//!   played and no complete segment is buffered ("less than one segment"), the player
//!   stalls; it resumes when `resume_segments` (default 2) segments have arrived since
//!   the stall began.
//! - Adaptation (`adaptation = "capacity"`, default) after each segment download:
//!   μ = segment duration / fetch time of that segment (request sent → last byte);
//!   if μ > 1 + ε the next segment is one level up, where
//!   ε = max_i (br_{i+1} − br_i)/br_i (= 1 for the default ladder); if μ < γ_d (0.67)
//!   the next segment is at the highest bitrate br_i < μ · br_current (the lowest if
//!   none); otherwise unchanged. The first segment is at the lowest bitrate.
//!   `adaptation = "max_always"`: every segment at the highest bitrate.
//! - No request is sent after the flow's `stop`; playback accounting ends there.
//!
//! ## Results
//! Samples per downloaded segment: `bitrate` (Mbit/s), `buffer` (s of video buffered
//! right after it arrived), `fetch_time` (s); `stall` (s) when playback resumes after a
//! stall. Summary columns, counting from the warm-up on:
//! - `video_playback_rate`: mean Mbit/s consumed from the buffer while playing
//!   (stalls excluded) — the study's videoPlaybackRate;
//! - `adaptation_rate`: bitrate changes between consecutive segments per hour of
//!   session (flow start or warm-up, whichever is later, to the flow's stop) —
//!   adaptationRate;
//! - `rebuffer_time`: % of the time since playback first started spent stalled —
//!   rebufferTime (the startup delay is reported apart, as `startup_delay` in s);
//! - `stalls`, `segments`, `bitrate_mean` (Mbit/s, mean over requested segments),
//!   `max_bitrate` (bit/s, the top of the ladder: the flow's demand cap for
//!   applicationBias).
//!
//! Goodput counts segment bytes arriving at the player.

use super::http::{HttpConns, Outcome, DEFAULT_REQUEST_BYTES};
use super::{AppEnv, Application, FlowCtx, FlowStats};
use crate::packet::{Packet, PacketKind};
use crate::params::ParamDoc;
use crate::params::ScenarioError;
use crate::tcp::{TcpConfig, TcpOptions, APP_TIMER_BIT};
use crate::time::{SimDuration, SimTime};
use crate::units::{DurationSpec, RateSpec};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

const T_EMPTY: u32 = APP_TIMER_BIT | (1 << 24);
const T_ROOM: u32 = APP_TIMER_BIT | (2 << 24);
const T_STOP: u32 = APP_TIMER_BIT | (3 << 24);
const PAYLOAD: u32 = (1 << 24) - 1;

fn d_segment() -> DurationSpec {
    DurationSpec(SimDuration::from_secs(4))
}
fn d_bitrates() -> Vec<RateSpec> {
    [
        500_000, 1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000,
    ]
    .into_iter()
    .map(RateSpec)
    .collect()
}
fn d_buffer() -> DurationSpec {
    DurationSpec(SimDuration::from_secs(240))
}
fn d_2() -> u32 {
    2
}
fn d_gamma() -> f64 {
    0.67
}
fn d_adaptation() -> String {
    "capacity".into()
}
fn d_request() -> u32 {
    DEFAULT_REQUEST_BYTES
}

/// The `[[flow]]` keys of `has`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HasConfig {
    /// Segment duration. Default 4 s.
    #[serde(default = "d_segment")]
    pub segment: DurationSpec,
    /// The bitrate ladder, ascending. Default ["500kbit", "1Mbit", "2Mbit", "3Mbit",
    /// "4Mbit", "5Mbit"].
    #[serde(default = "d_bitrates")]
    pub bitrates: Vec<RateSpec>,
    /// Playback buffer capacity (seconds of video). Default 240 s.
    #[serde(default = "d_buffer")]
    pub buffer: DurationSpec,
    /// Segments buffered before playback starts. Default 2.
    #[serde(default = "d_2")]
    pub startup_segments: u32,
    /// Segments that must arrive after a stall before playback resumes. Default 2.
    #[serde(default = "d_2")]
    pub resume_segments: u32,
    /// "capacity" (default) or "max_always".
    #[serde(default = "d_adaptation")]
    pub adaptation: String,
    /// Switch-down threshold γ_d on μ. Default 0.67.
    #[serde(default = "d_gamma")]
    pub gamma_d: f64,
    /// Switch-up margin ε (up if μ > 1 + ε). Default max_i (br_{i+1} − br_i)/br_i.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epsilon: Option<f64>,
    /// HTTP request size in bytes. Default 400.
    #[serde(default = "d_request")]
    pub request_size: u32,
    /// TCP settings, overriding `[tcp]` field by field.
    #[serde(default, skip_serializing_if = "TcpOptions::is_empty")]
    pub tcp: TcpOptions,
}

impl HasConfig {
    /// Load on the network, for the resource model: a TCP download of segments (as
    /// much as the path carries: the player fills its buffer at the path's rate), a
    /// request each.
    pub fn load_profile(&self, env: &AppEnv) -> super::LoadProfile {
        let top = self.bitrates.iter().map(|r| r.0).max().unwrap_or(0) as f64;
        let segment = top / 8.0 * self.segment.0.as_secs_f64();
        env.tcp_load(&self.tcp).download(segment, 1.0, None)
    }
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc {
            name: "segment",
            default: "4s",
            doc: "segment duration (DOCSIS study)",
        },
        ParamDoc {
            name: "bitrates",
            default: "[\"500kbit\", \"1Mbit\", \"2Mbit\", \"3Mbit\", \"4Mbit\", \"5Mbit\"]",
            doc: "bitrate ladder, strictly ascending",
        },
        ParamDoc {
            name: "buffer",
            default: "240s",
            doc: "playback buffer capacity; no request while the next segment would not fit",
        },
        ParamDoc {
            name: "startup_segments",
            default: "2",
            doc: "segments buffered before playback starts",
        },
        ParamDoc {
            name: "resume_segments",
            default: "2",
            doc: "segments to arrive after a stall before playback resumes",
        },
        ParamDoc {
            name: "adaptation",
            default: "capacity",
            doc: "capacity (mu = segment / fetch time; up if mu > 1 + epsilon, down if mu < gamma_d) or max_always",
        },
        ParamDoc {
            name: "gamma_d",
            default: "0.67",
            doc: "switch down when mu < gamma_d, to the highest bitrate below mu x current",
        },
        ParamDoc {
            name: "epsilon",
            default: "max_i (br[i+1]-br[i])/br[i]",
            doc: "switch up one level when mu > 1 + epsilon (1.0 for the default ladder)",
        },
        ParamDoc {
            name: "request_size",
            default: "400",
            doc: "HTTP request bytes per segment",
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

    /// The default ε of a ladder: the largest relative step.
    pub fn ladder_epsilon(ladder: &[u64]) -> f64 {
        ladder
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64 / w[0] as f64)
            .fold(0.0, f64::max)
    }

    pub fn validate(&self, field: &str, env: &AppEnv) -> Result<(), ScenarioError> {
        let seg = self.segment.0;
        if seg < SimDuration::from_millis(10) || seg > SimDuration::from_secs(3600) {
            return Err(ScenarioError::new(
                format!("{field}.segment"),
                format!("{seg} is not allowed (10 ms to 1 h)"),
            ));
        }
        if self.bitrates.is_empty() || self.bitrates.len() > 64 {
            return Err(ScenarioError::new(
                format!("{field}.bitrates"),
                format!("{} bitrates is not allowed (1 to 64)", self.bitrates.len()),
            ));
        }
        for (i, w) in self.bitrates.windows(2).enumerate() {
            if w[1].0 <= w[0].0 {
                return Err(ScenarioError::new(
                    format!("{field}.bitrates[{}]", i + 1),
                    format!(
                        "{} bit/s is not above the previous {} bit/s (the ladder must ascend strictly)",
                        w[1].0, w[0].0
                    ),
                ));
            }
        }
        if let Some(top) = self.bitrates.last() {
            if top.0 > 100_000_000_000 {
                return Err(ScenarioError::new(
                    format!("{field}.bitrates"),
                    format!("{} bit/s is not allowed (at most 100 Gbit/s)", top.0),
                ));
            }
        }
        for (key, v) in [
            ("startup_segments", self.startup_segments),
            ("resume_segments", self.resume_segments),
        ] {
            if !(1..=1000).contains(&v) {
                return Err(ScenarioError::new(
                    format!("{field}.{key}"),
                    format!("{v} is not allowed (1 to 1000)"),
                ));
            }
        }
        let need = self.startup_segments.max(self.resume_segments) as u64;
        if self.buffer.0.as_nanos() < need * seg.as_nanos() {
            return Err(ScenarioError::new(
                format!("{field}.buffer"),
                format!(
                    "{} cannot hold the {need} segments playback waits for (at least {})",
                    self.buffer.0,
                    SimDuration::from_nanos(need * seg.as_nanos())
                ),
            ));
        }
        if Adaptation::parse(&self.adaptation).is_none() {
            return Err(ScenarioError::new(
                format!("{field}.adaptation"),
                format!(
                    "'{}' is not allowed (capacity, max_always)",
                    self.adaptation
                ),
            ));
        }
        if !(self.gamma_d > 0.0 && self.gamma_d <= 1.0) {
            return Err(ScenarioError::new(
                format!("{field}.gamma_d"),
                format!("{} is not allowed (0 < gamma_d <= 1)", self.gamma_d),
            ));
        }
        if let Some(e) = self.epsilon {
            if !(0.0..=100.0).contains(&e) {
                return Err(ScenarioError::new(
                    format!("{field}.epsilon"),
                    format!("{e} is not allowed (0 to 100)"),
                ));
            }
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

/// How the player picks the next segment's bitrate.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Adaptation {
    Capacity,
    MaxAlways,
}

impl Adaptation {
    pub fn parse(s: &str) -> Option<Adaptation> {
        match s {
            "capacity" => Some(Adaptation::Capacity),
            "max_always" | "max-always" => Some(Adaptation::MaxAlways),
            _ => None,
        }
    }
}

/// The capacity-based rule: the ladder index of the next segment after one at `cur`
/// was fetched with μ = segment duration / fetch time (see the module doc).
pub fn next_level(ladder: &[u64], cur: usize, mu: f64, epsilon: f64, gamma_d: f64) -> usize {
    if mu > 1.0 + epsilon {
        (cur + 1).min(ladder.len() - 1)
    } else if mu < gamma_d {
        let limit = mu * ladder[cur] as f64;
        ladder
            .iter()
            .rposition(|&b| (b as f64) < limit)
            .unwrap_or(0)
    } else {
        cur
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Mode {
    Startup,
    Playing,
    Stalled,
    Ended,
}

/// A running HAS client.
#[derive(Debug)]
pub struct Has {
    ladder: Vec<u64>,
    seg: SimDuration,
    capacity: u64,
    startup_segs: u32,
    resume_segs: u32,
    adaptation: Adaptation,
    gamma_d: f64,
    epsilon: f64,
    request: u32,
    http: HttpConns,
    conn: Option<u32>,
    /// Ladder index of the next request, and of the previous one.
    level: usize,
    prev_level: Option<usize>,
    /// The outstanding request's level, if any.
    fetching: Option<usize>,
    /// Waiting for room in the buffer.
    waiting: bool,
    /// Buffered segments: (ladder index, video ns left), playing one first.
    buf: VecDeque<(usize, u64)>,
    buf_ns: u64,
    mode: Mode,
    t_upd: SimTime,
    arrived_since_stall: u32,
    stall_began: SimTime,
    gen_empty: u32,
    gen_room: u32,
    warmup: SimTime,
    start: SimTime,
    stop: SimTime,
    // Accounting from the warm-up on.
    played_ns: u64,
    played_bits: f64,
    stall_ns: u64,
    stalls: u64,
    changes: u64,
    segments: u64,
    level_sum: f64,
    requested: u64,
    startup_delay: Option<SimDuration>,
}

impl Has {
    /// TCP connections not yet fully closed (closed ones are forgotten).
    pub fn open_connections(&self) -> usize {
        self.http.len()
    }

    pub fn new(c: &HasConfig, env: &AppEnv) -> Self {
        let cfg = c
            .resolve("flow", env)
            .expect("has flow validated before it is built");
        let ladder: Vec<u64> = c.bitrates.iter().map(|r| r.0).collect();
        let adaptation = Adaptation::parse(&c.adaptation).expect("validated");
        let epsilon = c
            .epsilon
            .unwrap_or_else(|| HasConfig::ladder_epsilon(&ladder));
        let seg = c.segment.0;
        let slots = (c.buffer.0.as_nanos() / seg.as_nanos()) as usize + 2;
        Has {
            level: if adaptation == Adaptation::MaxAlways {
                ladder.len() - 1
            } else {
                0
            },
            ladder,
            seg,
            capacity: c.buffer.0.as_nanos(),
            startup_segs: c.startup_segments,
            resume_segs: c.resume_segments,
            adaptation,
            gamma_d: c.gamma_d,
            epsilon,
            request: c.request_size,
            http: HttpConns::new(cfg),
            conn: None,
            prev_level: None,
            fetching: None,
            waiting: false,
            buf: VecDeque::with_capacity(slots.min(4096)),
            buf_ns: 0,
            mode: Mode::Startup,
            t_upd: SimTime::ZERO,
            arrived_since_stall: 0,
            stall_began: SimTime::ZERO,
            gen_empty: 0,
            gen_room: 0,
            warmup: SimTime::ZERO,
            start: SimTime::ZERO,
            stop: SimTime::NEVER,
            played_ns: 0,
            played_bits: 0.0,
            stall_ns: 0,
            stalls: 0,
            changes: 0,
            segments: 0,
            level_sum: 0.0,
            requested: 0,
            startup_delay: None,
        }
    }

    /// Bytes of a segment at ladder index `level`.
    pub fn segment_bytes(&self, level: usize) -> u64 {
        (self.ladder[level] as u128 * self.seg.as_nanos() as u128).div_ceil(8_000_000_000) as u64
    }

    /// Seconds of video buffered now (after `advance`).
    pub fn buffered(&self) -> f64 {
        self.buf_ns as f64 * 1e-9
    }

    /// Brings playback accounting up to `now`.
    fn advance(&mut self, now: SimTime) {
        let from = self.t_upd;
        self.t_upd = now;
        if now <= from {
            return;
        }
        let warm = self.warmup;
        // Length of [a, b) that lies after the warm-up.
        let after = |a: u64, b: u64| b.saturating_sub(a.max(warm.as_nanos()));
        match self.mode {
            Mode::Playing => {
                let mut t = from.as_nanos();
                let mut left = now.as_nanos() - t;
                while left > 0 {
                    let Some(head) = self.buf.front_mut() else {
                        break;
                    };
                    let take = head.1.min(left);
                    let counted = after(t, t + take);
                    self.played_ns += counted;
                    self.played_bits += self.ladder[head.0] as f64 * counted as f64 * 1e-9;
                    head.1 -= take;
                    self.buf_ns -= take;
                    if head.1 == 0 {
                        self.buf.pop_front();
                    }
                    t += take;
                    left -= take;
                }
            }
            Mode::Stalled => self.stall_ns += after(from.as_nanos(), now.as_nanos()),
            Mode::Startup | Mode::Ended => {}
        }
    }

    fn play(&mut self, cx: &mut FlowCtx) {
        self.mode = Mode::Playing;
        self.gen_empty = self.gen_empty.wrapping_add(1);
        cx.timer_at(
            cx.now + SimDuration::from_nanos(self.buf_ns),
            T_EMPTY | (self.gen_empty & PAYLOAD),
        );
    }

    /// Requests the next segment if there is room, else waits for it.
    fn next_request(&mut self, cx: &mut FlowCtx) {
        if self.mode == Mode::Ended || cx.now >= cx.stop || self.fetching.is_some() {
            return;
        }
        let seg = self.seg.as_nanos();
        if self.buf_ns + seg > self.capacity {
            // Full: wait until playback has drained enough (the buffer only drains
            // while playing, and validation makes startup/resume fit).
            self.waiting = true;
            if self.mode == Mode::Playing {
                self.gen_room = self.gen_room.wrapping_add(1);
                let wait = self.buf_ns + seg - self.capacity;
                cx.timer_at(
                    cx.now + SimDuration::from_nanos(wait),
                    T_ROOM | (self.gen_room & PAYLOAD),
                );
            }
            return;
        }
        self.waiting = false;
        let id = match self.conn {
            Some(id) if self.http.is_idle(id) => id,
            _ => {
                let id = self.http.open(cx, 0);
                self.conn = Some(id);
                id
            }
        };
        let level = self.level;
        if cx.now >= self.warmup {
            if self.prev_level.is_some_and(|p| p != level) {
                self.changes += 1;
            }
            self.level_sum += self.ladder[level] as f64 * 1e-6;
            self.requested += 1;
        }
        self.prev_level = Some(level);
        self.fetching = Some(level);
        let bytes = self.segment_bytes(level);
        self.http
            .request(cx, id, self.request, bytes, level as u32, false);
    }

    fn on_outcome(&mut self, cx: &mut FlowCtx, out: Outcome) {
        if out.delivered > 0 {
            cx.delivered(out.delivered);
        }
        if out.failed {
            self.conn = None;
            if let Some(ex) = out.unanswered {
                let id = self.http.open(cx, 0);
                self.conn = Some(id);
                self.http.reissue(cx, id, self.request, ex, false);
            }
            return;
        }
        let Some(d) = out.done else { return };
        let Some(level) = self.fetching.take() else {
            return;
        };
        self.advance(cx.now);
        if self.mode == Mode::Ended {
            return;
        }
        let seg = self.seg.as_nanos();
        self.buf.push_back((level, seg));
        self.buf_ns += seg;
        if cx.now >= self.warmup {
            self.segments += 1;
        }
        let fetch = cx.now.saturating_since(d.issued);
        cx.sample("bitrate", self.ladder[level] as f64 * 1e-6);
        cx.sample("buffer", self.buffered());
        cx.sample("fetch_time", fetch.as_secs_f64());
        match self.mode {
            Mode::Startup if self.buf.len() as u32 >= self.startup_segs => {
                self.startup_delay = Some(cx.now.saturating_since(self.start));
                self.play(cx);
            }
            Mode::Stalled => {
                self.arrived_since_stall += 1;
                if self.arrived_since_stall >= self.resume_segs {
                    cx.sample(
                        "stall",
                        cx.now.saturating_since(self.stall_began).as_secs_f64(),
                    );
                    self.play(cx);
                }
            }
            Mode::Playing => self.play(cx), // the buffer runs dry later now
            _ => {}
        }
        self.level = match self.adaptation {
            Adaptation::MaxAlways => self.ladder.len() - 1,
            Adaptation::Capacity => {
                let mu = self.seg.as_secs_f64() / fetch.as_secs_f64().max(1e-9);
                next_level(&self.ladder, level, mu, self.epsilon, self.gamma_d)
            }
        };
        self.next_request(cx);
    }
}

impl Application for Has {
    fn start(&mut self, cx: &mut FlowCtx) {
        self.start = cx.now;
        self.t_upd = cx.now;
        self.stop = cx.stop;
        self.warmup = cx.stats.warmup;
        cx.timer_at(cx.stop, T_STOP);
        self.next_request(cx);
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
        let gen = kind & PAYLOAD;
        match kind & !PAYLOAD {
            T_EMPTY if self.mode == Mode::Playing && gen == self.gen_empty & PAYLOAD => {
                self.advance(cx.now);
                debug_assert_eq!(self.buf_ns, 0);
                self.mode = Mode::Stalled;
                self.stall_began = cx.now;
                self.arrived_since_stall = 0;
                if cx.now >= self.warmup {
                    self.stalls += 1;
                }
            }
            T_ROOM if self.waiting && gen == self.gen_room & PAYLOAD => {
                self.advance(cx.now);
                self.next_request(cx);
            }
            T_STOP => {
                self.advance(cx.now);
                self.mode = Mode::Ended;
            }
            _ => {}
        }
    }

    fn summary(&self, _stats: &FlowStats, out: &mut Vec<(&'static str, f64)>) {
        let played = self.played_ns as f64 * 1e-9;
        let stalled = self.stall_ns as f64 * 1e-9;
        let session_from = self.start.max(self.warmup);
        let hours = self.stop.saturating_since(session_from).as_secs_f64() / 3600.0;
        out.push((
            "video_playback_rate",
            if played > 0.0 {
                self.played_bits / played * 1e-6
            } else {
                f64::NAN
            },
        ));
        out.push((
            "adaptation_rate",
            if hours > 0.0 {
                self.changes as f64 / hours
            } else {
                f64::NAN
            },
        ));
        out.push((
            "rebuffer_time",
            if played + stalled > 0.0 {
                100.0 * stalled / (played + stalled)
            } else {
                f64::NAN
            },
        ));
        out.push((
            "startup_delay",
            self.startup_delay.map_or(f64::NAN, |d| d.as_secs_f64()),
        ));
        out.push(("stalls", self.stalls as f64));
        out.push(("segments", self.segments as f64));
        out.push((
            "bitrate_mean",
            if self.requested > 0 {
                self.level_sum / self.requested as f64
            } else {
                f64::NAN
            },
        ));
        out.push(("max_bitrate", *self.ladder.last().unwrap_or(&0) as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LADDER: [u64; 6] = [
        500_000, 1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000,
    ];

    #[test]
    fn epsilon_of_the_study_ladder_is_one() {
        assert_eq!(HasConfig::ladder_epsilon(&LADDER), 1.0);
        assert!((HasConfig::ladder_epsilon(&[1, 3, 4]) - 2.0).abs() < 1e-12);
    }

    #[test]
    fn capacity_rule_steps_up_one_and_down_to_fit() {
        let (e, g) = (1.0, 0.67);
        // μ just above 1 + ε: one level up, not more; at the top: stay.
        assert_eq!(next_level(&LADDER, 1, 2.01, e, g), 2);
        assert_eq!(next_level(&LADDER, 1, 10.0, e, g), 2);
        assert_eq!(next_level(&LADDER, 5, 10.0, e, g), 5);
        // Between γ_d and 1 + ε: unchanged.
        assert_eq!(next_level(&LADDER, 3, 2.0, e, g), 3);
        assert_eq!(next_level(&LADDER, 3, 0.67, e, g), 3);
        // Below γ_d: highest br_i < μ·br_cur. At 5 Mbit/s with μ = 0.5: < 2.5 → 2 Mbit/s.
        assert_eq!(next_level(&LADDER, 5, 0.5, e, g), 2);
        // μ = 0.6 at 5 Mbit/s: < 3 Mbit/s strictly → 2 Mbit/s.
        assert_eq!(next_level(&LADDER, 5, 0.6, e, g), 2);
        // Nothing fits: the lowest.
        assert_eq!(next_level(&LADDER, 1, 0.1, e, g), 0);
    }

    #[test]
    fn config_validation_names_fields() {
        let env = AppEnv::default();
        let ok: HasConfig = toml::from_str("").unwrap();
        ok.validate("f", &env).unwrap();
        for (text, field) in [
            ("bitrates = [\"1Mbit\", \"1Mbit\"]", "f.bitrates[1]"),
            ("bitrates = []", "f.bitrates"),
            ("adaptation = \"bola\"", "f.adaptation"),
            ("gamma_d = 0", "f.gamma_d"),
            ("buffer = \"6s\"", "f.buffer"),
            ("startup_segments = 0", "f.startup_segments"),
            ("segment = \"1ms\"", "f.segment"),
        ] {
            let c: HasConfig = toml::from_str(text).unwrap();
            assert_eq!(c.validate("f", &env).unwrap_err().field, field, "{text}");
        }
        let c: HasConfig = toml::from_str("").unwrap();
        let h = Has::new(&c, &env);
        assert_eq!(h.segment_bytes(0), 250_000);
        assert_eq!(h.segment_bytes(5), 2_500_000);
    }
}
