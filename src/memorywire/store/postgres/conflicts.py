"""PostgresStore's conflict search: a write's candidates through the indexes recall uses.

Per write (:class:`~memorywire.store.timeline.Probe`) one statement unites two lists of
current memories of the write's agent, user and type:

* **nearest by vector**: the :data:`CONFLICT_NEIGHBOURS` closest. A scope of at most
  :data:`CONFLICT_EXACT_ROWS` rows is searched exactly through the ``(agent_id, user_id)``
  index, with the ``hnsw.ef_search`` recall asks for (:func:`~memorywire.store.postgres.knn.ann_ef`:
  scaled by the agent's share of the graph it walks, its partition's on a partitioned
  table, only before pgvector 0.8's iterative scans,
  :mod:`memorywire.store.postgres.hnsw`; scaled on 0.8 the planner prices the index above
  a sequential scan of the agent's partition), and without recall's exact fallback: a
  write must not pay a scan of a large scope, and a short list only means fewer candidates.
* **full text on the subject**: the :data:`CONFLICT_LEXICAL` best matches of the write's
  subject words (:func:`memorywire.core.contradiction.subject_terms`) in the GIN index.
  A lexeme the planner's statistics (``pg_stats.most_common_elems`` of ``tsv``) count in
  more than :data:`CONFLICT_LEXICAL_BUDGET` rows is left out of the query: the GIN index is
  not scoped, so such a word would cost a pass over every row holding it, anyone's, and a
  word that common says nothing about which memory a write replaces.

So a write's cost is bounded by constants, not by the size of its scope.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Sequence
from typing import Any

from memorywire.core.contradiction import subject_terms
from memorywire.core.timeline import TIME_KEY
from memorywire.store.postgres.db import Conn, PgDb
from memorywire.store.postgres.hnsw import hnsw_settings
from memorywire.store.postgres.knn import ann_ef, scope_counts
from memorywire.store.postgres.migrations import TS_CONFIG
from memorywire.store.postgres.sql import TABLE, PgVector
from memorywire.store.timeline import CONFLICT_LEXICAL, CONFLICT_NEIGHBOURS, Found, Probe

__all__ = ["CONFLICT_EXACT_ROWS", "CONFLICT_LEXICAL_BUDGET", "conflict_candidates",
           "conflict_sql", "probe_args", "probe_candidates"]

#: A scope of at most this many rows is searched exactly (a bounded scan).
CONFLICT_EXACT_ROWS = 2000
#: A lexeme the statistics count in more rows than this is left out of the subject search.
CONFLICT_LEXICAL_BUDGET = 1000
#: How long the common lexemes read from ``pg_stats`` are reused (they change with ANALYZE).
STATS_TTL_S = 60.0

_LIVE = (
    "agent_id = %(agent)s AND user_id IS NOT DISTINCT FROM %(user)s AND type = %(type)s "
    "AND deleted_at IS NULL AND archived_at IS NULL "
    "AND (expires_at IS NULL OR expires_at > %(now)s) ")
_CURRENT = f"metadata -> '{TIME_KEY}' ->> 'superseded_by' IS NULL"
_SCOPE = f"{_LIVE}AND {_CURRENT}"
# The same rows for the HNSW statement. With no statistics on the JSON path, ``IS NULL``
# is estimated at 0.5% of the rows, so the planner sees a handful of rows where the scope
# is thousands and prefers a sequential scan and a sort of the partition at any
# ``ef_search``; as a CASE the test is estimated at half the rows and the graph is chosen.
_SCOPE_INDEXED = f"{_LIVE}AND CASE WHEN {_CURRENT} THEN true ELSE false END"
# ``1 - distance DESC`` is not an order the HNSW index serves: an exact scan of the scope.
_EXACT = (f"SELECT id, content, 1 - (embedding <=> %(q)s::vector) AS cos FROM {TABLE} "
          f"WHERE {_SCOPE} ORDER BY cos DESC, id LIMIT %(k)s")
_INDEXED = (f"SELECT id, content, 1 - (embedding <=> %(q)s::vector) AS cos FROM {TABLE} "
            f"WHERE {_SCOPE_INDEXED} ORDER BY embedding <=> %(q)s::vector LIMIT %(k)s")
# The subject's lexemes less the common ones, ORed; NULL (no row) when none is left.
_LEXICAL = (
    "SELECT id, content, 1 - (embedding <=> %(q)s::vector) AS cos FROM "
    f"{TABLE}, (SELECT string_agg(quote_literal(l), ' | ')::tsquery AS tq FROM "
    f"unnest(tsvector_to_array(to_tsvector('{TS_CONFIG}', %(terms)s))) AS l "
    "WHERE l <> ALL(%(common)s)) AS s "
    f"WHERE {_SCOPE} AND tsv @@ s.tq ORDER BY ts_rank_cd(tsv, s.tq) DESC, id LIMIT %(l)s")


def conflict_sql(indexed: bool, terms: bool) -> str:
    """The statement one probe runs: through the HNSW index (``indexed``) or exactly, with
    the subject search when the write has subject words. Its params are
    :func:`probe_args`."""
    vector = _INDEXED if indexed else _EXACT
    return f"({vector}) UNION ALL ({_LEXICAL})" if terms else vector


def probe_args(probe: Probe, common: list[str], now: int) -> dict[str, Any]:
    """The named params of :func:`conflict_sql` for ``probe``."""
    return {
        "agent": probe.agent_id, "user": probe.user_id, "type": probe.type.value, "now": now,
        "q": PgVector(probe.vector), "k": CONFLICT_NEIGHBOURS, "l": CONFLICT_LEXICAL,
        "terms": " ".join(subject_terms(probe.text)), "common": common}


class _Common:
    """The lexemes too common to search, per database, refreshed every STATS_TTL_S."""

    def __init__(self) -> None:
        self.words: list[str] = []
        self.read_at = float("-inf")

    async def get(self, conn: Conn) -> list[str]:
        if time.monotonic() - self.read_at < STATS_TTL_S:
            return self.words
        cur = await conn.execute(
            "SELECT s.most_common_elems::text::text[] AS e, s.most_common_elem_freqs AS f, "
            "c.reltuples AS n FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename "
            "AND c.relnamespace = to_regnamespace(s.schemaname) "
            "WHERE s.schemaname = current_schema() AND s.tablename = %s AND s.attname = 'tsv'",
            (TABLE,))
        row = await cur.fetchone()
        words: list[str] = []
        if row is not None and row["e"] is not None:
            rows = max(float(row["n"]), 0.0)
            words = [w for w, f in zip(row["e"], row["f"], strict=False)
                     if f * rows > CONFLICT_LEXICAL_BUDGET]
        self.words, self.read_at = words, time.monotonic()
        return words


_common: weakref.WeakKeyDictionary[PgDb, _Common] = weakref.WeakKeyDictionary()


async def conflict_candidates(db: PgDb, probes: Sequence[Probe]) -> list[Found]:
    """One :data:`~memorywire.store.timeline.Found` per probe, read before the batch is
    written (the batch is not compared with itself). The reads run in autocommit: under
    READ COMMITTED each statement takes its own snapshot inside a transaction too, so
    BEGIN and COMMIT were two round trips a write paid for nothing; the HNSW branch, whose
    settings last one transaction, opens its own."""
    if not probes:
        return []
    out: list[Found] = []
    common = _common.setdefault(db, _Common())
    async with db.single() as conn:
        counts = await scope_counts(conn, sorted({p.agent_id for p in probes}),
                                    CONFLICT_EXACT_ROWS)
        lexemes = await common.get(conn)
        now = db.clock.now_ms()
        for probe in probes:
            rows, total = counts.get(probe.agent_id, (0, 0))
            out.append(await probe_candidates(conn, probe, rows, total, lexemes, now,
                                              db.pgvector) if rows else [])
    return out


async def probe_candidates(conn: Conn, probe: Probe, rows: int, total: int, common: list[str],
                           now: int, version: tuple[int, ...] | None) -> Found:
    """One probe's candidates on ``conn`` (autocommit), for a scope of ``rows`` in a graph
    of ``total`` (:func:`~memorywire.store.postgres.knn.scope_counts`); the HNSW settings
    are set in, and end with, a transaction of their own."""
    args = probe_args(probe, common, now)
    terms = bool(args["terms"])
    if rows <= CONFLICT_EXACT_ROWS:
        cur = await conn.execute(conflict_sql(False, terms), args)
        found = await cur.fetchall()
    else:
        async with conn.transaction():  # the HNSW settings hold for this transaction
            await hnsw_settings(conn, ann_ef(CONFLICT_NEIGHBOURS, rows, total, version),
                                version)
            cur = await conn.execute(conflict_sql(True, terms), args)
            found = await cur.fetchall()
    return [(r["id"], r["content"], float(r["cos"])) for r in found]
