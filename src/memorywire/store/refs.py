"""Whether a merge's references name anything: the check that stops a silent no-op merge.

A merge whose duplicates resolve to nothing answers ``merged_count 0``, which is right for a
retry of a merge that already happened (the duplicates were merged away) and wrong for a
misspelt or another agent's id, where the caller believes the merge worked. Stores resolve
references against live rows only, so this check asks, only when nothing was merged, whether
each reference is live, merged away, or an entity name — on any of the given stores.
"""

from __future__ import annotations

from collections.abc import Sequence

from memorywire.core.records import ListQuery
from memorywire.errors import MemorywireError
from memorywire.store.base import MemoryStore
from memorywire.wire.models import MergeRequest

__all__ = ["unknown_refs"]


async def _known(store: MemoryStore, req: MergeRequest, ref: str) -> bool:
    if await store.get(req.agent_id, ref, req.user_id) is not None:
        return True
    reader = getattr(store, "merged_into", None)
    if reader is not None and await reader(req.agent_id, ref, req.user_id) is not None:
        return True
    named = await store.list(ListQuery(agent_id=req.agent_id, user_id=req.user_id,
                                       filter={"entity_name": ref}, limit=1))
    return bool(named)


async def unknown_refs(stores: Sequence[MemoryStore], req: MergeRequest) -> list[str]:
    """The duplicates no store knows (a store that fails to answer counts as knowing)."""
    out: list[str] = []
    for ref in dict.fromkeys(req.duplicates):
        known = False
        for store in stores:
            try:
                known = await _known(store, req, ref)
            except MemorywireError:
                known = True  # inconclusive: never refuse on a store's outage
            if known:
                break
        if not known:
            out.append(ref)
    return out
