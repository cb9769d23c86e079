"""A governed, token-protected server on SQLite, reachable over every transport.

Each regression test of the hardening round attacks this rig the way the attacker did: a
real ``SqliteStore`` under a ``GovernedStore`` (so a crash leaves its marker in the audit
log), real tokens, and the same request over REST, JSON-RPC and MCP. A transport's
``call(op, doc, token)`` answers an :class:`Outcome` with the HTTP-like status, the error
code and the body, so one assertion covers all three.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import ERROR_CODES
from memorywire.governance import GovernedStore
from memorywire.server.approvals import GovernanceApprovals
from memorywire.server.auth import TokenStore
from memorywire.server.dispatch import Dispatcher
from memorywire.server.http import create_app
from memorywire.server.limits import Limits
from memorywire.server.mcp.http import McpHttp
from memorywire.store.sqlite import SqliteStore

#: The code a test sees when the MCP SDK refused the bytes as unparseable JSON-RPC.
MCP_PARSE_ERROR = "mcp_parse_error"
FIVE = ("remember", "recall", "forget", "merge", "expire")
#: The record operations, posted to ``/v0/<op>`` and named ``memory.<op>`` in JSON-RPC too.
RECORDS = ("get", "list", "update", "history", "erase")
_REST: dict[str, tuple[str, str]] = {
    "approvals.list": ("GET", "/v0/approvals"),
    "approvals.get": ("GET", "/v0/approvals/{id}"),
    "approvals.approve": ("POST", "/v0/approvals/{id}/approve"),
    "approvals.reject": ("POST", "/v0/approvals/{id}/reject"),
    "audit.list": ("GET", "/v0/audit"),
    "health": ("GET", "/v0/health"),
}
_RPC = {op: f"memory.{op}" for op in (*FIVE, *RECORDS)} | {"health": "server.health"}


@dataclass
class Outcome:
    status: int
    code: str
    body: Any

    @property
    def ok(self) -> bool:
        return self.status < 400


@dataclass
class Rig:
    gov: GovernedStore
    tokens: TokenStore
    dispatcher: Dispatcher
    http: httpx.AsyncClient
    admin: str
    agent: str
    user1: str
    user2: str
    reviewer: str
    _mcp: dict[str, Any] = field(default_factory=dict)

    def audit_len(self) -> int:
        return len(self.gov.audit_entries(limit=100_000))

    def chain_ok(self) -> bool:
        return bool(self.gov.verify()["ok"])


@pytest.fixture
def governed() -> bool:
    """Modules that attack a server without governance override this to return False."""
    return True


@asynccontextmanager
async def open_rig(tmp_path: Path, governed: bool = True) -> AsyncIterator[Rig]:
    inner = SqliteStore(tmp_path / "mem.db", embedder=HashingEmbedder())
    gov = GovernedStore(inner, tmp_path / "gov.db")
    tokens = TokenStore()
    admin, _ = tokens.create(role="admin", name="admin")
    agent, _ = tokens.create(role="agent", agent_ids=["A"], name="agent")
    user1, _ = tokens.create(role="agent", agent_ids=["A"], user_ids=["u1"], name="u1")
    user2, _ = tokens.create(role="agent", agent_ids=["A"], user_ids=["u2"], name="u2")
    reviewer, _ = tokens.create(role="reviewer", agent_ids=["A"], name="rev")
    dispatcher = (
        Dispatcher(gov, approvals=GovernanceApprovals(gov), limits=Limits())
        if governed
        else Dispatcher(inner, limits=Limits())  # gov stays only to answer audit_len()
    )
    mcp_http = McpHttp(dispatcher, tokens=tokens)
    app = create_app(dispatcher, tokens=tokens, mcp_app=mcp_http)
    transport = httpx.ASGITransport(app=app)
    try:
        async with mcp_http.lifespan(), httpx.AsyncClient(
            transport=transport, base_url="http://127.0.0.1"
        ) as http:
            yield Rig(gov, tokens, dispatcher, http, admin, agent, user1, user2, reviewer)
    finally:
        tokens.close()
        await gov.aclose()


@pytest.fixture
async def rig(tmp_path: Path, governed: bool) -> AsyncIterator[Rig]:
    async with open_rig(tmp_path, governed) as r:
        yield r


def _status(code: str) -> int:
    """The HTTP status REST would give the error code JSON-RPC or MCP carried."""
    cls = ERROR_CODES.get(code)
    return cls.http_status if cls is not None else 500


async def rest(rig: Rig, op: str, doc: dict[str, Any], token: str) -> Outcome:
    headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
    body = json.dumps(doc)  # keeps lone surrogates as \ud800 escapes: valid JSON text
    if op in FIVE or op in RECORDS:
        r = await rig.http.post(f"/v0/{op}", content=body, headers=headers)
    else:
        method, path = _REST[op]
        q = dict(doc)
        path = path.replace("{id}", quote(str(q.pop("id", "")), safe=""))
        if method == "GET":
            r = await rig.http.get(path, params=q, headers=headers)
        else:
            r = await rig.http.post(path, content=json.dumps(q), headers=headers)
    try:
        out = r.json()
    except ValueError:  # e.g. a redirect: not ours to shape, only its status matters
        return Outcome(r.status_code, "not_json", r.text)
    code = out.get("code", "") if r.status_code >= 400 and isinstance(out, dict) else ""
    return Outcome(r.status_code, code, out)


async def jsonrpc(rig: Rig, op: str, doc: dict[str, Any], token: str) -> Outcome:
    call = {"jsonrpc": "2.0", "id": 1, "method": _RPC.get(op, op), "params": doc}
    r = await rig.http.post(
        "/v0/rpc",
        content=json.dumps(call),
        headers={"authorization": f"Bearer {token}", "content-type": "application/json"},
    )
    reply = r.json()
    if r.status_code != 200:
        return Outcome(r.status_code, reply["code"], reply)
    if "error" in reply:
        env = reply["error"]["data"]
        return Outcome(_status(env["code"]), env["code"], env)
    return Outcome(200, "", reply["result"])


async def mcp(rig: Rig, op: str, doc: dict[str, Any], token: str) -> Outcome:
    """A ``tools/call`` as raw JSON text to ``/mcp`` (an SDK client cannot even encode a
    lone surrogate in a key, but an attacker's bytes can)."""
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": op, "arguments": doc},
    }
    r = await rig.http.post(
        "/mcp/",
        content=json.dumps(call),
        headers={
            "authorization": f"Bearer {token}",
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        },
    )
    if r.status_code == 400 and r.json().get("error", {}).get("code") == -32700:
        # The SDK's own JSON parser refuses lone surrogate escapes before any tool runs.
        return Outcome(400, MCP_PARSE_ERROR, r.json())
    if r.status_code != 200:
        return Outcome(r.status_code, "http", r.text)
    reply = r.json()
    if "error" in reply:  # a protocol-level error: not our envelope
        return Outcome(500, "raw_text", reply["error"])
    res = reply["result"]
    text = res["content"][0]["text"]
    try:
        body = json.loads(text)
    except json.JSONDecodeError:  # not our envelope: the raw text of an exception
        return Outcome(500, "raw_text", text)
    if not res.get("isError"):
        return Outcome(200, "", body)
    return Outcome(_status(body.get("code", "")), body.get("code", ""), body)


TRANSPORTS = {"rest": rest, "jsonrpc": jsonrpc, "mcp": mcp}


class Caller:
    """``await call(op, doc, token=admin)`` over one transport; ``call.name`` says which."""

    def __init__(self, name: str, rig: Rig) -> None:
        self.name = name
        self._fn = TRANSPORTS[name]
        self._rig = rig

    async def __call__(self, op: str, doc: dict[str, Any], token: str | None = None) -> Outcome:
        return await self._fn(self._rig, op, doc, token or self._rig.admin)


@pytest.fixture(params=sorted(TRANSPORTS))
def call(request: pytest.FixtureRequest, rig: Rig) -> Caller:
    return Caller(str(request.param), rig)
