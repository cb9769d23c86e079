"""The one setup (``server.runtime``): what it opens for each kind of caller, and that it
closes everything, also when a step after opening the store fails; ``memorywire serve``
built on it serves and stops cleanly on Ctrl-C."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore
from memorywire.server.auth import Principal
from memorywire.server.config import ServerConfig
from memorywire.server.runtime import running
from memorywire.store.memory import InMemoryStore

pytestmark = pytest.mark.anyio


class _Counted(InMemoryStore):
    """Counts closes (instrumentation only; the store is the real in-memory one)."""

    closes = 0

    async def aclose(self) -> None:
        self.closes += 1
        await super().aclose()


def _config(tmp_path: Path, **kw: object) -> ServerConfig:
    base: dict[str, object] = {
        "store": "memory://", "embedder": "hashing", "tokens_db": str(tmp_path / "tokens.db")
    }
    return ServerConfig(**{**base, **kw})  # type: ignore[arg-type]


async def test_local_callers_get_no_tokens_and_no_rate_limit(tmp_path: Path) -> None:
    async with running(_config(tmp_path)) as rt:
        assert rt.tokens is None and rt.dispatcher.rate_limiter is None
        assert rt.governed is None and rt.approvals is None
        assert rt.store.name == "memory"
    assert not (tmp_path / "tokens.db").exists()


async def test_the_http_server_gets_tokens_limits_and_governance(tmp_path: Path) -> None:
    store = _Counted(HashingEmbedder())
    config = _config(
        tmp_path, governance_db=str(tmp_path / "gov.db"), recall_burst=7, port=9123,
        rate_limits="on",
    )
    async with running(config, http=True, store=store) as rt:
        assert rt.tokens is not None and (tmp_path / "tokens.db").exists()
        assert rt.dispatcher.rate_limiter is not None
        assert rt.dispatcher.write_limiter is not None
        assert rt.dispatcher.limits.recall_burst == 7
        assert isinstance(rt.store, GovernedStore) and rt.governed is rt.store
        staged = await rt.dispatcher.dispatch(
            "remember",
            {"agent_id": "A", "type": "semantic", "content": "x", "approval_required": True},
            Principal.local_admin(),
        )
        assert staged.body["approval_url"].startswith("http://127.0.0.1:9123/ui/approvals/")
    assert store.closes == 1
    # a loopback bind with the default rate_limits=auto: one local principal, not throttled
    async with running(_config(tmp_path), http=True, store=_Counted(HashingEmbedder())) as rt:
        assert rt.tokens is not None and rt.dispatcher.rate_limiter is None


async def test_a_failed_step_after_the_store_closes_the_store(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    store = _Counted(HashingEmbedder())
    config = _config(tmp_path, governance_db=str(blocker / "gov.db"))
    with pytest.raises(Exception):  # noqa: B017 - whatever the database layer raises
        async with running(config, store=store):
            pytest.fail("the runtime opened over an unusable governance database")
    assert store.closes == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_answers_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    port = _free_port()
    db = tmp_path / "mem.db"
    env = {**os.environ, "MEMORYWIRE_HOME": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memorywire.cli", "serve", "--store", f"sqlite:///{db}",
         "--embedder", "hashing", "--no-auth", "--port", str(port),
         "--governance-db", str(tmp_path / "gov.db")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.communicate()
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/v0/health", timeout=1)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "serve did not come up"
                time.sleep(0.1)
        assert r.json()["status"] == "ok"
        wrote = httpx.post(
            f"http://127.0.0.1:{port}/v0/remember",
            json={"agent_id": "A", "type": "semantic", "content": "kept after shutdown"},
        )
        assert wrote.status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert f"memorywire serving sqlite:///{db}" in err
