"""Study files are checked before any run: misspelt measures (in `measures` and in
figures) with a did-you-mean and the study file's line, a bad axis path at the study
file's own line, a study given to `run` and a scenario given to `sweep`; and `--only`
on a finished store merges into the report instead of replacing it."""
from __future__ import annotations

from conftest import EXAMPLES, run_cli

STUDY = """\
[study]
name = "mine"
repetitions = 1

[base]
run = { duration = "2s" }
dumbbell = { rate = "10Mbit", delay = "10ms" }

[[experiment]]
name = "a"
measures = ["goodput_down", "induced_latency"]
patch = { flow = [ { kind = "bulk", from = "server0", to = "client0" }, { kind = "ping", from = "client0", to = "server0" } ] }

  [[experiment.axis]]
  name = "qdisc"
  path = "dumbbell.qdisc"
  values = [ { kind = "fifo" }, { kind = "fq_codel" } ]

  [[experiment.figure]]
  type = "bar"
  y = "induced_latency"

  [[experiment.table]]
  value = "goodput_down"
  rows = "qdisc"

[[experiment]]
name = "b"
measures = ["goodput_down"]
patch = { flow = [ { kind = "bulk", from = "server0", to = "client0" } ] }

  [[experiment.axis]]
  name = "delay"
  path = "dumbbell.delay"
  values = ["5ms", "20ms"]
"""


def _sweep(tmp_path, text, *args):
    f = tmp_path / "study.toml"
    f.write_text(text)
    return run_cli("sweep", str(f), "--out", str(tmp_path / "out"), *args, timeout=300)


def _line(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def test_misspelt_measures_are_named_with_a_suggestion_and_line(tmp_path):
    text = STUDY.replace('measures = ["goodput_down", "induced_latency"]', 'measures = ["goodput_dwn", "induced_latency"]')
    text = text.replace('y = "induced_latency"', 'y = "induced_latncy"')
    r = _sweep(tmp_path, text)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert ("experiment[0] (a).measures[0]: unknown measure 'goodput_dwn', did you mean 'goodput_down'?" in r.stderr
            and f"(line {_line(text, 'goodput_dwn')})" in r.stderr)
    assert ("experiment[0] (a).figure[0].y: 'induced_latncy' is not a measure of experiment 'a', did you mean 'induced_latency'?"
            in r.stderr and f"(line {_line(text, 'induced_latncy')})" in r.stderr)
    assert not (tmp_path / "out").exists(), "nothing ran"


def test_a_misspelt_measure_is_never_offered_as_the_fix_of_a_figure_or_table(tmp_path):
    """`measures = ["goodput_dwn", …]` with a table of goodput_down: the measure's error
    suggests goodput_down; the table's must not suggest the misspelling (nor a different
    measure such as goodput_up) but say to list goodput_down among the measures. An axis
    spelt in another case (`RTT` for `rtt`, `QDISC`) gets the right spelling."""
    text = STUDY.replace('measures = ["goodput_down", "induced_latency"]', 'measures = ["goodput_dwn", "induced_latency"]')
    text = text.replace('rows = "qdisc"', 'rows = "QDISC"')
    r = _sweep(tmp_path, text)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "measures[0]: unknown measure 'goodput_dwn', did you mean 'goodput_down'?" in r.stderr
    table = next(ln for ln in r.stderr.splitlines() if ".table[0].value" in ln)
    assert ("'goodput_down' is not a measure of experiment 'a'; add it to the measures of experiment 'a' (its measures: "
            "goodput_dwn, induced_latency)") in table and "did you mean" not in table
    assert "table[0].rows: 'QDISC' is not an axis of 'a', did you mean 'qdisc'?" in r.stderr


def test_a_misspelt_table_in_an_axis_path_names_the_axis_line_and_leaves_no_folder(tmp_path):
    """`path = "dumbell.delay"`: the scenario refuses the top-level table `dumbell`; the
    error suggests `dumbbell`, names the study file's line of that path, and the sweep
    leaves no empty store folder behind."""
    text = STUDY.replace('path = "dumbbell.delay"', 'path = "dumbell.delay"')
    r = _sweep(tmp_path, text)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "dumbell: unknown field `dumbell` (did you mean `dumbbell`?)" in r.stderr
    assert r.stderr.rstrip().endswith(f"(study file line {_line(text, 'dumbell.delay')})")
    assert not (tmp_path / "out").exists()


def test_bad_axis_path_names_the_study_files_line(tmp_path):
    text = STUDY.replace('path = "dumbbell.qdisc"', 'path = "dumbbell.qdsic"')
    r = _sweep(tmp_path, text)
    assert r.returncode == 2
    assert "dumbbell.qdsic: unknown field `qdsic`" in r.stderr
    assert r.stderr.rstrip().endswith(f"(study file line {_line(text, 'qdsic')})")


def test_study_and_scenario_files_point_at_each_others_command(tmp_path):
    f = tmp_path / "study.toml"
    f.write_text(STUDY)
    r = run_cli("run", str(f))
    assert r.returncode == 2 and "this is a study file" in r.stderr and "aqmlab sweep FILE" in r.stderr
    r = run_cli("sweep", str(EXAMPLES / "fifo_overload.toml"))
    assert r.returncode == 2 and "this is a scenario file" in r.stderr and "aqmlab run FILE" in r.stderr


def test_only_on_a_finished_store_merges_into_the_report(tmp_path):
    r = _sweep(tmp_path, STUDY, "--report", "--jobs", "1")
    assert r.returncode == 0, r.stderr
    page = tmp_path / "out" / "report.html"
    assert 'id="exp-a"' in page.read_text() and 'id="exp-b"' in page.read_text()
    r = _sweep(tmp_path, STUDY, "--report", "--only", "b", "--jobs", "1")
    assert r.returncode == 0, r.stderr
    html = page.read_text()
    assert 'id="exp-a"' in html and 'id="exp-b"' in html, "the report still covers experiment a"


def test_list_measures_names_every_registered_and_generic_measure():
    from aqmlab import measures as M

    r = run_cli("list", "measures")
    assert r.returncode == 0
    names = r.stdout.split()
    assert names[: len(M.MEASURES)] == list(M.MEASURES) and "ratio:A/B" in names
    r = run_cli("list", "measures", "-v")
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("goodput_down "))
    assert line.split(None, 1)[1] == "sum of downstream TCP bulk goodput after warm-up (bit/s)"


