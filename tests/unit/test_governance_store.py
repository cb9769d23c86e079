"""GovernedStore over real stores: staging, invisibility, decisions, audit, crash re-drive."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import BackendUnavailable, Conflict, Forbidden, PendingApproval
from memorywire.governance import GovernedStore, acting_as
from memorywire.store.base import Capability, ListQuery, MemoryStore
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import (
    ExpirePolicy,
    ExpireRequest,
    ForgetRequest,
    MergeRequest,
    RecallRequest,
    RememberRequest,
    RememberResponse,
)

pytestmark = pytest.mark.anyio
A = "agent-1"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "policies.json"


def _memory(tmp: Path, clock: FakeClock) -> MemoryStore:
    return InMemoryStore(embedder=HashingEmbedder(), clock=clock)


def _sqlite(tmp: Path, clock: FakeClock) -> MemoryStore:
    return SqliteStore(tmp / "mem.db", embedder=HashingEmbedder(), clock=clock)


INNERS: dict[str, Callable[[Path, FakeClock], MemoryStore]] = {
    "memory": _memory,
    "sqlite": _sqlite,
}


@pytest.fixture(params=sorted(INNERS))
def make_inner(request: pytest.FixtureRequest) -> Callable[[Path, FakeClock], MemoryStore]:
    return INNERS[request.param]


@pytest.fixture
async def gov(
    tmp_path: Path, make_inner: Callable[[Path, FakeClock], MemoryStore]
) -> AsyncIterator[GovernedStore]:
    clock = FakeClock()
    g = GovernedStore(
        make_inner(tmp_path, clock),
        tmp_path / "gov.db",
        policies=EXAMPLES,
        clock=clock,
        approval_base_url="https://mw.example",
        require_approval_for=["forget", "merge"],
    )
    yield g
    await g.aclose()


async def _remember(g: GovernedStore, content: str, **kw: Any) -> RememberResponse:
    with acting_as("writer"):
        return await g.remember(RememberRequest(agent_id=A, type="semantic", content=content, **kw))


async def _visible_ids(g: GovernedStore, query: str) -> set[str]:
    hits = await g.recall(RecallRequest(agent_id=A, query=query, k=50))
    listed = await g.list(ListQuery(agent_id=A))
    return {h.id for h in hits.results} | {r.id for r in listed}


async def test_gated_remember_is_invisible_until_approved(gov: GovernedStore) -> None:
    other = await _remember(gov, "the office is in Lisbon")
    staged = await _remember(gov, "Alice prefers green tea", approval_required=True)
    assert staged.pending_approval and staged.stores == []
    assert staged.approval_url == f"https://mw.example/ui/approvals/{staged.id}"
    assert staged.id not in await _visible_ids(gov, "Alice green tea")
    assert await gov.get(A, staged.id) is None
    with acting_as("writer"):
        gone = await gov.inner.forget(ForgetRequest(agent_id=A, ids=[staged.id]))
    assert gone.forgotten_ids == []
    expired = await gov.expire(ExpireRequest(agent_id=A, policy=ExpirePolicy(confidence_below=1.0)))
    assert staged.id not in (expired.matched_ids or [])
    with pytest.raises(PendingApproval):
        await _remember(gov, "something else", id=staged.id)

    review = await gov.get_review(staged.id)
    assert review["status"] == "pending" and review["requested_by"] == "writer"
    assert review["diff"]["added"][0]["content"] == "Alice prefers green tea"
    done = await gov.approve(staged.id, "reviewer", review["content_hash"], "looks right")
    assert done["status"] == "approved" and done["decision"]["reviewer"] == "reviewer"
    assert staged.id in await _visible_ids(gov, "Alice green tea")
    rec = await gov.get(A, staged.id)
    assert rec is not None and rec.content == "Alice prefers green tea"
    assert other.id in await _visible_ids(gov, "office Lisbon")
    assert gov.verify()["ok"]


async def test_rejected_write_never_appears(gov: GovernedStore) -> None:
    staged = await _remember(gov, "Bob is allergic to nuts", approval_required=True)
    out = await gov.reject(staged.id, "reviewer", "not confirmed")
    assert out["status"] == "rejected"
    assert "content" not in out["request"] and out["request"]["scrubbed"]
    assert staged.id not in await _visible_ids(gov, "Bob allergic nuts")
    with pytest.raises(Conflict):
        await gov.approve(staged.id, "reviewer", out["content_hash"])
    assert [e["action"] for e in gov.audit_entries(memory_id=staged.id)] == ["staged", "rejected"]


async def test_approval_is_idempotent(gov: GovernedStore) -> None:
    staged = await _remember(gov, "Carol runs on Tuesdays", approval_required=True)
    h = (await gov.get_review(staged.id))["content_hash"]
    for _ in range(3):
        await gov.approve(staged.id, "reviewer", h)
    hits = await gov.list(ListQuery(agent_id=A))
    assert [r.id for r in hits].count(staged.id) == 1
    actions = [e["action"] for e in gov.audit_entries(memory_id=staged.id)]
    assert actions == ["staged", "approved", "remember"]


async def test_stale_hash_and_self_approval_are_refused(gov: GovernedStore) -> None:
    staged = await _remember(gov, "Dan likes jazz", approval_required=True)
    seen = (await gov.get_review(staged.id))["content_hash"]
    # The writer amends the pending write: what the reviewer saw is now stale.
    again = await _remember(gov, "Dan likes free jazz", approval_required=True, id=staged.id)
    assert again.id == staged.id
    with pytest.raises(Conflict):
        await gov.approve(staged.id, "reviewer", seen)
    fresh = (await gov.get_review(staged.id))["content_hash"]
    with pytest.raises(Forbidden):
        await gov.approve(staged.id, "writer", fresh)
    await gov.approve(staged.id, "reviewer", fresh)
    rec = await gov.get(A, staged.id)
    assert rec is not None and rec.content == "Dan likes free jazz"


async def test_policies_stage_untrusted_sources_and_health_facts(gov: GovernedStore) -> None:
    web = await _remember(gov, "the moon is made of cheese", source="web_page")
    health = await _remember(gov, "Eve has asthma", metadata={"tags": ["health"]})
    plain = await _remember(gov, "Eve likes chess", source="user")
    assert web.pending_approval and health.pending_approval and not plain.pending_approval
    pending = {p["id"]: p for p in gov.list_pending(agent_id=A)}
    assert set(pending) == {web.id, health.id}
    assert "untrusted-sources" in (pending[web.id]["reasoning"] or "")
    gov.set_policies(
        {
            "rules": [
                {
                    "name": "no-web",
                    "match": {"source": "web_page"},
                    "decision": "reject",
                    "reason": "web is off",
                }
            ]
        }
    )
    with pytest.raises(Forbidden, match="no-web"):
        await _remember(gov, "another page", source="web_page")


async def test_gated_forget_and_merge(gov: GovernedStore) -> None:
    a = await _remember(gov, "Frank lives in Oslo", metadata={"entity_name": "frank"})
    b = await _remember(gov, "Frank lives in Oslo, Norway")
    with acting_as("writer"):
        f = await gov.forget(ForgetRequest(agent_id=A, ids=[a.id], hard_delete=True))
    assert f.pending_approval and f.forgotten_ids == [] and f.approval_url
    [item] = gov.list_pending(operation="forget")
    review = await gov.get_review(item["id"])
    assert [r["id"] for r in review["diff"]["removed"]] == [a.id]
    assert await gov.get(A, a.id) is not None
    await gov.reject(item["id"], "reviewer", "keep it")

    with acting_as("writer"):
        m = await gov.merge(MergeRequest(agent_id=A, canonical="frank", duplicates=[b.id]))
    assert m.pending_approval and m.merged_count == 0
    [mitem] = gov.list_pending(operation="merge")
    mreview = await gov.get_review(mitem["id"])
    assert [r["id"] for r in mreview["diff"]["removed"]] == [b.id]
    assert mreview["diff"]["modified"][0]["id"] == a.id
    assert await gov.get(A, b.id) is not None
    await gov.approve(mitem["id"], "reviewer", mreview["content_hash"])
    assert await gov.get(A, b.id) is None and await gov.get(A, a.id) is not None


async def test_remember_diff_flags_duplicates(gov: GovernedStore) -> None:
    old = await _remember(gov, "Grace drinks coffee every morning")
    staged = await _remember(gov, "Grace drinks coffee every morning", approval_required=True)
    review = await gov.get_review(staged.id)
    [mod] = review["diff"]["modified"]
    assert mod["id"] == old.id and mod["relation"] == "duplicate" and mod["similarity"] == 1.0


async def test_pass_through_writes_are_audited_and_capability_added(gov: GovernedStore) -> None:
    r = await _remember(gov, "Heidi plays the cello")
    with acting_as("alice"):
        hits = await gov.recall(RecallRequest(agent_id=A, query="Heidi cello"))
    assert r.id in [h.id for h in hits.results]
    entries = gov.audit_entries(memory_id=r.id)
    assert [(e["action"], e["details"].get("phase")) for e in entries] == [
        ("remember", "intent"),
        ("remember", "done"),
        ("recall", None),
    ]
    assert entries[-1]["actor"] == "alice"
    assert Capability.GOVERNANCE in gov.capabilities
    assert gov.verify()["ok"]
    health = await gov.health()
    assert health.details["governance"]["audit_chain_ok"]


class _Flaky:
    """Injects a fault at the commit point: before, or after, the inner write lands."""

    def __init__(self, inner: MemoryStore, after: bool) -> None:
        self._inner, self.after, self.armed = inner, after, True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def remember(self, req: RememberRequest) -> RememberResponse:
        if self.armed and not self.after:
            raise BackendUnavailable("injected: inner store down")
        resp = await self._inner.remember(req)
        if self.armed:
            raise BackendUnavailable("injected: connection lost after commit")
        return resp


@pytest.mark.parametrize("after", [False, True], ids=["before-inner", "after-inner"])
async def test_failed_commit_is_redriven_exactly_once(
    tmp_path: Path, make_inner: Callable[[Path, FakeClock], MemoryStore], after: bool
) -> None:
    clock = FakeClock()
    inner = make_inner(tmp_path, clock)
    flaky = _Flaky(inner, after)
    g = GovernedStore(flaky, tmp_path / "gov.db", clock=clock)  # type: ignore[arg-type]
    staged = await _remember(g, "Ivan speaks Finnish", approval_required=True)
    h = (await g.get_review(staged.id))["content_hash"]
    with pytest.raises(BackendUnavailable):
        await g.approve(staged.id, "reviewer", h)
    assert g.list_pending(status="committing")[0]["id"] == staged.id
    flaky.armed = False
    # A fresh GovernedStore over the same db is what a restarted process sees.
    g2 = GovernedStore(inner, tmp_path / "gov.db", clock=clock)
    assert await g2.recover() == [staged.id]
    assert [r.id for r in await g2.list(ListQuery(agent_id=A))] == [staged.id]
    actions = [
        (e["action"], e["details"].get("phase")) for e in g2.audit_entries(memory_id=staged.id)
    ]
    assert actions == [
        ("staged", None),
        ("approved", None),
        ("remember", "failed"),
        ("remember", "done"),
    ]
    assert g2.verify()["ok"]
    g.audit_log.close()
    await g2.aclose()
