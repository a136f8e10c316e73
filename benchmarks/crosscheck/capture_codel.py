"""Per-packet view of a CoDel bottleneck on both engines (issue #19, docs/validation.md
"Residential RRUL under CoDel: the kernel's queues are longer").

Kernel side: the two header captures the Linux engine takes around a queue when asked
(``campaign.py CASE --capture bottleneck_up``, files ``cap.<queue>.in.<dev>.pcap`` and
``cap.<queue>.out.pcap`` in ``results/raw/CASE``): every packet that reaches the router
from the ingress side and every packet the shaper releases. Matched by their headers (IP
addresses, protocol, IP ID, ports, TCP sequence and acknowledgement numbers), they give each
packet's arrival at the qdisc, its release (or that it was dropped) and its frame size.

Simulator side: ``run.packet_trace`` (docs/scenario.md) of the same scenario: each
packet CoDel hands out (``sojourn``, logged at the instant CoDel dequeues it), each drop
(``drop``, the time it waited) and each arrival (``qlen``). Arrival = time − sojourn, the
FIFO order is the arrival order. The trace has no packet sizes: a handed-out packet's
frame size is the gap to the next dequeue when the next packet was already waiting (the
tbf releases it after size / 10 Mbit/s and the 1 Gbit/s wire takes size / 1 Gbit/s before
the shaper peeks again); the others (queue empty after it, drops) are unknown and taken as
full frames (``--sim-drop-size`` to check the sensitivity).

Both traces then go through the same offline replay of Linux's CoDel
(``include/net/codel_impl.h`` of 6.1: ``codel_dequeue``/``codel_should_drop``; the
simulator's ``crates/aqmlab-core/src/qdisc/codel_core.rs`` follows it line by line) under
the tbf's peek: CoDel runs when the shaper looks for the next packet, which is when the
previous one was released (queue non-empty then) or when a packet arrives at an idle
shaper. The replay's drops are checked against the observed ones, and each dropping
episode is classified by how it ended: the examined packet waited less than ``target``
(``below_target``), it left at most one MTU (1514 B) behind it (``backlog_le_mtu``), the
queue was empty (``empty``), or ``first_above_time`` had been reset by the packet examined
right after the episode's entry drop, whose verdict ``codel_dequeue`` ignores
(``first_above_reset``).

    .venv/bin/python benchmarks/crosscheck/capture_codel.py results/raw/res_rrul_codel_reno_cap [--queue bottleneck_up]
"""

from __future__ import annotations

import argparse
import json
import math
import struct
import tomllib
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

MTU_FRAME = 1514  # psched_mtu(): dev->mtu + hard_header_len
SMALL = 200  # frames below this are ACKs (or probes)


# ---------------------------------------------------------------------------------------
# pcap


@dataclass
class Pkt:
    """One captured frame: time (ns, capture clock), frame bytes and the header fields
    that identify it at both capture points."""

    t: int
    size: int
    key: tuple
    kind: str  # "data" (TCP with payload), "ack" (TCP without), "other" (ICMP, UDP ...)
    flow: str


