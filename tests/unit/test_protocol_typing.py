"""The built-in stores satisfy MemoryStore: statically (src/.../_typing_check.py, run by
mypy over src/) and at run time (every protocol member exists with a matching kind)."""

import inspect
from pathlib import Path

import anyio
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.base import MemoryStore
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore

_MEMBERS = ["remember", "recall", "forget", "merge", "expire", "get", "list", "update",
            "health", "aclose"]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_runtime_protocol(kind: str, tmp_path: Path) -> None:
    emb = HashingEmbedder(16)
    store = InMemoryStore(embedder=emb) if kind == "memory" else SqliteStore(
        tmp_path / "m.db", embedder=emb)
    try:
        assert isinstance(store, MemoryStore)
        for name in _MEMBERS:
            assert inspect.iscoroutinefunction(getattr(store, name)), name
        assert store.name == kind and "vector" in store.capabilities
    finally:
        anyio.run(store.aclose)


def test_static_check_module_names_both_stores() -> None:
    import memorywire.store._typing_check as mod

    text = Path(mod.__file__).read_text(encoding="utf-8")
    assert "_a: MemoryStore = memory" in text and "_b: MemoryStore = sqlite" in text
