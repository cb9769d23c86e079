"""Issue 32 (staged answers): a forget, erase or merge staged over MCP stdio answered
``pending_approval: true`` with no approval id or URL, so the model could not tell its user
what to approve. Every staged answer now carries ``approval_id`` (the queue item
``memorywire approvals approve`` takes) on every transport, its ``approval_url`` where the
deployment knows its reviewer UI's address (``public_url``, also for ``memorywire mcp``), and
over MCP a second text block saying in words what a person must approve.

Before the fix: ``approval_id`` was absent from every staged answer (REST, JSON-RPC, MCP over
HTTP and stdio), and ``memorywire mcp`` had no way to link to a running UI.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.security.conftest import Caller, Rig, rest

pytestmark = pytest.mark.anyio

STAGED = [
    ("remember", {"agent_id": "A", "type": "semantic", "content": "asks first",
                  "approval_required": True}),
    ("forget", {"agent_id": "A", "ids": ["s1"], "hard_delete": True}),
    ("erase", {"agent_id": "A"}),
    ("merge", {"agent_id": "A", "canonical": "s1", "duplicates": ["s2"]}),
    ("update", {"agent_id": "A", "id": "s1", "content": "new"}),
]


@pytest.mark.parametrize(("op", "doc"), STAGED, ids=[s[0] for s in STAGED])
async def test_every_staged_answer_names_its_approval(rig: Rig, call: Caller, op: str,
                                                      doc: dict[str, Any]) -> None:
    for id_ in ("s1", "s2"):
        seeded = await rest(rig, "remember", {"agent_id": "A", "id": id_, "type": "semantic",
                                              "content": f"note {id_}"}, rig.admin)
        assert seeded.ok, seeded
    out = await call(op, doc, rig.agent)
    assert out.ok and out.body["pending_approval"] is True, out
    item = out.body.get("approval_id")
    assert isinstance(item, str), out.body
    pending = await rest(rig, "approvals.list", {"agent_id": "A"}, rig.admin)
    assert item in {a["id"] for a in pending.body["approvals"]}, (item, pending.body)


def _send(p: subprocess.Popen[bytes], doc: dict[str, Any]) -> None:
    assert p.stdin is not None
    p.stdin.write(json.dumps(doc).encode() + b"\n")
    p.stdin.flush()


def _read(p: subprocess.Popen[bytes], timeout: float = 30.0) -> dict[str, Any]:
    assert p.stdout is not None
    ready, _, _ = select.select([p.stdout], [], [], timeout)
    assert ready, "memorywire mcp did not answer"
    reply: dict[str, Any] = json.loads(p.stdout.readline())
    return reply


def _tool(p: subprocess.Popen[bytes], n: int, name: str, args: dict[str, Any]
          ) -> dict[str, Any]:
    _send(p, {"jsonrpc": "2.0", "id": n, "method": "tools/call",
              "params": {"name": name, "arguments": args}})
    reply = _read(p)
    assert reply["id"] == n, reply
    result: dict[str, Any] = reply["result"]
    return result


def test_memorywire_mcp_on_stdio_names_the_approval_and_links_to_the_ui(
    tmp_path: Path
) -> None:
    """The default store (governed) over stdio, as a desktop MCP client runs it."""
    env = {**os.environ, "MEMORYWIRE_HOME": str(tmp_path), "HOME": str(tmp_path),
           "MEMORYWIRE_PUBLIC_URL": "http://127.0.0.1:8765"}
    p = subprocess.Popen([sys.executable, "-m", "memorywire.cli", "mcp", "--embedder",
                          "hashing"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env)
    try:
        _send(p, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}})
        _read(p)
        _send(p, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        stored = _tool(p, 1, "remember", {"agent_id": "a1", "type": "semantic",
                                          "content": "Alice likes tea"})
        memory_id = stored["structuredContent"]["id"]
        answers = {
            "update": _tool(p, 2, "update", {"agent_id": "a1", "id": memory_id,
                                             "content": "Alice likes coffee"}),
            "forget": _tool(p, 3, "forget", {"agent_id": "a1", "ids": [memory_id]}),
            "erase": _tool(p, 4, "erase", {"agent_id": "a1"}),
        }
        for name, res in answers.items():
            body = res["structuredContent"]
            assert body["pending_approval"] is True, (name, res)
            item = body.get("approval_id")
            assert isinstance(item, str), (name, body)
            assert body.get("approval_url") == f"http://127.0.0.1:8765/ui/approvals/{item}"
            words = " ".join(c["text"] for c in res["content"][1:])
            assert f"memorywire approvals approve {item}" in words, (name, res["content"])
    finally:
        assert p.stdin is not None and p.stdout is not None
        p.stdin.close()
        p.wait(20)
        p.stdout.close()
    listed = subprocess.run([sys.executable, "-m", "memorywire.cli", "approvals", "list",
                             "--json", "--embedder", "hashing"],
                            env=env, capture_output=True, timeout=60, check=True)
    ids = {a["id"] for a in json.loads(listed.stdout)["approvals"]}
    assert {r["structuredContent"]["approval_id"] for r in answers.values()} <= ids
