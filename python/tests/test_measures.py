"""Run-level measures: hand-computed values on small tables, then a real run of the
application workloads (web, WRT, web users, HAS, RRUL) through aqmlab.run."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import aqmlab
from aqmlab import measures


def _res(rows: list[dict], warmup: float = 0.0) -> SimpleNamespace:
    flows = pd.DataFrame(rows)
    for c in ("goodput_bps", "base_rtt"):
        if c not in flows.columns:
            flows[c] = 0.0
    samples = pd.DataFrame({"kind": [], "entity": [], "metric": [], "t": [], "value": []})
    return SimpleNamespace(flows=flows, samples=samples, warmup=warmup, queues=pd.DataFrame({"name": []}))


def _summary(values: list[float]) -> dict:
    v = np.asarray(values, dtype=float)
    return {
        "responses": float(len(v)),
        "response_time_mean": float(v.mean()) if len(v) else math.nan,
        "response_time_sd": float(v.std(ddof=1)) if len(v) > 1 else math.nan,
    }


def test_page_time_is_the_mean_over_all_pages():
    r = _res([
        {"name": "w0", "kind": "web", "src": "client0", "dst": "server0", "pages": 3.0, "page_time_mean": 1.0},
        {"name": "w1", "kind": "web", "src": "client1", "dst": "server1", "pages": 1.0, "page_time_mean": 5.0},
        {"name": "w2", "kind": "web", "src": "client2", "dst": "server2", "pages": 0.0, "page_time_mean": math.nan},
        {"name": "b", "kind": "bulk", "src": "client0", "dst": "server0", "pages": math.nan, "page_time_mean": math.nan},
    ])
    # (3·1 + 1·5) / 4 pages; the flow without a page does not count.
    assert measures.compute(r, ["page_time"])["page_time"] == pytest.approx(2.0)
    assert math.isnan(
        measures.compute(_res([{"name": "b", "kind": "bulk", "src": "client0", "dst": "server0"}]), ["page_time"])["page_time"]
    )


def test_wrt_sd_pools_flows_exactly():
    a, b, c = [0.1, 0.2, 0.4], [1.0, 1.5], [0.3]
    rows = [{"name": f"wrt{i}", "kind": "wrt", "src": "client0", "dst": "server0", **_summary(v)} for i, v in enumerate((a, b, c))]
    out = measures.compute(_res(rows), ["wrt_mean", "wrt_sd"])
    everything = np.array(a + b + c)
    assert out["wrt_mean"] == pytest.approx(everything.mean())
    assert out["wrt_sd"] == pytest.approx(everything.std(ddof=1))
    # One flow, one response: no spread to report.
    out = measures.compute(_res([rows[2]]), ["wrt_sd"])
    assert math.isnan(out["wrt_sd"])


def test_has_application_bias_by_hand():
    # Consumed: HAS 3 + 5 Mbit/s (each capped at 5), FTP 12 + 10: 30 Mbit/s in all.
    # Water-filling 30 over demands {5, 5, inf, inf}: 7.5 each would exceed the caps, so
    # HAS gets 5 + 5 and FTP 10 + 10. HAS got 8 of its 10: bias -20 %.
    rows = [
        {
            "name": "v0",
            "kind": "has",
            "src": "client0",
            "dst": "server0",
            "goodput_bps": 3e6,
            "max_bitrate": 5e6,
            "video_playback_rate": 2.5,
            "rebuffer_time": 1.0,
            "adaptation_rate": 10.0,
        },
        {
            "name": "v1",
            "kind": "has",
            "src": "client1",
            "dst": "server1",
            "goodput_bps": 5e6,
            "max_bitrate": 5e6,
            "video_playback_rate": 4.5,
            "rebuffer_time": 0.0,
            "adaptation_rate": 20.0,
        },
        {"name": "f0", "kind": "bulk", "src": "server2", "dst": "client2", "goodput_bps": 12e6},
        {"name": "f1", "kind": "bulk", "src": "server3", "dst": "client3", "goodput_bps": 10e6},
        # An upstream bulk flow does not share the HAS flows' direction.
        {"name": "up", "kind": "bulk", "src": "client4", "dst": "server4", "goodput_bps": 50e6},
    ]
    out = measures.compute(_res(rows), ["has_bias", "has_playback_rate", "has_rebuffer", "has_adaptation_rate"])
    assert out["has_bias"] == pytest.approx(-20.0)
    assert out["has_playback_rate"] == pytest.approx(3.5)
    assert out["has_rebuffer"] == pytest.approx(0.5)
    assert out["has_adaptation_rate"] == pytest.approx(15.0)
    # All HAS demand satisfied below the fair share: bias 0.
    rows[0]["goodput_bps"] = 5e6
    rows[2]["goodput_bps"] = rows[3]["goodput_bps"] = 20e6
    assert measures.compute(_res(rows), ["has_bias"])["has_bias"] == pytest.approx(0.0)


def test_direction_from_host_names_and_goodput_by_direction():
    from aqmlab.result import direction

    assert [direction(h) for h in ("client3", "server0", "router_a", "cm0")] == ["up", "down", "other", "other"]
    r = _res([
        {"name": "u", "kind": "bulk", "src": "client0", "dst": "server0", "goodput_bps": 3e6},
        {"name": "d0", "kind": "bulk", "src": "server0", "dst": "client0", "goodput_bps": 5e6},
        {"name": "d1", "kind": "bulk", "src": "server1", "dst": "client1", "goodput_bps": 2e6},
    ])
    out = measures.compute(r, ["goodput_up", "goodput_down", "goodput_total"])
    assert out == {"goodput_up": 3e6, "goodput_down": 7e6, "goodput_total": 10e6}


def test_compute_unknown_is_an_error_absent_data_nan_bug_raises():
    r = _res([{"name": "b", "kind": "bulk", "src": "client0", "dst": "server0"}])
    with pytest.raises(ValueError, match="unknown measure 'goodput_sideways'"):
        measures.compute(r, ["goodput_sideways"])
    # data the run does not have: NaN (no VoIP flow, no such flow, a column of another kind)
    out = measures.compute(r, ["voip_r", "flow:nope.goodput_bps", "flow:b.r_value", "queue_delay_mean"])
    assert all(math.isnan(v) for v in out.values()), out
    # a column no run could have is a typo, not missing data
    with pytest.raises(measures.MeasureColumnError, match="no column 'no_such_col' in the flows table"):
        measures.compute(r, ["flow:b.no_such_col"])
    # tables that break a measure are not hidden behind NaN
    broken = SimpleNamespace(flows=pd.DataFrame({"name": ["b"]}), samples=r.samples, warmup=0.0, queues=r.queues)
    with pytest.raises(measures.MeasureError, match="measure 'goodput_up': KeyError"):
        measures.compute(broken, ["goodput_up"])


def test_new_measures_are_registered():
    names = ["page_time", "wrt_mean", "wrt_sd", "web_object_time", "has_playback_rate", "has_adaptation_rate", "has_rebuffer", "has_bias"]
    measures.validate(names)
    assert set(names) <= set(measures.describe())


SCENARIO = """
[run]
duration = "40s"
warmup = "5s"

