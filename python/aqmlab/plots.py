"""Figures of a study's result store: one function per figure type the reference
studies use, each returning a matplotlib :class:`~matplotlib.figure.Figure`.

Figures are built without pyplot (no global state, no display needed: they render
headless and still show inline in Jupyter). :func:`render_figures` draws every
``[[experiment.figure]]`` of a study into PNG + SVG files.

Usage::

    from aqmlab import plots, store
    s = store.load("out/residential")
    fig = plots.figure(s, {"type": "ellipse", "experiment": "rrul",
                           "x": "goodput_down", "y": "induced_latency", "group": "qdisc"})
    fig.savefig("rrul.png")

Figure specs
============
A spec is a table (dict). In a study file it sits under its experiment::

    [[experiment.figure]]
    type = "ellipse"
    x = ["goodput_down", "goodput_up"]
    y = "induced_latency"
    group = "qdisc"
    facet = "link"

Keys every type accepts:

``type``
    one of ``ellipse``, ``cdf``, ``timeseries``, ``bar``, ``flows_vs_rtt``,
    ``queue_delay``, ``state_trace``, ``drop_rate``, ``line``, ``box`` (required).
``name``
    file stem of the rendered files (default ``<experiment>-<type>-<n>``).
``title``
    figure title (default: made from the experiment and the keys).
``experiment``
    which experiment's runs to draw (default: the experiment the spec sits under).
``where``
    ``{axis = label}`` or ``{axis = [labels]}``: only runs with these axis values.
``group``
    an axis (or a flows column for flow-level types) whose values get one colour
    each (default ``"qdisc"`` when the experiment has that axis).
``facet``
    an axis whose values get one panel each (default: none).
``xlim``, ``ylim``
    ``[low, high]`` in display units.
``xlabel``, ``ylabel``
    axis labels (default: the quantity and its unit).
``x_scale``/``x_unit``, ``y_scale``/``y_unit``
    display scale and unit (default: guessed from the name: bit/s → Mbit/s,
    seconds → ms, fractions → %; see :func:`aqmlab._fmt.unit_for`).
``logx``, ``logy``
    logarithmic axes (default false).
``width``, ``height``
    size in inches (default depends on the number of panels).

Sample selection (``cdf``, ``timeseries``, ``state_trace``, ``queue_delay``,
``drop_rate``): ``of`` = ``"flow"`` (default) or ``"queue"`` picks flow or link
entities; ``entity`` = a name, a glob such as ``"bulk0.*"``, or a list; for flows also
``flow_kind`` = workload kind(s) such as ``"voip"`` or ``["ping", "udp_rr"]`` and
``direction`` = ``"up"`` (sent by ``client*`` hosts) or ``"down"`` (sent by
``server*``); ``after``/``before`` = time window in seconds.

Type-specific keys:

``ellipse`` — latency–goodput plane, per group the median point and the 1-σ
    covariance ellipse of the per-run values over repetitions (as Flent's ellipsis plot),
    with the repetitions as small dots.
    ``x``, ``y``: measures (run-level columns); one of them may be a list to plot
    several measures against the same other one (asymmetric links: both
    directions' goodput against the same latency; markers ● ▲ ■ … per entry).
    ``flip``: ``"x"``, ``"y"`` or ``"none"``; default flips the latency axis (the
    one whose name looks like a delay) so that better is up and right.
``cdf`` — empirical CDF of a sample metric, one line per group, all runs pooled.
    ``metric`` (required, e.g. ``"owd"``, ``"rtt"``, ``"sojourn"``);
    ``minus_base``: subtract the flow's base delay (``true``: base RTT for RTT
    metrics, half of it for one-way metrics; or ``"rtt"``/``"owd"`` explicitly);
    ``resample``: seconds; keep one sample per entity and interval (the last one
    before each grid point, as a tool sampling every 200 ms would see it).
``timeseries`` — point-wise mean over repetitions vs time, one line per group
    with its point-wise 95 % confidence band (Student t over the repetitions). ``metric`` (required); ``source`` = ``"samples"`` or
    ``"series"`` (default: series for the per-bin metrics ``goodput_bps``,
    ``tx_bps``, ``sojourn_mean``, ``drops``, ``backlog_max``, else samples);
    ``bin``: seconds for binning samples (default 0.2; series keep their bins);
    ``agg``: how entities of one run combine per bin, ``"mean"`` (default) or
    ``"sum"`` (e.g. total goodput); ``minus_base`` as for ``cdf``; ``band`` (true).
``bar`` — mean over repetitions with its 95 % confidence interval (Student t). ``y``: a measure (default source) or, with
    ``source = "flows"``, a flows column such as ``"goodput_bps"``; ``x``: the
    category axis (default: ``group``); ``hue``: second axis or, for flows,
    ``"flow"`` to get one bar per flow name.
``flows_vs_rtt`` — per-flow throughput vs base RTT, one line per group, each
    point the mean over repetitions (error bar: 95 % confidence interval). ``y`` (default
    ``"goodput_bps"``), ``x`` (default ``"base_rtt"``): flows columns;
    ``flow_kind`` (default ``"bulk"``).
``queue_delay`` — queue delay of consecutive packets in short windows with drops
    marked (▼ along the top edge). Uses per-packet queue samples ``metric``
    (default ``"sojourn"``) and drop events ``drop_metric`` (default ``"drop"``)
    of ``entity`` (a link, default ``"bottleneck_down"``); without them falls back
    to the per-bin ``sojourn_mean`` and ``drops`` series and says so.
    ``windows``: window start times (default ``[5]``); ``window``: length
    (default 1 s); ``repetition``: which repetition to show (default: the first).
    One row per group, one column per window.
``state_trace`` — qdisc state variables vs time (CoDel ``count``, PIE ``p`` …).
    ``metrics`` (default ``["count", "p"]``; one row of panels for each present),
    ``entity`` (default ``"bottleneck_down"``), ``repetition`` (default first);
    ``facet`` gives one column per value (e.g. the number of flows). The core writes a
    sample when a variable changes, so each line holds its last value to the run's end.
``drop_rate`` — TEWMA of drop events (drops/s), point-wise mean over repetitions.
    Events come from queue samples ``drop_metric`` (default ``"drop"``) or, if
    absent, from the per-bin ``drops`` series. ``memory`` (default 0.5 s),
    ``step`` (grid, default 0.05 s), ``entity`` (default ``"bottleneck_down"``).
``line`` — a measure vs a numeric axis (e.g. utilisation vs CoDel target), one
    line per group, mean over repetitions with its 95 % confidence interval. ``x``: the axis (labels are read
    as numbers: ``"5ms"`` → 5, and their shared unit labels the axis: ``target (ms)``);
    ``y``: the measure. ``diagonal``: ``true`` or a legend label such as
    ``"target"``: a dashed y = x line (mean delay vs target). Axis values whose runs
    have no value of ``y`` (e.g. no page finished) are listed on the figure.
``box`` — box plots of per-interval values (25–75 %, whiskers 5–95 %), all runs of
    a group pooled, one panel per entry of ``panels`` and one box per ``group``
    value, as Flent's RRUL box plots (download, upload, latency). Each panel is a
    table with ``metric`` (required), ``source`` (``"series"``/``"samples"``, default
    as for ``timeseries``), the sample selection keys (``of``, ``entity``,
    ``flow_kind``, ``direction``), ``agg`` (``"sum"`` adds the flows per
    interval), ``bin`` (default 0.2 s for samples), ``minus_base``, ``after``
    (seconds), ``label`` and ``logy``.

In quick mode every title gets a second line saying what the runs really were
("quick mode: 25 s runs, 1 repetition"). The ``ellipse`` legend sits right of the
panels, outside the data.

Missing data never raises: the figure (or panel) says "no data" and why. A spec
that is wrong (unknown type or key, missing required key, unknown axis) raises
:class:`FigureSpecError` naming the key — :func:`render_figures` turns that into
an error figure unless ``strict=True``.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import math
import os
import pathlib
import re
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Ellipse

from aqmlab import _procs as procs
from aqmlab import metrics
from aqmlab import store as store_data
from aqmlab._fmt import axis_label, label_unit, label_value, natural_key, readable, unit_for
from aqmlab.result import direction
from aqmlab.stats import mean_ci as _mean_ci
from aqmlab.stats import t975 as _t975
from aqmlab.store import StoreArg, StoreLike, drop_foreign_axes

__all__ = [
    "FigureSpecError",
    "FIGURE_TYPES",
    "figure",
    "render_figures",
    "render_figure_records",
    "validate_spec",
    "plot_ellipse",
    "plot_cdf",
    "plot_timeseries",
    "plot_bar",
    "plot_flows_vs_rtt",
    "plot_queue_delay",
    "plot_state_trace",
    "plot_drop_rate",
    "plot_line",
    "plot_box",
]


class FigureSpecError(ValueError):
    """A figure spec that cannot be drawn as written; the message names the key."""


SERIES_METRICS = ("goodput_bps", "tx_bps", "sojourn_mean", "drops", "backlog_max")
_COMMON = {
    "type", "name", "title", "experiment", "where", "group", "facet", "xlim", "ylim",
    "xlabel", "ylabel", "x_scale", "x_unit", "y_scale", "y_unit", "logx", "logy", "width", "height", "sharey",
}
_SELECT = {"of", "entity", "flow_kind", "direction", "after", "before"}
_KEYS: dict[str, tuple[set[str], set[str]]] = {
    # type: (required, optional)
    "ellipse": ({"x", "y"}, {"flip"}),
    "cdf": ({"metric"}, _SELECT | {"minus_base", "resample"}),
    "timeseries": ({"metric"}, _SELECT | {"source", "bin", "agg", "minus_base", "band"}),
    "bar": ({"y"}, {"x", "hue", "source", "flow_kind", "direction"}),
    "flows_vs_rtt": (set(), {"x", "y", "flow_kind", "direction"}),
    "queue_delay": (set(), {"entity", "metric", "drop_metric", "windows", "window", "repetition"}),
    "state_trace": (set(), {"entity", "metrics", "repetition", "after", "before"}),
    "drop_rate": (set(), {"entity", "drop_metric", "memory", "step", "after", "before"}),
    "line": ({"x", "y"}, {"diagonal"}),
    "box": ({"panels"}, set()),
}
_LATENCY_WORDS = ("latency", "delay", "rtt", "owd", "sojourn", "jitter")
_MARKERS = ("o", "^", "s", "D", "v", "P")


def validate_spec(spec: dict, where: str = "figure") -> None:
    """Raises :class:`FigureSpecError` for an unknown type, an unknown key or a
    missing required key (`where` prefixes the message, e.g. ``experiment[0].figure[1]``)."""
    if not isinstance(spec, dict):
        raise FigureSpecError(f"{where}: a figure spec is a table, got {spec!r}")
    t = spec.get("type")
    if t not in _KEYS:
        raise FigureSpecError(f"{where}.type: {t!r} is not a figure type (allowed: {', '.join(_KEYS)})")
    req, opt = _KEYS[t]
    missing = sorted(req - set(spec))
    if missing:
        raise FigureSpecError(f"{where}: a {t!r} figure needs key(s) {missing}")
    unknown = sorted(set(spec) - req - opt - _COMMON)
    if unknown:
        allowed = sorted(req | opt | _COMMON)
        raise FigureSpecError(f"{where}: unknown key(s) {unknown} for a {t!r} figure (allowed: {', '.join(allowed)})")
    for k in ("xlim", "ylim"):
        if k in spec and (not isinstance(spec[k], (list, tuple)) or len(spec[k]) != 2):
            raise FigureSpecError(f"{where}.{k}: expected [low, high], got {spec[k]!r}")


# ---------------------------------------------------------------------------------
# data selection helpers


def _table(store: StoreLike, name: str) -> pd.DataFrame:
    """A whole (small) table: ``runs`` with its axis labels as stored; other tables are
    read through :meth:`_Ctx.rows` (only the experiment's runs, columns and rows needed)."""
    if name == "runs":
        return store_data.runs_of(store)
    return store_data.scan(store, name)


@dataclasses.dataclass
class _Ctx:
    """What a plot function needs besides the spec: the store, the experiment name and
    (if known) the axis order of that experiment."""

    store: StoreLike
    spec: dict
    exp: str | None
    axes: dict[str, list[str]]
    #: quick mode: what the runs of this experiment really were ("quick mode: 25 s runs")
    quick: str | None = None
    #: the longest run of the experiment (s), when known
    run_length: float | None = None

    def get(self, key: str, default: Any = None) -> Any:
        return self.spec.get(key, default)

    def select(self, df: pd.DataFrame) -> pd.DataFrame:
        """Rows of this experiment that match `where`."""
        if df.empty:
            return df
        if self.exp is not None and "experiment" in df.columns:
            df = drop_foreign_axes(df[df["experiment"] == self.exp])
        for axis, val in (self.get("where") or {}).items():
            col = f"p_{axis}"
            if col not in df.columns:
                if df.empty:
                    continue
                raise FigureSpecError(f"where.{axis}: no such axis in experiment {self.exp!r} (axes: {self.axis_names(df)})")
            vals = val if isinstance(val, list) else [val]
            df = df[df[col].astype(str).isin([str(v) for v in vals])]
        return df

    def runs(self) -> pd.DataFrame:
        """This experiment's runs that match `where` (the runs table is small)."""
        return self.select(store_data.runs_of(self.store))

    def _selection(self, table: str) -> tuple[list[str] | None, list[str], bool]:
        """(run ids, axis columns, ok): the runs of this experiment matching `where`. A
        `where` naming an unknown axis is an error only if the table has rows for the
        experiment (as when the rows themselves were filtered)."""
        runs = store_data.runs_of(self.store)
        if runs.empty:
            return [], [], True
        base = drop_foreign_axes(runs[runs["experiment"] == self.exp]) if self.exp is not None and "experiment" in runs.columns else runs
        axes = [c for c in base.columns if c.startswith("p_")]
        try:
            sel = self.select(runs)
        except FigureSpecError:
            if base.empty:
                return [], axes, True
            probe = store_data.scan(self.store, table, ["run_id"], run_ids=list(base["run_id"]))
            if not probe.empty:
                raise
            return [], axes, True
        return [str(r) for r in sel["run_id"]], axes, True

    def _columns(self, columns: Iterable[str] | None, axes: list[str]) -> list[str] | None:
        if columns is None:
            return None
        return list(dict.fromkeys(["run_id", "experiment", "repetition", "seed", *axes, *columns]))

    def rows(self, table: str, columns: Iterable[str] | None = None, filters: list | None = None) -> pd.DataFrame:
        """Rows of `table` of this experiment's runs matching `where` and `filters`, with
        only `columns` (plus the run's identity and axis columns; None = all)."""
        ids, axes, _ = self._selection(table)
        if not ids:
            return pd.DataFrame()
        df = store_data.scan(self.store, table, self._columns(columns, axes), filters, run_ids=ids)
        return drop_foreign_axes(df) if not df.empty else df

    def per_run(self, table: str, columns: Iterable[str] | None, filters: list | None,
                fn: Callable[[pd.DataFrame], pd.DataFrame]) -> pd.DataFrame:
        """Like :meth:`rows`, but streams chunks of whole runs through `fn` (which reduces
        them run by run) and concatenates the results: a table's rows are never all in
        memory."""
        ids, axes, _ = self._selection(table)
        if not ids:
            return pd.DataFrame()
        out = []
        for df in store_data.iter_chunks(self.store, table, self._columns(columns, axes), filters, run_ids=ids):
            df = drop_foreign_axes(df)
            r = fn(df)
            if r is not None and not r.empty:
                out.append(r)
        return pd.concat(out, ignore_index=True) if out else pd.DataFrame()

    def axis_names(self, df: pd.DataFrame) -> list[str]:
        return [c[2:] for c in df.columns if c.startswith("p_")]

    def col(self, df: pd.DataFrame, name: str | None, key: str) -> str | None:
        """The column holding axis (or column) `name`; None if name is None."""
        if name is None:
            return None
        if f"p_{name}" in df.columns:
            return f"p_{name}"
        if name in df.columns:
            return name
        if df.empty:
            return None
        raise FigureSpecError(f"{key}: {name!r} is neither an axis of experiment {self.exp!r} (axes: {self.axis_names(df)}) nor a column")

    def levels(self, df: pd.DataFrame, col: str | None) -> list:
        """Values of `col` present in df, in the study's axis order (else natural order)."""
        if col is None or df.empty or col not in df.columns:
            return [None]
        present = df[col].astype(str).unique().tolist()  # in order of appearance
        order = self.axes.get(col[2:] if col.startswith("p_") else col)
        if order:
            return [v for v in order if v in present] + sorted((v for v in present if v not in order), key=natural_key)
        return sorted(present, key=natural_key)

    def group_col(self, df: pd.DataFrame) -> str | None:
        g = self.spec.get("group", "qdisc" if ("qdisc" in self.axes or "p_qdisc" in df.columns) else None)
        if g is None:
            return None
        if df.empty and f"p_{g}" not in df.columns and g not in df.columns:
            return None
        return self.col(df, g, "group")

    def scale(self, which: str, name: str) -> tuple[float, str]:
        s, u = unit_for(name)
        return float(self.spec.get(f"{which}_scale", s)), str(self.spec.get(f"{which}_unit", u))


def _match(df: pd.DataFrame, col: str | None, val: Any) -> pd.DataFrame:
    if col is None or val is None:
        return df
    return df[df[col].astype(str) == str(val)]


def _as_list(v: Any) -> list:
    if v is None:
        return []
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _pick_flows(ctx: _Ctx, flows: pd.DataFrame) -> pd.DataFrame:
    """Flows matching entity / flow_kind / direction."""
    if flows.empty:
        return flows
    kinds = _as_list(ctx.get("flow_kind"))
    if kinds and "kind" in flows.columns:
        flows = flows[flows["kind"].astype(str).isin(kinds)]
    d = ctx.get("direction")
    if d is not None and "src" in flows.columns:
        flows = flows[flows["src"].map(direction) == d]
    ents = _as_list(ctx.get("entity"))
    if ents and "name" in flows.columns:
        flows = flows[flows["name"].astype(str).map(lambda n: any(fnmatch.fnmatchcase(n, p) for p in ents))]
    return flows


_SAMPLE_COLUMNS = ("kind", "entity", "metric", "t", "value")


def _entity_samples(ctx: _Ctx, table: str, metric: str | Iterable[str], of: str | None = None,
                    per_run: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
                    filters: list | None = None) -> pd.DataFrame:
    """Samples (or series rows) of `metric` for the selected entities, with the flow's
    base RTT joined in (column base_rtt, NaN for queues). Only the experiment's runs and
    the rows of `metric` (and the time window) are read; with `per_run` each run's rows
    go through that reduction as they stream and only its results are kept."""
    of = of or ctx.get("of", "flow")
    mets = _as_list(metric)
    flt = [("kind", "==", of), ("metric", "in", [str(m) for m in mets])] + list(filters or [])
    for k, op in (("after", ">="), ("before", "<=")):
        if ctx.get(k) is not None:
            flt.append(("t", op, float(ctx.get(k))))
    keep = base = None
    if of == "flow":
        flows = _pick_flows(ctx, ctx.rows("flows"))
        if ctx.get("flow_kind") is not None or ctx.get("direction") is not None or ctx.get("entity") is not None:
            keep = flows[["run_id", "name"]].astype({"name": str}).rename(columns={"name": "entity"}).drop_duplicates() if not flows.empty else pd.DataFrame(columns=["run_id", "entity"])
        if not flows.empty and "base_rtt" in flows.columns:
            base = flows[["run_id", "name", "base_rtt"]].rename(columns={"name": "entity"})
            base = base.assign(entity=base["entity"].astype(str))
    ents = _as_list(ctx.get("entity")) if of != "flow" else []
    def one(df: pd.DataFrame) -> pd.DataFrame:  # a chunk of whole runs
        if df.empty:
            return df
        if of == "flow":
            if keep is not None:
                df = df.assign(entity=df["entity"].astype(str)).merge(keep, on=["run_id", "entity"], how="inner")
            if base is not None:
                df = df.assign(entity=df["entity"].astype(str)).merge(base, on=["run_id", "entity"], how="left")
            else:
                df = df.assign(base_rtt=np.nan)
        else:
            if ents:
                df = df[df["entity"].astype(str).map(lambda n: any(fnmatch.fnmatchcase(n, p) for p in ents))]
            df = df.assign(base_rtt=np.nan)
        if per_run is not None and not df.empty:
            df = per_run(df)
        return df

    return ctx.per_run(table, _SAMPLE_COLUMNS, flt, one)


def _minus_base(df: pd.DataFrame, how: Any, metric: str) -> pd.DataFrame:
    if not how or df.empty:
        return df
    if how is True:
        how = "owd" if ("owd" in metric or "one_way" in metric) else "rtt"
    if how not in ("rtt", "owd"):
        raise FigureSpecError(f"minus_base: {how!r} is not allowed (true, false, \"rtt\", \"owd\")")
    base = df["base_rtt"].fillna(0.0) * (0.5 if how == "owd" else 1.0)
    return df.assign(value=df["value"] - base)


# ---------------------------------------------------------------------------------
# figure scaffolding


def _new_figure(ctx: _Ctx, nrows: int = 1, ncols: int = 1, sharey: bool = False, sharex: bool = False):
    w = float(ctx.get("width", max(5.5, 4.2 * ncols)))
    h = float(ctx.get("height", max(3.6, 3.1 * nrows)))
    fig = Figure(figsize=(w, h), layout="constrained")
    # `sharey = false` in a spec gives each facet its own y range (facets whose values
    # differ by orders of magnitude, e.g. per-flow goodput on 100/100 vs 10/1 links)
    sharey = bool(ctx.get("sharey", sharey)) and ncols * nrows > 1
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=sharey, sharex=sharex)
    return fig, axes


