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

__all__ = ["unit_for", "fmt_num", "fmt_spread", "natural_key", "label_value", "readable", "axis_label", "label_unit"]

# Order matters: "loss_rate" is a fraction, not a rate in bit/s.
_FRACTION = ("loss", "utilization", "utilisation", "drop_prob", "drop_rate", "bias_frac")
_RATE = ("goodput", "throughput", "bps", "bitrate", "tx_rate")
_TIME = (
    "latency",
    "induced",
    "delay",
    "rtt",
    "owd",
    "sojourn",
    "jitter",
    "page_time",
    "fetch_time",
    "response_time",
    "wrt",
    "mouth_to_ear",
)


# Quantities stored in their paper's own unit rather than an SI base unit (the HAS
# metrics of the DOCSIS study, app/has.rs): shown as stored, with that unit.
_AS_STORED = {
    "has_playback_rate": "Mbit/s", "video_playback_rate": "Mbit/s",
    "has_adaptation_rate": "changes/h", "adaptation_rate": "changes/h",
    "has_rebuffer": "% of time", "rebuffer_time": "% of time",
    "has_bias": "%", "application_bias": "%",
}


def unit_for(name: str | None) -> tuple[float, str]:
    """(scale, unit) to display a stored quantity called `name`: value × scale in unit."""
    n = (name or "").lower()
    if n.startswith(("induced_ratio:", "ratio:")):  # dimensionless ratios of two measures
        return 1.0, ""
    if n in _AS_STORED:
        return 1.0, _AS_STORED[n]
    if any(k in n for k in _FRACTION):
        return 100.0, "%"
    if any(k in n for k in _RATE):
        return 1e-6, "Mbit/s"
    if any(k in n for k in _TIME):
        return 1e3, "ms"
    return 1.0, ""


#: Readable names of the stored quantities (measures, flow/queue columns, sample and series
#: metrics, qdisc state variables) for axis labels and titles.
READABLE = {
    "goodput_bps": "goodput", "tx_bps": "throughput", "goodput_down": "download goodput",
    "goodput_up": "upload goodput", "goodput_total": "total TCP goodput", "cbr_goodput": "CBR goodput",
    "induced_latency": "induced latency", "queue_delay_mean": "mean queueing delay",
    "queue_delay_p99": "99th percentile queueing delay", "utilization": "utilisation",
    "bottleneck_utilization": "bottleneck utilisation", "drop_rate": "drop rate", "jain": "Jain's fairness index",
    "voip_loss": "VoIP loss", "voip_owd": "VoIP one-way delay", "voip_r": "VoIP R-value", "voip_mos": "VoIP MOS",
    "page_time": "page load time", "wrt_mean": "web response time", "wrt_sd": "web response time sd",
    "web_object_time": "web object time", "has_playback_rate": "HAS playback rate",
    "has_adaptation_rate": "HAS adaptation rate", "has_rebuffer": "HAS rebuffering time", "has_bias": "HAS bias",
    "sojourn": "queueing delay", "sojourn_mean": "mean queueing delay", "sojourn_p99": "99th percentile queueing delay",
    "backlog_max": "max backlog", "qlen": "queue length at arrival (packets)", "drops": "drops", "rtt": "RTT", "base_rtt": "base RTT",
    "owd": "one-way delay", "owd_fwd": "one-way delay (forward)", "owd_rev": "one-way delay (reverse)",
    "rtt_mean": "mean RTT", "loss_rate": "loss", "page_time_mean": "mean page load time",
    "count": "CoDel count", "p": "drop probability p", "fetch_time": "fetch time",
    # DualPI2 (L4S): measures, queue columns and state variables
    "l_delay_mean": "L-queue mean sojourn", "l_delay_p99": "L-queue 99th percentile sojourn",
    "c_delay_mean": "C-queue mean sojourn", "c_delay_p99": "C-queue 99th percentile sojourn",
    "pi2_prob_mean": "mean base probability p'", "p_prime": "base probability p'",
    "p_c": "classic drop/mark probability p_C", "p_l": "L4S marking probability p_L",
    "p_cl": "coupled L4S marking probability p_CL", "qdelay_l": "L-queue delay", "qdelay_c": "C-queue delay",
    "qdelay": "queue delay", "induced_latency_p99": "99th percentile induced latency",
}


