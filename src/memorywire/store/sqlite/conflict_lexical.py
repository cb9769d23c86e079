"""The full-text leg of SqliteStore's conflict search: a write's best BM25 matches on its
subject words, for a whole batch of writes at once.

Each write searches its subject words (:func:`memorywire.core.contradiction.subject_terms`),
each word kept only while the words kept so far match at most
:data:`CONFLICT_LEXICAL_BUDGET` rows (rarest first, as recall's full-text leg does): a word
most of the scope holds says nothing about which memory a write replaces, and ranking it
would cost a pass over them.

A batch of writes about one topic asks for the same words again and again, so the batch
asks FTS5 once per distinct word, not once per write, and adds up each write's words
itself: FTS5's ``bm25`` of an ``OR`` of phrases is the sum, phrase by phrase in query
order, of what each phrase alone scores (each phrase's idf and the mean row length are
table-wide), so the sum taken in the same order is the same number, and the rows are ranked
as one query per write ranked them (ties by row id, as SQLite returned them).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memorywire.core.contradiction import subject_terms
from memorywire.store._vector_cache import ScopeIndex
from memorywire.store.sqlite.search import in_range, lexical_rids
from memorywire.store.timeline import CONFLICT_LEXICAL, Probe

__all__ = ["CONFLICT_LEXICAL_BUDGET", "lexical_many"]

#: Most full-text rows one write's subject search may rank (summed over its kept words).
CONFLICT_LEXICAL_BUDGET = 300
#: How long a word's row count is reused (see _Counts).
COUNT_TTL_S = 60.0
_COUNTS_MAX = 8192
#: Subject words searched per write (its own first, then its slot class's).
_TERMS = 8

Units = tuple[list[str], int]


class _Counts:
    """How many rows each word matches, per connection, counted up to the budget: a batch of
    writes about one topic asks for the same words again and again, and a count costs a
    statement. A count is reused while the table has grown by at most a quarter since it was
    taken (and for at most COUNT_TTL_S): a stale count only picks words a little wrongly,
    and a word that has grown common costs at most the rows it grew by."""

    def __init__(self) -> None:
        self.known: dict[str, tuple[int, int, float]] = {}

    def count(self, conn: Any, unit: str, rows: int) -> int:
        now = time.monotonic()
        hit = self.known.get(unit)
        if hit is not None and rows <= hit[1] * 1.25 + 64 and now - hit[2] < COUNT_TTL_S:
            return hit[0]
        row = conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? "
            "LIMIT ?)", (f"body : {unit}", CONFLICT_LEXICAL_BUDGET + 1)).fetchone()
        if len(self.known) >= _COUNTS_MAX:
            self.known.clear()
        self.known[unit] = (int(row[0]), rows, now)
        return int(row[0])


_counts: weakref.WeakKeyDictionary[Any, _Counts] = weakref.WeakKeyDictionary()


def _units(conn: Any, terms: Sequence[str], rows: int) -> Units:
    """The quoted words worth ranking, rarest first, within CONFLICT_LEXICAL_BUDGET rows."""
    counts = _counts.setdefault(conn, _Counts())
    counted = sorted((counts.count(conn, u, rows), u) for u in
                     ('"' + t.replace('"', '""') + '"' for t in terms))
    kept: list[str] = []
    total = 0
    for n, unit in counted:
        if n == 0:
            continue
        if total + n > CONFLICT_LEXICAL_BUDGET:
            break
        kept.append(unit)
        total += n
    return kept, total


class _Unit:
    """One word's matches in the agent's row-id range: row ids, their BM25 share (FTS5's
    sign, lower is better) and their positions in the scope's matrix (-1: not cached)."""

    def __init__(self, conn: Any, index: ScopeIndex, unit: str,
                 rid_range: tuple[int, int]) -> None:
        got = conn.execute(
            "SELECT rowid, bm25(memories_fts, 1.0, 0.0) FROM memories_fts "
            "WHERE memories_fts MATCH ? AND rowid BETWEEN ? AND ?",
            (f"body : {unit}", *rid_range)).fetchall()
        self.rids = np.fromiter((r[0] for r in got), dtype=np.int64, count=len(got))
        self.scores = np.fromiter((r[1] for r in got), dtype=np.float64, count=len(got))
        get = index.pos.get
        self.pos = np.fromiter((get(r, -1) for r in self.rids.tolist()), dtype=np.int64,
                               count=len(got))


def _ranked(parts: Sequence[_Unit], matched: int) -> npt.NDArray[np.int64]:
    """Positions of the rows matching any of ``parts`` (a write's kept words, in query
    order), best summed BM25 first, ties by row id, at most ``matched`` (as the per-write
    query's ``LIMIT``), uncached rows left out after the cut."""
    scores: npt.NDArray[np.float64]
    if len(parts) == 1:
        rids, scores, pos = parts[0].rids, parts[0].scores, parts[0].pos
    else:
        every = np.concatenate([u.rids for u in parts])
        rids, first, inverse = np.unique(every, return_index=True, return_inverse=True)
        # bincount adds each row's shares in input order, from 0.0: FTS5's own sum
        scores = np.asarray(np.bincount(inverse, weights=np.concatenate(
            [u.scores for u in parts])), dtype=np.float64)
        pos = np.concatenate([u.pos for u in parts])[first]
    order = np.lexsort((rids, scores))[:matched]
    out = pos[order]
    kept: npt.NDArray[np.int64] = out[out >= 0]
    return kept


def lexical_many(conn: Any, index: ScopeIndex, probes: Sequence[Probe], now: int,
                 rid_range: tuple[int, int], rows: int) -> list[list[int]]:
    """Each probe's positions of its best full-text matches in its scope (at most
    :data:`CONFLICT_LEXICAL`), one agent's probes at a time. A probe whose words are
    searched by the agent's scope token rather than its row-id range (an agent whose rows
    are spread thin through the file, see ``search.in_range``) asks on its own."""
    units = [_units(conn, subject_terms(p.text, _TERMS), rows) for p in probes]
    words: dict[str, _Unit] = {}
    out: list[list[int]] = []
    for probe, (kept, matched) in zip(probes, units, strict=True):
        if not kept:
            out.append([])
            continue
        if in_range(index.n, matched, rid_range):
            for unit in kept:
                if unit not in words:
                    words[unit] = _Unit(conn, index, unit, rid_range)
            found = _ranked([words[u] for u in kept], matched)
        else:
            rids = lexical_rids(conn, probe.agent_id, "", CONFLICT_LEXICAL_BUDGET,
                                scope_rows=index.n, units=(kept, matched), rid_range=rid_range)
            found = np.asarray([p for p in map(index.pos.get, rids) if p is not None],
                               dtype=np.int64)
        if not found.size:
            out.append([])
            continue
        mine = index.of_scope(found, now, probe.user_id, probe.type)
        out.append(mine[:CONFLICT_LEXICAL].tolist())
    return out
