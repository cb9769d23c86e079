"""What the MCP tools tell a model, and how a call's arguments are completed.

A model reads tool descriptions and input schemas literally, so each tool says what it does
in one sentence and every argument carries a description (a test walks them all). The input
schemas are the wire schemas; only ``required`` changes, where a default fills a field in.

Defaults exist for ``agent_id`` and ``user_id`` because a model should not have to invent
its own identity on every call: the server's configuration (``agent``/``user`` settings, i.e.
``MEMORYWIRE_AGENT``/``MEMORYWIRE_USER``) names them. Precedence: a token scoped to exactly one
agent (or user) supplies it first, because the token decides who the caller is; then the
configured default. An explicit argument is never overwritten, and the dispatcher still
refuses one outside the token's scope.

The first implementation's MCP server (memorywire 0.5, ``memorywire-mcp``) had the same tool
names; what its calls may leave out or spell its own way is listed once, in :data:`MW05`:
a ``remember`` without ``type`` is semantic, a ``recover`` without seeds is for the
configured agent, and ``recover``'s 0.5 argument names are read as today's
(:data:`memorywire.server.recovery.MW05_ARGUMENTS`). Unlike 0.5, a ``recover`` that is not a
dry run is staged for a reviewer instead of run; its answer carries 0.5's report keys.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from memorywire.server.auth import Principal
from memorywire.server.openapi import bundled_schema
from memorywire.wire.operations import by_tool

__all__ = ["DESTRUCTIVE", "MW05", "READ_ONLY", "TOOLS", "ToolDefaults", "complete_args",
           "input_schema"]

#: Tool name to what a model reads about it, in listing order (the operation table's).
TOOLS: dict[str, str] = {name: spec.description for name, spec in by_tool().items()}
#: Tools a model may never run directly: staged for review, or refused without governance.
DESTRUCTIVE = frozenset(name for name, spec in by_tool().items() if spec.destructive)
READ_ONLY = frozenset(name for name, spec in by_tool().items() if spec.read_only)

#: What memorywire 0.5's tools let a call leave out: tool -> field -> the value 0.5 used.
MW05: dict[str, dict[str, Any]] = {"remember": {"type": "semantic"}}
#: A ``recover`` naming any of these selects by seeds, so it needs no agent.
_SEEDS = ("source", "sources", "ids", "since_ms", "until_ms")


@dataclass(frozen=True)
class ToolDefaults:
    """Configured identity for tool calls that leave it out (empty: no default)."""

    agent_id: str = ""
    user_id: str = ""


def _single(scope: frozenset[str] | None) -> str:
    return next(iter(scope)) if scope is not None and len(scope) == 1 else ""


def _fill(p: Principal, defaults: ToolDefaults) -> dict[str, str]:
    filled = {
        "agent_id": _single(p.agent_ids) or defaults.agent_id,
        "user_id": _single(p.user_ids) or defaults.user_id,
    }
    return {k: v for k, v in filled.items() if v}


def _schema(name: str) -> dict[str, Any]:
    spec = by_tool()[name]
    if spec.request_schema is not None:
        return bundled_schema(spec.request_schema)
    if spec.name == "recover":  # an administrative operation, not a wire document
        from memorywire.server.recovery import RECOVER_SCHEMA

        return copy.deepcopy(RECOVER_SCHEMA)
    raise LookupError(f"tool {name!r}: operation {spec.name!r} has no input schema; a tool "
                      "needs one for a model to call it")


def complete_args(name: str, args: dict[str, Any], p: Principal, defaults: ToolDefaults) -> None:
    """Fill ``agent_id``/``user_id`` the call left out, where the tool takes a wire request,
    and 0.5's defaults (:data:`MW05`). A ``recover`` gets the agent only when it names no
    seed: with seeds its ``agent_id`` narrows a search the caller means to be wide."""
    for key, value in MW05.get(name, {}).items():
        if args.get(key) is None:
            args[key] = value
    schema = by_tool()[name].request_schema
    if schema is None:
        agent = _fill(p, defaults).get("agent_id")
        if name == "recover" and agent and not args.get("agent_id") \
                and not any(args.get(k) for k in _SEEDS):
            args["agent_id"] = agent
        return
    props = bundled_schema(schema).get("properties", {})
    for key, value in _fill(p, defaults).items():
        if key in props and args.get(key) in (None, ""):
            args[key] = value


def input_schema(name: str, p: Principal, defaults: ToolDefaults) -> dict[str, Any]:
    """The wire schema, with the fields a default will fill no longer required."""
    doc = _schema(name)
    if by_tool()[name].request_schema is None:
        return doc
    filled = _fill(p, defaults)
    for key, value in MW05.get(name, {}).items():
        doc["required"] = [r for r in doc.get("required", []) if r != key]
        props = dict(doc["properties"])
        props[key] = {**props[key], "description": f"{props[key].get('description', '')} "
                      f"Defaults to {value!r}.".strip()}
        doc["properties"] = props
    if "agent_id" in filled:
        doc["required"] = [r for r in doc.get("required", []) if r != "agent_id"]
        props = dict(doc["properties"])
        props["agent_id"] = {
            **props["agent_id"],
            "description": f"{props['agent_id'].get('description', '')} "
            f"Defaults to {filled['agent_id']!r}.".strip(),
        }
        doc["properties"] = props
    return doc