def _no_data(ax, message: str) -> None:
    ax.text(0.5, 0.5, f"no data\n{message}", ha="center", va="center", transform=ax.transAxes,
            fontsize=10, color="#7a3b00", wrap=True,
            bbox=dict(boxstyle="round", facecolor="#fff4e0", edgecolor="#e0a050"))
    # Hide this panel's tick labels only: set_xticks([]) would clear the ticks of every
    # panel sharing the axis (a drop-pattern row lost its y tick labels that way).
    ax.tick_params(left=False, bottom=False, labelleft=False, labelbottom=False)


def _finish(fig: Figure, ctx: _Ctx, title: str, note: str | None = None) -> Figure:
    t = ctx.get("title", title)
    notes = [n for n in (note, f"({ctx.quick})" if ctx.quick else None) if n]
    fig.suptitle("\n".join([t] + notes), fontsize=11 if not notes else 10)
    for ax in fig.axes:
        if ctx.get("xlim") is not None:
            ax.set_xlim(*ctx.get("xlim"))
        if ctx.get("ylim") is not None:
            ax.set_ylim(*ctx.get("ylim"))
        if ctx.get("logx"):
            ax.set_xscale("log")
        if ctx.get("logy"):
            ax.set_yscale("log")
    return fig


def _colors(levels: list) -> dict:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(levels) <= 10 else "tab20"]
    return {lv: cmap(i % cmap.N) for i, lv in enumerate(levels)}


