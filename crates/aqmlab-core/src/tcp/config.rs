//! TCP settings: the scenario-file table ([`TcpOptions`], every field optional so that a
//! flow's `tcp = { ... }` can override single fields of the scenario-wide `[tcp]` table)
//! and the resolved, validated [`TcpConfig`] a connection runs with.
//!
//! Resolution order for each field: flow table > scenario `[tcp]` table > built-in
//! default. The built-in defaults are Linux's (the studies ran Linux hosts) unless the
//! doc comment says otherwise.

use crate::qdisc::ParamDoc;
use crate::scenario::ScenarioError;
use crate::time::SimDuration;
use crate::units::{DurationSpec, Limit};
use serde::{Deserialize, Serialize};

/// The congestion control algorithm.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CcKind {
    /// RFC 5681 slow start / congestion avoidance, halving on loss (Linux `reno`).
    #[serde(alias = "reno")]
    NewReno,
    /// CUBIC (RFC 9438) with Linux's constants and HyStart.
    Cubic,
}

impl CcKind {
    pub fn name(self) -> &'static str {
        match self {
            CcKind::NewReno => "newreno",
            CcKind::Cubic => "cubic",
        }
    }
}

/// How the receiver delays ACKs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DelayedAck {
    /// Linux: ACK when more than one full-sized segment is unacknowledged, else after
    /// 40 ms (TCP_ATO_MIN); quick-ACK mode for the first 16 segments
    /// (TCP_MAX_QUICKACKS), after an idle period, on the first CE mark, and immediate
    /// ACKs while data is out of order.
    Linux,
    /// ns-2 `DelAckSink` style: ACK every 2nd segment, 100 ms timeout, immediate ACK
    /// for out-of-order data; no quick-ACK mode (the DOCSIS study's setting).
    Ns2,
    /// ACK every segment.
    Off,
}

/// The `[tcp]` table / a flow's `tcp = { ... }`: every field optional.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpOptions {
    /// Congestion control: "cubic" (default, Linux's default) or "newreno" (alias "reno").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cc: Option<CcKind>,
    /// Maximum segment size (payload bytes). Default 1448: a 1500-byte MTU minus 20 (IP),
    /// 20 (TCP) and 12 (timestamp option) bytes of headers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mss: Option<u32>,
    /// Initial congestion window in segments. Default 10 (RFC 6928, Linux TCP_INIT_CWND).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub init_cwnd: Option<u32>,
    /// Selective acknowledgements (RFC 2018) with RFC 6675 recovery. Default true
    /// (Linux `tcp_sack = 1`); false gives NewReno recovery (RFC 6582).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sack: Option<bool>,
    /// Negotiate ECN (RFC 3168) and send data as ECT(0). Default false (Linux
    /// `tcp_ecn = 2` answers ECN but does not ask for it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn: Option<bool>,
    /// "linux" (default), "ns2" or "off"; see [`DelayedAck`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delayed_ack: Option<DelayedAck>,
    /// Floor of the retransmission timeout's variance term. Default 200 ms (Linux TCP_RTO_MIN);
    /// "1s" approximates RFC 6298's minimum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rto: Option<DurationSpec>,
    /// Retransmission timeout before any RTT sample (SYN, SYN-ACK). Default 1 s (RFC 6298,
    /// Linux TCP_TIMEOUT_INIT).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_rto: Option<DurationSpec>,
    /// Cap on the congestion window: an integer is segments, a size ("1MB") is bytes.
    /// Default: no cap beyond the receive window (Linux `snd_cwnd_clamp`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_window: Option<Limit>,
    /// Receive window the receiver advertises: an integer is segments, a size is bytes.
    /// Default "3MiB": half of Linux's largest receive buffer (tcp_rmem[2] = 6 MiB with
    /// tcp_adv_win_scale = 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcv_window: Option<Limit>,
    /// CUBIC's hybrid slow start (ACK-train and delay detection). Default true (Linux).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hystart: Option<bool>,
    /// Proportional rate reduction (RFC 6937) during recovery and ECN reduction.
    /// Default true (Linux); false gives RFC 6675's cwnd = ssthresh at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prr: Option<bool>,
    /// Record samples `cwnd` and `ssthresh` (bytes), `srtt` and `rto` (seconds) of the
    /// data sender. Default false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<bool>,
}

