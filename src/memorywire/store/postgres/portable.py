"""PostgresStore's side of :mod:`memorywire.store.portable`: every row out, rows in as they were.

A batch is one transaction. A new row is inserted with its embedding and full-text vector,
then every field (timestamps, marks, ``merged_into``) is written by the same
:func:`memorywire.store.postgres.writes.write_row` the maintenance writes use.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from memorywire.core.content import embed_text, links_of
from memorywire.core.records import Row
from memorywire.errors import InvalidRequest
from memorywire.store.portable import Cursor, ImportCounts, OnConflict, decide
from memorywire.store.postgres.db import PgDb
from memorywire.store.postgres.sql import ROW_COLS, TABLE, reject_nul, row_of, vector_literal
from memorywire.store.postgres.writes import write_row

__all__ = ["export_rows", "import_rows", "vectors_of"]


async def export_rows(db: PgDb, agent_id: str | None, after: Cursor | None,
                      limit: int) -> list[Row]:
    where: list[str] = ["TRUE"]
    params: list[Any] = []
    if agent_id is not None:
        where.append("agent_id = %s")
        params.append(agent_id)
    if after is not None:
        where.append("(created_at, id) > (%s, %s)")
        params += [after[0], after[1]]
    async with db.tx() as conn:
        cur = await conn.execute(
            f"SELECT {ROW_COLS} FROM {TABLE} WHERE {' AND '.join(where)} "
            "ORDER BY created_at, id LIMIT %s", [*params, limit])
        return [row_of(r) for r in await cur.fetchall()]


async def vectors_of(db: PgDb, rows: Sequence[Row]) -> list[Any]:
    out = []
    async with db.tx() as conn:
        for row in rows:
            cur = await conn.execute(
                f"SELECT embedding::text AS v FROM {TABLE} WHERE agent_id = %s AND id = %s",
                (row.agent_id, row.id))
            got = await cur.fetchone()
            assert got is not None, f"{row.id} was exported from this store"
            out.append(np.asarray(json.loads(got["v"]), dtype=np.float32))
    return out


async def import_rows(db: PgDb, rows: Sequence[Row], on_conflict: OnConflict,
                      given: Sequence[Any] | None = None) -> ImportCounts:
    for row in rows:
        links_of(row.metadata)
        reject_nul(row.stored, "content")
        reject_nul(json.dumps(row.metadata), "metadata")
    texts = [embed_text(r.type, r.stored) for r in rows]
    vectors: Any = given if given is not None else await db.embed(texts) if rows else []
    dim = db.embedder.dim
    if given is not None and any(len(v) != dim for v in given):
        raise InvalidRequest(f"given vectors do not have the store's dimension {dim}")
    counts = ImportCounts()
    added: dict[str, int] = {}
    async with db.tx() as conn:
        for row, text, vector in zip(rows, texts, vectors, strict=True):
            cur = await conn.execute(
                f"SELECT {ROW_COLS} FROM {TABLE} WHERE agent_id = %s AND id = %s FOR UPDATE",
                (row.agent_id, row.id))
            got = await cur.fetchone()
            if not decide(got is not None, row, on_conflict):
                counts.skipped += 1
                continue
            if got is None:
                await conn.execute(
                    f"INSERT INTO {TABLE} (agent_id, id, user_id, type, content, metadata, "
                    "confidence, source, created_at, expires_at, embedding, tsv) VALUES "
                    "(%s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s::vector, "
                    "to_tsvector('simple', %s))",
                    (row.agent_id, row.id, row.user_id, row.type.value, row.stored,
                     json.dumps(row.metadata), row.confidence, row.source, row.created_at,
                     row.expires_at, vector_literal(vector), text))
                await write_row(db, conn, row, False)
                added[row.agent_id] = added.get(row.agent_id, 0) + 1
                counts.inserted += 1
            else:
                changed = given is not None or row_of(got).stored != row.stored
                await write_row(db, conn, row, changed, vector)
                counts.replaced += 1
        for agent_id, n in sorted(added.items()):
            await conn.execute(
                "INSERT INTO memorywire_agent_counts (agent_id, rows) VALUES (%s, %s) "
                "ON CONFLICT (agent_id) DO UPDATE "
                "SET rows = memorywire_agent_counts.rows + EXCLUDED.rows",
                (agent_id, n))
    return counts
