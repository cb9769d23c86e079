"""Turn a queue item into the ``ReviewRequest`` a reviewer reads, with a live diff.

The diff is computed when asked, against the inner store as it is now, rather than stored at
staging time: the queue then never holds copies of other memories' content, and a reviewer
never approves against a stale picture of what the change would touch. Only the review page
asks for it (approve and reject never build one), so what a remember's diff costs is paid
when a reviewer looks, not per decision.
"""

from __future__ import annotations

from typing import Any

from memorywire.core.clock import Clock, SystemClock
from memorywire.core.diff import forget_diff, merge_diff, remember_diff
from memorywire.core.expiry import ExpiryFacts, policy_matches
from memorywire.governance.queue import QueueItem
from memorywire.store.base import ListQuery, MemoryStore
from memorywire.store.timeline import conflicts_for
from memorywire.wire.memory_ops import UpdateMemoryRequest
from memorywire.wire.models import (
    DecisionRequest,
    Diff,
    ExpireAction,
    ExpireRequest,
    ForgetRequest,
    MemoryRecord,
    MergeRequest,
    RecallRequest,
    RememberRequest,
    ReviewRequest,
)

__all__ = ["ReviewBuilder"]

_QUERY_CHARS = 2000
_CANDIDATES = 10


def _rec(r: MemoryRecord) -> dict[str, Any]:
    return r.model_dump(mode="json", exclude_none=True)


