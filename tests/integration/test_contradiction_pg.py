"""The conflict search on PostgreSQL: the meaning rule from pgvector's cosines at one model
call a write, and candidates through the indexes at any scope size."""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed import MiniLMEmbedder
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.postgres import PostgresStore
from memorywire.store.postgres.conflicts import CONFLICT_EXACT_ROWS
from memorywire.store.timeline import (
    CONFLICT_LEXICAL,
    CONFLICT_NEIGHBOURS,
    Probe,
    conflicts_for,
    no_conflict_scan,
)
from memorywire.testing import postgres as _pg
from memorywire.wire.models import MemoryType, RememberRequest
from tests.unit.test_contradiction_meaning import BROADBAND, ISP, Counting, _req

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]
pg_server = _pg.pg_server
pg_dsn = _pg.pg_dsn


async def test_postgres_reports_a_paraphrased_update_from_stored_vectors(
        pg_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    counting = Counting(MiniLMEmbedder(cache_dir=tmp_path_factory.mktemp("mw-cache"),
                                       cache_entries=0))
    store = PostgresStore(pg_dsn, counting, FakeClock(1_000_000))
    try:
        isp = (await store.remember(_req(ISP))).id
        await store.remember(_req("The user's dentist name is Berlin."))
        assert [c.id for c in await conflicts_for(store, _req(BROADBAND))] == [isp]
        before = counting.texts
        resp = await store.remember(_req(BROADBAND))
        assert counting.texts == before + 1
        assert [c.id for c in resp.conflicts or []] == [isp]
        assert not (await store.remember(_req("The user's bank name is Vienna."))).conflicts
    finally:
        await store.aclose()


async def test_postgres_finds_a_contradicted_memory_in_a_large_scope(pg_dsn: str) -> None:
    """Past the exact bound the scope is searched through HNSW and the full-text index: the
    fact stated first is still found after thousands of others, from a bounded number of
    candidates, and another user's value or a superseded one is never named."""
    store = PostgresStore(pg_dsn, HashingEmbedder(), FakeClock(1_000_000))
    try:
        klm = (await store.remember(_fact("The user's favourite airline is KLM."))).id
        await store.remember(_fact("The user's favourite airline is Lufthansa.", user="other"))
        topics = ["garden", "piano", "chess", "bread", "bikes", "hotel", "train", "coffee"]
        with no_conflict_scan():  # the filler's own scans are not what is tested
            for start in range(0, CONFLICT_EXACT_ROWS + 500, 500):
                await store.remember_many([_fact(
                    f"The user mentioned the {topics[i % 8]} {topics[i * 7 % 8]} story {i}.")
                    for i in range(start, start + 500)])
        vector = (await store.embed_requests([_fact(RYANAIR)]))[0]
        [found] = await store.conflict_candidates([Probe("a", "u", MemoryType.SEMANTIC,
                                                         RYANAIR, vector)])
        assert len(found) <= CONFLICT_NEIGHBOURS + CONFLICT_LEXICAL
        resp = await store.remember(_fact(RYANAIR))
        assert [c.id for c in resp.conflicts or []] == [klm]
        later = await store.remember(_fact("The user's favourite airline is easyJet.",
                                           supersedes=[resp.id]))
        assert [c.id for c in later.conflicts or []] == [klm]  # the superseded one is history
    finally:
        await store.aclose()


RYANAIR = "The user's favourite airline is Ryanair."


def _fact(text: str, user: str = "u", **kw: Any) -> RememberRequest:
    return RememberRequest(agent_id="a", user_id=user, type=MemoryType.SEMANTIC, content=text,
                           **kw)