def test_generic_measures_with_a_column_no_table_has_are_refused_before_any_run(tmp_path):
    """flow:NAME.COL / queue:NAME.COL / mean:KIND.COL naming a column (or kind) that no
    result table has would be NaN in every run and an empty figure: refused by name."""
    text = STUDY.replace(
        'measures = ["goodput_down", "induced_latency"]',
        'measures = ["goodput_down", "induced_latency", "flow:f.goodput", "mean:bulkk.goodput_bps", "queue:bottleneck_up.sojourn_p9"]',
    )
    r = _sweep(tmp_path, text)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "measures[2]: measure 'flow:f.goodput': no column 'goodput' in the flows table, did you mean 'goodput_bps'?" in r.stderr
    assert "measures[3]: measure 'mean:bulkk.goodput_bps': no flow kind 'bulkk', did you mean 'bulk'?" in r.stderr
    assert "measures[4]: measure 'queue:bottleneck_up.sojourn_p9': no column 'sojourn_p9' in the queues table" in r.stderr
    assert "aqmlab list columns -v" in r.stderr and f"(line {_line(text, 'flow:f.goodput')})" in r.stderr
    assert not (tmp_path / "out").exists(), "nothing ran"


def test_generic_measures_accept_every_column_a_run_has():
    """Every column of a real run's flows (of each kind) and queues tables passes the check,
    including per-kind summary columns and qdisc/lower-layer ones."""
    import tomllib

    import aqmlab
    from aqmlab import measures as M

    sc = tomllib.loads((EXAMPLES / "cake_sqm.toml").read_text())
    sc["run"] |= {"duration": "6s", "warmup": "1s"}
    res = aqmlab.run(sc, seed=1)
    names = [f"flow:x.{c}" for c in res.flows.columns] + [f"queue:x.{c}" for c in res.queues.columns]
    names += [f"mean:{k}.{c}" for k in res.flows["kind"].unique() for c in res.flows.columns
              if res.flows.loc[res.flows["kind"] == k, c].notna().any()]
    M.validate(names)


def test_list_columns_names_the_tables_columns():
    r = run_cli("list", "columns", "-v")
    assert r.returncode == 0
    lines = dict(ln.split(None, 1) for ln in r.stdout.splitlines())
    assert lines["flows.goodput_bps"].strip() and "voip" in lines["flows.r_value"]
    assert "dualpi2" in lines["queues.l_sojourn_p99"] and "'codel'" in lines["queues.drops_codel"]


def test_a_bar_figure_that_would_pool_an_axis_is_refused_before_any_run(tmp_path):
    """A bar of run measures over an experiment with two varied axes must show or fix
    both; `group` beside `x` is not a second axis (it names the categories only when x is
    absent). Both found before the runs, not as an error figure after them."""
    two_axes = STUDY.replace(
        '  [[experiment.figure]]\n  type = "bar"\n  y = "induced_latency"\n',
        '  [[experiment.axis]]\n  name = "rate"\n  path = "dumbbell.rate"\n  values = ["10Mbit", "20Mbit"]\n\n'
        '  [[experiment.figure]]\n  type = "bar"\n  y = "induced_latency"\n',
        1,
    )
    r = _sweep(tmp_path, two_axes)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert ("experiment[0] (a).figure[0]: runs of experiment 'a' differ in axis 'rate', which this figure neither shows"
            in r.stderr), r.stderr
    r = _sweep(tmp_path, two_axes.replace('  y = "induced_latency"\n', '  y = "induced_latency"\n  x = "rate"\n  group = "qdisc"\n', 1))
    assert r.returncode == 2 and "figure[0].group: a bar figure's categories are its x ('rate')" in r.stderr
    assert "hue = 'qdisc'" in r.stderr
    assert not (tmp_path / "out").exists(), "nothing ran"
    # shown as x and hue (or fixed with where): accepted
    ok = two_axes.replace('  y = "induced_latency"\n', '  y = "induced_latency"\n  x = "rate"\n  hue = "qdisc"\n', 1)
    from aqmlab.report import validate_outputs
    from aqmlab.study import parse_study

    validate_outputs(parse_study(ok))
    fixed = two_axes.replace('  y = "induced_latency"\n', '  y = "induced_latency"\n  where = { rate = "10Mbit" }\n', 1)
    validate_outputs(parse_study(fixed))


def test_a_sweep_without_report_says_what_to_do_next(tmp_path):
    """`aqmlab sweep` without --report prints no numbers: it says how to see them."""
    r = _sweep(tmp_path, STUDY, "--only", "b")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    assert (f"next: aqmlab report {out} (tables, figures and findings in one HTML page), aqmlab plot {out} (figure and table "
            f"files), or aqmlab.load({str(out)!r}) in Python") in " ".join(r.stderr.split())
