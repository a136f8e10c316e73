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
from collections.abc import Callable, Iterator, Mapping
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


# -- a run's tables as columns ------------------------------------------------------------
# Every measure reads the flows and queues tables as a column mapping (column name ->
# values, one per row, in table order). A sweep's run has the simulator's own columns
# (lists): building the flows/queues DataFrames for the measures alone cost more than the
# measures, so they are read as they are while ``res.flows``/``res.queues`` is not yet
# built or replaced; otherwise the DataFrame's columns are read (as NumPy arrays). Sums
# and means are pandas' (NaN skipped, numpy's pairwise sum over the rows in table order),
# so a measure is the same float either way (test_measures checks both ways on every
# residential experiment).


class _FrameColumns(Mapping[str, Any]):
    """A DataFrame's columns as a column mapping: each column's values as a NumPy array
    (converted when first read)."""

    __slots__ = ("_df", "_got")

    def __init__(self, df: Any) -> None:
        self._df = df
        self._got: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._got:
            self._got[name] = self._df[name].to_numpy()
        return self._got[name]

    def __contains__(self, name: object) -> bool:
        return name in self._df.columns

    def __iter__(self) -> Iterator[str]:
        return iter(self._df.columns)

    def __len__(self) -> int:
        return len(self._df.columns)


class _Table:
    """One table of a run ("flows" or "queues") as a column mapping, and what the measures
    of the run derive from it (the rows of a kind, the TCP flows' directions, the goodput
    sums that ``up_share`` shares with ``goodput_up``/``goodput_down``), each derived once."""

    __slots__ = ("source", "cols", "n", "_derived")

    def __init__(self, source: Any, cols: Mapping[str, Any], n: int) -> None:
        self.source = source
        self.cols = cols
        self.n = n
        self._derived: dict[Any, Any] = {}

    def derived(self, key: Any, make: Callable[[], Any]) -> Any:
        kept = self._derived
        if key not in kept:
            kept[key] = make()
        return kept[key]

    def has(self, *columns: str) -> bool:
        return all(c in self.cols for c in columns)

    def rows(self, column: str, values: tuple[str, ...]) -> np.ndarray:
        """Positions (in table order) of the rows whose `column` is one of `values`."""
        col = self.cols[column]
        return self.derived(("rows", column, values),
                            lambda: np.array([i for i, v in enumerate(col) if v in values], dtype=np.intp))

    def rows_if(self, column: str, keep: Callable[[Any], bool], rows: np.ndarray | None = None) -> np.ndarray:
        """Positions of the rows (of `rows`, default all) whose `column` value passes `keep`."""
        col = self.cols[column]
        among = range(self.n) if rows is None else rows.tolist()
        return np.array([i for i in among if keep(col[i])], dtype=np.intp)

    def floats(self, column: str, rows: np.ndarray) -> np.ndarray:
        """Column `column` at `rows` as float64 (None is NaN), as ``.astype(float)`` gives it."""
        return self.derived(("floats", column), lambda: np.asarray(self.cols[column], dtype=float))[rows]

    def row(self, i: int) -> _Row:
        return _Row(self.cols, i)


class _Row(Mapping[str, Any]):
    """Row `i` of a column mapping, read like a DataFrame row (``row[column]``)."""

    __slots__ = ("_cols", "_i")

    def __init__(self, cols: Mapping[str, Any], i: int) -> None:
        self._cols = cols
        self._i = i

    def __getitem__(self, name: str) -> Any:
        return self._cols[name][self._i]

    def __contains__(self, name: object) -> bool:
        return name in self._cols

    def __iter__(self) -> Iterator[str]:
        return iter(self._cols)

    def __len__(self) -> int:
        return len(self._cols)


def _table(res: Result, table: str) -> _Table:
    """`res`'s `table` ("flows" or "queues") as columns: the simulator's (kept with `res`,
    so that the measures of one Result share what they derive) while ``res.<table>`` was
    neither built nor replaced, else that DataFrame's (read afresh on every call: a
    DataFrame may be changed in place)."""
    attrs = getattr(res, "__dict__", None)
    raw = getattr(res, "_raw", None)
    if attrs is not None and table not in attrs and isinstance(raw, Mapping):
        cols = raw.get(table)
        if isinstance(cols, Mapping) and "name" in cols:
            kept = attrs.get("_measure_tables")
            if kept is None:
                kept = attrs["_measure_tables"] = {}
            t = kept.get(table)
            if t is None or t.source is not cols:
                t = kept[table] = _Table(cols, cols, len(cols["name"]))
            return t  # type: ignore[no-any-return]
    df = getattr(res, table)
    return _Table(df, _FrameColumns(df), len(df))


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


def _value(v: Any) -> float:
    """A cell as a float (None is NaN)."""
    return math.nan if v is None else float(v)