[dumbbell]
pairs = 4
rate = "20Mbit"
delay = "20ms"
qdisc = { kind = "fq_codel" }

[[flow]]
kind = "rrul_be"
from = "client0"
to = "server0"
flows = 1

[[flow]]
kind = "web"
name = "web"
from = "client1"
to = "server1"

[[flow]]
kind = "wrt"
name = "wrt"
from = "client2"
to = "server2"
think = "1s"

[[flow]]
kind = "web_users"
name = "user"
count = 2
from = "client3"
to = "server3"
start_spread = "1s"

[[flow]]
kind = "has"
name = "video"
from = "client3"
to = "server3"
"""


@pytest.fixture(scope="module")
def apps():
    return aqmlab.run(SCENARIO, seed=1)


def test_workloads_listed_in_order():
    names = [k for k, _ in aqmlab.kinds("workloads")]
    assert names == ["bulk", "rrul", "rrul_be", "voip", "web", "wrt", "web_users", "has", "cbr", "ping", "udp_rr"]


def test_measures_of_a_real_run(apps):
    r = apps
    f = r.flows.set_index("name")
    assert list(r.flows["name"][:6]) == [
        "rrul_be0.tcp_up0",
        "rrul_be0.tcp_down0",
        "rrul_be0.udp_be1",
        "rrul_be0.udp_be2",
        "rrul_be0.udp_be3",
        "rrul_be0.icmp",
    ]
    out = measures.compute(
        r,
        [
            "page_time",
            "wrt_mean",
            "wrt_sd",
            "web_object_time",
            "has_playback_rate",
            "has_rebuffer",
            "has_bias",
            "goodput_up",
            "goodput_down",
            "induced_latency",
        ],
    )
    assert out["page_time"] == pytest.approx(f.loc["web", "page_time_mean"])
    assert 0.2 < out["page_time"] < 2.0
    assert out["wrt_mean"] == pytest.approx(f.loc["wrt", "response_time_mean"])
    assert out["wrt_sd"] == pytest.approx(f.loc["wrt", "response_time_sd"])
    assert 0.1 < out["wrt_mean"] < 1.0
    assert 0.05 < out["web_object_time"] < 2.0
    assert 0.5 <= out["has_playback_rate"] <= 5.0
    assert 0.0 <= out["has_rebuffer"] < 100.0
    assert math.isfinite(out["has_bias"])
    # RRUL's bulk flows are ordinary bulk flows: the direction measures see them.
    assert out["goodput_up"] == pytest.approx(f.loc["rrul_be0.tcp_up0", "goodput_bps"])
    assert out["goodput_down"] == pytest.approx(f.loc["rrul_be0.tcp_down0", "goodput_bps"])
    assert 0 <= out["induced_latency"] < 0.01
    # The per-event samples are in the long table.
    s = r.samples
    for entity, metric in [
        ("web", "page_time"),
        ("wrt", "response_time"),
        ("user0", "object_time"),
        ("video", "bitrate"),
        ("video", "buffer"),
    ]:
        assert ((s["entity"] == entity) & (s["metric"] == metric)).any(), (entity, metric)


def test_wifi_below_qdisc_latency_and_up_share_by_hand():
    # two WiFi interfaces (AP and station) and a wire: the WiFi rows' means add up
    res = _res(
        [
            {"kind": "bulk", "src": "server0", "goodput_bps": 30e6},
            {"kind": "bulk", "src": "client0", "goodput_bps": 10e6},
        ]
    )
    res.queues = pd.DataFrame(
        {
            "name": ["wifi_router_a", "wifi_client0", "bottleneck_up"],
            "lower": ["wifi", "wifi", "shaper"],
            "below_qdisc_mean": [0.030, 0.080, math.nan],
        }
    )
    assert measures.below_qdisc_latency(res) == pytest.approx(0.110)
    assert measures.up_share(res) == pytest.approx(10 / 40)
    res.queues = pd.DataFrame({"name": ["l"], "lower": ["wire"]})
    assert math.isnan(measures.below_qdisc_latency(res))


def test_wifi_below_qdisc_latency_of_a_real_run_is_the_ping_share_below_the_qdisc():
    # a saturated downlink with fq_codel: the ping's RTT beyond the base is mostly the
    # time below the qdiscs, which the measure reports
    toml = """
