"""Scenarios about a record's lifecycle that every backend must answer identically.

``merge_same_everywhere`` pins the whole result of a merge (content, metadata union, links,
confidence, ``merged_into``) to exact values, so any two backends that pass it give the same
result on the same inputs. ``merged_into`` is read through the store's optional
``merged_into(agent_id, id, user_id=None)``; a store without that reader skips that check.
"""

from __future__ import annotations

from typing import Any

from memorywire.errors import MemorywireError
from memorywire.store.base import Capability, ListQuery, MemoryStore, UpdateRequest
from memorywire.testing.harness import Harness, Scenario, rem, scenario
from memorywire.wire.models import (
    ExpireAction,
    ExpirePolicy,
    ExpireRequest,
    ForgetRequest,
    MemoryType,
    MergeRequest,
    MergeStrategy,
)

__all__ = ["SCENARIOS"]

C = Capability


async def _merged_into(store: MemoryStore, agent: str, id: str) -> Any:
    reader = getattr(store, "merged_into", None)
    return "unreadable" if reader is None else await reader(agent, id)


async def _seed_graph(h: Harness, store: MemoryStore) -> None:
    """Five memories, oldest first: x, y, then a (links x), b (links y), c (links b)."""
    plan: list[tuple[str, str, float, dict[str, Any]]] = [
        ("x", "The analytical engine used punched cards", 1.0, {}),
        ("y", "Victorian London had gas street lamps", 1.0, {}),
        ("a", "Ada Lovelace wrote the first program", 0.6, {"topic": "math", "links": ["x"]}),
        ("b", "Ada Lovelace was the first programmer", 0.9,
         {"era": "victorian", "topic": "computing", "links": ["y", "a"]}),
        ("c", "Charles Babbage designed the engine", 0.7, {"links": ["b"]}),
    ]
    for mid, text, conf, meta in plan:
        await store.remember(rem("ag", text, id=mid, confidence=conf, metadata=meta))
        h.clock.advance(1000)


async def merge_same_everywhere(h: Harness, store: MemoryStore) -> None:
    """merge_content of b into a gives the same content, metadata, links, confidence,
    derivation (a ``derived_from`` edge to b) and merged_into on every backend; links to b
    now point at a."""
    await _seed_graph(h, store)
    res = await store.merge(MergeRequest(agent_id="ag", canonical="a", duplicates=["b"],
                                         strategy=MergeStrategy.MERGE_CONTENT))
    assert (res.canonical, res.merged_count) == ("a", 1)
    got = await store.get("ag", "a")
    assert got is not None
    assert got.content == ("Ada Lovelace wrote the first program\n"
                           "Ada Lovelace was the first programmer")
    assert got.metadata == {"topic": "computing", "era": "victorian",
                            "links": ["x", "y", {"id": "b", "type": "derived_from"}]}, \
        f"survivor metadata: {got.metadata}"
    assert got.confidence == 0.9
    other = await store.get("ag", "c")
    assert other is not None and (other.metadata or {}).get("links") == ["a"], \
        "a link to the absorbed row was not moved to the survivor"
    assert await store.get("ag", "b") is None
    assert await _merged_into(store, "ag", "b") in ("a", "unreadable")
    assert await _merged_into(store, "ag", "c") in (None, "unreadable")
    assert await _merged_into(store, "someone-else", "b") in (None, "unreadable")
    if C.GRAPH in store.capabilities:
        near = await store.neighbours("ag", ["a"], 1)  # type: ignore[attr-defined]
        assert set(near.get("a", {})) == {"x", "y", "c"}, f"graph after merge: {near}"


async def merge_keep_canonical_links(h: Harness, store: MemoryStore) -> None:
    """keep_canonical keeps a's content, metadata and confidence, yet takes b's links."""
    await _seed_graph(h, store)
    await store.merge(MergeRequest(agent_id="ag", canonical="a", duplicates=["b"]))
    got = await store.get("ag", "a")
    assert got is not None and got.content == "Ada Lovelace wrote the first program"
    assert got.metadata == {"topic": "math", "links": ["x", "y"]}, f"{got.metadata}"
    assert got.confidence == 0.6
    assert await _merged_into(store, "ag", "b") in ("a", "unreadable")


