"""get, list, update, history and erase: the record operations, checked like the five.

The stores already know how to read one memory, page a scope and edit in place; this module
puts the dispatcher's rules around them (roles, tenancy, governance) so every transport gets
them the same way. Two choices worth knowing:

* **erase is a hard forget by scope.** The live (and archived) ids of the scope are listed
  and handed to ``forget`` with ``hard_delete``, so governance gates, stages and audits it
  exactly as a forget: a reviewer approves a concrete list of ids, never "whatever the scope
  holds when someone clicks". The list includes the scope's soft-forgotten memories where the
  store can list them (a ``PortableStore``): a soft forget only hides a memory, and an erase
  that left them would leave their content behind. A store that cannot promise erasure
  refuses up front. Where the dispatcher holds a signing key, the erase runs through
  ``erase_with_receipt`` (the same path as a hard forget), so a carried-out erase returns a
  signed deletion receipt chained into the audit log: the proof a GDPR request needs, not a
  200. Behind governance the receipt also says which copies beyond the store the erase
  reached (``details.copies``: kept texts, and with ``per_user_keys`` every sealed dump,
  whose data key it destroyed).
* **history comes from the governance audit log.** Without governance nothing records a
  memory's past, so history raises ``capability_missing`` naming governance rather than
  answering an empty list that would read as "never changed". An update that changed the
  content shows the text it replaced (``details.previous_content``), kept by governance
  beside the log (:mod:`memorywire.governance.revision_texts`); once a hard forget, an
  erase or a destroyed data key took it, the revision says ``previous_content_erased``.
"""

from __future__ import annotations

import base64
import binascii
import builtins
from typing import Any

from memorywire.core.timeline import held_in_time
from memorywire.errors import CapabilityMissing, ErrorDetail, InvalidRequest, NotFound
from memorywire.governance import GovernedStore
from memorywire.governance.erasure import AuditSink, Copies, erase_with_receipt
from memorywire.governance.gate import erasing
from memorywire.governance.signing import SigningKeySource
from memorywire.server.auth import Principal
from memorywire.server.precheck import GOVERNANCE_OFF
from memorywire.store.base import Capability, ListQuery, MemoryStore
from memorywire.store.portable import Cursor, PortableStore, cursor_of
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
from memorywire.wire.models import ForgetRequest, MemoryRecord

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
        copies: Copies | None = None,
    ) -> None:
        self.store = store
        #: Governance's part of an erase beyond the store (``GovernedStore.erased_copies``).
        self.copies = copies
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
        timed = req.as_of is not None or req.known_at is not None
        want = req.limit + 1  # one more than asked tells whether a next page exists
        kept: builtins.list[MemoryRecord] = []
        while True:
            rows = await self.store.list(ListQuery(
                agent_id=req.agent_id, user_id=req.user_id, types=req.types,
                filter=req.filter, include_archived=req.include_archived, limit=want,
                after_id=after))
            # ``as_of``/``known_at`` leave out what did not hold (or was not known) then;
            # the store reads on until the page is full or the scope ends.
            kept += [r for r in rows if not timed
                     or held_in_time(r.metadata, r.created_at, req.as_of, req.known_at)]
            if len(kept) >= want or len(rows) < want:
                break
            after = rows[-1].id
        page = kept[: req.limit]
        more = len(kept) > req.limit
        return ListResponse(memories=page, next_cursor=encode_cursor(page[-1].id) if more else None)

    async def update(self, req: UpdateMemoryRequest, p: Principal) -> UpdateMemoryResponse:
        p.require_for("update")
        p.check_scope(req.agent_id, req.user_id)
        governed = self.store if isinstance(self.store, GovernedStore) else None
        if governed is not None:
            # a reviewer is never asked about a memory the caller cannot see
            if await self.store.get(req.agent_id, req.id, req.user_id) is None:
                raise NotFound(f"memory {req.id!r} not found")
            with p.acting():
                staged = await governed.gate_update(req)
            if staged is not None:
                return UpdateMemoryResponse(
                    pending_approval=True, approval_url=governed.approval_url(staged),
                    approval_id=staged,
                )
        with p.acting():
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
        kept = governed.copies.previous_texts(
            [t for e in entries if isinstance(t := (e.get("details") or {}).get("previous_text"),
                                              str)])
        return HistoryResponse(id=req.id, revisions=[_revision(e, kept) for e in entries])

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
            # nothing left in the store; what governance keeps of the scope goes all the same
            # (an erase retried after a crash between the store and the keys finishes here)
            if self.copies is not None:
                with p.acting():
                    await self.copies(req.agent_id, req.user_id, [])
            return EraseResponse(erased_ids=[], stores=[], pending_approval=False)
        forget = ForgetRequest(
            agent_id=req.agent_id,
            user_id=req.user_id,
            ids=ids,
            hard_delete=True,
            reason=req.reason or "erase",
        )
        receipt = None
        with p.acting(), erasing():
            key = None if self.signing_key is None else self.signing_key.get()
            if key is None:
                resp = await self.store.forget(forget)
            else:
                er = await erase_with_receipt(self.store, forget, key, audit=self.receipts_audit,
                                              policy="erase", copies=self.copies)
                resp, receipt = er.response, er.receipt
        return EraseResponse(
            erased_ids=resp.forgotten_ids,
            stores=resp.stores,
            pending_approval=bool(resp.pending_approval),
            approval_url=resp.approval_url,
            approval_id=resp.approval_id,
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
                return ids + [i for i in await self._hidden_ids(agent_id, user_id)
                              if i not in set(ids)]
            after = rows[-1].id

    async def _hidden_ids(self, agent_id: str, user_id: str | None) -> builtins.list[str]:
        """The scope's soft-forgotten (and merged-away) memories, which ``list`` never shows,
        read from the first store down that can export rows in every state."""
        target: Any = self.store
        while not isinstance(target, PortableStore) and getattr(target, "inner", None):
            target = target.inner
        if not isinstance(target, PortableStore):
            return []
        found: builtins.list[str] = []
        after: Cursor | None = None
        while True:
            rows = await target.export_rows(agent_id, after, _ERASE_PAGE)
            found.extend(r.id for r in rows
                         if r.deleted_at is not None and r.in_scope(agent_id, user_id))
            if len(rows) < _ERASE_PAGE:
                return found
            after = cursor_of(rows[-1])


def _revision(entry: dict[str, Any], kept: dict[str, tuple[str, Any]]) -> Revision:
    details = dict(entry.get("details") or {})
    text_id = details.get("previous_text")
    if isinstance(text_id, str):
        state, content = kept.get(text_id, ("erased", None))
        if state == "kept":
            details["previous_content"] = content
        else:
            details["previous_content_erased"] = True
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


