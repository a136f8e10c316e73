"""The `aqmlab run` summary tables: drop % is dropped/arrived (≤ 100 even when a DOCSIS
regulator drops before the qdisc), ping loss matches lost probes, a shaped link's
utilisation is of the shaper rate, and an 80-column terminal never cuts a name."""
from __future__ import annotations

import io

import pytest
from rich.console import Console

import aqmlab
from aqmlab.result import link_drop_fraction, link_utilization

from conftest import EXAMPLES


@pytest.fixture(scope="module")
def results():
    return {n: aqmlab.run(aqmlab.load_scenario(EXAMPLES / f"{n}.toml")) for n in ("docsis_tiers", "edge_router_shaped", "rrul_web")}


def _render(res, width: int) -> str:
    buf = io.StringIO()
    Console(file=buf, width=width, highlight=False).print(res.summary_table())
    return buf.getvalue()


def test_drop_percent_is_dropped_over_arrived(results):
    q = results["docsis_tiers"].queues.set_index("name").loc["docsis_down"]
    # the regulator drops before the qdisc: those packets arrived at the link too
    assert q["dropped"] > q["arrivals"]  # the old dropped/arrivals was 228 %
    frac = link_drop_fraction(q)
    assert frac == pytest.approx(q["dropped"] / (q["arrivals"] + q["regulator_drops"]))
    assert 0 < frac < 1
    out = _render(results["docsis_tiers"], 200)
    line = next(ln for ln in out.splitlines() if ln.startswith("docsis_down"))
    assert f"{frac * 100:.2f}" in line and "228" not in line


def test_probe_loss_matches_lost_probes(results):
    r = results["edge_router_shaped"]
    ping = r.flows.set_index("name").loc["ping"]
    assert ping["lost_pkts"] == 0 and ping["loss_rate"] == 0.0
    for _, f in r.probes.iterrows():
        assert f["loss_rate"] == pytest.approx(f["lost_pkts"] / f["probes_sent"])


def test_shaped_link_utilisation_is_of_the_shaper_rate(results):
    q = results["edge_router_shaped"].queues.set_index("name").loc["bottleneck_down"]
    assert q["utilization"] == pytest.approx(0.14, abs=0.01)  # of the 100 Mbit line
    assert link_utilization(q) == pytest.approx(1.0, abs=0.005)  # of the 14 Mbit shaper
    out = _render(results["edge_router_shaped"], 200)
    line = next(ln for ln in out.splitlines() if ln.startswith("bottleneck_down"))
    assert "14Mbit*" in line and "100.00" in line
    assert "shaper's rate" in " ".join(out.split())  # the caption may wrap


@pytest.mark.parametrize("width", [80, 100, 200])
def test_names_are_never_truncated(results, width):
    for name, r in results.items():
        out = _render(r, width)
        assert "…" not in out, f"{name} at {width} columns:\n{out}"
        for n in list(r.flows["name"]) + [q for q in r.queues["name"] if r.queues.set_index("name").loc[q, "arrivals"] > 0]:
            assert any(ln.startswith(n + " ") for ln in out.splitlines()), f"{n} missing at {width} columns:\n{out}"
        assert max(len(ln.rstrip()) for ln in out.splitlines()) <= width


def test_run_prints_the_first_50_rows_and_says_how_many_more(tmp_path):
    """120 CBR flows: `aqmlab run` prints 50 flow rows and one line naming the 70 left
    out; --all prints all 120 rows."""
    from conftest import run_cli

    f = tmp_path / "many.toml"
    f.write_text('[run]\nduration = "1s"\n[dumbbell]\npairs = 1\nrate = "10Mbit"\n'
                 '[[flow]]\nkind = "cbr"\nfrom = "client0"\nto = "server0"\nrate = "50kbit"\ncount = 120\n')
    r = run_cli("run", str(f))
    assert r.returncode == 0, r.stderr
    rows = [ln for ln in r.stdout.splitlines() if ln.lstrip().startswith("cbr")]
    assert len(rows) == 50
    assert "… and 70 more flows (--all shows every row)" in r.stdout
    r = run_cli("run", str(f), "--all")
    assert r.returncode == 0, r.stderr
    assert len([ln for ln in r.stdout.splitlines() if ln.lstrip().startswith("cbr")]) == 120
    assert "more flows" not in r.stdout


def test_flow_columns_add_up_and_say_how():
    """A ping flow's row counts probes (sent = delivered + lost, lost = loss % of sent);
    a CBR row counts packets (sent = delivered + lost + in flight); the footer says so."""
    text = ('[run]\nduration = "10s"\nwarmup = "5s"\n[dumbbell]\nrate = "10Mbit"\n'
            '[[flow]]\nkind = "ping"\nfrom = "client0"\nto = "server0"\n'
            '[[flow]]\nkind = "cbr"\nfrom = "client0"\nto = "server0"\nrate = "20Mbit"\n')
    res = aqmlab.run(text)
    out = _render(res, 200)
    rows = {ln.split()[0]: ln.split("│") for ln in out.splitlines() if ln.startswith(("ping0", "cbr1"))}
    sent, delivered, lost = (int(rows["ping0"][k]) for k in (4, 5, 6))
    f = res.flows.set_index("name")
    assert sent == f.loc["ping0", "probes_sent"] and sent == delivered + lost
    assert lost / sent == pytest.approx(f.loc["ping0", "loss_rate"])
    sent, delivered, lost = (int(rows["cbr1"][k]) for k in (4, 5, 6))
    assert sent > delivered + lost  # the rest was still queued when the run ended
    flat = " ".join(out.split())
    assert "UDP flows count packets over the whole run: sent = delivered + lost + still in flight at the end" in flat
    assert "TCP flows" not in flat  # no TCP flow in this run
    assert "probe flows (ping, udp_rr) count probes: sent = delivered (answered) + lost" in flat


