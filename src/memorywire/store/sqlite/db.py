"""The SQLite database a store holds: connection, transactions, scope versions, vector cache.

One connection per store, guarded by a lock; blocking work runs in a worker thread. Every
operation is one ``BEGIN IMMEDIATE`` transaction. Each write to an agent's live set bumps the
agent's version in ``scopes`` inside its transaction; a reader compares versions inside its
own transaction and reloads the cached matrix on any difference, which makes writes by other
processes visible at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
import apsw
import numpy as np

from memorywire.core.clock import Clock
from memorywire.core.content import content_from_storage
from memorywire.embed.base import Embedder, Vectors
from memorywire.errors import (
    BackendUnavailable,
    InvalidRequest,
    MemorywireError,
    NotFound,
    StoreCorrupt,
)
from memorywire.store._vector_cache import CachedRow, ScopeCache, ScopeIndex
from memorywire.store.bracket import WriteBracket, run_bracketed
from memorywire.store.sqlite.contexts import CONTEXT_SQL, metadata_of
from memorywire.store.sqlite.recalls import STATS_SQL
from memorywire.store.sqlite.schema import agent_number, open_database, vid_range
from memorywire.wire.models import (
    MemoryRecord,
    MemoryType,
)

__all__ = [
    "COLS",
    "INLINE_ROWS",
    "IN_JSON",
    "VISIBLE",
    "SqliteDb",
    "checked_vectors",
    "record_of",
    "scope_sql",
]

_T = TypeVar("_T")
_P = TypeVar("_P")

#: A record's columns; the recall statistics and the last, the ``metadata.context`` text,
#: are kept beside the row (``recalls``, ``contexts``).
COLS = (
    "id, agent_id, user_id, type, content, metadata, confidence, source, created_at, "
    f"updated_at, expires_at, {STATS_SQL}, {CONTEXT_SQL}"
)
VISIBLE = (
    "deleted_at IS NULL AND archived_at IS NULL AND (expires_at IS NULL OR expires_at > ?)"
)
IN_JSON = "(SELECT value FROM json_each(?))"
#: A recall given its vector runs on the caller's thread when the agent's cached scope holds
#: at most this many rows (see :meth:`SqliteDb.call_read`).
INLINE_ROWS = 1000

def record_of(row: Sequence[Any]) -> MemoryRecord:
    mtype = MemoryType(row[3])
    return MemoryRecord.model_validate({
        "id": row[0], "agent_id": row[1], "user_id": row[2], "type": mtype,
        "content": content_from_storage(mtype, row[4]), "metadata": metadata_of(row[5], row[13]),
        "confidence": row[6], "source": row[7], "created_at": row[8], "updated_at": row[9],
        "expires_at": row[10], "last_recalled_at": row[11], "recall_count": row[12],
    })


def checked_vectors(vectors: Any, n: int, dim: int) -> Vectors:
    out = np.ascontiguousarray(vectors, dtype=np.float32)
    if out.shape != (n, dim):
        raise InvalidRequest(f"vectors must have shape ({n}, {dim}), not {out.shape}")
    if not np.isfinite(out).all():
        raise InvalidRequest("vectors must be finite")
    return out


def scope_sql(agent_id: str, user_id: str | None) -> tuple[str, list[Any]]:
    if user_id is None:
        return "agent_id = ?", [agent_id]
    return "agent_id = ? AND user_id = ?", [agent_id, user_id]


class SqliteDb:
    """Connection, transactions, scope versions and the per-agent vector cache.

    The store and its operation modules (``writes``, ``maintenance``) each hold this object;
    none inherits from another.
    """

    def __init__(self, path: str | Path, embedder: Embedder, clock: Clock, name: str, *,
                 busy_timeout_ms: int, cache_mb: float, reads_need_file: bool = False) -> None:
        self.path = str(path)
        self.embedder = embedder
        self.clock = clock
        self.name = name
        #: Re-entrant: :meth:`call_read` holds it around a transaction that takes it again.
        self._lock = threading.RLock()
        self.caches = ScopeCache(int(cache_mb * 2**20))
        self._on_commit: list[Callable[[], None]] = []
        #: Durable transactions begun on this connection (every write is one): with
        #: ``PRAGMA data_version`` (other connections' commits), :meth:`content_stamp`.
        self._writes = 0
        self._busy_timeout_ms = busy_timeout_ms
        self._conn: apsw.Connection | None = None
        #: Whether a read of a store file that does not exist is an error naming the path (a
        #: one-shot command, where a mistyped path is the likely cause) rather than an empty
        #: answer (an application or server whose first call may well be a recall). Either
        #: way a read creates nothing.
        self.reads_need_file = reads_need_file
        # A file that does not exist yet is created by the first write, never by a read: a
        # mistyped path must not become a new empty store that answers nothing.
        self.unborn = self.path != ":memory:" and not Path(self.path).exists()
        if not self.unborn:
            self._conn = open_database(self.path, self.embedder, busy_timeout_ms)

    def missing(self) -> bool:
        """For a read: True when there is no file yet and the answer is "nothing"."""
        if not self.unborn:
            return False
        if Path(self.path).exists():
            # Another process (the CLI committing an approved write, a second server) created
            # it since: open it now, or this process would answer "nothing" for ever.
            with self._lock:
                if self.unborn:
                    self._open_unborn()
            return False
        if self.reads_need_file:
            raise NotFound(
                f"no memorywire store at {Path(self.path).absolute()}: nothing has been "
                "written there yet (a write creates it; check the path)"
            )
        return True

    def _open_unborn(self) -> None:
        """Under the lock: create the store file (and its folders) on the first write."""
        parent = Path(self.path).parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BackendUnavailable(f"cannot create folder {parent}: {exc.strerror}") from exc
        self._conn = open_database(self.path, self.embedder, self._busy_timeout_ms)
        self.unborn = False

    @contextmanager
    def tx(self, *, durable: bool = True) -> Iterator[Any]:
        """Hold the lock and one IMMEDIATE transaction; commit on success.

        Callbacks queued in ``self._on_commit`` run after COMMIT, still under the lock, so the
        in-process cache only ever reflects committed data. ``durable=False`` commits without
        the WAL fsync (``synchronous=NORMAL``): for a recall, whose only write is recall
        statistics. Such a commit is still atomic and survives a crash of the process; only
        a power loss before the next durable commit or checkpoint can drop it. It saves
        0.5-3 ms per recall on a local SSD.
        """
        with self._lock:
            if self.unborn:
                self._open_unborn()
            conn = self._conn
            if conn is None:
                raise BackendUnavailable(f"store {self.name!r} is closed")
            self._on_commit = []
            if durable:
                self._writes += 1
            if not durable:
                conn.execute("PRAGMA synchronous=NORMAL")
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                    conn.execute("COMMIT")
                except BaseException:
                    self.caches.clear()
                    if not conn.getautocommit():
                        conn.execute("ROLLBACK")
                    raise
            finally:
                if not durable:
                    conn.execute("PRAGMA synchronous=FULL")
            for callback in self._on_commit:
                callback()

    def content_stamp(self, conn: Any) -> tuple[int, int]:
        """Inside a transaction: a value that changes whenever the file's content may have
        changed since it was last read (a durable transaction of this connection, or a
        commit by any other). A ``durable=False`` transaction must not change memories: it
        writes recall statistics only (or nothing)."""
        return self._writes, int(conn.execute("PRAGMA data_version").fetchone()[0])

    def guarded(self, fn: Callable[[], _T]) -> _T:
        """``fn()`` with SQLite's errors as memorywire's (on the worker thread)."""
        try:
            return fn()
        except MemorywireError:
            raise
        except apsw.BusyError as exc:
            raise BackendUnavailable(f"database is busy: {exc}", retry_after=0.1) from exc
        except (apsw.CorruptError, apsw.NotADBError) as exc:
            raise StoreCorrupt(f"{self.path} is corrupt: {exc}") from exc
        except apsw.Error as exc:
            raise BackendUnavailable(f"SQLite failed: {exc}") from exc

    async def call(self, fn: Callable[[], _T]) -> _T:
        return await anyio.to_thread.run_sync(lambda: self.guarded(fn))

    async def call_read(self, agent_id: str, fn: Callable[[], _T]) -> _T:
        """``fn()`` (a read of ``agent_id``'s scope that needs no model), on the caller's
        thread when that is cheap and cannot wait, else on a worker thread as :meth:`call`.

        A worker-thread hop (waking the thread, then the event loop) is a visible share of a
        small scope's recall (docs/benchmarks.md, "speed31"). Inline runs only when the
        store's lock is free, the agent's scope is cached with at most ``INLINE_ROWS`` rows
        (so the search is short), and the transaction starts without waiting: the busy
        timeout is 0 for it, and another process holding the write lock sends the call to a
        worker thread, where it waits as any call does. What an inline call can still cost
        the event loop is a WAL auto-checkpoint at its commit, as rare as for any commit.
        """
        conn = self._conn
        if conn is not None and not self.unborn and self._lock.acquire(blocking=False):
            try:
                index = self.caches.peek(agent_id)
                if index is not None and index.n <= INLINE_ROWS:
                    conn.setbusytimeout(0)
                    try:
                        return self.guarded(fn)
                    except BackendUnavailable as exc:
                        if not isinstance(exc.__cause__, apsw.BusyError):
                            raise
                    finally:
                        conn.setbusytimeout(self._busy_timeout_ms)
            finally:
                self._lock.release()
        return await self.call(fn)

    async def call_bracketed(self, bracket: WriteBracket | None, prepare: Callable[[], _P],
                             write: Callable[[_P], _T]) -> _T:
        """``write(prepare())`` in one worker-thread call, inside governance's ``bracket``
        (see :mod:`memorywire.store.bracket`); each part's SQLite errors become memorywire's
        before the bracket sees them, as they would through :meth:`call`."""
        return await anyio.to_thread.run_sync(lambda: run_bracketed(
            bracket, lambda: self.guarded(prepare), lambda p: self.guarded(lambda: write(p))))

    def version(self, conn: Any, agent_id: str) -> int:
        row = conn.execute("SELECT version FROM scopes WHERE agent_id = ?", (agent_id,)).fetchone()
        return int(row[0]) if row else 0

    def bump(self, conn: Any, agent_id: str) -> int:
        """Record a change to the agent's live set; drops our cache of it unless appended to."""
        self.caches.pop(agent_id)
        return int(conn.execute(
            "INSERT INTO scopes VALUES(?, 1) "
            "ON CONFLICT(agent_id) DO UPDATE SET version = version + 1 RETURNING version",
            (agent_id,),
        ).fetchone()[0])

    def append_on_commit(self, conn: Any, agent_id: str,
                          rows: list[CachedRow]) -> None:
        """Bump the scope and, after commit, extend our cache if it was current."""
        cached = self.caches.get(agent_id)
        before = self.version(conn, agent_id)
        after = self.bump(conn, agent_id)
        if cached is None or cached.version != before:
            return

        def extend() -> None:
            cached.extend(rows)
            cached.version = after
            self.caches.put(agent_id, cached)

        self._on_commit.append(extend)

    def index(self, conn: Any, agent_id: str) -> ScopeIndex:
        version = self.version(conn, agent_id)
        cached = self.caches.get(agent_id)
        if cached is not None and cached.version == version:
            return cached
        dim = self.embedder.dim
        # Both reads are clustered by agent: a covering index for the rows, one key range of
        # the vectors table for the embeddings, so a cold load reads sequential pages rather
        # than two random pages per memory.
        rows = conn.execute(
            "SELECT rid, id, user_id, type, created_at, expires_at, demoted FROM memories "
            "WHERE agent_id = ? AND deleted_at IS NULL AND archived_at IS NULL ORDER BY rid",
            (agent_id,),
        ).fetchall()
        no = agent_number(conn, agent_id, create=False)
        embeddings: dict[int, bytes] = {}
        if no is not None:
            lo, hi = vid_range(no)
            embeddings = dict(conn.execute(
                "SELECT vid - ?, embedding FROM vectors WHERE vid >= ? AND vid < ?",
                (lo, lo, hi)).fetchall())
        try:
            blobs = b"".join([embeddings[r[0]] for r in rows])
        except KeyError as exc:
            raise StoreCorrupt(f"memory row {exc} in {self.path} has no vector") from None
        if len(blobs) != len(rows) * dim * 4:
            raise StoreCorrupt(f"vectors in {self.path} do not have dimension {dim}")
        index = ScopeIndex.from_rows(dim, version, rows, blobs)
        self.caches.loads += 1
        self.caches.put(agent_id, index)
        return index

    def checkpoint(self) -> None:
        """Fold the WAL into the database and truncate it, so deleted bytes leave the WAL."""
        with self._lock:
            if self._conn is not None:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    async def close(self) -> None:
        def run() -> None:
            with self._lock:
                self.unborn = False
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                    self.caches.clear()

        await anyio.to_thread.run_sync(run)

