"""The writer's side of a governed store's approval queue.

:class:`StagingDesk` puts operations in the queue for review (one call at a time when policy
says ``review``, every forget, merge and expire of a block under :meth:`StagingDesk.staging`,
or an operation its caller commits itself), and answers for the two places where a direct
write meets what is staged: a remember of a memory a staged item will create is refused
with ``PendingApproval`` (:meth:`StagingDesk.refuse_if_staged`), and a direct forget
withdraws the pending remembers it names (:meth:`StagingDesk.withdrawal`). Both run on the
governance worker inside the write's audit bracket, so each costs the write no extra wait.
The reviewer's side is :mod:`.desk`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from memorywire.core.clock import Clock
from memorywire.core.ids import new_id
from memorywire.errors import Conflict, ErrorDetail, PendingApproval
from memorywire.governance.actor import current_actor, current_actor_id
from memorywire.governance.bracket import Settle
from memorywire.governance.checks import check_committable
from memorywire.governance.keys import AuditKey
from memorywire.governance.queue import ApprovalQueue, QueueItem, content_hash_of
from memorywire.governance.worker import GovWorker
from memorywire.wire.memory_ops import UpdateMemoryRequest
from memorywire.wire.models import (
    ExpireRequest,
    ForgetRequest,
    ForgetResponse,
    MergeRequest,
    RememberRequest,
)

__all__ = ["Staged", "StagingDesk"]

#: The requests that can wait for a reviewer.
Staged = RememberRequest | ForgetRequest | MergeRequest | ExpireRequest | UpdateMemoryRequest

#: The desks whose forget/merge/expire calls in the current task are staged (see ``staging``).
_STAGING: ContextVar[tuple[StagingDesk, ...]] = ContextVar("memorywire_staging", default=())


class StagingDesk:
    """Stages operations in one governance database's approval queue."""

    def __init__(self, queue: ApprovalQueue, worker: GovWorker, key: AuditKey, clock: Clock,
                 approval_url: Callable[[str], str | None]) -> None:
        self._queue = queue
        self._w = worker
        self._key = key
        self._clock = clock
        self._url = approval_url

    @contextmanager
    def staging(self) -> Iterator[None]:
        """Stage every forget, merge and expire made in this block (in this task) for review.

        For callers that are not a human at a keyboard, such as an MCP tool call: the call
        still takes its usual validation, authorisation and policy path (a ``reject`` rule
        still refuses it); only the commit waits for a reviewer. Remember is unaffected.
        """
        token = _STAGING.set((*_STAGING.get(), self))
        try:
            yield
        finally:
            _STAGING.reset(token)

    def active(self) -> bool:
        """Whether this task is inside :meth:`staging` of this desk."""
        return any(s is self for s in _STAGING.get())

    async def stage(self, operation: str, req: Staged, reasoning: str | None,
                    details: Mapping[str, Any], *, item_id: str | None = None) -> QueueItem:
        """Put ``req`` in the queue as ``pending`` (under a new id unless ``item_id``; a
        remember's id is its memory's), recorded with ``details``."""
        return await self._put(operation, item_id or new_id(self._clock.now_ms()),
                               req.agent_id, req.user_id,
                               req.model_dump(mode="json", exclude_none=True),
                               reasoning, details)

    async def stage_operation(
        self, operation: str, agent_id: str, request: dict[str, Any], reasoning: str,
        details: Mapping[str, Any],
    ) -> QueueItem:
        """Stage one operation the caller commits itself (see ``CommitDriver.appliers``)."""
        return await self._put(operation, new_id(self._clock.now_ms()), agent_id, None,
                               request, reasoning, details)

    async def _put(
        self,
        operation: str,
        item_id: str,
        agent_id: str,
        user_id: str | None,
        request: dict[str, Any],
        reasoning: str | None,
        details: Mapping[str, Any],
    ) -> QueueItem:
        check_committable(request)
        now = self._clock.now_ms()
        # A remember's id names the memory (per agent), so another writer's item holding it
        # as an approval id must neither be revealed nor block this one: see queue.stage.
        is_remember = operation == "remember"
        item = QueueItem(
            id=item_id,
            operation=operation,
            agent_id=agent_id,
            user_id=user_id,
            request=request,
            content_hash=content_hash_of(operation, request, self._key),
            requested_by=current_actor(),
            reasoning=reasoning,
            status="pending",
            created_at=now,
            updated_at=now,
            memory_id=item_id if is_remember else None,
            requester_id=current_actor_id(),
        )
        fresh = new_id(now) if is_remember else None
        return await self._w.grouped(lambda: self._queue.stage(item, details, fresh))

    def refuse_if_staged(self, agent_id: str, memory_id: str,
                         user_id: str | None = None) -> Callable[[], None]:
        """A direct remember's guard (run on the worker with its ``intent``): no staged item
        may create the same memory, else ``PendingApproval`` (``Conflict`` when the item is
        another user's)."""

        def check() -> None:
            item = self._queue.open_for_memory(agent_id, memory_id)
            if item is not None and item.user_id != user_id:
                # Another user's pending write: the answer an id in use gets (see
                # server/precheck.py), so its approval stays unseen and unprobed.
                raise Conflict(f"id {memory_id!r} already holds a different memory",
                               [ErrorDetail("/id", "conflict", "id in use")])
            if item is not None:
                where = self._url(item.id) or item.id
                raise PendingApproval(f"{memory_id} is awaiting approval ({where})")

        return check

    def withdrawal(self, req: ForgetRequest,
                   details: Mapping[str, Any]) -> Callable[[ForgetResponse], Settle]:
        """After a direct forget: close the pending remembers it names, so no later approval
        brings them back. The job names every id that went (forgotten or withdrawn) for the
        forget's ``done`` entry (with ``details``), written with it in one savepoint: a
        withdrawal that fails leaves no ``done``."""

        def settle(resp: ForgetResponse) -> Settle:
            actor, now = current_actor(), self._clock.now_ms()
            ids = list(req.ids or [])

            def run() -> tuple[list[str], Mapping[str, Any]]:
                withdrawn = self._queue.withdraw(req.agent_id, req.user_id, ids, actor, now) \
                    if ids else []
                return [*resp.forgotten_ids,
                        *(i for i in withdrawn if i not in resp.forgotten_ids)], details

            return run

        return settle
