"""Per-store router settings: a child's own deadline, and ``trust`` in every fusion mode."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import anyio
import pytest

from memorywire.core.fusion import fuse
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.router import MemoryRouter
from memorywire.store.memory import InMemoryStore
from memorywire.wire.models import RecallRequest, RecallResponse, RememberRequest

pytestmark = pytest.mark.anyio
AGENT = "agent-1"


def store(name: str) -> InMemoryStore:
    return InMemoryStore(embedder=HashingEmbedder(), name=name,
                         recall=replace(InMemoryStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                        lexical_floor=-1.0))


class Slow(InMemoryStore):
    """A real store whose recall takes ``delay`` seconds."""

    delay = 0.0

    async def recall(self, req: RecallRequest) -> RecallResponse:
        await anyio.sleep(self.delay)
        return await super().recall(req)


def slow(name: str, delay: float) -> Slow:
    s = Slow(embedder=HashingEmbedder(), name=name,
             recall=replace(Slow.DEFAULT_RECALL, relevance_floor=-1.0, lexical_floor=-1.0))
    s.delay = delay
    return s


def recall(query: str, **kw: Any) -> RecallRequest:
    return RecallRequest.model_validate({"agent_id": AGENT, "query": query, **kw})


async def _only_in(s: InMemoryStore, content: str, id: str | None = None) -> str:
    resp = await s.remember(RememberRequest(agent_id=AGENT, type="semantic",  # type: ignore[arg-type]
                                            content=content, id=id))
    return resp.id


# The margins are real ones: a healthy in-memory store answers within a router deadline of
# 0.75 s even on a loaded machine, and a slow one misses it by as much again.


async def test_a_child_deadline_longer_than_the_router_s_is_waited_for() -> None:
    fast, archive = store("fast"), slow("archive", 1.5)
    await _only_in(archive, "the archive knows the boiler code")
    plain = MemoryRouter([fast, archive], timeout=0.75)
    assert [f.store for f in (await plain.recall(recall("boiler code"))).failures] == ["archive"]
    patient = MemoryRouter([fast, archive], timeout=0.75, deadlines={"archive": 20.0})
    resp = await patient.recall(recall("boiler code"))
    assert resp.failures == [] and resp.stores_queried == ["fast", "archive"]
    assert [h.source_store for h in resp.results] == ["archive"]


async def test_a_child_deadline_shorter_than_the_router_s_cuts_it_off() -> None:
    fast, laggard = store("fast"), slow("laggard", 30.0)
    router = MemoryRouter([fast, laggard], timeout=60.0, deadlines={"laggard": 0.5})
    t0 = time.perf_counter()
    resp = await router.recall(recall("anything"))
    assert time.perf_counter() - t0 < 10.0  # cut off: neither the 30 s nor the router's 60 s
    assert [(f.store, f.code) for f in resp.failures] == [("laggard", "backend_unavailable")]
    assert "0.5s" in resp.failures[0].error


@pytest.mark.parametrize("mode", ["rrf", "max", "weighted"])
def test_trust_lowers_a_store_in_every_fusion_mode(mode: str) -> None:
    lists = {"a": [("shared", 0.9), ("a-only", 0.8)], "b": [("b-only", 0.85)]}
    even = [f.id for f in fuse(lists, mode)]
    assert even.index("b-only") < even.index("a-only"), even
    doubted = [f.id for f in fuse(lists, mode, trust={"b": 0.5})]
    assert doubted.index("b-only") > doubted.index("a-only"), doubted


async def test_router_fuses_with_trust() -> None:
    """Each child holds one memory at rank 0: an rrf tie (broken by id, so a's "m1" first)
    until ``a`` is trusted less."""
    a, b = store("a"), store("b")
    await _only_in(a, "tea with lemon at noon", id="m1")
    await _only_in(b, "tea with lemon at noon please", id="m2")
    even = await MemoryRouter([a, b]).recall(recall("tea with lemon", k=2))
    assert [h.source_store for h in even.results] == ["a", "b"]
    doubted = await MemoryRouter([a, b], trust={"a": 0.5}).recall(recall("tea with lemon", k=2))
    assert [h.source_store for h in doubted.results] == ["b", "a"]
    assert doubted.results[0].score == pytest.approx(1 / 60)
    assert doubted.results[1].score == pytest.approx(0.5 / 60)


@pytest.mark.parametrize("kw", [{"trust": {"a": 0}}, {"trust": {"a": 1.5}},
                                {"trust": {"zz": 0.5}}, {"deadlines": {"a": 0}},
                                {"deadlines": {"zz": 1.0}}])
def test_bad_per_store_settings_are_refused(kw: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequest):
        MemoryRouter([store("a"), store("b")], **kw)
