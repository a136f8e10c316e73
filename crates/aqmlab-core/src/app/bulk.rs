//! `bulk`: one TCP connection carrying a bulk transfer from `from` to `to` (netperf
//! TCP_STREAM / an FTP download, depending on which host is `from`).
//!
//! The sender (`from`, connection side A) opens the connection, writes `bytes` (or an
//! unlimited amount) and closes its side once everything is written; the receiver
//! counts in-order payload as goodput and closes its side when the sender's FIN
//! arrives. At the flow's `stop` time unsent data is dropped and the sender closes.
//!
//! Summary extras (sender side unless noted): `retransmits` (segments), `rtos`,
//! `fast_recoveries`, `loss_probes` (tail loss probes sent), `loss_probe_recoveries`
//! (probes that repaired a loss), `lost_retransmits` (retransmissions RACK found lost),
//! `rto_undos` (timeouts undone as spurious, Linux `TCPLossUndo`), `recovery_undos`
//! (fast recoveries undone in full, on a partial ACK or by D-SACKs: `TCPFullUndo` +
//! `TCPPartialUndo` + `TCPDSACKUndo`), `ecn_reductions`, `bytes_acked`, `segments_sent`,
//! `syn_retransmits`, `srtt_mean` and `rtt_min` (s), `cwnd_mean` (bytes, mean over
//! ACKs), and `completion_time` (s from start until the receiver has every byte; NaN
//! for unlimited or unfinished transfers).

use super::{AppEnv, Application, FlowCtx, FlowStats};
use crate::packet::Packet;
use crate::params::ParamDoc;
use crate::params::ScenarioError;
use crate::tcp::{Side, TcpConfig, TcpConn, TcpOptions, APP_TIMER_BIT, UNLIMITED};
use crate::time::{SimDuration, SimTime};
use crate::units::SizeSpec;
use serde::{Deserialize, Serialize};

const STOP_TIMER: u32 = APP_TIMER_BIT | 1;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BulkConfig {
    /// Bytes to transfer, e.g. "10MB". Default: unlimited (until `stop`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<SizeSpec>,
    /// TCP settings of this flow, overriding the scenario's `[tcp]` table field by field.
    #[serde(default, skip_serializing_if = "TcpOptions::is_empty")]
    pub tcp: TcpOptions,
}

impl BulkConfig {
    /// Load on the network, for the resource model: TCP.
    pub fn load_profile(&self, env: &AppEnv) -> super::LoadProfile {
        env.tcp_load(&self.tcp)
    }
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc {
            name: "bytes",
            default: "unlimited",
            doc: "size of the transfer, e.g. \"10MB\"; unlimited runs until the flow stops",
        },
        ParamDoc {
            name: "tcp",
            default: "{}",
            doc: "per-flow TCP settings overriding [tcp] (see `aqmlab describe tcp`)",
        },
    ];

    fn resolve(&self, field: &str, env: &AppEnv) -> Result<TcpConfig, ScenarioError> {
        env.tcp.merged(&self.tcp).resolve(&format!("{field}.tcp"))
    }

    pub fn validate(&self, field: &str, env: &AppEnv) -> Result<(), ScenarioError> {
        if let Some(b) = self.bytes {
            if b.0 == 0 || b.0 >= UNLIMITED {
                return Err(ScenarioError::new(
                    format!("{field}.bytes"),
                    format!(
                        "{} is not allowed (1 byte to 4 EB; omit for unlimited)",
                        b.0
                    ),
                ));
            }
        }
        self.resolve(field, env).map(|_| ())
    }
}

/// A running bulk transfer.
#[derive(Debug)]
pub struct Bulk {
    /// Boxed: a connection is ~4 KiB and `AnyApp` should stay small for other kinds.
    conn: Box<TcpConn>,
    size: Option<u64>,
    started: SimTime,
    completed: Option<SimDuration>,
}

