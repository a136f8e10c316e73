# Regenerates studies/docsis-downstream.toml (its long per-flow lists). Run: python3 scripts/gen_docsis_study.py
def dl(xs): return "[" + ", ".join(f'"{x:g}ms"' for x in xs) + "]"
SCHED = '''  [[experiment.axis]]
  name = "scheduler"
  path = "docsis.downstream_qdisc"
  labels = ["DT", "DT20", "DRR", "ARED", "CoDel", "PIE"]
  values = [
    { kind = "fifo", limit = 2048 },
    { kind = "fifo", limit = 65 },
    { kind = "drr", limit = 2048, flow_limit = 204 },
    { kind = "ared", variant = "ns2", min = 102, max = 1024, limit = 2048 },
    { kind = "codel", drop_at = "enqueue", target = "20ms", interval = "100ms", limit = 2048 },
    { kind = "pie", variant = "ns2", target = "20ms", tupdate = "30ms", max_burst = "100ms", alpha = 0.125, beta = 1.25, limit = 2048 },
  ]
'''
def base_value(n, label=None, rtts=None, voip_rtt=80, extra_flows="", extra_modems=0, extra_delays=()):
    rtts = rtts or [30 + 10 * i for i in range(n)]
    delays = [r / 2 for r in rtts] + [voip_rtt / 2] + list(extra_delays)
    modems = n + 1 + extra_modems
    flows = (
        f'{{ kind = "bulk", name = "ftp", count = {n}, from = "server{{i}}", to = "cm{{i}}", start_spread = "2s" }}, '
        f'{{ kind = "voip", name = "voip", from = "server{n}", to = "cm{n}", size = 238, interval = "20ms", codec_delay = "0ms" }}'
        + extra_flows
    )
    return (f'  [[experiment.axis.values]]\n  label = "{label or n}"\n'
            f'  patch = {{ docsis = {{ modems = {modems}, server_delays = {dl(delays)} }}, flow = [ {flows} ] }}\n')

