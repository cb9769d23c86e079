"""``CogneeStore``: memorywire memories kept as documents of a real, in-process Cognee.

Cognee (1.6.x) builds a knowledge graph with an LLM in ``cognify``; nothing of that runs here.
Each memory is one Cognee *data item* (``cognee.add``) indexed by a pipeline of Cognee's own
tasks that need no LLM (classify, chunk, ``add_data_points``: chunk vectors land in its vector
store through its embedding engine), and recalled with Cognee's ``CHUNKS`` search. Each
memorywire agent gets one Cognee dataset. The data item's ``external_metadata.memorywire``
holds the whole record losslessly (ids, scope, type, content, timestamps, soft-delete/archive/
demote marks); its text is what Cognee chunks and embeds.

Why the adapter does more than forward calls:

* Cognee has no in-place update of a document's metadata that re-indexes it, so a change
  writes a new revision (``rev`` + 1, a new data item) and then deletes the old one. A crash
  in between leaves both; readers always take the highest revision, and clean up the rest.
* Cognee's search filters by dataset only, so ``user_id`` scope, filters, expiry and merge
  rules are memorywire's own (``memorywire.core``). Exact scoped top-k: the search asks for
  every chunk of the agent's dataset and ranks the live rows here; its scores are cosine
  *distances*, turned into similarities (``1 - d``) before ranking.
* Cognee counts chunk tokens with the embedding model's own tokenizer, fetched by repo name
  through ``huggingface_hub``: offline, point ``HF_HOME`` at a cache holding it (see
  ``backends/cognee/hf_cache.py``), or Cognee silently falls back to counting with TikToken.
* Cognee's configuration and databases are process-global and bound to the event loop that
  first touched them, so every Cognee call runs on one dedicated loop thread per process
  (``Engine``); one process holds one Cognee data directory.
* Each pipeline run costs about a second, so writes that arrive together for one agent are
  grouped into a single ``add`` + index run (``remember_many`` and concurrent ``remember``).

Known limits of Cognee 1.6.5 that the adapter cannot hide:

* No erasure: Cognee's ``delete_data`` removes a document from every read path (listing,
  search), but its text stays in bytes on disk: LanceDB keeps old fragments, and the graph
  and relational files keep copies until they are compacted. So the ``erase`` capability is
  not declared and ``forget(hard_delete=True)`` raises ``CapabilityMissing`` before touching
  anything, rather than claim a deletion it cannot make; soft delete works.
* Cognee gives every dataset (here: every agent) its own vector and graph database; with
  them in this process (the default here) a write costs about 0.4 s per grouped run.

Not offered: recall tracking (each recall would rewrite every hit), graph links (Cognee's
graph needs its LLM extraction), full-text search (no lexical index without ``cognify``),
and atomicity across several memories in one call (each memory's change is atomic alone).
"""

from __future__ import annotations

import builtins
import hashlib
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import anyio
import anyio.to_thread

from memorywire.core.clock import DAY_MS, Clock, SystemClock
from memorywire.core.content import embed_text
from memorywire.core.fields import matches_where
from memorywire.core.filters import matches_filter
from memorywire.core.records import Row as CoreRow
from memorywire.core.scoring import candidate_pool, hybrid_rank
from memorywire.embed.base import Embedder
from memorywire.errors import (
    BackendUnavailable,
    CapabilityMissing,
    InvalidRequest,
    MemorywireError,
    StoreCorrupt,
)
from memorywire.recall.plan import recall_in_time
from memorywire.recall.settings import DEFAULT_RELEVANCE_FLOOR
from memorywire.store.base import Capability, Health
from memorywire.store.cascade import require_derivation
from memorywire.store.cognee.engine import engine
from memorywire.store.cognee.row import KEY, Row, row_from_data
from memorywire.store.cognee.writes import RememberBatcher
from memorywire.store.graph import refuse_hops
from memorywire.store.portable import ALL_FIELDS
from memorywire.store.rowstore import RowDelegate, RowOps, row_hit
from memorywire.store.timeline import remember_in_time
from memorywire.store.url_settings import Setting, split_query, typed_settings
from memorywire.wire.models import (
    ForgetRequest,
    ForgetResponse,
    Fusion,
    RecallHit,
    RecallRequest,
    RecallResponse,
    RememberRequest,
    RememberResponse,
)

__all__ = ["CogneeStore"]

