"""Figures: every type draws from a store shaped like the runner's, the geometry is
what the spec asks for (medians, covariance ellipses, point-wise means, mean ± sd),
missing data gives a 'no data' figure, and bad specs name the key."""
from __future__ import annotations

import math
import types

import numpy as np
import pandas as pd
import pytest
from matplotlib.patches import Ellipse, Rectangle

from aqmlab import plots, stats
from aqmlab.plots import FigureSpecError

from conftest import assert_nontrivial_png


def _store(**tables):
    empty = pd.DataFrame()
    return types.SimpleNamespace(**{k: tables.get(k, empty) for k in ("runs", "flows", "queues", "samples", "series")},
                                 study_text="", provenance={})


def _texts(fig) -> str:
    out = [t.get_text() for t in fig.texts]
    if fig._suptitle is not None:
        out.append(fig._suptitle.get_text())
    for ax in fig.axes:
        out += [t.get_text() for t in ax.texts]
    return "\n".join(out)


def test_render_every_figure_of_the_study(synth, synth_study, tmp_path):
    specs = [f for e in synth_study.experiments for f in e.figures]
    assert {f["type"] for f in specs} == set(plots.FIGURE_TYPES), "the synthetic study uses every figure type"
    # study=None: the study text saved in the store; strict: any failure raises
    paths = plots.render_figures(synth, None, tmp_path, strict=True)
    assert len(paths) == 2 * len(specs)
    for p in paths:
        if p.suffix == ".png":
            assert_nontrivial_png(p)
        else:
            head = p.read_text()[:2000]
            assert p.suffix == ".svg" and head.lstrip().startswith("<?xml") and "<svg" in head
    assert {p.stem for p in paths} >= {"rrul-ellipse", "sat-util", "rtt_fair-bar-1", "saturated-queue_delay-3"}


def test_figures_on_worker_processes_are_those_drawn_here(synth, synth_study, tmp_path):
    """jobs=2 draws the figures of a store on disk on two worker processes: the same
    records in study order and the same PNG bytes as drawing them in this process (SVGs
    carry matplotlib's random ids and are compared without them)."""
    import re

    one = plots.render_figure_records(synth, synth_study, tmp_path / "one", jobs=1)
    two = plots.render_figure_records(synth, synth_study, tmp_path / "two", jobs=2)
    assert [(r.experiment, r.index, r.name, r.spec, r.error, r.png.name, r.svg.name if r.svg else None) for r in one] == \
           [(r.experiment, r.index, r.name, r.spec, r.error, r.png.name, r.svg.name if r.svg else None) for r in two]
    assert len(one) == sum(len(e.figures) for e in synth_study.experiments)
    for a, b in zip(one, two):
        assert a.png.read_bytes() == b.png.read_bytes(), a.name

        def svg(p):
            return re.sub(r"\b(id|href|clip-path)=\"[^\"]*\"|<dc:date>[^<]*</dc:date>", "", p.read_text())

        assert svg(a.svg) == svg(b.svg), a.name
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == sorted(p.name for p in (tmp_path / "two").iterdir())


def test_figure_job_draws_here_when_its_worker_dies(synth, synth_study, tmp_path, monkeypatch):
    """A figure whose worker process died (BrokenProcessPool) is drawn in this process."""
    from concurrent.futures.process import BrokenProcessPool

    job = plots.FigureJob(synth, synth_study, tmp_path, formats=("png",), jobs=2)

    class Broken:
        def result(self):
            raise BrokenProcessPool("worker died")

    job.futures = {k: Broken() for k in job.futures}
    recs = job.result()
    assert len(recs) == sum(len(e.figures) for e in synth_study.experiments)
    assert all(r.png.exists() and r.svg is None for r in recs)


