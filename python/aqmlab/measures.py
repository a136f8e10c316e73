"""Run-level measures: one number per run, computed from a :class:`aqmlab.Result`.

Studies name the measures they report (``measures = ["goodput_down", ...]``); each is a
function of the run's tables. Conventions: in a dumbbell, flows sent by ``client*`` hosts
are *upstream* and flows sent by ``server*`` hosts *downstream*; TCP bulk transfers are the
flows of kind ``bulk``; latency probes are ``ping`` and ``udp_rr``.

Application measures: ``page_time`` (web), ``wrt_mean``/``wrt_sd`` (WRT),
``web_object_time`` (web users), ``has_playback_rate``, ``has_adaptation_rate``,
``has_rebuffer`` and ``has_bias`` (HAS; the DOCSIS study's videoPlaybackRate,
adaptationRate, rebufferTime and applicationBias).

Generic forms are accepted too:

- ``flow:<name>.<column>``: a column of one flow's row (e.g. ``flow:voip0.r_value``);
- ``mean:<kind>.<column>`` / ``sum:<kind>.<column>``: over all flows of a kind
  (e.g. ``mean:web.page_time_mean``);
- ``queue:<name>.<column>``: a column of one queue's row (e.g.
  ``queue:bottleneck_down.sojourn_p99``);
- ``ratio:<A>/<B>``: summed goodput of the flows named ``A*`` over that of ``B*`` (e.g.
  ``ratio:prague/cubic``, the L4S study's throughput ratio);
- ``induced:<suffix>``: the induced latency of the latency probes whose name ends in
  ``.<suffix>`` (e.g. ``induced:udp_ef``, the EF-marked UDP probe of ``rrul``);
- ``induced_ratio:<A>/<B>``: ``induced:A`` over ``induced:B`` (e.g.
  ``induced_ratio:udp_ef/udp_be``: below 1 when EF is served ahead of best effort).

DualPI2 measures (NaN on other qdiscs): ``l_delay_mean``/``l_delay_p99`` and
``c_delay_mean``/``c_delay_p99`` (per-queue sojourn of the busiest bottleneck) and
``pi2_prob_mean`` (the queue column ``p_prime_mean``; measure names must not start with
``p_``, the prefix of axis columns).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from aqmlab import metrics
from aqmlab._naming import did_you_mean
from aqmlab.result import direction, is_bottleneck_link, link_drop_fraction, link_utilization

if TYPE_CHECKING:
    from aqmlab.result import Result

__all__ = ["MEASURES", "MeasureError", "compute", "describe", "validate"]

TCP_KINDS = ("bulk",)
PROBE_KINDS = ("ping", "udp_rr")


def _memo(res: Result, key: Any, make: Callable[[], Any]) -> Any:
    """What ``make()`` derives from `res`, computed once per Result: several measures of a
    run read the same rows (the TCP bulk flows, each one's direction, the goodput sums
    that ``up_share`` shares with ``goodput_up``/``goodput_down``). Measures never change
    what they read, so the shared value is what each would have computed; it is kept
    with the flows table it came from and dropped if the object's ``flows`` is replaced."""
    attrs = getattr(res, "__dict__", None)
    if attrs is None:
        return make()
    flows = res.flows
    memo = attrs.get("_measure_memo")
    if memo is None or memo[0] is not flows:
        memo = attrs["_measure_memo"] = (flows, {})
    kept = memo[1]
    if key not in kept:
        kept[key] = make()
    return kept[key]


# -- the simulator's columns -------------------------------------------------------------
# A sweep's run computes its measures and then stores its tables straight from the
# simulator's columns: building the flows and queues DataFrames for the measures alone
# cost more than the measures. The measures a study usually names read those columns
# directly when they can (a Result from :func:`aqmlab.run` whose table was not yet
# built or replaced); each gives what it computes from the DataFrame
# (test_measures checks both ways on every residential experiment).


