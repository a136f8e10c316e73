"""The shipped validation campaign: ``aqmlab crosscheck --campaign quick|full --out DIR``.

The cases are scenario files shipped with aqmlab (``aqmlab/campaign/cases/*.toml``, each
saying what it is in ``run.description``). Every case runs on the simulator and on every
selected engine whose ``check()`` accepts it; each (case, engine, seed) is one *cell*,
compared row by row as ``aqmlab crosscheck`` does (:func:`aqmlab.crosscheck.compare_engines`).
``quick`` runs :data:`QUICK` with :data:`QUICK_DURATION` and one seed; ``full`` runs
every case as written with the seeds :data:`FULL_SEEDS`.

Cells run on the local process pool or a Dask cluster (:mod:`aqmlab.runner`'s pooling).
Each finished cell is a JSON file under ``DIR/cells/``, named by the case, engine, seed and
a hash of the exact scenario, written atomically: a second run with the same ``DIR``
skips finished cells (and re-runs failed ones). An engine that fails while running fails
its cell alone. ``DIR/report.html``, ``DIR/results.csv``, ``DIR/matrix.md`` and the
figures under ``DIR/figures/`` are written from the cells at the end
(:mod:`aqmlab.campaign.report`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Case", "CellJob", "CampaignSummary", "load_cases", "plan", "run_cell", "run_campaign", "MODES", "QUICK", "QUICK_DURATION",
           "QUICK_WARMUP", "FULL_SEEDS", "DEFAULT_ENGINES", "CASES_DIR", "DONE", "STATUSES"]

CASES_DIR = Path(__file__).resolve().parent / "cases"
MODES = ("quick", "full")
#: The cases of quick mode: the ns-3 and ns-2 cases (seconds each) and a subset of the
#: kernel campaign's (which run on ns-3 with ns-3's TCP under Linux's settings).
QUICK = (
    "tcp4_codel",
    "tcp16_codel",
    "tcp16_pie",
    "tcp16_fq_codel",
    "tcp16_fq_pie",
    "tcp16_fifo",
    "tcp4_red",
    "bbr1_fifo",
    "res_rrul_codel",
    "cake_2hosts",
    "ns3_codel",
    "ns3_pie",
    "ns3_fq_codel",
    "ns3_fq_pie",
    "ns3_fifo",
    "ns3_ared",
    "ns3_codel_ecn",
    "ns3_codel_rtt100",
    "ns3_codel_100mbit",
    "ns3_codel_mixed_rtt",
    "ns3_codel_asym",
    "ns3_cubic_codel",
    "ns3_bbr_fifo",
    "ns3_codel_probes",
    "ns2_tcp16_droptail",
    "ns2_tcp16_red",
    "ns2_tcp16_ared",
    "ns2_tcp16_red_newreno",
    "ns2_tcp4_red_rtt100",
    "ns2_tcp16_red_100mbit",
    "ns2_tcp8_red_mixed_rtt",
    "ns2_red_asym",
    "ns2_red_probes",
)
#: quick mode's run length and warm-up (the cases' own are 40-60 s with 10 s)
QUICK_DURATION, QUICK_WARMUP = "20s", "5s"
QUICK_SEEDS = (1,)
FULL_SEEDS = (1, 2, 3)
#: Engines by default: quick leaves the kernel out (one kernel run takes minutes of
#: emulation; ``--engines linux,ns3,ns2`` takes it in).
DEFAULT_ENGINES = {"quick": ("ns3", "ns2"), "full": ("linux", "ns3", "ns2")}
#: Cell statuses: ran and judged, or why not.
STATUSES = ("agree", "differ", "failed", "unsupported", "not installed")
#: statuses of a finished cell (kept on resume); failed cells run again
DONE = ("agree", "differ")


@dataclass
class Case:
    name: str
    about: str
    doc: dict[str, Any]


def _case_names() -> list[str]:
    return sorted(p.stem for p in CASES_DIR.glob("*.toml"))


def load_cases(mode: str = "full", only: list[str] | None = None) -> list[Case]:
    """The campaign's cases in ``mode`` (``quick``: :data:`QUICK` shortened to
    :data:`QUICK_DURATION`), or the named ones (ValueError naming the unknown ones)."""
    if mode not in MODES:
        raise ValueError(f"campaign: unknown mode {mode!r}; allowed: {', '.join(MODES)}")
    names = _case_names()
    if only is not None:
        bad = [n for n in only if n not in names]
        if bad:
            raise ValueError(f"campaign: unknown case(s) {', '.join(bad)}; cases: {', '.join(names)}")
        names = list(only)
    elif mode == "quick":
        names = [n for n in QUICK if n in names]
    out = []
    for n in names:
        doc = tomllib.loads((CASES_DIR / f"{n}.toml").read_text())
        if mode == "quick":
            doc["run"]["duration"], doc["run"]["warmup"] = QUICK_DURATION, QUICK_WARMUP
        out.append(Case(n, str(doc["run"].get("description", "")), doc))
    return out


def _hash(doc: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:10]


@dataclass
class CellJob:
    """One (case, engine, seed) of a campaign: to run, or why it does not."""

    case: str
    engine: str
    seed: int
    doc: dict[str, Any]
    #: None: to run; else "unsupported" or "not installed" with ``why``
    status: str | None = None
    why: str = ""

    @property
    def file(self) -> str:
        return f"{self.case}/{self.engine}-s{self.seed}-{_hash(self.doc)}.json"

    def record(self) -> dict[str, Any]:
        """The cell as stored for a cell that does not run."""
        return {"case": self.case, "engine": self.engine, "seed": self.seed, "status": self.status, "error": self.why, "rows": []}


def plan(cases: list[Case], engines: list[str], seeds: tuple[int, ...] | list[int], *, available: Callable[[str], str | None] | None = None,
         check: Callable[[str, Any], list[str]] | None = None) -> list[CellJob]:
    """Every (case, engine, seed): to run, or ``not installed`` (the engine's install
    hint) or ``unsupported`` (the first key its ``check()`` refuses). ``available`` and
    ``check`` default to the engines' own."""
    from aqmlab.engines import ENGINES

    available = available or (lambda e: ENGINES[e].available())
    check = check or (lambda e, sc: ENGINES[e].check(sc))
    have = {e: available(e) for e in engines}
    jobs = []
    for c in cases:
        for e in engines:
            bad = check(e, c.doc) if have[e] is None else []
            for s in seeds:
                j = CellJob(c.name, e, s, c.doc)
                if have[e] is not None:
                    j.status, j.why = "not installed", have[e] or ""
                elif bad:
                    j.status, j.why = "unsupported", bad[0]
                jobs.append(j)
    return jobs


