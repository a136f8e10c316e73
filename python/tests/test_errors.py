"""Bad input: every case gives a typed error naming the field, never a panic, a hang or
a traceback; from the CLI one line on stderr and exit status 2."""

from __future__ import annotations

import pickle

import pytest

import aqmlab
from aqmlab import _core

from conftest import BAD_INPUTS, FIFO_OVERLOAD

IDS = [b[0] for b in BAD_INPUTS]


@pytest.mark.parametrize("name,text,field,word", BAD_INPUTS, ids=IDS)
def test_cli_bad_input_one_line_error(cli, tmp_path, name, text, field, word):
    f = tmp_path / f"{name}.toml"
    f.write_text(text)
    p = cli("run", f, timeout=60)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stdout == ""
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in p.stderr and "panicked" not in p.stderr
    if field:
        assert lines[0].startswith(f"error: {field}: "), lines[0]
    assert word in lines[0]


@pytest.mark.parametrize("name", ["malformed-toml", "unknown-qdisc", "no-route"])
def test_cli_validate_reports_the_same_error(cli, tmp_path, name):
    text = next(b[1] for b in BAD_INPUTS if b[0] == name)
    f = tmp_path / f"{name}.toml"
    f.write_text(text)
    r, v = cli("run", f, timeout=60), cli("validate", f, timeout=60)
    assert v.returncode == r.returncode == 2
    assert v.stderr == r.stderr and v.stdout == ""


@pytest.mark.parametrize("name,text,field,word", BAD_INPUTS, ids=IDS)
def test_python_bad_input_raises_scenario_error(name, text, field, word):
    with pytest.raises(aqmlab.ScenarioError) as ei:
        aqmlab.run(text)
    e = ei.value
    assert e.field == field
    assert word in e.message
    assert isinstance(e, aqmlab.AqmlabError) and isinstance(e, ValueError)
    assert str(e) == (f"{field}: {e.message}" if field else e.message)
    with pytest.raises(aqmlab.ScenarioError) as ev:
        aqmlab.validate(text)
    assert ev.value.field == field


def test_scenario_error_pickles():
    e = aqmlab.ScenarioError("flow[0].to", "no route from 'a' to 'b'")
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is aqmlab.ScenarioError and back.field == e.field and back.message == e.message


def test_panic_becomes_simulation_error_and_python_survives(capfd):
    with pytest.raises(aqmlab.SimulationError) as ei:
        _core._debug_panic("boom in the core")
    assert "boom in the core" in str(ei.value) and "lib.rs" in str(ei.value)
    assert isinstance(ei.value, aqmlab.AqmlabError)
    # the panic hook captured the message: nothing printed on stderr
    assert "panicked" not in capfd.readouterr().err
    # the interpreter and the extension still work
    r = aqmlab.run(FIFO_OVERLOAD)
    assert r.flows.shape[0] == 1


@pytest.mark.parametrize("seed", [-1, 2**64, 1.5, "3", True])
def test_bad_seed(seed):
    with pytest.raises(aqmlab.ScenarioError) as ei:
        aqmlab.run(FIFO_OVERLOAD, seed=seed)
    assert ei.value.field == "seed"


def test_bad_source_types(tmp_path):
    with pytest.raises(aqmlab.ScenarioError, match="cannot read scenario file"):
        aqmlab.run(tmp_path / "missing.toml")
    with pytest.raises(aqmlab.ScenarioError, match="expected a scenario path"):
        aqmlab.run(42)  # type: ignore[arg-type]
    with pytest.raises(aqmlab.ScenarioError) as ei:
        aqmlab.run({"run": {"duration": object()}})
    assert ei.value.field == "run.duration"


def test_unknown_kind_in_describe_and_kinds():
    with pytest.raises(aqmlab.ScenarioError) as ei:
        aqmlab.describe("nope")
    assert ei.value.field == "kind" and "fifo" in ei.value.message
    with pytest.raises(aqmlab.ScenarioError):
        aqmlab.kinds("colours")


