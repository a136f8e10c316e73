#!/usr/bin/env python3
"""Peak memory and time of building a study's report from a large store.

    .venv/bin/python benchmarks/synth_residential.py /tmp/res          # the store (see there)
    .venv/bin/python benchmarks/report_memory.py /tmp/res [--json benchmarks/results/report_memory.json]
    .venv/bin/python benchmarks/report_memory.py /tmp/res --pythonpath OLD/python --label before   # another checkout
    .venv/bin/python benchmarks/report_memory.py --compare OUT_A OUT_B  # identical outputs?

Each measurement runs in a fresh process under ``/usr/bin/time -v`` and records its
maximum resident set size and wall time:

- ``report``: ``aqmlab report STORE --out OUT/report.html`` (figures, tables, findings, page);
- ``reproduce``: what ``aqmlab reproduce`` does after its runs: print the headline tables
  and findings, then write the report (``--modes`` chooses).

``--compare A B`` checks that two output folders hold identical tables (CSV and Markdown
bytes), identical findings (the findings section of the page) and identical figures
(PNG pixels). Not part of the test suite.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import zlib

ROOT = pathlib.Path(__file__).resolve().parent.parent

REPRODUCE_TAIL = """
import pathlib, sys
from aqmlab import cli, report
from aqmlab.study import parse_study
store, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
prov = __import__("json").loads((store / "provenance.json").read_text())
study = parse_study((store / "study.toml").read_text(), quick=bool(prov.get("quick")))
cli._print_numbers(store, study)
report.write_report(store, study, out / "report.html")
"""


def measure(cmd: list[str], env: dict) -> dict:
    r = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", r.stderr).group(1)
    parts = [float(x) for x in wall.split(":")]
    secs = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
    user = float(re.search(r"User time \(seconds\): ([\d.]+)", r.stderr).group(1))
    return {"peak_rss_mib": round(rss / 1024, 1), "wall_seconds": round(secs, 1), "user_seconds": user}


def png_pixels(path: pathlib.Path) -> bytes:
    data = path.read_bytes()
    pos, idat, head = 8, b"", b""
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            head = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    return head + zlib.decompress(idat)


def compare(a: pathlib.Path, b: pathlib.Path) -> list[str]:
    diffs = []
    fa, fb = a / "report-files", b / "report-files"
    for sub, ext in (("tables", ".csv"), ("tables", ".md"), ("figures", ".png")):
        na = sorted(p.name for p in (fa / sub).glob(f"*{ext}"))
        nb = sorted(p.name for p in (fb / sub).glob(f"*{ext}"))
        if na != nb:
            diffs.append(f"{sub}/*{ext}: different file sets")
            continue
        for n in na:
            x, y = fa / sub / n, fb / sub / n
            same = png_pixels(x) == png_pixels(y) if ext == ".png" else x.read_bytes() == y.read_bytes()
            if not same:
                diffs.append(f"{sub}/{n} differs")
    fa_html = (a / "report.html").read_text()
    fb_html = (b / "report.html").read_text()

    def findings(h: str) -> str:
        return h[h.index('id="findings"'):h.index('id="provenance"')]

    if findings(fa_html) != findings(fb_html):
        diffs.append("findings differ")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("store", type=pathlib.Path, nargs="?")
    ap.add_argument("--out", type=pathlib.Path, default=None, help="output folder (default: STORE.report-LABEL)")
    ap.add_argument("--pythonpath", default=None, help="PYTHONPATH for another checkout's python/ folder")
    ap.add_argument("--label", default="this checkout")
    ap.add_argument("--modes", default="report,reproduce")
    ap.add_argument("--json", type=pathlib.Path, default=None, help="append the results to this JSON file")
    ap.add_argument("--compare", nargs=2, type=pathlib.Path, metavar=("OUT_A", "OUT_B"))
    a = ap.parse_args()
    if a.compare:
        d = compare(*a.compare)
        print("identical tables, findings and figures" if not d else "\n".join(d))
        return 1 if d else 0
    env = dict(os.environ)
    env["MPLBACKEND"] = "Agg"
    if a.pythonpath:
        env["PYTHONPATH"] = a.pythonpath
    out = a.out or a.store.with_name(a.store.name + ".report-" + re.sub(r"\W+", "_", a.label))
    rows = []
    for mode in a.modes.split(","):
        o = out / mode
        shutil.rmtree(o, ignore_errors=True)
        o.mkdir(parents=True)
        if mode == "report":
            cmd = [sys.executable, "-m", "aqmlab", "report", str(a.store), "--out", str(o / "report.html")]
        else:
            cmd = [sys.executable, "-c", REPRODUCE_TAIL, str(a.store), str(o)]
        m = measure(cmd, env)
        files = len(list(a.store.glob("*/*.parquet")))
        row = {"label": a.label, "mode": mode, "store": str(a.store), "store_files": files, **m, "out": str(o)}
        rows.append(row)
        print(f"{a.label:>14} {mode:>9}: peak RSS {m['peak_rss_mib']:8.1f} MiB, wall {m['wall_seconds']:6.1f} s "
              f"(user {m['user_seconds']:.1f} s), store of {files} parquet files")
    if a.json:
        old = json.loads(a.json.read_text()) if a.json.exists() else []
        a.json.write_text(json.dumps(old + rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
