"""Checks that need the store but must run before a write is staged or applied.

The door (:mod:`memorywire.wire.door`) sees one document; these see what the document
points at. Each refuses, before anything is logged or staged, a request that the store would
otherwise accept wrongly or refuse halfway:

* a ``merge_content`` merge whose joined text would exceed the content limit (the limit on
  ``remember`` was otherwise bypassed by merging many large memories into one);
* a remember with an explicit id held under another ``user_id`` of the same agent: the store
  compares only content, so it answered 409 or 200 depending on whether a guess matched
  another user's memory, and the 200 acknowledged a write the caller does not own. The
  answer is now ``conflict`` whatever the content, the same as for any other id in use;
* ``approval_required`` on a server without governance, which used to be dropped silently.
"""

from __future__ import annotations

from memorywire.errors import CapabilityMissing, Conflict, ErrorDetail, PayloadTooLarge
from memorywire.server.limits import Limits
from memorywire.store.base import Capability, ListQuery, MemoryStore
from memorywire.wire.models import MergeRequest, MergeStrategy, RememberRequest

__all__ = ["check_approval_capability", "check_id_owner", "check_merge_size"]

#: The most rows a merge-size check reads for one entity name before giving up counting.
_NAMED_ROWS = 1000


#: What turns governance on, for every message that needs it: on by default for the default
#: store, off for a store named by URL until it is given a governance database.
GOVERNANCE_OFF = (
    "governance is off for this store (it is on by default only for the default store; for "
    "another, give a governance database: --governance-db PATH, governance_db in the "
    "configuration, or Memory(store, config=ServerConfig(governance_db=PATH)))"
)


def check_approval_capability(store: MemoryStore, req: RememberRequest) -> None:
    if req.approval_required and Capability.GOVERNANCE not in store.capabilities:
        raise CapabilityMissing(
            f"approval_required needs governance, and {GOVERNANCE_OFF}; the write was not "
            "made",
            [ErrorDetail("/approval_required", "capability", "needs governance")],
        )


async def check_id_owner(store: MemoryStore, req: RememberRequest) -> None:
    if req.id is None:
        return
    held = await store.get(req.agent_id, req.id)
    if held is not None and held.user_id != req.user_id:
        raise Conflict(
            f"id {req.id!r} already holds a different memory",
            [ErrorDetail("/id", "conflict", "id in use")],
        )


async def check_merge_size(store: MemoryStore, req: MergeRequest, limits: Limits) -> None:
    """Refuse a ``merge_content`` merge whose joined text would exceed the content limit.

    References resolve as the store resolves them (an id first, else every row carrying that
    ``entity_name``); identical texts are joined once, with one newline between texts.
    """
    if req.strategy is not MergeStrategy.MERGE_CONTENT:
        return
    texts: dict[str, None] = {}
    for ref in [req.canonical, *req.duplicates]:
        row = await store.get(req.agent_id, ref, req.user_id)
        rows = [row] if row is not None else await store.list(
            ListQuery(
                agent_id=req.agent_id,
                user_id=req.user_id,
                filter={"entity_name": ref},
                limit=_NAMED_ROWS,
            )
        )
        for r in rows:
            if isinstance(r.content, str):
                texts.setdefault(r.content)
    size = sum(len(t.encode("utf-8")) for t in texts) + max(0, len(texts) - 1)
    if size > limits.max_content_bytes:
        raise PayloadTooLarge(
            f"merged content would be {size} bytes; the limit is {limits.max_content_bytes}",
            [
                ErrorDetail(
                    "/strategy", "maxBytes", f"merged content at most {limits.max_content_bytes}"
                )
            ],
        )