def _facet_title(ax, facet_name: str | None, val: Any) -> None:
    if facet_name is not None and val is not None:
        ax.set_title(f"{facet_name} = {val}", fontsize=10)


def _legend(ax, title: str | None = None) -> None:
    h, lab = ax.get_legend_handles_labels()
    if h:
        ax.legend(fontsize=8, title=title, title_fontsize=8, loc="best", framealpha=0.85)


def _outside_legend(fig: Figure, axes: Iterable, title: str | None = None) -> None:
    """One legend for the figure, right of the panels (constrained layout makes room),
    entries deduplicated by label across panels."""
    seen: dict[str, Any] = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    if seen:
        fig.legend(list(seen.values()), list(seen), loc="outside right lower", fontsize=8, title=title,
                   title_fontsize=8, frameon=True)


def _facets(ctx: _Ctx, df: pd.DataFrame) -> tuple[str | None, list]:
    fcol = ctx.col(df, ctx.get("facet"), "facet") if ctx.get("facet") else None
    return fcol, ctx.levels(df, fcol)


def _refuse_pooled_axes(df: pd.DataFrame, used: list[str | None], kind: str) -> None:
    """A mean and CI "over repetitions" must not pool runs that differ in an axis the
    figure does not show (the residential web figure pooled its two cross-traffic
    conditions into one bar and drew their spread as if it were run-to-run noise)."""
    shown = {c for c in used if c}
    for col in [c for c in df.columns if c.startswith("p_") and c not in shown]:
        levels = sorted({str(v) for v in df[col].dropna()})
        if len(levels) > 1:
            axis = col[2:]
            raise FigureSpecError(
                f"{kind}: runs differ in axis {axis!r} ({', '.join(levels)}), which this figure neither shows "
                f"(x, hue, facet) nor fixes: add where = {{ {axis} = ... }} or show it as x, hue or facet"
            )


def _empty_figure(ctx: _Ctx, title: str, message: str) -> Figure:
    fig, axes = _new_figure(ctx)
    _no_data(axes[0][0], message)
    return _finish(fig, ctx, title)


# ---------------------------------------------------------------------------------
# figure types


