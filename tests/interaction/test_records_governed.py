"""history and erase with governance on, over every transport: the audit log is the history,
and erase is staged for review when policy gates forget."""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.wire.validate import validate

from .conftest import World

pytestmark = pytest.mark.anyio


@pytest.fixture
def governed() -> bool:
    return True


async def _remember(t: Any, token: str, agent: str, content: str, **extra: Any) -> str:
    out = await t.call(
        "remember", {"agent_id": agent, "type": "semantic", "content": content, **extra}, token
    )
    assert out.ok, out.body
    return str(out.body["id"])


def _review(world: World, operation: str) -> None:
    """Policy: every ``operation`` waits for a reviewer."""
    gov = world.runtime.governed
    assert gov is not None
    gov.set_policies({"rules": [{"name": f"{operation}-review",
                                 "match": {"operation": operation}, "decision": "review"}]})


async def test_history_lists_every_revision_with_who_and_why(
    transport: Any, world: World
) -> None:
    gov = world.runtime.governed
    assert gov is not None
    gov.set_policies({"agent_review": []})  # the agent's update commits: its history is shown
    mid = await _remember(transport, world.agent_a, "A", "Carol is vegetarian")
    upd = await transport.call(
        "update",
        {"agent_id": "A", "id": mid, "content": "Carol is vegan", "reason": "Carol corrected it"},
        world.agent_a,
    )
    assert upd.ok, upd.body
    out = await transport.call("history", {"agent_id": "A", "id": mid}, world.agent_a)
    assert out.ok and not validate("history.response", out.body), out.body
    steps = [(r["operation"], r["phase"]) for r in out.body["revisions"]]
    assert steps == [("remember", "intent"), ("remember", "done"),
                     ("update", "intent"), ("update", "done")]
    last = out.body["revisions"][-1]
    assert last["actor"] == "a" and last["reason"] == "Carol corrected it"
    assert "content" not in last.get("details", {})
    seqs = [r["seq"] for r in out.body["revisions"]]
    assert seqs == sorted(seqs)


async def test_history_of_another_agents_memory_looks_missing(
    transport: Any, world: World
) -> None:
    b_id = await _remember(transport, world.agent_b, "B", "b secret")
    real = await transport.call("history", {"agent_id": "A", "id": b_id}, world.agent_a)
    fake = await transport.call(
        "history", {"agent_id": "A", "id": "00000000-0000-7000-8000-000000000000"}, world.agent_a
    )
    assert (real.code, fake.code) == ("not_found", "not_found")
    cross = await transport.call("history", {"agent_id": "B", "id": b_id}, world.agent_a)
    assert cross.code == "forbidden"


async def test_gated_erase_is_staged_then_applied_on_approval(
    transport: Any, world: World
) -> None:
    _review(world, "forget")
    carol = await _remember(transport, world.agent_a, "A", "carol fact", user_id="carol")
    keep = await _remember(transport, world.agent_a, "A", "dave fact", user_id="dave")
    out = await transport.call(
        "erase", {"agent_id": "A", "user_id": "carol", "reason": "GDPR"}, world.agent_a
    )
    assert out.ok and out.body["pending_approval"] is True and out.body["erased_ids"] == []
    still = await transport.call("get", {"agent_id": "A", "id": carol}, world.agent_a)
    assert still.ok, "nothing is erased before a reviewer approves"
    listed = await transport.call("approvals.list", {}, world.reviewer_a)
    [item] = listed.body["approvals"]
    shown = await transport.call("approvals.get", {"id": item["id"]}, world.reviewer_a)
    assert shown.body["request"]["ids"] == [carol] and shown.body["request"]["hard_delete"]
    done = await transport.call("approvals.approve", {"id": item["id"]}, world.reviewer_a)
    assert done.ok, done.body
    gone = await transport.call("get", {"agent_id": "A", "id": carol}, world.agent_a)
    assert gone.code == "not_found"
    kept = await transport.call("get", {"agent_id": "A", "id": keep}, world.agent_a)
    assert kept.ok
    hist = await transport.call("history", {"agent_id": "A", "id": carol}, world.admin)
    ops = [r["operation"] for r in hist.body["revisions"]]
    assert "forget" in ops and hist.body["revisions"][-1]["details"]["hard_delete"] is True


async def test_gated_update_is_staged_then_applied_on_approval(
    transport: Any, world: World
) -> None:
    _review(world, "update")
    mid = await _remember(transport, world.agent_a, "A", "Carol is vegetarian")
    out = await transport.call(
        "update", {"agent_id": "A", "id": mid, "content": "Carol is vegan", "reason": "fix"},
        world.agent_a,
    )
    assert out.ok and not validate("update.response", out.body), out.body
    assert out.body["pending_approval"] is True and "memory" not in out.body
    now = await transport.call("get", {"agent_id": "A", "id": mid}, world.agent_a)
    assert now.body["memory"]["content"] == "Carol is vegetarian"
    listed = await transport.call("approvals.list", {}, world.reviewer_a)
    [item] = listed.body["approvals"]
    shown = await transport.call("approvals.get", {"id": item["id"]}, world.reviewer_a)
    assert shown.body["operation"] == "update"
    [change] = shown.body["diff"]["modified"]
    assert (change["before"]["content"], change["after"]["content"]) == (
        "Carol is vegetarian", "Carol is vegan"
    )
    done = await transport.call("approvals.approve", {"id": item["id"]}, world.reviewer_a)
    assert done.ok, done.body
    after = await transport.call("get", {"agent_id": "A", "id": mid}, world.agent_a)
    assert after.body["memory"]["content"] == "Carol is vegan"
    hist = await transport.call("history", {"agent_id": "A", "id": mid}, world.agent_a)
    last = hist.body["revisions"][-1]
    assert (last["operation"], last["phase"], last["actor"]) == ("update", "done", "ra")
    missing = await transport.call(
        "update", {"agent_id": "A", "id": "00000000-0000-7000-8000-000000000000",
                   "content": "x"}, world.agent_a,
    )
    assert missing.code == "not_found", "nothing is staged for a memory the caller cannot see"


async def test_gated_update_with_supersedes_shows_and_applies_it(
    transport: Any, world: World
) -> None:
    _review(world, "update")
    old = await _remember(transport, world.agent_a, "A", "Carol lives in Lisbon")
    new = await _remember(transport, world.agent_a, "A", "Carol lives in Porto")
    out = await transport.call(
        "update", {"agent_id": "A", "id": new, "supersedes": [old]}, world.agent_a)
    assert out.ok and out.body["pending_approval"] is True, out.body
    [item] = (await transport.call("approvals.list", {}, world.reviewer_a)).body["approvals"]
    shown = await transport.call("approvals.get", {"id": item["id"]}, world.reviewer_a)
    rows = {m["id"]: m for m in shown.body["diff"]["modified"]}
    assert rows[old]["relation"] == "superseded" and rows[old]["after"]["superseded_by"] == new
    done = await transport.call("approvals.approve", {"id": item["id"]}, world.reviewer_a)
    assert done.ok, done.body
    hits = await transport.call(
        "recall", {"agent_id": "A", "query": "where does Carol live", "k": 5}, world.agent_a)
    assert [h["id"] for h in hits.body["results"]] == [new]
