"""Issue 20, default limits: one local agent with 8 workers ran into 429s on loopback
(15-23% of its recalls) because the per-token recall limit applied to the single local
principal. On a loopback bind limits are now off unless asked for; any other bind keeps
per-token limits; ``rate_limits = on|off|auto`` chooses explicitly."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from memorywire.server.app import build_server
from memorywire.server.config import ServerConfig
from memorywire.server.limits import RateLimiter

pytestmark = pytest.mark.anyio


def _config(tmp: Path, **kw: object) -> ServerConfig:
    base = {"store": "memory://", "embedder": "hashing", "tokens_db": str(tmp / "t.db")}
    return ServerConfig(**{**base, **kw})  # type: ignore[arg-type]


async def test_one_local_agent_with_8_workers_is_not_throttled(tmp_path: Path) -> None:
    srv = build_server(_config(tmp_path, no_auth=True, host="127.0.0.1"))
    codes: list[int] = []
    transport = httpx.ASGITransport(app=srv.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as c:
        await c.post("/v0/remember", json={"agent_id": "A", "type": "semantic", "content": "t"})

        async def worker() -> None:
            for _ in range(40):
                r = await c.post("/v0/recall", json={"agent_id": "A", "query": "t"})
                codes.append(r.status_code)

        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(worker)
    await srv.aclose()
    assert codes.count(429) == 0 and len(codes) == 320


def test_a_public_bind_keeps_per_token_limits(tmp_path: Path) -> None:
    cfg = _config(tmp_path, host="0.0.0.0", recall_rate=5.0, write_rate=2.0)
    assert cfg.rate_limited()
    srv = build_server(cfg)
    assert isinstance(srv.dispatcher.rate_limiter, RateLimiter)
    assert isinstance(srv.dispatcher.write_limiter, RateLimiter)
    anyio.run(srv.aclose)


@pytest.mark.parametrize(("setting", "host", "limited"), [
    ("on", "127.0.0.1", True), ("off", "0.0.0.0", False), ("auto", "::1", False),
])
def test_rate_limits_setting_is_explicit(setting: str, host: str, limited: bool) -> None:
    assert ServerConfig(host=host, rate_limits=setting).rate_limited() is limited


def test_an_unknown_rate_limits_setting_is_refused() -> None:
    from memorywire.errors import InvalidRequest

    with pytest.raises(InvalidRequest, match="rate_limits"):
        ServerConfig(rate_limits="sometimes").resolved()
