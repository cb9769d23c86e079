"""The detector's meaning rule on PostgreSQL: cosines from pgvector, one model call a write."""

from __future__ import annotations

import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed import MiniLMEmbedder
from memorywire.store.postgres import PostgresStore
from memorywire.store.timeline import conflicts_for
from memorywire.testing import postgres as _pg
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
