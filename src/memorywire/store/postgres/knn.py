"""A scope's k nearest rows: exact through the agent's B-tree, or through the ANN index.

Which path a scope takes is decided by its size, read from ``memorywire_agent_counts``
(one primary-key lookup), not by which indexes exist:

- a scope of up to ``exact_limit`` rows is searched **exactly**: the scope B-tree
  ``(agent_id, user_id)`` (or the agent's partition) names its rows and every one is
  compared. The ``ORDER BY`` is ``1 - distance DESC``, an ordering no vector index can
  serve, so the planner cannot trade exactness for an index. A deployment of many small
  tenants needs no ANN index at all: this path never reads one.
- a larger scope goes through the table's (or its partition's) HNSW index with
  ``hnsw.ef_search`` from :func:`ann_ef` (iteratively from pgvector 0.8,
  :mod:`memorywire.store.postgres.hnsw`), and falls back to the exact statement when
  the index could not fill the candidate pool.

The two statements are functions so a test can ``EXPLAIN`` exactly what the store runs.
"""

from __future__ import annotations

from typing import Any

from memorywire.store.postgres.db import Conn
from memorywire.store.postgres.hnsw import hnsw_settings, iterative
from memorywire.store.postgres.sql import TABLE, PgVector, Where

__all__ = ["ann_ef", "ann_sql", "exact_sql", "vector_candidates"]


def exact_sql(w: Where) -> str:
    """Every live row of the scope compared; params ``[qvec, *w.params, limit]``."""
    return (f"SELECT id, 1 - (embedding <=> %s::vector) AS cos, score_factor FROM {TABLE} "
            f"WHERE {w.sql()} ORDER BY cos DESC, created_at, id LIMIT %s")


def ann_sql(w: Where) -> str:
    """The ANN index's order; params ``[qvec, *w.params, qvec, limit]``."""
    return (f"SELECT id, 1 - (embedding <=> %s::vector) AS cos, score_factor FROM {TABLE} "
            f"WHERE {w.sql()} ORDER BY embedding <=> %s::vector LIMIT %s")


def ann_ef(pool: int, scope: int, total: int, pgvector: tuple[int, ...] | None) -> int:
    """``hnsw.ef_search`` for a scope of ``scope`` rows out of ``total``.

    Without iterative scans the agent, owning ``share`` of the table, has about ``pool`` of
    its rows in a global candidate list of ``pool / share``: 4x margin, capped. With them
    (pgvector 0.8) the scan walks on until the ``LIMIT`` is met, so ``ef_search`` only sets
    the graph's search quality and is not scaled by the share. Scaling it anyway costs twice:
    the walk is longer, and pgvector's cost estimate grows with ``ef_search`` until the
    planner prefers a sequential scan and a sort of the whole partition (seen in ``EXPLAIN``
    on an agent's own partition: ``ef_search`` 400 planned a sequential scan, 100 the index).
    """
    if iterative(pgvector):
        return int(min(1000, max(pool * 4, 100)))
    share = scope / max(total, scope, 1)
    return int(min(1000, max(pool * 4 / share, 100)))


async def vector_candidates(conn: Conn, agent_id: str, w: Where, qvec: PgVector | str,
                            pool: int, *,
                            exact_limit: int,
                            pgvector: tuple[int, ...] | None) -> list[dict[str, Any]]:
    """The scope's ``pool`` nearest live rows (``id``, ``cos``, ``score_factor``)."""
    cur = await conn.execute(
        "SELECT rows, (SELECT coalesce(sum(rows), 0) FROM memorywire_agent_counts) AS total "
        "FROM memorywire_agent_counts WHERE agent_id = %s",
        (agent_id,),
    )
    counts = await cur.fetchone()
    scope = int(counts["rows"]) if counts else 0
    if scope == 0:
        return []
    if scope > exact_limit:
        ef = ann_ef(pool, scope, int(counts["total"]) if counts else scope, pgvector)
        await hnsw_settings(conn, ef, pgvector)
        cur = await conn.execute(ann_sql(w), [qvec, *w.params, qvec, pool])
        approx = await cur.fetchall()
        if len(approx) >= pool:
            return approx
    cur = await conn.execute(exact_sql(w), [qvec, *w.params, pool])
    return await cur.fetchall()