def test_in_memory_tables_draw_in_this_process(tmp_path):
    """Tables without a store folder cannot be opened by a worker: drawn here."""
    from aqmlab.study import parse_study

    study = parse_study('''
[study]
name = "mem"
[base]
dumbbell = { rate = "10Mbit" }
[[experiment]]
name = "e"
  [[experiment.axis]]
  name = "qdisc"
  path = "dumbbell.qdisc.kind"
  values = ["fifo", "codel"]
  [[experiment.figure]]
  type = "bar"
  y = "m"
  [[experiment.figure]]
  type = "bar"
  y = "m"
  name = "second"
''')
    runs = pd.DataFrame(
        {"run_id": ["a", "b"], "experiment": ["e", "e"], "p_qdisc": ["fifo", "codel"], "repetition": [0, 0], "m": [1.0, 2.0]}
    )
    job = plots.FigureJob(_store(runs=runs), study, tmp_path, formats=("png",), jobs=2)
    assert job.pool is None and not job.futures
    recs = job.result()
    assert [r.name for r in recs] == ["e-bar-1", "second"] and all(r.png.exists() for r in recs)


def test_state_trace_without_traces_says_no_data(synth, synth_study):
    e = synth_study.experiment("saturated")
    fig = plots.figure(synth, {"type": "state_trace", "metrics": ["nonexistent"]}, e)
    assert "no data" in _texts(fig) and "nonexistent" in _texts(fig)


def test_ellipse_median_and_covariance_and_flip():
    rng = np.random.default_rng(1)
    pts = rng.multivariate_normal([9e6, 0.02], [[1e11, 2e2], [2e2, 1e-5]], size=12)
    runs = pd.DataFrame({"run_id": [f"r{i}" for i in range(12)], "experiment": "e", "repetition": range(12),
                         "p_qdisc": "codel", "goodput_down": pts[:, 0], "induced_latency": pts[:, 1]})
    fig = plots.figure(_store(runs=runs), {"type": "ellipse", "x": "goodput_down", "y": "induced_latency"})
    ax = fig.axes[0]
    assert ax.yaxis_inverted() and not ax.xaxis_inverted(), "latency on y is flipped"
    (line,) = [ln for ln in ax.lines if not ln.get_label().startswith("_")]
    scaled = pts * [1e-6, 1e3]
    # the repetitions themselves are drawn as dots
    (dots,) = [ln for ln in ax.lines if ln.get_label().startswith("_")]
    assert np.column_stack([dots.get_xdata(), dots.get_ydata()]) == pytest.approx(scaled)
    assert line.get_xdata()[0] == pytest.approx(np.median(scaled[:, 0]))
    assert line.get_ydata()[0] == pytest.approx(np.median(scaled[:, 1]))
    (ell,) = [p for p in ax.patches if isinstance(p, Ellipse)]
    vals = np.linalg.eigvalsh(np.cov(scaled, rowvar=False))
    assert ell.center == pytest.approx(tuple(scaled.mean(axis=0)))
    assert sorted([ell.width, ell.height]) == pytest.approx(sorted(2 * np.sqrt(vals)))
    # x latency → the x axis is flipped instead
    fig = plots.figure(_store(runs=runs), {"type": "ellipse", "y": "goodput_down", "x": "induced_latency"})
    assert fig.axes[0].xaxis_inverted() and not fig.axes[0].yaxis_inverted()


