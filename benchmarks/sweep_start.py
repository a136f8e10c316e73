#!/usr/bin/env python3
"""The serial start of a sweep: what `runner.run_study` does before its first run is
handed to the workers (the measures' and every distinct scenario's validation, the store's
preparation and check, the workers' run list), while the workers wait.

Runs `run_study` into a fresh temporary store with the workers replaced by a stub that
records the time of the first submission and runs nothing; prints that moment's CPU time
and wall time since `run_study` was called, and `_validate_all` on its own, the least of
`--repeat` tries each (the first try also pays imports). Not a test.

    PYTHONPATH=python .venv/bin/python benchmarks/sweep_start.py [--study residential] [--quick]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--study", default="residential")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)

    from aqmlab import runner
    from aqmlab.study import load_study

    marks: dict[str, float] = {}

    def first_submission(jobs, args, writer, fail, fn=None) -> None:
        marks["cpu"], marks["wall"], marks["runs"] = time.process_time(), time.perf_counter(), len(args)

    runner.run_local = first_submission  # type: ignore[assignment]
    study = load_study(a.study, quick=a.quick)
    cpu, wall = [], []
    for _ in range(a.repeat):
        with tempfile.TemporaryDirectory(prefix="aqmlab-sweep-start-") as d:
            c0, w0 = time.process_time(), time.perf_counter()
            runner.run_study(study, pathlib.Path(d) / "store", jobs=2, progress=False, compact_after=False)
            cpu.append(marks["cpu"] - c0)
            wall.append(marks["wall"] - w0)
    specs = study.runs()
    alone = []
    for _ in range(a.repeat):
        c0 = time.process_time()
        runner._validate_all(specs, study.text)
        alone.append(time.process_time() - c0)
    print(f"{a.study}{' (quick)' if a.quick else ''}: {int(marks['runs'])} runs")
    print(f"run_study until the first run is submitted: CPU {min(cpu):.3f} s, wall {min(wall):.3f} s (least of {a.repeat})")
    print(f"_validate_all alone: CPU {min(alone):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
