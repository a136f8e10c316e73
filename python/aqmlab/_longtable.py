"""What the engines other than the simulator build their results with: the long tables
(``series`` and ``samples``: kind, entity, metric, t, value), the summary statistics of a
row and a probe flow's summary columns (the Linux and ns-3 engines)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["LongTable", "probe_summary", "stats"]

NAN = float("nan")


class LongTable:
    """Rows of one long table. Metrics are numbered in the order they first appear in
    `names` (a list the table extends; two tables may share one)."""

    def __init__(self, names: list[str] | None = None) -> None:
        self.names = names if names is not None else []
        self.rows: list[tuple[int, int, int, float, float]] = []

    def push(self, kind: int, entity: int, metric: str, t: float, v: float) -> None:
        if metric not in self.names:
            self.names.append(metric)
        self.rows.append((kind, entity, self.names.index(metric), t, v))

    def arrays(self, names: list[str] | None = None) -> dict[str, np.ndarray]:
        """The table's columns; metrics numbered by their place in `names` (a list holding
        every metric of this table) if given, else in the table's own."""
        rows = self.rows if names is None else [(k, e, names.index(self.names[m]), t, v) for k, e, m, t, v in self.rows]
        a = np.array(rows, dtype=float).reshape(-1, 5)
        return {
            "kind": a[:, 0].astype(np.uint8),
            "entity": a[:, 1].astype(np.uint32),
            "metric": a[:, 2].astype(np.uint16),
            "t": a[:, 3],
            "value": a[:, 4],
        }


def stats(xs: Sequence[float] | np.ndarray) -> dict[str, float]:
    """Mean, median, 90th and 99th percentile, min and max of `xs` (NaN when empty)."""
    if len(xs) == 0:
        return {"mean": NAN, "p50": NAN, "p90": NAN, "p99": NAN, "min": NAN, "max": NAN}
    a = np.asarray(xs, dtype=float)
    return {
        "mean": float(a.mean()),
        "p50": float(np.quantile(a, 0.5)),
        "p90": float(np.quantile(a, 0.9)),
        "p99": float(np.quantile(a, 0.99)),
        "min": float(a.min()),
        "max": float(a.max()),
    }


def probe_summary(sent: float, loss_rate: float, rtts: Sequence[float] | np.ndarray) -> dict[str, float]:
    """A probe flow's summary columns: probes sent, loss rate and the statistics of the
    round trips `rtts` (seconds; those after the warm-up)."""
    s = stats(rtts)
    return {
        "probes_sent": float(sent),
        "loss_rate": loss_rate,
        "rtt_mean": s["mean"],
        "rtt_p50": s["p50"],
        "rtt_p90": s["p90"],
        "rtt_p99": s["p99"],
        "rtt_min": s["min"],
        "rtt_max": s["max"],
    }
