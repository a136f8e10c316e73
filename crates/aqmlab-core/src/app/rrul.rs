//! `rrul` / `rrul_be`: Flent's Realtime Response Under Load test as a *composite*
//! workload. `Scenario::validate` expands each instance into ordinary flows, started
//! together, so every per-flow table, measure and the Flent export treat them like
//! hand-written flows:
//!
//! | flow | kind | direction |
//! |---|---|---|
//! | `NAME.tcp_up0` … `tcp_up{n-1}` | `bulk` | `from` → `to` |
//! | `NAME.tcp_down0` … `tcp_down{n-1}` | `bulk` | `to` → `from` |
//! | `NAME.udp_be1`, `udp_be2`, `udp_be3` | `udp_rr` | request `from` → `to` |
//! | `NAME.icmp` | `ping` | request `from` → `to` |
//!
//! `rrul_be` (Flent's `rrul_be.conf`) sends everything best effort: three UDP
//! request/response probes ("Ping (ms) UDP BE1" … "BE3", suffixes [`RRUL_BE_UDP_PROBES`];
//! `udp_probes` takes the first 1 to 3) and one ICMP ping. A flow-level `dscp` marks all
//! of its sub-flows with that one class instead.
//!
//! `rrul` is Flent's real RRUL (`rrul.conf`): the TCP flows of each direction carry the
//! four classes BE (CS0), BK (CS1), CS5 and EF in that order (Flent's `marking`
//! `'CS0,CS0'`, `'CS1,CS1'`, `'CS5,CS5'`, `'EF,EF'`, i.e. netperf `-Y local,remote`, so
//! both ends' sockets, data and ACKs, carry the mark); with `flows` other than 4 the
//! classes repeat in that order. Its UDP probes are "UDP EF" (EF,EF), "UDP BK"
//! (CS1,CS1) and "UDP BE" (no marking: best effort), suffixes [`RRUL_UDP_PROBES`],
//! always all three; the ICMP ping is unmarked (Flent passes no `-Q` to ping) and Linux
//! echoes the request's TOS in the reply (`net/ipv4/icmp.c`, `icmp_reply`). The marks
//! are in [`SubFlow::dscp`]; a flow-level `dscp` on `rrul` is refused.
//!
//! Under a DSCP-blind qdisc the marks change nothing: `rrul` and `rrul_be` with
//! `udp_probes = 3` give the same numbers (test `rrul_marks_are_invisible_to_dscp_blind_qdiscs`).

use super::bulk::BulkConfig;
use super::probe::{PingConfig, UdpRrConfig};
use super::{AppConfig, AppEnv, Application, FlowCtx, SubFlow};
use crate::packet::{dscp, Packet};
use crate::params::ParamDoc;
use crate::params::ScenarioError;
use crate::tcp::TcpOptions;
use crate::time::SimDuration;
use crate::units::DurationSpec;
use serde::{Deserialize, Serialize};

/// Name suffixes of the UDP request/response probes of Flent's `rrul_be` (three best
/// effort probes, its series "Ping (ms) UDP BE1" … "UDP BE3").
pub const RRUL_BE_UDP_PROBES: &[&str] = &["udp_be1", "udp_be2", "udp_be3"];

/// The UDP probes of Flent's `rrul` in its order: suffix and DSCP ("Ping (ms) UDP EF",
/// "UDP BK", "UDP BE").
pub const RRUL_UDP_PROBES: &[(&str, u8)] = &[
    ("udp_ef", dscp::EF),
    ("udp_bk", dscp::CS1),
    ("udp_be", dscp::BE),
];

/// The classes of `rrul`'s TCP flows per direction, in Flent's order: its series names
/// ("TCP upload BE" …) and DSCPs.
pub const RRUL_TCP_CLASSES: &[(&str, u8)] = &[
    ("BE", dscp::BE),
    ("BK", dscp::CS1),
    ("CS5", dscp::CS5),
    ("EF", dscp::EF),
];

