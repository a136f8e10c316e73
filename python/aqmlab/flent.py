"""Export runs as Flent data files (``*.flent.gz``) that the real ``flent`` tool loads
and plots: ``flent -i FILE -f plot -o FILE.png`` draws the test's default plot
(:data:`FLENT_PLOTS`: ``all_scaled`` for ``rrul``/``rrul_be``, ``totals_loss`` for
``voip-rrul``/``voip-1up``, ``totals`` for ``http-1up``, ``http_delay`` for ``http`` …),
``-p PLOT`` instead of ``-f plot`` another one (``-p all_scaled`` exists only for the
RRUL-based tests), and ``flent -i A -i B … -p box_combine -o F.png`` compares runs.
Without ``-p`` or ``-f plot`` Flent writes its text summary (its default output format),
to the terminal or, with ``-o F.png``, as text into ``F.png``. Both a study store and a
single ``aqmlab run --out DIR`` result export (:func:`export_flent_run`).

Which runs are exported, and as which Flent test
================================================
An experiment may name the Flent test its runs correspond to with the experiment key
``flent`` (``flent = "rrul_be"``; ``flent = "none"`` switches export off). Otherwise the
test is recognised from each run's flows (``kind`` and direction: flows sent by
``client*`` hosts are upstream, by ``server*`` hosts downstream):

============================================  ==============
flows of the run                              Flent test
============================================  ==============
TCP ``bulk`` up and down + latency probes     ``rrul_be``
… with probes named ``*.udp_ef`` (``rrul``)    ``rrul``
… + a ``voip`` flow                           ``voip-rrul``
… + a web client                              ``http-rrul``
TCP ``bulk`` down only + ``ping`` probes       ``tcp_ndown``
TCP ``bulk`` up only + ``ping`` probes         ``tcp_nup``
``voip`` + one upstream ``bulk``              ``voip-1up``
``voip`` alone                                ``voip``
web client + one upstream ``bulk``            ``http-1up``
web client alone                              ``http``
============================================  ==============

Latency probes are ``ping`` (ICMP) and ``udp_rr`` flows; web clients are flows of kind
``web``/``web_page``/``http``. Other runs (RTT fairness, saturated TCP …) have no Flent
counterpart and are skipped.

Series (names and units as in Flent's test configurations)
==========================================================
- ``TCP upload BE``, ``TCP upload BE2`` … (upstream bulk flows by name) and
  ``TCP download BE`` …, in Mbits/s, from the flows' per-bin ``goodput_bps`` series
  (the runner keeps them for every run that makes a Flent test, even without
  ``keep_series = true``; a store without them gets each flow's mean goodput as a flat
  line and the file's NOTE says so); computed ``TCP upload avg``/``sum``,
  ``TCP download avg``/``sum`` and ``TCP totals``. In ``voip-1up``/``http-1up`` the
  single flow is ``TCP upload``. ``tcp_ndown``/``tcp_nup``: ``TCP download::1`` …
  (``TCP upload::1`` …) with their ``avg``/``sum`` and the test parameter
  ``download_streams`` (``upload_streams``), and ``Ping (ms) ICMP``.
- ``rrul`` (aqmlab's DSCP-marked ``kind = "rrul"``): ``TCP upload BE``, ``… BK``,
  ``… CS5``, ``… EF`` (``tcp_up0`` … ``tcp_up3``, the classes in Flent's order) and the
  same for download; probes ``Ping (ms) UDP EF``, ``UDP BK``, ``UDP BE`` and ``ICMP``.
- ``rrul_be`` with one UDP probe (``udp_probes = 1``) is written as Flent's
  ``rrul_be_nflows`` (see :func:`flent_conf_for`): ``TCP upload BE::1`` … ``::4``,
  ``TCP download BE::1`` …, ``Ping (ms) UDP BE``, ``Ping (ms) ICMP``, and the test
  parameters ``upload_streams``/``download_streams``.
- ``Ping (ms) UDP BE1``, ``UDP BE2``, ``UDP BE3`` (``udp_rr`` probes) and
  ``Ping (ms) ICMP`` (``ping`` probes), RTT in ms from the ``rtt`` samples;
  ``Ping (ms) avg``.
- VoIP (Flent's irtt-based ``voip`` runner): ``VoIP::delay`` (one-way delay, ms),
  ``VoIP::jitter`` (|IPDV|, ms), ``VoIP::loss`` (packets lost per step),
  ``VoIP::induced_delay`` (delay minus its minimum); raw values under ``VoIP`` with
  ``seq`` (recovered from send times, so losses show as gaps), ``val``/``owd_up``
  (ms) and ``ipdv_up``; ``SERIES_META["VoIP"]`` carries ``OWD_UP_MEAN``,
  ``IPDV_UP_MEAN`` and ``PACKET_LOSS_RATE`` from the flow's summary.
- Web: ``HTTP latency`` (page fetch time, ms) from the web flow's ``page_time`` (or
  ``fetch_time``) samples.

Every series is resampled onto ``x_values`` (a grid of ``STEP_SIZE`` = 0.2 s from 0 to
the run's length) by linear interpolation of its raw points, as Flent's time-series
aggregator does (no value further than 5 steps from a raw point); ``raw_values``
keep the points themselves with absolute times ``T0 + t``.

Metadata and file names
=======================
``NAME`` (the test), ``TITLE`` (the axis values, qdisc first, and the repetition),
``T0``/``TIME`` (the sweep's start time from the store's provenance), ``LENGTH`` =
``TOTAL_LENGTH`` (run length, s), ``STEP_SIZE``, ``TEST_PARAMETERS`` (axis → value),
``NOTE`` (study, experiment, run id, seed), ``SERIES_META`` (units and means).

``DATA_FILENAME`` (= the file's name) is ``<test>-<experiment>-<group>-<NN>.flent.gz``
where ``group`` joins the run's axis values (qdisc first) with ``_`` after replacing
other characters by ``_`` and NN is the repetition (from 01). Flent's ``*_combine``
plots group files by the part after the common prefix with the first number removed,
so files of one experiment group by their axis values — by qdisc when that is the
only axis that differs between the files given to ``flent``.
"""
from __future__ import annotations

