"""``SqliteStore``: the embedded default store (one SQLite file, FTS5, exact scoped k-NN).

Storage. One SQLite database (via apsw, with sqlite-vec loaded for SQL-side vector functions)
holds rows, float32 vectors (a BLOB per memory), a contentless FTS5 index with FTS5
``secure-delete``, graph links and recall statistics. WAL journal, ``synchronous=FULL`` (a
committed memory survives power loss; a commit costs one WAL fsync, ~0.3 ms on a local SSD),
``secure_delete=ON`` (freed pages are zeroed; a hard delete also rewrites the full-text
index and truncates the WAL, so no byte or indexed word of the memory remains),
and a busy timeout so several processes can share the file. Every operation is one
``BEGIN IMMEDIATE`` transaction covering row, vector, full-text, links and recall stats.

Search. k-NN is exact and scoped: a per-agent float32 matrix cached in process is multiplied
by the query vector, rows outside the user/type/filter/freshness scope are masked out
*before* the top-k, so another agent's closer vectors can never crowd a result out. Each
write bumps the scope's version in the ``scopes`` table inside its transaction; a reader
compares versions inside its own transaction and reloads on any difference, which makes
writes by other processes visible at once. Full-text candidates come from FTS5 BM25,
restricted to the agent by a hashed scope token; the two lists are fused with RRF and gated
by the relevance floor (see :mod:`memorywire.core.scoring`).

Blocking work runs in a worker thread; one connection per store is guarded by a lock.
"""

from __future__ import annotations

import builtins
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
import apsw
import numpy as np
import numpy.typing as npt

from memorywire.core.clock import Clock, SystemClock
from memorywire.core.expiry import ExpiryFacts, policy_matches
from memorywire.core.filters import matches_filter
from memorywire.core.ids import new_id
from memorywire.core.merge import (
    MergeRow,
    plan_merge,
    remap_edges,
    resolve_canonical,
    resolve_duplicates,
)
from memorywire.embed.base import Embedder, Vectors
from memorywire.errors import (
    BackendUnavailable,
    Conflict,
    InvalidRequest,
    MemorywireError,
    NotFound,
    StoreCorrupt,
)
from memorywire.store._common import (
    DEFAULT_RELEVANCE_FLOOR,
    content_from_storage,
    content_to_storage,
    embed_text,
    links_of,
    resolve_embedder,
    shortest_hops,
)
from memorywire.store._vector_cache import CachedRow, ScopeCache, ScopeIndex
from memorywire.store.base import Capability, Health, ListQuery, UpdateRequest
from memorywire.store.sqlite_schema import SCHEMA_VERSION, open_database, scope_token
from memorywire.store.sqlite_search import SQLITE_LEXICAL_FLOOR, rank_scope
from memorywire.wire.models import (
    ExpireAction,
    ExpireRequest,
    ExpireResponse,
    ForgetRequest,
    ForgetResponse,
    Fusion,
    MemoryRecord,
    MemoryType,
    MergeRequest,
    MergeResponse,
    RecallHit,
    RecallRequest,
    RecallResponse,
    RememberRequest,
    RememberResponse,
    StoreCount,
)

__all__ = ["SCHEMA_VERSION", "SqliteStore"]

_T = TypeVar("_T")

_COLS = (
    "id, agent_id, user_id, type, content, metadata, confidence, source, created_at, "
    "updated_at, expires_at, last_recalled_at, recall_count"
)
_VISIBLE = (
    "deleted_at IS NULL AND archived_at IS NULL AND (expires_at IS NULL OR expires_at > ?)"
)
_IN_JSON = "(SELECT value FROM json_each(?))"

_CAPABILITIES = frozenset(
    {
        Capability.SEMANTIC,
        Capability.EPISODIC,
        Capability.PROCEDURAL,
        Capability.EMOTIONAL,
        Capability.FTS,
        Capability.VECTOR,
        Capability.GRAPH,
        Capability.RECALL_TRACKING,
    }
)


