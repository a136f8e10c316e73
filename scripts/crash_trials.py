#!/usr/bin/env python3
"""Crash trials of the result store: kill -9 a sweep at random instants and flip bytes in
finished runs' files; every store must resume to one equal to an uninterrupted sweep.

    .venv/bin/python scripts/crash_trials.py [--trials 20] [--seed 1] [--jobs 2] [--work DIR]

1. An uninterrupted ``aqmlab sweep`` of a small study (2 experiments, 24 short runs)
   gives the reference store and the sweep's wall time T.
2. Each trial starts a fresh sweep, sends SIGKILL to its process group at a uniformly
   random instant in [0, T] (so kills land in start-up, verification, runs, writes and
   the final compaction), then reruns the same command until it exits 0, and compares
   the store with the reference. A sweep that ends before its instant (the machine got
   faster) is no trial: T becomes that sweep's length and the instant is drawn again.
3. Byte flips: (a) in a finished run's per-run file of an interrupted store, (b) in a
   compacted part of a finished store; the resumed sweep must report the damaged runs
   (``repaired`` in provenance.json) and end equal to the reference.

Equal means: the same finished run ids and, for every table (runs, flows, queues,
samples, series), the same rows and values (wall-clock columns excluded), no temporary
files and no unlisted part files. Prints one line per trial and a summary; exits 1 if any
trial fails.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

STUDY = """
[study]
name = "crash"
title = "Crash-trial study"
repetitions = 3
seed = 11

[base]
run = { duration = "3s", warmup = "1s" }
dumbbell = { rate = "50Mbit", delay = "5ms" }

[[experiment]]
name = "load"
measures = ["induced_latency", "cbr_goodput", "bottleneck_utilization"]
keep_series = true
patch = { flow = [
  { kind = "cbr", from = "client0", to = "server0", rate = "80Mbit" },
  { kind = "ping", from = "client0", to = "server0", interval = "50ms", start_spread = "100ms" },
] }

  [[experiment.axis]]
  name = "qdisc"
  path = "dumbbell.qdisc"
  values = [ { kind = "fifo", limit = 300 }, { kind = "fq_codel" } ]
  labels = ["fifo", "fq_codel"]

  [[experiment.axis]]
  name = "rate"
  [[experiment.axis.values]]
  label = "50M"
  patch = {}
  [[experiment.axis.values]]
  label = "20M"
  patch = { dumbbell = { rate = "20Mbit" } }

