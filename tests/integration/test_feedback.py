"""Pseudo-relevance feedback in SqliteStore: a second full-text round finds the hop.

The question names the camping trip; the turn that answers it names only the place the trip
went to, which the first round's best hits (the two camping turns) both hold. With feedback
the answer enters the top k; with ``feedback_weight=0`` (the ablation) it does not. Vectors
are a hashing embedder's, so only shared words connect texts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.store.sqlite import SqliteStore
from memorywire.store.sqlite.feedback import FEEDBACK_WEIGHT, expansion_terms
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio

EMB = HashingEmbedder(64)
QUESTION = "What did we see on the camping trip?"
BRIDGE = "The camping trip took us to Lake Wanaka for a week."
BRIDGE2 = "Camping by Wanaka was cold, but the trip was worth it."
ANSWER = "At Wanaka we watched the aurora australis every single night."
FILLERS = [f"I really like {a} and {b}." for a, b in [
    ("tea", "cake"), ("jazz", "blues"), ("chess", "go"), ("rain", "fog"), ("maps", "atlases"),
    ("cats", "dogs"), ("salsa", "tango"), ("bread", "jam"), ("kites", "boats"),
    ("opera", "ballet"), ("trains", "trams"), ("poems", "songs")]]


async def _store(path: Path, feedback_weight: float = FEEDBACK_WEIGHT) -> SqliteStore:
    store = SqliteStore(path, EMB, FakeClock(),
                        recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                       lexical_floor=-1.0, feedback_weight=feedback_weight))
    texts = [BRIDGE, ANSWER, BRIDGE2, *FILLERS]
    await store.remember_many([
        RememberRequest(agent_id="a", type=MemoryType.EPISODIC, content=t, id=f"m{i}")
        for i, t in enumerate(texts)])
    return store


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[tuple[SqliteStore, SqliteStore]]:
    on = await _store(tmp_path / "on.db")
    off = await _store(tmp_path / "off.db", feedback_weight=0.0)
    try:
        yield on, off
    finally:
        await on.aclose()
        await off.aclose()


async def test_feedback_brings_the_second_hop_into_the_top_k(
        stores: tuple[SqliteStore, SqliteStore]) -> None:
    on, off = stores
    req = RecallRequest(agent_id="a", query=QUESTION, k=4)
    without = [h.id for h in (await off.recall(req)).results]
    with_feedback = (await on.recall(req)).results
    assert set(without[:2]) == {"m0", "m2"} and "m1" not in without
    assert {h.id for h in with_feedback[:2]} == {"m0", "m2"}
    assert "m1" in [h.id for h in with_feedback]
    assert next(h.content for h in with_feedback if h.id == "m1") == ANSWER


async def test_feedback_never_answers_an_unrelated_question(tmp_path: Path) -> None:
    """The default floors still decide "nothing relevant" from the first round alone."""
    store = SqliteStore(tmp_path / "d.db", EMB, FakeClock())
    await store.remember_many([
        RememberRequest(agent_id="a", type=MemoryType.EPISODIC, content=t, id=f"m{i}")
        for i, t in enumerate([BRIDGE, ANSWER, BRIDGE2, *FILLERS])])
    try:
        resp = await store.recall(RecallRequest(agent_id="a", query="quantum chromodynamics"))
        assert resp.results == []
    finally:
        await store.aclose()


def test_expansion_prefers_words_several_hits_share_then_rare_ones() -> None:
    rows = {"wanaka": 2, "aurora": 3, "lake": 40, "week": 400, "solo": 1}
    texts = ["lake wanaka week solo", "wanaka aurora week", "aurora lake"]

    def count(word: str, cap: int) -> int:
        return min(rows.get(word, 0), cap)

    # "week" is too common, "solo" is in one row only (nothing new to find), "camping" is
    # asked already; "wanaka" and "aurora" are in two hits each, "wanaka" is rarer.
    assert expansion_terms(count, "camping week", texts, terms=3, max_rows=50) == [
        "wanaka", "aurora", "lake"]
    assert expansion_terms(count, "camping", texts, terms=1, max_rows=50) == ["wanaka"]


async def test_negative_feedback_weight_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match="feedback_weight"):
        SqliteStore(tmp_path / "x.db", EMB,
                    recall=replace(SqliteStore.DEFAULT_RECALL, feedback_weight=-1.0))


async def test_a_query_without_content_words_ranks_by_vector_alone(tmp_path: Path) -> None:
    """Feedback expands the query's own words; a query of stop words only has none to expand,
    so its ranking is the vector ranking, with or without feedback (the scale benchmark's
    exactness pass relies on this)."""
    places = ["Lake Wanaka", "Mount Cook", "Milford Sound"]
    texts = [f"{name} camped near {places[i % 3]} with {friend} in {month}."
             for i, (name, friend, month) in enumerate(
                 (n, f, m) for n in ["Ada", "Bruno", "Chen", "Dara", "Emeka"]
                 for f in ["Farah", "Goran", "Hana"] for m in ["May", "June"])]
    ranked = []
    for weight in (FEEDBACK_WEIGHT, 0.0):
        store = SqliteStore(tmp_path / f"{weight}.db", EMB, FakeClock(),
                            recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                           lexical_floor=-1.0, feedback_weight=weight))
        await store.remember_many([
            RememberRequest(agent_id="a", type=MemoryType.EPISODIC, content=t, id=f"m{i}")
            for i, t in enumerate(texts)])
        hits = await store.recall(RecallRequest(agent_id="a", query="what was it about", k=10))
        ranked.append([h.id for h in hits.results])
        await store.aclose()
    assert ranked[0] == ranked[1]
