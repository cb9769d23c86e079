"""What only HTTP has: hostile bodies, auth headers, rate limiting, JSON-RPC framing, OpenAPI,
and one real uvicorn server on a loopback port."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from memorywire.client import RemoteMemory, SyncMemory
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import Forbidden, InvalidRequest
from memorywire.server.auth import TokenStore
from memorywire.server.dispatch import Dispatcher
from memorywire.server.http import create_app
from memorywire.server.limits import Limits, RateLimiter
from memorywire.store.memory import InMemoryStore
from memorywire.wire.validate import validate

from .conftest import World

pytestmark = pytest.mark.anyio


def _envelope(r: httpx.Response, status: int, code: str) -> None:
    assert r.status_code == status, r.text
    body = r.json()
    assert body["code"] == code
    assert not validate("error", body)


HOSTILE: list[tuple[str, bytes, int, str]] = [
    ("malformed", b'{"agent_id": "A", "query": ', 400, "invalid_request"),
    ("not-utf8", b'{"agent_id": "\xff"}', 400, "invalid_request"),
    ("nan", b'{"agent_id": "A", "query": "x", "k": NaN}', 400, "invalid_request"),
    ("array", b"[1, 2]", 400, "invalid_request"),
    ("deep", b"[" * 10_000 + b"]" * 10_000, 400, "invalid_request"),
    ("deep-object", b'{"a":' * 10_000 + b"1" + b"}" * 10_000, 400, "invalid_request"),
    ("oversized", b'{"agent_id": "A", "query": "' + b"x" * (2 << 20) + b'"}', 413,
     "payload_too_large"),
    ("huge-k", b'{"agent_id": "A", "query": "x", "k": 1000000000}', 400, "invalid_request"),
    ("unknown-field", b'{"agent_id": "A", "query": "x", "sneaky": true}', 400,
     "invalid_request"),
]


@pytest.mark.parametrize(("name", "raw", "status", "code"), HOSTILE, ids=[h[0] for h in HOSTILE])
async def test_hostile_bodies_get_an_envelope_and_the_server_stays_up(
    asgi_client: httpx.AsyncClient, world: World, name: str, raw: bytes, status: int, code: str
) -> None:
    auth = {"authorization": f"Bearer {world.agent_a}", "content-type": "application/json"}
    r = await asgi_client.post("/v0/recall", content=raw, headers=auth)
    _envelope(r, status, code)
    rpc = await asgi_client.post("/v0/rpc", content=raw, headers=auth)
    if status == 413:
        _envelope(rpc, 413, code)
    else:
        assert rpc.status_code == 200
        replies = rpc.json() if isinstance(rpc.json(), list) else [rpc.json()]
        assert all(x["error"]["code"] in (-32700, -32600, -32602) for x in replies)
    ok = await asgi_client.get("/v0/health")
    assert ok.status_code == 200 and ok.json()["status"] == "ok"


async def test_oversized_content_is_refused(asgi_client: httpx.AsyncClient, world: World) -> None:
    doc = {"agent_id": "A", "type": "semantic", "content": "x" * (300 << 10)}
    r = await asgi_client.post(
        "/v0/remember", json=doc, headers={"authorization": f"Bearer {world.agent_a}"}
    )
    _envelope(r, 413, "payload_too_large")


@pytest.mark.parametrize(
    "header", [None, "Bearer", "Bearer mw_nope", "Basic dXNlcjpwYXNz", "bearer   "]
)
async def test_missing_or_bad_tokens_are_401(
    asgi_client: httpx.AsyncClient, header: str | None
) -> None:
    headers = {"authorization": header} if header is not None else {}
    r = await asgi_client.post("/v0/recall", json={"agent_id": "A", "query": "x"}, headers=headers)
    _envelope(r, 401, "unauthorized")
    assert r.headers["www-authenticate"].startswith("Bearer")


async def test_revoked_token_stops_working(asgi_client: httpx.AsyncClient, world: World) -> None:
    secret, info = world.tokens.create(role="agent", agent_ids=["A"])
    doc = {"agent_id": "A", "query": "x"}
    auth = {"authorization": f"Bearer {secret}"}
    assert (await asgi_client.post("/v0/recall", json=doc, headers=auth)).status_code == 200
    world.tokens.revoke(info.id)
    _envelope(await asgi_client.post("/v0/recall", json=doc, headers=auth), 401, "unauthorized")


async def test_recall_is_rate_limited_per_token(world: World) -> None:
    limits = Limits(recall_rate=0.5, recall_burst=2)
    dispatcher = Dispatcher(world.store, limits=limits, rate_limiter=RateLimiter(0.5, 2))
    app = create_app(dispatcher, tokens=world.tokens)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://t"
    ) as c:
        doc = {"agent_id": "A", "query": "x"}
        a = {"authorization": f"Bearer {world.agent_a}"}
        b = {"authorization": f"Bearer {world.agent_b}"}
        for _ in range(2):
            assert (await c.post("/v0/recall", json=doc, headers=a)).status_code == 200
        r = await c.post("/v0/recall", json=doc, headers=a)
        _envelope(r, 429, "rate_limited")
        assert int(r.headers["retry-after"]) >= 1 and r.json()["retry_after"] > 0
        other = await c.post("/v0/recall", json={**doc, "agent_id": "B"}, headers=b)
        assert other.status_code == 200


async def test_unknown_route_and_method(asgi_client: httpx.AsyncClient, world: World) -> None:
    _envelope(await asgi_client.get("/v0/nothing"), 404, "not_found")
    r = await asgi_client.get("/v0/recall")
    assert r.status_code == 405 and r.json()["code"] == "invalid_request"


async def test_jsonrpc_framing(asgi_client: httpx.AsyncClient, world: World) -> None:
    auth = {"authorization": f"Bearer {world.agent_a}"}
    recall = {"agent_id": "A", "query": "x"}
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "memory.recall", "params": recall},
        {"jsonrpc": "2.0", "method": "memory.recall", "params": recall},
        {"jsonrpc": "2.0", "id": 2, "method": "memory.nope"},
        {"jsonrpc": "2.0", "id": 3, "method": "memory.recall", "params": ["A", "x"]},
        {"jsonrpc": "2.0", "id": 4, "method": "memory.recall", "params": {"agent_id": "B",
                                                                          "query": "x"}},
        {"id": 5, "method": "memory.recall"},
    ]
    r = await asgi_client.post("/v0/rpc", json=batch, headers=auth)
    replies = {x["id"]: x for x in r.json()}
    assert len(r.json()) == 5  # the notification got no reply
    assert not validate("recall.response", replies[1]["result"])
    assert replies[2]["error"]["code"] == -32601
    assert replies[3]["error"]["code"] == -32602
    assert replies[3]["error"]["data"]["code"] == "invalid_request"
    assert replies[4]["error"]["code"] == -32000
    assert replies[4]["error"]["data"]["code"] == "forbidden"
    assert replies[None]["error"]["code"] == -32600
    only_notes = [{"jsonrpc": "2.0", "method": "memory.recall", "params": recall}]
    r = await asgi_client.post("/v0/rpc", json=only_notes, headers=auth)
    assert r.status_code == 204 and r.content == b""
    r = await asgi_client.post("/v0/rpc", json=[], headers=auth)
    assert r.json()["error"]["code"] == -32600


async def test_openapi_is_built_from_the_wire_schemas(
    asgi_client: httpx.AsyncClient, world: World
) -> None:
    doc = (await asgi_client.get("/openapi.json")).json()
    assert doc["openapi"].startswith("3.1")
    comps = doc["components"]["schemas"]
    for op in ("remember", "recall", "forget", "merge", "expire"):
        post = doc["paths"][f"/v0/{op}"]["post"]
        assert post["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(op)
        assert f"{op}.response" in comps
    text = json.dumps(doc)
    assert "$defs" not in text and "https://memorywire.dev" not in text.replace(
        '"$schema"', ""
    ).replace("jsonSchemaDialect", "")
    # Every $ref resolves inside the document, and a live response validates through it.
    reg: Registry[Any] = Registry().with_resource(
        "urn:openapi", Resource.from_contents(doc, default_specification=DRAFT202012)
    )
    auth = {"authorization": f"Bearer {world.agent_a}"}
    body = (
        await asgi_client.post(
            "/v0/remember", json={"agent_id": "A", "type": "semantic", "content": "hi"},
            headers=auth,
        )
    ).json()
    for name, instance in (("remember.response", body), ("remember", {"agent_id": "A"})):
        v = Draft202012Validator({"$ref": f"urn:openapi#/components/schemas/{name}"}, registry=reg)
        errors = list(v.iter_errors(instance))
        assert (not errors) == (name == "remember.response"), errors


# --- one real server --------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def live_server() -> Iterator[tuple[str, dict[str, str]]]:
    store = InMemoryStore(HashingEmbedder())
    tokens = TokenStore()
    secrets = {
        "a": tokens.create(role="agent", agent_ids=["A"], provenance="agent:A")[0],
        "b": tokens.create(role="agent", agent_ids=["B"])[0],
    }
    app = create_app(Dispatcher(store), tokens=tokens)
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}", secrets
    server.should_exit = True
    thread.join(10)
    tokens.close()


async def test_remote_client_against_a_real_server(
    live_server: tuple[str, dict[str, str]],
) -> None:
    url, secrets = live_server
    async with RemoteMemory(url, secrets["a"]) as mem:
        wrote = await mem.remember(agent_id="A", type="semantic", content="real sockets work")
        got = await mem.recall(agent_id="A", query="sockets")
        assert [h.id for h in got.results] == [wrote.id]
        assert got.results[0].source == "agent:A"
        with pytest.raises(Forbidden):
            await mem.recall(agent_id="B", query="sockets")
        with pytest.raises(InvalidRequest) as exc:
            await mem.recall(agent_id="A", query="x", k=10**9)
        assert exc.value.details[0].path == "/k"
        assert (await mem.call("health"))["status"] == "ok"


def test_sync_client_against_a_real_server(live_server: tuple[str, dict[str, str]]) -> None:
    url, secrets = live_server
    with SyncMemory.remote(url, secrets["b"]) as mem:
        wrote = mem.remember(agent_id="B", type="episodic", content="blocking call")
        assert mem.recall(agent_id="B", query="blocking").results[0].id == wrote.id
        assert mem.forget(agent_id="B", ids=[wrote.id]).forgotten_ids == [wrote.id]
        with pytest.raises(Forbidden):
            mem.remember(agent_id="A", type="semantic", content="not mine")
