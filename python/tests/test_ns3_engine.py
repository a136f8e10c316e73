"""The ns-3 engine: the translation to ns-3 types and attributes (no ns-3 needed), the
refusals, the missing-install message, and a 5-second dumbbell on ns-3.44 when
scripts/setup-ns3.sh has been run."""

from __future__ import annotations

import math

import pytest

import aqmlab
from aqmlab import engines
from aqmlab.errors import ScenarioError
from aqmlab.ns3 import engine as ns3_engine
from aqmlab.ns3.translate import qdisc_spec, tcp_spec, translate

BASE = """
[run]
duration = "5s"
warmup = "1s"

[dumbbell]
pairs = 3
rate = "10Mbit"
delay = "20ms"
overhead = 2
device_queue = 2
qdisc = {qdisc}

[tcp]
stack = "ns3"
{tcp}

[[flow]]
kind = "bulk"
count = 2
from = "client{{i}}"
to = "server{{i}}"
start_spread = "0.5s"

[[flow]]
kind = "ping"
from = "client2"
to = "server2"
"""


def scenario(qdisc: str = '{ kind = "fifo", limit = 50 }', tcp: str = "") -> aqmlab.Scenario:
    return aqmlab.Scenario(BASE.format(qdisc=qdisc, tcp=tcp))


def job(sc: aqmlab.Scenario) -> dict:
    return translate(sc.to_dict(), sc.validate(seed=1, spread=True))


def test_dumbbell_translates_to_links_queues_and_flows() -> None:
    j = job(scenario())
    assert j["nodes"][:2] == ["router_a", "router_b"]
    # 2 bottleneck directions + 6 hosts x 2 access directions, one ns-3 link per duplex pair
    assert len(j["queues"]) == 14 and len(j["links"]) == 7
    neck = j["links"][0]
    assert neck["delay"] == pytest.approx(0.02)
    assert neck["ab"]["qdisc"] == {"type": "ns3::FifoQueueDisc", "attrs": {"MaxSize": "50p"}}
    assert neck["ab"]["rate_bps"] == 10_000_000
    # aqmlab's device_queue counts the packet on the wire, ns-3's queue does not
    assert neck["ab"]["device_queue"] == "1p"
    bulk = [f for f in j["flows"] if f["kind"] == "bulk"]
    assert [f["cc"] for f in bulk] == ["ns3::TcpNewReno"] * 2
    assert bulk[0]["recovery"] == "ns3::TcpClassicRecovery"
    # stack ns3: ns-3's own socket defaults (128 KiB buffer, ACK every 2nd / 200 ms, 1 s min RTO)
    assert bulk[0]["rcv_attrs"]["RcvBufSize"] == "131072"
    assert (bulk[0]["rcv_attrs"]["DelAckCount"], bulk[0]["rcv_attrs"]["DelAckTimeout"]) == ("2", "200ms")
    assert bulk[0]["snd_attrs"]["MinRto"] == "1.0s"
    assert j["forward"][:3] == [True, True, False]


def test_linux_stack_maps_linux_values() -> None:
    s = tcp_spec({"cc": "cubic"}, {"sack": False, "init_cwnd": 2, "rcv_window": 100}, "tcp", "flow[0].tcp")
    assert s["cc"] == "ns3::TcpCubic" and s["recovery"] == "ns3::TcpPrrRecovery"
    assert s["snd_attrs"]["Sack"] == "false" and s["snd_attrs"]["InitialCwnd"] == "2"
    assert s["rcv_attrs"]["RcvBufSize"] == str(100 * 1448)  # an integer window is segments
    assert s["snd_attrs"]["MinRto"] == "0.2s"
    assert tcp_spec({"cc": "newreno"}, {}, "tcp", "f")["cc"] == "ns3::TcpLinuxReno"
    assert tcp_spec({"cc": "bbr"}, {}, "tcp", "f")["pacing"] is True
    assert tcp_spec({"cc": "dctcp"}, {}, "tcp", "f")["snd_attrs"]["UseEcn"] == "On"


