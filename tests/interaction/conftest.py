"""One world (store + tokens) and one calling convention over every transport.

A transport is ``await t.call(op, doc, token) -> Outcome``: ``ok`` with the JSON body, or the
error ``code`` with the envelope. Behaviour tests are written once against that and run over
in-process, REST, JSON-RPC (and MCP where the module parametrises it).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette

from memorywire.client import Memory
from memorywire.errors import MemorywireError
from memorywire.server.app import http_app
from memorywire.server.auth import TokenStore
from memorywire.server.config import ServerConfig
from memorywire.server.dispatch import Dispatcher
from memorywire.server.mcp.server import is_destructive
from memorywire.server.mcp.tools import TOOLS
from memorywire.server.runtime import Runtime, running
from memorywire.wire.codec import to_wire
from memorywire.wire.operations import OPERATION_TABLE
from memorywire.wire.routes import OPERATIONS as FIVE
from memorywire.wire.routes import RECORD_OPERATIONS, route_for


@dataclass
class Outcome:
    ok: bool
    body: Any
    code: str = ""
    status: int = 200
    meta: Any = None


@dataclass
class World:
    store: Any
    tokens: TokenStore
    dispatcher: Dispatcher
    admin: str
    agent_a: str
    agent_b: str
    reviewer_a: str
    runtime: Runtime


Caller = Callable[[str, dict[str, Any], str], Awaitable[Outcome]]


@pytest.fixture(params=[False])
def governed(request: pytest.FixtureRequest) -> bool:
    """Modules that need approvals override this fixture to return True."""
    return bool(request.param)


@pytest.fixture
async def world(governed: bool, tmp_path: Path) -> AsyncIterator[World]:
    """Built by the same setup as ``memorywire serve`` (the runtime), over an in-memory store."""
    config = ServerConfig(
        store="memory://",
        embedder="hashing",
        governance_db=str(tmp_path / "gov.db") if governed else "",
        recall_rate=1000.0,
        recall_burst=1000,
    )
    tokens = TokenStore()
    admin, _ = tokens.create(role="admin", name="admin")
    a, _ = tokens.create(role="agent", agent_ids=["A"], provenance="agent:A", name="a")
    b, _ = tokens.create(role="agent", agent_ids=["B"], provenance="agent:B", name="b")
    ra, _ = tokens.create(role="reviewer", agent_ids=["A"], name="ra")
    async with running(config, http=True, tokens=tokens) as runtime:
        yield World(runtime.store, tokens, runtime.dispatcher, admin, a, b, ra, runtime)


def _err(err: MemorywireError) -> Outcome:
    return Outcome(False, err.to_envelope(), err.code, err.http_status)


class InProcess:
    name = "inprocess"

    def __init__(self, world: World) -> None:
        self.world = world

    async def call(self, op: str, doc: dict[str, Any], token: str) -> Outcome:
        try:
            principal = self.world.tokens.authenticate(token)
            mem = Memory(runtime=self.world.runtime, principal=principal)
            if op in FIVE or op in RECORD_OPERATIONS:  # the typed client methods
                resp = await getattr(mem, op)(doc)
                return Outcome(True, to_wire(resp), meta=[f.store for f in resp.failures]
                               if hasattr(resp, "failures") else None)
            return Outcome(True, await mem.call(op, doc))
        except MemorywireError as err:
            return _err(err)


class Rest:
    name = "rest"

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.http = client

    async def raw(
        self, method: str, path: str, token: str | None, **kw: Any
    ) -> httpx.Response:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return await self.http.request(method, path, headers=headers, **kw)

    async def call(self, op: str, doc: dict[str, Any], token: str) -> Outcome:
        route = route_for(op, doc)
        assert route is not None, f"{op} has no REST route"
        if op in FIVE or op in RECORD_OPERATIONS:
            r = await self.raw(route.method, route.path, token, json=doc)
        else:
            path, q = route.fill(doc)
            if route.method == "GET":
                r = await self.raw("GET", path, token, params=q)
            else:
                r = await self.raw("POST", path, token, json=q)
        body = r.json()
        if r.status_code >= 400:
            return Outcome(False, body, body["code"], r.status_code)
        return Outcome(True, body, meta=r.headers.get("memorywire-store-failures"))


_RPC_METHOD = {s.name: s.rpc for s in OPERATION_TABLE if s.rpc is not None}


class JsonRpc:
    name = "jsonrpc"

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.http = client
        self.next_id = 0

    async def call(self, op: str, doc: dict[str, Any], token: str) -> Outcome:
        self.next_id += 1
        call = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": _RPC_METHOD.get(op, op),
            "params": doc,
        }
        r = await self.http.post(
            "/v0/rpc",
            content=json.dumps(call),
            headers={"authorization": f"Bearer {token}", "content-type": "application/json"},
        )
        if r.status_code != 200:
            body = r.json()
            return Outcome(False, body, body["code"], r.status_code)
        reply = r.json()
        assert reply["id"] == self.next_id
        if "error" in reply:
            env = reply["error"]["data"]
            return Outcome(False, env, env["code"], reply["error"]["code"])
        return Outcome(True, reply["result"], meta=reply.get("_meta"))


class Mcp:
    """MCP over streamable HTTP at the app's ``/mcp`` mount, a fresh session per call (the
    server is stateless). MCP offers the memory operations as tools, and never runs a
    destructive call directly (it is staged or refused: ``test_mcp*.py``), so calls outside
    that are skipped, naming why."""

    name = "mcp"

    def __init__(self, app: Starlette) -> None:
        self.app = app

    def _http(self, token: str) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=self.app),
            base_url="http://127.0.0.1",
            headers={"authorization": f"Bearer {token}"},
        )

    async def call(self, op: str, doc: dict[str, Any], token: str) -> Outcome:
        if op not in TOOLS:
            pytest.skip(f"MCP has no tool for {op}; tools are the memory operations")
        if is_destructive(op, doc):
            pytest.skip(f"over MCP this {op} is staged or refused, never run (test_mcp*.py)")
        async with self._http(token) as http:
            refused = await http.post("/mcp/", json={})
            if refused.status_code in (401, 403):
                body = refused.json()
                return Outcome(False, body, body["code"], refused.status_code)
            streams = streamable_http_client("http://127.0.0.1/mcp/", http_client=http)
            async with Client(streams) as c:
                res = await c.call_tool(op, doc)
        body = res.structured_content
        if res.is_error:
            assert isinstance(body, dict)
            return Outcome(False, body, body["code"], 0)
        meta = res.meta or {}
        failures = meta.get("memorywire/store_failures")
        return Outcome(True, body, meta=[f["store"] for f in failures] if failures else None)


@pytest.fixture
async def asgi_app(world: World) -> AsyncIterator[Starlette]:
    """The app ``memorywire serve`` runs, with its lifespan (``/mcp``) entered."""
    app = http_app(world.runtime)
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
async def asgi_client(asgi_app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=asgi_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
        yield c


@pytest.fixture(params=["inprocess", "rest", "jsonrpc", "mcp"])
async def transport(
    request: pytest.FixtureRequest,
    world: World,
    asgi_app: Starlette,
    asgi_client: httpx.AsyncClient,
) -> Any:
    if request.param == "inprocess":
        return InProcess(world)
    if request.param == "rest":
        return Rest(asgi_client)
    if request.param == "mcp":
        return Mcp(asgi_app)
    return JsonRpc(asgi_client)
