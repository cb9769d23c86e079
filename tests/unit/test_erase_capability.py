"""The ``erase`` capability: who declares it, who refuses hard delete, how conformance judges it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import CapabilityMissing
from memorywire.governance import GovernedStore, acting_as
from memorywire.router import MemoryRouter
from memorywire.store.base import Capability, ListQuery
from memorywire.store.memory import InMemoryStore
from memorywire.testing.harness import run_scenario
from memorywire.testing.scenarios.write import SCENARIOS
from memorywire.wire.models import ForgetRequest, RememberRequest

A = "agent-1"
BY_NAME = {s.name: s for s in SCENARIOS}


class NoErase(InMemoryStore):
    """A store that, like Cognee, only hides hard-deleted content, and says so."""

    @property
    def capabilities(self) -> frozenset[Capability]:
        return super().capabilities - {Capability.ERASE}

    async def forget(self, req: ForgetRequest) -> Any:
        if req.hard_delete:
            raise CapabilityMissing("no erase")
        return await super().forget(req)


class SilentNoErase(InMemoryStore):
    """Does not declare erase, yet hard deletes without complaint: a silent lie."""

    @property
    def capabilities(self) -> frozenset[Capability]:
        return super().capabilities - {Capability.ERASE}


class Inspectable(InMemoryStore):
    async def raw_contains(self, needle: str) -> bool:
        return needle in repr(self._rows)


def _store(cls: type[InMemoryStore] = InMemoryStore, name: str = "memory",
           clock: FakeClock | None = None) -> InMemoryStore:
    return cls(embedder=HashingEmbedder(), clock=clock, name=name)


def _rem(content: str) -> RememberRequest:
    return RememberRequest.model_validate({"agent_id": A, "type": "semantic", "content": content})


def test_reference_stores_declare_erase() -> None:
    assert Capability.ERASE.value == "erase"
    assert Capability.ERASE in _store().capabilities


@pytest.mark.anyio
async def test_router_declares_erase_only_when_every_child_does() -> None:
    both = MemoryRouter([_store(name="a"), _store(name="b")])
    assert Capability.ERASE in both.capabilities
    plain, lacking = _store(name="plain"), _store(NoErase, name="lacking")
    mixed = MemoryRouter([plain, lacking])
    assert Capability.ERASE not in mixed.capabilities
    ids = [(await s.remember(_rem("The vault code is 1234"))).id for s in (plain, lacking)]
    with pytest.raises(CapabilityMissing, match=r"erase.*lacking"):
        await mixed.forget(ForgetRequest(agent_id=A, ids=ids, hard_delete=True))
    # refused before any child acted: the erasing child did not delete its copy either
    for s, mid in zip((plain, lacking), ids, strict=True):
        assert await s.get(A, mid) is not None
    soft = await mixed.forget(ForgetRequest(agent_id=A, ids=ids))
    assert sorted(soft.forgotten_ids) == sorted(set(ids))
    await both.aclose()
    await mixed.aclose()


@pytest.mark.anyio
async def test_governed_store_refuses_hard_delete_without_erase_even_when_staging(
    tmp_path: Path,
) -> None:
    gov = GovernedStore(_store(NoErase), tmp_path / "gov.db", clock=FakeClock(),
                        require_approval_for=["forget"])
    try:
        assert Capability.ERASE not in gov.capabilities
        with acting_as("writer"):
            mid = (await gov.remember(_rem("The vault code is 1234"))).id
            with pytest.raises(CapabilityMissing, match="erase"):
                await gov.forget(ForgetRequest(agent_id=A, ids=[mid], hard_delete=True))
            with pytest.raises(CapabilityMissing, match="erase"):
                await gov.stage(ForgetRequest(agent_id=A, ids=[mid], hard_delete=True))
        assert gov.list_pending() == [], "a hard delete that can never apply was staged"
        assert [m.id for m in await gov.list(ListQuery(agent_id=A))] == [mid]
    finally:
        await gov.aclose()
    erasing = GovernedStore(_store(), tmp_path / "gov2.db", clock=FakeClock())
    assert Capability.ERASE in erasing.capabilities
    await erasing.aclose()


def test_hard_delete_audit_skips_only_without_erase_and_fails_an_unchecked_claim() -> None:
    audit = BY_NAME["hard_delete_leaves_no_content"]
    assert Capability.ERASE in audit.needs
    skipped = run_scenario(lambda **kw: NoErase(**kw), audit)
    assert skipped.result == "SKIP" and "erase" in skipped.reason
    unchecked = run_scenario(lambda **kw: InMemoryStore(**kw), audit)
    assert unchecked.result == "FAIL" and "raw_contains" in unchecked.reason
    assert run_scenario(lambda **kw: Inspectable(**kw), audit).result == "PASS"


def test_recall_after_forget_checks_hard_delete_by_declared_erase() -> None:
    sc = BY_NAME["recall_after_forget"]
    assert run_scenario(lambda **kw: NoErase(**kw), sc).result == "PASS"
    assert run_scenario(lambda **kw: InMemoryStore(**kw), sc).result == "PASS"
    silent = run_scenario(lambda **kw: SilentNoErase(**kw), sc)
    assert silent.result == "FAIL" and "did not raise" in silent.reason


@pytest.mark.anyio
async def test_erase_by_scope_is_refused_before_anything_changes_without_erase() -> None:
    from memorywire.client import Memory

    store = _store(SilentNoErase)
    mem = Memory(store)
    kept = await mem.remember(_rem("still here"))
    with pytest.raises(CapabilityMissing, match="erase"):
        await mem.erase(agent_id=A)
    assert [r.id for r in await store.list(ListQuery(agent_id=A))] == [kept.id]
