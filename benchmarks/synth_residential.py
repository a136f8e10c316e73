#!/usr/bin/env python3
"""Builds a result store of the full residential study's shape (5,670 runs) without
running 5,670 simulations.

For every distinct scenario of the full study (189 axis combinations) one real run is
simulated (full durations: 140 s, 600 s for RTT fairness), giving that combination's real
tables (flows, queues, samples, series) and measures. Each of the study's 30 repetitions
is then written with the real run id, repetition and seed of that run, with the template's
numbers perturbed (measures and sample values × U(0.9, 1.1), seeded by the run id) so that
repetitions differ and ellipses, means and standard deviations are not degenerate. Row
counts, columns and types are those of real runs, so the store has the size of a real full
sweep. The store is written with :func:`aqmlab.store.write_run` (fsync + checksums) and
compacted at the end, as a sweep does (``--no-compact`` keeps the per-run files).

    .venv/bin/python benchmarks/synth_residential.py OUT [--reps 30] [--jobs 2] [--no-compact]

Templates are cached in OUT.templates/ (pickles) so that a rebuild does not simulate again.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import pickle
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from aqmlab import store  # noqa: E402
from aqmlab.runner import _prepare, _spec_to_dict, execute_run  # noqa: E402
from aqmlab.study import load_study  # noqa: E402

IDENT = ("run_id", "experiment", "repetition", "seed")
NOT_MEASURES = {"run_id", "experiment", "repetition", "seed", "events", "wall_seconds", "sim_wall_seconds"}


def _template(args: tuple) -> tuple[str, dict]:
    key, spec, measures, keep_series, keep_samples = args
    t0 = time.perf_counter()
    tables = execute_run(spec, measures, keep_series, keep_samples)
    print(f"  template {key}: {time.perf_counter() - t0:.1f} s", flush=True)
    return key, tables


def _key(spec) -> str:
    return spec.experiment + "|" + json.dumps(spec.params, sort_keys=True)


def _fname(key: str) -> str:
    return hashlib.sha1(key.encode()).hexdigest()[:16] + ".pkl"


def _retag(df, spec):
    df = df.copy()
    df["run_id"] = spec.run_id
    df["repetition"] = spec.repetition
    df["seed"] = spec.seed
    return df


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=pathlib.Path)
    ap.add_argument("--reps", type=int, default=None, help="repetitions (default: the study's 30)")
    ap.add_argument("--jobs", type=int, default=2, help="processes for the template simulations")
    ap.add_argument("--no-compact", action="store_true", help="keep one file per run and table")
    a = ap.parse_args()

    study = load_study("residential")
    if a.reps is not None:
        for e in study.experiments:
            e.repetitions = a.reps
    specs = study.runs()
    exp = {e.name: e for e in study.experiments}
    cache = a.out.with_name(a.out.name + ".templates")
    cache.mkdir(parents=True, exist_ok=True)
    todo, seen = [], set()
    for s in specs:
        k = _key(s)
        if k in seen:
            continue
        seen.add(k)
        f = cache / _fname(k)
        if not f.exists():
            e = exp[s.experiment]
            todo.append((k, _spec_to_dict(s), e.measures, bool(e.keep_series), bool(e.keep_samples)))
    t0 = time.perf_counter()
    if todo:
        print(f"simulating {len(todo)} template runs (one per combination, full durations)", flush=True)
        with ProcessPoolExecutor(max_workers=a.jobs) as pool:
            for k, tables in pool.map(_template, todo):
                (cache / _fname(k)).write_bytes(pickle.dumps((k, tables)))
    templates = {}
    for f in cache.glob("*.pkl"):
        k, tables = pickle.loads(f.read_bytes())
        templates[k] = tables
    print(f"templates ready ({time.perf_counter() - t0:.0f} s); writing {len(specs)} runs to {a.out}", flush=True)

    _prepare(study, a.out)
    done = store.finished_runs(a.out)
    t1 = time.perf_counter()
    for i, s in enumerate(specs):
        if s.run_id in done:
            continue
        tpl = templates[_key(s)]
        rng = np.random.default_rng(int(s.run_id[:12], 16))
        runs = _retag(tpl["runs"], s)
        for c in runs.columns:
            if c not in NOT_MEASURES and not c.startswith("p_") and runs[c].dtype.kind == "f":
                runs[c] = runs[c] * rng.uniform(0.9, 1.1)
        tables = {"runs": runs}
        for name in store.DATA_TABLES:
            if name not in tpl:
                continue
            df = _retag(tpl[name], s)
            if name in ("samples", "series") and len(df):
                df["value"] = df["value"].to_numpy() * rng.uniform(0.9, 1.1, len(df))
            tables[name] = df
        store.write_run(a.out, tables)
        if (i + 1) % 500 == 0:
            print(f"  {i + 1}/{len(specs)} runs written ({time.perf_counter() - t1:.0f} s)", flush=True)
    print(f"wrote the runs in {time.perf_counter() - t1:.0f} s", flush=True)
    if not a.no_compact:
        t2 = time.perf_counter()
        n = store.compact(a.out)
        print(f"compacted {n} runs in {time.perf_counter() - t2:.0f} s", flush=True)


if __name__ == "__main__":
    main()
