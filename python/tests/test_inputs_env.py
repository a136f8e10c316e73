"""Bounded inputs and environment failures: input files must be regular files of at most
16 MiB; a full disk or read-only folder exits 2 with one sentence; aqmlab raises its own
errors (StudyError is an AqmlabError; a lone surrogate is a ScenarioError)."""
from __future__ import annotations

import errno
import os
import pathlib
import subprocess
import sys
import time

import pytest

import aqmlab
from aqmlab import inputs
from aqmlab.cli import _environment_failure, main
from aqmlab.errors import AqmlabError, ScenarioError, StudyError
from aqmlab.study import load_study, parse_study

from conftest import FIFO_OVERLOAD

MINI = pathlib.Path(__file__).parent / "data" / "mini_study.toml"


def _cli(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    env = os.environ | {"PYTHONPATH": str(pathlib.Path(aqmlab.__file__).parent.parent)}
    return subprocess.run([sys.executable, "-m", "aqmlab", *args], capture_output=True, text=True, timeout=timeout, env=env)


def test_run_dev_zero_exits_2_fast():
    t0 = time.monotonic()
    r = _cli(["run", "/dev/zero"], timeout=30)
    assert r.returncode == 2 and "a device" in r.stderr and "/dev/zero" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and time.monotonic() - t0 < 20


@pytest.mark.parametrize("kind", ["fifo", "dir"])
def test_fifo_and_folder_are_refused_without_blocking(tmp_path, kind):
    p = tmp_path / "x.toml"
    if kind == "fifo":
        os.mkfifo(p)
    else:
        p.mkdir()
    with pytest.raises(ScenarioError, match="FIFO" if kind == "fifo" else "a folder"):
        aqmlab.load_scenario(p)
    with pytest.raises(StudyError, match="regular"):
        load_study(str(p))


def test_size_limit_and_force(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs, "MAX_INPUT_BYTES", 1000)
    p = tmp_path / "big.toml"
    p.write_text(FIFO_OVERLOAD.read_text() + "#" * 2000 + "\n")
    with pytest.raises(ScenarioError, match="larger than .*--force"):
        aqmlab.load_scenario(p)
    assert aqmlab.load_scenario(p, force=True).name == "fifo-overload"
    with pytest.raises(SystemExit) as ei:
        main(["validate", str(p)])
    assert ei.value.code == 2


def test_study_error_is_an_aqmlab_error():
    assert issubclass(StudyError, AqmlabError) and issubclass(StudyError, ValueError)
    with pytest.raises(AqmlabError):
        parse_study("[study]\n")


def test_lone_surrogate_is_a_clear_error():
    with pytest.raises(ScenarioError, match="lone surrogate U\\+D800 \\(line 2"):
        aqmlab.validate('[run]\nname = "a\ud800"\n')
    d = aqmlab.load_scenario(FIFO_OVERLOAD).to_dict()
    d["run"]["name"] = "x\udcff"
    with pytest.raises(ScenarioError, match="surrogate"):
        aqmlab.validate(d)
    with pytest.raises(StudyError, match="surrogate"):
        parse_study('[study]\nname = "\ud800"\n')


@pytest.mark.parametrize("value", ["no", 0, 1, None])
def test_force_must_be_a_boolean(value):
    with pytest.raises(ScenarioError) as ei:
        aqmlab.validate(FIFO_OVERLOAD, force=value)
    assert ei.value.field == "force"
    with pytest.raises(ScenarioError):
        aqmlab.run(FIFO_OVERLOAD, force=value)


@pytest.mark.parametrize("code,word", [(errno.ENOSPC, "disk is full"), (errno.EROFS, "read-only"),
                                       (errno.EACCES, "permission"), (errno.EIO, "I/O error")])
def test_environment_errors_name_the_path_and_what_to_do(code, word):
    e = _environment_failure(OSError(code, os.strerror(code), "/data/out/runs/x.parquet"))
    assert e is not None and "/data/out/runs/x.parquet" in str(e) and word in str(e)
    assert _environment_failure(OSError(errno.EBADF, "bad fd")) is None  # a bug, not the environment


def test_disk_full_during_a_sweep_exits_2_naming_the_path(tmp_path, monkeypatch, capsys):
    from aqmlab import store

    def full(data, path):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    for m in (store.write, store.meta):  # the run files, the metadata files
        monkeypatch.setattr(m, "write_bytes_durably", full)
    with pytest.raises(SystemExit) as ei:
        main(["sweep", str(MINI), "--quick", "--jobs", "1", "--out", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert ei.value.code == 2 and "disk is full" in err and str(tmp_path / "s") in err, err


MANY = """
[run]
duration = "10s"
[dumbbell]
rate = "10Mbit"
[[flow]]
kind = "cbr"
from = "client0"
to = "server0"
rate = "1kbit"
count = 5000
"""


@pytest.mark.skipif(not aqmlab.scenario._FLOW_ROWS, reason="the compiled extension predates flow_rows (rebuild it)")
def test_validate_builds_only_the_flow_rows_it_shows(tmp_path, capsys):
    """`aqmlab validate` of a million flow instances built a million dicts (1.5 GB): the
    table shows 200 rows, so only those are built; flows_total counts all."""
    plan = aqmlab.validate(MANY, flow_rows=10)
    assert len(plan["flows"]) == 10 and plan["flows_total"] == 5000
    assert plan["flows"][9]["name"] == aqmlab.validate(MANY)["flows"][9]["name"]
    assert len(aqmlab.validate(MANY, flow_rows=0)["flows"]) == 0
    p = tmp_path / "many.toml"
    p.write_text(MANY)
    with pytest.raises(SystemExit) as ei:
        main(["validate", str(p)])
    out = capsys.readouterr().out
    assert ei.value.code == 0 and "5000 flows" in out and "and 4800 more flows" in out
