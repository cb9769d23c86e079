"""Rows COPYed straight into the PostgreSQL store's table, for tests of large scopes.

Writing thousands of rows through ``remember`` would spend the tests' time on the write path
they do not test; these tests need a large table as the store's writes and autovacuum would
leave it: rows, the per-agent counts the store keeps, and fresh planner statistics.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import psycopg


def copy_rows(dsn: str, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """COPY ``rows`` (values in ``columns`` order) into ``memorywire_memories``, then
    recount every agent and ANALYZE, so the planner sees the table the test meant."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        with conn.cursor() as cur, cur.copy(
            f"COPY memorywire_memories ({', '.join(columns)}) FROM STDIN"
        ) as copy:
            for row in rows:
                copy.write_row(row)
        conn.execute("DELETE FROM memorywire_agent_counts")
        conn.execute("INSERT INTO memorywire_agent_counts SELECT agent_id, count(*) "
                     "FROM memorywire_memories GROUP BY agent_id")
        conn.execute("ANALYZE memorywire_memories")
