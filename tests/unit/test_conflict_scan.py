"""The conflict search: the detector's shortcuts are invisible, and a store's indexes give
it the right candidates at a cost that does not grow with the scope.

The why string is written only for the candidates kept (same candidates, order, similarity
and why as a full verdict per pair). SQLite finds a write's candidates through its own
indexes (the scope's nearest vectors, the full-text index on the subject words): only
current memories of the write's user and type, the nearest by vector among them, a bounded
number however large the scope, and a contradicted memory is found however much was written
after it (the scan of the newest 1,000 it replaces missed everything older).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from memorywire.core import contradiction
from memorywire.core.clock import FakeClock
from memorywire.core.contradiction import Candidate, find_conflicts, judge
from memorywire.core.records import ListQuery
from memorywire.core.timeline import validity_of
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store import timeline
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import ForgetRequest, MemoryType, RememberRequest

pytestmark = pytest.mark.anyio

WORDS = ["favourite", "airline", "lives", "cats", "works", "user", "not", "KLM", "Berlin",
         "3", "S24", "Ryanair", "is", "the", "has", "never", "in", "hotel", "Hilton", "job"]


def _reference(new: str, stored: list[tuple[str, str]], limit: int = 5) -> list[Candidate]:
    """The scan as first written: a full verdict per pair, sorted, cut."""
    out = []
    for id, text in stored:
        verdict = judge(text, new)
        if verdict is not None:
            out.append(Candidate(id=id, similarity=round(verdict[0], 4), why=verdict[1]))
    out.sort(key=lambda c: (-c.similarity, c.id))
    return out[:limit]


def test_scan_keeps_what_a_full_verdict_per_pair_keeps() -> None:
    rng = random.Random(20)
    for _ in range(300):
        stored = [(f"m{rng.randrange(40)}-{i}",
                   " ".join(rng.choice(WORDS) for _ in range(rng.randrange(2, 8))))
                  for i in range(rng.randrange(0, 60))]
        new = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(2, 8)))
        for limit in (1, 5, 50):
            assert find_conflicts(new, stored, limit) == _reference(new, stored, limit)



def test_a_look_alike_scope_keeps_the_same_candidates_in_any_order() -> None:
    """An agent's log: every note qualifies at similarity 1.0, so the scan stops early; what
    it keeps must not depend on the order the store gives the rows (newest first, shuffled)
    nor on ids that repeat."""
    rng = random.Random(17)
    notes = [(f"n-{rng.randrange(10_000):04d}",
              f"load agent-3 note c3-{i} about topic{rng.randrange(5)}") for i in range(300)]
    notes += [("n-0000", "load agent-3 note c3-x about topic1"),
              ("n-0000", "load agent-3 note c3-y about topic2")]
    new = "load agent-3 note c3-new about topic1"
    for stored in (notes, sorted(notes, reverse=True), rng.sample(notes, len(notes))):
        for limit in (1, 5, 50):
            found = find_conflicts(new, stored, limit)
            assert found == _reference(new, stored, limit)
            assert len(found) == limit and all(c.similarity == 1.0 for c in found)

async def _listed(store: SqliteStore, agent: str, user: str | None,
                  mtype: MemoryType) -> dict[str, str]:
    """The memories the detector may read, as the records say: every live memory ``list``
    gives for the scope, of exactly this user, not superseded."""
    rows = await store.list(ListQuery(agent_id=agent, user_id=user, types=[mtype],
                                      limit=100_000))
    return {r.id: str(r.content) for r in rows if r.user_id == user
            and validity_of(r.metadata, r.created_at).superseded_by is None}


async def test_sqlite_candidates_are_the_scopes_nearest_current_memories(
        tmp_path: Path) -> None:
    clock = FakeClock(1_000_000)
    embedder = HashingEmbedder()
    store = SqliteStore(tmp_path / "s.db", embedder=embedder, clock=clock)
    assert isinstance(store, timeline.ConflictIndexNow)
    rng = random.Random(7)
    try:
        for i in range(150):
            clock.advance(10)
            agent = rng.choice(["a", "a", "b"])
            mtype = rng.choice([MemoryType.SEMANTIC, MemoryType.EPISODIC])
            user = rng.choice([None, "u1", "u2"])
            expires = clock.now_ms() + 50 if i % 17 == 0 else None
            supersedes = None
            if i % 11 == 0:
                earlier = list(await _listed(store, agent, user, mtype))
                supersedes = [earlier[0]] if earlier else None
            await store.remember(RememberRequest(
                agent_id=agent, user_id=user, type=mtype, expires_at=expires, id=f"id{i}",
                content=" ".join(rng.choice(WORDS) for _ in range(5)) + f" {i}",
                supersedes=supersedes))
        await store.forget(ForgetRequest(agent_id="a", ids=["id3", "id4", "id5"]))
        clock.advance(100)  # some have expired
        checked = 0
        for agent in ("a", "b"):
            for user in (None, "u1", "u2"):
                for mtype in (MemoryType.SEMANTIC, MemoryType.EPISODIC):
                    current = await _listed(store, agent, user, mtype)
                    text = " ".join(rng.choice(WORDS) for _ in range(5))
                    vector = embedder.embed([text])[0]
                    [found] = await store.conflict_candidates(
                        [timeline.Probe(agent, user, mtype, text, vector)])
                    got = {i: (t, cos) for i, t, cos in found}
                    assert set(got) <= set(current)  # current, this user and type only
                    for i, (t, cos) in got.items():
                        assert t == current[i]
                        assert cos == pytest.approx(float(embedder.embed([t])[0] @ vector),
                                                    abs=1e-5)
                    exact = sorted(current, key=lambda i: -float(
                        embedder.embed([current[i]])[0] @ vector))
                    nearest = exact[:timeline.CONFLICT_NEIGHBOURS]
                    assert set(nearest) <= set(got)  # a small scope is searched exactly
                    assert len(got) <= timeline.CONFLICT_NEIGHBOURS + timeline.CONFLICT_LEXICAL
                    checked += len(current)
        assert checked > 40  # the comparison saw rows, not empty scopes
    finally:
        await store.aclose()


async def test_a_contradicted_memory_is_found_in_a_large_scope_from_few_candidates(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fact stated first is still found after 5,000 other memories (above the size at
    which the scope's coarse clusters replace the exact search), from a bounded number of
    candidates: a write costs about the same in a small scope or a large one."""
    seen: list[int] = []
    detector = timeline.find_conflicts

    def counted(new: str, stored: Any, *args: Any, **kw: Any) -> list[Candidate]:
        pairs = list(stored)
        seen.append(len(pairs))
        return detector(new, pairs, *args, **kw)

    monkeypatch.setattr(timeline, "find_conflicts", counted)
    store = SqliteStore(tmp_path / "s.db", embedder=HashingEmbedder(),
                        clock=FakeClock(1_000_000))
    rng = random.Random(3)
    try:
        klm = (await store.remember(RememberRequest(
            agent_id="a", user_id="u", type=MemoryType.SEMANTIC,
            content="The user's favourite airline is KLM."))).id
        topics = ["garden", "piano", "chess", "bread", "bikes", "hotel", "train", "coffee"]
        for start in range(0, 5000, 1000):
            await store.remember_many([RememberRequest(
                agent_id="a", user_id="u", type=MemoryType.SEMANTIC,
                content=f"The user mentioned the {rng.choice(topics)} {rng.choice(topics)} "
                        f"story number {i}.") for i in range(start, start + 1000)])
        resp = await store.remember(RememberRequest(
            agent_id="a", user_id="u", type=MemoryType.SEMANTIC,
            content="The user's favourite airline is Ryanair."))
        assert [c.id for c in resp.conflicts or []] == [klm]
        index = store._db.caches.get("a")
        assert index is not None and index.coarse is not None  # the large-scope path ran
        bound = timeline.CONFLICT_NEIGHBOURS + timeline.CONFLICT_LEXICAL
        assert seen and max(seen) <= bound, max(seen)
    finally:
        await store.aclose()