def plot_ellipse(store: StoreLike, spec: dict, experiment: Any = None) -> Figure:
    """Latency–goodput ellipses; see the module doc for the keys."""
    ctx = _ctx(store, spec, experiment)
    xs, ys = _as_list(spec["x"]), _as_list(spec["y"])
    if len(xs) > 1 and len(ys) > 1:
        raise FigureSpecError("x, y: only one of them may be a list")
    pairs = [(x, y) for x in xs for y in ys]
    runs = ctx.runs()
    title = f"{ctx.exp}: {' / '.join(map(readable, ys))} vs {' / '.join(map(readable, xs))}"
    if runs.empty:
        return _empty_figure(ctx, title, f"no runs of experiment {ctx.exp!r}")
    gcol = ctx.group_col(runs)
    fcol, facets = _facets(ctx, runs)
    groups = ctx.levels(runs, gcol)
    colors = _colors(groups)
    fig, axes = _new_figure(ctx, 1, len(facets), sharey=True)
    xname, yname = xs[0], ys[0]
    xs_, xu = ctx.scale("x", xname)
    ys_, yu = ctx.scale("y", yname)
    flip = spec.get("flip")
    if flip is None:
        lat = lambda names: all(any(w in n for w in _LATENCY_WORDS) for n in names)  # noqa: E731
        flip = "y" if lat(ys) else "x" if lat(xs) else "none"
    for ax, fv in zip(axes[0], facets):
        sub = _match(runs, fcol, fv)
        drawn = 0
        for g in groups:
            gs = _match(sub, gcol, g)
            for pi, (xm, ym) in enumerate(pairs):
                if xm not in gs.columns or ym not in gs.columns:
                    continue
                pts = gs[[xm, ym]].astype(float).dropna().to_numpy() * [xs_, ys_]
                if len(pts) == 0:
                    continue
                med = np.median(pts, axis=0)
                label = str(g) if g is not None else None
                if len(pairs) > 1:
                    which = readable(xm if len(xs) > 1 else ym)
                    label = f"{g} – {which}" if g is not None else which
                if len(pts) > 1:  # the repetitions themselves
                    ax.plot(pts[:, 0], pts[:, 1], marker=".", markersize=3, color=colors[g], linestyle="none", alpha=0.6)
                ax.plot(*med, marker=_MARKERS[pi % len(_MARKERS)], color=colors[g], linestyle="none",
                        markersize=7, label=label, markeredgecolor="black", markeredgewidth=0.5)
                if len(pts) >= 2:
                    cov = np.cov(pts, rowvar=False)
                    if np.all(np.isfinite(cov)):
                        vals, vecs = np.linalg.eigh(cov)
                        vals = np.clip(vals, 0, None)
                        angle = math.degrees(math.atan2(vecs[1, -1], vecs[0, -1]))
                        ax.add_patch(Ellipse(pts.mean(axis=0), 2 * math.sqrt(vals[-1]), 2 * math.sqrt(vals[0]),
                                             angle=angle, facecolor=(*colors[g][:3], 0.18), edgecolor=colors[g], linewidth=1.2))
                drawn += 1
        if not drawn:
            _no_data(ax, f"measures {xs + ys} missing or NaN")
            continue
        ax.autoscale_view()
        ax.set_xlabel(ctx.get("xlabel", axis_label(" / ".join(xs), xu)))
        ax.set_ylabel(ctx.get("ylabel", axis_label(" / ".join(ys), yu)))
        if flip == "y":
            ax.yaxis.set_inverted(True)  # idempotent, unlike invert_yaxis on shared axes
        elif flip == "x":
            ax.xaxis.set_inverted(True)
        ax.grid(alpha=0.3)
        _facet_title(ax, ctx.get("facet"), fv)
    # One legend for all panels, outside the data (right of the panels): with 7 schemes
    # a legend inside an axes covers ellipses. With several measures per group (both
    # directions' goodput) it lists the colours and then the marker shapes, not every
    # combination (7 schemes × 2 directions would be 14 entries).
    if len(pairs) > 1 and gcol is not None:
        from matplotlib.lines import Line2D

        handles = [Line2D([], [], marker="o", linestyle="none", markersize=7, color=colors[g], markeredgecolor="black",
                          markeredgewidth=0.5, label=str(g)) for g in groups]
        handles += [Line2D([], [], marker=_MARKERS[pi % len(_MARKERS)], linestyle="none", markersize=7, color="0.55",
                           markeredgecolor="black", markeredgewidth=0.5, label=readable(xm if len(xs) > 1 else ym))
                    for pi, (xm, ym) in enumerate(pairs)]
        fig.legend(handles=handles, loc="outside right lower", fontsize=8, title=spec.get("group", "qdisc"),
                   title_fontsize=8, frameon=True)
    else:
        _outside_legend(fig, axes[0], spec.get("group", "qdisc") if gcol else None)
    note = "(latency axis flipped: better is up and right)" if flip in ("x", "y") else None
    return _finish(fig, ctx, title, note)


def _resample(df: pd.DataFrame, step: float) -> pd.DataFrame:
    """Per (run, entity): the last sample at or before each multiple of `step`. The rows
    come out grouped by (run, entity) in order of first appearance once sorted by time,
    each group in time order (a groupby's order); the groups are found once and only
    the chosen rows are taken from the frame, in one go."""
    d = df.sort_values("t")
    codes = d.groupby(["run_id", "entity"], sort=False).ngroup().to_numpy()
    order = np.argsort(codes, kind="stable")  # group by group, each in its sorted order
    order = order[codes[order] >= 0]  # rows whose key is missing belong to no group
    if not order.size:
        return df.iloc[0:0]
    t_all = d["t"].to_numpy()[order]
    c = codes[order]
    starts = np.r_[0, np.flatnonzero(np.diff(c)) + 1]
    ends = np.r_[starts[1:], c.size]
    picks = []
    for a, b in zip(starts.tolist(), ends.tolist()):
        t = t_all[a:b]
        grid = np.arange(math.ceil(t[0] / step) * step, t[-1] + 1e-12, step)
        idx = np.searchsorted(t, grid, side="right") - 1
        picks.append(order[a + np.unique(idx[idx >= 0])])
    return d.iloc[np.concatenate(picks)].reset_index(drop=True)


def plot_cdf(store: StoreLike, spec: dict, experiment: Any = None) -> Figure:
    """CDF of a sample metric per group; see the module doc for the keys."""
    ctx = _ctx(store, spec, experiment)
    metric = spec["metric"]

    def reduce(d: pd.DataFrame) -> pd.DataFrame:  # per chunk of runs, as the samples stream
        d = _minus_base(d, spec.get("minus_base"), metric)
        return _resample(d, float(spec["resample"])) if spec.get("resample") else d

    df = _entity_samples(ctx, "samples", metric, per_run=reduce)
    title = f"{ctx.exp}: CDF of {'induced ' if spec.get('minus_base') else ''}{readable(metric)}"
    if df.empty:
        return _empty_figure(ctx, title, f"no {ctx.get('of', 'flow')} samples of {metric!r} in experiment {ctx.exp!r}")
    gcol = ctx.group_col(df)
    fcol, facets = _facets(ctx, df)
    groups = ctx.levels(df, gcol)
    colors = _colors(groups)
    sc, unit = ctx.scale("x", metric)
    fig, axes = _new_figure(ctx, 1, len(facets), sharey=True)
    for ax, fv in zip(axes[0], facets):
        sub = _match(df, fcol, fv)
        drawn = 0
        for g in groups:
            v = _match(sub, gcol, g)["value"].to_numpy(dtype=float) * sc
            x, p = metrics.ecdf(v)
            if x.size == 0:
                continue
            ax.step(np.r_[x[0], x], np.r_[0.0, p], where="post", color=colors[g], label=None if g is None else str(g), linewidth=1.4)
            drawn += 1
        if not drawn:
            _no_data(ax, f"no samples of {metric!r}")
            continue
        ax.set_xlabel(ctx.get("xlabel", axis_label(("induced " if spec.get("minus_base") else "") + metric, unit)))
        ax.set_ylabel(ctx.get("ylabel", "cumulative probability"))
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        _facet_title(ax, ctx.get("facet"), fv)
        if len(groups) <= 4 and fcol is None:
            _legend(ax, ctx.get("group", "qdisc") if gcol else None)
    if len(groups) > 4 or fcol is not None:  # many curves or panels: one legend right of them
        _outside_legend(fig, axes[0], ctx.get("group", "qdisc") if gcol else None)
    return _finish(fig, ctx, title)


def _per_run_bins(df: pd.DataFrame, width: float | None, agg: str) -> pd.DataFrame:
    """Per run: value per time bin, entities combined by `agg`. Returns columns
    run_id, t (bin start), value."""
    if width:
        df = df.assign(t=np.floor(df["t"].to_numpy() / width + 1e-9) * width)
    per_ent = df.groupby(["run_id", "entity", "t"], sort=False)["value"].mean().reset_index()
    how = "sum" if agg == "sum" else "mean"
    return per_ent.groupby(["run_id", "t"], sort=True)["value"].agg(how).reset_index()


def plot_timeseries(store: StoreLike, spec: dict, experiment: Any = None) -> Figure:
    """Point-wise mean over repetitions of a metric vs time; see the module doc."""
    ctx = _ctx(store, spec, experiment)
    metric = spec["metric"]
    source = spec.get("source", "series" if metric in SERIES_METRICS else "samples")
    if source not in ("samples", "series"):
        raise FigureSpecError(f"source: {source!r} is not allowed (\"samples\", \"series\")")
    agg = spec.get("agg", "mean")
    if agg not in ("mean", "sum"):
        raise FigureSpecError(f"agg: {agg!r} is not allowed (\"mean\", \"sum\")")
    width = float(spec.get("bin", 0.2)) if source == "samples" else (float(spec["bin"]) if "bin" in spec else None)

    def reduce(d: pd.DataFrame) -> pd.DataFrame:  # per run, as the rows stream: its bins
        d = _minus_base(d, spec.get("minus_base"), metric)
        b = _per_run_bins(d, width, agg)
        ident = [c for c in d.columns if c.startswith("p_") or c in ("experiment", "repetition", "seed")]
        return b.merge(d[["run_id", *ident]].drop_duplicates("run_id"), on="run_id", how="left")

    df = _entity_samples(ctx, source, metric, per_run=reduce)
    title = f"{ctx.exp}: {readable(metric)} over time (mean of repetitions)"
    if df.empty:
        return _empty_figure(ctx, title, f"no {ctx.get('of', 'flow')} {source} of {metric!r} in experiment {ctx.exp!r}"
                             + (" (does the experiment set keep_series = true?)" if source == "series" else ""))
    gcol = ctx.group_col(df)
    fcol, facets = _facets(ctx, df)
    groups = ctx.levels(df, gcol)
    colors = _colors(groups)
    sc, unit = ctx.scale("y", metric)
    fig, axes = _new_figure(ctx, 1, len(facets), sharey=True)
    for ax, fv in zip(axes[0], facets):
        sub = _match(df, fcol, fv)
        drawn = 0
        for g in groups:
            gs = _match(sub, gcol, g)
            if gs.empty:
                continue
            bins = gs[["run_id", "t", "value"]]
            wide = bins.pivot(index="t", columns="run_id", values="value").sort_index()
            with np.errstate(all="ignore"), warnings.catch_warnings():
                # a bin with < 2 repetitions has no interval (NaN), not a warning per bin
                warnings.simplefilter("ignore", RuntimeWarning)
                mean = np.nanmean(wide.to_numpy(dtype=float), axis=1) * sc
                # point-wise 95 % confidence interval of the mean over the repetitions
                arr = wide.to_numpy(dtype=float)
                k = np.sum(np.isfinite(arr), axis=1)
                sd = np.nanstd(arr, axis=1, ddof=1) * sc
                half = np.array([_t975(int(n) - 1) if n > 1 else np.nan for n in k]) * sd / np.sqrt(np.maximum(k, 1))
            t = wide.index.to_numpy(dtype=float)
            ax.plot(t, mean, color=colors[g], label=None if g is None else f"{g} (n={wide.shape[1]})", linewidth=1.3)
            if spec.get("band", True) and wide.shape[1] > 1:
                # the 95 % CI of the mean, clipped to the range the repetitions span in
                # that bin: with 2-3 repetitions the t interval (t = 12.7 / 4.3) reaches far
                # beyond any observed value (negative goodput, an RTT below the base, or
                # off a log axis)
                vals = wide.to_numpy(dtype=float)
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    lo = np.maximum(mean - half, np.nanmin(vals, axis=1) * sc)
                    hi_band = np.minimum(mean + half, np.nanmax(vals, axis=1) * sc)
                ax.fill_between(t, lo, hi_band, color=colors[g], alpha=0.15, linewidth=0)
            drawn += 1
        if not drawn:
            _no_data(ax, f"no {metric!r}")
            continue
        ax.set_xlabel(ctx.get("xlabel", "time (s)"))
        ax.set_ylabel(ctx.get("ylabel", axis_label(("induced " if spec.get("minus_base") else "") + metric, unit)))
        ax.grid(alpha=0.3)
        _facet_title(ax, ctx.get("facet"), fv)
    # lines fill the whole plane over time: the legend goes right of the panels
    _outside_legend(fig, axes[0], ctx.get("group", "qdisc") if gcol else None)
    return _finish(fig, ctx, title)


