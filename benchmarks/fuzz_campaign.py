#!/usr/bin/env python3
"""The long fuzzing campaign: generated scenarios through `aqmlab.validate` (and, with
`--run`, shortened accepted ones through `aqmlab.run`), each class of failure counted.

    # 1,000,000 scenarios through validate on 2 workers (niced), then 10,000 through run:
    nice -n 19 .venv/bin/python benchmarks/fuzz_campaign.py --n 1000000 --workers 2
    nice -n 19 .venv/bin/python benchmarks/fuzz_campaign.py --n 10000 --run --workers 2
    # study files: 20,000 mutated studies through parse, expansion, output checks, validate
    nice -n 19 .venv/bin/python benchmarks/fuzz_campaign.py --n 20000 --studies --workers 2

Scenario i is `fuzzgen.mutate(random.Random(SEED * 2**32 + i))` (python/tests/fuzzgen.py),
so any finding is reproduced with `--repro i` (prints the scenario and its outcome).
With `--studies` input i is the study file `fuzzgen.mutate_study(...)` of the same seed:
it goes through `parse_study` (quick mode for odd i), `Study.runs`, the report's output
checks (`report.validate_outputs`) and `aqmlab.validate` of up to 16 of its runs'
scenarios as a sweep checks them; a StudyError or ScenarioError is `refused`, anything
else `raw`.

Outcomes per scenario: `accepted`, `refused` (a ScenarioError naming a field), and the
failures the campaign exists to find: `raw` (any other exception reaches the caller),
`unnamed` (a ScenarioError with an empty field for a dict scenario: only whole-file
errors may omit the field), `accepted_then_failing` (validate accepted it, run raised),
`hang` (no answer within --timeout seconds) and `abort` (the worker process died: a Rust
abort, a stack overflow, the memory cap). Workers run in subprocesses with an address
space cap (--rlimit-gb) and the resource budget lowered to --budget (the default budget is
half the machine's memory, too much for several workers on a shared machine); a worker
that hangs or dies is replaced and the campaign continues with the next scenario.

Prints a JSON summary (counts, rate, failing indices) at the end; exit status 1 if any
failure was found.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import select
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python" / "tests"))

FAILURES = ("raw", "unnamed", "accepted_then_failing", "hang", "abort")
# Runs in the campaign are short; their scenarios are also kept small enough to finish in
# well under the timeout (the estimate decides; larger ones are only validated).
RUN_MAX_EVENTS = 2e6


def evaluate_study(i: int, seed: int) -> tuple[str, str]:
    import fuzzgen

    from aqmlab import report
    from aqmlab.errors import AqmlabError
    from aqmlab.runner import _validate_all
    from aqmlab.study import parse_study

    text = fuzzgen.mutate_study(random.Random(seed * 2**32 + i))
    try:
        st = parse_study(text, quick=bool(i % 2))
        runs = st.runs()
        report.validate_outputs(st)
        _validate_all(runs[:: max(1, len(runs) // 16)], st.text)
    except AqmlabError as e:
        if not str(e).strip():
            return "unnamed", repr(e)[:300]
        return "refused", ""
    except Exception as e:  # noqa: BLE001 - exactly what the campaign looks for
        return "raw", f"{type(e).__name__}: {e}"[:300]
    return "accepted", ""


def evaluate(i: int, seed: int, do_run: bool, studies: bool = False) -> tuple[str, str]:
    if studies:
        return evaluate_study(i, seed)
    import fuzzgen

    import aqmlab

    sc = fuzzgen.mutate(random.Random(seed * 2**32 + i))
    if do_run:
        sc = fuzzgen.shorten(sc)
    try:
        plan = aqmlab.validate(sc)
    except aqmlab.ScenarioError as e:
        if isinstance(sc, dict) and not e.field and "TOML" not in e.message and "no topology" not in e.message:
            return "unnamed", str(e)[:300]
        return "refused", ""
    except Exception as e:  # noqa: BLE001 - exactly what the campaign looks for
        return "raw", f"{type(e).__name__}: {e}"[:300]
    if not do_run:
        return "accepted", ""
    if plan["estimate"]["events"] > RUN_MAX_EVENTS:
        return "accepted", "not run (large)"
    try:
        aqmlab.run(sc)
    except aqmlab.ScenarioError as e:
        return "accepted_then_failing", str(e)[:300]
    except Exception as e:  # noqa: BLE001
        return "raw", f"run: {type(e).__name__}: {e}"[:300]
    return "accepted", "ran"


def worker(start: int, stop: int, seed: int, do_run: bool, rlimit_gb: float, studies: bool = False) -> None:
    import resource

    if rlimit_gb > 0:
        cap = int(rlimit_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    out = sys.stdout
    for i in range(start, stop):
        out.write(f"S {i}\n")  # started: a hang or abort is blamed on this index
        out.flush()
        kind, detail = evaluate(i, seed, do_run, studies)
        out.write(json.dumps([i, kind, detail]) + "\n")
        out.flush()


def run_campaign(a) -> dict:
    counts: dict[str, int] = {}
    failing: list[list] = []
    ran = 0
    t0 = time.time()
    env = dict(os.environ, AQMLAB_MAX_MEMORY=a.budget)
    chunks = [(s, min(s + (a.n + a.workers - 1) // a.workers, a.n)) for s in range(0, a.n, (a.n + a.workers - 1) // a.workers)]
    todo = list(chunks)
    procs: dict = {}

    def spawn(start: int, stop: int) -> None:
        if start >= stop:
            return
        cmd = [sys.executable, __file__, "--worker", str(start), str(stop), "--seed", str(a.seed), "--rlimit-gb", str(a.rlimit_gb)] + (
            ["--run"] if a.run else []
        ) + (["--studies"] if a.studies else [])
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, bufsize=1)
        procs[p.stdout.fileno()] = {"p": p, "cur": start, "stop": stop, "last": time.time()}

    for s, e in todo:
        spawn(s, e)
    done = 0
    last_report = time.time()
    while procs:
        ready, _, _ = select.select(list(procs), [], [], 1.0)
        now = time.time()
        for fd in ready:
            st = procs[fd]
            line = st["p"].stdout.readline()
            if not line:  # the worker exited
                st["p"].wait()
                del procs[fd]
                if st["cur"] < st["stop"] and st.get("started"):
                    counts["abort"] = counts.get("abort", 0) + 1
                    failing.append([st["cur"], "abort", f"exit status {st['p'].returncode}"])
                    done += 1
                    spawn(st["cur"] + 1, st["stop"])
                elif st["cur"] < st["stop"]:
                    spawn(st["cur"], st["stop"])
                continue
            st["last"] = now
            if line.startswith("S "):
                st["cur"] = int(line[2:])
                st["started"] = True
                continue
            i, kind, detail = json.loads(line)
            st["cur"] = i + 1
            st["started"] = False
            counts[kind] = counts.get(kind, 0) + 1
            if detail == "ran":
                ran += 1
            if kind in FAILURES:
                failing.append([i, kind, detail])
                print(f"FAILURE {i} {kind}: {detail}", file=sys.stderr, flush=True)
            done += 1
        for fd, st in list(procs.items()):
            if st.get("started") and now - st["last"] > a.timeout:
                st["p"].kill()
                st["p"].wait()
                st["p"].stdout.close()
                del procs[fd]
                counts["hang"] = counts.get("hang", 0) + 1
                failing.append([st["cur"], "hang", f"no answer in {a.timeout} s"])
                done += 1
                spawn(st["cur"] + 1, st["stop"])
        if now - last_report > 30:
            last_report = now
            el = now - t0
            print(f"[{el:7.0f} s] {done}/{a.n} ({done / el:.0f}/s) {counts}", file=sys.stderr, flush=True)
    el = time.time() - t0
    return {
        "n": a.n,
        "mode": "studies" if a.studies else "run" if a.run else "validate",
        "seed": a.seed,
        "workers": a.workers,
        "seconds": round(el, 1),
        "per_second": round(a.n / el, 1) if el > 0 else None,
        "counts": counts,
        "ran": ran,
        "failures": sum(counts.get(k, 0) for k in FAILURES),
        "failing": failing[:200],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000, help="scenarios to generate (default 10,000)")
    ap.add_argument("--seed", type=int, default=1, help="campaign seed (default 1)")
    ap.add_argument("--run", action="store_true", help="also run accepted scenarios, shortened to 0.2 s")
    ap.add_argument("--studies", action="store_true", help="generate study files instead of scenarios (parse, expand, validate)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds without an answer that count as a hang")
    ap.add_argument("--budget", default="1GB", help="AQMLAB_MAX_MEMORY for the workers (default 1GB)")
    ap.add_argument("--rlimit-gb", type=float, default=6.0, help="address-space cap per worker, GiB (0: none)")
    ap.add_argument("--json", type=Path, default=None, help="also write the summary here")
    ap.add_argument("--repro", type=int, default=None, metavar="I", help="print scenario I and its outcome")
    ap.add_argument("--worker", nargs=2, type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a.worker[0], a.worker[1], a.seed, a.run, a.rlimit_gb, a.studies)
        return
    if a.repro is not None:
        import fuzzgen

        if a.studies:
            print(fuzzgen.mutate_study(random.Random(a.seed * 2**32 + a.repro)))
            print(evaluate(a.repro, a.seed, False, True))
            return
        sc = fuzzgen.mutate(random.Random(a.seed * 2**32 + a.repro))
        if a.run:
            sc = fuzzgen.shorten(sc)
        print(sc if isinstance(sc, str) else json.dumps(sc, indent=1, default=str))
        print(evaluate(a.repro, a.seed, a.run))
        return
    summary = run_campaign(a)
    text = json.dumps(summary, indent=1)
    print(text)
    if a.json:
        a.json.write_text(text + "\n")
    sys.exit(1 if summary["failures"] else 0)


if __name__ == "__main__":
    main()
