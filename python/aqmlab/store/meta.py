"""The store's metadata files, each kept twice (``NAME`` and ``NAME.prev``) and checked:
the manifest of compacted parts (``parts.json``; rebuilt from the part files when no copy
is intact), the provenance and the study text."""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any

from aqmlab.store.layout import MANIFEST, TABLES, loose_ids, manifest_runs, repair_hint
from aqmlab.store.write import fsync_dir, sha256, sha256_file, write_bytes_durably

__all__ = [
    "PREV",
    "PROVENANCE",
    "STUDY",
    "check_manifest",
    "check_provenance",
    "check_study",
    "derive_manifest",
    "finished_runs",
    "manifest_or_raise",
    "part_files",
    "part_run_ids",
    "read_copies",
    "read_manifest",
    "read_provenance",
    "read_study_text",
    "study_sha256",
    "write_manifest",
    "write_provenance",
    "write_study_text",
]


#: the store's JSON metadata files (each kept twice: NAME and NAME.prev)
PROVENANCE = "provenance.json"

STUDY = "study.toml"

PREV = ".prev"

#: keys of metadata documents written before they carried a checksum (accepted as they are)
_LEGACY_KEYS = {
    MANIFEST: {"version", "next", "parts"},
    PROVENANCE: {"study", "quick", "quick_note", "aqmlab_version", "started", "repaired"},
}


def _seal(doc: dict) -> bytes:
    """A metadata document as the bytes written: the document plus ``checksum``, the
    SHA-256 of its canonical JSON (without ``checksum``)."""
    body = {k: v for k, v in doc.items() if k != "checksum"}
    body["checksum"] = sha256(json.dumps(body, sort_keys=True).encode())
    return json.dumps(body, indent=1, sort_keys=True).encode()


def _unseal(data: bytes, name: str) -> dict:
    """The document of a metadata file's bytes; ValueError (saying why) if it is damaged:
    not UTF-8 JSON, not an object, a wrong checksum, or no checksum and keys a file of an
    older version never had."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ValueError(f"not valid JSON ({type(e).__name__})") from None
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    if "checksum" in doc:
        body = {k: v for k, v in doc.items() if k != "checksum"}
        if doc["checksum"] != sha256(json.dumps(body, sort_keys=True).encode()):
            raise ValueError("checksum mismatch")
        return body
    legacy = _LEGACY_KEYS.get(name)
    if legacy is None or not set(doc) <= legacy or (name == MANIFEST and doc.get("version") != 1):
        raise ValueError("no checksum")
    return doc


def _write_copies(out: pathlib.Path, name: str, data: bytes) -> None:
    """Writes a metadata file durably and then its second copy ``NAME.prev``: while the
    new generation is written (temporary file, fsync, rename), the other copy still holds
    the previous one, so a crash at any instant leaves one intact copy."""
    for target in (out / name, out / (name + PREV)):
        write_bytes_durably(data, target)
        fsync_dir(out)


def read_copies(out: pathlib.Path, name: str, check: Any) -> tuple[Any, str | None, list[str]]:
    """(value, the copy it came from, problems): the first copy (``NAME``, then
    ``NAME.prev``) that `check(bytes)` accepts; (None, None, problems) if neither exists or
    neither is intact. `problems` says what is wrong with each damaged copy."""
    problems = []
    for fname in (name, name + PREV):
        p = out / fname
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            continue
        except OSError as e:
            problems.append(f"{fname}: unreadable ({e.strerror or e})")
            continue
        try:
            return check(data), fname, problems
        except ValueError as e:
            problems.append(f"{fname}: {e}")
    return None, None, problems


def check_manifest(data: bytes) -> dict:
    m = _unseal(data, MANIFEST)
    parts = m.get("parts")
    if not isinstance(m.get("next"), int) or not isinstance(parts, dict):
        raise ValueError("not a manifest")
    for t in TABLES:
        parts.setdefault(t, [])
        if not isinstance(parts[t], list):
            raise ValueError("not a manifest")
        for p in parts[t]:
            if (not isinstance(p, dict) or not isinstance(p.get("file"), str) or not isinstance(p.get("sha256"), str)
                    or not isinstance(p.get("runs"), list) or not all(isinstance(r, str) for r in p["runs"])
                    or not p["file"].startswith(f"{t}/part-")):
                raise ValueError("not a manifest")
    if set(parts) - set(TABLES):
        raise ValueError("not a manifest")
    return m


def _empty_manifest() -> dict:
    return {"version": 2, "next": 1, "parts": {t: [] for t in TABLES}}


def part_files(out: pathlib.Path) -> list[str]:
    """Every part file on disk, as ``table/part-NNNNNN.parquet``."""
    found = []
    for t in TABLES:
        d = out / t
        if d.is_dir():
            found += [f"{t}/{n}" for n in sorted(os.listdir(d)) if n.startswith("part-") and n.endswith(".parquet")]
    return found


def part_run_ids(f: pathlib.Path) -> list[str]:
    """The run ids a part file holds, in file order (reads only its run_id column, as
    dictionary codes: each row group's distinct codes looked up in its dictionary, not a
    string per row; a fifth of the CPU on the parts of a full residential store)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    with pq.ParquetFile(f, read_dictionary=["run_id"]) as pf:
        col = pf.read(columns=["run_id"], use_threads=False).column("run_id")
    seen: dict[str, None] = {}
    for chunk in col.chunks:
        values = chunk.dictionary.to_pylist()
        for code in pc.unique(chunk.indices).to_pylist():
            seen.setdefault(str(values[code] if code is not None else None), None)
    return list(seen)


