"""Side-by-side comparison of the simulator and the Linux engine on one scenario.

:func:`compare` takes the two :class:`aqmlab.Result` objects and returns rows
``(section, entity, metric, sim, linux, diff, verdict)``. The agreement criteria are the
ones of issue #19: utilisation within 2 points, mean sojourn and induced latency (probe
RTT above the base RTT) within ±25 %. Other rows are shown without a verdict.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from aqmlab.result import link_utilization

__all__ = ["Row", "compare", "render", "run_sim", "with_kernel_starts", "kernel_start_rows", "UTIL_POINTS", "REL_TOL", "CLOSE_TOL"]

#: Utilisation must agree within this many percentage points.
UTIL_POINTS = 2.0
#: Mean sojourn and induced latency agree (``ok``) within this relative difference: the
#: goal for the kernel.
REL_TOL = 0.10
#: The looser tier: outside :data:`REL_TOL` but within this is ``close``, not a pass.
CLOSE_TOL = 0.25
#: Queues whose utilisation is below this in both engines are left out (idle access links).
MIN_UTIL = 0.05


@dataclass
class Row:
    section: str
    entity: str
    metric: str
    sim: float
    linux: float
    diff: str
    verdict: str  # "ok", "close", "DIFF" or "" (no criterion)


def _f(v: Any) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return math.nan
    return x


def _ratio(a: float, b: float) -> str:
    if not (math.isfinite(a) and math.isfinite(b)) or a == 0:
        return "–"
    return f"×{b / a:.2f}"


def _rel_verdict(a: float, b: float, floor: float, tol: float = REL_TOL, close: float | None = None) -> str:
    """``ok`` within ±``tol`` or both below ``floor`` (too small to compare relatively);
    ``close`` within ±``close`` only; else ``DIFF``."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return ""
    if abs(a) < floor and abs(b) < floor:
        return "ok"
    if abs(b - a) <= tol * abs(a):
        return "ok"
    return "close" if close is not None and abs(b - a) <= close * abs(a) else "DIFF"


def run_sim(scenario: Any, seed: int | None = None):
    """The simulator's side of a cross-check: the scenario with a per-packet trace of its
    measured queues after the warm-up (``run.packet_trace``; a scenario's own windows are
    kept), so that :func:`compare` can take the mean sojourn over the same packets as the
    kernel's estimate (see :func:`departed_sojourn_mean`). The trace only logs: the
    results are those of the scenario as it is."""
    import aqmlab

    sc = aqmlab.load_scenario(scenario)
    d = sc.to_dict()
    run = d.setdefault("run", {})
    if not run.get("packet_trace"):
        plan = sc.validate()
        run["packet_trace"] = [[f"{plan['warmup']!r}s", f"{plan['duration']!r}s"]]
    return aqmlab.run(d, seed=seed)


#: [[flow]] keys a scenario may use for :func:`with_kernel_starts` to rewrite its flows
#: (anything else — a per-flow cc, dscp, byte count — would be lost in the rewrite)
_PLAIN_FLOW_KEYS = {"kind", "count", "from", "to", "name", "start", "start_spread", "stop"}


def with_kernel_starts(scenario: Any, seed: int | None, lags: dict[str, float]) -> dict | None:
    """The scenario with each flow starting when its test began on the kernel (the
    simulator's drawn start plus the engine's measured ``start_lag``), as a document for
    :func:`run_sim`; None when a flow is not a plain timed bulk flow or has no lag. The
    kernel's iperf3 needs its control messages and two handshakes through the bottleneck
    before data flows, and on a congested one that can take seconds
    (docs/linux-engine.md): comparing start-ups then needs the simulator to start its
    flows at the same instants."""
    import aqmlab

    sc = aqmlab.load_scenario(scenario)
    d = sc.to_dict()
    flows = d.get("flow") or []
    if not flows or any(f.get("kind") != "bulk" or set(f) - _PLAIN_FLOW_KEYS for f in flows):
        return None
    plan = sc.validate(seed=seed, spread=True)
    if any(f["name"] not in lags for f in plan["flows"]):
        return None
    d["flow"] = [
        {
            "kind": "bulk",
            "name": f["name"],
            "from": f["src"],
            "to": f["dst"],
            "start": f"{f['start'] + lags[f['name']]:.9f}s",
            "stop": f"{f['stop']:.9f}s",
        }
        for f in plan["flows"]
    ]
    return d


#: rows worth repeating with the simulator at the kernel's start times (whole-run counts
#: and queue statistics that a start-up can move)
KERNEL_START_METRICS = (
    "sojourn mean ms",
    "drops after warm-up /s",
    "dropped (whole run)",
    "retransmitted segments (whole run)",
    "fast recoveries (whole run)",
    "lost retransmissions (whole run)",
)


