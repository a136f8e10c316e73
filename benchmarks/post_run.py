#!/usr/bin/env python3
"""Wall and CPU time of what ``aqmlab reproduce`` does after its runs, phase by phase:
compaction (``--jobs`` processes), the identical-repetitions warning, the headline tables
and findings, the report (figures on ``--jobs`` processes where the code supports it).

    .venv/bin/python benchmarks/synth_residential.py /tmp/res --no-compact   # a full-shape store
    cp -r /tmp/res /tmp/res-x && .venv/bin/python benchmarks/post_run.py /tmp/res-x [--jobs 2]
    .venv/bin/python benchmarks/post_run.py /tmp/res-y --pythonpath OTHER_CHECKOUT/python   # another checkout

The store is compacted in place (use a copy of the loose store per measurement). CPU is
this process and its children (compaction and figure workers). Not part of the tests.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pathlib
import resource
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("store", type=pathlib.Path)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--pythonpath", default=None, help="import aqmlab from this python/ folder (another checkout)")
    a = ap.parse_args()
    if a.pythonpath:
        sys.path.insert(0, a.pythonpath)
    else:
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "python"))
    os.environ.setdefault("MPLBACKEND", "Agg")

    def cpu() -> float:
        s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

    phases: dict[str, tuple[float, float]] = {}
    w, c = time.perf_counter(), cpu()

    def mark(name: str) -> None:
        nonlocal w, c
        w2, c2 = time.perf_counter(), cpu()
        phases[name] = (round(w2 - w, 2), round(c2 - c, 2))
        w, c = w2, c2

    import inspect

    from aqmlab import cli, store
    from aqmlab import report as rep
    from aqmlab.study import parse_study

    prov = json.loads((a.store / "provenance.json").read_text())
    study = parse_study((a.store / "study.toml").read_text(), quick=bool(prov.get("quick")))
    mark("imports + study")
    n = store.compact(a.store, jobs=a.jobs)
    mark("compaction")
    con = cli._console(stderr=True)
    st = cli._open_store(a.store) if hasattr(cli, "_open_store") else a.store
    cli._warn_identical(st, study, con)
    mark("identical-runs warning")
    with contextlib.redirect_stdout(io.StringIO()):
        cli._print_numbers(st, study)
    mark("headline tables + findings")
    kw = {"jobs": a.jobs} if "jobs" in inspect.signature(rep.write_report).parameters else {}
    rep.write_report(st, study, **kw)
    mark("report")
    total = (round(sum(v[0] for v in phases.values()), 1), round(sum(v[1] for v in phases.values()), 1))
    for k, (wall, cp) in phases.items():
        print(f"{k:>28}: wall {wall:7.2f} s, CPU {cp:7.2f} s")
    print(f"{'total':>28}: wall {total[0]:7.1f} s, CPU {total[1]:7.1f} s ({n} runs compacted, load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
