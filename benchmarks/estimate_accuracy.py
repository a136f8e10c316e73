"""How well the resource estimate bounds a run: estimated memory and events against the
measured peak RSS and processed events, over scenarios of different shapes (the
examples, the benchmark scenarios, runs of the shipped studies, many-flow dumbbells,
RRUL x100 behind CAKE, packet and TCP traces on).

Each scenario runs in its own child process (``aqmlab.run`` with ``force=True``, so that
a scenario the budget would refuse is still measured); the child's peak RSS comes from
``os.wait4``. The interpreter with aqmlab imported costs memory the estimate does not
model, so the table shows the measured peak both whole and above that baseline (a child
that runs a 1 s single-ping scenario). Below ``--min-measurable`` MB above the baseline the
run's own memory is within the allocator's and the page cache's noise: such rows are judged
on the whole process (estimate + baseline against the peak RSS, column "whole") instead.
Durations are capped (``--max-duration`` after the latest flow start) to keep the
benchmark short; the shape of each scenario is otherwise unchanged.

    PYTHONPATH=python .venv/bin/python benchmarks/estimate_accuracy.py [--max-duration 5]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tomllib
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys
import aqmlab
sc = json.loads(sys.stdin.read())
if sc is None:
    print(json.dumps({}))
    sys.exit(0)
est = aqmlab.validate(sc, force=True, flow_rows=0)["estimate"]
refused = None
try:
    aqmlab.validate(sc, flow_rows=0)
except aqmlab.ScenarioError as e:
    refused = str(e)
r = aqmlab.run(sc, force=True)
print(json.dumps({"est_mem": est["memory_bytes"], "est_events": est["events"], "events": r.events, "refused": refused}))
"""


def _secs(v: str) -> float:
    units = {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0, "min": 60.0, "h": 3600.0}
    for u in sorted(units, key=len, reverse=True):
        if v.endswith(u):
            return float(v[: -len(u)]) * units[u]
    return float(v)


def _cap(sc: dict[str, Any], max_dur: float) -> dict[str, Any]:
    run = sc.setdefault("run", {})
    d = _secs(str(run.get("duration", "10s")))
    # every flow runs for up to the cap, a late-starting one too (one starting at or after
    # the cap would be refused)
    starts = [_secs(str(f["start"])) for f in sc.get("flow", []) if "start" in f]
    max_dur = max([max_dur] + [s + max_dur for s in starts])
    if d > max_dur:
        run["duration"] = f"{max_dur}s"
        w = run.get("warmup")
        if w is not None and _secs(str(w)) >= max_dur:
            run["warmup"] = f"{max_dur / 5}s"
    return sc


def _dumbbell(name: str, flows: list[dict], rate: str = "100Mbit", qdisc: dict | None = None,
              pairs: int = 1, run: dict | None = None, **link: Any) -> tuple[str, dict]:
    db: dict[str, Any] = {"pairs": pairs, "rate": rate, "delay": "10ms", **link}
    if qdisc:
        db["qdisc"] = qdisc
    return name, {"run": {"duration": "10s", **(run or {})}, "dumbbell": db, "flow": flows}


