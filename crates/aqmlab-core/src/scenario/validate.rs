//! `Scenario::validate`: everything that can be checked before a run, and the resolution
//! of names into the [`Plan`] the simulator builds from (topology through
//! [`super::build`], routes through [`super::routes`]).

use super::build::Builder;
use super::routes::Routes;
use super::{FlowConfig, NoiseConfig, Plan, PlanFlow, RunConfig, Scenario};
use crate::app::AppEnv;
use crate::params::ScenarioError;
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};
use std::collections::HashMap;

impl Scenario {
    /// The resource budget: the machine default ([`Budget::machine_default`]) with
    /// `run.max_memory` / `run.max_events` where given.
    ///
    /// [`Budget::machine_default`]: crate::resources::Budget::machine_default
    pub fn budget(&self) -> crate::resources::Budget {
        let mut b = crate::resources::Budget::machine_default();
        if let Some(m) = self.run.max_memory {
            b.max_memory = m.0 as f64;
        }
        if let Some(e) = self.run.max_events {
            b.max_events = e;
        }
        b
    }

    /// Checks everything that can be checked before running and resolves names; the
    /// run must fit [`Scenario::budget`].
    pub fn validate(&self) -> Result<Plan, ScenarioError> {
        self.validate_with(&self.budget())
    }

    /// [`Scenario::validate`] with an explicit resource budget
    /// ([`Budget::UNLIMITED`](crate::resources::Budget::UNLIMITED) for `--force`).
    ///
    /// One step per table, in the order their errors are reported: `[run]`, the
    /// topology, `[tcp]`, the flow counts, the noise, each `[[flow]]`, the flow names,
    /// the packet-trace windows, then the resource estimate against `budget`.
    pub fn validate_with(&self, budget: &crate::resources::Budget) -> Result<Plan, ScenarioError> {
        check_run(&self.run)?;
        let b = self.topology(budget)?;
        let routes = Routes::compute(b.nodes.len(), &b.links);
        self.tcp.resolve("tcp")?;
        let env = AppEnv {
            tcp: self.tcp.clone(),
        };
        self.check_flow_counts(&env, budget)?;
        let noise = NoiseConfig::resolve(&self.run)?;
        let mut flows = Vec::new();
        for (gi, f) in self.flows.iter().enumerate() {
            plan_flow_table(gi, f, &self.run, &b, &routes, &env, &mut flows)?;
        }
        check_flow_names(&flows)?;
        let packet_trace = packet_trace_windows(&self.run)?;
        let run = &self.run;
        let mut plan = Plan {
            duration: run.duration.0,
            warmup: run.warmup.0,
            bin: run.bin.0,
            packet_trace,
            nodes: b.nodes,
            links: b.links,
            media: b.media,
            flows,
            warnings: b.warnings,
            env,
            estimate: crate::resources::Estimate::default(),
            noise,
            fold_feeders: Vec::new(),
        };
        plan.fold_feeders = plan.find_fold_feeders(&routes);
        let loads = flow_loads(&plan, &routes);
        plan.estimate =
            crate::resources::estimate(&plan.shape(), &loads, routes.routers(), run.trace);
        crate::resources::check(&plan.shape(), &plan.estimate, budget)?;
        Ok(plan)
    }

