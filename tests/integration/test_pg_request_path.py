"""What an API server's PostgreSQL path saves per request keeps the behaviour it replaced.

A pooled connection is handed out without an empty query when its socket is quiet, a single
statement runs without BEGIN and COMMIT, and query vectors travel as binary ``real[]``
parameters (cpu35 in docs/benchmarks.md); each is checked here against the real server.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import anyio
import numpy as np
import psycopg
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.postgres import PostgresStore
from memorywire.store.postgres.db import check_idle_connection
from memorywire.store.postgres.sql import PgVector, vector_literal
from memorywire.testing import postgres as _pg
from memorywire.wire.models import RecallRequest, RememberRequest

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]
pg_server = _pg.pg_server
pg_dsn = _pg.pg_dsn

EMB = HashingEmbedder(64)


def _rem(text: str) -> RememberRequest:
    return RememberRequest.model_validate({"agent_id": "a", "type": "semantic", "content": text})


@pytest.fixture
def executes() -> Iterator[list[str]]:
    """The statements connections send while the test runs."""
    sent: list[str] = []
    original = psycopg.AsyncConnection.execute

    async def counting(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(query))
        return await original(self, query, *args, **kwargs)

    psycopg.AsyncConnection.execute = counting  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        psycopg.AsyncConnection.execute = original  # type: ignore[method-assign]


async def test_vector_parameter_casts_to_the_same_vector_as_the_text_form(pg_dsn: str) -> None:
    rng = np.random.default_rng(35)
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        for dim in (1, 3, 384):
            for _ in range(5):
                v = rng.standard_normal(dim).astype(np.float32)
                cur = await conn.execute("SELECT %s::vector::text AS a, %s::vector::text AS b",
                                         (vector_literal(v), PgVector(v)))
                a, b = await cur.fetchone() or ("", "")
                assert a == b
                back = np.array(b.strip("[]").split(","), dtype=np.float32)
                assert np.array_equal(back, v)


async def test_idle_connection_is_handed_out_without_a_query(
    pg_dsn: str, executes: list[str]
) -> None:
    async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
        executes.clear()
        await check_idle_connection(conn)
        assert executes == []
        # once the server ended it, the socket holds its goodbye: psycopg's own check runs
        # (the empty query) and fails, which makes the pool discard the connection
        async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as admin:
            await admin.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        await anyio.sleep(0.3)
        executes.clear()
        with pytest.raises(psycopg.OperationalError):
            await check_idle_connection(conn)
        assert executes == [""]


async def test_connections_the_server_ended_are_replaced_not_failed(pg_dsn: str) -> None:
    store = PostgresStore(pg_dsn, EMB, min_size=2, max_size=2, timeout=5.0,
                          recall=replace(PostgresStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                         lexical_floor=-1.0))
    try:
        first = await store.remember(_rem("before the backends were terminated"))
        async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as admin:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        await anyio.sleep(0.3)  # the goodbye reaches the pooled sockets
        second = await store.remember(_rem("after the backends were terminated"))
        assert await store.get("a", first.id) is not None
        assert await store.get("a", second.id) is not None
        hits = await store.recall(RecallRequest(agent_id="a", query="terminated backends"))
        assert {h.id for h in hits.results} >= {first.id, second.id}
    finally:
        await store.aclose()


async def test_single_statement_leaves_the_connection_transactional(pg_dsn: str) -> None:
    store = PostgresStore(pg_dsn, EMB, min_size=1, max_size=1)
    db = store._db
    try:
        async with db.single() as conn:
            assert conn.autocommit
            cur = await conn.execute("SELECT 1 AS one")
            assert (await cur.fetchone()) == {"one": 1}
        async with db.tx() as conn:  # the pool's only connection, back in transactions
            assert not conn.autocommit
            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
    finally:
        await store.aclose()
