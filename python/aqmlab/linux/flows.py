"""The Linux engine's flows table: each flow's row and series from its tool's output
(iperf3's JSON for bulk and UDP flows, ping's replies, irtt's round trips) and the kernel
TCP counters of the senders' namespaces."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from aqmlab._longtable import LongTable, probe_summary
from aqmlab.linux.parse import parse_ping, read_json, read_text
from aqmlab.linux.translate import FlowMap

__all__ = ["TCP_MIB", "data_start", "iperf_flow", "irtt_flow", "ping_flow", "tcp_counters"]

NAN = float("nan")


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


def iperf_flow(
    out: Path, f: FlowMap, st: float, warm: float, dur: float, binw: float, bins: np.ndarray, row: dict, ended: float | None = None
) -> float | None:
    """Fills a bulk or UDP flow's row and goodput bins from iperf3's JSON; returns when
    its test began (:func:`data_start`), or None when iperf3 left no result."""
    srv = read_json(out, f"srv.{f.port}.json") or {}
    cli = read_json(out, f"cli.{f.port}.json") or {}
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


def ping_flow(out: Path, f: FlowMap, st: float, warm: float, row: dict, samples: LongTable, i: int) -> None:
    sent, rtts = parse_ping(read_text(out, f"ping.{f.port}"))
    assert f.interval is not None
    keep = []
    for seq, rtt in sorted(rtts.items()):
        t_send = st + (seq - 1) * f.interval
        samples.push(0, i, "rtt", t_send + rtt, rtt)
        if t_send >= warm:
            keep.append(rtt)
    sent_warm = sum(1 for s in range(1, sent + 1) if st + (s - 1) * f.interval >= warm)
    got_warm = sum(1 for s in rtts if 1 <= s <= sent and st + (s - 1) * f.interval >= warm)
    row.update(probe_summary(sent, (1 - got_warm / sent_warm) if sent_warm else NAN, keep))
    row["sent_pkts"] = float(sent)
    row["delivered_pkts"] = float(len(rtts))


def irtt_flow(out: Path, f: FlowMap, st: float, warm: float, row: dict, samples: LongTable, i: int) -> None:
    d = read_json(out, f"irtt.{f.port}.json") or {}
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
    sent = len(rts)
    lost = sum(1 for rt in rts if "rtt" not in (rt.get("delay") or {}))
    row.update(probe_summary(sent, lost / sent if sent else NAN, keep))
