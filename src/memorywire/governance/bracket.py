"""The audit bracket around one inner-store write: ``intent``, the write, ``done`` or ``failed``.

An inner-store mutation cannot join the governance database's transaction, so it is bracketed:
an ``intent`` entry (naming the memory ids) is durable before the store acts, and a ``done``
entry (or ``failed``, with the error's code) is durable before the caller gets an answer. An
``intent`` without a closing entry is the detectable mark of a crash in between.
:class:`AuditBracket` is that rule, written once; every governed write (remember, forget,
merge, expire, update) describes its entries to one and hands it the write.

It runs two ways, with the same entries in the same order:

* :meth:`AuditBracket.run` awaits each entry from the event loop around ``await write()``;
* :meth:`AuditBracket.run_on_thread` hands the bracket to a store that declares
  ``honours_write_bracket`` (:mod:`memorywire.store.bracket`): the store's writing thread calls
  :meth:`~AuditBracket.begin`, :meth:`~AuditBracket.ready` and :meth:`~AuditBracket.done` or
  :meth:`~AuditBracket.failed`, which submit to the governance worker and wait on
  ``concurrent.futures`` futures, so the event loop takes no part between them.

Entries are prepared on the caller's side where they can be (the actor is the request's);
the worker groups them with everyone else's, and a caller resumes only after the group
holding its entry committed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from memorywire.errors import MemorywireError
from memorywire.governance.actor import current_actor
from memorywire.governance.audit import AuditLog, PendingEntry
from memorywire.governance.worker import GovWorker
from memorywire.store.bracket import bracketing

__all__ = ["AuditBracket", "Outcome", "Settle"]

R = TypeVar("R")
T = TypeVar("T")

#: What a ``done`` entry records of a write: the memory ids it names and its details.
Outcome = tuple[Sequence[str], Mapping[str, Any]]
#: A job for the governance worker that finishes a write in the governance database and
#: says what ``done`` records; it runs in the same savepoint as the ``done`` entry.
Settle = Callable[[], Outcome]


class AuditBracket(Generic[R]):
    """One governed write's bracket; ``R`` is what the write hands to ``done``.

    ``ids`` and ``details`` are what ``intent`` records (``failed`` names the same ids).
    ``done`` turns the write's result into the ``done`` entry's ids and details (by default
    the intent's); ``settle`` instead returns a worker job that does so in the governance
    database, atomically with the entry (a forget closing the pending remembers it names).
    ``guard`` runs on the worker just before the intent, in its savepoint: raising there
    refuses the write with nothing recorded (a remember of an id awaiting approval).
    """

    def __init__(
        self,
        audit: AuditLog,
        worker: GovWorker,
        action: str,
        agent_id: str,
        ids: Sequence[str],
        details: Mapping[str, Any],
        *,
        done: Callable[[R], Outcome] | None = None,
        settle: Callable[[R], Settle] | None = None,
        guard: Callable[[], None] | None = None,
    ) -> None:
        if done is not None and settle is not None:
            raise ValueError("a bracket takes done or settle, not both")
        self._audit = audit
        self._w = worker
        self._actor = current_actor()
        self._action = action
        self._agent_id = agent_id
        self._ids = list(ids)
        self._details = dict(details)
        self._done = done
        self._settle = settle
        self._guard = guard
        self._intent_entry = self._entry("intent", self._ids, self._details)
        self._intent: concurrent.futures.Future[Any] | None = None
        #: The ids the ``done`` entry names, once the write succeeded.
        self.recorded: list[str] = []

    # --- the event loop's face ------------------------------------------------------------

    async def run(self, write: Callable[[], Awaitable[R]]) -> R:
        """``intent``, ``await write()``, then ``done`` (or ``failed`` and the error)."""
        await self.open()
        try:
            result = await write()
        except MemorywireError as exc:
            await asyncio.wrap_future(self._submit_failed(exc))
            raise
        await asyncio.wrap_future(self._submit_done(result))
        return result

    async def run_on_thread(self, write: Callable[[], Awaitable[T]], store: str) -> T:
        """``await write()`` on a store that runs this bracket on its writing thread.

        A store that refuses before its thread runs never began the bracket: its ``intent``
        and ``failed`` are written here, as :meth:`run` writes them. A store that declared the
        bracket and wrote without it is a bug, refused rather than left unaudited.
        """
        try:
            with bracketing(self):
                result = await write()
        except MemorywireError as exc:
            if self.begun:
                raise
            await self.open()
            await asyncio.wrap_future(self._submit_failed(exc))
            raise
        if not self.begun:
            raise MemorywireError(f"store {store!r} wrote without its audit bracket")
        return result

    async def open(self) -> None:
        """Write ``intent`` (after the guard) and wait until it is durable."""
        await asyncio.wrap_future(self._submit_intent())

    # --- the store thread's face (``memorywire.store.bracket.WriteBracket``) ---------------

    @property
    def begun(self) -> bool:
        """Whether the store's thread submitted the intent (it reached the write)."""
        return self._intent is not None

    def begin(self) -> None:
        self._intent = self._submit_intent()

    def ready(self) -> None:
        assert self._intent is not None, "begin() first"
        self._intent.result()

    def done(self, result: R) -> None:
        self._submit_done(result).result()

    def failed(self, exc: MemorywireError) -> None:
        self._submit_failed(exc).result()

    # --- the entries, each submitted to the worker in one place ----------------------------

    def _submit_intent(self) -> concurrent.futures.Future[Any]:
        if self._guard is None:
            return self._w.submit_append(self._intent_entry)
        guard, entry = self._guard, self._intent_entry

        def guarded() -> None:
            guard()
            self._audit.write(entry)

        return self._w.submit_grouped(guarded)

    def _submit_done(self, result: R) -> concurrent.futures.Future[Any]:
        if self._settle is None:
            ids, details = (self._ids, self._details) if self._done is None \
                else self._done(result)
            self.recorded = list(ids)
            return self._w.submit_append(self._entry("done", ids, details))
        job = self._settle(result)

        def settled() -> None:
            ids, details = job()
            self._audit.write(self._entry("done", ids, details))
            self.recorded = list(ids)

        return self._w.submit_grouped(settled)

    def _submit_failed(self, exc: MemorywireError) -> concurrent.futures.Future[Any]:
        return self._w.submit_append(self._entry("failed", self._ids, {"error": exc.code}))

    def _entry(self, phase: str, ids: Sequence[str], details: Mapping[str, Any]) -> PendingEntry:
        return self._audit.prepare(actor=self._actor, action=self._action,
                                   agent_id=self._agent_id, memory_ids=ids,
                                   details={"phase": phase, **details})
