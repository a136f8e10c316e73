"""Scenarios: load them from a path, TOML text or a dict, and build them in Python.

The TOML schema is the API (see ``docs/scenario.md``). The builders here return plain
dicts with exactly the structure of the TOML file, so a dict made with them, a dict read
from a file with :mod:`tomllib` and the file itself are interchangeable::

    import aqmlab
    from aqmlab.scenario import scenario, dumbbell, qdisc, flow

    sc = scenario(
        name="fifo-overload", duration="20s", warmup="2s",
        dumbbell=dumbbell(rate="10Mbit", delay="10ms", qdisc=qdisc("fifo", limit=100)),
        flows=[flow("cbr", "client0", "server0", rate="20Mbit", size=1500)],
    )
    result = aqmlab.run(sc, seed=1)

Keys whose value is ``None`` are left out, so the core's documented default applies.
"""

from __future__ import annotations

import functools
import gc
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import tomli_w

from aqmlab import _core
from aqmlab.errors import ScenarioError

__all__ = [
    "Scenario",
    "load_scenario",
    "to_toml",
    "scenario",
    "dumbbell",
    "direction",
    "qdisc",
    "node",
    "link",
    "flow",
]

#: whether the compiled extension takes ``flow_rows`` (an extension built before it
#: existed lists every flow)
_FLOW_ROWS = "flow_rows" in (getattr(_core.validate, "__text_signature__", None) or "")


class Scenario:
    """A scenario as TOML text, plus the file it came from (if any). ``generated``: the
    text was written from a dict (:func:`load_scenario`), so an error's line number would
    point into text the user never wrote and is left out."""

    __slots__ = ("text", "path", "generated")

    def __init__(self, text: str, path: Path | None = None, generated: bool = False) -> None:
        from aqmlab.inputs import surrogate_error

        why = surrogate_error(text) if isinstance(text, str) else None
        if why:
            raise ScenarioError("", why)
        self.text = text
        self.path = path
        self.generated = generated

    def located(self, e: ScenarioError) -> ScenarioError:
        """`e` with the line of this scenario's text that sets its field (:func:`with_line`),
        or, for a scenario written from a dict, without any line number; a flow to a
        dumbbell host beyond its `pairs` says so."""
        e = self._pairs_hint(e)
        if not self.generated:
            return with_line(e, self.text)
        has = re.search(r"\s*\(line \d+\)\s*$", e.message)
        return ScenarioError(e.field, e.message[: has.start()]) if has else e

    def to_dict(self) -> dict[str, Any]:
        """The scenario as nested dicts/lists (TOML parsed by :mod:`tomllib`)."""
        try:
            return tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as e:
            raise ScenarioError("", f"malformed TOML: {e}") from None
        except RecursionError:
            raise ScenarioError("", "malformed TOML: tables/arrays nested too deeply") from None

    def validate(self, force: bool = False, seed: int | None = None, spread: bool = False,
                 flow_rows: int | None = None) -> dict[str, Any]:
        """Validates without running; returns the resolved nodes, links and flows and the
        resource estimate. ``force`` lifts the resource budget (``run.max_memory``). With
        ``spread`` the flows' ``start`` are those of a run with ``seed`` (default
        ``run.seed``): ``start_spread`` draws and the start jitter; without, the nominal
        starts. ``flow_rows`` caps the rows of ``flows`` (``flows_total`` counts them
        all): a check that needs no flow list passes 0, so that a million flow instances
        do not become a million dicts."""
        if not isinstance(force, bool):
            raise ScenarioError("force", f"{force!r} is not a boolean (allowed: True, False)")
        # The plan of a big topology is hundreds of thousands of small dicts: with the
        # cyclic GC on, building it rescans them again and again (quadratic time).
        enabled = gc.isenabled()
        gc.disable()
        try:
            if flow_rows is None or not _FLOW_ROWS:
                plan = _core.validate(self.text, force, seed, spread)
                plan.setdefault("flows_total", len(plan["flows"]))
            else:
                plan = _core.validate(self.text, force, seed, spread, flow_rows)
        except ScenarioError as e:
            raise self.located(e) from None
        finally:
            if enabled:
                gc.enable()
        extra = qdisc_time_warnings(self.to_dict())
        if extra:
            plan["warnings"] = list(plan.get("warnings", [])) + extra
        return plan

    def _pairs_hint(self, e: ScenarioError) -> ScenarioError:
        """``unknown node 'client3'`` in a dumbbell of 2 pairs gains "the [dumbbell] has
        pairs = 2 (hosts client0 … client1 and server0 … server1): set pairs = 4 or more"
        (as many as a flow's `count` when its host is ``client{i}``)."""
        m = re.match(r"unknown node '(client|server)(\d+)'", e.message)
        if not m:
            return e
        try:
            d = self.to_dict().get("dumbbell")
        except ScenarioError:
            return e
        if not isinstance(d, dict):
            return e
        pairs, need = d.get("pairs", 1), int(m[2]) + 1
        if not isinstance(pairs, int) or need <= pairs:
            return e
        f = re.match(r"flow\[(\d+)\]\.(from|to)$", e.field)
        flows = self.to_dict().get("flow")
        if f and isinstance(flows, list) and int(f[1]) < len(flows) and isinstance(flows[int(f[1])], dict):
            tab = flows[int(f[1])]
            if "{i}" in str(tab.get(f[2], "")) and isinstance(tab.get("count"), int):
                need = max(need, tab["count"])  # instances 0 … count-1 each need their pair
        hosts = "client0 and server0" if pairs == 1 else f"client0 … client{pairs - 1} and server0 … server{pairs - 1}"
        hint = f"; the [dumbbell] has pairs = {pairs} (hosts {hosts}): set pairs = {need} or more"
        base = re.match(r"^(.*?)(\s*\(line \d+\))?\s*$", e.message, flags=re.S)
        assert base is not None
        return ScenarioError(e.field, base[1] + hint + (base[2] or ""))

    @property
    def name(self) -> str | None:
        """``run.name``, else the file's stem, else None."""
        try:
            n = self.to_dict().get("run", {}).get("name")
        except ScenarioError:
            n = None
        if n is None and self.path is not None:
            n = self.path.stem
        return n

    def __repr__(self) -> str:
        where = f" from {self.path}" if self.path else ""
        return f"<Scenario {self.name!r}{where}, {len(self.text)} chars>"


