"""Scenario → shell script for the guest: network namespaces, veth pairs, ``ip`` routes,
``tc`` qdiscs, sysctls, workloads and samplers.

The topology is the one the simulator resolves (``Scenario.validate()``: nodes, links with
their rate/delay/overhead, flows with their start times after ``start_spread``), so both
engines run the same graph and the same flow start times. The per-link qdisc parameters
come from the scenario text (``dumbbell.qdisc``, ``dumbbell.up.qdisc``, ``access_qdisc``,
``link[i].qdisc``).

Mapping (docs/linux-engine.md has the key-by-key table):

- every node is a network namespace; a node has one address ``10.255.x.y/32`` on its
  loopback and every route uses it as source, so flows and probes see one address per host;
- every duplex link is a veth pair with a /30; a link with a propagation delay or wire
  loss gets a *delay box* in the middle: a namespace whose bridge joins the two halves and
  whose netem qdiscs (one per direction) add the delay and loss, so the shaped queue and
  the delay line are separate hops as on a testbed;
- each direction's egress is ``htb`` (rate = link rate, or ``tbf`` for a ``shaper`` with
  ``kind = "tbf"``) with the scenario's qdisc as its only child (handle ``10:``); a framing
  overhead other than the 14 bytes of Ethernet that veth already counts becomes a size
  table (``stab overhead``);
- routes are static, fewest hops (breadth-first search; hosts never forward);
- segmentation offloads (TSO/GSO/GRO) are switched off on every veth, so the qdiscs see
  MTU-sized packets; veth has no device queue below the qdisc (``device_queue = 1``).
"""

from __future__ import annotations

import math
import re
import shlex
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aqmlab._topology import duplex_pairs
from aqmlab.errors import ScenarioError

__all__ = [
    "Translation",
    "CaptureMap",
    "translate",
    "parse_progress",
    "PROGRESS_TAG",
    "parse_duration",
    "parse_rate",
    "parse_size",
    "tc_qdisc_args",
    "BIN",
]

#: Absolute paths of the guest's programs: busybox's shell prefers its own applets
#: (a reduced ``ip``) over PATH, so the real ones are named in full.
BIN = {
    "ip": "/usr/bin/ip",
    "tc": "/usr/bin/tc",
    "iperf3": "/usr/bin/iperf3",
    "ping": "/usr/bin/ping",
    "ethtool": "/usr/bin/ethtool",
    "irtt": "/usr/bin/irtt",
    "tcpdump": "/usr/bin/tcpdump",
}

#: Bytes of each packet a capture keeps (``tcpdump -s``): Ethernet, IPv4 and TCP headers
#: with options (SACK blocks), nothing of the payload.
CAPTURE_SNAPLEN = 96

_DUR = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "min": 60.0}
_RATE = {"bit": 1, "bps": 1, "kbit": 1e3, "kbps": 1e3, "mbit": 1e6, "mbps": 1e6, "gbit": 1e9, "gbps": 1e9, "tbit": 1e12}
_SIZE = {"b": 1, "kb": 1000, "mb": 1e6, "gb": 1e9, "kib": 1024, "mib": 1024**2, "gib": 1024**3}
_NUM = r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*"


def parse_duration(v: Any, field_: str) -> float:
    """Seconds from ``"25ms"``/``"1.5s"``/a bare number (the scenario's units)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    m = re.fullmatch(_NUM + r"([a-zA-Zµ]+)\s*", str(v))
    if not m or m.group(2).lower() not in _DUR:
        raise ScenarioError(field_, f"bad duration {v!r}")
    return float(m.group(1)) * _DUR[m.group(2).lower()]


def parse_rate(v: Any, field_: str) -> float:
    """bit/s from ``"10Mbit"``/``"10Mbit/s"``/a bare number."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    m = re.fullmatch(_NUM + r"([a-zA-Z]+)(?:/s)?\s*", str(v))
    if not m or m.group(2).lower() not in _RATE:
        raise ScenarioError(field_, f"bad rate {v!r}")
    return float(m.group(1)) * _RATE[m.group(2).lower()]


