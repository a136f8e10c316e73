"""Store-corruption fuzz: random byte flips and truncations of every kind of store file,
then load / report / resume (or `aqmlab verify --repair`).

A small study is swept twice into reference stores: compacted (parts + parts.json) and
loose (one file per run and table, checksums/). Each trial copies one reference, damages
one file (a random byte XORed with a random non-zero value, or the file cut to a random
length), then

1. reads it (``aqmlab.load`` and every table, in run-id order): the outcome must be the
   reference's content ("correct") or an :class:`aqmlab.AqmlabError` ("clear error");
   different content is a WRONG NUMBER, any other exception an INTERNAL ERROR;
2. repairs it: every other trial resumes the sweep (``run_study``), the others run
   ``repair_store`` (``aqmlab verify --repair``); the store must then read equal to the
   reference (wall-clock columns aside; a rerun run's timings differ).

Every --report-every'th trial also runs ``aqmlab report`` on the damaged store in a
subprocess: exit 0 or 2 only (never 1, "internal error").

    .venv/bin/python benchmarks/store_fuzz.py --trials 1000 --seed 1
"""
from __future__ import annotations

import argparse
import collections
import os
import pathlib
import random
import shutil
import subprocess
import sys
import tempfile
import time

STUDY = """
[study]
name = "fuzz"
title = "Store fuzz"
repetitions = 2
seed = 3

[base]
run = { duration = "0.4s", warmup = "0.1s", bin = "100ms" }
dumbbell = { rate = "20Mbit", delay = "2ms" }

[[experiment]]
name = "load"
measures = ["induced_latency", "cbr_goodput", "bottleneck_utilization"]
keep_series = true
keep_samples = true
patch = { flow = [
  { kind = "cbr", from = "client0", to = "server0", rate = "30Mbit" },
  { kind = "ping", from = "client0", to = "server0", interval = "20ms" },
] }

  [[experiment.axis]]
  name = "qdisc"
  path = "dumbbell.qdisc"
  values = [ { kind = "fifo", limit = 100 }, { kind = "fq_codel" }, { kind = "pie" } ]
  labels = ["fifo", "fq_codel", "pie"]
"""

WALL = {"wall_seconds", "sim_wall_seconds"}


def kind_of(rel: str) -> str:
    """The file kind: metadata by name, data files by table and layout."""
    parts = rel.split("/")
    if len(parts) == 1:
        return parts[0]
    if parts[0] == "checksums":
        return "checksums/<run>.json"
    return f"{parts[0]}/part" if parts[1].startswith("part-") else f"{parts[0]}/<run>.parquet"


def content(out: pathlib.Path) -> dict:
    """Every table of the store, as plain sorted rows without wall-clock columns."""
    from aqmlab import store

    st = store.load(out)
    res = {}
    for t in store.TABLES:
        df = st.raw_runs if t == "runs" else st.scan(t)
        df = df[[c for c in sorted(df.columns) if c not in WALL]]
        res[t] = sorted(map(repr, df.itertuples(index=False)))
    return res


