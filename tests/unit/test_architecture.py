"""The layering rules, enforced: every module in exactly one layer, every import allowed.

Imports flow one way: ``errors ← wire ← core ← recall ← store ← store backends``; router and
governance know the store protocol only; server, client and cli sit on top. Each layer names
the project layers AND the third-party packages it may import, so a web framework inside
governance or argparse inside a library module fails here instead of being noticed in review.
Backends never import each other (each is its own layer and none lists another), and core
imports no module that does I/O.

A concrete backend reached from the router or governance is exactly how the first
implementation lost approval-gated writes, so this is checked, not hoped for.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib
import pkgutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import memorywire

SRC = Path(memorywire.__file__).parent


@dataclass(frozen=True)
class Layer:
    #: Module name patterns (fnmatch); a module belongs to the layer of its most specific match.
    members: tuple[str, ...]
    #: Project layers this one may import (its own modules are always allowed).
    uses: frozenset[str] = frozenset()
    #: Third-party top-level packages it may import.
    third_party: frozenset[str] = frozenset()


def _layer(members: tuple[str, ...], uses: str = "", third_party: str = "") -> Layer:
    return Layer(members, frozenset(uses.split()), frozenset(third_party.split()))


def _pkg(name: str) -> tuple[str, ...]:
    return (name, f"{name}.*")


def _backend(family: str) -> tuple[str, ...]:
    """A backend: ``store/<family>.py``, its ``<family>_*.py`` siblings, or a package."""
    s = "memorywire.store"
    return (f"{s}.{family}", f"{s}.{family}_*", f"{s}.{family}.*", f"{s}._{family}_*")


_BELOW_BACKENDS = "errors wire core embed recall store"

LAYERS: dict[str, Layer] = {
    "root": _layer(("memorywire",), "errors wire client installation"),
    # The version and the check for the first implementation on the path (standard library).
    "installation": _layer(("memorywire.installation", "memorywire._version")),
    "errors": _layer(("memorywire.errors",)),
    # jsonschema_rs: the optional compiled pre-check (wire/fastcheck.py), imported lazily
    "wire": _layer(
        _pkg("memorywire.wire"), "errors", "pydantic jsonschema jsonschema_rs referencing"
    ),
    # pydantic and transitions are pure libraries: the procedure rules validate with them.
    "core": _layer(_pkg("memorywire.core"), "errors wire", "numpy pydantic transitions"),
    # Recall ranking: the settings, the rule interface, the rules and the plan that runs them.
    # Pure rules over hits (no I/O, no store); snowballstemmer (pure text functions) gives the
    # subject lexical list its Porter stems.
    "recall": _layer(_pkg("memorywire.recall"), "errors wire core", "snowballstemmer"),
    "embed": _layer(
        _pkg("memorywire.embed"), "errors", "numpy onnx onnxruntime tokenizers safetensors httpx"
    ),
    "procedural": _layer(_pkg("memorywire.procedural"), "errors wire core", "pydantic transitions"),
    # The protocol, the registry and helpers every backend shares.
    "store": _layer(
        (
            "memorywire.store",
            "memorywire.store.base",
            "memorywire.store.registry",
            "memorywire.store._common",
            "memorywire.store._revision",
            "memorywire.store._vector_cache",
            "memorywire.store._coarse_index",
            "memorywire.store._blas",
            "memorywire.store._gc",
            "memorywire.store.graph",
            "memorywire.store.refs",
            "memorywire.store.rowstore",
            "memorywire.store.timeline",
            "memorywire.store.duplicates",
            "memorywire.store.portable",
            "memorywire.store.cascade",
            "memorywire.store.bracket",
            "memorywire.store.url_settings",
        ),
        "errors wire core embed recall",
        "anyio numpy",
    ),
    # Never executed: mypy's proof that the built-in stores satisfy the protocol.
    "store.typing_check": _layer(
        ("memorywire.store._typing_check",),
        "store backend.memory backend.sqlite backend.postgres backend.mem0 backend.letta "
        "backend.cognee",
    ),
    "backend.memory": _layer(_backend("memory"), _BELOW_BACKENDS, "anyio numpy"),
    "backend.sqlite": _layer(_backend("sqlite"), _BELOW_BACKENDS, "anyio numpy apsw sqlite_vec"),
    "backend.postgres": _layer(
        _backend("postgres"), _BELOW_BACKENDS, "anyio numpy psycopg psycopg_pool"
    ),
    "backend.mem0": _layer(_backend("mem0"), _BELOW_BACKENDS, "anyio numpy mem0"),
    "backend.letta": _layer(_backend("letta"), _BELOW_BACKENDS, "anyio numpy httpx"),
    "backend.cognee": _layer(_backend("cognee"), _BELOW_BACKENDS, "anyio numpy cognee"),
    "router": _layer(_pkg("memorywire.router"), "errors wire core recall store", "anyio"),
    "governance": _layer(
        _pkg("memorywire.governance"),
        "errors wire core store governance.pg",
        "anyio apsw cryptography pydantic",
    ),
    "governance.pg": _layer(
        ("memorywire.governance.pg_backend",), "errors", "psycopg psycopg_pool"
    ),
    "consolidation": _layer(("memorywire.consolidation",), "errors wire core store", "anyio"),
    # Dumps, fidelity plans, export/import/migrate: the store protocols, and governance for
    # the history and pending approvals a dump carries.
    "portability": _layer(
        _pkg("memorywire.portability"), "errors wire core embed store governance",
        "anyio numpy"
    ),
    # Readers of data memorywire did not write: each may reach its own vendor (and the backend
    # module that loads that vendor), and only the ``--from-format`` registry knows them all.
    "portability.mem0": _layer(
        ("memorywire.portability.mem0_native",), "errors wire core store portability "
        "backend.mem0", "anyio mem0"
    ),
    "portability.letta": _layer(
        ("memorywire.portability.letta_native",), "errors wire core store portability",
        "anyio httpx"
    ),
    "portability.cognee": _layer(
        ("memorywire.portability.cognee_native",), "errors wire core store portability "
        "backend.cognee", "anyio"
    ),
    "portability.formats": _layer(
        ("memorywire.portability.foreign",), "errors portability portability.mem0 "
        "portability.letta portability.cognee"
    ),
    "server": _layer(
        _pkg("memorywire.server"),
        "errors wire core embed store router governance procedural portability",
        "anyio numpy pydantic starlette uvicorn h11 jinja2 markupsafe mcp mcp_types "
        # cryptography: in-process recover takes the deployment's Ed25519 signing key
        "opentelemetry swagger_ui_bundle cryptography",
    ),
    # router: 0.5's Memory(stores=[...]) with several stores is a router (client05)
    "client": _layer(
        ("memorywire.client", "memorywire.client05", "memorywire.client_methods",
         "memorywire.sync_loop"),
        "errors wire store router server",
        "anyio httpx pydantic",
    ),
    "cli": _layer(
        (*_pkg("memorywire.cli"), "memorywire.__main__"),
        "errors wire core embed store router governance consolidation server client "
        "portability portability.formats installation",
        "anyio pydantic rich cryptography",
    ),
    "demo": _layer(
        ("memorywire.demo",),
        "errors wire embed store backend.sqlite governance procedural client",
        "anyio",
    ),
    # Framework integrations: each framework's package may import that framework only, and
    # memorywire only through its clients, the wire models and the error tree.
    "integrations": _layer(
        ("memorywire.integrations", "memorywire.integrations._common"), "errors"
    ),
    **{
        f"integrations.{name}": _layer(
            _pkg(f"memorywire.integrations.{name}"),
            # llamaindex also wraps memorywire's embedder as a LlamaIndex embedding
            "errors wire client integrations" + (" embed" if name == "llamaindex" else ""),
            f"pydantic {frameworks}",
        )
        for name, frameworks in {
            "langchain": "langchain_core",
            "langgraph": "langgraph",
            "pydantic_ai": "pydantic_ai",
            "openai_agents": "agents",
            "llamaindex": "llama_index",
        }.items()
    },
    "testing": _layer(
        _pkg("memorywire.testing"),
        "errors wire core embed store governance",
        "anyio numpy pydantic pytest",
    ),
    # Fixtures that start a real service: the only testing modules that reach a backend.
    "testing.postgres": _layer(("memorywire.testing.postgres", "memorywire.testing.pg_cluster"),
                               "", "pytest pgserver psycopg"),
    "testing.mem0": _layer(("memorywire.testing.mem0",), "backend.mem0", "pytest"),
    # The test sessions' private home: it names the deployment settings it clears, which the
    # server's configuration defines.
    "testing.home": _layer(("memorywire.testing.home",), "server", "pytest"),
}

#: Standard-library modules that only these layers may import: command-line parsing belongs
#: to the two programs (``memorywire`` and ``python -m memorywire.demo``).
CONFINED_STDLIB: dict[str, frozenset[str]] = {"argparse": frozenset({"cli", "demo"})}

#: Standard-library modules that read or write the outside world; core may import none.
IO_STDLIB = frozenset(
    {
        "os", "io", "sqlite3", "socket", "subprocess", "shutil", "tempfile", "pathlib", "glob",
        "fileinput", "mmap", "dbm", "shelve", "asyncio", "threading", "multiprocessing",
        "concurrent", "selectors", "select", "ssl", "signal", "http", "urllib", "ftplib",
        "smtplib", "logging",
    }
)

#: Cross-layer imports tolerated on purpose. Empty: every import follows the layers.
KNOWN_VIOLATIONS: frozenset[tuple[str, str]] = frozenset()


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC.parent).with_suffix("")
        out[".".join(rel.parts).removesuffix(".__init__")] = path
    return out


MODULES = _modules()


def _imports(path: Path) -> set[str]:
    """Every absolute import at any depth of the file (lazy and TYPE_CHECKING ones too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import"
            if node.module:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def layers_of(module: str) -> list[str]:
    """The layers whose most specific pattern matches ``module`` (exactly one when sound)."""
    best: list[str] = []
    best_len = -1
    for name, layer in LAYERS.items():
        for pattern in layer.members:
            if not fnmatch.fnmatchcase(module, pattern):
                continue
            specificity = len(pattern.rstrip("*"))
            if specificity > best_len:
                best, best_len = [name], specificity
            elif specificity == best_len and name not in best:
                best.append(name)
    return best


def _project_layer(imported: str) -> str | None:
    """The layer of an imported project module (``from memorywire.x import y`` names ``x``)."""
    module = imported
    while module not in MODULES and "." in module:
        module = module.rsplit(".", 1)[0]
    found = layers_of(module)
    return found[0] if len(found) == 1 else None


def violations() -> list[str]:
    out: list[str] = []
    seen: set[tuple[str, str]] = set()
    for mod, path in sorted(MODULES.items()):
        found = layers_of(mod)
        if len(found) != 1:
            what = "no layer" if not found else f"several layers {found}"
            out.append(f"{mod}: in {what}")
            continue
        name = found[0]
        layer = LAYERS[name]
        for imp in sorted(_imports(path)):
            top = imp.split(".")[0]
            if top == "memorywire":
                theirs = _project_layer(imp)
                if theirs is None:
                    out.append(f"{mod}: imports {imp}, which is in no single layer")
                elif (
                    theirs != name
                    and theirs not in layer.uses
                    and (mod, imp) not in KNOWN_VIOLATIONS
                ):
                    out.append(f"{mod} ({name}): imports {imp} ({theirs})")
            elif top in sys.stdlib_module_names:
                confined = CONFINED_STDLIB.get(top)
                if confined is not None and name not in confined:
                    out.append(f"{mod} ({name}): imports {top} (only in {sorted(confined)})")
                if name == "core" and top in IO_STDLIB:
                    out.append(f"{mod} (core): imports {top}, which does I/O")
            elif top not in layer.third_party and (mod, top) not in seen:
                seen.add((mod, top))
                out.append(f"{mod} ({name}): imports third-party {top}")
    return out


def test_every_module_is_in_one_layer_and_imports_only_what_its_layer_allows() -> None:
    found = violations()
    assert not found, "\n".join(["layering violations:", *found])


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for mod, path in MODULES.items():
        targets = set()
        for imp in _imports(path):
            if imp.split(".")[0] != "memorywire":
                continue
            while imp not in MODULES and "." in imp:
                imp = imp.rsplit(".", 1)[0]
            if imp != mod:
                targets.add(imp)
        graph[mod] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles_between_modules() -> None:
    """Lazy imports count: a cycle hidden inside a function still ties the modules together.
    A package's ``__init__`` re-exporting its own modules is not a cycle."""
    graph = _graph()
    for mod in graph:
        graph[mod] = {t for t in graph[mod] if not mod.startswith(t + ".")}
    assert not _cycles(graph)


def test_layer_rules_name_only_real_layers() -> None:
    for name, layer in LAYERS.items():
        assert layer.uses <= set(LAYERS), (name, layer.uses - set(LAYERS))
        assert name not in layer.uses
    for mod, imp in KNOWN_VIOLATIONS:
        assert mod in MODULES, f"stale KNOWN_VIOLATIONS entry {mod}"
        assert imp in _imports(MODULES[mod]), f"stale KNOWN_VIOLATIONS entry {(mod, imp)}"


def test_backends_never_import_each_other() -> None:
    backends = {n for n in LAYERS if n.startswith("backend.")}
    for name in backends:
        assert not LAYERS[name].uses & backends, name


def test_the_checker_catches_what_it_claims_to() -> None:
    """The rules must bite: a core module importing sqlite3 or a backend, argparse outside
    the cli, Starlette in governance, an unknown module."""
    assert layers_of("memorywire.store.sqlite_schema") == ["backend.sqlite"]
    assert layers_of("memorywire.store._cognee_row") == ["backend.cognee"]
    assert layers_of("memorywire.governance.pg_backend") == ["governance.pg"]
    assert layers_of("memorywire.router.outbox") == ["router"]
    assert layers_of("memorywire.server.mcp.tools") == ["server"]
    assert layers_of("memorywire.nowhere") == []
    assert "starlette" not in LAYERS["governance"].third_party
    assert "store" not in LAYERS["core"].uses
    assert "recall" not in LAYERS["core"].uses and "store" not in LAYERS["recall"].uses
    assert layers_of("memorywire.recall.turn_focus") == ["recall"]
    assert "sqlite3" in IO_STDLIB
    assert CONFINED_STDLIB["argparse"] == {"cli", "demo"}


def _public_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(memorywire.__path__, "memorywire."):
        leaf = info.name.rsplit(".", 1)[-1]
        found = layers_of(info.name)
        optional_sdk = found in (["backend.mem0"], ["backend.letta"], ["backend.cognee"]) or (
            len(found) == 1 and found[0].startswith("integrations.")
        )
        if leaf.startswith("_") or optional_sdk:
            continue  # optional SDK adapters and framework integrations: covered by their suites
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


#: The recall package's own order: settings <- rule <- the rule modules <- rules <- plan.
_RECALL_ORDER = ("settings", "rule", "*", "rules", "plan")


def _recall_rank(module: str) -> int:
    leaf = module.removeprefix("memorywire.recall.")
    return _RECALL_ORDER.index(leaf) if leaf in _RECALL_ORDER else _RECALL_ORDER.index("*")


def test_recall_imports_flow_one_way_and_the_plan_names_no_rule() -> None:
    """Inside ``recall`` a module imports only those before it in ``_RECALL_ORDER`` (a rule
    module may use another rule module's helpers, never ``rules`` or ``plan``); the plan
    reaches the rules only through the one list of ``recall.rules``, so a new rule never
    touches it."""
    recall = {m: p for m, p in MODULES.items() if m.startswith("memorywire.recall.")}
    assert {"memorywire.recall.settings", "memorywire.recall.rule", "memorywire.recall.rules",
            "memorywire.recall.plan"} <= recall.keys()
    wrong = []
    for mod, path in sorted(recall.items()):
        for imp in _imports(path):
            if imp.startswith("memorywire.recall.") and imp != mod:
                mine, theirs = _recall_rank(mod), _recall_rank(imp)
                if theirs > mine or (theirs == mine and mine != _RECALL_ORDER.index("*")):
                    wrong.append(f"{mod} imports {imp}")
    assert not wrong, wrong
    plan_imports = {i for i in _imports(recall["memorywire.recall.plan"])
                    if i.startswith("memorywire.recall.")}
    assert plan_imports == {"memorywire.recall.rule", "memorywire.recall.rules",
                            "memorywire.recall.settings"}
