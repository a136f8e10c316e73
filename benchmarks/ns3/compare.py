#!/usr/bin/env python3
"""Runs aqmlab and ns-3 on the headline scenario (16 NewReno flows, CoDel, 10 Mbit/s,
10 ms RTT, 100 s) in one invocation and prints CPU times (user + sys of each child
process), the ratio of bottleneck packets per CPU-second and the two simulators'
bottleneck utilisation and mean/p99 CoDel sojourn side by side. By default both run the
same TCP (`--stack ns3`: aqmlab's `ns3` profile with ns-3's framing and device queue, as
`--sojourn` below, against TcpNewReno + TcpClassicRecovery); `--stack own` runs aqmlab's
`tcp16_codel.toml` against the program's defaults.

    benchmarks/ns3/build-release.sh                         # once (or setup.sh && build.sh: the wheel)
    python3 benchmarks/ns3/compare.py [--flows 16] [--duration 100] [--repeat 3] [--binary BENCH] [--json out.json]

    python3 benchmarks/ns3/compare.py --sojourn [--flows 1,4,16,64] [--aqm codel,pie,fq_codel,fq_codel-ns3,fq_pie,fq_pie-ns3,fifo,ared]

`--sojourn` is the fidelity check: both simulators run the same TCP (aqmlab's `ns3` stack
profile = ns-3.44 TcpNewReno with TcpClassicRecovery and ns-3's socket defaults; the ns-3
program is told to use TcpClassicRecovery), the same framing (2-byte PPP header), the same
device queue (ns-3's 1-packet DropTailQueue holds one packet besides the one being sent:
aqmlab device_queue = 2) and
receive buffer (4 MiB, as dumbbell.cc sets), CoDel (Linux/RFC 8289 defaults) or PIE
(RFC 8033 defaults, as ns-3's PieQueueDisc), and prints mean / p99 sojourn, drops and congestion events per second per flow count
with the aqmlab / ns-3 ratio, over seeds 1..N (default 5) with 95 % confidence intervals.

    python3 benchmarks/ns3/compare.py --cc bbr [--flows-list 1,4] [--aqm fifo,codel]

`--cc bbr` is the BBR cross-check: aqmlab's `bbr` (Linux tcp_bbr) against ns-3's `TcpBbr`
(paced) on the same dumbbell with a 20 ms bottleneck delay (≈ 40 ms base RTT, BDP 33
packets) and a 1000-packet FIFO or CoDel; it prints utilisation and mean queue (sojourn)
of both with the aqmlab / ns-3 ratio.

Not part of CI (ns-3 takes ~10 s wall per 100 simulated seconds here).
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
from bench import build as build_bench  # noqa: E402  (benchmarks/bench.py: plain or profile-guided)

SCEN = ROOT / "benchmarks" / "scenarios" / "tcp16_codel.toml"
#: ns-3 results of `--sojourn` by command line (the program is deterministic per seed)
CACHE = HERE / "build" / "sojourn-cache.json"


def _is_release(ns3: pathlib.Path | None) -> bool:
    """The program was built by build-release.sh against ns-3's release build."""
    return ns3 is not None and ns3.name.endswith("-release")


def _ns3_env(ns3: pathlib.Path | None = None) -> dict:
    """The environment for the ns-3 program `ns3` (default: one built against the wheel):
    the wheel's lib64 on LD_LIBRARY_PATH, so a binary built in another checkout (whose
    rpath points there) still finds libns3.44-*. Not for a release-build program: its
    rpath names its own libraries of the same names, and LD_LIBRARY_PATH would win."""
    env = dict(os.environ)
    if _is_release(ns3):
        return env
    libs = sorted(HERE.glob(".venv/lib/python3*/site-packages/ns3/lib64"))
    if libs:
        env["LD_LIBRARY_PATH"] = os.pathsep.join([str(libs[0]), *filter(None, [env.get("LD_LIBRARY_PATH")])])
    return env


