"""The memorywire conformance suite against a real Letta server."""

from __future__ import annotations

import os
import uuid
from typing import Any

import psycopg
import pytest

from memorywire.store.letta import LettaStore
from memorywire.testing.harness import StoreFactory

pytest_plugins = ["memorywire.testing.plugin"]


class _InspectableLetta(LettaStore):
    """Letta plus the conformance hook that reads Letta's own PostgreSQL for leftover bytes."""

    def __init__(self, *args: Any, pg_uri: str, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._pg_uri = pg_uri

    async def raw_contains(self, needle: str) -> bool:
        with psycopg.connect(self._pg_uri) as conn:
            tables = [r[0] for r in conn.execute(
                "SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) "
                "FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
                "AND table_schema NOT IN ('pg_catalog', 'information_schema')"
            )]
            for t in tables:
                # a whole row cast to text covers every column, JSON and tags included
                hit = conn.execute(
                    f"SELECT 1 FROM {t} AS r WHERE strpos(r::text, %s) > 0 LIMIT 1", (needle,)
                ).fetchone()
                if hit:
                    return True
        return False


@pytest.fixture
def memorywire_store_factory() -> StoreFactory:
    url, embed, uri = (
        os.environ.get(n, "")
        for n in ("MEMORYWIRE_LETTA_URL", "MEMORYWIRE_LETTA_EMBED_URL", "MEMORYWIRE_LETTA_PG_URI")
    )
    if not (url and embed and uri):
        pytest.fail("run these tests with `make test-letta` (it sets MEMORYWIRE_LETTA_*)")

    def make(**kw: Any) -> LettaStore:
        return _InspectableLetta(url, embedding_endpoint=embed, pg_uri=uri,
                                 archive_prefix=f"t{uuid.uuid4().hex[:12]}", **kw)

    return make
