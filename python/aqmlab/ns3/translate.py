"""Scenario → the JSON job that the ``aqmlab-ns3`` program runs on ns-3.44.

The topology is the one the simulator resolves (``Scenario.validate(seed=..., spread=True)``):
the same nodes, the same links (each duplex pair one ns-3 point-to-point link), the same
flow start times. Each link direction gets one ns-3 root queue disc, named by its ns-3 type
and attributes, mapped from the scenario's qdisc keys; each TCP flow gets ns-3 congestion
and recovery types and socket attributes mapped from ``[tcp]`` and the flow's ``tcp``.
Every key the mapping does not cover is refused with a :class:`ScenarioError` that names
it, before anything runs. docs/ns3-engine.md has the key-by-key table.
"""

from __future__ import annotations

from typing import Any

from aqmlab._topology import duplex_pairs
from aqmlab.errors import ScenarioError
from aqmlab.linux.translate import link_qdisc_tables, parse_duration, parse_rate, parse_size

__all__ = ["translate", "qdisc_spec", "tcp_spec", "STACKS"]

ENGINE = "the ns3 engine"

#: ``[tcp] stack`` profiles the engine takes, with the values of the keys it maps. ``linux``
#: is the scenario default: ns-3's TCP then runs with Linux's values of these keys (what
#: ns-3 cannot do as Linux does is listed in docs/ns3-engine.md); ``ns3`` is ns-3.44's own
#: defaults (aqmlab's ``stack = "ns3"`` models exactly that).
STACKS: dict[str, dict[str, Any]] = {
    "linux": {
        "cc": "cubic",
        "init_cwnd": 10,
        "recovery": "prr",
        "delayed_ack": "linux",
        "min_rto": 0.2,
        "initial_rto": 1.0,
        "rcv_window": "3MiB",
        "sack": True,
        "ecn": False,
        "mss": 1448,
        "timestamps": True,
        "hystart": True,
        "pacing": False,
    },
    "ns3": {
        "cc": "newreno",
        "init_cwnd": 10,
        "recovery": "rfc6675",
        "delayed_ack": "ns3",
        "min_rto": 1.0,
        "initial_rto": 3.0,
        "rcv_window": "128KiB",
        "sack": True,
        "ecn": False,
        "mss": 1448,
        "timestamps": True,
        "hystart": True,
        "pacing": False,
    },
}

#: congestion controls: (ns-3 type with stack linux, with stack ns3)
_CC = {
    "cubic": ("ns3::TcpCubic", "ns3::TcpCubic"),
    "newreno": ("ns3::TcpLinuxReno", "ns3::TcpNewReno"),
    "reno": ("ns3::TcpLinuxReno", "ns3::TcpNewReno"),
    "bbr": ("ns3::TcpBbr", "ns3::TcpBbr"),
    "dctcp": ("ns3::TcpDctcp", "ns3::TcpDctcp"),
}
_RECOVERY = {"prr": "ns3::TcpPrrRecovery", "rfc6675": "ns3::TcpClassicRecovery"}
#: delayed-ACK policies: (DelAckCount, DelAckTimeout)
_DELACK = {"ns3": (2, "200ms"), "ns2": (2, "100ms"), "linux": (2, "40ms"), "off": (1, "200ms")}

#: [tcp] keys ns-3 has no setting for: accepted only at the value ns-3's TCP behaves as
#: (TcpNewReno/TcpClassicRecovery/TcpSocketBase of 3.44), i.e. what aqmlab's ns3 profile sets
_NS3_FIXED: dict[str, Any] = {
    "ss_growth": "acks",
    "ca_growth": "acks",
    "reno_halves": "flight",
    "loss_detection": "dupthresh",
    "tlp": "off",
    "dsack": False,
    "undo": "off",
    "rto_undo": False,
    "early_retransmit": False,
    "rtt_timing": "ack",
    "rcv_autotune": "off",
    "rto_floor": "sum",
}


def _unsupported(field: str, why: str) -> ScenarioError:
    return ScenarioError(field, f"not supported by {ENGINE}: {why}")