def test_ellipse_two_directions_share_latency(synth, synth_study):
    e = synth_study.experiment("rrul")
    fig = plots.figure(
        synth, {"type": "ellipse", "x": ["goodput_down", "goodput_up"], "y": "induced_latency", "facet": "link", "split": False}, e
    )
    assert len(fig.axes) == 2
    for ax, link in zip(fig.axes, ["10/10", "10/1"]):
        assert ax.get_title() == f"link = {link}"
        assert all(a.yaxis_inverted() for a in fig.axes), "sharey must not undo the flip"
        # 3 qdiscs × 2 directions, each marker at the same latency for both directions
        marks = [ln for ln in ax.lines if not ln.get_label().startswith("_")]
        assert len(marks) == 6
        by_label = {ln.get_label(): (ln.get_xdata()[0], ln.get_ydata()[0]) for ln in marks}
        assert by_label["fifo – download goodput"][1] == pytest.approx(by_label["fifo – upload goodput"][1])
    runs = synth.runs[(synth.runs.experiment == "rrul") & (synth.runs.p_link == "10/1") & (synth.runs.p_qdisc == "fifo")]
    x, y = {ln.get_label(): (ln.get_xdata()[0], ln.get_ydata()[0]) for ln in fig.axes[1].lines}["fifo – upload goodput"]
    assert x == pytest.approx(runs["goodput_up"].median() / 1e6)
    assert y == pytest.approx(runs["induced_latency"].median() * 1e3)


def _samples_store():
    flows = pd.DataFrame({"run_id": ["a", "b"], "experiment": "e", "repetition": [0, 1], "p_qdisc": "fifo",
                          "name": "voip0", "kind": "voip", "src": "client0", "base_rtt": 0.04, "goodput_bps": 1.0})
    rows = []
    for rid, off in (("a", 0.0), ("b", 0.01)):
        for t in np.arange(0, 2, 0.1):
            rows.append({"run_id": rid, "experiment": "e", "repetition": 0 if rid == "a" else 1, "p_qdisc": "fifo",
                         "kind": "flow", "entity": "voip0", "metric": "owd", "t": round(t, 3), "value": 0.02 + off + t / 100})
    return _store(flows=flows, samples=pd.DataFrame(rows), runs=flows[["run_id", "experiment", "repetition", "p_qdisc"]])


def test_cdf_minus_base_uses_half_rtt_for_one_way_delays():
    st = _samples_store()
    fig = plots.figure(st, {"type": "cdf", "metric": "owd", "minus_base": True})
    (line,) = fig.axes[0].lines
    x, y = line.get_xdata(), line.get_ydata()
    vals = np.sort(st.samples["value"].to_numpy() - 0.02) * 1e3
    assert x[1:] == pytest.approx(vals) and y[-1] == pytest.approx(1.0) and y[0] == 0
    fig = plots.figure(st, {"type": "cdf", "metric": "owd", "minus_base": "rtt"})
    assert fig.axes[0].lines[0].get_xdata()[1] == pytest.approx((0.02 - 0.04) * 1e3)


def test_cdf_resample_keeps_one_sample_per_interval():
    st = _samples_store()
    fig = plots.figure(st, {"type": "cdf", "metric": "owd", "resample": 0.5})
    # grid 0, 0.5, 1.0, 1.5 per run: 4 samples × 2 runs
    assert len(fig.axes[0].lines[0].get_xdata()) == 1 + 8


def test_resample_picks_the_rows_the_per_group_loop_picked():
    """plots.resample_rows finds the (run, entity) groups once and takes the chosen rows in
    one go: the same rows in the same order as taking them group by group (ties in t,
    unsorted input, a missing entity, string and categorical keys)."""
    def per_group(df, step):
        out = []
        for _, g in df.sort_values("t").groupby(["run_id", "entity"], sort=False):
            t = g["t"].to_numpy()
            grid = np.arange(math.ceil(t[0] / step) * step, t[-1] + 1e-12, step)
            idx = np.searchsorted(t, grid, side="right") - 1
            out.append(g.iloc[np.unique(idx[idx >= 0])])
        return pd.concat(out, ignore_index=True) if out else df.iloc[0:0]

    rng = np.random.default_rng(5)
    n = 4000
    df = pd.DataFrame({"run_id": rng.choice(["r2", "r1", "r3"], n), "entity": rng.choice(["a", "b", "voip0", None], n),
                       "t": np.round(rng.random(n) * 30, 1), "value": rng.random(n), "p_qdisc": "codel"})
    for d in (df, df.astype({"entity": "category"}), df[df["entity"].notna()], df.iloc[0:0]):
        for step in (0.2, 1.0, 7.0):
            pd.testing.assert_frame_equal(plots.resample_rows(d, step), per_group(d, step))


