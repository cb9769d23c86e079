"""The v0 "book-flight" procedure stored, recalled as an object, replayed, persisted, reread."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest, NotFound
from memorywire.procedural import ProcedureRunner, parse_procedure
from memorywire.store.base import ListQuery, MemoryStore
from memorywire.store.memory import InMemoryStore
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio

BOOK_FLIGHT: dict[str, Any] = {
    "name": "book-flight",
    "initial": "searching",
    "states": ["searching", "selecting", "paying", "confirmed", "cancelled"],
    "transitions": [
        {"trigger": "select", "source": "searching", "dest": "selecting"},
        {"trigger": "pay", "source": "selecting", "dest": "paying"},
        {"trigger": "confirm", "source": "paying", "dest": "confirmed"},
        {"trigger": "cancel", "source": "*", "dest": "cancelled"},
    ],
    "current": "searching",
}


def _sqlite(path: Path) -> MemoryStore:
    from memorywire.store.sqlite import SqliteStore

    return SqliteStore.from_url(f"sqlite:///{path}", embedder=HashingEmbedder())  # type: ignore[no-any-return]


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryStore]:
    s: MemoryStore
    if request.param == "memory":
        s = InMemoryStore(embedder=HashingEmbedder())
    else:
        s = _sqlite(tmp_path / "mem.db")
    try:
        yield s
    finally:
        await s.aclose()


async def test_book_flight_round_trip_through_a_store(store: MemoryStore) -> None:
    res = await store.remember(
        RememberRequest(
            agent_id="travel",
            type=MemoryType.PROCEDURAL,
            content=json.dumps(BOOK_FLIGHT),  # the v0 string form
            source="user",
            confidence=0.9,
        )
    )
    hits = await store.recall(
        RecallRequest(agent_id="travel", query="book flight", types=[MemoryType.PROCEDURAL])
    )
    assert [h.id for h in hits.results] == [res.id]
    content = hits.results[0].content
    assert isinstance(content, dict)  # recalled as an object
    assert parse_procedure(content) == parse_procedure(BOOK_FLIGHT)

    runner = await ProcedureRunner.load(store, "travel", res.id)
    assert runner.state == "searching"
    for trigger in ("select", "pay", "confirm"):
        runner.fire(trigger)
    assert runner.state == "confirmed"
    updated = await runner.persist(store, "travel", res.id)
    assert updated.id == res.id
    assert (updated.source, updated.confidence) == ("user", 0.9)

    again = await ProcedureRunner.load(store, "travel", res.id)
    assert again.state == "confirmed"
    assert again.available_triggers() == ["cancel"]
    stored = await store.get("travel", res.id)
    assert stored is not None and isinstance(stored.content, dict)
    assert stored.content["current"] == "confirmed"
    assert stored.content["transitions"] == BOOK_FLIGHT["transitions"]


async def test_load_refuses_missing_foreign_and_non_procedural(store: MemoryStore) -> None:
    res = await store.remember(
        RememberRequest(agent_id="travel", type=MemoryType.PROCEDURAL, content=BOOK_FLIGHT)
    )
    with pytest.raises(NotFound):
        await ProcedureRunner.load(store, "someone-else", res.id)
    with pytest.raises(NotFound):
        await ProcedureRunner.load(store, "travel", "no-such-id")
    note = await store.remember(
        RememberRequest(agent_id="travel", type=MemoryType.SEMANTIC, content="hello")
    )
    with pytest.raises(InvalidRequest):
        await ProcedureRunner.load(store, "travel", note.id)


async def test_store_refuses_what_the_runner_would_refuse(store: MemoryStore) -> None:
    """The wire model alone admits a trigger named like a model attribute; stores apply the
    full procedural rules at write time, so such a machine is never stored."""
    sneaky = dict(
        BOOK_FLIGHT, transitions=[{"trigger": "to_confirmed", "source": "*", "dest": "confirmed"}]
    )
    with pytest.raises(InvalidRequest) as exc:
        await store.remember(
            RememberRequest(agent_id="travel", type=MemoryType.PROCEDURAL, content=sneaky)
        )
    assert any("trigger" in d.path for d in exc.value.details)
    assert await store.list(ListQuery(agent_id="travel")) == []
