"""Generated scenarios for fuzzing `aqmlab.validate` / `aqmlab.run` (the hypothesis test
in test_fuzz.py and the long campaign `benchmarks/fuzz_campaign.py`).

A scenario is one of the shipped examples mutated 1–6 times: a value anywhere in the
tree replaced by an interesting one (huge and negative integers, NaN/inf, rates,
durations and sizes with every unit and absurd magnitudes, wrong types, deep nesting),
a key deleted or added, a table duplicated, counts and pairs blown up; or, for one in
eight, the TOML text itself corrupted (bytes flipped, cut, lines swapped). `mutate`
only uses the `random.Random` it is given, so a seed reproduces a scenario exactly.
"""
from __future__ import annotations

import copy
import math
import random
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))
BASES: list[dict[str, Any]] = [tomllib.loads(p.read_text()) for p in EXAMPLES]
BASE_TEXTS: list[str] = [p.read_text() for p in EXAMPLES]

RATE_UNITS = ["", "bit", "kbit", "Mbit", "Gbit", "Tbit", "bps", "Kbps", "Mbps", "Gbps", "xbit"]
TIME_UNITS = ["", "ns", "us", "µs", "ms", "s", "min", "h", "sec"]
SIZE_UNITS = ["", "B", "KB", "MB", "GB", "KiB", "MiB", "GiB", "TB"]
MAGNITUDES = [0, 1e-30, 1e-9, 1e-3, 0.5, 1, 2, 7, 10, 100, 1e3, 1e6, 1e9, 1e12, 1e18, 1e19, 1e30, 1e300, -1, -1e9]
KINDS_Q = ["fifo", "pfifo", "bfifo", "codel", "fq_codel", "pie", "fq_pie", "red", "cake", "dualpi2", "sfq", "nope", ""]
KINDS_F = ["bulk", "cbr", "ping", "udp_rr", "voip", "web", "wrt", "web_users", "has", "rrul", "rrul_be", "nope"]
# Keys of the newer features with plausible and implausible values: TCP stack profiles and
# congestion controls (BBR, BBRv3, DCTCP, Prague), DSCP marks, CAKE's shaper/isolation/tins.
TCP_KEYS: dict[str, list[Any]] = {
    "stack": ["linux", "linux-3.14", "linux-2.6.29", "ns2-sack1", "ns3", "linux-9", ""],
    "cc": ["reno", "newreno", "cubic", "bbr", "bbr3", "dctcp", "prague", "vegas"],
    "ecn": [True, False, "on", 1],
    "rto_undo": [True, False, 0],
    "undo": ["off", "linux-2.6", "linux-3.14", "linux", "on", True],
    "loss_detection": ["rack", "fack", "dupthresh", "sack", 3],
    "early_retransmit": [True, False, "yes"],
    "hz": [100, 250, 300, 1000, 0, 200, -250, 2**40, "250"],
    "init_cwnd": [1, 2, 10, 0, -1, 10**6, 1.5],
    "mss": [536, 1448, 1460, 9000, 0, 65536, 10**9],
    "pacing": [True, False, "fq"],
    "max_window": [2, 10_000, 0, 2**40],
}
FLOW_KEYS: dict[str, list[Any]] = {
    "dscp": ["EF", "CS1", "AF41", "LE", "BE", "VA", 0, 46, 63, 64, -1, "XX", 1.5],
    "cc": TCP_KEYS["cc"],
    "stack": TCP_KEYS["stack"],
}
QDISC_KEYS: dict[str, list[Any]] = {
    "bandwidth": ["unlimited", "19Mbit", "1kbit", "0", "-5Mbit", "1e30Tbit", 0],
    "rtt": ["internet", "lan", "interplanetary", "5ms", "0ms", "-1ms", "nope"],
    "diffserv": ["besteffort", "precedence", "diffserv3", "diffserv4", "diffserv8", "diffserv5"],
    "isolation": ["flowblind", "srchost", "dsthost", "hosts", "flows", "dual-srchost", "dual-dsthost", "triple-isolate", "quad"],
    "ack_filter": ["off", "on", "aggressive", True, "maybe"],
    "preset": ["raw", "docsis", "pppoe-ptm", "bridged-llcsnap", "ethernet", "nope"],
    "overhead": [-64, -65, 0, 18, 256, 257, "raw"],
    "mpu": [0, 64, 256, 257, -1],
    "atm": ["noatm", "atm", "ptm", "cell"],
    "memlimit": ["auto", "4MiB", "1B", "0", "1e30GB"],
    "ingress": [True, False], "wash": [True, False],
    "target": ["5ms", "0ms", "1us", "-1ms", "1h"],
    "coupling": [2, 0, -1, 1e9], "step_thresh": ["1ms", "0ms", 1, -5],
    # red/ared: ns-2's variant and its EWMA weight
    "variant": ["linux", "ns2", "ns3", 2], "weight": [1.05e-4, 0.0, 1.0, -0.5, 1e-300, "0.002"],
}
INTS = [0, 1, 2, 3, -1, 7, 100, 10_000, 1_000_000, 2**31, 2**32, 2**53, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1]
FLOATS = [0.0, -0.0, 0.5, 1.0, 1.5, -1.0, 1e-300, 1e300, math.inf, -math.inf, math.nan]
STRINGS = [
    "",
    " ",
    "x",
    "client0",
    "server0",
    "router_a",
    "{i}",
    "client{i}",
    "é",
    "\x00",
    "1e30Tbit",
    "0s",
    "1ns",
    "1e9s",
    "-5ms",
    "NaN",
    "inf",
    "10Mbit",
    "25ms",
    "1500",
    "250KB",
]


