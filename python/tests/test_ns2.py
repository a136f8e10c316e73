"""The ns-2 engine: what it refuses (before ns runs), the Tcl it writes, its parsing of
ns-2's traces into the simulator's tables, and (when ns-2 is installed) a short run."""

import math
import shutil

import numpy as np
import pytest

import aqmlab
from aqmlab import _core, engines
from aqmlab.ns2.engine import collect, parse_flow_samples, parse_queue_trace, sojourns
from aqmlab.ns2.translate import check, translate

BASE = """
[run]
duration = "5s"
warmup = "1s"
[dumbbell]
pairs = 2
rate = "10Mbit"
delay = "10ms"
qdisc = { kind = "fifo", limit = 50 }
[tcp]
stack = "ns2-sack1"
[[flow]]
kind = "bulk"
count = 2
from = "client{i}"
to = "server{i}"
"""


def _check(text: str) -> list[str]:
    sc = aqmlab.load_scenario(text)
    return check(sc.to_dict(), sc.validate())


def test_the_subset_passes_and_each_key_outside_it_is_named():
    assert _check(BASE) == []
    cases = {
        'stack = "ns2-sack1"': ('stack = "linux"', "tcp.stack"),
        'qdisc = { kind = "fifo", limit = 50 }': ('qdisc = { kind = "codel" }', "dumbbell.qdisc.kind"),
        "limit = 50 }": ('limit = "75KB" }', "dumbbell.qdisc.limit"),
        'kind = "bulk"\ncount = 2': ('kind = "web"\ncount = 2', "flow[0].kind"),
        'to = "server{i}"': ('to = "server{i}"\ntcp = { cc = "bbr" }', "flow[0].tcp.cc"),
    }
    for old, (new, key) in cases.items():
        bad = _check(BASE.replace(old, new))
        assert bad and bad[0].startswith(key + ":") and "ns2 engine" in bad[0], (key, bad)
    # no stack at all: the simulator's default is Linux's, which ns-2 does not run
    bad = _check(BASE.replace('[tcp]\nstack = "ns2-sack1"\n', ""))
    assert bad[0].startswith("tcp.stack:")
    # several problems: all named
    bad = _check(BASE.replace('stack = "ns2-sack1"', 'stack = "ns2-sack1"\ncc = "dctcp"\nhystart = true'))
    assert [b.split(":")[0] for b in bad] == ["tcp.cc", "tcp.hystart"]
    # CUBIC runs on Agent/TCP/Linux, which recovers with SACK: no SACK is refused
    bad = _check(BASE.replace('to = "server{i}"', 'to = "server{i}"\ntcp = { cc = "cubic", sack = false }'))
    assert [b.split(":")[0] for b in bad] == ["flow[0].tcp.sack"] and "Agent/TCP/Linux" in bad[0]
    # RED must be ns-2's own, with thresholds in packets
    red = BASE.replace('qdisc = { kind = "fifo", limit = 50 }', 'qdisc = { kind = "red", min = 5, max = 15, limit = 60 }')
    assert _check(red)[0].startswith("dumbbell.qdisc.variant:")
    assert _check(red.replace("limit = 60", 'limit = 60, variant = "ns2"')) == []
    assert _check(red.replace("min = 5, max = 15", 'min = "7500B", max = "22500B"').replace("limit = 60", 'limit = 60, variant = "ns2"'))[
        0
    ].startswith("dumbbell.qdisc.min:")


def test_engine_check_and_run_refuse_before_ns_starts():
    eng = engines.ENGINES["ns2"]
    assert eng.check(BASE) == []
    bad = BASE.replace('stack = "ns2-sack1"', 'stack = "ns3"')
    assert eng.check(bad)[0].startswith("tcp.stack:")
    if eng.available() is None:
        with pytest.raises(aqmlab.ScenarioError) as e:
            eng.run(bad)
        assert e.value.field == "tcp.stack"


