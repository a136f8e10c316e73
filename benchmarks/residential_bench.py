#!/usr/bin/env python3
"""Simulator CPU on six full-length runs of the residential study, for comparing builds.

The full `aqmlab reproduce residential` is ~96 % simulation, most of it in 100 Mbit/s
runs, and takes half an hour of both cores; this times six representative runs of it
(repetition 0, the study's own scenarios, 140 s simulated each) with one or more
`aqmlab-bench` binaries, alternating binaries and scenarios, and reports the smallest
event-loop CPU time of `--repeat` runs of each (the noise of this shared machine only
ever adds time). Build the binaries to compare first, e.g.

    cargo build --release -p aqmlab-core --bin aqmlab-bench && cp target/release/aqmlab-bench /tmp/bench-new
    .venv/bin/python benchmarks/residential_bench.py --bin /tmp/bench-old --bin /tmp/bench-new --repeat 5

Not part of the test suite.
"""
from __future__ import annotations

import argparse
import copy
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

# (experiment, params) of the runs timed: the experiments and link speed that dominate
# the study's time (benchmarks/README.md, "The residential study")
RUNS = [
    ("rrul", {"qdisc": "pie", "link": "100/100"}),
    ("rtt_fairness", {"qdisc": "pfifo_fast", "link": "100/100"}),
    ("voip", {"qdisc": "codel", "link": "100/100", "cross": "RRUL"}),
    ("web", {"qdisc": "pie", "link": "100/100", "page": "large", "cross": "1 TCP up"}),
    ("web", {"qdisc": "pie", "link": "100/100", "page": "small", "cross": "RRUL"}),
    ("wifi", {"qdisc": "fq_codel", "test": "RRUL"}),
]


def scenarios(out: pathlib.Path, duration: str) -> list[tuple[str, pathlib.Path]]:
    from aqmlab.scenario import to_toml
    from aqmlab.study import load_study

    specs = {(s.experiment, tuple(sorted(s.params.items()))): s
             for s in load_study("residential").runs() if s.repetition == 0}
    files = []
    for exp, params in RUNS:
        spec = specs[(exp, tuple(sorted(params.items())))]
        doc = copy.deepcopy(spec.scenario)
        doc.setdefault("run", {})["duration"] = duration
        name = exp + "_" + "_".join(str(v).replace("/", "-").replace(" ", "") for v in params.values())
        path = out / f"{name}.toml"
        path.write_text(to_toml(doc))
        files.append((name, path))
    return files


def loop_cpu(binary: str, scenario: pathlib.Path) -> float:
    p = subprocess.run([binary, str(scenario), "1"], capture_output=True, text=True, check=True)
    summary = json.loads(p.stdout.strip().splitlines()[-1])
    return float(summary["loop_cpu_seconds"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", default=None,
                    help="an aqmlab-bench binary (repeatable; default target/release/aqmlab-bench)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--duration", default="140s", help="simulated time of each run (the study's: 140s)")
    ap.add_argument("--json", type=pathlib.Path)
    a = ap.parse_args(argv)
    bins = a.bin or [str(ROOT / "target" / "release" / "aqmlab-bench")]
    best: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory(prefix="aqmlab-resbench-") as tmp:
        files = scenarios(pathlib.Path(tmp), a.duration)
        for _ in range(a.repeat):
            for b in bins:
                for name, path in files:
                    t = loop_cpu(b, path)
                    best[(b, name)] = min(best.get((b, name), float("inf")), t)
    names = [n for n, _ in files]
    width = max(len(n) for n in names)
    print(f"{'scenario':<{width}}  " + "  ".join(f"{pathlib.Path(b).name:>14}" for b in bins))
    for n in names:
        print(f"{n:<{width}}  " + "  ".join(f"{best[(b, n)]:>13.3f}s" for b in bins))
    totals = {b: sum(best[(b, n)] for n in names) for b in bins}
    print(f"{'total':<{width}}  " + "  ".join(f"{totals[b]:>13.3f}s" for b in bins))
    if len(bins) > 1:
        base = totals[bins[0]]
        print("relative to the first: " + ", ".join(f"{pathlib.Path(b).name} {totals[b] / base - 1:+.1%}" for b in bins[1:]))
    if a.json:
        a.json.write_text(json.dumps({"repeat": a.repeat, "duration": a.duration,
                                      "loop_cpu_min": {b: {n: best[(b, n)] for n in names} for b in bins},
                                      "total": totals}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
