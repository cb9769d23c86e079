"""Where a PostgresStore's reads go: hot standbys, with the process reading its own writes.

A store given replicas (``?replicas=host:port,...`` on its URL) sends recalls, lists and
neighbour lookups to a hot standby (streaming replication: the standby replays the primary's
WAL a little later) and everything else to the primary. So that a process never misses what
it wrote itself, each write through the store records the primary's WAL position after its
commit (``pg_current_wal_lsn()``), and a read first checks that the standby has replayed up
to the newest such position (``pg_last_wal_replay_lsn()``), polling for at most ``wait_s``;
a standby still behind then, or unreachable, leaves that read to the primary.

With the primary gone the standbys keep answering: reads that preferred the primary (a
``get``, which writes also use to check what they name) fall back to a standby, and for
``PRIMARY_RETRY_S`` after a failed attempt the primary is not tried again, so a read does
not wait out the pool's timeout each time. Writes fail with ``backend_unavailable``. Read
your writes holds per process: a client whose consecutive requests reach different API
processes may read from a standby that has not yet replayed a write another process made.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio

from memorywire.errors import BackendUnavailable, InvalidRequest
from memorywire.store.postgres.db import Conn, PgDb
from memorywire.store.postgres.url import is_libpq_key

__all__ = ["PRIMARY_RETRY_S", "REPLICA_KEYS", "ReadRouter", "split_replicas", "standby_db"]

log = logging.getLogger(__name__)

#: After the primary failed a read, how long reads go straight to a standby.
PRIMARY_RETRY_S = 5.0
#: Pause between two looks at a standby that has not replayed a write yet.
_POLL_S = 0.002


def _lsn(text: str) -> int:
    """A ``pg_lsn`` (``16/B374D848``) as a number, for comparing positions."""
    high, low = text.split("/")
    return (int(high, 16) << 32) | int(low, 16)


class ReadRouter:
    """Reads on a standby (or the primary, without one) with read-your-writes."""

    def __init__(self, primary: PgDb, replica: PgDb | None = None, wait_s: float = 1.0) -> None:
        self.primary = primary
        self.replica = replica
        self.wait_s = wait_s
        #: The newest WAL position this process's writes reached (0: none yet).
        self.written = 0
        self._replayed = 0
        self._primary_failed_at = float("-inf")
        #: How reads were served (benchmarks and tests read them).
        self.counts = {"replica": 0, "primary": 0, "primary_down": 0}

    async def wrote(self) -> None:
        """Record that a write committed: later reads wait until a standby replays it."""
        if self.replica is None:
            return
        async with self.primary.single() as conn:
            cur = await conn.execute("SELECT pg_current_wal_lsn()::text AS lsn")
            row = await cur.fetchone()
        if row is not None:
            self.written = max(self.written, _lsn(row["lsn"]))

    async def _caught_up(self) -> bool:
        """Whether the standby has replayed this process's writes (waiting up to wait_s)."""
        assert self.replica is not None
        if self._replayed >= self.written:
            return True
        deadline = time.monotonic() + self.wait_s
        while True:
            async with self.replica.single() as conn:
                cur = await conn.execute(
                    "SELECT coalesce(pg_last_wal_replay_lsn(), '0/0')::text AS lsn")
                row = await cur.fetchone()
            self._replayed = max(self._replayed, _lsn(row["lsn"]) if row else 0)
            if self._replayed >= self.written or time.monotonic() >= deadline:
                return self._replayed >= self.written
            await anyio.sleep(_POLL_S)

    def pgvector(self) -> tuple[int, ...] | None:
        """The oldest pgvector among the servers reads may reach (``None``: none known yet):
        a search setting must be one every server understands."""
        known = [db.pgvector for db in (self.primary, self.replica)
                 if db is not None and db.pgvector is not None]
        return min(known) if known else None

    def _primary_down(self) -> bool:
        return time.monotonic() - self._primary_failed_at < PRIMARY_RETRY_S

    @asynccontextmanager
    async def tx(self, *, prefer_primary: bool = False, single: bool = False
                 ) -> AsyncIterator[Conn]:
        """A read transaction: on a standby that has replayed this process's writes, else on
        the primary; ``prefer_primary`` reads on the primary while it answers. ``single``:
        the caller runs one statement, which needs no BEGIN and COMMIT (:meth:`PgDb.single`).
        """
        if self.replica is None:
            async with (self.primary.single() if single else self.primary.tx()) as only:
                yield only
            return
        use_primary = prefer_primary
        if not use_primary:
            try:
                use_primary = not await self._caught_up()
            except BackendUnavailable:
                use_primary = True  # the standby is down: the primary serves
        async with AsyncExitStack() as stack:
            conn: Conn | None = None
            if use_primary and not self._primary_down():
                try:
                    conn = await stack.enter_async_context(
                        self.primary.single() if single else self.primary.tx())
                    self.counts["primary"] += 1
                except BackendUnavailable as exc:
                    self._primary_failed_at = time.monotonic()
                    log.warning("primary unavailable, reading from a standby: %s", exc.message)
            if conn is None:
                if use_primary:
                    self.counts["primary_down"] += 1
                conn = await stack.enter_async_context(
                    self.replica.single() if single else self.replica.tx())
                self.counts["replica"] += 1
            yield conn

    async def close(self) -> None:
        if self.replica is not None:
            await self.replica.close()


#: Store URL keys of the standbys (libpq knows neither).
REPLICA_KEYS = ("replicas", "replica_wait_ms")


def split_replicas(url: str) -> tuple[str, str | None, float]:
    """``url`` less its replica keys, the standbys' URL (``None`` without ``replicas``) and
    how long a read waits for a standby to replay this process's writes (seconds).

    ``replicas=host:port,host:port`` names the standbys (libpq tries them in order); they
    serve the primary's database, user and password, and the primary URL's other libpq
    parameters. ``replica_wait_ms`` (default 1000) is refused without ``replicas``."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    found = {k: v for k, v in query if k in REPLICA_KEYS}
    rest = [(k, v) for k, v in query if k not in REPLICA_KEYS]
    base = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(rest), parts.fragment))
    hosts = found.get("replicas")
    if hosts is None:
        if "replica_wait_ms" in found:
            raise InvalidRequest("replica_wait_ms needs replicas=host:port[,host:port]")
        return url, None, 1.0
    try:
        wait_ms = float(found.get("replica_wait_ms", "1000"))
    except ValueError:
        raise InvalidRequest(f"replica_wait_ms must be a number of milliseconds, not "
                             f"{found['replica_wait_ms']!r}") from None
    if not 0 <= wait_ms <= 60_000:
        raise InvalidRequest("replica_wait_ms must be between 0 and 60000")
    listed = [h.strip() for h in hosts.split(",") if h.strip()]
    if not listed or any(not h.rpartition(":")[2].isdigit() for h in listed):
        raise InvalidRequest(f"replicas must be host:port[,host:port], not {hosts!r}")
    auth = parts.netloc.rpartition("@")[0]
    netloc = (auth + "@" if auth else "") + ",".join(listed)
    replica = urlunsplit((parts.scheme.split("+", 1)[0], netloc, parts.path,
                          urlencode([(k, v) for k, v in rest if is_libpq_key(k)]), ""))
    return base, replica, wait_ms / 1000


def standby_db(primary: PgDb, conninfo: str, *, max_size: int, timeout: float) -> PgDb:
    """The pool of the standbys named by ``conninfo``, sharing the primary's clock."""
    return PgDb(conninfo, None, primary.clock, f"{primary.name}-replica", min_size=1,
                max_size=max_size, timeout=timeout, read_only=True)
