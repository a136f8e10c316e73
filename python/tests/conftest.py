"""Shared helpers: repository paths, a CLI runner, the bad-input scenarios, and one
synthetic result store per test session (see synthstore.py)."""

from __future__ import annotations

import os
import pathlib
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import synthstore  # noqa: E402

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


@pytest.fixture(scope="session")
def synth_dir(tmp_path_factory) -> pathlib.Path:
    d = tmp_path_factory.mktemp("synth") / "store"
    synthstore.write_store(d)
    return d


@pytest.fixture(scope="session")
def synth(synth_dir):
    from aqmlab import store

    return store.load(synth_dir)


@pytest.fixture(scope="session")
def synth_study(synth):
    from aqmlab.study import parse_study

    return parse_study(synth.study_text)


def png_pixels(path: pathlib.Path) -> tuple[int, int, bytes]:
    """(width, height, decompressed scanlines) of a PNG, without PIL."""
    data = pathlib.Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, idat = 8, b""
    w = h = 0
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + n]
        if typ == b"IHDR":
            w, h = struct.unpack(">II", body[:8])
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    return w, h, zlib.decompress(idat)


def assert_nontrivial_png(path: pathlib.Path, min_bytes: int = 5000, min_size: tuple[int, int] = (200, 150)) -> None:
    """The file is a PNG of a reasonable size whose pixels are not all one colour."""
    p = pathlib.Path(path)
    assert p.exists(), f"{p} was not written"
    assert p.stat().st_size >= min_bytes, f"{p} is only {p.stat().st_size} bytes"
    w, h, raw = png_pixels(p)
    assert w >= min_size[0] and h >= min_size[1], f"{p} is {w}x{h}"
    try:
        from PIL import Image

        with Image.open(p) as im:
            colours = im.convert("RGB").getcolors(maxcolors=1 << 20)
        assert colours is None or len(colours) > 8, f"{p} has only {len(colours)} colours"
    except ImportError:
        # scanline bytes of a one-colour image repeat one row: require variety
        rows = {raw[i : i + 1 + w * 3] for i in range(0, len(raw), 1 + w * 3)}
        assert len(rows) > 8, f"{p} looks blank ({len(rows)} distinct rows)"