# ---------------------------------------------------------------------------------------
# one cell (in a worker process)


def _hist_quantiles(h: Any, ps: Any) -> Any:
    """Quantiles ``ps`` of a sojourn histogram (rows ``low``, ``high``, ``count``; s),
    linear within a bucket."""
    import numpy as np

    h = h[h["count"] > 0].sort_values("low")
    lo, hi, n = h["low"].to_numpy(float), h["high"].to_numpy(float), h["count"].to_numpy(float)
    cum = np.cumsum(n) / n.sum()
    i = np.minimum(np.searchsorted(cum, ps, side="left"), len(cum) - 1)
    below = np.where(i > 0, cum[np.maximum(i - 1, 0)], 0.0)
    frac = np.clip((ps - below) / np.maximum(cum[i] - below, 1e-300), 0, 1)
    return lo[i] + frac * (hi[i] - lo[i])


def _cdf(r: Any, queue: str | None) -> dict[str, Any] | None:
    """The sojourn distribution of ``queue`` after the warm-up as 201 quantiles (ms): from
    per-packet samples, else from the engine's sojourn histogram (ns-3: every packet after
    the warm-up), else from per-bin means (the kernel)."""
    import numpy as np

    from aqmlab.crosscheck import sojourn_samples

    if queue is None:
        return None
    ps = np.linspace(0, 1, 201)
    x, how = sojourn_samples(r, queue)
    if how != "per packet":
        h = r.sojourn_hist
        h = h[h["queue"] == queue] if len(h) else h
        if len(h) and h["count"].sum() > 0:
            q = _hist_quantiles(h, ps) * 1e3
            return {"queue": queue, "how": "histogram", "n": int(h["count"].sum()), "ms": [float(v) for v in q]}
    if len(x) == 0:
        return None
    q = np.quantile(np.asarray(x, dtype=float) * 1e3, ps)
    return {"queue": queue, "how": how, "n": int(len(x)), "ms": [float(v) for v in q]}


def _goodput(r: Any) -> dict[str, Any] | None:
    """The goodput of all flows per bin (bin centres in s, Mbit/s)."""
    se = r.series
    m = se[(se["kind"] == "flow") & (se["metric"] == "goodput_bps")]
    if m.empty:
        return None
    tot = m.groupby("t")["value"].sum(min_count=1)
    return {
        "t": [float(t + r.bin / 2) for t in tot.index],
        "mbps": [float(v) / 1e6 if math.isfinite(v) else None for v in tot.to_numpy()],
        "bin": float(r.bin),
    }


def _failure(e: BaseException) -> str:
    return " ".join(f"{type(e).__name__}: {e}".split())[:2000]


