"""The shipped validation campaign (aqmlab.campaign): its cases, the verdict matrix from
cells, resuming, and an engine that crashes."""

from __future__ import annotations

import json
import math

import pytest

import aqmlab
from aqmlab import campaign
from aqmlab.campaign import CellJob, load_cases, plan, run_campaign
from aqmlab.campaign.report import aggregate, judge, matrix, matrix_markdown, worst
from aqmlab.engines import ENGINES
from aqmlab.errors import AqmlabError


def test_every_case_loads_and_the_simulator_accepts_it():
    cases = load_cases("full")
    assert len(cases) >= 60
    names = {c.name for c in cases}
    # the kernel campaign's cases and the new ones that vary cc, RTT, rate, asymmetry, ECN, mixed RTTs, probes
    for n in (
        "tcp16_codel",
        "rrul",
        "cake_2hosts",
        "bbr4_codel",
        "ns3_codel_ecn",
        "ns3_codel_mixed_rtt",
        "ns3_codel_asym",
        "ns3_cubic_codel",
        "ns3_codel_probes",
        "ns2_tcp16_red",
        "ns2_red_asym",
        "ns2_tcp4_red_rtt100",
        "ns2_tcp16_red_100mbit",
    ):
        assert n in names
    for c in cases:
        assert c.about, c.name
        aqmlab.load_scenario(c.doc).validate()
    quick = load_cases("quick")
    assert {c.name for c in quick} == set(campaign.QUICK) and set(campaign.QUICK) <= names
    assert all(c.doc["run"]["duration"] == campaign.QUICK_DURATION for c in quick)


def test_unknown_mode_or_case_is_named():
    with pytest.raises(ValueError, match="allowed: quick, full"):
        load_cases("fast")
    with pytest.raises(ValueError, match="nope"):
        load_cases("quick", ["ns3_codel", "nope"])


def test_plan_marks_unsupported_and_not_installed():
    cases = load_cases("quick", ["ns3_codel", "ns2_tcp16_red"])
    jobs = plan(cases, ["ns3", "ns2", "linux"], [1, 2], available=lambda e: "linux is not installed: run x" if e == "linux" else None,
                check=lambda e, doc: [] if doc["tcp"]["stack"] == {"ns3": "ns3", "ns2": "ns2-sack1"}[e] else [f"tcp.stack: not {e}"])
    st = {(j.case, j.engine, j.seed): j.status for j in jobs}
    assert len(jobs) == 12
    assert st["ns3_codel", "ns3", 2] is None and st["ns2_tcp16_red", "ns2", 1] is None
    assert st["ns3_codel", "ns2", 1] == "unsupported" and st["ns2_tcp16_red", "ns3", 2] == "unsupported"
    assert st["ns3_codel", "linux", 1] == "not installed"
    assert next(j.why for j in jobs if j.status == "not installed") == "linux is not installed: run x"


def _row(metric, sim, val, verdict, entity="bottleneck_up", section="queue", engine="ns3"):
    return {
        "section": section,
        "entity": entity,
        "metric": metric,
        "sim": sim,
        "engines": {engine: {"value": val, "diff": "", "verdict": verdict}},
    }


def _cell(case, engine, seed, status, rows=(), error=""):
    return {"case": case, "engine": engine, "seed": seed, "status": status, "error": error, "rows": list(rows)}


def test_judge_follows_crosscheck_criteria():
    assert judge("utilisation %", 98.0, 96.0, 0.15) == "ok" and judge("utilisation %", 98.0, 95.9, 0.15) == "DIFF"
    assert judge("sojourn mean ms", 10.0, 11.5, 0.15) == "ok" and judge("sojourn mean ms", 10.0, 11.6, 0.15) == "DIFF"
    assert judge("sojourn mean ms", 0.5, 0.9, 0.05) == "ok"  # both below 1 ms
    assert judge("drop rate % after warm-up", 0.05, 0.09, 0.05) == "ok" and judge("drop rate % after warm-up", 1.0, 1.06, 0.05) == "DIFF"
    assert judge("sojourn mean ms", 10.0, math.nan, 0.15) == ""
    # the kernel's tiers: ok within the goal, close within the looser tier, else DIFF
    assert [judge("sojourn mean ms", 10.0, v, 0.10, 0.25) for v in (10.9, 12.0, 7.6, 12.6, 7.4)] == ["ok", "close", "close", "DIFF", "DIFF"]
    assert judge("utilisation %", 98.0, 95.0, 0.10, 0.25) == "DIFF"  # utilisation has one criterion


