"""A recall's BM25 lists as numpy arrays, ordered by numpy instead of SQLite's sorter.

A hybrid recall over a large scope ranks every full-text match in the agent's row-id range
(up to ``search.LEXICAL_BUDGET`` rows) because the feedback round's fusion needs every
first-round score (``feedback.fused_scores``). Asked with ``ORDER BY bm25(...)``, SQLite
copies each of those rows into its sorter and sorts them record by record, the rows come
back as thousands of Python tuples (enough to set off the garbage collector), and the feedback
round then put every score into a Python dict: at 100k memories a large share of the list's
cost beside FTS5's scoring itself (docs/benchmarks.md, "hybrid35c").

Here the MATCH returns its rows unsorted (FTS5 yields them in ascending row id) and one
stable numpy sort orders them by score, ties by row id: the order SQLite's sort gives (both
compare the same doubles; ``tests/unit/test_fts_lists.py`` checks the two orders agree on a
real index full of tied scores). The feedback round's list is built the same way: the added
words' scores added to the first round's by array lookups, then one sort by (score, row id),
which is what merging the unmoved rows with the moved ones by that key gives.

Only for long lists (``NUMPY_MIN_ROWS``): on a list of a few hundred rows numpy's fixed
costs outweigh the sort it saves, and a small scope's recall keeps SQLite's sorted list and
``feedback.fused_scores`` exactly as before. Either way the order is the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt

from memorywire.store.sqlite.bm25_terms import summed_list
from memorywire.store.sqlite.feedback import fused_scores

__all__ = [
    "NUMPY_MIN_ROWS",
    "FirstRound",
    "ScoredList",
    "feedback_ranked",
    "first_ranked",
    "first_round",
    "fused_ranking",
    "range_list",
    "ranged_scores",
]

#: A first-round list whose units match at least this many rows (an upper bound of its
#: length) is read unsorted and ordered by numpy; a shorter one is sorted by SQLite, which
#: is cheaper below about a thousand rows (docs/benchmarks.md, "hybrid35c").
NUMPY_MIN_ROWS = 1024

_NO_RIDS: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
_NO_SCORES: npt.NDArray[np.float64] = np.zeros(0, dtype=np.float64)


class ScoredList:
    """Rows and their BM25 scores (FTS5's sign: lower is better), best first (``ranked``,
    ``scores``; equal scores in ascending row id), and a score lookup by row id."""

    __slots__ = ("_by_rid", "_rid_scores", "ranked", "scores")

    def __init__(self, rids: npt.NDArray[np.int64], scores: npt.NDArray[np.float64]) -> None:
        order = np.lexsort((rids, scores))
        self.ranked: npt.NDArray[np.int64] = rids[order]
        self.scores: npt.NDArray[np.float64] = scores[order]
        by_rid = np.argsort(rids, kind="stable")
        self._by_rid: npt.NDArray[np.int64] = rids[by_rid]
        self._rid_scores: npt.NDArray[np.float64] = scores[by_rid]

    def __len__(self) -> int:
        return int(self.ranked.size)

    def score_of(self, rids: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """Each row's score, 0.0 for a row not in the list (a phrase it lacks adds 0)."""
        out = np.zeros(rids.size, dtype=np.float64)
        if not self._by_rid.size or not rids.size:
            return out
        at = np.searchsorted(self._by_rid, rids)
        inside = at < self._by_rid.size
        hit = np.zeros(rids.size, dtype=np.bool_)
        hit[inside] = self._by_rid[at[inside]] == rids[inside]
        out[hit] = self._rid_scores[at[hit]]
        return out


