#!/usr/bin/env python3
"""Runs aqmlab and ns-3 on the headline scenario (16 NewReno flows, CoDel, 10 Mbit/s,
10 ms RTT, 100 s) in one invocation and prints wall times, the packets/s ratio and the
two simulators' bottleneck utilisation and mean/p99 CoDel sojourn side by side.

    benchmarks/ns3/setup.sh && benchmarks/ns3/build.sh      # once
    python3 benchmarks/ns3/compare.py [--flows 16] [--duration 100] [--json out.json]

Not part of CI (ns-3 takes ~10 s wall per 100 simulated seconds here).
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SCEN = ROOT / "benchmarks" / "scenarios" / "tcp16_codel.toml"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flows", type=int, default=16)
    ap.add_argument("--duration", type=float, default=100.0)
    ap.add_argument("--json", type=pathlib.Path)
    a = ap.parse_args(argv)
    ns3 = HERE / "build" / "ns3-dumbbell"
    if not ns3.exists():
        raise SystemExit("build the ns-3 program first: benchmarks/ns3/setup.sh && benchmarks/ns3/build.sh")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "aqmlab-core", "--bin", "aqmlab-bench"], cwd=ROOT, check=True)
    text = SCEN.read_text().replace('duration = "100s"', f'duration = "{a.duration:g}s"')
    text = text.replace("pairs = 16", f"pairs = {a.flows}").replace("count = 16", f"count = {a.flows}")
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(text)
    out = subprocess.run([str(ROOT / "target" / "release" / "aqmlab-bench"), f.name, "--summary"],
                         capture_output=True, text=True, check=True).stdout.strip().splitlines()
    aq = {**json.loads(out[0]), **json.loads(out[-1])}
    out = subprocess.run([str(ns3), f"--flows={a.flows}", f"--duration={a.duration:g}", "--warmup=10"],
                         capture_output=True, text=True, check=True).stdout.strip().splitlines()
    ns = json.loads(out[-1])
    rows = [
        ("wall seconds", "wall_seconds", "{:.3f}"),
        ("bottleneck packets", "bottleneck_packets", "{:,d}"),
        ("bottleneck packets / wall s", "packets_per_second", "{:,.0f}"),
        ("utilisation (up)", "utilization", "{:.4f}"),
        ("sojourn mean (ms)", "sojourn_mean", "{:.2f}"),
        ("sojourn p99 (ms)", "sojourn_p99", "{:.2f}"),
    ]
    print(f"headline: {a.flows} NewReno flows, CoDel, 10 Mbit/s, 10 ms RTT, {a.duration:g} s simulated\n")
    print(f"{'':30} {'aqmlab':>14} {'ns-3.44':>14}")
    for label, k, fmt in rows:
        va, vn = aq[k], ns[k]
        if "ms" in label:
            va, vn = va * 1e3, vn * 1e3
        print(f"{label:30} {fmt.format(va):>14} {fmt.format(vn):>14}")
    ratio = aq["packets_per_second"] / ns["packets_per_second"]
    print(f"\npackets/s ratio aqmlab / ns-3: {ratio:,.0f}x")
    if a.json:
        a.json.write_text(json.dumps({"aqmlab": aq, "ns3": ns, "ratio": ratio}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