def _columns(res: Result, table: str) -> Mapping[str, Any] | None:
    """The simulator's columns of `table` ("flows" or "queues") of `res` (lists, one value
    per row of the DataFrame built from them), or None when the measures must read the
    DataFrame: no such columns, or ``res.<table>`` already built or replaced."""
    attrs = getattr(res, "__dict__", None)
    raw = getattr(res, "_raw", None)
    if attrs is None or table in attrs or not isinstance(raw, Mapping):
        return None
    cols = raw.get(table)
    if not isinstance(cols, Mapping) or "name" not in cols:
        return None
    return cols


def _raw_memo(res: Result, cols: Mapping[str, Any], key: Any, make: Callable[[], Any]) -> Any:
    """:func:`_memo` for values derived from the simulator's columns `cols`."""
    attrs = res.__dict__
    memo = attrs.get("_measure_raw_memo")
    if memo is None or memo[0] is not cols:
        memo = attrs["_measure_raw_memo"] = (cols, {})
    kept: dict[Any, Any] = memo[1]
    if key not in kept:
        kept[key] = make()
    return kept[key]


def _rows_where(res: Result, cols: Mapping[str, Any], column: str, values: tuple[str, ...]) -> np.ndarray:
    """Positions (in table order) of the rows whose `column` is one of `values`."""
    return _raw_memo(res, cols, ("rows", column, values),
                     lambda: np.array([i for i, v in enumerate(cols[column]) if v in values], dtype=np.intp))


def _floats(cols: Mapping[str, Any], column: str, rows: np.ndarray) -> np.ndarray:
    """Column `column` at `rows` as float64: ``DataFrame(cols)[column].astype(float)``
    (None is NaN)."""
    return np.asarray(cols[column], dtype=float)[rows]


def _nansum(v: np.ndarray) -> float:
    """``pandas.Series(v).sum()`` of a float64 array: NaN counts as 0, the rest summed as
    numpy sums (pairwise) with the NaNs in place."""
    nan = np.isnan(v)
    return float((np.where(nan, 0.0, v) if nan.any() else v).sum())


def _nanmean(v: np.ndarray) -> float:
    """``pandas.Series(v).mean()`` of a float64 array: that sum over the values that are
    not NaN (NaN if none)."""
    n = v.size - int(np.isnan(v).sum())
    return _nansum(v) / n if n else math.nan


def _of_kind(res: Result, kind: str):
    """The flows of `kind` (shared by the measures of one Result)."""

    def make():
        f = res.flows
        return f[f["kind"] == kind]

    return _memo(res, ("kind", kind), make)


def _tcp(res: Result):
    def make():
        f = res.flows
        return f[f["kind"].isin(TCP_KINDS)]

    return _memo(res, "tcp", make)


def _goodput(way: str) -> Callable[[Result], float]:
    def make(res: Result) -> float:
        f = _tcp(res)
        f = f[_memo(res, "tcp_direction", lambda: f["src"].map(direction)) == way]
        return float(f["goodput_bps"].sum()) if len(f) else math.nan

    def of_columns(res: Result, cols: Mapping[str, Any]) -> float:
        tcp = _rows_where(res, cols, "kind", TCP_KINDS)
        ways = _raw_memo(res, cols, "tcp_direction", lambda: [direction(cols["src"][i]) for i in tcp])
        rows = tcp[[w == way for w in ways]] if len(tcp) else tcp
        return _nansum(_floats(cols, "goodput_bps", rows)) if len(rows) else math.nan

    def g(res: Result) -> float:
        cols = _columns(res, "flows")
        if cols is not None:
            return float(_raw_memo(res, cols, ("goodput", way), lambda: of_columns(res, cols)))
        return float(_memo(res, ("goodput", way), lambda: make(res)))

    return g


