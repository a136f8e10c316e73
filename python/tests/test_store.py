"""The result store: lazy reading equals eager reading, compaction keeps content and
resume, checksums catch damaged runs, axis values keep their types."""
from __future__ import annotations

import json
import pathlib
import shutil
import types

import numpy as np
import pandas as pd
import pytest

from aqmlab import findings, flent, plots, store, tables
from aqmlab.store import TABLES

import synthstore

WALL = ["wall_seconds", "sim_wall_seconds"]


def _eager(st: store.Store) -> types.SimpleNamespace:
    """Every table fully in memory: what the store held before it was read lazily."""
    return types.SimpleNamespace(path=st.path, runs=st.raw_runs, flows=st.flows, queues=st.queues,
                                 samples=st.samples, series=st.series, study_text=st.study_text,
                                 provenance=st.provenance)


def _fig_signature(fig) -> list:
    """Everything a figure draws, as plain values (exact floats)."""
    out = [fig._suptitle.get_text() if fig._suptitle else None]
    for ax in fig.axes:
        out.append(("axes", ax.get_title(), ax.get_xlabel(), ax.get_ylabel(), ax.get_xlim(), ax.get_ylim(),
                    [t.get_text() for t in ax.get_xticklabels()]))
        for ln in ax.lines:
            out.append(("line", ln.get_label(), np.asarray(ln.get_xydata(), float).tolist()))
        for c in ax.collections:
            out.append(("coll", np.asarray(c.get_offsets(), float).tolist(),
                        [np.asarray(p.vertices, float).tolist() for p in c.get_paths()]))
        for p in ax.patches:
            out.append(
                ("patch", type(p).__name__, np.asarray(p.get_path().transformed(p.get_patch_transform()).vertices).round(12).tolist())
            )
        for t in ax.texts:
            out.append(("text", t.get_text()))
        leg = ax.get_legend()
        if leg is not None:
            out.append(("legend", [t.get_text() for t in leg.get_texts()]))
    return out


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """The same synthetic study as loose per-run files and compacted into parts (tiny
    parts and row groups, so that runs span row groups and experiments span parts)."""
    base = tmp_path_factory.mktemp("store")
    loose = base / "loose"
    study = synthstore.write_store(loose)
    packed = base / "packed"
    shutil.copytree(loose, packed)
    n = store.compact(packed, part_rows=20_000, row_group_rows=3_000)
    assert n == len(study.runs())
    return study, loose, packed


def test_compaction_merges_files_and_keeps_every_table(stores):
    study, loose, packed = stores
    assert not list((packed / "samples").glob("[0-9a-f]*.parquet")), "loose files remain after compaction"
    parts = json.loads((packed / "parts.json").read_text())["parts"]
    assert 1 < len(parts["samples"]) < len(study.runs()) and len(parts["runs"]) == 4  # one per experiment
    a, b = store.load(loose), store.load(packed)
    assert store.finished_runs(loose) == store.finished_runs(packed) == {s.run_id for s in study.runs()}
    pd.testing.assert_frame_equal(a.runs, b.runs)
    for t in ("flows", "queues", "samples", "series"):
        x = getattr(a, t).sort_values(["run_id"], kind="stable").reset_index(drop=True)
        y = getattr(b, t).sort_values(["run_id"], kind="stable").reset_index(drop=True)
        pd.testing.assert_frame_equal(x, y, check_like=True)


