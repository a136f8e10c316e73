"""A store that never lies: reads verify every file against its checksum, the metadata is
kept in two copies and repaired from the intact one (or rebuilt from the part files),
`aqmlab verify [--repair]`, and the write lock."""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest

import aqmlab
from aqmlab import store
from aqmlab.cli import main
from aqmlab.errors import AqmlabError, StoreError, StoreLocked
from aqmlab.store import TABLES

import synthstore


def _upgrade(out: pathlib.Path) -> None:
    """Rewrites a synthetic store's metadata the way the runner writes it now."""
    prov = json.loads((out / "provenance.json").read_text())
    text = (out / "study.toml").read_text()
    store.write_provenance(out, prov | {"study_sha256": store.study_sha256(text)})
    store.write_study_text(out, text)
    (out / "checksums").mkdir(exist_ok=True)
    for f in (out / "runs").glob("*.parquet"):
        sums = {t: store.write.sha256_file(out / t / f.name) for t in TABLES if (out / t / f.name).exists()}
        (out / "checksums" / f"{f.stem}.json").write_text(json.dumps(sums))


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """A synthetic study as loose files and compacted into parts (new-format metadata)."""
    base = tmp_path_factory.mktemp("integrity")
    loose = base / "loose"
    synthstore.write_store(loose)
    _upgrade(loose)
    packed = base / "packed"
    shutil.copytree(loose, packed)
    store.compact(packed, part_rows=20_000, row_group_rows=3_000)
    return loose, packed


def _copy(src: pathlib.Path, tmp_path: pathlib.Path) -> pathlib.Path:
    out = tmp_path / "s"
    shutil.copytree(src, out)
    return out


def _tables(out) -> dict[str, pd.DataFrame]:
    st = store.load(out)
    res = {"runs": st.raw_runs}
    for t in TABLES[1:]:
        df = st.scan(t)
        res[t] = df.sort_values(list(df.columns[:3]), kind="stable").reset_index(drop=True) if not df.empty else df
    return res


def _same(a: dict, b: dict) -> None:
    for t in TABLES:
        pd.testing.assert_frame_equal(a[t], b[t], check_like=True)


def _flip(f: pathlib.Path, at: float = 0.5) -> None:
    data = bytearray(f.read_bytes())
    data[int(len(data) * at)] ^= 0x10
    f.write_bytes(bytes(data))


@pytest.mark.parametrize("layout", ["loose", "packed"])
def test_load_refuses_a_flipped_byte_in_any_data_file_naming_the_run(stores, tmp_path, layout):
    src = stores[0] if layout == "loose" else stores[1]
    out = _copy(src, tmp_path)
    if layout == "loose":
        victim = sorted((out / "flows").glob("*.parquet"))[3]
        rid = victim.stem
    else:
        part = json.loads((out / "parts.json").read_text())["parts"]["flows"][0]
        victim, rid = out / part["file"], part["runs"][0]
    _flip(victim)
    with pytest.raises(StoreError) as ei:
        aqmlab.load(out)
    msg = str(ei.value)
    assert rid in msg and "checksum mismatch" in msg and f"aqmlab verify {out} --repair" in msg
    assert isinstance(ei.value, AqmlabError)


def test_cli_report_plot_export_exit_2_on_a_damaged_store(stores, tmp_path, capsys):
    out = _copy(stores[1], tmp_path)
    part = json.loads((out / "parts.json").read_text())["parts"]["runs"][0]
    _flip(out / part["file"])
    for cmd in (["report", str(out)], ["plot", str(out)], ["export", str(out)]):
        with pytest.raises(SystemExit) as ei:
            main(cmd)
        err = capsys.readouterr().err
        assert ei.value.code == 2, (cmd, err)
        assert "damaged" in err and "--repair" in err and "internal error" not in err


def test_unreadable_loose_file_without_checksum_is_a_store_error(stores, tmp_path):
    """Runs stored before checksums existed are read as they are; if one cannot be read
    the error names the store and says how to repair it (no raw pyarrow error)."""
    out = _copy(stores[0], tmp_path)
    victim = sorted((out / "flows").glob("*.parquet"))[0]
    (out / "checksums" / f"{victim.stem}.json").unlink()
    victim.write_bytes(victim.read_bytes()[:40])
    st = aqmlab.load(out)
    with pytest.raises(StoreError, match="cannot read flows"):
        _ = st.flows


