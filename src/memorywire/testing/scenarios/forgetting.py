"""Forgetting that reaches what was derived: a cascade hard forget leaves nothing to read.

The cascade is computed the way ``memorywire forget --cascade`` computes it (every memory
reachable over ``derived_from`` edges, read through ``MemoryStore.list``), then sent as one
hard forget, so a store passes when its hard delete and its edges agree.
"""

from __future__ import annotations

from memorywire.core.provenance import descendants
from memorywire.store.base import Capability, ListQuery, MemoryStore
from memorywire.testing.harness import Harness, Scenario, rem, scenario
from memorywire.wire.models import ForgetRequest, Link, RecallRequest

__all__ = ["SCENARIOS"]


async def recall_after_forget_cascade_is_empty(h: Harness, store: MemoryStore) -> None:
    """A hard forget of a memory and everything derived from it (two levels) leaves no read
    (get, list, recall) returning any of their content; an unrelated memory stays."""
    derived = "derived_from"
    await store.remember(rem("ag", "The vault phrase is marmalade-8812", id="seed"))
    await store.remember(rem("ag", "Summary: vault phrase marmalade-8812", id="sum",
                             links=[Link(id="seed", type=derived)]))
    await store.remember(rem("ag", "Digest: marmalade-8812 and the rest", id="dig",
                             links=[Link(id="sum", type=derived)]))
    await store.remember(rem("ag", "The garden has three apple trees", id="other"))
    h.clock.advance(1000)
    live = await store.list(ListQuery(agent_id="ag", include_archived=True))
    ids = ["seed", *descendants(live, ["seed"])]
    assert sorted(ids) == ["dig", "seed", "sum"], f"derivation edges not kept: {ids}"
    out = await store.forget(ForgetRequest(agent_id="ag", ids=ids, hard_delete=True))
    assert sorted(out.forgotten_ids) == ["dig", "seed", "sum"], out.forgotten_ids
    for mid in ids:
        assert await store.get("ag", mid) is None, f"{mid} still readable"
    left = [m.id for m in await store.list(ListQuery(agent_id="ag", include_archived=True))]
    assert left == ["other"], left
    hits = await store.recall(RecallRequest(agent_id="ag", query="vault phrase marmalade-8812",
                                            k=10))
    leaked = [x.id for x in hits.results if "marmalade" in str(x.content)]
    assert not leaked, f"recall still returns forgotten content: {leaked}"


SCENARIOS: list[Scenario] = [
    scenario(recall_after_forget_cascade_is_empty, Capability.SEMANTIC, Capability.ERASE),
]
