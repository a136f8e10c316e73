"""Synthetic result stores for the figure, table, report and Flent tests.

The tables have the shapes the runner writes (see :mod:`aqmlab.runner`): ``runs``
(one row per run with ``p_<axis>`` labels and the measures), ``flows``, ``queues``,
``samples`` and ``series`` tagged with run_id/experiment/repetition/seed/p_*. The
numbers are made up but shaped like the studies' results (FIFO bloats, fq_codel
isolates, CoDel's count grows), so that figures and finding checks have something
to show. Nothing here needs the compiled simulator.
"""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pandas as pd

from aqmlab.study import RunSpec, Study, parse_study

STUDY_TOML = """
[study]
name = "synthetic"
title = "Synthetic AQM study"
description = "Made-up numbers shaped like the residential and saturated-TCP studies, for testing the lab's outputs."
repetitions = 3
seed = 7
findings = [
  "FIFO gives high induced latency with high goodput (a plain string, not machine-checked).",
  { text = "fq_codel induces far less latency than FIFO.", check = { experiment = "rrul", measure = "induced_latency", axis = "qdisc", \
lower = "fq_codel", than = "fifo", by = 5 } },
  { text = "CoDel gets more downstream goodput than FIFO (expected to fail here).", check = { experiment = "rrul", measure = \
"goodput_down", axis = "qdisc", higher = "codel", than = "fifo", where = { link = "10/10" } } },
  { text = "Latency ranks fq_codel < codel < fifo.", check = { experiment = "rrul", measure = "induced_latency", axis = "qdisc", order = \
["fq_codel", "codel", "fifo"] } },
  { text = "VoIP loss stays below 5 %.", check = { experiment = "voip", measure = "voip_loss", at_most = 0.05 } },
  { text = "Utilisation grows with the number of flows.", check = { experiment = "saturated", measure = "bottleneck_utilization", axis = \
"flows", trend = "increasing" }, see = "sat-util" },
]

[quick]
repetitions = 2
duration = "10s"

[base]
run = { duration = "30s", warmup = "5s" }
dumbbell = { rate = "10Mbit", delay = "25ms" }

[[experiment]]
name = "rrul"
title = "RRUL: 4 TCP up + 4 down + UDP/ICMP probes"
measures = ["goodput_up", "goodput_down", "induced_latency"]
keep_series = true

  [[experiment.axis]]
  name = "qdisc"
  path = "dumbbell.qdisc"
  values = [ { kind = "fifo", limit = 127 }, { kind = "codel" }, { kind = "fq_codel" } ]

  [[experiment.axis]]
  name = "link"
  [[experiment.axis.values]]
  label = "10/10"
  patch = {}
  [[experiment.axis.values]]
  label = "10/1"
  patch = { dumbbell = { up = { rate = "1Mbit" } } }

  [[experiment.figure]]
  type = "ellipse"
  name = "rrul-ellipse"
  x = ["goodput_down", "goodput_up"]
  y = "induced_latency"
  facet = "link"

  [[experiment.figure]]
  type = "timeseries"
  name = "rrul-transient"
  metric = "rtt"
  flow_kind = ["ping", "udp_rr"]
  minus_base = true
  facet = "link"
  xlim = [0, 25]

  [[experiment.figure]]
  type = "timeseries"
  name = "rrul-goodput"
  metric = "goodput_bps"
  flow_kind = "bulk"
  direction = "down"
  agg = "sum"
  where = { link = "10/10" }

  [[experiment.figure]]
  type = "box"
  name = "rrul-box"
  where = { link = "10/10" }
  panels = [
    { metric = "goodput_bps", flow_kind = "bulk", direction = "down", agg = "sum", label = "download" },
    { metric = "goodput_bps", flow_kind = "bulk", direction = "up", agg = "sum", label = "upload" },
    { metric = "rtt", flow_kind = ["ping", "udp_rr"], minus_base = true, label = "induced latency", logy = true },
  ]

  [[experiment.figure]]
  type = "cdf"
  name = "rrul-ping-cdf"
  metric = "rtt"
  flow_kind = "ping"
  minus_base = true
  logx = true

  [[experiment.table]]
  name = "rrul-latency"
  value = "induced_latency"
  rows = "qdisc"
  cols = "link"
  stat = "mean±sd"

  [[experiment.table]]
  value = "goodput_down"
  rows = "qdisc"
  cols = "link"
  stat = "median"

[[experiment]]
name = "voip"
measures = ["voip_loss", "voip_owd"]

  [[experiment.axis]]
  name = "qdisc"
  path = "dumbbell.qdisc"
  values = [ { kind = "fifo" }, { kind = "fq_codel" } ]

  [[experiment.figure]]
  type = "cdf"
  name = "voip-owd-cdf"
  metric = "owd"
  flow_kind = "voip"
  minus_base = true
  resample = 0.2

  [[experiment.table]]
  value = "voip_loss"
  rows = "qdisc"
  stat = "mean"

[[experiment]]
name = "rtt_fair"
measures = ["jain"]

  [[experiment.axis]]
  name = "qdisc"
  path = "dumbbell.qdisc"
  values = [ { kind = "fifo" }, { kind = "codel" }, { kind = "fq_codel" } ]

  [[experiment.figure]]
  type = "bar"
  y = "jain"

  [[experiment.figure]]
  type = "bar"
  source = "flows"
  y = "goodput_bps"
  flow_kind = "bulk"
  hue = "flow"

  [[experiment.figure]]
  type = "flows_vs_rtt"

[[experiment]]
name = "saturated"
measures = ["bottleneck_utilization", "queue:bottleneck_down.sojourn_mean"]
keep_series = true
repetitions = 2

  [[experiment.axis]]
  name = "qdisc"
  path = "dumbbell.qdisc"
  values = [ { kind = "codel" }, { kind = "pie" } ]

  [[experiment.axis]]
  name = "flows"
  path = "flow.0.count"
  values = [1, 4, 16]

  [[experiment.figure]]
  type = "state_trace"
  where = { flows = "16" }

  [[experiment.figure]]
  type = "drop_rate"
  facet = "flows"

  [[experiment.figure]]
  type = "queue_delay"
  windows = [2, 12]
  window = 0.5
  where = { flows = "4" }

  [[experiment.figure]]
  type = "line"
  name = "sat-util"
  x = "flows"
  y = "bottleneck_utilization"

  [[experiment.figure]]
  type = "state_trace"
  name = "sat-state-by-flows"
  metrics = ["count", "p"]
  group = "qdisc"
  facet = "flows"

  [[experiment.figure]]
  type = "line"
  name = "sat-util-diagonal"
  x = "flows"
  y = "bottleneck_utilization"
  diagonal = "y = x"

  [[experiment.figure]]
  type = "state_trace"
  name = "no-such-trace"
  metrics = ["nonexistent"]

  [[experiment.table]]
  value = "queue:bottleneck_down.sojourn_mean"
  rows = "qdisc"
  cols = "flows"
"""