def kernel_start_rows(sim_at_kernel_starts, lin) -> list[Row]:
    """The rows of :data:`KERNEL_START_METRICS` for the simulator run at the kernel's
    start times, labelled so (no criterion: they explain, they do not judge)."""
    out = []
    for r in compare(sim_at_kernel_starts, lin, close_tol=CLOSE_TOL):
        if r.metric in KERNEL_START_METRICS and (r.section == "queue" or r.entity.startswith("all ")):
            out.append(Row(r.section, r.entity, f"{r.metric}, sim at the kernel's starts", r.sim, r.linux, r.diff, ""))
    return out


#: Qdiscs whose drops the Linux engine's Little's-law estimate counts as departures (they
#: drop packets that waited: at the head, or from the head of the fattest flow); ``codel``
#: counts its control-law drops, not the ones refused at its limit.
HEAD_DROP_QDISCS = ("codel", "fq_codel", "sfq", "cake")


def departed_sojourn_mean(sim, queue: str) -> float:
    """The simulator's mean sojourn over the packets the Linux engine's estimate covers:
    the transmitted ones plus, for :data:`HEAD_DROP_QDISCS`, the dropped ones with the time
    they waited (a refused arrival waited 0 and, under CoDel, is not a head drop), from the
    per-packet trace after the warm-up (:func:`run_sim`); NaN without one.

    Little's law in packets (the kernel side, docs/linux-engine.md) gives the mean over
    every packet that leaves the queue. In a FIFO a head-dropped packet has waited as long
    as the packets sent around it, so this equals the mean over transmitted packets (the
    simulator's ``sojourn_mean``); under flow queueing the drops come from the flows with
    the longest queues and wait longer (cake with 1 + 8 flows: ~13.5 ms against ~6 ms), and
    the two means differ."""
    s = sim.samples
    q = s[(s["kind"] == "queue") & (s["entity"] == queue)]
    soj = q.loc[q["metric"] == "sojourn", "value"].to_numpy()
    if len(soj) == 0:
        return math.nan
    drops = q.loc[q["metric"] == "drop", "value"].to_numpy()
    kinds = sim.queues.set_index("name")["qdisc"]
    kind = str(kinds.get(queue, ""))
    if kind == "codel":
        drops = drops[drops > 0]
    elif kind not in HEAD_DROP_QDISCS:
        drops = drops[:0]
    return float((soj.sum() + drops.sum()) / (len(soj) + len(drops)))


