"""v0 semantics, run against both built-in stores (real SQLite + sqlite-vec + FTS5)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memorywire.core.clock import DAY_MS, FakeClock
from memorywire.core.scoring import DEMOTE_FACTOR
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import Conflict, InvalidRequest, NotFound
from memorywire.store.base import ListQuery, UpdateRequest
from memorywire.store.memory import InMemoryStore
from memorywire.wire.models import (
    ExpireRequest,
    ForgetRequest,
    MemoryType,
    MergeRequest,
    RecallRequest,
    RememberRequest,
)

pytestmark = pytest.mark.anyio

SEM = MemoryType.SEMANTIC
FLOORS: dict[str, float] = {"relevance_floor": 0.5, "lexical_floor": 0.3}
PROC = {
    "name": "checkout",
    "initial": "cart",
    "states": ["cart", "paid"],
    "transitions": [{"trigger": "pay", "source": "cart", "dest": "paid"}],
}

Store = Any  # InMemoryStore | SqliteStore: both expose remember_many and neighbours


def _make(kind: str, tmp_path: Path, clock: FakeClock) -> Store:
    emb = HashingEmbedder(256)
    if kind == "memory":
        return InMemoryStore(embedder=emb, clock=clock,
                             recall=replace(InMemoryStore.DEFAULT_RECALL, **FLOORS))
    from memorywire.store.sqlite import SqliteStore

    return SqliteStore(tmp_path / "m.db", embedder=emb, clock=clock,
                       recall=replace(SqliteStore.DEFAULT_RECALL, **FLOORS))


@pytest.fixture(params=["memory", "sqlite"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def store(kind: str, tmp_path: Path, clock: FakeClock) -> AsyncIterator[Store]:
    s = _make(kind, tmp_path, clock)
    try:
        yield s
    finally:
        await s.aclose()


async def put(store: Store, content: Any, agent: str = "a1", **kw: Any) -> str:
    kw.setdefault("type", SEM)
    resp = await store.remember(RememberRequest(agent_id=agent, content=content, **kw))
    assert resp.stores == [store.name] and resp.pending_approval is False
    return str(resp.id)


async def ids_for(store: Store, query: str, agent: str = "a1", **kw: Any) -> list[str]:
    resp = await store.recall(RecallRequest(agent_id=agent, query=query, k=10, **kw))
    return [h.id for h in resp.results]


async def test_remember_get_and_recall_exact(store: Store) -> None:
    mid = await put(store, "Alice prefers oolong tea in the morning", user_id="u1",
                    metadata={"topic": "drinks"}, source="user", confidence=0.8)
    rec = await store.get("a1", mid)
    assert rec is not None and rec.content == "Alice prefers oolong tea in the morning"
    assert (rec.user_id, rec.metadata, rec.source, rec.confidence) == (
        "u1", {"topic": "drinks"}, "user", 0.8)
    resp = await store.recall(RecallRequest(agent_id="a1", query=rec.content))
    assert [h.id for h in resp.results] == [mid]
    hit = resp.results[0]
    assert hit.source_store == store.name and hit.supporting == [] and hit.score > 0
    assert hit.metadata == {"topic": "drinks"} and hit.created_at == rec.created_at
    assert resp.stores_queried == [store.name]


async def test_query_about_nothing_stored_returns_nothing(store: Store) -> None:
    await put(store, "Alice prefers oolong tea in the morning")
    await put(store, "Bob walks his dog every evening")
    assert await ids_for(store, "quantum chromodynamics lattice gauge") == []


async def test_caller_id_is_idempotent_and_conflicts_on_other_content(store: Store,
                                                                      clock: FakeClock) -> None:
    first = await store.remember(RememberRequest(agent_id="a1", type=SEM, content="x y z",
                                                 id="fixed-1"))
    clock.advance(5000)
    again = await store.remember(RememberRequest(agent_id="a1", type=SEM, content="x y z",
                                                 id="fixed-1"))
    assert (again.id, again.stored_at) == ("fixed-1", first.stored_at)
    assert len(await store.list(ListQuery(agent_id="a1"))) == 1
    with pytest.raises(Conflict):
        await store.remember(RememberRequest(agent_id="a1", type=SEM, content="other",
                                             id="fixed-1"))
    # the same id under another agent is a different memory, not a leak
    other = await store.remember(RememberRequest(agent_id="a2", type=SEM, content="q",
                                                 id="fixed-1"))
    assert other.id == "fixed-1"


async def test_scoping_by_agent_user_type_filter_and_freshness(store: Store,
                                                               clock: FakeClock) -> None:
    text = "the quarterly report is due friday"
    old = await put(store, text, user_id="u1", metadata={"team": "red"})
    clock.advance_days(10)
    new = await put(store, text + " afternoon", user_id="u2", type=MemoryType.EPISODIC,
                    metadata={"team": "blue"})
    other_agent = await put(store, text, agent="a2")
    assert set(await ids_for(store, text)) == {old, new}
    assert await ids_for(store, text, agent="a2") == [other_agent]
    assert await ids_for(store, text, user_id="u1") == [old]
    assert await ids_for(store, text, types=[MemoryType.EPISODIC]) == [new]
    assert await ids_for(store, text, filter={"team": "red"}) == [old]
    assert await ids_for(store, text, filter={"team": "green"}) == []
    assert await ids_for(store, text, fresher_than_days=5) == [new]
    assert await store.get("a2", old) is None
    assert await store.get("a1", old, user_id="u2") is None


async def test_soft_and_hard_forget(store: Store) -> None:
    a = await put(store, "alpha fact one", metadata={"tag": "x"})
    b = await put(store, "beta fact two", metadata={"tag": "x"})
    c = await put(store, "gamma fact three", metadata={"tag": "y"})
    resp = await store.forget(ForgetRequest(agent_id="a1", ids=[a, "nope"]))
    assert resp.forgotten_ids == [a] and resp.stores[0].count == 1 and not resp.hard_delete
    assert await store.get("a1", a) is None
    assert a not in await ids_for(store, "alpha fact one")
    resp = await store.forget(ForgetRequest(agent_id="a1", filter={"tag": "x"},
                                            hard_delete=True))
    assert set(resp.forgotten_ids) == {a, b}  # the soft-deleted row is scrubbed too
    assert [r.id for r in await store.list(ListQuery(agent_id="a1"))] == [c]
    resp = await store.forget(ForgetRequest(agent_id="a2", ids=[c]))
    assert resp.forgotten_ids == []
    assert await store.get("a1", c) is not None


async def test_recall_tracking(store: Store) -> None:
    mid = await put(store, "the wifi password is on the fridge")
    for _ in range(3):
        await ids_for(store, "the wifi password is on the fridge")
    rec = await store.get("a1", mid)
    assert rec is not None
    assert rec.model_extra is not None and rec.model_extra["recall_count"] == 3


async def test_expire_forget_archive_demote(store: Store, clock: FakeClock) -> None:
    old = await put(store, "old note about the garden hose", confidence=0.3)
    clock.advance_days(40)
    fresh = await put(store, "new note about the garden hose", confidence=0.9)
    with_policy = ExpireRequest.model_validate
    resp = await store.expire(with_policy({"agent_id": "a1", "policy": {"older_than_days": 30},
                                           "action": "archive"}))
    assert resp.matched_count == 1 and resp.stores == [store.name]
    assert await store.get("a1", old) is None
    assert [r.id for r in await store.list(ListQuery(agent_id="a1", include_archived=True))] == [
        old, fresh]
    assert await ids_for(store, "old note about the garden hose") == [fresh]
    before = await store.recall(RecallRequest(agent_id="a1", query="new note garden hose"))
    resp = await store.expire(with_policy({"agent_id": "a1", "policy": {"confidence_below": 1.0},
                                           "action": "demote"}))
    assert resp.matched_count == 1
    after = await store.recall(RecallRequest(agent_id="a1", query="new note garden hose"))
    assert after.results[0].score == pytest.approx(before.results[0].score * DEMOTE_FACTOR)
    resp = await store.expire(with_policy({"agent_id": "a1", "policy": {"type": "semantic"}}))
    assert resp.matched_count == 1 and await store.get("a1", fresh) is None


async def test_expire_no_recall_in_days(store: Store, clock: FakeClock) -> None:
    used = await put(store, "the spare key is under the mat")
    unused = await put(store, "the boiler was serviced in march")
    clock.advance_days(20)
    await ids_for(store, "the spare key is under the mat")
    clock.advance_days(5)
    resp = await store.expire(ExpireRequest.model_validate(
        {"agent_id": "a1", "policy": {"no_recall_in_days": 10}}))
    assert resp.matched_count == 1
    assert await store.get("a1", used) is not None and await store.get("a1", unused) is None


async def test_expires_at_is_honoured_at_read_time(store: Store, clock: FakeClock) -> None:
    mid = await put(store, "the parking permit", expires_at=clock.now_ms() + DAY_MS)
    assert await ids_for(store, "the parking permit") == [mid]
    clock.advance_days(2)
    assert await ids_for(store, "the parking permit") == []
    assert await store.get("a1", mid) is None


@pytest.mark.parametrize(
    ("strategy", "survivor", "content"),
    [
        ("keep_canonical", 0, "carol likes jazz"),
        ("merge_content", 0, "carol likes jazz\ncarol loves jazz music"),
        ("keep_highest_confidence", 1, "carol loves jazz music"),
    ],
)
async def test_merge_strategies_and_links(store: Store, clock: FakeClock, strategy: str,
                                          survivor: int, content: str) -> None:
    a = await put(store, "carol likes jazz", metadata={"entity_name": "carol", "k": 1},
                  confidence=0.5)
    clock.advance(10)
    b = await put(store, "carol loves jazz music", metadata={"k": 2}, confidence=0.9)
    clock.advance(10)
    c = await put(store, "carol's sister plays drums", metadata={"links": [b]})
    resp = await store.merge(MergeRequest.model_validate(
        {"agent_id": "a1", "canonical": "carol", "duplicates": [b], "strategy": strategy}))
    win = [a, b][survivor]
    assert (resp.canonical, resp.merged_count, resp.stores) == (win, 1, [store.name])
    live = {r.id: r for r in await store.list(ListQuery(agent_id="a1"))}
    assert set(live) == {win, c}
    assert live[win].content == content
    if strategy == "merge_content":
        assert live[win].metadata == {"entity_name": "carol", "k": 2,
                                      "links": [{"id": b, "type": "derived_from"}]}
        assert live[win].confidence == 0.9
    assert (await store.neighbours("a1", [c], 1)) == {c: {win: 1}}
    with pytest.raises(NotFound):
        await store.merge(MergeRequest(agent_id="a1", canonical="nobody", duplicates=[c]))


async def test_graph_neighbours_by_hops(store: Store) -> None:
    a = await put(store, "node a")
    b = await put(store, "node b", metadata={"links": [a]})
    c = await put(store, "node c", metadata={"links": [b]})
    assert await store.neighbours("a1", [a], 1) == {a: {b: 1}}
    assert await store.neighbours("a1", [a], 2) == {a: {b: 1, c: 2}}
    assert await store.neighbours("a2", [a], 2) == {}


async def test_procedural_content_round_trips_as_object(store: Store) -> None:
    mid = await put(store, json.dumps(PROC), type=MemoryType.PROCEDURAL)
    rec = await store.get("a1", mid)
    assert rec is not None and rec.content == PROC
    resp = await store.recall(RecallRequest(agent_id="a1", query="checkout cart paid pay"))
    assert resp.results[0].content == PROC
    evil = dict(PROC, transitions=[{"trigger": "t", "source": "cart", "dest": "paid",
                                    "after": "os.system"}])
    with pytest.raises(InvalidRequest):
        await put(store, evil, type=MemoryType.PROCEDURAL)


async def test_update_reembeds_and_refuses_dead_rows(store: Store) -> None:
    mid = await put(store, "the meeting is on tuesday", metadata={"a": 1})
    rec = await store.update(UpdateRequest(agent_id="a1", id=mid,
                                           content="the meeting moved to thursday",
                                           metadata_patch={"b": 2, "a": None}, confidence=0.4))
    assert rec.content == "the meeting moved to thursday" and rec.metadata == {"b": 2}
    assert await ids_for(store, "the meeting moved to thursday") == [mid]
    await store.forget(ForgetRequest(agent_id="a1", ids=[mid]))
    with pytest.raises(NotFound):
        await store.update(UpdateRequest(agent_id="a1", id=mid, confidence=0.1))


async def test_list_pages_oldest_first(store: Store, clock: FakeClock) -> None:
    ids = []
    for i in range(5):
        ids.append(await put(store, f"item number {i}"))
        clock.advance(1)
    page1 = await store.list(ListQuery(agent_id="a1", limit=2))
    page2 = await store.list(ListQuery(agent_id="a1", limit=10, after_id=page1[-1].id))
    assert [r.id for r in page1 + page2] == ids
    assert len(await store.list(ListQuery(agent_id=None))) == 5


async def test_remember_many_batches(store: Store) -> None:
    reqs = [RememberRequest(agent_id="a1", type=SEM, content=f"batch fact {i}", id=f"b{i}")
            for i in range(20)]
    out = await store.remember_many(reqs + reqs[:2])
    assert [r.id for r in out] == [f"b{i}" for i in range(20)] + ["b0", "b1"]
    assert len(await store.list(ListQuery(agent_id="a1"))) == 20


def test_store_factory_signature() -> None:
    made: Callable[..., Any] = InMemoryStore
    assert made(embedder=HashingEmbedder(16)).name == "memory"
