"""Approvals and audit over every transport, with governance on: staging, review, tenancy."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import World

pytestmark = pytest.mark.anyio


@pytest.fixture
def governed() -> bool:
    return True


async def _stage(t: Any, token: str, agent: str, content: str) -> str:
    out = await t.call(
        "remember",
        {"agent_id": agent, "type": "semantic", "content": content, "approval_required": True},
        token,
    )
    assert out.ok and out.body["pending_approval"] is True and out.body["stores"] == []
    return str(out.body["id"])


async def _recall_ids(t: Any, token: str, agent: str, q: str) -> list[str]:
    out = await t.call("recall", {"agent_id": agent, "query": q}, token)
    assert out.ok, out.body
    return [h["id"] for h in out.body["results"]]


async def test_staged_write_is_invisible_until_approved(transport: Any, world: World) -> None:
    staged = await _stage(transport, world.agent_a, "A", "pending fact about owls")
    assert await _recall_ids(transport, world.agent_a, "A", "owls") == []
    listed = await transport.call("approvals.list", {}, world.reviewer_a)
    assert listed.ok and [i["id"] for i in listed.body["approvals"]] == [staged]
    shown = await transport.call("approvals.get", {"id": staged}, world.reviewer_a)
    assert shown.ok and shown.body["operation"] == "remember"
    # The agent that asked for review may not approve it.
    denied = await transport.call("approvals.approve", {"id": staged}, world.agent_a)
    assert denied.code == "forbidden"
    done = await transport.call("approvals.approve", {"id": staged, "reason": "ok"},
                                world.reviewer_a)
    assert done.ok, done.body
    assert await _recall_ids(transport, world.agent_a, "A", "owls") == [staged]
    audit = await transport.call("audit.list", {"agent_id": "A"}, world.reviewer_a)
    assert audit.ok and {e["actor"] for e in audit.body["entries"]} >= {"a", "ra"}
    verify = await transport.call("audit.verify", {}, world.admin)
    assert verify.ok and verify.body["ok"] is True


async def test_rejected_write_never_lands(transport: Any, world: World) -> None:
    staged = await _stage(transport, world.agent_a, "A", "dubious claim about bats")
    out = await transport.call("approvals.reject", {"id": staged, "reason": "no"},
                               world.reviewer_a)
    assert out.ok, out.body
    assert await _recall_ids(transport, world.agent_a, "A", "bats") == []


async def test_other_tenants_approvals_look_missing(transport: Any, world: World) -> None:
    b_item = await _stage(transport, world.agent_b, "B", "b private pending")
    missing = "00000000-0000-7000-8000-00000000dead"
    listed = await transport.call("approvals.list", {}, world.reviewer_a)
    assert listed.ok and listed.body["approvals"] == []
    for op in ("approvals.get", "approvals.approve", "approvals.reject"):
        for token in (world.reviewer_a, world.agent_a):
            real = await transport.call(op, {"id": b_item}, token)
            fake = await transport.call(op, {"id": missing}, token)
            assert (real.ok, real.code, real.status) == (fake.ok, fake.code, fake.status)
            assert real.code == "not_found"
            assert real.body["message"].replace(b_item, "<id>") == fake.body[
                "message"
            ].replace(missing, "<id>")
    audit = await transport.call("audit.list", {}, world.reviewer_a)
    assert audit.ok and all(e["agent_id"] == "A" for e in audit.body["entries"])
    still = await transport.call("approvals.get", {"id": b_item}, world.admin)
    assert still.ok and still.body["status"] == "pending"


async def test_a_staged_write_keeps_its_typed_fields(transport: Any, world: World) -> None:
    out = await transport.call("remember", {
        "agent_id": "A", "type": "emotional", "content": "anxious about the audit",
        "valence": -0.4, "emotion": "anxiety", "approval_required": True}, world.agent_a)
    assert out.ok and out.body["pending_approval"] is True, out.body
    done = await transport.call("approvals.approve", {"id": out.body["id"]}, world.reviewer_a)
    assert done.ok, done.body
    got = await transport.call("get", {"agent_id": "A", "id": out.body["id"]}, world.agent_a)
    assert got.ok, got.body
    assert (got.body["memory"]["valence"], got.body["memory"]["emotion"]) == (-0.4, "anxiety")
