"""Running a study's runs: a local process pool (default) or a Dask cluster, with a
resumable Parquet store.

Store layout under the output directory ``OUT`` (details and reading: :mod:`aqmlab.store`)::

    OUT/study.toml            the exact study text (provenance)
    OUT/provenance.json       aqmlab version, study name, quick flag, start time, repaired runs
    OUT/runs/<run_id>.parquet one row: run id, experiment, axis values (``p_<axis>``),
                              repetition, seed, the experiment's measures, wall time
    OUT/flows/<run_id>.parquet, OUT/queues/<run_id>.parquet,
    OUT/samples/<run_id>.parquet, OUT/series/<run_id>.parquet (if the experiment keeps them)
    OUT/checksums/<run_id>.json  SHA-256 of each of the run's files
    OUT/<table>/part-*.parquet + OUT/parts.json   compacted runs (after a sweep)

Every file is written to a temporary name, fsynced and renamed into place (atomic on
POSIX) and its directory fsynced; a run's ``runs/`` row is written last: a run is finished
exactly when its ``runs`` row exists. An interrupted sweep (Ctrl-C, kill -9, a lost worker,
a power cut) therefore resumes by skipping finished runs; the other files of an unfinished
run are simply overwritten. On resume every finished run is checked against its checksums
and a damaged one is run again (recorded under ``repaired`` in ``provenance.json``, shown
by the report). After the runs, the store merges its per-run files into a few large files
per table (:func:`aqmlab.store.compact`). Workers only compute; the coordinating process
does all writing, so a Dask cluster needs no shared file system.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import os
import pathlib
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, wait
from typing import Any

from aqmlab import _procs as procs
from aqmlab.study import RunSpec, Study

__all__ = ["run_study", "execute_run", "SweepSummary", "StoreMismatch", "TABLES"]

TABLES = ("flows", "queues", "samples", "series")


class StoreMismatch(RuntimeError):
    """The output directory already holds results of a different study definition."""


@dataclasses.dataclass
class SweepSummary:
    out: pathlib.Path
    total: int
    skipped: int
    ran: int
    wall_seconds: float
    #: finished runs found damaged on resume and run again (aqmlab.store.Damaged)
    repaired: list = dataclasses.field(default_factory=list)
    #: Run ids that failed (the simulator raised, or its worker process died); each has
    #: ``OUT/failed/<run_id>.toml`` (the scenario) and ``.json`` (seed, error). They are
    #: not finished, so the next sweep tries them again.
    failed: list[str] = dataclasses.field(default_factory=list)


def _record_failure(out: pathlib.Path, spec: dict, error: str) -> None:
    """Saves a failed run's scenario and error under OUT/failed/ (overwritten on retry)."""
    from aqmlab.scenario import load_scenario

    d = out / "failed"
    d.mkdir(parents=True, exist_ok=True)
    rid = spec["run_id"]
    try:
        text = load_scenario(spec["scenario"]).text
    except Exception as e:  # the scenario validated before the sweep; keep the error anyway
        text = f"# the scenario could not be written as TOML: {e}\n"
    (d / f"{rid}.toml").write_text(text)
    info = {
        "run_id": rid,
        "experiment": spec["experiment"],
        "params": spec["params"],
        "repetition": spec["repetition"],
        "seed": spec["seed"],
        "error": error,
    }
    (d / f"{rid}.json").write_text(json.dumps(info, indent=2, default=str))


def _failure_text(e: BaseException) -> str:
    from concurrent.futures.process import BrokenProcessPool

    if isinstance(e, BrokenProcessPool):
        return "the worker process running it died (killed, out of memory or aborted)"
    if type(e).__name__ == "KilledWorker":
        return f"the Dask workers running it died: {' '.join(str(e).split())}"
    return f"{type(e).__name__}: {' '.join(str(e).split())}"


def _spec_to_dict(spec: RunSpec) -> dict:
    """The run as the dict a worker gets (the spec's fields and its ``run_id``). Its
    ``params`` and ``scenario`` are the spec's own objects, which the repetitions of a
    combination share, not copies: nothing that runs or records a spec changes them, a
    worker process gets its own copy by pickling, and a deep copy of every run's scenario
    was most of a sweep's start (6,150 of them for the full residential study)."""
    return {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)} | {"run_id": spec.run_id}


def _run_and_row(spec: dict, measures: list[str]) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """Runs the simulation of `spec`: its Result, the identity and axis columns every
    table of the run starts with, and its ``runs`` row (column → value; one row of a
    DataFrame in :func:`execute_run`, a pyarrow table in the workers). Every run of a
    sweep (:func:`execute_run` and the workers' :func:`_encoded_run`) goes through here."""
    import aqmlab
    from aqmlab import measures as M

    t0 = time.perf_counter()
    res = aqmlab.run(spec["scenario"], seed=spec["seed"])
    wall = time.perf_counter() - t0
    rid = spec["run_id"]
    ident = {"run_id": rid, "experiment": spec["experiment"], "repetition": spec["repetition"], "seed": spec["seed"]}
    params = {f"p_{k}": v for k, v in spec["params"].items()}
    row = ident | params | M.compute(res, measures) | {"events": res.events, "wall_seconds": wall, "sim_wall_seconds": res.wall_seconds}
    return res, ident | params, row