[[experiment]]
name = "tcp"
measures = ["goodput_down", "induced_latency"]

  [[experiment.axis]]
  name = "qdisc"
  path = "dumbbell.qdisc"
  values = [ { kind = "codel" }, { kind = "pie" } ]

  [[experiment.axis]]
  name = "flows"
  [[experiment.axis.values]]
  label = "1"
  patch = { flow = [ { kind = "bulk", from = "server0", to = "client0" }, { kind = "ping", from = "client0", to = "server0", interval = \
"20ms" } ] }
  [[experiment.axis.values]]
  label = "4"
  patch = { flow = [ { kind = "bulk", from = "server0", to = "client0", count = 4 }, { kind = "ping", from = "client0", to = "server0", \
interval = "20ms" } ] }
"""

WALL = ("wall_seconds", "sim_wall_seconds")


def sweep_cmd(study: pathlib.Path, out: pathlib.Path, jobs: int) -> list[str]:
    return [sys.executable, "-m", "aqmlab", "sweep", str(study), "--jobs", str(jobs), "--out", str(out)]


def snapshot(out: pathlib.Path) -> dict:
    """Every table of the store, sorted, without wall-clock columns."""
    from aqmlab import store

    st = store.load(out)
    snap = {"finished": sorted(store.finished_runs(out))}
    for t in store.TABLES:
        df = st.raw_runs if t == "runs" else getattr(st, t)
        if df.empty:
            snap[t] = df
            continue
        df = df.drop(columns=[c for c in WALL if c in df.columns])
        keys = ["run_id"] + [c for c in ("name", "entity", "metric", "t") if c in df.columns]
        snap[t] = df.sort_values(keys, kind="stable").reset_index(drop=True)[sorted(df.columns)]
    return snap


def compare(a: dict, b: dict) -> str | None:
    import pandas as pd

    if a["finished"] != b["finished"]:
        return f"finished runs differ: {len(a['finished'])} vs {len(b['finished'])}"
    for t in ("runs", "flows", "queues", "samples", "series"):
        try:
            pd.testing.assert_frame_equal(a[t], b[t], check_dtype=False)
        except AssertionError as e:
            return f"table {t} differs: {str(e).splitlines()[0]}"
    return None


def hygiene(out: pathlib.Path) -> str | None:
    tmp = list(out.rglob("*.tmp"))
    if tmp:
        return f"temporary files left: {[str(p.relative_to(out)) for p in tmp][:3]}"
    m = json.loads((out / "parts.json").read_text()) if (out / "parts.json").exists() else {"parts": {}}
    listed = {p["file"] for ps in m["parts"].values() for p in ps}
    orphans = [str(p.relative_to(out)) for p in out.glob("*/part-*.parquet") if str(p.relative_to(out)) not in listed]
    return f"unlisted part files: {orphans[:3]}" if orphans else None


def resume(cmd: list[str], tries: int = 3) -> subprocess.CompletedProcess:
    for _ in range(tries):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if r.returncode == 0:
            return r
    raise RuntimeError(f"resume failed ({r.returncode}): {r.stderr.strip().splitlines()[-1:]}")


def kill_at(cmd: list[str], delay: float) -> str:
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    t0 = time.monotonic()
    while time.monotonic() - t0 < delay and p.poll() is None:
        time.sleep(0.005)
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        return "killed"
    return "finished before the kill"


def flip_byte(path: pathlib.Path, rng: random.Random) -> int:
    data = bytearray(path.read_bytes())
    i = rng.randrange(len(data))
    data[i] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))
    return i


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--work", type=pathlib.Path, default=None, help="working folder (default: a temporary one, removed)")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    work = a.work or pathlib.Path(tempfile.mkdtemp(prefix="aqmlab-crash-"))
    work.mkdir(parents=True, exist_ok=True)
    study = work / "crash.toml"
    study.write_text(STUDY)
    ref = work / "ref"
    shutil.rmtree(ref, ignore_errors=True)
    t0 = time.monotonic()
    subprocess.run(sweep_cmd(study, ref, a.jobs), check=True, capture_output=True)
    T = time.monotonic() - t0
    want = snapshot(ref)
    print(f"reference: {len(want['finished'])} runs, uninterrupted sweep {T:.1f} s (kills drawn from U(0, {T:.1f}) s)")
    failures = 0
    redrawn = 0
    for i in range(a.trials):
        out = work / f"trial{i:02d}"
        while True:  # a sweep that ends before its kill is not a trial: draw again below its length
            shutil.rmtree(out, ignore_errors=True)
            delay = rng.uniform(0, T)
            t_start = time.monotonic()
            what = kill_at(sweep_cmd(study, out, a.jobs), delay)
            if what == "killed":
                break
            redrawn += 1
            T = min(T, time.monotonic() - t_start)
        from aqmlab import store

        at_kill = len(store.finished_runs(out)) if (out / "runs").is_dir() else 0
        resume(sweep_cmd(study, out, a.jobs))
        err = compare(snapshot(out), want) or hygiene(out)
        failures += err is not None
        print(f"trial {i + 1:2d}: kill -9 at {delay:5.2f} s ({at_kill} runs finished) -> "
              + ("resumed, equal to the reference" if err is None else f"FAIL: {err}"))
        if err is None:
            shutil.rmtree(out, ignore_errors=True)
    # byte flips
    from aqmlab import store

    for kind in ("per-run file of an interrupted sweep", "compacted part of a finished sweep"):
        out = work / f"flip-{'loose' if 'per-run' in kind else 'part'}"
        shutil.rmtree(out, ignore_errors=True)
        if "per-run" in kind:
            for _ in range(20):  # interrupt after a few runs finished, before compaction
                shutil.rmtree(out, ignore_errors=True)
                kill_at(sweep_cmd(study, out, a.jobs), rng.uniform(0.4, 0.8) * T)
                loose = sorted(p for t in store.DATA_TABLES + ("runs",) for p in (out / t).glob("[0-9a-f]*.parquet")
                               if p.stem in store.finished_runs(out)) if (out / "runs").is_dir() else []
                if loose and not (out / "parts.json").exists():
                    break
            victim = rng.choice(loose)
        else:
            subprocess.run(sweep_cmd(study, out, a.jobs), check=True, capture_output=True)
            victim = out / rng.choice([p["file"] for ps in json.loads((out / "parts.json").read_text())["parts"].values() for p in ps])
        pos = flip_byte(victim, rng)
        r = resume(sweep_cmd(study, out, a.jobs))
        prov = json.loads((out / "provenance.json").read_text())
        repaired = sorted({x["run_id"] for x in prov.get("repaired", [])})
        err = compare(snapshot(out), want) or hygiene(out)
        if not repaired or "damaged" not in r.stderr:
            err = err or "the resumed sweep did not report the damaged run(s)"
        failures += err is not None
        print(f"byte flip in a {kind} ({victim.relative_to(out)}, byte {pos}): {len(repaired)} damaged run(s) rerun and "
              f"reported -> " + ("equal to the reference" if err is None else f"FAIL: {err}"))
    if redrawn:
        print(f"({redrawn} sweep(s) ended before their kill instant and were drawn again with a shorter bound)")
    total = a.trials + 2
    print(f"{total - failures}/{total} trials resumed to a store equal to the uninterrupted sweep")
    if a.work is None and not failures:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
