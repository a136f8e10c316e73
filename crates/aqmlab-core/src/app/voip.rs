//! VoIP: an isochronous UDP stream (one packet every `interval`), measured at the
//! receiver: one-way delay of every packet (sample `owd`), interarrival jitter (RFC 3550
//! §6.4.1, J += (|D| − J)/16), loss, and the E-model call quality R.
//!
//! Defaults are G.711 at 64 kbit/s with 20 ms packetisation: 160 bytes of voice, 12 RTP,
//! 8 UDP and 20 IP make 200-byte packets (the residential study). The DOCSIS study's talker
//! is `size = 238`, `interval = "20ms"`.
//!
//! ## R-value
//! `r_model = "cole-rosenbluth"` (default; Cole & Rosenbluth, "Voice over IP performance
//! monitoring", CCR 2001, the simplification simulation studies use):
//!   R = 94.2 − I_d − I_e,eff,
//!   I_d = 0.024·d + 0.11·(d − 177.3)·H(d − 177.3)      (d = mouth-to-ear delay in ms),
//!   I_e,eff = γ1 + γ2·ln(1 + γ3·e)  with G.711: γ1 = 0, γ2 = 30, γ3 = 15 (e = loss fraction).
//! `r_model = "g107"`: ITU-T G.107 with default values except delay and loss:
//!   R = 93.2 − I_dd − I_e,eff, I_dd = 0 for T_a ≤ 100 ms, else
//!   25·((1 + X⁶)^(1/6) − 3·(1 + (X/3)⁶)^(1/6) + 2), X = log2(T_a/100);
//!   I_e,eff = I_e + (95 − I_e)·P/(P + B_pl) with G.711 I_e = 0, B_pl = 4.3 (random loss,
//!   no concealment), P in percent. (Talker-echo terms are left at their defaults.)
//!
//! Mouth-to-ear delay d = network one-way delay + `codec_delay` (default: the packet
//! interval, i.e. packetisation) + jitter-buffer delay. With `jitter_buffer = 0` (default)
//! the buffer is ideal: d uses the mean one-way delay and no packet is late. With a fixed
//! buffer B, playout is at (minimum one-way delay + B); packets arriving later count as
//! lost, and d uses min + B.

use super::{AppEnv, Application, FlowCtx, FlowStats};
use crate::metrics::Histogram;
use crate::packet::{Packet, PacketKind};
use crate::params::ParamDoc;
use crate::params::ScenarioError;
use crate::time::SimDuration;
use crate::units::DurationSpec;
use serde::{Deserialize, Serialize};

fn d_size() -> u32 {
    200
}
fn d_interval() -> DurationSpec {
    DurationSpec(SimDuration::from_millis(20))
}
fn d_model() -> String {
    "cole-rosenbluth".into()
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VoipConfig {
    /// IP packet size. Default 200 (G.711, 20 ms, RTP/UDP/IP).
    #[serde(default = "d_size")]
    pub size: u32,
    /// Packetisation interval. Default 20 ms.
    #[serde(default = "d_interval")]
    pub interval: DurationSpec,
    /// Codec + packetisation delay added to the network delay. Default = interval.
    pub codec_delay: Option<DurationSpec>,
    /// Fixed playout (jitter) buffer; 0 = ideal buffer. Default 0.
    #[serde(default)]
    pub jitter_buffer: Option<DurationSpec>,
    /// "cole-rosenbluth" (default) or "g107".
    #[serde(default = "d_model")]
    pub r_model: String,
}

impl VoipConfig {
    /// Load on the network, for the resource model: one packet per interval, one
    /// one-way-delay sample each, no reverse traffic.
    pub fn load_profile(&self, _env: &AppEnv) -> super::LoadProfile {
        super::LoadProfile {
            fixed_pps: Some(super::LoadProfile::per_interval(self.interval)),
            reverse_per_pkt: 0.0,
            samples_per_pkt: 1.0,
            fwd_bytes: Some(self.size as f64),
            rev_bytes: 0.0,
            download: false,
            units: None,
            window_pkts: f64::INFINITY,
            init_window_pkts: 0.0,
        }
    }
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc { name: "size", default: "200", doc: "IP packet size in bytes (G.711 20 ms: 160 voice + 12 RTP + 8 UDP + 20 IP); DOCSIS study: 238" },
        ParamDoc { name: "interval", default: "20ms", doc: "packetisation interval" },
        ParamDoc { name: "codec_delay", default: "same as interval", doc: "codec/packetisation delay added to the one-way delay for the E-model" },
        ParamDoc { name: "jitter_buffer", default: "0ms", doc: "fixed playout buffer; 0 = ideal (no late loss); otherwise late packets count as lost" },
        ParamDoc { name: "r_model", default: "cole-rosenbluth", doc: "E-model variant: cole-rosenbluth (R = 94.2 - Id - Ie) or g107" },
    ];

    pub fn validate(&self, field: &str, _env: &AppEnv) -> Result<(), ScenarioError> {
        if self.size < 28 || self.size > 65535 {
            return Err(ScenarioError::new(
                format!("{field}.size"),
                format!("{} is not allowed (28 to 65535 bytes)", self.size),
            ));
        }
        if self.interval.0.is_zero() {
            return Err(ScenarioError::new(
                format!("{field}.interval"),
                "must be positive",
            ));
        }
        if RModel::parse(&self.r_model).is_none() {
            return Err(ScenarioError::new(
                format!("{field}.r_model"),
                format!("'{}' is not allowed (cole-rosenbluth, g107)", self.r_model),
            ));
        }
        Ok(())
    }
}

