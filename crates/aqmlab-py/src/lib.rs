//! `aqmlab._core`: the thin Python binding of `aqmlab-core`.
//!
//! Contract:
//! - Input is scenario TOML text (the Python package turns paths and dicts into text), so
//!   the file format is the only API between the two languages.
//! - The simulation runs with the GIL released, in slices of 1 % of simulated time; between
//!   slices the binding checks for Ctrl-C and calls the optional progress callback.
//!   Slicing does not change results: `run_until` processes the same events in the same
//!   order whatever the slice boundaries.
//! - Results come back as a dict of columns: small per-flow/per-queue tables as lists, the
//!   long tables (series, samples, histogram buckets) as NumPy arrays that take ownership
//!   of the Rust vectors (no copy, no per-row Python objects).
//! - Errors: bad input raises `aqmlab.ScenarioError(field, message)`; a Rust panic is
//!   caught and raised as `aqmlab.SimulationError` (it never aborts the interpreter).
//!   The exception classes live in `aqmlab/errors.py` so that they have Python
//!   constructors and pickle across process pools.

use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

use aqmlab_core::metrics::LongTable;
use aqmlab_core::qdisc::{DropReason, MarkReason};
use aqmlab_core::resources::Budget;
use aqmlab_core::result::{
    Cell, ColType, Column, RunResult, FLOW_COLUMNS, QUEUE_COLUMNS, QUEUE_TAIL_COLUMNS,
};
use aqmlab_core::scenario::{NodeKind, Plan};
use aqmlab_core::{Scenario, ScenarioError, SimTime, Simulator};
use numpy::PyArray1;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// The simulator's heap on transparent huge pages (`aqmlab_core::hugealloc`); serves the
/// extension's Rust allocations (Python objects keep the interpreter's allocator).
#[global_allocator]
static ALLOC: aqmlab_core::hugealloc::HugePageAlloc = aqmlab_core::hugealloc::HugePageAlloc;

/// Number of slices a run is cut into for Ctrl-C checks and progress reports.
const SLICES: u64 = 100;

// ---------------------------------------------------------------------------------------
// Errors

fn error_class<'py>(py: Python<'py>, name: &str) -> Option<Bound<'py, PyAny>> {
    py.import("aqmlab.errors")
        .and_then(|m| m.getattr(name))
        .ok()
}

/// `aqmlab.ScenarioError(field, message)`; a plain `ValueError` if the Python package is
/// not importable (the extension used on its own).
fn scenario_err(py: Python<'_>, e: &ScenarioError) -> PyErr {
    match error_class(py, "ScenarioError")
        .and_then(|c| c.call1((e.field.as_str(), e.message.as_str())).ok())
    {
        Some(obj) => PyErr::from_value(obj),
        None => PyValueError::new_err(e.to_string()),
    }
}

fn simulation_err(py: Python<'_>, message: String) -> PyErr {
    match error_class(py, "SimulationError").and_then(|c| c.call1((message.as_str(),)).ok()) {
        Some(obj) => PyErr::from_value(obj),
        None => PyRuntimeError::new_err(message),
    }
}

thread_local! {
    /// Set while this thread runs simulator code under [`guarded`]; the panic hook then
    /// records the panic here instead of printing it.
    static GUARD: RefCell<Option<Option<String>>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Installs (once) a panic hook that, inside [`guarded`], captures the message and
/// location for the `SimulationError` instead of printing to stderr; elsewhere in the
/// process it defers to the previous hook.
fn install_panic_hook() {
    HOOK.call_once(|| {
        let prev = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let captured = GUARD.with(|g| {
                let mut g = g.borrow_mut();
                match g.as_mut() {
                    Some(slot) => {
                        let loc = info
                            .location()
                            .map(|l| format!(" at {}:{}", l.file(), l.line()))
                            .unwrap_or_default();
                        *slot = Some(format!("{}{loc}", payload_text(info.payload())));
                        true
                    }
                    None => false,
                }
            });
            if !captured {
                prev(info);
            }
        }));
    });
}

fn payload_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-text payload".to_string()
    }
}

/// Runs `f`, turning a panic into `Err(message)`.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install_panic_hook();
    GUARD.with(|g| *g.borrow_mut() = Some(None));
    let r = panic::catch_unwind(AssertUnwindSafe(f));
    let msg = GUARD.with(|g| g.borrow_mut().take()).flatten();
    r.map_err(|p| {
        let what = msg.unwrap_or_else(|| payload_text(p.as_ref()));
        format!("internal error in the simulator (a bug; please report it with the scenario and seed): {what}")
    })
}

