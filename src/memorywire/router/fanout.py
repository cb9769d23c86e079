"""How the router calls its children: each under its deadline, each failure isolated.

:class:`FanOut` is mixed into :class:`~memorywire.router.MemoryRouter`, which owns the state
declared below. ``_gather`` runs one call on every given child at once, each under its own
deadline (``deadlines[name]``, else the router's ``timeout``, or a shared one), and turns each
answer into an outcome: a value, or a ``StoreFailure`` naming the child (what becomes a
recall's ``stores_failed``). A child that raises anything, misses its deadline or answers
outside the v0 contract (``_BadAnswer``) is left out of that call and logged on
``memorywire.router``; the others go on.

The router's outbox is driven from here because every fan-out begins with it: due forgets a
child missed are re-sent before the call (``deliver_outbox``), and a forget a child misses now
is recorded for it afterwards (``_keep_missed``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import anyio

from memorywire.errors import (
    BackendUnavailable,
    ErrorDetail,
    MemorywireError,
    RateLimited,
    StoreCorrupt,
)
from memorywire.router.outbox import ForgetOutbox
from memorywire.store.base import MemoryStore
from memorywire.wire.models import ForgetRequest, StoreFailure

__all__ = ["FanOut"]

log = logging.getLogger("memorywire.router")

T = TypeVar("T")


class _BadAnswer(Exception):
    """A child answered, but not with something the v0 contract allows."""


@dataclass
class _Outcome(Generic[T]):
    store: MemoryStore
    value: T | None = None
    failure: StoreFailure | None = None
    error: MemorywireError | None = None
    bad: bool = False

    @property
    def ok(self) -> bool:
        return self.failure is None


class FanOut:
    """Calls on every child, under deadlines, over the state a ``MemoryRouter`` sets up."""

    _stores: list[MemoryStore]
    _timeout: float
    _deadlines: dict[str, float]
    outbox: ForgetOutbox | None

    async def _gather(
        self,
        stores: Sequence[MemoryStore],
        call: Callable[[MemoryStore], Awaitable[T]],
        what: str,
        deadline: float | None = None,
    ) -> list[_Outcome[T]]:
        if self.outbox is not None and self.outbox.due():
            await self.deliver_outbox()
        started = anyio.current_time()
        outcomes: list[_Outcome[T]] = [_Outcome(s) for s in stores]

        async def one(o: _Outcome[T]) -> None:
            name = o.store.name
            limit = self._deadlines.get(name, self._timeout)
            with anyio.CancelScope(deadline=started + limit if deadline is None
                                   else deadline) as scope:
                try:
                    o.value = await call(o.store)
                except MemorywireError as exc:
                    o.error = exc
                    o.failure = StoreFailure(store=name, error=f"{what}: {exc.message}",
                                             code=exc.code)
                except _BadAnswer as exc:
                    o.bad = True
                    o.failure = StoreFailure(store=name, error=f"{what}: {exc}",
                                             code=StoreCorrupt.code)
                except Exception as exc:  # a child broke its contract; isolate it, keep going
                    log.exception("store %r raised a non-memorywire error on %s", name, what)
                    o.failure = StoreFailure(store=name, error=f"{what}: {exc!r}",
                                             code=MemorywireError.code)
            if scope.cancelled_caught:
                o.failure = StoreFailure(
                    store=name, error=f"{what}: no answer within "
                    f"{limit if deadline is None else deadline - started:.3g}s",
                    code=BackendUnavailable.code,
                )
            if o.failure is not None:
                log.warning("store %r left out of %s: %s", name, what, o.failure.error)

        async with anyio.create_task_group() as tg:
            for o in outcomes:
                tg.start_soon(one, o)
        return outcomes

    async def deliver_outbox(self, *, force: bool = False) -> int:
        """Re-send the missed forgets that are due (``force``: all); how many were taken."""
        if self.outbox is None:
            return 0
        return await self.outbox.deliver({s.name: s for s in self._stores}, self._timeout,
                                         force=force)

    async def _keep_missed(self, outcomes: Sequence[_Outcome[Any]], req: ForgetRequest) -> None:
        if self.outbox is None:
            return
        for o in outcomes:
            # Down or silent (a refusal would be refused again): the child owes this forget.
            missed = o.failure is not None and not o.bad and (
                o.error is None or isinstance(o.error, BackendUnavailable | RateLimited))
            if missed:
                assert o.failure is not None
                await self.outbox.record(o.store.name, req, o.failure.error)

    @staticmethod
    def _all_failed(outcomes: Sequence[_Outcome[Any]], what: str) -> MemorywireError:
        errors = [o.error for o in outcomes]
        first = errors[0]
        if first is not None and all(type(e) is type(first) for e in errors):
            return first
        details = [ErrorDetail(f"/stores/{o.store.name}", o.failure.code, o.failure.error)
                   for o in outcomes if o.failure is not None]
        return BackendUnavailable(f"{what} failed on every store", details)

    @staticmethod
    def _failures(outcomes: Sequence[_Outcome[Any]]) -> list[StoreFailure]:
        return [o.failure for o in outcomes if o.failure is not None]
