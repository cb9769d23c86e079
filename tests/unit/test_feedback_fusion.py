"""The feedback round's split MATCH ranks exactly as one MATCH of the query and its new words.

SqliteStore scores the query's words once (first round) and the added words alone (second
round) and adds the two BM25 scores per row (``feedback.fused_scores``) instead of asking
FTS5 for the union. A user relies on the ranking being the one FTS5 gives for the union:
any drift would silently change what a recall returns.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import replace
from pathlib import Path

import apsw
import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.sqlite import SqliteStore
from memorywire.store.sqlite import search as sqlite_search
from memorywire.store.sqlite.feedback import fused_scores
from memorywire.store.sqlite.search import ranged_scores
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

WORDS = ["lake", "wanaka", "camping", "trip", "aurora", "night", "cold", "tent", "boat",
         "fish", "stars", "hike", "rain", "bread", "kite", "train"]


def _fts(rows: int) -> apsw.Connection:
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE memories_fts USING fts5(body, scope, content='', "
                 "contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2')")
    rng = random.Random(7)
    texts = [" ".join(rng.choices(WORDS, k=rng.randint(2, 12))) for _ in range(rows)]
    texts += texts[:20]  # identical rows: equal scores, so the tie order is tested too
    for rid, text in enumerate(texts, start=1):
        conn.execute("INSERT INTO memories_fts(rowid, body, scope) VALUES(?, ?, 's')",
                     (rid, text))
    return conn


def test_split_scores_rank_like_one_match_of_both_word_sets() -> None:
    conn = _fts(300)
    try:
        rid_range = (1, 400)
        units = [f'"{w}"' for w in WORDS]
        checked = 0
        for q, n in itertools.product(range(1, 4), range(1, 4)):
            for start in range(0, len(WORDS) - q - n, 3):
                query, added = units[start:start + q], units[start + q:start + q + n]
                union = [rid for rid, _ in ranged_scores(conn, [*query, *added], 10_000,
                                                         rid_range)]
                fused = list(fused_scores(ranged_scores(conn, query, 10_000, rid_range),
                                          ranged_scores(conn, added, 10_000, rid_range)))
                assert fused == union, (query, added)
                checked += 1
        assert checked > 20
        # No query words left (all too common): the added words' own ranking.
        alone = ranged_scores(conn, units[:2], 10_000, rid_range)
        assert list(fused_scores([], alone)) == [rid for rid, _ in alone]
    finally:
        conn.close()


QUESTION = "What did we see on the camping trip?"
TEXTS = ["The camping trip took us to Lake Wanaka for a week.",
         "At Wanaka we watched the aurora australis every single night.",
         "Camping by Wanaka was cold, but the trip was worth it.",
         *[f"I really like {a} and {b} near the lake." for a, b in [
             ("tea", "cake"), ("jazz", "blues"), ("chess", "go"), ("rain", "fog"),
             ("maps", "atlases"), ("cats", "dogs"), ("salsa", "tango"), ("bread", "jam")]]]


@pytest.mark.anyio
async def test_a_recall_with_feedback_returns_what_the_union_match_returns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SqliteStore(tmp_path / "f.db", HashingEmbedder(64), FakeClock(),
                        recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                       lexical_floor=-1.0))
    try:
        await store.remember_many([
            RememberRequest(agent_id="a", type=MemoryType.EPISODIC, content=t, id=f"m{i}")
            for i, t in enumerate(TEXTS)])
        req = RecallRequest(agent_id="a", query=QUESTION, k=8)
        split = [(h.id, h.score) for h in (await store.recall(req)).results]
        # Out of range, both rounds MATCH with the scope token: the union in one MATCH.
        monkeypatch.setattr(sqlite_search, "in_range", lambda *_: False)
        union = [(h.id, h.score) for h in (await store.recall(req)).results]
        assert "m1" in [i for i, _ in split]  # the hop only feedback finds
        assert split == union
    finally:
        await store.aclose()
