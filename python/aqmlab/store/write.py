"""Durable writing: a run's tables encoded as Parquet and written with fsync and rename,
the checksum file, then the ``runs`` row that marks the run finished; and deleting the
loose files of runs (``runs`` row first)."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import threading
from collections.abc import Iterable
from typing import Any

from aqmlab.store.layout import CHECKSUMS, DATA_TABLES

__all__ = [
    "arrow_parquet_bytes",
    "encode_run",
    "fsync_dir",
    "loose_options",
    "parquet_bytes",
    "remove_loose_runs",
    "sha256",
    "sha256_file",
    "write_bytes_durably",
    "write_encoded",
    "write_run",
]


def fsync_dir(d: pathlib.Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_bytes_durably(data: bytes, path: pathlib.Path) -> None:
    """Writes `data` to a temporary file, fsyncs it and renames it to `path` (the caller
    fsyncs the directory)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        fh = open(tmp, "wb")
    except FileNotFoundError:  # the folder is made on first use (not asked for on every file)
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(tmp, "wb")
    with fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def parquet_bytes(df: Any, **options: Any) -> bytes:
    """The bytes ``df.to_parquet(buf, index=False, **options)`` writes (pyarrow, snappy),
    made with pyarrow directly and converted on this thread: pandas' call lets pyarrow
    convert a frame of more than 100 x cores cells on a thread pool it creates and tears
    down each time, which costs a run's worker more than the conversion itself.
    `options`: more ``pyarrow.parquet.write_table`` options (see :func:`loose_options`)."""
    import pyarrow as pa

    if df.attrs:  # pandas stores attrs in the schema metadata: leave that to pandas
        import io

        buf = io.BytesIO()
        df.to_parquet(buf, index=False, **options)
        return buf.getvalue()
    return arrow_parquet_bytes(pa.Table.from_pandas(df, preserve_index=False, nthreads=1), **options)


def arrow_parquet_bytes(tbl: Any, **options: Any) -> bytes:
    """A pyarrow table as Parquet file contents, written as :func:`parquet_bytes` writes
    the table pyarrow makes of a DataFrame (snappy, default row groups, and `options`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(tbl, sink, compression="snappy", **options)
    return sink.getvalue().to_pybytes()


#: the tables of a run with a row per flow or queue (or the one ``runs`` row): a few rows
#: of many columns, where a column's dictionary page costs more to write than it saves
_WIDE_TABLES = frozenset({"runs", "flows", "queues"})


def loose_options(name: str) -> dict[str, Any]:
    """The ``pyarrow.parquet.write_table`` options of table `name` of a run's own files
    (:func:`encode_run`): no column statistics (nothing reads them from these files: a
    store skips row groups by the run-id ranges of its compacted parts, whose writer keeps
    them), and no dictionary encoding in the few-row tables. The values read back are the
    same as with pyarrow's defaults, for ~30 % less encoding CPU per run."""
    return {"write_statistics": False} | ({"use_dictionary": False} if name in _WIDE_TABLES else {})


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: pathlib.Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def encode_run(tables: dict[str, Any]) -> dict[str, bytes]:
    """One run's tables (pandas DataFrames, or pyarrow tables made to be what pyarrow makes
    of those frames) as Parquet file contents, ready for :func:`write_encoded` (a sweep's
    workers encode, so the process that writes does not)."""
    import pyarrow as pa

    return {name: (arrow_parquet_bytes(df, **loose_options(name)) if isinstance(df, pa.Table)
                   else parquet_bytes(df, **loose_options(name)))
            for name, df in tables.items() if df is not None and (name == "runs" or name in DATA_TABLES)}


def write_run(out: pathlib.Path, tables: dict[str, Any]) -> None:
    """Stores one run's tables (pandas DataFrames; ``runs`` is its one-row table) durably:
    data files, then the checksum file, then the ``runs`` row, each fsynced with its
    directory before the next step."""
    rid = str(tables["runs"]["run_id"].iloc[0])
    write_encoded(out, rid, encode_run(tables))


def write_encoded(out: pathlib.Path, rid: str, files: dict[str, bytes]) -> None:
    """:func:`write_run` for tables already encoded by :func:`encode_run`. Safe to call from
    several threads at once for different runs (their fsyncs then share journal commits)."""
    out = pathlib.Path(out)
    sums: dict[str, str] = {}
    dirs = set()
    for name in DATA_TABLES:
        data = files.get(name)
        if data is not None:
            write_bytes_durably(data, out / name / f"{rid}.parquet")
            sums[name] = sha256(data)
            dirs.add(out / name)
    runs_data = files["runs"]
    sums["runs"] = sha256(runs_data)
    write_bytes_durably(json.dumps(sums, sort_keys=True).encode(), out / CHECKSUMS / f"{rid}.json")
    dirs.add(out / CHECKSUMS)
    for d in sorted(dirs):
        fsync_dir(d)
    write_bytes_durably(runs_data, out / "runs" / f"{rid}.parquet")  # last: marks the run finished
    fsync_dir(out / "runs")


def remove_loose_runs(out: pathlib.Path, rids: Iterable[str]) -> None:
    """Deletes the loose files of runs: first their runs rows (unmarking them), then the rest."""
    rids = list(rids)
    if not rids:
        return
    _unlink_all(out / "runs", [f"{rid}.parquet" for rid in rids])
    fsync_dir(out / "runs")
    rest = [(out / t, [f"{rid}.parquet" for rid in rids]) for t in DATA_TABLES] + [(out / CHECKSUMS, [f"{rid}.json" for rid in rids])]
    if len(rids) < 64:
        for d, names in rest:
            _unlink_all(d, names)
    else:  # after a compaction: tens of thousands of files, one folder per thread (the unlinks wait on the file system)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=len(rest)) as pool:
            list(pool.map(lambda a: _unlink_all(*a), rest))
    for d, _ in rest:
        if d.is_dir():
            fsync_dir(d)


def _unlink_all(d: pathlib.Path, names: list[str]) -> None:
    """Deletes the files `names` of folder `d` that exist."""
    base = os.fspath(d)
    for n in names:
        try:
            os.unlink(os.path.join(base, n))
        except FileNotFoundError:
            pass
