"""Cognee's remember: writes that arrive together for one agent share one pipeline run.

Each Cognee index run costs about a second, so ``remember_many`` and concurrent ``remember``
calls queue per agent; whoever holds the agent's lock when it frees writes every queued
request in one ``add`` + index run. What each request does (insert, replay, revive) is
:func:`memorywire.core.records.remember_action`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, fields
from typing import Protocol

import anyio

from memorywire.core.clock import Clock
from memorywire.core.content import content_to_storage, fold_request
from memorywire.core.ids import new_id
from memorywire.core.records import RememberAction, new_row, remember_action
from memorywire.core.records import Row as CoreRow
from memorywire.store.cognee.row import Row
from memorywire.wire.models import RememberRequest, RememberResponse

__all__ = ["RememberBatcher"]


class _CogneeWrites(Protocol):
    """What grouped writes need of :class:`~memorywire.store.cognee.store.CogneeStore`
    (named structurally so the two modules do not import each other)."""

    _clock: Clock

    @property
    def name(self) -> str: ...

    async def _write(self, rows: Sequence[Row]) -> None: ...

    async def _scan(self, agent_id: str) -> dict[str, Row]: ...


@dataclass
class _Pending:
    """One ``remember`` waiting to be written in the next grouped pipeline run."""

    req: RememberRequest
    stored: str
    done: anyio.Event = field(default_factory=anyio.Event)
    result: RememberResponse | None = None
    error: BaseException | None = None


def _item(row: CoreRow, rev: int = 1) -> Row:
    return Row(data_id=uuid.uuid4(), rev=rev,
               **{f.name: getattr(row, f.name) for f in fields(CoreRow)})


class RememberBatcher:
    def __init__(self, store: _CogneeWrites, lock: Callable[[str], anyio.Lock]) -> None:
        self._store = store
        self._lock = lock
        self._queues: dict[str, list[_Pending]] = {}

    async def remember_many(self, reqs: Sequence[RememberRequest]) -> list[RememberResponse]:
        pending = []
        for req in map(fold_request, reqs):
            stored = content_to_storage(req.type, req.content)
            pending.append(_Pending(req, stored))
        for p in pending:
            self._queues.setdefault(p.req.agent_id, []).append(p)
        agents = sorted({p.req.agent_id for p in pending})
        async with AsyncExitStack() as stack:
            for agent_id in agents:  # one global order, so two callers never deadlock
                await stack.enter_async_context(self._lock(agent_id))
            batches = {a: b for a in agents if (b := self._queues.pop(a, []))}
            if batches:
                await self._flush(batches)
        for p in pending:
            await p.done.wait()
            if p.error is not None:
                raise p.error
        return [p.result for p in pending if p.result is not None]

    async def _flush(self, batches: dict[str, list[_Pending]]) -> None:
        everyone = [p for batch in batches.values() for p in batch]
        try:
            rows: list[Row] = []
            for agent_id, batch in batches.items():
                rows += await self._plan(agent_id, batch)
            await self._store._write(rows)
        except BaseException as exc:
            for p in everyone:
                if p.error is None:
                    p.error, p.result = exc, None
            raise
        finally:
            for p in everyone:
                p.done.set()

    async def _plan(self, agent_id: str, batch: list[_Pending]) -> list[Row]:
        """Items for one agent's waiting writes. A revived id is written as the next revision
        of its dead row (readers keep the highest revision and clean up the older one)."""
        existing = await self._store._scan(agent_id) if any(p.req.id for p in batch) else {}
        written: dict[str, Row] = {}
        for p in batch:
            req, now = p.req, self._store._clock.now_ms()
            old = (written.get(req.id) or existing.get(req.id)) if req.id else None
            try:
                action = remember_action(old, req, p.stored, now)
            except Exception as exc:
                p.error = exc
                continue
            if action is RememberAction.REPLAY:
                assert old is not None
                p.result = RememberResponse(id=old.id, stored_at=old.created_at,
                                            stores=[self._store.name], pending_approval=False)
                continue
            row = _item(new_row(req, req.id or new_id(now), p.stored, now),
                        rev=1 if old is None else old.rev + 1)
            written[row.id] = row
            p.result = RememberResponse(id=row.id, stored_at=now, stores=[self._store.name],
                                        pending_approval=False)
        return list(written.values())