def _record(row: Sequence[Any]) -> MemoryRecord:
    mtype = MemoryType(row[3])
    return MemoryRecord.model_validate({
        "id": row[0], "agent_id": row[1], "user_id": row[2], "type": mtype,
        "content": content_from_storage(mtype, row[4]), "metadata": json.loads(row[5]),
        "confidence": row[6], "source": row[7], "created_at": row[8], "updated_at": row[9],
        "expires_at": row[10], "last_recalled_at": row[11], "recall_count": row[12],
    })


def _checked_vectors(vectors: Any, n: int, dim: int) -> Vectors:
    out = np.ascontiguousarray(vectors, dtype=np.float32)
    if out.shape != (n, dim):
        raise InvalidRequest(f"vectors must have shape ({n}, {dim}), not {out.shape}")
    if not np.isfinite(out).all():
        raise InvalidRequest("vectors must be finite")
    return out


def _scope_sql(agent_id: str, user_id: str | None) -> tuple[str, list[Any]]:
    if user_id is None:
        return "agent_id = ?", [agent_id]
    return "agent_id = ? AND user_id = ?", [agent_id, user_id]


class SqliteStore:
    """The embedded store. ``cache_mb`` bounds the in-process vector cache (least recently
    used agent out); the default holds ~600k memories of the 384-d default embedder."""

    def __init__(
        self,
        path: str | Path,
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        name: str = "sqlite",
        *,
        relevance_floor: float = DEFAULT_RELEVANCE_FLOOR,
        lexical_floor: float = SQLITE_LEXICAL_FLOOR,
        busy_timeout_ms: int = 10_000,
        cache_mb: float = 1024,
    ) -> None:
        self._path = str(path)
        self._embedder = resolve_embedder(embedder)
        self._clock: Clock = clock or SystemClock()
        self._name = name
        self._floor = relevance_floor
        self._lexical_floor = lexical_floor
        self._lock = threading.Lock()
        self._caches = ScopeCache(int(cache_mb * 2**20))
        self._on_commit: list[Callable[[], None]] = []
        self._conn: apsw.Connection | None = open_database(self._path, self._embedder,
                                                           busy_timeout_ms)

    @classmethod
    def from_url(cls, url: str, **kw: Any) -> SqliteStore:
        """``sqlite:///abs/path.db``, ``sqlite://relative.db`` or ``sqlite://:memory:``."""
        if not url.lower().startswith("sqlite://"):
            raise InvalidRequest(f"not a sqlite URL: {url!r}")
        path = url[len("sqlite://"):].split("?", 1)[0]
        if not path:
            raise InvalidRequest("sqlite URL names no file (use sqlite:///path.db)")
        return cls(path, **kw)

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> frozenset[Capability]:
        return _CAPABILITIES

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    # --- connection, schema, transactions ----------------------------------------------------

    @contextmanager
    def _tx(self, *, durable: bool = True) -> Iterator[Any]:
        """Hold the lock and one IMMEDIATE transaction; commit on success.

        Callbacks queued in ``self._on_commit`` run after COMMIT, still under the lock, so the
        in-process cache only ever reflects committed data. ``durable=False`` commits without
        the WAL fsync (``synchronous=NORMAL``): for a recall, whose only write is recall
        statistics. Such a commit is still atomic and survives a crash of the process; only
        a power loss before the next durable commit or checkpoint can drop it. It saves
        0.5-3 ms per recall on a local SSD.
        """
        with self._lock:
            conn = self._conn
            if conn is None:
                raise BackendUnavailable(f"store {self._name!r} is closed")
            self._on_commit = []
            if not durable:
                conn.execute("PRAGMA synchronous=NORMAL")
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                    conn.execute("COMMIT")
                except BaseException:
                    self._caches.clear()
                    if not conn.getautocommit():
                        conn.execute("ROLLBACK")
                    raise
            finally:
                if not durable:
                    conn.execute("PRAGMA synchronous=FULL")
            for callback in self._on_commit:
                callback()

    async def _call(self, fn: Callable[[], _T]) -> _T:
        def run() -> _T:
            try:
                return fn()
            except MemorywireError:
                raise
            except apsw.BusyError as exc:
                raise BackendUnavailable(f"database is busy: {exc}", retry_after=0.1) from exc
            except (apsw.CorruptError, apsw.NotADBError) as exc:
                raise StoreCorrupt(f"{self._path} is corrupt: {exc}") from exc
            except apsw.Error as exc:
                raise BackendUnavailable(f"SQLite failed: {exc}") from exc

        return await anyio.to_thread.run_sync(run)

    def _version(self, conn: Any, agent_id: str) -> int:
        row = conn.execute("SELECT version FROM scopes WHERE agent_id = ?", (agent_id,)).fetchone()
        return int(row[0]) if row else 0

    def _bump(self, conn: Any, agent_id: str) -> int:
        """Record a change to the agent's live set; drops our cache of it unless appended to."""
        self._caches.pop(agent_id)
        return int(conn.execute(
            "INSERT INTO scopes VALUES(?, 1) "
            "ON CONFLICT(agent_id) DO UPDATE SET version = version + 1 RETURNING version",
            (agent_id,),
        ).fetchone()[0])

    def _append_on_commit(self, conn: Any, agent_id: str,
                          rows: list[CachedRow]) -> None:
        """Bump the scope and, after commit, extend our cache if it was current."""
        cached = self._caches.get(agent_id)
        before = self._version(conn, agent_id)
        after = self._bump(conn, agent_id)
        if cached is None or cached.version != before:
            return

        def extend() -> None:
            cached.extend(rows)
            cached.version = after
            self._caches.put(agent_id, cached)

        self._on_commit.append(extend)

    def _index(self, conn: Any, agent_id: str) -> ScopeIndex:
        version = self._version(conn, agent_id)
        cached = self._caches.get(agent_id)
        if cached is not None and cached.version == version:
            return cached
        dim = self._embedder.dim
        rows = conn.execute(
            "SELECT m.rid, m.id, m.user_id, m.type, m.created_at, m.expires_at, m.demoted, "
            "m.metadata, v.embedding FROM memories m JOIN vectors v ON v.rid = m.rid "
            "WHERE m.agent_id = ? AND m.deleted_at IS NULL AND m.archived_at IS NULL "
            "ORDER BY m.rid",
            (agent_id,),
        ).fetchall()
        blobs = b"".join([r[8] for r in rows])
        if len(blobs) != len(rows) * dim * 4:
            raise StoreCorrupt(f"vectors in {self._path} do not have dimension {dim}")
        index = ScopeIndex.from_rows(dim, version, [r[:8] for r in rows], blobs)
        self._caches.loads += 1
        self._caches.put(agent_id, index)
        return index

    def _checkpoint(self) -> None:
        """Fold the WAL into the database and truncate it, so deleted bytes leave the WAL."""
        with self._lock:
            if self._conn is not None:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    # --- writes ------------------------------------------------------------------------------

    async def remember(self, req: RememberRequest) -> RememberResponse:
        return (await self.remember_many([req]))[0]

    async def remember_many(
        self, reqs: Sequence[RememberRequest], *, vectors: Vectors | None = None
    ) -> list[RememberResponse]:
        """Embed in one batch and write in one transaction (all or nothing).

        ``vectors``, one row per request from this store's embedder, skips the model: an
        import or re-index that already holds embeddings should not pay for them twice.
        """
        if vectors is not None:
            vectors = _checked_vectors(vectors, len(reqs), self._embedder.dim)
        return await self._call(lambda: self._remember_many(reqs, vectors))

    def _remember_many(self, reqs: Sequence[RememberRequest],
                       given: Vectors | None = None) -> list[RememberResponse]:
        prepared = [(r, content_to_storage(r.type, r.content)) for r in reqs]
        links = [links_of(r.metadata) for r in reqs]
        if not prepared:
            return []
        vectors = given if given is not None else self._embedder.embed(
            [embed_text(r.type, s) for r, s in prepared])
        out: list[RememberResponse] = []
        with self._tx() as conn:
            now = self._clock.now_ms()
            added: dict[str, list[CachedRow]] = {}
            for (r, stored), vec, edges in zip(prepared, vectors, links, strict=True):
                if r.id is not None:
                    row = conn.execute(
                        "SELECT type, content, created_at FROM memories "
                        "WHERE agent_id = ? AND id = ?", (r.agent_id, r.id)
                    ).fetchone()
                    if row is not None:
                        if row[0] != r.type.value or row[1] != stored:
                            raise Conflict(f"id {r.id!r} already holds a different memory")
                        out.append(RememberResponse(id=r.id, stored_at=row[2],
                                                    stores=[self._name], pending_approval=False))
                        continue
                mid = r.id or new_id(now)
                rid = conn.execute(
                    "INSERT INTO memories(agent_id, id, user_id, type, content, metadata, "
                    "confidence, source, created_at, expires_at) VALUES(?,?,?,?,?,?,?,?,?,?) "
                    "RETURNING rid",
                    (r.agent_id, mid, r.user_id, r.type.value, stored,
                     json.dumps(r.metadata or {}, ensure_ascii=False), r.confidence, r.source,
                     now, r.expires_at),
                ).fetchone()[0]
                conn.execute("INSERT INTO vectors VALUES(?, ?)",
                             (rid, np.ascontiguousarray(vec, dtype=np.float32).tobytes()))
                conn.execute("INSERT INTO memories_fts(rowid, body, scope) VALUES(?, ?, ?)",
                             (rid, embed_text(r.type, stored), scope_token(r.agent_id)))
                conn.executemany("INSERT OR IGNORE INTO links VALUES(?, ?, ?, 'link')",
                                 [(r.agent_id, mid, dst) for dst in edges])
                added.setdefault(r.agent_id, []).append(CachedRow(
                    rid, mid, r.user_id, r.type, now, r.expires_at, False,
                    json.dumps(r.metadata or {}, ensure_ascii=False), vec))
                out.append(RememberResponse(id=mid, stored_at=now, stores=[self._name],
                                            pending_approval=False))
            for agent_id, rows in added.items():
                self._append_on_commit(conn, agent_id, rows)
        return out

    async def forget(self, req: ForgetRequest) -> ForgetResponse:
        return await self._call(lambda: self._forget(req))

    def _forget(self, req: ForgetRequest) -> ForgetResponse:
        where, args = _scope_sql(req.agent_id, req.user_id)
        if not req.hard_delete:
            where += " AND deleted_at IS NULL"
        if req.ids is not None:
            where += f" AND id IN {_IN_JSON}"
            args.append(json.dumps(req.ids))
        with self._tx() as conn:
            now = self._clock.now_ms()
            rows = [
                (rid, mid) for rid, mid, meta in conn.execute(
                    f"SELECT rid, id, metadata FROM memories WHERE {where} "
                    "ORDER BY created_at, id", args)
                if req.filter is None or matches_filter(json.loads(meta), req.filter)
            ]
            for rid, mid in rows:
                if req.hard_delete:
                    conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (rid,))
                    conn.execute("DELETE FROM vectors WHERE rid = ?", (rid,))
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
        conn.execute("UPDATE vectors SET embedding = ? WHERE rid = ?",
                     (np.ascontiguousarray(vec, dtype=np.float32).tobytes(), rid))
        conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (rid,))
        conn.execute("INSERT INTO memories_fts(rowid, body, scope) VALUES(?, ?, ?)",
                     (rid, text, scope_token(agent_id)))

    async def merge(self, req: MergeRequest) -> MergeResponse:
        return await self._call(lambda: self._merge(req))

    def _merge(self, req: MergeRequest) -> MergeResponse:
        where, args = _scope_sql(req.agent_id, req.user_id)
        refs = json.dumps([req.canonical, *req.duplicates])
        with self._tx() as conn:
            now = self._clock.now_ms()
            rows = conn.execute(
                f"SELECT rid, id, type, content, created_at, confidence, metadata FROM memories "
                f"WHERE {where} AND {_VISIBLE} AND (id IN {_IN_JSON} OR "
                f"json_extract(metadata, '$.entity_name') IN {_IN_JSON}) "
                "ORDER BY created_at, id", [*args, now, refs, refs],
            ).fetchall()
            by_id = {r[1]: r for r in rows}
            plain = [
                MergeRow(r[1], content_from_storage(MemoryType(r[2]), r[3]), r[4], r[5],
                         json.loads(r[6]))
                for r in rows
            ]
            canonical = resolve_canonical(req.canonical, plain)
            if canonical is None:
                raise NotFound(f"canonical memory {req.canonical!r} not found")
            dups = resolve_duplicates(req.duplicates, plain, canonical.id)
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
                         f"{_IN_JSON}", (now, req.agent_id, absorbed))
            touching = conn.execute(
                f"SELECT src, dst FROM links WHERE agent_id = ? AND kind = 'link' AND "
                f"(src IN {_IN_JSON} OR dst IN {_IN_JSON})", (req.agent_id, absorbed, absorbed),
            ).fetchall()
            conn.execute(
                f"DELETE FROM links WHERE agent_id = ? AND kind = 'link' AND "
                f"(src IN {_IN_JSON} OR dst IN {_IN_JSON})", (req.agent_id, absorbed, absorbed),
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
        where, args = _scope_sql(req.agent_id, req.user_id)
        column = {ExpireAction.FORGET: "deleted_at = ?", ExpireAction.ARCHIVE: "archived_at = ?",
                  ExpireAction.DEMOTE: "demoted = 1, updated_at = ?"}[req.action]
        with self._tx() as conn:
            now = self._clock.now_ms()
            rows = conn.execute(
                f"SELECT rid, id, type, created_at, confidence, last_recalled_at FROM memories "
                f"WHERE {where} AND {_VISIBLE} ORDER BY created_at, id", [*args, now],
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
        where, args = _scope_sql(req.agent_id, req.user_id)
        with self._tx() as conn:
            now = self._clock.now_ms()
            row = conn.execute(
                f"SELECT rid, type, content, metadata, confidence FROM memories "
                f"WHERE {where} AND id = ? AND {_VISIBLE}", [*args, req.id, now],
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
            out = conn.execute(f"SELECT {_COLS} FROM memories WHERE rid = ?", (rid,)).fetchone()
        return _record(out)

    # --- reads -------------------------------------------------------------------------------

    async def recall(self, req: RecallRequest) -> RecallResponse:
        started = time.perf_counter()

        def run() -> list[RecallHit]:
            return self._recall(req, self._embedder.embed([req.query])[0])

        hits = await self._call(run)
        return RecallResponse(results=hits, fusion_used=Fusion.RRF, stores_queried=[self._name],
                              latency_ms=int((time.perf_counter() - started) * 1000))

    async def recall_by_vector(
        self, req: RecallRequest, vector: npt.NDArray[np.float32]
    ) -> RecallResponse:
        """Recall with a query vector the caller already has (from this store's embedder).

        A router fanning one query out to several stores, or a benchmark separating model
        time from search time, embeds once; ``req.query`` still drives the full-text list.
        """
        qvec = _checked_vectors(np.asarray(vector, dtype=np.float32).reshape(1, -1), 1,
                                self._embedder.dim)[0]
        started = time.perf_counter()
        hits = await self._call(lambda: self._recall(req, qvec))
        return RecallResponse(results=hits, fusion_used=Fusion.RRF, stores_queried=[self._name],
                              latency_ms=int((time.perf_counter() - started) * 1000))

    def _recall(self, req: RecallRequest, qvec: npt.NDArray[np.float32]) -> list[RecallHit]:
        with self._tx(durable=False) as conn:
            now = self._clock.now_ms()
            index = self._index(conn, req.agent_id)
            ranked = rank_scope(conn, index, req, qvec, now, floor=self._floor,
                                lexical_floor=self._lexical_floor)
            if not ranked:
                return []
            wanted = json.dumps([s.id for s in ranked])
            rows = {
                r[0]: r for r in conn.execute(
                    f"SELECT {_COLS} FROM memories WHERE agent_id = ? AND id IN {_IN_JSON}",
                    (req.agent_id, wanted))
            }
            conn.execute(
                f"UPDATE memories SET last_recalled_at = ?, recall_count = recall_count + 1 "
                f"WHERE agent_id = ? AND id IN {_IN_JSON}", (now, req.agent_id, wanted))
        hits = []
        for s in ranked:
            r = rows[s.id]
            mtype = MemoryType(r[3])
            hits.append(RecallHit(
                id=r[0], type=mtype, content=content_from_storage(mtype, r[4]), score=s.score,
                metadata=json.loads(r[5]), created_at=r[8], supporting=[],
                source_store=self._name, user_id=r[2], source=r[7], confidence=r[6],
            ))
        return hits

    async def get(self, agent_id: str, id: str, user_id: str | None = None) -> MemoryRecord | None:
        def run() -> MemoryRecord | None:
            where, args = _scope_sql(agent_id, user_id)
            with self._tx() as conn:
                row = conn.execute(
                    f"SELECT {_COLS} FROM memories WHERE {where} AND id = ? AND {_VISIBLE}",
                    [*args, id, self._clock.now_ms()],
                ).fetchone()
            return None if row is None else _record(row)

        return await self._call(run)

    async def list(self, query: ListQuery) -> list[MemoryRecord]:
        return await self._call(lambda: self._list(query))

    def _list(self, query: ListQuery) -> builtins.list[MemoryRecord]:
        clauses = ["deleted_at IS NULL", "(expires_at IS NULL OR expires_at > ?)"]
        args: builtins.list[Any] = [self._clock.now_ms()]
        if query.agent_id is not None:
            clauses.append("agent_id = ?")
            args.append(query.agent_id)
        if query.user_id is not None:
            clauses.append("user_id = ?")
            args.append(query.user_id)
        if not query.include_archived:
            clauses.append("archived_at IS NULL")
        if query.types is not None:
            clauses.append(f"type IN {_IN_JSON}")
            args.append(json.dumps([t.value for t in query.types]))
        out: builtins.list[MemoryRecord] = []
        with self._tx() as conn:
            if query.after_id is not None:
                anchor_sql = "SELECT created_at, id FROM memories WHERE id = ?"
                anchor_args: builtins.list[Any] = [query.after_id]
                if query.agent_id is not None:
                    anchor_sql += " AND agent_id = ?"
                    anchor_args.append(query.agent_id)
                anchor = conn.execute(anchor_sql + " ORDER BY created_at, id LIMIT 1",
                                      anchor_args).fetchone()
                if anchor is not None:
                    clauses.append("(created_at, id) > (?, ?)")
                    args.extend(anchor)
            sql = f"SELECT {_COLS} FROM memories WHERE {' AND '.join(clauses)} " \
                  "ORDER BY created_at, id"
            for row in conn.execute(sql, args):
                if query.filter and not matches_filter(json.loads(row[5]), query.filter):
                    continue
                out.append(_record(row))
                if len(out) >= query.limit:
                    break
        return out

    async def neighbours(
        self, agent_id: str, ids: Sequence[str], hops: int, user_id: str | None = None
    ) -> dict[str, dict[str, int]]:
        """Live memories within ``hops`` links of each id, with their hop distance."""

        def run() -> dict[str, dict[str, int]]:
            where, args = _scope_sql(agent_id, user_id)
            with self._tx() as conn:
                edges = conn.execute("SELECT src, dst FROM links WHERE agent_id = ? AND "
                                     "kind = 'link'", (agent_id,)).fetchall()
                nodes = {n for e in edges for n in e} | set(ids)
                live = {
                    r[0] for r in conn.execute(
                        f"SELECT id FROM memories WHERE {where} AND {_VISIBLE} AND id IN "
                        f"{_IN_JSON}", [*args, self._clock.now_ms(), json.dumps(sorted(nodes))])
                }
            adjacency: dict[str, builtins.list[str]] = {}
            for s, d in edges:
                if s in live and d in live:
                    adjacency.setdefault(s, []).append(d)
            return shortest_hops(adjacency, [i for i in ids if i in live], hops)

        return await self._call(run)

    async def health(self) -> Health:
        def run() -> Health:
            with self._tx() as conn:
                count = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
            return Health("ok", {"path": self._path, "memories": int(count),
                                 "embedder": self._embedder.name})

        try:
            return await self._call(run)
        except MemorywireError as exc:
            return Health("down", {"path": self._path, "error": exc.message})

    async def aclose(self) -> None:
        def run() -> None:
            with self._lock:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                    self._caches.clear()

        await anyio.to_thread.run_sync(run)
