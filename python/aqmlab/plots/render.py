"""Drawing a study's figures into files: :func:`figure` for one spec,
:class:`FigureJob` / :func:`render_figure_records` for every ``[[experiment.figure]]``
of a study (on worker processes when the store is on disk)."""
from __future__ import annotations

import dataclasses
import os
import pathlib
import re
from typing import Any

from matplotlib.figure import Figure

from aqmlab import _procs as procs
from aqmlab.plots.kinds import FIGURE_TYPES
from aqmlab.plots.spec import validate_spec
from aqmlab.store import StoreArg, StoreLike
from aqmlab.store import open as open_store
from aqmlab.study import of_store


def figure(store: StoreArg, spec: dict, experiment: Any = None) -> Figure:
    """Draws one figure from a spec (see the module doc for the keys)."""
    validate_spec(spec)
    return FIGURE_TYPES[spec["type"]](open_store(store), spec, experiment)


def _error_figure(message: str) -> Figure:
    fig = Figure(figsize=(6, 2.5), layout="constrained")
    ax = fig.subplots()
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, fontsize=9, color="#8b0000", wrap=True)
    ax.set_axis_off()
    return fig


@dataclasses.dataclass
class FigureRecord:
    """One rendered figure of a study: where it came from and where it went."""

    experiment: str
    index: int
    name: str
    spec: dict
    png: pathlib.Path | None
    svg: pathlib.Path | None
    error: str | None = None
    #: every file written, in the order of the formats asked for
    files: list[pathlib.Path] = dataclasses.field(default_factory=list)


#: the file formats figures can be written in
FORMATS = ("png", "svg", "pdf")


def check_formats(formats: Any) -> tuple[str, ...]:
    """The formats as a tuple; ValueError naming the allowed ones for any other."""
    fs = (formats,) if isinstance(formats, str) else tuple(formats)
    bad = [f for f in fs if f not in FORMATS]
    if bad or not fs:
        raise ValueError(f"figure format {', '.join(map(repr, bad)) or '(none)'} is not allowed (allowed: {', '.join(FORMATS)})")
    return fs


