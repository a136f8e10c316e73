"""Differentiated services in the lab: the studies' DSCP variants (optional experiments
run with --only), Flent's real RRUL in the Flent export, and the measures that read
per-class probes."""
from __future__ import annotations

import math

import pytest

import aqmlab
from aqmlab import measures
from aqmlab.study import StudyError, load_study, parse_study


@pytest.mark.parametrize("name", ["residential", "edge-router"])
def test_diffserv_variant_is_optional_and_runs_real_rrul_and_pfifo_fast(name):
    st = load_study(name, quick=True)
    exp = st.experiment("rrul-diffserv")
    assert exp.optional
    # the default run is the paper's: no variant runs, no findings about it
    default = st.restricted(None)
    assert "rrul-diffserv" not in [e.name for e in default.experiments]
    assert all(r.experiment != "rrul-diffserv" for r in st.runs())
    # named with --only it runs like any experiment
    only = st.restricted(["rrul-diffserv"])
    runs = only.runs()
    assert runs and {r.experiment for r in runs} == {"rrul-diffserv"}
    kinds = {f["kind"] for r in runs for f in r.scenario["flow"]}
    assert kinds == {"rrul"}
    pf = [r for r in runs if r.params.get("qdisc", r.params.get("scheme")) == "pfifo_fast"]
    assert pf and all(r.scenario["dumbbell"]["qdisc"]["kind"] == "pfifo_fast" for r in pf)
    for r in runs:  # every scenario of the variant validates
        aqmlab.validate(r.scenario)
    # and the default experiments still mean the all-best-effort RRUL they always ran
    base = [f for r in st.runs() if r.experiment == "rrul" for f in r.scenario["flow"]]
    assert base and {f["kind"] for f in base} == {"rrul_be"}


def test_residential_variant_runs_and_measures_each_class():
    st = load_study("residential", quick=True).restricted(["rrul-diffserv"])
    spec = next(r for r in st.runs() if r.params == {"qdisc": "pfifo_fast", "link": "10/10"})
    scen = dict(spec.scenario, run=dict(spec.scenario["run"], duration="6s"))
    res = aqmlab.run(scen, seed=1)
    names = set(res.flows["name"])
    assert {"rrul0.udp_ef", "rrul0.udp_bk", "rrul0.udp_be", "rrul0.icmp", "rrul0.tcp_up3"} <= names
    m = measures.compute(res, st.experiment("rrul-diffserv").measures)
    for k in ("induced:udp_ef", "induced:udp_bk", "induced:udp_be", "induced:icmp", "induced_latency"):
        assert math.isfinite(m[k]) and m[k] > 0, (k, m[k])
    # pfifo_fast puts EF, CS1 and best effort in the same band: no class is served first,
    # so the EF probe waits about as long as the best-effort one (a 127-packet FIFO at
    # 10 Mbit/s holds up to 154 ms)
    assert m["induced:udp_ef"] > 0.3 * m["induced:udp_be"]
    q = res.queues.set_index("name")
    assert q.loc["bottleneck_up", "band1_pkts"] == q.loc["bottleneck_up", "dequeued"]


def test_optional_must_be_a_boolean():
    text = """
[study]
name = "x"
[[experiment]]
name = "a"
optional = "yes"
"""
    with pytest.raises(StudyError, match=r"experiment\[0\]\.optional"):
        parse_study(text)


def test_mos_from_r_follows_g107_annex_b():
    # B-4: MOS = 1 + 0.035 R + R (R - 60)(100 - R) 7e-6; R = 93.2 (G.107 default) → 4.41
    assert measures.mos_from_r(93.2) == pytest.approx(1 + 0.035 * 93.2 + 93.2 * 33.2 * 6.8 * 7e-6)
    assert measures.mos_from_r(93.2) == pytest.approx(4.41, abs=0.005)
    assert measures.mos_from_r(50) == pytest.approx(1 + 1.75 - 50 * 10 * 50 * 7e-6)
    assert measures.mos_from_r(-3) == 1.0 and measures.mos_from_r(120) == 4.5
    assert math.isnan(measures.mos_from_r(math.nan))
    measures.validate(["induced:udp_ef", "voip_mos", "induced_ratio:udp_ef/udp_be"])
    with pytest.raises(ValueError):
        measures.validate(["induced:"])


def test_sqm_study_loads_validates_and_orders_the_setups():
    st = load_study("sqm", quick=True)
    runs = st.runs()
    assert {r.experiment for r in runs} == {"rrul", "voip"}
    for r in runs:
        aqmlab.validate(r.scenario)
    # the line: PTM payload rate with the pppoe-ptm framing on every packet
    db = runs[0].scenario["dumbbell"]
    assert db["overhead"] == 30 and db["down"]["rate"] == "19.69231Mbit"
    # a short RRUL per setup: SQM cuts the induced latency by orders of magnitude and
    # pfifo_fast serves the EF probe no sooner than the BE one
    got = {}
    for label in ("pfifo_fast", "fq_codel+htb"):
        spec = next(r for r in runs if r.experiment == "rrul" and r.params["qdisc"] == label and r.repetition == 0)
        scen = dict(spec.scenario, run=dict(spec.scenario["run"], duration="12s", warmup="4s"))
        got[label] = measures.compute(aqmlab.run(scen, seed=1), st.experiment("rrul").measures)
    assert got["fq_codel+htb"]["induced_latency"] < got["pfifo_fast"]["induced_latency"] / 10
    assert 0.7 < got["pfifo_fast"]["induced_ratio:udp_ef/udp_be"] < 1.3