import datetime
import gzip
import json
import math
import pathlib
import re
from typing import Any

import numpy as np
import pandas as pd

from aqmlab._naming import FLENT_TESTS
from aqmlab.result import direction

__all__ = ["export_flent", "export_flent_run", "flent_conf_for", "flent_test_for", "run_to_flent", "FLENT_TESTS", "FLENT_PLOTS"]

#: Each test's default plot in Flent 2.3 (``DEFAULTS['PLOT']`` of its ``tests/*.conf``):
#: what ``flent -i FILE -f plot`` draws (without ``-p`` nor ``-f plot``, Flent writes a
#: text summary). ``all_scaled`` exists only in the tests
#: that include ``rrul_be.conf`` (``rrul_be``, ``voip-rrul``, ``http-rrul``).
FLENT_PLOTS = {
    "rrul": "all_scaled",
    "rrul_be": "all_scaled",
    "rrul_be_nflows": "all_scaled",
    "voip-rrul": "totals_loss",
    "http-rrul": "totals_delay",
    "voip-1up": "totals_loss",
    "voip": "voip_delay",
    "http-1up": "totals",
    "http": "http_delay",
    "tcp_ndown": "totals",
    "tcp_nup": "totals",
}
PROBE_KINDS = ("ping", "udp_rr")
#: Flent ``rrul``'s classes: the TCP flows of each direction in order (aqmlab's
#: ``NAME.tcp_up0`` … ``tcp_up3``) and the UDP probes by aqmlab suffix.
RRUL_TCP_CLASSES = ("BE", "BK", "CS5", "EF")
RRUL_UDP_SERIES = {"udp_ef": "Ping (ms) UDP EF", "udp_bk": "Ping (ms) UDP BK", "udp_be": "Ping (ms) UDP BE"}
WEB_KINDS = ("web", "web_page", "http")
STEP = 0.2
FILEFORMAT_VERSION = 4  # Flent's resultset.FILEFORMAT_VERSION


