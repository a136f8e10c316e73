"""Tables (values, CSV/Markdown), finding checks, and the HTML report — including a
screenshot of the page in headless Chromium."""
from __future__ import annotations

import base64
import os
import pathlib
import re
import shutil
import subprocess
from html import escape as html_escape

import numpy as np
import pandas as pd
import pytest

from aqmlab import findings as F
from aqmlab import report, tables
from aqmlab.study import StudyError, parse_study

from conftest import assert_nontrivial_png

ROOT = pathlib.Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- tables


def test_table_mean_sd_matches_the_runs(synth, synth_study, tmp_path):
    e = synth_study.experiment("rrul")
    t = tables.table(synth, e.tables[0], e)
    r = synth.runs[synth.runs.experiment == "rrul"]
    assert list(t.numeric.index) == ["fifo", "codel", "fq_codel"]
    assert list(t.numeric.columns) == ["10/10 mean", "10/10 sd", "10/10 n", "10/1 mean", "10/1 sd", "10/1 n"]
    assert t.numeric.loc["codel", "10/1 n"] == 3
    sel = r[(r.p_qdisc == "codel") & (r.p_link == "10/1")]["induced_latency"]
    assert t.numeric.loc["codel", "10/1 mean"] == pytest.approx(sel.mean() * 1e3)
    assert t.numeric.loc["codel", "10/1 sd"] == pytest.approx(sel.std(ddof=1) * 1e3)
    assert re.fullmatch(r"[\d.]+ ± [\d.]+", t.cells.loc["codel", "10/1"])
    csv, md = t.write(tmp_path)
    back = pd.read_csv(csv, index_col=0)
    assert back.loc["codel", "10/1 mean"] == pytest.approx(sel.mean() * 1e3, rel=1e-5)
    text = md.read_text()
    assert "| qdisc | 10/10 | 10/1 |" in text and "|:---|---:|---:|" in text and "ms" in text
    med = tables.table(synth, e.tables[1], e)
    assert med.numeric.loc["fifo", "10/10"] == pytest.approx(
        r[(r.p_qdisc == "fifo") & (r.p_link == "10/10")]["goodput_down"].median() / 1e6
    )


def test_table_without_cols_and_pooled_axes(synth, synth_study):
    # saturated has qdisc × flows; rows=qdisc alone pools the flow counts
    e = synth_study.experiment("saturated")
    t = tables.table(synth, {"value": "bottleneck_utilization", "rows": "qdisc", "stat": "count"}, e)
    assert t.numeric.iloc[:, 0].tolist() == [6, 6]
    t = tables.table(synth, {"value": "bottleneck_utilization", "rows": "flows", "where": {"qdisc": "pie"}, "stat": "max"}, e)
    assert list(t.numeric.index) == ["1", "4", "16"], "axis order of the study, not string order"
    r = synth.runs[(synth.runs.experiment == "saturated") & (synth.runs.p_qdisc == "pie") & (synth.runs.p_flows == 16)]
    assert t.numeric.loc["16"].iloc[0] == pytest.approx(r.bottleneck_utilization.max() * 100)


def test_table_errors_and_missing_data(synth, synth_study):
    e = synth_study.experiment("rrul")
    with pytest.raises(tables.TableSpecError, match="stat"):
        tables.table(synth, {"value": "induced_latency", "rows": "qdisc", "stat": "p95"}, e)
    with pytest.raises(tables.TableSpecError, match="cols"):
        tables.table(synth, {"value": "induced_latency", "rows": "qdisc", "cols": "nope"}, e)
    t = tables.table(synth, {"value": "no_such_measure", "rows": "qdisc"}, e)
    assert "no data" in t.note and "no data" in t.to_markdown()


def test_summary_table_has_every_combination(synth, synth_study):
    e = synth_study.experiment("saturated")
    t = tables.summary_table(synth, e)
    assert len(t.cells) == 6 and t.cells.index[0] == "qdisc=codel, flows=1"
    assert (t.numeric["runs"] == 2).all()
    assert "bottleneck_utilization (%) mean" in t.numeric.columns
    # every combination's numbers are those of the runs with its axis values, in table order
    from aqmlab.stats import mean_ci

    r = synth.runs[synth.runs.experiment == "saturated"]
    for label in t.numeric.index:
        q, f = (kv.split("=")[1] for kv in label.split(", "))
        sel = r[(r.p_qdisc.astype(str) == q) & (r.p_flows.astype(str) == f)]["bottleneck_utilization"].to_numpy(dtype=float)
        ci = mean_ci(sel)
        got = t.numeric.loc[label]
        assert (got["bottleneck_utilization (%) mean"], got["bottleneck_utilization (%) sd"]) == (ci.mean * 100, ci.sd * 100)


