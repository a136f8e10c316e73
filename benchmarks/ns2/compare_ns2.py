#!/usr/bin/env python3
"""aqmlab against ns-2.35 on the shared steady-state scenario, side by side in one run.

16 Sack1 flows (aqmlab: `stack = "ns2-sack1"`, the model of ns-2's agents) over RED,
Adaptive RED (`variant = "ns2"`) and DropTail at 10 Mbit/s, 40 ms base RTT: the cases of
`benchmarks/crosscheck/ns2/`, where the two simulators agree on mean queue delay and drop
rate. Each case runs at two durations (default 100 s and 1000 s) in each simulator; the
figures are CPU time (user + sys of the child process, from wait4), never wall time, so
other load on the machine does not enter them. The steady-state rate is the difference of
the two runs: (packets at 1000 s − packets at 100 s) / (CPU at 1000 s − CPU at 100 s),
which removes start-up (ns-2's Tcl initialisation, aqmlab's scenario build).

    python3 benchmarks/ns2/compare_ns2.py                       # 3 cases x 100 s, 1000 s
    python3 benchmarks/ns2/compare_ns2.py --cases red --repeat 3 --json out.json
    python3 benchmarks/ns2/compare_ns2.py --pgo                 # the profile-guided aqmlab-bench
    python3 benchmarks/ns2/compare_ns2.py --callgrind 20,60     # + instructions per bottleneck packet
    .venv/bin/python benchmarks/ns2/compare_ns2.py --write-tcl  # regenerate the .tcl scripts

The ns-2 side runs `benchmarks/ns2/tcp16_CASE.tcl` (`ns SCRIPT OUTDIR DURATION`),
generated from the aqmlab twin `tcp16_CASE.toml` by the ns2 engine's translator
(`aqmlab.ns2.translate`, seed 1: the same flow start times as aqmlab's) with the tracing
cut to what a speed run needs: no per-packet queue traces, a queue monitor on the two
bottleneck links (packets dequeued and dropped) and one sample of every flow's sink
bytes at the end. Bottleneck packets = packets dequeued at `bottleneck_up` and
`bottleneck_down` (data and ACKs), the quantity `aqmlab-bench` counts.

`--callgrind A,B` also runs both under `valgrind --tool=callgrind` at A and B simulated
seconds and reports (Ir(B) − Ir(A)) / (packets(B) − packets(A)): instructions per
bottleneck packet in steady state, and ("of it mem*") the part counted in libc's
memset/memcpy/memmove. Valgrind counts every iteration of their `rep stos`/`rep movs` as
an instruction; ns-2 zeroes each packet's header space with memset, which on the
hardware runs at tens of bytes per cycle, so its total overstates its work: compare the
rest, and compare speed by CPU time. Not part of the test suite.
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
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
from bench import build as build_bench  # noqa: E402  (benchmarks/bench.py: plain or profile-guided)

CASES = ("red", "ared", "droptail")


# ---------------------------------------------------------------------------------------
# the Tcl scripts


def speed_tcl(script: str, bottlenecks: dict[int, tuple[str, str]]) -> str:
    """The ns2 engine's script with its measurement replaced by a speed run's:
    `bottlenecks` maps a link index j to the Tcl node variables of its ends."""
    out: list[str] = []
    for line in script.splitlines():
        if re.match(r"set qf\(\d+\) \[open ", line) or line.startswith("$ns trace-queue "):
            continue  # per-packet queue traces: not in a speed run
        if re.match(r'\$ns at [0-9.e+-]+ "sample ', line):
            continue  # samples every bin: one at the end instead
        if line.startswith("$ns at ") and '"finish"' in line:
            out.append('$ns at $DUR "sample $DUR"')
            out.append('$ns at [expr {$DUR + 1e-6}] "finish"')
            continue
        if line == "set OUT [lindex $argv 0]":
            out += [line, "set DUR [lindex $argv 1]"]
            continue
        m = re.match(r"\$ns queue-limit (\$n\(\d+\)) (\$n\(\d+\)) \d+$", line)
        out.append(line)
        if m:
            for j, ends in bottlenecks.items():
                if ends == (m.group(1), m.group(2)):
                    # a QueueMonitor counts arrivals, departures and drops; its queue-length
                    # sampler writes once per DUR (to /dev/null)
                    out.append(f"set qm({j}) [$ns monitor-queue {ends[0]} {ends[1]} [open /dev/null w] $DUR]")
        if line == "    global sf src dst":
            out[-1] = "    global sf src dst qm"
            out.append(
                '    foreach j [lsort -integer [array names qm]] { puts $sf "Q $j [$qm($j) set pdepartures_] [$qm($j) set pdrops_]" }'
            )
    return "\n".join(out) + "\n"


def write_tcl(case: str) -> pathlib.Path:
    from aqmlab.ns2.translate import translate
    from aqmlab.scenario import load_scenario

    sc = load_scenario(HERE / f"tcp16_{case}.toml")
    plan = sc.validate(seed=1, spread=True)
    tr = translate(sc.to_dict(), plan, seed=1)
    idx = {n["name"]: i for i, n in enumerate(plan["nodes"])}
    bn = {j: (f"$n({idx[q.src]})", f"$n({idx[q.dst]})") for j, q in enumerate(tr.queues) if q.name.startswith("bottleneck")}
    head = (
        f"# ns-2.35 speed twin of benchmarks/ns2/tcp16_{case}.toml, generated by\n"
        "# `benchmarks/ns2/compare_ns2.py --write-tcl` (aqmlab's ns2 engine, seed 1, speed-run tracing).\n"
        f"# Run: ns tcp16_{case}.tcl OUTDIR DURATION_SECONDS  (writes OUTDIR/flows.tr)\n"
    )
    path = HERE / f"tcp16_{case}.tcl"
    path.write_text(head + speed_tcl(tr.script, bn))
    return path


# ---------------------------------------------------------------------------------------
# running


def _with_duration(toml: pathlib.Path, seconds: float, tmp: pathlib.Path) -> pathlib.Path:
    text, n = re.subn(r'(?m)^duration = "[^"]*"', f'duration = "{seconds:g}s"', toml.read_text())
    if n != 1:
        raise SystemExit(f"{toml}: expected one `duration = ...` line under [run]")
    out = tmp / f"{toml.stem}_{seconds:g}s.toml"
    out.write_text(text)
    return out


def _timed(cmd: list[str], cwd: pathlib.Path | None = None) -> tuple[str, str, float, float]:
    """(stdout, stderr, CPU seconds user + sys, peak RSS MiB) of one child process."""
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        p = subprocess.Popen(cmd, stdout=fo, stderr=fe, text=True, cwd=cwd)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read(), fe.read()
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}: {err.strip()[-400:]}")
    return out, err, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0


def _ns2_packets(outdir: pathlib.Path) -> tuple[int, int, int]:
    """(bottleneck packets dequeued, bottleneck drops, sink bytes of all flows) from flows.tr."""
    pk = dr = by = 0
    for line in (outdir / "flows.tr").read_text().splitlines():
        f = line.split()
        if f[0] == "Q":
            pk += int(f[2])
            dr += int(f[3])
        elif f[0] == "F":
            by += int(f[3])
    return pk, dr, by


def _callgrind(cmd: list[str], tmp: pathlib.Path, tag: str) -> tuple[str, dict]:
    """Runs `cmd` under callgrind: (its stdout, {"instructions": total, "string_ops": the
    part counted in libc's memset/memcpy/memmove}). Valgrind counts each iteration of the
    `rep stos`/`rep movs` those functions use for large blocks as one instruction, so a
    program that zeroes big buffers (ns-2 clears every packet's header space) shows far
    more instructions than the hardware spends cycles on: `string_ops` lets the rest be
    compared."""
    out_file = tmp / f"{tag}.callgrind"
    out, err, _, _ = _timed(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}", *cmd])
    total = _collected(err)
    ann = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", str(out_file)],
                         capture_output=True, text=True, check=True).stdout
    string_ops = 0
    for line in ann.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+\S*(?:memset|memcpy|memmove)\S*:", line)
        if m and "=>" not in line:
            string_ops += int(m.group(1).replace(",", ""))
    out_file.unlink()
    return out, {"instructions": total, "string_ops": string_ops}


def run_ns2(case: str, seconds: float, tmp: pathlib.Path, callgrind: bool = False) -> dict:
    outdir = tmp / f"ns2_{case}_{seconds:g}"
    outdir.mkdir(exist_ok=True)
    cmd = ["ns", str(HERE / f"tcp16_{case}.tcl"), str(outdir), f"{seconds:g}"]
    row: dict = {}
    if callgrind:
        row.update(_callgrind(cmd, tmp, f"ns2_{case}_{seconds:g}")[1])
    else:
        _, _, cpu, rss = _timed(cmd)
        row.update(cpu_seconds=cpu, peak_rss_mib=rss)
    pk, dr, by = _ns2_packets(outdir)
    row.update(packets=pk, drops=dr, sink_bytes=by)
    return row


def run_aqmlab(binary: pathlib.Path, case: str, seconds: float, tmp: pathlib.Path, callgrind: bool = False) -> dict:
    toml = _with_duration(HERE / f"tcp16_{case}.toml", seconds, tmp)
    cmd = [str(binary), str(toml), "1"]
    row: dict = {}
    if callgrind:
        out, counts = _callgrind(cmd, tmp, f"aqmlab_{case}_{seconds:g}")
        row.update(counts)
    else:
        out, _, cpu, rss = _timed(cmd)
        row.update(cpu_seconds=cpu, peak_rss_mib=rss)
    j = json.loads(out.strip().splitlines()[-1])
    row.update(packets=int(j["bottleneck_packets"]), events=int(j["events"]))
    return row


def _collected(stderr: str) -> int:
    m = re.search(r"Collected\s*:\s*(\d+)", stderr)
    if not m:
        raise SystemExit(f"no callgrind total in: {stderr[-300:]}")
    return int(m.group(1))


def _load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated subset of {','.join(CASES)}")
    ap.add_argument("--durations", default="100,1000", help="two simulated durations in seconds (short,long)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per point; the least CPU time of them is kept")
    ap.add_argument("--pgo", action="store_true", help="time the profile-guided aqmlab-bench (scripts/pgo.sh bench)")
    ap.add_argument("--binary", type=pathlib.Path, help="time this aqmlab-bench instead of building one")
    ap.add_argument("--callgrind", metavar="A,B", help="also count instructions under callgrind at A and B simulated seconds")
    ap.add_argument("--json", type=pathlib.Path, help="also write the rows to this JSON file")
    ap.add_argument("--write-tcl", action="store_true", help="regenerate benchmarks/ns2/tcp16_*.tcl from the twins and exit")
    a = ap.parse_args(argv)
    cases = [c.strip() for c in a.cases.split(",") if c.strip()]
    for c in cases:
        if c not in CASES:
            ap.error(f"--cases: unknown case {c!r} (allowed: {', '.join(CASES)})")
    if a.write_tcl:
        for c in cases:
            print(write_tcl(c))
        return 0
    try:
        short, long_ = (float(x) for x in a.durations.split(","))
    except ValueError:
        ap.error("--durations: two numbers of seconds, e.g. 100,1000")
    if not 0 < short < long_:
        ap.error("--durations: 0 < short < long")
    if shutil.which("ns") is None:
        raise SystemExit("ns (ns-2.35) is not on PATH: apt-get install ns2")
    if a.binary is not None and not a.binary.is_file():
        ap.error(f"--binary: no such file {a.binary}")
    binary = a.binary or build_bench(a.pgo)
    rows = []
    t_start, load_start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), _load()
    with tempfile.TemporaryDirectory(prefix="aqmlab-ns2cmp-") as td:
        tmp = pathlib.Path(td)
        for c in cases:
            row: dict = {"case": c, "durations": [short, long_]}
            for sim, fn in (("ns2", lambda d: run_ns2(c, d, tmp)), ("aqmlab", lambda d: run_aqmlab(binary, c, d, tmp))):
                pts = []
                for d in (short, long_):
                    runs = [fn(d) for _ in range(max(1, a.repeat))]
                    pts.append(min(runs, key=lambda r: r["cpu_seconds"]))
                dp = pts[1]["packets"] - pts[0]["packets"]
                dc = pts[1]["cpu_seconds"] - pts[0]["cpu_seconds"]
                row[sim] = {"short": pts[0], "long": pts[1], "steady_packets_per_cpu_second": dp / dc if dc > 0 else float("nan")}
                print(
                    f"  {c} {sim}: {short:g} s {pts[0]['cpu_seconds']:.2f} CPU-s, {long_:g} s {pts[1]['cpu_seconds']:.2f} CPU-s",
                    file=sys.stderr,
                )
            row["ratio_short"] = (row["ns2"]["short"]["cpu_seconds"] / row["ns2"]["short"]["packets"]) / (
                row["aqmlab"]["short"]["cpu_seconds"] / row["aqmlab"]["short"]["packets"]
            )
            row["ratio_long"] = (row["ns2"]["long"]["cpu_seconds"] / row["ns2"]["long"]["packets"]) / (
                row["aqmlab"]["long"]["cpu_seconds"] / row["aqmlab"]["long"]["packets"]
            )
            row["ratio_steady"] = row["aqmlab"]["steady_packets_per_cpu_second"] / row["ns2"]["steady_packets_per_cpu_second"]
            if a.callgrind:
                ca, cb = (float(x) for x in a.callgrind.split(","))
                for sim, fn2 in (
                    ("ns2", lambda d: run_ns2(c, d, tmp, callgrind=True)),
                    ("aqmlab", lambda d: run_aqmlab(binary, c, d, tmp, callgrind=True)),
                ):
                    ra, rb = fn2(ca), fn2(cb)
                    dp = rb["packets"] - ra["packets"]
                    row[sim]["instructions_per_packet"] = (rb["instructions"] - ra["instructions"]) / dp
                    row[sim]["string_op_instructions_per_packet"] = (rb["string_ops"] - ra["string_ops"]) / dp
                    row[sim]["callgrind"] = {"short": ra, "long": rb}
            rows.append(row)
    load_end = _load()
    print(f"{t_start}, load average at start {load_start}, at end {load_end}; aqmlab-bench: {binary}")
    print("ratios are ns-2 CPU-s per bottleneck packet / aqmlab CPU-s per bottleneck packet (CPU = user + sys of the child)")
    hdr = (f"{'case':9} {'sim':7} {'pkts ' + format(short, 'g') + ' s':>14} {'CPU s':>7} {'pkts ' + format(long_, 'g') + ' s':>14} "
           f"{'CPU s':>8} {'steady pkt/CPU-s':>17} {'drops/pkt':>9} {'Ir/pkt':>8} {'of it mem*':>10}")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        for sim in ("ns2", "aqmlab"):
            s = r[sim]
            drops = s["long"].get("drops")
            ir = s.get("instructions_per_packet")
            so = s.get("string_op_instructions_per_packet")
            print(
                f"{r['case']:9} {sim:7} {s['short']['packets']:>14,} {s['short']['cpu_seconds']:>7.2f} {s['long']['packets']:>14,} "
                f"{s['long']['cpu_seconds']:>8.2f} "
                f"{s['steady_packets_per_cpu_second']:>17,.0f} {'' if drops is None else format(drops / s['long']['packets'], '.4f'):>9} "
                f"{'' if ir is None else format(ir, ',.0f'):>8} {'' if so is None else format(so, ',.0f'):>10}"
            )
        print(
            f"{r['case']:9} ratio   {format(short, 'g')} s x{r['ratio_short']:.2f}   {format(long_, 'g')} s x{r['ratio_long']:.2f}   "
            f"steady state x{r['ratio_steady']:.2f}"
        )
    if a.json:
        a.json.write_text(
            json.dumps({"date": t_start, "load_start": load_start, "load_end": load_end, "binary": str(binary), "rows": rows}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
