"""The engines a scenario runs on: the simulator and the reference implementations it is
checked against (docs/engines.md).

``ENGINES`` maps a name to an :class:`Engine`. Every engine answers the same three
questions:

- ``available()``: None when it can run here, else a sentence saying how to install it
  (``"ns2 is not installed: run aqmlab setup ns2"``);
- ``check(scenario)``: the scenario's keys it cannot express, each message naming the key
  and the engine (empty when it can run the scenario); asked before any process starts;
- ``run(scenario, seed, ...)``: an :class:`aqmlab.Result` with the simulator's tables and
  columns (NaN where the engine has no such counter) and ``engine_info`` saying how it ran.

An engine other than the simulator lives in a module (``aqmlab.<name>.engine``) with the
functions ``available``, ``check`` and ``run``; the registry imports it only when asked,
so a missing engine costs nothing.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from aqmlab.errors import AqmlabError, ScenarioError

__all__ = ["Engine", "ENGINES", "get", "names", "EngineUnavailable", "setup_script"]


def setup_script(name: str) -> Path:
    """The shipped script that installs engine ``name`` (``aqmlab/setup/NAME.sh``)."""
    return Path(__file__).resolve().parent / "setup" / f"{name}.sh"


class EngineUnavailable(AqmlabError):
    """The engine is not installed (or not part of this aqmlab); the message says how to get it."""


@dataclass(frozen=True)
class Engine:
    """One engine of :data:`ENGINES`."""

    name: str
    #: what runs, one line (for --help and tables)
    about: str
    #: the module with ``available``, ``check`` and ``run``; empty for the simulator
    module: str
    #: the setup command, for messages and docs
    setup: str

    def setup_script(self) -> Path | None:
        """The setup script aqmlab ships for this engine (``aqmlab setup NAME`` runs it),
        inside the package, so an installed wheel has it; None for the simulator."""
        return setup_script(self.name) if self.module else None

    def _impl(self) -> ModuleType | None:
        if not self.module:
            return None
        try:
            return importlib.import_module(self.module)
        except ModuleNotFoundError as e:
            if e.name and self.module.startswith(e.name):
                return None  # the engine's module is not part of this aqmlab
            raise

    def available(self) -> str | None:
        """None when the engine can run here, else how to install it."""
        if not self.module:
            return None
        impl = self._impl()
        if impl is None:
            return f"the {self.name} engine is not part of this aqmlab version"
        msg: str | None = impl.available()
        return msg

    def check(self, scenario: Any) -> list[str]:
        """The keys of ``scenario`` this engine cannot express, each as ``"KEY: why (ENGINE)"``;
        empty when it can run it. A scenario the simulator rejects raises ScenarioError."""
        import aqmlab

        sc = aqmlab.load_scenario(scenario)
        sc.validate()  # a bad scenario is the user's error, whatever the engine
        impl = self._impl()
        if impl is None:
            return []
        out: list[str] = impl.check(sc)
        return out

    def run(self, scenario: Any, seed: int | None = None, **kwargs: Any) -> Any:
        """Runs ``scenario``; an :class:`aqmlab.Result`. Refuses (ScenarioError naming the
        first key) a scenario the engine cannot express, and raises
        :class:`EngineUnavailable` when the engine is not installed."""
        import aqmlab

        if not self.module:
            r = aqmlab.run(scenario, seed=seed, force=bool(kwargs.get("force", False)))
            r.engine_info = {"engine": "sim"}
            return r
        msg = self.available()
        if msg is not None:
            raise EngineUnavailable(msg)
        sc = aqmlab.load_scenario(scenario)
        bad = self.check(sc)
        if bad:
            field, _, why = bad[0].partition(": ")
            raise ScenarioError(field, why + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""))
        impl = self._impl()
        assert impl is not None
        return impl.run(sc, seed, **kwargs)


ENGINES: dict[str, Engine] = {
    "sim": Engine("sim", "the aqmlab simulator", "", ""),
    "linux": Engine("linux", "a real Linux kernel in a qemu VM (docs/linux-engine.md)", "aqmlab.linux.adapter", "aqmlab setup linux"),
    "ns2": Engine("ns2", "ns-2.35 (Debian's ns2 package): generated Tcl, parsed traces", "aqmlab.ns2.engine", "aqmlab setup ns2"),
    "ns3": Engine("ns3", "ns-3.44's own links, queue discs and TCP (docs/ns3-engine.md)", "aqmlab.ns3.engine", "aqmlab setup ns3"),
}


def names() -> list[str]:
    """The engines' names, the simulator first."""
    return list(ENGINES)


def get(name: str) -> Engine:
    """The engine called ``name``; ScenarioError naming the allowed names otherwise."""
    if name not in ENGINES:
        raise ScenarioError("engine", f"unknown engine {name!r}; allowed: {', '.join(ENGINES)}")
    return ENGINES[name]
