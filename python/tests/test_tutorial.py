"""docs/tutorial.md stays true: its scenario validates, its study parses with every
figure and table spec valid, and the fq_codel variant it describes is one line away."""
from __future__ import annotations

import re

import aqmlab
from aqmlab import report
from aqmlab.study import parse_study

from conftest import ROOT

TEXT = (ROOT / "docs" / "tutorial.md").read_text()
BLOCKS = re.findall(r"```toml\n(.*?)```", TEXT, flags=re.S)


def test_the_tutorials_scenario_and_study_are_valid():
    scenario, study = BLOCKS
    plan = aqmlab.validate(scenario)
    assert [f["name"] for f in plan["flows"]] == ["bulk0.0", "bulk0.1", "bulk1", "ping2"]
    assert aqmlab.validate(scenario.replace('qdisc = { kind = "fifo", limit = 1000 }', 'qdisc = { kind = "fq_codel" }'))
    st = parse_study(study)
    report.validate_outputs(st)
    assert len(st.runs()) == 12
    for png in re.findall(r"\]\((tutorial/[^)]+\.png)\)", TEXT):
        assert (ROOT / "docs" / png).is_file(), png
