"""The result tables' columns as the core declares them (``aqmlab._core.result_schema()``),
for engines other than the simulator that build the same tables from another program's
output (:mod:`aqmlab.engines`).

The core declares the fixed ``flows`` and ``queues`` columns, the drop and mark reasons
and the queue tail columns. Each flow kind's own summary columns (``retransmits`` of a
bulk flow, ``rtt_mean`` of a probe) are not in the declaration: an engine lists the ones
it fills (:data:`FLOW_KIND_COLUMNS`, the simulator's columns of each kind, checked
against a simulator run in the tests) and the rest of its rows are NaN.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "flow_columns",
    "queue_columns",
    "drop_reasons",
    "mark_reasons",
    "FLOW_KIND_COLUMNS",
    "QUEUE_EXTRA_COLUMNS",
    "column_docs",
    "empty_hist",
    "raw_result",
    "NAN",
]

NAN = math.nan

#: The summary columns the simulator gives each flow kind (crates/aqmlab-core/src/app),
#: in its order; engines fill what they measure and leave the rest NaN.
FLOW_KIND_COLUMNS: dict[str, list[str]] = {
    "bulk": [
        "retransmits",
        "rtos",
        "fast_recoveries",
        "loss_probes",
        "loss_probe_recoveries",
        "lost_retransmits",
        "rto_undos",
        "recovery_undos",
        "ecn_reductions",
        "bytes_acked",
        "segments_sent",
        "syn_retransmits",
        "srtt_mean",
        "rtt_min",
        "cwnd_mean",
        "completion_time",
    ],
    "ping": ["probes_sent", "loss_rate", "rtt_mean", "rtt_p50", "rtt_p90", "rtt_p99", "rtt_min", "rtt_max"],
    "udp_rr": ["probes_sent", "loss_rate", "rtt_mean", "rtt_p50", "rtt_p90", "rtt_p99", "rtt_min", "rtt_max"],
    "cbr": ["datagrams_sent", "loss_rate", "owd_mean", "owd_p99"],
    "voip": ["packets_sent", "loss_rate", "owd_mean", "owd_p99", "jitter", "mouth_to_ear", "effective_loss", "r_value"],
    "web": [
        "pages",
        "page_time_mean",
        "page_time_median",
        "page_time_p90",
        "page_time_sd",
        "lookups",
        "lookup_time_mean",
        "connections",
        "connection_failures",
        "page_bytes",
        "pages_unfinished",
    ],
    "web_users": [
        "pages",
        "page_time_mean",
        "connections",
        "objects",
        "object_time_mean",
        "object_time_median",
        "object_time_p90",
        "object_bytes",
        "objects_unfinished",
    ],
    "wrt": ["connections", "responses", "response_time_mean", "response_time_median", "response_time_p90", "response_time_max"],
    "has": [
        "video_playback_rate",
        "adaptation_rate",
        "rebuffer_time",
        "startup_delay",
        "stalls",
        "segments",
        "bitrate_mean",
        "max_bitrate",
    ],
}

#: Columns of the queues table that only some links have, by what gives them (the lower
#: layer below the qdisc, or the qdisc): NaN on the other links' rows.
QUEUE_EXTRA_COLUMNS: dict[str, list[str]] = {
    "shaper": ["shaper_rate_bps", "shaper_burst_bytes", "shaper_throttled"],
    "docsis": ["channels", "regulator_drops", "regulator_held"],
    "wifi": [
        "txops",
        "collisions",
        "subframes",
        "retries",
        "frames_per_ampdu",
        "retry_drops",
        "driver_max_frames",
        "driver_stops",
        "internal_collisions",
        "txops_vo",
        "txops_vi",
        "txops_be",
        "txops_bk",
        "below_qdisc_mean",
    ],
    "prio": ["band0_pkts", "band1_pkts", "band2_pkts"],
    "cake": [f"tin{i}_{c}" for i in range(8) for c in ("sent_bytes", "drops", "marks", "ack_drops", "threshold_bps")],
    "dualpi2": [
        "l_pkts",
        "l_sojourn_mean",
        "l_sojourn_p99",
        "l_sojourn_max",
        "c_pkts",
        "c_sojourn_mean",
        "c_sojourn_p99",
        "c_sojourn_max",
        "p_prime_mean",
    ],
}


def _schema() -> Any:
    from aqmlab import _core

    return _core.result_schema()


def drop_reasons() -> list[str]:
    """The core's drop reasons, in its order (``drops_REASON`` columns)."""
    return list(_schema()["drop_reasons"])


