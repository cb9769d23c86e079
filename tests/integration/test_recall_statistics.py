"""Only the hits a recall returns count as recalled, once each, on every store that keeps
recall statistics (SQLite, PostgreSQL, in-memory).

A re-ranker asks a store for a deeper pool (``SUBJECT_POOL`` when the question names a
person and the memories carry speakers) than the ``k`` it returns. ``no_recall_in_days``
expiry reads ``recall_count`` / ``last_recalled_at``: a memory the re-ranker looked at and
passed over must stay "never recalled", or expiry keeps what nobody ever got back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.recall.subject_boost import SUBJECT_POOL
from memorywire.store.base import MemoryStore
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.testing import postgres as _pg
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio
pg_server = _pg.pg_server

EMB = HashingEmbedder(64)
TURNS = 60  # more than k, fewer than the pool: the pool holds every turn


def _turn(i: int) -> RememberRequest:
    speaker = "Caroline" if i % 2 else "Melanie"
    return RememberRequest(agent_id="a", type=MemoryType.EPISODIC, id=f"t{i}",
                           content=f"We talked about the puppy and shelter number {i}.",
                           metadata={"speaker": speaker})


@pytest.fixture(params=["sqlite", "memory", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryStore]:
    floors = {"relevance_floor": -1.0, "lexical_floor": -1.0}
    clock = FakeClock(1_000_000)
    made: MemoryStore
    if request.param == "sqlite":
        made = SqliteStore(tmp_path / "m.db", EMB, clock=clock,
                           recall=replace(SqliteStore.DEFAULT_RECALL, **floors))
    elif request.param == "memory":
        made = InMemoryStore(EMB, clock, recall=replace(InMemoryStore.DEFAULT_RECALL, **floors))
    else:
        from memorywire.store.postgres import PostgresStore

        handle: _pg.PgHandle = request.getfixturevalue("pg_server")
        made = PostgresStore(handle.create_database(), EMB, clock,
                             recall=replace(PostgresStore.DEFAULT_RECALL, **floors))
    try:
        yield made
    finally:
        await made.aclose()


@pytest.mark.parametrize("by_vector", [False, True])
async def test_only_returned_hits_count_as_recalled(store: MemoryStore, by_vector: bool) -> None:
    assert TURNS < SUBJECT_POOL
    await store.remember_many([_turn(i) for i in range(TURNS)])
    req = RecallRequest(agent_id="a", query="Which shelter did Caroline adopt the puppy from?",
                        k=3)
    if by_vector:
        if not isinstance(store, SqliteStore):
            pytest.skip("recall_by_vector is SqliteStore's")
        resp = await store.recall_by_vector(req, EMB.embed([req.query])[0])
    else:
        resp = await store.recall(req)
    returned = {h.id for h in resp.results}
    assert len(returned) == 3
    counts = {f"t{i}": (await store.get("a", f"t{i}")) for i in range(TURNS)}
    recalled = {i for i, rec in counts.items() if rec is not None and rec.recall_count}
    assert recalled == returned
    for i in returned:
        rec = counts[i]
        assert rec is not None and rec.recall_count == 1
        assert rec.last_recalled_at == 1_000_000