def _tcp_rows(t: _Table) -> np.ndarray:
    return t.rows("kind", TCP_KINDS)


def _tcp_directions(t: _Table) -> list[str]:
    """:func:`direction` of each TCP bulk flow's sender, in the order of :func:`_tcp_rows`."""
    src = t.cols["src"]
    return t.derived("tcp_direction", lambda: [direction(src[i]) for i in _tcp_rows(t).tolist()])  # type: ignore[no-any-return]


def _goodput(way: str) -> Callable[[Result], float]:
    def of(t: _Table) -> float:
        tcp = _tcp_rows(t)
        rows = tcp[[w == way for w in _tcp_directions(t)]] if len(tcp) else tcp
        return _nansum(t.floats("goodput_bps", rows)) if len(rows) else math.nan

    def g(res: Result) -> float:
        t = _table(res, "flows")
        return float(t.derived(("goodput", way), lambda: of(t)))

    return g


def goodput_total(res: Result) -> float:
    """Sum of the goodput of all TCP bulk flows (0 without any)."""
    t = _table(res, "flows")
    return _nansum(t.floats("goodput_bps", _tcp_rows(t)))


def _probe_rtts(res: Result, suffix: str | None = None) -> tuple[np.ndarray, float]:
    """The rtt samples after warm-up of the latency probes (those named ``*.SUFFIX`` when
    `suffix` is given) and their mean base RTT."""
    t = _table(res, "flows")
    rows = t.rows("kind", PROBE_KINDS)
    if suffix is not None and len(rows):
        end = "." + suffix
        rows = t.rows_if("name", lambda n: str(n).endswith(end), rows)
    if not len(rows):
        return np.array([]), math.nan
    names = [t.cols["name"][i] for i in rows.tolist()]
    rtts = _flow_rtts_of_columns(res, names)
    if rtts is None:
        s = res.samples
        s = s[(s["kind"] == "flow") & (s["metric"] == "rtt") & (s["entity"].isin(names)) & (s["t"] >= res.warmup)]
        rtts = s["value"].to_numpy(dtype=float)
    return rtts, _nanmean(t.floats("base_rtt", rows))


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
    t = _table(res, "flows")
    rows = t.rows("kind", ("voip",))
    if not len(rows) or not t.has("r_value"):
        return math.nan
    vals = [mos_from_r(r) for r in t.floats("r_value", rows).tolist()]
    vals = [v for v in vals if math.isfinite(v)]
    return float(np.mean(vals)) if vals else math.nan


def jain_tcp(res: Result) -> float:
    """Jain's index over the goodputs of the TCP bulk flows."""
    t = _table(res, "flows")
    rows = _tcp_rows(t)
    return metrics.jain_index(t.floats("goodput_bps", rows)) if len(rows) else math.nan


def _weighted(kind: str, col: str, weight: str) -> Callable[[Result], float]:
    """Mean of a per-flow mean column over the flows of `kind`, weighted by their counts
    (`weight`): the mean over all events (pages, responses, objects) of those flows."""

    def g(res: Result) -> float:
        t = _table(res, "flows")
        rows = t.rows("kind", (kind,))
        if not len(rows) or not t.has(col, weight):
            return math.nan
        v, w = t.floats(col, rows), t.floats(weight, rows)
        ok = np.isfinite(v) & np.isfinite(w) & (w > 0)
        return float(np.sum(v[ok] * w[ok]) / np.sum(w[ok])) if ok.any() else math.nan

    return g


def _pooled_sd(kind: str, mean: str, sd: str, count: str) -> Callable[[Result], float]:
    """Standard deviation over all events of the flows of `kind`, pooled from each flow's
    count, mean and sample standard deviation (equal to the sd of the pooled values)."""

    def g(res: Result) -> float:
        t = _table(res, "flows")
        rows = t.rows("kind", (kind,))
        if not len(rows) or not t.has(mean, sd, count):
            return math.nan
        n, m = t.floats(count, rows), t.floats(mean, rows)
        s = np.nan_to_num(t.floats(sd, rows))  # one event: no spread
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
    t = _table(res, "flows")
    has = t.rows("kind", ("has",))
    if not len(has):
        return math.nan
    # HAS data flows server -> player (dst -> src); bulk data flows src -> dst.
    data_dir = direction(t.cols["dst"][has[0]])
    tcp = _tcp_rows(t)
    bulk = tcp[[w == data_dir for w in _tcp_directions(t)]] if len(tcp) else tcp
    tput = np.concatenate([t.floats("goodput_bps", has), t.floats("goodput_bps", bulk)])
    caps = t.floats("max_bitrate", has).tolist() + [math.inf] * len(bulk)
    shares = metrics.max_min_fair(float(tput.sum()), demands=caps)
    return metrics.application_bias(float(tput[: len(has)].sum()), float(shares[: len(has)].sum()))


