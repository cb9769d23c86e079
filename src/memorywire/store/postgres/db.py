"""The PostgreSQL database a store holds: the pool, migration on first use, transactions.

Driver errors become memorywire errors in :meth:`PgDb.tx` only.
"""

from __future__ import annotations

import json
import logging
import select
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import anyio.to_thread
import psycopg
import psycopg_pool
from psycopg.rows import dict_row

from memorywire.core.clock import Clock
from memorywire.embed.base import Embedder
from memorywire.errors import MemorywireError
from memorywire.store._common import resolve_embedder
from memorywire.store.postgres.migrations import BULK_KEY, migrate
from memorywire.store.postgres.sql import translate_error

__all__ = ["Conn", "PgDb", "check_idle_connection"]

Conn = psycopg.AsyncConnection[dict[str, Any]]

log = logging.getLogger(__name__)


class PgDb:
    """A lazily opened pool whose first connection migrates the schema."""

    def __init__(self, conninfo: str, embedder: Embedder | None, clock: Clock, name: str, *,
                 min_size: int, max_size: int, timeout: float, read_only: bool = False) -> None:
        """``read_only``: a hot standby's pool (reads only; the schema is the primary's, so
        nothing is migrated)."""
        self._embedder: Embedder | None = embedder
        self.read_only = read_only
        #: The server's pgvector version, once connected (0.8 brought iterative index scans).
        self.pgvector: tuple[int, ...] | None = None
        self.clock = clock
        self.name = name
        self.pool: psycopg_pool.AsyncConnectionPool[Conn] = psycopg_pool.AsyncConnectionPool(
            conninfo,
            connection_class=psycopg.AsyncConnection[dict[str, Any]],
            # prepare_threshold=None: no server-side prepared statements, which live in one
            # server session; behind PgBouncer in transaction mode the next transaction may
            # run on another session, where the statement does not exist (or another's does).
            kwargs={"row_factory": dict_row, "autocommit": False, "prepare_threshold": None},
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            open=False,
            check=check_idle_connection,
            name=f"memorywire-{name}",
        )
        self._ready = False
        self._lock = anyio.Lock()

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = resolve_embedder(None)
        return self._embedder

    async def embed(self, texts: Sequence[str]) -> Any:
        embedder = self.embedder
        return await anyio.to_thread.run_sync(embedder.embed, list(texts))

    @asynccontextmanager
    async def single(self) -> AsyncIterator[Conn]:
        """A connection in autocommit, for one statement (atomic on its own) or reads that
        each stand alone: the BEGIN and COMMIT of :meth:`tx` would be two round trips bought
        for nothing. ``conn.transaction()`` inside still opens a real one. Driver errors
        leave translated, as from :meth:`tx`."""
        await self._ensure_ready()
        try:
            async with self.pool.connection() as conn:
                await conn.set_autocommit(True)
                try:
                    yield conn
                finally:
                    # a broken connection refuses this; the pool discards it on return
                    with suppress(psycopg.Error):
                        await conn.set_autocommit(False)
        except MemorywireError:
            raise
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise translate_error(exc) from exc

    @asynccontextmanager
    async def tx(self) -> AsyncIterator[Conn]:
        """A connection inside one transaction; every driver error leaves here translated."""
        await self._ensure_ready()
        try:
            async with self.pool.connection() as conn, conn.transaction():
                yield conn
        except MemorywireError:
            raise
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise translate_error(exc) from exc

    async def _ensure_ready(self) -> None:
        if self._ready:
            return
        async with self._lock:
            if self._ready:
                return
            if self.read_only:
                try:
                    await self.pool.open()
                    async with self.pool.connection() as conn:
                        self.pgvector = await _pgvector(conn)
                        await conn.commit()
                except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
                    raise translate_error(exc) from exc
                self._ready = True
                return
            embedder = self.embedder
            try:
                await self.pool.open()
                async with self.pool.connection() as conn:
                    await migrate(conn, embedder, self.clock.now_ms())
                    cur = await conn.execute(
                        "SELECT value FROM memorywire_meta WHERE key = %s", (BULK_KEY,))
                    loading = await cur.fetchone()
                    self.pgvector = await _pgvector(conn)
                    await conn.commit()
            except MemorywireError:
                raise
            except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
                raise translate_error(exc) from exc
            if loading is not None:
                # Searches stay right (exact, without the vector index) but slow, and the
                # table holds only the rows loaded so far: say so once, where operators look.
                log.warning("%s is in the middle of a bulk load (%s): %s", self.name,
                            json.loads(loading["value"]).get("job"),
                            "searches scan every row until it finishes")
            self._ready = True

    async def close(self) -> None:
        await self.pool.close()


async def check_idle_connection(conn: psycopg.AsyncConnection[Any]) -> None:
    """The pool's check of a connection it hands out, without a round trip when it can.

    Between transactions the server has nothing to say to an idle connection; one that went
    away (restarted, terminated by an administrator, dropped by PgBouncer) has sent its
    goodbye or closed the socket, and either makes the socket readable. So a quiet socket on
    a connection the driver holds as open and idle passes; anything else gets psycopg's own
    check (an empty query), which the pool acts on as before: a failure discards the
    connection and hands out another. A peer gone without a word (a host lost, a network
    cut) stays unnoticed until the transaction's first statement, as it did by the empty
    query, which waited on the same socket.
    """
    pgconn = conn.pgconn
    if (not conn.closed and not conn.broken
            and pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE):
        try:
            readable, _, _ = select.select([pgconn.socket], [], [], 0)
        except (OSError, ValueError, psycopg.Error):
            readable = [True]
        if not readable:
            return
    await psycopg_pool.AsyncConnectionPool.check_connection(conn)


async def _pgvector(conn: Conn) -> tuple[int, ...]:
    cur = await conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    row = await cur.fetchone()
    if row is None:
        return ()
    return tuple(int(p) for p in str(row["extversion"]).split(".") if p.isdigit())
