"""WiFi peer check: aqmlab's 802.11n model against ns-3.44's WiFi.

One AP, one station, a wired 100 Mbit/s link (10 ms) from a server to the AP; cases:
bulk TCP down (server -> station), up (station -> server) and both at once, each with a
ping from the station every 100 ms; and both at once with WMM, the upload marked CS5 both
ways (its data and its ACKs: user priority 5, AC_VI in both simulators, which take the
user priority from the DS field's top three bits as mac80211 does) and every access
category with ns-3's EDCA table on both sides (VI: AIFSN 2, CW 7-15, TXOP 3.008 ms; BE:
AIFSN 3, CW 15-1023), under one root fq_codel per WiFi device in ns-3 (not its mq), as
aqmlab has it. Both simulators run the same configuration
(benchmarks/ns3/wifi.cc says what ns-3 is given): 802.11n, 20 MHz, 800 ns guard interval,
fixed MCS (AP MCS 15 on two streams, station MCS 7 on one), EDCA best effort, block acks
at 24 Mbit/s, A-MPDUs in a 64-frame window up to 65535 bytes and ns-3's HT PPDU limit
(aPPDUMaxTime 5.484 ms), a 500-packet queue below the qdisc on each side that stops the
qdisc when full (ns-3's WifiMacQueue), fq_codel on every interface (ns-3's default),
NewReno TCP (aqmlab's `ns3` stack profile) with 4 MiB buffers.

Prints per-direction goodput, mean ping RTT under load and the upstream share for both,
with the differences against the goals (goodput ±15 %, ping ±25 %, shares ±10 points).

  usage: python benchmarks/ns3/compare_wifi.py [--duration 30] [--seeds 1]
  (needs benchmarks/ns3/setup.sh and build.sh first; aqmlab from the repository's venv)
"""
from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
NS3 = HERE / "build" / "ns3-wifi"
WARMUP = 5.0

SCENARIO = """
[run]
name = "wifi-peer-{mode}"
duration = "{duration}s"
warmup = "{warmup}s"
seed = {seed}

[tcp]
stack = "ns3"
mss = 1448
rcv_window = "4MiB"

[[node]]
name = "server"
kind = "host"
[[node]]
name = "ap"
kind = "router"
[[node]]
name = "sta"
kind = "host"

[[link]]
from = "server"
to = "ap"
rate = "100Mbit"
delay = "10ms"
overhead = 2                  # ns-3 PointToPointNetDevice: 2-byte PPP header
device_queue = 2              # ns-3 DropTailQueue 1p below the qdisc, plus the one being sent
qdisc = {{ kind = "fq_codel" }}

[[wifi]]
ap = "ap"
stations = ["sta"]
qdisc = {{ kind = "fq_codel" }}
ap_mcs = {apmcs}
mcs = {stamcs}
driver_queue = 500            # ns-3 WifiMacQueue MaxSize 500p, on both sides
hw_aggregates = 1             # ns-3 builds the A-MPDU when it gains the medium
max_frames = 64
max_airtime = "5484us"        # aPPDUMaxTime (ns-3's HT PPDU limit)
{wmm}
{flows}
[[flow]]
kind = "ping"
from = "sta"
to = "server"
interval = "100ms"
start = "0.3s"
"""
BULK = """
[[flow]]
name = "{name}"
kind = "bulk"
from = "{src}"
to = "{dst}"
start = "{start}s"
dscp = {dscp}
"""
# every frame best effort with one EDCA set on both sides, as wifi.cc gives ns-3
NO_WMM = "wmm = false"
# WMM with ns-3's EDCA table for the AP too (WifiMac::ConfigureDcf gives every node the
# same: VO and VI AIFSN 2, BE CWmax 1023), not hostapd's AP values
WMM = """wmm = true
ap_access = {{ cwmax = 1023 }}
ap_ac = {{ vo = {{ aifsn = 2 }}, vi = {{ aifsn = 2 }} }}"""
UP_DSCP = 40  # CS5: TOS 160, user priority 5, AC_VI