def test_matrix_from_synthetic_cells():
    cells = [
        # two seeds: seed 1 alone would differ (×1.20), the means (10 vs 11.3) agree within ns3's ±15 %
        _cell(
            "a",
            "ns3",
            1,
            "differ",
            [_row("sojourn mean ms", 10.0, 12.0, "DIFF"), _row("utilisation %", 99.0, 98.0, "ok"), _row("sojourn p99 ms", 20.0, 50.0, "")],
        ),
        _cell(
            "a",
            "ns3",
            2,
            "agree",
            [_row("sojourn mean ms", 10.0, 10.6, "ok"), _row("utilisation %", 99.0, 99.0, "ok"), _row("sojourn p99 ms", 20.0, 50.0, "")],
        ),
        _cell("a", "ns2", 1, "unsupported", error="tcp.stack: not ns2"),
        _cell("a", "ns2", 2, "unsupported", error="tcp.stack: not ns2"),
        _cell("a", "linux", 1, "not installed", error="linux is not installed: run aqmlab setup linux"),
        _cell(
            "b",
            "ns2",
            1,
            "agree",
            [
                _row("sojourn mean ms", 20.0, 20.5, "ok", engine="ns2"),
                _row("induced latency ms", 21.0, 23.0, "DIFF", "ping", "probe", "ns2"),
            ],
        ),
        _cell("b", "ns3", 1, "failed", error="AqmlabError: ns-3 exited with signal 11"),
        _cell("b", "ns3", 2, "agree", [_row("sojourn mean ms", 20.0, 20.0, "ok")]),
    ]
    m = matrix(cells, ["a", "b"], ["ns3", "ns2", "linux"])
    a = m["a", "ns3"]
    assert a.status == "agree" and a.seeds == [1, 2] and a.worst == "×1.13" and a.what == "sojourn mean ms of bottleneck_up"
    rows = {r.metric: r for r in a.rows}
    assert rows["sojourn mean ms"].value == pytest.approx(11.3) and rows["sojourn mean ms"].verdict == "ok"
    assert rows["sojourn p99 ms"].judged is False and rows["sojourn p99 ms"].verdict == ""  # shown, not judged
    assert m["a", "ns2"].status == "unsupported" and m["a", "ns2"].message == "tcp.stack: not ns2"
    assert m["a", "linux"].status == "not installed" and "aqmlab setup linux" in m["a", "linux"].message
    b2 = m["b", "ns2"]  # the worst row is the disagreeing one, whatever the others
    assert b2.status == "differ" and b2.worst == "×1.10" and b2.what == "induced latency ms of ping"
    assert m["b", "ns3"].status == "failed" and "signal 11" in m["b", "ns3"].message
    assert m["b", "linux"].status == "not run"
    md = matrix_markdown(m, [("a", "case a"), ("b", "case b")], ["ns3", "ns2", "linux"])
    assert "| a | case a | agree ×1.13 | unsupported | not installed |" in md
    assert "| b | case b | **failed** | **differ ×1.10** | not run |" in md


def test_worst_ratio_leaves_out_rows_below_their_floor():
    rows = aggregate(
        [_cell("c", "ns3", 1, "agree", [_row("drop rate % after warm-up", 0.01, 0.05, "ok"), _row("sojourn mean ms", 5.0, 5.5, "ok")])],
        "ns3",
    )
    assert worst(rows)[0] == "×1.10"


class _FakeEngine:
    """An engine that runs the simulator itself (so it agrees), counting its runs; or
    crashes like an engine process killed by a signal."""

    def __init__(self, crash: bool = False) -> None:
        self.crash, self.runs = crash, 0

    def available(self):
        return None

    def check(self, sc):
        return []

    def run(self, doc, seed, **kw):
        self.runs += 1
        if self.crash:
            raise AqmlabError("engine process exited with signal 11 (SIGSEGV)")
        return aqmlab.run(doc, seed=seed)


def _small(monkeypatch):
    """quick mode's ns3_codel case shortened to 3 s (the cells run in this process)."""
    real = campaign.load_cases

    def small(mode, only=None):
        cs = real(mode, only)
        for c in cs:
            c.doc["run"].update(duration="3s", warmup="1s")
        return cs

    monkeypatch.setattr(campaign, "load_cases", small)


