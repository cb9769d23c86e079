"""``SqliteStore``: the embedded default store (one SQLite file, FTS5, exact scoped k-NN).

Storage. One SQLite database (via apsw, with sqlite-vec loaded for SQL-side vector functions)
holds rows, float32 vectors (a BLOB per memory), a contentless FTS5 index with FTS5
``secure-delete``, graph links and recall statistics. WAL journal, ``synchronous=FULL`` (a
committed memory survives power loss; a commit costs one WAL fsync),
``secure_delete=ON`` (freed pages are zeroed; a hard delete also rewrites the full-text
index and truncates the WAL, so no byte or indexed word of the memory remains),
and a busy timeout so several processes can share the file. Every operation is one
``BEGIN IMMEDIATE`` transaction covering row, vector, full-text, links and recall stats; a
recall's transaction (whose only write is recall statistics) commits without the fsync.
File layout and migrations: :mod:`memorywire.store.sqlite.schema`.

Search (:mod:`memorywire.store.sqlite.search`). k-NN is exact and scoped: a per-agent float32
matrix cached in process (bounded by ``cache_mb``, least recently used agent out) is multiplied
by the query vector, rows outside the user/type/filter/freshness scope are masked out
*before* the top-k, so another agent's closer vectors can never crowd a result out. Each
write bumps the scope's version in the ``scopes`` table inside its transaction; a reader
compares versions inside its own transaction and reloads on any difference, which makes
writes by other processes visible at once. Full-text candidates come from FTS5 BM25,
restricted to the agent by a hashed scope token; the two lists are fused with RRF and gated
by the relevance floor (see :mod:`memorywire.core.scoring`).

Blocking work runs in a worker thread; one connection per store is guarded by a lock.

The package is composed, not inherited: :class:`SqliteStore` holds one
:class:`~memorywire.store.sqlite.db.SqliteDb` and hands it to the operation modules
(``writes``, ``maintenance``, ``search``, ``recall``), which run the rules of
:mod:`memorywire.core` and the ranking rules of :mod:`memorywire.recall`.
"""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from memorywire.core.clock import Clock, SystemClock
from memorywire.core.filters import matches_filter
from memorywire.core.records import ListQuery, Row, UpdateRequest
from memorywire.embed.base import Embedder, Vectors
from memorywire.errors import MemorywireError, NotFound
from memorywire.recall.plan import RecallPlan
from memorywire.recall.settings import RECOMMENDED_TAIL_GAP, RecallSettings
from memorywire.store._common import resolve_embedder, shortest_hops
from memorywire.store.base import STORAGE_CAPABILITIES, Capability, Health
from memorywire.store.bracket import take_bracket
from memorywire.store.cascade import expand_cascade
from memorywire.store.graph import graph_recall
from memorywire.store.portable import ALL_FIELDS, Cursor, ImportCounts, OnConflict
from memorywire.store.sqlite import conflicts, maintenance, portable, purge, writes
from memorywire.store.sqlite.contexts import metadata_of
from memorywire.store.sqlite.db import (
    COLS,
    IN_JSON,
    VISIBLE,
    SqliteDb,
    checked_vectors,
    record_of,
    scope_sql,
)
from memorywire.store.sqlite.feedback import FEEDBACK_WEIGHT
from memorywire.store.sqlite.recall import PlanRunner
from memorywire.store.sqlite.schema import SCHEMA_VERSION
from memorywire.store.sqlite.search import SQLITE_LEXICAL_FLOOR
from memorywire.store.sqlite.url import SQLITE_URI_HINTS, sqlite_path, sqlite_query
from memorywire.store.timeline import Found, Probe, remember_in_time
from memorywire.store.url_settings import check_range, refusing_bad_values, url_keywords
from memorywire.wire.models import (
    ExpireRequest,
    ExpireResponse,
    ForgetRequest,
    ForgetResponse,
    Fusion,
    MemoryRecord,
    MergeRequest,
    MergeResponse,
    RecallHit,
    RecallRequest,
    RecallResponse,
    RememberRequest,
    RememberResponse,
)

__all__ = ["SCHEMA_VERSION", "SqliteStore"]