@pytest.mark.parametrize("name", ["parts.json", "provenance.json", "study.toml"])
def test_one_damaged_metadata_copy_is_read_from_the_other_and_repaired(stores, tmp_path, name):
    out = _copy(stores[1], tmp_path)
    ref = _tables(stores[1])
    _flip(out / name, 0.3)
    _same(_tables(out), ref)
    assert store.load(out).provenance == store.load(stores[1]).provenance
    main_rc = _run_cli(["verify", str(out)])
    assert main_rc[0] == 2 and name in main_rc[2]
    rc, text, _ = _run_cli(["verify", str(out), "--repair"])
    assert rc == 0 and "repaired" in text, text
    assert (out / name).read_bytes() == (stores[1] / name).read_bytes()
    assert _run_cli(["verify", str(out)])[0] == 0


def test_both_manifest_copies_damaged_is_refused_then_rebuilt_from_the_parts(stores, tmp_path):
    out = _copy(stores[1], tmp_path)
    ref = _tables(stores[1])
    for n in ("parts.json", "parts.json.prev"):
        (out / n).write_bytes((out / n).read_bytes()[:100])
    with pytest.raises(StoreError, match="parts.json"):
        aqmlab.load(out)
    with pytest.raises(StoreError):
        store.finished_runs(out)  # a resume must not start from an empty manifest
    store.repair_metadata(out)
    _same(_tables(out), ref)


def test_deleted_manifest_does_not_lose_finished_runs(stores, tmp_path):
    out = _copy(stores[1], tmp_path)
    ref = _tables(stores[1])
    (out / "parts.json").unlink()
    (out / "parts.json.prev").unlink()
    with pytest.raises(StoreError, match="parts.json is missing"):
        aqmlab.load(out)
    done = store.repair_metadata(out)
    assert done and "rebuilt" in done[0]
    _same(_tables(out), ref)


def test_a_run_list_that_disagrees_with_its_part_cannot_store_a_run_twice(stores, tmp_path):
    """A manifest (old format, no checksum) whose runs part lists one run too few: resume
    would have run it again and stored it twice. verify() rebuilds the list from the file."""
    out = _copy(stores[1], tmp_path)
    m = json.loads((out / "parts.json").read_text())
    m.pop("checksum")
    m["version"] = 1
    gone = m["parts"]["runs"][0]["runs"].pop(0)
    (out / "parts.json").write_text(json.dumps(m))
    (out / "parts.json.prev").unlink()
    assert gone not in store.finished_runs(out)
    store.verify(out)
    assert gone in store.finished_runs(out)
    runs = store.load(out).raw_runs
    assert runs["run_id"].is_unique and gone in set(runs["run_id"])
    assert len(runs) == len(store.load(stores[1]).raw_runs)


def test_both_provenance_copies_damaged_is_a_store_error(stores, tmp_path):
    out = _copy(stores[1], tmp_path)
    for n in ("provenance.json", "provenance.json.prev"):
        _flip(out / n, 0.5)
    with pytest.raises(StoreError, match="provenance.json is damaged"):
        aqmlab.load(out)


def test_legacy_store_reads_and_verify_upgrades_it(tmp_path):
    """A store written before the metadata had two copies and checksums."""
    out = tmp_path / "old"
    synthstore.write_store(out)
    before = _tables(out)
    assert _run_cli(["verify", str(out)])[0] == 0
    assert _run_cli(["verify", str(out), "--repair"])[0] == 0
    assert (out / "provenance.json.prev").exists() and (out / "study.toml.prev").exists()
    _same(_tables(out), before)


def _run_cli(args: list[str]) -> tuple[int, str, str]:
    r = subprocess.run([sys.executable, "-m", "aqmlab", *args], capture_output=True, text=True, timeout=120,
                       env=os.environ | {"PYTHONPATH": str(pathlib.Path(aqmlab.__file__).parent.parent)})
    return r.returncode, r.stdout, r.stderr


# -- the write lock ---------------------------------------------------------------------------

HOLD = textwrap.dedent("""
    import sys, time
    from aqmlab import store
    with store.lock(sys.argv[1]):
        print("locked", flush=True)
        time.sleep(60)
""")


def test_a_second_writer_is_refused_and_a_dead_holders_lock_is_taken_over(tmp_path):
    out = tmp_path / "s"
    env = os.environ | {"PYTHONPATH": str(pathlib.Path(aqmlab.__file__).parent.parent)}
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "locked"
        with pytest.raises(StoreLocked) as ei:
            with store.lock(out):
                pass
        assert f"pid {p.pid}" in str(ei.value) and "wait for it" in str(ei.value)
    finally:
        p.kill()  # kill -9: the holder cannot clean up
        p.wait()
    t0 = time.monotonic()
    with store.lock(out):
        assert json.loads((out / ".lock").read_text())["pid"] == os.getpid()
        with store.lock(out):  # reentrant in one process
            pass
    assert time.monotonic() - t0 < 2


