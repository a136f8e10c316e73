"""The engine registry (aqmlab.engines): every engine answers available/check/run, refuses
what it cannot express before anything runs, and returns the simulator's tables."""

import math

import pytest

import aqmlab
from aqmlab import _core, engines, schema

SCENARIO = """
[run]
duration = "3s"
warmup = "1s"
[dumbbell]
pairs = 2
rate = "10Mbit"
delay = "5ms"
qdisc = { kind = "fifo", limit = 50 }
[[flow]]
kind = "bulk"
count = 2
from = "client{i}"
to = "server{i}"
[[flow]]
kind = "ping"
from = "client0"
to = "server0"
[[flow]]
kind = "cbr"
from = "client1"
to = "server1"
rate = "1Mbit"
"""


def core_columns() -> tuple[list[str], list[str]]:
    """(flows, queues) columns the core declares."""
    sc = _core.result_schema()
    flows = [n for n, _, _ in sc["flows"]]
    queues = [n for n, _, _ in sc["queues"]] + [f"drops_{r}" for r in sc["drop_reasons"]] + [f"marks_{r}" for r in sc["mark_reasons"]] + [n for n, _, _ in sc["queues_tail"]]
    return flows, queues


def assert_core_columns(r) -> None:
    flows, queues = core_columns()
    missing_f = [c for c in flows if c not in r.flows.columns]
    missing_q = [c for c in queues if c not in r.queues.columns]
    assert not missing_f and not missing_q, (missing_f, missing_q)


def test_registry_lists_the_engines_and_each_answers_the_three_questions():
    assert list(engines.ENGINES)[:1] == ["sim"]
    assert {"sim", "linux", "ns2", "ns3"} <= set(engines.ENGINES)
    for name, eng in engines.ENGINES.items():
        assert eng.name == name
        msg = eng.available()
        assert msg is None or (isinstance(msg, str) and name in msg), (name, msg)
        assert isinstance(eng.check(SCENARIO), list)
    assert engines.ENGINES["sim"].available() is None
    assert engines.ENGINES["sim"].check(SCENARIO) == []


def test_unknown_engine_names_the_allowed_ones():
    with pytest.raises(aqmlab.ScenarioError) as e:
        engines.get("ns4")
    assert e.value.field == "engine" and "ns2" in e.value.message and "linux" in e.value.message


def test_check_names_the_key_and_the_engine():
    wifi = SCENARIO.replace('qdisc = { kind = "fifo", limit = 50 }', 'qdisc = { kind = "fifo", limit = 50 }\nwifi = {}')
    bad = engines.ENGINES["linux"].check(wifi)
    assert bad and bad[0].startswith("dumbbell.wifi:") and "linux engine" in bad[0]


def test_a_scenario_the_simulator_rejects_is_an_error_for_every_engine():
    for eng in engines.ENGINES.values():
        with pytest.raises(aqmlab.ScenarioError):
            eng.check(SCENARIO.replace('rate = "10Mbit"', 'rate = "fast"'))


def test_sim_engine_result_has_the_core_columns():
    r = engines.ENGINES["sim"].run(SCENARIO, seed=1)
    assert_core_columns(r)
    assert r.engine_info["engine"] == "sim"


def test_flow_kind_columns_are_the_simulators():
    """schema.FLOW_KIND_COLUMNS, the per-kind summary columns engines fill, are those the
    simulator gives each kind (the core declares only the fixed ones)."""
    r = aqmlab.run(SCENARIO, seed=1)
    fixed = core_columns()[0]
    extra = [c for c in r.flows.columns if c not in fixed]
    for kind in ("bulk", "ping", "cbr"):
        rows = r.flows[r.flows["kind"] == kind]
        have = [c for c in extra if rows[c].notna().any()]
        # every column the simulator fills for the kind is listed
        assert set(have) <= set(schema.FLOW_KIND_COLUMNS[kind]), (kind, have)
    # and every listed column is one the simulator has
    for kind, cols in schema.FLOW_KIND_COLUMNS.items():
        if kind in ("bulk", "ping", "cbr"):
            assert set(cols) <= set(extra), kind


def test_linux_result_building_has_the_core_columns(tmp_path):
    """The Linux engine's tables from a guest that left nothing but its start time: every
    core column is there, the counters it could not read are NaN, the drop reasons are
    the core's (not a hand copy)."""
    from aqmlab.linux.engine import collect
    from aqmlab.linux.translate import translate

    sc = aqmlab.load_scenario(SCENARIO)
    tr = translate(sc.to_dict(), sc.validate())
    (tmp_path / "times").write_text("t0 100.0\nend 103.0\n")
    raw, info = collect(tmp_path, tr, seed=1, wall_seconds=1.0)
    r = aqmlab.Result(raw, sc)
    assert_core_columns(r)
    assert list(r.queues.columns) == core_columns()[1]
    assert math.isnan(r.queues["sojourn_mean"].iloc[0])
    assert info["engine"] == "linux"
