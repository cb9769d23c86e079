"""A recall's :class:`~memorywire.recall.plan.RecallPlan` run whole inside SqliteStore.

Every search the plan asks (the answer, then a re-ranker's deeper pool), its re-ranking and
the returned hits' statistics run in one worker-thread call and one transaction: a deeper
pool costs no second thread hop or commit, and only the returned hits count as recalled.

The plan re-ranks *views* of the rows (:class:`RowView`: id, content, metadata, creation
time; what its rules read, ``core.timeline.HitView``), and full
:class:`~memorywire.wire.models.RecallHit` objects are built only for the ``k`` it returns.
A question that names someone asks for a pool of 100 to answer 10, and validating 100 hits
(pydantic, typed fields, links) was a large share of such a LoCoMo recall
(docs/benchmarks.md, "lat19c"). The hits returned are built and annotated exactly as
before, so the answer is the same, byte for byte.
"""

from __future__ import annotations

import json
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from memorywire.core.content import content_from_storage
from memorywire.core.context_key import CONTEXT_FIELD
from memorywire.core.entity_gate import EVIDENCE_DEPTH, has_evidence, named_words
from memorywire.core.scoring import Scored, in_relevance_order, through_kth_kept
from memorywire.core.subject_gate import (
    SUBJECT_AGREEMENT,
    Subject,
    lexical_evidence,
    masked_stands_out,
    subject_of,
    subject_relevance,
)
from memorywire.embed.base import Embedder
from memorywire.recall.plan import RecallPlan
from memorywire.recall.settings import RecallSettings
from memorywire.store._vector_cache import ScopeIndex
from memorywire.store.sqlite.contexts import row_lexical_text
from memorywire.store.sqlite.db import COLS, IN_JSON, SqliteDb
from memorywire.store.sqlite.hits import answer_hits
from memorywire.store.sqlite.recalls import STATS_SQL, mark_recalled
from memorywire.store.sqlite.search import rank_scope, scope_words, subject_positions
from memorywire.wire.fields import typed_fields
from memorywire.wire.models import MemoryType, RecallHit, RecallRequest

__all__ = ["KEPT_AGENTS", "KEPT_ROWS", "PlanRunner", "RowView"]

#: A recall's rows (``COLS`` with the recall statistics, which every recall changes, left
#: out: nothing a recall builds reads them) and then the rid.
_ROW_SQL = (f"SELECT {COLS.replace(STATS_SQL, 'NULL, NULL')}, rid "
            f"FROM memories WHERE agent_id = ? AND id IN {IN_JSON}")
#: How many agents' recalled rows (and their views) are kept between recalls ...
KEPT_AGENTS = 8
#: ... and at most how many rows of each (beyond it, an agent's are dropped and read again).
KEPT_ROWS = 2048


class RowView(NamedTuple):
    """A ranked row as the plan's rules see a hit (``core.timeline.HitView``): what a
    :class:`RecallHit` built from the row holds in those fields. Never returned. A tuple:
    a pool builds 100 of them per recall."""

    id: str
    type: MemoryType
    content: str | dict[str, Any]
    metadata: dict[str, Any]
    created_at: int | None
    valid_from: None = None
    valid_to: None = None
    superseded_by: None = None

    @property
    def model_extra(self) -> dict[str, Any]:
        """The typed fields a hit lifts out of its metadata (``lift_typed_fields``: none of
        them is a hit field, so all land here)."""
        return typed_fields(str(self.type), self.metadata)


_TYPES = {t.value: t for t in MemoryType}


def _views(picked: Sequence[Sequence[Any]]) -> list[RowView]:
    """Rows (``COLS``, then the rid) as views; their metadata JSON decoded in one call."""
    if not picked:
        return []
    decoded: list[dict[str, Any]] = json.loads("[" + ",".join(r[5] for r in picked) + "]")
    out = []
    for r, meta in zip(picked, decoded, strict=True):
        if r[13] is not None:
            meta[CONTEXT_FIELD] = r[13]
        mtype = _TYPES[r[3]]
        out.append(RowView(r[0], mtype, content_from_storage(mtype, r[4]), meta, r[8]))
    return out


@dataclass
class _Found:
    """One search's answer: views of its ranked rows (cut rows in their places), each row's
    ranking by id, the ids that count as recalled when returned (held for the core lists)
    and those the floors cut (listed, never returned)."""

    views: list[RowView]
    ranked: dict[str, Scored]
    core: set[str]
    cut: set[str]


_NOTHING = _Found([], {}, set(), set())


