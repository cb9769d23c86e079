"""Long BM25 lists summed from kept per-unit lists are FTS5's own lists, to the very double.

``store.sqlite.bm25_terms`` keeps each unit's rows and terms per connection until a write
and adds them up in FTS5's phrase order. A user relies on a recall ranking as FTS5 ranks:
a score one ulp off reorders near ties, and a kept list that outlived a write would rank on
stale IDFs. Checked against FTS5's own multi-unit ``bm25()`` on a real index full of tied
rows (scores and order, many random queries), on a real store's recalls, and across every
kind of write: remember, forget, an update of content, another connection's commit.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import apsw
import pytest

from memorywire.core.records import UpdateRequest
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.sqlite import SqliteStore, bm25_terms, fts_lists
from memorywire.store.sqlite.fts_lists import range_list, ranged_scores
from memorywire.wire.models import ForgetRequest, MemoryType, RecallRequest, RememberRequest

WORDS = ["lake", "wanaka", "camping", "trip", "aurora", "night", "cold", "tent", "boat",
         "fish", "stars", "hike", "rain", "bread", "kite", "train", "training", "trainer"]
UNITS = [f'"{w}"' for w in WORDS] + ['"train"*', '"camp"*', '"traini"*', '"absent"']


def _fts(rows: int, seed: int = 11) -> apsw.Connection:
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE memories_fts USING fts5(body, scope, content='', "
                 "contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2')")
    rng = random.Random(seed)
    texts = [" ".join(rng.choices(WORDS, k=rng.randint(1, 30))) for _ in range(rows)]
    texts += texts[:rows // 5]  # identical rows: tied scores
    order = list(range(1, len(texts) + 1))
    rng.shuffle(order)
    conn.execute("BEGIN")
    for rid in order:
        conn.execute("INSERT INTO memories_fts(rowid, body, scope) VALUES(?, ?, 's')",
                     (rid, texts[rid - 1]))
    conn.execute("COMMIT")
    return conn


def _fts5(conn: Any, kept: list[str], rid_range: tuple[int, int]) -> list[tuple[int, float]]:
    """FTS5's own scores of the OR query, unsorted (ascending row id)."""
    return [(r, s) for r, s in conn.execute(
        "SELECT rowid, bm25(memories_fts, 1.0, 0.0) FROM memories_fts "
        "WHERE memories_fts MATCH ? AND rowid BETWEEN ? AND ?",
        (f"body : ({' OR '.join(kept)})", *rid_range))]


def test_summed_scores_are_fts5s_bm25_bit_for_bit() -> None:
    assert bm25_terms.exact_sums()
    conn = _fts(1500)
    seen: list[str] = []
    try:
        rng = random.Random(3)
        checked = ties = 0
        for _ in range(400):
            kept = rng.choices(UNITS, k=rng.randint(1, 8))  # duplicates too: two phrases
            rid_range = rng.choice(((1, 1800), (200, 1100), (1, 1)))
            want = ranged_scores(conn, kept, 100_000, rid_range)  # FTS5's ORDER BY
            summed = bm25_terms.summed_list(conn, kept, rid_range, ("s", 1))
            assert summed is not None
            raw = _fts5(conn, kept, rid_range)
            assert summed[0].tolist() == [r for r, _ in raw], kept
            assert summed[1].tolist() == [s for _, s in raw], kept  # the very doubles
            got = range_list(conn, kept, rid_range, ("s", 1))
            assert got.ranked.tolist() == [r for r, _ in want], kept
            assert got.scores.tolist() == [s for _, s in want], kept
            ties += len(want) - len({s for _, s in want})
            checked += 1
        assert checked == 400 and ties > 10_000
        # every unit is kept now: a list of kept units asks FTS5 nothing
        def trace(_cursor: Any, sql: str, _bindings: Any) -> bool:
            seen.append(sql)
            return True

        conn.exec_trace = trace
        again = range_list(conn, UNITS[:6], (1, 1800), ("s", 1))
        conn.exec_trace = None
        assert not seen
        assert again.ranked.tolist() == [r for r, _ in ranged_scores(
            conn, UNITS[:6], 100_000, (1, 1800))]
    finally:
        conn.close()


def test_no_stamp_keeps_nothing_and_a_new_stamp_drops_everything() -> None:
    conn = _fts(300)
    try:
        assert bm25_terms.summed_list(conn, ['"lake"'], (1, 400), None) is None
        before = bm25_terms.summed_list(conn, ['"lake"', '"tent"'], (1, 400), ("s", 1))
        assert before is not None
        conn.execute("INSERT INTO memories_fts(rowid, body, scope) VALUES(9999, 'lake', 's')")
        after = bm25_terms.summed_list(conn, ['"lake"', '"tent"'], (1, 400), ("s", 2))
        assert after is not None
        raw = _fts5(conn, ['"lake"', '"tent"'], (1, 400))
        assert after[1].tolist() == [s for _, s in raw]
        assert after[1].tolist() != before[1].tolist()  # IDFs moved: the old list was dropped
    finally:
        conn.close()


