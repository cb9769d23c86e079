"""Finding 10: MCP over stdio dropped some bad requests (bad JSON or UTF-8, a lone
surrogate escape, a non-object ``params``, an object id, a batch, a missing ``jsonrpc``),
so the client waited forever. ``memorywire mcp`` in a subprocess must now answer every
request line, each error carrying our envelope, and keep serving afterwards."""

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

from memorywire.server.stdio_guard import line_error

BAD: list[tuple[str, bytes, Any]] = [
    ("truncated-json", b'{"jsonrpc":"2.0","id":1,"method":"tools/call",', None),
    ("bad-utf8", b"\xff\xfe", None),
    ("params-list", b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":[1]}', 5),
    ("lone-surrogate", b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":'
     b'"forget","arguments":{"agent_id":"A","ids":["x"],"reason":"\\ud800"}}}', 6),
    ("object-id", b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', None),
    ("no-jsonrpc", b'{"id":9,"method":"tools/list"}', 9),
    ("batch", b"[1,2]", None),
    ("no-tool-name", b'{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{}}', 12),
    ("string-arguments", b'{"jsonrpc":"2.0","id":13,"method":"tools/call","params":'
     b'{"name":"recall","arguments":"x"}}', 13),
]


@pytest.fixture(scope="module")
def proc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[bytes]]:
    home: Path = tmp_path_factory.mktemp("mcp-stdio")
    p = subprocess.Popen(
        [sys.executable, "-m", "memorywire.cli", "mcp", "--store", "memory://",
         "--embedder", "hashing"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env={**os.environ, "MEMORYWIRE_HOME": str(home)},
    )
    assert p.stdin is not None
    _send(p, json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}).encode())
    assert _read(p, 30) is not None
    _send(p, b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    yield p
    p.stdin.close()
    p.wait(10)
    assert p.stdout is not None
    p.stdout.close()


def _send(p: subprocess.Popen[bytes], line: bytes) -> None:
    assert p.stdin is not None
    p.stdin.write(line + b"\n")
    p.stdin.flush()


def _read(p: subprocess.Popen[bytes], timeout: float = 5.0) -> dict[str, Any] | None:
    assert p.stdout is not None
    ready, _, _ = select.select([p.stdout], [], [], timeout)
    return json.loads(p.stdout.readline()) if ready else None


@pytest.mark.parametrize(("name", "line", "want_id"), BAD, ids=[b[0] for b in BAD])
def test_every_bad_request_is_answered_with_the_envelope(
    proc: subprocess.Popen[bytes], name: str, line: bytes, want_id: Any
) -> None:
    _send(proc, line)
    reply = _read(proc)
    assert reply is not None, f"no answer to {name}: the client would wait forever"
    assert reply["id"] == want_id
    assert reply["error"]["data"]["code"] == "invalid_request", reply
    _send(proc, b'{"jsonrpc":"2.0","id":99,"method":"tools/list"}')
    alive = _read(proc)
    assert alive is not None and alive["id"] == 99 and "result" in alive


def test_a_notification_is_never_answered() -> None:
    assert line_error('{"jsonrpc":"2.0","method":"notifications/x","params":[1]}') is None
    assert line_error('{"jsonrpc":"2.0","id":1,"method":"tools/list"}') is None