def execute_run(spec: dict, measures: list[str], keep_series: bool, keep_samples: bool) -> dict[str, Any]:
    """Runs one simulation and returns its tables as pandas DataFrames (picklable).
    Pure function of the spec: the same spec gives the same tables (but wall time)."""
    import pandas as pd

    res, tags, row = _run_and_row(spec, measures)
    return {"runs": pd.DataFrame([row]), **_tagged_frames(res, tags, keep_series, keep_samples)}


def _tagged_frames(res: Any, tags: dict[str, Any], keep_series: bool, keep_samples: bool) -> dict[str, Any]:
    """The run's flows, queues, samples and series tables (those the experiment keeps),
    each with the identity and axis columns `tags` first."""
    import pandas as pd

    def tag(df: pd.DataFrame) -> pd.DataFrame:
        # the identity columns first, each value repeated on every row; one frame and one
        # concat instead of a DataFrame.insert per column (each insert rebuilt the
        # frame's column index: ~8 ms of a run's fixed cost), with the same dtypes
        return pd.concat([pd.DataFrame(tags, index=df.index), df], axis=1)

    out: dict[str, Any] = {"flows": tag(res.flows), "queues": tag(res.queues)}
    if keep_samples:
        out["samples"] = tag(res.samples.astype({"kind": str, "entity": str, "metric": str}))
    keep = _series_rows(res, keep_series)
    if keep is not None:
        out["series"] = tag(res.series[keep].astype({"kind": str, "entity": str, "metric": str}))
    return out


def _series_rows(res: Any, keep_series: bool) -> Any:
    """Which rows of the run's series a sweep stores (a boolean array over the simulator's
    series rows, the rows of ``res.series``), or None for no series table: with
    `keep_series` every flow's and the bottleneck queues'; otherwise, for a run that is a
    Flent test, the flows' per-bin goodput (the Flent export needs it, else its TCP lines
    are flat). Both table builders (:func:`_tagged_frames`, :func:`_arrow_tables`) use it."""
    import numpy as np

    from aqmlab.flent import flent_test_of
    from aqmlab.result import is_bottleneck_link

    raw = res._raw
    s = raw["series"]
    kind = s["kind"].astype(np.int64)
    flow_names = [str(n) for n in raw["flows"]["name"]]
    if keep_series:
        names = flow_names + [str(n) for n in raw["queues"]["name"]]
        bott = np.array([is_bottleneck_link(n) for n in names], dtype=bool)
        entity = s["entity"].astype(np.int64) + kind * len(flow_names)
        return (kind == 0) | (bott[entity] if len(bott) else np.zeros(len(kind), dtype=bool))
    if flent_test_of([str(k) for k in raw["flows"]["kind"]], list(raw["flows"]["src"]), flow_names) is None:
        return None
    metrics = list(res.metric_names)
    gp = metrics.index("goodput_bps") if "goodput_bps" in metrics else -1
    return (kind == 0) & (s["metric"].astype(np.int64) == gp)


def _encoded_run(spec: dict, measures: list[str], keep_series: bool, keep_samples: bool) -> dict[str, bytes]:
    """:func:`execute_run` with its tables encoded as Parquet, in the worker: the sweep's
    main process then only writes bytes (and pickling bytes is cheaper than DataFrames).
    The data tables are built as pyarrow tables straight from the simulator's columns
    (:func:`_arrow_tables`): the same files, for a third of the Python time per run."""
    from aqmlab.store import encode_run

    res, tags, row = _run_and_row(spec, measures)
    tables = _arrow_tables(res, tags, keep_series, keep_samples)
    if tables is None:
        tables = _tagged_frames(res, tags, keep_series, keep_samples)
    return encode_run({"runs": _runs_table(row), **tables})


def _value_kind(v: Any) -> str | None:
    """The dtype pandas gives a one-row column holding `v`, when :func:`_runs_table` builds
    it the same way: "str", "int64", "float64" (a Python float: NaN becomes null, as
    ``from_pandas`` makes it), or None (another: left to pandas)."""
    if type(v) is float:
        return "float64"
    return _tag_kind(v)


