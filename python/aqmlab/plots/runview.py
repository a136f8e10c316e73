"""Figures of single runs and comparisons, without a study file.

- :func:`plot_run`: one run (an :class:`aqmlab.Result` or an ``aqmlab run --out DIR``
  folder) in stacked panels over time, like Flent's ``all_scaled``: each flow's goodput,
  each busy queue's delay and the latency probes' RTT (without probes, the VoIP packets'
  one-way delay), with units.
- :func:`plot_compare`: several runs or result stores side by side, each labelled by its
  name: the CDF of the probes' RTT (when no run has probes, of the VoIP packets' one-way
  delay), total TCP goodput per direction, total goodput over time and the busiest
  queue's delay over time.

``aqmlab plot RUNDIR`` and ``aqmlab compare A B [C …]`` draw these.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from aqmlab import metrics
from aqmlab._naming import direction
from aqmlab.plots.kinds import LOG_DECADES, _colors, _marked, _no_data, _styles

__all__ = ["RunData", "load_source", "is_run_dir", "plot_run", "plot_compare"]

PROBE_KINDS = ("ping", "udp_rr")
#: above this many flows the goodput panel sums the flows per kind and direction
MAX_FLOW_LINES = 12


@dataclasses.dataclass
class RunData:
    """The tables of one run, or of every run of a result store, under a display name."""

    name: str
    flows: pd.DataFrame
    queues: pd.DataFrame
    series: pd.DataFrame
    samples: pd.DataFrame
    runs: int = 1
    duration: float | None = None
    warmup: float = 0.0


def is_run_dir(path: str | os.PathLike) -> bool:
    """Whether `path` is an ``aqmlab run --out`` folder (flows.parquet, no runs/)."""
    d = pathlib.Path(path)
    return (d / "flows.parquet").is_file() and not (d / "runs").is_dir()


def _with_run_id(df: pd.DataFrame, rid: str = "run") -> pd.DataFrame:
    return df if "run_id" in df.columns else df.assign(run_id=rid)


def _from_result(res: Any, name: str | None = None) -> RunData:
    return RunData(name or res.name or "run", _with_run_id(res.flows), _with_run_id(res.queues), _with_run_id(res.series),
                   _with_run_id(res.samples), 1, float(res.duration), float(res.warmup))


def load_source(src: Any, name: str | None = None) -> RunData:
    """A :class:`RunData` from an :class:`aqmlab.Result`, an ``aqmlab run --out`` folder
    or a result store folder (its runs pooled; only the series and samples the figures
    draw are read). ValueError for a folder that is neither."""
    if isinstance(src, RunData):
        return src
    if not isinstance(src, (str, os.PathLike)):
        return _from_result(src, name)
    d = pathlib.Path(src)
    label = name or d.resolve().name
    if is_run_dir(d):
        meta = json.loads((d / "meta.json").read_text()) if (d / "meta.json").is_file() else {}

        def read(t: str) -> pd.DataFrame:
            p = d / f"{t}.parquet"
            return _with_run_id(pd.read_parquet(p)) if p.is_file() else pd.DataFrame()

        return RunData(label, read("flows"), read("queues"), read("series"), read("samples"), 1,
                       meta.get("duration"), float(meta.get("warmup", 0.0) or 0.0))
    if (d / "runs").is_dir():
        from aqmlab import store as store_data

        st = store_data.load(d)
        runs = store_data.runs_of(st)
        series = store_data.scan(st, "series", ["kind", "entity", "metric", "t", "value"],
                                 [("metric", "in", ["goodput_bps", "sojourn_mean"])])
        samples = store_data.scan(st, "samples", ["kind", "entity", "metric", "t", "value"],
                                  [("kind", "==", "flow"), ("metric", "in", ["rtt", "owd"])])
        return RunData(label, store_data.scan(st, "flows"), store_data.scan(st, "queues"), series, samples, len(runs))
    raise ValueError(f"{d}: neither an `aqmlab run --out` folder (no flows.parquet) nor a result store (no runs/ folder)")


def _probe_names(flows: pd.DataFrame) -> set[str]:
    if flows.empty or "kind" not in flows.columns:
        return set()
    return set(flows.loc[flows["kind"].astype(str).isin(PROBE_KINDS), "name"].astype(str))


def _probe_rtts(data: RunData) -> pd.DataFrame:
    """RTT samples of the latency probes (ping, udp_rr), with columns run_id, entity, t, value."""
    s = data.samples
    if s.empty or "metric" not in s.columns:
        return pd.DataFrame(columns=["run_id", "entity", "t", "value"])
    s = s[(s["kind"] == "flow") & (s["metric"] == "rtt")]
    probes = _probe_names(data.flows)
    return s[s["entity"].astype(str).isin(probes)] if probes else s.iloc[0:0]


def _voip_owds(data: RunData) -> pd.DataFrame:
    """One-way delay samples of the VoIP flows, with columns run_id, entity, t, value: the
    latency a run without probes still shows (a call's delay)."""
    s, f = data.samples, data.flows
    if s.empty or "metric" not in s.columns or f.empty or "kind" not in f.columns:
        return pd.DataFrame(columns=["run_id", "entity", "t", "value"])
    calls = set(f.loc[f["kind"].astype(str) == "voip", "name"].astype(str))
    s = s[(s["kind"] == "flow") & (s["metric"] == "owd")]
    return s[s["entity"].astype(str).isin(calls)] if calls else s.iloc[0:0]


def _latency(data: RunData, voip: bool) -> pd.DataFrame:
    """The probes' RTT samples, or with `voip` the VoIP flows' one-way delays."""
    return _voip_owds(data) if voip else _probe_rtts(data)


def _wants_log(values: np.ndarray) -> bool:
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size < 2 or np.mean(v <= 0) > 0.05:
        return False
    lo, hi = np.percentile(v[v > 0], [1, 99])
    return bool(lo > 0 and math.log10(hi / lo) > LOG_DECADES)


def _legend_right(ax, title: str | None = None) -> None:
    h, lab = ax.get_legend_handles_labels()
    if h:
        ax.legend(fontsize=7, title=title, title_fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=True,
                  ncols=1 if len(h) <= 14 else 2)


def _goodput_lines(data: RunData) -> tuple[dict[str, pd.DataFrame], str]:
    """Per line label: (t, Mbit/s) of flow goodput; one line per flow, or per kind and
    direction summed when there are more than :data:`MAX_FLOW_LINES` flows."""
    s = data.series
    if s.empty or "metric" not in s.columns:
        return {}, ""
    g = s[(s["kind"] == "flow") & (s["metric"] == "goodput_bps")].copy()
    g = g[~g["entity"].astype(str).isin(_probe_names(data.flows))]
    if g.empty:
        return {}, ""
    g["entity"] = g["entity"].astype(str)
    names = list(dict.fromkeys(g["entity"]))
    if len(names) <= MAX_FLOW_LINES:
        return {n: g[g["entity"] == n].groupby("t")["value"].mean().reset_index() for n in names}, "flow"
    f = data.flows.assign(name=data.flows["name"].astype(str))
    way = dict(zip(f["name"], [f"{k} {direction(s_)}" for k, s_ in zip(f["kind"].astype(str), f["src"].astype(str))]))
    g["group"] = g["entity"].map(way).fillna("other")
    out = {}
    for grp, gg in g.groupby("group", sort=True):
        per_run = gg.groupby(["run_id", "t"])["value"].sum().reset_index()
        out[f"{grp} ({gg['entity'].nunique()} flows)"] = per_run.groupby("t")["value"].mean().reset_index()
    return out, "kind, direction (summed)"


def plot_run(src: Any, title: str | None = None, width: float = 9.0) -> Figure:
    """One run over time in three stacked panels sharing the time axis: goodput of each
    flow (Mbit/s), delay of each queue that held packets (ms, the per-bin mean sojourn),
    RTT of the latency probes (ms; in a run without probes, the one-way delay of its VoIP
    flows' packets). `src`: an :class:`aqmlab.Result`, an ``aqmlab run
    --out`` folder or a :class:`RunData`. Delay panels spanning more than 2 decades
    are logarithmic."""
    data = load_source(src)
    fig = Figure(figsize=(width, 8.2), layout="constrained")
    axes = fig.subplots(3, 1, sharex=True, squeeze=True)
    # 1. goodput per flow
    lines, how = _goodput_lines(data)
    ax = axes[0]
    if lines:
        styles = _styles(list(lines))
        for lab, d in lines.items():
            ax.plot(d["t"], d["value"] * 1e-6, label=lab, linewidth=1.1, **_marked(styles, list(lines), lab, len(d)))
        ax.set_ylabel("goodput (Mbit/s)")
        _legend_right(ax, how)
    else:
        _no_data(ax, "no per-flow goodput series in this run")
    ax.set_title("goodput per flow" if how == "flow" else "goodput per flow kind and direction", fontsize=10)
    # 2. queue delay of the queues that held packets
    ax = axes[1]
    s = data.series
    idle = 0
    q = s[(s["kind"] == "queue") & (s["metric"] == "sojourn_mean")] if not s.empty and "metric" in s.columns else pd.DataFrame()
    if not q.empty:
        q = q.assign(entity=q["entity"].astype(str))
        # queues that never held more than 1 % of the longest delay (the access links) are
        # left out, so that the bottleneck's scale is readable
        peak = q.groupby("entity", sort=False)["value"].max()
        busy = [e for e, v in peak.items() if v > 0 and v >= 0.01 * peak.max()]
        idle = len(peak) - len(busy)
        q = q[q["entity"].isin(busy)]
    if not q.empty:
        names = list(dict.fromkeys(q["entity"]))
        styles = _styles(names)
        for n in names:
            d = q[q["entity"] == n].groupby("t")["value"].mean()
            ax.plot(d.index, d.to_numpy() * 1e3, label=n, linewidth=1.1, **_marked(styles, names, n, len(d)))
        if _wants_log(q["value"].to_numpy(dtype=float) * 1e3):
            ax.set_yscale("log")
        ax.set_ylabel("queue delay (ms)")
        _legend_right(ax, "queue")
    else:
        _no_data(ax, "no queue held packets (or no sojourn series)")
    ax.set_title(
        "queueing delay (mean per bin)" + (f"; {idle} queues below 1 % of the longest delay not shown" if not q.empty and idle else ""),
        fontsize=10,
    )
    # 3. probe RTT; without probes, the VoIP calls' one-way delay
    ax = axes[2]
    voip = _probe_rtts(data).empty and not _voip_owds(data).empty
    r = _latency(data, voip)
    if not r.empty:
        names = list(dict.fromkeys(r["entity"].astype(str)))
        styles = _styles(names)
        for n in names:
            d = r[r["entity"].astype(str) == n].sort_values("t")
            ax.plot(d["t"], d["value"] * 1e3, label=n, linewidth=0.9, **_marked(styles, names, n, len(d)))
        if _wants_log(r["value"].to_numpy(dtype=float) * 1e3):
            ax.set_yscale("log")
        ax.set_ylabel("one-way delay (ms)" if voip else "RTT (ms)")
        _legend_right(ax, "VoIP flow" if voip else "probe")
    else:
        _no_data(ax, "no latency probes (ping, udp_rr) or VoIP flows in this run")
        # the panel's own tick labels went with its data; the time axis keeps its numbers
        ax.tick_params(bottom=True, labelbottom=True)
    ax.set_title("VoIP packets' one-way delay (no latency probes in this run)" if voip else "latency probes' round-trip time", fontsize=10)
    axes[2].set_xlabel("time (s)")
    for a in axes:
        a.grid(alpha=0.3)
        if data.warmup:
            a.axvspan(0, data.warmup, color="0.9", zorder=0)
    head = title or f"{data.name}: goodput, queueing delay and {'VoIP one-way delay' if voip else 'probe RTT'} over time"
    sub = f"{data.duration:g} s run" if data.duration else ""
    if data.warmup:
        sub += f", warm-up {data.warmup:g} s shaded"
    fig.suptitle(head + (f"\n({sub})" if sub else ""), fontsize=10)
    return fig


def _labels(names: list[str]) -> list[str]:
    """Display names, made unique (a second "run" becomes "run (2)")."""
    out: list[str] = []
    seen: dict[str, int] = {}
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n} ({seen[n]})")
    return out


