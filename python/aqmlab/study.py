"""Study definitions: a base scenario, experiments with axes, and the outputs they produce.

A study file is TOML and is data only (loading one never executes code)::

    [study]
    name = "residential"
    title = "Modern AQMs in a residential setting"
    repetitions = 30            # per parameter combination
    seed = 1                    # first seed; repetition r of a combination uses seed + r
    findings = [                # shown in the report beside what the run shows
      "FIFO gives high induced latency ...",            # plain text: compared by eye
      { text = "fq_codel induces less latency than FIFO",   # or text + a data-only check
        check = { experiment = "rrul", measure = "induced_latency", axis = "qdisc",
                  lower = "fq_codel", than = "fifo" },
        see = "rrul-ellipse" },                          # a figure/table name to link
    ]

    [quick]                     # what `--quick` changes
    repetitions = 2
    duration = "20s"            # cap on every run's duration (warm-up is scaled with it)

    [base]                      # a scenario (same schema as scenario files)
    run = { duration = "140s" }
    dumbbell = { rate = "10Mbit", delay = "25ms" }

    [[experiment]]
    name = "rrul"
    patch = { flow = [ ... ] }  # merged into the base (tables merge, arrays replace)
    measures = ["goodput_up", "goodput_down", "induced_latency"]

      [[experiment.axis]]
      name = "qdisc"
      path = "dumbbell.qdisc"   # set this key to each value ...
      values = [ { kind = "fifo", limit = 127 }, { kind = "codel" } ]
      labels = ["pfifo_fast", "codel"]

      [[experiment.axis]]
      name = "link"
      [[experiment.axis.values]]     # ... or merge a patch per value
      label = "10/1"
      patch = { dumbbell = { up = { rate = "1Mbit" }, down = { rate = "10Mbit" } } }

      [[experiment.override]]        # extra patch for matching combinations
      when = { link = "10/1", qdisc = "codel" }
      patch = { dumbbell = { up = { qdisc = { kind = "codel", target = "13ms" } } } }

      quick_duration = "60s"     # this experiment's cap in quick mode (default: [quick] duration)
      keep_series = false        # store per-bin time series (flows + bottlenecks); default false
      keep_samples = true        # store time-stamped samples (probe RTTs, VoIP delays); default true
      flent = "rrul_be"          # Flent test for `aqmlab export --flent` (default: recognised
                                 # from the flows; "none" = never export); see aqmlab.flent
      optional = false           # true: a variant that runs only when named with --only
                                 # (e.g. the residential study's DSCP-marked RRUL)

      [[experiment.figure]]
      type = "ellipse"           # see aqmlab.plots for the types and their keys
      x = "goodput_down"
      y = "induced_latency"
      group = "qdisc"
      facet = "link"

      [[experiment.table]]       # see aqmlab.tables for the keys
      value = "induced_latency"
      rows = "qdisc"
      cols = "link"
      stat = "mean±sd"           # mean (default), median, mean±sd, sd, min, max, count

Outputs
-------
``[[experiment.figure]]`` tables are figure specs: ``type`` is one of ``ellipse``,
``cdf``, ``timeseries``, ``bar``, ``flows_vs_rtt``, ``queue_delay``, ``state_trace``,
``drop_rate``, ``line``; the keys of each are documented in :mod:`aqmlab.plots`
(common ones: ``name``, ``title``, ``experiment``, ``where``, ``group``, ``facet``,
``xlim``, ``ylim``). ``[[experiment.table]]`` keys (``value``, ``rows``, ``cols``,
``stat``, ``where``, ``name``, ``title``, ``scale``, ``unit``, ``digits``) are documented
in :mod:`aqmlab.tables`. :func:`aqmlab.report.validate_outputs` checks both before a
sweep starts.

Findings
--------
``[study] findings`` lists what the study reported qualitatively. Each entry is a
string or a table ``{ text = "...", check = {...}, see = "figure-or-table-name" }``.
A ``check`` is data, never code; the report computes it from the ``runs`` table
(one number per run) and shows ✓/✗ with the numbers. Keys:

- ``measure`` (required): a measure of the experiment; ``experiment`` (default: the
  only one); ``stat``: ``"mean"`` (default) or ``"median"`` over repetitions;
  ``where = {axis = label or [labels]}`` restricts the runs;
- and one comparison:
  ``lower = A, than = B, axis = X`` or ``higher = A, than = B, axis = X`` (optional
  ``by = k``: at least k times lower/higher), checked in every combination of the
  other axes; ``order = [A, B, C], axis = X`` (strictly increasing);
  ``trend = "increasing" | "decreasing", axis = X`` (along the axis's values);
  ``at_most = v``, ``at_least = v`` or ``between = [lo, hi]`` (every combination,
  in the measure's stored unit: seconds, bit/s, fractions).

Malformed findings are a :class:`StudyError` when the study is loaded; the full
rules are in :mod:`aqmlab.findings`.

Every combination of axis values × repetitions is one run, identified by a stable
``run_id`` derived from the experiment, the axis labels and the repetition.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import itertools
import json
import math
import pathlib
import re
import tomllib
from typing import Any

from aqmlab.errors import StudyError

__all__ = [
    "Study",
    "Experiment",
    "RunSpec",
    "StudyError",
    "FindingError",
    "validate_finding",
    "load_study",
    "find_study",
    "list_studies",
    "deep_merge",
    "of_store",
]


def deep_merge(base: dict, patch: dict) -> dict:
    """Returns base updated with patch: tables merge recursively, everything else
    (arrays included) is replaced."""
    out = copy.deepcopy(base)
    for k, v in patch.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


_PATH_STEP = re.compile(r"([^.\[\]]+)(?:\[([^\[\]]+)\])?")


def path_steps(path: str) -> list[tuple[str, str | None]]:
    """The steps of an axis ``path``: each dotted part is a key, optionally followed by
    ``[SELECTOR]`` choosing one table of an array of tables (``link[uplink].qdisc``,
    ``flow[0].tcp.cc``). Raises ValueError for anything else."""
    steps: list[tuple[str, str | None]] = []
    pos = 0
    while (m := _PATH_STEP.match(path, pos)) is not None:
        steps.append((m.group(1), m.group(2)))
        pos = m.end()
        if pos == len(path):
            return steps
        if path[pos] != ".":
            break
        pos += 1
    raise ValueError(f"{path!r} is not a dotted key such as \"dumbbell.rate\" or \"link[uplink].qdisc\"")


def _table_name(key: str, t: Any, index: int) -> str | None:
    """The name an array-of-tables element answers to in a path selector: its ``name``;
    without one, the name the result tables give it: ``FROM->TO`` for a ``[[link]]``,
    ``KIND`` + table index for a ``[[flow]]`` (``bulk0``; its instances are
    ``bulk0.0``, ``bulk0.1`` … when ``count > 1``)."""
    if not isinstance(t, dict):
        return None
    if "name" in t:
        return str(t["name"])
    if key == "link" and "from" in t and "to" in t:
        return f"{t['from']}->{t['to']}"
    if key == "flow" and isinstance(t.get("kind"), str):
        return f"{t['kind']}{index}"
    return None


def _select(key: str, items: list, sel: str, path: str) -> int:
    """The index in ``items`` (the array ``key``) that ``sel`` chooses: a 0-based index or
    an element's name."""
    if sel.isdigit():
        i = int(sel)
        if i >= len(items):
            raise StudyError(f"path {path!r}: {key}[{i}] does not exist: the scenario has {len(items)} [[{key}]] table(s) "
                             f"(indices 0 to {len(items) - 1})")
        return i
    names = [_table_name(key, t, i) for i, t in enumerate(items)]
    if sel in names:
        return names.index(sel)
    from aqmlab._naming import did_you_mean

    known = [n for n in names if n is not None]
    raise StudyError(f"path {path!r}: no [[{key}]] named {sel!r}{did_you_mean(sel, known)} "
                     f"(names: {', '.join(known) if known else 'none'}; or select by index, {key}[0])")


