"""The v0 write and read operations, once, for every backend that stores whole rows.

In-memory, mem0, Letta and Cognee keep each memory as one row (a dict entry, a payload, a
passage, a data item) and cannot run our rules in a query language, so the rules run here,
over :class:`memorywire.core.records.Row`, and each adapter supplies only a
:class:`RowBackend`: read an agent's rows (all, or by id), write new ones, replace changed
ones, erase. The adapter composes a :class:`RowOps` and inherits :class:`RowDelegate`, which
forwards the protocol methods to it; recall (the backends search differently), health and
closing stay with the adapter, which overrides a delegated method only to translate (a
batching ``remember_many``, a refusal before anything is read).

Every operation holds the agent's lock (one ``anyio.Lock`` per agent) from its read to its
last write, so two operations of one agent in one process never interleave.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar, cast

import anyio

from memorywire.core.clock import Clock
from memorywire.core.content import content_to_storage, fold_request
from memorywire.core.expiry import needs_recall_tracking, policy_matches
from memorywire.core.ids import new_id
from memorywire.core.merge import plan_row_merge
from memorywire.core.records import (
    ListQuery,
    RememberAction,
    Row,
    UpdateRequest,
    expire_marks,
    forget_selects,
    list_page,
    new_row,
    plan_update,
    remember_action,
)
from memorywire.errors import CapabilityMissing, NotFound
from memorywire.store.cascade import expand_cascade
from memorywire.store.portable import Cursor, ImportCounts, OnConflict, decide, page_of
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
    RememberRequest,
    RememberResponse,
    StoreCount,
)

if TYPE_CHECKING:
    from memorywire.store.base import MemoryStore

__all__ = ["RowBackend", "RowDelegate", "RowOps", "live_in_scope", "revived", "row_hit"]

R = TypeVar("R", bound=Row)

#: Every field of a core row; a revived row takes all of them from the new write and keeps
#: only the adapter's own fields (its vendor handle).
_ROW_FIELDS = tuple(f.name for f in fields(Row))


class RowBackend(Protocol[R]):
    """What an adapter translates; all rows it returns are in the agent's scope."""

    async def scan(self, agent_id: str) -> dict[str, R]:
        """Every row of the agent by id, whatever its state (deleted, archived, merged)."""
        ...

    async def fetch(self, agent_id: str, ids: Sequence[str]) -> dict[str, R]:
        """The rows of the agent with these ids, whatever their state (a subset of ``scan``
        that a backend may answer without reading the whole agent)."""
        ...

    async def scan_all(self) -> builtins.list[R]:
        """Every row of every agent; raise ``CapabilityMissing`` when that cannot be done."""
        ...

    async def insert(self, rows: Sequence[Row]) -> None:
        """Store new rows (embedding their text)."""
        ...

    async def replace(self, changes: Sequence[tuple[R, R, bool]]) -> builtins.list[R]:
        """Store each ``new`` in place of ``old``; re-embed where the flag says the text
        changed. Returns the stored rows in order."""
        ...

    async def erase(self, rows: Sequence[R]) -> None:
        """Remove rows and every trace of their content (hard delete)."""
        ...


def live_in_scope(rows: dict[str, R], user_id: str | None, now: int) -> builtins.list[R]:
    """The live rows of one agent's scan, oldest first."""
    out = [r for r in rows.values() if r.in_scope(None, user_id) and r.live(now)]
    out.sort(key=lambda r: (r.created_at, r.id))
    return out


def row_hit(row: Row, score: float, relevance: float, store: str) -> RecallHit:
    """A row store's recall hit: the row as the wire shows it, its fused ``score`` and its
    calibrated ``relevance``; ``store`` names where it came from."""
    return RecallHit(id=row.id, type=row.type, content=row.content(), score=score,
                     relevance=round(relevance, 4), metadata=dict(row.metadata),
                     created_at=row.created_at, supporting=[], source_store=store,
                     user_id=row.user_id, source=row.source, confidence=row.confidence)


def revived(old: R, fresh: Row) -> R:
    """``old`` (keeping its adapter fields) overwritten by every field of ``fresh``."""
    return replace(old, **{name: getattr(fresh, name) for name in _ROW_FIELDS})