    /// Builds the nodes and links of `[dumbbell]`, `[docsis]`, `[[node]]`, `[[link]]` and
    /// `[[wifi]]`, refusing a dumbbell too large for `budget` before allocating it.
    fn topology(&self, budget: &crate::resources::Budget) -> Result<Builder, ScenarioError> {
        let run = &self.run;
        // The size of the topology before building it: never allocate a huge network
        // only to refuse it afterwards.
        if let Some(d) = &self.dumbbell {
            crate::resources::check_topology(
                "dumbbell.pairs",
                2 * d.pairs as u64 + 2,
                4 * d.pairs as u64 + 2,
                run.duration.0,
                run.bin.0,
                budget,
            )?;
        }
        let mut b = Builder::new(run.trace);
        if let Some(d) = &self.dumbbell {
            b.dumbbell(d)?;
        }
        if let Some(d) = &self.docsis {
            if self.dumbbell.is_some() {
                return Err(ScenarioError::new("docsis", "use either [dumbbell] or [docsis], not both (both create hosts named server0..)"));
            }
            b.docsis(d)?;
        }
        for (i, n) in self.nodes.iter().enumerate() {
            b.add_node(&n.name, n.kind, &format!("node[{i}].name"))?;
        }
        let mut link_names: std::collections::HashSet<String> =
            b.links.iter().map(|(l, _)| l.name.clone()).collect();
        for (i, l) in self.links.iter().enumerate() {
            let first = b.links.len();
            b.explicit_link(l, &format!("link[{i}]"))?;
            // `queue:NAME` measures and the result tables name links: two links of one
            // name would make them ambiguous.
            for (p, _) in &b.links[first..] {
                if !link_names.insert(p.name.clone()) {
                    return Err(ScenarioError::new(
                        format!("link[{i}].name"),
                        format!(
                            "link name '{}' is used twice (an earlier link, or the reverse \
                             direction NAME_rev of a named duplex link, has it); give each \
                             link its own name",
                            p.name
                        ),
                    ));
                }
            }
        }
        for (i, w) in self.wifi.iter().enumerate() {
            b.explicit_wifi(w, &format!("wifi[{i}]"))?;
        }
        if b.nodes.is_empty() {
            return Err(ScenarioError::new(
                "",
                "no topology: add a [dumbbell] table or [[node]] and [[link]] tables",
            ));
        }
        Ok(b)
    }

    /// Flow counts first: never allocate millions of flows only to refuse them.
    fn check_flow_counts(
        &self,
        env: &AppEnv,
        budget: &crate::resources::Budget,
    ) -> Result<(), ScenarioError> {
        use crate::resources;
        let groups: Vec<(u64, u64, f64)> = self
            .flows
            .iter()
            .map(|f| {
                let per = f.app.expand().map(|v| v.len() as u64).unwrap_or(1);
                let bytes = if f.app.load_profile(env).fixed_pps.is_none() {
                    resources::TCP_FLOW_BYTES
                } else {
                    resources::UDP_FLOW_BYTES
                };
                (f.count as u64, per, bytes)
            })
            .collect();
        resources::check_flow_counts(&groups, budget)
    }

    /// Draws the random start times (from the run seed): flows with `start_spread`, and
    /// (noise on) the start jitter of flows with neither `start` nor `start_spread`.
    ///
    /// `start_spread`: every instance of a table draws one offset, in instance order
    /// (stream `("flow-start", table)`); the flows a composite instance expands into share
    /// it (they start together). Start jitter: every resolved flow of the table draws its
    /// own offset, in flow order (stream `("start-jitter", table)`), uniform in
    /// `[0, min(start_jitter, span / 2))` where span is the flow's start-to-stop time, so
    /// that a short flow still runs.
    pub fn spread_starts(&self, plan: &mut Plan, seed: u64) {
        let mut k = 0usize;
        let jitter = plan.noise.start_jitter;
        for (gi, f) in self.flows.iter().enumerate() {
            let mut rng = Rng::stream(seed, "flow-start", gi as u64);
            let mut jrng = Rng::stream(seed, "start-jitter", gi as u64);
            let spread = f.spread();
            let jittered = f.takes_start_jitter() && !jitter.is_zero();
            for i in 0..f.count {
                let off = if spread.is_zero() {
                    0
                } else {
                    rng.below(spread.as_nanos())
                };
                while k < plan.flows.len()
                    && plan.flows[k].group == gi as u32
                    && plan.flows[k].instance == i
                {
                    let pf = &mut plan.flows[k];
                    pf.start += SimDuration::from_nanos(off);
                    if jittered {
                        let span = pf.stop.saturating_since(pf.start).as_nanos() / 2;
                        let window = jitter.as_nanos().min(span);
                        pf.start += SimDuration::from_nanos(jrng.below(window));
                    }
                    k += 1;
                }
            }
        }
    }
}

