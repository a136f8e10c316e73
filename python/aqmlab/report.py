"""One self-contained HTML page per study: what was run, what came out, and how it
compares with what the study reported.

:func:`write_report` reads a result store, renders the study's figures (PNG + SVG)
and tables (CSV + Markdown) next to the page, and writes an HTML file that needs
nothing else: CSS is inline and figures are embedded as base64 PNG. Sections:

- title, description and (in quick mode) a note that durations/repetitions were cut;
- **Findings**: each qualitative finding of the study beside what this run shows
  (✓/✗ with the numbers for findings that carry a ``check``; see
  :mod:`aqmlab.findings`), linked to the figure or table named by ``see``;
- **Provenance**: aqmlab version, start time, run counts (finished / planned) and
  wall times per experiment, the exact study text;
- per experiment: parameters (axes and their values, repetitions, measures, base
  scenario), its tables, a summary of all measures, and its figures.
"""
from __future__ import annotations

import base64
import datetime
import html
import json
import pathlib
from typing import Any

from aqmlab import findings as F
from aqmlab import plots, tables
from aqmlab._naming import did_you_mean as _did_you_mean
from aqmlab.store import Store, StoreLike, runs_of
from aqmlab.store import open as open_store
from aqmlab.study import of_store

__all__ = ["write_report", "write_run_report", "validate_outputs"]

CSS = """
:root { --fg:#1d232a; --muted:#5b6672; --line:#d8dee4; --bg:#ffffff; --soft:#f5f7f9;
        --ok:#1a7f37; --bad:#cf222e; --warn:#9a6700; --accent:#0b5cad; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: var(--fg); background: var(--bg); margin: 0; }
main { max-width: 1120px; margin: 0 auto; padding: 24px 28px 60px; }
h1 { font-size: 28px; margin: 8px 0 4px; }
h2 { font-size: 21px; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { font-size: 17px; margin: 24px 0 8px; }
.subtitle { color: var(--muted); margin: 0 0 12px; }
.banner { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: 8px 12px; margin: 12px 0; }
nav { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; margin: 14px 0; }
nav a { margin-right: 14px; color: var(--accent); text-decoration: none; }
table { border-collapse: collapse; margin: 8px 0 14px; font-size: 14px; }
caption { text-align: left; font-weight: 600; padding: 4px 0; white-space: nowrap; }
th, td { border: 1px solid var(--line); padding: 4px 9px; vertical-align: top; }
thead th { background: var(--soft); }
table.data td { text-align: right; font-variant-numeric: tabular-nums; }
table.kv th { text-align: left; background: var(--soft); font-weight: 600; }
table.findings { width: 100%; }
table.findings td.status { text-align: center; font-size: 20px; font-weight: 700; width: 48px; }
.pass { color: var(--ok); } .fail { color: var(--bad); } .nodata { color: var(--warn); } .unchecked { color: var(--muted); }
.detail { font-size: 13px; color: var(--muted); }
figure { margin: 16px 0 24px; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 4px; }
figcaption { font-size: 13px; color: var(--muted); }
.note { font-size: 13px; color: var(--muted); margin-top: -6px; }
.error { color: var(--bad); }
details { margin: 8px 0; } summary { cursor: pointer; color: var(--accent); }
pre { background: var(--soft); border: 1px solid var(--line); border-radius: 4px; padding: 10px; overflow-x: auto; font-size: 12.5px; }
code { font-size: 13px; }
.counts { font-variant-numeric: tabular-nums; }
footer { margin-top: 40px; font-size: 12px; color: var(--muted); }
"""


def _e(s: Any) -> str:
    return html.escape(str(s))


def _anchor(s: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in s)


