"""The campaign's report from its cells: the verdict matrix (case × engine), per-case tables
(metric × engine over the seeds) and figures.

- :func:`aggregate`: one engine's cells of one case (one per seed) → the rows with the
  means over the seeds, each judged again by the criteria of ``aqmlab crosscheck``
  (:func:`judge`);
- :func:`matrix`: per (case, engine) a :class:`MatrixCell`: ``agree`` / ``differ`` (with
  the worst ratio) / ``failed`` / ``unsupported`` / ``not installed``;
- :func:`write_report`: ``report.html``, ``results.csv``, ``matrix.md`` and
  ``figures/CASE_sojourn.png``, ``figures/CASE_goodput.png``.
"""

from __future__ import annotations

import csv
import html
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aqmlab.crosscheck import CLOSE_TOL, DROP_FLOOR, REL_TOL
from aqmlab.linux.crosscheck import UTIL_POINTS

__all__ = ["AggRow", "MatrixCell", "aggregate", "judge", "matrix", "matrix_markdown", "write_report", "worst"]

#: floors below which both values agree whatever their ratio (as aqmlab crosscheck)
_FLOORS = {"sojourn mean ms": 1.0, "induced latency ms": 1.0, "drop rate % after warm-up": DROP_FLOOR}


def judge(metric: str, a: float, b: float, tol: float, close: float | None = None) -> str:
    """The verdict of ``aqmlab crosscheck`` for a judged metric: utilisation within
    :data:`UTIL_POINTS` points; mean sojourn and induced latency within ±``tol`` (both
    below 1 ms agree); drop rate within ±``tol`` (both below 0.1 % agree): ``ok``; outside
    ``tol`` but within ±``close`` (the looser tier, :data:`aqmlab.crosscheck.CLOSE_TOL`):
    ``close``; else ``DIFF``. ``""`` when a value is missing."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return ""
    if metric == "utilisation %":
        return "ok" if abs(b - a) <= UTIL_POINTS else "DIFF"
    floor = _FLOORS.get(metric, 0.0)
    if abs(a) < floor and abs(b) < floor:
        return "ok"
    if abs(b - a) <= tol * abs(a):
        return "ok"
    return "close" if close is not None and abs(b - a) <= close * abs(a) else "DIFF"


@dataclass
class AggRow:
    section: str
    entity: str
    metric: str
    sim: float
    value: float
    seeds: int
    #: True when the row has a criterion
    judged: bool
    verdict: str

    @property
    def ratio(self) -> float:
        if not (math.isfinite(self.sim) and math.isfinite(self.value)) or self.sim == 0:
            return math.nan
        return self.value / self.sim

    def diff(self) -> str:
        if self.metric in ("utilisation %", "share of bulk goodput %"):
            return "–" if not (math.isfinite(self.sim) and math.isfinite(self.value)) else f"{self.value - self.sim:+.2f} pt"
        r = self.ratio
        return "–" if not math.isfinite(r) else f"×{r:.2f}"


def _num(v: Any) -> float:
    return math.nan if v is None else float(v)


def aggregate(cells: list[dict[str, Any]], engine: str) -> list[AggRow]:
    """The rows of one engine's finished cells of one case (one per seed): per (section,
    entity, metric) the means over the seeds of the simulator's and the engine's values,
    judged again (:func:`judge`) where any seed's row had a criterion."""
    tol = REL_TOL.get(engine, 0.25)
    close = CLOSE_TOL.get(engine)
    acc: dict[tuple[str, str, str], list[Any]] = {}
    for c in cells:
        for r in c.get("rows", []):
            e = r["engines"].get(engine)
            if e is None:
                continue
            k = (r["section"], r["entity"], r["metric"])
            a = acc.setdefault(k, [[], [], False])
            a[0].append(_num(r["sim"]))
            a[1].append(_num(e["value"]))
            a[2] = a[2] or bool(e["verdict"])
    out = []
    for (sec, ent, met), (sv, ev, judged) in acc.items():
        s = _mean(sv)
        v = _mean(ev)
        out.append(AggRow(sec, ent, met, s, v, len(sv), judged, judge(met, s, v, tol, close) if judged else ""))
    return out


def _mean(xs: list[float]) -> float:
    f = [x for x in xs if math.isfinite(x)]
    return sum(f) / len(f) if len(f) == len(xs) and f else math.nan


