#!/usr/bin/env python3
"""RTT fairness behind a bloated FIFO: aqmlab against ns-3 on the DOCSIS study's BASE mix.

Five bulk TCP flows with base RTTs 30, 40, 50, 60, 70 ms share a 38 Mbit/s bottleneck
(the DOCSIS downstream channel) through a 2048-packet FIFO ("DT") or CoDel (20 ms / 100 ms,
dequeue-side as ns-3 has it); flows start uniformly at random in the first 2 s. Both
simulators run the same TCP: aqmlab's `stack = "ns3"` profile against ns-3.44 TcpNewReno +
TcpClassicRecovery (benchmarks/ns3/rttfair.cc). `--ns2-like` changes the settings the
DOCSIS study's ns-2 agents differ in, on both sides: initial window 2, delayed-ACK timeout
100 ms, minimum RTO 200 ms.

Prints, per seed, Jain's index of the flows' goodputs over [20 s, T] for every T in
`--lengths`, and each flow's start time and goodput.

    benchmarks/ns3/setup.sh && benchmarks/ns3/build.sh       # once (builds ns3-rttfair)
    .venv/bin/python benchmarks/ns3/rtt_fairness.py [--aqm fifo,codel] [--seeds 1-4]
        [--lengths 60,600] [--ns2-like] [--json out.json]

ns-3 needs ~0.75 CPU-s per simulated second here; its results are cached in
build/rttfair-cache.json (`--no-cache` reruns them). Not part of CI.
"""
import argparse
import json
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from compare import _ns3_env  # noqa: E402

CACHE = HERE / "build" / "rttfair-cache.json"
RTTS_MS = [30, 40, 50, 60, 70]
WARMUP = 20.0
#: one-way delays besides the client access link: bottleneck 1 ms + server access 0.1 ms
FIXED_MS = 1.1

SCENARIO = """
[run]
name = "rtt-fairness"
duration = "{duration}s"
seed = {seed}
warmup = "{warmup}s"

[dumbbell]
pairs = {n}
rate = "38Mbit"
delay = "1ms"
access_delay = "0.1ms"
client_delays = [{client_delays}]
access_rate = "1Gbit"
overhead = 2                 # ns-3 PointToPointNetDevice: 2-byte PPP header
device_queue = 2             # ns-3 DropTailQueue 1p: one packet waits besides the one being sent
qdisc = {qdisc}

[tcp]
stack = "ns3"                # ns-3.44 TcpNewReno + TcpClassicRecovery, ns-3 socket defaults
mss = 1448
rcv_window = "16000000B"    # rttfair.cc RcvBufSize
{extra}
[[flow]]
kind = "bulk"
count = {n}
from = "client{{i}}"
to = "server{{i}}"
start_spread = "2s"
"""
QDISCS = {
    "fifo": '{ kind = "fifo", limit = 2048 }',
    "codel": '{ kind = "codel", target = "20ms", interval = "100ms", limit = 2048 }',
}
NS2_LIKE_AQMLAB = 'init_cwnd = 2\ndelayed_ack = "ns2"\nmin_rto = "200ms"\n'
NS2_LIKE_NS3 = ["--iw=2", "--delack=0.1", "--minrto=0.2"]


def jain(xs: list[float]) -> float:
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if any(xs) else float("nan")


def client_delays() -> list[float]:
    return [r / 2 - FIXED_MS for r in RTTS_MS]


def run_aqmlab(aqm: str, seed: int, length: float, ns2_like: bool) -> dict:
    import aqmlab

    text = SCENARIO.format(duration=f"{length:g}", seed=seed, warmup=f"{WARMUP:g}", n=len(RTTS_MS),
                           client_delays=", ".join(f'"{d:g}ms"' for d in client_delays()),
                           qdisc=QDISCS[aqm], extra=NS2_LIKE_AQMLAB if ns2_like else "")
    r = aqmlab.run(text)
    f = r.flows
    return {"starts": [float(x) for x in f["start"]], "mbps": [float(x) / 1e6 for x in f["goodput_bps"]]}


