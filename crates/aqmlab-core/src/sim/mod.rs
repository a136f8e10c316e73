//! The simulator: builds the network from a validated scenario and runs the event loop.
//!
//! [`Net`] (`net.rs`) is the shared network state (clock, event queue, links, routes,
//! counters) that applications reach through `FlowCtx`; `Simulator` adds the flows and the
//! loop. Split this way, an application can send packets (`Net::send`) while the simulator
//! holds `&mut` to that application's slot. [`collect`] turns a finished simulator into
//! the plain-data [`RunResult`].

mod collect;

use crate::app::{AnyApp, Application, FlowCtx, FlowStats};
use crate::event::{Event, EventQueue};
use crate::link::{HostJitter, Link, WifiMedium};
pub use crate::net::Net;
use crate::packet::{FlowId, NodeId, Packet};
use crate::qdisc::{BuildCtx, Qdisc};
use crate::result::RunResult;
use crate::rng::Rng;
use crate::scenario::{NodeKind, Plan, Routes, Scenario, ScenarioError};
use crate::time::{SimDuration, SimTime};

/// One flow: its endpoints, its application and its stats. Laid out in declaration
/// order (`repr(C)`, each slot on its own cache lines): what every event of the flow
/// reads to build its `FlowCtx` (`src`, `dst`, `dscp`, `stop`) shares the first line
/// with the start of `stats`, which its packets count into; the application's state
/// follows, the names last.
#[repr(C, align(64))]
pub struct FlowSlot {
    pub src: NodeId,
    pub dst: NodeId,
    /// DSCP of the flow's packets (both directions).
    pub dscp: u8,
    pub stop: SimTime,
    pub stats: FlowStats,
    pub rng: Rng,
    pub app: AnyApp,
    pub start: SimTime,
    pub group: u32,
    pub name: String,
    pub kind: &'static str,
}

impl FlowSlot {
    /// The slot's application and the context it runs in (borrowing the slot's stats
    /// and random stream next to the network).
    #[inline]
    fn split<'a>(
        &'a mut self,
        id: FlowId,
        now: SimTime,
        net: &'a mut Net,
    ) -> (&'a mut AnyApp, FlowCtx<'a>) {
        let FlowSlot {
            app,
            stats,
            rng,
            src,
            dst,
            stop,
            dscp,
            ..
        } = self;
        (
            app,
            FlowCtx {
                now,
                id,
                src: *src,
                dst: *dst,
                stop: *stop,
                dscp: *dscp,
                net,
                stats,
                rng,
            },
        )
    }
}

/// A running simulation. A run is a pure function of (scenario, seed).
pub struct Simulator {
    pub net: Net,
    pub flows: Vec<FlowSlot>,
    pub node_names: Vec<String>,
    pub node_is_host: Vec<bool>,
    pub plan: Plan,
    pub seed: u64,
    pub events_processed: u64,
    pub end: SimTime,
    wall: std::time::Duration,
}

impl Simulator {
    /// Validates `scenario` and builds the network. `seed` drives every random stream.
    pub fn new(scenario: &Scenario, seed: u64) -> Result<Simulator, ScenarioError> {
        let mut plan = scenario.validate()?;
        scenario.spread_starts(&mut plan, seed);
        Ok(Self::from_plan(plan, seed))
    }

