"""Qdisc time constants written as bare numbers above 1 (``target = 5`` is 5 seconds)
are warned about like link delays, by `validate`, `run` and the Python API; values
with a unit, and bare numbers up to 1 s, are not."""
from __future__ import annotations

import aqmlab

from conftest import run_cli

SCENARIO = """\
[run]
duration = "1s"
[dumbbell]
rate = "10Mbit"
qdisc = { kind = "codel", target = 5, interval = 0.1 }
up = { qdisc = { kind = "pie", target = "15ms", tupdate = 2 } }
[[flow]]
kind = "ping"
from = "client0"
to = "server0"
"""


def test_bare_qdisc_times_above_a_second_warn(tmp_path):
    want = ['dumbbell.qdisc.target: 5 is 5 s — a unit mistake? A bare number is seconds; write e.g. "5ms"',
            'dumbbell.up.qdisc.tupdate: 2 is 2 s — a unit mistake? A bare number is seconds; write e.g. "2ms"']
    assert [w for w in aqmlab.validate(SCENARIO)["warnings"] if "qdisc" in w] == want
    assert [w for w in aqmlab.run(SCENARIO).warnings if "qdisc" in w] == want
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO)
    r = run_cli("validate", str(f))
    assert r.returncode == 0 and "warning: dumbbell.qdisc.target: 5 is 5 s" in r.stdout
    r = run_cli("run", str(f))
    assert r.returncode == 0 and "warning: dumbbell.up.qdisc.tupdate: 2 is 2 s" in r.stderr
    # interval = 0.1 (100 ms as a bare number) and "15ms" are fine
    assert not [w for w in aqmlab.validate(SCENARIO)["warnings"] if "interval" in w or "up.qdisc.target" in w]


def test_type_errors_are_in_plain_words():
    import pytest

    base = '[run]\nduration = "1s"\n[dumbbell]\nrate = "10Mbit"\n'
    cases = {
        'pairs = "x"': 'dumbbell.pairs: "x" is text, not a whole number from 0 to 4294967295 (line 5)',
        "pairs = 1.5": "dumbbell.pairs: 1.5 is not a whole number from 0 to 4294967295 (line 5)",
        "pairs = -1": "dumbbell.pairs: -1 is negative, not a whole number from 0 to 4294967295 (line 5)",
        "mtu = true": "dumbbell.mtu: true is true/false, not a whole number from 0 to 4294967295 (line 5)",
    }
    for line, want in cases.items():
        with pytest.raises(aqmlab.ScenarioError) as ei:
            aqmlab.validate(base + line + "\n")
        assert str(ei.value) == want
        assert "u32" not in str(ei.value)


def test_semantic_errors_name_the_files_line_and_print_durations_plainly(tmp_path):
    text = ('[run]\nduration = "1s"\n[dumbbell]\nrate = "10Mbit"\nup = { qdisc = { kind = "pie", target = "15s" } }\n'
            '[[flow]]\nkind = "ping"\nfrom = "client0"\nto = "server0"\n'
            '[[flow]]\nkind = "cbr"\nfrom = "client0"\nto = "server0"\nrate = "1Mbit"\n')
    f = tmp_path / "s.toml"
    f.write_text(text)
    r = run_cli("validate", str(f))
    assert r.returncode == 2
    assert r.stderr.strip() == "error: dumbbell.up.qdisc.target: 15s is not allowed (more than 0 and at most 10s) (line 5)"
    # a key of the second [[flow]] is at its own line, not at the first [[flow]] header
    f.write_text(text.replace('target = "15s"', 'target = "15ms"').replace('rate = "1Mbit"', 'rate = "-1Mbit"'))
    r = run_cli("validate", str(f))
    assert r.returncode == 2 and r.stderr.strip() == "error: flow[1].rate: rate '-1Mbit' must be positive (line 14)"


CAKE_ABOVE = """\
[run]
duration = "1s"
[dumbbell]
rate = "10Mbit"
up = { qdisc = { kind = "cake", bandwidth = "50Mbit" } }
down = { qdisc = { kind = "cake", bandwidth = "9.5Mbit" } }
[[node]]
name = "lan0"
kind = "host"
[[link]]
name = "lan"
from = "lan0"
to = "router_a"
rate = "100Mbit"
qdisc = { kind = "cake", bandwidth = "200Mbit" }
[[flow]]
kind = "ping"
from = "client0"
to = "server0"
"""


def test_a_cake_bandwidth_above_its_link_rate_warns(tmp_path):
    """CAKE shaping above its link's rate never holds traffic back (the mistake of
    shaping at the advertised speed): validate, run and the CLI warn, naming the key and
    the link; a bandwidth below the link rate does not warn."""
    want = [
        "dumbbell.up.qdisc.bandwidth: CAKE's bandwidth 50Mbit is above the link rate of bottleneck_up (10Mbit)",
        "link[0].qdisc.bandwidth: CAKE's bandwidth 200Mbit is above the link rate of lan (100Mbit)",
    ]
    text = CAKE_ABOVE
    for warnings in (aqmlab.validate(text)["warnings"], aqmlab.run(text).warnings):
        cake = [w for w in warnings if "CAKE" in w]
        assert [w.split(":", 1)[0] + ":" + w.split(":", 1)[1].split(":")[0] for w in cake] == want, cake
        assert all("never holds traffic back" in w for w in cake)
    f = tmp_path / "s.toml"
    f.write_text(text)
    r = run_cli("validate", str(f))
    assert r.returncode == 0 and "warning: dumbbell.up.qdisc.bandwidth: CAKE's bandwidth 50Mbit" in r.stdout + r.stderr
