"""Statistics over repetitions: means with 95 % confidence intervals (Student t), and
a check for repetitions that all came out identical.

A study runs every combination of axis values ``repetitions`` times with seeds
``seed, seed + 1, …``; ``aqmlab.load(DIR).runs`` has one row per run (columns
``experiment``, ``p_<axis>``, ``repetition``, ``seed`` and the measures), so any statistic
can be computed from it. The tables and figures of the report use these helpers::

    import aqmlab
    from aqmlab import stats
    st = aqmlab.load("results/residential-quick")
    rrul = st.runs[st.runs["experiment"] == "rrul"]
    stats.summarize(rrul, "induced_latency", by=["p_qdisc", "p_link"])
    #  p_qdisc  p_link  n  mean  sd  ci95  ci95_low  ci95_high

The confidence interval of a mean of n values is ``mean ± t(0.975, n − 1) · sd / √n``
with the sample standard deviation (``ddof = 1``); it needs n ≥ 2 (NaN otherwise). The
t quantiles come from a table (n − 1 ≤ 30) and the Cornish–Fisher expansion beyond
(Abramowitz & Stegun 26.7.5; error below 1e-6 there), so no SciPy is needed.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

__all__ = ["t975", "MeanCI", "mean_ci", "summarize", "identical_repetitions", "IdenticalRuns", "identical_warning"]

# Student t 0.975 quantiles for 1..30 degrees of freedom.
_T975 = (
    12.706204736, 4.302652730, 3.182446305, 2.776445105, 2.570581836, 2.446911851,
    2.364624252, 2.306004135, 2.262157163, 2.228138852, 2.200985160, 2.178812830,
    2.160368656, 2.144786688, 2.131449546, 2.119905299, 2.109815578, 2.100922040,
    2.093024054, 2.085963447, 2.079613845, 2.073873068, 2.068657610, 2.063898562,
    2.059538553, 2.055529439, 2.051830516, 2.048407142, 2.045229642, 2.042272456,
)
_Z975 = 1.959963984540054


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with `df` degrees of freedom (the factor of a
    two-sided 95 % confidence interval)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z, v = _Z975, float(df)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / v + g2 / v**2 + g3 / v**3 + g4 / v**4


@dataclasses.dataclass(frozen=True)
class MeanCI:
    """Mean, sample sd, count and the half-width of the 95 % confidence interval."""

    mean: float
    sd: float
    n: int
    half: float

    @property
    def low(self) -> float:
        return self.mean - self.half

    @property
    def high(self) -> float:
        return self.mean + self.half


def mean_ci(values: Iterable[float]) -> MeanCI:
    """Mean and 95 % Student-t confidence interval of the finite values (NaNs ignored).
    n = 0: everything NaN; n = 1: sd 0 and an undefined (NaN) interval."""
    v = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float)
    v = v[np.isfinite(v)]
    n = int(v.size)
    if n == 0:
        return MeanCI(math.nan, math.nan, 0, math.nan)
    m = float(v.mean())
    if n == 1:
        return MeanCI(m, 0.0, 1, math.nan)
    sd = float(v.std(ddof=1))
    return MeanCI(m, sd, n, t975(n - 1) * sd / math.sqrt(n))


def summarize(df: pd.DataFrame, value: str, by: list[str] | str | None = None) -> pd.DataFrame:
    """Per group of `by` (columns): n, mean, sd, ci95 (half-width), ci95_low, ci95_high
    of column `value`."""
    by = [by] if isinstance(by, str) else list(by or [])
    rows = []
    groups = df.groupby(by, sort=True, dropna=False) if by else [((), df)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        c = mean_ci(g[value].to_numpy(dtype=float))
        rows.append(dict(zip(by, key)) | {"n": c.n, "mean": c.mean, "sd": c.sd, "ci95": c.half,
                                          "ci95_low": c.low, "ci95_high": c.high})
    return pd.DataFrame(rows, columns=by + ["n", "mean", "sd", "ci95", "ci95_low", "ci95_high"])


# columns of a runs row that are not results
_NOT_RESULTS = {"run_id", "experiment", "repetition", "seed", "wall_seconds", "sim_wall_seconds"}


@dataclasses.dataclass(frozen=True)
class IdenticalRuns:
    """An experiment whose repetitions came out identical: `identical` of its
    `combinations` (those with at least two repetitions) gave the same results in every
    repetition; `repetitions` is the most repetitions a combination had."""

    experiment: str
    repetitions: int
    identical: int
    combinations: int

    @property
    def message(self) -> str:
        return identical_warning(self)


def identical_warning(r: IdenticalRuns) -> str:
    where = "every combination" if r.identical == r.combinations else f"{r.identical} of {r.combinations} combinations"
    return (f"experiment {r.experiment}: {r.repetitions} repetitions produced identical results ({where}): "
            "add variability (run.noise, start_spread, random workloads) or set reps = 1")


def identical_repetitions(runs: pd.DataFrame, measures: dict[str, list[str]] | None = None) -> list[IdenticalRuns]:
    """Experiments in which some combination's repetitions (two or more) all gave the
    same results: the same value (NaN equal to NaN) of every measure and of the event
    count. `measures` maps experiment → measure columns (default: every numeric
    column that is not an identifier, an axis or a wall time)."""
    out: list[IdenticalRuns] = []
    if runs is None or runs.empty or "experiment" not in runs.columns:
        return out
    for exp, er in runs.groupby("experiment", sort=False):
        er = er.dropna(axis=1, how="all")
        pcols = [c for c in er.columns if str(c).startswith("p_")]
        cols = list((measures or {}).get(str(exp)) or [])
        if not cols:
            cols = [c for c in er.columns if c not in _NOT_RESULTS and c not in pcols and pd.api.types.is_numeric_dtype(er[c])]
        else:
            cols = [c for c in cols if c in er.columns] + (["events"] if "events" in er.columns else [])
        if not cols:
            continue
        # each row against the first row of its combination (NaN equal to NaN), all at once
        codes = (er.groupby([er[c].astype(str) for c in pcols], sort=False).ngroup().to_numpy() if pcols
                 else np.zeros(len(er), dtype=np.int64))
        vals = er[cols].to_numpy(dtype=float)
        _, first = np.unique(codes, return_index=True)
        ref = vals[first[codes]]
        differs = ~((vals == ref) | (np.isnan(vals) & np.isnan(ref))).all(axis=1)
        size = np.bincount(codes)
        diff = np.bincount(codes, weights=differs)
        many = size >= 2
        combos = int(many.sum())
        same = int((many & (diff == 0)).sum())
        reps = int(size[many].max()) if combos else 0
        if same:
            out.append(IdenticalRuns(str(exp), reps, same, combos))
    return out