def test_tcl_maps_the_keys():
    text = BASE.replace(
        'qdisc = { kind = "fifo", limit = 50 }',
        'qdisc = { kind = "ared", min = 5, max = 15, limit = 60, variant = "ns2", probability = 0.05 }',
    )
    text = text.replace('stack = "ns2-sack1"', 'stack = "ns2-sack1"\nmss = 1460\ninit_cwnd = 4\nsack = false')
    sc = aqmlab.load_scenario(text)
    tr = translate(sc.to_dict(), sc.validate(seed=3, spread=True), seed=3)
    s = tr.script
    for line in (
        "Queue/RED set thresh_ 5",
        "Queue/RED set maxthresh_ 15",
        "Queue/RED set linterm_ 20",
        "Queue/RED set adaptive_ 1",
        "Queue/RED set q_weight_ 0",
        "Queue/RED set bytes_ false",
        "Queue/RED set gentle_ true",
        "set src(0) [new Agent/TCP/Newreno]",
        "set dst(0) [new Agent/TCPSink/DelAck]",
        "$src(0) set packetSize_ 1460",
        "$src(0) set windowInit_ 4",
        "$src(0) set window_ 10000",
        "$src(0) set tcpip_base_hdr_size_ 54",
        "$dst(0) set interval_ 0.1",
    ):
        assert line in s, line
    # both bottleneck directions are RED, the access links DropTail; every link traced
    assert s.count(" RED\n") == 2 and s.count(" DropTail\n") == 8 and s.count("trace-queue") == 10
    assert "$ns queue-limit $n(0) $n(1) 60" in s  # RED: its limit
    assert "$ns queue-limit $n(2) $n(0) 1001" in s  # DropTail: the fifo limit + the packet on the wire
    assert [q.name for q in tr.queues][:2] == ["bottleneck_up", "bottleneck_down"]
    assert tr.flows[0].pkt_size == 1460 + 40 + 14 and tr.flows[0].payload == 1460


PER_FLOW = (
    BASE.replace(
        'count = 2\nfrom = "client{i}"\nto = "server{i}"\n', 'from = "client0"\nto = "server0"\ntcp = { cc = "cubic", trace = true }\n'
    )
    + """
[[flow]]
name = "nosack"
kind = "bulk"
from = "server0"
to = "client0"
tcp = { cc = "newreno", sack = false }
[[flow]]
name = "fetch"
kind = "bulk"
from = "client1"
to = "server1"
start = "1s"
bytes = "2MB"
tcp = { ecn = true, init_cwnd = 4 }
"""
)


def test_per_flow_tcp_options_map_onto_each_flows_agent():
    sc = aqmlab.load_scenario(PER_FLOW)
    assert check(sc.to_dict(), sc.validate()) == []
    tr = translate(sc.to_dict(), sc.validate(seed=1, spread=True), seed=1)
    s = tr.script
    # flow 0: CUBIC on TCP-Linux with a SACK sink, its variables traced
    for line in ("set src(0) [new Agent/TCP/Linux]", '$ns at 0 "$src(0) select_ca cubic"', "set dst(0) [new Agent/TCPSink/Sack1/DelAck]",
                 "$src(0) attach $tf(0)", "$src(0) trace cwnd_", "$src(0) trace ssthresh_", "$src(0) trace srtt_",
                 # flow 1: ns-2's Newreno without SACK, and its sink without SACK
                 "set src(1) [new Agent/TCP/Newreno]", "set dst(1) [new Agent/TCPSink/DelAck]",
                 # flow 2: Sack1 with ECN and an initial window of 4, 2 MB then stop
                 "set src(2) [new Agent/TCP/Sack1]", "$src(2) set ecn_ 1", "$src(2) set windowInit_ 4", '"$app(2) send 2000000"'):
        assert line in s, line
    # the options stay on their flow
    assert s.count("select_ca") == 1 and s.count("set ecn_") == 1 and s.count(" trace cwnd_") == 1
    assert "$src(0) set windowInit_ 2" in s and "$src(1) set windowInit_ 2" in s
    assert [f.trace for f in tr.flows] == ["tcp0.tr", "", ""]
    assert any("Agent/TCP/Linux" in n and "bulk" in n for n in tr.notes)


