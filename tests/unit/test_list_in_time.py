"""``list`` with ``as_of``/``known_at`` pages over what the filter keeps: each page is full
while more match, and the cursors reach every match once (server/records.py)."""

from __future__ import annotations

import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.server.auth import Principal
from memorywire.server.records import RecordOperations
from memorywire.store.memory import InMemoryStore
from memorywire.wire.memory_ops import ListRequest
from memorywire.wire.models import RememberRequest

pytestmark = pytest.mark.anyio
DAY = 86_400_000


async def test_pages_are_full_and_cursors_reach_every_match() -> None:
    clock = FakeClock()
    store = InMemoryStore(embedder=HashingEmbedder(), clock=clock)
    now = clock.now_ms()
    old: list[str] = []
    for n in range(12):
        # every third memory held a year ago; the rest only from now
        back = n % 3 == 0
        resp = await store.remember(RememberRequest(
            agent_id="ag", type="semantic", content=f"fact number {n} about the user",
            valid_from=now - 365 * DAY if back else None))
        if back:
            old.append(resp.id)
        clock.advance(1000)
    ops, p = RecordOperations(store), Principal.local_admin()
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = await ops.list(ListRequest(agent_id="ag", limit=2, cursor=cursor,
                                          as_of=now - 180 * DAY), p)
        pages += 1
        seen += [m.id for m in page.memories]
        if page.next_cursor is None:
            break
        assert len(page.memories) == 2, "a page with more to come is full"
        cursor = page.next_cursor
    assert seen == old and pages == 2
    everything = await ops.list(ListRequest(agent_id="ag", limit=100), p)
    assert len(everything.memories) == 12
    known = await ops.list(ListRequest(agent_id="ag", limit=100, known_at=now + 500), p)
    assert [m.id for m in known.memories] == old[:1], "only the first was recorded by then"
    await store.aclose()
