"""Finding 10 (governance part): a hard forget of a pending memory left it pending, and a
later approval brought it back. A forget naming a pending remember of its agent now closes
that item (content scrubbed) and reports the id as forgotten.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Gov

pytestmark = pytest.mark.anyio


async def test_a_hard_forget_closes_the_pending_remember(transport: Any, gov: Gov) -> None:
    staged = await transport.call(
        "remember",
        {"agent_id": "A", "type": "semantic", "content": "my card number is 4242",
         "id": "card", "approval_required": True},
        gov.agent_a,
    )
    assert staged.ok and staged.body["pending_approval"] is True
    gone = await transport.call(
        "forget", {"agent_id": "A", "ids": ["card"], "hard_delete": True}, gov.admin
    )
    assert gone.ok, gone.body
    if gone.body.get("pending_approval"):  # MCP stages destructive tools: approve the forget
        [forget_item] = gov.store.list_pending(operation="forget")
        await gov.store.approve(forget_item["id"], "rv", None)
    else:
        assert gone.body["forgotten_ids"] == ["card"], gone.body
    assert gov.store.list_pending() == []
    [closed] = gov.store.list_pending(status="rejected", operation="remember")
    assert "4242" not in str(closed["request"])
    with pytest.raises(Exception, match="rejected"):
        await gov.store.approve(closed["id"], "rv", None)
    assert await gov.store.get("A", "card") is None


async def test_another_agents_forget_does_not_touch_the_pending_item(
    transport: Any, gov: Gov
) -> None:
    staged = await transport.call(
        "remember",
        {"agent_id": "A", "type": "semantic", "content": "A's text", "id": "n1",
         "approval_required": True},
        gov.agent_a,
    )
    assert staged.ok
    out = await transport.call("forget", {"agent_id": "B", "ids": ["n1"]}, gov.agent_b)
    # (over MCP a forget is itself staged for review: it too forgets nothing now)
    assert out.ok and out.body["forgotten_ids"] == []
    pending = gov.store.list_pending(operation="remember")
    assert [i["request"]["id"] for i in pending] == ["n1"]
