"""``list_all`` (store/base.py): a whole scope through a store whose ``list`` answers one page,
which cascade, recovery, graph lookups and consolidation rely on to miss nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.base import ListQuery, MemoryStore, list_all
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RememberRequest

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryStore:
    if request.param == "memory":
        return InMemoryStore(embedder=HashingEmbedder())
    return SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder())


@pytest.mark.parametrize("n", [0, 1, 4, 5])
async def test_every_memory_in_scope_once_in_order_across_pages(store: MemoryStore,
                                                                 n: int) -> None:
    ids = [f"m{i}" for i in range(n)]
    for mid in ids:
        await store.remember(RememberRequest(agent_id="A", id=mid, type=MemoryType.SEMANTIC,
                                             content=f"fact {mid}"))
    await store.remember(RememberRequest(agent_id="B", id="other", type=MemoryType.SEMANTIC,
                                         content="not in scope"))
    try:
        got = await list_all(store, ListQuery(agent_id="A", limit=2))
        assert [r.id for r in got] == ids  # 0, 1, 2 full pages and a short one
        everyone = await list_all(store, ListQuery(agent_id=None, limit=2))
        assert sorted(r.id for r in everyone) == sorted([*ids, "other"])
    finally:
        await store.aclose()
