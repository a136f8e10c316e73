#!/usr/bin/env python3
"""CPU time of a study's measures per run, on fresh Results as a sweep's worker has them.

Simulates every `--step`-th run of the study (full length unless `--quick`) once and keeps
the simulator's output in `--cache` (a pickle; delete it to simulate again), then times
``measures.compute(Result(raw, scenario), the experiment's measures)`` on a fresh Result
per call (nothing built yet, as in a worker), `--repeat` times over all runs, and prints
the least total CPU time over the repeats divided by the number of runs. `--tables` also
times the same measures on Results whose flows/queues DataFrames were built first (the
path of a Result read back from a store). `--values FILE` writes every run's measures
(JSON); `--compare FILE` checks them against such a file, to the bit. Not a test: run it
against two trees, e.g.

    PYTHONPATH=/path/to/tree/python python benchmarks/measures_time.py --values before.json
    PYTHONPATH=python python benchmarks/measures_time.py --compare before.json
"""
from __future__ import annotations

import argparse
import json
import math
import pathlib
import pickle
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--study", default="residential")
    ap.add_argument("--quick", action="store_true", help="the study's quick variant")
    ap.add_argument("--step", type=int, default=61, help="every STEP-th run of the study (default 61: 101 of 6,150)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cache", type=pathlib.Path, default=pathlib.Path("/tmp/aqmlab-measures-time.pickle"))
    ap.add_argument("--tables", action="store_true", help="also time the measures on built DataFrames")
    ap.add_argument("--values", type=pathlib.Path, help="write the measures of every run here (JSON)")
    ap.add_argument("--compare", type=pathlib.Path, help="check the measures against a --values file")
    a = ap.parse_args(argv)

    import aqmlab
    from aqmlab import measures
    from aqmlab.result import Result
    from aqmlab.runner import _spec_to_dict
    from aqmlab.study import load_study

    study = load_study(a.study, quick=a.quick)
    exp = {e.name: e for e in study.experiments}
    specs = study.runs()[:: a.step]
    if a.cache.exists():
        runs = pickle.loads(a.cache.read_bytes())
    else:
        runs = []
        for s in specs:
            d = _spec_to_dict(s)
            res = aqmlab.run(d["scenario"], seed=d["seed"])
            runs.append((s.run_id, exp[s.experiment].measures, res._raw, res.scenario))
        a.cache.write_bytes(pickle.dumps(runs))
    print(f"{len(runs)} runs of {a.study}{' (quick)' if a.quick else ''}, every {a.step}th", file=sys.stderr)

    def timed(fresh) -> float:
        best = math.inf
        for _ in range(a.repeat):
            results = [(fresh(raw, sc), names) for _, names, raw, sc in runs]
            c0 = time.process_time()
            for r, names in results:
                measures.compute(r, names)
            best = min(best, time.process_time() - c0)
        return best / len(runs) * 1e3

    print(f"measures on fresh Results: {timed(Result):.3f} ms per run (least of {a.repeat})")
    if a.tables:
        def built(raw, sc):
            r = Result(raw, sc)
            r.flows, r.queues  # noqa: B018 - built before the measures
            return r

        print(f"measures on built DataFrames: {timed(built):.3f} ms per run (least of {a.repeat})")

    values = {rid: measures.compute(Result(raw, sc), names) for rid, names, raw, sc in runs}
    if a.values:
        a.values.write_text(json.dumps({k: {n: repr(v) for n, v in m.items()} for k, m in values.items()}, indent=0))
    if a.compare:
        want = json.loads(a.compare.read_text())
        got = {k: {n: repr(v) for n, v in m.items()} for k, m in values.items()}
        differ = [(k, n, want[k].get(n), v) for k, m in got.items() for n, v in m.items() if want.get(k, {}).get(n) != v]
        n_values = sum(len(m) for m in got.values())
        print(f"compared with {a.compare}: {n_values - len(differ)} of {n_values} values identical")
        for row in differ[:10]:
            print("  differs:", *row)
        return 1 if differ or set(want) != set(got) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