def test_render_tables_writes_csv_and_md(synth, synth_study, tmp_path):
    paths = tables.render_tables(synth, synth_study, tmp_path)
    n = sum(len(e.tables) + 1 for e in synth_study.experiments)
    assert len(paths) == 2 * n and all(p.exists() and p.stat().st_size > 0 for p in paths)


# ----------------------------------------------------------------------------- findings


def test_finding_checks(synth, synth_study):
    evs = F.evaluate_all(synth, synth_study)
    assert [e.status for e in evs] == ["unchecked", "pass", "fail", "pass", "pass", "pass"]
    r = synth.runs[synth.runs.experiment == "rrul"]
    fq = r[(r.p_qdisc == "fq_codel") & (r.p_link == "10/10")]["induced_latency"].mean() * 1e3
    assert f"fq_codel {fq:.3g} ms" in evs[1].detail.replace(" ms <", " ms <")
    assert "link=10/10" in evs[1].detail and "link=10/1:" in evs[1].detail
    assert evs[5].see == "sat-util"
    # a check on data that is not there
    ev = F.evaluate({"text": "x", "check": {"experiment": "nope", "measure": "jain", "at_least": 0.9}}, synth, synth_study)
    assert ev.status == "no data"
    # a threshold that fails, and a decreasing trend that fails
    ev = F.evaluate({"text": "x", "check": {"experiment": "rtt_fair", "measure": "jain", "at_least": 0.99}}, synth, synth_study)
    assert ev.status == "fail" and "qdisc=fq_codel" in ev.detail
    ev = F.evaluate(
        {"text": "x", "check": {"experiment": "saturated", "measure": "bottleneck_utilization", "axis": "flows", "trend": "decreasing"}},
        synth,
        synth_study,
    )
    assert ev.status == "fail"


def test_malformed_findings_are_study_errors():
    base = '[study]\nname = "s"\nfindings = [{}]\n[[experiment]]\nname = "e"\n'
    bad = [
        ('{ text = "t", check = { measure = "m" } }', "exactly one"),
        ('{ text = "t", check = { measure = "m", lower = "a" } }', "axis"),
        ('{ text = "t", check = { measure = "m", lower = "a", axis = "q" } }', "than"),
        ('{ text = "t", check = { measure = "m", trend = "up", axis = "q" } }', "trend"),
        ('{ text = "t", check = { measure = "m", at_most = 1, colour = 2 } }', "colour"),
        ('{ txt = "t" }', "text"),
        ("3", "string or a table"),
    ]
    for f, msg in bad:
        with pytest.raises(StudyError, match=msg):
            parse_study(base.replace("{}", f))
    ok = parse_study(base.replace("{}", '"plain", { text = "t", check = { measure = "m", at_most = 1, at_least = 0 } }'))
    assert len(ok.findings) == 2


# ----------------------------------------------------------------------------- report


def _chromium() -> str | None:
    for c in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(c)
        if p:
            return p
    return None


@pytest.fixture(scope="module")
def report_page(synth_dir, tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("report") / "synthetic.html"
    return report.write_report(synth_dir, None, out)


def test_report_page_is_self_contained(report_page, synth, synth_study):
    html = report_page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<style>" in html
    assert "src=\"http" not in html and "href=\"http" not in html and "<script" not in html
    imgs = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(imgs) == sum(len(e.figures) for e in synth_study.experiments)
    assert all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in imgs)
    for s in ("Synthetic AQM study", "Findings", "Provenance", "0.0.0-test", "Study definition (exact text)",
              "axis <code>qdisc</code>", "fifo, codel, fq_codel", "rrul: induced_latency (mean±sd, ms)"):
        assert s in html, s
    # every finding text next to its evidence, with the symbol
    for f in synth_study.findings:
        text = f if isinstance(f, str) else f["text"]
        assert html_escape(text) in html
    assert html.count('class="status pass"') == 4 and html.count('class="status fail"') == 1
    assert '<a href="#sat-util">see sat-util</a>' in html and 'id="sat-util"' in html
    # run counts: all 45 finished of 45 planned
    assert "<th>all</th><td>45</td><td>45</td>" in html
    assert "Quick mode" not in html
    files = report_page.parent / "synthetic-files"
    assert (files / "figures" / "rrul-ellipse.svg").exists() and (files / "tables" / "rrul-latency.md").exists()


