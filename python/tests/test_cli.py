"""The `aqmlab` command end to end: numbers, determinism, output files, listings, help."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import FIFO_OVERLOAD, PING_RTTS, SPREAD

# 100 packets of 1500 B IP + 14 B Ethernet framing at 10 Mbit/s.
EXPECTED_SOJOURN = 100 * 1514 * 8 / 10e6


@pytest.fixture(scope="module")
def overload_json():
    from conftest import run_cli

    p = run_cli("run", FIFO_OVERLOAD, "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_run_json_fifo_overload_matches_queueing_theory(overload_json):
    j = overload_json
    for key in ("flows", "queues", "probes", "events", "wall_seconds"):
        assert key in j
    assert isinstance(j["flows"], list) and isinstance(j["queues"], list) and isinstance(j["probes"], list)
    q = next(q for q in j["queues"] if q["name"] == "bottleneck_up")
    assert q["utilization"] >= 0.999
    assert abs(q["dropped"] / q["arrivals"] - 0.5) < 0.01
    assert q["drops_overlimit"] == q["dropped"]
    assert abs(q["sojourn_mean"] - EXPECTED_SOJOURN) / EXPECTED_SOJOURN < 0.01
    f = j["flows"][0]
    assert f["kind"] == "cbr"
    assert abs(f["loss_rate"] - 0.5) < 0.01
    # goodput = half the offered 20 Mbit/s of IP packets, as UDP payload (1472 of 1514 wire bytes)
    assert f["goodput_bps"] == pytest.approx(10e6 * 1472 / 1514, rel=0.01)
    assert j["events"] > 0 and j["wall_seconds"] > 0
    assert j["probes"] == []


def test_run_json_has_no_nan(overload_json):
    # strict JSON: NaN is written as null; an idle queue's sojourn statistics are NaN
    idle = next(q for q in overload_json["queues"] if q["arrivals"] == 0)
    assert idle["sojourn_max"] is None


def test_run_json_reports_probes():
    from conftest import run_cli

    p = run_cli("run", PING_RTTS, "--json")
    assert p.returncode == 0, p.stderr
    probes = json.loads(p.stdout)["probes"]
    assert [x["name"] for x in probes] == ["ping0.0", "ping0.1", "ping0.2"]
    for x, one_way_ms in zip(probes, (15, 35, 105)):
        assert x["rtt_samples"] >= 49
        assert x["rtt_min"] == pytest.approx(2 * one_way_ms * 1e-3, abs=0.5e-3)
        # idle path: every RTT equal but for the host jitter (0-50 us at each end host)
        assert x["rtt_mean"] == pytest.approx(x["rtt_min"], abs=2 * 50e-6)


def _without_wall(text: str) -> dict:
    j = json.loads(text)
    assert j.pop("wall_seconds") > 0
    return j


def test_same_seed_gives_identical_json(cli, tmp_path):
    sc = tmp_path / "spread.toml"
    sc.write_text(SPREAD)
    a = cli("run", sc, "--json", "--seed", "5")
    b = cli("run", sc, "--json", "--seed", "5")
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert _without_wall(a.stdout) == _without_wall(b.stdout)


def test_different_seeds_differ_where_random(cli, tmp_path):
    sc = tmp_path / "spread.toml"
    sc.write_text(SPREAD)
    a = _without_wall(cli("run", sc, "--json", "--seed", "1").stdout)
    b = _without_wall(cli("run", sc, "--json", "--seed", "2").stdout)
    starts_a = [f["start"] for f in a["flows"]]
    starts_b = [f["start"] for f in b["flows"]]
    assert all(0 <= s < 1 for s in starts_a + starts_b)
    assert starts_a != starts_b
    # the topology is deterministic: the same idle-path RTT whatever the seed, but for
    # the host jitter (0-50 us at each end host)
    assert [p["rtt_min"] for p in a["probes"]] == pytest.approx([p["rtt_min"] for p in b["probes"]], abs=2 * 50e-6)


def test_run_out_writes_readable_parquet(cli, tmp_path):
    out = tmp_path / "res"
    p = cli("run", FIFO_OVERLOAD, "--out", out, "--quiet")
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    flows = pd.read_parquet(out / "flows.parquet")
    queues = pd.read_parquet(out / "queues.parquet")
    series = pd.read_parquet(out / "series.parquet")
    samples = pd.read_parquet(out / "samples.parquet")
    hist = pd.read_parquet(out / "sojourn_hist.parquet")
    assert list(flows["name"]) == ["cbr0"]
    assert "bottleneck_up" in set(queues["name"])
    assert set(series["metric"].astype(str)) >= {"goodput_bps", "tx_bps", "sojourn_mean", "drops", "backlog_max"}
    # 20 s in 0.2 s bins: 100 goodput bins for the one flow
    g = series[(series["entity"] == "cbr0") & (series["metric"] == "goodput_bps")]
    assert len(g) == 100 and g["t"].iloc[1] == pytest.approx(0.2)
    assert len(samples) == 0  # CBR records no samples unless record_delay = true
    bq = hist[hist["queue"] == "bottleneck_up"]
    assert bq["count"].sum() == queues.set_index("name").loc["bottleneck_up", "sojourn_n"]
    assert (out / "scenario.toml").read_text() == FIFO_OVERLOAD.read_text()
    meta = json.loads((out / "meta.json").read_text())
    assert meta["aqmlab_version"] and meta["seed"] == 1 and "flows.parquet" in meta["files"]


def test_run_prints_summary_tables(cli):
    p = cli("run", FIFO_OVERLOAD)
    assert p.returncode == 0, p.stderr
    for word in ("flows", "queues", "cbr0", "bottleneck_up", "fifo", "client0 → server0"):
        assert word in p.stdout


def test_validate(cli, tmp_path):
    p = cli("validate", PING_RTTS)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("ok: ping-rtts: 8 nodes, 14 links, 3 flows")
    one_file = tmp_path / "one.toml"
    one_file.write_text(
        '[[node]]\nname = "a"\nkind = "host"\n[[node]]\nname = "b"\nkind = "host"\n'
        '[[link]]\nfrom = "a"\nto = "b"\nrate = "1Mbit"\nduplex = false\n'
        '[[flow]]\nkind = "cbr"\nfrom = "a"\nto = "b"\nrate = "100kbit"\n'
    )
    one = cli("validate", one_file)
    assert one.stdout.startswith("ok: "), one.stderr
    assert ": 2 nodes, 1 link, 1 flow; " in one.stdout
    j = json.loads(cli("validate", PING_RTTS, "--json").stdout)
    assert [f["name"] for f in j["flows"]] == ["ping0.0", "ping0.1", "ping0.2"]
    assert {n["name"] for n in j["nodes"]} >= {"router_a", "router_b", "client2", "server2"}


def test_list_and_describe(cli):
    p = cli("list", "qdiscs")
    assert p.returncode == 0 and "fifo" in p.stdout.split("\n")
    w = cli("list", "workloads").stdout.split()
    assert {"cbr", "ping", "udp_rr"} <= set(w)
    v = cli("list", "workloads", "--verbose").stdout
    assert any(line.startswith("ping") and "probe" in line for line in v.splitlines())
    for cat in ("cc", "studies"):
        r = cli("list", cat)
        assert r.returncode == 0, r.stderr
    d = cli("describe", "fifo")
    assert d.returncode == 0 and "limit = 1000" in d.stdout
    d = cli("describe", "cbr")
    assert "rate = required" in d.stdout
    d = cli("describe", "tcp")
    assert d.returncode == 0, d.stderr
    for key in ("stack = linux", "ss_growth = segments", "ca_growth = segments", "recovery = prr"):
        assert key in d.stdout, d.stdout
    for profile in ("linux-3.14", "linux-2.6.29", "ns2-sack1", "ns3"):
        assert f"\n  {profile}\n" in d.stdout, d.stdout
    bad = cli("describe", "fiffo")
    assert bad.returncode == 2 and bad.stderr.startswith("error: kind: unknown kind 'fiffo'")
    assert "links: link, dumbbell, shaper, htb, tbf, wifi" in bad.stderr


def test_describe_every_kind_reads(cli):
    """Every listed kind (link models too) is describable; every parameter line is
    'name = default' with a default (voip once printed 'codec_delay = = interval')."""
    import aqmlab

    links = cli("list", "links", "-v").stdout
    assert {line.split()[0] for line in links.splitlines()} >= {"link", "dumbbell", "htb", "tbf", "wifi", "docsis"}
    kinds = [k for cat in ("qdiscs", "workloads", "cc", "links") for k, _ in aqmlab.kinds(cat)] + ["tcp"]
    for k in kinds:
        d = aqmlab.describe(k)
        assert d["kind"] == k and d["about"]
        for p in d["params"]:
            assert p["default"].strip() and not p["default"].startswith("="), (k, p)
    out = {k: cli("describe", k).stdout for k in ("voip", "htb", "wifi", "cubic")}
    assert "codec_delay = same as interval" in out["voip"] and "= =" not in out["voip"]
    assert "kind = htb" in out["htb"] and "burst = max(mtu + overhead, 1 ms at rate)" in out["htb"]
    assert "rate = link_budget" in out["wifi"] and "ap_mcs = from rate (fixed: 15)" in out["wifi"]
    assert "station_driver = iwlwifi" in out["wifi"]
    assert "aqmlab describe tcp" in out["cubic"]
    assert all(len(line) <= 100 for text in out.values() for line in text.splitlines())
    bad = cli("list", "colours")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("cmd", [[], ["run"], ["validate"], ["list"], ["describe"]])
def test_every_command_has_help_with_an_example(cli, cmd):
    p = cli(*cmd, "--help")
    assert p.returncode == 0, p.stderr
    assert "Example" in p.stdout and "aqmlab" in p.stdout


def test_console_script_is_installed():
    exe = shutil.which("aqmlab", path=str(Path(sys.executable).parent))
    assert exe is not None, "the `aqmlab` console script is not installed next to python"
    import subprocess

    p = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("aqmlab ")


def test_missing_file_is_one_line_error(cli, tmp_path):
    p = cli("run", tmp_path / "nope.toml")
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("error: cannot read scenario file")


def test_bad_seed_and_bad_option(cli):
    p = cli("run", FIFO_OVERLOAD, "--seed", "-1")
    assert p.returncode == 2 and p.stderr.startswith("error: seed:")
    p = cli("run", FIFO_OVERLOAD, "--colour")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--colour" in p.stderr


def test_ctrl_c_stops_a_long_run_with_one_line(tmp_path):
    import os
    import signal
    import subprocess
    import time

    # ~80k packets per simulated second for an hour of simulated time: far longer than the test waits.
    long = tmp_path / "long.toml"
    long.write_text(
        '[run]\nduration = "60min"\n[dumbbell]\nrate = "1Gbit"\n'
        '[[flow]]\nkind = "cbr"\nfrom = "client0"\nto = "server0"\nrate = "1Gbit"\n'
    )
    env = {k: v for k, v in os.environ.items() if k != "AQMLAB_DEBUG"}

    def default_sigint() -> None:
        # a test run started in the background by a non-interactive shell inherits SIGINT
        # ignored, and Python then leaves it ignored (as it should: nohup'd jobs keep
        # running); the child here must see Ctrl-C as a terminal user's process would
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    p = subprocess.Popen(
        [sys.executable, "-m", "aqmlab", "run", str(long)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=default_sigint,
    )
    time.sleep(1.5)
    assert p.poll() is None, p.communicate()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130
    assert err == "error: interrupted\n" and out == ""


def test_list_studies_from_a_directory(tmp_path):
    import os
    import subprocess

    (tmp_path / "saturated-tcp.toml").write_text('[study]\ndescription = "bulk TCP flows through each AQM"\n')
    (tmp_path / "residential.toml").write_text("[run]\n")
    env = dict(os.environ, AQMLAB_STUDIES=str(tmp_path))
    p = subprocess.run([sys.executable, "-m", "aqmlab", "list", "studies"], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    names = p.stdout.split()
    assert "residential" in names and "saturated-tcp" in names
    assert names == sorted(names)
    v = subprocess.run([sys.executable, "-m", "aqmlab", "list", "studies", "-v"], capture_output=True, text=True, env=env, timeout=60)
    assert any(line.startswith("saturated-tcp") and line.endswith("bulk TCP flows through each AQM") for line in v.stdout.splitlines())


def test_an_interrupted_sweep_says_what_it_kept_and_how_to_resume(tmp_path):
    """Ctrl-C during `aqmlab sweep`: exit 130 with one sentence that counts the runs the
    store keeps and says that the same command resumes."""
    import os
    import signal
    import subprocess
    import time

    study = tmp_path / "s.toml"
    study.write_text(
        '[study]\nname = "s"\n[base]\ndumbbell = { rate = "1Gbit" }\n'
        'flow = [ { kind = "cbr", from = "client0", to = "server0", rate = "1Gbit" } ]\n'
        '[[experiment]]\nname = "e"\n  [[experiment.axis]]\n  name = "length"\n  path = "run.duration"\n'
        '  values = ["1s", "60min"]\n'
    )
    out = tmp_path / "store"
    env = {k: v for k, v in os.environ.items() if k != "AQMLAB_DEBUG"}
    p = subprocess.Popen([sys.executable, "-m", "aqmlab", "sweep", str(study), "--out", str(out), "-j", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not list((out / "runs").glob("*.parquet")) and p.poll() is None and time.monotonic() < deadline:  # the 1 s run is stored
        time.sleep(0.2)
    time.sleep(0.5)
    assert p.poll() is None, p.communicate()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert err.splitlines()[-1] == (f"error: interrupted: 1 of 2 runs are stored in {out}; run the same command again to resume "
                                    "(finished runs are not run again)")


def test_a_wrong_folder_or_study_name_says_what_it_is(tmp_path):
    """A user's slips with folders and study names get one sentence each, naming what the
    argument is and what fits: a missing folder, a file, a folder of run folders (report
    and plot take a store or one `run --out` folder), a study file that does not exist
    (not 'unknown study'), and a misspelt shipped study's name."""
    from conftest import run_cli

    runs = tmp_path / "runs"
    sc = tmp_path / "s.toml"
    sc.write_text('[run]\nduration = "1s"\n[dumbbell]\nrate = "10Mbit"\n[[flow]]\nkind = "ping"\nfrom = "client0"\nto = "server0"\n')
    assert run_cli("run", str(sc), "--out", str(runs / "fifo"), "--quiet").returncode == 0
    cases = [
        (("plot", str(tmp_path / "nothere")), f"error: {tmp_path / 'nothere'}: no such folder"),
        (("report", str(sc)), f"error: {sc} is a file, not a folder: give a result store folder or an `aqmlab run --out` folder"),
        (("report", str(runs)), f"error: {runs} is neither an aqmlab result store (no runs/ folder) nor an `aqmlab run --out` folder "
                                f"(no flows.parquet); it holds 1 such folder(s) one level down: give one, e.g. {runs / 'fifo'}"),
        (("sweep", str(tmp_path / "mine.toml")), f"error: cannot read study file '{tmp_path / 'mine.toml'}': No such file or directory"),
        (("reproduce", "residental"), "error: unknown study 'residental', did you mean 'residential'?"),
    ]
    for args, want in cases:
        r = run_cli(*args)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, (args, r.stderr)
        assert r.stderr.startswith(want), (args, r.stderr)