# -- a small corruption fuzz (benchmarks/store_fuzz.py runs >= 1,000 trials) ------------------

TINY = """
[study]
name = "tiny"
repetitions = 2
seed = 3

[base]
run = { duration = "0.3s", warmup = "0.1s", bin = "100ms" }
dumbbell = { rate = "20Mbit", delay = "2ms" }

[[experiment]]
name = "load"
measures = ["induced_latency", "bottleneck_utilization"]
keep_series = true
keep_samples = true
patch = { flow = [ { kind = "cbr", from = "client0", to = "server0", rate = "30Mbit" },
                   { kind = "ping", from = "client0", to = "server0", interval = "20ms" } ] }

  [[experiment.axis]]
  name = "qdisc"
  path = "dumbbell.qdisc"
  values = [ { kind = "fifo", limit = 100 }, { kind = "fq_codel" } ]
  labels = ["fifo", "fq_codel"]
"""

WALL = {"wall_seconds", "sim_wall_seconds"}


def _content(out) -> dict:
    st = store.load(out)
    res = {}
    for t in TABLES:
        df = st.raw_runs if t == "runs" else st.scan(t)
        df = df[[c for c in sorted(df.columns) if c not in WALL]]
        res[t] = sorted(map(repr, df.itertuples(index=False)))
    return res


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    from aqmlab.runner import run_study
    from aqmlab.study import parse_study

    base = tmp_path_factory.mktemp("fuzz")
    study = parse_study(TINY)
    run_study(study, base / "parts", jobs=1, progress=False)
    run_study(study, base / "loose", jobs=1, progress=False, compact_after=False)
    return study, base


def test_corruption_fuzz_never_reads_a_wrong_number_and_repair_restores(swept, tmp_path):
    import random

    from aqmlab.runner import repair_store, run_study

    study, base = swept
    want = _content(base / "parts")
    assert _content(base / "loose") == want
    files = [(layout, p.relative_to(base / layout).as_posix()) for layout in ("parts", "loose")
             for p in sorted((base / layout).rglob("*")) if p.is_file() and p.name != ".lock"]
    rng = random.Random(7)
    outcomes = {"correct": 0, "error": 0}
    for i in range(20):
        layout, rel = files[rng.randrange(len(files))]
        out = tmp_path / f"t{i}"
        shutil.copytree(base / layout, out)
        f = out / rel
        data = bytearray(f.read_bytes())
        if i % 2 and data:
            data[rng.randrange(len(data))] ^= rng.randrange(1, 256)
        else:
            del data[rng.randrange(max(len(data), 1)):]
        f.write_bytes(bytes(data))
        try:
            got = _content(out)
        except AqmlabError:
            outcomes["error"] += 1
        else:
            assert got == want, f"wrong content read after damaging {layout}/{rel}"
            outcomes["correct"] += 1
        if i % 5 == 0:  # repair (rerunning damaged runs) or resume, then the content is the reference's
            if i % 10:
                repair_store(out, jobs=1)
            else:
                run_study(study, out, jobs=1, progress=False)
            assert _content(out) == want, f"{layout}/{rel}"
        shutil.rmtree(out)
    assert outcomes["error"] > 0 and outcomes["correct"] > 0, outcomes


def test_a_store_being_written_is_not_called_damaged(stores, tmp_path):
    """While a sweep holds the lock its files may move (a compaction deletes loose files):
    a reader that finds files missing then says the store is busy, not damaged."""
    out = _copy(stores[0], tmp_path)
    victim = sorted((out / "flows").glob("*.parquet"))[0]
    victim.unlink()
    env = os.environ | {"PYTHONPATH": str(pathlib.Path(aqmlab.__file__).parent.parent)}
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "locked"
        assert store.writer(out)["pid"] == p.pid
        with pytest.raises(StoreError, match=f"being written by another aqmlab process \\(pid {p.pid}"):
            aqmlab.load(out)
    finally:
        p.kill()
        p.wait()
    assert store.writer(out) is None
    with pytest.raises(StoreError, match="missing"):
        aqmlab.load(out)


