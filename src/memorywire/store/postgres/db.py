"""The PostgreSQL database a store holds: the pool, migration on first use, transactions.

Driver errors become memorywire errors in :meth:`PgDb.tx` only.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
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

__all__ = ["Conn", "PgDb"]

Conn = psycopg.AsyncConnection[dict[str, Any]]

log = logging.getLogger(__name__)


class PgDb:
    """A lazily opened pool whose first connection migrates the schema."""

    def __init__(self, conninfo: str, embedder: Embedder | None, clock: Clock, name: str, *,
                 min_size: int, max_size: int, timeout: float) -> None:
        self._embedder: Embedder | None = embedder
        self.clock = clock
        self.name = name
        self.pool: psycopg_pool.AsyncConnectionPool[Conn] = psycopg_pool.AsyncConnectionPool(
            conninfo,
            connection_class=psycopg.AsyncConnection[dict[str, Any]],
            kwargs={"row_factory": dict_row, "autocommit": False},
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            open=False,
            check=psycopg_pool.AsyncConnectionPool.check_connection,
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
            embedder = self.embedder
            try:
                await self.pool.open()
                async with self.pool.connection() as conn:
                    await migrate(conn, embedder, self.clock.now_ms())
                    cur = await conn.execute(
                        "SELECT value FROM memorywire_meta WHERE key = %s", (BULK_KEY,))
                    loading = await cur.fetchone()
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
