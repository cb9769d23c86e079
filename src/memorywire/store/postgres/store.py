"""``PostgresStore``: wire v0 on PostgreSQL with pgvector (HNSW) and full-text search.

Every operation is one transaction on a pooled connection; driver errors are translated in
:meth:`~memorywire.store.postgres.db.PgDb.tx` only. Ranking, merge planning and expiry
matching are the shared pure rules of :mod:`memorywire.core` and :mod:`memorywire.recall`, so
the package only translates them to SQL: ``writes`` (remember), ``maintenance`` (forget,
merge, expire, update), this module (reads).

Scoped k-NN is exact. pgvector 0.6 has no iterative index scans: an HNSW scan with a
``WHERE agent_id = ...`` filter returns at most ``ef_search`` global candidates and filters
them afterwards, which loses in-scope neighbours (measured: docs/conformance.md). So a
scope of up to ``exact_scope_limit`` rows (the per-agent row count lives in
``memorywire_agent_counts``) is searched exactly through the ``(agent_id, user_id)`` index —
the ``ORDER BY`` is written so the HNSW index cannot serve it. Only an agent larger than that
uses HNSW, with ``ef_search`` scaled by how much of the table the agent owns (before
pgvector 0.8; :mod:`memorywire.store.postgres.knn`), and the answer is verified: if the
index could not fill the candidate pool, the exact search runs instead.
``benchmarks/scale_pg.py`` measures both paths; ``docs/conformance.md`` records the choice.
From pgvector 0.8 the HNSW path scans iteratively until its ``LIMIT`` is met
(:mod:`memorywire.store.postgres.hnsw`); reads go to hot standbys when the URL names them
(:mod:`memorywire.store.postgres.replica`).
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

from memorywire.core.clock import DAY_MS, Clock, SystemClock
from memorywire.core.content import (
    content_from_storage,
    content_to_storage,
    embed_text,
    fold_request,
)
from memorywire.core.entity_gate import EVIDENCE_DEPTH, named_words
from memorywire.core.records import ListQuery, Row, UpdateRequest
from memorywire.core.scoring import candidate_pool, hybrid_rank_arrays
from memorywire.core.textsearch import query_terms
from memorywire.embed.base import Embedder, Vectors
from memorywire.errors import BackendUnavailable, MemorywireError
from memorywire.recall.plan import recall_in_time
from memorywire.recall.settings import PORTABLE_RECALL, RecallSettings
from memorywire.store.base import STORAGE_CAPABILITIES, Capability, Health
from memorywire.store.cascade import expand_cascade
from memorywire.store.graph import graph_recall
from memorywire.store.portable import ALL_FIELDS, BulkState, Cursor, ImportCounts, OnConflict
from memorywire.store.postgres import (
    bulk,
    conflicts,
    evidence,
    knn,
    maintenance,
    portable,
    purge,
    reads,
    subject,
    writes,
)
from memorywire.store.postgres.db import Conn, PgDb
from memorywire.store.postgres.lexical import lexical_leg
from memorywire.store.postgres.replica import ReadRouter, split_replicas, standby_db
from memorywire.store.postgres.sql import (
    RECORD_COLS,
    TABLE,
    PgVector,
    Where,
    record_from_row,
    scope_where,
)
from memorywire.store.postgres.url import PG_ALIASES, is_libpq_key
from memorywire.store.timeline import Found, Probe, remember_in_time
from memorywire.store.url_settings import (
    check_range,
    constructor_keywords,
    constructor_settings,
    refusing_bad_values,
    split_query,
    typed_settings,
)
from memorywire.wire.models import (
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
)

__all__ = ["PostgresStore"]

_T = TypeVar("_T")


class PostgresStore:
    """A pooled PostgreSQL + pgvector store; cheap to build, connects on first use.

    ``recall`` holds the ranking settings (:class:`~memorywire.recall.RecallSettings`;
    ``None`` is :attr:`DEFAULT_RECALL`): the same rules as SqliteStore on the same pool texts,
    so the same re-ranking of that pool. Its search has no feedback round, and the fusion
    weighs its full-text list only by how informative its words are in the scope (the shared
    rule, ``postgres/lexical.py``), never by a setting: ``feedback_weight`` and
    ``lexical_weight`` are refused unless neutral."""

    #: Parallel workers for the HNSW build at the end of a bulk load (``None``: the server's
    #: ``max_parallel_maintenance_workers``, 2 by default).
    bulk_index_workers: int | None = None
    #: The recall settings a store built without ``recall`` runs with.
    DEFAULT_RECALL: ClassVar[RecallSettings] = PORTABLE_RECALL
    #: Settings this store's search does not have (refused unless neutral).
    RECALL_UNSUPPORTED: ClassVar[frozenset[str]] = frozenset({"lexical_weight",
                                                              "feedback_weight"})

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
        recall: RecallSettings | None = None,
    ) -> None:
        check_range("min_size", min_size, 0, 10_000)
        check_range("max_size", max_size, max(1, min_size), 10_000)
        check_range("timeout", timeout, 0.001, 86_400)
        check_range("exact_scope_limit", exact_scope_limit, 0, 2**31 - 1)
        self._name = name
        self._recall = (recall or self.DEFAULT_RECALL).refuse_unless_neutral(
            self.RECALL_UNSUPPORTED, "PostgresStore")
        self._exact_limit = exact_scope_limit
        self._db = PgDb(conninfo, embedder, clock or SystemClock(), name,
                        min_size=min_size, max_size=max_size, timeout=timeout)
        #: Where reads go: the primary, or standbys named on the URL (``replica.py``).
        self._reads = ReadRouter(self._db)

    @classmethod
    def from_url(cls, url: str, **kw: Any) -> PostgresStore:
        """``postgresql://user:pass@host/db?pool_max=8&exact_scope_limit=50000``.

        The constructor's settings are query keys (``pool_min``, ``pool_max`` and
        ``pool_timeout`` for ``min_size``, ``max_size`` and ``timeout``;
        :mod:`memorywire.store.url_settings`); libpq's connection parameters (``host``,
        ``sslmode``, ...) pass on to libpq; any other key is refused naming it.
        ``replicas=host:port,...`` (and ``replica_wait_ms``) sends reads to hot standbys
        (:mod:`memorywire.store.postgres.replica`).
        """
        url, standbys, wait_s = split_replicas(url)
        parts = urlsplit(url)
        scheme = parts.scheme.split("+", 1)[0]
        settings = constructor_settings(cls, PG_ALIASES)
        raw = split_query("postgresql", parts.query, settings, passthrough=is_libpq_key)
        rest = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                if k not in settings]
        args = constructor_keywords(cls, "postgresql",
                                    typed_settings("postgresql", raw, settings), kw)
        conninfo = urlunsplit((scheme, parts.netloc, parts.path, urlencode(rest), ""))
        with refusing_bad_values("postgresql", args.keys() - kw.keys()):
            store = cls(conninfo, **args)
        if standbys is not None:
            store._reads = ReadRouter(store._db, standby_db(
                store._db, standbys, max_size=store._db.pool.max_size,
                timeout=store._db.pool.timeout), wait_s)
        return store

    @property
    def name(self) -> str:
        return self._name

    @property
    def recall_settings(self) -> RecallSettings:
        """The ranking settings this store runs with."""
        return self._recall

    @property
    def capabilities(self) -> frozenset[Capability]:
        return STORAGE_CAPABILITIES

    @property
    def embedder(self) -> Embedder:
        return self._db.embedder

    # --- writes (writes.py, maintenance.py) --------------------------------------------------

    async def remember(self, req: RememberRequest) -> RememberResponse:
        return (await self.remember_many([req]))[0]

    async def remember_many(self, reqs: Sequence[RememberRequest]) -> list[RememberResponse]:
        """Several remembers in one transaction: all are stored, or none (the close of the
        memories they supersede follows, one update each)."""
        embedded: list[Vectors] = []  # the conflict scan's vectors, reused by the write

        async def embed(plain: Sequence[RememberRequest]) -> Vectors:
            embedded.append(await self.embed_requests(plain))
            return embedded[-1]

        async def write(plain: Sequence[RememberRequest]) -> list[RememberResponse]:
            return await writes.remember_many(self._db, plain,
                                              embedded[-1] if embedded else None)

        out = await remember_in_time(self, reqs, write, embed=embed)
        await self._reads.wrote()
        return out

    async def conflict_candidates(self, probes: Sequence[Probe]) -> list[Found]:
        """A write's conflict candidates through the HNSW and full-text indexes
        (:mod:`memorywire.store.postgres.conflicts`;
        :class:`~memorywire.store.timeline.ConflictIndex`)."""
        return await conflicts.conflict_candidates(self._db, probes)

    async def embed_requests(self, reqs: Sequence[RememberRequest]) -> Vectors:
        """The vectors a remember of ``reqs`` stores, computed before the write for the
        conflict scan (``remember_many`` hands them on to the write)."""
        folded = [fold_request(r) for r in reqs]
        vectors: Vectors = await self._db.embed(
            [embed_text(r.type, content_to_storage(r.type, r.content)) for r in folded])
        return vectors

    async def forget(self, req: ForgetRequest) -> ForgetResponse:
        req = await expand_cascade(self, req)
        return await self._wrote(await maintenance.forget(self._db, req))

    async def merge(self, req: MergeRequest) -> MergeResponse:
        return await self._wrote(await maintenance.merge(self._db, req))

    async def expire(self, req: ExpireRequest) -> ExpireResponse:
        return await self._wrote(await maintenance.expire(self._db, req))

    async def update(self, req: UpdateRequest) -> MemoryRecord:
        return await self._wrote(await maintenance.update(self._db, req))

    async def purge_expired(self, before_ms: int, limit: int = 500) -> builtins.list[MemoryRecord]:
        """Erase up to ``limit`` memories expired at or before ``before_ms`` (the sweep's)."""
        return await self._wrote(await purge.purge_expired(self._db, before_ms, limit))

    async def merged_into(self, agent_id: str, id: str, user_id: str | None = None) -> str | None:
        """The id that absorbed memory ``id`` in a merge, or ``None``."""
        return await maintenance.merged_into(self._db, agent_id, id, user_id)

    async def _wrote(self, result: _T) -> _T:
        """``result`` of a write, once its WAL position is noted for read-your-writes."""
        await self._reads.wrote()
        return result

    # --- portability (portable.py) ------------------------------------------------------------

    @property
    def kept_fields(self) -> frozenset[str]:
        """Every row field is a column, so every field is kept."""
        return frozenset(ALL_FIELDS)

    async def export_rows(self, agent_id: str | None, after: Cursor | None,
                          limit: int) -> list[Row]:
        return await portable.export_rows(self._db, agent_id, after, limit)

    async def import_rows(self, rows: Sequence[Row], on_conflict: OnConflict,
                          vectors: Sequence[Any] | None = None) -> ImportCounts:
        return await self._wrote(await portable.import_rows(self._db, rows, on_conflict,
                                                           vectors))

    async def vectors_of(self, rows: Sequence[Row]) -> list[Any]:
        return await portable.vectors_of(self._db, rows)

    async def bulk_begin(self, job: str) -> BulkState | None:
        return await bulk.begin(self._db, job)

    async def bulk_load(self, job: str, rows: Sequence[Row], vectors: Sequence[Any] | None,
                        cursor: Cursor, on_conflict: OnConflict = OnConflict.FAIL
                        ) -> ImportCounts:
        return await self._wrote(await bulk.load(self._db, job, rows, vectors, cursor,
                                                 on_conflict))

    async def bulk_finish(self, job: str) -> dict[str, Any]:
        """Build the HNSW index (``bulk_index_workers`` parallel workers)."""
        built = await bulk.finish(self._db, job, parallel_workers=self.bulk_index_workers)
        return built.to_json()

    # --- reads -------------------------------------------------------------------------------

    async def recall(self, req: RecallRequest) -> RecallResponse:
        if req.hops:
            return await graph_recall(self, req, self.recall)
        now = self._db.clock.now_ms()
        resp = await recall_in_time(req, self._search, now, settings=self._recall)
        # Counted here, for the hits returned: a re-ranker's deeper pool (and the first
        # search it replaces) must not count what it passed over, nor count a hit twice.
        if resp.results:
            try:
                async with self._db.single() as conn:  # one statement: atomic alone
                    await conn.execute(
                        f"UPDATE {TABLE} SET last_recalled_at = %s, "
                        "recall_count = recall_count + 1 WHERE agent_id = %s AND id = ANY(%s)",
                        (now, req.agent_id, [h.id for h in resp.results]))
            except BackendUnavailable:
                if self._reads.replica is None:
                    raise
                # a standby answered while the primary is down: the answer stands, its
                # statistics are not counted
        return resp

    async def _search(self, req: RecallRequest) -> RecallResponse:
        started = time.perf_counter()
        qvec = PgVector((await self._db.embed([req.query]))[0])
        now = self._db.clock.now_ms()
        w = scope_where(
            agent_id=req.agent_id, user_id=req.user_id, now_ms=now,
            types=[t.value for t in req.types] if req.types is not None else None,
            metadata_filter=req.filter, typed_where=req.where,
            created_after=(now - req.fresher_than_days * DAY_MS
                           if req.fresher_than_days is not None else None),
        )
        pool = candidate_pool(req.k)
        hits: list[RecallHit] = []
        settings = self._recall
        gates = (settings.entity_gate and req.min_relevance is None
                 and settings.relevance_floor > -1.0)
        async with self._reads.tx() as conn:
            words = query_terms(req.query)
            leg = await lexical_leg(conn, w, words)
            # The subject gate (core.subject_gate, postgres/subject.py); in a scope about the
            # subject both lists' cosines are the masked question's and the floors are off.
            run = await subject.subject_run(self._db, req.query, leg) if gates else None
            about = run is not None and run.masked is not None
            rank_vec = run.masked if run is not None and run.masked is not None else qvec
            vector = await self._vector_candidates(conn, req.agent_id, w, rank_vec, pool)
            lexical: list[dict[str, Any]] = []
            if leg.tsquery is not None:
                cur = await conn.execute(
                    f"SELECT id, 1 - (embedding <=> %s::vector) AS cos, score_factor FROM {TABLE} "
                    f"WHERE {w.sql()} AND tsv @@ to_tsquery('english', %s) "
                    "ORDER BY ts_rank_cd(tsv, to_tsquery('english', %s)) DESC, created_at, id "
                    "LIMIT %s",
                    [rank_vec, *w.params, leg.tsquery, leg.tsquery, pool],
                )
                lexical = await cur.fetchall()
            informed = leg.weight
            if run is not None and about and lexical:
                informed = await subject.agreeing_weight(conn, req.agent_id, run, words,
                                                         lexical[0]["id"], informed)
            # the candidates: both lists' rows, once each (score_factor is DEMOTE_FACTOR
            # for a demoted row, else 1.0)
            candidates = {r["id"]: r for r in (*vector, *lexical)}
            ids = list(candidates)
            slot = {mid: i for i, mid in enumerate(ids)}
            gated = gates and run is None and bool(named_words(req.query))
            ranked = hybrid_rank_arrays(
                np.array([float(r["cos"]) for r in candidates.values()], dtype=np.float64),
                ids, [slot[r["id"]] for r in vector], [slot[r["id"]] for r in lexical],
                k=max(req.k, EVIDENCE_DEPTH) if gated or run is not None else req.k,
                floor=-1.0 if about else settings.relevance_floor,
                lexical_floor=-1.0 if about else settings.lexical_floor,
                demoted=np.array([r["score_factor"] != 1.0 for r in candidates.values()],
                                 dtype=bool),
                min_relevance=req.min_relevance,
                tail_gap=None if about else settings.tail_gap,
                lexical_weight=settings.lexical_weight * informed,
            )
            if run is not None and ranked:
                ranked = await subject.judged(conn, self._db, req.agent_id, w, run, ranked)
            elif gated and ranked and not await evidence.answers(
                    conn, self._db, req.agent_id, req.query, [s.id for s in ranked]):
                ranked = []
            ranked = ranked[:req.k]
            if ranked:
                cur = await conn.execute(
                    f"SELECT {RECORD_COLS} FROM {TABLE} WHERE agent_id = %s AND id = ANY(%s)",
                    (req.agent_id, [s.id for s in ranked]),
                )
                rows = {r["id"]: r for r in await cur.fetchall()}
                for s in ranked:
                    row = rows[s.id]
                    mtype = MemoryType(row["type"])
                    hits.append(RecallHit(
                        id=row["id"], type=mtype,
                        content=content_from_storage(mtype, row["content"]), score=s.score,
                        relevance=round(s.relevance, 4),
                        metadata=dict(row["metadata"] or {}), created_at=row["created_at"],
                        supporting=[], source_store=self._name, user_id=row["user_id"],
                        source=row["source"], confidence=row["confidence"],
                    ))
        return RecallResponse(
            results=hits, fusion_used=Fusion.RRF, stores_queried=[self._name],
            latency_ms=int((time.perf_counter() - started) * 1000),
        )

    async def _vector_candidates(
        self, conn: Conn, agent_id: str, w: Where, qvec: PgVector, pool: int
    ) -> list[dict[str, Any]]:
        return await knn.vector_candidates(conn, agent_id, w, qvec, pool,
                                           exact_limit=self._exact_limit,
                                           pgvector=self._reads.pgvector())

    async def nearest(
        self, agent_id: str, query: str, k: int, user_id: str | None = None
    ) -> list[tuple[str, float]]:
        """The scoped vector list alone: ``(id, cosine)``, best first (benchmarks, audits)."""
        qvec = PgVector((await self._db.embed([query]))[0])
        w = scope_where(agent_id=agent_id, user_id=user_id, now_ms=self._db.clock.now_ms())
        async with self._reads.tx() as conn:
            rows = await self._vector_candidates(conn, agent_id, w, qvec, k)
        return [(r["id"], float(r["cos"])) for r in rows]

    async def get(self, agent_id: str, id: str, user_id: str | None = None) -> MemoryRecord | None:
        now = self._db.clock.now_ms()
        w = scope_where(agent_id=agent_id, user_id=user_id, now_ms=now)
        async with self._reads.tx(prefer_primary=True, single=True) as conn:
            cur = await conn.execute(
                f"SELECT {RECORD_COLS} FROM {TABLE} WHERE {w.sql()} AND id = %s", [*w.params, id]
            )
            row = await cur.fetchone()
        return record_from_row(row) if row else None

    async def list(self, query: ListQuery) -> list[MemoryRecord]:
        return await reads.list_records(self._reads, self._db.clock.now_ms(), query)

    async def neighbours(
        self, agent_id: str, ids: Sequence[str], hops: int, user_id: str | None = None
    ) -> dict[str, dict[str, int]]:
        """Live memories within ``hops`` links of each id, with their hop distance."""
        return await reads.neighbours(self._reads, self._db.clock.now_ms(), agent_id, ids,
                                      hops, user_id)

    async def raw_contains(self, needle: str) -> bool:
        """Whether any memorywire table still holds ``needle`` in any column (hard-delete audit)."""
        return await reads.raw_contains(self._db, needle)

    async def health(self) -> Health:
        try:
            async with self._db.tx() as conn:
                cur = await conn.execute(
                    "SELECT (SELECT max(version) FROM memorywire_schema_version) AS version, "
                    "(SELECT coalesce(sum(rows), 0) FROM memorywire_agent_counts) AS rows"
                )
                row = await cur.fetchone()
        except MemorywireError as exc:
            return Health("down", {"error": exc.message, "code": exc.code})
        assert row is not None
        stats = self._db.pool.get_stats()
        return Health("ok", {
            "schema_version": row["version"], "rows": int(row["rows"]),
            "pool_size": stats.get("pool_size", 0),
            "pool_available": stats.get("pool_available", 0),
        })

    async def aclose(self) -> None:
        await self._reads.close()
        await self._db.close()