# The aqmlab side of `--sojourn`: the ns-3 program's setup in aqmlab's words.
FIDELITY = """
[run]
name = "ns3-fidelity"
duration = "{duration}s"
seed = {seed}
warmup = "{warmup}s"

[dumbbell]
pairs = {flows}
rate = "10Mbit"
delay = "5ms"
access_delay = "0.1ms"
access_rate = "1Gbit"
overhead = 2                 # ns-3 PointToPointNetDevice: 2-byte PPP header
device_queue = 2             # ns-3 DropTailQueue 1p: one packet waits besides the one being sent
qdisc = {qdisc}

[tcp]
stack = "ns3"                # ns-3.44 TcpNewReno + TcpClassicRecovery, ns-3 socket defaults
mss = 1448                   # dumbbell.cc SegmentSize
rcv_window = "4MiB"          # dumbbell.cc RcvBufSize 1 << 22

[[flow]]
kind = "bulk"
count = {flows}
from = "client{{i}}"
to = "server{{i}}"
start_spread = "1s"
"""
# The aqmlab side of `--cc bbr`: Linux defaults apart from the program's segment size,
# receive buffer and PPP framing.
BBR = """
[run]
name = "ns3-bbr"
duration = "{duration}s"
seed = {seed}
warmup = "10s"

[dumbbell]
pairs = {flows}
rate = "10Mbit"
delay = "20ms"
access_delay = "0.1ms"
access_rate = "1Gbit"
overhead = 2
qdisc = {qdisc}

[tcp]
cc = "bbr"
mss = 1448
rcv_window = "4MiB"

[[flow]]
kind = "bulk"
count = {flows}
from = "client{{i}}"
to = "server{{i}}"
start_spread = "1s"
"""
QDISCS = {
    "fifo": '{ kind = "fifo", limit = 1000 }',
    "codel": '{ kind = "codel", limit = 1000 }',
    # derandomize = false: ns-3 PieQueueDisc's default UseDerandomization = false (RFC 8033 §5.4 is optional)
    "pie": '{ kind = "pie", variant = "rfc8033", derandomize = false, limit = 1000 }',
    # ns-2's RED as Adaptive RED (aqmlab variant ns2; ns-3's RedQueueDisc is a port of ns-2's)
    "ared": '{ kind = "ared", variant = "ns2", min = 30, max = 90, limit = 1000 }',
    # ns-3 FqCoDelQueueDisc: 1024 buckets, drop batch 64, quantum = device MTU 1500 (the
    # aqmlab default quantum, MTU + the 2-byte PPP overhead in frame bytes, is the same
    # one full packet); the hash salts differ, so do the rare bucket collisions.
    # "fq_codel" is Linux's rule for a flow's last packet (aqmlab's default), against
    # ns-3's; "fq_codel-ns3" takes ns-3's per-flow MinBytes rule on the aqmlab side.
    "fq_codel": '{ kind = "fq_codel", limit = 1000 }',
    "fq_codel-ns3": '{ kind = "fq_codel", limit = 1000, backlog_rule = "ns3" }',
    # Linux sch_fq_pie defaults on both sides (ns-3 FqPieQueueDisc: 15 ms / 15 ms)
    "fq_pie": '{ kind = "fq_pie", limit = 1000 }',
    # ... with ns-3's packet-count safeguard (a flow with at most two packets is spared)
    "fq_pie-ns3": '{ kind = "fq_pie", limit = 1000, backlog_rule = "ns3" }',
}
#: the ns-3 program's --aqm for a QDISCS key (default: the key itself)
NS3_AQM = {"fq_codel-ns3": "fq_codel", "fq_pie-ns3": "fq_pie"}
#: ns-3 attribute overrides per QDISCS key: Linux's fq_pie always de-randomises
#: (pie_drop_early's accu_prob), ns-3's FqPieQueueDisc only when told to
NS3_EXTRA = {k: ["--ns3::FqPieQueueDisc::UseDerandomization=true"] for k in ("fq_pie", "fq_pie-ns3")}