    /// Builds from an already validated plan.
    pub fn from_plan(plan: Plan, seed: u64) -> Simulator {
        let warmup = SimTime::ZERO + plan.warmup;
        let end = SimTime::ZERO + plan.duration;
        let mut routes = Routes::compute(plan.nodes.len(), &plan.links);
        routes.shrink();
        let mut links: Vec<Link> = plan
            .links
            .iter()
            .enumerate()
            .map(|(i, (p, q))| {
                let ctx = BuildCtx {
                    rate: p.qdisc_rate(),
                    mtu: p.mtu,
                    overhead: p.overhead,
                    rng: Rng::stream(seed, "qdisc", i as u64),
                };
                let qd = q.build(ctx);
                let mut link = Link::new(
                    i as u32,
                    p.clone(),
                    qd,
                    Rng::stream(seed, "link", i as u64),
                    warmup,
                    plan.bin,
                );
                // Host processing jitter on end hosts' egress (noise on; not on WiFi
                // station interfaces, whose medium access is random already).
                if !plan.noise.host_jitter.is_zero()
                    && plan.nodes[p.from as usize].kind == NodeKind::Host
                    && !matches!(p.lower, crate::link::LowerParams::Wifi(_))
                {
                    link.set_host_jitter(HostJitter::new(
                        plan.noise.host_jitter,
                        Rng::stream(seed, "host-jitter", i as u64),
                    ));
                }
                // Per-packet logging only on the measured queues.
                if p.packet_traced() {
                    link.set_packet_windows(plan.packet_trace.clone());
                }
                link
            })
            .collect();
        for (l, t) in routes.peer_tables() {
            links[*l as usize].set_peer_table(t.clone());
        }
        plan_folds(&plan, &mut links);
        let media: Vec<WifiMedium> = plan
            .media
            .iter()
            .enumerate()
            .map(|(i, m)| WifiMedium::new(m.clone(), Rng::stream(seed, "wifi", i as u64)))
            .collect();
        let mut events = EventQueue::new();
        let flows: Vec<FlowSlot> = plan
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                events.push(f.start, Event::FlowStart(i as FlowId));
                FlowSlot {
                    name: f.name.clone(),
                    kind: f.app.kind_name(),
                    group: f.group,
                    src: f.src,
                    dst: f.dst,
                    start: f.start,
                    stop: f.stop,
                    app: f.app.build(&plan.env),
                    stats: {
                        let mut s = FlowStats::new(warmup, plan.bin);
                        s.goodput_bins.reserve_until(end);
                        s
                    },
                    rng: Rng::stream(seed, "flow", i as u64),
                    dscp: f.dscp,
                }
            })
            .collect();
        let net = Net {
            now: SimTime::ZERO,
            events,
            links,
            media,
            routes,
            pending_drops: Vec::with_capacity(64),
            next_uid: 0,
            delivered_pkts: 0,
            dropped_pkts: 0,
            unroutable_pkts: 0,
            horizon: SimTime::ZERO,
        };
        Simulator {
            net,
            flows,
            node_names: plan.nodes.iter().map(|n| n.name.clone()).collect(),
            node_is_host: plan
                .nodes
                .iter()
                .map(|n| n.kind == NodeKind::Host)
                .collect(),
            end: SimTime::ZERO + plan.duration,
            plan,
            seed,
            events_processed: 0,
            wall: std::time::Duration::ZERO,
        }
    }

    pub fn now(&self) -> SimTime {
        self.net.now
    }

    /// Every packet arrives at each router with an event of its own (no folded
    /// arrivals, `link::fold_arrivals`): the reference the tests compare folding with.
    /// Only before the run starts.
    #[doc(hidden)]
    pub fn without_folding(mut self) -> Self {
        assert!(
            self.events_processed == 0,
            "without_folding after the run started"
        );
        for l in &mut self.net.links {
            l.clear_fold();
        }
        self
    }

    /// Runs every event up to and including `t`; afterwards `now() == t`. Running in
    /// slices gives the results of one `run()`. Between slices, a link that takes packets
    /// without an arrival event at the router before it (`link::fold_arrivals`) may
    /// already count packets that reach that router after `t`.
    pub fn run_until(&mut self, t: SimTime) {
        let started = std::time::Instant::now();
        // folded arrivals look ahead to the end of the run, whatever the slice: a run in
        // slices processes the same events as one `run()` (statistics read between
        // slices may include packets already handed to a link for a later instant)
        self.net.horizon = t.max(self.end);
        while let Some((et, ev)) = self.net.events.pop_due(t) {
            debug_assert!(et >= self.net.now, "time travel");
            self.net.now = et;
            self.events_processed += 1;
            #[cfg(feature = "event-stats")]
            crate::event::stats::count(crate::event::stats::index(&ev));
            self.dispatch(ev);
            if !self.net.pending_drops.is_empty() {
                self.attribute_drops();
            }
        }
        if t > self.net.now {
            self.net.now = t;
        }
        let now = self.net.now;
        for l in 0..self.net.links.len() {
            self.net.links[l].settle(now);
            if !self.net.links[l].out.drops.is_empty() {
                self.net.drain_link_drops(l);
            }
        }
        self.wall += started.elapsed();
    }

    /// Runs the whole scenario.
    pub fn run(&mut self) {
        self.run_until(self.end);
    }

    #[inline]
    fn dispatch(&mut self, ev: Event) {
        let now = self.net.now;
        match ev {
            Event::TxDone(l) => {
                let link = &mut self.net.links[l as usize];
                link.tx_done(now, &mut self.net.events);
                if !link.out.drops.is_empty() {
                    self.net.drain_link_drops(l as usize);
                }
                self.net.fold_if_owed(l as usize);
            }
            Event::Arrive(l) => {
                let link = &mut self.net.links[l as usize];
                let at = link.far_end();
                if link.gro() {
                    let up = link.arrive_gro(now, &mut self.net.events);
                    for pkt in up.into_iter().flatten() {
                        self.deliver(at, pkt);
                    }
                } else {
                    let pkt = link.arrive(now, &mut self.net.events);
                    self.deliver(at, pkt);
                    self.net.fold_if_owed(l as usize);
                }
            }
            Event::FlowTimer { flow, kind } => {
                let (app, mut cx) = self.flows[flow as usize].split(flow, now, &mut self.net);
                app.on_timer(&mut cx, kind);
            }
            Event::FlowStart(flow) => {
                let (app, mut cx) = self.flows[flow as usize].split(flow, now, &mut self.net);
                app.start(&mut cx);
            }
            Event::TxComplete { flow, conn, bytes } => {
                let (app, mut cx) = self.flows[flow as usize].split(flow, now, &mut self.net);
                app.on_tx_complete(&mut cx, conn, bytes);
            }
            Event::LinkTimer { link, kind } => {
                if kind == crate::link::timer::ARRIVE {
                    self.arrive_multi(link);
                } else {
                    self.net.link_timer(link, kind);
                    if kind & crate::link::timer::TAG == crate::link::timer::CHANNEL {
                        self.arrive_owed(link);
                    }
                }
            }
        }
    }

    /// A multi-peer link (DOCSIS downstream, WiFi access point) delivers a packet to the
    /// peer on its route. Out of line: plain links use `Event::Arrive`.
    /// Also the arrivals the link then owes at once (`Link::take_arrival_owed`).
    #[inline(never)]
    fn arrive_multi(&mut self, l: u32) {
        let now = self.net.now;
        loop {
            let (at, pkt) = self.net.links[l as usize].arrive_multi(now, &mut self.net.events);
            self.deliver(at, pkt);
            if !self.net.links[l as usize].take_arrival_owed() {
                break;
            }
            // (what the event loop does between two events)
            if !self.net.pending_drops.is_empty() {
                self.attribute_drops();
            }
        }
    }

    /// A DOCSIS channel's packet went on the wire due at its modem now, its arrival
    /// owed at once instead of an event of its own (`DocsisDown::owe_arrival`).
    #[inline(never)]
    fn arrive_owed(&mut self, l: u32) {
        if self.net.links[l as usize].take_arrival_owed() {
            if !self.net.pending_drops.is_empty() {
                self.attribute_drops();
            }
            self.arrive_multi(l);
        }
    }

    /// `pkt` reached node `at`: its application takes it there, or the node forwards it.
    #[inline]
    fn deliver(&mut self, at: NodeId, pkt: Packet) {
        if pkt.dst == at {
            self.deliver_here(pkt);
        } else {
            self.net.send(at, pkt);
        }
    }

    /// `pkt` reached its destination host: its flow's application takes it.
    #[inline(never)]
    fn deliver_here(&mut self, pkt: Packet) {
        self.net.delivered_pkts += 1;
        let f = &mut self.flows[pkt.flow as usize];
        if pkt.ecn == crate::packet::Ecn::Ce {
            f.stats.ce_pkts += 1;
        }
        let (app, mut cx) = f.split(pkt.flow, self.net.now, &mut self.net);
        app.on_packet(&mut cx, &pkt);
    }

    fn attribute_drops(&mut self) {
        for (p, _why) in self.net.pending_drops.drain(..) {
            self.net.dropped_pkts += 1;
            if let Some(f) = self.flows.get_mut(p.flow as usize) {
                f.stats.lost_pkts += 1;
            }
        }
    }

    /// Packets currently inside links (qdiscs, lower layers, wires).
    pub fn packets_in_network(&self) -> u64 {
        self.net.links.iter().map(|l| l.packets_inside()).sum()
    }

    /// Checks packet conservation: created = delivered + dropped + in the network.
    pub fn check_conservation(&self) -> Result<(), String> {
        let created = self.net.created_pkts();
        let accounted = self.net.delivered_pkts + self.net.dropped_pkts + self.packets_in_network();
        if created != accounted {
            return Err(format!(
                "created {created} != delivered {} + dropped {} + in network {}",
                self.net.delivered_pkts,
                self.net.dropped_pkts,
                self.packets_in_network()
            ));
        }
        for l in &self.net.links {
            l.qdisc
                .stats()
                .check(l.qdisc.len() as u64, l.qdisc.backlog_bytes())
                .map_err(|e| format!("link {}: {e}", l.p.name))?;
        }
        Ok(())
    }

    /// Wall-clock time spent in `run_until` so far.
    pub fn wall_time(&self) -> std::time::Duration {
        self.wall
    }

    /// Collects the results (call after `run`).
    pub fn results(&self) -> RunResult {
        collect::collect(self)
    }

    /// Simulated time after warm-up, for rate averages.
    pub fn measured_span(&self) -> SimDuration {
        self.end.saturating_since(SimTime::ZERO + self.plan.warmup)
    }
}

