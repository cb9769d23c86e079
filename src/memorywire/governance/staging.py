"""The writer's side of the approval queue in :class:`~memorywire.governance.store.GovernedStore`.

Staging an operation for review (per call with :meth:`StagingDesk.stage`, for a block with
:meth:`StagingDesk.staging`, or an operation its caller commits itself), and the two places
where a direct write meets what is staged: a remember of a memory a staged item will create
is refused with ``PendingApproval``, and a forget withdraws the pending remembers it names.
:class:`StagingDesk` is mixed into ``GovernedStore``, which owns the state declared below and
decides (by policy) which calls are staged; the reviewer's side is :mod:`.desk`.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from memorywire.core.clock import Clock
from memorywire.core.ids import new_id
from memorywire.errors import Conflict, ErrorDetail, PendingApproval
from memorywire.governance.actor import current_actor, current_actor_id
from memorywire.governance.audit import AuditLog
from memorywire.governance.checks import check_committable
from memorywire.governance.keys import AuditKey
from memorywire.governance.queue import ApprovalQueue, QueueItem, content_hash_of
from memorywire.governance.worker import GovWorker
from memorywire.wire.models import (
    ExpireRequest,
    ExpireResponse,
    ForgetRequest,
    ForgetResponse,
    MergeRequest,
    MergeResponse,
)

__all__ = ["StagingDesk"]

#: The stores whose forget/merge/expire calls in the current task are staged (see ``staging``).
_STAGING: ContextVar[tuple[StagingDesk, ...]] = ContextVar("memorywire_staging", default=())


class StagingDesk:
    """Staging over the state a ``GovernedStore`` sets up."""

    _clock: Clock
    _audit: AuditLog
    _queue: ApprovalQueue
    _key: AuditKey
    _w: GovWorker

    if TYPE_CHECKING:  # provided by ReviewDesk and GovernedStore
        def approval_url(self, item_id: str) -> str | None: ...

        async def _decide(
            self, operation: str, agent_id: str, user_id: str | None, req: Any
        ) -> str: ...

        async def forget(self, req: ForgetRequest) -> ForgetResponse: ...

        async def merge(self, req: MergeRequest) -> MergeResponse: ...

        async def expire(self, req: ExpireRequest) -> ExpireResponse: ...

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

    def _staging_now(self) -> bool:
        return any(s is self for s in _STAGING.get())

    async def stage(
        self, req: ForgetRequest | MergeRequest | ExpireRequest
    ) -> ForgetResponse | MergeResponse | ExpireResponse:
        """Stage one destructive call for review; the response says ``pending_approval``."""
        with self.staging():
            if isinstance(req, ForgetRequest):
                return await self.forget(req)
            if isinstance(req, MergeRequest):
                return await self.merge(req)
            return await self.expire(req)

    async def stage_operation(
        self, operation: str, agent_id: str, request: dict[str, Any], reasoning: str,
        details: Mapping[str, Any],
    ) -> QueueItem:
        """Stage one operation the caller commits itself (see ``CommitDriver.appliers``)."""
        return await self._stage(operation, new_id(self._clock.now_ms()), agent_id, None,
                                 request, reasoning, details)

    async def _stage_expire(self, req: ExpireRequest) -> ExpireResponse:
        await self._decide("expire", req.agent_id, req.user_id, req)
        item = await self._stage(
            "expire",
            new_id(self._clock.now_ms()),
            req.agent_id,
            req.user_id,
            req.model_dump(mode="json", exclude_none=True),
            None,
            {
                "policy": req.policy.model_dump(mode="json", exclude_none=True),
                "action_requested": req.action.value,
            },
        )
        return ExpireResponse(
            matched_count=0,
            action_taken=req.action,
            stores=[],
            pending_approval=True,
            approval_url=self.approval_url(item.id),
        )

    async def _stage(
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

    async def _intent_unless_staged(self, agent_id: str, memory_id: str,
                                    details: Mapping[str, Any]) -> None:
        """A direct remember's ``intent`` entry, written only if no staged item will create
        the same memory (else ``PendingApproval``): the check and the entry are one job of
        the worker, so a remember waits for one commit before the store acts, not two."""
        await self._w.grouped(self._intent_job(agent_id, memory_id, details))

    def _intent_job(self, agent_id: str, memory_id: str,
                    details: Mapping[str, Any]) -> Callable[[], None]:
        """The worker's job of :meth:`_intent_unless_staged` (also run by a store's write
        bracket, :mod:`.bracket`), its entry prepared here, on the caller's side."""
        entry = self._audit.prepare(actor=current_actor(), action="remember", agent_id=agent_id,
                                    memory_ids=[memory_id],
                                    details={"phase": "intent", **details})

        def run() -> None:
            item = self._queue.open_for_memory(agent_id, memory_id)
            if item is not None and item.user_id != details.get("user_id"):
                # Another user's pending write: the answer an id in use gets (see
                # server/precheck.py), so its approval stays unseen and unprobed.
                raise Conflict(f"id {memory_id!r} already holds a different memory",
                               [ErrorDetail("/id", "conflict", "id in use")])
            if item is not None:
                where = self.approval_url(item.id) or item.id
                raise PendingApproval(f"{memory_id} is awaiting approval ({where})")
            self._audit.write(entry)

        return run

    async def _withdraw_and_done(
        self, req: ForgetRequest, resp: ForgetResponse, details: Mapping[str, Any]
    ) -> tuple[builtins.list[str], builtins.list[str]]:
        """After a direct forget: close the pending remembers it names (so no later approval
        brings them back) and write the ``done`` entry naming every id that went, as one
        grouped job (one commit to wait for, not two; a withdrawal that fails leaves no
        ``done``, as before). Returns (withdrawn, forgotten)."""
        actor, now = current_actor(), self._clock.now_ms()
        ids = list(req.ids or [])

        def run() -> tuple[builtins.list[str], builtins.list[str]]:
            withdrawn = self._queue.withdraw(req.agent_id, req.user_id, ids, actor, now) \
                if ids else []
            forgotten = [*resp.forgotten_ids,
                         *(i for i in withdrawn if i not in resp.forgotten_ids)]
            self._audit.write(self._audit.prepare(
                actor=actor, action="forget", agent_id=req.agent_id, memory_ids=forgotten,
                details={"phase": "done", **details}))
            return withdrawn, forgotten

        return await self._w.grouped(run)