def set_path(doc: dict, path: str, value: Any) -> dict:
    """Returns a copy of doc with ``path`` (see :func:`path_steps`) set to value. Tables
    on the way are created; a selected element of an array of tables must exist."""
    out = copy.deepcopy(doc)
    steps = path_steps(path)
    node = out
    for key, sel in steps[:-1]:
        node = _path_child(node, key, sel, path)
    key, sel = steps[-1]
    if sel is None:
        node[key] = copy.deepcopy(value)
    else:
        items = _path_array(node, key, path)
        items[_select(key, items, sel, path)] = copy.deepcopy(value)
    return out


def _path_array(node: dict, key: str, path: str) -> list:
    items = node.get(key)
    if not isinstance(items, list):
        raise StudyError(f"path {path!r}: {key} is not an array of tables ([[{key}]]) in this experiment's scenario")
    return items


def _path_child(node: dict, key: str, sel: str | None, path: str) -> dict:
    """The table one step of ``path`` leads to from ``node``: ``key`` (created if absent
    or not a table) or, with a selector, the chosen table of the array ``key``."""
    if sel is None:
        nxt = node.get(key)
        if not isinstance(nxt, dict):
            nxt = {}
            node[key] = nxt
        return nxt
    items = _path_array(node, key, path)
    item = items[_select(key, items, sel, path)]
    if not isinstance(item, dict):
        raise StudyError(f"path {path!r}: {key}[{sel}] is not a table")
    return item