fn d_flows() -> u32 {
    4
}
fn d_interval() -> DurationSpec {
    DurationSpec(SimDuration::from_millis(200))
}
fn d_ping_size() -> u32 {
    84
}
fn d_udp_size() -> u32 {
    29
}
fn d_udp_probes() -> u32 {
    RRUL_BE_UDP_PROBES.len() as u32
}

/// The `[[flow]]` keys of `rrul` / `rrul_be`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RrulConfig {
    /// TCP bulk flows per direction. Default 4 (Flent rrul).
    #[serde(default = "d_flows")]
    pub flows: u32,
    /// Time between latency probes (UDP and ICMP). Default 200 ms (Flent's step).
    #[serde(default = "d_interval")]
    pub interval: DurationSpec,
    /// IP size of the ICMP probe. Default 84 (Linux ping).
    #[serde(default = "d_ping_size")]
    pub ping_size: u32,
    /// IP size of the UDP request/response probe. Default 29 (netperf UDP_RR).
    #[serde(default = "d_udp_size")]
    pub udp_size: u32,
    /// UDP request/response probes, 1 to 3. Default 3 (today's Flent `rrul_be`); the
    /// Flent of 2014 that the residential study ran had one UDP probe and one ICMP probe.
    #[serde(default = "d_udp_probes")]
    pub udp_probes: u32,
    /// TCP settings of the bulk flows, overriding `[tcp]` field by field.
    #[serde(default, skip_serializing_if = "TcpOptions::is_empty")]
    pub tcp: TcpOptions,
}