@pytest.mark.parametrize("text, field, hint", [
    ('[dumbbell]\nrate = "10Mbit"\n[run]\nduraton = "10s"\n', "run.duraton", "(did you mean `duration`?)"),
    ('[dumbbell]\nrate = "10Mbit"\nqdisc = { kind = "fiffo" }\n', "dumbbell.qdisc.kind", "(did you mean `fifo`?)"),
    ('[dumbbell]\nrate = "10Mbit"\nqdisc = { kind = "fq-codel" }\n', "dumbbell.qdisc.kind", "(did you mean `fq_codel`?)"),
    ('[dumbbell]\nrate = "10Mbit"\nqdisc = { kind = "cake", bandwith = "9Mbit" }\n', "dumbbell.qdisc.bandwith",
     "(did you mean `bandwidth`?)"),
    ('[dumbbell]\nrate = "10Mbit"\n[[flow]]\nkind = "bulk"\nfrom = "client0"\nto = "server0"\nstrat = "1s"\n', "flow[0].strat",
     "(did you mean `start`?)"),
    ('[dumbbell]\nrate = "10Mbit"\n[[flow]]\nkind = "bulk"\nfrom = "client0"\nto = "server0"\ntcp = { cc = "cubik" }\n',
     "flow[0].tcp.cc", "(did you mean `cubic`?)"),
])
def test_a_misspelt_key_or_kind_gets_the_closest_allowed_name(text, field, hint):
    """A typo in a key or a kind: the error names the closest allowed name next to the
    typo, before the list of what is allowed; a name close to nothing gets no guess, and
    the hint survives pickling unchanged (it is added once)."""
    with pytest.raises(aqmlab.ScenarioError) as e:
        aqmlab.validate(text)
    assert e.value.field == field and hint in e.value.message, e.value.message
    assert e.value.message.index(hint) < e.value.message.index("`", e.value.message.index(hint) + len(hint))
    again = pickle.loads(pickle.dumps(e.value))
    assert again.message == e.value.message and again.message.count("did you mean") == 1
    with pytest.raises(aqmlab.ScenarioError) as e:
        aqmlab.validate('[dumbbell]\nrate = "10Mbit"\nqdisc = { kind = "xyz" }\n')
    assert "did you mean" not in e.value.message


def test_describe_suggests_the_closest_kind():
    with pytest.raises(aqmlab.ScenarioError) as e:
        aqmlab.describe("fq-codel")
    assert e.value.message.startswith("unknown kind 'fq-codel', did you mean 'fq_codel'? (qdiscs: ")


@pytest.mark.parametrize("kind", ["fifo", "codel", "pie"])
def test_a_quoted_packet_limit_says_how_to_write_packets(kind):
    """`limit = "100"` is 100 bytes (a size), less than one MTU: the error says that a
    quoted number is bytes and how to write 100 packets; pickling keeps it once."""
    with pytest.raises(aqmlab.ScenarioError) as e:
        aqmlab.validate(f'[dumbbell]\nrate = "10Mbit"\nqdisc = {{ kind = "{kind}", limit = "100" }}\n')
    assert e.value.field == "dumbbell.qdisc.limit"
    assert "write limit = 100 without quotes for 100 packets" in e.value.message
    assert pickle.loads(pickle.dumps(e.value)).message.count("without quotes") == 1


def test_a_flow_beyond_the_dumbbells_pairs_says_how_many_pairs_it_needs():
    """`from = "client{i}"` with `count = 3` on a one-pair dumbbell: the unknown-node
    error says the dumbbell's hosts and that pairs must be at least 3, from a file (with
    its line) and from a dict (without)."""
    text = '[dumbbell]\nrate = "10Mbit"\n[[flow]]\nkind = "bulk"\nfrom = "client{i}"\nto = "server{i}"\ncount = 3\n'
    with pytest.raises(aqmlab.ScenarioError) as e:
        aqmlab.validate(text)
    assert e.value.field == "flow[0].from"
    assert e.value.message.startswith("unknown node 'client1' (known: ")
    assert e.value.message.endswith("; the [dumbbell] has pairs = 1 (hosts client0 and server0): set pairs = 3 or more (line 5)")
    import tomllib

    with pytest.raises(aqmlab.ScenarioError) as e:
        aqmlab.run(tomllib.loads(text.replace("count = 3", "count = 2")))
    assert e.value.message.endswith("set pairs = 2 or more")


def test_an_error_inside_the_first_table_of_an_array_names_its_own_line():
    """`byte = …` in the first [[flow]] is reported at its own line, not at the table's
    header; a key the table lacks (link[0] without rate) keeps the header's line rather
    than the next table's `rate = …`."""
    text = '[dumbbell]\nrate = "10Mbit"\n[[flow]]\nkind = "bulk"\nfrom = "client0"\nto = "server0"\nbyte = "10MB"\n'
    with pytest.raises(aqmlab.ScenarioError) as e:
        aqmlab.validate(text)
    assert e.value.field == "flow[0].byte" and e.value.message.endswith("(line 7)")
    text = ('[[node]]\nname = "a"\nkind = "host"\n[[node]]\nname = "b"\nkind = "host"\n'
            '[[link]]\nfrom = "a"\nto = "b"\n[[link]]\nfrom = "b"\nto = "a"\nrate = "1Mbit"\nduplex = false\n')
    with pytest.raises(aqmlab.ScenarioError) as e:
        aqmlab.validate(text)
    assert e.value.field == "link[0].rate" and e.value.message.endswith("(line 7)")


def test_a_duplicate_link_name_names_the_second_links_line():
    text = ('[[link]]\nfrom = "a"\nto = "r"\nrate = "10Mbit"\n[[link]]\nfrom = "a"\nto = "r"\nrate = "10Mbit"\n'
            '[[node]]\nname = "a"\nkind = "host"\n[[node]]\nname = "r"\nkind = "router"\n')
    with pytest.raises(aqmlab.ScenarioError) as e:
        aqmlab.validate(text)
    assert e.value.field == "link[1].name" and e.value.message.endswith("(line 5)")
