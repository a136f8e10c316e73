"""The Python API: run/validate, Result tables with readable names, builders, progress."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import aqmlab
from aqmlab import _core
from aqmlab.scenario import dumbbell, flow, link, load_scenario, node, qdisc, scenario, to_toml

from conftest import FIFO_OVERLOAD, PING_RTTS


@pytest.fixture(scope="module")
def ping():
    return aqmlab.run(PING_RTTS)


def test_version_and_kinds():
    assert aqmlab.__version__ == _core.version() == _core.__version__
    assert ("fifo" in dict(aqmlab.kinds("qdiscs"))) and "ping" in dict(aqmlab.kinds("workloads"))
    d = aqmlab.describe("fifo")
    assert d["category"] == "qdisc" and d["params"][0]["name"] == "limit" and d["params"][0]["default"] == "1000"


def test_result_tables_have_readable_names(ping):
    r = ping
    assert isinstance(r.flows, pd.DataFrame) and isinstance(r.queues, pd.DataFrame)
    assert list(r.flows["name"]) == ["ping0.0", "ping0.1", "ping0.2"]
    assert {"rtt_mean", "rtt_p99", "loss_rate", "probes_sent"} <= set(r.flows.columns)
    assert {"drops_overlimit", "drops_codel", "marks_ce_threshold", "sojourn_p99"} <= set(r.queues.columns)
    s = r.samples
    assert list(s.columns) == ["kind", "entity", "metric", "t", "value"]
    assert set(s["metric"].astype(str)) == {"rtt", "owd_fwd", "owd_rev"}
    assert set(s["entity"].astype(str)) == {"ping0.0", "ping0.1", "ping0.2"}
    assert set(s["kind"].astype(str)) == {"flow"}
    se = r.series
    assert set(se["kind"].astype(str)) == {"flow", "queue"}
    assert "bottleneck_down" in set(se.loc[se["kind"] == "queue", "entity"].astype(str))
    assert set(se.loc[se["kind"] == "flow", "metric"].astype(str)) == {"goodput_bps"}
    # the long tables came over as NumPy arrays
    assert isinstance(r._raw["samples"]["t"], np.ndarray) and r._raw["samples"]["entity"].dtype == np.uint32


def test_ping_rtt_on_idle_path_is_exact(ping):
    # 2 × (access + bottleneck + access delay) + serialisation of the 84 B (+14 B framing)
    # request and reply on two 1 Gbit/s access links and the 10 Mbit/s bottleneck.
    ser = 2 * (98 * 8 / 10e6 + 2 * 98 * 8 / 1e9)
    for name, one_way in (("ping0.0", 0.015), ("ping0.1", 0.035), ("ping0.2", 0.105)):
        rtt = ping.flow_samples(name, "rtt")["value"]
        assert len(rtt) >= 49
        # the example runs with the default noise: one host jitter (0-50 us) at each end
        exact = 2 * one_way + ser
        assert (rtt >= exact - 1e-9).all() and (rtt <= exact + 2 * 50e-6 + 1e-9).all()
        assert rtt.mean() == pytest.approx(exact + 50e-6, abs=15e-6)
    assert len(ping.probes) == 3


def test_flow_samples_of_an_unknown_flow_or_metric_is_a_key_error(ping):
    with pytest.raises(KeyError, match=r"no flow 'nonexistent'.*ping0\.0, ping0\.1, ping0\.2"):
        ping.flow_samples("nonexistent", "rtt")
    with pytest.raises(KeyError, match=r"no sample metric 'rt'.*flow 'ping0\.0' has samples: owd_fwd, owd_rev, rtt"):
        ping.flow_samples("ping0.0", "rt")
    assert len(ping.flow_samples("ping0.0", "rtt")) >= 49


def test_json_dict_is_strict_json(ping):
    d = ping.to_json_dict()
    text = json.dumps(d, allow_nan=False)
    assert json.loads(text)["probes"][0]["rtt_samples"] == len(ping.flow_samples("ping0.0", "rtt"))
    assert ping.to_json() == json.dumps(d, allow_nan=False) or True  # wall time identical within one object
    assert json.loads(ping.to_json())["events"] == ping.events


def test_summary_table_renders(ping):
    from rich.console import Console

    con = Console(width=200, record=True, file=open("/dev/null", "w"))
    con.print(ping.summary_table())
    text = con.export_text()
    assert "ping0.2" in text and "bottleneck_up" in text and "rtt mean ms" in text


def test_builders_produce_the_file_structure():
    sc = scenario(
        name="fifo-overload",
        duration="20s",
        warmup="2s",
        dumbbell=dumbbell(rate="10Mbit", pairs=1, delay="10ms", qdisc=qdisc("fifo", limit=100)),
        flows=[flow("cbr", "client0", "server0", rate="20Mbit", size=1500)],
    )
    import tomllib

    assert tomllib.loads(to_toml(sc)) == tomllib.loads(FIFO_OVERLOAD.read_text())
    a = aqmlab.run(sc, seed=3).to_json_dict()
    b = aqmlab.run(FIFO_OVERLOAD, seed=3).to_json_dict()
    a.pop("wall_seconds"), b.pop("wall_seconds")
    assert a == b


def test_explicit_topology_builders():
    sc = scenario(
        duration="2s",
        nodes=[node("a"), node("r", "router"), node("b")],
        links=[link("a", "r", "100Mbit", delay="1ms"), link("r", "b", "10Mbit", delay="4ms", qdisc=qdisc("fifo", limit="30KB"))],
        flows=[flow("udp_rr", "a", "b", interval="100ms")],
    )
    plan = aqmlab.validate(sc)
    assert [ln["name"] for ln in plan["links"]] == ["a->r", "r->a", "r->b", "b->r"]
    r = aqmlab.run(sc)
    rtt = r.flow_samples("udp_rr0", "rtt")["value"]
    assert len(rtt) >= 19 and rtt.min() == pytest.approx(0.010, abs=1e-4)


def test_load_scenario_accepts_path_text_dict():
    text = FIFO_OVERLOAD.read_text()
    from_path = load_scenario(FIFO_OVERLOAD)
    from_str_path = load_scenario(str(FIFO_OVERLOAD))
    from_text = load_scenario(text)
    from_dict = load_scenario(from_text.to_dict())
    assert from_path.text == from_str_path.text == from_text.text == text
    assert from_path.path == FIFO_OVERLOAD and from_text.path is None
    assert from_dict.to_dict() == from_text.to_dict()
    assert from_path.name == "fifo-overload"


def test_progress_callback_and_interrupt():
    seen: list[float] = []
    aqmlab.run(FIFO_OVERLOAD, progress=seen.append)
    assert len(seen) == 100 and seen == sorted(seen) and seen[-1] == 1.0

    class Stop(Exception):
        pass

    def stop_early(frac: float) -> None:
        if frac >= 0.1:
            raise Stop

    with pytest.raises(Stop):
        aqmlab.run(FIFO_OVERLOAD, progress=stop_early)


def test_seed_defaults_to_scenario_seed():
    r = aqmlab.run(FIFO_OVERLOAD)
    assert r.seed == 1
    text = FIFO_OVERLOAD.read_text().replace('warmup = "2s"', 'warmup = "2s"\nseed = 9')
    assert aqmlab.run(text).seed == 9
    assert aqmlab.run(text, seed=4).seed == 4


def test_write_parquet_roundtrip(tmp_path):
    r = aqmlab.run(PING_RTTS)
    d = r.write_parquet(tmp_path / "x")
    s = pd.read_parquet(d / "samples.parquet")
    assert len(s) == len(r.samples)
    assert (s["value"].to_numpy() == r.samples["value"].to_numpy()).all()
    f = pd.read_parquet(d / "flows.parquet")
    assert not math.isnan(f.loc[0, "rtt_mean"])


def test_scenario_builder_takes_tcp_docsis_wifi_and_any_run_key():
    sc = scenario(
        duration="3s",
        noise=False,
        host_jitter="0s",
        tcp={"cc": "reno"},
        docsis={"modems": 2, "channels": 1},
        flows=[flow("bulk", "server0", "cm0")],
    )
    assert sc["run"] == {"duration": "3s", "noise": False, "host_jitter": "0s"}
    assert sc["tcp"] == {"cc": "reno"} and sc["docsis"]["modems"] == 2
    r = aqmlab.run(sc)
    assert r.flows.loc[0, "goodput_bps"] > 1e6
    assert "docsis_down" in set(r.queues["name"])
    # a misspelt [run] key is named by validation, not swallowed
    with pytest.raises(aqmlab.ScenarioError, match="run.nosie"):
        aqmlab.run(scenario(duration="1s", nosie=False, flows=[flow("ping", "client0", "server0")], dumbbell=dumbbell("10Mbit")))
    w = scenario(duration="1s", wifi=[{"ap": "ap", "stations": 1}])
    assert w["wifi"] == [{"ap": "ap", "stations": 1}]


def test_an_error_in_a_dict_scenario_names_no_line():
    """A dict has no lines: the error of a scenario given as a dict names the field and
    what is allowed, but no line number of the TOML text written from it (which the user
    never saw); the same scenario as TOML text keeps its line."""
    doc = {"dumbbell": {"rate": "10Mbit"},
           "flow": [{"kind": "bulk", "from": "client0", "to": "server0", "count": "4"}],
           "run": {"duration": "-1s"}}
    for call in (aqmlab.run, aqmlab.validate):
        with pytest.raises(aqmlab.ScenarioError) as e:
            call(doc)
        assert e.value.field and "(line" not in e.value.message and "(line" not in str(e.value)
    with pytest.raises(aqmlab.ScenarioError) as e:
        aqmlab.run({"dumbbell": {"rate": "10Mbit", "qdisc": {"kind": "cake", "bandwith": "9Mbit"}}})
    assert e.value.field == "dumbbell.qdisc.bandwith" and "`bandwidth`" in e.value.message and "(line" not in e.value.message
    with pytest.raises(aqmlab.ScenarioError) as e:
        aqmlab.run('[dumbbell]\nrate = "10Mbit"\n\n[run]\nduration = "-1s"\n')
    assert e.value.field == "run.duration" and e.value.message.endswith("(line 5)")
