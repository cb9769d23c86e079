"""A recall's BM25 lists ordered by numpy rank exactly as FTS5's ``ORDER BY bm25`` did.

``store.sqlite.fts_lists`` reads a ranged MATCH's rows unsorted and orders them itself
(score, then row id), and builds the feedback round's list by array lookups. A user relies on
the ranking being the one FTS5 gives: any drift in the order of tied scores, or in a fused
score, would silently change what a recall returns. Checked here on a real FTS5 index whose
rows repeat (equal scores everywhere), against FTS5's own sort of the same MATCH, and on a
real SqliteStore: the same answers either way, and a long list issues no SQL sort.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.sqlite import SqliteStore, fts_lists
from memorywire.store.sqlite.feedback import fused_scores
from memorywire.store.sqlite.fts_lists import fused_ranking, range_list, ranged_scores
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

WORDS = ["lake", "wanaka", "camping", "trip", "aurora", "night", "cold", "tent", "boat",
         "fish", "stars", "hike", "rain", "bread", "kite", "train", "training", "trainer"]


def _fts(rows: int) -> apsw.Connection:
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE memories_fts USING fts5(body, scope, content='', "
                 "contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2')")
    rng = random.Random(11)
    texts = [" ".join(rng.choices(WORDS, k=rng.randint(1, 14))) for _ in range(rows)]
    texts += texts[:60]  # identical rows: equal scores, so the tie order is tested too
    order = list(range(1, len(texts) + 1))
    rng.shuffle(order)  # rows inserted out of row-id order
    for rid in order:
        conn.execute("INSERT INTO memories_fts(rowid, body, scope) VALUES(?, ?, 's')",
                     (rid, texts[rid - 1]))
    return conn


def test_numpy_order_is_fts5_order_scores_and_ties() -> None:
    conn = _fts(500)
    try:
        units = [f'"{w}"' for w in WORDS] + ['"train"*', '"camp"*']
        checked = ties = 0
        for size in (1, 2, 3):
            for kept in itertools.combinations(units, size):
                for rid_range in ((1, 560), (40, 300)):
                    want = ranged_scores(conn, list(kept), 100_000, rid_range)
                    got = range_list(conn, list(kept), rid_range)
                    assert got.ranked.tolist() == [r for r, _ in want], kept
                    # the very doubles FTS5 computed, not near ones
                    assert got.scores.tolist() == [s for _, s in want], kept
                    ties += len(want) - len({s for _, s in want})
                    checked += 1
        assert checked > 500 and ties > 1000
        empty = range_list(conn, ['"absent"'], (1, 560))
        assert len(empty) == 0 and empty.ranked.tolist() == []
    finally:
        conn.close()


def test_fused_ranking_is_fused_scores() -> None:
    """The same list as ``fused_scores`` (whose agreement with FTS5's own MATCH of the
    union is ``test_feedback_fusion``'s), rows of no round and empty rounds included."""
    conn = _fts(400)
    try:
        units = [f'"{w}"' for w in WORDS]
        rid_range = (1, 460)
        checked = 0
        for q, n in itertools.product(range(0, 3), range(0, 3)):
            for start in range(0, len(units) - q - n, 2):
                query, added = units[start:start + q], units[start + q:start + q + n]
                first = ranged_scores(conn, query, 100_000, rid_range)
                more = ranged_scores(conn, added, 100_000, rid_range)
                fast = fused_ranking(range_list(conn, query, rid_range),
                                     range_list(conn, added, rid_range)).tolist()
                assert fast == list(fused_scores(first, more)), (query, added)
                checked += 1
        assert checked > 40
    finally:
        conn.close()


def test_score_of_reads_missing_rows_as_zero() -> None:
    conn = _fts(100)
    try:
        got = range_list(conn, ['"kite"'], (1, 160))
        want = dict(ranged_scores(conn, ['"kite"'], 100_000, (1, 160)))
        asked = np.array([0, *want, 10_000], dtype=np.int64)
        assert got.score_of(asked).tolist() == [0.0, *want.values(), 0.0]
    finally:
        conn.close()


EMB = HashingEmbedder(64)
RARE = [f"zx{c}{d}" for c in "abcdefgh" for d in "klmn"]
QUERIES = ["camping trip by the lake", "cold night in the tent", "bread and fish for the boat",
           "aurora stars at night", "kite training in the rain", "zxak zxbl camping",
           "lake zxcm zxdn", "trainer hike", "glacier summit camping"]


async def _store(path: Path, rows: int) -> SqliteStore:
    made = SqliteStore(path, EMB, recall=replace(
        SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0, lexical_floor=-1.0))
    rng = random.Random(5)
    texts = []
    for _ in range(rows):
        words = rng.choices(WORDS, k=rng.randint(2, 9))
        if rng.random() < 0.4:  # rare words, two to a row: the feedback round's bridges
            words += rng.sample(RARE[:8], 2) if rng.random() < 0.5 else rng.sample(RARE, 2)
        texts.append(" ".join(words))
    texts += texts[:rows // 8]  # repeated rows: tied scores
    # a topic's rows share a rare word that other rows hold too: the feedback round's bridge
    texts += [f"glacier summit camping qbridge {w}" for w in WORDS[:12]]
    texts += [f"qbridge {w} {v}" for w, v in zip(WORDS[:20], reversed(WORDS), strict=False)]
    rng.shuffle(texts)
    await made.remember_many([RememberRequest(agent_id="a", type=MemoryType.SEMANTIC,
                                              content=t) for t in texts])
    return made


def _trace(store: SqliteStore, seen: list[str]) -> None:
    conn = store._db._conn
    assert conn is not None

    def trace(_cursor: Any, sql: str, _bindings: Any) -> bool:
        seen.append(sql)
        return True

    conn.exec_trace = trace


@pytest.fixture
async def large(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    made = await _store(tmp_path / "large.db", 2400)
    try:
        yield made
    finally:
        await made.aclose()


@pytest.mark.anyio
async def test_long_lists_are_ordered_by_numpy_with_the_same_answers(
        large: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a real store, every recall answers the same whichever path orders its lists, and
    with the default threshold a long list issues no SQL sort (the old path's did)."""
    # the kept unit lists (bm25_terms) read fewer statements: test_bm25_terms checks them
    monkeypatch.setattr(fts_lists, "summed_list", lambda *_: None)
    answers: dict[int, list[list[tuple[str, str]]]] = {}
    lists: dict[int, list[str]] = {}
    for threshold in (10**9, fts_lists.NUMPY_MIN_ROWS):
        monkeypatch.setattr(fts_lists, "NUMPY_MIN_ROWS", threshold)
        seen: list[str] = []
        _trace(large, seen)
        got = []
        for q in QUERIES:
            for k in (5, 10, 30):
                resp = await large.recall(RecallRequest(agent_id="a", query=q, k=k))
                got.append([(h.id, repr(h.relevance)) for h in resp.results])
        large._db._conn.exec_trace = None  # type: ignore[union-attr]
        answers[threshold] = got
        lists[threshold] = [s for s in seen if "bm25(" in s]
    assert answers[10**9] == answers[fts_lists.NUMPY_MIN_ROWS]
    assert any(answers[10**9])
    old, new = lists[10**9], lists[fts_lists.NUMPY_MIN_ROWS]
    assert old and all("ORDER BY" in s for s in old)
    unsorted = [s for s in new if "ORDER BY" not in s]
    # the long lists (the common words' questions) went unsorted, the short ones did not
    assert len(new) == len(old) and 0 < len(unsorted) < len(new)
    # some recalls ran the feedback round (a second list): its fusion is compared too
    assert len(new) > 3 * len(QUERIES)


@pytest.mark.anyio
async def test_short_lists_keep_sqlites_sort(tmp_path: Path) -> None:
    """A small scope's lists stay below ``NUMPY_MIN_ROWS``: SQLite sorts them, as before."""
    small = await _store(tmp_path / "small.db", 200)
    try:
        seen: list[str] = []
        _trace(small, seen)
        resp = await small.recall(RecallRequest(agent_id="a", query=QUERIES[0], k=10))
        small._db._conn.exec_trace = None  # type: ignore[union-attr]
    finally:
        await small.aclose()
    assert resp.results
    lists = [s for s in seen if "bm25(" in s]
    assert lists and all("ORDER BY" in s for s in lists), lists
