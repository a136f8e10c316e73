"""The result of one run: columnar tables as pandas DataFrames.

The core hands over columns (lists for the small per-flow and per-queue tables, NumPy
arrays for the long tables); this module only labels them. Tables are built on first use,
so a caller that only wants the JSON summary never imports pandas.

Tables (times in seconds, rates in bit/s, sizes in bytes):

- ``flows``: one row per flow instance: ``name``, ``kind``, ``group`` (index of its
  ``[[flow]]`` table), ``src``, ``dst``, ``start``, ``stop``, packet/byte counters,
  ``goodput_bps`` (after warm-up), and the workload's own summary columns (``loss_rate``,
  ``rtt_mean``, ``rtt_p99``, ``owd_mean`` ...; NaN where a kind has no such metric).
- ``queues``: one row per link (egress qdisc): counters, ``utilization``, sojourn-time
  statistics, ``drops_<reason>`` and ``marks_<reason>`` columns.
- ``series``: long table of per-bin values: ``kind`` (flow/queue), ``entity`` (the flow or
  link name), ``metric`` (``goodput_bps``, ``tx_bps``, ``sojourn_mean``, ``drops``,
  ``backlog_max``), ``t`` (bin start), ``value``.
- ``samples``: long table of time-stamped samples (probe ``rtt``, ``owd_fwd``,
  ``owd_rev``; qdisc state traces), same columns as ``series``.
- ``sojourn_hist``: per-queue sojourn histogram buckets: ``queue``, ``low``, ``high``,
  ``count``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aqmlab._naming import direction

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from rich.console import RenderableType

    from aqmlab.scenario import Scenario

__all__ = ["Result", "direction"]

KIND_NAMES = ("flow", "queue")

#: Flow summary columns that describe a latency probe.
PROBE_COLUMNS = ("probes_sent", "loss_rate", "rtt_mean", "rtt_p50", "rtt_p90", "rtt_p99", "rtt_min", "rtt_max")


def _nan_to_none(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):  # a NumPy scalar
        return _nan_to_none(v.item())
    return v


def _plain_column(col: Any) -> list[Any]:
    """A column as a list of plain Python values, NaN and ±inf as None: what
    :func:`_nan_to_none` gives each element, converted a column at a time (a 10,000-flow
    run's tables hold millions of values)."""
    if hasattr(col, "dtype") and hasattr(col, "tolist"):  # a NumPy array
        kind = col.dtype.kind
        if kind in "biu":
            return col.tolist()  # type: ignore[no-any-return]
        if kind == "f":
            import numpy as np

            vals = col.tolist()
            for i in np.flatnonzero(~np.isfinite(col)).tolist():
                vals[i] = None
            return vals  # type: ignore[no-any-return]
    out = []
    for v in col:
        tv = type(v)
        if tv is float:
            out.append(v if math.isfinite(v) else None)
        elif tv is int or tv is str or tv is bool or v is None:
            out.append(v)
        else:
            out.append(_nan_to_none(v))
    return out


def _records(cols: dict[str, list[Any]]) -> list[dict[str, Any]]:
    keys = list(cols)
    plain = [_plain_column(cols[k]) for k in keys]
    return [dict(zip(keys, row)) for row in zip(*plain)] if keys else []


#: rows of each table :meth:`Result.summary_table` shows by default (``aqmlab run --all``: every row)
SUMMARY_ROWS = 50


class Result:
    """What one run produced. Build it with :func:`aqmlab.run`."""

    def __init__(self, raw: Mapping[str, Any], scenario: Scenario | None = None) -> None:
        self._raw = raw
        #: the Linux engine's run information (kernel, CPU load ...); empty for simulator runs
        self.engine_info: dict[str, Any] = {}
        self.scenario = scenario
        self.version: str = raw["version"]
        self.seed: int = raw["seed"]
        self.duration: float = raw["duration"]
        self.warmup: float = raw["warmup"]
        self.bin: float = raw["bin"]
        self.metric_names: list[str] = list(raw["metric_names"])
        self.events: int = raw["events"]
        self.packets_created: int = raw["packets_created"]
        self.packets_delivered: int = raw["packets_delivered"]
        self.packets_dropped: int = raw["packets_dropped"]
        self.wall_seconds: float = raw["wall_seconds"]
        #: Validation warnings of the scenario (legal but suspicious settings), "field: message".
        self.warnings: list[str] = list(raw.get("warnings", []))

    # -- names ------------------------------------------------------------------------

    @property
    def name(self) -> str | None:
        return self.scenario.name if self.scenario is not None else None

    @property
    def flow_names(self) -> list[str]:
        return list(self._raw["flows"]["name"])

    @property
    def queue_names(self) -> list[str]:
        return list(self._raw["queues"]["name"])

    # -- tables -----------------------------------------------------------------------

    @cached_property
    def flows(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self._raw["flows"])

    @cached_property
    def queues(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self._raw["queues"])

    @cached_property
    def probes(self) -> pd.DataFrame:
        """The flows that are latency probes (they have RTT statistics)."""
        f = self.flows
        if "probes_sent" not in f.columns:
            return f.iloc[0:0]
        return f[f["probes_sent"].notna()].reset_index(drop=True)

    @cached_property
    def series(self) -> pd.DataFrame:
        return self._long(self._raw["series"])

    @cached_property
    def samples(self) -> pd.DataFrame:
        return self._long(self._raw["samples"])

    @cached_property
    def sojourn_hist(self) -> pd.DataFrame:
        import numpy as np
        import pandas as pd

        h = self._raw["sojourn_hist"]
        names = self.queue_names
        cats, lut = dedup_names(names)
        queue = pd.Categorical.from_codes(lut[h["queue"].astype(np.int64)] if len(names) else h["queue"].astype(np.int64), cats)
        return pd.DataFrame({"queue": queue, "low": h["low"], "high": h["high"], "count": h["count"]})

    def _long(self, t: dict[str, np.ndarray]) -> pd.DataFrame:
        import numpy as np
        import pandas as pd

        kind = t["kind"].astype(np.int64)
        entity = t["entity"].astype(np.int64)
        cats, lut = dedup_names(self.flow_names + self.queue_names)
        nflows = len(self.flow_names)
        codes = lut[entity + kind * nflows] if len(lut) else entity
        return pd.DataFrame(
            {
                "kind": pd.Categorical.from_codes(kind, list(KIND_NAMES)),
                "entity": pd.Categorical.from_codes(codes, cats),
                "metric": pd.Categorical.from_codes(t["metric"].astype(np.int64), self.metric_names),
                "t": t["t"],
                "value": t["value"],
            }
        )

    def flow_samples(self, flow: str, metric: str) -> pd.DataFrame:
        """``t``/``value`` samples of one flow's metric (e.g. a probe's ``rtt``).

        Raises KeyError naming the flows (or the flow's metrics) when `flow` is not a
        flow of this run or `metric` is not a sample metric; a known flow and metric
        without samples gives an empty frame."""
        names = self.flow_names
        if flow not in names:
            raise KeyError(f"no flow {flow!r} in this run (flows: {', '.join(names) or 'none'})")
        s = self.samples
        if metric not in self.metric_names:
            have = sorted({str(m) for m in s.loc[(s["kind"] == "flow") & (s["entity"] == flow), "metric"]})
            raise KeyError(f"no sample metric {metric!r} (flow {flow!r} has samples: {', '.join(have) or 'none'})")
        m = s[(s["kind"] == "flow") & (s["entity"] == flow) & (s["metric"] == metric)]
        return m[["t", "value"]].reset_index(drop=True)

    # -- summaries --------------------------------------------------------------------

    def _count_samples(self, kind: int, entity: int, metric: str) -> int:
        if metric not in self.metric_names:
            return 0
        import numpy as np

        t = self._raw["samples"]
        m = self.metric_names.index(metric)
        return int(np.count_nonzero((t["kind"] == kind) & (t["entity"] == entity) & (t["metric"] == m)))

    def to_json_dict(self) -> dict[str, Any]:
        """A JSON-ready summary: ``flows``, ``queues``, ``probes`` (lists of rows), run
        counters and ``wall_seconds``; NaN becomes None. Everything but ``wall_seconds``
        is a pure function of (scenario, seed)."""
        flows = _records(self._raw["flows"])
        probes = []
        for f in flows:
            if f.get("probes_sent") is None:
                continue
            p: dict[str, Any] = {k: f[k] for k in ("name", "kind", "src", "dst") if k in f}
            p.update({k: f.get(k) for k in PROBE_COLUMNS})
            p["rtt_samples"] = self._count_samples(0, f["id"], "rtt")
            probes.append(p)
        meta = self._meta_dict()
        d = {k: meta.pop(k) for k in ("aqmlab_version", "scenario", "seed", "duration", "warmup", "bin")}
        d.update(flows=flows, queues=_records(self._raw["queues"]), probes=probes)
        d.update(meta)  # the counters and wall_seconds
        return d

    def _meta_dict(self) -> dict[str, Any]:
        """The run's scalars of :meth:`to_json_dict` (everything but its tables), in its order."""
        return {
            "aqmlab_version": self.version,
            "scenario": self.name,
            "seed": self.seed,
            "duration": self.duration,
            "warmup": self.warmup,
            "bin": self.bin,
            "events": self.events,
            "packets_created": self.packets_created,
            "packets_delivered": self.packets_delivered,
            "packets_dropped": self.packets_dropped,
            "wall_seconds": self.wall_seconds,
        }

    def to_json(self, indent: int | None = None) -> str:
        """:meth:`to_json_dict` as strict JSON text (no NaN)."""
        return json.dumps(self.to_json_dict(), indent=indent, allow_nan=False)

    def summary_table(self, all_queues: bool = False, max_rows: int | None = SUMMARY_ROWS) -> RenderableType:
        """A rich renderable: a flows table and a queues table (queues that saw traffic
        unless ``all_queues``), plus run counters. On a console too narrow for the wide
        layout (an 80-column terminal) each table is split in two — counters, then
        latency — so that names and numbers are never cut or folded. Each table shows at
        most ``max_rows`` rows (None: all) and says how many more there are: a run of
        10,000 flows prints in a moment instead of a minute."""
        from rich.text import Text

        fl = self._raw["flows"]
        n_all = len(fl["name"])
        n = n_all if max_rows is None else min(n_all, max_rows)
        srtt = fl.get("srtt_mean")
        has_rtt, has_owd = "rtt_mean" in fl or srtt is not None, "owd_mean" in fl
        r_value = fl.get("r_value")
        has_r = r_value is not None and any(v is not None and v == v for v in r_value[:n])
        flow_cols = ["flow", "kind", "path", "goodput Mbit/s", "sent", "delivered", "lost"]
        lat_cols = (["loss %"] + (["rtt mean ms", "rtt p99 ms"] if has_rtt else []) + (["owd mean ms", "owd p99 ms"] if has_owd else [])
                    + (["voip R"] if has_r else []))
        flow_rows, lat_rows = [], []
        probes = fl.get("probes_sent")
        segs = fl.get("segments_sent")
        any_probe = any_packets = any_tcp = False
        for i in range(n):
            loss = fl["loss_rate"][i] if "loss_rate" in fl else float("nan")
            sent, delivered, lost = fl["sent_pkts"][i], fl["delivered_pkts"][i], fl["lost_pkts"][i]
            if probes is not None and probes[i] == probes[i] and probes[i] is not None and loss == loss:
                # a latency probe flow counts probes, not packets (its packets are the
                # requests and the replies, so sent − delivered was not the loss): sent,
                # answered, lost (loss_rate = lost probes / probes sent) — they add up
                sent = int(probes[i])
                delivered = int(round(sent * (1.0 - loss)))
                lost = sent - delivered
                any_probe = True
            elif segs is not None and segs[i] == segs[i] and segs[i] is not None:
                any_tcp = True
            else:
                any_packets = True
            flow_rows.append([
                str(fl["name"][i]), str(fl["kind"][i]), f"{fl['src'][i]} → {fl['dst'][i]}",
                _fmt(fl["goodput_bps"][i] / 1e6, 3), str(sent), str(delivered), str(lost),
            ])
            lat = [_fmt(loss * 100, 2)]
            if has_rtt:
                mean = fl["rtt_mean"][i] if "rtt_mean" in fl else float("nan")
                p99 = fl["rtt_p99"][i] if "rtt_p99" in fl else float("nan")
                if mean != mean and srtt is not None and srtt[i] is not None and srtt[i] == srtt[i]:
                    mean = srtt[i]  # a TCP flow: its sender's mean smoothed RTT
                lat += [_fmt(mean * 1e3, 3), _fmt(p99 * 1e3, 3)]
            if has_owd:
                lat += [_fmt(fl["owd_mean"][i] * 1e3, 3), _fmt(fl["owd_p99"][i] * 1e3, 3)]
            if has_r:
                lat.append(_fmt(r_value[i], 1))
            lat_rows.append(lat)

        q = self._raw["queues"]
        queue_cols = ["link", "qdisc", "rate", "util %", "arrived", "dropped", "drop %"]
        soj_cols = ["marked", "sojourn mean ms", "p50 ms", "p99 ms", "max ms"]
        queue_rows: list[list[str]] = []
        soj_rows: list[list[str]] = []
        hidden = more_links = 0
        any_shaped = False
        keys = ("arrivals", "dropped", "utilization", "rate_bps", "shaper_rate_bps", "regulator_drops", "qdisc",
                *(f"tin{t}_threshold_bps" for t in range(8)))
        for i in range(len(q["name"])):
            row = {k: q[k][i] for k in keys if k in q}
            arr = int(link_arrived(row))
            if not all_queues and arr == 0:
                hidden += 1
                continue
            limit = rate_limit(row)
            shaped = limit > 0
            any_shaped = any_shaped or shaped
            if max_rows is not None and len(queue_rows) >= max_rows:
                more_links += 1  # counted, not formatted
                continue
            # a shaped link shows the shaper's rate: utilisation is relative to it
            rate = f"{fmt_rate(int(limit))}*" if shaped else fmt_rate(q["rate_bps"][i])
            queue_rows.append([
                str(q["name"][i]), str(q["qdisc"][i]), rate, _fmt(link_utilization(row) * 100, 2), str(arr),
                str(q["dropped"][i]), _fmt(link_drop_fraction(row) * 100, 2),
            ])
            soj_rows.append(
                [str(q["marked"][i])] + [_fmt(q[k][i] * 1e3, 3) for k in ("sojourn_mean", "sojourn_p50", "sojourn_p99", "sojourn_max")]
            )
        more = [f"{k} more {what}" for k, what in ((n_all - n, "flows"), (more_links, "links")) if k]
        speed = self.duration / self.wall_seconds if self.wall_seconds > 0 else float("inf")
        foot = Text(
            f"{self.name or 'scenario'}: {self.duration:g} s simulated (stats after {self.warmup:g} s warm-up), seed {self.seed}; "
            f"{self.events} events, {self.packets_created} packets; {self.wall_seconds:.3f} s wall ({speed:.0f}× real time)"
            + (f"; {hidden} idle links not shown" if hidden else "")
            + ("; drop % = dropped / arrived" if queue_rows else "")
            + ("; UDP flows count packets over the whole run: sent = delivered + lost + still in flight at the end" if any_packets else "")
            + ("; TCP flows: sent = data and ACK packets of both ends, delivered = deliveries to the receiving application, "
               "lost = packets dropped in either direction (they do not add up; retransmits are in --json), rtt mean = the sender's "
               "mean smoothed RTT (srtt)" if any_tcp else "")
            + ("; probe flows (ping, udp_rr) count probes: sent = delivered (answered) + lost" if any_probe else "")
            + ("; voip R = the call's E-model R (ITU-T G.109: above 80 users satisfied, below 60 nearly all "
               "dissatisfied)" if has_r else "")
            + ("; * a shaper's rate (htb/tbf) or CAKE's bandwidth, which util % is relative to" if any_shaped else ""),
            style="dim",
        )
        show_lat = [j for j in range(n) if any(v != "–" for v in lat_rows[j])]
        return _Summary(
            wide=[
                ("flows", flow_cols + lat_cols, [a + b for a, b in zip(flow_rows, lat_rows)]),
                ("queues", queue_cols + soj_cols, [a + b for a, b in zip(queue_rows, soj_rows)]),
            ],
            narrow=[
                ("flows", flow_cols, flow_rows),
                ("flow latency and loss", ["flow", "kind"] + lat_cols, [flow_rows[j][:2] + lat_rows[j] for j in show_lat]),
                ("queues", queue_cols, queue_rows),
                ("queue marks and sojourn times", ["link"] + soj_cols, [[queue_rows[j][0]] + soj_rows[j] for j in range(len(queue_rows))]),
            ],
            foot=foot,
            more=Text(f"… and {' and '.join(more)} (--all shows every row)") if more else None,
        )

    # -- storage ----------------------------------------------------------------------

    def write_parquet(self, directory: str | Path) -> Path:
        """Writes ``flows``, ``queues``, ``series``, ``samples`` and ``sojourn_hist`` as
        Parquet files, plus ``scenario.toml`` (if known) and ``meta.json`` (version, seed,
        counters), into ``directory`` (created if needed). Returns the directory."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        files = []
        for name in ("flows", "queues", "series", "samples", "sojourn_hist"):
            getattr(self, name).to_parquet(d / f"{name}.parquet", index=False)
            files.append(f"{name}.parquet")
        if self.scenario is not None:
            (d / "scenario.toml").write_text(self.scenario.text, encoding="utf-8")
            files.append("scenario.toml")
        meta = self._meta_dict()  # to_json_dict() without its tables (not built: they can be large)
        meta["files"] = files
        (d / "meta.json").write_text(json.dumps(meta, indent=2, allow_nan=False) + "\n", encoding="utf-8")
        return d

    def _repr_html_(self) -> str:
        """The notebook view: headline numbers, flows and busy queues (first rows)."""
        from aqmlab._html import result_html

        return result_html(self)

    def plot(self, title: str | None = None) -> Any:
        """This run over time, like Flent's ``all_scaled``: per-flow goodput, queueing
        delay and the latency probes' RTT in stacked panels (a matplotlib Figure; shows
        inline in Jupyter; ``.savefig("run.png")`` writes it). See
        :func:`aqmlab.plots.plot_run`."""
        from aqmlab.plots.runview import plot_run

        return plot_run(self, title=title)

    def __repr__(self) -> str:
        return (
            f"<Result {self.name!r} seed={self.seed}: {len(self._raw['flows']['name'])} flows, "
            f"{len(self._raw['queues']['name'])} queues, {len(self._raw['series']['t'])} series rows, "
            f"{len(self._raw['samples']['t'])} samples>"
        )


_LEFT = ("flow", "kind", "path", "link", "qdisc", "rate")


def _two_lines(header: str) -> str:
    """"goodput Mbit/s" → "goodput\nMbit/s": narrow layouts stack a header's unit."""
    return header.replace(" ", "\n", 1) if header.count(" ") == 1 or header.endswith((" %", " ms", " Mbit/s")) and " " in header else header


