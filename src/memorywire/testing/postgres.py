"""A real PostgreSQL (with pgvector) for tests: pgserver, or ``MEMORYWIRE_TEST_PG_DSN``.

One server per test session; every test gets a fresh database, so tests never see each
other's rows and need no cleanup. ``MEMORYWIRE_TEST_PG_DSN`` points at an external server
instead (its role needs ``CREATEDB``; the ``vector`` extension must be installable).

Import the fixtures into a test module or conftest::

    from memorywire.testing import postgres as _pg

    pg_server = _pg.pg_server
    pg_dsn = _pg.pg_dsn
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

__all__ = ["ENV_DSN", "PgHandle", "pg_dsn", "pg_server"]

ENV_DSN = "MEMORYWIRE_TEST_PG_DSN"


def _with_database(dsn: str, database: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, ""))


class PgHandle:
    """A running server: hand out fresh databases, and stop/start it for fault tests."""

    def __init__(self, admin_dsn: str, server: Any | None = None) -> None:
        self.admin_dsn = admin_dsn
        self._server = server

    @property
    def can_restart(self) -> bool:
        return self._server is not None

    def create_database(self, prefix: str = "mwtest") -> str:
        import psycopg

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(psycopg.sql.SQL("CREATE DATABASE {}").format(psycopg.sql.Identifier(name)))
        return _with_database(self.admin_dsn, name)

    def stop(self) -> None:
        """Stop the server (fast shutdown: open connections are cut)."""
        from pgserver import _commands

        assert self._server is not None, "only a pgserver-managed server can be stopped"
        pg_ctl = _commands.pg_ctl  # type: ignore[attr-defined]  # made at import time
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self._server.pgdata,
               user=self._server.system_user)

    def start(self) -> None:
        assert self._server is not None
        self._server.ensure_postgres_running()

    def close(self) -> None:
        if self._server is not None:
            self._server.cleanup()


def start_pgserver(datadir: Path) -> PgHandle:
    """Start PostgreSQL 16 + pgvector from the ``pgserver`` wheel in ``datadir``.

    As root, pgserver runs postgres as a ``pgserver`` system user it creates itself.
    """
    with warnings.catch_warnings():
        # platformdirs warns at import when XDG_RUNTIME_DIR is unset (containers, CI)
        warnings.simplefilter("ignore")
        from pgserver.postgres_server import get_server

        server = get_server(datadir, cleanup_mode="delete")
    dsn = server.get_uri()
    return PgHandle(dsn, server)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgHandle]:
    external = os.environ.get(ENV_DSN)
    if external:
        yield PgHandle(external)
        return
    # Not under pytest's tmp root: pytest resets that to mode 0700 whenever any pytest run
    # starts, which locks out the unprivileged user postgres runs as when we are root.
    parent = Path(tempfile.mkdtemp(prefix="memorywire-pg-"))
    parent.chmod(0o755)
    try:
        handle = start_pgserver(parent / "data")
    except ImportError:
        shutil.rmtree(parent, ignore_errors=True)
        pytest.skip(f"PostgreSQL tests need pgserver (pip install pgserver) or {ENV_DSN}")
    try:
        yield handle
    finally:
        handle.close()
        shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture
def pg_dsn(pg_server: PgHandle) -> str:
    """A DSN of a brand-new empty database on the session's server."""
    return pg_server.create_database()
