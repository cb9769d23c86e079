"""``metadata.context`` joins a memory's full-text key on SQLite, PostgreSQL and in memory.

A dialogue turn is found by the words of the turn around it, the content a recall returns is
unchanged, an update of the context re-indexes the row, and a context that is not a string
is refused naming the field. Vectors are a hashing embedder's, so only the full-text leg can
connect the query's words to the context.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from memorywire.core.clock import FakeClock
from memorywire.core.records import UpdateRequest
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.store.base import MemoryStore
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.testing import postgres as _pg
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio
pg_server = _pg.pg_server

EMB = HashingEmbedder(64)
#: The question's words ("adopt", "shelter") appear only in the turn before the answer.
QUESTION = "Which animal did Caroline adopt from the shelter?"
ANSWER = "Caroline: A puppy! We named him Biscuit."
BEFORE = "Melanie: Did you adopt anything from the shelter yesterday?"


def _turn(mid: str, text: str, **metadata: object) -> RememberRequest:
    return RememberRequest(agent_id="a", type=MemoryType.EPISODIC, content=text, id=mid,
                           metadata=dict(metadata))


@pytest.fixture(params=["sqlite", "memory", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryStore]:
    floors = {"relevance_floor": -1.0, "lexical_floor": -1.0}
    made: MemoryStore
    if request.param == "sqlite":
        made = SqliteStore(tmp_path / "m.db", EMB, FakeClock(),
                           recall=replace(SqliteStore.DEFAULT_RECALL, **floors))
    elif request.param == "memory":
        made = InMemoryStore(EMB, FakeClock(),
                             recall=replace(InMemoryStore.DEFAULT_RECALL, **floors))
    else:
        from memorywire.store.postgres import PostgresStore

        handle: _pg.PgHandle = request.getfixturevalue("pg_server")
        made = PostgresStore(handle.create_database(), EMB, FakeClock(),
                             recall=replace(PostgresStore.DEFAULT_RECALL, **floors))
    try:
        yield made
    finally:
        await made.aclose()


async def _lexical_ids(store: MemoryStore, query: str) -> list[str]:
    resp = await store.recall(RecallRequest(agent_id="a", query=query, k=5))
    return [h.id for h in resp.results]


async def test_a_turn_is_found_by_its_context_and_returned_as_itself(store: MemoryStore) -> None:
    await store.remember_many([
        _turn("t1", ANSWER, context=BEFORE),
        _turn("t2", "Melanie: The weather was lovely at the beach."),
        _turn("t3", "Caroline: I painted a sunset last weekend."),
    ])
    resp = await store.recall(RecallRequest(agent_id="a", query="adopted shelter", k=1))
    assert [h.id for h in resp.results] == ["t1"]
    assert resp.results[0].content == ANSWER
    assert resp.results[0].metadata["context"] == BEFORE


async def test_a_memory_without_context_is_not_found_by_its_neighbours_words(
        store: MemoryStore) -> None:
    await store.remember_many([_turn("t1", ANSWER), _turn("t0", BEFORE)])
    resp = await store.recall(RecallRequest(agent_id="a", query="adopted shelter", k=5))
    # Only the turn that holds the words matches them; the answer is ranked by its vector.
    assert resp.results[0].id == "t0"


async def test_changing_the_context_reindexes_the_memory(store: MemoryStore) -> None:
    await store.remember_many([_turn("t1", ANSWER, context=BEFORE),
                               _turn("t2", "Melanie: we went kayaking on the lake.")])
    await store.update(UpdateRequest(agent_id="a", id="t1",
                                     metadata_patch={"context": "Melanie: how was the marathon?"}))
    first = (await store.recall(RecallRequest(agent_id="a", query="marathon", k=1))).results
    assert [h.id for h in first] == ["t1"]
    # The old context no longer matches: "shelter" finds nothing lexically, so the two rows
    # are ranked by hashed vectors alone and t1 is not promoted by the word.
    got = await store.recall(RecallRequest(agent_id="a", query="kayaking shelter", k=1))
    assert [h.id for h in got.results] == ["t2"]


@pytest.mark.parametrize("bad", [{"prev": "x"}, ["a", "b"], 3, "x" * 8001])
async def test_a_context_that_is_not_short_text_is_refused(store: MemoryStore,
                                                         bad: object) -> None:
    with pytest.raises(InvalidRequest, match=r"metadata\.context"):
        await store.remember_many([_turn("ok", "Caroline: fine."), _turn("t1", ANSWER,
                                                                        context=bad)])
    assert await store.get("a", "ok") is None  # nothing of the batch was kept