def manifest_or_raise(out: pathlib.Path) -> tuple[dict, str | None]:
    """The manifest (from ``parts.json`` or, if that copy is damaged, ``parts.json.prev``)
    and the copy it came from (None: the store has never been compacted). Raises
    :class:`StoreError` if both copies are damaged, or if there are none while part files
    hold runs that are not also stored loose (a deleted ``parts.json``)."""
    from aqmlab.errors import StoreError

    m, src, problems = read_copies(out, MANIFEST, check_manifest)
    if m is not None:
        return m, src
    if problems:
        raise StoreError(f"{out}: the manifest of compacted runs is damaged ({'; '.join(problems)}); {repair_hint(out)}")
    loose = loose_ids(out, "runs")
    for rel in part_files(out):
        if rel.startswith("runs/"):
            try:
                ids = part_run_ids(out / rel)
            except Exception:  # noqa: BLE001 - an unreadable unlisted part: a leftover, or damage
                ids = ["?"]
            if not set(ids) <= loose:
                raise StoreError(f"{out}: {MANIFEST} is missing but {rel} holds finished runs; {repair_hint(out)}")
    return _empty_manifest(), None


def derive_manifest(out: pathlib.Path, prefer: dict | None = None) -> tuple[dict, list[str]]:
    """A manifest rebuilt from the part files on disk (their run ids, rows, experiment and
    SHA-256): a run held by several parts of one table is kept in the newest, runs still
    stored loose stay loose (a part of an interrupted compaction), unreadable parts are
    left out (their runs are then missing and a resume runs them again). Parts listed in
    `prefer` (an older manifest) keep its checksum, so damage since then shows.
    Returns (manifest, problems)."""
    import pyarrow.parquet as pq

    problems: list[str] = []
    known = {p["file"]: p for t in TABLES for p in (prefer or {"parts": {}})["parts"].get(t, [])}
    loose = loose_ids(out, "runs")
    m = _empty_manifest()
    top = 0
    for t in TABLES:
        entries = []
        for rel in part_files(out):
            if not rel.startswith(f"{t}/"):
                continue
            f = out / rel
            top = max(top, int(rel.split("part-")[1].split(".")[0] or 0))
            try:
                sha = sha256_file(f)
                if rel in known and known[rel]["sha256"] != sha:
                    raise ValueError("checksum mismatch")
                with pq.ParquetFile(f) as pf:
                    rows = pf.metadata.num_rows
                if rows == 0:  # holds no run's rows (an older compaction wrote such parts)
                    problems.append(f"{rel}: holds no rows")
                    continue
                ids = part_run_ids(f)
                with pq.ParquetFile(f) as pf:
                    exp = pf.read_row_group(0, columns=["experiment"]).column("experiment")[0].as_py() if pf.num_row_groups else ""
            except Exception as e:  # noqa: BLE001 - any unreadable part is left out
                problems.append(f"{rel}: {'unreadable' if not isinstance(e, ValueError) else e}")
                continue
            entries.append({"file": rel, "experiment": str(exp), "rows": rows, "runs": ids, "sha256": sha})
        seen: set[str] = set()
        for p in sorted(entries, key=lambda p: p["file"], reverse=True):  # newest first
            keep = [r for r in p["runs"] if r not in seen and r not in loose]
            seen |= set(p["runs"])
            if len(keep) < len(p["runs"]):
                p["runs"], p["filtered"] = keep, True
        m["parts"][t] = [p for p in sorted(entries, key=lambda p: p["file"]) if p["runs"]]
    m["next"] = top + 1
    return m, problems


