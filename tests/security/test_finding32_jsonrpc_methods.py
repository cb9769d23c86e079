"""Issue 32 (Low): JSON-RPC had no ``recover`` method although the README lists JSON-RPC
among recover's transports (its method was only ``admin.recover``), and an unknown method
was answered with our ``internal_error`` envelope, which reads as the server's fault. The
method is now there under the name the CLI and the MCP tool use, and an unknown method is
JSON-RPC ``method_not_found`` (-32601) carrying ``not_found`` and the method list.

Before the fix: ``recover`` answered -32601, and unknown methods carried ``internal_error``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.security.conftest import Rig

pytestmark = pytest.mark.anyio


async def _rpc(rig: Rig, method: str, params: dict[str, Any]) -> dict[str, Any]:
    r = await rig.http.post(
        "/v0/rpc",
        content=json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}),
        headers={"authorization": f"Bearer {rig.admin}", "content-type": "application/json"})
    assert r.status_code == 200, r.text
    reply: dict[str, Any] = r.json()
    return reply


@pytest.mark.parametrize("method", ["recover", "admin.recover"])
async def test_recover_is_a_method(rig: Rig, method: str) -> None:
    reply = await _rpc(rig, method, {"agent_id": "A", "dry_run": True})
    assert "result" in reply, reply
    assert reply["result"]["dry_run"] is True


async def test_an_unknown_method_is_method_not_found(rig: Rig) -> None:
    reply = await _rpc(rig, "memory.reremember", {})
    assert reply["error"]["code"] == -32601, reply
    envelope = reply["error"]["data"]
    assert envelope["code"] == "not_found", envelope
    assert "memory.remember" in envelope["message"], envelope