def plot_bar(store: StoreLike, spec: dict, experiment: Any = None) -> Figure:
    """Mean ± sd over repetitions per category (and hue); see the module doc."""
    ctx = _ctx(store, spec, experiment)
    y = spec["y"]
    source = spec.get("source", "runs")
    if source not in ("runs", "flows"):
        raise FigureSpecError(f"source: {source!r} is not allowed (\"runs\", \"flows\")")
    df = ctx.runs() if source == "runs" else ctx.rows(source)
    if source == "flows":
        df = _pick_flows(ctx, df)
    title = f"{ctx.exp}: {readable(y)} (mean and 95 % CI over repetitions)"
    if df.empty or y not in df.columns or df[y].astype(float).isna().all():
        return _empty_figure(ctx, title, f"no values of {y!r} in {source} of experiment {ctx.exp!r}")
    xname = spec.get("x", spec.get("group", "qdisc" if "p_qdisc" in df.columns else None))
    xcol = ctx.col(df, xname, "x" if "x" in spec else "group") if xname else None
    hname = spec.get("hue")
    hcol = ("name" if hname == "flow" else ctx.col(df, hname, "hue")) if hname else None
    fcol, facets = _facets(ctx, df)
    _refuse_pooled_axes(df, [xcol, hcol, fcol], "bar")
    cats = ctx.levels(df, xcol)
    hues = ctx.levels(df, hcol)
    colors = _colors(hues if hcol else cats)
    sc, unit = ctx.scale("y", y)
    fig, axes = _new_figure(ctx, 1, len(facets), sharey=True)
    width = 0.8 / max(1, len(hues))
    for ax, fv in zip(axes[0], facets):
        sub = _match(df, fcol, fv)
        for hi, h in enumerate(hues):
            hs = _match(sub, hcol, h)
            means, lo, hi_ = [], [], []
            for c in cats:
                v = _match(hs, xcol, c)[y].astype(float).dropna().to_numpy() * sc
                m = v.mean() if v.size else np.nan
                half = _mean_ci(v).half if v.size > 1 else 0.0
                means.append(m)
                hi_.append(half)
                # A quantity that cannot be negative (all values >= 0: goodput, delay, loss)
                # gets its lower whisker cut at 0: a t interval over 3 repetitions can
                # reach below zero, which reads as a measurement error.
                lo.append(min(half, m) if v.size and v.min() >= 0 else half)
            pos = np.arange(len(cats)) + (hi - (len(hues) - 1) / 2) * width
            col = [colors[h]] * len(cats) if hcol else [colors[c] for c in cats]
            ax.bar(pos, means, width * 0.95, yerr=[lo, hi_], color=col, capsize=3, edgecolor="black", linewidth=0.4,
                   label=str(h) if hcol else None, error_kw=dict(linewidth=0.8))
        ax.set_xticks(np.arange(len(cats)))
        ax.set_xticklabels([str(c) if c is not None else "" for c in cats], rotation=30 if len(cats) > 5 else 0, ha="right" if len(cats) > 5 else "center")
        ax.set_xlabel(ctx.get("xlabel", axis_label(xname, label_unit(cats)) if xname else ""))
        ax.set_ylabel(ctx.get("ylabel", axis_label(y, unit)))
        ax.grid(alpha=0.3, axis="y")
        _facet_title(ax, ctx.get("facet"), fv)
    if hcol:  # one legend right of the panels: inside, it covers bars
        _outside_legend(fig, axes[0], hname)
    return _finish(fig, ctx, title)


def plot_flows_vs_rtt(store: StoreLike, spec: dict, experiment: Any = None) -> Figure:
    """Per-flow throughput vs base RTT per group; see the module doc."""
    ctx = _ctx(store, {"flow_kind": "bulk", **spec}, experiment)
    x, y = spec.get("x", "base_rtt"), spec.get("y", "goodput_bps")
    flows = _pick_flows(ctx, ctx.rows("flows"))
    title = f"{ctx.exp}: per-flow {readable(y)} vs {readable(x)}"
    if flows.empty or x not in flows.columns or y not in flows.columns:
        return _empty_figure(ctx, title, f"no {ctx.get('flow_kind')} flows with {x!r} and {y!r} in experiment {ctx.exp!r}")
    gcol = ctx.group_col(flows)
    fcol, facets = _facets(ctx, flows)
    groups = ctx.levels(flows, gcol)
    colors = _colors(groups)
    xs_, xu = ctx.scale("x", x)
    ys_, yu = ctx.scale("y", y)
    fig, axes = _new_figure(ctx, 1, len(facets), sharey=True)
    for ax, fv in zip(axes[0], facets):
        sub = _match(flows, fcol, fv)
        for g in groups:
            gs = _match(sub, gcol, g)
            if gs.empty:
                continue
            st = gs.groupby("name").agg(x=(x, "mean"), y=(y, "mean"), sd=(y, lambda v: _mean_ci(v.to_numpy(dtype=float)).half)).sort_values("x")
            ax.errorbar(st["x"] * xs_, st["y"] * ys_, yerr=st["sd"].fillna(0) * ys_, marker="o", markersize=4,
                        capsize=3, color=colors[g], label=None if g is None else str(g), linewidth=1.2)
        ax.set_xlabel(ctx.get("xlabel", axis_label(x, xu)))
        ax.set_ylabel(ctx.get("ylabel", axis_label(y, yu)))
        ax.grid(alpha=0.3)
        _facet_title(ax, ctx.get("facet"), fv)
        if fcol is None:
            _legend(ax, ctx.get("group", "qdisc") if gcol else None)
    if fcol is not None:  # one legend right of the panels instead of one per panel
        _outside_legend(fig, axes[0], ctx.get("group", "qdisc") if gcol else None)
    return _finish(fig, ctx, title)


def _pick_rep(ctx: _Ctx, df: pd.DataFrame) -> pd.DataFrame:
    if df.empty or "repetition" not in df.columns:
        return df
    rep = ctx.get("repetition")
    if rep is None:
        rep = int(df["repetition"].min())
    return df[df["repetition"] == int(rep)]


def _one_rep_samples(ctx: _Ctx, table: str, metric: Any, of: str) -> pd.DataFrame:
    """:func:`_entity_samples` of one repetition (the spec's, else the first that has
    rows) without reading the other repetitions' rows."""
    rep = ctx.get("repetition")
    if rep is None:
        runs = ctx.runs()
        if "repetition" in runs.columns and not runs.empty:
            first = int(runs["repetition"].min())
            df = _entity_samples(ctx, table, metric, of=of, filters=[("repetition", "==", first)])
            if not df.empty:
                return df
        return _pick_rep(ctx, _entity_samples(ctx, table, metric, of=of))
    return _entity_samples(ctx, table, metric, of=of, filters=[("repetition", "==", int(rep))])


