"""Parsers of the Linux engine's guest output: the files the guest script leaves in the
job's ``out/`` directory (``tc`` JSON and text dumps, ``/proc/net`` MIB counters, ping
output, ``/proc/stat`` CPU lines, the clients' launch and exit times) turned into Python
values. Nothing here knows about the result tables (:mod:`aqmlab.linux.collect`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

__all__ = [
    "child",
    "cpu_busy",
    "parse_class_samples",
    "parse_mib",
    "parse_ping",
    "parse_tc_samples",
    "port_times",
    "read_json",
    "read_text",
]


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


def child(entries: list[dict], dev: str) -> dict | None:
    for e in entries:
        if e.get("dev") == dev and e.get("handle") == "10:":
            return e
    return None


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


def read_text(d: Path, name: str) -> str:
    p = d / name
    return p.read_text(errors="replace") if p.is_file() else ""


def read_json(d: Path, name: str) -> dict | None:
    try:
        return json.loads(read_text(d, name))
    except json.JSONDecodeError:
        return None


def cpu_busy(text: str) -> list[tuple[float, float]]:
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


def port_times(out: Path, name: str, t0: float) -> dict[int, float]:
    """The guest's "PORT UPTIME" lines of ``name`` (the clients' launches or exits) as
    seconds of the run by port."""
    return {int(ln.split()[0]): float(ln.split()[1]) - t0 for ln in read_text(out, name).splitlines() if len(ln.split()) == 2}
