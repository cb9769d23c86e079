"""Many small tenants on PostgreSQL need no ANN index: a scope within ``exact_scope_limit``
is searched exactly through the agent's B-tree, and the results are numpy's exact top k."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.postgres import PostgresStore
from memorywire.store.postgres.knn import exact_sql
from memorywire.store.postgres.sql import scope_where, vector_literal
from memorywire.testing import postgres as _pg
from tests.integration.pg_rows import copy_rows

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]
pg_server = _pg.pg_server
pg_dsn = _pg.pg_dsn

AGENTS = 300
PER_AGENT = 10


def _load(dsn: str, vecs: np.ndarray) -> None:
    """``AGENTS * PER_AGENT`` rows, agents interleaved as writes arrive, then counted."""
    copy_rows(dsn, ("agent_id", "id", "type", "content", "created_at", "embedding"),
              ((f"agent-{i % AGENTS}", f"m{i}", "semantic", f"note {i}", i, vector_literal(v))
               for i, v in enumerate(vecs)))


def _plan(dsn: str, sql: str, params: list[object]) -> str:
    with psycopg.connect(dsn, prepare_threshold=None) as conn:
        return "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, params).fetchall())


async def test_small_scopes_are_searched_exactly_through_the_btree_without_an_ann_index(
        pg_dsn: str) -> None:
    emb = HashingEmbedder()
    store = PostgresStore(pg_dsn, emb, name="pg")  # default exact_scope_limit
    try:
        await store.health()  # the store creates its schema
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("DROP INDEX memorywire_memories_hnsw")  # a small-tenant deployment
        rng = np.random.default_rng(7)
        vecs = rng.standard_normal((AGENTS * PER_AGENT, emb.dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        _load(pg_dsn, vecs)
        for agent in (0, 17, 299):
            query = f"garden piano {agent}"
            q = emb.embed([query])[0]
            rows = np.arange(agent, len(vecs), AGENTS)
            truth = [f"m{j}" for j in rows[np.argsort(-(vecs[rows] @ q), kind="stable")][:5]]
            got = await store.nearest(f"agent-{agent}", query, 5)
            assert [mid for mid, _ in got] == truth
            assert [c for _, c in got] == pytest.approx(sorted(vecs[rows] @ q)[::-1][:5],
                                                        abs=1e-5)
    finally:
        await store.aclose()

    w = scope_where(agent_id="agent-17", user_id=None, now_ms=0)
    qv = vector_literal(emb.embed(["garden"])[0])
    plan = _plan(pg_dsn, exact_sql(w), [qv, *w.params, 5])
    # the agent's rows found through a B-tree on agent_id (the scope or the export index,
    # the planner's pick), not by reading the table
    assert "Index Cond: (agent_id = 'agent-17'::text)" in plan, plan
    assert "Seq Scan" not in plan, plan
    # and no vector index could serve the exact statement's order even if one existed
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("CREATE INDEX memorywire_memories_hnsw ON memorywire_memories "
                     "USING hnsw (embedding vector_cosine_ops)")
    assert "hnsw" not in _plan(pg_dsn, exact_sql(w), [qv, *w.params, 5])