[run]
duration = "3s"
warmup = "1s"
noise = false
[dumbbell]
rate = "1Gbit"
delay = "1ms"
[dumbbell.wifi]
qdisc = { kind = "fq_codel" }
[[flow]]
kind = "cbr"
from = "server0"
to = "client0"
rate = "150Mbit"
[[flow]]
kind = "ping"
from = "client0"
to = "server0"
interval = "10ms"
"""
    r = aqmlab.run(toml)
    below = measures.below_qdisc_latency(r)
    induced = measures.induced_latency(r)
    assert 0.005 < below and below == pytest.approx(induced, rel=0.3), (below, induced)


def test_queue_measures_read_the_docsis_bottleneck_not_the_core_link_in_front_of_it():
    # A DOCSIS network names no link `bottleneck*`: its bottleneck is `docsis_down`. The
    # 1 Gbit/s `core->cmts` in front of it carries more bytes (it also carries what the
    # CMTS drops), so "most bytes" picked the core link and reported its ~0 s of queueing.
    toml = """
[run]
duration = "6s"
warmup = "2s"
noise = false
[docsis]
channels = 1
modems = 2
downstream_qdisc = { kind = "fifo", limit = 300 }
[[flow]]
kind = "bulk"
count = 2
from = "server{i}"
to = "cm{i}"
"""
    r = aqmlab.run(toml)
    q = r.queues.set_index("name")
    assert q.loc["core->cmts", "tx_bytes"] >= q.loc["docsis_down", "tx_bytes"]
    delay = measures.compute(r, ["queue_delay_mean"])["queue_delay_mean"]
    assert delay == pytest.approx(q.loc["docsis_down", "sojourn_mean"])
    # a full 300-packet FIFO at the channel's rate: tens of milliseconds, not microseconds
    assert delay > 0.02, delay


def test_without_bottleneck_names_the_link_nearest_its_capacity_is_the_bottleneck():
    res = _res([{"kind": "bulk", "src": "a", "goodput_bps": 1e6}])
    res.queues = pd.DataFrame(
        {
            "name": ["core", "edge"],
            "tx_bytes": [9e9, 1e9],
            "utilization": [0.05, 0.98],
            "rate_bps": [1e9, 10e6],
            "sojourn_mean": [1e-6, 0.040],
        }
    )
    assert measures.compute(res, ["queue_delay_mean"])["queue_delay_mean"] == pytest.approx(0.040)
    # a link named as a bottleneck wins over utilisation
    res.queues["name"] = ["bottleneck_down", "edge"]
    assert measures.compute(res, ["queue_delay_mean"])["queue_delay_mean"] == pytest.approx(1e-6)


def test_measures_sharing_rows_give_what_each_gives_alone():
    """goodput_up/goodput_down/up_share/goodput_total/jain share the TCP rows and sums of
    one Result: computed together they equal each computed on its own, and a namespace
    whose flows are replaced is measured on the new flows."""
    rows = [
        {"name": "u0", "kind": "bulk", "src": "client0", "dst": "server0", "goodput_bps": 3e6},
        {"name": "u1", "kind": "bulk", "src": "client1", "dst": "server0", "goodput_bps": 1.5e6},
        {"name": "d0", "kind": "bulk", "src": "server0", "dst": "client0", "goodput_bps": 5e6},
        {"name": "p", "kind": "ping", "src": "client0", "dst": "server0", "goodput_bps": 0.0},
    ]
    names = ["up_share", "goodput_up", "goodput_down", "goodput_total", "jain"]
    together = measures.compute(_res(rows), names)
    alone = {n: measures.compute(_res(rows), [n])[n] for n in names}
    assert together == alone
    assert together["up_share"] == 4.5e6 / 9.5e6 and together["goodput_down"] == 5e6
    r = _res(rows)
    assert measures.compute(r, ["goodput_up"]) == {"goodput_up": 4.5e6}
    r.flows = _res(rows[2:]).flows  # no upstream bulk flow left
    assert math.isnan(measures.compute(r, ["goodput_up"])["goodput_up"])
    assert measures.compute(r, ["goodput_down"]) == {"goodput_down": 5e6}


def test_probe_rtts_from_the_columns_are_the_samples_tables_rows(apps):
    """induced_latency and induced:SUFFIX select the probes' rtt samples after warm-up
    from the simulator's columns; the same values, in the same order, as selecting them
    from the samples table (what a namespace without those columns is measured on)."""
    r = apps
    table = SimpleNamespace(flows=r.flows, samples=r.samples, warmup=r.warmup, queues=r.queues)
    for suffix in (None, "udp_be1", "icmp", "no_such_probe"):
        got, base = measures._probe_rtts(r, suffix)
        want, want_base = measures._probe_rtts(table, suffix)
        assert got.dtype == want.dtype and np.array_equal(got, want), suffix
        assert base == want_base or (math.isnan(base) and math.isnan(want_base))
    assert measures._probe_rtts(r)[0].size > 100  # the probes did sample
    names = ["induced_latency", "induced:udp_be1", "induced:icmp"]
    assert measures.compute(r, names) == measures.compute(table, names)
    s = r.samples
    late = s[(s["metric"] == "rtt") & (s["t"] < r.warmup)]
    assert len(late)  # samples before warm-up exist and are left out
    assert measures._flow_rtts_of_columns(r, []).size == 0


def test_measures_from_the_simulators_columns_equal_those_from_the_tables():
    """A Result whose flows/queues DataFrames were not built gives its measures from the
    simulator's columns; every measure equals what the DataFrames give (the same float,
    not just close: the same rows summed in the same way), on two runs of each
    residential experiment (bulk TCP both ways, probes, VoIP, web, WiFi queues)."""
    from aqmlab import runner
    from aqmlab.result import Result
    from aqmlab.study import load_study

    study = load_study("residential", quick=True)
    names = list(measures.MEASURES)
    checked = set()
    for e in study.experiments:
        specs = [s for s in study.runs(only=[e.name]) if s.experiment == e.name and s.repetition == 0]
        for s in (specs[0], specs[-1]):
            d = runner._spec_to_dict(s)
            res = aqmlab.run(dict(d["scenario"], run=dict(d["scenario"]["run"], duration="2s", warmup="0.5s")), seed=s.seed)
            alone = {}
            built = Result(res._raw, res.scenario)
            built.flows, built.queues  # noqa: B018 - built: measured on the DataFrames
            for n in names + [m for m in e.measures if m not in names]:
                a = alone[n] = measures.compute(Result(res._raw, res.scenario), [n])[n]
                b = measures.compute(built, [n])[n]
                assert a == b or (math.isnan(a) and math.isnan(b)), (e.name, s.params, n, a, b)
                if not math.isnan(a):
                    checked.add(n)
            together = Result(res._raw, res.scenario)
            for n, a in measures.compute(together, e.measures).items():  # sharing rows and sums
                assert a == alone[n] or (math.isnan(a) and math.isnan(alone[n])), (e.name, n)
            if not any(":" in m for m in e.measures):  # a study's measures leave the DataFrames unbuilt
                assert "flows" not in vars(together) and "queues" not in vars(together), e.name
    # the measures with a path of their own all gave numbers somewhere
    assert {"goodput_up", "goodput_down", "up_share", "jain", "induced_latency", "voip_loss", "voip_owd", "voip_r",
            "page_time", "below_qdisc_latency"} <= checked