def compare(sim, lin, *, rel_tol: float = REL_TOL, util_points: float = UTIL_POINTS, close_tol: float | None = None) -> list[Row]:
    """Rows comparing the simulator's result ``sim`` with the Linux engine's ``lin`` (or
    another engine's result: the ``linux`` field is then that engine's value). The
    criteria: utilisation within ``util_points`` percentage points, mean sojourn and
    induced latency within ±``rel_tol`` (``ok``; within ±``close_tol`` only: ``close``)."""
    rows: list[Row] = []
    sq, lq = sim.queues.set_index("name"), lin.queues.set_index("name")
    for name in sq.index:
        if name not in lq.index:
            continue
        a, b = sq.loc[name], lq.loc[name]
        # of the shaper's rate on a shaped link (htb/tbf), as the simulator's tables show it
        ua, ub = link_utilization(a), link_utilization(b)
        if not (ua >= MIN_UTIL or ub >= MIN_UTIL):
            continue
        d = (ub - ua) * 100
        rows.append(Row("queue", name, "utilisation %", ua * 100, ub * 100, f"{d:+.2f} pt", "ok" if abs(d) <= util_points else "DIFF"))
        for m, label, crit in (("sojourn_mean", "sojourn mean ms", True), ("sojourn_p99", "sojourn p99 ms", False)):
            sa, sb = _f(a[m]) * 1e3, _f(b[m]) * 1e3
            if m == "sojourn_mean":
                # the same packets on both sides: transmitted + dropped after waiting, as
                # the kernel's Little's-law estimate counts them (departed_sojourn_mean)
                dep = departed_sojourn_mean(sim, name) * 1e3
                sa = dep if math.isfinite(dep) else sa
            rows.append(Row("queue", name, label, sa, sb, _ratio(sa, sb), _rel_verdict(sa, sb, 1.0, rel_tol, close_tol) if crit else ""))
        # CoDel queues: the kernel's own last-packet sojourn (ldelay) sampled every bin, a
        # second estimate of the mean sojourn beside the backlog-based one (no criterion),
        # against the simulator's mean over transmitted packets
        ld = (getattr(lin, "engine_info", None) or {}).get("ldelay", {}).get(name)
        if ld and ld.get("n", 0) > 0:
            sa, sb = _f(a["sojourn_mean"]) * 1e3, _f(ld.get("mean")) * 1e3
            rows.append(Row("queue", name, "sojourn mean ms (kernel ldelay)", sa, sb, _ratio(sa, sb), ""))
        # steady state: drops per second after the warm-up, from the per-bin series
        da, db = _warm_drops(sim, name), _warm_drops(lin, name)
        if math.isfinite(da) or math.isfinite(db):
            rows.append(Row("queue", name, "drops after warm-up /s", da, db, _ratio(da, db), ""))
        # the qdisc counters cover the whole run (slow start included), in both engines
        # sch_red's `early` counter is its probabilistic plus its forced drops
        # (red_dump_stats); the simulator counts the two apart, so they are compared summed
        red_sum = str(a.get("qdisc", "")) in ("red", "ared") and not math.isfinite(_f(b.get("drops_forced")))
        for col in [c for c in sq.columns if c.startswith(("drops_", "marks_"))] + ["dropped", "marked"]:
            if red_sum and col == "drops_forced":
                continue
            va, vb = _f(a.get(col)), _f(b.get(col))
            if red_sum and col == "drops_early":
                va += _f(a.get("drops_forced"))
                rows.append(Row("queue", name, "drops early + forced (whole run)", va, vb, _ratio(va, vb), ""))
                continue
            # nothing to compare: zero in both, or zero here and a counter the kernel lacks
            if not (va if math.isfinite(va) else 0) and not (vb if math.isfinite(vb) else 0):
                continue
            label = col.replace("_", " ") + " (whole run)"
            rows.append(Row("queue", name, label, va, vb, _ratio(va, vb), ""))
        # cake's tins (both engines count them after the warm-up): each tin's share of the
        # bytes sent, in points, and its drops; what DSCP marks decide
        tins = [c[: -len("_sent_bytes")] for c in sq.columns if c.startswith("tin") and c.endswith("_sent_bytes") and c in lq.columns]
        tot_a = sum(v for v in (_f(a.get(f"{n}_sent_bytes")) for n in tins) if math.isfinite(v))
        tot_b = sum(v for v in (_f(b.get(f"{n}_sent_bytes")) for n in tins) if math.isfinite(v))
        for n in tins:
            va, vb = _f(a.get(f"{n}_sent_bytes")), _f(b.get(f"{n}_sent_bytes"))
            if not (va > 0 or vb > 0):
                continue
            pa = va / tot_a * 100 if tot_a > 0 else math.nan
            pb = vb / tot_b * 100 if tot_b > 0 else math.nan
            rows.append(Row("queue", name, f"{n} share of bytes sent %", pa, pb, f"{pb - pa:+.2f} pt", ""))
            da, db = _f(a.get(f"{n}_drops")), _f(b.get(f"{n}_drops"))
            if (da if math.isfinite(da) else 0) or (db if math.isfinite(db) else 0):
                rows.append(Row("queue", name, f"{n} drops (after warm-up)", da, db, _ratio(da, db), ""))
    sf, lf = sim.flows.set_index("name"), lin.flows.set_index("name")
    for name in sf.index:
        if name not in lf.index:
            continue
        a, b = sf.loc[name], lf.loc[name]
        if a["kind"] in ("bulk", "cbr"):
            ga, gb = _f(a["goodput_bps"]) / 1e6, _f(b["goodput_bps"]) / 1e6
            rows.append(Row("flow", name, "goodput Mbit/s", ga, gb, _ratio(ga, gb), ""))
        if "rtt_mean" in sf.columns and math.isfinite(_f(a.get("rtt_mean"))):
            base = _f(a.get("base_rtt"))
            ra, rb = _f(a["rtt_mean"]) * 1e3, _f(b.get("rtt_mean")) * 1e3
            rows.append(Row("probe", name, "rtt mean ms", ra, rb, _ratio(ra, rb), ""))
            pa, pb = _f(a.get("rtt_p99")) * 1e3, _f(b.get("rtt_p99")) * 1e3
            rows.append(Row("probe", name, "rtt p99 ms", pa, pb, _ratio(pa, pb), ""))
            if math.isfinite(base):
                ia, ib = ra - base * 1e3, rb - base * 1e3
                rows.append(Row("probe", name, "induced latency ms", ia, ib, _ratio(ia, ib), _rel_verdict(ia, ib, 1.0, rel_tol, close_tol)))
    # aggregate goodput: the sum over bulk flows is what the bottleneck shares
    bulk = sf.index[sf["kind"] == "bulk"]
    if len(bulk) > 1:
        ga = sum(_f(sf.loc[n, "goodput_bps"]) for n in bulk) / 1e6
        gb = sum(_f(lf.loc[n, "goodput_bps"]) for n in bulk if n in lf.index) / 1e6
        rows.append(Row("flow", f"all {len(bulk)} bulk", "goodput Mbit/s", ga, gb, _ratio(ga, gb), ""))
        # per [[flow]] table (e.g. one table per host): the goodput of its bulk flows and
        # their share of all bulk goodput, which is what host isolation (cake) divides
        groups = sorted({int(g) for g in sf.loc[bulk, "group"]}) if "group" in sf.columns and "group" in lf.columns else []
        if len(groups) > 1:
            for g in groups:
                names = [n for n in bulk if int(sf.loc[n, "group"]) == g]
                sa = sum(_f(sf.loc[n, "goodput_bps"]) for n in names) / 1e6
                sb = sum(_f(lf.loc[n, "goodput_bps"]) for n in names if n in lf.index) / 1e6
                label = f"group {g} ({len(names)} bulk: {names[0]}{'…' if len(names) > 1 else ''})"
                rows.append(Row("flow", label, "goodput Mbit/s", sa, sb, _ratio(sa, sb), ""))
                pa, pb = 100 * sa / ga if ga else math.nan, 100 * sb / gb if gb else math.nan
                rows.append(Row("flow", label, "share of bulk goodput %", pa, pb, f"{pb - pa:+.2f} pt", ""))
    # loss recovery of all bulk senders over the whole run: the kernel's per-namespace MIB
    # counters (RTO expiries, SACK/Reno recovery episodes, tail loss probes, lost
    # retransmissions) against the simulator's per-flow counts
    tcp = (getattr(lin, "engine_info", None) or {}).get("tcp") or {}
    if len(bulk) and tcp:
        for col, label in (
            ("retransmits", "retransmitted segments (whole run)"),
            ("rtos", "RTOs (whole run)"),
            ("fast_recoveries", "fast recoveries (whole run)"),
            ("loss_probes", "tail loss probes (whole run)"),
            ("lost_retransmits", "lost retransmissions (whole run)"),
        ):
            va = sum(_f(sf.loc[n, col]) for n in bulk) if col in sf.columns else math.nan
            vb = _f(tcp.get(col))
            rows.append(Row("flow", f"all {len(bulk)} bulk", label, va, vb, _ratio(va, vb), ""))
        # undone reductions (kernel: TCPFullUndo + TCPPartialUndo + TCPDSACKUndo + TCPLossUndo)
        if "rto_undos" in sf.columns and "recovery_undos" in sf.columns:
            va = sum(_f(sf.loc[n, "rto_undos"]) + _f(sf.loc[n, "recovery_undos"]) for n in bulk)
            vb = _f(tcp.get("undos"))
            rows.append(Row("flow", f"all {len(bulk)} bulk", "undone reductions (whole run)", va, vb, _ratio(va, vb), ""))
    return rows