def run_cell(job: CellJob) -> dict[str, Any]:
    """Runs one cell: the simulator and the engine on the case with the seed, compared.
    An engine that raises (its process crashed, timed out, wrote nothing) gives a
    ``failed`` cell with the message; so does a simulator that raises."""
    from aqmlab.crosscheck import busiest_queue, compare_engines, to_json, verdicts
    from aqmlab.engines import ENGINES
    from aqmlab.linux.crosscheck import run_sim

    out: dict[str, Any] = {"case": job.case, "engine": job.engine, "seed": job.seed, "rows": []}
    t0 = time.monotonic()
    try:
        sim = run_sim(job.doc, seed=job.seed)
        r = ENGINES[job.engine].run(job.doc, job.seed, log=lambda m: None)
    except Exception as e:  # a crashed engine fails its cell alone
        out.update(status="failed", error=_failure(e), wall_seconds=time.monotonic() - t0)
        return out
    rows = compare_engines(sim, {job.engine: r})
    q = busiest_queue(sim)
    info = {
        k: v
        for k, v in (r.engine_info or {}).items()
        if isinstance(v, (str, int, float, bool)) and not (isinstance(v, float) and not math.isfinite(v))
    }
    out.update(status="agree" if verdicts(rows, [job.engine])[job.engine] else "differ", error="", rows=to_json(rows),
               info=info, warnings=list(r.warnings), wall_seconds=time.monotonic() - t0,
               figures={"sim": {"cdf": _cdf(sim, q), "goodput": _goodput(sim)}, job.engine: {"cdf": _cdf(r, q), "goodput": _goodput(r)}})
    return out


# ---------------------------------------------------------------------------------------
# the campaign


@dataclass
class CampaignSummary:
    out: Path
    cells: int
    ran: int
    skipped: int
    failed: list[str] = field(default_factory=list)
    wall_seconds: float = 0.0
    report: Path | None = None


def _write_json(path: Path, d: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(d, allow_nan=False, default=lambda v: None) + "\n")
    os.replace(tmp, path)


def read_cell(out: Path, job: CellJob) -> dict[str, Any] | None:
    p = out / "cells" / job.file
    try:
        d: dict[str, Any] = json.loads(p.read_text())
    except (OSError, ValueError):
        return None
    return d


class _CellWriter:
    """The pool's writer: stores each finished cell as it arrives."""

    def __init__(self, out: Path, say: Callable[[str], None], total: int) -> None:
        self.out, self.say, self.total, self.n = out, say, total, 0
        self.failed: list[str] = []

    def _tell(self, job: CellJob, d: dict[str, Any]) -> None:
        self.n += 1
        extra = f": {d['error'][:200]}" if d["status"] == "failed" else ""
        self.say(
            f"[{self.n}/{self.total}] {job.case} {job.engine} seed {job.seed}: {d['status']} ({d.get('wall_seconds', 0):.1f} s){extra}"
        )

    def submit(self, job: CellJob, d: dict[str, Any]) -> None:
        _write_json(self.out / "cells" / job.file, d)
        if d["status"] == "failed":
            self.failed.append(job.file)
        self._tell(job, d)

    def fail(self, job: CellJob, e: BaseException) -> None:
        """The worker process died (or Dask lost it): the cell fails alone."""
        self.submit(job, {"case": job.case, "engine": job.engine, "seed": job.seed, "status": "failed", "error": _failure(e), "rows": []})

    def poll(self, block: bool = False) -> None:
        return None


def run_campaign(
    mode: str,
    out: str | os.PathLike[str],
    engines: list[str] | None = None,
    *,
    jobs: int | None = None,
    scheduler: Any = None,
    cases: list[str] | None = None,
    say: Callable[[str], None] | None = None,
    report: bool = True,
) -> CampaignSummary:
    """Runs the campaign into ``out`` (resuming what is there) and writes its report."""
    from aqmlab import runner

    say = say or (lambda m: None)
    t0 = time.monotonic()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    engines = list(engines or DEFAULT_ENGINES[mode])
    seeds = QUICK_SEEDS if mode == "quick" else FULL_SEEDS
    cs = load_cases(mode, cases)
    cells = plan(cs, engines, seeds)
    todo, skipped = [], 0
    for j in cells:
        if j.status is not None:
            continue
        d = read_cell(out, j)
        if d is not None and d.get("status") in DONE:
            skipped += 1
        else:
            todo.append(j)
    _write_json(out / "campaign.json", {"mode": mode, "engines": engines, "seeds": list(seeds), "cases": [c.name for c in cs]})
    say(f"campaign {mode}: {len(cs)} cases × {', '.join(engines)} × {len(seeds)} seed(s): {len(todo)} cells to run, {skipped} done before, "
        f"{sum(j.status is not None for j in cells)} not run (unsupported or not installed)")
    w = _CellWriter(out, say, len(todo))
    args = [(j,) for j in todo]
    if scheduler is not None:
        runner.run_dask(scheduler, args, w, w.fail, fn=run_cell)  # type: ignore[arg-type]
    else:
        runner.run_local(jobs, args, w, w.fail, fn=run_cell)  # type: ignore[arg-type]
    s = CampaignSummary(out, len(cells), len(todo), skipped, w.failed, time.monotonic() - t0)
    if report:
        from aqmlab.campaign.report import write_report

        stored = [j.record() if j.status is not None else read_cell(out, j) for j in cells]
        s.report = write_report(out, cs, engines, [d for d in stored if d is not None], mode=mode, wall_seconds=s.wall_seconds)
    return s