def damage(f: pathlib.Path, rng: random.Random) -> str:
    data = bytearray(f.read_bytes())
    if not data or rng.random() < 0.5:
        n = rng.randrange(0, max(len(data), 1))
        f.write_bytes(bytes(data[:n]))
        return f"truncate to {n}/{len(data)}"
    i = rng.randrange(len(data))
    data[i] ^= rng.randrange(1, 256)
    f.write_bytes(bytes(data))
    return f"flip byte {i}/{len(data)}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--report-every", type=int, default=50, help="run `aqmlab report` on every N-th damaged store (0: never)")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = ap.parse_args()

    from aqmlab.errors import AqmlabError
    from aqmlab.runner import repair_store, run_study
    from aqmlab.study import parse_study

    study = parse_study(STUDY)
    work = pathlib.Path(tempfile.mkdtemp(prefix="store-fuzz-"))
    refs = {"parts": work / "ref-parts", "loose": work / "ref-loose"}
    run_study(study, refs["parts"], jobs=1, progress=False)
    run_study(study, refs["loose"], jobs=1, progress=False, compact_after=False)
    want = content(refs["parts"])
    assert content(refs["loose"]) == want
    files = []
    for layout, ref in refs.items():
        for p in sorted(ref.rglob("*")):
            rel = p.relative_to(ref).as_posix()
            if p.is_file() and not rel.startswith((".lock", "failed/")):
                files.append((layout, rel))
    kinds = sorted({kind_of(rel) + (" (" + layout + ")" if "/" not in rel else "") for layout, rel in files})
    by_kind: dict[str, list] = collections.defaultdict(list)
    for layout, rel in files:
        by_kind[kind_of(rel) + (" (" + layout + ")" if "/" not in rel else "")].append((layout, rel))
    rng = random.Random(args.seed)
    stats: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    bad: list[str] = []
    env = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)}
    t0 = time.time()
    for i in range(args.trials):
        kind = kinds[i % len(kinds)]
        layout, rel = rng.choice(by_kind[kind])
        out = work / "trial"
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(refs[layout], out)
        how = damage(out / rel, rng)
        s = stats[kind]
        s["trials"] += 1
        try:
            got = content(out)
            if got == want:
                s["read: correct"] += 1
            else:
                s["read: WRONG"] += 1
                bad.append(f"trial {i}: {rel} {how}: wrong content read")
        except AqmlabError:
            s["read: clear error"] += 1
        except Exception as e:  # noqa: BLE001 - what the fuzz looks for
            s["read: INTERNAL"] += 1
            bad.append(f"trial {i}: {rel} {how}: {type(e).__name__}: {e}")
        if args.report_every and i % args.report_every == 0:
            r = subprocess.run([sys.executable, "-m", "aqmlab", "report", str(out), "--jobs", "1", "--out", str(work / "r.html")],
                               capture_output=True, text=True, env=env)
            s["report run"] += 1
            if r.returncode not in (0, 2):
                s["report: INTERNAL"] += 1
                bad.append(f"trial {i}: {rel} {how}: report exit {r.returncode}: {r.stderr.strip()}")
        try:
            if i % 2:
                repair_store(out, jobs=1)
            else:
                run_study(study, out, jobs=1, progress=False)
            if content(out) == want:
                s["after repair: equal"] += 1
            else:
                s["after repair: DIFFERENT"] += 1
                bad.append(f"trial {i}: {rel} {how}: different after repair")
        except AqmlabError as e:
            s["after repair: refused"] += 1
            bad.append(f"trial {i}: {rel} {how}: repair refused: {e}")
        except Exception as e:  # noqa: BLE001
            s["after repair: INTERNAL"] += 1
            bad.append(f"trial {i}: {rel} {how}: repair {type(e).__name__}: {e}")
        if (i + 1) % 100 == 0:
            print(f"{i + 1} trials, {time.time() - t0:.0f} s, {len(bad)} problems", file=sys.stderr, flush=True)
    cols = ["trials", "read: correct", "read: clear error", "read: WRONG", "read: INTERNAL", "report run", "report: INTERNAL",
            "after repair: equal", "after repair: DIFFERENT", "after repair: refused", "after repair: INTERNAL"]
    total: collections.Counter = collections.Counter()
    for s in stats.values():
        total.update(s)
    rows = [(k, stats[k]) for k in kinds] + [("all", total)]
    if args.markdown:
        print("| file kind | " + " | ".join(cols) + " |")
        print("|---" * (len(cols) + 1) + "|")
        for k, s in rows:
            print(f"| {k} | " + " | ".join(str(s[c]) for c in cols) + " |")
    else:
        w = max(len(k) for k, _ in rows)
        print(f"{'file kind':<{w}}  " + "  ".join(cols))
        for k, s in rows:
            print(f"{k:<{w}}  " + "  ".join(f"{s[c]:>{len(c)}}" for c in cols))
    print(f"{args.trials} trials in {time.time() - t0:.0f} s; {len(bad)} problems")
    for b in bad[:50]:
        print("  " + b)
    shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
