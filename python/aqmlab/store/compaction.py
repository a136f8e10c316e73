"""Compaction: the loose files of finished runs merged into part files per table and
experiment; ``parts.json`` is the commit point."""

from __future__ import annotations

import os
import pathlib
from typing import Any

from aqmlab.store.layout import CHECKSUMS, PART_ROWS, ROW_GROUP_ROWS, TABLES, loose_ids, manifest_runs
from aqmlab.store.locking import lock
from aqmlab.store.meta import read_manifest, write_manifest
from aqmlab.store.write import fsync_dir, remove_loose_runs, sha256_file

__all__ = ["compact"]


def _cleanup(out: pathlib.Path, m: dict) -> None:
    """Removes temporary files, part files the manifest does not list, and loose files of
    runs that already live in parts (left by a crash between commit and deletion)."""
    listed = {p["file"] for t in TABLES for p in m["parts"][t]}
    in_parts = manifest_runs(m)
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
        stale |= in_parts & loose_ids(out, t)
    if (out / CHECKSUMS).is_dir():
        stale |= in_parts & {n[: -len(".json")] for n in os.listdir(out / CHECKSUMS) if n.endswith(".json")}
    remove_loose_runs(out, sorted(stale))


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
    order) into part files numbered from `first` (at most ``len(items)`` of them; files
    without rows go into none): each written to a temporary name, fsynced and renamed into
    place (not yet listed in the manifest). Returns their manifest entries. Runs in a worker process of :func:`compact`."""
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
                      "runs": list(part_ids), "sha256": sha256_file(final)})
        writer, part_path, part_ids, part_n = None, None, [], 0

    for rid, f in items:
        tbl = _conform(_read_loose(f), schema)
        if tbl.num_rows == 0:
            # a run without rows in this table (no samples: bulk flows only) is listed in no
            # part of it, as a manifest rebuilt from the part files lists it; a part listing
            # it would disagree with its file (`aqmlab verify`), and an empty part is not written
            continue
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
    m = read_manifest(out)
    _cleanup(out, m)
    loose = sorted(loose_ids(out, "runs") - manifest_runs(m))
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
            present = loose_ids(out, table)  # one listing instead of a stat per run
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
        fsync_dir(d)
    m["next"] = nxt
    for t in TABLES:
        m["parts"][t].extend(new_parts[t])
    write_manifest(out, m)  # commit
    remove_loose_runs(out, loose)
    return len(loose)