def _rich_table(title: str, cols: list[str], rows: list[list[str]], narrow: bool = False):
    from rich.table import Table

    t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for c in cols:
        t.add_column(_two_lines(c) if narrow else c, justify="left" if c in _LEFT else "right", no_wrap=True)
    for r in rows:
        t.add_row(*r)
    return t


class _Summary:
    """The run summary as a rich renderable that picks its layout from the console
    width: one wide table each for flows and queues when they fit, else narrower tables
    with two-line headers (counters, then latency); names are never cut to "rrul0…"."""

    def __init__(self, wide: list, narrow: list, foot: Any, more: Any = None) -> None:
        self.wide, self.narrow, self.foot, self.more = wide, narrow, foot, more

    @staticmethod
    def width(cols: list[str], rows: list[list[str]], narrow: bool = False) -> int:
        heads = [_two_lines(c) if narrow else c for c in cols]
        w = [max([len(x) for x in h.split("\n")] + [len(r[i]) for r in rows]) for i, h in enumerate(heads)]
        return sum(w) + 3 * (len(cols) - 1)

    def tables(self, width: int) -> list:
        if all(self.width(c, r) <= width for _, c, r in self.wide):
            return [_rich_table(t, c, r) for t, c, r in self.wide]
        out = []
        for t, c, r in self.narrow:
            if not r and t not in ("flows", "queues"):
                continue
            if "path" in c and self.width(c, r, True) > width:  # still too wide: the path goes first
                i = c.index("path")
                c, r = c[:i] + c[i + 1:], [x[:i] + x[i + 1:] for x in r]
            out.append(_rich_table(t, c, r, narrow=True))
        return out

    def __rich_console__(self, console: Any, options: Any):
        from rich.text import Text

        for t in self.tables(options.max_width):
            yield t
            yield Text("")
        if self.more is not None:
            yield self.more
        yield self.foot


