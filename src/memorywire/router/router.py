"""``MemoryRouter``: one ``MemoryStore`` in front of several, fanning out and fusing.

Identity. ``remember`` gives a memory one id (the caller's, or a new one) and hands that id to
every child, so the same memory has the same id everywhere and recall fuses by id alone —
never by guessing from content.

Failure isolation. Every call to a child runs under its deadline: ``deadlines[name]``
seconds, else the router's ``timeout``, from the start of the operation. A child that
raises, misses its deadline, answers with something that is not a valid v0 response (wrong
type, hits that fail the ``RecallHit`` schema, non-finite scores, types that were not asked
for, another id than the one it was given) or returns ids it cannot back up with ``get`` is
left out of that call, named in the response's ``failures`` (a recall's ``stores_failed``;
the ``error`` / ``errors`` fields of forget / merge / expire) and logged on
``memorywire.router``. An operation fails only when every child failed: with the children's
own error when they all refused the same way (say ``NotFound``), else with
``BackendUnavailable``.

Recall. Each child is asked for ``min(1000, max(2k, k + 10))`` hits with ``hops = 0``; the
lists are fused (:mod:`memorywire.core.fusion`; each child's contribution multiplied by its
``trust``, in every fusion mode), the graph boost is applied once here from
the edges of children that declare ``graph``, and the result is cut to ``k``. A fused hit
carries the content of, and names as ``source_store``, the child that ranked it best.
Verification: ids that only one child returned and that sit in the fused top ``2k`` are
checked with that child's ``get``; a child holding none of a checked id is excluded as lying
or corrupt. A check that times out or errors is inconclusive and keeps the hits (logged).

Writes. ``remember`` goes to the children whose capabilities include the memory's type
(``primary_only``: the first of those); the others are not written, not named in ``stores``
and not counted as failures. ``stores_queried`` of a recall names only the children whose
answer was used. A merge that merged nothing checks that its duplicates name something (live,
merged away, or an entity name) on some child, and refuses with ``NotFound`` otherwise.

Capabilities. The union of what the children declare — the router can serve a memory type or
a search mode if any child can — except ``recall_tracking`` and ``governance``, which the
router declares only when every child does: an expire by ``no_recall_in_days`` or an
approval-gated write would otherwise be honoured by some children and silently not by
others, so the router raises ``CapabilityMissing`` for them instead.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

import anyio

from memorywire.core.fusion import DEFAULT_RRF_K, FusedItem, fuse, graph_boost
from memorywire.core.ids import new_id
from memorywire.core.timeline import rank_current_first
from memorywire.errors import (
    BackendUnavailable,
    CapabilityMissing,
    ErrorDetail,
    InvalidRequest,
    MemorywireError,
    NotFound,
    PendingApproval,
)
from memorywire.recall.plan import recall_in_time
from memorywire.router.fanout import FanOut, _BadAnswer
from memorywire.router.graph import GraphEdges, GraphStore, _merge_distances
from memorywire.router.outbox import ForgetOutbox
from memorywire.store.base import Capability, Health, ListQuery, MemoryStore, UpdateRequest
from memorywire.store.cascade import expand_cascade
from memorywire.store.refs import unknown_refs
from memorywire.store.timeline import remember_in_time
from memorywire.wire.models import (
    ExpireRequest,
    ExpireResponse,
    ForgetRequest,
    ForgetResponse,
    MemoryRecord,
    MergeRequest,
    MergeResponse,
    RecallHit,
    RecallRequest,
    RecallResponse,
    RememberRequest,
    RememberResponse,
    StoreCount,
    StoreFailure,
)

__all__ = ["MAX_FETCH", "GraphStore", "MemoryRouter", "fetch_size"]

log = logging.getLogger("memorywire.router")

MAX_FETCH = 1000
#: Capabilities the router claims only when every child claims them.
_NEEDS_ALL = frozenset({Capability.RECALL_TRACKING, Capability.GOVERNANCE, Capability.ERASE,
                        Capability.DERIVATION})
#: Follow-up calls (verification, graph edges) get at least this long even when a slow child
#: used up the deadline, so one sleeper cannot make every survivor's answer unverifiable.
_FOLLOW_UP_FLOOR_S = 0.05


def _one_by_one(s: MemoryStore) -> Callable[[Sequence[RememberRequest]],
                                          Awaitable[list[RememberResponse]]]:
    async def write(reqs: Sequence[RememberRequest]) -> list[RememberResponse]:
        return [await s.remember(r) for r in reqs]
    return write


def fetch_size(k: int) -> int:
    """How many hits to ask each child for, so fusion sees more than the final cut."""
    return min(MAX_FETCH, max(2 * k, k + 10))


def _checked_hits(resp: object, req: RecallRequest) -> list[RecallHit]:
    if not isinstance(resp, RecallResponse):
        raise _BadAnswer(f"recall returned {type(resp).__name__}, not a RecallResponse")
    results: object = getattr(resp, "results", None)
    if not isinstance(results, list):
        raise _BadAnswer("recall returned no list of results")
    hits: list[RecallHit] = []
    for raw in results:
        try:
            hit = RecallHit.model_validate(raw if isinstance(raw, dict) else dict(raw))
        except (ValueError, TypeError) as exc:
            raise _BadAnswer(f"recall returned a schema-invalid hit: {exc}") from None
        if not math.isfinite(hit.score):
            raise _BadAnswer(f"recall returned a non-finite score for {hit.id!r}")
        if req.types is not None and hit.type not in req.types:
            raise _BadAnswer(f"recall returned a {hit.type.value} hit that was not asked for")
        hits.append(hit)
    return hits


class MemoryRouter(GraphEdges, FanOut):
    def __init__(
        self,
        stores: Sequence[MemoryStore],
        weights: Mapping[str, float] | None = None,
        timeout: float = 2.0,
        quorum: int = 1,
        remember_policy: Literal["all", "primary_only"] = "all",
        name: str = "router",
        *,
        rrf_k: int = DEFAULT_RRF_K,
        verify_hits: bool = True,
        outbox: ForgetOutbox | None = None,
        deadlines: Mapping[str, float] | None = None,
        trust: Mapping[str, float] | None = None,
    ) -> None:
        """``stores[0]`` is the primary (``primary_only`` writes there; it wins rank ties).

        ``quorum`` counts the children that answered a recall: with quorum 2, an id that only
        one child returns is dropped, which stops a single lying store from placing ids.
        ``deadlines`` gives a child its own deadline in seconds (a slow archive may get more
        than ``timeout``, a cache less). ``trust`` (0 < trust ≤ 1, default 1) is the operator's
        standing confidence in a child: it multiplies everything that child contributes to
        fusion in every mode, unlike ``weights``, which only ``weighted`` fusion reads.
        """
        if not stores:
            raise InvalidRequest("a router needs at least one store")
        names = [s.name for s in stores]
        if len(set(names)) != len(names):
            raise InvalidRequest(f"child store names must be unique, got {names}")
        if not 1 <= quorum <= len(stores):
            raise InvalidRequest(f"quorum must be between 1 and {len(stores)}")
        if not (timeout > 0 and math.isfinite(timeout)):
            raise InvalidRequest("timeout must be a positive number of seconds")
        if remember_policy not in ("all", "primary_only"):
            raise InvalidRequest("remember_policy must be 'all' or 'primary_only'")
        unknown = set(weights or {}) - set(names)
        if unknown:
            raise InvalidRequest(f"weights name unknown stores: {sorted(unknown)}")
        if any(not math.isfinite(w) or w < 0 for w in (weights or {}).values()):
            raise InvalidRequest("weights must be finite and non-negative")
        for what, given in (("deadlines", deadlines), ("trust", trust)):
            unknown = set(given or {}) - set(names)
            if unknown:
                raise InvalidRequest(f"{what} name unknown stores: {sorted(unknown)}")
        if any(not (d > 0 and math.isfinite(d)) for d in (deadlines or {}).values()):
            raise InvalidRequest("deadlines must be positive numbers of seconds")
        if any(not (0 < t <= 1) for t in (trust or {}).values()):
            raise InvalidRequest("trust must be in (0, 1]")
        self._stores = list(stores)
        self._weights = dict(weights or {})
        self._timeout = float(timeout)
        own = dict(deadlines or {})
        self._deadlines = {n: float(own.get(n, self._timeout)) for n in names}
        self._trust = dict(trust or {})
        self._quorum = quorum
        self._policy = remember_policy
        self._name = name
        self._rrf_k = rrf_k
        self._verify = verify_hits
        #: Forgets a child missed, re-sent until it acknowledges (see ``memorywire.router.outbox``).
        self.outbox = outbox

    @property
    def name(self) -> str:
        return self._name

    @property
    def stores(self) -> list[MemoryStore]:
        return list(self._stores)

    @property
    def capabilities(self) -> frozenset[Capability]:
        caps = [s.capabilities for s in self._stores]
        union = frozenset().union(*caps)
        every = frozenset.intersection(*caps)
        # TIME always: the router applies it itself around a child that lacks it. PURGE
        # never: each child's own sweep purges it (the router has no purge_expired).
        return frozenset({*(c for c in union if (c not in _NEEDS_ALL or c in every)
                            and c is not Capability.PURGE), Capability.TIME})

    # --- writes ------------------------------------------------------------------------------

    async def remember(self, req: RememberRequest) -> RememberResponse:
        if req.approval_required and Capability.GOVERNANCE not in self.capabilities:
            raise CapabilityMissing(
                "approval_required needs governance on every child; wrap the router in "
                "GovernedStore instead"
            )
        mid = req.id or new_id()
        if self.outbox is not None and req.id is not None and self.outbox.holds(req.agent_id,
                                                                                  mid):
            # An older missed forget of this id goes first, so it cannot delete this write.
            await self.outbox.deliver({s.name: s for s in self._stores}, self._timeout,
                                      agent_id=req.agent_id, memory_id=mid)
        child_req = req.model_copy(update={"id": mid})
        # Only children that keep this memory type are written: one lacking it would refuse,
        # and that is a property of the child, not a failure of the write.
        wanted = Capability(req.type.value)
        capable = [s for s in self._stores if wanted in s.capabilities]
        if not capable:
            raise CapabilityMissing(f"no child store declares the {wanted.value} capability")
        targets = capable[:1] if self._policy == "primary_only" else capable

        async def write(s: MemoryStore) -> RememberResponse:
            if Capability.TIME in s.capabilities:
                resp = await s.remember(child_req)
            else:  # the child stores validity as metadata; the router closes what it replaces
                resp = (await remember_in_time(s, [child_req], _one_by_one(s)))[0]
            if not isinstance(resp, RememberResponse):
                raise _BadAnswer(f"remember returned {type(resp).__name__}")
            if resp.pending_approval:
                raise PendingApproval("the store staged the write for approval")
            if resp.id != mid:
                raise _BadAnswer(f"store stored id {resp.id!r} instead of {mid!r}")
            return resp

        outcomes = await self._gather(targets, write, "remember")
        accepted = [o for o in outcomes if o.ok and o.value is not None]
        if not accepted:
            raise self._all_failed(outcomes, "remember")
        first = accepted[0].value
        assert first is not None
        return RememberResponse(
            id=mid, stored_at=first.stored_at, stores=[o.store.name for o in accepted],
            pending_approval=False, failures=self._failures(outcomes),
            conflicts=first.conflicts, near_duplicates=first.near_duplicates,
        )

    async def forget(self, req: ForgetRequest) -> ForgetResponse:
        if req.hard_delete and Capability.ERASE not in self.capabilities:
            # refused before any child acts: a half-erased memory is worse than none erased
            lacking = [s.name for s in self._stores if Capability.ERASE not in s.capabilities]
            raise CapabilityMissing(
                f"hard_delete needs the erase capability, which {lacking} do not declare; "
                "use a soft delete"
            )
        # Expanded here, over every child's edges, so a descendant kept only by one child is
        # still named to all of them.
        req = await expand_cascade(self, req)
        outcomes = await self._gather(self._stores, lambda s: s.forget(req), "forget")
        await self._keep_missed(outcomes, req)
        if not any(o.ok for o in outcomes):
            raise self._all_failed(outcomes, "forget")
        ids: dict[str, None] = {}
        counts: list[StoreCount] = []
        for o in outcomes:
            if o.ok and o.value is not None:
                ids.update(dict.fromkeys(o.value.forgotten_ids))
                counts.append(StoreCount(store=o.store.name, count=len(o.value.forgotten_ids)))
            elif o.failure is not None:
                counts.append(StoreCount(store=o.store.name, count=0, error=o.failure.error))
        return ForgetResponse(forgotten_ids=list(ids), stores=counts, hard_delete=req.hard_delete)

    async def merge(self, req: MergeRequest) -> MergeResponse:
        outcomes = await self._gather(self._stores, lambda s: s.merge(req), "merge")
        done = [o.value for o in outcomes if o.ok and o.value is not None]
        if not done:
            raise self._all_failed(outcomes, "merge")
        if not any(r.merged_count for r in done):
            unknown = await unknown_refs([o.store for o in outcomes if o.ok], req)
            if unknown:
                raise NotFound(f"duplicate memories not found: {unknown}",
                               [ErrorDetail("/duplicates", "not_found", f"{ref!r} names no "
                                            "memory in scope") for ref in unknown])
        failures = self._failures(outcomes)
        return MergeResponse(
            canonical=done[0].canonical, merged_count=max(r.merged_count for r in done),
            strategy_used=req.strategy, stores=[o.store.name for o in outcomes if o.ok],
            errors=failures or None,
        )

    async def expire(self, req: ExpireRequest) -> ExpireResponse:
        if (req.policy.no_recall_in_days is not None
                and Capability.RECALL_TRACKING not in self.capabilities):
            lacking = [s.name for s in self._stores
                       if Capability.RECALL_TRACKING not in s.capabilities]
            raise CapabilityMissing(
                f"no_recall_in_days needs recall tracking, which {lacking} do not declare"
            )
        outcomes = await self._gather(self._stores, lambda s: s.expire(req), "expire")
        done = [o.value for o in outcomes if o.ok and o.value is not None]
        if not done:
            raise self._all_failed(outcomes, "expire")
        failures = self._failures(outcomes)
        matched: dict[str, None] = {}
        every_listed = all(r.matched_ids is not None for r in done)
        for r in done:
            matched.update(dict.fromkeys(r.matched_ids or []))
        count = len(matched) if every_listed else max(r.matched_count for r in done)
        return ExpireResponse(
            matched_count=count, action_taken=req.action,
            stores=[o.store.name for o in outcomes if o.ok],
            matched_ids=list(matched) if every_listed else None, errors=failures or None,
        )

    async def update(self, req: UpdateRequest) -> MemoryRecord:
        """Applied to every child holding the memory, so replicas stay alike."""
        outcomes = await self._gather(self._stores, lambda s: s.update(req), "update")
        for o in outcomes:
            if o.ok and o.value is not None:
                return o.value
        raise self._all_failed(outcomes, "update")

    # --- reads -------------------------------------------------------------------------------

    async def recall(self, req: RecallRequest) -> RecallResponse:
        started = time.perf_counter()
        deadline = anyio.current_time() + max(self._deadlines.values())
        if req.hops and Capability.GRAPH not in self.capabilities:
            raise CapabilityMissing("hops > 0 needs a child that declares the graph capability")
        child_req = req.model_copy(update={"k": fetch_size(req.k), "hops": 0})

        nested: list[StoreFailure] = []

        now = int(time.time() * 1000)

        async def ask(s: MemoryStore) -> list[RecallHit]:
            if Capability.TIME in s.capabilities:
                resp = await s.recall(child_req)
            else:  # suppress what a newer memory superseded: the child cannot
                resp = await recall_in_time(child_req, s.recall, now)
            hits = _checked_hits(resp, req)
            # A nested router's own exclusions stay visible, named by their path.
            nested.extend(
                f.model_copy(update={"store": f"{s.name}/{f.store}"})
                for f in getattr(resp, "failures", ())
            )
            return hits

        outcomes = await self._gather(self._stores, ask, "recall")
        failures = self._failures(outcomes) + nested
        answered = {o.store.name: o.value for o in outcomes if o.ok and o.value is not None}
        if not answered:
            raise self._all_failed(outcomes, "recall")

        def fused_now() -> list[FusedItem]:
            lists = {n: [(h.id, h.score) for h in hits] for n, hits in answered.items()}
            return fuse(lists, req.fusion, weights=self._weights, quorum=self._quorum,
                        rrf_k=self._rrf_k, trust=self._trust)

        fused = fused_now()
        follow_up = max(deadline, anyio.current_time() + _FOLLOW_UP_FLOOR_S)
        liars: list[StoreFailure] = []
        distances: dict[str, dict[str, dict[str, int]]] = {}
        async with anyio.create_task_group() as tg:
            if self._verify:
                tg.start_soon(self._verify_singletons, req, fused[: 2 * req.k], follow_up, liars)
            if req.hops:
                tg.start_soon(self._edges, req, [f.id for f in fused], list(answered), follow_up,
                              distances, failures)
        if liars:
            failures.extend(liars)
            for f in liars:
                answered.pop(f.store, None)
                distances.pop(f.store, None)
            if not answered:
                details = [ErrorDetail(f"/stores/{f.store}", f.code, f.error) for f in failures]
                raise BackendUnavailable("recall failed on every store", details)
            fused = fused_now()
        if req.hops:
            fused = graph_boost(fused, _merge_distances(distances.values()), req.hops)
        by_store = {n: {h.id: h for h in reversed(hits)} for n, hits in answered.items()}
        results = [
            by_store[f.best_store][f.id].model_copy(update={
                "score": f.score, "source_store": f.best_store, "supporting": list(f.supporting),
            })
            for f in fused[: req.k]
        ]
        point = req.as_of if req.as_of is not None else req.known_at
        if req.include_superseded or point is not None:
            results = rank_current_first(results, point if point is not None else now,
                                         as_of=point is not None, known_at=req.known_at)
        return RecallResponse(
            results=results, fusion_used=req.fusion,
            stores_queried=[s.name for s in self._stores if s.name in answered],
            latency_ms=int((time.perf_counter() - started) * 1000), failures=failures,
        )

    async def _verify_singletons(
        self, req: RecallRequest, top: Sequence[FusedItem], deadline: float,
        liars: list[StoreFailure],
    ) -> None:
        wanted: dict[str, list[str]] = {}
        for f in top:
            if len(f.stores) == 1:
                wanted.setdefault(f.best_store, []).append(f.id)
        if not wanted:
            return

        async def held(s: MemoryStore) -> None:
            missing: list[str] = []

            async def check(i: str) -> None:
                try:
                    if await s.get(req.agent_id, i, req.user_id) is None:
                        missing.append(i)
                except MemorywireError as exc:  # inconclusive for this id, not a lie
                    log.info("verifying %r on %r failed: %s", i, s.name, exc.message)

            async with anyio.create_task_group() as tg:
                for i in wanted[s.name]:
                    tg.start_soon(check, i)
            if missing:
                raise _BadAnswer(f"returned ids it does not hold: {sorted(missing)[:5]}")

        stores = [s for s in self._stores if s.name in wanted]
        for o in await self._gather(stores, held, "recall verification", deadline):
            if o.bad and o.failure is not None:
                liars.append(o.failure)
            elif o.failure is not None:
                log.info("could not verify hits of %r; kept them", o.store.name)
    async def get(self, agent_id: str, id: str, user_id: str | None = None) -> MemoryRecord | None:
        """The first child in declared order that holds the memory."""
        outcomes = await self._gather(self._stores, lambda s: s.get(agent_id, id, user_id), "get")
        if not any(o.ok for o in outcomes):
            raise self._all_failed(outcomes, "get")
        for o in outcomes:
            if o.ok and o.value is not None:
                return o.value
        return None

    async def list(self, query: ListQuery) -> list[MemoryRecord]:
        """Union by id (first child in declared order wins), oldest first, then ``limit``."""
        outcomes = await self._gather(self._stores, lambda s: s.list(query), "list")
        if not any(o.ok for o in outcomes):
            raise self._all_failed(outcomes, "list")
        merged: dict[str, MemoryRecord] = {}
        for o in outcomes:
            for rec in o.value or []:
                merged.setdefault(rec.id, rec)
        rows = sorted(merged.values(), key=lambda r: (r.created_at, r.id))
        if query.after_id is not None:
            anchor = merged.get(query.after_id)
            if anchor is not None:
                key = (anchor.created_at, anchor.id)
                rows = [r for r in rows if (r.created_at, r.id) > key]
            rows = [r for r in rows if r.id != query.after_id]
        return rows[: query.limit]

    async def health(self) -> Health:
        outcomes = await self._gather(self._stores, lambda s: s.health(), "health")
        details: dict[str, Any] = {}
        statuses: list[str] = []
        for o in outcomes:
            if o.ok and o.value is not None:
                statuses.append(o.value.status)
                details[o.store.name] = o.value.to_dict()
            else:
                statuses.append("down")
                details[o.store.name] = {"status": "down",
                                         "error": o.failure.error if o.failure else ""}
        if all(s == "ok" for s in statuses):
            status = "ok"
        elif all(s == "down" for s in statuses):
            status = "down"
        else:
            status = "degraded"
        return Health(status, {"stores": details})

    async def aclose(self) -> None:
        """Closes every child; a failure to close one is logged and does not stop the rest."""
        outbox, self.outbox = self.outbox, None  # closing delivers nothing more
        try:
            for o in await self._gather(self._stores, lambda s: s.aclose(), "close"):
                if o.failure is not None:
                    log.warning("closing %r failed: %s", o.store.name, o.failure.error)
        finally:
            if outbox is not None:
                outbox.close()
