"""Destructive MCP tools with governance: staged, invisible until approved, applied once.

A real ``mcp`` client talks to the real server object in-process (the SDK's in-memory
transport), over a ``GovernedStore`` around SQLite.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore
from memorywire.server.auth import Principal, Role
from memorywire.server.dispatch import Dispatcher
from memorywire.server.mcp.server import build_mcp_server
from memorywire.store.base import ListQuery
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.validate import validate

pytestmark = pytest.mark.anyio
AGENT = Principal(name="agent-a", role=Role.AGENT, agent_ids=frozenset({"A"}))


@dataclass
class Rig:
    client: Client
    gov: GovernedStore


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    clock = FakeClock()
    inner = SqliteStore(tmp_path / "mem.db", embedder=HashingEmbedder(), clock=clock)
    gov = GovernedStore(inner, tmp_path / "gov.db", clock=clock)
    server = build_mcp_server(Dispatcher(gov), principal=AGENT)
    try:
        async with Client(server) as client:
            yield Rig(client, gov)
    finally:
        await gov.aclose()


async def _call(c: Client, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
    res = await c.call_tool(tool, args)
    body = json.loads(res.content[0].text)  # type: ignore[union-attr]
    return (not res.is_error, body)


async def _ids(gov: GovernedStore) -> set[str]:
    return {r.id for r in await gov.list(ListQuery(agent_id="A"))}


async def _seed(c: Client) -> tuple[str, str]:
    out = []
    for text, conf in (("shaky fact", 0.2), ("sure fact", 0.9)):
        ok, body = await _call(
            c, "remember", {"agent_id": "A", "type": "semantic", "content": text,
                            "confidence": conf},
        )
        assert ok, body
        out.append(body["id"])
    return out[0], out[1]


async def test_expire_is_staged_then_applied_once_on_approval(rig: Rig) -> None:
    shaky, sure = await _seed(rig.client)
    ok, body = await _call(
        rig.client, "expire", {"agent_id": "A", "policy": {"confidence_below": 0.5}}
    )
    assert ok and body["pending_approval"] is True and body["matched_count"] == 0, body
    assert not validate("expire.response", body)
    assert await _ids(rig.gov) == {shaky, sure}

    [item] = rig.gov.list_pending(operation="expire")
    assert item["requested_by"] == "agent-a"  # the caller, not the server process
    review = await rig.gov.get_review(item["id"])
    assert [r["id"] for r in review["diff"]["removed"]] == [shaky]
    await rig.gov.approve(item["id"], "reviewer", review["content_hash"])
    await rig.gov.approve(item["id"], "reviewer", review["content_hash"])
    assert await _ids(rig.gov) == {sure}
    assert rig.gov.list_pending(operation="expire", status="approved")[0]["result"] == {
        "matched_count": 1, "action": "forget"
    }


@pytest.mark.parametrize(
    "args",
    [
        {"hard_delete": True, "ids": ["<shaky>"]},
        {"filter": {"team": "x"}},
    ],
)
async def test_hard_and_bulk_forget_are_staged(rig: Rig, args: dict[str, Any]) -> None:
    shaky, sure = await _seed(rig.client)
    if "ids" in args:
        args = {**args, "ids": [shaky]}
    ok, body = await _call(rig.client, "forget", {"agent_id": "A", **args})
    assert ok and body["pending_approval"] is True and body["forgotten_ids"] == [], body
    assert await _ids(rig.gov) == {shaky, sure}
    [item] = rig.gov.list_pending(operation="forget")
    await rig.gov.approve(item["id"], "reviewer", None)
    expected = {sure} if "ids" in args else {shaky, sure}  # no memory carries team=x
    assert await _ids(rig.gov) == expected


async def test_soft_forget_is_staged_and_scope_checks_still_apply(rig: Rig) -> None:
    shaky, sure = await _seed(rig.client)
    ok, body = await _call(rig.client, "forget", {"agent_id": "A", "ids": [shaky]})
    assert ok and body["pending_approval"] is True and body["forgotten_ids"] == [], body
    assert await _ids(rig.gov) == {shaky, sure}
    # Staging never bypasses tenancy: a destructive call for another agent is refused.
    ok, err = await _call(
        rig.client, "expire", {"agent_id": "B", "policy": {"older_than_days": 1}}
    )
    assert not ok and err["code"] == "forbidden"
    assert rig.gov.list_pending(operation="expire") == []


async def test_merge_is_staged_then_applied_on_approval(rig: Rig) -> None:
    shaky, sure = await _seed(rig.client)
    ok, body = await _call(
        rig.client, "merge", {"agent_id": "A", "canonical": sure, "duplicates": [shaky]}
    )
    assert ok and body["pending_approval"] is True and body["merged_count"] == 0, body
    assert await _ids(rig.gov) == {shaky, sure}
    [item] = rig.gov.list_pending(operation="merge")
    await rig.gov.approve(item["id"], "reviewer", None)
    assert await _ids(rig.gov) == {sure}


async def test_erase_is_staged_then_applied_on_approval(rig: Rig) -> None:
    shaky, sure = await _seed(rig.client)
    ok, body = await _call(rig.client, "erase", {"agent_id": "A", "reason": "user asked"})
    assert ok and body == {
        "erased_ids": [], "stores": [], "pending_approval": True,
    } | ({"approval_url": body["approval_url"]} if "approval_url" in body else {}), body
    assert not validate("erase.response", body)
    assert await _ids(rig.gov) == {shaky, sure}
    [item] = rig.gov.list_pending(operation="forget")
    assert sorted(item["request"]["ids"]) == sorted([shaky, sure])
    assert item["request"]["hard_delete"] is True
    await rig.gov.approve(item["id"], "reviewer", None)
    assert await _ids(rig.gov) == set()