/// Sets up the folded arrivals the plan allows (`Plan::fold_feeders`).
fn plan_folds(plan: &Plan, links: &mut [Link]) {
    for (b, &a) in plan.fold_feeders.iter().enumerate() {
        if a != u32::MAX {
            links[b].set_fold_from(a);
            links[a as usize].set_fold();
        }
    }
}

/// Parses, validates, runs and collects in one call.
pub fn run_scenario(scenario: &Scenario, seed: u64) -> Result<RunResult, ScenarioError> {
    let mut sim = Simulator::new(scenario, seed)?;
    sim.run();
    Ok(sim.results())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What every event of a flow reads of its slot (the `FlowCtx` fields) lies in the
    /// slot's first cache line, where its statistics start.
    #[test]
    fn flow_context_fields_share_the_first_cache_line() {
        use std::mem::offset_of;
        for off in [
            offset_of!(FlowSlot, src),
            offset_of!(FlowSlot, dst),
            offset_of!(FlowSlot, dscp),
            offset_of!(FlowSlot, stop),
            offset_of!(FlowSlot, stats),
        ] {
            assert!(off < 64, "offset {off}");
        }
        assert_eq!(
            std::mem::align_of::<FlowSlot>(),
            64,
            "slots start on a line"
        );
    }
}
