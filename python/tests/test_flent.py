"""Flent export: test recognition, series names/units/alignment, determinism, and the
real `flent` tool loading and plotting the files (single-file all_scaled, multi-file
box_combine) without an ERROR in its output."""
from __future__ import annotations

import gzip
import json
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from aqmlab.flent import export_flent, flent_test_for

from conftest import assert_nontrivial_png

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _flows(*specs):
    return pd.DataFrame([{"name": f"{k}{i}", "kind": k, "src": s} for i, (k, s) in enumerate(specs)])


def test_test_recognition():
    up, down = ("bulk", "client0"), ("bulk", "server0")
    ping, udp, voip, web = ("ping", "client0"), ("udp_rr", "client0"), ("voip", "client0"), ("web", "client0")
    assert flent_test_for(_flows(up, up, down, down, ping, udp)) == "rrul_be"
    assert flent_test_for(_flows(up, down, ping, voip)) == "voip-rrul"
    assert flent_test_for(_flows(up, down, udp, web)) == "http-rrul"
    assert flent_test_for(_flows(up, voip)) == "voip-1up"
    assert flent_test_for(_flows(voip)) == "voip"
    assert flent_test_for(_flows(up, web)) == "http-1up"
    assert flent_test_for(_flows(web)) == "http"
    assert flent_test_for(_flows(up, up, up, up)) is None  # RTT fairness: no Flent test
    assert flent_test_for(_flows(up, down)) is None  # no latency probes
    # N streams one way with an ICMP ping: Flent's tcp_ndown / tcp_nup
    assert flent_test_for(_flows(down, down, ping)) == "tcp_ndown"
    assert flent_test_for(_flows(up, ping)) == "tcp_nup"
    assert flent_test_for(_flows(down, udp)) is None  # those tests ping with ICMP only
    assert flent_test_for(pd.DataFrame()) is None


@pytest.fixture(scope="module")
def exported(synth_dir, tmp_path_factory) -> list[pathlib.Path]:
    return export_flent(synth_dir, tmp_path_factory.mktemp("flent"))


def _load(p: pathlib.Path) -> dict:
    with gzip.open(p, "rt") as fh:
        return json.load(fh)


def test_files_names_and_grouping(exported, synth):
    r = synth.runs
    assert len(exported) == int((r.experiment == "rrul").sum() + (r.experiment == "voip").sum())
    names = {p.name for p in exported}
    # the synthetic RRUL has one UDP probe: Flent's rrul_be_nflows (see flent_conf_for)
    assert "rrul_be_nflows-rrul-fq_codel_10_1-01.flent.gz" in names and "rrul_be_nflows-rrul-fifo_10_10-03.flent.gz" in names
    assert "voip-1up-voip-fifo-02.flent.gz" in names
    for p in exported:
        d = _load(p)
        assert d["metadata"]["DATA_FILENAME"] == p.name