// ---------------------------------------------------------------------------------------
// Functions

/// Parses, validates and runs a scenario; returns the results as a dict of columns.
/// `force` lifts the resource budget (`aqmlab_core::resources`).
#[pyfunction]
#[pyo3(signature = (toml_text, seed=None, progress=None, force=false))]
fn run(
    py: Python<'_>,
    toml_text: &str,
    seed: Option<u64>,
    progress: Option<PyObject>,
    force: bool,
) -> PyResult<PyObject> {
    let text = toml_text.to_owned();
    let built = py.allow_threads(move || {
        guarded(move || -> Result<Simulator, ScenarioError> {
            let sc = Scenario::from_toml_str(&text)?;
            let seed = seed.unwrap_or(sc.run.seed);
            let budget = if force {
                Budget::UNLIMITED
            } else {
                sc.budget()
            };
            let mut plan = sc.validate_with(&budget)?;
            sc.spread_starts(&mut plan, seed);
            Ok(Simulator::from_plan(plan, seed))
        })
    });
    let mut sim = match built {
        Ok(Ok(sim)) => sim,
        Ok(Err(e)) => return Err(scenario_err(py, &e)),
        Err(msg) => return Err(simulation_err(py, msg)),
    };
    let end = sim.end.as_nanos() as u128;
    for k in 1..=SLICES {
        let t = SimTime::from_nanos((end * k as u128 / SLICES as u128) as u64);
        let sim_ref = &mut sim;
        py.allow_threads(move || guarded(move || sim_ref.run_until(t)))
            .map_err(|m| simulation_err(py, m))?;
        py.check_signals()?;
        if let Some(cb) = &progress {
            cb.call1(py, (k as f64 / SLICES as f64,))?;
        }
    }
    let res = py
        .allow_threads(|| guarded(|| sim.results()))
        .map_err(|m| simulation_err(py, m))?;
    result_to_dict(py, res)
}

/// Parses and validates a scenario without running it; returns the resolved topology
/// and flows (names, rates in bit/s, times in seconds).
/// `force` lifts the resource budget. With `spread`, the flows' start times are the ones a
/// run with `seed` (default `run.seed`, as `run` takes it) uses: `start_spread` draws and
/// start jitter; without, the nominal starts. `flow_rows` caps the rows of `flows` (a
/// scenario of a million flow instances would otherwise become a million dicts, ~1.5 GB);
/// `flows_total` always counts them all.
#[pyfunction]
#[pyo3(signature = (toml_text, force=false, seed=None, spread=false, flow_rows=None))]
fn validate(
    py: Python<'_>,
    toml_text: &str,
    force: bool,
    seed: Option<u64>,
    spread: bool,
    flow_rows: Option<usize>,
) -> PyResult<PyObject> {
    let text = toml_text.to_owned();
    let r = py
        .allow_threads(move || {
            guarded(move || -> Result<(Scenario, Plan), ScenarioError> {
                let sc = Scenario::from_toml_str(&text)?;
                let budget = if force {
                    Budget::UNLIMITED
                } else {
                    sc.budget()
                };
                let mut plan = sc.validate_with(&budget)?;
                if spread {
                    sc.spread_starts(&mut plan, seed.unwrap_or(sc.run.seed));
                }
                Ok((sc, plan))
            })
        })
        .map_err(|m| simulation_err(py, m))?;
    let (sc, plan) = r.map_err(|e| scenario_err(py, &e))?;
    plan_to_dict(py, &sc, &plan, flow_rows.unwrap_or(usize::MAX))
}

/// `[(name, description)]` of every queue discipline.
#[pyfunction]
fn list_qdiscs() -> Vec<(&'static str, &'static str)> {
    aqmlab_core::qdisc::QDISC_KINDS.to_vec()
}

/// `[(name, description)]` of every workload (`[[flow]]` kind).
#[pyfunction]
fn list_workloads() -> Vec<(&'static str, &'static str)> {
    aqmlab_core::app::WORKLOAD_KINDS.to_vec()
}

