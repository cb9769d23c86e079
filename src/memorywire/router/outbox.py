"""The router's durable outbox: a forget a child missed is kept until that child acknowledges.

A router answers a forget as soon as one child has done it, and names the children that
failed or missed the deadline. Without more, a child that was down keeps the memory, and
answers recall with it once it is back. So each missed forget (as sent: cascades already
expanded into ids) is written, per child, to a small SQLite file before the router answers,
and re-sent to that child until it succeeds:

* at the start of every router call, for the entries that are due (a failed delivery waits
  1 s, then twice as long each time, at most 5 minutes, so a child that is still down costs
  one deadline per wait, not one per call);
* by the server's periodic sweep (``serve``), so a quiet server catches up too;
* at once, whatever the wait, before a remember that names an id a pending forget holds, so
  an older forget can never delete a newer memory that reuses its id.

A filter forget is replayed as a filter: it removes what matches when it is delivered.
The file survives restarts; an entry is deleted only after the child answered the forget.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio

from memorywire.core.clock import Clock, SystemClock
from memorywire.errors import MemorywireError
from memorywire.store.base import MemoryStore
from memorywire.wire.models import ForgetRequest

__all__ = ["ForgetOutbox", "OutboxEntry"]

_SCHEMA = """CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    child TEXT NOT NULL,
    request TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER NOT NULL,
    last_error TEXT)"""
_FIRST_WAIT_MS = 1_000
_MAX_WAIT_MS = 300_000


@dataclass
class OutboxEntry:
    seq: int
    child: str
    request: ForgetRequest
    created_at: int
    attempts: int
    next_at: int
    last_error: str | None


class ForgetOutbox:
    """Missed forgets per child, in a SQLite file (``":memory:"`` for tests only)."""

    def __init__(self, path: str | Path, *, clock: Clock | None = None) -> None:
        self.path = str(path)
        self._clock: Clock = clock or SystemClock()
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute(_SCHEMA)
        self._lock = anyio.Lock()
        self._entries = self._load()

    def _load(self) -> list[OutboxEntry]:
        rows = self._db.execute("SELECT seq, child, request, created_at, attempts, next_at, "
                                "last_error FROM outbox ORDER BY seq").fetchall()
        return [OutboxEntry(r[0], r[1], ForgetRequest.model_validate(json.loads(r[2])), r[3],
                            r[4], r[5], r[6]) for r in rows]

    def entries(self, child: str | None = None) -> list[OutboxEntry]:
        return [e for e in self._entries if child is None or e.child == child]

    def due(self) -> bool:
        now = self._clock.now_ms()
        return any(e.next_at <= now for e in self._entries)

    def holds(self, agent_id: str, memory_id: str) -> bool:
        """Whether a pending forget names ``memory_id`` of ``agent_id``."""
        return any(e.request.agent_id == agent_id and memory_id in (e.request.ids or ())
                   for e in self._entries)

    async def record(self, child: str, req: ForgetRequest, error: str) -> None:
        """Keep ``req`` for ``child``; durable (fsynced) when this returns."""
        now = self._clock.now_ms()
        doc = json.dumps(req.model_dump(mode="json", exclude_none=True), sort_keys=True)
        async with self._lock:
            seq = await anyio.to_thread.run_sync(lambda: self._db.execute(
                "INSERT INTO outbox (child, request, created_at, next_at, last_error) "
                "VALUES (?, ?, ?, ?, ?)", (child, doc, now, now + _FIRST_WAIT_MS, error),
            ).lastrowid)
            assert seq is not None
            self._entries.append(OutboxEntry(seq, child, req, now, 0, now + _FIRST_WAIT_MS,
                                             error))

    async def deliver(
        self, children: Mapping[str, MemoryStore], timeout: float, *, force: bool = False,
        agent_id: str | None = None, memory_id: str | None = None,
    ) -> int:
        """Re-send what is due (``force``: everything, or what names ``memory_id``);
        return how many entries were acknowledged. A child's entries go in order, and its
        first failure ends its round (the rest wait with it)."""
        acked = 0
        async with self._lock:
            now = self._clock.now_ms()
            stalled: set[str] = set()
            for e in list(self._entries):
                named = memory_id is not None and e.request.agent_id == agent_id \
                    and memory_id in (e.request.ids or ())
                if e.child in stalled or not (force or named or e.next_at <= now):
                    continue
                child = children.get(e.child)
                if child is None:  # no longer configured: kept for an operator to see
                    continue
                err = await self._send(child, e.request, timeout)
                if err is None:
                    await anyio.to_thread.run_sync(self._delete, e.seq)
                    self._entries.remove(e)
                    acked += 1
                    continue
                stalled.add(e.child)
                e.attempts += 1
                e.next_at = now + min(_MAX_WAIT_MS, _FIRST_WAIT_MS * 2 ** e.attempts)
                e.last_error = err
                await anyio.to_thread.run_sync(self._note_failure, e)
        return acked

    def _delete(self, seq: int) -> None:
        self._db.execute("DELETE FROM outbox WHERE seq = ?", (seq,))

    def _note_failure(self, e: OutboxEntry) -> None:
        self._db.execute(
            "UPDATE outbox SET attempts = ?, next_at = ?, last_error = ? WHERE seq = ?",
            (e.attempts, e.next_at, e.last_error, e.seq))

    @staticmethod
    async def _send(child: MemoryStore, req: ForgetRequest, timeout: float) -> str | None:
        try:
            with anyio.fail_after(timeout):
                await child.forget(req)
        except TimeoutError:
            return f"no answer within {timeout:g} s"
        except MemorywireError as exc:
            return f"{exc.code}: {exc.message}"
        except Exception as exc:  # a child's bug must not fail the caller's unrelated call
            return f"{type(exc).__name__}: {exc}"
        return None

    def close(self) -> None:
        self._db.close()