def run_ns3(aqm: str, seed: int, lengths: list[float], ns2_like: bool, cache: dict) -> dict:
    args = [f"--aqm={aqm}", f"--seed={seed}", "--spread=2", "--limit=2048", "--rate=38Mbps", "--delay=1ms",
            "--delays=" + ",".join(f"{d:g}ms" for d in client_delays()),
            "--checkpoints=" + ",".join(f"{x:g}" for x in [WARMUP, *lengths]), *(NS2_LIKE_NS3 if ns2_like else [])]
    key = " ".join(args)
    if key not in cache:
        out = subprocess.run([str(HERE / "build" / "ns3-rttfair"), *args], capture_output=True, text=True,
                             check=True, env=_ns3_env()).stdout.strip().splitlines()
        cache[key] = json.loads(out[-1])
        CACHE.write_text(json.dumps(cache, indent=1))
    return cache[key]


def ns3_goodputs(res: dict, length: float) -> list[float]:
    cps = res["checkpoints"]
    a, b = res["rx_bytes"][cps.index(WARMUP)], res["rx_bytes"][cps.index(length)]
    return [(y - x) * 8 / (length - WARMUP) / 1e6 for x, y in zip(a, b)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--aqm", default="fifo,codel")
    p.add_argument("--seeds", default="1-4", help="a-b or a comma list")
    p.add_argument("--lengths", default="60,600", help="run lengths T (s): Jain over [20 s, T]")
    p.add_argument("--ns2-like", action="store_true", help="IW 2, delayed-ACK timeout 100 ms, min RTO 200 ms")
    p.add_argument("--no-ns3", action="store_true", help="aqmlab only")
    p.add_argument("--no-cache", action="store_true")
    p.add_argument("--json", type=pathlib.Path)
    a = p.parse_args()
    seeds = (list(range(int(a.seeds.split("-")[0]), int(a.seeds.split("-")[1]) + 1)) if "-" in a.seeds
             else [int(s) for s in a.seeds.split(",")])
    lengths = [float(x) for x in a.lengths.split(",")]
    cache = json.loads(CACHE.read_text()) if CACHE.exists() and not a.no_cache else {}
    rows = []
    tcp = "ns2-like (IW 2, delack 100 ms, min RTO 200 ms)" if a.ns2_like else "ns-3 defaults (IW 10, delack 200 ms, min RTO 1 s)"
    print(f"5 flows, RTT {RTTS_MS[0]}..{RTTS_MS[-1]} ms, 38 Mbit/s, 2048 packets, starts in 0-2 s; TCP {tcp}")
    print("Jain over [20 s, T]; goodputs Mbit/s in flow order (RTT 30..70 ms); start order = flows by start time\n")
    for aqm in a.aqm.split(","):
        for seed in seeds:
            ns = None if a.no_ns3 else run_ns3(aqm, seed, lengths, a.ns2_like, cache)
            for length in lengths:
                aq = run_aqmlab(aqm, seed, length, a.ns2_like)
                row = {"aqm": aqm, "seed": seed, "length": length, "aqmlab": aq, "aqmlab_jain": jain(aq["mbps"])}
                order = sorted(range(len(RTTS_MS)), key=lambda i: aq["starts"][i])
                line = (f"{aqm:5} seed {seed} T {length:>5g}  aqmlab {row['aqmlab_jain']:.3f} "
                        f"[{' '.join(f'{x:.1f}' for x in aq['mbps'])}] first {order[0]}")
                if ns is not None:
                    g = ns3_goodputs(ns, length)
                    row.update(ns3={"starts": ns["starts"], "mbps": g}, ns3_jain=jain(g))
                    nso = sorted(range(len(RTTS_MS)), key=lambda i: ns["starts"][i])
                    line += f"   ns-3 {row['ns3_jain']:.3f} [{' '.join(f'{x:.1f}' for x in g)}] first {nso[0]}"
                print(line, flush=True)
                rows.append(row)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