def test_report_with_figures_on_worker_processes_is_the_same_page(report_page, synth_dir, tmp_path):
    """write_report(jobs=2) draws the figures on two processes while this one computes
    the tables and findings: the same page (but its time stamp) and the same files."""
    page = report.write_report(synth_dir, None, tmp_path / "synthetic.html", jobs=2)

    def text(p):
        return re.sub(r"report written</th><td>[^<]*", "", p.read_text())

    assert text(page) == text(report_page)
    a, b = report_page.parent / "synthetic-files", tmp_path / "synthetic-files"
    names = sorted(str(p.relative_to(a)) for p in a.rglob("*") if p.is_file())
    assert names == sorted(str(p.relative_to(b)) for p in b.rglob("*") if p.is_file())
    for n in names:
        if not n.endswith(".svg"):
            assert (a / n).read_bytes() == (b / n).read_bytes(), n


def test_quick_mode_and_missing_runs_are_said(tmp_path):
    import synthstore

    d = tmp_path / "quick"
    st = synthstore.write_store(d, quick=True, only=["voip"])
    page = report.write_report(d, None, tmp_path / "q.html")
    html = page.read_text()
    assert "Quick mode." in html
    # what quick mode did, worked out from the study's runs, said once, in the bold lead
    assert "Runs shortened to 10 s of 30 s (flow start and stop times scaled with them), 2 repetitions" in html, st.quick_note
    assert html.count("quick mode") == 0
    assert "planned run(s) are not in the store" in html  # only the voip experiment ran
    assert html.count('class="status nodata"') >= 3


def test_report_renders_in_headless_chromium(report_page, tmp_path):
    exe = _chromium()
    if exe is None:
        script = ROOT / "scripts" / "install-chromium.sh"
        can_install = shutil.which("apt-get") and (os.geteuid() == 0 or shutil.which("sudo"))
        if can_install and script.exists():
            subprocess.run(["bash", str(script)], check=False, timeout=1200, capture_output=True)
            exe = _chromium()
        if exe is None:
            pytest.skip("chromium is not installed and scripts/install-chromium.sh could not install it (needs apt and root)")
    shot = tmp_path / "report.png"
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--screenshot={shot}",
           "--window-size=1200,3000", report_page.resolve().as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert_nontrivial_png(shot, min_bytes=50_000, min_size=(1200, 3000))
    # the page is not blank: the top (title and findings table) has dark text pixels
    try:
        from PIL import Image

        with Image.open(shot) as im:
            top = np.asarray(im.convert("L").crop((0, 0, 1200, 600)))
        assert (top < 100).mean() > 0.005, "no text visible at the top of the page"
        assert (top > 240).mean() > 0.5, "page background is not light"
    except ImportError:
        pass
    keep = os.environ.get("AQMLAB_ARTIFACTS")
    if keep:
        pathlib.Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, pathlib.Path(keep) / "report-screenshot.png")


def test_validate_outputs(synth_study):
    report.validate_outputs(synth_study)  # the synthetic study is well formed
    text = synth_study.text.replace(
        'rows = "qdisc"\n  cols = "link"\n  stat = "mean±sd"', 'rows = "qdisk"\n  cols = "link"\n  stat = "mean±sd"'
    )
    text = text.replace('type = "line"', 'type = "line"\n  colour = "red"')
    text = text.replace('value = "voip_loss"', 'value = "voip_jitter"')
    with pytest.raises(StudyError) as ei:
        report.validate_outputs(parse_study(text))
    msg = str(ei.value)
    assert "'qdisk' is not an axis of 'rrul'" in msg and "colour" in msg and "'voip_jitter' is not a measure of experiment" in msg


def test_report_of_a_store_without_finished_runs(tmp_path):
    import synthstore

    d = tmp_path / "empty"
    (d / "runs").mkdir(parents=True)
    (d / "study.toml").write_text(synthstore.STUDY_TOML)
    page = report.write_report(d, None, tmp_path / "empty.html")
    html = page.read_text()
    assert "<th>all</th><td>0</td><td>45</td>" in html
    assert html.count("data:image/png;base64,") == 16  # every figure still drawn, saying "no data"
    assert html.count('class="status nodata"') == 5


def test_run_times_below_a_second_are_shown_in_ms():
    # per-run means of quick studies are tens of ms; "0.0 s" would hide them
    f = report._fmt_seconds
    assert (f(0.0234), f(0.004), f(0.6), f(4.21), f(300.0)) == ("23 ms", "4.0 ms", "600 ms", "4.2 s", "5.0 min")
    assert f(float("nan")) == "–"