def _flow_kind_col(kind: str, col: str, how: str) -> Callable[[Result], float]:
    def g(res: Result) -> float:
        t = _table(res, "flows")
        rows = t.rows("kind", (kind,))
        if not len(rows) or not t.has(col):
            return math.nan
        a = t.floats(col, rows)
        return _nanmean(a) if how == "mean" else _nansum(a)

    return g


def _bottleneck_rows(t: _Table) -> np.ndarray:
    return t.rows_if("name", lambda n: is_bottleneck_link(str(n)))


def _busiest_bottleneck(res: Result) -> _Row | None:
    """The bottleneck queue a run-level queue measure reads: of the links the topology
    builder names as bottlenecks (:func:`aqmlab.result.is_bottleneck_link`), the one that
    sent the most bytes; in a topology without such names, the link nearest its capacity
    (highest utilisation of its rate or shaper rate), not the one carrying the most bytes,
    which is usually a fast core link in front of the real bottleneck."""
    t = _table(res, "queues")
    if not t.n:
        return None
    b = _bottleneck_rows(t)
    if len(b):
        return t.row(int(b[np.nanargmax(t.floats("tx_bytes", b))]))
    util = [link_utilization(t.row(i)) for i in range(t.n)]
    if all(math.isnan(u) for u in util):
        return t.row(int(np.nanargmax(t.floats("tx_bytes", np.arange(t.n)))))
    return t.row(int(np.nanargmax(util)))


def below_qdisc_latency(res: Result) -> float:
    """Time frames spend below the qdisc on the WiFi hop, summed over its interfaces (s).

    Each WiFi interface reports ``below_qdisc_mean``: the mean time from its driver taking
    a frame from the qdisc to the end of the PPDU that delivers it (driver queue,
    aggregation, contention, retries, airtime). With one station the sum over the AP's and
    the station's interface is what a round trip through the hop spends below the qdiscs.
    """
    t = _table(res, "queues")
    if not t.has("lower", "below_qdisc_mean"):
        return math.nan
    a = t.floats("below_qdisc_mean", t.rows("lower", ("wifi",)))
    a = a[~np.isnan(a)]
    return float(a.sum()) if len(a) else math.nan


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
        return _value(row[col]) if row is not None and col in row else math.nan

    return g


def bottleneck_utilization(res: Result) -> float:
    """The highest utilisation of a link named as a bottleneck (NaN without one)."""
    t = _table(res, "queues")
    return float(max((link_utilization(t.row(i)) for i in _bottleneck_rows(t).tolist()), default=math.nan))


MEASURES: dict[str, tuple[Callable[[Result], float], str]] = {
    "queue_delay_mean": (_bq("sojourn_mean"), "mean sojourn time in the busiest bottleneck queue after warm-up (s)"),
    "queue_delay_p99": (_bq("sojourn_p99"), "99th percentile sojourn time in the busiest bottleneck queue (s)"),
    "utilization": (
        lambda r: _on_bottleneck(r, link_utilization),
        "utilisation of the busiest bottleneck direction after warm-up (of the shaper rate on a shaped link, of CAKE's "
        "bandwidth when it shapes)",
    ),
    "drop_rate": (
        lambda r: _on_bottleneck(r, link_drop_fraction),
        "fraction of the packets arriving at the busiest bottleneck that were dropped (dropped / arrived)",
    ),
    "goodput_up": (_goodput("up"), "sum of upstream TCP bulk goodput after warm-up (bit/s)"),
    "goodput_down": (_goodput("down"), "sum of downstream TCP bulk goodput after warm-up (bit/s)"),
    "goodput_total": (goodput_total, "sum of all TCP bulk goodput (bit/s)"),
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
        bottleneck_utilization,
        "utilisation of the busiest bottleneck direction (of the shaper rate on a shaped link, of CAKE's bandwidth when it shapes)",
    ),
}


def describe() -> dict[str, str]:
    return {k: v[1] for k, v in MEASURES.items()}


def _generic(res: Result, name: str) -> float:
    head, _, rest = name.partition(":")
    target, _, col = rest.rpartition(".")
    if head in ("flow", "queue"):
        t = _table(res, "flows" if head == "flow" else "queues")
        rows = t.rows_if("name", lambda n: n == target)
        return _value(t.cols[col][rows[0]]) if len(rows) and t.has(col) else math.nan
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
    t = _table(res, "flows")

    def goodput(prefix: str) -> float:
        return _nansum(t.floats("goodput_bps", t.rows_if("name", lambda n: isinstance(n, str) and n.startswith(prefix))))

    ga, gb = goodput(a), goodput(b)
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
