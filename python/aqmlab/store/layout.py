"""The store's layout: its tables, file names and sizes, and the listing of loose runs
(see :mod:`aqmlab.store` for the whole layout and the durability rules)."""

from __future__ import annotations

import os
import pathlib

__all__ = [
    "CHECKSUMS",
    "CHUNK_ROWS",
    "DATA_TABLES",
    "MANIFEST",
    "PART_ROWS",
    "ROW_GROUP_ROWS",
    "TABLES",
    "loose_ids",
    "manifest_runs",
    "repair_hint",
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


def repair_hint(out: pathlib.Path) -> str:
    return f"run `aqmlab verify {out} --repair` to repair it"


def manifest_runs(m: dict, table: str = "runs") -> set[str]:
    return {rid for p in m["parts"].get(table, []) for rid in p["runs"]}


def loose_ids(out: pathlib.Path, table: str) -> set[str]:
    d = out / table
    if not d.is_dir():
        return set()
    return {n[: -len(".parquet")] for n in os.listdir(d) if n.endswith(".parquet") and not n.startswith(("part-", "."))}
