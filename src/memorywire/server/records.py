"""get, list, update, history and erase: the record operations, checked like the five.

The stores already know how to read one memory, page a scope and edit in place; this module
puts the dispatcher's rules around them (roles, tenancy, governance) so every transport gets
them the same way. Two choices worth knowing:

* **erase is a hard forget by scope.** The live (and archived) ids of the scope are listed
  and handed to ``forget`` with ``hard_delete``, so governance gates, stages and audits it
  exactly as a forget: a reviewer approves a concrete list of ids, never "whatever the scope
  holds when someone clicks". A store that cannot promise erasure refuses up front. Where the
  dispatcher holds a signing key, the erase runs through ``erase_with_receipt`` (the same path
  as a hard forget), so a carried-out erase returns a signed deletion receipt chained into the
  audit log: the proof a GDPR request needs, not a 200.
* **history comes from the governance audit log.** Without governance nothing records a
  memory's past, so history raises ``capability_missing`` naming governance rather than
  answering an empty list that would read as "never changed".
"""

from __future__ import annotations

import base64
import binascii
import builtins
from typing import Any

from memorywire.errors import CapabilityMissing, ErrorDetail, InvalidRequest, NotFound
from memorywire.governance import GovernedStore
from memorywire.governance.actor import acting_as
from memorywire.governance.erasure import AuditSink, erase_with_receipt
from memorywire.governance.signing import SigningKeySource
from memorywire.server.auth import Principal
from memorywire.server.precheck import GOVERNANCE_OFF
from memorywire.store.base import Capability, ListQuery, MemoryStore
from memorywire.store.timeline import apply_update
from memorywire.wire.memory_ops import (
    EraseRequest,
    EraseResponse,
    GetRequest,
    GetResponse,
    HistoryRequest,
    HistoryResponse,
    ListRequest,
    ListResponse,
    Revision,
    UpdateMemoryRequest,
    UpdateMemoryResponse,
)
from memorywire.wire.models import ForgetRequest

__all__ = ["RecordOperations", "decode_cursor", "encode_cursor"]

#: How many ids erase lists per store call while collecting a scope.
_ERASE_PAGE = 1000


def encode_cursor(last_id: str) -> str:
    """Opaque to callers, so the paging key can change without breaking a client."""
    return base64.urlsafe_b64encode(last_id.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> str:
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True)
        last_id = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        last_id = ""
    if not last_id or encode_cursor(last_id) != cursor:
        raise InvalidRequest(
            "'cursor' is not a cursor this server issued; pass next_cursor unchanged",
            [ErrorDetail("/cursor", "format", "a next_cursor value")],
        )
    return last_id