/// `[(name, description)]` of every TCP congestion control.
#[pyfunction]
fn list_cc() -> Vec<(&'static str, &'static str)> {
    aqmlab_core::tcp::CC_KINDS.to_vec()
}

/// `[(name, description)]` of the topology and link-model tables (`aqmlab list links`).
#[pyfunction]
fn list_links() -> Vec<(&'static str, &'static str)> {
    aqmlab_core::describe::LINK_KINDS.to_vec()
}

/// Documentation of a qdisc, workload, congestion-control, link-model kind or `tcp`
/// (`aqmlab_core::describe`): `{"kind", "category", "about", "params": [{"name",
/// "default", "doc"}]}` plus `"profiles"` for `tcp`.
#[pyfunction]
fn describe(py: Python<'_>, kind: &str) -> PyResult<PyObject> {
    let desc = aqmlab_core::describe::describe(kind).map_err(|e| scenario_err(py, &e))?;
    let d = PyDict::new(py);
    d.set_item("kind", desc.kind)?;
    d.set_item("category", desc.category)?;
    d.set_item("about", desc.about)?;
    let ps = PyList::empty(py);
    for p in desc.params {
        let pd = PyDict::new(py);
        pd.set_item("name", p.name)?;
        pd.set_item("default", p.default)?;
        pd.set_item("doc", p.doc)?;
        ps.append(pd)?;
    }
    d.set_item("params", ps)?;
    if !desc.profiles.is_empty() {
        d.set_item("profiles", desc.profiles.to_vec())?;
    }
    Ok(d.into_any().unbind())
}

/// The simulator core's version.
#[pyfunction]
fn version() -> &'static str {
    aqmlab_core::VERSION
}

/// Panics inside the guard; lets the Python tests check that a panic becomes
/// `SimulationError` and leaves the interpreter running.
#[pyfunction]
fn _debug_panic(py: Python<'_>, message: &str) -> PyResult<()> {
    let m = message.to_owned();
    py.allow_threads(move || guarded(move || panic!("{m}")))
        .map_err(|e| simulation_err(py, e))
}

// ---------------------------------------------------------------------------------------
// Conversion

fn long_table<'py>(py: Python<'py>, t: LongTable) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("kind", PyArray1::from_vec(py, t.kind))?;
    d.set_item("entity", PyArray1::from_vec(py, t.entity))?;
    d.set_item("metric", PyArray1::from_vec(py, t.metric))?;
    d.set_item("t", PyArray1::from_vec(py, t.t))?;
    d.set_item("value", PyArray1::from_vec(py, t.value))?;
    Ok(d)
}

/// Sets one list per declared column (`aqmlab_core::result`), in declaration order.
fn set_columns<R>(d: &Bound<'_, PyDict>, rows: &[R], cols: &[Column<R>]) -> PyResult<()> {
    for c in cols {
        let cells = rows.iter().map(|r| (c.get)(r));
        match c.ty {
            ColType::Int => d.set_item(
                c.name,
                cells
                    .map(|x| match x {
                        Cell::Int(v) => v,
                        _ => unreachable!("column {} is declared int", c.name),
                    })
                    .collect::<Vec<u64>>(),
            )?,
            ColType::Float => d.set_item(
                c.name,
                cells
                    .map(|x| match x {
                        Cell::Float(v) => v,
                        _ => unreachable!("column {} is declared float", c.name),
                    })
                    .collect::<Vec<f64>>(),
            )?,
            ColType::Str => d.set_item(
                c.name,
                cells
                    .map(|x| match x {
                        Cell::Str(v) => v.to_string(),
                        Cell::Text(v) => v,
                        _ => unreachable!("column {} is declared str", c.name),
                    })
                    .collect::<Vec<String>>(),
            )?,
        }
    }
    Ok(())
}

/// The declared result schema: `result` keys with Python types, and the fixed columns of
/// `flows`, `queues` (and the queue columns after the reason columns) as
/// `(name, type, doc)`; `drop_reasons` / `mark_reasons` name the `drops_*` / `marks_*`
/// columns.
#[pyfunction]
fn result_schema(py: Python<'_>) -> PyResult<PyObject> {
    fn cols<R>(c: &[Column<R>]) -> Vec<(&'static str, &'static str, &'static str)> {
        c.iter().map(|c| (c.name, c.ty.python(), c.doc)).collect()
    }
    let d = PyDict::new(py);
    d.set_item("result", aqmlab_core::result::RESULT_KEYS.to_vec())?;
    d.set_item("flows", cols(FLOW_COLUMNS))?;
    d.set_item("queues", cols(QUEUE_COLUMNS))?;
    d.set_item("queues_tail", cols(QUEUE_TAIL_COLUMNS))?;
    d.set_item(
        "drop_reasons",
        DropReason::ALL.iter().map(|r| r.name()).collect::<Vec<_>>(),
    )?;
    d.set_item(
        "mark_reasons",
        MarkReason::ALL.iter().map(|r| r.name()).collect::<Vec<_>>(),
    )?;
    Ok(d.into_any().unbind())
}

