"""SqliteStore's conflict search: a write's candidates from the indexes recall already uses.

Two lists per write (:class:`~memorywire.store.timeline.Probe`), united:

* **nearest by vector**: the :data:`CONFLICT_NEIGHBOURS` closest memories of the write's
  user and type in the agent's cached matrix (:mod:`memorywire.store._vector_cache`), exact
  below :data:`~memorywire.store._coarse_index.COARSE_MIN_ROWS` rows and through the
  scope's coarse clusters above (:mod:`memorywire.store._coarse_index`);
* **full text on the subject**: the :data:`CONFLICT_LEXICAL` best BM25 matches of the write's
  subject words (:func:`memorywire.core.contradiction.subject_terms`) in FTS5, each word kept
  only while the words kept so far match at most :data:`CONFLICT_LEXICAL_BUDGET` rows
  (rarest first, as recall's full-text leg does): a word most of the scope holds says
  nothing about which memory a write replaces, and ranking it would cost a pass over them.

Both are bounded by constants, not by the scope: the cost of a write no longer grows with what
the agent remembers. Only current memories come back (not superseded, forgotten, archived
or expired), each with its cosine to the new vector for the detector's meaning rule.

A batch's writes are searched together (issue 35): one product per coarse list for all the
writes probing it (:func:`~memorywire.store._coarse_index.nearest_many`), one full-text
query per distinct word (:mod:`memorywire.store.sqlite.conflict_lexical`), one read of the
candidates' rows. Searched one by one, the same writes asked the same lists, words and rows
once each, and a 1,000-row batch into a large scope spent most of its time there.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memorywire.core.timeline import TIME_KEY
from memorywire.store._blas import one_thread
from memorywire.store._coarse_index import (
    COARSE_MIN_ROWS,
    CoarseIndex,
    Scoped,
    nearest_many,
    probe_rounds,
)
from memorywire.store._vector_cache import ScopeIndex
from memorywire.store.sqlite.conflict_lexical import CONFLICT_LEXICAL_BUDGET, lexical_many
from memorywire.store.sqlite.db import IN_JSON, VISIBLE, SqliteDb
from memorywire.store.sqlite.schema import agent_number
from memorywire.store.timeline import CONFLICT_NEIGHBOURS, Found, Probe

__all__ = ["CONFLICT_LEXICAL_BUDGET", "conflict_candidates"]

#: Nearest rows read per write before superseded ones are left out (a chain of updates of
#: one slot sits close together; its current value must still make the cut).
_OVERFETCH = 2

Positions = npt.NDArray[np.int64]


def conflict_candidates(db: SqliteDb, probes: Sequence[Probe]) -> list[Found]:
    """One :data:`~memorywire.store.timeline.Found` per probe, read in one transaction:
    what was stored before the batch (the batch is not compared with itself). A batch's
    probes are searched together, agent by agent: their vectors in one product per list of
    the scope, their words in one full-text query per distinct word, their candidates' rows
    in one statement."""
    out: list[Found] = [[] for _ in probes]
    if not probes or db.missing():
        return out
    by_agent: dict[str, list[int]] = {}
    for n, probe in enumerate(probes):
        by_agent.setdefault(probe.agent_id, []).append(n)
    with db.tx() as conn:
        now = db.clock.now_ms()
        for agent_id, at in by_agent.items():
            if agent_number(conn, agent_id, create=False) is None:
                continue  # an agent never written: nothing to contradict
            index = db.index(conn, agent_id)
            if index.n == 0:
                continue
            group = [probes[n] for n in at]
            queries = np.stack([np.asarray(p.vector, dtype=np.float32) for p in group])
            with one_thread():
                near = _nearest(index, queries, group, now)
            rid_range = (int(index.rids.min()), int(index.rids.max()))
            rows = int(conn.execute("SELECT coalesce(max(rid), 0) FROM memories").fetchone()[0])
            lexical = lexical_many(conn, index, group, now, rid_range, rows)
            found = _current(conn, index, near, lexical, group, queries, now)
            for n, got in zip(at, found, strict=True):
                out[n] = got
    return out


def _dots(rows: npt.NDArray[np.float32], query: npt.NDArray[np.float32]
          ) -> npt.NDArray[np.float32]:
    """``rows @ query`` without BLAS: a few thousand rows are a small product, and OpenBLAS
    hands a product over its threshold to its thread pool, which on a busy machine (the
    server's own threads, the model's) came back tens of times later than one thread
    computes it (docs/benchmarks.md, pg35)."""
    out: npt.NDArray[np.float32] = np.einsum("ij,j->i", rows, query)
    return out


def _top(sims: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.intp]:
    """Indices of the ``k`` largest ``sims``, largest first."""
    if sims.size > k:
        part = np.argpartition(-sims, k - 1)[:k]
        ordered: npt.NDArray[np.intp] = part[np.argsort(-sims[part], kind="stable")]
        return ordered
    return np.argsort(-sims, kind="stable")


def _top_rows(sims: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.intp]:
    """:func:`_top` of every row at once (the same selection and order, row by row)."""
    if sims.shape[1] > k:
        part = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(sims, part, axis=1), axis=1, kind="stable")
        ordered: npt.NDArray[np.intp] = np.take_along_axis(part, order, axis=1)
        return ordered
    return np.argsort(-sims, axis=1, kind="stable")


def _nearest(index: ScopeIndex, queries: npt.NDArray[np.float32], probes: Sequence[Probe],
             now: int) -> list[Positions]:
    """Each probe's nearest positions of its user and type (over-fetched, see _OVERFETCH)."""
    k = CONFLICT_NEIGHBOURS * _OVERFETCH
    scopes: dict[tuple[str | None, Any], int] = {}
    keys = [scopes.setdefault((p.user_id, p.type), len(scopes)) for p in probes]
    if index.n < COARSE_MIN_ROWS:
        # A small scope: one matrix product for the batch, each probe's scope masked once.
        sims = queries @ index.matrix.T
        every = np.arange(index.n, dtype=np.int64)
        small: list[Positions] = [every] * len(probes)
        for key, (user, mtype) in enumerate(scopes):
            pos = index.of_scope(every, now, user, mtype)
            rows = [j for j, mine in enumerate(keys) if mine == key]
            block = sims if len(rows) == len(probes) and pos.size == index.n \
                else sims[np.ix_(np.asarray(rows, dtype=np.int64), pos)]
            for j, top in zip(rows, _top_rows(block, k), strict=True):
                small[j] = pos[top]
        return small
    coarse = index.coarse
    if coarse is None or coarse.stale(index.n):
        coarse = index.coarse = CoarseIndex(index.matrix)
    filters = [_scoped(index, now, user, mtype) for user, mtype in scopes]
    first = nearest_many(coarse, index.matrix, queries, keys, filters, k)
    out: list[Positions] = []
    for j, p in enumerate(probes):
        got = first[j]
        out.append(got if got is not None else _widened(index, coarse, queries[j], p, now, k))
    return out