async def remember_revives_a_dead_id(h: Harness, store: MemoryStore) -> None:
    """Re-remembering a forgotten, archived, expired or merged-away id is a new write: it is
    acknowledged with a new stored_at and is readable afterwards (never silently lost)."""
    text = "The spare key is under the blue pot"
    first = await store.remember(rem("ag", text, id="k1"))
    await store.forget(ForgetRequest(agent_id="ag", ids=["k1"]))
    h.clock.advance(1000)
    again = await store.remember(rem("ag", text, id="k1"))
    assert again.stored_at > first.stored_at, "a forgotten id answered with its old timestamp"
    got = await store.get("ag", "k1")
    assert got is not None and got.content == text, "the acknowledged write stayed deleted"

    await store.expire(ExpireRequest(agent_id="ag", policy=ExpirePolicy(type=MemoryType.SEMANTIC),
                                      action=ExpireAction.ARCHIVE))
    assert await store.get("ag", "k1") is None
    h.clock.advance(1000)
    await store.remember(rem("ag", "The spare key moved to the shed", id="k1"))
    got = await store.get("ag", "k1")
    assert got is not None and got.content == "The spare key moved to the shed"

    soon = h.clock.now_ms() + 500
    await store.remember(rem("ag", "Gate code is 4411", id="k2", expires_at=soon))
    h.clock.advance(1000)
    assert await store.get("ag", "k2") is None
    await store.remember(rem("ag", "Gate code is 4411", id="k2"))
    assert await store.get("ag", "k2") is not None, "an expired id swallowed a new write"

    await store.remember(rem("ag", "Gate code was changed", id="k3"))
    await store.merge(MergeRequest(agent_id="ag", canonical="k2", duplicates=["k3"]))
    await store.remember(rem("ag", "Gate code was changed", id="k3"))
    got = await store.get("ag", "k3")
    assert got is not None, "a merged-away id swallowed a new write"
    assert await _merged_into(store, "ag", "k3") in (None, "unreadable")
    ids = [m.id for m in await store.list(ListQuery(agent_id="ag"))]
    assert sorted(ids) == ["k1", "k2", "k3"], ids


async def ids_are_scoped_by_agent(h: Harness, store: MemoryStore) -> None:
    """Two agents hold the same id independently; another agent's id answers exactly like an
    id nobody holds ("not found" and "not yours" are one answer)."""
    a = await store.remember(rem("agent-a", "Agent A parks on level 2", id="shared"))
    b = await store.remember(rem("agent-b", "Agent B parks on level 5", id="shared"))
    assert (a.id, b.id) == ("shared", "shared")
    got_a, got_b = await store.get("agent-a", "shared"), await store.get("agent-b", "shared")
    assert got_a is not None and got_a.content == "Agent A parks on level 2"
    assert got_b is not None and got_b.content == "Agent B parks on level 5"
    await store.forget(ForgetRequest(agent_id="agent-b", ids=["shared"]))
    assert await store.get("agent-b", "shared") is None
    assert await store.get("agent-a", "shared") is not None, "B's forget reached A's memory"

    async def answers(agent: str, mid: str) -> list[str]:
        """What each id operation says about ``mid`` to ``agent`` (kinds, not texts)."""
        out = [repr(await store.get(agent, mid)),
               repr(await _merged_into(store, agent, mid))]
        for op in (
            lambda: store.update(UpdateRequest(agent_id=agent, id=mid, confidence=0.5)),
            lambda: store.merge(MergeRequest(agent_id=agent, canonical=mid, duplicates=["z"])),
        ):
            try:
                await op()
                out.append("ok")
            except MemorywireError as exc:
                out.append(exc.code)
        forgot = await store.forget(ForgetRequest(agent_id=agent, ids=[mid]))
        out.append(repr(forgot.forgotten_ids))
        return out

    assert await answers("agent-c", "shared") == await answers("agent-c", "nobody-has-this")
    first = await store.remember(rem("agent-c", "Agent C parks on level 9", id="shared"))
    assert first.id == "shared", "an id another agent holds was refused"
    got_a = await store.get("agent-a", "shared")
    assert got_a is not None and got_a.content == "Agent A parks on level 2"


_s = scenario

SCENARIOS: list[Scenario] = [
    _s(merge_same_everywhere, C.SEMANTIC),
    _s(merge_keep_canonical_links, C.SEMANTIC),
    _s(remember_revives_a_dead_id, C.SEMANTIC),
    _s(ids_are_scoped_by_agent, C.SEMANTIC),
]
