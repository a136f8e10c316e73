"""The study runner: results in the store, resume after kill -9, Dask = local pool."""
from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import aqmlab
from aqmlab.runner import run_study
from aqmlab.study import load_study

MINI = Path(__file__).parent / "data" / "mini_study.toml"
WALL = ["wall_seconds", "sim_wall_seconds"]


def _runs(d: Path) -> pd.DataFrame:
    r = aqmlab.load(d).runs
    return r.drop(columns=WALL).sort_values("run_id").reset_index(drop=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("ref") / "store"
    s = run_study(load_study(str(MINI)), d, jobs=1, progress=False)
    assert s.ran == 8 and s.skipped == 0
    return d


def test_store_holds_every_run_with_measures(reference):
    st = aqmlab.load(reference)
    assert len(st.runs) == 8 and st.runs["run_id"].is_unique
    assert set(st.runs["p_qdisc"]) == {"fifo", "fq_codel"} and set(st.runs["p_rate"]) == {"50M", "20M"}
    # the measures carry the physics: a 300-packet FIFO at 20 Mbit/s adds ~180 ms, fq_codel ~nothing
    m = st.runs.groupby(["p_qdisc", "p_rate"])["induced_latency"].mean()
    assert m[("fifo", "20M")] > 0.15 and m[("fq_codel", "20M")] < 0.005
    assert (st.runs["bottleneck_utilization"] > 0.99).all()
    assert set(st.flows["run_id"]) == set(st.runs["run_id"])
    assert len(st.series) and len(st.samples)
    assert "mini" in st.study_text and st.provenance["study"] == "mini"


def test_rerun_skips_finished_runs(reference):
    s = run_study(load_study(str(MINI)), reference, jobs=1, progress=False)
    assert s.ran == 0 and s.skipped == 8


def test_other_study_in_same_store_is_refused(reference):
    from aqmlab.runner import StoreMismatch

    with pytest.raises(StoreMismatch):
        run_study(load_study(str(MINI), quick=True), reference, jobs=1, progress=False)


def test_killed_sweep_resumes_without_redoing_or_corrupting(reference, tmp_path):
    out = tmp_path / "store"
    cmd = [sys.executable, "-m", "aqmlab", "sweep", str(MINI), "--jobs", "1", "--out", str(out)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        done = list((out / "runs").glob("*.parquet")) if (out / "runs").is_dir() else []
        if len(done) >= 2 or p.poll() is not None:
            break
        time.sleep(0.02)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    # a finished run's wall time identifies the attempt that produced it
    before = dict(zip(*[aqmlab.load(out).runs[c] for c in ("run_id", "wall_seconds")]))
    assert 2 <= len(before) < 8, f"kill landed after {len(before)} runs"
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"{8 - len(before)} simulated, {len(before)} already in the store" in r.stderr
    after = dict(zip(*[aqmlab.load(out).runs[c] for c in ("run_id", "wall_seconds")]))
    assert len(after) == 8
    assert all(after[k] == v for k, v in before.items()), "finished runs were redone"
    assert not list(out.glob("*/.*.tmp"))
    pd.testing.assert_frame_equal(_runs(out), _runs(reference))
    a = aqmlab.load(out).flows.sort_values(["run_id", "name"]).reset_index(drop=True)
    b = aqmlab.load(reference).flows.sort_values(["run_id", "name"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting for its new parent to reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_pool_workers_end_when_the_sweep_process_is_killed(tmp_path):
    """kill -9 of the coordinating process alone (not its group) must not leave its pool
    workers behind as idle orphans: the kernel ends them (aqmlab._procs)."""
    out = tmp_path / "store"
    cmd = [sys.executable, "-m", "aqmlab", "sweep", str(MINI), "--jobs", "2", "--out", str(out)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 120
        workers: list[int] = []
        while time.time() < deadline and p.poll() is None and len(workers) < 2:
            workers = _children(p.pid)
            time.sleep(0.01)
        assert len(workers) == 2, f"never saw the two pool workers (exit code {p.poll()})"
        p.kill()  # SIGKILL, this process only
        p.wait()
        deadline = time.time() + 20
        while time.time() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.05)
        assert not any(_alive(w) for w in workers), "pool workers outlived the sweep process"
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_dask_local_cluster_matches_local_pool(reference, tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            run_study(load_study(str(MINI)), tmp_path / "d", scheduler=client, progress=False)
    pd.testing.assert_frame_equal(_runs(tmp_path / "d"), _runs(reference))


def test_local_pool_of_two_matches_serial(reference, tmp_path):
    run_study(load_study(str(MINI)), tmp_path / "p", jobs=2, progress=False)
    pd.testing.assert_frame_equal(_runs(tmp_path / "p"), _runs(reference))


def test_cli_reproduce_a_study_file_writes_report(tmp_path):
    out = tmp_path / "q"
    r = subprocess.run(
        [sys.executable, "-m", "aqmlab", "reproduce", str(MINI), "--quick", "--jobs", "1", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    # the printed table carries its unit (the columns are the `rate` axis, so the unit
    # is in the caption, not in a column name)
    assert "values in ms" in " ".join(r.stdout.split()), r.stdout
    page = out / "report.html"
    assert page.exists() and "quick" in page.read_text().lower()
    r = subprocess.run([sys.executable, "-m", "aqmlab", "plot", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert any(p.suffix == ".png" for p in (out / "figures").rglob("*"))


def test_cli_bad_study_is_one_line_error(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[study]\nname = 'x'\n[[experiment]]\nname = 'e'\nbogus = 1\n")
    r = subprocess.run([sys.executable, "-m", "aqmlab", "sweep", str(bad), "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "bogus" in r.stderr
    assert "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "aqmlab", "reproduce", "no-such-study"], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown study" in r.stderr


def test_bad_scenario_in_a_study_fails_before_any_run(tmp_path):
    from aqmlab.study import StudyError, parse_study

    text = MINI.read_text().replace('{ kind = "fq_codel" }', '{ kind = "fq_codel", target = "-5ms" }')
    with pytest.raises(StudyError, match="experiment load .*qdisc=fq_codel.*target"):
        run_study(parse_study(text), tmp_path / "s", jobs=1, progress=False)
    assert not (tmp_path / "s").exists()


def test_sweep_start_validates_each_distinct_scenario_once_and_hands_workers_the_specs(monkeypatch):
    """The repetitions of a combination share one scenario: a sweep's start validates it
    once (the same scenarios, in the same order, as a check of every run would), and the
    dict a worker gets holds the spec's fields and run id (what dataclasses.asdict gave)."""
    import dataclasses

    import aqmlab.runner as R
    from aqmlab.study import StudyError, parse_study

    study = parse_study(MINI.read_text())
    specs = study.runs()
    distinct = []
    for s in specs:
        if s.scenario not in distinct:
            distinct.append(s.scenario)
    assert len(specs) > len(distinct) > 1  # repetitions share their combination's scenario
    checked = []
    monkeypatch.setattr(aqmlab, "validate", lambda sc, flow_rows=None: checked.append(sc))
    R._validate_all(specs, study.text)
    assert checked == distinct
    # a copy of a scenario equal to one already checked is not checked again
    again = [dataclasses.replace(specs[0], scenario=dict(specs[0].scenario))]
    checked.clear()
    R._validate_all(specs + again, study.text)
    assert checked == distinct
    monkeypatch.undo()
    for s in specs:
        d = R._spec_to_dict(s)
        assert d == dataclasses.asdict(s) | {"run_id": s.run_id}
        assert d["scenario"] is s.scenario  # not copied: nothing changes it
    # the error names the first bad combination, as before
    text = MINI.read_text().replace('{ kind = "fq_codel" }', '{ kind = "fq_codel", target = "-5ms" }')
    bad = parse_study(text)
    with pytest.raises(StudyError, match=r"^experiment load \(.*qdisc=fq_codel.*\): .*target"):
        R._validate_all(bad.runs(), bad.text)


def test_damaged_finished_run_is_rerun_and_reported(reference, tmp_path):
    from aqmlab import report, store

    out = tmp_path / "s"
    run_study(load_study(str(MINI)), out, jobs=1, progress=False, compact_after=False)
    rid = sorted(store.finished_runs(out))[3]
    f = out / "samples" / f"{rid}.parquet"
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x01  # one flipped bit in the middle of the file
    f.write_bytes(bytes(data))
    s = run_study(load_study(str(MINI)), out, jobs=1, progress=False)
    assert s.repaired == [rid] and s.ran == 1 and s.skipped == 7
    pd.testing.assert_frame_equal(_runs(out), _runs(reference))
    a = aqmlab.load(out).samples.sort_values(["run_id", "t"], kind="stable").reset_index(drop=True)
    b = aqmlab.load(reference).samples.sort_values(["run_id", "t"], kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    assert [r["run_id"] for r in aqmlab.load(out).provenance["repaired"]] == [rid]
    page = report.write_report(out).read_text()
    assert "found damaged" in page and rid in page


def test_only_scopes_header_tables_report_and_findings(tmp_path):
    """`--only EXP`: the header, printed tables, report and findings cover EXP alone."""
    text = MINI.read_text().replace(
        '  { text = "fq_codel keeps',
        '  { text = "OTHER-FINDING", check = { measure = "cbr_goodput", experiment = "other", at_least = 0 } },\n'
        '  { text = "fq_codel keeps',
    ) + (
        '\n[[experiment]]\nname = "other"\ntitle = "OTHER-EXPERIMENT"\nmeasures = ["cbr_goodput"]\n'
        'patch = { flow = [ { kind = "cbr", from = "client0", to = "server0", rate = "1Mbit" } ] }\n'
        '  [[experiment.axis]]\n  name = "qdisc"\n  path = "dumbbell.qdisc"\n  values = [ { kind = "fifo" } ]\n'
        '  [[experiment.table]]\n  name = "other-table"\n  title = "OTHER-TABLE"\n  value = "cbr_goodput"\n  rows = "qdisc"\n'
    )
    study_file = tmp_path / "two.toml"
    study_file.write_text(text)
    from aqmlab.study import parse_study

    st = parse_study(text).restricted(["load"])
    assert [e.name for e in st.experiments] == ["load"]
    assert [f["text"] for f in st.findings] == ["fq_codel keeps probe latency lower than a long FIFO"]
    assert parse_study(text).restricted(None).experiments[1].name == "other"
    out = tmp_path / "o"
    r = subprocess.run([sys.executable, "-m", "aqmlab", "reproduce", str(study_file), "--quick", "--jobs", "1",
                        "--out", str(out), "--only", "load"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "4 runs in 1 experiment(s)" in r.stderr
    assert "OTHER" not in r.stdout and "fq_codel keeps probe latency" in r.stdout
    assert "a plain string finding" not in r.stdout
    import re

    page = (out / "report.html").read_text()
    shown = re.sub(r"<pre>.*?</pre>", "", page, flags=re.S)  # the exact study text stays, as provenance
    assert "OTHER" not in shown and "Experiment <code>load</code>" in shown


def test_execute_run_tags_every_table_row_with_the_run_identity():
    """Each per-run table starts with the run's identity and axis columns (run_id,
    experiment, repetition, seed, p_<axis>), the value on every row, followed by the
    result's own columns; the dtypes are those DataFrame.insert gives a scalar."""
    from aqmlab.runner import _spec_to_dict, execute_run

    study = load_study(str(MINI), quick=True)
    spec = study.runs()[0]
    e = next(x for x in study.experiments if x.name == spec.experiment)
    out = execute_run(_spec_to_dict(spec), e.measures, True, True)
    front = ["run_id", "experiment", "repetition", "seed", *(f"p_{k}" for k in spec.params)]
    res = aqmlab.run(spec.scenario, seed=spec.seed)
    for name, own in [("flows", res.flows), ("queues", res.queues), ("samples", res.samples)]:
        df = out[name]
        assert list(df.columns) == front + list(own.columns), name
        assert len(df) == len(own) > 0
        assert (df["run_id"] == spec.run_id).all() and (df["seed"] == spec.seed).all()
        for k, v in spec.params.items():
            assert (df[f"p_{k}"] == v).all()
        ref = own.copy()
        for k, v in reversed([("run_id", spec.run_id), ("experiment", spec.experiment), ("repetition", spec.repetition),
                              ("seed", spec.seed), *((f"p_{k}", v) for k, v in spec.params.items())]):
            ref.insert(0, k, v)
        assert list(df.dtypes[: len(front)]) == list(ref.dtypes[: len(front)]), name


@pytest.mark.parametrize("study_name, experiments", [
    ("residential", ["rrul", "voip", "web", "rtt_fairness", "wifi"]),  # samples; Flent series; none
    ("saturated-tcp", ["dynamics"]),  # keep_series
])
def test_worker_files_are_those_of_the_tables(study_name, experiments, monkeypatch):
    """A sweep's worker builds the data tables as pyarrow tables straight from the
    simulator's columns (runner._arrow_tables), reusing the schema pyarrow gave the first
    run of the same columns: every file must be byte for byte what encoding
    execute_run's DataFrames gives, both for that first run and for the later ones."""
    from aqmlab import runner, store
    from aqmlab.runner import _encoded_run, _spec_to_dict, execute_run

    monkeypatch.setattr(runner, "_SCHEMAS", {})
    study = load_study(study_name, quick=True)
    exp = {e.name: e for e in study.experiments}
    specs = []
    for name in experiments:
        got = [s for s in study.runs([name]) if s.repetition == 0][:3]
        specs += got
    assert len(specs) >= 3 * len(experiments) - 2
    fast_calls = 0
    orig = runner._first_tables

    def first(*a, **k):
        nonlocal fast_calls
        fast_calls -= 1
        return orig(*a, **k)

    monkeypatch.setattr(runner, "_first_tables", first)
    seen: set[str] = set()
    for s in specs:
        d = _spec_to_dict(s)
        d["scenario"] = dict(d["scenario"], run=dict(d["scenario"]["run"], duration="3s", warmup="1s"))
        e = exp[s.experiment]
        args = (d, e.measures, bool(e.keep_series), bool(e.keep_samples))
        for _ in range(2):  # the second time always from the kept schemas
            fast_calls += 1
            files = _encoded_run(*args)
            seen |= set(files)
            ref = store.encode_run(execute_run(*args))
            assert set(files) == set(ref), s.experiment
            for name in ref:
                if name != "runs":  # wall time differs
                    assert files[name] == ref[name], (s.experiment, s.params, name)
            runs = pd.read_parquet(io.BytesIO(files["runs"])).drop(columns=WALL)
            want = pd.read_parquet(io.BytesIO(ref["runs"])).drop(columns=WALL)
            pd.testing.assert_frame_equal(runs, want)
            # the runs row is built from its values with the kept schema: the same schema
            # and pandas metadata as the frame's
            got_s, want_s = (pq.read_schema(io.BytesIO(files["runs"])), pq.read_schema(io.BytesIO(ref["runs"])))
            assert got_s.equals(want_s, check_metadata=True)
    assert fast_calls >= len(specs)  # most runs took the direct path
    assert {"runs", "flows", "queues", "series"} <= seen
    assert any(k[0] == "runs" for k in runner._SCHEMAS)  # the runs rows took it too


def test_runs_row_and_list_keys_leave_other_kinds_to_pandas(monkeypatch):
    """The direct paths cover only columns whose pandas dtype the values decide (int in
    int64, float, str); other values go through the DataFrame, giving what pandas and
    pyarrow make of them, the same for a first and a later row."""
    import pyarrow as pa

    from aqmlab import runner

    monkeypatch.setattr(runner, "_SCHEMAS", {})
    key = runner._lists_key
    assert key("flows", (), {"a": [1, 2], "b": [0.5, float("nan")], "c": ["x", "y"]}) == \
        ("flows", (), ("a", "b", "c"), ("int", "float", "str"))
    for bad in ({"a": [1, 2.5]}, {"a": [2**63, 1]}, {"a": [True, False]}, {"a": ["x", None]}, {"a": []},
                {"a": [1], "b": [1, 2]}):
        assert key("flows", (), bad) is None, bad

    def ref(row):
        return pa.Table.from_pandas(pd.DataFrame([row]), preserve_index=False)

    rows = [{"run_id": "r", "seed": 3, "x": 0.25, "y": float("nan")}, {"run_id": "s", "seed": 4, "x": float("inf"), "y": 1.0},
            {"run_id": "t", "seed": 2**63, "x": 1.0, "y": 1.0}, {"run_id": "u", "seed": 5, "x": True, "y": None}]
    for row in rows + rows:
        got = runner._runs_table(row)
        got = got if isinstance(got, pa.Table) else pa.Table.from_pandas(got, preserve_index=False)
        assert got.equals(ref(row), check_metadata=True), row
        assert store_bytes(got) == store_bytes(ref(row))
    assert sorted(k[2] for k in runner._SCHEMAS) == [("str", "int64", "float64", "float64")]


def store_bytes(t):
    from aqmlab.store.write import arrow_parquet_bytes

    return arrow_parquet_bytes(t)


def test_a_sweep_shares_the_memory_budget_among_its_jobs(tmp_path, monkeypatch):
    """While a local sweep validates and runs, ``AQMLAB_JOBS`` holds its worker count (the
    simulator divides the default memory budget by it; the workers inherit it); the
    previous value is restored afterwards."""
    import aqmlab.runner as R

    seen = []

    def spy(specs, text=""):
        seen.append(os.environ.get("AQMLAB_JOBS"))
        raise RuntimeError("stop after validation")

    monkeypatch.setattr(R, "_validate_all", spy)
    monkeypatch.setenv("AQMLAB_JOBS", "7")
    with pytest.raises(RuntimeError):
        run_study(load_study(str(MINI)), tmp_path / "s", jobs=3, progress=False)
    assert seen == ["3"] and os.environ["AQMLAB_JOBS"] == "7"
    monkeypatch.delenv("AQMLAB_JOBS")
    with pytest.raises(RuntimeError):
        run_study(load_study(str(MINI)), tmp_path / "s", jobs=None, progress=False)
    assert seen[1] == str(os.cpu_count() or 1) and "AQMLAB_JOBS" not in os.environ


def _budget_of(sc: dict) -> str:
    """The memory budget a run of `sc` gets here: the refusal's text, or "accepted"."""
    import aqmlab

    try:
        aqmlab.validate(sc, flow_rows=0)
    except aqmlab.ScenarioError as e:
        return str(e)
    return "accepted"


def test_a_dask_worker_shares_its_memory_limit_among_its_threads(monkeypatch):
    """A Dask worker runs as many tasks at once as it has threads, in one process: each
    run's default budget is half of the worker's memory limit divided by its threads. A
    scenario estimated at ~85 MB is refused on a worker of 300 MB and 2 threads (budget
    75 MB), naming the worker's limit; it fit the whole machine's budget before."""
    distributed = pytest.importorskip("dask.distributed")
    import aqmlab.runner as R

    for k in ("AQMLAB_JOBS", "AQMLAB_WORKER_MEMORY", "AQMLAB_MAX_MEMORY"):
        monkeypatch.delenv(k, raising=False)
    sc = {"run": {"duration": "5s"}, "dumbbell": {"pairs": 1000, "rate": "100Mbit", "delay": "10ms", "qdisc": {"kind": "codel"}},
          "flow": [{"kind": "bulk", "from": "client{i}", "to": "server{i}", "count": 1000}]}
    assert _budget_of(sc) == "accepted"
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, memory_limit="300MB",
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            [(ok, msg)] = client.submit(R._run_batch, [(sc,)], _budget_of, pure=False).result()
    assert ok, msg
    assert "Dask worker's memory limit of 300 MB, shared by 2 parallel jobs" in msg, msg


def test_repeated_tags_are_what_pyarrow_repeat_gives():
    """The tag columns are built from buffers: equal to ``pa.repeat`` of the value (text
    with multi-byte characters, the empty string, large and negative integers, no rows)."""
    import pyarrow as pa

    from aqmlab import runner

    for v, text in (("run-1", True), ("ünïcode ✓", True), ("", True), (2**63 - 1, False), (-7, False), (0, False)):
        for n in (0, 1, 7, 4099):
            got = runner._repeated(v, text, n)
            want = pa.repeat(pa.scalar(v, pa.large_string() if text else pa.int64()), n)
            got.validate(full=True)
            assert got.equals(want) and got.type == want.type and got.null_count == 0, (v, n)
