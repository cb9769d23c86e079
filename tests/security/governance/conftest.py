"""A governed server with tokens on, and one calling convention over REST, JSON-RPC and MCP.

The world is real: SQLite memories, a SQLite governance database, a token store. REST and
JSON-RPC go through the ASGI app; MCP through a real ``mcp`` client on the in-memory transport
to the server object, acting as the agent token's principal. Each regression test in this
folder guards one finding of the hardening round (issue 13) and says which.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore
from memorywire.server.approvals import GovernanceApprovals
from memorywire.server.auth import TokenStore
from memorywire.server.dispatch import Dispatcher
from memorywire.server.http import create_app
from memorywire.server.limits import Limits, RateLimiter
from memorywire.server.mcp.server import build_mcp_server
from memorywire.store.sqlite import SqliteStore

__all__ = ["Gov", "Outcome"]

FIVE = ("remember", "recall", "forget", "merge", "expire")


@dataclass
class Outcome:
    ok: bool
    body: Any
    code: str = ""
    status: int = 200


_REST: dict[str, tuple[str, str]] = {
    "approvals.list": ("GET", "/v0/approvals"),
    "approvals.get": ("GET", "/v0/approvals/{id}"),
    "approvals.approve": ("POST", "/v0/approvals/{id}/approve"),
    "approvals.reject": ("POST", "/v0/approvals/{id}/reject"),
    "audit.list": ("GET", "/v0/audit"),
    "audit.verify": ("POST", "/v0/audit/verify"),
    "health": ("GET", "/v0/health"),
}


class Rest:
    name = "rest"

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.http = client

    async def call(self, op: str, doc: dict[str, Any], token: str | None) -> Outcome:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        headers["content-type"] = "application/json"
        if op in FIVE:  # json.dumps escapes lone surrogates, as a hostile client would send
            r = await self.http.post(f"/v0/{op}", headers=headers, content=json.dumps(doc))
        else:
            method, path = _REST[op]
            q = dict(doc)
            path = path.replace("{id}", str(q.pop("id", "")))
            if method == "GET":
                r = await self.http.get(path, headers=headers, params=q)
            else:
                r = await self.http.post(path, headers=headers, content=json.dumps(q))
        body = r.json()
        if r.status_code >= 400:
            return Outcome(False, body, body["code"], r.status_code)
        return Outcome(True, body, status=r.status_code)


class JsonRpc:
    name = "jsonrpc"

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.http = client
        self.next_id = 0

    async def call(self, op: str, doc: dict[str, Any], token: str) -> Outcome:
        self.next_id += 1
        method = f"memory.{op}" if op in FIVE else ("server.health" if op == "health" else op)
        call = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": doc}
        r = await self.http.post(
            "/v0/rpc", content=json.dumps(call), headers={"authorization": f"Bearer {token}"}
        )
        if r.status_code != 200:
            body = r.json()
            return Outcome(False, body, body["code"], r.status_code)
        reply = r.json()
        if "error" in reply:
            env = reply["error"]["data"]
            return Outcome(False, env, env["code"], reply["error"]["code"])
        return Outcome(True, reply["result"])

TRANSPORTS = ["rest", "jsonrpc", "mcp"]


@dataclass
class Gov:
    """The world: the governed store, its tokens and the names of the tokens."""

    path: Path
    store: GovernedStore
    tokens: TokenStore
    dispatcher: Dispatcher
    admin: str
    agent_a: str
    agent_b: str
    reviewer: str


def open_governed(path: Path) -> GovernedStore:
    inner = SqliteStore(path / "mem.db", embedder=HashingEmbedder())
    return GovernedStore(inner, path / "gov.db")


@pytest.fixture
async def gov(tmp_path: Path) -> AsyncIterator[Gov]:
    store = open_governed(tmp_path)
    tokens = TokenStore(tmp_path / "tokens.db")
    admin, _ = tokens.create(role="admin", name="admin")
    a, _ = tokens.create(role="agent", agent_ids=["A"], name="a")
    b, _ = tokens.create(role="agent", agent_ids=["B"], name="b")
    rv, _ = tokens.create(role="reviewer", name="rv")
    limits = Limits(recall_rate=1000.0, recall_burst=1000)
    dispatcher = Dispatcher(
        store,
        approvals=GovernanceApprovals(store),
        limits=limits,
        rate_limiter=RateLimiter(limits.recall_rate, limits.recall_burst),
    )
    yield Gov(tmp_path, store, tokens, dispatcher, admin, a, b, rv)
    tokens.close()
    await store.aclose()


class Mcp:
    """The five memory tools over a real MCP client; the principal is the token's."""

    name = "mcp"

    def __init__(self, world: Gov) -> None:
        self.world = world

    async def call(self, op: str, doc: dict[str, Any], token: str) -> Outcome:
        principal = self.world.tokens.authenticate(token)
        server = build_mcp_server(self.world.dispatcher, principal=principal)
        async with Client(server) as client:
            res = await client.call_tool(op, doc)
        body = json.loads(res.content[0].text)  # type: ignore[union-attr]
        if res.is_error:
            return Outcome(False, body, str(body.get("code")), 0)
        return Outcome(True, body)


@pytest.fixture
async def http(gov: Gov) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(gov.dispatcher, tokens=gov.tokens)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as c:
        yield c


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest, gov: Gov, http: httpx.AsyncClient) -> Any:
    """Memory operations over each transport (approvals and audit: REST and JSON-RPC)."""
    if request.param == "rest":
        return Rest(http)
    if request.param == "jsonrpc":
        return JsonRpc(http)
    return Mcp(gov)


@pytest.fixture
def rest(http: httpx.AsyncClient) -> Rest:
    return Rest(http)