def _probe_rtts(res: Result, suffix: str | None = None) -> tuple[np.ndarray, float]:
    cols = _columns(res, "flows") if suffix is None else None
    if cols is not None:
        rows = _rows_where(res, cols, "kind", PROBE_KINDS)
        if not len(rows):
            return np.array([]), math.nan
        rtts = _flow_rtts_of_columns(res, [cols["name"][i] for i in rows])
        if rtts is not None:
            return rtts, _nanmean(_floats(cols, "base_rtt", rows))
    f = res.flows
    probes = f[f["kind"].isin(PROBE_KINDS)]
    if suffix is not None:
        probes = probes[probes["name"].astype(str).str.endswith("." + suffix)]
    if probes.empty:
        return np.array([]), math.nan
    names = list(probes["name"])
    rtts = _flow_rtts_of_columns(res, names)
    if rtts is None:
        s = res.samples
        s = s[(s["kind"] == "flow") & (s["metric"] == "rtt") & (s["entity"].isin(names)) & (s["t"] >= res.warmup)]
        rtts = s["value"].to_numpy(dtype=float)
    return rtts, float(probes["base_rtt"].mean())


def _flow_rtts_of_columns(res: Result, names: list[str]) -> np.ndarray | None:
    """The ``rtt`` samples after warm-up of the flows `names`, in table order: the rows
    :func:`_probe_rtts` selects from ``res.samples``, taken from the simulator's columns
    without building that table (a sweep's run does not otherwise need it). None when
    `res` has no such columns or its names would not make that table (then it is used)."""
    from aqmlab.result import dedup_names

    raw = getattr(res, "_raw", None)
    metric_names = getattr(res, "metric_names", None)
    if not isinstance(raw, Mapping) or not isinstance(raw.get("samples"), Mapping) or not metric_names \
            or len(set(metric_names)) != len(metric_names):
        return None
    if "rtt" not in metric_names:
        return np.array([], dtype=float)
    flow_names, queue_names = list(raw["flows"]["name"]), list(raw["queues"]["name"])
    cats, lut = dedup_names(flow_names + queue_names)
    if not len(lut):
        return None
    t = raw["samples"]
    kind = t["kind"].astype(np.int64)
    codes = lut[t["entity"].astype(np.int64) + kind * len(flow_names)]
    wanted = set(names)
    probe = np.array([c in wanted for c in cats], dtype=bool)
    keep = (kind == 0) & (t["metric"].astype(np.int64) == metric_names.index("rtt")) & probe[codes] & (t["t"] >= res.warmup)
    return np.asarray(t["value"][keep], dtype=float)


def induced_latency(res: Result) -> float:
    """Mean RTT of the latency probes after warm-up minus their base RTT (seconds)."""
    rtts, base = _probe_rtts(res)
    return metrics.induced_latency(rtts, base) if rtts.size else math.nan


def induced_latency_of(res: Result, suffix: str) -> float:
    """`induced:SUFFIX`: induced latency of the probes named ``*.SUFFIX`` (seconds)."""
    rtts, base = _probe_rtts(res, suffix)
    return metrics.induced_latency(rtts, base) if rtts.size else math.nan


def mos_from_r(r: float) -> float:
    """ITU-T G.107 (06/2015) Annex B, eq. B-4: the mean opinion score (conversational
    quality) of a transmission rating R: 1 below R = 0, 4.5 above R = 100, else
    1 + 0.035 R + R (R - 60) (100 - R) 7e-6."""
    if not math.isfinite(r):
        return math.nan
    if r <= 0:
        return 1.0
    if r >= 100:
        return 4.5
    return 1.0 + 0.035 * r + r * (r - 60.0) * (100.0 - r) * 7e-6


def voip_mos(res: Result) -> float:
    """Mean over VoIP flows of the MOS of their E-model R-value (G.107 Annex B)."""
    f = res.flows
    f = _of_kind(res, "voip")
    if f.empty or "r_value" not in f.columns:
        return math.nan
    vals = [mos_from_r(float(r)) for r in f["r_value"]]
    vals = [v for v in vals if math.isfinite(v)]
    return float(np.mean(vals)) if vals else math.nan


def jain_tcp(res: Result) -> float:
    """Jain's index over the goodputs of the TCP bulk flows."""
    cols = _columns(res, "flows")
    if cols is not None:
        rows = _rows_where(res, cols, "kind", TCP_KINDS)
        return metrics.jain_index(_floats(cols, "goodput_bps", rows)) if len(rows) else math.nan
    f = _tcp(res)
    return metrics.jain_index(f["goodput_bps"]) if len(f) else math.nan


