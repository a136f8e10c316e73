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
from conftest import assert_nontrivial_png

from aqmlab.flent import export_flent, flent_test_for

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
    assert "rrul_be-rrul-fq_codel_10_1-01.flent.gz" in names and "rrul_be-rrul-fifo_10_10-03.flent.gz" in names
    assert "voip-1up-voip-fifo-02.flent.gz" in names
    for p in exported:
        d = _load(p)
        assert d["metadata"]["DATA_FILENAME"] == p.name


def test_rrul_file_contents(exported, synth):
    p = next(p for p in exported if p.name == "rrul_be-rrul-codel_10_10-02.flent.gz")
    d = _load(p)
    md = d["metadata"]
    assert d["version"] == 4 and md["NAME"] == "rrul_be" and md["STEP_SIZE"] == 0.2
    assert md["TITLE"] == "qdisc=codel link=10/10 rep=2" and md["TEST_PARAMETERS"] == {"qdisc": "codel", "link": "10/10"}
    assert md["T0"] == "2026-01-02T03:04:05.000000Z" and md["LENGTH"] == pytest.approx(30.0)
    want = {f"TCP upload BE{s}" for s in ("", "2", "3", "4")} | {f"TCP download BE{s}" for s in ("", "2", "3", "4")}
    want |= {"TCP upload avg", "TCP upload sum", "TCP download avg", "TCP download sum", "TCP totals",
             "Ping (ms) UDP BE1", "Ping (ms) ICMP", "Ping (ms) avg"}
    assert set(d["results"]) == want
    n = len(d["x_values"])
    assert n == 151 and all(len(v) == n for v in d["results"].values())
    assert md["SERIES_META"]["TCP upload BE"]["UNITS"] == "Mbits/s" and md["SERIES_META"]["Ping (ms) ICMP"]["UNITS"] == "ms"
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
    comps = [d["results"][f"TCP download BE{s}"][i] for s in ("", "2", "3", "4")]
    assert d["results"]["TCP download sum"][i] == pytest.approx(sum(comps))
    assert d["results"]["TCP download avg"][i] == pytest.approx(sum(comps) / 4)
    # goodput in Mbit/s from the flow's 1 s bins (bin 10 covers [10, 11) s, raw point at its middle)
    f = synth.series[(synth.series.run_id == rid) & (synth.series.entity == "bulk1.0") & (synth.series.t == 10.0)]
    assert any(abs(x["t"] - t0 - 10.5) < 1e-9 and x["val"] == pytest.approx(f.value.iloc[0] / 1e6) for x in d["raw_values"]["TCP download BE"])


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
    one = d / "rrul_be-rrul-fq_codel_10_10-01.flent.gz"
    log = _run_flent(exe, ["-i", str(one), "-p", "all_scaled", "-o", str(tmp_path / "all.png")], d)
    assert_nontrivial_png(tmp_path / "all.png", min_bytes=20_000)
    many = sorted(d.glob("rrul_be-rrul-*_10_10-*.flent.gz"))
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