_TIME_DEFAULT = re.compile(r"^\s*\d+(?:\.\d+)?\s*(?:ns|us|µs|ms|s|min)\s*$")


@functools.cache
def _qdisc_time_keys() -> dict[str, frozenset[str]]:
    """Per qdisc kind, its keys that are durations (their default has a time unit:
    ``target = "5ms"``, ``interval = "100ms"``)."""
    out = {}
    for kind, _ in _core.list_qdiscs():
        try:
            params = _core.describe(kind)["params"]
        except Exception:  # noqa: BLE001 - a kind without documentation: no warnings for it
            continue
        out[kind] = frozenset(p["name"] for p in params if _TIME_DEFAULT.match(str(p.get("default", ""))))
    return out


def qdisc_time_warnings(doc: Mapping[str, Any]) -> list[str]:
    """Warnings for qdisc time constants written as bare numbers above 1 (``target = 5``
    is 5 seconds, not 5 ms: a bare number is seconds), as ``"field: message"`` like the
    core's warnings for link delays."""
    keys = _qdisc_time_keys()
    out: list[str] = []

    def walk(v: Any, path: str) -> None:
        if isinstance(v, Mapping):
            kind = v.get("kind")
            if isinstance(kind, str) and kind in keys and "qdisc" in path:
                for k in sorted(keys[kind]):
                    x = v.get(k)
                    if isinstance(x, (int, float)) and not isinstance(x, bool) and x > 1:
                        out.append(f"{path}.{k}: {x:g} is {x:g} s — a unit mistake? A bare number is seconds; "
                                   f"write e.g. \"{x:g}ms\"")
            for k, x in v.items():
                walk(x, f"{path}.{k}" if path else str(k))
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, f"{path}[{i}]")

    walk(doc, "")
    return out


def with_line(e: ScenarioError, text: str) -> ScenarioError:
    """`e` with the line of `text` that sets its field, when the core's message has none
    (checks made after parsing: ranges, cross-field rules) or names the header line of
    an array of tables (the first ``[[flow]]``) for a key inside one of its tables
    (``flow[0].byte`` at its own line; a key the table lacks keeps the header's line)."""
    from aqmlab._naming import key_line

    if not e.field:
        return e
    has = re.search(r"\s*\(line (\d+)\)\s*$", e.message)
    if has and not re.match(r"^\w+\[\d+\]", e.field):
        return e
    line = key_line(text, e.field)
    if not line or (has and int(has[1]) == line):
        return e
    base = e.message[: has.start()] if has else e.message
    return ScenarioError(e.field, f"{base} (line {line})")


