"""Full-text query units asked of FTS5 many at a time: one statement per question, not per word.

A recall asks the full-text index three kinds of per-unit questions (a unit is a quoted word
or a six-letter prefix, ``search._units``): how many rows a unit matches table-wide (capped:
the row budget, the feedback words' limit), which rows of the agent's row-id range it matches
(its document frequency in the scope, the subject's rows), and whether one row holds it (the
list gate's agreement rescue). Asked one statement per unit, a small scope's recall issued
dozens of statements, and a question the floors reject one per word per vector hit; on a
small scope those statements were most of what the search cost (docs/benchmarks.md,
"speed31").

Here each question is one statement for all of its units: the counts as scalar subqueries of
one row, the range rows as a ``UNION ALL`` tagged by unit. FTS5 evaluates every unit exactly
as its own ``MATCH`` did, so the answers are the same numbers and the same row sets.
:class:`UnitRows` keeps a recall's range rows by unit (one read transaction: a pure function
of the snapshot), so the scope counts, the subject's rows and the agreement rescue read the
index once per unit, and a row's shared words are set lookups. Given the file's content
stamp (``SqliteDb.content_stamp``), counts and range rows are also kept across recalls of
one connection until anything is written: a conversation asks the same names and topic
words again and again.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

from memorywire.core.textsearch import query_terms

__all__ = [
    "COMMON_TTL_S",
    "PREFIX_LEN",
    "PREFIX_MIN_WORD",
    "UnitRows",
    "count_units",
    "held_words",
    "quote",
    "word_units",
]

PREFIX_LEN = 6
PREFIX_MIN_WORD = 7
#: How long a connection remembers that a unit matched more rows than a recall may rank.
COMMON_TTL_S = 60.0
_COMMON_MAX = 4096
#: Units per statement (SQLite's compound SELECT and expression depth limits are far above).
_CHUNK = 64

#: Per connection: the content stamp (``SqliteDb.content_stamp``) the counts below were read
#: under, and (unit, cap) -> capped row count. Exact: any write to the file changes the stamp.
_exact: weakref.WeakKeyDictionary[Any, tuple[Any, dict[tuple[str, int], int]]] = (
    weakref.WeakKeyDictionary())

#: Per connection: unit -> (capped row count, monotonic time counted), only for units found
#: at or over their cap. Counting those is the costly part (a full ``cap`` rows each), and a
#: common word stays common: a stale verdict only keeps a word out of ranking a little longer.
_common: weakref.WeakKeyDictionary[Any, dict[str, tuple[int, float]]] = (
    weakref.WeakKeyDictionary())


def quote(term: str) -> str:
    """``term`` as an FTS5 string (never an operator)."""
    return '"' + term.replace('"', '""') + '"'


def word_units(term: str) -> tuple[str, ...]:
    """The units one query word is searched by: itself and, when long enough, its prefix."""
    if len(term) >= PREFIX_MIN_WORD:
        return quote(term), f"{quote(term[:PREFIX_LEN])}*"
    return (quote(term),)


def _chunks(items: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start:start + _CHUNK]


def count_units(conn: Any, units: Sequence[str], cap: int, stamp: Any = None) -> list[int]:
    """How many rows each unit matches in the body column, counting at most ``cap``; a unit
    this connection recently found at or over ``cap`` is not counted again.

    With ``stamp`` (the file's content stamp, read inside the caller's transaction), a count
    this connection made under the same stamp is reused: nothing was written since, so it is
    the number a new count would give. A conversation asks its scope's names and topic words
    again and again, and each count is an FTS5 query of its own."""
    known = _common.setdefault(conn, {})
    now = time.monotonic()
    exact: dict[tuple[str, int], int] = {}
    if stamp is not None:
        held = _exact.get(conn)
        if held is None or held[0] != stamp or len(held[1]) >= _COMMON_MAX:
            held = (stamp, {})
            _exact[conn] = held
        exact = held[1]
    out: list[int | None] = []
    ask: dict[str, None] = {}
    for unit in units:
        hit = known.get(unit)
        if hit is not None and hit[0] >= cap and now - hit[1] < COMMON_TTL_S:
            out.append(cap)
        elif (unit, cap) in exact:
            out.append(exact[unit, cap])
        else:
            out.append(None)
            ask[unit] = None
    counted: dict[str, int] = {}
    for chunk in _chunks(list(ask)):
        sql = "SELECT " + ", ".join(
            "(SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? "
            "LIMIT ?))" for _ in chunk)
        row = conn.execute(sql, [v for u in chunk for v in (f"body : {u}", cap)]).fetchone()
        counted.update(zip(chunk, (int(n) for n in row), strict=True))
    for unit, n in counted.items():
        if stamp is not None:
            exact[unit, cap] = n
        if n >= cap:
            if len(known) >= _COMMON_MAX:
                known.clear()
            known[unit] = (n, now)
    return [counted[u] if n is None else n for u, n in zip(units, out, strict=True)]


#: Per connection: the content stamp, and per row-id range the rows each unit matches there
#: (:class:`UnitRows`), as :data:`_exact` keeps counts.
_ranges: weakref.WeakKeyDictionary[
    Any, tuple[Any, dict[tuple[int, int], dict[str, frozenset[int]]]]] = (
    weakref.WeakKeyDictionary())
#: Per connection: the content stamp, and per row-id range each unit's row count there
#: (:meth:`UnitRows.count`), kept as :data:`_ranges` keeps the rows.
_range_counts: weakref.WeakKeyDictionary[
    Any, tuple[Any, dict[tuple[int, int], dict[str, int]]]] = weakref.WeakKeyDictionary()
_RANGES_MAX = 64


def _held(cache: weakref.WeakKeyDictionary[Any, tuple[Any, dict[tuple[int, int], Any]]],
          conn: Any, stamp: Any, rid_range: tuple[int, int], fresh: Any) -> Any:
    """``cache``'s per-unit answers for ``rid_range`` on ``conn`` under ``stamp`` (``fresh``,
    an empty dict, put there when there are none): dropped whenever the stamp changes, and
    bounded in ranges and units per range."""
    held = cache.get(conn)
    if held is None or held[0] != stamp or len(held[1]) >= _RANGES_MAX:
        held = (stamp, {})
        cache[conn] = held
    answers = held[1].setdefault(rid_range, fresh)
    if len(answers) >= _COMMON_MAX:
        answers.clear()
    return answers


class UnitRows:
    """The rows of one agent's row-id range each unit matches, read once per unit within one
    recall's transaction (every row of the range, not only the scope's: callers mask); with
    ``stamp`` (see :func:`count_units`), once per unit while nothing is written."""

    def __init__(self, conn: Any, rid_range: tuple[int, int], stamp: Any = None) -> None:
        self._conn = conn
        self._range = rid_range
        self._rows: dict[str, frozenset[int]] = {}
        self._counts: dict[str, int] = {}
        if stamp is not None:
            self._rows = _held(_ranges, conn, stamp, rid_range, self._rows)
            self._counts = _held(_range_counts, conn, stamp, rid_range, self._counts)

    def count(self, units: Sequence[str]) -> list[int]:
        """How many rows of the range each unit matches: the size of :meth:`of`'s set, read
        as a count where the rows themselves were not read yet. A count is several times
        cheaper than bringing a common word's tens of thousands of row ids into Python,
        which a caller that only needs the number (the scope's document frequency, when
        every row of the range is in the scope) need not pay for."""
        missing = list(dict.fromkeys(
            u for u in units if u not in self._rows and u not in self._counts))
        for chunk in _chunks(missing):
            sql = "SELECT " + ", ".join(
                f"(SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?{i + 3} "
                "AND rowid BETWEEN ?1 AND ?2)" for i in range(len(chunk)))
            row = self._conn.execute(sql, (*self._range, *(f"body : {u}" for u in chunk)))
            self._counts.update(zip(chunk, (int(n) for n in row.fetchone()), strict=True))
        return [len(self._rows[u]) if u in self._rows else self._counts[u] for u in units]

    def none(self, units: Iterable[str]) -> None:
        """Record ``units`` as matching no row at all (a table-wide count of 0)."""
        for unit in units:
            self._rows.setdefault(unit, frozenset())

    def of(self, units: Sequence[str]) -> list[frozenset[int]]:
        """Each unit's rows in the range; those not read yet are read in one statement."""
        rows = self._rows
        missing = [u for u in units if u not in rows]
        if not missing:  # the usual case: the recall's words, read by its first search
            return [rows[u] for u in units]
        for chunk in _chunks(list(dict.fromkeys(missing))):
            found: dict[int, set[int]] = {i: set() for i in range(len(chunk))}
            sql = " UNION ALL ".join(
                f"SELECT {i}, rowid FROM memories_fts WHERE memories_fts MATCH ?{i + 3} "
                "AND rowid BETWEEN ?1 AND ?2" for i in range(len(chunk)))
            for i, rid in self._conn.execute(
                    sql, (*self._range, *(f"body : {u}" for u in chunk))):
                found[i].add(rid)
            self._rows.update((u, frozenset(found[i])) for i, u in enumerate(chunk))
        return [self._rows[u] for u in units]

    def shared_words(self, rid: int, text: str, enough: int,
                     common: frozenset[str] = frozenset()) -> int:
        """How many distinct content words of ``text`` row ``rid`` (inside the range) holds
        (a word counts when it or its prefix matches), counting up to ``enough``; ``common``
        words never count."""
        return held_words(self.word_rows(text, common), rid, enough)

    def word_rows(self, text: str,
                  common: frozenset[str] = frozenset()) -> list[list[frozenset[int]]]:
        """Per distinct content word of ``text`` (``common`` words left out), the rows in
        the range each of its units matches: what :meth:`shared_words` looks ``rid`` up in,
        read once for a list of rows to look up (:func:`held_words`)."""
        units = [word_units(t) for t in query_terms(text) if t not in common]
        found = self.of([u for us in units for u in us])
        out: list[list[frozenset[int]]] = []
        at = 0
        for us in units:
            out.append(found[at:at + len(us)])
            at += len(us)
        return out


def held_words(word_rows: Sequence[Sequence[frozenset[int]]], rid: int, enough: int) -> int:
    """How many words (each the row sets of its units, :meth:`UnitRows.word_rows`) row
    ``rid`` holds, counting up to ``enough``."""
    found = 0
    for rows in word_rows:
        if any(rid in r for r in rows):
            found += 1
            if found >= enough:
                break
    return found
