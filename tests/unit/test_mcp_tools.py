"""What a model reads about the MCP tools, and how omitted identities are filled in."""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.server.auth import Principal, Role
from memorywire.server.mcp.tools import (
    DESTRUCTIVE,
    TOOLS,
    ToolDefaults,
    complete_args,
    input_schema,
)

OWNER = Principal.local_admin()
NONE = ToolDefaults()


def _fields(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every field of the input and of each object it defines."""
    out = [(k, v) for k, v in doc.get("properties", {}).items()]
    for name, node in doc.get("$defs", {}).items():
        out += [(f"{name}.{k}", v) for k, v in node.get("properties", {}).items()]
    return out


def _strings(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return [node] if isinstance(node, str) else []


@pytest.mark.parametrize("tool", TOOLS)
def test_every_field_of_every_tool_is_described(tool: str) -> None:
    doc = input_schema(tool, OWNER, NONE)
    bare = [name for name, node in _fields(doc) if not str(node.get("description", "")).strip()]
    assert bare == [], f"{tool}: fields without a description: {bare}"


@pytest.mark.parametrize("tool", TOOLS)
def test_no_changelog_notes_leak_into_what_a_model_reads(tool: str) -> None:
    texts = [TOOLS[tool], *_strings(input_schema(tool, OWNER, NONE))]
    assert [t for t in texts if "NEW" in t] == []


def test_destructive_tools_are_exactly_the_ones_that_lose_data() -> None:
    assert {"forget", "erase", "merge", "expire", "recover"} == DESTRUCTIVE
    assert all("reviewer" in TOOLS[t] for t in DESTRUCTIVE)


def test_configured_defaults_fill_omitted_fields_and_explicit_arguments_win() -> None:
    d = ToolDefaults(agent_id="claude", user_id="carol")
    args: dict[str, Any] = {"query": "tea"}
    complete_args("recall", args, OWNER, d)
    assert args == {"query": "tea", "agent_id": "claude", "user_id": "carol"}
    explicit: dict[str, Any] = {"query": "tea", "agent_id": "other"}
    complete_args("recall", explicit, OWNER, d)
    assert explicit["agent_id"] == "other"
    assert "agent_id" not in input_schema("recall", OWNER, d)["required"]
    assert "agent_id" in input_schema("recall", OWNER, NONE)["required"]


def test_a_token_scoped_to_one_agent_wins_over_the_configured_default() -> None:
    token = Principal(name="a", role=Role.AGENT, agent_ids=frozenset({"A"}),
                      user_ids=frozenset({"u1"}))
    args: dict[str, Any] = {"query": "tea"}
    complete_args("recall", args, token, ToolDefaults(agent_id="claude", user_id="carol"))
    assert (args["agent_id"], args["user_id"]) == ("A", "u1")


def test_a_token_over_several_agents_leaves_the_choice_to_the_default_or_the_call() -> None:
    token = Principal(name="ab", role=Role.AGENT, agent_ids=frozenset({"A", "B"}))
    args: dict[str, Any] = {"query": "tea"}
    complete_args("recall", args, token, NONE)
    assert "agent_id" not in args
    assert "agent_id" in input_schema("recall", token, NONE)["required"]


def test_the_user_default_reaches_every_tool_that_takes_user_id() -> None:
    args: dict[str, Any] = {"agent_id": "A", "id": "x"}
    complete_args("history", args, OWNER, ToolDefaults(agent_id="claude", user_id="carol"))
    assert args == {"agent_id": "A", "id": "x", "user_id": "carol"}


def test_the_mcp_package_and_its_tool_texts_load_no_mcp_sdk() -> None:
    """The configuration imports the tool texts, and ``extra`` must be able to say "install
    the extra" where the SDK is missing: neither may pull the SDK in."""
    import subprocess
    import sys

    code = ("import sys, memorywire.server.mcp, memorywire.server.mcp.tools, "
            "memorywire.server.mcp.extra; print(sorted(m for m in sys.modules "
            "if m == 'mcp' or m.startswith(('mcp.', 'mcp_types'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
