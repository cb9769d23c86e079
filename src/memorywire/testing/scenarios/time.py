"""Truth over time, identically on every backend: supersession, chains, ``as_of`` (valid
time) and ``known_at`` (record time), conflicts, the time of asking.

A store that does not declare the ``time`` capability is skipped (naming it): it would
store ``supersedes`` and ``as_of`` without acting on them. A router over such a store
applies the rules itself (``tests/unit/test_timeline.py``; this plugin may not import the
router).
"""

from __future__ import annotations

from memorywire.core.timeline import held_in_time
from memorywire.store.base import Capability, ListQuery, MemoryStore
from memorywire.testing.harness import Harness, Scenario, rem, scenario
from memorywire.wire.models import ForgetRequest, RecallRequest

__all__ = ["SCENARIOS"]

C = Capability
KLM = "The user's favourite airline is KLM"
RYANAIR = "The user's favourite airline is Ryanair"
EASYJET = "The user's favourite airline is easyJet"


async def _ask(store: MemoryStore, **kw: object) -> list[object]:
    resp = await store.recall(RecallRequest.model_validate(
        {"agent_id": "ag", "query": "favourite airline", "k": 5, **kw}))
    return [h.content for h in resp.results]


async def supersedes_hides_the_old_value(h: Harness, store: MemoryStore) -> None:
    """After B supersedes A, default recall shows B only; include_superseded shows A after B,
    with superseded_by and a closed validity."""
    h.require(store, C.TIME)
    await store.remember(rem("ag", KLM, id="a"))
    h.clock.advance(1000)
    await store.remember(rem("ag", RYANAIR, id="b", supersedes=["a"]))
    assert await _ask(store) == [RYANAIR], "a superseded memory is still recalled"
    both = (await store.recall(RecallRequest(agent_id="ag", query="KLM airline",
                                             include_superseded=True))).results
    assert [x.content for x in both] == [RYANAIR, KLM], "current value must rank first"
    assert both[1].superseded_by == "b" and both[1].valid_to is not None


async def chains_and_as_of(h: Harness, store: MemoryStore) -> None:
    """A→B→C: now is C; as_of a time inside B's interval is B; before anything was
    recorded is nothing."""
    h.require(store, C.TIME)
    t0 = h.clock.now_ms()
    await store.remember(rem("ag", KLM, id="a", valid_from=t0))
    h.clock.advance(10_000)
    await store.remember(rem("ag", RYANAIR, id="b", supersedes=["a"]))
    h.clock.advance(10_000)
    await store.remember(rem("ag", EASYJET, id="c", supersedes=["b"]))
    h.clock.advance(10_000)
    assert await _ask(store) == [EASYJET]
    assert await _ask(store, as_of=t0 + 15_000) == [RYANAIR]
    assert await _ask(store, as_of=t0 + 5_000) == [KLM]
    assert await _ask(store, as_of=t0 - 1) == []


async def as_of_finds_a_back_dated_fact(h: Harness, store: MemoryStore) -> None:
    """A fact recorded now that held from a year ago is what held half a year ago
    (``as_of``, valid time), though nobody knew it then (``known_at``, record time)."""
    h.require(store, C.TIME)
    now, day = h.clock.now_ms(), 86_400_000
    await store.remember(rem("ag", KLM, id="a", valid_from=now - 365 * day))
    assert await _ask(store, as_of=now - 180 * day) == [KLM], "as_of misses a back-dated fact"
    assert await _ask(store, as_of=now - 400 * day) == [], "before its validity"
    assert await _ask(store, known_at=now - 180 * day) == [], "it was not known then"
    assert await _ask(store, known_at=now, as_of=now - 180 * day) == [KLM]


async def list_in_time_reads_both_clocks(h: Harness, store: MemoryStore) -> None:
    """``list`` with ``as_of``/``known_at`` (the operation's rule,
    ``core.timeline.held_in_time``, over the store's ``list``) reads each record's validity
    and recording time as recall does: a back-dated fact is listed ``as_of`` a time inside its
    validity, not ``known_at`` a time before it was recorded; a superseded value is what was
    known before its successor was recorded."""
    h.require(store, C.TIME)
    now, day = h.clock.now_ms(), 86_400_000
    await store.remember(rem("ag", KLM, id="a", valid_from=now - 365 * day))
    h.clock.advance(1000)
    await store.remember(rem("ag", RYANAIR, id="b", supersedes=["a"]))
    rows = await store.list(ListQuery(agent_id="ag"))
    assert sorted(r.id for r in rows) == ["a", "b"], "list shows history too"

    def listed(as_of: int | None = None, known_at: int | None = None) -> list[str]:
        return sorted(r.id for r in rows
                      if held_in_time(r.metadata, r.created_at, as_of, known_at))

    assert listed(as_of=now - 180 * day) == ["a"], "as_of misses a back-dated fact"
    assert listed(as_of=now - 400 * day) == [], "before its validity"
    assert listed(known_at=now - 180 * day) == [], "it was not known then"
    assert listed(known_at=now - 180 * day, as_of=now - 180 * day) == []
    assert listed(known_at=now, as_of=now - 180 * day) == ["a"]
    assert listed(known_at=now) == ["a"], "its successor was not recorded yet"
    assert listed(known_at=now + 2000) == ["b"]
    assert listed(as_of=now + 2000) == ["b"]


