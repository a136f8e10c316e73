#!/usr/bin/env python3
"""Run-to-run spread of the shipped examples: every examples/*.toml with seeds 1..N
(default 5, noise as the example says, i.e. on by default) and, per example, the
coefficient of variation (sd / mean over the seeds) of each flow's goodput and mean delay.

    .venv/bin/python benchmarks/seed_spread.py [--seeds 5] [--markdown] [EXAMPLE ...]

Mean delay of a flow: TCP flows `srtt_mean` (smoothed RTT), UDP flows (cbr, voip, ...)
`owd_mean` (one-way); latency probes (ping, udp_rr) their mean RTT. Flows whose goodput is
zero in every seed (latency probes) count for delay only. A table row gives, over the flows of
one example, the median and the largest per-flow CoV, plus the CoV of the run's total
goodput. A CoV of exactly 0 means the seeds produced identical numbers.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np
import pandas as pd

import aqmlab

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _cov(x: pd.Series) -> float:
    x = x.astype(float).dropna()
    if len(x) < 2 or x.mean() == 0:
        return float("nan")
    return float(x.std(ddof=1) / abs(x.mean()))


def spread(path: pathlib.Path, seeds: int) -> dict:
    rows = []
    for s in range(1, seeds + 1):
        f = aqmlab.run(path, seed=s).flows.copy()
        delay = pd.Series(np.nan, index=f.index)
        for col in ("srtt_mean", "owd_mean", "rtt_mean"):  # TCP, UDP, probes
            if col in f.columns:
                delay = delay.fillna(f[col])
        f["delay"] = delay
        f["seed"] = s
        rows.append(f[["seed", "name", "goodput_bps", "delay"]])
    df = pd.concat(rows)
    by = df.groupby("name")
    carrying = [n for n, x in by["goodput_bps"] if x.max() > 0]
    cov_g = pd.Series({n: _cov(x) for n, x in by["goodput_bps"] if n in carrying}, dtype=float).dropna()
    cov_d = pd.Series({n: _cov(x) for n, x in by["delay"]}, dtype=float).dropna()
    total = df.groupby("seed")["goodput_bps"].sum()
    return {
        "example": path.stem,
        "flows": int(df["name"].nunique()),
        "goodput_cov_median": float(cov_g.median()) if len(cov_g) else float("nan"),
        "goodput_cov_max": float(cov_g.max()) if len(cov_g) else float("nan"),
        "delay_cov_median": float(cov_d.median()) if len(cov_d) else float("nan"),
        "delay_cov_max": float(cov_d.max()) if len(cov_d) else float("nan"),
        "total_goodput_cov": _cov(total),
        "identical": bool(len(cov_g) and (cov_g == 0).all() and (cov_d == 0).all()),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("examples", nargs="*", type=pathlib.Path)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args(argv)
    paths = a.examples or sorted((ROOT / "examples").glob("*.toml"))
    res = [spread(p, a.seeds) for p in paths]
    cols = ["example", "flows", "goodput_cov_median", "goodput_cov_max", "delay_cov_median", "delay_cov_max", "total_goodput_cov"]
    if a.markdown:
        print("| example | flows | goodput CoV median / max % | mean-delay CoV median / max % | total goodput CoV % |")
        print("| --- | --- | --- | --- | --- |")
        for r in res:
            pct = [f"{100 * r[k]:.2g}" for k in cols[2:]]
            print(f"| {r['example']} | {r['flows']} | {pct[0]} / {pct[1]} | {pct[2]} / {pct[3]} | {pct[4]} |")
    else:
        print(pd.DataFrame(res)[cols].to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    bad = [r["example"] for r in res if r["identical"]]
    if bad:
        print(f"identical across seeds: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
