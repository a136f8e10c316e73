"""Verification: every finished run checked against its SHA-256 checksums, the manifest
repaired, damaged runs removed so that a sweep runs them again."""

from __future__ import annotations

import dataclasses
import json
import pathlib

from aqmlab.store.layout import CHECKSUMS, DATA_TABLES, MANIFEST, TABLES, loose_ids, manifest_runs, repair_hint
from aqmlab.store.meta import (
    PREV,
    PROVENANCE,
    STUDY,
    check_manifest,
    check_provenance,
    check_study,
    derive_manifest,
    part_files,
    part_run_ids,
    read_copies,
    read_manifest,
    write_manifest,
)
from aqmlab.store.write import remove_loose_runs, sha256_file

__all__ = ["Damaged", "check_files", "check_store", "damage_message", "repair_metadata", "runs_disagree", "verify"]


@dataclasses.dataclass
class Damaged:
    """A finished run whose files did not match their checksums (it was removed to be rerun)."""

    run_id: str
    file: str
    reason: str


def damage_message(out: pathlib.Path, damaged: list[Damaged]) -> str:
    d = damaged[0]
    more = len({x.run_id for x in damaged}) - 1
    return (f"{out}: run {d.run_id} is damaged ({d.file}: {d.reason})"
            + (f", and {more} more run(s)" if more > 0 else "")
            + f"; {repair_hint(out)} (it runs the damaged runs again)")


def _loose_sums(out: pathlib.Path, rid: str) -> tuple[dict[str, str] | None, tuple[str, str] | None]:
    """(checksums of a loose run, problem): (None, None) for a run stored without a
    checksum file (before checksums existed)."""
    cs = out / CHECKSUMS / f"{rid}.json"
    try:
        data = cs.read_bytes()
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, (f"{CHECKSUMS}/{rid}.json", f"unreadable checksum file ({e.strerror or e})")
    try:
        sums = json.loads(data.decode("utf-8"))
        if (not isinstance(sums, dict) or "runs" not in sums or not set(sums) <= set(TABLES)
                or not all(isinstance(v, str) and len(v) == 64 for v in sums.values())):
            raise ValueError("not a checksum file")
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        return None, (f"{CHECKSUMS}/{rid}.json", f"unreadable checksum file ({type(e).__name__})")
    return sums, None


def check_files(out: pathlib.Path, m: dict) -> tuple[list[Damaged], dict[str, set[str]]]:
    """Checks every finished run's files against their checksums without changing
    anything: (damaged runs, the loose run ids per table whose files were verified or
    predate checksums). A loose run is checked against ``checksums/<run_id>.json``, a
    part against the SHA-256 in the manifest."""
    out = pathlib.Path(out)
    damaged: list[Damaged] = []
    ok: dict[str, set[str]] = {t: set() for t in TABLES}
    in_parts = manifest_runs(m)
    present = {t: loose_ids(out, t) for t in DATA_TABLES}
    for rid in sorted(loose_ids(out, "runs") - in_parts):
        sums, bad = _loose_sums(out, rid)
        if sums is None and bad is None:  # stored before checksums existed
            ok["runs"].add(rid)
            for t in DATA_TABLES:
                if rid in present[t]:
                    ok[t].add(rid)
            continue
        for t, digest in (sums or {}).items():
            if bad:
                break
            f = out / t / f"{rid}.parquet"
            try:
                if sha256_file(f) != digest:
                    bad = (f"{t}/{rid}.parquet", "checksum mismatch")
            except FileNotFoundError:
                bad = (f"{t}/{rid}.parquet", "missing")
            except OSError as e:
                bad = (f"{t}/{rid}.parquet", f"unreadable ({e.strerror or e})")
        if bad:
            damaged.append(Damaged(rid, *bad))
        else:
            for t in sums or {}:
                ok[t].add(rid)
    for t in TABLES:
        for p in m["parts"][t]:
            f = out / p["file"]
            try:
                why = "checksum mismatch" if sha256_file(f) != p["sha256"] else None
            except FileNotFoundError:
                why = "missing"
            except OSError as e:
                why = f"unreadable ({e.strerror or e})"
            if why:
                damaged.extend(Damaged(rid, p["file"], why) for rid in p["runs"])
    return damaged, ok


def runs_disagree(out: pathlib.Path, m: dict) -> str | None:
    """The first part whose listed runs are not those its file holds (None if all agree)."""
    for t in TABLES:
        for p in m["parts"][t]:
            try:
                ids = set(part_run_ids(out / p["file"]))
            except Exception:  # noqa: BLE001 - unreadable: the checksum check reports it
                continue
            listed = set(p["runs"])
            if not listed <= ids or (not p.get("filtered") and listed != ids):
                return p["file"]
    return None


