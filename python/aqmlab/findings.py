"""Qualitative findings of a study and the evidence a result store gives for them.

A study lists its findings in ``[study] findings``; each entry is either a plain
string (shown as is, marked "not machine-checked") or a table with the text and an
optional data-only ``check`` that :func:`evaluate` computes from the store's ``runs``
table::

    findings = [
      "CoDel oscillates in and out of drop mode.",
      { text = "fq_codel induces far less latency than FIFO",
        check = { experiment = "rrul", measure = "induced_latency", axis = "qdisc",
                  lower = "fq_codel", than = "fifo", by = 5 },
        see = "rrul-ellipse" },
    ]

Finding keys: ``text`` (required), ``check`` (optional), ``see`` (optional: name of a
figure or table of the report that shows it; the report links to it).

Check keys (all values are data; nothing is executed):

``experiment``
    the experiment (default: the study's only experiment).
``measure`` (required)
    a run-level measure of that experiment.
``stat``
    ``"mean"`` (default) or ``"median"`` over the repetitions of a combination.
``where``
    ``{axis = label}`` / ``{axis = [labels]}``: only these runs.

and exactly one form:

``lower = A, than = B, axis = X`` / ``higher = A, than = B, axis = X``
    the stat for X = A is below (above) that for X = B; with ``by = k`` it must be
    at least k times lower (higher). Holds when it holds in every combination of the
    experiment's other axes (each shown).
``order = [A, B, C], axis = X``
    the stat strictly increases along the list (A < B < C), in every combination of
    the other axes.
``trend = "increasing" | "decreasing", axis = X``
    along the axis's values in study order, the stat only rises (falls).
``at_most = v`` / ``at_least = v`` / ``between = [lo, hi]``
    the stat of every combination of axis values lies in that range (the values are
    in the measure's stored unit: seconds, bit/s, fractions).

The outcome is ``pass`` (✓), ``fail`` (✗), ``no data`` (the runs needed are absent)
or ``unchecked`` (a plain string, or a finding without ``check``), with the numbers
that decided it in display units.
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import numpy as np
import pandas as pd

from aqmlab._fmt import fmt_num, unit_for
from aqmlab.store import StoreLike, drop_foreign_axes, runs_of
from aqmlab.study import FindingError, validate_finding

#: the declaration check lives with the study-file schema (``aqmlab.study``), which
#: validates findings when a study is loaded; re-exported here
validate = validate_finding

__all__ = ["FindingError", "Evidence", "validate", "evaluate", "evaluate_all"]


@dataclasses.dataclass
class Evidence:
    """What the store shows for one finding."""

    text: str
    status: str  # "pass" | "fail" | "no data" | "unchecked"
    detail: str = ""
    see: str | None = None
    check: dict | None = None

    @property
    def symbol(self) -> str:
        return {"pass": "✓", "fail": "✗", "no data": "?", "unchecked": "–"}[self.status]


def _stat(v: pd.Series, how: str) -> float:
    a = v.to_numpy(dtype=float)
    a = a[~np.isnan(a)]
    if a.size == 0:
        return float("nan")
    return float(np.median(a) if how == "median" else a.mean())


def _slices(runs: pd.DataFrame, skip: str | None, study: Any = None, exp: str | None = None) -> list[tuple[str, pd.DataFrame]]:
    """Per combination of the axes other than `skip`, in study order: (label, rows)."""
    others = [c for c in runs.columns if c.startswith("p_") and c != (f"p_{skip}" if skip else None)]
    if not others:
        return [("", runs)]
    orders = {c: _axis_order(study, exp, c[2:], runs[c]) for c in others}
    out = []
    for key, g in runs.groupby(others, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        rank = tuple(orders[c].index(str(k)) if str(k) in orders[c] else len(orders[c]) for c, k in zip(others, key))
        out.append((rank, ", ".join(f"{c[2:]}={k}" for c, k in zip(others, key)), g))
    return [(lab, g) for _, lab, g in sorted(out, key=lambda x: x[0])]


def evaluate(finding: Any, store: StoreLike, study: Any = None) -> Evidence:
    """The evidence the store's runs give for one finding."""
    if isinstance(finding, str):
        return Evidence(finding, "unchecked", "not machine-checked: compare with the figures and tables")
    validate_finding(finding)
    text, see, c = finding["text"], finding.get("see"), finding.get("check")
    if c is None:
        return Evidence(text, "unchecked", "not machine-checked: compare with the figures and tables", see)
    runs = runs_of(store)
    exp = c.get("experiment")
    if exp is None and study is not None and len(study.experiments) == 1:
        exp = study.experiments[0].name
    if exp is None and isinstance(runs, pd.DataFrame) and "experiment" in runs.columns and runs["experiment"].nunique() == 1:
        exp = runs["experiment"].iloc[0]
    measure, how = c["measure"], c.get("stat", "mean")
    scale, unit = unit_for(measure)
    fmt = lambda v: fmt_num(v * scale) + (f" {unit}" if unit else "")  # noqa: E731
    if not isinstance(runs, pd.DataFrame) or runs.empty or "experiment" not in runs.columns:
        return Evidence(text, "no data", "the store has no finished runs", see, c)
    runs = drop_foreign_axes(runs[runs["experiment"] == exp])
    for axis, val in (c.get("where") or {}).items():
        col = f"p_{axis}"
        if col not in runs.columns:
            return Evidence(text, "no data", f"experiment {exp!r} has no axis {axis!r}", see, c)
        vals = val if isinstance(val, list) else [val]
        runs = runs[runs[col].astype(str).isin([str(v) for v in vals])]
    if runs.empty or measure not in runs.columns:
        return Evidence(text, "no data", f"no runs of {exp!r} with measure {measure!r}", see, c)
    axis = c.get("axis")
    if axis is not None and f"p_{axis}" not in runs.columns:
        return Evidence(text, "no data", f"experiment {exp!r} has no axis {axis!r}", see, c)
    acol = f"p_{axis}" if axis else None
    parts, ok_all, any_data = [], True, False

    def at(g: pd.DataFrame, label: Any) -> float:
        return _stat(g[g[acol].astype(str) == str(label)][measure], how)

    if "lower" in c or "higher" in c:
        a, b = (c["lower"], c["than"]) if "lower" in c else (c["higher"], c["than"])
        k = float(c.get("by", 1.0))
        for lab, g in _slices(runs, axis, study, exp):
            va, vb = at(g, a), at(g, b)
            if np.isnan(va) or np.isnan(vb):
                parts.append(f"{lab + ': ' if lab else ''}{a} {fmt(va)}, {b} {fmt(vb)} (missing)")
                continue
            any_data = True
            ok = va * k <= vb if "lower" in c else va >= vb * k
            ok = ok and va != vb
            ok_all &= ok
            rel = "<" if va < vb else ">" if va > vb else "="
            ratio = f" (×{fmt_num(vb / va if 'lower' in c else va / vb)})" if va and vb and k != 1.0 else ""
            parts.append(f"{lab + ': ' if lab else ''}{a} {fmt(va)} {rel} {b} {fmt(vb)}{ratio} {'✓' if ok else '✗'}")
    elif "order" in c:
        for lab, g in _slices(runs, axis, study, exp):
            vals = [at(g, x) for x in c["order"]]
            if any(np.isnan(v) for v in vals):
                parts.append(f"{lab + ': ' if lab else ''}missing values")
                continue
            any_data = True
            ok = all(x < y for x, y in itertools.pairwise(vals))
            ok_all &= ok
            parts.append(
                (f"{lab}: " if lab else "") + " < ".join(f"{x} {fmt(v)}" for x, v in zip(c["order"], vals)) + f" {'✓' if ok else '✗'}"
            )
    elif "trend" in c:
        order = _axis_order(study, exp, axis, runs[acol])
        for lab, g in _slices(runs, axis, study, exp):
            pts = [(x, at(g, x)) for x in order]
            pts = [(x, v) for x, v in pts if not np.isnan(v)]
            if len(pts) < 2:
                parts.append(f"{lab + ': ' if lab else ''}fewer than two values")
                continue
            any_data = True
            vs = [v for _, v in pts]
            ok = (
                all(x < y for x, y in itertools.pairwise(vs))
                if c["trend"] == "increasing"
                else all(x > y for x, y in itertools.pairwise(vs))
            )
            ok_all &= ok
            parts.append((f"{lab}: " if lab else "") + " → ".join(f"{x}: {fmt(v)}" for x, v in pts) + f" {'✓' if ok else '✗'}")
    else:
        lo = c["between"][0] if "between" in c else c.get("at_least", -np.inf)
        hi = c["between"][1] if "between" in c else c.get("at_most", np.inf)
        for lab, g in _slices(runs, None, study, exp):
            v = _stat(g[measure], how)
            if np.isnan(v):
                continue
            any_data = True
            ok = lo <= v <= hi
            ok_all &= ok
            parts.append(f"{lab + ': ' if lab else ''}{fmt(v)} {'✓' if ok else '✗'}")
        bound = f"≤ {fmt(hi)}" if np.isinf(lo) else f"≥ {fmt(lo)}" if np.isinf(hi) else f"in [{fmt(lo)}, {fmt(hi)}]"
    if not any_data:
        return Evidence(text, "no data", "; ".join(parts) or "no values", see, c)
    head = f"{how} {measure} ({exp})" + (f", want {bound}" if not axis else "")
    return Evidence(text, "pass" if ok_all else "fail", head + ": " + "; ".join(parts), see, c)


def _axis_order(study: Any, exp: str | None, axis: str, values: pd.Series) -> list[str]:
    present = list(dict.fromkeys(values.astype(str)))
    if study is not None:
        try:
            e = study.experiment(exp)
            for a in e.axes:
                if a.name == axis:
                    return [v.label for v in a.values if v.label in present]
        except KeyError:
            pass
    from aqmlab._fmt import natural_key

    return sorted(present, key=natural_key)


def evaluate_all(store: StoreLike, study: Any) -> list[Evidence]:
    """Evidence for every finding of the study (a malformed one reports its error)."""
    out = []
    for i, f in enumerate(getattr(study, "findings", []) or []):
        try:
            out.append(evaluate(f, store, study))
        except FindingError as e:
            text = f.get("text", str(f)) if isinstance(f, dict) else str(f)
            out.append(Evidence(text, "no data", f"malformed finding: findings[{i}]: {e}"))
    return out
