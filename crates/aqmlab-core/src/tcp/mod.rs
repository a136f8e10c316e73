//! TCP: connections, loss recovery and congestion control, as Linux behaves.
//!
//! Layers, bottom up:
//! - [`config`]: the `[tcp]` / `tcp = { ... }` scenario tables and the resolved
//!   [`TcpConfig`] (Linux defaults).
//! - [`rtt`]: RTT estimation and the retransmission timeout (RFC 6298, Linux floor).
//! - [`cc`]: the congestion-control contract; [`newreno`] and [`cubic`] implement it.
//! - [`scoreboard`]: outstanding segments, SACK tagging, RFC 6675 loss marking, RACK
//!   (RFC 8985) time-based loss marking.
//! - [`sender`] / [`receiver`]: the two halves of an endpoint; algorithm cores that take
//!   `now` and never touch the event queue.
//! - [`conn`]: [`TcpConn`], a full-duplex connection between the two endpoints of a
//!   flow: handshake, packets on the wire, timers, events for the application.
//!
//! Applications (`app/bulk.rs`, later web and video workloads) embed connections.

pub mod bbr;
pub mod bbr3;
pub mod cc;
pub mod config;
pub mod conn;
pub mod cubic;
pub mod dctcp;
pub mod gso;
pub mod newreno;
pub mod prague;
pub mod rcvbuf;
pub mod receiver;
pub mod rtt;
pub mod scoreboard;
pub mod sender;

pub use cc::{CongestionControl, Window};
pub use config::{
    CaGrowth, DelayedAck, Recovery, RenoHalves, RtoFloor, RttTiming, SsGrowth, Stack, TcpConfig,
    TcpOptions, STACKS, TCP_PARAMS,
};
pub use conn::{
    decode_timer, timer_kind, Side, TcpConn, TcpEvents, TcpHost, TimerType, APP_TIMER_BIT,
};
pub use sender::{SenderStats, UNLIMITED};

use crate::time::{SimDuration, SimTime};
use cc::{AckSample, CcBuild, CcParams};
use serde::{Deserialize, Serialize};