def flent_test_for(flows: pd.DataFrame) -> str | None:
    """The Flent test a run's flows correspond to (see the module doc), or None."""
    if flows is None or flows.empty:
        return None
    return flent_test_of(flows["kind"].astype(str).tolist(), flows["src"].tolist(), flows["name"].astype(str).tolist())


def flent_test_of(kinds: list[str], srcs: list, names: list[str]) -> str | None:
    """:func:`flent_test_for` of the flows' ``kind``, ``src`` and ``name`` columns as lists
    (a sweep's worker has them as lists: no DataFrame needed)."""
    if not kinds:
        return None
    dirs = [direction(s) for s in srcs]
    up = sum(1 for k, d in zip(kinds, dirs) if k == "bulk" and d == "up")
    down = sum(1 for k, d in zip(kinds, dirs) if k == "bulk" and d == "down")
    probes = any(k in PROBE_KINDS for k in kinds)
    voip = "voip" in kinds
    web = any(k in WEB_KINDS for k in kinds)
    rrul = up >= 1 and down >= 1 and probes
    if voip:
        return "voip-rrul" if rrul else "voip-1up" if (up == 1 and down == 0) else "voip" if up + down == 0 else None
    if web:
        return "http-rrul" if rrul else "http-1up" if (up == 1 and down == 0) else "http" if up + down == 0 else None
    if not rrul:
        # Flent's tcp_ndown / tcp_nup: N streams one way, with an ICMP ping
        if "ping" in kinds and (up == 0) != (down == 0):
            return "tcp_ndown" if down else "tcp_nup"
        return None
    # Flent's real rrul: aqmlab's `rrul` names its UDP probes by class (NAME.udp_ef …)
    return "rrul" if any(k == "udp_rr" and isinstance(n, str) and n.endswith(".udp_ef") for k, n in zip(kinds, names)) else "rrul_be"


def why_no_test(kinds: list[str], srcs: list) -> str:
    """Why flows with these ``kind`` and ``src`` values make no Flent test (see
    :func:`flent_test_of`), in one clause naming what they have and what the nearest
    test needs ("" if they do make one)."""
    if flent_test_of(kinds, srcs, [""] * len(kinds)) is not None:
        return ""
    dirs = [direction(s) for s in srcs]
    up = sum(1 for k, d in zip(kinds, dirs) if k == "bulk" and d == "up")
    down = sum(1 for k, d in zip(kinds, dirs) if k == "bulk" and d == "down")
    probes = any(k in PROBE_KINDS for k in kinds)
    bulk = f"{up} upstream and {down} downstream TCP bulk flow(s)"
    for extra, name in (("voip", "voip"), ("web", "http")):
        if extra == "voip" and "voip" not in kinds or extra == "web" and not any(k in WEB_KINDS for k in kinds):
            continue
        what = f"a {extra} flow with {bulk}{' and latency probes' if probes else ', no latency probe'}"
        if up and down:
            return f"{what}: {name}-rrul needs a latency probe (ping or udp_rr) as well"
        return f"{what}: {name}-rrul needs bulk flows both ways and a latency probe, {name}-1up exactly one upstream bulk flow"
    if up or down:
        if up and down:
            return f"{bulk} but no latency probe: rrul_be needs a ping or udp_rr flow as well"
        return (f"{bulk} and no ping flow: {'tcp_nup' if up else 'tcp_ndown'} needs one (an ICMP ping; udp_rr probes "
                "make an rrul test only with bulk flows both ways)")
    kinds_txt = ", ".join(sorted(set(kinds))) or "none"
    return f"no TCP bulk, VoIP or web flows (its kinds: {kinds_txt}): Flent has no test for it"


