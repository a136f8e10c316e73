"""The result store of a study: writing runs durably, verifying them, compacting them, and
reading them lazily (only the columns and rows a caller needs).

Layout under the output directory ``OUT`` (see also :mod:`aqmlab.runner`)::

    OUT/study.toml, OUT/provenance.json
    OUT/<table>/<run_id>.parquet    one file per finished run and table ("loose" files):
                                    runs (the marker), flows, queues, samples, series
    OUT/checksums/<run_id>.json     SHA-256 of each of the run's files (runs row included)
    OUT/<table>/part-NNNNNN.parquet compacted files: many runs each, sorted by
                                    (experiment, run_id), a run never split across files
    OUT/parts.json                  the manifest of compacted files: per table, each part's
                                    file, SHA-256 and the run ids it holds

Durability rules
----------------
- A run is finished exactly when its ``runs`` row exists: a loose ``runs/<id>.parquet`` or
  a listed run of a ``runs`` part in ``parts.json``.
- :func:`write_run` writes every data file and the checksum file to temporary names,
  fsyncs each file, renames it into place and fsyncs the directories, and only then writes
  (the same way) the ``runs`` row. After a crash at any instant a run is either finished
  with all its files on disk or absent (its leftovers are overwritten by the rerun).
- :func:`verify` (called when a sweep resumes) checks every finished run against its
  checksums; a damaged run is removed so the sweep runs it again, and the sweep records it
  in ``provenance.json`` (``repaired``), which the report shows.
- :func:`compact` merges loose files into parts; ``parts.json`` (written atomically) is the
  commit point, loose files are deleted after it. Files not yet (or no longer) listed are
  ignored by readers and cleaned up by the next :func:`compact` or sweep.

Reading
-------
:func:`load` returns a :class:`Store` that reads nothing but the small ``runs`` table up
front. ``Store.flows`` etc. load a whole table on first access (cached). The report, figures,
tables, findings and the Flent export use :meth:`Store.scan` (projection + filters, rows in
run-id order) and :meth:`Store.iter_runs` (one run at a time, streamed), through the
module functions :func:`scan`, :func:`iter_runs` and :func:`runs_of`, which also accept any
object with DataFrame attributes (``runs``, ``flows``, …) such as a test's namespace.

Filters are lists of ``(column, op, value)`` with op ``==``, ``!=``, ``in``, ``not in``,
``<``, ``<=``, ``>``, ``>=`` (all must hold); a row whose file lacks the column does not
match. Reading uses pyarrow (already a dependency): per-file projection and filtering, and
for compacted files one row group at a time, skipping row groups by their run-id
statistics (parts are sorted by run id), so memory stays within about a row group.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import heapq
import json
import os
import pathlib
import threading
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

__all__ = [
    "Store",
    "load",
    "scan",
    "iter_runs",
    "iter_chunks",
    "runs_of",
    "drop_foreign_axes",
    "StoreLike",
    "StoreArg",
    "Tables",
    "write_run",
    "encode_run",
    "write_encoded",
    "finished_runs",
    "verify",
    "write_study_text",
    "read_study_text",
    "write_provenance",
    "read_provenance",
    "repair_metadata",
    "check_files",
    "lock",
    "compact",
    "Damaged",
    "TABLES",
    "DATA_TABLES",
]

#: every table of the store; ``runs`` is the marker of a finished run
TABLES = ("runs", "flows", "queues", "samples", "series")
DATA_TABLES = ("flows", "queues", "samples", "series")
MANIFEST = "parts.json"
CHECKSUMS = "checksums"
#: rows per row group in compacted files (and the unit of streaming reads)
ROW_GROUP_ROWS = 131_072
#: a part file is closed after this many rows (then a new one starts at a run boundary)
PART_ROWS = 8 * ROW_GROUP_ROWS
#: rows per chunk of whole runs handed to per-run reductions (:func:`iter_chunks`)
CHUNK_ROWS = 200_000

Filter = list[tuple[str, str, Any]]


# ---------------------------------------------------------------------------------------
# durable writing


def _fsync_dir(d: pathlib.Path) -> None:
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


def _write_bytes_durably(data: bytes, path: pathlib.Path) -> None:
    """Writes `data` to a temporary file, fsyncs it and renames it to `path` (the caller
    fsyncs the directory)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _parquet_bytes(df: Any) -> bytes:
    """The bytes ``df.to_parquet(buf, index=False)`` writes (pyarrow, snappy), made with
    pyarrow directly and converted on this thread: pandas' call lets pyarrow convert a
    frame of more than 100 x cores cells on a thread pool it creates and tears down each
    time, which costs a run's worker more than the conversion itself."""
    import pyarrow as pa

    if df.attrs:  # pandas stores attrs in the schema metadata: leave that to pandas
        import io

        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
        return buf.getvalue()
    return _arrow_parquet_bytes(pa.Table.from_pandas(df, preserve_index=False, nthreads=1))


