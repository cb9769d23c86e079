"""Imports flow one way: errors ← wire ← core ← store.base ← store.<backend>; router and
governance know only the protocol; nothing below the server imports transports.

A concrete backend reached from the router or governance is exactly how the first
implementation lost approval-gated writes, so this is checked, not hoped for.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import memorywire

SRC = Path(memorywire.__file__).parent
BACKEND_FAMILIES = ("memory", "sqlite", "postgres", "mem0", "letta", "cognee")


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC.parent).with_suffix("")
        name = ".".join(rel.parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _imports(path: Path) -> set[str]:
    """Every ``memorywire...`` module imported, at any depth of the file (lazy ones too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m == "memorywire" or m.startswith("memorywire.")}


def _family(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) < 3 or parts[1] != "store":
        return None
    leaf = parts[2]
    return next((f for f in BACKEND_FAMILIES if leaf == f or leaf.startswith(f + "_")), None)


MODULES = _modules()

ALLOWED_PREFIXES = {
    "memorywire.errors": ("memorywire.errors",),
    "memorywire.wire": ("memorywire.wire", "memorywire.errors"),
    "memorywire.core": ("memorywire.core", "memorywire.wire", "memorywire.errors"),
    "memorywire.embed": ("memorywire.embed", "memorywire.errors"),
}


@pytest.mark.parametrize("layer", sorted(ALLOWED_PREFIXES))
def test_lower_layers_import_only_what_is_below_them(layer: str) -> None:
    allowed = ALLOWED_PREFIXES[layer]
    bad = {
        (mod, imp)
        for mod, path in MODULES.items()
        if mod == layer or mod.startswith(layer + ".")
        for imp in _imports(path)
        if not any(imp == a or imp.startswith(a + ".") for a in allowed)
    }
    assert not bad, sorted(bad)


def test_backends_never_import_each_other() -> None:
    bad = set()
    for mod, path in MODULES.items():
        mine = _family(mod)
        if mine is None:
            continue
        for imp in _imports(path):
            theirs = _family(imp)
            if theirs is not None and theirs != mine:
                bad.add((mod, imp))
    assert not bad, sorted(bad)


def test_router_and_governance_know_only_the_protocol() -> None:
    bad = {
        (mod, imp)
        for mod, path in MODULES.items()
        if mod == "memorywire.router" or mod.startswith("memorywire.governance")
        for imp in _imports(path)
        if _family(imp) is not None
    }
    assert not bad, sorted(bad)


def test_nothing_below_the_server_imports_transports() -> None:
    top = ("memorywire.server", "memorywire.client", "memorywire.cli", "memorywire.cli_ops",
           "memorywire.demo")
    below = [m for m in MODULES if not any(m == t or m.startswith(t + ".") for t in top)
             and not m.startswith("memorywire.testing") and m != "memorywire"]
    bad = {
        (mod, imp)
        for mod in below
        for imp in _imports(MODULES[mod])
        if any(imp == t or imp.startswith(t + ".") for t in top)
    }
    assert not bad, sorted(bad)


def _public_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(memorywire.__path__, "memorywire."):
        leaf = info.name.rsplit(".", 1)[-1]
        optional_sdk = _family(info.name) in ("mem0", "letta", "cognee")
        if leaf.startswith("_") or optional_sdk:
            continue  # optional SDK adapters import their SDK lazily; covered by their suites
        names.append(info.name)
    return names


@pytest.mark.parametrize("name", _public_modules())
def test_all_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        return
    missing = [n for n in exported if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names missing attributes: {missing}"
    assert len(set(exported)) == len(exported)
