"""A recall's BM25 lists as numpy arrays, ordered by numpy instead of SQLite's sorter.

A hybrid recall over a large scope ranks every full-text match in the agent's row-id range
(up to ``search.LEXICAL_BUDGET`` rows) because the feedback round's fusion needs every
first-round score (``feedback.fused_scores``). Asked with ``ORDER BY bm25(...)``, SQLite
copies each of those rows into its sorter and sorts them record by record, and the feedback
round then put every score into a Python dict: at 100k memories that ordering and bookkeeping
cost about as much as FTS5's scoring itself (docs/benchmarks.md, "hybrid35c").

Here the MATCH returns its rows unsorted (FTS5 yields them in ascending row id) and one
stable numpy sort orders them by score, ties by row id: the order SQLite's sort gives (both
compare the same doubles; ``tests/unit/test_fts_lists.py`` checks the two orders agree on a
real index full of tied scores). The feedback round's list is built the same way: the added
words' scores added to the first round's by array lookups, then one sort by (score, row id),
which is what merging the unmoved rows with the moved ones by that key gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["ScoredList", "fused_ranking", "range_list"]

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


def range_list(conn: Any, kept: Sequence[str], rid_range: tuple[int, int]) -> ScoredList:
    """Every row in ``rid_range`` matching any of ``kept`` (FTS5 units), with its BM25
    score: the rows and scores ``search.ranged_scores`` returns, in the same order."""
    if not kept:
        return ScoredList(_NO_RIDS, _NO_SCORES)
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
