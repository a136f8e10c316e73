"""Figure readability, checked on the matplotlib objects (not pixels): axis labels are
readable names with units, titles say what is drawn (quick mode's real run length),
panels keep their tick labels, state_trace honours facet, the ellipse legend sits
outside the data, line figures draw a reference diagonal and name missing points, and
box figures draw one box per group per panel."""
from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from aqmlab import plots


def _fig(synth, synth_study, name, study=None):
    st = study or synth_study
    for e in st.experiments:
        for spec in e.figures:
            if spec.get("name") == name:
                return plots.FIGURE_TYPES[spec["type"]](synth, spec, e)
    raise KeyError(name)


def _spec(study, name):
    return next((s, e) for e in study.experiments for s in e.figures if s.get("name") == name)


def _draw(fig):
    FigureCanvasAgg(fig).draw()
    return fig.canvas.get_renderer()


def _store(runs):
    empty = pd.DataFrame()
    return types.SimpleNamespace(runs=runs, flows=empty, queues=empty, samples=empty, series=empty, study_text="", provenance={})


def test_axis_labels_are_readable_with_units(synth, synth_study):
    labels = []
    for e in synth_study.experiments:
        for spec in e.figures:
            fig = plots.FIGURE_TYPES[spec["type"]](synth, spec, e)
            for ax in fig.axes:
                labels += [ax.get_xlabel(), ax.get_ylabel()]
    assert labels
    assert not [lab for lab in labels if "_bps" in lab or "goodput_" in lab or "induced_latency" in lab], labels
    fig = _fig(synth, synth_study, "rrul-ellipse")
    # 10/1 and 10/10 links: download and upload goodput in a row of panels each
    assert [ax.get_xlabel() for ax in fig.axes] == ["download goodput (Mbit/s)"] * 2 + ["upload goodput (Mbit/s)"] * 2
    assert fig.axes[0].get_ylabel() == "induced latency (ms)"
    assert _fig(synth, synth_study, "rrul-goodput").axes[0].get_ylabel() == "goodput (Mbit/s)"


def test_line_axis_takes_the_unit_of_its_labels():
    runs = pd.DataFrame({"run_id": [f"r{i}" for i in range(6)], "experiment": "t", "repetition": 0, "seed": 1,
                         "p_target": ["1ms", "5ms", "20ms"] * 2, "p_flows": ["1"] * 3 + ["16"] * 3,
                         "queue_delay_mean": [0.004, 0.008, 0.021, 0.006, 0.012, 0.025]})
    fig = plots.figure(_store(runs), {"type": "line", "x": "target", "y": "queue_delay_mean", "group": "flows", "diagonal": "target"})
    ax = fig.axes[0]
    assert ax.get_xlabel() == "target (ms)" and ax.get_ylabel() == "mean queueing delay (ms)"
    # the dashed target line is y = x in display units, across the whole x range
    diag = [ln for ln in ax.lines if ln.get_linestyle() == "--" and ln.get_label() == "target"]
    assert len(diag) == 1 and diag[0].get_label() == "target"
    x, y = diag[0].get_data()
    assert np.allclose(x, y) and x[0] <= 1 and x[-1] >= 20
    # one legend, right of the panel, never over the lines
    assert ax.get_legend() is None and len(fig.legends) == 1
    assert sorted(t.get_text() for t in fig.legends[0].get_texts()) == ["1", "16", "target"]
    r = _draw(fig)
    assert not fig.legends[0].get_window_extent(r).overlaps(ax.get_window_extent(r))


def test_line_names_axis_values_without_a_value():
    runs = pd.DataFrame({"run_id": list("abc"), "experiment": "w", "repetition": 0, "seed": 1,
                         "p_bandwidth": ["1Mbit", "4Mbit", "40Mbit"], "page_time": [np.nan, 9.0, 2.5]})
    fig = plots.figure(_store(runs), {"type": "line", "x": "bandwidth", "y": "page_time", "logy": True})
    ax = fig.axes[0]
    assert ax.get_xlabel() == "bandwidth (Mbit/s)" and ax.get_ylabel() == "page load time (ms)"
    assert ax.get_yscale() == "log"
    assert any("no page load time at bandwidth = 1Mbit" in t.get_text() for t in ax.texts)


