"""Version negotiation: a request may announce its wire version; another major is refused
with ``unsupported_version`` naming the supported range, on every wire transport."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from memorywire.server.openapi import openapi_document

from .conftest import World

pytestmark = pytest.mark.anyio

DOC = {"agent_id": "A", "type": "semantic", "content": "the kettle is in the cupboard"}


async def test_another_major_is_refused_and_v0_minors_are_served(
    transport: Any, world: World
) -> None:
    if transport.name == "inprocess":
        pytest.skip("the in-process client speaks this package's own version; nothing to agree")
    refused = await transport.call("remember", {**DOC, "wire_version": "7"}, world.agent_a)
    assert not refused.ok and refused.code == "unsupported_version", refused.body
    assert "0.x" in refused.body["message"], refused.body
    assert refused.body["details"][0]["path"] == "/wire_version"
    for version in ("0", "0.1", "v0.3"):
        served = await transport.call("remember", {**DOC, "wire_version": version},
                                      world.agent_a)
        assert served.ok, (version, served.body)
    bad = await transport.call("recall", {"agent_id": "A", "query": "kettle",
                                          "wire_version": "seven"}, world.agent_a)
    assert not bad.ok and bad.code == "invalid_request", bad.body


async def test_http_header_is_checked_and_every_answer_states_the_version(
    asgi_client: httpx.AsyncClient, world: World
) -> None:
    auth = {"Authorization": f"Bearer {world.agent_a}"}
    got = await asgi_client.post("/v0/remember", json=DOC,
                                 headers={**auth, "Memorywire-Version": "7.0"})
    assert got.status_code == 400 and got.json()["code"] == "unsupported_version"
    assert got.json()["details"][0]["path"] == "Memorywire-Version"
    assert got.headers["Memorywire-Version"] == "0.1"
    ok = await asgi_client.post("/v0/remember", json=DOC,
                                headers={**auth, "Memorywire-Version": "0.1"})
    assert ok.status_code == 200 and ok.headers["Memorywire-Version"] == "0.1"
    rpc = await asgi_client.post("/v0/rpc", json={"jsonrpc": "2.0", "id": 1, "method":
                                               "server.health", "params": {}},
                                 headers={**auth, "Memorywire-Version": "1"})
    assert rpc.json()["code"] == "unsupported_version"
    health = await asgi_client.get("/v0/health")
    assert health.json()["wire_version"]["current"] == "0.1"
    assert health.json()["wire_version"]["majors"] == [0]
    assert openapi_document()["info"]["x-wire-versions"]["supported"] == "0.x (0.0 to 0.1)"
