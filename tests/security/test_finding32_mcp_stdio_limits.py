"""Finding 32 (medium): ``memorywire mcp`` (stdio) died on a tool call whose metadata nests
5,000 deep, and the next request was never answered. stdio now applies the request body's
limits that HTTP applies (``max_json_depth``, ``max_body_bytes``) before any parser runs,
answers the refused line with its id, and keeps serving; REST, JSON-RPC and MCP over HTTP
refuse the same call and keep serving too."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.security.conftest import Caller, Rig

DEEP = "[" * 5_000 + "]" * 5_000


def _call(id_: int, metadata: str) -> bytes:
    return (f'{{"jsonrpc":"2.0","id":{id_},"method":"tools/call","params":{{"name":"remember",'
            f'"arguments":{{"agent_id":"A","type":"semantic","content":"x",'
            f'"metadata":{{"d":{metadata}}}}}}}}}').encode()


@pytest.fixture(scope="module")
def proc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[bytes]]:
    home: Path = tmp_path_factory.mktemp("mcp-stdio-limits")
    p = subprocess.Popen(
        [sys.executable, "-m", "memorywire.cli", "mcp", "--store", "memory://",
         "--embedder", "hashing"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env={**os.environ, "MEMORYWIRE_HOME": str(home)},
    )
    _send(p, json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}).encode())
    assert _read(p, 30) is not None
    _send(p, b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    yield p
    assert p.stdin is not None and p.stdout is not None
    p.stdin.close()
    p.wait(10)
    p.stdout.close()


def _send(p: subprocess.Popen[bytes], line: bytes) -> None:
    assert p.stdin is not None
    try:
        p.stdin.write(line + b"\n")
        p.stdin.flush()
    except BrokenPipeError:
        pytest.fail("memorywire mcp has exited")


def _read(p: subprocess.Popen[bytes], timeout: float = 10.0) -> dict[str, Any] | None:
    assert p.stdout is not None
    ready, _, _ = select.select([p.stdout], [], [], timeout)
    if not ready:
        return None
    line = p.stdout.readline()
    return json.loads(line) if line else None


def _still_serving(p: subprocess.Popen[bytes]) -> None:
    _send(p, b'{"jsonrpc":"2.0","id":99,"method":"tools/list"}')
    alive = _read(p)
    assert alive is not None and alive["id"] == 99 and "result" in alive, alive


def test_stdio_answers_a_5000_deep_call_and_the_next_request(
    proc: subprocess.Popen[bytes],
) -> None:
    _send(proc, _call(7, DEEP))
    reply = _read(proc)
    assert reply is not None, "no answer: memorywire mcp died"
    assert reply["id"] == 7
    assert reply["error"]["data"]["code"] == "invalid_request"
    assert reply["error"]["data"]["details"][0]["keyword"] == "maxDepth"
    _still_serving(proc)


def test_stdio_refuses_a_line_over_the_body_limit_and_keeps_serving(
    proc: subprocess.Popen[bytes],
) -> None:
    _send(proc, _call(8, json.dumps("y" * (2 << 20))))
    reply = _read(proc)
    assert reply is not None and reply["id"] == 8, reply
    assert reply["error"]["data"]["code"] == "payload_too_large"
    _still_serving(proc)


def test_stdio_still_takes_nesting_within_the_limit(proc: subprocess.Popen[bytes]) -> None:
    _send(proc, _call(9, "[" * 40 + "]" * 40))
    reply = _read(proc)
    assert reply is not None and reply["id"] == 9 and "result" in reply, reply
    assert not reply["result"].get("isError"), reply


_RAW = {
    "rest": ("/v0/remember", "{args}"),
    "jsonrpc": ("/v0/rpc", '{{"jsonrpc":"2.0","id":1,"method":"memory.remember","params":{args}}}'),
    "mcp": ("/mcp/", '{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":'
                     '{{"name":"remember","arguments":{args}}}}}'),
}


@pytest.mark.anyio
async def test_http_transports_refuse_the_same_call_and_keep_serving(
    rig: Rig, call: Caller
) -> None:
    args = f'{{"agent_id":"A","type":"semantic","content":"x","metadata":{{"d":{DEEP}}}}}'
    path, template = _RAW[call.name]
    r = await rig.http.post(path, content=template.format(args=args), headers={
        "authorization": f"Bearer {rig.admin}", "content-type": "application/json",
        "accept": "application/json, text/event-stream"})
    assert r.status_code < 500, r.text[:300]
    body = r.json()
    refused = r.status_code >= 400 or "error" in body or body.get("result", {}).get("isError")
    assert refused, body
    assert "maxDepth" in r.text or "-32700" in r.text or "Parse error" in r.text, r.text[:300]
    again = await call("recall", {"agent_id": "A", "query": "x"})
    assert again.ok, again
