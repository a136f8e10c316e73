#!/usr/bin/env python3
"""`aqmlab run SCENARIO --out DIR` end to end against its simulation: CPU time (user + sys)
of the whole command in a fresh process (interpreter start, imports, validation, the
simulation, result tables, Parquet, the printed summary) and CPU time inside
`aqmlab._core.run` (building the network and the event loop), with their ratio.

    .venv/bin/python benchmarks/run_flatness.py [SCENARIO] [--repeat 3] [--profile out.prof]

Default scenario: benchmarks/scenarios/pairs10k_codel.toml (10,000 pairs). `--profile`
also writes a cProfile (CPU-time clock) of one run, for `python -m pstats`. CPU time, not
wall time: other load on the shared machine does not enter it. Not part of the tests.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent

CHILD = r"""
import cProfile, json, sys, time
import aqmlab, aqmlab._core
from aqmlab.cli import main
core = 0.0
real = aqmlab._core.run
def timed(*a, **k):
    global core
    c = time.process_time()
    try:
        return real(*a, **k)
    finally:
        core += time.process_time() - c
aqmlab._core.run = timed
prof = sys.argv[1]
args = sys.argv[2:]
pr = cProfile.Profile(time.process_time) if prof else None
if pr: pr.enable()
try:
    main(args)
except SystemExit as e:
    if e.code not in (0, None): raise
if pr:
    pr.disable(); pr.dump_stats(prof)
sys.stderr.write("FLATNESS " + json.dumps({"core_cpu_seconds": core}) + "\n")
"""


def once(scenario: pathlib.Path, profile: str = "") -> dict:
    with tempfile.TemporaryDirectory(prefix="aqmlab-flat-") as td:
        out = pathlib.Path(td) / "out"
        cmd = [sys.executable, "-c", CHILD, profile, "run", str(scenario), "--out", str(out)]
        with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
            p = subprocess.Popen(cmd, stdout=fo, stderr=fe, text=True)
            _, status, ru = os.wait4(p.pid, 0)
            fe.seek(0)
            err = fe.read()
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"aqmlab run failed: {err[-600:]}")
        line = next(ln for ln in err.splitlines() if ln.startswith("FLATNESS "))
        row = json.loads(line[len("FLATNESS "):])
        meta = json.loads((out / "meta.json").read_text())
    row.update(total_cpu_seconds=ru.ru_utime + ru.ru_stime, peak_rss_mib=ru.ru_maxrss / 1024.0, events=meta["events"])
    row["ratio"] = row["total_cpu_seconds"] / row["core_cpu_seconds"]
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", nargs="?", type=pathlib.Path, default=ROOT / "benchmarks" / "scenarios" / "pairs10k_codel.toml")
    ap.add_argument("--repeat", type=int, default=1, help="runs; the one with the least total CPU time is reported")
    ap.add_argument("--profile", type=pathlib.Path, help="also write a cProfile of one more run here")
    a = ap.parse_args(argv)
    if not a.scenario.is_file():
        ap.error(f"scenario: no such file {a.scenario}")
    load0 = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    runs = [once(a.scenario) for _ in range(max(1, a.repeat))]
    best = min(runs, key=lambda r: r["total_cpu_seconds"])
    load1 = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    print(f"{a.scenario.name}: `aqmlab run --out` {best['total_cpu_seconds']:.2f} CPU-s end to end, "
          f"{best['core_cpu_seconds']:.2f} CPU-s in the simulation (_core.run) -> x{best['ratio']:.2f}; "
          f"peak RSS {best['peak_rss_mib']:.0f} MiB; {best['events']:,} events; load average {load0} -> {load1}")
    if a.profile:
        once(a.scenario, str(a.profile))
        print(f"profile: {a.profile} (python -m pstats {a.profile})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