# the aqmlab binary timed (set in main: the plain release build, or with --pgo the
# profile-guided one)
BENCH = ROOT / "target" / "release" / "aqmlab-bench"


def _run_cpu(cmd: list[str], env: dict | None = None) -> tuple[list[str], float]:
    """Runs a child to completion: its stdout lines and its CPU time (user + sys, from
    wait4: unlike wall time it does not grow with other load on a shared machine)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out, err = proc.communicate()
    # the child is reaped by communicate(); its usage is in the children's totals
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {err.strip()[-500:]}")
    return out.strip().splitlines(), _children_cpu()


_CPU_SEEN = 0.0


def _children_cpu() -> float:
    """CPU seconds of the children reaped since the previous call."""
    global _CPU_SEEN
    r = os.times()
    total = r.children_user + r.children_system
    d, _CPU_SEEN = total - _CPU_SEEN, total
    return d


def _bench_file(path: str) -> dict:
    """One aqmlab-bench run of a scenario file: its speed line and its queue summary, and
    the process's CPU time (`cpu_seconds`)."""
    _children_cpu()
    out, cpu = _run_cpu([str(BENCH), path, "--summary"])
    return {**json.loads(out[0]), **json.loads(out[-1]), "cpu_seconds": cpu}


def _bench(text: str) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(text)
    return _bench_file(f.name)


def _t95(n: int) -> float:
    """Two-sided 95 % Student t quantile for n - 1 degrees of freedom (n = 2..30)."""
    table = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
             2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
             2.060, 2.056, 2.052, 2.048, 2.045]
    return table[min(n, 30) - 2] if n >= 2 else float("nan")


def _mean_ci(xs: list[float]) -> tuple[float, float]:
    """Mean and half-width of its 95 % t confidence interval (nan with one value)."""
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, float("nan")
    sd = (sum((x - m) ** 2 for x in xs) / (n - 1)) ** 0.5
    return m, _t95(n) * sd / n ** 0.5


