"""The reviewer's side of a governed store's approval queue and audit log.

Approving, rejecting, recovering, listing, reading the audit log, verifying it and reporting
health: everything that works on the approval queue and the log rather than on a memory
write. :class:`ReviewDesk` owns the :class:`~memorywire.governance.commit.CommitDriver` that
carries an approved item into the inner store; the writer's side is :mod:`.staging`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.core.clock import Clock
from memorywire.errors import InvalidRequest, NotFound
from memorywire.governance.audit import AuditLog
from memorywire.governance.commit import CommitDriver, RecoveryReport
from memorywire.governance.keys import AuditKey
from memorywire.governance.queue import ApprovalQueue, QueueItem, content_hash_of
from memorywire.governance.review import ReviewBuilder
from memorywire.governance.worker import GovWorker
from memorywire.store.base import Health, MemoryStore

__all__ = ["HEALTH_TTL_S", "VERIFY_SLICE", "ReviewDesk"]

#: How long health reuses what it asked the inner store and the queue: a flood of health
#: checks then costs nothing, and a change still shows within this time.
HEALTH_TTL_S = 1.0
#: Entries verified per worker job by :meth:`ReviewDesk.averify_incremental`.
VERIFY_SLICE = 5_000


class ReviewDesk:
    """Queue and log operations of one governance database over ``inner``."""

    def __init__(self, inner: MemoryStore, audit: AuditLog, queue: ApprovalQueue,
                 worker: GovWorker, key: AuditKey, clock: Clock,
                 approval_base_url: str | None) -> None:
        self._inner = inner
        self._audit = audit
        self._queue = queue
        self._w = worker
        self._key = key
        self._clock = clock
        self._base_url = approval_base_url.rstrip("/") if approval_base_url else None
        self._recovered = False
        self._failed_probe: tuple[float, bool] = (float("-inf"), False)
        self._inner_health: tuple[float, Health] = (float("-inf"), Health(status="ok"))
        self._reviews = ReviewBuilder(inner, clock)
        self.driver = CommitDriver(inner, queue, audit, worker, clock, self.approval_url)
        self.driver.on_failed = self._forget_failed_probe

    def approval_url(self, item_id: str) -> str | None:
        return f"{self._base_url}/ui/approvals/{item_id}" if self._base_url else None

    async def health(self) -> Health:
        """Liveness in O(1): the inner store's health and one index probe (each reused for up
        to a second) and the cached verification state.

        The chain is never verified here (that is an authenticated admin operation).
        """
        now = time.monotonic()
        if now - self._inner_health[0] > HEALTH_TTL_S:
            self._inner_health = (now, await self._inner.health())
        inner = self._inner_health[1]
        failed = await self._failed_items()
        state = self._audit.verification_state()
        reasons: list[str] = []
        if failed:
            reasons.append("an approved operation could not be committed (status failed)")
        if state["audit_chain_ok"] is False:
            reasons.append(f"audit chain verification failed: {state['problem']}")
        if self._w.post_error is not None:
            reasons.append(f"audit entries cannot be written: {self._w.post_error.message}")
        if self.driver.last_recovery.failed:
            reasons.append(
                f"recovery could not commit {sorted(self.driver.last_recovery.failed)}"
            )
        details = {
            **inner.details,
            "governance": {
                "failed_approvals": failed,
                "audit_verified_seq": state["verified_seq"],
                "audit_chain_ok": state["audit_chain_ok"],
                "reasons": reasons,
            },
        }
        status = inner.status if not reasons else ("down" if inner.status == "down" else "degraded")
        return Health(status=status, details=details)

    def _forget_failed_probe(self) -> None:
        self._failed_probe = (float("-inf"), False)

    async def _failed_items(self) -> bool:
        """Whether any approval is ``failed``: probed at most once a second (another server
        on the same database may fail one), otherwise answered from memory, so a flood of
        health checks never queues behind governance writes."""
        now = time.monotonic()
        if now - self._failed_probe[0] > HEALTH_TTL_S:
            found = await self._w.run(lambda: self._queue.has_status("failed"))
            self._failed_probe = (now, found)
        return self._failed_probe[1]

    # --- approvals -------------------------------------------------------------------------

    async def ensure_recovered(self) -> None:
        """Run :meth:`recover` once, before the first operation that needs the queue settled."""
        if not self._recovered:
            await self.recover()

    async def recover(self) -> list[str]:
        """Finish every approval a crash left in ``committing``; returns the ids committed.

        Each item is driven on its own: one the inner store refuses is marked ``failed`` and
        listed in :attr:`recovery_report`, and never stops the others or later operations.
        """
        report = await self.driver.recover()
        self._recovered = True
        return report.committed

    @property
    def recovery_report(self) -> RecoveryReport:
        return self.driver.last_recovery

    async def approve(
        self, item_id: str, reviewer: str, content_hash: str | None, reason: str | None = None,
        supersedes: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Approve and commit with the staged id. ``reviewer`` comes from authentication,
        never from a request body; ``content_hash`` is the hash the reviewer was shown (a
        different one means the item changed: ``Conflict``). ``None`` skips that check, for
        callers that approve by id only. Safe to retry: the commit happens once. A commit the
        inner store refuses leaves the item ``failed`` and raises ``Conflict``.

        ``supersedes``: for a staged remember, the memories the reviewer decided it replaces
        (``[]``: keep them all live; ``None``: as staged). Each must be a live memory of the
        item's agent and user, checked before anything is recorded."""
        await self.ensure_recovered()
        if supersedes is not None:
            await self._check_supersedes(item_id, supersedes)
        now = self._clock.now_ms()
        item = await self._w.grouped(
            lambda: self._queue.begin_commit(item_id, reviewer, content_hash, reason, now,
                                             supersedes)
        )
        if item.status == "committing":
            done = await self.driver.drive(item)
            if done is not None:  # read where the commit finished: no second wait for it
                return await self._reviews.review(done, self.approval_url(done.id), False)
        return await self.get_review(item_id, with_diff=False)

    async def _check_supersedes(self, item_id: str, supersedes: Sequence[str]) -> None:
        item = await self._w.grouped(lambda: self._queue.get(item_id))
        if item is None:
            raise NotFound(f"no staged operation {item_id}")
        for old_id in supersedes:
            if old_id == item.id or (
                    await self._inner.get(item.agent_id, old_id, item.user_id) is None):
                raise NotFound(f"supersedes: memory {old_id!r} is not a live memory of "
                               f"agent {item.agent_id!r} (the write cannot replace it)")

    async def reject(
        self,
        item_id: str,
        reviewer: str,
        reason: str | None = None,
        content_hash: str | None = None,
    ) -> dict[str, Any]:
        now = self._clock.now_ms()
        before = await self._w.grouped(lambda: self._queue.get(item_id))
        await self._w.grouped(
            lambda: self._queue.reject(item_id, reviewer, reason, content_hash, now)
        )
        self._forget_failed_probe()
        undo = None
        if before is not None and before.status in ("pending", "failed"):
            undo = self.driver.rejecters.get(before.operation)
        if undo is not None and before is not None:
            # After the queue closed it: a rejected item never commits, whatever undo does.
            await undo(dict(before.request))
        return await self.get_review(item_id, with_diff=False)

    async def decide(
        self,
        item_id: str,
        reviewer: str,
        approved: bool,
        reason: str | None = None,
        content_hash: str | None = None,
        supersedes: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """One entry point for a ``DecisionRequest`` (``approved``, ``reason``, hash);
        ``supersedes`` as for :meth:`approve`."""
        if approved:
            return await self.approve(item_id, reviewer, content_hash, reason, supersedes)
        if supersedes is not None:
            raise InvalidRequest("supersedes: a rejection changes nothing, so it supersedes "
                                 "nothing; send it with an approval")
        return await self.reject(item_id, reviewer, reason, content_hash)

    # --- queries (sync for scripts and tools, ``a``-prefixed for the event loop) -------------

    def list_pending(
        self,
        *,
        agent_id: str | None = None,
        operation: str | None = None,
        status: str | None = "pending",
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """Review summaries (``diff`` left empty; :meth:`get_review` computes it)."""
        items = self._w.call(
            lambda: self._queue.items(
                agent_id=agent_id, operation=operation, status=status, limit=limit
            )
        )
        return [self._reviews.summary(i, self.approval_url(i.id)) for i in items]

    async def alist_pending(
        self,
        *,
        agent_id: str | None = None,
        operation: str | None = None,
        status: str | None = "pending",
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        items = await self._w.run(
            lambda: self._queue.items(
                agent_id=agent_id, operation=operation, status=status, limit=limit
            )
        )
        return [self._reviews.summary(i, self.approval_url(i.id)) for i in items]

    async def pending_items(self, limit: int = 100_000) -> list[QueueItem]:
        """Staged operations awaiting review, whole (the request included), oldest first:
        what a dump carries so the decision can be taken in another store."""
        return await self._w.run(lambda: self._queue.items(status="pending", limit=limit))

    async def restage(self, item: QueueItem, source: str) -> QueueItem:
        """Stage ``item`` (from another governance database) in this queue as it was: same
        id, writer and times. The content hash is recomputed with this database's key, so
        a reviewer here approves what they see. Staging the same item twice is a no-op; an
        id held by another staged operation raises ``Conflict``."""
        fresh = QueueItem(
            id=item.id, operation=item.operation, agent_id=item.agent_id,
            user_id=item.user_id, request=dict(item.request),
            content_hash=content_hash_of(item.operation, item.request, self._key),
            requested_by=item.requested_by, reasoning=item.reasoning, status="pending",
            created_at=item.created_at, updated_at=item.updated_at,
            memory_id=item.memory_id, requester_id=item.requester_id,
        )
        return await self._w.run(lambda: self._queue.stage(fresh, {"imported_from": source}))

    async def decided_items(self, operation: str, limit: int = 5_000) -> list[QueueItem]:
        """Decided items of ``operation``, the latest decision first (approval patterns)."""
        return await self._w.run(lambda: self._queue.decided(operation, limit))

    async def get_item(self, item_id: str) -> QueueItem | None:
        """The staged item as stored, without building its review (a scope check needs the
        agent and user, not the rendered request)."""
        return await self._w.grouped(lambda: self._queue.get(item_id))

    async def get_review(self, item_id: str, *, with_diff: bool = True) -> dict[str, Any]:
        """A ``ReviewRequest`` dict, the diff computed against the inner store's state now."""
        item = await self._w.grouped(lambda: self._queue.get(item_id))
        if item is None:
            raise NotFound(f"no staged operation {item_id}")
        return await self._reviews.review(item, self.approval_url(item.id), with_diff)

    def audit_entries(
        self, *, agent_id: str | None = None, memory_id: str | None = None, limit: int = 500
    ) -> list[dict[str, Any]]:
        return self._w.call(lambda: self._entries(agent_id, memory_id, limit))

    async def aaudit_entries(
        self, *, agent_id: str | None = None, memory_id: str | None = None, limit: int = 500,
        after_seq: int = 0,
    ) -> list[dict[str, Any]]:
        """Entries oldest first; ``after_seq`` pages on (an export reads the whole log)."""
        return await self._w.run(lambda: self._entries(agent_id, memory_id, limit, after_seq))

    def _entries(
        self, agent_id: str | None, memory_id: str | None, limit: int, after_seq: int = 0,
    ) -> list[dict[str, Any]]:
        return [
            e.to_dict()
            for e in self._audit.entries(agent_id=agent_id, memory_id=memory_id, limit=limit,
                                         after_seq=after_seq)
        ]

    async def audit_head(self) -> dict[str, Any]:
        """The log's last sequence number and its newest stored checkpoint (``None``: never
        checkpointed), for the health page."""
        def read() -> dict[str, Any]:
            seq, _ = self._audit.head()
            stored = self._audit.stored_checkpoints()
            return {"seq": seq, "checkpoint": stored[-1].to_dict() if stored else None}
        return await self._w.run(read)

    def verify(self, checkpoints: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
        """Full verification from genesis (slow on a long log; see :meth:`averify_incremental`)."""
        return self._w.call(lambda: self._audit.verify(checkpoints=checkpoints).to_dict())

    async def averify(
        self, checkpoints: Sequence[Mapping[str, Any]] | None = None
    ) -> dict[str, Any]:
        return await self._w.run(lambda: self._audit.verify(checkpoints=checkpoints).to_dict())

    async def averify_incremental(self) -> dict[str, Any]:
        """Verify the entries appended since the last verification (O(new entries)).

        In slices of :data:`VERIFY_SLICE` entries, each its own job on the worker, so a long
        first verification never holds governance writes back for more than one slice.
        """
        checked = 0
        while True:
            report = await self._w.run(
                lambda: self._audit.verify_incremental(max_entries=VERIFY_SLICE)
            )
            checked += report["checked"]
            if not report["ok"] or report["checked"] < VERIFY_SLICE:
                return {**report, "checked": checked}

    async def queue_counts(
        self, statuses: Sequence[str] = ("pending", "committing"),
    ) -> dict[str, int]:
        """Items per status; by default waiting for a reviewer and mid-commit (the metrics
        gauge), the health page adds ``failed``."""
        return await self._w.run(lambda: {s: self._queue.count(s) for s in statuses})

    def checkpoint(self, private_key: Ed25519PrivateKey) -> dict[str, Any]:
        return self._w.call(lambda: self._audit.checkpoint(private_key))
