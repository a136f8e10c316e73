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

Modules: :mod:`~aqmlab.store.layout` (tables, file names), :mod:`~aqmlab.store.write`
(durable writes), :mod:`~aqmlab.store.locking` (the write lock), :mod:`~aqmlab.store.meta`
(manifest, provenance, study text), :mod:`~aqmlab.store.integrity` (verification and
repair), :mod:`~aqmlab.store.compaction`, :mod:`~aqmlab.store.read`. Everything public is
importable from ``aqmlab.store``.

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

from aqmlab.store.compaction import compact
from aqmlab.store.integrity import Damaged, check_files, check_store, repair_metadata, verify
from aqmlab.store.layout import CHECKSUMS, CHUNK_ROWS, DATA_TABLES, MANIFEST, PART_ROWS, ROW_GROUP_ROWS, TABLES
from aqmlab.store.locking import LOCK, LOCK_GRACE, lock, writer
from aqmlab.store.meta import (
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
from aqmlab.store.read import (
    Filter,
    Store,
    StoreArg,
    StoreLike,
    Tables,
    drop_foreign_axes,
    iter_chunks,
    iter_runs,
    load,
    open,
    runs_of,
    scan,
    select_where,
)
from aqmlab.store.write import encode_run, write_encoded, write_run

__all__ = [
    "Store",
    "load",
    "open",
    "scan",
    "iter_runs",
    "iter_chunks",
    "runs_of",
    "drop_foreign_axes",
    "select_where",
    "Filter",
    "StoreLike",
    "StoreArg",
    "Tables",
    "write_run",
    "encode_run",
    "write_encoded",
    "finished_runs",
    "verify",
    "check_store",
    "write_study_text",
    "read_study_text",
    "study_sha256",
    "write_provenance",
    "read_provenance",
    "repair_metadata",
    "check_files",
    "lock",
    "writer",
    "compact",
    "Damaged",
    "TABLES",
    "DATA_TABLES",
    "MANIFEST",
    "CHECKSUMS",
    "PROVENANCE",
    "STUDY",
    "PREV",
    "LOCK",
    "LOCK_GRACE",
    "ROW_GROUP_ROWS",
    "PART_ROWS",
    "CHUNK_ROWS",
]
