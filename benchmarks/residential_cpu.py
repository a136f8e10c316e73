#!/usr/bin/env python3
"""CPU cost of the full residential study, measured on one repetition per combination.

The full `aqmlab reproduce residential` is 5,670 runs (189 combinations x 30
repetitions) and takes most of an hour of both cores, too long to time on a shared
machine. This runs repetition 0 of every combination (or of --only experiments /
--link labels) in this process, one after another, and records the CPU time of each:
the simulation (`aqmlab.run`) and the whole per-run work of a sweep worker
(`runner.execute_run`: simulation + measures + result tables) plus the Parquet encoding
(in a sweep's worker) and the store write (in its main process).
It prints totals per experiment and link and the full study's extrapolated wall time on
`--cores` cores (per-run CPU x repetitions / cores; the report's own time is separate,
see README "Report of a full study"). Not part of the test suite.

    .venv/bin/python benchmarks/residential_cpu.py [--only rrul] [--link 100/100] [--json out.json]
"""
from __future__ import annotations

import argparse
import collections
import json
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--study", default="residential")
    ap.add_argument("--only", action="append", default=None, help="experiments to measure (default: all)")
    ap.add_argument("--link", action="append", default=None, help="only these values of the 'link' axis")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--json", type=pathlib.Path)
    a = ap.parse_args(argv)
    from aqmlab.runner import _spec_to_dict, execute_run
    from aqmlab.store import encode_run, write_encoded
    from aqmlab.study import load_study

    study = load_study(a.study)
    exp = {e.name: e for e in study.experiments}
    specs = [s for s in study.runs(a.only) if s.repetition == 0]
    if a.link:
        specs = [s for s in specs if s.params.get("link") in a.link]
    rows = []
    failed: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="aqmlab-rescpu-") as tmp:
        out = pathlib.Path(tmp)
        for s in specs:
            e = exp[s.experiment]
            d = _spec_to_dict(s)
            c0 = time.process_time()
            try:
                tables = execute_run(d, e.measures, bool(e.keep_series), bool(e.keep_samples))
            except Exception as ex:  # e.g. refused by validation: report, go on
                print(f"FAILED {s.experiment} {s.params}: {ex}", file=sys.stderr, flush=True)
                failed.append({"experiment": s.experiment, "params": s.params, "error": str(ex)})
                continue
            c1 = time.process_time()
            files = encode_run(tables)  # in a sweep's worker
            c2 = time.process_time()
            write_encoded(out, d["run_id"], files)  # in the sweep's main process (writer threads)
            c3 = time.process_time()
            r = tables["runs"].iloc[0]
            row = {
                "experiment": s.experiment,
                "params": s.params,
                "events": int(r["events"]),
                "sim_wall_seconds": float(r["sim_wall_seconds"]),
                "execute_cpu_seconds": c1 - c0,
                "encode_cpu_seconds": c2 - c1,
                "store_cpu_seconds": c3 - c2,
            }
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    groups: dict = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0.0])
    for r in rows:
        g = groups[(r["experiment"], r["params"].get("link", "-"))]
        g[0] += 1
        g[1] += r["sim_wall_seconds"]
        g[2] += r["execute_cpu_seconds"]
        g[3] += r["encode_cpu_seconds"]
        g[4] += r["store_cpu_seconds"]
    print(
        f"{'experiment':14} {'link':9} {'combos':>6} {'sim s':>8} {'run cpu s':>10} {'encode cpu s':>13} {'store cpu s':>12} "
        f"{'x reps cpu s':>13}"
    )
    tot = 0.0
    for (ex, link), (n, sim, cpu, enc, st) in sorted(groups.items()):
        full = (cpu + enc + st) * exp[ex].repetitions
        tot += full
        print(f"{ex:14} {link:9} {n:6d} {sim:8.2f} {cpu:10.2f} {enc:13.2f} {st:12.2f} {full:13.0f}")
    print(
        f"full study ({sum(e.repetitions * sum(1 for s in specs if s.experiment == e.name) for e in exp.values())} runs): {tot:,.0f} "
        f"CPU-s of runs -> {tot / a.cores / 60:.1f} min on {a.cores} cores (+ report)"
    )
    if failed:
        print(f"{len(failed)} combinations failed (not counted): " + "; ".join(f"{f['experiment']} {f['params']}" for f in failed))
    if a.json:
        a.json.write_text(json.dumps({"rows": rows, "failed": failed, "cores": a.cores, "total_cpu_seconds": tot}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
