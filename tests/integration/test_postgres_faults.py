"""PostgreSQL stopped under a live PostgresStore: typed errors, no partial writes, recovery.

These tests stop and restart the session's pgserver, so they need a pgserver-managed server
(they skip with MEMORYWIRE_TEST_PG_DSN, whose server we must not stop).
"""

from __future__ import annotations

import time
from dataclasses import replace

import anyio
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import BackendUnavailable
from memorywire.store.postgres import PostgresStore
from memorywire.testing import postgres as _pg
from memorywire.wire.models import RecallRequest, RememberRequest

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]
pg_server = _pg.pg_server
pg_dsn = _pg.pg_dsn

EMB = HashingEmbedder(64)


def _rem(text: str, **kw: object) -> RememberRequest:
    return RememberRequest.model_validate(
        {"agent_id": "a", "type": "semantic", "content": text, **kw}
    )


@pytest.fixture
def restartable(pg_server: _pg.PgHandle) -> _pg.PgHandle:
    if not pg_server.can_restart:
        pytest.skip("needs a pgserver-managed PostgreSQL (not MEMORYWIRE_TEST_PG_DSN)")
    return pg_server


async def _until_reachable(store: PostgresStore, within_s: float = 15.0) -> None:
    """Recovery without reopening the store. The pool reconnects with a jittered backoff
    (about a second), so the first calls right after a restart may still be refused."""
    deadline = time.monotonic() + within_s
    while (await store.health()).status != "ok":
        assert time.monotonic() < deadline, "the store did not recover after the restart"
        await anyio.sleep(0.25)


async def test_stopped_server_raises_backend_unavailable_then_recovers(
    restartable: _pg.PgHandle, pg_dsn: str
) -> None:
    store = PostgresStore(pg_dsn, EMB, timeout=1.0,
                          recall=replace(PostgresStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                         lexical_floor=-1.0))
    try:
        kept = await store.remember(_rem("before the outage"))
        restartable.stop()
        try:
            with pytest.raises(BackendUnavailable):
                await store.remember(_rem("during the outage", id="lost"))
            with pytest.raises(BackendUnavailable):
                await store.recall(RecallRequest(agent_id="a", query="outage"))
            assert (await store.health()).status == "down"
        finally:
            restartable.start()
        await _until_reachable(store)
        assert await store.get("a", kept.id) is not None
        assert await store.get("a", "lost") is None
        again = await store.remember(_rem("after the outage"))
        assert await store.get("a", again.id) is not None
        assert (await store.health()).status == "ok"
    finally:
        await store.aclose()


async def test_outage_mid_bulk_write_leaves_all_or_nothing(
    restartable: _pg.PgHandle, pg_dsn: str
) -> None:
    store = PostgresStore(pg_dsn, EMB, timeout=1.0)
    batch = [_rem(f"bulk note {i}", id=f"b{i}") for i in range(400)]
    outcome: list[str] = []

    async def write() -> None:
        try:
            await store.remember_many(batch)
            outcome.append("ok")
        except BackendUnavailable:
            outcome.append("unavailable")

    try:
        await store.remember(_rem("warm the pool"))
        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            await anyio.sleep(0.05)
            await anyio.to_thread.run_sync(restartable.stop)
        restartable.start()
        await _until_reachable(store)
        present = [await store.get("a", f"b{i}") is not None for i in range(0, 400, 57)]
        health = await store.health()
        if outcome == ["ok"]:
            assert all(present) and health.details["rows"] == 401
        else:
            assert outcome == ["unavailable"]
            assert not any(present) and health.details["rows"] == 1
    finally:
        await store.aclose()
