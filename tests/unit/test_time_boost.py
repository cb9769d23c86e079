"""Memories of the time a question names rank higher: the rule, and the router passing it on."""

from __future__ import annotations

import pytest

from memorywire.core.clock import FakeClock
from memorywire.core.time_expressions import TimeWindow
from memorywire.embed.hashing import HashingEmbedder
from memorywire.recall.time_boost import event_time, reference_time, time_ranked
from memorywire.router import MemoryRouter
from memorywire.store.memory import InMemoryStore
from memorywire.wire.models import MemoryType, RecallHit, RecallRequest, RememberRequest

DAY = 86_400_000
NOW = 1_700_000_000_000  # Tuesday 14 November 2023, 22:13 UTC


def _hit(id: str, when: int) -> RecallHit:
    return RecallHit(id=id, type=MemoryType.EPISODIC, content=id, score=1.0, created_at=when)


def _ids(hits: list[RecallHit]) -> list[str]:
    return [h.id for h in hits]


WINDOW = (TimeWindow(100, 200, "then"),)


def test_in_window_memories_move_up_in_the_store_order() -> None:
    hits = [_hit("a", 10), _hit("b", 150), _hit("c", 20), _hit("d", 160)]
    assert _ids(time_ranked(hits, WINDOW)) == ["b", "d", "a", "c"]


def test_order_is_kept_when_no_memory_or_every_memory_is_in_the_window() -> None:
    none_in = [_hit("a", 10), _hit("b", 20)]
    all_in = [_hit("a", 110), _hit("b", 120)]
    assert _ids(time_ranked(none_in, WINDOW)) == ["a", "b"]
    assert _ids(time_ranked(all_in, WINDOW)) == ["a", "b"]
    assert _ids(time_ranked(none_in, ())) == ["a", "b"]


def test_the_boost_is_soft_a_memory_far_down_the_list_stays_below() -> None:
    hits = [_hit(f"x{i}", 10) for i in range(80)] + [_hit("late", 150)]
    assert _ids(time_ranked(hits, WINDOW))[0] == "x0"


def test_event_time_then_valid_from_then_stored_at() -> None:
    stored = RecallHit(id="s", type=MemoryType.EPISODIC, content="x", score=1.0, created_at=5)
    valid = stored.model_copy(update={"valid_from": 7})
    typed = RecallHit(id="t", type=MemoryType.EPISODIC, content="x", score=1.0, created_at=5,
                      metadata={"event_time": 9})
    assert (event_time(stored), event_time(valid), event_time(typed)) == (5, 7, 9)


def test_the_time_of_asking_defaults_to_as_of_then_now() -> None:
    req = RecallRequest(agent_id="a", query="q")
    assert reference_time(req, NOW) == NOW
    assert reference_time(req.model_copy(update={"as_of": 3}), NOW) == 3
    assert reference_time(req.model_copy(update={"as_of": 3, "asked_at": 4}), NOW) == 4


@pytest.mark.anyio
async def test_router_passes_the_time_of_asking_to_its_children() -> None:
    clock = FakeClock(NOW)
    router = MemoryRouter([InMemoryStore(embedder=HashingEmbedder(), clock=clock, name=n)
                           for n in ("one", "two")])
    for mid, text, back in (("sat", "Bought a necklace at the market", 3),  # Saturday
                            ("old", "My aunt gave me the necklace I got for my birthday", 60)):
        await router.remember(RememberRequest(agent_id="a", type=MemoryType.EPISODIC,
                                              content=text, id=mid, valid_from=NOW - back * DAY))
    req = RecallRequest(agent_id="a", query="Who gave me the necklace I got last Saturday?",
                        min_relevance=0)
    far = await router.recall(req.model_copy(update={"asked_at": NOW + 400 * DAY}))
    assert _ids(far.results) == ["old", "sat"]
    asked = await router.recall(req.model_copy(update={"asked_at": NOW}))
    assert _ids(asked.results) == ["sat", "old"]