#: The URL's query keys (``prefix`` sets the constructor's prefix); any other is refused.
_URL_KEYS = ("embedding_endpoint", "embedding_model", "embedding_dim", "prefix")
_DIM = {"embedding_dim": Setting("embedding_dim", "int")}

T = TypeVar("T")
_CAPABILITIES = frozenset({
    Capability.SEMANTIC, Capability.EPISODIC, Capability.PROCEDURAL, Capability.EMOTIONAL,
    Capability.VECTOR, Capability.TIME,
})
_CHUNKS_PER_ROW = 64  # search breadth per stored data item; 64 KiB text is ~60 chunks


class CogneeStore(RowDelegate[Row]):
    def __init__(
        self,
        path: str | Path,
        *,
        embedding_endpoint: str,
        embedding_model: str = "sentence-transformers/all-MiniLM-L6-v2",
        embedding_dim: int = 384,
        dataset_prefix: str = "memorywire",
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        name: str = "cognee",
        relevance_floor: float = DEFAULT_RELEVANCE_FLOOR,
        database_workers: bool = False,
    ) -> None:
        """``path`` is Cognee's data directory for this process; ``embedding_endpoint`` an
        OpenAI-compatible ``/v1`` serving ``embedding_model`` (Cognee embeds both memories
        and queries through it). ``embedder`` is accepted for factory symmetry and unused.
        ``database_workers`` keeps Cognee's default of per-dataset database processes (which
        isolates native memory in long-running services); off, they run in this process."""
        if not dataset_prefix.replace("_", "").isalnum():
            raise InvalidRequest("dataset_prefix must be letters, digits and underscores")
        self._engine = engine(Path(path).resolve(), embedding_endpoint, embedding_model,
                               embedding_dim, database_workers)
        self._prefix = dataset_prefix
        self._clock: Clock = clock or SystemClock()
        self._name = name
        self._floor = relevance_floor
        self._index_lock = anyio.Lock()
        self._indexed: set[str] = set()  # datasets whose vector tables exist
        self._datasets: dict[str, Any] = {}
        self._ops: RowOps[Row] = RowOps(_Backend(self), name=name, clock=self._clock,
                                        recall_tracking=False)
        self._batcher = RememberBatcher(self, self._ops.lock)

    @classmethod
    def from_url(cls, url: str, **kw: Any) -> CogneeStore:
        """``cognee:///abs/dir?embedding_endpoint=http://127.0.0.1:PORT/v1&prefix=NAME``."""
        parts = urlsplit(url)
        path = unquote(parts.netloc + parts.path)
        if not path:
            raise InvalidRequest(f"Cognee URL {url!r} needs a directory (cognee:///var/cognee)")
        q = split_query("cognee", parts.query, _URL_KEYS)
        if "embedding_endpoint" not in q and "embedding_endpoint" not in kw:
            raise InvalidRequest("Cognee URL needs ?embedding_endpoint=http://host:port/v1")
        if "embedding_dim" in q:
            q["embedding_dim"] = typed_settings("cognee", q, _DIM)["embedding_dim"]
        for key in _URL_KEYS:
            if key in q:
                kw.setdefault("dataset_prefix" if key == "prefix" else key, q[key])
        return cls(path, **kw)

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> frozenset[Capability]:
        return _CAPABILITIES

    # --- the one place Cognee errors become memorywire errors ----------------------------------

    async def _call(self, fn: Callable[..., Awaitable[T]], *args: Any, **kw: Any) -> T:
        async def run() -> T:
            return await fn(*args, **kw)

        fut = self._engine.submit(run())
        try:
            return await anyio.to_thread.run_sync(fut.result)
        except MemorywireError:
            raise
        except Exception as exc:
            raise BackendUnavailable(f"Cognee failed: {type(exc).__name__}: {exc}") from exc

    @property
    def _cognee(self) -> Any:
        return self._engine.mods["cognee"]

    def _dataset_name(self, agent_id: str) -> str:
        return f"{self._prefix}_{hashlib.sha256(agent_id.encode('utf-8')).hexdigest()[:40]}"

    async def _dataset_id(self, agent_id: str) -> Any:
        if agent_id in self._datasets:
            return self._datasets[agent_id]
        name = self._dataset_name(agent_id)

        async def datasets() -> list[Any]:
            try:
                return list(await self._cognee.datasets.list_datasets())
            except Exception as exc:
                # Cognee creates its databases on the first add: a read before any write
                # (e.g. the conflict scan of a first remember) finds nothing, not an error.
                if type(exc).__name__ == "DatabaseNotCreatedError":
                    return []
                raise

        found = [d.id for d in await self._call(datasets) if d.name == name]
        if found:
            self._datasets[agent_id] = found[0]
            return found[0]
        return None

    async def _write(self, rows: Sequence[Row]) -> None:
        """One ``add`` and one index run per agent's dataset, one write at a time."""
        if not rows:
            return
        eng = self._engine
        item = eng.mods["data_item"].DataItem
        by_dataset: dict[str, list[Any]] = {}
        for r in rows:
            by_dataset.setdefault(self._dataset_name(r.agent_id), []).append(item(
                data=embed_text(r.type, r.stored) or " ", external_metadata={KEY: r.doc()},
                data_id=r.data_id, literal_text=True))

        async def index(name: str, items: list[Any]) -> None:
            await self._cognee.add(items, dataset_name=name)
            async for _ in eng.mods["pipelines"].run_pipeline(
                    tasks=eng.tasks, datasets=[name], pipeline_name="memorywire_index",
                    needs_llm=False, incremental_loading=True):
                pass

        async def add_and_index() -> None:
            # Cognee creates a dataset's vector tables lazily, from the items of its first
            # index run processed in parallel; with many items they race on that creation
            # ("Table 'TextDocument_name' was not found"). A new dataset is therefore
            # indexed with one item first, and one dataset is indexed at a time.
            for name, items in by_dataset.items():
                if name not in self._indexed and len(items) > 1:
                    await index(name, items[:1])
                    items = items[1:]
                await index(name, items)
                self._indexed.add(name)

        async with self._index_lock:  # concurrent writers would race the same way
            await self._call(add_and_index)

    async def _drop(self, agent_id: str, data_ids: Sequence[uuid.UUID]) -> None:
        ds = await self._dataset_id(agent_id)
        for did in data_ids:
            await self._call(self._cognee.datasets.delete_data, ds, did)

    async def _rewrite(self, agent_id: str, changes: Sequence[tuple[Row, Row]]) -> list[Row]:
        """Each ``new`` as the next revision of its ``old``, in one index run; then the old
        items deleted."""
        new = [replace(n, data_id=uuid.uuid4(), rev=o.rev + 1) for o, n in changes]
        await self._write(new)
        await self._drop(agent_id, [o.data_id for o, _ in changes])
        return new

    async def _scan(self, agent_id: str) -> dict[str, Row]:
        """Every memory of the agent at its newest revision; stale revisions are cleaned up."""
        ds = await self._dataset_id(agent_id)
        if ds is None:
            return {}
        newest: dict[str, Row] = {}
        stale: list[uuid.UUID] = []
        for data in await self._call(self._cognee.datasets.list_data, ds):
            row = row_from_data(data.id, data.external_metadata)
            if row.agent_id != agent_id:
                raise StoreCorrupt(f"Cognee dataset of {agent_id!r} holds another agent's row")
            old = newest.get(row.id)
            if old is None or row.rev > old.rev:
                newest[row.id] = row
                if old is not None:
                    stale.append(old.data_id)
            else:
                stale.append(row.data_id)
        if stale:
            await self._drop(agent_id, stale)
        return newest

    # --- the operations come from RowDelegate, but for these two; export_rows goes one
    # --- agent at a time (Cognee cannot enumerate agents: capability_missing) --------------

    async def remember_many(self, reqs: Sequence[RememberRequest]) -> list[RememberResponse]:
        """Every request waiting for these agents when their locks free is written in one run."""
        return await remember_in_time(self, reqs, self._batcher.remember_many)

    async def forget(self, req: ForgetRequest) -> ForgetResponse:
        if req.cascade:
            require_derivation(self)
        if req.hard_delete:  # checked before anything is read or written
            raise CapabilityMissing("the Cognee store cannot hard delete (no erase capability): "
                                    "Cognee keeps the text in its vector, graph and relational "
                                    "storage after delete_data; use a soft delete instead")
        return await self._ops.forget(req)

    @property
    def kept_fields(self) -> frozenset[str]:
        """The revision document keeps every field but the recall counters (no tracking)."""
        return frozenset(ALL_FIELDS) - {"last_recalled_at", "recall_count"}

    # --- reads ---------------------------------------------------------------------------------

    async def _similarities(self, agent_id: str, query: str, n_items: int) -> dict[str, float]:
        """Cognee's CHUNKS search over the whole dataset: best cosine per data item id."""
        name = self._dataset_name(agent_id)
        search_type = self._engine.mods["search_type"].SearchType.CHUNKS
        found = await self._call(self._cognee.search, query, query_type=search_type,
                                 datasets=[name], top_k=max(n_items, 1) * _CHUNKS_PER_ROW)
        best: dict[str, float] = {}
        for group in found or []:
            for chunk in group.get("search_result") or []:
                try:
                    doc, sim = str(chunk["document_id"]), 1.0 - float(chunk["score"])
                except (KeyError, TypeError, ValueError) as exc:
                    raise StoreCorrupt("Cognee returned a chunk without document_id/score") \
                        from exc
                best[doc] = max(sim, best.get(doc, -1.0))
        return best

    async def recall(self, req: RecallRequest) -> RecallResponse:
        refuse_hops(self._name, req)
        return await recall_in_time(req, self._search, self._clock.now_ms())

    async def _search(self, req: RecallRequest) -> RecallResponse:
        started = time.perf_counter()
        now = self._clock.now_ms()
        scanned = await self._scan(req.agent_id)
        rows = [r for r in scanned.values()
                if r.in_scope(req.agent_id, req.user_id) and r.live(now)
                and (req.types is None or r.type in req.types)
                and matches_filter(r.metadata, req.filter)
                and matches_where(r.type, r.metadata, req.where)
                and (req.fresher_than_days is None
                     or r.created_at >= now - req.fresher_than_days * DAY_MS)]
        hits: list[RecallHit] = []
        if rows:
            best = await self._similarities(req.agent_id, req.query, len(scanned))
            cosines = {r.id: best[str(r.data_id)] for r in rows if str(r.data_id) in best}
            order = sorted(cosines, key=lambda i: -cosines[i])
            ranked = hybrid_rank(cosines, order[:candidate_pool(req.k)], [], k=req.k,
                                 floor=self._floor, lexical_floor=self._floor,
                                 demoted={r.id for r in rows if r.demoted},
                                 min_relevance=req.min_relevance)
            by_id = {r.id: r for r in rows}
            hits.extend(row_hit(by_id[s.id], s.score, s.relevance, self._name) for s in ranked)
        return RecallResponse(results=hits, fusion_used=Fusion.RRF, stores_queried=[self._name],
                              latency_ms=int((time.perf_counter() - started) * 1000))

    async def health(self) -> Health:
        try:
            datasets = await self._call(self._cognee.datasets.list_datasets)
        except MemorywireError as exc:
            return Health("down", {"error": str(exc)})
        return Health("ok", {"cognee_root": str(self._engine.root),
                             "datasets": len(datasets)})

    async def aclose(self) -> None:
        """Cognee stays up for the process (its databases are process-global)."""


