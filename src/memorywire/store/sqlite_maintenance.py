"""SqliteStore's maintenance writes: forget (soft and scrubbing hard delete), merge, expire,
update. Each is one transaction that bumps the agent's scope version when rows change.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from memorywire.core.expiry import ExpiryFacts, policy_matches
from memorywire.core.filters import matches_filter
from memorywire.core.merge import (
    MergeRow,
    plan_merge,
    remap_edges,
    resolve_merge,
)
from memorywire.errors import (
    NotFound,
)
from memorywire.store._common import (
    content_from_storage,
    content_to_storage,
    embed_text,
    links_of,
)
from memorywire.store.base import UpdateRequest
from memorywire.store.sqlite_base import COLS, IN_JSON, VISIBLE, SqliteBase, record_of, scope_sql
from memorywire.store.sqlite_schema import agent_number, scope_token, vid
from memorywire.wire.models import (
    ExpireAction,
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

__all__ = ["SqliteMaintenance"]


class SqliteMaintenance(SqliteBase):
    async def forget(self, req: ForgetRequest) -> ForgetResponse:
        return await self._call(lambda: self._forget(req))

    def _forget(self, req: ForgetRequest) -> ForgetResponse:
        where, args = scope_sql(req.agent_id, req.user_id)
        if not req.hard_delete:
            where += " AND deleted_at IS NULL"
        if req.ids is not None:
            where += f" AND id IN {IN_JSON}"
            args.append(json.dumps(req.ids))
        with self._tx() as conn:
            now = self._clock.now_ms()
            rows = [
                (rid, mid) for rid, mid, meta in conn.execute(
                    f"SELECT rid, id, metadata FROM memories WHERE {where} "
                    "ORDER BY created_at, id", args)
                if req.filter is None or matches_filter(json.loads(meta), req.filter)
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
                self._bump(conn, req.agent_id)
            if rows and req.hard_delete:
                # secure-delete drops the doclist entries but not the terms themselves; a
                # rewrite of the index is what removes every word of the deleted memory.
                conn.execute("INSERT INTO memories_fts(memories_fts) VALUES('optimize')")
        if rows and req.hard_delete:
            self._checkpoint()
        ids = [mid for _, mid in rows]
        return ForgetResponse(forgotten_ids=ids, hard_delete=req.hard_delete,
                              stores=[StoreCount(store=self._name, count=len(ids))])

    def _reembed(self, conn: Any, rid: int, mtype: MemoryType, stored: str,
                 agent_id: str) -> None:
        text = embed_text(mtype, stored)
        vec = self._embedder.embed([text])[0]
        no = agent_number(conn, agent_id, create=True) or 0
        conn.execute("UPDATE vectors SET embedding = ? WHERE vid = ?",
                     (np.ascontiguousarray(vec, dtype=np.float32).tobytes(), vid(no, rid)))
        conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (rid,))
        conn.execute("INSERT INTO memories_fts(rowid, body, scope) VALUES(?, ?, ?)",
                     (rid, text, scope_token(agent_id)))

    async def merge(self, req: MergeRequest) -> MergeResponse:
        return await self._call(lambda: self._merge(req))

    def _merge(self, req: MergeRequest) -> MergeResponse:
        where, args = scope_sql(req.agent_id, req.user_id)
        refs = json.dumps([req.canonical, *req.duplicates])
        with self._tx() as conn:
            now = self._clock.now_ms()
            rows = conn.execute(
                f"SELECT rid, id, type, content, created_at, confidence, metadata FROM memories "
                f"WHERE {where} AND {VISIBLE} AND (id IN {IN_JSON} OR "
                f"json_extract(metadata, '$.entity_name') IN {IN_JSON}) "
                "ORDER BY created_at, id", [*args, now, refs, refs],
            ).fetchall()
            by_id = {r[1]: r for r in rows}
            plain = [
                MergeRow(r[1], content_from_storage(MemoryType(r[2]), r[3]), r[4], r[5],
                         json.loads(r[6]))
                for r in rows
            ]
            canonical, dups = resolve_merge(req.canonical, req.duplicates, plain)
            if not dups:
                return MergeResponse(canonical=canonical.id, merged_count=0,
                                     strategy_used=req.strategy, stores=[self._name])
            plan = plan_merge(canonical, dups, req.strategy)
            win = by_id[plan.canonical_id]
            mtype = MemoryType(win[2])
            stored = content_to_storage(mtype, plan.content)
            conn.execute(
                "UPDATE memories SET content = ?, metadata = ?, confidence = ?, updated_at = ? "
                "WHERE rid = ?",
                (stored, json.dumps(plan.metadata, ensure_ascii=False), plan.confidence, now,
                 win[0]),
            )
            if stored != win[3]:
                self._reembed(conn, win[0], mtype, stored, req.agent_id)
            absorbed = json.dumps(plan.absorbed_ids)
            conn.execute(f"UPDATE memories SET deleted_at = ? WHERE agent_id = ? AND id IN "
                         f"{IN_JSON}", (now, req.agent_id, absorbed))
            touching = conn.execute(
                f"SELECT src, dst FROM links WHERE agent_id = ? AND kind = 'link' AND "
                f"(src IN {IN_JSON} OR dst IN {IN_JSON})", (req.agent_id, absorbed, absorbed),
            ).fetchall()
            conn.execute(
                f"DELETE FROM links WHERE agent_id = ? AND kind = 'link' AND "
                f"(src IN {IN_JSON} OR dst IN {IN_JSON})", (req.agent_id, absorbed, absorbed),
            )
            moved = remap_edges([(s, d) for s, d in touching], plan.absorbed_ids, win[1])
            conn.executemany(
                "INSERT OR IGNORE INTO links VALUES(?, ?, ?, ?)",
                [(req.agent_id, s, d, "link") for s, d in moved]
                + [(req.agent_id, a, win[1], "merge") for a in plan.absorbed_ids],
            )
            self._bump(conn, req.agent_id)
        return MergeResponse(canonical=win[1], merged_count=len(plan.absorbed_ids),
                             strategy_used=req.strategy, stores=[self._name])

    async def expire(self, req: ExpireRequest) -> ExpireResponse:
        return await self._call(lambda: self._expire(req))

    def _expire(self, req: ExpireRequest) -> ExpireResponse:
        where, args = scope_sql(req.agent_id, req.user_id)
        column = {ExpireAction.FORGET: "deleted_at = ?", ExpireAction.ARCHIVE: "archived_at = ?",
                  ExpireAction.DEMOTE: "demoted = 1, updated_at = ?"}[req.action]
        with self._tx() as conn:
            now = self._clock.now_ms()
            rows = conn.execute(
                f"SELECT rid, id, type, created_at, confidence, last_recalled_at FROM memories "
                f"WHERE {where} AND {VISIBLE} ORDER BY created_at, id", [*args, now],
            ).fetchall()
            matched = [
                (rid, mid) for rid, mid, t, created, conf, last in rows
                if policy_matches(req.policy, ExpiryFacts(MemoryType(t), created, conf, last), now)
            ]
            conn.executemany(f"UPDATE memories SET {column} WHERE rid = ?",
                             [(now, rid) for rid, _ in matched])
            if matched:
                self._bump(conn, req.agent_id)
        return ExpireResponse(matched_count=len(matched), action_taken=req.action,
                              stores=[self._name], matched_ids=[m for _, m in matched])

    async def update(self, req: UpdateRequest) -> MemoryRecord:
        return await self._call(lambda: self._update(req))

    def _update(self, req: UpdateRequest) -> MemoryRecord:
        where, args = scope_sql(req.agent_id, req.user_id)
        with self._tx() as conn:
            now = self._clock.now_ms()
            row = conn.execute(
                f"SELECT rid, type, content, metadata, confidence FROM memories "
                f"WHERE {where} AND id = ? AND {VISIBLE}", [*args, req.id, now],
            ).fetchone()
            if row is None:
                raise NotFound(f"memory {req.id!r} not found")
            rid, mtype, stored = row[0], MemoryType(row[1]), row[2]
            metadata = json.loads(row[3])
            if req.metadata_patch is not None:
                for key, value in req.metadata_patch.items():
                    if value is None:
                        metadata.pop(key, None)
                    else:
                        metadata[key] = value
                if "links" in req.metadata_patch:
                    conn.execute("DELETE FROM links WHERE agent_id = ? AND src = ? AND "
                                 "kind = 'link'", (req.agent_id, req.id))
                    conn.executemany("INSERT OR IGNORE INTO links VALUES(?, ?, ?, 'link')",
                                     [(req.agent_id, req.id, d) for d in links_of(metadata)])
            if req.content is not None:
                new_stored = content_to_storage(mtype, req.content)
                if new_stored != stored:
                    stored = new_stored
                    self._reembed(conn, rid, mtype, stored, req.agent_id)
            confidence = row[4] if req.confidence is None else req.confidence
            conn.execute(
                "UPDATE memories SET content = ?, metadata = ?, confidence = ?, updated_at = ? "
                "WHERE rid = ?",
                (stored, json.dumps(metadata, ensure_ascii=False), confidence, now, rid),
            )
            self._bump(conn, req.agent_id)
            out = conn.execute(f"SELECT {COLS} FROM memories WHERE rid = ?", (rid,)).fetchone()
        return record_of(out)