def _weighted(kind: str, col: str, weight: str) -> Callable[[Result], float]:
    """Mean of a per-flow mean column over the flows of `kind`, weighted by their counts
    (`weight`): the mean over all events (pages, responses, objects) of those flows."""

    def g(res: Result) -> float:
        cols = _columns(res, "flows")
        if cols is not None:
            rows = _rows_where(res, cols, "kind", (kind,))
            if not len(rows) or col not in cols or weight not in cols:
                return math.nan
            v, w = _floats(cols, col, rows), _floats(cols, weight, rows)
        else:
            f = _of_kind(res, kind)
            if f.empty or col not in f.columns or weight not in f.columns:
                return math.nan
            v, w = f[col].astype(float).to_numpy(), f[weight].astype(float).to_numpy()
        ok = np.isfinite(v) & np.isfinite(w) & (w > 0)
        return float(np.sum(v[ok] * w[ok]) / np.sum(w[ok])) if ok.any() else math.nan

    return g


def _pooled_sd(kind: str, mean: str, sd: str, count: str) -> Callable[[Result], float]:
    """Standard deviation over all events of the flows of `kind`, pooled from each flow's
    count, mean and sample standard deviation (equal to the sd of the pooled values)."""

    def g(res: Result) -> float:
        f = _of_kind(res, kind)
        if f.empty or not {mean, sd, count} <= set(f.columns):
            return math.nan
        n = f[count].astype(float).to_numpy()
        m = f[mean].astype(float).to_numpy()
        s = np.nan_to_num(f[sd].astype(float).to_numpy())  # one event: no spread
        ok = (n > 0) & np.isfinite(m)
        n, m, s = n[ok], m[ok], s[ok]
        total = n.sum()
        if total < 2:
            return math.nan
        grand = float(np.sum(n * m) / total)
        ss = np.sum((n - 1) * s**2) + np.sum(n * (m - grand) ** 2)
        return float(math.sqrt(ss / (total - 1)))

    return g


def has_application_bias(res: Result) -> float:
    """The DOCSIS study's applicationBias of the HAS flows: percent by which their summed
    goodput lies above (+) or below (-) their max-min fair share of the bandwidth that the
    HAS flows and the TCP bulk flows carrying data in the same direction actually consumed.
    A HAS flow's demand is capped at its top bitrate (`max_bitrate`); bulk flows are greedy."""
    f = res.flows
    has = f[f["kind"] == "has"]
    if has.empty:
        return math.nan
    # HAS data flows server -> player (dst -> src); bulk data flows src -> dst.
    data_dir = has["dst"].map(direction).iloc[0]
    bulk = _tcp(res)
    bulk = bulk[bulk["src"].map(direction) == data_dir]
    tput = np.concatenate([has["goodput_bps"].to_numpy(float), bulk["goodput_bps"].to_numpy(float)])
    caps = list(has["max_bitrate"].astype(float)) + [math.inf] * len(bulk)
    shares = metrics.max_min_fair(float(tput.sum()), demands=caps)
    return metrics.application_bias(float(tput[: len(has)].sum()), float(shares[: len(has)].sum()))


def _flow_kind_col(kind: str, col: str, how: str) -> Callable[[Result], float]:
    def g(res: Result) -> float:
        cols = _columns(res, "flows")
        if cols is not None:
            rows = _rows_where(res, cols, "kind", (kind,))
            if not len(rows) or col not in cols:
                return math.nan
            a = _floats(cols, col, rows)
            return _nanmean(a) if how == "mean" else _nansum(a)
        f = _of_kind(res, kind)
        if f.empty or col not in f.columns:
            return math.nan
        v = f[col].astype(float)
        return float(v.mean() if how == "mean" else v.sum())

    return g


def _bottleneck_rows(res: Result):
    q = res.queues
    return q[[is_bottleneck_link(str(n)) for n in q["name"]]] if len(q) else q


