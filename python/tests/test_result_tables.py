"""Result's JSON rows, meta.json and summary tables built a column at a time equal what the
per-value conversion (NaN and ±inf to None, NumPy scalars to Python) and the untruncated
table give."""
from __future__ import annotations

import io
import json
import math
import re

import numpy as np
import pytest
from rich.console import Console

import aqmlab
from aqmlab import result as R


def _reference_records(cols):
    keys = list(cols)
    n = len(cols[keys[0]]) if keys else 0
    return [{k: R._nan_to_none(cols[k][i]) for k in keys} for i in range(n)]


def _typed(rows):
    return [[(k, type(v).__name__, v) for k, v in r.items()] for r in rows]


def test_records_equal_the_per_value_conversion():
    cols = {
        "f": [1.5, math.nan, math.inf, -math.inf, 0.0],
        "i": [1, 2, 3, 4, 5],
        "s": ["a", "b", "c", "d", "e"],
        "b": [True, False, True, False, True],
        "mixed": [np.float64(2.0), np.float64("nan"), np.int64(7), None, "x"],
        "npf": np.array([1.0, np.nan, -np.inf, 3.25, 0.5]),
        "npi": np.array([1, 2, 3, 4, 5], dtype=np.int64),
        "npb": np.array([True, False, True, True, False]),
        "npo": np.array(["p", None, 1.5, math.nan, 2], dtype=object),
    }
    got, want = R._records(cols), _reference_records(cols)
    assert _typed(got) == _typed(want)
    assert got[1]["f"] is None and got[2]["npf"] is None and got[3]["npo"] is None
    assert R._records({}) == []


@pytest.fixture(scope="module")
def many_links(tmp_path_factory):
    # 30 pairs, one CBR flow each: 122 links carry traffic (more than a table shows)
    text = ('[run]\nduration = "1s"\nseed = 2\n[dumbbell]\npairs = 30\nrate = "10Mbit"\n'
            '[[flow]]\nkind = "ping"\ncount = 30\nfrom = "client{i}"\nto = "server{i}"\ninterval = "100ms"\n')
    return aqmlab.run(aqmlab.load_scenario(text))


def test_json_and_meta_equal_the_per_value_conversion(many_links, tmp_path):
    r = many_links
    d = r.to_json_dict()
    assert _typed(d["flows"]) == _typed(_reference_records(r._raw["flows"]))
    assert _typed(d["queues"]) == _typed(_reference_records(r._raw["queues"]))
    assert list(d)[:9] == ["aqmlab_version", "scenario", "seed", "duration", "warmup", "bin", "flows", "queues", "probes"]
    json.dumps(d, allow_nan=False)
    meta = json.loads((r.write_parquet(tmp_path / "out") / "meta.json").read_text())
    files = meta.pop("files")
    assert "flows.parquet" in files
    assert meta == {k: v for k, v in d.items() if k not in ("flows", "queues", "probes")}


def _render(res, **kw) -> list[str]:
    buf = io.StringIO()
    Console(file=buf, width=250, highlight=False).print(res.summary_table(**kw))
    return buf.getvalue().splitlines()


def test_truncated_link_table_is_the_head_of_the_full_one(many_links):
    full = _render(many_links, max_rows=None)
    cut = _render(many_links)
    link_rows = [ln for ln in full if re.match(r"\S+->\S+ |bottleneck_", ln)]
    busy = sum(1 for a in many_links.queues["arrivals"] if a > 0)
    assert len(link_rows) == busy == 122
    cut_rows = [ln for ln in cut if re.match(r"\S+->\S+ |bottleneck_", ln)]
    assert cut_rows == link_rows[:50]
    assert f"… and {busy - 50} more links (--all shows every row)" in "\n".join(cut)


def test_dedup_codes_in_first_appearance_order():
    names = ["b", "a", "b", "c", "a", "a"]
    cats, codes = R.dedup_names(names)
    assert cats == ["b", "a", "c"]
    assert codes.dtype == np.int64 and codes.tolist() == [0, 1, 0, 2, 1, 1]
    assert [cats[c] for c in codes] == names
    cats, codes = R.dedup_names([])
    assert cats == [] and len(codes) == 0