def worst(rows: list[AggRow]) -> tuple[str, AggRow | None]:
    """The judged row furthest from the simulator, as text (``×1.23`` for a relative
    metric, ``+2.5 pt`` for utilisation) and the row: among the disagreeing rows if any,
    relative metrics before utilisation; rows agreeing by their floor are left out."""
    judged = [r for r in rows if r.judged and r.verdict]
    pool = [r for r in judged if r.verdict == "DIFF"] or [r for r in judged if r.verdict == "close"] or judged
    rel = [r for r in pool if r.metric != "utilisation %" and math.isfinite(r.ratio) and r.ratio > 0
           and max(abs(r.sim), abs(r.value)) >= _FLOORS.get(r.metric, 0.0)]
    if rel:
        w = max(rel, key=lambda r: abs(math.log(r.ratio)))
        return f"×{w.ratio:.2f}", w
    util = [r for r in pool if r.metric == "utilisation %"]
    if util:
        w = max(util, key=lambda r: abs(r.value - r.sim))
        return w.diff(), w
    return "", None


@dataclass
class MatrixCell:
    status: str
    worst: str = ""
    #: what the worst ratio is of ("sojourn mean ms of bottleneck_up")
    what: str = ""
    message: str = ""
    seeds: list[int] = field(default_factory=list)
    rows: list[AggRow] = field(default_factory=list)

    def text(self) -> str:
        return f"{self.status} {self.worst}".strip()


def matrix(cells: list[dict[str, Any]], cases: list[str], engines: list[str]) -> dict[tuple[str, str], MatrixCell]:
    """Per (case, engine) of the stored cells (one per seed; see :mod:`aqmlab.campaign`):
    ``not installed`` / ``unsupported`` when the engine did not run the case, ``failed``
    when any seed failed (the first error), otherwise ``agree`` when every judged row of
    the means over the seeds agrees and ``differ`` when one does not, with the worst
    ratio. A (case, engine) without cells is ``not run``."""
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for c in cells:
        by.setdefault((c["case"], c["engine"]), []).append(c)
    out: dict[tuple[str, str], MatrixCell] = {}
    for case in cases:
        for e in engines:
            cs = sorted(by.get((case, e), []), key=lambda c: c["seed"])
            seeds = [c["seed"] for c in cs]
            if not cs:
                out[case, e] = MatrixCell("not run")
                continue
            st = {c["status"] for c in cs}
            if st & {"not installed", "unsupported"}:
                s = "not installed" if "not installed" in st else "unsupported"
                out[case, e] = MatrixCell(s, message=next(c.get("error", "") for c in cs if c["status"] == s), seeds=seeds)
                continue
            if "failed" in st:
                bad = [c for c in cs if c["status"] == "failed"]
                msg = "; ".join(f"seed {c['seed']}: {c.get('error', '')}" for c in bad)
                out[case, e] = MatrixCell("failed", message=msg, seeds=seeds, rows=aggregate([c for c in cs if c["status"] != "failed"], e))
                continue
            rows = aggregate(cs, e)
            vs = {r.verdict for r in rows}
            w, wr = worst(rows)
            out[case, e] = MatrixCell(
                "differ" if "DIFF" in vs else "close" if "close" in vs else "agree",
                w,
                f"{wr.metric} of {wr.entity}" if wr else "",
                seeds=seeds,
                rows=rows,
            )
    return out


