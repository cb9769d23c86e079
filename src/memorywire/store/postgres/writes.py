"""PostgresStore's remember and the row write that merge, update and revival share.

A batch is one transaction: every row is stored, or none. A retry of a live id answers from
the stored row; an id whose row is no longer live is revived in place (see
:func:`memorywire.core.records.remember_action`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memorywire.core.content import content_to_storage, embed_text, fold_request
from memorywire.core.context_key import CONTEXT_FIELD, lexical_text
from memorywire.core.ids import new_id
from memorywire.core.records import RememberAction, Row, new_row, remember_action
from memorywire.core.scoring import DEMOTE_FACTOR
from memorywire.errors import Conflict
from memorywire.store.postgres.db import Conn, PgDb
from memorywire.store.postgres.migrations import TS_CONFIG
from memorywire.store.postgres.sql import ROW_COLS, TABLE, PgVector, reject_nul, row_of
from memorywire.wire.models import RememberRequest, RememberResponse

__all__ = ["remember_many", "write_row"]


async def write_row(db: PgDb, conn: Conn, new: Row, text_changed: bool,
                    vector: Any = None) -> None:
    """Store every field of ``new`` over its row; re-embed when the text changed (with
    ``vector`` when the caller already has it)."""
    metadata = json.dumps(new.metadata)
    reject_nul(metadata, "metadata")
    reject_nul(new.stored, "content")
    sets = ("user_id = %s, type = %s, metadata = %s::jsonb, confidence = %s, source = %s, "
            "created_at = %s, updated_at = %s, expires_at = %s, deleted_at = %s, "
            "archived_at = %s, score_factor = %s, last_recalled_at = %s, recall_count = %s, "
            "merged_into = %s")
    params: list[Any] = [
        new.user_id, new.type.value, metadata, new.confidence, new.source, new.created_at,
        new.updated_at, new.expires_at, new.deleted_at, new.archived_at,
        DEMOTE_FACTOR if new.demoted else 1.0, new.last_recalled_at, new.recall_count,
        new.merged_into]
    key = lexical_text(new.type, new.stored, new.metadata)
    if text_changed:
        text = embed_text(new.type, new.stored)
        if vector is None:
            vector = (await db.embed([text]))[0]
        sets += f", content = %s, embedding = %s::vector, tsv = to_tsvector('{TS_CONFIG}', %s)"
        params += [new.stored, PgVector(vector), key]
    else:
        # The full-text key also holds metadata.context (core.context_key): re-index when
        # that changed (column references in SET read the row as it was).
        sets += (f", tsv = CASE WHEN metadata->'{CONTEXT_FIELD}' IS DISTINCT FROM "
                 f"%s::jsonb->'{CONTEXT_FIELD}' THEN to_tsvector('{TS_CONFIG}', %s) ELSE tsv END")
        params += [metadata, key]
    await conn.execute(f"UPDATE {TABLE} SET {sets} WHERE agent_id = %s AND id = %s",
                       [*params, new.agent_id, new.id])


async def remember_many(db: PgDb, reqs: Sequence[RememberRequest],
                        given: Any = None) -> list[RememberResponse]:
    """``given``: the requests' vectors when the caller already computed them (the conflict
    scan's meaning rule does), so the model is not called twice."""
    prepared: list[tuple[RememberRequest, str, dict[str, Any]]] = []
    for r in map(fold_request, reqs):
        stored = content_to_storage(r.type, r.content)
        metadata = dict(r.metadata or {})
        reject_nul(stored, "content")
        reject_nul(json.dumps(metadata), "metadata")
        prepared.append((r, stored, metadata))
    if not prepared:
        return []
    keys = [lexical_text(r.type, s, m) for r, s, m in prepared]
    vectors = given if given is not None else \
        await db.embed([embed_text(r.type, s) for r, s, _ in prepared])
    now = db.clock.now_ms()
    out: list[RememberResponse] = []
    async with db.tx() as conn:
        added: dict[str, int] = {}
        for (r, stored, metadata), vec, key in zip(prepared, vectors, keys, strict=True):
            mid = r.id or new_id(now)
            cur = await conn.execute(
                f"INSERT INTO {TABLE} (agent_id, id, user_id, type, content, metadata, "
                "confidence, source, created_at, expires_at, embedding, tsv) VALUES "
                "(%s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s::vector, "
                f"to_tsvector('{TS_CONFIG}', %s)) ON CONFLICT (agent_id, id) DO NOTHING "
                "RETURNING created_at",
                (r.agent_id, mid, r.user_id, r.type.value, stored, json.dumps(metadata),
                 r.confidence, r.source, now, r.expires_at, PgVector(vec),
                 key),
            )
            if await cur.fetchone() is not None:
                added[r.agent_id] = added.get(r.agent_id, 0) + 1
                out.append(RememberResponse(id=mid, stored_at=now, stores=[db.name],
                                            pending_approval=False))
                continue
            cur = await conn.execute(
                f"SELECT {ROW_COLS} FROM {TABLE} WHERE agent_id = %s AND id = %s FOR UPDATE",
                (r.agent_id, mid))
            got = await cur.fetchone()
            old = None if got is None else row_of(got)
            action = remember_action(old, r, stored, now)
            if action is RememberAction.REVIVE:
                await write_row(db, conn, new_row(r, mid, stored, now), True, vec)
                out.append(RememberResponse(id=mid, stored_at=now, stores=[db.name],
                                            pending_approval=False))
                continue
            if old is None:  # hard-deleted between our INSERT and SELECT
                raise Conflict(f"id {mid!r} changed while being written; retry")
            out.append(RememberResponse(id=mid, stored_at=old.created_at, stores=[db.name],
                                        pending_approval=False))
        for agent_id, n in sorted(added.items()):
            await conn.execute(
                "INSERT INTO memorywire_agent_counts (agent_id, rows) VALUES (%s, %s) "
                "ON CONFLICT (agent_id) DO UPDATE "
                "SET rows = memorywire_agent_counts.rows + EXCLUDED.rows",
                (agent_id, n),
            )
    return out
