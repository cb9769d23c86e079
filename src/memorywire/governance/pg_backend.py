"""The governance database on PostgreSQL, shared by every server behind a load balancer.

Tables live in their own schema (``memorywire_governance``), so they sit beside a
:class:`~memorywire.store.postgres.PostgresStore` in one database without clashing. Each
outermost write transaction first takes one transaction-level advisory lock: governance writes
are read-then-write (chain head, queue row), and serialising them is what gives one gap-free
chain and single approvals across processes, as ``BEGIN IMMEDIATE`` does on SQLite. A plpgsql
trigger refuses ``UPDATE``, ``DELETE`` and ``TRUNCATE`` on ``audit_log``.

The connection keeps no state in its server session, so it may go through PgBouncer in
transaction mode, where each transaction runs on whichever server session is free: every
table name is schema-qualified per statement (no ``SET search_path``), both advisory locks
are transaction-level, and psycopg never prepares a statement server-side.

The connection is synchronous on purpose: governance transactions never await inside, and
one connection per process keeps the lock holder's work short and ordered.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg

from memorywire.errors import BackendUnavailable, MemorywireError, StorageFull

__all__ = ["LOCK_KEY", "SCHEMA", "TABLES", "PgGovDb"]

SCHEMA = "memorywire_governance"

#: ``pg_advisory_xact_lock`` keys: "mw" in ASCII, then "gv" (writes) and "gs" (schema setup).
LOCK_KEY = 0x6D77_6776
_SETUP_KEY = 0x6D77_6773

Row = tuple[Any, ...]

# Column names and meanings match the SQLite schemas in audit.py and queue.py.
_DDL = [
    f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}",
    f"""CREATE TABLE {SCHEMA}.audit_log(
        seq bigint PRIMARY KEY,
        ts bigint NOT NULL,
        actor text NOT NULL,
        action text NOT NULL,
        agent_id text,
        memory_ids text NOT NULL,
        details text NOT NULL,
        prev_hash text NOT NULL,
        hash text NOT NULL)""",
    f"CREATE INDEX audit_log_agent ON {SCHEMA}.audit_log(agent_id, seq)",
    f"""CREATE FUNCTION {SCHEMA}.audit_log_append_only() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'audit_log is append-only' USING ERRCODE = 'insufficient_privilege';
        END $$""",
    f"""CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON {SCHEMA}.audit_log
        FOR EACH ROW EXECUTE FUNCTION {SCHEMA}.audit_log_append_only()""",
    f"""CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON {SCHEMA}.audit_log
        FOR EACH ROW EXECUTE FUNCTION {SCHEMA}.audit_log_append_only()""",
    f"""CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON {SCHEMA}.audit_log
        FOR EACH STATEMENT EXECUTE FUNCTION {SCHEMA}.audit_log_append_only()""",
    f"""CREATE TABLE {SCHEMA}.audit_checkpoints(
        seq bigint PRIMARY KEY,
        hash text NOT NULL,
        signature text NOT NULL,
        public_key text NOT NULL,
        ts bigint NOT NULL)""",
    # Created last: its presence means the whole (transactional) setup ran.
    f"""CREATE TABLE {SCHEMA}.approvals(
        id text PRIMARY KEY,
        operation text NOT NULL,
        agent_id text NOT NULL,
        user_id text,
        request text NOT NULL,
        content_hash text NOT NULL,
        requested_by text NOT NULL,
        reasoning text,
        status text NOT NULL,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        reviewer text,
        reviewed_at bigint,
        reason text,
        reviewed_hash text,
        attempts integer NOT NULL DEFAULT 0,
        result text,
        memory_id text,
        requester_id text)""",
    f"CREATE INDEX approvals_status ON {SCHEMA}.approvals(status, agent_id, created_at)",
    f"CREATE INDEX approvals_memory ON {SCHEMA}.approvals(agent_id, memory_id, status)",
]

# Columns added after the first release, for databases created before them.
_ADDED = [
    f"ALTER TABLE {SCHEMA}.approvals ADD COLUMN IF NOT EXISTS memory_id text",
    f"ALTER TABLE {SCHEMA}.approvals ADD COLUMN IF NOT EXISTS requester_id text",
    f"CREATE INDEX IF NOT EXISTS approvals_memory ON {SCHEMA}.approvals"
    "(agent_id, memory_id, status)",
    # per-user data keys and kept texts (governance/datakeys.py, revision_texts.py)
    f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.data_keys(
        kid text PRIMARY KEY,
        agent_id text NOT NULL,
        user_id text NOT NULL,
        wrapped text,
        created_at bigint NOT NULL,
        destroyed_at bigint)""",
    f"CREATE INDEX IF NOT EXISTS data_keys_scope ON {SCHEMA}.data_keys"
    "(agent_id, user_id, destroyed_at)",
    f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.governance_settings(
        name text PRIMARY KEY,
        value text NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.revision_texts(
        id text PRIMARY KEY,
        agent_id text NOT NULL,
        user_id text,
        memory_id text NOT NULL,
        created_at bigint NOT NULL,
        body text NOT NULL)""",
    f"CREATE INDEX IF NOT EXISTS revision_texts_memory ON {SCHEMA}.revision_texts"
    "(agent_id, memory_id)",
    f"CREATE INDEX IF NOT EXISTS revision_texts_user ON {SCHEMA}.revision_texts"
    "(agent_id, user_id)",
]
#: Tables of ``_ADDED``: a database without one of them runs ``_ADDED`` again.
_ADDED_TABLES = ("data_keys", "governance_settings", "revision_texts")

#: Every governance table, read from the DDL so that a table added there is qualified too.
TABLES = frozenset(re.findall(rf"CREATE TABLE (?:IF NOT EXISTS )?{SCHEMA}\.(\w+)",
                              "\n".join(_DDL + _ADDED)))
# A bare table name: not already qualified, not part of a longer word (index names).
_BARE_TABLE = re.compile(r"(?<![\w.])(" + "|".join(sorted(TABLES)) + r")\b")


def _translate(exc: psycopg.Error) -> MemorywireError:
    if isinstance(exc, psycopg.errors.DiskFull):
        return StorageFull(
            "the governance database's disk is full: nothing was written or changed;"
            " free space and retry"
        )
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return BackendUnavailable(f"governance PostgreSQL is unreachable: {exc}")
    return BackendUnavailable(f"governance PostgreSQL failed: {type(exc).__name__}: {exc}")


@functools.lru_cache(maxsize=1024)
def _pg(sql: str) -> str:
    """Governance SQL, written once for both dialects, as PostgreSQL runs it here: psycopg's
    placeholders for ``?`` (governance SQL has no other ``?`` or ``%``) and each bare table
    name qualified with :data:`SCHEMA`.

    Qualifying replaces a session ``SET search_path``: behind PgBouncer in transaction mode
    such a setting stays on whichever server session ran it, so this connection's next
    transaction may land on a session without it, and the next client on that session
    inherits it.
    """
    return _BARE_TABLE.sub(rf"{SCHEMA}.\1", sql.replace("?", "%s"))


class PgGovDb:
    """One synchronous connection; reconnects between transactions if the server went away."""

    dialect = "postgres"

    def __init__(self, conninfo: str, conn: psycopg.Connection[Any]) -> None:
        self._conninfo = conninfo
        self._conn = conn
        self._depth = 0

    @classmethod
    def connect(cls, conninfo: str) -> PgGovDb:
        return cls(conninfo, _connect(conninfo))

    def _live(self) -> psycopg.Connection[Any]:
        if self._conn.closed or self._conn.broken:
            self._conn.close()
            self._conn = _connect(self._conninfo)
        return self._conn

    @property
    def connection(self) -> psycopg.Connection[Any]:
        return self._live()

    def transaction(self) -> AbstractContextManager[None]:
        return self._transaction()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        if self._depth:
            self._depth += 1
            try:
                with self._conn.transaction():  # a savepoint
                    yield
            finally:
                self._depth -= 1
            return
        conn = self._live()
        self._depth = 1
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
                yield
        except psycopg.Error as exc:
            raise _translate(exc) from exc
        finally:
            self._depth = 0

    def query(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        conn = self._conn if self._depth else self._live()
        try:
            return [tuple(r) for r in conn.execute(_pg(sql), tuple(args) or None).fetchall()]
        except psycopg.Error as exc:
            raise _translate(exc) from exc

    def execute(self, sql: str, args: Sequence[Any] = ()) -> None:
        conn = self._conn if self._depth else self._live()
        try:
            conn.execute(_pg(sql), tuple(args) or None)
        except psycopg.Error as exc:
            raise _translate(exc) from exc

    def json_array_contains(self, column: str) -> str:
        return f"({column})::jsonb @> jsonb_build_array(?::text)"

    def in_transaction(self) -> bool:
        return bool(self._depth) and (
            self._conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS)

    def close(self) -> None:
        self._conn.close()


def _connect(conninfo: str) -> psycopg.Connection[Any]:
    try:
        # prepare_threshold=None: psycopg would otherwise prepare a statement on its fifth run,
        # server-side under a name per connection; behind PgBouncer the name lands on a shared
        # server session (another client's "_pg3_0" already exists there, or ours is missing).
        conn = psycopg.connect(conninfo, autocommit=True, prepare_threshold=None)
        # Each BEGIN names its level: the lock-then-read rule needs a fresh snapshot for every
        # statement after the lock, whatever default_transaction_isolation the server has.
        conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
    except psycopg.Error as exc:
        raise _translate(exc) from exc
    try:
        _setup(conn)
    except psycopg.Error as exc:
        conn.close()
        raise _translate(exc) from exc
    return conn


def _setup(conn: psycopg.Connection[Any]) -> None:
    """Create or complete the schema once: servers starting together wait on one lock.

    The lock is transaction-level, taken first inside the setup transaction, so it holds on
    one server session and ends with it (a session lock taken through PgBouncer stays on a
    pooled session that its unlock may never reach). After the wait, what exists is read
    from the catalog tables by plain queries, whose per-statement snapshot sees what another
    server committed meanwhile; ``to_regclass`` answers from the backend's catalog cache,
    which may still hold "no such table" from before the wait.
    """
    if _complete(conn):
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SETUP_KEY,))
        if not _tables_present(conn, ("approvals",)):
            for stmt in _DDL:
                conn.execute(stmt)
        if not _complete(conn):
            for stmt in _ADDED:
                conn.execute(stmt)


def _complete(conn: psycopg.Connection[Any]) -> bool:
    """Whether every table and every added column is there (nothing to create)."""
    row = conn.execute(
        "SELECT count(*) FROM information_schema.columns WHERE table_schema = %s"
        " AND table_name = 'approvals' AND column_name IN ('memory_id', 'requester_id')",
        (SCHEMA,),
    ).fetchone()
    if row is None or int(row[0]) != 2:
        return False
    return _tables_present(conn, ("approvals", *_ADDED_TABLES))


def _tables_present(conn: psycopg.Connection[Any], tables: Sequence[str]) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = %s"
        " AND tablename = ANY(%s)", (SCHEMA, list(tables)),
    ).fetchone()
    return row is not None and int(row[0]) == len(set(tables))