def _number_with_unit(rng: random.Random, units: list[str]) -> str:
    m = rng.choice(MAGNITUDES)
    if rng.random() < 0.3:
        m = m * rng.random()
    return f"{m:g}{rng.choice(units)}"


def interesting(rng: random.Random, depth: int = 0) -> Any:
    """A value likely to break something."""
    r = rng.random()
    if r < 0.2:
        return rng.choice(INTS)
    if r < 0.3:
        return rng.choice(FLOATS)
    if r < 0.42:
        return _number_with_unit(rng, RATE_UNITS)
    if r < 0.54:
        return _number_with_unit(rng, TIME_UNITS)
    if r < 0.6:
        return _number_with_unit(rng, SIZE_UNITS)
    if r < 0.7:
        return rng.choice(STRINGS)
    if r < 0.74:
        return rng.choice([True, False])
    if r < 0.8 and depth < 3:
        return [interesting(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if r < 0.84 and depth < 3:
        return {rng.choice(["kind", "limit", "rate", "x", "start", "stop"]): interesting(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    if r < 0.86:  # deep nesting
        v: Any = 1
        for _ in range(rng.choice([10, 40, 200, 400])):
            v = {"a": v} if rng.random() < 0.5 else [v]
        return v
    if r < 0.93:
        return {"kind": rng.choice(KINDS_Q), "limit": rng.choice(INTS)}
    return rng.randint(-5, 5000)


def _paths(d: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(d, dict):
        for k, v in d.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            out += _paths(v, prefix + (i,))
    return out


def _get(d: Any, path: tuple) -> Any:
    for k in path:
        d = d[k]
    return d


def _mutate_tree(rng: random.Random, d: dict[str, Any]) -> dict[str, Any]:
    paths = _paths(d)[1:]
    op = rng.random()
    if not paths or op < 0.05:
        if not isinstance(d.get("flow", []), list):
            d["flow"] = []
        d.setdefault("flow", []).append(
            {
                "kind": rng.choice(KINDS_F),
                "from": rng.choice(["client0", "client{i}", "server0", "x"]),
                "to": rng.choice(["server0", "server{i}", "client0"]),
                "count": rng.choice([1, 2, 10, 1000, 10**6, 0, -1]),
            }
        )
        return d
    path = rng.choice(paths)
    parent, key = _get(d, path[:-1]), path[-1]
    if op < 0.55:
        parent[key] = interesting(rng)
    elif op < 0.65:
        del parent[key]
    elif op < 0.72 and isinstance(parent, dict):
        parent[rng.choice(["x", "limit", "count", "pairs", "rate", "interval", "trace", "max_memory", "seed"])] = interesting(rng)
    elif op < 0.78 and isinstance(parent, list):
        try:
            parent.append(copy.deepcopy(parent[key]))
        except RecursionError:  # a 400-deep nesting exceeds deepcopy's recursion: share it instead
            parent.append(parent[key])
    elif op < 0.84:
        d.setdefault("run", {})[rng.choice(["duration", "bin", "warmup", "seed", "trace", "packet_trace", "max_memory", "max_events"])] = (
            rng.choice(
                [interesting(rng), "1ns", "1e9s", "1us", "1000s", 2**63, "18446744073709551615", [["0s", "1s"]], [["1s", "0s"]], 1e300]
            )
        )
    elif op < 0.9:
        db = d.get("dumbbell")
        if isinstance(db, dict):
            # 10,000+ pairs take a second each to validate (linear, but big): 1 in 10
            big = rng.random() < 0.1
            db["pairs"] = rng.choice([10_000, 100_000, 100_001, 2**40] if big else [0, 1, 2, 3, 100, 1000, -1])
        else:
            parent[key] = interesting(rng)
    elif op < 0.95:
        _mutate_feature_key(rng, d)
    else:
        flows = d.get("flow")
        if isinstance(flows, list) and flows and isinstance(flows[0], dict):
            f = rng.choice(flows)
            if isinstance(f, dict):
                f[rng.choice(["count", "rate", "size", "interval", "start", "stop", "start_spread", "kind"])] = rng.choice(
                    [10**6, 10**7, "1e30Tbit", "100Gbit", "1Tbit", 1, 29, 65536, "1ns", "0s", interesting(rng)]
                )
        else:
            parent[key] = interesting(rng)
    return d


def _mutate_feature_key(rng: random.Random, d: dict[str, Any]) -> None:
    """Set one key of a newer feature (TCP profile/cc, DSCP, CAKE/DualPI2 parameter) to a
    value that is valid, just out of range or of the wrong kind, where it belongs."""
    r = rng.random()
    if r < 0.35:
        tcp = d.setdefault("tcp", {})
        if isinstance(tcp, dict):
            k = rng.choice(sorted(TCP_KEYS))
            tcp[k] = rng.choice(TCP_KEYS[k])
    elif r < 0.6:
        flows = d.get("flow")
        if isinstance(flows, list) and flows and isinstance(flows[0], dict):
            f = rng.choice(flows)
            if isinstance(f, dict):
                k = rng.choice(sorted(FLOW_KEYS))
                f[k] = rng.choice(FLOW_KEYS[k])
    else:
        tables = [v for v in _paths(d) if v and v[-1] == "qdisc" and isinstance(_get(d, v), dict)]
        if tables:
            q = _get(d, rng.choice(tables))
            if rng.random() < 0.3:
                q["kind"] = rng.choice(["cake", "dualpi2", "fq_codel", "pfifo_fast", "prio", "ared"])
            k = rng.choice(sorted(QDISC_KEYS))
            q[k] = rng.choice(QDISC_KEYS[k])


def _mutate_text(rng: random.Random, text: str) -> str:
    b = bytearray(text.encode())
    op = rng.random()
    if op < 0.3 and b:
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif op < 0.5 and b:
        b = b[: rng.randrange(len(b))]
    elif op < 0.7:
        lines = text.splitlines()
        if len(lines) > 1:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines)
    else:
        lines = text.splitlines()
        i = rng.randrange(len(lines) + 1)
        lines.insert(
            i,
            rng.choice(
                [
                    "[run]",
                    "[[flow]]",
                    "x = 1",
                    "seed = 99999999999999999999",
                    "duration = 1e400",
                    "a = " + "[" * 300 + "]" * 300,
                    "[dumbbell]",
                    "= 1",
                    "rate = inf",
                ]
            ),
        )
        return "\n".join(lines)
    return b.decode("utf-8", errors="replace")


def mutate(rng: random.Random) -> dict[str, Any] | str:
    """One generated scenario: a dict, or (1 in 8) TOML text."""
    i = rng.randrange(len(BASES))
    if rng.random() < 0.125:
        return _mutate_text(rng, BASE_TEXTS[i])
    d = copy.deepcopy(BASES[i])
    for _ in range(rng.randint(1, 6)):
        try:
            d = _mutate_tree(rng, d)
        except (TypeError, KeyError, IndexError, AttributeError):
            pass  # the mutation did not apply to what earlier ones left (e.g. run = 1.5)
    return d


def shorten(d: dict[str, Any] | str, seconds: float = 0.2) -> dict[str, Any] | str:
    """The same scenario with a short run (for `aqmlab.run` in the campaign): duration
    at most `seconds`, warm-up 0. Text scenarios are returned unchanged."""
    if not isinstance(d, dict):
        return d
    # Only the top level and `run` change: copy those (a deep copy of a 400-deep nesting
    # elsewhere in the tree would exceed Python's recursion limit).
    d = dict(d)
    run = d.get("run")
    run = d["run"] = dict(run) if isinstance(run, dict) else {}
    run["duration"] = f"{seconds}s"
    run["warmup"] = "0s"
    return d
