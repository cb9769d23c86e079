"""Rank fusion over the ranked lists of several stores, and the graph-hop boost.

Pure functions over plain data: each store contributes one list of ``(id, score)`` pairs,
best first. An id that occurs twice in one list counts once, at its first (best) position.

Modes (wire v0):

* ``rrf`` — Σ over lists of ``1 / (k + rank)``, rank counted from 0 (a top hit scores 1/60
  with the default ``k = 60``). Score-independent: a store cannot buy influence by
  reporting large scores, only by ranking, and each list contributes at most ``1/k`` per id.
* ``max`` — the highest score any list reports for the id.
* ``weighted`` — Σ ``weight(list) × score``; a list without a weight counts 1.0.

``quorum`` makes an id eligible only when at least ``quorum`` distinct lists contain it, so
one store alone cannot place an id it made up.

Ties are broken deterministically, in this order: higher fused score, then present in more
lists, then better (lower) best rank, then id in ascending code-point order. Sums are taken in
the order the lists are given, so equal input gives bit-identical output.

The *best store* of an id (reported as ``source_store``) is the list that ranked it best; a
tie in rank goes to the higher reported score, then to the list given first (the router
passes its children in declared order, so the primary wins).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from memorywire.errors import InvalidRequest

__all__ = [
    "DEFAULT_RRF_K",
    "GRAPH_BOOST",
    "FusedItem",
    "Ranked",
    "boosted",
    "checked_weight",
    "fuse",
    "graph_boost",
    "hop_distances",
    "max_fusion",
    "rrf",
    "weighted",
]


def checked_weight(weight: float, name: str) -> float:
    """``weight`` when it is a finite number >= 0 (0 turns a boost off), else
    ``invalid_request`` naming the setting ``name``: a re-ranking weight that cannot work is
    refused when the store is made, never ignored at recall time."""
    if not (isinstance(weight, int | float) and not isinstance(weight, bool)
            and math.isfinite(weight) and weight >= 0):
        raise InvalidRequest(f"{name} must be a finite number >= 0, got {weight!r}")
    return float(weight)


#: One store's answer: ``(id, score)`` pairs, best first.
Ranked = Sequence[tuple[str, float]]

DEFAULT_RRF_K = 60
#: v0: final = fused × (1 + GRAPH_BOOST / (1 + min_hop_distance)).
GRAPH_BOOST = 0.1


_T = TypeVar("_T")


def boosted(items: Sequence[_T], inside: Sequence[bool], weight: float,
            k: int = DEFAULT_RRF_K) -> list[_T]:
    """``items`` (best first) re-ranked by RRF of their own order and the sub-list of those
    ``inside`` at ``weight``: how a query-side cue (a time window, a named subject) lifts the
    hits it points at without touching their scores. Unchanged when the cue picks none or
    all of them (the second list would only restate the first)."""
    if all(inside) or not any(inside):
        return list(items)
    fused: list[tuple[float, int]] = []
    within = 0
    for rank, is_in in enumerate(inside):
        score = 1.0 / (k + rank)
        if is_in:
            score += weight / (k + within)
            within += 1
        fused.append((-score, rank))
    return [items[rank] for _, rank in sorted(fused)]


@dataclass(frozen=True)
class FusedItem:
    id: str
    score: float
    #: The list that ranked this id best (see module docstring for ties).
    best_store: str
    best_rank: int
    #: Names of the lists that contain the id, in the order the lists were given.
    stores: tuple[str, ...]
    #: Neighbour ids that earned a graph boost, nearest first; empty without a boost.
    supporting: tuple[str, ...] = ()


@dataclass
class _Acc:
    score: float
    best_store: str
    best_rank: int
    best_raw: float
    stores: list[str]


def _sort_key(item: FusedItem) -> tuple[float, int, int, str]:
    return (-item.score, -len(item.stores), item.best_rank, item.id)


def _fuse(
    lists: Mapping[str, Ranked],
    contribution: Callable[[str, int, float], float],
    combine: Callable[[float, float], float],
    quorum: int,
) -> list[FusedItem]:
    if quorum < 1:
        raise ValueError("quorum must be at least 1")
    acc: dict[str, _Acc] = {}
    for store, ranked in lists.items():
        seen: set[str] = set()
        for rank, (item_id, raw) in enumerate(ranked):
            if item_id in seen:
                continue
            seen.add(item_id)
            part = contribution(store, rank, raw)
            cur = acc.get(item_id)
            if cur is None:
                acc[item_id] = _Acc(part, store, rank, raw, [store])
                continue
            cur.score = combine(cur.score, part)
            cur.stores.append(store)
            if rank < cur.best_rank or (rank == cur.best_rank and raw > cur.best_raw):
                cur.best_store, cur.best_rank, cur.best_raw = store, rank, raw
    out = [
        FusedItem(i, a.score, a.best_store, a.best_rank, tuple(a.stores))
        for i, a in acc.items()
        if len(a.stores) >= quorum
    ]
    out.sort(key=_sort_key)
    return out


def _add(a: float, b: float) -> float:
    return a + b


def rrf(
    lists: Mapping[str, Ranked], *, k: int = DEFAULT_RRF_K, quorum: int = 1,
    trust: Mapping[str, float] | None = None,
) -> list[FusedItem]:
    """Reciprocal rank fusion; reported scores are ignored (``trust`` scales a list's
    positional contributions, 1.0 when absent)."""
    if k < 1:
        raise ValueError("rrf k must be at least 1 (rank 0 would divide by zero)")
    t = dict(trust or {})
    return _fuse(lists, lambda s, rank, _raw: t.get(s, 1.0) / (k + rank), _add, quorum)


def max_fusion(lists: Mapping[str, Ranked], *, quorum: int = 1) -> list[FusedItem]:
    """Highest reported score wins; trusts every store's score scale."""
    return _fuse(lists, lambda _s, _rank, raw: raw, max, quorum)


