"""One recall's ranking inside SqliteStore: exact scoped k-NN plus FTS5 BM25, fused by RRF.

Full-text side. Each query word is searched as itself OR, when it has at least
``PREFIX_MIN_WORD`` letters, as a prefix of its first ``PREFIX_LEN`` letters (truncation
stemming). Porter stemming alone keeps "allergic" (stem ``allerg``) apart from "allergies"
(``allergi``) and "intolerant" from "intolerance" only by luck; a six-letter prefix joins
such families. The relevance floor still applies to lexical hits (see ``lexical_floor``).

Cost. FTS5 cannot stop a BM25 ranking early: ``bm25()`` first counts every row of every
phrase (its idf) and then scores every matching row, so one common word ("since", "march")
makes a recall pay for tens of thousands of rows at 100k memories, and the scope token costs
one pass over all of the agent's rows. Such a word carries almost no BM25 signal anyway. So
each query unit (a quoted word or a prefix) is first counted, capped at ``LEXICAL_BUDGET``
rows (a count is ~15x cheaper per row than a ranking), and units are kept rarest first while
their rows add up to at most ``LEXICAL_BUDGET``; the rest are dropped, and when none is left
the lexical leg is skipped. A store with at most ``LEXICAL_BUDGET`` rows never drops a word.
When the kept units match fewer rows than the agent holds, the scope token is left out of the
MATCH and every match is fetched (at most the budget), then filtered to the scope by the
caller: the ranking is the same (the scope column has weight 0 and idf is table-wide).

Rows outside the user/type/filter/freshness scope are masked out *before* the top-k, so
another user's or agent's closer vectors can never crowd a result out. Only the cosines of
the candidates are materialised as Python objects, so a 100k-row scope costs one matrix
product and a partial sort, not 100k dictionary entries.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from typing import Any

import numpy as np
import numpy.typing as npt

from memorywire.core.clock import DAY_MS
from memorywire.core.fields import matches_where
from memorywire.core.filters import matches_filter
from memorywire.core.informative import (  # re-exported: the shared rule of every store
    COMMON_SHARE,
    INFORMATIVE_SHARE,
    SHARE_MIN_SCOPE,
    is_common,
    weigh_units,
)
from memorywire.core.scoring import (
    AGREEMENT_DEPTH,
    AGREEMENT_WORDS,
    RRF_K,
    Scored,
    candidate_pool,
    exact_top,
    hybrid_rank_arrays,
)
from memorywire.core.textsearch import query_terms
from memorywire.store._vector_cache import ScopeIndex
from memorywire.store.sqlite.contexts import CONTEXT_SQL, metadata_of
from memorywire.store.sqlite.feedback import FEEDBACK_MAX_ROWS, feedback_query
from memorywire.store.sqlite.fts_lists import (  # ranged_scores: re-exported
    FirstRound,
    feedback_ranked,
    first_ranked,
    first_round,
    ranged_scores,
)
from memorywire.store.sqlite.fts_units import (
    COMMON_TTL_S,
    PREFIX_LEN,
    PREFIX_MIN_WORD,
    UnitRows,
    count_units,
    held_words,
    word_units,
)
from memorywire.store.sqlite.fts_units import quote as _quote
from memorywire.store.sqlite.schema import scope_token
from memorywire.wire.models import RecallRequest

__all__ = [
    "COMMON_SHARE",
    "COMMON_TTL_S",
    "INFORMATIVE_SHARE",
    "LEXICAL_BUDGET",
    "PREFIX_LEN",
    "PREFIX_MIN_WORD",
    "RANGE_SLACK",
    "SQLITE_LEXICAL_FLOOR",
    "in_range",
    "informative_units",
    "lexical_query",
    "lexical_rids",
    "lexical_units",
    "ranged_scores",
    "rank_scope",
    "scope_words",
    "shared_words",
    "subject_positions",
]

#: Default cosine floor for rows this full-text query also matches (default MiniLM model),
#: calibrated on the held-out off-topic questions of benchmarks/corpus/calibration.jsonl:
#: the lowest value that lets through no question the plain floor (0.36) rejects, i.e. the
#: best cosine such a question reaches on a row it matches here (0.298) + 0.02.
SQLITE_LEXICAL_FLOOR = 0.32
#: Most full-text rows one recall may rank (summed over its kept words and prefixes).
LEXICAL_BUDGET = 4000
#: A recall bounds its full-text match by the agent's row-id range instead of its scope token
#: while the range spans at most this many times the rows the agent holds.
RANGE_SLACK = 2
#: How deep each first-round list is read to pick pseudo-relevance feedback seeds.
SEED_SCAN = 20


def _units(text: str) -> list[str]:
    return [u for term in query_terms(text) for u in word_units(term)]


def _count_words(conn: Any, words: Sequence[str], cap: int, stamp: Any) -> list[int]:
    """Rows each word (itself, no prefix) matches, up to ``cap``: one statement."""
    return count_units(conn, [_quote(w) for w in words], cap, stamp)


def lexical_query(text: str) -> str | None:
    """A safe FTS5 expression: every content word quoted (never an operator), ORed."""
    units = _units(text)
    return " OR ".join(units) if units else None


def lexical_units(conn: Any, text: str, budget: int | None = None,
                  none: UnitRows | None = None, stamp: Any = None) -> tuple[list[str], int]:
    """The query units worth ranking, rarest first, and the rows they match at most.

    A unit matching no row is dropped (it cannot rank anything; recorded in ``none`` when
    given); the others are kept in ascending row count while the running total stays within
    ``budget`` (default ``LEXICAL_BUDGET``, read at call time). All units are counted in one
    statement (:func:`~memorywire.store.sqlite.fts_units.count_units`, with ``stamp``).
    """
    budget = LEXICAL_BUDGET if budget is None else budget
    units = _units(text)
    counted = [(n, i, u) for i, (u, n) in enumerate(
        zip(units, count_units(conn, units, budget + 1, stamp), strict=True))]
    kept: list[str] = []
    total = 0
    for n, _, unit in sorted(counted):
        if n == 0:
            if none is not None:
                none.none([unit])
            continue
        if total + n > budget:
            break
        kept.append(unit)
        total += n
    return kept, total


def informative_units(conn: Any, units: tuple[list[str], int], index: ScopeIndex,
                      mask: npt.NDArray[np.bool_], scope_rows: int,
                      rid_range: tuple[int, int], common: list[str] | None = None,
                      rows: UnitRows | None = None) -> tuple[tuple[list[str], int], float]:
    """The kept units that tell the recall's scope apart, and the weight their list earns.

    Each unit's document frequency *in the scope* (``mask``: the user, types and filters of
    the recall) is read from the full-text index within the agent's row-id range (the units
    held by too much of it are appended to ``common`` when given); FTS5's
    own idf is table-wide, so a name held by every memory of one user among many users looks
    rare to BM25. The rule that reads the counts is every store's
    (:func:`memorywire.core.informative.weigh_units`): a unit in more than ``COMMON_SHARE`` of
    the scope is dropped, and the list weighs its best remaining unit's scope idf relative to a
    rare unit's. The row total of the kept units stays an upper bound (units are only
    dropped), which is all :func:`lexical_rids` needs. The units' rows in the range are read
    in one statement, into ``rows`` when given (a recall's, for its later questions)."""
    kept, matched = units
    if not kept or scope_rows < SHARE_MIN_SCOPE:
        return units, 1.0
    rows = UnitRows(conn, rid_range) if rows is None else rows
    if scope_rows == index.n and _contiguous(index, rid_range):
        # Every row id of the range is one of the scope's rows: a unit's rows in the range
        # are its rows in the scope, and counting them is all the rule needs.
        counts = dict(zip(kept, rows.count(kept), strict=True))
        in_scope: Callable[[str], int] = counts.__getitem__
    else:
        in_range = dict(zip(kept, rows.of(kept), strict=True))

        def in_scope(unit: str) -> int:
            found = index.positions_of(in_range[unit])
            return int(mask[found].sum()) if found.size else 0

    def scope_df(unit: str) -> int:
        df = in_scope(unit)
        if common is not None and is_common(df, scope_rows):
            common.append(unit)
        return df

    out, weight = weigh_units(kept, scope_df, scope_rows)
    return (out, matched if out else 0), weight


def _contiguous(index: ScopeIndex, rid_range: tuple[int, int]) -> bool:
    """Whether the index holds every row id of ``rid_range`` (its own range): an agent
    written alone, or in batches no other agent's write fell between."""
    return index.rids_ascending and rid_range[1] - rid_range[0] + 1 == index.n


def lexical_rids(
    conn: Any, agent_id: str, text: str, limit: int, *, scope_rows: int | None = None,
    units: tuple[list[str], int] | None = None, rid_range: tuple[int, int] | None = None,
) -> list[int]:
    """Rows matching ``text`` in full text, best BM25 first.

    With ``scope_rows`` (how many rows the agent holds) unknown, or at least the rows the
    kept units match, the MATCH carries the agent's scope token and only the agent's rows
    come back. Otherwise the scope token would cost more than it saves: every match of any
    agent comes back (at most ``LEXICAL_BUDGET``) and the caller must filter to its scope.
    ``units`` (kept units and their row total, as :func:`lexical_units` returns) skips
    counting ``text`` again.

    ``rid_range`` (the lowest and highest row id the agent holds, with ``scope_rows``) bounds
    the MATCH by rowid, so FTS5 skips every match outside it before scoring. Unscoped, that
    saves scoring and sorting the matches of every other agent in the file; in place of the
    scope token, when the range spans at most ``RANGE_SLACK`` times the agent's rows (an
    agent written in batches, as a conversation is), it saves the token's pass over all of
    the agent's rows (bm25 counts every phrase's rows, the token's too): a MATCH about a fifth
    cheaper on LoCoMo. Every match in the range comes back (at most ``matched``) and the
    caller filters to its scope, so the agent's rows keep their order: a BM25 score does not
    depend on which other rows are scored (idf and mean length are table-wide, the scope
    column weighs 0).
    """
    kept, matched = lexical_units(conn, text) if units is None else units
    if not kept:
        return []
    if rid_range is not None and in_range(scope_rows, matched, rid_range):
        return [rid for rid, _ in ranged_scores(conn, kept, matched, rid_range)]
    match = " OR ".join(kept)
    order = "ORDER BY bm25(memories_fts, 1.0, 0.0) LIMIT ?"
    unscoped = scope_rows is not None and scope_rows > matched
    if unscoped:
        expr, limit = f"body : ({match})", matched
    else:
        expr = f'scope : "{scope_token(agent_id)}" AND body : ({match})'
    return [r[0] for r in conn.execute(
        f"SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? {order}", (expr, limit))]


def in_range(scope_rows: int | None, matched: int, rid_range: tuple[int, int]) -> bool:
    """Whether :func:`lexical_rids` bounds a MATCH of units matching ``matched`` rows by the
    agent's row-id range (``rid_range``) rather than by its scope token."""
    return scope_rows is not None and (
        scope_rows > matched or rid_range[1] - rid_range[0] < RANGE_SLACK * scope_rows)


def shared_words(rows: UnitRows, rid: int, text: str, enough: int,
                 common: frozenset[str] = frozenset()) -> int:
    """How many distinct content words of ``text`` row ``rid``'s full-text key holds
    (a word counts when it or its six-letter prefix matches), counting up to ``enough``;
    ``common`` words (held by most of the scope, see :func:`informative_units`) never
    count. ``rows``: the recall's unit rows, ``rid`` inside their range."""
    return rows.shared_words(rid, text, enough, common)


def _agreement(rows: UnitRows, rid_of: dict[str, int], text: str,
               common: frozenset[str]) -> Callable[[Sequence[str]], bool]:
    """The list gate's rescue (``core.scoring.hybrid_rank``): does one of these vector hits
    share ``AGREEMENT_WORDS`` distinct informative words with the query? Asked only when no
    hit clears the floors; each word's rows in the agent's range are read at most once per
    recall (most already were, to count the scope's words), so the rescue is set lookups."""
    def agree(ids: Sequence[str]) -> bool:
        asked = [rid_of[i] for i in ids if i in rid_of]
        if not asked:
            return False
        words = rows.word_rows(text, common)  # the words' rows, read once for every hit
        return any(held_words(words, rid, AGREEMENT_WORDS) >= AGREEMENT_WORDS
                   for rid in asked)
    return agree


def _mask(conn: Any, index: ScopeIndex, req: RecallRequest, now: int) -> npt.NDArray[np.bool_]:
    mask = index.eligible(
        now, user_id=req.user_id, types=req.types,
        fresher_than_ms=None if req.fresher_than_days is None
        else now - req.fresher_than_days * DAY_MS,
    )
    if req.filter or req.where:
        candidates = np.flatnonzero(mask)
        rids = index.rids[candidates].tolist()
        rows = {rid: (mtype, meta, context) for rid, mtype, meta, context in conn.execute(
            f"SELECT rid, type, metadata, {CONTEXT_SQL} FROM memories "
            "WHERE rid IN (SELECT value FROM json_each(?))", (json.dumps(rids),))}
        for i, rid in zip(candidates.tolist(), rids, strict=True):
            mtype, meta, context = rows[rid]
            metadata = metadata_of(meta, context)
            if not (matches_filter(metadata, req.filter)
                    and matches_where(mtype, metadata, req.where)):
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
    tail_gap: float | None = None,
    lexical_weight: float = 1.0,
    feedback_weight: float = 0.0,
    memo: dict[Any, Any] | None = None,
    lexical_agreement: int = 0,
    skip_words: frozenset[str] = frozenset(),
) -> list[Scored]:
    """The recall's ranked rows; with ``feedback_weight`` > 0 a second full-text round
    expanded from the first round's best hits joins the fusion after the list gate
    (:mod:`memorywire.store.sqlite.feedback`). Rows the tail floor cuts stay in their
    places marked ``cut`` (``hybrid_rank``'s ``keep_cut``): the caller must leave them out.

    ``memo`` (an empty dict, then passed again) lets searches that differ only in ``k``,
    in one read transaction (a re-ranker's deeper pool), share what does not depend on
    ``k``: the scope mask, the cosines, the full-text counts and MATCHes, the feedback
    words, the full-text lists' rows in scope (read as deep as the deepest search). Each
    is a pure function of its inputs and the transaction's snapshot, so every ranking
    stays exactly what a fresh search returns.

    ``lexical_agreement`` (0: off): the full-text list counts only when its best row shares
    that many distinct query words, not counting ``skip_words`` or words most of the scope
    holds; otherwise its weight is 0 (one shared everyday word says nothing in a scope of
    short facts, where rank-only fusion lets it outvote the vector list)."""
    memo = {} if memo is None else memo

    def once(key: Any, make: Callable[[], Any]) -> Any:
        if key not in memo:
            memo[key] = make()
        return memo[key]

    mask: npt.NDArray[np.bool_] = once("mask", lambda: _mask(conn, index, req, now))
    positions: npt.NDArray[np.intp] = once("positions", lambda: np.flatnonzero(mask))
    if positions.size == 0:
        return []
    pool = candidate_pool(req.k)
    full = positions.size == index.n
    sims: npt.NDArray[np.float32] = once("sims", lambda: (
        index.matrix @ qvec if full else index.matrix[positions] @ qvec))
    top = positions[exact_top(sims.astype(np.float32, copy=False), pool)].tolist()
    rid_range = _rid_range(index, memo)
    _, (units, informed), common = scope_words(conn, index, req, now, memo)
    # In range, the first round keeps every match's score: the feedback round then ranks
    # only its new words' rows (see feedback.fused_scores).
    scored: FirstRound | None = once("scored", lambda: (
        first_round(conn, units[0], units[1], rid_range, memo.get("stamp"))
        if in_range(index.n, units[1], rid_range) else None))
    # Ranged, a list is the same for every search of the recall: its scan is shared.
    lexical = once("lexical", lambda: _ScopeScan(
        first_ranked(scored), index, mask)).first(pool) if scored is not None else \
        _in_scope(lexical_rids(conn, req.agent_id, req.query, max(20 * pool, 1000),
                               scope_rows=index.n, units=units, rid_range=rid_range),
                  index, mask, pool)
    feedback: list[int] = []
    # Feedback expands the query's own words: a query of stop words has none, and its
    # ranking stays the vector ranking.
    if feedback_weight > 0 and units[0]:
        seeds = tuple(index.rids[_seeds(top, lexical, lexical_weight * informed)].tolist())
        words = once(("words", seeds), lambda: feedback_query(
            conn, lambda w, cap: _count_words(conn, [w], cap, memo.get("stamp"))[0],
            req.query, list(seeds),
            count_many=lambda ws, cap: _count_words(conn, ws, cap, memo.get("stamp"))))
        if words:
            more = [_quote(w) for w in words]
            both = ([*units[0], *more], units[1] + FEEDBACK_MAX_ROWS * len(more))
            feedback = once(("fed", tuple(more)), lambda: _ScopeScan(feedback_ranked(
                conn, scored, more, both[1] - units[1], rid_range, memo.get("stamp")),
                index, mask)).first(pool) \
                if scored is not None and in_range(index.n, both[1], rid_range) else \
                _in_scope(lexical_rids(conn, req.agent_id, "", max(20 * pool, 1000),
                                       scope_rows=index.n, units=both, rid_range=rid_range),
                          index, mask, pool)
    if lexical and lexical_agreement and shared_words(
            memo["unit_rows"], int(index.rids[lexical[0]]), req.query, lexical_agreement,
            common | frozenset(skip_words)) < lexical_agreement:
        informed = 0.0
    candidates = list(dict.fromkeys([*top, *lexical, *feedback]))
    slot = {p: i for i, p in enumerate(candidates)}  # top's slots are 0..len(top)-1
    at = np.searchsorted(positions, np.asarray(candidates, dtype=np.int64))
    ids = index.ids
    head = top[:AGREEMENT_DEPTH]  # the vector hits the list gate's rescue may ask about
    return hybrid_rank_arrays(
        sims[at].astype(np.float64), [ids[p] for p in candidates], range(len(top)),
        [slot[p] for p in lexical], k=req.k, floor=floor, lexical_floor=lexical_floor,
        demoted=index.demoted[candidates], min_relevance=req.min_relevance,
        tail_gap=tail_gap,
        agreement=_agreement(
            memo["unit_rows"], dict(zip([ids[p] for p in head], index.rids[head].tolist(),
                                          strict=True)),
            req.query, common),
        lexical_weight=lexical_weight * informed, feedback_ranked=[slot[p] for p in feedback],
        feedback_weight=feedback_weight, keep_cut=True)