def _img(path: pathlib.Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{_e(path.stem)}" src="data:image/png;base64,{data}">'


def _planned(study: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in study.experiments:
        out[e.name] = len(e.combinations()) * e.repetitions
    return out


def _fmt_seconds(s: float) -> str:
    if s != s:  # NaN
        return "–"
    if s < 1:
        # short runs: "0.0 s" would hide them
        return f"{s * 1e3:.0f} ms" if s >= 0.0095 else f"{s * 1e3:.1f} ms"
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.2f} h"


def _findings_html(evs: list[F.Evidence], known: set[str]) -> str:
    if not evs:
        return '<p class="note">The study lists no findings.</p>'
    counts = {k: sum(1 for e in evs if e.status == k) for k in ("pass", "fail", "no data", "unchecked")}
    rows = []
    for i, ev in enumerate(evs, 1):
        cls = {"pass": "pass", "fail": "fail", "no data": "nodata", "unchecked": "unchecked"}[ev.status]
        see = ""
        if ev.see:
            see = f' <a href="#{_anchor(ev.see)}">see {_e(ev.see)}</a>' if ev.see in known else f" (see {_e(ev.see)})"
        rows.append(
            f'<tr><td>{i}</td><td>{_e(ev.text)}</td><td class="status {cls}" title="{_e(ev.status)}">{ev.symbol}</td>'
            f'<td class="detail"><span class="{cls}">{_e(ev.status)}</span> — {_e(ev.detail)}{see}</td></tr>'
        )
    summary = (f'<p class="counts">{counts["pass"]} ✓ consistent, {counts["fail"]} ✗ not shown by this run, '
               f'{counts["no data"]} ? without data, {counts["unchecked"]} – to compare by eye.</p>')
    return (summary + '<table class="findings"><thead><tr><th>#</th><th>What the study reported</th><th></th>'
            '<th>What this run shows</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table>")


def _provenance_html(store: StoreLike, study: Any) -> str:
    prov = dict(getattr(store, "provenance", {}) or {})
    runs = runs_of(store)
    planned = _planned(study)
    kv = [
        ("study", f"{study.name} — {study.title}"),
        ("aqmlab version", prov.get("aqmlab_version", "unknown")),
        ("started", prov.get("started", "unknown")),
        ("mode", "quick" if prov.get("quick", study.quick) else "full"),
        ("store", str(getattr(store, "path", ""))),
        ("report written", datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")),
    ]
    out = ['<table class="kv">'] + [f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in kv] + ["</table>"]
    out.append(
        '<table class="data"><caption>Runs and wall time per experiment</caption><thead><tr><th>experiment</th>'
        "<th>finished</th><th>planned</th><th>wall time (sum)</th><th>per run (mean)</th><th>simulator time (sum)</th></tr></thead><tbody>"
    )
    tot_f = tot_p = 0
    tot_w = tot_s = 0.0
    for name, n_plan in planned.items():
        r = runs[runs["experiment"] == name] if "experiment" in runs.columns else runs.iloc[0:0]
        w = float(r["wall_seconds"].sum()) if "wall_seconds" in r.columns else float("nan")
        s = float(r["sim_wall_seconds"].sum()) if "sim_wall_seconds" in r.columns else float("nan")
        mean = w / len(r) if len(r) else float("nan")
        tot_f += len(r)
        tot_p += n_plan
        tot_w += 0.0 if w != w else w
        tot_s += 0.0 if s != s else s
        cls = "" if len(r) == n_plan else ' class="error"'
        out.append(f"<tr><th>{_e(name)}</th><td{cls}>{len(r)}</td><td>{n_plan}</td><td>{_fmt_seconds(w)}</td>"
                   f"<td>{_fmt_seconds(mean)}</td><td>{_fmt_seconds(s)}</td></tr>")
    out.append(f"<tr><th>all</th><td>{tot_f}</td><td>{tot_p}</td><td>{_fmt_seconds(tot_w)}</td><td></td><td>{_fmt_seconds(tot_s)}</td></tr>")
    out.append("</tbody></table>")
    if tot_f < tot_p:
        out.append(f'<p class="error">{tot_p - tot_f} planned run(s) are not in the store (sweep interrupted?); '
                   "rerun the same command to finish them.</p>")
    repaired = prov.get("repaired") or []
    if repaired:
        ids = sorted({str(r.get("run_id")) for r in repaired})
        items = "".join(
            f"<li><code>{_e(r.get('run_id'))}</code>: {_e(r.get('file'))} — {_e(r.get('reason'))} (found {_e(r.get('found', ''))})</li>"
            for r in repaired[:50]
        )
        more = f"<li>… and {len(repaired) - 50} more</li>" if len(repaired) > 50 else ""
        out.append(f'<p class="error">{len(ids)} finished run(s) were found damaged when the sweep resumed '
                   f"(their files did not match their checksums) and were run again:</p><ul class=\"detail\">{items}{more}</ul>")
    out.append(f"<details><summary>Study definition (exact text)</summary><pre>{_e(study.text)}</pre></details>")
    return "".join(out)


def _experiment_params_html(e: Any) -> str:
    from aqmlab import measures as M

    desc = M.describe()
    rows = [f"<tr><th>repetitions</th><td>{e.repetitions}</td></tr>"]
    for a in e.axes:
        rows.append(f"<tr><th>axis <code>{_e(a.name)}</code></th><td>{_e(', '.join(v.label for v in a.values))}</td></tr>")
    if e.overrides:
        rows.append(f"<tr><th>overrides</th><td>{len(e.overrides)} per-combination patch(es): "
                    + "; ".join(_e(", ".join(f"{k}={v}" for k, v in w.items())) for w, _ in e.overrides) + "</td></tr>")
    if e.measures:
        rows.append("<tr><th>measures</th><td>" + "<br>".join(
            f"<code>{_e(m)}</code>" + (f" — {_e(desc[m])}" if m in desc else "") for m in e.measures) + "</td></tr>")
    base = json.dumps(e.base, indent=2, default=str)
    return ('<table class="kv">' + "".join(rows) + "</table>"
            f"<details><summary>Base scenario of this experiment</summary><pre>{_e(base)}</pre></details>")


def validate_outputs(study: Any) -> None:
    """Checks every figure and table spec of a study (types, keys, required keys) and
    raises :class:`aqmlab.study.StudyError` listing all problems. Cheap: call it before
    a sweep so that a typo in a figure spec does not wait for the runs to finish."""
    from aqmlab import measures as M
    from aqmlab.study import StudyError

    problems = []
    by_name = {e.name: e for e in study.experiments}
    bad: set[str] = set()  # measure names refused below: never suggested as the fix of a figure or table

    def valid(m: str) -> bool:
        try:
            M.validate([m])
        except ValueError:
            return False
        return True

    def named(m: str, exp: Any) -> str:
        """Why `m` is not one of `exp`'s measures, and what to do."""
        ok = [x for x in exp.measures if x not in bad]
        fix = f"; add it to the measures of experiment {exp.name!r}" if valid(m) else _did_you_mean(m, ok)
        return f"{m!r} is not a measure of experiment {exp.name!r}{fix} (its measures: {', '.join(exp.measures) or 'none'})"

    for i, e in enumerate(study.experiments):
        for mi, m in enumerate(e.measures):
            try:
                M.validate([m])
            except M.MeasureColumnError as ex:
                bad.add(m)
                problems.append(f"experiment[{i}] ({e.name}).measures[{mi}]: {ex}{_line_of(study, m)}")
            except ValueError:
                bad.add(m)
                problems.append(f"experiment[{i}] ({e.name}).measures[{mi}]: unknown measure {m!r}{_did_you_mean(m, list(M.MEASURES))} "
                                f"(`aqmlab list measures` lists them; or a generic form such as flow:NAME.COL){_line_of(study, m)}")
    for i, e in enumerate(study.experiments):
        axes = {a.name for a in e.axes}
        for j, spec in enumerate(e.figures):
            where = f"experiment[{i}] ({e.name}).figure[{j}]"
            try:
                plots.validate_spec(spec, where)
            except plots.FigureSpecError as ex:
                problems.append(str(ex))
                continue
            other = by_name.get(spec.get("experiment", e.name))
            if other is None:
                problems.append(f"{where}.experiment: no experiment {spec['experiment']!r} (experiments: {', '.join(by_name)})")
                continue
            for key, m in _figure_measures(spec):
                if m not in other.measures:
                    problems.append(f"{where}.{key}: {named(m, other)}{_line_of(study, m)}")
            o_axes = {a.name for a in other.axes}
            for ax in (spec.get("where") or {}) if isinstance(spec.get("where"), dict) else ():
                if ax not in o_axes:
                    problems.append(
                        f"{where}.where.{ax}: not an axis of {other.name!r}{_did_you_mean(ax, sorted(o_axes))} (axes: {sorted(o_axes)})"
                    )
            if spec["type"] == "line" and spec["x"] not in o_axes:
                problems.append(
                    f"{where}.x: {spec['x']!r} is not an axis of {other.name!r}{_did_you_mean(spec['x'], sorted(o_axes))} (axes: "
                    f"{sorted(o_axes)})"
                )
            problems += _bar_axis_problems(spec, other, where)
            for k in ("group", "facet"):
                if (
                    k in spec
                    and spec.get("experiment", e.name) == e.name
                    and spec[k] not in axes
                    and spec["type"] not in ("bar", "flows_vs_rtt")
                ):
                    problems.append(f"{where}.{k}: {spec[k]!r} is not an axis of {e.name!r}{_did_you_mean(spec[k], sorted(axes))} "
                                    f"(axes: {sorted(axes)})")
        for j, spec in enumerate(e.tables):
            where = f"experiment[{i}] ({e.name}).table[{j}]"
            try:
                tables.validate_spec(spec, where)
            except tables.TableSpecError as ex:
                problems.append(str(ex))
                continue
            for k in ("rows", "cols"):
                if spec.get(k) is not None and spec.get("experiment", e.name) == e.name and spec[k] not in axes:
                    problems.append(f"{where}.{k}: {spec[k]!r} is not an axis of {e.name!r}{_did_you_mean(spec[k], sorted(axes))} "
                                    f"(axes: {sorted(axes)})")
            if spec.get("experiment", e.name) == e.name and e.measures and spec["value"] not in e.measures:
                problems.append(f"{where}.value: {named(spec['value'], e)}{_line_of(study, spec['value'])}")
    if problems:
        raise StudyError("bad output spec(s):\n  " + "\n  ".join(problems))


def _bar_axis_problems(spec: dict, exp: Any, where: str) -> list[str]:
    """A timeseries figure draws the mean and band over the repetitions of each group, and
    a bar figure of run measures averages the repetitions of each bar: an axis of the
    experiment with several values that the figure neither shows (x, hue, facet) nor fixes
    (where) would be pooled into one bar, which the drawing refuses — say so before the
    runs. `group` names the categories only when `x` is absent."""
    if spec["type"] == "timeseries":  # one line per group, a band over repetitions
        fixed = spec.get("where")
        shown = {spec.get("group", "qdisc"), spec.get("facet"), *(list(fixed) if isinstance(fixed, dict) else [])}
        from aqmlab.plots.kinds import SHOWN_BY, pooled_axis_advice

        return [f"{where}: runs of experiment {exp.name!r} differ in axis {a.name!r}, {pooled_axis_advice(a.name, SHOWN_BY['timeseries'])}"
                for a in exp.axes if len(a.values) > 1 and a.name not in shown]
    if spec["type"] != "bar" or spec.get("source", "runs") != "runs":
        return []
    if "x" in spec and "group" in spec:
        return [f"{where}.group: a bar figure's categories are its x ({spec['x']!r}); group names them only when x is absent: "
                f"show {spec['group']!r} as hue = {spec['group']!r} (or facet)"]
    fixed = spec.get("where")
    where_keys: list[str] = list(fixed) if isinstance(fixed, dict) else []
    shown = {spec.get("x", spec.get("group", "qdisc")), spec.get("hue"), spec.get("facet"), *where_keys}
    pooled = [a.name for a in exp.axes if len(a.values) > 1 and a.name not in shown]
    from aqmlab.plots.kinds import pooled_axis_advice

    return [f"{where}: runs of experiment {exp.name!r} differ in axis {a!r}, {pooled_axis_advice(a)}" for a in pooled]


def _line_of(study: Any, value: str) -> str:
    """" (line 21)": the first line of the study file holding the string `value` quoted
    ("" when not found or the study has no text)."""
    for i, line in enumerate(str(getattr(study, "text", "") or "").splitlines(), 1):
        if f'"{value}"' in line or f"'{value}'" in line:
            return f" (line {i})"
    return ""


def _figure_measures(spec: dict) -> list[tuple[str, str]]:
    """(key, measure) pairs of a figure spec that name run-level measures."""
    def names(v: Any) -> list[str]:
        return [str(x) for x in (v if isinstance(v, (list, tuple)) else [v])]

    t = spec.get("type")
    if t == "ellipse":
        return [("x", m) for m in names(spec["x"])] + [("y", m) for m in names(spec["y"])]
    if t == "bar" and spec.get("source", "runs") == "runs":
        return [("y", str(spec["y"]))]
    if t == "line":
        return [("y", str(spec["y"]))]
    return []


def identical_runs(store: StoreLike, study: Any) -> list:
    """Experiments whose repetitions all came out identical (see
    :func:`aqmlab.stats.identical_repetitions`): repeating them added nothing."""
    from aqmlab.stats import identical_repetitions

    runs = runs_of(store)
    return identical_repetitions(runs, {e.name: list(e.measures) for e in study.experiments})


def write_run_report(run_dir: str | pathlib.Path, out_html: str | pathlib.Path | None = None, dpi: int = 110) -> pathlib.Path:
    """The report of one ``aqmlab run --out DIR`` result: its headline numbers, the
    per-run figure (goodput per flow, queueing delay, probe RTT over time) and its flow
    and queue tables, in one self-contained page (default ``DIR/report.html``)."""
    import io
    import json
    import types

    import pandas as pd

    from aqmlab._html import result_html
    from aqmlab.plots.runview import load_source, plot_run

    d = pathlib.Path(run_dir)
    data = load_source(d)
    meta = json.loads((d / "meta.json").read_text()) if (d / "meta.json").is_file() else {}
    res = types.SimpleNamespace(
        name=meta.get("scenario") or data.name, duration=float(meta.get("duration", data.duration or 0.0)),
        warmup=data.warmup, seed=meta.get("seed", "?"), events=meta.get("events", "?"), warnings=meta.get("warnings", []),
        flows=data.flows, queues=data.queues if not data.queues.empty else pd.DataFrame({"name": []}))
    buf = io.BytesIO()
    plot_run(data).savefig(buf, format="png", dpi=dpi)
    img = base64.b64encode(buf.getvalue()).decode("ascii")
    out = pathlib.Path(out_html) if out_html is not None else d / "report.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    title = f"{res.name}: one run"
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)} — aqmlab report</title><style>{CSS}</style></head><body><main>"
            f"<h1>{_e(title)}</h1>{result_html(res)}"
            f'<figure><img alt="run over time" src="data:image/png;base64,{img}"><figcaption>goodput per flow, queueing delay '
            "and the latency probes' RTT (in a run without probes, the VoIP packets' one-way delay) over time (warm-up shaded)"
            "</figcaption></figure>"
            f"<footer>Generated by aqmlab {_e(meta.get('aqmlab_version', ''))} from {_e(d)}.</footer></main></body></html>\n")
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out)
    return out


