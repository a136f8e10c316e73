#!/usr/bin/env python3
"""Simulator CPU on eleven full-length runs of the residential study, for comparing builds.

The full `aqmlab reproduce residential` is ~96 % simulation, most of it in 100 Mbit/s
runs, and takes half an hour of both cores; this times eleven representative runs of it
(repetition 0, the study's own scenarios, 140 s simulated each) with one or more
`aqmlab-bench` binaries, alternating binaries and scenarios, and reports the smallest
event-loop CPU time of `--repeat` runs of each (the noise of this shared machine only
ever adds time). Build the binaries to compare first, e.g.

    cargo build --release -p aqmlab-core --bin aqmlab-bench && cp target/release/aqmlab-bench /tmp/bench-new
    .venv/bin/python benchmarks/residential_bench.py --bin /tmp/bench-old --bin /tmp/bench-new --repeat 5

`--callgrind A,B` counts instructions instead (load-free): each scenario cut to A and to
B simulated seconds under `valgrind --tool=callgrind`, and reports the difference per
event and per bottleneck packet (the start-up cancels out); `--callgrind-out DIR` keeps
the longer run's profile of each (`callgrind_annotate --inclusive=yes FILE`).

    .venv/bin/python benchmarks/residential_bench.py --bin /tmp/bench-new --callgrind 10,20 --only rtt_fairness

Not part of the test suite.
"""
from __future__ import annotations

import argparse
import copy
import json
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

# (experiment, params) of the runs timed: the experiments and link speed that dominate
# the study's time (benchmarks/README.md, "The residential study"), and the flow-queueing and
# WiFi cases that cost the most per event
RUNS = [
    ("rrul", {"qdisc": "pie", "link": "100/100"}),
    ("rtt_fairness", {"qdisc": "pfifo_fast", "link": "100/100"}),
    ("voip", {"qdisc": "codel", "link": "100/100", "cross": "RRUL"}),
    ("web", {"qdisc": "pie", "link": "100/100", "page": "large", "cross": "1 TCP up"}),
    ("web", {"qdisc": "pie", "link": "100/100", "page": "small", "cross": "RRUL"}),
    ("wifi", {"qdisc": "fq_codel", "test": "RRUL"}),
    # flow queueing, the costliest per event (sim_wall_seconds / events of the full study)
    ("web", {"qdisc": "fq_codel", "link": "100/100", "page": "small", "cross": "RRUL"}),
    ("web", {"qdisc": "sfq", "link": "100/100", "page": "small", "cross": "RRUL"}),
    ("rtt_fairness", {"qdisc": "sfq", "link": "100/100"}),
    ("rtt_fairness", {"qdisc": "fq_nocodel", "link": "100/100"}),
    ("wifi", {"qdisc": "fq_nocodel", "test": "RRUL"}),
]


def scenarios(out: pathlib.Path, duration: str, only: list[str] | None = None) -> list[tuple[str, pathlib.Path]]:
    from aqmlab.scenario import to_toml
    from aqmlab.study import load_study

    specs = {(s.experiment, tuple(sorted(s.params.items()))): s
             for s in load_study("residential").runs() if s.repetition == 0}
    files = []
    for exp, params in RUNS:
        spec = specs[(exp, tuple(sorted(params.items())))]
        doc = copy.deepcopy(spec.scenario)
        doc.setdefault("run", {})["duration"] = duration
        name = exp + "_" + "_".join(str(v).replace("/", "-").replace(" ", "") for v in params.values())
        if only and not any(o in name for o in only):
            continue
        path = out / f"{name}.toml"
        path.write_text(to_toml(doc))
        files.append((name, path))
    return files


def loop_cpu(binary: str, scenario: pathlib.Path) -> float:
    p = subprocess.run([binary, str(scenario), "1"], capture_output=True, text=True, check=True)
    summary = json.loads(p.stdout.strip().splitlines()[-1])
    return float(summary["loop_cpu_seconds"])


def callgrind(binary: str, scenario: pathlib.Path, out_file: str) -> dict:
    """Instructions (Ir), events and bottleneck packets of one run under callgrind."""
    p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}",
                        binary, str(scenario), "1"], capture_output=True, text=True, check=True)
    summary = json.loads(p.stdout.strip().splitlines()[-1])
    m = re.search(r"Collected : (\d+)", p.stderr)
    if not m:
        raise SystemExit(f"no callgrind total in: {p.stderr[-300:]}")
    return {"ir": int(m.group(1)), "events": int(summary["events"]),
            "packets": int(summary["bottleneck_packets"])}


