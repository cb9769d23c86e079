"""The conflict scan's fast paths give the answers of the plain ones.

A remember compares the new text with up to 1,000 memories of its scope. Two shortcuts keep
that cheap: the why string is written only for the candidates kept, and SQLite reads the
candidates without building records. Both must be invisible: same candidates, same order,
same similarity and why, same rows (user, type, superseded, forgotten and expired ones left
out).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memorywire.core.clock import FakeClock
from memorywire.core.contradiction import Candidate, find_conflicts, judge
from memorywire.core.records import ListQuery
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store import timeline
from memorywire.store.base import MemoryStore
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


class _Records:
    """The same store seen only through the protocol, so the scan falls back to records."""

    def __init__(self, inner: SqliteStore) -> None:
        self.inner = inner

    async def list(self, query: ListQuery) -> list[object]:
        return list(await self.inner.list(query))


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
        plain: MemoryStore = _Records(store)  # type: ignore[assignment]
        checked = 0
        for agent in ("a", "b"):
            for user in (None, "u1", "u2"):
                for mtype in (MemoryType.SEMANTIC, MemoryType.EPISODIC):
                    fast = await timeline._current(store, (agent, user, mtype))
                    slow = await timeline._current(plain, (agent, user, mtype))
                    assert fast == slow
                    checked += len(slow)
        assert checked > 20  # the comparison saw rows, not two empty lists
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
