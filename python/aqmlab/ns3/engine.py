"""The ns-3 engine: runs a scenario on ns-3.44 (the ``aqmlab-ns3`` program that
``aqmlab setup ns3`` compiles) and returns an :class:`aqmlab.Result` with the
simulator's tables and columns.

Measurement (docs/ns3-engine.md lists every column and where it comes from):

- queues: the root queue disc of each link direction: its statistics (``QueueDisc::Stats``:
  received, dropped before enqueue / after dequeue by reason, dequeued, marked by reason)
  for the whole run, transmissions (the device's ``PhyTxEnd``) and every dequeued packet's
  sojourn time (the queue disc's ``SojournTime`` trace) after the warm-up;
- flows: bytes handed to the receiving application (goodput), the senders' entries into
  fast recovery and RTO recovery (``CongState``), probe round trips, CBR one-way delays;
- what ns-3 does not count the way the simulator does is NaN.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from aqmlab._longtable import LongTable, probe_summary, stats
from aqmlab.errors import AqmlabError, ScenarioError
from aqmlab.ns3.translate import translate
from aqmlab.result import Result
from aqmlab.scenario import load_scenario
from aqmlab.schema import drop_reasons, flow_columns, mark_reasons, queue_columns, raw_result

__all__ = ["run", "run_ns3", "available", "check", "program", "Ns3EngineError", "NOT_INSTALLED"]

NAN = float("nan")
NOT_INSTALLED = "ns3 is not installed: run aqmlab setup ns3"


class Ns3EngineError(AqmlabError):
    """Raised when the ns-3 engine cannot run a scenario for a reason other than its content."""


def cache_dir() -> Path:
    return Path(os.environ.get("AQMLAB_NS3_CACHE", str(Path.home() / ".cache" / "aqmlab" / "ns3")))


def program() -> tuple[Path, str] | None:
    """The ``aqmlab-ns3`` program to run and which ns-3 build it links: the one built
    against ns-3's release profile when setup-ns3.sh made it, else the wheel's."""
    d = cache_dir()
    for name, build in (("aqmlab-ns3-release", "release"), ("aqmlab-ns3", "wheel")):
        p = d / name
        if p.is_file() and os.access(p, os.X_OK):
            return p, build
    return None


def available() -> str | None:
    """None when the engine's program is installed, else how to install it."""
    return None if program() is not None else NOT_INSTALLED


def check(scenario: Any) -> list[str]:
    """The keys of ``scenario`` the engine cannot express, as ``"KEY: why"`` naming the
    engine (empty: it can run it). Only the first is found: the translation stops there."""
    sc = load_scenario(scenario)
    try:
        translate(sc.to_dict(), sc.validate())
    except ScenarioError as e:
        return [str(e)]
    return []


# ---------------------------------------------------------------------------------------
# the result


def _reasons(st: dict) -> tuple[dict[str, float], dict[str, float]]:
    """ns-3's drop and mark reason strings → the simulator's drop and mark reasons."""
    drops: dict[str, float] = {}
    marks: dict[str, float] = {}
    for m in ("drops_before", "drops_after"):
        for reason, n in st[m].items():
            r = reason.lower()
            if "target exceeded" in r:
                key = "codel"
            elif "unforced" in r:
                key = "early"
            elif "forced" in r:
                key = "forced"
            elif "overlimit" in r and "fq" not in r and m == "drops_before":
                key = "overlimit"
            else:
                key = "overlimit"
            drops[key] = drops.get(key, 0.0) + n
    for reason, n in st["marks"].items():
        r = reason.lower()
        key = (
            "ce_threshold"
            if "ce threshold" in r
            else "codel"
            if "target exceeded" in r
            else "early"
            if "unforced" in r
            else "forced"
            if "forced" in r
            else "early"
        )
        marks[key] = marks.get(key, 0.0) + n
    return drops, marks