def test_timeseries_is_the_pointwise_mean_over_repetitions():
    st = _samples_store()
    fig = plots.figure(st, {"type": "timeseries", "metric": "owd", "bin": 0.5})
    line = fig.axes[0].lines[0]
    t = line.get_xdata()
    assert t.tolist() == pytest.approx([0, 0.5, 1.0, 1.5])
    s = st.samples
    for ti, yi in zip(t, line.get_ydata()):
        per_run = [s[(s.run_id == r) & (s.t >= ti) & (s.t < ti + 0.5)]["value"].mean() for r in ("a", "b")]
        assert yi == pytest.approx(np.mean(per_run) * 1e3)
    assert "n=2" in line.get_label()


def test_timeseries_band_stays_within_the_repetitions_range():
    """Two repetitions give a t interval (t = 12.7) far wider than the two values: the band
    is the CI clipped to the range the repetitions span in each bin, so it never shows a
    negative delay or leaves a log axis."""
    st = _samples_store()
    s = st.samples
    per_bin = [[s[(s.run_id == r) & (s.t >= t0) & (s.t < t0 + 0.5)]["value"].mean() * 1e3 for r in ("a", "b")]
               for t0 in (0, 0.5, 1.0, 1.5)]
    for logy in (False, True):
        fig = plots.figure(st, {"type": "timeseries", "metric": "owd", "bin": 0.5, "logy": logy})
        ax = fig.axes[0]
        (band,) = [c for c in ax.collections if c.__class__.__name__ in ("PolyCollection", "FillBetweenPolyCollection")]
        ys = band.get_paths()[0].vertices[:, 1]
        assert ys.min() == pytest.approx(min(min(v) for v in per_bin))
        assert ys.max() == pytest.approx(max(max(v) for v in per_bin))


def test_sharey_false_gives_each_facet_its_own_range(synth, synth_study):
    e = synth_study.experiment("rrul")
    spec = {"type": "bar", "y": "induced_latency", "x": "qdisc", "facet": "link"}
    shared = plots.figure(synth, spec, e)
    own = plots.figure(synth, {**spec, "sharey": False}, e)
    assert len({a.get_ylim() for a in shared.axes}) == 1
    assert len({a.get_ylim() for a in own.axes}) == len(own.axes) > 1


def test_timeseries_sum_of_flows_from_series(synth, synth_study):
    e = synth_study.experiment("rrul")
    fig = plots.figure(synth, {"type": "timeseries", "metric": "goodput_bps", "flow_kind": "bulk", "direction": "down",
                               "agg": "sum", "where": {"link": "10/10", "qdisc": "fifo"}}, e)
    line = fig.axes[0].lines[0]
    s = synth.series
    f = synth.flows
    down = f[(f.experiment == "rrul") & (f.kind == "bulk") & (f.src == "server0") & (f.p_link == "10/10") & (f.p_qdisc == "fifo")]
    sel = s[s.run_id.isin(down.run_id) & s.entity.isin(down.name) & (s.metric == "goodput_bps") & (s.t == 10.0)]
    assert line.get_ydata()[10] == pytest.approx(sel.groupby("run_id")["value"].sum().mean() / 1e6)


def test_bar_mean_and_ci(synth, synth_study):
    fig = plots.figure(synth, {"type": "bar", "y": "jain"}, synth_study.experiment("rtt_fair"))
    ax = fig.axes[0]
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    runs = synth.runs[synth.runs.experiment == "rtt_fair"]
    want = [runs[runs.p_qdisc == q]["jain"].mean() for q in ("fifo", "codel", "fq_codel")]
    assert [b.get_height() for b in bars] == pytest.approx(want)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["fifo", "codel", "fq_codel"]
    (err,) = [c for c in ax.collections if c.__class__.__name__ == "LineCollection"]
    seg = err.get_segments()[0]
    fifo = runs[runs.p_qdisc == "fifo"]["jain"]
    half = stats.t975(len(fifo) - 1) * fifo.std(ddof=1) / np.sqrt(len(fifo))  # 95 % CI of the mean
    assert seg[1][1] - seg[0][1] == pytest.approx(2 * half)


