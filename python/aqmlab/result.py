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

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from rich.console import RenderableType

    from aqmlab.scenario import Scenario

__all__ = ["Result"]

KIND_NAMES = ("flow", "queue")

#: Flow summary columns that describe a latency probe.
PROBE_COLUMNS = ("probes_sent", "loss_rate", "rtt_mean", "rtt_p50", "rtt_p90", "rtt_p99", "rtt_min", "rtt_max")


def _nan_to_none(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):  # a NumPy scalar
        return _nan_to_none(v.item())
    return v


def _records(cols: dict[str, list[Any]]) -> list[dict[str, Any]]:
    keys = list(cols)
    n = len(cols[keys[0]]) if keys else 0
    return [{k: _nan_to_none(cols[k][i]) for k in keys} for i in range(n)]


class Result:
    """What one run produced. Build it with :func:`aqmlab.run`."""

    def __init__(self, raw: Mapping[str, Any], scenario: Scenario | None = None) -> None:
        self._raw = raw
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
        cats, lut = _dedup(names)
        queue = pd.Categorical.from_codes(lut[h["queue"].astype(np.int64)] if len(names) else h["queue"].astype(np.int64), cats)
        return pd.DataFrame({"queue": queue, "low": h["low"], "high": h["high"], "count": h["count"]})

    def _long(self, t: dict[str, np.ndarray]) -> pd.DataFrame:
        import numpy as np
        import pandas as pd

        kind = t["kind"].astype(np.int64)
        entity = t["entity"].astype(np.int64)
        cats, lut = _dedup(self.flow_names + self.queue_names)
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
        """``t``/``value`` samples of one flow's metric (e.g. a probe's ``rtt``)."""
        s = self.samples
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
        return {
            "aqmlab_version": self.version,
            "scenario": self.name,
            "seed": self.seed,
            "duration": self.duration,
            "warmup": self.warmup,
            "bin": self.bin,
            "flows": flows,
            "queues": _records(self._raw["queues"]),
            "probes": probes,
            "events": self.events,
            "packets_created": self.packets_created,
            "packets_delivered": self.packets_delivered,
            "packets_dropped": self.packets_dropped,
            "wall_seconds": self.wall_seconds,
        }

    def to_json(self, indent: int | None = None) -> str:
        """:meth:`to_json_dict` as strict JSON text (no NaN)."""
        return json.dumps(self.to_json_dict(), indent=indent, allow_nan=False)

    def summary_table(self, all_queues: bool = False) -> RenderableType:
        """A rich renderable: a flows table and a queues table (queues that saw traffic
        unless ``all_queues``), plus run counters."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        fl = self._raw["flows"]
        ft = Table(title="flows", title_justify="left", show_edge=False, pad_edge=False)
        has_rtt = "rtt_mean" in fl
        has_owd = "owd_mean" in fl
        for col in ("flow", "kind", "path", "goodput Mbit/s", "sent", "delivered", "lost", "loss %"):
            ft.add_column(col, justify="left" if col in ("flow", "kind", "path") else "right")
        if has_rtt:
            for col in ("rtt mean ms", "rtt p99 ms"):
                ft.add_column(col, justify="right")
        if has_owd:
            for col in ("owd mean ms", "owd p99 ms"):
                ft.add_column(col, justify="right")
        for i in range(len(fl["name"])):
            loss = fl["loss_rate"][i] if "loss_rate" in fl else float("nan")
            row = [
                fl["name"][i],
                fl["kind"][i],
                f"{fl['src'][i]} → {fl['dst'][i]}",
                _fmt(fl["goodput_bps"][i] / 1e6, 3),
                str(fl["sent_pkts"][i]),
                str(fl["delivered_pkts"][i]),
                str(fl["lost_pkts"][i]),
                _fmt(loss * 100, 2),
            ]
            if has_rtt:
                row += [_fmt(fl["rtt_mean"][i] * 1e3, 3), _fmt(fl["rtt_p99"][i] * 1e3, 3)]
            if has_owd:
                row += [_fmt(fl["owd_mean"][i] * 1e3, 3), _fmt(fl["owd_p99"][i] * 1e3, 3)]
            ft.add_row(*row)

        q = self._raw["queues"]
        qt = Table(title="queues", title_justify="left", show_edge=False, pad_edge=False)
        for col in ("link", "qdisc", "rate", "util %", "arrivals", "dropped", "drop %", "marked", "sojourn mean ms", "p50 ms", "p99 ms", "max ms"):
            qt.add_column(col, justify="left" if col in ("link", "qdisc", "rate") else "right")
        hidden = 0
        for i in range(len(q["name"])):
            arr = q["arrivals"][i]
            if not all_queues and arr == 0:
                hidden += 1
                continue
            qt.add_row(
                q["name"][i],
                q["qdisc"][i],
                _fmt_rate(q["rate_bps"][i]),
                _fmt(q["utilization"][i] * 100, 2),
                str(arr),
                str(q["dropped"][i]),
                _fmt(q["dropped"][i] / arr * 100 if arr else float("nan"), 2),
                str(q["marked"][i]),
                _fmt(q["sojourn_mean"][i] * 1e3, 3),
                _fmt(q["sojourn_p50"][i] * 1e3, 3),
                _fmt(q["sojourn_p99"][i] * 1e3, 3),
                _fmt(q["sojourn_max"][i] * 1e3, 3),
            )
        speed = self.duration / self.wall_seconds if self.wall_seconds > 0 else float("inf")
        foot = Text(
            f"{self.name or 'scenario'}: {self.duration:g} s simulated (stats after {self.warmup:g} s warm-up), seed {self.seed}; "
            f"{self.events} events, {self.packets_created} packets; {self.wall_seconds:.3f} s wall ({speed:.0f}× real time)"
            + (f"; {hidden} idle links not shown" if hidden else ""),
            style="dim",
        )
        return Group(ft, Text(""), qt, Text(""), foot)

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
        meta = {k: v for k, v in self.to_json_dict().items() if k not in ("flows", "queues", "probes")}
        meta["files"] = files
        (d / "meta.json").write_text(json.dumps(meta, indent=2, allow_nan=False) + "\n", encoding="utf-8")
        return d

    def __repr__(self) -> str:
        return (
            f"<Result {self.name!r} seed={self.seed}: {len(self._raw['flows']['name'])} flows, "
            f"{len(self._raw['queues']['name'])} queues, {len(self._raw['series']['t'])} series rows, "
            f"{len(self._raw['samples']['t'])} samples>"
        )


def _dedup(names: list[str]) -> tuple[list[str], np.ndarray]:
    """Unique categories and, for each name, its category code."""
    import numpy as np

    cats: list[str] = []
    index: dict[str, int] = {}
    codes = np.empty(len(names), dtype=np.int64)
    for i, n in enumerate(names):
        if n not in index:
            index[n] = len(cats)
            cats.append(n)
        codes[i] = index[n]
    return cats, codes


def _fmt(v: float, digits: int) -> str:
    if v is None or not math.isfinite(v):
        return "–"
    return f"{v:.{digits}f}"


def _fmt_rate(bps: int) -> str:
    for unit, scale in (("Gbit", 1e9), ("Mbit", 1e6), ("kbit", 1e3)):
        if bps >= scale:
            return f"{bps / scale:g}{unit}"
    return f"{bps}bit"