/// Generates `CcKind` (the `cc = "..."` value of a scenario file), `AnyCc` (static dispatch
/// over the implementations) and `CC_KINDS` (the name list for `aqmlab list cc`), from one
/// line per control: `Variant: "name" => type, "one-line description";`.
macro_rules! cc_registry {
    ($( $(#[$meta:meta])* $variant:ident : $name:literal => $cc:ty, $about:literal ;)*) => {
        /// The congestion control algorithm (`cc = "..."` in a `[tcp]` table).
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
        pub enum CcKind {
            $( $(#[$meta])* #[serde(rename = $name)] $variant, )*
        }

        impl CcKind {
            pub fn name(self) -> &'static str {
                match self { $( CcKind::$variant => $name, )* }
            }
        }

        /// `(name, one-line description)` of every congestion control, for `aqmlab list cc`.
        pub const CC_KINDS: &[(&str, &str)] = &[ $( ($name, $about), )* ];

        /// Every congestion control, statically dispatched.
        #[derive(Clone, Debug)]
        pub enum AnyCc {
            $( $variant($cc), )*
        }

        impl AnyCc {
            pub fn new(kind: CcKind, p: &CcParams) -> Self {
                match kind { $( CcKind::$variant => AnyCc::$variant(<$cc as CcBuild>::build(p)), )* }
            }
        }

        impl CongestionControl for AnyCc {
            #[inline]
            fn init(&mut self, w: &mut Window, now: SimTime, snd_nxt: u64) {
                match self { $( AnyCc::$variant(c) => c.init(w, now, snd_nxt), )* }
            }
            #[inline]
            fn on_delivery(&mut self, w: &mut Window, a: &AckSample) {
                match self { $( AnyCc::$variant(c) => c.on_delivery(w, a), )* }
            }
            #[inline]
            fn on_ack(&mut self, w: &mut Window, a: &AckSample) {
                match self { $( AnyCc::$variant(c) => c.on_ack(w, a), )* }
            }
            #[inline]
            fn on_dup_ack(&mut self, w: &mut Window, now: SimTime) {
                match self { $( AnyCc::$variant(c) => c.on_dup_ack(w, now), )* }
            }
            #[inline]
            fn on_loss(&mut self, w: &Window, now: SimTime) -> u32 {
                match self { $( AnyCc::$variant(c) => c.on_loss(w, now), )* }
            }
            #[inline]
            fn on_ecn(&mut self, w: &Window, now: SimTime) -> u32 {
                match self { $( AnyCc::$variant(c) => c.on_ecn(w, now), )* }
            }
            #[inline]
            fn on_rto(&mut self, w: &Window, now: SimTime, snd_nxt: u64, reduce: bool) -> Option<u32> {
                match self { $( AnyCc::$variant(c) => c.on_rto(w, now, snd_nxt, reduce), )* }
            }
            #[inline]
            fn on_tx_start(&mut self, now: SimTime, idle: SimDuration) {
                match self { $( AnyCc::$variant(c) => c.on_tx_start(now, idle), )* }
            }
            #[inline]
            fn on_ack_event(&mut self, w: &mut Window, a: &AckSample) {
                match self { $( AnyCc::$variant(c) => c.on_ack_event(w, a), )* }
            }
            #[inline]
            fn cong_control(&mut self, w: &mut Window, a: &AckSample) -> bool {
                match self { $( AnyCc::$variant(c) => c.cong_control(w, a), )* }
            }
            #[inline]
            fn on_open(&mut self) {
                match self { $( AnyCc::$variant(c) => c.on_open(), )* }
            }
            #[inline]
            fn owns_cwnd(&self) -> bool {
                match self { $( AnyCc::$variant(c) => c.owns_cwnd(), )* }
            }
            fn set_seed(&mut self, seed: u64) {
                match self { $( AnyCc::$variant(c) => c.set_seed(seed), )* }
            }
            #[inline]
            fn marks_app_limited(&self) -> bool {
                match self { $( AnyCc::$variant(c) => c.marks_app_limited(), )* }
            }
            fn set_ecn_ok(&mut self, ok: bool) {
                match self { $( AnyCc::$variant(c) => c.set_ecn_ok(ok), )* }
            }
            fn pacing_rate(&self, w: &Window, srtt: SimDuration, mtu: u32) -> Option<f64> {
                match self { $( AnyCc::$variant(c) => c.pacing_rate(w, srtt, mtu), )* }
            }
        }
    };
}

cc_registry! {
    #[serde(alias = "reno")]
    NewReno: "newreno" => newreno::NewReno,
        "NewReno/Reno (RFC 5681 windows, RFC 6582 / RFC 6675 recovery); alias reno";
    Cubic: "cubic" => cubic::Cubic,
        "CUBIC (RFC 9438) with Linux's beta 0.7, C 0.4, fast convergence, TCP-friendly region and HyStart (default)";
    Dctcp: "dctcp" => dctcp::Dctcp,
        "DCTCP (RFC 8257, Linux tcp_dctcp): alpha EWMA g = 1/16, cwnd cut by alpha/2 once per window; ECN with Accurate ECN feedback";
    Prague: "prague" => prague::Prague,
        "TCP Prague (L4S team tcp_prague): DCTCP-like fractional cwnd, ECT(1), AccECN, paced, RTT independence (25 ms target), optional classic-ECN fallback";
    Bbr: "bbr" => bbr::Bbr,
        "BBRv1 (Linux tcp_bbr; bbr_version: linux = 5.1+ with the ACK-aggregation allowance extra_acked, default, or linux-4.20): model-based, paced; STARTUP gain 2.885, DRAIN, PROBE_BW 8-phase 1.25/0.75/1 cycle, PROBE_RTT every 10 s (200 ms at cwnd 4), cwnd gain 2, 10-round max-bw and 10 s min-RTT filters, long-term (policer) mode";
    Bbr3: "bbr3" => bbr3::Bbr3,
        "BBRv3 (draft-ietf-ccwg-bbr, Google's v3 tcp_bbr): loss-bounded inflight_hi (loss > 2 % of the flight, beta 0.7, headroom 0.15) and bw_lo/inflight_lo, PROBE_BW DOWN 0.9/CRUISE/REFILL/UP 1.25, STARTUP 2.77 with loss exit (6 losses/round), PROBE_RTT every 5 s at 0.5 BDP, paced; ECN not used";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_parse_and_build() {
        #[derive(Deserialize)]
        struct T {
            cc: CcKind,
        }
        let p = CcParams::from_config(&TcpConfig::default());
        for (name, _) in CC_KINDS {
            let k: CcKind = toml::from_str::<T>(&format!("cc = \"{name}\"")).unwrap().cc;
            assert_eq!(k.name(), *name);
            let mut c = AnyCc::new(k, &p);
            let mut w = Window::new(10, 1000);
            c.init(&mut w, SimTime::ZERO, 0);
            let ssthresh = c.on_loss(&w, SimTime::ZERO);
            if c.owns_cwnd() {
                // A cong_control module (Prague) cuts its own window; cwnd follows on
                // the next ACK.
                let a = AckSample {
                    now: SimTime::ZERO,
                    acked: 1,
                    rtt: None,
                    snd_una: 1,
                    snd_nxt: 10,
                    cwnd_limited: true,
                    ce: 0,
                    srtt: None,
                    // The sender in fast recovery with 5 segments in flight (BBR's
                    // packet conservation starts from the flight).
                    rs: cc::RateSample {
                        losses: 1,
                        in_flight: 5,
                        ca_state: sender::CaState::Recovery,
                        ..Default::default()
                    },
                };
                c.cong_control(&mut w, &a);
                assert!(w.cwnd < 10, "{name} reduces on loss");
            } else {
                assert!(ssthresh < 10, "{name} reduces on loss");
            }
        }
        let reno: T = toml::from_str("cc = \"reno\"").unwrap();
        assert_eq!(reno.cc, CcKind::NewReno);
        assert!(toml::from_str::<T>("cc = \"vegas\"").is_err());
    }
}