def _busiest_bottleneck(res: Result):
    """The bottleneck queue a run-level queue measure reads: of the links the topology
    builder names as bottlenecks (:func:`aqmlab.result.is_bottleneck_link`), the one that
    sent the most bytes; in a topology without such names, the link nearest its capacity
    (highest utilisation of its rate or shaper rate), not the one carrying the most bytes,
    which is usually a fast core link in front of the real bottleneck."""
    q = res.queues
    if not len(q):
        return None
    b = _bottleneck_rows(res)
    if len(b):
        return b.loc[b["tx_bytes"].idxmax()]
    util = [link_utilization(row) for _, row in q.iterrows()]
    if all(math.isnan(u) for u in util):
        return q.loc[q["tx_bytes"].idxmax()]
    return q.iloc[int(np.nanargmax(util))]


def below_qdisc_latency(res: Result) -> float:
    """Time frames spend below the qdisc on the WiFi hop, summed over its interfaces (s).

    Each WiFi interface reports ``below_qdisc_mean``: the mean time from its driver taking
    a frame from the qdisc to the end of the PPDU that delivers it (driver queue,
    aggregation, contention, retries, airtime). With one station the sum over the AP's and
    the station's interface is what a round trip through the hop spends below the qdiscs.
    """
    cols = _columns(res, "queues")
    if cols is not None:
        if "lower" not in cols or "below_qdisc_mean" not in cols:
            return math.nan
        a = _floats(cols, "below_qdisc_mean", np.array([i for i, v in enumerate(cols["lower"]) if v == "wifi"], dtype=np.intp))
        a = a[~np.isnan(a)]
        return float(a.sum()) if len(a) else math.nan
    q = res.queues
    if "lower" not in q.columns or "below_qdisc_mean" not in q.columns:
        return math.nan
    w = q[q["lower"] == "wifi"]["below_qdisc_mean"].dropna()
    return float(w.sum()) if len(w) else math.nan


def up_share(res: Result) -> float:
    """Upstream share of the TCP bulk goodput: up / (up + down)."""
    up, down = _goodput("up")(res), _goodput("down")(res)
    return up / (up + down) if up + down > 0 else math.nan


def _on_bottleneck(res: Result, f: Callable[[Any], float]) -> float:
    row = _busiest_bottleneck(res)
    return float(f(row)) if row is not None else math.nan


def _bq(col: str) -> Callable[[Result], float]:
    def g(res: Result) -> float:
        row = _busiest_bottleneck(res)
        return float(row[col]) if row is not None and col in row.index else math.nan

    return g