async def known_at_reads_what_was_known_then(h: Harness, store: MemoryStore) -> None:
    """A superseded by B: ``as_of`` a time before B is A as known now; ``known_at`` that
    time is A too (B was not recorded); ``known_at`` before B but ``as_of`` after B's start
    is still A (what was believed then about later), and after B was recorded it is B."""
    h.require(store, C.TIME)
    t0 = h.clock.now_ms()
    await store.remember(rem("ag", KLM, id="a", valid_from=t0))
    h.clock.advance(10_000)
    await store.remember(rem("ag", RYANAIR, id="b", supersedes=["a"]))
    h.clock.advance(10_000)
    assert await _ask(store, as_of=t0 + 5_000) == [KLM]
    assert await _ask(store, as_of=t0 + 15_000) == [RYANAIR]
    assert await _ask(store, known_at=t0 + 5_000) == [KLM]
    assert await _ask(store, known_at=t0 + 5_000, as_of=t0 + 15_000) == [KLM], \
        "a supersession recorded later counted as known"
    assert await _ask(store, known_at=t0 + 15_000) == [RYANAIR]
    assert await _ask(store, known_at=t0 - 1) == []


async def forgetting_the_newer_keeps_the_older_closed(h: Harness, store: MemoryStore) -> None:
    """Forgetting B (which superseded A) does not make A current again."""
    h.require(store, C.TIME)
    await store.remember(rem("ag", KLM, id="a"))
    h.clock.advance(1000)
    await store.remember(rem("ag", RYANAIR, id="b", supersedes=["a"]))
    await store.forget(ForgetRequest(agent_id="ag", ids=["b"]))
    assert await _ask(store) == []
    assert await _ask(store, include_superseded=True) == [KLM]


async def remember_reports_conflicts(h: Harness, store: MemoryStore) -> None:
    """A write that changes a stored value names the old memory in ``conflicts`` and changes
    nothing (report only); an unrelated neighbour is not named."""
    h.require(store, C.TIME)
    await store.remember(rem("ag", KLM, id="a"))
    await store.remember(rem("ag", "The user's favourite hotel is the Hilton", id="h"))
    h.clock.advance(1000)
    resp = await store.remember(rem("ag", RYANAIR, id="b"))
    assert [c.id for c in resp.conflicts or []] == ["a"], f"conflicts: {resp.conflicts}"
    assert resp.conflicts is not None
    assert 0 < resp.conflicts[0].similarity <= 1 and "ryanair" in resp.conflicts[0].why
    assert set(await _ask(store)) >= {KLM, RYANAIR}


async def conflicts_skip_history_and_other_users(h: Harness, store: MemoryStore) -> None:
    """Only the writer's current memories are candidates: a value already superseded is
    history, and another user's memories are not this user's facts."""
    h.require(store, C.TIME)
    await store.remember(rem("ag", KLM, id="a", user_id="u1"))
    h.clock.advance(1000)
    await store.remember(rem("ag", RYANAIR, id="b", user_id="u1", supersedes=["a"]))
    await store.remember(rem("ag", KLM, id="x", user_id="u2"))
    h.clock.advance(1000)
    resp = await store.remember(rem("ag", EASYJET, id="c", user_id="u1"))
    assert [c.id for c in resp.conflicts or []] == ["b"], f"conflicts: {resp.conflicts}"


async def time_of_asking_ranks_that_time_higher(h: Harness, store: MemoryStore) -> None:
    """"yesterday" in the query, counted from ``asked_at``, ranks the memory of that day
    first, whichever of two memories it is; the text of the query still finds both."""
    h.require(store, C.TIME)
    t0 = h.clock.now_ms()
    day = 86_400_000
    await store.remember(rem("ag", "I cooked pasta for dinner", id="old",
                             valid_from=t0 - 40 * day))
    await store.remember(rem("ag", "I cooked soup for dinner", id="new", valid_from=t0 - day))

    async def first(asked_at: int | None) -> list[str]:
        resp = await store.recall(RecallRequest(
            agent_id="ag", query="What did I cook for dinner yesterday?", k=5,
            min_relevance=0, asked_at=asked_at))
        return [x.id for x in resp.results]

    assert await first(t0) == ["new", "old"], "yesterday (asked now) is the newer memory"
    assert await first(t0 - 39 * day) == ["old", "new"], "asked 39 days ago: the older one"
    assert await first(None) == ["new", "old"], "without asked_at the store's clock counts"


SCENARIOS: list[Scenario] = [
    scenario(supersedes_hides_the_old_value, C.SEMANTIC),
    scenario(chains_and_as_of, C.SEMANTIC),
    scenario(as_of_finds_a_back_dated_fact, C.SEMANTIC),
    scenario(known_at_reads_what_was_known_then, C.SEMANTIC),
    scenario(list_in_time_reads_both_clocks, C.SEMANTIC),
    scenario(forgetting_the_newer_keeps_the_older_closed, C.SEMANTIC),
    scenario(remember_reports_conflicts, C.SEMANTIC),
    scenario(conflicts_skip_history_and_other_users, C.SEMANTIC),
    scenario(time_of_asking_ranks_that_time_higher, C.SEMANTIC),
]
