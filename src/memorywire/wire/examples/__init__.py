"""Example wire documents, shipped as package data and checked by the test suite.

A file ``examples/<kind>/<name>.json`` is a document of ``kind`` (``remember``,
``recall.response``, ``types/episodic``, ``error``...). A request and its response share
``name``. Names starting ``published-`` are shaped as the first v0 implementation emits
them (extra keys on recall hits, ``approval_url: null``...), so a test proves we still read
what is already deployed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

__all__ = ["Example", "examples"]


@dataclass(frozen=True)
class Example:
    kind: str
    name: str
    document: Any

    @property
    def published(self) -> bool:
        return self.name.startswith("published-")


def _walk(node: Traversable, kind: str) -> list[Example]:
    found: list[Example] = []
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        if child.is_dir() and child.name != "__pycache__":
            found.extend(_walk(child, f"{kind}/{child.name}" if kind else child.name))
        elif child.name.endswith(".json") and kind:
            doc = json.loads(child.read_text(encoding="utf-8"))
            found.append(Example(kind, child.name.removesuffix(".json"), doc))
    return found


@cache
def _all() -> tuple[Example, ...]:
    return tuple(_walk(files(__name__), ""))


def examples(kind: str | None = None) -> list[Example]:
    """Every example, or those of one kind; documents are fresh copies callers may change."""
    return [
        Example(e.kind, e.name, json.loads(json.dumps(e.document)))
        for e in _all()
        if kind is None or e.kind == kind
    ]
