#!/usr/bin/env python3
"""Python CPU time per run of a sweep worker beyond the simulation: what
``runner._encoded_run`` (simulation, measures, the run's tables, Parquet encoding) costs
minus ``_core.run``, on repetition 0 of the residential study's combinations.

    .venv/bin/python benchmarks/run_overhead.py [--duration 2s | --full] [--step 6] [--pythonpath OTHER/python]

``--full`` keeps the study's durations (140 s, 600 s for RTT fairness; slow: use --step);
otherwise every run is cut to ``--duration`` and measured three times. Not part of the tests.

``--sweep K`` measures a whole sweep instead: each run's simulation is computed once, then
``runner.run_study`` (``--jobs`` worker processes, the store writes, the checksums) runs the
selected runs K times each (as repetitions of their own) with ``_core.run`` answering from
those results, so all of the sweep's CPU (the coordinating process and the workers, from
``getrusage``) is what it costs outside the simulator. Needs the ``fork`` start method
(Linux before Python 3.14): the workers inherit the results.
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
    ap.add_argument("--sweep", type=int, default=0, metavar="K", help="a whole sweep, each run K times (see above)")
    ap.add_argument("--jobs", type=int, default=2)
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
    real = aqmlab._core.run
    if a.sweep:
        return sweep(a, study, [s for s in study.runs() if s.repetition == 0][:: a.step], args, real)
    for x in args[:3]:  # imports, first-of-a-kind schemas
        runner._encoded_run(*x)
    core = 0.0

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


def sweep(a, study, specs, args, real) -> int:
    import dataclasses
    import resource
    import tempfile

    import aqmlab
    from aqmlab import runner

    results = {}

    def keep(text, seed, *x):
        results[(text, seed)] = r = real(text, seed, *x)
        return r

    aqmlab._core.run = keep
    for x in args:
        runner._encoded_run(*x)
    if not a.full:  # the study's scenarios, cut to --duration
        specs = [dataclasses.replace(s, scenario=x[0]["scenario"]) for s, x in zip(specs, args)]
    every = [dataclasses.replace(s, repetition=s.repetition + 1000 * k) for k in range(a.sweep) for s in specs]
    study.runs = lambda only=None: every
    aqmlab._core.run = lambda text, seed, *x: results[(text, seed)]
    own0, kids0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory(prefix="aqmlab-overhead-") as tmp:
        summary = runner.run_study(study, pathlib.Path(tmp) / "store", jobs=a.jobs, progress=False, compact_after=False)
    own1, kids1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    n = summary.ran

    def ms(r1, r0, f):
        return round(sum(getattr(r1, k) - getattr(r0, k) for k in f) / n * 1e3, 2)

    out = {"runs": n, "failed": len(summary.failed), "main_ms_per_run": ms(own1, own0, ("ru_utime", "ru_stime")),
           "main_sys_ms_per_run": ms(own1, own0, ("ru_stime",)), "workers_ms_per_run": ms(kids1, kids0, ("ru_utime", "ru_stime"))}
    out["total_ms_per_run"] = round(out["main_ms_per_run"] + out["workers_ms_per_run"], 2)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