def plot_queue_delay(store: StoreLike, spec: dict, experiment: Any = None) -> Figure:
    """Queue delay of consecutive packets with drops marked; see the module doc."""
    ctx = _ctx(store, {"of": "queue", "entity": "bottleneck_down", **spec}, experiment)
    metric, dmetric = spec.get("metric", "sojourn"), spec.get("drop_metric", "drop")
    windows = [float(w) for w in _as_list(spec.get("windows", [5.0]))]
    wlen = float(spec.get("window", 1.0))
    if getattr(experiment, "cap", None) is not None:
        # quick mode moved the traced windows (study.quick_window): draw the same ones
        from aqmlab.study import quick_window

        try:
            durs, scales = _quick_scales(experiment)
        except Exception:  # noqa: BLE001 - keep the full study's windows
            durs, scales = set(), set()
        if len(scales) == 1 and len(durs) == 1:
            k, dur = next(iter(scales)), next(iter(durs))
            windows = [quick_window(w, w + wlen, k, dur)[0] for w in windows]
    title = f"{ctx.exp}: queue delay of {ctx.get('entity')} with drops"
    pk = _one_rep_samples(ctx, "samples", [metric, dmetric], of="queue")
    per_packet = not pk.empty and (pk["metric"] == metric).any()
    if per_packet:
        data = pk
        note = "per-packet samples"
    else:
        data = _one_rep_samples(ctx, "series", ["sojourn_mean", "drops"], of="queue")
        note = "per-bin mean sojourn and drop counts (per-packet samples not stored)"
        if data.empty:
            return _empty_figure(ctx, title, f"no per-packet {metric!r} samples and no sojourn_mean/drops series for {ctx.get('entity')!r}")
    gcol = ctx.group_col(data)
    groups = ctx.levels(data, gcol)
    colors = _colors(groups)
    sc, unit = ctx.scale("y", "sojourn")
    fig, axes = _new_figure(ctx, len(groups), len(windows), sharey=True)
    for r, g in enumerate(groups):
        gs = _match(data, gcol, g)
        for c, w0 in enumerate(windows):
            ax = axes[r][c]
            win = gs[(gs["t"] >= w0) & (gs["t"] < w0 + wlen)]
            dm = metric if per_packet else "sojourn_mean"
            dd = dmetric if per_packet else "drops"
            d = win[win["metric"] == dm].sort_values("t")
            drops = win[(win["metric"] == dd) & (win["value"] > 0)] if not per_packet else win[win["metric"] == dd]
            if d.empty and drops.empty:
                past = ctx.run_length is not None and w0 >= ctx.run_length
                _no_data(ax, f"[{w0:g}, {w0 + wlen:g}) s is past the end of the {ctx.run_length:g} s runs" if past
                         else f"nothing in [{w0:g}, {w0 + wlen:g}) s")
                continue
            if per_packet:
                ax.plot(d["t"], d["value"] * sc, marker=".", markersize=2, linewidth=0.6, color=colors[g])
            else:
                ax.step(d["t"], d["value"] * sc, where="post", color=colors[g], linewidth=1.0)
            if not drops.empty:
                ax.plot(drops["t"], np.ones(len(drops)), transform=ax.get_xaxis_transform(), marker="v",
                        color="red", linestyle="none", markersize=5, clip_on=False,
                        label=f"drops ({len(drops) if per_packet else int(drops['value'].sum())})")
                _legend(ax)
            ax.set_xlim(w0, w0 + wlen)
            ax.grid(alpha=0.3)
            ax.set_title((f"{ctx.get('group', 'qdisc')} = {g}, " if g is not None else "") + f"t ∈ [{w0:.3g}, {w0 + wlen:.3g}) s", fontsize=9)
            if r == len(groups) - 1:
                ax.set_xlabel(ctx.get("xlabel", "time (s)"))
            if c == 0:
                ax.set_ylabel(ctx.get("ylabel", axis_label("queue delay", unit)))
    return _finish(fig, ctx, title, f"({note})")


def plot_state_trace(store: StoreLike, spec: dict, experiment: Any = None) -> Figure:
    """Qdisc state variables (count, p, …) vs time; see the module doc. One row per
    metric, one column per ``facet`` value, one colour per ``group`` value."""
    ctx = _ctx(store, {"of": "queue", "entity": "bottleneck_down", **spec}, experiment)
    wanted = _as_list(spec.get("metrics", ["count", "p"]))
    df = _one_rep_samples(ctx, "samples", wanted, of="queue")
    title = f"{ctx.exp}: state of {ctx.get('entity')}"
    present = [m for m in wanted if not df.empty and (df["metric"] == m).any()]
    if not present:
        return _empty_figure(ctx, title, f"no state traces {wanted} for {ctx.get('entity')!r} (does the link set trace = true?)")
    gcol = ctx.group_col(df)
    fcol, facets = _facets(ctx, df)
    groups = ctx.levels(df, gcol)
    colors = _colors(groups)
    fig, axes = _new_figure(ctx, len(present), len(facets), sharex=True)
    for r, m in enumerate(present):
        dm = df[df["metric"] == m]
        for c, fv in enumerate(facets):
            ax = axes[r][c]
            sub = _match(dm, fcol, fv)
            for g in groups:
                gs = _match(sub, gcol, g).sort_values("t")
                if gs.empty:
                    continue
                t, v = gs["t"].to_numpy(), gs["value"].to_numpy()
                if ctx.run_length is not None and t[-1] < ctx.run_length:
                    # samples are written when a variable changes: hold the last value to the run's end
                    t, v = np.append(t, ctx.run_length), np.append(v, v[-1])
                ax.step(t, v, where="post", color=colors[g], label=None if g is None else str(g), linewidth=1.0)
            if not ax.lines:
                _no_data(ax, f"no {m!r} trace")
                continue
            if c == 0:
                ax.set_ylabel(ctx.get("ylabel", readable(m)))
            ax.grid(alpha=0.3)
            if r == 0:
                _facet_title(ax, ctx.get("facet"), fv)
            if fcol is None:
                _legend(ax, ctx.get("group", "qdisc") if gcol else None)
    if fcol is not None:  # one legend for the panels, right of them
        _outside_legend(fig, axes.ravel(), ctx.get("group", "qdisc") if gcol else None)
    for ax in axes[-1]:
        ax.set_xlabel(ctx.get("xlabel", "time (s)"))
    return _finish(fig, ctx, title)


def plot_drop_rate(store: StoreLike, spec: dict, experiment: Any = None) -> Figure:
    """TEWMA of drop events, point-wise mean over repetitions; see the module doc."""
    ctx = _ctx(store, {"of": "queue", "entity": "bottleneck_down", **spec}, experiment)
    memory = float(spec.get("memory", 0.5))
    step = float(spec.get("step", 0.05))
    dmetric = spec.get("drop_metric", "drop")
    title = f"{ctx.exp}: drop rate at {ctx.get('entity')} (TEWMA, memory {memory:g} s)"
    ev = _entity_samples(ctx, "samples", dmetric, of="queue")
    source = "drop events"
    if ev.empty:
        ser = _entity_samples(ctx, "series", "drops", of="queue")
        if ser.empty:
            return _empty_figure(ctx, title, f"no {dmetric!r} samples and no drops series for {ctx.get('entity')!r}")
        # per-bin counts: spread each bin's drops evenly over the bin
        width = float(np.median(np.diff(np.unique(ser["t"])))) if ser["t"].nunique() > 1 else 1.0
        rows = []
        for (rid,), g in ser.groupby(["run_id"]):
            n = np.round(g["value"].fillna(0).to_numpy()).astype(int)
            t = np.concatenate([b + (np.arange(k) + 0.5) * width / k for b, k in zip(g["t"].to_numpy(), n) if k > 0]) if n.sum() else np.array([])
            rows.append(pd.DataFrame({"run_id": rid, "t": t}).assign(**{c: g[c].iloc[0] for c in g.columns if c.startswith("p_")}))
        ev = pd.concat(rows, ignore_index=True)
        source = f"drops per {width:g} s bin, spread evenly"
    gcol = ctx.group_col(ev)
    fcol, facets = _facets(ctx, ev)
    groups = ctx.levels(ev, gcol)
    colors = _colors(groups)
    t_end = float(ctx.get("before", ev["t"].max() if len(ev) else 1.0))
    grid = np.arange(float(ctx.get("after", 0.0)), t_end + step / 2, step)
    fig, axes = _new_figure(ctx, 1, len(facets), sharey=True)
    for ax, fv in zip(axes[0], facets):
        sub = _match(ev, fcol, fv)
        for g in groups:
            gs = _match(sub, gcol, g)
            curves = [metrics.tewma(r["t"].to_numpy(), grid, memory) for _, r in gs.groupby("run_id")]
            if not curves:
                continue
            mean, _ = metrics.pointwise_mean(curves)
            ax.plot(grid, mean, color=colors[g], label=None if g is None else f"{g} (n={len(curves)})", linewidth=1.2)
        ax.set_xlabel(ctx.get("xlabel", "time (s)"))
        ax.set_ylabel(ctx.get("ylabel", "drop rate (1/s)"))
        ax.grid(alpha=0.3)
        _facet_title(ax, ctx.get("facet"), fv)
        _legend(ax, ctx.get("group", "qdisc") if gcol else None)
    return _finish(fig, ctx, title, f"(from {source})")


