"""SqliteStore against InMemoryStore (the oracle) under random operation sequences."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.base import ListQuery
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import (
    ExpireRequest,
    ForgetRequest,
    MemoryType,
    MergeRequest,
    RecallRequest,
    RememberRequest,
)

AGENTS = ["a", "b"]
PHRASES = [
    "the cat sleeps on the sofa", "coffee with oat milk", "meeting moved to thursday",
    "dentist appointment in june", "likes hiking in the alps", "the cat hates the vet",
    "prefers tea over coffee", "password hint is a river",
]
# lexical_floor == relevance_floor: the full-text list may reorder but never decides
# membership, so the two stores' tokenisers cannot make their result sets differ. Per-row
# floors (tail_gap=None) on both: SqliteStore's default list gate has a full-text rescue
# the oracle does not model.
FLOORS: dict[str, Any] = {"relevance_floor": 0.45, "lexical_floor": 0.45, "tail_gap": None}


class StoreComparison(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.portal_cm = start_blocking_portal()
        self.portal = self.portal_cm.__enter__()
        self.tmp = tempfile.TemporaryDirectory()
        self.clock = FakeClock()
        emb = HashingEmbedder(64)
        self.oracle = InMemoryStore(embedder=emb, clock=self.clock,
                                    recall=replace(InMemoryStore.DEFAULT_RECALL, **FLOORS))
        self.real = SqliteStore(Path(self.tmp.name) / "m.db", embedder=emb, clock=self.clock,
                                recall=replace(SqliteStore.DEFAULT_RECALL, **FLOORS))
        self.counter = 0
        self.known: dict[str, tuple[str, str]] = {}  # id -> (agent, content)

    def both(self, method: str, arg: Any) -> tuple[Any, Any]:
        outcomes = []
        for store in (self.oracle, self.real):
            try:
                outcomes.append(("ok", self.portal.call(getattr(store, method), arg)))
            except Exception as exc:  # compared, never swallowed
                outcomes.append(("error", type(exc).__name__))
        (k1, v1), (k2, v2) = outcomes
        assert k1 == k2, (method, outcomes)
        if k1 == "error":
            assert v1 == v2
        return v1, v2

    def live(self, agent: str) -> tuple[list[str], list[str]]:
        a, b = self.both("list", ListQuery(agent_id=agent, limit=10_000))
        return [r.id for r in a], [r.id for r in b]

    @rule(agent=st.sampled_from(AGENTS), phrase=st.sampled_from(PHRASES),
          mtype=st.sampled_from([MemoryType.SEMANTIC, MemoryType.EPISODIC, MemoryType.EMOTIONAL]),
          user=st.sampled_from([None, "u1"]), conf=st.sampled_from([0.2, 0.6, 1.0]),
          entity=st.sampled_from([None, "cat", "tea"]))
    def remember(self, agent: str, phrase: str, mtype: MemoryType, user: str | None,
                 conf: float, entity: str | None) -> None:
        self.counter += 1
        mid = f"m{self.counter}"
        meta = {"entity_name": entity} if entity else None
        a, b = self.both("remember", RememberRequest(agent_id=agent, type=mtype, content=phrase,
                                                     user_id=user, confidence=conf,
                                                     metadata=meta, id=mid))
        assert a.id == b.id == mid and a.stored_at == b.stored_at
        self.known[mid] = (agent, phrase)

    @rule(days=st.integers(1, 20))
    def tick(self, days: int) -> None:
        self.clock.advance_days(days)

    @precondition(lambda self: bool(self.known))
    @rule(data=st.data())
    def recall_exact(self, data: st.DataObject) -> None:
        mid = data.draw(st.sampled_from(sorted(self.known)))
        agent, content = self.known[mid]
        a, b = self.both("recall", RecallRequest(agent_id=agent, query=content, k=1000))
        ids_a, ids_b = {h.id for h in a.results}, {h.id for h in b.results}
        assert ids_a == ids_b
        live_a, _ = self.live(agent)
        assert (mid in live_a) == (mid in ids_a)

    @precondition(lambda self: bool(self.known))
    @rule(data=st.data(), hard=st.booleans())
    def forget(self, data: st.DataObject, hard: bool) -> None:
        ids = data.draw(st.lists(st.sampled_from(sorted(self.known)), min_size=1, max_size=3))
        agent = data.draw(st.sampled_from(AGENTS))
        a, b = self.both("forget", ForgetRequest(agent_id=agent, ids=ids, hard_delete=hard))
        assert sorted(a.forgotten_ids) == sorted(b.forgotten_ids)

    @precondition(lambda self: len(self.known) >= 2)
    @rule(data=st.data(), strategy=st.sampled_from(
        ["keep_canonical", "merge_content", "keep_highest_confidence"]))
    def merge(self, data: st.DataObject, strategy: str) -> None:
        agent = data.draw(st.sampled_from(AGENTS))
        canonical = data.draw(st.sampled_from([*sorted(self.known), "cat", "tea"]))
        dups = data.draw(st.lists(st.sampled_from([*sorted(self.known), "cat"]), min_size=1,
                                  max_size=3))
        a, b = self.both("merge", MergeRequest.model_validate(
            {"agent_id": agent, "canonical": canonical, "duplicates": dups,
             "strategy": strategy}))
        if not isinstance(a, str):
            assert (a.canonical, a.merged_count) == (b.canonical, b.merged_count)
            if a.merged_count and strategy == "merge_content":
                ra, rb = self.both("list", ListQuery(agent_id=agent, limit=10_000))
                assert [r.content for r in ra] == [r.content for r in rb]
                for r in ra:
                    self.known[r.id] = (agent, str(r.content))

    @rule(agent=st.sampled_from(AGENTS), policy=st.sampled_from([
        {"older_than_days": 10}, {"type": "episodic"}, {"confidence_below": 0.5},
        {"no_recall_in_days": 15}, {"type": "semantic", "older_than_days": 5}]),
        action=st.sampled_from(["forget", "archive", "demote"]))
    def expire(self, agent: str, policy: dict[str, Any], action: str) -> None:
        a, b = self.both("expire", ExpireRequest.model_validate(
            {"agent_id": agent, "policy": policy, "action": action}))
        assert a.matched_count == b.matched_count and a.matched_ids == b.matched_ids

    @invariant()
    def same_live_ids(self) -> None:
        for agent in AGENTS:
            a, b = self.live(agent)
            assert a == b, agent

    def teardown(self) -> None:
        try:
            self.portal.call(self.real.aclose)
        finally:
            self.portal_cm.__exit__(None, None, None)
            self.tmp.cleanup()


StoreComparison.TestCase.settings = settings(
    max_examples=50, stateful_step_count=20, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestStoreComparison = StoreComparison.TestCase
