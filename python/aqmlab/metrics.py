"""Metrics computed from a run's columnar results (pure functions over numbers and arrays).

These are the quantities the reference studies report: Jain's fairness index and the
min-max ratio on throughputs normalised by their (weighted) max-min fair share, the
time-exponentially weighted moving average (TEWMA) of drop events, induced latency,
CDFs and point-wise mean time series over repetitions.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = [
    "jain_index",
    "max_min_fair",
    "normalised_throughputs",
    "min_max_ratio",
    "tewma",
    "induced_latency",
    "ecdf",
    "pointwise_mean",
    "application_bias",
]


def jain_index(x: Iterable[float]) -> float:
    """Jain's fairness index (sum x)^2 / (n * sum x^2); 1 = equal shares, 1/n = one takes all."""
    a = np.asarray(list(x), dtype=float)
    if a.size == 0:
        raise ValueError("jain_index needs at least one value")
    s2 = float(np.sum(a * a))
    if s2 == 0.0:
        return 1.0
    return float(np.sum(a) ** 2 / (a.size * s2))


def max_min_fair(
    capacity: float,
    demands: Sequence[float] | None = None,
    weights: Sequence[float] | None = None,
    n: int | None = None,
) -> np.ndarray:
    """(Weighted) max-min fair shares of `capacity` by water-filling.

    `demands[i]` caps flow i's share (None or inf = greedy). With `weights`, capacity is
    split in proportion to the weights among the flows not yet capped, as for DOCSIS
    service tiers whose weights are their maximum sustained rates.

    >>> max_min_fair(12, demands=[1, 6, 10]).tolist()
    [1.0, 5.5, 5.5]
    """
    if demands is None:
        if n is None and weights is None:
            raise ValueError("give demands, weights or n")
        m = n if n is not None else len(weights)  # type: ignore[arg-type]
        d = np.full(m, np.inf)
    else:
        d = np.array([np.inf if v is None else float(v) for v in demands], dtype=float)
    w = np.ones_like(d) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != d.shape:
        raise ValueError("weights and demands must have the same length")
    if np.any(w <= 0) or capacity < 0 or np.any(d < 0):
        raise ValueError("weights must be positive; capacity and demands non-negative")
    share = np.zeros_like(d)
    active = np.ones(d.shape, dtype=bool)
    left = float(capacity)
    while active.any() and left > 1e-12:
        fill = left / w[active].sum()  # capacity per unit weight
        want = (d - share) / w  # what each flow could still take per unit weight
        step = min(fill, float(np.min(np.where(active, want, np.inf))))
        share[active] += step * w[active]
        left -= step * w[active].sum()
        active &= (d - share) > 1e-12
        if step >= fill:
            break
    return share


def normalised_throughputs(throughputs: Sequence[float], fair_shares: Sequence[float]) -> np.ndarray:
    """x_i = T_i / r_i, the input of the DOCSIS study's fairness metrics."""
    t = np.asarray(throughputs, dtype=float)
    r = np.asarray(fair_shares, dtype=float)
    if t.shape != r.shape:
        raise ValueError("throughputs and fair shares must have the same length")
    return t / r


def min_max_ratio(x: Iterable[float]) -> float:
    """min(x) / max(x): 1 = perfectly fair."""
    a = np.asarray(list(x), dtype=float)
    mx = float(np.max(a))
    return 1.0 if mx == 0 else float(np.min(a) / mx)


def tewma(event_times: Sequence[float] | np.ndarray, grid: Sequence[float] | np.ndarray, memory: float = 0.5) -> np.ndarray:
    """Time-exponentially weighted moving average of an event rate (events/s).

    Each event at time t_k contributes exp(-(t - t_k)/memory)/memory to the rate at
    t >= t_k, so a steady rate λ reads as λ and the estimate forgets with time constant
    `memory` (the saturated-TCP study uses 500 ms for drop rates).
    """
    ev = np.sort(np.asarray(event_times, dtype=float))
    g = np.asarray(grid, dtype=float)
    out = np.empty_like(g)
    acc = 0.0
    last = -np.inf
    j = 0
    for i, t in enumerate(g):
        # decay the accumulator to t, adding the events up to t
        while j < ev.size and ev[j] <= t:
            if last > -np.inf:
                acc *= np.exp(-(ev[j] - last) / memory)
            acc += 1.0 / memory
            last = ev[j]
            j += 1
        out[i] = acc * np.exp(-(t - last) / memory) if last > -np.inf else 0.0
    return out


def induced_latency(rtt_samples: Sequence[float] | np.ndarray, base_rtt: float) -> float:
    """Mean probe RTT minus the path's base RTT (the residential study's metric)."""
    a = np.asarray(rtt_samples, dtype=float)
    a = a[~np.isnan(a)]
    if a.size == 0:
        return float("nan")
    return float(a.mean() - base_rtt)


def ecdf(values: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted values and their cumulative probabilities (i/n)."""
    a = np.sort(np.asarray(values, dtype=float))
    a = a[~np.isnan(a)]
    return a, np.arange(1, a.size + 1) / max(a.size, 1)


def pointwise_mean(series: Sequence[Sequence[float] | np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Point-wise mean and standard deviation over repetitions of equally-binned series
    (shorter series are padded with NaN and ignored where missing)."""
    n = max(len(s) for s in series)
    m = np.full((len(series), n), np.nan)
    for i, s in enumerate(series):
        m[i, : len(s)] = s
    with np.errstate(all="ignore"):
        return np.nanmean(m, axis=0), np.nanstd(m, axis=0)


def application_bias(group_throughput: float, group_fair_share: float) -> float:
    """Percent by which a group of flows (e.g. HAS vs FTP) gets more (+) or less (-) than
    its max-min fair share."""
    if group_fair_share <= 0:
        raise ValueError("fair share must be positive")
    return 100.0 * (group_throughput / group_fair_share - 1.0)
