#!/usr/bin/env python3
"""aqmlab speed/memory benchmark driver.

Runs each scenario with the release `aqmlab-bench` binary in a fresh process and reports
simulated seconds, bottleneck packets, events, wall seconds, packets/s, events/s and the
peak resident set size of that process, as a table and as JSON.

    python3 benchmarks/bench.py                      # every benchmarks/scenarios/*.toml
    python3 benchmarks/bench.py FILE.toml ... [--json out.json] [--repeat N]

Figures are medians over --repeat runs (default 1); `--best` reports the fastest run
instead (the least disturbed by other load). `cpu s` is the process's user + system CPU
time and `pkt/cpu-s` the bottleneck packets per CPU-second of the event loop (its thread's
CPU time), the figures to compare on a shared, loaded machine. Not part of the test suite.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def build(pgo: bool = False) -> pathlib.Path:
    """The aqmlab-bench binary: the plain release build, or the profile-guided one
    (scripts/pgo.sh bench: the build the extension gets from scripts/setup.sh)."""
    if pgo:
        # stdout: the binary's path; the build's and training's messages pass through
        out = subprocess.run(["bash", "scripts/pgo.sh", "bench"], cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True)
        return pathlib.Path(out.stdout.strip().splitlines()[-1])
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "aqmlab-core", "--bin", "aqmlab-bench"], cwd=ROOT, check=True)
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "release" / "aqmlab-bench"


def run_once(binary: pathlib.Path, scenario: pathlib.Path) -> dict:
    proc = subprocess.Popen([str(binary), str(scenario)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    out = proc.stdout.read()
    err = proc.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{scenario}: {err.strip()}")
    row = json.loads(out.strip().splitlines()[-1])
    row["peak_rss_mib"] = usage.ru_maxrss / 1024.0  # ru_maxrss is KiB on Linux
    # CPU time of the process (user + sys, build included); the binary reports the event
    # loop's own CPU time (loop_cpu_seconds) and packets per CPU-second of it: unlike
    # wall time these do not grow when other processes share the cores
    row["cpu_seconds"] = usage.ru_utime + usage.ru_stime
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenarios", nargs="*", type=pathlib.Path)
    ap.add_argument("--json", type=pathlib.Path, help="also write the rows to this JSON file")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--best", action="store_true", help="report the fastest of the --repeat runs, not the median")
    ap.add_argument(
        "--pgo", action="store_true", help="time the profile-guided build (scripts/pgo.sh bench), as setup.sh builds the extension"
    )
    ap.add_argument("--binary", type=pathlib.Path, help="time this aqmlab-bench instead of building one")
    a = ap.parse_args(argv)
    files = a.scenarios or sorted((ROOT / "benchmarks" / "scenarios").glob("*.toml"))
    if a.binary is not None and not a.binary.is_file():
        ap.error(f"--binary: no such file {a.binary}")
    binary = a.binary or build(a.pgo)
    rows = []
    for f in files:
        runs = [run_once(binary, f) for _ in range(max(1, a.repeat))]
        row = dict(runs[0])
        keys = (
            "wall_seconds",
            "packets_per_second",
            "events_per_second",
            "peak_rss_mib",
            "cpu_seconds",
            "loop_cpu_seconds",
            "packets_per_cpu_second",
        )
        if a.best:
            row.update(min(runs, key=lambda r: r["wall_seconds"]))
            for k in ("cpu_seconds", "loop_cpu_seconds", "peak_rss_mib"):
                row[k] = min(r[k] for r in runs)
            row["packets_per_cpu_second"] = max(r["packets_per_cpu_second"] for r in runs)
        else:
            for k in keys:
                row[k] = statistics.median(r[k] for r in runs)
        row["scenario"] = f.stem
        rows.append(row)
        print(f"  {f.stem}: {row['packets_per_second']:,.0f} pkt/s", file=sys.stderr)
    hdr = (f"{'scenario':32} {'sim s':>7} {'bn pkts':>11} {'events':>12} {'wall s':>8} {'pkt/s':>12} {'events/s':>12} {'cpu s':>7} "
           f"{'pkt/cpu-s':>12} {'RSS MiB':>8}")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(
            f"{r['scenario']:32} {r['sim_seconds']:7.0f} {r['bottleneck_packets']:11,d} {r['events']:12,d} "
            f"{r['wall_seconds']:8.3f} {r['packets_per_second']:12,.0f} {r['events_per_second']:12,.0f} "
            f"{r['cpu_seconds']:7.3f} {r['packets_per_cpu_second']:12,.0f} {r['peak_rss_mib']:8.1f}"
        )
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
