"""The three stores a re-ranking boost is wired into, built alike for its behaviour tests.

The subject boost and the substance prior (and any later boost passed through
``RecallPlan``) must behave the same on SQLite, PostgreSQL and the in-memory store; their
tests build each store with the floors off, so that only the boost decides the order, and
with the boost's setting changed in the store's ``RecallSettings``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.recall.settings import RecallSettings
from memorywire.store.base import MemoryStore
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.testing import postgres as _pg
from memorywire.wire.models import RecallRequest, RememberRequest

EMB = HashingEmbedder(64)


async def make_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest,
                     **kw: float) -> MemoryStore:
    """A fresh store of ``kind`` with the floors off and ``kw`` (recall settings) changed
    from its own defaults."""
    def recall(defaults: RecallSettings) -> RecallSettings:
        return replace(defaults, relevance_floor=-1.0, lexical_floor=-1.0, **kw)

    if kind == "sqlite":
        return SqliteStore(tmp_path / f"m{len(kw)}.db", EMB, FakeClock(),
                           recall=recall(SqliteStore.DEFAULT_RECALL))
    if kind == "memory":
        return InMemoryStore(EMB, FakeClock(), recall=recall(InMemoryStore.DEFAULT_RECALL))
    from memorywire.store.postgres import PostgresStore

    handle: _pg.PgHandle = request.getfixturevalue("pg_server")
    return PostgresStore(handle.create_database(), EMB, FakeClock(),
                         recall=recall(PostgresStore.DEFAULT_RECALL))


async def ranked_ids(store: MemoryStore, reqs: Sequence[RememberRequest], query: str,
                     k: int) -> list[str]:
    """Write ``reqs`` to a fresh ``store``, ask ``query`` and close it: the ids, best first."""
    try:
        await store.remember_many(list(reqs))
        resp = await store.recall(RecallRequest(agent_id="a", query=query, k=k))
        return [h.id for h in resp.results]
    finally:
        await store.aclose()


@pytest.fixture(params=["sqlite", "memory", pytest.param("postgres", marks=pytest.mark.postgres)])
async def kind(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """Each store kind in turn (PostgreSQL under the ``postgres`` mark)."""
    yield str(request.param)