def callgrind_main(a: argparse.Namespace, bins: list[str]) -> int:
    short, long = a.callgrind.split(",")
    rows: dict = {}
    with tempfile.TemporaryDirectory(prefix="aqmlab-resbench-") as tmp:
        t = pathlib.Path(tmp)
        (t / "a").mkdir()
        (t / "b").mkdir()
        fa = scenarios(t / "a", short + "s", a.only)
        fb = scenarios(t / "b", long + "s", a.only)
        for (name, pa), (_, pb) in zip(fa, fb):
            for i, b in enumerate(bins):
                keep = str(a.callgrind_out / f"{name}.{i}.out") if a.callgrind_out else "/dev/null"
                ra = callgrind(b, pa, "/dev/null")
                rb = callgrind(b, pb, keep)
                d_ir, d_ev, d_pk = rb["ir"] - ra["ir"], rb["events"] - ra["events"], rb["packets"] - ra["packets"]
                rows[(b, name)] = {"ir": d_ir, "events": d_ev, "packets": d_pk,
                                   "ir_per_event": d_ir / max(d_ev, 1), "ir_per_packet": d_ir / max(d_pk, 1)}
                print(f"{name:<44} {pathlib.Path(b).name:>14}  {d_ir / max(d_ev, 1):7.1f} Ir/event"
                      f"  {d_ir / max(d_pk, 1):8.1f} Ir/bottleneck packet  ({d_ev} events)", flush=True)
    if len(bins) > 1:
        names = sorted({n for _, n in rows})
        for b in bins[1:]:
            tot0 = sum(rows[(bins[0], n)]["ir"] for n in names)
            tot = sum(rows[(b, n)]["ir"] for n in names)
            print(f"instructions relative to the first: {pathlib.Path(b).name} {tot / tot0 - 1:+.2%}")
    if a.json:
        a.json.write_text(json.dumps({"callgrind": a.callgrind,
                                      "rows": [{"bin": b, "scenario": n, **r} for (b, n), r in rows.items()]},
                                     indent=2))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", default=None,
                    help="an aqmlab-bench binary (repeatable; default target/release/aqmlab-bench)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--duration", default="140s", help="simulated time of each run (the study's: 140s)")
    ap.add_argument("--json", type=pathlib.Path)
    ap.add_argument("--only", action="append", default=None,
                    help="only the scenarios whose name contains this (repeatable)")
    ap.add_argument("--callgrind", metavar="A,B",
                    help="count instructions under callgrind at A and B simulated seconds instead of timing")
    ap.add_argument("--callgrind-out", type=pathlib.Path, help="keep the B-second profiles in this folder")
    a = ap.parse_args(argv)
    bins = a.bin or [str(ROOT / "target" / "release" / "aqmlab-bench")]
    if a.callgrind:
        return callgrind_main(a, bins)
    best: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory(prefix="aqmlab-resbench-") as tmp:
        files = scenarios(pathlib.Path(tmp), a.duration, a.only)
        for _ in range(a.repeat):
            for b in bins:
                for name, path in files:
                    t = loop_cpu(b, path)
                    best[(b, name)] = min(best.get((b, name), float("inf")), t)
    names = [n for n, _ in files]
    width = max(len(n) for n in names)
    print(f"{'scenario':<{width}}  " + "  ".join(f"{pathlib.Path(b).name:>14}" for b in bins))
    for n in names:
        print(f"{n:<{width}}  " + "  ".join(f"{best[(b, n)]:>13.3f}s" for b in bins))
    totals = {b: sum(best[(b, n)] for n in names) for b in bins}
    print(f"{'total':<{width}}  " + "  ".join(f"{totals[b]:>13.3f}s" for b in bins))
    if len(bins) > 1:
        base = totals[bins[0]]
        print("relative to the first: " + ", ".join(f"{pathlib.Path(b).name} {totals[b] / base - 1:+.1%}" for b in bins[1:]))
    if a.json:
        a.json.write_text(json.dumps({"repeat": a.repeat, "duration": a.duration,
                                      "loop_cpu_min": {b: {n: best[(b, n)] for n in names} for b in bins},
                                      "total": totals}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