LAT = {"fifo": 0.095, "codel": 0.012, "pie": 0.018, "fq_codel": 0.002}
TAGS = ("run_id", "experiment", "repetition", "seed")


def _tag(df: pd.DataFrame, spec: RunSpec) -> pd.DataFrame:
    ident = {"run_id": spec.run_id, "experiment": spec.experiment, "repetition": spec.repetition, "seed": spec.seed}
    ident |= {f"p_{k}": v for k, v in spec.params.items()}
    df = df.copy()
    for k, v in reversed(list(ident.items())):
        df.insert(0, k, v)
    return df


def _flow(name, kind, src, dst, goodput, base_rtt, dur, **extra):
    return {"name": name, "kind": kind, "group": 0, "src": src, "dst": dst, "start": 0.0, "stop": dur,
            "sent_pkts": 1000, "delivered_pkts": 990, "lost_pkts": 10, "goodput_bps": goodput,
            "base_rtt": base_rtt, **extra}


def _long(kind, entity, metric, t, v):
    return pd.DataFrame({"kind": kind, "entity": entity, "metric": metric, "t": np.asarray(t, float), "value": np.asarray(v, float)})


def _rrul(spec: RunSpec, rng, dur=30.0):
    q, link = spec.params["qdisc"], spec.params["link"]
    lat = LAT[q] * rng.uniform(0.85, 1.15)
    up_rate = 1e6 if link == "10/1" else 10e6
    base = 0.05
    good_down = 10e6 * {"fifo": 0.93, "codel": 0.90, "fq_codel": 0.94}[q] * rng.uniform(0.97, 1.0)
    if link == "10/1" and q == "fifo":
        good_down *= 0.7  # upstream ACKs dropped
    good_up = up_rate * 0.9 * rng.uniform(0.95, 1.0)
    flows, samples, series = [], [], []
    t_bins = np.arange(0, dur, 1.0)
    for d, total, host in (("up", good_up, "client0"), ("down", good_down, "server0")):
        for i in range(4):
            name = f"bulk{0 if d == 'up' else 1}.{i}"
            share = total / 4 * rng.uniform(0.9, 1.1)
            dst = "server0" if host == "client0" else "client0"
            flows.append(_flow(name, "bulk", host, dst, share, base, dur))
            ramp = np.minimum(1.0, (t_bins + 1) / 3)
            series.append(_long("flow", name, "goodput_bps", t_bins, share * ramp * rng.uniform(0.9, 1.1, t_bins.size)))
    t = np.arange(0.0, dur, 0.2)
    # transient: latency climbs over the first seconds; CoDel-like schemes bring it down later
    shape = np.where(t < 2, t / 2, 1.0)
    if q == "codel":
        shape = shape * (1 + 4 * np.exp(-np.maximum(t - 2, 0) / 3))
    for name, kind in (("ping2", "ping"), ("udp_rr3", "udp_rr")):
        rtt = base + lat * shape * rng.uniform(0.6, 1.4, t.size)
        flows.append(_flow(name, kind, "client0", "server0", 0.0, base, dur, rtt_mean=float(rtt.mean()), loss_rate=0.0))
        samples.append(_long("flow", name, "rtt", t + 0.01, rtt))
    runs = {
        "goodput_up": good_up,
        "goodput_down": good_down,
        "induced_latency": float(np.mean([s["value"].mean() for s in samples]) - base),
    }
    queues = [
        {"name": n, "qdisc": q, "utilization": u, "sojourn_mean": lat} for n, u in (("bottleneck_up", 0.97), ("bottleneck_down", 0.95))
    ]
    return runs, flows, queues, samples, series


