#!/usr/bin/env python3
"""The same simulation inside a local-pool worker and inside a Dask worker: wall time vs
the CPU time of the thread that ran it (issue 18: are runs slower under Dask, or only
given less of the machine?). Not part of the test suite; needs the dask extra.

    .venv/bin/python benchmarks/dask_worker_cpu.py SCENARIO.toml [--repeat 3] [--workers 2]
"""
from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))


def job(path: str) -> tuple[float, float, float]:
    """(wall, thread CPU, simulation loop wall) of one run, measured in the worker."""
    import time

    import aqmlab

    w0, c0 = time.perf_counter(), time.thread_time()
    r = aqmlab.run(path, seed=1)
    return time.perf_counter() - w0, time.thread_time() - c0, r.wall_seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", type=pathlib.Path)
    ap.add_argument("--repeat", type=int, default=3, help="rounds of `workers` x 2 runs on each kind of worker, alternating")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args(argv)
    from dask.distributed import Client, LocalCluster

    path = str(a.scenario.resolve())
    n = 2 * a.workers
    res: dict[str, list] = {"local": [], "dask": []}
    with ProcessPoolExecutor(a.workers) as pool, \
            LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True, dashboard_address=None) as cl, \
            Client(cl) as c:
        list(pool.map(job, [path] * a.workers))  # warm up: imports in every worker
        c.gather(c.map(job, [path] * a.workers, pure=False))
        for _ in range(a.repeat):
            res["local"] += list(pool.map(job, [path] * n))
            res["dask"] += c.gather(c.map(job, [path] * n, pure=False))
    for k, v in res.items():
        wall, cpu, loop = (statistics.median(x[i] for x in v) for i in range(3))
        print(f"{k:6} wall {wall:.3f} s  thread CPU {cpu:.3f} s  simulation loop wall {loop:.3f} s  (medians of {len(v)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