def scope_words(conn: Any, index: ScopeIndex, req: RecallRequest, now: int,
                memo: dict[Any, Any]) -> tuple[tuple[list[str], int],
                                               tuple[tuple[list[str], int], float],
                                               frozenset[str]]:
    """The query's full-text units (as :func:`lexical_units` counts them), those that tell
    the recall's scope apart with their list's weight (:func:`informative_units`), and the
    query words most of the scope holds (``COMMON_SHARE``: left out of the list). Kept in
    ``memo`` (see :func:`rank_scope`), so the recall runner reads them for free."""
    if "common" not in memo:
        mask = memo["mask"] if "mask" in memo else memo.setdefault(
            "mask", _mask(conn, index, req, now))
        positions = memo.setdefault("positions", np.flatnonzero(mask))
        if not positions.size:  # nothing in scope: nothing to count
            memo.setdefault("counted", ([], 0))
            memo.setdefault("units", (([], 0), 0.0))
            memo["common"] = frozenset()
            return memo["counted"], memo["units"], memo["common"]
        rid_range = _rid_range(index, memo)
        rows = memo.setdefault("unit_rows", UnitRows(conn, rid_range, memo.get("stamp")))
        counted = memo.setdefault("counted", lexical_units(
            conn, req.query, none=rows, stamp=memo.get("stamp")))
        held: list[str] = []
        memo.setdefault("units", informative_units(
            conn, counted, index, mask, int(positions.size), rid_range, held, rows))
        memo["common"] = frozenset(t for t in query_terms(req.query) if _quote(t) in held)
    return memo["counted"], memo["units"], memo["common"]


