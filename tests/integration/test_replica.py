"""PostgresStore with a hot standby: a real primary and a standby made by ``pg_basebackup``
from pgserver's bundled binaries, streaming replication between them.

Recalls are served by the standby; a process reads its own writes (a read waits for the
standby to replay the write's WAL position, or goes to the primary); with the primary
stopped, reads go on and writes fail with ``backend_unavailable``, and nothing that was
acknowledged is lost.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import psycopg
import pytest

from memorywire.core.records import ListQuery
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import BackendUnavailable, InvalidRequest
from memorywire.store.postgres import PostgresStore
from memorywire.testing.pg_cluster import Cluster, start_cluster, wait_replayed
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

pytest.importorskip("pgserver", reason="the cluster runs pgserver's bundled PostgreSQL")
pytestmark = [pytest.mark.postgres, pytest.mark.anyio, pytest.mark.timeout(300)]


def _cluster(synchronous: bool) -> Iterator[Cluster]:
    root = Path(tempfile.mkdtemp(prefix="memorywire-replica-")) / "cluster"
    c = start_cluster(root, replicas=1, synchronous=synchronous)
    try:
        yield c
    finally:
        c.close()
        shutil.rmtree(root.parent, ignore_errors=True)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    yield from _cluster(synchronous=False)


@pytest.fixture
def sync_cluster() -> Iterator[Cluster]:
    yield from _cluster(synchronous=True)


def _store(c: Cluster, database: str, **query: str) -> PostgresStore:
    c.create_database(database)
    keys = {"replicas": f"127.0.0.1:{c.replicas[0].port}", "pool_timeout": "3", **query}
    url = c.primary.dsn(database) + "?" + "&".join(f"{k}={v}" for k, v in keys.items())
    return PostgresStore.from_url(url, embedder=HashingEmbedder())


def _fact(i: int) -> RememberRequest:
    return RememberRequest(agent_id="a", type=MemoryType.SEMANTIC, id=f"m{i}",
                           content=f"The user's note {i} is about the garden and the piano.")


async def _ids(store: PostgresStore) -> set[str]:
    return {r.id for r in await store.list(ListQuery(agent_id="a", limit=1000))}


async def test_replica_serves_recalls_and_the_process_reads_its_own_writes(
        cluster: Cluster) -> None:
    store = _store(cluster, "ryw", replica_wait_ms="300")
    try:
        for i in range(10):
            await store.remember(_fact(i))
            # each write is read back at once: the standby replayed it, or the primary answers
            hit = await store.recall(RecallRequest(agent_id="a", query=f"note {i} garden", k=10))
            assert f"m{i}" in {h.id for h in hit.results}
        assert store._reads.counts["replica"] > 0  # reads were served by the standby
        assert store._reads.replica is not None
        async with store._reads.replica.tx() as conn:
            cur = await conn.execute("SELECT pg_is_in_recovery() AS standby")
            assert (await cur.fetchone())["standby"] is True  # type: ignore[index]

        # With replay paused the standby falls behind; a read after a write then waits
        # replica_wait_ms and goes to the primary, so the write is still seen.
        cluster.replicas[0].query("SELECT pg_wal_replay_pause()", "ryw")
        try:
            await store.remember(_fact(99))
            before = dict(store._reads.counts)
            assert "m99" in await _ids(store)
            assert store._reads.counts["primary"] == before["primary"] + 1
            # another process, which wrote nothing, reads the standby as it is: behind
            other = PostgresStore.from_url(
                f"{cluster.primary.dsn('ryw')}?replicas=127.0.0.1:{cluster.replicas[0].port}",
                embedder=HashingEmbedder())
            try:
                assert "m99" not in await _ids(other) and "m9" in await _ids(other)
            finally:
                await other.aclose()
        finally:
            cluster.replicas[0].query("SELECT pg_wal_replay_resume()", "ryw")
        wait_replayed(cluster.primary, cluster.replicas[0])
        before = dict(store._reads.counts)
        assert "m99" in await _ids(store)
        assert store._reads.counts["replica"] == before["replica"] + 1  # caught up: standby
    finally:
        await store.aclose()


async def test_with_the_primary_stopped_reads_go_on_and_writes_fail(
        sync_cluster: Cluster) -> None:
    """Synchronous replication (remote_apply): an acknowledged write is on the standby, so
    even an immediate stop of the primary (as a crash) loses none of them."""
    store = _store(sync_cluster, "failover")
    try:
        acked = [(await store.remember(_fact(i))).id for i in range(30)]
        sync_cluster.primary.stop("immediate")
        assert await _ids(store) == set(acked)  # nothing acknowledged is lost
        hits = await store.recall(RecallRequest(agent_id="a", query="note 7 garden piano"))
        assert hits.results and "m7" in {h.id for h in hits.results}
        got = await store.get("a", "m3")  # a read that prefers the primary falls back
        assert got is not None and got.id == "m3"
        with pytest.raises(BackendUnavailable) as failed:
            await store.remember(_fact(100))
        assert failed.value.code == "backend_unavailable"
        sync_cluster.primary.start()  # and back: writes go on once the pool reconnects
        deadline = time.monotonic() + 90  # the pool retries with a growing back-off
        while True:
            try:
                await store.remember(_fact(101))
                break
            except BackendUnavailable:
                if time.monotonic() > deadline:
                    raise
                await anyio.sleep(0.5)
        assert "m101" in await _ids(store)
    finally:
        await store.aclose()


def test_replica_urls_are_checked() -> None:
    base = "postgresql://postgres@127.0.0.1:5432/db"
    with pytest.raises(InvalidRequest, match="replicas"):
        PostgresStore.from_url(base + "?replicas=nohostport")
    with pytest.raises(InvalidRequest, match="replica_wait_ms"):
        PostgresStore.from_url(base + "?replica_wait_ms=5")
    with pytest.raises(InvalidRequest, match="replica_wait_ms"):
        PostgresStore.from_url(base + "?replicas=h:1&replica_wait_ms=soon")
    store = PostgresStore.from_url(base + "?replicas=h1:5433,h2:5434&sslmode=disable")
    assert store._reads.replica is not None
    info = psycopg.conninfo.conninfo_to_dict(store._reads.replica.pool.conninfo)
    assert info["host"] == "h1,h2" and info["port"] == "5433,5434"
    assert info["dbname"] == "db" and info["sslmode"] == "disable"
