//! The topology builder: nodes, links (from a [`LinkSpec`] with defaults) and the
//! `[dumbbell]` and explicit `[[link]]` tables. Access networks (`[docsis]`, WiFi,
//! shapers) add to it in [`super::access`].

use super::{DirConfig, DumbbellConfig, LinkConfig, LossPeriodConfig, NodeKind, PlanNode};
use crate::link::{LinkParams, LossPeriod, LowerParams, MediumParams};
use crate::packet::NodeId;
use crate::params::{check_prob, check_range, ScenarioError, ScenarioWarning};
use crate::qdisc::{BuildCtx, QdiscConfig};
use crate::rng::Rng;
use crate::time::{Rate, SimDuration, SimTime};
use crate::units::RateSpec;
use std::collections::HashMap;

/// Collects nodes, links and media while a scenario's topology tables are resolved.
pub(super) struct Builder {
    pub(super) nodes: Vec<PlanNode>,
    pub(super) by_name: HashMap<String, NodeId>,
    pub(super) links: Vec<(LinkParams, QdiscConfig)>,
    pub(super) media: Vec<MediumParams>,
    pub(super) warnings: Vec<ScenarioWarning>,
    pub(super) trace: bool,
}

/// One point-to-point link to add. [`LinkSpec::new`] takes what every link needs and
/// gives the rest the scenario-file defaults (`[[link]]`): 14 bytes of framing overhead,
/// MTU 1500, a one-packet device queue, no random loss, no loss periods, no tracing.
#[derive(Clone, Debug)]
pub(super) struct LinkSpec {
    pub name: String,
    pub from: NodeId,
    pub to: NodeId,
    pub rate: Rate,
    pub delay: SimDuration,
    pub qdisc: QdiscConfig,
    pub overhead: u32,
    pub mtu: u32,
    pub device_queue: u32,
    pub loss: f64,
    pub loss_periods: Vec<LossPeriod>,
    pub trace: bool,
    pub gro: bool,
}

impl LinkSpec {
    pub fn new(
        name: String,
        from: NodeId,
        to: NodeId,
        rate: Rate,
        delay: SimDuration,
        qdisc: QdiscConfig,
    ) -> Self {
        LinkSpec {
            name,
            from,
            to,
            rate,
            delay,
            qdisc,
            overhead: super::d_overhead(),
            mtu: super::d_mtu(),
            device_queue: super::d_devq(),
            loss: 0.0,
            loss_periods: Vec::new(),
            trace: false,
            gro: false,
        }
    }
}

/// Checks a qdisc's parameters for a link whose qdisc drains at `rate`.
pub(super) fn check_qdisc(
    qdisc: &QdiscConfig,
    rate: Rate,
    mtu: u32,
    overhead: u32,
    field: &str,
) -> Result<(), ScenarioError> {
    let ctx = BuildCtx {
        rate,
        mtu,
        overhead,
        rng: Rng::default(),
    };
    qdisc
        .validate(&ctx)
        .map_err(|e| e.at(&format!("{field}.qdisc")))
}

pub(super) fn loss_periods(
    v: &[LossPeriodConfig],
    field: &str,
) -> Result<Vec<LossPeriod>, ScenarioError> {
    v.iter()
        .enumerate()
        .map(|(i, lp)| {
            check_prob(lp.loss, &format!("{field}[{i}].loss"))?;
            if lp.stop.0 <= lp.start.0 {
                return Err(ScenarioError::new(
                    format!("{field}[{i}].stop"),
                    "must be after start",
                ));
            }
            Ok(LossPeriod {
                start: SimTime::ZERO + lp.start.0,
                stop: SimTime::ZERO + lp.stop.0,
                loss: lp.loss,
            })
        })
        .collect()
}

impl Builder {
    pub(super) fn new(trace: bool) -> Self {
        Builder {
            nodes: Vec::new(),
            by_name: HashMap::new(),
            links: Vec::new(),
            media: Vec::new(),
            warnings: Vec::new(),
            trace,
        }
    }

    pub(super) fn add_node(
        &mut self,
        name: &str,
        kind: NodeKind,
        field: &str,
    ) -> Result<NodeId, ScenarioError> {
        self.check_new_node(name, field)?;
        Ok(self.push_node(name, kind))
    }

    /// Checks that `name` can name a new node: not empty, not taken.
    pub(super) fn check_new_node(&self, name: &str, field: &str) -> Result<(), ScenarioError> {
        if name.is_empty() {
            return Err(ScenarioError::new(field, "node names must not be empty"));
        }
        if self.by_name.contains_key(name) {
            return Err(ScenarioError::new(
                field,
                format!("node '{name}' is defined twice"),
            ));
        }
        Ok(())
    }