def test_quick_mode_titles_say_the_real_run_length(synth, synth_study):
    from aqmlab.study import parse_study

    quick = parse_study(synth.study_text, quick=True)
    spec, e = _spec(quick, "rrul-goodput")
    title = plots.FIGURE_TYPES[spec["type"]](synth, spec, e)._suptitle.get_text().replace("\n", " ")
    # the full study's runs are 30 s: said in words, not as a factor
    assert "quick mode: runs shortened to 10 s of 30 s (flow start and stop times scaled with them), 2 repetitions" in title
    assert "×" not in title
    spec, e = _spec(synth_study, "rrul-goodput")
    assert "quick mode" not in plots.FIGURE_TYPES[spec["type"]](synth, spec, e)._suptitle.get_text()


def test_drop_pattern_panels_keep_their_y_tick_labels(synth, synth_study):
    sat = next(x for x in synth_study.experiments if x.name == "saturated")
    # a window past the end of the run has no data: the shared row must keep its ticks
    fig = plots.plot_queue_delay(synth, {"type": "queue_delay", "windows": [2, 500], "window": 0.5, "where": {"flows": "4"}}, sat)
    _draw(fig)
    first = [ax for ax in fig.axes if ax.get_subplotspec().colspan.start == 0]
    for ax in first:
        shown = [t.get_text() for t in ax.get_yticklabels() if t.get_visible() and t.get_text()]
        assert len(shown) >= 3, shown
    assert any("no data" in t.get_text() for ax in fig.axes for t in ax.texts)
    # a window past the end of the runs says so
    assert any("[500, 500.5) s is past the end of the 30 s runs" in t.get_text() for ax in fig.axes for t in ax.texts)


def test_state_trace_honours_facet(synth, synth_study):
    fig = _fig(synth, synth_study, "sat-state-by-flows")
    axes = [ax for ax in fig.axes if ax.get_subplotspec() is not None]
    assert len(axes) == 2 * 3  # rows: count, p; columns: flows = 1, 4, 16
    titles = [ax.get_title() for ax in axes if ax.get_title()]
    assert titles == ["flows = 1", "flows = 4", "flows = 16"]
    first_col = [ax for ax in axes if ax.get_subplotspec().colspan.start == 0]
    assert [ax.get_ylabel() for ax in first_col] == ["CoDel count", "drop probability p"]
    # each panel holds only its facet's trace: 16 flows drop more often than 1
    count_row = [ax for ax in axes if ax.get_subplotspec().rowspan.start == 0]
    n_steps = [max(len(ln.get_xdata()) for ln in ax.lines) for ax in count_row]
    assert n_steps[0] < n_steps[2]
    assert not any(ax.get_legend() for ax in axes) and len(fig.legends) == 1
    # samples come on change only: every line holds its last value to the run's end
    e = next(e for e in synth_study.experiments for sp in e.figures if sp.get("name") == "sat-state-by-flows")
    end = plots.experiment_length(e)
    assert end is not None
    for ax in axes:
        for ln in ax.lines:
            x, y = ln.get_xdata(), ln.get_ydata()
            assert x[-1] == pytest.approx(end) and y[-1] == y[-2]


def test_ellipse_legend_is_outside_the_data_with_seven_schemes():
    schemes = ["pfifo_fast", "ared", "sfq", "codel", "pie", "fq_codel", "fq_nocodel"]
    rng = np.random.default_rng(1)
    rows = []
    for link in ("1/1", "10/10", "10/1"):
        for i, q in enumerate(schemes):
            for r in range(5):
                rows.append({"run_id": f"{link}{q}{r}", "experiment": "rrul", "repetition": r, "seed": r,
                             "p_qdisc": q, "p_link": link, "goodput_down": 8e6 + 2e5 * i + rng.normal(0, 1e5),
                             "goodput_up": 7e6 + 1e5 * i + rng.normal(0, 1e5), "induced_latency": 0.005 + 0.01 * i + rng.normal(0, 0.002)})
    fig = plots.figure(_store(pd.DataFrame(rows)), {"type": "ellipse", "x": ["goodput_down", "goodput_up"], "y": "induced_latency",
                                                     "group": "qdisc", "facet": "link"})
    r = _draw(fig)
    assert not any(ax.get_legend() for ax in fig.axes)  # no legend inside a panel
    assert len(fig.legends) == 1
    leg = fig.legends[0]
    texts = [t.get_text() for t in leg.get_texts()]
    # colours per scheme, then the marker per direction: 9 entries, not 7 × 2
    assert sorted(texts[:7]) == sorted(schemes) and texts[7:] == ["download goodput", "upload goodput"]
    lb = leg.get_window_extent(r)
    for ax in fig.axes:
        assert not lb.overlaps(ax.get_window_extent(r)), "legend covers a panel"
    assert not lb.overlaps(fig._suptitle.get_window_extent(r)), "legend covers the title"
    fb = fig.bbox
    assert lb.x1 <= fb.x1 + 1 and lb.y0 >= fb.y0 - 1  # and it fits the figure
    assert min(t.get_fontsize() for t in leg.get_texts()) >= 8