def plot_line(store: StoreLike, spec: dict, experiment: Any = None) -> Figure:
    """A measure vs a numeric axis, one line per group (mean ± sd); see the module doc."""
    ctx = _ctx(store, spec, experiment)
    x, y = spec["x"], spec["y"]
    runs = ctx.runs()
    title = f"{ctx.exp}: {readable(y)} vs {readable(x)}"
    if runs.empty or y not in runs.columns:
        return _empty_figure(ctx, title, f"no values of {y!r} in experiment {ctx.exp!r}")
    xcol = ctx.col(runs, x, "x")
    gcol = ctx.group_col(runs)
    if gcol == xcol:
        gcol = None
    fcol, facets = _facets(ctx, runs)
    groups = ctx.levels(runs, gcol)
    colors = _colors(groups)
    ys_, yu = ctx.scale("y", y)
    xlevels = ctx.levels(runs, xcol)
    xu = str(ctx.get("x_unit", label_unit(xlevels)))
    fig, axes = _new_figure(ctx, 1, len(facets), sharey=True)
    for ax, fv in zip(axes[0], facets):
        sub = _match(runs, fcol, fv)
        missing: list[str] = []
        for g in groups:
            gs = _match(sub, gcol, g)
            if gs.empty:
                continue
            gs = gs.assign(_x=gs[xcol].map(label_value), _y=gs[y].astype(float) * ys_)
            # axis values run but without a value (e.g. no page finished at 1 Mbit/s)
            # are said on the figure, never dropped silently
            have = set(gs.dropna(subset=["_y"])[xcol].astype(str))
            missing += [f"{lv}" + (f" ({g})" if g is not None else "") for lv in dict.fromkeys(gs[xcol].astype(str)) if lv not in have]
            gs = gs.dropna(subset=["_x", "_y"])
            st = gs.groupby("_x")["_y"].agg(["mean", lambda v: _mean_ci(v.to_numpy(dtype=float)).half]).sort_index()
            st.columns = ["mean", "std"]  # "std": the 95 % CI half-width of the mean
            if st.empty:
                continue
            ax.errorbar(st.index, st["mean"], yerr=st["std"].fillna(0), marker="o", markersize=4, capsize=3,
                        color=colors[g], label=None if g is None else str(g), linewidth=1.2)
        if not ax.lines:
            _no_data(ax, f"axis {x!r} has no numeric labels or {y!r} is NaN")
            continue
        if ctx.get("diagonal"):
            lo, hi = ax.get_xlim()
            ax.plot([lo, hi], [lo, hi], linestyle="--", color="0.35", linewidth=1.0, label=str(ctx.get("diagonal")) if isinstance(ctx.get("diagonal"), str) else "y = x")
            ax.set_xlim(lo, hi)
        if missing:
            ax.text(0.02, 0.98, f"no {readable(y)} at {x} = " + ", ".join(missing), transform=ax.transAxes, ha="left", va="top",
                    fontsize=8, color="#8b0000", bbox=dict(boxstyle="round", facecolor="white", edgecolor="#8b0000", alpha=0.9))
        ax.set_xlabel(ctx.get("xlabel", axis_label(x, xu)))
        ax.set_ylabel(ctx.get("ylabel", axis_label(y, yu)))
        ax.grid(alpha=0.3)
        _facet_title(ax, ctx.get("facet"), fv)
    # one legend right of the panels: lines fill the whole plane, a legend inside covers them
    _outside_legend(fig, axes[0], ctx.get("group", "qdisc") if gcol else None)
    return _finish(fig, ctx, title)


def plot_box(store: StoreLike, spec: dict, experiment: Any = None) -> Figure:
    """Box plots of per-interval values, one panel per entry of ``panels`` and one box
    per group (Flent's ``box_totals`` of an RRUL test: download, upload, latency); see
    the module doc."""
    ctx = _ctx(store, spec, experiment)
    panels = spec["panels"]
    if not isinstance(panels, list) or not panels or not all(isinstance(p, dict) for p in panels):
        raise FigureSpecError("panels: a list of tables, each with a `metric`")
    allowed = {"metric", "source", "of", "entity", "flow_kind", "direction", "agg", "bin", "minus_base", "label", "logy", "after"}
    for i, p in enumerate(panels):
        if "metric" not in p:
            raise FigureSpecError(f"panels[{i}]: needs key 'metric'")
        bad = sorted(set(p) - allowed)
        if bad:
            raise FigureSpecError(f"panels[{i}]: unknown key(s) {bad} (allowed: {', '.join(sorted(allowed))})")
    title = f"{ctx.exp}: " + ", ".join(readable(p.get("label", p["metric"])) for p in panels)
    fig, axes = _new_figure(ctx, 1, len(panels))
    warm = None
    for ax, p in zip(axes[0], panels):
        pctx = _Ctx(store, {**{k: v for k, v in spec.items() if k not in ("panels",)}, **p}, ctx.exp, ctx.axes, ctx.quick)
        metric = p["metric"]
        source = p.get("source", "series" if metric in SERIES_METRICS else "samples")
        width = float(p.get("bin", 0.2)) if source == "samples" else (float(p["bin"]) if "bin" in p else None)

        def reduce(d: pd.DataFrame, p: dict = p, metric: str = metric, width: float | None = width) -> pd.DataFrame:
            # per chunk of runs as the rows stream: each run's per-interval values
            d = _minus_base(d, p.get("minus_base"), metric)
            if p.get("after") is not None:
                d = d[d["t"] >= float(p["after"])]
            if d.empty:
                return d
            ident = [c for c in d.columns if c.startswith("p_") or c in ("experiment", "repetition", "seed")]
            b = _per_run_bins(d, width, p.get("agg", "mean"))
            return b.merge(d[["run_id", *ident]].drop_duplicates("run_id"), on="run_id", how="left")

        df = _entity_samples(pctx, source, metric, per_run=reduce)
        label = p.get("label", readable(metric))
        if df.empty:
            _no_data(ax, f"no {source} of {metric!r}")
            ax.set_title(label, fontsize=10)
            continue
        gcol = pctx.group_col(df)
        groups = ctx.levels(df, gcol)
        sc, unit = unit_for(metric)
        data, names = [], []
        for g in groups:
            gs = _match(df, gcol, g)
            v = gs["value"].to_numpy(dtype=float) * sc if not gs.empty else np.array([])
            data.append(v[np.isfinite(v)])
            names.append("" if g is None else str(g))
        colors = _colors(groups)
        bp = ax.boxplot(data, whis=(5, 95), showfliers=False, patch_artist=True, widths=0.6)
        for patch, g in zip(bp["boxes"], groups):
            patch.set_facecolor((*colors[g][:3], 0.35))
            patch.set_edgecolor(colors[g])
        ax.set_xticks(np.arange(1, len(names) + 1))
        ax.set_xticklabels(names, rotation=30 if len(names) > 4 else 0, ha="right" if len(names) > 4 else "center")
        ax.set_ylabel(axis_label(label, unit))
        ax.set_title(label, fontsize=10)
        if p.get("logy"):
            ax.set_yscale("log")
        ax.grid(alpha=0.3, axis="y")
        warm = True
    note = "(boxes: 25–75 %, whiskers: 5–95 % of the per-interval values, all runs pooled)" if warm else None
    return _finish(fig, ctx, title, note)


FIGURE_TYPES: dict[str, Callable[..., Figure]] = {
    "ellipse": plot_ellipse,
    "cdf": plot_cdf,
    "timeseries": plot_timeseries,
    "bar": plot_bar,
    "flows_vs_rtt": plot_flows_vs_rtt,
    "queue_delay": plot_queue_delay,
    "state_trace": plot_state_trace,
    "drop_rate": plot_drop_rate,
    "line": plot_line,
    "box": plot_box,
}


# ---------------------------------------------------------------------------------
# dispatch and rendering


def _ctx(store: StoreLike, spec: dict, experiment: Any) -> _Ctx:
    """experiment: an :class:`aqmlab.study.Experiment` (gives the default experiment name
    and the axis order), an experiment name, or None (then spec["experiment"] or the
    only experiment in the store)."""
    axes: dict[str, list[str]] = {}
    quick, run_length = None, None
    name = spec.get("experiment")
    if experiment is not None and not isinstance(experiment, str):
        if name is None or name == experiment.name:
            axes = {a.name: [v.label for v in a.values] for a in experiment.axes}
            quick, run_length = _quick_note(experiment), _run_length(experiment)
        name = name or experiment.name
    elif isinstance(experiment, str):
        name = name or experiment
    if name is None:
        runs = _table(store, "runs")
        exps = list(dict.fromkeys(runs["experiment"])) if "experiment" in runs.columns else []
        if len(exps) > 1:
            raise FigureSpecError(f"experiment: the store holds several experiments {exps}; name one")
        name = exps[0] if exps else None
    return _Ctx(store, spec, name, axes, quick, run_length)


def _run_length(experiment: Any) -> float | None:
    """The longest run duration (s) of the experiment's combinations, None if unknown."""
    from aqmlab.study import _parse_duration

    try:
        return max(_parse_duration(experiment.scenario(p).get("run", {}).get("duration", 10.0), "run.duration")
                   for p in experiment.combinations())
    except Exception:  # noqa: BLE001 - only used to word a message
        return None