    /// Adds a node whose name [`Builder::check_new_node`] accepted.
    pub(super) fn push_node(&mut self, name: &str, kind: NodeKind) -> NodeId {
        let id = self.nodes.len() as NodeId;
        self.nodes.push(PlanNode {
            name: name.to_string(),
            kind,
        });
        self.by_name.insert(name.to_string(), id);
        id
    }

    pub(super) fn node(&self, name: &str, field: &str) -> Result<NodeId, ScenarioError> {
        self.by_name.get(name).copied().ok_or_else(|| {
            let mut known: Vec<&str> = self.nodes.iter().map(|n| n.name.as_str()).collect();
            known.truncate(8);
            ScenarioError::new(
                field,
                format!(
                    "unknown node '{name}' (known: {}{})",
                    known.join(", "),
                    if self.nodes.len() > 8 { ", ..." } else { "" }
                ),
            )
        })
    }

    pub(super) fn host(&self, name: &str, field: &str) -> Result<NodeId, ScenarioError> {
        let id = self.node(name, field)?;
        if self.nodes[id as usize].kind != NodeKind::Host {
            return Err(ScenarioError::new(
                field,
                format!("'{name}' is a router; flows run between hosts"),
            ));
        }
        Ok(id)
    }

    /// Checks a link's framing, MTU, device queue and qdisc, and adds it.
    pub(super) fn link(&mut self, s: LinkSpec, field: &str) -> Result<(), ScenarioError> {
        Builder::check_link(&s, field)?;
        self.check_cake_bandwidth(&s, field);
        self.push_link(s);
        Ok(())
    }

    /// Warns about a CAKE `bandwidth` above the rate of its link (the home-router mistake
    /// of shaping at the advertised speed): CAKE's shaper then never holds traffic back and
    /// the wire is the bottleneck, as for a token-bucket shaper above its link
    /// (`attach_shaper`). Once per field (a duplex link's two directions share one).
    fn check_cake_bandwidth(&mut self, s: &LinkSpec, field: &str) {
        let QdiscConfig::Cake(c) = &s.qdisc else {
            return;
        };
        let Some(bw) = c.bandwidth.map(|b| b.rate()) else {
            return;
        };
        if bw > s.rate {
            let msg = format!(
                "CAKE's bandwidth {bw} is above the link rate of {} ({}): CAKE never holds traffic back and the wire is the bottleneck; shape a little below the link rate (e.g. 95 %)",
                s.name, s.rate
            );
            self.warn_once(&format!("{field}.qdisc.bandwidth"), msg);
        }
    }

    /// Checks a link's framing, MTU, device queue and qdisc (at its rate).
    pub(super) fn check_link(s: &LinkSpec, field: &str) -> Result<(), ScenarioError> {
        check_range(format!("{field}.mtu"), s.mtu, 68, 65535, "68 to 65535")?;
        check_range(
            format!("{field}.overhead"),
            s.overhead,
            0,
            1000,
            "0 to 1000 bytes",
        )?;
        check_range(
            format!("{field}.device_queue"),
            s.device_queue,
            1,
            100_000,
            "1 to 100000 packets; 1 = BQL of one packet",
        )?;
        check_qdisc(&s.qdisc, s.rate, s.mtu, s.overhead, field)
    }

    /// Adds a link that [`Builder::check_link`] accepted.
    pub(super) fn push_link(&mut self, s: LinkSpec) {
        let p = LinkParams {
            name: s.name,
            from: s.from,
            to: s.to,
            peers: Vec::new(),
            rate: s.rate,
            delay: s.delay,
            overhead: s.overhead,
            mtu: s.mtu,
            device_queue: s.device_queue,
            loss: s.loss,
            loss_periods: s.loss_periods,
            trace: s.trace,
            gro: s.gro,
            lower: LowerParams::Wire,
        };
        self.links.push((p, s.qdisc));
    }

    pub(super) fn dumbbell(&mut self, d: &DumbbellConfig) -> Result<(), ScenarioError> {
        let first = self.links.len();
        self.dumbbell_links(d)?;
        for (p, _) in &mut self.links[first..] {
            p.gro = d.gro && p.peers.is_empty();
        }
        Ok(())
    }

