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


def test_the_qdisc_reference_in_scenario_md_is_generated_from_describe():
    """docs/scenario.md's per-qdisc key tables are what scripts/gen_qdisc_docs.py makes
    of `aqmlab describe` now (rerun it after changing a qdisc's parameter docs)."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_qdisc_docs.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    text = (ROOT / "docs" / "scenario.md").read_text()
    for kind, _ in aqmlab.kinds("qdiscs"):
        assert f"#### `{kind}`" in text


def test_every_shipped_study_has_a_current_page():
    import subprocess
    import sys

    from aqmlab.study import list_studies

    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_study_pages.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for name in list_studies():
        assert (ROOT / "docs" / f"{name}-study.md").is_file(), name


def test_every_workload_has_a_section_in_scenario_md():
    """docs/scenario.md documents each workload kind `aqmlab list workloads` names under a
    heading of its own (a user writing a VoIP call from the docs finds its keys there)."""
    heads = [ln for ln in (ROOT / "docs" / "scenario.md").read_text().splitlines() if ln.startswith("### ")]
    missing = [k for k, _ in aqmlab.kinds("workloads") if not any(f'`kind = "{k}"`' in h for h in heads)]
    assert not missing, missing


def test_the_readmes_python_example_runs(tmp_path, monkeypatch):
    """README.md's Python block runs as written (from the repository root, where its
    example paths are), writing its files into a scratch folder."""
    import matplotlib

    matplotlib.use("Agg")
    (block,) = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    block = block.replace('"examples/', f'"{ROOT / "examples"}/')
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {})
    assert (tmp_path / "run.png").is_file() and (tmp_path / "out" / "flows.parquet").is_file()


def test_the_python_api_pages_blocks_run(tmp_path, monkeypatch):
    """docs/python-api.md's Python blocks run as written, in order, in a folder holding the
    tutorial's files (its scenario, the fq_codel copy, its study and the two `run --out`
    folders); the runs are shortened to keep the test quick."""
    import matplotlib

    matplotlib.use("Agg")
    short = BLOCKS[0].replace('duration = "30s"\nwarmup = "5s"', 'duration = "4s"\nwarmup = "1s"')
    assert short != BLOCKS[0]
    (tmp_path / "home.toml").write_text(short)
    fq = short.replace('qdisc = { kind = "fifo", limit = 1000 }', 'qdisc = { kind = "fq_codel" }')
    (tmp_path / "home-fq_codel.toml").write_text(fq)
    study = BLOCKS[1].replace('duration = "30s", warmup = "5s"', 'duration = "4s", warmup = "1s"')
    assert study != BLOCKS[1]
    (tmp_path / "home-study.toml").write_text(study.replace("repetitions = 3", "repetitions = 1"))
    aqmlab.run(short).write_parquet(tmp_path / "runs" / "fifo")
    aqmlab.run(fq).write_parquet(tmp_path / "runs" / "fq_codel")
    monkeypatch.chdir(tmp_path)
    page = (ROOT / "docs" / "python-api.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    assert len(blocks) == 5
    env: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block.replace("jobs=2", "jobs=1"), f"python-api.md block {i}", "exec"), env)
    assert env["r"].flows.shape[0] == 3 and (tmp_path / "home.html").is_file() and (tmp_path / "rtt.pdf").is_file()
    assert "p_qdisc" in env["st"].runs.columns


def test_the_error_messages_the_docs_quote_are_printed(cli, tmp_path):
    """The errors README.md and docs/scenario.md quote for examples/fifo_overload.toml with
    one value changed are what `aqmlab validate` prints for that file (the quoted text
    ends where the doc elides it with …)."""
    example = (ROOT / "examples" / "fifo_overload.toml").read_text()
    readme = (ROOT / "README.md").read_text()
    scen = (ROOT / "docs" / "scenario.md").read_text()
    cases = [
        (example.replace('rate = "10Mbit"', 'rate = "0Mbit"', 1), re.search(r"`(error: dumbbell\.rate: [^`]*)`", readme)),
        (example.replace('kind = "fifo"', 'kind = "fiffo"', 1), re.search(r"\n(error: dumbbell\.qdisc\.kind: [^\n]*)\n", scen)),
    ]
    for i, (text, quoted) in enumerate(cases):
        assert quoted, i
        f = tmp_path / f"bad{i}.toml"
        f.write_text(text)
        p = cli("validate", f)
        assert p.returncode == 2
        head, elided, tail = quoted.group(1).partition(" … ")
        got = p.stderr.strip()
        assert (got.startswith(head) and got.endswith(tail)) if elided else got == head, (got, quoted.group(1))