def test_rrul_file_contents(exported, synth):
    p = next(p for p in exported if p.name == "rrul_be_nflows-rrul-codel_10_10-02.flent.gz")
    d = _load(p)
    md = d["metadata"]
    assert d["version"] == 4 and md["NAME"] == "rrul_be_nflows" and md["STEP_SIZE"] == 0.2
    assert md["TITLE"] == "qdisc=codel link=10/10 rep=2"
    assert md["TEST_PARAMETERS"] == {"qdisc": "codel", "link": "10/10", "upload_streams": "4", "download_streams": "4"}
    assert md["T0"] == "2026-01-02T03:04:05.000000Z" and md["LENGTH"] == pytest.approx(30.0)
    want = {f"TCP {w} BE::{i}" for w in ("upload", "download") for i in (1, 2, 3, 4)}
    want |= {"TCP upload avg", "TCP upload sum", "TCP download avg", "TCP download sum", "TCP totals",
             "Ping (ms) UDP BE", "Ping (ms) ICMP", "Ping (ms) avg"}
    assert set(d["results"]) == want
    n = len(d["x_values"])
    assert n == 151 and all(len(v) == n for v in d["results"].values())
    assert md["SERIES_META"]["TCP upload BE::1"]["UNITS"] == "Mbits/s" and md["SERIES_META"]["Ping (ms) ICMP"]["UNITS"] == "ms"
    # ping raw values are the samples in ms at absolute times
    run = synth.runs[synth.runs.run_id.isin(synth.flows.run_id)]
    rid = run[(run.experiment == "rrul") & (run.p_qdisc == "codel") & (run.p_link == "10/10") & (run.repetition == 1)].run_id.iloc[0]
    s = synth.samples[(synth.samples.run_id == rid) & (synth.samples.entity == "ping2")].sort_values("t")
    raw = d["raw_values"]["Ping (ms) ICMP"]
    t0 = pd.Timestamp("2026-01-02T03:04:05Z").timestamp()
    assert [x["t"] - t0 for x in raw] == pytest.approx(s.t.tolist())
    assert [x["val"] for x in raw] == pytest.approx((s.value * 1e3).tolist())
    # grid values interpolate the raw points; sums add the components
    i = 50  # t = 10.0 s
    assert d["x_values"][i] == pytest.approx(10.0)
    assert d["results"]["Ping (ms) ICMP"][i] == pytest.approx(np.interp(10.0, s.t, s.value * 1e3))
    comps = [d["results"][f"TCP download BE::{k}"][i] for k in (1, 2, 3, 4)]
    assert d["results"]["TCP download sum"][i] == pytest.approx(sum(comps))
    assert d["results"]["TCP download avg"][i] == pytest.approx(sum(comps) / 4)
    # goodput in Mbit/s from the flow's 1 s bins (bin 10 covers [10, 11) s, raw point at its middle)
    f = synth.series[(synth.series.run_id == rid) & (synth.series.entity == "bulk1.0") & (synth.series.t == 10.0)]
    assert any(
        abs(x["t"] - t0 - 10.5) < 1e-9 and x["val"] == pytest.approx(f.value.iloc[0] / 1e6) for x in d["raw_values"]["TCP download BE::1"]
    )


def test_voip_file_recovers_losses_from_send_times(exported, synth):
    p = next(p for p in exported if p.name == "voip-1up-voip-fifo-01.flent.gz")
    d = _load(p)
    assert d["metadata"]["NAME"] == "voip-1up"
    assert {"TCP upload", "VoIP::delay", "VoIP::jitter", "VoIP::loss", "VoIP::induced_delay"} <= set(d["results"])
    raw = d["raw_values"]["VoIP"]
    seqs = [x["seq"] for x in raw]
    lost = (max(seqs) - min(seqs) + 1) - len(seqs)
    r = synth.runs
    rid = r[(r.experiment == "voip") & (r.p_qdisc == "fifo") & (r.repetition == 0)].run_id.iloc[0]
    f = synth.flows[(synth.flows.run_id == rid) & (synth.flows.kind == "voip")].iloc[0]
    assert lost / (max(seqs) + 1) == pytest.approx(f.loss_rate, abs=0.002)
    assert sum(d["results"]["VoIP::loss"]) == lost
    assert d["metadata"]["SERIES_META"]["VoIP"]["PACKET_LOSS_RATE"] == pytest.approx(f.loss_rate)
    assert min(x for x in d["results"]["VoIP::induced_delay"] if x is not None) == 0


def test_export_is_deterministic(synth_dir, exported, tmp_path):
    again = export_flent(synth_dir, tmp_path)
    assert [p.name for p in again] == [p.name for p in exported]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(again, exported))


