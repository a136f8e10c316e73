"""Bit-identity check of two simulator builds on many scenarios.

Writes the scenario of every parameter combination of every shipped study (quick mode,
first repetition, optional experiments included), plus the examples and the benchmark
scenarios, and runs each through two `aqmlab-bench` binaries with `--digest` (a hash of
the whole run result, as the golden tests compute it). Any scenario whose digests differ
is listed; the exit status is 1 if there is one.

    cargo build --release -p aqmlab-core --bin aqmlab-bench        # the candidate
    .venv/bin/python benchmarks/digest_check.py --base OLD/aqmlab-bench \\
        --new target/release/aqmlab-bench [--jobs 2] [--studies residential,sqm]

`--base` must be a build that has `--digest` (any build from commit be12a1d on).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import pathlib
import subprocess
import sys
import tempfile

from aqmlab.scenario import to_toml
from aqmlab.study import list_studies, load_study

ROOT = pathlib.Path(__file__).resolve().parent.parent


def study_scenarios(names: list[str], out: pathlib.Path) -> list[tuple[pathlib.Path, int]]:
    """One TOML per (study, experiment, parameter combination), with its seed."""
    files = []
    for name in names:
        study = load_study(name, quick=True)
        for e in study.experiments:
            for i, params in enumerate(e.combinations()):
                path = out / f"{name}.{e.name}.{i:03d}.toml"
                path.write_text(to_toml(e.scenario(params)))
                files.append((path, study.seed))
    return files


def digest(binary: str, path: pathlib.Path, seed: int) -> str:
    p = subprocess.run([binary, str(path), str(seed), "--digest"], capture_output=True, text=True)
    if p.returncode != 0:
        return "error: " + (p.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(p.stdout.strip().splitlines()[-1])["digest"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="reference aqmlab-bench binary")
    ap.add_argument("--new", default=str(ROOT / "target/release/aqmlab-bench"), help="candidate binary")
    ap.add_argument("--studies", default=",".join(list_studies()), help="comma-separated study names")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cases = study_scenarios([s for s in a.studies.split(",") if s], pathlib.Path(tmp))
        for d in ("examples", "benchmarks/scenarios"):
            cases += [(p, 1) for p in sorted((ROOT / d).glob("*.toml")) if not p.name.startswith("mem_")]
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            base = list(pool.map(lambda c: digest(a.base, *c), cases))
            new = list(pool.map(lambda c: digest(a.new, *c), cases))
    bad = [(c[0].name, b, n) for c, b, n in zip(cases, base, new) if b != n or b.startswith("error")]
    for name, b, n in bad:
        print(f"DIFFERS {name}: base {b}  new {n}")
    print(f"{len(cases) - len(bad)} of {len(cases)} scenarios identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
