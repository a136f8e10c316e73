"""Figures that keep what they compare visible, checked on the matplotlib objects: delay
axes spanning decades turn logarithmic (and the logx/logy keys override that), each
group has its own line style and marker, no ellipse from fewer than 3 points, points
with intervals instead of bars on a log axis and no Student-t whisker from 2 values,
asymmetric directions in panels of their own, labels with units for L4S names, a plain
quick-mode sentence, and the figure file formats."""
from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest
from matplotlib.patches import Ellipse, Polygon, Rectangle

from aqmlab import plots
from aqmlab._fmt import axis_label, readable, unit_for
from aqmlab.plots.select import quick_sentence

from conftest import run_cli


def _store(**tables):
    empty = pd.DataFrame()
    return types.SimpleNamespace(**{k: tables.get(k, empty) for k in ("runs", "flows", "queues", "samples", "series")},
                                 study_text="", provenance={})


def _suptitle(fig) -> str:
    return fig._suptitle.get_text().replace("\n", " ") if fig._suptitle is not None else ""


def _delay_samples(scales: dict[str, float]) -> types.SimpleNamespace:
    """One run per qdisc whose 'rtt' samples are `scale` × (1 … 2) seconds."""
    flows, rows = [], []
    for i, (q, s) in enumerate(scales.items()):
        rid = f"r{i}"
        flows.append({"run_id": rid, "experiment": "e", "repetition": 0, "p_qdisc": q, "name": "ping0", "kind": "ping",
                      "src": "client0", "base_rtt": 0.0, "goodput_bps": 0.0})
        for k, t in enumerate(np.arange(0, 10, 0.1)):
            rows.append({"run_id": rid, "experiment": "e", "repetition": 0, "p_qdisc": q, "kind": "flow", "entity": "ping0",
                         "metric": "rtt", "t": round(t, 3), "value": s * (1 + (k % 10) / 10)})
    flows = pd.DataFrame(flows)
    return _store(flows=flows, samples=pd.DataFrame(rows), runs=flows[["run_id", "experiment", "repetition", "p_qdisc"]])


def test_cdf_of_delays_spanning_decades_is_logarithmic_with_distinct_styles():
    st = _delay_samples({"fifo": 1.0, "fq_codel": 0.002, "cake": 0.002})
    fig = plots.figure(st, {"type": "cdf", "metric": "rtt"})
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert "logarithmic delay axis" in _suptitle(fig)
    # fq_codel and CAKE coincide: their lines differ in style and marker, not only colour
    styles = {(ln.get_linestyle(), ln.get_marker()) for ln in ax.lines}
    assert len(styles) == len(ax.lines) == 3
    # the key wins over the automatic choice, both ways
    assert plots.figure(st, {"type": "cdf", "metric": "rtt", "logx": False}).axes[0].get_xscale() == "linear"
    close = _delay_samples({"fifo": 0.010, "fq_codel": 0.005})
    assert plots.figure(close, {"type": "cdf", "metric": "rtt"}).axes[0].get_xscale() == "linear"
    assert plots.figure(close, {"type": "cdf", "metric": "rtt", "logx": True}).axes[0].get_xscale() == "log"


def _runs(values: dict[str, list[float]], measure: str = "induced_latency") -> pd.DataFrame:
    rows = []
    for q, vs in values.items():
        for k, v in enumerate(vs):
            rows.append({"run_id": f"{q}{k}", "experiment": "e", "repetition": k, "seed": k, "p_qdisc": q, measure: v,
                         "goodput_down": 9e6 + 1e5 * k})
    return pd.DataFrame(rows)


def test_ellipse_needs_three_points_and_is_drawn_in_log_space():
    two = _runs({"fifo": [0.5, 0.6], "fq_codel": [0.002, 0.003]})
    fig = plots.figure(_store(runs=two), {"type": "ellipse", "x": "goodput_down", "y": "induced_latency"})
    ax = fig.axes[0]
    assert not [p for p in ax.patches if isinstance(p, (Ellipse, Polygon))]
    assert "no ellipse: 2 repetitions per point, 3 needed" in _suptitle(fig)
    assert ax.get_yscale() == "log"  # 2 ms beside 500 ms
    five = _runs({"fifo": [0.5, 0.6, 0.55, 0.7, 0.4], "fq_codel": [0.002, 0.003, 0.0025, 0.004, 0.002]})
    fig = plots.figure(_store(runs=five), {"type": "ellipse", "x": "goodput_down", "y": "induced_latency"})
    ax = fig.axes[0]
    polys = [p for p in ax.patches if isinstance(p, Polygon)]
    assert len(polys) == 2 and ax.get_yscale() == "log" and ax.yaxis_inverted()
    # the fq_codel ellipse is centred on the mean of log10(latency), in ms
    lat = np.log10(np.array([0.002, 0.003, 0.0025, 0.004, 0.002]) * 1e3)
    ring = polys[1].get_xy()
    assert np.log10(ring[:, 1]).min() + np.log10(ring[:, 1]).max() == pytest.approx(2 * lat.mean(), rel=1e-6)
    assert "1 standard deviation" in _suptitle(fig)
    # on linear axes the ellipse stays an Ellipse patch
    fig = plots.figure(_store(runs=five), {"type": "ellipse", "x": "goodput_down", "y": "induced_latency", "logy": False})
    assert len([p for p in fig.axes[0].patches if isinstance(p, Ellipse)]) == 2


