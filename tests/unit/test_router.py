"""MemoryRouter over real stores: identity, fusion, policies, quorum, graph boost, nesting."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import CapabilityMissing, Conflict, InvalidRequest, NotFound
from memorywire.router import MemoryRouter, fetch_size
from memorywire.store.base import Capability, ListQuery, MemoryStore, UpdateRequest
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.codec import to_wire
from memorywire.wire.models import (
    ExpireRequest,
    ForgetRequest,
    MemoryType,
    MergeRequest,
    RecallRequest,
    RememberRequest,
)

pytestmark = pytest.mark.anyio

AGENT = "agent-1"
FACTS = [
    "the user prefers dark roast coffee in the morning",
    "the user's sister lives in Lisbon near the river",
    "the deploy pipeline runs on every merge to main",
    "the cat is called Miso and hates the vacuum cleaner",
    "the quarterly report is due on the first Friday",
]


def store(name: str, clock: FakeClock | None = None) -> InMemoryStore:
    return InMemoryStore(embedder=HashingEmbedder(), clock=clock, name=name,
                         recall=replace(InMemoryStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                        lexical_floor=-1.0))


def remember(content: str, **kw: object) -> RememberRequest:
    return RememberRequest.model_validate({"agent_id": AGENT, "type": "semantic",
                                           "content": content, **kw})


def recall(query: str, **kw: object) -> RecallRequest:
    return RecallRequest.model_validate({"agent_id": AGENT, "query": query, **kw})


async def fill(router: MemoryRouter, clock: FakeClock | None = None) -> list[str]:
    ids = []
    for fact in FACTS:
        ids.append((await router.remember(remember(fact))).id)
        if clock is not None:
            clock.advance(1)
    return ids


async def test_one_identity_and_each_memory_once() -> None:
    a, b = store("a"), store("b")
    router = MemoryRouter([a, b])
    ids = await fill(router)
    for mid in ids:
        ra, rb = await a.get(AGENT, mid), await b.get(AGENT, mid)
        assert ra is not None and rb is not None and ra.content == rb.content
    resp = await router.recall(recall("what coffee does the user like", k=5))
    got = [h.id for h in resp.results]
    assert len(got) == len(set(got)) == 5
    assert set(got) == set(ids)
    assert got[0] == ids[0]
    # both stores rank the coffee memory first: rrf gives 1/60 + 1/60
    assert math.isclose(resp.results[0].score, 2 / 60)
    assert resp.results[0].source_store == "a"  # rank tie goes to the primary
    assert resp.fusion_used.value == "rrf"
    assert resp.stores_queried == ["a", "b"]
    assert resp.latency_ms >= 0 and resp.failures == []
    assert all(h.supporting == [] for h in resp.results)
    body = to_wire(resp)  # the wire body: a field left None (stores_failed) is omitted
    assert set(body) == {"results", "fusion_used", "stores_queried", "latency_ms"}


async def test_remember_honours_caller_id_and_reports_stores() -> None:
    router = MemoryRouter([store("a"), store("b")])
    resp = await router.remember(remember("the sky is blue", id="fixed-id-1"))
    assert resp.id == "fixed-id-1" and resp.stores == ["a", "b"] and not resp.pending_approval
    again = await router.remember(remember("the sky is blue", id="fixed-id-1"))
    assert again.stored_at == resp.stored_at
    with pytest.raises(Conflict):
        await router.remember(remember("the sky is green", id="fixed-id-1"))


async def test_over_fetch_and_cut_to_k() -> None:
    assert fetch_size(5) == 15 and fetch_size(10) == 20 and fetch_size(900) == 1000
    router = MemoryRouter([store("a"), store("b")])
    await fill(router)
    resp = await router.recall(recall("user", k=2))
    assert len(resp.results) == 2


async def test_primary_only_writes_first_store() -> None:
    a, b = store("a"), store("b")
    router = MemoryRouter([a, b], remember_policy="primary_only")
    resp = await router.remember(remember("only in the primary"))
    assert resp.stores == ["a"]
    assert await a.get(AGENT, resp.id) is not None
    assert await b.get(AGENT, resp.id) is None
    assert [h.id for h in (await router.recall(recall("primary"))).results] == [resp.id]


async def test_quorum_drops_ids_only_one_store_returns() -> None:
    a, b = store("a"), store("b")
    both = await MemoryRouter([a, b]).remember(remember("coffee shared by both stores"))
    lone = await a.remember(remember("coffee known to one store only"))
    one = await MemoryRouter([a, b]).recall(recall("coffee"))
    assert {h.id for h in one.results} == {both.id, lone.id}
    two = await MemoryRouter([a, b], quorum=2).recall(recall("coffee"))
    assert [h.id for h in two.results] == [both.id]


async def test_fusion_modes_echo_and_weights() -> None:
    a, b = store("a"), store("b")
    router = MemoryRouter([a, b], weights={"a": 2.0, "b": 0.5})
    await fill(router)
    ra = await a.recall(recall("sister Lisbon"))
    for mode in ("rrf", "max", "weighted"):
        resp = await router.recall(recall("sister Lisbon", fusion=mode))
        assert resp.fusion_used.value == mode
        assert resp.results[0].id == ra.results[0].id
    mx = await router.recall(recall("sister Lisbon", fusion="max"))
    assert math.isclose(mx.results[0].score, ra.results[0].score)
    wt = await router.recall(recall("sister Lisbon", fusion="weighted"))
    assert math.isclose(wt.results[0].score, 2.5 * ra.results[0].score)


async def test_graph_boost_reports_supporting_ids() -> None:
    a, b = store("a"), store("b")
    router = MemoryRouter([a, b])
    cat = await router.remember(remember("the cat Miso sleeps on the sofa"))
    vet = await router.remember(remember("Miso visits the vet every spring",
                                         metadata={"links": [cat.id]}))
    await router.remember(remember("spring cleaning of the garage"))
    flat = await router.recall(recall("Miso spring", k=3))
    hop = await router.recall(recall("Miso spring", k=3, hops=1))
    flat_s = {h.id: h.score for h in flat.results}
    hop_by = {h.id: h for h in hop.results}
    assert hop_by[vet.id].supporting == [cat.id]
    assert hop_by[cat.id].supporting == [vet.id]
    assert math.isclose(hop_by[vet.id].score, flat_s[vet.id] * 1.05)
    assert all(h.supporting == [] for h in flat.results)


async def test_nested_router_fans_out_with_one_identity() -> None:
    a, b, c = store("a"), store("b"), store("c")
    inner = MemoryRouter([a, b], name="inner")
    outer = MemoryRouter([inner, c], name="outer")
    assert isinstance(outer, MemoryStore)
    ids = await fill(outer)
    first = await outer.remember(remember("nested routers share identity"))
    assert first.stores == ["inner", "c"]
    for s in (a, b, c):
        assert await s.get(AGENT, first.id) is not None
    resp = await outer.recall(recall("nested routers identity", k=3))
    got = [h.id for h in resp.results]
    assert got[0] == first.id and len(got) == len(set(got))
    assert resp.results[0].source_store == "inner"
    # the inner router fuses a and b (2/60), the outer fuses inner and c: 1/60 + 1/60
    assert math.isclose(resp.results[0].score, 2 / 60)
    linked = await outer.remember(remember("graph through nesting",
                                           metadata={"links": [ids[0]]}))
    boosted = await outer.recall(recall("graph through nesting coffee", k=6, hops=2))
    assert {h.id: h.supporting for h in boosted.results}[linked.id] == [ids[0]]


async def test_forget_merge_expire_aggregate_per_store() -> None:
    clock = FakeClock()
    a, b = store("a", clock), store("b", clock)
    router = MemoryRouter([a, b])
    ids = await fill(router)
    f = await router.forget(ForgetRequest(agent_id=AGENT, ids=[ids[0]]))
    assert f.forgotten_ids == [ids[0]] and not f.hard_delete
    assert [(s.store, s.count, s.error) for s in f.stores] == [("a", 1, None), ("b", 1, None)]
    assert await router.get(AGENT, ids[0]) is None
    m = await router.merge(MergeRequest(agent_id=AGENT, canonical=ids[1], duplicates=[ids[2]]))
    assert (m.canonical, m.merged_count, m.stores, m.errors) == (ids[1], 1, ["a", "b"], None)
    clock.advance_days(40)
    e = await router.expire(ExpireRequest.model_validate(
        {"agent_id": AGENT, "policy": {"older_than_days": 30}, "action": "archive"}))
    # ids[0] forgotten, ids[2] merged away: three live memories are older than 30 days
    assert e.matched_count == 3 and e.stores == ["a", "b"] and e.errors is None
    assert set(e.matched_ids or []) == {ids[1], ids[3], ids[4]}
    with pytest.raises(NotFound):
        await router.merge(MergeRequest(agent_id=AGENT, canonical="nope", duplicates=["x"]))


async def test_get_list_update_delegate() -> None:
    clock = FakeClock()
    a, b = store("a", clock), store("b", clock)
    router = MemoryRouter([a, b])
    ids = await fill(router, clock)
    only_b = await b.remember(remember("a memory only b holds"))
    got = await router.get(AGENT, only_b.id)
    assert got is not None and got.content == "a memory only b holds"
    listed = await router.list(ListQuery(agent_id=AGENT))
    assert [r.id for r in listed] == [*ids, only_b.id]
    page = await router.list(ListQuery(agent_id=AGENT, after_id=ids[1], limit=2))
    assert [r.id for r in page] == ids[2:4]
    rec = await router.update(UpdateRequest(agent_id=AGENT, id=ids[0],
                                            metadata_patch={"tier": "ltm"}))
    assert rec.metadata == {"tier": "ltm"}
    for s in (a, b):
        r = await s.get(AGENT, ids[0])
        assert r is not None and r.metadata == {"tier": "ltm"}
    with pytest.raises(NotFound):
        await router.update(UpdateRequest(agent_id=AGENT, id="missing", confidence=0.5))
    health = await router.health()
    assert health.status == "ok" and set(health.details["stores"]) == {"a", "b"}
    await router.aclose()


async def test_capabilities_union_but_tracking_needs_all() -> None:
    class NoTracking(InMemoryStore):
        @property
        def capabilities(self) -> frozenset[Capability]:
            return super().capabilities - {Capability.RECALL_TRACKING, Capability.GRAPH}

    plain = NoTracking(embedder=HashingEmbedder(), name="plain")
    router = MemoryRouter([store("a"), plain])
    assert Capability.GRAPH in router.capabilities
    assert Capability.RECALL_TRACKING not in router.capabilities
    assert Capability.GOVERNANCE not in router.capabilities
    with pytest.raises(CapabilityMissing, match="plain"):
        await router.expire(ExpireRequest.model_validate(
            {"agent_id": AGENT, "policy": {"no_recall_in_days": 3}}))
    assert Capability.RECALL_TRACKING in MemoryRouter([store("x"), store("y")]).capabilities
    with pytest.raises(CapabilityMissing):
        await MemoryRouter([plain]).recall(recall("q", hops=1))
    with pytest.raises(CapabilityMissing):
        await router.remember(remember("needs review", approval_required=True))


@pytest.mark.parametrize(
    "kwargs",
    [{"stores": []}, {"quorum": 3}, {"quorum": 0}, {"timeout": 0}, {"weights": {"zz": 1.0}},
     {"weights": {"a": -1.0}}, {"remember_policy": "some"}],
)
def test_constructor_rejects_bad_settings(kwargs: dict[str, object]) -> None:
    args: dict[str, object] = {"stores": [store("a"), store("b")], **kwargs}
    with pytest.raises(InvalidRequest):
        MemoryRouter(**args)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest):
        MemoryRouter([store("a"), store("a")])


async def test_recall_respects_types() -> None:
    router = MemoryRouter([store("a"), store("b")])
    await router.remember(remember("coffee memory"))
    ep = await router.remember(RememberRequest(agent_id=AGENT, type=MemoryType.EPISODIC,
                                               content="coffee with Ana yesterday"))
    resp = await router.recall(recall("coffee", types=["episodic"]))
    assert [h.id for h in resp.results] == [ep.id]


async def test_mixed_backends_sqlite_and_memory(tmp_path: Path) -> None:
    sq = SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder(), name="sqlite",
                     recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                    lexical_floor=-1.0))
    router = MemoryRouter([sq, store("mem")])
    try:
        ids = await fill(router)
        resp = await router.recall(recall("where does the sister live", k=5))
        got = [h.id for h in resp.results]
        assert sorted(got) == sorted(ids) and got[0] == ids[1]
        assert math.isclose(resp.results[0].score, 2 / 60)
        assert resp.results[0].source_store == "sqlite" and resp.failures == []
        f = await router.forget(ForgetRequest(agent_id=AGENT, ids=[ids[1]], hard_delete=True))
        assert f.forgotten_ids == [ids[1]] and [s.count for s in f.stores] == [1, 1]
        again = await router.recall(recall("where does the sister live", k=5))
        assert ids[1] not in {h.id for h in again.results}
    finally:
        await router.aclose()
