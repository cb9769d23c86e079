"""The memories table hash-partitioned by agent under a running store: the store's own SQL
works unchanged, and PostgreSQL prunes each scoped query to the agent's one partition."""

from __future__ import annotations

import re

import numpy as np
import psycopg
import pytest
from psycopg.rows import dict_row

from memorywire.core.records import ListQuery
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.store.postgres import PostgresStore
from memorywire.store.postgres.knn import ann_sql
from memorywire.store.postgres.partitions import partition_by_agent
from memorywire.store.postgres.sql import scope_where, vector_literal
from memorywire.testing import postgres as _pg
from memorywire.wire.models import ForgetRequest, MemoryType, RecallRequest, RememberRequest
from tests.integration.pg_rows import copy_rows

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]
pg_server = _pg.pg_server
pg_dsn = _pg.pg_dsn

PARTITIONS = 8


def _partitions(dsn: str, sql: str, params: list[object]) -> set[int]:
    """The partitions a plan reads (their tables or their indexes, by number)."""
    with psycopg.connect(dsn, prepare_threshold=None) as conn:
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, params).fetchall())
    return {int(n) for n in re.findall(r"memorywire_memories_p(\d+)", plan)}


async def test_the_store_runs_on_agent_partitions_and_each_query_reads_one(
        pg_dsn: str) -> None:
    store = PostgresStore(pg_dsn, HashingEmbedder(), name="pg")
    try:
        await store.health()  # the store creates its schema
        async with await psycopg.AsyncConnection.connect(pg_dsn, row_factory=dict_row) as conn:
            await partition_by_agent(conn, PARTITIONS)
            with pytest.raises(InvalidRequest, match="already"):
                await partition_by_agent(conn, PARTITIONS)
        for a in range(20):
            await store.remember_many([RememberRequest(
                agent_id=f"agent-{a}", type=MemoryType.SEMANTIC, id=f"m{i}",
                content=f"agent {a} note {i} about the garden and the piano") for i in range(5)])
        hits = await store.recall(RecallRequest(agent_id="agent-3", query="note 2 garden"))
        assert hits.results and all(h.id.startswith("m") for h in hits.results)
        await store.forget(ForgetRequest(agent_id="agent-3", ids=["m2"]))
        assert len(await store.list(ListQuery(agent_id="agent-3", limit=10))) == 4
        again = await store.remember(RememberRequest(  # ON CONFLICT on the partition key
            agent_id="agent-4", type=MemoryType.SEMANTIC, id="m1",
            content="agent 4 note 1 about the garden and the piano"))
        assert again.id == "m1"
    finally:
        await store.aclose()

    with psycopg.connect(pg_dsn) as conn:
        parts = conn.execute("SELECT count(*) FROM pg_inherits WHERE inhparent = "
                             "'memorywire_memories'::regclass").fetchone()
        hnsw = conn.execute("SELECT count(*) FROM pg_indexes WHERE indexdef LIKE '%hnsw%' "
                            "AND tablename LIKE 'memorywire_memories_p%'").fetchone()
    assert parts == (PARTITIONS,) and hnsw == (PARTITIONS,)  # a graph per partition

    # the store's scoped query shapes, pruned to one partition at plan time
    w = scope_where(agent_id="agent-3", user_id=None, now_ms=0, types=["semantic"])
    q = vector_literal(HashingEmbedder().embed(["garden"])[0])
    exact = (f"SELECT id, 1 - (embedding <=> %s::vector) AS cos FROM memorywire_memories "
             f"WHERE {w.sql()} ORDER BY cos DESC LIMIT 10")
    indexed = (f"SELECT id FROM memorywire_memories WHERE {w.sql()} "
               "ORDER BY embedding <=> %s::vector LIMIT 10")
    lexical = (f"SELECT id FROM memorywire_memories WHERE {w.sql()} "
               "AND tsv @@ to_tsquery('english', 'garden') LIMIT 10")
    for sql, params in ((exact, [q, *w.params]), (indexed, [*w.params, q]),
                        (lexical, w.params)):
        assert len(_partitions(pg_dsn, sql, params)) == 1, sql


async def test_a_table_holding_memories_is_not_partitioned_in_place(pg_dsn: str) -> None:
    store = PostgresStore(pg_dsn, HashingEmbedder(), name="pg")
    try:
        await store.remember(RememberRequest(agent_id="a", type=MemoryType.SEMANTIC,
                                             content="a memory"))
    finally:
        await store.aclose()
    async with await psycopg.AsyncConnection.connect(pg_dsn, row_factory=dict_row) as conn:
        with pytest.raises(InvalidRequest, match="holds memories"):
            await partition_by_agent(conn, 4)
        with pytest.raises(InvalidRequest, match="between 2 and 1024"):
            await partition_by_agent(conn, 1)


async def test_a_large_scope_is_searched_through_its_own_partitions_hnsw_graph(
        pg_dsn: str) -> None:
    """Few large tenants: the store's ANN statement for one agent reads one partition's HNSW
    index (a graph of that partition's rows), and the answer is the exact top k."""
    emb = HashingEmbedder()
    store = PostgresStore(pg_dsn, emb, name="pg", exact_scope_limit=100)
    try:
        await store.health()
        async with await psycopg.AsyncConnection.connect(pg_dsn, row_factory=dict_row) as conn:
            await partition_by_agent(conn, 4)
        rng = np.random.default_rng(3)
        n, agents = 4000, 2
        vecs = rng.standard_normal((n, emb.dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        copy_rows(pg_dsn, ("agent_id", "id", "type", "content", "created_at", "embedding"),
                  ((f"big-{i % agents}", f"m{i}", "semantic", f"note {i}", i, vector_literal(v))
                   for i, v in enumerate(vecs)))
        query = "garden piano violin"
        q = emb.embed([query])[0]
        rows = np.arange(1, n, agents)
        truth = {f"m{j}" for j in rows[np.argsort(-(vecs[rows] @ q))][:10]}
        got = await store.nearest("big-1", query, 10)  # 2,000 rows > exact_scope_limit
        assert len(truth & {mid for mid, _ in got}) >= 9  # recall@10 of the graph
    finally:
        await store.aclose()

    w = scope_where(agent_id="big-1", user_id=None, now_ms=0)
    qv = vector_literal(q)
    with psycopg.connect(pg_dsn, prepare_threshold=None) as conn:
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN " + ann_sql(w), [qv, *w.params, qv, 10]).fetchall())
        hnsw_of = {r[0]: r[1] for r in conn.execute(
            "SELECT indexname, tablename FROM pg_indexes WHERE indexdef LIKE '%USING hnsw%' "
            "AND tablename LIKE 'memorywire_memories_p%'").fetchall()}
    used = re.findall(r"Index Scan using (\S+) on (\S+)", plan)
    assert len(used) == 1 and used[0][0] in hnsw_of, plan  # the graph, not a B-tree
    assert hnsw_of[used[0][0]] == used[0][1]  # the agent's own partition's graph
    assert len({int(p) for p in re.findall(r"memorywire_memories_p(\d+)", plan)}) == 1, plan