def _looks_like_toml(s: str) -> bool:
    return "\n" in s or "=" in s or s.lstrip().startswith("[")


def load_scenario(source: str | os.PathLike[str] | Mapping[str, Any] | Scenario, force: bool = False) -> Scenario:
    """Turns a path, TOML text, a dict or a :class:`Scenario` into a :class:`Scenario`.

    A ``str`` is TOML text if it contains a newline, ``=`` or starts with ``[``; otherwise
    it is a path. Unreadable files raise :class:`ScenarioError` (field ``""``), and so do
    files that are not regular files (FIFOs, devices, folders) and files over
    :data:`aqmlab.inputs.MAX_INPUT_BYTES` bytes unless `force`.
    """
    if isinstance(source, Scenario):
        return source
    if isinstance(source, Mapping):
        return Scenario(to_toml(source), generated=True)
    if isinstance(source, str) and _looks_like_toml(source):
        return Scenario(source)
    if isinstance(source, (str, os.PathLike)):
        from aqmlab.inputs import InputFileError, read_input

        path = Path(source)
        try:
            return Scenario(read_input(path, "scenario file", force=force), path)
        except InputFileError as e:
            raise ScenarioError("", str(e)) from None
    raise ScenarioError("", f"expected a scenario path, TOML text or dict, got {type(source).__name__}")


#: Deepest nesting of tables/arrays accepted in a scenario. The schema itself nests at
#: most 5 levels (``dumbbell.up.qdisc``, ``run.packet_trace[0][1]``); the limit only stops
#: runaway inputs before they exhaust the interpreter's stack.
MAX_DEPTH = 32

#: TOML integers are 64-bit signed (TOML 1.0, "Integer"): the range a scenario file can hold.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


