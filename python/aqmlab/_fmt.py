"""Display units and number formatting shared by plots, tables, findings and the report.

The store keeps SI base units (bit/s, seconds, fractions); people read Mbit/s,
milliseconds and percent. :func:`unit_for` guesses the display unit from a measure or
column name (``goodput_down`` → Mbit/s, ``induced_latency`` → ms, ``loss_rate`` → %);
figure and table specs can override it with ``scale``/``unit`` keys.
"""
from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["unit_for", "fmt_num", "natural_key", "label_value"]

# Order matters: "loss_rate" is a fraction, not a rate in bit/s.
_FRACTION = ("loss", "utilization", "utilisation", "drop_prob", "bias_frac")
_RATE = ("goodput", "throughput", "bps", "bitrate", "tx_rate")
_TIME = ("latency", "delay", "rtt", "owd", "sojourn", "jitter", "page_time", "fetch_time", "response_time", "wrt", "mouth_to_ear")


def unit_for(name: str | None) -> tuple[float, str]:
    """(scale, unit) to display a stored quantity called `name`: value × scale in unit."""
    n = (name or "").lower()
    if any(k in n for k in _FRACTION):
        return 100.0, "%"
    if any(k in n for k in _RATE):
        return 1e-6, "Mbit/s"
    if any(k in n for k in _TIME):
        return 1e3, "ms"
    return 1.0, ""


def axis_label(name: str, unit: str) -> str:
    return f"{name} ({unit})" if unit else name


def fmt_num(v: Any, digits: int | None = None) -> str:
    """A number for people: 3 significant digits by default, fixed decimals if given."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if math.isnan(x):
        return "–"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if digits is not None:
        return f"{x:.{digits}f}"
    if x == 0:
        return "0"
    mag = math.floor(math.log10(abs(x)))
    if mag >= 5 or mag < -3:
        return f"{x:.3g}"
    return f"{x:.{max(0, 2 - mag)}f}"


_NUM = re.compile(r"^\s*([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")


def label_value(label: Any) -> float:
    """The leading number of an axis label ("5ms" → 5, "16" → 16, "10/1" → 10); NaN if none."""
    m = _NUM.match(str(label))
    return float(m.group(1)) if m else math.nan


def natural_key(label: Any) -> tuple:
    """Sort key that puts "2" before "10" and text after numbers."""
    v = label_value(label)
    return (0, v, str(label)) if not math.isnan(v) else (1, 0.0, str(label))
