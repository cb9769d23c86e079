"""One filtered HNSW search's settings, local to its transaction.

pgvector filters an HNSW scan's candidates after the index returns them: with a ``WHERE
agent_id = ...`` that most rows fail, ``hnsw.ef_search`` candidates may hold fewer than the
``LIMIT`` wanted. Before pgvector 0.8 the only remedy is a larger ``ef_search`` (the store
scales it by the share of the table the agent owns). From 0.8 on, an *iterative* scan keeps
walking the graph until the ``LIMIT`` is met (``hnsw.iterative_scan``, bounded by
``hnsw.max_scan_tuples``), which is what a scoped search wants; ``strict_order`` keeps the
distances in order, as the exact path returns them.

Both settings are ``set_config(..., true)``: they end with the transaction, so no session
state outlives it (a pooler in transaction mode hands the session on).
"""

from __future__ import annotations

from memorywire.store.postgres.db import Conn

__all__ = ["ITERATIVE_SINCE", "hnsw_settings", "iterative"]

#: The first pgvector with iterative index scans.
ITERATIVE_SINCE = (0, 8, 0)


def iterative(version: tuple[int, ...] | None) -> bool:
    """Whether a server with pgvector ``version`` (``None``: not known yet) scans iteratively."""
    return version is not None and version >= ITERATIVE_SINCE


async def hnsw_settings(conn: Conn, ef_search: int, version: tuple[int, ...] | None) -> None:
    """Set this transaction's HNSW search: ``ef_search``, and an iterative scan when the
    server's pgvector has one."""
    if iterative(version):
        await conn.execute("SELECT set_config('hnsw.ef_search', %s, true), "
                           "set_config('hnsw.iterative_scan', 'strict_order', true)",
                           (str(ef_search),))
    else:
        await conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef_search),))
