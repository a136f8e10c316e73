"""aqmlab: a packet-level simulator and experiment lab for active queue management.

Describe a bottleneck, its queue discipline and the traffic in a TOML file (or a dict
built with :mod:`aqmlab.scenario`), then::

    import aqmlab
    r = aqmlab.run("examples/fifo_overload.toml", seed=1)
    r.flows          # pandas DataFrame, one row per flow
    r.queues         # one row per link/qdisc
    r.series         # per-bin time series (long format)
    r.samples        # probe RTT samples, qdisc state traces (long format)

A run is a pure function of (scenario, seed). Bad input raises
:class:`aqmlab.ScenarioError` with a ``field`` attribute; see :mod:`aqmlab.errors`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from aqmlab import _core
from aqmlab.errors import AqmlabError, ScenarioError, SimulationError
from aqmlab.result import Result
from aqmlab.scenario import Scenario, load_scenario, qdisc_time_warnings

__version__: str = _core.version()

__all__ = [
    "load",
    "Study",
    "__version__",
    "run",
    "validate",
    "load_scenario",
    "describe",
    "kinds",
    "Result",
    "Scenario",
    "AqmlabError",
    "ScenarioError",
    "SimulationError",
]

SEED_MAX = 2**64 - 1


def load(path: str | os.PathLike[str]):
    """Opens a study's result store (the ``--out`` folder of ``aqmlab reproduce``/``sweep``)
    without reading it: an :class:`aqmlab.store.Store` whose ``runs``, ``flows``, ``queues``,
    ``samples``, ``series`` DataFrames are read on first use (axis columns of numeric axes
    hold numbers), and whose ``scan(table, columns, filters)`` / ``iter_runs(...)`` read only
    the columns, rows and runs asked for."""
    from aqmlab.store import load as _load

    return _load(path)


def Study(name_or_path: str, quick: bool = False):  # noqa: N802 - reads like a class
    """Loads a shipped study by name (``aqmlab list studies``) or a study TOML file."""
    from aqmlab.study import load_study

    return load_study(name_or_path, quick=quick)


def _check_seed(seed: Any) -> int | None:
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ScenarioError("seed", f"{seed!r} is not an integer (allowed: 0 to {SEED_MAX})")
    if not 0 <= seed <= SEED_MAX:
        raise ScenarioError("seed", f"{seed} is out of range (allowed: 0 to {SEED_MAX})")
    return seed


def _check_force(force: Any) -> bool:
    """`force` must be a bool: ``force="no"`` would otherwise be true and lift the budget."""
    if not isinstance(force, bool):
        raise ScenarioError("force", f"{force!r} is not a boolean (allowed: True, False)")
    return force


def run(
    scenario: str | os.PathLike[str] | Mapping[str, Any] | Scenario,
    seed: int | None = None,
    *,
    progress: Callable[[float], None] | None = None,
    force: bool = False,
) -> Result:
    """Runs a scenario and returns its :class:`Result`.

    ``scenario`` is a path to a TOML file, TOML text, a dict with the file's structure, or
    a :class:`Scenario`. ``seed`` defaults to the scenario's ``run.seed`` (1). The
    simulation releases the GIL; ``progress`` (if given) is called with the completed
    fraction (0.01 … 1.0) as the run advances, and Ctrl-C interrupts it.

    A scenario whose estimated memory or events exceed its budget (half the smallest of
    physical memory, RLIMIT_AS and the cgroup memory limit, shared among a sweep's jobs, and
    10^11 events unless ``run.max_memory`` / ``run.max_events`` say otherwise;
    see ``docs/scenario.md``) is refused with a :class:`ScenarioError`; ``force=True``
    lifts the budget.

    Raises :class:`ScenarioError` for bad input and :class:`SimulationError` if the
    simulator fails (a bug).
    """
    force = _check_force(force)
    sc = load_scenario(scenario)
    try:
        raw = _core.run(sc.text, _check_seed(seed), progress, force)
    except ScenarioError as e:
        raise sc.located(e) from None
    res = Result(raw, sc)
    res.warnings += qdisc_time_warnings(sc.to_dict())
    return res


def validate(scenario: str | os.PathLike[str] | Mapping[str, Any] | Scenario, force: bool = False,
             flow_rows: int | None = None) -> dict[str, Any]:
    """Checks a scenario without running it; returns the resolved ``nodes``, ``links``
    and ``flows`` (names, rates in bit/s, times in seconds; at most ``flow_rows`` flows,
    ``flows_total`` counts them all) and the resource ``estimate`` (``events``,
    ``memory_bytes``). Raises :class:`ScenarioError`; ``force`` lifts the resource budget
    (and the size limit of a scenario file)."""
    force = _check_force(force)
    return load_scenario(scenario, force=force).validate(force=force, flow_rows=flow_rows)


def kinds(category: str) -> list[tuple[str, str]]:
    """``(name, description)`` of every ``"qdiscs"``, ``"workloads"``, ``"cc"`` or
    ``"links"`` (topology and link-model tables) kind."""
    fns = {"qdiscs": _core.list_qdiscs, "workloads": _core.list_workloads, "cc": _core.list_cc, "links": _core.list_links}
    if category not in fns:
        raise ScenarioError("category", f"unknown category {category!r} (allowed: {', '.join(fns)})")
    return fns[category]()


def describe(kind: str) -> dict[str, Any]:
    """Documentation of a qdisc, workload, congestion-control or link-model kind (or
    ``"tcp"``): ``kind``, ``category``, ``about`` and ``params`` (``name``, ``default``,
    ``doc``); ``tcp`` adds ``profiles``. An unknown kind raises :class:`ScenarioError`
    (field ``kind``) listing the kinds, with the closest one (``fq-codel``: ``fq_codel``)."""
    try:
        return dict(_core.describe(kind))
    except ScenarioError as e:
        head = f"unknown kind {kind!r}"
        if not isinstance(kind, str) or not e.message.startswith(head):
            raise
        from aqmlab._naming import did_you_mean

        known = [k for cat in ("qdiscs", "workloads", "cc", "links") for k, _ in kinds(cat)] + ["tcp"]
        hint = did_you_mean(kind.replace("-", "_"), known) or did_you_mean(kind, known)
        raise ScenarioError(e.field, head + hint + e.message[len(head):]) from None
