"""The DOCSIS study's ARED run both ways: ns-2's RED (`variant = "ns2"`, what the study
uses) and Linux's RED with the study's old keys (ewma_log 13, gentle, max_p 0.1), on the
`base` experiment (1, 5, 11 FTP flows), 300 s, seeds 1 and 2 (docs/validation.md,
"DOCSIS ARED as ns-2 runs it").

    .venv/bin/python benchmarks/docsis_ared.py [--duration 300s]
"""
from __future__ import annotations

import argparse
import copy

import aqmlab
from aqmlab.study import load_study


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", default="300s")
    ap.add_argument("--seeds", type=int, default=2)
    a = ap.parse_args(argv)
    exp = load_study("docsis-downstream").experiment("base")
    for flows in ["1", "5", "11"]:
        doc = exp.scenario({"scheduler": "ARED", "flows": flows})
        doc["run"]["duration"] = a.duration
        for variant in ["ns2", "linux"]:
            d = copy.deepcopy(doc)
            q = d["docsis"]["downstream_qdisc"]
            if variant == "linux":
                q.pop("variant")
                q.update(probability=0.1, gentle=True, ewma_log=13)
            cells = []
            for seed in range(1, a.seeds + 1):
                r = aqmlab.run(d, seed=seed)
                row = r.queues[r.queues["name"] == "docsis_down"].iloc[0]
                cells.append(
                    f"{row.sojourn_mean * 1e3:6.1f} ms, drop {row.dropped / row.arrivals * 100:5.2f} %, "
                    f"util {row.utilization * 100:5.1f} %"
                )
            print(f"{flows:>2} flows {variant:5s} | " + " | ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