fn result_to_dict(py: Python<'_>, r: RunResult) -> PyResult<PyObject> {
    let d = PyDict::new(py);
    d.set_item("version", aqmlab_core::VERSION)?;
    d.set_item("seed", r.seed)?;
    d.set_item("duration", r.duration)?;
    d.set_item("warmup", r.warmup)?;
    d.set_item("bin", r.bin)?;

    // flows: fixed columns, then the kind-specific extras (NaN where a row lacks one).
    let f = PyDict::new(py);
    let rows = &r.flows;
    set_columns(&f, rows, FLOW_COLUMNS)?;
    let mut extra_keys: Vec<&str> = Vec::new();
    for row in rows {
        for (k, _) in &row.extra {
            if !extra_keys.contains(k) {
                extra_keys.push(k);
            }
        }
    }
    for k in &extra_keys {
        let v: Vec<f64> = rows
            .iter()
            .map(|x| {
                x.extra
                    .iter()
                    .find(|(n, _)| n == k)
                    .map(|(_, v)| *v)
                    .unwrap_or(f64::NAN)
            })
            .collect();
        f.set_item(*k, v)?;
    }
    d.set_item("flows", f)?;

    // queues: fixed columns, one column per drop/mark reason, histogram as a long table.
    let q = PyDict::new(py);
    let rows = &r.queues;
    set_columns(&q, rows, QUEUE_COLUMNS)?;
    for reason in DropReason::ALL {
        let v: Vec<u64> = rows
            .iter()
            .map(|x| {
                x.drops_by_reason
                    .iter()
                    .find(|(n, _)| *n == reason.name())
                    .map_or(0, |(_, c)| *c)
            })
            .collect();
        q.set_item(format!("drops_{}", reason.name()), v)?;
    }
    for reason in MarkReason::ALL {
        let v: Vec<u64> = rows
            .iter()
            .map(|x| {
                x.marks_by_reason
                    .iter()
                    .find(|(n, _)| *n == reason.name())
                    .map_or(0, |(_, c)| *c)
            })
            .collect();
        q.set_item(format!("marks_{}", reason.name()), v)?;
    }
    set_columns(&q, rows, QUEUE_TAIL_COLUMNS)?;
    // the lower layer's summary metrics, one column per metric (NaN where a queue's
    // lower layer has no such metric)
    let mut lower_keys: Vec<&str> = Vec::new();
    for row in rows {
        for (k, _) in &row.lower_extra {
            if !lower_keys.contains(k) {
                lower_keys.push(k);
            }
        }
    }
    for k in &lower_keys {
        let v: Vec<f64> = rows
            .iter()
            .map(|x| x.lower_metric(k).unwrap_or(f64::NAN))
            .collect();
        q.set_item(*k, v)?;
    }
    d.set_item("queues", q)?;

    let (mut hq, mut hl, mut hh, mut hc) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for row in rows {
        for i in 0..row.hist_count.len() {
            hq.push(row.id);
            hl.push(row.hist_low[i]);
            hh.push(row.hist_high[i]);
            hc.push(row.hist_count[i]);
        }
    }
    let h = PyDict::new(py);
    h.set_item("queue", PyArray1::from_vec(py, hq))?;
    h.set_item("low", PyArray1::from_vec(py, hl))?;
    h.set_item("high", PyArray1::from_vec(py, hh))?;
    h.set_item("count", PyArray1::from_vec(py, hc))?;
    d.set_item("sojourn_hist", h)?;

    d.set_item("series", long_table(py, r.series)?)?;
    d.set_item("samples", long_table(py, r.samples)?)?;
    d.set_item("metric_names", r.metric_names)?;
    d.set_item("events", r.events)?;
    d.set_item("packets_created", r.packets_created)?;
    d.set_item("packets_delivered", r.packets_delivered)?;
    d.set_item("packets_dropped", r.packets_dropped)?;
    d.set_item("wall_seconds", r.wall_seconds)?;
    d.set_item("warnings", r.warnings)?;
    Ok(d.into_any().unbind())
}