def _clean(v: Any, where: str, depth: int = 0) -> Any:
    """Drops None values and turns tuples/paths into TOML-writable values."""
    if depth > MAX_DEPTH and isinstance(v, (Mapping, list, tuple)):
        raise ScenarioError(where, f"nested more than {MAX_DEPTH} tables/arrays deep (the scenario schema needs at most 5)")
    if isinstance(v, Mapping):
        out = {}
        for k, x in v.items():
            if not isinstance(k, str):
                raise ScenarioError(where, f"key {k!r} is not a string")
            if x is not None:
                out[k] = _clean(x, f"{where}.{k}" if where else k, depth + 1)
        return out
    if isinstance(v, (list, tuple)):
        return [_clean(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(v) if x is not None]
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    if isinstance(v, int) and not isinstance(v, bool) and not INT_MIN <= v <= INT_MAX:
        hint = ' (write a seed above 2^63-1 as a string, e.g. seed = "18446744073709551615")' if where.endswith("seed") else ""
        raise ScenarioError(where, f"integer {v} does not fit in a TOML integer (allowed: {INT_MIN} to {INT_MAX}){hint}")
    if isinstance(v, (str, bool, int, float)):
        return v
    # numpy scalars and the like
    if hasattr(v, "item"):
        return _clean(v.item(), where, depth)
    raise ScenarioError(where, f"value {v!r} of type {type(v).__name__} cannot be written to TOML")


def to_toml(d: Mapping[str, Any]) -> str:
    """Writes a scenario dict as TOML text (``None`` values are left out)."""
    clean = _clean(d, "")
    try:
        return tomli_w.dumps(clean)
    except RecursionError:  # _clean bounds the depth; kept as a last line of defence
        raise ScenarioError("", f"nested more than {MAX_DEPTH} tables/arrays deep") from None
    except (TypeError, ValueError) as e:
        raise ScenarioError("", f"cannot write the scenario dict as TOML: {e}") from None


# ---------------------------------------------------------------------------------------
# Builders: each returns the dict of one TOML table. Durations, rates and sizes are written
# as in the file ("25ms", "10Mbit", "250KB"); a bare number is seconds, bit/s or bytes.


def qdisc(kind: str, **params: Any) -> dict[str, Any]:
    """A qdisc table, e.g. ``qdisc("fifo", limit=100)``; see ``aqmlab describe KIND``."""
    return {"kind": kind, **params}


def direction(
    rate: str | int | None = None,
    qdisc: Mapping[str, Any] | None = None,
    loss: float | None = None,
    loss_periods: Iterable[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """A per-direction override of the dumbbell bottleneck (``[dumbbell.up]``/``down``)."""
    return {"rate": rate, "qdisc": qdisc, "loss": loss, "loss_periods": list(loss_periods) if loss_periods else None}


def dumbbell(
    rate: str | int | None = None,
    *,
    pairs: int | None = None,
    delay: str | float | None = None,
    qdisc: Mapping[str, Any] | None = None,
    up: Mapping[str, Any] | None = None,
    down: Mapping[str, Any] | None = None,
    access_rate: str | int | None = None,
    access_delay: str | float | None = None,
    client_delays: Iterable[str | float] | None = None,
    server_delays: Iterable[str | float] | None = None,
    access_qdisc: Mapping[str, Any] | None = None,
    overhead: int | None = None,
    mtu: int | None = None,
    device_queue: int | None = None,
) -> dict[str, Any]:
    """The ``[dumbbell]`` table: ``pairs`` clients ↔ router_a ⇄ bottleneck ⇄ router_b ↔ servers."""
    return {
        "pairs": pairs,
        "rate": rate,
        "delay": delay,
        "qdisc": qdisc,
        "up": up,
        "down": down,
        "access_rate": access_rate,
        "access_delay": access_delay,
        "client_delays": list(client_delays) if client_delays is not None else None,
        "server_delays": list(server_delays) if server_delays is not None else None,
        "access_qdisc": access_qdisc,
        "overhead": overhead,
        "mtu": mtu,
        "device_queue": device_queue,
    }


def node(name: str, kind: str = "host") -> dict[str, Any]:
    """A ``[[node]]`` table: ``kind`` is ``"host"`` or ``"router"``."""
    return {"name": name, "kind": kind}


def link(src: str, dst: str, rate: str | int, **params: Any) -> dict[str, Any]:
    """A ``[[link]]`` table from ``src`` to ``dst`` (``from``/``to`` in the file).

    Other keys: ``name``, ``delay``, ``qdisc``, ``overhead``, ``mtu``, ``device_queue``,
    ``loss``, ``loss_periods``, ``duplex`` (default true), ``trace``.
    """
    return {"from": src, "to": dst, "rate": rate, **params}


def flow(kind: str, src: str, dst: str, **params: Any) -> dict[str, Any]:
    """A ``[[flow]]`` table of workload ``kind`` from host ``src`` to host ``dst``.

    Common keys: ``name``, ``start``, ``stop``, ``start_spread``, ``count`` (``{i}`` in
    ``src``/``dst`` is replaced by the instance number); the rest depends on the kind
    (``aqmlab describe KIND``).
    """
    return {"kind": kind, "from": src, "to": dst, **params}


def scenario(
    *,
    flows: Iterable[Mapping[str, Any]] = (),
    dumbbell: Mapping[str, Any] | None = None,
    nodes: Iterable[Mapping[str, Any]] = (),
    links: Iterable[Mapping[str, Any]] = (),
    name: str | None = None,
    description: str | None = None,
    duration: str | float | None = None,
    warmup: str | float | None = None,
    bin: str | float | None = None,
    seed: int | None = None,
    trace: bool | None = None,
    tcp: Mapping[str, Any] | None = None,
    docsis: Mapping[str, Any] | None = None,
    wifi: Iterable[Mapping[str, Any]] = (),
    **run_keys: Any,
) -> dict[str, Any]:
    """A whole scenario dict: ``[run]`` keys as arguments (the common ones named here, any
    other ``[run]`` key such as ``noise`` or ``host_jitter`` as a keyword too), the
    topology (``dumbbell``, ``nodes``/``links``, ``docsis``, ``wifi``), the scenario-wide
    ``[tcp]`` table and the flows. Unknown keys are reported by validation, naming them."""
    run = {"name": name, "description": description, "duration": duration, "warmup": warmup, "bin": bin, "seed": seed, "trace": trace}
    return {
        "run": {k: v for k, v in {**run, **run_keys}.items() if v is not None},
        "dumbbell": dumbbell,
        "node": list(nodes) or None,
        "link": list(links) or None,
        "docsis": docsis,
        "wifi": list(wifi) or None,
        "tcp": tcp,
        "flow": list(flows) or None,
    }
