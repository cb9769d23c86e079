"""Mem0Store over a real mem0 ``Memory`` (no LLM, local in-memory Qdrant): every v0 semantic
the adapter claims, ownership checks mem0 lacks, payload losslessness, errors at one point."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import (
    BackendUnavailable,
    CapabilityMissing,
    Conflict,
    InvalidRequest,
    NotFound,
)
from memorywire.store.base import Capability, ListQuery, MemoryStore, UpdateRequest
from memorywire.store.mem0 import Mem0Store
from memorywire.store.registry import open_store
from memorywire.wire.models import (
    ExpireAction,
    ExpirePolicy,
    ExpireRequest,
    ForgetRequest,
    MemoryType,
    MergeRequest,
    MergeStrategy,
    RecallRequest,
    RememberRequest,
)

if importlib.util.find_spec("mem0") is None:
    pytest.skip("the mem0 store needs: pip install 'memorywire[mem0]'", allow_module_level=True)

pytestmark = pytest.mark.anyio
A, B = "agent-a", "agent-b"


def rem(content: str | dict[str, Any], agent: str = A, **kw: Any) -> RememberRequest:
    kw.setdefault("type", "semantic")
    return RememberRequest.model_validate({"agent_id": agent, "content": content, **kw})


def rec(query: str, agent: str = A, **kw: Any) -> RecallRequest:
    return RecallRequest.model_validate({"agent_id": agent, "query": query, **kw})


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def store(clock: FakeClock) -> AsyncIterator[Mem0Store]:
    s = Mem0Store(embedder=HashingEmbedder(), clock=clock, relevance_floor=0.2,
                  lexical_floor=0.2)
    yield s
    await s.aclose()


def mem0_items(store: Mem0Store) -> list[dict[str, Any]]:
    """What mem0 itself holds, every state, every agent (its unscoped view)."""
    items: list[dict[str, Any]] = store.memory.get_all(filters={"agent_id": "*"}, top_k=10_000,
                                                       show_expired=True)["results"]
    return items


async def test_fields_round_trip_losslessly_and_mem0_holds_the_text(
    store: Mem0Store, clock: FakeClock
) -> None:
    meta = {"entity_name": "Zoë", "nested": {"a": [1, 2.5, None]}, "flag": True, "n": 3,
            "ratio": 0.25, "tags": ["x", "y"], "dotted.key": "v", "user_id": "not-a-scope"}
    out = await store.remember(rem("Zoë drinks matcha ☕", user_id="user one", source="tool_result",
                                   confidence=0.7, metadata=meta, type="emotional",
                                   expires_at=clock.now_ms() + 10_000, id="my-own-id"))
    assert out.id == "my-own-id" and out.stores == ["mem0"] and out.stored_at == clock.now_ms()
    got = await store.get(A, "my-own-id")
    assert got is not None
    assert (got.type, got.content, got.user_id, got.source, got.confidence) == (
        MemoryType.EMOTIONAL, "Zoë drinks matcha ☕", "user one", "tool_result", 0.7)
    assert got.metadata == meta and got.created_at == out.stored_at
    assert got.expires_at == clock.now_ms() + 10_000
    [item] = mem0_items(store)
    assert item["memory"] == "Zoë drinks matcha ☕" and item["id"] != "my-own-id"
    assert item["metadata"]["mw_id"] == "my-own-id"
    # An id mem0 refuses (whitespace) travels as a token; the exact id stays in our payload.
    assert item["user_id"].startswith("mw-") and item["agent_id"] == A


async def test_procedural_keeps_the_machine_and_mem0_embeds_its_words(store: Mem0Store) -> None:
    fsm = {"name": "refund_flow", "initial": "asked", "states": ["asked", "approved"],
           "transitions": [{"trigger": "approve", "source": "asked", "dest": "approved"}]}
    out = await store.remember(rem(fsm, type="procedural"))
    got = await store.get(A, out.id)
    assert got is not None and isinstance(got.content, dict) and got.content["name"] == fsm["name"]
    assert mem0_items(store)[0]["memory"] == "refund flow asked approved approve"
    hits = await store.recall(rec("refund flow approve", types=["procedural"]))
    assert [h.id for h in hits.results] == [out.id] and hits.results[0].content == got.content


async def test_retry_is_idempotent_and_a_different_body_conflicts(
    store: Mem0Store, clock: FakeClock
) -> None:
    first = await store.remember(rem("the sky is blue", id="x1"))
    clock.advance(5_000)
    again = await store.remember(rem("the sky is blue", id="x1"))
    assert again.stored_at == first.stored_at and len(mem0_items(store)) == 1
    with pytest.raises(Conflict):
        await store.remember(rem("the sky is green", id="x1"))
    # Ids are per agent: B may use the same id for its own memory.
    await store.remember(rem("B's own sky", agent=B, id="x1"))
    assert (await store.get(B, "x1")) is not None and len(mem0_items(store)) == 2


async def test_another_agent_cannot_read_or_change_by_our_id_or_mem0_uuid(
    store: Mem0Store,
) -> None:
    mine = await store.remember(rem("agent a keeps the vault code 4711"))
    uuid = mem0_items(store)[0]["id"]
    for ref in (mine.id, uuid):
        assert await store.get(B, ref) is None
        gone = await store.forget(ForgetRequest(agent_id=B, ids=[ref], hard_delete=True))
        assert gone.forgotten_ids == []
        with pytest.raises(NotFound):
            await store.update(UpdateRequest(agent_id=B, id=ref, content="hijacked"))
        with pytest.raises(NotFound):
            await store.merge(MergeRequest(agent_id=B, canonical=ref, duplicates=[ref]))
    assert (await store.recall(rec("vault code 4711", agent=B))).results == []
    got = await store.get(A, mine.id)
    assert got is not None and got.content == "agent a keeps the vault code 4711"


async def test_wildcard_and_whitespace_ids_stay_in_their_own_scope(store: Mem0Store) -> None:
    """mem0 reads a filter value "*" as "anything"; a hostile id must not widen a scope."""
    victim = await store.remember(rem("secret plan for the launch", agent="team one",
                                      user_id="u 1"))
    await store.remember(rem("star agent launch note", agent="*", user_id="*"))
    star = await store.recall(rec("plan for the launch", agent="*", k=10))
    assert victim.id not in {h.id for h in star.results} and len(star.results) == 1
    star_user = await store.recall(rec("launch", agent="team one", user_id="*"))
    assert star_user.results == []
    assert [h.id for h in (await store.recall(rec("launch plan", agent="team one"))).results] == [
        victim.id]
    assert await store.get("team one", victim.id, user_id="u 1") is not None
    assert await store.get("team one", victim.id, user_id="u") is None
    gone = await store.forget(ForgetRequest(agent_id="team one", ids=["*"]))
    assert gone.forgotten_ids == []
    flt = await store.forget(ForgetRequest(agent_id="*", filter={"x": "*"}))
    assert flt.forgotten_ids == []


async def test_soft_delete_hides_but_keeps_hard_delete_removes_and_scrubs_history(
    store: Mem0Store,
) -> None:
    soft = await store.remember(rem("soft memory about tulips"))
    hard = await store.remember(rem("hard memory about orchids"))
    await store.forget(ForgetRequest(agent_id=A, ids=[soft.id], reason="user asked"))
    assert await store.get(A, soft.id) is None
    assert soft.id not in {h.id for h in (await store.recall(rec("tulips"))).results}
    states = {i["metadata"]["mw_id"]: i["metadata"]["mw_state"] for i in mem0_items(store)}
    assert states[soft.id] == "deleted"
    again = await store.forget(ForgetRequest(agent_id=A, ids=[soft.id]))
    assert again.forgotten_ids == []

    uuid = next(i["id"] for i in mem0_items(store) if i["metadata"]["mw_id"] == hard.id)
    assert store.memory.history(uuid)
    out = await store.forget(ForgetRequest(agent_id=A, ids=[hard.id, soft.id], hard_delete=True))
    assert sorted(out.forgotten_ids) == sorted([hard.id, soft.id]) and out.hard_delete
    assert out.stores[0].count == 2 and mem0_items(store) == []
    assert store.memory.history(uuid) == []


async def test_forget_by_metadata_filter_is_json_exact(store: Mem0Store) -> None:
    yes = await store.remember(rem("topic alpha one", metadata={"topic": "alpha", "on": True}))
    await store.remember(rem("topic alpha list", metadata={"topic": ["alpha"], "on": 1}))
    await store.remember(rem("topic beta", metadata={"topic": "beta", "on": True}))
    out = await store.forget(ForgetRequest(agent_id=A, filter={"topic": "alpha", "on": True}))
    assert out.forgotten_ids == [yes.id]


async def test_recall_filters_types_freshness_floor_and_read_time_expiry(
    store: Mem0Store, clock: FakeClock
) -> None:
    old = await store.remember(rem("we hiked to the lake", type="episodic",
                                   metadata={"trip": "north", "n": 1}))
    clock.advance_days(10)
    new = await store.remember(rem("the lake holds fresh water",
                                   metadata={"trip": "north", "n": 1.0}))
    short = await store.remember(rem("the lake gate code is 12", expires_at=clock.now_ms() + 1000))
    ids = lambda r: {h.id for h in r.results}  # noqa: E731
    assert ids(await store.recall(rec("lake", k=10))) == {old.id, new.id, short.id}
    assert ids(await store.recall(rec("lake", types=["episodic"]))) == {old.id}
    assert ids(await store.recall(rec("lake", fresher_than_days=5, k=10))) == {new.id, short.id}
    assert ids(await store.recall(rec("lake", filter={"trip": "north", "n": 1}))) == {
        old.id, new.id}
    assert ids(await store.recall(rec("lake", filter={"trip": "*"}))) == set()
    assert (await store.recall(rec("quantum chromodynamics renormalisation"))).results == []
    clock.advance(1000)
    assert short.id not in ids(await store.recall(rec("lake gate code", k=10)))
    assert await store.get(A, short.id) is None


async def test_filtered_top_k_is_exact_when_closer_rows_fail_the_filter(store: Mem0Store) -> None:
    """A post-filter over a short over-fetch would come back empty; the store digs deeper."""
    for i in range(120):
        await store.remember(rem(f"release checklist item number {i}", metadata={"ok": False}))
    wanted = await store.remember(rem("the release checklist lives in the wiki",
                                      metadata={"ok": True}))
    hits = await store.recall(rec("release checklist item number", k=3, filter={"ok": True}))
    assert [h.id for h in hits.results] == [wanted.id]


async def test_merge_strategies_follow_the_core_rules(store: Mem0Store, clock: FakeClock) -> None:
    a = await store.remember(rem("Ana likes tea", confidence=0.5,
                                 metadata={"entity_name": "Ana", "k": 1}))
    clock.advance(1)
    b = await store.remember(rem("Ana lives in Porto", confidence=0.9, metadata={"k": 2, "z": 1}))
    out = await store.merge(MergeRequest(agent_id=A, canonical="Ana", duplicates=[b.id],
                                         strategy=MergeStrategy.MERGE_CONTENT))
    assert (out.canonical, out.merged_count) == (a.id, 1)
    got = await store.get(A, a.id)
    assert got is not None and got.content == "Ana likes tea\nAna lives in Porto"
    assert got.metadata == {"entity_name": "Ana", "k": 2, "z": 1,
                            "links": [{"id": b.id, "type": "derived_from"}]}
    assert got.confidence == 0.9
    assert await store.get(A, b.id) is None
    assert [h.id for h in (await store.recall(rec("Porto"))).results] == [a.id]

    c = await store.remember(rem("Ana was born in 1990", confidence=1.0))
    out = await store.merge(MergeRequest(agent_id=A, canonical=a.id, duplicates=[c.id],
                                         strategy=MergeStrategy.KEEP_HIGHEST_CONFIDENCE))
    assert out.canonical == c.id and await store.get(A, a.id) is None
    d = await store.remember(rem("Ana again", confidence=0.1))
    out = await store.merge(MergeRequest(agent_id=A, canonical=c.id, duplicates=[d.id]))
    kept = await store.get(A, c.id)
    assert out.merged_count == 1 and kept is not None and kept.content == "Ana was born in 1990"
    with pytest.raises(NotFound):
        await store.merge(MergeRequest(agent_id=A, canonical="nobody", duplicates=[c.id]))


async def test_expire_actions_and_missing_recall_tracking(
    store: Mem0Store, clock: FakeClock
) -> None:
    assert Capability.RECALL_TRACKING not in store.capabilities
    with pytest.raises(CapabilityMissing):
        await store.expire(ExpireRequest(agent_id=A, policy=ExpirePolicy(no_recall_in_days=3)))
    low = await store.remember(rem("coffee beans from Kenya", confidence=0.2))
    mid = await store.remember(rem("coffee grinder settings", confidence=0.5))
    top = await store.remember(rem("coffee brewing temperature", confidence=0.9))
    clock.advance_days(2)
    young = await store.remember(rem("coffee shop opening hours", confidence=0.2))

    out = await store.expire(ExpireRequest(agent_id=A, action=ExpireAction.DEMOTE,
                                           policy=ExpirePolicy(confidence_below=0.6)))
    assert set(out.matched_ids or []) == {low.id, mid.id, young.id}
    before = {h.id: h.score for h in (await store.recall(rec("coffee", k=10))).results}
    assert set(before) == {low.id, mid.id, top.id, young.id}
    raw = {i["metadata"]["mw_id"]: i for i in mem0_items(store)}
    assert all(raw[x]["metadata"]["mw_demoted"] for x in (low.id, mid.id, young.id))
    mem0_says = {i["metadata"]["mw_id"]: i["score"] for i in store.memory.search(
        "coffee", filters={"agent_id": A}, threshold=0.0, top_k=10)["results"]}
    for x in (low.id, mid.id, young.id):
        assert before[x] == pytest.approx(0.25 * mem0_says[x])
    assert before[top.id] == pytest.approx(mem0_says[top.id])

    out = await store.expire(ExpireRequest(agent_id=A, action=ExpireAction.ARCHIVE,
                                           policy=ExpirePolicy(older_than_days=1,
                                                               confidence_below=0.3)))
    assert out.matched_ids == [low.id]
    assert low.id not in {h.id for h in (await store.recall(rec("coffee", k=10))).results}
    listed = await store.list(ListQuery(agent_id=A, include_archived=True))
    assert low.id in {r.id for r in listed}
    assert low.id not in {r.id for r in await store.list(ListQuery(agent_id=A))}

    out = await store.expire(ExpireRequest(agent_id=A, policy=ExpirePolicy(older_than_days=1)))
    assert set(out.matched_ids or []) == {mid.id, top.id}
    assert {r.id for r in await store.list(ListQuery(agent_id=A))} == {young.id}


async def test_update_patches_in_place_and_reembeds(store: Mem0Store, clock: FakeClock) -> None:
    m = await store.remember(rem("the printer is on floor two", metadata={"a": 1, "b": 2}))
    clock.advance(10)
    got = await store.update(UpdateRequest(agent_id=A, id=m.id, content="the printer moved to "
                                           "the basement", metadata_patch={"a": None, "c": 3},
                                           confidence=0.4))
    assert got.metadata == {"b": 2, "c": 3} and got.updated_at == clock.now_ms()
    again = await store.get(A, m.id)
    assert again is not None and again.model_dump() == got.model_dump()
    assert [h.id for h in (await store.recall(rec("printer basement"))).results] == [m.id]
    with pytest.raises(NotFound):
        await store.update(UpdateRequest(agent_id=A, id="missing", confidence=0.1))


async def test_list_is_oldest_first_paged_and_scoped(store: Mem0Store, clock: FakeClock) -> None:
    ids = []
    for i in range(5):
        ids.append((await store.remember(rem(f"note {i}", user_id="u1" if i % 2 else "u2"))).id)
        clock.advance(1)
    await store.remember(rem("other agent note", agent=B))
    assert [r.id for r in await store.list(ListQuery(agent_id=A))] == ids
    page = await store.list(ListQuery(agent_id=A, limit=2, after_id=ids[1]))
    assert [r.id for r in page] == ids[2:4]
    assert [r.id for r in await store.list(ListQuery(agent_id=A, user_id="u1"))] == ids[1::2]
    everyone = await store.list(ListQuery(agent_id=None))
    assert len(everyone) == 6 and {r.agent_id for r in everyone} == {A, B}


async def test_backend_failures_are_translated_at_one_point(store: Mem0Store) -> None:
    await store.remember(rem("something to search"))
    vector_store = store.memory.vector_store

    def broken(*args: Any, **kw: Any) -> Any:
        raise RuntimeError("qdrant went away")

    original = vector_store.search
    vector_store.search = broken  # fault injection into the real backend
    try:
        with pytest.raises(BackendUnavailable, match="qdrant went away"):
            await store.recall(rec("something"))
    finally:
        vector_store.search = original
    await store.aclose()
    with pytest.raises(BackendUnavailable):
        await store.recall(rec("something"))
    assert (await store.health()).status == "down"


async def test_open_store_by_url_persists_in_a_folder(tmp_path: Path) -> None:
    url = f"mem0://?path={tmp_path / 'q'}&collection=notes"
    first: MemoryStore = open_store(url, embedder=HashingEmbedder())
    assert isinstance(first, Mem0Store) and (await first.health()).status == "ok"
    out = await first.remember(rem("persisted across restarts"))
    await first.aclose()
    second = open_store(url, embedder=HashingEmbedder())
    try:
        got = await second.get(A, out.id)
        assert got is not None and got.content == "persisted across restarts"
    finally:
        await second.aclose()
    with pytest.raises(InvalidRequest):
        open_store("mem0://?colection=typo")


def test_capabilities_are_honest() -> None:
    caps = Mem0Store.__dict__["capabilities"].fget(None)  # type: ignore[union-attr]
    assert Capability.VECTOR in caps
    assert not caps & {Capability.FTS, Capability.GRAPH, Capability.RECALL_TRACKING}
