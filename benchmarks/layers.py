#!/usr/bin/env python3
"""Instructions per bottleneck packet by simulator layer, in steady state.

Runs a scenario under `valgrind --tool=callgrind` at two simulated durations A and B with
one `aqmlab-bench` binary and reports, per layer, (instructions at B - instructions at A)
/ (bottleneck packets at B - bottleneck packets at A), so start-up and the end-of-run
collection cancel out. A function's own instructions count for the layer of the source
file they come from; code of the Rust standard library inlined into a function (`Option`,
`VecDeque`, comparisons, copies) counts for the layer of that function. The split is as fine as the build's function
boundaries: profile-guided builds inline more across layers (the loop then holds much of
the link's and TCP's library code), so compare layers between plain release builds.

    cargo build --release -p aqmlab-core --bin aqmlab-bench
    python3 benchmarks/layers.py --binary target/release/aqmlab-bench \
        benchmarks/ns2/tcp16_red.toml --durations 20,60 [--functions 15]

Needs valgrind (`callgrind_annotate`). Load-independent. Not part of the test suite.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile

# (layer, pattern on the source path, or on the function for inlined library code)
LAYERS = [
    ("TCP", r"/tcp/|::tcp::"),
    ("qdisc", r"/qdisc/|::qdisc::"),
    ("link", r"/link/|::link::"),
    ("event queue", r"/event\.rs|::event::"),
    ("loop and dispatch", r"/sim/|::sim::|aqmlab_bench::main"),
    ("routing (Net::send)", r"/net\.rs|::net::"),
    ("application", r"/app/|::app::"),
    ("metrics", r"/metrics/|::metrics::"),
    ("packet, time", r"/packet\.rs|/time\.rs|/units\.rs"),
]
LINE = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+(.*)$")


def layer_of(path: str, function: str) -> str:
    key = function if "/rustc/" in path or path.startswith("/rustc") else path
    for name, pat in LAYERS:
        if re.search(pat, key):
            return name
    return "other"


def profile(binary: str, toml_text: str, seconds: int, tmp: pathlib.Path) -> tuple[dict[str, int], dict[str, int], int]:
    text = re.sub(r'(?m)^duration\s*=\s*"[^"]*"', f'duration = "{seconds}s"', toml_text)
    sc = tmp / f"s{seconds}.toml"
    sc.write_text(text)
    out = tmp / f"cg{seconds}.out"
    r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary, str(sc)],
                       capture_output=True, text=True, check=True)
    pkts = json.loads([ln for ln in r.stdout.splitlines() if ln.startswith("{")][-1])["bottleneck_packets"]
    ann = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no", str(out)],
                         capture_output=True, text=True, check=True).stdout
    layers: dict[str, int] = {}
    funcs: dict[str, int] = {}
    for ln in ann.splitlines():
        m = LINE.match(ln)
        if not m or "PROGRAM TOTALS" in ln:
            continue
        n = int(m.group(1).replace(",", ""))
        where = m.group(2)
        path, _, fn = where.partition(":")
        fn = re.sub(r" \[.*\]$", "", fn)
        lay = layer_of(path, fn)
        layers[lay] = layers.get(lay, 0) + n
        funcs[fn] = funcs.get(fn, 0) + n
    return layers, funcs, pkts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario", type=pathlib.Path, help="a scenario TOML with a top-level run.duration line")
    ap.add_argument("--binary", required=True, help="the aqmlab-bench to profile")
    ap.add_argument("--durations", default="20,60", help="A,B simulated seconds (default 20,60)")
    ap.add_argument("--functions", type=int, default=12, help="also list this many functions (default 12)")
    a = ap.parse_args(argv)
    try:
        lo, hi = (int(x) for x in a.durations.split(","))
    except ValueError:
        ap.error(f"--durations: expected two whole seconds A,B with A < B, got {a.durations!r}")
    if not 0 < lo < hi:
        ap.error(f"--durations: expected 0 < A < B, got {a.durations!r}")
    text = a.scenario.read_text()
    if not re.search(r'(?m)^duration\s*=', text):
        ap.error(f"{a.scenario}: no 'duration = ...' line to set")
    with tempfile.TemporaryDirectory() as t:
        tmp = pathlib.Path(t)
        la, fa, pa = profile(a.binary, text, lo, tmp)
        lb, fb, pb = profile(a.binary, text, hi, tmp)
    n = pb - pa
    if n <= 0:
        print(f"no more bottleneck packets at {hi} s than at {lo} s", file=sys.stderr)
        return 1
    rows = sorted(((lb.get(k, 0) - la.get(k, 0)) / n, k) for k in set(la) | set(lb))
    total = sum(v for v, _ in rows)
    print(f"{a.scenario.name}: {n:,} bottleneck packets between {lo} s and {hi} s; {total:,.1f} instructions per packet")
    print(f"{'layer':<22} {'instr/pkt':>10} {'share':>6}")
    for v, k in reversed(rows):
        print(f"{k:<22} {v:>10.1f} {100 * v / total:>5.1f}%")
    if a.functions:
        fr = sorted(((fb.get(k, 0) - fa.get(k, 0)) / n, k) for k in set(fa) | set(fb))
        print(f"\n{'function (own instructions, inlined library code included)':<60} {'instr/pkt':>10}")
        for v, k in list(reversed(fr))[: a.functions]:
            short = re.sub(r"<impl [^>]*?(\w+)>", r"\1", k).replace("aqmlab_core::", "")
            print(f"{short[:60]:<60} {v:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
