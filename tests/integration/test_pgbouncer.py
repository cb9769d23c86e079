"""PostgresStore behind PgBouncer in transaction mode, on real processes.

PgBouncer hands each transaction to whichever server session is free, so a client may keep
no session state between transactions: no server-side prepared statements (psycopg
prepares a query run five times unless ``prepare_threshold`` is off), no session settings,
no temporary tables that outlive a transaction. One server session here serves every
client, so any state left in it would reach the next client. Skipped only when the
``pgbouncer`` binary is missing (``scripts/ci-system-deps.sh`` installs it).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import anyio
import httpx
import psycopg
import pytest

from memorywire.core.records import ListQuery, UpdateRequest
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.portable import OnConflict
from memorywire.store.postgres import PostgresStore
from memorywire.testing.pg_cluster import Cluster, pgbouncer_binary, start_cluster
from memorywire.wire.models import ForgetRequest, MemoryType, RecallRequest, RememberRequest
from tests.integration.servers import make_tokens, serving

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(300)]

if pgbouncer_binary() is None:
    pytest.skip("pgbouncer is not installed (Debian package pgbouncer; "
                "scripts/ci-system-deps.sh installs it)", allow_module_level=True)
pytest.importorskip("pgserver", reason="the cluster runs pgserver's bundled PostgreSQL")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    root = Path(tempfile.mkdtemp(prefix="memorywire-bouncer-")) / "cluster"
    c = start_cluster(root, replicas=0, pgbouncer=True, pool_size=1)
    try:
        yield c
    finally:
        c.close()
        shutil.rmtree(root.parent, ignore_errors=True)


@pytest.fixture
def database(cluster: Cluster, request: pytest.FixtureRequest) -> str:
    name = "t_" + request.node.name.replace("[", "_").replace("]", "")[:40].lower()
    cluster.create_database(name)
    return name


def _fact(i: int, agent: str = "a") -> RememberRequest:
    topic = ["garden", "piano"][i % 2]
    return RememberRequest(agent_id=agent, type=MemoryType.SEMANTIC, id=f"m{i}",
                           content=f"The user's note {i} is about the {topic}.")


def test_server_side_prepared_statements_break_behind_pgbouncer(cluster: Cluster,
                                                                database: str) -> None:
    """The failure the store avoids, shown: two clients preparing through one pooled
    session collide on psycopg's statement names."""
    assert cluster.bouncer is not None
    dsn = cluster.bouncer.dsn(database)
    with psycopg.connect(dsn, prepare_threshold=0, autocommit=True) as first, \
            psycopg.connect(dsn, prepare_threshold=0, autocommit=True) as second:
        first.execute("SELECT %s::int + 1", (1,))
        with pytest.raises(psycopg.errors.DuplicatePreparedStatement):
            second.execute("SELECT %s::int + 1", (1,))


