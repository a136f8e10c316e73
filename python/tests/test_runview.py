"""One run to a picture and runs side by side: Result.plot() / `aqmlab plot RUNDIR`
(goodput per flow, queueing delay, probe RTT over time, with units) and `aqmlab
compare A B` (RTT CDF, goodput per direction, time series, labelled by name), checked
on the matplotlib objects and the command's exit codes."""
from __future__ import annotations

import tomllib

import numpy as np
import pytest

import aqmlab
from aqmlab import plots

from conftest import EXAMPLES, run_cli

SCENARIO = (EXAMPLES / "rrul_web.toml").read_text().replace('duration = "30s"', 'duration = "6s"').replace('warmup = "5s"', 'warmup = "1s"')


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs")
    fifo, fq = d / "fifo.toml", d / "fq.toml"
    fifo.write_text(SCENARIO)
    fq.write_text(SCENARIO.replace('qdisc = { kind = "fifo", limit = 127 }', 'qdisc = { kind = "fq_codel" }'))
    for src, out in ((fifo, d / "fifo"), (fq, d / "fq_codel")):
        r = run_cli("run", str(src), "--out", str(out), "-q")
        assert r.returncode == 0, r.stderr
    return d


def test_result_plot_stacks_goodput_delay_and_probe_rtt():
    res = aqmlab.run(tomllib.loads(SCENARIO))
    fig = res.plot()
    good, delay, rtt = fig.axes[:3]
    assert good.get_ylabel() == "goodput (Mbit/s)" and delay.get_ylabel() == "queue delay (ms)" and rtt.get_ylabel() == "RTT (ms)"
    assert rtt.get_xlabel() == "time (s)"
    # one line per TCP flow and the web flow; the probes are in the RTT panel, not here
    labels = [ln.get_label() for ln in good.lines]
    assert "rrul_be0.tcp_down0" in labels and "web" in labels and not [lab for lab in labels if "udp" in lab or "icmp" in lab]
    # the ICMP probe's RTT in ms, sample for sample
    icmp = next(ln for ln in rtt.lines if ln.get_label() == "rrul_be0.icmp")
    s = res.samples
    want = s[(s["entity"] == "rrul_be0.icmp") & (s["metric"] == "rtt")].sort_values("t")["value"].to_numpy() * 1e3
    assert np.asarray(icmp.get_ydata()) == pytest.approx(want)
    # the bottleneck is drawn, idle access links are not
    qs = [ln.get_label() for ln in delay.lines]
    assert "bottleneck_down" in qs and "client0->router_a" not in qs
    # distinct styles per line
    assert len({(ln.get_linestyle(), ln.get_marker(), ln.get_color()) for ln in good.lines}) == len(good.lines)


def test_plot_and_compare_commands(two_runs, tmp_path):
    r = run_cli("plot", str(two_runs / "fifo"), "--format", "png", "--format", "pdf")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(two_runs / "fifo" / "figures" / "run.png"), str(two_runs / "fifo" / "figures" / "run.pdf")]
    out = tmp_path / "cmp.svg"
    r = run_cli("compare", str(two_runs / "fifo"), str(two_runs / "fq_codel"), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_text().lstrip().startswith("<?xml")
    fig = plots.plot_compare([two_runs / "fifo", two_runs / "fq_codel"])
    cdf = fig.axes[0]
    assert [ln.get_label() for ln in cdf.lines] == ["fifo", "fq_codel"]
    # FIFO's probes wait behind a standing queue: its median RTT is far above fq_codel's
    med = {ln.get_label(): np.interp(0.5, ln.get_ydata(), ln.get_xdata()) for ln in cdf.lines}
    assert med["fifo"] > 2 * med["fq_codel"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["fifo", "fq_codel"]


def test_compare_a_run_with_a_store(two_runs, synth_dir):
    fig = plots.plot_compare([two_runs / "fq_codel", synth_dir], names=["one run", "synthetic study"])
    assert "one run: 1 run, synthetic study: 45 runs" in fig._suptitle.get_text()
    bars = fig.axes[1]
    assert {t.get_text() for t in fig.legends[0].get_texts()} == {"one run", "synthetic study"}
    assert bars.get_ylabel() == "total TCP goodput (Mbit/s)"


@pytest.mark.parametrize("args, message", [
    (["compare", "."], "compare needs at least two runs or stores"),
    (["compare", "/nonexistent-a", "/nonexistent-b"], "neither an `aqmlab run --out` folder"),
])
def test_compare_errors_exit_2(args, message):
    r = run_cli(*args)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_compare_refuses_an_unknown_extension(two_runs):
    r = run_cli("compare", str(two_runs / "fifo"), str(two_runs / "fq_codel"), "--out", "x.bmp")
    assert r.returncode == 2 and "'.bmp' is not a figure format (allowed: .png, .svg, .pdf)" in r.stderr


def test_report_of_a_run_folder(two_runs):
    r = run_cli("report", str(two_runs / "fifo"))
    assert r.returncode == 0, r.stderr
    page = (two_runs / "fifo" / "report.html").read_text()
    assert r.stdout.strip() == str(two_runs / "fifo" / "report.html")
    assert "data:image/png;base64," in page and "goodput (Mbit/s)" in page and "<td>rrul_be0.icmp</td>" in page


CALL = """\
[run]
duration = "4s"
warmup = "1s"
[dumbbell]
rate = "10Mbit"
delay = "10ms"
qdisc = { kind = "QDISC" }
[[flow]]
kind = "bulk"
from = "client0"
to = "server0"
[[flow]]
kind = "voip"
from = "client0"
to = "server0"
"""


def test_a_run_without_probes_shows_its_voip_delay_and_keeps_the_time_axis():
    """No ping or udp_rr: the latency panel draws the VoIP packets' one-way delay (ms),
    sample for sample, and `compare` its CDF; with neither probes nor VoIP the empty
    bottom panel still numbers the shared time axis."""
    runs = {q: aqmlab.run(CALL.replace("QDISC", q)) for q in ("fifo", "fq_codel")}
    fig = runs["fifo"].plot()
    lat = fig.axes[2]
    assert lat.get_ylabel() == "one-way delay (ms)" and "VoIP" in lat.get_title()
    (line,) = lat.lines
    s = runs["fifo"].samples
    want = s[(s["entity"] == "voip1") & (s["metric"] == "owd")].sort_values("t")["value"].to_numpy() * 1e3
    assert line.get_label() == "voip1" and np.asarray(line.get_ydata()) == pytest.approx(want)
    cdf = plots.plot_compare(list(runs.values()), names=list(runs)).axes[0]
    assert cdf.get_xlabel() == "VoIP one-way delay (ms)" and [ln.get_label() for ln in cdf.lines] == ["fifo", "fq_codel"]
    # the upload fills the FIFO in front of the call; fq_codel keeps the call's delay low
    med = {ln.get_label(): np.interp(0.5, ln.get_ydata(), ln.get_xdata()) for ln in cdf.lines}
    assert med["fifo"] > 3 * med["fq_codel"]

    bare = aqmlab.run(CALL.replace("QDISC", "fifo").rsplit("[[flow]]", 1)[0])
    fig = bare.plot()
    fig.canvas.draw()
    bottom = fig.axes[2]
    assert bottom.get_xlabel() == "time (s)"
    assert [t.get_text() for t in bottom.get_xticklabels() if t.get_visible() and t.get_text()], "the time axis has no numbers"
