"""PostgresStore's full-text leg: the query words that tell the recall's scope apart, and the
weight their list earns in the fusion (:mod:`memorywire.core.informative`, issue 31).

A unit here is one query word as the full-text list matches it: ``to_tsquery('english',
'word')``, the stemmed lexeme the GIN index holds. Its document frequency is counted *in the
recall's scope* (the same ``WHERE`` as both lists: agent, user, types, filters, freshness,
live rows): ``ts_rank_cd`` has no idf at all, so without this a name every memory of a
per-user scope holds ranks that scope by text length alone.

One statement reads the shares, in one pass over at most ``SHARE_SAMPLE`` rows of the
scope, the newest (the order of the ``(agent_id, created_at, id)`` index): every row of a scope
that size or smaller, so its counts are exact, and for a larger scope the shares among its
newest rows. So the count's cost stops growing with the scope: the exact vector search reads
every row of a scope up to ``exact_scope_limit`` anyway, but a larger scope is searched through
HNSW, and counting all of it would cost more than the search.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from memorywire.core.informative import SHARE_MIN_SCOPE, is_common, weigh_units
from memorywire.store.postgres.db import Conn
from memorywire.store.postgres.sql import TABLE, Where, tsquery_text

__all__ = ["SHARE_SAMPLE", "Leg", "count_statement", "lexical_leg"]

#: The most rows of a recall's scope (its newest) whose words are counted.
SHARE_SAMPLE = 10_000


class Leg(NamedTuple):
    """A recall's full-text leg, and what its counts tell the subject gate
    (:mod:`memorywire.store.postgres.subject`)."""

    #: The ``tsquery`` the list ranks by (``None``: no list).
    tsquery: str | None
    #: The list's RRF weight.
    weight: float
    #: The query words at least one counted row holds ...
    known: frozenset[str]
    #: ... and those most of them hold (``core.informative.is_common``; none in a scope
    #: under ``SHARE_MIN_SCOPE``).
    common: frozenset[str]


def count_statement(w: Where, words: Sequence[str]) -> tuple[str, list[Any]] | None:
    """The statement (and its parameters) that counts the scope ``w``'s newest rows and, in
    them, each of ``words`` as the full-text list matches it (``n``, ``d0``, ``d1``, ...);
    ``None`` when no word is left to search."""
    queries = [q for q in map(tsquery_text, ([word] for word in words)) if q is not None]
    if not queries:
        return None
    counts = ", ".join(f"count(*) FILTER (WHERE tsv @@ to_tsquery('english', %s)) AS d{i}"
                       for i in range(len(queries)))
    return (f"SELECT count(*) AS n, {counts} FROM (SELECT tsv FROM {TABLE} WHERE {w.sql()} "
            "ORDER BY created_at DESC, id DESC LIMIT %s) AS newest",
            [*queries, *w.params, SHARE_SAMPLE])


async def lexical_leg(conn: Conn, w: Where, words: Sequence[str]) -> Leg:
    """The full-text leg of a recall over the scope ``w``: the ``tsquery`` its list ranks by
    (``None``: no list, when none of the content ``words`` is left), that list's RRF weight,
    and the words the counted rows hold (any, most)."""
    searched = [word for word in words if tsquery_text([word]) is not None]
    statement = count_statement(w, searched)
    if statement is None:
        return Leg(None, 1.0, frozenset(), frozenset())
    cur = await conn.execute(*statement)
    row = await cur.fetchone()
    assert row is not None  # an aggregate without GROUP BY always has its one row
    df = {word: int(row[f"d{i}"]) for i, word in enumerate(searched)}
    n = int(row["n"])
    kept, weight = weigh_units(searched, df.__getitem__, n)
    return Leg(tsquery_text(kept), weight, frozenset(u for u in searched if df[u] > 0),
               frozenset(u for u in searched if n >= SHARE_MIN_SCOPE and is_common(df[u], n)))
