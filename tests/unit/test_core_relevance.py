"""The calibrated relevance on recall hits and the per-call ``min_relevance``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memorywire.core.relevance import DEFAULT_MIN_RELEVANCE, relevance
from memorywire.core.scoring import hybrid_rank
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio


def test_relevance_is_monotone_in_cosine_and_half_at_the_default_floor() -> None:
    values = [relevance(c / 10, lexical=False) for c in range(-10, 11)]
    assert values == sorted(values) and values[0] >= 0.0 and values[-1] <= 1.0
    assert relevance(0.36, lexical=False) == pytest.approx(0.5)
    assert relevance(0.20, lexical=False) == pytest.approx(0.1, abs=1e-3)
    assert relevance(0.52, lexical=False) == pytest.approx(0.9, abs=1e-3)
    # a full-text match is credited as the SQLite lexical floor (0.32) is
    assert relevance(0.32, lexical=True) == pytest.approx(0.5)


def test_min_relevance_replaces_the_floors_and_hits_carry_relevance() -> None:
    cos = {"a": 0.6, "b": 0.3, "c": 0.1}
    default = hybrid_rank(cos, ["a", "b", "c"], [], k=5, floor=0.36, lexical_floor=0.36)
    assert [s.id for s in default] == ["a"]
    assert default[0].relevance == pytest.approx(relevance(0.6, lexical=False))
    everything = hybrid_rank(cos, ["a", "b", "c"], [], k=5, floor=0.36, lexical_floor=0.36,
                             min_relevance=0.0)
    assert [s.id for s in everything] == ["a", "b", "c"]
    stricter = hybrid_rank(cos, ["a", "b", "c"], [], k=5, floor=-1.0, lexical_floor=-1.0,
                           min_relevance=0.99)
    assert stricter == []
    # at the default, min_relevance keeps exactly what the default floors keep
    same = hybrid_rank(cos, ["a", "b", "c"], ["b"], k=5, floor=0.36, lexical_floor=0.32,
                       min_relevance=DEFAULT_MIN_RELEVANCE)
    assert [s.id for s in same] == [s.id for s in hybrid_rank(
        cos, ["a", "b", "c"], ["b"], k=5, floor=0.36, lexical_floor=0.32)]


async def test_sqlite_recall_reports_relevance_and_honours_min_relevance(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.db", HashingEmbedder(64))
    try:
        for text in ("Carol is vegetarian", "the lighthouse keeper retired in May"):
            await store.remember(RememberRequest.model_validate(
                {"agent_id": "a", "type": "semantic", "content": text}))
        hits = (await store.recall(RecallRequest(agent_id="a", query="Carol is vegetarian",
                                                 min_relevance=0.0, k=5))).results
        assert len(hits) == 2
        assert all(h.relevance is not None and 0.0 <= h.relevance <= 1.0 for h in hits)
        assert hits[0].content == "Carol is vegetarian" and hits[0].relevance > 0.9
        strict = await store.recall(RecallRequest(
            agent_id="a", query="Carol is vegetarian", min_relevance=0.999999))
        assert strict.results == []
    finally:
        await store.aclose()


def test_min_relevance_outside_0_1_is_refused() -> None:
    with pytest.raises(ValueError, match="min_relevance"):
        RecallRequest(agent_id="a", query="q", min_relevance=1.5)


def test_tail_gap_lets_the_best_hit_decide_and_keeps_the_tail() -> None:
    cos = {"a": 0.5, "b": 0.25, "c": 0.05}
    rows = ["a", "b", "c"]
    per_row = hybrid_rank(cos, rows, [], k=5, floor=0.36, lexical_floor=0.36)
    assert [s.id for s in per_row] == ["a"]
    listed = hybrid_rank(cos, rows, [], k=5, floor=0.36, lexical_floor=0.36, tail_gap=0.2)
    assert [s.id for s in listed] == ["a", "b"]  # c is more than 0.2 below the floor
    # nothing clears the floor: "nothing relevant", however close the tail
    weak = {"a": 0.35, "b": 0.34}
    assert hybrid_rank(weak, ["a", "b"], [], k=5, floor=0.36, lexical_floor=0.36,
                       tail_gap=1.0) == []


def test_lexical_weight_lets_the_full_text_list_outrank_the_vector_list() -> None:
    cos = {"v": 0.5, "w": 0.45}
    plain = hybrid_rank(cos, ["v", "w"], ["w", "v"], k=2, floor=-1.0, lexical_floor=-1.0)
    assert [s.id for s in plain] == ["v", "w"]  # tied RRF: the closer vector wins
    weighted = hybrid_rank(cos, ["v", "w"], ["w", "v"], k=2, floor=-1.0, lexical_floor=-1.0,
                           lexical_weight=1.5)
    assert [s.id for s in weighted] == ["w", "v"]


def test_a_lexical_weight_that_is_not_positive_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match="lexical_weight must be > 0"):
        SqliteStore(tmp_path / "w.db", HashingEmbedder(16),
                    recall=replace(SqliteStore.DEFAULT_RECALL, lexical_weight=0.0))