async def test_a_first_write_of_a_one_shot_store_scans_nothing(tmp_path: Path) -> None:
    """The CLI opens stores whose reads need the file; the scan of the very first remember
    must find nothing rather than refuse the write that creates the file."""
    store = SqliteStore(tmp_path / "new" / "s.db", embedder=HashingEmbedder(),
                        reads_need_file=True)
    try:
        resp = await store.remember(RememberRequest(agent_id="a", type=MemoryType.SEMANTIC,
                                                    content="the user lives in Berlin"))
        assert resp.id and (tmp_path / "new" / "s.db").exists()
        again = await store.remember(RememberRequest(agent_id="a", type=MemoryType.SEMANTIC,
                                                     content="the user lives in Paris"))
        assert [c.id for c in again.conflicts or []] == [resp.id]
    finally:
        await store.aclose()


async def test_a_new_scopes_first_batch_parses_nothing(tmp_path: Path) -> None:
    """A conversation or a bulk remember written at once into a new scope has nothing to
    contradict; a parse per memory anyway was about half of such a write's Python
    (docs/benchmarks.md, ingest19). The answer is unchanged: no conflicts, and the next write
    still finds the first batch's memory."""
    store = SqliteStore(tmp_path / "s.db", embedder=HashingEmbedder())
    texts = ["the user's favourite airline is KLM", "the user lives in Berlin",
             "the user works at Acme", "the user's cat is called Tom"]
    try:
        before = contradiction._parts.cache_info().misses
        out = await store.remember_many([
            RememberRequest(agent_id="a", type=MemoryType.SEMANTIC, content=t, id=f"m{i}")
            for i, t in enumerate(texts)])
        assert all(not r.conflicts for r in out)
        assert contradiction._parts.cache_info().misses == before
        later = await store.remember(RememberRequest(
            agent_id="a", type=MemoryType.SEMANTIC,
            content="the user's favourite airline is Ryanair"))
        assert [c.id for c in later.conflicts or []] == ["m0"]
    finally:
        await store.aclose()
