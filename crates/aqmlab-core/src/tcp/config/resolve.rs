//! Resolution of a `[tcp]` table into the [`TcpConfig`] a connection runs with: legacy
//! keys reconciled, the stack profile filled in, every value checked.

use super::options::*;
use super::{CcKind, Stack, TcpOptions, DEFAULT_RCV_WINDOW};
use crate::params::ScenarioError;
use crate::time::SimDuration;
use crate::units::Limit;

/// A resolved TCP configuration.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TcpConfig {
    pub cc: CcKind,
    pub mss: u32,
    pub init_cwnd: u32,
    pub sack: bool,
    pub ecn: bool,
    pub delayed_ack: DelayedAck,
    pub min_rto: SimDuration,
    pub initial_rto: SimDuration,
    /// Congestion-window cap in segments.
    pub max_cwnd: u32,
    /// Advertised receive window in bytes.
    pub rcv_window: u32,
    pub rcv_autotune: RcvTune,
    pub hystart: bool,
    pub bbr_version: BbrVersion,
    /// `recovery == Recovery::Prr`.
    pub prr: bool,
    pub undo: Undo,
    pub loss_detection: LossDetection,
    pub tlp: Tlp,
    /// RFC 5827 early retransmit (Linux 3.5–4.10 `tcp_early_retrans`).
    pub early_retransmit: bool,
    pub dsack: bool,
    /// Kernel timer frequency (jiffies per second).
    pub hz: u32,
    pub recovery: Recovery,
    pub stack: Stack,
    pub ss_growth: SsGrowth,
    pub ca_growth: CaGrowth,
    pub rto_floor: RtoFloor,
    pub reno_halves: RenoHalves,
    pub rtt_timing: RttTiming,
    pub timestamps: bool,
    pub trace: bool,
    pub pacing: bool,
    pub pacing_ss_ratio: u32,
    pub pacing_ca_ratio: u32,
    pub rtt_scaling: RttScaling,
    pub rtt_target: SimDuration,
    pub rtt_transition: u32,
    pub ecn_fallback: bool,
    /// GSO super-packets with the autosize rule of this kernel (`None`: off).
    pub gso: Option<crate::tcp::gso::GsoKernel>,
    /// TCP Small Queues (only with `gso`).
    pub tsq: bool,
}

/// Effectively unlimited window cap (segments).
pub const NO_CWND_CAP: u32 = u32::MAX / 4;

impl Default for TcpConfig {
    fn default() -> Self {
        TcpOptions::default()
            .resolve("tcp")
            .expect("built-in defaults are valid")
    }
}