def parse_duration(s: Any, key: str) -> float:
    if isinstance(s, (int, float)):
        return float(s)
    if not isinstance(s, str):
        raise StudyError(f"{key}: expected a duration such as \"20s\", got {s!r}")
    units = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}
    for u in sorted(units, key=len, reverse=True):
        if s.strip().endswith(u):
            try:
                return float(s.strip()[: -len(u)]) * units[u]
            except ValueError:
                break
    raise StudyError(f"{key}: expected a duration such as \"20s\", got {s!r}")


@dataclasses.dataclass(frozen=True)
class AxisValue:
    label: str
    patch: dict
    #: a ``path`` that selects an element of an array of tables (``link[uplink].qdisc``)
    #: cannot be a patch (patches replace arrays whole): (path, value) set on the scenario
    edit: tuple[str, Any] | None = None


@dataclasses.dataclass(frozen=True)
class Axis:
    name: str
    values: tuple[AxisValue, ...]


@dataclasses.dataclass
class Experiment:
    name: str
    title: str
    base: dict
    axes: list[Axis]
    overrides: list[tuple[dict, dict]]
    measures: list[str]
    figures: list[dict]
    tables: list[dict]
    repetitions: int
    keep_series: bool = False
    keep_samples: bool = True
    #: quick mode: longest run duration in seconds (applied after axes and overrides)
    cap: float | None = None
    flent: str | None = None
    #: a variant outside the default run: it runs only when ``--only`` names it
    optional: bool = False

    def combinations(self) -> list[dict[str, str]]:
        labels = [[v.label for v in a.values] for a in self.axes]
        return [dict(zip([a.name for a in self.axes], combo)) for combo in itertools.product(*labels)]

    def scenario(self, params: dict[str, str]) -> dict:
        doc = self.base
        for a in self.axes:
            val = next(v for v in a.values if v.label == params[a.name])
            doc = deep_merge(doc, val.patch)
            if val.edit is not None:
                try:
                    doc = set_path(doc, *val.edit)
                except StudyError as exc:
                    raise StudyError(f"experiment {self.name!r}, axis {a.name!r} = {val.label!r}: {exc}") from None
        for when, patch in self.overrides:
            if all(params.get(k) == v for k, v in when.items()):
                doc = deep_merge(doc, patch)
        if self.cap is not None:
            doc = _cap_durations(doc, self.cap)
        return doc


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """One run of a study: what to simulate and how to identify it."""

    study: str
    experiment: str
    params: dict
    repetition: int
    seed: int
    scenario: dict

    @functools.cached_property
    def run_id(self) -> str:
        key = json.dumps([self.study, self.experiment, sorted(self.params.items()), self.repetition], sort_keys=True)
        return hashlib.sha1(key.encode()).hexdigest()[:16]


