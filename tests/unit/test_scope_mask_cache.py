"""A large scope keeps its recall masks between recalls (``ScopeIndex.scope``): every
change to what a recall may see must still show at once. A recall through a store kept
open the whole time must equal one through a store opened afresh on the same file, and
rows must appear and disappear as they expire, are forgotten, superseded, or written by
this or another connection."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import memorywire.store._vector_cache as vector_cache
from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import ForgetRequest, MemoryType, RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio
T0 = 1_700_000_000_000
AGENT = "agent-1"


@pytest.fixture(autouse=True)
def _cache_every_scope(monkeypatch: pytest.MonkeyPatch) -> None:
    # The masks are kept from SCOPE_CACHE_FROM rows on; a test scope of a few dozen rows
    # must take the same path.
    monkeypatch.setattr(vector_cache, "SCOPE_CACHE_FROM", 0)


def _open(path: Path, clock: FakeClock) -> SqliteStore:
    return SqliteStore(path, embedder=HashingEmbedder(32), clock=clock,
                       recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                      lexical_floor=-1.0))


def _req(i: int, *, user: str | None = None, expires_at: int | None = None,
         mtype: MemoryType = MemoryType.SEMANTIC,
         supersedes: list[str] | None = None) -> RememberRequest:
    return RememberRequest(agent_id=AGENT, user_id=user, type=mtype, expires_at=expires_at,
                           content=f"note {i:03d} about the garden shed colour {i * 7}",
                           supersedes=supersedes)


SCOPES: list[dict[str, object]] = [
    {}, {"user_id": "u1"}, {"user_id": "u2"}, {"types": [MemoryType.EPISODIC]},
    {"user_id": "u1", "types": [MemoryType.SEMANTIC]},
]


async def _ids(store: SqliteStore, scope: dict[str, object]) -> list[str]:
    resp = await store.recall(RecallRequest(agent_id=AGENT, query="note about the garden",
                                            k=100, **scope))  # type: ignore[arg-type]
    return [h.id for h in resp.results]


async def _all(store: SqliteStore) -> list[list[str]]:
    return [await _ids(store, scope) for scope in SCOPES]


async def _same_as_fresh(store: SqliteStore, path: Path, clock: FakeClock) -> list[list[str]]:
    kept = await _all(store)
    fresh = _open(path, clock)
    try:
        assert kept == await _all(fresh)
    finally:
        await fresh.aclose()
    return kept


async def test_kept_masks_follow_expiry_writes_and_forgets(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    clock = FakeClock(T0)
    store = _open(path, clock)
    try:
        ids = [r.id for r in await store.remember_many([
            _req(i, user=("u1", "u2", None)[i % 3],
                 mtype=MemoryType.EPISODIC if i % 4 == 0 else MemoryType.SEMANTIC,
                 expires_at=T0 + 1_000 if i < 4 else T0 + 2_000 if i < 6 else None)
            for i in range(30)])]
        first = await _same_as_fresh(store, path, clock)
        assert set(ids[:6]) <= set(first[0])  # nothing expired yet

        clock.advance(1_000)  # exactly at the first expiry: those rows are gone
        now = await _same_as_fresh(store, path, clock)
        assert not set(ids[:4]) & set(now[0]) and set(ids[4:6]) <= set(now[0])
        assert not set(ids[:4]) & {i for scope in now for i in scope}

        clock.advance(-1)  # a clock stepped back: they are live again
        assert await _same_as_fresh(store, path, clock) == first

        clock.advance(5_000)
        late = await _same_as_fresh(store, path, clock)
        assert not set(ids[:6]) & set(late[0]) and len(late[0]) == 24

        await store.forget(ForgetRequest(agent_id=AGENT, ids=[ids[10]]))
        assert ids[10] not in (await _same_as_fresh(store, path, clock))[0]

        new = (await store.remember(_req(100, user="u1"))).id  # this connection's append
        after = await _same_as_fresh(store, path, clock)
        assert new in after[0] and new in after[1] and new not in after[2]

        other = _open(path, clock)  # another connection writes
        try:
            theirs = (await other.remember(_req(101, user="u2",
                                                mtype=MemoryType.EPISODIC))).id
            replaced = (await other.remember(_req(102, user="u1",
                                                  supersedes=[ids[15]]))).id
        finally:
            await other.aclose()
        seen = await _same_as_fresh(store, path, clock)
        assert theirs in seen[0] and theirs in seen[2] and theirs in seen[3]
        assert replaced in seen[0] and replaced in seen[1]
        assert seen != after
    finally:
        await store.aclose()


async def test_kept_masks_are_read_only_and_reused(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    store = _open(tmp_path / "m.db", clock)
    try:
        await store.remember_many([_req(i, expires_at=T0 + 10_000 if i == 0 else None)
                                   for i in range(10)])
        await _ids(store, {})
        index = store._caches.get(AGENT)
        assert index is not None
        mask, positions = index.scope(clock.now_ms(), user_id=None, types=None)
        again, _ = index.scope(clock.now_ms() + 9_999, user_id=None, types=None)
        assert again is mask and not mask.flags.writeable and not positions.flags.writeable
        expired, _ = index.scope(clock.now_ms() + 10_000, user_id=None, types=None)
        assert expired is not mask and int(expired.sum()) == 9
    finally:
        await store.aclose()


def test_kept_masks_count_against_the_cache_budget() -> None:
    """The scope cache evicts by ``nbytes``: masks it keeps must be in it, or eight kept
    masks of a large scope would sit outside the budget the user set."""
    import numpy as np

    n = 64  # masks are kept at every size here (the autouse fixture)
    rows = [(i + 1, f"m{i}", f"u{i % 3}", "semantic", i, None, 0) for i in range(n)]
    index = vector_cache.ScopeIndex.from_rows(
        4, 1, rows, np.ones((n, 4), dtype=np.float32).tobytes())
    before = index.nbytes
    mask, positions = index.scope(10 ** 6, user_id="u1", types=None)
    assert index.nbytes == before + mask.nbytes + positions.nbytes
    index.scope(10 ** 6, user_id="u2", types=[MemoryType.SEMANTIC])
    assert index.nbytes > before + mask.nbytes + positions.nbytes
