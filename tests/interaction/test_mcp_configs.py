"""The Claude Desktop, Cursor and VS Code snippets of docs/mcp.md, started as written.

Each snippet's command, arguments and environment are run as the editor would (a fresh HOME,
nothing else configured) and the official MCP client lists the tools over stdio.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memorywire.server.mcp.tools import TOOLS

pytestmark = pytest.mark.anyio

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
_SNIPPET = re.compile(r"<!-- snippet: ([\w-]+) -->\n```json\n(.*?)\n```", re.DOTALL)


def _snippets() -> dict[str, dict[str, Any]]:
    found = {name: json.loads(body) for name, body in _SNIPPET.findall(DOC.read_text("utf-8"))}
    assert set(found) == {"claude-desktop", "cursor", "vscode"}
    return found


def _server(config: dict[str, Any]) -> dict[str, Any]:
    servers = config.get("mcpServers") or config.get("servers")
    assert isinstance(servers, dict) and set(servers) == {"memorywire"}
    entry = servers["memorywire"]
    assert isinstance(entry, dict)
    return entry


@pytest.mark.parametrize("editor", sorted(_snippets()))
async def test_snippet_starts_and_lists_every_tool(editor: str, tmp_path: Path) -> None:
    entry = _server(_snippets()[editor])
    # What the editor's PATH would find: the command installed beside this interpreter.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    command = shutil.which(entry["command"], path=path)
    assert command is not None, f"{entry['command']} is not installed"
    home = tmp_path / "home"
    # The default data folder; `memorywire` creates it on first use once first-run lands.
    (home / ".local" / "share" / "memorywire").mkdir(parents=True)
    env = {
        **entry.get("env", {}),
        "HOME": str(home),
        "PATH": path,
        # so the child imports the same memorywire as this test
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    params = StdioServerParameters(
        command=command, args=list(entry["args"]), env=env, cwd=str(tmp_path)
    )
    async with Client(params) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == set(TOOLS)
    agent = entry["env"]["MEMORYWIRE_AGENT"]
    remember = tools["remember"].input_schema
    assert "agent_id" not in remember["required"]
    assert repr(agent) in remember["properties"]["agent_id"]["description"]