def plot_compare(sources: list[Any], names: list[str] | None = None, title: str | None = None) -> Figure:
    """Runs or result stores side by side, one colour, line style and marker each, each
    labelled by its name (the folder's name unless `names` are given): the CDF of the
    latency probes' RTT (all runs pooled; when no run has probes, of the VoIP packets'
    one-way delay), total TCP goodput per direction (mean over the
    runs with each run as a dot), total goodput over time and the delay of the busiest
    queue over time (mean over the runs)."""
    if len(sources) < 2:
        raise ValueError("compare: give at least two runs or stores")
    given: list[str | None] = list(names) if names else [None] * len(sources)
    datas = [load_source(s, n) for s, n in zip(sources, given)]
    labels = _labels([d.name for d in datas])
    styles = _styles(labels)
    colors = _colors(labels)
    fig = Figure(figsize=(11, 7.5), layout="constrained")
    (a_cdf, a_bar), (a_ts, a_q) = fig.subplots(2, 2)
    # RTT CDF; when no run has latency probes, the CDF of the VoIP packets' one-way delay
    voip = all(_probe_rtts(d).empty for d in datas) and any(not _voip_owds(d).empty for d in datas)
    allv = []
    for lab, d in zip(labels, datas):
        v = _latency(d, voip)["value"].to_numpy(dtype=float) * 1e3
        x, p = metrics.ecdf(v)
        if x.size:
            a_cdf.step(np.r_[x[0], x], np.r_[0.0, p], where="post", label=lab, linewidth=1.3, **_marked(styles, labels, lab, x.size + 1))
            allv.append(v)
    if allv:
        if _wants_log(np.concatenate(allv)):
            a_cdf.set_xscale("log")
        a_cdf.set_xlabel("VoIP one-way delay (ms)" if voip else "probe RTT (ms)")
        a_cdf.set_ylabel("cumulative probability")
        a_cdf.set_ylim(0, 1.02)
    else:
        _no_data(a_cdf, "no latency probes (ping, udp_rr) or VoIP flows")
    a_cdf.set_title("one-way delay of the VoIP packets (CDF; no latency probes)" if voip else "RTT of the latency probes (CDF)",
                    fontsize=10)
    # goodput bars per direction
    ways = ["down", "up"]
    width = 0.8 / len(datas)
    drawn = False
    for k, (lab, d) in enumerate(zip(labels, datas)):
        f = d.flows
        if f.empty or "kind" not in f.columns:
            continue
        f = f[f["kind"].astype(str) == "bulk"]
        if f.empty:
            continue
        f = f.assign(way=f["src"].astype(str).map(direction))
        per_run = f.groupby(["run_id", "way"])["goodput_bps"].sum().unstack("way").reindex(columns=ways)
        pos = np.arange(len(ways)) + (k - (len(datas) - 1) / 2) * width
        means = per_run.mean().to_numpy(dtype=float) * 1e-6
        a_bar.bar(pos, np.nan_to_num(means), width * 0.95, color=colors[lab], edgecolor="black", linewidth=0.4, label=lab)
        for j, w in enumerate(ways):
            vals = per_run[w].dropna().to_numpy(dtype=float) * 1e-6
            if vals.size > 1:
                a_bar.plot(np.full(vals.size, pos[j]), vals, linestyle="none", marker=".", color="black", markersize=4)
        drawn = True
    if drawn:
        a_bar.set_xticks(np.arange(len(ways)))
        a_bar.set_xticklabels(["download (server → client)", "upload (client → server)"])
        a_bar.set_ylabel("total TCP goodput (Mbit/s)")
    else:
        _no_data(a_bar, "no TCP bulk flows")
    a_bar.set_title("TCP goodput per direction (mean over runs; dots: each run)", fontsize=10)
    # goodput over time and busiest queue's delay over time
    for lab, d in zip(labels, datas):
        s = d.series
        if s.empty or "metric" not in s.columns:
            continue
        g = s[(s["kind"] == "flow") & (s["metric"] == "goodput_bps")]
        g = g[~g["entity"].astype(str).isin(_probe_names(d.flows))]
        if not g.empty:
            tot = g.groupby(["run_id", "t"])["value"].sum().groupby("t").mean()
            a_ts.plot(tot.index, tot.to_numpy() * 1e-6, label=lab, linewidth=1.2, **_marked(styles, labels, lab, len(tot)))
        q = s[(s["kind"] == "queue") & (s["metric"] == "sojourn_mean")]
        if not q.empty:
            # per run, the queue with the highest mean delay
            means = q.groupby(["run_id", "entity"])["value"].mean()
            top = means.groupby(level="run_id").idxmax().tolist()
            qq = q.set_index(["run_id", "entity"]).loc[top].reset_index()
            cur = qq.groupby("t")["value"].mean()
            a_q.plot(cur.index, cur.to_numpy() * 1e3, label=lab, linewidth=1.2, **_marked(styles, labels, lab, len(cur)))
    for ax, what, msg in ((a_ts, "total goodput (Mbit/s)", "no goodput series"), (a_q, "queue delay (ms)", "no queue delay series")):
        if ax.lines:
            ax.set_xlabel("time (s)")
            ax.set_ylabel(what)
            if ax is a_q and _wants_log(np.concatenate([ln.get_ydata() for ln in ax.lines])):
                ax.set_yscale("log")
        else:
            _no_data(ax, msg)
    a_ts.set_title("total goodput over time (mean over runs)", fontsize=10)
    a_q.set_title("busiest queue's delay over time (mean over runs)", fontsize=10)
    for ax in (a_cdf, a_bar, a_ts, a_q):
        ax.grid(alpha=0.3)
    handles: dict[str, Any] = {}
    for ax in (a_cdf, a_ts, a_q, a_bar):
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    if handles:
        fig.legend(handles=list(handles.values()), labels=list(handles), loc="outside right upper", fontsize=8, frameon=True)
    runs = ", ".join(f"{lab}: {d.runs} run{'s' if d.runs != 1 else ''}" for lab, d in zip(labels, datas))
    fig.suptitle((title or "comparison: " + " vs ".join(labels)) + f"\n({runs})", fontsize=10)
    return fig