def read_manifest(out: pathlib.Path) -> dict:
    return manifest_or_raise(out)[0]


def write_manifest(out: pathlib.Path, m: dict) -> None:
    m = dict(m, version=2)
    _write_copies(out, MANIFEST, _seal(m))


def check_provenance(data: bytes) -> dict:
    return _unseal(data, PROVENANCE)


def read_provenance(out: pathlib.Path) -> dict:
    """The store's provenance (from ``provenance.json`` or its intact second copy); {} if
    there is none; :class:`StoreError` if both copies are damaged."""
    from aqmlab.errors import StoreError

    doc, _, problems = read_copies(pathlib.Path(out), PROVENANCE, check_provenance)
    if doc is None and problems:
        raise StoreError(f"{out}: {PROVENANCE} is damaged ({'; '.join(problems)}); {repair_hint(out)}")
    return doc or {}


def write_provenance(out: pathlib.Path, doc: dict) -> None:
    """Writes the provenance (two copies, each with a checksum)."""
    _write_copies(pathlib.Path(out), PROVENANCE, _seal(doc))


def check_study(expected: str | None) -> Any:
    def check(data: bytes) -> str:
        if expected is not None and sha256(data) != expected:
            raise ValueError("checksum mismatch")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("not UTF-8 text") from None
        if expected is None:  # written before the provenance kept its checksum: it must at least parse
            from aqmlab.study import parse_study

            try:
                parse_study(text)
            except Exception as e:  # noqa: BLE001 - any failure means the copy is not usable
                raise ValueError(f"not a study file ({' '.join(str(e).split())})") from None
        return text
    return check


def read_study_text(out: pathlib.Path, provenance: dict | None = None) -> str:
    """The study text of the store (``study.toml``, or its intact second copy, checked
    against the SHA-256 the provenance records); "" if there is none."""
    from aqmlab.errors import StoreError

    out = pathlib.Path(out)
    prov = read_provenance(out) if provenance is None else provenance
    text, _, problems = read_copies(out, STUDY, check_study(prov.get("study_sha256")))
    if text is None and problems:
        raise StoreError(f"{out}: {STUDY} is damaged ({'; '.join(problems)}); resume the sweep with the study file "
                         f"(`aqmlab sweep STUDY.toml --out {out}`) to rewrite it")
    return text or ""


def write_study_text(out: pathlib.Path, text: str) -> None:
    """Writes the study text (two copies; the provenance records its SHA-256)."""
    _write_copies(pathlib.Path(out), STUDY, text.encode("utf-8"))


def study_sha256(text: str) -> str:
    return sha256(text.encode("utf-8"))


def finished_runs(out: pathlib.Path) -> set[str]:
    """Run ids whose ``runs`` row exists (loose or in a listed part). Raises
    :class:`StoreError` if the manifest cannot be read (:func:`verify` repairs it)."""
    out = pathlib.Path(out)
    return loose_ids(out, "runs") | manifest_runs(read_manifest(out))
