"""Per-call staging on GovernedStore: a destructive call waits for a reviewer, then applies once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import Forbidden
from memorywire.governance import GovernedStore, acting_as
from memorywire.store.base import ListQuery
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import (
    ExpirePolicy,
    ExpireRequest,
    ForgetRequest,
    MergeRequest,
    RememberRequest,
)

pytestmark = pytest.mark.anyio
A = "agent-1"


@pytest.fixture
async def gov(tmp_path: Path) -> AsyncIterator[GovernedStore]:
    clock = FakeClock()
    inner = SqliteStore(tmp_path / "mem.db", embedder=HashingEmbedder(), clock=clock)
    g = GovernedStore(inner, tmp_path / "gov.db", clock=clock)
    yield g
    await g.aclose()


async def _ids(g: GovernedStore) -> set[str]:
    return {r.id for r in await g.list(ListQuery(agent_id=A))}


async def _seed(g: GovernedStore) -> list[str]:
    out = []
    with acting_as("writer"):
        for text, conf in (("old and shaky", 0.2), ("old but sure", 0.9)):
            r = await g.remember(
                RememberRequest(agent_id=A, type="semantic", content=text, confidence=conf)
            )
            out.append(r.id)
    return out


async def test_staged_expire_changes_nothing_until_approved_then_applies_once(
    gov: GovernedStore,
) -> None:
    shaky, sure = await _seed(gov)
    req = ExpireRequest(agent_id=A, policy=ExpirePolicy(confidence_below=0.5))
    with acting_as("mcp-agent"):
        resp = await gov.stage(req)
    assert resp.pending_approval is True and resp.matched_count == 0
    assert await _ids(gov) == {shaky, sure}

    [item] = gov.list_pending(operation="expire")
    assert item["requested_by"] == "mcp-agent" and item["request"]["policy"]
    review = await gov.get_review(item["id"])
    assert [r["id"] for r in review["diff"]["removed"]] == [shaky]

    for _ in range(3):  # retries of the same approval commit once
        done = await gov.approve(item["id"], "reviewer", review["content_hash"])
    assert done["status"] == "approved" and done["result"]["matched_count"] == 1
    assert await _ids(gov) == {sure}
    committed = [
        e for e in gov.audit_entries(agent_id=A)
        if e["action"] == "expire" and e["details"].get("approval_id") == item["id"]
    ]
    assert len(committed) == 1


async def test_staged_forget_and_merge_wait_for_review(gov: GovernedStore) -> None:
    shaky, sure = await _seed(gov)
    with acting_as("mcp-agent"):
        f = await gov.stage(ForgetRequest(agent_id=A, ids=[shaky], hard_delete=True))
        m = await gov.stage(MergeRequest(agent_id=A, canonical=sure, duplicates=[shaky]))
    assert f.pending_approval and m.pending_approval
    assert await _ids(gov) == {shaky, sure}
    [fitem] = gov.list_pending(operation="forget")
    await gov.approve(fitem["id"], "reviewer", None)
    assert await _ids(gov) == {sure}


async def test_staging_is_per_call_and_per_store(gov: GovernedStore, tmp_path: Path) -> None:
    shaky, sure = await _seed(gov)
    other = GovernedStore(
        SqliteStore(tmp_path / "other.db", embedder=HashingEmbedder()), tmp_path / "other-gov.db"
    )
    try:
        with gov.staging():
            staged = await gov.forget(ForgetRequest(agent_id=A, ids=[shaky]))
            # Another store in the same block is not affected.
            direct = await other.forget(ForgetRequest(agent_id=A, ids=["nothing"]))
        after = await gov.forget(ForgetRequest(agent_id=A, ids=[sure]))
    finally:
        await other.aclose()
    assert staged.pending_approval and direct.pending_approval is None
    assert after.pending_approval is None and after.forgotten_ids == [sure]
    assert await _ids(gov) == {shaky}


async def test_a_reject_policy_still_refuses_a_staged_call(tmp_path: Path) -> None:
    policies = {"rules": [{"name": "no-expire", "match": {"operation": "expire"},
                           "decision": "reject"}]}
    g = GovernedStore(
        SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder()), tmp_path / "g.db",
        policies=policies,
    )
    try:
        with pytest.raises(Forbidden):
            await g.stage(ExpireRequest(agent_id=A, policy=ExpirePolicy(older_than_days=1)))
        assert g.list_pending(operation="expire") == []
    finally:
        await g.aclose()
