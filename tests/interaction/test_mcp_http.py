"""MCP over streamable HTTP at ``/mcp`` on the app ``memorywire serve`` builds: a real ``mcp``
client against a real uvicorn server on a loopback port. Same results and error codes as the
stdio transport and REST; Origin and bearer checks in front; each call runs as its token."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memorywire.server.app import Server, build_server
from memorywire.server.auth import TokenStore
from memorywire.server.config import ServerConfig
from memorywire.server.mcp.http import origin_allowed
from memorywire.server.mcp.tools import TOOLS
from memorywire.wire.validate import validate

pytestmark = pytest.mark.anyio


@dataclass
class Live:
    url: str
    admin: str
    a: str
    b: str
    reviewer: str
    server: Server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _serve(tmp: Path, *, governed: bool) -> Iterator[Live]:
    tokens = TokenStore()
    secrets = {
        "admin": tokens.create(role="admin")[0],
        "a": tokens.create(role="agent", agent_ids=["A"], provenance="agent:A", name="a")[0],
        "b": tokens.create(role="agent", agent_ids=["B"])[0],
        "reviewer": tokens.create(role="reviewer")[0],
    }
    port = _free_port()
    config = ServerConfig(
        store="memory://",
        embedder="hashing",
        port=port,
        tokens_db=str(tmp / "tokens.db"),
        governance_db=str(tmp / "gov.db") if governed else "",
        allowed_origins=("https://app.example",),
    )
    srv = build_server(config, tokens=tokens)
    server = uvicorn.Server(
        uvicorn.Config(srv.app, host="127.0.0.1", port=port, log_level="error", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield Live(f"http://127.0.0.1:{port}", server=srv, **secrets)
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture
async def live(tmp_path: Path) -> AsyncIterator[Live]:
    with _serve(tmp_path, governed=False) as lv:
        yield lv
    await lv.server.aclose()


@pytest.fixture
async def live_governed(tmp_path: Path) -> AsyncIterator[Live]:
    with _serve(tmp_path, governed=True) as lv:
        yield lv
    await lv.server.aclose()


@asynccontextmanager
async def _mcp(live: Live, token: str) -> AsyncIterator[Client]:
    headers = {"authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(f"{live.url}/mcp/", http_client=http)) as c,
    ):
        yield c


async def _call(c: Client, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
    res = await c.call_tool(tool, args)
    body = json.loads(res.content[0].text)  # type: ignore[union-attr]
    assert body == res.structured_content
    return (not res.is_error, body)


async def test_tools_resources_and_round_trip_match_other_transports(live: Live) -> None:
    async with _mcp(live, live.a) as c:
        tools = {t.name for t in (await c.list_tools()).tools}
        assert tools == set(TOOLS)
        read = await c.read_resource("memorywire://schemas/recall.response")
        assert json.loads(read.contents[0].text)["$id"].endswith("recall.response")  # type: ignore[union-attr]

        ok, wrote = await _call(
            c, "remember", {"agent_id": "A", "type": "semantic", "content": "http mcp works",
                            "source": "user"},
        )
        assert ok and not validate("remember.response", wrote), wrote
        ok, got = await _call(c, "recall", {"agent_id": "A", "query": "http mcp"})
        assert ok and not validate("recall.response", got)
        assert [h["id"] for h in got["results"]] == [wrote["id"]]
        assert got["results"][0]["source"] == "agent:A"  # stamped from this token, as in REST
        ok, err = await _call(c, "recall", {"agent_id": "A", "query": "x", "k": 10**9})
        assert not ok and err["code"] == "invalid_request" and err["details"][0]["path"] == "/k"
        assert not validate("error", err)
        ok, one = await _call(c, "get", {"id": wrote["id"]})  # agent_id from the token
        assert ok and one["memory"]["id"] == wrote["id"], one
        ok, err = await _call(c, "forget", {"agent_id": "A", "ids": [wrote["id"]]})
        assert not ok and err["code"] == "forbidden" and "review" in err["message"]
        ok, err = await _call(c, "expire", {"agent_id": "A", "policy": {"older_than_days": 1}})
        assert not ok and err["code"] == "forbidden" and "review" in err["message"]


async def test_each_call_runs_as_its_token(live: Live) -> None:
    async with _mcp(live, live.a) as a, _mcp(live, live.b) as b, _mcp(live, live.reviewer) as r:
        ok, _ = await _call(a, "remember", {"agent_id": "A", "type": "semantic",
                                            "content": "only for A"})
        assert ok
        ok, err = await _call(b, "recall", {"agent_id": "A", "query": "only"})
        assert (ok, err["code"]) == (False, "forbidden")
        ok, err = await _call(a, "remember", {"agent_id": "B", "type": "semantic",
                                              "content": "x"})
        assert (ok, err["code"]) == (False, "forbidden")
        ok, err = await _call(r, "remember", {"agent_id": "A", "type": "semantic",
                                              "content": "x"})
        assert (ok, err["code"]) == (False, "forbidden")  # role checks as in REST
        ok, got = await _call(b, "recall", {"agent_id": "B", "query": "only"})
        assert ok and got["results"] == []


_INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "t", "version": "0"}},
}
_HEADERS = {"accept": "application/json, text/event-stream"}


@pytest.mark.parametrize(
    ("origin", "token", "status", "code"),
    [
        ("https://evil.example", "a", 403, "forbidden"),
        ("http://evil.example:8765", None, 403, "forbidden"),
        ("null", "a", 403, "forbidden"),
        (None, None, 401, "unauthorized"),
        (None, "mw_not-a-token", 401, "unauthorized"),
        ("http://localhost:3000", None, 401, "unauthorized"),
    ],
)
async def test_origin_and_bearer_are_checked_first(
    live: Live, origin: str | None, token: str | None, status: int, code: str
) -> None:
    headers = dict(_HEADERS)
    if origin is not None:
        headers["origin"] = origin
    if token is not None:
        headers["authorization"] = f"Bearer {getattr(live, token, token)}"
    async with httpx.AsyncClient() as http:
        r = await http.post(f"{live.url}/mcp/", json=_INIT, headers=headers)
    assert r.status_code == status, r.text
    assert r.json()["code"] == code
    if status == 401:
        assert r.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize("origin", ["http://127.0.0.1:5173", "https://app.example", None])
async def test_loopback_and_configured_origins_get_through(
    live: Live, origin: str | None
) -> None:
    headers = {**_HEADERS, "authorization": f"Bearer {live.a}"}
    if origin is not None:
        headers["origin"] = origin
    async with httpx.AsyncClient() as http:
        r = await http.post(f"{live.url}/mcp/", json=_INIT, headers=headers)
    assert r.status_code == 200, r.text
    assert r.json()["result"]["serverInfo"]["name"] == "memorywire"


def test_origin_rule() -> None:
    assert origin_allowed(None) and origin_allowed("http://[::1]:8080")
    assert not origin_allowed("http://127.0.0.1.evil.example")
    assert not origin_allowed("file://localhost")
    assert origin_allowed("https://x.example", ["https://x.example"])


async def test_destructive_call_is_staged_and_approved_over_rest(live_governed: Live) -> None:
    lv = live_governed
    async with _mcp(lv, lv.a) as c:
        ok, wrote = await _call(c, "remember", {"agent_id": "A", "type": "semantic",
                                                "content": "shaky", "confidence": 0.1})
        assert ok
        ok, staged = await _call(
            c, "expire", {"agent_id": "A", "policy": {"confidence_below": 0.5}}
        )
        assert ok and staged["pending_approval"] is True and staged["matched_count"] == 0
        ok, still = await _call(c, "recall", {"agent_id": "A", "query": "shaky"})
        assert [h["id"] for h in still["results"]] == [wrote["id"]]

    auth = {"authorization": f"Bearer {lv.admin}"}
    async with httpx.AsyncClient(base_url=lv.url, headers=auth) as http:
        [item] = (await http.get("/v0/approvals")).json()["approvals"]
        assert (item["operation"], item["requested_by"]) == ("expire", "a")
        done = await http.post(f"/v0/approvals/{item['id']}/approve", json={})
        assert done.status_code == 200 and done.json()["result"]["matched_count"] == 1
    async with _mcp(lv, lv.a) as c:
        ok, gone = await _call(c, "recall", {"agent_id": "A", "query": "shaky"})
        assert ok and gone["results"] == []