MEASURES: dict[str, tuple[Callable[[Result], float], str]] = {
    "queue_delay_mean": (_bq("sojourn_mean"), "mean sojourn time in the busiest bottleneck queue after warm-up (s)"),
    "queue_delay_p99": (_bq("sojourn_p99"), "99th percentile sojourn time in the busiest bottleneck queue (s)"),
    "utilization": (
        lambda r: _on_bottleneck(r, link_utilization),
        "utilisation of the busiest bottleneck direction after warm-up (of the shaper rate on a shaped link)",
    ),
    "drop_rate": (
        lambda r: _on_bottleneck(r, link_drop_fraction),
        "fraction of the packets arriving at the busiest bottleneck that were dropped (dropped / arrived)",
    ),
    "goodput_up": (_goodput("up"), "sum of upstream TCP bulk goodput after warm-up (bit/s)"),
    "goodput_down": (_goodput("down"), "sum of downstream TCP bulk goodput after warm-up (bit/s)"),
    "goodput_total": (lambda r: float(_tcp(r)["goodput_bps"].sum()), "sum of all TCP bulk goodput (bit/s)"),
    "induced_latency": (induced_latency, "mean probe RTT minus base RTT (s)"),
    "below_qdisc_latency": (
        below_qdisc_latency,
        "WiFi: time frames spend below the qdisc (driver queue to delivery), summed over the WiFi interfaces: up + down (s)",
    ),
    "up_share": (up_share, "upstream share of the TCP bulk goodput, up / (up + down)"),
    "jain": (jain_tcp, "Jain's fairness index over TCP bulk goodputs"),
    "voip_loss": (_flow_kind_col("voip", "loss_rate", "mean"), "VoIP packet loss rate"),
    "voip_owd": (_flow_kind_col("voip", "owd_mean", "mean"), "VoIP mean one-way delay (s)"),
    "voip_r": (_flow_kind_col("voip", "r_value", "mean"), "VoIP E-model R-value"),
    "voip_mos": (voip_mos, "VoIP mean opinion score from the E-model R-value (ITU-T G.107 Annex B, 1 to 4.5)"),
    "cbr_goodput": (_flow_kind_col("cbr", "goodput_bps", "sum"), "sum of CBR goodput (bit/s)"),
    "page_time": (_weighted("web", "page_time_mean", "pages"), "web: mean page fetch time over all pages after warm-up (s)"),
    "wrt_mean": (_weighted("wrt", "response_time_mean", "responses"), "WRT: mean response time (s)"),
    "wrt_sd": (
        _pooled_sd("wrt", "response_time_mean", "response_time_sd", "responses"),
        "WRT: standard deviation of the response time (s)",
    ),
    "web_object_time": (_weighted("web_users", "object_time_mean", "objects"), "web users: mean object response time (s)"),
    "has_playback_rate": (_flow_kind_col("has", "video_playback_rate", "mean"), "HAS: videoPlaybackRate, mean over HAS flows (Mbit/s)"),
    "has_adaptation_rate": (
        _flow_kind_col("has", "adaptation_rate", "mean"),
        "HAS: adaptationRate, mean over HAS flows (changes per hour)",
    ),
    "has_rebuffer": (_flow_kind_col("has", "rebuffer_time", "mean"), "HAS: rebufferTime, mean over HAS flows (% of time stalled)"),
    "has_bias": (has_application_bias, "HAS: applicationBias vs the max-min fair share (%)"),
    "l_delay_mean": (_bq("l_sojourn_mean"), "DualPI2: mean sojourn in the L (L4S) queue of the busiest bottleneck (s)"),
    "l_delay_p99": (_bq("l_sojourn_p99"), "DualPI2: 99th percentile sojourn in the L (L4S) queue (s)"),
    "c_delay_mean": (_bq("c_sojourn_mean"), "DualPI2: mean sojourn in the C (classic) queue (s)"),
    "c_delay_p99": (_bq("c_sojourn_p99"), "DualPI2: 99th percentile sojourn in the C (classic) queue (s)"),
    "pi2_prob_mean": (_bq("p_prime_mean"), "DualPI2: time-mean base probability p' (p_C = p'^2, p_CL = k p')"),
    "bottleneck_utilization": (
        lambda r: float(
            max((link_utilization(row) for _, row in _bottleneck_rows(r).iterrows()), default=math.nan)
        ),
        "utilisation of the busiest bottleneck direction (of the shaper rate on a shaped link)",
    ),
}


def describe() -> dict[str, str]:
    return {k: v[1] for k, v in MEASURES.items()}


def _generic(res: Result, name: str) -> float:
    head, _, rest = name.partition(":")
    target, _, col = rest.rpartition(".")
    if head == "flow":
        f = res.flows[res.flows["name"] == target]
        return float(f[col].iloc[0]) if len(f) and col in f.columns else math.nan
    if head == "queue":
        q = res.queues[res.queues["name"] == target]
        return float(q[col].iloc[0]) if len(q) and col in q.columns else math.nan
    if head in ("mean", "sum"):
        return _flow_kind_col(target, col, head)(res)
    if head == "ratio":
        return goodput_ratio(res, *rest.split("/", 1))
    if head == "induced":
        return induced_latency_of(res, rest)
    if head == "induced_ratio":
        a, b = (induced_latency_of(res, x) for x in rest.split("/", 1))
        return a / b if b > 0 else math.nan
    raise KeyError(name)


def goodput_ratio(res: Result, a: str, b: str) -> float:
    """`ratio:A/B`: summed goodput of the flows whose name starts with A over that of the
    flows whose name starts with B (e.g. ``ratio:prague/cubic``)."""
    f = res.flows
    ga = float(f[f["name"].str.startswith(a)]["goodput_bps"].sum())
    gb = float(f[f["name"].str.startswith(b)]["goodput_bps"].sum())
    return ga / gb if gb > 0 else math.nan


