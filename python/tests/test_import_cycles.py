"""scripts/import_cycles.py: it finds a cycle that a parent module closes through one of
its children, and the real trees have none."""

from __future__ import annotations

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _checker():
    spec = importlib.util.spec_from_file_location("import_cycles", ROOT / "scripts/import_cycles.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _plant(src: pathlib.Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = src / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


# A registry in a parent `mod.rs` that names its children, children that use the
# parent's items: the container pattern, no cycle.
CONTAINER = {
    "lib.rs": "pub mod app;\npub mod units;\n",
    "units.rs": "pub struct Rate(pub f64);\n",
    "app/mod.rs": "pub mod cbr;\npub use cbr::Cbr;\npub struct AppEnv;\n",
    "app/cbr.rs": "use super::AppEnv;\nuse crate::units::Rate;\npub struct Cbr(Rate);\n",
}


def test_container_pattern_is_no_cycle(tmp_path):
    ic = _checker()
    _plant(tmp_path, CONTAINER)
    g = ic.rust_graph(tmp_path)
    assert g["app"] == {"app::cbr"}
    assert ic.cycles(g, "::") == []


def test_a_cycle_through_a_parent_mod_rs_is_reported(tmp_path):
    # app/cbr.rs -> resources.rs -> app/mod.rs, which names app::cbr in its registry
    ic = _checker()
    _plant(
        tmp_path,
        {
            **CONTAINER,
            "lib.rs": "pub mod app;\npub mod resources;\npub mod units;\n",
            "app/mod.rs": "pub mod cbr;\npub struct LoadProfile;\npub struct AppEnv;\n"
            "fn registry() -> cbr::Cbr { todo!() }\n",
            "app/cbr.rs": "use super::AppEnv;\npub struct Cbr;\n"
            "const M: f64 = crate::resources::MIN_INTERVAL;\n",
            "resources.rs": "pub const MIN_INTERVAL: f64 = 1.0;\n"
            "pub struct FlowLoad { p: crate::app::LoadProfile }\n",
        },
    )
    found = ic.cycles(ic.rust_graph(tmp_path), "::")
    assert found == ["app -> app::cbr -> resources -> app"]


def test_sibling_cycle_is_reported(tmp_path):
    ic = _checker()
    _plant(
        tmp_path,
        {
            "lib.rs": "pub mod a;\npub mod b;\n",
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "b.rs": "pub struct B(super::a::A);\n",
        },
    )
    assert ic.cycles(ic.rust_graph(tmp_path), "::") == ["a <-> b"]


def test_the_real_trees_have_no_cycle():
    ic = _checker()
    assert ic.cycles(ic.rust_graph(ROOT / "crates/aqmlab-core/src"), "::") == []
    assert ic.cycles(ic.python_graph(ROOT / "python/aqmlab", "aqmlab"), ".") == []
