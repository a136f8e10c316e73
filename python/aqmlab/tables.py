"""Tables of a study's result store, written as CSV (numbers, for machines) and
Markdown (formatted, for people).

Table specs
===========
Each ``[[experiment.table]]`` of a study is a table (dict)::

    [[experiment.table]]
    value = "induced_latency"     # a measure of the experiment (run-level column)
    rows = "qdisc"                # axis whose values are the rows
    cols = "link"                 # optional axis whose values are the columns
    stat = "mean±sd"              # over repetitions (and over any axis not shown)

Keys:

``value`` (required)
    a measure of the experiment (a column of ``runs``).
``rows`` (required), ``cols`` (optional)
    axes of the experiment. Runs of axes that are neither rows nor cols (nor fixed by
    ``where``) are pooled.
``stat``
    ``"mean"`` (default: the mean with its 95 % confidence interval, Student t over the
    n repetitions, written ``mean ± half-width``), ``"median"``, ``"mean±sd"`` (also
    written ``"mean+-sd"``), ``"sd"``, ``"min"``, ``"max"``, ``"count"``. The note under
    the table gives n (runs per cell); a cell whose n differs from the others says its own.
    A cell of one run has no interval (just the value).
``experiment``
    which experiment (default: the one the table sits under).
``where``
    ``{axis = label}`` or ``{axis = [labels]}``: only these runs.
``name``
    file stem (default ``<experiment>-<value>``, made file-safe).
``title``
    caption (default: value, stat and unit).
``scale``, ``unit``
    display scale and unit (default guessed from the name: bit/s → Mbit/s,
    seconds → ms, fractions → %). The CSV holds the scaled numbers too, with the
    unit in the caption line of the Markdown and in the CSV's column names.
``digits``
    decimals in the Markdown (default: 3 significant digits).

The CSV of a ``mean`` table has three columns per column value, ``<col> mean``,
``<col> ci95`` (half-width of the 95 % interval) and ``<col> n``; of a ``mean±sd`` table
``<col> mean``, ``<col> sd`` and ``<col> n``; cells without runs are empty in the CSV and
"–" in the Markdown. The per-repetition numbers are in the store
(``aqmlab.load(DIR).runs``, one row per run); :mod:`aqmlab.stats` has the helpers.

:func:`summary_table` gives, per experiment, every measure's mean ± 95 % CI for every
combination of axis values (one row per combination), plus the run count.
"""
from __future__ import annotations

import dataclasses
import html
import pathlib
import re
from typing import Any

import numpy as np
import pandas as pd

from aqmlab._fmt import fmt_num, fmt_spread, natural_key, unit_for
from aqmlab.stats import mean_ci
from aqmlab.store import StoreArg, StoreLike, runs_of

__all__ = ["TableSpecError", "Table", "table", "summary_table", "render_tables", "render_table_records", "validate_spec", "STATS"]

STATS = ("mean", "median", "mean±sd", "sd", "min", "max", "count")
_KEYS = {"value", "rows", "cols", "stat", "experiment", "where", "name", "title", "scale", "unit", "digits"}


class TableSpecError(ValueError):
    """A table spec that cannot be computed as written; the message names the key."""


def validate_spec(spec: dict, where: str = "table") -> None:
    if not isinstance(spec, dict):
        raise TableSpecError(f"{where}: a table spec is a table, got {spec!r}")
    for k in ("value", "rows"):
        if k not in spec:
            raise TableSpecError(f"{where}: needs key {k!r}")
    unknown = sorted(set(spec) - _KEYS)
    if unknown:
        raise TableSpecError(f"{where}: unknown key(s) {unknown} (allowed: {', '.join(sorted(_KEYS))})")
    if _stat(spec.get("stat", "mean")) not in STATS:
        raise TableSpecError(f"{where}.stat: {spec.get('stat')!r} is not allowed (allowed: {', '.join(STATS)})")


def _stat(s: str) -> str:
    return {"mean+-sd": "mean±sd", "mean±std": "mean±sd", "mean_sd": "mean±sd"}.get(str(s), str(s))


