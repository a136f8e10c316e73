"""Statistics over repetitions: t quantiles, 95 % confidence intervals (hand-computed
examples), tables with CIs, and the warning for repetitions that came out identical."""
from __future__ import annotations

import math
import types

import numpy as np
import pandas as pd
import pytest

from aqmlab import stats, tables


def test_t_quantiles_match_the_published_table():
    # Student t 0.975 quantiles (any statistics textbook's table)
    assert stats.t975(1) == pytest.approx(12.7062, abs=1e-4)
    assert stats.t975(4) == pytest.approx(2.7764, abs=1e-4)
    assert stats.t975(29) == pytest.approx(2.0452, abs=1e-4)
    # beyond the table: the Cornish-Fisher expansion
    assert stats.t975(40) == pytest.approx(2.021075, abs=1e-5)
    assert stats.t975(60) == pytest.approx(2.000298, abs=1e-5)
    assert stats.t975(120) == pytest.approx(1.979930, abs=1e-5)
    assert stats.t975(10**6) == pytest.approx(1.959966, abs=1e-5)
    # the expansion agrees with the table where they meet
    z = stats._Z975
    v = 30.0
    cf = z + (z**3 + z) / 4 / v + (5 * z**5 + 16 * z**3 + 3 * z) / 96 / v**2
    assert cf == pytest.approx(stats.t975(30), abs=2e-4)
    with pytest.raises(ValueError):
        stats.t975(0)


def test_mean_ci_of_a_hand_worked_example():
    # values 1..5: mean 3, sd sqrt(2.5) = 1.58114, se 0.70711, t(4) = 2.77645
    # -> half-width 1.96324, interval [1.03676, 4.96324]
    c = stats.mean_ci([1, 2, 3, 4, 5])
    assert c.n == 5 and c.mean == 3.0
    assert c.sd == pytest.approx(math.sqrt(2.5))
    assert c.half == pytest.approx(1.963243, abs=1e-6)
    assert (c.low, c.high) == pytest.approx((1.036757, 4.963243), abs=1e-6)
    # NaNs are ignored; one value has no interval; identical values a zero-width one
    c = stats.mean_ci([2.0, np.nan, 4.0])
    assert c.n == 2 and c.mean == 3.0 and c.half == pytest.approx(12.7062 * math.sqrt(2) / math.sqrt(2), abs=1e-3)
    assert math.isnan(stats.mean_ci([7.0]).half)
    assert stats.mean_ci([7.0, 7.0, 7.0]).half == 0.0
    assert stats.mean_ci([]).n == 0


def test_summarize_groups_per_repetition_rows():
    runs = pd.DataFrame({
        "p_q": ["a"] * 5 + ["b"] * 2,
        "x": [1, 2, 3, 4, 5, 10, 10],
    })
    s = stats.summarize(runs, "x", by="p_q").set_index("p_q")
    assert s.loc["a", "n"] == 5 and s.loc["a", "ci95"] == pytest.approx(1.963243, abs=1e-6)
    assert s.loc["b", "ci95"] == 0.0 and s.loc["b", "ci95_low"] == 10.0


def _store(runs: pd.DataFrame):
    return types.SimpleNamespace(runs=runs, study_text="", provenance={})


def test_table_cells_show_mean_and_95_ci_with_n():
    runs = pd.DataFrame({
        "run_id": [f"r{i}" for i in range(8)],
        "experiment": "e",
        "p_qdisc": ["fifo"] * 5 + ["codel"] * 3,
        "repetition": [0, 1, 2, 3, 4, 0, 1, 2],
        "lat": [0.001, 0.002, 0.003, 0.004, 0.005, 0.010, 0.010, 0.010],
    })
    t = tables.table(_store(runs), {"value": "lat", "rows": "qdisc", "unit": "ms", "scale": 1000}, "e")
    # fifo: 3 ± 1.96 ms over its 5 runs; codel: three identical runs, a zero-width
    # interval, and its n differs from the table's (5), so the cell says it
    assert t.cells.loc["fifo"].iloc[0] == "3.00 ± 1.96"
    assert t.cells.loc["codel"].iloc[0] == "10.0 ± 0 (n=3)"
    num = t.numeric
    assert list(num.columns) == ["lat (ms) mean", "lat (ms) ci95", "lat (ms) n"]
    assert num.loc["fifo", "lat (ms) ci95"] == pytest.approx(1.963243, abs=1e-6)
    assert num.loc["codel", "lat (ms) n"] == 3
    assert "95 % CI" in t.note
    # mean±sd keeps the sd, with n in the CSV
    t = tables.table(_store(runs), {"value": "lat", "rows": "qdisc", "stat": "mean±sd", "unit": "ms", "scale": 1000}, "e")
    assert t.numeric.loc["fifo", "lat (ms) sd"] == pytest.approx(1.581139, abs=1e-6)
    # one run per cell: just the value, and the note says why
    one = runs.groupby("p_qdisc").head(1)
    t = tables.table(_store(one), {"value": "lat", "rows": "qdisc", "unit": "ms", "scale": 1000}, "e")
    assert t.cells.loc["fifo"].iloc[0] == "1.00"
    assert "no confidence interval" in t.note