fn plan_to_dict(
    py: Python<'_>,
    sc: &Scenario,
    plan: &Plan,
    flow_rows: usize,
) -> PyResult<PyObject> {
    let d = PyDict::new(py);
    d.set_item("name", sc.run.name.as_deref())?;
    d.set_item("description", sc.run.description.as_deref())?;
    d.set_item("duration", plan.duration.as_secs_f64())?;
    d.set_item("warmup", plan.warmup.as_secs_f64())?;
    d.set_item("bin", plan.bin.as_secs_f64())?;
    d.set_item("seed", sc.run.seed)?;
    d.set_item("trace", sc.run.trace)?;
    let est = PyDict::new(py);
    est.set_item("events", plan.estimate.events)?;
    est.set_item("memory_bytes", plan.estimate.memory)?;
    est.set_item("bins", plan.estimate.bins)?;
    let parts = PyDict::new(py);
    for (k, v) in &plan.estimate.parts {
        parts.set_item(*k, *v)?;
    }
    est.set_item("memory_parts", parts)?;
    d.set_item("estimate", est)?;
    let node = |i: u32| plan.nodes[i as usize].name.as_str();

    let nodes = PyList::empty(py);
    for n in &plan.nodes {
        let nd = PyDict::new(py);
        nd.set_item("name", n.name.as_str())?;
        nd.set_item(
            "kind",
            if n.kind == NodeKind::Host {
                "host"
            } else {
                "router"
            },
        )?;
        nodes.append(nd)?;
    }
    d.set_item("nodes", nodes)?;

    let links = PyList::empty(py);
    for (p, qd) in &plan.links {
        let ld = PyDict::new(py);
        ld.set_item("name", p.name.as_str())?;
        ld.set_item("from", node(p.from))?;
        ld.set_item("to", node(p.to))?;
        ld.set_item("rate_bps", p.rate.bps())?;
        ld.set_item("delay", p.delay.as_secs_f64())?;
        ld.set_item("qdisc", qd.kind_name())?;
        ld.set_item("overhead", p.overhead)?;
        ld.set_item("mtu", p.mtu)?;
        ld.set_item("device_queue", p.device_queue)?;
        ld.set_item("loss", p.loss)?;
        ld.set_item("trace", p.trace)?;
        ld.set_item("lower", p.lower.kind_name())?;
        ld.set_item(
            "peers",
            p.peers.iter().map(|&n| node(n)).collect::<Vec<_>>(),
        )?;
        links.append(ld)?;
    }
    d.set_item("links", links)?;

    let flows = PyList::empty(py);
    for f in plan.flows.iter().take(flow_rows) {
        let fd = PyDict::new(py);
        fd.set_item("name", f.name.as_str())?;
        fd.set_item("kind", f.app.kind_name())?;
        fd.set_item("group", f.group)?;
        fd.set_item("src", node(f.src))?;
        fd.set_item("dst", node(f.dst))?;
        fd.set_item("start", f.start.as_secs_f64())?;
        fd.set_item("stop", f.stop.as_secs_f64())?;
        fd.set_item("dscp", f.dscp)?;
        flows.append(fd)?;
    }
    d.set_item("flows", flows)?;
    d.set_item("flows_total", plan.flows.len())?;
    d.set_item(
        "warnings",
        plan.warnings
            .iter()
            .map(|w| format!("{}: {}", w.field, w.message))
            .collect::<Vec<_>>(),
    )?;
    Ok(d.into_any().unbind())
}

/// The `aqmlab._core` extension module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(list_qdiscs, m)?)?;
    m.add_function(wrap_pyfunction!(list_workloads, m)?)?;
    m.add_function(wrap_pyfunction!(list_cc, m)?)?;
    m.add_function(wrap_pyfunction!(list_links, m)?)?;
    m.add_function(wrap_pyfunction!(describe, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(result_schema, m)?)?;
    m.add_function(wrap_pyfunction!(_debug_panic, m)?)?;
    m.add("__version__", aqmlab_core::VERSION)?;
    Ok(())
}