def _grid_values(t: np.ndarray, v: np.ndarray, grid: np.ndarray) -> list:
    """Linear interpolation onto the grid; None away from the data (> 5 steps)."""
    ok = ~np.isnan(v)
    t, v = t[ok], v[ok]
    if t.size == 0:
        return [None] * grid.size
    order = np.argsort(t, kind="stable")
    t, v = t[order], v[order]
    vals = np.interp(grid, t, v)
    idx = np.clip(np.searchsorted(t, grid), 0, t.size - 1)
    near = np.minimum(np.abs(t[idx] - grid), np.abs(t[np.maximum(idx - 1, 0)] - grid))
    out = []
    for x, d, val in zip(grid, near, vals):
        out.append(None if (d > 5 * STEP or x < t[0] - STEP or x > t[-1] + STEP) else float(val))
    return out


def _none_mean(cols: list[list], how: str) -> list:
    out = []
    for row in zip(*cols):
        vals = [x for x in row if x is not None]
        out.append(None if not vals else (math.fsum(vals) / len(vals) if how == "avg" else math.fsum(vals)))
    return out


def _mean(vals: list) -> float | None:
    v = [x for x in vals if x is not None]
    return math.fsum(v) / len(v) if v else None


def _sanitise(s: Any) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", str(s)).strip("_") or "x"