def _num(row: Any, key: str) -> float:
    try:
        v = row[key]
    except (KeyError, IndexError):
        return math.nan
    try:
        return float(v) if v is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def link_arrived(row: Any) -> float:
    """Packets that arrived at a link (a ``queues`` row, dict or Series): the qdisc's
    arrivals plus the packets a DOCSIS service-flow regulator dropped before they reached
    the qdisc. Every other drop (qdisc, wire, WiFi retry limit) happens to a packet the
    qdisc has seen, so ``dropped / link_arrived`` is a fraction ≤ 1."""
    reg = _num(row, "regulator_drops")
    return _num(row, "arrivals") + (0.0 if math.isnan(reg) else reg)


def link_drop_fraction(row: Any) -> float:
    """Dropped / arrived at the link (NaN when nothing arrived)."""
    arr = link_arrived(row)
    return _num(row, "dropped") / arr if arr > 0 else math.nan


def rate_limit(row: Any) -> float:
    """The rate a link's traffic is held to below its line rate (a ``queues`` row), bit/s:
    a token-bucket shaper's (htb/tbf), else a CAKE qdisc's ``bandwidth`` (its largest tin
    threshold) when below the line rate; NaN when neither holds it back."""
    sh = _num(row, "shaper_rate_bps")
    if sh > 0:
        return sh
    try:
        cake = str(row["qdisc"]) == "cake"
    except (KeyError, IndexError):
        cake = False
    if cake:
        tins = [_num(row, f"tin{i}_threshold_bps") for i in range(8)]
        bw, line = max((t for t in tins if t > 0), default=math.nan), _num(row, "rate_bps")
        if bw > 0 and (math.isnan(line) or bw < line):
            return bw
    return math.nan