def sojourn(a, ns3: pathlib.Path) -> int:
    """Mean sojourn of each simulator over seeds 1..N with its 95 % CI, and the ratio of the
    means with a 95 % CI from the two relative standard errors (delta method; the seeds of
    the two simulators are independent draws, not pairs)."""
    rows = []
    cache = json.loads(CACHE.read_text()) if CACHE.exists() and not a.no_cache else {}
    print(
        "mean / p99 sojourn (ms), the up qdisc's drops and the senders' congestion events (fast recoveries + RTOs) per second, "
        f"{a.duration:g} s runs x {a.seeds} seeds, 10 s warm-up, aqmlab stack = \"ns3\" vs ns-3.44 "
        f"TcpNewReno + TcpClassicRecovery; ± = 95 % CI over seeds\n"
    )
    print(f"{'aqm':6} {'flows':>5} {'aqmlab mean':>14} {'ns-3 mean':>14} {'ratio':>12} {'aqmlab p99':>11} {'ns-3 p99':>9} "
          f"{'drops/s':>8} {'ns-3':>8} {'events/s':>8} {'ns-3':>8}")
    for aqm in a.aqm.split(","):
        for n in [int(x) for x in a.flows_list.split(",")]:
            aqs, nss = [], []
            for seed in range(1, a.seeds + 1):
                full = _bench(FIDELITY.format(duration=f"{a.duration:g}", warmup=10, flows=n, qdisc=QDISCS[aqm], seed=seed))
                # the senders' congestion events after the warm-up: the whole run's minus
                # those of the same seed's first 10 s (the same trajectory up to there)
                first = _bench(FIDELITY.format(duration="10", warmup=0, flows=n, qdisc=QDISCS[aqm], seed=seed))
                span = a.duration - 10
                full["events_per_second"] = sum(full[k] - first[k] for k in ("fast_recoveries", "rtos")) / span
                aqs.append(full)
                args = [f"--flows={n}", f"--duration={a.duration:g}", "--warmup=10", f"--aqm={NS3_AQM.get(aqm, aqm)}",
                        "--recovery=classic", f"--seed={seed}", *NS3_EXTRA.get(aqm, [])]
                key = " ".join(args)
                # ns-3's runs are deterministic per seed: reuse them (entries cached before
                # drops and congestion events were printed are run again)
                if "recoveries_per_second" not in cache.get(key, {}):
                    out = subprocess.run([str(ns3), *args], capture_output=True, text=True, check=True,
                                         env=_ns3_env(ns3)).stdout.strip().splitlines()
                    cache[key] = json.loads(out[-1])
                    CACHE.write_text(json.dumps(cache, indent=1))
                nss.append(cache[key])
            ma, ca = _mean_ci([r["sojourn_mean"] * 1e3 for r in aqs])
            mn, cn = _mean_ci([r["sojourn_mean"] * 1e3 for r in nss])
            pa, _ = _mean_ci([r["sojourn_p99"] * 1e3 for r in aqs])
            pn, _ = _mean_ci([r["sojourn_p99"] * 1e3 for r in nss])
            da, _ = _mean_ci([r["drops_per_second"] for r in aqs])
            dn, _ = _mean_ci([r["drops_per_second"] for r in nss])
            ea, _ = _mean_ci([r["events_per_second"] for r in aqs])
            en, _ = _mean_ci([r["recoveries_per_second"] + r["rtos_per_second"] for r in nss])
            r = ma / mn if mn else float("nan")
            # half-widths -> relative standard errors -> CI of the ratio (first order)
            rel = ((ca / ma) ** 2 + (cn / mn) ** 2) ** 0.5 if mn and ma else float("nan")
            rows.append({"aqm": aqm, "flows": n, "aqmlab": aqs, "ns3": nss, "ratio": r, "ratio_ci95": r * rel,
                         "aqmlab_mean_ms": ma, "aqmlab_ci95_ms": ca, "ns3_mean_ms": mn, "ns3_ci95_ms": cn,
                         "aqmlab_drops_per_s": da, "ns3_drops_per_s": dn,
                         "aqmlab_cong_events_per_s": ea, "ns3_cong_events_per_s": en})
            print(f"{aqm:6} {n:>5} {ma:>7.2f} ± {ca:<4.2f} {mn:>7.2f} ± {cn:<4.2f} {r:>5.2f} ± {r * rel:<4.2f} "
                  f"{pa:>11.2f} {pn:>9.2f} {da:>8.2f} {dn:>8.2f} {ea:>8.2f} {en:>8.2f}", flush=True)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2))
    return 0