def _arrow_parquet_bytes(tbl: Any) -> bytes:
    """A pyarrow table as Parquet file contents, written as :func:`_parquet_bytes` writes
    the table pyarrow makes of a DataFrame (snappy, default row groups)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(tbl, sink, compression="snappy")
    return sink.getvalue().to_pybytes()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _sha256_file(path: pathlib.Path) -> str:
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

    return {name: (_arrow_parquet_bytes(df) if isinstance(df, pa.Table) else _parquet_bytes(df))
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
            _write_bytes_durably(data, out / name / f"{rid}.parquet")
            sums[name] = _sha256(data)
            dirs.add(out / name)
    runs_data = files["runs"]
    sums["runs"] = _sha256(runs_data)
    _write_bytes_durably(json.dumps(sums, sort_keys=True).encode(), out / CHECKSUMS / f"{rid}.json")
    dirs.add(out / CHECKSUMS)
    for d in sorted(dirs):
        _fsync_dir(d)
    _write_bytes_durably(runs_data, out / "runs" / f"{rid}.parquet")  # last: marks the run finished
    _fsync_dir(out / "runs")


# ---------------------------------------------------------------------------------------
# the write lock


LOCK = ".lock"
#: seconds to wait for the workers of a dead lock holder to end
LOCK_GRACE = 10.0
#: locks this process holds, by the store's real path: [file descriptor, depth]
_HELD: dict[str, list[int]] = {}


def _holder(fd: int) -> dict:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        doc = json.loads(os.read(fd, 4096).decode("utf-8") or "{}")
        return doc if isinstance(doc, dict) else {}
    except (OSError, ValueError):
        return {}


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def writer(out: str | os.PathLike) -> dict | None:
    """The process writing into the store now (``pid``, ``host``, ``since``), or None
    (checked without taking the lock)."""
    import fcntl

    p = pathlib.Path(out) / LOCK
    if os.path.realpath(p.parent) in _HELD:
        return None
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder(fd) or {"pid": "?", "host": "?", "since": "?"}
    except OSError:
        return None
    finally:
        os.close(fd)  # releases the shared lock if taken
    return None


@contextlib.contextmanager
def lock(out: str | os.PathLike) -> Iterator[None]:
    """Holds the store's write lock (``OUT/.lock``) for the block: one writer (sweep,
    compaction, repair) per store at a time. The file names the holder (pid, host, start
    time); the lock itself is an ``flock`` on it, which the kernel releases when the
    holder ends however it ends, so the lock of a dead process is taken over. Where the
    file system has no ``flock``, a lock whose holder is a process of this host that no
    longer exists is taken over. Reentrant within a process. A second writer gets
    :class:`aqmlab.errors.StoreLocked`."""
    import datetime
    import fcntl
    import socket
    import time

    from aqmlab.errors import StoreLocked

    out = pathlib.Path(out)
    key = os.path.realpath(out)
    if key in _HELD:
        _HELD[key][1] += 1
        try:
            yield
        finally:
            _HELD[key][1] -= 1
        return
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    host = socket.gethostname()
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            h = _holder(fd)
            # A holder of this host that is gone, yet the lock is held: its forked workers
            # share the locked file until they end (they are told to when it dies).
            deadline = time.monotonic() + LOCK_GRACE
            while h.get("host") == host and not _alive(h.get("pid")) and time.monotonic() < deadline:
                time.sleep(0.05)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    continue
            else:
                gone = h.get("host") == host and not _alive(h.get("pid"))
                raise StoreLocked(f"{out} is being written by another aqmlab process (pid {h.get('pid', '?')} on "
                                  f"{h.get('host', '?')}, since {h.get('since', '?')}"
                                  + ("; that process has ended but processes it started still hold the lock" if gone else "")
                                  + "); wait for it to finish or stop it, then run the command again") from None
        except OSError:  # no flock here (some network file systems): the holder named in the file decides
            h = _holder(fd)
            if h.get("pid") not in (None, os.getpid()) and (h.get("host") != host or _alive(h.get("pid"))):
                raise StoreLocked(f"{out} is being written by another aqmlab process (pid {h.get('pid')} on "
                                  f"{h.get('host')}); wait for it to finish or stop it (or delete {out / LOCK} "
                                  "if that process is gone), then run the command again") from None
        me = {"pid": os.getpid(), "host": host,
              "since": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, json.dumps(me).encode())
    except BaseException:
        os.close(fd)
        raise
    _HELD[key] = [fd, 1]
    try:
        yield
    finally:
        del _HELD[key]
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        os.close(fd)


# ---------------------------------------------------------------------------------------
# metadata files: two copies, each checked


#: the store's JSON metadata files (each kept twice: NAME and NAME.prev)
PROVENANCE = "provenance.json"
STUDY = "study.toml"
PREV = ".prev"
#: keys of metadata documents written before they carried a checksum (accepted as they are)
_LEGACY_KEYS = {
    MANIFEST: {"version", "next", "parts"},
    PROVENANCE: {"study", "quick", "quick_note", "aqmlab_version", "started", "repaired"},
}


def _repair_hint(out: pathlib.Path) -> str:
    return f"run `aqmlab verify {out} --repair` to repair it"


def _seal(doc: dict) -> bytes:
    """A metadata document as the bytes written: the document plus ``checksum``, the
    SHA-256 of its canonical JSON (without ``checksum``)."""
    body = {k: v for k, v in doc.items() if k != "checksum"}
    body["checksum"] = _sha256(json.dumps(body, sort_keys=True).encode())
    return json.dumps(body, indent=1, sort_keys=True).encode()


def _unseal(data: bytes, name: str) -> dict:
    """The document of a metadata file's bytes; ValueError (saying why) if it is damaged:
    not UTF-8 JSON, not an object, a wrong checksum, or no checksum and keys a file of an
    older version never had."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ValueError(f"not valid JSON ({type(e).__name__})") from None
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    if "checksum" in doc:
        body = {k: v for k, v in doc.items() if k != "checksum"}
        if doc["checksum"] != _sha256(json.dumps(body, sort_keys=True).encode()):
            raise ValueError("checksum mismatch")
        return body
    legacy = _LEGACY_KEYS.get(name)
    if legacy is None or not set(doc) <= legacy or (name == MANIFEST and doc.get("version") != 1):
        raise ValueError("no checksum")
    return doc


def _write_copies(out: pathlib.Path, name: str, data: bytes) -> None:
    """Writes a metadata file durably and then its second copy ``NAME.prev``: while the
    new generation is written (temporary file, fsync, rename), the other copy still holds
    the previous one, so a crash at any instant leaves one intact copy."""
    for target in (out / name, out / (name + PREV)):
        _write_bytes_durably(data, target)
        _fsync_dir(out)


def _read_copies(out: pathlib.Path, name: str, check: Any) -> tuple[Any, str | None, list[str]]:
    """(value, the copy it came from, problems): the first copy (``NAME``, then
    ``NAME.prev``) that `check(bytes)` accepts; (None, None, problems) if neither exists or
    neither is intact. `problems` says what is wrong with each damaged copy."""
    problems = []
    for fname in (name, name + PREV):
        p = out / fname
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            continue
        except OSError as e:
            problems.append(f"{fname}: unreadable ({e.strerror or e})")
            continue
        try:
            return check(data), fname, problems
        except ValueError as e:
            problems.append(f"{fname}: {e}")
    return None, None, problems


def _check_manifest(data: bytes) -> dict:
    m = _unseal(data, MANIFEST)
    parts = m.get("parts")
    if not isinstance(m.get("next"), int) or not isinstance(parts, dict):
        raise ValueError("not a manifest")
    for t in TABLES:
        parts.setdefault(t, [])
        if not isinstance(parts[t], list):
            raise ValueError("not a manifest")
        for p in parts[t]:
            if (not isinstance(p, dict) or not isinstance(p.get("file"), str) or not isinstance(p.get("sha256"), str)
                    or not isinstance(p.get("runs"), list) or not all(isinstance(r, str) for r in p["runs"])
                    or not p["file"].startswith(f"{t}/part-")):
                raise ValueError("not a manifest")
    if set(parts) - set(TABLES):
        raise ValueError("not a manifest")
    return m


def _empty_manifest() -> dict:
    return {"version": 2, "next": 1, "parts": {t: [] for t in TABLES}}


def _part_files(out: pathlib.Path) -> list[str]:
    """Every part file on disk, as ``table/part-NNNNNN.parquet``."""
    found = []
    for t in TABLES:
        d = out / t
        if d.is_dir():
            found += [f"{t}/{n}" for n in sorted(os.listdir(d)) if n.startswith("part-") and n.endswith(".parquet")]
    return found