out = []
out.append("""# An ns-2 study of delay-based AQM in downstream DOCSIS 3.0 cable networks (Clemson
# University group; Computer Networks 2015). One CMTS, one flow per cable modem, servers
# with their own path delays (RTT 30-130 ms), a 38 Mbit/s downstream channel (4 bonded
# channels = 152 Mbit/s in the bonded variant), 27 Mbit/s upstream per modem. The CMTS
# downstream scheduler is the system under test.
#
# Setup (every choice and its source: docs/validation.md):
# - TCP: stack = "ns2-sack1" (ns-2 Sack1 agent + DelAckSink: NewReno with SACK, IW 2,
#   growth per ACK received, cwnd = ssthresh in recovery, ACK every 2 segments / 100 ms,
#   window 10000 segments, x4 = 40000 in the bonded runs, no timestamp option as ns-2's
#   timestamps_ false); MSS 1460 as the study states, so data packets are its 1500 bytes
#   (1460 + 40);
# - FTP flow i (i = 0..n-1) has path RTT 30 + 10 i ms in BASE, base9, udp and the
#   "up to 50 flows" runs (the same rule continued: up to 520 ms at 50 flows);
# - DT20 = FIFO of 65 packets; ARED as ns-2 runs it: thresholds in packets (capacity/20,
#   capacity/2), ns-2's own RED (variant = "ns2": ns-2.35 Queue/RED defaults, i.e. initial
#   max_p 0.1, gentle on, wait_ drop spacing, mark_p_ 0.1, a float average with ns-2's
#   automatic weight w_q = 1 - exp(-1/C), C = link rate / (8 x mean_pktsize_ 500 B) =
#   9500 pkt/s -> 1.05e-4 at 38 Mbit/s, and ns-2's ARED rule: max_p x0.9 / +min(0.01,
#   max_p/4) at most every 0.5 s, bounds min(0.01, 80000/bw) = 0.0021 and 0.5);
#   CoDel decides at enqueue (tail-drop variant) from the head packet's sojourn; PIE is
#   ns-2's Queue/PIE (the quoted parameters are its defaults: 20 ms, 30 ms, 100 ms burst,
#   alpha 0.125, beta 1.25);
# - the VoIP talker gets its own modem with an 80 ms path RTT; its R-value uses the
#   measured mean one-way delay and loss only (codec_delay = 0, ideal jitter buffer);
# - the WRT client keeps one persistent connection (ns-2 FullTcp request/response);
# - runs last 2000 s with statistics from 20 s (FTP flows start within 0-2 s).

[study]
name = "docsis-downstream"
title = "Delay-based AQM in downstream DOCSIS 3.0"
description = "ns-2 DOCSIS 3.0 downstream study (Clemson, Computer Networks 2015): DT, DT20, DRR, ARED, CoDel and PIE at the CMTS; FTP, \
VoIP, HAS video, web users and WRT; service tiers, channel bonding, an unresponsive UDP flow."
repetitions = 1
seed = 1
findings = [
  { text = "DT with a 2048-packet buffer gives ~0.5 s of queueing and VoIP quality far below toll quality; CoDel, PIE and DT20 keep VoIP \
usable", check = { measure = "voip_r", experiment = "base", higher = "CoDel", than = "DT", axis = "scheduler" } },
  { text = "DT's VoIP R-value is below toll quality (70) under load", check = { measure = "voip_r", experiment = "base", where = { \
scheduler = "DT", flows = ["5", "7", "9", "11"] }, at_most = 70 } },
  { text = "DT20 loses aggregate throughput compared to DT", check = { measure = "goodput_total", experiment = "base", where = { flows = \
["1", "3"] }, lower = "DT20", than = "DT", axis = "scheduler" } },
  { text = "AQMs expose TCP's RTT unfairness that a bloated buffer masked (Jain's index lower under CoDel/PIE than under DT)", check = { \
measure = "jain", experiment = "base", where = { flows = ["5", "7", "9", "11"] }, lower = "CoDel", than = "DT", axis = "scheduler" } },
  { text = "Unfairness grows with the RTT spread", check = { measure = "jain", experiment = "rtt_spread", where = { scheduler = "CoDel" \
}, trend = "decreasing", axis = "spread" } },
  { text = "DRR is max-min fair", check = { measure = "jain", experiment = "base", where = { scheduler = "DRR" }, at_least = 0.95 } },
  "Single-queue schemes do not enforce service tiers under heavy load (allocations converge to the unweighted share); see the tier figures",
  { text = "Only DRR contains an unresponsive 12 Mbit/s UDP flow", check = { measure = "cbr_goodput", experiment = "udp", lower = "DRR", \
than = "CoDel", axis = "scheduler" } },
  { text = "AQM keeps web response times low and stable; DT's are high and erratic", check = { measure = "wrt_mean", experiment = "web", \
lower = "CoDel", than = "DT", axis = "scheduler" } },
]

[quick]
repetitions = 1
duration = "60s"

[base]
run = { duration = "2000s", warmup = "20s", bin = "10s" }
tcp = { stack = "ns2-sack1", mss = 1460 }
docsis = { channels = 1, downstream_qdisc = { kind = "fifo", limit = 2048 } }
""")