def parse_size(v: Any, field_: str) -> float:
    """Bytes from ``"250KB"``/``"1MiB"``/a bare number."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    m = re.fullmatch(_NUM + r"([a-zA-Z]+)\s*", str(v))
    if not m or m.group(2).lower() not in _SIZE:
        raise ScenarioError(field_, f"bad size {v!r}")
    return float(m.group(1)) * _SIZE[m.group(2).lower()]


def _us(seconds: float) -> str:
    return f"{round(seconds * 1e6)}us"


# ---------------------------------------------------------------------------------------
# qdiscs


def _limit_packets(q: dict, where: str, frame: int, notes: list[str]) -> int | None:
    """A packet limit for qdiscs whose kernel limit is in packets only."""
    if "limit" not in q:
        return None
    v = q["limit"]
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    b = parse_size(v, f"{where}.limit")
    n = max(1, math.ceil(b / frame))
    notes.append(f"{where}.limit: {v!r} is bytes but the kernel qdisc counts packets: {n} packets of {frame} B")
    return n


def _flag(q: dict, key: str, on: str, off: str | None, default: bool) -> list[str]:
    v = q.get(key, default)
    if not isinstance(v, bool):
        raise ScenarioError(key, f"expected true or false, got {v!r}")
    if v:
        return [on]
    return [off] if off else []


def _only_default(q: dict, where: str, key: str, allowed: tuple, why: str) -> None:
    if key in q and q[key] not in allowed:
        raise ScenarioError(
            f"{where}.{key}", f"{q[key]!r} is not supported by the linux engine ({why}); allowed: {', '.join(repr(a) for a in allowed)}"
        )


def _unknown(q: dict, where: str, known: set[str]) -> None:
    for k in q:
        if k != "kind" and k not in known:
            raise ScenarioError(
                f"{where}.{k}",
                f"not supported by the linux engine for qdisc kind {q['kind']!r} (supported keys: {', '.join(sorted(known)) or 'none'})",
            )


def _sixteenths(q: dict, where: str, key: str) -> list[str]:
    if key not in q:
        return []
    v = float(q[key])
    n = round(v * 16)
    if abs(n / 16 - v) > 1e-9 or not 0 <= n <= 32:
        raise ScenarioError(f"{where}.{key}", f"{v!r}: the kernel takes multiples of 1/16 in [0, 2]")
    return [key, str(n)]


def tc_qdisc_args(q: dict, where: str, *, mtu: int = 1500, overhead: int = 14, notes: list[str] | None = None) -> list[str]:
    """The ``tc qdisc add ... <here>`` arguments (kind and parameters) of a scenario qdisc
    table. ``where`` is the dotted path of the table for error messages."""
    notes = notes if notes is not None else []
    kind = q.get("kind")
    frame = mtu + overhead
    if kind == "pfifo_fast":
        _unknown(q, where, {"limit"})
        if q.get("limit", 1000) != 1000:
            raise ScenarioError(
                f"{where}.limit",
                "the linux engine keeps the veth txqueuelen of 1000 that pfifo_fast takes as its per-band limit (only 1000 is allowed)",
            )
        return ["pfifo_fast"]
    if kind in ("fifo", "pfifo", "bfifo"):
        _unknown(q, where, {"limit"})
        lim = q.get("limit", 1000)
        if isinstance(lim, int) and not isinstance(lim, bool):
            return ["pfifo", "limit", str(lim)]
        return ["bfifo", "limit", str(int(parse_size(lim, f"{where}.limit")))]
    if kind == "codel":
        _unknown(
            q,
            where,
            {"limit", "target", "interval", "ecn", "ce_threshold", "variant", "drop_at", "sojourn_estimate", "fixed_count", "backlog_rule"},
        )
        _only_default(q, where, "variant", ("linux",), "the kernel runs Linux sch_codel")
        _only_default(q, where, "backlog_rule", ("linux",), "the kernel runs Linux sch_codel")
        _only_default(q, where, "drop_at", ("dequeue",), "sch_codel drops at dequeue")
        _only_default(q, where, "fixed_count", ("off",), "a simulator diagnostic")
        _only_default(q, where, "sojourn_estimate", ("head",), "sch_codel uses timestamps")
        a = ["codel"]
        lim = _limit_packets(q, where, frame, notes)
        if lim is not None:
            a += ["limit", str(lim)]
        for k in ("target", "interval"):
            if k in q:
                a += [k, _us(parse_duration(q[k], f"{where}.{k}"))]
        if "ce_threshold" in q and q["ce_threshold"] != "off":
            a += ["ce_threshold", _us(parse_duration(q["ce_threshold"], f"{where}.ce_threshold"))]
        return a + _flag(q, "ecn", "ecn", "noecn", False)
    if kind == "fq_codel":
        _unknown(
            q,
            where,
            {
                "limit",
                "flows",
                "quantum",
                "target",
                "interval",
                "ecn",
                "ce_threshold",
                "memory_limit",
                "drop_batch",
                "variant",
                "backlog_rule",
            },
        )
        _only_default(q, where, "variant", ("linux",), "the kernel runs Linux sch_fq_codel")
        _only_default(q, where, "backlog_rule", ("linux",), "the kernel runs Linux sch_fq_codel")
        a = ["fq_codel"]
        lim = _limit_packets(q, where, frame, notes)
        if lim is not None:
            a += ["limit", str(lim)]
        for k in ("flows", "drop_batch"):
            if k in q:
                a += [k, str(int(q[k]))]
        if "quantum" in q:
            a += ["quantum", str(int(parse_size(q["quantum"], f"{where}.quantum")))]
        for k in ("target", "interval"):
            if k in q:
                a += [k, _us(parse_duration(q[k], f"{where}.{k}"))]
        if "ce_threshold" in q and q["ce_threshold"] != "off":
            a += ["ce_threshold", _us(parse_duration(q["ce_threshold"], f"{where}.ce_threshold"))]
        if "memory_limit" in q:
            a += ["memory_limit", str(int(parse_size(q["memory_limit"], f"{where}.memory_limit")))]
        return a + _flag(q, "ecn", "ecn", "noecn", True)
    if kind == "pie":
        _unknown(
            q,
            where,
            {
                "variant",
                "target",
                "tupdate",
                "limit",
                "alpha",
                "beta",
                "max_burst",
                "ecn",
                "ecn_prob",
                "bytemode",
                "estimator",
                "dq_threshold",
                "mean_pktsize",
                "derandomize",
            },
        )
        _only_default(q, where, "variant", ("linux",), "the kernel runs today's Linux sch_pie")
        _only_default(q, where, "max_burst", ("150ms", 0.15), "fixed at 150 ms in sch_pie")
        _only_default(q, where, "ecn_prob", (0.1,), "fixed at 10 % in sch_pie")
        _only_default(q, where, "estimator", ("timestamp", "dq_rate"), "sch_pie has timestamps or dq_rate_estimator")
        _only_default(q, where, "dq_threshold", (16384,), "fixed QUEUE_THRESHOLD in sch_pie")
        _only_default(q, where, "mean_pktsize", (), "not a sch_pie parameter")
        _only_default(q, where, "derandomize", (), "sch_pie always de-randomises (rfc8033 variant only)")
        a = ["pie"]
        lim = _limit_packets(q, where, frame, notes)
        if lim is not None:
            a += ["limit", str(lim)]
        for k in ("target", "tupdate"):
            if k in q:
                a += [k, _us(parse_duration(q[k], f"{where}.{k}"))]
        a += _sixteenths(q, where, "alpha") + _sixteenths(q, where, "beta")
        a += _flag(q, "ecn", "ecn", "noecn", False) + _flag(q, "bytemode", "bytemode", None, False)
        if q.get("estimator") == "dq_rate":
            a += ["dq_rate_estimator"]
        return a
    if kind == "fq_pie":
        _unknown(
            q,
            where,
            {
                "limit",
                "flows",
                "target",
                "tupdate",
                "alpha",
                "beta",
                "quantum",
                "memory_limit",
                "ecn",
                "ecn_prob",
                "bytemode",
                "dq_rate_estimator",
                "backlog_rule",
            },
        )
        _only_default(q, where, "backlog_rule", ("linux",), "the kernel runs Linux sch_fq_pie")
        a = ["fq_pie"]
        lim = _limit_packets(q, where, frame, notes)
        if lim is not None:
            a += ["limit", str(lim)]
        if "flows" in q:
            a += ["flows", str(int(q["flows"]))]
        for k in ("target", "tupdate"):
            if k in q:
                a += [k, _us(parse_duration(q[k], f"{where}.{k}"))]
        a += _sixteenths(q, where, "alpha") + _sixteenths(q, where, "beta")
        if "quantum" in q:
            a += ["quantum", str(int(parse_size(q["quantum"], f"{where}.quantum")))]
        if "memory_limit" in q:
            a += ["memory_limit", str(int(parse_size(q["memory_limit"], f"{where}.memory_limit")))]
        if "ecn_prob" in q:
            a += ["ecn_prob", str(round(float(q["ecn_prob"]) * 100))]
        a += _flag(q, "ecn", "ecn", "noecn", False) + _flag(q, "bytemode", "bytemode", None, False)
        a += _flag(q, "dq_rate_estimator", "dq_rate_estimator", None, False)
        return a
    if kind == "sfq":
        _unknown(q, where, {"limit", "depth", "divisor", "flows", "quantum", "perturb", "headdrop"})
        a = ["sfq"]
        for k in ("limit", "depth", "divisor", "flows"):
            if k in q:
                if not isinstance(q[k], int):
                    raise ScenarioError(f"{where}.{k}", f"{q[k]!r}: the linux engine takes a packet count here")
                a += [k, str(q[k])]
        if "quantum" in q:
            a += ["quantum", str(int(parse_size(q["quantum"], f"{where}.quantum")))]
        if "perturb" in q and q["perturb"] != "off":
            a += ["perturb", str(max(1, round(parse_duration(q["perturb"], f"{where}.perturb"))))]
        return a + _flag(q, "headdrop", "headdrop", None, False)
    if kind in ("red", "ared"):
        _unknown(
            q,
            where,
            {
                "limit",
                "min",
                "max",
                "avpkt",
                "burst",
                "probability",
                "bandwidth",
                "adaptive",
                "ecn",
                "harddrop",
                "gentle",
                "ewma_log",
                "variant",
            },
        )
        _only_default(q, where, "variant", ("linux",), "the kernel runs Linux sch_red, not ns-2's RED")
        _only_default(q, where, "gentle", (False,), "gentle RED is not in Linux sch_red")
        _only_default(q, where, "ewma_log", (), "tc sets ewma_log from burst; give burst")
        for k in ("min", "max", "limit"):
            if k in q and isinstance(q[k], int):
                raise ScenarioError(
                    f"{where}.{k}", f'{q[k]!r}: packet thresholds are not supported by the linux engine; give bytes ("12500B")'
                )
        if "max" not in q and "min" not in q:
            raise ScenarioError(f"{where}.max", "the linux engine needs explicit RED thresholds (min and/or max in bytes)")
        mx = parse_size(q["max"], f"{where}.max") if "max" in q else 3 * parse_size(q["min"], f"{where}.min")
        mn = parse_size(q["min"], f"{where}.min") if "min" in q else mx / 3
        limit = parse_size(q["limit"], f"{where}.limit") if "limit" in q else 4 * mx
        avpkt = int(q.get("avpkt", 1000))
        a = ["red", "limit", str(int(limit)), "min", str(int(mn)), "max", str(int(mx)), "avpkt", str(avpkt)]
        if "burst" in q:
            a += ["burst", str(int(q["burst"]))]
        if "probability" in q:
            a += ["probability", repr(float(q["probability"]))]
        if "bandwidth" in q:
            a += ["bandwidth", f"{int(parse_rate(q['bandwidth'], f'{where}.bandwidth'))}bit"]
        a += _flag(q, "ecn", "ecn", None, False) + _flag(q, "harddrop", "harddrop", None, False)
        a += _flag(q, "adaptive", "adaptive", None, kind == "ared")
        return a
    if kind == "cake":
        return _cake_args(q, where)
    raise ScenarioError(
        f"{where}.kind",
        f"qdisc kind {kind!r} is not supported by the linux engine (supported: fifo, codel, fq_codel, pie, fq_pie, sfq, red, ared, cake)",
    )


#: tc-cake's keywords (iproute2 q_cake.c) for the simulator's cake settings.
CAKE_RTT_PRESETS = ("datacentre", "lan", "metro", "regional", "internet", "oceanic", "satellite", "interplanetary")
CAKE_DIFFSERV = ("besteffort", "precedence", "diffserv3", "diffserv4", "diffserv8")
CAKE_ISOLATION = ("flowblind", "srchost", "dsthost", "hosts", "flows", "dual-srchost", "dual-dsthost", "triple-isolate")
CAKE_OVERHEAD_PRESETS = (
    "raw", "conservative", "ethernet", "docsis", "pppoe-ptm", "bridged-ptm", "pppoa-vcmux", "pppoa-llc",
    "pppoe-vcmux", "pppoe-llcsnap", "bridged-vcmux", "bridged-llcsnap", "ipoa-vcmux", "ipoa-llcsnap",
)
CAKE_ACK_FILTER = {"off": "no-ack-filter", "on": "ack-filter", "aggressive": "ack-filter-aggressive"}


def _choice(q: dict, where: str, key: str, allowed: tuple[str, ...]) -> str | None:
    if key not in q:
        return None
    v = q[key]
    if v not in allowed:
        raise ScenarioError(f"{where}.{key}", f"{v!r}: allowed values are {', '.join(allowed)}")
    return str(v)


def _cake_args(q: dict, where: str) -> list[str]:
    """``tc qdisc ... cake`` (Linux sch_cake, iproute2 q_cake.c). Only what the scenario sets
    is passed, so the kernel's defaults (unlimited, internet, diffserv3, triple-isolate,
    nonat, nowash, egress, no-ack-filter) apply where the simulator's do. tc has no target
    keyword: sch_cake derives target = rtt / 20, so an explicit target must be that."""
    _unknown(
        q,
        where,
        {
            "bandwidth",
            "rtt",
            "target",
            "diffserv",
            "isolation",
            "nat",
            "wash",
            "ingress",
            "ack_filter",
            "preset",
            "overhead",
            "mpu",
            "atm",
            "ether_vlan",
            "memlimit",
        },
    )
    a = ["cake"]
    if "bandwidth" in q:
        bw = q["bandwidth"]
        a += ["unlimited"] if bw in ("unlimited", 0) else ["bandwidth", f"{int(parse_rate(bw, f'{where}.bandwidth'))}bit"]
    rtt_us: float = 100_000.0
    if "rtt" in q:
        r = q["rtt"]
        if r in CAKE_RTT_PRESETS:
            a.append(str(r))
            rtt_us = {
                "datacentre": 100,
                "lan": 1_000,
                "metro": 10_000,
                "regional": 30_000,
                "internet": 100_000,
                "oceanic": 300_000,
                "satellite": 1_000_000,
                "interplanetary": 1_000_000_000,
            }[r]
        else:
            try:
                d = parse_duration(r, f"{where}.rtt")
            except ScenarioError:
                raise ScenarioError(f"{where}.rtt", f"{r!r}: a duration or one of {', '.join(CAKE_RTT_PRESETS)}") from None
            rtt_us = round(d * 1e6)
            a += ["rtt", f"{int(rtt_us)}us"]
    if "target" in q:
        t = round(parse_duration(q["target"], f"{where}.target") * 1e6)
        implied = max(1, int(rtt_us) // 20)
        if t != implied:
            raise ScenarioError(
                f"{where}.target",
                f"{q['target']!r} is not supported by the linux engine: tc-cake has no target keyword, sch_cake uses rtt / 20 = "
                f"{implied}us; set rtt instead",
            )
    for key, allowed in (("diffserv", CAKE_DIFFSERV), ("isolation", CAKE_ISOLATION), ("preset", CAKE_OVERHEAD_PRESETS)):
        v = _choice(q, where, key, allowed)
        if v:
            a.append(v)
    a += _flag(q, "nat", "nat", "nonat", False) if "nat" in q else []
    a += _flag(q, "wash", "wash", "nowash", False) if "wash" in q else []
    a += _flag(q, "ingress", "ingress", "egress", False) if "ingress" in q else []
    af = _choice(q, where, "ack_filter", tuple(CAKE_ACK_FILTER))
    if af:
        a.append(CAKE_ACK_FILTER[af])
    if "overhead" in q:
        o = q["overhead"]
        if not isinstance(o, int) or isinstance(o, bool) or not -64 <= o <= 256:
            raise ScenarioError(f"{where}.overhead", f"{o!r}: an integer from -64 to 256 (bytes)")
        a += ["overhead", str(o)]
    if "mpu" in q:
        m = q["mpu"]
        if not isinstance(m, int) or isinstance(m, bool) or not 0 <= m <= 256:
            raise ScenarioError(f"{where}.mpu", f"{m!r}: an integer from 0 to 256 (bytes)")
        a += ["mpu", str(m)]
    v = _choice(q, where, "atm", ("noatm", "atm", "ptm"))
    if v:
        a.append(v)
    if "ether_vlan" in q:
        n = q["ether_vlan"]
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= 8:
            raise ScenarioError(f"{where}.ether_vlan", f"{n!r}: a number of VLAN tags from 0 to 8")
        a += ["ether-vlan"] * n
    if "memlimit" in q:
        a += ["memlimit", str(int(parse_size(q["memlimit"], f"{where}.memlimit")))]
    return a


# ---------------------------------------------------------------------------------------
# topology


@dataclass
class Iface:
    ns: str
    dev: str
    addr: str  # a.b.c.d
    peer_addr: str


@dataclass
class QueueMap:
    """Where the kernel holds the scenario's link ``name``."""

    name: str
    src: str
    dst: str
    ns: str
    dev: str
    rate_bps: float
    delay: float
    qdisc: str  # scenario qdisc kind
    tc: list[str]  # child qdisc arguments
    shaper: str  # htb | tbf
    overhead: int
    mtu: int


