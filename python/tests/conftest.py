"""Shared fixtures: one synthetic result store per test session (see synthstore.py)."""
from __future__ import annotations

import pathlib
import struct
import sys
import zlib

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import synthstore  # noqa: E402


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