def test_bar_whisker_of_a_nonnegative_measure_stops_at_zero(synth, synth_study):
    """Three repetitions 0.01, 0.01, 0.9: the t interval's lower end is below zero; the
    whisker of a measure that cannot be negative stops at 0, the upper one is unchanged."""
    runs = synth.runs.copy()
    idx = runs.index[(runs.experiment == "rtt_fair") & (runs.p_qdisc == "fifo")]
    vals = np.resize([0.01, 0.01, 0.9], len(idx))
    runs.loc[idx, "jain"] = vals
    st = _store(runs=runs, flows=synth.flows, queues=synth.queues, samples=synth.samples, series=synth.series)
    fig = plots.figure(st, {"type": "bar", "y": "jain"}, synth_study.experiment("rtt_fair"))
    (err,) = [c for c in fig.axes[0].collections if c.__class__.__name__ == "LineCollection"]
    seg = err.get_segments()[0]
    mean = vals.mean()
    half = stats.t975(len(vals) - 1) * vals.std(ddof=1) / np.sqrt(len(vals))
    assert half > mean  # the case under test: the symmetric interval would cross zero
    assert min(seg[0][1], seg[1][1]) == pytest.approx(0.0, abs=1e-12)
    assert max(seg[0][1], seg[1][1]) == pytest.approx(mean + half)


def test_flows_vs_rtt_sorted_by_rtt(synth, synth_study):
    fig = plots.figure(synth, {"type": "flows_vs_rtt"}, synth_study.experiment("rtt_fair"))
    ax = fig.axes[0]
    assert [c.get_label() for c in ax.containers] == ["fifo", "codel", "fq_codel"]
    codel = next(c for c in ax.containers if c.get_label() == "codel").lines[0]
    assert codel.get_xdata().tolist() == pytest.approx([10, 50, 200, 500])
    assert all(np.diff(codel.get_ydata()) < 0), "synthetic CoDel favours short RTTs"


def test_line_reads_numbers_from_labels():
    runs = pd.DataFrame({"run_id": list("abcdef"), "experiment": "e", "repetition": [0, 1] * 3,
                         "p_target": ["5ms", "5ms", "10ms", "10ms", "20ms", "20ms"], "p_qdisc": "codel",
                         "bottleneck_utilization": [0.9, 0.92, 0.95, 0.97, 0.99, 0.99]})
    fig = plots.figure(_store(runs=runs), {"type": "line", "x": "target", "y": "bottleneck_utilization"})
    ln = fig.axes[0].containers[0].lines[0]
    assert ln.get_xdata().tolist() == [5, 10, 20]
    assert ln.get_ydata() == pytest.approx([91, 96, 99])


def test_drop_rate_reads_a_steady_rate_from_events_or_bins():
    ev = np.arange(0.05, 10, 0.1)  # 10 drops/s, between the grid points
    base = {"experiment": "e", "repetition": 0, "p_qdisc": "red", "kind": "queue", "entity": "bottleneck_down"}
    samples = pd.DataFrame([{**base, "run_id": "a", "metric": "drop", "t": t, "value": 1.0} for t in ev])
    fig = plots.figure(_store(samples=samples, runs=pd.DataFrame({"run_id": ["a"], "experiment": "e"})), {"type": "drop_rate", "step": 0.5})
    y = fig.axes[0].lines[0].get_ydata()
    x = fig.axes[0].lines[0].get_xdata()
    assert y[(x > 4) & (x < 9)] == pytest.approx(10, rel=0.1)
    series = pd.DataFrame([{**base, "run_id": "a", "metric": "drops", "t": float(t), "value": 10.0} for t in range(10)])
    fig = plots.figure(_store(series=series, runs=pd.DataFrame({"run_id": ["a"], "experiment": "e"})), {"type": "drop_rate", "step": 0.5})
    y2 = fig.axes[0].lines[0].get_ydata()
    assert y2[(x > 4) & (x < 9)] == pytest.approx(10, rel=0.1)
    assert "per 1 s bin" in _texts(fig)


