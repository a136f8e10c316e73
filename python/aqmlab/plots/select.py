"""Data selection for figures: the runs, flows, samples and series of one experiment
that a figure spec asks for (see :mod:`aqmlab.plots.spec` for the keys)."""
from __future__ import annotations

import dataclasses
import fnmatch
import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd

from aqmlab import store as store_data
from aqmlab._fmt import natural_key, unit_for
from aqmlab._naming import direction
from aqmlab.plots.spec import FigureSpecError
from aqmlab.store import StoreLike, drop_foreign_axes, select_where

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
        return select_where(df, self.exp, self.get("where"), FigureSpecError)

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
            keep = (
                flows[["run_id", "name"]].astype({"name": str}).rename(columns={"name": "entity"}).drop_duplicates()
                if not flows.empty
                else pd.DataFrame(columns=["run_id", "entity"])
            )
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




def resample_rows(df: pd.DataFrame, step: float) -> pd.DataFrame:
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



def _per_run_bins(df: pd.DataFrame, width: float | None, agg: str) -> pd.DataFrame:
    """Per run: value per time bin, entities combined by `agg`. Returns columns
    run_id, t (bin start), value."""
    if width:
        df = df.assign(t=np.floor(df["t"].to_numpy() / width + 1e-9) * width)
    per_ent = df.groupby(["run_id", "entity", "t"], sort=False)["value"].mean().reset_index()
    how = "sum" if agg == "sum" else "mean"
    return per_ent.groupby(["run_id", "t"], sort=True)["value"].agg(how).reset_index()



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
            quick, run_length = _quick_note(experiment), experiment_length(experiment)
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


def experiment_length(experiment: Any) -> float | None:
    """The longest run duration (s) of the experiment's combinations, None if unknown."""
    from aqmlab.study import parse_duration

    try:
        return max(parse_duration(experiment.scenario(p).get("run", {}).get("duration", 10.0), "run.duration")
                   for p in experiment.combinations())
    except Exception:  # noqa: BLE001 - only used to word a message
        return None


def quick_lengths(experiment: Any) -> list[tuple[float, float]]:
    """(quick run duration, full run duration) in seconds of each combination of a
    quick-mode experiment."""
    from aqmlab.study import parse_duration

    full = dataclasses.replace(experiment, cap=None)
    out = []
    for params in experiment.combinations():
        d = parse_duration(experiment.scenario(params).get("run", {}).get("duration", 10.0), "run.duration")
        d_full = parse_duration(full.scenario(params).get("run", {}).get("duration", 10.0), "run.duration")
        out.append((d, d_full))
    return out


def _quick_scales(experiment: Any) -> tuple[set[float], set[float]]:
    """(run durations, time scale factors) of a quick-mode experiment's runs: quick mode
    caps each run and scales its times by capped / full duration (study._cap_durations)."""
    lengths = quick_lengths(experiment)
    return {d for d, _ in lengths}, {d / f for d, f in lengths if f > d}


def _span(values: Iterable[float]) -> str:
    v = sorted(set(values))
    return f"{v[0]:g} s" if len(v) == 1 else f"{v[0]:g}–{v[-1]:g} s"


def quick_sentence(lengths: list[tuple[float, float]], repetitions: int | None = None) -> str:
    """One plain sentence on what quick mode did to runs of these (quick, full)
    durations: "quick mode: runs shortened to 20 s of 140 s (flow start and stop times
    scaled with them), 1 repetition"."""
    cut = [(d, f) for d, f in lengths if f > d]
    if cut:
        runs = f"runs shortened to {_span(d for d, _ in cut)} of {_span(f for _, f in cut)} (flow start and stop times scaled with them)"
        kept = [d for d, f in lengths if f <= d]
        if kept:
            runs += f", runs of {_span(kept)} kept"
    else:
        runs = f"runs of {_span(d for d, _ in lengths)} (as in the full study)" if lengths else "runs as in the full study"
    reps = "" if repetitions is None else f", {repetitions} repetition{'s' if repetitions != 1 else ''}"
    return f"quick mode: {runs}{reps}"


def _quick_note(experiment: Any) -> str | None:
    """"quick mode: runs shortened to 25 s of 500 s …, 1 repetition" for an experiment
    in quick mode (None in full mode), so that a title written for the full study ("over
    500 s") is not read as what was drawn."""
    if getattr(experiment, "cap", None) is None:
        return None
    try:
        lengths = quick_lengths(experiment)
    except Exception:  # noqa: BLE001 - a note, never a reason to fail a figure
        return None
    if not lengths:
        return None
    return quick_sentence(lengths, int(getattr(experiment, "repetitions", 1)))

