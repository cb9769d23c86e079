"""PostgresStore behind PgBouncer in transaction mode, on real processes.

PgBouncer hands each transaction to whichever server session is free, so a client may keep
no session state between transactions: no server-side prepared statements (psycopg
prepares a query run five times unless ``prepare_threshold`` is off), no session settings,
no session advisory locks, no temporary tables that outlive a transaction. One server
session here serves every store client, so any state left in it would reach the next
client; governance goes through a second PgBouncer with two server sessions for more
clients, so state set on one session is missing on the other. Skipped only when the
``pgbouncer`` binary or pgserver is missing (``scripts/ci-system-deps.sh`` installs
pgbouncer).
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import httpx
import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.core.records import ListQuery, UpdateRequest
from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import AuditLog
from memorywire.governance.chain import GENESIS_HASH
from memorywire.store.portable import OnConflict
from memorywire.store.postgres import PostgresStore
from memorywire.testing.pg_cluster import (
    Cluster,
    PgBouncer,
    free_port,
    pgbouncer_binary,
    start_cluster,
)
from memorywire.wire.models import ForgetRequest, MemoryType, RecallRequest, RememberRequest
from tests.integration.servers import chain_tally, make_tokens, serving

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


# --- governance behind PgBouncer -----------------------------------------------------------

GOV_POOL = 2  # server sessions, for seven governance connections (4 handles + 3 servers)
WRITERS, WRITES, GATE_EVERY, APPENDS = 2, 12, 3, 8


@pytest.fixture
def gov_bouncer(cluster: Cluster) -> Iterator[PgBouncer]:
    bouncer = PgBouncer(cluster.root / "bouncer-gov", free_port(), cluster.primary.port,
                        GOV_POOL, cluster.primary.user)
    bouncer.start()
    try:
        yield bouncer
    finally:
        bouncer.stop()


def _open_together(dsn: str, n: int) -> list[AuditLog]:
    """``n`` governance handles opened at one instant: the schema is created once, through
    the pooler, by whichever wins the setup lock."""
    opened: list[AuditLog] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def start() -> None:
        barrier.wait()
        try:
            opened.append(AuditLog.open(dsn))
        except BaseException as exc:  # surfaced below: a thread cannot fail the test itself
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        for log in opened:
            log.close()
        raise errors[0]
    return opened


async def _governed_load(bases: list[str], writer: str, reviewer: str,
                         logs: list[AuditLog]) -> tuple[set[str], set[str], dict[str, Any]]:
    """Gated and plain writes through every server, each gated one approved through two
    servers at once, while the direct handles append entries and one of them checkpoints."""
    acked: set[str] = set()
    gated: set[str] = set()
    checkpoint: dict[str, Any] = {}
    send, receive = anyio.create_memory_object_stream[str](WRITERS * WRITES)

    async def post(http: httpx.AsyncClient, url: str, doc: dict[str, Any]) -> dict[str, Any]:
        r = await http.post(url, json=doc)
        assert r.status_code == 200, (url, r.status_code, r.text)
        out: dict[str, Any] = r.json()
        return out

    async def write(i: int) -> None:
        async with httpx.AsyncClient(
                timeout=60, headers={"authorization": f"Bearer {writer}"}) as http:
            for j in range(WRITES):
                mid, gate = f"g{i}-{j:02d}", j % GATE_EVERY == 0
                out = await post(http, f"{bases[(i + j) % len(bases)]}/v0/remember", {
                    "agent_id": "a", "type": "semantic", "id": mid, "approval_required": gate,
                    "content": f"governed fact {j} from writer {i}"})
                assert out["pending_approval"] is gate
                acked.add(mid)
                if gate:
                    gated.add(mid)
                    await send.send(mid)

    async def review() -> None:
        async with httpx.AsyncClient(
                timeout=60, headers={"authorization": f"Bearer {reviewer}"}) as http, receive:
            n = 0
            async for mid in receive:
                async with anyio.create_task_group() as tg:
                    for k in (1, 2):
                        url = f"{bases[(n + k) % len(bases)]}/v0/approvals/{mid}/approve"
                        tg.start_soon(post, http, url, {"reason": "ok"})
                n += 1

    def append(k: int) -> None:
        for j in range(APPENDS):
            logs[k].append(actor=f"direct{k}", action="note", agent_id="a",
                           memory_ids=[f"d{k}-{j}"])
            if k == 0 and j == APPENDS // 2:
                checkpoint.update(logs[k].checkpoint(Ed25519PrivateKey.generate()))

    async with anyio.create_task_group() as tg:
        tg.start_soon(review)
        for k in range(len(logs)):
            tg.start_soon(anyio.to_thread.run_sync, append, k)
        async with send, anyio.create_task_group() as writers:
            for i in range(WRITERS):
                writers.start_soon(write, i)
    return acked, gated, checkpoint


def _session_state(dsn: str) -> list[tuple[str, int]]:
    """``search_path`` and prepared-statement count of every pooled server session: as many
    client transactions open at once as the pool has sessions, so each sits on its own."""
    conns = [psycopg.connect(dsn, prepare_threshold=None) for _ in range(GOV_POOL)]
    try:
        seen = []
        for conn in conns:  # not autocommit: each holds its session until rolled back
            path = conn.execute("SHOW search_path").fetchone()
            prepared = conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()
            assert path is not None and prepared is not None
            seen.append((str(path[0]), int(prepared[0])))
        pids = {conn.execute("SELECT pg_backend_pid()").fetchone() for conn in conns}
        assert len(pids) == GOV_POOL  # every server session was looked at
        return seen
    finally:
        for conn in conns:
            conn.close()


def test_governed_serve_processes_share_pgbouncer_and_leave_no_session_state(
        cluster: Cluster, gov_bouncer: PgBouncer, database: str, tmp_path: Path) -> None:
    """Governance (queue, audit chain, checkpoints) through PgBouncer in transaction mode:
    three governed servers and four direct handles on two server sessions. The chain stays
    gap-free with every entry once, and no server session keeps a search_path, a prepared
    statement or an advisory lock."""
    dsn = gov_bouncer.dsn(database)
    tokens = make_tokens(tmp_path / "tokens.db", ["a"])
    logs = _open_together(dsn, 4)
    try:
        args = ["--store", dsn + "?pool_max=2", "--governance-db", dsn,
                "--embedder", "hashing", "--tokens-db", str(tmp_path / "tokens.db")]
        with serving(tmp_path, *[args] * 3, deadline_s=90, grace_s=20) as servers:
            acked, gated, cp = anyio.run(_governed_load, [s.base for s in servers],
                                         tokens.writer, tokens.reviewer, logs)
            r = httpx.post(f"{servers[2].base}/v0/audit/verify",
                           headers={"authorization": f"Bearer {tokens.admin}"}, timeout=60)
            assert r.status_code == 200 and r.json()["ok"] is True, r.text
            report = logs[3].verify(checkpoints=[cp])
            assert report.ok, report.problems
    finally:
        for log in logs:
            log.close()
    assert len(acked) == WRITERS * WRITES and len(gated) == WRITERS * WRITES // GATE_EVERY

    # the chain, read on the primary: gap-free, verified, every entry exactly once
    per = chain_tally(cluster.primary.dsn(database))
    for mid in acked:
        done = per[(mid, "remember:done")] if mid not in gated else per[(mid, "approved")]
        assert done == 1, (mid, {k: v for k, v in per.items() if k[0] == mid})
    for mid in gated:
        assert per[(mid, "staged")] == 1 and per[(mid, "remember:done")] == 1, mid
    direct = Counter(k for k, n in per.items() if k[1] == "note" for _ in range(n))
    assert direct == Counter({(f"d{k}-{j}", "note"): 1 for k in range(4) for j in range(APPENDS)})
    with psycopg.connect(cluster.primary.dsn(database), autocommit=True) as conn:
        queue = dict(conn.execute("SELECT status, count(*) FROM memorywire_governance.approvals"
                                  " GROUP BY status").fetchall())
        entries = conn.execute("SELECT seq, prev_hash, hash FROM memorywire_governance.audit_log"
                               " ORDER BY seq").fetchall()
        [(checkpoints,)] = conn.execute(
            "SELECT count(*) FROM memorywire_governance.audit_checkpoints").fetchall()
        locks = conn.execute("SELECT pid, objid FROM pg_locks WHERE locktype = 'advisory'"
                             ).fetchall()
    assert queue == {"approved": len(gated)} and checkpoints == 1
    assert entries[0][1] == GENESIS_HASH
    assert all(b[1] == a[2] for a, b in itertools.pairwise(entries))
    assert locks == []  # no advisory lock outlived its transaction on a pooled session

    # nothing leaked into the pooled sessions the next client gets
    assert _session_state(dsn) == [('"$user", public', 0)] * GOV_POOL
    assert len([s for s in gov_bouncer.show("servers") if s["database"] == database]) \
        <= GOV_POOL
    stats = {s["database"]: s for s in gov_bouncer.show("stats")}
    assert int(stats[database]["total_xact_count"]) > 200