def test_identical_repetitions_are_found_per_experiment():
    runs = pd.DataFrame({
        "run_id": [f"r{i}" for i in range(10)],
        "experiment": ["same"] * 6 + ["varied"] * 4,
        "p_qdisc": ["a", "a", "a", "b", "b", "b", "a", "a", "b", "b"],
        "repetition": [0, 1, 2, 0, 1, 2, 0, 1, 0, 1],
        "seed": [1, 2, 3, 1, 2, 3, 1, 2, 1, 2],
        "goodput": [5.0, 5.0, 5.0, 7.0, 7.0, 7.0, 5.0, 5.1, 7.0, 7.0],
        "lat": [np.nan, np.nan, np.nan, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.5],
        "events": [100, 100, 100, 90, 90, 90, 100, 101, 90, 91],
        "wall_seconds": [0.1, 0.2, 0.3, 0.1, 0.2, 0.3, 0.1, 0.2, 0.3, 0.4],
    })
    found = stats.identical_repetitions(runs, {"same": ["goodput", "lat"], "varied": ["goodput", "lat"]})
    assert [(f.experiment, f.repetitions, f.identical, f.combinations) for f in found] == [("same", 3, 2, 2)]
    msg = found[0].message
    assert "3 repetitions produced identical results" in msg
    assert "add variability" in msg and "set reps = 1" in msg
    # default columns: every numeric result column (wall time and ids excluded)
    assert [f.experiment for f in stats.identical_repetitions(runs)] == ["same"]
    # one repetition per combination is not a repetition
    assert stats.identical_repetitions(runs[runs["repetition"] == 0]) == []


TINY = r'''
[study]
name = "tiny"
repetitions = 2
seed = 1

[base]
run = { duration = "1s" }
dumbbell = { rate = "10Mbit", delay = "5ms", qdisc = { kind = "fifo", limit = 50 } }

[[experiment]]
name = "quiet"
measures = ["cbr_goodput"]
patch = { run = { noise = false }, flow = [ { kind = "cbr", from = "client0", to = "server0", rate = "5Mbit" } ] }
  [[experiment.table]]
  value = "cbr_goodput"
  rows = "q"
  [[experiment.axis]]
  name = "q"
  path = "dumbbell.qdisc.limit"
  values = [50]

[[experiment]]
name = "noisy"
measures = ["goodput_up"]
patch = { flow = [ { kind = "bulk", from = "client0", to = "server0" } ] }
'''


def test_identical_repetitions_warn_in_the_terminal_and_the_report(tmp_path, cli):
    study = tmp_path / "tiny.toml"
    study.write_text(TINY)
    out = tmp_path / "out"
    p = cli("sweep", study, "--out", out, "--jobs", "1", "--report")
    assert p.returncode == 0, p.stderr
    text = p.stdout + p.stderr
    assert "experiment quiet: 2 repetitions produced identical results" in " ".join(text.split())
    assert "experiment noisy" not in text
    html = (out / "report.html").read_text()
    assert "experiment quiet: 2 repetitions produced identical results" in html
    assert "experiment noisy:" not in html
    # the store's per-repetition rows differ for the noisy experiment only
    import aqmlab

    runs = aqmlab.load(out).runs
    noisy = runs[runs["experiment"] == "noisy"]
    assert sorted(noisy["repetition"]) == [0, 1] and sorted(noisy["seed"]) == [1, 2]
    assert noisy["goodput_up"].nunique() == 2


@pytest.mark.parametrize("mean, spread, text", [
    (4.42, 4.46e-6, "0.00"),     # not "4.46e-06": no more decimals than the mean shows
    (43.7, 0.224, "0.2"),
    (3.0, 1.96, "1.96"),
    (1350.0, 284.0, "284"),
    (0.00123, 5.2, "5.20"),      # the spread's own 3 digits when it needs fewer decimals
    (10.0, 0.0, "0"),
])
def test_a_spread_shows_no_more_decimals_than_its_mean(mean, spread, text):
    from aqmlab._fmt import fmt_spread

    assert fmt_spread(mean, spread) == text
    assert fmt_spread(mean, spread, digits=3) == f"{spread:.3f}"
