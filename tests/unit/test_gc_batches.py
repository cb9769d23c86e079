"""A large batch of writes runs with fewer collector passes, and leaves the process's
collector settings as it found them (gc35).

The thresholds are process-wide state the application owns: a batch that raised them and
did not restore them (after an error, or when two batches overlap) would change every later
allocation's cost in the host process, unseen.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from pathlib import Path

import anyio
import pytest

from memorywire.core.records import ListQuery
from memorywire.embed.base import Vectors
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import NotFound
from memorywire.store import _gc
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RememberRequest

pytestmark = pytest.mark.anyio


class _Watching(HashingEmbedder):
    """The hashing embedder, noting the collector's thresholds each time the store embeds
    (which it does inside the batch's write)."""

    def __init__(self) -> None:
        super().__init__(dim=32)
        self.seen: list[tuple[int, int, int]] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.seen.append(gc.get_threshold())
        return super().embed(texts)


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*before)


def _reqs(n: int, prefix: str = "note") -> list[RememberRequest]:
    return [RememberRequest(agent_id="a", type=MemoryType.SEMANTIC, user_id="u",
                            content=f"The user {prefix} {i} likes the colour number {i}.")
            for i in range(n)]


async def test_a_large_batch_raises_the_young_threshold_and_restores_it(
        tmp_path: Path, thresholds: tuple[int, int, int]) -> None:
    emb = _Watching()
    store = SqliteStore(tmp_path / "s.db", embedder=emb)
    try:
        small = await store.remember_many(_reqs(3, "small"))
        assert len(small) == 3
        assert emb.seen and all(t == thresholds for t in emb.seen)
        emb.seen.clear()
        big = await store.remember_many(_reqs(_gc.BATCH_WRITES, "big"))
        assert len(big) == _gc.BATCH_WRITES
        assert emb.seen and all(t == (_gc.YOUNG_THRESHOLD, 10, 10) for t in emb.seen)
        assert gc.get_threshold() == thresholds
    finally:
        await store.aclose()


async def test_a_failed_batch_restores_the_thresholds(
        tmp_path: Path, thresholds: tuple[int, int, int]) -> None:
    store = SqliteStore(tmp_path / "s.db", embedder=HashingEmbedder(dim=32))
    try:
        reqs = _reqs(_gc.BATCH_WRITES)
        reqs[-1] = reqs[-1].model_copy(update={"supersedes": ["no-such-memory"]})
        with pytest.raises(NotFound):
            await store.remember_many(reqs)
        assert gc.get_threshold() == thresholds
        assert await store.list(ListQuery(agent_id="a")) == []  # nothing written
    finally:
        await store.aclose()


async def test_overlapping_batches_restore_once_the_last_ends(
        tmp_path: Path, thresholds: tuple[int, int, int]) -> None:
    store = SqliteStore(tmp_path / "s.db", embedder=HashingEmbedder(dim=32))
    try:
        async with anyio.create_task_group() as tg:
            for name in ("one", "two", "three"):
                tg.start_soon(store.remember_many, _reqs(_gc.BATCH_WRITES, name))
        assert gc.get_threshold() == thresholds
    finally:
        await store.aclose()


def test_nested_blocks_keep_the_raise_until_the_outer_one_ends(
        thresholds: tuple[int, int, int]) -> None:
    with _gc.fewer_collections():
        with _gc.fewer_collections():
            assert gc.get_threshold()[0] == _gc.YOUNG_THRESHOLD
        assert gc.get_threshold()[0] == _gc.YOUNG_THRESHOLD
    assert gc.get_threshold() == thresholds


def test_an_application_that_disabled_automatic_collection_keeps_it_off(
        thresholds: tuple[int, int, int]) -> None:
    gc.set_threshold(0)
    with _gc.fewer_collections():
        assert gc.get_threshold()[0] == 0
    assert gc.get_threshold()[0] == 0


def test_an_inactive_block_changes_nothing(thresholds: tuple[int, int, int]) -> None:
    with _gc.fewer_collections(active=False):
        assert gc.get_threshold() == thresholds
    assert gc.get_threshold() == thresholds