def quick_summary(study: Any) -> str | None:
    """One plain sentence on what quick mode did to the study's runs ("quick mode: runs
    shortened to 20 s of 140 s (flow start and stop times scaled with them), 2
    repetitions"); None when the durations cannot be worked out."""
    from aqmlab.plots.select import quick_lengths, quick_sentence

    lengths: list[tuple[float, float]] = []
    reps = set()
    try:
        for e in study.experiments:
            lengths += quick_lengths(e)
            reps.add(int(e.repetitions))
    except Exception:  # noqa: BLE001 - a sentence, never a reason to fail the report
        return None
    if not lengths:
        return None
    note = quick_sentence(lengths, min(reps) if len(reps) == 1 else None)
    if len(reps) > 1:
        note += f", {min(reps)}–{max(reps)} repetitions"
    return note


def write_report(store_dir: str | pathlib.Path | StoreLike, study: Any = None, out_html: str | pathlib.Path | None = None,
                 files_dir: str | pathlib.Path | None = None, jobs: int | None = 1,
                 formats: tuple[str, ...] = ("png", "svg"), dpi: int = 110) -> pathlib.Path:
    """Writes the study's report page and returns its path.

    store_dir: the result directory (or a loaded :class:`aqmlab.store.Store`);
    study: an :class:`aqmlab.study.Study`, a study name/path, or None to use the study
    text saved in the store; out_html: the page (default ``<store>/report.html``);
    files_dir: where the figure (PNG, SVG) and table (CSV, Markdown) files go
    (default ``<page stem>-files/`` next to the page); jobs: processes that draw the
    figures of a store on disk while this one computes the tables and findings (None:
    one per CPU; 1: everything in this process; the page and files are the same);
    formats: the figure files written beside the page (PNG is always written: the page
    embeds it); dpi: resolution of the PNG files. The page itself embeds everything it
    shows.
    """
    store = open_store(store_dir)
    study = of_store(store, study)
    if out_html is not None:
        out = pathlib.Path(out_html)
    elif isinstance(store, Store):
        out = pathlib.Path(store.path) / "report.html"
    else:
        raise ValueError("out_html: in-memory tables have no directory to write the report to; give out_html")
    out.parent.mkdir(parents=True, exist_ok=True)
    files = pathlib.Path(files_dir) if files_dir is not None else out.parent / f"{out.stem}-files"
    # the figures (most of the time, the VoIP CDF alone about half) on worker processes,
    # the tables and findings here meanwhile
    fmts = tuple(dict.fromkeys(("png", *plots.check_formats(formats))))
    job = plots.FigureJob(store, study, files / "figures", formats=fmts, dpi=dpi, jobs=jobs)
    try:
        tabs = tables.render_table_records(store, study, files / "tables")
        evs = F.evaluate_all(store, study)
        figs = job.result()
    finally:
        job.close()
    known = {r.name for r in figs} | {r.name for r in tabs}
    prov = dict(getattr(store, "provenance", {}) or {})

    body = [f"<h1>{_e(study.title)}</h1>"]
    if study.title != study.name:
        body.append(f'<p class="subtitle">study <code>{_e(study.name)}</code></p>')
    if study.description:
        body.append(f"<p>{_e(study.description)}</p>")
    if prov.get("quick", study.quick):
        note = quick_summary(study) or prov.get("quick_note") or study.quick_note or ""
        note = note.removeprefix("quick mode").lstrip(":; ")
        body.append(
            f'<div class="banner"><b>Quick mode.</b> {_e(note[:1].upper() + note[1:]) + ". " if note else ""}Durations and repetitions '
            'are cut for a demo; '
            "numbers are noisier than the full study's and transients weigh more.</div>"
        )
    for w in identical_runs(store, study):
        body.append(f'<div class="banner identical"><b>Warning.</b> {_e(w.message)}.</div>')
    nav = ['<a href="#findings">Findings</a>', '<a href="#provenance">Provenance</a>']
    nav += [f'<a href="#exp-{_anchor(e.name)}">{_e(e.name)}</a>' for e in study.experiments]
    body.append("<nav>" + "".join(nav) + "</nav>")
    body.append('<h2 id="findings">Findings: what the study reported, and what this run shows</h2>')
    body.append(_findings_html(evs, known))
    body.append('<h2 id="provenance">Provenance</h2>')
    body.append(_provenance_html(store, study))
    for e in study.experiments:
        body.append(f'<h2 id="exp-{_anchor(e.name)}">Experiment <code>{_e(e.name)}</code>'
                    + (f" — {_e(e.title)}" if e.title and e.title != e.name else "") + "</h2>")
        body.append(_experiment_params_html(e))
        etabs = [r for r in tabs if r.experiment == e.name]
        if etabs:
            body.append("<h3>Tables</h3>")
        for r in etabs:
            cls = ' class="error"' if r.error else ""
            body.append(f'<div id="{_anchor(r.name)}"{cls}>')
            if r.summary:
                body.append(f"<details><summary>{_e(r.table.title)}</summary>{r.table.to_html()}</details>")
            else:
                body.append(r.table.to_html())
            body.append(f'<p class="note">files: {_e(r.csv.name)}, {_e(r.md.name)}</p></div>')
        efigs = [r for r in figs if r.experiment == e.name]
        if efigs:
            body.append("<h3>Figures</h3>")
        for fr in efigs:
            cap = f"{fr.name} ({fr.spec.get('type')})" + (f" — error: {fr.error}" if fr.error else "")
            body.append(f'<figure id="{_anchor(fr.name)}">{_img(fr.png) if fr.png else ""}<figcaption>{_e(cap)}; files: '
                        f"{_e(', '.join(p.name for p in fr.files))}</figcaption></figure>")
    n_runs = len(runs_of(store))
    body.append(f"<footer>Generated by aqmlab {_e(prov.get('aqmlab_version', ''))} from {n_runs} runs; "
                f"figure and table files in {_e(files.name)}/.</footer>")
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(study.title)} — aqmlab report</title><style>{CSS}</style></head>"
            "<body><main>" + "\n".join(body) + "</main></body></html>\n")
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out)
    return out
