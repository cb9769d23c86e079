"""The relevance floor set in the configuration file reaches recall over REST (and the CLI),
and a recall's own ``min_relevance`` still wins over it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from memorywire.cli import main
from memorywire.server.app import http_app
from memorywire.server.config import load_config
from memorywire.server.runtime import running

pytestmark = pytest.mark.anyio

FACTS = ("Carol is vegetarian", "the lighthouse keeper retired in May")
QUERY = {"agent_id": "A", "query": "Carol is vegetarian", "k": 5}


@asynccontextmanager
async def _served(tmp_path: Path, floor: str) -> AsyncIterator[httpx.AsyncClient]:
    path = tmp_path / f"mw-{len(floor)}.toml"
    path.write_text(f'[server]\nstore = "memory://"\nembedder = "hashing"\nno_auth = true\n'
                    f"{floor}\n", encoding="utf-8")
    async with running(load_config(path, env={}), http=True) as runtime:
        app = http_app(runtime)
        async with app.router.lifespan_context(app), httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
            for fact in FACTS:
                r = await c.post("/v0/remember", json={"agent_id": "A", "type": "semantic",
                                                       "content": fact})
                assert r.status_code == 200, r.text
            yield c


async def _recalled(c: httpx.AsyncClient, **extra: Any) -> list[str]:
    r = await c.post("/v0/recall", json={**QUERY, **extra})
    assert r.status_code == 200, r.text
    return [hit["content"] for hit in r.json()["results"]]


async def test_a_config_floor_changes_what_rest_recall_returns(tmp_path: Path) -> None:
    async with _served(tmp_path, "") as c:  # no floor configured: the store's own
        assert await _recalled(c) == ["Carol is vegetarian"]
    async with _served(tmp_path, "min_relevance = 0.0") as c:
        assert sorted(await _recalled(c)) == sorted(FACTS)
        # the call's own floor overrides the configuration's
        assert await _recalled(c, min_relevance=0.9) == ["Carol is vegetarian"]
    async with _served(tmp_path, "min_relevance = 1.0") as c:
        assert await _recalled(c) == []
        assert sorted(await _recalled(c, min_relevance=0.0)) == sorted(FACTS)


def test_the_local_cli_reads_the_floor_from_the_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = ["--store", f"sqlite:///{tmp_path / 'mem.db'}", "--embedder", "hashing",
             "--no-governance"]
    for fact in FACTS:
        assert main(["remember", *store, "-a", "A", fact]) == 0
    capsys.readouterr()
    config = tmp_path / "mw.toml"
    config.write_text("min_relevance = 0.0\n", encoding="utf-8")

    def recall(*extra: str) -> int:
        assert main(["recall", *store, "-a", "A", "--json", *extra, QUERY["query"]]) == 0
        return len(json.loads(capsys.readouterr().out)["results"])

    assert recall() == 1
    assert recall("--config", str(config)) == 2
