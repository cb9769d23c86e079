"""Quarantine: a memory ``recover`` took out of reach, waiting for a reviewer's decision.

A quarantined memory is soft-forgotten (no read returns it, recall included) and one item of
operation ``quarantine`` is staged in the approval queue, holding what the reviewer needs to
judge it: its content, source and why recovery suspects it. The reviewer resolves it in the
UI (or ``memorywire approvals``) like any staged operation; the staged operation is the
removal, so:

* **approve** confirms it: the memory is erased (a hard forget, with a signed receipt when the
  deployment has a signing key);
* **reject** releases it: the memory comes back as it was (same id, times, metadata; through
  the store's :class:`~memorywire.store.portable.PortableStore` door, else re-remembered under
  its id), and the release is recorded in the audit log.

The item is requested by ``memorywire recover`` (not by the operator who ran it), so the
operator may decide it too. A crash between a reject and the release leaves the memory
hidden, never lost; rejecting the item again repeats the release.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.governance.actor import acting_as
from memorywire.governance.erasure import erase_with_receipt
from memorywire.governance.store import GovernedStore
from memorywire.store.portable import OnConflict, PortableStore
from memorywire.wire.models import ForgetRequest, MemoryRecord, RememberRequest

__all__ = ["OPERATION", "REQUESTER", "QuarantineDesk"]

OPERATION = "quarantine"
REQUESTER = "memorywire recover"
_PAGE = 500
_DESKS: weakref.WeakKeyDictionary[GovernedStore, QuarantineDesk] = weakref.WeakKeyDictionary()


class QuarantineDesk:
    """Stages quarantined memories and carries out the reviewer's decision on them."""

    def __init__(self, governed: GovernedStore,
                 key: Callable[[], Ed25519PrivateKey | None] = lambda: None) -> None:
        self._gov = governed
        self._key = key
        governed.commit_appliers[OPERATION] = self._confirm
        governed.commit_rejecters[OPERATION] = self._release
        _DESKS[governed] = self

    @classmethod
    def install(cls, governed: GovernedStore,
                key: Callable[[], Ed25519PrivateKey | None] | None) -> QuarantineDesk:
        """The store's desk: a new one with ``key``; without a key, the one installed
        already (several dispatchers share a store, and the one that signs must commit)."""
        held = _DESKS.get(governed)
        if key is None and held is not None:
            return held
        return cls(governed, key or (lambda: None))

    async def hold(self, rec: MemoryRecord, why: str, reason: str) -> dict[str, Any]:
        """Stage the decision on ``rec`` (already soft-forgotten by the caller)."""
        request = {"agent_id": rec.agent_id, "user_id": rec.user_id, "id": rec.id,
                   "type": rec.type.value, "content": rec.content, "source": rec.source,
                   "created_at": rec.created_at, "why": why}
        reasoning = (f"quarantined by recover: {why}. Approve to erase it; reject to release "
                     "it (it comes back as it was).")
        with acting_as(REQUESTER):
            item = await self._gov.stage_operation(
                OPERATION, rec.agent_id, {k: v for k, v in request.items() if v is not None},
                reasoning, {"memory_id": rec.id, "reason": reason})
        return {"approval_id": item.id, "memory_id": rec.id,
                "approval_url": self._gov.approval_url(item.id)}

    async def _confirm(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        req = ForgetRequest(agent_id=request["agent_id"], user_id=request.get("user_id"),
                            ids=[request["id"]], hard_delete=True,
                            reason="quarantine confirmed by a reviewer")
        key = self._key()
        if key is None:
            resp = await self._gov.inner.forget(req)
            return {"erased": len(resp.forgotten_ids)}, [request["id"]]
        er = await erase_with_receipt(self._gov.inner, req, key, audit=self._gov,
                                      policy="quarantine")
        return ({"erased": len(er.response.forgotten_ids), "receipt": er.receipt},
                [request["id"]])

    async def _release(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        agent, mid = str(request["agent_id"]), str(request["id"])
        how = await _restore(self._gov, request)
        await self._gov.record({"action": "quarantine_released", "agent_id": agent,
                                "memory_ids": [mid], "details": {"how": how}})
        return {"released": mid, "how": how}, [mid]


async def _restore(gov: GovernedStore, request: dict[str, Any]) -> str:
    """Bring the soft-forgotten memory back: exactly, or (without the door) by id."""
    inner = gov.inner
    agent, mid = str(request["agent_id"]), str(request["id"])
    if isinstance(inner, PortableStore):
        after = None
        while True:
            page = await inner.export_rows(agent, after, _PAGE)
            for row in page:
                if row.id == mid:
                    await inner.import_rows([replace(row, deleted_at=None)], OnConflict.REPLACE)
                    return "restored"
            if len(page) < _PAGE:
                break
            last = page[-1]
            after = (last.created_at, last.id, last.agent_id)
    # No door, or the row is gone: write it again under its id from what the item held.
    await inner.remember(RememberRequest(
        id=mid, agent_id=agent, user_id=request.get("user_id"), type=request["type"],
        content=request["content"], source=request.get("source")))
    return "remembered again"

