"""``memorywire mcp`` as a Claude Desktop config runs it: no arguments, a fresh account.

The server runs from this worktree's source (``PYTHONPATH``), with an empty home and no
``MEMORYWIRE_*`` settings, so nothing prepared by another test helps it start.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _env(home: Path, **extra: str) -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[2] / "src")
    return {"HOME": str(home), "PATH": os.environ.get("PATH", ""), "PYTHONPATH": src, **extra}


async def _call(c: Client, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
    res = await c.call_tool(tool, args)
    return (not res.is_error, json.loads(res.content[0].text))  # type: ignore[union-attr]


async def test_mcp_with_no_arguments_on_a_fresh_account(tmp_path: Path) -> None:
    """Regression: the default store's folder did not exist, so the server died at start."""
    home = tmp_path / "home"
    home.mkdir()
    params = StdioServerParameters(command=sys.executable, args=["-m", "memorywire.cli", "mcp"],
                                   env=_env(home), cwd=str(tmp_path))
    async with Client(params) as client:
        ok, got = await _call(client, "recall", {"agent_id": "A", "query": "anything"})
        assert ok and got["results"] == [], got  # asked before anyone wrote: nothing, no error
        ok, wrote = await _call(client, "remember", {"agent_id": "A", "type": "semantic",
                                                     "content": "Carol is vegetarian"})
        assert ok, wrote
        ok, got = await _call(client, "recall", {"agent_id": "A", "query": "Carol vegetarian"})
        assert ok and [h["id"] for h in got["results"]] == [wrote["id"]]
    assert (home / ".local" / "share" / "memorywire" / "mem.db").is_file()


async def test_memorywire_mcp_entry_point_reads_store_and_agent_from_the_environment(
    tmp_path: Path,
) -> None:
    """The first implementation's ``memorywire-mcp`` (run through its function, as the shared
    venv has no script for it; the wheel test checks the script is installed)."""
    home = tmp_path / "home"
    home.mkdir()
    code = "import sys; from memorywire.cli.main import mcp_main; sys.exit(mcp_main())"
    params = StdioServerParameters(
        command=sys.executable, args=["-c", code, "--embedder", "hashing"],
        env=_env(home, MEMORYWIRE_STORE="sqlite:///agent.db", MEMORYWIRE_AGENT="travel-bot"),
        cwd=str(tmp_path),
    )
    async with Client(params) as client:
        ok, wrote = await _call(client, "remember", {"type": "semantic",
                                                     "content": "The user likes window seats"})
        assert ok, wrote
        ok, got = await _call(client, "recall", {"query": "window seats"})
        assert ok and [h["id"] for h in got["results"]] == [wrote["id"]]
        ok, other = await _call(client, "recall", {"agent_id": "someone-else",
                                                   "query": "window seats"})
        assert ok and other["results"] == []
    assert (tmp_path / "agent.db").is_file()