/// Which E-model formula.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RModel {
    ColeRosenbluth,
    G107,
}

impl RModel {
    pub fn parse(s: &str) -> Option<RModel> {
        match s {
            "cole-rosenbluth" | "cole_rosenbluth" => Some(RModel::ColeRosenbluth),
            "g107" | "g.107" => Some(RModel::G107),
            _ => None,
        }
    }
}

/// E-model R for mouth-to-ear delay `delay_ms` and loss fraction `loss` (0..1), G.711.
pub fn r_value(model: RModel, delay_ms: f64, loss: f64) -> f64 {
    let loss = loss.clamp(0.0, 1.0);
    let r = match model {
        RModel::ColeRosenbluth => {
            let id = 0.024 * delay_ms
                + if delay_ms > 177.3 {
                    0.11 * (delay_ms - 177.3)
                } else {
                    0.0
                };
            let ie = 30.0 * (1.0 + 15.0 * loss).ln();
            94.2 - id - ie
        }
        RModel::G107 => {
            let idd = if delay_ms <= 100.0 {
                0.0
            } else {
                let x = (delay_ms / 100.0).log2();
                25.0 * ((1.0 + x.powi(6)).powf(1.0 / 6.0)
                    - 3.0 * (1.0 + (x / 3.0).powi(6)).powf(1.0 / 6.0)
                    + 2.0)
            };
            let ppl = loss * 100.0;
            let ie_eff = 95.0 * ppl / (ppl + 4.3);
            93.2 - idd - ie_eff
        }
    };
    r.clamp(0.0, 100.0)
}

#[derive(Debug)]
pub struct Voip {
    size: u32,
    interval: SimDuration,
    codec: SimDuration,
    buffer: SimDuration,
    model: RModel,
    sent: u64,
    owd: Histogram,
    /// RFC 3550 jitter estimate (ns) and the previous transit time.
    jitter: f64,
    last_transit: Option<i128>,
    received_warm: u64,
    /// Sequence number of the first packet sent after warm-up.
    first_warm_seq: Option<u64>,
    /// Highest sequence number received (RTP-style: expected = highest − first + 1, so
    /// packets still in flight at the end are not counted as lost).
    highest_seq: Option<u64>,
    /// One-way delays (ns) after warm-up, kept only with a fixed jitter buffer (late-loss count).
    owds_warm: Vec<u64>,
}

impl Voip {
    pub fn new(c: &VoipConfig, _env: &AppEnv) -> Self {
        Voip {
            size: c.size,
            interval: c.interval.0,
            codec: c.codec_delay.map(|d| d.0).unwrap_or(c.interval.0),
            buffer: c.jitter_buffer.map(|d| d.0).unwrap_or(SimDuration::ZERO),
            model: RModel::parse(&c.r_model).unwrap_or(RModel::ColeRosenbluth),
            sent: 0,
            owd: Histogram::new(),
            jitter: 0.0,
            last_transit: None,
            received_warm: 0,
            first_warm_seq: None,
            highest_seq: None,
            owds_warm: Vec::new(),
        }
    }

    /// Packets expected after warm-up (RTP style).
    fn expected(&self) -> u64 {
        match (self.first_warm_seq, self.highest_seq) {
            (Some(f), Some(h)) if h >= f => h - f + 1,
            _ => 0,
        }
    }

    fn network_loss(&self) -> f64 {
        let e = self.expected();
        if e == 0 {
            return f64::NAN;
        }
        1.0 - (self.received_warm as f64 / e as f64).min(1.0)
    }

    /// (mouth-to-ear delay in ms, effective loss fraction) from what was measured.
    fn delay_and_loss(&self) -> (f64, f64) {
        if self.expected() == 0 || self.owd.count == 0 {
            return (f64::NAN, 1.0);
        }
        let net_loss = self.network_loss();
        if self.buffer.is_zero() {
            let d = self.owd.mean() * 1e-6 + self.codec.as_millis_f64();
            return (d, net_loss);
        }
        let min = self.owd.min;
        let deadline = min + self.buffer.as_nanos();
        let late = self.owds_warm.iter().filter(|&&o| o > deadline).count() as f64;
        let loss = net_loss + late / self.expected() as f64;
        (
            (min as f64) * 1e-6 + self.buffer.as_millis_f64() + self.codec.as_millis_f64(),
            loss.min(1.0),
        )
    }
}