def _quick_scales(experiment: Any) -> tuple[set[float], set[float]]:
    """(run durations, time scale factors) of a quick-mode experiment's runs: quick mode
    caps each run and scales its times by capped / full duration (study._cap_durations)."""
    from aqmlab.study import _parse_duration

    durs: set[float] = set()
    scales: set[float] = set()
    full = dataclasses.replace(experiment, cap=None)
    for params in experiment.combinations():
        d = _parse_duration(experiment.scenario(params).get("run", {}).get("duration", 10.0), "run.duration")
        durs.add(d)
        d_full = _parse_duration(full.scenario(params).get("run", {}).get("duration", 10.0), "run.duration")
        if d_full > d:
            scales.add(d / d_full)
    return durs, scales


def _quick_note(experiment: Any) -> str | None:
    """"quick mode: 25 s runs, 1 repetition" for an experiment whose durations quick mode
    capped (None in full mode), so that a title written for the full study ("over
    500 s") is not read as what was drawn."""
    if getattr(experiment, "cap", None) is None:
        return None

    try:
        durs, scales = _quick_scales(experiment)
    except Exception:  # noqa: BLE001 - a note, never a reason to fail a figure
        return None
    if not durs:
        return None
    lo, hi = min(durs), max(durs)
    runs = f"{lo:g} s runs" if lo == hi else f"runs of {lo:g}–{hi:g} s"
    reps = int(getattr(experiment, "repetitions", 1))
    note = f"quick mode: {runs}, {reps} repetition{'s' if reps != 1 else ''}"
    # quick mode scales flows' start/stop times with the run (study._cap_durations): say
    # so, since a title's times ("active 500-1500 s") are the full study's
    if len(scales) == 1:
        note += f", all times × {round(next(iter(scales)), 4):g}"
    elif scales:
        note += ", all times scaled to the shorter runs"
    return note


def figure(store: StoreArg, spec: dict, experiment: Any = None) -> Figure:
    """Draws one figure from a spec (see the module doc for the keys)."""
    validate_spec(spec)
    return FIGURE_TYPES[spec["type"]](_as_store(store), spec, experiment)


def _error_figure(message: str) -> Figure:
    fig = Figure(figsize=(6, 2.5), layout="constrained")
    ax = fig.subplots()
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, fontsize=9, color="#8b0000", wrap=True)
    ax.set_axis_off()
    return fig


@dataclasses.dataclass
class FigureRecord:
    """One rendered figure of a study: where it came from and where it went."""

    experiment: str
    index: int
    name: str
    spec: dict
    png: pathlib.Path
    svg: pathlib.Path | None
    error: str | None = None


def _stem(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_") or "figure"


#: figure types that stream per-run samples or series (the slow ones): a parallel render
#: starts them first, so that the longest does not start last
_STREAMING_TYPES = ("cdf", "timeseries", "queue_delay", "state_trace", "drop_rate", "box")


def _figure_tasks(study: Any) -> list[tuple[Any, int, dict, str]]:
    """(experiment, index, spec, file stem) of every figure of the study, in study order
    (a stem already taken gets a ``_`` appended)."""
    tasks = []
    used: set[str] = set()
    for e in study.experiments:
        for i, spec in enumerate(e.figures):
            name = _stem(str(spec.get("name", f"{e.name}-{spec.get('type', 'figure')}-{i + 1}")))
            while name in used:
                name += "_"
            used.add(name)
            tasks.append((e, i, spec, name))
    return tasks


def _render_one(store: StoreLike, e: Any, i: int, spec: dict, name: str, out: pathlib.Path, formats: tuple[str, ...],
                strict: bool, dpi: int) -> FigureRecord:
    """Draws one figure of experiment `e` and writes its files (see :func:`render_figure_records`)."""
    err = None
    try:
        validate_spec(spec, f"experiment {e.name!r} figure[{i}]")
        fig = FIGURE_TYPES[spec["type"]](store, spec, e)
    except Exception as ex:  # noqa: BLE001 - reported in the figure itself
        if strict:
            raise
        err = f"{type(ex).__name__}: {ex}"
        fig = _error_figure(f"figure {name} could not be drawn\n{err}")
    png = out / f"{name}.png"
    fig.savefig(png, dpi=dpi)
    svg = None
    if "svg" in formats:
        svg = out / f"{name}.svg"
        fig.savefig(svg)
    return FigureRecord(e.name, i, name, dict(spec), png, svg, err)


#: the store a figure worker process has opened, by path (its runs table is read once
#: per worker, not once per figure)
_WORKER_STORES: dict[str, StoreLike] = {}


def _render_in_worker(path: str, e: Any, i: int, spec: dict, name: str, out: pathlib.Path, formats: tuple[str, ...],
                      strict: bool, dpi: int) -> FigureRecord:
    if path not in _WORKER_STORES:
        from aqmlab.store import load

        _WORKER_STORES[path] = load(path)
    return _render_one(_WORKER_STORES[path], e, i, spec, name, out, formats, strict, dpi)


class FigureJob:
    """The figures of a study being rendered: on `jobs` worker processes when the store
    is a store on disk and there is more than one figure (each worker opens the store
    itself), else in this process when :meth:`result` is called. The caller may do other
    work (the report's tables and findings) before asking for the records. Each figure
    is drawn by the same code either way, so the files are the same; the records come
    back in study order."""

    def __init__(self, store: StoreArg, study: Any, outdir: str | pathlib.Path, formats: tuple[str, ...] = ("png", "svg"),
                 strict: bool = False, dpi: int = 110, jobs: int | None = 1) -> None:
        from aqmlab.store import Store

        self.store = _as_store(store)
        self.study = _study_of(self.store, study)
        self.out = pathlib.Path(outdir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.formats, self.strict, self.dpi = formats, strict, dpi
        self.tasks = _figure_tasks(self.study)
        n = min(jobs or os.cpu_count() or 1, len(self.tasks))
        self.pool: Any = None
        self.futures: dict[int, Any] = {}
        if n > 1 and isinstance(self.store, Store):
            self.pool = procs.pool(n)
            first = sorted(range(len(self.tasks)), key=lambda k: self.tasks[k][2].get("type") not in _STREAMING_TYPES)
            path = str(self.store.path)
            for k in first:
                e, i, spec, name = self.tasks[k]
                self.futures[k] = self.pool.submit(_render_in_worker, path, e, i, spec, name, self.out, formats, strict, dpi)

    def result(self) -> list[FigureRecord]:
        """The records of every figure, in study order (waits for the workers). A figure
        whose worker process died is drawn here instead."""
        from concurrent.futures.process import BrokenProcessPool

        try:
            recs = []
            for k, (e, i, spec, name) in enumerate(self.tasks):
                fut = self.futures.get(k)
                rec = None
                if fut is not None:
                    try:
                        rec = fut.result()
                    except BrokenProcessPool:
                        rec = None
                if rec is None:
                    rec = _render_one(self.store, e, i, spec, name, self.out, self.formats, self.strict, self.dpi)
                recs.append(rec)
            return recs
        finally:
            self.close()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


def render_figure_records(store: StoreArg, study: Any, outdir: str | pathlib.Path, formats: tuple[str, ...] = ("png", "svg"),
                          strict: bool = False, dpi: int = 110, jobs: int | None = 1) -> list[FigureRecord]:
    """Renders every ``[[experiment.figure]]`` of `study` into `outdir` and describes
    each result. With strict=False a bad spec or a plotting failure gives a figure
    that shows the error instead of raising. `jobs`: worker processes that draw the
    figures of a store on disk side by side (None: one per CPU; 1: in this process);
    the files are the same either way."""
    return FigureJob(store, study, outdir, formats, strict, dpi, jobs).result()


def render_figures(store: StoreArg, study: Any, outdir: str | pathlib.Path, formats: tuple[str, ...] = ("png", "svg"),
                   strict: bool = False, jobs: int | None = 1) -> list[pathlib.Path]:
    """Renders every figure of the study as PNG + SVG; returns the written paths.

    store: an :class:`aqmlab.store.Store` or a result directory; study: an
    :class:`aqmlab.study.Study`, or None to use the study text saved in the store."""
    recs = render_figure_records(store, study, outdir, formats, strict, jobs=jobs)
    return [p for r in recs for p in (r.png, r.svg) if p is not None]


def _as_store(store: StoreArg) -> StoreLike:
    if isinstance(store, (str, os.PathLike)):
        from aqmlab.store import load

        return load(store)
    return store


def _study_of(store: StoreLike, study: Any):
    """Resolves (store, study) arguments: loads the store if given a path and parses the
    store's saved study text if study is None."""
    from aqmlab.study import Study, parse_study

    if isinstance(study, Study):
        return study
    text = getattr(store, "study_text", "")
    if study is None and text:
        quick = bool(getattr(store, "provenance", {}).get("quick", False))
        parsed = parse_study(text, quick=quick, source="study.toml (from the store)")
        if any(e.optional for e in parsed.experiments):
            # optional experiments (variants run with --only) count when the store has runs of them
            try:
                present = set(store.runs["experiment"].astype(str))
            except Exception:  # no runs table yet: the default experiments only
                present = set()
            parsed = parsed.without([e.name for e in parsed.experiments if e.optional and e.name not in present])
        return parsed
    if isinstance(study, str):
        from aqmlab.study import load_study

        return load_study(study)
    raise ValueError("no study given and the store holds no study text")
