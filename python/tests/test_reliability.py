"""Reliability: every input is run within bounded resources or refused with an error that
names its field; CLI user errors exit 2 before any work; a run that kills its worker is
recorded as that run's failure and the sweep goes on."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

import aqmlab
from aqmlab import runner
from aqmlab.runner import run_study
from aqmlab.store import finished_runs
from aqmlab.study import load_study

from conftest import FIFO_OVERLOAD

MINI = Path(__file__).parent / "data" / "mini_study.toml"
BASE = FIFO_OVERLOAD.read_text()


def _with_run(extra: str) -> str:
    return BASE.replace('warmup = "2s"', 'warmup = "2s"\n' + extra)


# -- every error names its field ------------------------------------------------------------


def test_deeply_nested_dict_is_a_scenario_error_naming_the_path():
    d: dict = {}
    cur = d
    for _ in range(300):
        cur["a"] = {}
        cur = cur["a"]
    with pytest.raises(aqmlab.ScenarioError) as ei:
        aqmlab.validate(d)
    assert ei.value.field.startswith("a.a.a") and "nested more than" in ei.value.message


@pytest.mark.parametrize("text", ["[run]\nname = " + "[" * 5000 + "]" * 5000, "x = " + "{a = " * 5000 + "1" + "}" * 5000])
def test_deeply_nested_text_is_a_scenario_error(text):
    with pytest.raises(aqmlab.ScenarioError):
        aqmlab.validate(text)
    with pytest.raises(aqmlab.ScenarioError):
        aqmlab.load_scenario(text).to_dict()


def test_huge_int_in_a_dict_names_the_field():
    sc = aqmlab.load_scenario(BASE).to_dict()
    sc["dumbbell"]["qdisc"]["limit"] = 2**70
    with pytest.raises(aqmlab.ScenarioError) as ei:
        aqmlab.validate(sc)
    assert ei.value.field == "dumbbell.qdisc.limit" and str(2**70) in ei.value.message


@pytest.mark.parametrize(
    "line,field",
    [
        ("seed = 99999999999999999999", "run.seed"),
        ("duration = 99999999999999999999", "run.duration"),
        ("bin = -99999999999999999999", "run.bin"),
    ],
)
def test_huge_int_in_text_names_the_field(line, field):
    text = _with_run(line).replace('duration = "20s"\n', "") if "duration" in line else _with_run(line)
    with pytest.raises(aqmlab.ScenarioError) as ei:
        aqmlab.validate(text)
    assert ei.value.field == field, str(ei.value)


def test_huge_int_in_an_inline_table_names_the_field():
    text = BASE.replace("limit = 100", "limit = 99999999999999999999")
    with pytest.raises(aqmlab.ScenarioError) as ei:
        aqmlab.validate(text)
    assert ei.value.field == "dumbbell.qdisc.limit", str(ei.value)


@pytest.mark.parametrize("array", ["[[0, 99999999999999999999]]", '[["0s", "1s"], [2, 18446744073709551616]]'])
def test_huge_int_in_an_inline_array_names_the_field(array):
    """Issue 40: an integer of 2**63 or more inside an inline array gave an empty field."""
    text = _with_run(f"packet_trace = {array}")
    with pytest.raises(aqmlab.ScenarioError) as ei:
        aqmlab.validate(text)
    assert ei.value.field == "run.packet_trace", str(ei.value)


@pytest.mark.parametrize("seed", [2**63 - 1, 2**63, 2**64 - 1])
def test_run_seed_reaches_2_64_minus_1_as_a_string(seed):
    plan = aqmlab.validate(_with_run(f'seed = "{seed}"'))
    assert plan["seed"] == seed
    # the same as the seed argument
    a = aqmlab.run(
        _with_run(f'seed = "{seed}"\nduration = "1s"').replace('duration = "20s"\n', "").replace('warmup = "2s"', 'warmup = "0s"')
    )
    b = aqmlab.run(_with_run('duration = "1s"').replace('duration = "20s"\n', "").replace('warmup = "2s"', 'warmup = "0s"'), seed=seed)
    assert a.seed == b.seed == seed


@pytest.mark.parametrize("value", ['"-1"', '"18446744073709551616"', '"abc"', "-1", "1.5"])
def test_bad_run_seed_names_the_field(value):
    with pytest.raises(aqmlab.ScenarioError) as ei:
        aqmlab.validate(_with_run(f"seed = {value}"))
    assert ei.value.field == "run.seed", str(ei.value)


# -- CLI user errors: exit 2, one line, before any work --------------------------------------


def _one_line_exit_2(p, *words):
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    assert "Traceback" not in p.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_run_out_under_a_file(cli, tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    # a 1000 s scenario: the check must come before the simulation (the timeout catches it)
    sc = tmp_path / "long.toml"
    sc.write_text(BASE.replace('duration = "20s"', 'duration = "1000s"'))
    _one_line_exit_2(cli("run", sc, "--out", f / "sub", timeout=30), "--out", "is a file")
    _one_line_exit_2(cli("run", sc, "--out", f, timeout=30), "--out", "is a file")


def test_run_out_unwritable(cli, tmp_path):
    sc = tmp_path / "long.toml"
    sc.write_text(BASE.replace('duration = "20s"', 'duration = "1000s"'))
    _one_line_exit_2(cli("run", sc, "--out", "/proc/aqmlab-no/such", timeout=30), "--out", "cannot write")


def test_sweep_binary_file(cli, tmp_path):
    b = tmp_path / "study.toml"
    b.write_bytes(bytes(range(256)) * 4)
    _one_line_exit_2(cli("sweep", b, "--out", tmp_path / "o", timeout=30), "not a TOML study file")


@pytest.mark.parametrize("addr", ["garbage", "tcp://host:notaport"])
def test_sweep_bad_scheduler(cli, tmp_path, addr):
    _one_line_exit_2(cli("sweep", MINI, "--scheduler", addr, "--out", tmp_path / "o", timeout=60), "--scheduler")
    assert not (tmp_path / "o" / "runs").exists()


# -- a run that kills its worker is that run's failure; the sweep goes on --------------------

_REAL_EXECUTE = runner._run_and_row  # where every run of a sweep (pool, serial or Dask) simulates


def _killing_execute(spec, *args):
    """runner._run_and_row, except that the fifo/20M runs SIGKILL their own worker process."""
    if spec["params"] == {"qdisc": "fifo", "rate": "20M"}:
        os.kill(os.getpid(), signal.SIGKILL)
    return _REAL_EXECUTE(spec, *args)


def _raising_execute(spec, *args):
    if spec["params"] == {"qdisc": "fq_codel", "rate": "50M"}:
        raise aqmlab.SimulationError("boom in the simulator")
    return _REAL_EXECUTE(spec, *args)


@pytest.mark.skipif(os.name != "posix", reason="fork start method needed to patch the workers")
def test_dead_worker_is_that_runs_failure_and_the_sweep_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "_run_and_row", _killing_execute)
    study = load_study(str(MINI), quick=True)
    s = run_study(study, tmp_path / "o", jobs=2, progress=False)
    bad = [sp.run_id for sp in study.runs() if sp.params == {"qdisc": "fifo", "rate": "20M"}]
    assert s.failed == sorted(bad) and s.ran == len(study.runs()) - len(bad)
    assert set(finished_runs(tmp_path / "o")) == {sp.run_id for sp in study.runs()} - set(bad)
    for rid in bad:
        info = json.loads((tmp_path / "o" / "failed" / f"{rid}.json").read_text())
        assert "died" in info["error"] and info["params"] == {"qdisc": "fifo", "rate": "20M"}
        saved = aqmlab.validate(tmp_path / "o" / "failed" / f"{rid}.toml")
        assert saved["links"]  # the saved scenario is the run's, valid on its own
    # the next sweep retries only the failed run(s)
    monkeypatch.setattr(runner, "_run_and_row", _REAL_EXECUTE)
    s2 = run_study(study, tmp_path / "o", jobs=2, progress=False)
    assert s2.ran == len(bad) and not s2.failed


def test_a_raising_run_is_recorded_and_the_sweep_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "_run_and_row", _raising_execute)
    study = load_study(str(MINI), quick=True)
    s = run_study(study, tmp_path / "o", jobs=1, progress=False)
    assert len(s.failed) == 1 and s.ran == len(study.runs()) - 1
    info = json.loads((tmp_path / "o" / "failed" / f"{s.failed[0]}.json").read_text())
    assert "boom in the simulator" in info["error"]


def test_a_raising_run_on_dask_is_recorded_and_the_sweep_goes_on(tmp_path, monkeypatch):
    """On a Dask cluster too, a run that raised is recorded as failed and every other run
    is stored."""
    distributed = pytest.importorskip("dask.distributed")
    monkeypatch.setattr(runner, "_run_and_row", _raising_execute)
    study = load_study(str(MINI), quick=True)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            s = run_study(study, tmp_path / "o", scheduler=client, progress=False)
    assert len(s.failed) == 1 and s.ran == len(study.runs()) - 1
    info = json.loads((tmp_path / "o" / "failed" / f"{s.failed[0]}.json").read_text())
    assert "boom in the simulator" in info["error"]
    assert set(finished_runs(tmp_path / "o")) == {sp.run_id for sp in study.runs()} - set(s.failed)


def test_dask_batches_of_runs_keep_failures_per_run(tmp_path, monkeypatch):
    """Several runs per Dask task: a raising run fails alone (the others of its task are
    stored), and a task lost as a whole (its worker died) has its runs submitted again
    one per task, so every run that can finish is stored."""
    distributed = pytest.importorskip("dask.distributed")
    monkeypatch.setattr(runner, "_run_and_row", _raising_execute)
    monkeypatch.setattr(runner, "_dask_batch_size", lambda runs, workers: 2)
    real_batch = runner._run_batch
    marker = tmp_path / "lost.json"  # Dask runs a copy of the task function: note on disk

    def losing_batch(batch):
        if len(batch) > 1:
            try:  # the first multi-run task dies as a whole (O_EXCL: exactly one does)
                fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                return real_batch(batch)
            os.write(fd, json.dumps([a[0]["run_id"] for a in batch]).encode())
            os.close(fd)
            raise RuntimeError("worker died")
        return real_batch(batch)

    monkeypatch.setattr(runner, "_run_batch", losing_batch)
    study = load_study(str(MINI), quick=True)
    assert len(study.runs()) >= 4
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            s = run_study(study, tmp_path / "o", scheduler=client, progress=False)
    lost = [json.loads(marker.read_text())]
    assert len(lost[0]) == 2
    assert len(s.failed) == 1 and s.ran == len(study.runs()) - 1
    info = json.loads((tmp_path / "o" / "failed" / f"{s.failed[0]}.json").read_text())
    assert "boom in the simulator" in info["error"]
    assert set(finished_runs(tmp_path / "o")) == {sp.run_id for sp in study.runs()} - set(s.failed)
    assert set(lost[0]) - set(s.failed) <= set(finished_runs(tmp_path / "o"))
