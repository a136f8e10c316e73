"""The ns-2 engine: runs a scenario on ns-2.35 and returns an :class:`aqmlab.Result`
with the simulator's tables and columns (docs/engines.md).

Measurement:

- queues: ns-2's ``trace-queue`` of every link logs each packet's arrival (``+``), its
  dequeue for transmission (``-``) and its drop (``d``) with the packet's size and unique
  id, so the counters, utilisation (wire bytes dequeued after the warm-up over the link
  rate) and the per-packet sojourn (dequeue − arrival, over packets dequeued after the
  warm-up, as the simulator's) are exact, not estimated;
- flows: every ``bin`` (and at the end of the warm-up) the script prints each flow's sink
  byte count (in-order bytes for TCP sinks, received bytes for the CBR loss monitor) and
  the TCP sender's counters (data packets, retransmitted packets, timeouts);
- columns ns-2 cannot give (ECN, drop reasons of RED, RTT statistics, ...) are NaN.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from aqmlab import schema
from aqmlab.errors import AqmlabError
from aqmlab.ns2.translate import Ns2Flow, Ns2Queue, Ns2Translation, translate
from aqmlab.ns2.translate import check as check_doc
from aqmlab.result import Result
from aqmlab.scenario import load_scenario

__all__ = ["available", "check", "run", "collect", "parse_queue_trace", "parse_flow_samples", "parse_tcp_trace", "Ns2Error"]

NAN = math.nan
SETUP = "aqmlab setup ns2"


class Ns2Error(AqmlabError):
    """ns-2 did not run the script to its end."""


def ns_binary() -> str | None:
    return os.environ.get("AQMLAB_NS2") or shutil.which("ns")


def available() -> str | None:
    """None when ns-2 (``ns``) is installed."""
    if ns_binary() is None:
        return f"ns2 is not installed: run {SETUP}"
    return None


def check(scenario: Any) -> list[str]:
    """Every key outside the ns-2 subset (docs/engines.md), each naming the key."""
    sc = load_scenario(scenario)
    return check_doc(sc.to_dict(), sc.validate())


# ---------------------------------------------------------------------------------------
# parsing


def parse_queue_trace(text: str) -> dict[str, np.ndarray]:
    """ns-2's trace-queue lines (``EV TIME FROM TO TYPE SIZE FLAGS FID SRC DST SEQ UID``)
    as arrays: ``ev`` (one character), ``t``, ``size``, ``fid``, ``uid``; lines of other
    events than ``+ - d r`` are skipped."""
    ev, t, size, fid, uid = [], [], [], [], []
    for line in text.splitlines():
        p = line.split()
        if len(p) < 12 or p[0] not in ("+", "-", "d", "r"):
            continue
        ev.append(p[0])
        t.append(float(p[1]))
        size.append(int(p[5]))
        fid.append(int(p[7]))
        uid.append(int(p[11]))
    return {
        "ev": np.array(ev, dtype="U1"),
        "t": np.array(t, dtype=float),
        "size": np.array(size, dtype=np.int64),
        "fid": np.array(fid, dtype=np.int64),
        "uid": np.array(uid, dtype=np.int64),
    }


def parse_flow_samples(text: str) -> dict[int, list[tuple[float, ...]]]:
    """The sampler's ``F TIME FLOW SINK_BYTES A B C D`` lines by flow index: (time,
    sink bytes, then the flow's counters)."""
    out: dict[int, list[tuple[float, ...]]] = {}
    for line in text.splitlines():
        p = line.split()
        if len(p) >= 4 and p[0] == "F":
            out.setdefault(int(p[2]), []).append((float(p[1]), *(float(x) for x in p[3:])))
    return out


def parse_pings(text: str) -> tuple[dict[int, list[float]], dict[int, list[tuple[float, float]]]]:
    """The ping log: per flow the echoes' send times (``S FLOW K TIME``) and the replies
    (``R FLOW TIME RTT``: arrival time, ns-2's round trip rounded to 0.1 ms)."""
    sends: dict[int, list[float]] = {}
    replies: dict[int, list[tuple[float, float]]] = {}
    for line in text.splitlines():
        p = line.split()
        if len(p) == 4 and p[0] == "S":
            sends.setdefault(int(p[1]), []).append(float(p[3]))
        elif len(p) == 4 and p[0] == "R":
            replies.setdefault(int(p[1]), []).append((float(p[2]), float(p[3])))
    return sends, replies


