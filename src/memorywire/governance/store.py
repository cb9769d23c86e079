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
  merges nothing, so a re-drive yields the change exactly once. An item the inner store
  refuses becomes ``failed`` (see :mod:`.commit`) instead of blocking everything after it.

Every database call runs on the governance worker thread (:mod:`.worker`), never on the event
loop; audit entries waiting together are written in one transaction.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from memorywire.core.clock import Clock, SystemClock
from memorywire.core.ids import new_id
from memorywire.errors import (
    CapabilityMissing,
    Forbidden,
    MemorywireError,
)
from memorywire.governance.actor import current_actor
from memorywire.governance.audit import AuditLog
from memorywire.governance.bracket import RememberBracket
from memorywire.governance.chain import canonical_json, sha256_hex
from memorywire.governance.checks import check_remember
from memorywire.governance.commit import CommitDriver, HardForgetSigner
from memorywire.governance.conflicts import apply_auto, proposal
from memorywire.governance.db import is_postgres_url
from memorywire.governance.desk import ReviewDesk
from memorywire.governance.keys import AuditKey, default_key_path
from memorywire.governance.policies import PolicyDecision, PolicySet
from memorywire.governance.queue import ApprovalQueue
from memorywire.governance.review import ReviewBuilder
from memorywire.governance.staging import StagingDesk
from memorywire.governance.worker import GovWorker
from memorywire.store.base import Capability, Health, ListQuery, MemoryStore, UpdateRequest
from memorywire.store.bracket import bracketing, honours_bracket
from memorywire.store.cascade import expand_cascade
from memorywire.store.timeline import no_conflict_scan
from memorywire.wire.memory_ops import UpdateMemoryRequest
from memorywire.wire.models import (
    ConflictCandidate,
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


_AUDIT_FAILURE = ("fail_closed", "serve_reads")


class GovernedStore(ReviewDesk, StagingDesk):
    """A ``MemoryStore`` that stages, audits and gates the writes of ``inner``.

    ``audit_failure`` says what a recall does when its audit entry cannot be written:
    ``"fail_closed"`` (the default) refuses it with a clear error, ``"serve_reads"`` answers
    anyway. Writes always fail closed: nothing reaches the inner store unrecorded.
    ``audit_key``: the HMAC key for content hashes (see :mod:`.keys` for the default place).
    """

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
        audit_failure: str = "fail_closed",
        audit_key: AuditKey | str | Path | None = None,
    ) -> None:
        if audit_failure not in _AUDIT_FAILURE:
            raise ValueError(f"audit_failure accepts {list(_AUDIT_FAILURE)}")
        self._inner = inner
        self._clock: Clock = clock or SystemClock()
        self._key = (
            audit_key
            if isinstance(audit_key, AuditKey)
            else AuditKey.load_or_create(
                audit_key or default_key_path(db_path, postgres=is_postgres_url(db_path))
            )
        )
        self._audit = AuditLog.open(db_path, self._clock)
        self._queue = ApprovalQueue(self._audit, self._key)
        self._w = GovWorker(self._audit)
        self._policies = _as_policies(policies)
        self._base_url = approval_base_url.rstrip("/") if approval_base_url else None
        gated = set(require_approval_for)
        if gated - _GATEABLE:
            raise ValueError(f"require_approval_for accepts {sorted(_GATEABLE)}")
        self._gated = frozenset(gated)
        self._audit_recall = audit_recall
        self._serve_reads = audit_failure == "serve_reads"
        self._recovered = False
        self._failed_probe: tuple[float, bool] = (float("-inf"), False)
        self._inner_health: tuple[float, Health] = (float("-inf"), Health(status="ok"))
        self._reviews = ReviewBuilder(inner, self._clock)
        self._driver = CommitDriver(
            inner, self._queue, self._audit, self._w, self._clock, self.approval_url
        )
        self._driver.on_failed = self._forget_failed_probe

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
        """The log itself, for tools; use it only while no operation is in flight."""
        self._w.flush()
        return self._audit

    @property
    def worker(self) -> GovWorker:
        return self._w

    @property
    def policies(self) -> PolicySet:
        return self._policies

    def set_policies(self, policies: PolicySet | Mapping[str, Any] | str | Path) -> None:
        new = _as_policies(policies)
        entry = self._audit.prepare(
            actor=current_actor(),
            action="policy_changed",
            details={"policy_sha256": sha256_hex(canonical_json(new.to_dict()))},
        )
        self._w.call(lambda: self._audit.write(entry))
        self._policies = new

    async def record(self, event: Mapping[str, Any]) -> None:
        """The ``AuditSink`` face (consolidation): one entry, written by the worker."""
        await self._append(
            actor=str(event.get("actor") or "system"),
            action=str(event.get("action") or ""),
            agent_id=event.get("agent_id"),
            memory_ids=[str(i) for i in event.get("memory_ids") or ()],
            details=event.get("details") or {},
        )

    # --- helpers ---------------------------------------------------------------------------

    def _keyed(self, name: str, value: Any) -> dict[str, str]:
        """``{name: keyed hash, "hmac_key": key id}`` for an audit entry's details."""
        return {name: self._key.digest(value), "hmac_key": self._key.key_id}

    async def _append(self, **entry: Any) -> None:
        await self._w.append(self._audit.prepare(**entry))

    async def _decide(self, operation: str, agent_id: str, user_id: str | None, req: Any) -> str:
        d: PolicyDecision = self._policies.decide(operation, agent_id, user_id, req)
        if d.decision == "reject":
            await self._append(
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

    @property
    def commit_appliers(self) -> dict[str, Any]:
        return self._driver.appliers

    def sign_hard_forgets(self, signer: HardForgetSigner) -> None:
        """Approved hard forgets then carry a signed receipt in their item's ``result``."""
        self._driver.hard_forget = signer

    async def _phase(
        self, phase: str, action: str, agent_id: str, ids: Sequence[str], details: Mapping[str, Any]
    ) -> None:
        """One bracket entry (``intent`` before the inner call, ``done``/``failed`` after)."""
        await self._append(actor=current_actor(), action=action, agent_id=agent_id,
                           memory_ids=ids, details={"phase": phase, **details})

    # --- writes ----------------------------------------------------------------------------

    async def remember(self, req: RememberRequest) -> RememberResponse:
        await self._ensure_recovered()
        asked = req.approval_required
        decision = (
            "review" if asked else await self._decide("remember", req.agent_id, req.user_id, req)
        )
        rule = None if asked else self._policies.decide_remember(req).rule
        item_id = req.id or new_id(self._clock.now_ms())
        req = req.model_copy(update={"id": item_id, "approval_required": False})
        content_h = self._keyed("content_hmac", req.content)
        on_conflict = self._policies.conflicts
        found: builtins.list[ConflictCandidate] = []
        reasoning = f"governance policy rule '{rule}'" if rule else "the writer asked for approval"
        if decision != "review" and on_conflict.action == "review":
            staged, found = await proposal(self._inner, req, on_conflict)
            if staged is not None:
                decision, req = "review", staged
                reasoning = (f"contradicts stored memories {', '.join(staged.supersedes or [])}"
                             "; approving supersedes them (governance conflicts: review)")
        if decision == "review":
            await check_remember(self._inner, req)
            item = await self._stage(
                "remember",
                item_id,
                req.agent_id,
                req.user_id,
                req.model_dump(mode="json", exclude_none=True),
                reasoning,
                {**content_h, "rule": rule},
            )
            return RememberResponse(
                id=item_id,
                stored_at=item.created_at,
                stores=[],
                pending_approval=True,
                approval_url=self.approval_url(item.id),
                conflicts=found or None,
            )
        meta = {**content_h, "type": req.type.value, "source": req.source,
                "user_id": req.user_id}
        # ``review`` has looked already; ``off`` does not want the scan's cost
        scan = no_conflict_scan() if on_conflict.action in ("off", "review") else nullcontext()
        if honours_bracket(self._inner) and not req.supersedes:
            resp = await self._remember_bracketed(req, item_id, meta, scan)
        else:
            await self._intent_unless_staged(req.agent_id, item_id, meta)
            try:
                with scan:
                    resp = await self._inner.remember(req)
            except MemorywireError as exc:
                await self._phase("failed", "remember", req.agent_id, [item_id],
                                  {"error": exc.code})
                raise
            done = {**meta, "stores": resp.stores}
            await self._phase("done", "remember", req.agent_id, [resp.id], done)
        if found:
            resp = resp.model_copy(update={"conflicts": found})
        if on_conflict.action == "auto":
            await apply_auto(self, req, resp, on_conflict)
        return resp

    async def _remember_bracketed(self, req: RememberRequest, item_id: str,
                                  meta: Mapping[str, Any],
                                  scan: AbstractContextManager[Any]) -> RememberResponse:
        """The inner store runs intent, write and ``done`` in its one worker-thread call
        (:mod:`.bracket`). Not for ``supersedes``: closing the old memories is part of the
        write and happens after the store's thread call, so ``done`` would precede it."""
        bracket = RememberBracket(self._w, self._audit,
                                  self._intent_job(req.agent_id, item_id, meta),
                                  req.agent_id, item_id, meta)
        try:
            with scan, bracketing(bracket):
                resp = await self._inner.remember(req)
        except MemorywireError as exc:
            if bracket.begun:
                raise
            # refused before its thread ran: recorded as the async path records it
            await self._intent_unless_staged(req.agent_id, item_id, meta)
            await self._phase("failed", "remember", req.agent_id, [item_id], {"error": exc.code})
            raise
        if not bracket.begun:  # a store that declared the bracket and skipped it: a bug
            raise MemorywireError(f"store {self._inner.name!r} wrote without its audit bracket")
        return resp

    async def forget(self, req: ForgetRequest) -> ForgetResponse:
        await self._ensure_recovered()
        if req.hard_delete and Capability.ERASE not in self._inner.capabilities:
            # refuse up front: staging a hard delete the store can never honour helps no one
            raise CapabilityMissing(f"store {self._inner.name!r} does not declare erase: "
                                    "hard_delete is unsupported, use a soft delete")
        # Expanded before the policy and the queue, so a reviewer sees every id that goes.
        req = await expand_cascade(self._inner, req)
        if await self._decide("forget", req.agent_id, req.user_id, req) == "review":
            item = await self._stage(
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
        details = {
            "hard_delete": req.hard_delete,
            "reason": req.reason,
            "user_id": req.user_id,
            **(self._keyed("filter_hmac", req.filter) if req.filter is not None else {}),
        }
        await self._phase("intent", "forget", req.agent_id, req.ids or [], details)
        try:
            resp = await self._inner.forget(req)
        except MemorywireError as exc:
            await self._phase("failed", "forget", req.agent_id, req.ids or [], {"error": exc.code})
            raise
        withdrawn, forgotten = await self._withdraw_and_done(req, resp, details)
        return resp.model_copy(update={"forgotten_ids": forgotten}) if withdrawn else resp

    async def merge(self, req: MergeRequest) -> MergeResponse:
        await self._ensure_recovered()
        if await self._decide("merge", req.agent_id, req.user_id, req) == "review":
            item = await self._stage(
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
        details = {"strategy": req.strategy.value, "user_id": req.user_id}
        await self._phase("intent", "merge", req.agent_id, ids, details)
        try:
            resp = await self._inner.merge(req)
        except MemorywireError as exc:
            await self._phase("failed", "merge", req.agent_id, ids, {"error": exc.code})
            raise
        done = {**details, "merged_count": resp.merged_count}
        await self._phase("done", "merge", req.agent_id, ids, done)
        return resp

    async def expire(self, req: ExpireRequest) -> ExpireResponse:
        await self._ensure_recovered()
        if self._staging_now():
            return await self._stage_expire(req)
        details = {
            "policy": req.policy.model_dump(mode="json", exclude_none=True),
            "action_requested": req.action.value,
            "user_id": req.user_id,
        }
        await self._phase("intent", "expire", req.agent_id, [], details)
        try:
            resp = await self._inner.expire(req)
        except MemorywireError as exc:
            await self._phase("failed", "expire", req.agent_id, [], {"error": exc.code})
            raise
        done = {**details, "matched_count": resp.matched_count}
        await self._phase("done", "expire", req.agent_id, resp.matched_ids or [], done)
        return resp

    async def gate_update(self, req: UpdateMemoryRequest) -> str | None:
        """Stage an update a caller asked for when policy sends ``update`` to review: the
        approval id, or ``None`` when it may run now (a ``reject`` rule raises ``Forbidden``).

        Only the public update operation is gated; the store's own in-place changes
        (procedure state, tier promotion) call :meth:`update` and are audited, never staged.
        """
        if await self._decide("update", req.agent_id, req.user_id, req) != "review":
            return None
        item = await self._stage(
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
            **(self._keyed("content_hmac", req.content) if req.content is not None else {}),
            "metadata_keys": sorted(req.metadata_patch or {}),
            "confidence": req.confidence,
            "user_id": req.user_id,
            "reason": req.reason,
        }
        await self._phase("intent", "update", req.agent_id, [req.id], details)
        try:
            rec = await self._inner.update(req)
        except MemorywireError as exc:
            await self._phase("failed", "update", req.agent_id, [req.id], {"error": exc.code})
            raise
        await self._phase("done", "update", req.agent_id, [req.id], details)
        return rec

    # --- reads -----------------------------------------------------------------------------

    async def recall(self, req: RecallRequest) -> RecallResponse:
        await self._ensure_recovered()
        resp = await self._inner.recall(req)
        if not self._audit_recall:
            return resp
        entry = self._audit.prepare(
            actor=current_actor(),
            action="recall",
            agent_id=req.agent_id,
            memory_ids=[h.id for h in resp.results],
            details={**self._keyed("query_hmac", req.query), "k": req.k, "user_id": req.user_id},
        )
        await self._w.record_read(entry, fail_closed=not self._serve_reads)
        return resp

    async def get(self, agent_id: str, id: str, user_id: str | None = None) -> MemoryRecord | None:
        return await self._inner.get(agent_id, id, user_id)

    async def list(self, query: ListQuery) -> list[MemoryRecord]:
        return await self._inner.list(query)

    async def queue_counts(self) -> dict[str, int]:
        """Items waiting for a reviewer and items mid-commit (for the metrics gauge)."""
        return await self._w.run(
            lambda: {s: self._queue.count(s) for s in ("pending", "committing")}
        )

    async def aclose(self, *, inner: bool = True) -> None:
        """Write what is queued, close the governance database and (unless ``inner=False``,
        for a caller that owns the inner store) the inner store."""
        try:
            if inner:
                await self._inner.aclose()
        finally:
            self._w.close()
            self._audit.close()


def _as_policies(p: PolicySet | Mapping[str, Any] | str | Path | None) -> PolicySet:
    if p is None:
        return PolicySet()
    if isinstance(p, PolicySet):
        return p
    if isinstance(p, str | Path):
        return PolicySet.from_file(p)
    return PolicySet.from_dict(p)
