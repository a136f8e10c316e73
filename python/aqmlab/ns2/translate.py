"""Scenario → ns-2.35 Tcl script (docs/engines.md has the key-by-key table).

The subset ns-2 expresses, and how each part maps:

- topology: a wired ``[dumbbell]``; every link of the resolved graph
  (``Scenario.validate()``) is an ns-2 ``simplex-link`` with its rate and delay, so the
  per-direction qdiscs (``dumbbell.up.qdisc``, ``dumbbell.down.qdisc``) stay apart; ns-2
  routes by hop count as the simulator does (a dumbbell has one path per pair);
- the framing overhead (``overhead``, 14 bytes by default) is added to every packet's
  size in ns-2 (``tcpip_base_hdr_size_`` of the TCP agents, ``packetSize_`` of sinks and
  CBR sources), so serialisation takes the wire time it takes in the simulator; the
  result tables subtract it again (IP bytes);
- qdiscs: ``fifo`` with a packet limit N → ``DropTail`` with ``queue-limit`` N + 1 (ns-2's
  DropTail counts the packet on the wire against its limit, the simulator's fifo does
  not; ns-2's RED does not either); ``red`` /
  ``ared`` with ``variant = "ns2"`` and thresholds in packets → ns-2's own ``Queue/RED``
  in packet mode (``thresh_`` = min, ``maxthresh_`` = max, ``queue-limit`` = limit,
  ``linterm_`` = 1/probability, ``mean_pktsize_`` = avpkt, ``q_weight_`` = weight or 0
  (ns-2's automatic 1 − exp(−1/C), the simulator's default), ``gentle_``, ``adaptive_``);
- TCP: only ``stack = "ns2-sack1"`` (the simulator's model of ns-2's agents), per flow:
  ``Agent/TCP/Sack1`` (``sack = false``: ``Agent/TCP/Newreno``; ``cc = "cubic"``:
  ``Agent/TCP/Linux`` with ``select_ca cubic``) with FTP (``bytes``: ``send N``), and
  ``Agent/TCPSink/Sack1/DelAck`` (``Agent/TCPSink/DelAck``; ``delayed_ack = "off"``: the
  sinks without DelAck); ``mss`` → ``packetSize_``, ``init_cwnd`` → ``windowInit_``,
  ``rcv_window`` → ``window_``, ``max_window`` → ``maxcwnd_``, ``min_rto`` → ``minrto_``,
  ``initial_rto`` → ``rtxcur_init_``, ``ecn`` → ``ecn_``, ``trace`` → the agent's
  variable trace of ``cwnd_``, ``ssthresh_`` and ``srtt_``;
- CBR: ``Agent/UDP`` + ``Application/Traffic/CBR`` (``random_ 0``) into an
  ``Agent/LossMonitor``;
- ping: ``Agent/Ping`` at both ends, one echo every ``interval`` from ``start`` until
  ``stop``; each reply's round trip is logged;
- measurement: ``trace-queue`` on every link (each packet's arrival ``+``, dequeue ``-``,
  drop ``d``), and a sampler every ``bin`` (and at the end of the warm-up) printing each
  flow's sink byte count and sender counters.

Anything else is refused by :func:`check` before ns runs, naming the key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from aqmlab.errors import ScenarioError
from aqmlab.linux.translate import parse_duration, parse_rate, parse_size

__all__ = ["Ns2Translation", "Ns2Queue", "Ns2Flow", "check", "translate", "ENGINE"]

ENGINE = "ns2 engine"

#: [run] keys the engine takes (the rest of [run] changes nothing ns-2 could follow)
RUN_KEYS = {"name", "description", "duration", "warmup", "bin", "seed", "max_memory", "max_events", "noise", "start_jitter", "host_jitter"}
DUMBBELL_KEYS = {
    "pairs",
    "rate",
    "delay",
    "qdisc",
    "up",
    "down",
    "access_rate",
    "access_delay",
    "client_delays",
    "server_delays",
    "access_qdisc",
    "overhead",
    "mtu",
    "device_queue",
}
DIRECTION_KEYS = {"rate", "qdisc", "loss"}
FLOW_KEYS = {
    "bulk": {"kind", "count", "from", "to", "name", "start", "start_spread", "stop", "bytes", "tcp"},
    "cbr": {"kind", "count", "from", "to", "name", "start", "start_spread", "stop", "rate", "size"},
    "ping": {"kind", "count", "from", "to", "name", "start", "start_spread", "stop", "interval", "size"},
}
RED_KEYS = {"kind", "limit", "min", "max", "probability", "adaptive", "gentle", "avpkt", "weight", "variant"}

#: [tcp] keys mapped onto ns-2 agent variables
TCP_MAPPED = {"stack", "cc", "sack", "ecn", "init_cwnd", "mss", "delayed_ack", "min_rto", "initial_rto", "rcv_window", "max_window"}
#: congestion controls: ``newreno``/``reno`` are ns-2's own agents (Sack1, Newreno without
#: SACK); ``cubic`` is ``Agent/TCP/Linux`` running ns-2.35's copy of Linux's tcp_cubic.c
#: (before HyStart) in TCP-Linux's SACK loss recovery (``select_ca cubic``)
CC = ("newreno", "reno", "cubic")
#: [tcp] keys accepted only at the ns2-sack1 profile's value (what ns-2's agents do)
TCP_FIXED: dict[str, Any] = {
    "rto_floor": "sum", "rtt_timing": "ns2", "timestamps": False, "ss_growth": "acks", "ca_growth": "acks",
    "recovery": "rfc6675", "prr": False, "undo": "off", "rto_undo": False, "loss_detection": "dupthresh", "dsack": False, "tlp": "off",
    "early_retransmit": False, "reno_halves": "cwnd", "pacing": False, "hystart": False, "rcv_autotune": "off",
}
#: the ns2-sack1 profile's values of the mapped keys (crates/aqmlab-core/src/tcp/config.rs)
NS2_SACK1 = {
    "cc": "newreno",
    "sack": True,
    "ecn": False,
    "init_cwnd": 2,
    "mss": 1448,
    "delayed_ack": "ns2",
    "min_rto": 0.2,
    "initial_rto": 3.0,
    "rcv_window": 10000,
}
#: ns-2's DelAck interval for each delayed_ack policy (None: no delayed ACKs)
DELACK = {"ns2": 0.1, "ns3": 0.2, "off": None}


@dataclass
class Ns2Queue:
    name: str
    src: str
    dst: str
    rate_bps: float
    delay: float
    qdisc: str  # the simulator's kind name ("fifo", "red", "ared")
    overhead: int
    trace: str  # trace file name


@dataclass
class Ns2Flow:
    name: str
    kind: str  # bulk | cbr
    group: int
    src: str
    dst: str
    start: float
    stop: float
    pkt_size: int  # wire size of a data packet in ns-2 (IP bytes + overhead)
    payload: int  # payload bytes per data packet (goodput)
    overhead: int
    interval: float = 0.0  # ping: time between echoes
    trace: str = ""  # bulk with tcp.trace: the file of its cwnd_/ssthresh_/srtt_ changes


@dataclass
class Ns2Translation:
    script: str
    duration: float
    warmup: float
    bin: float
    queues: list[Ns2Queue] = field(default_factory=list)
    flows: list[Ns2Flow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _err(key: str, why: str) -> str:
    return f"{key}: {why}"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_qdisc(q: dict, where: str, out: list[str]) -> None:
    kind = q.get("kind")
    if kind in ("fifo", "pfifo"):
        for k in q:
            if k not in ("kind", "limit"):
                out.append(_err(f"{where}.{k}", f"not supported by the {ENGINE} (DropTail takes only limit)"))
        if "limit" in q and not _is_int(q["limit"]):
            out.append(_err(f"{where}.limit", f"{q['limit']!r}: the {ENGINE} takes a packet count (DropTail queue-limit), not bytes"))
        return
    if kind in ("red", "ared"):
        for k in q:
            if k not in RED_KEYS:
                out.append(
                    _err(
                        f"{where}.{k}",
                        f"not supported by the {ENGINE} for ns-2's Queue/RED (supported: {', '.join(sorted(RED_KEYS - {'kind'}))})",
                    )
                )
        if q.get("variant") != "ns2":
            out.append(
                _err(
                    f"{where}.variant",
                    f'{q.get("variant", "linux")!r}: the {ENGINE} runs ns-2\'s own Queue/RED, which the simulator models as variant = '
                    '"ns2"; set it',
                )
            )
        for k in ("min", "max"):
            if k not in q:
                out.append(_err(f"{where}.{k}", f"the {ENGINE} needs explicit RED thresholds in packets (min and max)"))
            elif not _is_int(q[k]):
                out.append(_err(f"{where}.{k}", f"{q[k]!r}: the {ENGINE} takes thresholds in packets (ns-2's packet mode), not bytes"))
        if "limit" in q and not _is_int(q["limit"]):
            out.append(_err(f"{where}.limit", f"{q['limit']!r}: the {ENGINE} takes a packet count (queue-limit)"))
        return
    out.append(
        _err(f"{where}.kind", f'qdisc kind {kind!r} is not supported by the {ENGINE} (supported: fifo, red and ared with variant = "ns2")')
    )


def _tcp_value(k: str, v: Any) -> Any:
    if k in ("min_rto", "initial_rto"):
        return parse_duration(v, k)
    return v


def _check_tcp(t: dict, where: str, out: list[str], *, flow: bool) -> None:
    for k, v in t.items():
        if k == "stack":
            if flow:
                out.append(_err(f"{where}.stack", f"the {ENGINE} takes the stack from [tcp] only"))
            elif v != "ns2-sack1":
                out.append(
                    _err(
                        f"{where}.stack",
                        f'{v!r}: the {ENGINE} runs ns-2\'s Sack1/Newreno agents, which the simulator models as stack = "ns2-sack1"; set it',
                    )
                )
        elif k == "cc":
            if v not in CC:
                out.append(
                    _err(
                        f"{where}.cc",
                        f"{v!r} is not supported by the {ENGINE} (newreno/reno: ns-2's Sack1 and Newreno agents; cubic: ns-2's "
                        "Agent/TCP/Linux)",
                    )
                )
        elif k in ("sack", "ecn"):
            if not isinstance(v, bool):
                out.append(_err(f"{where}.{k}", f"expected true or false, got {v!r}"))
        elif k == "trace":
            pass  # an output request: a warning of the run (notes), no dynamics
        elif k == "delayed_ack":
            if v not in DELACK:
                out.append(_err(f"{where}.delayed_ack", f"{v!r} is not supported by the {ENGINE} (allowed: {', '.join(DELACK)})"))
        elif k in ("rcv_window", "max_window"):
            if not _is_int(v):
                out.append(_err(f"{where}.{k}", f"{v!r}: the {ENGINE} takes a window in segments (an integer)"))
        elif k in TCP_MAPPED:
            pass
        elif k in TCP_FIXED:
            want = TCP_FIXED[k]
            if v != want:
                out.append(_err(f"{where}.{k}", f"{v!r} is not supported by the {ENGINE} (ns-2's agents: {want!r} only)"))
        else:
            out.append(_err(f"{where}.{k}", f"not supported by the {ENGINE}"))


def check(sc: dict, plan: dict | None = None) -> list[str]:
    """Every key of the scenario document ``sc`` (``Scenario.to_dict()``) outside the ns-2
    subset, as ``"KEY: why"`` (empty: the engine can run it)."""
    out: list[str] = []
    for k in sc:
        if k not in ("run", "dumbbell", "tcp", "flow"):
            out.append(_err(k, f"not supported by the {ENGINE} (only a wired [dumbbell] with [[flow]] and [tcp])"))
    if "dumbbell" not in sc:
        out.append(_err("dumbbell", f"the {ENGINE} needs a [dumbbell] topology"))
    run = sc.get("run", {})
    for k, v in run.items():
        if k not in RUN_KEYS:
            out.append(_err(f"run.{k}", f"not supported by the {ENGINE}"))
        elif k == "host_jitter" and parse_duration(v, "run.host_jitter") != 0:
            out.append(
                _err(
                    "run.host_jitter",
                    f'{v!r}: ns-2 has no host jitter; the {ENGINE} takes only "0s" (or no key: the simulator\'s default, a documented '
                    'difference)',
                )
            )
    db = sc.get("dumbbell", {})
    for k, v in db.items():
        if k not in DUMBBELL_KEYS:
            out.append(_err(f"dumbbell.{k}", f"not supported by the {ENGINE}"))
        elif k in ("up", "down"):
            for dk, dv in v.items():
                if dk not in DIRECTION_KEYS or (dk == "loss" and dv != 0):
                    out.append(_err(f"dumbbell.{k}.{dk}", f"not supported by the {ENGINE}"))
            if "qdisc" in v:
                _check_qdisc(v["qdisc"], f"dumbbell.{k}.qdisc", out)
        elif k in ("qdisc", "access_qdisc"):
            _check_qdisc(v, f"dumbbell.{k}", out)
        elif k == "mtu" and v != 1500:
            out.append(_err("dumbbell.mtu", f"{v!r}: the {ENGINE} takes only 1500"))
        elif k == "device_queue" and v != 1:
            out.append(
                _err(
                    "dumbbell.device_queue", f"{v!r}: ns-2 links hold one packet in transmission below the queue; the {ENGINE} takes only 1"
                )
            )
    tcp = sc.get("tcp", {})
    _check_tcp(tcp, "tcp", out, flow=False)
    kinds = {f.get("kind") for f in sc.get("flow", [])}
    if "bulk" in kinds and tcp.get("stack") != "ns2-sack1":
        if "stack" not in tcp:
            out.append(
                _err(
                    "tcp.stack",
                    f'the {ENGINE} runs ns-2\'s Sack1/Newreno agents, which the simulator models as stack = "ns2-sack1" (the default is '
                    '"linux"); set it',
                )
            )
    for i, f in enumerate(sc.get("flow", [])):
        kind = f.get("kind")
        if kind not in FLOW_KEYS:
            out.append(_err(f"flow[{i}].kind", f"{kind!r} is not supported by the {ENGINE} (supported: {', '.join(FLOW_KEYS)})"))
            continue
        for k in f:
            if k not in FLOW_KEYS[kind]:
                why = "ns-2's FTP runs until the end of the run" if k == "bytes" else "not supported"
                out.append(
                    _err(f"flow[{i}].{k}", f"{why} by the {ENGINE}" if why == "not supported" else f"{why}; not supported by the {ENGINE}")
                )
        if kind != "ping" and "stop" in f and plan is not None and parse_duration(f["stop"], f"flow[{i}].stop") < plan["duration"]:
            out.append(
                _err(
                    f"flow[{i}].stop",
                    f"the {ENGINE} runs its sources until the end of the run (ns-2's FTP cannot stop a TCP agent cleanly)",
                )
            )
        if kind == "bulk" and "tcp" in f:
            _check_tcp(f["tcp"], f"flow[{i}].tcp", out, flow=True)
        if kind == "bulk":
            t = _tcp_settings(sc, f.get("tcp", {}))
            if t["cc"] == "cubic" and t["sack"] is False:
                key = f"flow[{i}].tcp.sack" if "sack" in f.get("tcp", {}) else "tcp.sack"
                out.append(
                    _err(key, f'false with cc = "cubic" is not supported by the {ENGINE} (ns-2\'s Agent/TCP/Linux recovers with SACK)')
                )
    return out


def _qdisc_tables(sc: dict, links: list[dict]) -> dict[str, dict]:
    db = sc["dumbbell"]
    base = db.get("qdisc", {"kind": "fifo", "limit": 1000})
    acc = db.get("access_qdisc", {"kind": "fifo", "limit": 1000})
    out = {}
    for d in ("up", "down"):
        out[f"bottleneck_{d}"] = db.get(d, {}).get("qdisc", base)
    for ln in links:
        out.setdefault(ln["name"], acc)
    return out


def _tcl_num(x: float) -> str:
    return repr(float(x)) if not float(x).is_integer() else str(int(x))


def _queue_tcl(q: dict, rate_bps: float) -> tuple[str, list[str], int]:
    """(ns-2 queue class, class-default lines set before the link is created, limit)."""
    kind = q.get("kind", "fifo")
    if kind in ("fifo", "pfifo"):
        # DropTail refuses an arrival when queue length + 1 >= limit_: it holds limit_ - 1
        # packets besides the one on the wire, where the simulator's fifo holds limit
        return "DropTail", [], int(q.get("limit", 1000)) + 1
    mn, mx = int(q["min"]), int(q["max"])
    limit = int(q.get("limit", 4 * mx))
    p = float(q.get("probability", 0.1))
    lines = [
        "Queue/RED set bytes_ false",
        "Queue/RED set queue_in_bytes_ false",
        f"Queue/RED set thresh_ {mn}",
        f"Queue/RED set maxthresh_ {mx}",
        f"Queue/RED set linterm_ {_tcl_num(1.0 / p)}",
        f"Queue/RED set mean_pktsize_ {int(parse_size(q.get('avpkt', 500), 'avpkt'))}",
        f"Queue/RED set q_weight_ {_tcl_num(float(q.get('weight', 0.0)))}",
        f"Queue/RED set gentle_ {'true' if q.get('gentle', True) else 'false'}",
        f"Queue/RED set adaptive_ {1 if q.get('adaptive', kind == 'ared') else 0}",
        "Queue/RED set setbit_ false",
        "Queue/RED set bottom_ 0",
    ]
    return "RED", lines, limit


def _tcp_settings(sc: dict, flow_tcp: dict) -> dict[str, Any]:
    t = dict(NS2_SACK1, trace=False)
    for src in (sc.get("tcp", {}), flow_tcp):
        for k, v in src.items():
            if k in NS2_SACK1 or k == "trace":
                t[k] = _tcp_value(k, v)
    if "max_window" in flow_tcp or "max_window" in sc.get("tcp", {}):
        t["max_window"] = flow_tcp.get("max_window", sc.get("tcp", {}).get("max_window"))
    return t


def translate(sc: dict, plan: dict, *, seed: int = 1) -> Ns2Translation:
    """The Tcl script for a scenario :func:`check` accepts (``sc``: ``Scenario.to_dict()``;
    ``plan``: ``Scenario.validate(seed=..., spread=True)``)."""
    bad = check(sc, plan)
    if bad:
        key, _, why = bad[0].partition(": ")
        raise ScenarioError(key, why)
    dur, warm, binw = float(plan["duration"]), float(plan["warmup"]), float(plan["bin"])
    nodes = [n["name"] for n in plan["nodes"]]
    idx = {n: i for i, n in enumerate(nodes)}
    links = plan["links"]
    qtab = _qdisc_tables(sc, links)
    L: list[str] = [
        "# generated by aqmlab (ns2 engine)",
        "set ns [new Simulator]",
        "global defaultRNG",
        f"$defaultRNG seed {seed % 2147483646 + 1}",
        "set OUT [lindex $argv 0]",
    ]
    overheads = {int(ln["overhead"]) for ln in links}
    if len(overheads) != 1:
        raise ScenarioError("dumbbell.overhead", f"the {ENGINE} needs one framing overhead on every link")
    oh = overheads.pop()
    L += [f"set n({i}) [$ns node]" for i in range(len(nodes))]
    queues: list[Ns2Queue] = []
    for j, ln in enumerate(links):
        qd = qtab[ln["name"]]
        cls, pre, limit = _queue_tcl(qd, ln["rate_bps"])
        a, b = idx[ln["from"]], idx[ln["to"]]
        L += pre
        L.append(f"$ns simplex-link $n({a}) $n({b}) {int(ln['rate_bps'])} {_tcl_num(ln['delay'])} {cls}")
        L.append(f"$ns queue-limit $n({a}) $n({b}) {limit}")
        fn = f"q{j}.tr"
        L.append(f"set qf({j}) [open $OUT/{fn} w]")
        L.append(f"$ns trace-queue $n({a}) $n({b}) $qf({j})")
        kind = qd.get("kind", "fifo")
        queues.append(
            Ns2Queue(
                ln["name"], ln["from"], ln["to"], float(ln["rate_bps"]), float(ln["delay"]), "fifo" if kind == "pfifo" else kind, oh, fn
            )
        )
    flows: list[Ns2Flow] = []
    linux_agents: list[str] = []
    samp: list[str] = []
    pings = False
    for i, f in enumerate(plan["flows"]):
        src, dst = idx[f["src"]], idx[f["dst"]]
        ftab = sc["flow"][f["group"]]
        start = float(f["start"])
        if f["kind"] == "bulk":
            t = _tcp_settings(sc, ftab.get("tcp", {}))
            mss = int(t["mss"])
            nbytes = int(parse_size(ftab["bytes"], f"flow[{f['group']}].bytes")) if "bytes" in ftab else 0
            cubic = t["cc"] == "cubic"
            agent = "Agent/TCP/Linux" if cubic else "Agent/TCP/Sack1" if t["sack"] else "Agent/TCP/Newreno"
            delack = DELACK[t["delayed_ack"]]
            sink = ("Agent/TCPSink/Sack1" if t["sack"] else "Agent/TCPSink") + ("/DelAck" if delack is not None else "")
            L += [
                f"set src({i}) [new {agent}]",
                f"$src({i}) set fid_ {i}",
                f"$src({i}) set packetSize_ {mss}",
                f"$src({i}) set tcpip_base_hdr_size_ {40 + oh}",
                f"$src({i}) set window_ {int(t['rcv_window'])}",
                f"$src({i}) set windowInit_ {int(t['init_cwnd'])}",
                f"$src({i}) set minrto_ {_tcl_num(t['min_rto'])}",
                f"$src({i}) set rtxcur_init_ {_tcl_num(t['initial_rto'])}",
            ]
            if t.get("max_window") is not None:
                L.append(f"$src({i}) set maxcwnd_ {int(t['max_window'])}")
            if t["ecn"]:
                # ECN-capable; the sink echoes CE (the engine's queues never mark: RED's setbit_ is false)
                L.append(f"$src({i}) set ecn_ 1")
            if cubic:
                # TCP-Linux's congestion-control module, chosen before the first segment
                L.append(f'$ns at 0 "$src({i}) select_ca cubic"')
            if t["trace"]:
                # every change of cwnd_ (packets), ssthresh_ (packets), srtt_ (s, 10 ms ticks)
                L += [f"set tf({i}) [open $OUT/tcp{i}.tr w]", f"$src({i}) attach $tf({i})"] + [
                    f"$src({i}) trace {v}" for v in ("cwnd_", "ssthresh_", "srtt_")
                ]
            L += [f"set dst({i}) [new {sink}]", f"$dst({i}) set packetSize_ {40 + oh}"]
            if delack is not None:
                L.append(f"$dst({i}) set interval_ {_tcl_num(delack)}")
            L += [
                f"$ns attach-agent $n({src}) $src({i})",
                f"$ns attach-agent $n({dst}) $dst({i})",
                f"$ns connect $src({i}) $dst({i})",
                f"set app({i}) [$src({i}) attach-app FTP]",
                # FTP send N: the agent sends ceil(N / packetSize_) segments and stops
                f"$ns at {_tcl_num(start)} \"$app({i}) send {nbytes}\"" if nbytes else f"$ns at {_tcl_num(start)} \"$app({i}) start\"",
            ]
            samp.append(
                f'puts $sf "F $t {i} [$dst({i}) set bytes_] [$src({i}) set ndatapack_] [$src({i}) set nrexmitpack_] [$src({i}) set '
                f'nrexmit_] [$src({i}) set cwnd_]"'
            )
            flows.append(
                Ns2Flow(
                    f["name"],
                    "bulk",
                    int(f["group"]),
                    f["src"],
                    f["dst"],
                    start,
                    float(f["stop"]),
                    mss + 40 + oh,
                    mss,
                    oh,
                    trace=f"tcp{i}.tr" if t["trace"] else "",
                )
            )
            if cubic:
                linux_agents.append(f["name"])
        elif f["kind"] == "ping":
            size = int(parse_size(ftab.get("size", 84), f"flow[{f['group']}].size"))
            iv = parse_duration(ftab.get("interval", "200ms"), f"flow[{f['group']}].interval")
            L += [
                f"set src({i}) [new Agent/Ping]",
                f"$src({i}) set fid_ {i}",
                f"$src({i}) set packetSize_ {size + oh}",
                f"set dst({i}) [new Agent/Ping]",
                f"$dst({i}) set fid_ {i}",
                f"$dst({i}) set packetSize_ {size + oh}",
                f"$ns attach-agent $n({src}) $src({i})",
                f"$ns attach-agent $n({dst}) $dst({i})",
                f"$ns connect $src({i}) $dst({i})",
                f"$ns at {_tcl_num(start)} \"ping_tick {i} {_tcl_num(start)} {_tcl_num(iv)} {_tcl_num(min(float(f['stop']), dur))} 0\"",
            ]
            pings = True
            samp.append(f'puts $sf "F $t {i} 0 0 0 0 0"')
            flows.append(
                Ns2Flow(f["name"], "ping", int(f["group"]), f["src"], f["dst"], start, float(f["stop"]), size + oh, 0, oh, interval=iv)
            )
        else:
            size = int(parse_size(ftab.get("size", 1500), f"flow[{f['group']}].size"))
            rate = parse_rate(ftab["rate"], f"flow[{f['group']}].rate")
            # ns-2's CBR spaces packets by packetSize_ * 8 / rate_; the wire size carries the
            # overhead, the simulator's rate counts IP bytes
            L += [
                f"set src({i}) [new Agent/UDP]",
                f"$src({i}) set fid_ {i}",
                f"$src({i}) set packetSize_ {size + oh + 100}",
                f"set dst({i}) [new Agent/LossMonitor]",
                f"$ns attach-agent $n({src}) $src({i})",
                f"$ns attach-agent $n({dst}) $dst({i})",
                f"$ns connect $src({i}) $dst({i})",
                f"set app({i}) [new Application/Traffic/CBR]",
                f"$app({i}) set packetSize_ {size + oh}",
                f"$app({i}) set rate_ {_tcl_num(rate * (size + oh) / size)}",
                f"$app({i}) set random_ 0",
                f"$app({i}) attach-agent $src({i})",
                f"$ns at {_tcl_num(start)} \"$app({i}) start\"",
            ]
            samp.append(f'puts $sf "F $t {i} [$dst({i}) set bytes_] [$dst({i}) set npkts_] 0 0 0"')
            flows.append(Ns2Flow(f["name"], "cbr", int(f["group"]), f["src"], f["dst"], start, float(f["stop"]), size + oh, size - 28, oh))
    nbins = max(1, math.ceil(dur / binw - 1e-9))
    times = sorted({round(k * binw, 9) for k in range(nbins + 1) if k * binw <= dur + 1e-9} | {round(warm, 9), round(dur, 9)})
    if pings:
        # the k-th echo of a ping flow leaves at start + k * interval (no drift) and logs
        # "S <flow> <k> <time>"; each reply logs "R <flow> <time> <rtt s>" (Agent/Ping
        # passes the round trip in ms with one decimal: the engine matches the reply to
        # its echo's send time for the exact value)
        L += [
            "set pf [open $OUT/pings.tr w]",
            "proc ping_tick {i t0 iv stop k} {",
            "    global ns src pf",
            "    $src($i) send",
            '    puts $pf "S $i $k [$ns now]"',
            "    set nt [expr {$t0 + ($k + 1) * $iv}]",
            '    if {$nt < $stop} { $ns at $nt "ping_tick $i $t0 $iv $stop [expr {$k + 1}]" }',
            "}",
            "Agent/Ping instproc recv {from rtt} {",
            "    global ns pf",
            "    $self instvar fid_",
            '    puts $pf "R $fid_ [$ns now] [expr {$rtt / 1000.0}]"',
            "}",
        ]
    L += [
        "set sf [open $OUT/flows.tr w]",
        "proc sample {t} {",
        "    global sf src dst",
        *("    " + s for s in samp),
        "}",
    ]
    L += [f'$ns at {_tcl_num(t)} "sample {_tcl_num(t)}"' for t in times]
    L += [
        "proc finish {} {",
        "    global ns sf qf pf tf",
        "    $ns flush-trace",
        "    close $sf",
        "    if {[info exists pf]} { close $pf }",
        "    foreach j [array names tf] { close $tf($j) }",
        "    foreach j [array names qf] { close $qf($j) }",
        '    puts "aqmlab-ns2: done [$ns now]"',
        "    exit 0",
        "}",
        f'$ns at {_tcl_num(dur + 1e-6)} "finish"',
        "$ns run",
        "",
    ]
    notes = []
    if linux_agents:
        notes.append(
            f"cc = \"cubic\" ({', '.join(linux_agents)}): ns-2's Agent/TCP/Linux runs ns-2.35's copy of Linux's tcp_cubic.c (no HyStart) "
            "in TCP-Linux's own SACK recovery; the simulator runs its CUBIC in the ns2-sack1 stack"
        )
    if "host_jitter" not in sc.get("run", {}):
        notes.append(
            'ns-2 has no host jitter: the simulator\'s default 50 us per packet from end hosts stays on its side (set run.host_jitter = '
            '"0s" to remove it there too)'
        )
    return Ns2Translation("\n".join(L), dur, warm, binw, queues, flows, notes)
