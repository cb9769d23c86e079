"""The async boundary of the governance database: one thread owns every call to it.

SQLite (apsw) and psycopg calls block; made on the event loop they stall every other request
for the length of a commit (about 1.3 ms for one audit entry with a synchronous SQLite
journal). Here they run on one dedicated thread, in submission order, and the event loop only
awaits the result.

Audit entries submitted while the thread is busy are *grouped*: the thread takes every entry
waiting in line (up to :data:`MAX_GROUP`) and writes them in one transaction, so under load one
commit serves many requests. Grouping weakens nothing: the entries are chained one after the
other inside that transaction in submission order, and a caller that awaits :meth:`append`
resumes only after the transaction holding its entry committed, so an ``intent`` entry is
durable before the inner store acts. :meth:`post` is for records of reads (recall), which have
no effect to precede: it queues the entry and returns; a failure to write it is kept and makes
the next call fail (fail closed) unless the deployment chose to keep serving reads.

The short queue transitions of the request path (stage, begin/finish a commit, a remember's
"nothing staged under this id" check fused with its intent entry) join the same groups through
:meth:`grouped`: each runs in its own savepoint inside the group's transaction, so one that
raises undoes only itself and its caller gets the error, while the others commit together. Its
caller resumes after that commit, exactly as if it had committed alone; one commit (one fsync)
serves the whole group instead of one per call. Long or unusual work (verification slices,
checkpoints, tools) keeps :meth:`run`: a transaction of its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from memorywire.errors import BackendUnavailable, MemorywireError
from memorywire.governance.audit import AuditLog, PendingEntry
from memorywire.governance.chain import AuditEntry

__all__ = ["MAX_GROUP", "GovWorker"]

T = TypeVar("T")

#: The most audit entries written in one transaction.
MAX_GROUP = 256


@dataclass
class _Call:
    fn: Callable[[], Any]
    future: concurrent.futures.Future[Any]


@dataclass
class _Append:
    entry: PendingEntry
    future: concurrent.futures.Future[Any] | None  # None: posted, nobody waits


@dataclass
class _Grouped:
    fn: Callable[[], Any]
    future: concurrent.futures.Future[Any]


_Job = _Call | _Append | _Grouped | None


class GovWorker:
    """Runs governance-database work on one thread; see the module docstring."""

    def __init__(self, audit: AuditLog) -> None:
        self._audit = audit
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        #: The error of the newest group that could not be written, until one is.
        self.post_error: MemorywireError | None = None
        self.groups = 0
        self.grouped_entries = 0
        self.grouped_calls = 0
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="memorywire-governance",
                                        daemon=True)
        self._thread.start()

    # --- submitting ------------------------------------------------------------------------

    def _submit(self, job: _Call | _Append | _Grouped) -> None:
        if self._closed:
            raise MemorywireError("the governance database is closed")
        self._jobs.put(job)

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the worker and wait (for synchronous callers: scripts, tools)."""
        if threading.current_thread() is self._thread:
            return fn()
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._submit(_Call(fn, fut))
        return fut.result()

    async def run(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the worker; the event loop stays free meanwhile."""
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._submit(_Call(fn, fut))
        return await asyncio.wrap_future(fut)

    async def grouped(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` in a savepoint of the next group transaction; returns (or raises) once
        that transaction committed. For short queue reads and transitions (see the module)."""
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._submit(_Grouped(fn, fut))
        return await asyncio.wrap_future(fut)

    def submit_grouped(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """:meth:`grouped` for another worker thread, which waits on the future itself (a
        store's writing thread running governance's bracket: no event-loop hop)."""
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._submit(_Grouped(fn, fut))
        return fut

    def submit_append(self, entry: PendingEntry) -> concurrent.futures.Future[AuditEntry]:
        """:meth:`append` for another worker thread (see :meth:`submit_grouped`)."""
        fut: concurrent.futures.Future[AuditEntry] = concurrent.futures.Future()
        self._submit(_Append(entry, fut))
        return fut

    async def append(self, entry: PendingEntry) -> AuditEntry:
        """Write one entry (grouped with others waiting); returns once it is committed."""
        fut: concurrent.futures.Future[AuditEntry] = concurrent.futures.Future()
        self._submit(_Append(entry, fut))
        return await asyncio.wrap_future(fut)

    async def record_read(self, entry: PendingEntry, *, fail_closed: bool) -> None:
        """The record of a read: queued (:meth:`post`) while writes succeed. After a failed
        write it is awaited instead, and with ``fail_closed`` its failure refuses the read."""
        if self.post_error is None or not fail_closed:
            self.post(entry)
            return
        try:
            await self.append(entry)
        except MemorywireError as exc:
            kind = exc if isinstance(exc, BackendUnavailable) else BackendUnavailable("")
            raise type(kind)(
                f"read refused: its audit entry cannot be written ({exc.message}); this"
                " server fails closed (audit_failure='serve_reads' keeps reads working)"
            ) from exc

    def post(self, entry: PendingEntry) -> None:
        """Queue one entry without waiting for its commit (see the module docstring)."""
        self._submit(_Append(entry, None))

    def flush(self) -> None:
        """Wait until everything submitted so far is done."""
        self.call(lambda: None)

    def close(self) -> None:
        """Finish the queued work, then stop the thread (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._jobs.put(None)
        self._thread.join()

    # --- the thread ------------------------------------------------------------------------

    def _loop(self) -> None:
        carry: _Job = None
        while True:
            job = carry if carry is not None else self._jobs.get()
            carry = None
            if job is None:
                return
            if isinstance(job, _Call):
                self._run_call(job)
                continue
            group: list[_Append | _Grouped] = [job]
            while len(group) < MAX_GROUP:
                try:
                    nxt = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if isinstance(nxt, _Append | _Grouped):
                    group.append(nxt)
                else:
                    carry = nxt
                    if carry is None:
                        self._write_group(group)
                        return
                    break
            self._write_group(group)

    @staticmethod
    def _run_call(job: _Call) -> None:
        if not job.future.set_running_or_notify_cancel():
            return
        try:
            job.future.set_result(job.fn())
        except BaseException as exc:  # handed to the awaiting caller, which re-raises it
            job.future.set_exception(exc)

    def _write_group(self, group: list[_Append | _Grouped]) -> None:
        live = [j for j in group if j.future is None or j.future.set_running_or_notify_cancel()]
        if not live:
            return
        db = self._audit.db
        outcomes: list[tuple[bool, Any]] = []
        try:
            with db.transaction():
                for j in live:
                    if isinstance(j, _Append):
                        outcomes.append((True, self._audit.write(j.entry)))
                        continue
                    try:
                        with db.transaction():  # a savepoint: a failure undoes this job only
                            outcomes.append((True, j.fn()))
                    except Exception as exc:
                        if not db.in_transaction():
                            raise  # the database dropped the whole group: all of it failed
                        outcomes.append((False, exc))
        except BaseException as exc:
            err = exc if isinstance(exc, MemorywireError) else MemorywireError(
                f"audit write failed: {type(exc).__name__}: {exc}")
            # Remembered for reads either way: after a failed write, the next read's record
            # is awaited (fail closed) instead of queued, until a write succeeds again.
            self.post_error = err
            for j in live:
                if j.future is not None:
                    j.future.set_exception(err)
            return
        self.groups += 1
        self.grouped_entries += sum(isinstance(j, _Append) for j in live)
        self.grouped_calls += sum(isinstance(j, _Grouped) for j in live)
        self.post_error = None
        for j, (ok, value) in zip(live, outcomes, strict=True):
            if j.future is None:
                continue
            if ok:
                j.future.set_result(value)
            else:
                j.future.set_exception(value)
