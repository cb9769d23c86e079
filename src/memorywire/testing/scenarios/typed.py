"""Scenarios about typed memory fields (v0.1) and the recall ``where`` filter.

Typed fields are kept under their own metadata keys, so every store that keeps metadata keeps
them; ``where`` is evaluated by each store (natively in SQL, or by the shared row rule), and
these scenarios pin that every store answers the same.
"""

from __future__ import annotations

from typing import Any

from memorywire.errors import MemorywireError
from memorywire.store.base import Capability, ListQuery, MemoryStore
from memorywire.testing.harness import Harness, Scenario, rem, scenario
from memorywire.wire.models import MemoryType, RecallRequest

__all__ = ["SCENARIOS"]

C = Capability
EMO = MemoryType.EMOTIONAL
EPI = MemoryType.EPISODIC
DAY = 86_400_000
T0 = 1_780_000_000_000


def _refused(exc: BaseException, name: str) -> bool:
    return isinstance(exc, MemorywireError | ValueError) and name in str(exc)


async def _ids(store: MemoryStore, query: str, where: dict[str, Any]) -> set[str]:
    res = await store.recall(RecallRequest(agent_id="ag", query=query, k=20, min_relevance=0,
                                           where=where))
    return {h.id for h in res.results}


async def typed_fields_round_trip(h: Harness, store: MemoryStore) -> None:
    """Typed fields written on remember come back as fields on get, list and recall hits; a
    value out of range is refused naming the field, in the field or in its metadata spelling."""
    await store.remember(rem("ag", "Frustrated by the late train again", id="e1", type=EMO,
                             valence=-0.7, arousal=0.6, sentiment="negative",
                             emotion="frustration", target="the train"))
    got = await store.get("ag", "e1")
    assert got is not None
    want = {"valence": -0.7, "arousal": 0.6, "sentiment": "negative",
            "emotion": "frustration", "target": "the train"}
    doc = got.model_dump()
    assert {k: doc.get(k) for k in want} == want, f"get lost typed fields: {doc}"
    listed = await store.list(ListQuery(agent_id="ag"))
    assert [r.model_dump().get("valence") for r in listed] == [-0.7], f"list: {listed}"
    res = await store.recall(RecallRequest(agent_id="ag", query="late train", k=5,
                                           min_relevance=0))
    hit = next((x for x in res.results if x.id == "e1"), None)
    assert hit is not None, "recall missed the memory"
    assert {k: hit.model_dump().get(k) for k in want} == want, f"hit: {hit.model_dump()}"
    for bad in ({"valence": 5}, {"metadata": {"valence": 5}}):
        try:
            await store.remember(rem("ag", "Too much", id="bad", type=EMO, **bad))
        except (MemorywireError, ValueError) as exc:
            assert _refused(exc, "valence"), f"refusal does not name valence: {exc}"
        else:
            raise AssertionError(f"{bad} was stored")
    assert await store.get("ag", "bad") is None


async def where_filters_by_valence(h: Harness, store: MemoryStore) -> None:
    """``where: {valence: {lt: 0}}`` returns only emotional memories holding a negative
    valence; a free-form ``metadata.valence`` on a semantic memory is not a typed field."""
    for mid, valence, sentiment in (("sad", -0.8, "negative"), ("meh", -0.1, "mixed"),
                                    ("glad", 0.6, "positive")):
        await store.remember(rem("ag", f"Feeling about the meeting: {mid}", id=mid, type=EMO,
                                 valence=valence, sentiment=sentiment))
    await store.remember(rem("ag", "Feeling about the meeting: none", id="plain", type=EMO))
    await store.remember(rem("ag", "Feeling about the meeting: a fact", id="fact",
                             metadata={"valence": -0.9}))
    q = "feeling about the meeting"
    assert await _ids(store, q, {"valence": {"lt": 0}}) == {"sad", "meh"}
    assert await _ids(store, q, {"valence": {"gte": -0.1, "lte": 0.6}}) == {"meh", "glad"}
    assert await _ids(store, q, {"sentiment": {"in": ["positive", "mixed"]}}) == {"meh", "glad"}
    assert await _ids(store, q, {"valence": {"lt": 0}, "sentiment": {"eq": "negative"}}) \
        == {"sad"}


async def where_filters_events_by_time(h: Harness, store: MemoryStore) -> None:
    """``where: {event_time: {gte: T1, lte: T2}}`` returns the episodic events between two
    dates (inclusive), whenever they were stored; ``participants: {contains}`` names one."""
    for n in range(4):
        await store.remember(rem("ag", f"Team offsite day {n}", id=f"d{n}", type=EPI,
                                 event_time=T0 + n * DAY, location="Lisbon",
                                 participants=["ana", "bo"] if n % 2 else ["cy"]))
    await store.remember(rem("ag", "Team offsite planning", id="undated", type=EPI))
    got = await store.get("ag", "d1")
    assert got is not None and got.model_dump().get("participants") == ["ana", "bo"]
    q = "team offsite"
    assert await _ids(store, q, {"event_time": {"gte": T0 + DAY, "lte": T0 + 2 * DAY}}) \
        == {"d1", "d2"}
    assert await _ids(store, q, {"event_time": {"gt": T0 + 2 * DAY}}) == {"d3"}
    assert await _ids(store, q, {"participants": {"contains": "bo"}}) == {"d1", "d3"}
    assert await _ids(store, q, {"location": {"eq": "Lisbon"},
                                 "event_time": {"lt": T0 + DAY}}) == {"d0"}


_s = scenario

SCENARIOS: list[Scenario] = [
    _s(typed_fields_round_trip, C.EMOTIONAL),
    _s(where_filters_by_valence, C.EMOTIONAL, C.SEMANTIC),
    _s(where_filters_events_by_time, C.EPISODIC),
]
