"""Committing approved operations, and what keeps one bad item from blocking the rest.

An approval moves an item ``pending -> committing`` and then drives the operation into the
inner store. A transient failure (the store is unavailable) leaves it ``committing`` for a
later re-drive with the same id. If the inner store refuses it (the id holds other content, a
value it cannot store), the item becomes ``failed`` with the error: visible to reviewers,
rejectable, never retried by itself. Recovery after a crash re-drives each ``committing`` item
on its own; one that fails is marked ``failed`` (or stays ``committing`` if the failure was
transient) and is reported, and the others and every later operation go on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from memorywire.core.clock import Clock
from memorywire.errors import BackendUnavailable, Conflict, MemorywireError, RateLimited
from memorywire.governance.audit import AuditLog
from memorywire.governance.queue import ApprovalQueue, QueueItem
from memorywire.governance.worker import GovWorker
from memorywire.store.base import MemoryStore
from memorywire.store.timeline import apply_update, no_conflict_scan
from memorywire.wire.memory_ops import UpdateMemoryRequest
from memorywire.wire.models import (
    ExpireRequest,
    ForgetRequest,
    ForgetResponse,
    MergeRequest,
    RememberRequest,
)

__all__ = ["CommitDriver", "HardForgetSigner", "RecoveryReport"]


@dataclass
class RecoveryReport:
    """What a recovery pass did: ids committed, and ids it could not commit with why."""

    committed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


#: Commits one staged request of an operation the store does not know: (result, ids).
Applier = Callable[[dict[str, Any]], Awaitable[tuple[dict[str, Any], list[str]]]]
#: Carries out an approved hard forget on the inner store and signs it: (response, receipt or
#: ``None`` when no key is at hand). Installed by whoever holds the signing key (the server).
HardForgetSigner = Callable[
    [MemoryStore, ForgetRequest], Awaitable[tuple[ForgetResponse, dict[str, Any] | None]]
]
_BUILT_IN = frozenset({"remember", "forget", "expire", "update", "merge"})

#: Failures that say nothing about the operation itself; the commit is retried later.
_TRANSIENT = (BackendUnavailable, RateLimited)


def _error_text(exc: BaseException) -> tuple[str, str]:
    if isinstance(exc, MemorywireError):
        return exc.code, exc.message
    return "internal_error", f"{type(exc).__name__}: {exc}"


class CommitDriver:
    """Drives approved queue items into the inner store, one at a time."""

    def __init__(
        self,
        inner: MemoryStore,
        queue: ApprovalQueue,
        audit: AuditLog,
        worker: GovWorker,
        clock: Clock,
        url: Callable[[str], str | None],
    ) -> None:
        self._inner = inner
        self._queue = queue
        self._audit = audit
        self._w = worker
        self._clock = clock
        self._url = url
        self._lock = anyio.Lock()
        self.last_recovery = RecoveryReport()
        #: Called after an item is marked failed (the store refreshes what health reports).
        self.on_failed: Callable[[], None] = lambda: None
        #: Committers of operations staged from outside the store (``recover``), by name.
        self.appliers: dict[str, Applier] = {}
        #: What rejecting such an operation does beyond closing it (a quarantine releases its
        #: memory); given the request as staged, before the queue scrubs it.
        self.rejecters: dict[str, Applier] = {}
        #: Signs approved hard forgets (and so approved erases); ``None``: they get no receipt.
        self.hard_forget: HardForgetSigner | None = None

    async def recover(self) -> RecoveryReport:
        """Re-drive every item a crash left ``committing``; each on its own (see module)."""
        report = RecoveryReport()
        items = await self._w.run(lambda: self._queue.items(status="committing", limit=10_000))
        for item in items:
            try:
                await self.drive(item)
            except MemorywireError as exc:
                report.failed[item.id] = exc.message
            else:
                report.committed.append(item.id)
        self.last_recovery = report
        return report

    async def drive(self, item: QueueItem) -> QueueItem | None:
        """Commit one ``committing`` item; on refusal mark it ``failed`` and raise ``Conflict``.

        Returns the item as stored once committed (read in the transaction that finished
        it, so an approve answers without another wait for the worker), ``None`` when it
        was not ``committing`` any more (another caller drove it)."""
        async with self._lock:
            fresh = await self._w.grouped(lambda: self._claim(item.id))
            if fresh is None:
                return None
            try:
                result, ids = await self._apply(fresh)
            except _TRANSIENT as exc:
                # The store may be down or may hold the change already: stay ``committing``
                # so a later approve or recovery re-drives it with the same id.
                code = exc.code
                await self._w.grouped(lambda: self._queue.note_transient(fresh, code))
                raise
            except Exception as exc:  # a refusal parks this item, never the whole queue
                code, message = _error_text(exc)
                now = self._clock.now_ms()
                await self._w.grouped(lambda: self._queue.fail_commit(fresh, code, message, now))
                self.on_failed()
                raise Conflict(
                    f"approved operation {fresh.id} could not be committed ({code}: {message});"
                    " it is marked failed and can be rejected"
                ) from exc
            now = self._clock.now_ms()
            return await self._w.grouped(lambda: self._finish(fresh, result, ids, now))

    def _claim(self, item_id: str) -> QueueItem | None:
        """On the worker: the item if it is still ``committing``, its attempt counted in the
        same savepoint (one group commit, where a read and then a write took two)."""
        fresh = self._queue.get(item_id)
        if fresh is None or fresh.status != "committing":
            return None
        self._queue.note_attempt(item_id)
        return fresh

    def _finish(self, fresh: QueueItem, result: dict[str, Any], ids: list[str],
                now: int) -> QueueItem | None:
        self._queue.finish_commit(fresh, result, ids, now)
        return self._queue.get(fresh.id)

    async def _apply(self, fresh: QueueItem) -> tuple[dict[str, Any], list[str]]:
        req = fresh.request
        if fresh.operation in self.appliers:
            return await self.appliers[fresh.operation](req)
        if fresh.operation not in _BUILT_IN:
            # Another process (a server with the signing key) commits it; stay committing.
            raise BackendUnavailable(f"operation {fresh.operation!r} cannot be committed by "
                                     "this process (no committer installed for it)")
        if fresh.operation == "remember":
            # The decision's answer carries no ``conflicts`` (and ``review`` looked before
            # staging): the write's own scan, a read and a judgement of the whole scope per
            # approve, would be thrown away.
            with no_conflict_scan():
                rr = await self._inner.remember(RememberRequest.model_validate(req))
            return {"stores": rr.stores}, [rr.id]
        if fresh.operation == "forget":
            freq = ForgetRequest.model_validate(req)
            receipt = None
            if freq.hard_delete and self.hard_forget is not None:
                fr, receipt = await self.hard_forget(self._inner, freq)
            else:
                fr = await self._inner.forget(freq)
            ids = list(fr.forgotten_ids)
            if freq.ids:  # pending remembers it names must not come back by a later approval
                who, now, names = fresh.reviewer or "system", self._clock.now_ms(), list(freq.ids)
                closed = await self._w.grouped(
                    lambda: self._queue.withdraw(freq.agent_id, freq.user_id, names, who, now)
                )
                ids += [i for i in closed if i not in ids]
            out: dict[str, Any] = {"forgotten": len(ids), "hard_delete": fr.hard_delete}
            if receipt is not None:  # what `approvals get` shows the reviewer and the caller
                out["receipt"] = receipt
            return out, ids
        if fresh.operation == "expire":
            # Evaluated at commit time: the reviewer approved the policy, not a list.
            er = await self._inner.expire(ExpireRequest.model_validate(req))
            return {"matched_count": er.matched_count, "action": er.action_taken.value}, list(
                er.matched_ids or []
            )
        if fresh.operation == "update":
            rec = await apply_update(self._inner, UpdateMemoryRequest.model_validate(req))
            return {"updated": rec.id}, [rec.id]
        mreq = MergeRequest.model_validate(req)
        mr = await self._inner.merge(mreq)
        return {"merged_count": mr.merged_count, "canonical": mr.canonical}, [
            mr.canonical,
            *mreq.duplicates,
        ]
