"""``GovernedStore``: approval gates, policies and an audit trail around any ``MemoryStore``.

It keeps its own database (approval queue + audit log: a SQLite file, or a ``postgresql://``
URL that several servers share), so governance works the same over every backend and over a
router. Staged operations never reach the inner store until a
reviewer approves them, which is what makes them invisible to recall, forget, merge, expire,
get and list: nothing of them exists there yet.

Crash safety, and why the audit trail can be trusted to tell what happened:

* A governance-db change and the audit entry recording it are one transaction.
* An inner-store mutation cannot join that transaction, so it is bracketed: an ``intent``
  entry (carrying the memory id) is written before the call, a ``done`` (or ``failed``) entry
  after. An ``intent`` without a matching ``done`` is the detectable mark of a crash in between;
  the id it carries tells an operator what to look up in the inner store.
* An approval is recorded as ``pending -> committing`` (with the ``approved`` entry) before
  the inner call and ``committing -> approved`` (with the completion entry, and the content
  scrubbed from the queue) after it. :meth:`GovernedStore.recover`, run lazily before the first
  operation, re-drives every ``committing`` item with the same id; inner ``remember`` is
  idempotent per id, forget of a forgotten id is a no-op, and a merge whose duplicates are gone
  merges nothing, so a re-drive yields the change exactly once.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import anyio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.core.clock import Clock, SystemClock
from memorywire.core.ids import new_id
from memorywire.errors import (
    CapabilityMissing,
    Forbidden,
    MemorywireError,
    NotFound,
    PendingApproval,
)
from memorywire.governance.actor import current_actor
from memorywire.governance.audit import AuditLog
from memorywire.governance.chain import canonical_json, sha256_hex
from memorywire.governance.policies import PolicyDecision, PolicySet
from memorywire.governance.queue import ApprovalQueue, QueueItem, content_hash_of
from memorywire.governance.review import ReviewBuilder
from memorywire.store.base import Capability, Health, ListQuery, MemoryStore, UpdateRequest
from memorywire.wire.memory_ops import UpdateMemoryRequest
from memorywire.wire.models import (
    ExpireRequest,
    ExpireResponse,
    ForgetRequest,
    ForgetResponse,
    MemoryRecord,
    MergeRequest,
    MergeResponse,
    RecallRequest,
    RecallResponse,
    RememberRequest,
    RememberResponse,
)

__all__ = ["GovernedStore"]

_GATEABLE = frozenset({"forget", "merge"})

#: The stores whose forget/merge/expire calls in the current task are staged (see ``staging``).
_STAGING: ContextVar[tuple[GovernedStore, ...]] = ContextVar("memorywire_staging", default=())


class GovernedStore:
    """A ``MemoryStore`` that stages, audits and gates the writes of ``inner``."""

    def __init__(
        self,
        inner: MemoryStore,
        db_path: str | Path,
        *,
        policies: PolicySet | Mapping[str, Any] | str | Path | None = None,
        clock: Clock | None = None,
        approval_base_url: str | None = None,
        require_approval_for: Iterable[str] = (),
        audit_recall: bool = True,
    ) -> None:
        self._inner = inner
        self._clock: Clock = clock or SystemClock()
        self._audit = AuditLog.open(db_path, self._clock)
        self._queue = ApprovalQueue(self._audit)
        self._policies = _as_policies(policies)
        self._base_url = approval_base_url.rstrip("/") if approval_base_url else None
        gated = set(require_approval_for)
        if gated - _GATEABLE:
            raise ValueError(f"require_approval_for accepts {sorted(_GATEABLE)}")
        self._gated = frozenset(gated)
        self._audit_recall = audit_recall
        self._recovered = False
        self._drive_lock = anyio.Lock()
        self._reviews = ReviewBuilder(inner, self._clock)

    # --- identity --------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def capabilities(self) -> frozenset[Capability]:
        return self._inner.capabilities | {Capability.GOVERNANCE}

    @property
    def inner(self) -> MemoryStore:
        return self._inner

    @property
    def audit_log(self) -> AuditLog:
        return self._audit

    @property
    def policies(self) -> PolicySet:
        return self._policies

    def set_policies(self, policies: PolicySet | Mapping[str, Any] | str | Path) -> None:
        new = _as_policies(policies)
        self._audit.append(
            actor=current_actor(),
            action="policy_changed",
            details={"policy_sha256": sha256_hex(canonical_json(new.to_dict()))},
        )
        self._policies = new

    def approval_url(self, item_id: str) -> str | None:
        return f"{self._base_url}/ui/approvals/{item_id}" if self._base_url else None

    # --- helpers ---------------------------------------------------------------------------

    def _decide(self, operation: str, agent_id: str, user_id: str | None, req: Any) -> str:
        d: PolicyDecision = self._policies.decide(operation, agent_id, user_id, req)
        if d.decision == "reject":
            self._audit.append(
                actor=current_actor(),
                action="rejected",
                agent_id=agent_id,
                details={"operation": operation, "by": "policy", "rule": d.rule},
            )
            why = f": {d.reason}" if d.reason else ""
            raise Forbidden(f"governance policy rule '{d.rule}' refuses this {operation}{why}")
        if operation in self._gated or self._staging_now():
            return "review"
        return d.decision

    # --- per-call staging ------------------------------------------------------------------

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

    def _stage_expire(self, req: ExpireRequest) -> ExpireResponse:
        self._decide("expire", req.agent_id, req.user_id, req)
        item = self._stage(
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

    def _stage(
        self,
        operation: str,
        item_id: str,
        agent_id: str,
        user_id: str | None,
        request: dict[str, Any],
        reasoning: str | None,
        details: Mapping[str, Any],
    ) -> QueueItem:
        now = self._clock.now_ms()
        item = QueueItem(
            id=item_id,
            operation=operation,
            agent_id=agent_id,
            user_id=user_id,
            request=request,
            content_hash=content_hash_of(operation, request),
            requested_by=current_actor(),
            reasoning=reasoning,
            status="pending",
            created_at=now,
            updated_at=now,
        )
        return self._queue.stage(item, details)

    def _refuse_if_staged(self, ids: Sequence[str]) -> None:
        for i in ids:
            item = self._queue.get(i)
            if item is not None and item.status in ("pending", "committing"):
                raise PendingApproval(f"{i} is awaiting approval ({self.approval_url(i) or i})")

    def _intent(
        self, action: str, agent_id: str, ids: Sequence[str], details: Mapping[str, Any]
    ) -> None:
        self._audit.append(
            actor=current_actor(),
            action=action,
            agent_id=agent_id,
            memory_ids=ids,
            details={"phase": "intent", **details},
        )

    def _done(
        self, action: str, agent_id: str, ids: Sequence[str], details: Mapping[str, Any]
    ) -> None:
        self._audit.append(
            actor=current_actor(),
            action=action,
            agent_id=agent_id,
            memory_ids=ids,
            details={"phase": "done", **details},
        )

    def _failed(self, action: str, agent_id: str, ids: Sequence[str], exc: MemorywireError) -> None:
        self._audit.append(
            actor=current_actor(),
            action=action,
            agent_id=agent_id,
            memory_ids=ids,
            details={"phase": "failed", "error": exc.code},
        )

    # --- writes ----------------------------------------------------------------------------

    async def remember(self, req: RememberRequest) -> RememberResponse:
        await self._ensure_recovered()
        asked = req.approval_required
        decision = "review" if asked else self._decide("remember", req.agent_id, req.user_id, req)
        rule = None if asked else self._policies.decide_remember(req).rule
        item_id = req.id or new_id(self._clock.now_ms())
        req = req.model_copy(update={"id": item_id, "approval_required": False})
        content_sha = sha256_hex(canonical_json(req.content))
        if decision == "review":
            reasoning = (
                f"governance policy rule '{rule}'" if rule else "the writer asked for approval"
            )
            item = self._stage(
                "remember",
                item_id,
                req.agent_id,
                req.user_id,
                req.model_dump(mode="json", exclude_none=True),
                reasoning,
                {"content_sha256": content_sha, "rule": rule},
            )
            return RememberResponse(
                id=item.id,
                stored_at=item.created_at,
                stores=[],
                pending_approval=True,
                approval_url=self.approval_url(item.id),
            )
        self._refuse_if_staged([item_id])
        meta = {"content_sha256": content_sha, "type": req.type.value, "source": req.source}
        self._intent("remember", req.agent_id, [item_id], meta)
        try:
            resp = await self._inner.remember(req)
        except MemorywireError as exc:
            self._failed("remember", req.agent_id, [item_id], exc)
            raise
        self._done("remember", req.agent_id, [resp.id], {**meta, "stores": resp.stores})
        return resp

    async def forget(self, req: ForgetRequest) -> ForgetResponse:
        await self._ensure_recovered()
        if req.hard_delete and Capability.ERASE not in self._inner.capabilities:
            # refuse up front: staging a hard delete the store can never honour helps no one
            raise CapabilityMissing(f"store {self._inner.name!r} does not declare erase: "
                                    "hard_delete is unsupported, use a soft delete")
        if self._decide("forget", req.agent_id, req.user_id, req) == "review":
            item = self._stage(
                "forget",
                new_id(self._clock.now_ms()),
                req.agent_id,
                req.user_id,
                req.model_dump(mode="json", exclude_none=True),
                req.reason,
                {"ids": req.ids or [], "hard_delete": req.hard_delete},
            )
            return ForgetResponse(
                forgotten_ids=[],
                stores=[],
                hard_delete=req.hard_delete,
                pending_approval=True,
                approval_url=self.approval_url(item.id),
            )
        details = _forget_details(req)
        self._intent("forget", req.agent_id, req.ids or [], details)
        try:
            resp = await self._inner.forget(req)
        except MemorywireError as exc:
            self._failed("forget", req.agent_id, req.ids or [], exc)
            raise
        self._done("forget", req.agent_id, resp.forgotten_ids, details)
        return resp

    async def merge(self, req: MergeRequest) -> MergeResponse:
        await self._ensure_recovered()
        if self._decide("merge", req.agent_id, req.user_id, req) == "review":
            item = self._stage(
                "merge",
                new_id(self._clock.now_ms()),
                req.agent_id,
                req.user_id,
                req.model_dump(mode="json", exclude_none=True),
                None,
                {"canonical": req.canonical, "duplicates": req.duplicates},
            )
            return MergeResponse(
                canonical=req.canonical,
                merged_count=0,
                strategy_used=req.strategy,
                stores=[],
                pending_approval=True,
                approval_url=self.approval_url(item.id),
            )
        ids = [req.canonical, *req.duplicates]
        details = {"strategy": req.strategy.value}
        self._intent("merge", req.agent_id, ids, details)
        try:
            resp = await self._inner.merge(req)
        except MemorywireError as exc:
            self._failed("merge", req.agent_id, ids, exc)
            raise
        self._done("merge", req.agent_id, ids, {**details, "merged_count": resp.merged_count})
        return resp

    async def expire(self, req: ExpireRequest) -> ExpireResponse:
        await self._ensure_recovered()
        if self._staging_now():
            return self._stage_expire(req)
        details = {
            "policy": req.policy.model_dump(mode="json", exclude_none=True),
            "action_requested": req.action.value,
        }
        self._intent("expire", req.agent_id, [], details)
        try:
            resp = await self._inner.expire(req)
        except MemorywireError as exc:
            self._failed("expire", req.agent_id, [], exc)
            raise
        self._done(
            "expire",
            req.agent_id,
            resp.matched_ids or [],
            {**details, "matched_count": resp.matched_count},
        )
        return resp

    def gate_update(self, req: UpdateMemoryRequest) -> str | None:
        """Stage an update a caller asked for when policy sends ``update`` to review: the
        approval id, or ``None`` when it may run now (a ``reject`` rule raises ``Forbidden``).

        Only the public update operation is gated; the store's own in-place changes
        (procedure state, tier promotion) call :meth:`update` and are audited, never staged.
        """
        if self._decide("update", req.agent_id, req.user_id, req) != "review":
            return None
        item = self._stage(
            "update",
            new_id(self._clock.now_ms()),
            req.agent_id,
            req.user_id,
            req.model_dump(mode="json", exclude_none=True),
            req.reason,
            {"ids": [req.id]},
        )
        return item.id

    async def update(self, req: UpdateRequest) -> MemoryRecord:
        await self._ensure_recovered()
        details: dict[str, Any] = {
            "content_sha256": None
            if req.content is None
            else sha256_hex(canonical_json(req.content)),
            "metadata_keys": sorted(req.metadata_patch or {}),
            "confidence": req.confidence,
            "reason": req.reason,
        }
        self._intent("update", req.agent_id, [req.id], details)
        try:
            rec = await self._inner.update(req)
        except MemorywireError as exc:
            self._failed("update", req.agent_id, [req.id], exc)
            raise
        self._done("update", req.agent_id, [req.id], details)
        return rec

    # --- reads -----------------------------------------------------------------------------

    async def recall(self, req: RecallRequest) -> RecallResponse:
        await self._ensure_recovered()
        resp = await self._inner.recall(req)
        if self._audit_recall:
            self._audit.append(
                actor=current_actor(),
                action="recall",
                agent_id=req.agent_id,
                memory_ids=[h.id for h in resp.results],
                details={"query_sha256": sha256_hex(req.query), "k": req.k, "user_id": req.user_id},
            )
        return resp

    async def get(self, agent_id: str, id: str, user_id: str | None = None) -> MemoryRecord | None:
        return await self._inner.get(agent_id, id, user_id)

    async def list(self, query: ListQuery) -> list[MemoryRecord]:
        return await self._inner.list(query)

    async def health(self) -> Health:
        inner = await self._inner.health()
        report = self._audit.verify()
        details = {
            **inner.details,
            "governance": {
                "pending": self._queue.count("pending"),
                "committing": self._queue.count("committing"),
                "audit_entries": report.entries,
                "audit_chain_ok": report.ok,
            },
        }
        status = inner.status if report.ok else "degraded"
        return Health(status=status, details=details)

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._audit.close()

    # --- approvals -------------------------------------------------------------------------

    async def _ensure_recovered(self) -> None:
        if not self._recovered:
            await self.recover()

    async def recover(self) -> builtins.list[str]:
        """Finish every approval a crash left in ``committing``; returns their ids."""
        done: list[str] = []
        for item in self._queue.items(status="committing", limit=10_000):
            await self._drive(item)
            done.append(item.id)
        self._recovered = True
        return done

    async def _drive(self, item: QueueItem) -> None:
        async with self._drive_lock:
            fresh = self._queue.get(item.id)
            if fresh is None or fresh.status != "committing":
                return
            self._queue.note_attempt(item.id)
            req = fresh.request
            try:
                if fresh.operation == "remember":
                    rr = await self._inner.remember(RememberRequest.model_validate(req))
                    result: dict[str, Any] = {"stores": rr.stores}
                    ids = [rr.id]
                elif fresh.operation == "forget":
                    fr = await self._inner.forget(ForgetRequest.model_validate(req))
                    result = {"forgotten": len(fr.forgotten_ids), "hard_delete": fr.hard_delete}
                    ids = fr.forgotten_ids
                elif fresh.operation == "expire":
                    # Evaluated at commit time: the reviewer approved the policy, not a list.
                    er = await self._inner.expire(ExpireRequest.model_validate(req))
                    result = {"matched_count": er.matched_count, "action": er.action_taken.value}
                    ids = er.matched_ids or []
                elif fresh.operation == "update":
                    w = UpdateMemoryRequest.model_validate(req)
                    rec = await self._inner.update(
                        UpdateRequest(
                            agent_id=w.agent_id, id=w.id, user_id=w.user_id, content=w.content,
                            metadata_patch=w.metadata, confidence=w.confidence, reason=w.reason,
                        )
                    )
                    result = {"updated": rec.id}
                    ids = [rec.id]
                else:
                    mr = await self._inner.merge(MergeRequest.model_validate(req))
                    result = {"merged_count": mr.merged_count, "canonical": mr.canonical}
                    ids = [mr.canonical, *MergeRequest.model_validate(req).duplicates]
            except MemorywireError as exc:
                self._audit.append(
                    actor=fresh.reviewer or "system",
                    action=fresh.operation,
                    agent_id=fresh.agent_id,
                    memory_ids=[fresh.id],
                    details={"phase": "failed", "approval_id": fresh.id, "error": exc.code},
                )
                raise
            self._queue.finish_commit(fresh, result, ids, self._clock.now_ms())

    async def approve(
        self, item_id: str, reviewer: str, content_hash: str | None, reason: str | None = None
    ) -> dict[str, Any]:
        """Approve and commit with the staged id. ``reviewer`` comes from authentication,
        never from a request body; ``content_hash`` is the hash the reviewer was shown (a
        different one means the item changed: ``Conflict``). ``None`` skips that check, for
        callers that approve by id only. Safe to retry: the commit happens once."""
        await self._ensure_recovered()
        item = self._queue.begin_commit(
            item_id, reviewer, content_hash, reason, self._clock.now_ms()
        )
        if item.status == "committing":
            await self._drive(item)
        return await self.get_review(item_id, with_diff=False)

    async def reject(
        self,
        item_id: str,
        reviewer: str,
        reason: str | None = None,
        content_hash: str | None = None,
    ) -> dict[str, Any]:
        self._queue.reject(item_id, reviewer, reason, content_hash, self._clock.now_ms())
        return await self.get_review(item_id, with_diff=False)

    async def decide(
        self,
        item_id: str,
        reviewer: str,
        approved: bool,
        reason: str | None = None,
        content_hash: str | None = None,
    ) -> dict[str, Any]:
        """One entry point for a ``DecisionRequest`` (``approved``, ``reason``, hash)."""
        if approved:
            return await self.approve(item_id, reviewer, content_hash, reason)
        return await self.reject(item_id, reviewer, reason, content_hash)

    # --- queries ---------------------------------------------------------------------------

    def list_pending(
        self,
        *,
        agent_id: str | None = None,
        operation: str | None = None,
        status: str | None = "pending",
        limit: int = 100,
    ) -> builtins.list[dict[str, Any]]:
        """Review summaries (``diff`` left empty; :meth:`get_review` computes it)."""
        return [
            self._reviews.summary(i, self.approval_url(i.id))
            for i in self._queue.items(
                agent_id=agent_id, operation=operation, status=status, limit=limit
            )
        ]

    async def get_review(self, item_id: str, *, with_diff: bool = True) -> dict[str, Any]:
        """A ``ReviewRequest`` dict, the diff computed against the inner store's state now."""
        item = self._queue.get(item_id)
        if item is None:
            raise NotFound(f"no staged operation {item_id}")
        return await self._reviews.review(item, self.approval_url(item.id), with_diff)

    def audit_entries(
        self, *, agent_id: str | None = None, memory_id: str | None = None, limit: int = 500
    ) -> builtins.list[dict[str, Any]]:
        return [
            e.to_dict()
            for e in self._audit.entries(agent_id=agent_id, memory_id=memory_id, limit=limit)
        ]

    def verify(self, checkpoints: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
        return self._audit.verify(checkpoints=checkpoints).to_dict()

    def checkpoint(self, private_key: Ed25519PrivateKey) -> dict[str, Any]:
        return self._audit.checkpoint(private_key)


def _as_policies(p: PolicySet | Mapping[str, Any] | str | Path | None) -> PolicySet:
    if p is None:
        return PolicySet()
    if isinstance(p, PolicySet):
        return p
    if isinstance(p, str | Path):
        return PolicySet.from_file(p)
    return PolicySet.from_dict(p)


def _forget_details(req: ForgetRequest) -> dict[str, Any]:
    return {
        "hard_delete": req.hard_delete,
        "reason": req.reason,
        "filter_sha256": None if req.filter is None else sha256_hex(canonical_json(req.filter)),
    }