class _Backend:
    """Cognee datasets as a :class:`RowBackend`: one dataset per agent, one data item per
    revision. Erasure is refused by :meth:`CogneeStore.forget` before it gets here."""

    def __init__(self, store: CogneeStore) -> None:
        self._s = store

    async def scan(self, agent_id: str) -> dict[str, Row]:
        return await self._s._scan(agent_id)

    async def fetch(self, agent_id: str, ids: Sequence[str]) -> dict[str, Row]:
        rows = await self.scan(agent_id)  # the vendor cannot select by our id
        return {i: rows[i] for i in ids if i in rows}

    async def scan_all(self) -> builtins.list[Row]:
        raise CapabilityMissing("the Cognee store lists one agent at a time")

    async def insert(self, rows: Sequence[CoreRow]) -> None:
        await self._s._write([Row(data_id=uuid.uuid4(), **{f.name: getattr(r, f.name)
                                                            for f in fields(CoreRow)})
                              for r in rows])

    async def replace(self, changes: Sequence[tuple[Row, Row, bool]]) -> builtins.list[Row]:
        by_agent: dict[str, builtins.list[tuple[Row, Row]]] = {}
        for old, new, _ in changes:  # Cognee re-indexes every new item anyway
            by_agent.setdefault(old.agent_id, []).append((old, new))
        out: builtins.list[Row] = []
        for agent_id, pairs in by_agent.items():
            out += await self._s._rewrite(agent_id, pairs)
        return out

    async def erase(self, rows: Sequence[Row]) -> None:
        raise CapabilityMissing("the Cognee store cannot erase")
