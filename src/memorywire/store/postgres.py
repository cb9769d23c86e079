"""``PostgresStore``: wire v0 on PostgreSQL with pgvector (HNSW) and full-text search.

Every operation is one transaction on a pooled connection; driver errors are translated in
:meth:`PostgresStore._tx` only. Ranking, merge planning and expiry matching are the shared
pure rules of :mod:`memorywire.core`, so this module only translates them to SQL.

Scoped k-NN is exact. pgvector 0.6 has no iterative index scans: an HNSW scan with a
``WHERE agent_id = ...`` filter returns at most ``ef_search`` global candidates and filters
them afterwards, which loses in-scope neighbours (recall@5 0.71 at 100k rows measured). So a
scope of up to ``exact_scope_limit`` rows (the per-agent row count lives in
``memorywire_agent_counts``) is searched exactly through the ``(agent_id, user_id)`` index —
the ``ORDER BY`` is written so the HNSW index cannot serve it. Only an agent larger than that
uses HNSW, with ``ef_search`` scaled by how much of the table the agent owns, and the answer
is verified: if the index could not fill the candidate pool, the exact search runs instead.
``benchmarks/scale_pg.py`` measures both paths; ``docs/conformance.md`` records the choice.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio
import psycopg
import psycopg_pool
from psycopg.rows import dict_row

from memorywire.core.clock import DAY_MS, Clock, SystemClock
from memorywire.core.expiry import ExpiryFacts, policy_matches
from memorywire.core.ids import new_id
from memorywire.core.merge import MergeRow, plan_merge, resolve_merge
from memorywire.core.scoring import DEMOTE_FACTOR, candidate_pool, hybrid_rank
from memorywire.core.textsearch import query_terms
from memorywire.embed.base import Embedder
from memorywire.errors import (
    Conflict,
    InvalidRequest,
    MemorywireError,
    NotFound,
)
from memorywire.store._common import (
    DEFAULT_LEXICAL_FLOOR,
    DEFAULT_RELEVANCE_FLOOR,
    content_from_storage,
    content_to_storage,
    embed_text,
    links_of,
    resolve_embedder,
    shortest_hops,
)
from memorywire.store.base import Capability, Health, ListQuery, UpdateRequest
from memorywire.store.postgres_migrations import migrate
from memorywire.store.postgres_sql import (
    RECORD_COLS,
    TABLE,
    Where,
    add_metadata_filter,
    record_from_row,
    reject_nul,
    scope_where,
    translate_error,
    tsquery_text,
    vector_literal,
)
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

__all__ = ["PostgresStore"]

Conn = psycopg.AsyncConnection[dict[str, Any]]

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
        Capability.ERASE,
    }
)

class PostgresStore:
    """A pooled PostgreSQL + pgvector store; cheap to build, connects on first use."""

    def __init__(
        self,
        conninfo: str,
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        name: str = "postgres",
        *,
        min_size: int = 1,
        max_size: int = 8,
        timeout: float = 10.0,
        exact_scope_limit: int = 50_000,
        relevance_floor: float = DEFAULT_RELEVANCE_FLOOR,
        lexical_floor: float = DEFAULT_LEXICAL_FLOOR,
    ) -> None:
        self._conninfo = conninfo
        self._embedder_arg = embedder
        self._embedder: Embedder | None = embedder
        self._clock: Clock = clock or SystemClock()
        self._name = name
        self._floor = relevance_floor
        self._lexical_floor = lexical_floor
        self._exact_limit = exact_scope_limit
        self._timeout = timeout
        self._pool: psycopg_pool.AsyncConnectionPool[Conn] = psycopg_pool.AsyncConnectionPool(
            conninfo,
            connection_class=psycopg.AsyncConnection[dict[str, Any]],
            kwargs={"row_factory": dict_row, "autocommit": False},
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            open=False,
            check=psycopg_pool.AsyncConnectionPool.check_connection,
            name=f"memorywire-{name}",
        )
        self._ready = False
        self._lock = anyio.Lock()

    @classmethod
    def from_url(cls, url: str, **kw: Any) -> PostgresStore:
        """``postgresql://user:pass@host/db?pool_max=8&exact_scope_limit=50000``.

        ``pool_min``, ``pool_max`` and ``exact_scope_limit`` query keys configure the store;
        every other key is passed on to libpq.
        """
        parts = urlsplit(url)
        scheme = parts.scheme.split("+", 1)[0]
        ours = {"pool_min": "min_size", "pool_max": "max_size",
                "exact_scope_limit": "exact_scope_limit"}
        rest: list[tuple[str, str]] = []
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            if key in ours:
                try:
                    kw.setdefault(ours[key], int(value))
                except ValueError as exc:
                    raise InvalidRequest(f"{key} must be an integer, got {value!r}") from exc
            else:
                rest.append((key, value))
        conninfo = urlunsplit((scheme, parts.netloc, parts.path, urlencode(rest), ""))
        return cls(conninfo, **kw)

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> frozenset[Capability]:
        return _CAPABILITIES

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = resolve_embedder(None)
        return self._embedder

    # --- plumbing ----------------------------------------------------------------------------

    async def _embed(self, texts: Sequence[str]) -> Any:
        embedder = self.embedder
        return await anyio.to_thread.run_sync(embedder.embed, list(texts))

    @asynccontextmanager
    async def _tx(self) -> AsyncIterator[Conn]:
        """A connection inside one transaction; every driver error leaves here translated."""
        await self._ensure_ready()
        try:
            async with self._pool.connection() as conn, conn.transaction():
                yield conn
        except MemorywireError:
            raise
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise translate_error(exc) from exc

    async def _ensure_ready(self) -> None:
        if self._ready:
            return
        async with self._lock:
            if self._ready:
                return
            embedder = self.embedder
            try:
                await self._pool.open()
                async with self._pool.connection() as conn:
                    await migrate(conn, embedder, self._clock.now_ms())
            except MemorywireError:
                raise
            except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
                raise translate_error(exc) from exc
            self._ready = True

    # --- writes ------------------------------------------------------------------------------

    async def remember(self, req: RememberRequest) -> RememberResponse:
        return (await self.remember_many([req]))[0]

    async def remember_many(self, reqs: Sequence[RememberRequest]) -> list[RememberResponse]:
        """Several remembers in one transaction: all are stored, or none."""
        prepared: list[tuple[RememberRequest, str, dict[str, Any]]] = []
        for r in reqs:
            stored = content_to_storage(r.type, r.content)
            metadata = dict(r.metadata or {})
            links_of(metadata)
            reject_nul(stored, "content")
            reject_nul(json.dumps(metadata), "metadata")
            prepared.append((r, stored, metadata))
        if not prepared:
            return []
        vectors = await self._embed([embed_text(r.type, s) for r, s, _ in prepared])
        now = self._clock.now_ms()
        out: list[RememberResponse] = []
        async with self._tx() as conn:
            added: dict[str, int] = {}
            for (r, stored, metadata), vec in zip(prepared, vectors, strict=True):
                mid = r.id or new_id(now)
                cur = await conn.execute(
                    f"INSERT INTO {TABLE} (agent_id, id, user_id, type, content, metadata, "
                    "confidence, source, created_at, expires_at, embedding, tsv) VALUES "
                    "(%s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s::vector, "
                    "to_tsvector('simple', %s)) ON CONFLICT (agent_id, id) DO NOTHING "
                    "RETURNING created_at",
                    (r.agent_id, mid, r.user_id, r.type.value, stored, json.dumps(metadata),
                     r.confidence, r.source, now, r.expires_at, vector_literal(vec),
                     embed_text(r.type, stored)),
                )
                if await cur.fetchone() is not None:
                    added[r.agent_id] = added.get(r.agent_id, 0) + 1
                    out.append(RememberResponse(id=mid, stored_at=now, stores=[self._name],
                                                pending_approval=False))
                    continue
                cur = await conn.execute(
                    f"SELECT type, content, created_at FROM {TABLE} "
                    "WHERE agent_id = %s AND id = %s",
                    (r.agent_id, mid),
                )
                old = await cur.fetchone()
                if old is None or old["type"] != r.type.value or old["content"] != stored:
                    raise Conflict(f"id {mid!r} already holds a different memory")
                out.append(RememberResponse(id=mid, stored_at=int(old["created_at"]),
                                            stores=[self._name], pending_approval=False))
            for agent_id, n in sorted(added.items()):
                await conn.execute(
                    "INSERT INTO memorywire_agent_counts (agent_id, rows) VALUES (%s, %s) "
                    "ON CONFLICT (agent_id) DO UPDATE "
                    "SET rows = memorywire_agent_counts.rows + EXCLUDED.rows",
                    (agent_id, n),
                )
        return out

    async def forget(self, req: ForgetRequest) -> ForgetResponse:
        now = self._clock.now_ms()
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
        async with self._tx() as conn:
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
                              stores=[StoreCount(store=self._name, count=len(ids))])

    async def _live_rows(
        self, conn: Conn, agent_id: str, user_id: str | None, now: int, *, lock: bool = False
    ) -> list[dict[str, Any]]:
        w = scope_where(agent_id=agent_id, user_id=user_id, now_ms=now)
        cur = await conn.execute(
            f"SELECT {RECORD_COLS} FROM {TABLE} WHERE {w.sql()} ORDER BY created_at, id"
            + (" FOR UPDATE" if lock else ""),
            w.params,
        )
        return await cur.fetchall()

    async def merge(self, req: MergeRequest) -> MergeResponse:
        now = self._clock.now_ms()
        async with self._tx() as conn:
            rows = await self._live_rows(conn, req.agent_id, req.user_id, now, lock=True)
            by_id = {r["id"]: r for r in rows}
            plain = [
                MergeRow(r["id"], content_from_storage(MemoryType(r["type"]), r["content"]),
                         r["created_at"], r["confidence"], r["metadata"] or {})
                for r in rows
            ]
            canonical, dups = resolve_merge(req.canonical, req.duplicates, plain)
            if not dups:
                return MergeResponse(canonical=canonical.id, merged_count=0,
                                     strategy_used=req.strategy, stores=[self._name])
            plan = plan_merge(canonical, dups, req.strategy)
            survivor = by_id[plan.canonical_id]
            mtype = MemoryType(survivor["type"])
            stored = content_to_storage(mtype, plan.content)
            absorbed = list(plan.absorbed_ids)
            links = list(links_of(survivor["metadata"]))
            for mid in absorbed:
                links.extend(links_of(by_id[mid]["metadata"]))
            metadata = dict(plan.metadata)
            if links or "links" in metadata:
                metadata["links"] = [
                    x for x in dict.fromkeys(links) if x != survivor["id"] and x not in absorbed
                ]
            sets = "metadata = %s::jsonb, confidence = %s, updated_at = %s"
            params: list[Any] = [json.dumps(metadata), plan.confidence, now]
            if stored != survivor["content"]:
                text = embed_text(mtype, stored)
                vec = (await self._embed([text]))[0]
                sets += ", content = %s, embedding = %s::vector, tsv = to_tsvector('simple', %s)"
                params += [stored, vector_literal(vec), text]
            await conn.execute(
                f"UPDATE {TABLE} SET {sets} WHERE agent_id = %s AND id = %s",
                [*params, req.agent_id, survivor["id"]],
            )
            await conn.execute(
                f"UPDATE {TABLE} SET deleted_at = %s, merged_into = %s "
                "WHERE agent_id = %s AND id = ANY(%s)",
                (now, survivor["id"], req.agent_id, absorbed),
            )
            await self._relink(conn, req.agent_id, survivor["id"], absorbed, rows)
        return MergeResponse(canonical=survivor["id"], merged_count=len(absorbed),
                             strategy_used=req.strategy, stores=[self._name])

    async def _relink(
        self, conn: Conn, agent_id: str, survivor: str, absorbed: list[str],
        rows: list[dict[str, Any]],
    ) -> None:
        """Links that pointed at an absorbed row now point at the survivor."""
        gone = set(absorbed)
        for row in rows:
            if row["id"] == survivor or row["id"] in gone:
                continue
            links = links_of(row["metadata"])
            if not gone.intersection(links):
                continue
            relinked = [survivor if x in gone else x for x in links]
            new = [x for x in dict.fromkeys(relinked) if x != row["id"]]
            await conn.execute(
                f"UPDATE {TABLE} SET metadata = jsonb_set(metadata, '{{links}}', %s::jsonb) "
                "WHERE agent_id = %s AND id = %s",
                (json.dumps(new), agent_id, row["id"]),
            )

    async def expire(self, req: ExpireRequest) -> ExpireResponse:
        now = self._clock.now_ms()
        async with self._tx() as conn:
            rows = await self._live_rows(conn, req.agent_id, req.user_id, now, lock=True)
            matched = [
                r["id"] for r in rows
                if policy_matches(
                    req.policy,
                    ExpiryFacts(MemoryType(r["type"]), r["created_at"], r["confidence"],
                                r["last_recalled_at"]),
                    now,
                )
            ]
            if matched:
                sets: tuple[str, int | float] = {
                    ExpireAction.FORGET: ("deleted_at = %s", now),
                    ExpireAction.ARCHIVE: ("archived_at = %s", now),
                    ExpireAction.DEMOTE: ("score_factor = %s", DEMOTE_FACTOR),
                }[req.action]
                await conn.execute(
                    f"UPDATE {TABLE} SET {sets[0]} WHERE agent_id = %s AND id = ANY(%s)",
                    (sets[1], req.agent_id, matched),
                )
        return ExpireResponse(matched_count=len(matched), action_taken=req.action,
                              stores=[self._name], matched_ids=matched)

    async def update(self, req: UpdateRequest) -> MemoryRecord:
        now = self._clock.now_ms()
        async with self._tx() as conn:
            w = scope_where(agent_id=req.agent_id, user_id=req.user_id, now_ms=now)
            cur = await conn.execute(
                f"SELECT {RECORD_COLS} FROM {TABLE} WHERE {w.sql()} AND id = %s FOR UPDATE",
                [*w.params, req.id],
            )
            row = await cur.fetchone()
            if row is None:
                raise NotFound(f"memory {req.id!r} not found")
            mtype = MemoryType(row["type"])
            metadata = dict(row["metadata"] or {})
            if req.metadata_patch is not None:
                for key, value in req.metadata_patch.items():
                    if value is None:
                        metadata.pop(key, None)
                    else:
                        metadata[key] = value
                links_of(metadata)
                reject_nul(json.dumps(metadata), "metadata")
            sets = "metadata = %s::jsonb, updated_at = %s"
            params: list[Any] = [json.dumps(metadata), now]
            if req.content is not None:
                stored = content_to_storage(mtype, req.content)
                reject_nul(stored, "content")
                if stored != row["content"]:
                    text = embed_text(mtype, stored)
                    vec = (await self._embed([text]))[0]
                    sets += (", content = %s, embedding = %s::vector, "
                             "tsv = to_tsvector('simple', %s)")
                    params += [stored, vector_literal(vec), text]
            if req.confidence is not None:
                sets += ", confidence = %s"
                params.append(req.confidence)
            cur = await conn.execute(
                f"UPDATE {TABLE} SET {sets} WHERE agent_id = %s AND id = %s "
                f"RETURNING {RECORD_COLS}",
                [*params, req.agent_id, req.id],
            )
            updated = await cur.fetchone()
        assert updated is not None
        return record_from_row(updated)

    # --- reads -------------------------------------------------------------------------------

    async def recall(self, req: RecallRequest) -> RecallResponse:
        started = time.perf_counter()
        qvec = vector_literal((await self._embed([req.query]))[0])
        now = self._clock.now_ms()
        w = scope_where(
            agent_id=req.agent_id, user_id=req.user_id, now_ms=now,
            types=[t.value for t in req.types] if req.types is not None else None,
            metadata_filter=req.filter,
            created_after=(now - req.fresher_than_days * DAY_MS
                           if req.fresher_than_days is not None else None),
        )
        pool = candidate_pool(req.k)
        hits: list[RecallHit] = []
        async with self._tx() as conn:
            vector = await self._vector_candidates(conn, req.agent_id, w, qvec, pool)
            tsq = tsquery_text(query_terms(req.query))
            lexical: list[dict[str, Any]] = []
            if tsq is not None:
                cur = await conn.execute(
                    f"SELECT id, 1 - (embedding <=> %s::vector) AS cos, score_factor FROM {TABLE} "
                    f"WHERE {w.sql()} AND tsv @@ to_tsquery('simple', %s) "
                    "ORDER BY ts_rank_cd(tsv, to_tsquery('simple', %s)) DESC, created_at, id "
                    "LIMIT %s",
                    [qvec, *w.params, tsq, tsq, pool],
                )
                lexical = await cur.fetchall()
            cosines = {r["id"]: float(r["cos"]) for r in (*vector, *lexical)}
            factors = {r["id"]: float(r["score_factor"]) for r in (*vector, *lexical)
                       if r["score_factor"] != 1.0}
            ranked = hybrid_rank(
                cosines, [r["id"] for r in vector], [r["id"] for r in lexical], k=req.k,
                floor=self._floor, lexical_floor=self._lexical_floor, factors=factors,
            )
            if ranked:
                cur = await conn.execute(
                    f"UPDATE {TABLE} SET last_recalled_at = %s, recall_count = recall_count + 1 "
                    f"WHERE agent_id = %s AND id = ANY(%s) RETURNING {RECORD_COLS}",
                    (now, req.agent_id, [s.id for s in ranked]),
                )
                rows = {r["id"]: r for r in await cur.fetchall()}
                for s in ranked:
                    row = rows[s.id]
                    mtype = MemoryType(row["type"])
                    hits.append(RecallHit(
                        id=row["id"], type=mtype,
                        content=content_from_storage(mtype, row["content"]), score=s.score,
                        metadata=dict(row["metadata"] or {}), created_at=row["created_at"],
                        supporting=[], source_store=self._name, user_id=row["user_id"],
                        source=row["source"], confidence=row["confidence"],
                    ))
        return RecallResponse(
            results=hits, fusion_used=Fusion.RRF, stores_queried=[self._name],
            latency_ms=int((time.perf_counter() - started) * 1000),
        )

    async def _vector_candidates(
        self, conn: Conn, agent_id: str, w: Where, qvec: str, pool: int
    ) -> list[dict[str, Any]]:
        cur = await conn.execute(
            "SELECT rows, (SELECT coalesce(sum(rows), 0) FROM memorywire_agent_counts) AS total "
            "FROM memorywire_agent_counts WHERE agent_id = %s",
            (agent_id,),
        )
        counts = await cur.fetchone()
        scope = int(counts["rows"]) if counts else 0
        if scope == 0:
            return []
        if scope > self._exact_limit:
            # The agent owns ``share`` of the table, so a global candidate list of
            # ``pool / share`` holds about ``pool`` of its rows; 4x margin, capped.
            share = scope / max(int(counts["total"]) if counts else scope, 1)
            ef = int(min(1000, max(pool * 4 / share, 100)))
            await conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
            cur = await conn.execute(
                f"SELECT id, 1 - (embedding <=> %s::vector) AS cos, score_factor FROM {TABLE} "
                f"WHERE {w.sql()} ORDER BY embedding <=> %s::vector LIMIT %s",
                [qvec, *w.params, qvec, pool],
            )
            approx = await cur.fetchall()
            if len(approx) >= pool:
                return approx
        # ``1 - distance DESC`` is not an ordering the HNSW index can serve, so this is an
        # exact scan of the scope through the (agent_id, user_id) index.
        cur = await conn.execute(
            f"SELECT id, 1 - (embedding <=> %s::vector) AS cos, score_factor FROM {TABLE} "
            f"WHERE {w.sql()} ORDER BY cos DESC, created_at, id LIMIT %s",
            [qvec, *w.params, pool],
        )
        return await cur.fetchall()

    async def nearest(
        self, agent_id: str, query: str, k: int, user_id: str | None = None
    ) -> list[tuple[str, float]]:
        """The scoped vector list alone: ``(id, cosine)``, best first (benchmarks, audits)."""
        qvec = vector_literal((await self._embed([query]))[0])
        w = scope_where(agent_id=agent_id, user_id=user_id, now_ms=self._clock.now_ms())
        async with self._tx() as conn:
            rows = await self._vector_candidates(conn, agent_id, w, qvec, k)
        return [(r["id"], float(r["cos"])) for r in rows]

    async def get(self, agent_id: str, id: str, user_id: str | None = None) -> MemoryRecord | None:
        now = self._clock.now_ms()
        w = scope_where(agent_id=agent_id, user_id=user_id, now_ms=now)
        async with self._tx() as conn:
            cur = await conn.execute(
                f"SELECT {RECORD_COLS} FROM {TABLE} WHERE {w.sql()} AND id = %s", [*w.params, id]
            )
            row = await cur.fetchone()
        return record_from_row(row) if row else None

    async def list(self, query: ListQuery) -> list[MemoryRecord]:
        now = self._clock.now_ms()
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
        async with self._tx() as conn:
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

    async def neighbours(
        self, agent_id: str, ids: Sequence[str], hops: int, user_id: str | None = None
    ) -> dict[str, dict[str, int]]:
        """Live memories within ``hops`` links of each id, with their hop distance."""
        now = self._clock.now_ms()
        w = scope_where(agent_id=agent_id, user_id=user_id, now_ms=now)
        async with self._tx() as conn:
            cur = await conn.execute(
                f"SELECT id, metadata -> 'links' AS links FROM {TABLE} WHERE {w.sql()}", w.params
            )
            rows = await cur.fetchall()
        live = {r["id"] for r in rows}
        adjacency = {
            r["id"]: [x for x in (r["links"] or []) if isinstance(x, str) and x in live]
            for r in rows
        }
        return shortest_hops(adjacency, [i for i in ids if i in live], hops)

    async def raw_contains(self, needle: str) -> bool:
        """Whether any memorywire table still holds ``needle`` in any column (hard-delete audit)."""
        async with self._tx() as conn:
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

    async def health(self) -> Health:
        try:
            async with self._tx() as conn:
                cur = await conn.execute(
                    "SELECT (SELECT max(version) FROM memorywire_schema_version) AS version, "
                    "(SELECT coalesce(sum(rows), 0) FROM memorywire_agent_counts) AS rows"
                )
                row = await cur.fetchone()
        except MemorywireError as exc:
            return Health("down", {"error": exc.message, "code": exc.code})
        assert row is not None
        stats = self._pool.get_stats()
        return Health("ok", {
            "schema_version": row["version"], "rows": int(row["rows"]),
            "pool_size": stats.get("pool_size", 0),
            "pool_available": stats.get("pool_available", 0),
        })

    async def aclose(self) -> None:
        await self._pool.close()
