"""Shared helpers: the repository paths, a CLI runner and the bad-input scenarios."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
FIFO_OVERLOAD = EXAMPLES / "fifo_overload.toml"
PING_RTTS = EXAMPLES / "ping_rtts.toml"


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Runs `python -m aqmlab ARGS` (the same code as the `aqmlab` script) in a subprocess."""
    env = {k: v for k, v in os.environ.items() if k != "AQMLAB_DEBUG"}
    return subprocess.run([sys.executable, "-m", "aqmlab", *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture
def cli():
    return run_cli


# A scenario with randomness: three probes starting at random times within 1 s.
SPREAD = """
[run]
name = "spread"
duration = "3s"

[dumbbell]
pairs = 3
rate = "10Mbit"
delay = "5ms"

[[flow]]
kind = "ping"
count = 3
from = "client{i}"
to = "server{i}"
start_spread = "1s"
"""

_BASE = FIFO_OVERLOAD.read_text()

NO_ROUTE = """
[run]
duration = "1s"

[[node]]
name = "a"
kind = "host"

[[node]]
name = "b"
kind = "host"

[[node]]
name = "isolated"
kind = "host"

[[node]]
name = "r"
kind = "router"

[[link]]
from = "a"
to = "r"
rate = "10Mbit"

[[link]]
from = "b"
to = "r"
rate = "10Mbit"

[[flow]]
kind = "ping"
from = "a"
to = "isolated"
"""


def _sub(old: str, new: str) -> str:
    assert old in _BASE, old
    return _BASE.replace(old, new, 1)


# (id, scenario text, expected ScenarioError.field, a word the message must contain)
BAD_INPUTS = [
    ("malformed-toml", "[run\nduration = \"1s\"\n", "", "line 1"),
    ("unknown-qdisc", _sub('kind = "fifo"', 'kind = "fiffo"'), "dumbbell.qdisc.kind", "fiffo"),
    ("negative-rate", _sub('rate = "10Mbit"', 'rate = "-10Mbit"'), "dumbbell.rate", "-10Mbit"),
    ("zero-rate", _sub('rate = "10Mbit"', 'rate = "0Mbit"'), "dumbbell.rate", "positive"),
    ("zero-rate-number", _sub('rate = "10Mbit"', "rate = 0"), "dumbbell.rate", "positive"),
    ("unknown-unit", _sub('delay = "10ms"', 'delay = "10 fortnights"'), "dumbbell.delay", "fortnights"),
    ("unknown-rate-unit", _sub('rate = "20Mbit"', 'rate = "20Mbyte"'), "flow[0].rate", "Mbyte"),
    ("no-route", NO_ROUTE, "flow[0].to", "no route"),
    ("unknown-key", _sub("pairs = 1", 'pairs = 1\ncolour = "red"'), "dumbbell.colour", "colour"),
    ("unknown-flow-key", _sub("size = 1500", "size = 1500\nburst = 3"), "flow[0].burst", "common keys"),
    ("warmup-too-long", _sub('warmup = "2s"', 'warmup = "30s"'), "run.warmup", "shorter"),
]