def aqmlab_case(mode: str, duration: float, seed: int, apmcs: int, stamcs: int) -> dict[str, float]:
    import aqmlab

    flows = ""
    wmm = mode == "both-vi"
    if mode in ("down", "both", "both-vi"):
        flows += BULK.format(name="down", src="server", dst="sta", start=0.5, dscp=0)
    if mode in ("up", "both", "both-vi"):
        flows += BULK.format(name="up", src="sta", dst="server", start=0.6, dscp=UP_DSCP if wmm else 0)
    text = SCENARIO.format(mode=mode, duration=duration, warmup=WARMUP, seed=seed, apmcs=apmcs, stamcs=stamcs, flows=flows,
                           wmm=WMM.format() if wmm else NO_WMM)
    r = aqmlab.run(text)
    f = r.flows.set_index("name")
    g = {d: float(f.loc[d, "goodput_bps"]) if d in f.index else 0.0 for d in ("down", "up")}
    ping = float(r.probes["rtt_mean"].iloc[0])
    return {"goodput_down": g["down"], "goodput_up": g["up"], "ping_mean": ping}


def ns3_case(mode: str, duration: float, seed: int, apmcs: int, stamcs: int) -> dict[str, float]:
    if not NS3.exists():
        sys.exit(f"error: {NS3} is missing (run benchmarks/ns3/setup.sh, then benchmarks/ns3/build.sh)")
    # the WMM case: one root fq_codel on each WiFi device in ns-3 too (not its default mq),
    # as aqmlab's interface qdisc and the study's `tc qdisc replace ... root` have it
    tos = ["--mode=both", f"--uptos={UP_DSCP << 2}", "--rootqdisc=1"] if mode == "both-vi" else [f"--mode={mode}"]
    out = subprocess.run(
        [str(NS3), *tos, f"--duration={duration}", f"--warmup={WARMUP}", f"--seed={seed}",
         f"--apmcs={apmcs}", f"--stamcs={stamcs}", "--macqueue=500", "--delay=10ms"],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def share(c: dict[str, float]) -> float:
    t = c["goodput_up"] + c["goodput_down"]
    return c["goodput_up"] / t if t > 0 else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=30.0, help="simulated seconds per run (default 30; the first 5 are warm-up)")
    ap.add_argument("--seeds", type=int, default=1, help="runs per case, seeds 1..N (default 1)")
    ap.add_argument("--apmcs", type=int, default=15, help="the AP's MCS (default 15)")
    ap.add_argument("--stamcs", type=int, default=7, help="the station's MCS (default 7)")
    a = ap.parse_args()
    if a.duration <= WARMUP:
        ap.error(f"--duration must be above the {WARMUP:g} s warm-up")
    print(f"WiFi peer check, {a.duration:g} s x {a.seeds} seed(s), AP MCS {a.apmcs}, station MCS {a.stamcs}; "
          "goodput Mbit/s, ping RTT ms, upstream share %")
    print("| case | quantity | aqmlab | ns-3.44 | difference |")
    print("| --- | --- | --- | --- | --- |")
    for mode in ("down", "up", "both", "both-vi"):
        runs = {
            "aqmlab": [aqmlab_case(mode, a.duration, s, a.apmcs, a.stamcs) for s in range(1, a.seeds + 1)],
            "ns-3": [ns3_case(mode, a.duration, s, a.apmcs, a.stamcs) for s in range(1, a.seeds + 1)],
        }
        m = {k: {q: statistics.mean(r[q] for r in v) for q in ("goodput_down", "goodput_up", "ping_mean")} for k, v in runs.items()}
        rows = []
        for d in ("down", "up"):
            if mode in (d, "both", "both-vi"):
                x, y = m["aqmlab"][f"goodput_{d}"], m["ns-3"][f"goodput_{d}"]
                rows.append((f"goodput {d}", f"{x / 1e6:.1f}", f"{y / 1e6:.1f}", f"{100 * (x / y - 1):+.1f} % (goal ±15 %)"))
        x, y = m["aqmlab"]["ping_mean"], m["ns-3"]["ping_mean"]
        rows.append(("ping RTT", f"{x * 1e3:.1f}", f"{y * 1e3:.1f}", f"{100 * (x / y - 1):+.1f} % (goal ±25 %)"))
        if mode.startswith("both"):
            x, y = share(m["aqmlab"]), share(m["ns-3"])
            rows.append(("upstream share", f"{100 * x:.1f}", f"{100 * y:.1f}", f"{100 * (x - y):+.1f} points (goal ±10)"))
        for q, x, y, d in rows:
            print(f"| {mode} | {q} | {x} | {y} | {d} |")


if __name__ == "__main__":
    main()
