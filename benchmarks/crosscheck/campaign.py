"""The Linux-engine cross-check campaign (issue #19): the saturated-TCP headline dumbbell
with 1/4/16/64 NewReno flows under CoDel, PIE, fq_codel, fq_pie, SFQ (their Linux
defaults), ARED (the residential study's 10 Mbit/s thresholds) and FIFO (250 KB), and RRUL
over the residential 10/10 Mbit/s link, each run on the simulator and on a Linux kernel in a VM
(`aqmlab crosscheck`). Writes one JSON per case to results/ and a summary table. Its main
cases are also in the shipped multi-engine campaign (`aqmlab crosscheck --campaign`,
written by campaign_cases.py).

The scenarios are the benchmark ones (benchmarks/scenarios/) with the duration shortened
(default 40 s with 10 s warm-up, RRUL 40 s with 5 s) because a VM run under TCG costs
10-30x real time. Run it niced, one case at a time:

    nice .venv/bin/python benchmarks/crosscheck/campaign.py            # all cases
    nice .venv/bin/python benchmarks/crosscheck/campaign.py tcp16_codel rrul res_rrul_fq_codel
    .venv/bin/python benchmarks/crosscheck/campaign.py --summary             # table only
    .venv/bin/python benchmarks/crosscheck/campaign.py tcp16_codel --resim "why"  # simulator side only
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import tomli_w

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SCEN = ROOT / "benchmarks" / "scenarios"
RESULTS = HERE / "results"

QDISCS = {
    "codel": {"kind": "codel"},
    "pie": {"kind": "pie"},
    "fq_codel": {"kind": "fq_codel"},
    "fq_pie": {"kind": "fq_pie"},
    "sfq": {"kind": "sfq"},
    # the residential study's ARED at 10 Mbit/s (thresholds in bytes: sch_red needs them)
    "ared": {"kind": "ared", "min": "12500B", "max": "37500B", "bandwidth": "10Mbit"},
    # the same RED without adaptation, at tc's default initial max_p: what the kernel
    # actually runs for "ared" (sch_red arms the adaptive timer only from the legacy qopt
    # flags, which tc no longer sets; docs/validation.md "ARED on the kernel")
    "red": {"kind": "red", "min": "12500B", "max": "37500B", "bandwidth": "10Mbit", "probability": 0.02},
    "fifo": {"kind": "fifo", "limit": "250KB"},
}


def cases(duration: str, warmup: str) -> dict[str, dict]:
    base = tomllib.loads((SCEN / "tcp16_codel.toml").read_text())
    out = {}
    for n in (1, 4, 16, 64):
        for q, qd in QDISCS.items():
            sc = json.loads(json.dumps(base))
            sc["run"].update(name=f"tcp{n}_{q}", duration=duration, warmup=warmup)
            sc["dumbbell"]["pairs"] = n
            sc["dumbbell"]["qdisc"] = qd
            sc["flow"][0]["count"] = n
            out[f"tcp{n}_{q}"] = sc
    rrul = tomllib.loads((SCEN / "rrul_residential.toml").read_text())
    rrul["run"].update(name="rrul", duration=duration, warmup="5s")
    out["rrul"] = rrul
    # the residential study's RRUL at 10/10 (studies/residential.toml): tbf shapers on
    # 1 Gbit/s, 50 ms base RTT, 1514-byte frames, a one-packet device queue, RRUL with one
    # UDP request/response and one ICMP probe (`rrul_be`, all best effort); today's Linux TCP defaults (the kernel in the
    # VM is 6.1, so the stack profile is "linux", not the study's "linux-3.14")
    for q, qd in RESIDENTIAL.items():
        out[f"res_rrul_{q}"] = {
            "run": {"name": f"res_rrul_{q}", "duration": duration, "warmup": "5s", "bin": "200ms"},
            "tcp": {"cc": "cubic"},
            "dumbbell": {"pairs": 1, "rate": "1Gbit", "delay": "25ms", "overhead": 14, "device_queue": 1, "qdisc": qd,
                         "up": {"shaper": {"kind": "tbf", "rate": "10Mbit"}}, "down": {"shaper": {"kind": "tbf", "rate": "10Mbit"}}},
            "flow": [{"kind": "rrul_be", "from": "client0", "to": "server0", "udp_probes": 1}],
        }
    # Controlled variations of res_rrul_codel (the x1.3 gap, docs/validation.md): the same
    # link with upload traffic only (4 bulk flows and the ICMP probe, no data in the
    # downstream queue), CUBIC and Reno
    # Reno (Linux reno) instead of CUBIC, and the same with every segment ACKed at once
    # (`delayed_ack = "off"`; the kernel's per-route quickack metric)
    reno = json.loads(json.dumps(out["res_rrul_codel"]))
    reno["run"]["name"] = "res_rrul_codel_reno"
    reno["tcp"]["cc"] = "newreno"
    out["res_rrul_codel_reno"] = reno
    qa = json.loads(json.dumps(reno))
    qa["run"]["name"] = "res_rrul_codel_reno_quickack"
    qa["tcp"]["delayed_ack"] = "off"
    out["res_rrul_codel_reno_quickack"] = qa
    # ... and both with htb shapers instead of tbf (no peek: CoDel decides when the packet
    # leaves, and the bucket may go into debt)
    for src in ("res_rrul_codel", "res_rrul_codel_reno"):
        hb = json.loads(json.dumps(out[src]))
        hb["run"]["name"] = f"{src}_htb"
        for d in ("up", "down"):
            hb["dumbbell"][d]["shaper"]["kind"] = "htb"
        out[f"{src}_htb"] = hb
    for cc, tag in (("cubic", ""), ("reno", "_reno")):
        up = json.loads(json.dumps(out["res_rrul_codel"]))
        up["run"]["name"] = f"res_up_codel{tag}"
        up["tcp"]["cc"] = cc
        up["flow"] = [{"kind": "bulk", "count": 4, "from": "client0", "to": "server0"},
                      {"kind": "ping", "from": "client0", "to": "server0", "interval": "200ms"}]
        out[f"res_up_codel{tag}"] = up
    # CAKE (issues #17/#19: "triple-isolate, 2 hosts"): host client0 with one bulk flow,
    # host client1 with eight, through cake at the 10 Mbit/s bottleneck of the headline
    # dumbbell (Reno, 10 ms base RTT). cake_2hosts: cake unlimited under the link's htb
    # (the kernel's htb shapes, as for every qdisc); cake_shaper: cake's own deficit-mode
    # shaper at 8 Mbit/s below the 10 Mbit/s link. Defaults otherwise (triple-isolate,
    # diffserv3, raw overhead, rtt internet), as tc-cake's; triple-isolate shares per host
    # first, so both hosts should get half.
    for name, qd in (("cake_2hosts", {"kind": "cake"}), ("cake_shaper", {"kind": "cake", "bandwidth": "8Mbit"})):
        cake = json.loads(json.dumps(base))
        cake["run"].update(name=name, duration=duration, warmup=warmup)
        cake["dumbbell"].update(pairs=2, qdisc=qd)
        cake["flow"] = [
            {"kind": "bulk", "name": "hostA", "count": 1, "from": "client0", "to": "server0", "start_spread": "1s"},
            {"kind": "bulk", "name": "hostB", "count": 8, "from": "client1", "to": "server1", "start_spread": "1s"},
        ]
        out[name] = cake
    # BBR (v1, Linux tcp_bbr) on the dumbbell of `benchmarks/ns3/compare.py --cc bbr`:
    # 10 Mbit/s, 20 ms bottleneck delay (~40 ms base RTT), a 1000-packet FIFO or CoDel, 1 and
    # 4 flows. Differences from that script: Linux's default receive buffer (3 MiB, the
    # engine has no knob; 4 MiB there) and Ethernet framing (14 bytes; PPP's 2 there).
    for n in (1, 4):
        for q in ("fifo", "codel"):
            out[f"bbr{n}_{q}"] = {
                "run": {"name": f"bbr{n}_{q}", "duration": duration, "warmup": warmup},
                "dumbbell": {"pairs": n, "rate": "10Mbit", "delay": "20ms", "access_delay": "0.1ms", "access_rate": "1Gbit",
                             "qdisc": {"kind": q, "limit": 1000}},
                "tcp": {"cc": "bbr"},
                "flow": [{"kind": "bulk", "count": n, "from": "client{i}", "to": "server{i}", "start_spread": "1s"}],
            }
    return out


#: The residential study's 10/10 parameters of the schemes the kernel has (its table).
RESIDENTIAL = {
    "fifo": {"kind": "fifo", "limit": 127},
    "codel": {"kind": "codel", "target": "5ms", "interval": "100ms", "limit": 1000},
    "fq_codel": {"kind": "fq_codel", "target": "5ms", "interval": "100ms", "limit": 10240, "drop_batch": 1},
}


def _correct_old_sojourn(d: dict, b: dict, get: dict, s: dict) -> dict:
    """Results from before the head-drop correction of the kernel's sojourn estimate
    (docs/linux-engine.md): divide by 1 + head drops / transmitted packets after the
    warm-up, from the same result (CoDel and fq_codel drop at the head; FIFO and PIE drop
    on arrival). 1514-byte frames at the link's 10 Mbit/s."""
    q = b["entity"]
    head = get.get((q, "drops codel /s")) or get.get((q, "drops codel (whole run)"))
    if head is None or head.get("linux") is None:
        return s
    old = get.get((q, "dropped /s")) or get.get((q, "drops after warm-up /s")) or {}
    rate = old.get("linux")  # kernel rows of that era: after warm-up
    if rate is None:
        return s
    tx = b["linux"] / 100 * 10e6 / (1514 * 8)
    s["linux"] = s["linux"] / (1 + rate / tx)
    sim = s.get("sim")
    s["verdict"] = "ok" if sim and abs(s["linux"] - sim) <= 0.25 * sim else "DIFF"
    s["corrected"] = True
    return s


