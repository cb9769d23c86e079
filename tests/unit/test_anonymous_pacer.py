"""Requests without a token share one paced budget: a closed-loop flood of /v0/health is
slowed to the budget (the excess waits, then 429), and authenticated calls never queue
behind it."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import RateLimited
from memorywire.server.app import build_server
from memorywire.server.auth import TokenStore
from memorywire.server.config import ServerConfig
from memorywire.server.limits import AnonymousPacer
from memorywire.store.memory import InMemoryStore


class _Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_the_burst_passes_then_each_request_waits_its_turn_then_429() -> None:
    clock = _Clock()
    pacer = AnonymousPacer(10.0, 2, max_wait_s=0.25, now=clock)
    assert [pacer.reserve(), pacer.reserve()] == [0.0, 0.0]  # the burst
    assert pacer.reserve() == pytest.approx(0.1)  # one not yet earned: wait for it
    assert pacer.reserve() == pytest.approx(0.2)
    with pytest.raises(RateLimited) as refused:
        pacer.reserve()  # would wait 0.3 s > 0.25 s
    assert refused.value.retry_after == pytest.approx(0.3)
    assert "anonymous: 10/s, burst 2" in str(refused.value.details)
    clock.t += 1.0  # tokens come back at the rate
    assert pacer.reserve() == 0.0


@pytest.mark.anyio
async def test_a_health_flood_is_paced(tmp_path: Path) -> None:
    config = ServerConfig(store="memory://", tokens_db=str(tmp_path / "tokens.db"),
                          anonymous_rate=20.0, anonymous_burst=5)
    server = build_server(config, store=InMemoryStore(embedder=HashingEmbedder(16)),
                          tokens=TokenStore(tmp_path / "tokens.db"))
    transport = httpx.ASGITransport(app=server.app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            started = time.perf_counter()
            codes = [(await c.get("/v0/health")).status_code for _ in range(15)]
            took = time.perf_counter() - started
            assert codes == [200] * 15
            assert took >= 0.4  # 5 at once, then 10 paced at 20/s (a lower bound: load only adds)
    finally:
        await server.aclose()


@pytest.mark.anyio
async def test_token_holders_never_queue_behind_anonymous_callers(tmp_path: Path) -> None:
    """No clock needed: with one anonymous request every 100 s, a second one is refused at
    once (its wait would exceed the limit), so a token request that went through the pacer
    would be refused too, not merely slower."""
    tokens = TokenStore(tmp_path / "tokens.db")
    agent, _ = tokens.create(role="agent", agent_ids=["A"], name="agent")
    config = ServerConfig(store="memory://", tokens_db=str(tmp_path / "tokens.db"),
                          anonymous_rate=0.01, anonymous_burst=1)
    server = build_server(config, store=InMemoryStore(embedder=HashingEmbedder(16)),
                          tokens=tokens)
    transport = httpx.ASGITransport(app=server.app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            assert (await c.get("/v0/health")).status_code == 200  # the burst
            refused = await c.get("/v0/health")
            assert refused.status_code == 429 and refused.headers["retry-after"]
            auth = {"authorization": f"Bearer {agent}"}
            codes = [(await c.get("/v0/health", headers=auth)).status_code for _ in range(15)]
            assert codes == [200] * 15
            assert (await c.get("/v0/health")).status_code == 429  # still out of budget
    finally:
        await server.aclose()
