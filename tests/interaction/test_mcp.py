"""The behaviour suite's core over MCP: a real ``mcp`` client talking stdio to
``memorywire mcp`` in a subprocess. Same results and error codes as the other transports."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memorywire.wire.validate import validate

pytestmark = pytest.mark.anyio


def _params(tmp_path: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "memorywire.cli", "mcp", "--store", "memory://", "--embedder", "hashing"],
        # PYTHONPATH passes on so the child imports the same memorywire as this test
        env={"MEMORYWIRE_HOME": str(tmp_path), "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
             **env},
    )


@pytest.fixture
async def mcp_client(tmp_path: Path) -> AsyncIterator[Client]:
    async with Client(_params(tmp_path)) as client:
        yield client


async def _call(c: Client, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
    res = await c.call_tool(tool, args)
    body = json.loads(res.content[0].text)  # type: ignore[union-attr]
    assert body == res.structured_content
    return (not res.is_error, body)


async def test_tools_and_schemas_are_listed(mcp_client: Client) -> None:
    tools = {t.name: t for t in (await mcp_client.list_tools()).tools}
    assert set(tools) == {
        "remember", "recall", "get", "list", "update", "history",
        "forget", "erase", "merge", "expire", "recover",
    }
    assert "agent_id" in tools["recall"].input_schema["required"]  # no default configured
    assert "https://" not in json.dumps(tools["remember"].input_schema)
    res = await mcp_client.list_resources()
    uris = {str(r.uri) for r in res.resources}
    assert "memorywire://schemas/remember" in uris
    read = await mcp_client.read_resource("memorywire://schemas/recall.response")
    assert json.loads(read.contents[0].text)["$id"].endswith("recall.response")  # type: ignore[union-attr]


async def test_round_trip_and_errors_match_other_transports(mcp_client: Client) -> None:
    ok, wrote = await _call(
        mcp_client, "remember", {"agent_id": "A", "type": "semantic", "content": "mcp works"}
    )
    assert ok and not validate("remember.response", wrote)
    ok, got = await _call(mcp_client, "recall", {"agent_id": "A", "query": "mcp"})
    assert ok and not validate("recall.response", got)
    assert [h["id"] for h in got["results"]] == [wrote["id"]]
    ok, err = await _call(mcp_client, "recall", {"agent_id": "A", "query": "x", "k": 10**9})
    assert not ok and err["code"] == "invalid_request" and err["details"][0]["path"] == "/k"
    assert not validate("error", err)
    ok, one = await _call(mcp_client, "get", {"agent_id": "A", "id": wrote["id"]})
    assert ok and one["memory"]["content"] == "mcp works"
    ok, changed = await _call(
        mcp_client, "update", {"agent_id": "A", "id": wrote["id"], "content": "mcp still works"}
    )
    assert ok and changed["memory"]["content"] == "mcp still works"
    ok, page = await _call(mcp_client, "list", {"agent_id": "A"})
    assert ok and [m["id"] for m in page["memories"]] == [wrote["id"]]
    assert page["next_cursor"] is None


async def test_agent_and_user_default_from_the_environment(tmp_path: Path) -> None:
    params = _params(tmp_path, MEMORYWIRE_AGENT="claude", MEMORYWIRE_USER="carol")
    async with Client(params) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert "agent_id" not in tools["remember"].input_schema["required"]
        assert "'claude'" in tools["remember"].input_schema["properties"]["agent_id"]["description"]
        ok, wrote = await _call(c, "remember", {"type": "semantic", "content": "tea, no sugar"})
        assert ok, wrote
        ok, mine = await _call(c, "get", {"id": wrote["id"], "agent_id": "claude",
                                          "user_id": "carol"})
        assert ok and mine["memory"]["agent_id"] == "claude"
        assert mine["memory"]["user_id"] == "carol"
        # an explicit argument wins over the default
        ok, other = await _call(c, "recall", {"agent_id": "someone-else", "query": "tea"})
        assert ok and other["results"] == []


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("forget", {"agent_id": "A", "ids": ["x"]}),
        ("forget", {"agent_id": "A", "ids": ["x"], "hard_delete": True}),
        ("forget", {"agent_id": "A", "filter": {"team": "a"}}),
        ("erase", {"agent_id": "A"}),
        ("merge", {"agent_id": "A", "canonical": "x", "duplicates": ["y"]}),
        ("expire", {"agent_id": "A", "policy": {"older_than_days": 1}}),
    ],
)
async def test_destructive_tools_are_refused_without_governance(
    mcp_client: Client, tool: str, args: dict[str, Any]
) -> None:
    ok, err = await _call(mcp_client, tool, args)
    assert not ok and err["code"] == "forbidden" and "review" in err["message"]
