"""The figure types: one function per type, each drawing a matplotlib
:class:`~matplotlib.figure.Figure` from a store and a spec (keys: :mod:`aqmlab.plots.spec`)."""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Ellipse

from aqmlab import metrics
from aqmlab._fmt import axis_label, label_unit, label_value, readable, unit_for
from aqmlab.plots.select import (
    _as_list,
    _Ctx,
    _ctx,
    _entity_samples,
    _match,
    _minus_base,
    _one_rep_samples,
    _per_run_bins,
    _pick_flows,
    _quick_scales,
    resample_rows,
)
from aqmlab.plots.spec import _LATENCY_WORDS, _MARKERS, SERIES_METRICS, FigureSpecError
from aqmlab.stats import mean_ci as _mean_ci
from aqmlab.stats import t975 as _t975
from aqmlab.store import StoreLike

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
    import textwrap

    t = ctx.get("title", title)
    notes = [n for n in (note, f"({ctx.quick})" if ctx.quick else None) if n]
    size = 11 if not notes else 10
    # each line wrapped to the figure's width (a narrow bar chart cut its notes off)
    chars = max(30, int(fig.get_figwidth() * 72 / (0.55 * size)))
    fig.suptitle("\n".join(textwrap.fill(line, chars) for line in [t] + notes), fontsize=size)
    for ax in fig.axes:
        if ctx.get("xlim") is not None:
            ax.set_xlim(*ctx.get("xlim"))
        if ctx.get("ylim") is not None:
            ax.set_ylim(*ctx.get("ylim"))
        if ctx.get("logx"):
            ax.set_xscale("log")
        if ctx.get("logy"):
            ax.set_yscale("log")
        _plain_numbers(ax, widen=ctx.get("ylim") is None)
    return fig


#: a linear axis whose values differ by less than this fraction of their size is widened
#: to it: differences of 10⁻⁵ (Jain's index 0.99999 vs 0.99998) are noise, not a result
MIN_RELATIVE_SPAN = 1e-3


def _plain_numbers(ax: Any, widen: bool = True) -> None:
    """Tick labels as plain numbers, never matplotlib's offset notation ("1e-5+9.9999e-1"
    above the axis, which reads as a range of -0.4 to 1.0); and, with `widen`, a linear y
    axis spanning less than :data:`MIN_RELATIVE_SPAN` of its values' size widened to that
    span around its middle, so that noise in the last digits is not drawn as a trend."""
    from matplotlib.ticker import ScalarFormatter

    for axis in (ax.xaxis, ax.yaxis):
        fmt = axis.get_major_formatter()
        if isinstance(fmt, ScalarFormatter):
            fmt.set_useOffset(False)
    if not widen or ax.get_yscale() != "linear" or not (ax.lines or ax.collections or ax.patches):
        return
    y0, y1 = ax.get_ylim()  # y0 > y1 on a flipped axis (the ellipse's latency)
    lo, hi = min(y0, y1), max(y0, y1)
    mid, size = (lo + hi) / 2, max(abs(lo), abs(hi))
    if size > 0 and hi - lo < MIN_RELATIVE_SPAN * size:
        half = MIN_RELATIVE_SPAN * size / 2
        ax.set_ylim((mid + half, mid - half) if y0 > y1 else (mid - half, mid + half))


def _colors(levels: list) -> dict:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(levels) <= 10 else "tab20"]
    return {lv: cmap(i % cmap.N) for i, lv in enumerate(levels)}


_LINESTYLES = ("-", "--", "-.", ":")
_LINE_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def _styles(levels: list) -> dict:
    """Per group: colour, line style and marker, each group a different combination, so
    that groups whose lines coincide (fq_codel, CAKE and SFQ at a few milliseconds) stay
    visible and the figure still reads in grey."""
    colors = _colors(levels)
    return {lv: dict(color=colors[lv], linestyle=_LINESTYLES[i % len(_LINESTYLES)],
                     marker=_LINE_MARKERS[i % len(_LINE_MARKERS)]) for i, lv in enumerate(levels)}


