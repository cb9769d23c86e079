"""Finding 7: approval ids were global, so tenant B learned A's pending ids (409 vs 200) and
could squat ids A would use. A remember's id now names a memory *per agent*: B staging or
writing the id A has pending answers exactly as if it were free, and the two never meet;
"not found" and "not yours" are one answer for approvals, pending ones included.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Gov

pytestmark = pytest.mark.anyio


def _doc(agent: str, content: str, gated: bool, mid: str = "shared-id") -> dict[str, Any]:
    return {"agent_id": agent, "type": "semantic", "content": content, "id": mid,
            "approval_required": gated}


async def test_another_tenants_pending_id_is_invisible_and_cannot_be_squatted(
    transport: Any, gov: Gov
) -> None:
    a = await transport.call("remember", _doc("A", "A's pending text", True), gov.agent_a)
    assert a.ok and a.body["pending_approval"] is True, a.body
    a2 = await transport.call("remember", _doc("A", "A's other text", True, "id-2"), gov.agent_a)
    assert a2.ok, a2.body
    # B uses A's pending ids, gated and direct: both answer as for a free id.
    b_staged = await transport.call("remember", _doc("B", "B's own text", True), gov.agent_b)
    assert b_staged.ok and b_staged.body["id"] == "shared-id", b_staged.body
    b_direct = await transport.call("remember", _doc("B", "B direct", False, "id-2"),
                                    gov.agent_b)
    assert b_direct.ok and b_direct.body["id"] == "id-2", b_direct.body
    # A's item is untouched, and approving it lands A's text in A's agent.
    [a_item] = [i for i in gov.store.list_pending()
                if i["agent_id"] == "A" and i["request"]["id"] == "shared-id"]
    assert a_item["request"]["content"] == "A's pending text"
    await gov.store.approve(a_item["id"], "rv", None)
    got = await gov.store.get("A", "shared-id")
    assert got is not None and got.content == "A's pending text"


async def test_not_found_and_not_yours_are_one_answer(rest: Any, gov: Gov) -> None:
    a = await rest.call("remember", _doc("A", "secret plan", True, "plan-1"), gov.agent_a)
    assert a.ok
    theirs = await rest.call("approvals.get", {"id": "plan-1"}, gov.agent_b)
    missing = await rest.call("approvals.get", {"id": "plan-2"}, gov.agent_b)
    assert (theirs.code, theirs.status) == (missing.code, missing.status) == ("not_found", 404)
    assert theirs.body["message"].replace("plan-1", "X") == missing.body["message"].replace(
        "plan-2", "X")