def test_box_figure_draws_download_upload_latency_per_group(synth, synth_study):
    fig = _fig(synth, synth_study, "rrul-box")
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["download", "upload", "induced latency"]
    assert [ax.get_ylabel() for ax in axes] == ["download (Mbit/s)", "upload (Mbit/s)", "induced latency (ms)"]
    assert axes[2].get_yscale() == "log"
    for ax in axes:
        assert [t.get_text() for t in ax.get_xticklabels()] == ["fifo", "codel", "fq_codel"]
    # download boxes: the sum of the 4 flows per 1 s bin, around the runs' total goodput (Mbit/s)
    quartiles = [(b.get_path().vertices[:, 1].min(), b.get_path().vertices[:, 1].max()) for b in axes[0].patches]
    assert len(quartiles) == 3
    assert all(7 < q1 <= q3 < 11 for q1, q3 in quartiles), quartiles


@pytest.mark.parametrize("name", ["rrul-goodput", "rrul-transient"])
def test_timeseries_legend_is_outside_the_data(synth, synth_study, name):
    fig = _fig(synth, synth_study, name)
    r = _draw(fig)
    assert not any(ax.get_legend() for ax in fig.axes) and len(fig.legends) == 1
    lb = fig.legends[0].get_window_extent(r)
    assert not any(lb.overlaps(ax.get_window_extent(r)) for ax in fig.axes)
    assert not lb.overlaps(fig._suptitle.get_window_extent(r)), "legend covers the title"


def test_bar_hue_legend_is_outside_the_bars(synth, synth_study):
    e = next(x for x in synth_study.experiments if x.name == "rtt_fair")
    spec = next(s for s in e.figures if s.get("hue") == "flow")
    fig = plots.FIGURE_TYPES["bar"](synth, spec, e)
    r = _draw(fig)
    assert len(fig.legends) == 1 and not fig.axes[0].get_legend()
    assert not fig.legends[0].get_window_extent(r).overlaps(fig.axes[0].get_window_extent(r))


@pytest.mark.parametrize("kind", ["line", "bar"])
def test_values_that_agree_to_many_digits_are_drawn_as_plain_numbers(kind):
    """Jain's index 0.99999 … 1.0 over the flow counts: no matplotlib offset notation
    ("1e-5+9.9999e-1", read as a range of -0.4 to 1.0), and a line figure's y axis is
    widened to 0.1 % of the values' size, so the noise in the fifth decimal is not drawn
    as a fall."""
    runs = pd.DataFrame({"run_id": [f"r{i}" for i in range(6)], "experiment": "n", "repetition": [0, 1] * 3, "seed": 1,
                         "p_flows": ["1", "1", "4", "4", "16", "16"],
                         "jain": [1.0, 1.0, 0.999997, 0.999996, 0.9999905, 0.99999]})
    spec = {"type": kind, "x": "flows", "y": "jain"}
    fig = plots.figure(_store(runs), spec)
    ax = fig.axes[0]
    _draw(fig)
    assert ax.yaxis.get_offset_text().get_text() == ""
    if kind == "bar":  # bars start at 0: their axis spans the values' size anyway
        return
    lo, hi = ax.get_ylim()
    assert hi - lo >= 0.999e-3 and lo <= 0.99999 and hi >= 1.0
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert all(0.99 < float(t.replace("−", "-")) < 1.01 for t in labels), labels
    # a ylim in the spec is kept as given
    fig = plots.figure(_store(runs), {**spec, "ylim": [0.99999, 1.0]})
    assert fig.axes[0].get_ylim() == pytest.approx((0.99999, 1.0))