out.append(
    """
# ---------------------------------------------------------------------------------------
[[experiment]]
name = "base"
title = "BASE: n FTP flows (RTT 30 + 10 i ms) and one VoIP flow"
measures = ["goodput_total", "jain", "voip_owd", "voip_loss", "voip_r", "queue_delay_mean"]

"""
    + SCHED
    + """
  [[experiment.axis]]
  name = "flows"
"""
    + "".join(base_value(n) for n in (1, 3, 5, 7, 9, 11))
    + """
  [[experiment.figure]]
  type = "bar"
  name = "base-voip-r"
  title = "VoIP R-value"
  y = "voip_r"
  x = "flows"
  hue = "scheduler"

  [[experiment.figure]]
  type = "flows_vs_rtt"
  name = "base-throughput-vs-rtt"
  title = "Per-flow throughput vs path RTT (9 FTP flows)"
  where = { flows = "9" }
  group = "scheduler"

  [[experiment.table]]
  name = "base-jain"
  title = "Jain's fairness index over the FTP flows"
  value = "jain"
  rows = "scheduler"
  cols = "flows"

  [[experiment.table]]
  name = "base-voip"
  title = "VoIP mean one-way delay"
  value = "voip_owd"
  rows = "scheduler"
  cols = "flows"

  [[experiment.table]]
  name = "base-throughput"
  title = "Aggregate FTP throughput"
  value = "goodput_total"
  rows = "scheduler"
  cols = "flows"

# ---------------------------------------------------------------------------------------
[[experiment]]
name = "many"
title = "BASE extra: up to 50 FTP flows"
measures = ["goodput_total", "jain", "voip_r"]
quick_repetitions = 1

"""
    + SCHED
    + """
  [[experiment.axis]]
  name = "flows"
"""
    + "".join(base_value(n) for n in (20, 30, 50))
    + """
  [[experiment.table]]
  name = "many-jain"
  value = "jain"
  rows = "scheduler"
  cols = "flows"

[[experiment]]
name = "equal_rtt"
title = "BASE extra: 9 FTP flows, all with 80 ms RTT"
measures = ["goodput_total", "jain", "voip_r"]

"""
    + SCHED
    + """
  [[experiment.axis]]
  name = "flows"
"""
    + base_value(9, rtts=[80] * 9)
    + """
  [[experiment.table]]
  name = "equal-rtt-jain"
  value = "jain"
  rows = "scheduler"
  cols = "flows"

[[experiment]]
name = "rtt_spread"
title = "BASE extra: 7 FTP flows, mean RTT 100 ms, growing RTT spread"
measures = ["goodput_total", "jain"]
# Quick mode runs 200 s here, not 60 s: Jain's index over 60 s still carries the start-up
# and short-term unfairness of 7 flows (CoDel, seeds 1-5: sd 0.025-0.06 per spread,
# more than the 0.02-0.04 steps between neighbouring spreads), so one 60 s run cannot
# resolve the trend; at 200 s the sd is 0.002-0.017 and every seed falls monotonically
# (docs/validation.md, "Quick-mode findings").
quick_duration = "200s"

"""
    + SCHED
    + """
  [[experiment.axis]]
  name = "spread"
"""
    + "".join(
        base_value(7, label=f"{s}ms", rtts=[100, 100 - s, 100 + s, 100 - 2 * s, 100 + 2 * s, 100 - 3 * s, 100 + 3 * s])
        for s in (5, 10, 15, 20, 25)
    )
    + """
  [[experiment.figure]]
  type = "line"
  name = "jain-vs-spread"
  title = "Jain's index vs RTT spread"
  x = "spread"
  y = "jain"
  group = "scheduler"

[[experiment]]
name = "base9"
title = "BASE: 5 replications of the 9-flow case (confidence intervals)"
measures = ["goodput_total", "jain", "voip_owd", "voip_r"]
repetitions = 5
quick_repetitions = 2

"""
    + SCHED
    + """
  [[experiment.axis]]
  name = "flows"
"""
    + base_value(9)
    + """
  [[experiment.table]]
  name = "base9-jain"
  value = "jain"
  rows = "scheduler"
  cols = "flows"
  stat = "mean±sd"
"""
)

# HAS: BASE plus 5 HAS flows; HAS RTTs 80,70,90,60,100; FTP RTTs same pattern from 80
pattern = [80, 70, 90, 60, 100, 50, 110, 40, 120, 30, 130]
def has_value(n, mode):
    ftp = pattern[:n]
    has = [80, 70, 90, 60, 100]
    delays = [r / 2 for r in ftp] + [40] + [r / 2 for r in has]
    adapt = "" if mode == "adaptive" else ', adaptation = "max_always"'
    flows = (f'{{ kind = "bulk", name = "ftp", count = {n}, from = "server{{i}}", to = "cm{{i}}", start_spread = "2s" }}, '
             f'{{ kind = "voip", name = "voip", from = "server{n}", to = "cm{n}", size = 238, interval = "20ms", codec_delay = "0ms" }}, '
             + ", ".join(f'{{ kind = "has", name = "has{k}", from = "cm{n + 1 + k}", to = "server{n + 1 + k}"{adapt} }}' for k in range(5)))
    return (f'  [[experiment.axis.values]]\n  label = "{n}"\n'
            f'  patch = {{ docsis = {{ modems = {n + 6}, server_delays = {dl(delays)} }}, flow = [ {flows} ] }}\n')

for mode in ("adaptive", "max_always"):
    out.append(f'''
# ---------------------------------------------------------------------------------------
[[experiment]]
name = "has{'' if mode == 'adaptive' else '_max'}"
title = "HAS: BASE plus 5 {'adaptive' if mode == 'adaptive' else 'max-always'} video clients"
measures = ["has_playback_rate", "has_adaptation_rate", "has_rebuffer", "has_bias", "goodput_total", "voip_r"]

''' + SCHED + '''
  [[experiment.axis]]
  name = "flows"
''' + "".join(has_value(n, mode) for n in (1, 3, 5, 7, 9)) + f'''
  [[experiment.figure]]
  type = "bar"
  name = "has{'' if mode == 'adaptive' else '-max'}-playback"
  title = "HAS videoPlaybackRate"
  y = "has_playback_rate"
  x = "flows"
  hue = "scheduler"

  [[experiment.table]]
  name = "has{'' if mode == 'adaptive' else '-max'}-rebuffer"
  title = "HAS rebufferTime (% of time stalled)"
  value = "has_rebuffer"
  rows = "scheduler"
  cols = "flows"
''')