def test_kept_lists_stay_within_their_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = _fts(1200)
    try:
        monkeypatch.setattr(bm25_terms, "CACHE_BYTES", 100_000)
        rng = random.Random(8)
        for _ in range(60):
            kept = rng.sample(UNITS, 3)
            summed = bm25_terms.summed_list(conn, kept, (1, 1500), ("s", 1))
            assert summed is not None
            assert summed[1].tolist() == [s for _, s in _fts5(conn, kept, (1, 1500))]
            held = bm25_terms._kept[conn]
            assert held.size <= 100_000
            assert held.size == sum(r.nbytes + t.nbytes for r, t in held.lists.values())
        # the most recently used units stay, the least recently used went
        assert set(list(held.lists)[-3:]) == {((1, 1500), u) for u in kept}
        assert len(held.lists) < len(UNITS) - 1
    finally:
        conn.close()


EMB = HashingEmbedder(64)
RARE = [f"zx{c}{d}" for c in "abcdefgh" for d in "klmn"]
QUERIES = ["camping trip by the lake", "cold night in the tent", "bread and fish for the boat",
           "aurora stars at night", "kite training in the rain", "zxak zxbl camping",
           "lake zxcm zxdn", "trainer hike"]


def _open(path: Path) -> SqliteStore:
    return SqliteStore(path, EMB, recall=replace(
        SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0, lexical_floor=-1.0))


@pytest.fixture
async def large(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    made = _open(tmp_path / "large.db")
    rng = random.Random(5)
    texts = []
    for _ in range(2400):
        words = rng.choices(WORDS, k=rng.randint(2, 9))
        if rng.random() < 0.4:
            words += rng.sample(RARE, 2)
        texts.append(" ".join(words))
    texts += texts[:300]
    await made.remember_many([RememberRequest(agent_id="a", type=MemoryType.SEMANTIC,
                                              content=t) for t in texts])
    try:
        yield made
    finally:
        await made.aclose()


async def _answers(store: SqliteStore) -> list[list[tuple[str, str]]]:
    got = []
    for q in QUERIES:
        for k in (5, 30):
            resp = await store.recall(RecallRequest(agent_id="a", query=q, k=k))
            got.append([(h.id, repr(h.relevance)) for h in resp.results])
    return got


async def _same_either_way(store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's recalls with kept lists (twice: cold, then warm) are those without."""
    kept = [await _answers(store), await _answers(store)]
    with monkeypatch.context() as m:
        m.setattr(fts_lists, "summed_list", lambda *_: None)
        fresh = await _answers(store)
    assert kept[0] == fresh and kept[1] == fresh
    assert any(fresh)


@pytest.mark.anyio
async def test_recalls_are_the_same_and_every_write_drops_the_kept_lists(
        large: SqliteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = large._db._conn
    await _same_either_way(large, monkeypatch)
    assert bm25_terms._kept[conn].lists  # long lists were summed from kept units

    def stamp() -> Any:
        return bm25_terms._kept[conn].stamp

    seen = [stamp()]
    # a write: new rows holding the queries' words move every IDF and the average length
    made = await large.remember_many([RememberRequest(
        agent_id="a", type=MemoryType.SEMANTIC, content=f"camping lake night {w} {w}")
        for w in WORDS])
    await _same_either_way(large, monkeypatch)
    seen.append(stamp())
    # a forget, soft and hard
    await large.forget(ForgetRequest(agent_id="a", ids=[made[0].id]))
    await _same_either_way(large, monkeypatch)
    seen.append(stamp())
    await large.forget(ForgetRequest(agent_id="a", ids=[made[1].id], hard_delete=True))
    await _same_either_way(large, monkeypatch)
    seen.append(stamp())
    # an update of content
    await large.update(UpdateRequest(agent_id="a", id=made[2].id,
                                     content="tent tent tent kite aurora"))
    await _same_either_way(large, monkeypatch)
    seen.append(stamp())
    # another connection's commit
    other = _open(Path(large._db.path))
    try:
        await other.remember_many([RememberRequest(
            agent_id="a", type=MemoryType.SEMANTIC, content=f"rain boat {w}") for w in WORDS])
    finally:
        await other.aclose()
    await _same_either_way(large, monkeypatch)
    seen.append(stamp())
    assert len(set(seen)) == len(seen), seen