@dataclasses.dataclass
class Study:
    name: str
    title: str
    description: str
    findings: list[dict[str, Any]]
    seed: int
    experiments: list[Experiment]
    text: str
    quick: bool = False
    quick_note: str = ""

    def runs(self, only: list[str] | None = None) -> list[RunSpec]:
        out = []
        for e in self.experiments:
            if (only and e.name not in only) or (not only and e.optional):
                continue
            for params in e.combinations():
                scen = e.scenario(params)
                for r in range(e.repetitions):
                    out.append(RunSpec(self.name, e.name, params, r, self.seed + r, scen))
        return out

    def restricted(self, only: list[str] | None) -> Study:
        """This study limited to the experiments named in `only` (``--only``): the
        header, tables, report and findings then cover those experiments alone. A
        finding is kept when its ``check`` names a kept experiment (or the study has one
        experiment and the check names none) or its ``see`` names a figure or table of
        one; plain-text findings describe the whole study and are left out. With
        `only` empty or None the study without its ``optional`` experiments is returned
        (the study itself when it has none)."""
        if not only:
            return self.without([e.name for e in self.experiments if e.optional])
        # a named optional experiment runs like any other in the restricted study
        keep = [dataclasses.replace(e, optional=False) for e in self.experiments if e.name in only]
        names = {e.name for e in keep}
        outputs = set()
        for e in keep:
            for i, f in enumerate(e.figures):
                outputs.add(str(f.get("name", f"{e.name}-{f.get('type', 'figure')}-{i + 1}")))
            for t in e.tables:
                outputs.add(str(t.get("name", f"{e.name}-{t.get('value')}")))
        single = self.experiments[0].name if len(self.experiments) == 1 else None
        found = []
        for f in self.findings:
            if not isinstance(f, dict):
                continue
            chk = f.get("check") if isinstance(f.get("check"), dict) else {}
            exp = chk.get("experiment", single) if chk else None
            if exp in names or f.get("see") in outputs:
                found.append(f)
        return dataclasses.replace(self, experiments=keep, findings=found)

    def without(self, names: list[str]) -> Study:
        """This study without the experiments in `names` and the findings whose check
        names one of them (the study itself when `names` is empty)."""
        if not names:
            return self
        drop = set(names)
        found = [f for f in self.findings
                 if not (isinstance(f, dict) and isinstance(f.get("check"), dict) and f["check"].get("experiment") in drop)]
        return dataclasses.replace(self, experiments=[e for e in self.experiments if e.name not in drop], findings=found)

    def experiment(self, name: str) -> Experiment:
        for e in self.experiments:
            if e.name == name:
                return e
        raise KeyError(name)


def _axis(raw: dict, key: str) -> Axis:
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise StudyError(f"{key}.name: every axis needs a name")
    unknown = set(raw) - {"name", "path", "values", "labels"}
    if unknown:
        raise StudyError(f"{key}: unknown key(s) {sorted(unknown)} (allowed: name, path, values, labels)")
    vals = raw.get("values")
    if not isinstance(vals, list) or not vals:
        raise StudyError(f"{key}.values: an axis needs a non-empty list of values")
    path = raw.get("path")
    labels = raw.get("labels")
    if labels is not None and (not isinstance(labels, list) or len(labels) != len(vals)):
        raise StudyError(f"{key}.labels: needs one label per value ({len(vals)})")
    out = []
    for i, v in enumerate(vals):
        if path is not None:
            label = labels[i] if labels else (v.get("kind") if isinstance(v, dict) and "kind" in v else str(v))
            if any(sel is not None for _, sel in path_steps(path)):
                out.append(AxisValue(str(label), {}, (path, v)))
            else:
                out.append(AxisValue(str(label), set_path({}, path, v)))
        else:
            if not isinstance(v, dict) or "label" not in v:
                raise StudyError(f"{key}.values[{i}]: without `path`, each value is a table with `label` and `patch`")
            extra = set(v) - {"label", "patch"}
            if extra:
                raise StudyError(f"{key}.values[{i}]: unknown key(s) {sorted(extra)} (allowed: label, patch)")
            out.append(AxisValue(str(v["label"]), dict(v.get("patch", {}))))
    seen = [v.label for v in out]
    if len(set(seen)) != len(seen):
        how = ("without `labels` a table value is labelled by its `kind`, any other by its text: give `labels = [...]`, "
               "one per value" if path is not None and labels is None else "make them differ")
        raise StudyError(f"{key}: labels must be unique, got {seen}; {how}")
    return Axis(name, tuple(out))


def quick_window(start: float, end: float, scale: float, duration: float) -> tuple[float, float]:
    """Where quick mode puts a time window [start, end) of the full study: its start is
    scaled like every other time, its length is kept (a 1 s window of consecutive packets
    shows the same pattern at any run length), and it is moved back so that it ends by the
    shorter run's end. Used for `run.packet_trace` and the `queue_delay` figure's windows."""
    length = end - start
    s0 = start * scale
    if s0 + length > duration:
        s0 = max(0.0, duration - length)
    return s0, min(s0 + length, duration)