/// The `[run]` table's own checks.
fn check_run(run: &RunConfig) -> Result<(), ScenarioError> {
    if let Some(e) = run.max_events {
        if e.is_nan() || e <= 0.0 {
            return Err(ScenarioError::new(
                "run.max_events",
                format!("{e} must be a positive number of events"),
            ));
        }
    }
    if run.duration.0.is_zero() {
        return Err(ScenarioError::new("run.duration", "must be positive"));
    }
    if run.bin.0.is_zero() {
        return Err(ScenarioError::new("run.bin", "must be positive"));
    }
    if run.warmup.0 >= run.duration.0 {
        return Err(ScenarioError::new(
            "run.warmup",
            format!(
                "{} must be shorter than run.duration ({})",
                run.warmup.0, run.duration.0
            ),
        ));
    }
    Ok(())
}

/// Checks the `[[flow]]` table `gi` (its workload, start, stop and spread) and appends
/// the flows of its instances to `flows`.
fn plan_flow_table(
    gi: usize,
    f: &FlowConfig,
    run: &RunConfig,
    b: &Builder,
    routes: &Routes,
    env: &AppEnv,
    flows: &mut Vec<PlanFlow>,
) -> Result<(), ScenarioError> {
    let field = format!("flow[{gi}]");
    let end = SimTime::ZERO + run.duration.0;
    let (f_start, f_spread) = (f.start_at(), f.spread());
    f.app.validate(&field, env)?;
    let stop = match f.stop {
        Some(s) => SimTime::ZERO + s.0,
        None => end,
    };
    if f_start >= run.duration.0 {
        return Err(ScenarioError::new(
            format!("{field}.start"),
            format!(
                "{} is not before the end of the run ({})",
                f_start, run.duration.0
            ),
        ));
    }
    if stop <= SimTime::ZERO + f_start {
        return Err(ScenarioError::new(
            format!("{field}.stop"),
            "must be after start",
        ));
    }
    let (start, stop) = (SimTime::ZERO + f_start, stop.min(end));
    for i in 0..f.count {
        let inst = Instance {
            gi,
            i,
            field: &field,
            start,
            stop,
        };
        plan_instance(&inst, f, b, routes, flows)?;
    }
    if f_spread > SimDuration::ZERO && f_start + f_spread > run.duration.0 {
        return Err(ScenarioError::new(
            format!("{field}.start_spread"),
            "start + start_spread goes past the end of the run",
        ));
    }
    Ok(())
}

/// One instance `i` of the `[[flow]]` table `gi` (at `field`), active from `start` to
/// `stop`.
struct Instance<'a> {
    gi: usize,
    i: u32,
    field: &'a str,
    start: SimTime,
    stop: SimTime,
}

