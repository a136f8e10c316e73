"""Generated scenarios for fuzzing `aqmlab.validate` / `aqmlab.run` (the hypothesis test
in test_fuzz.py and the long campaign `benchmarks/fuzz_campaign.py`).

A scenario is one of the shipped examples mutated 1–6 times: a value anywhere in the
tree replaced by an interesting one (huge and negative integers, NaN/inf, rates,
durations and sizes with every unit and absurd magnitudes, wrong types, deep nesting),
a key deleted or added, a table duplicated, counts and pairs blown up; or, for one in
eight, the TOML text itself corrupted (bytes flipped, cut, lines swapped). `mutate`
only uses the `random.Random` it is given, so a seed reproduces a scenario exactly.

`mutate_study` does the same to the shipped study files (`studies/*.toml`): their
scenario parts (`base`, patches, axis values) get the scenario mutations, their study
keys (repetitions, axes, overrides, findings, quick settings, measures) study-specific
ones, and the result is TOML text (one in eight corrupted as text).
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
# congestion controls (BBR, BBRv3, DCTCP, Prague), GSO/TSQ and receive windows, DSCP marks
# and per-flow TCP options, links' GRO/shaper/device queue, WiFi access categories (wmm,
# per-AC EDCA and TXOP tables), drivers and the link budget (distance, walls, path loss,
# powers), CAKE's shaper/isolation/tins.
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
    # offloads: GSO super-packets and TCP Small Queues (tsq needs gso = "on", gso a linux stack)
    "gso": ["on", "off", "auto", True, 1],
    "tsq": [True, False, "on", 0],
    "rcv_window": [1, 10, "64KB", "3MiB", "4GiB", "5GiB", 0, "1B"],
    "rcv_autotune": ["linux", "linux-3.14", "linux-2.6.29", "off", "on", True],
    "recovery": ["prr", "rfc6675", "rate-halving", "none"],
    "tlp": ["linux", "linux-3.14", "off", True],
    "bbr_version": ["linux", "linux-4.20", "v3", 1],
    "pacing_ss_ratio": [200, 10, 1000, 9, 1001, -1],
    "trace": [True, False, "yes"],
}
FLOW_KEYS: dict[str, list[Any]] = {
    "dscp": ["EF", "CS1", "AF41", "LE", "BE", "VA", 0, 46, 63, 64, -1, "XX", 1.5],
    "cc": TCP_KEYS["cc"],
    "stack": TCP_KEYS["stack"],
    # composite workloads' own keys (rrul: flows per direction, probes)
    "flows": [0, 1, 4, 100, 10**6, -1],
    "udp_probes": [0, 1, 2, 3, 4],
}
# Link keys (a dumbbell's, a [[link]]'s): GRO, the token-bucket shaper, the device queue.
LINK_KEYS: dict[str, list[Any]] = {
    "gro": [True, False, "on", 1],
    "shaper": [{"rate": "14Mbit"}, {"rate": "1Mbit", "burst": "1500B", "kind": "tbf"}, {"rate": "1Mbit", "kind": "htb"},
               {"rate": "0bit"}, {"rate": "1Mbit", "kind": "nope"}, {"burst": "10KB"}, {"rate": "1Mbit", "burst": 0}],
    "device_queue": [0, 1, 1000, 10**9, -1],
    "overhead": [0, 14, 30, -1, 10**6],
    "mtu": [68, 576, 1500, 9000, 67, 65536, 0],
}
# WiFi ([dumbbell.wifi], [[wifi]]): access categories (wmm, per-AC EDCA tables, TXOP
# limits), drivers and aggregation.
_EDCA: list[Any] = [
    {"aifsn": 2, "cwmin": 3, "cwmax": 7, "txop": "1504us"},
    {"aifsn": 1}, {"aifsn": 16}, {"cwmin": 4}, {"cwmax": 2**15}, {"txop": "33us"}, {"txop": "2097152us"},
    {"txop": "0us"}, {"aifsn": "x"}, {}, {"cwmin": 1023, "cwmax": 15},
]
WIFI_KEYS: dict[str, list[Any]] = {
    "wmm": [True, False, "on", 1],
    "access": _EDCA,
    "ap_access": _EDCA,
    "ac": [{"vo": e} for e in _EDCA[:4]] + [{"vi": {"txop": "0us"}, "bk": {"aifsn": 5}}, {"xx": {}}, {"be": 3}, {}],
    "ap_ac": [{"vi": e} for e in _EDCA[3:8]] + [{"vo": {"txop": "1504us"}}],
    "ap_driver": ["ath9k", "iwlwifi", "mt76", ""],
    "station_driver": ["ath9k", "iwlwifi", 7],
    "driver_queue": [0, 1, 2, 123, 10**6, -1],
    "driver_wake": [0, 1, 122, 10**6],
    "hw_aggregates": [0, 1, 2, 64, 65],
    "max_frames": [0, 1, 64, 65],
    "ba_window": [0, 1, 64, 65],
    "max_bytes": [0, 1500, 65535, 10**9],
    "max_airtime": ["4ms", "0s", "1us", "1h"],
    "retry_limit": [0, 1, 10, 10**6],
    "mcs": [0, 7, 8, 15, 31, 32, -1],
    "ap_mcs": [0, 15, 16, 31],
    "streams": [1, 2, 4, 5, 0],
    "width": [20, 40, 80, 0],
    "guard_interval": ["800ns", "400ns", "1us"],
    "phy_rate": ["54Mbit", "1kbit", "0bit", "1e30Tbit"],
    "fer": [0, 0.1, 0.99, 1.0, -0.1],
    # the MCS from a link budget: geometry, path loss, powers and gains
    "rate": ["link_budget", "fixed", "auto", 1],
    "path_loss": [0, 60.5, 200, 201, -1, "80dB"],
    "distance": [1, 5.0, 10000, 0.5, 10001, -5, "5m"],
    "walls": [0, 1, 20, 21, -1, 1.5],
    "floors": [0, 10, 11, -1],
    "frequency": [2412, 5180, 5825, 0, 60000, "5GHz"],
    "ap_tx_power": [-10, 27, 40, 41, -11, [27, 26]],
    "tx_power": [16, -10, 40, 41, "x"],
    "ap_antenna_gain": [-20, 0, 40, 41],
    "antenna_gain": [0, -21, 40],
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
    "split_gso": [True, False, "on"],
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
    """Set one key of a newer feature (TCP profile/cc/offloads, per-flow TCP options, DSCP,
    a link's GRO/shaper, WiFi access categories and drivers, a CAKE/DualPI2 parameter) to a
    value that is valid, just out of range or of the wrong kind, where it belongs."""
    r = rng.random()
    if r < 0.25:
        tcp = d.setdefault("tcp", {})
        if isinstance(tcp, dict):
            k = rng.choice(sorted(TCP_KEYS))
            tcp[k] = rng.choice(TCP_KEYS[k])
            if k == "tsq" and rng.random() < 0.5:
                tcp["gso"] = "on"  # tsq is only allowed with gso: reach past that check
    elif r < 0.45:
        flows = d.get("flow")
        if isinstance(flows, list) and flows and isinstance(flows[0], dict):
            f = rng.choice(flows)
            if isinstance(f, dict):
                if rng.random() < 0.4:  # per-flow TCP options over [tcp]
                    o = f.setdefault("tcp", {})
                    if isinstance(o, dict):
                        k = rng.choice(sorted(TCP_KEYS))
                        o[k] = rng.choice(TCP_KEYS[k])
                else:
                    k = rng.choice(sorted(FLOW_KEYS))
                    f[k] = rng.choice(FLOW_KEYS[k])
    elif r < 0.55:
        links = [v for v in _paths(d) if (v == ("dumbbell",) or (len(v) == 2 and v[0] == "link")) and isinstance(_get(d, v), dict)]
        if links:
            link = _get(d, rng.choice(links))
            k = rng.choice(sorted(LINK_KEYS))
            link[k] = copy.deepcopy(rng.choice(LINK_KEYS[k]))
    elif r < 0.7:
        db = d.get("dumbbell")
        if isinstance(db, dict):
            w = db.setdefault("wifi", {})
            if isinstance(w, dict):
                k = rng.choice(sorted(WIFI_KEYS))
                w[k] = copy.deepcopy(rng.choice(WIFI_KEYS[k]))
                if rng.random() < 0.2:  # a per-station table
                    key = rng.choice(["mcs", "access", "driver", "fer", "phy_rate", "distance", "walls", "path_loss"])
                    value = copy.deepcopy(rng.choice(WIFI_KEYS["access"] + [3, "x"]))
                    w.setdefault("station", {})[rng.choice(["client0", "client1", "server0"])] = {key: value}
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


STUDIES = sorted((ROOT / "studies").glob("*.toml"))
STUDY_TEXTS: list[str] = [p.read_text() for p in STUDIES]
STUDY_BASES: list[dict[str, Any]] = [tomllib.loads(t) for t in STUDY_TEXTS]
STUDY_KEYS: dict[str, list[Any]] = {
    "repetitions": [1, 2, 0, -1, 10**9, 2**63, "3", 1.5, None],
    "quick_repetitions": [1, 0, -1, 10**9, "x"],
    "quick_duration": ["1s", "0s", "-1s", "1e30s", 5, "x"],
    "measures": [["goodput"], ["nope"], [], "goodput", [1], ["queue:nope"], ["induced:udp_ef"]],
    "flent": ["rrul", "rrul_be", "tcp_nup", "nope", 1, True],
    "keep_series": [True, False, "yes"],
    "keep_samples": [True, False, 0],
    "optional": [True, False, "no"],
    "title": ["", "x", 1, "\x00", "é" * 100],
    "name": ["", "x", "a/b", "..", 1, "rrul", "é"],
    "figure": [[{"kind": "nope"}], [{}], "x", [{"kind": "cdf", "measure": "nope"}]],
    "table": [[{"measure": "nope"}], [{}], 1],
}


def _mutate_study_tree(rng: random.Random, d: dict[str, Any]) -> None:
    r = rng.random()
    exps = d.get("experiment")
    exp = rng.choice(exps) if isinstance(exps, list) and exps and isinstance(exps[0], dict) else None
    if r < 0.3 and isinstance(exp, dict):
        k = rng.choice(sorted(STUDY_KEYS))
        v = rng.choice(STUDY_KEYS[k])
        if v is not None:
            exp[k] = copy.deepcopy(v)
    elif r < 0.45:
        meta = d.setdefault("study", {})
        if isinstance(meta, dict):
            k = rng.choice(["repetitions", "seed", "name", "title", "findings", "description"])
            meta[k] = rng.choice(
                [interesting(rng), 2**64, -1, [], ["a finding"], [{"text": "x", "check": {"measure": "nope"}}],
                 [{"text": "x", "check": {"measure": "goodput", "experiment": "nope", "higher": "a", "than": "b", "axis": "x"}}],
                 [{"check": {}}], [1]])
    elif r < 0.6 and isinstance(exp, dict):
        axes = exp.get("axis")
        if isinstance(axes, list) and axes and isinstance(axes[0], dict):
            ax = rng.choice(axes)
            if isinstance(ax, dict):
                k = rng.choice(["name", "path", "values", "labels"])
                ax[k] = rng.choice([interesting(rng), [], [1, 1], ["a", "a"], "dumbbell.rate", "flow.0.rate", "run..x",
                                    [{"label": "a"}], [{"label": "a", "patch": 1}], [{"patch": {}}], ["10Mbit", "1e30Tbit"]])
        else:
            exp["axis"] = [{"name": "x", "path": "dumbbell.rate", "values": ["1Mbit", "0bit"]}]
    elif r < 0.7 and isinstance(exp, dict):
        exp["override"] = rng.choice([
            [{"when": {"nope": "a"}, "patch": {}}], [{"when": 1, "patch": {}}], [{"patch": {}}], [1], "x",
            [{"when": {}, "patch": {"dumbbell": {"rate": "1e30Tbit"}}}], [{"when": {}, "patch": 1}]])
    elif r < 0.8:
        d["quick"] = rng.choice([{"duration": interesting(rng)}, {"repetitions": interesting(rng)}, 1, [], {"x": 1}])
    else:
        # the scenario inside: base or an experiment's patch, mutated like a scenario file
        target = d.get("base") if rng.random() < 0.5 or not isinstance(exp, dict) else exp.get("patch")
        if isinstance(target, dict):
            _mutate_tree(rng, target)


def mutate_study(rng: random.Random) -> str:
    """One generated study file (TOML text): a shipped study mutated 1–6 times, or (1 in 8)
    its text corrupted."""
    import tomli_w

    i = rng.randrange(len(STUDY_BASES))
    if rng.random() < 0.125:
        return _mutate_text(rng, STUDY_TEXTS[i])
    d = copy.deepcopy(STUDY_BASES[i])
    for _ in range(rng.randint(1, 6)):
        try:
            _mutate_study_tree(rng, d)
        except (TypeError, KeyError, IndexError, AttributeError):
            pass
    try:
        return tomli_w.dumps(d)
    except (TypeError, ValueError, RecursionError):
        # not representable in TOML (a mutation left a value tomli_w cannot write): the
        # text mutations instead
        return _mutate_text(rng, STUDY_TEXTS[i])