def _cap_durations(doc: dict, cap: float) -> dict:
    if not isinstance(doc.get("run", {}), dict):
        return doc  # not a table: validating the scenario names run
    run = dict(doc.get("run", {}))
    dur = parse_duration(run.get("duration", "10s"), "run.duration")
    if dur <= cap:
        return doc
    scale = cap / dur
    run["duration"] = f"{cap:.9g}s"
    if "warmup" in run:
        run["warmup"] = f"{parse_duration(run['warmup'], 'run.warmup') * scale:.9g}s"
    pt = run.get("packet_trace")
    if isinstance(pt, list) and all(isinstance(w, list) and len(w) == 2 for w in pt):
        wins = [quick_window(parse_duration(a, "run.packet_trace"), parse_duration(b, "run.packet_trace"), scale, cap)
                for a, b in pt]
        run["packet_trace"] = [[f"{a:.9g}s", f"{b:.9g}s"] for a, b in wins]
    out = dict(doc)
    out["run"] = run
    # flows that start or stop at absolute times are scaled into the shorter run
    flows = []
    raw_flows = doc.get("flow", [])
    if not isinstance(raw_flows, list) or not all(isinstance(f, dict) for f in raw_flows):
        return out  # not an array of tables: validating the scenario names flow
    for f in raw_flows:
        f = dict(f)
        for k in ("start", "stop", "start_spread"):
            if k in f:
                f[k] = f"{parse_duration(f[k], 'flow.' + k) * scale:.9g}s"
        flows.append(f)
    if flows:
        out["flow"] = flows
    return out




def _bool(v: Any, key: str) -> bool:
    if not isinstance(v, bool):
        raise StudyError(f"{key}: expected true or false, got {v!r}")
    return v


def _flent_test(v: Any, key: str) -> str | None:
    if v is None:
        return None
    from aqmlab._naming import FLENT_TESTS

    allowed = (*FLENT_TESTS, "none")
    if v not in allowed:
        raise StudyError(f"{key}: {v!r} is not a Flent test aqmlab exports (allowed: {', '.join(allowed)})")
    return str(v)


#: The most runs a study may expand to (every experiment's combinations × repetitions):
#: far above any real study (the residential study's full sweep is 5,670), low enough that
#: expanding it never exhausts memory.
MAX_RUNS = 1_000_000


