"""Writes the shipped validation campaign's case files, python/aqmlab/campaign/cases/*.toml
(`aqmlab crosscheck --campaign quick|full`, docs/engines.md): the kernel campaign's cases
(campaign.py: 1-64 NewReno flows under each Linux qdisc, RRUL, CAKE, BBR) and cases that
vary congestion control, RTT, rate, asymmetry, ECN, mixed RTTs and probes for ns-3
(`stack = "ns3"`) and ns-2 (`stack = "ns2-sack1"`, ns-2's RED). Each file's
`run.description` says what the case is. Rerun after changing a case here:

    .venv/bin/python benchmarks/crosscheck/campaign_cases.py
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import tomli_w

HERE = Path(__file__).resolve().parent
OUT = HERE.parent.parent / "python" / "aqmlab" / "campaign" / "cases"
sys.path.insert(0, str(HERE))

from campaign import cases as kernel_cases  # noqa: E402

#: the kernel campaign's cases kept (its diagnostic variations of res_rrul_codel are not)
KERNEL = [f"tcp{n}_{q}" for n in (1, 4, 16, 64) for q in ("codel", "pie", "fq_codel", "fq_pie", "sfq", "ared", "red", "fifo")]
KERNEL += [
    "rrul",
    "res_rrul_fifo",
    "res_rrul_codel",
    "res_rrul_fq_codel",
    "cake_2hosts",
    "cake_shaper",
    "bbr1_fifo",
    "bbr1_codel",
    "bbr4_fifo",
    "bbr4_codel",
]

QDISC_ABOUT = {
    "codel": "CoDel",
    "pie": "PIE",
    "fq_codel": "FQ-CoDel",
    "fq_pie": "FQ-PIE",
    "sfq": "SFQ",
    "ared": "ARED (10 Mbit/s thresholds)",
    "red": "RED (ARED's thresholds, fixed max_p)",
    "fifo": "a 250 KB FIFO",
}


def _about(name: str) -> str:
    if name.startswith("tcp"):
        n, q = name[3:].split("_", 1)
        return f"kernel campaign: {n} NewReno flow(s), {QDISC_ABOUT[q]} (Linux defaults), 10 Mbit/s, 10 ms base RTT"
    if name == "rrul":
        return "kernel campaign: RRUL (4+4 TCP flows and probes) over the residential dumbbell"
    if name.startswith("res_rrul_"):
        return f"kernel campaign: the residential study's RRUL at 10/10 Mbit/s (tbf shapers, 50 ms), {name[9:]}, CUBIC"
    if name == "cake_2hosts":
        return "kernel campaign: CAKE triple-isolate, host A 1 flow, host B 8 flows (each host should get half)"
    if name == "cake_shaper":
        return "kernel campaign: CAKE's own shaper at 8 Mbit/s, 1 + 8 flows from two hosts"
    n, q = name[3], name.split("_")[1]
    return f"kernel campaign: {n} BBR flow(s), 10 Mbit/s, 40 ms base RTT, 1000-packet {q.upper() if q == 'fifo' else 'CoDel'}"


def _ns3(name: str, about: str, qdisc: dict[str, Any], **change: Any) -> dict[str, Any]:
    """The ns-3 agreement dumbbell of docs/ns3-engine.md: 4 NewReno bulk flows with ns-3's
    own socket defaults (stack ns3) and a 100 ms ping, 10 Mbit/s, 5 ms + 2 x 0.1 ms, PPP
    framing (overhead 2), device_queue 2; 40 s, 10 s warm-up."""
    sc: dict[str, Any] = {
        "run": {"name": name, "description": about, "duration": "40s", "warmup": "10s"},
        "dumbbell": {
            "pairs": 4,
            "rate": "10Mbit",
            "delay": "5ms",
            "access_delay": "0.1ms",
            "access_rate": "1Gbit",
            "overhead": 2,
            "device_queue": 2,
            "qdisc": qdisc,
        },
        "tcp": {"stack": "ns3"},
        "flow": [
            {"kind": "bulk", "count": 4, "from": "client{i}", "to": "server{i}", "start_spread": "1s"},
            {"kind": "ping", "from": "client0", "to": "server0", "interval": "100ms"},
        ],
    }
    for path, v in change.items():
        *head, last = path.split("__")
        d = sc
        for k in head:
            d = d.setdefault(k, {})
        d[last] = v
    return sc


def _ns2(name: str, about: str, qdisc: dict[str, Any], pairs: int = 16, **change: Any) -> dict[str, Any]:
    """The ns-2 dumbbell of benchmarks/crosscheck/ns2: Sack1 agents with DelAck sinks
    (stack ns2-sack1), 10 Mbit/s, 20 ms + 2 x 0.1 ms; 60 s, 10 s warm-up."""
    sc: dict[str, Any] = {
        "run": {"name": name, "description": about, "duration": "60s", "warmup": "10s"},
        "dumbbell": {"pairs": pairs, "rate": "10Mbit", "delay": "20ms", "access_delay": "0.1ms", "access_rate": "1Gbit", "qdisc": qdisc},
        "tcp": {"stack": "ns2-sack1"},
        "flow": [{"kind": "bulk", "count": pairs, "from": "client{i}", "to": "server{i}", "start_spread": "1s"}],
    }
    for path, v in change.items():
        *head, last = path.split("__")
        d = sc
        for k in head:
            d = d.setdefault(k, {})
        d[last] = v
    return sc


def ns3_cases() -> dict[str, dict[str, Any]]:
    out = {}
    four = "4 flows (stack ns3) and a ping, 10 Mbit/s, 10.4 ms base RTT"
    for name, about, qd in (
        ("ns3_codel", f"ns-3: CoDel, {four}", {"kind": "codel", "backlog_rule": "ns3"}),
        ("ns3_pie", f"ns-3: PIE (RFC 8033, no derandomisation), {four}", {"kind": "pie", "variant": "rfc8033", "derandomize": False}),
        ("ns3_fq_codel", f"ns-3: FQ-CoDel (ns-3's backlog rule), {four}", {"kind": "fq_codel", "backlog_rule": "ns3"}),
        ("ns3_fq_pie", f"ns-3: FQ-PIE (ns-3's backlog rule), {four}", {"kind": "fq_pie", "backlog_rule": "ns3"}),
        ("ns3_fifo", f"ns-3: 100-packet FIFO, {four}", {"kind": "fifo", "limit": 100}),
        ("ns3_ared", f"ns-3: ns-2's ARED 5/15/100 packets, {four}", {"kind": "ared", "variant": "ns2", "min": 5, "max": 15, "limit": 100}),
    ):
        out[name] = _ns3(name, about, qd)
    codel = {"kind": "codel", "backlog_rule": "ns3"}
    out["ns3_codel_ecn"] = _ns3(
        "ns3_codel_ecn", "ns-3 ECN: CoDel marking, ECN-capable NewReno, 4 flows and a ping", dict(codel, ecn=True), tcp__ecn=True
    )
    out["ns3_codel_rtt100"] = _ns3(
        "ns3_codel_rtt100", "ns-3 RTT: CoDel, 4 flows, 50 ms bottleneck delay (100 ms base RTT)", codel, dumbbell__delay="50ms"
    )
    out["ns3_codel_100mbit"] = _ns3("ns3_codel_100mbit", "ns-3 rate: CoDel, 4 flows, 100 Mbit/s", codel, dumbbell__rate="100Mbit")
    mixed = _ns3("ns3_codel_mixed_rtt", "ns-3 mixed RTTs: CoDel, 4 flows with 10, 30, 60 and 100 ms base RTT", codel)
    mixed["dumbbell"]["client_delays"] = ["0.1ms", "10ms", "25ms", "45ms"]
    out["ns3_codel_mixed_rtt"] = mixed
    asym = _ns3(
        "ns3_codel_asym",
        "ns-3 asymmetry: CoDel both ways, 2 Mbit/s up / 10 Mbit/s down, 2 up and 2 down flows (down ACKs share the up queue)",
        codel,
    )
    asym["dumbbell"].pop("rate")
    asym["dumbbell"]["up"] = {"rate": "2Mbit"}
    asym["dumbbell"]["down"] = {"rate": "10Mbit"}
    asym["flow"] = [
        {"kind": "bulk", "count": 2, "from": "client{i}", "to": "server{i}", "start_spread": "1s"},
        *({"kind": "bulk", "name": f"down{i}", "from": f"server{i}", "to": f"client{i}", "start": f"{(i - 2) * 0.5}s"} for i in (2, 3)),
        {"kind": "ping", "from": "client0", "to": "server0", "interval": "100ms"},
    ]
    out["ns3_codel_asym"] = asym
    out["ns3_cubic_codel"] = _ns3(
        "ns3_cubic_codel", "ns-3 congestion control: CUBIC (ns-3's TcpCubic, stack ns3), CoDel, 4 flows and a ping", codel, tcp__cc="cubic"
    )
    out["ns3_bbr_fifo"] = _ns3(
        "ns3_bbr_fifo",
        "ns-3 congestion control: BBR (ns-3's TcpBbr), 1000-packet FIFO, 20 ms bottleneck delay",
        {"kind": "fifo", "limit": 1000},
        tcp__cc="bbr",
        dumbbell__delay="20ms",
    )
    probes = _ns3(
        "ns3_codel_probes",
        "ns-3 probes: CoDel, 2 bulk flows, a ping, a UDP request/response probe and a 1 Mbit/s CBR stream with one-way delays",
        codel,
    )
    probes["flow"] = [{"kind": "bulk", "count": 2, "from": "client{i}", "to": "server{i}", "start_spread": "1s"},
                      {"kind": "ping", "from": "client2", "to": "server2", "interval": "100ms"},
                      {"kind": "udp_rr", "from": "client3", "to": "server3", "interval": "50ms"},
                      {"kind": "cbr", "from": "client3", "to": "server3", "rate": "1Mbit", "size": 200, "record_delay": True}]
    out["ns3_codel_probes"] = probes
    return out


def ns2_cases() -> dict[str, dict[str, Any]]:
    red = {"kind": "red", "variant": "ns2", "min": 30, "max": 90, "limit": 1000}
    out = {
        "ns2_tcp16_droptail": _ns2(
            "ns2_tcp16_droptail", "ns-2: 16 Sack1 flows, DropTail 100 packets, 10 Mbit/s, 40 ms base RTT", {"kind": "fifo", "limit": 100}
        ),
        "ns2_tcp16_red": _ns2("ns2_tcp16_red", "ns-2: 16 Sack1 flows, ns-2's RED 30/90 packets, 10 Mbit/s, 40 ms base RTT", red),
        "ns2_tcp16_ared": _ns2("ns2_tcp16_ared", "ns-2: 16 Sack1 flows, ns-2's Adaptive RED 30/90 packets", dict(red, kind="ared")),
        "ns2_tcp16_red_newreno": _ns2(
            "ns2_tcp16_red_newreno", "ns-2 congestion control: 16 Newreno agents (sack = false), ns-2's RED", red, tcp__sack=False
        ),
        "ns2_tcp4_red_rtt100": _ns2(
            "ns2_tcp4_red_rtt100",
            "ns-2 RTT: 4 Sack1 flows, RED, 50 ms bottleneck delay (100 ms base RTT)",
            red,
            pairs=4,
            dumbbell__delay="50ms",
        ),
        "ns2_tcp16_red_100mbit": _ns2(
            "ns2_tcp16_red_100mbit", "ns-2 rate: 16 Sack1 flows, RED 30/90 packets, 100 Mbit/s", red, dumbbell__rate="100Mbit"
        ),
    }
    mixed = _ns2("ns2_tcp8_red_mixed_rtt", "ns-2 mixed RTTs: 8 Sack1 flows with 40-200 ms base RTT, RED", red, pairs=8)
    mixed["dumbbell"]["client_delays"] = [f"{d}ms" for d in (0.1, 10, 20, 30, 40, 50, 60, 80)]
    out["ns2_tcp8_red_mixed_rtt"] = mixed
    asym = _ns2("ns2_red_asym", "ns-2 asymmetry: RED both ways, 2 Mbit/s up / 10 Mbit/s down, 4 up and 4 down flows", red, pairs=8)
    asym["dumbbell"].pop("rate")
    asym["dumbbell"]["up"] = {"rate": "2Mbit"}
    asym["dumbbell"]["down"] = {"rate": "10Mbit"}
    asym["dumbbell"]["qdisc"] = dict(red, min=5, max=15, limit=100)
    asym["flow"] = [
        {"kind": "bulk", "count": 4, "from": "client{i}", "to": "server{i}", "start_spread": "1s"},
        *(
            {"kind": "bulk", "name": f"down{i}", "from": f"server{i}", "to": f"client{i}", "start": f"{(i - 4) * 0.25}s"}
            for i in range(4, 8)
        ),
    ]
    out["ns2_red_asym"] = asym
    probes = _ns2("ns2_red_probes", "ns-2 probes: RED, 8 Sack1 flows, a 100 ms ping and a 1 Mbit/s CBR stream", red, pairs=10)
    probes["flow"] = [{"kind": "bulk", "count": 8, "from": "client{i}", "to": "server{i}", "start_spread": "1s"},
                      {"kind": "ping", "from": "client8", "to": "server8", "interval": "100ms"},
                      {"kind": "cbr", "from": "client9", "to": "server9", "rate": "1Mbit", "size": 200}]
    out["ns2_red_probes"] = probes
    return out


def main() -> None:
    k = kernel_cases("40s", "10s")
    out: dict[str, dict[str, Any]] = {}
    for name in KERNEL:
        sc = copy.deepcopy(k[name])
        sc["run"] = {"name": name, "description": _about(name), **{a: b for a, b in sc["run"].items() if a != "name"}}
        out[name] = sc
    out.update(ns3_cases())
    out.update(ns2_cases())
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.toml"):
        old.unlink()
    for name, sc in out.items():
        head = f"# aqmlab validation campaign case {name} (written by benchmarks/crosscheck/campaign_cases.py)\n"
        (OUT / f"{name}.toml").write_text(head + tomli_w.dumps(sc))
    print(f"{len(out)} cases written to {OUT}")


if __name__ == "__main__":
    main()
