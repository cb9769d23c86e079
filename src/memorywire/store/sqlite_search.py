"""One recall's ranking inside SqliteStore: exact scoped k-NN plus FTS5 BM25, fused by RRF.

Full-text side. Each query word is searched as itself OR, when it has at least
``PREFIX_MIN_WORD`` letters, as a prefix of its first ``PREFIX_LEN`` letters (truncation
stemming). Porter stemming alone keeps "allergic" (stem ``allerg``) apart from "allergies"
(``allergi``) and "intolerant" from "intolerance" only by luck; a six-letter prefix joins
such families. The relevance floor still applies to lexical hits (see ``lexical_floor``).

Rows outside the user/type/filter/freshness scope are masked out *before* the top-k, so
another user's or agent's closer vectors can never crowd a result out. Only the cosines of
the candidates are materialised as Python objects, so a 100k-row scope costs one matrix
product and a partial sort, not 100k dictionary entries.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import numpy.typing as npt

from memorywire.core.clock import DAY_MS
from memorywire.core.filters import matches_filter
from memorywire.core.scoring import DEMOTE_FACTOR, Scored, candidate_pool, exact_top, hybrid_rank
from memorywire.core.textsearch import query_terms
from memorywire.store._vector_cache import ScopeIndex
from memorywire.store.sqlite_schema import scope_token
from memorywire.wire.models import RecallRequest

__all__ = [
    "PREFIX_LEN",
    "PREFIX_MIN_WORD",
    "SQLITE_LEXICAL_FLOOR",
    "lexical_query",
    "lexical_rids",
    "rank_scope",
]

PREFIX_LEN = 6
PREFIX_MIN_WORD = 7
#: Default cosine floor for rows this full-text query also matches (default MiniLM model),
#: calibrated on the held-out off-topic questions of benchmarks/corpus/calibration.jsonl:
#: the lowest value that lets through no question the plain floor (0.36) rejects, i.e. the
#: best cosine such a question reaches on a row it matches here (0.298) + 0.02.
SQLITE_LEXICAL_FLOOR = 0.32


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def lexical_query(text: str) -> str | None:
    """A safe FTS5 expression: every content word quoted (never an operator), ORed."""
    parts = []
    for term in query_terms(text):
        if len(term) >= PREFIX_MIN_WORD:
            parts.append(f"{_quote(term)} OR {_quote(term[:PREFIX_LEN])}*")
        else:
            parts.append(_quote(term))
    return " OR ".join(parts) if parts else None


def lexical_rids(conn: Any, agent_id: str, text: str, limit: int) -> list[int]:
    """The agent's rows matching ``text`` in full text, best BM25 first."""
    match = lexical_query(text)
    if match is None:
        return []
    expr = f'scope : "{scope_token(agent_id)}" AND body : ({match})'
    return [r[0] for r in conn.execute(
        "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
        "ORDER BY bm25(memories_fts, 1.0, 0.0) LIMIT ?", (expr, limit))]


def _mask(conn: Any, index: ScopeIndex, req: RecallRequest, now: int) -> npt.NDArray[np.bool_]:
    mask = index.eligible(
        now, user_id=req.user_id, types=req.types,
        fresher_than_ms=None if req.fresher_than_days is None
        else now - req.fresher_than_days * DAY_MS,
    )
    if req.filter:
        candidates = np.flatnonzero(mask)
        rids = index.rids[candidates].tolist()
        metadata = dict(conn.execute(
            "SELECT rid, metadata FROM memories WHERE rid IN (SELECT value FROM json_each(?))",
            (json.dumps(rids),)).fetchall())
        for i, rid in zip(candidates.tolist(), rids, strict=True):
            if not matches_filter(json.loads(metadata[rid]), req.filter):
                mask[i] = False
    return mask


def rank_scope(
    conn: Any,
    index: ScopeIndex,
    req: RecallRequest,
    qvec: npt.NDArray[np.float32],
    now: int,
    *,
    floor: float,
    lexical_floor: float,
) -> list[Scored]:
    mask = _mask(conn, index, req, now)
    positions = np.flatnonzero(mask)
    if positions.size == 0:
        return []
    pool = candidate_pool(req.k)
    full = positions.size == index.n
    sims = index.matrix @ qvec if full else index.matrix[positions] @ qvec
    top = positions[exact_top(sims.astype(np.float32, copy=False), pool)].tolist()
    lexical: list[int] = []
    for rid in lexical_rids(conn, req.agent_id, req.query, max(20 * pool, 1000)):
        p = index.pos.get(rid)
        if p is not None and mask[p]:
            lexical.append(p)
            if len(lexical) >= pool:
                break
    candidates = list(dict.fromkeys([*top, *lexical]))
    at = np.searchsorted(positions, np.asarray(candidates, dtype=np.int64))
    cos = sims[at].tolist()
    ids = index.ids
    cosines = {ids[p]: c for p, c in zip(candidates, cos, strict=True)}
    demoted = index.demoted
    factors = {ids[p]: DEMOTE_FACTOR for p in candidates if demoted[p]}
    return hybrid_rank(cosines, [ids[p] for p in top], [ids[p] for p in lexical], k=req.k,
                       floor=floor, lexical_floor=lexical_floor, factors=factors)