def range_list(conn: Any, kept: Sequence[str], rid_range: tuple[int, int],
               stamp: Any = None) -> ScoredList:
    """Every row in ``rid_range`` matching any of ``kept`` (FTS5 units), with its BM25
    score: the rows and scores ``search.ranged_scores`` returns, in the same order. With
    ``stamp`` (the file's content stamp), summed from per-unit lists kept until a write
    (``bm25_terms``): the same doubles."""
    if not kept:
        return ScoredList(_NO_RIDS, _NO_SCORES)
    summed = summed_list(conn, kept, rid_range, stamp)
    if summed is not None:
        return ScoredList(*summed)
    # Streamed into one float64 array (a row id is exact there below 2**53): each row's
    # tuple is freed as soon as it is read, so a list of thousands of rows leaves no
    # thousands of live tuples behind to set off the garbage collector's passes.
    flat = np.fromiter(chain.from_iterable(conn.execute(
        "SELECT rowid, bm25(memories_fts, 1.0, 0.0) FROM memories_fts "
        "WHERE memories_fts MATCH ? AND rowid BETWEEN ? AND ?",
        (f"body : ({' OR '.join(kept)})", *rid_range))), dtype=np.float64).reshape(-1, 2)
    if not flat.size:
        return ScoredList(_NO_RIDS, _NO_SCORES)
    return ScoredList(flat[:, 0].astype(np.int64), flat[:, 1].copy())


def fused_ranking(first: ScoredList, added: ScoredList) -> npt.NDArray[np.int64]:
    """The feedback round's ranking, best first, as ``feedback.fused_scores`` gives it: a
    row the added words match scores its first-round score (0.0 if none) plus theirs, every
    other row keeps its first-round score, and rows sort by (score, row id)."""
    if not len(added):
        return first.ranked
    moved = added.ranked
    moved_scores = first.score_of(moved) + added.scores
    keep = ~np.isin(first.ranked, moved, assume_unique=True)
    rids = np.concatenate([first.ranked[keep], moved])
    scores = np.concatenate([first.scores[keep], moved_scores])
    ranked: npt.NDArray[np.int64] = rids[np.lexsort((rids, scores))]
    return ranked


def ranged_scores(conn: Any, kept: Sequence[str], matched: int,
                  rid_range: tuple[int, int]) -> list[tuple[int, float]]:
    """Every row in ``rid_range`` matching any of ``kept`` (units matching at most
    ``matched`` rows), with its BM25 score (FTS5's sign: lower is better), best first, as
    SQLite sorts them."""
    if not kept:
        return []
    rows: list[tuple[int, float]] = conn.execute(  # (int, float) tuples as SQLite gives them
        "SELECT rowid, bm25(memories_fts, 1.0, 0.0) AS s FROM memories_fts "
        "WHERE memories_fts MATCH ? AND rowid BETWEEN ? AND ? ORDER BY s LIMIT ?",
        (f"body : ({' OR '.join(kept)})", *rid_range, matched)).fetchall()
    return rows


#: A recall's first-round list: numpy's for a long list, SQLite's sorted rows for a short one.
FirstRound = ScoredList | list[tuple[int, float]]


def first_round(conn: Any, kept: Sequence[str], matched: int,
                rid_range: tuple[int, int], stamp: Any = None) -> FirstRound:
    """The first round's BM25 list of ``kept`` (units matching at most ``matched`` rows)
    in ``rid_range``, kept whole for the feedback round's fusion; a long one from kept unit
    lists given ``stamp`` (:func:`range_list`)."""
    if matched >= NUMPY_MIN_ROWS:
        return range_list(conn, kept, rid_range, stamp)
    return ranged_scores(conn, kept, matched, rid_range)


def first_ranked(scored: FirstRound) -> list[int]:
    """The first round's rows, best first."""
    if isinstance(scored, ScoredList):
        ranked: list[int] = scored.ranked.tolist()
        return ranked
    return [rid for rid, _ in scored]


def feedback_ranked(conn: Any, scored: FirstRound, more: Sequence[str], more_rows: int,
                    rid_range: tuple[int, int], stamp: Any = None) -> Iterable[int]:
    """The feedback round's rows, best first: the first round's list fused with a MATCH of
    the added units ``more`` alone (matching at most ``more_rows`` rows; with ``stamp``,
    summed from kept unit lists when the first round's list is long)."""
    if isinstance(scored, ScoredList):
        fused: list[int] = fused_ranking(
            scored, range_list(conn, more, rid_range, stamp)).tolist()
        return fused
    return fused_scores(scored, ranged_scores(conn, more, more_rows, rid_range))