impl RrulConfig {
    /// Load on the network, for the resource model: TCP.
    pub fn load_profile(&self, env: &AppEnv) -> super::LoadProfile {
        env.tcp_load(&self.tcp)
    }
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc {
            name: "flows",
            default: "4",
            doc: "TCP bulk flows per direction (Flent rrul: 4 up + 4 down)",
        },
        ParamDoc {
            name: "interval",
            default: "200ms",
            doc:
                "time between latency probes, each of the 3 UDP and the ICMP one (Flent step size)",
        },
        ParamDoc {
            name: "ping_size",
            default: "84",
            doc: "IP size of the ICMP echo probe (Linux ping)",
        },
        ParamDoc {
            name: "udp_size",
            default: "29",
            doc: "IP size of the UDP request/response probe (netperf UDP_RR)",
        },
        ParamDoc {
            name: "udp_probes",
            default: "3",
            doc: "UDP request/response probes (1 to 3; Flent 2014's rrul_be had 1)",
        },
        ParamDoc {
            name: "tcp",
            default: "{}",
            doc: "TCP settings of the bulk flows, overriding [tcp]",
        },
    ];

    fn bulk(&self) -> BulkConfig {
        BulkConfig {
            bytes: None,
            tcp: self.tcp.clone(),
        }
    }
    fn udp(&self) -> UdpRrConfig {
        UdpRrConfig {
            interval: self.interval,
            size: self.udp_size,
        }
    }
    fn ping(&self) -> PingConfig {
        PingConfig {
            interval: self.interval,
            size: self.ping_size,
        }
    }

    pub fn validate(&self, field: &str, env: &AppEnv) -> Result<(), ScenarioError> {
        if self.flows < 1 || self.flows > 1000 {
            return Err(ScenarioError::new(
                format!("{field}.flows"),
                format!("{} is not allowed (1 to 1000 per direction)", self.flows),
            ));
        }
        if !(1..=RRUL_BE_UDP_PROBES.len() as u32).contains(&self.udp_probes) {
            return Err(ScenarioError::new(
                format!("{field}.udp_probes"),
                format!("{} is not allowed (1 to 3)", self.udp_probes),
            ));
        }
        if self.interval.0.is_zero() {
            return Err(ScenarioError::new(
                format!("{field}.interval"),
                "must be positive",
            ));
        }
        for (key, size) in [("ping_size", self.ping_size), ("udp_size", self.udp_size)] {
            if !(28..=65535).contains(&size) {
                return Err(ScenarioError::new(
                    format!("{field}.{key}"),
                    format!("{size} is not allowed (28 to 65535 bytes)"),
                ));
            }
        }
        self.bulk().validate(field, env)
    }

    /// The flows one instance stands for (see the module doc): Flent `rrul_be`'s.
    pub fn expand(&self) -> Vec<SubFlow> {
        // validate refuses other counts; clamped so an unvalidated config cannot panic
        let n = (self.udp_probes as usize).clamp(1, RRUL_BE_UDP_PROBES.len());
        self.expand_with(&RRUL_BE_UDP_PROBES[..n])
    }

    /// The bulk flows in both directions, one UDP request/response probe per entry of
    /// `udp_probes` (its name suffix), then the ICMP probe.
    pub fn expand_with(&self, udp_probes: &[&str]) -> Vec<SubFlow> {
        let mut v = Vec::with_capacity(2 * self.flows as usize + udp_probes.len() + 1);
        for (dir, reversed) in [("up", false), ("down", true)] {
            for i in 0..self.flows {
                v.push(SubFlow {
                    suffix: format!("tcp_{dir}{i}"),
                    reversed,
                    app: AppConfig::Bulk(self.bulk()),
                    dscp: None,
                });
            }
        }
        for name in udp_probes {
            v.push(SubFlow {
                suffix: (*name).into(),
                reversed: false,
                app: AppConfig::UdpRr(self.udp()),
                dscp: None,
            });
        }
        v.push(SubFlow {
            suffix: "icmp".into(),
            reversed: false,
            app: AppConfig::Ping(self.ping()),
            dscp: None,
        });
        v
    }

    /// Flent's real `rrul` (see the module doc): the flows of [`expand_with`] with
    /// Flent's three marked UDP probes, every sub-flow carrying its class's DSCP.
    ///
    /// [`expand_with`]: Self::expand_with
    pub fn expand_marked(&self) -> Vec<SubFlow> {
        let names: Vec<&str> = RRUL_UDP_PROBES.iter().map(|(n, _)| *n).collect();
        let mut v = self.expand_with(&names);
        let n = self.flows as usize;
        for (i, sub) in v.iter_mut().enumerate() {
            sub.dscp = Some(if i < 2 * n {
                RRUL_TCP_CLASSES[(i % n) % RRUL_TCP_CLASSES.len()].1
            } else if i < 2 * n + RRUL_UDP_PROBES.len() {
                RRUL_UDP_PROBES[i - 2 * n].1
            } else {
                dscp::BE
            });
        }
        v
    }
}

/// The `[[flow]]` keys of `rrul` (Flent's real, DSCP-marked RRUL): those of `rrul_be`;
/// `udp_probes` must stay 3 (Flent's UDP EF, BK and BE probes).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(transparent)]
pub struct RrulMarkedConfig(pub RrulConfig);

impl RrulMarkedConfig {
    pub const PARAMS: &'static [ParamDoc] = RrulConfig::PARAMS;

    /// Load on the network, for the resource model: that of `rrul_be`.
    pub fn load_profile(&self, env: &AppEnv) -> super::LoadProfile {
        self.0.load_profile(env)
    }

    pub fn validate(&self, field: &str, env: &AppEnv) -> Result<(), ScenarioError> {
        if self.0.udp_probes != RRUL_UDP_PROBES.len() as u32 {
            return Err(ScenarioError::new(
                format!("{field}.udp_probes"),
                format!(
                    "{} is not allowed for rrul: it runs Flent's three marked UDP probes (EF, BK, BE); \
                     udp_probes = 1 or 2 applies to rrul_be",
                    self.0.udp_probes
                ),
            ));
        }
        self.0.validate(field, env)
    }
}