def _part_run_ids(f: pathlib.Path) -> list[str]:
    """The run ids a part file holds, in file order (reads only its run_id column)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    with pq.ParquetFile(f) as pf:
        col = pf.read(columns=["run_id"], use_threads=False).column("run_id")
    return [str(v) for v in pc.unique(col).to_pylist()]


def _manifest_or_raise(out: pathlib.Path) -> tuple[dict, str | None]:
    """The manifest (from ``parts.json`` or, if that copy is damaged, ``parts.json.prev``)
    and the copy it came from (None: the store has never been compacted). Raises
    :class:`StoreError` if both copies are damaged, or if there are none while part files
    hold runs that are not also stored loose (a deleted ``parts.json``)."""
    from aqmlab.errors import StoreError

    m, src, problems = _read_copies(out, MANIFEST, _check_manifest)
    if m is not None:
        return m, src
    if problems:
        raise StoreError(f"{out}: the manifest of compacted runs is damaged ({'; '.join(problems)}); {_repair_hint(out)}")
    loose = _loose_ids(out, "runs")
    for rel in _part_files(out):
        if rel.startswith("runs/"):
            try:
                ids = _part_run_ids(out / rel)
            except Exception:  # noqa: BLE001 - an unreadable unlisted part: a leftover, or damage
                ids = ["?"]
            if not set(ids) <= loose:
                raise StoreError(f"{out}: {MANIFEST} is missing but {rel} holds finished runs; {_repair_hint(out)}")
    return _empty_manifest(), None


def _derive_manifest(out: pathlib.Path, prefer: dict | None = None) -> tuple[dict, list[str]]:
    """A manifest rebuilt from the part files on disk (their run ids, rows, experiment and
    SHA-256): a run held by several parts of one table is kept in the newest, runs still
    stored loose stay loose (a part of an interrupted compaction), unreadable parts are
    left out (their runs are then missing and a resume runs them again). Parts listed in
    `prefer` (an older manifest) keep its checksum, so damage since then shows.
    Returns (manifest, problems)."""
    import pyarrow.parquet as pq

    problems: list[str] = []
    known = {p["file"]: p for t in TABLES for p in (prefer or {"parts": {}})["parts"].get(t, [])}
    loose = _loose_ids(out, "runs")
    m = _empty_manifest()
    top = 0
    for t in TABLES:
        entries = []
        for rel in _part_files(out):
            if not rel.startswith(f"{t}/"):
                continue
            f = out / rel
            top = max(top, int(rel.split("part-")[1].split(".")[0] or 0))
            try:
                sha = _sha256_file(f)
                if rel in known and known[rel]["sha256"] != sha:
                    raise ValueError("checksum mismatch")
                ids = _part_run_ids(f)
                with pq.ParquetFile(f) as pf:
                    rows = pf.metadata.num_rows
                    exp = pf.read_row_group(0, columns=["experiment"]).column("experiment")[0].as_py() if pf.num_row_groups else ""
            except Exception as e:  # noqa: BLE001 - any unreadable part is left out
                problems.append(f"{rel}: {'unreadable' if not isinstance(e, ValueError) else e}")
                continue
            entries.append({"file": rel, "experiment": str(exp), "rows": rows, "runs": ids, "sha256": sha})
        seen: set[str] = set()
        for p in sorted(entries, key=lambda p: p["file"], reverse=True):  # newest first
            keep = [r for r in p["runs"] if r not in seen and r not in loose]
            seen |= set(p["runs"])
            if len(keep) < len(p["runs"]):
                p["runs"], p["filtered"] = keep, True
        m["parts"][t] = [p for p in sorted(entries, key=lambda p: p["file"]) if p["runs"]]
    m["next"] = top + 1
    return m, problems


def _read_manifest(out: pathlib.Path) -> dict:
    return _manifest_or_raise(out)[0]


def _write_manifest(out: pathlib.Path, m: dict) -> None:
    m = dict(m, version=2)
    _write_copies(out, MANIFEST, _seal(m))


def _check_provenance(data: bytes) -> dict:
    return _unseal(data, PROVENANCE)


def read_provenance(out: pathlib.Path) -> dict:
    """The store's provenance (from ``provenance.json`` or its intact second copy); {} if
    there is none; :class:`StoreError` if both copies are damaged."""
    from aqmlab.errors import StoreError

    doc, _, problems = _read_copies(pathlib.Path(out), PROVENANCE, _check_provenance)
    if doc is None and problems:
        raise StoreError(f"{out}: {PROVENANCE} is damaged ({'; '.join(problems)}); {_repair_hint(out)}")
    return doc or {}


def write_provenance(out: pathlib.Path, doc: dict) -> None:
    """Writes the provenance (two copies, each with a checksum)."""
    _write_copies(pathlib.Path(out), PROVENANCE, _seal(doc))


def _check_study(expected: str | None) -> Any:
    def check(data: bytes) -> str:
        if expected is not None and _sha256(data) != expected:
            raise ValueError("checksum mismatch")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("not UTF-8 text") from None
        if expected is None:  # written before the provenance kept its checksum: it must at least parse
            from aqmlab.study import parse_study

            try:
                parse_study(text)
            except Exception as e:  # noqa: BLE001 - any failure means the copy is not usable
                raise ValueError(f"not a study file ({' '.join(str(e).split())})") from None
        return text
    return check


def read_study_text(out: pathlib.Path, provenance: dict | None = None) -> str:
    """The study text of the store (``study.toml``, or its intact second copy, checked
    against the SHA-256 the provenance records); "" if there is none."""
    from aqmlab.errors import StoreError

    out = pathlib.Path(out)
    prov = read_provenance(out) if provenance is None else provenance
    text, _, problems = _read_copies(out, STUDY, _check_study(prov.get("study_sha256")))
    if text is None and problems:
        raise StoreError(f"{out}: {STUDY} is damaged ({'; '.join(problems)}); resume the sweep with the study file "
                         f"(`aqmlab sweep STUDY.toml --out {out}`) to rewrite it")
    return text or ""


def write_study_text(out: pathlib.Path, text: str) -> None:
    """Writes the study text (two copies; the provenance records its SHA-256)."""
    _write_copies(pathlib.Path(out), STUDY, text.encode("utf-8"))


def study_sha256(text: str) -> str:
    return _sha256(text.encode("utf-8"))


def _manifest_runs(m: dict, table: str = "runs") -> set[str]:
    return {rid for p in m["parts"].get(table, []) for rid in p["runs"]}


def _loose_ids(out: pathlib.Path, table: str) -> set[str]:
    d = out / table
    if not d.is_dir():
        return set()
    return {n[: -len(".parquet")] for n in os.listdir(d) if n.endswith(".parquet") and not n.startswith(("part-", "."))}


def finished_runs(out: pathlib.Path) -> set[str]:
    """Run ids whose ``runs`` row exists (loose or in a listed part). Raises
    :class:`StoreError` if the manifest cannot be read (:func:`verify` repairs it)."""
    out = pathlib.Path(out)
    return _loose_ids(out, "runs") | _manifest_runs(_read_manifest(out))


@dataclasses.dataclass
class Damaged:
    """A finished run whose files did not match their checksums (it was removed to be rerun)."""

    run_id: str
    file: str
    reason: str


def _remove_loose_runs(out: pathlib.Path, rids: Iterable[str]) -> None:
    """Deletes the loose files of runs: first their runs rows (unmarking them), then the rest."""
    rids = list(rids)
    if not rids:
        return
    _unlink_all(out / "runs", [f"{rid}.parquet" for rid in rids])
    _fsync_dir(out / "runs")
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
            _fsync_dir(d)


def _unlink_all(d: pathlib.Path, names: list[str]) -> None:
    """Deletes the files `names` of folder `d` that exist."""
    base = os.fspath(d)
    for n in names:
        try:
            os.unlink(os.path.join(base, n))
        except FileNotFoundError:
            pass


def _remove_loose_run(out: pathlib.Path, rid: str) -> None:
    _remove_loose_runs(out, [rid])


def _loose_sums(out: pathlib.Path, rid: str) -> tuple[dict[str, str] | None, tuple[str, str] | None]:
    """(checksums of a loose run, problem): (None, None) for a run stored without a
    checksum file (before checksums existed)."""
    cs = out / CHECKSUMS / f"{rid}.json"
    try:
        data = cs.read_bytes()
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, (f"{CHECKSUMS}/{rid}.json", f"unreadable checksum file ({e.strerror or e})")
    try:
        sums = json.loads(data.decode("utf-8"))
        if (not isinstance(sums, dict) or "runs" not in sums or not set(sums) <= set(TABLES)
                or not all(isinstance(v, str) and len(v) == 64 for v in sums.values())):
            raise ValueError("not a checksum file")
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        return None, (f"{CHECKSUMS}/{rid}.json", f"unreadable checksum file ({type(e).__name__})")
    return sums, None


def check_files(out: pathlib.Path, m: dict) -> tuple[list[Damaged], dict[str, set[str]]]:
    """Checks every finished run's files against their checksums without changing
    anything: (damaged runs, the loose run ids per table whose files were verified or
    predate checksums). A loose run is checked against ``checksums/<run_id>.json``, a
    part against the SHA-256 in the manifest."""
    out = pathlib.Path(out)
    damaged: list[Damaged] = []
    ok: dict[str, set[str]] = {t: set() for t in TABLES}
    in_parts = _manifest_runs(m)
    present = {t: _loose_ids(out, t) for t in DATA_TABLES}
    for rid in sorted(_loose_ids(out, "runs") - in_parts):
        sums, bad = _loose_sums(out, rid)
        if sums is None and bad is None:  # stored before checksums existed
            ok["runs"].add(rid)
            for t in DATA_TABLES:
                if rid in present[t]:
                    ok[t].add(rid)
            continue
        for t, digest in (sums or {}).items():
            if bad:
                break
            f = out / t / f"{rid}.parquet"
            try:
                if _sha256_file(f) != digest:
                    bad = (f"{t}/{rid}.parquet", "checksum mismatch")
            except FileNotFoundError:
                bad = (f"{t}/{rid}.parquet", "missing")
            except OSError as e:
                bad = (f"{t}/{rid}.parquet", f"unreadable ({e.strerror or e})")
        if bad:
            damaged.append(Damaged(rid, *bad))
        else:
            for t in sums or {}:
                ok[t].add(rid)
    for t in TABLES:
        for p in m["parts"][t]:
            f = out / p["file"]
            try:
                why = "checksum mismatch" if _sha256_file(f) != p["sha256"] else None
            except FileNotFoundError:
                why = "missing"
            except OSError as e:
                why = f"unreadable ({e.strerror or e})"
            if why:
                damaged.extend(Damaged(rid, p["file"], why) for rid in p["runs"])
    return damaged, ok


def _runs_disagree(out: pathlib.Path, m: dict) -> str | None:
    """The first part whose listed runs are not those its file holds (None if all agree)."""
    for t in TABLES:
        for p in m["parts"][t]:
            try:
                ids = set(_part_run_ids(out / p["file"]))
            except Exception:  # noqa: BLE001 - unreadable: the checksum check reports it
                continue
            listed = set(p["runs"])
            if not listed <= ids or (not p.get("filtered") and listed != ids):
                return p["file"]
    return None


def repair_metadata(out: pathlib.Path) -> list[str]:
    """Brings the manifest back to an intact, true state and returns what was done: a
    damaged copy is rewritten from the intact one; with neither intact (or a run list that
    disagrees with its part file, or a deleted manifest while parts hold runs) the
    manifest is rebuilt from the part files."""
    out = pathlib.Path(out)
    done: list[str] = []
    m, src, problems = _read_copies(out, MANIFEST, _check_manifest)
    if m is None:
        unlisted = _part_files(out)
        if not problems and not unlisted:
            return done
        m, bad = _derive_manifest(out)
        why = "; ".join(problems) if problems else f"{MANIFEST} missing"
        done.append(f"{MANIFEST} rebuilt from {sum(len(v) for v in m['parts'].values())} part file(s) ({why})"
                    + (f"; left out: {'; '.join(bad)}" if bad else ""))
        _write_manifest(out, m)
        return done
    wrong = _runs_disagree(out, m)
    if wrong is not None:
        m, bad = _derive_manifest(out, prefer=m)
        done.append(f"{MANIFEST} rebuilt from the part files: the run list of {wrong} disagreed with the file"
                    + (f"; left out: {'; '.join(bad)}" if bad else ""))
        _write_manifest(out, m)
        return done
    other = MANIFEST + PREV if src == MANIFEST else MANIFEST
    if problems or not (out / other).exists():
        if problems:
            done.append(f"{'; '.join(problems)}: rewritten from {src}")
        _write_manifest(out, m)
    return done


def verify(out: pathlib.Path) -> list[Damaged]:
    """Repairs the manifest (:func:`repair_metadata`), checks every finished run against
    its checksums and removes damaged ones (so that a sweep reruns them). Loose runs
    written before checksums existed (no checksum file) are kept. A damaged compacted part
    drops every run it holds from the manifest."""
    out = pathlib.Path(out)
    repair_metadata(out)
    m = _read_manifest(out)
    damaged, _ = check_files(out, m)
    if not damaged:
        return damaged
    drop = {d.run_id for d in damaged}
    bad_files = {d.file for d in damaged}
    loose_bad = sorted(drop - _manifest_runs(m))
    _remove_loose_runs(out, loose_bad)
    if drop & _manifest_runs(m) or any(p["file"] in bad_files for t in TABLES for p in m["parts"][t]):
        keep_parts: dict[str, list] = {}
        for t in TABLES:
            keep_parts[t] = []
            for p in m["parts"][t]:
                if p["file"] in bad_files:
                    continue
                if drop & set(p["runs"]):
                    p["runs"] = [r for r in p["runs"] if r not in drop]
                    p["filtered"] = True
                if p["runs"]:
                    keep_parts[t].append(p)
        m["parts"] = keep_parts
        _write_manifest(out, m)
        _remove_loose_runs(out, sorted(drop))  # any loose leftovers of those runs are stale as well
    return damaged


# ---------------------------------------------------------------------------------------
# compaction


def _cleanup(out: pathlib.Path, m: dict) -> None:
    """Removes temporary files, part files the manifest does not list, and loose files of
    runs that already live in parts (left by a crash between commit and deletion)."""
    listed = {p["file"] for t in TABLES for p in m["parts"][t]}
    in_parts = _manifest_runs(m)
    for t in (*TABLES, CHECKSUMS):
        d = out / t
        if not d.is_dir():
            continue
        for n in os.listdir(d):
            rel = f"{t}/{n}"
            if n.startswith(".") and n.endswith(".tmp"):
                (d / n).unlink(missing_ok=True)
            elif n.startswith("part-") and rel not in listed:
                (d / n).unlink(missing_ok=True)
    stale = set()
    for t in TABLES:
        stale |= in_parts & _loose_ids(out, t)
    if (out / CHECKSUMS).is_dir():
        stale |= in_parts & {n[: -len(".json")] for n in os.listdir(out / CHECKSUMS) if n.endswith(".json")}
    _remove_loose_runs(out, sorted(stale))


def _unified(schemas: list) -> Any:
    import pyarrow as pa

    s = pa.unify_schemas([x.remove_metadata() for x in schemas], promote_options="permissive")
    return s


def _conform(tbl: Any, schema: Any) -> Any:
    import pyarrow as pa

    if tbl.schema.equals(schema, check_metadata=True):
        return tbl  # the common case: rebuilding it column by column gives the same table
    have = set(tbl.column_names)
    cols = []
    for f in schema:
        if f.name in have:
            c = tbl.column(f.name)
            cols.append(c if c.type == f.type else c.cast(f.type))
        else:
            cols.append(pa.nulls(tbl.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def _read_loose(f: pathlib.Path, columns: list[str] | None = None) -> Any:
    """A loose (one-run) file as a pyarrow table, without its schema metadata. The same
    table ``pq.read_table(f)`` gives, at a third of its cost on these small files: no
    dataset discovery and no thread pool."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(f) as pf:
        return pf.read(columns=columns, use_threads=False).replace_schema_metadata(None)


