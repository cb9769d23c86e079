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
"""

from __future__ import annotations

import json
import time
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memorywire.core.contradiction import subject_terms
from memorywire.core.timeline import TIME_KEY
from memorywire.store._coarse_index import COARSE_MIN_ROWS, CoarseIndex, probe_rounds
from memorywire.store._vector_cache import ScopeIndex
from memorywire.store.sqlite.db import IN_JSON, VISIBLE, SqliteDb
from memorywire.store.sqlite.schema import agent_number
from memorywire.store.sqlite.search import lexical_rids
from memorywire.store.timeline import CONFLICT_LEXICAL, CONFLICT_NEIGHBOURS, Found, Probe

__all__ = ["CONFLICT_LEXICAL_BUDGET", "conflict_candidates"]

#: Most full-text rows one write's subject search may rank (summed over its kept words).
CONFLICT_LEXICAL_BUDGET = 300
#: How long a word's row count is reused (see _Counts).
COUNT_TTL_S = 60.0
_COUNTS_MAX = 8192
#: Subject words searched per write (its own first, then its slot class's).
_TERMS = 8
#: Nearest rows read per write before superseded ones are left out (a chain of updates of
#: one slot sits close together; its current value must still make the cut).
_OVERFETCH = 2

Positions = npt.NDArray[np.int64]


def conflict_candidates(db: SqliteDb, probes: Sequence[Probe]) -> list[Found]:
    """One :data:`~memorywire.store.timeline.Found` per probe, read in one transaction:
    what was stored before the batch (the batch is not compared with itself)."""
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
            near = _nearest(index, queries, group, now)
            rid_range = (int(index.rids.min()), int(index.rids.max()))
            rows = int(conn.execute("SELECT coalesce(max(rid), 0) FROM memories").fetchone()[0])
            for j, (n, probe) in enumerate(zip(at, group, strict=True)):
                lexical = _lexical(conn, index, probe, now, rid_range, rows)
                if near[j].size or lexical:
                    out[n] = _current(conn, index, near[j], lexical, probe, queries[j], now)
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


def _nearest(index: ScopeIndex, queries: npt.NDArray[np.float32], probes: Sequence[Probe],
             now: int) -> list[Positions]:
    """Each probe's nearest positions of its user and type (over-fetched, see _OVERFETCH)."""
    k = CONFLICT_NEIGHBOURS * _OVERFETCH
    out: list[Positions] = []
    if index.n < COARSE_MIN_ROWS:
        # A small scope: one matrix product for the batch, each probe's scope masked once.
        sims = queries @ index.matrix.T
        every = np.arange(index.n, dtype=np.int64)
        scopes: dict[tuple[str | None, Any], Positions] = {}
        for j, p in enumerate(probes):
            key = (p.user_id, p.type)
            if key not in scopes:
                scopes[key] = index.of_scope(every, now, p.user_id, p.type)
            pos = scopes[key]
            out.append(pos[_top(sims[j, pos], k)])
        return out
    coarse = index.coarse
    if coarse is None or coarse.stale(index.n):
        coarse = index.coarse = CoarseIndex(index.matrix)
    lists = queries @ coarse.centroids.T  # every probe's closeness to every list at once
    for j, p in enumerate(probes):
        order = coarse.probe_order(lists[j])
        pos = np.zeros(0, dtype=np.int64)
        for width in probe_rounds(order.shape[0]):
            pos = index.of_scope(coarse.positions(order[:width]), now, p.user_id, p.type)
            if pos.size >= k:
                break
        out.append(pos[_top(_dots(index.matrix[pos], queries[j]), k)])
    return out


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


def _units(conn: Any, terms: Sequence[str], rows: int) -> tuple[list[str], int]:
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


def _lexical(conn: Any, index: ScopeIndex, probe: Probe, now: int,
             rid_range: tuple[int, int], rows: int) -> list[int]:
    """Positions of the best full-text matches of the probe's subject words in its scope."""
    units = _units(conn, subject_terms(probe.text, _TERMS), rows)
    if not units[0]:
        return []
    rids = lexical_rids(conn, probe.agent_id, "", CONFLICT_LEXICAL_BUDGET,
                        scope_rows=index.n, units=units, rid_range=rid_range)
    found = [p for p in map(index.pos.get, rids) if p is not None]
    if not found:
        return []
    mine = index.of_scope(np.asarray(found, dtype=np.int64), now, probe.user_id, probe.type)
    out: list[int] = mine[:CONFLICT_LEXICAL].tolist()
    return out


def _current(conn: Any, index: ScopeIndex, near: Positions, lexical: Sequence[int],
             probe: Probe, query: npt.NDArray[np.float32], now: int) -> Found:
    """``(id, text, cosine)`` of the first :data:`CONFLICT_NEIGHBOURS` current rows of
    ``near`` (closest first) and of every current row of ``lexical``: the cache holds every
    live row, superseded ones too, so SQLite leaves those out here."""
    positions = list(dict.fromkeys([*near.tolist(), *lexical]))
    rids = index.rids[positions].tolist()
    rows = conn.execute(
        # ``+column``: no index on those columns; the rows are fetched by rid
        f"SELECT rid, id, content FROM memories WHERE rid IN {IN_JSON} AND +agent_id = ? "
        f"AND +user_id IS ? AND +type = ? AND {VISIBLE} "
        f"AND json_extract(metadata, '$.{TIME_KEY}.superseded_by') IS NULL",
        (json.dumps(rids), probe.agent_id, probe.user_id, probe.type.value, now)).fetchall()
    current = {int(r[0]): (str(r[1]), str(r[2])) for r in rows}
    sims = _dots(index.matrix[positions], query).tolist()
    keep = set(lexical)
    out: Found = []
    nearest = 0
    for rid, sim, pos in zip(rids, sims, positions, strict=True):
        got = current.get(rid)
        if got is None:
            continue
        if nearest < CONFLICT_NEIGHBOURS or pos in keep:
            out.append((got[0], got[1], float(sim)))
        nearest += pos not in keep
    return out
