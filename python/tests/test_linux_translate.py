"""The Linux engine without a VM: the cpio writer, module dependency resolution, the
scenario → ip/tc translation, unsupported keys, and the parsers of the guest's output."""

from __future__ import annotations

import io
import json
import math
import re
import stat

import pytest

import aqmlab
from aqmlab.errors import ScenarioError
from aqmlab.linux.cpio import CpioWriter
from aqmlab.linux.flows import data_start, iperf_flow
from aqmlab.linux.parse import cpu_busy, parse_ping, parse_tc_samples
from aqmlab.linux.queues import red_adaptation_note
from aqmlab.linux.translate import FlowMap, parse_duration, parse_rate, parse_size, tc_qdisc_args, translate
from aqmlab.linux.vm import parse_modules_dep, resolve_modules

from conftest import FIFO_OVERLOAD

# ---------------------------------------------------------------------------------------
# cpio newc


def _read_newc(data: bytes) -> list[tuple[str, int, bytes]]:
    """An independent reader: (name, mode, data) per entry, checking the 4-byte alignment."""
    out = []
    pos = 0
    while True:
        assert data[pos : pos + 6] == b"070701", pos
        f = [int(data[pos + 6 + 8 * i : pos + 14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = f[1], f[6], f[11]
        name = data[pos + 110 : pos + 110 + namesize - 1].decode()
        assert data[pos + 110 + namesize - 1] == 0
        pos += 110 + namesize
        pos += (-pos) % 4
        body = data[pos : pos + size]
        pos += size
        pos += (-pos) % 4
        if name == "TRAILER!!!":
            assert pos == len(data)
            return out
        out.append((name, mode, body))


def test_cpio_newc_layout_and_alignment():
    buf = io.BytesIO()
    w = CpioWriter(buf)
    w.dir("bin")
    w.file("bin/x", b"xy", 0o755)
    w.symlink("sh", "/bin/x")
    w.file("bin/x", b"ignored duplicate")
    w.close()
    data = buf.getvalue()
    # header 110 + "bin\0" = 114 -> padded to 116, no data
    assert data[:6] == b"070701" and len(data) % 4 == 0
    entries = _read_newc(data)
    assert [e[0] for e in entries] == ["bin", "bin/x", "sh"]
    assert stat.S_ISDIR(entries[0][1])
    assert stat.S_ISREG(entries[1][1]) and entries[1][1] & 0o777 == 0o755 and entries[1][2] == b"xy"
    assert stat.S_ISLNK(entries[2][1]) and entries[2][2] == b"/bin/x"
    # the first entry's name field: 110 + 4 bytes, padded to 116
    assert data[116:122] == b"070701"


# ---------------------------------------------------------------------------------------
# modules.dep

DEP = """kernel/net/sched/sch_fq_pie.ko: kernel/net/sched/sch_pie.ko
kernel/net/sched/sch_pie.ko:
kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/fscache/fscache.ko kernel/fs/netfs/netfs.ko
kernel/net/9p/9pnet.ko:
kernel/fs/fscache/fscache.ko: kernel/fs/netfs/netfs.ko
kernel/fs/netfs/netfs.ko:
kernel/net/bridge/bridge.ko: kernel/net/802/stp.ko kernel/net/llc/llc.ko
kernel/net/802/stp.ko: kernel/net/llc/llc.ko
kernel/net/llc/llc.ko:
"""


def test_modules_resolved_dependencies_first():
    dep = parse_modules_dep(DEP)
    order, missing = resolve_modules(["sch_fq_pie", "9p", "bridge", "sch_fq_codel"], dep)
    assert missing == ["sch_fq_codel"]  # built in: not a module
    assert len(order) == len(set(order)) == 9
    pos = {p.rsplit("/", 1)[1]: i for i, p in enumerate(order)}
    for mod, deps in (
        ("sch_fq_pie.ko", ["sch_pie.ko"]),
        ("9p.ko", ["9pnet.ko", "fscache.ko", "netfs.ko"]),
        ("fscache.ko", ["netfs.ko"]),
        ("bridge.ko", ["stp.ko", "llc.ko"]),
        ("stp.ko", ["llc.ko"]),
    ):
        for d in deps:
            assert pos[d] < pos[mod], (d, mod)


# ---------------------------------------------------------------------------------------
# units and qdiscs


def test_units():
    assert parse_duration("4.8ms", "x") == pytest.approx(0.0048)
    assert parse_duration(2, "x") == 2.0
    assert parse_rate("10Mbit/s", "x") == 10e6 and parse_rate("1gbit", "x") == 1e9
    assert parse_size("250KB", "x") == 250000 and parse_size("1MiB", "x") == 1048576
    with pytest.raises(ScenarioError) as e:
        parse_duration("5 parsecs", "dumbbell.delay")
    assert e.value.field == "dumbbell.delay"


def test_qdisc_arguments():
    assert tc_qdisc_args({"kind": "fifo", "limit": 127}, "q") == ["pfifo", "limit", "127"]
    assert tc_qdisc_args({"kind": "fifo", "limit": "250KB"}, "q") == ["bfifo", "limit", "250000"]
    assert tc_qdisc_args({"kind": "fifo"}, "q") == ["pfifo", "limit", "1000"]
    assert tc_qdisc_args({"kind": "codel", "target": "5ms", "interval": "100ms"}, "q") == [
        "codel",
        "target",
        "5000us",
        "interval",
        "100000us",
        "noecn",
    ]
    assert tc_qdisc_args({"kind": "fq_codel"}, "q") == ["fq_codel", "ecn"]  # fq_codel's ECN is on by default
    assert tc_qdisc_args({"kind": "fq_codel", "ecn": False, "quantum": 300}, "q") == ["fq_codel", "quantum", "300", "noecn"]
    assert tc_qdisc_args({"kind": "fq_codel", "backlog_rule": "linux"}, "q") == ["fq_codel", "ecn"]
    # tc's PIE alpha/beta are sixteenths: 0.125 -> 2, 1.25 -> 20
    assert tc_qdisc_args({"kind": "pie", "alpha": 0.125, "beta": 1.25, "target": "15ms"}, "q") == [
        "pie",
        "target",
        "15000us",
        "alpha",
        "2",
        "beta",
        "20",
        "noecn",
    ]
    assert tc_qdisc_args({"kind": "fq_pie", "ecn_prob": 0.1, "ecn": True}, "q") == ["fq_pie", "ecn_prob", "10", "ecn"]
    notes: list[str] = []
    # sch_codel counts packets: 250 KB of 1514-byte frames is 166 packets, and a note says so
    assert tc_qdisc_args({"kind": "codel", "limit": "250KB"}, "dumbbell.qdisc", notes=notes)[:3] == ["codel", "limit", "166"]
    assert notes and "dumbbell.qdisc.limit" in notes[0]


@pytest.mark.parametrize(
    "q, field",
    [
        ({"kind": "codel", "variant": "draft00"}, "dumbbell.qdisc.variant"),
        ({"kind": "codel_act"}, "dumbbell.qdisc.kind"),
        ({"kind": "pie", "max_burst": "100ms"}, "dumbbell.qdisc.max_burst"),
        ({"kind": "pie", "alpha": 0.1}, "dumbbell.qdisc.alpha"),
        ({"kind": "drr"}, "dumbbell.qdisc.kind"),
        ({"kind": "red", "min": 10, "max": 30}, "dumbbell.qdisc.min"),
        ({"kind": "ared", "variant": "ns2", "min": "12500B"}, "dumbbell.qdisc.variant"),
        ({"kind": "ared", "min": "12500B", "weight": 0.002}, "dumbbell.qdisc.weight"),
        ({"kind": "fq_codel", "backlog_rule": "ns3"}, "dumbbell.qdisc.backlog_rule"),
        ({"kind": "fq_pie", "backlog_rule": "ns3"}, "dumbbell.qdisc.backlog_rule"),
    ],
)
def test_unsupported_qdisc_settings_name_the_key(q, field):
    with pytest.raises(ScenarioError) as e:
        tc_qdisc_args(q, "dumbbell.qdisc")
    assert e.value.field == field
    assert "linux engine" in str(e.value) or "kernel" in str(e.value)


# ---------------------------------------------------------------------------------------
# whole scenarios

HEADLINE = """
[run]
duration = "10s"
warmup = "2s"
[dumbbell]
pairs = 2
rate = "10Mbit"
delay = "5ms"
access_delay = "0.1ms"
access_rate = "1Gbit"
overhead = 38
qdisc = { kind = "codel" }
[tcp]
cc = "newreno"
ecn = true
[[flow]]
kind = "bulk"
count = 2
from = "client{i}"
to = "server{i}"
start_spread = "1s"
[[flow]]
kind = "ping"
from = "client0"
to = "server0"
interval = "100ms"
"""


def _tr(text: str):
    sc = aqmlab.load_scenario(text)
    return translate(sc.to_dict(), sc.validate()), sc.validate()


def test_dumbbell_translation():
    tr, plan = _tr(HEADLINE)
    ns = tr.node_ns
    assert len(ns) == 6  # 2 clients, 2 servers, 2 routers
    # one delay box per link pair with a delay: bottleneck + 4 access links
    assert sorted(k for k in tr.commands if k.startswith("d")) == ["d0", "d1", "d2", "d3", "d4"]
    box = tr.commands["d0"]
    assert "link add br0 type bridge forward_delay 0 stp_state 0" in box
    assert sum("netem limit 100000 delay 5000us" in c for c in box) == 2  # one per direction
    # the bottleneck: htb at 10 Mbit/s with CoDel as its child, a size table for 38 - 14 bytes
    up = next(q for q in tr.queues if q.name == "bottleneck_up")
    assert up.ns == ns["router_a"] and up.rate_bps == 10e6 and up.tc[0] == "codel"
    ra = tr.commands[ns["router_a"]]
    assert f"tc qdisc replace dev {up.dev} root handle 1: stab overhead 24 linklayer ethernet htb default 1 direct_qlen 1000" in ra
    assert any(
        c.startswith(f"tc class add dev {up.dev} parent 1: classid 1:1 htb rate 10000000bit ceil 10000000bit burst 1538 ") for c in ra
    )
    assert f"tc qdisc replace dev {up.dev} parent 1:1 handle 10: codel noecn" in ra
    # routes: client0 reaches server0 through its access link (the only one), with its own source address
    c0 = tr.commands[ns["client0"]]
    routes = [c for c in c0 if c.startswith("route add")]
    assert len(routes) == 5 and all(c.endswith(f"src {tr.node_addr['client0']}") for c in routes)
    # router_a sends to the servers over the bottleneck
    ra_routes = [c for c in ra if c.startswith(f"route add {tr.node_addr['server1']}/32")]
    assert len(ra_routes) == 1 and f"dev {up.dev}" in ra_routes[0]
    # TCP: NewReno is the kernel's reno; ECN on; start times are the simulator's
    assert "echo reno > /proc/sys/net/ipv4/tcp_congestion_control" in tr.script
    assert "echo 1 > /proc/sys/net/ipv4/tcp_ecn" in tr.script
    bulk = [f for f in tr.flows if f.kind == "bulk"]
    assert [f.start for f in bulk] == [f["start"] for f in plan["flows"] if f["kind"] == "bulk"]
    assert all(f.cc == "reno" for f in bulk)
    assert "tso off gso off gro off" in tr.script
    ping = next(f for f in tr.flows if f.kind == "ping")
    assert f"-i 0.1 -c {int((10 - ping.start) / 0.1)}" in tr.script


def test_gso_on_leaves_the_veths_offloads_on():
    # [tcp] gso = "on" is the simulator's GSO sender; the kernel's counterpart is a host
    # with its offloads on (TSO/GSO/GRO at every veth), so its qdiscs see skbs
    tr, _ = _tr(HEADLINE.replace("[tcp]", '[tcp]\ngso = "on"'))
    assert "tso on gso on gro on" in tr.script and "tso off" not in tr.script
    tr, _ = _tr(HEADLINE.replace("[tcp]", '[tcp]\ngso = "off"'))
    assert "tso off gso off gro off" in tr.script
    # per flow: the offloads are per interface, not per socket
    text = HEADLINE.replace('start_spread = "1s"', 'start_spread = "1s"\ntcp = { gso = "on" }', 1)
    with pytest.raises(ScenarioError) as e:
        _tr(text)
    assert e.value.field.endswith("tcp.gso")


def test_offloads_switch_the_mean_sojourn_to_the_drain_time():
    # with offloads on the qdisc's length counts skbs and its packet counters segments:
    # 20 skbs of 2 segments queued on average, 1000 segments/s leaving -> Little's law in
    # packets would say 20 ms where each segment waits ~40 ms; the drain time is kept
    from aqmlab.linux.queues import littles_mean

    assert littles_mean(0.040, [20.0, 20.0], 1000.0, offloads=False) == pytest.approx(0.020)
    assert littles_mean(0.040, [20.0, 20.0], 1000.0, offloads=True) == 0.040
    # no samples or no departures: the drain time
    assert littles_mean(0.040, [], 1000.0, offloads=False) == 0.040
    assert littles_mean(0.040, [20.0], 0.0, offloads=False) == 0.040
    tr, _ = _tr(HEADLINE.replace("[tcp]", '[tcp]\ngso = "on"'))
    assert tr.offloads and any(n.startswith("tcp.gso: with offloads on") for n in tr.notes)
    tr, _ = _tr(HEADLINE)
    assert not tr.offloads


def test_flows_start_when_the_simulators_do():
    # start_spread draws (and the start jitter) depend on the seed: the kernel's flows
    # must start at the simulator's instants, not all at the nominal start
    sc = aqmlab.load_scenario(HEADLINE)
    names = [f["name"] for f in sc.validate()["flows"]]
    # the run's own seed by default, as aqmlab.run takes it
    assert sc.validate(spread=True)["flows"] == sc.validate(seed=sc.validate()["seed"], spread=True)["flows"]
    nominal = [f["start"] for f in sc.validate()["flows"]]
    for seed in (1, 2):
        drawn = [f["start"] for f in sc.validate(seed=seed, spread=True)["flows"]]
        ran = aqmlab.run(sc, seed=seed).flows.set_index("name")["start"]
        assert drawn == pytest.approx([ran[n] for n in names], abs=1e-9)
        assert drawn[:2] != nominal[:2] and drawn[0] != drawn[1]
        tr = translate(sc.to_dict(), sc.validate(seed=seed, spread=True))
        assert [f.start for f in tr.flows] == pytest.approx(drawn, abs=1e-9)
        assert f"sleep {drawn[0]:.6f}; echo" in tr.script
    # iperf3 takes -t as whole seconds (atoi): rounded up, never truncated to 9 s or to
    # 0 ("forever")
    assert re.findall(r"iperf3 -c \S+ -p \d+ -t (\S+)", tr.script) == ["10", "10"]


def test_capture_is_opt_in():
    sc = aqmlab.load_scenario(HEADLINE)
    plain = translate(sc.to_dict(), sc.validate())
    assert "tcpdump" not in plain.script and plain.captures == []
    cap = translate(sc.to_dict(), sc.validate(), capture=["bottleneck_up"])
    (cm,) = cap.captures
    up = next(q for q in cap.queues if q.name == "bottleneck_up")
    # router_a: the queue's device out, every other interface of the namespace in
    assert (cm.ns, cm.dev) == (up.ns, up.dev) and up.dev not in cm.ingress and len(cm.ingress) == 2
    for key, fn in cm.files().items():
        dev, d = (up.dev, "out") if key == "out" else (key[3:], "in")
        assert f"tcpdump -i {dev} -Q {d} -n -s 96 " in cap.script and f"-w $O/{fn}" in cap.script
    assert "echo real $(adjtimex" in cap.script and "kill -INT $CAPP" in cap.script
    # everything else is the plain script
    extra = [ln for ln in cap.script.splitlines() if ln not in plain.script.splitlines()]
    assert all(
        "tcpdump" in ln or "CAPP" in ln or ln.startswith(("echo real", "echo 0 > /proc/sys/net/core/netdev_tstamp_prequeue", "sleep 1"))
        for ln in extra
    )
    with pytest.raises(ScenarioError):
        translate(sc.to_dict(), sc.validate(), capture=["nope"])


def test_explicit_graph_routes_and_loss():
    text = """
[run]
duration = "5s"
[[node]]
name = "a"
kind = "host"
[[node]]
name = "r"
kind = "router"
[[node]]
name = "b"
kind = "host"
[[link]]
from = "a"
to = "r"
rate = "100Mbit"
[[link]]
from = "r"
to = "b"
rate = "20Mbit"
delay = "10ms"
loss = 0.01
qdisc = { kind = "fq_codel", target = "10ms" }
[[flow]]
kind = "cbr"
from = "a"
to = "b"
rate = "5Mbit"
"""
    tr, _ = _tr(text)
    rb = next(q for q in tr.queues if q.name == "r->b")
    assert rb.rate_bps == 20e6 and rb.tc == ["fq_codel", "target", "10000us", "ecn"]
    box = [c for k, v in tr.commands.items() if k.startswith("d") for c in v]
    assert sum("delay 10000us loss random 1%" in c for c in box) == 2
    # a's route to b goes via r; r forwards; b's route back to a exists
    assert any(c.startswith(f"route add {tr.node_addr['b']}/32 via") for c in tr.commands[tr.node_ns["a"]])
    assert any(c.startswith(f"route add {tr.node_addr['a']}/32 via") for c in tr.commands[tr.node_ns["b"]])
    cbr = tr.flows[0]
    assert cbr.tool == "iperf3" and cbr.size == 1500
    assert "-u -b 4906666 -l 1472" in tr.script  # UDP payload rate of 5 Mbit/s of 1500-byte IP packets
    assert tr.sampled_ns == [tr.node_ns["r"]]


@pytest.mark.parametrize(
    "patch, field",
    [
        ('[tcp]\ndelayed_ack = "ns2"\n', "tcp.delayed_ack"),
        ('[tcp]\nmax_window = 10\n', "tcp.max_window"),
        ('[tcp]\nprr = false\n', "tcp.prr"),
        ('[tcp]\nstack = "ns3"\n', "tcp.stack"),
    ],
)
def test_unsupported_tcp_keys(patch, field):
    text = HEADLINE.replace("[tcp]\ncc = \"newreno\"\necn = true\n", patch)
    with pytest.raises(ScenarioError) as e:
        _tr(text)
    assert e.value.field == field


def test_delayed_ack_off_is_the_quickack_route_metric():
    """`delayed_ack = "off"` (every segment ACKed) is Linux's per-route quickack metric on
    every route, which the receiver consults for each ACK; the other modes are refused."""
    tr, _ = _tr(HEADLINE.replace('[tcp]\ncc = "newreno"\n', '[tcp]\ncc = "newreno"\ndelayed_ack = "off"\n'))
    routes = [c for cmds in tr.commands.values() for c in cmds if c.startswith("route add")]
    assert routes and all(c.endswith(" quickack 1") for c in routes)
    tr, _ = _tr(HEADLINE)
    assert not any("quickack" in c for cmds in tr.commands.values() for c in cmds)


PER_FLOW = """
[run]
duration = "5s"
[dumbbell]
pairs = 3
rate = "10Mbit"
delay = "10ms"
[tcp]
cc = "cubic"
[[flow]]
name = "up"
kind = "bulk"
count = 2
from = "client{i}"
to = "server{i}"
tcp = { trace = true }
[[flow]]
name = "fetch"
kind = "bulk"
from = "server1"
to = "client1"
tcp = { ecn = true, init_cwnd = 2, cc = "newreno" }
[[flow]]
name = "nosack"
kind = "bulk"
from = "server2"
to = "client2"
tcp = { sack = false }
"""


def _sysctls(tr, host: str) -> dict[str, str]:
    line = next(x for x in tr.script.splitlines() if x.startswith(f"/usr/bin/ip netns exec {tr.node_ns[host]} sh -c"))
    return {k: v for v, k in re.findall(r"echo (\S+) > /proc/sys/net/ipv4/(tcp_\w+)", line)}


def test_per_flow_tcp_options_on_routes_and_hosts():
    """cc per connection (iperf3 -C); init_cwnd and ECN on the sender's route to the
    flow's destination only, the receiver accepting ECN (tcp_ecn = 2); SACK off on the
    hosts whose every flow has it off; trace is noted, not refused."""
    tr, _ = _tr(PER_FLOW)
    routes = {n: [c for c in tr.commands[tr.node_ns[n]] if c.startswith("route add")] for n in tr.node_ns}
    to_c1 = [c for c in routes["server1"] if c.startswith(f"route add {tr.node_addr['client1']}/32 ")]
    assert len(to_c1) == 1 and to_c1[0].endswith(" initcwnd 2 features ecn")
    others = [c for n, cs in routes.items() for c in cs if c not in to_c1]
    assert others and not any("initcwnd" in c or "features" in c for c in others)
    assert (
        _sysctls(tr, "client1")["tcp_ecn"] == "2"
        and _sysctls(tr, "server1")["tcp_ecn"] == "0"
        and _sysctls(tr, "client0")["tcp_ecn"] == "0"
    )
    # pair 2 carries only the flow without SACK
    assert (
        _sysctls(tr, "server2")["tcp_sack"] == "0"
        and _sysctls(tr, "client2")["tcp_sack"] == "0"
        and _sysctls(tr, "client1")["tcp_sack"] == "1"
    )
    assert " -C reno " in next(x for x in tr.script.splitlines() if "-p 5203 " in x and "iperf3 -c" in x)
    assert any("tcp.trace" in n and "no cwnd" in n for n in tr.notes)


@pytest.mark.parametrize(
    "old, new, field, words",
    [
        # SACK is negotiated per host: server1/client1 also carry up1 with SACK
        ('tcp = { ecn = true, init_cwnd = 2, cc = "newreno" }', "tcp = { sack = false }", "flow[1].tcp.sack", ("per host", "up1")),
        # two flows from server1 to client1 with different initial windows: one route
        ('from = "server2"\nto = "client2"', 'from = "server1"\nto = "client1"', "flow[1].tcp.init_cwnd", ("same destination", "route")),
        # a route turns ECN on, not off
        ('cc = "cubic"\n[[flow]]', 'cc = "cubic"\necn = true\n[[flow]]', "flow[1].tcp.ecn", ("not off",)),
    ],
)
def test_per_flow_tcp_options_the_kernel_cannot_set_alone(old, new, field, words):
    text = PER_FLOW.replace(old, new, 1).replace(
        "ecn = true, init_cwnd", "ecn = false, init_cwnd" if "ecn = true\n" in new else "ecn = true, init_cwnd"
    )
    with pytest.raises(ScenarioError) as e:
        _tr(text)
    assert e.value.field == field and all(w in str(e.value) for w in words), str(e.value)


def test_unsupported_workload_and_topology():
    web = HEADLINE.replace('kind = "ping"', 'kind = "web"').replace('interval = "100ms"', "")
    with pytest.raises(ScenarioError) as e:
        _tr(web)
    assert e.value.field == "flow[1].kind" and "not supported by the linux engine" in str(e.value)
    dq = HEADLINE.replace("overhead = 38", "device_queue = 4")
    with pytest.raises(ScenarioError) as e:
        _tr(dq)
    assert e.value.field == "dumbbell.device_queue"


def test_rrul_expands_to_supported_flows():
    text = """
[run]
duration = "10s"
[dumbbell]
rate = "10Mbit"
delay = "10ms"
[[flow]]
kind = "rrul_be"
from = "client0"
to = "server0"
"""
    tr, _ = _tr(text)
    kinds = sorted(f.kind for f in tr.flows)
    assert kinds == ["bulk"] * 8 + ["ping"] + ["udp_rr"] * 3  # Flent rrul_be: 3 UDP probes + ICMP
    assert len({f.port for f in tr.flows}) == len(tr.flows)  # one server port per flow
    assert {f.tool for f in tr.flows} == {"iperf3", "ping", "irtt"}
    down = [f for f in tr.flows if f.kind == "bulk" and f.src == "server0"]
    assert len(down) == 4


def _client_lines(tr) -> dict[str, str]:
    """The guest's client command of each flow, by flow name (one launch line per flow)."""
    lines = [line for line in tr.script.splitlines() if "echo " in line and "$O/starts" in line]
    assert len(lines) == len(tr.flows)
    return {f.name: next(line for line in lines if f"echo {f.port} $(up) >> $O/starts" in line) for f in tr.flows}


def test_dscp_marks_become_each_tools_tos_option():
    # TOS byte = DSCP << 2: EF 46 -> 184, CS1 8 -> 32, CS5 40 -> 160, AF41 34 -> 136
    text = """
[run]
duration = "10s"
[dumbbell]
rate = "10Mbit"
delay = "10ms"
[[flow]]
kind = "bulk"
name = "ef"
from = "client0"
to = "server0"
dscp = "EF"
[[flow]]
kind = "bulk"
name = "plain"
from = "client0"
to = "server0"
dscp = "BE"
[[flow]]
kind = "cbr"
name = "video"
from = "client0"
to = "server0"
rate = "1Mbit"
dscp = "AF41"
[[flow]]
kind = "ping"
name = "icmp"
from = "client0"
to = "server0"
dscp = 8
[[flow]]
kind = "udp_rr"
name = "voice"
from = "client0"
to = "server0"
dscp = "EF"
"""
    tr, _ = _tr(text)
    tos = {f.name: f.tos for f in tr.flows}
    assert tos == {"ef": 184, "plain": 0, "video": 136, "icmp": 32, "voice": 184}
    cmd = _client_lines(tr)
    assert re.search(r"iperf3 -c \S+ -p \d+ -t 10 -C \w+ -S 184 -J ", cmd["ef"])
    assert " -S " not in cmd["plain"]  # best effort: the tools' default, no option
    assert re.search(r"iperf3 -c \S+ -p \d+ -u .* -S 136 -J ", cmd["video"])
    assert re.search(r"/usr/bin/ping -n .* -W 5 -Q 32 10\.", cmd["icmp"])
    assert re.search(r"irtt client -Q .* --dscp=184 -o ", cmd["voice"])
    # no server-side option: irtt's server copies the request's TOS, Linux echoes ICMP
    # with the request's TOS (iperf3's server cannot be told to mark its ACKs)
    assert not any(" -S " in line or "--dscp" in line for line in tr.script.splitlines() if " -s -1 " in line or "irtt server" in line)


def test_flent_rrul_marks_its_flows_as_flent_does():
    base = "[run]\nduration = \"10s\"\n[dumbbell]\nrate = \"10Mbit\"\n[[flow]]\nfrom = \"client0\"\nto = \"server0\"\n"
    tr, plan = _tr(base + 'kind = "rrul"\n')
    by_kind: dict[str, list[int]] = {}
    for f in tr.flows:
        by_kind.setdefault(f.kind, []).append(f.tos)
    # four TCP flows per direction marked BE, BK (CS1), CS5, EF; UDP probes EF, BK, BE; ICMP unmarked
    assert sorted(by_kind["bulk"]) == sorted([0, 32, 160, 184] * 2)
    assert sorted(by_kind["udp_rr"]) == [0, 32, 184]
    assert by_kind["ping"] == [0]
    assert [f.tos for f in tr.flows] == [(f["dscp"] << 2) for f in plan["flows"]]
    cmd = _client_lines(tr)
    assert sum("-S 160" in cmd[f.name] for f in tr.flows) == 2 and sum("--dscp=" in cmd[f.name] for f in tr.flows) == 2
    # rrul_be is rrul without marks
    tr_be, _ = _tr(base + 'kind = "rrul_be"\n')
    assert {f.tos for f in tr_be.flows} == {0}
    assert "--dscp" not in tr_be.script and " -S " not in tr_be.script
    assert not any(" -Q " in line for line in tr_be.script.splitlines() if "/usr/bin/ping " in line)  # irtt's -Q is its quiet flag


def test_progress_lines_on_the_guest_console():
    from aqmlab.linux.translate import PROGRESS_TAG, parse_progress

    tr, _ = _tr(HEADLINE)  # 10 s
    tick = [line for line in tr.script.splitlines() if PROGRESS_TAG in line]
    assert len(tick) == 1 and "> /dev/console" in tick[0] and "[ ! -e /tmp/stop ]" in tick[0] and "sleep 1;" in tick[0]
    assert tr.script.index("T0=$(up)") < tr.script.index(PROGRESS_TAG) < tr.script.index("touch /tmp/stop")
    # what the guest prints, with its uptime 14.52 s and t0 at 4.02 s
    echo = re.search(r'echo "(.*?)" > /dev/console', tick[0])
    assert echo is not None
    printed = echo.group(1).replace("$u", "14.52").replace("$T0", "4.02")
    assert parse_progress(printed + "\r\n") == pytest.approx((10.5, 10.0))
    assert parse_progress(f"{PROGRESS_TAG} 3.10 4.02 10") == (0.0, 10.0)  # before t0: still setting up
    assert parse_progress(f"[  5.1] eth0: x {PROGRESS_TAG} 9.5 1.5 30 y") == (8.0, 30.0)  # kernel text around it
    assert parse_progress(f"{PROGRESS_TAG} 9.5 1.5 1e+06") == (8.0, 1e6)
    for other in ("aqmlab-vm: job exit 0", "aqmlab-vm: crng ready, waited from 0.1 to 0.1 s", f"{PROGRESS_TAG} x 1 2", ""):
        assert parse_progress(other) is None


def _fake_image():
    from pathlib import Path

    from aqmlab.linux.vm import VmImage

    return VmImage(Path("bzImage"), Path("initramfs.cpio"), "6.1.0-test", {})


def test_vm_console_is_streamed_line_by_line(monkeypatch, tmp_path):
    from aqmlab.linux import vm

    # stands in for qemu: the console on stdout, qemu's own messages on stderr
    script = ("printf 'boot\\r\\naqmlab-vm: progress 2.5 1.0 5\\r\\n'; sleep 0.2; echo 'qemu: note' >&2; printf 'aqmlab-vm: progress 7.0 "
              "1.0 5\\r\\naqmlab-vm: job exit 0\\r\\n'")
    monkeypatch.setattr(vm, "qemu_command", lambda *a, **k: ["sh", "-c", script])
    seen: list[str] = []
    run = vm.run_job(tmp_path, timeout=30, image=_fake_image(), on_line=seen.append)
    assert run.exit_ok and "qemu: note" in run.console and run.console.count("aqmlab-vm: progress") == 2
    from aqmlab.linux.translate import parse_progress

    assert [p for p in map(parse_progress, seen) if p] == [(1.5, 5.0), (6.0, 5.0)]

    # a failing listener is dropped; the run still completes with the whole console
    def boom(line: str) -> None:
        raise RuntimeError("display gone")

    run = vm.run_job(tmp_path, timeout=30, image=_fake_image(), on_line=boom)
    assert run.exit_ok and "job exit 0" in run.console

    monkeypatch.setattr(vm, "qemu_command", lambda *a, **k: ["sh", "-c", "echo started; exec sleep 30"])
    with pytest.raises(vm.VmError, match=r"did not finish within \d+ s wall time .*started"):
        vm.run_job(tmp_path, timeout=0.5, image=_fake_image())


def test_cli_vm_progress_lines_when_stderr_is_not_a_terminal(capsys):
    from aqmlab.cli import _vm_progress

    with _vm_progress(False) as (say, progress):
        say("booting")
        assert progress is None
    assert capsys.readouterr().err == ""
    with _vm_progress(True) as (say, progress):
        assert progress is not None
        say("linux engine: booting the VM")
        for reached in (0.0, 0.4, 1.0, 2.9, 3.1, 10.0, 10.5, 12.0):
            progress(reached, 10.0)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "linux engine: booting the VM"
    # one line per tenth of the run reached (0, 1, 2, 3 and the end), not one per report
    assert [line.split(" after ")[0] for line in err[1:]] == [
        "linux VM: running: 0.0 of 10 s virtual",
        "linux VM: running: 1.0 of 10 s virtual",
        "linux VM: running: 2.9 of 10 s virtual",
        "linux VM: running: 3.1 of 10 s virtual",
        "linux VM: collecting results: 10.0 of 10 s virtual",
    ]


# ---------------------------------------------------------------------------------------
# parsing the guest's output


def test_parse_ping_and_tc_samples_and_cpu():
    text = ("PING 10.255.0.4 (10.255.0.4) 56(84) bytes of data.\n[1.0] 64 bytes from 10.255.0.4: icmp_seq=1 ttl=62 time=40.2 ms\n[1.2] 64 "
            "bytes from 10.255.0.4: icmp_seq=3 ttl=62 time=20.0 ms\n\n--- x ---\n4 packets transmitted, 2 received, 50% packet loss\n")
    sent, rtts = parse_ping(text)
    assert sent == 4 and rtts == {1: pytest.approx(0.0402), 3: pytest.approx(0.02)}
    entries = [{"kind": "codel", "handle": "10:", "dev": "e0a", "bytes": 100, "packets": 1, "drops": 0, "backlog": 3028, "qlen": 2}]
    s = parse_tc_samples(f"T 3.50\n{json.dumps(entries)}\n\nT 3.60\n[{{\"cut")
    assert s == [(3.5, entries)]
    # 100 ticks, 25 idle -> 75 % busy
    busy = cpu_busy("T 1.0 cpu 10 0 10 80 0 0 0 0 0 0\nT 2.0 cpu 40 0 55 105 0 0 0 0 0 0\n")
    assert busy == [(2.0, pytest.approx(0.75))]


def _red_samples(probs, adaptive=True):
    return [
        (float(i), [{"kind": "red", "handle": "10:", "dev": "e0a", "options": {"adaptive": adaptive, "probability": p}}])
        for i, p in enumerate(probs)
    ]


def test_red_flagged_adaptive_with_a_constant_max_p_is_reported():
    note = red_adaptation_note("bottleneck_up", "e0a", _red_samples([0.02] * 20))
    assert note and "max_p stayed 0.02 in all 20 samples" in note and 'kind = "red"' in note
    # adapting (max_p moved), not adaptive, another device, or too few samples: no note
    assert red_adaptation_note("q", "e0a", _red_samples([0.02] * 19 + [0.0225])) is None
    assert red_adaptation_note("q", "e0a", _red_samples([0.02] * 20, adaptive=False)) is None
    assert red_adaptation_note("q", "e1b", _red_samples([0.02] * 20)) is None
    assert red_adaptation_note("q", "e0a", _red_samples([0.02] * 9)) is None
    assert red_adaptation_note("q", "e0a", None) is None


def test_iperf_goodput_counts_receiver_bytes_after_warmup_in_bins():
    import numpy as np

    srv = {
        "intervals": [
            {"sum": {"start": 0.0, "end": 1.0, "bytes": 1_000_000}},
            {"sum": {"start": 1.0, "end": 2.0, "bytes": 1_250_000}},
            {"sum": {"start": 2.0, "end": 3.0, "bytes": 1_250_000}},
        ]
    }
    cli = {
        "end": {"streams": [{"sender": {"bytes": 3_600_000, "retransmits": 7, "mean_rtt": 30000, "min_rtt": 10000}}]},
        "intervals": [{"streams": [{"snd_cwnd": 1000}]}, {"streams": [{"snd_cwnd": 3000}]}],
    }
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        Path(d, "srv.5201.json").write_text(json.dumps(srv))
        Path(d, "cli.5201.json").write_text(json.dumps(cli))
        f = FlowMap("f", "bulk", "a", "b", 0.5, 3.5, 5201, "iperf3")
        bins = np.zeros(4)
        row: dict = {}
        # the client started 0.5 s after t0; warm-up 1.5 s: intervals with midpoints 2.0 and 3.0 count
        iperf_flow(Path(d), f, 0.5, 1.5, 4.0, 1.0, bins, row)
    assert row["goodput_bps"] == pytest.approx(2_500_000 * 8 / 2.0)
    assert row["delivered_bytes"] == 3_500_000 and row["sent_bytes"] == 3_600_000 and row["retransmits"] == 7
    assert row["srtt_mean"] == pytest.approx(0.03) and row["rtt_min"] == pytest.approx(0.01) and row["cwnd_mean"] == 2000
    # interval [0.5, 1.5) splits half/half over bins 0 and 1, and so on
    assert bins.tolist() == pytest.approx([500_000, 1_125_000, 1_250_000, 625_000])


def test_iperf_intervals_count_from_the_tests_start_not_the_launch(tmp_path):
    import numpy as np

    # launched at 0.5 s; the client exits at 4.3 s after a 3.0 s test: the test began at
    # 1.3 s (a start-up of 0.8 s), so its intervals are placed from there
    srv = {"intervals": [{"sum": {"start": float(k), "end": k + 1.0, "bytes": 1_000_000}} for k in range(3)]}
    cli = {"end": {"sum_sent": {"seconds": 3.0, "bytes": 3_000_000}, "streams": [{"sender": {"bytes": 3_000_000}}]}}
    (tmp_path / "srv.5201.json").write_text(json.dumps(srv))
    (tmp_path / "cli.5201.json").write_text(json.dumps(cli))
    f = FlowMap("f", "bulk", "a", "b", 0.5, 4.5, 5201, "iperf3")
    bins, row = np.zeros(5), {}
    began = iperf_flow(tmp_path, f, 0.5, 2.0, 5.0, 1.0, bins, row, ended=4.3)
    assert began == pytest.approx(1.3)
    # intervals [1.3, 2.3), [2.3, 3.3), [3.3, 4.3): midpoints 2.8 and 3.8 lie in [2.0, 4.5]
    assert row["goodput_bps"] == pytest.approx(2_000_000 * 8 / 2.5)
    assert bins.tolist() == pytest.approx([0, 700_000, 1_000_000, 1_000_000, 300_000])
    # no exit time (or no duration in the JSON): the launch, as before
    assert data_start(0.5, None, cli) == 0.5 and data_start(0.5, 4.3, {}) == 0.5
    # never before the launch
    assert data_start(0.5, 3.2, cli) == 0.5
    # a client that left no result: NaN, not zero, and None for the caller to report
    (tmp_path / "cli.5202.json").write_text("")
    (tmp_path / "srv.5202.json").write_text("")
    g = FlowMap("g", "bulk", "a", "b", 0.0, 4.5, 5202, "iperf3")
    row2: dict = {}
    bins2 = np.zeros(5)
    assert iperf_flow(tmp_path, g, 0.0, 2.0, 5.0, 1.0, bins2, row2, ended=None) is None
    assert math.isnan(row2["goodput_bps"]) and math.isnan(row2["delivered_bytes"])
    # ... and so is its goodput series, not a flat zero
    assert np.isnan(bins2).all()
    # a server that logged 2.5 s before its client vanished: the bins it covered keep their
    # bytes, the partly covered one and those after it are unknown
    srv3 = {"intervals": [{"sum": {"start": k * 0.5, "end": k * 0.5 + 0.5, "bytes": 100_000}} for k in range(5)]}
    (tmp_path / "srv.5203.json").write_text(json.dumps(srv3))
    (tmp_path / "cli.5203.json").write_text("")
    h = FlowMap("h", "bulk", "a", "b", 0.2, 4.5, 5203, "iperf3")
    bins3, row3 = np.zeros(5), {}
    assert iperf_flow(tmp_path, h, 0.2, 2.0, 5.0, 1.0, bins3, row3, ended=None) is None
    # intervals cover [0.2, 2.7): bins 0 and 1 whole, bin 2 only to 2.7
    assert bins3[:2].tolist() == pytest.approx([160_000, 200_000]) and np.isnan(bins3[2:]).all()
    assert math.isnan(row3["goodput_bps"])


def test_simulator_at_the_kernels_start_times():
    from aqmlab.linux.crosscheck import kernel_start_rows, run_sim, with_kernel_starts

    bulk_only = (
        HEADLINE.split('[[flow]]\nkind = "ping"')[0]
        .replace('duration = "10s"', 'duration = "4s"')
        .replace('warmup = "2s"', 'warmup = "1s"')
    )
    sc = aqmlab.load_scenario(bulk_only)
    plan = sc.validate(seed=3, spread=True)
    names = [f["name"] for f in plan["flows"]]
    # zero lags: the same flows at the same instants, the same run
    same = with_kernel_starts(bulk_only, 3, dict.fromkeys(names, 0.0))
    assert same is not None
    a, b = run_sim(bulk_only, seed=3), run_sim(same, seed=3)
    assert a.queues.equals(b.queues) and a.flows[["name", "start", "goodput_bps"]].equals(b.flows[["name", "start", "goodput_bps"]])
    # a lag moves that flow's start and only that one
    moved = with_kernel_starts(bulk_only, 3, {names[0]: 0.75, names[1]: 0.0})
    assert moved is not None
    starts = {f["name"]: f["start"] for f in aqmlab.load_scenario(moved).validate(seed=3, spread=True)["flows"]}
    assert starts[names[0]] == pytest.approx(plan["flows"][0]["start"] + 0.75) and starts[names[1]] == pytest.approx(
        plan["flows"][1]["start"]
    )
    # the extra rows are labelled and carry no verdict
    rows = kernel_start_rows(run_sim(moved, seed=3), a)
    assert rows and all(r.metric.endswith("sim at the kernel's starts") and r.verdict == "" for r in rows)
    # what the rewrite would lose is refused: a ping flow, a per-flow cc, a missing lag
    assert with_kernel_starts(HEADLINE, 3, dict.fromkeys(names, 0.0)) is None
    assert (
        with_kernel_starts(bulk_only.replace('start_spread = "1s"', 'start_spread = "1s"\ncc = "cubic"'), 3, dict.fromkeys(names, 0.0))
        is None
    )
    assert with_kernel_starts(bulk_only, 3, {names[0]: 0.1}) is None


def test_client_exit_times_are_logged():
    tr = translate(aqmlab.load_scenario(HEADLINE).to_dict(), aqmlab.load_scenario(HEADLINE).validate())
    assert tr.script.count(">> $O/ends )") == len(tr.flows)


# ---------------------------------------------------------------------------------------
# the comparison table


def test_crosscheck_rows_of_identical_results_agree_and_a_shift_is_flagged():
    from aqmlab.linux.crosscheck import compare, verdict

    r = aqmlab.run(HEADLINE)
    rows = compare(r, r)
    assert verdict(rows)
    metrics = {(x.entity, x.metric) for x in rows}
    assert ("bottleneck_up", "utilisation %") in metrics and ("bottleneck_up", "sojourn mean ms") in metrics
    assert ("bottleneck_up", "drops after warm-up /s") in metrics
    assert ("ping1", "induced latency ms") in metrics
    # idle access links (utilisation < 5 %) are left out
    assert not any(x.entity.startswith("router_a->client") for x in rows)
    # steady-state drops: the series after the warm-up, per second
    s = r.series
    d = s[(s["entity"] == "bottleneck_up") & (s["metric"] == "drops") & (s["t"] >= 2.0 - 1e-9)]["value"].sum() / 8.0
    row = next(x for x in rows if x.metric == "drops after warm-up /s")
    assert row.sim == pytest.approx(d) and row.linux == row.sim

    class Shifted:
        """The same result with the bottleneck's mean sojourn ``k`` times higher."""

        k = 1.3

        def __init__(self, base):
            self.__dict__.update(duration=base.duration, warmup=base.warmup, series=base.series, flows=base.flows)
            q = base.queues.copy()
            q.loc[q["name"] == "bottleneck_up", "sojourn_mean"] *= self.k
            self.queues = q

    rows = compare(r, Shifted(r))
    bad = [x for x in rows if x.verdict == "DIFF"]
    assert [(x.entity, x.metric) for x in bad] == [("bottleneck_up", "sojourn mean ms")]
    # 30 % is beyond the looser tier too; 20 % is "close" (outside the goal of ±10 %), not ok
    assert not verdict(compare(r, Shifted(r), close_tol=0.25))
    Shifted.k = 1.2
    rows = compare(r, Shifted(r), close_tol=0.25)
    soj = next(x for x in rows if x.entity == "bottleneck_up" and x.metric == "sojourn mean ms")
    assert soj.verdict == "close" and not verdict(rows) and not any(x.verdict == "DIFF" for x in rows)


def test_crosscheck_compares_red_forced_drops_summed_with_the_kernels_early_counter():
    from aqmlab.linux.crosscheck import compare

    sc = aqmlab.load_scenario(HEADLINE).to_dict()
    sc["dumbbell"]["qdisc"] = {"kind": "red", "min": "3000B", "max": "9000B"}
    r = aqmlab.run(sc)
    up = r.queues[r.queues["name"] == "bottleneck_up"].iloc[0]
    assert up["drops_early"] > 0 and up["drops_forced"] > 0

    class Kernel:
        """The same result as the Linux engine reports it: sch_red's `early` counts the
        forced drops too, and there is no forced counter."""

        def __init__(self, base):
            self.__dict__.update(duration=base.duration, warmup=base.warmup, series=base.series, flows=base.flows)
            q = base.queues.copy()
            q["drops_early"] = q["drops_early"] + q["drops_forced"]
            q["drops_forced"] = math.nan
            self.queues = q

    rows = {(x.entity, x.metric): x for x in compare(r, Kernel(r))}
    row = rows[("bottleneck_up", "drops early + forced (whole run)")]
    assert row.sim == row.linux == up["drops_early"] + up["drops_forced"]
    assert ("bottleneck_up", "drops forced (whole run)") not in rows and ("bottleneck_up", "drops early (whole run)") not in rows


def test_crosscheck_sojourn_counts_the_packets_the_kernel_estimate_counts():
    """The kernel's mean sojourn is Little's law over every packet leaving the queue
    (transmitted, and dropped after waiting by CoDel-family and cake queues); the
    simulator's row takes the mean over the same packets from its per-packet trace."""
    from aqmlab.linux.crosscheck import compare, departed_sojourn_mean, run_sim

    fifo = FIFO_OVERLOAD.read_text()
    # tail drops waited nothing and are not departures: the mean over sent packets, here
    # the full 100-packet FIFO's 100 x 1514 B x 8 / 10 Mbit/s
    r = run_sim(fifo)
    assert departed_sojourn_mean(r, "bottleneck_up") == pytest.approx(0.12112, rel=5e-3)
    assert math.isnan(departed_sojourn_mean(aqmlab.run(fifo), "bottleneck_up"))  # no per-packet trace
    # flow queueing: an unresponsive 20 Mbit/s flow beside a 4 Mbit/s one (under its fair
    # share); fq_codel (200 packets) drops only the fat flow's packets, which waited far
    # longer than the thin flow's, so the mean over departures exceeds the one over sent packets
    fq = fifo.replace('qdisc = { kind = "fifo", limit = 100 }', 'qdisc = { kind = "fq_codel", limit = 200 }') + (
        '\n[[flow]]\nkind = "cbr"\nfrom = "client0"\nto = "server0"\nrate = "4Mbit"\nsize = 1500\n'
    )
    r = run_sim(fq)
    s = r.samples
    q = s[(s["entity"] == "bottleneck_up") & (s["kind"] == "queue")]
    soj, drops = q[q["metric"] == "sojourn"]["value"], q[q["metric"] == "drop"]["value"]
    sent = r.queues.set_index("name").loc["bottleneck_up", "sojourn_mean"]
    assert soj.mean() == pytest.approx(sent) and len(drops) > 1000 and drops.mean() > 1.3 * sent
    dep = departed_sojourn_mean(r, "bottleneck_up")
    assert dep == pytest.approx((soj.sum() + drops.sum()) / (len(soj) + len(drops))) and dep > 1.2 * sent
    row = next(x for x in compare(r, r) if x.entity == "bottleneck_up" and x.metric == "sojourn mean ms")
    assert row.sim == pytest.approx(dep * 1e3)


def test_crosscheck_per_group_goodput_shares():
    """Two [[flow]] tables (host 0: one bulk flow, host 1: two): a row per table with its
    goodput and its share of all bulk goodput; the shares add up to 100 %, and a Linux
    result in which host 0 got everything shows up as a +/- shift in both rows."""
    from aqmlab.linux.crosscheck import compare

    text = HEADLINE.replace("count = 2\nfrom = \"client{i}\"\nto = \"server{i}\"", "from = \"client0\"\nto = \"server0\"")
    text = text.replace(
        '[[flow]]\nkind = "ping"', '[[flow]]\nkind = "bulk"\ncount = 2\nfrom = "client1"\nto = "server1"\n[[flow]]\nkind = "ping"'
    )
    r = aqmlab.run(text)
    f = r.flows.set_index("name")
    assert sorted(f[f["kind"] == "bulk"]["group"].tolist()) == [0, 1, 1]
    rows = compare(r, r)
    share = {x.entity: x for x in rows if x.metric == "share of bulk goodput %"}
    assert len(share) == 2 and sum(x.sim for x in share.values()) == pytest.approx(100.0)
    g0 = next(v for k, v in share.items() if k.startswith("group 0 (1 bulk"))
    bulk = f[f["kind"] == "bulk"]
    assert g0.sim == pytest.approx(100 * bulk[bulk["group"] == 0]["goodput_bps"].sum() / bulk["goodput_bps"].sum())
    assert g0.linux == g0.sim and g0.diff == "+0.00 pt"

    class HostZeroTakesAll:
        def __init__(self, base):
            fl = base.flows.copy()
            fl.loc[(fl["kind"] == "bulk") & (fl["group"] == 1), "goodput_bps"] = 0.0
            self.__dict__.update(duration=base.duration, warmup=base.warmup, series=base.series, queues=base.queues, flows=fl)

    share = {x.entity: x for x in compare(r, HostZeroTakesAll(r)) if x.metric == "share of bulk goodput %"}
    assert [round(x.linux) for x in sorted(share.values(), key=lambda x: x.entity)] == [100, 0]


def test_cli_names_an_unsupported_key_before_booting_a_vm(tmp_path):
    import subprocess
    import sys

    f = tmp_path / "web.toml"
    f.write_text(HEADLINE.replace('kind = "ping"', 'kind = "web"').replace('interval = "100ms"', ""))
    for cmd in (["run", str(f), "--engine", "linux"], ["crosscheck", str(f)]):
        p = subprocess.run([sys.executable, "-m", "aqmlab", *cmd], capture_output=True, text=True, timeout=120)
        assert p.returncode == 2, p.stderr
        assert p.stderr.startswith("error: flow[1].kind:") and "not supported by the linux engine" in p.stderr


def test_queue_counters_utilisation_and_littles_law_sojourn(tmp_path):
    """A CoDel queue at 10 Mbit/s: 1000 frames sent and 190 head drops in the 1 s after the
    warm-up, a steady backlog of 20 packets / 30 000 bytes. Utilisation counts frame bytes
    after the warm-up; the mean sojourn is Little's law in packets, 20 / (1000 + 190) per
    second = 16.8 ms (head-dropped packets leave the queue too); the percentiles are the
    drain time 30000*8/10e6 = 24 ms divided by 1 + 190/1000; the qdisc counters are
    whole-run."""
    from aqmlab._longtable import LongTable
    from aqmlab.linux.queues import queue_row
    from aqmlab.linux.translate import QueueMap

    def entry(pk, drops, over=0):
        return {
            "kind": "codel",
            "handle": "10:",
            "dev": "e0a",
            "bytes": pk * 1514,
            "packets": pk,
            "drops": drops,
            "drop_overlimit": over,
            "ecn_mark": 0,
            "backlog": 30000,
            "qlen": 20,
        }

    (tmp_path / "warm.n0").write_text(f"T 11.0\n{json.dumps([entry(500, 50)])}\n")
    (tmp_path / "final.n0").write_text(f"T 12.0\n{json.dumps([entry(1500, 250, 10)])}\n")
    samples = [(10.0 + 0.2 * k, [entry(500 + 100 * k, 50 + 20 * k)]) for k in range(11)]
    qm = QueueMap("bottleneck_up", "router_a", "router_b", "n0", "e0a", 10e6, 0.005, "codel", ["codel"], "htb", 14, 1500)
    series = LongTable(["tx_bps"])
    # t0 = 10: warm-up 1 s, duration 2 s (1000 frames of 1514 B in 1 s = 12.1 Mbit/s, capped)
    row = queue_row(tmp_path, qm, 10.0, 1.0, 2.0, 0.2, 10, samples, series, 0)
    assert row["tx_pkts"] == 1000 and row["tx_bytes"] == 1000 * 1500
    assert row["utilization"] == 1.0
    assert row["dropped"] == 250 and row["drops_overlimit"] == 10 and row["drops_codel"] == 240  # whole run
    assert row["arrivals"] == 1500 + 250 + 20
    # head drops after warm-up: (250 - 10) - (50 - 0) = 190 -> factor 1 + 190/1000
    assert row["sojourn_mean"] == pytest.approx(20 / 1190)
    assert row["sojourn_p50"] == pytest.approx(30000 * 8 / 10e6 / 1.19)
    assert row["sojourn_n"] == 6  # samples at t - t0 in [1, 2]


def test_irtt_command_lines_use_options_irtt_has():
    """irtt's client has -q/-Q, its server neither (an unknown flag makes it exit at once)."""
    text = """
[run]
duration = "5s"
[dumbbell]
rate = "10Mbit"
[[flow]]
kind = "udp_rr"
from = "client0"
to = "server0"
interval = "100ms"
"""
    tr, _ = _tr(text)
    server = next(line for line in tr.script.splitlines() if "irtt server" in line)
    client = next(line for line in tr.script.splitlines() if "irtt client" in line)
    assert " -q" not in server and " -Q" not in server
    assert " client -Q -i 100000us -d 5000000us " in client and "-o $O/irtt." in client


def test_engine_tables_have_the_simulators_columns():
    from aqmlab.linux.collect import flow_base_columns, queue_columns

    r = aqmlab.run(HEADLINE)
    assert queue_columns() == list(r.queues.columns)
    assert list(r.flows.columns)[: len(flow_base_columns())] == flow_base_columns()


def test_kernel_ldelay_samples_of_codel_and_fq_codel(tmp_path):
    """CoDel's own per-packet sojourn: sch_codel's qdisc statistics and fq_codel's per-flow
    class statistics carry ``ldelay`` (µs), the sojourn of the packet dequeued last. The
    sampler dumps fq_codel's classes (only for fq_codel queues); a sample is the mean over
    the listed flows with backlog, or over all listed flows when none has any."""
    from aqmlab._longtable import LongTable
    from aqmlab.linux.parse import parse_class_samples
    from aqmlab.linux.queues import ldelay_sample, ldelay_series
    from aqmlab.linux.translate import QueueMap

    tr, _ = _tr(HEADLINE)
    assert "class show" not in tr.script  # codel: the qdisc dump has ldelay already
    tr_fq, _ = _tr(HEADLINE.replace('qdisc = { kind = "codel" }', 'qdisc = { kind = "fq_codel" }'))
    up = next(q for q in tr_fq.queues if q.name == "bottleneck_up")
    assert f"-s -j class show dev {up.dev} parent 10:; echo; }} >> $O/cls.{up.ns}" in tr_fq.script

    assert ldelay_sample("codel", {"ldelay": 4200}, None) == pytest.approx(0.0042)
    assert ldelay_sample("codel", {}, None) != ldelay_sample("codel", {}, None)  # NaN
    busy = [
        {"class": "fq_codel", "handle": "10:3", "qlen": 3, "ldelay": 6000},
        {"class": "fq_codel", "handle": "10:9", "qlen": 1, "ldelay": 2000},
        {"class": "fq_codel", "handle": "10:a", "qlen": 0, "ldelay": 100},
    ]
    assert ldelay_sample("fq_codel", None, busy) == pytest.approx(0.004)
    idle = [dict(c, qlen=0) for c in busy]
    assert ldelay_sample("fq_codel", None, idle) == pytest.approx((6000 + 2000 + 100) / 3 * 1e-6)

    text = (
        "".join(f"T {10.0 + 0.5 * k:.1f} e0a\n{json.dumps([dict(busy[0], ldelay=1000 * (k + 1))])}\n\n" for k in range(5))
        + 'T 12.6 e0a\n[{"cut'
    )
    cls = parse_class_samples(text)
    assert [t for t, _, _ in cls] == [10.0, 10.5, 11.0, 11.5, 12.0] and all(d == "e0a" for _, d, _ in cls)
    qm = QueueMap("bottleneck_up", "router_a", "router_b", "n0", "e0a", 10e6, 0.005, "fq_codel", ["fq_codel"], "htb", 14, 1500)
    series = LongTable(["ldelay"])
    # t0 = 10, warm-up 1 s, duration 2 s: samples at 1.0, 1.5, 2.0 (3, 4, 5 ms)
    st = ldelay_series(qm, 10.0, 1.0, 2.0, 0.5, 4, None, cls, series, 0)
    assert st["n"] == 3 and st["mean"] == pytest.approx(0.004)
    vals = [v for (_, _, _, _, v) in series.rows]
    assert vals == pytest.approx([0.001, 0.002, 0.003, 0.004])  # the sample at 2.0 s is past the last bin


def test_kernel_tcp_counters_from_the_senders_mib():
    """The warm-up and final snapshots read /proc/net/netstat and /proc/net/snmp in every
    namespace with a bulk sender; RTOs and recovery episodes come from TcpExt counters."""
    from aqmlab.linux.flows import tcp_counters
    from aqmlab.linux.parse import parse_mib

    tr, _ = _tr(HEADLINE)
    for c in ("client0", "client1"):
        assert f"netns exec {tr.node_ns[c]} cat /proc/net/netstat /proc/net/snmp > /tmp/out/final.mib.{tr.node_ns[c]}" in tr.script
    assert f"/tmp/out/final.mib.{tr.node_ns['server0']}" not in tr.script  # receivers only
    text = (
        "TcpExt: SyncookiesSent TCPTimeouts TCPLossProbes TCPLossProbeRecovery TCPSackRecovery TCPRenoRecovery TCPDSACKUndo "
        "TCPSpuriousRTOs\n"
        "TcpExt: 0 7 31 4 12 0 2 1\n"
        "IpExt: InNoRoutes InOctets\n"
        "IpExt: 0 123456\n"
        "Ip: Forwarding DefaultTTL\n"
        "Ip: 1 64\n"
        "Tcp: RtoAlgorithm RtoMin ActiveOpens RetransSegs\n"
        "Tcp: 1 200 3 57\n"
    )
    m = parse_mib(text)
    assert m["TcpExt.TCPTimeouts"] == 7 and m["IpExt.InOctets"] == 123456 and m["Tcp.RetransSegs"] == 57
    c = tcp_counters(m)
    assert (
        c["rtos"],
        c["fast_recoveries"],
        c["loss_probes"],
        c["loss_probe_recoveries"],
        c["retransmits"],
        c["undos"],
        c["spurious_rtos"],
    ) == (7, 12, 31, 4, 57, 2, 1)
    # per-flow undo columns: TCPLossUndo (absent here: NaN) and Full + Partial + DSACK undos
    assert c["recovery_undos"] == 2 and c["rto_undos"] != c["rto_undos"]
    assert tcp_counters({})["rtos"] != tcp_counters({})["rtos"]  # NaN: no counter


def test_cake_translation_to_tc_keywords():
    """The simulator's cake settings become iproute2 q_cake.c keywords; what the scenario
    leaves out is left to the kernel's defaults; tc has no target keyword (sch_cake uses
    rtt / 20), so only that target is accepted."""
    assert tc_qdisc_args({"kind": "cake"}, "q") == ["cake"]
    a = tc_qdisc_args(
        {
            "kind": "cake",
            "bandwidth": "10Mbit",
            "rtt": "50ms",
            "target": "2500us",
            "diffserv": "diffserv4",
            "isolation": "triple-isolate",
            "nat": False,
            "wash": True,
            "ingress": True,
            "ack_filter": "aggressive",
            "overhead": 18,
            "mpu": 64,
            "atm": "noatm",
            "ether_vlan": 2,
            "memlimit": "4MiB",
        },
        "dumbbell.qdisc",
    )
    assert a == [
        "cake",
        "bandwidth",
        "10000000bit",
        "rtt",
        "50000us",
        "diffserv4",
        "triple-isolate",
        "nonat",
        "wash",
        "ingress",
        "ack-filter-aggressive",
        "overhead",
        "18",
        "mpu",
        "64",
        "noatm",
        "ether-vlan",
        "ether-vlan",
        "memlimit",
        str(4 * 1024 * 1024),
    ]
    assert tc_qdisc_args({"kind": "cake", "rtt": "metro", "isolation": "dual-srchost", "preset": "docsis", "ack_filter": "off"}, "q") == [
        "cake",
        "metro",
        "dual-srchost",
        "docsis",
        "no-ack-filter",
    ]
    for q, field in (
        ({"kind": "cake", "target": "3ms"}, "q.target"),  # internet: 100 ms / 20 = 5 ms
        ({"kind": "cake", "rtt": "metro", "target": "5ms"}, "q.target"),
        ({"kind": "cake", "isolation": "triple"}, "q.isolation"),
        ({"kind": "cake", "diffserv": "diffserv5"}, "q.diffserv"),
        ({"kind": "cake", "rtt": "galactic"}, "q.rtt"),
        ({"kind": "cake", "overhead": 300}, "q.overhead"),
        ({"kind": "cake", "fwmark": 1}, "q.fwmark"),
    ):
        with pytest.raises(ScenarioError) as e:
            tc_qdisc_args(q, "q")
        assert e.value.field == field, (q, e.value)
    assert tc_qdisc_args({"kind": "cake", "rtt": "metro", "target": "500us"}, "q") == ["cake", "metro"]


def test_cake_queue_counters_and_delay_sample(tmp_path):
    """sch_cake: whole-run drops (COBALT/overflow not told apart: NaN reasons), the ACK
    filter's drops and ECN marks summed over tins; the delay sample is the busiest tin's
    avg_delay_us; COBALT's drops count as head drops in the Little's-law estimate."""
    from aqmlab._longtable import LongTable
    from aqmlab.linux.queues import ldelay_sample, queue_row
    from aqmlab.linux.translate import QueueMap

    def entry(pk, drops, backlog=15140):
        tins = [{"sent_bytes": 100, "drops": 1, "ecn_mark": 2, "ack_drops": 0, "avg_delay_us": 900},
                {"sent_bytes": pk * 1514, "drops": drops - 1, "ecn_mark": 5, "ack_drops": 3, "avg_delay_us": 7000}]
        return {
            "kind": "cake",
            "handle": "10:",
            "dev": "e0a",
            "bytes": pk * 1514,
            "packets": pk,
            "drops": drops,
            "backlog": backlog,
            "qlen": 10,
            "tins": tins,
        }

    (tmp_path / "warm.n0").write_text(f"T 11.0\n{json.dumps([entry(500, 40)])}\n")
    (tmp_path / "final.n0").write_text(f"T 12.0\n{json.dumps([entry(1500, 140)])}\n")
    samples = [(10.0 + 0.2 * k, [entry(500 + 100 * k, 40 + 10 * k)]) for k in range(11)]
    qm = QueueMap("bottleneck_up", "router_a", "router_b", "n0", "e0a", 10e6, 0.005, "cake", ["cake"], "htb", 14, 1500)
    row = queue_row(tmp_path, qm, 10.0, 1.0, 2.0, 0.2, 10, samples, LongTable(["tx_bps"]), 0)
    assert row["dropped"] == 140 and row["drops_ack_filter"] == 3 and row["marks_codel"] == 7 and row["marked"] == 7
    assert row["drops_codel"] != row["drops_codel"]  # NaN: the kernel does not split them
    # 10 packets queued; 100 head drops after the warm-up against 1000 transmissions in 1 s
    assert row["sojourn_mean"] == pytest.approx(10 / 1100)
    assert row["sojourn_p50"] == pytest.approx(15140 * 8 / 10e6 / 1.1)
    assert ldelay_sample("cake", entry(1, 1), None) == pytest.approx(0.007)


def test_cake_tins_in_the_simulators_numbering_after_the_warm_up(tmp_path):
    """sch_cake dumps diffserv3/4's bulk tin first (tin_order = bulk_order); the engine puts
    the tins back in the kernel's index order (0 best effort, 1 bulk, 2 video, 3 voice), as
    the simulator's tinN_* columns number them, with IP bytes (each packet's 14 bytes of
    framing off), the ACK filter's drops apart, the threshold in bit/s, and the counters
    taken after the warm-up as the simulator's are."""
    from aqmlab._longtable import LongTable
    from aqmlab.linux.queues import cake_tins, queue_row
    from aqmlab.linux.translate import QueueMap

    def dump(bulk_pk, be_pk, voice_pk, drops=(0, 0, 0)):
        # dump order: bulk (1), best effort (0), video (2), voice (3); 1514-byte frames
        tins = [
            {
                "threshold_rate": 62500,
                "sent_bytes": 1514 * bulk_pk,
                "sent_packets": bulk_pk,
                "drops": drops[0],
                "ecn_mark": 1,
                "ack_drops": 0,
            },
            {
                "threshold_rate": 1000000,
                "sent_bytes": 1514 * be_pk,
                "sent_packets": be_pk,
                "drops": drops[1],
                "ecn_mark": 0,
                "ack_drops": 4,
            },
            {"threshold_rate": 500000, "sent_bytes": 0, "sent_packets": 0, "drops": 0, "ecn_mark": 0, "ack_drops": 0},
            {
                "threshold_rate": 250000,
                "sent_bytes": 1514 * voice_pk,
                "sent_packets": voice_pk,
                "drops": drops[2],
                "ecn_mark": 0,
                "ack_drops": 0,
            },
        ]
        return {
            "kind": "cake",
            "handle": "10:",
            "dev": "e0a",
            "options": {"diffserv": "diffserv4"},
            "bytes": 1514 * (bulk_pk + be_pk + voice_pk),
            "packets": bulk_pk + be_pk + voice_pk,
            "drops": sum(drops),
            "backlog": 0,
            "qlen": 0,
            "tins": tins,
        }

    tins = cake_tins(dump(10, 100, 20), 14)
    assert tins["tin1_sent_bytes"] == 10 * 1500 and tins["tin0_sent_bytes"] == 100 * 1500 and tins["tin3_sent_bytes"] == 20 * 1500
    assert tins["tin1_threshold_bps"] == 500_000 and tins["tin0_threshold_bps"] == 8_000_000  # bulk 1/16, best effort all of 8 Mbit/s
    assert tins["tin0_ack_drops"] == 4 and tins["tin1_marks"] == 1
    assert list(tins)[:5] == ["tin0_sent_bytes", "tin0_drops", "tin0_marks", "tin0_ack_drops", "tin0_threshold_bps"]
    # diffserv8 and precedence dump in index order; besteffort has one tin
    d8 = dump(10, 100, 20)
    d8["options"]["diffserv"] = "diffserv8"
    assert cake_tins(d8, 14)["tin0_sent_bytes"] == 10 * 1500
    assert cake_tins({"kind": "cake", "tins": []}, 14) == {}

    (tmp_path / "warm.n0").write_text(f"T 11.0\n{json.dumps([dump(4, 50, 5, (1, 2, 3))])}\n")
    (tmp_path / "final.n0").write_text(f"T 12.0\n{json.dumps([dump(10, 100, 20, (5, 6, 7))])}\n")
    qm = QueueMap("bottleneck_up", "router_a", "router_b", "n0", "e0a", 10e6, 0.005, "cake", ["cake"], "htb", 14, 1500)
    row = queue_row(tmp_path, qm, 10.0, 1.0, 2.0, 0.2, 10, [], LongTable(["tx_bps"]), 0)
    assert (row["tin0_sent_bytes"], row["tin1_sent_bytes"], row["tin3_sent_bytes"]) == (50 * 1500, 6 * 1500, 15 * 1500)
    assert (row["tin0_drops"], row["tin1_drops"], row["tin3_drops"]) == (4, 4, 4)
    assert row["tin1_threshold_bps"] == 500_000  # a setting, not a counter


def test_crosscheck_rows_of_cake_tins():
    """Per tin, the share of the bytes sent (difference in points) and the drops; tins
    that sent nothing in either engine are left out."""
    from aqmlab.linux.crosscheck import compare

    text = HEADLINE.replace('qdisc = { kind = "codel" }', 'qdisc = { kind = "cake", diffserv = "diffserv4" }') + 'dscp = "CS1"\n'
    r = aqmlab.run(text)
    q = r.queues.set_index("name")
    assert q.loc["bottleneck_up", "tin1_sent_bytes"] > 0  # the CS1-marked ping
    rows = {(x.entity, x.metric): x for x in compare(r, r)}
    up = {m: x for (e, m), x in rows.items() if e == "bottleneck_up" and m.startswith("tin")}
    assert set(up) >= {"tin0 share of bytes sent %", "tin1 share of bytes sent %"} and "tin2 share of bytes sent %" not in up
    total = sum(x.sim for m, x in up.items() if m.endswith("share of bytes sent %"))
    assert total == pytest.approx(100.0) and all(x.diff == "+0.00 pt" for m, x in up.items() if m.endswith("%"))


def test_queue_samplers_sleep_random_gaps():
    """The qdisc samplers sleep a random gap, uniform in [0.5, 1.5) x half a bin, so that
    they cannot lock onto the phase of a regular sawtooth and every bin gets a sample."""
    import shutil
    import subprocess

    from aqmlab.linux.translate import _jittered_sleep

    tr, _ = _tr(HEADLINE)  # bin 200 ms (the default)
    assert tr.sample_period == pytest.approx(0.1)
    assert "ms=$((50 + RANDOM % 100)); sleep $((ms / 1000))." in tr.script
    bb = shutil.which("busybox")
    if bb is None:
        pytest.skip("busybox (the guest's shell) is not installed here")
    # the guest's shell: print the sleep arguments instead of sleeping
    snippet = "; ".join(["for i in $(seq 400); do " + _jittered_sleep(0.1).replace("sleep ", "echo ") + "; done"])
    out = subprocess.run([bb, "sh", "-c", snippet], capture_output=True, text=True, check=True).stdout.split()
    gaps = [float(x) for x in out]
    assert len(gaps) == 400 and min(gaps) >= 0.05 and max(gaps) < 0.15
    assert len(set(gaps)) > 50 and 0.09 < sum(gaps) / len(gaps) < 0.11


def test_fq_codel_class_dump_in_tc_text_format():
    """Debian 12's tc prints class statistics as text even with -j: the parser reads kind,
    handle, backlog, qlen and ldelay (us / ms / s) from it."""
    from aqmlab.linux.parse import parse_class_samples
    from aqmlab.linux.queues import ldelay_sample

    text = (
        "T 3.63 e0a\n\nT 4.09 e0a\n"
        "class fq_codel 10:68 parent 10: \n (dropped 0, overlimits 0 requeues 0) \n backlog 7570b 5p requeues 0\n  deficit 0 count 0 "
        "lastcount 0 ldelay 20.6ms\n"
        "class fq_codel 10:31b parent 10: \n (dropped 0, overlimits 0 requeues 0) \n backlog 0b 0p requeues 0\n  deficit 1448 count 0 "
        "lastcount 0 ldelay 716us\n"
        "class fq_codel 10:398 parent 10: \n backlog 66b 1p requeues 0\n  deficit 1514 count 0 lastcount 0 ldelay 0us\n"
        "T 4.30 e0a\nclass fq_codel 10:5 parent 10: \n backlog 0b 0p requeues 0\n  deficit 1514 count 2 lastcount 1 ldelay 1.2s dropping "
        "drop_next 3.0ms\n"
    )
    s = parse_class_samples(text)
    assert [(t, d, len(c)) for t, d, c in s] == [(3.63, "e0a", 0), (4.09, "e0a", 3), (4.3, "e0a", 1)]
    c = s[1][2]
    assert c[0] == {"class": "fq_codel", "handle": "10:68", "backlog": 7570, "qlen": 5, "ldelay": pytest.approx(20600.0)}
    assert c[1]["ldelay"] == pytest.approx(716.0) and c[2]["qlen"] == 1
    assert s[2][2][0]["ldelay"] == pytest.approx(1.2e6)
    # flows with backlog: (20.6 ms + 0) / 2
    assert ldelay_sample("fq_codel", None, c) == pytest.approx(0.0103)
    assert ldelay_sample("fq_codel", None, []) != ldelay_sample("fq_codel", None, [])  # NaN: no flow listed


def test_bbr_maps_to_the_kernels_tcp_bbr():
    """cc = "bbr" (BBRv1, Linux tcp_bbr) selects the kernel's bbr per namespace; the module
    is in the image; cc names the kernel lacks are refused naming the key."""
    from aqmlab.linux.translate import _tcp_settings
    from aqmlab.linux.vm import MODULES

    assert _tcp_settings({"cc": "bbr"}, "tcp") == {"cc": "bbr"}
    assert "tcp_bbr" in MODULES
    with pytest.raises(ScenarioError) as e:
        _tcp_settings({"cc": "bbr3"}, "tcp")
    assert e.value.field == "tcp.cc"


def test_a_finite_transfer_warns_that_iperf3_counts_until_its_test_end():
    tr, _ = _tr(PER_FLOW.replace('tcp = { sack = false }', 'tcp = { sack = false }\nbytes = "1MB"'))
    assert "-n 1000000" in tr.script
    assert sum("flow[2].bytes" in n and "lower bound" in n for n in tr.notes) == 1
