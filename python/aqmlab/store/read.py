"""Reading: :class:`Store` (lazy: projection, filters, one run or row group at a time) and
the data-access functions the report, figures, tables, findings and export use, which also
accept in-memory tables."""

from __future__ import annotations

import heapq
import os
import pathlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from aqmlab.store.integrity import check_files, damage_message
from aqmlab.store.layout import CHUNK_ROWS, ROW_GROUP_ROWS, TABLES, loose_ids, manifest_runs, repair_hint
from aqmlab.store.locking import writer
from aqmlab.store.meta import manifest_or_raise, read_provenance, read_study_text

__all__ = [
    "Filter",
    "Store",
    "StoreArg",
    "StoreLike",
    "Tables",
    "drop_foreign_axes",
    "iter_chunks",
    "iter_runs",
    "load",
    "open",
    "runs_of",
    "scan",
    "select_where",
]


Filter = list[tuple[str, str, Any]]


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
        self._manifest = manifest_or_raise(self.path)[0]
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
                raise StoreError(damage_message(self.path, damaged))

    def __repr__(self) -> str:
        return f"<Store {str(self.path)!r}: {len(self.raw_runs)} finished runs>"

    def _repr_html_(self) -> str:
        """The notebook view: the study, and per experiment its runs, axes and measures."""
        from aqmlab._html import store_html

        return store_html(self)

    # -- layout ---------------------------------------------------------------------------

    def _loose_of(self, table: str) -> set[str]:
        if table not in self._loose:
            ids = loose_ids(self.path, table)
            if table != "runs":
                ids &= self._finished()
            if self._verified is not None:
                ids &= self._verified[table]
            self._loose[table] = ids - manifest_runs(self._manifest, table)
        return self._loose[table]

    def _finished(self) -> set[str]:
        if "_finished" not in self._cache:
            self._cache["_finished"] = (loose_ids(self.path, "runs") | manifest_runs(self._manifest))
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
                             f"{' '.join(str(e).split())[:200]}; {repair_hint(self.path)}") from None
        except Exception as e:  # pyarrow's own errors (ArrowInvalid is a ValueError; others are not)
            if type(e).__module__.startswith("pyarrow"):
                raise StoreError(f"{self.path}: cannot read {what}: {type(e).__name__}; {repair_hint(self.path)}") from None
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


def load(path: str | os.PathLike, verify: bool = True) -> Store:
    """Opens the result store written by ``aqmlab reproduce``/``sweep`` (or
    :func:`aqmlab.runner.run_study`) for lazy reading. With `verify` (the default) every
    finished run's files are first checked against their SHA-256 checksums; a damaged
    store raises :class:`aqmlab.errors.StoreError` naming the run and how to repair it.
    Any file that cannot be read later raises a :class:`StoreError` as well."""
    return Store(path, verify=verify)


def open(store: StoreArg) -> StoreLike:
    """A reader's store argument as a store: a directory is opened with :func:`load`
    (verified); a :class:`Store` or in-memory :class:`Tables` is returned as it is."""
    if isinstance(store, str | os.PathLike):
        return load(store)
    return store


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


def select_where(df: Any, experiment: str | None, where: dict | None, error: Callable[[str], Exception]) -> Any:
    """The rows of `df` of `experiment` (every row when None; the other experiments' axis
    columns dropped) whose axis columns ``p_AXIS`` hold one of the values `where` gives
    each axis (a value or a list of them, compared as text). An axis the rows lack raises
    ``error(message)``, the message naming it and the axes there are."""
    if df.empty:
        return df
    if experiment is not None and "experiment" in df.columns:
        df = drop_foreign_axes(df[df["experiment"] == experiment])
    for axis, val in (where or {}).items():
        col = f"p_{axis}"
        if col not in df.columns:
            if df.empty:
                continue
            axes = [c[2:] for c in df.columns if c.startswith("p_")]
            raise error(f"where.{axis}: no such axis in experiment {experiment!r} (axes: {axes})")
        vals = val if isinstance(val, list) else [val]
        df = df[df[col].astype(str).isin([str(v) for v in vals])]
    return df


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