class ReviewBuilder:
    def __init__(self, inner: MemoryStore, clock: Clock | None = None) -> None:
        self._inner = inner
        self._clock: Clock = clock or SystemClock()

    def summary(self, item: QueueItem, url: str | None, diff: Diff | None = None) -> dict[str, Any]:
        status = "approved" if item.status in ("committing", "failed") else item.status
        review = ReviewRequest(
            operation=item.operation,  # type: ignore[arg-type]
            agent_id=item.agent_id,
            request=item.request,
            diff=diff or Diff(),
            reasoning=item.reasoning,
            id=item.id,
            status=status,  # type: ignore[arg-type]
            created_at=item.created_at,
            content_hash=item.content_hash,
            requested_by=item.requested_by,
        )
        out = review.model_dump(mode="json")
        out["commit_state"] = item.status
        out["approval_url"] = url
        out["diff_included"] = diff is not None
        if item.reviewer is not None and item.reviewed_at is not None:
            out["decision"] = DecisionRequest(
                approved=item.status in ("committing", "approved"),
                reviewer=item.reviewer,
                reviewed_at=item.reviewed_at,
                reason=item.reason,
                content_hash=item.reviewed_hash,
            ).model_dump(mode="json")
        if item.result is not None:
            out["result"] = item.result
        return out

    async def review(self, item: QueueItem, url: str | None, with_diff: bool) -> dict[str, Any]:
        diff = await self.diff(item) if with_diff and item.status == "pending" else None
        return self.summary(item, url, diff)

    async def diff(self, item: QueueItem) -> Diff:
        if item.operation == "remember":
            return await self._remember_diff(RememberRequest.model_validate(item.request))
        if item.operation == "forget":
            freq = ForgetRequest.model_validate(item.request)
            found: dict[str, MemoryRecord] = {}
            for i in freq.ids or []:
                rec = await self._inner.get(freq.agent_id, i, freq.user_id)
                if rec is not None:
                    found[rec.id] = rec
            if freq.filter is not None:
                for rec in await self._inner.list(
                    ListQuery(agent_id=freq.agent_id, user_id=freq.user_id, filter=freq.filter)
                ):
                    found.setdefault(rec.id, rec)
            return forget_diff([_rec(r) for r in found.values()])
        if item.operation == "recover":  # what the plan removes or quarantines
            plan = item.request.get("plan", {})
            gone: list[dict[str, Any]] = []
            for part in ("goes", "quarantined"):
                for it in plan.get(part, []):
                    rec = await self._inner.get(it["agent_id"], it["id"], it.get("user_id"))
                    if rec is not None:
                        gone.append(_rec(rec))
            return forget_diff(gone)
        if item.operation == "quarantine":  # hidden from reads now: shown from the item
            held: dict[str, Any] = {k: item.request[k] for k in ("id", "type", "content", "source",
                                                  "created_at", "user_id") if k in item.request}
            return forget_diff([held])
        if item.operation == "expire":
            return await self._expire_diff(ExpireRequest.model_validate(item.request))
        if item.operation == "update":
            return await self._update_diff(UpdateMemoryRequest.model_validate(item.request))
        mreq = MergeRequest.model_validate(item.request)
        canonical = await self._resolve(mreq, mreq.canonical)
        if not canonical:
            return Diff()
        dups: dict[str, dict[str, Any]] = {}
        for ref in mreq.duplicates:
            for row in await self._resolve_all(mreq, ref):
                if row["id"] != canonical[0]["id"]:
                    dups.setdefault(row["id"], row)
        return merge_diff(canonical[0], list(dups.values()), mreq.strategy)

    async def _remember_diff(self, req: RememberRequest) -> Diff:
        """The recalled neighbours, and every conflict a remember of ``req`` would report.

        The conflicts come from :func:`~memorywire.store.timeline.conflicts_for`, the scan the
        write itself runs, so the meaning rule sees what the word rules cannot. It runs after
        the recall: on a store that holds vectors its one embedding of ``req`` is the recall's
        query text, which the embedder's cache then serves (no second model call).
        """
        hits = await self._inner.recall(
            RecallRequest(
                agent_id=req.agent_id,
                user_id=req.user_id,
                query=req.content_text()[:_QUERY_CHARS],
                k=_CANDIDATES,
            )
        )
        found = await conflicts_for(self._inner, req)
        conflicts = [{**_rec(rec), "why": c.why} for c in found
                     if (rec := await self._inner.get(req.agent_id, c.id, req.user_id))]
        superseded = [_rec(rec) for old_id in req.supersedes or []
                      if (rec := await self._inner.get(req.agent_id, old_id, req.user_id))]
        new = req.model_dump(mode="json", exclude_none=True)
        return remember_diff(new, [h.model_dump(mode="json") for h in hits.results],
                             conflicts=conflicts, superseded=superseded)

    async def _update_diff(self, req: UpdateMemoryRequest) -> Diff:
        """The memory before and after, metadata patched as the store will patch it."""
        rec = await self._inner.get(req.agent_id, req.id, req.user_id)
        if rec is None:
            return Diff()
        before = _rec(rec)
        after = dict(before)
        if req.content is not None:
            after["content"] = req.content
        if req.metadata is not None:
            meta = dict(before.get("metadata") or {})
            for key, value in req.metadata.items():
                if value is None:
                    meta.pop(key, None)
                else:
                    meta[key] = value
            after["metadata"] = meta
        if req.confidence is not None:
            after["confidence"] = req.confidence
        rows = [{"id": rec.id, "before": before, "after": after}]
        for old_id in req.supersedes or []:  # each would leave default recall
            old = await self._inner.get(req.agent_id, old_id, req.user_id)
            if old is not None:
                was = _rec(old)
                rows.append({"id": old_id, "before": was, "relation": "superseded",
                             "after": {**was, "superseded_by": rec.id}})
        return Diff(modified=rows)

    async def _expire_diff(self, req: ExpireRequest) -> Diff:
        """What the policy selects now, from the first 1,000 memories in scope.

        Recall history is not visible here, so under ``no_recall_in_days`` a memory counts as
        last active when created: the diff may list memories the commit will spare.
        """
        now = self._clock.now_ms()
        pol = req.policy
        rows = await self._inner.list(
            ListQuery(
                agent_id=req.agent_id,
                user_id=req.user_id,
                types=None if pol.type is None else [pol.type],
            )
        )
        hits = [
            _rec(r)
            for r in rows
            if policy_matches(pol, ExpiryFacts(r.type, r.created_at, r.confidence), now)
        ]
        if req.action is ExpireAction.DEMOTE:
            return Diff(modified=[{"id": h["id"], "before": h, "after": h} for h in hits])
        return forget_diff(hits)

    async def _resolve(self, req: MergeRequest, ref: str) -> list[dict[str, Any]]:
        """An id, else the oldest memory whose ``metadata.entity_name`` is ``ref``."""
        rows = await self._resolve_all(req, ref)
        return sorted(rows, key=lambda r: (r.get("created_at", 0), r["id"]))[:1]

    async def _resolve_all(self, req: MergeRequest, ref: str) -> list[dict[str, Any]]:
        rec = await self._inner.get(req.agent_id, ref, req.user_id)
        if rec is not None:
            return [_rec(rec)]
        named = await self._inner.list(
            ListQuery(agent_id=req.agent_id, user_id=req.user_id, filter={"entity_name": ref})
        )
        return [_rec(r) for r in named]
