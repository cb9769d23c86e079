"""A governed remember that repeats a stored memory: answered with it, one audit entry.

An ungoverned store answers a write without a named id that repeats a current memory of its
scope with that memory (``deduplicated``) and writes nothing (:mod:`memorywire.store.duplicates`).
Governance names an id before every inner write, since its ``intent`` entry must say which id
is about to be written; a named id is an identity the caller asked for, so the store would
store the write beside its twin. Governance therefore asks first
(:func:`~memorywire.store.timeline.repeated_memory`, the store's own rule and reads) and,
when the write is a repeat, answers with the stored memory without opening a bracket: no
``intent`` ever names an id that is not written.

The answer is recorded by one entry, action ``remember`` with phase ``deduplicated``, naming
the stored memory's id (which exists) with the write's keyed content hash: who asked to
remember what again is part of the trail (and of the memory's history), though nothing
changed. It is one entry, not a bracket, because there is no effect to precede: like a
read's record, but awaited, as a write's entries are.

Two writers of the same content at the same moment may both store it, as in an ungoverned
store; the check and the write are not one transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memorywire.governance.actor import current_actor
from memorywire.governance.trail import AuditTrail
from memorywire.store.base import Capability, MemoryStore
from memorywire.store.timeline import repeated_memory
from memorywire.wire.models import RememberRequest, RememberResponse

__all__ = ["answer_repeat"]


async def answer_repeat(inner: MemoryStore, trail: AuditTrail, req: RememberRequest,
                        details: Mapping[str, Any]) -> RememberResponse | None:
    """The stored memory ``req`` repeats, recorded with ``details`` (the entry a write's
    ``done`` would carry, keyed hash included), or ``None``: write it. ``req`` is a write
    without a caller-named id; a store without the ``time`` capability does not run the
    shared write path, so it has no duplicate rule to ask (``None``)."""
    if req.allow_duplicate or Capability.TIME not in inner.capabilities:
        return None
    found = await repeated_memory(inner, req)
    if found is None:
        return None
    await trail.append(actor=current_actor(), action="remember", agent_id=req.agent_id,
                       memory_ids=[found.id],
                       details={"phase": "deduplicated", **details, "stores": found.stores})
    return found