def test_compaction_on_several_processes_writes_the_same_parts(stores, tmp_path):
    """compact(jobs=2) merges the (table, experiment) groups in two processes: the
    manifest lists the same parts in the same order, each byte for byte what one process
    writes (same rows, row groups and SHA-256); only part numbers may differ."""
    study, loose, packed = stores
    two = tmp_path / "two"
    shutil.copytree(loose, two)
    assert store.compact(two, part_rows=20_000, row_group_rows=3_000, jobs=2) == len(study.runs())
    assert not list((two / "samples").glob("[0-9a-f]*.parquet")) and not list(two.glob("*/.*.tmp"))
    one = json.loads((packed / "parts.json").read_text())["parts"]
    par = json.loads((two / "parts.json").read_text())["parts"]
    assert set(one) == set(par)
    for t in one:
        assert [(p["experiment"], p["rows"], p["runs"], p["sha256"]) for p in one[t]] == \
               [(p["experiment"], p["rows"], p["runs"], p["sha256"]) for p in par[t]]
        assert len({p["file"] for p in par[t]}) == len(par[t])
        for p in par[t]:
            assert (two / p["file"]).is_file()
    pd.testing.assert_frame_equal(store.load(two).runs, store.load(packed).runs)


def test_compaction_parts_equal_those_of_the_generic_reader(stores, tmp_path, monkeypatch):
    """Compaction reads loose files with ``ParquetFile.read`` on the calling thread and
    passes tables that already have the unified schema through unchanged: the parts are
    byte for byte those of ``pq.read_table`` and a column-by-column rebuild."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    study, loose, packed = stores

    def generic_read(f, columns=None):
        return pq.read_table(f, columns=columns).replace_schema_metadata(None)

    def generic_conform(tbl, schema):
        cols = []
        for f in schema:
            if f.name in tbl.column_names:
                c = tbl.column(f.name)
                cols.append(c if c.type == f.type else c.cast(f.type))
            else:
                cols.append(pa.nulls(tbl.num_rows, f.type))
        return pa.Table.from_arrays(cols, schema=schema)

    ref = tmp_path / "ref"
    shutil.copytree(loose, ref)
    monkeypatch.setattr(store.compaction, "_read_loose", generic_read)
    monkeypatch.setattr(store.compaction, "_conform", generic_conform)
    store.compact(ref, part_rows=20_000, row_group_rows=3_000)
    monkeypatch.undo()
    a = json.loads((packed / "parts.json").read_text())
    b = json.loads((ref / "parts.json").read_text())
    assert a == b
    for t in TABLES:
        for p in a["parts"][t]:
            assert (packed / p["file"]).read_bytes() == (ref / p["file"]).read_bytes()


@pytest.mark.parametrize("layout", ["loose", "packed"])
def test_lazy_figures_tables_findings_equal_eager(stores, layout, monkeypatch):
    study, loose, packed = stores
    monkeypatch.setattr(store.read, "CHUNK_ROWS", 4_000)  # reductions see many chunks of whole runs
    lazy = store.load(loose if layout == "loose" else packed)
    eager = _eager(store.load(loose))
    for e in study.experiments:
        for spec in e.figures:
            a = plots.figure(lazy, spec, e)
            b = plots.figure(eager, spec, e)
            assert _fig_signature(a) == _fig_signature(b), f"{e.name}: {spec.get('name', spec['type'])}"
        for spec in e.tables:
            ta, tb = tables.table(lazy, spec, e), tables.table(eager, spec, e)
            pd.testing.assert_frame_equal(ta.numeric, tb.numeric)
            assert ta.to_markdown() == tb.to_markdown()
        assert tables.summary_table(lazy, e).to_markdown() == tables.summary_table(eager, e).to_markdown()
    ea = [(x.status, x.detail) for x in findings.evaluate_all(lazy, study)]
    eb = [(x.status, x.detail) for x in findings.evaluate_all(eager, study)]
    assert ea == eb and {s for s, _ in ea} >= {"pass", "fail", "unchecked"}


def test_lazy_flent_export_equals_eager(stores, tmp_path):
    study, loose, packed = stores
    a = flent.export_flent(store.load(packed), tmp_path / "a", study)
    b = flent.export_flent(_eager(store.load(loose)), tmp_path / "b", study)
    assert a and [p.name for p in a] == [p.name for p in b]
    for x, y in zip(a, b):
        assert x.read_bytes() == y.read_bytes(), x.name


def test_scan_reads_only_what_is_asked(stores):
    _, _, packed = stores
    st = store.load(packed)
    ids = list(st.raw_runs.query("experiment == 'saturated'")["run_id"])[:3]
    df = st.scan("samples", ["t", "value"], [("metric", "==", "drop"), ("t", "<", 5.0)], run_ids=ids)
    assert set(df.columns) == {"run_id", "t", "value"}
    assert set(df["run_id"]) == set(ids) and (df["t"] < 5.0).all() and (df["value"] == 1.0).all()
    full = st.samples
    want = full[full["run_id"].isin(ids) & (full["metric"] == "drop") & (full["t"] < 5.0)]
    assert len(df) == len(want)
    # streamed runs arrive one at a time, in run-id order, each run whole
    got = [(rid, len(g)) for rid, g in st.iter_runs("samples", ["t"], run_ids=ids)]
    assert [r for r, _ in got] == sorted(ids)
    assert [n for _, n in got] == [int((full["run_id"] == r).sum()) for r in sorted(ids)]
    # a filter on a column the table does not have matches nothing
    assert st.scan("flows", None, [("no_such_column", "==", 1)]).empty


def test_axis_values_keep_their_types(stores):
    _, loose, _ = stores
    runs = store.load(loose).runs
    sat = runs[runs["experiment"] == "saturated"]
    assert str(sat["p_flows"].dtype) == "Int64"
    assert sorted(sat["p_flows"].dropna().unique().tolist()) == [1, 4, 16]
    assert sat.sort_values("p_flows")["p_flows"].tolist()[-1] == 16  # 16 after 4, not after 1
    assert runs["p_qdisc"].dropna().map(type).eq(str).all()  # labels of tables stay strings


def test_load_is_lazy(stores, monkeypatch):
    _, loose, _ = stores
    read = []
    import pyarrow.parquet as pq

    orig = pq.ParquetFile.read

    def spy(self, *a, **k):
        read.append(1)
        return orig(self, *a, **k)

    st = store.load(loose)
    monkeypatch.setattr(pq.ParquetFile, "read", spy)
    assert st._raw_runs is None and not st._cache  # nothing read yet
    _ = st.runs
    n_runs = len(read)
    assert n_runs == len(st.runs)  # the runs table only
    _ = st.flows
    assert len(read) > n_runs and "samples" not in st._cache


def _flip_byte(path: pathlib.Path, at: int | None = None) -> None:
    data = bytearray(path.read_bytes())
    i = len(data) // 2 if at is None else at
    data[i] ^= 0x40
    path.write_bytes(bytes(data))


def _sums(out: pathlib.Path, rid: str) -> dict:
    return json.loads((out / "checksums" / f"{rid}.json").read_text())


def test_write_run_checksums_and_order(tmp_path):
    out = tmp_path / "s"
    runs = pd.DataFrame([{"run_id": "abc", "experiment": "e", "x": 1.0}])
    flows = pd.DataFrame({"run_id": ["abc"], "name": ["f"], "goodput_bps": [1.0]})
    store.write_run(out, {"runs": runs, "flows": flows})
    sums = _sums(out, "abc")
    assert set(sums) == {"runs", "flows"}
    assert store.verify(out) == [] and store.finished_runs(out) == {"abc"}
    assert not list(out.rglob("*.tmp"))


def test_checksum_catches_a_flipped_byte_in_a_loose_run(stores, tmp_path):
    _, loose, _ = stores
    out = tmp_path / "s"
    shutil.copytree(loose, out)
    st = store.load(out)
    rid = st.raw_runs["run_id"].iloc[5]
    # the synthetic writer has no checksums: give every run one, as write_run does
    for r in st.raw_runs["run_id"]:
        sums = {t: store.write.sha256_file(out / t / f"{r}.parquet") for t in TABLES if (out / t / f"{r}.parquet").exists()}
        (out / "checksums").mkdir(exist_ok=True)
        (out / "checksums" / f"{r}.json").write_text(json.dumps(sums))
    assert store.verify(out) == []
    victim = next(out / t / f"{rid}.parquet" for t in ("samples", "flows") if (out / t / f"{rid}.parquet").exists())
    _flip_byte(victim)
    bad = store.verify(out)
    assert [(d.run_id, d.reason) for d in bad] == [(rid, "checksum mismatch")]
    assert rid not in store.finished_runs(out)
    assert not (out / "runs" / f"{rid}.parquet").exists() and not victim.exists()
    assert store.verify(out) == []  # the others are intact


def test_checksum_catches_a_flipped_byte_in_a_part(stores, tmp_path):
    _, _, packed = stores
    out = tmp_path / "s"
    shutil.copytree(packed, out)
    m = json.loads((out / "parts.json").read_text())
    victim = m["parts"]["samples"][1]
    _flip_byte(out / victim["file"])
    bad = store.verify(out)
    assert {d.run_id for d in bad} == set(victim["runs"]) and all(d.reason == "checksum mismatch" for d in bad)
    assert not set(victim["runs"]) & store.finished_runs(out)
    st = store.load(out)
    assert not set(victim["runs"]) & set(st.raw_runs["run_id"])
    assert not set(victim["runs"]) & set(st.flows["run_id"])  # dropped from every table
    assert len(st.raw_runs) == len(store.load(packed).raw_runs) - len(victim["runs"])


def test_compaction_interrupted_before_commit_leaves_store_readable(stores, tmp_path):
    _, loose, _ = stores
    out = tmp_path / "s"
    shutil.copytree(loose, out)
    before = store.load(out).samples
    # a crash before parts.json is written leaves orphan part files: they are ignored ...
    (out / "samples" / "part-000099.parquet").write_bytes(b"garbage")
    assert len(store.load(out).samples) == len(before)
    # ... and removed by the next compaction, which then commits
    store.compact(out)
    assert not (out / "samples" / "part-000099.parquet").exists()
    after = store.load(out).samples
    pd.testing.assert_frame_equal(before.sort_values("run_id", kind="stable").reset_index(drop=True),
                                  after.sort_values("run_id", kind="stable").reset_index(drop=True), check_like=True)


def test_loose_duplicates_after_commit_are_ignored(stores, tmp_path):
    """A crash after parts.json but before the loose files are deleted: each run is read once."""
    study, loose, packed = stores
    out = tmp_path / "s"
    shutil.copytree(packed, out)
    for t in TABLES:
        for f in (loose / t).glob("*.parquet"):
            shutil.copy(f, out / t / f.name)
    st = store.load(out)
    assert len(st.raw_runs) == len(study.runs())
    assert len(st.flows) == len(store.load(loose).flows)
    store.compact(out)  # cleans them up without merging them again
    assert not list((out / "runs").glob("[0-9a-f]*.parquet"))
    assert len(store.load(out).raw_runs) == len(study.runs())


def test_parquet_bytes_are_those_of_pandas_to_parquet():
    """store.write.parquet_bytes converts on one thread with pyarrow directly; the file must be
    byte for byte what ``df.to_parquet(index=False)`` writes (same pandas metadata, same
    dtypes on reading back), for small and large frames, strings, categoricals, NaN and
    empty frames, and for frames with attrs (left to pandas)."""
    import io

    rng = np.random.default_rng(3)
    n = 5000  # > 100 cells per core: pandas' call would convert on a thread pool
    frames = [
        pd.DataFrame({"run_id": "r1", "p_qdisc": "codel", "repetition": 0, "t": rng.random(n), "value": rng.random(n),
                      "kind": pd.Categorical(rng.choice(["flow", "queue"], n)), "entity": rng.choice(["a", "bb", "c"], n)}),
        pd.DataFrame({"name": ["x", "y"], "rtt_mean": [0.1, np.nan], "flows": [1, 2]}),
        pd.DataFrame({"name": pd.Series([], dtype=str), "value": pd.Series([], dtype=float)}),
    ]
    with_attrs = pd.DataFrame({"a": [1, 2]})
    with_attrs.attrs["note"] = "kept"
    frames.append(with_attrs)
    for df in frames:
        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
        got = store.write.parquet_bytes(df)
        assert got == buf.getvalue()
        back = pd.read_parquet(io.BytesIO(got))
        assert list(back.dtypes) == list(pd.read_parquet(io.BytesIO(buf.getvalue())).dtypes)


def test_a_runs_own_files_read_back_as_with_pyarrows_defaults_without_statistics():
    """encode_run writes a run's own files without column statistics, and the few-row
    tables (runs, flows, queues) without dictionary pages: every table reads back equal
    to what pyarrow's default writer gives (values, types and pandas metadata), through
    pandas and through pyarrow; the long tables keep their dictionary pages."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(5)
    n = 2000
    frames = {
        "runs": pd.DataFrame({"run_id": ["r1"], "experiment": ["e"], "repetition": [0], "p_qdisc": ["codel"],
                              "goodput_down": [np.nan], "events": [12]}),
        "flows": pd.DataFrame({"run_id": "r1", "name": ["a", "b", "c"], "rtt_mean": [0.1, np.nan, 0.3], "pkts": [1, 2, 3]}),
        "queues": pd.DataFrame({"run_id": "r1", "name": ["q"], "drops": [0]}),
        "samples": pd.DataFrame({"run_id": "r1", "t": rng.random(n), "value": rng.random(n),
                                 "kind": pd.Categorical(rng.choice(["flow", "queue"], n)), "entity": rng.choice(["a", "bb"], n)}),
        "series": pd.DataFrame({"run_id": "r1", "metric": rng.choice(["goodput_bps", "cwnd"], n), "value": rng.random(n)}),
    }
    files = store.encode_run(frames)
    assert set(files) == set(frames)
    for name, df in frames.items():
        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
        ref, got = buf.getvalue(), files[name]
        pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(got)), pd.read_parquet(io.BytesIO(ref)))
        assert pq.read_table(io.BytesIO(got)).equals(pq.read_table(io.BytesIO(ref)), check_metadata=True), name
        meta = pq.ParquetFile(io.BytesIO(got)).metadata
        cols = [meta.row_group(0).column(i) for i in range(meta.num_columns)]
        assert all(c.statistics is None for c in cols), name
        dict_pages = any(c.dictionary_page_offset is not None for c in cols)
        assert dict_pages == (name in ("samples", "series")), name
        # the arrow table path (a sweep's workers) gives the same bytes as the frame's
        assert store.encode_run({name: pa.Table.from_pandas(df, preserve_index=False)})[name] == got


def test_select_where_keeps_matching_rows_of_one_experiment_and_names_a_missing_axis():
    """The selection figures and tables share: the experiment's rows (other experiments'
    axis columns dropped), axis values compared as text (labels are stored as text), an
    unknown axis raised as the caller's error naming the axes there are."""

    class SpecError(Exception):
        pass

    df = pd.DataFrame({"run_id": ["r1", "r2", "r3", "r4"], "experiment": ["a", "a", "a", "b"],
                       "p_flows": ["1", "4", "16", None], "p_rate": [None, None, None, "10"]})
    out = store.select_where(df, "a", {"flows": ["4", 16]}, SpecError)
    assert list(out["run_id"]) == ["r2", "r3"] and "p_rate" not in out.columns
    assert list(store.select_where(df, "a", {"flows": 1}, SpecError)["run_id"]) == ["r1"]
    assert len(store.select_where(df, None, None, SpecError)) == 4
    with pytest.raises(SpecError, match=r"where\.rate: no such axis in experiment 'a' \(axes: \['flows'\]\)"):
        store.select_where(df, "a", {"rate": "10"}, SpecError)
