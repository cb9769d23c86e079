"""The store review and approval patterns on PostgreSQL (store and governance database):
the queue's ``decided`` read (newest decision first) and the governed actions behave as on
SQLite."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from memorywire.core.clock import FakeClock
from memorywire.core.timeline import validity_of
from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore, acting_as
from memorywire.governance.patterns import learn
from memorywire.governance.store_review import apply, propose
from memorywire.store.postgres import PostgresStore
from memorywire.testing import postgres as _pg
from memorywire.wire.models import RememberRequest, RememberResponse

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]
pg_server = _pg.pg_server
pg_dsn = _pg.pg_dsn

A = "agent-ui34b"
POLICY = {"rules": [{"name": "web waits", "match": {"source": "web_page"},
                     "decision": "review"}]}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def gov(pg_dsn: str, clock: FakeClock) -> AsyncIterator[GovernedStore]:
    inner = PostgresStore(pg_dsn, HashingEmbedder(64), clock,
                          recall=replace(PostgresStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                         lexical_floor=-1.0))
    g = GovernedStore(inner, pg_dsn, clock=clock, policies=POLICY)
    try:
        yield g
    finally:
        await g.aclose()


async def _write(g: GovernedStore, clock: FakeClock, content: str,
                 source: str | None = None) -> RememberResponse:
    clock.advance(1000)
    with acting_as("writer"):
        return await g.remember(RememberRequest(agent_id=A, type="semantic", content=content,
                                                source=source))


async def test_patterns_learned_from_postgres_decisions(gov: GovernedStore,
                                                        clock: FakeClock) -> None:
    for approve in (True, True, False, True, True, True):
        staged = await _write(gov, clock, f"web fact at {clock.now_ms()}", "web_page")
        assert staged.approval_id is not None
        clock.advance(1000)
        await gov.decide(staged.approval_id, "reviewer", approve)
    decided = [i for i in await gov.decided_items("remember") if i.agent_id == A]
    assert [i.status for i in decided] == ["approved"] * 3 + ["rejected"] + ["approved"] * 2
    assert learn(decided, gov.policies, threshold=4) == []
    [p] = learn(decided, gov.policies, threshold=3)
    assert (p.agent_id, p.source, p.approvals) == (A, "web_page", 3)


async def test_store_review_supersedes_through_governance(gov: GovernedStore,
                                                          clock: FakeClock) -> None:
    berlin = await _write(gov, clock, "Carol lives in Berlin")
    lisbon = await _write(gov, clock, "Carol lives in Lisbon now")
    [found] = await propose(gov, clock.now_ms(), agent_id=A)
    assert (found.kind, found.keep.id, [o.id for o in found.others]) == \
        ("contradiction", lisbon.id, [berlin.id])
    out = await apply(gov, found, "supersede", "reviewer")
    assert out.done == [lisbon.id] and not out.staged
    old = await gov.get(A, berlin.id)
    assert old is not None
    assert validity_of(old.metadata, old.created_at).superseded_by == lisbon.id
    assert await propose(gov, clock.now_ms(), agent_id=A) == []
    assert any(e["actor"] == "reviewer" and e["action"] == "update"
               for e in gov.audit_entries(memory_id=lisbon.id))
