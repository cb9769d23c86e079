"""``Mem0Store``: wire v0 over an in-process mem0 ``Memory`` (``pip install memorywire[mem0]``).

mem0 runs here without any LLM: every write passes ``infer=False``, so the text is stored as
given and only embedded. A store built by this module uses *our* embedder (wrapped for
mem0), a local Qdrant (``:memory:`` or a folder) and an in-memory history database; the LLM
block mem0 insists on carries a dummy key and a loopback URL that is never called.

Importing mem0 starts telemetry (a network thread, and an extra Qdrant folder it locks) and
writes ``config.json`` into ``MEM0_DIR`` (default ``~/.mem0``). Before the lazy import this
module therefore sets ``MEM0_TELEMETRY=False`` and ``MEM0_DIR=<tmp>/memorywire-mem0-<uid>``
with ``os.environ.setdefault``: a value the process already chose wins, and a process that
imported mem0 before us keeps whatever it got.

Mapping. mem0 picks its own UUIDs, so our id, our exact scope and every v0 field travel in
the payload under ``mw_*`` keys (user metadata losslessly under ``mw_meta``); mem0's
``agent_id``/``user_id`` hold the caller's ids where mem0 accepts them (no whitespace),
otherwise a hash token. mem0 treats a filter value ``"*"`` as "anything", and its
``get``/``update``/``delete`` take a bare UUID with no scope, so the adapter filters on
hashed scope keys, resolves every id through the caller's scope first, and re-checks each
row it reads before use. Soft delete and archive are payload states hidden at query time;
hard delete calls mem0's ``delete`` and scrubs mem0's history rows of that memory.

Search and ranking are mem0's (exact inside the filtered scope on local Qdrant). Admission
follows the built-in stores' rule: a hit needs a cosine at the relevance floor, or at the
lower lexical floor when it shares a content word with the query (mem0's ``threshold`` gates
the cosine at the lower of the two; the word check is done here). Metadata filters are
pushed down where Qdrant's match is a superset of JSON equality (string values) and always
re-checked here, fetching deeper until the answer is exact. mem0 does not track recalls,
does no graph and (without its optional BM25 extra) no full-text search, so those
capabilities are not declared and ``no_recall_in_days`` raises ``CapabilityMissing``.

Every mem0 call runs in a worker thread under one lock (the local Qdrant client is not
thread-safe), and mem0's exceptions are translated in :meth:`Mem0Store._call` only. A local
Qdrant folder is locked by the process that opened it: one process per ``path``.
"""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio.to_thread

from memorywire.core.clock import DAY_MS, Clock, SystemClock
from memorywire.core.content import embed_text
from memorywire.core.fields import matches_where
from memorywire.core.filters import matches_filter
from memorywire.core.records import Row
from memorywire.core.relevance import relevance
from memorywire.core.scoring import DEMOTE_FACTOR, candidate_pool
from memorywire.core.textsearch import query_terms
from memorywire.embed.base import Embedder
from memorywire.errors import (
    BackendUnavailable,
    InvalidRequest,
    MemorywireError,
)
from memorywire.recall.plan import recall_in_time
from memorywire.recall.settings import DEFAULT_LEXICAL_FLOOR, DEFAULT_RELEVANCE_FLOOR
from memorywire.store._common import resolve_embedder
from memorywire.store.base import Capability, Health
from memorywire.store.graph import refuse_hops
from memorywire.store.mem0.backend import Mem0Backend
from memorywire.store.mem0.mapping import (
    LIVE,
    PUSHDOWN_KEY,
    SCAN_PAGE,
    EmbedderForMem0,
    Mem0Row,
    import_mem0,
    iso,
    mem0_entity,
    payload_of,
    row_from_item,
    scope_key,
)
from memorywire.store.portable import ALL_FIELDS
from memorywire.store.rowstore import RowDelegate, RowOps, row_hit
from memorywire.store.url_settings import split_query
from memorywire.wire.models import (
    Fusion,
    MemoryRecord,
    RecallHit,
    RecallRequest,
    RecallResponse,
)