def run_to_flent(run: pd.Series, flows: pd.DataFrame, samples: pd.DataFrame, series: pd.DataFrame, test: str,
                 t0: datetime.datetime, study_name: str = "", axis_order: list[str] | None = None) -> dict:
    """Builds the Flent data-file object (the JSON structure) of one run."""
    params = {c[2:]: str(run[c]) for c in run.index if c.startswith("p_") and isinstance(run[c], str)}
    order = list(axis_order or [])
    keys = sorted(params, key=lambda k: (k != "qdisc", order.index(k) if k in order else len(order), k))
    length = float(max(flows["stop"].max() if len(flows) else 0.0, samples["t"].max() if len(samples) else 0.0,
                       (series["t"].max() + _bin(series)) if len(series) else 0.0))
    length = max(length, STEP)
    grid = np.round(np.arange(0.0, length + 1e-9, STEP), 6)
    t0s = t0.timestamp()
    results: dict[str, list] = {}
    raw: dict[str, list] = {}
    meta: dict[str, dict] = {}
    notes = []

    def add(name: str, t: np.ndarray, v: np.ndarray, units: str, extra: list[dict] | None = None, dur: float | None = None) -> None:
        results[name] = _grid_values(t, v, grid)
        pts = []
        for i, (ti, vi) in enumerate(zip(t.tolist(), v.tolist())):
            if vi != vi:
                continue
            p = {"t": t0s + ti, "val": vi}
            if dur is not None:
                p["dur"] = dur
            if extra is not None:
                p.update(extra[i])
            pts.append(p)
        raw[name] = pts
        meta[name] = {"UNITS": units, "MEAN_VALUE": float(np.nanmean(v)) if np.isfinite(v).any() else None}

    def computed(name: str, parts: list[str], how: str, units: str) -> None:
        parts = [p for p in parts if p in results]
        if not parts:
            return
        results[name] = _none_mean([results[p] for p in parts], how)
        raw[name] = []
        means = [meta[p]["MEAN_VALUE"] for p in parts if meta[p]["MEAN_VALUE"] is not None]
        mv = (math.fsum(means) / len(means) if how == "avg" else math.fsum(means)) if means else None
        meta[name] = {"UNITS": units, "MEAN_VALUE": mv, "COMPUTED_LATE": False}

    kinds = flows["kind"].astype(str)
    dirs = flows["src"].map(direction)
    if test in ("tcp_ndown", "tcp_nup"):
        # an experiment that names the one-way test (`flent = "tcp_nup"`) over hosts not
        # named client*/server*: its streams are the test's direction
        dirs = dirs.where(dirs != "other", "down" if test == "tcp_ndown" else "up")
    gp = series[(series["kind"] == "flow") & (series["metric"] == "goodput_bps")] if len(series) else series
    width = _bin(gp) if len(gp) else 0.0  # unused when there is no goodput series
    single = test in ("voip-1up", "http-1up")
    marked = test == "rrul"
    nflows = test == "rrul_be_nflows"
    oneway = test in ("tcp_ndown", "tcp_nup")
    tcp_keys: list[str] = []
    for d, word in (("up", "upload"), ("down", "download")):
        bulk = flows[(kinds == "bulk") & (dirs == d)].sort_values("name")
        for i, (_, f) in enumerate(bulk.iterrows()):
            if marked:  # rrul: "TCP upload BE", "… BK", "… CS5", "… EF" (more flows: BE2 …)
                k = len(RRUL_TCP_CLASSES)
                name = f"TCP {word} {RRUL_TCP_CLASSES[i % k]}" + ("" if i < k else str(i // k + 1))
            elif nflows:  # rrul_be_nflows: the duplicates "TCP upload BE::1" …
                name = f"TCP {word} BE::{i + 1}"
            elif oneway:  # tcp_ndown / tcp_nup: "TCP download::1" …
                name = f"TCP {word}::{i + 1}"
            else:
                name = f"TCP {word}" if single else f"TCP {word} BE" + ("" if i == 0 else str(i + 1))
            tcp_keys.append(name)
            s = gp[gp["entity"].astype(str) == str(f["name"])] if len(gp) else gp
            if len(s):
                s = s.sort_values("t")
                add(name, s["t"].to_numpy(float) + width / 2, s["value"].to_numpy(float) / 1e6, "Mbits/s", dur=width)
            else:
                add(name, np.array([0.0, length]), np.full(2, float(f["goodput_bps"]) / 1e6), "Mbits/s")
                if "flat" not in notes:
                    notes.append("flat")
    if not single:
        for word in ("upload", "download"):
            parts = [k for k in tcp_keys if k.startswith((f"TCP {word} ", f"TCP {word}::"))]
            computed(f"TCP {word} avg", parts, "avg", "Mbits/s")
            computed(f"TCP {word} sum", parts, "sum", "Mbits/s")
        computed("TCP totals", list(tcp_keys), "sum", "Mbits/s")

    rtt = samples[(samples["kind"] == "flow") & (samples["metric"] == "rtt")] if len(samples) else samples
    udp = flows[kinds == "udp_rr"].sort_values("name")
    icmp = flows[kinds == "ping"].sort_values("name")
    def udp_series(i: int, f: pd.Series) -> str:
        suffix = str(f["name"]).rsplit(".", 1)[-1]
        if marked and suffix in RRUL_UDP_SERIES:
            return RRUL_UDP_SERIES[suffix]
        return "Ping (ms) UDP BE" if nflows else f"Ping (ms) UDP BE{i + 1}"

    for names, fl in ((udp_series, udp), (lambda i, f: "Ping (ms) ICMP" + ("" if i == 0 else str(i + 1)), icmp)):
        for i, (_, f) in enumerate(fl.iterrows()):
            s = rtt[rtt["entity"].astype(str) == str(f["name"])].sort_values("t") if len(rtt) else rtt
            if len(s):
                seq = [{"seq": j} for j in range(len(s))]
                add(names(i, f), s["t"].to_numpy(float), s["value"].to_numpy(float) * 1e3, "ms", extra=seq)
    if test in ("rrul", "rrul_be", "rrul_be_nflows", "voip-rrul", "http-rrul"):
        computed("Ping (ms) avg", [k for k in results if k.startswith("Ping (ms)") and k != "Ping (ms) avg"], "avg", "ms")

    if test.startswith("voip"):
        vf = flows[kinds == "voip"].sort_values("name")
        if len(vf):
            f = vf.iloc[0]
            s = (
                samples[(samples["kind"] == "flow") & (samples["metric"] == "owd") & (samples["entity"].astype(str) == str(f["name"]))]
                if len(samples)
                else samples
            )
            # in send order (= sequence order, as irtt lists them): arrival order may differ
            s = s.assign(_sent=s["t"] - s["value"]).sort_values("_sent", kind="stable")
            t, owd = s["t"].to_numpy(float), s["value"].to_numpy(float)
            sent = s["_sent"].to_numpy(float)
            if t.size:
                iv = float(np.median(np.diff(sent))) if t.size > 1 else 0.02
                iv = iv if iv > 0 else 0.02
                seq = np.round((sent - sent.min()) / iv).astype(int)
                ms = owd * 1e3
                ipdv = np.r_[0.0, np.diff(ms)]
                gap = np.r_[0, np.diff(seq) - 1].clip(min=0)
                extra = [{"seq": int(q), "owd_up": float(m), "delay": float(m), "ipdv_up": float(j), "jitter": abs(float(j))}
                         for q, m, j in zip(seq, ms, ipdv)]
                raw["VoIP"] = [{"t": t0s + ti, "val": float(m), **e} for ti, m, e in zip(t.tolist(), ms.tolist(), extra)]
                results["VoIP::delay"] = _grid_values(t, ms, grid)
                results["VoIP::jitter"] = _grid_values(t, np.abs(ipdv), grid)
                lost_per_step = np.zeros(grid.size)
                np.add.at(lost_per_step, np.clip(np.searchsorted(grid, t), 0, grid.size - 1), gap)
                results["VoIP::loss"] = [float(x) for x in lost_per_step]
                dl = [x for x in results["VoIP::delay"] if x is not None]
                mn = min(dl) if dl else 0.0
                results["VoIP::induced_delay"] = [None if x is None else x - mn for x in results["VoIP::delay"]]
                meta["VoIP"] = {
                    "UNITS": "ms",
                    "OWD_UP_MEAN": float(f.get("owd_mean", np.nan)) * 1e3 if _finite(f.get("owd_mean")) else float(ms.mean()),
                    "IPDV_UP_MEAN": float(f.get("jitter", np.nan)) * 1e3 if _finite(f.get("jitter")) else float(np.abs(ipdv).mean()),
                    "PACKET_LOSS_RATE": float(f.get("loss_rate"))
                    if _finite(f.get("loss_rate"))
                    else float(gap.sum() / max(1, seq.max() + 1)),
                    "MEAN_VALUE": float(ms.mean()),
                }
                meta["VoIP::delay"] = {"UNITS": "ms", "MEAN_VALUE": float(ms.mean())}
                meta["VoIP::jitter"] = {"UNITS": "ms", "MEAN_VALUE": float(np.abs(ipdv).mean())}
                meta["VoIP::loss"] = {"UNITS": "count"}
                meta["VoIP::induced_delay"] = {"UNITS": "ms"}

    if test.startswith("http"):
        wf = flows[kinds.isin(WEB_KINDS)].sort_values("name")
        if len(wf) and len(samples):
            s = samples[(samples["kind"] == "flow") & (samples["metric"].isin(["page_time", "fetch_time"]))
                        & (samples["entity"].astype(str) == str(wf.iloc[0]["name"]))].sort_values("t")
            if len(s):
                add("HTTP latency", s["t"].to_numpy(float), s["value"].to_numpy(float) * 1e3, "ms")

    test_params = dict(params)
    if nflows or oneway:  # these tests' confs read the stream counts from their test parameters
        test_params["upload_streams"] = str(int(((kinds == "bulk") & (dirs == "up")).sum()))
        test_params["download_streams"] = str(int(((kinds == "bulk") & (dirs == "down")).sum()))
    title = " ".join(f"{k}={params[k]}" for k in keys) + f" rep={int(run['repetition']) + 1}"
    note = f"aqmlab study {study_name!r}, experiment {run['experiment']!r}, run {run['run_id']}, seed {int(run['seed'])}"
    if notes:
        note += "; per-bin goodput series were not stored (keep_series = false): TCP series show each flow's mean"
    return {
        "version": FILEFORMAT_VERSION,
        "x_values": [float(x) for x in grid],
        "results": results,
        "raw_values": raw,
        "metadata": {
            "NAME": test,
            "TITLE": title,
            "NOTE": note,
            "T0": t0.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "TIME": t0.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "LENGTH": length,
            "TOTAL_LENGTH": length,
            "STEP_SIZE": STEP,
            "HOST": "server0",
            "HOSTS": ["server0"],
            "LOCAL_HOST": "aqmlab",
            "IP_VERSION": 4,
            "TEST_PARAMETERS": test_params,
            "SERIES_META": meta,
            "FAILED_RUNNERS": 0,
            "DATA_FILENAME": "",
        },
    }


def _finite(v: Any) -> bool:
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def _bin(series: pd.DataFrame) -> float:
    t = np.unique(series["t"].to_numpy(float)) if len(series) else np.array([])
    return float(np.median(np.diff(t))) if t.size > 1 else 1.0


def _t0(provenance: dict) -> datetime.datetime:
    s = provenance.get("started")
    if s:
        try:
            t = datetime.datetime.fromisoformat(str(s))
            return t.astimezone(datetime.UTC) if t.tzinfo else t.replace(tzinfo=datetime.UTC)
        except ValueError:
            pass
    return datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)


def export_flent(store_dir: str | pathlib.Path, out_dir: str | pathlib.Path, study: Any = None) -> list[pathlib.Path]:
    """Writes one ``*.flent.gz`` per RRUL/VoIP/web run of the store into `out_dir` and
    returns their paths (sorted). Files are deterministic: the same store gives
    byte-identical files."""
    from aqmlab.store import open as open_store
    from aqmlab.study import of_store

    store = open_store(store_dir)
    try:
        study = of_store(store, study)
    except ValueError:
        study = None
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    from aqmlab.store import iter_runs, runs_of

    runs = runs_of(store)
    if runs.empty:
        return []
    t0 = _t0(getattr(store, "provenance", {}) or {})
    empty = pd.DataFrame(columns=["kind", "entity", "metric", "t", "value"])
    declared: dict[str, str | None] = {}
    axis_orders: dict[str, list[str]] = {}
    if study is not None:
        for e in study.experiments:
            declared[e.name] = getattr(e, "flent", None)
            axis_orders[e.name] = [a.name for a in e.axes]
    reps_width = max(2, len(str(int(runs["repetition"].max()) + 1)))
    paths = []
    # one run at a time: its flows, samples and series stream in run-id order together
    for exp, eruns in runs.groupby("experiment", sort=True):
        test_of_exp = declared.get(exp)
        if test_of_exp is not None and str(test_of_exp).lower() in ("none", "false", "off"):
            continue
        eruns = eruns.sort_values("run_id")
        ids = [str(r) for r in eruns["run_id"]]
        streams = {name: iter_runs(store, name, _FLENT_COLUMNS.get(name), None, run_ids=ids) for name in ("flows", "samples", "series")}
        heads: dict[str, tuple | None] = {name: next(it, None) for name, it in streams.items()}

        def take(name: str, rid: str):
            h = heads[name]
            while h is not None and h[0] < rid:
                h = next(streams[name], None)
            heads[name] = h
            if h is not None and h[0] == rid:
                heads[name] = next(streams[name], None)
                return h[1]
            return None

        for _, run in eruns.iterrows():
            rid = str(run["run_id"])
            f, smp, ser = take("flows", rid), take("samples", rid), take("series", rid)
            if f is None:
                continue
            test = test_of_exp or flent_test_for(f)
            if test is None or str(test).lower() in ("none", "false", "off"):
                continue
            paths.append(_write_flent(out, run, f, smp if smp is not None else empty, ser if ser is not None else empty,
                                      test, t0, study, axis_orders, reps_width))
    return sorted(paths)


#: the columns of each table a Flent file is made of (None = all)
_FLENT_COLUMNS = {"flows": None, "samples": ["kind", "entity", "metric", "t", "value"],
                  "series": ["kind", "entity", "metric", "t", "value"]}


def flent_conf_for(test: str, flows: pd.DataFrame) -> str:
    """The Flent test file a run exports as: `test`, except that an all-best-effort RRUL
    with a single UDP probe (``udp_probes = 1``, the Flent of 2014) is written as
    ``rrul_be_nflows``, whose one ``Ping (ms) UDP BE`` series matches it; Flent's
    ``rrul_be.conf`` names all three of its UDP probes "UDP BE1" and lists them in the
    legend even when the file has only one."""
    if test == "rrul_be" and len(flows) and int((flows["kind"].astype(str) == "udp_rr").sum()) == 1:
        return "rrul_be_nflows"
    return test


def _write_flent(out: pathlib.Path, run: pd.Series, f: pd.DataFrame, samples: pd.DataFrame, series: pd.DataFrame,
                 test: str, t0: datetime.datetime, study: Any, axis_orders: dict, reps_width: int) -> pathlib.Path:
    test = flent_conf_for(test, f)
    obj = run_to_flent(run, f, samples, series, test, t0,
                       getattr(study, "name", ""), axis_orders.get(run["experiment"]))
    # the run's axis values name the file (not the stream counts rrul_be_nflows adds)
    params = {k: v for k, v in obj["metadata"]["TEST_PARAMETERS"].items() if k not in ("upload_streams", "download_streams")}
    keys = sorted(
        params,
        key=lambda k: (
            k != "qdisc",
            axis_orders.get(run["experiment"], []).index(k) if k in axis_orders.get(run["experiment"], []) else 99,
            k,
        ),
    )
    group = "_".join(_sanitise(params[k]) for k in keys) or "run"
    if group.isdigit():
        group = f"{_sanitise(keys[0])}{group}"
    name = f"{test}-{_sanitise(run['experiment'])}-{group}-{int(run['repetition']) + 1:0{reps_width}d}.flent.gz"
    obj["metadata"]["DATA_FILENAME"] = name
    path = out / name
    data = json.dumps(obj, sort_keys=True, indent=1, allow_nan=False, default=_json_default).encode("utf-8")
    tmp = path.with_name(f".{name}.tmp")
    with open(tmp, "wb") as fh, gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0) as gz:
        gz.write(data)
    tmp.replace(path)
    return path


