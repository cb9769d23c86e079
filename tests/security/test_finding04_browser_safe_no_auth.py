"""Finding 4: ``serve --no-auth`` answered any web page. A ``text/plain`` cross-site POST
(no CORS preflight) could write or hard-forget, and DNS rebinding (the attacker's name
resolving to 127.0.0.1, so the page is same-origin) could read. ``/mcp`` already refused
foreign Origins; REST and JSON-RPC now apply the same Origin rule, refuse a foreign Host
on a loopback bind, and take state-changing requests only as ``application/json``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memorywire.server.app import Server, build_server
from memorywire.server.config import ServerConfig
from memorywire.store.base import ListQuery

pytestmark = pytest.mark.anyio

ORIGIN = "https://evil.example"
REM = json.dumps({"agent_id": "A", "type": "semantic", "content": "planted by a web page"})


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Server, httpx.AsyncClient]]:
    config = ServerConfig(
        store="memory://",
        embedder="hashing",
        no_auth=True,
        host="127.0.0.1",
        port=8765,
        tokens_db=str(tmp_path / "t.db"),
        governance_db=str(tmp_path / "gov.db"),
    )
    srv = build_server(config)
    transport = httpx.ASGITransport(app=srv.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as c:
        yield srv, c
    await srv.aclose()


async def _stored(srv: Server) -> list[Any]:
    return await srv.store.list(ListQuery(agent_id="A"))


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v0/remember", REM),
        ("/v0/rpc", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "memory.remember",
                                "params": json.loads(REM)})),
    ],
)
@pytest.mark.parametrize("origin", [ORIGIN, None])
async def test_text_plain_post_cannot_write(
    served: tuple[Server, httpx.AsyncClient], path: str, body: str, origin: str | None
) -> None:
    srv, http = served
    headers = {"content-type": "text/plain;charset=UTF-8"}
    if origin is not None:
        headers["origin"] = origin
    r = await http.post(path, content=body, headers=headers)
    assert r.status_code in (403, 415), r.text
    assert r.json()["code"] in ("forbidden", "invalid_request")
    assert await _stored(srv) == []


async def test_cross_site_json_post_is_refused_by_origin(
    served: tuple[Server, httpx.AsyncClient],
) -> None:
    _, http = served
    r = await http.post(
        "/v0/forget",
        json={"agent_id": "A", "filter": {"k": "v"}, "hard_delete": True},
        headers={"origin": ORIGIN},
    )
    assert r.status_code == 403 and r.json()["code"] == "forbidden"


@pytest.mark.parametrize("path", ["/v0/approvals", "/v0/audit", "/v0/health"])
async def test_dns_rebinding_host_cannot_read(
    served: tuple[Server, httpx.AsyncClient], path: str
) -> None:
    _, http = served
    r = await http.get(path, headers={"host": "evil.example:8765"})
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    assert "Host" in r.json()["message"]


@pytest.mark.parametrize("origin", [None, "http://localhost:8765", "http://127.0.0.1:5173"])
async def test_local_json_clients_still_work(
    served: tuple[Server, httpx.AsyncClient], origin: str | None
) -> None:
    srv, http = served
    headers = {"origin": origin} if origin else {}
    r = await http.post("/v0/remember", content=REM,
                        headers={**headers, "content-type": "application/json"})
    assert r.status_code == 200, r.text
    r = await http.get("/v0/health", headers={"host": "localhost:8765"})
    assert r.status_code == 200
    assert len(await _stored(srv)) == 1
