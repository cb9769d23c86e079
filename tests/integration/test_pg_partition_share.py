"""Without iterative scans (pgvector 0.6, pgserver's build) the store widens
``hnsw.ef_search`` by the agent's share of the graph its search walks. On a table
partitioned by agent that graph is the agent's partition's: the width is read from the
partition's row count, not the whole table's, and the planner still takes the partition's
HNSW index under it, and the answer still holds the scope's true nearest rows."""

from __future__ import annotations

import re

import numpy as np
import psycopg
import pytest
from psycopg.rows import dict_row

from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.postgres import PostgresStore
from memorywire.store.postgres.knn import ann_ef, scope_counts, vector_candidates
from memorywire.store.postgres.partitions import partition_by_agent
from memorywire.store.postgres.sql import PgVector, scope_where, vector_literal
from memorywire.testing import postgres as _pg
from tests.integration.pg_explain import ExplainingConnection
from tests.integration.pg_rows import copy_rows

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]
pg_server = _pg.pg_server
pg_dsn = _pg.pg_dsn

AGENTS, PER_AGENT, PARTITIONS, POOL, EXACT_LIMIT = 10, 1500, 8, 10, 100
PGVECTOR_06 = (0, 6, 2)  # the share scaling applies only before iterative scans


def _load(dsn: str, vecs: np.ndarray) -> None:
    copy_rows(dsn, ("agent_id", "id", "type", "content", "created_at", "embedding"),
              ((f"agent-{i % AGENTS}", f"m{i}", "semantic", f"note {i}", i, vector_literal(v))
               for i, v in enumerate(vecs)))


async def test_a_partitioned_scopes_search_width_is_its_partitions_share(
        pg_dsn: str) -> None:
    emb = HashingEmbedder()
    store = PostgresStore(pg_dsn, emb, name="pg")
    try:
        await store.health()  # the store creates its schema
    finally:
        await store.aclose()
    async with await psycopg.AsyncConnection.connect(pg_dsn, row_factory=dict_row) as conn:
        await partition_by_agent(conn, PARTITIONS)
    rng = np.random.default_rng(35)
    n = AGENTS * PER_AGENT
    vecs = rng.standard_normal((n, emb.dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    _load(pg_dsn, vecs)
    with psycopg.connect(pg_dsn) as sync:
        part = sync.execute(  # the rows of the partition agent-0's rows live in, counted
            "SELECT count(*) FROM memorywire_memories m WHERE m.tableoid = (SELECT tableoid "
            "FROM memorywire_memories WHERE agent_id = 'agent-0' LIMIT 1)").fetchone()
        hnsw_of = {r[0]: r[1] for r in sync.execute(
            "SELECT indexname, tablename FROM pg_indexes WHERE indexdef LIKE '%USING hnsw%' "
            "AND tablename LIKE 'memorywire_memories_p%'").fetchall()}
    assert part is not None and PER_AGENT <= part[0] < n

    conn = await ExplainingConnection.connect(pg_dsn, row_factory=dict_row)
    conn.plans = []
    async with conn:
        counts = await scope_counts(conn, ["agent-0", "nobody"], EXACT_LIMIT)
        # the partition's rows (ANALYZE's estimate, exact at this size), not the table's
        assert counts == {"agent-0": (PER_AGENT, part[0])}
        # below the exact bound no graph is searched: the scope is all that is read
        assert await scope_counts(conn, ["agent-0"], PER_AGENT) == {
            "agent-0": (PER_AGENT, PER_AGENT)}
        ef = ann_ef(POOL, PER_AGENT, part[0], PGVECTOR_06)
        assert ef < ann_ef(POOL, PER_AGENT, n, PGVECTOR_06)  # narrower than the table's share

        q = vecs[0] * 0.6 + vecs[AGENTS] * 0.4  # near two of agent-0's rows
        q /= np.linalg.norm(q)
        w = scope_where(agent_id="agent-0", user_id=None, now_ms=n + 1)
        async with conn.transaction():  # the store's reads run in one
            got = await vector_candidates(conn, "agent-0", w, PgVector(q), POOL,
                                          exact_limit=EXACT_LIMIT, pgvector=PGVECTOR_06)
    rows = np.arange(0, n, AGENTS)
    truth = {f"m{j}" for j in rows[np.argsort(-(vecs[rows] @ q))][:POOL]}
    assert len(got) == POOL
    assert len(truth & {r["id"] for r in got}) >= POOL - 1  # recall@10 of the graph

    # the width the store set, and the plan it got under it: the partition's own graph
    assert [e for e, _ in conn.plans] == [ef]
    plan = conn.plans[0][1]
    used = [u for u in re.findall(r"Index Scan using (\S+) on (\S+)", plan) if u[0] in hnsw_of]
    assert len(used) == 1, plan
    assert hnsw_of[used[0][0]] == used[0][1]
    assert "Seq Scan" not in plan, plan
    assert len({int(p) for p in re.findall(r"memorywire_memories_p(\d+)", plan)}) == 1, plan


async def test_an_unpartitioned_scopes_search_width_is_its_share_of_the_table(
        pg_dsn: str) -> None:
    emb = HashingEmbedder()
    store = PostgresStore(pg_dsn, emb, name="pg")
    try:
        await store.health()
    finally:
        await store.aclose()
    rng = np.random.default_rng(36)
    n = 3 * 2 * EXACT_LIMIT
    vecs = rng.standard_normal((n, emb.dim)).astype(np.float32)
    copy_rows(pg_dsn, ("agent_id", "id", "type", "content", "created_at", "embedding"),
              ((f"agent-{i % 3}", f"m{i}", "semantic", f"note {i}", i, vector_literal(v))
               for i, v in enumerate(vecs)))
    async with await psycopg.AsyncConnection.connect(pg_dsn, row_factory=dict_row) as conn:
        counts = await scope_counts(conn, ["agent-1", "agent-2"], EXACT_LIMIT)
    assert counts == {"agent-1": (n // 3, n), "agent-2": (n // 3, n)}
