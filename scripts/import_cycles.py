#!/usr/bin/env python3
"""Lists import cycles among the modules of aqmlab-core (Rust, one node per source file)
and of the Python package aqmlab (one node per module).

A Rust file depends on another when it names it through `crate::a::b` or `super::x`
(in `use` lines or inline paths; `#[cfg(test)]` modules excluded), and a parent module
(`mod.rs`) on a child it names (`child::X`, `pub use child::X`; `mod child;` is not a
use); a Python module when it imports it at module level or inside a function
(TYPE_CHECKING-only imports excluded).

A parent and its children that use each other (a registry, a facade) are one unit: that
is no cycle while every way back from a child to its parent stays below the parent. The
check reports the strongly connected components among modules that do not contain one
another, and every cycle a parent closes through a module outside its subtree (`app ->
app::cbr -> resources -> app`). Exit status 1 if there is any.
Usage: python3 scripts/import_cycles.py [--graph]
"""
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rust_graph(src: Path) -> dict[str, set[str]]:
    mods: dict[str, Path] = {}
    for p in src.rglob("*.rs"):
        rel = p.relative_to(src).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] in ("mod", "lib"):
            parts = parts[:-1]
        if parts and parts[0] == "bin":
            continue
        mods["::".join(parts)] = p
    graph: dict[str, set[str]] = {m: set() for m in mods}

    def resolve(path: list[str]) -> str | None:
        for k in range(len(path), 0, -1):
            cand = "::".join(path[:k])
            if cand in mods:
                return cand
        return None

    for m, p in mods.items():
        text = p.read_text()
        # drop test modules: everything from `#[cfg(test)]\nmod` on (they sit at the end)
        cut = re.search(r"#\[cfg\(test\)\]\s*(pub(\(\w+\))?\s+)?mod\s+\w+\s*\{", text)
        if cut:
            text = text[: cut.start()]
        text = re.sub(r"//[^\n]*", "", text)
        here = m.split("::") if m else []
        for mt in re.finditer(r"\b(crate|super)((?:::\w+)*)(::\{)?", text):
            segs = [x for x in mt.group(2).split("::") if x]
            # `super` of a file module x/y.rs is x; of x/mod.rs it is x's parent
            base: list[str] = [] if mt.group(1) == "crate" else here[:-1]
            while segs and segs[0] == "super":
                base, segs = base[:-1], segs[1:]
            full = base + segs
            tgt = resolve(full)
            if tgt is not None and tgt != m:
                graph[m].add(tgt)
            if mt.group(3):  # a brace group: crate::a::{b, c::d}
                start = mt.end() - 1
                depth, i = 1, start + 1
                while depth and i < len(text):
                    depth += {"{": 1, "}": -1}.get(text[i], 0)
                    i += 1
                for item in re.findall(r"\b(\w+(?:::\w+)*)", text[start + 1 : i - 1]):
                    t = resolve(full + item.split("::"))
                    if t is not None and t != m:
                        graph[m].add(t)
        # a parent module's own uses of its children (`child::X`, `self::child::X`,
        # `pub use child::X`); its `mod child;` lines are not uses
        for mt in re.finditer(r"(?<![\w:])(?:self::)?(\w+)::", text):
            t = resolve(here + [mt.group(1)])
            if t is not None and t != m and t.startswith(m + "::") and m:
                graph[m].add(t)
    graph.pop("", None)
    for m in graph:
        graph[m].discard("")
    return graph


def is_below(t: str, m: str, sep: str) -> bool:
    return t.startswith(m + sep)


def family_cycles(graph: dict[str, set[str]], sep: str) -> list[list[str]]:
    """Cycles that a parent module closes through one of its own descendants.

    A parent that uses its children while the children use the parent's items is the
    usual container pattern (a registry, a facade) and is no cycle as long as the way
    back stays inside the parent's subtree. It is one when the way back from the child
    leaves the subtree: `app -> app::cbr -> resources -> app`. Returns one such path
    per parent and set of modules outside it, as `[parent, child, ..., parent]`.
    """
    out: dict[tuple[str, frozenset[str]], list[str]] = {}
    for m in sorted(graph):
        for c in sorted(t for t in graph[m] if is_below(t, m, sep)):
            # shortest path c ~> m through at least one module outside m's subtree:
            # search states (node, left the subtree yet)
            start = (c, False)
            prev: dict[tuple[str, bool], tuple[str, bool] | None] = {start: None}
            queue = [start]
            found = None
            while queue and found is None:
                nxt = []
                for node, out_ in queue:
                    for w in sorted(graph.get(node, ())):
                        state = (w, out_ or (w != m and not is_below(w, m, sep)))
                        if w == m:
                            if out_:
                                prev[state] = (node, out_)
                                found = state
                                break
                            continue
                        if state not in prev:
                            prev[state] = (node, out_)
                            nxt.append(state)
                    if found:
                        break
                queue = nxt
            if found is None:
                continue
            path = []
            s: tuple[str, bool] | None = found
            while s is not None:
                path.append(s[0])
                s = prev[s]
            cyc = [m] + path[::-1]
            outside = frozenset(x for x in cyc if x != m and not is_below(x, m, sep))
            out.setdefault((m, outside), cyc)
    return list(out.values())


def without_containment(graph: dict[str, set[str]], sep: str) -> dict[str, set[str]]:
    """The graph without a parent's edges to its own descendants."""
    return {m: {t for t in ts if not is_below(t, m, sep)} for m, ts in graph.items()}


def python_graph(pkg: Path, name: str) -> dict[str, set[str]]:
    mods = {}
    for p in pkg.rglob("*.py"):
        rel = p.relative_to(pkg.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        tree = ast.parse(p.read_text())
        pkg_of = m if p.name == "__init__.py" else m.rsplit(".", 1)[0]
        skip: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                for sub in ast.walk(node):
                    skip.add(id(sub))
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg_of.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
            for t in targets:
                while t and t not in mods:
                    t = t.rsplit(".", 1)[0] if "." in t else ""
                if t and t != m and not (t == name and m.startswith(name + ".")):
                    graph[m].add(t)
    return graph


def sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def cycles(graph: dict[str, set[str]], sep: str) -> list[str]:
    """Every cycle, as text: strongly connected components among modules that do not
    contain one another, then cycles a parent closes through a descendant."""
    found = [" <-> ".join(c) for c in sccs(without_containment(graph, sep))]
    found += [" -> ".join(c) for c in family_cycles(graph, sep)]
    return found


def main() -> int:
    show = "--graph" in sys.argv
    bad = 0
    for title, g, sep in [
        ("aqmlab-core (Rust, per file)", rust_graph(ROOT / "crates/aqmlab-core/src"), "::"),
        ("aqmlab (Python, per module)", python_graph(ROOT / "python/aqmlab", "aqmlab"), "."),
    ]:
        edges = sum(len(v) for v in g.values())
        found = cycles(g, sep)
        print(f"{title}: {len(g)} modules, {edges} dependencies, {len(found)} cycle(s)")
        for c in found:
            bad += 1
            print("  cycle:", c)
        if show:
            for m in sorted(g):
                print(f"  {m or 'lib'} -> {', '.join(sorted(g[m])) or '-'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
