"""The expiry sweeper ``serve`` runs: purges on its interval with receipts chained into the
audit log, turns off on ``purge_interval_s = 0``, and says why when it cannot run."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import anyio
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.server.config import ServerConfig, load_config
from memorywire.server.runtime import running
from memorywire.store.base import ListQuery
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RememberRequest

pytestmark = pytest.mark.anyio


def _cfg(tmp_path: Path, **kw: object) -> ServerConfig:
    return ServerConfig(store="memory://", embedder="hashing",
                        governance_db=str(tmp_path / "gov.db"), **kw)  # type: ignore[arg-type]


async def test_serve_sweeper_purges_expired_rows_from_the_file_with_receipts(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder(32))
    soon = int(time.time() * 1000) + 300
    async with running(_cfg(tmp_path, purge_interval_s=0.05, purge_grace_hours=0.0),
                       store=store) as rt:
        await rt.store.remember(RememberRequest(agent_id="ag", type=MemoryType.SEMANTIC,
                                                content="ephemeral-marker-4711", id="gone",
                                                expires_at=soon))
        await rt.store.remember(RememberRequest(agent_id="ag", type=MemoryType.SEMANTIC,
                                                content="durable fact", id="kept"))
        sweep = rt.expiry_sweeper()
        assert sweep is not None
        assert rt.governed is not None
        async with anyio.create_task_group() as tg:
            tg.start_soon(sweep)
            with anyio.fail_after(10):
                while True:
                    entries = await rt.governed.aaudit_entries(agent_id=None, limit=100)
                    if any(e["action"] == "receipt" for e in entries):
                        break
                    await anyio.sleep(0.05)
            tg.cancel_scope.cancel()
        receipt = next(e for e in entries if e["action"] == "receipt")
        assert receipt["memory_ids"] == ["gone"] and receipt["details"]["policy"] == "expiry"
        left = await store.list(ListQuery(agent_id=None, include_archived=True))
        assert [r.id for r in left] == ["kept"]
    assert not any(b"ephemeral-marker-4711" in f.read_bytes() for f in tmp_path.glob("m.db*"))


async def test_zero_interval_turns_the_sweeper_off(tmp_path: Path) -> None:
    async with running(_cfg(tmp_path, purge_interval_s=0.0)) as rt:
        assert rt.expiry_sweeper() is None


async def test_a_store_that_cannot_purge_turns_it_off_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from memorywire.router import MemoryRouter

    router = MemoryRouter([InMemoryStore(name="a"), InMemoryStore(name="b")])
    with caplog.at_level(logging.WARNING, logger="memorywire.server.runtime"):
        async with running(_cfg(tmp_path), store=router) as rt:
            assert rt.expiry_sweeper() is None
    assert "expiry sweeper off" in caplog.text and "cannot purge" in caplog.text


async def test_no_signing_key_turns_it_off_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = ServerConfig(store="memory://", embedder="hashing", governance=False)
    with caplog.at_level(logging.WARNING, logger="memorywire.server.runtime"):
        async with running(cfg) as rt:
            assert rt.expiry_sweeper() is None
    assert "no signing key" in caplog.text


def test_interval_and_grace_come_from_the_config_file(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text("[server]\npurge_interval_s = 60\npurge_grace_hours = 1.5\n", encoding="utf-8")
    cfg = load_config(f, env={})
    assert (cfg.purge_interval_s, cfg.purge_grace_hours) == (60.0, 1.5)
    f.write_text("[server]\npurge_interval_s = -1\n", encoding="utf-8")
    with pytest.raises(InvalidRequest, match="purge_interval_s"):
        load_config(f, env={}).resolved()