@dataclass
class FlowMap:
    name: str
    kind: str
    src: str
    dst: str
    start: float
    stop: float
    port: int
    tool: str  # iperf3 | ping | irtt
    cc: str | None = None
    bytes: int | None = None
    rate_bps: float | None = None
    size: int | None = None
    interval: float | None = None
    #: the IP TOS byte the flow's packets carry (DSCP << 2; the ECN bits are the kernel's)
    tos: int = 0


@dataclass
class Translation:
    """Everything the guest needs and the result collector reads back."""

    duration: float
    warmup: float
    bin: float
    sample_period: float
    node_ns: dict[str, str]
    node_addr: dict[str, str]
    sampled_ns: list[str]
    queues: list[QueueMap]
    flows: list[FlowMap]
    script: str
    notes: list[str] = field(default_factory=list)
    commands: dict[str, list[str]] = field(default_factory=dict)  # ns -> ip/tc commands (for tests and docs)
    groups: dict[str, int] = field(default_factory=dict)  # flow name -> index of its [[flow]] table
    captures: list[CaptureMap] = field(default_factory=list)  # opt-in packet captures (translate(capture=...))
    offloads: bool = False  # TSO/GSO/GRO left on at the veths ([tcp] gso = "on")


@dataclass
class CaptureMap:
    """A packet capture around one queue (opt-in, ``translate(capture=[...])``): in the
    queue's router namespace, every packet arriving on the namespace's other interfaces
    (``ingress``: the packets that may be forwarded into the queue) and every packet leaving
    on the queue's device (``dev``: after the qdisc, when the shaper releases it). Files
    ``cap.<queue>.in.<dev>.pcap`` and ``cap.<queue>.out.pcap`` in the output directory."""

    queue: str
    ns: str
    dev: str
    ingress: list[str]

    def files(self) -> dict[str, str]:
        out = {f"in.{d}": f"cap.{self.queue}.in.{d}.pcap" for d in self.ingress}
        out["out"] = f"cap.{self.queue}.out.pcap"
        return out