__all__ = ["Mem0Store"]

_T = TypeVar("_T")

_CAPABILITIES = frozenset(
    {
        Capability.SEMANTIC,
        Capability.EPISODIC,
        Capability.PROCEDURAL,
        Capability.EMOTIONAL,
        Capability.VECTOR,
        Capability.ERASE,
        Capability.TIME,
        Capability.DERIVATION,
        Capability.PURGE,
    }
)


class Mem0Store(RowDelegate[Mem0Row]):
    def __init__(
        self,
        memory: Any | None = None,
        *,
        embedder: Embedder | None = None,
        name: str = "mem0",
        clock: Clock | None = None,
        relevance_floor: float = DEFAULT_RELEVANCE_FLOOR,
        lexical_floor: float = DEFAULT_LEXICAL_FLOOR,
        path: str | None = None,
        collection: str = "memorywire",
    ) -> None:
        """Wrap ``memory`` (a ready ``mem0.Memory``, left open on :meth:`aclose`) or build one.

        With ``embedder`` given, mem0 embeds through it; a built store always does (the
        default embedder when none is given). ``path`` is the local Qdrant folder of a built
        store (``None`` keeps everything in memory).
        """
        self._name = name
        self._clock: Clock = clock or SystemClock()
        self._floor = relevance_floor
        self._lexical_floor = lexical_floor
        self._lock = threading.Lock()
        self._owned = memory is None
        if memory is None:
            emb = resolve_embedder(embedder)
            memory = self._call_sync(lambda: self._build(emb, path, collection))
            memory.embedding_model = EmbedderForMem0(emb)
        elif embedder is not None:
            memory.embedding_model = EmbedderForMem0(embedder)
        self._memory: Any | None = memory
        self._ops: RowOps[Mem0Row] = RowOps(Mem0Backend(self), name=name, clock=self._clock,
                                         recall_tracking=False)

    @staticmethod
    def _build(embedder: Embedder, path: str | None, collection: str) -> Any:
        mem0 = import_mem0()
        unused = {"api_key": "unused-no-llm", "openai_base_url": "http://127.0.0.1:9/v1"}
        return mem0.Memory.from_config({
            "vector_store": {"provider": "qdrant", "config": {
                "collection_name": collection, "path": path or ":memory:",
                "embedding_model_dims": embedder.dim, "on_disk": path is not None,
            }},
            "history_db_path": ":memory:",
            "llm": {"provider": "openai", "config": dict(unused)},
            # Replaced by our embedder right after construction; never called.
            "embedder": {"provider": "openai",
                         "config": {**unused, "embedding_dims": embedder.dim}},
        })

    @classmethod
    def from_url(cls, url: str, **kw: Any) -> Mem0Store:
        """``mem0://`` (in memory) or ``mem0://?path=/dir&collection=name`` (local Qdrant)."""
        parts = urlsplit(url)
        if parts.scheme.lower() != "mem0":
            raise InvalidRequest(f"not a mem0 URL: {url!r}")
        query = split_query("mem0", parts.query, ("path", "collection"))
        if "path" in query:
            kw.setdefault("path", query["path"] or None)
        if "collection" in query:
            kw.setdefault("collection", query["collection"])
        return cls(**kw)

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> frozenset[Capability]:
        return _CAPABILITIES

    @property
    def memory(self) -> Any:
        """The wrapped ``mem0.Memory`` (its API is unscoped: keep it away from callers)."""
        return self._live()

    # --- the one translation point ---------------------------------------------------------

    def _call_sync(self, fn: Callable[[], _T]) -> _T:
        with self._lock:
            try:
                return fn()
            except MemorywireError:
                raise
            except Exception as exc:
                raise self._translate(exc) from exc

    async def _call(self, fn: Callable[[], _T]) -> _T:
        return await anyio.to_thread.run_sync(self._call_sync, fn)

    def _translate(self, exc: Exception) -> MemorywireError:
        mem0 = import_mem0()
        what = f"mem0 store {self._name!r}: {type(exc).__name__}: {exc}"
        if isinstance(exc, mem0.exceptions.ValidationError | ValueError):
            return InvalidRequest(what)
        # mem0's own errors, Qdrant's, SQLite's, OS errors: the backend failed us.
        return BackendUnavailable(what)

    def _live(self) -> Any:
        if self._memory is None:
            raise BackendUnavailable(f"store {self._name!r} is closed")
        return self._memory

    # --- scoped reads over mem0 ------------------------------------------------------------

    @staticmethod
    def _filters(agent_id: str | None, user_id: str | None) -> dict[str, Any]:
        # mem0 insists on an entity key; "*" is its documented match-anything value.
        flt: dict[str, Any] = {"agent_id": "*" if agent_id is None else mem0_entity(agent_id)}
        if agent_id is not None:
            flt["mw_scope"] = scope_key(agent_id)
        if user_id is not None:
            flt["mw_user_scope"] = scope_key(user_id)
        return flt

    @staticmethod
    def _pushdown(flt: dict[str, Any] | None) -> dict[str, Any]:
        """Metadata keys Qdrant can pre-select on; its match is a superset of JSON equality."""
        return {
            f"mw_meta.{k}": v for k, v in (flt or {}).items()
            if isinstance(v, str) and v != "*" and PUSHDOWN_KEY.fullmatch(k)
        }

    def _scan(self, filters: dict[str, Any]) -> builtins.list[Mem0Row]:
        memory = self._live()
        page = SCAN_PAGE
        while True:
            got = memory.get_all(filters=filters, top_k=page, show_expired=True)["results"]
            if len(got) < page:
                return [row_from_item(item) for item in got]
            page *= 4

    def _rows(self, agent_id: str | None, user_id: str | None,
              extra: dict[str, Any] | None = None) -> builtins.list[Mem0Row]:
        """Every row in scope, whatever its state, oldest first, scope re-checked."""
        rows = self._scan({**self._filters(agent_id, user_id), **(extra or {})})
        rows = [r for r in rows
                if (agent_id is None or r.agent_id == agent_id)
                and (user_id is None or r.user_id == user_id)]
        rows.sort(key=lambda r: (r.created_at, r.id))
        return rows

    # --- the operations come from RowDelegate -------------------------------------------

    async def purge_expired(self, before_ms: int, limit: int = 500) -> builtins.list[MemoryRecord]:
        """Erase up to ``limit`` memories expired at or before ``before_ms`` (the sweep's)."""
        return await self._ops.purge_expired(before_ms, limit)

    @property
    def kept_fields(self) -> frozenset[str]:
        """Rows are stored whole, except the recall counters (mem0 does not track recalls)."""
        return frozenset(ALL_FIELDS) - {"last_recalled_at", "recall_count"}

    # --- the row backend: translation to mem0 calls -----------------------------------------

    def _add(self, row: Row) -> None:
        self._live().add(
            embed_text(row.type, row.stored),
            agent_id=mem0_entity(row.agent_id),
            user_id=None if row.user_id is None else mem0_entity(row.user_id),
            metadata={**payload_of(row), "created_at": iso(row.created_at)},
            infer=False,
        )

    def _replace(self, old: Mem0Row, new: Mem0Row, text_changed: bool) -> Mem0Row:
        if old.user_id != new.user_id:
            # mem0 keeps its entity ids out of updates: a revived row under another user is
            # a new item.
            self._hard_delete(old)
            self._add(new)
            return new
        self._live().update(old.uuid, text=embed_text(new.type, new.stored) if text_changed
                            else None, metadata=payload_of(new))
        return new

    def _hard_delete(self, row: Mem0Row) -> None:
        memory = self._live()
        memory.delete(row.uuid)
        # mem0 keeps every version's text in its history table, the delete event included.
        db = getattr(memory, "db", None)
        conn, lock = getattr(db, "connection", None), getattr(db, "_lock", None)
        if conn is not None and lock is not None:
            with lock:
                conn.execute("DELETE FROM history WHERE memory_id = ?", (row.uuid,))
                conn.commit()

    # --- reads -----------------------------------------------------------------------------

    async def recall(self, req: RecallRequest) -> RecallResponse:
        refuse_hops(self._name, req)
        return await recall_in_time(req, self._search, self._clock.now_ms())

    async def _search(self, req: RecallRequest) -> RecallResponse:
        started = time.perf_counter()
        hits = await self._call(lambda: self._recall(req))
        return RecallResponse(results=hits, fusion_used=Fusion.RRF, stores_queried=[self._name],
                              latency_ms=int((time.perf_counter() - started) * 1000))

    def _recall(self, req: RecallRequest) -> builtins.list[RecallHit]:
        now = self._clock.now_ms()
        extra: dict[str, Any] = {"mw_state": LIVE, "mw_expiry": {"gt": now},
                                 **self._pushdown(req.filter)}
        if req.types is not None:
            extra["mw_type"] = [t.value for t in req.types]
        if req.fresher_than_days is not None:
            extra["mw_created_at"] = {"gte": now - req.fresher_than_days * DAY_MS}
        filters = {**self._filters(req.agent_id, req.user_id), **extra}
        threshold = (0.0 if req.min_relevance is not None
                     else min(max(min(self._floor, self._lexical_floor), 0.0), 1.0))
        terms = set(query_terms(req.query))
        fetch = candidate_pool(req.k)
        while True:
            found = self._live().search(req.query, top_k=fetch, filters=filters,
                                        threshold=threshold, explain=True)["results"]
            exhausted = len(found) < fetch
            scored: builtins.list[tuple[float, Mem0Row, float]] = []
            for item in found:
                row = row_from_item(item)
                if not (row.in_scope(req.agent_id, req.user_id) and row.live(now)
                        and (req.types is None or row.type in req.types)
                        and matches_filter(row.metadata, req.filter)
                        and matches_where(row.type, row.metadata, req.where)):
                    continue
                rel = self._admitted(item, row, terms, req.min_relevance)
                if rel is None:
                    continue
                score = float(item.get("score") or 0.0)
                scored.append((score * DEMOTE_FACTOR if row.demoted else score, row, rel))
            scored.sort(key=lambda s: (-s[0], s[1].created_at, s[1].id))
            # Anything not fetched yet scores at most the last raw score seen.
            bound = float(found[-1].get("score") or 0.0) if found else 0.0
            if exhausted or sum(1 for s, _, _ in scored if s >= bound) >= req.k:
                break
            fetch *= 4
        return [
            row_hit(row, score, rel, self._name) for score, row, rel in scored[: req.k]
        ]

    def _admitted(self, item: dict[str, Any], row: Mem0Row, terms: set[str],
                  min_relevance: float | None) -> float | None:
        """The hit's calibrated relevance, or ``None`` when the floor (or ``min_relevance``,
        a caller's per-recall choice) refuses it."""
        details = item.get("score_details") or {}
        cosine = float(details.get("semantic_score", item.get("score") or 0.0))
        lexical = not terms.isdisjoint(
            query_terms(embed_text(row.type, row.stored), max_terms=10_000))
        rel = relevance(cosine, lexical=lexical)
        if min_relevance is not None:
            return rel if rel >= min_relevance else None
        if cosine >= self._floor or (lexical and cosine >= self._lexical_floor):
            return rel
        return None

    async def health(self) -> Health:
        def probe() -> Health:
            memory = self._live()
            info = memory.vector_store.col_info()
            return Health("ok", {"backend": "mem0", "points": int(info.points_count or 0)})

        try:
            return await self._call(probe)
        except MemorywireError as exc:
            return Health("down", {"backend": "mem0", "error": exc.message})

    async def aclose(self) -> None:
        memory, self._memory = self._memory, None
        if memory is None or not self._owned:
            return

        def close() -> None:
            memory.close()
            client = getattr(memory.vector_store, "client", None)
            if client is not None:
                client.close()

        await anyio.to_thread.run_sync(self._call_sync, close)