class RecordOperations:
    """The record operations over one store, for one dispatcher."""

    def __init__(
        self,
        store: MemoryStore,
        signing_key: SigningKeySource | None = None,
        receipts_audit: AuditSink | None = None,
    ) -> None:
        self.store = store
        #: Signs the receipt a carried-out erase returns; ``None`` (or no key in it): none.
        self.signing_key = signing_key
        #: Where each erase receipt's hash is chained (the governed store's audit log).
        self.receipts_audit = receipts_audit

    async def get(self, req: GetRequest, p: Principal) -> GetResponse:
        p.check_scope(req.agent_id, req.user_id)
        rec = await self.store.get(req.agent_id, req.id, req.user_id)
        if rec is None:
            raise NotFound(f"memory {req.id!r} not found")
        return GetResponse(memory=rec)

    async def list(self, req: ListRequest, p: Principal) -> ListResponse:
        p.check_scope(req.agent_id, req.user_id)
        after = None if req.cursor is None else decode_cursor(req.cursor)
        rows = await self.store.list(
            ListQuery(
                agent_id=req.agent_id,
                user_id=req.user_id,
                types=req.types,
                filter=req.filter,
                include_archived=req.include_archived,
                limit=req.limit + 1,  # one more than asked tells whether a next page exists
                after_id=after,
            )
        )
        page = rows[: req.limit]
        more = len(rows) > req.limit
        return ListResponse(memories=page, next_cursor=encode_cursor(page[-1].id) if more else None)

    async def update(self, req: UpdateMemoryRequest, p: Principal) -> UpdateMemoryResponse:
        p.require_for("update")
        p.check_scope(req.agent_id, req.user_id)
        governed = self.store if isinstance(self.store, GovernedStore) else None
        if governed is not None:
            # a reviewer is never asked about a memory the caller cannot see
            if await self.store.get(req.agent_id, req.id, req.user_id) is None:
                raise NotFound(f"memory {req.id!r} not found")
            with acting_as(p.name, p.token_id):
                staged = await governed.gate_update(req)
            if staged is not None:
                return UpdateMemoryResponse(
                    pending_approval=True, approval_url=governed.approval_url(staged)
                )
        with acting_as(p.name, p.token_id):
            rec = await apply_update(self.store, req)
        return UpdateMemoryResponse(memory=rec, pending_approval=False)

    async def history(self, req: HistoryRequest, p: Principal) -> HistoryResponse:
        p.check_scope(req.agent_id, req.user_id)
        governed = self.store if isinstance(self.store, GovernedStore) else None
        if governed is None:
            raise CapabilityMissing(
                "history needs governance, whose audit log records a memory's changes, and "
                + GOVERNANCE_OFF
            )
        # Audit entries carry no user: a user-scoped call sees the history of a live memory
        # of that user only, so another user's ids stay "not found".
        mine = req.user_id is None or await self.store.get(req.agent_id, req.id, req.user_id)
        if mine is None:
            raise NotFound(f"memory {req.id!r} not found")
        entries = governed.audit_entries(agent_id=req.agent_id, memory_id=req.id, limit=req.limit)
        if not entries:
            raise NotFound(f"memory {req.id!r} not found")
        return HistoryResponse(id=req.id, revisions=[_revision(e) for e in entries])

    async def erase(self, req: EraseRequest, p: Principal) -> EraseResponse:
        p.require_for("erase")
        p.check_scope(req.agent_id, req.user_id)
        if Capability.ERASE not in self.store.capabilities:
            raise CapabilityMissing(
                f"store {self.store.name!r} does not declare erase: it cannot promise the "
                "content is gone from its storage, so erase is refused"
            )
        ids = await self._scope_ids(req.agent_id, req.user_id)
        if not ids:
            return EraseResponse(erased_ids=[], stores=[], pending_approval=False)
        forget = ForgetRequest(
            agent_id=req.agent_id,
            user_id=req.user_id,
            ids=ids,
            hard_delete=True,
            reason=req.reason or "erase",
        )
        receipt = None
        with acting_as(p.name, p.token_id):
            key = None if self.signing_key is None else self.signing_key.get()
            if key is None:
                resp = await self.store.forget(forget)
            else:
                er = await erase_with_receipt(self.store, forget, key, audit=self.receipts_audit,
                                              policy="erase")
                resp, receipt = er.response, er.receipt
        return EraseResponse(
            erased_ids=resp.forgotten_ids,
            stores=resp.stores,
            pending_approval=bool(resp.pending_approval),
            approval_url=resp.approval_url,
            receipt=receipt,
        )

    async def _scope_ids(self, agent_id: str, user_id: str | None) -> builtins.list[str]:
        ids: builtins.list[str] = []
        after: str | None = None
        while True:
            rows = await self.store.list(
                ListQuery(
                    agent_id=agent_id,
                    user_id=user_id,
                    include_archived=True,
                    limit=_ERASE_PAGE,
                    after_id=after,
                )
            )
            ids.extend(r.id for r in rows)
            if len(rows) < _ERASE_PAGE:
                return ids
            after = rows[-1].id


def _revision(entry: dict[str, Any]) -> Revision:
    details = dict(entry.get("details") or {})
    phase = details.pop("phase", None) or "event"
    reason = details.pop("reason", None)
    # A revision imported from another store's log happened when that log says it did.
    imported = details.get("imported")
    at = imported.get("at") if isinstance(imported, dict) else None
    return Revision(
        seq=int(entry["seq"]),
        at=int(at if isinstance(at, int) else entry["ts"]),
        actor=str(entry["actor"]),
        operation=str(entry["action"]),
        phase=str(phase),
        reason=None if reason is None else str(reason),
        details=details or None,
    )


