"""SqliteStore's expiry purge: select and erase expired rows in one transaction.

Selection and erasure share the transaction, so a memory revived (re-remembered under its
id) between a sweep's look and its delete cannot be erased by mistake, and a kill at any
point leaves either the whole batch erased or none of it. The erase scrubs exactly what a
hard forget scrubs (row, vector, full-text terms, link edges, WAL).
"""

from __future__ import annotations

from memorywire.store.sqlite.db import COLS, SqliteDb, record_of
from memorywire.store.sqlite.schema import agent_number, vid
from memorywire.wire.models import MemoryRecord

__all__ = ["purge_expired"]


def purge_expired(db: SqliteDb, before_ms: int, limit: int) -> list[MemoryRecord]:
    """Erase up to ``limit`` memories whose ``expires_at`` is at or before ``before_ms``
    (whatever else is set on them: archived, soft-deleted); return what was erased."""
    if db.missing():
        return []
    with db.tx() as conn:
        rows = conn.execute(
            f"SELECT rid, {COLS} FROM memories WHERE expires_at IS NOT NULL "
            "AND expires_at <= ? ORDER BY expires_at, rid LIMIT ?", (before_ms, limit)).fetchall()
        agents: set[str] = set()
        for r in rows:
            rid, mid, agent = r[0], r[1], r[2]
            no = agent_number(conn, agent, create=False) or 0
            conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (rid,))
            conn.execute("DELETE FROM vectors WHERE vid = ?", (vid(no, rid),))
            conn.execute("DELETE FROM memories WHERE rid = ?", (rid,))
            conn.execute("DELETE FROM links WHERE agent_id = ? AND (src = ? OR dst = ?)",
                         (agent, mid, mid))
            agents.add(agent)
        for agent in sorted(agents):
            db.bump(conn, agent)
        if rows:
            conn.execute("INSERT INTO memories_fts(memories_fts) VALUES('optimize')")
    if rows:
        db.checkpoint()
    return [record_of(r[1:]) for r in rows]