@dataclasses.dataclass
class Table:
    """A computed table: `numeric` holds the numbers (as in the CSV), `cells` the
    formatted strings (as in the Markdown), both indexed by the row labels."""

    name: str
    title: str
    numeric: pd.DataFrame
    cells: pd.DataFrame
    note: str = ""

    def to_markdown(self) -> str:
        head = [self.cells.index.name or ""] + [str(c) for c in self.cells.columns]
        lines = [f"**{self.title}**", "", "| " + " | ".join(_md(h) for h in head) + " |",
                 "|" + "|".join([":---"] + ["---:"] * len(self.cells.columns)) + "|"]
        for idx, row in self.cells.iterrows():
            lines.append("| " + " | ".join([_md(str(idx))] + [_md(str(v)) for v in row]) + " |")
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines) + "\n"

    def to_html(self) -> str:
        e = html.escape
        out = [f'<table class="data"><caption>{e(self.title)}</caption><thead><tr><th>{e(self.cells.index.name or "")}</th>']
        out += [f"<th>{e(str(c))}</th>" for c in self.cells.columns]
        out.append("</tr></thead><tbody>")
        for idx, row in self.cells.iterrows():
            out.append(f"<tr><th>{e(str(idx))}</th>" + "".join(f"<td>{e(str(v))}</td>" for v in row) + "</tr>")
        out.append("</tbody></table>")
        if self.note:
            out.append(f'<p class="note">{e(self.note)}</p>')
        return "".join(out)

    def write(self, outdir: str | pathlib.Path) -> list[pathlib.Path]:
        out = pathlib.Path(outdir)
        out.mkdir(parents=True, exist_ok=True)
        csv, md = out / f"{self.name}.csv", out / f"{self.name}.md"
        self.numeric.to_csv(csv, float_format="%.6g")
        md.write_text(self.to_markdown())
        return [csv, md]


def _md(s: str) -> str:
    return s.replace("|", "\\|")