impl TcpConfig {
    /// IP + TCP header bytes of a segment without SACK blocks: 52 with the timestamp
    /// option, 40 without.
    pub fn header_bytes(&self) -> u32 {
        super::header_bytes(self.timestamps)
    }
}
impl TcpOptions {
    /// Fills in defaults and checks every value; `field` is the table's path for errors
    /// (`tcp` or `flow[2].tcp`). The older spellings (`prr`, `rto_undo`) are reconciled
    /// first, then the stack profile fills in what the table leaves unset.
    pub fn resolve(&self, field: &str) -> Result<TcpConfig, ScenarioError> {
        let recovery = self.legacy_recovery(field)?;
        let hz = self.hz.unwrap_or(250);
        if ![100, 250, 300, 1000].contains(&hz) {
            return Err(bad(
                field,
                "hz",
                hz.to_string(),
                "CONFIG_HZ: 100, 250, 300 or 1000",
            ));
        }
        let undo = self.legacy_undo(field)?;
        let stack = self.stack.unwrap_or(Stack::Linux);
        let o = stack.options().merged(&TcpOptions {
            recovery,
            prr: None,
            undo,
            rto_undo: None,
            ..self.clone()
        });
        let undo = o.undo.unwrap_or(Undo::Linux);
        if self.rto_undo == Some(true) && undo == Undo::Off {
            return Err(bad(
                field,
                "rto_undo",
                "true".into(),
                &format!(
                    "profile {} undoes nothing; set undo = \"linux-2.6\", \"linux-3.14\" or \"linux\"",
                    stack.name()
                ),
            ));
        }
        let recovery = o.recovery.unwrap_or(Recovery::Prr);
        let mss = o.mss.unwrap_or(1448);
        if !(64..=65_000).contains(&mss) {
            return Err(bad(field, "mss", mss.to_string(), "64 to 65000 bytes"));
        }
        let init_cwnd = o.init_cwnd.unwrap_or(10);
        if !(1..=10_000).contains(&init_cwnd) {
            return Err(bad(
                field,
                "init_cwnd",
                init_cwnd.to_string(),
                "1 to 10000 segments",
            ));
        }
        let (min_rto, initial_rto) = o.rto_bounds(field)?;
        let (max_cwnd, rcv_window) = o.windows(field, mss)?;
        let cc = o.cc.unwrap_or(CcKind::Cubic);
        let (pacing_ss_ratio, pacing_ca_ratio) = o.pacing_ratios(field, cc)?;
        let rtt_target = self
            .rtt_target
            .map(|d| d.0)
            .unwrap_or(SimDuration::from_millis(25));
        if rtt_target > SimDuration::from_millis(100) {
            // Prague caps scaled RTTs at MAX_SCALED_RTT = 100 ms.
            return Err(bad(
                field,
                "rtt_target",
                rtt_target.to_string(),
                "0 to 100ms",
            ));
        }
        let gso = o.gso_kernel(field, stack)?;
        let tsq = o.tsq.unwrap_or(gso.is_some());
        if tsq && gso.is_none() {
            return Err(bad(
                field,
                "tsq",
                "true".into(),
                "TCP Small Queues are modelled for GSO senders: tsq = true needs gso = \"on\"",
            ));
        }
        Ok(TcpConfig {
            gso,
            tsq,
            cc,
            pacing: o.pacing.unwrap_or(cc.paced_by_default()),
            pacing_ss_ratio,
            pacing_ca_ratio,
            rtt_scaling: o.rtt_scaling.unwrap_or(RttScaling::Rate),
            rtt_target,
            rtt_transition: o.rtt_transition.unwrap_or(4),
            ecn_fallback: o.ecn_fallback.unwrap_or(false),
            mss,
            init_cwnd,
            sack: o.sack.unwrap_or(true),
            ecn: o.ecn.unwrap_or(false) || cc.needs_accecn(),
            delayed_ack: o.delayed_ack.unwrap_or(DelayedAck::Linux),
            min_rto,
            initial_rto,
            max_cwnd,
            rcv_window,
            rcv_autotune: o.rcv_autotune.unwrap_or(RcvTune::Off),
            hystart: o.hystart.unwrap_or(true),
            bbr_version: o.bbr_version.unwrap_or(BbrVersion::Linux),
            prr: recovery == Recovery::Prr,
            undo,
            loss_detection: o.loss_detection.unwrap_or(LossDetection::Rack),
            tlp: o.tlp.unwrap_or(Tlp::Linux),
            early_retransmit: o.early_retransmit.unwrap_or(false),
            dsack: o.dsack.unwrap_or(true),
            hz,
            recovery,
            stack,
            ss_growth: o.ss_growth.unwrap_or(SsGrowth::Segments),
            ca_growth: o.ca_growth.unwrap_or(CaGrowth::Segments),
            rto_floor: o.rto_floor.unwrap_or(RtoFloor::Variance),
            reno_halves: o.reno_halves.unwrap_or(RenoHalves::Cwnd),
            rtt_timing: o.rtt_timing.unwrap_or(RttTiming::Ack),
            timestamps: o.timestamps.unwrap_or(true),
            trace: o.trace.unwrap_or(false),
        })
    }

    /// `prr` is the older spelling of `recovery`: an explicit key beats the profile;
    /// both set and contradicting each other is an error.
    fn legacy_recovery(&self, field: &str) -> Result<Option<Recovery>, ScenarioError> {
        Ok(match (self.recovery, self.prr) {
            (Some(r), Some(p)) if (r == Recovery::Prr) != p => {
                return Err(bad(
                    field,
                    "prr",
                    p.to_string(),
                    &format!(
                        "contradicts recovery = \"{}\"; set only one of the two",
                        match r {
                            Recovery::Prr => "prr",
                            Recovery::Rfc6675 => "rfc6675",
                            Recovery::RateHalving => "rate-halving",
                        }
                    ),
                ))
            }
            (Some(r), _) => Some(r),
            (None, Some(true)) => Some(Recovery::Prr),
            (None, Some(false)) => Some(Recovery::Rfc6675),
            (None, None) => None,
        })
    }

    /// `rto_undo` is the older boolean form of `undo`: false beats the profile, true
    /// keeps the profile's flavour; contradicting `undo` is an error.
    fn legacy_undo(&self, field: &str) -> Result<Option<Undo>, ScenarioError> {
        Ok(match (self.undo, self.rto_undo) {
            (Some(u), Some(r)) if (u != Undo::Off) != r => {
                return Err(bad(
                    field,
                    "rto_undo",
                    r.to_string(),
                    &format!(
                        "contradicts undo = \"{}\"; set only undo (\"off\", \"linux-2.6\", \"linux-3.14\" or \"linux\")",
                        u.name()
                    ),
                ))
            }
            (Some(u), _) => Some(u),
            (None, Some(false)) => Some(Undo::Off),
            (None, _) => None,
        })
    }