def _experiment_of(files: list[pathlib.Path]) -> list[str]:
    """The ``experiment`` of each loose ``runs`` file (one row each)."""
    return [str(_read_loose(f, ["experiment"]).column("experiment")[0].as_py()) for f in files]


def _compact_group(table_dir: pathlib.Path, table: str, exp: str, items: list[tuple[str, pathlib.Path]], first: int,
                   part_rows: int, row_group_rows: int) -> list[dict]:
    """Merges the loose files `items` (run id, path; one table, one experiment, in run-id
    order) into part files numbered from `first` (at most ``len(items)`` of them): each
    written to a temporary name, fsynced and renamed into place (not yet listed in the
    manifest). Returns their manifest entries. Runs in a worker process of :func:`compact`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _unified([pq.read_schema(f) for _, f in items])
    parts: list[dict] = []
    writer = None
    part_path: pathlib.Path | None = None
    part_ids: list[str] = []
    part_n = 0
    buf: list = []
    buf_n = 0
    number = first

    def flush_group() -> None:
        nonlocal buf, buf_n
        if buf:
            assert writer is not None  # a part is open whenever rows are buffered
            writer.write_table(pa.concat_tables(buf), row_group_size=max(row_group_rows, buf_n))
        buf, buf_n = [], 0

    def close_part() -> None:
        nonlocal writer, part_path, part_ids, part_n
        flush_group()
        if writer is None:
            return
        writer.close()
        assert part_path is not None
        with open(part_path, "rb+") as fh:
            os.fsync(fh.fileno())
        final = part_path.with_name(part_path.name[1:].removesuffix(".tmp"))
        os.replace(part_path, final)
        parts.append({"file": f"{table}/{final.name}", "experiment": exp, "rows": part_n,
                      "runs": list(part_ids), "sha256": _sha256_file(final)})
        writer, part_path, part_ids, part_n = None, None, [], 0

    for rid, f in items:
        tbl = _conform(_read_loose(f), schema)
        if writer is None:
            part_path = table_dir / f".part-{number:06d}.parquet.tmp"
            number += 1
            writer = pq.ParquetWriter(part_path, schema, compression="snappy")
        buf.append(tbl)
        buf_n += tbl.num_rows
        part_ids.append(rid)
        part_n += tbl.num_rows
        if buf_n >= row_group_rows:
            flush_group()
        if part_n >= part_rows:
            close_part()
    close_part()
    return parts


def _compact_jobs(jobs: int | None, tasks: int) -> int:
    if jobs is None:
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(jobs, tasks))


def compact(out: pathlib.Path, part_rows: int = PART_ROWS, row_group_rows: int = ROW_GROUP_ROWS, jobs: int | None = None) -> int:
    """Merges the loose files of finished runs into part files (per table and experiment,
    sorted by run id, at most about `part_rows` rows each) and returns how many runs were
    merged. Memory stays within about one row group per table and process. Safe to
    interrupt at any instant: ``parts.json`` is the commit point.

    The (table, experiment) groups are independent until that commit, so `jobs` processes
    (default: the CPUs this process may use) merge them side by side; each group numbers
    its parts from a range of its own (at most one part per run), so the parts, their rows
    and the manifest's order are those of a one-process compaction, only the file numbers
    may skip."""
    out = pathlib.Path(out)
    with lock(out):
        return _compact(out, part_rows, row_group_rows, jobs)


def _compact(out: pathlib.Path, part_rows: int, row_group_rows: int, jobs: int | None) -> int:
    m = _read_manifest(out)
    _cleanup(out, m)
    loose = sorted(_loose_ids(out, "runs") - _manifest_runs(m))
    if not loose:
        return 0
    chunk = 256
    chunks = [loose[i : i + chunk] for i in range(0, len(loose), chunk)]
    n = _compact_jobs(jobs, len(chunks))
    pool = None
    if n > 1:
        from aqmlab import _procs as procs

        pool = procs.pool(n)
    try:
        paths = [[out / "runs" / f"{rid}.parquet" for rid in c] for c in chunks]
        exps = pool.map(_experiment_of, paths) if pool is not None else map(_experiment_of, paths)
        exp_of: dict[str, str] = {}
        for c, e in zip(chunks, exps):
            exp_of.update(zip(c, e))
        order = sorted(loose, key=lambda r: (exp_of[r], r))
        groups: list[tuple[str, str, list[tuple[str, pathlib.Path]]]] = []
        for table in TABLES:
            present = _loose_ids(out, table)  # one listing instead of a stat per run
            files = [(rid, out / table / f"{rid}.parquet") for rid in order if rid in present]
            by_exp: dict[str, list] = {}
            for rid, f in files:
                by_exp.setdefault(exp_of[rid], []).append((rid, f))
            groups += [(table, exp, by_exp[exp]) for exp in sorted(by_exp)]
        firsts = []
        nxt = m["next"]
        for _, _, items in groups:
            firsts.append(nxt)
            nxt += len(items)
        args = [(out / t, t, e, items, first, part_rows, row_group_rows) for (t, e, items), first in zip(groups, firsts)]
        if pool is not None and len(groups) > 1:
            # the biggest groups (bytes to read) first, so that the last to finish is small
            size = [sum(f.stat().st_size for _, f in a[3]) for a in args]
            futs = {i: pool.submit(_compact_group, *args[i]) for i in sorted(range(len(args)), key=lambda i: -size[i])}
            results = [futs[i].result() for i in range(len(args))]
        else:
            results = [_compact_group(*a) for a in args]
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    new_parts: dict[str, list] = {t: [] for t in TABLES}
    for (table, _, _), parts in zip(groups, results):
        new_parts[table].extend(parts)
    for d in {out / p["file"].split("/")[0] for t in TABLES for p in new_parts[t]}:
        _fsync_dir(d)
    m["next"] = nxt
    for t in TABLES:
        m["parts"][t].extend(new_parts[t])
    _write_manifest(out, m)  # commit
    _remove_loose_runs(out, loose)
    return len(loose)


# ---------------------------------------------------------------------------------------
# reading


def _compare(x: Any, op: str, val: Any) -> Any:
    """One filter term on a pyarrow field expression or a pandas Series (both take the
    same operators and ``isin``)."""
    if op in ("==", "="):
        return x == val
    if op == "!=":
        return x != val
    if op == "in":
        return x.isin(list(val))
    if op == "not in":
        return ~x.isin(list(val))
    if op == "<":
        return x < val
    if op == "<=":
        return x <= val
    if op == ">":
        return x > val
    if op == ">=":
        return x >= val
    raise ValueError(f"filter op {op!r} is not supported")


def _expr(filters: Filter | None) -> Any:
    import pyarrow.compute as pc

    e = None
    for col, op, val in filters or []:
        f = pc.field(col)
        x = _compare(f, op, val)
        e = x if e is None else (e & x)
    return e


def _filter_cols(filters: Filter | None) -> set[str]:
    return {c for c, _, _ in filters or []}


def _split_runs(tbl: Any) -> Iterator[tuple[str, Any]]:
    """(run_id, rows) for each contiguous run of a table sorted by run."""
    import pyarrow.compute as pc

    if tbl.num_rows == 0:
        return
    ids = tbl.column("run_id")
    ree = pc.run_end_encode(ids.combine_chunks() if hasattr(ids, "combine_chunks") else ids)
    ends = ree.run_ends.to_pylist()
    vals = ree.values.to_pylist()
    start = 0
    for end, v in zip(ends, vals):
        yield str(v), tbl.slice(start, end - start)
        start = end


class Store:
    """A study's result store, read lazily.

    ``runs`` (one row per finished run, sorted by experiment and run id; axis columns
    ``p_<axis>`` keep the type of the study's axis values: numbers are numbers) is read on
    first use; ``flows``, ``queues``, ``samples`` and ``series`` are whole tables loaded on
    first access (and cached). For large stores use :meth:`scan` / :meth:`iter_runs`, which
    read only the columns and rows asked for."""

    def __init__(self, path: str | os.PathLike, verify: bool = True) -> None:
        from aqmlab.errors import StoreError

        self.path = pathlib.Path(path)
        if not (self.path / "runs").is_dir():
            raise StoreError(f"{self.path} is not an aqmlab result store (no runs/ folder)")
        self.provenance: dict = read_provenance(self.path)
        self.study_text: str = read_study_text(self.path, self.provenance)
        self._manifest = _manifest_or_raise(self.path)[0]
        self._cache: dict[str, Any] = {}
        self._raw_runs = None
        self._loose: dict[str, set[str]] = {}
        self._verified: dict[str, set[str]] | None = None
        if verify:
            damaged, self._verified = check_files(self.path, self._manifest)
            if damaged:
                busy = writer(self.path)
                if busy is not None:  # files may be moving (a compaction): not damage
                    raise StoreError(f"{self.path} is being written by another aqmlab process (pid {busy.get('pid')} on "
                                     f"{busy.get('host')}, since {busy.get('since')}); read it when that sweep has finished")
                raise StoreError(_damage_message(self.path, damaged))

    def __repr__(self) -> str:
        return f"<Store {str(self.path)!r}: {len(self.raw_runs)} finished runs>"

    def _repr_html_(self) -> str:
        """The notebook view: the study, and per experiment its runs, axes and measures."""
        from aqmlab._html import store_html

        return store_html(self)

    # -- layout ---------------------------------------------------------------------------

    def _loose_of(self, table: str) -> set[str]:
        if table not in self._loose:
            ids = _loose_ids(self.path, table)
            if table != "runs":
                ids &= self._finished()
            if self._verified is not None:
                ids &= self._verified[table]
            self._loose[table] = ids - _manifest_runs(self._manifest, table)
        return self._loose[table]

    def _finished(self) -> set[str]:
        if "_finished" not in self._cache:
            self._cache["_finished"] = (_loose_ids(self.path, "runs") | _manifest_runs(self._manifest))
        return self._cache["_finished"]

    def _sources(self, table: str, columns: list[str] | None, filters: Filter | None,
                 run_ids: set[str] | None, batch_rows: int) -> list[Iterator[tuple[str, Any]]]:
        """Iterators of (run_id, pyarrow table) in run-id order, one per file group."""
        srcs: list[Iterator[tuple[str, Any]]] = []
        loose = sorted(self._loose_of(table) if run_ids is None else (self._loose_of(table) & run_ids))
        if loose:
            srcs.append(self._guard(f"{table}/<run_id>.parquet", self._iter_loose(table, loose, columns, filters)))
        finished = self._finished()
        for p in self._manifest["parts"].get(table, []):
            ids = set(p["runs"]) & finished
            if run_ids is not None:
                ids &= run_ids
            if not ids:
                continue
            srcs.append(self._guard(p["file"], self._iter_part(self.path / p["file"], ids, columns, filters, batch_rows)))
        return srcs

    def _guard(self, what: str, it: Iterator[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
        """`it`, with a file that cannot be read reported as a :class:`StoreError` naming
        it (a damaged file whose checksum was not checked: ``verify=False``, or older
        loose runs without a checksum file)."""
        from aqmlab.errors import StoreError

        last = what
        try:
            for rid, tbl in it:
                last = rid
                yield rid, tbl
        except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
            raise StoreError(f"{self.path}: cannot read {what} (after run {last}): {type(e).__name__}: "
                             f"{' '.join(str(e).split())[:200]}; {_repair_hint(self.path)}") from None
        except Exception as e:  # pyarrow's own errors (ArrowInvalid is a ValueError; others are not)
            if type(e).__module__.startswith("pyarrow"):
                raise StoreError(f"{self.path}: cannot read {what}: {type(e).__name__}; {_repair_hint(self.path)}") from None
            raise

    def _iter_loose(self, table: str, ids: list[str], columns, filters) -> Iterator[tuple[str, Any]]:
        import pyarrow.parquet as pq

        need = _filter_cols(filters)
        e = _expr(filters)
        for rid in ids:
            f = self.path / table / f"{rid}.parquet"
            try:
                pf = pq.ParquetFile(f)
            except FileNotFoundError:
                continue
            names = pf.schema_arrow.names
            if not need <= set(names):
                continue
            cols = None if columns is None else [c for c in names if c in set(columns) | need | {"run_id"}]
            tbl = pf.read(columns=cols).replace_schema_metadata(None)
            if e is not None:
                tbl = tbl.filter(e)
            if columns is not None:
                tbl = tbl.select([c for c in tbl.column_names if c in set(columns) | {"run_id"}])
            if tbl.num_rows:
                yield rid, tbl

    def _iter_part(self, f: pathlib.Path, ids: set[str] | None, columns, filters, batch_rows: int) -> Iterator[tuple[str, Any]]:
        """One row group at a time (row groups whose run-id range holds none of `ids` are
        skipped using the file's statistics), projected and filtered, split into runs."""
        import bisect

        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(f)
        names = pf.schema_arrow.names
        need = _filter_cols(filters)
        if not need <= set(names):
            return
        e = _expr(filters)
        want = sorted(ids) if ids is not None else None
        cols = None if columns is None else [c for c in names if c in set(columns) | need | {"run_id"}]
        keep = None if columns is None else [c for c in names if c in set(columns) | {"run_id"}]
        rid_col = names.index("run_id")
        pending: list = []
        pending_id: str | None = None
        for i in range(pf.num_row_groups):
            if want is not None:
                st = pf.metadata.row_group(i).column(rid_col).statistics
                if st is not None and st.has_min_max:
                    k = bisect.bisect_left(want, str(st.min))
                    if k == len(want) or want[k] > str(st.max):
                        continue
            tbl = pf.read_row_group(i, columns=cols).replace_schema_metadata(None)
            if want is not None:
                tbl = tbl.filter(pc.is_in(tbl.column("run_id"), value_set=pa.array(want)))
            if e is not None and tbl.num_rows:
                tbl = tbl.filter(e)
            if keep is not None:
                tbl = tbl.select(keep)
            for rid, part in _split_runs(tbl):
                if pending_id is not None and rid != pending_id:
                    yield pending_id, pa.concat_tables(pending)
                    pending = []
                pending_id = rid
                pending.append(part)
        if pending and pending_id is not None:
            yield pending_id, pa.concat_tables(pending)

    # -- public reading -------------------------------------------------------------------

    def iter_runs(self, table: str, columns: Iterable[str] | None = None, filters: Filter | None = None,
                  run_ids: Iterable[str] | None = None, batch_rows: int = ROW_GROUP_ROWS) -> Iterator[tuple[str, Any]]:
        """Streams (run_id, pandas DataFrame) of `table`, one finished run at a time in
        run-id order, with only `columns` (plus run_id) and the rows matching `filters`;
        runs without matching rows are skipped."""
        for rid, tbl in self._iter_arrow(table, columns, filters, run_ids, batch_rows):
            yield rid, tbl.to_pandas()

    def iter_chunks(self, table: str, columns: Iterable[str] | None = None, filters: Filter | None = None,
                    run_ids: Iterable[str] | None = None, max_rows: int | None = None) -> Iterator[Any]:
        """Like :meth:`iter_runs`, but yields DataFrames of several whole runs (about
        `max_rows` rows, more only if one run alone is larger), so that per-run work can be
        vectorised over a chunk while memory stays bounded."""
        import pyarrow as pa

        max_rows = max_rows or CHUNK_ROWS
        buf: list = []
        n = 0
        for _, tbl in self._iter_arrow(table, columns, filters, run_ids):
            buf.append(tbl)
            n += tbl.num_rows
            if n >= max_rows:
                yield pa.concat_tables(buf, promote_options="permissive").to_pandas()
                buf, n = [], 0
        if buf:
            yield pa.concat_tables(buf, promote_options="permissive").to_pandas()

    def _iter_arrow(self, table, columns, filters, run_ids, batch_rows=ROW_GROUP_ROWS):
        if table not in TABLES:
            raise ValueError(f"unknown table {table!r} (tables: {', '.join(TABLES)})")
        cols = None if columns is None else list(columns)
        ids = None if run_ids is None else {str(r) for r in run_ids}
        srcs = self._sources(table, cols, filters, ids, batch_rows)
        if len(srcs) == 1:
            yield from srcs[0]
        else:
            yield from heapq.merge(*srcs, key=lambda x: x[0])

    def scan(self, table: str, columns: Iterable[str] | None = None, filters: Filter | None = None,
             run_ids: Iterable[str] | None = None) -> Any:
        """`table` restricted to `columns` (plus run_id) and to rows matching `filters` (and
        to `run_ids`), as one pandas DataFrame in run-id order."""
        import pandas as pd
        import pyarrow as pa

        if table == "runs":
            df = self.raw_runs
            if run_ids is not None:
                df = df[df["run_id"].isin(set(map(str, run_ids)))]
            df = _apply_filters(df, filters)
            if columns is not None:
                df = df[[c for c in df.columns if c in set(columns) | {"run_id"}]]
            return df.sort_values("run_id", kind="stable").reset_index(drop=True)
        parts = [t for _, t in self._iter_arrow(table, columns, filters, run_ids)]
        if not parts:
            return pd.DataFrame()
        return pa.concat_tables(parts, promote_options="permissive").to_pandas()

    @property
    def raw_runs(self) -> Any:
        """The runs table with axis labels as stored (strings), sorted by experiment and run id."""
        if self._raw_runs is None:
            import pandas as pd
            import pyarrow as pa

            parts = [t for _, t in self._iter_arrow("runs", None, None, None)]
            if not parts:
                self._raw_runs = pd.DataFrame()
            else:
                df = pa.concat_tables(parts, promote_options="permissive").to_pandas()
                self._raw_runs = df.sort_values(["experiment", "run_id"]).reset_index(drop=True)
        return self._raw_runs

    @property
    def runs(self) -> Any:
        if "runs" not in self._cache:
            self._cache["runs"] = _typed_axes(self.raw_runs, self.study_text, self.provenance)
        return self._cache["runs"]

    def _full(self, table: str) -> Any:
        if table not in self._cache:
            self._cache[table] = self.scan(table)
        return self._cache[table]

    @property
    def flows(self) -> Any:
        return self._full("flows")

    @property
    def queues(self) -> Any:
        return self._full("queues")

    @property
    def samples(self) -> Any:
        return self._full("samples")

    @property
    def series(self) -> Any:
        return self._full("series")


def _apply_filters(df: Any, filters: Filter | None) -> Any:
    import numpy as np

    for col, op, val in filters or []:
        if df.empty:
            return df
        if col not in df.columns:
            return df.iloc[0:0]
        s = df[col]
        m = _compare(s, op, val)
        df = df[np.asarray(m.fillna(False), dtype=bool)]
    return df


def _typed_axes(runs: Any, study_text: str, provenance: dict) -> Any:
    """Axis columns whose study values are all integers (or all floats) become nullable
    Int64 (Float64) columns, so they sort as numbers; labels stay strings otherwise."""
    import pandas as pd

    if runs.empty or not study_text:
        return runs
    try:
        from aqmlab.study import parse_study

        study = parse_study(study_text, quick=bool(provenance.get("quick")))
    except Exception:  # noqa: BLE001 - an unreadable study text leaves the labels as they are
        return runs
    kinds: dict[str, set[str]] = {}
    for e in study.experiments:
        raw = _raw_axis_values(study_text, e.name)
        for a in e.axes:
            vals = raw.get(a.name)
            if vals is None:
                kinds.setdefault(a.name, set()).add("str")
                continue
            if all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
                kinds.setdefault(a.name, set()).add("int")
            elif all(isinstance(v, float) and str(v) == lab for v, lab in zip(vals, [x.label for x in a.values])):
                kinds.setdefault(a.name, set()).add("float")
            else:
                kinds.setdefault(a.name, set()).add("str")
    out = runs.copy()
    for name, ks in kinds.items():
        col = f"p_{name}"
        if col not in out.columns or len(ks) != 1 or ks == {"str"}:
            continue
        try:
            num = pd.to_numeric(out[col], errors="raise")
        except (ValueError, TypeError):
            continue
        out[col] = num.astype("Int64" if ks == {"int"} else "Float64")
    return out


def _raw_axis_values(text: str, exp: str) -> dict[str, list]:
    """The values of the `path` axes of experiment `exp` as written (without labels)."""
    import tomllib

    doc = tomllib.loads(text)
    for e in doc.get("experiment", []):
        if e.get("name") != exp:
            continue
        return {a["name"]: list(a["values"]) for a in e.get("axis", []) if "path" in a and "labels" not in a}
    return {}


def _damage_message(out: pathlib.Path, damaged: list[Damaged]) -> str:
    d = damaged[0]
    more = len({x.run_id for x in damaged}) - 1
    return (f"{out}: run {d.run_id} is damaged ({d.file}: {d.reason})"
            + (f", and {more} more run(s)" if more > 0 else "")
            + f"; {_repair_hint(out)} (it runs the damaged runs again)")


def load(path: str | os.PathLike, verify: bool = True) -> Store:
    """Opens the result store written by ``aqmlab reproduce``/``sweep`` (or
    :func:`aqmlab.runner.run_study`) for lazy reading. With `verify` (the default) every
    finished run's files are first checked against their SHA-256 checksums; a damaged
    store raises :class:`aqmlab.errors.StoreError` naming the run and how to repair it.
    Any file that cannot be read later raises a :class:`StoreError` as well."""
    return Store(path, verify=verify)


# ---------------------------------------------------------------------------------------
# the data-access functions the report, figures, tables, findings and export use


class Tables(Protocol):
    """An in-memory stand-in for a store (a study's tables built in memory, test
    fixtures): the ``runs`` table as a DataFrame attribute, and those of ``flows``,
    ``queues``, ``samples``, ``series`` that exist, likewise."""

    @property
    def runs(self) -> Any: ...


#: What the readers (figures, tables, findings, report, Flent export) accept: a
#: :class:`Store` on disk, read lazily, or in-memory :class:`Tables`.
StoreLike = Store | Tables
#: A reader's argument: a store, in-memory tables, or the directory of a store.
StoreArg = StoreLike | str | os.PathLike


def drop_foreign_axes(df: Any) -> Any:
    """Tables of several experiments concatenate their axis columns; within one
    experiment the other experiments' ``p_*`` columns are all missing: drop them."""
    gone = [c for c in df.columns if c.startswith("p_") and df[c].isna().all()]
    return df.drop(columns=gone) if gone else df


def runs_of(store: StoreLike) -> Any:
    """The runs table with axis labels as stored (strings)."""
    import pandas as pd

    if isinstance(store, Store):
        return store.raw_runs
    df = getattr(store, "runs", None)
    return df if isinstance(df, pd.DataFrame) else pd.DataFrame()


def scan(store: StoreLike, table: str, columns: Iterable[str] | None = None, filters: Filter | None = None,
         run_ids: Iterable[str] | None = None) -> Any:
    """:meth:`Store.scan` for a :class:`Store`; the same selection of an in-memory table
    for any other object with DataFrame attributes."""
    import pandas as pd

    if isinstance(store, Store):
        return store.scan(table, columns, filters, run_ids)
    df = runs_of(store) if table == "runs" else getattr(store, table, None)
    if not isinstance(df, pd.DataFrame) or df.empty:
        return pd.DataFrame()
    if run_ids is not None:
        df = df[df["run_id"].isin(set(map(str, run_ids)))]
    df = _apply_filters(df, filters)
    if columns is not None:
        df = df[[c for c in df.columns if c in set(columns) | {"run_id"}]]
    return df


def iter_chunks(store: StoreLike, table: str, columns: Iterable[str] | None = None, filters: Filter | None = None,
                run_ids: Iterable[str] | None = None, max_rows: int | None = None) -> Iterator[Any]:
    """:meth:`Store.iter_chunks` for a :class:`Store`; the in-memory selection as one chunk otherwise."""
    if isinstance(store, Store):
        yield from store.iter_chunks(table, columns, filters, run_ids, max_rows)
        return
    df = scan(store, table, columns, filters, run_ids)
    if not df.empty:
        yield df


def iter_runs(store: StoreLike, table: str, columns: Iterable[str] | None = None, filters: Filter | None = None,
              run_ids: Iterable[str] | None = None) -> Iterator[tuple[str, Any]]:
    """:meth:`Store.iter_runs` for a :class:`Store`; per run of the in-memory table otherwise."""
    if isinstance(store, Store):
        yield from store.iter_runs(table, columns, filters, run_ids)
        return
    df = scan(store, table, columns, filters, run_ids)
    if df.empty:
        return
    for rid, g in df.groupby("run_id", sort=True):
        yield str(rid), g
