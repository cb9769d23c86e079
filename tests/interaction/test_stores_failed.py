"""A recall over a router with a failing child names it in the body, on every transport."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from memorywire.errors import BackendUnavailable
from memorywire.router import MemoryRouter
from memorywire.server.auth import TokenStore
from memorywire.server.config import ServerConfig, StoreEntry
from memorywire.server.runtime import running
from memorywire.wire.models import RecallRequest, RecallResponse
from memorywire.wire.validate import validate

from .conftest import World

pytestmark = pytest.mark.anyio


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    """The runtime over two in-memory children, the second of which fails every recall."""
    config = ServerConfig(stores=(StoreEntry("memory://", "left"),
                                  StoreEntry("memory://", "right")),
                          embedder="hashing", governance_db="", recall_rate=1000.0,
                          recall_burst=1000)
    tokens = TokenStore()
    admin, _ = tokens.create(role="admin", name="admin")
    a, _ = tokens.create(role="agent", agent_ids=["A"], provenance="agent:A", name="a")
    b, _ = tokens.create(role="agent", agent_ids=["B"], provenance="agent:B", name="b")
    ra, _ = tokens.create(role="reviewer", agent_ids=["A"], name="ra")
    async with running(config, http=True, tokens=tokens) as runtime:
        router = runtime.store
        while not isinstance(router, MemoryRouter):
            router = router.inner
        right = next(c for c in router.stores if c.name == "right")

        async def down(req: RecallRequest) -> RecallResponse:
            raise BackendUnavailable("right is down")

        right.recall = down  # type: ignore[method-assign]
        yield World(runtime.store, tokens, runtime.dispatcher, admin, a, b, ra, runtime)


async def test_recall_body_names_the_failed_store(transport: Any, world: World) -> None:
    tok = world.agent_a
    out = await transport.call("remember", {"agent_id": "A", "type": "semantic",
                                            "content": "the ferry leaves at nine"}, tok)
    assert out.ok and sorted(out.body["stores"]) == ["left", "right"], out.body
    rec = await transport.call("recall", {"agent_id": "A", "query": "ferry", "k": 3,
                                          "min_relevance": 0}, tok)
    assert rec.ok, rec.body
    assert not validate("recall.response", rec.body)
    assert rec.body["stores_queried"] == ["left"]
    assert [(f["store"], f["code"]) for f in rec.body["stores_failed"]] == \
        [("right", "backend_unavailable")]
    assert "right is down" in rec.body["stores_failed"][0]["error"]
