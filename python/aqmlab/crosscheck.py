"""One scenario on the simulator and on several reference engines (:mod:`aqmlab.engines`),
compared metric by metric: ``aqmlab crosscheck FILE --engines linux,ns3,ns2``.

:func:`compare_engines` takes the simulator's result and each engine's, and returns one
row per (section, entity, metric) with the simulator's value and, per engine, its value,
its ratio to the simulator and a verdict. The rows and criteria are those of
:func:`aqmlab.linux.crosscheck.compare` (utilisation within 2 points; mean sojourn and
induced latency within a relative tolerance) with the tolerance of each engine
(:data:`REL_TOL`: the agreement each engine is expected to reach), plus the drop rate
after the warm-up (same tolerance) and each bulk flow's share of the bulk goodput (shown, not judged).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aqmlab.linux.crosscheck import CLOSE_TOL as KERNEL_CLOSE_TOL
from aqmlab.linux.crosscheck import REL_TOL as KERNEL_REL_TOL
from aqmlab.linux.crosscheck import UTIL_POINTS, Row, compare

__all__ = [
    "Cell",
    "MultiRow",
    "Twin",
    "twin",
    "compare_engines",
    "drop_rate",
    "render",
    "to_json",
    "verdicts",
    "status",
    "figures",
    "REL_TOL",
    "CLOSE_TOL",
    "DROP_FLOOR",
]

#: Relative tolerance of mean sojourn, induced latency and drop rate per engine: the goals
#: for the kernel (±10 %), ns-3 (±15 %, its own TCP against the ``ns3`` stack) and ns-2
#: (±5 %, Sack1 against ``ns2-sack1``, ns-2's RED against ``variant = "ns2"``). A row
#: within the tolerance is ``ok``.
REL_TOL = {"linux": KERNEL_REL_TOL, "ns3": 0.15, "ns2": 0.05}
#: A looser tier, shown apart from the goal: a row outside :data:`REL_TOL` but within this
#: is ``close`` (the kernel: ±25 %), not a pass.
CLOSE_TOL = {"linux": KERNEL_CLOSE_TOL}
#: Drop rates (%) both below this agree whatever their ratio.
DROP_FLOOR = 0.1


@dataclass
class Cell:
    value: float
    diff: str
    verdict: str  # "ok", "close" (within CLOSE_TOL only), "DIFF" or "" (no criterion)
    #: the simulator's value in this engine's twin (:func:`twin`)
    sim: float = math.nan


@dataclass
class Twin:
    """What an engine and the simulator run for one file: ``doc`` (the scenario), the
    simulator's TCP stack profile in it, and each way ``doc`` differs from the file, one
    sentence naming the key."""

    doc: dict[str, Any]
    stack: str
    changes: list[str] = field(default_factory=list)

    def key(self) -> str:
        import json

        return json.dumps(self.doc, sort_keys=True, default=str)


def _qdisc_tables(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    db = doc.get("dumbbell", {})
    out = [(f"dumbbell.{k}", db[k]) for k in ("qdisc", "access_qdisc") if isinstance(db.get(k), dict)]
    out += [
        (f"dumbbell.{d}.qdisc", db[d]["qdisc"])
        for d in ("up", "down")
        if isinstance(db.get(d), dict) and isinstance(db[d].get("qdisc"), dict)
    ]
    return out


def twin(engine: str, scenario: Any) -> Twin:
    """The scenario ``engine`` and its simulator twin run for ``scenario``: the simulator
    with the stack profile that models the engine. The kernel and ns-3 run the file as it
    is (ns-3 takes the file's ``linux`` or ``ns3`` stack). ns-2 runs its own agents and
    RED, which the simulator models as ``stack = "ns2-sack1"`` and RED ``variant = "ns2"``:
    its twin sets those, and leaves to the profile each ``[tcp]`` key of the file that
    ns-2's agents cannot express (named in ``changes``). Per-flow ``tcp`` keys are never
    changed: an engine that cannot express one refuses the file."""
    import copy

    import aqmlab

    sc = aqmlab.load_scenario(scenario)
    doc = sc.to_dict()
    stack = str(doc.get("tcp", {}).get("stack", "linux"))
    if engine != "ns2":
        return Twin(doc, stack)
    from aqmlab.ns2.translate import check

    doc = copy.deepcopy(doc)
    changes: list[str] = []
    tcp = doc.setdefault("tcp", {})
    if any(f.get("kind") == "bulk" for f in doc.get("flow", [])) and stack != "ns2-sack1":
        tcp["stack"] = "ns2-sack1"
        changes.append(f'tcp.stack: {stack!r} → "ns2-sack1" (the simulator\'s model of ns-2\'s agents)')
        stack = "ns2-sack1"
    for path, q in _qdisc_tables(doc):
        if q.get("kind") in ("red", "ared") and q.get("variant") != "ns2":
            changes.append(f'{path}.variant: {q.get("variant", "linux")!r} → "ns2" (ns-2\'s Queue/RED)')
            q["variant"] = "ns2"
    if not tcp:
        del doc["tcp"]
    try:
        plan = aqmlab.load_scenario(doc).validate()
    except aqmlab.ScenarioError:
        return Twin(doc, stack, changes)  # the engine's check names what is wrong
    for msg in check(doc, plan):
        key = msg.partition(":")[0]
        k = key.removeprefix("tcp.")
        if key.startswith("tcp.") and k in tcp and k != "stack":
            changes.append(f"tcp.{k}: {tcp.pop(k)!r} → the ns2-sack1 profile's (ns-2's agents have no such setting)")
    return Twin(doc, stack, changes)


@dataclass
class MultiRow:
    section: str
    entity: str
    metric: str
    sim: float
    engines: dict[str, Cell] = field(default_factory=dict)


def _f(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _ratio(a: float, b: float) -> str:
    if not (math.isfinite(a) and math.isfinite(b)) or a == 0:
        return "–"
    return f"×{b / a:.2f}"


def _warm_drops(r: Any, queue: str) -> float:
    """Drops of ``queue`` after the warm-up, from its per-bin ``drops`` series."""
    s = r.series
    m = s[(s["kind"] == "queue") & (s["entity"] == queue) & (s["metric"] == "drops") & (s["t"] >= r.warmup - 1e-9)]
    return float(m["value"].sum()) if len(m) else math.nan


def drop_rate(r: Any, queue: str) -> float:
    """Percentage of the packets reaching ``queue`` after the warm-up that it dropped:
    drops / (transmissions + drops) after the warm-up (the steady state; the whole-run
    counters include slow start)."""
    row = r.queues.set_index("name").loc[queue]
    d, tx = _warm_drops(r, queue), _f(row["tx_pkts"])
    return 100 * d / (tx + d) if math.isfinite(d) and math.isfinite(tx) and tx + d > 0 else math.nan


def _extra_rows(sim: Any, other: Any, tol: float) -> list[Row]:
    rows: list[Row] = []
    sq, oq = sim.queues.set_index("name"), other.queues.set_index("name")
    for name in sq.index:
        if name not in oq.index:
            continue
        a, b = sq.loc[name], oq.loc[name]
        if max(_f(a["utilization"]), _f(b["utilization"])) < 0.05:
            continue
        ra, rb = drop_rate(sim, name), drop_rate(other, name)
        if math.isfinite(ra) and math.isfinite(rb):
            ok = (ra < DROP_FLOOR and rb < DROP_FLOOR) or abs(rb - ra) <= tol * abs(ra)
            rows.append(Row("queue", name, "drop rate % after warm-up", ra, rb, _ratio(ra, rb), "ok" if ok else "DIFF"))
    sf, of = sim.flows.set_index("name"), other.flows.set_index("name")
    bulk = [n for n in sf.index[sf["kind"] == "bulk"] if n in of.index]
    if 1 < len(bulk) <= 32:
        ta = sum(_f(sf.loc[n, "goodput_bps"]) for n in bulk)
        tb = sum(_f(of.loc[n, "goodput_bps"]) for n in bulk)
        for n in bulk:
            pa = 100 * _f(sf.loc[n, "goodput_bps"]) / ta if ta else math.nan
            pb = 100 * _f(of.loc[n, "goodput_bps"]) / tb if tb else math.nan
            rows.append(Row("flow", n, "share of bulk goodput %", pa, pb, f"{pb - pa:+.2f} pt", ""))
    return rows


def compare_engines(sim: Any, results: dict[str, Any], sims: dict[str, Any] | None = None) -> list[MultiRow]:
    """Rows comparing the simulator with each engine's result (``{engine: Result}``), in
    the order the rows first appear. ``sims`` gives an engine's own simulator twin
    (:func:`twin`); an engine without one is compared with ``sim``. ``MultiRow.sim`` is
    ``sim``'s value, each cell's ``sim`` its twin's."""
    table: dict[tuple[str, str, str], MultiRow] = {}
    for name, r in results.items():
        tol = REL_TOL.get(name, 0.25)
        s = (sims or {}).get(name, sim)
        rows = compare(s, r, rel_tol=tol, util_points=UTIL_POINTS) + _extra_rows(s, r, tol)
        if name in CLOSE_TOL:
            # the same rows judged at the looser tier: DIFF at the goal, ok there → close
            loose = compare(s, r, rel_tol=CLOSE_TOL[name], util_points=UTIL_POINTS) + _extra_rows(s, r, CLOSE_TOL[name])
            for row, lr in zip(rows, loose, strict=True):
                if row.verdict == "DIFF" and lr.verdict == "ok" and row.metric != "utilisation %":
                    row.verdict = "close"
        for row in rows:
            key = (row.section, row.entity, row.metric)
            if key not in table:
                table[key] = MultiRow(row.section, row.entity, row.metric, row.sim if s is sim else math.nan)
            if s is sim:
                table[key].sim = row.sim
            table[key].engines[name] = Cell(row.linux, row.diff, row.verdict, row.sim)
    return list(table.values())


def verdicts(rows: list[MultiRow], engines: list[str]) -> dict[str, bool]:
    """Per engine: True when every row with a criterion agrees at the goal (``ok``)."""
    return {e: all(r.engines[e].verdict in ("ok", "") for r in rows if e in r.engines) for e in engines}


def status(rows: list[MultiRow], engine: str) -> str:
    """``agree`` (every judged row ``ok``), ``close`` (none ``DIFF``, some only within
    :data:`CLOSE_TOL`) or ``differ``."""
    vs = {r.engines[engine].verdict for r in rows if engine in r.engines}
    return "differ" if "DIFF" in vs else "close" if "close" in vs else "agree"


def render(rows: list[MultiRow], engines: list[str], title: str = "", twins: dict[str, str] | None = None) -> Any:
    """A rich table: metric × engine, each engine's value, ratio to the simulator and
    verdict. ``twins`` (engine → the stack its simulator twin ran): when they differ, each
    engine gets its own simulator column, headed by that stack."""
    from rich.table import Table

    def fmt(v: float) -> str:
        return "–" if not math.isfinite(v) else f"{v:.3f}"

    per_engine = twins is not None and len({twins.get(e) for e in engines}) > 1
    t = Table(title=title or None, title_justify="left", show_edge=False, pad_edge=False)
    t.add_column("")
    t.add_column("entity")
    t.add_column("metric")
    if not per_engine:
        t.add_column("sim" if not twins or not engines else f"sim ({twins.get(engines[0])})", justify="right")
    for e in engines:
        if per_engine:
            assert twins is not None
            t.add_column(f"sim ({twins.get(e)})", justify="right")
        t.add_column(e, justify="right")
        t.add_column("diff", justify="right")
        t.add_column("agree")
    for r in rows:
        cells = []
        for e in engines:
            c = r.engines.get(e)
            if per_engine:
                cells.append(fmt(c.sim) if c else "–")
            cells += [fmt(c.value), c.diff, c.verdict] if c else ["–", "", ""]
        t.add_row(r.section, r.entity, r.metric, *([] if per_engine else [fmt(r.sim)]), *cells)
    return t


def _num(v: float) -> float | None:
    return v if math.isfinite(v) else None


def to_json(rows: list[MultiRow]) -> list[dict[str, Any]]:
    return [
        {"section": r.section, "entity": r.entity, "metric": r.metric, "sim": _num(r.sim),
         "engines": {e: {"value": _num(c.value), "sim": _num(c.sim), "diff": c.diff, "verdict": c.verdict} for e, c in r.engines.items()}}
        for r in rows
    ]


# ---------------------------------------------------------------------------------------
# figures


def busiest_queue(sim: Any) -> str | None:
    q = sim.queues
    if q.empty:
        return None
    return str(q.loc[q["utilization"].astype(float).idxmax(), "name"])


def sojourn_samples(r: Any, queue: str) -> tuple[Any, str]:
    """Per-packet sojourn samples after the warm-up (s) of ``queue``, or, for an engine
    without them (the kernel), its per-bin sojourn series; and a label suffix."""
    s = r.samples
    m = s[(s["kind"] == "queue") & (s["entity"] == queue) & (s["metric"] == "sojourn") & (s["t"] >= r.warmup - 1e-9)]
    if len(m):
        return m["value"].to_numpy(), "per packet"
    se = r.series
    m = se[(se["kind"] == "queue") & (se["entity"] == queue) & (se["metric"] == "sojourn_mean") & (se["t"] >= r.warmup - 1e-9)]
    return m["value"].dropna().to_numpy(), "per-bin means"


def figures(
    sim: Any, results: dict[str, Any], out: str | Path, title: str = "", *, sim_label: str = "sim", twins: dict[str, Any] | None = None
) -> list[Path]:
    """``sojourn_cdf.png``: the sojourn CDF of the busiest queue on every engine;
    ``goodput.png``: the goodput of all flows summed, per bin, on every engine; each
    other simulator twin (``twins``: label → result) drawn beside ``sim`` (``sim_label``).
    Returns the files written."""
    import numpy as np
    from matplotlib.figure import Figure

    title = title or sim.name or "scenario"
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    all_r = {sim_label: sim, **(twins or {}), **results}
    q = busiest_queue(sim)
    if q is not None:
        fig = Figure(figsize=(7, 4.5), layout="constrained")
        ax = fig.add_subplot()
        for name, r in all_r.items():
            x, how = sojourn_samples(r, q)
            if len(x) == 0:
                continue
            xs = np.sort(x) * 1e3
            ax.step(xs, np.arange(1, len(xs) + 1) / len(xs), where="post", label=f"{name} ({how}, n={len(xs)})")
        ax.set_xlabel("sojourn (ms)")
        ax.set_ylabel("fraction of packets ≤ x")
        ax.set_ylim(0, 1.02)
        ax.set_title(f"{title}: sojourn CDF of {q} after the {sim.warmup:g} s warm-up", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
        p = out / "sojourn_cdf.png"
        fig.savefig(p, dpi=120)
        written.append(p)
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.add_subplot()
    for name, r in all_r.items():
        se = r.series
        m = se[(se["kind"] == "flow") & (se["metric"] == "goodput_bps")]
        if m.empty:
            continue
        tot = m.groupby("t")["value"].sum(min_count=1)
        ax.plot(tot.index.to_numpy() + r.bin / 2, tot.to_numpy() / 1e6, label=name, lw=1.2)
    ax.axvline(sim.warmup, color="grey", ls=":", lw=1, label="end of warm-up")
    ax.set_xlabel("time (s)")
    ax.set_ylabel(f"goodput of all flows (Mbit/s, {sim.bin * 1e3:g} ms bins)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{title}: goodput", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    p = out / "goodput.png"
    fig.savefig(p, dpi=120)
    written.append(p)
    return written
