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

The width :func:`ann_ef` asks for depends on the agent's share of the graph the search
walks. On a table partitioned by agent that graph is the agent's partition's, not the
table's: :func:`scope_counts` reads the partition's row count from ``pg_class.reltuples``
(kept by ANALYZE, autovacuum and index builds), so no query counts rows.

The two statements are functions so a test can ``EXPLAIN`` exactly what the store runs.
"""

from __future__ import annotations

from typing import Any

from memorywire.store.postgres.db import Conn
from memorywire.store.postgres.hnsw import hnsw_settings, iterative
from memorywire.store.postgres.sql import TABLE, PgVector, Where

__all__ = ["SINGLE_PASS_FLOOR", "ann_ef", "ann_sql", "exact_sql", "graph_rows", "scope_counts",
           "vector_candidates"]


def exact_sql(w: Where) -> str:
    """Every live row of the scope compared; params ``[qvec, *w.params, limit]``."""
    return (f"SELECT id, 1 - (embedding <=> %s::vector) AS cos, score_factor FROM {TABLE} "
            f"WHERE {w.sql()} ORDER BY cos DESC, created_at, id LIMIT %s")


def ann_sql(w: Where) -> str:
    """The ANN index's order; params ``[qvec, *w.params, qvec, limit]``."""
    return (f"SELECT id, 1 - (embedding <=> %s::vector) AS cos, score_factor FROM {TABLE} "
            f"WHERE {w.sql()} ORDER BY embedding <=> %s::vector LIMIT %s")


#: The least ``ef_search`` before iterative scans. There the first ``ef_search`` candidates
#: are all a search gets, so the width is the graph's search quality too, not only the
#: filter's margin: an agent that owns its whole partition (share 1) is still searched this
#: wide (docs/decisions.md, pgshare35).
SINGLE_PASS_FLOOR = 250


def ann_ef(pool: int, scope: int, total: int, pgvector: tuple[int, ...] | None) -> int:
    """``hnsw.ef_search`` for a scope of ``scope`` rows in a graph of ``total`` rows (the
    table's, or the agent's partition's: :func:`graph_rows`).

    Without iterative scans the agent, owning ``share`` of the graph, has about ``pool`` of
    its rows in a candidate list of ``pool / share``: 4x margin, capped, and never below
    :data:`SINGLE_PASS_FLOOR`. With them
    (pgvector 0.8) the scan walks on until the ``LIMIT`` is met, so ``ef_search`` only sets
    the graph's search quality and is not scaled by the share. Scaling it anyway costs twice:
    the walk is longer, and pgvector's cost estimate grows with ``ef_search`` until the
    planner prefers a sequential scan and a sort of the whole partition (seen in ``EXPLAIN``
    on an agent's own partition: ``ef_search`` 400 planned a sequential scan, 100 the index).
    """
    if iterative(pgvector):
        return int(min(1000, max(pool * 4, 100)))
    share = scope / max(total, scope, 1)
    return int(min(1000, max(pool * 4 / share, SINGLE_PASS_FLOOR)))


#: Per agent: its rows, and the rows of the graph an HNSW search of its scope walks — the
#: whole table's (the counts' sum), or, when the table is partitioned, the estimate of the
#: agent's partition (``reltuples`` of the table the agent's first row lives in; ``NULL`` for
#: an unpartitioned table or a partition never analysed). Both are read only for a scope
#: above ``%(exact)s`` rows, the one the HNSW path will search: a CASE evaluates its
#: subqueries lazily, so a small tenant's search pays one primary-key lookup.
_COUNTS = (
    "SELECT c.agent_id, c.rows, "
    "CASE WHEN c.rows > %(exact)s THEN "
    "(SELECT coalesce(sum(a.rows), 0) FROM memorywire_agent_counts a) END AS total, "
    "CASE WHEN c.rows > %(exact)s THEN (SELECT p.reltuples FROM pg_class p "
    "WHERE p.relispartition AND p.reltuples >= 0 AND p.oid = "
    f"(SELECT m.tableoid FROM {TABLE} m WHERE m.agent_id = c.agent_id LIMIT 1)) END "
    "AS partition FROM memorywire_agent_counts c WHERE c.agent_id = ANY(%(agents)s)")


def graph_rows(scope: int, total: int, partition: float | None) -> int:
    """The rows of the graph a scope of ``scope`` rows is searched in: its partition's
    estimate when there is one, never below the scope itself (an estimate from before the
    agent's last writes) nor above the whole table (one from before deletes)."""
    if partition is None:
        return max(total, scope)
    return max(scope, min(int(partition), total))


async def scope_counts(conn: Conn, agent_ids: list[str],
                       exact_limit: int) -> dict[str, tuple[int, int]]:
    """``agent_id -> (rows, graph rows)`` for the agents that have a count; graph rows are
    :func:`graph_rows` for a scope above ``exact_limit`` and the scope itself below it
    (no ANN search will use them)."""
    cur = await conn.execute(_COUNTS, {"exact": exact_limit, "agents": agent_ids})
    out: dict[str, tuple[int, int]] = {}
    for r in await cur.fetchall():
        rows = int(r["rows"])
        total = rows if r["total"] is None else int(r["total"])
        part = None if r["partition"] is None else float(r["partition"])
        out[r["agent_id"]] = (rows, graph_rows(rows, total, part))
    return out


async def vector_candidates(conn: Conn, agent_id: str, w: Where, qvec: PgVector | str,
                            pool: int, *,
                            exact_limit: int,
                            pgvector: tuple[int, ...] | None) -> list[dict[str, Any]]:
    """The scope's ``pool`` nearest live rows (``id``, ``cos``, ``score_factor``)."""
    scope, graph = (await scope_counts(conn, [agent_id], exact_limit)).get(agent_id, (0, 0))
    if scope == 0:
        return []
    if scope > exact_limit:
        ef = ann_ef(pool, scope, graph, pgvector)
        await hnsw_settings(conn, ef, pgvector)
        cur = await conn.execute(ann_sql(w), [qvec, *w.params, qvec, pool])
        approx = await cur.fetchall()
        if len(approx) >= pool:
            return approx
    cur = await conn.execute(exact_sql(w), [qvec, *w.params, pool])
    return await cur.fetchall()
