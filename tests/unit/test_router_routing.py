"""Router fixes of issue 14: who is named as queried, who is written, and merges that name
nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import BackendUnavailable, CapabilityMissing, NotFound
from memorywire.router import MemoryRouter
from memorywire.store.base import Capability
from memorywire.store.memory import InMemoryStore
from memorywire.wire.models import (
    MergeRequest,
    RecallRequest,
    RecallResponse,
    RememberRequest,
    RememberResponse,
)

pytestmark = pytest.mark.anyio
AGENT = "agent-1"


def _store(name: str) -> InMemoryStore:
    return InMemoryStore(embedder=HashingEmbedder(), name=name,
                         recall=replace(InMemoryStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                        lexical_floor=-1.0))


def _rem(content: str, mtype: str = "semantic", **kw: object) -> RememberRequest:
    return RememberRequest.model_validate({"agent_id": AGENT, "type": mtype,
                                           "content": content, **kw})


class FactsOnly(InMemoryStore):
    """A backend that keeps semantic memories only (as a narrow plugin store would)."""

    @property
    def capabilities(self) -> frozenset[Capability]:
        return super().capabilities - {Capability.EPISODIC, Capability.PROCEDURAL,
                                       Capability.EMOTIONAL}

    async def remember(self, req: RememberRequest) -> RememberResponse:
        if req.type.value != "semantic":
            raise CapabilityMissing(f"{self.name} keeps no {req.type.value} memories")
        return await super().remember(req)


class Down(InMemoryStore):
    async def recall(self, req: RecallRequest) -> RecallResponse:
        raise BackendUnavailable("injected outage")


async def test_stores_queried_names_only_children_that_answered() -> None:
    router = MemoryRouter([_store("a"), Down(embedder=HashingEmbedder(), name="b")])
    await router.remember(_rem("coffee is brewed at 93 degrees"))
    resp = await router.recall(RecallRequest(agent_id=AGENT, query="coffee"))
    assert resp.stores_queried == ["a"]
    assert [f.store for f in resp.failures] == ["b"]


async def test_writes_skip_children_without_the_memory_type() -> None:
    facts = FactsOnly(embedder=HashingEmbedder(), name="facts",
                      recall=replace(FactsOnly.DEFAULT_RECALL, relevance_floor=-1.0,
                                     lexical_floor=-1.0))
    router = MemoryRouter([facts, _store("all")])
    felt = await router.remember(_rem("I was glad the build passed", "emotional"))
    assert felt.stores == ["all"] and felt.failures == []
    assert await facts.get(AGENT, felt.id) is None
    fact = await router.remember(_rem("the build runs on two cores"))
    assert fact.stores == ["facts", "all"]
    only_facts = MemoryRouter([facts], name="narrow")
    with pytest.raises(CapabilityMissing, match="emotional"):
        await only_facts.remember(_rem("I was cross", "emotional"))


async def test_merge_with_an_unknown_duplicate_is_refused_but_a_retry_is_not() -> None:
    router = MemoryRouter([_store("a"), _store("b")])
    keep = (await router.remember(_rem("Paris is the capital of France"))).id
    dup = (await router.remember(_rem("The capital of France is Paris"))).id
    with pytest.raises(NotFound, match="nosuchid"):
        await router.merge(MergeRequest(agent_id=AGENT, canonical=keep, duplicates=["nosuchid"]))
    await router.remember(RememberRequest(agent_id="agent-2", type="semantic",
                                          content="Agent two's note", id="theirs"))
    with pytest.raises(NotFound, match="theirs"):
        await router.merge(MergeRequest(agent_id=AGENT, canonical=keep, duplicates=["theirs"]))
    done = await router.merge(MergeRequest(agent_id=AGENT, canonical=keep, duplicates=[dup]))
    assert done.merged_count == 1
    again = await router.merge(MergeRequest(agent_id=AGENT, canonical=keep, duplicates=[dup]))
    assert again.merged_count == 0
