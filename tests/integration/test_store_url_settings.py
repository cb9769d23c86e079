"""Ranking settings in a store URL act as the constructor keywords do, on every embedded store
and through the configuration file; PostgreSQL refuses a key neither it nor libpq knows when
the store opens, not at its first connection."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.server.app import http_app
from memorywire.server.config import load_config
from memorywire.server.runtime import running
from memorywire.store.base import MemoryStore
from memorywire.store.registry import open_store
from memorywire.testing import postgres as _pg
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest
from tests.integration import boost_stores
from tests.integration.boost_stores import make_store, ranked_ids
from tests.integration.test_turn_focus import QUESTION, _turns

pytestmark = pytest.mark.anyio
pg_server = _pg.pg_server
kind = boost_stores.kind  # each store kind in turn

FLOORS_OFF = "relevance_floor=-1&lexical_floor=-1"
FACTS = ("Carol is vegetarian", "the lighthouse keeper retired in May")


def _url(kind: str, tmp_path: Path, request: pytest.FixtureRequest, query: str) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / f'u{len(query)}.db'}?{query}"
    if kind == "memory":
        return f"memory://?{query}"
    handle: _pg.PgHandle = request.getfixturevalue("pg_server")
    dsn = handle.create_database()
    return f"{dsn}{'&' if '?' in dsn else '?'}{query}"


def _open(url: str) -> MemoryStore:
    return open_store(url, embedder=boost_stores.EMB, clock=FakeClock())


async def test_turn_weight_in_the_url_ranks_as_the_keyword_does(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    reqs = _turns()
    (tmp_path / "kw").mkdir()
    by_keyword = await ranked_ids(await make_store(kind, tmp_path / "kw", request,
                                                   substance_weight=0.0, turn_weight=0.0),
                                  reqs, QUESTION, k=5)
    off = f"{FLOORS_OFF}&substance_weight=0&turn_weight=0"
    by_url = await ranked_ids(_open(_url(kind, tmp_path, request, off)), reqs, QUESTION, k=5)
    default = await ranked_ids(_open(_url(kind, tmp_path, request,
                                          f"{FLOORS_OFF}&substance_weight=0")),
                               reqs, QUESTION, k=5)
    assert by_url == by_keyword
    assert default != by_url  # the key changed the order: it was not dropped


async def test_a_relevance_floor_in_the_url_returns_what_the_default_cuts(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    async def recalled(query: str) -> list[str]:
        store = open_store(_url(kind, tmp_path, request, query), embedder=HashingEmbedder(64))
        try:
            for fact in FACTS:
                await store.remember(RememberRequest(agent_id="a", type=MemoryType.SEMANTIC,
                                                     content=fact))
            resp = await store.recall(RecallRequest(agent_id="a", query=FACTS[0], k=5))
            return sorted(h.content for h in resp.results)
        finally:
            await store.aclose()

    assert await recalled("") == [FACTS[0]]
    assert await recalled("relevance_floor=-1") == sorted(FACTS)


@pytest.mark.postgres
async def test_postgres_refuses_a_key_libpq_does_not_know_when_opened(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    with pytest.raises(InvalidRequest, match=r"unknown query key 'bogus'; accepted: .*pool_max"):
        _open(_url("postgres", tmp_path, request, "bogus=1"))
    # libpq's own keys still reach libpq: a store on them works.
    store = _open(_url("postgres", tmp_path, request, "connect_timeout=30&turn_weight=0"))
    try:
        await store.remember(RememberRequest(agent_id="a", type=MemoryType.SEMANTIC,
                                             content="x"))
        assert store.recall_settings.turn_weight == 0.0  # type: ignore[attr-defined]
    finally:
        await store.aclose()


async def test_a_configured_store_url_carries_its_settings_to_serve(tmp_path: Path) -> None:
    """``[[stores]] url = "...?relevance_floor=-1"`` reaches the store ``serve`` runs."""
    async def served(query: str) -> list[str]:
        path = tmp_path / f"mw{len(query)}.toml"
        url = f"sqlite:///{tmp_path / f'c{len(query)}.db'}?{query}"
        path.write_text(f'[server]\nembedder = "hashing"\nno_auth = true\n\n'
                        f'[[stores]]\nurl = "{url}"\n', encoding="utf-8")
        async with running(load_config(path, env={}), http=True) as runtime:
            app = http_app(runtime)
            async with app.router.lifespan_context(app), httpx.AsyncClient(
                    transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
                for fact in FACTS:
                    r = await c.post("/v0/remember", json={"agent_id": "A", "type": "semantic",
                                                           "content": fact})
                    assert r.status_code == 200, r.text
                r = await c.post("/v0/recall", json={"agent_id": "A", "query": FACTS[0],
                                                     "k": 5})
                assert r.status_code == 200, r.text
                return sorted(hit["content"] for hit in r.json()["results"])

    assert await served("turn_weight=0") == [FACTS[0]]
    assert await served("relevance_floor=-1&turn_weight=0") == sorted(FACTS)
    with pytest.raises(InvalidRequest, match="unknown query key 'relevance_flor'"):
        await served("relevance_flor=-1")