def _runs_table(row: dict[str, Any]) -> Any:
    """The run's one-row ``runs`` table: what ``pa.Table.from_pandas(pd.DataFrame([row]))``
    gives, built from the values with the schema (and pandas metadata) pyarrow gave the
    first row of the same columns and kinds in this process; the DataFrame itself when a
    value is of another kind (then it is encoded as before)."""
    import pyarrow as pa

    kinds = tuple(_value_kind(v) for v in row.values())
    key = ("runs", tuple(row), kinds)
    schema = _SCHEMAS.get(key)
    if schema is not None:
        return pa.Table.from_arrays([pa.array([v], type=t, from_pandas=True) for v, t in zip(row.values(), schema.types)],
                                    schema=schema)
    import pandas as pd

    df = pd.DataFrame([row])
    if None in kinds or df.attrs or not df.columns.is_unique:
        return df
    tbl = pa.Table.from_pandas(df, preserve_index=False, nthreads=1)
    want = {"str": (pa.string(), pa.large_string()), "int64": (pa.int64(),), "float64": (pa.float64(),)}
    if all(t in want[str(k)] for t, k in zip(tbl.schema.types, kinds)):
        _SCHEMAS[key] = tbl.schema
    return tbl


#: a sweep worker's schemas (with pyarrow's pandas metadata) of the tables
#: :func:`_tagged_frames` makes, by what decides them: the table's columns and dtypes
_SCHEMAS: dict[tuple, Any] = {}
_INT64 = (-(2**63), 2**63 - 1)


def _tag_kind(v: Any) -> str | None:
    """The dtype pandas gives a column of `v` repeated: "str", "int64", or None (another:
    left to pandas)."""
    if isinstance(v, str):
        return "str"
    if isinstance(v, int) and not isinstance(v, bool) and _INT64[0] <= v <= _INT64[1]:
        return "int64"
    return None


def _arrow_tables(res: Any, tags: dict[str, Any], keep_series: bool, keep_samples: bool) -> dict[str, Any] | None:
    """What ``pa.Table.from_pandas`` makes of each frame of :func:`_tagged_frames`, built
    from the simulator's columns without those frames: the tags repeated, the flows' and
    queues' lists, and the long tables' string columns taken from their category codes.
    The schema (and with it pandas' metadata) is the one pyarrow gave the first frame of
    the same columns and dtypes in this process, so the Parquet bytes are the same.
    None when a column is of a kind this does not cover (then the frames are used)."""
    import numpy as np
    import pyarrow as pa

    from aqmlab.result import KIND_NAMES, dedup_names

    kinds = tuple(_tag_kind(v) for v in tags.values())
    if None in kinds:
        return None
    tag_key = tuple(zip(tags, kinds))
    raw = res._raw

    def tag_arrays(n: int) -> list:
        return [_repeated(v, k == "str", n) for v, k in zip(tags.values(), kinds)]

    def from_lists(name: str) -> Any:
        cols = raw[name]
        key = _lists_key(name, tag_key, cols)
        schema = _SCHEMAS.get(key) if key is not None else None
        if schema is None:
            return None
        n = len(next(iter(cols.values())))
        arrays = tag_arrays(n) + [pa.array(v, type=schema.field(len(tags) + i).type, from_pandas=True)
                                  for i, v in enumerate(cols.values())]
        return pa.Table.from_arrays(arrays, schema=schema)

    out: dict[str, Any] = {}
    for name in ("flows", "queues"):
        t = from_lists(name)
        if t is None:
            return _first_tables(res, tags, keep_series, keep_samples)
        out[name] = t
    flow_names, queue_names = list(raw["flows"]["name"]), list(raw["queues"]["name"])
    cats, lut = dedup_names(flow_names + queue_names)
    metric_names = list(res.metric_names)
    if not len(lut) or len(set(metric_names)) != len(metric_names):
        return None
    cat_arr = pa.array(cats, pa.large_string())
    kind_arr = pa.array(list(KIND_NAMES), pa.large_string())
    metric_arr = pa.array(metric_names, pa.large_string())
    nflows = len(flow_names)

    def long_table(t: dict, keep: Any) -> Any:
        kind = t["kind"].astype(np.int64)
        ent = lut[t["entity"].astype(np.int64) + kind * nflows]
        met = t["metric"].astype(np.int64)
        tt, vv = t["t"], t["value"]
        if keep is not None:
            kind, ent, met, tt, vv = kind[keep], ent[keep], met[keep], tt[keep], vv[keep]
        key = ("long", tag_key, tt.dtype, vv.dtype)
        schema = _SCHEMAS.get(key)
        if schema is None:
            return None
        n = len(kind)
        arrays = tag_arrays(n) + [kind_arr.take(pa.array(kind)), cat_arr.take(pa.array(ent)), metric_arr.take(pa.array(met)),
                                  pa.array(tt, from_pandas=True), pa.array(vv, from_pandas=True)]
        return pa.Table.from_arrays(arrays, schema=schema)

    if keep_samples:
        t = long_table(raw["samples"], None)
        if t is None:
            return _first_tables(res, tags, keep_series, keep_samples)
        out["samples"] = t
    keep = _series_rows(res, keep_series)
    if keep is not None:
        t = long_table(raw["series"], keep)
        if t is None:
            return _first_tables(res, tags, keep_series, keep_samples)
        out["series"] = t
    return out


