"""Offloads on and off, both engines: for each named case, the stored kernel runs with the
veths' offloads off (results/CASE.json) and on (results/CASE_gso.json, the case with
`[tcp] gso = "on"`, which the Linux engine turns into TSO/GSO/GRO on), against the
simulator with GSO off, GSO on (TCP Small Queues on), GSO on without TSQ, and GSO on with
GRO at the routers. Prints a Markdown table of the bottleneck's mean sojourn (the kernel's
from CoDel's ldelay where it has one), drops per second after the warm-up and whole-run
drops.

    nice .venv/bin/python benchmarks/crosscheck/offloads.py bbr1_codel tcp4_fifo
"""

from __future__ import annotations

import argparse
import json
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
QUEUE = "bottleneck_up"
METRICS = ("sojourn mean ms", "drops after warm-up /s", "dropped (whole run)")


def kernel(path: Path) -> dict[str, float] | None:
    if not path.exists():
        return None
    d = json.loads(path.read_text())
    rows = {r["metric"]: r["linux"] for r in d["rows"] if r["entity"] == QUEUE}
    out = {m: rows[m] for m in METRICS if m in rows}
    # the engine's Little's-law estimate counts skbs as packets, which GSO skbs are not:
    # CoDel's own sojourn of its last packet (ldelay, sampled every bin) where there is one
    if rows.get("sojourn mean ms (kernel ldelay)") is not None:
        out["sojourn mean ms"] = rows["sojourn mean ms (kernel ldelay)"]
    return out


def sim(sc: dict) -> dict[str, float]:
    from aqmlab.linux.crosscheck import compare, run_sim

    r = run_sim(sc)
    return {row.metric: row.sim for row in compare(r, r) if row.entity == QUEUE and row.metric in METRICS}


def variant(sc: dict, tcp: dict, gro: bool = False) -> dict:
    out = json.loads(json.dumps(sc))
    out.setdefault("tcp", {}).pop("gso", None)
    out["tcp"].update(tcp)
    if gro:
        out["dumbbell"]["gro"] = True
    return out


def cell(v: dict[str, float] | None) -> str:
    if not v:
        return "–"
    return " / ".join(f"{v.get(m, float('nan')):.{2 if m != 'dropped (whole run)' else 0}f}" for m in METRICS)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="+")
    a = ap.parse_args()
    print("| case | kernel offloads off | kernel offloads on | sim gso off | sim gso on (TSQ) | sim gso on, no TSQ | sim gso on + GRO |")
    print("|---|---|---|---|---|---|---|")
    for c in a.cases:
        sc = tomllib.loads((RESULTS / f"{c}.toml").read_text())
        sc["tcp"].pop("gso", None)
        cols = [
            kernel(RESULTS / f"{c}.json"),
            kernel(RESULTS / f"{c}_gso.json"),
            sim(variant(sc, {})),
            sim(variant(sc, {"gso": "on"})),
            sim(variant(sc, {"gso": "on", "tsq": False})),
            sim(variant(sc, {"gso": "on"}, gro=True)),
        ]
        print(f"| {c} | " + " | ".join(cell(v) for v in cols) + " |", flush=True)


if __name__ == "__main__":
    main()