def _voip(spec: RunSpec, rng, dur=30.0):
    q = spec.params["qdisc"]
    base = 0.05
    sent = np.arange(0.0, dur, 0.02)  # one packet every 20 ms
    owd = base / 2 + LAT[q] * (1 + 0.3 * np.sin(sent / 2)) * rng.uniform(0.9, 1.1, sent.size)
    lost = rng.uniform(size=sent.size) < {"fifo": 0.02, "fq_codel": 0.001}[q]
    sent, owd = sent[~lost], owd[~lost]
    t = sent + owd  # samples are taken on arrival
    loss = float(lost.mean())
    flows = [
        _flow(
            "voip0", "voip", "client0", "server0", 64e3, base, dur, owd_mean=float(owd.mean()), loss_rate=loss, jitter=0.002, r_value=80.0
        ),
        _flow("bulk1", "bulk", "client0", "server0", 9e6, base, dur),
    ]
    samples = [_long("flow", "voip0", "owd", t, owd)]
    return {"voip_loss": loss, "voip_owd": float(owd.mean())}, flows, [], samples, []


def _rtt_fair(spec: RunSpec, rng, dur=30.0):
    q = spec.params["qdisc"]
    rtts = [0.01, 0.05, 0.2, 0.5]
    if q == "fq_codel":
        w = np.ones(4)
    else:
        w = 1 / np.array(rtts) ** (0.5 if q == "fifo" else 1.0)
    g = 10e6 * w / w.sum() * rng.uniform(0.9, 1.1, 4)
    flows = [_flow(f"bulk{i}", "bulk", f"client{i}", f"server{i}", g[i], rtts[i], dur) for i in range(4)]
    jain = float(g.sum() ** 2 / (4 * (g * g).sum()))
    return {"jain": jain}, flows, [], [], []