def readable(name: str) -> str:
    """A readable name for a stored quantity: ``goodput_bps`` → ``goodput``,
    ``queue_delay_mean`` → ``mean queueing delay``; unknown names lose their ``_bps``
    suffix and underscores."""
    n = str(name)
    if n in READABLE:
        return READABLE[n]
    if n.startswith("induced ") and n[8:] in READABLE:
        return "induced " + READABLE[n[8:]]
    if n.startswith("induced:"):  # the measure induced:udp_ef
        return f"induced latency of {n[8:]}"
    if n.startswith("induced_ratio:"):  # induced_ratio:udp_ef/udp_be
        a, _, b = n[14:].partition("/")
        return f"induced latency {a} / {b}"
    if n.startswith("ratio:"):  # ratio:prague/cubic, the goodput ratio of two flow groups
        a, _, b = n[6:].partition("/")
        return f"goodput ratio {a} / {b}"
    for head, word in (("mean:", "mean"), ("sum:", "total")):  # mean:web.page_time_mean
        if n.startswith(head) and "." in n:
            kind, _, col = n[len(head):].rpartition(".")
            return f"{word} {readable(col)} of {kind} flows"
    for head in ("flow:", "queue:"):  # flow:voip0.r_value
        if n.startswith(head) and "." in n:
            ent, _, col = n[len(head):].rpartition(".")
            return f"{readable(col)} of {ent}"
    for suf in ("_bps",):
        if n.endswith(suf):
            n = n[: -len(suf)]
    return n.replace("_", " ")


def axis_label(name: str, unit: str) -> str:
    """``name (unit)`` with the readable name (see :func:`readable`); several names
    joined by " / " are each made readable."""
    text = " / ".join(readable(part) for part in str(name).split(" / "))
    return f"{text} ({unit})" if unit else text


_UNIT_SUFFIX = re.compile(r"^\s*[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?\s*([A-Za-zµ/%]+)\s*$")


def label_unit(labels: Any) -> str:
    """The unit all axis labels share ("1ms", "5ms" → "ms"; "1Mbit" → "Mbit/s"); "" if
    they are bare numbers or differ."""
    units = set()
    for lab in labels:
        m = _UNIT_SUFFIX.match(str(lab))
        if not m:
            return ""
        units.add(m.group(1))
    if len(units) != 1:
        return ""
    u = units.pop()
    return {"bit": "bit/s", "kbit": "kbit/s", "Mbit": "Mbit/s", "Gbit": "Gbit/s"}.get(u, u)


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
    # the magnitude after rounding to 3 significant digits, so that 99.98 prints "100"
    # like 100.0 does (not "100.0" beside "100" in the same column)
    mag = math.floor(math.log10(abs(float(f"{x:.3g}"))))
    if mag >= 5 or mag < -3:
        return f"{x:.3g}"
    return f"{x:.{max(0, 2 - mag)}f}"


def fmt_spread(mean: float, spread: float, digits: int | None = None) -> str:
    """The ``±`` part beside ``fmt_num(mean, digits)``: a spread (sd, CI half-width) to no
    more decimals than the mean shows, so that "4.42 ± 4.46e-06" reads "4.42 ± 0.00" and
    "43.7 ± 0.224" reads "43.7 ± 0.2"; fewer when the spread itself needs fewer ("3.00 ±
    1.96", "1350 ± 284"). A spread of exactly 0 is "0"."""
    if digits is not None:
        return fmt_num(spread, digits)
    if spread == 0:
        return "0"

    def decimals(text: str) -> float:
        if "e" in text or not text.lstrip("-").replace(".", "", 1).isdigit():
            return math.inf
        return len(text.split(".", 1)[1]) if "." in text else 0

    n = min(decimals(fmt_num(mean)), decimals(fmt_num(spread)))
    return fmt_num(spread) if math.isinf(n) else f"{float(spread):.{int(n)}f}"


_NUM = re.compile(r"^\s*([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")


def label_value(label: Any) -> float:
    """The leading number of an axis label ("5ms" → 5, "16" → 16, "10/1" → 10); NaN if none."""
    m = _NUM.match(str(label))
    return float(m.group(1)) if m else math.nan


def natural_key(label: Any) -> tuple:
    """Sort key that puts "2" before "10" and text after numbers."""
    v = label_value(label)
    return (0, v, str(label)) if not math.isnan(v) else (1, 0.0, str(label))