impl Application for Voip {
    fn start(&mut self, cx: &mut FlowCtx) {
        self.on_timer(cx, 0);
    }
    fn on_timer(&mut self, cx: &mut FlowCtx, _kind: u32) {
        if cx.now >= cx.stop {
            return;
        }
        let mut p = cx.packet(cx.src, self.size, PacketKind::Udp);
        p.seq = self.sent;
        self.sent += 1;
        if cx.now >= cx.stats.warmup && self.first_warm_seq.is_none() {
            self.first_warm_seq = Some(p.seq);
        }
        cx.send(p);
        cx.timer_at(cx.now + self.interval, 0);
    }
    fn on_packet(&mut self, cx: &mut FlowCtx, pkt: &Packet) {
        let owd = cx.now.saturating_since(pkt.sent_at).as_nanos();
        // RFC 3550: transit difference between consecutive arrivals, smoothed with gain 1/16.
        let transit = owd as i128;
        if let Some(prev) = self.last_transit {
            let d = (transit - prev).abs() as f64;
            self.jitter += (d - self.jitter) / 16.0;
        }
        self.last_transit = Some(transit);
        if pkt.sent_at >= cx.stats.warmup {
            self.highest_seq = Some(self.highest_seq.map_or(pkt.seq, |h| h.max(pkt.seq)));
            self.owd.record(owd);
            self.received_warm += 1;
            if !self.buffer.is_zero() {
                self.owds_warm.push(owd);
            }
        }
        cx.sample("owd", owd as f64 * 1e-9);
        cx.delivered((pkt.size - super::cbr::UDP_IP_HEADER) as u64);
    }
    fn summary(&self, _stats: &FlowStats, out: &mut Vec<(&'static str, f64)>) {
        let (d, loss) = self.delay_and_loss();
        out.push(("packets_sent", self.sent as f64));
        out.push(("loss_rate", self.network_loss()));
        out.push(("owd_mean", self.owd.mean() * 1e-9));
        out.push(("owd_p99", self.owd.quantile(0.99) * 1e-9));
        out.push(("jitter", self.jitter * 1e-9));
        out.push(("mouth_to_ear", d * 1e-3));
        out.push(("effective_loss", loss));
        out.push((
            "r_value",
            if d.is_nan() {
                f64::NAN
            } else {
                r_value(self.model, d, loss)
            },
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cole_rosenbluth_known_points() {
        let m = RModel::ColeRosenbluth;
        assert!((r_value(m, 0.0, 0.0) - 94.2).abs() < 1e-9);
        // 100 ms: Id = 2.4.
        assert!((r_value(m, 100.0, 0.0) - 91.8).abs() < 0.1);
        // 200 ms: Id = 4.8 + 0.11 * 22.7 = 7.297.
        assert!((r_value(m, 200.0, 0.0) - 86.903).abs() < 0.1);
        // 1 % loss: Ie = 30 ln(1.15) = 4.193.
        assert!((r_value(m, 0.0, 0.01) - 90.007).abs() < 0.1);
        // 150 ms + 2 % loss: 94.2 - 3.6 - 30 ln(1.3) = 82.729.
        assert!((r_value(m, 150.0, 0.02) - 82.729).abs() < 0.1);
    }

    #[test]
    fn g107_known_points() {
        let m = RModel::G107;
        assert!((r_value(m, 0.0, 0.0) - 93.2).abs() < 1e-9);
        assert!((r_value(m, 100.0, 0.0) - 93.2).abs() < 1e-9);
        // Ta = 200 ms: X = 1, Idd = 25 * (1.122462 - 3 * 1.000229 + 2) = 3.044
        let x: f64 = 1.0;
        let idd = 25.0
            * ((1.0 + x.powi(6)).powf(1.0 / 6.0) - 3.0 * (1.0 + (x / 3.0).powi(6)).powf(1.0 / 6.0)
                + 2.0);
        assert!((idd - 3.044).abs() < 0.01, "{idd}");
        assert!((r_value(m, 200.0, 0.0) - (93.2 - idd)).abs() < 1e-9);
        // 1 % random loss, no PLC: Ie,eff = 95 * 1 / 5.3 = 17.92.
        assert!((r_value(m, 0.0, 0.01) - (93.2 - 17.925)).abs() < 0.1);
    }

    #[test]
    fn r_decreases_monotonically() {
        for m in [RModel::ColeRosenbluth, RModel::G107] {
            let mut prev = f64::INFINITY;
            for d in (0..600).step_by(10) {
                let r = r_value(m, d as f64, 0.0);
                assert!(r <= prev + 1e-12, "{m:?} delay {d}");
                prev = r;
            }
            let mut prev = f64::INFINITY;
            for l in 0..50 {
                let r = r_value(m, 50.0, l as f64 / 100.0);
                assert!(r < prev, "{m:?} loss {l}");
                prev = r;
            }
        }
    }
}