def _saturated(spec: RunSpec, rng, dur=20.0):
    q, n = spec.params["qdisc"], int(spec.params["flows"])
    util = {1: 0.88, 4: 0.93, 16: 0.97}[n] * rng.uniform(0.99, 1.01)
    samples, series = [], []
    # per-packet sojourn (~830 packets/s at 10 Mbit/s) with drop events
    t = np.sort(rng.uniform(0, dur, int(dur * 830)))
    target = 0.005 if q == "codel" else 0.016
    soj = np.abs(target * (1 + 0.02 * n) + 0.004 * np.sin(t * 3) + rng.normal(0, 0.002, t.size))
    soj[t < 3] *= 6  # start-up burst
    samples.append(_long("queue", "bottleneck_down", "sojourn", t, soj))
    drops = np.sort(rng.uniform(0, dur, int(dur * 5 * n ** 0.5)))
    samples.append(_long("queue", "bottleneck_down", "drop", drops, np.ones(drops.size)))
    if q == "codel":
        samples.append(_long("queue", "bottleneck_down", "count", drops, np.arange(1, drops.size + 1)))
    else:
        tp = np.arange(0, dur, 0.016)
        samples.append(_long("queue", "bottleneck_down", "p", tp, 0.01 * n ** 0.5 * (1 - np.exp(-tp / 2))))
    tb = np.arange(0, dur, 1.0)
    series.append(_long("queue", "bottleneck_down", "drops", tb, np.histogram(drops, bins=np.r_[tb, dur])[0]))
    series.append(_long("queue", "bottleneck_down", "sojourn_mean", tb, [soj[(t >= a) & (t < a + 1)].mean() for a in tb]))
    flows = [_flow(f"bulk0.{i}", "bulk", "client0", "server0", 10e6 * util / n, 0.01, dur) for i in range(n)]
    queues = [{"name": "bottleneck_down", "qdisc": q, "utilization": util, "sojourn_mean": float(soj.mean()),
               "sojourn_p99": float(np.quantile(soj, 0.99)), "drops_early": drops.size}]
    return {"bottleneck_utilization": util, "queue:bottleneck_down.sojourn_mean": float(soj.mean())}, flows, queues, samples, series


GENERATORS = {"rrul": _rrul, "voip": _voip, "rtt_fair": _rtt_fair, "saturated": _saturated}


def write_store(out: pathlib.Path, text: str = STUDY_TOML, quick: bool = False, only: list[str] | None = None) -> Study:
    """Writes a synthetic store for `text` under `out` (same layout as the runner) and
    returns the parsed study."""
    study = parse_study(text, quick=quick)
    out.mkdir(parents=True, exist_ok=True)
    (out / "study.toml").write_text(text)
    (out / "provenance.json").write_text(json.dumps({
        "study": study.name, "quick": quick, "quick_note": study.quick_note,
        "aqmlab_version": "0.0.0-test", "started": "2026-01-02T03:04:05+00:00"}))
    for spec in study.runs(only):
        rng = np.random.default_rng(int(spec.run_id[:8], 16))
        measures, flows, queues, samples, series = GENERATORS[spec.experiment](spec, rng)
        ident = {"run_id": spec.run_id, "experiment": spec.experiment, "repetition": spec.repetition, "seed": spec.seed}
        row = (
            ident
            | {f"p_{k}": v for k, v in spec.params.items()}
            | measures
            | {"events": 1000, "wall_seconds": 0.5 + 0.01 * spec.repetition, "sim_wall_seconds": 0.4}
        )
        tables = {"flows": pd.DataFrame(flows), "queues": pd.DataFrame(queues),
                  "samples": pd.concat(samples, ignore_index=True) if samples else None,
                  "series": pd.concat(series, ignore_index=True) if series else None}
        exp = study.experiment(spec.experiment)
        for name, df in tables.items():
            if df is None or df.empty:
                continue
            if name == "series" and not exp.keep_series:
                continue
            d = out / name
            d.mkdir(exist_ok=True)
            _tag(df, spec).to_parquet(d / f"{spec.run_id}.parquet", index=False)
        (out / "runs").mkdir(exist_ok=True)
        pd.DataFrame([row]).to_parquet(out / "runs" / f"{spec.run_id}.parquet", index=False)
    return study