class RowOps(Generic[R]):
    """remember, forget, merge, expire, update, get, list and merged_into over a backend."""

    def __init__(self, backend: RowBackend[R], *, name: str, clock: Clock,
                 recall_tracking: bool) -> None:
        self._backend = backend
        self._name = name
        self._clock = clock
        self._recall_tracking = recall_tracking
        self._locks: dict[str, anyio.Lock] = {}

    def lock(self, agent_id: str) -> anyio.Lock:
        return self._locks.setdefault(agent_id, anyio.Lock())

    async def remember_many(self, reqs: Sequence[RememberRequest]) -> list[RememberResponse]:
        prepared = []
        for req in map(fold_request, reqs):
            stored = content_to_storage(req.type, req.content)
            prepared.append((req, stored))
        agents = sorted({req.agent_id for req in reqs})
        out: dict[int, RememberResponse] = {}
        async with AsyncExitStack() as stack:
            for agent_id in agents:  # one global order, so two callers never deadlock
                await stack.enter_async_context(self.lock(agent_id))
            inserts: list[Row] = []
            revives: list[tuple[R, R, bool]] = []
            for agent_id in agents:
                mine = [(i, r, s) for i, (r, s) in enumerate(prepared) if r.agent_id == agent_id]
                named = [r.id for _, r, _ in mine if r.id is not None]
                existing = await self._backend.fetch(agent_id, named) if named else {}
                written: dict[str, Row] = {}
                for i, req, stored in mine:
                    now = self._clock.now_ms()
                    old: Row | None = None
                    if req.id is not None:
                        old = written.get(req.id) or existing.get(req.id)
                    action = remember_action(old, req, stored, now)
                    if action is RememberAction.REPLAY:
                        assert old is not None
                        out[i] = self._ack(old.id, old.created_at)
                        continue
                    fresh = new_row(req, req.id or new_id(now), stored, now)
                    if action is RememberAction.REVIVE and req.id in existing:
                        revives.append((existing[req.id], revived(existing[req.id], fresh), True))
                    else:
                        inserts.append(fresh)
                    written[fresh.id] = fresh
                    out[i] = self._ack(fresh.id, now)
            if inserts:
                await self._backend.insert(inserts)
            if revives:
                await self._backend.replace(revives)
        return [out[i] for i in range(len(prepared))]

    def _ack(self, id: str, stored_at: int) -> RememberResponse:
        return RememberResponse(id=id, stored_at=stored_at, stores=[self._name],
                                pending_approval=False)

    async def forget(self, req: ForgetRequest) -> ForgetResponse:
        async with self.lock(req.agent_id):
            now = self._clock.now_ms()
            rows = (await self._backend.scan(req.agent_id) if req.ids is None
                    else await self._backend.fetch(req.agent_id, req.ids))
            hits = sorted((r for r in rows.values() if forget_selects(r, req)),
                          key=lambda r: (r.created_at, r.id))
            if req.hard_delete:
                await self._backend.erase(hits)
            elif hits:
                await self._backend.replace([(r, replace(r, deleted_at=now), False)
                                             for r in hits])
        ids = [r.id for r in hits]
        return ForgetResponse(forgotten_ids=ids, hard_delete=req.hard_delete,
                              stores=[StoreCount(store=self._name, count=len(ids))])

    async def merge(self, req: MergeRequest) -> MergeResponse:
        async with self.lock(req.agent_id):
            now = self._clock.now_ms()
            live = live_in_scope(await self._backend.scan(req.agent_id), req.user_id, now)
            plan = plan_row_merge(live, req, now)
            if plan.changes:
                await self._backend.replace(plan.changes)  # type: ignore[arg-type]
        return MergeResponse(canonical=plan.canonical_id, merged_count=len(plan.absorbed_ids),
                             strategy_used=req.strategy, stores=[self._name])

    async def expire(self, req: ExpireRequest) -> ExpireResponse:
        if needs_recall_tracking(req.policy) and not self._recall_tracking:
            raise CapabilityMissing(f"store {self._name!r} does not track recalls; "
                                    "no_recall_in_days cannot be evaluated")
        async with self.lock(req.agent_id):
            now = self._clock.now_ms()
            live = live_in_scope(await self._backend.scan(req.agent_id), req.user_id, now)
            matched = [r for r in live if policy_matches(req.policy, r.expiry_facts(), now)]
            marks = expire_marks(req.action, now)
            changed = [(r, replace(r, **marks), False) for r in matched
                       if any(getattr(r, k) != v for k, v in marks.items())]
            if changed:
                await self._backend.replace(changed)
        return ExpireResponse(matched_count=len(matched), action_taken=req.action,
                              stores=[self._name], matched_ids=[r.id for r in matched])

    async def update(self, req: UpdateRequest) -> MemoryRecord:
        async with self.lock(req.agent_id):
            now = self._clock.now_ms()
            row = (await self._backend.fetch(req.agent_id, [req.id])).get(req.id)
            if row is None or not row.in_scope(req.agent_id, req.user_id) or not row.live(now):
                raise NotFound(f"memory {req.id!r} not found")
            plan = plan_update(row, req, now)
            stored = await self._backend.replace(
                [(row, replace(row, **plan.changes), plan.stored is not None)])
        return stored[0].record(recall_stats=self._recall_tracking)

    async def get(self, agent_id: str, id: str, user_id: str | None = None) -> MemoryRecord | None:
        row = (await self._backend.fetch(agent_id, [id])).get(id)
        if row is None or not row.in_scope(agent_id, user_id):
            return None
        if not row.live(self._clock.now_ms()):
            return None
        return row.record(recall_stats=self._recall_tracking)

    async def list(self, query: ListQuery) -> builtins.list[MemoryRecord]:
        if query.agent_id is None:
            rows: Sequence[R] = await self._backend.scan_all()
        else:
            rows = builtins.list((await self._backend.scan(query.agent_id)).values())
        now = self._clock.now_ms()
        return [r.record(recall_stats=self._recall_tracking)
                for r in list_page(rows, query, now)]

    async def purge_expired(self, before_ms: int, limit: int = 500) -> builtins.list[MemoryRecord]:
        """Erase up to ``limit`` memories expired at or before ``before_ms``; each agent's
        rows are re-read under its lock, so one revived since the scan is never erased."""
        candidates = sorted((r for r in await self._backend.scan_all()
                             if r.expires_at is not None and r.expires_at <= before_ms),
                            key=lambda r: (r.expires_at or 0, r.id))[:limit]
        out: list[MemoryRecord] = []
        for agent_id in sorted({r.agent_id for r in candidates}):
            ids = [r.id for r in candidates if r.agent_id == agent_id]
            async with self.lock(agent_id):
                fresh = await self._backend.fetch(agent_id, ids)
                gone = [r for r in fresh.values()
                        if r.expires_at is not None and r.expires_at <= before_ms]
                await self._backend.erase(gone)
            out.extend(r.record() for r in gone)
        return out

    async def merged_into(self, agent_id: str, id: str,
                          user_id: str | None = None) -> str | None:
        """The id that absorbed memory ``id`` in a merge, or ``None`` (also for another
        agent's or user's id: "not yours" reads like "not merged")."""
        row = (await self._backend.fetch(agent_id, [id])).get(id)
        if row is None or not row.in_scope(agent_id, user_id):
            return None
        return row.merged_into

    # --- portability (see memorywire.store.portable) ----------------------------------------

    async def export_rows(self, agent_id: str | None, after: Cursor | None,
                          limit: int) -> builtins.list[Row]:
        rows: Sequence[R] = (await self._backend.scan_all() if agent_id is None
                             else builtins.list((await self._backend.scan(agent_id)).values()))
        return [Row(**{n: getattr(r, n) for n in _ROW_FIELDS})
                for r in page_of(rows, agent_id, after, limit)]

    async def import_rows(self, rows: Sequence[Row], on_conflict: OnConflict) -> ImportCounts:
        counts = ImportCounts()
        for agent_id in sorted({r.agent_id for r in rows}):
            mine = [r for r in rows if r.agent_id == agent_id]
            async with self.lock(agent_id):
                existing = await self._backend.fetch(agent_id, [r.id for r in mine])
                inserts: builtins.list[Row] = []
                replaces: builtins.list[tuple[R, R, bool]] = []
                for row in mine:
                    old = existing.get(row.id)
                    if not decide(old is not None, row, on_conflict):
                        counts.skipped += 1
                    elif old is None:
                        inserts.append(row)
                    else:
                        replaces.append((old, revived(old, row), True))
                if inserts:
                    await self._backend.insert(inserts)
                if replaces:
                    await self._backend.replace(replaces)
                counts.inserted += len(inserts)
                counts.replaced += len(replaces)
        return counts