class MeasureColumnError(ValueError):
    """A generic measure (``flow:NAME.COL``, ``queue:NAME.COL``, ``mean:KIND.COL``,
    ``sum:KIND.COL``) names a column or flow kind no result table has."""


@functools.cache
def _known_columns() -> tuple[frozenset[str], frozenset[str]]:
    """Every column the flows and the queues tables can have (fixed and per kind)."""
    from aqmlab import schema

    flows = frozenset(schema.flow_columns(tuple(schema.FLOW_KIND_COLUMNS)))
    queues = frozenset(schema.queue_columns()) | {c for cs in schema.QUEUE_EXTRA_COLUMNS.values() for c in cs}
    return flows, queues


def _column_problem(head: str, target: str, col: str) -> str | None:
    """Why ``HEAD:TARGET.COL`` can never give a number (None if it can)."""
    from aqmlab import schema

    if head in ("mean", "sum") and target not in schema.FLOW_KIND_COLUMNS:
        kinds = sorted(schema.FLOW_KIND_COLUMNS)
        return f"no flow kind {target!r}{did_you_mean(target, kinds)} (kinds in the flows table: {', '.join(kinds)})"
    flows, queues = _known_columns()
    if head in ("mean", "sum"):
        known, table = frozenset(schema.flow_columns((target,))), f"flows table for kind {target!r}"
    elif head == "flow":
        known, table = flows, "flows table"
    else:
        known, table = queues, "queues table"
    if col in known:
        return None
    return f"no column {col!r} in the {table}{did_you_mean(col, sorted(known))} (`aqmlab list columns -v` lists them)"


def validate(names: list[str]) -> None:
    """Raises ValueError for a measure name that is neither registered nor generic, and
    :class:`MeasureColumnError` for a generic one whose column (or flow kind) no result
    table has: such a measure would be NaN in every run."""
    for n in names:
        if n in MEASURES:
            continue
        head, sep, rest = n.partition(":")
        if sep and head in ("flow", "queue", "mean", "sum") and "." in rest:
            target, _, col = rest.rpartition(".")
            problem = _column_problem(head, target, col)
            if problem:
                raise MeasureColumnError(f"measure {n!r}: {problem}")
            continue
        if sep and head == "ratio" and rest.count("/") == 1 and all(rest.split("/")):
            continue
        if sep and head == "induced" and rest and "." not in rest:
            continue
        if sep and head == "induced_ratio" and rest.count("/") == 1 and all(rest.split("/")):
            continue
        raise ValueError(
            f"unknown measure {n!r} (known: {', '.join(MEASURES)}; or flow:NAME.COL, queue:NAME.COL, mean:KIND.COL, sum:KIND.COL, "
            "ratio:FLOWPREFIX/FLOWPREFIX, induced:PROBESUFFIX, induced_ratio:PROBESUFFIX/PROBESUFFIX)"
        )


class MeasureError(RuntimeError):
    """A measure failed on a run's tables (a bug in the measure or in the tables), not a
    run that lacks the data: that gives NaN."""


def compute(res: Result, names: list[str]) -> dict[str, float]:
    """One number per measure name.

    - An unknown name, or a generic one naming a column no result table has, raises
      ``ValueError`` (the same check as :func:`validate`, which a study makes when it is
      loaded).
    - Data the run genuinely does not have gives NaN, decided inside each measure: no
      flow of the kind it reads (``voip_r`` without VoIP flows), no such flow or queue,
      a column of another flow kind or engine (``flow:NAME.COL``; a column the Linux
      engine does not fill), a DualPI2 column on another qdisc, nothing after warm-up.
    - Any exception from a measure is not turned into NaN: it is raised as
      :class:`MeasureError` naming the measure.
    """
    validate(names)
    out = {}
    for n in names:
        try:
            v = MEASURES[n][0](res) if n in MEASURES else _generic(res, n)
        except Exception as e:
            raise MeasureError(f"measure {n!r}: {type(e).__name__}: {e}") from e
        out[n] = float(v)
    return out