def matrix_markdown(m: dict[tuple[str, str], MatrixCell], cases: list[tuple[str, str]], engines: list[str]) -> str:
    """The matrix as a Markdown table: case, what it is, one column per engine."""
    lines = ["| case | what | " + " | ".join(engines) + " |", "| --- | --- | " + " | ".join("---" for _ in engines) + " |"]
    for name, about in cases:
        cells = []
        for e in engines:
            c = m[name, e]
            cells.append(f"**{c.text()}**" if c.status in ("differ", "failed") else c.text())
        lines.append(f"| {name} | {about.replace('|', '/')} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------
# figures


def _figures(out: Path, case: str, cells: list[dict[str, Any]], engines: list[str]) -> list[str]:
    """figures/CASE_sojourn.png and figures/CASE_goodput.png from the first seed's cells:
    the sojourn CDF of the busiest queue and the goodput of all flows on the simulator and
    each engine that ran the case. Returns the files written (relative to ``out``)."""
    from matplotlib.figure import Figure

    done = [c for c in cells if c.get("figures")]
    if not done:
        return []
    seed = min(c["seed"] for c in done)
    first = [c for c in done if c["seed"] == seed]
    series: dict[str, dict[str, Any]] = {"sim": first[0]["figures"]["sim"]}
    for e in engines:
        for c in first:
            if c["engine"] == e:
                series[e] = c["figures"][e]
    written = []
    (out / "figures").mkdir(exist_ok=True)
    cdfs = {n: s["cdf"] for n, s in series.items() if s.get("cdf")}
    if cdfs:
        fig = Figure(figsize=(6.4, 3.8), layout="constrained")
        ax = fig.add_subplot()
        q = next(iter(cdfs.values()))["queue"]
        for n, d in cdfs.items():
            ys = [i / (len(d["ms"]) - 1) for i in range(len(d["ms"]))]
            ax.plot(d["ms"], ys, drawstyle="steps-post", lw=1.4, label=f"{n} ({d['how']}, n={d['n']})")
        ax.set_xlabel("sojourn (ms)")
        ax.set_ylabel("fraction of packets ≤ x")
        ax.set_ylim(0, 1.02)
        ax.set_xlim(left=0)
        ax.set_title(f"{case}: sojourn CDF of {q} after the warm-up (seed {seed})", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=7)  # matplotlib places it where it covers the least data
        p = f"figures/{case}_sojourn.png"
        fig.savefig(out / p, dpi=100)
        written.append(p)
    gps = {n: s["goodput"] for n, s in series.items() if s.get("goodput")}
    if gps:
        fig = Figure(figsize=(6.4, 3.8), layout="constrained")
        ax = fig.add_subplot()
        top = 0.0
        for n, d in gps.items():
            ys = [math.nan if v is None else v for v in d["mbps"]]
            top = max([top] + [v for v in ys if math.isfinite(v)])
            ax.plot(d["t"], ys, lw=1.1, label=n)
        b = next(iter(gps.values()))["bin"]
        ax.set_xlabel("time (s)")
        ax.set_ylabel(f"goodput of all flows (Mbit/s, {b * 1e3:g} ms bins)")
        ax.set_ylim(0, top * 1.3 if top > 0 else 1)  # headroom above the data for the legend
        ax.set_title(f"{case}: goodput (seed {seed})", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper center", ncol=len(gps), fontsize=7)
        p = f"figures/{case}_goodput.png"
        fig.savefig(out / p, dpi=100)
        written.append(p)
    return written


# ---------------------------------------------------------------------------------------
# files


def _fmt(v: float) -> str:
    if not math.isfinite(v):
        return "–"
    return f"{v:.4g}" if abs(v) < 1000 else f"{v:.0f}"


_COLOURS = {
    "agree": "#d4f0d4",
    "close": "#eef0c0",
    "differ": "#f8d0c8",
    "failed": "#f0a0a0",
    "unsupported": "#eeeeee",
    "not installed": "#f4ecd0",
    "not run": "#ffffff",
}
_CSS = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em 0; font-size: 0.85em; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f2f2f2; }
.diff { color: #a00; font-weight: bold; }
.msg { color: #555; font-size: 0.85em; max-width: 60em; }
img { max-width: 48%; margin-right: 1%; border: 1px solid #ddd; }
h2 { margin-top: 1.5em; border-top: 1px solid #ccc; padding-top: 0.5em; }
"""


def write_report(
    out: Path, cases: list[Any], engines: list[str], cells: list[dict[str, Any]], *, mode: str = "", wall_seconds: float = 0.0
) -> Path:
    """Writes report.html, results.csv, matrix.md and the figures into ``out`` from the
    campaign's ``cells`` (the stored cell records, :mod:`aqmlab.campaign`) of ``cases``
    (with ``name`` and ``about``). Returns the report's path."""
    out = Path(out)
    names = [c.name for c in cases]
    m = matrix(cells, names, engines)
    about = [(c.name, c.about) for c in cases]
    (out / "matrix.md").write_text(matrix_markdown(m, about, engines))
    with (out / "results.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "engine", "seeds", "section", "entity", "metric", "sim", "engine_value", "ratio", "verdict", "status"])
        for name in names:
            for e in engines:
                c = m[name, e]
                seeds = " ".join(map(str, c.seeds))
                if not c.rows:
                    w.writerow([name, e, seeds, "", "", "", "", "", "", "", c.status])
                for r in c.rows:
                    w.writerow(
                        [
                            name,
                            e,
                            seeds,
                            r.section,
                            r.entity,
                            r.metric,
                            _csvnum(r.sim),
                            _csvnum(r.value),
                            _csvnum(r.ratio),
                            r.verdict,
                            c.status,
                        ]
                    )
    counts = {
        s: sum(1 for c in m.values() if c.status == s)
        for s in ("agree", "close", "differ", "failed", "unsupported", "not installed", "not run")
    }
    h = [
        "<!doctype html><html><head><meta charset='utf-8'><title>aqmlab validation campaign "
        f"({html.escape(mode)})</title><style>{_CSS}</style></head><body>"
    ]
    h.append(f"<h1>aqmlab validation campaign: {html.escape(mode)}</h1>")
    tol = ", ".join(f"{e} ±{REL_TOL.get(e, 0.25) * 100:.0f} %" for e in engines)
    close = ", ".join(f"{e} ±{CLOSE_TOL[e] * 100:.0f} %" for e in engines if e in CLOSE_TOL)
    h.append(
        f"<p>{len(names)} case{'s' if len(names) != 1 else ''} × {len(engines)} engine{'s' if len(engines) != 1 else ''}; written "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
        + (f" after {wall_seconds:.0f} s" if wall_seconds else "")
        + ". Cells: "
        + ", ".join(f"{v} {k}" for k, v in counts.items() if v)
        + ".</p>"
    )
    h.append(
        "<p class='msg'>Each engine against the simulator on the same scenario and seed. <b>agree</b>: utilisation within "
        f"{UTIL_POINTS:g} points, "
        f"mean sojourn, probe induced latency and drop rate after the warm-up within the engine's tolerance ({tol}), on the means over "
        "the seeds; "
        "the ratio shown is the judged row furthest from the simulator (engine / simulator). "
        + (f"<b>close</b>: no judged row is outside the looser tier ({close}) but one is outside the goal; not a pass. " if close else "")
        + "<b>differ</b>: a judged row is outside. "
        "<b>failed</b>: the engine (or the simulator) raised; <b>unsupported</b>: the engine cannot express a key of the case; "
        "<b>not installed</b>: the engine is missing here.</p>"
    )
    h.append(
        "<h2 style='border:0'>Verdict matrix</h2><table><tr><th>case</th><th>what</th>"
        + "".join(f"<th>{html.escape(e)}</th>" for e in engines)
        + "</tr>"
    )
    for name, ab in about:
        tds = []
        for e in engines:
            mc = m[name, e]
            tip = html.escape(mc.what or mc.message, quote=True)
            tds.append(f"<td style='background:{_COLOURS.get(mc.status, '#fff')}' title='{tip}'>{html.escape(mc.text())}</td>")
        h.append(f"<tr><td><a href='#{name}'>{html.escape(name)}</a></td><td class='msg'>{html.escape(ab)}</td>{''.join(tds)}</tr>")
    h.append("</table>")
    by_case: dict[str, list[dict[str, Any]]] = {}
    for cell in cells:
        by_case.setdefault(cell["case"], []).append(cell)
    for name, ab in about:
        h.append(f"<h2 id='{name}'>{html.escape(name)}</h2><p>{html.escape(ab)}</p>")
        ran = [e for e in engines if m[name, e].rows]
        for e in engines:
            c = m[name, e]
            if c.status in ("failed", "unsupported", "not installed"):
                h.append(f"<p class='msg'><b>{html.escape(e)}: {c.status}</b>: {html.escape(c.message)}</p>")
        if ran:
            h.append(_case_table(m, name, ran))
            figs = _figures(out, name, [c for c in by_case.get(name, []) if c.get("status") in ("agree", "differ")], ran)
            h.append("<div>" + "".join(f"<img src='{p}' alt='{p}'>" for p in figs) + "</div>")
    h.append("</body></html>")
    p = out / "report.html"
    p.write_text("\n".join(h))
    return p


def _csvnum(v: float) -> str:
    return "" if not math.isfinite(v) else f"{v:.6g}"


def _case_table(m: dict[tuple[str, str], MatrixCell], name: str, engines: list[str]) -> str:
    """metric × engine: the simulator's value, each engine's value, ratio (or points) and
    verdict, means over the seeds."""
    order: dict[tuple[str, str, str], float] = {}
    vals: dict[tuple[str, str, str, str], AggRow] = {}
    for e in engines:
        for r in m[name, e].rows:
            k = (r.section, r.entity, r.metric)
            order.setdefault(k, r.sim)
            vals[(*k, e)] = r
    seeds = sorted({s for e in engines for s in m[name, e].seeds})
    t = [f"<table><tr><th colspan='3'>seeds {', '.join(map(str, seeds))} (means)</th><th>sim</th>"
         + "".join(f"<th>{html.escape(e)}</th><th>ratio</th><th>verdict</th>" for e in engines) + "</tr>"]
    for k, sim in order.items():
        tds = []
        for e in engines:
            ar = vals.get((*k, e))
            if ar is None:
                tds.append("<td></td><td></td><td></td>")
                continue
            v = {"ok": "agree", "close": "close", "DIFF": "differ"}.get(ar.verdict, "")
            cls = " diff" if v == "differ" else ""
            tds.append(
                f"<td class='num'>{_fmt(ar.value)}</td><td class='num{cls}'>{html.escape(ar.diff())}</td><td class='{cls.strip()}'>{v}</td>"
            )
        t.append(
            f"<tr><td>{k[0]}</td><td>{html.escape(k[1])}</td><td>{html.escape(k[2])}</td><td "
            f"class='num'>{_fmt(sim)}</td>{''.join(tds)}</tr>"
        )
    t.append("</table>")
    return "\n".join(t)
