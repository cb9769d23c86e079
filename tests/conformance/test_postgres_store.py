"""The conformance suite over PostgresStore (a fresh database per scenario, pgserver)."""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.store.postgres import PostgresStore
from memorywire.testing import postgres as _pg
from memorywire.testing.harness import StoreFactory

pytest_plugins = ["memorywire.testing.plugin"]
pytestmark = pytest.mark.postgres
pg_server = _pg.pg_server


@pytest.fixture
def memorywire_store_factory(pg_server: _pg.PgHandle) -> StoreFactory:
    def make(**kw: Any) -> PostgresStore:
        return PostgresStore(pg_server.create_database(), **kw)

    return make
