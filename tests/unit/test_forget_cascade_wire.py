"""``ForgetRequest.cascade`` on stores, routers and governance: followed where edges are kept,
refused with ``capability_missing`` (before anything changes) where they are not."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import CapabilityMissing
from memorywire.governance import GovernedStore
from memorywire.router import MemoryRouter
from memorywire.store.base import Capability, ListQuery
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import ForgetRequest, Link, RememberRequest

pytestmark = pytest.mark.anyio


class EdgelessStore(InMemoryStore):
    """A real store that does not promise to keep derivation edges (the fault injected)."""

    @property
    def capabilities(self) -> frozenset[Capability]:
        return super().capabilities - {Capability.DERIVATION}


async def _family(store: object) -> None:
    async def rem(id_: str, text: str, parent: str | None = None) -> None:
        links = [Link(id=parent, type="derived_from")] if parent else None
        await store.remember(RememberRequest(agent_id="ag", type="semantic",  # type: ignore[attr-defined]
                                             content=text, id=id_, links=links))
    await rem("seed", "vault phrase marmalade")
    await rem("sum", "summary of the vault phrase", "seed")
    await rem("dig", "digest of the summary", "sum")
    await rem("other", "apple trees in the garden")


async def _ids(store: object) -> list[str]:
    rows = await store.list(ListQuery(agent_id="ag", include_archived=True))  # type: ignore[attr-defined]
    return sorted(r.id for r in rows)


async def test_sqlite_cascade_reaches_descendants_at_any_depth(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder(64))
    try:
        await _family(store)
        out = await store.forget(ForgetRequest(agent_id="ag", ids=["seed"], hard_delete=True,
                                               cascade=True))
        assert sorted(out.forgotten_ids) == ["dig", "seed", "sum"]
        assert await _ids(store) == ["other"]
    finally:
        await store.aclose()


async def test_a_store_without_derivation_refuses_cascade_and_changes_nothing() -> None:
    store = EdgelessStore(HashingEmbedder(64))
    await _family(store)
    with pytest.raises(CapabilityMissing, match="derivation"):
        await store.forget(ForgetRequest(agent_id="ag", ids=["seed"], cascade=True))
    assert await _ids(store) == ["dig", "other", "seed", "sum"]


async def test_a_router_with_one_edgeless_child_refuses_cascade_before_any_child_acts() -> None:
    good, bad = InMemoryStore(HashingEmbedder(64), name="good"), \
        EdgelessStore(HashingEmbedder(64), name="bad")
    router = MemoryRouter([good, bad])
    await _family(router)
    assert Capability.DERIVATION not in router.capabilities
    with pytest.raises(CapabilityMissing, match="derivation"):
        await router.forget(ForgetRequest(agent_id="ag", ids=["seed"], hard_delete=True,
                                          cascade=True))
    assert await _ids(good) == ["dig", "other", "seed", "sum"]


async def test_router_cascade_follows_an_edge_only_one_child_holds() -> None:
    a, b = InMemoryStore(HashingEmbedder(64), name="a"), InMemoryStore(HashingEmbedder(64),
                                                                       name="b")
    await _family(a)
    await b.remember(RememberRequest(agent_id="ag", type="semantic", content="b's own summary",
                                     id="bsum", links=[Link(id="seed", type="derived_from")]))
    router = MemoryRouter([a, b])
    out = await router.forget(ForgetRequest(agent_id="ag", ids=["seed"], hard_delete=True,
                                            cascade=True))
    assert sorted(out.forgotten_ids) == ["bsum", "dig", "seed", "sum"]
    assert await _ids(a) == ["other"] and await _ids(b) == []


async def test_governance_stages_the_expanded_ids_for_the_reviewer(tmp_path: Path) -> None:
    gov = GovernedStore(InMemoryStore(HashingEmbedder(64)), tmp_path / "gov.db",
                        require_approval_for=["forget"])
    try:
        await _family(gov)
        out = await gov.forget(ForgetRequest(agent_id="ag", ids=["seed"], cascade=True))
        assert out.pending_approval
        [item] = await gov.alist_pending(agent_id="ag")
        assert sorted(item["request"]["ids"]) == ["dig", "seed", "sum"]
        assert not item["request"].get("cascade")
        await gov.decide(item["id"], "rev", True)
        assert await _ids(gov.inner) == ["other"]
    finally:
        await gov.aclose()


async def test_cascade_takes_the_later_versions_of_a_fact_but_not_the_earlier(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder(64))
    try:
        for id_, text, old in (("v1", "Carol is vegetarian", None),
                               ("v2", "Carol is vegan", "v1"),
                               ("v3", "Carol is vegan again", "v2")):
            await store.remember(RememberRequest(agent_id="ag", type="semantic", content=text,
                                                 id=id_, supersedes=[old] if old else None))
        out = await store.forget(ForgetRequest(agent_id="ag", ids=["v2"], hard_delete=True,
                                               cascade=True))
        assert sorted(out.forgotten_ids) == ["v2", "v3"]
        assert await _ids(store) == ["v1"]
    finally:
        await store.aclose()
