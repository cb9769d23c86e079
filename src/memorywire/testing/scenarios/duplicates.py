"""Duplicates on write, identically on every backend: a repeat is answered with the stored
memory, ``allow_duplicate`` and a caller's own id store a copy and name the original, other
metadata is another memory, and near-duplicates are reported (those found by meaning alone,
where a store compares vectors, in ``tests/integration/test_near_duplicates.py``).

A store that does not declare the ``time`` capability is skipped (naming it): its writes do
not run the shared write path (``store.timeline``), which is where duplicates are found.
"""

from __future__ import annotations

from collections.abc import Sequence

from memorywire.store.base import Capability, ListQuery, MemoryStore
from memorywire.testing.harness import Harness, Scenario, rem, scenario
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest, RememberResponse

__all__ = ["SCENARIOS"]

C = Capability
PEANUTS = "The user is allergic to peanuts."


async def _ids(store: MemoryStore, user_id: str | None = None) -> list[str]:
    rows = await store.list(ListQuery(agent_id="ag", user_id=user_id, limit=100))
    return sorted(r.id for r in rows)


def _near(resp: RememberResponse) -> list[tuple[str, float]]:
    return [(n.id, n.similarity) for n in resp.near_duplicates or []]


async def _many(store: MemoryStore, reqs: Sequence[RememberRequest]) -> list[RememberResponse]:
    bulk = getattr(store, "remember_many", None)
    if bulk is None:
        return [await store.remember(r) for r in reqs]
    out: list[RememberResponse] = await bulk(list(reqs))
    return out


async def a_repeat_is_the_stored_memory(h: Harness, store: MemoryStore) -> None:
    """The same content again (other case and spacing) in the same scope is answered with
    the stored memory, ``deduplicated``, and nothing is written; another user or type is
    another scope."""
    h.require(store, C.TIME)
    first = await store.remember(rem("ag", PEANUTS, user_id="u"))
    assert first.deduplicated is None and first.near_duplicates is None
    h.clock.advance(1000)
    again = await store.remember(rem("ag", "the user  is allergic to PEANUTS.", user_id="u"))
    assert again.id == first.id and again.deduplicated is True, again
    assert again.stored_at == first.stored_at, "a repeat answers with the stored time"
    assert await _ids(store, "u") == [first.id], "a repeat was written"
    other_user = await store.remember(rem("ag", PEANUTS, user_id="v"))
    other_type = await store.remember(rem("ag", PEANUTS, user_id="u",
                                          type=MemoryType.EPISODIC))
    assert not other_user.deduplicated and other_user.id != first.id
    assert not other_type.deduplicated and other_type.id != first.id
    assert len(await _ids(store, "u")) == 2


async def asking_for_a_copy_stores_it(h: Harness, store: MemoryStore) -> None:
    """``allow_duplicate`` and a caller-chosen id are stored beside the memory they repeat,
    which ``near_duplicates`` names at similarity 1."""
    h.require(store, C.TIME)
    first = await store.remember(rem("ag", PEANUTS))
    copy = await store.remember(rem("ag", PEANUTS, allow_duplicate=True))
    assert copy.id != first.id and not copy.deduplicated
    assert _near(copy) == [(first.id, 1.0)], copy.near_duplicates
    named = await store.remember(rem("ag", PEANUTS, id="mine"))
    assert named.id == "mine" and not named.deduplicated
    assert {i for i, _ in _near(named)} == {first.id, copy.id}
    assert await _ids(store) == sorted([first.id, copy.id, "mine"])


async def other_metadata_is_another_memory(h: Harness, store: MemoryStore) -> None:
    """The same words with other metadata (a turn of another session) are stored and name
    the first; with the same metadata they are the first."""
    h.require(store, C.TIME)
    one = await store.remember(rem("ag", "Thanks, see you then!", metadata={"session": 1}))
    two = await store.remember(rem("ag", "Thanks, see you then!", metadata={"session": 2}))
    assert two.id != one.id and not two.deduplicated and _near(two) == [(one.id, 1.0)]
    again = await store.remember(rem("ag", "thanks, see you then!", metadata={"session": 2}))
    assert again.id == two.id and again.deduplicated is True


async def a_batch_writes_a_repeat_once(h: Harness, store: MemoryStore) -> None:
    """Two equal writes in one batch store one memory, and a write repeating a stored
    memory stores nothing; every answer names its memory, and the batch's other memories
    are found by their own words (each stored with its own vector)."""
    h.require(store, C.TIME)
    stored = await store.remember(rem("ag", "The user's cat is called Miso."))
    out = await _many(store, [rem("ag", PEANUTS), rem("ag", "the user's cat is called miso."),
                              rem("ag", "Lisbon is sunny in June."),
                              rem("ag", " the user is allergic to peanuts. ")])
    assert out[1].id == stored.id and out[1].deduplicated is True
    assert out[3].id == out[0].id and out[3].deduplicated is True
    assert not out[0].deduplicated and not out[2].deduplicated
    assert await _ids(store) == sorted([stored.id, out[0].id, out[2].id])
    for resp, query in ((out[0], "allergic to peanuts"), (out[2], "Lisbon sunny June")):
        hits = (await store.recall(RecallRequest(agent_id="ag", query=query, k=1,
                                                 min_relevance=0))).results
        assert [x.id for x in hits] == [resp.id], f"{query!r} found {hits}"


async def history_is_not_a_duplicate(h: Harness, store: MemoryStore) -> None:
    """A value a newer memory superseded is history: saying it again stores it anew."""
    h.require(store, C.TIME)
    old = await store.remember(rem("ag", "The user lives in Berlin."))
    h.clock.advance(1000)
    await store.remember(rem("ag", "The user lives in Paris.", supersedes=[old.id]))
    h.clock.advance(1000)
    back = await store.remember(rem("ag", "The user lives in Berlin."))
    assert back.id != old.id and not back.deduplicated


async def near_duplicates_are_reported(h: Harness, store: MemoryStore) -> None:
    """A write with the words of a memory but other punctuation is stored and names it (at
    its cosine where the store compares vectors); an unrelated memory is not named."""
    h.require(store, C.TIME)
    first = await store.remember(rem("ag", "The user likes green tea."))
    await store.remember(rem("ag", "The user's sister works as a dentist in Leeds."))
    near = await store.remember(rem("ag", "The user likes green tea!"))
    assert not near.deduplicated and near.id != first.id
    found = _near(near)
    assert [i for i, _ in found] == [first.id], near.near_duplicates
    assert 0.9 <= found[0][1] <= 1.0


SCENARIOS: list[Scenario] = [
    scenario(a_repeat_is_the_stored_memory, C.SEMANTIC, C.EPISODIC),
    scenario(asking_for_a_copy_stores_it, C.SEMANTIC),
    scenario(other_metadata_is_another_memory, C.SEMANTIC),
    scenario(a_batch_writes_a_repeat_once, C.SEMANTIC),
    scenario(history_is_not_a_duplicate, C.SEMANTIC),
    scenario(near_duplicates_are_reported, C.SEMANTIC),
]