def test_tcp_variable_trace_becomes_samples(tmp_path):
    sc = aqmlab.load_scenario(PER_FLOW)
    tr = translate(sc.to_dict(), sc.validate(seed=1, spread=True), seed=1)
    for q in tr.queues:
        (tmp_path / q.trace).write_text("")
    (tmp_path / "flows.tr").write_text("".join(f"F {t} {i} 0 0 0 0 0\n" for t in (0, 1, 5) for i in range(3)))
    # initial values at 0 (ssthresh twice: the agent's defaults), then a reduction
    (tmp_path / "tcp0.tr").write_text(
        "0.00000  0  0  1  0  cwnd_ 2.000\n0.00000  0  0  1  0  ssthresh_ 20\n0.00000  0  0  1  0  srtt_ 0.000\n"
        "0.00000  0  0  1  0  ssthresh_ 1000\n0.12006  0  0  1  0  srtt_ 0.020\n0.40840  0  0  1  0  cwnd_ 44.500\n0.40840  0  0  1  0  "
        "ssthresh_ 44\n"
    )
    raw, _ = collect(tmp_path, tr, seed=1, wall_seconds=0.1)
    r = aqmlab.Result(raw, sc)
    m = r.samples[(r.samples["kind"] == "flow") & (r.samples["entity"] == tr.flows[0].name)]
    got = {k: list(zip(g["t"], g["value"])) for k, g in m.groupby("metric")}
    assert got["cwnd"] == [(tr.flows[0].start, 2 * 1448), (0.4084, 44.5 * 1448)]
    assert got["ssthresh"] == [(0.4084, 44 * 1448)]
    assert got["srtt"] == [(0.12006, 0.02)]


# A hand-made trace of one 10 Mbit/s link: three 1514-byte packets arrive at 0, 0 and
# 1.0 s; the second waits for the first (1.2112 ms); a fourth is dropped at 1.5 s.
TRACE = """\
+ 0 0 1 tcp 1514 ------- 0 0.0 1.0 1 10
- 0 0 1 tcp 1514 ------- 0 0.0 1.0 1 10
+ 0 0 1 tcp 1514 ------- 0 0.0 1.0 2 11
- 0.0012112 0 1 tcp 1514 ------- 0 0.0 1.0 2 11
r 0.0124224 0 1 tcp 1514 ------- 0 0.0 1.0 1 10
+ 1.0 0 1 tcp 1514 ------- 1 2.0 1.0 1 12
- 1.0 0 1 tcp 1514 ------- 1 2.0 1.0 1 12
+ 1.5 0 1 tcp 1514 ------- 1 2.0 1.0 2 13
d 1.5 0 1 tcp 1514 ------- 1 2.0 1.0 2 13
"""


def test_trace_parsing_and_per_packet_sojourn():
    tr = parse_queue_trace(TRACE + "v 2.0 eval {set x 1}\n")
    assert list(tr["ev"]) == ["+", "-", "+", "-", "r", "+", "-", "+", "d"]
    t_out, soj = sojourns(tr)
    assert list(t_out) == [0.0, 0.0012112, 1.0]
    assert soj == pytest.approx([0.0, 0.0012112, 0.0])
    assert parse_flow_samples("F 1 0 3028 2 0 0 2\nF 2 0 4542 3 0 0 3\nx\n") == {
        0: [(1.0, 3028.0, 2.0, 0.0, 0.0, 2.0), (2.0, 4542.0, 3.0, 0.0, 0.0, 3.0)]
    }


def _tables(tmp_path, text: str, traces: dict[int, str], flows: str):
    sc = aqmlab.load_scenario(text)
    tr = translate(sc.to_dict(), sc.validate(seed=1, spread=True))
    for j, q in enumerate(tr.queues):
        (tmp_path / q.trace).write_text(traces.get(j, ""))
    (tmp_path / "flows.tr").write_text(flows)
    raw, info = collect(tmp_path, tr, seed=1, wall_seconds=0.5)
    r = aqmlab.Result(raw, sc)
    r.engine_info = info
    return r


