"""Near-duplicates by meaning, where a store compares stored vectors (in-memory, SQLite,
PostgreSQL): with MiniLM a sentence and itself with two words added sit above the cosine
bar, two values of one slot and a paraphrase below it. The word rules every store shares are
in the conformance scenarios (``memorywire.testing.scenarios.duplicates``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memorywire.core.clock import FakeClock
from memorywire.core.duplicates import NEAR_DUPLICATE_COSINE
from memorywire.store.base import MemoryStore
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.testing import postgres as _pg
from memorywire.testing.harness import embedder_for_conformance, rem

pytestmark = pytest.mark.anyio
pg_server = _pg.pg_server
pg_dsn = _pg.pg_dsn


@pytest.fixture(params=["memory", "sqlite",
                        pytest.param("postgres", marks=pytest.mark.postgres)])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryStore]:
    embedder, semantic = embedder_for_conformance()
    if not semantic:
        pytest.skip("needs the MiniLM model: the hashing embedder has no sense of meaning")
    made: MemoryStore
    if request.param == "memory":
        made = InMemoryStore(embedder, FakeClock())
    elif request.param == "sqlite":
        made = SqliteStore(tmp_path / "near.db", embedder=embedder, clock=FakeClock())
    else:
        from memorywire.store.postgres import PostgresStore

        made = PostgresStore(request.getfixturevalue("pg_dsn"), embedder, FakeClock())
    try:
        yield made
    finally:
        await made.aclose()


async def test_a_near_copy_is_named_with_its_cosine(store: MemoryStore) -> None:
    tea = await store.remember(rem("ag", "The user likes green tea.", user_id="u"))
    await store.remember(rem("ag", "The user's sister works as a dentist in Leeds.",
                             user_id="u"))
    resp = await store.remember(rem("ag", "The user likes green tea a lot.", user_id="u"))
    assert not resp.deduplicated and resp.id != tea.id
    found = [(n.id, n.similarity) for n in resp.near_duplicates or []]
    assert [i for i, _ in found] == [tea.id]
    assert NEAR_DUPLICATE_COSINE <= found[0][1] < 1.0


async def test_another_value_or_a_paraphrase_is_not_a_near_copy(store: MemoryStore) -> None:
    await store.remember(rem("ag", "The user lives in Berlin.", user_id="u"))
    await store.remember(rem("ag", "The user is allergic to peanuts.", user_id="u"))
    moved = await store.remember(rem("ag", "The user lives in Paris.", user_id="u"))
    assert moved.near_duplicates is None
    allergy = await store.remember(rem("ag", "The user has a peanut allergy.", user_id="u"))
    assert allergy.near_duplicates is None and not allergy.deduplicated


async def test_near_copies_in_another_scope_are_not_named(store: MemoryStore) -> None:
    await store.remember(rem("ag", "The user likes green tea.", user_id="u"))
    resp = await store.remember(rem("ag", "The user likes green tea a lot.", user_id="v"))
    assert resp.near_duplicates is None
