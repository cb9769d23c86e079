"""PostgresStore's expiry purge: select and erase expired rows in one statement.

The rows are picked ``FOR UPDATE SKIP LOCKED`` and deleted in the same statement (one
transaction), so a memory re-remembered under its id between a look and the delete is never
erased, a kill leaves the whole batch erased or none of it, and two servers sweeping the same
database take disjoint batches. The row holds the text, its vector, its full-text vector and
its edges, so deleting the row is what a hard forget does.
"""

from __future__ import annotations

from collections import Counter

from memorywire.store.postgres.db import PgDb
from memorywire.store.postgres.sql import RECORD_COLS, TABLE, record_from_row
from memorywire.wire.models import MemoryRecord

__all__ = ["purge_expired"]


async def purge_expired(db: PgDb, before_ms: int, limit: int) -> list[MemoryRecord]:
    """Erase up to ``limit`` memories whose ``expires_at`` is at or before ``before_ms``
    (archived or soft-deleted ones too); return what was erased."""
    async with db.tx() as conn:
        cur = await conn.execute(
            f"DELETE FROM {TABLE} WHERE (agent_id, id) IN ("
            f"SELECT agent_id, id FROM {TABLE} WHERE expires_at IS NOT NULL "
            "AND expires_at <= %s ORDER BY expires_at, agent_id, id LIMIT %s "
            f"FOR UPDATE SKIP LOCKED) RETURNING {RECORD_COLS}", (before_ms, limit))
        rows = await cur.fetchall()
        for agent, n in sorted(Counter(r["agent_id"] for r in rows).items()):
            await conn.execute(
                "UPDATE memorywire_agent_counts SET rows = greatest(rows - %s, 0) "
                "WHERE agent_id = %s", (n, agent))
    return sorted((record_from_row(r) for r in rows),
                  key=lambda m: (m.expires_at or 0, m.agent_id, m.id))
