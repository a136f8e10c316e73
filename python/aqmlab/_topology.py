"""Topology helpers shared by the engines' translators."""

from __future__ import annotations

from typing import Any

__all__ = ["duplex_pairs"]


def duplex_pairs(links: list[dict[str, Any]]) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], dict[str, Any] | None]:
    """Pairs each link with its reverse (the first unpaired link from its ``to`` back to its
    ``from``), in the order of ``links``. Returns the pairs and the first link that has no
    reverse (None when every link is paired); the caller says why that is an error."""
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    done: set[str] = set()
    for ln in links:
        if ln["name"] in done:
            continue
        rev = next((r for r in links if r["name"] not in done and r is not ln and r["from"] == ln["to"] and r["to"] == ln["from"]), None)
        if rev is None:
            return pairs, ln
        done.update((ln["name"], rev["name"]))
        pairs.append((ln, rev))
    return pairs, None
