"""Notebook views: the HTML Jupyter shows for a :class:`aqmlab.Result`
(``Result._repr_html_``) and a result store (``Store._repr_html_``) — the run's
headline numbers and flow and queue tables, or the store's experiments with their runs,
axes and measures — in a few rows each, with units."""
from __future__ import annotations

import html
from typing import Any

from aqmlab._fmt import fmt_num

__all__ = ["result_html", "store_html"]

#: rows of each table a notebook view shows
ROWS = 20


def _e(x: Any) -> str:
    return html.escape(str(x))


def _num(v: Any, scale: float = 1.0, digits: int | None = None) -> str:
    if v is None:  # a column of a `run --out` Parquet table holds None where a kind has no value
        return "–"
    try:
        return fmt_num(float(v) * scale, digits)
    except (TypeError, ValueError):
        return _e(v)


def _given(v: Any) -> bool:
    """Whether `v` is a number (not None, not NaN)."""
    try:
        return v is not None and float(v) == float(v)
    except (TypeError, ValueError):
        return False


def _table(cols: list[tuple[str, str]], rows: list[dict], total: int, what: str) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c, _ in cols)
    body = "".join("<tr>" + "".join(f"<td>{r.get(k, '')}</td>" for _, k in cols) + "</tr>" for r in rows)
    more = f"<p><i>… and {total - len(rows)} more {_e(what)}</i></p>" if total > len(rows) else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def result_html(res: Any) -> str:
    """A run: name, length, seed, warnings, then its flows (goodput, loss, RTT — a TCP
    flow's the sender's mean smoothed RTT, as ``aqmlab run`` prints it —, one-way delay
    and, with VoIP flows, the E-model R) and its busy queues (utilisation, drops,
    sojourn), :data:`ROWS` rows each."""
    parts = [f"<b>aqmlab run</b> <code>{_e(res.name or 'scenario')}</code>: {res.duration:g} s simulated "
             f"(statistics after {res.warmup:g} s warm-up), seed {res.seed}, {res.events} events"]
    for w in res.warnings:
        parts.append(f"<br><span style='color:#8b4000'>warning: {_e(w)}</span>")
    f = res.flows
    rows = []
    any_tcp = False
    for _, r in f.head(ROWS).iterrows():
        rtt = r.get("rtt_mean")
        if not _given(rtt) and _given(r.get("srtt_mean")):
            rtt, any_tcp = r.get("srtt_mean"), True  # a TCP flow: its sender's mean smoothed RTT
        rows.append({
            "name": _e(r["name"]), "kind": _e(r["kind"]), "path": _e(f"{r['src']} → {r['dst']}"),
            "goodput": _num(r.get("goodput_bps"), 1e-6), "loss": _num(r.get("loss_rate"), 100),
            "rtt": _num(rtt, 1e3), "owd": _num(r.get("owd_mean"), 1e3), "r": _num(r.get("r_value"), digits=1),
        })
    cols = [("flow", "name"), ("kind", "kind"), ("path", "path"), ("goodput (Mbit/s)", "goodput"),
            ("loss (%)", "loss"), ("RTT mean (ms)", "rtt"), ("one-way delay mean (ms)", "owd")]
    if "r_value" in f.columns and f["r_value"].map(_given).any():
        cols.append(("VoIP R (E-model)", "r"))
    note = "<p><small>RTT of a TCP flow: its sender's mean smoothed RTT (srtt).</small></p>" if any_tcp else ""
    parts.append("<h4>flows</h4>" + _table(cols, rows, len(f), "flows") + note)
    q = res.queues
    if "arrivals" in q.columns:
        q = q[q["arrivals"] > 0]
    qrows = []
    for _, r in q.head(ROWS).iterrows():
        qrows.append({
            "name": _e(r["name"]), "qdisc": _e(r.get("qdisc", "")), "util": _num(r.get("utilization"), 100),
            "dropped": _e(r.get("dropped", "")), "soj": _num(r.get("sojourn_mean"), 1e3), "p99": _num(r.get("sojourn_p99"), 1e3),
        })
    parts.append("<h4>queues that held packets</h4>" + _table(
        [("link", "name"), ("qdisc", "qdisc"), ("utilisation (%)", "util"), ("dropped", "dropped"),
         ("sojourn mean (ms)", "soj"), ("sojourn p99 (ms)", "p99")], qrows, len(q), "queues"))
    parts.append("<p><code>.plot()</code> draws goodput, queueing delay and probe RTT over time.</p>")
    return "<div>" + "".join(parts) + "</div>"


def store_html(store: Any) -> str:
    """A result store: its folder, study and mode, then per experiment its finished runs,
    axes (with their values) and measures."""
    runs = store.raw_runs
    prov = dict(getattr(store, "provenance", {}) or {})
    study = prov.get("study") or ""
    head = (f"<b>aqmlab result store</b> <code>{_e(store.path)}</code>: {len(runs)} finished runs"
            + (f" of study <code>{_e(study)}</code>" if study else "") + (" (quick mode)" if prov.get("quick") else ""))
    rows = []
    if len(runs) and "experiment" in runs.columns:
        for exp, g in runs.groupby("experiment", sort=False):
            axes = [c for c in g.columns if c.startswith("p_") and g[c].notna().any()]
            ax_txt = "; ".join(f"{c[2:]}: {', '.join(map(str, dict.fromkeys(g[c].dropna().astype(str))))}" for c in axes)
            meas = [c for c in g.columns if c not in ("run_id", "experiment", "repetition", "seed") and not c.startswith("p_")
                    and not c.endswith("wall_seconds")
                    and g[c].dtype.kind == "f" and g[c].notna().any()]
            rows.append({"exp": _e(exp), "runs": str(len(g)), "axes": _e(ax_txt), "measures": _e(", ".join(meas))})
    table = _table([("experiment", "exp"), ("runs", "runs"), ("axes (values)", "axes"), ("measures", "measures")], rows[:ROWS],
                   len(rows), "experiments")
    return f"<div>{head}{table}<p><code>aqmlab report {_e(store.path)}</code> writes its HTML report.</p></div>"