def _first_tables(res: Any, tags: dict[str, Any], keep_series: bool, keep_samples: bool) -> dict[str, Any]:
    """The frames of :func:`_tagged_frames` converted by pyarrow (the first run of its
    kind in this process); their schemas are kept for :func:`_arrow_tables` when every
    column is one it builds the same way (int64, float64 or pandas' pyarrow strings)."""
    import pyarrow as pa

    frames = _tagged_frames(res, tags, keep_series, keep_samples)
    tag_key = tuple(zip(tags, (_tag_kind(v) for v in tags.values())))
    tag_types = [pa.large_string() if k == "str" else pa.int64() for _, k in tag_key]
    out: dict[str, Any] = {}
    for name, df in frames.items():
        if df.attrs or not df.columns.is_unique:
            out[name] = df  # encoded by pandas (attrs) or pyarrow as before
            continue
        tbl = pa.Table.from_pandas(df, preserve_index=False, nthreads=1)
        out[name] = tbl
        if None in (k for _, k in tag_key) or tbl.schema.types[: len(tags)] != tag_types:
            continue
        data = tbl.schema.types[len(tags):]
        if name in ("flows", "queues"):
            src = getattr(res, name)
            key = _lists_key(name, tag_key, res._raw[name])
            if key is not None and all(_plain_dtype(d) for d in src.dtypes) and all(t in _plain_types() for t in data):
                _SCHEMAS[key] = tbl.schema
        elif list(df.columns[len(tags):]) == ["kind", "entity", "metric", "t", "value"] and \
                data == [pa.large_string()] * 3 + [pa.float64()] * 2 and all(_plain_dtype(d) for d in df.dtypes):
            _SCHEMAS[("long", tag_key, df["t"].to_numpy().dtype, df["value"].to_numpy().dtype)] = tbl.schema
    return out


def _repeated(v: Any, text: bool, n: int) -> Any:
    """`v` repeated `n` times as a pyarrow large_string (`text`) or int64 array, made
    from buffers (``pa.repeat`` takes ~15 ns per value; these are ~1 ns)."""
    import numpy as np
    import pyarrow as pa

    if not text:
        return pa.array(np.full(n, v, dtype=np.int64))
    b = str(v).encode()
    offsets = np.arange(n + 1, dtype=np.int64) * len(b)
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(b * n))


def _lists_key(name: str, tag_key: tuple, cols: dict[str, Any]) -> tuple | None:
    """What decides the dtypes pandas gives the columns of the flows or queues table
    (``pd.DataFrame(cols)``, a dict of lists): the column names and, per column, the one
    type of its values (int within int64, float or str). None for an empty table or a
    column of another kind (those tables are converted by pyarrow from the frame)."""
    kinds = []
    n = None
    for col in cols.values():
        if type(col) is not list or not col or (n is not None and len(col) != n):
            return None
        n = len(col)
        types = set(map(type, col))
        if len(types) != 1:
            return None
        t = types.pop()
        if t is int:
            if min(col) < _INT64[0] or max(col) > _INT64[1]:
                return None
        elif t is not float and t is not str:
            return None
        kinds.append(t.__name__)
    return (name, tag_key, tuple(cols), tuple(kinds)) if n else None


def _plain_dtype(d: Any) -> bool:
    """int64, float64, or pandas' string dtype stored by pyarrow (NaN for missing)."""
    import numpy as np
    import pandas as pd

    if isinstance(d, np.dtype):
        return d in (np.dtype(np.int64), np.dtype(np.float64))
    return isinstance(d, pd.StringDtype) and d.storage == "pyarrow"


def _plain_types() -> tuple:
    import pyarrow as pa

    return (pa.int64(), pa.float64(), pa.large_string())


class _Writer:
    """Stores finished runs on a few threads of the main process, so that one run's fsyncs
    (13 of them, tens of ms each on a busy disk) neither hold up the dispatch of the next
    runs nor queue behind each other: concurrent fsyncs share the file system's journal
    commits. A run counts as done (progress, ``on_done``) once :func:`store.write_encoded`
    has returned, i.e. once its ``runs`` row is durable; a write error ends the sweep like
    before. At most ``limit`` runs wait in memory."""

    def __init__(self, out: pathlib.Path, bar: Any, on_done: Any, threads: int = 4, limit: int = 16) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.out, self.bar, self.on_done, self.limit = out, bar, on_done, limit
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="aqmlab-store")
        self.pending: dict[Any, dict] = {}

    def submit(self, spec: dict, files: dict[str, bytes]) -> None:
        from aqmlab.store import write_encoded

        while len(self.pending) >= self.limit:
            self.poll(block=True)
        self.pending[self.pool.submit(write_encoded, self.out, spec["run_id"], files)] = spec
        self.poll()

    def poll(self, block: bool = False) -> None:
        """Reports the writes that have finished (waits for one if ``block``)."""
        if not self.pending:
            return
        done, _ = wait(self.pending, timeout=None if block else 0, return_when=FIRST_COMPLETED)
        for fut in done:
            spec = self.pending.pop(fut)
            fut.result()  # a failed write (disk full, …) ends the sweep
            self.bar.advance(spec)
            if self.on_done:
                self.on_done(spec)

    def close(self) -> None:
        """Waits for every write; re-raises the first that failed."""
        try:
            while self.pending:
                self.poll(block=True)
        finally:
            self.pool.shutdown(wait=True)