def _rid_range(index: ScopeIndex, memo: dict[Any, Any]) -> tuple[int, int]:
    """The lowest and highest row id the agent holds, once per recall (``memo``)."""
    if "rid_range" not in memo:
        rids = index.rids
        memo["rid_range"] = (int(rids.min()), int(rids.max()))
    rid_range: tuple[int, int] = memo["rid_range"]
    return rid_range


def subject_positions(conn: Any, index: ScopeIndex, words: Iterable[str],
                      memo: dict[Any, Any], cap: int = 4096) -> npt.NDArray[np.intp]:
    """Index positions of the recall's scope rows (``memo``'s mask) holding any of
    ``words`` in full text, at most ``cap`` of them."""
    mask: npt.NDArray[np.bool_] = memo["mask"]
    rows: UnitRows = memo["unit_rows"]
    held = sorted(frozenset().union(*rows.of([_quote(w) for w in sorted(words)])))
    get = index.pos.get
    found = [p for p in map(get, held[:4 * cap]) if p is not None]
    at = np.asarray(found, dtype=np.intp)
    return at[mask[at]][:cap] if at.size else at


def _in_scope(rids: Iterable[int], index: ScopeIndex, mask: npt.NDArray[np.bool_],
              pool: int) -> list[int]:
    """Index positions of the first ``pool`` of ``rids`` inside the recall's scope."""
    return _ScopeScan(rids, index, mask).first(pool)


