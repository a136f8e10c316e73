"""Turns the Linux engine's guest output into the raw result dict that
:class:`aqmlab.Result` takes (flows, queues, series, samples, warnings) and the engine's
own information (VM health, notes, kernel counters, captures)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

import aqmlab.linux.vm as vm
from aqmlab import schema
from aqmlab._longtable import LongTable
from aqmlab.linux.flows import TCP_MIB, iperf_flow, irtt_flow, ping_flow, tcp_counters
from aqmlab.linux.parse import cpu_busy, parse_class_samples, parse_mib, parse_tc_samples, port_times, read_text
from aqmlab.linux.queues import ldelay_series, queue_row, red_adaptation_note
from aqmlab.linux.translate import Translation

__all__ = ["CPU_SATURATED", "START_LAG_NOTE", "capture_info", "collect", "flow_base_columns", "queue_columns"]

#: A guest CPU busier than this in any bin after warm-up means the VM could not keep up.
CPU_SATURATED = 0.9

NAN = float("nan")


def flow_base_columns() -> list[str]:
    """The flows table's fixed columns (the core's schema)."""
    return schema.flow_columns()


def queue_columns() -> list[str]:
    """The queues table's columns in the simulator's order (the core's schema)."""
    return schema.queue_columns()


def collect(out: Path, tr: Translation, *, seed: int, wall_seconds: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """Turns the guest's output directory into the raw result dict that
    :class:`aqmlab.Result` takes, and the engine's own information."""
    times = {ln.split()[0]: float(ln.split()[1]) for ln in read_text(out, "times").splitlines() if len(ln.split()) == 2}
    if "t0" not in times:
        raise vm.VmError(f"the guest did not start the experiment (guest log: {read_text(out, 'guest.log')[-800:]!r})")
    t0 = times["t0"]
    # each client's launch and exit ("PORT UPTIME" lines), in seconds of the run
    starts, ends = port_times(out, "starts", t0), port_times(out, "ends", t0)
    lags: dict[str, float] = {}
    failed: list[str] = []
    dur, warm, binw = tr.duration, tr.warmup, tr.bin
    nbins = max(1, math.ceil(dur / binw - 1e-9))
    names = ["goodput_bps", "rtt", "owd_fwd", "owd_rev", "tx_bps", "drops", "backlog_max", "sojourn_mean", "ldelay"]
    series, samples = LongTable(names), LongTable(names)

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
            began = iperf_flow(out, f, st, warm, dur, binw, bins, row, ends.get(f.port))
            if began is None:
                failed.append(f.name)
            else:
                lags[f.name] = began - st
        elif f.tool == "ping":
            ping_flow(out, f, st, warm, row, samples, i)
        else:
            irtt_flow(out, f, st, warm, row, samples, i)
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
        text = read_text(out, f"final.mib.{ns}")
        if text:
            tcp_ns[ns] = tcp_counters(parse_mib(text))
    for i, f in enumerate(tr.flows):
        ns = tr.node_ns[f.src]
        alone = sum(1 for g in tr.flows if g.kind == "bulk" and tr.node_ns[g.src] == ns) == 1
        if f.kind == "bulk" and alone and ns in tcp_ns:
            for c in ("rtos", "fast_recoveries", "loss_probes", "loss_probe_recoveries", "lost_retransmits", "rto_undos", "recovery_undos"):
                if c in fl:
                    fl[c][i] = tcp_ns[ns][c]
    groups = tr.groups
    fl["group"] = [groups.get(f.name, 0) for f in tr.flows]

    # -- queues
    sampled = {ns: parse_tc_samples(read_text(out, f"tc.{ns}")) for ns in tr.sampled_ns}
    classes = {ns: parse_class_samples(read_text(out, f"cls.{ns}")) for ns in tr.sampled_ns}
    ldelay: dict[str, dict[str, float]] = {}
    qcols = queue_columns()
    q: dict[str, list] = {c: [] for c in qcols}
    for j, qm in enumerate(tr.queues):
        row = queue_row(out, qm, t0, warm, dur, binw, nbins, sampled.get(qm.ns), series, j, offloads=tr.offloads)
        ld = ldelay_series(qm, t0, warm, dur, binw, nbins, sampled.get(qm.ns), classes.get(qm.ns), series, j)
        if ld:
            ldelay[qm.name] = ld
        row.update(
            id=j,
            name=qm.name,
            **{"from": qm.src},
            to=qm.dst,
            qdisc=qm.qdisc,
            rate_bps=int(qm.rate_bps),
            delay=qm.delay,
            trace_vars="",
            lower="wire",
        )
        for c in qcols:
            q[c].append(row.get(c, NAN))
        # cake's per-tin counters: extra columns, as the simulator's table has them
        for c in (k for k in row if k.startswith("tin") and k not in q):
            q[c] = [NAN] * j
        for c in (k for k in q if k.startswith("tin")):
            q[c].append(row.get(c, NAN))

    # -- VM health
    busy = [(t - t0, b) for t, b in cpu_busy(read_text(out, "cpu"))]
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
        # mean sojourn by Little's law in packets (the drain time with offloads on);
        # drain-time percentiles divided by 1 + head drops / transmissions (docs/linux-engine.md)
        "sojourn_estimator": "drain-time" if tr.offloads else "littles-law-v3",
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
            f"iperf3 clients began their tests up to {lags[late]:.2f} s after their scheduled starts ({late}; mean "
            f"{info['start_lag']['mean']:.2f} s): "
            "iperf3's control messages and its data connection's SYN cross the bottleneck, where a loss costs a retransmission timeout (1 "
            "s for a SYN), "
            "and a busy guest CPU delays them further, so the kernel's start-up differs from the simulator's; goodput is measured from "
            "each test's own start"
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
            f"linux engine: the VM's CPU was saturated ({hot} of {len(after)} bins above {CPU_SATURATED:.0%} busy, peak "
            f"{info['cpu_busy_max']:.0%}): "
            "the kernel could not keep up, so results reflect the emulated CPU and not only the network; use fewer flows or a larger "
            "icount shift"
        )
    raw = schema.raw_result(
        version=_version(),
        seed=seed,
        duration=dur,
        warmup=warm,
        bin=binw,
        flows=fl,
        queues=q,
        series=series.arrays(),
        samples=samples.arrays(),
        # one list of metric names for both long tables (they share it)
        metric_names=list(dict.fromkeys(series.names + samples.names)),
        wall_seconds=wall_seconds,
        warnings=warnings,
    )
    return raw, info


# a start lag above this (s) is reported: iperf3's start-up alone takes 60-80 ms
START_LAG_NOTE = 0.25

_TCPDUMP_COUNTS = re.compile(r"(\d+) packets (captured|received by filter|dropped by kernel)")


def capture_info(out: Path, tr: Translation, t0: float) -> dict[str, Any]:
    """Where the opt-in captures are and how to read their clock: per captured queue its
    files (``in.<dev>``, ``out``) with tcpdump's counts (``dropped by kernel`` > 0 means
    the capture missed packets), and ``t0_real``: the CLOCK_REALTIME (the pcap timestamps')
    of the experiment's t = 0."""
    real = [ln.split() for ln in read_text(out, "times").splitlines() if ln.startswith("real ")]
    t0_real = float(real[0][1]) - (float(real[0][2]) - t0) if real and len(real[0]) == 3 else NAN
    caps: dict[str, Any] = {}
    for cm in tr.captures:
        files = {}
        for key, fn in cm.files().items():
            counts = {m.group(2).split()[0]: int(m.group(1)) for m in _TCPDUMP_COUNTS.finditer(read_text(out, fn[:-5] + ".err"))}
            files[key] = {"file": fn, "present": (out / fn).is_file(), **counts}
        caps[cm.queue] = {"ns": cm.ns, "dev": cm.dev, "ingress": cm.ingress, "files": files}
    return {"t0_real": t0_real, "queues": caps}


def _version() -> str:
    from aqmlab import __version__

    return __version__
