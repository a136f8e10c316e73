"""Notebook views: Result._repr_html_ shows the run's flows and busy queues with units
(first rows, then how many more), Store._repr_html_ the experiments with their runs,
axes and measures; names are escaped."""
from __future__ import annotations

import aqmlab
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