def _flent() -> str | None:
    """The flent executable: $AQMLAB_FLENT, `flent` on PATH, or the repo's .venv-flent
    (created by scripts/install-flent.sh if missing and PyPI is reachable)."""
    cands = [os.environ.get("AQMLAB_FLENT"), shutil.which("flent"), str(ROOT / ".venv-flent" / "bin" / "flent")]
    for c in cands:
        if c and pathlib.Path(c).exists():
            return c
    script = ROOT / "scripts" / "install-flent.sh"
    try:
        subprocess.run(["bash", str(script)], check=True, timeout=900, capture_output=True)
    except (subprocess.SubprocessError, OSError):
        return None
    c = ROOT / ".venv-flent" / "bin" / "flent"
    return str(c) if c.exists() else None


def _run_flent(exe: str, args: list[str], cwd: pathlib.Path) -> str:
    env = dict(os.environ, MPLBACKEND="Agg", QT_QPA_PLATFORM="offscreen")
    proc = subprocess.run([exe, *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    # flent exits 0 even when it fails to load or plot: its log says ERROR then
    assert "ERROR" not in log and "Traceback" not in log, log
    return log


def test_real_flent_plots_the_files(exported, tmp_path):
    exe = _flent()
    if exe is None:
        pytest.skip("flent is not installed and scripts/install-flent.sh could not install it (no PyPI access?)")
    d = exported[0].parent
    one = d / "rrul_be_nflows-rrul-fq_codel_10_10-01.flent.gz"
    log = _run_flent(exe, ["-i", str(one), "-p", "all_scaled", "-o", str(tmp_path / "all.png")], d)
    assert_nontrivial_png(tmp_path / "all.png", min_bytes=20_000)
    # the test's default plot (all_scaled) needs `-f plot`: without it (nor -p) flent's
    # output is its text summary, written as text even into a file named .png
    log += _run_flent(exe, ["-i", str(one), "-f", "plot", "-o", str(tmp_path / "default.png")], d)
    assert_nontrivial_png(tmp_path / "default.png", min_bytes=20_000)
    log += _run_flent(exe, ["-i", str(one), "-o", str(tmp_path / "summary.png")], d)
    summary = (tmp_path / "summary.png").read_text()
    assert "Summary of rrul_be_nflows test run" in summary and "TCP download sum" in summary, summary
    many = sorted(d.glob("rrul_be_nflows-rrul-*_10_10-*.flent.gz"))
    assert len(many) == 9
    args = [a for p in many for a in ("-i", str(p))]
    log += _run_flent(exe, [*args, "-p", "box_combine", "-o", str(tmp_path / "box.png")], d)
    assert_nontrivial_png(tmp_path / "box.png", min_bytes=20_000)
    voip = sorted(d.glob("voip-1up-*.flent.gz"))
    args = [a for p in voip for a in ("-i", str(p))]
    log += _run_flent(exe, [*args, "-p", "cdf_combine", "-o", str(tmp_path / "voip_cdf.png")], d)
    assert_nontrivial_png(tmp_path / "voip_cdf.png", min_bytes=10_000)
    log += _run_flent(exe, ["-i", str(voip[0]), "-p", "totals_loss", "-o", str(tmp_path / "voip.png")], d)
    assert_nontrivial_png(tmp_path / "voip.png", min_bytes=10_000)
    keep = os.environ.get("AQMLAB_ARTIFACTS")
    if keep:
        pathlib.Path(keep).mkdir(parents=True, exist_ok=True)
        for f in ("all.png", "box.png", "voip_cdf.png", "voip.png"):
            shutil.copy(tmp_path / f, pathlib.Path(keep) / f"flent-{f}")
        (pathlib.Path(keep) / "flent.log").write_text(log)


WEB_ONLY = """
[run]
name = "web-{tag}"
duration = "12s"
[dumbbell]
pairs = 2
rate = "10Mbit"
delay = "10ms"
[[flow]]
kind = "web"
name = "web"
from = "client0"
to = "server0"
{extra}
"""
UPLOAD = '[[flow]]\nkind = "bulk"\nfrom = "client1"\nto = "server1"\n'
# Flent's real, DSCP-marked RRUL through pfifo_fast
RRUL_MARKED = """
[run]
name = "rrul-marked"
duration = "12s"
[dumbbell]
rate = "10Mbit"
delay = "10ms"
qdisc = { kind = "pfifo_fast", limit = 100 }
[[flow]]
kind = "rrul"
from = "client0"
to = "server0"
"""


# two downloads and a ping: Flent's tcp_ndown
TWO_DOWN = """
[run]
name = "two-down"
duration = "12s"
[dumbbell]
pairs = 2
rate = "10Mbit"
delay = "10ms"
[[flow]]
kind = "bulk"
from = "server0"
to = "client0"
[[flow]]
kind = "bulk"
from = "server1"
to = "client1"
[[flow]]
kind = "ping"
from = "client0"
to = "server0"
"""


@pytest.fixture(scope="module")
def run_dirs(tmp_path_factory):
    """`aqmlab run --out` results of an RRUL + web run (http-rrul), a web-only run (http)
    and a web run with one upload (http-1up), exported with `aqmlab export DIR`."""
    from conftest import EXAMPLES, run_cli

    base = tmp_path_factory.mktemp("runs")
    out = {}
    scen = {"http-rrul": EXAMPLES / "rrul_web.toml"}
    for tag, extra in (("http", ""), ("http-1up", UPLOAD)):
        p = base / f"{tag}.toml"
        p.write_text(WEB_ONLY.format(tag=tag, extra=extra))
        scen[tag] = p
    scen["rrul"] = base / "rrul.toml"
    scen["rrul"].write_text(RRUL_MARKED)
    scen["tcp_ndown"] = base / "tcp_ndown.toml"
    scen["tcp_ndown"].write_text(TWO_DOWN)
    for tag, path in scen.items():
        d = base / tag
        r = run_cli("run", path, "--out", d, "--quiet")
        assert r.returncode == 0, r.stderr
        r = run_cli("export", d)  # flent is the default format
        assert r.returncode == 0, r.stderr
        files = sorted((d / "flent").glob("*.flent.gz"))
        assert len(files) == 1, r.stdout
        assert f"{tag}: flent -i" in r.stdout
        out[tag] = files[0]
    return out


def test_export_of_a_single_run_dir(run_dirs):
    d = _load(run_dirs["http-rrul"])
    assert d["metadata"]["NAME"] == "http-rrul"
    res = d["results"]
    # Flent rrul_be's probes: 3 UDP + ICMP
    assert {"Ping (ms) UDP BE1", "Ping (ms) UDP BE2", "Ping (ms) UDP BE3", "Ping (ms) ICMP"} <= set(res)
    # per-interval goodput, not a flat line
    raw = [x["val"] for x in d["raw_values"]["TCP download BE"]]
    assert len(raw) > 20 and len(set(round(v, 6) for v in raw)) > 5
    assert any(v is not None for v in res["HTTP latency"])
    assert _load(run_dirs["http"])["metadata"]["NAME"] == "http"
    assert _load(run_dirs["http-1up"])["metadata"]["NAME"] == "http-1up"


def test_marked_rrul_exports_as_flents_rrul_with_its_series(run_dirs):
    d = _load(run_dirs["rrul"])
    assert d["metadata"]["NAME"] == "rrul"
    res = d["results"]
    per_class = {f"TCP {w} {c}" for w in ("upload", "download") for c in ("BE", "BK", "CS5", "EF")}
    probes = {"Ping (ms) UDP EF", "Ping (ms) UDP BK", "Ping (ms) UDP BE", "Ping (ms) ICMP"}
    assert per_class | probes <= set(res)
    assert not any("BE2" in k or "BE1" in k for k in res)
    # the computed series sum the four classes
    up = [d["metadata"]["SERIES_META"][f"TCP upload {c}"]["MEAN_VALUE"] for c in ("BE", "BK", "CS5", "EF")]
    assert d["metadata"]["SERIES_META"]["TCP upload sum"]["MEAN_VALUE"] == pytest.approx(sum(up))
    assert d["metadata"]["SERIES_META"]["TCP totals"]["MEAN_VALUE"] > sum(up)


def test_runner_keeps_goodput_series_of_flent_runs_without_keep_series():
    from aqmlab.runner import execute_run

    from conftest import EXAMPLES

    text = (EXAMPLES / "rrul_web.toml").read_text().replace('duration = "30s"', 'duration = "6s"')
    spec = {"scenario": text, "seed": 1, "run_id": "r", "experiment": "e", "repetition": 0, "params": {}}
    out = execute_run(spec, [], keep_series=False, keep_samples=True)
    s = out["series"]
    assert set(s["metric"]) == {"goodput_bps"} and set(s["kind"]) == {"flow"}
    assert {"rrul_be0.tcp_up0", "rrul_be0.tcp_down3"} <= set(s["entity"])
    bulk_only = text.split("[[flow]]")[0] + '[[flow]]\nkind = "bulk"\nfrom = "client0"\nto = "server0"\n'
    out = execute_run({**spec, "scenario": bulk_only}, [], keep_series=False, keep_samples=True)
    assert "series" not in out  # no Flent test: nothing kept beyond what was asked


def test_real_flent_plots_web_runs_with_their_default_plots(run_dirs, tmp_path):
    from aqmlab.flent import FLENT_PLOTS

    from conftest import run_cli

    exe = _flent()
    if exe is None:
        pytest.skip("flent is not installed and scripts/install-flent.sh could not install it (no PyPI access?)")
    for tag, f in run_dirs.items():
        png = tmp_path / f"{tag}.png"  # the test's default plot: the one its NAME selects
        _run_flent(exe, ["-i", str(f), "-f", "plot", "-o", str(png)], f.parent)
        assert_nontrivial_png(png, min_bytes=10_000)
        # the command `aqmlab export` prints for the test draws its plot as it says
        r = run_cli("export", f.parent.parent, "--out", tmp_path / tag)
        cmd = next(line.split(": ", 1)[1] for line in r.stdout.splitlines() if line.startswith(f"  {tag}: flent -i "))
        args = cmd.split()[1:]
        assert args[-4:] == ["-p", FLENT_PLOTS[tag], "-o", f"{tag}-{FLENT_PLOTS[tag]}.png"], cmd
        _run_flent(exe, args, tmp_path)
        assert_nontrivial_png(tmp_path / args[-1], min_bytes=10_000)
    # all_scaled exists for the RRUL-based tests
    png = tmp_path / "http-rrul-all.png"
    _run_flent(exe, ["-i", str(run_dirs["http-rrul"]), "-p", "all_scaled", "-o", str(png)], run_dirs["http-rrul"].parent)
    assert_nontrivial_png(png, min_bytes=20_000)


def test_one_way_streams_export_as_flents_tcp_ndown(run_dirs):
    d = _load(run_dirs["tcp_ndown"])
    assert d["metadata"]["NAME"] == "tcp_ndown"
    assert d["metadata"]["TEST_PARAMETERS"]["download_streams"] == "2"
    res = d["results"]
    assert {"TCP download::1", "TCP download::2", "TCP download avg", "TCP download sum", "Ping (ms) ICMP"} <= set(res)
    total = _mean_of(res["TCP download sum"])
    assert 8.0 < total <= 10.0, total  # two downloads fill the 10 Mbit/s link
    assert _mean_of(res["Ping (ms) ICMP"]) > 20.0  # above the 20 ms base RTT: queueing


def _mean_of(vals: list) -> float:
    v = [x for x in vals if x is not None]
    return sum(v) / len(v)


def test_an_experiment_naming_tcp_nup_exports_streams_between_hosts_of_any_name(tmp_path):
    """A custom topology's hosts are not named client*/server*, so no Flent test is
    recognised from its flows; `flent = "tcp_nup"` on the experiment makes every bulk
    flow an upload stream of the test, and the runs keep the goodput series it draws."""
    from aqmlab.runner import run_study
    from aqmlab.study import parse_study

    text = """
[study]
name = "home"
[base]
run = { duration = "4s", warmup = "1s" }
[[base.node]]
name = "nas"
kind = "host"
[[base.node]]
name = "cpe"
kind = "router"
[[base.node]]
name = "cloud"
kind = "host"
[[base.link]]
from = "nas"
to = "cpe"
rate = "1Gbit"
[[base.link]]
name = "uplink"
from = "cpe"
to = "cloud"
rate = "10Mbit"
delay = "10ms"
[[base.flow]]
kind = "bulk"
name = "up"
count = 2
from = "nas"
to = "cloud"
[[base.flow]]
kind = "ping"
from = "nas"
to = "cloud"
[[experiment]]
name = "e"
flent = "tcp_nup"
"""
    out = tmp_path / "store"
    run_study(parse_study(text), out, jobs=1, progress=False)
    paths = export_flent(out, tmp_path / "flent")
    assert len(paths) == 1
    d = _load(paths[0])
    assert d["metadata"]["NAME"] == "tcp_nup"
    assert d["metadata"]["TEST_PARAMETERS"]["upload_streams"] == "2"
    res = d["results"]
    # per-bin series, not each flow's mean drawn flat
    up1 = [x for x in res["TCP upload::1"] if x is not None]
    assert len(set(up1)) > 5, up1[:10]
    assert 8.0 < _mean_of(res["TCP upload sum"]) <= 10.0


def test_why_a_run_makes_no_flent_test():
    """The clause that says what a run's flows lack for the nearest Flent test; empty
    when they make one."""
    from aqmlab.flent import why_no_test

    c, s = "client0", "server0"
    assert why_no_test(["bulk", "bulk", "ping"], [c, s, c]) == ""
    assert "voip-rrul needs a latency probe" in why_no_test(["bulk", "bulk", "voip"], [c, s, c])
    assert "1 upstream and 1 downstream" in why_no_test(["bulk", "bulk", "voip"], [c, s, c])
    assert "rrul_be needs a ping or udp_rr flow" in why_no_test(["bulk", "bulk"], [c, s])
    assert "tcp_nup needs one" in why_no_test(["bulk", "udp_rr"], [c, c])
    assert "tcp_ndown needs one" in why_no_test(["bulk"], [s])
    assert "http-1up exactly one upstream bulk flow" in why_no_test(["web", "bulk", "bulk"], [c, c, c])
    assert "its kinds: cbr" in why_no_test(["cbr"], [c])


def test_a_run_folder_without_a_flent_test_is_an_error_saying_why(tmp_path):
    """`aqmlab export RUNDIR` of a run with bulk flows both ways and a VoIP call but no
    probe: exit 2, one line naming what voip-rrul needs, and no folder written."""
    from conftest import run_cli

    sc = tmp_path / "call.toml"
    sc.write_text('[run]\nduration = "2s"\n[dumbbell]\nrate = "10Mbit"\n'
                  '[[flow]]\nkind = "bulk"\nfrom = "client0"\nto = "server0"\n'
                  '[[flow]]\nkind = "bulk"\nfrom = "server0"\nto = "client0"\n'
                  '[[flow]]\nkind = "voip"\nfrom = "client0"\nto = "server0"\n')
    d = tmp_path / "run"
    assert run_cli("run", str(sc), "--out", str(d), "--quiet").returncode == 0
    r = run_cli("export", str(d))
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1
    assert "no Flent test matches this run" in r.stderr and "voip-rrul needs a latency probe (ping or udp_rr)" in r.stderr
    assert not (d / "flent").exists()
