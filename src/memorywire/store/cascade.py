"""``forget(cascade=True)``: the seeds and every memory derived from them, as one id list.

Every store that declares :attr:`~memorywire.store.base.Capability.DERIVATION` keeps the
``derived_from`` edges it is given and lists them back, so the cascade is computed once, here,
over the store's own ``list``: the seeds (the request's ids, or what its filter matches),
then their descendants to a fixed point (:func:`memorywire.core.provenance.descendants`). The
result is the same request with those ids, no filter and no ``cascade``, which every store
already knows how to forget. A store that cannot promise to keep edges (or a router with such
a child) refuses with ``capability_missing``: a cascade that quietly stops at the seeds is the
failure this operation exists to prevent.

The walk stays inside the request's agent (and user, when given): derivation edges never
cross agents, and a forget may not reach memories outside the caller's scope.
"""

from __future__ import annotations

from memorywire.core.filters import matches_filter
from memorywire.core.provenance import descendants
from memorywire.core.records import ListQuery
from memorywire.errors import CapabilityMissing
from memorywire.store.base import Capability, MemoryStore, list_all
from memorywire.wire.models import ForgetRequest, MemoryRecord

__all__ = ["expand_cascade", "require_derivation"]

_PAGE = 1000


def require_derivation(store: MemoryStore) -> None:
    """Refuse a cascade on a store that cannot follow derivation edges."""
    if Capability.DERIVATION not in store.capabilities:
        raise CapabilityMissing(
            f"store {store.name!r} does not declare derivation: it cannot follow "
            "derived_from edges, so cascade is unsupported (forget without cascade)")


async def _scope(store: MemoryStore, req: ForgetRequest) -> list[MemoryRecord]:
    return await list_all(store, ListQuery(agent_id=req.agent_id, user_id=req.user_id,
                                           include_archived=True, limit=_PAGE))


async def expand_cascade(store: MemoryStore, req: ForgetRequest) -> ForgetRequest:
    """``req`` itself when it asks no cascade; else the expanded, cascade-free request."""
    if not req.cascade:
        return req
    require_derivation(store)
    rows = await _scope(store, req)
    if req.filter is None:
        seeds = list(dict.fromkeys(req.ids or []))
    else:  # ids and a filter select the ids the filter matches, as a plain forget does
        named = None if req.ids is None else set(req.ids)
        seeds = [r.id for r in rows if (named is None or r.id in named)
                 and matches_filter(r.metadata or {}, req.filter)]
    ids = [*seeds, *descendants(rows, seeds)]
    return req.model_copy(update={"ids": ids, "filter": None, "cascade": False})