impl Bulk {
    pub fn new(c: &BulkConfig, env: &AppEnv) -> Self {
        let cfg = c
            .resolve("flow", env)
            .expect("bulk flow validated before it is built");
        let mut conn = Box::new(TcpConn::new(&cfg, 0));
        conn.enable_tx_completions();
        Bulk {
            conn,
            size: c.bytes.map(|b| b.0),
            started: SimTime::ZERO,
            completed: None,
        }
    }

    /// The connection (for tests and inspection).
    pub fn conn(&self) -> &TcpConn {
        &self.conn
    }
}

impl Application for Bulk {
    fn start(&mut self, cx: &mut FlowCtx) {
        self.started = cx.now;
        let (a, b) = (cx.src, cx.dst);
        self.conn.connect(cx, a, b);
        self.conn.write(cx, Side::A, self.size.unwrap_or(UNLIMITED));
        if self.size.is_some() {
            self.conn.close(cx, Side::A);
        }
        let stop = cx.stop;
        cx.timer_at(stop, STOP_TIMER);
    }

    fn on_packet(&mut self, cx: &mut FlowCtx, pkt: &Packet) {
        let ev = self.conn.on_packet(cx, pkt);
        if ev.side == Side::B {
            if ev.delivered > 0 {
                cx.delivered(ev.delivered);
                if self.completed.is_none()
                    && self
                        .size
                        .is_some_and(|s| self.conn.bytes_received(Side::B) >= s)
                {
                    self.completed = Some(cx.now.saturating_since(self.started));
                }
            }
            if ev.peer_closed {
                self.conn.close(cx, Side::B);
            }
        }
    }

    fn on_timer(&mut self, cx: &mut FlowCtx, kind: u32) {
        if kind == STOP_TIMER {
            if self.completed.is_none() {
                self.conn.abort_unsent(cx, Side::A);
            }
        } else {
            self.conn.on_timer(cx, kind);
        }
    }

    fn on_tx_complete(&mut self, cx: &mut FlowCtx, conn: u32, bytes: u32) {
        // `conn` & 1: the sending node's id is above the receiving node's (Event::TxComplete)
        let side = if (conn & 1 == 1) == (cx.src > cx.dst) {
            Side::A
        } else {
            Side::B
        };
        self.conn.on_tx_complete(cx, side, bytes);
    }

    fn summary(&self, _stats: &FlowStats, out: &mut Vec<(&'static str, f64)>) {
        let s = self.conn.sender(Side::A);
        let st = &s.stats;
        let mss = self.conn.config().mss as f64;
        out.push(("retransmits", st.retransmits as f64));
        out.push(("rtos", st.rtos as f64));
        out.push(("fast_recoveries", st.fast_recoveries as f64));
        out.push(("loss_probes", st.loss_probes as f64));
        out.push(("loss_probe_recoveries", st.loss_probe_recoveries as f64));
        out.push(("lost_retransmits", st.lost_retransmits as f64));
        out.push(("rto_undos", st.rto_undos as f64));
        out.push((
            "recovery_undos",
            (st.full_undos + st.partial_undos + st.dsack_undos) as f64,
        ));
        out.push(("ecn_reductions", st.ecn_reductions as f64));
        out.push(("bytes_acked", st.bytes_acked as f64));
        out.push(("segments_sent", st.segs_sent as f64));
        out.push((
            "syn_retransmits",
            self.conn.handshake_retries(Side::A) as f64,
        ));
        out.push((
            "srtt_mean",
            if st.rtt_samples > 0 {
                st.srtt_sum / st.rtt_samples as f64
            } else {
                f64::NAN
            },
        ));
        let min = s.rtt.min_rtt();
        out.push((
            "rtt_min",
            if min < SimDuration::MAX {
                min.as_secs_f64()
            } else {
                f64::NAN
            },
        ));
        out.push((
            "cwnd_mean",
            if st.acks > 0 {
                st.cwnd_sum / st.acks as f64 * mss
            } else {
                f64::NAN
            },
        ));
        out.push((
            "completion_time",
            self.completed.map_or(f64::NAN, |d| d.as_secs_f64()),
        ));
    }
}
