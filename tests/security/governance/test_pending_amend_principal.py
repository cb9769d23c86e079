"""Finding 5: ``ApprovalQueue.stage`` amended a pending item with the same id whenever the
token *name* matched, without checking the agent: tenant B replaced A's staged write and A's
reviewer approved B's text into A's agent. Staged items are now amended only by the same
token (its id) for the same agent, and token names are unique per store.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from memorywire.errors import InvalidRequest

from .conftest import Gov

pytestmark = pytest.mark.anyio


async def test_token_names_are_unique_per_store(gov: Gov) -> None:
    with pytest.raises(InvalidRequest, match="already named"):
        gov.tokens.create(role="agent", agent_ids=["B"], name="a")


def _rename(gov: Gov, token_id: str, name: str) -> None:
    """A store from before names were unique may hold two live tokens with one name."""
    db = sqlite3.connect(gov.path / "tokens.db")
    db.execute("UPDATE tokens SET name = ? WHERE id = ?", (name, token_id))
    db.commit()
    db.close()


async def test_a_same_named_token_of_another_tenant_cannot_amend(
    transport: Any, gov: Gov
) -> None:
    mallory, info = gov.tokens.create(role="agent", agent_ids=["B"], name="mallory")
    _rename(gov, info.id, "a")  # same name as A's writer token
    doc = {"agent_id": "A", "type": "semantic", "content": "pay Alice 10", "id": "pay-1",
           "approval_required": True}
    assert (await transport.call("remember", doc, gov.agent_a)).ok
    evil = {**doc, "agent_id": "B", "content": "pay Mallory 10000"}
    out = await transport.call("remember", evil, mallory)
    assert out.ok or out.code != "internal_error", out.body
    [a_item] = [i for i in gov.store.list_pending() if i["agent_id"] == "A"]
    assert a_item["request"]["content"] == "pay Alice 10"
    assert a_item["request"]["agent_id"] == "A"


async def test_a_second_token_of_the_same_agent_cannot_amend(transport: Any, gov: Gov) -> None:
    other, info = gov.tokens.create(role="agent", agent_ids=["A"], name="a-bis")
    _rename(gov, info.id, "a")
    doc = {"agent_id": "A", "type": "semantic", "content": "first text", "id": "note-1",
           "approval_required": True}
    assert (await transport.call("remember", doc, gov.agent_a)).ok
    await transport.call("remember", {**doc, "content": "replaced text"}, other)
    originals = [i for i in gov.store.list_pending() if i["request"].get("id") == "note-1"
                 and i["request"]["content"] == "first text"]
    assert len(originals) == 1
    # The writer itself may still amend its own pending item.
    amended = await transport.call("remember", {**doc, "content": "first text, fixed"},
                                   gov.agent_a)
    assert amended.ok, amended.body
    mine = [i for i in gov.store.list_pending() if i["request"].get("id") == "note-1"
            and i["requested_by"] == "a" and i["id"] == "note-1"]
    assert [i["request"]["content"] for i in mine] == ["first text, fixed"]