/// Parameter documentation for `aqmlab describe tcp`.
pub const TCP_PARAMS: &[ParamDoc] = &[
    ParamDoc {
        name: "cc",
        default: "cubic",
        doc: "congestion control: cubic (Linux default) or newreno (alias reno)",
    },
    ParamDoc {
        name: "mss",
        default: "1448",
        doc: "maximum segment size in bytes; IP packet = mss + 52 (IP, TCP, timestamps)",
    },
    ParamDoc {
        name: "init_cwnd",
        default: "10",
        doc: "initial window in segments (RFC 6928, Linux)",
    },
    ParamDoc {
        name: "sack",
        default: "true",
        doc: "SACK with RFC 6675 recovery; false = NewReno (RFC 6582)",
    },
    ParamDoc {
        name: "ecn",
        default: "false",
        doc: "negotiate ECN (RFC 3168); data sent as ECT(0)",
    },
    ParamDoc {
        name: "delayed_ack",
        default: "linux",
        doc: "linux (2 segments / 40 ms, quick-ack), ns2 (2 segments / 100 ms) or off",
    },
    ParamDoc {
        name: "min_rto",
        default: "200ms",
        doc: "floor of the RTO variance term (Linux TCP_RTO_MIN)",
    },
    ParamDoc {
        name: "initial_rto",
        default: "1s",
        doc: "RTO before the first RTT sample (RFC 6298)",
    },
    ParamDoc {
        name: "max_window",
        default: "none",
        doc: "cwnd cap: integer = segments, size = bytes",
    },
    ParamDoc {
        name: "rcv_window",
        default: "3MiB",
        doc: "advertised receive window: integer = segments, size = bytes",
    },
    ParamDoc {
        name: "hystart",
        default: "true",
        doc: "CUBIC hybrid slow start (Linux default on)",
    },
    ParamDoc {
        name: "prr",
        default: "true",
        doc: "proportional rate reduction (RFC 6937, Linux)",
    },
    ParamDoc {
        name: "trace",
        default: "false",
        doc: "record cwnd, ssthresh (bytes), srtt, rto (s) samples of the sender",
    },
];

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
    pub hystart: bool,
    pub prr: bool,
    pub trace: bool,
}

/// Effectively unlimited window cap (segments).
pub const NO_CWND_CAP: u32 = u32::MAX / 4;
const DEFAULT_RCV_WINDOW: u32 = 3 * 1024 * 1024;

impl Default for TcpConfig {
    fn default() -> Self {
        TcpOptions::default()
            .resolve("tcp")
            .expect("built-in defaults are valid")
    }
}

impl TcpOptions {
    /// No field set.
    pub fn is_empty(&self) -> bool {
        *self == TcpOptions::default()
    }

    /// `over`'s fields where set, else `self`'s.
    pub fn merged(&self, over: &TcpOptions) -> TcpOptions {
        TcpOptions {
            cc: over.cc.or(self.cc),
            mss: over.mss.or(self.mss),
            init_cwnd: over.init_cwnd.or(self.init_cwnd),
            sack: over.sack.or(self.sack),
            ecn: over.ecn.or(self.ecn),
            delayed_ack: over.delayed_ack.or(self.delayed_ack),
            min_rto: over.min_rto.or(self.min_rto),
            initial_rto: over.initial_rto.or(self.initial_rto),
            max_window: over.max_window.or(self.max_window),
            rcv_window: over.rcv_window.or(self.rcv_window),
            hystart: over.hystart.or(self.hystart),
            prr: over.prr.or(self.prr),
            trace: over.trace.or(self.trace),
        }
    }