def _flag(v: Any, field: str) -> bool:
    if not isinstance(v, bool):
        raise ScenarioError(field, f"expected true or false, got {v!r}")
    return v


def tcp_spec(tcp: dict, flow_tcp: dict, where: str, flow_where: str) -> dict[str, Any]:
    """The ns-3 sockets of one bulk flow from ``[tcp]`` and the flow's ``tcp`` table:
    ``cc``, ``recovery`` (ns-3 types), ``pacing``, ``snd_attrs``/``rcv_attrs`` (attributes of
    the sending and the listening socket), ``initial_rto`` (s) and ``notes``."""
    stack = flow_tcp.get("stack", tcp.get("stack", "linux"))
    if stack not in STACKS:
        f = f"{flow_where}.stack" if "stack" in flow_tcp else f"{where}.stack"
        raise _unsupported(f, f"stack {stack!r} (supported: {', '.join(STACKS)}; ns-3's own TCP runs either way)")
    eff = dict(STACKS[stack])
    notes: list[str] = []
    for table, path in ((tcp, where), (flow_tcp, flow_where)):
        for k, v in table.items():
            f = f"{path}.{k}"
            if k == "stack":
                continue
            if k == "cc":
                if v not in _CC:
                    raise _unsupported(f, f"cc {v!r} (supported: {', '.join(_CC)})")
                eff["cc"] = v
            elif k in ("sack", "ecn", "timestamps", "hystart", "pacing"):
                eff[k] = _flag(v, f)
            elif k == "init_cwnd":
                if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                    raise ScenarioError(f, f"expected a positive integer, got {v!r}")
                eff[k] = v
            elif k == "mss":
                if not isinstance(v, int) or isinstance(v, bool) or not 64 <= v <= 65000:
                    raise ScenarioError(f, f"expected an integer 64..65000, got {v!r}")
                eff[k] = v
            elif k in ("min_rto", "initial_rto"):
                if k == "initial_rto" and path == flow_where:
                    raise _unsupported(
                        f, "a per-flow initial_rto (ns-3's RttEstimator InitialEstimation is one default for the run; set it in [tcp])"
                    )
                eff[k] = parse_duration(v, f)
            elif k == "rcv_window":
                eff[k] = v
            elif k == "delayed_ack":
                if v not in _DELACK:
                    raise ScenarioError(f, f"{v!r}: allowed values are {', '.join(_DELACK)}")
                eff[k] = v
            elif k in ("recovery", "prr"):
                r = ("prr" if v else "rfc6675") if k == "prr" else v
                if r not in _RECOVERY:
                    raise _unsupported(f, f"recovery {v!r} (ns-3 has prr = TcpPrrRecovery and rfc6675 = TcpClassicRecovery)")
                eff["recovery"] = r
            elif k == "trace":
                eff["trace"] = _flag(v, f)
            elif k in _NS3_FIXED:
                if v != _NS3_FIXED[k]:
                    raise _unsupported(f, f"{v!r} (ns-3's TCP has no such setting; it behaves as {k} = {_NS3_FIXED[k]!r})")
            else:
                raise _unsupported(f, "no ns-3 counterpart")
    cc_type = _CC[eff["cc"]][0 if stack == "linux" else 1]
    if eff["cc"] == "dctcp" and not eff["ecn"]:
        eff["ecn"] = True  # as the simulator: dctcp always negotiates ECN
    rw = eff["rcv_window"]
    if isinstance(rw, int) and not isinstance(rw, bool):
        rcv_bytes = rw * eff["mss"]
    else:
        rcv_bytes = int(parse_size(rw, f"{where}.rcv_window"))
    count, timeout = _DELACK[eff["delayed_ack"]]
    common = {
        "SegmentSize": str(eff["mss"]),
        "Sack": "true" if eff["sack"] else "false",
        "Timestamp": "true" if eff["timestamps"] else "false",
        "UseEcn": "On" if eff["ecn"] else "Off",
        "MinRto": f"{eff['min_rto']!r}s",
        "ConnTimeout": f"{eff['initial_rto']!r}s",
        "RcvBufSize": str(rcv_bytes),
        # the sender's buffer never limits the window (the simulator's senders have none)
        "SndBufSize": str(max(4 << 20, 2 * rcv_bytes)),
        "DelAckCount": str(count),
        "DelAckTimeout": timeout,
    }
    snd = dict(common, InitialCwnd=str(eff["init_cwnd"]))
    return {
        "cc": cc_type,
        "recovery": _RECOVERY[eff["recovery"]],
        # ns-3's TcpBbr needs pacing (its documentation); the simulator's bbr paces too
        "pacing": bool(eff["pacing"] or eff["cc"] == "bbr"),
        "hystart": bool(eff["hystart"]),
        "snd_attrs": snd,
        "rcv_attrs": dict(common),
        "initial_rto": eff["initial_rto"],
        # the sender's cwnd, ssthresh and srtt samples (the socket's trace sources)
        "trace": bool(eff.get("trace", False)),
        "stack": stack,
        "notes": notes,
    }


