"""The governance database: one small interface over SQLite (apsw) and PostgreSQL.

:class:`~memorywire.governance.audit.AuditLog` and
:class:`~memorywire.governance.queue.ApprovalQueue` are written once against :class:`GovDb`,
so the state machine, the chain rule and the verification are the same on both. A dialect
supplies only what SQL cannot share: opening, transactions, placeholders, error translation
and a JSON-array membership test.

A write transaction is *exclusive* on both: SQLite's ``BEGIN IMMEDIATE`` takes the database
write lock, PostgreSQL's takes a transaction-level advisory lock. Every governance write reads
the chain head (or a queue row) and then writes, so serialising whole write transactions is
what keeps ``seq``/``prev_hash`` consistent and each approval single across processes.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol

import apsw

from memorywire.errors import BackendUnavailable, MemorywireError, StorageFull, StoreCorrupt

__all__ = ["GovDb", "SqliteGovDb", "is_postgres_url", "open_governance_db", "write_transaction"]

Row = tuple[Any, ...]


class GovDb(Protocol):
    """What the audit log and the approval queue need from their database.

    SQL is written with ``?`` placeholders; a dialect rewrites them if it must.
    """

    @property
    def dialect(self) -> str: ...

    def transaction(self) -> AbstractContextManager[None]:
        """Exclusive write transaction at the outermost level, a savepoint when nested."""
        ...

    def query(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        """Rows as tuples; a failed read leaves as a ``MemorywireError``."""
        ...

    def execute(self, sql: str, args: Sequence[Any] = ()) -> None:
        """Run a statement; driver errors leave as ``BackendUnavailable``."""
        ...

    def json_array_contains(self, column: str) -> str:
        """A condition, with one ``?``, true when the JSON array text in ``column`` holds it."""
        ...

    def in_transaction(self) -> bool:
        """Whether a transaction is open and usable: false once the database itself dropped
        it (SQLite undoes the whole transaction on some errors, a full disk among them)."""
        ...

    def close(self) -> None: ...


def is_postgres_url(target: str | Path) -> bool:
    return isinstance(target, str) and target.split("://", 1)[0].split("+", 1)[0].lower() in (
        "postgres",
        "postgresql",
    )


def open_governance_db(target: str | Path) -> GovDb:
    """A SQLite file path, or a ``postgresql://`` URL shared by several servers."""
    if is_postgres_url(target):
        from memorywire.governance.pg_backend import PgGovDb

        return PgGovDb.connect(str(target))
    return SqliteGovDb.open(target)


_savepoints = itertools.count()


@contextmanager
def write_transaction(conn: apsw.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` at the outermost level (so read-then-write never deadlocks across
    processes), a savepoint when nested; rolled back on any exception."""
    if not conn.getautocommit():
        sp = f"mw_sp_{next(_savepoints)}"
        conn.execute(f"SAVEPOINT {sp}")
        try:
            yield
        except BaseException:
            if not conn.getautocommit():  # else SQLite already undid the whole transaction
                conn.execute(f"ROLLBACK TO {sp}")
                conn.execute(f"RELEASE {sp}")
            raise
        conn.execute(f"RELEASE {sp}")
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        # SQLite rolls back by itself on some errors (a full disk); rolling back again would
        # replace the real error with "cannot rollback - no transaction is active".
        if not conn.getautocommit():
            conn.execute("ROLLBACK")
        raise
    try:
        conn.execute("COMMIT")
    except BaseException:
        if not conn.getautocommit():
            conn.execute("ROLLBACK")
        raise


def _write_error(exc: apsw.Error) -> MemorywireError:
    if isinstance(exc, apsw.FullError):
        return StorageFull(
            "the governance database's disk is full: nothing was written or changed;"
            " free space and retry"
        )
    return BackendUnavailable(f"governance database write failed: {exc}")


class SqliteGovDb:
    """A governance file: waits on locks, zeroes deleted bytes on disk."""

    dialect = "sqlite"

    def __init__(self, conn: apsw.Connection) -> None:
        self.connection = conn

    @classmethod
    def open(cls, path: str | Path) -> SqliteGovDb:
        try:
            if str(path) != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            conn = apsw.Connection(str(path))
            conn.set_busy_timeout(10_000)
            conn.execute("PRAGMA secure_delete = ON")
            conn.execute("PRAGMA foreign_keys = ON")
        except (apsw.Error, OSError) as exc:
            raise BackendUnavailable(f"cannot open governance database {path}: {exc}") from exc
        return cls(conn)

    def transaction(self) -> AbstractContextManager[None]:
        return self._transaction()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        try:
            with write_transaction(self.connection):
                yield
        except apsw.Error as exc:
            raise _write_error(exc) from exc

    def query(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        try:
            return [tuple(r) for r in self.connection.execute(sql, tuple(args))]
        except apsw.Error as exc:
            raise StoreCorrupt(f"governance database unreadable: {exc}") from exc

    def execute(self, sql: str, args: Sequence[Any] = ()) -> None:
        try:
            self.connection.execute(sql, tuple(args))
        except apsw.Error as exc:
            raise _write_error(exc) from exc

    def json_array_contains(self, column: str) -> str:
        return f"EXISTS (SELECT 1 FROM json_each({column}) WHERE value = ?)"

    def in_transaction(self) -> bool:
        return not self.connection.getautocommit()

    def close(self) -> None:
        self.connection.close()