class _ScopeScan:
    """A ranked list's rows mapped to index positions inside the recall's scope, read only
    as deep as a search needs and kept for a deeper search of the same recall (the first
    ``pool`` of a longer prefix are the first ``pool``).

    Looked up a chunk at a time (a list comprehension of positions, the scope mask applied
    by numpy): a re-ranker's pool walks ~400 rows per list, and one numpy scalar read per
    row cost more than the lookup itself. A chunk is what is still missing (at least 64):
    the feedback list is a merge computed row by row, and reading twice the pool cost twice
    the rows."""

    def __init__(self, rids: Iterable[int], index: ScopeIndex,
                 mask: npt.NDArray[np.bool_]) -> None:
        self._rest = iter(rids)
        self._get = index.pos.get
        self._mask = mask
        self._found: list[int] = []
        self._done = False

    def first(self, pool: int) -> list[int]:
        out = self._found
        while len(out) < pool and not self._done:
            block = list(islice(self._rest, max(pool - len(out), 64)))
            if not block:
                self._done = True
                break
            found = [p for p in map(self._get, block) if p is not None]
            if found:
                at = np.asarray(found, dtype=np.intp)
                out.extend(at[self._mask[at]].tolist())
        return out[:pool]


def _seeds(top: Sequence[int], lexical: Sequence[int], lexical_weight: float) -> list[int]:
    """The first round's best positions for pseudo-relevance feedback: RRF over the first
    ``SEED_SCAN`` of each list (a row further down adds at most 1/(RRF_K + SEED_SCAN), too
    little to lift it into the top few), so the full fusion runs once."""
    fused: dict[int, float] = {}
    for rank, p in enumerate(top[:SEED_SCAN]):
        fused[p] = fused.get(p, 0.0) + 1.0 / (RRF_K + rank)
    for rank, p in enumerate(lexical[:SEED_SCAN]):
        fused[p] = fused.get(p, 0.0) + lexical_weight / (RRF_K + rank)
    return sorted(fused, key=lambda p: (-fused[p], p))[:SEED_SCAN]
