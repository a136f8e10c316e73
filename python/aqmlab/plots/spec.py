"""The keys of a figure spec, and their check (:func:`validate_spec`).

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
    logarithmic axes: true or false. Default: a delay axis (RTT, one-way delay,
    sojourn, latency: any quantity shown in ms) is logarithmic when the values drawn
    span more than 2 decades (1st to 99th percentile, nearly all positive) — FIFO's
    seconds beside fq_codel's milliseconds — and the figure's note says so; every
    other axis is linear.
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
    with the repetitions as small dots. No ellipse from fewer than 3 repetitions (the
    note says so); on a log axis the ellipse is that of the logarithm of the values.
    ``x``, ``y``: measures (run-level columns); one of them may be a list to plot
    several measures against the same other one (asymmetric links: both
    directions' goodput against the same latency; markers ● ▲ ■ … per entry).
    ``split``: ``true`` gives each measure of that list a row of panels of its own,
    ``false`` draws them on one axis; default ``"auto"``: split when their medians
    differ by more than 3× in some panel (a 10/1 link's upload beside its download).
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
``bar`` — mean over repetitions with its 95 % confidence interval (Student t; no
    interval from fewer than 3 repetitions: the values are drawn as dots instead). On a
    log axis (``logy`` or a delay spanning decades) each mean is a point with its
    interval instead of a bar (a bar's length means nothing on a log axis). ``y``: a measure (default source) or, with
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

Lines of different groups differ in colour, line style and marker, so that lines that
coincide stay visible. Intervals over repetitions (``bar``, ``line``,
``flows_vs_rtt``) need 3 repetitions; the figure's note says what the whiskers are.

In quick mode every title gets a line saying what the runs really were ("quick mode:
runs shortened to 25 s of 500 s (flow start and stop times scaled with them), 1
repetition"). The ``ellipse`` legend sits right of the
panels, outside the data.

Missing data never raises: the figure (or panel) says "no data" and why. A spec
that is wrong (unknown type or key, missing required key, unknown axis) raises
:class:`FigureSpecError` naming the key — :func:`render_figures` turns that into
an error figure unless ``strict=True``.
"""
from __future__ import annotations

__all__ = ["FigureSpecError", "SERIES_METRICS", "validate_spec"]


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
    "ellipse": ({"x", "y"}, {"flip", "split"}),
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