# WEB: 5 FTP (RTTs 30..70) + users (RTTs cycling 30..70) + WRT at 50 ms
def web_value(users, wrt_size="20KB", label=None):
    ftp = [30, 40, 50, 60, 70]
    u = [[30, 40, 50, 60, 70][i % 5] for i in range(users)]
    delays = [r / 2 for r in ftp] + [r / 2 for r in u] + [25]
    flows = (
        '{ kind = "bulk", name = "ftp", count = 5, from = "server{i}", to = "cm{i}", start_spread = "2s" }, '
        + ", ".join(
            f'{{ kind = "web_users", name = "user{k}", from = "cm{5 + k}", to = "server{5 + k}", start_spread = "1s" }}'
            for k in range(users)
        )
        + f', {{ kind = "wrt", name = "wrt", from = "cm{5 + users}", to = "server{5 + users}", size = "{wrt_size}", think = "10s", '
          f'persistent = true }}'
    )
    return (f'  [[experiment.axis.values]]\n  label = "{label or users}"\n'
            f'  patch = {{ docsis = {{ modems = {6 + users}, server_delays = {dl(delays)} }}, flow = [ {flows} ] }}\n')

out.append('''
# ---------------------------------------------------------------------------------------
[[experiment]]
name = "web"
title = "WEB: 5 FTP flows, heavy-tailed web users and the designated WRT client"
measures = ["wrt_mean", "wrt_sd", "web_object_time", "goodput_total"]

''' + SCHED + '''
  [[experiment.axis]]
  name = "users"
''' + "".join(web_value(u) for u in (10, 20, 40, 80)) + '''
  [[experiment.figure]]
  type = "bar"
  name = "wrt"
  title = "Web response time of a 20 KB object (mean ± sd)"
  y = "wrt_mean"
  x = "users"
  hue = "scheduler"

  [[experiment.table]]
  name = "wrt"
  value = "wrt_mean"
  rows = "scheduler"
  cols = "users"

[[experiment]]
name = "web_size"
title = "WEB: 50 users, WRT object size 32 KB to 2048 KB"
measures = ["wrt_mean", "wrt_sd"]

''' + SCHED + '''
  [[experiment.axis]]
  name = "size"
''' + "".join(web_value(50, f"{s}KB", f"{s}KB") for s in (32, 128, 512, 2048)) + '''
  [[experiment.figure]]
  type = "line"
  name = "wrt-vs-size"
  title = "WRT response time vs object size (50 users)"
  x = "size"
  y = "wrt_mean"
  group = "scheduler"
''')

# TIER
def tier_value(n, bonded=False, ts=False):
    rtts = [80, 70, 90, 60, 100, 50, 110, 40, 120, 30, 130][:n]
    delays = [r / 2 for r in rtts] + [40]
    r1, r2 = ("24Mbit", "48Mbit") if bonded else ("6Mbit", "12Mbit")
    t2 = ', start = "500s", stop = "1500s"' if ts else ""
    flows = (f'{{ kind = "bulk", name = "tier1_", count = {n}, from = "server{{i}}", to = "cm{{i}}", start_spread = "2s" }}, '
             f'{{ kind = "bulk", name = "tier2", from = "server{n}", to = "cm{n}", start_spread = "2s"{t2} }}')
    extra = ', channels = 4, downstream_qdisc = { kind = "fifo", limit = 8192 }' if bonded else ""
    return (
        f'  [[experiment.axis.values]]\n  label = "{n}"\n'
        f'  patch = {{ docsis = {{ modems = {n + 1}, server_delays = {dl(delays)}, tier = [ {{ name = "tier1", count = {n}, max_rate = '
        f'"{r1}" }}, {{ name = "tier2", count = 1, max_rate = "{r2}" }} ]{extra} }}, flow = [ {flows} ] }}\n'
    )