def _file_stem(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_") or "table"


def _select(runs: pd.DataFrame, exp: str | None, where: dict | None) -> pd.DataFrame:
    from aqmlab.store import select_where

    return select_where(runs, exp, where, TableSpecError)


def _order(values: pd.Series, order: list[str] | None) -> list[str]:
    present = list(dict.fromkeys(values.astype(str)))
    if order:
        return [v for v in order if v in present] + sorted((v for v in present if v not in order), key=natural_key)
    return sorted(present, key=natural_key)


def _reduce(v: np.ndarray, stat: str) -> tuple[float, float]:
    """(value, spread): the spread is the 95 % CI half-width for "mean", the sd for
    "mean±sd", NaN otherwise."""
    v = v[~np.isnan(v)]
    if stat == "count":
        return float(v.size), np.nan
    if v.size == 0:
        return np.nan, np.nan
    sd = float(v.std(ddof=1)) if v.size > 1 else np.nan  # one value has no spread to show
    return {
        "mean": (float(v.mean()), mean_ci(v).half),
        "median": (float(np.median(v)), np.nan),
        "mean±sd": (float(v.mean()), sd),
        "sd": (sd, np.nan),
        "min": (float(v.min()), np.nan),
        "max": (float(v.max()), np.nan),
    }[stat]


def table(store: StoreLike, spec: dict, experiment: Any = None) -> Table:
    """Computes one table from a spec (see the module doc). `experiment` is an
    :class:`aqmlab.study.Experiment` (default experiment and axis order) or a name."""
    validate_spec(spec)
    exp_name, axes = _exp(spec, experiment)
    runs = _select(runs_of(store), exp_name, spec.get("where"))
    value, stat = spec["value"], _stat(spec.get("stat", "mean"))
    s0, u0 = unit_for(value)
    scale, unit = float(spec.get("scale", s0 if stat != "count" else 1.0)), str(spec.get("unit", u0 if stat != "count" else ""))
    rows, cols = spec["rows"], spec.get("cols")
    title = spec.get("title", f"{exp_name}: {value} ({stat}{', ' + unit if unit else ''}) by {rows}" + (f" × {cols}" if cols else ""))
    name = _file_stem(str(spec.get("name", f"{exp_name}-{value}")))
    digits = spec.get("digits")
    for key, ax in (("rows", rows), ("cols", cols)):
        if ax is not None and not runs.empty and f"p_{ax}" not in runs.columns:
            raise TableSpecError(
                f"{key}: {ax!r} is not an axis of experiment {exp_name!r} (axes: {[c[2:] for c in runs.columns if c.startswith('p_')]})"
            )
    if runs.empty or value not in runs.columns:
        empty = pd.DataFrame(index=pd.Index([], name=rows))
        return Table(name, title, empty, empty, note=f"no data: no runs of {exp_name!r} with measure {value!r}")
    rlab = _order(runs[f"p_{rows}"], axes.get(rows))
    clab = _order(runs[f"p_{cols}"], axes.get(cols)) if cols else [value]
    num_cols: dict[str, list[float] | list[int]] = {}
    cells: dict[str, list[str]] = {c: [] for c in clab}
    spread = stat in ("mean", "mean±sd")
    # each cell's values in table order: the rows whose axis labels are the cell's
    vals = runs[value].to_numpy(dtype=float)
    cell_of = _positions(runs, [f"p_{rows}"] + ([f"p_{cols}"] if cols else []))
    none = np.array([], dtype=np.intp)

    def cell(r: str, c: str) -> np.ndarray:
        return vals[cell_of.get((r, c) if cols else (r,), none)]

    counts: dict[tuple[str, str], int] = {}
    for c in clab:
        for r in rlab:
            counts[(r, c)] = int(np.isfinite(cell(r, c)).sum())
    nz = [k for k in counts.values() if k > 0]
    common = max(set(nz), key=lambda k: (nz.count(k), k)) if nz else 0  # most frequent n (ties: the larger)
    for c in clab:
        means, sds, ns = [], [], []
        for r in rlab:
            m, sd = _reduce(cell(r, c), stat)
            k = 1.0 if stat == "count" else scale
            means.append(m * k)
            sds.append(sd * k)
            ns.append(counts[(r, c)])
            txt = fmt_num(m * k, digits)
            if spread and not np.isnan(m) and not np.isnan(sd):
                txt += f" ± {fmt_spread(m * k, sd * k, digits)}"
            if spread and counts[(r, c)] and counts[(r, c)] != common:
                txt += f" (n={counts[(r, c)]})"
            cells[c].append(txt)
        label = c if cols else (f"{value} ({unit})" if unit else value)
        if spread:
            num_cols[f"{label} mean"] = means
            num_cols[f"{label} {'ci95' if stat == 'mean' else 'sd'}"] = sds
            num_cols[f"{label} n"] = ns
        else:
            num_cols[label] = means
    numeric = pd.DataFrame(num_cols, index=pd.Index(rlab, name=rows))
    cell_df = pd.DataFrame(
        {(c if cols else (f"{value} ({unit})" if unit else value)): v for c, v in cells.items()}, index=pd.Index(rlab, name=rows)
    )
    n = runs.groupby([f"p_{a}" for a in [rows] + ([cols] if cols else [])]).size()
    what = {"mean": "mean ± 95 % CI (Student t)", "mean±sd": "mean ± sd"}.get(stat, stat)
    note = (
        f"{what} over {int(n.min())}–{int(n.max())} runs per cell"
        if n.min() != n.max()
        else f"{what} over n = {int(n.min())} runs per cell"
    )
    if stat == "mean" and n.max() < 2:
        note += " (one run: no confidence interval)"
    if cols and unit:
        note += f"; values in {unit}"
    return Table(name, title, numeric, cell_df, note=note)


def summary_table(store: StoreLike, experiment: Any) -> Table:
    """Every measure of an experiment as mean ± 95 % CI per combination of axis values."""
    exp_name, axes = _exp({}, experiment)
    runs = _select(runs_of(store), exp_name, None)
    title = f"{exp_name}: all measures, mean ± 95 % CI (Student t) over repetitions"
    if runs.empty:
        empty = pd.DataFrame()
        return Table(_file_stem(f"{exp_name}-summary"), title, empty, empty, note="no data: no finished runs")
    pcols = [c for c in runs.columns if c.startswith("p_")]
    measures = list(getattr(experiment, "measures", []) or [])
    if not measures:
        skip = {"run_id", "experiment", "repetition", "seed", "events", "wall_seconds", "sim_wall_seconds", *pcols}
        measures = [c for c in runs.columns if c not in skip and pd.api.types.is_numeric_dtype(runs[c])]
    measures = [m for m in measures if m in runs.columns]
    if pcols:
        combos = runs[pcols].astype(str).drop_duplicates()
        keyf = lambda row: tuple(_rank(axes.get(c[2:]), row[c]) for c in pcols)  # noqa: E731
        combos = combos.loc[sorted(combos.index, key=lambda i: keyf(combos.loc[i]))]
    else:
        combos = pd.DataFrame(index=[0])
    rows_num, rows_txt, labels = [], [], []
    combo_of = _positions(runs, pcols)
    vals = {m: runs[m].to_numpy(dtype=float) for m in measures}
    for _, combo in combos.iterrows():
        sel = combo_of[tuple(combo[c] for c in pcols)] if pcols else np.arange(len(runs))
        labels.append(", ".join(f"{c[2:]}={combo[c]}" for c in pcols) or "all")
        num, txt = {"runs": float(len(sel))}, {"runs": str(len(sel))}
        for m in measures:
            s, u = unit_for(m)
            ci = mean_ci(vals[m][sel])
            col = f"{m} ({u})" if u else m
            num[f"{col} mean"], num[f"{col} sd"], num[f"{col} ci95"] = ci.mean * s, ci.sd * s, ci.half * s
            txt[col] = fmt_num(ci.mean * s) + ("" if np.isnan(ci.half) else f" ± {fmt_spread(ci.mean * s, ci.half * s)}")
        rows_num.append(num)
        rows_txt.append(txt)
    idx = pd.Index(labels, name="combination")
    return Table(_file_stem(f"{exp_name}-summary"), title, pd.DataFrame(rows_num, index=idx), pd.DataFrame(rows_txt, index=idx))


def _positions(runs: pd.DataFrame, cols: list[str]) -> dict[tuple[str, ...], np.ndarray]:
    """The row positions of `runs` (ascending) of each combination of the values of
    `cols` as strings: what selecting the rows equal to each combination in turn gives,
    in one pass over the table."""
    keys = zip(*(runs[c].astype(str).tolist() for c in cols))
    found: dict[tuple[str, ...], list[int]] = {}
    for i, k in enumerate(keys):
        found.setdefault(k, []).append(i)
    return {k: np.array(v, dtype=np.intp) for k, v in found.items()}


def _rank(order: list[str] | None, v: str) -> tuple:
    if order and v in order:
        return (0, order.index(v), "")
    return (1,) + natural_key(v)[1:]


def _exp(spec: dict, experiment: Any) -> tuple[str | None, dict[str, list[str]]]:
    name = spec.get("experiment")
    axes: dict[str, list[str]] = {}
    if experiment is not None and not isinstance(experiment, str):
        if name is None or name == experiment.name:
            axes = {a.name: [v.label for v in a.values] for a in experiment.axes}
        name = name or experiment.name
    elif isinstance(experiment, str):
        name = name or experiment
    return name, axes


@dataclasses.dataclass
class TableRecord:
    experiment: str
    name: str
    table: Table
    csv: pathlib.Path
    md: pathlib.Path
    error: str | None = None
    summary: bool = False


def render_table_records(
    store: StoreArg, study: Any, outdir: str | pathlib.Path, strict: bool = False, summaries: bool = True
) -> list[TableRecord]:
    """Computes and writes every ``[[experiment.table]]`` of the study (and, with
    summaries=True, one summary table per experiment) as CSV + Markdown."""
    from aqmlab.store import open as open_store
    from aqmlab.study import of_store

    store = open_store(store)
    study = of_store(store, study)
    out = pathlib.Path(outdir)
    recs: list[TableRecord] = []
    used: set[str] = set()
    for e in study.experiments:
        items: list[tuple[dict | None, int]] = [(spec, i) for i, spec in enumerate(e.tables)]
        if summaries:
            items.append((None, -1))
        for spec, i in items:
            err = None
            try:
                if spec is None:
                    t = summary_table(store, e)
                else:
                    validate_spec(spec, f"experiment {e.name!r} table[{i}]")
                    t = table(store, spec, e)
            except Exception as ex:  # noqa: BLE001 - reported in the table's note
                if strict:
                    raise
                err = f"{type(ex).__name__}: {ex}"
                empty = pd.DataFrame()
                t = Table(_file_stem(f"{e.name}-table-{i + 1}"), f"{e.name}: table {i + 1}", empty, empty, note=f"could not compute: {err}")
            while t.name in used:
                t.name += "_"
            used.add(t.name)
            csv, md = t.write(out)
            recs.append(TableRecord(e.name, t.name, t, csv, md, err, spec is None))
    return recs


def render_tables(
    store: StoreArg, study: Any, outdir: str | pathlib.Path, strict: bool = False, summaries: bool = True
) -> list[pathlib.Path]:
    """Writes every table of the study as CSV + Markdown; returns the paths."""
    return [p for r in render_table_records(store, study, outdir, strict, summaries) for p in (r.csv, r.md)]