def _scoped(index: ScopeIndex, now: int, user_id: str | None, mtype: Any) -> Scoped:
    return lambda positions: index.of_scope(positions, now, user_id, mtype)


def _widened(index: ScopeIndex, coarse: CoarseIndex, query: npt.NDArray[np.float32],
             p: Probe, now: int, k: int) -> Positions:
    """One probe whose closest lists hold too few rows of its scope: more lists, round by
    round, until they hold ``k`` (or the search has gone as far as it may)."""
    order = coarse.probe_order(_dots(coarse.centroids, query))
    pos = np.zeros(0, dtype=np.int64)
    for width in probe_rounds(order.shape[0]):
        pos = index.of_scope(coarse.positions(order[:width]), now, p.user_id, p.type)
        if pos.size >= k:
            break
    found: Positions = pos[_top(_dots(index.matrix[pos], query), k)]
    return found


def _current(conn: Any, index: ScopeIndex, near: Sequence[Positions],
             lexical: Sequence[Sequence[int]], probes: Sequence[Probe],
             queries: npt.NDArray[np.float32], now: int) -> list[Found]:
    """Each probe's ``(id, text, cosine)`` of the first :data:`CONFLICT_NEIGHBOURS` current
    rows of its ``near`` (closest first) and of every current row of its ``lexical``: the
    cache holds every live row, superseded ones too, so SQLite leaves those out here, in
    one statement for the whole batch (each probe then keeps the rows of its own user and
    type)."""
    wanted = [list(dict.fromkeys([*n.tolist(), *lex])) if n.size or lex else []
              for n, lex in zip(near, lexical, strict=True)]
    every = sorted({pos for positions in wanted for pos in positions})
    if not every:
        return [[] for _ in probes]
    rows = conn.execute(
        # ``+column``: no index on those columns; the rows are fetched by rid
        f"SELECT rid, id, content, user_id, type FROM memories WHERE rid IN {IN_JSON} "
        f"AND +agent_id = ? AND {VISIBLE} "
        f"AND json_extract(metadata, '$.{TIME_KEY}.superseded_by') IS NULL",
        (json.dumps(index.rids[every].tolist()), probes[0].agent_id, now)).fetchall()
    # the rows current in each probe's scope (its user and type), by rid
    current: dict[tuple[Any, str], dict[int, tuple[str, str]]] = {
        (p.user_id, p.type.value): {} for p in probes}
    for rid, mid, content, user_id, mtype in rows:
        mine = current.get((user_id, mtype))
        if mine is not None:
            mine[rid] = (mid, content)
    out: list[Found] = []
    for j, (probe, positions) in enumerate(zip(probes, wanted, strict=True)):
        found: Found = []
        out.append(found)
        if not positions:
            continue
        rids = index.rids[positions].tolist()
        sims = _dots(index.matrix[positions], queries[j]).tolist()
        mine = current[(probe.user_id, probe.type.value)]
        keep = set(lexical[j])
        nearest = 0
        for rid, sim, pos in zip(rids, sims, positions, strict=True):
            got = mine.get(rid)
            if got is None:
                continue
            if nearest < CONFLICT_NEIGHBOURS or pos in keep:
                found.append((got[0], got[1], sim))
            nearest += pos not in keep
    return out
