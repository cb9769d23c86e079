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
import pytest

from memorywire.client import Memory
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import MemorywireError
from memorywire.governance import GovernedStore
from memorywire.server.approvals import GovernanceApprovals
from memorywire.server.auth import TokenStore
from memorywire.server.dispatch import Dispatcher
from memorywire.server.http import create_app
from memorywire.server.limits import Limits, RateLimiter
from memorywire.store.memory import InMemoryStore
from memorywire.wire.codec import to_wire

FIVE = ("remember", "recall", "forget", "merge", "expire")


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


Caller = Callable[[str, dict[str, Any], str], Awaitable[Outcome]]


@pytest.fixture(params=[False])
def governed(request: pytest.FixtureRequest) -> bool:
    """Modules that need approvals override this fixture to return True."""
    return bool(request.param)


@pytest.fixture
async def world(governed: bool, tmp_path: Path) -> AsyncIterator[World]:
    inner = InMemoryStore(HashingEmbedder())
    store: Any = inner
    approvals = None
    if governed:
        store = GovernedStore(inner, tmp_path / "gov.db")
        approvals = GovernanceApprovals(store)
    tokens = TokenStore()
    admin, _ = tokens.create(role="admin", name="admin")
    a, _ = tokens.create(role="agent", agent_ids=["A"], provenance="agent:A", name="a")
    b, _ = tokens.create(role="agent", agent_ids=["B"], provenance="agent:B", name="b")
    ra, _ = tokens.create(role="reviewer", agent_ids=["A"], name="ra")
    limits = Limits(recall_rate=1000.0, recall_burst=1000)
    dispatcher = Dispatcher(
        store,
        approvals=approvals,
        limits=limits,
        rate_limiter=RateLimiter(limits.recall_rate, limits.recall_burst),
    )
    yield World(store, tokens, dispatcher, admin, a, b, ra)
    tokens.close()
    await store.aclose()


def _err(err: MemorywireError) -> Outcome:
    return Outcome(False, err.to_envelope(), err.code, err.http_status)


class InProcess:
    name = "inprocess"

    def __init__(self, world: World) -> None:
        self.world = world

    async def call(self, op: str, doc: dict[str, Any], token: str) -> Outcome:
        try:
            principal = self.world.tokens.authenticate(token)
            mem = Memory(self.world.store, principal=principal)
            mem._dispatcher = self.world.dispatcher  # share the server's limits and rate limiter
            if op in FIVE:
                resp = await getattr(mem, op)(doc)
                return Outcome(True, to_wire(resp), meta=[f.store for f in resp.failures]
                               if hasattr(resp, "failures") else None)
            return Outcome(True, await mem.call(op, doc))
        except MemorywireError as err:
            return _err(err)


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

    async def raw(
        self, method: str, path: str, token: str | None, **kw: Any
    ) -> httpx.Response:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return await self.http.request(method, path, headers=headers, **kw)

    async def call(self, op: str, doc: dict[str, Any], token: str) -> Outcome:
        if op in FIVE:
            r = await self.raw("POST", f"/v0/{op}", token, json=doc)
        else:
            method, path = _REST[op]
            q = dict(doc)
            path = path.replace("{id}", str(q.pop("id", "")))
            if method == "GET":
                r = await self.raw("GET", path, token, params=q)
            else:
                r = await self.raw("POST", path, token, json=q)
        body = r.json()
        if r.status_code >= 400:
            return Outcome(False, body, body["code"], r.status_code)
        return Outcome(True, body, meta=r.headers.get("memorywire-store-failures"))


_RPC_METHOD = {op: f"memory.{op}" for op in FIVE} | {"health": "server.health"}


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
            "/v0/rpc", content=json.dumps(call), headers={"authorization": f"Bearer {token}"}
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


@pytest.fixture
async def asgi_client(world: World) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(world.dispatcher, tokens=world.tokens)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


@pytest.fixture(params=["inprocess", "rest", "jsonrpc"])
async def transport(
    request: pytest.FixtureRequest, world: World, asgi_client: httpx.AsyncClient
) -> Any:
    if request.param == "inprocess":
        return InProcess(world)
    if request.param == "rest":
        return Rest(asgi_client)
    return JsonRpc(asgi_client)