@pytest.mark.anyio
async def test_the_store_works_through_pgbouncer_in_transaction_mode(
        cluster: Cluster, database: str) -> None:
    assert cluster.bouncer is not None
    store = PostgresStore.from_url(cluster.bouncer.dsn(database) + "?pool_max=8",
                                   embedder=HashingEmbedder(), name="pg")
    try:
        # eight client connections, one server session: concurrent writes and reads,
        # each statement repeated far past psycopg's prepare threshold
        async with anyio.create_task_group() as tg:
            for i in range(60):
                tg.start_soon(store.remember, _fact(i))
        async with anyio.create_task_group() as tg:
            for i in range(40):
                tg.start_soon(store.recall, RecallRequest(agent_id="a", query=f"note {i}"))
        listed = await store.list(ListQuery(agent_id="a", limit=1000))
        assert len(listed) == 60
        got = await store.recall(RecallRequest(agent_id="a", query="note 7 garden piano", k=3))
        assert got.results
        await store.update(UpdateRequest(agent_id="a", id="m1", metadata_patch={"x": 1}))
        assert (await store.get("a", "m1")).metadata == {"x": 1}  # type: ignore[union-attr]
        await store.forget(ForgetRequest(agent_id="a", ids=["m2"]))
        assert await store.get("a", "m2") is None
        await store.remember(RememberRequest(agent_id="a", type=MemoryType.SEMANTIC, id="klm",
                                             content="The user's favourite airline is KLM."))
        conflict = await store.remember(RememberRequest(
            agent_id="a", type=MemoryType.SEMANTIC,
            content="The user's favourite airline is Ryanair."))
        assert [c.id for c in conflict.conflicts or []] == ["klm"]
        rows = await store.export_rows("a", None, 20)
        vectors = await store.vectors_of(rows)
        other = [replace(r, agent_id="b") for r in rows]
        counts = await store.import_rows(other, OnConflict.FAIL, vectors)
        assert counts.inserted == len(rows)
        live = len([r for r in rows if r.deleted_at is None])  # a dump carries the forgotten
        assert len(await store.list(ListQuery(agent_id="b", limit=100))) == live
    finally:
        await store.aclose()
    # the bulk path into an empty database: COPY into a temporary table dropped at commit,
    # page after page (a table kept by the session would collide or leak rows)
    cluster.create_database(database + "_bulk")
    bulk = PostgresStore.from_url(cluster.bouncer.dsn(database + "_bulk") + "?pool_max=4",
                                  embedder=HashingEmbedder(), name="pg")
    try:
        assert await bulk.bulk_begin("job") is not None
        for page in (rows[:10], rows[10:]):
            last = page[-1]
            await bulk.bulk_load("job", page, vectors[rows.index(page[0]):][:len(page)],
                                 (last.created_at, last.id, last.agent_id))
        await bulk.bulk_finish("job")
        assert len(await bulk.list(ListQuery(agent_id="a", limit=100))) == live
        assert (await bulk.recall(RecallRequest(agent_id="a", query="note 7 garden piano"))).results
    finally:
        await bulk.aclose()
    pools = {p["database"]: p for p in cluster.bouncer.show("pools")}
    assert pools[database]["pool_mode"] == "transaction"
    servers = cluster.bouncer.show("servers")
    assert len([s for s in servers if s["database"] == database]) <= 1  # one session served all
    stats = {s["database"]: s for s in cluster.bouncer.show("stats")}
    assert int(stats[database]["total_xact_count"]) > 100


def test_several_serve_processes_share_pgbouncer(cluster: Cluster, database: str,
                                                 tmp_path: Path) -> None:
    """Three API processes, each with its own pool, on one pooled server session."""
    assert cluster.bouncer is not None
    store_url = cluster.bouncer.dsn(database) + "?pool_max=4"
    tokens = make_tokens(tmp_path / "tokens.db", ["a"])
    args = ["--store", store_url, "--no-governance", "--embedder", "hashing",
            "--tokens-db", str(tmp_path / "tokens.db")]
    with serving(tmp_path, *[args] * 3, deadline_s=90, grace_s=20) as servers:
        async def run() -> None:
            async with httpx.AsyncClient(
                    timeout=60, headers={"authorization": f"Bearer {tokens.writer}"}) as http:
                async def write(i: int) -> None:
                    r = await http.post(f"{servers[i % 3].base}/v0/remember", json={
                        "agent_id": "a", "type": "semantic", "id": f"w{i}",
                        "content": f"fact number {i} about topic {i % 5}"})
                    assert r.status_code == 200, r.text

                async with anyio.create_task_group() as tg:
                    for i in range(45):
                        tg.start_soon(write, i)
                for base in (s.base for s in servers):
                    r = await http.post(f"{base}/v0/recall", json={
                        "agent_id": "a", "query": "fact number 7 topic 2", "k": 3})
                    assert r.status_code == 200 and r.json()["results"], r.text

        anyio.run(run)
    with psycopg.connect(cluster.primary.dsn(database)) as conn:
        rows = conn.execute("SELECT id, count(*) FROM memorywire_memories GROUP BY id").fetchall()
    assert sorted(r[0] for r in rows) == sorted(f"w{i}" for i in range(45))
    assert all(r[1] == 1 for r in rows)