# ---------------------------------------------------------------------------------------
# queue discs


def _size(q: dict, where: str, key: str, default: int | str) -> str:
    """An ns-3 QueueSize string ("1000p" / "150000B") from a packets-or-bytes key."""
    v = q.get(key, default)
    if isinstance(v, int) and not isinstance(v, bool):
        if v < 1:
            raise ScenarioError(f"{where}.{key}", f"expected at least 1, got {v!r}")
        return f"{v}p"
    return f"{int(parse_size(v, f'{where}.{key}'))}B"


def _dur(q: dict, where: str, key: str, default: str) -> str:
    return f"{parse_duration(q.get(key, default), f'{where}.{key}')!r}s"


def _keys(q: dict, where: str, known: set[str]) -> None:
    for k in q:
        if k != "kind" and k not in known:
            raise _unsupported(
                f"{where}.{k}", f"no ns-3 attribute for it in qdisc kind {q['kind']!r} (supported keys: {', '.join(sorted(known))})"
            )


def _only(q: dict, where: str, key: str, allowed: tuple, why: str) -> None:
    if key in q and q[key] not in allowed:
        raise _unsupported(f"{where}.{key}", f"{q[key]!r} ({why}; allowed: {', '.join(repr(a) for a in allowed)})")


def _ecn_ce(q: dict, where: str, attrs: dict[str, str], ecn_default: bool) -> None:
    attrs["UseEcn"] = "true" if _flag(q.get("ecn", ecn_default), f"{where}.ecn") else "false"
    ce = q.get("ce_threshold", "off")
    if ce != "off":
        attrs["CeThreshold"] = f"{parse_duration(ce, f'{where}.ce_threshold')!r}s"


def _red_ewma_log(qmin: float, burst: float, avpkt: float, where: str) -> int:
    """tc's ``tc_red_eval_ewma`` (iproute2 tc/tc_red.c): the smallest log2(1/W) for which a
    burst of ``burst`` packets arriving at an empty queue keeps the average below ``qmin``."""
    a = burst + 1 - qmin / avpkt
    if a < 1.0:
        raise ScenarioError(
            f"{where}.burst", f"burst {burst:g} is too small for min {qmin:g} / avpkt {avpkt:g} (tc needs burst + 1 - min/avpkt >= 1)"
        )
    w = 0.5
    for wlog in range(1, 32):
        if a <= (1 - (1 - w) ** burst) / w:
            return wlog
        w /= 2
    raise ScenarioError(f"{where}.burst", f"burst {burst:g} needs an EWMA weight below 2^-31")


