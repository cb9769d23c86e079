"""The expiry sweep: physically remove memories whose ``expires_at`` passed a grace period ago.

Expiry hides a memory at once; purging it waits ``grace_ms`` so an operator can still extend
a wrongly set expiry. Each batch is selected and erased by the store in one transaction
(``purge_expired``), so a sweep killed at any point has erased whole batches only, never an
unexpired memory, and the next sweep carries on. Every batch gets a signed receipt (policy
``expiry``) chained into the audit log. A kill between a batch's erase and its receipt leaves
that batch without a receipt; the erase itself is complete.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import anyio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.core.clock import Clock, SystemClock
from memorywire.errors import CapabilityMissing
from memorywire.governance.actor import current_actor
from memorywire.governance.chain import canonical_json, sha256_hex
from memorywire.governance.erasure import AuditSink
from memorywire.governance.receipts import content_digest, sign_receipt, unsigned_receipt
from memorywire.store.base import Capability
from memorywire.wire.models import MemoryRecord

__all__ = ["Purgeable", "purgeable", "run_sweeper", "sweep_once"]


@runtime_checkable
class Purgeable(Protocol):
    @property
    def name(self) -> str: ...

    async def purge_expired(self, before_ms: int, limit: int = 500) -> list[MemoryRecord]: ...


def purgeable(store: Any) -> Purgeable:
    """``store``, or the store a governance wrapper holds, if it can purge (it declares
    ``purge`` and has ``purge_expired``); else refuse."""
    seen = store
    while not (isinstance(seen, Purgeable)
               and Capability.PURGE in getattr(seen, "capabilities", ())):
        inner = getattr(seen, "inner", None)
        if inner is None:
            raise CapabilityMissing(f"store {getattr(store, 'name', store)!r} cannot purge "
                                    "expired memories (no purge_expired)")
        seen = inner
    return seen


async def sweep_once(
    store: Purgeable,
    key: Ed25519PrivateKey,
    *,
    grace_ms: int,
    audit: AuditSink | None = None,
    clock: Clock | None = None,
    batch: int = 500,
) -> builtins.list[dict[str, Any]]:
    """Purge everything expired before ``now - grace_ms``; one receipt per batch."""
    if grace_ms < 0:
        raise ValueError("grace_ms must be >= 0")
    clk = clock or SystemClock()
    cutoff = clk.now_ms() - grace_ms
    receipts: list[dict[str, Any]] = []
    while True:
        gone = await store.purge_expired(cutoff, batch)
        if not gone:
            return receipts
        ids = [r.id for r in gone]
        receipt = sign_receipt(key, unsigned_receipt(
            erased={store.name: ids}, actor=current_actor(), policy="expiry",
            digest=content_digest(gone), ts=clk.now_ms(), reason_redacted=True,
            details={"grace_ms": grace_ms, "expired_before": cutoff}))
        if audit is not None:
            await audit.record({
                "action": "receipt", "actor": receipt["actor"], "memory_ids": ids,
                "details": {"receipt_id": receipt["receipt_id"], "policy": "expiry",
                            "receipt_sha256": sha256_hex(canonical_json(receipt)),
                            "content_sha256": receipt["content_sha256"]}})
        receipts.append(receipt)
        if len(gone) < batch:
            return receipts


async def run_sweeper(
    store: Purgeable,
    key: Ed25519PrivateKey,
    *,
    grace_ms: int,
    interval_s: float,
    audit: AuditSink | None = None,
    on_receipts: Callable[[builtins.list[dict[str, Any]]], None] | None = None,
) -> None:
    """Sweep every ``interval_s`` until cancelled (run it in the server's task group)."""
    while True:
        done = await sweep_once(store, key, grace_ms=grace_ms, audit=audit)
        if done and on_receipts is not None:
            on_receipts(done)
        await anyio.sleep(interval_s)