def test_result_has_every_core_column_and_hand_worked_numbers(tmp_path):
    """The engine's tables from a parsed sample output (no ns run): every core column is
    there (NaN allowed); the bottleneck's counters, utilisation and sojourn are the
    trace's; goodput counts whole data packets delivered after the warm-up."""
    text = BASE.replace('duration = "5s"\nwarmup = "1s"', 'duration = "2s"\nwarmup = "0.5s"\nbin = "0.5s"')
    # flow 0: 1514-byte wire packets of 1448 payload + 54 header + ... (1448 + 40 + 14 = 1502)
    flows = "".join(
        f"F {t} 0 {b} {n} 1 0 10\nF {t} 1 0 0 0 0 2\n"
        for t, b, n in ((0, 0, 0), (0.5, 54 + 1502 * 10, 11), (1, 54 + 1502 * 20, 21), (1.5, 54 + 1502 * 30, 31), (2, 54 + 1502 * 40, 41))
    )
    r = _tables(tmp_path, text, {0: TRACE}, flows)
    sch = _core.result_schema()
    for c in [n for n, _, _ in sch["flows"]]:
        assert c in r.flows.columns, c
    want_q = (
        [n for n, _, _ in sch["queues"]]
        + [f"drops_{x}" for x in sch["drop_reasons"]]
        + [f"marks_{x}" for x in sch["mark_reasons"]]
        + [n for n, _, _ in sch["queues_tail"]]
    )
    assert list(r.queues.columns) == want_q
    q = r.queues.set_index("name").loc["bottleneck_up"]
    assert (q.arrivals, q.dequeued, q.dropped, q.enqueued, q.drops_overlimit) == (4, 3, 1, 3, 1)
    # after the 0.5 s warm-up one packet (at 1.0 s) left: 1514 wire bytes in 1.5 s
    assert q.tx_pkts == 1 and q.tx_bytes == 1500
    assert q.utilization == pytest.approx(1514 * 8 / (10e6 * 1.5))
    assert q.sojourn_n == 1 and q.sojourn_mean == 0.0
    f = r.flows.set_index("name")
    assert f.loc["bulk0.0", "goodput_bps"] == pytest.approx(30 * 1448 * 8 / 1.5)
    assert f.loc["bulk0.0", "delivered_pkts"] == 40 and f.loc["bulk0.0", "rtos"] == 0 and f.loc["bulk0.0", "retransmits"] == 1
    assert math.isnan(f.loc["bulk0.0", "srtt_mean"])
    g = r.series[(r.series["kind"] == "flow") & (r.series["entity"] == "bulk0.0") & (r.series["metric"] == "goodput_bps")]
    assert np.allclose(g["value"], 10 * 1448 * 8 / 0.5)
    assert r.engine_info["engine"] == "ns2"


NS = shutil.which("ns")


@pytest.mark.skipif(NS is None, reason="ns-2 is not installed (scripts/setup-ns2.sh installs Debian's ns2)")
def test_ns2_smoke_run_is_sane():
    """A 5-second ns-2 dumbbell: the DropTail bottleneck is busy and its queueing delay is
    within the analytical bound, limit x wire packet size / rate."""
    r = engines.ENGINES["ns2"].run(BASE, seed=1)
    q = r.queues.set_index("name").loc["bottleneck_up"]
    assert q.utilization > 0.95
    bound = 50 * (1448 + 40 + 14) * 8 / 10e6
    assert 0 < q.sojourn_mean <= q.sojourn_max <= bound + 1e-9
    good = r.flows["goodput_bps"].sum()
    assert 0.9 * 10e6 * 1448 / 1502 < good <= 10e6 * 1448 / 1502 * 1.001
    assert r.engine_info["engine"] == "ns2"


def test_ping_replies_are_matched_to_their_echoes():
    """ns-2's Agent/Ping passes the round trip in ms with one decimal; the engine takes the
    exact one from the echo's logged send time (the echo sent closest to arrival - rtt)."""
    from aqmlab.ns2.engine import match_replies, parse_pings

    sends, replies = parse_pings("S 0 0 1.0\nS 0 1 1.2\nS 0 2 1.4\nR 0 1.23016 0.0302\nR 0 1.43013 0.0301\nS 1 0 1.0\n")
    assert sends == {0: [1.0, 1.2, 1.4], 1: [1.0]}
    got = match_replies(sends[0], replies[0])
    assert [s for s, _ in got] == [1.2, 1.4]  # the first echo was lost
    assert [r for _, r in got] == pytest.approx([0.03016, 0.03013])
    text = BASE.replace(
        '[[flow]]\nkind = "bulk"', '[[flow]]\nkind = "ping"\nfrom = "client0"\nto = "server0"\ninterval = "100ms"\n[[flow]]\nkind = "bulk"'
    )
    assert _check(text) == []
    sc = aqmlab.load_scenario(text)
    tr = translate(sc.to_dict(), sc.validate(seed=1, spread=True))
    assert "Agent/Ping instproc recv {from rtt}" in tr.script and "$src(0) set packetSize_ 98" in tr.script
