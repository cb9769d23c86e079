"""One person on a laptop, no tokens: an agent over MCP stages a write with
``approval_required``; the person approves it at the CLI; the agent then recalls it. The
agent side (MCP, the in-process client) can never approve its own write.

The MCP server is ``memorywire mcp`` over stdio from this worktree's source with an empty
home: the default store and, beside it, its governance database (on by default).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memorywire.cli import main
from memorywire.client import Memory
from memorywire.errors import Forbidden
from memorywire.server.config import load_config
from memorywire.server.runtime import running

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _env(home: Path) -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[2] / "src")
    return {"HOME": str(home), "PATH": os.environ.get("PATH", ""), "PYTHONPATH": src}


async def _call(c: Client, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
    res = await c.call_tool(tool, args)
    return (not res.is_error, json.loads(res.content[0].text))  # type: ignore[union-attr]


async def _cli(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> Any:
    """The CLI as a person runs it (its own event loop, so on a worker thread here)."""
    flags = [] if argv[0] == "audit" else ["--embedder", "hashing", "--json"]
    got = await anyio.to_thread.run_sync(main, [*argv, *flags])
    out = capsys.readouterr()
    assert got == code, out.err
    return json.loads(out.out) if out.out.strip() else None


async def test_agent_stages_person_approves_at_the_cli_agent_recalls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    data = home / ".local" / "share" / "memorywire"
    for var in ("MEMORYWIRE_HOME", "XDG_DATA_HOME", "MEMORYWIRE_STORE", "MEMORYWIRE_CONFIG",
                "MEMORYWIRE_GOVERNANCE_DB"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))  # the CLI below finds the same default store
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memorywire.cli", "mcp", "--embedder", "hashing"],
        env=_env(home), cwd=str(tmp_path))
    async with Client(params) as agent:
        ok, staged = await _call(agent, "remember", {
            "agent_id": "A", "type": "semantic", "content": "Carol is allergic to peanuts",
            "approval_required": True})
        assert ok and staged["pending_approval"], staged
        ok, got = await _call(agent, "recall", {"agent_id": "A", "query": "Carol peanuts"})
        assert ok and got["results"] == []  # not committed yet

        listed = await _cli(capsys, "approvals", "list")
        pending = [a for a in listed["approvals"] if a["status"] == "pending"]
        assert len(pending) == 1, listed
        approval_id = pending[0]["id"]

        # The agent side cannot approve its own write (the in-process client is agent side).
        config = load_config(env={}, overrides={"embedder": "hashing"})
        async with running(config) as runtime:
            as_agent = Memory(runtime=runtime)
            with pytest.raises(Forbidden, match="own write"):
                await as_agent.call("approvals.approve", {"id": approval_id})

        await _cli(capsys, "approvals", "approve", approval_id)

        ok, got = await _call(agent, "recall", {"agent_id": "A", "query": "Carol peanuts"})
        assert ok and [h["id"] for h in got["results"]] == [staged["id"]], got
    assert (data / "mem.db").is_file() and (data / "mem.gov.db").is_file()
    report = await _cli(capsys, "audit", "verify", "--embedder", "hashing")
    assert report["ok"], report
