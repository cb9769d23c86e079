"""Only the hits a recall returns count as recalled.

A re-ranker asks SqliteStore for a deeper pool (``SUBJECT_POOL`` when the question names a
person and the memories carry speakers) than the ``k`` it returns. ``no_recall_in_days``
expiry reads ``recall_count`` / ``last_recalled_at``: a memory the re-ranker looked at and
passed over must stay "never recalled", or expiry keeps what nobody ever got back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memorywire.core.clock import FakeClock
from memorywire.core.subject_boost import SUBJECT_POOL
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio

EMB = HashingEmbedder(64)
TURNS = 60  # more than k, fewer than the pool: the pool holds every turn


def _turn(i: int) -> RememberRequest:
    speaker = "Caroline" if i % 2 else "Melanie"
    return RememberRequest(agent_id="a", type=MemoryType.EPISODIC, id=f"t{i}",
                           content=f"We talked about the puppy and shelter number {i}.",
                           metadata={"speaker": speaker})


@pytest.mark.parametrize("by_vector", [False, True])
async def test_only_returned_hits_count_as_recalled(tmp_path: Path, by_vector: bool) -> None:
    assert TURNS < SUBJECT_POOL
    store = SqliteStore(tmp_path / "m.db", EMB, clock=FakeClock(1_000_000),
                        relevance_floor=-1.0, lexical_floor=-1.0)
    try:
        await store.remember_many([_turn(i) for i in range(TURNS)])
        req = RecallRequest(agent_id="a", query="Which shelter did Caroline adopt the puppy from?",
                            k=3)
        resp = (await store.recall_by_vector(req, EMB.embed([req.query])[0]) if by_vector
                else await store.recall(req))
        returned = {h.id for h in resp.results}
        assert len(returned) == 3
        counts = {f"t{i}": (await store.get("a", f"t{i}")) for i in range(TURNS)}
        recalled = {i for i, rec in counts.items() if rec is not None and rec.recall_count}
        assert recalled == returned
        for i in returned:
            rec = counts[i]
            assert rec is not None and rec.recall_count == 1
            assert rec.last_recalled_at == 1_000_000
    finally:
        await store.aclose()
