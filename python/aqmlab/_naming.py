"""Names the lab reads meaning from: which way a host's traffic goes in a dumbbell, which
line of a TOML file sets a dotted key, and the known name closest to a misspelt one. (A module of its own so that the figures,
:mod:`aqmlab.result`, :mod:`aqmlab.scenario` and :mod:`aqmlab.study` can all use it.)"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

#: The Flent tests ``aqmlab export`` writes (``aqmlab.flent``); a study experiment's
#: ``flent`` key takes one of them or "none". Here, in a module that imports nothing of
#: aqmlab, so the study parser can check the key without importing the exporter.
FLENT_TESTS = ("rrul", "rrul_be", "rrul_be_nflows", "voip-rrul", "http-rrul", "voip-1up", "voip", "http-1up", "http", "tcp_ndown",
               "tcp_nup")

__all__ = ["FLENT_TESTS", "did_you_mean", "direction", "key_line"]


def direction(host: Any) -> str:
    """Which way traffic sent by `host` goes in the dumbbell naming: ``"up"`` from a
    ``client*`` host (client → server, ``bottleneck_up``), ``"down"`` from a
    ``server*`` host, ``"other"`` for any other node. The one place the lab derives a
    direction from host names (measures, figures and the Flent export use it)."""
    s = str(host)
    return "up" if s.startswith("client") else "down" if s.startswith("server") else "other"


def key_line(text: str, field: str) -> int | None:
    """The line of a TOML file (1-based; a scenario or a study) that most likely sets key `field`
    (``dumbbell.qdsic``, ``flow[0].rate``): an axis ``path = "dumbbell.qdsic"`` naming it
    (or a key below it: ``dumbell`` for ``path = "dumbell.delay"``), else the first line
    that assigns its last component (``qdsic = …``); None if neither is found. Lets an
    error without a line (a check made after parsing, or one in a scenario generated
    from a study) point at the file's line."""
    if not field:
        return None
    lines = text.splitlines()
    plain = re.sub(r"\[\d+\]", "", field)
    for path in dict.fromkeys((field, plain)):
        for i, line in enumerate(lines, 1):
            if re.search(r"\bpath\s*=\s*[\"']" + re.escape(path) + r"[\"']", line):
                return i
    # an axis path below the key: `dumbell` refused where `path = "dumbell.delay"` made it
    for path in dict.fromkeys((field, plain)):
        for i, line in enumerate(lines, 1):
            if re.search(r"\bpath\s*=\s*[\"']" + re.escape(path) + r"[.\[]", line):
                return i
    last = plain.rsplit(".", 1)[-1]
    start, end, table = 0, len(lines), False
    m = re.match(r"^(\w+)\[(\d+)\]", field)
    if m:  # flow[2].to: search the third [[flow]] table, from its header to the next one
        heads = [i for i, line in enumerate(lines) if re.match(r"^\s*\[\[\s*" + re.escape(m[1]) + r"\s*\]\]", line)]
        if int(m[2]) < len(heads):
            start, table = heads[int(m[2])], True
            end = next((j for j in range(start + 1, len(lines)) if re.match(r"^\s*\[", lines[j])), len(lines))
    for i, line in enumerate(lines[start:end], start + 1):
        code = line.split("#", 1)[0]
        if re.search(r"(^|[{,\s])" + re.escape(last) + r"\s*=", code):
            return i
    # a key the selected table does not write (its default name, a missing key): the table
    return start + 1 if table else None


def closest(name: Any, known: Iterable[Any]) -> str | None:
    """The entry of `known` a misspelt `name` most likely meant: one that differs only in
    case (`RTT` for the axis `rtt`), else the closest by `difflib` (ratio 0.6 or more, case
    ignored); None if none."""
    import difflib

    n, names = str(name), [str(k) for k in known]
    same = [k for k in names if k.lower() == n.lower() and k != n]
    if same:
        return same[0]
    lower = {k.lower(): k for k in reversed(names)}
    close = difflib.get_close_matches(n.lower(), list(lower), n=1, cutoff=0.6)
    return lower[close[0]] if close else None


def did_you_mean(name: Any, known: Iterable[Any]) -> str:
    """", did you mean 'goodput_down'?" for a close match among `known` ("" if none): see
    :func:`closest`."""
    best = closest(name, known)
    return f", did you mean {best!r}?" if best is not None else ""
