"""Scenarios about the store's identity and what recall returns to whom."""

from __future__ import annotations

from memorywire.errors import InvalidRequest
from memorywire.store.base import Capability, MemoryStore
from memorywire.testing.harness import Harness, Scenario, rem, scenario
from memorywire.wire.models import MemoryType, RecallRequest, RecallResponse

__all__ = ["SCENARIOS"]

C = Capability
KNOWN_HEALTH = {"ok", "degraded", "down"}

#: (text, user) — recall for a user must see only that user's rows.
FACTS = [
    ("The user is allergic to peanuts and shellfish", "u1"),
    ("The user's daughter is called Maya", "u1"),
    ("The user prefers aisle seats on long flights", "u2"),
    ("The user drives a blue electric hatchback", "u2"),
    ("The quarterly report is due on the first Friday of April", None),
]

#: (query, index into FACTS of the expected top hit) — paraphrases, no shared content words.
PARAPHRASES = [
    ("Does this person have any food intolerances?", 0),
    ("What is the name of their child?", 1),
    ("Where do they like to sit when flying?", 2),
    ("What kind of car do they own?", 3),
]


async def _seed(h: Harness, store: MemoryStore, agent: str = "agent-1") -> list[str]:
    return await h.remember_all(store, [rem(agent, t, user_id=u) for t, u in FACTS])


async def protocol(h: Harness, store: MemoryStore) -> None:
    assert isinstance(store, MemoryStore), "store does not implement the MemoryStore protocol"
    assert isinstance(store.name, str) and store.name, "name must be a non-empty string"
    for method in ("remember", "recall", "forget", "merge", "expire", "get", "list", "update",
                   "health", "aclose"):
        assert callable(getattr(store, method, None)), f"missing method {method}"


async def capabilities(h: Harness, store: MemoryStore) -> None:
    caps = store.capabilities
    assert isinstance(caps, frozenset) and caps, "capabilities must be a non-empty frozenset"
    types = {C.SEMANTIC, C.EPISODIC, C.PROCEDURAL, C.EMOTIONAL}
    assert caps & types, "a store must declare at least one memory type"
    for cap in sorted(caps & types):
        mtype = MemoryType(cap.value)
        if mtype is MemoryType.PROCEDURAL:
            content: str | dict[str, object] = {"name": "p", "initial": "a", "states": ["a"]}
        else:
            content = f"a {cap.value} memory"
        resp = await store.remember(rem("agent-1", content, type=mtype))
        assert resp.id and store.name in resp.stores


async def health(h: Harness, store: MemoryStore) -> None:
    status = (await store.health()).status
    assert status in KNOWN_HEALTH, f"health status {status!r} not in {sorted(KNOWN_HEALTH)}"


async def paraphrase_recall(h: Harness, store: MemoryStore) -> None:
    ids = await _seed(h, store)
    for query, want in PARAPHRASES:
        res = await store.recall(RecallRequest(agent_id="agent-1", query=query, k=3))
        got = [hit.id for hit in res.results]
        assert got and got[0] == ids[want], f"{query!r}: expected {FACTS[want][0]!r} first"


async def hit_shape(h: Harness, store: MemoryStore) -> None:
    await _seed(h, store)
    res = await store.recall(RecallRequest(agent_id="agent-1", query="peanut allergy", k=3))
    RecallResponse.model_validate(res.model_dump())
    assert res.results, "a query naming a stored fact returned nothing"
    assert store.name in res.stores_queried
    scores = [hit.score for hit in res.results]
    assert scores == sorted(scores, reverse=True), "results are not ordered best first"
    for hit in res.results:
        assert isinstance(hit.score, float) and isinstance(hit.type, MemoryType)
        assert isinstance(hit.content, str) and hit.content
        assert hit.source_store == store.name, "hits must name their source_store"


async def user_isolation(h: Harness, store: MemoryStore) -> None:
    ids = await _seed(h, store)
    asks = {"u1": ("Is the user allergic to peanuts?", ids[0]),
            "u2": ("What car does the user drive?", ids[3])}
    own = {"u1": {ids[0], ids[1]}, "u2": {ids[2], ids[3]}}
    for user in ("u1", "u2"):
        for query, owner_hit in asks.values():
            res = await store.recall(RecallRequest(agent_id="agent-1", user_id=user, k=10,
                                                   query=query))
            got = {hit.id for hit in res.results}
            assert got <= own[user], f"{user} saw another user's memory for {query!r}"
            if owner_hit in own[user]:
                assert owner_hit in got, f"{user} did not get its own memory for {query!r}"
    assert await store.get("agent-1", ids[2], user_id="u1") is None