def link_utilization(row: Any) -> float:
    """Utilisation of a link's rate limit (a ``queues`` row): for a link with a token-bucket
    shaper (htb/tbf) the shaper rate, for CAKE shaping below the line rate its
    ``bandwidth``, else the line rate (:func:`rate_limit`). The core measures busy time of
    the line; a shaped link's wire is busy ``shaper/line`` of the time at most, so the busy
    fraction is rescaled by ``line rate / shaper rate`` (capped at 1)."""
    u = _num(row, "utilization")
    sh, line = rate_limit(row), _num(row, "rate_bps")
    if math.isnan(sh) or sh <= 0 or math.isnan(line):
        return u
    return min(1.0, u * line / sh)


def is_bottleneck_link(name: str) -> bool:
    """Whether a link's name is one the topology builders give their bottlenecks: a
    dumbbell's ``bottleneck_up``/``bottleneck_down`` (any name starting ``bottleneck``), a
    DOCSIS network's ``docsis_down`` and its modems' upstreams ``cm{i}_up``."""
    return name.startswith("bottleneck") or name == "docsis_down" or (name.startswith("cm") and name.endswith("_up"))


def dedup_names(names: list[str]) -> tuple[list[str], np.ndarray]:
    """Unique categories and, for each name, its category code."""
    import numpy as np

    index: dict[str, int] = {}  # first appearance order
    codes = np.fromiter((index.setdefault(n, len(index)) for n in names), dtype=np.int64, count=len(names))
    return list(index), codes


def _fmt(v: float, digits: int) -> str:
    if v is None or not math.isfinite(v):
        return "–"
    return f"{v:.{digits}f}"


def fmt_rate(bps: int) -> str:
    for unit, scale in (("Gbit", 1e9), ("Mbit", 1e6), ("kbit", 1e3)):
        if bps >= scale:
            return f"{bps / scale:g}{unit}"
    return f"{bps}bit"