def qdisc_spec(q: dict, where: str, rate_bps: float, delay: float, mtu: int) -> tuple[dict[str, Any], list[str]]:
    """The ns-3 root queue disc (``{"type": ..., "attrs": {...}}``) of a scenario qdisc
    table, and notes on what differs. Every value the scenario leaves out is set to the
    simulator's default, not ns-3's (they differ: CoDel's limit, RED's thresholds ...)."""
    kind = q.get("kind", "fifo")
    notes: list[str] = []
    attrs: dict[str, str] = {}
    if kind in ("fifo", "pfifo", "bfifo"):
        _keys(q, where, {"limit"})
        return {"type": "ns3::FifoQueueDisc", "attrs": {"MaxSize": _size(q, where, "limit", 1000)}}, notes
    if kind == "codel":
        _keys(
            q,
            where,
            {"limit", "target", "interval", "ecn", "ce_threshold", "variant", "drop_at", "sojourn_estimate", "fixed_count", "backlog_rule"},
        )
        _only(q, where, "variant", ("linux", "rfc8289"), "ns-3's CoDelQueueDisc is a port of Linux sch_codel")
        _only(q, where, "drop_at", ("dequeue",), "CoDelQueueDisc drops at dequeue")
        _only(q, where, "sojourn_estimate", ("head",), "CoDelQueueDisc uses timestamps")
        _only(q, where, "fixed_count", ("off",), "a simulator diagnostic")
        attrs = {
            "MaxSize": _size(q, where, "limit", 1000),
            "Target": _dur(q, where, "target", "5ms"),
            "Interval": _dur(q, where, "interval", "100ms"),
        }
        _ecn_ce(q, where, attrs, False)
        _only(q, where, "backlog_rule", ("linux", "ns3"), "the rules of Linux and ns-3")
        if q.get("backlog_rule", "linux") != "ns3":
            notes.append(
                f"{where}: ns-3's CoDelQueueDisc may drop while one full packet is left behind the head (IP bytes < MinBytes, "
                'backlog_rule = "ns3"), Linux only while more than one MTU is'
            )
        return {"type": "ns3::CoDelQueueDisc", "attrs": attrs}, notes
    if kind == "fq_codel":
        _keys(
            q,
            where,
            {
                "limit",
                "flows",
                "target",
                "interval",
                "ecn",
                "ce_threshold",
                "drop_batch",
                "variant",
                "backlog_rule",
                "quantum",
                "memory_limit",
            },
        )
        _only(q, where, "variant", ("linux",), "FqCoDelQueueDisc's flows run ns-3's CoDel")
        _only(q, where, "quantum", (), "FqCoDelQueueDisc's quantum is the device MTU; no attribute")
        _only(q, where, "memory_limit", (), "FqCoDelQueueDisc has no memory limit")
        attrs = {
            "MaxSize": _size(q, where, "limit", 10240),
            "Flows": str(int(q.get("flows", 1024))),
            "DropBatchSize": str(int(q.get("drop_batch", 64))),
            "Target": _dur(q, where, "target", "5ms"),
            "Interval": _dur(q, where, "interval", "100ms"),
        }
        _ecn_ce(q, where, attrs, True)
        if q.get("backlog_rule", "linux") != "ns3":
            notes.append(
                f"{where}: ns-3's FqCoDelQueueDisc keeps a flow's CoDel from dropping while that flow holds under one MTU (backlog_rule = "
                "\"ns3\"), Linux while the whole qdisc does"
            )
        return {"type": "ns3::FqCoDelQueueDisc", "attrs": attrs}, notes
    if kind in ("pie", "fq_pie"):
        fq = kind == "fq_pie"
        common = {"limit", "target", "tupdate", "alpha", "beta", "ecn", "ecn_prob", "bytemode"}
        if fq:
            _keys(q, where, common | {"flows", "quantum", "memory_limit", "dq_rate_estimator", "backlog_rule"})
            _only(q, where, "quantum", (), "FqPieQueueDisc's quantum is the device MTU; no attribute")
            _only(q, where, "memory_limit", (), "FqPieQueueDisc has no memory limit")
            _only(q, where, "bytemode", (False,), "FqPieQueueDisc has no byte mode")
        else:
            _keys(q, where, common | {"variant", "max_burst", "estimator", "dq_threshold", "mean_pktsize", "derandomize"})
            _only(q, where, "variant", ("linux", "rfc8033"), "ns-3's PieQueueDisc follows RFC 8033")
            _only(q, where, "estimator", ("timestamp", "dq_rate"), "PieQueueDisc has timestamps or the departure-rate estimator")
            _only(q, where, "bytemode", (False,), "PieQueueDisc has no byte mode")
        attrs = {
            "MaxSize": _size(q, where, "limit", 10240 if fq else 1000),
            "QueueDelayReference": _dur(q, where, "target", "15ms"),
            "Tupdate": _dur(q, where, "tupdate", "15ms"),
            "A": repr(float(q.get("alpha", 0.125))),
            "B": repr(float(q.get("beta", 1.25))),
            "MeanPktSize": str(int(q.get("mean_pktsize", mtu))),
            "UseEcn": "true" if _flag(q.get("ecn", False), f"{where}.ecn") else "false",
            "MarkEcnThreshold": repr(float(q.get("ecn_prob", 0.1))),
        }
        if fq:
            attrs["Flows"] = str(int(q.get("flows", 1024)))
            # Linux sch_fq_pie (and the simulator's fq_pie) de-randomise every flow's early
            # drops (pie_drop_early's accu_prob); FqPieQueueDisc passes this to its children
            attrs["UseDerandomization"] = "true"
            attrs["UseDequeueRateEstimator"] = "true" if _flag(q.get("dq_rate_estimator", False), f"{where}.dq_rate_estimator") else "false"
            if q.get("backlog_rule", "linux") != "ns3":
                notes.append(
                    f'{where}: ns-3\'s FqPieQueueDisc spares a flow holding at most two packets from early drops (backlog_rule = "ns3"), '
                    'Linux one holding less than two MTUs'
                )
        else:
            attrs["MaxBurstAllowance"] = _dur(q, where, "max_burst", "150ms")
            attrs["UseDequeueRateEstimator"] = "true" if q.get("estimator", "timestamp") == "dq_rate" else "false"
            attrs["DequeueThreshold"] = str(int(q.get("dq_threshold", 16384)))
            variant = q.get("variant", "linux")
            # Linux sch_pie always accumulates the drop probability (pie_drop_early's
            # accu_prob), as the simulator's linux variant: ns-3's de-randomisation
            derand = q.get("derandomize", True) if variant == "rfc8033" else True
            if "derandomize" in q and variant != "rfc8033":
                raise ScenarioError(f"{where}.derandomize", "applies to variant = \"rfc8033\" only")
            attrs["UseDerandomization"] = "true" if _flag(derand, f"{where}.derandomize") else "false"
            if variant == "linux":
                notes.append(
                    f"{where}: ns-3's PieQueueDisc is RFC 8033's PIE, not Linux sch_pie (variant = \"rfc8033\", derandomize = false is "
                    "its exact counterpart)"
                )
        return {"type": "ns3::FqPieQueueDisc" if fq else "ns3::PieQueueDisc", "attrs": attrs}, notes
    if kind in ("red", "ared"):
        _keys(
            q,
            where,
            {
                "limit",
                "min",
                "max",
                "avpkt",
                "burst",
                "ewma_log",
                "bandwidth",
                "probability",
                "adaptive",
                "ecn",
                "gentle",
                "harddrop",
                "variant",
                "weight",
            },
        )
        variant = q.get("variant", "linux")
        if variant not in ("linux", "ns2"):
            raise ScenarioError(f"{where}.variant", f"{variant!r}: allowed values are linux, ns2")
        ns2 = variant == "ns2"
        units = {type(q[k]) is int for k in ("min", "max") if k in q}
        if len(units) > 1:
            raise ScenarioError(f"{where}.max", "min and max must both be packets (integers) or both sizes")
        packets = units == {True}
        avpkt = float(q.get("avpkt", 500 if ns2 else 1000))

        def th(key: str) -> float:
            v = q[key]
            return float(v) if packets else parse_size(v, f"{where}.{key}")

        if "max" not in q and "min" not in q:
            mx = 1000 * (mtu + 14) / 4
            mn = mx / 3
        else:
            mx = th("max") if "max" in q else 3 * th("min")
            mn = th("min") if "min" in q else mx / 3
        lim = q.get("limit", int(4 * mx) if packets else f"{int(4 * mx)}B")
        if packets != (isinstance(lim, int) and not isinstance(lim, bool)):
            raise ScenarioError(
                f"{where}.limit",
                "the ns3 engine needs limit in the thresholds' unit (packets with packet thresholds, a size with byte thresholds)",
            )
        p = float(q.get("probability", 0.1 if ns2 else 0.02))
        attrs = {
            "MaxSize": _size({"limit": lim}, where, "limit", 0),
            "MinTh": repr(mn),
            "MaxTh": repr(mx),
            "MeanPktSize": str(int(avpkt)),
            "IdlePktSize": str(int(avpkt)),
            "LInterm": repr(1 / p),
            "Gentle": "true" if _flag(q.get("gentle", ns2), f"{where}.gentle") else "false",
            "Wait": "true" if ns2 else "false",
            "AdaptMaxP": "true" if _flag(q.get("adaptive", kind == "ared"), f"{where}.adaptive") else "false",
            "UseEcn": "true" if _flag(q.get("ecn", False), f"{where}.ecn") else "false",
            "UseHardDrop": "true" if _flag(q.get("harddrop", False), f"{where}.harddrop") else "false",
            "LinkBandwidth": f"{int(parse_rate(q.get('bandwidth', rate_bps), f'{where}.bandwidth'))}bps",
            "LinkDelay": f"{delay!r}s",
        }
        if ns2:
            if "ewma_log" in q or "burst" in q:
                raise ScenarioError(f"{where}.{'ewma_log' if 'ewma_log' in q else 'burst'}", "variant ns2 takes weight, not burst/ewma_log")
            attrs["QW"] = repr(float(q["weight"])) if "weight" in q else "0"  # 0: ns-2's automatic rule
            # ns-2's automatic bottom for ARED, min(0.01, 80000 / bandwidth), as ns-2.35 sets it
            attrs["Bottom"] = repr(min(0.01, 80000.0 / rate_bps))
        else:
            if "weight" in q:
                raise ScenarioError(f"{where}.weight", "applies to variant = \"ns2\" only (Linux sets the weight by burst or ewma_log)")
            if "ewma_log" in q:
                wlog = int(q["ewma_log"])
            else:
                mn_b = mn * avpkt if packets else mn
                mx_b = mx * avpkt if packets else mx
                burst = float(q.get("burst", (2 * mn_b + mx_b) / (3 * avpkt)))
                wlog = _red_ewma_log(mn_b, burst, avpkt, where)
            attrs["QW"] = repr(2.0**-wlog)
            notes.append(
                f"{where}: ns-3's RedQueueDisc is ns-2's RED: its idle-time decay and max_p adaptation are ns-2's, not Linux sch_red's"
            )
        return {"type": "ns3::RedQueueDisc", "attrs": attrs}, notes
    raise _unsupported(f"{where}.kind", f"qdisc kind {kind!r} (supported: fifo, codel, fq_codel, pie, fq_pie, red, ared)")