def test_qdisc_mapping_uses_the_simulators_defaults() -> None:
    codel, notes = qdisc_spec({"kind": "codel"}, "q", 1e7, 0.01, 1500)
    # the simulator's (Linux's) 1000 packets, not CoDelQueueDisc's 1500
    assert codel == {
        "type": "ns3::CoDelQueueDisc",
        "attrs": {"MaxSize": "1000p", "Target": "0.005s", "Interval": "0.1s", "UseEcn": "false"},
    }
    # Linux's "one MTU left" rule is not ns-3's MinBytes: a note unless backlog_rule = "ns3"
    assert len(notes) == 1 and "MinBytes" in notes[0] and "q:" in notes[0]
    assert qdisc_spec({"kind": "codel", "backlog_rule": "ns3"}, "q", 1e7, 0.01, 1500) == (codel, [])
    pie, notes = qdisc_spec({"kind": "pie", "variant": "rfc8033", "derandomize": False}, "q", 1e7, 0.01, 1500)
    assert pie["attrs"]["UseDerandomization"] == "false" and pie["attrs"]["QueueDelayReference"] == "0.015s" and not notes
    assert qdisc_spec({"kind": "pie"}, "q", 1e7, 0.01, 1500)[1]  # linux variant: a note on the difference
    fq, _ = qdisc_spec({"kind": "fq_codel", "ce_threshold": "1ms"}, "q", 1e7, 0.01, 1500)
    assert fq["attrs"]["UseEcn"] == "true" and fq["attrs"]["CeThreshold"] == "0.001s" and fq["attrs"]["MaxSize"] == "10240p"
    # tc's ewma rule, by hand: min 15000 B, max 45000 B, avpkt 1000 -> burst 25, a = 25 + 1 - 15 = 11;
    # (1 - (1 - W)^25) / W is 2.0, 4.0, 7.7, 12.8 for W = 1/2 .. 1/16: the first >= 11 is W = 1/16
    red, _ = qdisc_spec({"kind": "ared", "min": "15000B", "max": "45000B"}, "q", 1e7, 0.01, 1500)
    assert red["attrs"]["QW"] == repr(1 / 16) and red["attrs"]["AdaptMaxP"] == "true"
    assert red["attrs"]["MaxSize"] == "180000B" and red["attrs"]["LInterm"] == repr(1 / 0.02)


@pytest.mark.parametrize(
    ("qdisc", "tcp", "field"),
    [
        ('{ kind = "cake" }', "", "dumbbell.qdisc.kind"),
        ('{ kind = "codel", variant = "act" }', "", "dumbbell.qdisc.variant"),
        ('{ kind = "fq_codel", quantum = 300 }', "", "dumbbell.qdisc.quantum"),
        ('{ kind = "fifo" }', 'tlp = "linux"', "tcp.tlp"),
        ('{ kind = "fifo" }', 'cc = "prague"', "tcp.cc"),
        ('{ kind = "fifo" }', 'recovery = "rate-halving"', "tcp.recovery"),
    ],
)
def test_unsupported_keys_are_refused_by_name(qdisc: str, tcp: str, field: str) -> None:
    sc = scenario(qdisc, tcp)
    with pytest.raises(ScenarioError) as e:
        job(sc)
    assert e.value.field == field and "ns3 engine" in str(e.value)
    bad = ns3_engine.check(sc)
    assert len(bad) == 1 and bad[0].startswith(field + ":")


def test_other_refusals() -> None:
    sc = aqmlab.Scenario(BASE.format(qdisc='{ kind = "fifo" }', tcp="").replace("overhead = 2", "overhead = 14"))
    assert ns3_engine.check(sc)[0].startswith("dumbbell.overhead:")
    sc = aqmlab.Scenario(BASE.format(qdisc='{ kind = "fifo" }', tcp="") + '\n[[flow]]\nkind = "web"\nfrom = "client0"\nto = "server0"\n')
    assert ns3_engine.check(sc)[0].startswith("flow[2].kind:")
    assert ns3_engine.check(scenario()) == []


