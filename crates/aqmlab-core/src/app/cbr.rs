//! Unresponsive constant-bit-rate UDP: one `size`-byte IP packet every `size·8/rate`,
//! regardless of loss. The receiver counts UDP payload (size − 28 bytes of IP+UDP
//! header) as goodput and keeps a histogram of one-way delay.

use super::{AppEnv, Application, FlowCtx, FlowStats};
use crate::metrics::Histogram;
use crate::packet::{Packet, PacketKind};
use crate::params::ScenarioError;
use crate::time::{Rate, SimDuration};
use crate::units::RateSpec;
use serde::{Deserialize, Serialize};

/// IPv4 (20) + UDP (8) header bytes.
pub const UDP_IP_HEADER: u32 = 28;

fn d_size() -> u32 {
    1500
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CbrConfig {
    /// Sending rate at the IP layer, e.g. "12Mbit". Required.
    pub rate: RateSpec,
    /// IP packet size in bytes (29..=65535). Default 1500.
    #[serde(default = "d_size")]
    pub size: u32,
    /// Record every packet's one-way delay as a sample (`owd`). Default false.
    #[serde(default)]
    pub record_delay: bool,
}

impl CbrConfig {
    /// Load on the network, for the resource model: `rate` in packets of `size`, a
    /// delay sample each with `record_delay`, no reverse traffic.
    pub fn load_profile(&self, _env: &AppEnv) -> super::LoadProfile {
        super::LoadProfile {
            fixed_pps: Some(self.rate.0 as f64 / (8.0 * self.size.max(1) as f64)),
            reverse_per_pkt: 0.0,
            samples_per_pkt: if self.record_delay { 1.0 } else { 0.0 },
            fwd_bytes: Some(self.size as f64),
            rev_bytes: 0.0,
            download: false,
            units: None,
            window_pkts: f64::INFINITY,
            init_window_pkts: 0.0,
        }
    }
    pub const PARAMS: &'static [crate::params::ParamDoc] = &[
        crate::params::ParamDoc {
            name: "rate",
            default: "required",
            doc: "sending rate at the IP layer, e.g. \"12Mbit\"",
        },
        crate::params::ParamDoc {
            name: "size",
            default: "1500",
            doc: "IP packet size in bytes (payload = size - 28)",
        },
        crate::params::ParamDoc {
            name: "record_delay",
            default: "false",
            doc: "record every packet's one-way delay as sample `owd`",
        },
    ];

    pub fn validate(&self, field: &str, _env: &AppEnv) -> Result<(), ScenarioError> {
        if self.size <= UDP_IP_HEADER || self.size > 65535 {
            return Err(ScenarioError::new(
                format!("{field}.size"),
                format!("{} is not allowed (29 to 65535 bytes)", self.size),
            ));
        }
        // The gap between packets is size·8/rate rounded up to the 1 ns clock: below
        // 100 ns the rounding would change the rate by more than 1 % (and "1e30Tbit"
        // would send every packet in the same nanosecond's neighbourhood).
        let gap_ns = self.size as f64 * 8e9 / self.rate.0 as f64;
        if gap_ns < crate::resources::MIN_INTERVAL_NS {
            let max = self.size as f64 * 8e9 / crate::resources::MIN_INTERVAL_NS;
            return Err(ScenarioError::new(
                format!("{field}.rate"),
                format!(
                    "{} gives {}-byte packets {gap_ns:.3e} ns apart, under the 100 ns that the simulator's 1 ns clock represents within 1 % (allowed: up to {} for size = {})",
                    Rate::from_bps(self.rate.0),
                    self.size,
                    Rate::from_bps(max as u64),
                    self.size
                ),
            ));
        }
        Ok(())
    }
}

#[derive(Debug)]
pub struct Cbr {
    size: u32,
    gap: SimDuration,
    seq: u64,
    record: bool,
    owd: Histogram,
}

impl Cbr {
    pub fn new(c: &CbrConfig, _env: &AppEnv) -> Self {
        Cbr {
            size: c.size,
            gap: Rate::from_bps(c.rate.0).tx_time(c.size),
            seq: 0,
            record: c.record_delay,
            owd: Histogram::new(),
        }
    }
}

impl Application for Cbr {
    fn start(&mut self, cx: &mut FlowCtx) {
        self.on_timer(cx, 0);
    }
    fn on_timer(&mut self, cx: &mut FlowCtx, _kind: u32) {
        if cx.now >= cx.stop {
            return;
        }
        let mut p = cx.packet(cx.src, self.size, PacketKind::Udp);
        p.seq = self.seq;
        self.seq += 1;
        cx.send(p);
        cx.timer_at(cx.now + self.gap, 0);
    }
    fn on_packet(&mut self, cx: &mut FlowCtx, pkt: &Packet) {
        let owd = cx.now.saturating_since(pkt.sent_at);
        if cx.now >= cx.stats.warmup {
            self.owd.record(owd.as_nanos());
        }
        if self.record {
            cx.sample("owd", owd.as_secs_f64());
        }
        cx.delivered((pkt.size - UDP_IP_HEADER) as u64);
    }
    fn summary(&self, stats: &FlowStats, out: &mut Vec<(&'static str, f64)>) {
        out.push(("datagrams_sent", self.seq as f64));
        out.push((
            "loss_rate",
            if self.seq > 0 {
                1.0 - stats.delivered_pkts as f64 / self.seq as f64
            } else {
                0.0
            },
        ));
        out.push(("owd_mean", self.owd.mean() * 1e-9));
        out.push(("owd_p99", self.owd.quantile(0.99) * 1e-9));
    }
}
