"""Type stubs of the Rust extension ``aqmlab._core`` (crates/aqmlab-py).

Errors: bad input raises :class:`aqmlab.errors.ScenarioError`; a panic in the simulator
raises :class:`aqmlab.errors.SimulationError`.
"""

from collections.abc import Callable
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

__version__: str

class LongTable(TypedDict):
    """One row per (entity, metric, t): ``kind`` 0 = flow, 1 = queue; ``entity`` indexes
    ``flows``/``queues``; ``metric`` indexes ``metric_names``."""

    kind: npt.NDArray[np.uint8]
    entity: npt.NDArray[np.uint32]
    metric: npt.NDArray[np.uint16]
    t: npt.NDArray[np.float64]
    value: npt.NDArray[np.float64]

class SojournHist(TypedDict):
    queue: npt.NDArray[np.uint32]
    low: npt.NDArray[np.float64]
    high: npt.NDArray[np.float64]
    count: npt.NDArray[np.uint64]

class RawResult(TypedDict):
    version: str
    seed: int
    duration: float
    warmup: float
    bin: float
    flows: dict[str, list[Any]]
    queues: dict[str, list[Any]]
    sojourn_hist: SojournHist
    series: LongTable
    samples: LongTable
    metric_names: list[str]
    events: int
    packets_created: int
    packets_delivered: int
    packets_dropped: int
    wall_seconds: float
    warnings: list[str]

class ResultSchema(TypedDict):
    """The result schema declared once in the core (``aqmlab_core::result``)."""

    result: list[tuple[str, str]]
    flows: list[tuple[str, str, str]]
    queues: list[tuple[str, str, str]]
    queues_tail: list[tuple[str, str, str]]
    drop_reasons: list[str]
    mark_reasons: list[str]

class ParamDoc(TypedDict):
    name: str
    default: str
    doc: str

class KindDoc(TypedDict, total=False):
    kind: str
    category: str
    about: str
    params: list[ParamDoc]
    profiles: list[tuple[str, str]]  # only for kind "tcp": TCP stack profiles

def run(toml_text: str, seed: int | None = None, progress: Callable[[float], object] | None = None, force: bool = False) -> RawResult:
    """Parses, validates and runs a scenario (GIL released); results as columns.
    ``force`` lifts the resource budget."""

def validate(toml_text: str, force: bool = False, seed: int | None = None, spread: bool = False,
             flow_rows: int | None = None) -> dict[str, Any]:
    """Resolved summary: ``name``, ``duration``, ``warmup``, ``bin``, ``seed``, ``trace``,
    ``estimate`` (``events``, ``memory_bytes``, ``bins``, ``memory_parts``), ``nodes``,
    ``links``, ``flows`` (at most ``flow_rows`` of them), ``flows_total``. ``force`` lifts
    the resource budget. With ``spread`` the flows' ``start`` include the ``start_spread``
    draws and start jitter of a run with ``seed`` (default ``run.seed``)."""

def list_qdiscs() -> list[tuple[str, str]]: ...
def list_workloads() -> list[tuple[str, str]]: ...
def list_cc() -> list[tuple[str, str]]: ...
def list_links() -> list[tuple[str, str]]: ...
def describe(kind: str) -> KindDoc: ...
def version() -> str: ...
def result_schema() -> ResultSchema:
    """The declared result schema: ``RawResult`` keys with their Python types, and the
    fixed ``flows`` / ``queues`` columns as ``(name, type, doc)``."""
def _debug_panic(message: str) -> None:
    """Panics inside the binding's guard (tests the panic → SimulationError mapping)."""
