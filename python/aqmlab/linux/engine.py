"""The Linux engine: runs a scenario on a real kernel in a qemu VM and returns a
:class:`aqmlab.Result` with the simulator's tables and columns.

Measurement (docs/linux-engine.md lists every column and where it comes from):

- flows: iperf3's JSON (receiver intervals for goodput, sender totals for retransmits and
  RTT), ping's replies, irtt's round trips;
- queues: ``tc -s -d -j qdisc show`` of the qdisc under test (the child ``10:`` of the
  shaper), snapshots at the end of the warm-up and at the end of the run for the counters,
  sampled every bin in the routers' namespaces for the time series; the kernel
  has no per-packet sojourn time, so ``sojourn_*`` are estimated per sample as the queue's
  backlog (bytes) divided by the link rate (the time a packet arriving then would wait in a
  FIFO), and their statistics are over samples, not packets;
- columns the kernel cannot give (packet counts of TCP flows, ``enqueued``, ``rtos``,
  the sojourn histogram ...) are NaN.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import aqmlab.linux.vm as vm
from aqmlab import schema
from aqmlab.errors import AqmlabError
from aqmlab.linux.translate import FlowMap, QueueMap, Translation, parse_progress, translate
from aqmlab.result import Result
from aqmlab.scenario import load_scenario

__all__ = ["run_linux", "collect", "CPU_SATURATED"]

#: A guest CPU busier than this in any bin after warm-up means the VM could not keep up.
CPU_SATURATED = 0.9

NAN = float("nan")


def flow_base_columns() -> list[str]:
    """The flows table's fixed columns (the core's schema)."""
    return schema.flow_columns()


def queue_columns() -> list[str]:
    """The queues table's columns in the simulator's order (the core's schema)."""
    return schema.queue_columns()


# ---------------------------------------------------------------------------------------
# parsing guest output


def parse_tc_samples(text: str) -> list[tuple[float, list[dict]]]:
    """``T <uptime>`` lines each followed by one ``tc -s -d -j qdisc show`` JSON array."""
    out = []
    t = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("T "):
            t = float(line.split()[1])
        elif line.startswith("[") and t is not None:
            try:
                out.append((t, json.loads(line)))
            except json.JSONDecodeError:
                pass  # a sample cut off at shutdown
            t = None
    return out


_CLASS = re.compile(r"class (\S+) (\S+)")
_BACKLOG = re.compile(r"backlog (\d+)b (\d+)p")
_LDELAY = re.compile(r"ldelay ([0-9.]+)(us|ms|s)\b")


def _class_text(lines: list[str]) -> list[dict]:
    """Classes from ``tc -s class show`` text (Debian 12's tc prints class statistics as
    text even with ``-j``): kind, handle, backlog bytes, qlen and ``ldelay`` (µs)."""
    out: list[dict] = []
    for line in lines:
        m = _CLASS.match(line.strip())
        if m:
            out.append({"class": m.group(1), "handle": m.group(2)})
            continue
        if not out:
            continue
        m = _BACKLOG.search(line)
        if m:
            out[-1].update(backlog=int(m.group(1)), qlen=int(m.group(2)))
        m = _LDELAY.search(line)
        if m:
            out[-1]["ldelay"] = float(m.group(1)) * {"us": 1.0, "ms": 1e3, "s": 1e6}[m.group(2)]
    return out


def parse_class_samples(text: str) -> list[tuple[float, str, list[dict]]]:
    """``T <uptime> <dev>`` lines each followed by one ``tc -s class show`` dump (a JSON
    array, or tc's text format)."""
    out = []
    head: tuple[float, str] | None = None
    body: list[str] = []

    def flush() -> None:
        if head is None:
            return
        js = [ln for ln in body if ln.startswith("[")]
        if js:
            try:
                out.append((head[0], head[1], json.loads(js[0])))
            except json.JSONDecodeError:
                pass  # a sample cut off at shutdown
        else:
            out.append((head[0], head[1], _class_text(body)))

    for line in text.splitlines():
        st = line.strip()
        if st.startswith("T "):
            flush()
            p = st.split()
            head = (float(p[1]), p[2]) if len(p) >= 3 else None
            body = []
        elif st:
            body.append(line)
    flush()
    return out


def ldelay_sample(kind: str | None, qdisc: dict | None, classes: list[dict] | None) -> float:
    """One sample (seconds) of the sojourn of the packet the CoDel instance dequeued last
    (the kernel's ``ldelay``, microseconds), or NaN. sch_codel reports it in its qdisc
    statistics; fq_codel per flow, in the class dump of the flows on its lists. A flow
    without backlog is still listed until the round robin passes it, and between
    departures every backlogged flow gets an equal share of the link, so the sample is the
    mean over the listed flows with backlog, or over all listed flows when none has any."""
    if kind == "codel":
        if qdisc is None or "ldelay" not in qdisc:
            return NAN
        return float(qdisc["ldelay"]) * 1e-6
    if kind == "cake":
        # sch_cake keeps per tin an average of its packets' sojourn (avg_delay_us, an
        # EWMA over dequeued packets); the sample is that of the busiest tin (most bytes sent)
        tins = (qdisc or {}).get("tins") or []
        tins = [t for t in tins if "avg_delay_us" in t]
        if not tins:
            return NAN
        return float(max(tins, key=lambda t: t.get("sent_bytes", 0))["avg_delay_us"]) * 1e-6
    if kind == "fq_codel" and classes:
        fl = [c for c in classes if "ldelay" in c]
        busy = [c for c in fl if c.get("qlen", 0) > 0]
        use = busy or fl
        if use:
            return float(np.mean([c["ldelay"] for c in use])) * 1e-6
    return NAN


def parse_mib(text: str) -> dict[str, int]:
    """``/proc/net/netstat`` + ``/proc/net/snmp`` (header line, value line per group) as
    ``{"Group.Name": value}``, e.g. ``TcpExt.TCPTimeouts``, ``Tcp.RetransSegs``."""
    out: dict[str, int] = {}
    lines = [ln.split() for ln in text.splitlines() if ":" in ln]
    for head, vals in zip(lines, lines[1:]):
        if head[0] != vals[0] or len(head) != len(vals) or not all(v.lstrip("-").isdigit() for v in vals[1:]):
            continue
        g = head[0].rstrip(":")
        for k, v in zip(head[1:], vals[1:]):
            out[f"{g}.{k}"] = int(v)
    return out


#: Kernel TCP counters the engine reports per sender namespace (``engine_info["tcp"]``):
#: RTO expiries, tail loss probes sent and the losses they repaired, retransmissions found
#: lost again (RACK), recovery episodes entered with SACK and without, retransmitted
#: segments, undone reductions.
TCP_MIB = {
    "rtos": ("TcpExt.TCPTimeouts",),
    "fast_recoveries": ("TcpExt.TCPSackRecovery", "TcpExt.TCPRenoRecovery"),
    "loss_probes": ("TcpExt.TCPLossProbes",),
    "loss_probe_recoveries": ("TcpExt.TCPLossProbeRecovery",),
    "lost_retransmits": ("TcpExt.TCPLostRetransmit",),
    "retransmits": ("Tcp.RetransSegs",),
    "undos": ("TcpExt.TCPFullUndo", "TcpExt.TCPPartialUndo", "TcpExt.TCPDSACKUndo", "TcpExt.TCPLossUndo"),
    "rto_undos": ("TcpExt.TCPLossUndo",),
    "recovery_undos": ("TcpExt.TCPFullUndo", "TcpExt.TCPPartialUndo", "TcpExt.TCPDSACKUndo"),
    "spurious_rtos": ("TcpExt.TCPSpuriousRTOs",),
}


def tcp_counters(mib: dict[str, int]) -> dict[str, float]:
    """The :data:`TCP_MIB` sums of one namespace's counters (NaN where the kernel has none)."""
    out = {}
    for name, keys in TCP_MIB.items():
        have = [mib[k] for k in keys if k in mib]
        out[name] = float(sum(have)) if have else NAN
    return out


def _child(entries: list[dict], dev: str) -> dict | None:
    for e in entries:
        if e.get("dev") == dev and e.get("handle") == "10:":
            return e
    return None


def red_adaptation_note(name: str, dev: str, samples: list | None) -> str | None:
    """A note when an adaptive ``red`` qdisc kept its max_p over the whole run.

    ``tc -d`` shows sch_red's live max_p as ``probability``. The kernel arms ARED's 500 ms
    timer only when the legacy ``tc_red_qopt.flags`` carry ``adaptive`` (``__red_change``
    tests ``ctl->flags``), but tc (iproute2 5.8 and later) sends every RED flag in the
    ``TCA_RED_FLAGS`` attribute and leaves the legacy field 0, which ``red_get_flags``
    requires when that attribute is present: the qdisc reports ``adaptive`` and runs plain
    RED at its initial max_p. Seen on Debian 12 (Linux 6.1, iproute2 6.1)."""
    probs = []
    for _, entries in samples or []:
        e = _child(entries, dev)
        if e and e.get("kind") == "red" and (e.get("options") or {}).get("adaptive"):
            p = e["options"].get("probability")
            if p is not None:
                probs.append(float(p))
    if len(probs) < 10 or max(probs) != min(probs):
        return None
    return (
        f"{name}: sch_red is flagged adaptive but its max_p stayed {probs[0]:g} in all {len(probs)} samples: "
        "this kernel arms ARED's timer only from the legacy qopt flags, which tc no longer sets, so it ran RED "
        "without adaptation (compare with kind = \"red\", probability = the initial max_p)"
    )


_PING = re.compile(r"icmp_seq=(\d+).*time=([0-9.]+) ms")


def parse_ping(text: str) -> tuple[int, dict[int, float]]:
    """(packets transmitted, {seq: rtt seconds}) from iputils ping output."""
    rtts: dict[int, float] = {}
    sent = 0
    for line in text.splitlines():
        m = _PING.search(line)
        if m:
            rtts.setdefault(int(m.group(1)), float(m.group(2)) * 1e-3)
        m = re.match(r"(\d+) packets transmitted", line)
        if m:
            sent = int(m.group(1))
    if not sent and rtts:
        sent = max(rtts)
    return sent, rtts


def _read(d: Path, name: str) -> str:
    p = d / name
    return p.read_text(errors="replace") if p.is_file() else ""


def _json(d: Path, name: str) -> dict | None:
    try:
        return json.loads(_read(d, name))
    except json.JSONDecodeError:
        return None


def _cpu_busy(text: str) -> list[tuple[float, float]]:
    """[(t, busy fraction since the previous sample)] from ``T <uptime> cpu ...`` lines."""
    prev = None
    out = []
    for line in text.splitlines():
        p = line.split()
        if len(p) < 7 or p[0] != "T" or p[2] != "cpu":
            continue
        t = float(p[1])
        v = [int(x) for x in p[3:]]
        idle = v[3] + (v[4] if len(v) > 4 else 0)
        total = sum(v[:8])
        if prev is not None and total > prev[1]:
            out.append((t, 1.0 - (idle - prev[0]) / (total - prev[1])))
        prev = (idle, total)
    return out


# ---------------------------------------------------------------------------------------
# building the result


class _Long:
    def __init__(self, metric_names: list[str]) -> None:
        self.names = metric_names
        self.rows: list[tuple[int, int, int, float, float]] = []

    def push(self, kind: int, entity: int, metric: str, t: float, v: float) -> None:
        if metric not in self.names:
            self.names.append(metric)
        self.rows.append((kind, entity, self.names.index(metric), t, v))

    def arrays(self) -> dict[str, np.ndarray]:
        a = np.array(self.rows, dtype=float).reshape(-1, 5)
        return {"kind": a[:, 0].astype(np.uint8), "entity": a[:, 1].astype(np.uint32), "metric": a[:, 2].astype(np.uint16), "t": a[:, 3], "value": a[:, 4]}


def _stats(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {"mean": NAN, "p50": NAN, "p90": NAN, "p99": NAN, "min": NAN, "max": NAN}
    a = np.asarray(xs, dtype=float)
    return {"mean": float(a.mean()), "p50": float(np.quantile(a, 0.5)), "p90": float(np.quantile(a, 0.9)), "p99": float(np.quantile(a, 0.99)), "min": float(a.min()), "max": float(a.max())}


def collect(out: Path, tr: Translation, *, seed: int, wall_seconds: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """Turns the guest's output directory into the raw result dict that
    :class:`aqmlab.Result` takes, and the engine's own information."""
    times = {ln.split()[0]: float(ln.split()[1]) for ln in _read(out, "times").splitlines() if len(ln.split()) == 2}
    if "t0" not in times:
        raise vm.VmError(f"the guest did not start the experiment (guest log: {_read(out, 'guest.log')[-800:]!r})")
    t0 = times["t0"]
    # each client's launch and exit ("PORT UPTIME" lines), in seconds of the run
    starts, ends = _port_times(out, "starts", t0), _port_times(out, "ends", t0)
    lags: dict[str, float] = {}
    failed: list[str] = []
    dur, warm, binw = tr.duration, tr.warmup, tr.bin
    nbins = max(1, math.ceil(dur / binw - 1e-9))
    names = ["goodput_bps", "rtt", "owd_fwd", "owd_rev", "tx_bps", "drops", "backlog_max", "sojourn_mean", "ldelay"]
    series, samples = _Long(names), _Long(names)

    # -- flows
    kinds = []
    for f in tr.flows:
        if f.kind not in kinds:
            kinds.append(f.kind)
    cols = schema.flow_columns(kinds)
    fl: dict[str, list] = {c: [] for c in cols}
    for i, f in enumerate(tr.flows):
        row: dict[str, Any] = {c: NAN for c in cols}
        row.update(id=i, name=f.name, kind=f.kind, group=0, src=f.src, dst=f.dst, start=f.start, stop=f.stop)
        st = starts.get(f.port, f.start)
        bins = np.zeros(nbins)
        if f.tool == "iperf3":
            began = _iperf_flow(out, f, st, warm, dur, binw, bins, row, ends.get(f.port))
            if began is None:
                failed.append(f.name)
            else:
                lags[f.name] = began - st
        elif f.tool == "ping":
            _ping_flow(out, f, st, warm, row, samples, i)
        else:
            _irtt_flow(out, f, st, warm, row, samples, i)
        for b in range(nbins):
            series.push(0, i, "goodput_bps", b * binw, bins[b] * 8 / binw)
        for c in cols:
            fl[c].append(row[c])
    # RTOs and recovery episodes: per-namespace kernel counters over the whole run (the
    # namespaces are created for the run), a flow's own when it is its host's only TCP sender
    tcp_ns: dict[str, dict[str, float]] = {}
    for f in tr.flows:
        ns = tr.node_ns[f.src]
        if f.kind != "bulk" or ns in tcp_ns:
            continue
        text = _read(out, f"final.mib.{ns}")
        if text:
            tcp_ns[ns] = tcp_counters(parse_mib(text))
    for i, f in enumerate(tr.flows):
        ns = tr.node_ns[f.src]
        alone = sum(1 for g in tr.flows if g.kind == "bulk" and tr.node_ns[g.src] == ns) == 1
        if f.kind == "bulk" and alone and ns in tcp_ns:
            for c in ("rtos", "fast_recoveries", "loss_probes", "loss_probe_recoveries", "lost_retransmits", "rto_undos", "recovery_undos"):
                if c in fl:
                    fl[c][i] = tcp_ns[ns][c]
    groups = _groups(tr)
    fl["group"] = [groups.get(f.name, 0) for f in tr.flows]

    # -- queues
    sampled = {ns: parse_tc_samples(_read(out, f"tc.{ns}")) for ns in tr.sampled_ns}
    classes = {ns: parse_class_samples(_read(out, f"cls.{ns}")) for ns in tr.sampled_ns}
    ldelay: dict[str, dict[str, float]] = {}
    qcols = queue_columns()
    q: dict[str, list] = {c: [] for c in qcols}
    for j, qm in enumerate(tr.queues):
        row = _queue_row(out, qm, t0, warm, dur, binw, nbins, sampled.get(qm.ns), series, j)
        ld = _ldelay(qm, t0, warm, dur, binw, nbins, sampled.get(qm.ns), classes.get(qm.ns), series, j)
        if ld:
            ldelay[qm.name] = ld
        row.update(id=j, name=qm.name, **{"from": qm.src}, to=qm.dst, qdisc=qm.qdisc, rate_bps=int(qm.rate_bps), delay=qm.delay, trace_vars="", lower="wire")
        for c in qcols:
            q[c].append(row.get(c, NAN))
        # cake's per-tin counters: extra columns, as the simulator's table has them
        for c in (k for k in row if k.startswith("tin") and k not in q):
            q[c] = [NAN] * j
        for c in (k for k in q if k.startswith("tin")):
            q[c].append(row.get(c, NAN))

    # -- VM health
    busy = [(t - t0, b) for t, b in _cpu_busy(_read(out, "cpu"))]
    # after the warm-up, leaving out the bin of the engine's own warm-up snapshot
    after = [b for t, b in busy if t > warm + (binw if warm > 0 else 0) + 1e-9 and t <= dur + 1e-9]
    virt = times.get("end", t0 + dur) - times.get("boot", 0.0)
    info: dict[str, Any] = {
        "engine": "linux",
        "cpu_busy_mean": float(np.mean(after)) if after else NAN,
        "cpu_busy_max": float(np.max(after)) if after else NAN,
        "virtual_seconds": virt,
        "wall_seconds": wall_seconds,
        "overhead": wall_seconds / virt if virt > 0 else NAN,
        "notes": list(tr.notes),
        # mean sojourn by Little's law in packets; drain-time percentiles divided by
        # 1 + head drops / transmissions (docs/linux-engine.md)
        "sojourn_estimator": "littles-law-v3",
        # CoDel queues: the kernel's own per-packet sojourn (ldelay), sampled every bin
        "ldelay": ldelay,
        # kernel TCP counters of the senders' namespaces, summed (whole run)
        "tcp": {k: float(np.nansum([c[k] for c in tcp_ns.values()])) for k in TCP_MIB} if tcp_ns else {},
    }
    late = max(lags, key=lambda k: lags[k]) if lags else None
    if late is not None:
        # seconds from each iperf3 client's launch to its test's start (data_start)
        info["start_lag"] = {"mean": float(np.mean(list(lags.values()))), "max": float(lags[late]), "flows": lags}
    if tr.captures:
        info["capture"] = capture_info(out, tr, t0)
    warnings = [f"linux engine: {n}" for n in tr.notes]
    if failed:
        warnings.append(
            f"linux engine: iperf3 left no result for {len(failed)} flow(s) ({', '.join(failed[:5])}{', ...' if len(failed) > 5 else ''}): "
            "the client did not finish within the grace period after the run; their goodput and bytes are NaN, not zero"
        )
    if late is not None and lags[late] > START_LAG_NOTE:
        lag_note = (
            f"iperf3 clients began their tests up to {lags[late]:.2f} s after their scheduled starts ({late}; mean {info['start_lag']['mean']:.2f} s): "
            "iperf3's control messages and its data connection's SYN cross the bottleneck, where a loss costs a retransmission timeout (1 s for a SYN), "
            "and a busy guest CPU delays them further, so the kernel's start-up differs from the simulator's; goodput is measured from each test's own start"
        )
        info["notes"].append(lag_note)
        warnings.append(f"linux engine: {lag_note}")
    for qm in tr.queues:
        note = red_adaptation_note(qm.name, qm.dev, sampled.get(qm.ns))
        if note:
            info["notes"].append(note)
            warnings.append(f"linux engine: {note}")
    if after and info["cpu_busy_max"] > CPU_SATURATED:
        hot = sum(1 for b in after if b > CPU_SATURATED)
        warnings.append(
            f"linux engine: the VM's CPU was saturated ({hot} of {len(after)} bins above {CPU_SATURATED:.0%} busy, peak {info['cpu_busy_max']:.0%}): "
            "the kernel could not keep up, so results reflect the emulated CPU and not only the network; use fewer flows or a larger icount shift"
        )
    raw = {
        "version": _version(),
        "seed": seed,
        "duration": dur,
        "warmup": warm,
        "bin": binw,
        "flows": fl,
        "queues": q,
        "sojourn_hist": {"queue": np.zeros(0, np.uint32), "low": np.zeros(0), "high": np.zeros(0), "count": np.zeros(0, np.uint64)},
        "series": series.arrays(),
        "samples": samples.arrays(),
        "metric_names": series.names if len(series.names) >= len(samples.names) else samples.names,
        "events": 0,
        "packets_created": 0,
        "packets_delivered": 0,
        "packets_dropped": int(np.nansum([x for x in q["dropped"] if x == x])) if q["dropped"] else 0,
        "wall_seconds": wall_seconds,
        "warnings": warnings,
    }
    # one list of metric names for both long tables
    allnames = list(dict.fromkeys(series.names + samples.names))
    raw["metric_names"] = allnames
    return raw, info


# a start lag above this (s) is reported: iperf3's start-up alone takes 60-80 ms
START_LAG_NOTE = 0.25

_TCPDUMP_COUNTS = re.compile(r"(\d+) packets (captured|received by filter|dropped by kernel)")


def capture_info(out: Path, tr: Translation, t0: float) -> dict[str, Any]:
    """Where the opt-in captures are and how to read their clock: per captured queue its
    files (``in.<dev>``, ``out``) with tcpdump's counts (``dropped by kernel`` > 0 means
    the capture missed packets), and ``t0_real``: the CLOCK_REALTIME (the pcap timestamps')
    of the experiment's t = 0."""
    real = [ln.split() for ln in _read(out, "times").splitlines() if ln.startswith("real ")]
    t0_real = float(real[0][1]) - (float(real[0][2]) - t0) if real and len(real[0]) == 3 else NAN
    caps: dict[str, Any] = {}
    for cm in tr.captures:
        files = {}
        for key, fn in cm.files().items():
            counts = {m.group(2).split()[0]: int(m.group(1)) for m in _TCPDUMP_COUNTS.finditer(_read(out, fn[:-5] + ".err"))}
            files[key] = {"file": fn, "present": (out / fn).is_file(), **counts}
        caps[cm.queue] = {"ns": cm.ns, "dev": cm.dev, "ingress": cm.ingress, "files": files}
    return {"t0_real": t0_real, "queues": caps}


def _version() -> str:
    from aqmlab import __version__

    return __version__


def _groups(tr: Translation) -> dict[str, int]:
    return tr.groups


def _port_times(out: Path, name: str, t0: float) -> dict[int, float]:
    """The guest's "PORT UPTIME" lines of ``name`` (the clients' launches or exits) as
    seconds of the run by port."""
    return {int(ln.split()[0]): float(ln.split()[1]) - t0 for ln in _read(out, name).splitlines() if len(ln.split()) == 2}


def data_start(launched: float, ended: float | None, cli: dict) -> float:
    """When an iperf3 client began its test, in seconds of the run: its launch plus
    iperf3's start-up (exec, control connection, cookie and parameter exchange, the data
    connection's handshake: 60-80 ms on an idle path; seconds when those packets are
    lost at a congested bottleneck and wait for retransmission timeouts). Dated back from
    the client's exit by the test's own duration (``sum_sent``/``sum`` seconds of its
    JSON); that leaves in the final result exchange, so the start comes out late by a few
    round trips (checked against a packet capture: +0.07 to +0.16 s), and by a timeout
    more when a closing control message was lost. The launch time when either is
    missing."""
    end = cli.get("end") or {}
    secs = (end.get("sum_sent") or end.get("sum") or {}).get("seconds")
    if ended is None or not isinstance(secs, int | float) or not math.isfinite(secs):
        return launched
    return max(launched, ended - secs)


def _iperf_flow(out: Path, f: FlowMap, st: float, warm: float, dur: float, binw: float, bins: np.ndarray, row: dict, ended: float | None = None) -> float | None:
    """Fills a bulk or UDP flow's row and goodput bins from iperf3's JSON; returns when
    its test began (:func:`data_start`), or None when iperf3 left no result."""
    srv = _json(out, f"srv.{f.port}.json") or {}
    cli = _json(out, f"cli.{f.port}.json") or {}
    # the server's intervals count from the test's start, not from the client's launch
    st = data_start(st, ended, cli)
    got = 0.0
    span_from, span_to = max(f.start, warm), min(f.stop, dur)
    total = 0.0
    logged_to = -math.inf  # the end of the last interval the server logged
    for iv in srv.get("intervals", []):
        s = iv.get("sum", {})
        a, b = st + s.get("start", 0.0), st + s.get("end", 0.0)
        by = float(s.get("bytes", 0))
        total += by
        logged_to = max(logged_to, b)
        mid = (a + b) / 2
        if span_from <= mid <= span_to:
            got += by
        if b > a:  # spread the interval's bytes over the bins it covers
            k0, k1 = int(a // binw), int(min(b, dur - 1e-9) // binw)
            for k in range(max(k0, 0), min(k1, len(bins) - 1) + 1):
                lo, hi = max(a, k * binw), min(b, (k + 1) * binw)
                if hi > lo:
                    bins[k] += by * (hi - lo) / (b - a)
    span = span_to - span_from
    row["goodput_bps"] = got * 8 / span if span > 0 else 0.0
    row["delivered_bytes"] = total if srv else NAN
    end = cli.get("end", {})
    if f.kind == "bulk":
        streams = end.get("streams") or [{}]
        snd = streams[0].get("sender", {})
        row["sent_bytes"] = float(snd["bytes"]) if "bytes" in snd else NAN
        row["retransmits"] = float(snd["retransmits"]) if "retransmits" in snd else NAN
        row["srtt_mean"] = snd["mean_rtt"] * 1e-6 if "mean_rtt" in snd else NAN
        row["rtt_min"] = snd["min_rtt"] * 1e-6 if "min_rtt" in snd else NAN
        cw = [iv["streams"][0]["snd_cwnd"] for iv in cli.get("intervals", []) if iv.get("streams") and "snd_cwnd" in iv["streams"][0]]
        row["cwnd_mean"] = float(np.mean(cw)) if cw else NAN
        if f.bytes and "sum_received" in (srv.get("end") or {}):
            row["completion_time"] = srv["end"]["sum_received"].get("end", NAN)
    else:
        s = (srv.get("end") or {}).get("sum", {})
        c = end.get("sum", {})
        row["datagrams_sent"] = float(c["packets"]) if "packets" in c else NAN
        row["sent_bytes"] = float(c["bytes"]) if "bytes" in c else NAN
        row["loss_rate"] = s["lost_percent"] / 100 if "lost_percent" in s else NAN
    if not srv.get("intervals") or not end:
        # the client did not finish (killed after the run's grace period) or the server
        # logged nothing: what it moved is unknown, not zero — in the row, and in every
        # goodput bin the server's intervals do not cover to its end
        for c in ("goodput_bps", "delivered_bytes", "sent_bytes"):
            row[c] = NAN
        first_unknown = max(0, math.floor(logged_to / binw + 1e-9)) if logged_to > -math.inf else 0
        bins[first_unknown:] = NAN
        return None
    return st


def _ping_flow(out: Path, f: FlowMap, st: float, warm: float, row: dict, samples: _Long, i: int) -> None:
    sent, rtts = parse_ping(_read(out, f"ping.{f.port}"))
    assert f.interval is not None
    keep = []
    for seq, rtt in sorted(rtts.items()):
        t_send = st + (seq - 1) * f.interval
        samples.push(0, i, "rtt", t_send + rtt, rtt)
        if t_send >= warm:
            keep.append(rtt)
    sent_warm = sum(1 for s in range(1, sent + 1) if st + (s - 1) * f.interval >= warm)
    got_warm = sum(1 for s in rtts if 1 <= s <= sent and st + (s - 1) * f.interval >= warm)
    s = _stats(keep)
    row.update(probes_sent=float(sent), loss_rate=(1 - got_warm / sent_warm) if sent_warm else NAN, rtt_mean=s["mean"], rtt_p50=s["p50"], rtt_p90=s["p90"], rtt_p99=s["p99"], rtt_min=s["min"], rtt_max=s["max"])
    row["sent_pkts"] = float(sent)
    row["delivered_pkts"] = float(len(rtts))


def _irtt_flow(out: Path, f: FlowMap, st: float, warm: float, row: dict, samples: _Long, i: int) -> None:
    d = _json(out, f"irtt.{f.port}.json") or {}
    rts = d.get("round_trips", [])
    keep = []
    t_first = None
    for rt in rts:
        ts = rt.get("timestamps", {}).get("client", {}).get("send", {}).get("wall")
        if ts is None:
            continue
        if t_first is None:
            t_first = ts
        t_send = st + (ts - t_first) * 1e-9
        dl = rt.get("delay") or {}
        if "rtt" not in dl:
            continue
        rtt = dl["rtt"] * 1e-9
        samples.push(0, i, "rtt", t_send + rtt, rtt)
        if "send" in dl:
            samples.push(0, i, "owd_fwd", t_send + rtt, dl["send"] * 1e-9)
        if "receive" in dl:
            samples.push(0, i, "owd_rev", t_send + rtt, dl["receive"] * 1e-9)
        if t_send >= warm:
            keep.append(rtt)
    s = _stats(keep)
    sent = len(rts)
    lost = sum(1 for rt in rts if "rtt" not in (rt.get("delay") or {}))
    row.update(probes_sent=float(sent), loss_rate=lost / sent if sent else NAN, rtt_mean=s["mean"], rtt_p50=s["p50"], rtt_p90=s["p90"], rtt_p99=s["p99"], rtt_min=s["min"], rtt_max=s["max"])


def _ldelay(qm: QueueMap, t0: float, warm: float, dur: float, binw: float, nbins: int, samples: list | None, classes: list | None, series: _Long, j: int) -> dict[str, float]:
    """Statistics of the kernel's ``ldelay`` samples of a codel or fq_codel queue after the
    warm-up (seconds; ``n`` samples), and its per-bin mean as the ``ldelay`` series."""
    pts: list[tuple[float, float]] = []
    if qm.qdisc in ("codel", "cake") and samples:
        for t, entries in samples:
            e = _child(entries, qm.dev)
            pts.append((t - t0, ldelay_sample(qm.qdisc, e, None)))
    elif qm.qdisc == "fq_codel" and classes:
        for t, dev, entries in classes:
            if dev == qm.dev:
                pts.append((t - t0, ldelay_sample("fq_codel", None, [c for c in entries if c.get("class") == "fq_codel"])))
    pts = [(t, v) for t, v in pts if v == v]
    if not pts:
        return {}
    bins: list[list[float]] = [[] for _ in range(nbins)]
    for t, v in pts:
        k = int(t // binw)
        if 0 <= k < nbins:
            bins[k].append(v)
    for k in range(nbins):
        series.push(1, j, "ldelay", k * binw, float(np.mean(bins[k])) if bins[k] else NAN)
    keep = [v for t, v in pts if warm <= t <= dur]
    s = _stats(keep)
    return {"n": float(len(keep)), "mean": s["mean"], "p50": s["p50"], "p99": s["p99"]}


def _counter(e: dict | None, key: str) -> float:
    if e is None:
        return NAN
    return float(e.get(key, NAN))


#: The order in which ``sch_cake`` dumps its tins (``cake_dump_stats`` walks
#: ``q->tin_order``): diffserv3 and diffserv4 dump their bulk tin (index 1) first, the
#: others in index order. Index = the tin's number in the simulator's ``tinN_*`` columns.
CAKE_DUMP_ORDER = {"diffserv3": (1, 0, 2), "diffserv4": (1, 0, 2, 3)}

#: The simulator's per-tin queue columns, per tin (``crates/aqmlab-core/src/qdisc/cake.rs``).
TIN_COLUMNS = ("sent_bytes", "drops", "marks", "ack_drops", "threshold_bps")


def cake_tins(qdisc: dict | None, overhead: int) -> dict[str, float]:
    """The simulator's ``tinN_*`` columns from one ``tc -s -j`` dump of a cake qdisc (its
    counters since the qdisc was created): the tins put back in the kernel's index order,
    sent bytes as IP bytes (the
    kernel counts each packet with its ``overhead`` bytes of framing), drops besides those
    of the ACK filter, CE marks, the ACK filter's drops and the tin's bandwidth threshold
    (tc reports bytes per second)."""
    tins = (qdisc or {}).get("tins") or []
    if not tins:
        return {}
    mode = str(((qdisc or {}).get("options") or {}).get("diffserv", ""))
    order = CAKE_DUMP_ORDER.get(mode, tuple(range(len(tins))))
    if len(order) != len(tins):
        order = tuple(range(len(tins)))
    out: dict[str, float] = {}
    for i in sorted(range(len(tins)), key=lambda k: order[k]):
        t, n = tins[i], order[i]
        out[f"tin{n}_sent_bytes"] = float(t.get("sent_bytes", NAN)) - overhead * float(t.get("sent_packets", 0))
        out[f"tin{n}_drops"] = float(t.get("drops", NAN))
        out[f"tin{n}_marks"] = float(t.get("ecn_mark", NAN))
        out[f"tin{n}_ack_drops"] = float(t.get("ack_drops", NAN))
        out[f"tin{n}_threshold_bps"] = float(t.get("threshold_rate", NAN)) * 8
    return out


def _queue_row(out: Path, qm: QueueMap, t0: float, warm: float, dur: float, binw: float, nbins: int, samples: list | None, series: _Long, j: int) -> dict:
    fin_s = parse_tc_samples(_read(out, f"final.{qm.ns}"))
    fin = _child(fin_s[0][1], qm.dev) if fin_s else None
    if warm > 0:
        w_s = parse_tc_samples(_read(out, f"warm.{qm.ns}"))
        w = _child(w_s[0][1], qm.dev) if w_s else None
    else:
        w = {"bytes": 0, "packets": 0, "drops": 0, "qlen": 0, "ecn_mark": 0, "drop_overlimit": 0, "dropped": 0, "overlimit": 0, "drop_overmemory": 0, "marked": 0}
    row: dict[str, Any] = {}

    # As in the simulator: the qdisc's counters (arrivals, dequeued, dropped, marked and
    # their reasons) cover the whole run; transmissions, utilisation and sojourn only the
    # time after the warm-up.
    def delta(key: str) -> float:
        return _counter(fin, key)

    def warm_delta(key: str) -> float:
        return _counter(fin, key) - _counter(w, key)

    pk, by, dr = delta("packets"), delta("bytes"), delta("drops")
    dq = delta("qlen")
    tx_pk, tx_by = warm_delta("packets"), warm_delta("bytes")
    row.update(dequeued=pk, tx_pkts=tx_pk, tx_bytes=tx_by - qm.overhead * tx_pk, dropped=dr, arrivals=pk + dr + dq, enqueued=NAN)
    by = tx_by
    span = dur - warm
    row["utilization"] = min(1.0, by * 8 / (qm.rate_bps * span)) if span > 0 and by == by else NAN
    kind = fin.get("kind") if fin else None
    drop_reasons, mark_reasons = schema.drop_reasons(), schema.mark_reasons()
    drops = dict.fromkeys(drop_reasons, 0.0)
    marks = dict.fromkeys(mark_reasons, 0.0)
    if fin is None:
        drops = dict.fromkeys(drop_reasons, NAN)
        marks = dict.fromkeys(mark_reasons, NAN)
    elif kind in ("pfifo", "bfifo", "pfifo_fast"):
        drops["overlimit"] = dr
    elif kind == "codel":
        drops["overlimit"] = delta("drop_overlimit")
        drops["codel"] = dr - drops["overlimit"]
        marks["codel"] = delta("ecn_mark")
    elif kind == "fq_codel":
        ov, mem = delta("drop_overlimit"), delta("drop_overmemory") if "drop_overmemory" in fin else 0.0
        drops["fat_flow"] = ov - (mem if mem == mem else 0.0)
        drops["memory"] = mem
        drops["codel"] = dr - ov
        marks["codel"] = delta("ecn_mark")
    elif kind in ("pie", "fq_pie"):
        drops["overlimit"] = delta("overlimit")
        drops["early"] = dr - drops["overlimit"]
        marks["early"] = delta("ecn_mark")
    elif kind == "cake":
        # sch_cake counts drops per tin without telling COBALT's CoDel and BLUE drops from
        # overflow drops; only the ACK filter's are separate
        tins = fin.get("tins") or []
        drops = dict.fromkeys(drop_reasons, NAN)
        acks = float(sum(t.get("ack_drops", 0) for t in tins))
        drops["ack_filter"] = acks
        marks = dict.fromkeys(mark_reasons, 0.0)
        marks["codel"] = float(sum(t.get("ecn_mark", 0) for t in tins))
        # per tin, counted after the warm-up as the simulator's tin counters are
        tf, tw = cake_tins(fin, qm.overhead), cake_tins(w, qm.overhead)
        row.update({k: v if k.endswith("_threshold_bps") else v - tw.get(k, 0.0) for k, v in tf.items()})
    elif kind == "red":
        drops["overlimit"] = delta("pdrop") if "pdrop" in fin else NAN
        drops["early"] = delta("early") if "early" in fin else NAN
        drops["forced"] = delta("forced_drop") if "forced_drop" in fin else NAN
        marks["early"] = delta("marked") if "marked" in fin else NAN
    else:
        drops = dict.fromkeys(drop_reasons, NAN)
        marks = dict.fromkeys(mark_reasons, NAN)
    for r in drops:
        row[f"drops_{r}"] = drops[r]
    for r in mark_reasons:
        row[f"marks_{r}"] = marks[r]
    row["marked"] = sum(v for v in marks.values() if v == v) if fin is not None else NAN

    # sojourn estimate and per-bin series from the samples
    est = []
    qlens = []
    if samples:
        prev = None
        bins_tx = np.zeros(nbins)
        bins_dr = np.zeros(nbins)
        bins_bl = np.full(nbins, NAN)
        bins_sj: list[list[float]] = [[] for _ in range(nbins)]
        for t, entries in samples:
            e = _child(entries, qm.dev)
            if e is None:
                continue
            tt = t - t0
            d = e["backlog"] * 8 / qm.rate_bps
            k = int(tt // binw)
            if 0 <= k < nbins:
                bins_sj[k].append(d)
                bins_bl[k] = max(e["qlen"], 0 if bins_bl[k] != bins_bl[k] else bins_bl[k])
                if prev is not None:
                    bins_tx[k] += (e["bytes"] - prev["bytes"]) - qm.overhead * (e["packets"] - prev["packets"])
                    bins_dr[k] += e["drops"] - prev["drops"]
            if warm <= tt <= dur:
                est.append(d)
                qlens.append(float(e.get("qlen", NAN)))
            prev = e
        for k in range(nbins):
            series.push(1, j, "tx_bps", k * binw, bins_tx[k] * 8 / binw)
            series.push(1, j, "drops", k * binw, bins_dr[k])
            series.push(1, j, "backlog_max", k * binw, bins_bl[k])
            series.push(1, j, "sojourn_mean", k * binw, float(np.mean(bins_sj[k])) if bins_sj[k] else NAN)
    # Little's law: the time-average backlog is (rate at which packets leave the queue) x
    # (their mean sojourn). Packets leave by transmission and, for AQMs that drop at the
    # head (CoDel, fq_codel, sfq), by being dropped after waiting; the simulator's sojourn
    # statistics are over transmitted packets. So the drain time backlog/rate overstates
    # their mean sojourn by the factor 1 + head drops / transmissions (after warm-up).
    head = 0.0
    if fin is not None and w is not None:
        if kind == "codel":
            head = warm_delta("drops") - warm_delta("drop_overlimit")
        elif kind in ("fq_codel", "sfq"):
            head = warm_delta("drops")
        elif kind == "cake":  # COBALT drops at the head; overflow drops from the fattest flow's head
            head = warm_delta("drops")
    scale = 1.0 / (1.0 + head / tx_pk) if tx_pk and tx_pk > 0 and head == head and head > 0 else 1.0
    s = _stats([x * scale for x in est])
    # The mean by Little's law in packets: time-average queue length over the rate at which
    # packets leave (transmitted + dropped at the head). That is the mean over packets, as
    # the simulator's; the drain time backlog/rate above is a byte-weighted mean, which is
    # the same only when sojourn does not depend on packet size: under FQ, small ACKs in
    # their own sparse queues wait far less than data (RRUL), and on a link that is not
    # always busy the queue does not drain at the link rate.
    leave = (tx_pk + (head if head == head else 0.0)) / span if span > 0 and tx_pk == tx_pk else NAN
    if qlens and leave == leave and leave > 0 and all(x == x for x in qlens):
        s["mean"] = float(np.mean(qlens)) / leave
    row.update(sojourn_n=float(len(est)) if samples else NAN, sojourn_mean=s["mean"], sojourn_p50=s["p50"], sojourn_p90=s["p90"], sojourn_p99=s["p99"], sojourn_max=s["max"])
    return row


# ---------------------------------------------------------------------------------------
# running


def run_linux(
    scenario: Any,
    seed: int | None = None,
    *,
    icount_shift: int | None = None,
    memory_mb: int | None = None,
    keep: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
    log: Callable[[str], None] | None = None,
    capture: list[str] | tuple[str, ...] | None = None,
    progress: Callable[[float, float], None] | None = None,
) -> Result:
    """Runs ``scenario`` on the Linux kernel in the VM; returns a :class:`Result` whose
    ``engine_info`` says how it went (overhead, guest CPU busy fraction, notes).

    ``keep``: a directory to keep the job (script and raw guest output) in.
    ``icount_shift``: qemu ``-icount shift`` (default 0, or ``$AQMLAB_VM_ICOUNT``).
    ``capture``: queue names to capture packet headers around (tcpdump in the guest, the
    files stay in ``keep``, which it needs; default none, or ``$AQMLAB_VM_CAPTURE``, comma
    separated). A diagnostic: the captures cost guest CPU.
    ``progress``: called as ``progress(reached, length)`` about once per virtual second
    while the VM runs, with the virtual seconds of the job reached and its length
    (``reached`` passes ``length`` while the guest collects the results).
    """
    sc = load_scenario(scenario)
    # the flows start when the simulator's would with this seed (start_spread draws and
    # start jitter), so both engines see the same arrivals
    plan = sc.validate(seed=seed, spread=True)
    seed = seed if seed is not None else plan["seed"]
    if capture is None:
        capture = [c for c in os.environ.get("AQMLAB_VM_CAPTURE", "").split(",") if c.strip()]
    if capture and not keep:
        raise LinuxEngineError("a packet capture needs a directory to keep the job in (keep=..., --keep)")
    tr = translate(sc.to_dict(), plan, capture=[c.strip() for c in capture])
    shift = icount_shift if icount_shift is not None else int(os.environ.get("AQMLAB_VM_ICOUNT", "0"))
    mem = memory_mb or int(os.environ.get("AQMLAB_VM_MEMORY", str(512 + 16 * len(tr.flows))))
    say = log or (lambda m: None)
    image = vm.build_image(log=say)
    if tr.captures and "tcpdump" not in image.manifest.get("binaries", {}):
        raise LinuxEngineError("a packet capture needs tcpdump in the VM image: install the Debian package tcpdump (AQMLAB_VM_OPTIONAL=1 bash scripts/setup-vm.sh)")
    say(f"linux engine: booting the VM (kernel {image.version}, TCG with -icount: minutes, not seconds)")
    job = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="aqmlab-vm-"))
    job.mkdir(parents=True, exist_ok=True)
    if (job / "out").exists():
        shutil.rmtree(job / "out")
    (job / "out").mkdir()
    (job / "run.sh").write_text(tr.script)
    t = time.monotonic()
    # generous: the emulation overhead under TCG is 5-30x depending on host load
    limit = timeout if timeout is not None else float(os.environ.get("AQMLAB_VM_TIMEOUT", str(600 + 60 * tr.duration * max(1, len(tr.flows) / 4))))
    try:
        on_line: Callable[[str], None] | None = None
        if progress is not None:
            report = progress

            def progress_line(line: str) -> None:
                v = parse_progress(line)
                if v is not None:
                    report(*v)

            on_line = progress_line

        run = vm.run_job(job, timeout=limit, memory_mb=mem, icount_shift=shift, image=image, on_line=on_line)
        if not run.exit_ok:
            raise vm.VmError(f"the guest did not finish the job: {run.console[-600:]}")
        raw, info = collect(job / "out", tr, seed=seed, wall_seconds=time.monotonic() - t)
    finally:
        if not keep:
            shutil.rmtree(job, ignore_errors=True)
    info.update(kernel=image.version, icount_shift=shift, memory_mb=mem)
    crng = re.search(r"aqmlab-vm: crng ready, waited from ([0-9.]+) to ([0-9.]+) s", run.console)
    if crng:
        # virtual seconds the guest's first getrandom() blocked (0 with RDRAND seeding)
        info["crng_wait_seconds"] = round(float(crng.group(2)) - float(crng.group(1)), 3)
    r = Result(raw, sc)
    r.engine_info = info
    return r


class LinuxEngineError(AqmlabError):
    """Raised when the Linux engine cannot run a scenario for a reason other than its content."""
