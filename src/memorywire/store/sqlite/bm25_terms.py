"""A long BM25 list summed from per-unit scores kept between recalls, to the very double.

FTS5's ``bm25()`` of a ``body : (u1 OR u2 ...)`` MATCH is, for each row, ``-1.0`` times a
sum over the query's phrases in phrase order, starting from ``0.0``, of that phrase's IDF
times its saturated term frequency (``fts5Bm25Function`` in SQLite's ``fts5_aux.c``). A
phrase a row lacks adds exactly ``+0.0``; a phrase's IDF and the average row length are the
whole table's, not the query's. So one unit's term in a row is what a MATCH of that unit
alone returns (negated back), and the OR query's score is those terms added in the same
order: the same IEEE additions, so the same doubles, so (sorted by score, then row id) the
same order. A recall over a large scope asks a few thousand rows per word of FTS5, and
FTS5's scoring of them is most of a long list's cost; agents ask the same words again and
again, so each unit's rows and terms are kept per connection and row-id range until the
file's content stamp changes (``SqliteDb.content_stamp``, as ``fts_units`` keeps counts):
any write may change every IDF and the average length, so it drops everything.

Whether this library's sums really are the plain additions (a build that fuses the
multiply-add would round differently) is checked once per process on a scratch index
(:func:`exact_sums`); if not, nothing is kept and every list is FTS5's own.
"""

from __future__ import annotations

import random
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from itertools import chain
from typing import Any

import apsw
import numpy as np
import numpy.typing as npt

__all__ = ["CACHE_BYTES", "exact_sums", "summed_list"]

#: Per connection: the most bytes of kept unit lists (row ids and terms); the least recently
#: used unit's list goes first. A unit matches at most the recall's row budget in a range.
CACHE_BYTES = 32 * 2**20
#: Units per statement, as ``fts_units`` asks them.
_CHUNK = 64

_Arrays = tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]


class _Kept:
    """One connection's unit lists under one content stamp, least recently used first."""

    __slots__ = ("lists", "size", "stamp")

    def __init__(self, stamp: Any) -> None:
        self.stamp = stamp
        self.lists: OrderedDict[tuple[tuple[int, int], str], _Arrays] = OrderedDict()
        self.size = 0

    def put(self, key: tuple[tuple[int, int], str], arrays: _Arrays) -> None:
        size = arrays[0].nbytes + arrays[1].nbytes
        if size > CACHE_BYTES:
            return
        old = self.lists.pop(key, None)
        if old is not None:
            self.size -= old[0].nbytes + old[1].nbytes
        while self.lists and self.size + size > CACHE_BYTES:
            _, gone = self.lists.popitem(last=False)
            self.size -= gone[0].nbytes + gone[1].nbytes
        self.lists[key] = arrays
        self.size += size


_kept: weakref.WeakKeyDictionary[Any, _Kept] = weakref.WeakKeyDictionary()
_exact: list[bool] = []


def _unit_lists(conn: Any, units: Sequence[str], rid_range: tuple[int, int],
                stamp: Any) -> list[_Arrays]:
    """Each unit's rows in ``rid_range`` and its term there (FTS5's single-unit score,
    negated: positive), read in one statement for all units not kept yet."""
    kept = _kept.get(conn)
    if kept is None or kept.stamp != stamp:
        kept = _Kept(stamp)
        _kept[conn] = kept
    found: dict[str, _Arrays] = {}
    for unit in units:
        arrays = kept.lists.get((rid_range, unit))
        if arrays is not None:
            kept.lists.move_to_end((rid_range, unit))
            found[unit] = arrays
    missing = [u for u in dict.fromkeys(units) if u not in found]
    for start in range(0, len(missing), _CHUNK):
        chunk = missing[start:start + _CHUNK]
        sql = " UNION ALL ".join(
            f"SELECT {i}, rowid, bm25(memories_fts, 1.0, 0.0) FROM memories_fts "
            f"WHERE memories_fts MATCH ?{i + 3} AND rowid BETWEEN ?1 AND ?2"
            for i in range(len(chunk)))
        flat = np.fromiter(chain.from_iterable(conn.execute(
            sql, (*rid_range, *(f"body : {u}" for u in chunk)))),
            dtype=np.float64).reshape(-1, 3)
        tags = flat[:, 0].astype(np.int64)
        for i, unit in enumerate(chunk):
            rows = flat[tags == i]
            arrays = (rows[:, 1].astype(np.int64), -rows[:, 2])
            found[unit] = arrays
            kept.put((rid_range, unit), arrays)
    return [found[u] for u in units]


def _summed(lists: Sequence[_Arrays]) -> _Arrays:
    """Rows matching any unit and ``-1.0 *`` their terms summed in unit order from 0.0."""
    if len(lists) == 1:
        rids, terms = lists[0]
        return rids.copy(), -terms
    union = np.unique(np.concatenate([rids for rids, _ in lists]))
    total = np.zeros(union.size, dtype=np.float64)
    for rids, terms in lists:
        if rids.size:  # a row the unit does not match: FTS5 adds +0.0, which changes nothing
            total[np.searchsorted(union, rids)] += terms
    return union, -total


def summed_list(conn: Any, kept: Sequence[str], rid_range: tuple[int, int],
                stamp: Any) -> _Arrays | None:
    """The rows and scores of ``body : (kept[0] OR kept[1] ...)`` in ``rid_range``, the
    doubles FTS5's ``bm25(memories_fts, 1.0, 0.0)`` gives (rows in ascending row id), from
    kept unit lists; ``None`` where they cannot be (no stamp, or inexact sums here)."""
    if stamp is None or not kept or not exact_sums():
        return None
    return _summed(_unit_lists(conn, kept, rid_range, stamp))


def exact_sums() -> bool:
    """Whether this SQLite's multi-phrase ``bm25()`` is the plain sum of its single-phrase
    scores, checked once on a scratch index of random rows and queries."""
    if not _exact:
        _exact.append(_probe())
    return _exact[0]


def _probe() -> bool:
    conn = apsw.Connection(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE memories_fts USING fts5(body, scope, content='')")
        rng = random.Random(35)
        words = [f"w{i}" for i in range(12)]
        conn.execute("BEGIN")
        for rid in range(1, 301):
            conn.execute("INSERT INTO memories_fts(rowid, body, scope) VALUES(?, ?, 's')",
                         (rid, " ".join(rng.choices(words, k=rng.randint(1, 20)))))
        conn.execute("COMMIT")
        rid_range = (1, 300)
        for _ in range(12):
            kept = [f'"{w}"' for w in rng.sample(words, rng.randint(2, 6))]
            want = conn.execute(
                "SELECT rowid, bm25(memories_fts, 1.0, 0.0) FROM memories_fts "
                "WHERE memories_fts MATCH ? AND rowid BETWEEN ? AND ? ORDER BY rowid",
                (f"body : ({' OR '.join(kept)})", *rid_range)).fetchall()
            rids, scores = _summed(_unit_lists(conn, kept, rid_range, ("probe",)))
            if [r for r, _ in want] != rids.tolist() or [s for _, s in want] != scores.tolist():
                return False
        return True
    finally:
        _kept.pop(conn, None)
        conn.close()
