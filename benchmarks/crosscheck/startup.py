"""Whole-run drop counts (start-up included) of the simulator against the stored kernel
results of every campaign case (results/*.json), with the receive window as the
`[tcp] rcv_autotune` settings under comparison: each stored case's scenario is run again on
the simulator (the kernel side is not rerun), at its scheduled starts and, where the
kernel's start lags were recorded, at the kernel's starts. Prints a Markdown table.

    nice .venv/bin/python benchmarks/crosscheck/startup.py                 # off vs linux
    nice .venv/bin/python benchmarks/crosscheck/startup.py tcp16 --tune off linux
"""

from __future__ import annotations

import argparse
import json
import math
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def kernel_drops(d: dict) -> dict[str, float]:
    """The kernel's whole-run drops per measured queue of a stored result."""
    return {r["entity"]: r["linux"] for r in d["rows"] if r["metric"] == "dropped (whole run)" and r["linux"] is not None}


def sim_drops(sc: dict, queues: list[str]) -> dict[str, float]:
    import aqmlab

    q = aqmlab.run(sc).queues.set_index("name")
    return {n: float(q.loc[n, "dropped"]) for n in queues}


def with_tune(sc: dict, tune: str | None) -> dict:
    out = json.loads(json.dumps(sc))
    if tune is not None:
        out.setdefault("tcp", {})["rcv_autotune"] = tune
    return out


def ratio(a: float, b: float) -> str:
    if not (math.isfinite(a) and math.isfinite(b)) or b == 0:
        return "–"
    return f"×{a / b:.2f}"


def main() -> None:
    from aqmlab.linux.crosscheck import with_kernel_starts

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("only", nargs="*", help="case name prefixes (default: every stored case with drops)")
    ap.add_argument("--tune", nargs="+", default=["off", "linux"], help="rcv_autotune values to compare")
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    a = ap.parse_args()
    out = []
    hdr = " | ".join(f"{t} (×kernel)" for t in a.tune)
    print(f"| case | queue | kernel | {hdr} | {' | '.join(f'{t} at kernel starts' for t in a.tune)} |")
    print("|" + "---|" * (3 + 2 * len(a.tune)))
    for p in sorted(RESULTS.glob("*.json")):
        if a.only and not any(p.stem.startswith(o) for o in a.only):
            continue
        d = json.loads(p.read_text())
        kd = kernel_drops(d)
        if not kd:
            continue
        sc = tomllib.loads(p.with_suffix(".toml").read_text())
        lag = (d["engine"].get("start_lag") or {}).get("flows") or {}
        res = {t: sim_drops(with_tune(sc, t), list(kd)) for t in a.tune}
        at = {}
        if lag:
            for t in a.tune:
                ks = with_kernel_starts(with_tune(sc, t), None, lag)
                if ks is not None:
                    at[t] = sim_drops(ks, list(kd))
        for q, k in kd.items():
            cells = [f"{res[t][q]:.0f} ({ratio(res[t][q], k)})" for t in a.tune]
            cells += [f"{at[t][q]:.0f} ({ratio(at[t][q], k)})" if t in at else "" for t in a.tune]
            print(f"| {p.stem} | {q} | {k:.0f} | {' | '.join(cells)} |", flush=True)
            out.append(
                {
                    "case": p.stem,
                    "queue": q,
                    "kernel": k,
                    "sim": {t: res[t][q] for t in a.tune},
                    "at_kernel_starts": {t: at[t][q] for t in at},
                }
            )
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
