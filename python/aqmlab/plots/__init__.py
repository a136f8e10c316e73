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

The package's modules: :mod:`aqmlab.plots.spec` (the keys of a figure spec, and their
check), :mod:`aqmlab.plots.select` (which rows of the store a spec draws),
:mod:`aqmlab.plots.kinds` (one function per figure type) and
:mod:`aqmlab.plots.render` (drawing a study's figures into files).
"""
from __future__ import annotations

from aqmlab.plots.kinds import (
    FIGURE_TYPES,
    plot_bar,
    plot_box,
    plot_cdf,
    plot_drop_rate,
    plot_ellipse,
    plot_flows_vs_rtt,
    plot_line,
    plot_queue_delay,
    plot_state_trace,
    plot_timeseries,
)
from aqmlab.plots.render import (
    FORMATS,
    FigureJob,
    FigureRecord,
    check_formats,
    figure,
    render_figure_records,
    render_figures,
)
from aqmlab.plots.runview import plot_compare, plot_run
from aqmlab.plots.select import experiment_length, resample_rows
from aqmlab.plots.spec import SERIES_METRICS, FigureSpecError, validate_spec

__all__ = [
    "FigureSpecError",
    "FIGURE_TYPES",
    "SERIES_METRICS",
    "FigureJob",
    "FigureRecord",
    "check_formats",
    "FORMATS",
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
    "plot_run",
    "plot_compare",
    "resample_rows",
    "experiment_length",
]