def test_resume_skips_done_cells_and_a_crashed_engine_fails_alone(tmp_path, monkeypatch):
    _small(monkeypatch)
    good, bad = _FakeEngine(), _FakeEngine(crash=True)
    monkeypatch.setitem(ENGINES, "ns3", good)
    monkeypatch.setitem(ENGINES, "ns2", bad)
    s = run_campaign("quick", tmp_path, ["ns3", "ns2"], jobs=1, cases=["ns3_codel"])
    assert (s.ran, s.skipped, len(s.failed)) == (2, 0, 1)
    assert good.runs == 1 and bad.runs == 1
    md = (tmp_path / "matrix.md").read_text()
    assert "| ns3_codel |" in md and "agree" in md and "**failed**" in md
    html = (tmp_path / "report.html").read_text()
    assert "signal 11" in html and "Verdict matrix" in html
    assert (tmp_path / "figures" / "ns3_codel_sojourn.png").is_file() and (tmp_path / "figures" / "ns3_codel_goodput.png").is_file()
    csv = (tmp_path / "results.csv").read_text().splitlines()
    assert csv[0] == "case,engine,seeds,section,entity,metric,sim,engine_value,ratio,verdict,status"
    assert any(line.startswith("ns3_codel,ns3,1,queue,bottleneck_up,sojourn mean ms,") and line.endswith(",ok,agree") for line in csv)
    assert "ns3_codel,ns2,1,,,,,,,,failed" in csv
    # again: the agreeing cell is kept, the failed one runs again
    s2 = run_campaign("quick", tmp_path, ["ns3", "ns2"], jobs=1, cases=["ns3_codel"])
    assert (s2.ran, s2.skipped) == (1, 1) and good.runs == 1 and bad.runs == 2
    # a cell's file is named by the exact scenario: another duration is another cell
    cell = next((tmp_path / "cells" / "ns3_codel").glob("ns3-s1-*.json"))
    assert json.loads(cell.read_text())["status"] == "agree"


def test_cell_file_names_the_scenario():
    a = CellJob("x", "ns3", 1, {"run": {"duration": "20s"}})
    b = CellJob("x", "ns3", 1, {"run": {"duration": "40s"}})
    assert a.file != b.file and a.file.startswith("x/ns3-s1-")


def test_cells_run_on_a_dask_cluster(tmp_path, monkeypatch):
    distributed = pytest.importorskip("dask.distributed")
    _small(monkeypatch)
    good, bad = _FakeEngine(), _FakeEngine(crash=True)
    monkeypatch.setitem(ENGINES, "ns3", good)
    monkeypatch.setitem(ENGINES, "ns2", bad)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            s = run_campaign("quick", tmp_path, ["ns3", "ns2"], scheduler=client, cases=["ns3_codel"], report=False)
    assert (s.ran, len(s.failed)) == (2, 1) and good.runs == 1
    stored = {p.name.split("-")[0]: json.loads(p.read_text())["status"] for p in (tmp_path / "cells" / "ns3_codel").glob("*.json")}
    assert stored == {"ns3": "agree", "ns2": "failed"}


class _DyingEngine(_FakeEngine):
    """An engine that takes its worker process down with it (as a segfault in-process would)."""

    def run(self, doc, seed, **kw):
        import os

        os._exit(139)


def test_a_worker_that_dies_fails_its_cell_alone(tmp_path, monkeypatch):
    _small(monkeypatch)  # the pool forks: the patched engines and cases are the workers' too
    monkeypatch.setitem(ENGINES, "ns3", _FakeEngine())
    monkeypatch.setitem(ENGINES, "ns2", _DyingEngine())
    s = run_campaign("quick", tmp_path, ["ns3", "ns2"], jobs=2, cases=["ns3_codel"], report=False)
    assert s.ran == 2 and len(s.failed) == 1
    stored = {p.name.split("-")[0]: json.loads(p.read_text()) for p in (tmp_path / "cells" / "ns3_codel").glob("*.json")}
    assert stored["ns3"]["status"] == "agree"
    assert stored["ns2"]["status"] == "failed" and "BrokenProcessPool" in stored["ns2"]["error"]


def test_histogram_quantiles_are_exact_at_bucket_edges():
    import numpy as np
    import pandas as pd

    from aqmlab.campaign import _hist_quantiles

    h = pd.DataFrame({"queue": ["q"] * 3, "low": [0.0, 0.01, 0.02], "high": [0.01, 0.02, 0.04], "count": [25, 0, 75]})
    q = _hist_quantiles(h, np.array([0.0, 0.25, 0.5, 1.0]))
    # a quarter of the packets in [0, 10 ms), none in [10, 20), three quarters in [20, 40) ms
    assert q == pytest.approx([0.0, 0.01, 0.02 + 0.02 / 3, 0.04])