# ---------------------------------------------------------------------------------------
# the job


def _check_top(sc: dict) -> None:
    for key in ("docsis", "wifi"):
        if key in sc:
            raise _unsupported(key, "only wired dumbbells and [[node]]/[[link]] graphs")
    db = sc.get("dumbbell", {})
    if "wifi" in db:
        raise _unsupported("dumbbell.wifi", "only wired access links")
    if "overhead" in db and db["overhead"] != 2:
        raise _unsupported(
            "dumbbell.overhead", f"{db['overhead']!r} (ns-3's point-to-point links frame with a 2-byte PPP header: only overhead = 2)"
        )
    if "mtu" in db and db["mtu"] != 1500:
        raise _unsupported("dumbbell.mtu", "only 1500 (the point-to-point device's MTU is left at its default)")
    for d in ("up", "down"):
        t = db.get(d, {})
        for k in ("loss_periods", "shaper"):
            if t.get(k):
                raise _unsupported(f"dumbbell.{d}.{k}", "no ns-3 counterpart in the engine")
    for i, lk in enumerate(sc.get("link", [])):
        for k in ("loss_periods", "shaper"):
            if lk.get(k):
                raise _unsupported(f"link[{i}].{k}", "no ns-3 counterpart in the engine")
        if "overhead" in lk and lk["overhead"] != 2:
            raise _unsupported(
                f"link[{i}].overhead", f"{lk['overhead']!r} (ns-3's point-to-point links frame with a 2-byte PPP header: only overhead = 2)"
            )
        if "mtu" in lk and lk["mtu"] != 1500:
            raise _unsupported(f"link[{i}].mtu", "only 1500")
        if lk.get("duplex", True) is not True:
            raise _unsupported(f"link[{i}].duplex", "ns-3 point-to-point links are duplex")
    run = sc.get("run", {})
    for k in ("packet_trace", "trace"):
        if run.get(k):
            raise _unsupported(f"run.{k}", "the engine records its own per-packet sojourn; no state traces")
    for i, f in enumerate(sc.get("flow", [])):
        if f.get("dscp", 0):
            raise _unsupported(f"flow[{i}].dscp", "no DSCP marking")
        if f.get("kind") not in SUPPORTED_FLOWS:
            raise _unsupported(f"flow[{i}].kind", f"{f.get('kind')!r} (supported: {', '.join(SUPPORTED_FLOWS)})")