    /// The dumbbell's nodes and links: `router_a`, `router_b`, the two bottleneck
    /// directions, then per pair `client{i}` and `server{i}` with their access links (or
    /// the clients' WiFi BSS).
    fn dumbbell_links(&mut self, d: &DumbbellConfig) -> Result<(), ScenarioError> {
        let f = "dumbbell";
        let (up_rate, down_rate) = dumbbell_rates(d)?;
        self.dumbbell_magnitudes(d);
        let access_rate = d.access_rate.map(|r| r.rate()).unwrap_or_else(|| {
            Rate::from_bps((up_rate.0.max(down_rate.0).saturating_mul(10)).max(1_000_000_000))
        });
        let access_q = d.access_qdisc.clone().unwrap_or_default();
        let ra = self.add_node("router_a", NodeKind::Router, f)?;
        let rb = self.add_node("router_b", NodeKind::Router, f)?;
        let base_q = d.qdisc.clone().unwrap_or_default();
        for (dir, cfg, rate, from, to) in [
            ("up", &d.up, up_rate, ra, rb),
            ("down", &d.down, down_rate, rb, ra),
        ] {
            self.bottleneck(d, dir, cfg, rate.rate(), (from, to), &base_q)?;
        }
        for i in 0..d.pairs as usize {
            self.dumbbell_pair(d, i, (ra, rb), access_rate, &access_q)?;
        }
        if let Some(w) = &d.wifi {
            if w.ap.is_some() || w.stations.is_some() {
                return Err(ScenarioError::new("dumbbell.wifi", "`ap` and `stations` are fixed in a dumbbell (router_a and the clients); remove them"));
            }
            let clients: Vec<NodeId> = (0..d.pairs as usize)
                .map(|i| self.by_name[&format!("client{i}")])
                .collect();
            self.wifi_bss(w, "wifi", ra, &clients, &access_q, "dumbbell.wifi")?;
        }
        Ok(())
    }

    /// Warns about dumbbell rates and delays that look like unit mistakes.
    fn dumbbell_magnitudes(&mut self, d: &DumbbellConfig) {
        for (key, r) in [
            ("dumbbell.rate", d.rate),
            ("dumbbell.up.rate", d.up.rate),
            ("dumbbell.down.rate", d.down.rate),
            ("dumbbell.access_rate", d.access_rate),
        ] {
            if let Some(r) = r {
                self.check_rate_magnitude(key, r.rate());
            }
        }
        self.check_delay_magnitude("dumbbell.delay", d.delay.0);
        self.check_delay_magnitude("dumbbell.access_delay", d.access_delay.0);
        for (key, v) in [
            ("client_delays", &d.client_delays),
            ("server_delays", &d.server_delays),
        ] {
            for (i, dl) in v.iter().flatten().enumerate() {
                self.check_delay_magnitude(&format!("dumbbell.{key}[{i}]"), dl.0);
            }
        }
    }

    /// One direction (`dir`: up or down) of the dumbbell's bottleneck, with its
    /// `[dumbbell.DIR]` overrides of the shared qdisc `base_q`.
    fn bottleneck(
        &mut self,
        d: &DumbbellConfig,
        dir: &str,
        cfg: &DirConfig,
        rate: Rate,
        (from, to): (NodeId, NodeId),
        base_q: &QdiscConfig,
    ) -> Result<(), ScenarioError> {
        let field = format!("dumbbell.{dir}");
        let loss = cfg.loss.unwrap_or(0.0);
        check_prob(loss, &format!("{field}.loss"))?;
        let lps = loss_periods(&cfg.loss_periods, &format!("{field}.loss_periods"))?;
        let q = cfg.qdisc.clone().unwrap_or_else(|| base_q.clone());
        let qfield = if cfg.qdisc.is_some() {
            field.clone()
        } else {
            "dumbbell".to_string()
        };
        let name = format!("bottleneck_{dir}");
        let spec = LinkSpec {
            overhead: d.overhead,
            mtu: d.mtu,
            device_queue: d.device_queue,
            loss,
            loss_periods: lps,
            trace: self.trace,
            ..LinkSpec::new(name, from, to, rate, d.delay.0, q)
        };
        self.link(spec, &qfield)?;
        if let Some(sh) = &cfg.shaper {
            self.attach_shaper(self.links.len() - 1, sh, &field)?;
        }
        Ok(())
    }