def read_pcap(path: str | Path) -> list[Pkt]:
    """IPv4 frames of a pcap (microsecond or nanosecond timestamps, Ethernet link type);
    everything else (ARP, IPv6) is skipped."""
    b = Path(path).read_bytes()
    if len(b) < 24:
        return []
    magic = struct.unpack("<I", b[:4])[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        end = "<"
    else:
        end = ">"
        magic = struct.unpack(">I", b[:4])[0]
    scale = 1 if magic == 0xA1B23C4D else 1000
    out: list[Pkt] = []
    off = 24
    hdr = struct.Struct(end + "IIII")
    while off + 16 <= len(b):
        sec, frac, incl, orig = hdr.unpack_from(b, off)
        off += 16
        d = b[off:off + incl]
        off += incl
        if len(d) < 34 or d[12:14] != b"\x08\x00":
            continue
        ip = d[14:]
        ihl = (ip[0] & 15) * 4
        tot, ipid = struct.unpack(">HH", ip[2:6])
        proto = ip[9]
        src, dst = ip[12:16], ip[16:20]
        l4 = ip[ihl:]
        t = sec * 1_000_000_000 + frac * scale
        s, dd = ".".join(map(str, src)), ".".join(map(str, dst))
        if proto == 6 and len(l4) >= 16:
            sp, dp, seq, ack = struct.unpack(">HHII", l4[:12])
            doff = (l4[12] >> 4) * 4
            payload = tot - ihl - doff
            key = (src, dst, proto, ipid, sp, dp, seq, ack)
            out.append(Pkt(t, orig, key, "data" if payload > 0 else "ack", f"{s}:{sp}>{dd}:{dp}"))
        elif proto == 17 and len(l4) >= 4:
            sp, dp = struct.unpack(">HH", l4[:4])
            out.append(Pkt(t, orig, (src, dst, proto, ipid, sp, dp), "other", f"udp {s}:{sp}>{dd}:{dp}"))
        else:
            extra = tuple(l4[:8]) if proto == 1 else ()
            out.append(Pkt(t, orig, (src, dst, proto, ipid) + extra, "other", f"proto{proto} {s}>{dd}"))
    return out


# ---------------------------------------------------------------------------------------
# trace


@dataclass
class QPkt:
    """A packet through the queue: arrival (s), frame bytes, kind, and what happened to
    it: ``release`` (s) if it left, ``None`` if it was dropped. ``call`` is the instant
    CoDel handed it out, when the trace knows it (the simulator's)."""

    arr: float
    size: int
    kind: str
    release: float | None
    call: float | None = None
    flow: str = ""

    @property
    def dropped(self) -> bool:
        return self.release is None and self.call is None


@dataclass
class Trace:
    packets: list[QPkt]  # FIFO (arrival) order
    unmatched_out: int = 0
    info: dict = field(default_factory=dict)


def match_capture(ingress: list[Pkt], egress: list[Pkt], t0: int = 0) -> Trace:
    """Pairs each released frame with its arrival (first unmatched arrival with the same
    header key): packets in arrival order with their release, or dropped. Times in
    seconds from ``t0`` (ns, the capture clock)."""
    pending: dict[tuple, deque[int]] = defaultdict(deque)
    for i, p in enumerate(ingress):
        pending[p.key].append(i)
    rel: dict[int, float] = {}
    unmatched = 0
    for p in egress:
        q = pending.get(p.key)
        if not q:
            unmatched += 1
            continue
        i = q.popleft()
        rel[i] = (p.t - t0) * 1e-9
    pk = [QPkt((p.t - t0) * 1e-9, p.size, p.kind, rel.get(i), flow=p.flow) for i, p in enumerate(ingress)]
    return Trace(pk, unmatched)


def sim_trace(
    samples,
    queue: str,
    rate_bps: float,
    wire_bps: float,
    drop_size: int = MTU_FRAME,
    burst: int = MTU_FRAME,
    shaper: str = "tbf",
    lone_size: int = 66,
) -> Trace:
    """The simulator's packet trace of ``queue`` (the samples table of a run with
    ``run.packet_trace``) as a :class:`Trace`: CoDel's dequeue instants (``call``) of the
    packets it handed out and the drops, in FIFO order, with frame sizes from the gaps
    between dequeues.

    Sizes: after handing out a packet of s bytes at D with b bytes in the shaper's bucket
    (depth ``burst``, filled at ``rate_bps``), the shaper releases it at
    D + max(0, s - b) / rate (tbf; htb charges after sending, so never later than D) and
    looks again when the ``wire_bps`` wire has carried it, s / wire later. When the packet
    behind was already waiting, that next dequeue instant gives s; the bucket is followed
    from release to release. A packet with nobody behind it (the queue idle after it) has
    no such gap: taken as ``lone_size`` if it also arrived at an idle shaper (a lone
    packet: ACKs and probes; a data packet nearly always has a second one 1.2 µs behind
    it), else as a full frame. Drops: ``drop_size``. ``info`` counts the guesses."""
    s = samples[(samples["kind"] == "queue") & (samples["entity"] == queue)]
    ev = []
    for m, kind in (("sojourn", "sent"), ("drop", "drop")):
        x = s[s["metric"] == m]
        for t, v in zip(x["t"].to_numpy(), x["value"].to_numpy()):
            if kind == "drop" and v <= 0:
                continue  # refused on arrival: never in the queue
            ev.append((t - v, t, kind))
    # FIFO order: by arrival, and packets that arrived at the same instant (a burst at
    # the access rate of 10 Gbit/s) in the order they left (a drop before the packet the
    # same dequeue hands out); to the ns, as the simulator's clock (t - v is not exact in
    # floating point)
    ev.sort(key=lambda e: (round(e[0] * 1e9), e[1], e[2] != "drop"))
    calls = np.array(sorted({t for _, t, _ in ev}))
    r8, w8 = 8 / rate_bps, 8 / wire_bps
    pk: list[QPkt] = []
    lone = other = 0
    tokens, last = float(burst), -math.inf  # bucket bytes after the last release, and when
    for i, (arr, t, kind) in enumerate(ev):
        if kind == "drop":
            pk.append(QPkt(arr, drop_size, "?", None))
            continue
        b = min(float(burst), tokens + (t - last) / r8) if last > -math.inf else float(burst)
        j = np.searchsorted(calls, t, side="right")
        nxt = calls[j] if j < len(calls) else None
        behind = ev[i + 1][0] if i + 1 < len(ev) else None
        if nxt is not None and behind is not None and behind < nxt - 1e-9:
            gap = nxt - t
            if shaper == "tbf":
                size = (gap + b * r8) / (r8 + w8)
                if size <= b:
                    size = gap / w8
            else:
                size = gap / (r8 + w8)
            size = MTU_FRAME if size > 1000 else max(int(round(size)), 28)
        elif t - arr < 1e-9:
            size, lone = lone_size, lone + 1
        else:
            size, other = MTU_FRAME, other + 1
        rel = t + max(0.0, size - b) * r8 if shaper == "tbf" else t
        tokens, last = b + (rel - t) / r8 - size, rel
        pk.append(QPkt(arr, size, "ack" if size < SMALL else "data", None, call=t))
    qlen = s[s["metric"] == "qlen"]
    return Trace(pk, 0, {"size_guessed_lone": lone, "size_guessed_other": other, "arrivals_logged": len(qlen)})


# ---------------------------------------------------------------------------------------
# CoDel replay (Linux codel_impl.h, 6.1)

REC_INV_SQRT_BITS = 16
REC_INV_SQRT_SHIFT = 32 - REC_INV_SQRT_BITS


def newton_step(rec_inv_sqrt: int, count: int) -> int:
    """codel_Newton_step (u64 arithmetic with wrap-around, Q0.16 storage)."""
    invsqrt = rec_inv_sqrt << REC_INV_SQRT_SHIFT
    invsqrt2 = (invsqrt * invsqrt) >> 32
    val = ((3 << 32) - count * invsqrt2) & ((1 << 64) - 1)
    val >>= 2
    val = ((val * invsqrt) & ((1 << 64) - 1)) >> (32 - 2 + 1)
    return (val >> REC_INV_SQRT_SHIFT) & 0xFFFF


def control_law(t: int, interval: int, rec_inv_sqrt: int) -> int:
    return t + ((interval * (rec_inv_sqrt << REC_INV_SQRT_SHIFT)) >> 32)


@dataclass
class Episode:
    start: float
    count0: int  # count after the entry drop's re-entry rule
    drops: int = 1
    end: float | None = None
    reason: str = ""
    end_kind: str = ""  # the examined packet's kind at the end
    end_sojourn: float = math.nan
    end_backlog: int = 0
    end_acks: int = 0  # packets in the queue at the end: ACKs / all
    end_qlen: int = 0
    max_count: int = 0
    entry_next: str = ""  # should_drop's (ignored) verdict on the packet after the entry drop


@dataclass
class Replay:
    drops: list[int]  # packet indices the replay dropped
    episodes: list[Episode]
    calls: int
    counts_at_drop: list[int]
    sojourn_sent: list[float]  # CoDel's sojourn (at its dequeue) of packets handed out


class _Queue:
    """The FIFO as CoDel sees it at an instant: packets that have arrived and not left."""

    def __init__(self, pk: list[QPkt]) -> None:
        self.pk = pk
        self.head = 0  # next packet to pop
        self.tail = 0  # packets [head, tail) have arrived
        self.backlog = 0

    def admit(self, t: float) -> None:
        while self.tail < len(self.pk) and self.pk[self.tail].arr <= t:
            self.backlog += self.pk[self.tail].size
            self.tail += 1

    def pop(self) -> int | None:
        if self.head >= self.tail:
            return None
        i = self.head
        self.head += 1
        self.backlog -= self.pk[i].size
        return i

    def composition(self) -> tuple[int, int]:
        n = self.tail - self.head
        acks = sum(1 for k in range(self.head, self.tail) if self.pk[k].kind == "ack")
        return acks, n


def replay(tr: Trace, *, target: float = 5e-3, interval: float = 100e-3, mtu: int = MTU_FRAME,
           release: Callable[[int, float], float] | None = None, t_from: float = -math.inf, t_to: float = math.inf,
           rate_bps: float = 10e6) -> Replay:
    """Runs Linux CoDel over the trace's arrivals, calling ``codel_dequeue`` when the
    shaper looks for a packet: when the previous one was released with the queue
    non-empty, else at the next arrival. ``release(i, t_call)`` is the instant packet i,
    handed out at ``t_call``, frees the shaper (default: the observed release, or the
    instant of the next observed dequeue for the simulator, else ``t_call`` + its
    transmission time at ``rate_bps``). Episodes and drops are kept for calls in
    [t_from, t_to)."""
    pk = tr.packets
    ns = 1e9
    tgt, ivl = int(target * ns), int(interval * ns)
    q = _Queue(pk)
    calls_obs = np.array(sorted({p.call for p in pk if p.call is not None}))

    def default_release(i: int, tc: float) -> float:
        p = pk[i]
        if p.release is not None:
            return p.release
        if p.call is not None and len(calls_obs):
            j = np.searchsorted(calls_obs, p.call, side="right")
            if j < len(calls_obs):
                return float(calls_obs[j])
        return tc + p.size * 8 / rate_bps

    rel = release or default_release
    # codel_vars
    count = lastcount = 0
    dropping = False
    rec = 0
    first_above = 0  # 0: not above (the kernel's sentinel)
    drop_next = 0
    drops: list[int] = []
    episodes: list[Episode] = []
    counts: list[int] = []
    soj_sent: list[float] = []
    ep: Episode | None = None
    ncalls = 0

    def should_drop(i: int | None, now: int) -> tuple[bool, str]:
        nonlocal first_above
        if i is None:
            first_above = 0
            return False, "empty"
        ld = now - int(pk[i].arr * ns)
        if ld < tgt:
            first_above = 0
            return False, "below_target"
        if q.backlog <= mtu:
            first_above = 0
            return False, "backlog_le_mtu"
        if first_above == 0:
            first_above = now + ivl
            return False, "first_above_reset"
        return (now > first_above), "not_yet"

    def end_episode(now: int, i: int | None, why: str, keep: bool) -> None:
        nonlocal ep
        if ep is not None and keep:
            ep.end = now / ns
            ep.reason = why
            if i is not None:
                ep.end_kind = pk[i].kind
                ep.end_sojourn = (now - int(pk[i].arr * ns)) / ns
            ep.end_backlog = q.backlog
            ep.end_acks, ep.end_qlen = q.composition()
            episodes.append(ep)
        ep = None

    t_free = -math.inf
    while True:
        # next call: when the shaper frees if something is queued then, else next arrival
        q.admit(t_free)
        if q.head < q.tail:
            tc = t_free
        elif q.tail < len(pk):
            tc = pk[q.tail].arr
            q.admit(tc)
        else:
            break
        ncalls += 1
        now = int(round(tc * ns))
        keep = t_from <= tc < t_to
        i = q.pop()
        if i is None:  # cannot happen (something is queued), kept as in the kernel
            dropping = False
            continue
        drop, why = should_drop(i, now)
        if dropping:
            if not drop:
                dropping = False
                end_episode(now, i, "first_above_reset" if why in ("first_above_reset", "not_yet") else why, keep)
            elif now >= drop_next:
                while dropping and now >= drop_next:
                    count += 1
                    rec = newton_step(rec, count)
                    if keep:
                        drops.append(i)
                        counts.append(count)
                    if ep is not None:
                        ep.drops += 1
                        ep.max_count = max(ep.max_count, count)
                    i = q.pop()
                    drop, why = should_drop(i, now)
                    if not drop:
                        dropping = False
                        end_episode(now, i, "first_above_reset" if why in ("first_above_reset", "not_yet") else why, keep)
                    else:
                        drop_next = control_law(drop_next, ivl, rec)
        elif drop:
            if keep:
                drops.append(i)
            i = q.pop()
            drop, why = should_drop(i, now)  # verdict ignored, as in the kernel
            dropping = True
            delta = (count - lastcount) & 0xFFFFFFFF
            if delta > 1 and now - drop_next < 16 * ivl:
                count = delta
                rec = newton_step(rec, count)
            else:
                count = 1
                rec = 0xFFFFFFFF >> REC_INV_SQRT_SHIFT
            lastcount = count
            drop_next = control_law(now, ivl, rec)
            if keep:
                counts.append(count)
            ep = Episode(tc, count, 1, max_count=count, entry_next=why)
        if i is None:
            # nothing handed out: the next arrival calls. (An entry drop that empties the
            # queue leaves dropping set, as in the kernel; that next call decides.)
            t_free = tc
            continue
        if keep:
            soj_sent.append((now - int(pk[i].arr * ns)) / ns)
        t_free = max(rel(i, tc), tc)
    return Replay(drops, episodes, ncalls, counts, soj_sent)


# ---------------------------------------------------------------------------------------
# summaries


def classify(rp: Replay) -> dict:
    eps = [e for e in rp.episodes if e.end is not None]
    reasons = Counter(e.reason for e in eps)
    n = len(eps)
    d = np.array([e.drops for e in eps]) if eps else np.zeros(0)
    out = {
        "episodes": n,
        "drops": len(rp.drops),
        "drops_per_episode_mean": float(d.mean()) if n else math.nan,
        "drops_per_episode": {k: int((d == k).sum()) for k in (1, 2, 3)} | {">3": int((d > 3).sum())},
        "count_at_entry_max": max((e.count0 for e in eps), default=0),
        "count_max": max(rp.counts_at_drop, default=0),
        "entries_with_count_gt1": sum(1 for e in eps if e.count0 > 1),
        "ends": {r: reasons.get(r, 0) for r in ("below_target", "backlog_le_mtu", "empty", "first_above_reset")},
        "entry_next": dict(Counter(e.entry_next for e in eps)),
        "end_packet_ack": sum(1 for e in eps if e.end_kind == "ack"),
        "end_queue_ack_fraction": float(np.mean([e.end_acks / e.end_qlen for e in eps if e.end_qlen]))
        if any(e.end_qlen for e in eps)
        else math.nan,
        "end_qlen_median": float(np.median([e.end_qlen for e in eps])) if n else math.nan,
        "duration_ms_median": float(np.median([(e.end - e.start) * 1e3 for e in eps])) if n else math.nan,
        "sojourn_ms_mean": float(np.mean(rp.sojourn_sent) * 1e3) if rp.sojourn_sent else math.nan,
    }
    return out


def check_drops(tr: Trace, rp: Replay, t_from: float, t_to: float) -> dict:
    """The replay's drops against the trace's (packets in the window that never left)."""
    obs = {i for i, p in enumerate(tr.packets) if p.dropped and t_from <= p.arr < t_to}
    rep = {i for i in rp.drops if t_from <= tr.packets[i].arr < t_to}
    return {
        "observed": len(obs),
        "replay": len(rep),
        "both": len(obs & rep),
        "only_observed": len(obs - rep),
        "only_replay": len(rep - obs),
    }


def arrivals(tr: Trace, t_from: float, t_to: float, gap_us: float = 100.0) -> dict:
    """The arrival process into the queue: ACK inter-arrival times, bursts (arrivals less
    than ``gap_us`` apart), share of ACKs."""
    a = [p for p in tr.packets if t_from <= p.arr < t_to]
    t = np.array([p.arr for p in a])
    acks = np.array([p.arr for p in a if p.kind == "ack"])
    ia = np.diff(acks) * 1e6 if len(acks) > 1 else np.zeros(0)
    bursts: list[int] = []
    run = 1
    for g in np.diff(t) * 1e6:
        if g < gap_us:
            run += 1
        else:
            bursts.append(run)
            run = 1
    bursts.append(run)
    b = np.array(bursts)
    # ACK runs: consecutive small packets in FIFO order with no data between them. A run
    # of n ACKs means no data arrived for n ACK gaps (1.2-2.4 ms each); one of >= 19
    # (19 x 78 B <= 1514 B) is a tail that passes CoDel's "backlog <= one MTU" test
    # whenever the data ahead of it has left
    runs: list[int] = []
    n = 0
    for p in a:
        if p.size < SMALL:
            n += 1
        elif n:
            runs.append(n)
            n = 0
    r = np.array(runs or [0])
    # data clumps: data arrivals less than 5 ms apart
    d = np.array([p.arr for p in a if p.size >= SMALL])
    gaps = np.diff(d) if len(d) > 1 else np.zeros(0)
    q = [10, 25, 50, 75, 90]
    return {
        "ack_run_mean": float(r.mean()),
        "acks_in_runs_ge19": float(r[r >= 19].sum() / max(r.sum(), 1)),
        "data_clumps": int((gaps >= 5e-3).sum() + 1) if len(d) else 0,
        "data_clump_mean": float(len(d) / ((gaps >= 5e-3).sum() + 1)) if len(d) else math.nan,
        "data_silence_ms_mean": float(gaps[gaps >= 5e-3].mean() * 1e3) if (gaps >= 5e-3).any() else math.nan,
        "packets": len(a),
        "ack_fraction": float(len(acks) / len(a)) if a else math.nan,
        "ack_interarrival_us_pct": dict(zip(map(str, q), np.percentile(ia, q).round(1).tolist())) if len(ia) else {},
        "ack_interarrival_below_20us": float((ia < 20).mean()) if len(ia) else math.nan,
        "burst_mean": float(b.mean()),
        "burst_pct": dict(zip(["50", "90", "99"], np.percentile(b, [50, 90, 99]).tolist())),
        "packets_in_bursts_ge4": float(b[b >= 4].sum() / b.sum()),
    }


def sojourn_from_trace(tr: Trace, t_from: float, t_to: float) -> dict:
    """Observed sojourn to the release (kernel) or to CoDel's dequeue (simulator)."""
    s = np.array(
        [((p.release if p.release is not None else p.call) - p.arr) for p in tr.packets if not p.dropped and t_from <= p.arr < t_to]
    )
    q = [10, 25, 50, 75, 90]
    return {"n": len(s), "mean_ms": float(s.mean() * 1e3), "pct_ms": dict(zip(map(str, q), (np.percentile(s, q) * 1e3).round(2).tolist()))}


# ---------------------------------------------------------------------------------------
# engines


def kernel_trace(raw: Path, queue: str, shaper: str = "tbf") -> tuple[Trace, dict]:
    """The kernel's trace of ``queue`` from a kept job (``results/raw/CASE``): times in
    seconds of the experiment (t = 0 at the flows' start). Under ``htb`` (no peek) CoDel
    hands a packet out when htb sends it: its release is also its dequeue (``call``),
    and the shaper looks again at the next release."""
    out = raw / "out" if (raw / "out").is_dir() else raw
    times = {ln.split()[0]: ln.split()[1:] for ln in (out / "times").read_text().splitlines() if ln.split()}
    t0_up = float(times["t0"][0])
    real, up = (float(x) for x in times["real"])
    t0 = int(round((real - (up - t0_up)) * 1e9))
    ins = sorted(out.glob(f"cap.{queue}.in.*.pcap"))
    ingress = sorted((p for f in ins for p in read_pcap(f)), key=lambda p: p.t)
    egress = read_pcap(out / f"cap.{queue}.out.pcap")
    tr = match_capture(ingress, egress, t0)
    # frames that arrived but were not for this queue (e.g. to the router itself) are
    # neither released nor dropped by it: only destinations that the queue serves count
    served = {p.flow.split(">")[1].split(":")[0] for p in tr.packets if p.release is not None}
    tr.packets = [p for p in tr.packets if p.flow.split(">")[1].split(":")[0] in served]
    if shaper == "htb":
        for p in tr.packets:
            p.call, p.release = p.release, None
    errs = {f.name: f.read_text() for f in out.glob(f"cap.{queue}.*.err")}
    return tr, {"unmatched_out": tr.unmatched_out, "tcpdump": errs}


def ack_clock_lag(up: Trace, down: Trace, delay: float, t_from: float, t_to: float) -> dict:
    """How directly the upload senders are ACK-clocked (kernel, both queues captured):
    for each upload data packet reaching the upstream queue, the time since the last ACK
    of its flow left the downstream queue plus the one-way ``delay`` to the sender (µs).
    Data sent at once on an ACK shows the hosts' and the router's processing time only."""
    acks: dict[tuple[str, str], list[float]] = defaultdict(list)
    for p in down.packets:
        if p.kind == "ack" and p.release is not None:
            src, dst = p.flow.split(">")
            acks[(dst, src)].append(p.release)
    lags = []
    for p in up.packets:
        if p.kind != "data" or not t_from <= p.arr < t_to:
            continue
        src, dst = p.flow.split(">")
        a = acks.get((src, dst))
        if not a:
            continue
        i = int(np.searchsorted(a, p.arr - delay, side="right")) - 1
        if i >= 0:
            lags.append((p.arr - delay - a[i]) * 1e6)
    x = np.array(lags)
    if not len(x):
        return {}
    return {
        "n": len(x),
        "pct_us": dict(zip(["10", "50", "90", "99"], np.percentile(x, [10, 50, 90, 99]).round(1).tolist())),
        "share_below_200us": float((x < 200).mean()),
    }


def sim_run(toml: Path, queue: str, t_from: float, t_to: float, seed: int | None = None):
    import aqmlab

    sc = aqmlab.load_scenario(str(toml))
    d = sc.to_dict()
    d["run"]["packet_trace"] = [[f"{t_from!r}s", f"{t_to!r}s"]]
    return aqmlab.run(d, seed=seed)


def analyse(tr: Trace, t_from: float, t_to: float) -> dict:
    rp = replay(tr, t_from=t_from, t_to=t_to)
    return {
        "classification": classify(rp),
        "drops_check": check_drops(tr, rp, t_from, t_to),
        "arrivals": arrivals(tr, t_from, t_to),
        "sojourn": sojourn_from_trace(tr, t_from, t_to),
    }


def table(rows: dict[str, dict]) -> str:
    """A Markdown table of :func:`analyse` results, one column per engine."""
    names = list(rows)
    lines = ["| | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]

    def row(label: str, get: Callable[[dict], object]) -> None:
        vals = []
        for n in names:
            try:
                v = get(rows[n])
            except (KeyError, TypeError):
                v = "–"
            vals.append(f"{v:.2f}" if isinstance(v, float) else str(v))
        lines.append(f"| {label} | " + " | ".join(vals) + " |")

    c = "classification"
    row("dropping episodes", lambda r: r[c]["episodes"])
    row("drops (replay)", lambda r: r[c]["drops"])
    row(
        "drops observed / replay / both",
        lambda r: f"{r['drops_check']['observed']} / {r['drops_check']['replay']} / {r['drops_check']['both']}",
    )
    row("drops per episode (mean)", lambda r: r[c]["drops_per_episode_mean"])
    row("episodes with 1 / 2 / 3 / >3 drops", lambda r: " / ".join(str(v) for v in r[c]["drops_per_episode"].values()))
    row("count max; entries with count > 1", lambda r: f"{r[c]['count_max']}; {r[c]['entries_with_count_gt1']}")
    for k in ("below_target", "backlog_le_mtu", "empty", "first_above_reset"):
        row(f"ended: {k}", lambda r, k=k: r[c]["ends"][k])
    row("after the entry drop: should_drop verdicts", lambda r: ", ".join(f"{k} {v}" for k, v in sorted(r[c]["entry_next"].items())))
    row("ended on an ACK (examined packet)", lambda r: r[c]["end_packet_ack"])
    row("queue at the end: median packets; ACK share", lambda r: f"{r[c]['end_qlen_median']:.0f}; {r[c]['end_queue_ack_fraction']:.2f}")
    row("episode length ms (median)", lambda r: r[c]["duration_ms_median"])
    row("CoDel's sojourn of sent packets, mean ms", lambda r: r[c]["sojourn_ms_mean"])
    row("arrivals; ACK share", lambda r: f"{r['arrivals']['packets']}; {r['arrivals']['ack_fraction']:.2f}")
    row(
        "ACK inter-arrival µs p10/p25/p50/p75/p90",
        lambda r: " / ".join(f"{v:g}" for v in r["arrivals"]["ack_interarrival_us_pct"].values()),
    )
    row("ACK inter-arrivals < 20 µs", lambda r: r["arrivals"]["ack_interarrival_below_20us"])
    row(
        "burst size (< 100 µs apart) mean; p90; p99",
        lambda r: f"{r['arrivals']['burst_mean']:.2f}; {r['arrivals']['burst_pct']['90']:g}; {r['arrivals']['burst_pct']['99']:g}",
    )
    row("packets in bursts of >= 4", lambda r: r["arrivals"]["packets_in_bursts_ge4"])
    row(
        "ACK runs (no data between): mean; share of ACKs in runs >= 19",
        lambda r: f"{r['arrivals']['ack_run_mean']:.2f}; {r['arrivals']['acks_in_runs_ge19']:.2f}",
    )
    row(
        "data clumps (< 5 ms apart): number; mean packets; mean silence ms",
        lambda r: f"{r['arrivals']['data_clumps']}; {r['arrivals']['data_clump_mean']:.1f}; {r['arrivals']['data_silence_ms_mean']:.1f}",
    )
    return "\n".join(lines)


def main(argv: Iterable[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", help="a kept job with captures (results/raw/CASE)")
    ap.add_argument("--queue", default="bottleneck_up")
    ap.add_argument("--toml", default=None, help="the case's scenario (default results/CASE.toml)")
    ap.add_argument("--seeds", default="", help="also the simulator with these seeds (comma separated; default the scenario's only)")
    ap.add_argument("--sim-drop-size", type=int, default=MTU_FRAME, help="frame bytes assumed for the simulator's dropped packets")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(list(argv) if argv is not None else None)
    raw = Path(a.raw)
    toml = Path(a.toml) if a.toml else HERE / "results" / f"{raw.name}.toml"
    sc = tomllib.loads(toml.read_text())
    from aqmlab.linux.translate import parse_duration

    t_from = parse_duration(sc["run"].get("warmup", "0s"), "run.warmup")
    t_to = parse_duration(sc["run"]["duration"], "run.duration") - 1.0
    rows: dict[str, dict] = {}
    direction = "up" if a.queue.endswith("_up") else "down"
    shaper = sc.get("dumbbell", {}).get(direction, {}).get("shaper", {}).get("kind", "htb")
    ktr, kinfo = kernel_trace(raw, a.queue, shaper)
    rows["kernel"] = analyse(ktr, t_from, t_to) | {"capture": kinfo}
    other = a.queue.replace("_up", "_down") if direction == "up" else a.queue.replace("_down", "_up")
    if direction == "up" and any(raw.glob(f"**/cap.{other}.out.pcap")):
        dtr, _ = kernel_trace(raw, other, shaper)
        if shaper == "htb":
            for p in dtr.packets:
                p.release = p.call
        delay = parse_duration(sc.get("dumbbell", {}).get("delay", "0s"), "dumbbell.delay")
        rows["kernel"]["ack_clock_lag"] = ack_clock_lag(ktr, dtr, delay, t_from, t_to)
    seeds = [None] + [int(s) for s in a.seeds.split(",") if s]
    for sd in seeds:
        r = sim_run(toml, a.queue, 0.0, t_to + 1.0, sd)
        st = sim_trace(r.samples, a.queue, 10e6, 1e9, a.sim_drop_size, shaper=shaper)
        rows[f"sim seed {sd or sc['run'].get('seed', 1)}"] = analyse(st, t_from, t_to) | {"trace": st.info}
    if a.json:
        print(json.dumps(rows, indent=1, default=str))
    else:
        print(table(rows))


if __name__ == "__main__":
    main()