def export_flent_run(run_dir: str | pathlib.Path, out_dir: str | pathlib.Path) -> list[pathlib.Path]:
    """Writes the ``*.flent.gz`` of one ``aqmlab run --out DIR`` result (``flows``,
    ``samples`` and ``series`` Parquet files, ``meta.json``): one file if its flows
    make a Flent test (see the module doc), else none. Its name is
    ``<test>-<scenario name>-run-01.flent.gz``."""
    d = pathlib.Path(run_dir)
    meta = json.loads((d / "meta.json").read_text()) if (d / "meta.json").exists() else {}

    def table(name: str) -> pd.DataFrame:
        p = d / f"{name}.parquet"
        if not p.exists():
            return pd.DataFrame(columns=["kind", "entity", "metric", "t", "value"])
        df = pd.read_parquet(p)
        return df.astype({c: str for c in ("kind", "entity", "metric") if c in df.columns and name != "flows"})

    flows = table("flows")
    test = flent_test_for(flows)
    if test is None:
        return []
    name = str(meta.get("scenario") or d.name)
    run = pd.Series({"run_id": name, "experiment": name, "repetition": 0, "seed": int(meta.get("seed", 1))})
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)
    return [_write_flent(out, run, flows, table("samples"), table("series"), test, t0, None, {}, 2)]


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return None if not math.isfinite(float(o)) else float(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