async def agent_isolation_many_agents(h: Harness, store: MemoryStore) -> None:
    """Filtered k-NN: 40 other agents hold closer matches; the scoped answer is still full."""
    target = [rem("target", f"The deployment runbook for service {i} lives in the ops wiki")
              for i in range(3)]
    others = [rem(f"other-{a}", "Where is the deployment runbook kept?") for a in range(40)]
    others += [rem(f"other-{a}", f"Deployment runbook copy {a}") for a in range(40)]
    await h.remember_all(store, others)
    mine = set(await h.remember_all(store, target))
    res = await store.recall(RecallRequest(agent_id="target",
                                           query="Where is the deployment runbook kept?", k=5))
    got = {hit.id for hit in res.results}
    assert got == mine, f"expected exactly the agent's 3 memories, got {len(got & mine)} of them "\
        f"and {len(got - mine)} foreign"
    for a in (0, 17, 39):
        res = await store.recall(RecallRequest(agent_id=f"other-{a}", query="runbook", k=10))
        assert len(res.results) == 2, "each other agent sees exactly its own two memories"


async def type_filter(h: Harness, store: MemoryStore) -> None:
    ep = await store.remember(rem("a", "We hiked to the lake on Sunday", type=MemoryType.EPISODIC))
    await store.remember(rem("a", "Lakes are bodies of fresh water"))
    res = await store.recall(RecallRequest(agent_id="a", query="lake", k=5,
                                           types=[MemoryType.EPISODIC]))
    assert [hit.id for hit in res.results] == [ep.id]
    assert all(hit.type is MemoryType.EPISODIC for hit in res.results)


async def metadata_filter(h: Harness, store: MemoryStore) -> None:
    a = await store.remember(rem("a", "Standup moved to 10am", metadata={"project": "apollo",
                                                                        "n": 1}))
    await store.remember(rem("a", "Standup moved to 11am", metadata={"project": "zeus", "n": 1}))
    await store.remember(rem("a", "Standup moved to 9am", metadata={"n": True}))
    res = await store.recall(RecallRequest(agent_id="a", query="standup time",
                                           filter={"project": "apollo"}))
    assert [hit.id for hit in res.results] == [a.id]
    res = await store.recall(RecallRequest(agent_id="a", query="standup time", filter={"n": 1}))
    assert len(res.results) == 2, "JSON equality: true must not equal 1"


async def fresher_than_days(h: Harness, store: MemoryStore) -> None:
    await store.remember(rem("a", "The wifi password is hunter2"))
    h.clock.advance_days(10)
    new = await store.remember(rem("a", "The wifi password is now correcthorse"))
    res = await store.recall(RecallRequest(agent_id="a", query="wifi password",
                                           fresher_than_days=5))
    assert [hit.id for hit in res.results] == [new.id]
    res = await store.recall(RecallRequest(agent_id="a", query="wifi password"))
    assert len(res.results) == 2


async def expires_at_read_time(h: Harness, store: MemoryStore) -> None:
    soon = h.clock.now_ms() + 86_400_000
    r = await store.remember(rem("a", "The parking code is 4471", expires_at=soon))
    assert await store.get("a", r.id) is not None
    h.clock.advance_days(2)
    assert await store.get("a", r.id) is None, "a memory past expires_at is still returned"
    res = await store.recall(RecallRequest(agent_id="a", query="parking code"))
    assert not res.results


async def irrelevant_query_returns_nothing(h: Harness, store: MemoryStore) -> None:
    await _seed(h, store)
    res = await store.recall(RecallRequest(
        agent_id="agent-1", query="lattice quantum chromodynamics renormalization"))
    assert not res.results, "the relevance floor let unrelated memories through"


async def rejected_requests(h: Harness, store: MemoryStore) -> None:
    """Requests v0 says MUST be rejected never reach a store; the data stays intact."""
    from pydantic import ValidationError

    from memorywire.wire.models import ExpireRequest, ForgetRequest

    ids = await _seed(h, store)
    bad = [
        (ForgetRequest, {"agent_id": "agent-1"}),
        (ForgetRequest, {"agent_id": "agent-1", "filter": {}}),
        (ExpireRequest, {"agent_id": "agent-1"}),
        (ExpireRequest, {"agent_id": "agent-1", "policy": {}}),
        (RecallRequest, {"agent_id": "agent-1", "query": ""}),
    ]
    for model, payload in bad:
        try:
            model.model_validate(payload)  # type: ignore[attr-defined]
        except (ValidationError, InvalidRequest):
            continue
        raise AssertionError(f"{model.__name__} accepted {payload}")
    for mid in ids:
        assert await store.get("agent-1", mid) is not None


_s = scenario


SCENARIOS: list[Scenario] = [
    _s(protocol),
    _s(capabilities),
    _s(health),
    _s(paraphrase_recall, C.SEMANTIC, C.VECTOR, semantic_model=True),
    _s(hit_shape, C.SEMANTIC),
    _s(user_isolation, C.SEMANTIC),
    _s(agent_isolation_many_agents, C.SEMANTIC, C.VECTOR),
    _s(type_filter, C.SEMANTIC, C.EPISODIC),
    _s(metadata_filter, C.SEMANTIC),
    _s(fresher_than_days, C.SEMANTIC),
    _s(expires_at_read_time, C.SEMANTIC),
    _s(irrelevant_query_returns_nothing, C.SEMANTIC, C.VECTOR, semantic_model=True),
    _s(rejected_requests, C.SEMANTIC),
]