class SqliteStore:
    """The embedded store. ``cache_mb`` bounds the in-process vector cache (least recently
    used agent out); the default holds ~600k memories of the 384-d default embedder.

    ``recall`` holds every ranking setting (:class:`~memorywire.recall.RecallSettings`; what
    each does is documented there); ``None`` is :attr:`DEFAULT_RECALL`. This store's search
    has every setting, and three defaults of its own: its full-text floor is calibrated
    (``SQLITE_LEXICAL_FLOOR``), its floors judge a recall's whole list (``tail_gap``
    ``RECOMMENDED_TAIL_GAP``, with the agreement rescue of ``core.scoring.hybrid_rank``: a
    long conversation's answering turns sit below a cosine floor fitted on short facts), and
    it runs a pseudo-relevance feedback round (``store.sqlite.feedback``)."""

    honours_write_bracket = True  # remember runs governance's bracket (store.bracket)
    #: The recall settings a store built without ``recall`` runs with; change one with
    #: ``dataclasses.replace(SqliteStore.DEFAULT_RECALL, turn_weight=0)``.
    DEFAULT_RECALL: ClassVar[RecallSettings] = RecallSettings(
        lexical_floor=SQLITE_LEXICAL_FLOOR, tail_gap=RECOMMENDED_TAIL_GAP,
        feedback_weight=FEEDBACK_WEIGHT)
    #: Settings this store's search does not have: none.
    RECALL_UNSUPPORTED: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self,
        path: str | Path,
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        name: str = "sqlite",
        *,
        recall: RecallSettings | None = None,
        busy_timeout_ms: int = 10_000,
        cache_mb: float = 1024,
        reads_need_file: bool = False,
    ) -> None:
        check_range("busy_timeout_ms", busy_timeout_ms, 0, 2**31 - 1)  # SQLite takes a C int
        check_range("cache_mb", cache_mb, 0, 2**20)
        self._embedder = resolve_embedder(embedder)
        self._clock: Clock = clock or SystemClock()
        self._name = name
        self._path = str(path)
        self._recall = recall or self.DEFAULT_RECALL
        self._db = SqliteDb(path, self._embedder, self._clock, name,
                            busy_timeout_ms=busy_timeout_ms, cache_mb=cache_mb,
                            reads_need_file=reads_need_file)
        #: The per-agent vector cache (benchmarks and tests read its counters).
        self._caches = self._db.caches
        self._runner = PlanRunner(self._db, self._embedder, name, self._recall)

    @classmethod
    def from_url(cls, url: str, **kw: Any) -> SqliteStore:
        """``sqlite:///relative.db``, ``sqlite:////absolute.db`` or ``sqlite://`` (memory);
        see :mod:`memorywire.store.sqlite.url`. Query keys are the constructor's settings
        (``?relevance_floor=-1&turn_weight=0``; :mod:`memorywire.store.url_settings`)."""
        args = url_keywords(cls, "sqlite", sqlite_query(url), kw, hints=SQLITE_URI_HINTS)
        with refusing_bad_values("sqlite", args.keys() - kw.keys()):
            return cls(sqlite_path(url), **args)

    @property
    def recall_settings(self) -> RecallSettings:
        """The ranking settings this store runs with."""
        return self._recall

    @property
    def name(self) -> str:
        return self._name

    @property
    def reads_need_file(self) -> bool:
        """Whether a read of a store file that does not exist yet is ``not_found`` naming the
        path (one-shot commands) instead of an empty answer; a read never creates the file."""
        return self._db.reads_need_file

    @reads_need_file.setter
    def reads_need_file(self, value: bool) -> None:
        self._db.reads_need_file = value

    @property
    def capabilities(self) -> frozenset[Capability]:
        return STORAGE_CAPABILITIES

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    # --- writes (writes.py, maintenance.py) --------------------------------------------------

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
            vectors = checked_vectors(vectors, len(reqs), self._embedder.dim)
        bracket = take_bracket()  # governance's intent/done, on the writing thread

        def embedded(plain: Sequence[RememberRequest]) -> Vectors:
            return vectors if vectors is not None else writes.embed_requests(self._db, plain)

        async def write(plain: Sequence[RememberRequest]) -> list[RememberResponse]:
            if bracket is None:
                return await self._db.call(lambda: writes.remember_many(self._db, plain, vectors))
            return await self._db.call_bracketed(bracket, lambda: embedded(plain), lambda given:
                                                 writes.remember_many(self._db, plain, given))

        async def scanning(plain: Sequence[RememberRequest],
                           scan: Callable[[Vectors], list[int]]
                           ) -> list[RememberResponse]:
            def prepare() -> tuple[list[int], Vectors]:
                # The new vectors first, so the search (which reads what was stored before
                # this write) compares meaning too; the write then reuses them, for the
                # requests the search keeps (the others repeat a stored memory).
                given = embedded(plain)
                return scan(given), given

            def write_kept(kept: tuple[list[int], Vectors]) -> list[RememberResponse]:
                keep, given = kept
                if len(keep) == len(plain):
                    return writes.remember_many(self._db, plain, given)
                return writes.remember_many(self._db, [plain[n] for n in keep], given[keep])

            return await self._db.call_bracketed(bracket, prepare, write_kept)

        return await remember_in_time(self, reqs, write, scanning=scanning)

    async def forget(self, req: ForgetRequest) -> ForgetResponse:
        req = await expand_cascade(self, req)
        return await self._db.call(lambda: maintenance.forget(self._db, req))

    async def merge(self, req: MergeRequest) -> MergeResponse:
        return await self._db.call(lambda: maintenance.merge(self._db, req))

    async def expire(self, req: ExpireRequest) -> ExpireResponse:
        return await self._db.call(lambda: maintenance.expire(self._db, req))

    async def update(self, req: UpdateRequest) -> MemoryRecord:
        return await self._db.call(lambda: maintenance.update(self._db, req))

    async def purge_expired(self, before_ms: int, limit: int = 500) -> builtins.list[MemoryRecord]:
        """Erase memories expired at or before ``before_ms``; what the expiry sweep calls."""
        return await self._db.call(lambda: purge.purge_expired(self._db, before_ms, limit))

    async def merged_into(self, agent_id: str, id: str, user_id: str | None = None) -> str | None:
        """The id that absorbed memory ``id`` in a merge, or ``None``."""
        return await self._db.call(
            lambda: maintenance.merged_into(self._db, agent_id, id, user_id))

    # --- portability (portable.py) ------------------------------------------------------------

    @property
    def kept_fields(self) -> frozenset[str]:
        """Every row field is a column (the merge edge a link), so every field is kept."""
        return frozenset(ALL_FIELDS)

    async def export_rows(self, agent_id: str | None, after: Cursor | None,
                          limit: int) -> builtins.list[Row]:
        return await self._db.call(lambda: portable.export_rows(self._db, agent_id, after, limit))

    async def import_rows(self, rows: Sequence[Row], on_conflict: OnConflict,
                          vectors: Sequence[Any] | None = None) -> ImportCounts:
        return await self._db.call(
            lambda: portable.import_rows(self._db, rows, on_conflict, vectors))

    async def vectors_of(self, rows: Sequence[Row]) -> builtins.list[Any]:
        return await self._db.call(lambda: portable.vectors_of(self._db, rows))

    # --- reads -------------------------------------------------------------------------------

    async def recall(self, req: RecallRequest) -> RecallResponse:
        if req.hops:
            return await graph_recall(self, req, self.recall)
        return await self._planned_recall(req, None)

    async def recall_by_vector(
        self, req: RecallRequest, vector: npt.NDArray[np.float32]
    ) -> RecallResponse:
        """Recall with a query vector the caller already has (from this store's embedder).

        A router fanning one query out to several stores, or a benchmark separating model
        time from search time, embeds once; ``req.query`` still drives the full-text list.
        """
        qvec = checked_vectors(np.asarray(vector, dtype=np.float32).reshape(1, -1), 1,
                                self._embedder.dim)[0]
        return await self._planned_recall(req, qvec)

    async def _planned_recall(self, req: RecallRequest,
                              qvec: npt.NDArray[np.float32] | None) -> RecallResponse:
        """``store.timeline``'s recall, its :class:`RecallPlan` run whole in one
        worker-thread call and one transaction (:mod:`memorywire.store.sqlite.recall`)."""
        started = time.perf_counter()
        plan = RecallPlan(req, self._clock.now_ms(), self._recall)

        def run() -> list[RecallHit]:
            vec = self._embedder.embed([req.query])[0] if qvec is None else qvec
            return self._runner.run(plan, vec)

        hits = await (self._db.call(run) if qvec is None else
                      self._db.call_read(req.agent_id, run))
        return RecallResponse(results=hits, fusion_used=Fusion.RRF, stores_queried=[self._name],
                              latency_ms=int((time.perf_counter() - started) * 1000))

    async def get(self, agent_id: str, id: str, user_id: str | None = None) -> MemoryRecord | None:
        return await self._db.call(lambda: self.get_now(agent_id, id, user_id))

    def get_now(self, agent_id: str, id: str,
                user_id: str | None = None) -> MemoryRecord | None:
        """:meth:`get`, blocking, for a write's own worker-thread call (the duplicate check
        of :class:`~memorywire.store.timeline.ConflictIndexNow`)."""
        if self._db.missing():
            return None
        where, args = scope_sql(agent_id, user_id)
        with self._db.tx() as conn:
            row = conn.execute(
                f"SELECT {COLS} FROM memories WHERE {where} AND id = ? AND {VISIBLE}",
                [*args, id, self._clock.now_ms()],
            ).fetchone()
        return None if row is None else record_of(row)

    async def list(self, query: ListQuery) -> list[MemoryRecord]:
        return await self._db.call(lambda: self._list(query))

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
            clauses.append(f"type IN {IN_JSON}")
            args.append(json.dumps([t.value for t in query.types]))
        out: builtins.list[MemoryRecord] = []
        if self._db.missing():
            return out
        with self._db.tx() as conn:
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
            sql = f"SELECT {COLS} FROM memories WHERE {' AND '.join(clauses)} " \
                  "ORDER BY created_at, id"
            for row in conn.execute(sql, args):
                if query.filter and not matches_filter(metadata_of(row[5], row[13]),
                                                       query.filter):
                    continue
                out.append(record_of(row))
                if len(out) >= query.limit:
                    break
        return out

    def conflict_candidates_now(self, probes: Sequence[Probe]) -> builtins.list[Found]:
        """A write's conflict candidates from the scope's nearest vectors and the full-text
        index (:mod:`memorywire.store.sqlite.conflicts`), blocking, so a remember runs it in
        its own worker-thread call (:class:`~memorywire.store.timeline.ConflictIndexNow`)."""
        try:
            return conflicts.conflict_candidates(self._db, probes)
        except NotFound:  # a one-shot command's first write: nothing stored to contradict
            return [[] for _ in probes]

    async def conflict_candidates(self, probes: Sequence[Probe]) -> builtins.list[Found]:
        return await self._db.call(lambda: self.conflict_candidates_now(probes))

    async def embed_requests(self, reqs: Sequence[RememberRequest]) -> Vectors:
        """The vectors a remember of ``reqs`` would store (a policy's look before the write;
        the embedder's cache serves the write itself)."""
        return await self._db.call(lambda: writes.embed_requests(self._db, reqs))

    async def neighbours(
        self, agent_id: str, ids: Sequence[str], hops: int, user_id: str | None = None
    ) -> dict[str, dict[str, int]]:
        """Live memories within ``hops`` links of each id, with their hop distance."""

        def run() -> dict[str, dict[str, int]]:
            if self._db.missing():
                return {}
            where, args = scope_sql(agent_id, user_id)
            with self._db.tx() as conn:
                edges = conn.execute("SELECT src, dst FROM links WHERE agent_id = ? AND "
                                     "kind = 'link'", (agent_id,)).fetchall()
                nodes = {n for e in edges for n in e} | set(ids)
                live = {
                    r[0] for r in conn.execute(
                        f"SELECT id FROM memories WHERE {where} AND {VISIBLE} AND id IN "
                        f"{IN_JSON}", [*args, self._clock.now_ms(), json.dumps(sorted(nodes))])
                }
            adjacency: dict[str, builtins.list[str]] = {}
            for s, d in edges:
                if s in live and d in live:
                    adjacency.setdefault(s, []).append(d)
            return shortest_hops(adjacency, [i for i in ids if i in live], hops)

        return await self._db.call(run)

    async def health(self) -> Health:
        def run() -> Health:
            if self._db.unborn:
                return Health("ok", {"path": self._path, "memories": 0, "created": False,
                                     "embedder": self._embedder.name})
            with self._db.tx() as conn:
                count = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
            return Health("ok", {"path": self._path, "memories": int(count),
                                 "embedder": self._embedder.name})

        try:
            return await self._db.call(run)
        except MemorywireError as exc:
            return Health("down", {"path": self._path, "error": exc.message})

    async def aclose(self) -> None:
        await self._db.close()
