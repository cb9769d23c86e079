"""``InMemoryStore``: the small, obviously-correct reference of every v0 semantic.

It is the oracle the property tests compare real backends against, so it favours plain
loops over cleverness. Nothing is persisted. Each method runs without awaiting in the middle,
which makes every operation atomic on its event loop.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar
from urllib.parse import urlsplit

import numpy as np

from memorywire.core.clock import DAY_MS, Clock, SystemClock
from memorywire.core.content import content_to_storage, embed_text, fold_request
from memorywire.core.context_key import CONTEXT_FIELD, check_context, lexical_text
from memorywire.core.entity_gate import EVIDENCE_DEPTH, has_evidence, named_words
from memorywire.core.fields import matches_where
from memorywire.core.filters import matches_filter
from memorywire.core.informative import SHARE_MIN_SCOPE, is_common, weigh_units
from memorywire.core.records import Row
from memorywire.core.scoring import Scored, candidate_pool, exact_top, hybrid_rank_arrays
from memorywire.core.subject_gate import (
    SUBJECT_AGREEMENT,
    Subject,
    lexical_evidence,
    masked_stands_out,
    subject_of,
    subject_relevance,
)
from memorywire.core.textsearch import query_terms
from memorywire.core.timeline import validity_of
from memorywire.embed.base import Embedder
from memorywire.errors import InvalidRequest
from memorywire.recall.plan import recall_in_time
from memorywire.recall.settings import PORTABLE_RECALL, RecallSettings
from memorywire.store._common import resolve_embedder, shortest_hops
from memorywire.store.base import STORAGE_CAPABILITIES, Capability, Health
from memorywire.store.graph import graph_recall
from memorywire.store.portable import ALL_FIELDS
from memorywire.store.rowstore import RowDelegate, RowOps, live_in_scope, row_hit
from memorywire.store.timeline import CONFLICT_SCAN_LIMIT, Found, Probe, remember_in_time
from memorywire.store.url_settings import refusing_bad_values, url_keywords
from memorywire.wire.models import (
    Fusion,
    MemoryRecord,
    RecallHit,
    RecallRequest,
    RecallResponse,
    RememberRequest,
    RememberResponse,
)

__all__ = ["InMemoryStore"]


@dataclass(frozen=True)
class _Row(Row):
    """A row with its vector and full-text terms (kept beside it, never compared)."""

    vector: np.ndarray[Any, np.dtype[np.float32]] = field(
        default_factory=lambda: np.zeros(0, dtype=np.float32), compare=False)
    terms: frozenset[str] = field(default=frozenset(), compare=False)


class InMemoryStore(RowDelegate[_Row]):
    """``recall`` holds the ranking settings (:class:`~memorywire.recall.RecallSettings`;
    ``None`` is :attr:`DEFAULT_RECALL`), run by the same rules as every store. Its search
    has no feedback round, and the fusion weighs its full-text list only by how informative
    its words are in the scope (:mod:`memorywire.core.informative`), never by a setting:
    ``lexical_weight`` and ``feedback_weight`` are refused unless neutral."""

    #: The recall settings a store built without ``recall`` runs with.
    DEFAULT_RECALL: ClassVar[RecallSettings] = PORTABLE_RECALL
    #: Settings this store's search does not have (refused unless neutral).
    RECALL_UNSUPPORTED: ClassVar[frozenset[str]] = frozenset({"lexical_weight",
                                                              "feedback_weight"})

    def __init__(
        self,
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        name: str = "memory",
        *,
        recall: RecallSettings | None = None,
    ) -> None:
        self._embedder = embedder
        self._recall = (recall or self.DEFAULT_RECALL).refuse_unless_neutral(
            self.RECALL_UNSUPPORTED, "InMemoryStore")
        self._clock: Clock = clock or SystemClock()
        self._name = name
        #: agent_id -> id -> row: ids are scoped by agent.
        self._rows: dict[str, dict[str, _Row]] = {}
        self._ops: RowOps[_Row] = RowOps(_Backend(self), name=name, clock=self._clock,
                                         recall_tracking=True)

    @classmethod
    def from_url(cls, url: str, **kw: Any) -> InMemoryStore:
        """``memory://``, with the constructor's settings as query keys
        (``memory://?relevance_floor=-1``; :mod:`memorywire.store.url_settings`)."""
        parts = urlsplit(url)
        if parts.netloc or parts.path or parts.fragment:
            raise InvalidRequest(f"memory URL {url!r} names nothing after the scheme "
                                 "(memory://, with settings as query keys)")
        args = url_keywords(cls, "memory", parts.query, kw)
        with refusing_bad_values("memory", args.keys() - kw.keys()):
            return cls(**args)

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
        if self._embedder is None:
            self._embedder = resolve_embedder(None)
        return self._embedder

    # --- the operations come from RowDelegate; the expiry sweep only here ---------------------

    async def remember_many(self, reqs: Sequence[RememberRequest]
                            ) -> builtins.list[RememberResponse]:
        """RowDelegate's, with the batch's vectors computed first (a
        :class:`~memorywire.store.timeline.ConflictIndex`), so the write's read of its scope has
        cosines, as SQLite's and PostgreSQL's: the meaning rule of conflicts and
        near-duplicates by meaning."""
        return await remember_in_time(self, reqs, self._ops.remember_many,
                                      embed=self.embed_requests)

    async def embed_requests(self, reqs: Sequence[RememberRequest]) -> Any:
        """The vectors a remember of ``reqs`` stores (the embedder's cache serves the write)."""
        folded = [fold_request(r) for r in reqs]
        return self.embedder.embed([embed_text(r.type, content_to_storage(r.type, r.content))
                                    for r in folded])

    async def conflict_candidates(self, probes: Sequence[Probe]) -> builtins.list[Found]:
        """Each probe's scope's newest ``CONFLICT_SCAN_LIMIT`` current memories of its type
        (superseded ones are history), with their cosines to the probe's vector: the
        reference store reads its rows, it keeps no index
        (:class:`~memorywire.store.timeline.ConflictIndex`)."""
        now = self._clock.now_ms()
        out: builtins.list[Found] = []
        for p in probes:
            rows = [r for r in self._visible_in_scope(p.agent_id, p.user_id, now)
                    if r.type is p.type and r.user_id == p.user_id
                    and validity_of(r.metadata, r.created_at).superseded_by is None]
            rows = sorted(rows, key=lambda r: (r.created_at, r.id),
                          reverse=True)[:CONFLICT_SCAN_LIMIT]
            query = np.asarray(p.vector, dtype=np.float32)
            norm = float(np.linalg.norm(query)) or 1.0
            out.append([(r.id, r.stored, float(r.vector @ query)
                         / ((float(np.linalg.norm(r.vector)) or 1.0) * norm)) for r in rows])
        return out

    async def purge_expired(self, before_ms: int, limit: int = 500) -> builtins.list[MemoryRecord]:
        """Erase memories expired at or before ``before_ms``; what the expiry sweep calls."""
        return await self._ops.purge_expired(before_ms, limit)

    @property
    def kept_fields(self) -> frozenset[str]:
        """Rows are stored whole."""
        return frozenset(ALL_FIELDS)

    def _indexed(self, row: Row, vector: Any) -> _Row:
        text = lexical_text(row.type, row.stored, row.metadata)
        return _Row(**{f.name: getattr(row, f.name) for f in fields(Row)},
                    vector=np.asarray(vector, dtype=np.float32),
                    terms=frozenset(query_terms(text, max_terms=10_000)))

    def _visible_in_scope(
        self, agent_id: str, user_id: str | None, now: int
    ) -> builtins.list[_Row]:
        return live_in_scope(self._rows.get(agent_id, {}), user_id, now)

    # --- reads -------------------------------------------------------------------------------

    async def recall(self, req: RecallRequest) -> RecallResponse:
        if req.hops:
            return await graph_recall(self, req, self.recall)
        now = self._clock.now_ms()
        resp = await recall_in_time(req, self._search, now, settings=self._recall)
        # Counted here, for the hits returned: a re-ranker's deeper pool (and the first
        # search it replaces) must not count what it passed over, nor count a hit twice.
        rows = self._rows.get(req.agent_id, {})
        for hit in resp.results:
            row = rows.get(hit.id)
            if row is not None:
                rows[hit.id] = replace(row, last_recalled_at=now,
                                       recall_count=row.recall_count + 1)
        return resp

    async def _search(self, req: RecallRequest) -> RecallResponse:
        started = time.perf_counter()
        now = self._clock.now_ms()
        rows = [
            r for r in self._visible_in_scope(req.agent_id, req.user_id, now)
            if (req.types is None or r.type in req.types)
            and matches_filter(r.metadata, req.filter)
            and matches_where(r.type, r.metadata, req.where)
            and (req.fresher_than_days is None
                 or r.created_at >= now - req.fresher_than_days * DAY_MS)
        ]
        hits: list[RecallHit] = []
        if rows:
            qvec = self.embedder.embed([req.query])[0]
            sims = np.stack([r.vector for r in rows]) @ qvec
            pool = candidate_pool(req.k)
            # The shared rule of the full-text leg (core.informative): a word held by most
            # of the scope ranks nothing, and the list weighs its best word's scope idf.
            asked = query_terms(req.query)
            df = {t: sum(t in r.terms for r in rows) for t in asked}
            kept, informed = weigh_units(asked, df.__getitem__, len(rows))
            common = frozenset(t for t in asked if len(rows) >= SHARE_MIN_SCOPE
                               and is_common(df[t], len(rows)))
            settings = self._recall
            gates = (settings.entity_gate and req.min_relevance is None
                     and settings.relevance_floor > -1.0)
            subject = subject_of(req.query, (t for t in asked if df[t]), common) \
                if gates else None
            about = subject is not None and subject.words <= common
            masked = (self.embedder.embed([subject.masked])[0]
                      if subject is not None and about else None)
            if masked is not None:
                sims = np.stack([r.vector for r in rows]) @ masked
            terms = set(kept)
            overlap = [(len(terms & r.terms), i) for i, r in enumerate(rows)]
            lexical = sorted((o for o in overlap if o[0] > 0),
                             key=lambda o: (-o[0], rows[o[1]].created_at, rows[o[1]].id))
            if subject is not None and about and lexical and len(
                    (set(asked) - common - subject.words) & rows[lexical[0][1]].terms
            ) < SUBJECT_AGREEMENT:
                informed = 0.0  # one shared everyday word says nothing (core.subject_gate)
            gated = gates and bool(named_words(req.query))
            off = subject is not None and about  # the subject's scope: floors off
            ranked = hybrid_rank_arrays(
                sims.astype(np.float64), [r.id for r in rows],
                exact_top(sims.astype(np.float32), pool).tolist(),
                [i for _, i in lexical[:pool]],
                k=max(req.k, EVIDENCE_DEPTH) if gated or subject else req.k,
                floor=-1.0 if off else settings.relevance_floor,
                lexical_floor=-1.0 if off else settings.lexical_floor,
                demoted=np.array([r.demoted for r in rows], dtype=bool),
                min_relevance=req.min_relevance, tail_gap=None if off else settings.tail_gap,
                lexical_weight=settings.lexical_weight * informed)
            by_id = {r.id: r for r in rows}
            if subject is not None and ranked:
                ranked = self._judged(subject, ranked, rows, by_id, masked)
            elif gated and ranked:
                best = [by_id[s.id] for s in ranked[:EVIDENCE_DEPTH]]
                if not has_evidence(
                        req.query, [lexical_text(r.type, r.stored, r.metadata) for r in best],
                        lambda i: best[i].vector, lambda text: self.embedder.embed([text])[0]):
                    ranked = []
            ranked = ranked[:req.k]
            hits.extend(row_hit(by_id[s.id], s.score, s.relevance, self._name)
                        for s in ranked)
        return RecallResponse(
            results=hits, fusion_used=Fusion.RRF, stores_queried=[self._name],
            latency_ms=int((time.perf_counter() - started) * 1000),
        )

    def _judged(self, subject: Subject, ranked: list[Scored], rows: Sequence[_Row],
                by_id: dict[str, _Row], masked: Any) -> list[Scored]:
        """The subject gate (``core.subject_gate``) on a ranked list: empty unless what the
        question asks beyond its subject finds something. ``masked`` (the masked question's
        vector) is given when it ranked, in a scope about the subject: the masked question is
        then judged among all of the scope's memories and each hit's relevance is its lead
        over their median; else among the memories holding the subject, embedded only when
        the words give no evidence."""
        about = masked is not None
        held = list(rows) if about else [r for r in rows if r.terms & subject.words]
        best = [by_id[s.id] for s in ranked if not s.cut][:EVIDENCE_DEPTH]
        cosines = None
        if not lexical_evidence(subject, [lexical_text(r.type, r.stored, r.metadata)
                                          for r in best]):
            vector = masked if about else self.embedder.embed([subject.masked])[0]
            cosines = (np.stack([r.vector for r in held]) @ vector if held
                       else np.empty(0, dtype=np.float32))
            if not masked_stands_out(cosines):
                return []
        if not about:
            return ranked
        if cosines is None:
            cosines = np.stack([r.vector for r in held]) @ masked
        median = float(np.median(cosines))
        return [replace(s, relevance=subject_relevance(s.cosine, median)) for s in ranked]

    async def neighbours(
        self, agent_id: str, ids: Sequence[str], hops: int, user_id: str | None = None
    ) -> dict[str, dict[str, int]]:
        """Live memories within ``hops`` links of each id, with their hop distance."""
        now = self._clock.now_ms()
        rows = self._visible_in_scope(agent_id, user_id, now)
        live = {r.id for r in rows}
        adjacency = {r.id: [x for x in r.links() if x in live] for r in rows}
        return shortest_hops(adjacency, [i for i in ids if i in live], hops)

    async def health(self) -> Health:
        return Health("ok", {"memories": sum(len(rows) for rows in self._rows.values())})

    async def aclose(self) -> None:
        return None


class _Backend:
    """The in-memory rows as a :class:`RowBackend`; nothing here awaits, so every operation
    is atomic on its event loop."""

    def __init__(self, store: InMemoryStore) -> None:
        self._store = store

    async def scan(self, agent_id: str) -> dict[str, _Row]:
        return dict(self._store._rows.get(agent_id, {}))

    async def fetch(self, agent_id: str, ids: Sequence[str]) -> dict[str, _Row]:
        rows = self._store._rows.get(agent_id, {})
        return {i: rows[i] for i in ids if i in rows}

    async def scan_all(self) -> builtins.list[_Row]:
        return [r for rows in self._store._rows.values() for r in rows.values()]

    def _embed(self, rows: Sequence[Row]) -> Any:
        return self._store.embedder.embed([embed_text(r.type, r.stored) for r in rows])

    async def insert(self, rows: Sequence[Row]) -> None:
        for row in rows:
            check_context(row.metadata)  # refused before any row of the batch is kept
        for row, vec in zip(rows, self._embed(rows), strict=True):
            self._store._rows.setdefault(row.agent_id, {})[row.id] = self._store._indexed(row, vec)

    async def replace(self, changes: Sequence[tuple[_Row, _Row, bool]]) -> builtins.list[_Row]:
        fresh = [new for _, new, text in changes if text]
        vectors = iter(self._embed(fresh) if fresh else [])
        out = []
        for old, new, text in changes:
            if text:
                stored = self._store._indexed(new, next(vectors))
            elif old.metadata.get(CONTEXT_FIELD) != new.metadata.get(CONTEXT_FIELD):
                stored = self._store._indexed(new, new.vector)  # its full-text key changed
            else:
                stored = new
            self._store._rows.setdefault(new.agent_id, {})[new.id] = stored
            out.append(stored)
        return out

    async def erase(self, rows: Sequence[_Row]) -> None:
        for row in rows:
            self._store._rows.get(row.agent_id, {}).pop(row.id, None)