class RowDelegate(Generic[R]):
    """The protocol methods a row store answers through its :class:`RowOps` (``_ops``).

    ``remember_many`` adds validity, supersession and conflicts (``store.timeline``) around
    the row writes; ``remember`` is a batch of one, so an adapter that batches overrides
    ``remember_many`` alone.
    """

    _ops: RowOps[R]

    async def remember(self, req: RememberRequest) -> RememberResponse:
        return (await self.remember_many([req]))[0]

    async def remember_many(self, reqs: Sequence[RememberRequest]
                            ) -> builtins.list[RememberResponse]:
        return await remember_in_time(cast("MemoryStore", self), reqs, self._ops.remember_many)

    async def forget(self, req: ForgetRequest) -> ForgetResponse:
        return await self._ops.forget(await expand_cascade(cast("MemoryStore", self), req))

    async def merge(self, req: MergeRequest) -> MergeResponse:
        return await self._ops.merge(req)

    async def expire(self, req: ExpireRequest) -> ExpireResponse:
        return await self._ops.expire(req)

    async def update(self, req: UpdateRequest) -> MemoryRecord:
        return await self._ops.update(req)

    async def get(self, agent_id: str, id: str, user_id: str | None = None) -> MemoryRecord | None:
        return await self._ops.get(agent_id, id, user_id)

    async def list(self, query: ListQuery) -> builtins.list[MemoryRecord]:
        return await self._ops.list(query)

    async def merged_into(self, agent_id: str, id: str, user_id: str | None = None) -> str | None:
        return await self._ops.merged_into(agent_id, id, user_id)

    async def export_rows(self, agent_id: str | None, after: Cursor | None,
                          limit: int) -> builtins.list[Row]:
        return await self._ops.export_rows(agent_id, after, limit)

    async def import_rows(self, rows: Sequence[Row], on_conflict: OnConflict) -> ImportCounts:
        return await self._ops.import_rows(rows, on_conflict)
