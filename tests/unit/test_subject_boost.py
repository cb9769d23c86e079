"""The subject boost's rule, and what it costs a store whose memories name no subject."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memorywire.recall.plan import Search, recall_in_time
from memorywire.recall.rules import UNRANKED
from memorywire.recall.subject_boost import (
    SUBJECT_POOL,
    SUBJECT_WEIGHT,
    names_in,
    needs_pool,
    subject_ranked,
    subject_words,
)
from memorywire.wire.models import (
    Fusion,
    MemoryType,
    RecallHit,
    RecallRequest,
    RecallResponse,
)


def _hit(id: str, **metadata: object) -> RecallHit:
    return RecallHit(id=id, type=MemoryType.EPISODIC, content=id, score=1.0, created_at=1,
                     metadata=dict(metadata))


def _ids(hits: list[RecallHit]) -> list[str]:
    return [h.id for h in hits]


CAROLINE = frozenset({"caroline"})
#: The plan with only the subject boost on.
SUBJECTS = replace(UNRANKED, subject_weight=SUBJECT_WEIGHT)


def test_the_named_subjects_memories_move_up_in_the_store_order() -> None:
    hits = [_hit("m1", speaker="Melanie"), _hit("c1", speaker="Caroline"),
            _hit("m2", speaker="Melanie"), _hit("c2", entity_name="Caroline Smith")]
    assert _ids(subject_ranked(hits, CAROLINE)) == ["c1", "c2", "m1", "m2"]


def test_order_is_kept_when_no_memory_or_every_memory_has_the_named_subject() -> None:
    none_in = [_hit("a", speaker="Melanie"), _hit("b")]
    all_in = [_hit("a", speaker="Caroline"), _hit("b", speaker="caroline")]
    assert _ids(subject_ranked(none_in, CAROLINE)) == ["a", "b"]
    assert _ids(subject_ranked(all_in, CAROLINE)) == ["a", "b"]
    assert _ids(subject_ranked(none_in + all_in, CAROLINE, weight=0)) == ["a", "b", "a", "b"]


def test_the_boost_is_soft_a_memory_far_down_the_list_stays_below() -> None:
    hits = [_hit(f"x{i}", speaker="Melanie") for i in range(90)] + [_hit("c", speaker="Caroline")]
    assert _ids(subject_ranked(hits, CAROLINE))[0] == "x0"


def test_subject_words_read_only_string_values_of_the_two_keys() -> None:
    assert subject_words(_hit("a", speaker="Caroline", entity_name="Dr. Ann Lee")) == {
        "caroline", "dr", "ann", "lee"}
    assert subject_words(_hit("b", speaker=["Caroline"], author="Bob")) == frozenset()


def test_names_are_the_capitalised_words_and_none_when_the_boost_is_off() -> None:
    assert names_in("What did Caroline research in May?") == CAROLINE
    assert names_in("What did Caroline research?", weight=0) == frozenset()


def test_a_longer_list_is_asked_for_only_when_memories_carry_subjects() -> None:
    assert needs_pool(CAROLINE, [_hit("a", speaker="Melanie")], 5)
    assert not needs_pool(CAROLINE, [_hit("a", topic="x")], 5)
    assert not needs_pool(frozenset(), [_hit("a", speaker="Melanie")], 5)
    assert not needs_pool(CAROLINE, [_hit("a", speaker="Melanie")], SUBJECT_POOL)


@pytest.mark.anyio
async def test_a_store_without_subjects_is_searched_once_with_the_callers_k() -> None:
    asked: list[int] = []

    def search_with(hits: list[RecallHit]) -> Search:
        async def search(req: RecallRequest) -> RecallResponse:
            asked.append(req.k)
            return RecallResponse(results=hits[:req.k], fusion_used=Fusion.RRF,
                                  stores_queried=["s"], latency_ms=0)
        return search

    req = RecallRequest(agent_id="a", query="What did Caroline research?", k=2)
    plain = [_hit("a"), _hit("b"), _hit("c")]
    await recall_in_time(req, search_with(plain), 10, settings=SUBJECTS)
    assert asked == [2]
    asked.clear()
    spoken = [_hit("m", speaker="Melanie"), _hit("n", speaker="Melanie"),
              _hit("c", speaker="Caroline")]
    resp = await recall_in_time(req, search_with(spoken), 10, settings=SUBJECTS)
    assert asked == [2, SUBJECT_POOL]
    assert _ids(resp.results) == ["c", "m"]
    asked.clear()
    # a store that passes no weight (mem0, Letta, Cognee) gets no boost and no second search
    resp = await recall_in_time(req, search_with(spoken), 10)
    assert asked == [2]
    assert _ids(resp.results) == ["m", "n"]
