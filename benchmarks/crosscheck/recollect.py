"""Re-reads a kept VM job (``campaign.py --keep`` / ``crosscheck --keep``) with the current
collector and prints or writes the comparison, without running the VM again: for a change
of the kernel-side estimators. The simulator side is rerun (it is deterministic).

    .venv/bin/python benchmarks/crosscheck/recollect.py CASE[_TAG] [--write]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import aqmlab
from aqmlab.linux.collect import collect
from aqmlab.linux.crosscheck import compare, render, run_sim, to_json, verdict
from aqmlab.linux.translate import translate
from aqmlab.result import Result

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case", help="results/CASE.toml and results/raw/CASE/ (kept job)")
    ap.add_argument("--write", action="store_true", help="rewrite results/CASE.json (keeps its engine timing)")
    a = ap.parse_args()
    toml, raw = RESULTS / f"{a.case}.toml", RESULTS / "raw" / a.case / "out"
    if not raw.is_dir():
        sys.exit(f"no kept job in {raw}")
    sc = aqmlab.load_scenario(toml)
    plan = sc.validate()
    tr = translate(sc.to_dict(), plan)
    old = json.loads((RESULTS / f"{a.case}.json").read_text()) if (RESULTS / f"{a.case}.json").is_file() else {"engine": {}}
    seed = plan.get("seed") or 1
    rawd, info = collect(raw, tr, seed=seed, wall_seconds=float(old["engine"].get("wall_seconds") or 0.0))
    for k in ("kernel", "icount_shift", "memory_mb", "wall_seconds", "overhead"):
        if k in old["engine"]:
            info[k] = old["engine"][k]
    lin = Result(rawd, sc)
    lin.engine_info = info
    sim = run_sim(sc)
    rows = compare(sim, lin)
    from rich.console import Console

    Console().print(render(rows, title=f"{a.case} (re-collected)"))
    if a.write:
        from aqmlab.cli import _finite

        d = {"scenario": sc.name, "agree": verdict(rows), "engine": _finite(info), "warnings": lin.warnings, "rows": to_json(rows)}
        (RESULTS / f"{a.case}.json").write_text(json.dumps(d, allow_nan=False, default=lambda v: None) + "\n")


if __name__ == "__main__":
    main()
