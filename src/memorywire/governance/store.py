"""``GovernedStore``: approval gates, policies and an audit trail around any ``MemoryStore``.

It keeps its own database (approval queue + audit log: a SQLite file, or a ``postgresql://``
URL that several servers share), so governance works the same over every backend and over a
router. Staged operations never reach the inner store until a
reviewer approves them, which is what makes them invisible to recall, forget, merge, expire,
get and list: nothing of them exists there yet.

Crash safety, and why the audit trail can be trusted to tell what happened:

* A governance-db change and the audit entry recording it are one transaction.
* An inner-store mutation cannot join that transaction, so it is bracketed (:mod:`.bracket`):
  an ``intent`` entry (carrying the memory id) is written before the call, a ``done`` (or
  ``failed``) entry after. An ``intent`` without a matching ``done`` is the detectable mark of
  a crash in between; the id it carries tells an operator what to look up in the inner store.
* An approval is recorded as ``pending -> committing`` (with the ``approved`` entry) before
  the inner call and ``committing -> approved`` (with the completion entry, and the content
  scrubbed from the queue) after it. :meth:`GovernedStore.recover`, run lazily before the first
  operation, re-drives every ``committing`` item with the same id; inner ``remember`` is
  idempotent per id, forget of a forgotten id is a no-op, and a merge whose duplicates are gone
  merges nothing, so a re-drive yields the change exactly once. An item the inner store
  refuses becomes ``failed`` (see :mod:`.commit`) instead of blocking everything after it.

Every database call runs on the governance worker thread (:mod:`.worker`), never on the event
loop; audit entries waiting together are written in one transaction.

The store is composed of parts, each its own module: :class:`~.gate.PolicyGate` decides what
is staged, :class:`~.staging.StagingDesk` stages it, :class:`~.desk.ReviewDesk` serves the
reviewer and commits approvals, :class:`~.trail.AuditTrail` writes every entry (each inner
write through one :class:`~.bracket.AuditBracket`), :class:`~.copies.CopyKeeper` keeps the
texts updates replaced and the per-user data keys, and removes them after a hard forget.
This class holds them, runs the write paths and forwards the rest.

Every staged answer names its approval item (``approval_id``), and its ``approval_url``
where the store was given the reviewer UI's address.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from memorywire.core.clock import Clock, SystemClock
from memorywire.core.directives import Finding
from memorywire.core.ids import new_id
from memorywire.errors import CapabilityMissing
from memorywire.governance.actor import current_actor
from memorywire.governance.audit import AuditLog
from memorywire.governance.bracket import AuditBracket, Outcome, Settle
from memorywire.governance.checks import check_remember
from memorywire.governance.commit import HardForgetSigner, RecoveryReport
from memorywire.governance.conflicts import apply_auto, proposal
from memorywire.governance.copies import CopyKeeper
from memorywire.governance.datakeys import default_kek_path
from memorywire.governance.db import is_postgres_url
from memorywire.governance.delegate import delegate, delegate_async
from memorywire.governance.desk import ReviewDesk
from memorywire.governance.directives import DetectorSet
from memorywire.governance.gate import Policies, PolicyGate, forget_kind
from memorywire.governance.keys import AuditKey, default_key_path
from memorywire.governance.policies import PolicySet
from memorywire.governance.queue import ApprovalQueue
from memorywire.governance.repeats import answer_repeat
from memorywire.governance.staging import StagingDesk
from memorywire.governance.trail import AuditTrail
from memorywire.governance.worker import GovWorker
from memorywire.store.base import Capability, ListQuery, MemoryStore, UpdateRequest
from memorywire.store.bracket import honours_bracket
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


def _flag(finding: Finding | None) -> dict[str, Any]:
    """The audit detail recording a directive finding (empty when there is none)."""
    return {} if finding is None else {"directive": finding.to_dict()}


_AUDIT_FAILURE = ("fail_closed", "serve_reads")

class GovernedStore:
    """A ``MemoryStore`` that stages, audits and gates the writes of ``inner``.

    ``audit_failure`` says what a recall does when its audit entry cannot be written:
    ``"fail_closed"`` (the default) refuses it with a clear error, ``"serve_reads"`` answers
    anyway. Writes always fail closed: nothing reaches the inner store unrecorded.
    ``audit_key``: the HMAC key for content hashes (see :mod:`.keys` for the default place).
    ``per_user_keys``: seal dumps and kept texts under per-user data keys that an erase
    destroys (see :mod:`.datakeys`; once on, it stays on for this database); ``data_kek``:
    the file of the key that wraps them (default beside the database, see
    :func:`~.datakeys.default_kek_path`).
    """

    def __init__(
        self,
        inner: MemoryStore,
        db_path: str | Path,
        *,
        policies: Policies | None = None,
        clock: Clock | None = None,
        approval_base_url: str | None = None,
        require_approval_for: Iterable[str] = (),
        audit_recall: bool = True,
        audit_failure: str = "fail_closed",
        audit_key: AuditKey | str | Path | None = None,
        per_user_keys: bool = False,
        data_kek: str | Path | None = None,
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
        self._trail = AuditTrail(self._audit, self._w, self._key)
        self._desk = ReviewDesk(inner, self._audit, self._queue, self._w, self._key,
                                self._clock, approval_base_url)
        self._staging = StagingDesk(self._queue, self._w, self._key, self._clock,
                                    self._desk.approval_url)
        self._gate = PolicyGate(policies, require_approval_for, self._trail,
                                self._staging.active)
        self._detectors: tuple[tuple[str, ...], DetectorSet] = ((), DetectorSet.of())
        postgres = is_postgres_url(db_path)
        self._copies = CopyKeeper(self._audit.db, self._w, self._clock,
                                  Path(data_kek) if data_kek is not None
                                  else default_kek_path(db_path, postgres=postgres),
                                  per_user_keys)
        self._copies.history_mode(self._gate.policies)  # refuse a policy it cannot honour
        self._desk.driver.after_hard_forget = self._after_hard_forget
        self._desk.driver.keep_replaced = lambda r: self._copies.keep_replaced(
            self._inner, self._gate.policies, r.agent_id, r.id, r.user_id, r.content)
        self._audit_recall = audit_recall
        self._serve_reads = audit_failure == "serve_reads"

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
        return self._gate.policies

    def set_policies(self, policies: Policies,
                     details: Mapping[str, Any] | None = None) -> None:
        """Govern by ``policies`` from now on, recorded (``policy_changed``, as the current
        actor, with ``details``) before it takes effect."""
        from memorywire.governance.gate import as_policies

        self._copies.history_mode(as_policies(policies))
        self._gate.replace(policies, details)

    @property
    def copies(self) -> CopyKeeper:
        """Kept texts and per-user data keys (dumps seal and open through it)."""
        return self._copies

    async def record(self, event: Mapping[str, Any]) -> None:
        """The ``AuditSink`` face (consolidation): one entry, written by the worker."""
        await self._trail.record(event)

    @property
    def commit_appliers(self) -> dict[str, Any]:
        return self._desk.driver.appliers

    @property
    def commit_rejecters(self) -> dict[str, Any]:
        """What rejecting an operation staged from outside the store also does, by name."""
        return self._desk.driver.rejecters

    def sign_hard_forgets(self, signer: HardForgetSigner) -> None:
        """Approved hard forgets then carry a signed receipt in their item's ``result``."""
        self._desk.driver.hard_forget = signer

    # --- writes ----------------------------------------------------------------------------

    async def remember(self, req: RememberRequest) -> RememberResponse:
        await self._desk.ensure_recovered()
        asked = req.approval_required
        decision = (
            "review" if asked
            else await self._gate.decide("remember", req.agent_id, req.user_id, req)
        )
        rule = None if asked else self._gate.policies.decide_remember(req).rule
        named = req.id is not None
        item_id = req.id or new_id(self._clock.now_ms())
        req = req.model_copy(update={"id": item_id, "approval_required": False})
        content_h = self._trail.keyed("content_hmac", req.content)
        on_conflict = self._gate.policies.conflicts
        found: builtins.list[ConflictCandidate] = []
        reasoning = f"governance policy rule '{rule}'" if rule else "the writer asked for approval"
        finding = self._screen(req)
        if finding is not None and decision != "review" and \
                self._gate.policies.directives.action == "stage":
            decision = "review"
            reasoning = (f"reads like an instruction planted for the agent "
                         f"({', '.join(finding.signals)}); governance directives: stage")
        meta = {**content_h, "type": req.type.value, "source": req.source,
                "user_id": req.user_id, **_flag(finding)}
        if decision != "review" and not named:  # a repeat: the stored memory, see .repeats
            again = await answer_repeat(self._inner, self._trail, req, meta)
            if again is not None:
                return again
        if decision != "review" and on_conflict.action == "review":
            staged, found = await proposal(self._inner, req, on_conflict)
            if staged is not None:
                decision, req = "review", staged
                reasoning = (f"contradicts stored memories {', '.join(staged.supersedes or [])}"
                             "; approving supersedes them (governance conflicts: review)")
        if decision == "review":
            if not asked and rule is None and self._gate.agents_wait("remember"):
                reasoning = "an agent's remember waits for a person (governance agent_review)"
            await check_remember(self._inner, req)
            item = await self._staging.stage("remember", req, reasoning,
                                             {**content_h, "rule": rule, **_flag(finding)},
                                             item_id=item_id)
            return RememberResponse(
                id=item_id,
                stored_at=item.created_at,
                stores=[],
                pending_approval=True,
                approval_url=self.approval_url(item.id),
                approval_id=item.id,
                conflicts=found or None,
            )
        # ``review`` has looked already; ``off`` does not want the scan's cost
        scan = no_conflict_scan() if on_conflict.action in ("off", "review") else nullcontext()
        resp = await self._remember_now(req, item_id, meta, scan)
        if found:
            resp = resp.model_copy(update={"conflicts": found})
        if on_conflict.action == "auto":
            await apply_auto(self, req, resp, on_conflict)
        return resp

    def _screen(self, req: RememberRequest) -> Finding | None:
        """The directive detectors' finding on a remember, per the policy's ``directives``
        (``None``: off, or nothing found). The hooks load once per policy."""
        policy = self._gate.policies.directives
        if policy.action == "off":
            return None
        key = tuple(policy.detectors)
        if self._detectors[0] != key:
            self._detectors = (key, DetectorSet.of(policy.detectors))
        return self._detectors[1].inspect(req.content, req.type.value)

    async def _remember_now(self, req: RememberRequest, item_id: str, meta: Mapping[str, Any],
                            scan: AbstractContextManager[Any]) -> RememberResponse:
        """The inner remember in its bracket, refused while a staged item holds the id.

        A store that honours the bracket runs it on its writing thread, where it hands
        ``done`` its batch of one. Not with ``supersedes``: closing the old memories is part
        of the write and follows the store's thread call, so ``done`` would precede it.
        """
        def remembered(resp: RememberResponse) -> Outcome:
            return [resp.id], {**meta, "stores": resp.stores}

        def batch_remembered(batch: Sequence[RememberResponse]) -> Outcome:
            (resp,) = batch
            return remembered(resp)

        async def write() -> RememberResponse:
            with scan:
                return await self._inner.remember(req)

        guard = self._staging.refuse_if_staged(req.agent_id, item_id, req.user_id)
        if honours_bracket(self._inner) and not req.supersedes:
            return await self._trail.bracket(
                "remember", req.agent_id, [item_id], meta, done=batch_remembered, guard=guard
            ).run_on_thread(write, self._inner.name)
        return await self._trail.bracket(
            "remember", req.agent_id, [item_id], meta, done=remembered, guard=guard
        ).run(write)

    async def forget(self, req: ForgetRequest) -> ForgetResponse:
        await self._desk.ensure_recovered()
        if req.hard_delete and Capability.ERASE not in self._inner.capabilities:
            # refuse up front: staging a hard delete the store can never honour helps no one
            raise CapabilityMissing(f"store {self._inner.name!r} does not declare erase: "
                                    "hard_delete is unsupported, use a soft delete")
        # Expanded before the policy and the queue, so a reviewer sees every id that goes.
        req = await expand_cascade(self._inner, req)
        kind = forget_kind(req.hard_delete)
        if await self._gate.decide("forget", req.agent_id, req.user_id, req, kind) == "review":
            item = await self._staging.stage(
                "forget", req, req.reason, {"ids": req.ids or [], "hard_delete": req.hard_delete})
            return ForgetResponse(
                forgotten_ids=[],
                stores=[],
                hard_delete=req.hard_delete,
                pending_approval=True,
                approval_url=self.approval_url(item.id),
                approval_id=item.id,
            )
        details = {
            "hard_delete": req.hard_delete,
            "reason": req.reason,
            "user_id": req.user_id,
            **(self._trail.keyed("filter_hmac", req.filter) if req.filter is not None else {}),
        }
        bracket = self._trail.bracket("forget", req.agent_id, req.ids or [], details,
                                      settle=self._staging.withdrawal(req, details))
        resp = await bracket.run(lambda: self._inner.forget(req))
        # ``done`` names the pending remembers the forget withdrew too; so does the answer
        forgotten = bracket.recorded
        if req.hard_delete:
            await self.erased_copies(req.agent_id, req.user_id, forgotten)
        if forgotten == resp.forgotten_ids:
            return resp
        return resp.model_copy(update={"forgotten_ids": forgotten})

    async def _after_hard_forget(self, req: ForgetRequest, ids: Sequence[str]) -> None:
        await self.erased_copies(req.agent_id, req.user_id, ids)

    async def erased_copies(self, agent_id: str, user_id: str | None,
                            ids: Sequence[str]) -> dict[str, Any]:
        """What a carried-out hard forget (direct or approved) does to the copies governance
        keeps (kept texts; a scope it emptied loses its data keys), and the ``copies``
        statement of its receipt. Idempotent: a receipt asks again after the forget ran it."""
        return await self._copies.after_hard_forget(self._inner, agent_id, user_id, ids)

    async def merge(self, req: MergeRequest) -> MergeResponse:
        await self._desk.ensure_recovered()
        if await self._gate.decide("merge", req.agent_id, req.user_id, req) == "review":
            item = await self._staging.stage(
                "merge", req, None, {"canonical": req.canonical, "duplicates": req.duplicates})
            return MergeResponse(
                canonical=req.canonical,
                merged_count=0,
                strategy_used=req.strategy,
                stores=[],
                pending_approval=True,
                approval_url=self.approval_url(item.id),
                approval_id=item.id,
            )
        ids = [req.canonical, *req.duplicates]
        details = {"strategy": req.strategy.value, "user_id": req.user_id}

        def merged(resp: MergeResponse) -> Outcome:
            return ids, {**details, "merged_count": resp.merged_count}

        return await self._trail.bracket("merge", req.agent_id, ids, details,
                                         done=merged).run(lambda: self._inner.merge(req))

    async def expire(self, req: ExpireRequest) -> ExpireResponse:
        await self._desk.ensure_recovered()
        if self._staging.active():
            await self._gate.decide("expire", req.agent_id, req.user_id, req)
            item = await self._staging.stage("expire", req, None, {
                "policy": req.policy.model_dump(mode="json", exclude_none=True),
                "action_requested": req.action.value,
            })
            return ExpireResponse(
                matched_count=0,
                action_taken=req.action,
                stores=[],
                pending_approval=True,
                approval_url=self.approval_url(item.id),
                approval_id=item.id,
            )
        details = {
            "policy": req.policy.model_dump(mode="json", exclude_none=True),
            "action_requested": req.action.value,
            "user_id": req.user_id,
        }

        def expired(resp: ExpireResponse) -> Outcome:
            return resp.matched_ids or [], {**details, "matched_count": resp.matched_count}

        return await self._trail.bracket("expire", req.agent_id, [], details,
                                         done=expired).run(lambda: self._inner.expire(req))

    async def gate_update(self, req: UpdateMemoryRequest) -> str | None:
        """Stage an update a caller asked for when policy sends ``update`` to review: the
        approval id, or ``None`` when it may run now (a ``reject`` rule raises ``Forbidden``).

        Only the public update operation is gated; the store's own in-place changes
        (procedure state, tier promotion) call :meth:`update` and are audited, never staged.
        """
        kind = "update" if req.content is not None else "update_metadata"
        if await self._gate.decide("update", req.agent_id, req.user_id, req, kind) != "review":
            return None
        item = await self._staging.stage("update", req, req.reason, {"ids": [req.id]})
        return item.id

    async def update(self, req: UpdateRequest) -> MemoryRecord:
        """The in-place change in its audit bracket; a change of content keeps the text it
        replaces for ``history`` (the policy's ``history_text``), named by the ``done``
        entry and written with it."""
        await self._desk.ensure_recovered()
        details: dict[str, Any] = {
            **(self._trail.keyed("content_hmac", req.content) if req.content is not None
               else {}),
            "metadata_keys": sorted(req.metadata_patch or {}),
            "confidence": req.confidence,
            "user_id": req.user_id,
            "reason": req.reason,
        }
        kept = await self._copies.keep_replaced(self._inner, self._gate.policies, req.agent_id,
                                                req.id, req.user_id, req.content)
        if kept is None:
            bracket: AuditBracket[MemoryRecord] = self._trail.bracket(
                "update", req.agent_id, [req.id], details)
            return await bracket.run(lambda: self._inner.update(req))
        text_id, keep = kept

        def settle(_rec: MemoryRecord) -> Settle:
            def run() -> Outcome:
                keep()
                return [req.id], {**details, "previous_text": text_id}
            return run

        keeping: AuditBracket[MemoryRecord] = self._trail.bracket(
            "update", req.agent_id, [req.id], details, settle=settle)
        return await keeping.run(lambda: self._inner.update(req))

    # --- staging ---------------------------------------------------------------------------

    staging = delegate("_staging", StagingDesk.staging)
    stage_operation = delegate_async("_staging", StagingDesk.stage_operation)

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

    # --- the reviewer's side (see ReviewDesk) ------------------------------------------------

    approval_url = delegate("_desk", ReviewDesk.approval_url)
    health = delegate_async("_desk", ReviewDesk.health)
    recover = delegate_async("_desk", ReviewDesk.recover)
    approve = delegate_async("_desk", ReviewDesk.approve)
    reject = delegate_async("_desk", ReviewDesk.reject)
    decide = delegate_async("_desk", ReviewDesk.decide)
    list_pending = delegate("_desk", ReviewDesk.list_pending)
    alist_pending = delegate_async("_desk", ReviewDesk.alist_pending)
    pending_items = delegate_async("_desk", ReviewDesk.pending_items)
    restage = delegate_async("_desk", ReviewDesk.restage)
    get_item = delegate_async("_desk", ReviewDesk.get_item)
    decided_items = delegate_async("_desk", ReviewDesk.decided_items)
    get_review = delegate_async("_desk", ReviewDesk.get_review)
    queue_counts = delegate_async("_desk", ReviewDesk.queue_counts)
    audit_head = delegate_async("_desk", ReviewDesk.audit_head)
    audit_entries = delegate("_desk", ReviewDesk.audit_entries)
    aaudit_entries = delegate_async("_desk", ReviewDesk.aaudit_entries)
    verify = delegate("_desk", ReviewDesk.verify)
    averify = delegate_async("_desk", ReviewDesk.averify)
    averify_incremental = delegate_async("_desk", ReviewDesk.averify_incremental)
    checkpoint = delegate("_desk", ReviewDesk.checkpoint)

    @property
    def recovery_report(self) -> RecoveryReport:
        return self._desk.recovery_report

    # --- reads -----------------------------------------------------------------------------

    async def recall(self, req: RecallRequest) -> RecallResponse:
        await self._desk.ensure_recovered()
        resp = await self._inner.recall(req)
        if not self._audit_recall:
            return resp
        await self._trail.record_read(
            fail_closed=not self._serve_reads,
            actor=current_actor(),
            action="recall",
            agent_id=req.agent_id,
            memory_ids=[h.id for h in resp.results],
            details={**self._trail.keyed("query_hmac", req.query), "k": req.k,
                     "user_id": req.user_id},
        )
        return resp

    async def get(self, agent_id: str, id: str, user_id: str | None = None) -> MemoryRecord | None:
        return await self._inner.get(agent_id, id, user_id)

    async def list(self, query: ListQuery) -> builtins.list[MemoryRecord]:
        return await self._inner.list(query)

    async def aclose(self, *, inner: bool = True) -> None:
        """Write what is queued, close the governance database and (unless ``inner=False``,
        for a caller that owns the inner store) the inner store."""
        try:
            if inner:
                await self._inner.aclose()
        finally:
            self._w.close()
            self._audit.close()