out.append(
    """
# ---------------------------------------------------------------------------------------
[[experiment]]
name = "tier"
title = "TIER: n Tier-1 flows at 6 Mbit/s and one Tier-2 flow at 12 Mbit/s"
measures = ["goodput_total", "jain", "flow:tier2.goodput_bps", "mean:bulk.goodput_bps"]

"""
    + SCHED
    + """
  [[experiment.axis]]
  name = "flows"
"""
    + "".join(tier_value(n) for n in (5, 7, 9, 11))
    + """
  [[experiment.figure]]
  type = "bar"
  name = "tier-flows"
  title = "Per-flow throughput with service tiers (9 Tier-1 + 1 Tier-2)"
  source = "flows"
  y = "goodput_bps"
  x = "scheduler"
  hue = "flow"
  where = { flows = "9" }

  [[experiment.table]]
  name = "tier2-throughput"
  title = "Tier-2 (12 Mbit/s) flow throughput"
  value = "flow:tier2.goodput_bps"
  rows = "scheduler"
  cols = "flows"

[[experiment]]
name = "tier_timeseries"
title = "TIER time series: 9 Tier-1 flows, Tier-2 active 500-1500 s"
measures = ["goodput_total", "flow:tier2.goodput_bps"]
keep_series = true

"""
    + SCHED
    + """
  [[experiment.axis]]
  name = "flows"
"""
    + tier_value(9, ts=True)
    + """
  [[experiment.figure]]
  type = "timeseries"
  name = "tier-timeseries"
  title = "Throughput in 10 s bins (Tier-2 flow active 500-1500 s)"
  source = "series"
  metric = "goodput_bps"
  entity = ["tier2", "tier1_0"]
  group = "scheduler"

[[experiment]]
name = "tier_bonded"
title = "TIER bonded: 4 channels (152 Mbit/s), tiers 24 / 48 Mbit/s, queue and window x4"
measures = ["goodput_total", "jain", "flow:tier2.goodput_bps"]
patch = { tcp = { rcv_window = 40000 } }

"""
    + SCHED.replace("min = 102, max = 1024, limit = 2048", "min = 409, max = 4096, limit = 8192")
    .replace("limit = 2048 }", "limit = 8192 }")
    .replace("limit = 65 }", "limit = 260 }")
    .replace("limit = 2048, flow_limit = 204", "limit = 8192, flow_limit = 819")
    .replace("min = 102, max = 1024, limit = 2048", "min = 409, max = 4096, limit = 8192")
    .replace("limit = 2048 }", "limit = 8192 }")
    + """
  [[experiment.axis]]
  name = "flows"
"""
    + "".join(tier_value(n, bonded=True).replace(', downstream_qdisc = { kind = "fifo", limit = 8192 }', "") for n in (5, 9))
    + """
  [[experiment.table]]
  name = "tier-bonded"
  value = "flow:tier2.goodput_bps"
  rows = "scheduler"
  cols = "flows"
"""
)

# UDP
def udp_value(n):
    rtts = [30 + 10 * i for i in range(n)]
    delays = [r / 2 for r in rtts] + [40, 40]
    flows = (
        f'{{ kind = "bulk", name = "ftp", count = {n}, from = "server{{i}}", to = "cm{{i}}", start_spread = "2s" }}, '
        f'{{ kind = "voip", name = "voip", from = "server{n}", to = "cm{n}", size = 238, interval = "20ms", codec_delay = "0ms" }}, '
        f'{{ kind = "cbr", name = "udp", from = "server{n + 1}", to = "cm{n + 1}", rate = "12Mbit", size = 1500, start = "500s", stop = '
        f'"1500s" }}'
    )
    return (f'  [[experiment.axis.values]]\n  label = "{n}"\n'
            f'  patch = {{ docsis = {{ modems = {n + 2}, server_delays = {dl(delays)} }}, flow = [ {flows} ] }}\n')

out.append('''
# ---------------------------------------------------------------------------------------
[[experiment]]
name = "udp"
title = "UDP: BASE plus an unresponsive 12 Mbit/s CBR flow active 500-1500 s"
measures = ["cbr_goodput", "goodput_total", "jain", "voip_r"]
keep_series = true

''' + SCHED + '''
  [[experiment.axis]]
  name = "flows"
''' + "".join(udp_value(n) for n in (5, 9)) + '''
  [[experiment.figure]]
  type = "bar"
  name = "udp-share"
  title = "Throughput of the unresponsive 12 Mbit/s flow (while active)"
  y = "cbr_goodput"
  x = "flows"
  hue = "scheduler"

  [[experiment.table]]
  name = "udp"
  value = "cbr_goodput"
  rows = "scheduler"
  cols = "flows"
''')
open(__import__("pathlib").Path(__file__).resolve().parent.parent / "studies" / "docsis-downstream.toml", "w").write("".join(out))