def test_queue_delay_marks_drops_and_falls_back_to_bins(synth, synth_study):
    e = synth_study.experiment("saturated")
    fig = plots.figure(synth, {"type": "queue_delay", "windows": [2, 12], "window": 0.5, "where": {"flows": "4"}}, e)
    assert len(fig.axes) == 4  # 2 qdiscs × 2 windows
    s = synth.samples
    ax = fig.axes[0]
    drops = next(ln for ln in ax.lines if ln.get_label().startswith("drops"))
    runs = synth.runs
    rid = runs[(runs.experiment == "saturated") & (runs.p_qdisc == "codel") & (runs.p_flows == 4) & (runs.repetition == 0)].run_id.iloc[0]
    want = s[(s.run_id == rid) & (s.metric == "drop") & (s.t >= 2) & (s.t < 2.5)]
    assert sorted(drops.get_xdata()) == pytest.approx(sorted(want.t))
    # without per-packet samples: per-bin series, and the figure says so
    st = _store(runs=synth.runs, series=synth.series, flows=synth.flows)
    fig = plots.figure(st, {"type": "queue_delay", "windows": [0], "window": 10, "where": {"flows": "4"}}, e)
    assert "per-packet samples not stored" in _texts(fig)


def test_every_type_on_an_empty_store_says_no_data():
    st = _store()
    specs = {"ellipse": {"x": "a", "y": "b"}, "cdf": {"metric": "rtt"}, "timeseries": {"metric": "rtt"}, "bar": {"y": "jain"},
             "line": {"x": "n", "y": "jain"}, "box": {"panels": [{"metric": "rtt"}]}}
    for t in plots.FIGURE_TYPES:
        fig = plots.figure(st, {"type": t, "experiment": "nope", **specs.get(t, {})})
        assert "no data" in _texts(fig), t


def test_bad_specs_name_the_key(synth, synth_study, tmp_path):
    with pytest.raises(FigureSpecError, match="type"):
        plots.validate_spec({"type": "pie_chart"})
    with pytest.raises(FigureSpecError, match=r"\['colour'\]"):
        plots.validate_spec({"type": "bar", "y": "jain", "colour": "red"})
    with pytest.raises(FigureSpecError, match="needs key"):
        plots.validate_spec({"type": "cdf"})
    with pytest.raises(FigureSpecError, match="group"):
        plots.figure(synth, {"type": "bar", "y": "jain", "group": "no_axis"}, synth_study.experiment("rtt_fair"))
    from aqmlab.study import parse_study

    text = """
[study]
name = "synthetic"
[[experiment]]
name = "rtt_fair"
  [[experiment.axis]]
  name = "qdisc"
  path = "q"
  values = ["fifo", "codel", "fq_codel"]
  [[experiment.figure]]
  type = "bar"
  y = "jain"
  [[experiment.figure]]
  type = "bar"
  y = "jain"
  colour = "red"
"""
    recs = plots.render_figure_records(synth, parse_study(text), tmp_path, formats=("png",))
    assert [r.error is None for r in recs] == [True, False]
    assert "colour" in recs[1].error and recs[1].png.exists() and recs[1].svg is None
    with pytest.raises(FigureSpecError):
        plots.render_figure_records(synth, parse_study(text), tmp_path, strict=True)