def parse_tcp_trace(text: str) -> dict[str, list[tuple[float, float]]]:
    """A TCP agent's variable trace (``TIME SADDR SPORT DADDR DPORT NAME VALUE``, one line
    per change of a traced variable) as (time, value) lists by variable name."""
    out: dict[str, list[tuple[float, float]]] = {}
    for line in text.splitlines():
        p = line.split()
        if len(p) == 7:
            try:
                out.setdefault(p[5], []).append((float(p[0]), float(p[6])))
            except ValueError:
                continue
    return out


def _tcp_samples(f: Ns2Flow, i: int, text: str, samples: _Long) -> None:
    """The simulator's trace samples of a bulk flow from its agent's variable trace:
    ``cwnd`` and ``ssthresh`` in bytes (ns-2 counts segments of ``payload`` bytes), from the
    flow's start (ssthresh after its initial values), ``srtt`` in seconds."""
    tr = parse_tcp_trace(text)
    for var, metric, scale in (("cwnd_", "cwnd", f.payload), ("ssthresh_", "ssthresh", f.payload), ("srtt_", "srtt", 1.0)):
        pts = np.array(tr.get(var, []), dtype=float).reshape(-1, 2)
        keep = pts[:, 0] > f.start
        t, v = pts[keep, 0], pts[keep, 1]
        if var == "cwnd_" and (~keep).any():
            # the initial window, set when the agent was made: a sample at the flow's start
            t, v = np.concatenate([[f.start], t]), np.concatenate([[pts[~keep, 1][-1]], v])
        if len(t):
            samples.push(0, i, metric, t, v * scale)


