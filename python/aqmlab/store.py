"""Reading a study's result store (see :mod:`aqmlab.runner` for the layout)."""
from __future__ import annotations

import dataclasses
import json
import pathlib

__all__ = ["Store", "load"]


@dataclasses.dataclass
class Store:
    """The tables of a study's output directory as pandas DataFrames (empty if absent).

    Only finished runs (those with a ``runs/`` row) are included in every table."""

    path: pathlib.Path
    runs: "object"
    flows: "object"
    queues: "object"
    samples: "object"
    series: "object"
    study_text: str
    provenance: dict


def _read(d: pathlib.Path, ids: set[str] | None):
    import pandas as pd

    if not d.is_dir():
        return pd.DataFrame()
    files = sorted(p for p in d.glob("*.parquet") if ids is None or p.stem in ids)
    if not files:
        return pd.DataFrame()
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)


def load(path: str | pathlib.Path) -> Store:
    """Loads the result store written by ``aqmlab reproduce``/``sweep`` (or
    :func:`aqmlab.runner.run_study`)."""
    p = pathlib.Path(path)
    if not (p / "runs").is_dir():
        raise FileNotFoundError(f"{p} is not an aqmlab result store (no runs/ folder)")
    runs = _read(p / "runs", None)
    ids = set(runs["run_id"]) if len(runs) else set()
    if len(runs):
        runs = runs.sort_values(["experiment", "run_id"]).reset_index(drop=True)
    prov = p / "provenance.json"
    text = p / "study.toml"
    return Store(
        path=p,
        runs=runs,
        flows=_read(p / "flows", ids),
        queues=_read(p / "queues", ids),
        samples=_read(p / "samples", ids),
        series=_read(p / "series", ids),
        study_text=text.read_text() if text.exists() else "",
        provenance=json.loads(prov.read_text()) if prov.exists() else {},
    )
