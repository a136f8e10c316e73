"""Names the lab reads meaning from: which way a host's traffic goes in a dumbbell.
(A module of its own so that the figures and :mod:`aqmlab.result` can both use it.)"""
from __future__ import annotations

from typing import Any

__all__ = ["direction"]


def direction(host: Any) -> str:
    """Which way traffic sent by `host` goes in the dumbbell naming: ``"up"`` from a
    ``client*`` host (client → server, ``bottleneck_up``), ``"down"`` from a
    ``server*`` host, ``"other"`` for any other node. The one place the lab derives a
    direction from host names (measures, figures and the Flent export use it)."""
    s = str(host)
    return "up" if s.startswith("client") else "down" if s.startswith("server") else "other"