def finished_runs(out: pathlib.Path) -> set[str]:
    from aqmlab.store import finished_runs as f

    return f(out)


def _record_repaired(out: pathlib.Path, damaged: list) -> None:
    """Appends the damaged runs found on resume to provenance.json (atomically)."""
    from aqmlab.store import read_provenance, write_provenance

    if not damaged:
        return
    doc = read_provenance(out)
    when = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    doc.setdefault("repaired", []).extend({"run_id": d.run_id, "file": d.file, "reason": d.reason, "found": when} for d in damaged)
    write_provenance(out, doc)


def _mismatch(out: pathlib.Path) -> StoreMismatch:
    return StoreMismatch(f"{out} holds results of a different study definition (or quick mode); choose another --out or delete it")


def _prepare(study: Study, out: pathlib.Path) -> None:
    """Marks `out` as the store of `study` (provenance, then the study text), or checks
    that it is; a damaged study text or provenance is rewritten from `study` when the
    store's records show it is the same study."""
    import aqmlab
    from aqmlab.errors import StoreError
    from aqmlab.store import (
        PREV,
        PROVENANCE,
        STUDY,
        finished_runs,
        read_provenance,
        read_study_text,
        study_sha256,
        write_provenance,
        write_study_text,
    )

    out.mkdir(parents=True, exist_ok=True)
    for tmp in [*out.glob("*/.*.tmp"), *out.glob(".*.tmp")]:
        tmp.unlink(missing_ok=True)
    sha = study_sha256(study.text)
    exists = any((out / n).exists() for n in (STUDY, STUDY + PREV, PROVENANCE, PROVENANCE + PREV))
    if exists:
        prov: dict | None
        text: str | None
        try:
            prov = read_provenance(out)
        except StoreError:
            prov = None
        try:
            text = read_study_text(out, prov or {})
        except StoreError:
            text = None
        if prov is not None and prov.get("quick", study.quick) != study.quick:
            raise _mismatch(out)
        if text and text != study.text:
            raise _mismatch(out)
        if prov is not None and prov.get("study_sha256") not in (None, sha):
            raise _mismatch(out)
        if not text and prov is None:
            # both records damaged: the store is this study's if every finished run is one of its runs
            try:
                done = finished_runs(out)
            except StoreError:
                done = set()
            if not done or not done <= {s.run_id for s in study.runs([e.name for e in study.experiments])}:
                raise StoreError(f"{out}: {STUDY} and {PROVENANCE} are both damaged and the stored runs do not show "
                                 "which study they belong to; choose another --out")
        doc = dict(prov or {})
        if doc.get("study_sha256") == sha and text == study.text and (out / (STUDY + PREV)).exists() \
                and (out / (PROVENANCE + PREV)).exists():
            return
        doc.setdefault("study", study.name)
        doc.setdefault("quick", study.quick)
        doc.setdefault("quick_note", study.quick_note)
        doc.setdefault("aqmlab_version", aqmlab.__version__)
        doc.setdefault("started", datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"))
        doc["study_sha256"] = sha
        write_provenance(out, doc)
        write_study_text(out, study.text)
        return
    # provenance first: the study text is what marks the folder as this study's store
    write_provenance(out, {
        "study": study.name,
        "quick": study.quick,
        "quick_note": study.quick_note,
        "aqmlab_version": aqmlab.__version__,
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "study_sha256": sha,
    })
    write_study_text(out, study.text)


def run_study(
    study: Study,
    out: str | os.PathLike,
    jobs: int | None = None,
    scheduler: str | None = None,
    only: list[str] | None = None,
    progress: bool = True,
    on_done: Callable[[dict], None] | None = None,
    compact_after: bool = True,
    run_ids: Iterable[str] | None = None,
) -> SweepSummary:
    """Runs every unfinished run of `study` and stores it under `out`.

    jobs: local worker processes (default: all cores). scheduler: address of a Dask
    scheduler (``tcp://host:8786``) or a ``dask.distributed.Client``/``LocalCluster``
    object; then the runs execute on that cluster. Finished runs are verified against
    their checksums first (damaged ones run again: ``SweepSummary.repaired``); with
    compact_after the per-run files are merged into a few large files at the end (on `jobs`
    processes, like the runs). `run_ids` restricts the sweep to those runs (a repair
    reruns only the damaged ones). Holds the store's write lock throughout
    (:func:`aqmlab.store.lock`; a second writer is refused with
    :class:`aqmlab.errors.StoreLocked`).
    """
    from aqmlab import measures as M
    from aqmlab.store import lock

    out = pathlib.Path(out)
    t0 = time.perf_counter()
    for e in study.experiments:
        M.validate(e.measures)
    specs = study.runs(only)
    if run_ids is not None:
        wanted = set(run_ids)
        specs = [s for s in specs if s.run_id in wanted]
    with _jobs_env(jobs if scheduler is None else 1):
        _validate_all(specs, study.text)  # a bad study fails before the store folder is touched
        with lock(out):
            return _run_study(study, out, specs, t0, jobs, scheduler, progress, on_done, compact_after)


@contextlib.contextmanager
def _jobs_env(jobs: int | None) -> Iterator[None]:
    """Sets ``AQMLAB_JOBS`` (the local worker processes, default all cores) while a sweep
    validates and runs, so that each run's default memory budget is its share of the
    machine (the workers inherit it); the previous value is restored afterwards."""
    n = jobs or os.cpu_count() or 1
    old = os.environ.get("AQMLAB_JOBS")
    os.environ["AQMLAB_JOBS"] = str(n)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("AQMLAB_JOBS", None)
        else:
            os.environ["AQMLAB_JOBS"] = old


def _run_study(study: Study, out: pathlib.Path, specs: list[RunSpec], t0: float, jobs: int | None, scheduler: Any,
               progress: bool, on_done: Callable[[dict], None] | None, compact_after: bool) -> SweepSummary:
    _prepare(study, out)
    from aqmlab.store import compact, verify

    damaged = verify(out)
    _record_repaired(out, damaged)
    done = finished_runs(out)
    todo = [s for s in specs if s.run_id not in done]
    exp = {e.name: e for e in study.experiments}
    args = [
        (
            _spec_to_dict(s),
            exp[s.experiment].measures,
            # an experiment that names its Flent test keeps the series the export draws
            bool(exp[s.experiment].keep_series) or exp[s.experiment].flent not in (None, "none"),
            bool(exp[s.experiment].keep_samples),
        )
        for s in todo
    ]
    bar = _Progress(len(specs), len(specs) - len(todo), study.name, enabled=progress)
    failed: list[str] = []

    def fail(spec: dict, e: BaseException) -> None:
        _record_failure(out, spec, _failure_text(e))
        failed.append(spec["run_id"])
        bar.advance(spec)

    writer = _Writer(out, bar, on_done)
    try:
        if scheduler is not None:
            run_dask(scheduler, args, writer, fail)
        else:
            run_local(jobs, args, writer, fail)
        writer.close()
    finally:
        writer.pool.shutdown(wait=True)
        bar.close()
    if compact_after:
        compact(out, jobs=jobs)
    repaired = sorted({d.run_id for d in damaged})
    return SweepSummary(
        out, len(specs), len(specs) - len(todo), len(todo) - len(failed), time.perf_counter() - t0, repaired, sorted(failed)
    )


def _validate_all(specs: list[RunSpec], study_text: str = "") -> None:
    """Checks every distinct scenario before anything runs, so a bad study fails at once
    (naming the experiment and axis values) instead of part-way through a sweep. The
    line an error names is the study file's (the key's axis path or assignment), never
    that of the scenario generated for the combination, which the reader cannot see."""
    import re

    import aqmlab
    from aqmlab._naming import key_line as study_line
    from aqmlab.errors import ScenarioError
    from aqmlab.study import StudyError

    seen: set[str] = set()
    seen_objects: set[int] = set()  # the repetitions of a combination share one scenario dict
    for s in specs:
        if id(s.scenario) in seen_objects:
            continue
        seen_objects.add(id(s.scenario))
        key = json.dumps(s.scenario, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        try:
            aqmlab.validate(s.scenario, flow_rows=0)
        except ScenarioError as e:
            where = ", ".join(f"{k}={v}" for k, v in s.params.items())
            msg = re.sub(r"\s*\(line \d+\)\s*$", "", str(e))
            line = study_line(study_text, e.field) if study_text else None
            raise StudyError(f"experiment {s.experiment} ({where}): {msg}" + (f" (study file line {line})" if line else "")) from None


def run_local(jobs, args, writer: _Writer, fail, fn: Callable[..., Any] | None = None) -> None:
    """Runs ``fn(*a)`` (default :func:`_encoded_run`) for each `a` of `args` on `jobs`
    local processes and hands ``a[0]`` and the value to ``writer.submit``. A run that raises is recorded with `fail`
    and the sweep goes on. A worker that dies (SIGKILL, out of memory, abort) breaks the
    whole pool and every pending run with it; those suspects are then re-run one at a
    time in fresh single-worker pools, so only the run that kills its worker again is
    recorded as failed, and the rest of the sweep continues on a new pool."""
    from concurrent.futures.process import BrokenProcessPool

    if not args:
        return
    fn = fn or _encoded_run
    n = jobs or os.cpu_count() or 1

    def finish(a, fut) -> bool:
        """Stores or records one finished future; False if its pool broke."""
        try:
            tables = fut.result()
        except BrokenProcessPool:
            return False
        except Exception as e:
            fail(a[0], e)
            return True
        writer.submit(a[0], tables)
        return True

    if n == 1:  # in this process (a crash here ends the sweep; resuming skips finished runs)
        for a in args:
            try:
                tables = fn(*a)
            except Exception as e:
                fail(a[0], e)
                continue
            writer.submit(a[0], tables)
        return
    it = iter(args)
    while True:
        suspects = []
        with procs.pool(n) as pool:
            pending = {}
            try:
                for a in _take(it, 2 * n):
                    pending[pool.submit(fn, *a)] = a
                while pending:
                    finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                    writer.poll()
                    for fut in finished:
                        a = pending.pop(fut)
                        if not finish(a, fut):
                            suspects.append(a)
                    if suspects:
                        break
                    for nxt in _take(it, len(finished)):
                        pending[pool.submit(fn, *nxt)] = nxt
            except BrokenProcessPool:  # submit() on a pool that has just broken
                pass
            suspects += list(pending.values())
        if not suspects:
            return
        for a in suspects:  # isolate the culprit(s)
            with procs.pool(1) as solo:
                fut = solo.submit(fn, *a)
                wait([fut])
                if not finish(a, fut):
                    fail(a[0], BrokenProcessPool("worker died"))


def run_dask(scheduler, args, writer: _Writer, fail, fn: Callable[..., Any] | None = None) -> None:
    """Runs ``fn(*a)`` (default :func:`_encoded_run`) for each `a` of `args` on a Dask
    cluster, several runs per task (`_dask_batch_size`). A run that raises is recorded
    with `fail`; a task whose worker died (KilledWorker after Dask's retries) has its runs
    submitted again one per task, so only a run that kills its worker fails."""
    from dask.distributed import Client, as_completed

    own = False
    if isinstance(scheduler, str):
        client = Client(scheduler)
        own = True
    elif hasattr(scheduler, "submit"):
        client = scheduler
    else:
        client = Client(scheduler)
        own = True
    try:
        extra = () if fn is None else (fn,)  # _run_batch's default: _encoded_run
        size = _dask_batch_size(len(args), len(client.scheduler_info().get("workers", {})))
        futs = {client.submit(_run_batch, args[i : i + size], *extra, pure=False): args[i : i + size] for i in range(0, len(args), size)}
        ac = as_completed(futs)
        for fut in ac:
            batch = futs.pop(fut)
            try:
                results = fut.result()
            except Exception as e:  # the task's worker died (or the task was lost)
                if len(batch) == 1:
                    fail(batch[0][0], e)
                else:
                    for a in batch:
                        f = client.submit(_run_batch, [a], *extra, pure=False)
                        futs[f] = [a]
                        ac.add(f)
                continue
            for a, (ok, value) in zip(batch, results):
                if ok:
                    writer.submit(a[0], value)
                else:
                    fail(a[0], value)
    finally:
        if own:
            client.close()


def _run_batch(batch: list[tuple], fn: Callable[..., Any] | None = None) -> list[tuple[bool, Any]]:
    """One Dask task: ``fn`` (default :func:`_encoded_run`) of each run of `batch` in turn, giving
    (True, its files) or (False, the exception it raised), so that one raising run does
    not lose the others."""
    fn = fn or _encoded_run
    _worker_budget_env()
    out: list[tuple[bool, Any]] = []
    for a in batch:
        try:
            out.append((True, fn(*a)))
        except Exception as e:
            out.append((False, e))
    return out


def _worker_budget_env() -> None:
    """On a Dask worker, shares the default memory budget among the tasks the worker runs
    at once: ``AQMLAB_JOBS`` = its threads, and ``AQMLAB_WORKER_MEMORY`` = its memory
    limit (one more bound besides physical memory, ``RLIMIT_AS`` and the cgroup limit).
    Every task of the worker sets the same values. Outside a worker: nothing."""
    try:
        from distributed import get_worker

        w = get_worker()
    except (ImportError, ValueError):
        return
    threads = getattr(getattr(w, "state", None), "nthreads", None) or getattr(w, "nthreads", None) or 1
    os.environ["AQMLAB_JOBS"] = str(max(1, int(threads)))
    limit = getattr(getattr(w, "memory_manager", None), "memory_limit", None)
    if limit:
        os.environ["AQMLAB_WORKER_MEMORY"] = str(int(limit))
    else:
        os.environ.pop("AQMLAB_WORKER_MEMORY", None)


def _dask_batch_size(runs: int, workers: int) -> int:
    """Runs per Dask task: several, so that a task's scheduling and transfer cost (tens of
    ms on a local cluster, more across machines) is spread over short runs, while every
    worker still gets at least 8 tasks to balance uneven run lengths; at most 8 runs."""
    return max(1, min(8, runs // (8 * max(1, workers))))


def _take(it: Iterator, n: int) -> list:
    out = []
    for _ in range(n):
        try:
            out.append(next(it))
        except StopIteration:
            break
    return out


class _Progress:
    """A rich progress bar with ETA (silent when disabled or not on a terminal)."""

    def __init__(self, total: int, done: int, name: str, enabled: bool) -> None:
        self.p = None
        if enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self.p = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                TextColumn("{task.fields[last]}"),
                transient=False,
                # a sweep's main process shares the cores with its workers: at rich's
                # default 10 redraws a second the bar took ~1.6 % of a core (~30 CPU-s
                # over a 30-minute sweep), at 2 ~0.38 %, at 1 ~0.22 %; the elapsed time
                # and ETA are shown in whole seconds anyway
                refresh_per_second=1,
            )
            self.p.start()
            self.task = self.p.add_task(name, total=total, completed=done, last="")

    def advance(self, spec: dict) -> None:
        if self.p is not None:
            label = spec["experiment"] + " " + " ".join(f"{v}" for v in spec["params"].values())
            self.p.update(self.task, advance=1, last=label)

    def close(self) -> None:
        if self.p is not None:
            self.p.stop()


@dataclasses.dataclass
class RepairReport:
    """What :func:`repair_store` found and did."""

    out: pathlib.Path
    #: what was done to the metadata (manifest, provenance, study text)
    actions: list[str]
    #: the damaged runs found (aqmlab.store.Damaged), each run again
    damaged: list
    #: runs that were run again (ids); failed: those whose rerun failed
    rerun: list[str]
    failed: list[str]


def _infer_quick(text: str, done: set[str]) -> bool:
    """Whether a store holding runs `done` of study `text` was swept with --quick (when the
    provenance that said so is lost): the mode whose runs include every finished run."""
    from aqmlab.errors import StoreError
    from aqmlab.study import parse_study

    def ids(q: bool) -> set[str]:
        st = parse_study(text, quick=q)
        return {s.run_id for s in st.runs([e.name for e in st.experiments])}

    fits = [q for q in (False, True) if done <= ids(q)]
    if len(fits) == 1:
        return fits[0]
    raise StoreError("provenance.json is damaged and the stored runs do not show whether the sweep used --quick; "
                     "resume it with the study file (`aqmlab sweep STUDY.toml --out DIR`, with --quick if it was quick)")


def repair_store(out: str | os.PathLike, jobs: int | None = None, progress: bool = False) -> RepairReport:
    """Repairs a result store in place, holding its write lock: the metadata first
    (``parts.json`` from its intact copy or rebuilt from the part files; provenance and
    study text from their intact copies, or the provenance rebuilt from the study text),
    then every finished run is checked against its checksums and the damaged ones are run
    again from the study text kept in the store. Raises :class:`aqmlab.errors.StoreError`
    for what cannot be repaired (both copies of the study text lost)."""
    import aqmlab
    from aqmlab.errors import StoreError
    from aqmlab.store import (
        PREV,
        PROVENANCE,
        STUDY,
        finished_runs,
        lock,
        read_provenance,
        read_study_text,
        repair_metadata,
        study_sha256,
        verify,
        write_provenance,
        write_study_text,
    )
    from aqmlab.study import parse_study

    out = pathlib.Path(out)
    if not (out / "runs").is_dir():
        raise StoreError(f"{out} is not an aqmlab result store (no runs/ folder)")
    with lock(out):
        actions = repair_metadata(out)
        try:
            prov: dict | None = read_provenance(out)
        except StoreError:
            prov = None
        text = read_study_text(out, prov or {}) if prov is not None else read_study_text(out, {})
        if not text:
            raise StoreError(f"{out}: {STUDY} is missing; resume the sweep with the study file (`aqmlab sweep STUDY.toml --out {out}`)")
        if prov is None:
            quick = _infer_quick(text, finished_runs(out))
            st = parse_study(text, quick=quick)
            prov = {"study": st.name, "quick": quick, "quick_note": st.quick_note, "aqmlab_version": aqmlab.__version__,
                    "study_sha256": study_sha256(text)}
            write_provenance(out, prov)
            actions.append(f"{PROVENANCE} rebuilt from {STUDY} (quick = {str(quick).lower()})")
        else:
            for name in (PROVENANCE, STUDY):
                a, b = out / name, out / (name + PREV)
                ok = a.exists() and b.exists() and a.read_bytes() == b.read_bytes()
                if not ok:
                    actions.append(f"{name}: a damaged or missing copy rewritten from the intact one")
            prov.setdefault("study_sha256", study_sha256(text))
            write_provenance(out, prov)
            write_study_text(out, text)
        damaged = verify(out)
        _record_repaired(out, damaged)
        ids = sorted({d.run_id for d in damaged})
        failed: list[str] = []
        if ids:
            study = parse_study(text, quick=bool(prov.get("quick")))
            summary = run_study(study, out, jobs=jobs, progress=progress, run_ids=ids,
                              only=[e.name for e in study.experiments])  # optional experiments too
            failed = summary.failed
    return RepairReport(out, actions, damaged, ids, failed)
