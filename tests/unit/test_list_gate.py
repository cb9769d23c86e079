"""SqliteStore's default list gate: the best hit decides "anything relevant", a low-cosine list
is still relevant when one of its best vector hits shares two query words, and rows admitted
only as the tail are not counted as recalled (so ``no_recall_in_days`` is unchanged)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from memorywire.core.clock import DAY_MS, FakeClock
from memorywire.core.scoring import hybrid_rank
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import ExpireRequest, RecallRequest

from .test_sqlite_store import DictEmbedder, req

pytestmark = pytest.mark.anyio

#: Cosine 0.25 to the question: below every floor, as a conversational turn often is.
TURN = "I repainted the bedroom walls a light grey last spring."
QUESTION = "What color did I repaint my bedroom walls?"
OFF_TOPIC = "How do volcanoes form on the ocean floor?"
EMB = DictEmbedder({
    QUESTION: [1.0, 0.0, 0.0],
    OFF_TOPIC: [0.0, 0.0, 1.0],
    TURN: [0.25, 0.97, 0.0],
    "The walls of the old castle are thick.": [0.2, 0.98, 0.0],  # one shared word
    "Remember to water the tomatoes.": [0.0, 0.95, 0.3],  # cosine 0.3 to OFF_TOPIC, no word
    "The ocean was cold in June.": [0.0, 0.96, 0.28],  # cosine 0.28 to OFF_TOPIC, one word
})


def test_agreement_is_asked_only_when_nothing_clears_the_floors() -> None:
    asked: list[Sequence[str]] = []

    def agree(ids: Sequence[str]) -> bool:
        asked.append(ids)
        return True

    strong = hybrid_rank({"a": 0.5, "b": 0.3}, ["a", "b"], [], k=5, floor=0.36,
                         lexical_floor=0.36, tail_gap=0.3, agreement=agree)
    assert [(s.id, s.core) for s in strong] == [("a", True), ("b", False)]
    assert asked == []
    weak = hybrid_rank({"a": 0.25, "b": 0.1}, ["a", "b"], [], k=5, floor=0.36,
                       lexical_floor=0.36, tail_gap=0.3, agreement=agree)
    assert [(s.id, s.core) for s in weak] == [("a", False), ("b", False)]
    assert asked == [["a", "b"]]
    assert hybrid_rank({"a": 0.25}, ["a"], [], k=5, floor=0.36, lexical_floor=0.36,
                       tail_gap=0.3, agreement=lambda ids: False) == []


async def test_a_low_cosine_turn_sharing_two_words_is_found_off_topic_stays_empty(
        tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "g.db", embedder=EMB)  # the defaults
    try:
        await store.remember_many([req("a", t, id=f"m{i}") for i, t in enumerate(EMB.vectors)
                                   if t not in (QUESTION, OFF_TOPIC)])
        got = await store.recall(RecallRequest(agent_id="a", query=QUESTION, k=2))
        assert got.results[0].content == TURN
        assert (await store.recall(RecallRequest(agent_id="a", query=OFF_TOPIC, k=5))
                ).results == []
        # The per-row floor of earlier releases refuses the turn.
        plain = SqliteStore(tmp_path / "p.db", embedder=EMB,
                            recall=replace(SqliteStore.DEFAULT_RECALL, tail_gap=None))
        try:
            await plain.remember_many([req("a", TURN)])
            assert (await plain.recall(RecallRequest(agent_id="a", query=QUESTION, k=2))
                    ).results == []
        finally:
            await plain.aclose()
    finally:
        await store.aclose()


async def test_rows_returned_only_as_the_tail_are_not_counted_as_recalled(
        tmp_path: Path) -> None:
    clock = FakeClock()
    q = "Which users have food allergies?"
    emb = DictEmbedder({q: [1.0, 0.0, 0.0], "Alice is allergic to peanuts.": [0.8, 0.6, 0.0],
                        "Bob likes jazz.": [0.2, 0.0, 0.98]})
    store = SqliteStore(tmp_path / "e.db", embedder=emb, clock=clock)
    try:
        await store.remember_many([req("a", "Alice is allergic to peanuts.", id="alice"),
                                   req("a", "Bob likes jazz.", id="bob")])
        clock.advance(20 * DAY_MS)
        got = await store.recall(RecallRequest(agent_id="a", query=q, k=5))
        assert [h.id for h in got.results] == ["alice", "bob"]  # bob: the tail
        clock.advance(5 * DAY_MS)
        resp = await store.expire(ExpireRequest.model_validate(
            {"agent_id": "a", "policy": {"no_recall_in_days": 10}}))
        assert resp.matched_count == 1
        assert await store.get("a", "alice") is not None
        assert await store.get("a", "bob") is None
    finally:
        await store.aclose()
