"""A batch's conflict search is one search for all of its writes (issue 35): the same
candidates as each write searched alone, a fact stated long before the batch still found,
and the batch compared with what was stored before it, never with itself.

SQLite searches a batch's vectors list by list of the scope's coarse clusters, its subject
words once per distinct word, its candidates' rows in one statement
(``store.sqlite.conflicts``); none of that may change what a write is told.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store import timeline
from memorywire.store._blas import _blas, one_thread
from memorywire.store._coarse_index import COARSE_MIN_ROWS
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RememberRequest

pytestmark = pytest.mark.anyio

TOPICS = ["garden", "piano", "chess", "bread", "bikes", "hotel", "train", "coffee", "Berlin",
          "KLM", "lives", "works", "favourite", "airline", "cats", "Acme", "not", "job"]


#: Topics of the filler notes that share no slot word with the facts written among them.
PLAIN = ["garden", "piano", "chess", "bread", "bikes", "train", "coffee", "tea"]


def _note(rng: random.Random, i: int, topics: list[str] = TOPICS) -> str:
    return f"The user mentioned the {rng.choice(topics)} {rng.choice(topics)} " \
           f"{rng.choice(topics)} story number {i}."


def _unit_rows(rng: np.random.Generator, count: int, dim: int) -> npt.NDArray[np.float32]:
    """Vectors in general position: no two cosines tie, so "nearest" has one answer (a
    hashing embedder's vectors tie often, and a tie may be broken either way)."""
    m = rng.standard_normal((count, dim)).astype(np.float32)
    out: npt.NDArray[np.float32] = m / np.linalg.norm(m, axis=1, keepdims=True)
    return out


async def test_a_batch_finds_what_each_write_alone_finds(tmp_path: Path) -> None:
    """Searched together (grouped by list, by word, by scope) or one at a time, every
    probe gets the same candidates, cosines and order; a user with too few memories near
    the write (a search that must widen) included."""
    store = SqliteStore(tmp_path / "s.db", embedder=HashingEmbedder(dim=64),
                        clock=FakeClock(1_000_000))
    rng = random.Random(11)
    vectors = np.random.default_rng(11)
    users = [None, "u1", "u2"]
    try:
        with timeline.no_conflict_scan():
            for start in range(0, COARSE_MIN_ROWS + 600, 1000):
                await store.remember_many([RememberRequest(
                    agent_id="a", user_id=rng.choice(users), content=_note(rng, i),
                    type=rng.choice([MemoryType.SEMANTIC, MemoryType.EPISODIC]))
                    for i in range(start, start + 1000)], vectors=_unit_rows(vectors, 1000, 64))
            await store.remember_many([RememberRequest(
                agent_id="a", user_id="rare", type=MemoryType.SEMANTIC,
                content=_note(rng, i)) for i in range(20)], vectors=_unit_rows(vectors, 20, 64))
        probes = [timeline.Probe("a", rng.choice([*users, "rare"]),
                                 rng.choice([MemoryType.SEMANTIC, MemoryType.EPISODIC]),
                                 _note(rng, 10_000 + i), vector)
                  for i, vector in enumerate(_unit_rows(vectors, 120, 64))]
        together = await store.conflict_candidates(probes)
        alone = [(await store.conflict_candidates([p]))[0] for p in probes]
        assert together == alone
        index = store._db.caches.get("a")
        assert index is not None and index.coarse is not None  # the large-scope path ran
        assert sum(len(f) for f in together) > 10 * len(probes)
        rare = [f for p, f in zip(probes, together, strict=True)
                if p.user_id == "rare" and p.type is MemoryType.SEMANTIC]
        assert rare and all(0 < len(f) <= 20 for f in rare)  # widened to its 20 memories
    finally:
        await store.aclose()


async def test_a_batch_into_a_large_scope_names_a_fact_stated_first(tmp_path: Path) -> None:
    """A fact stated before 4,600 other memories is named by its update written inside a
    batch of 1,000; the batch's own fact and update are not compared with each other (a
    batch is compared with what was stored before it), its restatement of a write of the
    same batch is answered with that write, and once the update supersedes the fact, the
    next batch's write names only the current value."""
    store = SqliteStore(tmp_path / "s.db", embedder=HashingEmbedder(dim=64),
                        clock=FakeClock(1_000_000))
    rng = random.Random(5)

    def fact(content: str) -> RememberRequest:
        return RememberRequest(agent_id="a", user_id="u", type=MemoryType.SEMANTIC,
                               content=content)

    def filler(start: int, count: int) -> list[RememberRequest]:
        return [fact(_note(rng, i, PLAIN)) for i in range(start, start + count)]

    try:
        klm = (await store.remember(fact("The user's favourite airline is KLM."))).id
        for start in range(0, COARSE_MIN_ROWS + 500, 1000):
            await store.remember_many(filler(start, 1000))
        batch = [*filler(10_000, 500), fact("The user's favourite airline is Ryanair."),
                 fact("The user's home city is Lyon."), fact("The user's home city is Oslo."),
                 fact("The user's home city is Lyon."), *filler(20_000, 496)]
        out = await store.remember_many(batch)
        ryanair, lyon, oslo, again = out[500:504]
        assert [c.id for c in ryanair.conflicts or []] == [klm]
        assert not any(c.id == lyon.id for c in oslo.conflicts or [])  # same batch
        assert again.id == lyon.id and again.deduplicated  # restated in the same batch
        index = store._db.caches.get("a")
        assert index is not None and index.coarse is not None  # the large-scope path ran
        await timeline.supersede(store, "a", ryanair.id, [klm], "u")
        later = await store.remember_many([*filler(30_000, 200),
                                           fact("The user's favourite airline is Lufthansa.")])
        assert [c.id for c in later[-1].conflicts or []] == [ryanair.id]
    finally:
        await store.aclose()


def test_one_thread_restores_the_blas_setting_and_changes_no_product() -> None:
    """The conflict search holds OpenBLAS to one thread only while it multiplies; the
    process's own setting comes back, nested blocks included, and a product is the same."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 64)).astype(np.float32)
    b = rng.standard_normal((400, 64)).astype(np.float32)
    fns = _blas()
    before = fns[0]() if fns is not None else None
    with one_thread():
        if fns is not None:
            assert fns[0]() == 1
        with one_thread():
            inner = a @ b.T
        if fns is not None:
            assert fns[0]() == 1
    if fns is not None:
        assert fns[0]() == before
    assert np.array_equal(inner, a @ b.T)
