"""SqliteStore's maintenance writes: forget (soft and scrubbing hard delete), merge, expire,
update, and the row write they share. Each is one transaction that bumps the agent's scope
version when rows change; what each one *means* is decided in :mod:`memorywire.core`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import numpy as np

from memorywire.core.content import embed_text, links_of
from memorywire.core.context_key import CONTEXT_FIELD, lexical_text
from memorywire.core.expiry import policy_matches
from memorywire.core.filters import matches_filter
from memorywire.core.merge import plan_row_merge
from memorywire.core.records import Row, UpdateRequest, expire_marks, plan_update
from memorywire.errors import NotFound
from memorywire.store.sqlite.contexts import CONTEXT_SQL, metadata_of, put_context, stored_metadata
from memorywire.store.sqlite.db import COLS, IN_JSON, VISIBLE, SqliteDb, record_of, scope_sql
from memorywire.store.sqlite.recalls import STATS_SQL, put_stats
from memorywire.store.sqlite.schema import agent_number, scope_token, vid
from memorywire.wire.models import (
    ExpireRequest,
    ExpireResponse,
    ForgetRequest,
    ForgetResponse,
    MemoryRecord,
    MemoryType,
    MergeRequest,
    MergeResponse,
    StoreCount,
)

__all__ = ["ROW_COLS", "expire", "forget", "merge", "merged_into", "row_of", "update",
           "write_row"]

#: The columns :func:`row_of` reads: ``rid`` then every field of a core ``Row``.
ROW_COLS = ("rid, id, agent_id, user_id, type, content, metadata, confidence, source, "
            "created_at, updated_at, expires_at, deleted_at, archived_at, demoted, "
            f"{STATS_SQL}, {CONTEXT_SQL}")


def row_of(r: Any) -> tuple[int, Row]:
    return int(r[0]), Row(
        id=r[1], agent_id=r[2], user_id=r[3], type=MemoryType(r[4]), stored=r[5],
        metadata=metadata_of(r[6], r[17]), confidence=r[7], source=r[8], created_at=r[9],
        updated_at=r[10], expires_at=r[11], deleted_at=r[12], archived_at=r[13],
        demoted=bool(r[14]), last_recalled_at=r[15], recall_count=r[16])


def _reembed(db: SqliteDb, conn: Any, rid: int, row: Row) -> None:
    text = embed_text(row.type, row.stored)
    vec = db.embedder.embed([text])[0]
    no = agent_number(conn, row.agent_id, create=True) or 0
    conn.execute("INSERT OR REPLACE INTO vectors VALUES(?, ?)",
                 (vid(no, rid), np.ascontiguousarray(vec, dtype=np.float32).tobytes()))
    _reindex(conn, rid, row)


def _reindex(conn: Any, rid: int, row: Row) -> None:
    conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (rid,))
    conn.execute("INSERT INTO memories_fts(rowid, body, scope) VALUES(?, ?, ?)",
                 (rid, lexical_text(row.type, row.stored, row.metadata),
                  scope_token(row.agent_id)))


def write_row(db: SqliteDb, conn: Any, rid: int, old: Row, new: Row, text_changed: bool) -> None:
    """Store ``new`` over row ``rid``: columns, vector and full-text when the text changed,
    graph edges from ``metadata.links`` when they changed, the merge edge for
    ``merged_into``."""
    meta, context = stored_metadata(new.metadata)
    conn.execute(
        "UPDATE memories SET user_id = ?, type = ?, content = ?, metadata = ?, confidence = ?, "
        "source = ?, created_at = ?, updated_at = ?, expires_at = ?, deleted_at = ?, "
        "archived_at = ?, demoted = ? WHERE rid = ?",
        (new.user_id, new.type.value, new.stored, meta,
         new.confidence, new.source, new.created_at, new.updated_at, new.expires_at,
         new.deleted_at, new.archived_at, int(new.demoted), rid))
    put_context(conn, rid, context)
    if (new.last_recalled_at, new.recall_count) != (old.last_recalled_at, old.recall_count):
        put_stats(conn, rid, new.last_recalled_at, new.recall_count)
    if text_changed:
        _reembed(db, conn, rid, new)
    elif old.metadata.get(CONTEXT_FIELD) != new.metadata.get(CONTEXT_FIELD):
        _reindex(conn, rid, new)
    if old.links() != new.links():
        conn.execute("DELETE FROM links WHERE agent_id = ? AND src = ? AND kind = 'link'",
                     (new.agent_id, new.id))
        conn.executemany("INSERT OR IGNORE INTO links VALUES(?, ?, ?, 'link')",
                         [(new.agent_id, new.id, d) for d in links_of(new.metadata)])
    # The merge edge is kept in sync on every write (``row_of`` does not read it back).
    conn.execute("DELETE FROM links WHERE agent_id = ? AND src = ? AND kind = 'merge'",
                 (new.agent_id, new.id))
    if new.merged_into is not None:
        conn.execute("INSERT OR IGNORE INTO links VALUES(?, ?, ?, 'merge')",
                     (new.agent_id, new.id, new.merged_into))


def _merged_into_of(conn: Any, agent_id: str, id: str) -> str | None:
    got = conn.execute("SELECT dst FROM links WHERE agent_id = ? AND src = ? AND kind = 'merge'",
                       (agent_id, id)).fetchone()
    return None if got is None else str(got[0])


def _live_rows(db: SqliteDb, conn: Any, agent_id: str, user_id: str | None,
               now: int) -> list[tuple[int, Row]]:
    where, args = scope_sql(agent_id, user_id)
    return [row_of(r) for r in conn.execute(
        f"SELECT {ROW_COLS} FROM memories WHERE {where} AND {VISIBLE} ORDER BY created_at, id",
        [*args, now])]


def forget(db: SqliteDb, req: ForgetRequest) -> ForgetResponse:
    where, args = scope_sql(req.agent_id, req.user_id)
    if not req.hard_delete:
        where += " AND deleted_at IS NULL"
    if req.ids is not None:
        where += f" AND id IN {IN_JSON}"
        args.append(json.dumps(req.ids))
    with db.tx() as conn:
        now = db.clock.now_ms()
        rows = [
            (rid, mid) for rid, mid, meta, context in conn.execute(
                f"SELECT rid, id, metadata, {CONTEXT_SQL} FROM memories WHERE {where} "
                "ORDER BY created_at, id", args)
            if req.filter is None or matches_filter(metadata_of(meta, context), req.filter)
        ]
        no = agent_number(conn, req.agent_id, create=False) or 0
        for rid, mid in rows:
            if req.hard_delete:
                conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (rid,))
                conn.execute("DELETE FROM vectors WHERE vid = ?", (vid(no, rid),))
                conn.execute("DELETE FROM memories WHERE rid = ?", (rid,))
                conn.execute("DELETE FROM links WHERE agent_id = ? AND (src = ? OR dst = ?)",
                             (req.agent_id, mid, mid))
            else:
                conn.execute("UPDATE memories SET deleted_at = ? WHERE rid = ?", (now, rid))
        if rows:
            db.bump(conn, req.agent_id)
        if rows and req.hard_delete:
            # secure-delete drops the doclist entries but not the terms themselves; a
            # rewrite of the index is what removes every word of the deleted memory.
            conn.execute("INSERT INTO memories_fts(memories_fts) VALUES('optimize')")
    if rows and req.hard_delete:
        db.checkpoint()
    ids = [mid for _, mid in rows]
    return ForgetResponse(forgotten_ids=ids, hard_delete=req.hard_delete,
                          stores=[StoreCount(store=db.name, count=len(ids))])


def _merge_rows(conn: Any, req: MergeRequest, now: int) -> list[tuple[int, Row]]:
    """The live rows a merge plan reads: every row a reference names (by id or entity name)
    and every row linking one of them. The plan over this subset equals the plan over the
    whole scope, without reading the whole scope (an agent may hold 100k rows)."""
    where, args = scope_sql(req.agent_id, req.user_id)
    refs = json.dumps([req.canonical, *req.duplicates])
    named = [row_of(r) for r in conn.execute(
        f"SELECT {ROW_COLS} FROM memories WHERE {where} AND {VISIBLE} AND (id IN {IN_JSON} "
        f"OR json_extract(metadata, '$.entity_name') IN {IN_JSON})", [*args, now, refs, refs])]
    ids = json.dumps([row.id for _, row in named])
    linking = [row_of(r) for r in conn.execute(
        f"SELECT {ROW_COLS} FROM memories WHERE {where} AND {VISIBLE} AND id IN "
        f"(SELECT src FROM links WHERE agent_id = ? AND kind = 'link' AND dst IN {IN_JSON})",
        [*args, now, req.agent_id, ids])]
    rows = {row.id: (rid, row) for rid, row in [*named, *linking]}
    return sorted(rows.values(), key=lambda r: (r[1].created_at, r[1].id))


def merge(db: SqliteDb, req: MergeRequest) -> MergeResponse:
    with db.tx() as conn:
        now = db.clock.now_ms()
        live = _merge_rows(conn, req, now)
        rids = {row.id: rid for rid, row in live}
        plan = plan_row_merge([row for _, row in live], req, now)
        for old, new, text_changed in plan.changes:
            write_row(db, conn, rids[old.id], old, new, text_changed)
        if plan.changes:
            db.bump(conn, req.agent_id)
    return MergeResponse(canonical=plan.canonical_id, merged_count=len(plan.absorbed_ids),
                         strategy_used=req.strategy, stores=[db.name])


def merged_into(db: SqliteDb, agent_id: str, id: str, user_id: str | None) -> str | None:
    where, args = scope_sql(agent_id, user_id)
    with db.tx() as conn:
        if conn.execute(f"SELECT 1 FROM memories WHERE {where} AND id = ?",
                        [*args, id]).fetchone() is None:
            return None
        return _merged_into_of(conn, agent_id, id)


def expire(db: SqliteDb, req: ExpireRequest) -> ExpireResponse:
    with db.tx() as conn:
        now = db.clock.now_ms()
        live = _live_rows(db, conn, req.agent_id, req.user_id, now)
        matched = [(rid, row) for rid, row in live
                   if policy_matches(req.policy, row.expiry_facts(), now)]
        marks = expire_marks(req.action, now)
        sets = ", ".join(f"{k} = ?" for k in marks)
        conn.executemany(f"UPDATE memories SET {sets} WHERE rid = ?",
                         [(*(int(v) if isinstance(v, bool) else v for v in marks.values()), rid)
                          for rid, _ in matched])
        if matched:
            db.bump(conn, req.agent_id)
    return ExpireResponse(matched_count=len(matched), action_taken=req.action,
                          stores=[db.name], matched_ids=[row.id for _, row in matched])


def update(db: SqliteDb, req: UpdateRequest) -> MemoryRecord:
    where, args = scope_sql(req.agent_id, req.user_id)
    with db.tx() as conn:
        now = db.clock.now_ms()
        got = conn.execute(f"SELECT {ROW_COLS} FROM memories WHERE {where} AND id = ? AND "
                           f"{VISIBLE}", [*args, req.id, now]).fetchone()
        if got is None:
            raise NotFound(f"memory {req.id!r} not found")
        rid, row = row_of(got)
        plan = plan_update(row, req, now)
        write_row(db, conn, rid, row, replace(row, **plan.changes), plan.stored is not None)
        db.bump(conn, req.agent_id)
        out = conn.execute(f"SELECT {COLS} FROM memories WHERE rid = ?", (rid,)).fetchone()
    return record_of(out)