def _int(v: Any, key: str, low: int = 1, high: int = MAX_RUNS) -> int:
    """An integer key in [low, high] (not a boolean, not a float)."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise StudyError(f"{key}: expected an integer from {low} to {high}, got {v!r}")
    if not low <= v <= high:
        raise StudyError(f"{key}: {v} is not allowed ({low} to {high})")
    return v


def _table(v: Any, key: str) -> dict:
    if not isinstance(v, dict):
        raise StudyError(f"{key}: expected a table, got {v!r}")
    return v


def _tables(v: Any, key: str) -> list:
    """An array of tables (the `[[...]]` form or an inline array of inline tables)."""
    if not isinstance(v, list):
        raise StudyError(f"{key}: expected an array of tables, got {v!r}")
    for i, x in enumerate(v):
        _table(x, f"{key}[{i}]")
    return v


def _str(v: Any, key: str) -> str:
    if not isinstance(v, str):
        raise StudyError(f"{key}: expected a string, got {v!r}")
    return v


def _check_shape(doc: dict) -> None:
    """The types of a study file's keys, before anything reads them: each error names the
    key and what it takes (a wrong type would otherwise surface as a Python exception
    deep in the expansion)."""
    meta = _table(doc.get("study", {}), "study")
    for k in ("name", "title", "description"):
        if k in meta:
            _str(meta[k], f"study.{k}")
    if "repetitions" in meta:
        _int(meta["repetitions"], "study.repetitions")
    if "seed" in meta:
        _int(meta["seed"], "study.seed", 0, 2**63 - 1)
    q = _table(doc.get("quick", {}), "quick")
    bad = sorted(set(q) - {"repetitions", "duration"})
    if bad:
        raise StudyError(f"quick: unknown key(s) {bad} (allowed: duration, repetitions)")
    if "repetitions" in q:
        _int(q["repetitions"], "quick.repetitions")
    _table(doc.get("base", {}), "base")
    for i, e in enumerate(_tables(doc.get("experiment", []), "experiment")):
        _check_experiment_shape(e, f"experiment[{i}]")


def _check_experiment_shape(e: dict, key: str) -> None:
    """:func:`_check_shape` for one ``[[experiment]]`` table (``key`` names it)."""
    for k in ("name", "title"):
        if k in e:
            _str(e[k], f"{key}.{k}")
    if "patch" in e:
        _table(e["patch"], f"{key}.patch")
    for k in ("repetitions", "quick_repetitions"):
        if k in e:
            _int(e[k], f"{key}.{k}")
    if "measures" in e:
        v = e["measures"]
        if not isinstance(v, list) or not all(isinstance(m, str) for m in v):
            raise StudyError(f"{key}.measures: expected a list of measure names, got {v!r}")
    for k in ("figure", "table"):
        if k in e:
            _tables(e[k], f"{key}.{k}")
    for j, a in enumerate(_tables(e.get("axis", []), f"{key}.axis")):
        _check_axis_shape(a, f"{key}.axis[{j}]")
    for j, o in enumerate(_tables(e.get("override", []), f"{key}.override")):
        okey = f"{key}.override[{j}]"
        if "when" in o:
            for k, v in _table(o["when"], f"{okey}.when").items():
                if not isinstance(v, str):
                    raise StudyError(f"{okey}.when.{k}: expected an axis value's label (a string), got {v!r}")
        if "patch" in o:
            _table(o["patch"], f"{okey}.patch")


def _check_axis_shape(a: dict, akey: str) -> None:
    """:func:`_check_shape` for one ``[[experiment.axis]]`` table (``akey`` names it)."""
    if "path" in a:
        p = _str(a["path"], f"{akey}.path")
        try:
            path_steps(p)
        except ValueError as exc:
            raise StudyError(f"{akey}.path: {exc}") from None
    if "labels" in a:
        labels = a["labels"]
        if not isinstance(labels, list) or not all(isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in labels):
            raise StudyError(f"{akey}.labels: expected a list of strings or numbers, got {labels!r}")
    vals = a.get("values")
    if "path" not in a and isinstance(vals, list):
        for m, v in enumerate(vals):
            if isinstance(v, dict) and "patch" in v:
                _table(v["patch"], f"{akey}.values[{m}].patch")
            if isinstance(v, dict) and "label" in v and isinstance(v["label"], (bool, list, dict)):
                raise StudyError(f"{akey}.values[{m}].label: expected a string or a number, got {v['label']!r}")

_FINDING_KEYS = {"text", "check", "see"}
_FORMS = ("lower", "higher", "order", "trend", "at_most", "at_least", "between")
_CHECK_KEYS = {"experiment", "measure", "stat", "where", "axis", "than", "by", *_FORMS}


class FindingError(ValueError):
    """A malformed finding; the message names the key."""


def validate_finding(finding: Any, where: str = "findings") -> None:
    """Raises :class:`FindingError` unless `finding` is a string or a well-formed table
    (the keys are documented in :mod:`aqmlab.findings`, which evaluates them)."""
    if isinstance(finding, str):
        return
    if not isinstance(finding, dict):
        raise FindingError(f"{where}: a finding is a string or a table with `text`, got {finding!r}")
    if not isinstance(finding.get("text"), str):
        raise FindingError(f"{where}.text: a finding table needs a text string")
    bad = sorted(set(finding) - _FINDING_KEYS)
    if bad:
        raise FindingError(f"{where}: unknown key(s) {bad} (allowed: {', '.join(sorted(_FINDING_KEYS))})")
    c = finding.get("check")
    if c is None:
        return
    w = f"{where}.check"
    if not isinstance(c, dict):
        raise FindingError(f"{w}: expected a table, got {c!r}")
    bad = sorted(set(c) - _CHECK_KEYS)
    if bad:
        raise FindingError(f"{w}: unknown key(s) {bad} (allowed: {', '.join(sorted(_CHECK_KEYS))})")
    if not isinstance(c.get("measure"), str):
        raise FindingError(f"{w}.measure: a check needs the measure it compares")
    forms = [f for f in _FORMS if f in c]
    ranges = {"at_most", "at_least"}
    if not forms or (len(forms) > 1 and not set(forms) <= ranges):
        raise FindingError(f"{w}: give exactly one of lower/higher (+than), order, trend, at_most/at_least, between; got {forms or 'none'}")
    form = forms[0]
    if form in ("lower", "higher", "order", "trend") and not isinstance(c.get("axis"), str):
        raise FindingError(f"{w}.axis: a {form!r} check needs the axis it compares along")
    if form in ("lower", "higher") and "than" not in c:
        raise FindingError(f"{w}.than: a {form!r} check needs `than`")
    if form == "order" and (not isinstance(c["order"], list) or len(c["order"]) < 2):
        raise FindingError(f"{w}.order: expected a list of at least two axis values")
    if form == "trend" and c["trend"] not in ("increasing", "decreasing"):
        raise FindingError(f"{w}.trend: {c['trend']!r} is not allowed (increasing, decreasing)")
    if form == "between" and (not isinstance(c["between"], list) or len(c["between"]) != 2):
        raise FindingError(f"{w}.between: expected [low, high]")
    if c.get("stat", "mean") not in ("mean", "median"):
        raise FindingError(f"{w}.stat: {c.get('stat')!r} is not allowed (mean, median)")
    if "by" in c and (not isinstance(c["by"], (int, float)) or c["by"] <= 0):
        raise FindingError(f"{w}.by: expected a positive factor, got {c['by']!r}")


def _check_findings(findings: Any) -> list:
    if not isinstance(findings, list):
        raise StudyError(f"study.findings: expected a list of strings or tables, got {findings!r}")
    for i, f in enumerate(findings):
        try:
            validate_finding(f, f"study.findings[{i}]")
        except FindingError as e:
            raise StudyError(str(e)) from None
    return list(findings)


def parse_study(text: str, quick: bool = False, source: str = "<string>") -> Study:
    from aqmlab.inputs import surrogate_error

    why = surrogate_error(text)
    if why:
        raise StudyError(f"{source}: {why}")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise StudyError(f"{source}: {err}") from None
    except RecursionError:
        raise StudyError(f"{source}: malformed TOML: tables/arrays nested too deeply") from None
    allowed = {"study", "quick", "base", "experiment"}
    scenario_keys = {"run", "dumbbell", "node", "link", "flow", "docsis", "wifi", "tcp"}
    if "study" not in doc and "experiment" not in doc and set(doc) & scenario_keys:
        raise StudyError(f"{source}: this is a scenario file ([run], [dumbbell], [[flow]] …), not a study: run it with "
                         "`aqmlab run FILE`; a study has [study] and [[experiment]] tables (docs/study.md)")
    unknown = set(doc) - allowed
    if unknown:
        raise StudyError(f"unknown top-level key(s) {sorted(unknown)} (allowed: {', '.join(sorted(allowed))})")
    _check_shape(doc)
    meta = doc.get("study")
    if not isinstance(meta, dict) or "name" not in meta:
        raise StudyError("study.name: a study needs a [study] table with a name")
    reps = int(meta.get("repetitions", 1))
    if reps < 1:
        raise StudyError(f"study.repetitions: {reps} is not allowed (at least 1)")
    q = doc.get("quick", {})
    quick_reps = int(q.get("repetitions", min(reps, 2)))
    cap = None
    note = ""
    if quick:
        if "duration" in q:
            cap = parse_duration(q["duration"], "quick.duration")
        note = f"quick mode: at most {quick_reps} repetition(s)" + (f", runs capped at {cap:g} s" if cap else "")
    base = doc.get("base", {})
    exps = []
    raw_exps = doc.get("experiment", [])
    if not raw_exps:
        raise StudyError("experiment: a study needs at least one [[experiment]]")
    names = set()
    n_runs = 0
    own_quick: list[str] = []
    for i, e in enumerate(raw_exps):
        key = f"experiment[{i}]"
        ok = {
            "name",
            "title",
            "patch",
            "axis",
            "override",
            "measures",
            "figure",
            "table",
            "repetitions",
            "quick_repetitions",
            "keep_series",
            "keep_samples",
            "flent",
            "quick_duration",
            "optional",
        }
        bad = set(e) - ok
        if bad:
            raise StudyError(f"{key}: unknown key(s) {sorted(bad)} (allowed: {', '.join(sorted(ok))})")
        name = e.get("name")
        if not name or name in names:
            raise StudyError(f"{key}.name: experiments need unique names")
        names.add(name)
        scen = deep_merge(base, e.get("patch", {}))
        e_cap = parse_duration(e["quick_duration"], f"{key}.quick_duration") if quick and "quick_duration" in e else cap
        axes = [_axis(a, f"{key}.axis[{j}]") for j, a in enumerate(e.get("axis", []))]
        for j, ax in enumerate(axes):
            for v in ax.values:
                # a selector into an array the experiment's scenario already has: check it
                # now (an array that another axis's patch brings is checked when expanded)
                if v.edit is not None and isinstance(scen.get(path_steps(v.edit[0])[0][0]), list):
                    try:
                        set_path(scen, *v.edit)
                    except StudyError as exc:
                        raise StudyError(f"{key}.axis[{j}].{exc}") from None
        overrides = []
        for j, o in enumerate(e.get("override", [])):
            if "when" not in o or "patch" not in o:
                raise StudyError(f"{key}.override[{j}]: needs `when` and `patch`")
            axis_names = {a.name for a in axes}
            for k, v in o["when"].items():
                if k not in axis_names:
                    raise StudyError(f"{key}.override[{j}].when.{k}: no such axis (axes: {sorted(axis_names)})")
                ax = next(a for a in axes if a.name == k)
                if v not in [x.label for x in ax.values]:
                    raise StudyError(f"{key}.override[{j}].when.{k}: no value labelled {v!r}")
            overrides.append((dict(o["when"]), dict(o["patch"])))
        r = int(e.get("repetitions", reps))
        if quick:
            full_r, r = r, min(int(e.get("quick_repetitions", quick_reps)), r)
            # experiments with their own quick settings are named in the quick note
            own = ([f"{r} repetition(s)"] if r != min(quick_reps, full_r) else []) + (
                [f"{e_cap:g} s runs"] if e_cap != cap and e_cap is not None else [])
            if own:
                own_quick.append(f"{name} {', '.join(own)}")
        if r < 1:
            raise StudyError(f"{key}.repetitions: {r} is not allowed (at least 1)")
        n_runs += r * math.prod(len(a.values) for a in axes)
        if n_runs > MAX_RUNS:
            raise StudyError(f"{key}: the study expands to more than {MAX_RUNS:,} runs (axis values multiplied, "
                             f"times repetitions); use fewer repetitions or axis values")
        exps.append(
            Experiment(
                name=name,
                title=e.get("title", name),
                base=scen,
                axes=axes,
                overrides=overrides,
                measures=list(e.get("measures", [])),
                figures=list(e.get("figure", [])),
                tables=list(e.get("table", [])),
                repetitions=r,
                cap=e_cap,
                keep_series=bool(e.get("keep_series", False)),
                keep_samples=bool(e.get("keep_samples", True)),
                flent=_flent_test(e.get("flent"), f"{key}.flent"),
                optional=_bool(e.get("optional", False), f"{key}.optional"),
            )
        )
    if own_quick:
        note += f"; own quick settings: {'; '.join(own_quick)}"
    return Study(
        name=meta["name"],
        title=str(meta.get("title", meta["name"])),
        description=meta.get("description", ""),
        findings=_check_findings(meta.get("findings", [])),
        seed=int(meta.get("seed", 1)),
        experiments=exps,
        text=text,
        quick=quick,
        quick_note=note,
    )


def studies_dir() -> pathlib.Path:
    """The shipped study definitions: `studies/` of the source tree or of the package."""
    here = pathlib.Path(__file__).resolve().parent
    for cand in (here / "studies", here.parent.parent / "studies"):
        if cand.is_dir():
            return cand
    return here / "studies"


def list_studies() -> list[str]:
    d = studies_dir()
    return sorted(p.stem for p in d.glob("*.toml")) if d.is_dir() else []


def find_study(name_or_path: str) -> pathlib.Path:
    p = pathlib.Path(name_or_path)
    if p.suffix == ".toml" and p.exists():
        return p
    cand = studies_dir() / f"{name_or_path}.toml"
    if cand.exists():
        return cand
    if p.suffix == ".toml" or len(p.parts) > 1:  # a path, not a shipped study's name
        return p  # read_input names the missing file, the folder or the FIFO
    from aqmlab._naming import did_you_mean

    raise StudyError(f"unknown study {name_or_path!r}{did_you_mean(name_or_path, list_studies())} "
                     f"(shipped: {', '.join(list_studies()) or 'none'}; or give a .toml path)")


def load_study(name_or_path: str, quick: bool = False, force: bool = False) -> Study:
    """The study at a path or of a shipped name. An input file must be a regular file of at
    most :data:`aqmlab.inputs.MAX_INPUT_BYTES` bytes (`force` lifts the size limit)."""
    from aqmlab.inputs import InputFileError, read_input

    path = find_study(name_or_path)
    try:
        text = read_input(path, "study file", force=force)
    except InputFileError as e:
        raise StudyError(str(e)) from None
    return parse_study(text, quick=quick, source=str(path))


def of_store(store: Any, study: Any = None) -> Study:
    """The study a reader works with: `study` itself if it is a :class:`Study`, the study
    file or shipped name `study` if it is a string, or (`study` None) the study text saved
    in `store` (an opened store or in-memory tables), without the optional experiments
    (variants run with ``--only``) of which the store has no runs."""
    if isinstance(study, Study):
        return study
    text = getattr(store, "study_text", "")
    if study is None and text:
        quick = bool(getattr(store, "provenance", {}).get("quick", False))
        parsed = parse_study(text, quick=quick, source="study.toml (from the store)")
        if any(e.optional for e in parsed.experiments):
            # optional experiments (variants run with --only) count when the store has runs of them
            try:
                present = set(store.runs["experiment"].astype(str))
            except Exception:  # no runs table yet: the default experiments only
                present = set()
            parsed = parsed.without([e.name for e in parsed.experiments if e.optional and e.name not in present])
        return parsed
    if isinstance(study, str):
        return load_study(study)
    raise ValueError("no study given and the store holds no study text")
