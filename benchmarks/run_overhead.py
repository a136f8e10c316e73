#!/usr/bin/env python3
"""Python CPU time per run of a sweep worker beyond the simulation: what
``runner._encoded_run`` (simulation, measures, the run's tables, Parquet encoding) costs
minus ``_core.run``, on repetition 0 of the residential study's combinations.

    .venv/bin/python benchmarks/run_overhead.py [--duration 2s | --full] [--step 6] [--pythonpath OTHER/python]

``--full`` keeps the study's durations (140 s, 600 s for RTT fairness; slow: use --step);
otherwise every run is cut to ``--duration`` and measured three times. Not part of the tests.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", default="2s")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--step", type=int, default=1, help="every STEP-th combination")
    ap.add_argument("--pythonpath", default=None)
    a = ap.parse_args()
    sys.path.insert(0, a.pythonpath or str(pathlib.Path(__file__).resolve().parent.parent / "python"))
    import aqmlab
    from aqmlab import runner
    from aqmlab.study import load_study

    study = load_study("residential", quick=not a.full)
    exp = {e.name: e for e in study.experiments}
    args = []
    for s in [s for s in study.runs() if s.repetition == 0][:: a.step]:
        d = runner._spec_to_dict(s)
        if not a.full:
            d["scenario"] = dict(d["scenario"], run=dict(d["scenario"]["run"], duration=a.duration))
        e = exp[s.experiment]
        args.append((d, e.measures, bool(e.keep_series), bool(e.keep_samples)))
    for x in args[:3]:  # imports, first-of-a-kind schemas
        runner._encoded_run(*x)
    core = 0.0
    real = aqmlab._core.run

    def timed(*x, **k):
        nonlocal core
        c = time.process_time()
        try:
            return real(*x, **k)
        finally:
            core += time.process_time() - c

    aqmlab._core.run = timed
    reps = 1 if a.full else 3
    c = time.process_time()
    for _ in range(reps):
        for x in args:
            runner._encoded_run(*x)
    total = time.process_time() - c
    n = reps * len(args)
    print(json.dumps({"runs": n, "cpu_ms_per_run": round(total / n * 1e3, 2), "simulation_ms": round(core / n * 1e3, 2),
                      "python_ms": round((total - core) / n * 1e3, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
