#!/usr/bin/env python3
"""The simulator against ns-2.35 (``--engine ns2``) over several seeds: per scenario the
mean over seeds of each primary metric on both sides and the ratio ns-2 / simulator
(mean ± sd over seeds). The seed moves the flows' start times (``start_spread``) on both
sides; ns-2 is otherwise deterministic.

    python3 benchmarks/crosscheck/ns2_seeds.py benchmarks/crosscheck/ns2/*.toml --seeds 5
    python3 benchmarks/crosscheck/ns2_seeds.py FILE --host-jitter 0s   # both sides without host jitter

Needs ns-2 (scripts/setup-ns2.sh). Metrics of the busiest queue: utilisation, mean sojourn,
drop rate after the warm-up (drops / (transmissions + drops)); of the flows: total
goodput, Jain's index of the bulk goodputs, the largest difference of a flow's share of
the bulk goodput (percentage points), and the mean probe RTT when there are probes.
"""

from __future__ import annotations

import argparse
import math
import statistics as st
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

import aqmlab  # noqa: E402
from aqmlab.crosscheck import drop_rate  # noqa: E402
from aqmlab.engines import ENGINES  # noqa: E402


def metrics(r, queue: str) -> dict[str, float]:
    q = r.queues.set_index("name").loc[queue]
    f = r.flows
    bulk = f[f["kind"] == "bulk"]["goodput_bps"].astype(float)
    m = {
        "utilisation %": 100 * float(q["utilization"]),
        "sojourn mean ms": 1e3 * float(q["sojourn_mean"]),
        "drop rate %": drop_rate(r, queue),
        "goodput Mbit/s": float(f[f["kind"].isin(["bulk", "cbr"])]["goodput_bps"].astype(float).sum()) / 1e6,
    }
    if len(bulk) > 1:
        m["Jain index"] = float(bulk.sum() ** 2 / (len(bulk) * (bulk**2).sum()))
    probes = f[f["kind"] == "ping"]
    if len(probes):
        m["probe rtt mean ms"] = 1e3 * float(probes["rtt_mean"].astype(float).mean())
    return m


def shares(r) -> dict[str, float]:
    b = r.flows[r.flows["kind"] == "bulk"].set_index("name")["goodput_bps"].astype(float)
    return (100 * b / b.sum()).to_dict() if len(b) > 1 else {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--host-jitter", default=None, help="set run.host_jitter on both sides (ns-2 has none: \"0s\")")
    a = ap.parse_args()
    if ENGINES["ns2"].available() is not None:
        sys.exit(ENGINES["ns2"].available())
    for fn in a.files:
        sc = aqmlab.load_scenario(Path(fn))
        d = sc.to_dict()
        if a.host_jitter is not None:
            d.setdefault("run", {})["host_jitter"] = a.host_jitter
        sc = aqmlab.load_scenario(d)
        sims, nss, dshare = [], [], []
        queue = None
        for seed in range(1, a.seeds + 1):
            s = aqmlab.run(sc, seed=seed)
            n = ENGINES["ns2"].run(sc, seed)
            queue = queue or str(s.queues.loc[s.queues["utilization"].astype(float).idxmax(), "name"])
            sims.append(metrics(s, queue))
            nss.append(metrics(n, queue))
            ss, ns = shares(s), shares(n)
            if ss:
                dshare.append(max(abs(ss[k] - ns[k]) for k in ss))
        print(f"{sc.name}  ({queue}, seeds 1-{a.seeds}{', host_jitter ' + a.host_jitter if a.host_jitter else ''})")
        print(f"  {'metric':<20} {'sim':>10} {'ns-2':>10}   ns-2/sim (mean ± sd over seeds)")
        for k in sims[0]:
            xs = [x[k] for x in sims]
            ys = [y[k] for y in nss]
            rat = [y / x for x, y in zip(xs, ys) if x and math.isfinite(x) and math.isfinite(y)]
            sd = st.stdev(rat) if len(rat) > 1 else 0.0
            r = f"{st.mean(rat):.3f} ± {sd:.3f}" if rat else "–"
            print(f"  {k:<20} {st.mean(xs):>10.3f} {st.mean(ys):>10.3f}   {r}")
        if dshare:
            print(f"  {'largest share diff':<20} {'':>10} {'':>10}   {st.mean(dshare):.2f} pt (mean over seeds; max {max(dshare):.2f})")


if __name__ == "__main__":
    main()
