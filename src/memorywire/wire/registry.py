"""Loads the v0 JSON Schemas shipped as package data and resolves their references.

A schema's short name is its path under ``schemas/v0`` without ``.json``, except that the
``operations/`` prefix is dropped because operations are what callers name most:
``remember``, ``remember.response``, ``types/episodic``, ``governance/review``, ``error``.
Every schema's ``$id`` is :data:`BASE_URI` followed by its path, so ``$ref`` between files
resolves through one in-memory :class:`referencing.Registry` and never over the network.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from memorywire.errors import NotFound
from memorywire.wire.versions import CURRENT

if TYPE_CHECKING:
    from referencing import Registry

__all__ = [
    "BASE_URI",
    "DEFINITIONS",
    "registry",
    "schema",
    "schema_id",
    "schema_names",
]

BASE_URI = f"https://memorywire.dev/schemas/v{CURRENT}/"

#: Files that only hold shared ``$defs``: loadable by name, but not a kind of document.
DEFINITIONS = frozenset({"common"})

_OPERATIONS = "operations/"


def _walk(node: Traversable, prefix: str) -> dict[str, Traversable]:
    found: dict[str, Traversable] = {}
    for child in node.iterdir():
        if child.is_dir():
            found.update(_walk(child, f"{prefix}{child.name}/"))
        elif child.name.endswith(".json"):
            found[prefix + child.name.removesuffix(".json")] = child
    return found


@cache
def _all() -> Mapping[str, Mapping[str, Any]]:
    """Path (``operations/remember``) to parsed schema, read once per process."""
    root = files("memorywire.wire").joinpath("schemas", f"v{CURRENT}")
    loaded: dict[str, Mapping[str, Any]] = {}
    for path, entry in sorted(_walk(root, "").items()):
        doc = json.loads(entry.read_text(encoding="utf-8"))
        if doc.get("$id") != BASE_URI + path:
            raise RuntimeError(f"schema file {path}.json declares $id {doc.get('$id')!r}")
        loaded[path] = doc
    return MappingProxyType(loaded)


def _path(name: str) -> str:
    known = _all()
    if name in known:
        return name
    if _OPERATIONS + name in known:
        return _OPERATIONS + name
    raise NotFound(f"no wire schema named {name!r}; known: {', '.join(schema_names())}")


def _short(path: str) -> str:
    return path.removeprefix(_OPERATIONS)


def schema_names(*, include_definitions: bool = False) -> list[str]:
    """Every document kind, sorted: operations first, then the rest."""
    names = [_short(p) for p in _all()]
    if not include_definitions:
        names = [n for n in names if n not in DEFINITIONS]
    ops = sorted(n for n in names if "/" not in n and n != "error")
    return ops + sorted(n for n in names if n not in ops)


def schema(name: str) -> dict[str, Any]:
    """A fresh copy of one schema (callers may mutate it); raises ``NotFound``."""
    return copy.deepcopy(dict(_all()[_path(name)]))


def schema_id(name: str) -> str:
    return BASE_URI + _path(name)


@cache
def registry() -> Registry[Any]:
    """All v0 schemas, keyed by ``$id``, ready for ``jsonschema`` validators.

    ``$schema`` is left out of the registered copies (the dialect is fixed to 2020-12 here):
    ``jsonschema`` picks the validator class of a ``$ref`` target from its ``$schema``,
    which would silently drop the keyword extensions of :mod:`memorywire.wire.validate`.
    ``referencing`` is imported here, on the first check, not with the schema names.
    """
    from referencing import Registry
    from referencing.jsonschema import DRAFT202012

    resources = [
        (
            BASE_URI + path,
            DRAFT202012.create_resource({k: v for k, v in doc.items() if k != "$schema"}),
        )
        for path, doc in _all().items()
    ]
    return Registry().with_resources(resources).crawl()
