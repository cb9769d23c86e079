"""Truth over time on the embedded stores: supersession, chains, as_of, conflicts, forget."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memorywire.core.clock import FakeClock
from memorywire.core.contradiction import find_conflicts, judge
from memorywire.core.timeline import TIME_KEY, Validity, closing_patch, is_visible, validity_of
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import NotFound
from memorywire.router import MemoryRouter
from memorywire.store.base import Capability, MemoryStore
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import (
    ForgetRequest,
    MemoryType,
    RecallHit,
    RecallRequest,
    RememberRequest,
)

pytestmark = pytest.mark.anyio

KLM = "The user's favourite airline is KLM."
RYANAIR = "The user's favourite airline is Ryanair."
EASYJET = "The user's favourite airline is easyJet."


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryStore]:
    clock = FakeClock(1_000_000)
    s: MemoryStore = (InMemoryStore(embedder=HashingEmbedder(), clock=clock)
                      if request.param == "memory"
                      else SqliteStore(tmp_path / "t.db", embedder=HashingEmbedder(), clock=clock))
    s.clock = clock  # type: ignore[attr-defined]
    yield s
    await s.aclose()


async def _put(s: MemoryStore, text: str, **kw: object) -> str:
    s.clock.advance(1000)  # type: ignore[attr-defined]
    return (await s.remember(RememberRequest(agent_id="a", user_id="u", type=MemoryType.SEMANTIC,
                                             content=text, **kw))).id  # type: ignore[arg-type]


async def _ask(s: MemoryStore, **kw: object) -> list[str]:
    resp = await s.recall(RecallRequest(agent_id="a", user_id="u", k=5,
                                        query="favourite airline",
                                        **kw))  # type: ignore[arg-type]
    return [str(h.content) for h in resp.results]


async def test_superseded_memory_leaves_default_recall(store: MemoryStore) -> None:
    old = await _put(store, KLM)
    new = await _put(store, RYANAIR, supersedes=[old])
    assert await _ask(store) == [RYANAIR]
    shown = await store.recall(RecallRequest(agent_id="a", user_id="u", query="KLM airline",
                                             include_superseded=True))
    assert [h.content for h in shown.results] == [RYANAIR, KLM]  # current first
    assert shown.results[1].superseded_by == new
    assert shown.results[1].valid_to is not None
    assert "_validity" not in (shown.results[1].metadata or {})
    assert [(x.id, x.type) for x in shown.results[0].links or []] == [(old, "supersedes")]


async def test_chain_and_as_of(store: MemoryStore) -> None:
    a = await _put(store, KLM, valid_from=100)
    b = await _put(store, RYANAIR, supersedes=[a], valid_from=2_000_000)
    await _put(store, EASYJET, supersedes=[b], valid_from=3_000_000)
    store.clock.advance(5_000_000)  # type: ignore[attr-defined]
    assert await _ask(store) == [EASYJET]
    assert await _ask(store, as_of=2_500_000) == [RYANAIR]
    # KLM held until Ryanair's valid_from (valid time; Ryanair was recorded before this)
    assert await _ask(store, as_of=1_001_500) == [KLM]
    assert await _ask(store, as_of=50) == []


async def test_as_of_ranks_what_held_then_above_a_weaker_unrelated_hit(
        store: MemoryStore) -> None:
    """Issue 17 regression: the value that held at ``as_of`` and was superseded *later* was
    ranked as stale, behind any weaker hit never superseded (here the user's hotel); with the
    list gate keeping such hits, ``as_of`` answered the neighbour."""
    hotel = "The user's favourite hotel chain is Hilton."
    klm = await _put(store, KLM)
    await _put(store, hotel)
    await _put(store, RYANAIR, supersedes=[klm])
    then = 1_002_500  # after KLM and the hotel, before Ryanair
    shown = await _ask(store, as_of=then)
    assert shown[0] == KLM, shown
    assert RYANAIR not in shown


async def test_forgetting_the_newer_fact_does_not_reopen_the_older(store: MemoryStore) -> None:
    old = await _put(store, KLM)
    new = await _put(store, RYANAIR, supersedes=[old])
    await store.forget(ForgetRequest(agent_id="a", ids=[new]))
    assert await _ask(store) == []
    assert await _ask(store, include_superseded=True) == [KLM]


async def test_superseding_an_unknown_id_is_refused_before_writing(store: MemoryStore) -> None:
    with pytest.raises(NotFound, match="nope"):
        await _put(store, RYANAIR, supersedes=["nope"])
    assert await _ask(store, include_superseded=True) == []


async def test_remember_reports_the_contradicted_memory(store: MemoryStore) -> None:
    old = await _put(store, KLM)
    await _put(store, "The user lives in Berlin.")
    resp = await store.remember(RememberRequest(agent_id="a", user_id="u",
                                                type=MemoryType.SEMANTIC, content=RYANAIR))
    assert [c.id for c in resp.conflicts or []] == [old]
    assert resp.conflicts is not None and "klm → ryanair" in resp.conflicts[0].why
    assert set(await _ask(store)) >= {RYANAIR, KLM}  # reported, not acted on (default)


def test_detector_separates_changed_values_from_neighbours() -> None:
    assert judge("The user has 2 cats.", "The user has 3 cats.") is not None
    assert judge("The user eats meat.", "The user never eats meat.") is not None
    assert judge(KLM, "The user's favourite hotel is Hilton.") is None
    assert judge(KLM, KLM) is None
    assert [c.id for c in find_conflicts(RYANAIR, [("x", KLM), ("y", "The user is 30.")])] \
        == ["x"]


class _NoTime(InMemoryStore):
    """A real store that does not declare (nor honour) time: what a third-party child is."""

    @property
    def capabilities(self):  # type: ignore[no-untyped-def]
        return super().capabilities - {Capability.TIME}

    async def remember_many(self, reqs):  # type: ignore[no-untyped-def]
        return await self._ops.remember_many(reqs)

    async def recall(self, req: RecallRequest):  # type: ignore[no-untyped-def]
        return await self._search(req)


async def test_router_applies_time_around_a_child_without_it() -> None:
    child = _NoTime(embedder=HashingEmbedder(), clock=FakeClock(), name="plain")
    router = MemoryRouter([child])
    await router.remember(RememberRequest(agent_id="a", type=MemoryType.SEMANTIC, content=KLM,
                                          id="old"))
    resp = await router.remember(RememberRequest(agent_id="a", type=MemoryType.SEMANTIC,
                                                 content=RYANAIR, supersedes=["old"]))
    assert resp.conflicts is None  # named in supersedes: not a conflict
    # the child alone would still answer both
    raw = await child.recall(RecallRequest(agent_id="a", query="favourite airline"))
    assert {h.content for h in raw.results} == {KLM, RYANAIR}
    got = await router.recall(RecallRequest(agent_id="a", query="favourite airline"))
    assert [h.content for h in got.results] == [RYANAIR]
    shown = await router.recall(RecallRequest(agent_id="a", query="favourite airline",
                                              include_superseded=True))
    assert [(h.content, h.superseded_by) for h in shown.results] == [(RYANAIR, None),
                                                                     (KLM, resp.id)]


@pytest.mark.parametrize(("old", "new"), [
    # frame: one short lower-case span differs
    ("The user's job title is principal architect.", "The user's job title is team lead."),
    # change cue: the smaller subject sits inside the larger one
    ("The user trains at McFit gym.", "The user changed to Basic-Fit gym."),
    ("The user's favourite hotel chain is Hilton.", "The user switched to Marriott hotels."),
    # slot classes: preference and airline words, job words
    ("The user's favourite airline is KLM.", "The user now prefers to fly Ryanair."),
    ("The user works at Siemens.", "The user has a new job at Spotify."),
    # the object of the sentence is the value, unless the other side names it
    ("The user's job title is junior engineer.", "The user was promoted to director."),
])
def test_detector_catches_paraphrased_updates(old: str, new: str) -> None:
    assert judge(old, new) is not None


@pytest.mark.parametrize(("old", "new"), [
    ("The user's job title is director.", "The user has a new job at Spotify."),
    ("The user's favourite airline is KLM.", "The user now loves sushi most."),
    ("The user's favourite food is sushi.", "The user's favourite colour is blue."),
    ("The user has 2 cats.", "The user has 2 dogs."),
    ("The user lives in Berlin.", "The user lives in Berlin with two cats."),
])
def test_detector_leaves_neighbours_and_added_detail_alone(old: str, new: str) -> None:
    assert judge(old, new) is None


def test_same_value_under_another_word_is_another_slot() -> None:
    assert judge("The user's neighbour name is Anna.", "The user's neighbour colour is Anna.") \
        is None


async def test_sqlite_scan_reads_the_newest_current_memories_of_the_scope(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan is bounded; what it keeps must be the newest memories (a fact stated after
    the bound's worth of older ones is still caught), never another user's, never history."""
    import memorywire.store.timeline as timeline

    monkeypatch.setattr(timeline, "CONFLICT_SCAN_LIMIT", 3)
    s = SqliteStore(tmp_path / "t.db", embedder=HashingEmbedder(), clock=FakeClock(1_000_000))
    s.clock = s._clock  # type: ignore[attr-defined]
    try:
        for text in ("The user is allergic to nuts.", "The user's sister is Anna.",
                     "The user's dentist is Dr Meyer."):
            await _put(s, text)
        klm = await _put(s, KLM)
        await s.remember(RememberRequest(agent_id="a", user_id="other", content=EASYJET,
                                         type=MemoryType.SEMANTIC))
        resp = await s.remember(RememberRequest(agent_id="a", user_id="u", content=RYANAIR,
                                                type=MemoryType.SEMANTIC))
        assert [c.id for c in resp.conflicts or []] == [klm]
        later = await s.remember(RememberRequest(agent_id="a", user_id="u", content=EASYJET,
                                                 type=MemoryType.SEMANTIC, supersedes=[resp.id]))
        assert [c.id for c in later.conflicts or []] == [klm]  # the superseded one is history
    finally:
        await s.aclose()


async def test_recall_fills_k_when_its_best_hits_are_superseded(store: MemoryStore) -> None:
    # The two best matches of the question are history: the store is asked again, deeper,
    # and the answer still holds k memories that are true now (RecallPlan's widening).
    # min_relevance=0 keeps every row (no floor), so only validity can cut the list.
    for n in range(3):
        await _put(store, f"The user's hobby number {n} is chess")
    old = [await _put(store, f"The user's favourite airline was {name}")
           for name in ("KLM", "Ryanair")]
    new = await _put(store, "The user's favourite airline is easyJet.", supersedes=old)
    resp = await store.recall(RecallRequest(agent_id="a", user_id="u", k=2, min_relevance=0.0,
                                            query="favourite airline was KLM Ryanair"))
    got = [h.id for h in resp.results]
    assert len(got) == 2
    assert new in got
    assert not set(got) & set(old)


def test_a_close_keeps_when_it_was_recorded_and_the_end_it_replaced() -> None:
    first = closing_patch({TIME_KEY: {"valid_to": 900}}, 100, "b", 500, known_from=700)
    assert first == {TIME_KEY: {"valid_from": 100, "valid_to": 500, "superseded_by": "b",
                                "closed_at": 700, "prior_valid_to": 900}}
    # A second writer closing it earlier keeps the first close's record: what was known
    # before any close stays what it was.
    second = closing_patch(first, 100, "c", 300, known_from=800)
    assert second[TIME_KEY]["valid_to"] == 300 and second[TIME_KEY]["closed_at"] == 700
    assert second[TIME_KEY]["prior_valid_to"] == 900
    legacy = closing_patch({TIME_KEY: {"superseded_by": "x", "valid_to": 400}}, 100, "c", 300,
                           known_from=800)
    assert "closed_at" not in legacy[TIME_KEY], "an old close of unknown time stays known"


def test_validity_as_known_at_a_record_time() -> None:
    v = validity_of({TIME_KEY: {"valid_to": 500, "superseded_by": "b", "closed_at": 700}}, 100)
    assert v.known_at(699) == Validity(100, None, None)
    assert v.known_at(700) is v
    assert Validity(100, 500, "b").known_at(0).superseded_by == "b", "no closed_at: known"


def _hit(created: int, **validity: object) -> RecallHit:
    return RecallHit(id="h", type=MemoryType.SEMANTIC, content="x", score=1.0,
                     created_at=created, metadata={TIME_KEY: validity} if validity else None)


@pytest.mark.parametrize(("hit", "ask", "seen"), [
    # recorded at 1000, valid from 100: as_of reads valid time, known_at record time
    (_hit(1000, valid_from=100), {"as_of": 500}, True),
    (_hit(1000, valid_from=100), {"known_at": 500}, False),
    (_hit(1000, valid_from=100), {"known_at": 1000, "as_of": 500}, True),
    (_hit(1000, valid_from=100), {"as_of": 50}, False),
    # a plain memory recorded at 1000 (valid from then)
    (_hit(1000), {"as_of": 999}, False),
    (_hit(1000), {"as_of": 1000}, True),
    (_hit(1000), {"known_at": 1500, "as_of": 999}, False),
    # closed at 500 by a memory recorded at 700
    (_hit(100, valid_to=500, superseded_by="b", closed_at=700), {"as_of": 600}, False),
    (_hit(100, valid_to=500, superseded_by="b", closed_at=700), {"known_at": 650,
                                                                  "as_of": 600}, True),
    (_hit(100, valid_to=500, superseded_by="b", closed_at=700), {"known_at": 650}, True),
    (_hit(100, valid_to=500, superseded_by="b", closed_at=700), {"known_at": 750}, False),
])
def test_visibility_by_valid_time_and_by_record_time(hit: RecallHit, ask: dict[str, int],
                                                      seen: bool) -> None:
    req = RecallRequest.model_validate({"agent_id": "a", "query": "q", **ask})
    assert is_visible(hit, req, 10_000) is seen
