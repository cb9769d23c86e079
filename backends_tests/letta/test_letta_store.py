"""What the conformance suite cannot see: Letta-specific storage, recovery, errors, governance."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memorywire.errors import BackendUnavailable, CapabilityMissing, Conflict, PendingApproval
from memorywire.governance import GovernedStore
from memorywire.governance.actor import acting_as
from memorywire.store.base import Capability, ListQuery, UpdateRequest
from memorywire.store.letta import LettaStore
from memorywire.store.registry import open_store
from memorywire.testing.harness import StoreFactory
from memorywire.wire.models import (
    ExpirePolicy,
    ExpireRequest,
    ForgetRequest,
    MemoryType,
    RecallRequest,
    RememberRequest,
)

A = "agent-letta"
FSM = {"name": "brew_tea", "initial": "idle", "states": ["idle", "boiling", "steeping"],
       "transitions": [{"trigger": "heat", "source": "idle", "dest": "boiling"}],
       "current": "idle"}


@pytest.fixture
async def store(letta_factory: StoreFactory) -> AsyncIterator[LettaStore]:
    s = letta_factory()
    assert isinstance(s, LettaStore)
    yield s
    await s.aclose()


async def _passages(s: LettaStore, agent_id: str) -> list[dict[str, Any]]:
    archive = await s._archive(agent_id, create=False)
    assert archive is not None
    async with httpx.AsyncClient(base_url=s._http.base_url) as c:
        r = await c.post("/v1/passages/search", json={"archive_id": archive, "limit": 100})
        return [x["passage"] for x in r.json()]


@pytest.mark.anyio
async def test_every_field_round_trips_through_passage_metadata(store: LettaStore) -> None:
    rid = f"mw-{uuid.uuid4().hex}"
    await store.remember(RememberRequest(
        agent_id=A, user_id="alice", type=MemoryType.EPISODIC, content="Met Bob at the café ☕",
        metadata={"entity_name": "bob", "nested": {"a": [1, 2.5, None, "x"]}}, confidence=0.7,
        source="user", expires_at=9_999_999_999_999, id=rid))
    proc = await store.remember(RememberRequest(agent_id=A, type=MemoryType.PROCEDURAL,
                                                content=json.dumps(FSM)))
    got = await store.get(A, rid)
    assert got is not None
    assert (got.user_id, got.type, got.content, got.confidence, got.source, got.expires_at) == (
        "alice", MemoryType.EPISODIC, "Met Bob at the café ☕", 0.7, "user", 9_999_999_999_999)
    assert got.metadata == {"entity_name": "bob", "nested": {"a": [1, 2.5, None, "x"]}}
    fsm = await store.get(A, proc.id)
    assert fsm is not None and fsm.content == FSM
    # Letta holds the memorywire id in its metadata and tags; its own passage id is separate.
    raw = {p["metadata"]["memorywire"]["id"]: p for p in await _passages(store, A)}
    assert sorted(raw[rid]["tags"]) == sorted(["memorywire", f"mwid:{rid}"])
    assert raw[rid]["id"].startswith("passage-") and raw[rid]["id"] != rid
    # What Letta embedded for a procedure is its words, not its JSON.
    assert raw[proc.id]["text"] == "brew tea idle boiling steeping heat"


@pytest.mark.anyio
async def test_scoping_by_agent_and_user(store: LettaStore) -> None:
    a = await store.remember(RememberRequest(agent_id=A, user_id="u1", type=MemoryType.SEMANTIC,
                                             content="The launch code is tangerine"))
    await store.remember(RememberRequest(agent_id="other", user_id="u1",
                                         type=MemoryType.SEMANTIC,
                                         content="The launch code is tangerine"))
    assert await store.get("other", a.id) is None
    assert await store.get(A, a.id, user_id="u2") is None
    hits = await store.recall(RecallRequest(agent_id=A, query="launch code", user_id="u2"))
    assert hits.results == []
    hits = await store.recall(RecallRequest(agent_id=A, query="launch code"))
    assert [h.id for h in hits.results] == [a.id]
    with pytest.raises(Conflict):
        await store.remember(RememberRequest(agent_id=A, type=MemoryType.SEMANTIC,
                                             content="different", id=a.id))


@pytest.mark.anyio
async def test_soft_delete_keeps_a_marked_passage_and_hard_delete_removes_it(
    store: LettaStore,
) -> None:
    soft = await store.remember(RememberRequest(agent_id=A, type=MemoryType.SEMANTIC,
                                                content="soft one"))
    hard = await store.remember(RememberRequest(agent_id=A, type=MemoryType.SEMANTIC,
                                                content="hard one"))
    await store.forget(ForgetRequest(agent_id=A, ids=[soft.id]))
    await store.forget(ForgetRequest(agent_id=A, ids=[hard.id], hard_delete=True))
    docs = [p["metadata"]["memorywire"] for p in await _passages(store, A)]
    assert [(d["id"], d["rev"], d["deleted_at"] is not None) for d in docs] == [
        (soft.id, 2, True)]
    assert await store.get(A, soft.id) is None


@pytest.mark.anyio
async def test_a_crash_between_new_revision_and_old_delete_is_invisible(
    store: LettaStore,
) -> None:
    r = await store.remember(RememberRequest(agent_id=A, type=MemoryType.SEMANTIC,
                                             content="Tea is best at 80C"))
    _, rows = await store._scan(A)
    archive = await store._archive(A, create=False)
    assert archive is not None
    # The first half of a rewrite only: the new revision lands, the old passage stays.
    from dataclasses import replace
    await store._write(archive, replace(rows[r.id], rev=2, confidence=0.3))
    assert len(await _passages(store, A)) == 2
    fresh = LettaStore(str(store._http.base_url),
                       embedding_endpoint=store._embedding_config["embedding_endpoint"],
                       archive_prefix=store._prefix)
    try:
        got = await fresh.get(A, r.id)
        assert got is not None and got.confidence == 0.3
        assert [x.id for x in await fresh.list(ListQuery(agent_id=A))] == [r.id]
    finally:
        await fresh.aclose()
    assert len(await _passages(store, A)) == 1  # the reader cleaned up the stale revision


@pytest.mark.anyio
async def test_update_and_paging_past_letta_search_cap(store: LettaStore) -> None:
    ids = [(await store.remember(RememberRequest(agent_id=A, type=MemoryType.SEMANTIC,
                                                 content=f"fact number {i}"))).id
           for i in range(105)]
    listed = await store.list(ListQuery(agent_id=A, limit=1000))
    assert [x.id for x in listed] == ids
    rec = await store.update(UpdateRequest(agent_id=A, id=ids[0], metadata_patch={"k": "v"}))
    assert rec.metadata == {"k": "v"} and rec.updated_at is not None
    page = await store.list(ListQuery(agent_id=A, after_id=ids[100]))
    assert [x.id for x in page] == ids[101:]


@pytest.mark.anyio
async def test_declared_capabilities_are_honest(store: LettaStore) -> None:
    assert Capability.RECALL_TRACKING not in store.capabilities
    assert Capability.GRAPH not in store.capabilities
    with pytest.raises(CapabilityMissing):
        await store.expire(ExpireRequest(agent_id=A, policy=ExpirePolicy(no_recall_in_days=3)))


@pytest.mark.anyio
async def test_unreachable_server_is_backend_unavailable() -> None:
    s = LettaStore("http://127.0.0.1:9", embedding_endpoint="http://127.0.0.1:9/v1", timeout=2)
    try:
        with pytest.raises(BackendUnavailable):
            await s.remember(RememberRequest(agent_id=A, type=MemoryType.SEMANTIC, content="x"))
        assert (await s.health()).status == "down"
    finally:
        await s.aclose()


@pytest.mark.anyio
async def test_open_store_by_url(letta_factory: StoreFactory) -> None:
    probe = letta_factory()
    assert isinstance(probe, LettaStore)
    base = str(probe._http.base_url).replace("http://", "letta://")
    endpoint = probe._embedding_config["embedding_endpoint"]
    await probe.aclose()
    s = open_store(f"{base}?embedding_endpoint={endpoint}&prefix=t{uuid.uuid4().hex[:8]}")
    try:
        assert isinstance(s, LettaStore) and (await s.health()).status == "ok"
    finally:
        await s.aclose()


@pytest.mark.anyio
async def test_governed_remember_is_invisible_until_approved_with_the_same_id(
    store: LettaStore, tmp_path: Path,
) -> None:
    gov = GovernedStore(store, tmp_path / "gov.db")
    try:
        with acting_as("writer"):
            staged = await gov.remember(RememberRequest(
                agent_id=A, type=MemoryType.SEMANTIC, content="Alice prefers green tea",
                approval_required=True))
        assert staged.pending_approval and staged.stores == []
        assert await _visible(gov) == set()
        assert await store._archive(A, create=False) is None  # nothing reached Letta
        with pytest.raises(PendingApproval):
            await gov.remember(RememberRequest(agent_id=A, type=MemoryType.SEMANTIC,
                                               content="other", id=staged.id))
        review = await gov.get_review(staged.id)
        done = await gov.approve(staged.id, "reviewer", review["content_hash"], "ok")
        assert done["status"] == "approved"
        assert await _visible(gov) == {staged.id}
        rec = await gov.get(A, staged.id)
        assert rec is not None and rec.content == "Alice prefers green tea"
        assert [p["metadata"]["memorywire"]["id"] for p in await _passages(store, A)] == [
            staged.id]
        assert gov.verify()["ok"]
    finally:
        await gov.aclose()


async def _visible(gov: GovernedStore) -> set[str]:
    hits = await gov.recall(RecallRequest(agent_id=A, query="Alice green tea", k=50))
    return {h.id for h in hits.results} | {r.id for r in await gov.list(ListQuery(agent_id=A))}
