"""PostgresStore's plain reads: ``list``, graph neighbours, and the hard-delete audit.

``list`` and ``neighbours`` read through the store's :class:`~memorywire.store.postgres.
replica.ReadRouter` (a hot standby when the store has one); the audit reads the primary,
which is the database a hard delete must have left clean.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from memorywire.core.records import ListQuery
from memorywire.store._common import links_of, shortest_hops
from memorywire.store.postgres.db import PgDb
from memorywire.store.postgres.replica import ReadRouter
from memorywire.store.postgres.sql import (
    RECORD_COLS,
    TABLE,
    Where,
    add_metadata_filter,
    record_from_row,
    scope_where,
)
from memorywire.wire.models import MemoryRecord

__all__ = ["list_records", "neighbours", "raw_contains"]


async def list_records(router: ReadRouter, now: int, query: ListQuery) -> list[MemoryRecord]:
    w = Where()
    if query.agent_id is not None:
        w.add("agent_id = %s", query.agent_id)
    if query.user_id is not None:
        w.add("user_id = %s", query.user_id)
    w.add("deleted_at IS NULL")
    w.add("(expires_at IS NULL OR expires_at > %s)", now)
    if not query.include_archived:
        w.add("archived_at IS NULL")
    if query.types is not None:
        w.add("type = ANY(%s)", [t.value for t in query.types])
    if query.filter:
        add_metadata_filter(w, query.filter)
    async with router.tx() as conn:
        if query.after_id is not None:
            aw = "id = %s" + (" AND agent_id = %s" if query.agent_id is not None else "")
            ap = [query.after_id] + ([query.agent_id] if query.agent_id is not None else [])
            cur = await conn.execute(
                f"SELECT created_at, id FROM {TABLE} WHERE {aw} ORDER BY created_at LIMIT 1", ap
            )
            anchor = await cur.fetchone()
            if anchor is not None:
                w.add("(created_at, id) > (%s, %s)", anchor["created_at"], anchor["id"])
        cur = await conn.execute(
            f"SELECT {RECORD_COLS} FROM {TABLE} WHERE {w.sql()} "
            "ORDER BY created_at, id LIMIT %s",
            [*w.params, query.limit],
        )
        rows = await cur.fetchall()
    return [record_from_row(r) for r in rows]


async def neighbours(router: ReadRouter, now: int, agent_id: str, ids: Sequence[str],
                     hops: int, user_id: str | None) -> dict[str, dict[str, int]]:
    """Live memories within ``hops`` links of each id, with their hop distance."""
    w = scope_where(agent_id=agent_id, user_id=user_id, now_ms=now)
    async with router.tx() as conn:
        cur = await conn.execute(
            f"SELECT id, metadata -> 'links' AS links FROM {TABLE} WHERE {w.sql()}", w.params
        )
        rows = await cur.fetchall()
    live = {r["id"] for r in rows}
    adjacency = {
        r["id"]: [x for x in links_of({"links": r["links"]}) if x in live]
        for r in rows
    }
    return shortest_hops(adjacency, [i for i in ids if i in live], hops)


async def raw_contains(db: PgDb, needle: str) -> bool:
    """Whether any memorywire table still holds ``needle`` in any column."""
    async with db.tx() as conn:
        cur = await conn.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() AND table_name LIKE 'memorywire%%'"
        )
        tables = [r["table_name"] for r in await cur.fetchall()]
        for table in tables:
            cur = await conn.execute(
                psycopg.sql.SQL("SELECT 1 FROM {} t WHERE strpos(t::text, %s) > 0 LIMIT 1")
                .format(psycopg.sql.Identifier(table)),
                (needle,),
            )
            if await cur.fetchone() is not None:
                return True
    return False
