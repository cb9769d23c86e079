"""The conflict scan's fast paths give the answers of the plain ones.

A remember compares the new text with up to 1,000 memories of its scope. Two shortcuts keep
that cheap: the why string is written only for the candidates kept, and SQLite reads the
candidates without building records. Both must be invisible: same candidates, same order,
same similarity and why, same rows (user, type, superseded, forgotten and expired ones left
out; the newest ``CONFLICT_SCAN_LIMIT`` of them).
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

async def _listed(store: SqliteStore, agent: str, user: str | None, mtype: MemoryType,
                  limit: int) -> list[tuple[str, str]]:
    """The candidates as the records say they are: every live memory ``list`` gives for the
    scope, of the user, not superseded, newest first, the first ``limit``."""
    rows = await store.list(ListQuery(agent_id=agent, user_id=user, types=[mtype],
                                      limit=100_000))
    current = [r for r in rows if r.user_id == user
               and validity_of(r.metadata, r.created_at).superseded_by is None]
    current.sort(key=lambda r: (r.created_at, r.id), reverse=True)
    return [(r.id, str(r.content)) for r in current[:limit]]


@pytest.mark.parametrize("limit", [1000, 7])
async def test_sqlite_reads_the_candidates_list_would_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    monkeypatch.setattr(timeline, "CONFLICT_SCAN_LIMIT", limit)
    clock = FakeClock(1_000_000)
    store = SqliteStore(tmp_path / "s.db", embedder=HashingEmbedder(), clock=clock)
    assert isinstance(store, timeline.TextScan)
    rng = random.Random(7)
    try:
        for i in range(120):
            clock.advance(10)
            agent = rng.choice(["a", "a", "b"])
            mtype = rng.choice([MemoryType.SEMANTIC, MemoryType.EPISODIC])
            user = rng.choice([None, "u1", "u2"])
            expires = clock.now_ms() + 50 if i % 17 == 0 else None
            supersedes = None
            if i % 11 == 0:
                earlier = await store.current_texts(agent, user, mtype, 1000)
                supersedes = [earlier[0][0]] if earlier else None
            await store.remember(RememberRequest(
                agent_id=agent, user_id=user, type=mtype,
                content=f"the user {rng.choice(WORDS)} {i}", id=f"id{i}", expires_at=expires,
                supersedes=supersedes if supersedes and i % 2 else None))
        await store.forget(ForgetRequest(agent_id="a", ids=["id3", "id4", "id5"]))
        clock.advance(100)  # some have expired
        checked = cut = 0
        for agent in ("a", "b"):
            for user in (None, "u1", "u2"):
                for mtype in (MemoryType.SEMANTIC, MemoryType.EPISODIC):
                    fast = await timeline._current(store, (agent, user, mtype))
                    slow = await _listed(store, agent, user, mtype, limit)
                    assert fast == slow
                    checked += len(slow)
                    cut += len(await _listed(store, agent, user, mtype, 1000)) > limit
        assert checked > 20  # the comparison saw rows, not two empty lists
        assert cut or limit == 1000  # the small bound did cut some scopes
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


async def test_a_new_scopes_first_batch_parses_and_scans_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conversation or a bulk remember written at once into a new scope has nothing to
    contradict; a scan and a parse per memory anyway was about half of such a write's Python
    (docs/benchmarks.md, ingest19). The answer is unchanged: no conflicts, and the next write
    still finds the first batch's memory."""
    store = SqliteStore(tmp_path / "s.db", embedder=HashingEmbedder())
    scans: list[str] = []
    scan = store.current_vectors_now

    def counted(agent_id: str, *args: Any) -> list[tuple[str, str, float]]:
        scans.append(agent_id)
        return scan(agent_id, *args)

    monkeypatch.setattr(store, "current_vectors_now", counted)
    texts = ["the user's favourite airline is KLM", "the user lives in Berlin",
             "the user works at Acme", "the user's cat is called Tom"]
    try:
        before = contradiction._parse.cache_info().misses
        out = await store.remember_many([
            RememberRequest(agent_id="a", type=MemoryType.SEMANTIC, content=t, id=f"m{i}")
            for i, t in enumerate(texts)])
        assert all(not r.conflicts for r in out)
        assert contradiction._parse.cache_info().misses == before and scans == []
        assert find_conflicts("the user's favourite airline is Ryanair", []) == []
        assert contradiction._parse.cache_info().misses == before
        later = await store.remember(RememberRequest(
            agent_id="a", type=MemoryType.SEMANTIC,
            content="the user's favourite airline is Ryanair"))
        assert [c.id for c in later.conflicts or []] == ["m0"] and scans == ["a"]
    finally:
        await store.aclose()