def _old_drops(path: Path, d: dict, queue: str, get: dict) -> dict:
    """Results written before crosscheck had the row "drops after warm-up /s": their
    "dropped /s" row divided whole-run simulator counts but warm-up-to-end kernel counts
    by the measured span. The kernel value is the steady-state rate; the simulator's is
    recomputed from its per-bin series (the simulator is deterministic)."""
    row = get.get((queue, "dropped /s"))
    if row is None:
        return {}
    import aqmlab
    from aqmlab.linux.crosscheck import _warm_drops

    sim = aqmlab.run(path.with_suffix(".toml"))
    return {"sim": _warm_drops(sim, queue), "linux": row["linux"]}


def summary(markdown: bool = False) -> None:
    rows = []
    for p in sorted(RESULTS.glob("*.json")):
        d = json.loads(p.read_text())
        get = {(r["entity"], r["metric"]): r for r in d["rows"]}
        bn = [r for r in d["rows"] if r["entity"].startswith("bottleneck") and r["metric"] == "utilisation %" and (r["sim"] or 0) > 50]
        for b in bn:
            s = dict(get.get((b["entity"], "sojourn mean ms"), {}))
            if d["engine"].get("sojourn_estimator") is None and s.get("linux") is not None:
                s = _correct_old_sojourn(d, b, get, s)
            dr = get.get((b["entity"], "drops after warm-up /s")) or _old_drops(p, d, b["entity"], get)
            rows.append(
                (
                    p.stem,
                    b["entity"],
                    b["sim"],
                    b["linux"],
                    s.get("sim"),
                    s.get("linux"),
                    s.get("verdict", "") + ("*" if s.get("corrected") else ""),
                    b["verdict"],
                    d["engine"].get("cpu_busy_max"),
                    d["engine"].get("overhead"),
                    dr.get("sim"),
                    dr.get("linux"),
                )
            )
        for r in d["rows"]:
            if r["metric"] == "share of bulk goodput %":  # per-host shares (cake): in the utilisation columns
                rows.append(
                    (
                        p.stem,
                        r["entity"].split(" (")[0] + " share % " + r["entity"][r["entity"].find("(") :],
                        r["sim"],
                        r["linux"],
                        None,
                        None,
                        "",
                        r["diff"],
                        d["engine"].get("cpu_busy_max"),
                        d["engine"].get("overhead"),
                        None,
                        None,
                    )
                )
            if r["metric"] == "induced latency ms":
                rows.append(
                    (
                        p.stem,
                        r["entity"] + " (induced)",
                        None,
                        None,
                        r["sim"],
                        r["linux"],
                        r["verdict"],
                        "",
                        d["engine"].get("cpu_busy_max"),
                        d["engine"].get("overhead"),
                        None,
                        None,
                    )
                )

    def f(v: float | None, n: int = 2) -> str:
        return "–" if v is None else f"{v:.{n}f}"

    if markdown:
        print(
            "| case | queue / probe / host | utilisation % (host: share of goodput %) sim / linux | mean sojourn or induced latency ms "
            "sim / linux | agree (util, latency) | drops/s sim / linux | guest CPU peak | overhead |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            util = f"{f(r[2])} / {f(r[3])}" if r[2] is not None else ""
            drops = f"{f(r[10], 1)} / {f(r[11], 1)}" if r[10] is not None else ""
            print(
                f"| {r[0]} | {r[1]} | {util} | {f(r[4])} / {f(r[5])} | {r[7] or '–'}, {r[6] or '–'} | {drops} | {f(r[8])} | ×{f(r[9], 0)} |"
            )
        return
    print(
        f"{'case':14} {'queue':22} {'util sim':>8} {'util lin':>8} {'soj sim':>8} {'soj lin':>8} {'soj':>4} {'util':>4} {'cpu pk':>6} "
        f"{'ovh':>5}"
    )
    for r in rows:
        print(f"{r[0]:14} {r[1]:22} {f(r[2]):>8} {f(r[3]):>8} {f(r[4]):>8} {f(r[5]):>8} {r[6]:>4} {r[7]:>4} {f(r[8]):>6} {f(r[9], 1):>5}")


def detail(names: list[str]) -> None:
    """A Markdown row per result file of the given cases (every seed/tag): bottleneck
    utilisation, mean sojourn, drops/s after the warm-up, retransmitted segments and RTOs
    over the run, and the first [[flow]] table's share of the bulk goodput when there are
    several (host A under cake). Result files from before the retransmission row get the
    simulator's count by re-running its (deterministic) scenario file."""
    import aqmlab

    def f(v: float | None, n: int = 1) -> str:
        return "–" if v is None else f"{v:.{n}f}"

    print(
        "| run | seed | utilisation % sim / linux | mean sojourn ms sim / linux | drops/s sim / linux | retransmitted segments sim / "
        "linux | RTOs sim / linux | host A share % sim / linux |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in names:
        for p in sorted(RESULTS.glob(f"{name}*.json")):
            if p.stem != name and not p.stem[len(name):].startswith("_"):
                continue
            d = json.loads(p.read_text())
            sc = tomllib.loads(p.with_suffix(".toml").read_text())
            get = {(r["entity"], r["metric"]): r for r in d["rows"]}
            u, s = get[("bottleneck_up", "utilisation %")], get[("bottleneck_up", "sojourn mean ms")]
            dr = get.get(("bottleneck_up", "drops after warm-up /s"), {})
            bulk = next((r for r in d["rows"] if r["metric"] == "RTOs (whole run)"), {})
            rx = next((r for r in d["rows"] if r["metric"] == "retransmitted segments (whole run)"), None)
            if rx is None:
                sim = aqmlab.run(p.with_suffix(".toml"))
                fl = sim.flows[sim.flows["kind"] == "bulk"]
                rx = {"sim": float(fl["retransmits"].sum()), "linux": (d["engine"].get("tcp") or {}).get("retransmits")}
            share = next((r for r in d["rows"] if r["metric"] == "share of bulk goodput %"), None)
            sh = f"{f(share['sim'])} / {f(share['linux'])}" if share else ""
            print(
                f"| {p.stem} | {sc['run'].get('seed', 1)} | {f(u['sim'], 2)} / {f(u['linux'], 2)} | {f(s['sim'], 2)} / {f(s['linux'], 2)} "
                "| "
                f"{f(dr.get('sim'))} / {f(dr.get('linux'))} | {f(rx['sim'], 0)} / {f(rx['linux'], 0)} | {f(bulk.get('sim'), 0)} / "
                f"{f(bulk.get('linux'), 0)} | {sh} |"
            )


#: Rows whose Linux value the comparison takes from the kernel's own counters
#: (``engine_info``), not from the Linux engine's tables.
ENGINE_METRICS = {
    "sojourn mean ms (kernel ldelay)",
    "retransmitted segments (whole run)",
    "RTOs (whole run)",
    "fast recoveries (whole run)",
    "tail loss probes (whole run)",
    "lost retransmissions (whole run)",
    "undone reductions (whole run)",
}


def resim(names: list[str], note: str) -> None:
    """Re-runs the simulator side of stored cases (every --tag/--seed) against the stored
    kernel values, for a simulator change: each row gets the current simulator's value and,
    as ``sim_dupthresh``, the value with `[tcp] loss_detection = "dupthresh"`, `tlp = "off"`
    (the model before RACK-TLP, on the same code); diff/verdict are recomputed for the
    current value and ``engine.sim_rerun`` says why. The kernel side is not run again."""
    from aqmlab.linux.crosscheck import UTIL_POINTS, _ratio, _rel_verdict, compare, run_sim, to_json, verdict

    def sim_rows(sc: dict, engine: dict) -> list:
        r = run_sim(sc)
        r.engine_info = engine  # the kernel's ldelay and MIB counters
        return compare(r, r)

    for name in names:
        for p in sorted(RESULTS.glob(f"{name}*.json")):
            if p.stem != name and not p.stem[len(name):].startswith("_"):
                continue
            d = json.loads(p.read_text())
            old = {(r["section"], r["entity"], r["metric"]): r for r in d["rows"]}
            sc = tomllib.loads(p.with_suffix(".toml").read_text())
            base = json.loads(json.dumps(sc))
            base.setdefault("tcp", {}).update(loss_detection="dupthresh", tlp="off")
            before = {(r.section, r.entity, r.metric): r.sim for r in sim_rows(base, d["engine"])}
            rows = []
            for r in sim_rows(sc, d["engine"]):
                o = old.get((r.section, r.entity, r.metric))
                if o is None and r.entity.startswith("rrul_be0."):
                    # runs made before rrul_be had its own name called the flows rrul0.*
                    o = old.pop((r.section, "rrul0." + r.entity[len("rrul_be0."):], r.metric), None)
                if o is None and r.metric == "drops after warm-up /s":
                    # results of the first campaign: the kernel's after-warm-up rate was
                    # their "dropped /s" row (see _old_drops)
                    o = old.get((r.section, r.entity, "dropped /s"))
                if r.metric not in ENGINE_METRICS:
                    if o is None:
                        continue
                    r.linux = o["linux"] if o["linux"] is not None else float("nan")
                a, b = r.sim, r.linux
                if r.metric == "utilisation %":
                    r.diff = f"{b - a:+.2f} pt"
                    r.verdict = "ok" if abs(b - a) <= UTIL_POINTS else "DIFF"
                elif r.metric == "share of bulk goodput %":
                    r.diff = f"{b - a:+.2f} pt"
                elif r.metric in ("sojourn mean ms", "induced latency ms"):
                    r.diff, r.verdict = _ratio(a, b), _rel_verdict(a, b, 1.0)
                else:
                    r.diff = _ratio(a, b)
                rows.append(r)
            js = to_json(rows)
            for j in js:
                v = before.get((j["section"], j["entity"], j["metric"]))
                j["sim_dupthresh"] = v if v is not None and v == v else None
            # rows of an older crosscheck that the current one no longer writes keep their
            # kernel value (the summary's corrections read it); their simulator value is gone
            new = {(j["section"], j["entity"], j["metric"]) for j in js}
            js += [dict(o, sim=None, diff="", verdict="") for k, o in old.items() if k not in new]
            d["rows"], d["agree"] = js, verdict(rows)
            d["engine"]["sim_rerun"] = note
            p.write_text(json.dumps(d, allow_nan=False, default=lambda v: None) + "\n")
            get = {(j["entity"], j["metric"]): j for j in js}
            for key in (("bottleneck_up", "sojourn mean ms"), ("bottleneck_up", "drops after warm-up /s")):
                j = get.get(key, {})
                print(f"{p.stem} {key[1]}: {j.get('sim_dupthresh')} -> {j.get('sim')} (linux {j.get('linux')})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("only", nargs="*", help="case names (default: all)")
    ap.add_argument("--duration", default="40s")
    ap.add_argument("--warmup", default="10s")
    ap.add_argument(
        "--bin", default=None, help="run.bin of the cases (the kernel side samples the qdiscs once per bin; default the scenario's)"
    )
    ap.add_argument(
        "--seed",
        type=int,
        default=None,
        help="run.seed of the cases (the simulator's random streams and the start_spread draws both engines use; default the scenario's)",
    )
    ap.add_argument("--tag", default="", help="suffix of the result files (a repeat with other settings keeps the first)")
    ap.add_argument("--keep", action="store_true", help="keep each VM job's raw output in results/raw/CASE (not committed)")
    ap.add_argument(
        "--capture",
        metavar="QUEUE",
        default=None,
        help="also capture packet headers around these queues on the kernel side (comma separated, e.g. bottleneck_up; implies --keep; "
             "tcpdump in the VM image; analysis: capture_codel.py)",
    )
    ap.add_argument("--summary", action="store_true")
    ap.add_argument(
        "--resim",
        metavar="NOTE",
        default=None,
        help="re-run only the simulator side of the named stored cases (every --tag/--seed) and rewrite their rows (plus each row's value "
             "with loss_detection = dupthresh, tlp = off as sim_dupthresh); NOTE says what changed",
    )
    ap.add_argument("--markdown", action="store_true", help="with --summary: a Markdown table")
    ap.add_argument(
        "--detail",
        action="store_true",
        help="a Markdown table of the named cases' result files (every --tag/--seed): utilisation, sojourn, drops, retransmissions, RTOs, "
             "host shares",
    )
    a = ap.parse_args()
    if a.summary:
        summary(a.markdown)
        return
    if a.detail:
        detail(a.only)
        return
    if a.resim:
        resim(a.only, a.resim)
        return
    RESULTS.mkdir(exist_ok=True)
    all_cases = cases(a.duration, a.warmup)
    for name in a.only or list(all_cases):
        if name not in all_cases:
            sys.exit(f"unknown case {name!r}; cases: {', '.join(all_cases)}")
        sc = all_cases[name]
        if a.bin:
            sc["run"]["bin"] = a.bin
        if a.seed is not None:
            sc["run"]["seed"] = a.seed
        toml = RESULTS / f"{name}{a.tag}.toml"
        toml.write_text(tomli_w.dumps(sc))
        t = time.time()
        cmd = [sys.executable, "-m", "aqmlab", "crosscheck", str(toml), "--json"]
        env = dict(os.environ)
        if a.keep or a.capture:
            cmd += ["--keep", str(RESULTS / "raw" / f"{name}{a.tag}")]
        if a.capture:
            env["AQMLAB_VM_CAPTURE"] = a.capture
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if p.returncode != 0:
            print(f"{name}: failed: {p.stderr.strip()[-500:]}", flush=True)
            continue
        (RESULTS / f"{name}{a.tag}.json").write_text(p.stdout)
        print(f"{name}: done in {time.time() - t:.0f} s", flush=True)
    summary()


if __name__ == "__main__":
    main()