HOLD_FORK = textwrap.dedent("""
    import os, sys, time
    from aqmlab import store
    with store.lock(sys.argv[1]):
        if os.fork() == 0:  # a worker that shares the locked file and ends a little later
            time.sleep(1.0)
            os._exit(0)
        print("locked", flush=True)
        time.sleep(60)
""")


def test_the_lock_of_a_killed_holder_is_taken_once_its_workers_end(tmp_path):
    out = tmp_path / "s"
    env = os.environ | {"PYTHONPATH": str(pathlib.Path(aqmlab.__file__).parent.parent)}
    p = subprocess.Popen([sys.executable, "-c", HOLD_FORK, str(out)], stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout is not None and p.stdout.readline().strip() == "locked"
    p.kill()
    p.wait()
    t0 = time.monotonic()
    with store.lock(out):  # waits for the orphaned worker instead of refusing
        pass
    assert time.monotonic() - t0 < store.LOCK_GRACE


def test_part_run_ids_are_the_distinct_run_ids_in_file_order(tmp_path):
    """part_run_ids reads the run_id column as dictionary codes: the same ids, in order
    of first appearance, as the distinct strings of the column, over several row groups
    (each with its own dictionary), unsorted ids and ids repeated across row groups."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from aqmlab.store.meta import part_run_ids

    ids = ["r9", "r9", "r3", "r3", "r3", "r7", "r3", "r1", "r1", "r9", "r2"]
    f = tmp_path / "part-000001.parquet"
    pq.write_table(pa.table({"run_id": ids, "x": list(range(len(ids)))}), f, row_group_size=3)
    assert pq.ParquetFile(f).num_row_groups == 4
    want = [str(v) for v in pc.unique(pq.read_table(f).column("run_id")).to_pylist()]
    assert part_run_ids(f) == want == ["r9", "r3", "r7", "r1", "r2"]
    g = tmp_path / "part-000002.parquet"
    pq.write_table(pa.table({"run_id": ids}), g, use_dictionary=False)  # stored plain: the same
    assert part_run_ids(g) == want


def test_a_sweep_whose_runs_record_no_samples_verifies_intact(tmp_path):
    """A run of bulk flows alone keeps no samples (nothing to sample: no probes, no qdisc
    traces), yet writes a samples file without rows. Compaction lists such a run in no
    samples part (as a manifest rebuilt from the part files would), so the finished store
    verifies intact (`aqmlab verify` exit 0), its samples part holds only the probe run,
    and resuming changes nothing."""
    from aqmlab.runner import run_study
    from aqmlab.store.integrity import check_store
    from aqmlab.study import parse_study

    text = TINY.replace("repetitions = 2", "repetitions = 1") + (
        '\n[[experiment]]\nname = "bulk"\nkeep_samples = true\nmeasures = ["goodput_up"]\n'
        'patch = { flow = [ { kind = "bulk", from = "client0", to = "server0" } ] }\n'
    )
    study = parse_study(text)
    out = tmp_path / "st"
    run_study(study, out, jobs=1, progress=False)
    assert check_store(out) == ([], 3)
    m = json.loads((out / "parts.json").read_text())
    assert {p["experiment"] for p in m["parts"]["samples"]} == {"load"}
    assert all(p["rows"] > 0 for t in TABLES for p in m["parts"][t])
    before = (out / "parts.json").read_bytes()
    assert _run_cli(["verify", str(out)])[0] == 0
    run_study(study, out, jobs=1, progress=False)
    assert (out / "parts.json").read_bytes() == before

    # a store an older compaction wrote: an empty samples part listing the bulk run
    import pyarrow.parquet as pq

    from aqmlab.store.meta import write_manifest

    (load,) = m["parts"]["samples"]
    empty = pq.read_table(out / load["file"]).slice(0, 0)
    pq.write_table(empty, out / "samples" / "part-000900.parquet")
    bulk = [r for p in m["parts"]["runs"] if p["experiment"] == "bulk" for r in p["runs"]]
    m["parts"]["samples"].append({"file": "samples/part-000900.parquet", "experiment": "bulk", "rows": 0, "runs": bulk,
                                  "sha256": store.write.sha256_file(out / "samples" / "part-000900.parquet")})
    write_manifest(out, {k: v for k, v in m.items() if k != "checksum"})
    assert "disagrees with the file" in check_store(out)[0][0]
    rc, text, _ = _run_cli(["verify", str(out), "--repair"])
    assert rc == 0 and "samples/part-000900.parquet: holds no rows" in text and "unreadable" not in text, text
    assert check_store(out) == ([], 3)
