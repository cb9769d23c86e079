"""Scenarios about typed graph edges (``links``, v0.1) and ``hops``.

Edges are kept with the memory, so every store that keeps metadata keeps them; only the hop
boost needs the ``graph`` capability, and a store without it must refuse ``hops > 0``.
"""

from __future__ import annotations

from memorywire.errors import MemorywireError
from memorywire.store.base import Capability, MemoryStore
from memorywire.store.graph import linked
from memorywire.testing.harness import Harness, Scenario, rem, scenario
from memorywire.wire.models import Link, MergeRequest, RecallRequest

__all__ = ["SCENARIOS"]

C = Capability


def _pairs(links: list[Link] | None) -> list[tuple[str, str]]:
    return [(ln.id, ln.type) for ln in links or ()]


async def links_round_trip(h: Harness, store: MemoryStore) -> None:
    """Typed edges written with ``links`` come back on get, list and recall hits; the
    deprecated ``metadata.links`` reads as ``related`` edges; a bad edge type is refused."""
    await store.remember(rem("ag", "The kettle is descaled monthly", id="src"))
    await store.remember(rem("ag", "Descale the kettle with citric acid", id="how",
                             links=[{"id": "src", "type": "derived_from"}, {"id": "old"}]))
    await store.remember(rem("ag", "Kettle scale builds up fast", id="legacy",
                             metadata={"links": ["src"]}))
    got = await store.get("ag", "how")
    assert got is not None
    assert _pairs(got.links) == [("src", "derived_from"), ("old", "related")], f"{got.links}"
    legacy = await store.get("ag", "legacy")
    assert legacy is not None
    assert _pairs(legacy.links) == [("src", "related")], f"{legacy.links}"
    hits = await store.recall(RecallRequest(agent_id="ag", query="descale the kettle", k=5))
    by_id = {x.id: x for x in hits.results}
    assert "how" in by_id and _pairs(by_id["how"].links) == _pairs(got.links), \
        f"recall hit lost its links: {by_id.get('how')}"
    try:
        await store.remember(rem("ag", "Bad edge", id="bad",
                                 links=[{"id": "src", "type": "Not A Type"}]))
    except (MemorywireError, ValueError):
        pass
    else:
        raise AssertionError("an edge type outside the grammar was accepted")


async def linked_finds_edges_by_type(h: Harness, store: MemoryStore) -> None:
    """``store.graph.linked`` answers "what was derived from X" and "what supersedes X"."""
    await store.remember(rem("ag", "Office wifi password is hunter2", id="v1"))
    await store.remember(rem("ag", "Office wifi password is hunter3", id="v2",
                             links=[{"id": "v1", "type": "supersedes"}]))
    await store.remember(rem("ag", "Guests use the wifi password", id="note",
                             links=[{"id": "v1", "type": "derived_from"}]))
    assert [r.id for r in await linked(store, "ag", "v1", "supersedes")] == ["v2"]
    assert [r.id for r in await linked(store, "ag", "v1", "derived_from")] == ["note"]
    assert await linked(store, "other-agent", "v1", "supersedes") == []


async def merge_keeps_typed_edges(h: Harness, store: MemoryStore) -> None:
    """A merge moves typed edges to the survivor with their types intact."""
    await store.remember(rem("ag", "Source report on rainfall", id="r"))
    await store.remember(rem("ag", "Rainfall was high in May", id="a"))
    await store.remember(rem("ag", "May had high rainfall", id="b",
                             links=[{"id": "r", "type": "derived_from"}]))
    await store.remember(rem("ag", "Flooding followed the rain", id="c",
                             links=[{"id": "b", "type": "derived_from"}]))
    res = await store.merge(MergeRequest(agent_id="ag", canonical="a", duplicates=["b"]))
    assert res.merged_count == 1
    survivor = await store.get("ag", "a")
    assert survivor is not None and _pairs(survivor.links) == [("r", "derived_from")], \
        f"survivor edges: {survivor and survivor.links}"
    other = await store.get("ag", "c")
    assert other is not None and _pairs(other.links) == [("a", "derived_from")], \
        f"an edge to the absorbed row was not moved: {other and other.links}"


async def hops_boost_or_refuse(h: Harness, store: MemoryStore) -> None:
    """With ``graph``, hops=1 boosts a hit whose linked memory is also a hit (named in
    ``supporting``); without it, hops > 0 is refused with capability_missing."""
    await store.remember(rem("ag", "Tea is brewed at ninety degrees", id="t1"))
    await store.remember(rem("ag", "Green tea is brewed cooler", id="t2",
                             links=[{"id": "t1"}]))
    await store.remember(rem("ag", "Tea leaves are steeped three minutes", id="t3"))
    req = RecallRequest(agent_id="ag", query="how is tea brewed", k=3, hops=1)
    if C.GRAPH not in store.capabilities:
        try:
            await store.recall(req)
        except MemorywireError as exc:
            assert exc.code == "capability_missing", exc.code
            return
        raise AssertionError("a store without graph accepted hops=1")
    flat = {x.id: x for x in (await store.recall(req.model_copy(update={"hops": 0}))).results}
    hopped = {x.id: x for x in (await store.recall(req)).results}
    if not {"t1", "t2"} <= set(flat):
        return  # the embedder did not find both; nothing to boost
    assert hopped["t2"].supporting == ["t1"], f"supporting: {hopped['t2'].supporting}"
    assert hopped["t1"].supporting == ["t2"], "edges are read as undirected"
    assert hopped["t2"].score > flat["t2"].score, "hops=1 did not boost a linked hit"
    assert flat["t2"].supporting == [], "hops=0 reported graph support"


_s = scenario

SCENARIOS: list[Scenario] = [
    _s(links_round_trip, C.SEMANTIC),
    _s(linked_finds_edges_by_type, C.SEMANTIC),
    _s(merge_keeps_typed_edges, C.SEMANTIC),
    _s(hops_boost_or_refuse, C.SEMANTIC),
]
