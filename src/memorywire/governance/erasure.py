"""A hard forget that returns a signed deletion receipt and chains it into the audit log.

The erased content is read once, before the forget, only to digest it; neither the audit
entry nor the receipt carries it. ``redact_reason`` keeps the caller's reason out of the store
call (and so out of governance's own forget entry) and out of the receipt: a reason often
repeats what was erased ("remove the note about X's diagnosis").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.core.clock import Clock, SystemClock
from memorywire.core.records import ListQuery
from memorywire.errors import InvalidRequest
from memorywire.governance.actor import current_actor
from memorywire.governance.chain import canonical_json, sha256_hex
from memorywire.governance.receipts import content_digest, sign_receipt, unsigned_receipt
from memorywire.store.base import MemoryStore
from memorywire.store.cascade import expand_cascade
from memorywire.wire.models import ForgetRequest, ForgetResponse, MemoryRecord

__all__ = ["AuditSink", "Copies", "Erasure", "erase_with_receipt", "records_selected"]

#: A forget by filter reads at most this many memories to digest; larger sets are refused so
#: a receipt never vouches for content it did not digest.
MAX_DIGESTED = 100_000


class AuditSink(Protocol):
    async def record(self, event: Mapping[str, Any]) -> None: ...


#: After the erase: what it reached beyond the store (kept texts, sealed dumps), for the
#: receipt's ``details.copies`` (``GovernedStore.erased_copies``).
Copies = Callable[[str, str | None, Sequence[str]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Erasure:
    response: ForgetResponse
    #: ``None`` when governance staged the forget: nothing was erased yet, so nothing is vouched.
    receipt: dict[str, Any] | None


async def records_selected(store: MemoryStore, req: ForgetRequest) -> list[MemoryRecord]:
    """The live and archived memories ``req`` names (what a receipt digests)."""
    if req.ids is not None:
        out = []
        for id_ in req.ids:
            rec = await store.get(req.agent_id, id_, req.user_id)
            if rec is not None:
                out.append(rec)
        return out
    rows = await store.list(ListQuery(agent_id=req.agent_id, user_id=req.user_id,
                                      filter=req.filter, include_archived=True,
                                      limit=MAX_DIGESTED + 1))
    if len(rows) > MAX_DIGESTED:
        raise InvalidRequest(f"filter selects more than {MAX_DIGESTED} memories; "
                             "forget them in smaller sets to get receipts")
    return rows


async def erase_with_receipt(
    store: MemoryStore,
    req: ForgetRequest,
    key: Ed25519PrivateKey,
    *,
    audit: AuditSink | None = None,
    policy: str = "request",
    redact_reason: bool = False,
    clock: Clock | None = None,
    details: Mapping[str, Any] | None = None,
    copies: Copies | None = None,
) -> Erasure:
    """Hard-forget ``req`` on ``store``; return the response and the signed receipt.

    A cascading ``req`` is expanded first, so the receipt digests every descendant too.
    ``copies`` (governance) finishes the erase beyond the store and says what it reached;
    the receipt carries that statement, so it vouches for the copies it names.
    """
    if not req.hard_delete:
        raise InvalidRequest("hard_delete: a receipt is only issued for a hard forget")
    req = await expand_cascade(store, req)
    before = {r.id: r for r in await records_selected(store, req)}
    sent = req.model_copy(update={"reason": None}) if redact_reason else req
    resp = await store.forget(sent)
    if resp.pending_approval:
        return Erasure(resp, None)
    erased_ids = list(resp.forgotten_ids)
    reached = None if copies is None else await copies(req.agent_id, req.user_id, erased_ids)
    per_store = {c.store: erased_ids for c in resp.stores if c.count > 0}
    actor = current_actor()
    body = unsigned_receipt(
        erased=per_store,
        actor=actor,
        policy=policy,
        digest=content_digest([before[i] for i in erased_ids if i in before]),
        ts=(clock or SystemClock()).now_ms(),
        reason_redacted=redact_reason,
        details={
            "agent_id": req.agent_id,
            "user_id": req.user_id,
            "counts": {c.store: c.count for c in resp.stores},
            # ids a soft delete had already hidden: erased, but not readable to digest
            "undigested_ids": sorted(i for i in erased_ids if i not in before),
            **({} if redact_reason or req.reason is None else {"reason": req.reason}),
            **({} if reached is None else {"copies": reached}),
            **dict(details or {}),
        },
    )
    receipt = sign_receipt(key, body)
    if audit is not None:
        await audit.record({
            "action": "receipt",
            "actor": actor,
            "agent_id": req.agent_id,
            "memory_ids": erased_ids,
            "details": {
                "receipt_id": receipt["receipt_id"],
                "receipt_sha256": sha256_hex(canonical_json(receipt)),
                "content_sha256": receipt["content_sha256"],
                "policy": policy,
            },
        })
    return Erasure(resp, receipt)