class PlanRunner:
    """Runs SqliteStore's recall plans with the store's ranking settings (its search's
    floors, weights and gates; the plan holds the rules')."""

    def __init__(self, db: SqliteDb, embedder: Embedder, name: str,
                 settings: RecallSettings) -> None:
        self._db = db
        self._embedder = embedder
        self._name = name
        self._settings = settings
        #: agent -> (the scope index its rows were read under, those rows by id)
        self._rows: OrderedDict[str, tuple[weakref.ref[ScopeIndex], dict[str, Any]]] = (
            OrderedDict())

    def run(self, plan: RecallPlan, qvec: npt.NDArray[np.float32]) -> list[RecallHit]:
        """The plan's answer (blocking: the store's worker thread calls it)."""
        if self._db.missing():
            return []
        with self._db.tx(durable=False) as conn:
            now = self._db.clock.now_ms()
            index = self._db.index(conn, plan.req.agent_id)
            kept = self._kept(plan.req.agent_id, index)
            nxt: RecallRequest | None = plan.request()
            # what its searches share (they differ only in k); the stamp keys full-text
            # counts this connection may reuse from earlier recalls (fts_units.count_units)
            memo: dict[Any, Any] = {"stamp": self._db.content_stamp(conn)}
            found = _NOTHING
            while nxt is not None:
                found = self._search(conn, index, nxt, qvec, now, memo, kept)
                nxt = plan.deeper(found.views, hidden=found.cut)
            order = plan.order(found.views, hidden=found.cut)
            final = answer_hits(
                in_relevance_order([found.ranked[v.id] for v in order],
                                   plan.req.min_relevance), {v.id: kept[v.id][0] for v in order},
                self._name)
            mark_recalled(conn, [kept[h.id][0][-1] for h in final if h.id in found.core], now)
        return final

    def _kept(self, agent_id: str, index: ScopeIndex) -> dict[str, tuple[Any, RowView]]:
        """The rows (and views) of ``agent_id`` read by earlier recalls, by id, while they
        are still what the database holds: a row changes only in a write that changes the
        scope's version (``SqliteDb.bump``; an append adds rows and changes none), and a new
        version is a new ``index``, so rows kept for another index object are dropped. A
        question that names someone re-ranks 100 rows, most of them read by the
        conversation's earlier questions."""
        entry = self._rows.pop(agent_id, None)
        rows = entry[1] if entry is not None and entry[0]() is index else {}
        if len(rows) > KEPT_ROWS:
            rows = {}
        self._rows[agent_id] = (weakref.ref(index), rows)
        while len(self._rows) > KEPT_AGENTS:
            self._rows.popitem(last=False)
        return rows

    def _search(self, conn: Any, index: ScopeIndex, req: RecallRequest,
                qvec: npt.NDArray[np.float32], now: int, memo: dict[Any, Any],
                kept: dict[str, tuple[Any, RowView]]) -> _Found:
        """One search (``core.scoring.hybrid_rank``'s ``keep_cut``: rows the floors cut keep
        their places for the plan's re-ranking and are never returned). ``kept`` holds the
        rows already read, by this recall or an earlier one of the same scope version."""
        subject = self._subject(conn, index, req, now, memo)
        if subject is not None:
            return self._subject_search(conn, index, req, qvec, now, memo, kept, subject)
        gated = self._entity_gated(req)
        ranked = rank_scope(
            conn, index, req.model_copy(update={"k": max(req.k, EVIDENCE_DEPTH)})
            if gated else req, qvec, now, floor=self._settings.relevance_floor,
            lexical_floor=self._settings.lexical_floor, tail_gap=self._settings.tail_gap,
            lexical_weight=self._settings.lexical_weight,
            feedback_weight=self._settings.feedback_weight, memo=memo)
        if not ranked:
            return _NOTHING
        self._read(conn, req.agent_id, ranked, kept)
        if gated and not self._answers(
                req.query, [kept[s.id][0] for s in ranked if not s.cut], index):
            return _NOTHING
        ranked = through_kth_kept(ranked, req.k)
        return _Found([kept[s.id][1] for s in ranked], {s.id: s for s in ranked},
                      {s.id for s in ranked if s.core}, {s.id for s in ranked if s.cut})

    def _gates(self, req: RecallRequest) -> bool:
        """Whether the store's floors decide "nothing relevant" for this recall (no caller
        ``min_relevance``, floors not switched off, the gates on)."""
        return (self._settings.entity_gate and req.min_relevance is None
                and self._settings.relevance_floor > -1.0)

    def _subject(self, conn: Any, index: ScopeIndex, req: RecallRequest, now: int,
                 memo: dict[Any, Any]) -> Subject | None:
        """The question's subject (``core.subject_gate``) when the gates apply: names the
        scope holds and words most of the scope holds."""
        if not self._gates(req):
            return None
        _, ((units, _), _), common = scope_words(conn, index, req, now, memo)
        if not memo["positions"].size:
            return None
        known = {u[1:-1] for u in units if u.startswith('"') and u.endswith('"')} | common
        return subject_of(req.query, known, common)

    def _subject_search(self, conn: Any, index: ScopeIndex, req: RecallRequest,
                        qvec: npt.NDArray[np.float32], now: int, memo: dict[Any, Any],
                        kept: dict[str, tuple[Any, RowView]], subject: Subject) -> _Found:
        """A question about a subject the scope holds (``core.subject_gate``): ranked with
        the floors off, and empty unless what it asks beyond the subject finds something.

        When every subject word is held by most of the scope (the scope is *about* the
        subject: one user's memories), the subject tells no memory apart, so the vector
        list ranks by the masked question, the full-text list counts only when its best row
        shares two of the other words, and ``relevance`` says how far a hit stands above the
        scope's typical memory for the masked question."""
        settings = self._settings
        about = subject.words <= memo["common"]
        if about:
            ranked = rank_scope(
                conn, index, req.model_copy(update={"k": max(req.k, EVIDENCE_DEPTH)}),
                self._masked(subject, memo), now, floor=-1.0, lexical_floor=-1.0, tail_gap=None,
                lexical_weight=settings.lexical_weight,
                feedback_weight=settings.feedback_weight, memo=memo,
                lexical_agreement=SUBJECT_AGREEMENT, skip_words=subject.words)
        else:
            ranked = rank_scope(
                conn, index, req.model_copy(update={"k": max(req.k, EVIDENCE_DEPTH)}),
                qvec, now, floor=settings.relevance_floor,
                lexical_floor=settings.lexical_floor, tail_gap=settings.tail_gap,
                lexical_weight=settings.lexical_weight,
                feedback_weight=settings.feedback_weight, memo=memo)
        if not ranked:
            return _NOTHING
        self._read(conn, req.agent_id, ranked, kept)
        # The memories the masked question is judged among: in a scope about the subject,
        # all of them (a procedure's steps or a memory saying "she" hold no name but may
        # answer); else those holding the subject (another person's "favourite film" does
        # not answer a question about this one's).
        held = memo["positions"] if about else subject_positions(
            conn, index, subject.words, memo)
        rows = [kept[s.id][0] for s in ranked if not s.cut][:EVIDENCE_DEPTH]
        texts = [row_lexical_text(r[3], r[4], r[5], r[13]) for r in rows]
        # The model is asked for the masked question only when it ranks or the words alone
        # give no evidence.
        if not lexical_evidence(subject, texts) and not masked_stands_out(
                index.matrix[held] @ self._masked(subject, memo)):
            return _NOTHING
        ranked = through_kth_kept(ranked, req.k)
        if about:
            median = float(np.median(index.matrix[held] @ self._masked(subject, memo)))
            ranked = [replace(s, relevance=subject_relevance(s.cosine, median))
                      for s in ranked]
        return _Found([kept[s.id][1] for s in ranked], {s.id: s for s in ranked},
                      {s.id for s in ranked if s.core}, {s.id for s in ranked if s.cut})

    def _masked(self, subject: Subject, memo: dict[Any, Any]) -> npt.NDArray[np.float32]:
        """The masked question's vector, embedded once per recall."""
        if "masked" not in memo:
            memo["masked"] = self._embedder.embed([subject.masked])[0]
        vector: npt.NDArray[np.float32] = memo["masked"]
        return vector

    def _read(self, conn: Any, agent_id: str, ranked: Sequence[Scored],
              kept: dict[str, tuple[Any, RowView]]) -> None:
        """Read the rows of ``ranked`` not yet in ``kept``."""
        missing = [s.id for s in ranked if s.id not in kept]
        if missing:
            rows = conn.execute(_ROW_SQL, (agent_id, json.dumps(missing))).fetchall()
            kept.update(zip((r[0] for r in rows), zip(rows, _views(rows), strict=True),
                            strict=True))

    def _entity_gated(self, req: RecallRequest) -> bool:
        """Whether this recall's list faces the entity-masked evidence rule
        (``core.entity_gate``): only when the store's floors decide "nothing relevant" (no
        caller ``min_relevance``, floors not switched off) and the query writes a name."""
        return (self._settings.entity_gate and req.min_relevance is None
                and self._settings.relevance_floor > -1.0
                and bool(named_words(req.query)))

    def _answers(self, query: str, rows: Sequence[Any], index: ScopeIndex) -> bool:
        texts = [row_lexical_text(r[3], r[4], r[5], r[13]) for r in rows[:EVIDENCE_DEPTH]]
        return has_evidence(query, texts,
                            lambda i: index.matrix[index.pos[rows[i][-1]]],
                            lambda text: self._embedder.embed([text])[0])