def _stem(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_") or "figure"


#: figure types that stream per-run samples or series (the slow ones): a parallel render
#: starts them first, so that the longest does not start last
_STREAMING_TYPES = ("cdf", "timeseries", "queue_delay", "state_trace", "drop_rate", "box")


def _figure_tasks(study: Any) -> list[tuple[Any, int, dict, str]]:
    """(experiment, index, spec, file stem) of every figure of the study, in study order
    (a stem already taken gets a ``_`` appended)."""
    tasks = []
    used: set[str] = set()
    for e in study.experiments:
        for i, spec in enumerate(e.figures):
            name = _stem(str(spec.get("name", f"{e.name}-{spec.get('type', 'figure')}-{i + 1}")))
            while name in used:
                name += "_"
            used.add(name)
            tasks.append((e, i, spec, name))
    return tasks


def _render_one(store: StoreLike, e: Any, i: int, spec: dict, name: str, out: pathlib.Path, formats: tuple[str, ...],
                strict: bool, dpi: int) -> FigureRecord:
    """Draws one figure of experiment `e` and writes its files (see :func:`render_figure_records`)."""
    err = None
    try:
        validate_spec(spec, f"experiment {e.name!r} figure[{i}]")
        fig = FIGURE_TYPES[spec["type"]](store, spec, e)
    except Exception as ex:  # noqa: BLE001 - reported in the figure itself
        if strict:
            raise
        err = f"{type(ex).__name__}: {ex}"
        fig = _error_figure(f"figure {name} could not be drawn\n{err}")
    files = []
    for fmt in formats:
        path = out / f"{name}.{fmt}"
        fig.savefig(path, dpi=dpi)
        files.append(path)
    png = out / f"{name}.png" if "png" in formats else None
    svg = out / f"{name}.svg" if "svg" in formats else None
    return FigureRecord(e.name, i, name, dict(spec), png, svg, err, files)


#: the store a figure worker process has opened, by path (its runs table is read once
#: per worker, not once per figure)
_WORKER_STORES: dict[str, StoreLike] = {}


def _render_in_worker(path: str, e: Any, i: int, spec: dict, name: str, out: pathlib.Path, formats: tuple[str, ...],
                      strict: bool, dpi: int) -> FigureRecord:
    if path not in _WORKER_STORES:
        from aqmlab.store import load

        _WORKER_STORES[path] = load(path, verify=False)  # the process that started the job verified it
    return _render_one(_WORKER_STORES[path], e, i, spec, name, out, formats, strict, dpi)


class FigureJob:
    """The figures of a study being rendered: on `jobs` worker processes when the store
    is a store on disk and there is more than one figure (each worker opens the store
    itself), else in this process when :meth:`result` is called. The caller may do other
    work (the report's tables and findings) before asking for the records. Each figure
    is drawn by the same code either way, so the files are the same; the records come
    back in study order."""

    def __init__(self, store: StoreArg, study: Any, outdir: str | pathlib.Path, formats: tuple[str, ...] = ("png", "svg"),
                 strict: bool = False, dpi: int = 110, jobs: int | None = 1) -> None:
        from aqmlab.store import Store

        self.store = open_store(store)
        self.study = of_store(self.store, study)
        self.out = pathlib.Path(outdir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.formats, self.strict, self.dpi = check_formats(formats), strict, dpi
        self.tasks = _figure_tasks(self.study)
        n = min(jobs or os.cpu_count() or 1, len(self.tasks))
        self.pool: Any = None
        self.futures: dict[int, Any] = {}
        if n > 1 and isinstance(self.store, Store):
            self.pool = procs.pool(n)
            first = sorted(range(len(self.tasks)), key=lambda k: self.tasks[k][2].get("type") not in _STREAMING_TYPES)
            path = str(self.store.path)
            for k in first:
                e, i, spec, name = self.tasks[k]
                self.futures[k] = self.pool.submit(_render_in_worker, path, e, i, spec, name, self.out, self.formats, strict, dpi)

    def result(self) -> list[FigureRecord]:
        """The records of every figure, in study order (waits for the workers). A figure
        whose worker process died is drawn here instead."""
        from concurrent.futures.process import BrokenProcessPool

        try:
            recs = []
            for k, (e, i, spec, name) in enumerate(self.tasks):
                fut = self.futures.get(k)
                rec = None
                if fut is not None:
                    try:
                        rec = fut.result()
                    except BrokenProcessPool:
                        rec = None
                if rec is None:
                    rec = _render_one(self.store, e, i, spec, name, self.out, self.formats, self.strict, self.dpi)
                recs.append(rec)
            return recs
        finally:
            self.close()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


def render_figure_records(store: StoreArg, study: Any, outdir: str | pathlib.Path, formats: tuple[str, ...] = ("png", "svg"),
                          strict: bool = False, dpi: int = 110, jobs: int | None = 1) -> list[FigureRecord]:
    """Renders every ``[[experiment.figure]]`` of `study` into `outdir` and describes
    each result. With strict=False a bad spec or a plotting failure gives a figure
    that shows the error instead of raising. `jobs`: worker processes that draw the
    figures of a store on disk side by side (None: one per CPU; 1: in this process);
    the files are the same either way."""
    return FigureJob(store, study, outdir, formats, strict, dpi, jobs).result()


def render_figures(store: StoreArg, study: Any, outdir: str | pathlib.Path, formats: tuple[str, ...] = ("png", "svg"),
                   strict: bool = False, jobs: int | None = 1) -> list[pathlib.Path]:
    """Renders every figure of the study as PNG + SVG; returns the written paths.

    store: an :class:`aqmlab.store.Store` or a result directory; study: an
    :class:`aqmlab.study.Study`, or None to use the study text saved in the store."""
    recs = render_figure_records(store, study, outdir, formats, strict, jobs=jobs)
    return [p for r in recs for p in r.files]