_CC = {"cubic": "cubic", "newreno": "reno", "reno": "reno", "bbr": "bbr", "dctcp": "dctcp"}

# [tcp] keys: supported, or only at their Linux default
_TCP_DEFAULTS = {
    "stack": "linux",
    "mss": 1448,
    "delayed_ack": "linux",
    "prr": True,
    "recovery": "prr",
    "rto_floor": "variance",
    "ss_growth": "segments",
    "ca_growth": "segments",
    "reno_halves": "cwnd",
    "rtt_timing": "ack",
    "timestamps": True,
    "rto_undo": True,
    "undo": "linux",
    "loss_detection": "rack",
    "tlp": "linux",
    "dsack": True,
    "hz": 250,
    "early_retransmit": False,
    "trace": False,
    "max_window": None,
    "rcv_window": "3MiB",
    "rcv_autotune": "linux",
    "bbr_version": "linux",
}


def _tcp_settings(tcp: dict, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in tcp.items():
        f = f"{where}.{k}"
        if k == "cc":
            if v not in _CC:
                raise ScenarioError(f, f"{v!r} is not supported by the linux engine (cubic, newreno/reno, bbr, dctcp)")
            out["cc"] = _CC[v]
        elif k == "ecn":
            out["ecn"] = bool(v)
        elif k == "sack":
            out["sack"] = bool(v)
        elif k == "init_cwnd":
            out["init_cwnd"] = int(v)
        elif k == "min_rto":
            out["min_rto"] = parse_duration(v, f)
        elif k == "initial_rto":
            if abs(parse_duration(v, f) - 1.0) > 1e-9:
                raise ScenarioError(f, "the kernel's initial RTO is fixed at 1 s (TCP_TIMEOUT_INIT); the linux engine supports only 1s")
        elif k == "hystart":
            out["hystart"] = bool(v)
        elif k == "delayed_ack" and v == "off":
            # every segment acknowledged at once: the route metric RTAX_QUICKACK, which
            # tcp_in_quickack_mode() (tcp_input.c) reads for every ACK decision
            out["quickack"] = True
        elif k == "gso":
            # the simulator's GSO super-packets <-> the veths' offloads: with "on" the engine
            # leaves TSO, GSO and GRO on (ethtool's defaults of a host), so qdiscs see and
            # drop skbs; "off" (the default) switches them off, so qdiscs see segments
            if v not in ("on", "off"):
                raise ScenarioError(f, f"{v!r} is not allowed (\"on\" or \"off\")")
            out["gso"] = v == "on"
        elif k == "tsq":
            if v is not True:
                raise ScenarioError(f, "the kernel always runs TCP Small Queues; the linux engine supports only true")
        elif k == "trace":
            # an output request (cwnd/ssthresh/srtt samples), no dynamics: the kernel's
            # sockets are not traced, which translate() notes
            out["trace"] = bool(v)
        elif k in _TCP_DEFAULTS:
            if v != _TCP_DEFAULTS[k]:
                raise ScenarioError(
                    f,
                    f"{v!r} is not supported by the linux engine (only the Linux default {_TCP_DEFAULTS[k]!r}; the kernel has no "
                    "per-connection knob the engine sets)",
                )
        else:
            raise ScenarioError(f, "not supported by the linux engine")
    return out


def link_qdisc_tables(sc: dict, links: list[dict]) -> dict[str, tuple[dict, str, dict | None]]:
    """Link name → (qdisc table, its dotted path, shaper table or None)."""
    out: dict[str, tuple[dict, str, dict | None]] = {}
    db = sc.get("dumbbell")
    if db is not None:
        base = db.get("qdisc", {"kind": "fifo", "limit": 1000})
        acc = db.get("access_qdisc", {"kind": "fifo", "limit": 1000})
        for d in ("up", "down"):
            t = db.get(d, {})
            q, path = (t["qdisc"], f"dumbbell.{d}.qdisc") if "qdisc" in t else (base, "dumbbell.qdisc")
            out[f"bottleneck_{d}"] = (q, path, t.get("shaper"))
        for ln in links:
            if ln["name"] not in out:
                out[ln["name"]] = (acc, "dumbbell.access_qdisc", None)
    for i, lk in enumerate(sc.get("link", [])):
        name = lk.get("name", f"{lk['from']}->{lk['to']}")
        rev = f"{name}_rev" if "name" in lk else f"{lk['to']}->{lk['from']}"
        q = lk.get("qdisc", {"kind": "fifo", "limit": 1000})
        out[name] = (q, f"link[{i}].qdisc", lk.get("shaper"))
        out[rev] = (q, f"link[{i}].qdisc", lk.get("shaper"))
    return out


def _check_supported(sc: dict) -> None:
    for key in ("docsis", "wifi"):
        if key in sc:
            raise ScenarioError(key, "not supported by the linux engine (only wired dumbbells and [[node]]/[[link]] graphs)")
    db = sc.get("dumbbell", {})
    if "wifi" in db:
        raise ScenarioError("dumbbell.wifi", "not supported by the linux engine")
    for d in ("up", "down"):
        if db.get(d, {}).get("loss_periods"):
            raise ScenarioError(f"dumbbell.{d}.loss_periods", "not supported by the linux engine (constant loss only)")
    if db.get("device_queue", 1) != 1:
        raise ScenarioError(
            "dumbbell.device_queue",
            "the linux engine models only device_queue = 1 (veth has no device queue below the qdisc, like BQL at one packet)",
        )
    for i, lk in enumerate(sc.get("link", [])):
        if lk.get("loss_periods"):
            raise ScenarioError(f"link[{i}].loss_periods", "not supported by the linux engine (constant loss only)")
        if lk.get("device_queue", 1) != 1:
            raise ScenarioError(f"link[{i}].device_queue", "the linux engine models only device_queue = 1")
        if lk.get("duplex", True) is not True:
            raise ScenarioError(f"link[{i}].duplex", "the linux engine needs duplex links (veth pairs)")
    for i, f in enumerate(sc.get("flow", [])):
        if f.get("kind") == "bulk" and f.get("trace"):
            raise ScenarioError(f"flow[{i}].trace", "not supported by the linux engine")


SUPPORTED_FLOWS = ("bulk", "cbr", "ping", "udp_rr", "rrul", "rrul_be")


def translate(
    sc: dict, plan: dict, *, sample_period: float | None = None, base_port: int = 5201, capture: list[str] | tuple[str, ...] = ()
) -> Translation:
    """Translates a validated scenario (``sc``: the parsed TOML; ``plan``: what
    ``Scenario.validate()`` resolved) into the guest script.

    ``capture``: names of queues (``bottleneck_up`` ...) to capture packet headers around
    with tcpdump (:class:`CaptureMap`; needs the image's optional tcpdump). Off by default:
    the capture costs guest CPU, and the script is otherwise unchanged."""
    _check_supported(sc)
    notes: list[str] = []
    nodes = [n["name"] for n in plan["nodes"]]
    kinds = {n["name"]: n["kind"] for n in plan["nodes"]}
    node_ns = {n: f"n{i}" for i, n in enumerate(nodes)}
    node_addr = {n: f"10.255.{i // 250}.{i % 250 + 1}" for i, n in enumerate(nodes)}
    links = plan["links"]
    for ln in links:
        if ln["lower"] != "wire" and ln["lower"] not in ("shaper", "htb", "tbf"):
            raise ScenarioError("", f"link {ln['name']!r}: lower layer {ln['lower']!r} is not supported by the linux engine")
    qtables = link_qdisc_tables(sc, links)

    # pair links into duplex veth pairs
    pairs, lone = duplex_pairs(links)
    if lone is not None:
        raise ScenarioError("", f"link {lone['name']!r} has no reverse link: the linux engine needs duplex links")

    cmds: dict[str, list[str]] = {ns: [] for ns in node_ns.values()}
    top: list[str] = []  # commands run in the root namespace (creation)
    queues: list[QueueMap] = []
    boxes: list[str] = []
    adj: dict[str, list[tuple[str, Iface]]] = {n: [] for n in nodes}
    ip = BIN["ip"]

    for k, (a, b) in enumerate(pairs):
        base = f"10.{1 + k // 16384}.{(k // 64) % 256}.{(k % 64) * 4}"
        pre = base.rsplit(".", 1)[0]
        last = int(base.rsplit(".", 1)[1])
        addr_a, addr_b = f"{pre}.{last + 1}", f"{pre}.{last + 2}"
        ns_a, ns_b = node_ns[a["from"]], node_ns[a["to"]]
        dev_a, dev_b = f"e{k}a", f"e{k}b"
        box = a["delay"] > 0 or b["delay"] > 0 or a["loss"] > 0 or b["loss"] > 0
        if box:
            d = f"d{k}"
            boxes.append(d)
            cmds[d] = []
            top.append(f"{ip} netns add {d}")
            top.append(f"{ip} link add {dev_a} netns {ns_a} type veth peer name pa netns {d}")
            top.append(f"{ip} link add {dev_b} netns {ns_b} type veth peer name pb netns {d}")
            cmds[d] += [
                "link add br0 type bridge forward_delay 0 stp_state 0",
                "link set pa master br0", "link set pb master br0",
                "link set pa up", "link set pb up", "link set br0 up", "link set lo up",
            ]
            for dev, ln in (("pb", a), ("pa", b)):  # netem on the egress towards the link's receiver
                net = ["netem", "limit", "100000", "delay", _us(ln["delay"])]
                if ln["loss"] > 0:
                    net += ["loss", "random", f"{ln['loss'] * 100:.6g}%"]
                cmds[d].append(f"tc qdisc replace dev {dev} root " + " ".join(net))
        else:
            top.append(f"{ip} link add {dev_a} netns {ns_a} type veth peer name {dev_b} netns {ns_b}")
        for ns, dev, addr in ((ns_a, dev_a, addr_a), (ns_b, dev_b, addr_b)):
            cmds[ns] += [f"addr add {addr}/30 dev {dev}", f"link set {dev} up"]
        ia, ib = Iface(ns_a, dev_a, addr_a, addr_b), Iface(ns_b, dev_b, addr_b, addr_a)
        adj[a["from"]].append((a["to"], ia))
        adj[a["to"]].append((a["from"], ib))
        for ln, iface in ((a, ia), (b, ib)):
            q, path, shaper = qtables.get(ln["name"], ({"kind": "fifo", "limit": 1000}, "", None))
            child = tc_qdisc_args(q, path, mtu=ln["mtu"], overhead=ln["overhead"], notes=notes)
            rate = ln["rate_bps"]
            skind = "htb"
            sburst = None
            if shaper is not None:
                rate = parse_rate(shaper["rate"], f"{path.rsplit('.', 1)[0]}.shaper.rate")
                skind = shaper.get("kind", "htb")
                if "burst" in shaper:
                    sburst = int(parse_size(shaper["burst"], f"{path.rsplit('.', 1)[0]}.shaper.burst"))
                if rate < ln["rate_bps"]:
                    notes.append(
                        f"link {ln['name']}: the {skind} shaper at {rate / 1e6:g} Mbit/s is the kernel's rate limit; the faster wire "
                        f"under it ({ln['rate_bps'] / 1e6:g} Mbit/s) is not modelled"
                    )
                rate = min(rate, ln["rate_bps"])
            frame = ln["mtu"] + ln["overhead"]
            # One frame, or 100 us of the rate on fast links (access links at 1 Gbit/s would
            # otherwise need a timer per 12 us frame): close to a serialiser.
            burst = sburst or max(frame, int(rate * 100e-6 / 8))
            stab = f" stab overhead {ln['overhead'] - 14} linklayer ethernet" if ln["overhead"] != 14 else ""
            dev = iface.dev
            if skind == "tbf":
                cmds[iface.ns] += [
                    f"tc qdisc replace dev {dev} root handle 1:{stab} tbf rate {int(rate)}bit burst {burst} latency 1s",
                    f"tc qdisc replace dev {dev} parent 1:1 handle 10: " + " ".join(child),
                ]
            else:
                cmds[iface.ns] += [
                    f"tc qdisc replace dev {dev} root handle 1:{stab} htb default 1 direct_qlen 1000",
                    f"tc class add dev {dev} parent 1: classid 1:1 htb rate {int(rate)}bit ceil {int(rate)}bit burst {burst} cburst "
                    f"{burst} quantum {frame}",
                    f"tc qdisc replace dev {dev} parent 1:1 handle 10: " + " ".join(child),
                ]
            queues.append(
                QueueMap(
                    ln["name"],
                    ln["from"],
                    ln["to"],
                    iface.ns,
                    dev,
                    rate,
                    ln["delay"],
                    q.get("kind", "fifo"),
                    child,
                    skind,
                    ln["overhead"],
                    ln["mtu"],
                )
            )

    # addresses on loopback, routes by BFS (hosts do not forward)
    for n in nodes:
        cmds[node_ns[n]] = [f"addr add {node_addr[n]}/32 dev lo", "link set lo up"] + cmds[node_ns[n]]
    for src in nodes:
        first: dict[str, Iface] = {}
        seen = {src}
        dq: deque[tuple[str, Iface | None]] = deque([(src, None)])
        while dq:
            u, via = dq.popleft()
            if u != src and kinds[u] == "host":
                continue
            for v, iface in adj[u]:
                if v in seen:
                    continue
                seen.add(v)
                hop = iface if via is None else via
                first[v] = hop
                dq.append((v, hop))
        for dst, hop in first.items():
            cmds[node_ns[src]].append(f"route add {node_addr[dst]}/32 via {hop.peer_addr} dev {hop.dev} src {node_addr[src]}")

    # TCP settings
    tcp = _tcp_settings(sc.get("tcp", {}), "tcp")
    sysctl = {
        "net.ipv4.tcp_congestion_control": tcp.get("cc", "cubic"),
        "net.ipv4.tcp_ecn": "1" if tcp.get("ecn") else "0",
        "net.ipv4.tcp_sack": "0" if tcp.get("sack") is False else "1",
        "net.ipv4.tcp_no_metrics_save": "1",
    }
    route_opts = ""
    if "init_cwnd" in tcp:
        route_opts += f" initcwnd {tcp['init_cwnd']}"
    if "min_rto" in tcp:
        route_opts += f" rto_min {round(tcp['min_rto'] * 1000)}ms"
    if tcp.get("quickack"):
        route_opts += " quickack 1"
    if route_opts:
        for n in nodes:
            cmds[node_ns[n]] = [c + route_opts if c.startswith("route add") else c for c in cmds[node_ns[n]]]

    # flows
    flows: list[FlowMap] = []
    tcp_flows: list[_TcpFlow] = []
    sflows = sc.get("flow", [])
    duration = plan["duration"]
    for i, f in enumerate(plan["flows"]):
        g = f["group"]
        tab = sflows[g] if g < len(sflows) else {}
        kind = f["kind"]
        where = f"flow[{g}]"
        if tab.get("kind") not in SUPPORTED_FLOWS:
            raise ScenarioError(
                f"{where}.kind", f"{tab.get('kind')!r} is not supported by the linux engine (supported: {', '.join(SUPPORTED_FLOWS)})"
            )
        fm = FlowMap(f["name"], kind, f["src"], f["dst"], f["start"], min(f["stop"], duration), base_port + i, "iperf3")
        # the plan's DSCP (a flow's `dscp` key, or rrul's per-sub-flow marks) as the TOS byte
        # of IP_TOS, which each tool sets on both ends (the clients in _script)
        fm.tos = (int(f.get("dscp", 0)) & 0x3F) << 2
        if kind == "bulk":
            ftcp = dict(tab.get("tcp", {}))
            fset = _tcp_settings(ftcp, f"{where}.tcp")
            for key in fset:
                if key not in _PER_FLOW and fset[key] != tcp.get(key, fset[key] if key not in ("ecn", "gso") else False):
                    raise ScenarioError(
                        f"{where}.tcp.{key}",
                        f"per-flow values other than {', '.join(_PER_FLOW)} are not supported by the linux engine (set it in [tcp])",
                    )
            fm.cc = fset.get("cc", tcp.get("cc", "cubic"))
            tcp_flows.append(_TcpFlow(f["name"], f["src"], f["dst"], where, fset, tcp))
            if "bytes" in tab:
                fm.bytes = int(parse_size(tab["bytes"], f"{where}.bytes"))
                note = (
                    f"{where}.bytes: iperf3 -n ends the test once the client has written the bytes into its socket, and the server counts "
                    "what arrived by then: the kernel's goodput of a finite transfer is a lower bound (docs/validation.md, tcp_bulk)"
                )
                if note not in notes:
                    notes.append(note)
        elif kind == "cbr":
            for k in tab:
                if k not in ("kind", "from", "to", "count", "name", "start", "stop", "start_spread", "rate", "size", "dscp"):
                    raise ScenarioError(f"{where}.{k}", "not supported by the linux engine for cbr flows")
            fm.rate_bps = parse_rate(tab["rate"], f"{where}.rate")
            fm.size = int(tab.get("size", 1500))
        elif kind in ("ping", "udp_rr"):
            fm.tool = "ping" if kind == "ping" else "irtt"
            iv = tab.get("interval", "200ms")
            fm.interval = parse_duration(iv, f"{where}.interval")
            key = "size" if tab.get("kind") in ("ping", "udp_rr") else ("ping_size" if kind == "ping" else "udp_size")
            fm.size = int(tab.get(key, 84 if kind == "ping" else 29))
        else:
            raise ScenarioError(f"{where}.kind", f"{kind!r} is not supported by the linux engine")
        flows.append(fm)

    ns_sysctl = _per_flow_tcp(tcp_flows, tcp, cmds, node_ns, node_addr, notes)
    if tcp.get("trace") or any(t.own.get("trace") for t in tcp_flows):
        notes.append(
            "tcp.trace: the linux engine records no cwnd/ssthresh/srtt samples of the kernel's sockets (an output request; the run is the "
            "same)"
        )

    routers = [node_ns[n] for n in nodes if kinds[n] == "router"]
    sampled = routers or [node_ns[n] for n in nodes]
    # the qdisc samplers' mean gap: half a bin, so that with the jitter below (gaps uniform
    # in [0.5, 1.5) x the mean) every bin gets at least one sample
    period = sample_period if sample_period is not None else plan["bin"] / 2
    tr = Translation(
        duration,
        plan["warmup"],
        plan["bin"],
        period,
        node_ns,
        node_addr,
        sampled,
        queues,
        flows,
        "",
        notes,
        cmds,
        {f["name"]: f["group"] for f in plan["flows"]},
        offloads=bool(tcp.get("gso")),
    )
    if tr.offloads:
        notes.append(
            "tcp.gso: with offloads on, a queue's mean sojourn is its drain time (backlog / rate, byte-weighted): "
            "the qdisc counts skbs in its length but segments in its packet counters"
        )
    for name in capture:
        qm = next((q for q in queues if q.name == name), None)
        if qm is None:
            raise ScenarioError("capture", f"no queue named {name!r} to capture (queues: {', '.join(q.name for q in queues)})")
        devs = sorted({c.split()[2] for c in cmds[qm.ns] if c.startswith("link set ") and c.split()[2] not in ("lo", "br0", qm.dev)})
        tr.captures.append(CaptureMap(qm.name, qm.ns, qm.dev, devs))
    tr.script = _script(tr, top, cmds, sysctl, tcp, ns_sysctl)
    return tr


#: per-flow [tcp] keys the engine sets for one connection: cc by iperf3 -C, init_cwnd and
#: ecn on the sender's route to the flow's destination, sack per host (_per_flow_tcp)
_PER_FLOW = ("cc", "trace", "init_cwnd", "ecn", "sack")


@dataclass
class _TcpFlow:
    name: str
    src: str
    dst: str
    where: str  # flow[G]
    own: dict[str, Any]  # the flow's own tcp settings (_tcp_settings of its table)
    tcp: dict[str, Any]  # [tcp]'s

    def value(self, key: str, default: Any) -> Any:
        return self.own.get(key, self.tcp.get(key, default))

    def key_path(self, key: str) -> str:
        return f"{self.where}.tcp.{key}" if key in self.own else f"tcp.{key}"


def _per_flow_tcp(
    flows: list[_TcpFlow],
    tcp: dict[str, Any],
    cmds: dict[str, list[str]],
    node_ns: dict[str, str],
    node_addr: dict[str, str],
    notes: list[str],
) -> dict[str, dict[str, str]]:
    """Sets the per-flow ``init_cwnd``, ``ecn`` and ``sack`` of the TCP flows on the
    kernel, or refuses (naming the key) what it cannot set for one flow alone:

    - ``init_cwnd``: the ``initcwnd`` of the sender's route to the destination (every
      flow from that sender to that destination must agree);
    - ``ecn = true``: ``features ecn`` on that route (the sender asks for ECN on it,
      tcp_ecn_send_syn) and ``net.ipv4.tcp_ecn = 2`` on the receiving host when ``[tcp]``
      leaves ECN off (the listener accepts ECN, asks for none itself); ``false`` under
      ``[tcp] ecn = true`` is refused (a route turns ECN on, not off);
    - ``sack``: SACK is negotiated and the kernel has it per host (``net.ipv4.tcp_sack``,
      which also makes a listener ignore SACK-permitted): a host gets the value every TCP
      flow it sends or receives agrees on (else ``[tcp]``'s), and a flow whose two hosts
      do not give its value is refused.

    Returns sysctls per namespace on top of the run-wide ones."""
    ns_sysctl: dict[str, dict[str, str]] = {}
    # init_cwnd and ECN on the sender's route to the destination
    for key in ("init_cwnd", "ecn"):
        if not any(key in t.own for t in flows):
            continue
        per_route: dict[tuple[str, str], _TcpFlow] = {}
        for t in flows:
            other = per_route.setdefault((t.src, t.dst), t)
            if other.value(key, None) != t.value(key, None):
                a, b = (t, other) if key in t.own else (other, t)
                raise ScenarioError(
                    a.key_path(key),
                    f"{a.value(key, None)!r} for {a.name} but {b.value(key, None)!r} for {b.name}, from the same host to the same "
                    "destination: "
                    f"the linux engine sets {key} on the route from {a.src} to {a.dst}",
                )
        for (src, dst), t in per_route.items():
            if key not in t.own:
                continue
            v = t.own[key]
            if key == "ecn":
                if not v:
                    if tcp.get("ecn"):
                        raise ScenarioError(
                            t.key_path(key),
                            "false under [tcp] ecn = true is not supported by the linux engine (a route can turn ECN on for a "
                            "destination, not off)",
                        )
                    continue
                opt = " features ecn"
                if not tcp.get("ecn"):
                    ns_sysctl.setdefault(node_ns[dst], {})["net.ipv4.tcp_ecn"] = "2"
            else:
                opt = f" initcwnd {int(v)}"
            ns = node_ns[src]
            head = f"route add {node_addr[dst]}/32 "
            for j, c in enumerate(cmds[ns]):
                if c.startswith(head):
                    c = re.sub(r" initcwnd [0-9]+", "", c) if key == "init_cwnd" else c
                    cmds[ns][j] = c + opt
    # SACK per host
    default = tcp.get("sack") is not False
    if any("sack" in t.own for t in flows):
        by_host: dict[str, set[bool]] = {}
        for t in flows:
            for h in (t.src, t.dst):
                by_host.setdefault(h, set()).add(bool(t.value("sack", default)))
        host = {h: (next(iter(v)) if len(v) == 1 else default) for h, v in by_host.items()}
        for t in flows:
            want = bool(t.value("sack", default))
            if (host[t.src] and host[t.dst]) != want:
                others = sorted(
                    {o.name for o in flows if o is not t and {o.src, o.dst} & {t.src, t.dst} and bool(o.value("sack", default)) != want}
                )
                raise ScenarioError(
                    t.key_path("sack"),
                    f"{want!r} for {t.name} is not supported by the linux engine here: the kernel negotiates SACK per host "
                    "(net.ipv4.tcp_sack) "
                    f"and {t.src} or {t.dst} also carries {', '.join(others)} with sack = {not want!r}; give such flows hosts of their own",
                )
        for h, v in host.items():
            if v != default:
                ns_sysctl.setdefault(node_ns[h], {})["net.ipv4.tcp_sack"] = "1" if v else "0"
    if ns_sysctl:
        name = {ns: n for n, ns in node_ns.items()}
        notes.append(
            "per-flow TCP options set per host: "
            + "; ".join(f"{name[ns]}: " + ", ".join(f"{k} = {v}" for k, v in d.items()) for ns, d in sorted(ns_sysctl.items()))
        )
    return ns_sysctl


#: What the guest's progress lines on the serial console start with (``_script``).
PROGRESS_TAG = "aqmlab-vm: progress"
_PROGRESS = re.compile(re.escape(PROGRESS_TAG) + r" ([0-9]+(?:\.[0-9]*)?) ([0-9]+(?:\.[0-9]*)?) ([0-9]+(?:\.[0-9]*)?(?:e[+-]?[0-9]+)?)")


def parse_progress(line: str) -> tuple[float, float] | None:
    """(virtual seconds of the job reached, the job's length) from one line of the VM's
    console, or None for any other line. The guest prints its uptime, the uptime at the
    job's t0 and the job's length; seconds reached count from t0 (0 while the network is
    being set up) and pass the length while the clients finish and the results are copied."""
    m = _PROGRESS.search(line)
    if m is None:
        return None
    now, t0, length = (float(g) for g in m.groups())
    return max(0.0, now - t0), length


def _jittered_sleep(mean: float) -> str:
    """A shell ``sleep`` of a random length, uniform in [0.5, 1.5) x ``mean`` (ms resolution,
    the shell's $RANDOM). The queue samplers must not sample at a fixed period: one
    TCP flow under CoDel saws with a period that varies by less than a millisecond, and a
    sampling period close to it (or to a multiple) reads the same phase of every tooth, so
    the time average of the backlog comes out anywhere between the sawtooth's low and high
    values (docs/validation.md, Linux engine cross-check). Random gaps spread the samples
    over all phases."""
    p = max(2, round(mean * 1000))
    ms = f"$(({p // 2} + RANDOM % {p}))"
    return f"ms={ms}; sleep $((ms / 1000)).$((ms % 1000 / 100))$((ms % 100 / 10))$((ms % 10))"


def _script(
    tr: Translation,
    top: list[str],
    cmds: dict[str, list[str]],
    sysctl: dict[str, str],
    tcp: dict,
    ns_sysctl: dict[str, dict[str, str]] | None = None,
) -> str:
    ip, tc = BIN["ip"], BIN["tc"]
    L: list[str] = [
        "# generated by aqmlab.linux.translate: do not edit",
        "O=/tmp/out; mkdir -p $O; cd /tmp",
        "up() { read u _ < /proc/uptime; echo $u; }",
        "echo boot $(up) > $O/times",
    ]
    if "hystart" in tcp:
        L.append(f"echo {1 if tcp['hystart'] else 0} > /sys/module/tcp_cubic/parameters/hystart")
    for ns in cmds:
        L.append(f"{ip} netns add {ns}")
    L += [c for c in top if " netns add " not in c]
    for ns, cs in cmds.items():
        ipc = [c for c in cs if not c.startswith("tc ")]
        tcc = [c[3:] for c in cs if c.startswith("tc ")]
        L.append(f"cat > /tmp/ip.{ns} <<'EOF'\n" + "\n".join(ipc) + "\nEOF")
        L.append(f"{ip} -n {ns} -batch /tmp/ip.{ns} || echo 'aqmlab: ip batch failed in {ns}' >&2")
        if tcc:
            L.append(f"cat > /tmp/tc.{ns} <<'EOF'\n" + "\n".join(tcc) + "\nEOF")
            L.append(f"{tc} -n {ns} -batch /tmp/tc.{ns} || echo 'aqmlab: tc batch failed in {ns}' >&2")
        devs = sorted({c.split()[2] for c in cs if c.startswith("link set ") and c.split()[2] not in ("lo", "br0")})
        sets = "; ".join(f"echo {v} > /proc/sys/{k.replace('.', '/')}" for k, v in {**sysctl, **(ns_sysctl or {}).get(ns, {})}.items())
        fwd = "echo 1 > /proc/sys/net/ipv4/ip_forward"
        offl = "on" if tcp.get("gso") else "off"
        eth = "; ".join(f"{BIN['ethtool']} -K {d} tso {offl} gso {offl} gro {offl} 2>/dev/null" for d in devs)
        L.append(f"{ip} netns exec {ns} sh -c {shlex.quote('; '.join(x for x in (sets, fwd, eth) if x))}")
    # servers
    for f in tr.flows:
        dns = tr.node_ns[f.dst]
        if f.tool == "iperf3":
            L.append(f"{ip} netns exec {dns} {BIN['iperf3']} -s -1 -p {f.port} -J -i {tr.bin:g} --logfile $O/srv.{f.port}.json -D")
        elif f.tool == "irtt":
            L.append(f"{ip} netns exec {dns} {BIN['irtt']} server -b {tr.node_addr[f.dst]}:{f.port} > /dev/null 2>&1 &")
    L.append("sleep 1")
    # samplers: one per sampled namespace, plus CPU
    stop = "/tmp/stop"
    for ns in tr.sampled_ns:
        # fq_codel keeps its CoDel state per flow: the class dump (active flows only) gives
        # each flow's ldelay, the sojourn of the packet it dequeued last (sch_codel has the
        # same in its qdisc statistics)
        cls = "".join(
            f"{{ echo \"T $(up) {qm.dev}\"; {tc} -n {ns} -s -j class show dev {qm.dev} parent 10:; echo; }} >> $O/cls.{ns}; "
            for qm in tr.queues
            if qm.ns == ns and qm.qdisc == "fq_codel"
        )
        L.append(
            f'( while [ ! -e {stop} ]; do echo "T $(up)"; {tc} -n {ns} -s -d -j qdisc show; echo; '
            f'{cls}{_jittered_sleep(tr.sample_period)}; done > $O/tc.{ns} ) &'
        )
    L.append(f"( while [ ! -e {stop} ]; do echo \"T $(up) $(head -1 /proc/stat)\"; sleep {tr.bin:g}; done > $O/cpu ) &")
    if tr.captures:
        # per-packet captures (opt-in): timestamps at the receive path, not when the packet
        # was queued on the sending veth (netdev_tstamp_prequeue 0), so an arrival's time is
        # that of its forwarding into the queue; tcpdump's counts of packets it lost go to
        # cap.*.err. CLOCK_REALTIME of the pcap against the uptime clock: the 'real' line.
        L.append("echo 0 > /proc/sys/net/core/netdev_tstamp_prequeue")
        L.append("CAPP=")
        for cm in tr.captures:
            for key, fn in cm.files().items():
                dev, q = (cm.dev, "out") if key == "out" else (key.split(".", 1)[1], "in")
                L.append(
                    f"{ip} netns exec {cm.ns} {BIN['tcpdump']} -i {dev} -Q {q} -n -s {CAPTURE_SNAPLEN} -B 16384 -Z root "
                    f"--time-stamp-precision=nano -w $O/{fn} 2> $O/{fn[:-5]}.err & CAPP=\"$CAPP $!\""
                )
        L.append("sleep 1")
    L.append("P=; T0=$(up); echo t0 $T0 >> $O/times")
    # progress for the host (parse_progress): the guest's uptime once per virtual second on
    # the serial console, beside the job's t0 and length. Shell builtins but the sleep.
    L.append(
        f'( while [ ! -e {stop} ]; do read u _ < /proc/uptime; echo "{PROGRESS_TAG} $u $T0 {tr.duration:g}" > /dev/console; sleep 1; done '
        ') &'
    )
    if tr.captures:
        L.append("echo real $(adjtimex | awk '/tv_sec/ {s=$2} /tv_usec/ {u=$2} END {printf \"%d.%06d\", s, u}') $(up) >> $O/times")
    # clients
    for f in tr.flows:
        sns = tr.node_ns[f.src]
        daddr = tr.node_addr[f.dst]
        dur = max(f.stop - f.start, 0.001)
        # iperf3 reads -t with atoi: whole seconds, and 0 means "forever". Round up, so a
        # flow that starts at a start_spread draw still sends until the run's end (it may
        # run on for under a second after its stop; the engine reads nothing after it).
        secs = max(1, math.ceil(dur - 1e-9))
        # set for every kind that uses them (udp: rate and size; ping, irtt: size and interval)
        size, rate, interval = f.size or 0, f.rate_bps or 0.0, f.interval or 0.0
        # DSCP marks: iperf3 -S sets IP_TOS on the client's data connection once it is
        # connected (the handshake is unmarked) and Debian 12's iperf3 server leaves its
        # side unmarked, so a marked TCP flow's ACKs are best effort on the kernel (the
        # simulator marks both directions; docs/validation.md, "DSCP on the kernel");
        # irtt's --dscp is the raw TOS byte, which its server copies onto the replies;
        # ping -Q marks the echo requests and Linux answers with the request's TOS
        if f.tool == "iperf3":
            tos = f" -S {f.tos}" if f.tos else ""
            if f.kind == "bulk":
                what = f"-n {f.bytes}" if f.bytes else f"-t {secs}"
                cmd = f"{BIN['iperf3']} -c {daddr} -p {f.port} {what} -C {f.cc}{tos} -J -i {tr.bin:g} -l 128K"
            else:
                cmd = (f"{BIN['iperf3']} -c {daddr} -p {f.port} -u -b {int(rate * (size - 28) / size)} -l {size - 28} -t {secs}{tos} -J "
                       f"-i {tr.bin:g}")
            run = f"{ip} netns exec {sns} {cmd} > $O/cli.{f.port}.json 2> $O/cli.{f.port}.err"
        elif f.tool == "ping":
            n = max(1, int(dur / interval))
            tos = f" -Q {f.tos}" if f.tos else ""
            run = (f"{ip} netns exec {sns} {BIN['ping']} -n -D -i {f.interval:g} -c {n} -s {max(size - 28, 0)} -W 5{tos} {daddr} > "
                   f"$O/ping.{f.port} 2>&1")
        else:
            tos = f" --dscp={f.tos}" if f.tos else ""
            run = (f"{ip} netns exec {sns} {BIN['irtt']} client -Q -i {_us(interval)} -d {_us(dur)} -l {max(size - 28, 60)}{tos} -o "
                   f"$O/irtt.{f.port}.json {daddr}:{f.port} > /dev/null 2>&1")
        # the end time dates the data start of a timed iperf3 test (its duration is in
        # its JSON): the engine places the test's intervals from it (engine.data_start)
        L.append(f"( sleep {f.start:.6f}; echo {f.port} $(up) >> $O/starts; {run}; echo {f.port} $(up) >> $O/ends ) & P=\"$P $!\"")
    def snap(tag: str) -> str:
        # self-contained (no shell functions or variables): it may run in a child shell
        qd = "; ".join(
            f"( echo T $(cut -d' ' -f1 /proc/uptime); {tc} -n {ns} -s -j qdisc show ) > /tmp/out/{tag}.{ns}" for ns in tr.node_ns.values()
        )
        # the TCP senders' MIB counters (per network namespace: RTOs, loss probes, recoveries)
        mib = "".join(f"; {ip} netns exec {ns} cat /proc/net/netstat /proc/net/snmp > /tmp/out/{tag}.mib.{ns}" for ns in senders)
        return qd + mib
    senders = sorted({tr.node_ns[f.src] for f in tr.flows if f.kind == "bulk"})
    if tr.warmup > 0:
        L.append(f"( sleep {tr.warmup:.6f}; {snap('warm')} ) &")
    L.append(f"sleep {tr.duration:.6f}")
    L.append("echo end $(up) >> $O/times")
    L.append(snap("final"))
    # let the clients finish (iperf3 exchanges its results after the test), at most 30 s
    L.append(
        "n=0; while [ $n -lt 60 ]; do alive=0; for p in $P; do kill -0 $p 2>/dev/null && alive=1; done; [ $alive = 0 ] && break; sleep "
        "0.5; n=$((n+1)); done"
    )
    if tr.captures:
        L.append("kill -INT $CAPP; for p in $CAPP; do wait $p; done")
    L.append(f"touch {stop}; sleep {tr.sample_period * 2 + 0.5:g}")
    L.append("sleep 1; cp -a $O/. /job/out/ 2>/dev/null || cp -r $O/* /job/out/")
    return "\n".join(L) + "\n"