def _marked(styles: dict, groups: list, g: Any, n: int) -> dict:
    """Line keywords of group `g` for a line of `n` points: its style with about 8
    markers, staggered between groups so that markers of coinciding lines do not sit
    on each other; a single group's line has no markers (nothing to tell apart)."""
    if len(groups) <= 1:
        return {**styles[g], "marker": "None"}
    step = max(1, n // 8)
    i = groups.index(g) if g in groups else 0
    return {**styles[g], "markevery": ((i * step) // len(groups), step), "markersize": 4, "fillstyle": "none"}

#: a delay axis switches to a logarithmic scale when the values drawn span more decades
#: than this (1st to 99th percentile of the positive values)
LOG_DECADES = 2.0


def _is_time(name: Any) -> bool:
    return unit_for(str(name))[1] == "ms"


def _auto_log(ctx: _Ctx, which: str, name: Any, values: Any) -> bool:
    """Whether axis `which` ("x"/"y") of quantity `name` is logarithmic: the spec's
    ``logx``/``logy`` when given, else true for a time quantity (delay, RTT, sojourn)
    whose drawn values span more than :data:`LOG_DECADES` decades and are nearly all
    positive (a log axis cannot show zero or below)."""
    key = f"log{which}"
    if key in ctx.spec:
        return bool(ctx.spec[key])
    if not _is_time(name):
        return False
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    if v.size < 2 or np.mean(v <= 0) > 0.05:
        return False
    lo, hi = np.percentile(v[v > 0], [1, 99])
    return bool(lo > 0 and math.log10(hi / lo) > LOG_DECADES)


def _window(ctx: _Ctx) -> str:
    """", t = 5–20 s" for a figure restricted by ``after``/``before`` ("" otherwise)."""
    a, b = ctx.get("after"), ctx.get("before")
    if a is None and b is None:
        return ""
    if b is None:
        return f", t ≥ {float(a):g} s"
    return f", t = {float(a or 0):g}–{float(b):g} s"


def _interval(v: np.ndarray) -> float:
    """Half-width of the 95 % confidence interval of the mean (Student t) of the
    repetitions `v`; NaN below 3 values (from 2 values t = 12.7 gives an interval that
    says nothing but "2 values")."""
    v = v[np.isfinite(v)]
    return float(_mean_ci(v).half) if v.size >= 3 else math.nan


def _interval_note(ns: Iterable[int]) -> str:
    """What the whiskers of a mean-over-repetitions figure are, for its caption."""
    ns = sorted({int(n) for n in ns if n})
    if not ns:
        return ""
    nt = f"n = {ns[0]}" if len(ns) == 1 else f"n = {ns[0]}–{ns[-1]}"
    if ns[-1] == 1:
        return "(one repetition each: no interval)"
    if ns[-1] < 3:
        return f"(mean of {nt} repetitions, each repetition a dot; no interval from fewer than 3)"
    low = " (none where n < 3)" if ns[0] < 3 else ""
    return f"(whiskers: 95 % confidence interval of the mean, Student t over {nt} repetitions{low})"


def _ellipse_patch(pts: np.ndarray, logx: bool, logy: bool, color: Any):
    """The 1-σ covariance ellipse of `pts` (None below 3 points: a covariance from 2
    points is a line through them). On a log axis the ellipse is computed on the
    logarithm of the values and drawn as a polygon, so that it keeps its shape."""
    from matplotlib.patches import Polygon

    if len(pts) < 3:
        return None
    q = pts.astype(float).copy()
    for k, lg in ((0, logx), (1, logy)):
        if lg:
            if np.any(q[:, k] <= 0):
                return None
            q[:, k] = np.log10(q[:, k])
    cov = np.cov(q, rowvar=False)
    if not np.all(np.isfinite(cov)):
        return None
    vals, vecs = np.linalg.eigh(cov)
    vals = np.clip(vals, 0, None)
    face, edge = (*color[:3], 0.18), color
    if not logx and not logy:
        angle = math.degrees(math.atan2(vecs[1, -1], vecs[0, -1]))
        return Ellipse(q.mean(axis=0), 2 * math.sqrt(vals[-1]), 2 * math.sqrt(vals[0]), angle=angle,
                       facecolor=face, edgecolor=edge, linewidth=1.2)
    th = np.linspace(0, 2 * math.pi, 121)
    ring = q.mean(axis=0) + (vecs @ (np.sqrt(vals)[:, None] * np.vstack([np.cos(th), np.sin(th)]))).T
    for k, lg in ((0, logx), (1, logy)):
        if lg:
            ring[:, k] = 10 ** ring[:, k]
    return Polygon(ring, closed=True, facecolor=face, edgecolor=edge, linewidth=1.2)


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


def pooled_axis_advice(axis: str, keys: tuple[str, ...] = ("x", "hue", "facet")) -> str:
    """The end of the message that refuses a figure pooling runs that differ in ``axis``;
    `keys`: the figure's keys that can show an axis."""
    return (f"which this figure neither shows ({', '.join(keys)}) nor fixes: add where = {{ {axis} = ... }} or show it as "
            f"{', '.join(keys[:-1])} or {keys[-1]}")


#: the spec keys that show an axis, per figure type that refuses pooled axes
SHOWN_BY = {"bar": ("x", "hue", "facet"), "timeseries": ("group", "facet")}


def _refuse_pooled_axes(df: pd.DataFrame, used: list[str | None], kind: str) -> None:
    """A mean and CI "over repetitions" must not pool runs that differ in an axis the
    figure does not show (the residential web figure pooled its two cross-traffic
    conditions into one bar and drew their spread as if it were run-to-run noise)."""
    shown = {c for c in used if c}
    for col in [c for c in df.columns if c.startswith("p_") and c not in shown]:
        levels = sorted({str(v) for v in df[col].dropna()})
        if len(levels) > 1:
            axis = col[2:]
            raise FigureSpecError(f"{kind}: runs differ in axis {axis!r} ({', '.join(levels)}), "
                                  f"{pooled_axis_advice(axis, SHOWN_BY.get(kind, SHOWN_BY['bar']))}")


def _empty_figure(ctx: _Ctx, title: str, message: str) -> Figure:
    fig, axes = _new_figure(ctx)
    _no_data(axes[0][0], message)
    return _finish(fig, ctx, title)


# ---------------------------------------------------------------------------------
# figure types


def _split_measures(ctx: _Ctx, runs: pd.DataFrame, fcol: str | None, facets: list, names: list[str]) -> bool:
    """Whether the measures of a list (both directions' goodput) get a row of panels
    each: the spec's ``split``, else ("auto") when in some facet their medians differ by
    more than 3× (a 10/1 link: the upload squeezed into the download's axis)."""
    split = ctx.get("split", "auto")
    if split not in ("auto", True, False):
        raise FigureSpecError(f"split: {split!r} is not allowed (true, false, \"auto\")")
    if split != "auto" or len(names) < 2:
        return bool(split) and len(names) > 1
    for fv in facets:
        sub = _match(runs, fcol, fv)
        med = [float(np.nanmedian(sub[n].astype(float))) for n in names if n in sub.columns and sub[n].notna().any()]
        med = [abs(m) for m in med if m != 0]
        if len(med) > 1 and max(med) / min(med) > 3:
            return True
    return False


def plot_ellipse(store: StoreLike, spec: dict, experiment: Any = None) -> Figure:
    """Latency–goodput ellipses; see :mod:`aqmlab.plots.spec` for the keys."""
    ctx = _ctx(store, spec, experiment)
    xs, ys = _as_list(spec["x"]), _as_list(spec["y"])
    if len(xs) > 1 and len(ys) > 1:
        raise FigureSpecError("x, y: only one of them may be a list")
    listed = xs if len(xs) > 1 else ys
    runs = ctx.runs()
    title = f"{ctx.exp}: {' / '.join(map(readable, ys))} vs {' / '.join(map(readable, xs))}"
    if runs.empty:
        return _empty_figure(ctx, title, f"no runs of experiment {ctx.exp!r}")
    gcol = ctx.group_col(runs)
    fcol, facets = _facets(ctx, runs)
    groups = ctx.levels(runs, gcol)
    colors = _colors(groups)
    split = _split_measures(ctx, runs, fcol, facets, listed)
    # one row of panels per measure of the list when split, else one row with them all
    if split:
        rows = [[(xm, ys[0])] for xm in xs] if len(xs) > 1 else [[(xs[0], ym)] for ym in ys]
    else:
        rows = [[(x, y) for x in xs for y in ys]]
    fig, axes = _new_figure(ctx, len(rows), len(facets), sharey=not split or len(ys) == 1)
    flip = spec.get("flip")
    if flip is None:
        lat = lambda names: all(any(w in n for w in _LATENCY_WORDS) for n in names)  # noqa: E731
        flip = "y" if lat(ys) else "x" if lat(xs) else "none"
    # a latency axis spanning decades (FIFO's seconds beside fq_codel's milliseconds) is
    # logarithmic: on a linear axis the AQMs collapse onto one point
    def col_values(names: list[str], scale: float) -> np.ndarray:
        return np.concatenate([runs[n].astype(float).to_numpy() * scale for n in names if n in runs.columns] or [np.array([])])

    notes: list[str] = []
    for r, pairs in enumerate(rows):
        xname, yname = pairs[0]
        xs_, xu = ctx.scale("x", xname)
        ys_, yu = ctx.scale("y", yname)
        row_x = sorted({x for x, _ in pairs})
        row_y = sorted({y for _, y in pairs})
        logx = _auto_log(ctx, "x", xname, col_values(row_x, xs_))
        logy = _auto_log(ctx, "y", yname, col_values(row_y, ys_))
        for ax, fv in zip(axes[r], facets):
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
                    patch = _ellipse_patch(pts, logx, logy, colors[g])
                    if patch is not None:
                        ax.add_patch(patch)
                    drawn += 1
            if not drawn:
                _no_data(ax, f"measures {row_x + row_y} missing or NaN")
                continue
            if logx:
                ax.set_xscale("log")
            if logy:
                ax.set_yscale("log")
            ax.autoscale_view()
            ax.set_xlabel(ctx.get("xlabel", axis_label(" / ".join(row_x), xu)))
            ax.set_ylabel(ctx.get("ylabel", axis_label(" / ".join(row_y), yu)))
            if flip == "y":
                ax.yaxis.set_inverted(True)  # idempotent, unlike invert_yaxis on shared axes
            elif flip == "x":
                ax.xaxis.set_inverted(True)
            ax.grid(alpha=0.3, which="both" if (logx or logy) else "major")
            if r == 0:
                _facet_title(ax, ctx.get("facet"), fv)
        if (logx or logy) and "logarithmic latency axis" not in " ".join(notes):
            notes.append("logarithmic latency axis")
    keys = [c for c in (gcol, fcol) if c]
    n_per = [len(g) for _, g in runs.groupby(keys)] if keys else [len(runs)]
    if n_per and max(n_per) < 3:
        notes.append(f"no ellipse: {max(n_per)} repetition{'s' if max(n_per) != 1 else ''} per point, 3 needed")
    elif n_per:
        notes.append("ellipse: 1 standard deviation of the repetitions")
    # One legend for all panels, outside the data (right of the panels): with 7 schemes
    # a legend inside an axes covers ellipses. With several measures per group on one
    # axis (both directions' goodput) it lists the colours and then the marker shapes,
    # not every combination (7 schemes × 2 directions would be 14 entries).
    if len(rows[0]) > 1 and gcol is not None:
        from matplotlib.lines import Line2D

        handles = [Line2D([], [], marker="o", linestyle="none", markersize=7, color=colors[g], markeredgecolor="black",
                          markeredgewidth=0.5, label=str(g)) for g in groups]
        handles += [Line2D([], [], marker=_MARKERS[pi % len(_MARKERS)], linestyle="none", markersize=7, color="0.55",
                           markeredgecolor="black", markeredgewidth=0.5, label=readable(xm if len(xs) > 1 else ym))
                    for pi, (xm, ym) in enumerate(rows[0])]
        fig.legend(handles=handles, loc="outside right lower", fontsize=8, title=spec.get("group", "qdisc"),
                   title_fontsize=8, frameon=True)
    else:
        _outside_legend(fig, axes.ravel(), spec.get("group", "qdisc") if gcol else None)
    if flip in ("x", "y"):
        notes.insert(0, "latency axis flipped: better is up and right")
    return _finish(fig, ctx, title, f"({'; '.join(notes)})" if notes else None)


def plot_cdf(store: StoreLike, spec: dict, experiment: Any = None) -> Figure:
    """CDF of a sample metric per group; see the module doc for the keys."""
    ctx = _ctx(store, spec, experiment)
    metric = spec["metric"]

    def reduce(d: pd.DataFrame) -> pd.DataFrame:  # per chunk of runs, as the samples stream
        d = _minus_base(d, spec.get("minus_base"), metric)
        return resample_rows(d, float(spec["resample"])) if spec.get("resample") else d

    df = _entity_samples(ctx, "samples", metric, per_run=reduce)
    title = f"{ctx.exp}: CDF of {'induced ' if spec.get('minus_base') else ''}{readable(metric)}" + _window(ctx)
    if df.empty:
        return _empty_figure(ctx, title, f"no {ctx.get('of', 'flow')} samples of {metric!r} in experiment {ctx.exp!r}")
    gcol = ctx.group_col(df)
    fcol, facets = _facets(ctx, df)
    groups = ctx.levels(df, gcol)
    styles = _styles(groups)
    sc, unit = ctx.scale("x", metric)
    fig, axes = _new_figure(ctx, 1, len(facets), sharey=True)
    # delays that span decades (FIFO's seconds, fq_codel's milliseconds) on a log axis:
    # on a linear one every AQM collapses onto one line at 0
    logx = _auto_log(ctx, "x", metric, df["value"].to_numpy(dtype=float) * sc)
    for ax, fv in zip(axes[0], facets):
        sub = _match(df, fcol, fv)
        drawn = 0
        for g in groups:
            v = _match(sub, gcol, g)["value"].to_numpy(dtype=float) * sc
            x, p = metrics.ecdf(v)
            if x.size == 0:
                continue
            ax.step(np.r_[x[0], x], np.r_[0.0, p], where="post", label=None if g is None else str(g), linewidth=1.4,
                    **_marked(styles, groups, g, x.size + 1))
            drawn += 1
        if not drawn:
            _no_data(ax, f"no samples of {metric!r}")
            continue
        if logx:
            ax.set_xscale("log")
        ax.set_xlabel(ctx.get("xlabel", axis_label(("induced " if spec.get("minus_base") else "") + metric, unit)))
        ax.set_ylabel(ctx.get("ylabel", "cumulative probability"))
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        _facet_title(ax, ctx.get("facet"), fv)
        if len(groups) <= 4 and fcol is None:
            _legend(ax, ctx.get("group", "qdisc") if gcol else None)
    if len(groups) > 4 or fcol is not None:  # many curves or panels: one legend right of them
        _outside_legend(fig, axes[0], ctx.get("group", "qdisc") if gcol else None)
    return _finish(fig, ctx, title, "(logarithmic delay axis)" if logx and "logx" not in spec else None)



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

    entities: set[int] = set()  # entities per run: a line is their mean (or sum) per bin

    def reduce(d: pd.DataFrame) -> pd.DataFrame:  # per run, as the rows stream: its bins
        d = _minus_base(d, spec.get("minus_base"), metric)
        entities.update(d.groupby("run_id", sort=False)["entity"].nunique().tolist())
        b = _per_run_bins(d, width, agg)
        ident = [c for c in d.columns if c.startswith("p_") or c in ("experiment", "repetition", "seed")]
        return b.merge(d[["run_id", *ident]].drop_duplicates("run_id"), on="run_id", how="left")

    df = _entity_samples(ctx, source, metric, per_run=reduce)
    of = ctx.get("of", "flow")
    n_ent = max(entities, default=1)
    each = (f"{'sum' if agg == 'sum' else 'mean'} of {n_ent if len(entities) == 1 else f'up to {n_ent}'} {of}s per run, "
            if n_ent > 1 else "")
    title = f"{ctx.exp}: {readable(metric)} over time ({each}mean of repetitions{_window(ctx)})"
    if df.empty:
        return _empty_figure(ctx, title, f"no {of} {source} of {metric!r} in experiment {ctx.exp!r}"
                             + (" (does the experiment set keep_series = true?)" if source == "series" else ""))
    gcol = ctx.group_col(df)
    fcol, facets = _facets(ctx, df)
    # the band is the spread over repetitions: runs of other conditions must not join it
    _refuse_pooled_axes(df, [gcol, fcol], "timeseries")
    groups = ctx.levels(df, gcol)
    colors = _colors(groups)
    styles = _styles(groups)
    sc, unit = ctx.scale("y", metric)
    fig, axes = _new_figure(ctx, 1, len(facets), sharey=True)
    logy = _auto_log(ctx, "y", metric, df["value"].to_numpy(dtype=float) * sc)
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
            ax.plot(t, mean, label=None if g is None else f"{g} (n={wide.shape[1]})", linewidth=1.3,
                    **_marked(styles, groups, g, t.size))
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
        if logy:
            ax.set_yscale("log")
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
    title = f"{ctx.exp}: {readable(y)} (mean over repetitions)"
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
    # a quantity spanning decades (delay under FIFO and under an AQM) gets a log axis;
    # bars on a log axis start at an arbitrary bottom, so their lengths mean nothing:
    # there each mean is a point with its interval
    logy = _auto_log(ctx, "y", y, df[y].astype(float).to_numpy() * sc)
    ns: list[int] = []
    for ax, fv in zip(axes[0], facets):
        sub = _match(df, fcol, fv)
        for hi, h in enumerate(hues):
            hs = _match(sub, hcol, h)
            means, lo, hi_, reps = [], [], [], []
            for c in cats:
                v = _match(hs, xcol, c)[y].astype(float).dropna().to_numpy() * sc
                m = v.mean() if v.size else np.nan
                half = _interval(v)
                ns.append(v.size)
                means.append(m)
                reps.append(v)
                hi_.append(0.0 if math.isnan(half) else half)
                # A quantity that cannot be negative (all values >= 0: goodput, delay, loss)
                # gets its lower whisker cut at 0: a t interval over 3 repetitions can
                # reach below zero, which reads as a measurement error (and on a log axis
                # off the axis).
                low = 0.0 if math.isnan(half) else half
                lo.append(min(low, m) if v.size and v.min() >= 0 else low)
                if logy and v.size and m - lo[-1] <= 0:
                    lo[-1] = 0.0
            pos = np.arange(len(cats)) + (hi - (len(hues) - 1) / 2) * width
            col = [colors[h]] * len(cats) if hcol else [colors[c] for c in cats]
            label = str(h) if hcol else None
            if logy:
                for k in range(len(cats)):
                    ax.errorbar(pos[k], means[k], yerr=[[lo[k]], [hi_[k]]], marker=_MARKERS[hi % len(_MARKERS)], markersize=7,
                                color=col[k], markeredgecolor="black", markeredgewidth=0.5, capsize=3, linestyle="none",
                                label=label if k == 0 else None)
            else:
                # no whisker at all where there is no interval (a cap on the bar's top reads as one)
                err = [lo, hi_] if any(hi_) else None
                ax.bar(pos, means, width * 0.95, yerr=err, color=col, capsize=3, edgecolor="black", linewidth=0.4,
                       label=label, error_kw=dict(linewidth=0.8))
            for k, v in enumerate(reps):  # 2 repetitions: the values themselves (1: the mean is the value)
                if v.size == 2:
                    ax.plot(np.full(v.size, pos[k]), v, linestyle="none", marker=".", markersize=5, color="black", alpha=0.7)
        if logy:
            ax.set_yscale("log")
        ax.set_xticks(np.arange(len(cats)))
        ax.set_xticklabels(
            [str(c) if c is not None else "" for c in cats], rotation=30 if len(cats) > 5 else 0, ha="right" if len(cats) > 5 else "center"
        )
        ax.set_xlabel(ctx.get("xlabel", axis_label(xname, label_unit(cats)) if xname else ""))
        ax.set_ylabel(ctx.get("ylabel", axis_label(y, unit)))
        ax.grid(alpha=0.3, axis="y", which="both" if logy else "major")
        _facet_title(ax, ctx.get("facet"), fv)
    if hcol:  # one legend right of the panels: inside, it covers bars
        _outside_legend(fig, axes[0], hname)
    note = _interval_note(ns)
    if logy and "logy" not in spec:
        note = note[:-1] + "; logarithmic axis)" if note else "(logarithmic axis)"
    return _finish(fig, ctx, title, note or None)


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
    styles = _styles(groups)
    ns: list[int] = []
    xs_, xu = ctx.scale("x", x)
    ys_, yu = ctx.scale("y", y)
    fig, axes = _new_figure(ctx, 1, len(facets), sharey=True)
    for ax, fv in zip(axes[0], facets):
        sub = _match(flows, fcol, fv)
        for g in groups:
            gs = _match(sub, gcol, g)
            if gs.empty:
                continue
            st = gs.groupby("name").agg(x=(x, "mean"), y=(y, "mean"), sd=(y, lambda v: _interval(v.to_numpy(dtype=float))),
                                        n=(y, "count")).sort_values("x")
            ns += st["n"].tolist()
            ax.errorbar(st["x"] * xs_, st["y"] * ys_, yerr=st["sd"].fillna(0) * ys_, markersize=4,
                        capsize=3, label=None if g is None else str(g), linewidth=1.2, **styles[g])
        ax.set_xlabel(ctx.get("xlabel", axis_label(x, xu)))
        ax.set_ylabel(ctx.get("ylabel", axis_label(y, yu)))
        ax.grid(alpha=0.3)
        _facet_title(ax, ctx.get("facet"), fv)
        if fcol is None:
            _legend(ax, ctx.get("group", "qdisc") if gcol else None)
    if fcol is not None:  # one legend right of the panels instead of one per panel
        _outside_legend(fig, axes[0], ctx.get("group", "qdisc") if gcol else None)
    return _finish(fig, ctx, title, _interval_note(ns) or None)



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
            ax.set_title(
                (f"{ctx.get('group', 'qdisc')} = {g}, " if g is not None else "") + f"t ∈ [{w0:.3g}, {w0 + wlen:.3g}) s", fontsize=9
            )
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
    styles = _styles(groups)
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
                t, v = gs["t"].to_numpy(), gs["value"].to_numpy() * unit_for(m)[0]
                if ctx.run_length is not None and t[-1] < ctx.run_length:
                    # samples are written when a variable changes: hold the last value to the run's end
                    t, v = np.append(t, ctx.run_length), np.append(v, v[-1])
                ax.step(t, v, where="post", label=None if g is None else str(g), linewidth=1.0,
                        **_marked(styles, groups, g, t.size))
            if not ax.lines:
                _no_data(ax, f"no {m!r} trace")
                continue
            if c == 0:
                ax.set_ylabel(ctx.get("ylabel", axis_label(m, unit_for(m)[1])))
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
            t = (
                np.concatenate([b + (np.arange(k) + 0.5) * width / k for b, k in zip(g["t"].to_numpy(), n) if k > 0])
                if n.sum()
                else np.array([])
            )
            rows.append(pd.DataFrame({"run_id": rid, "t": t}).assign(**{c: g[c].iloc[0] for c in g.columns if c.startswith("p_")}))
        ev = pd.concat(rows, ignore_index=True)
        source = f"drops per {width:g} s bin, spread evenly"
    gcol = ctx.group_col(ev)
    fcol, facets = _facets(ctx, ev)
    groups = ctx.levels(ev, gcol)
    styles = _styles(groups)
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
            ax.plot(grid, mean, label=None if g is None else f"{g} (n={len(curves)})", linewidth=1.2,
                    **_marked(styles, groups, g, grid.size))
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
    styles = _styles(groups)
    ns: list[int] = []
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
            st = gs.groupby("_x")["_y"].agg(["mean", lambda v: _interval(v.to_numpy(dtype=float)), "count"]).sort_index()
            st.columns = ["mean", "std", "n"]  # "std": the 95 % CI half-width of the mean
            if st.empty:
                continue
            ns += st["n"].tolist()
            ax.errorbar(st.index, st["mean"], yerr=st["std"].fillna(0), markersize=4, capsize=3,
                        label=None if g is None else str(g), linewidth=1.2, **styles[g])
        if not ax.lines:
            _no_data(ax, f"axis {x!r} has no numeric labels or {y!r} is NaN")
            continue
        if ctx.get("diagonal"):
            lo, hi = ax.get_xlim()
            ax.plot(
                [lo, hi],
                [lo, hi],
                linestyle="--",
                color="0.35",
                linewidth=1.0,
                label=str(ctx.get("diagonal")) if isinstance(ctx.get("diagonal"), str) else "y = x",
            )
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
    return _finish(fig, ctx, title, _interval_note(ns) or None)


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


