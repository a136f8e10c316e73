#!/usr/bin/env python3
"""Local process pool vs a local Dask cluster on the same study (issue 18).

Runs STUDY (default: the quick saturated-tcp study) into fresh directories, alternating
the two schedulers --repeat times, and reports per scheduler the sweep's wall time, the
summed CPU time of the simulations (from the runs table) and the per-run overhead
(wall x workers / runs minus the mean run time in the workers): scheduling, encoding and
sending the result back to the main process, and the Parquet writes there. Not part of the
test suite; needs the dask extra.

    .venv/bin/python benchmarks/dask_overhead.py [--study saturated-tcp] [--full] [--repeat 2] [--json out.json]
    .venv/bin/python benchmarks/dask_overhead.py --pythonpath OLD_CHECKOUT/python ...   # another version's runner
"""
from __future__ import annotations

import argparse
import json
import pathlib
import resource
import shutil
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))


def one(kind: str, study, workers: int, tmp: pathlib.Path) -> dict:
    from aqmlab.runner import run_study
    from aqmlab.store import load

    out = tmp / f"{kind}-{time.monotonic_ns()}"
    cluster = client = None
    if kind == "dask":
        from dask.distributed import Client, LocalCluster

        t_up = time.perf_counter()
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
        startup = time.perf_counter() - t_up
    else:
        startup = 0.0
    writes: list[float] = []
    import aqmlab.runner as R
    import aqmlab.store as S

    # the store's writes in the main process: one run at a time (runner._store), or on
    # the writer's threads (store.write_encoded, overlapping: their sum exceeds the wall)
    owner, name = (R, "_store") if hasattr(R, "_store") else (S, "write_encoded")
    orig = getattr(owner, name)

    def timed_store(o, *rest):
        t = time.perf_counter()
        orig(o, *rest)
        writes.append(time.perf_counter() - t)

    setattr(owner, name, timed_store)
    c0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    try:
        s = run_study(study, out, jobs=workers, scheduler=client, progress=False, compact_after=False)
    finally:
        setattr(owner, name, orig)
        wall = time.perf_counter() - t0
        if client is not None:
            client.close()
            cluster.close()
    c1 = resource.getrusage(resource.RUSAGE_SELF)
    runs = load(out).raw_runs
    n = len(runs)
    sim = float(runs["sim_wall_seconds"].sum())
    call = float(runs["wall_seconds"].sum())
    shutil.rmtree(out, ignore_errors=True)
    assert s.failed == [], s.failed
    return {
        "scheduler": kind,
        "runs": n,
        "wall_seconds": wall,
        "cluster_startup_seconds": startup,
        "sim_seconds_sum": sim,
        "run_call_seconds_sum": call,
        "main_process_cpu_seconds": (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime),
        "parquet_write_seconds_sum": sum(writes),
        "overhead_per_run_seconds": wall * workers / n - call / n,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--study", default="saturated-tcp")
    ap.add_argument("--full", action="store_true", help="the study's full durations (default: --quick)")
    ap.add_argument("--only", action="append", default=None, help="restrict to these experiments")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", type=pathlib.Path)
    ap.add_argument("--pythonpath", type=pathlib.Path, help="import aqmlab from this directory (main process and workers)")
    ap.add_argument("--schedulers", default="local,dask", help="comma-separated: local, dask")
    a = ap.parse_args(argv)
    if a.pythonpath:
        import os

        sys.path.insert(0, str(a.pythonpath.resolve()))
        os.environ["PYTHONPATH"] = str(a.pythonpath.resolve())
    from aqmlab.study import load_study

    study = load_study(a.study, quick=not a.full)
    if a.only:
        study = study.restricted(a.only)
    rows = []
    with tempfile.TemporaryDirectory(prefix="aqmlab-dask-") as tmp:
        for i in range(a.repeat):
            kinds = a.schedulers.split(",")
            for kind in (kinds if i % 2 == 0 else kinds[::-1]):
                r = one(kind, study, a.workers, pathlib.Path(tmp))
                r["repeat"] = i
                rows.append(r)
                print(json.dumps(r), file=sys.stderr)
    print(
        f"{'scheduler':10} {'runs':>5} {'wall s (median)':>16} {'startup s':>10} {'sim s/run':>10} {'overhead s/run':>15} "
        f"{'parquet s/run':>14}"
    )
    for kind in a.schedulers.split(","):
        rs = [r for r in rows if r["scheduler"] == kind]
        med = lambda k: statistics.median(r[k] for r in rs)  # noqa: E731
        n = rs[0]["runs"]
        print(
            f"{kind:10} {n:5d} {med('wall_seconds'):16.2f} {med('cluster_startup_seconds'):10.2f} "
            f"{med('sim_seconds_sum') / n:10.3f} {med('overhead_per_run_seconds'):15.3f} {med('parquet_write_seconds_sum') / n:14.3f}"
        )
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