def match_replies(sends: list[float], replies: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """(send time, exact round trip) of each reply: the echo sent closest to the reply's
    arrival minus ns-2's rounded round trip (echoes are ``interval`` apart, far more than
    the 0.05 ms rounding), each echo matched once."""
    out = []
    a = np.asarray(sends, dtype=float)
    used: set[int] = set()
    for t, rtt in replies:
        if not len(a):
            break
        k = int(np.argmin(np.abs(a - (t - rtt))))
        if k in used:
            continue
        used.add(k)
        out.append((float(a[k]), t - float(a[k])))
    return out


def sojourns(tr: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(dequeue time, sojourn) of every packet that was dequeued: dequeue time minus the
    time of its arrival (the same uid's ``+``)."""
    plus = tr["ev"] == "+"
    minus = tr["ev"] == "-"
    arr = dict(zip(tr["uid"][plus].tolist(), tr["t"][plus].tolist()))
    t_out = tr["t"][minus]
    t_in = np.array([arr.get(u, np.nan) for u in tr["uid"][minus].tolist()], dtype=float)
    return t_out, t_out - t_in


# ---------------------------------------------------------------------------------------
# building the result


class _Long:
    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.kind: list[np.ndarray] = []
        self.entity: list[np.ndarray] = []
        self.metric: list[np.ndarray] = []
        self.t: list[np.ndarray] = []
        self.value: list[np.ndarray] = []

    def push(self, kind: int, entity: int, metric: str, t: np.ndarray, v: np.ndarray) -> None:
        if metric not in self.names:
            self.names.append(metric)
        n = len(t)
        self.kind.append(np.full(n, kind, np.uint8))
        self.entity.append(np.full(n, entity, np.uint32))
        self.metric.append(np.full(n, self.names.index(metric), np.uint16))
        self.t.append(np.asarray(t, dtype=float))
        self.value.append(np.asarray(v, dtype=float))

    def arrays(self) -> dict[str, np.ndarray]:
        def cat(xs: list[np.ndarray], dt: Any) -> np.ndarray:
            return np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)

        return {
            "kind": cat(self.kind, np.uint8),
            "entity": cat(self.entity, np.uint32),
            "metric": cat(self.metric, np.uint16),
            "t": cat(self.t, float),
            "value": cat(self.value, float),
        }


def _pct(a: np.ndarray, q: float) -> float:
    return float(np.quantile(a, q)) if len(a) else NAN


def _queue_row(
    q: Ns2Queue,
    tr: dict[str, np.ndarray],
    warm: float,
    dur: float,
    binw: float,
    nbins: int,
    series: _Long,
    samples: _Long,
    j: int,
    keep_samples: bool,
) -> dict[str, Any]:
    ev, t, size = tr["ev"], tr["t"], tr["size"]
    plus, minus, drop = ev == "+", ev == "-", ev == "d"
    arrivals, dequeued, dropped = int(plus.sum()), int(minus.sum()), int(drop.sum())
    after = minus & (t >= warm) & (t <= dur)
    wire = float(size[after].sum())
    span = dur - warm
    t_out, soj = sojourns(tr)
    keep = (t_out >= warm) & (t_out <= dur) & np.isfinite(soj)
    s = soj[keep]
    row: dict[str, Any] = {
        "id": j,
        "name": q.name,
        "from": q.src,
        "to": q.dst,
        "qdisc": q.qdisc,
        "rate_bps": int(q.rate_bps),
        "delay": q.delay,
        "arrivals": arrivals,
        "enqueued": arrivals - dropped,
        "dequeued": dequeued,
        "dropped": dropped,
        "marked": 0,
        "tx_pkts": int(after.sum()),
        "tx_bytes": int(wire - q.overhead * int(after.sum())),
        "utilization": min(1.0, wire * 8 / (q.rate_bps * span)) if span > 0 else NAN,
        "sojourn_n": int(len(s)),
        "sojourn_mean": float(s.mean()) if len(s) else NAN,
        "sojourn_p50": _pct(s, 0.5),
        "sojourn_p90": _pct(s, 0.9),
        "sojourn_p99": _pct(s, 0.99),
        "sojourn_max": float(s.max()) if len(s) else NAN,
        "trace_vars": "",
        "lower": "wire",
    }
    for r in schema.drop_reasons():
        row[f"drops_{r}"] = 0
    for r in schema.mark_reasons():
        row[f"marks_{r}"] = 0
    if q.qdisc == "fifo":
        row["drops_overlimit"] = dropped
    else:
        # ns-2's trace does not say whether RED dropped early or at its hard limit
        for r in ("overlimit", "early", "forced"):
            row[f"drops_{r}"] = NAN
    # per-bin series
    edges = np.arange(nbins + 1) * binw
    k_out = np.clip((t[minus] // binw).astype(int), 0, nbins - 1) if minus.any() else np.zeros(0, int)
    tx = np.bincount(k_out, weights=size[minus].astype(float), minlength=nbins)[:nbins] if len(k_out) else np.zeros(nbins)
    k_drop = np.clip((t[drop] // binw).astype(int), 0, nbins - 1) if drop.any() else np.zeros(0, int)
    drops = np.bincount(k_drop, minlength=nbins)[:nbins].astype(float) if len(k_drop) else np.zeros(nbins)
    # queue length after each event: +1 per arrival, -1 per dequeue or drop
    step = np.where(plus, 1, np.where(minus | drop, -1, 0))
    qlen = np.cumsum(step)
    k_ev = np.clip((t // binw).astype(int), 0, nbins - 1) if len(t) else np.zeros(0, int)
    backlog = np.full(nbins, NAN)
    if len(t):
        np.fmax.at(backlog, k_ev, qlen.astype(float))
    k_s = np.clip((t_out // binw).astype(int), 0, nbins - 1) if len(t_out) else np.zeros(0, int)
    fin = np.isfinite(soj)
    cnt = np.bincount(k_s[fin], minlength=nbins)[:nbins] if fin.any() else np.zeros(nbins)
    tot = np.bincount(k_s[fin], weights=soj[fin], minlength=nbins)[:nbins] if fin.any() else np.zeros(nbins)
    with np.errstate(invalid="ignore", divide="ignore"):
        smean = np.where(cnt > 0, tot / np.maximum(cnt, 1), NAN)
    series.push(1, j, "tx_bps", edges[:-1], tx * 8 / binw)
    series.push(1, j, "drops", edges[:-1], drops)
    series.push(1, j, "backlog_max", edges[:-1], backlog)
    series.push(1, j, "sojourn_mean", edges[:-1], smean)
    if keep_samples and len(s):
        samples.push(1, j, "sojourn", t_out[keep], s)
    return row


def _flow_row(
    f: Ns2Flow,
    i: int,
    smp: list[tuple[float, ...]],
    first_hop: dict[str, np.ndarray] | None,
    warm: float,
    dur: float,
    binw: float,
    nbins: int,
    series: _Long,
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": i,
        "name": f.name,
        "kind": f.kind,
        "group": f.group,
        "src": f.src,
        "dst": f.dst,
        "start": f.start,
        "stop": f.stop,
    }
    a = np.array(smp, dtype=float).reshape(-1, 6) if smp else np.zeros((0, 6))
    times = a[:, 0]

    def at(tt: float, col: int) -> float:
        k = np.nonzero(np.isclose(times, tt, atol=1e-9))[0]
        return float(a[k[0], col]) if len(k) else NAN

    # whole data packets: a TCP sink also counts the header-only SYN
    pkts_end = math.floor(at(dur, 1) / f.pkt_size)
    pkts_warm = math.floor(at(warm, 1) / f.pkt_size) if warm > 0 else 0.0
    span_from, span_to = max(f.start, warm), min(f.stop, dur)
    span = span_to - span_from
    row["goodput_bps"] = (pkts_end - pkts_warm) * f.payload * 8 / span if span > 0 else 0.0
    row["delivered_pkts"] = pkts_end
    row["delivered_bytes"] = pkts_end * f.payload
    sent = NAN
    if first_hop is not None:
        sel = (first_hop["ev"] == "+") & (first_hop["fid"] == i)
        sent = float(sel.sum())
        row["sent_bytes"] = float(first_hop["size"][sel].sum()) - f.overhead * sent
    row["sent_pkts"] = sent
    row["lost_pkts"] = NAN
    row["ce_pkts"] = 0
    row["base_rtt"] = NAN
    if f.kind == "ping":
        return row  # filled by _ping_row
    if f.kind == "bulk":
        row["segments_sent"] = at(dur, 2)
        row["retransmits"] = at(dur, 3)
        row["rtos"] = at(dur, 4)
        # ns-2 has no SYN retransmission, undo, loss probes or ECN in these agents
        for c in ("loss_probes", "loss_probe_recoveries", "rto_undos", "recovery_undos", "ecn_reductions"):
            row[c] = 0
    else:
        row["datagrams_sent"] = sent
        row["loss_rate"] = 1 - pkts_end / sent if sent and sent == sent else NAN
    # goodput per bin from the sink's byte count at the bin edges
    edges = np.arange(nbins + 1) * binw
    b = np.floor(np.array([at(e, 1) for e in edges]) / f.pkt_size) * f.payload
    series.push(0, i, "goodput_bps", edges[:-1], np.diff(b) * 8 / binw)
    return row


def _ping_row(row: dict[str, Any], i: int, sends: list[float], replies: list[tuple[float, float]], warm: float, samples: _Long) -> None:
    got = match_replies(sends, replies)
    if got:
        ts, rtt = np.array(got).T
        samples.push(0, i, "rtt", ts + rtt, rtt)
    else:
        ts, rtt = np.zeros(0), np.zeros(0)
    keep = rtt[ts >= warm]
    sent_warm = sum(1 for x in sends if x >= warm)
    row.update(
        probes_sent=float(len(sends)), sent_pkts=float(len(sends)), delivered_pkts=float(len(got)),
        loss_rate=1 - len(keep) / sent_warm if sent_warm else NAN,
        rtt_mean=float(keep.mean()) if len(keep) else NAN, rtt_p50=_pct(keep, 0.5), rtt_p90=_pct(keep, 0.9), rtt_p99=_pct(keep, 0.99),
        rtt_min=float(keep.min()) if len(keep) else NAN, rtt_max=float(keep.max()) if len(keep) else NAN,
        goodput_bps=NAN, delivered_bytes=NAN, sent_bytes=NAN,
    )


def collect(out: Path, tr: Ns2Translation, *, seed: int, wall_seconds: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """The raw result dict (:class:`aqmlab.Result` input) from ns-2's output directory."""
    dur, warm, binw = tr.duration, tr.warmup, tr.bin
    nbins = max(1, math.ceil(dur / binw - 1e-9))
    # one list of metric names for both long tables
    names = ["goodput_bps", "tx_bps", "drops", "backlog_max", "sojourn_mean", "sojourn", "rtt"]
    series, samples = _Long(names), _Long(names)
    traces = {}
    for q in tr.queues:
        p = out / q.trace
        traces[q.name] = parse_queue_trace(p.read_text()) if p.is_file() else parse_queue_trace("")
    qcols = schema.queue_columns()
    qt: dict[str, list] = {c: [] for c in qcols}
    for j, q in enumerate(tr.queues):
        row = _queue_row(q, traces[q.name], warm, dur, binw, nbins, series, samples, j, keep_samples=q.name.startswith("bottleneck"))
        for c in qcols:
            qt[c].append(row.get(c, NAN))
    fs = parse_flow_samples((out / "flows.tr").read_text()) if (out / "flows.tr").is_file() else {}
    kinds: list[str] = []
    for f in tr.flows:
        if f.kind not in kinds:
            kinds.append(f.kind)
    fcols = schema.flow_columns(kinds)
    fl: dict[str, list] = {c: [] for c in fcols}
    first = {q.src: q.name for q in tr.queues}  # a host's one link
    sends, replies = parse_pings((out / "pings.tr").read_text()) if (out / "pings.tr").is_file() else ({}, {})
    for i, f in enumerate(tr.flows):
        row = _flow_row(f, i, fs.get(i, []), traces.get(first.get(f.src, "")), warm, dur, binw, nbins, series)
        if f.kind == "ping":
            _ping_row(row, i, sends.get(i, []), replies.get(i, []), warm, samples)
        if f.trace and (out / f.trace).is_file():
            _tcp_samples(f, i, (out / f.trace).read_text(), samples)
        for c in fcols:
            fl[c].append(row.get(c, NAN))
    from aqmlab import __version__

    raw = schema.raw_result(
        version=__version__,
        seed=seed,
        duration=dur,
        warmup=warm,
        bin=binw,
        flows=fl,
        queues=qt,
        series=series.arrays(),
        samples=samples.arrays(),
        metric_names=names,
        wall_seconds=wall_seconds,
        warnings=[f"ns2 engine: {n}" for n in tr.notes],
    )
    info = {
        "engine": "ns2",
        "version": "ns-2.35",
        "wall_seconds": wall_seconds,
        "notes": list(tr.notes),
        "sojourn_estimator": "per-packet (trace-queue)",
    }
    return raw, info


# ---------------------------------------------------------------------------------------
# running


def run(
    scenario: Any, seed: int | None = None, *, log: Any = None, keep: str | os.PathLike[str] | None = None, timeout: float | None = None
) -> Result:
    """Runs ``scenario`` on ns-2.35; ``keep``: a directory to keep the Tcl script and
    ns-2's traces in."""
    sc = load_scenario(scenario)
    plan = sc.validate(seed=seed, spread=True)
    seed = seed if seed is not None else int(plan["seed"])
    ns = ns_binary()
    if ns is None:
        raise Ns2Error(f"ns2 is not installed: run {SETUP}")
    tr = translate(sc.to_dict(), plan, seed=seed)
    say = log or (lambda m: None)
    job = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="aqmlab-ns2-"))
    job.mkdir(parents=True, exist_ok=True)
    (job / "run.tcl").write_text(tr.script)
    say(f"ns2 engine: running ns-2 ({tr.duration:g} s simulated)")
    t0 = time.monotonic()
    limit = timeout if timeout is not None else float(os.environ.get("AQMLAB_NS2_TIMEOUT", str(300 + 30 * tr.duration)))
    try:
        try:
            p = subprocess.run([ns, str(job / "run.tcl"), str(job)], capture_output=True, text=True, timeout=limit, cwd=job)
        except subprocess.TimeoutExpired:
            raise Ns2Error(f"ns-2 did not finish within {limit:.0f} s wall time") from None
        if p.returncode != 0 or "aqmlab-ns2: done" not in p.stdout:
            raise Ns2Error(f"ns-2 exited with status {p.returncode}: {(p.stderr or p.stdout)[-600:].strip()}")
        raw, info = collect(job, tr, seed=seed, wall_seconds=time.monotonic() - t0)
    finally:
        if not keep:
            shutil.rmtree(job, ignore_errors=True)
    r = Result(raw, sc)
    r.engine_info = info
    return r