SUPPORTED_FLOWS = ("bulk", "cbr", "ping", "udp_rr")
_FLOW_KEYS = {
    "bulk": {"kind", "from", "to", "count", "name", "start", "stop", "start_spread", "bytes", "tcp", "dscp"},
    "cbr": {"kind", "from", "to", "count", "name", "start", "stop", "start_spread", "rate", "size", "dscp", "record_delay"},
    "ping": {"kind", "from", "to", "count", "name", "start", "stop", "start_spread", "interval", "size", "dscp"},
    "udp_rr": {"kind", "from", "to", "count", "name", "start", "stop", "start_spread", "interval", "size", "dscp"},
}


def translate(sc: dict, plan: dict) -> dict[str, Any]:
    """The job for ``aqmlab-ns3`` from the parsed scenario ``sc`` and what
    ``Scenario.validate(seed=..., spread=True)`` resolved (``plan``). Raises
    :class:`ScenarioError` naming the first key the engine does not support."""
    _check_top(sc)
    notes: list[str] = []
    db = sc.get("dumbbell")
    if db is not None and "overhead" not in db:
        notes.append(
            "dumbbell.overhead: ns-3's point-to-point links frame with a 2-byte PPP header; the scenario's 14 bytes of Ethernet framing "
            "are not modelled (set overhead = 2 in the scenario for the same wire time in both engines)"
        )
    nodes = [n["name"] for n in plan["nodes"]]
    index = {n: i for i, n in enumerate(nodes)}
    links = plan["links"]
    qtables = link_qdisc_tables(sc, links)
    for ln in links:
        if ln["lower"] != "wire":
            raise _unsupported("", f"link {ln['name']!r}: lower layer {ln['lower']!r}")

    pairs, lone = duplex_pairs(links)
    if lone is not None:
        raise _unsupported("", f"link {lone['name']!r} has no reverse link (ns-3 point-to-point links are duplex)")

    qindex = {ln["name"]: j for j, ln in enumerate(links)}
    jlinks = []
    dq_note = False
    for a, b in pairs:
        if abs(a["delay"] - b["delay"]) > 1e-12:
            raise _unsupported(
                "", f"links {a['name']!r}/{b['name']!r}: different delays per direction (an ns-3 point-to-point channel has one delay)"
            )
        sides = {}
        for key, ln in (("ab", a), ("ba", b)):
            q, path, _shaper = qtables.get(ln["name"], ({"kind": "fifo", "limit": 1000}, "qdisc", None))
            spec, qn = qdisc_spec(q, path, ln["rate_bps"], ln["delay"], ln["mtu"])
            for n in qn:
                if n not in notes:
                    notes.append(n)
            # ns-3's device queue holds packets besides the one being sent: N - 1 of them,
            # at least one (so device_queue 1 and 2 both become 1p)
            dq = int(ln.get("device_queue", 1))
            dq_note = dq_note or dq < 2
            sides[key] = {
                "rate_bps": int(ln["rate_bps"]),
                "device_queue": f"{max(1, dq - 1)}p",
                "loss": float(ln["loss"]),
                "qdisc": spec,
                "queue": qindex[ln["name"]],
            }
        jlinks.append({"a": index[a["from"]], "b": index[a["to"]], "delay": float(a["delay"]), **sides})
    if dq_note:
        notes.append(
            "device_queue = 1: ns-3's point-to-point device queue holds at least one packet besides the one on the wire, i.e. "
            "device_queue = 2"
        )

    tcp = sc.get("tcp", {})
    sflows = sc.get("flow", [])
    jflows = []
    init_rto = None
    for f in plan["flows"]:
        g = f["group"]
        tab = sflows[g] if g < len(sflows) else {}
        where = f"flow[{g}]"
        kind = f["kind"]
        if tab.get("kind") != kind:
            raise _unsupported(f"{where}.kind", f"{tab.get('kind')!r} (supported: {', '.join(SUPPORTED_FLOWS)})")
        for k in tab:
            if k not in _FLOW_KEYS[kind]:
                raise _unsupported(f"{where}.{k}", f"for {kind} flows")
        jf: dict[str, Any] = {
            "name": f["name"],
            "kind": kind,
            "src": index[f["src"]],
            "dst": index[f["dst"]],
            "start": float(f["start"]),
            "stop": float(min(f["stop"], plan["duration"])),
        }
        if kind == "bulk":
            spec = tcp_spec(tcp, tab.get("tcp", {}), "tcp", f"{where}.tcp")
            for n in spec.pop("notes"):
                if n not in notes:
                    notes.append(n)
            init_rto = spec.pop("initial_rto")
            jf.update(spec)
            jf["bytes"] = int(parse_size(tab["bytes"], f"{where}.bytes")) if "bytes" in tab else 0
        elif kind == "cbr":
            jf["rate_bps"] = parse_rate(tab["rate"], f"{where}.rate")
            jf["size"] = int(tab.get("size", 1500))
            jf["record_delay"] = _flag(tab.get("record_delay", False), f"{where}.record_delay")
            if jf["size"] < 29:
                raise ScenarioError(f"{where}.size", f"at least 29 (IP + UDP + 1 byte), got {jf['size']}")
        else:
            jf["interval"] = parse_duration(tab.get("interval", "200ms"), f"{where}.interval")
            jf["size"] = int(tab.get("size", 84 if kind == "ping" else 29))
            if jf["size"] < 29:
                raise ScenarioError(f"{where}.size", f"at least 29 (IP + UDP + 1 byte), got {jf['size']}")
        jflows.append(jf)
    if any(f["kind"] == "ping" for f in jflows):
        notes.append(
            "ping: ns-3 has no ICMP echo application in the engine's modules; each probe is a UDP request of the same IP size, echoed by "
            "the destination"
        )

    defaults = {}
    if init_rto is not None:
        defaults["ns3::RttEstimator::InitialEstimation"] = f"{init_rto!r}s"
    if any(f.get("kind") == "bulk" and not f.get("hystart", True) for f in jflows):
        defaults["ns3::TcpCubic::HyStart"] = "false"
    hy = {f["hystart"] for f in jflows if f["kind"] == "bulk"}
    if len(hy) > 1:
        raise _unsupported("tcp.hystart", "different hystart per flow (one TcpCubic default per run)")
    for f in jflows:
        f.pop("hystart", None)

    return {
        "duration": float(plan["duration"]),
        "warmup": float(plan["warmup"]),
        "bin": float(plan["bin"]),
        "seed": int(plan["seed"]),
        "defaults": defaults,
        "nodes": nodes,
        "forward": [n["kind"] == "router" for n in plan["nodes"]],
        "links": jlinks,
        "queues": [ln["name"] for ln in links],
        "flows": jflows,
        "notes": notes,
    }