def test_bar_on_a_log_axis_is_points_with_intervals_and_no_whisker_from_two():
    runs = _runs({"fifo": [0.5, 0.6, 0.7], "fq_codel": [0.002, 0.003, 0.004]}, "queue_delay_p99")
    fig = plots.figure(_store(runs=runs), {"type": "bar", "y": "queue_delay_p99"})
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    assert not [p for p in ax.patches if isinstance(p, Rectangle) and p.get_height() > 0 and p.get_width() < 1]
    marks = [ln for ln in ax.lines if ln.get_marker() == "o"]  # the means (caps are "_" markers)
    assert sorted(ln.get_ydata()[0] for ln in marks) == pytest.approx([3.0, 600.0])
    assert "95 % confidence interval" in _suptitle(fig) and "n = 3" in _suptitle(fig)
    # two repetitions: the bars have no whisker, the two values are drawn as dots
    two = _runs({"fifo": [0.5, 0.6], "fq_codel": [0.45, 0.65]}, "queue_delay_p99")
    fig = plots.figure(_store(runs=two), {"type": "bar", "y": "queue_delay_p99"})
    ax = fig.axes[0]
    assert ax.get_yscale() == "linear"
    errs = [c for c in ax.collections if c.__class__.__name__ == "LineCollection"]
    assert all(abs(s[1][1] - s[0][1]) < 1e-12 for c in errs for s in c.get_segments())
    dots = [ln for ln in ax.lines if ln.get_marker() == "."]
    assert sorted(float(v) for ln in dots for v in ln.get_ydata()) == pytest.approx([450.0, 500.0, 600.0, 650.0])
    assert "no interval from fewer than 3" in _suptitle(fig)


def test_asymmetric_directions_get_a_row_of_panels_each(synth, synth_study):
    e = synth_study.experiment("rrul")
    fig = plots.figure(synth, {"type": "ellipse", "x": ["goodput_down", "goodput_up"], "y": "induced_latency", "facet": "link"}, e)
    assert len(fig.axes) == 4  # 2 directions × 2 links: 10 Mbit/s down beside 1 Mbit/s up
    assert [ax.get_xlabel() for ax in fig.axes] == ["download goodput (Mbit/s)"] * 2 + ["upload goodput (Mbit/s)"] * 2
    up_10_1 = fig.axes[3]
    runs = synth.runs[(synth.runs.experiment == "rrul") & (synth.runs.p_link == "10/1")]
    lo, hi = up_10_1.get_xlim()
    assert hi < 2 and lo > 0.5 and runs["goodput_up"].max() / 1e6 <= hi  # its own range, not the download's


def test_l4s_names_read_as_words_with_units():
    assert readable("ratio:prague/cubic") == "goodput ratio prague / cubic"
    assert axis_label("l_delay_p99", unit_for("l_delay_p99")[1]) == "L-queue 99th percentile sojourn (ms)"
    assert axis_label("qdelay_l", unit_for("qdelay_l")[1]) == "L-queue delay (ms)"
    assert readable("p_c") == "classic drop/mark probability p_C"
    assert readable("mean:web.page_time_mean") == "mean mean page load time of web flows"
    # a state trace of a delay variable is drawn in ms, labelled so
    samples = pd.DataFrame({"run_id": "a", "experiment": "e", "repetition": 0, "p_rtt": "20ms", "kind": "queue",
                            "entity": "bottleneck_up", "metric": "qdelay_l", "t": [0.0, 1.0], "value": [0.001, 0.002]})
    runs = pd.DataFrame({"run_id": ["a"], "experiment": "e", "repetition": 0, "p_rtt": "20ms"})
    fig = plots.figure(
        _store(runs=runs, samples=samples), {"type": "state_trace", "metrics": ["qdelay_l"], "entity": "bottleneck_up", "group": "rtt"}
    )
    ax = fig.axes[0]
    assert ax.get_ylabel() == "L-queue delay (ms)"
    assert list(ax.lines[0].get_ydata()[:2]) == pytest.approx([1.0, 2.0])


def test_quick_mode_is_one_plain_sentence():
    assert quick_sentence([(20.0, 140.0)] * 3, 1) == (
        "quick mode: runs shortened to 20 s of 140 s (flow start and stop times scaled with them), 1 repetition")
    assert quick_sentence([(20.0, 140.0), (20.0, 500.0), (10.0, 10.0)], 2) == (
        "quick mode: runs shortened to 20 s of 140–500 s (flow start and stop times scaled with them), runs of 10 s kept, 2 repetitions")
    assert "×" not in quick_sentence([(25.0, 500.0)], 1)


def test_figure_formats_and_dpi(synth, synth_study, tmp_path):
    recs = plots.render_figure_records(synth, synth_study.without([e.name for e in synth_study.experiments][1:]), tmp_path,
                                       formats=("pdf",), dpi=50)
    assert recs and all(r.png is None and [p.suffix for p in r.files] == [".pdf"] for r in recs)
    assert all(p.read_bytes()[:4] == b"%PDF" for r in recs for p in r.files)
    with pytest.raises(ValueError, match=r"'bmp' is not allowed \(allowed: png, svg, pdf\)"):
        plots.check_formats(("png", "bmp"))
    r = run_cli("plot", str(tmp_path), "--format", "bmp")
    assert r.returncode == 2 and "'bmp' is not one of 'png', 'svg', 'pdf'" in r.stderr
