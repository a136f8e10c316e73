"""The long tables (``series`` and ``samples``: kind, entity, metric, t, value) the Linux
engine's result is built into, and the summary statistics of its rows."""

from __future__ import annotations

import numpy as np

__all__ = ["LongTable", "stats"]

NAN = float("nan")


class LongTable:
    def __init__(self, metric_names: list[str]) -> None:
        self.names = metric_names
        self.rows: list[tuple[int, int, int, float, float]] = []

    def push(self, kind: int, entity: int, metric: str, t: float, v: float) -> None:
        if metric not in self.names:
            self.names.append(metric)
        self.rows.append((kind, entity, self.names.index(metric), t, v))

    def arrays(self) -> dict[str, np.ndarray]:
        a = np.array(self.rows, dtype=float).reshape(-1, 5)
        return {
            "kind": a[:, 0].astype(np.uint8),
            "entity": a[:, 1].astype(np.uint32),
            "metric": a[:, 2].astype(np.uint16),
            "t": a[:, 3],
            "value": a[:, 4],
        }


def stats(xs: list[float]) -> dict[str, float]:
    if not xs:
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
