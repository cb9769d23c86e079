"""Coarse clusters of one scope's vectors, so a write finds its nearest memories without
comparing it with all of them.

The conflict detector needs, for every write, the few memories of the scope closest to it
(:mod:`memorywire.store.timeline`). An exact search costs a matrix-vector product and a
partial sort over the whole scope, so a write would cost more the more the agent remembers
(docs/benchmarks.md, pg35). This is an
inverted-file index (IVF): centroids from a few rounds of spherical k-means on a sample (one
per ~192 rows, at least ``sqrt(n)``, at most 2,048), every row filed under its closest
centroid, and a search that compares the new vector with the centroids and then only with
the rows of the closest few lists. A search reads about the same number of rows in a large
scope whatever its size (a few lists of ~192), plus one dot product per centroid; the answer
is approximate (the closest memory can sit just across a list border), which the detector
tolerates: it already named at most one memory by meaning, and its word rules get their own
candidates from the full-text index.

It lives beside :class:`~memorywire.store._vector_cache.ScopeIndex` (positions are that
matrix's rows) and only ever grows with it: rows appended to the scope are filed under their
closest centroid; once the scope has doubled since the centroids were trained they are trained
again. Anything else (a forget, an update) makes the store reload the scope, and the reloaded
scope builds a fresh one on first use.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["COARSE_MIN_ROWS", "CoarseIndex", "nearest_many", "probe_rounds"]

#: Below this many rows an exact search is as cheap as probing, and a write uses that.
COARSE_MIN_ROWS = 4096
#: Lists probed first; more (doubling, up to :data:`_MAX_PROBE`) only when those hold too few
#: rows of the write's own user and type.
_FIRST_PROBE = 8
_MAX_PROBE = 64
#: Rows per list a large scope aims at (a probe then reads about 8 lists of this size
#: whatever the scope), and the most lists (training and filing cost grow with them).
_ROWS_PER_LIST = 192
_MAX_LISTS = 2048
#: Training: rows sampled per centroid, and k-means rounds over that sample.
_SAMPLE_PER_LIST = 24
_ROUNDS = 4
#: Rows assigned per matrix product when (re)filing a whole scope (bounds the scratch memory).
_CHUNK = 16_384

Matrix = npt.NDArray[np.float32]
Positions = npt.NDArray[np.int64]


def _closest(rows: Matrix, centroids: Matrix) -> npt.NDArray[np.int32]:
    out = np.empty(rows.shape[0], dtype=np.int32)
    for start in range(0, rows.shape[0], _CHUNK):
        part = rows[start:start + _CHUNK] @ centroids.T
        out[start:start + _CHUNK] = np.argmax(part, axis=1)
    return out


def _unit(m: Matrix) -> Matrix:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Matrix = (m / norms).astype(np.float32, copy=False)
    return out


class CoarseIndex:
    """Lists of row positions by closest centroid, over the first ``n`` rows of a matrix."""

    def __init__(self, matrix: Matrix, seed: int = 0) -> None:
        n = int(matrix.shape[0])
        self.trained_n = n
        lists = max(1, math.isqrt(n), min(n // _ROWS_PER_LIST, _MAX_LISTS))
        rng = np.random.default_rng(seed)
        sample = matrix[np.sort(rng.choice(n, size=min(n, lists * _SAMPLE_PER_LIST),
                                           replace=False))]
        centroids = sample[rng.choice(sample.shape[0], size=lists, replace=False)].copy()
        for _ in range(_ROUNDS):  # spherical k-means: mean direction of each list
            owner = _closest(sample, centroids)
            sums = np.zeros_like(centroids)
            np.add.at(sums, owner, sample)
            filled = np.bincount(owner, minlength=lists) > 0
            centroids[filled] = _unit(sums[filled])  # an empty list keeps its centroid
        self.centroids: Matrix = np.ascontiguousarray(centroids)
        self._owner = _closest(matrix, self.centroids)
        self._n = n
        self._file()

    def _file(self) -> None:
        """Sort positions by list (a CSR layout): a probe then slices, it does not search."""
        owner = self._owner[: self._n]
        self._order: Positions = np.argsort(owner, kind="stable").astype(np.int64)
        self._starts = np.searchsorted(owner[self._order],
                                       np.arange(self.centroids.shape[0] + 1))
        self._filed = self._n

    @property
    def n(self) -> int:
        return self._n

    def stale(self, n: int) -> bool:
        """Whether a scope of ``n`` rows has outgrown the centroids (trained at half)."""
        return n >= 2 * self.trained_n

    def add(self, rows: Matrix) -> None:
        """File rows appended to the scope (the next positions) under their closest lists."""
        if rows.shape[0] == 0:
            return
        owner = _closest(np.asarray(rows, dtype=np.float32), self.centroids)
        need = self._n + int(owner.shape[0])
        if need > self._owner.shape[0]:
            grown = np.zeros(max(need, 2 * self._owner.shape[0]), dtype=np.int32)
            grown[: self._n] = self._owner[: self._n]
            self._owner = grown
        self._owner[self._n:need] = owner
        self._n = need
        if self._n - self._filed > max(1024, self._filed // 8):
            self._file()  # the unfiled tail is scanned by every probe: keep it short

    def probe_order(self, sims: npt.NDArray[np.float32]) -> npt.NDArray[np.intp]:
        """Lists by closeness of their centroid to a query (``sims``: the query's dot
        product with every centroid), as far as a search may go."""
        far = min(_MAX_PROBE, sims.shape[0])
        if far == sims.shape[0]:
            return np.argsort(-sims)
        near = np.argpartition(-sims, far - 1)[:far]
        ordered: npt.NDArray[np.intp] = near[np.argsort(-sims[near])]
        return ordered

    def positions(self, lists: npt.NDArray[np.intp]) -> Positions:
        """Every position filed under ``lists`` (the unfiled tail's too)."""
        parts = [self._order[self._starts[c]:self._starts[c + 1]] for c in lists.tolist()]
        if self._filed < self._n:
            tail = np.arange(self._filed, self._n, dtype=np.int64)
            parts.append(tail[np.isin(self._owner[self._filed:self._n], lists)])
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def members(self, lists: npt.NDArray[np.intp]) -> dict[int, Positions]:
        """Each of ``lists``' positions (as :meth:`positions` gives one list's), the unfiled
        tail sorted once for all of them rather than searched once per list."""
        tail_owner = self._owner[self._filed:self._n]
        tail_order = np.argsort(tail_owner, kind="stable")
        tail_starts = np.searchsorted(tail_owner[tail_order],
                                      np.arange(self.centroids.shape[0] + 1))
        out: dict[int, Positions] = {}
        for c in lists.tolist():
            filed = self._order[self._starts[c]:self._starts[c + 1]]
            tail = tail_order[tail_starts[c]:tail_starts[c + 1]]
            out[c] = np.concatenate([filed, tail + self._filed]) if tail.size else filed
        return out


def probe_rounds(lists: int) -> list[int]:
    """How many lists each round of a search probes: 8, then 16, 32, 64 (at most ``lists``)."""
    out, width = [], _FIRST_PROBE
    while True:
        out.append(min(width, lists))
        if width >= min(_MAX_PROBE, lists):
            return out
        width *= 2


Scoped = Callable[[Positions], Positions]


def nearest_many(coarse: CoarseIndex, matrix: Matrix, queries: Matrix, keys: Sequence[int],
                 scopes: Sequence[Scoped], k: int) -> list[Positions | None]:
    """Each query's ``k`` nearest positions within its scope (``scopes[keys[j]]`` keeps the
    positions of query ``j``'s scope) among the rows of its first round of lists (the
    :data:`_FIRST_PROBE` closest), closest first; ``None`` for a query whose lists hold
    fewer than ``k`` rows of its scope (a search that must widen, one query at a time).

    The batch's searches as one: the queries are grouped by list, and each list's rows
    are gathered once and multiplied by every query probing it in one product, where a
    search per query gathered and multiplied the same rows once per query that probed them.
    The result is the same set a single search's first round finds (up to rounding ties)."""
    count = queries.shape[0]
    lists = queries @ coarse.centroids.T
    width = min(_FIRST_PROBE, lists.shape[1])
    first = np.argpartition(-lists, width - 1, axis=1)[:, :width] \
        if width < lists.shape[1] else np.tile(np.arange(width), (count, 1))
    who = np.repeat(np.arange(count), width)
    slot = np.tile(np.arange(width), count)
    where = first.ravel()
    key = np.asarray(keys, dtype=np.int64)[who]
    order = np.lexsort((who, key, where))
    who, slot, where, key = who[order], slot[order], where[order], key[order]
    cut = np.flatnonzero((np.diff(where) != 0) | (np.diff(key) != 0)) + 1
    members = coarse.members(np.unique(where))
    # Each query's candidates in a row of its own: k per list it probes, padded.
    best = np.full((count, width * k), -np.inf, dtype=np.float32)
    at = np.zeros((count, width * k), dtype=np.int64)
    seen = np.zeros(count, dtype=np.int64)
    columns = np.arange(k)
    for lo, hi in zip([0, *cut.tolist()], [*cut.tolist(), who.shape[0]], strict=True):
        pos = scopes[int(key[lo])](members[int(where[lo])])
        if pos.size == 0:
            continue
        mine = who[lo:hi]
        seen[mine] += pos.size
        sims = queries[mine] @ matrix[pos].T
        if pos.size > k:
            top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
            sims = np.take_along_axis(sims, top, axis=1)
            got = pos[top]
        else:
            got = np.broadcast_to(pos, sims.shape)
        into = (slot[lo:hi] * k)[:, None] + columns[: got.shape[1]]
        best[mine[:, None], into] = sims
        at[mine[:, None], into] = got
    top = np.argpartition(-best, k - 1, axis=1)[:, :k] if best.shape[1] > k \
        else np.tile(np.arange(best.shape[1]), (count, 1))
    ranked = np.take_along_axis(top, np.argsort(-np.take_along_axis(best, top, axis=1),
                                                axis=1, kind="stable"), axis=1)
    nearest = np.take_along_axis(at, ranked, axis=1)
    return [nearest[j] if seen[j] >= k else None for j in range(count)]