def weighted(
    lists: Mapping[str, Ranked],
    weights: Mapping[str, float] | None = None,
    *,
    quorum: int = 1,
) -> list[FusedItem]:
    """Weighted sum of reported scores; a list missing from ``weights`` weighs 1.0."""
    w = dict(weights or {})
    for name, value in w.items():
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"weight of {name!r} must be finite and non-negative")
    return _fuse(lists, lambda s, _rank, raw: w.get(s, 1.0) * raw, _add, quorum)


def fuse(
    lists: Mapping[str, Ranked],
    mode: str = "rrf",
    *,
    weights: Mapping[str, float] | None = None,
    quorum: int = 1,
    rrf_k: int = DEFAULT_RRF_K,
    trust: Mapping[str, float] | None = None,
) -> list[FusedItem]:
    """Dispatch on the wire ``fusion`` value (``rrf``, ``max`` or ``weighted``).

    ``trust`` (a router's per-store setting, 1.0 when absent) scales a list's scores (the
    reported ones for ``max`` and ``weighted``, a positional one for ``rrf``) before
    fusion, so in every mode a less trusted store places its ids lower.
    """
    mode = str(getattr(mode, "value", mode))
    if mode == "rrf":
        return rrf(lists, k=rrf_k, quorum=quorum, trust=trust)
    if trust:
        lists = {name: [(item, raw * trust.get(name, 1.0)) for item, raw in ranked]
                 for name, ranked in lists.items()}
    if mode == "max":
        return max_fusion(lists, quorum=quorum)
    if mode == "weighted":
        return weighted(lists, weights, quorum=quorum)
    raise ValueError(f"unknown fusion mode {mode!r}")


def hop_distances(
    adjacency: Mapping[str, Iterable[str]], sources: Iterable[str], hops: int
) -> dict[str, dict[str, int]]:
    """Shortest hop distance (1..hops) from each source to every node it reaches.

    Edges are read as undirected: a link between two memories relates both of them.
    """
    undirected: dict[str, set[str]] = {}
    for a, bs in adjacency.items():
        for b in bs:
            if a == b:
                continue
            undirected.setdefault(a, set()).add(b)
            undirected.setdefault(b, set()).add(a)
    out: dict[str, dict[str, int]] = {}
    for src in sources:
        dist: dict[str, int] = {src: 0}
        queue: deque[str] = deque([src])
        while queue:
            node = queue.popleft()
            if dist[node] >= hops:
                continue
            for nxt in sorted(undirected.get(node, ())):
                if nxt not in dist:
                    dist[nxt] = dist[node] + 1
                    queue.append(nxt)
        del dist[src]
        out[src] = dist
    return out


def graph_boost(
    fused: Sequence[FusedItem],
    distances: Mapping[str, Mapping[str, int]],
    hops: int,
    *,
    factor: float = GRAPH_BOOST,
) -> list[FusedItem]:
    """Boost items whose graph neighbours within ``hops`` are also fused candidates.

    ``distances[id]`` maps a neighbour to its hop distance from ``id`` (as
    :func:`hop_distances` returns). Only neighbours present in ``fused`` count; the result is
    re-sorted with the same tie rules, and ``supporting`` lists the counted neighbours,
    nearest first, then by id.
    """
    if hops <= 0:
        return list(fused)
    candidates = {item.id for item in fused}
    out: list[FusedItem] = []
    for item in fused:
        near = {
            n: d
            for n, d in distances.get(item.id, {}).items()
            if n != item.id and n in candidates and 1 <= d <= hops
        }
        if not near:
            out.append(item)
            continue
        min_d = min(near.values())
        supporting = tuple(sorted(near, key=lambda n: (near[n], n)))
        out.append(
            replace(item, score=item.score * (1.0 + factor / (1.0 + min_d)), supporting=supporting)
        )
    out.sort(key=_sort_key)
    return out