    /// Pair `i`: hosts `client{i}` and `server{i}`, each joined to its router (`ra`,
    /// `rb`) by an access link both ways (the client by WiFi instead when the dumbbell
    /// has one, added after the pairs).
    fn dumbbell_pair(
        &mut self,
        d: &DumbbellConfig,
        i: usize,
        (ra, rb): (NodeId, NodeId),
        access_rate: Rate,
        access_q: &QdiscConfig,
    ) -> Result<(), ScenarioError> {
        let f = "dumbbell";
        let c = self.add_node(&format!("client{i}"), NodeKind::Host, f)?;
        let s = self.add_node(&format!("server{i}"), NodeKind::Host, f)?;
        let cd = d
            .client_delays
            .as_ref()
            .map(|v| v[i].0)
            .unwrap_or(d.access_delay.0);
        let sd = d
            .server_delays
            .as_ref()
            .map(|v| v[i].0)
            .unwrap_or(d.access_delay.0);
        for (host, router, delay, hname, rname) in [
            (c, ra, cd, format!("client{i}"), "router_a"),
            (s, rb, sd, format!("server{i}"), "router_b"),
        ] {
            if host == c && d.wifi.is_some() {
                continue; // the client reaches router_a over WiFi
            }
            for (name, from, to) in [
                (format!("{hname}->{rname}"), host, router),
                (format!("{rname}->{hname}"), router, host),
            ] {
                let spec = LinkSpec {
                    overhead: d.overhead,
                    mtu: d.mtu,
                    ..LinkSpec::new(name, from, to, access_rate, delay, access_q.clone())
                };
                self.link(spec, "dumbbell.access")?;
            }
        }
        Ok(())
    }

    pub(super) fn explicit_link(
        &mut self,
        l: &LinkConfig,
        field: &str,
    ) -> Result<(), ScenarioError> {
        let a = self.node(&l.from, &format!("{field}.from"))?;
        let b = self.node(&l.to, &format!("{field}.to"))?;
        if a == b {
            return Err(ScenarioError::new(
                format!("{field}.to"),
                "a link must join two different nodes",
            ));
        }
        check_prob(l.loss, &format!("{field}.loss"))?;
        let lps = loss_periods(&l.loss_periods, &format!("{field}.loss_periods"))?;
        self.check_rate_magnitude(&format!("{field}.rate"), l.rate.rate());
        self.check_delay_magnitude(&format!("{field}.delay"), l.delay.0);
        let tr = l.trace || self.trace;
        let name = l
            .name
            .clone()
            .unwrap_or_else(|| format!("{}->{}", l.from, l.to));
        self.link(
            LinkSpec {
                overhead: l.overhead,
                mtu: l.mtu,
                device_queue: l.device_queue,
                loss: l.loss,
                loss_periods: lps.clone(),
                trace: tr,
                gro: l.gro,
                ..LinkSpec::new(
                    name.clone(),
                    a,
                    b,
                    l.rate.rate(),
                    l.delay.0,
                    l.qdisc.clone(),
                )
            },
            field,
        )?;
        if let Some(sh) = &l.shaper {
            self.attach_shaper(self.links.len() - 1, sh, field)?;
        }
        if l.duplex {
            let rname = if l.name.is_some() {
                format!("{name}_rev")
            } else {
                format!("{}->{}", l.to, l.from)
            };
            self.link(
                LinkSpec {
                    overhead: l.overhead,
                    mtu: l.mtu,
                    device_queue: l.device_queue,
                    loss: l.loss,
                    loss_periods: lps,
                    trace: tr,
                    gro: l.gro,
                    ..LinkSpec::new(rname, b, a, l.rate.rate(), l.delay.0, l.qdisc.clone())
                },
                field,
            )?;
            if let Some(sh) = &l.shaper {
                self.attach_shaper(self.links.len() - 1, sh, field)?;
            }
        }
        Ok(())
    }
}

/// The dumbbell's bottleneck rates (up, down) and the lengths of its per-pair delay
/// lists.
fn dumbbell_rates(d: &DumbbellConfig) -> Result<(RateSpec, RateSpec), ScenarioError> {
    check_range("dumbbell.pairs", d.pairs, 1, 100_000, "1 to 100000")?;
    let missing = || {
        ScenarioError::new(
            "dumbbell.rate",
            "missing: give `rate` (both directions) or both `up.rate` and `down.rate`",
        )
    };
    let up_rate = d.up.rate.or(d.rate).ok_or_else(missing)?;
    let down_rate = d.down.rate.or(d.rate).ok_or_else(missing)?;
    let n = d.pairs as usize;
    for (key, v) in [
        ("client_delays", &d.client_delays),
        ("server_delays", &d.server_delays),
    ] {
        if let Some(v) = v {
            if v.len() != n {
                return Err(ScenarioError::new(
                    format!("dumbbell.{key}"),
                    format!("has {} entries; it needs one per pair ({n})", v.len()),
                ));
            }
        }
    }
    Ok((up_rate, down_rate))
}
