"""Forgetting that reaches what was derived: a cascade hard forget leaves nothing to read.

The cascade is computed the way ``memorywire forget --cascade`` computes it (every memory
reachable over ``derived_from`` edges, read through ``MemoryStore.list``), then sent as one
hard forget, so a store passes when its hard delete and its edges agree.
"""

from __future__ import annotations

from memorywire.core.provenance import descendants
from memorywire.governance.purge import purgeable, sweep_once
from memorywire.governance.receipts import dump_receipt, verify_receipt
from memorywire.governance.signing import SigningKey
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


async def expired_is_purged(h: Harness, store: MemoryStore) -> None:
    """The expiry sweep erases what expired before the grace period (no read returns it, the
    receipt names it and verifies) and keeps what is unexpired or still inside the grace."""
    now = h.clock.now_ms()
    await store.remember(rem("ag", "The door code was 4471-lemon", id="old",
                             expires_at=now + 1_000))
    await store.remember(rem("ag", "The door code is 9920-lime", id="grace",
                             expires_at=now + 9_000))
    await store.remember(rem("ag", "The garden has three apple trees", id="kept"))
    h.clock.advance(10_000)
    key = SigningKey.generate()
    receipts = await sweep_once(purgeable(store), key, grace_ms=5_000, clock=h.clock)
    erased = sorted(i for rc in receipts for ids in rc["erased"].values() for i in ids)
    assert erased == ["old"], f"the sweep erased {erased}, expected only 'old'"
    assert all(verify_receipt(dump_receipt(rc))[0] for rc in receipts)
    assert await store.get("ag", "old") is None
    left = sorted(m.id for m in await store.list(ListQuery(agent_id=None, include_archived=True)))
    assert "old" not in left, left
    hits = await store.recall(RecallRequest(agent_id="ag", query="door code 4471-lemon", k=10))
    assert not [x.id for x in hits.results if "4471" in str(x.content)], "recall leaks it"
    h.clock.advance(10_000)  # now 'grace' is past its grace too; 'kept' never expires
    again = await sweep_once(purgeable(store), key, grace_ms=5_000, clock=h.clock)
    assert sorted(i for rc in again for ids in rc["erased"].values() for i in ids) == ["grace"]
    assert (await store.get("ag", "kept")) is not None


SCENARIOS: list[Scenario] = [
    scenario(recall_after_forget_cascade_is_empty, Capability.SEMANTIC, Capability.ERASE),
    scenario(expired_is_purged, Capability.SEMANTIC, Capability.ERASE, Capability.PURGE),
]
