"""``InMemoryStore``: the small, obviously-correct reference of every v0 semantic.

It is the oracle the property tests compare real backends against, so it favours plain
loops over cleverness. Nothing is persisted. Each method runs without awaiting in the middle,
which makes every operation atomic on its event loop.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memorywire.core.clock import DAY_MS, Clock, SystemClock
from memorywire.core.expiry import ExpiryFacts, policy_matches
from memorywire.core.filters import matches_filter
from memorywire.core.ids import new_id
from memorywire.core.merge import MergeRow, plan_merge, resolve_merge
from memorywire.core.scoring import DEMOTE_FACTOR, candidate_pool, exact_top, hybrid_rank
from memorywire.core.textsearch import query_terms
from memorywire.embed.base import Embedder
from memorywire.errors import Conflict, NotFound
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

__all__ = ["InMemoryStore"]

_ALL_CAPABILITIES = frozenset(
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


@dataclass
class _Row:
    id: str
    agent_id: str
    user_id: str | None
    type: MemoryType
    stored: str
    metadata: dict[str, Any]
    confidence: float
    source: str | None
    created_at: int
    expires_at: int | None
    vector: np.ndarray[Any, np.dtype[np.float32]]
    terms: frozenset[str]
    updated_at: int | None = None
    deleted_at: int | None = None
    archived_at: int | None = None
    demoted: bool = False
    last_recalled_at: int | None = None
    recall_count: int = 0
    links: list[str] = field(default_factory=list)

    def visible(self, now: int) -> bool:
        return (
            self.deleted_at is None
            and self.archived_at is None
            and (self.expires_at is None or self.expires_at > now)
        )

    def in_scope(self, agent_id: str, user_id: str | None) -> bool:
        return self.agent_id == agent_id and (user_id is None or self.user_id == user_id)

    def record(self) -> MemoryRecord:
        return MemoryRecord.model_validate({
            "id": self.id,
            "agent_id": self.agent_id,
            "type": self.type,
            "content": content_from_storage(self.type, self.stored),
            "created_at": self.created_at,
            "user_id": self.user_id,
            "metadata": dict(self.metadata),
            "confidence": self.confidence,
            "source": self.source,
            "updated_at": self.updated_at,
            "expires_at": self.expires_at,
            "recall_count": self.recall_count,
            "last_recalled_at": self.last_recalled_at,
        })


class InMemoryStore:
    def __init__(
        self,
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        name: str = "memory",
        *,
        relevance_floor: float = DEFAULT_RELEVANCE_FLOOR,
        lexical_floor: float = DEFAULT_LEXICAL_FLOOR,
    ) -> None:
        self._embedder = embedder
        self._clock: Clock = clock or SystemClock()
        self._name = name
        self._floor = relevance_floor
        self._lexical_floor = lexical_floor
        self._rows: dict[tuple[str, str], _Row] = {}
        self._merge_edges: set[tuple[str, str, str]] = set()

    @classmethod
    def from_url(cls, url: str, **kw: Any) -> InMemoryStore:
        """``memory://`` (anything after the scheme is ignored)."""
        return cls(**kw)

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> frozenset[Capability]:
        return _ALL_CAPABILITIES

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = resolve_embedder(None)
        return self._embedder

    # --- writes ------------------------------------------------------------------------------

    async def remember(self, req: RememberRequest) -> RememberResponse:
        return (await self.remember_many([req]))[0]

    async def remember_many(self, reqs: Sequence[RememberRequest]) -> list[RememberResponse]:
        now = self._clock.now_ms()
        prepared = [(r, content_to_storage(r.type, r.content)) for r in reqs]
        for r, _ in prepared:
            links_of(r.metadata)
        seen: set[tuple[str, str]] = set()
        fresh: list[tuple[RememberRequest, str]] = []
        for r, s in prepared:
            key = (r.agent_id, r.id or "")
            if r.id is None or (key not in self._rows and key not in seen):
                fresh.append((r, s))
                seen.add(key)
        vectors = self.embedder.embed([embed_text(r.type, s) for r, s in fresh]) if fresh else None
        out: list[RememberResponse] = []
        fresh_i = 0
        for r, stored in prepared:
            existing = self._rows.get((r.agent_id, r.id)) if r.id is not None else None
            if existing is not None:
                out.append(self._replay(existing, r, stored))
                continue
            assert vectors is not None
            vec = vectors[fresh_i]
            fresh_i += 1
            mid = r.id or new_id(now)
            metadata = dict(r.metadata or {})
            self._rows[(r.agent_id, mid)] = _Row(
                id=mid,
                agent_id=r.agent_id,
                user_id=r.user_id,
                type=r.type,
                stored=stored,
                metadata=metadata,
                confidence=r.confidence,
                source=r.source,
                created_at=now,
                expires_at=r.expires_at,
                vector=np.asarray(vec, dtype=np.float32),
                terms=frozenset(query_terms(embed_text(r.type, stored), max_terms=10_000)),
                links=links_of(metadata),
            )
            out.append(RememberResponse(id=mid, stored_at=now, stores=[self._name],
                                        pending_approval=False))
        return out

    def _replay(self, row: _Row, req: RememberRequest, stored: str) -> RememberResponse:
        if row.stored != stored or row.type is not req.type:
            raise Conflict(f"id {row.id!r} already holds a different memory")
        return RememberResponse(id=row.id, stored_at=row.created_at, stores=[self._name],
                                pending_approval=False)

    async def forget(self, req: ForgetRequest) -> ForgetResponse:
        now = self._clock.now_ms()
        wanted = set(req.ids) if req.ids is not None else None
        hits: list[_Row] = []
        for row in self._rows.values():
            if not row.in_scope(req.agent_id, req.user_id):
                continue
            if row.deleted_at is not None and not req.hard_delete:
                continue
            if wanted is not None and row.id not in wanted:
                continue
            if req.filter is not None and not matches_filter(row.metadata, req.filter):
                continue
            hits.append(row)
        hits.sort(key=lambda r: (r.created_at, r.id))
        for row in hits:
            if req.hard_delete:
                del self._rows[(row.agent_id, row.id)]
                self._merge_edges = {
                    e for e in self._merge_edges
                    if not (e[0] == row.agent_id and row.id in (e[1], e[2]))
                }
            else:
                row.deleted_at = now
        ids = [r.id for r in hits]
        return ForgetResponse(forgotten_ids=ids, hard_delete=req.hard_delete,
                              stores=[StoreCount(store=self._name, count=len(ids))])

    def _visible_in_scope(self, agent_id: str, user_id: str | None, now: int) -> list[_Row]:
        rows = [r for r in self._rows.values() if r.in_scope(agent_id, user_id) and r.visible(now)]
        rows.sort(key=lambda r: (r.created_at, r.id))
        return rows

    async def merge(self, req: MergeRequest) -> MergeResponse:
        now = self._clock.now_ms()
        rows = self._visible_in_scope(req.agent_id, req.user_id, now)
        by_id = {r.id: r for r in rows}
        plain = [
            MergeRow(r.id, content_from_storage(r.type, r.stored), r.created_at, r.confidence,
                     r.metadata)
            for r in rows
        ]
        canonical, dups = resolve_merge(req.canonical, req.duplicates, plain)
        if not dups:
            return MergeResponse(canonical=canonical.id, merged_count=0,
                                 strategy_used=req.strategy, stores=[self._name])
        plan = plan_merge(canonical, dups, req.strategy)
        survivor = by_id[plan.canonical_id]
        stored = content_to_storage(survivor.type, plan.content)
        if stored != survivor.stored:
            survivor.stored = stored
            text = embed_text(survivor.type, stored)
            survivor.vector = self.embedder.embed([text])[0]
            survivor.terms = frozenset(query_terms(text, max_terms=10_000))
        survivor.metadata = dict(plan.metadata)
        survivor.confidence = plan.confidence
        survivor.updated_at = now
        absorbed = set(plan.absorbed_ids)
        moved: list[str] = list(survivor.links)
        for mid in plan.absorbed_ids:
            gone = by_id[mid]
            gone.deleted_at = now
            moved.extend(gone.links)
            self._merge_edges.add((req.agent_id, mid, survivor.id))
        survivor.links = [x for x in dict.fromkeys(moved) if x != survivor.id and x not in absorbed]
        for row in self._rows.values():
            if (
                row.agent_id == req.agent_id
                and row.id != survivor.id
                and any(x in absorbed for x in row.links)
            ):
                relinked = [survivor.id if x in absorbed else x for x in row.links]
                row.links = [x for x in dict.fromkeys(relinked) if x != row.id]
        return MergeResponse(canonical=survivor.id, merged_count=len(absorbed),
                             strategy_used=req.strategy, stores=[self._name])

    async def expire(self, req: ExpireRequest) -> ExpireResponse:
        now = self._clock.now_ms()
        matched = [
            r for r in self._visible_in_scope(req.agent_id, req.user_id, now)
            if policy_matches(
                req.policy,
                ExpiryFacts(r.type, r.created_at, r.confidence, r.last_recalled_at),
                now,
            )
        ]
        for row in matched:
            if req.action is ExpireAction.FORGET:
                row.deleted_at = now
            elif req.action is ExpireAction.ARCHIVE:
                row.archived_at = now
            else:
                row.demoted = True
        return ExpireResponse(matched_count=len(matched), action_taken=req.action,
                              stores=[self._name], matched_ids=[r.id for r in matched])

    async def update(self, req: UpdateRequest) -> MemoryRecord:
        now = self._clock.now_ms()
        row = self._rows.get((req.agent_id, req.id))
        if row is None or not row.in_scope(req.agent_id, req.user_id) or not row.visible(now):
            raise NotFound(f"memory {req.id!r} not found")
        if req.metadata_patch is not None:
            patched = dict(row.metadata)
            for key, value in req.metadata_patch.items():
                if value is None:
                    patched.pop(key, None)
                else:
                    patched[key] = value
            if "links" in req.metadata_patch:
                row.links = links_of(patched)
            row.metadata = patched
        if req.content is not None:
            stored = content_to_storage(row.type, req.content)
            if stored != row.stored:
                row.stored = stored
                text = embed_text(row.type, stored)
                row.vector = self.embedder.embed([text])[0]
                row.terms = frozenset(query_terms(text, max_terms=10_000))
        if req.confidence is not None:
            row.confidence = req.confidence
        row.updated_at = now
        return row.record()

    # --- reads -------------------------------------------------------------------------------

    async def recall(self, req: RecallRequest) -> RecallResponse:
        started = time.perf_counter()
        now = self._clock.now_ms()
        rows = [
            r for r in self._visible_in_scope(req.agent_id, req.user_id, now)
            if (req.types is None or r.type in req.types)
            and matches_filter(r.metadata, req.filter)
            and (req.fresher_than_days is None
                 or r.created_at >= now - req.fresher_than_days * DAY_MS)
        ]
        hits: list[RecallHit] = []
        if rows:
            qvec = self.embedder.embed([req.query])[0]
            sims = np.stack([r.vector for r in rows]) @ qvec
            pool = candidate_pool(req.k)
            cosines = {r.id: float(s) for r, s in zip(rows, sims, strict=True)}
            vector_ranked = [rows[i].id for i in exact_top(sims.astype(np.float32), pool)]
            terms = set(query_terms(req.query))
            overlap = [(len(terms & r.terms), r) for r in rows]
            lexical = sorted((o for o in overlap if o[0] > 0),
                             key=lambda o: (-o[0], o[1].created_at, o[1].id))
            lexical_ranked = [r.id for _, r in lexical[:pool]]
            factors = {r.id: DEMOTE_FACTOR for r in rows if r.demoted}
            ranked = hybrid_rank(cosines, vector_ranked, lexical_ranked, k=req.k,
                                 floor=self._floor, lexical_floor=self._lexical_floor,
                                 factors=factors)
            by_id = {r.id: r for r in rows}
            for s in ranked:
                row = by_id[s.id]
                row.last_recalled_at = now
                row.recall_count += 1
                hits.append(RecallHit(
                    id=row.id, type=row.type, content=content_from_storage(row.type, row.stored),
                    score=s.score, metadata=dict(row.metadata), created_at=row.created_at,
                    supporting=[], source_store=self._name, user_id=row.user_id,
                    source=row.source, confidence=row.confidence,
                ))
        return RecallResponse(
            results=hits, fusion_used=Fusion.RRF, stores_queried=[self._name],
            latency_ms=int((time.perf_counter() - started) * 1000),
        )

    async def get(self, agent_id: str, id: str, user_id: str | None = None) -> MemoryRecord | None:
        row = self._rows.get((agent_id, id))
        if row is None or not row.in_scope(agent_id, user_id):
            return None
        return row.record() if row.visible(self._clock.now_ms()) else None

    async def list(self, query: ListQuery) -> list[MemoryRecord]:
        now = self._clock.now_ms()
        rows = sorted(self._rows.values(), key=lambda r: (r.created_at, r.id))
        out: list[MemoryRecord] = []
        after: tuple[int, str] | None = None
        if query.after_id is not None:
            anchor = next((r for r in rows if r.id == query.after_id
                           and (query.agent_id is None or r.agent_id == query.agent_id)), None)
            after = (anchor.created_at, anchor.id) if anchor else None
        for row in rows:
            if query.agent_id is not None and not row.in_scope(query.agent_id, query.user_id):
                continue
            if query.agent_id is None and query.user_id not in (None, row.user_id):
                continue
            if row.deleted_at is not None or (row.expires_at is not None and row.expires_at <= now):
                continue
            if row.archived_at is not None and not query.include_archived:
                continue
            if query.types is not None and row.type not in query.types:
                continue
            if not matches_filter(row.metadata, query.filter):
                continue
            if after is not None and (row.created_at, row.id) <= after:
                continue
            out.append(row.record())
            if len(out) >= query.limit:
                break
        return out

    async def neighbours(
        self, agent_id: str, ids: Sequence[str], hops: int, user_id: str | None = None
    ) -> dict[str, dict[str, int]]:
        """Live memories within ``hops`` links of each id, with their hop distance."""
        now = self._clock.now_ms()
        live = {r.id for r in self._visible_in_scope(agent_id, user_id, now)}
        adjacency = {
            r.id: [x for x in r.links if x in live]
            for r in self._rows.values()
            if r.agent_id == agent_id and r.id in live
        }
        return shortest_hops(adjacency, [i for i in ids if i in live], hops)

    async def health(self) -> Health:
        return Health("ok", {"memories": len(self._rows)})

    async def aclose(self) -> None:
        return None
