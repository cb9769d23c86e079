"""A real PostgreSQL connection that shows what the store's HNSW statements were planned as.

Tests of partition pruning and of ``hnsw.ef_search`` need the plan the store's own
statement gets under the settings the store set in its transaction, not a plan of a
statement the test rebuilt; so the connection EXPLAINs each of them, with its params, in
the same transaction just before running it.
"""

from __future__ import annotations

from typing import Any

import psycopg


class ExplainingConnection(psycopg.AsyncConnection[dict[str, Any]]):
    """Records ``(ef_search in force, EXPLAIN text)`` for each ``ORDER BY embedding <=>``
    statement it runs, in ``plans`` (set it to a list after connecting)."""

    plans: list[tuple[int, str]]

    async def execute(self, query: Any, params: Any = None, *,
                      prepare: bool | None = None, binary: bool = False) -> Any:
        if isinstance(query, str) and "ORDER BY embedding <=>" in query:
            ef = await super().execute("SELECT current_setting('hnsw.ef_search') AS ef")
            cur = await super().execute("EXPLAIN " + query, params)
            plan = "\n".join(str(next(iter(r.values()))) for r in await cur.fetchall())
            self.plans.append((int((await ef.fetchone() or {})["ef"]), plan))
        return await super().execute(query, params, prepare=prepare, binary=binary)
