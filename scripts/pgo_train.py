"""Training runs for the profile-guided build of the simulator (scripts/setup.sh, PGO).

An instrumented build counts how often each branch and call of the simulator runs; the
optimised build then lays out and inlines code for those counts. The counts must come
from the kind of work users do, and must reach every qdisc, congestion control and
workload: code that the training never runs is compiled as cold (for size), which would
slow a user's scenario that needs it. So the training set is
- the shipped examples (`examples/*.toml`),
- from every shipped study (quick mode, optional experiments included), enough parameter
  combinations of each experiment that every value of every axis occurs once,
- a short dumbbell run per qdisc kind and per congestion control (with ECN for the
  controls that use it), so nothing is left cold.
The benchmark scenarios (`benchmarks/scenarios/`) are deliberately *not* in the set, so
the speed-ups they report are measured on work the profile was not trained on.

Usage:
    python scripts/pgo_train.py              # runs in-process through the installed aqmlab
    python scripts/pgo_train.py --bench BIN  # runs each scenario through an aqmlab-bench binary
    python scripts/pgo_train.py --list       # prints the scenario names only
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

import aqmlab  # noqa: E402
from aqmlab.scenario import to_toml  # noqa: E402
from aqmlab.study import list_studies, load_study  # noqa: E402

# Runs of the synthetic part: simulated seconds each.
SYNTH_SECONDS = 8


def covering(combos: list[dict[str, str]]) -> list[dict[str, str]]:
    """A few combinations in which every (axis, value) pair occurs at least once."""
    need = {(k, v) for c in combos for k, v in c.items()}
    out = []
    for c in combos:
        new = {(k, v) for k, v in c.items()} & need
        if new or not out:
            out.append(c)
            need -= new
        if not need:
            break
    return out


def dumbbell(qdisc: str, cc: str, ecn: bool) -> dict[str, Any]:
    return {
        "run": {"name": f"pgo_{qdisc}_{cc}", "duration": f"{SYNTH_SECONDS}s", "warmup": "1s"},
        "dumbbell": {"pairs": 4, "rate": "20Mbit", "delay": "10ms", "qdisc": {"kind": qdisc}},
        "tcp": {"cc": cc, "ecn": ecn},
        "flow": [
            {"kind": "bulk", "count": 4, "from": "client{i}", "to": "server{i}", "start_spread": "1s"},
            {"kind": "ping", "from": "client0", "to": "server0", "interval": "100ms"},
        ],
    }


def training_set() -> list[tuple[str, str, int]]:
    """(name, TOML text, seed) of every training run."""
    runs: list[tuple[str, str, int]] = []
    for p in sorted((ROOT / "examples").glob("*.toml")):
        runs.append((f"example/{p.stem}", p.read_text(), 1))
    for name in list_studies():
        study = load_study(name, quick=True)
        for e in study.experiments:
            for i, params in enumerate(covering(e.combinations())):
                runs.append((f"{name}/{e.name}/{i}", to_toml(e.scenario(params)), study.seed))
    for q, _ in aqmlab.kinds("qdiscs"):
        runs.append((f"qdisc/{q}", to_toml(dumbbell(q, "cubic", False)), 1))
    for cc, _ in aqmlab.kinds("cc"):
        for ecn in (False, True) if cc in ("dctcp", "prague", "cubic") else (False,):
            q = "dualpi2" if cc == "prague" else "fq_codel"
            runs.append((f"cc/{cc}{'-ecn' if ecn else ''}", to_toml(dumbbell(q, cc, ecn)), 1))
    return runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", help="run through this aqmlab-bench binary instead of in-process")
    ap.add_argument("--list", action="store_true", help="print the training runs and exit")
    a = ap.parse_args()
    runs = training_set()
    if a.list:
        for name, _, seed in runs:
            print(name, seed)
        return 0
    t0 = time.monotonic()
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, text, seed in runs:
            if a.bench:
                path = pathlib.Path(tmp) / "scenario.toml"
                path.write_text(text)
                p = subprocess.run([a.bench, str(path), str(seed)], capture_output=True, text=True)
                if p.returncode != 0:
                    failed.append(f"{name}: {p.stderr.strip()}")
            else:
                try:
                    aqmlab.run(text, seed)
                except aqmlab.AqmlabError as e:
                    failed.append(f"{name}: {e}")
    for f in failed:
        print(f"pgo training: {f}", file=sys.stderr)
    print(f"pgo training: {len(runs) - len(failed)} of {len(runs)} runs in {time.monotonic() - t0:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