    /// Fills in defaults and checks every value; `field` is the table's path for errors
    /// (`tcp` or `flow[2].tcp`).
    pub fn resolve(&self, field: &str) -> Result<TcpConfig, ScenarioError> {
        let bad = |k: &str, v: String, allowed: &str| {
            ScenarioError::new(
                format!("{field}.{k}"),
                format!("{v} is not allowed ({allowed})"),
            )
        };
        let mss = self.mss.unwrap_or(1448);
        if !(64..=65_000).contains(&mss) {
            return Err(bad("mss", mss.to_string(), "64 to 65000 bytes"));
        }
        let init_cwnd = self.init_cwnd.unwrap_or(10);
        if !(1..=10_000).contains(&init_cwnd) {
            return Err(bad(
                "init_cwnd",
                init_cwnd.to_string(),
                "1 to 10000 segments",
            ));
        }
        let min_rto = self
            .min_rto
            .map(|d| d.0)
            .unwrap_or(SimDuration::from_millis(200));
        if min_rto < SimDuration::from_millis(1) || min_rto > SimDuration::from_secs(60) {
            return Err(bad("min_rto", min_rto.to_string(), "1ms to 60s"));
        }
        let initial_rto = self
            .initial_rto
            .map(|d| d.0)
            .unwrap_or(SimDuration::from_secs(1));
        if initial_rto < SimDuration::from_millis(1) || initial_rto > SimDuration::from_secs(120) {
            return Err(bad("initial_rto", initial_rto.to_string(), "1ms to 120s"));
        }
        let max_cwnd = match self.max_window {
            None => NO_CWND_CAP,
            Some(Limit::Packets(n)) => n.min(NO_CWND_CAP),
            Some(Limit::Bytes(b)) => {
                if b < mss as u64 {
                    return Err(bad(
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
                "rcv_window",
                format!("{rcv_window}B"),
                &format!("one segment ({mss} bytes) to 4 GiB"),
            ));
        }
        Ok(TcpConfig {
            cc: self.cc.unwrap_or(CcKind::Cubic),
            mss,
            init_cwnd,
            sack: self.sack.unwrap_or(true),
            ecn: self.ecn.unwrap_or(false),
            delayed_ack: self.delayed_ack.unwrap_or(DelayedAck::Linux),
            min_rto,
            initial_rto,
            max_cwnd,
            rcv_window: rcv_window as u32,
            hystart: self.hystart.unwrap_or(true),
            prr: self.prr.unwrap_or(true),
            trace: self.trace.unwrap_or(false),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_merge_and_errors() {
        let d = TcpConfig::default();
        assert_eq!(
            (d.cc, d.mss, d.init_cwnd, d.sack, d.ecn),
            (CcKind::Cubic, 1448, 10, true, false)
        );
        assert_eq!(d.min_rto, SimDuration::from_millis(200));
        assert_eq!(d.initial_rto, SimDuration::from_secs(1));
        assert_eq!(d.rcv_window, 3 * 1024 * 1024);
        let scen: TcpOptions =
            toml::from_str("cc = \"reno\"\nmss = 1000\nmax_window = \"10KB\"").unwrap();
        let flow: TcpOptions = toml::from_str("ecn = true\ndelayed_ack = \"ns2\"").unwrap();
        let c = scen.merged(&flow).resolve("flow[0].tcp").unwrap();
        assert_eq!(
            (c.cc, c.mss, c.ecn, c.delayed_ack, c.max_cwnd),
            (CcKind::NewReno, 1000, true, DelayedAck::Ns2, 10)
        );
        let over: TcpOptions = toml::from_str("cc = \"cubic\"").unwrap();
        assert_eq!(scen.merged(&over).resolve("x").unwrap().cc, CcKind::Cubic);
        let e = TcpOptions {
            mss: Some(10),
            ..Default::default()
        }
        .resolve("flow[1].tcp")
        .unwrap_err();
        assert_eq!(e.field, "flow[1].tcp.mss");
        assert!(
            e.message.contains("10") && e.message.contains("64 to 65000"),
            "{}",
            e.message
        );
        assert!(toml::from_str::<TcpOptions>("cc = \"vegas\"").is_err());
        assert!(toml::from_str::<TcpOptions>("sacks = true").is_err());
        let e = TcpOptions {
            rcv_window: Some(Limit::Bytes(100)),
            ..Default::default()
        }
        .resolve("tcp")
        .unwrap_err();
        assert_eq!(e.field, "tcp.rcv_window");
    }
}
