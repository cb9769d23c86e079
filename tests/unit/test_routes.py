"""One route table: every route in it is served, documented in OpenAPI and used by the client,
and nothing outside it is (a path spelled in one place cannot drift from the others)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest
from starlette.routing import Route as StarletteRoute

from memorywire.client import RemoteMemory
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import MemorywireError
from memorywire.server.dispatch import Dispatcher
from memorywire.server.http import create_app
from memorywire.server.openapi import openapi_document
from memorywire.store.memory import InMemoryStore
from memorywire.wire.routes import OPERATIONS, ROUTES, Route, route_for

pytestmark = pytest.mark.anyio

TABLE = {(r.method, r.path) for r in ROUTES}
SAMPLE = {"id": "x", "name": "remember"}


@pytest.fixture
async def app_client() -> AsyncIterator[tuple[httpx.AsyncClient, set[tuple[str, str]]]]:
    store = InMemoryStore(HashingEmbedder())
    app = create_app(Dispatcher(store), tokens=None)
    mounted = {
        (m, r.path)
        for r in app.routes
        if isinstance(r, StarletteRoute)
        for m in (r.methods or ()) - {"HEAD"}
    }
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        yield http, mounted
    await store.aclose()


async def test_every_route_is_served_and_nothing_else(
    app_client: tuple[httpx.AsyncClient, set[tuple[str, str]]],
) -> None:
    http, mounted = app_client
    assert mounted == TABLE
    for route in ROUTES:
        path, _ = route.fill(SAMPLE)
        r = await http.request(route.method, path, json={} if route.method == "POST" else None)
        ndjson = "ndjson" in r.headers.get("content-type", "")  # the export stream
        body = json.loads(r.text.splitlines()[0]) if ndjson else r.json()
        routed = r.status_code != 405 and not (
            isinstance(body, dict) and str(body.get("message", "")).startswith("no route")
        )
        assert routed, (route, r.status_code, body)


def test_every_route_is_documented_in_openapi_and_nothing_else() -> None:
    doc = openapi_document()
    documented = {(m.upper(), p) for p, item in doc["paths"].items() for m in item}
    assert documented == {(r.method, r.openapi_path) for r in ROUTES}
    ids = [op["operationId"] for item in doc["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))


def _complete(op: str) -> dict[str, object]:
    """A request naming every required field of ``op`` (values need not make sense: the
    transport answers 500 whatever they are)."""
    from memorywire.client_methods import _MODELS

    fill = {"duplicates": ["y"], "policy": {"older_than_days": 1}, "type": "semantic"}
    return {name: fill.get(name, "x") for name, f in _MODELS[op].model_fields.items()
            if f.is_required()}


async def test_the_client_finds_every_route_in_the_table() -> None:
    seen: list[tuple[str, str]] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path))
        return httpx.Response(500, json={"code": "internal", "message": "recorded"})

    async with RemoteMemory("http://t", transport=httpx.MockTransport(record)) as mem:
        expected: list[tuple[str, str]] = []
        for route in ROUTES:
            expected.append((route.method, route.fill(SAMPLE)[0]))
            with pytest.raises(MemorywireError):
                if route.op in OPERATIONS:  # every required field, so the client sends it
                    await getattr(mem, route.op)(_complete(route.op))
                elif route.name == "rpc":
                    await mem.call("operation.without.a.route", {})
                else:
                    await mem.call(route.op, {p: SAMPLE[p] for p in route.params})
    assert seen == expected


def test_route_for_picks_the_route_whose_parameters_the_document_gives() -> None:
    assert route_for("schema", {"name": "recall"}) == Route(
        "schema", "GET", "/v0/schemas/{name:path}"
    )
    assert route_for("schema", {}) == Route("schemas", "GET", "/v0/schemas", operation="schema")
    assert route_for("no.such.operation") is None
    path, rest = Route("x", "POST", "/v0/a/{id}/b").fill({"id": "7", "reason": "r"})
    assert (path, rest) == ("/v0/a/7/b", {"reason": "r"})
    assert route_for("schema", {"name": "types/fsm"}).fill({"name": "types/fsm"})[0] == (  # type: ignore[union-attr]
        "/v0/schemas/types/fsm"
    )