def bbr(a, ns3: pathlib.Path) -> int:
    rows = []
    print(f"BBR: aqmlab bbr vs ns-3.44 TcpBbr, 10 Mbit/s, 40 ms RTT, 1000-packet queue, {a.duration:g} s runs x "
          f"{a.seeds} seeds, 10 s warm-up\n")
    print(f"{'aqm':6} {'flows':>5} {'util aqmlab':>11} {'util ns-3':>10} {'ratio':>6} "
          f"{'queue aqmlab':>13} {'queue ns-3':>11} {'ratio':>6}   (mean sojourn, ms)")
    keys = ("utilization", "sojourn_mean", "sojourn_p99")
    for aqm in (a.aqm if a.aqm != "codel,pie" else "fifo,codel").split(","):
        for n in [int(x) for x in (a.flows_list if a.flows_list != "1,4,16,64" else "1,4").split(",")]:
            aqs, nss = [], []
            for seed in range(1, a.seeds + 1):
                aqs.append(_bench(BBR.format(duration=f"{a.duration:g}", flows=n, qdisc=QDISCS[aqm], seed=seed)))
                out = subprocess.run([str(ns3), f"--flows={n}", f"--duration={a.duration:g}", "--warmup=10",
                                      f"--aqm={NS3_AQM.get(aqm, aqm)}", "--cc=TcpBbr", "--recovery=prr", "--delay=20ms",
                                      f"--seed={seed}"],
                                     capture_output=True, text=True, check=True, env=_ns3_env(ns3)).stdout.strip().splitlines()
                nss.append(json.loads(out[-1]))
            aq = {k: sum(r[k] for r in aqs) / len(aqs) for k in keys}
            ns = {k: sum(r[k] for r in nss) / len(nss) for k in keys}
            ru = aq["utilization"] / ns["utilization"]
            rq = aq["sojourn_mean"] / ns["sojourn_mean"] if ns["sojourn_mean"] else float("nan")
            rows.append({"aqm": aqm, "flows": n, "aqmlab": aqs, "ns3": nss, "util_ratio": ru, "queue_ratio": rq})
            print(f"{aqm:6} {n:>5} {aq['utilization']:>11.3f} {ns['utilization']:>10.3f} {ru:>6.2f} "
                  f"{aq['sojourn_mean'] * 1e3:>13.2f} {ns['sojourn_mean'] * 1e3:>11.2f} {rq:>6.2f}", flush=True)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flows", type=int, default=16)
    ap.add_argument("--duration", type=float, default=100.0)
    ap.add_argument("--json", type=pathlib.Path)
    ap.add_argument(
        "--pgo", action="store_true", help="time aqmlab's profile-guided build (scripts/pgo.sh bench), as setup.sh builds the extension"
    )
    ap.add_argument(
        "--repeat", type=int, default=1, help="headline: run both simulators N times (alternating) and compare each one's fastest run"
    )
    ap.add_argument("--sojourn", action="store_true", help="fidelity table: CoDel and PIE sojourn vs ns-3 with the ns3 stack profile")
    ap.add_argument("--flows-list", default="1,4,16,64", help="flow counts for --sojourn")
    ap.add_argument("--aqm", default="codel,pie", help="qdiscs for --sojourn")
    ap.add_argument("--seeds", type=int, default=5, help="runs per point for --sojourn (seeds 1..N; mean ± 95 %% CI)")
    ap.add_argument("--no-cache", action="store_true", help="rerun ns-3 even if build/sojourn-cache.json has the run")
    ap.add_argument("--ns3", choices=["auto", "release", "wheel"], default="auto",
                    help="which ns-3 build to run: release (build-release.sh: -O3, asserts and logging compiled out), "
                    "wheel (the PyPI wheel of setup.sh/build.sh: asserts and logging compiled in), auto (release if built)")
    ap.add_argument("--stack", choices=["ns3", "own"], default="ns3",
                    help="headline TCP: ns3 = the same TCP on both sides (aqmlab stack = \"ns3\" with ns-3's framing, "
                    "ns-3 TcpClassicRecovery), own = each side's default (aqmlab's tcp16_codel.toml)")
    ap.add_argument("--binary", type=pathlib.Path, help="time this aqmlab-bench instead of building one")
    ap.add_argument("--cc", choices=["bbr"], help="congestion-control cross-check: aqmlab bbr vs ns-3 TcpBbr "
                    "(default --flows-list 1,4, --aqm fifo,codel)")
    a = ap.parse_args(argv)
    if a.repeat < 1:
        ap.error(f"--repeat must be at least 1 (got {a.repeat})")
    if a.duration <= 10:
        ap.error(f"--duration must be longer than the 10 s warm-up every mode uses (got {a.duration:g})")
    release, wheel = HERE / "build" / "ns3-dumbbell-release", HERE / "build" / "ns3-dumbbell"
    ns3 = release if a.ns3 == "release" or (a.ns3 == "auto" and release.exists()) else wheel
    if not ns3.exists():
        how = "benchmarks/ns3/build-release.sh" if ns3 == release else "benchmarks/ns3/setup.sh && benchmarks/ns3/build.sh"
        raise SystemExit(f"build the ns-3 program first: {how}")
    global BENCH
    if a.binary is not None and not a.binary.is_file():
        ap.error(f"--binary: no such file {a.binary}")
    BENCH = a.binary or build_bench(a.pgo)
    if a.sojourn:
        return sojourn(a, ns3)
    if a.cc == "bbr":
        return bbr(a, ns3)
    if a.stack == "ns3":
        # the same TCP on both sides: aqmlab's ns3 profile against TcpNewReno with
        # TcpClassicRecovery, ns-3's framing and device queue (as --sojourn)
        text = FIDELITY.format(duration=f"{a.duration:g}", warmup=10, flows=a.flows, qdisc=QDISCS["codel"], seed=1)
        ns3_args = ["--recovery=classic", "--seed=1"]
    else:
        text = SCEN.read_text().replace('duration = "100s"', f'duration = "{a.duration:g}s"')
        text = text.replace("pairs = 16", f"pairs = {a.flows}").replace("count = 16", f"count = {a.flows}")
        ns3_args = []
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(text)
    # --repeat N: both simulators N times, alternating, each one's fastest run kept (on a
    # shared machine other load only ever slows a run down; a single run's ratio is noise)
    aq: dict = {}
    ns: dict = {}
    for _ in range(a.repeat):
        run = _bench_file(f.name)
        if not aq or run["cpu_seconds"] < aq["cpu_seconds"]:
            aq = run
        out, cpu = _run_cpu([str(ns3), f"--flows={a.flows}", f"--duration={a.duration:g}", "--warmup=10", *ns3_args],
                            env=_ns3_env(ns3))
        run = {**json.loads(out[-1]), "cpu_seconds": cpu}
        if not ns or run["cpu_seconds"] < ns["cpu_seconds"]:
            ns = run
    for r in (aq, ns):
        r["packets_per_cpu_second"] = r["bottleneck_packets"] / max(r["cpu_seconds"], 1e-9)
    rows = [
        ("CPU seconds (process)", "cpu_seconds", "{:.3f}"),
        ("bottleneck packets / CPU s", "packets_per_cpu_second", "{:,.0f}"),
        ("wall seconds", "wall_seconds", "{:.3f}"),
        ("bottleneck packets", "bottleneck_packets", "{:,d}"),
        ("bottleneck packets / wall s", "packets_per_second", "{:,.0f}"),
        ("utilisation (up)", "utilization", "{:.4f}"),
        ("sojourn mean (ms)", "sojourn_mean", "{:.2f}"),
        ("sojourn p99 (ms)", "sojourn_p99", "{:.2f}"),
    ]
    best = f", least CPU of {a.repeat} runs each" if a.repeat > 1 else ""
    tcp = ("the same TCP: aqmlab stack = \"ns3\", ns-3 TcpNewReno + TcpClassicRecovery" if a.stack == "ns3"
           else "each side's own TCP")
    print(f"headline: {a.flows} NewReno flows, CoDel, 10 Mbit/s, 10 ms RTT, {a.duration:g} s simulated, {tcp}{best}\n")
    build = "release build" if _is_release(ns3) else "PyPI wheel, asserts and logging on"
    print(f"ns-3.44: {ns3.name} ({build})\n")
    print(f"{'':30} {'aqmlab':>14} {'ns-3.44':>14}")
    for label, k, fmt in rows:
        va, vn = aq[k], ns[k]
        if "ms" in label:
            va, vn = va * 1e3, vn * 1e3
        print(f"{label:30} {fmt.format(va):>14} {fmt.format(vn):>14}")
    ratio = aq["packets_per_cpu_second"] / ns["packets_per_cpu_second"]
    wall_ratio = aq["packets_per_second"] / ns["packets_per_second"]
    print(f"\npackets per CPU-second ratio aqmlab / ns-3: {ratio:,.1f}x (per wall-second: {wall_ratio:,.1f}x)")
    if a.json:
        a.json.write_text(json.dumps({"aqmlab": aq, "ns3": ns, "ratio": ratio, "wall_ratio": wall_ratio,
                                      "stack": a.stack, "ns3_program": ns3.name}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
