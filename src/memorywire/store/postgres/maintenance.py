"""PostgresStore's maintenance writes: forget, merge, expire, update (one transaction each).

What each one means is decided in :mod:`memorywire.core`; this module reads the rows it
needs (locked ``FOR UPDATE``) and writes the planned rows back.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memorywire.core.expiry import policy_matches
from memorywire.core.merge import plan_row_merge
from memorywire.core.records import Row, UpdateRequest, expire_marks, plan_update
from memorywire.core.scoring import DEMOTE_FACTOR
from memorywire.errors import NotFound
from memorywire.store.postgres.db import Conn, PgDb
from memorywire.store.postgres.sql import (
    RECORD_COLS,
    ROW_COLS,
    TABLE,
    Where,
    add_metadata_filter,
    record_from_row,
    row_of,
    scope_where,
)
from memorywire.store.postgres.writes import write_row
from memorywire.wire.models import (
    ExpireRequest,
    ExpireResponse,
    ForgetRequest,
    ForgetResponse,
    MemoryRecord,
    MergeRequest,
    MergeResponse,
    StoreCount,
)

__all__ = ["expire", "forget", "merge", "merged_into", "update"]


async def forget(db: PgDb, req: ForgetRequest) -> ForgetResponse:
    now = db.clock.now_ms()
    w = Where()
    w.add("agent_id = %s", req.agent_id)
    if req.user_id is not None:
        w.add("user_id = %s", req.user_id)
    if not req.hard_delete:
        w.add("deleted_at IS NULL")
    if req.ids is not None:
        w.add("id = ANY(%s)", list(req.ids))
    if req.filter is not None:
        add_metadata_filter(w, req.filter)
    async with db.tx() as conn:
        if req.hard_delete:
            cur = await conn.execute(
                f"DELETE FROM {TABLE} WHERE {w.sql()} RETURNING id, created_at", w.params
            )
        else:
            cur = await conn.execute(
                f"UPDATE {TABLE} SET deleted_at = %s WHERE {w.sql()} RETURNING id, created_at",
                [now, *w.params],
            )
        rows = sorted(await cur.fetchall(), key=lambda r: (r["created_at"], r["id"]))
        if req.hard_delete and rows:
            await conn.execute(
                "UPDATE memorywire_agent_counts SET rows = greatest(rows - %s, 0) "
                "WHERE agent_id = %s",
                (len(rows), req.agent_id),
            )
    ids = [r["id"] for r in rows]
    return ForgetResponse(forgotten_ids=ids, hard_delete=req.hard_delete,
                          stores=[StoreCount(store=db.name, count=len(ids))])


async def _live_rows(conn: Conn, agent_id: str, user_id: str | None, now: int) -> list[Row]:
    w = scope_where(agent_id=agent_id, user_id=user_id, now_ms=now)
    cur = await conn.execute(
        f"SELECT {ROW_COLS} FROM {TABLE} WHERE {w.sql()} ORDER BY created_at, id FOR UPDATE",
        w.params)
    return [row_of(r) for r in await cur.fetchall()]


async def merge(db: PgDb, req: MergeRequest) -> MergeResponse:
    now = db.clock.now_ms()
    async with db.tx() as conn:
        plan = plan_row_merge(await _live_rows(conn, req.agent_id, req.user_id, now), req, now)
        for _, new, text_changed in plan.changes:
            await write_row(db, conn, new, text_changed)
    return MergeResponse(canonical=plan.canonical_id, merged_count=len(plan.absorbed_ids),
                         strategy_used=req.strategy, stores=[db.name])


async def merged_into(db: PgDb, agent_id: str, id: str, user_id: str | None) -> str | None:
    w = Where()
    w.add("agent_id = %s", agent_id)
    if user_id is not None:
        w.add("user_id = %s", user_id)
    async with db.tx() as conn:
        cur = await conn.execute(f"SELECT merged_into FROM {TABLE} WHERE {w.sql()} AND id = %s",
                                 [*w.params, id])
        got = await cur.fetchone()
    return None if got is None else got["merged_into"]


async def expire(db: PgDb, req: ExpireRequest) -> ExpireResponse:
    now = db.clock.now_ms()
    async with db.tx() as conn:
        rows = await _live_rows(conn, req.agent_id, req.user_id, now)
        matched = [r.id for r in rows if policy_matches(req.policy, r.expiry_facts(), now)]
        if matched:
            columns = {"deleted_at": "deleted_at", "archived_at": "archived_at",
                       "demoted": "score_factor"}
            marks = expire_marks(req.action, now)
            sets = ", ".join(f"{columns[k]} = %s" for k in marks)
            values: list[Any] = [DEMOTE_FACTOR if k == "demoted" else v for k, v in marks.items()]
            await conn.execute(
                f"UPDATE {TABLE} SET {sets} WHERE agent_id = %s AND id = ANY(%s)",
                (*values, req.agent_id, matched),
            )
    return ExpireResponse(matched_count=len(matched), action_taken=req.action,
                          stores=[db.name], matched_ids=matched)


async def update(db: PgDb, req: UpdateRequest) -> MemoryRecord:
    now = db.clock.now_ms()
    async with db.tx() as conn:
        w = scope_where(agent_id=req.agent_id, user_id=req.user_id, now_ms=now)
        cur = await conn.execute(
            f"SELECT {ROW_COLS} FROM {TABLE} WHERE {w.sql()} AND id = %s FOR UPDATE",
            [*w.params, req.id],
        )
        got = await cur.fetchone()
        if got is None:
            raise NotFound(f"memory {req.id!r} not found")
        row = row_of(got)
        plan = plan_update(row, req, now)
        await write_row(db, conn, replace(row, **plan.changes), plan.stored is not None)
        cur = await conn.execute(
            f"SELECT {RECORD_COLS} FROM {TABLE} WHERE agent_id = %s AND id = %s",
            (req.agent_id, req.id))
        updated = await cur.fetchone()
    assert updated is not None
    return record_from_row(updated)
