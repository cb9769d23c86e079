"""PostgresStore's side of :mod:`memorywire.store.portable`: every row out, rows in as they were.

A batch is one transaction. New rows are inserted whole (every field, embedding, full-text
vector) in one batch; an existing row is rewritten by the same
:func:`memorywire.store.postgres.writes.write_row` the maintenance writes use.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from memorywire.core.content import embed_text, links_of
from memorywire.core.context_key import check_context, lexical_text
from memorywire.core.records import Row
from memorywire.core.scoring import DEMOTE_FACTOR
from memorywire.errors import InvalidRequest
from memorywire.store.portable import Cursor, ImportCounts, OnConflict, decide, export_page_sql
from memorywire.store.postgres.db import PgDb
from memorywire.store.postgres.migrations import TS_CONFIG
from memorywire.store.postgres.sql import ROW_COLS, TABLE, reject_nul, row_of, vector_literal
from memorywire.store.postgres.writes import write_row

__all__ = ["export_rows", "import_rows", "vectors_of"]


async def export_rows(db: PgDb, agent_id: str | None, after: Cursor | None,
                      limit: int) -> list[Row]:
    where, order, params = export_page_sql(agent_id, after, "%s")
    async with db.tx() as conn:
        cur = await conn.execute(
            f"SELECT {ROW_COLS} FROM {TABLE} WHERE {where} ORDER BY {order} LIMIT %s",
            [*params, limit])
        return [row_of(r) for r in await cur.fetchall()]


_KEYS = "(agent_id, id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"


def _keys(rows: Sequence[Row]) -> list[list[str]]:
    return [[r.agent_id for r in rows], [r.id for r in rows]]


async def vectors_of(db: PgDb, rows: Sequence[Row]) -> list[Any]:
    async with db.tx() as conn:
        cur = await conn.execute(
            f"SELECT agent_id, id, embedding::text AS v FROM {TABLE} WHERE {_KEYS}", _keys(rows))
        found = {(r["agent_id"], r["id"]): r["v"] for r in await cur.fetchall()}
    return [np.asarray(json.loads(found[(r.agent_id, r.id)]), dtype=np.float32) for r in rows]


_INSERT = (
    f"INSERT INTO {TABLE} (agent_id, id, user_id, type, content, metadata, confidence, source, "
    "created_at, updated_at, expires_at, deleted_at, archived_at, score_factor, "
    "last_recalled_at, recall_count, merged_into, embedding, tsv) VALUES (%s, %s, %s, %s, %s, "
    "%s::jsonb, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::vector, "
    f"to_tsvector('{TS_CONFIG}', %s))")


def _insert_params(row: Row, text: str, vector: Any) -> tuple[Any, ...]:
    return (row.agent_id, row.id, row.user_id, row.type.value, row.stored,
            json.dumps(row.metadata), row.confidence, row.source, row.created_at,
            row.updated_at, row.expires_at, row.deleted_at, row.archived_at,
            DEMOTE_FACTOR if row.demoted else 1.0, row.last_recalled_at, row.recall_count,
            row.merged_into, vector_literal(vector), text)


async def import_rows(db: PgDb, rows: Sequence[Row], on_conflict: OnConflict,
                      given: Sequence[Any] | None = None) -> ImportCounts:
    """One transaction: existing ids read in one query, new rows inserted whole in one
    batch, existing ones rewritten per ``on_conflict``."""
    for row in rows:
        links_of(row.metadata)
        reject_nul(row.stored, "content")
        reject_nul(json.dumps(row.metadata), "metadata")
        check_context(row.metadata)
    texts = [embed_text(r.type, r.stored) for r in rows]
    vectors: Any = given if given is not None else await db.embed(texts) if rows else []
    dim = db.embedder.dim
    if given is not None and any(len(v) != dim for v in given):
        raise InvalidRequest(f"given vectors do not have the store's dimension {dim}")
    counts = ImportCounts()
    if not rows:
        return counts
    async with db.tx() as conn:
        cur = await conn.execute(
            f"SELECT {ROW_COLS} FROM {TABLE} WHERE {_KEYS} FOR UPDATE", _keys(rows))
        existing = {(r["agent_id"], r["id"]): row_of(r) for r in await cur.fetchall()}
        inserts: list[tuple[Any, ...]] = []
        added: dict[str, int] = {}
        for row, vector in zip(rows, vectors, strict=True):
            old = existing.get((row.agent_id, row.id))
            if not decide(old is not None, row, on_conflict):
                counts.skipped += 1
            elif old is None:
                inserts.append(_insert_params(
                    row, lexical_text(row.type, row.stored, row.metadata), vector))
                added[row.agent_id] = added.get(row.agent_id, 0) + 1
            else:
                changed = given is not None or old.stored != row.stored
                await write_row(db, conn, row, changed, vector)
                counts.replaced += 1
        if inserts:
            async with conn.cursor() as batch:
                await batch.executemany(_INSERT, inserts)
            counts.inserted += len(inserts)
        for agent_id, n in sorted(added.items()):
            await conn.execute(
                "INSERT INTO memorywire_agent_counts (agent_id, rows) VALUES (%s, %s) "
                "ON CONFLICT (agent_id) DO UPDATE "
                "SET rows = memorywire_agent_counts.rows + EXCLUDED.rows",
                (agent_id, n))
    return counts
