"""The write path's conflict search on a large agent partition: the statement the store runs,
with the ``hnsw.ef_search`` it sets, goes through the partition's HNSW graph, and a fact
written first into the scope is still found after thousands of others.

Runs on pgserver's PostgreSQL 16 + pgvector 0.6 (no iterative scans: ``ef_search`` scaled by
the agent's share of its partition, pgshare35) and, when ``MEMORYWIRE_PG_BIN`` names a build
with pgvector 0.8 or later, on that too (iterative scans: ``ef_search`` not scaled; scaled,
the planner chose a sequential scan of the whole partition for recall, docs/decisions.md
"pg1m")."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest
from psycopg.rows import dict_row

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.postgres import PostgresStore
from memorywire.store.postgres.conflicts import (
    CONFLICT_EXACT_ROWS,
    probe_candidates,
)
from memorywire.store.postgres.hnsw import iterative
from memorywire.store.postgres.knn import ann_ef, scope_counts
from memorywire.store.postgres.partitions import partition_by_agent
from memorywire.store.postgres.sql import vector_literal
from memorywire.store.timeline import CONFLICT_NEIGHBOURS, Probe
from memorywire.testing import postgres as _pg
from memorywire.testing.pg_cluster import PG_BIN_ENV, start_cluster
from memorywire.wire.models import MemoryType, RememberRequest
from tests.integration.pg_explain import ExplainingConnection
from tests.integration.pg_rows import copy_rows

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]
pg_server = _pg.pg_server

#: The large agent's rows (past the exact bound) and the other agents' (its share a tenth).
BIG, OTHERS, AGENTS = 3 * CONFLICT_EXACT_ROWS, 9 * 3 * CONFLICT_EXACT_ROWS, 10
KLM = "The user's favourite airline is KLM."
RYANAIR = "The user's favourite airline is Ryanair."


@pytest.fixture(params=["pgserver", "pg_bin"])
def dsn(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh database on pgserver's build, or on the build ``MEMORYWIRE_PG_BIN`` names."""
    if request.param == "pgserver":
        yield request.getfixturevalue("pg_server").create_database()
        return
    if not os.environ.get(PG_BIN_ENV):
        pytest.skip(f"{PG_BIN_ENV} is not set (a PostgreSQL build with pgvector >= 0.8)")
    with tempfile.TemporaryDirectory(prefix="mw-pgconf-") as tmp:
        cluster = start_cluster(Path(tmp) / "cluster", replicas=0)
        try:
            yield cluster.create_database("conf")
        finally:
            cluster.close()


def _fill(dsn: str, dim: int) -> None:
    """COPY the large agent's filler into its scope and the other agents' rows, then count
    and analyse as the store's writes and autovacuum would."""
    rng = np.random.default_rng(35)
    vecs = rng.standard_normal((BIG + OTHERS, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    copy_rows(dsn, ("agent_id", "user_id", "id", "type", "content", "created_at", "embedding"),
              (("big" if i < BIG else f"other-{i % (AGENTS - 1)}", "u", f"f{i}", "semantic",
                f"note {i}", 2_000_000 + i, vector_literal(v)) for i, v in enumerate(vecs)))


def _pgvector(dsn: str) -> tuple[int, ...]:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'"
                           ).fetchone()
    assert row is not None
    return tuple(int(x) for x in str(row[0]).split("."))


async def test_a_large_partitioned_scopes_conflict_search_uses_its_graph(dsn: str) -> None:
    emb = HashingEmbedder()
    store = PostgresStore(dsn, emb, FakeClock(1_000_000), name="pg")
    try:
        await store.health()
        async with await psycopg.AsyncConnection.connect(dsn, row_factory=dict_row) as conn:
            await partition_by_agent(conn, 16)
        klm = (await store.remember(RememberRequest(
            agent_id="big", user_id="u", type=MemoryType.SEMANTIC, content=KLM))).id
        _fill(dsn, emb.dim)
        version = _pgvector(dsn)
        with psycopg.connect(dsn) as sync:
            part = sync.execute(  # the rows of big's partition, counted
                "SELECT count(*) FROM memorywire_memories WHERE tableoid = (SELECT tableoid "
                "FROM memorywire_memories WHERE agent_id = 'big' LIMIT 1)").fetchone()
        assert part is not None and BIG < part[0] < BIG + 1 + OTHERS
        async with await psycopg.AsyncConnection.connect(dsn, row_factory=dict_row) as conn:
            counts = await scope_counts(conn, ["big"], CONFLICT_EXACT_ROWS)
        # the store reads the graph as big's partition, not the table it is a tenth of
        assert counts == {"big": (BIG + 1, part[0])}
        rows, total = counts["big"]
        ef = ann_ef(CONFLICT_NEIGHBOURS, rows, total, version)
        # scaled by the share of the partition only without iterative scans: from a tenth
        # of the table it asked for more than 600 before pgshare35
        assert ef == 100 if iterative(version) else ef <= 300
        assert ann_ef(CONFLICT_NEIGHBOURS, rows, BIG + 1 + OTHERS, (0, 6, 2)) > 600

        probe = Probe("big", "u", MemoryType.SEMANTIC, RYANAIR, emb.embed([RYANAIR])[0])
        conn = await ExplainingConnection.connect(dsn, row_factory=dict_row, autocommit=True)
        conn.plans = []
        async with conn:
            # the vector leg alone (no subject words): the graph finds the early fact
            found = await probe_candidates(conn, probe._replace(text=""), rows, total, [],
                                           1_000_000, version)
            assert klm in [mid for mid, _, _ in found]
            assert len(found) == CONFLICT_NEIGHBOURS
            # both legs, as a write runs them
            found = await probe_candidates(conn, probe, rows, total, [], 1_000_000, version)
            assert klm in [mid for mid, _, _ in found]
            # the HNSW settings ended with the probe's own transaction
            cur = await conn.execute("SELECT current_setting('hnsw.ef_search') AS ef")
            assert (await cur.fetchone() or {}).get("ef") == "40"
            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert [e for e, _ in conn.plans] == [ef, ef]  # what the store set

        resp = await store.remember(RememberRequest(
            agent_id="big", user_id="u", type=MemoryType.SEMANTIC, content=RYANAIR))
        assert [c.id for c in resp.conflicts or []] == [klm]
    finally:
        await store.aclose()

    # the plans the store's statements got, in the store's transaction and settings
    with psycopg.connect(dsn) as sync:
        hnsw_of = {r[0]: r[1] for r in sync.execute(
            "SELECT indexname, tablename FROM pg_indexes WHERE indexdef LIKE '%USING hnsw%' "
            "AND tablename LIKE 'memorywire_memories_p%'").fetchall()}
    for _, plan in conn.plans:
        used = [u for u in re.findall(r"Index Scan using (\S+) on (\S+)", plan)
                if u[0] in hnsw_of]
        assert len(used) == 1, plan  # the vector leg through a graph, not a scan and a sort
        assert hnsw_of[used[0][0]] == used[0][1]  # the agent's own partition's graph
        assert "Seq Scan" not in plan, plan
        assert len({int(p) for p in re.findall(r"memorywire_memories_p(\d+)", plan)}) == 1
