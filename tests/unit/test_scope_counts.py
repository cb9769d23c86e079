"""What a large scope's recall counts per query word must not depend on how it counts.

A recall weighs each full-text word by its document frequency in the recall's scope
(``search.informative_units``). Where every row id of the agent's range is in the scope (an
agent written alone), the store counts the word's rows in the range in SQL instead of reading
them all into Python, and it maps row ids to scope positions by binary search while they
ascend. Both shortcuts must give exactly the numbers of the row-by-row walk they replace.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.store._vector_cache import CachedRow, ScopeIndex
from memorywire.store.sqlite import SqliteStore
from memorywire.store.sqlite.fts_units import UnitRows
from memorywire.store.sqlite.search import informative_units, lexical_units
from memorywire.wire.models import MemoryType, RememberRequest

pytestmark = pytest.mark.anyio
EMB = HashingEmbedder(32)
SEMANTIC = MemoryType.SEMANTIC
WORDS = ["coffee", "tea", "train", "bicycle", "garden", "piano", "allergic", "cats"]


def _row(rid: int) -> CachedRow:
    vector = np.zeros(EMB.dim, dtype=np.float32)
    return CachedRow(rid=rid, id=f"m{rid}", vector=vector, user_id=None,
                     type=MemoryType.SEMANTIC, created_at=0, expires_at=None, demoted=False)


@pytest.mark.parametrize("rids", [[3, 5, 9, 10, 40], [9, 3, 40, 5, 10]])
def test_positions_of_matches_the_dict_walk(rids: list[int]) -> None:
    index = ScopeIndex(EMB.dim, 1)
    index.extend([_row(r) for r in rids])
    assert index.rids_ascending is (rids == sorted(rids))
    asked = frozenset({1, 3, 9, 40, 41, 7})  # 1, 7, 41: another agent's rows
    walked = sorted(p for p in map(index.pos.get, asked) if p is not None)
    assert sorted(index.positions_of(asked).tolist()) == walked
    assert index.positions_of(frozenset()).size == 0
    index.extend([_row(2)])  # a row id below the last: no longer ascending
    assert not index.rids_ascending
    assert sorted(index.positions_of(frozenset({2, 3})).tolist()) == sorted(
        [index.pos[2], index.pos[3]])


async def _store(tmp_path: Path, *, interleaved: bool) -> SqliteStore:
    store = SqliteStore(tmp_path / "s.db", embedder=EMB,
                        recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0))
    reqs = []
    for i in range(300):
        words = " ".join(WORDS[j] for j in range(len(WORDS)) if (i >> j) & 1 or j == i % 8)
        reqs.append(RememberRequest(agent_id="a", type=SEMANTIC, content=f"note {i} {words}"))
        if interleaved and i % 3 == 0:
            reqs.append(RememberRequest(agent_id="b", type=SEMANTIC, content=f"b {words}"))
    await store.remember_many(reqs)
    return store


@pytest.mark.parametrize("interleaved", [False, True])
async def test_scope_counts_equal_the_row_walk(tmp_path: Path, interleaved: bool) -> None:
    store = await _store(tmp_path, interleaved=interleaved)
    try:
        with store._db.tx(durable=False) as conn:
            index = store._db.index(conn, "a")
            rid_range = (int(index.rids.min()), int(index.rids.max()))
            assert index.rids_ascending
            assert (rid_range[1] - rid_range[0] + 1 == index.n) is not interleaved
            mask = np.ones(index.n, dtype=bool)
            query = "coffee tea train bicycle garden piano allergic cats"
            units = lexical_units(conn, query)
            fast_common: list[str] = []
            fast = informative_units(conn, units, index, mask, index.n, rid_range, fast_common,
                                     UnitRows(conn, rid_range))
            rows = UnitRows(conn, rid_range)
            assert rows.count(units[0]) == [len(s) for s in rows.of(units[0])]
            index.rids_ascending = False  # forces the row-by-row walk
            slow_common: list[str] = []
            slow = informative_units(conn, units, index, mask, index.n, rid_range, slow_common,
                                     UnitRows(conn, rid_range))
            assert fast == slow and fast_common == slow_common
            assert fast[0][0] and fast_common  # some words kept, some too common
    finally:
        await store.aclose()