def repair_metadata(out: pathlib.Path) -> list[str]:
    """Brings the manifest back to an intact, true state and returns what was done: a
    damaged copy is rewritten from the intact one; with neither intact (or a run list that
    disagrees with its part file, or a deleted manifest while parts hold runs) the
    manifest is rebuilt from the part files."""
    out = pathlib.Path(out)
    done: list[str] = []
    m, src, problems = read_copies(out, MANIFEST, check_manifest)
    if m is None:
        unlisted = part_files(out)
        if not problems and not unlisted:
            return done
        m, bad = derive_manifest(out)
        why = "; ".join(problems) if problems else f"{MANIFEST} missing"
        done.append(f"{MANIFEST} rebuilt from {sum(len(v) for v in m['parts'].values())} part file(s) ({why})"
                    + (f"; left out: {'; '.join(bad)}" if bad else ""))
        write_manifest(out, m)
        return done
    wrong = runs_disagree(out, m)
    if wrong is not None:
        m, bad = derive_manifest(out, prefer=m)
        done.append(f"{MANIFEST} rebuilt from the part files: the run list of {wrong} disagreed with the file"
                    + (f"; left out: {'; '.join(bad)}" if bad else ""))
        write_manifest(out, m)
        return done
    other = MANIFEST + PREV if src == MANIFEST else MANIFEST
    if problems or not (out / other).exists():
        if problems:
            done.append(f"{'; '.join(problems)}: rewritten from {src}")
        write_manifest(out, m)
    return done


def verify(out: pathlib.Path) -> list[Damaged]:
    """Repairs the manifest (:func:`repair_metadata`), checks every finished run against
    its checksums and removes damaged ones (so that a sweep reruns them). Loose runs
    written before checksums existed (no checksum file) are kept. A damaged compacted part
    drops every run it holds from the manifest."""
    out = pathlib.Path(out)
    repair_metadata(out)
    m = read_manifest(out)
    damaged, _ = check_files(out, m)
    if not damaged:
        return damaged
    drop = {d.run_id for d in damaged}
    bad_files = {d.file for d in damaged}
    loose_bad = sorted(drop - manifest_runs(m))
    remove_loose_runs(out, loose_bad)
    if drop & manifest_runs(m) or any(p["file"] in bad_files for t in TABLES for p in m["parts"][t]):
        keep_parts: dict[str, list] = {}
        for t in TABLES:
            keep_parts[t] = []
            for p in m["parts"][t]:
                if p["file"] in bad_files:
                    continue
                if drop & set(p["runs"]):
                    p["runs"] = [r for r in p["runs"] if r not in drop]
                    p["filtered"] = True
                if p["runs"]:
                    keep_parts[t].append(p)
        m["parts"] = keep_parts
        write_manifest(out, m)
        remove_loose_runs(out, sorted(drop))  # any loose leftovers of those runs are stale as well
    return damaged


def check_store(out: pathlib.Path) -> tuple[list[str], int]:
    """Checks a store without changing anything (``aqmlab verify`` without ``--repair``):
    (the problems found, one sentence each; the number of finished runs). Looks at both
    copies of every metadata file, the manifest's run lists against the part files, and
    every finished run's files against their checksums."""
    from aqmlab.errors import StoreError

    d = pathlib.Path(out)
    problems: list[str] = []
    prov, _, bad = read_copies(d, PROVENANCE, check_provenance)
    problems += bad
    if prov is None and bad:
        problems.append(f"{PROVENANCE}: no intact copy")
    text, _, bad = read_copies(d, STUDY, check_study((prov or {}).get("study_sha256")))
    problems += bad
    if text is None and bad:
        problems.append(f"{STUDY}: no intact copy")
    m, _, bad = read_copies(d, MANIFEST, check_manifest)
    problems += bad
    for name in (MANIFEST, PROVENANCE, STUDY):
        if (d / (name + PREV)).exists() and not (d / name).exists():
            problems.append(f"{name} is missing (its second copy {name + PREV} is there)")
    if m is None:
        try:
            m = read_manifest(d)
        except StoreError as e:
            problems.append(str(e))
            m = None
    n_runs = 0
    if m is not None:
        wrong = runs_disagree(d, m)
        if wrong:
            problems.append(f"{MANIFEST}: the run list of {wrong} disagrees with the file")
        damaged, _ = check_files(d, m)
        runs = sorted({x.run_id for x in damaged})
        for rid in runs[:20]:
            x = next(x for x in damaged if x.run_id == rid)
            problems.append(f"run {rid}: {x.file}: {x.reason}")
        if len(runs) > 20:
            problems.append(f"... and {len(runs) - 20} more damaged run(s)")
        n_runs = len(loose_ids(d, "runs") | manifest_runs(m))
    return problems, n_runs