def test_missing_install_is_one_sentence(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AQMLAB_NS3_CACHE", str(tmp_path))
    assert ns3_engine.available() == "ns3 is not installed: run aqmlab setup ns3"
    with pytest.raises(engines.EngineUnavailable, match="run aqmlab setup ns3"):
        engines.get("ns3").run(scenario())


@pytest.mark.skipif(ns3_engine.available() is not None, reason="ns-3 is not installed (scripts/setup-ns3.sh)")
def test_five_second_dumbbell_on_ns3() -> None:
    r = engines.get("ns3").run(scenario(tcp="trace = true"), seed=1)
    q = r.queues.set_index("name").loc["bottleneck_up"]
    assert r.engine_info["engine"] == "ns3" and r.engine_info["build"] in ("wheel", "release")
    # two bulk flows keep a 10 Mbit/s link busy
    assert q["utilization"] > 0.95
    # a 50-packet FIFO (+ the device's one) of 1502-byte frames at 10 Mbit/s: at most 61 ms
    bound = 51 * 1502 * 8 / 10e6
    assert 0.2 * bound < q["sojourn_mean"] < bound
    assert q["sojourn_max"] <= bound + 1e-6
    assert q["sojourn_n"] == q["tx_pkts"] > 1000
    flows = r.flows.set_index("name")
    goodput = flows.loc[["bulk0.0", "bulk0.1"], "goodput_bps"].sum()
    assert 0.85 * 10e6 < goodput < 10e6 * 1448 / 1500
    # the probe sees the 40 ms base RTT plus the queue
    ping = flows.loc["ping1"]
    assert 0.0401 < ping["rtt_min"] and ping["rtt_mean"] < 0.0402 + 2 * bound
    assert not math.isnan(ping["rtt_p99"]) and ping["loss_rate"] < 0.2
    # trace = true: the senders' cwnd (bytes, whole segments of 1448) and srtt samples
    s = r.samples
    cwnd = s[(s.entity == "bulk0.0") & (s.metric == "cwnd")].value
    srtt = s[(s.entity == "bulk0.0") & (s.metric == "srtt")].value
    assert len(cwnd) > 10 and cwnd.iloc[0] == 10 * 1448 and cwnd.min() >= 1448
    assert len(srtt) > 10 and srtt.min() > 0.04


@pytest.mark.skipif(ns3_engine.available() is not None, reason="ns-3 is not installed (scripts/setup-ns3.sh)")
def test_bulk_flow_stops_at_its_stop_time() -> None:
    # the sender keeps at most 256 KiB written but unsent, so after its stop the flow
    # delivers at most that (0.21 s at 10 Mbit/s) plus what was in flight
    sc = aqmlab.Scenario(BASE.format(qdisc='{ kind = "fifo", limit = 50 }', tcp="").replace('start_spread = "0.5s"', 'stop = "2s"'))
    r = engines.get("ns3").run(sc, seed=1)
    s = r.series
    g = s[(s.kind == "flow") & (s.entity == "bulk0.0") & (s.metric == "goodput_bps")]
    assert g[g.t < 2.0].value.sum() > 0
    assert g[g.t >= 2.6].value.sum() == 0


def test_per_flow_tcp_options_stay_on_their_sockets() -> None:
    """examples/tcp_bulk.toml: each bulk flow's socket gets its own congestion control,
    SACK, ECN, initial window and trace; the [tcp] values elsewhere."""
    from pathlib import Path

    sc = aqmlab.load_scenario(str(Path(__file__).resolve().parents[2] / "examples" / "tcp_bulk.toml"))
    job = translate(sc.to_dict(), sc.validate(seed=1, spread=True))
    f = {x["name"]: x for x in job["flows"]}
    assert [f[n]["cc"] for n in ("up0", "up1", "traced", "down", "fetch")] == ["ns3::TcpCubic"] * 3 + ["ns3::TcpLinuxReno", "ns3::TcpCubic"]
    assert [f[n]["trace"] for n in ("up0", "traced", "down")] == [False, True, False]
    assert (
        f["down"]["snd_attrs"]["Sack"] == "false" and f["down"]["rcv_attrs"]["Sack"] == "false" and f["up0"]["snd_attrs"]["Sack"] == "true"
    )
    assert (
        f["fetch"]["snd_attrs"]["UseEcn"] == "On" and f["fetch"]["rcv_attrs"]["UseEcn"] == "On" and f["up1"]["snd_attrs"]["UseEcn"] == "Off"
    )
    assert f["fetch"]["snd_attrs"]["InitialCwnd"] == "2" and f["up0"]["snd_attrs"]["InitialCwnd"] == "10"
    assert f["fetch"]["bytes"] == 2_000_000 and f["up0"]["bytes"] == 0