def test_a_tcp_flows_rtt_column_is_its_senders_mean_srtt():
    """A bulk flow has no probe RTT; its `rtt mean ms` cell is the sender's mean smoothed
    RTT, at least the base RTT (20 ms), and the footer says what it is."""
    text = ('[run]\nduration = "6s"\nwarmup = "2s"\n[dumbbell]\nrate = "10Mbit"\ndelay = "5ms"\n'
            '[[flow]]\nkind = "bulk"\nfrom = "client0"\nto = "server0"\n')
    res = aqmlab.run(text)
    out = _render(res, 200)
    row = next(ln for ln in out.splitlines() if ln.startswith("bulk0")).split("│")
    srtt = res.flows.set_index("name").loc["bulk0", "srtt_mean"]
    assert srtt >= 0.020
    assert f"{srtt * 1e3:.3f}" in row[-2]
    assert "rtt mean = the sender's mean smoothed RTT (srtt)" in " ".join(out.split())


def test_a_voip_flow_shows_its_e_model_r():
    """A VoIP call's quality is its E-model R: the flows table has a `voip R` column with
    it (and "–" for the other flows), and the footer says what it is; without a VoIP
    flow there is no such column."""
    text = ('[run]\nduration = "4s"\nwarmup = "1s"\n[dumbbell]\nrate = "10Mbit"\ndelay = "5ms"\n'
            '[[flow]]\nkind = "bulk"\nfrom = "client0"\nto = "server0"\n'
            '[[flow]]\nkind = "voip"\nfrom = "client0"\nto = "server0"\n')
    res = aqmlab.run(text)
    r = res.flows.set_index("name").loc["voip1", "r_value"]
    assert 50 < r < 94.3
    for width in (200, 80):
        out = _render(res, width)
        # the last column's header (at 80 columns folded over two lines: "voip" above "R")
        lines = out.splitlines()
        rule = next(i for i, ln in enumerate(lines) if ln.startswith("━") and "voip1" in "".join(lines[i:i + 4]) and "┃" in lines[i - 1]
                    and "loss" in "".join(lines[i - 2:i]))
        head = [ln.split("┃")[-1].strip() for ln in lines[rule - 2:rule] if "┃" in ln]
        assert " ".join(h for h in head if h) == "voip R"
        voip = next(ln for ln in out.splitlines() if ln.startswith("voip1") and f"{r:.1f}" in ln)
        assert voip.split("│")[-1].strip() == f"{r:.1f}"
        bulk = [ln for ln in out.splitlines() if ln.startswith("bulk0")][-1]
        assert bulk.split("│")[-1].strip() == "–"
        assert "voip R = the call's E-model R" in " ".join(out.split())
    plain = aqmlab.run(text.rsplit("[[flow]]", 1)[0])
    assert "voip R" not in _render(plain, 200)


def test_cake_shaping_below_the_line_rate_is_the_links_rate_limit():
    """CAKE with `bandwidth` below its link's rate holds the traffic to that bandwidth, as
    an htb shaper would: the queue table shows it as the rate (with *), util % and the
    `utilization` measure are of it (a saturated upload: close to 100 %, not 95 %)."""
    from aqmlab import measures

    text = ('[run]\nduration = "6s"\nwarmup = "2s"\n[dumbbell]\nrate = "10Mbit"\ndelay = "5ms"\n'
            'up = { qdisc = { kind = "cake", bandwidth = "9.5Mbit" } }\n'
            '[[flow]]\nkind = "bulk"\nfrom = "client0"\nto = "server0"\ncount = 2\n')
    res = aqmlab.run(text)
    q = res.queues.set_index("name").loc["bottleneck_up"]
    line_busy = q["utilization"]
    assert 0.9 < line_busy < 0.955  # of the 10 Mbit/s line: at most 95 %
    util = link_utilization(q)
    assert util == pytest.approx(line_busy * 10 / 9.5) and util > 0.95
    assert measures.compute(res, ["utilization"])["utilization"] == pytest.approx(util)
    row = next(ln for ln in _render(res, 200).splitlines() if ln.startswith("bottleneck_up")).split("│")
    assert row[2].strip() == "9.5Mbit*" and row[3].strip() == f"{util * 100:.2f}"
    assert "* a shaper's rate (htb/tbf) or CAKE's bandwidth" in " ".join(_render(res, 200).split())