/// Resolves the hosts of one instance, checks its routes and appends its flow (or, for
/// a composite workload, its sub-flows) to `flows`.
fn plan_instance(
    inst: &Instance<'_>,
    f: &FlowConfig,
    b: &Builder,
    routes: &Routes,
    flows: &mut Vec<PlanFlow>,
) -> Result<(), ScenarioError> {
    let (gi, i, field) = (inst.gi, inst.i, inst.field);
    let from = f.from.replace("{i}", &i.to_string());
    let to = f.to.replace("{i}", &i.to_string());
    let src = b.host(&from, &format!("{field}.from"))?;
    let dst = b.host(&to, &format!("{field}.to"))?;
    if src == dst {
        return Err(ScenarioError::new(
            format!("{field}.to"),
            format!("'{to}' is the same host as `from`"),
        ));
    }
    if !routes.reachable(src, dst, &b.links) {
        return Err(ScenarioError::new(
            format!("{field}.to"),
            format!("no route from '{from}' to '{to}'"),
        ));
    }
    if f.app.needs_reverse_path() && !routes.reachable(dst, src, &b.links) {
        return Err(ScenarioError::new(
            format!("{field}.from"),
            format!("no route back from '{to}' to '{from}' (this kind needs replies)"),
        ));
    }
    let name = match (&f.name, f.count) {
        (Some(n), 1) => n.clone(),
        (Some(n), _) => format!("{n}{i}"),
        (None, 1) => format!("{}{}", f.app.kind_name(), gi),
        (None, _) => format!("{}{}.{}", f.app.kind_name(), gi, i),
    };
    let base_rtt = routes.path_delay(src, dst, &b.links) + routes.path_delay(dst, src, &b.links);
    let flow = |name: String, src, dst, app, dscp| PlanFlow {
        base_rtt,
        name,
        src,
        dst,
        start: inst.start,
        stop: inst.stop,
        app,
        group: gi as u32,
        instance: i,
        dscp,
    };
    let Some(subs) = f.app.expand() else {
        let dscp = f.dscp.unwrap_or(crate::packet::dscp::BE);
        flows.push(flow(name, src, dst, f.app.clone(), dscp));
        return Ok(());
    };
    // A composite (rrul) becomes ordinary flows named `NAME.SUFFIX`.
    for sub in subs {
        let (s, d) = if sub.reversed { (dst, src) } else { (src, dst) };
        let dscp = match (sub.dscp, f.dscp) {
            (Some(_), Some(_)) => {
                return Err(ScenarioError::new(
                    format!("{field}.dscp"),
                    format!(
                        "{} marks its own flows (Flent's classes); \
                         for one class on every flow use rrul_be with dscp",
                        f.app.kind_name()
                    ),
                ))
            }
            (Some(d), None) | (None, Some(d)) => d,
            (None, None) => crate::packet::dscp::BE,
        };
        let name = format!("{name}.{}", sub.suffix);
        flows.push(flow(name, s, d, sub.app, dscp));
    }
    Ok(())
}

/// Every resolved flow has its own name (the result tables and measures name flows).
fn check_flow_names(flows: &[PlanFlow]) -> Result<(), ScenarioError> {
    let mut names: HashMap<&str, usize> = HashMap::new();
    for (i, f) in flows.iter().enumerate() {
        if let Some(j) = names.insert(&f.name, i) {
            return Err(ScenarioError::new(
                format!("flow[{}].name", flows[i].group),
                format!("'{}' is used twice (also by flow instance {j})", f.name),
            ));
        }
    }
    Ok(())
}

/// `run.packet_trace` as `[start, stop)` instants, each window checked.
fn packet_trace_windows(run: &RunConfig) -> Result<Vec<(SimTime, SimTime)>, ScenarioError> {
    let mut windows = Vec::new();
    for (i, [a, b]) in run.packet_trace.iter().enumerate() {
        if b.0 <= a.0 {
            return Err(ScenarioError::new(
                format!("run.packet_trace[{i}]"),
                "a window is [start, stop] with stop after start",
            ));
        }
        windows.push((SimTime::ZERO + a.0, SimTime::ZERO + b.0));
    }
    Ok(windows)
}

/// What the resource model needs of each resolved flow: its load profile, active time
/// and routed paths.
fn flow_loads(plan: &Plan, routes: &Routes) -> Vec<crate::resources::FlowLoad> {
    let folds = |path: &[u32]| {
        path.iter()
            .filter(|&&l| plan.fold_feeders[l as usize] != u32::MAX)
            .count()
    };
    plan.flows
        .iter()
        .map(|f| {
            let profile = f.app.load_profile(&plan.env);
            // a download's data travels from `to` back to `from`
            let (a, b) = if profile.download {
                (f.dst, f.src)
            } else {
                (f.src, f.dst)
            };
            let fwd = routes.path(a, b, &plan.links);
            let rev = if profile.reverse_per_pkt > 0.0 {
                routes.path(b, a, &plan.links)
            } else {
                Vec::new()
            };
            crate::resources::FlowLoad {
                group: f.group,
                active_secs: f.stop.saturating_since(f.start).as_secs_f64(),
                rtt_secs: f.base_rtt.as_secs_f64(),
                tcp: profile.fixed_pps.is_none(),
                profile,
                fwd_folds: folds(&fwd),
                rev_folds: folds(&rev),
                fwd,
                rev,
            }
        })
        .collect()
}