    /// `min_rto` (1 ms to 60 s, default 200 ms) and `initial_rto` (1 ms to 120 s,
    /// default 1 s).
    fn rto_bounds(&self, field: &str) -> Result<(SimDuration, SimDuration), ScenarioError> {
        let min_rto = self
            .min_rto
            .map(|d| d.0)
            .unwrap_or(SimDuration::from_millis(200));
        if min_rto < SimDuration::from_millis(1) || min_rto > SimDuration::from_secs(60) {
            return Err(bad(field, "min_rto", min_rto.to_string(), "1ms to 60s"));
        }
        let initial_rto = self
            .initial_rto
            .map(|d| d.0)
            .unwrap_or(SimDuration::from_secs(1));
        if initial_rto < SimDuration::from_millis(1) || initial_rto > SimDuration::from_secs(120) {
            return Err(bad(
                field,
                "initial_rto",
                initial_rto.to_string(),
                "1ms to 120s",
            ));
        }
        Ok((min_rto, initial_rto))
    }

    /// The cwnd cap in segments (`max_window`, at least one segment) and the receive
    /// window in bytes (`rcv_window`, one segment to 4 GiB).
    fn windows(&self, field: &str, mss: u32) -> Result<(u32, u32), ScenarioError> {
        let max_cwnd = match self.max_window {
            None => NO_CWND_CAP,
            Some(Limit::Packets(n)) => n.min(NO_CWND_CAP),
            Some(Limit::Bytes(b)) => {
                if b < mss as u64 {
                    return Err(bad(
                        field,
                        "max_window",
                        format!("{b}B"),
                        &format!("at least one segment ({mss} bytes)"),
                    ));
                }
                (b / mss as u64).min(NO_CWND_CAP as u64) as u32
            }
        };
        if max_cwnd < 1 {
            return Err(bad(
                field,
                "max_window",
                max_cwnd.to_string(),
                "at least 1 segment",
            ));
        }
        let rcv_window = match self.rcv_window {
            None => DEFAULT_RCV_WINDOW as u64,
            Some(Limit::Packets(n)) => n as u64 * mss as u64,
            Some(Limit::Bytes(b)) => b,
        };
        if rcv_window < mss as u64 || rcv_window > u32::MAX as u64 {
            return Err(bad(
                field,
                "rcv_window",
                format!("{rcv_window}B"),
                &format!("one segment ({mss} bytes) to 4 GiB"),
            ));
        }
        Ok((max_cwnd, rcv_window as u32))
    }

    /// The pacing ratios in percent (10 to 1000): slow start 200, congestion avoidance
    /// 120 (Prague 100).
    fn pacing_ratios(&self, field: &str, cc: CcKind) -> Result<(u32, u32), ScenarioError> {
        let pacing_ss_ratio = self.pacing_ss_ratio.unwrap_or(200);
        let pacing_ca_ratio =
            self.pacing_ca_ratio
                .unwrap_or(if cc == CcKind::Prague { 100 } else { 120 });
        for (k, v) in [
            ("pacing_ss_ratio", pacing_ss_ratio),
            ("pacing_ca_ratio", pacing_ca_ratio),
        ] {
            if !(10..=1000).contains(&v) {
                return Err(bad(field, k, v.to_string(), "10 to 1000 percent"));
            }
        }
        Ok((pacing_ss_ratio, pacing_ca_ratio))
    }
}

/// The error for key `k` of table `field` with value `v`.
fn bad(field: &str, k: &str, v: String, allowed: &str) -> ScenarioError {
    ScenarioError::new(
        format!("{field}.{k}"),
        format!("{v} is not allowed ({allowed})"),
    )
}

impl TcpOptions {
    /// `gso`: the kernel whose autosizing applies, for the two Linux profiles that have
    /// one (3.14 and 6.1); an error for the others.
    fn gso_kernel(
        &self,
        field: &str,
        stack: Stack,
    ) -> Result<Option<crate::tcp::gso::GsoKernel>, ScenarioError> {
        use crate::tcp::gso::{Gso, GsoKernel};
        match (self.gso.unwrap_or(Gso::Off), stack) {
            (Gso::Off, _) => Ok(None),
            (Gso::On, Stack::Linux) => Ok(Some(GsoKernel::Linux6_1)),
            (Gso::On, Stack::Linux3_14) => Ok(Some(GsoKernel::Linux3_14)),
            (Gso::On, s) => Err(bad(
                field,
                "gso",
                "\"on\"".into(),
                &format!(
                    "stack {} has no GSO autosizing; gso = \"on\" needs stack \"linux\" or \"linux-3.14\"",
                    s.name()
                ),
            )),
        }
    }
}