def _warm_drops(r, queue: str) -> float:
    """Drops per second after the warm-up of one queue, from its ``drops`` series."""
    s = r.series
    m = s[(s["kind"] == "queue") & (s["entity"] == queue) & (s["metric"] == "drops") & (s["t"] >= r.warmup - 1e-9)]
    if m.empty:
        return math.nan
    span = r.duration - r.warmup
    return float(m["value"].sum()) / span if span > 0 else math.nan


def verdict(rows: list[Row]) -> bool:
    """True when every row with a criterion agrees at the goal (``ok``)."""
    return all(r.verdict in ("ok", "") for r in rows)


def render(rows: list[Row], title: str = ""):
    """A rich table of the rows."""
    from rich.table import Table

    def fmt(v: float) -> str:
        return "–" if not math.isfinite(v) else f"{v:.3f}"

    t = Table(title=title or None, title_justify="left", show_edge=False, pad_edge=False)
    for c in ("", "entity", "metric", "sim", "linux", "diff", "agree"):
        t.add_column(c, justify="right" if c in ("sim", "linux", "diff") else "left")
    for r in rows:
        t.add_row(r.section, r.entity, r.metric, fmt(r.sim), fmt(r.linux), r.diff, r.verdict)
    return t


def to_json(rows: list[Row]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        d = asdict(r)
        for k in ("sim", "linux"):
            if not math.isfinite(d[k]):
                d[k] = None
        out.append(d)
    return out