def mark_reasons() -> list[str]:
    """The core's mark reasons, in its order (``marks_REASON`` columns)."""
    return list(_schema()["mark_reasons"])


def flow_columns(kinds: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The flows table's fixed columns, then the summary columns of ``kinds``."""
    cols = [n for n, _, _ in _schema()["flows"]]
    for k in kinds:
        cols += [c for c in FLOW_KIND_COLUMNS.get(k, []) if c not in cols]
    return cols


def queue_columns() -> list[str]:
    """The queues table's columns in the simulator's order: fixed, ``drops_*``,
    ``marks_*``, tail."""
    sc = _schema()
    return (
        [n for n, _, _ in sc["queues"]]
        + [f"drops_{r}" for r in sc["drop_reasons"]]
        + [f"marks_{r}" for r in sc["mark_reasons"]]
        + [n for n, _, _ in sc["queues_tail"]]
    )


def column_docs() -> list[tuple[str, str]]:
    """(``flows.COL`` / ``queues.COL``, one line on it) for every column the two result
    tables can have, fixed ones first (`aqmlab list columns`)."""
    sc = _schema()
    fixed_flows = {n: about for n, _, about in sc["flows"]}
    items = [(f"flows.{n}", about) for n, about in fixed_flows.items()]
    by_col: dict[str, list[str]] = {}
    for kind, cols in FLOW_KIND_COLUMNS.items():
        for c in cols:
            by_col.setdefault(c, []).append(kind)
    items += [(f"flows.{c}", f"summary of {', '.join(kinds)} flows (NaN for other kinds)")
              for c, kinds in by_col.items() if c not in fixed_flows]
    fixed = {n: about for n, _, about in [*sc["queues"], *sc["queues_tail"]]}

    def about(c: str) -> str:
        verb, _, why = c.partition("_")
        return fixed.get(c, f"packets {'dropped' if verb == 'drops' else 'marked'} for reason {why!r} (whole run)")

    items += [(f"queues.{c}", about(c)) for c in queue_columns()]
    items += [(f"queues.{c}", f"{src} links only (NaN elsewhere)") for src, cols in QUEUE_EXTRA_COLUMNS.items() for c in cols]
    return items


def empty_hist() -> dict[str, Any]:
    """A sojourn histogram with no bins (engines without per-packet sojourn)."""
    import numpy as np

    return {"queue": np.zeros(0, np.uint32), "low": np.zeros(0), "high": np.zeros(0), "count": np.zeros(0, np.uint64)}


def raw_result(
    *,
    version: str,
    seed: int,
    duration: float,
    warmup: float,
    bin: float,
    flows: dict[str, list],
    queues: dict[str, list],
    series: dict[str, Any],
    samples: dict[str, Any],
    metric_names: list[str],
    wall_seconds: float,
    warnings: list[str],
    events: int = 0,
    sojourn_hist: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The raw result dict :class:`aqmlab.Result` takes, as an engine other than the
    simulator builds it: its tables (columns as lists, the long tables as arrays indexed
    into `metric_names`), no packet counts (``packets_created``/``packets_delivered`` 0),
    ``packets_dropped`` the queues' drops summed (NaN rows left out), and an empty
    sojourn histogram unless the engine has one."""
    return {
        "version": version,
        "seed": seed,
        "duration": duration,
        "warmup": warmup,
        "bin": bin,
        "flows": flows,
        "queues": queues,
        "sojourn_hist": empty_hist() if sojourn_hist is None else sojourn_hist,
        "series": series,
        "samples": samples,
        "metric_names": metric_names,
        "events": events,
        "packets_created": 0,
        "packets_delivered": 0,
        "packets_dropped": int(sum(x for x in queues.get("dropped", []) if x == x)),
        "wall_seconds": wall_seconds,
        "warnings": warnings,
    }
