"""``LettaStore``: memorywire memories kept as passages of a real Letta server's archives.

Letta (the last server release, 0.16.8) offers archives of embedded passages over REST, which
work without any LLM. Each memorywire agent gets one archive; each memory is a passage whose
``metadata.memorywire`` holds the whole record losslessly (ids, scope, type, content,
timestamps, soft-delete/archive/demote marks), whose text is what gets embedded, and whose
vector Letta computes through the archive's embedding endpoint.

Why the adapter does more than forward calls:

* Letta assigns passage ids and cannot update a passage, so a change writes a new revision
  of the record (``rev`` + 1) and then deletes the old passage. A crash in between leaves
  both; readers always take the highest revision, so nothing half-done is ever visible.
* Letta's search returns score 0.0 and applies tag filters after its LIMIT (capped at 100),
  which cannot give an exact scoped top-k. So reads enumerate the archive (pages of 100 in
  passage ``created_at`` order, which we set strictly increasing) and rank here with the
  vectors Letta stored and the query embedded by ``embedder`` — which must be the model the
  archive's endpoint serves (the default MiniLM, by default). Cost is O(archive / 100)
  requests per operation: fine for agent-sized memories, not for millions.
* Scope (``agent_id`` by archive, ``user_id`` by record), filters, expiry and merge rules are
  memorywire's own (``memorywire.core``), so they match every other store.

Not offered: recall tracking (each recall would rewrite every hit), graph links, and
atomicity across several memories in one call (each memory's change is atomic on its own).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import numpy as np

from memorywire.core.clock import DAY_MS, Clock, SystemClock
from memorywire.core.expiry import ExpiryFacts, needs_recall_tracking, policy_matches
from memorywire.core.filters import matches_filter
from memorywire.core.ids import new_id
from memorywire.core.merge import MergeRow, plan_merge, resolve_merge
from memorywire.core.scoring import DEMOTE_FACTOR, candidate_pool, exact_top, hybrid_rank
from memorywire.core.textsearch import query_terms
from memorywire.embed.base import Embedder
from memorywire.errors import (
    BackendUnavailable,
    CapabilityMissing,
    Conflict,
    InvalidRequest,
    MemorywireError,
    NotFound,
    StoreCorrupt,
)
from memorywire.store._common import (
    DEFAULT_LEXICAL_FLOOR,
    DEFAULT_RELEVANCE_FLOOR,
    content_from_storage,
    content_to_storage,
    embed_text,
    links_of,
    resolve_embedder,
)
from memorywire.store._revision import RevisionRow, list_rows, revision_fields
from memorywire.store.base import Capability, Health, ListQuery, UpdateRequest
from memorywire.wire.models import (
    ExpireAction,
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
    StoreCount,
)

__all__ = ["LettaStore"]

_KEY = "memorywire"
_PAGE = 100  # Letta's hard cap on one search
_CAPABILITIES = frozenset({
    Capability.SEMANTIC, Capability.EPISODIC, Capability.PROCEDURAL, Capability.EMOTIONAL,
    Capability.VECTOR, Capability.FTS, Capability.ERASE,
})


@dataclass(frozen=True)
class _Row(RevisionRow):
    """A revision plus the passage that holds it and its embedding."""

    passage_id: str
    vector: np.ndarray[Any, np.dtype[np.float32]]


def _row_from_passage(p: dict[str, Any], dim: int) -> _Row:
    try:
        d = p["metadata"][_KEY]
        emb = p.get("embedding") or []
        vec = np.asarray(emb[:dim], dtype=np.float32)
        norm = float(np.linalg.norm(vec))
        return _Row(passage_id=str(p["id"]), vector=vec / norm if norm > 0 else vec,
                    **revision_fields(d))
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreCorrupt(
            f"Letta passage {p.get('id')!r} does not hold a memorywire record") from exc


class LettaStore:
    def __init__(
        self,
        base_url: str,
        *,
        embedding_endpoint: str,
        embedding_model: str = "all-MiniLM-L6-v2",
        embedding_dim: int = 384,
        archive_prefix: str = "memorywire",
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        name: str = "letta",
        timeout: float = 60.0,
        client: httpx.AsyncClient | None = None,
        relevance_floor: float = DEFAULT_RELEVANCE_FLOOR,
        lexical_floor: float = DEFAULT_LEXICAL_FLOOR,
    ) -> None:
        """``embedder`` must produce the vectors ``embedding_endpoint`` serves (queries are
        embedded here, memories by Letta through that endpoint)."""
        self._embedding_config = {
            "embedding_endpoint_type": "openai", "embedding_endpoint": embedding_endpoint,
            "embedding_model": embedding_model, "embedding_dim": embedding_dim,
            "embedding_chunk_size": 100_000,
        }
        self._dim = embedding_dim
        self._prefix = archive_prefix
        self._embedder = embedder
        self._clock: Clock = clock or SystemClock()
        self._name = name
        self._floor = relevance_floor
        self._lexical_floor = lexical_floor
        self._owns_client = client is None
        self._http = client or httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout)
        self._archives: dict[str, str] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self._archive_lock = anyio.Lock()
        self._last_stamp = 0

    @classmethod
    def from_url(cls, url: str, **kw: Any) -> LettaStore:
        """``letta://host:port?embedding_endpoint=http://...&prefix=...`` (http to the server)."""
        parts = urlsplit(url)
        if not parts.hostname or parts.port is None:
            raise InvalidRequest(f"Letta URL {url!r} needs host:port (letta://127.0.0.1:8283)")
        q = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        if "embedding_endpoint" not in q and "embedding_endpoint" not in kw:
            raise InvalidRequest("Letta URL needs ?embedding_endpoint=http://host:port/v1")
        for key, cast in (("embedding_endpoint", str), ("embedding_model", str),
                          ("embedding_dim", int), ("prefix", str)):
            if key in q:
                kw.setdefault("archive_prefix" if key == "prefix" else key, cast(q[key]))
        return cls(f"http://{parts.hostname}:{parts.port}", **kw)

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

    # --- REST, and the one place backend errors become memorywire errors ---------------------

    async def _call(self, method: str, path: str, json: Any = None,
                    params: dict[str, str] | None = None, missing_ok: bool = False) -> Any:
        try:
            resp = await self._http.request(method, path, json=json, params=params)
        except httpx.HTTPError as exc:
            raise BackendUnavailable(f"Letta unreachable: {type(exc).__name__}: {exc}") from exc
        if resp.status_code == 404 and missing_ok:
            return None
        if resp.status_code >= 400:
            kind = StoreCorrupt if resp.status_code in (404, 409, 422) else BackendUnavailable
            raise kind(f"Letta {method} {path} answered {resp.status_code}: {resp.text[:300]}")
        if resp.status_code == 204 or not resp.content:
            return None
        try:
            return resp.json()
        except ValueError as exc:
            raise StoreCorrupt(f"Letta {method} {path} answered non-JSON") from exc

    def _lock(self, agent_id: str) -> anyio.Lock:
        return self._locks.setdefault(agent_id, anyio.Lock())

    def _archive_name(self, agent_id: str) -> str:
        return f"{self._prefix}-{hashlib.sha256(agent_id.encode('utf-8')).hexdigest()[:40]}"

    async def _archive(self, agent_id: str, create: bool) -> str | None:
        if agent_id in self._archives:
            return self._archives[agent_id]
        async with self._archive_lock:
            if agent_id in self._archives:
                return self._archives[agent_id]
            name = self._archive_name(agent_id)
            found = await self._call("GET", "/v1/archives/", params={"name": name})
            if not isinstance(found, list):
                raise StoreCorrupt("Letta listed archives as something other than a list")
            # Oldest first, so every process settles on the same one after a creation race.
            found = sorted((a for a in found if a.get("name") == name),
                           key=lambda a: (str(a.get("created_at")), str(a.get("id"))))
            if found:
                archive_id = str(found[0]["id"])
            elif not create:
                return None
            else:
                made = await self._call("POST", "/v1/archives/", json={
                    "name": name, "description": f"memorywire agent {agent_id}",
                    "embedding_config": self._embedding_config})
                archive_id = str(made["id"])
            self._archives[agent_id] = archive_id
            return archive_id

    def _stamp(self) -> str:
        """Strictly increasing passage ``created_at``, so paging by time always advances."""
        ms = max(int(time.time() * 1000), self._last_stamp + 1)
        self._last_stamp = ms
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")

    async def _write(self, archive_id: str, row: _Row) -> _Row:
        made = await self._call("POST", f"/v1/archives/{archive_id}/passages", json={
            "text": embed_text(row.type, row.stored) or " ",
            "metadata": {_KEY: row.doc()},
            "tags": ["memorywire", f"mwid:{row.id}"],
            "created_at": self._stamp(),
        })
        return _row_from_passage(made, self._dim)

    async def _drop(self, archive_id: str, passage_ids: Sequence[str]) -> None:
        for pid in passage_ids:
            await self._call("DELETE", f"/v1/archives/{archive_id}/passages/{pid}",
                             missing_ok=True)

    async def _rewrite(self, archive_id: str, row: _Row, **changes: Any) -> _Row:
        new = await self._write(archive_id, replace(row, rev=row.rev + 1, **changes))
        await self._drop(archive_id, [row.passage_id])
        return new

    async def _scan(self, agent_id: str) -> tuple[str | None, dict[str, _Row]]:
        """Every memory of the agent at its newest revision; stale revisions are cleaned up."""
        archive_id = await self._archive(agent_id, create=False)
        if archive_id is None:
            return None, {}
        seen: set[str] = set()
        newest: dict[str, _Row] = {}
        stale: list[str] = []
        start: str | None = None
        while True:
            body: dict[str, Any] = {"archive_id": archive_id, "limit": _PAGE}
            if start is not None:
                body["start_date"] = start
            page = await self._call("POST", "/v1/passages/search", json=body)
            if not isinstance(page, list):
                raise StoreCorrupt("Letta answered a passage search with a non-list")
            fresh = [r["passage"] for r in page if r["passage"]["id"] not in seen]
            for p in fresh:
                seen.add(p["id"])
                row = _row_from_passage(p, self._dim)
                old = newest.get(row.id)
                if old is None or row.rev > old.rev:
                    newest[row.id] = row
                    if old is not None:
                        stale.append(old.passage_id)
                else:
                    stale.append(row.passage_id)
            if len(page) < _PAGE:
                break
            if not fresh:
                raise StoreCorrupt("over 100 Letta passages share one created_at; cannot page")
            start = max(str(p["created_at"]) for p in (r["passage"] for r in page))
        if stale:
            await self._drop(archive_id, stale)
        return archive_id, newest

    async def _live(self, agent_id: str, user_id: str | None) -> tuple[str | None, list[_Row]]:
        now = self._clock.now_ms()
        archive_id, rows = await self._scan(agent_id)
        live = [r for r in rows.values() if r.in_scope(user_id) and r.live(now)]
        live.sort(key=lambda r: (r.created_at, r.id))
        return archive_id, live

    # --- writes ------------------------------------------------------------------------------

    async def remember(self, req: RememberRequest) -> RememberResponse:
        stored = content_to_storage(req.type, req.content)
        metadata = dict(req.metadata or {})
        links_of(metadata)
        async with self._lock(req.agent_id):
            if req.id is not None:
                _, rows = await self._scan(req.agent_id)
                existing = rows.get(req.id)
                if existing is not None:
                    if existing.stored != stored or existing.type is not req.type:
                        raise Conflict(f"id {req.id!r} already holds a different memory")
                    return RememberResponse(id=existing.id, stored_at=existing.created_at,
                                            stores=[self._name], pending_approval=False)
            archive_id = await self._archive(req.agent_id, create=True)
            assert archive_id is not None
            now = self._clock.now_ms()
            row = _Row(
                passage_id="", id=req.id or new_id(now), rev=1, agent_id=req.agent_id,
                user_id=req.user_id, type=req.type, stored=stored, metadata=metadata,
                confidence=req.confidence, source=req.source, created_at=now, updated_at=None,
                expires_at=req.expires_at, deleted_at=None, archived_at=None, demoted=False,
                vector=np.zeros(0, dtype=np.float32),
            )
            await self._write(archive_id, row)
            return RememberResponse(id=row.id, stored_at=now, stores=[self._name],
                                    pending_approval=False)

    async def forget(self, req: ForgetRequest) -> ForgetResponse:
        now = self._clock.now_ms()
        wanted = set(req.ids) if req.ids is not None else None
        async with self._lock(req.agent_id):
            archive_id, rows = await self._scan(req.agent_id)
            hits = sorted(
                (r for r in rows.values()
                 if r.in_scope(req.user_id)
                 and (req.hard_delete or r.deleted_at is None)
                 and (wanted is None or r.id in wanted)
                 and (req.filter is None or matches_filter(r.metadata, req.filter))),
                key=lambda r: (r.created_at, r.id))
            for row in hits:
                assert archive_id is not None
                if req.hard_delete:
                    await self._drop(archive_id, [row.passage_id])
                else:
                    await self._rewrite(archive_id, row, deleted_at=now)
        ids = [r.id for r in hits]
        return ForgetResponse(forgotten_ids=ids, hard_delete=req.hard_delete,
                              stores=[StoreCount(store=self._name, count=len(ids))])

    async def merge(self, req: MergeRequest) -> MergeResponse:
        async with self._lock(req.agent_id):
            now = self._clock.now_ms()
            archive_id, rows = await self._live(req.agent_id, req.user_id)
            by_id = {r.id: r for r in rows}
            plain = [MergeRow(r.id, content_from_storage(r.type, r.stored), r.created_at,
                              r.confidence, r.metadata) for r in rows]
            canonical, dups = resolve_merge(req.canonical, req.duplicates, plain)
            if not dups:
                return MergeResponse(canonical=canonical.id, merged_count=0,
                                     strategy_used=req.strategy, stores=[self._name])
            assert archive_id is not None
            plan = plan_merge(canonical, dups, req.strategy)
            survivor = by_id[plan.canonical_id]
            await self._rewrite(
                archive_id, survivor,
                stored=content_to_storage(survivor.type, plan.content),
                metadata=dict(plan.metadata), confidence=plan.confidence, updated_at=now)
            for mid in plan.absorbed_ids:
                await self._rewrite(archive_id, by_id[mid], deleted_at=now)
        return MergeResponse(canonical=survivor.id, merged_count=len(plan.absorbed_ids),
                             strategy_used=req.strategy, stores=[self._name])

    async def expire(self, req: ExpireRequest) -> ExpireResponse:
        if needs_recall_tracking(req.policy):
            raise CapabilityMissing("the Letta store does not track recalls "
                                    "(no_recall_in_days is unsupported)")
        async with self._lock(req.agent_id):
            now = self._clock.now_ms()
            archive_id, rows = await self._live(req.agent_id, req.user_id)
            matched = [r for r in rows if policy_matches(
                req.policy, ExpiryFacts(r.type, r.created_at, r.confidence, None), now)]
            for row in matched:
                assert archive_id is not None
                if req.action is ExpireAction.FORGET:
                    await self._rewrite(archive_id, row, deleted_at=now)
                elif req.action is ExpireAction.ARCHIVE:
                    await self._rewrite(archive_id, row, archived_at=now)
                elif not row.demoted:
                    await self._rewrite(archive_id, row, demoted=True)
        return ExpireResponse(matched_count=len(matched), action_taken=req.action,
                              stores=[self._name], matched_ids=[r.id for r in matched])

    async def update(self, req: UpdateRequest) -> MemoryRecord:
        async with self._lock(req.agent_id):
            now = self._clock.now_ms()
            archive_id, rows = await self._live(req.agent_id, req.user_id)
            row = next((r for r in rows if r.id == req.id), None)
            if row is None or archive_id is None:
                raise NotFound(f"memory {req.id!r} not found")
            changes: dict[str, Any] = {"updated_at": now}
            if req.metadata_patch is not None:
                patched = dict(row.metadata)
                for key, value in req.metadata_patch.items():
                    if value is None:
                        patched.pop(key, None)
                    else:
                        patched[key] = value
                links_of(patched)
                changes["metadata"] = patched
            if req.content is not None:
                changes["stored"] = content_to_storage(row.type, req.content)
            if req.confidence is not None:
                changes["confidence"] = req.confidence
            return (await self._rewrite(archive_id, row, **changes)).record()

    # --- reads -------------------------------------------------------------------------------

    async def recall(self, req: RecallRequest) -> RecallResponse:
        started = time.perf_counter()
        now = self._clock.now_ms()
        _, live = await self._live(req.agent_id, req.user_id)
        rows = [r for r in live
                if (req.types is None or r.type in req.types)
                and matches_filter(r.metadata, req.filter)
                and (req.fresher_than_days is None
                     or r.created_at >= now - req.fresher_than_days * DAY_MS)]
        hits: list[RecallHit] = []
        if rows:
            if any(r.vector.shape != (self._dim,) for r in rows):
                raise StoreCorrupt("a Letta passage came back without its embedding")
            qvec = np.asarray(self.embedder.embed([req.query])[0], dtype=np.float32)
            if qvec.shape != (self._dim,):
                raise InvalidRequest(f"the embedder's dimension {qvec.shape[0]} is not the "
                                     f"archive's {self._dim}")
            sims = (np.stack([r.vector for r in rows]) @ qvec).astype(np.float32)
            pool = candidate_pool(req.k)
            cosines = {r.id: float(s) for r, s in zip(rows, sims, strict=True)}
            vector_ranked = [rows[i].id for i in exact_top(sims, pool)]
            terms = set(query_terms(req.query))
            overlap = [(len(terms & set(query_terms(embed_text(r.type, r.stored),
                                                    max_terms=10_000))), r) for r in rows]
            lexical = sorted((o for o in overlap if o[0] > 0),
                             key=lambda o: (-o[0], o[1].created_at, o[1].id))
            ranked = hybrid_rank(cosines, vector_ranked, [r.id for _, r in lexical[:pool]],
                                 k=req.k, floor=self._floor, lexical_floor=self._lexical_floor,
                                 factors={r.id: DEMOTE_FACTOR for r in rows if r.demoted})
            by_id = {r.id: r for r in rows}
            for s in ranked:
                row = by_id[s.id]
                hits.append(RecallHit(
                    id=row.id, type=row.type, content=content_from_storage(row.type, row.stored),
                    score=s.score, metadata=dict(row.metadata), created_at=row.created_at,
                    supporting=[], source_store=self._name, user_id=row.user_id,
                    source=row.source, confidence=row.confidence))
        return RecallResponse(results=hits, fusion_used=Fusion.RRF, stores_queried=[self._name],
                              latency_ms=int((time.perf_counter() - started) * 1000))

    async def get(self, agent_id: str, id: str, user_id: str | None = None) -> MemoryRecord | None:
        _, rows = await self._live(agent_id, user_id)
        return next((r.record() for r in rows if r.id == id), None)

    async def list(self, query: ListQuery) -> list[MemoryRecord]:
        if query.agent_id is None:
            raise CapabilityMissing("the Letta store lists one agent at a time")
        now = self._clock.now_ms()
        _, rows_by_id = await self._scan(query.agent_id)
        return list_rows(rows_by_id, query, now)

    async def health(self) -> Health:
        try:
            body = await self._call("GET", "/v1/health/")
        except MemorywireError as exc:
            return Health("down", {"error": str(exc)})
        return Health("ok", {"letta": body if isinstance(body, dict) else str(body)})

    async def aclose(self) -> None:
        if self._owns_client:
            await self._http.aclose()
