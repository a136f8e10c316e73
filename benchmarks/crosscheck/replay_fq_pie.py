"""Offline replay of the simulator's FQ-PIE per-flow law on a captured packet stream.

Part of the Linux-engine cross-check of `fq_pie` (docs/validation.md "FQ-PIE on the kernel").

Input: a kept job with header captures around the queue (``campaign.py CASE --capture
bottleneck_up``; ``results/raw/CASE``). `capture_codel.kernel_trace` pairs each frame that
reached the router with its release by the htb shaper (under htb the release is the
dequeue), or marks it dropped.

The replay runs the per-flow PIE of ``net/sched/sch_fq_pie.c`` + ``net/sched/pie.c`` (6.1),
as the simulator models it, on that stream: each flow's backlog (frame bytes), the
timestamp delay estimate (the dequeued packet's sojourn, 0 when its flow empties), the
burst allowance consumed by the time between a flow's dequeues, the probability update
every ``tupdate`` (all flows; phase unknown, so several phases are tried), and
de-randomisation (``accu_prob``). The kernel's actual verdicts drive the state (a drop
resets the accumulator); for every arrival the replay states the model's drop probability
(0 under a safeguard or below an accumulated 0.85, 1 from 8.5, else p). Their sum is the
number of drops the model expects for this very stream. Arrivals that were dropped while
the model says 0 are listed by the safeguard that spared them.

On a stream logged from the simulator the replay reproduces it exactly (p per update,
drops). On kernel captures it is biased: for single-queue ``sch_pie`` (``--single``), where
the simulator agrees with the kernel closed-loop, it still expects about twice the
kernel's drops (docs/validation.md "FQ-PIE on the kernel"), so its kernel-side numbers do
not by themselves show a difference of rules.

    .venv/bin/python benchmarks/crosscheck/replay_fq_pie.py results/raw/tcp16_fq_pie_cap
"""

from __future__ import annotations

import argparse
import heapq
import json
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path

from capture_codel import kernel_trace

MTU = 1514  # psched_mtu(): dev->mtu + hard_header_len


@dataclass
class Flow:
    q: deque = field(default_factory=deque)  # (arrival s, frame bytes) of queued packets
    backlog: int = 0
    prob: float = 0.0
    qdelay: float = 0.0
    qdelay_old: float = 0.0
    burst: float = 0.150
    dq_tstamp: float | None = None
    accu: float = 0.0


def shift(prob: float) -> float:
    """Linux's auto-tuning divisor of alpha and beta at probability ``prob``."""
    div = 1.0
    if prob < 0.1:
        div = 2.0
        power = 100.0
        while prob < 1.0 / power and power <= 1e6:
            div *= 4.0
            power *= 10.0
    return div


def update(f: Flow, target: float, alpha: float, beta: float) -> None:
    """``pie_calculate_probability`` in timestamp mode."""
    qdelay, old = f.qdelay, f.qdelay_old
    update_prob = not (qdelay == 0.0 and f.backlog != 0)
    d = shift(f.prob)
    delta = alpha / d * (qdelay - target) + beta / d * (qdelay - old)
    if delta > 0.02 and f.prob >= 0.1:
        delta = 0.02
    if qdelay > 0.250:
        delta += 0.02
    f.prob += delta
    if f.prob < 0.0:
        f.prob = 0.0
    if qdelay == 0.0 and old == 0.0 and update_prob:
        f.prob -= f.prob / 64.0
    if qdelay < target / 2 and old < target / 2 and f.prob == 0.0:
        f.burst, f.dq_tstamp, f.accu = 0.150, None, 0.0
    f.qdelay_old = qdelay