def test_units_are_guessed_from_names():
    from aqmlab._fmt import fmt_num, label_value, unit_for

    assert unit_for("goodput_down") == (1e-6, "Mbit/s")
    assert unit_for("induced_latency") == (1e3, "ms")
    assert unit_for("loss_rate") == (100.0, "%")
    # the drop_rate measure is a fraction of the arriving packets (measures.py), shown in %
    assert unit_for("drop_rate") == (100.0, "%")
    assert unit_for("jain") == (1.0, "")
    # HAS metrics are stored in the DOCSIS paper's units (app/has.rs), not SI base units
    assert unit_for("has_playback_rate") == (1.0, "Mbit/s")
    assert unit_for("has_rebuffer") == (1.0, "% of time")
    assert label_value("5ms") == 5 and label_value("10/1") == 10 and math.isnan(label_value("fifo"))
    assert fmt_num(0.0123) == "0.0123" and fmt_num(88.18) == "88.2" and fmt_num(float("nan")) == "–"
    # a value that rounds up to the next decade prints like that decade's numbers
    assert fmt_num(99.998) == "100" == fmt_num(100.0) and fmt_num(0.09996) == "0.100"
    assert fmt_num(-9.9996) == "-10.0" and fmt_num(999.7) == "1000"


def test_bar_refuses_to_pool_an_axis_it_does_not_show(synth, synth_study):
    """The rrul experiment varies qdisc and link: a bar over qdisc alone would mix the
    links into one mean and draw their difference as run-to-run spread."""
    exp = synth_study.experiment("rrul")
    with pytest.raises(FigureSpecError, match="axis 'link'"):
        plots.figure(synth, {"type": "bar", "y": "induced_latency", "x": "qdisc"}, exp)
    links = sorted(synth.runs[synth.runs.experiment == "rrul"]["p_link"].astype(str).unique())
    fig = plots.figure(synth, {"type": "bar", "y": "induced_latency", "x": "qdisc", "where": {"link": links[0]}}, exp)
    n_qdiscs = synth.runs[synth.runs.experiment == "rrul"]["p_qdisc"].nunique()
    assert len([p for p in fig.axes[0].patches if isinstance(p, Rectangle)]) == n_qdiscs
    plots.figure(synth, {"type": "bar", "y": "induced_latency", "x": "qdisc", "hue": "link"}, exp)


def test_timeseries_refuses_to_pool_conditions_and_says_what_a_line_is(synth, synth_study):
    """The band of a timeseries is the spread over repetitions: runs of the same qdisc on
    both links would pass the links' difference off as noise, so a spec that neither shows
    nor fixes `link` is refused (by the drawing and by the study check before any run);
    shown as facet it draws, and the title says each line is the sum of the run's flows."""
    from aqmlab.study import StudyError

    e = synth_study.experiment("rrul")
    spec = {"type": "timeseries", "metric": "goodput_bps", "flow_kind": "bulk", "direction": "down", "agg": "sum"}
    with pytest.raises(plots.FigureSpecError, match=r"timeseries: runs differ in axis 'link' .*show it as group or facet"):
        plots.figure(synth, spec, e)
    from aqmlab import report
    from aqmlab.study import parse_study

    fixed = 'agg = "sum"\n  where = { link = "10/10" }\n'
    assert fixed in synth_study.text
    report.validate_outputs(parse_study(synth_study.text.replace(fixed, 'agg = "sum"\n  facet = "link"\n')))
    with pytest.raises(StudyError, match=r"figure\[\d\]: runs of experiment 'rrul' differ in axis 'link'"):
        report.validate_outputs(parse_study(synth_study.text.replace(fixed, 'agg = "sum"\n')))
    fig = plots.figure(synth, {**spec, "facet": "link"}, e)
    n = synth.flows.query("experiment == 'rrul' and kind == 'bulk' and src == 'server0'").groupby("run_id").size()
    assert n.nunique() == 1
    assert f"sum of {n.iloc[0]} flows per run, mean of repetitions" in fig._suptitle.get_text()