/// The running form of a composite: there is none. `Scenario::validate` replaces every
/// composite by its sub-flows, so a value of this (empty) type never exists.
#[derive(Debug)]
pub enum Composite {}

impl Composite {
    pub fn new<C>(_c: &C, _env: &AppEnv) -> Self {
        unreachable!("composite workloads are expanded by Scenario::validate before building")
    }
}

impl Application for Composite {
    fn start(&mut self, _cx: &mut FlowCtx) {
        match *self {}
    }
    fn on_packet(&mut self, _cx: &mut FlowCtx, _pkt: &Packet) {
        match *self {}
    }
    fn on_timer(&mut self, _cx: &mut FlowCtx, _kind: u32) {
        match *self {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_into_bulk_probe_flows() {
        let c: RrulConfig =
            toml::from_str("flows = 2\ninterval = \"100ms\"\ntcp = { cc = \"newreno\" }").unwrap();
        let subs = c.expand();
        let names: Vec<_> = subs.iter().map(|s| s.suffix.as_str()).collect();
        assert_eq!(
            names,
            [
                "tcp_up0",
                "tcp_up1",
                "tcp_down0",
                "tcp_down1",
                "udp_be1",
                "udp_be2",
                "udp_be3",
                "icmp"
            ]
        );
        assert_eq!(
            subs.iter().map(|s| s.reversed).collect::<Vec<_>>(),
            [false, false, true, true, false, false, false, false]
        );
        assert!(matches!(subs[7].app, AppConfig::Ping(_)));
        match &subs[2].app {
            AppConfig::Bulk(b) => assert_eq!(b.tcp.cc, Some(crate::tcp::CcKind::NewReno)),
            other => panic!("{other:?}"),
        }
        match &subs[4].app {
            AppConfig::UdpRr(u) => assert_eq!(u.interval.0, SimDuration::from_millis(100)),
            other => panic!("{other:?}"),
        }
        let bad: RrulConfig = toml::from_str("flows = 0").unwrap();
        let e = bad.validate("flow[0]", &AppEnv::default()).unwrap_err();
        assert_eq!(e.field, "flow[0].flows");
    }

    #[test]
    fn marked_expansion_repeats_flents_classes_beyond_four_flows() {
        let c: RrulConfig = toml::from_str("flows = 6").unwrap();
        let subs = c.expand_marked();
        let marks: Vec<(String, u8)> = subs
            .iter()
            .map(|s| (s.suffix.clone(), s.dscp.unwrap()))
            .collect();
        let tcp = [0, 8, 40, 46, 0, 8];
        for (i, want) in tcp.iter().enumerate() {
            assert_eq!(marks[i], (format!("tcp_up{i}"), *want));
            assert_eq!(marks[6 + i], (format!("tcp_down{i}"), *want));
        }
        assert_eq!(
            marks[12..],
            [
                ("udp_ef".to_string(), 46),
                ("udp_bk".to_string(), 8),
                ("udp_be".to_string(), 0),
                ("icmp".to_string(), 0)
            ]
        );
        // rrul_be leaves every sub-flow to the instance's dscp
        assert!(c.expand().iter().all(|s| s.dscp.is_none()));
    }

    #[test]
    fn udp_probe_count_is_configurable_and_checked() {
        let c: RrulConfig = toml::from_str("flows = 1\nudp_probes = 1").unwrap();
        let names: Vec<_> = c.expand().into_iter().map(|s| s.suffix).collect();
        assert_eq!(names, ["tcp_up0", "tcp_down0", "udp_be1", "icmp"]);
        for n in [0, 4] {
            let bad: RrulConfig = toml::from_str(&format!("udp_probes = {n}")).unwrap();
            let e = bad.validate("flow[0]", &AppEnv::default()).unwrap_err();
            assert_eq!(e.field, "flow[0].udp_probes");
        }
    }
}
