"""The ns-3 engine: the same scenario on ns-3.44's own models (point-to-point links, queue
discs, TCP). :func:`run` runs a scenario and returns an :class:`aqmlab.Result` with the
simulator's tables; :mod:`aqmlab.ns3.translate` maps a scenario to the job the
``aqmlab-ns3`` program (``aqmlab setup ns3`` compiles it) runs. See docs/ns3-engine.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["available", "check", "run"]


def available() -> str | None:
    """None when ns-3 and the engine's program are installed, else how to install them."""
    from aqmlab.ns3.engine import available as _available

    return _available()


def check(scenario: Any) -> list[str]:
    """The scenario keys the engine does not support (empty: it can run the scenario)."""
    from aqmlab.ns3.engine import check as _check

    return _check(scenario)


def run(scenario: Any, seed: int | None = None, **kwargs: Any):
    """Runs ``scenario`` on ns-3.44; see :func:`aqmlab.ns3.engine.run_ns3`."""
    from aqmlab.ns3.engine import run_ns3

    return run_ns3(scenario, seed, **kwargs)
