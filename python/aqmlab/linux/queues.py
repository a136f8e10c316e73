"""The Linux engine's queues table: each measured qdisc's row and series from ``tc -s -d
-j qdisc show`` snapshots and samples (counters, drop and mark reasons, the sojourn
estimate, CAKE's tins) and the kernel's own ``ldelay`` samples of CoDel queues."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from aqmlab import schema
from aqmlab._longtable import LongTable, stats
from aqmlab.linux.parse import child, parse_tc_samples, read_text
from aqmlab.linux.translate import QueueMap

__all__ = ["CAKE_DUMP_ORDER", "TIN_COLUMNS", "cake_tins", "ldelay_sample", "ldelay_series", "queue_row", "red_adaptation_note"]

NAN = float("nan")


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
        e = child(entries, dev)
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


def ldelay_series(
    qm: QueueMap,
    t0: float,
    warm: float,
    dur: float,
    binw: float,
    nbins: int,
    samples: list | None,
    classes: list | None,
    series: LongTable,
    j: int,
) -> dict[str, float]:
    """Statistics of the kernel's ``ldelay`` samples of a codel or fq_codel queue after the
    warm-up (seconds; ``n`` samples), and its per-bin mean as the ``ldelay`` series."""
    pts: list[tuple[float, float]] = []
    if qm.qdisc in ("codel", "cake") and samples:
        for t, entries in samples:
            e = child(entries, qm.dev)
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
    s = stats(keep)
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


def littles_mean(drain_mean: float, qlens: list[float], leave: float, offloads: bool) -> float:
    """The queue's mean sojourn: Little's law in packets (time-average queue length over
    the rate at which packets leave) where the counters allow it, else ``drain_mean`` (the
    byte-weighted drain time backlog / rate). With segmentation offloads on, the qdisc's
    queue length counts skbs while its packet counters count segments (``bstats_update``
    adds ``gso_segs``), so the ratio would shrink by the mean segments per skb: the drain
    time is used instead."""
    if offloads or not qlens or not (leave == leave and leave > 0) or not all(x == x for x in qlens):
        return drain_mean
    return float(np.mean(qlens)) / leave


def queue_row(
    out: Path,
    qm: QueueMap,
    t0: float,
    warm: float,
    dur: float,
    binw: float,
    nbins: int,
    samples: list | None,
    series: LongTable,
    j: int,
    offloads: bool = False,
) -> dict:
    fin_s = parse_tc_samples(read_text(out, f"final.{qm.ns}"))
    fin = child(fin_s[0][1], qm.dev) if fin_s else None
    if warm > 0:
        w_s = parse_tc_samples(read_text(out, f"warm.{qm.ns}"))
        w = child(w_s[0][1], qm.dev) if w_s else None
    else:
        w = {
            "bytes": 0,
            "packets": 0,
            "drops": 0,
            "qlen": 0,
            "ecn_mark": 0,
            "drop_overlimit": 0,
            "dropped": 0,
            "overlimit": 0,
            "drop_overmemory": 0,
            "marked": 0,
        }
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
            e = child(entries, qm.dev)
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
    s = stats([x * scale for x in est])
    # The mean by Little's law in packets: time-average queue length over the rate at which
    # packets leave (transmitted + dropped at the head). That is the mean over packets, as
    # the simulator's; the drain time backlog/rate above is a byte-weighted mean, which is
    # the same only when sojourn does not depend on packet size: under FQ, small ACKs in
    # their own sparse queues wait far less than data (RRUL), and on a link that is not
    # always busy the queue does not drain at the link rate.
    leave = (tx_pk + (head if head == head else 0.0)) / span if span > 0 and tx_pk == tx_pk else NAN
    s["mean"] = littles_mean(s["mean"], qlens, leave, offloads)
    row.update(
        sojourn_n=float(len(est)) if samples else NAN,
        sojourn_mean=s["mean"],
        sojourn_p50=s["p50"],
        sojourn_p90=s["p90"],
        sojourn_p99=s["p99"],
        sojourn_max=s["max"],
    )
    return row
