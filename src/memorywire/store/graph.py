"""Typed graph edges at the store level: the single-store hop boost and neighbours by type.

A memory's edges are stored with it (see :mod:`memorywire.core.content`); these helpers give
every store the two graph reads v0.1 promises:

* :func:`graph_recall` — ``hops > 0`` on one store. The router's boost is the same formula
  (:func:`memorywire.core.fusion.graph_boost`); a single store over-fetches the same way, asks
  its own ``neighbours`` and cuts to ``k``, so ``hops`` means the same thing with or without a
  router.
* :func:`linked` — "which live memories have an edge of type T to X" (what was derived from
  X, what supersedes X) and :func:`links_from` (the edges X itself holds). Written over
  ``MemoryStore.list``, so it works on every store, wrapper and router alike; it reads the
  agent's live memories once, which is the price of needing nothing new from a backend.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from memorywire.core.content import EDGE_TYPES
from memorywire.core.fusion import FusedItem, graph_boost
from memorywire.core.records import ListQuery
from memorywire.errors import CapabilityMissing, NotFound
from memorywire.store.base import MemoryStore, list_all
from memorywire.wire.models import Link, MemoryRecord, RecallRequest, RecallResponse

__all__ = ["EDGE_TYPES", "graph_recall", "linked", "links_from", "refuse_hops"]

_PAGE = 1000
_MAX_FETCH = 1000


class _Neighbours(Protocol):
    @property
    def name(self) -> str: ...

    async def neighbours(
        self, agent_id: str, ids: Sequence[str], hops: int, user_id: str | None = None
    ) -> dict[str, dict[str, int]]: ...


def refuse_hops(store_name: str, req: RecallRequest) -> None:
    """A store that keeps no edges must say so rather than answer as if ``hops`` were 0."""
    if req.hops:
        raise CapabilityMissing(
            f"hops > 0 needs the graph capability; store {store_name!r} keeps no edges")


async def graph_recall(
    store: _Neighbours, req: RecallRequest,
    recall: Callable[[RecallRequest], Awaitable[RecallResponse]],
) -> RecallResponse:
    """``recall`` (the store's own, with ``hops=0``) over-fetched, boosted by edges, cut to k."""
    wide = req.model_copy(update={"hops": 0, "k": min(_MAX_FETCH, max(2 * req.k, req.k + 10))})
    resp = await recall(wide)
    hits = {h.id: h for h in resp.results}
    if not hits:
        return resp
    distances = await store.neighbours(req.agent_id, list(hits), req.hops, req.user_id)
    items = [FusedItem(h.id, h.score, store.name, rank, (store.name,))
             for rank, h in enumerate(resp.results, start=1)]
    boosted = graph_boost(items, distances, req.hops)[: req.k]
    results = [hits[f.id].model_copy(update={"score": f.score, "supporting": list(f.supporting)})
               for f in boosted]
    return resp.model_copy(update={"results": results})


async def _live(store: MemoryStore, agent_id: str, user_id: str | None) -> list[MemoryRecord]:
    return await list_all(store, ListQuery(agent_id=agent_id, user_id=user_id, limit=_PAGE))


async def linked(
    store: MemoryStore, agent_id: str, id: str, edge_type: str, *, user_id: str | None = None
) -> list[MemoryRecord]:
    """Live memories holding an edge of ``edge_type`` that points at ``id``, oldest first.

    ``linked(s, a, x, "derived_from")`` is what was derived from x; ``"supersedes"`` what
    supersedes x. ``id`` need not be live: a forgotten memory's derivatives are still found.
    """
    return [r for r in await _live(store, agent_id, user_id)
            if any(ln.id == id and ln.type == edge_type for ln in r.links or ())]


async def links_from(
    store: MemoryStore, agent_id: str, id: str, edge_type: str | None = None, *,
    user_id: str | None = None,
) -> list[Link]:
    """The edges the live memory ``id`` holds (of ``edge_type`` when given)."""
    record = await store.get(agent_id, id, user_id)
    if record is None:
        raise NotFound(f"memory {id!r} not found")
    return [ln for ln in record.links or () if edge_type is None or ln.type == edge_type]