def scenarios() -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = []
    for p in sorted((ROOT / "examples").glob("*.toml")):
        out.append((f"example {p.stem}", tomllib.loads(p.read_text())))
    for p in sorted((ROOT / "benchmarks" / "scenarios").glob("*.toml")):
        out.append((f"bench {p.stem}", tomllib.loads(p.read_text())))
    sys.path.insert(0, str(ROOT / "python"))
    from aqmlab.study import load_study

    for study in ("residential", "saturated-tcp", "edge-router", "docsis-downstream", "l4s", "sqm"):
        st = load_study(study, quick=True)
        seen: set[str] = set()
        for spec in st.runs(None):
            if spec.experiment in seen or spec.repetition:
                continue
            seen.add(spec.experiment)
            out.append((f"study {study}/{spec.experiment}", spec.scenario))
            if len(seen) >= 2:
                break
    bulk = {"kind": "bulk", "from": "client{i}", "to": "server{i}"}
    out += [
        _dumbbell("bulk x200 fq_codel", [{**bulk, "count": 200}], pairs=200, qdisc={"kind": "fq_codel"}),
        _dumbbell("bulk x1000 codel", [{**bulk, "count": 1000}], pairs=1000, qdisc={"kind": "codel"}),
        _dumbbell("bulk x50 one pair", [{"kind": "bulk", "from": "client0", "to": "server0", "count": 50}]),
        _dumbbell("rrul x100 cake", [{"kind": "rrul", "from": "client{i}", "to": "server{i}", "count": 100}],
                  pairs=100, qdisc={"kind": "cake"}),
        _dumbbell("rrul x100 cake shaped", [{"kind": "rrul", "from": "client{i}", "to": "server{i}", "count": 100}],
                  pairs=100, qdisc={"kind": "cake", "bandwidth": "50Mbit"}),
        _dumbbell("bulk packet_trace 10s", [{**bulk, "count": 4}], pairs=4,
                  run={"packet_trace": [["0s", "10s"]]}),
        _dumbbell("bulk packet_trace 1s", [{**bulk, "count": 4}], pairs=4,
                  run={"packet_trace": [["2s", "3s"]]}),
        _dumbbell("bulk tcp trace", [{**bulk, "count": 4, "tcp": {"trace": True}}], pairs=4),
        _dumbbell("ping 1ms", [{"kind": "ping", "from": "client0", "to": "server0", "interval": "1ms"}]),
        _dumbbell("cbr overload fifo", [{"kind": "cbr", "from": "client0", "to": "server0", "rate": "200Mbit"}],
                  qdisc={"kind": "fifo", "limit": 10000}),
        _dumbbell("device_queue 1000", [{**bulk, "count": 8}], pairs=8, device_queue=1000),
        _dumbbell("video has x4", [{"kind": "has", "from": "client{i}", "to": "server{i}", "count": 4}],
                  rate="20Mbit", pairs=4),
        _dumbbell("web_users x50", [{"kind": "web_users", "from": "client{i}", "to": "server{i}", "count": 50,
                                     "start_spread": "1s"}], rate="20Mbit", pairs=50),
        _dumbbell("wrt 1s think", [{"kind": "wrt", "from": "client0", "to": "server0", "think": "1s"}]),
        _dumbbell("web large think 1s", [{"kind": "web", "from": "client0", "to": "server0", "page": "large",
                                          "think": "1s"}], rate="20Mbit"),
        _dumbbell("voip x20 fq_codel", [{"kind": "voip", "from": "client{i}", "to": "server{i}", "count": 20}],
                  rate="5Mbit", pairs=20, qdisc={"kind": "fq_codel"}),
    ]
    return out


#: The baseline: the interpreter with aqmlab and its result tables loaded, a negligible run.
TINY = {"run": {"duration": "1s"}, "dumbbell": {"rate": "10Mbit", "delay": "1ms"},
        "flow": [{"kind": "ping", "from": "client0", "to": "server0", "interval": "50ms"}]}


def measure(sc: dict | None) -> tuple[dict, float]:
    """Runs `sc` in a child; its result and peak RSS in bytes."""
    p = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdin is not None and p.stdout is not None and p.stderr is not None
    p.stdin.write(json.dumps(sc))
    p.stdin.close()
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(err.strip().splitlines()[-1] if err.strip() else f"exit {p.returncode}")
    return json.loads(out), ru.ru_maxrss * 1024.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-duration", type=float, default=5.0, help="cap on run.duration, seconds (default 5)")
    ap.add_argument("--only", default="", help="only scenarios whose name contains this")
    ap.add_argument("--min-measurable", type=float, default=10.0,
                    help="MB above the baseline below which memory is judged on the whole process (default 10)")
    a = ap.parse_args()
    _, base = measure(TINY)
    print(f"baseline (interpreter, aqmlab and a 1 s single-ping run): {base / 1e6:.0f} MB")
    print(
        f"{'scenario':40s} {'est MB':>8s} {'RSS MB':>8s} {'-base':>8s} {'ratio':>6s} {'whole':>6s} {'est ev':>9s} "
        f"{'events':>9s} {'ratio':>6s}  refused"
    )
    worst_mem = worst_ev = 0.0
    false_refusals = 0
    n = 0
    for name, sc in scenarios():
        if a.only not in name:
            continue
        try:
            r, rss = measure(_cap(sc, a.max_duration))
        except RuntimeError as e:
            print(f"{name:40s} failed: {e}")
            continue
        n += 1
        above = max(rss - base, 1.0)
        measurable = above >= a.min_measurable * 1e6
        rm = r["est_mem"] / above
        whole = (r["est_mem"] + base) / rss
        judged = rm if measurable else whole
        re_ = r["est_events"] / max(r["events"], 1)
        worst_mem = max(worst_mem, judged, 1 / judged)
        worst_ev = max(worst_ev, re_, 1 / re_)
        false_refusals += bool(r["refused"])
        rm_s = f"{rm:6.2f}" if measurable else f"{'-':>6s}"
        print(f"{name:40s} {r['est_mem'] / 1e6:8.1f} {rss / 1e6:8.1f} {above / 1e6:8.1f} {rm_s} {whole:6.2f} "
              f"{r['est_events']:9.3g} {r['events']:9.3g} {re_:6.2f}  {'yes' if r['refused'] else ''}")
    print(f"{n} scenarios; worst factor: memory {worst_mem:.2f}x (above the baseline where >= {a.min_measurable:g} MB, "
          f"else the whole process), events {worst_ev:.2f}x; "
          f"refused by the default budget: {false_refusals}")


if __name__ == "__main__":
    main()
