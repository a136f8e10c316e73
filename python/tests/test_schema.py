"""The result schema is declared once in the core (crates/aqmlab-core/src/result.rs); the
binding builds its columns from that declaration and the stub must agree with it."""

import ast
from pathlib import Path

import aqmlab
from aqmlab import _core

STUB = Path(aqmlab.__file__).with_name("_core.pyi")

SCENARIO = """
[run]
duration = "1s"
[dumbbell]
rate = "10Mbit"
delay = "5ms"
qdisc = { kind = "pie" }
[[flow]]
kind = "bulk"
from = "client0"
to = "server0"
"""


def _stub_class(name: str) -> dict[str, str]:
    tree = ast.parse(STUB.read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return {
                st.target.id: ast.unparse(st.annotation)
                for st in node.body
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)
            }
    raise AssertionError(f"{name} not in {STUB}")


def test_stub_raw_result_matches_declared_keys():
    declared = dict(_core.result_schema()["result"])
    assert _stub_class("RawResult") == declared


def test_run_returns_exactly_the_declared_keys_and_columns():
    schema = _core.result_schema()
    raw = _core.run(SCENARIO, 1, None)
    assert list(raw) == [k for k, _ in schema["result"]]
    types = {"int": int, "float": float, "str": str}
    fixed = schema["flows"]
    assert list(raw["flows"])[: len(fixed)] == [n for n, _, _ in fixed]
    for name, ty, _ in fixed:
        assert all(isinstance(v, types[ty]) for v in raw["flows"][name]), name
    q = list(raw["queues"])
    reasons = [f"drops_{r}" for r in schema["drop_reasons"]] + [f"marks_{r}" for r in schema["mark_reasons"]]
    tail = [n for n, _, _ in schema["queues_tail"]]
    want = [n for n, _, _ in schema["queues"]] + reasons + tail
    assert q[: len(want)] == want
    for name, ty, _ in schema["queues"] + schema["queues_tail"]:
        assert all(isinstance(v, types[ty]) for v in raw["queues"][name]), name
    assert raw["queues"]["qdisc"][0] in ("pie", "fifo")
