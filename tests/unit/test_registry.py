from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import CapabilityMissing, InvalidRequest
from memorywire.store import registry
from memorywire.store.memory import InMemoryStore
from memorywire.store.registry import available_schemes, open_store, register_store


def test_builtins_come_from_entry_points() -> None:
    assert {"memory", "sqlite"} <= set(available_schemes())


def test_memory_url_passes_keywords() -> None:
    store = open_store("memory://", embedder=HashingEmbedder(16), name="scratch")
    assert isinstance(store, InMemoryStore) and store.name == "scratch"


@pytest.mark.parametrize("url", ["nosuchscheme://x", "no-scheme-at-all", "://x"])
def test_unknown_or_missing_scheme_is_invalid(url: str) -> None:
    with pytest.raises(InvalidRequest):
        open_store(url)


def test_register_store_programmatically() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def factory(url: str, **kw: Any) -> InMemoryStore:
        seen.append((url, kw))
        return InMemoryStore(embedder=HashingEmbedder(16), name="custom")

    register_store("customtest", factory)
    assert open_store("customtest://host/db", flag=1).name == "custom"
    assert seen == [("customtest://host/db", {"flag": 1})]
    with pytest.raises(InvalidRequest):
        register_store("bad scheme", factory)


def test_missing_optional_dependency_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = EntryPoint("postgresql", "memorywire_not_installed_xyz:Store",
                        registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "entry_points", lambda group: [broken])
    with pytest.raises(CapabilityMissing, match=r"memorywire\[postgres\]"):
        open_store("postgresql://localhost/db")


def test_known_scheme_without_any_plugin_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "entry_points", lambda group: [])
    with pytest.raises(CapabilityMissing, match=r"memorywire\[mem0\]"):
        open_store("mem0://cloud")


def test_sqlite_urls(tmp_path: Path) -> None:
    pytest.importorskip("memorywire.store.sqlite")
    import anyio

    from memorywire.store.sqlite import SqliteStore

    path = tmp_path / "x.db"
    for url in (f"sqlite:///{path}", "sqlite://:memory:"):
        store = open_store(url, embedder=HashingEmbedder(16))
        assert isinstance(store, SqliteStore)
        anyio.run(store.aclose)
    # Opening creates nothing; the first write creates the file (tests/unit/test_sqlite_url.py).
    assert not path.exists()


# --- every registered scheme opens, or names the extra that brings it ---------------------

#: A URL per built-in scheme that opens without contacting any server (PostgreSQL, Letta and
#: Cognee connect on first use).
_SAMPLE_URLS = {
    "memory": "memory://",
    "sqlite": "sqlite://",
    "sqlite-vec": "sqlite://",
    "postgresql": "postgresql://127.0.0.1:9/none",
    "postgres": "postgres://127.0.0.1:9/none",
    "mem0": "mem0://",
    "letta": "letta://127.0.0.1:9?embedding_endpoint=http://127.0.0.1:9/v1",
    "cognee": "cognee:///tmp/mw-registry-cognee?embedding_endpoint=http://127.0.0.1:9/v1",
}


def _defined_extras() -> set[str]:
    import tomllib

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    with pyproject.open("rb") as fh:
        return set(tomllib.load(fh)["project"]["optional-dependencies"])


def test_every_named_extra_exists_in_pyproject() -> None:
    assert set(registry.EXTRAS.values()) <= _defined_extras()
    assert set(registry.ALIASES.values()) <= set(registry.EXTRAS) | {"memory", "sqlite"}


@pytest.mark.parametrize("scheme", sorted(_SAMPLE_URLS))
def test_every_registered_scheme_opens_or_names_its_extra(scheme: str) -> None:
    """Installed: the URL opens a store. Missing: the error is the right ``pip install``."""
    import anyio

    assert scheme in available_schemes()
    target = registry.ALIASES.get(scheme, scheme)
    ep = next(e for e in registry.entry_points(group=registry.ENTRY_POINT_GROUP)
              if e.name == target)
    try:
        ep.load()
    except ImportError:
        with pytest.raises(CapabilityMissing,
                           match=rf"pip install 'memorywire\[{registry.EXTRAS[target]}\]'"):
            open_store(_SAMPLE_URLS[scheme], embedder=HashingEmbedder(16))
        return
    try:
        store = open_store(_SAMPLE_URLS[scheme], embedder=HashingEmbedder(16))
    except CapabilityMissing as exc:  # a backend importing its vendor lazily (Cognee)
        assert target in registry.EXTRAS, exc
        assert f"pip install 'memorywire[{registry.EXTRAS[target]}]'" in str(exc)
        return
    assert type(store).__name__ == ep.value.rsplit(":", 1)[1]
    anyio.run(store.aclose)