def replay(tr, tupdate: float, phase: float, target: float, alpha: float, beta: float,
           t_from: float, t_to: float, watch: str | None = None, first: float = 0.0,
           single: bool = False) -> dict:
    ev: list[tuple[float, int, int]] = []  # (time, order, packet index); order 0 = dequeue
    for i, p in enumerate(tr.packets):
        ev.append((p.arr, 1, i))
        if p.call is not None:
            ev.append((p.call, 0, i))
    heapq.heapify(ev)
    flows: dict[str, Flow] = {}
    tick = phase
    while tick < first:
        tick += tupdate
    expected = 0.0
    actual = 0
    spared = Counter()
    sure = Counter()
    trace: list[tuple] = []
    while ev:
        t, kind, i = heapq.heappop(ev)
        while tick <= t:
            for name, f in flows.items():
                update(f, target, alpha, beta)
                if name == watch:
                    trace.append((round(tick, 4), "update", round(f.prob, 5), round(f.qdelay * 1e3, 2), f.backlog, round(f.burst, 3)))
            tick += tupdate
        p = tr.packets[i]
        if p.kind != "data":
            continue
        f = flows.setdefault("all" if single else p.flow, Flow())
        if kind == 0:  # dequeue
            if not f.q:
                continue
            arr, size = f.q.popleft()
            f.backlog -= size
            f.qdelay = (t - arr) if f.backlog > 0 else 0.0
            dt = 0.0 if f.dq_tstamp is None else t - f.dq_tstamp
            f.dq_tstamp = t
            if dt > 0:
                f.burst = max(0.0, f.burst - dt)
            continue
        # arrival: the model's drop probability, then the kernel's verdict
        why = None
        if f.burst > 0:
            why = "burst"
        elif f.qdelay < target / 2 and f.prob < 0.2:
            why = "low_delay"
        elif f.backlog < 2 * MTU:
            why = "two_mtu"
        pm = 0.0
        if why is None:
            f.accu = 0.0 if f.prob == 0 else f.accu + f.prob
            if f.accu >= 8.5:
                pm = 1.0
            elif f.accu >= 0.85:
                pm = min(1.0, f.prob)
            else:
                why = "accu"
        if p.flow == watch:
            trace.append((round(t, 4), "arrival", round(f.prob, 5), f.backlog, why, round(f.accu, 2), "DROP" if p.dropped else ""))
        counted = t_from <= t < t_to
        if counted:
            expected += pm
        if p.dropped:
            f.accu = 0.0
            if counted:
                actual += 1
                if pm == 0.0:
                    spared[why] += 1
        else:
            if counted and pm == 1.0:
                sure[why or "p>=1"] += 1
            f.q.append((t, p.size))
            f.backlog += p.size
    return {"tupdate_ms": tupdate * 1e3, "phase_ms": phase * 1e3, "expected_drops": round(expected, 1),
            "kernel_drops": actual, "kernel_drops_model_spared": dict(spared),
            "kernel_kept_model_sure": dict(sure), "trace": trace}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", type=Path, help="kept job directory (results/raw/CASE)")
    ap.add_argument("--queue", default="bottleneck_up")
    ap.add_argument("--tupdate", type=float, default=16.0, help="ms (HZ=250 rounds 15 ms up to 4 jiffies)")
    ap.add_argument("--phases", type=int, default=4, help="update-timer phases tried (the kernel's is unknown)")
    ap.add_argument("--target", type=float, default=15.0, help="ms")
    ap.add_argument("--windows", default="0,5,10,20,31", help="window edges in s for the expected/actual drop counts")
    ap.add_argument("--watch", default=None, help="print this flow's updates and arrivals (a flow string of the capture)")
    ap.add_argument("--single", action="store_true", help="one queue for all packets (sch_pie: the control run)")
    a = ap.parse_args()
    tr, info = kernel_trace(a.raw, a.queue, shaper="htb")
    edges = [float(x) for x in a.windows.split(",")]
    rows = []
    for k in range(a.phases):
        ph = k * a.tupdate / a.phases * 1e-3
        row = {"phase_ms": ph * 1e3}
        for lo, hi in zip(edges, edges[1:]):
            r = replay(tr, a.tupdate * 1e-3, ph, a.target * 1e-3, 0.125, 1.25, lo, hi, watch=a.watch,
                       single=a.single)
            row[f"{lo:g}-{hi:g}s"] = {"expected": r["expected_drops"], "kernel": r["kernel_drops"],
                                      "kernel_drops_model_spared": r["kernel_drops_model_spared"]}
            if a.watch and k == 0 and lo == edges[0]:
                for x in r["trace"]:
                    print(*x)
        rows.append(row)
    print(json.dumps({"capture": {"unmatched_out": info["unmatched_out"]}, "tupdate_ms": a.tupdate, "replays": rows}, indent=1))


if __name__ == "__main__":
    main()
