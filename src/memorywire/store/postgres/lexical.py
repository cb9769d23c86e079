"""PostgresStore's full-text leg: the query words that tell the recall's scope apart, and the
weight their list earns in the fusion (:mod:`memorywire.core.informative`, issue 31).

A unit here is one query word as the full-text list matches it: ``to_tsquery('english',
'word')``, the stemmed lexeme the GIN index holds. Its document frequency is counted *in the
recall's scope* (the same ``WHERE`` as both lists: agent, user, types, filters, freshness,
live rows): ``ts_rank_cd`` has no idf at all, so without this a name every memory of a
per-user scope holds ranks that scope by text length alone.

One statement counts the scope and every unit. The scope's rows are counted through the
``(agent_id, user_id)`` index (the exact vector search reads every one of them anyway); the
units are counted only over rows matching at least one of them, so the planner may take
them from the GIN index and intersect them with the scope, or filter the scope's rows,
whichever its statistics say is cheaper.
"""

from __future__ import annotations

from collections.abc import Sequence

from memorywire.core.informative import weigh_units
from memorywire.store.postgres.db import Conn
from memorywire.store.postgres.sql import TABLE, Where, tsquery_text

__all__ = ["lexical_leg"]


async def lexical_leg(conn: Conn, w: Where, words: Sequence[str]) -> tuple[str | None, float]:
    """The ``tsquery`` the full-text list of a recall over the scope ``w`` ranks by (``None``:
    no list, when none of the content ``words`` is left) and that list's RRF weight."""
    units = [(word, q) for word in words if (q := tsquery_text([word])) is not None]
    if not units:
        return None, 1.0
    counts = ", ".join(f"count(*) FILTER (WHERE tsv @@ to_tsquery('english', %s)) AS d{i}"
                       for i in range(len(units)))
    cur = await conn.execute(
        f"SELECT (SELECT count(*) FROM {TABLE} WHERE {w.sql()}) AS n, {counts} "
        f"FROM {TABLE} WHERE {w.sql()} AND tsv @@ to_tsquery('english', %s)",
        [*w.params, *(q for _, q in units), *w.params, tsquery_text(words)])
    row = await cur.fetchone()
    assert row is not None  # an aggregate without GROUP BY always has its one row
    df = {word: int(row[f"d{i}"]) for i, (word, _) in enumerate(units)}
    kept, weight = weigh_units(list(df), df.__getitem__, int(row["n"]))
    return tsquery_text(kept), weight
