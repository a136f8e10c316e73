"""Notebook views: Result._repr_html_ shows the run's flows and busy queues with units
(first rows, then how many more), Store._repr_html_ the experiments with their runs,
axes and measures; names are escaped."""
from __future__ import annotations

import aqmlab
from aqmlab._fmt import fmt_num
from aqmlab._html import ROWS

SCENARIO = """\
[run]
name = "<many>"
duration = "1s"
[dumbbell]
rate = "10Mbit"
[[flow]]
kind = "cbr"
from = "client0"
to = "server0"
rate = "50kbit"
count = 25
"""


def test_result_html_lists_flows_and_queues_with_units():
    res = aqmlab.run(SCENARIO)
    page = res._repr_html_()
    assert "<code>&lt;many&gt;</code>" in page and "<many>" not in page
    assert "goodput (Mbit/s)" in page and "sojourn mean (ms)" in page
    assert page.count("<td>cbr</td>") == ROWS and f"… and {25 - ROWS} more flows" in page
    assert "<td>bottleneck_up</td>" in page and "<td>bottleneck_down</td>" not in page  # idle: nothing arrived


def test_store_html_lists_experiments(synth):
    page = synth._repr_html_()
    runs = synth.raw_runs
    assert f"{len(runs)} finished runs" in page
    for exp, g in runs.groupby("experiment"):
        assert f"<td>{exp}</td><td>{len(g)}</td>" in page
    assert "qdisc: " in page and "wall_seconds" not in page


VOIP_TCP = """\
[run]
name = "call"
duration = "4s"
warmup = "1s"
[dumbbell]
rate = "10Mbit"
delay = "10ms"
[[flow]]
kind = "bulk"
from = "server0"
to = "client0"
[[flow]]
kind = "voip"
from = "client0"
to = "server0"
"""


def test_result_html_shows_tcp_srtt_and_voip_r_never_none(tmp_path):
    """A TCP flow's RTT cell is its sender's mean smoothed RTT (as `aqmlab run` prints),
    a VoIP flow gets its E-model R, and a missing number is "–", never "None" — also in
    the report of a `run --out` folder, whose Parquet tables hold None for them."""
    from aqmlab import report

    res = aqmlab.run(VOIP_TCP)
    bulk = res.flows.set_index("name").loc["bulk0"]
    voip = res.flows.set_index("name").loc["voip1"]
    res.write_parquet(tmp_path / "run")
    for page in (res._repr_html_(), report.write_run_report(tmp_path / "run").read_text()):
        assert "None" not in page
        assert "VoIP R" in page
        assert f"<td>{fmt_num(bulk['srtt_mean'] * 1e3)}</td>" in page and "sender's mean smoothed RTT" in page
        assert f"<td>{voip['r_value']:.1f}</td>" in page
