"""PostgresStore against a real PostgreSQL 16 + pgvector (pgserver, or MEMORYWIRE_TEST_PG_DSN).

The v0 semantics every store shares are covered by tests/conformance; this module covers what
is PostgreSQL's own: migrations, the embedder record, scoped exact k-NN on both search paths,
pooling and concurrency, and translation of driver errors.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import anyio
import numpy as np
import psycopg
import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import Conflict, EmbedderMismatch, InvalidRequest, StoreCorrupt
from memorywire.store.postgres import PostgresStore
from memorywire.store.postgres.migrations import LATEST_VERSION, migration_sql
from memorywire.store.registry import open_store
from memorywire.testing import postgres as _pg
from memorywire.wire.models import (
    ExpirePolicy,
    ExpireRequest,
    ForgetRequest,
    MemoryType,
    RecallRequest,
    RememberRequest,
)

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]
pg_server = _pg.pg_server
pg_dsn = _pg.pg_dsn

EMB = HashingEmbedder(64)


def _rem(agent: str, text: str, **kw: object) -> RememberRequest:
    return RememberRequest.model_validate(
        {"agent_id": agent, "type": "semantic", "content": text, **kw}
    )


@pytest.fixture
async def store(pg_dsn: str) -> AsyncIterator[PostgresStore]:
    s = PostgresStore(pg_dsn, EMB, FakeClock(),
                      recall=replace(PostgresStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                     lexical_floor=-1.0))
    try:
        yield s
    finally:
        await s.aclose()


async def test_round_trip_and_registry(pg_dsn: str) -> None:
    s = open_store(pg_dsn, embedder=EMB, clock=FakeClock())
    assert isinstance(s, PostgresStore)
    try:
        r = await s.remember(_rem("a", "the cat sat on the mat", metadata={"k": [1, 2]}))
        got = await s.get("a", r.id)
        assert got is not None and got.content == "the cat sat on the mat"
        assert got.metadata == {"k": [1, 2]}
        res = await s.recall(RecallRequest(agent_id="a", query="cat mat"))
        assert [h.id for h in res.results] == [r.id]
        assert res.results[0].source_store == "postgres"
        assert (await s.health()).status == "ok"
    finally:
        await s.aclose()


async def test_metadata_filter_is_json_equality_not_containment(store: PostgresStore) -> None:
    a = await store.remember(_rem("a", "alpha note", metadata={"tags": ["x", "y"], "n": 1}))
    b = await store.remember(_rem("a", "alpha note two", metadata={"tags": ["x"], "n": True}))
    hits = await store.recall(RecallRequest(agent_id="a", query="alpha", filter={"tags": ["x"]}))
    assert [h.id for h in hits.results] == [b.id]
    hits = await store.recall(RecallRequest(agent_id="a", query="alpha", filter={"n": 1}))
    assert [h.id for h in hits.results] == [a.id]
    hits = await store.recall(RecallRequest(agent_id="a", query="alpha", filter={"n": 1.0}))
    assert [h.id for h in hits.results] == [a.id]


@pytest.mark.parametrize("exact_limit", [50_000, 10], ids=["exact-path", "hnsw-path"])
async def test_scoped_knn_is_exact_among_many_agents(pg_dsn: str, exact_limit: int) -> None:
    """Each agent's top-k equals brute force over that agent's rows only, on both paths."""
    s = PostgresStore(pg_dsn, EMB, FakeClock(), exact_scope_limit=exact_limit,
                      recall=replace(PostgresStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                     lexical_floor=-1.0))
    words = [f"w{i}" for i in range(40)]
    rng = np.random.default_rng(7)
    texts: dict[str, list[str]] = {}
    try:
        reqs = []
        for agent in range(30):
            n = 60 if agent == 0 else 8  # one big agent, many small ones
            texts[f"ag{agent}"] = [" ".join(rng.choice(words, 5)) for _ in range(n)]
            reqs += [_rem(f"ag{agent}", t, id=f"ag{agent}-{i}")
                     for i, t in enumerate(texts[f"ag{agent}"])]
        await s.remember_many(reqs)
        for agent in ("ag0", "ag3", "ag17"):
            q = "w1 w2 w3"
            brute = np.sort(EMB.embed(texts[agent]) @ EMB.embed([q])[0])[::-1][:5]
            got = await s.nearest(agent, q, 5)
            assert all(mid.startswith(f"{agent}-") for mid, _ in got)
            # equal similarities (ties may order differently, the values may not)
            assert np.allclose([c for _, c in got], brute, atol=1e-5)
            hits = await s.recall(RecallRequest(agent_id=agent, query=q, k=5))
            assert all(h.id.startswith(f"{agent}-") for h in hits.results)
    finally:
        await s.aclose()


async def test_idempotent_caller_id_and_conflict(store: PostgresStore) -> None:
    first = await store.remember(_rem("a", "hello", id="m1"))
    again = await store.remember(_rem("a", "hello", id="m1"))
    assert (again.id, again.stored_at) == (first.id, first.stored_at)
    with pytest.raises(Conflict):
        await store.remember(_rem("a", "something else", id="m1"))
    # the same id under another agent is another memory, and reveals nothing
    other = await store.remember(_rem("b", "something else", id="m1"))
    assert other.id == "m1"


async def test_bulk_write_is_all_or_nothing(store: PostgresStore) -> None:
    await store.remember(_rem("a", "taken", id="dup"))
    with pytest.raises(Conflict):
        await store.remember_many([_rem("a", "fresh one", id="n1"), _rem("a", "clash", id="dup")])
    assert await store.get("a", "n1") is None


async def test_nul_character_is_an_invalid_request(store: PostgresStore) -> None:
    with pytest.raises(InvalidRequest):
        await store.remember(_rem("a", "bad \x00 byte"))


async def test_hard_delete_leaves_no_content_in_any_table(store: PostgresStore) -> None:
    r = await store.remember(_rem("a", "secret-passphrase-zebra"))
    await store.forget(ForgetRequest(agent_id="a", ids=[r.id]))
    assert await store.raw_contains("secret-passphrase-zebra")  # soft delete keeps it
    await store.forget(ForgetRequest(agent_id="a", ids=[r.id], hard_delete=True))
    assert not await store.raw_contains("secret-passphrase-zebra")


async def test_expire_no_recall_uses_tracked_recalls(store: PostgresStore) -> None:
    clock = FakeClock()
    store._db.clock = clock
    kept = await store.remember(_rem("a", "recalled often"))
    dropped = await store.remember(_rem("a", "never asked about"))
    clock.advance_days(20)
    await store.recall(RecallRequest(agent_id="a", query="recalled often", k=1))
    clock.advance_days(20)
    res = await store.expire(ExpireRequest(agent_id="a", policy=ExpirePolicy(no_recall_in_days=30)))
    assert res.matched_ids == [dropped.id]
    assert await store.get("a", kept.id) is not None


async def test_embedder_mismatch_is_refused(pg_dsn: str) -> None:
    s = PostgresStore(pg_dsn, HashingEmbedder(64))
    await s.remember(_rem("a", "x"))
    await s.aclose()
    for other in (HashingEmbedder(32), HashingEmbedder(128)):
        s2 = PostgresStore(pg_dsn, other)
        with pytest.raises(EmbedderMismatch):
            await s2.remember(_rem("a", "y"))
        await s2.aclose()


async def test_migration_from_v1_keeps_data(pg_dsn: str) -> None:
    """A database left at schema v1 (no FTS, no recall stats) upgrades in place."""
    with psycopg.connect(pg_dsn, autocommit=False) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE TABLE memorywire_schema_version "
                     "(version integer PRIMARY KEY, applied_at bigint NOT NULL)")
        for stmt in migration_sql(1, EMB.dim):
            conn.execute(stmt)  # type: ignore[call-overload]
        conn.execute("INSERT INTO memorywire_meta VALUES ('embedder_name', %s), "
                     "('embedder_dim', %s)", (EMB.name, str(EMB.dim)))
        conn.execute("INSERT INTO memorywire_schema_version VALUES (1, 0)")
        vec = "[" + ",".join(str(float(x)) for x in EMB.embed(["old lighthouse keeper"])[0]) + "]"
        conn.execute(
            "INSERT INTO memorywire_memories (agent_id, id, type, content, created_at, embedding) "
            "VALUES ('a', 'old-1', 'semantic', 'old lighthouse keeper', 1, %s::vector)", (vec,))
        conn.commit()
    s = PostgresStore(pg_dsn, EMB,
                      recall=replace(PostgresStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                     lexical_floor=-1.0))
    try:
        hits = await s.recall(RecallRequest(agent_id="a", query="lighthouse"))
        assert [h.id for h in hits.results] == ["old-1"]
        health = await s.health()
        assert health.details["schema_version"] == LATEST_VERSION
        assert health.details["rows"] == 1
        new = await s.remember(_rem("a", "new lighthouse"))
        assert new.id
    finally:
        await s.aclose()


async def test_migration_to_v3_stems_the_full_text_index(pg_dsn: str) -> None:
    """A v2 database indexed its words unstemmed ('simple'); v3 re-indexes them in English, so
    "allergy" finds "allergies" and a procedure keeps the words it was indexed by."""
    with psycopg.connect(pg_dsn, autocommit=False) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE TABLE memorywire_schema_version "
                     "(version integer PRIMARY KEY, applied_at bigint NOT NULL)")
        for version in (1, 2):
            for stmt in migration_sql(version, EMB.dim):
                conn.execute(stmt)  # type: ignore[call-overload]
            conn.execute("INSERT INTO memorywire_schema_version VALUES (%s, 0)", (version,))
        conn.execute("INSERT INTO memorywire_meta VALUES ('embedder_name', %s), "
                     "('embedder_dim', %s)", (EMB.name, str(EMB.dim)))
        vec = "[" + ",".join(str(float(x)) for x in EMB.embed(["x"])[0]) + "]"
        for rid, typ, content, words in (
                ("s1", "semantic", "Carol has allergies to cats", None),
                ("p1", "procedural", '{"steps": []}', "deploying services nightly")):
            conn.execute(
                "INSERT INTO memorywire_memories (agent_id, id, type, content, created_at, "
                "embedding, tsv) VALUES ('a', %s, %s, %s, 1, %s::vector, "
                "to_tsvector('simple', %s))", (rid, typ, content, vec, words or content))
        conn.commit()
    s = PostgresStore(pg_dsn, EMB,
                      recall=replace(PostgresStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                     lexical_floor=-1.0))
    try:
        assert (await s.health()).details["schema_version"] == LATEST_VERSION == 4
    finally:
        await s.aclose()
    with psycopg.connect(pg_dsn) as conn:
        found = dict(conn.execute(
            "SELECT id, tsv @@ to_tsquery('english', %s) FROM memorywire_memories",
            ("allergy | deploy",)).fetchall())
    assert found == {"s1": True, "p1": True}


async def test_newer_schema_is_refused(pg_dsn: str) -> None:
    s = PostgresStore(pg_dsn, EMB)
    await s.remember(_rem("a", "x"))
    await s.aclose()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO memorywire_schema_version VALUES (%s, 0)", (LATEST_VERSION + 1,))
    s = PostgresStore(pg_dsn, EMB)
    with pytest.raises(StoreCorrupt):
        await s.remember(_rem("a", "y"))
    await s.aclose()


async def test_concurrent_writers_across_two_pools(pg_dsn: str) -> None:
    """Two stores (two pools, as two processes would have) write at once; nothing is lost."""
    s1 = PostgresStore(pg_dsn, EMB, max_size=4)
    s2 = PostgresStore(pg_dsn, EMB, max_size=4)
    try:
        async with anyio.create_task_group() as tg:
            for i in range(40):
                tg.start_soon((s1 if i % 2 else s2).remember, _rem("a", f"note {i}", id=f"n{i}"))
        health = await s1.health()
        assert health.details["rows"] == 40
    finally:
        await s1.aclose()
        await s2.aclose()


async def test_type_scope_and_procedural_object(store: PostgresStore) -> None:
    fsm = {"name": "deploy", "initial": "idle", "states": ["idle", "running"],
           "transitions": [{"trigger": "start", "source": "idle", "dest": "running"}]}
    r = await store.remember(RememberRequest(agent_id="a", type=MemoryType.PROCEDURAL,
                                             content=fsm))
    hits = await store.recall(RecallRequest(agent_id="a", query="deploy start",
                                            types=[MemoryType.PROCEDURAL]))
    assert hits.results[0].id == r.id
    assert isinstance(hits.results[0].content, dict)
    assert hits.results[0].content["states"] == ["idle", "running"]


async def test_postgres_scheme_alias_opens_the_store(pg_dsn: str) -> None:
    """``postgres://`` used to answer "install memorywire[postgres]" with it installed."""
    url = "postgres://" + pg_dsn.split("://", 1)[1]
    store = open_store(url, embedder=HashingEmbedder(16))
    assert isinstance(store, PostgresStore)
    try:
        assert (await store.health()).status == "ok"
    finally:
        await store.aclose()