def collect(out: Path, job: dict, *, seed: int, wall_seconds: float, build: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The raw result dict that :class:`aqmlab.Result` takes, and the engine's information,
    from the program's output directory."""
    res = json.loads((out / "result.json").read_text())
    dur, warm, binw = job["duration"], job["warmup"], job["bin"]
    nbins = max(1, math.ceil(dur / binw - 1e-9))
    span = dur - warm
    series, samples = LongTable(), LongTable()

    # -- flows
    kinds: list[str] = []
    for f in job["flows"]:
        if f["kind"] not in kinds:
            kinds.append(f["kind"])
    cols = flow_columns(kinds)
    fl: dict[str, list] = {c: [] for c in cols}
    groups = job.get("groups", {})
    for i, (f, r) in enumerate(zip(job["flows"], res["flows"])):
        row: dict[str, Any] = dict.fromkeys(cols, NAN)
        row.update(
            id=i,
            name=f["name"],
            kind=f["kind"],
            group=groups.get(f["name"], 0),
            src=job["nodes"][f["src"]],
            dst=job["nodes"][f["dst"]],
            start=f["start"],
            stop=f["stop"],
        )
        a, b = max(f["start"], warm), min(f["stop"], dur)
        if f["kind"] in ("bulk", "cbr"):
            row["goodput_bps"] = r["rx_window"] * 8 / (b - a) if b > a else 0.0
            row["delivered_bytes"] = float(r["rx_total"])
            # bulk: what the application wrote is not what TCP sent; cbr: datagrams' payload
            row["sent_bytes"] = float(r["tx_bytes"]) if f["kind"] == "cbr" else NAN
            for k in range(nbins):
                series.push(0, i, "goodput_bps", k * binw, r["bin_rx"][k] * 8 / binw if k < len(r["bin_rx"]) else NAN)
        if f["kind"] == "bulk":
            for key, metric in (("tr_cwnd", "cwnd"), ("tr_ssthresh", "ssthresh"), ("tr_srtt", "srtt")):
                for t, v in r.get(key, []):
                    samples.push(0, i, metric, t, v)
            row["fast_recoveries"] = float(r["recoveries"])
            row["rtos"] = float(r["rtos"])
            if f["bytes"]:
                row["completion_time"] = r["completion"] if r["completion"] >= 0 else NAN
        elif f["kind"] == "cbr":
            row["sent_pkts"] = float(r["tx_pkts"])
            row["delivered_pkts"] = float(r["rx_pkts"])
            row["datagrams_sent"] = float(r["tx_pkts"])
            row["loss_rate"] = 1 - r["rx_warm"] / r["sent_warm"] if r["sent_warm"] else NAN
            for t, v in r.get("owd_samples", []):
                samples.push(0, i, "owd", t, v)
            owd = np.asarray(r["owd"], dtype=float)
            row["owd_mean"] = float(owd.mean()) if len(owd) else NAN
            row["owd_p99"] = float(np.quantile(owd, 0.99)) if len(owd) else NAN
        else:
            sent = r["probe_sent"]
            keep = []
            got_warm = 0
            for seq, rtt in r["rtt"]:
                t_send = sent[int(seq)]
                samples.push(0, i, "rtt", t_send + rtt, rtt)
                if t_send >= warm:
                    keep.append(rtt)
                    got_warm += 1
            sent_warm = sum(1 for t in sent if t >= warm)
            row.update(probe_summary(len(sent), (1 - got_warm / sent_warm) if sent_warm else NAN, keep))
            row["sent_pkts"] = float(len(sent))
            row["delivered_pkts"] = float(r["rx_pkts"])
        for c in cols:
            fl[c].append(row[c])

    # -- queues
    qcols = queue_columns()
    q: dict[str, list] = {c: [] for c in qcols}
    kind_of = {}
    for ln in job["links"]:
        for side in ("ab", "ba"):
            kind_of[ln[side]["queue"]] = (
                ln[side]["qdisc"]["type"],
                ln[side]["rate_bps"],
                ln["delay"],
                ln["a"] if side == "ab" else ln["b"],
                ln["b"] if side == "ab" else ln["a"],
            )
    hist_q, hist_lo, hist_hi, hist_n = [], [], [], []
    for j, name in enumerate(job["queues"]):
        r = res["queues"][j]
        qtype, rate, delay, src, dst = kind_of[j]
        end = r["end"]
        row = dict.fromkeys(qcols, NAN)
        row.update(
            id=j,
            name=name,
            **{"from": job["nodes"][src]},
            to=job["nodes"][dst],
            qdisc=job["qdisc_kinds"][j],
            rate_bps=int(rate),
            delay=delay,
            trace_vars="",
            lower="wire",
        )
        row.update(
            arrivals=float(end["received"]),
            enqueued=float(end["received"] - end["dropped_before_enqueue"]),
            dequeued=float(end["dequeued"] - end["dropped_after_dequeue"]),
            dropped=float(end["dropped"]),
            marked=float(end["marked"]),
        )
        row.update(tx_pkts=float(r["tx_pkts_warm"]), tx_bytes=float(r["tx_bytes_warm"]))
        # busy fraction: every transmitted frame (IP + 2 bytes PPP) at the link rate
        row["utilization"] = min(1.0, (r["tx_bytes_warm"] + 2 * r["tx_pkts_warm"]) * 8 / (rate * span)) if span > 0 else NAN
        drops, marks = _reasons(end)
        for dr in drop_reasons():
            row[f"drops_{dr}"] = drops.get(dr, 0.0)
        for mr in mark_reasons():
            row[f"marks_{mr}"] = marks.get(mr, 0.0)
        soj = np.fromfile(out / f"sojourn.{j}.f64", dtype="<f8") if (out / f"sojourn.{j}.f64").exists() else np.zeros(0)
        s = stats(soj)
        row.update(
            sojourn_n=float(len(soj)),
            sojourn_mean=s["mean"],
            sojourn_p50=s["p50"],
            sojourn_p90=s["p90"],
            sojourn_p99=s["p99"],
            sojourn_max=s["max"],
        )
        if len(soj):
            # a histogram for the CDF figures: 200 log-spaced bins from 1 us to the maximum
            hi = max(float(soj.max()), 2e-6) * 1.0001
            edges = np.concatenate([[0.0], np.geomspace(1e-6, hi, 200)])
            cnt, _ = np.histogram(soj, bins=edges)
            for nz in np.nonzero(cnt)[0]:
                k = int(nz)
                hist_q.append(j)
                hist_lo.append(edges[k])
                hist_hi.append(edges[k + 1])
                hist_n.append(int(cnt[k]))
        for k in range(nbins):
            n = r["bin_sojourn_n"][k]
            series.push(1, j, "tx_bps", k * binw, r["bin_tx_bytes"][k] * 8 / binw)
            series.push(1, j, "drops", k * binw, r["bin_drops"][k])
            series.push(1, j, "backlog_max", k * binw, r["bin_backlog_max"][k])
            series.push(1, j, "sojourn_mean", k * binw, r["bin_sojourn_sum"][k] / n if n else NAN)
        for c in qcols:
            q[c].append(row[c])

    names = list(dict.fromkeys(series.names + samples.names))
    warnings = [f"ns3 engine: {n}" for n in job["notes"]]
    raw = raw_result(
        version=_version(),
        seed=seed,
        duration=dur,
        warmup=warm,
        bin=binw,
        flows=fl,
        queues=q,
        sojourn_hist={
            "queue": np.asarray(hist_q, np.uint32),
            "low": np.asarray(hist_lo, float),
            "high": np.asarray(hist_hi, float),
            "count": np.asarray(hist_n, np.uint64),
        },
        series=series.arrays(names),
        samples=samples.arrays(names),
        metric_names=names,
        events=int(res.get("events", 0)),
        wall_seconds=wall_seconds,
        warnings=warnings,
    )
    info = {
        "engine": "ns3",
        "ns3": "3.44",
        "build": build,
        "version": f"ns-3.44 ({build} build)",
        "events": int(res.get("events", 0)),
        "wall_seconds": wall_seconds,
        "simulate_seconds": float(res.get("wall_seconds", NAN)),
        "virtual_seconds": dur,
        "notes": list(job["notes"]),
    }
    return raw, info


def _version() -> str:
    from aqmlab import _core

    return f"ns-3.44 via aqmlab {getattr(_core, '__version__', '')}".strip()


# ---------------------------------------------------------------------------------------
# running


def run(
    scenario: Any, seed: int | None = None, *, log: Any = None, keep: str | os.PathLike[str] | None = None, timeout: float | None = None
) -> Result:
    """The registry's entry point (:mod:`aqmlab.engines`): :func:`run_ns3`."""
    if log is not None:
        p = program()
        log(f"ns3 engine: running ns-3.44 ({p[1] if p else '?'} build)")
    return run_ns3(scenario, seed, keep=keep, timeout=timeout)


def run_ns3(scenario: Any, seed: int | None = None, *, keep: str | os.PathLike[str] | None = None, timeout: float | None = None) -> Result:
    """Runs ``scenario`` on ns-3.44; returns a :class:`Result` whose ``engine_info`` says
    which ns-3 build ran and what differs from the simulator (``notes``).

    ``keep``: a directory to keep the job (``job.json`` and the program's output) in.
    """
    sc = load_scenario(scenario)
    plan = sc.validate(seed=seed, spread=True)
    seed = seed if seed is not None else int(plan["seed"])
    job = translate(sc.to_dict(), plan)  # an unsupported key fails here, before any run
    job["seed"] = seed
    job["groups"] = {f["name"]: f["group"] for f in plan["flows"]}
    job["qdisc_kinds"] = [ln["qdisc"] for ln in plan["links"]]
    prog = program()
    if prog is None:
        raise Ns3EngineError(NOT_INSTALLED)
    if timeout is None:
        # generous: the wheel's build simulates a 10 Mbit/s dumbbell at 5-10x real time here
        timeout = float(os.environ.get("AQMLAB_NS3_TIMEOUT", str(600 + 10 * job["duration"] * max(1, len(job["flows"]) / 4))))
    exe, build = prog
    d = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="aqmlab-ns3-"))
    d.mkdir(parents=True, exist_ok=True)
    out = d / "out"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    (d / "job.json").write_text(json.dumps(job, indent=1))
    t = time.monotonic()
    try:
        try:
            p = subprocess.run([str(exe), str(d / "job.json"), str(out)], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Ns3EngineError(f"ns-3 did not finish within {timeout:g} s") from None
        if p.returncode != 0 or not (out / "result.json").exists():
            tail = (p.stderr or p.stdout).strip()[-800:]
            raise Ns3EngineError(f"ns-3 ({exe.name}) failed with exit status {p.returncode}: {tail}")
        raw, info = collect(out, job, seed=seed, wall_seconds=time.monotonic() - t, build=build)
    finally:
        if not keep:
            shutil.rmtree(d, ignore_errors=True)
    info["program"] = str(exe)
    r = Result(raw, sc)
    r.engine_info = info
    return r
