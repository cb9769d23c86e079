"""SqliteStore specifics: isolation, exactness, refusal to open the wrong thing, scrubbing."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import anyio
import apsw
import numpy as np
import pytest

from memorywire.embed.base import Vectors
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import Conflict, EmbedderMismatch, StoreCorrupt
from memorywire.recall.settings import RECOMMENDED_TAIL_GAP
from memorywire.store.base import ListQuery
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import ForgetRequest, MemoryType, RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio
SEM = MemoryType.SEMANTIC


class TableEmbedder:
    """Maps ``"v<i>"`` to a fixed random unit vector, so expected neighbours are computable."""

    def __init__(self, n: int, dim: int = 32, seed: int = 7) -> None:
        rng = np.random.default_rng(seed)
        m = rng.normal(size=(n, dim)).astype(np.float32)
        self.table = m / np.linalg.norm(m, axis=1, keepdims=True)

    @property
    def name(self) -> str:
        return f"table-{self.table.shape[0]}"

    @property
    def dim(self) -> int:
        return int(self.table.shape[1])

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self.table[[int(t[1:]) for t in texts]]


def req(agent: str, content: str, **kw: object) -> RememberRequest:
    return RememberRequest.model_validate({"agent_id": agent, "type": "semantic",
                                           "content": content, **kw})


async def test_scoped_knn_is_not_crowded_out_by_another_agent(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder(64),
                        recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=0.3))
    try:
        query = "where did I park the blue car"
        await store.remember(req("agent-a", "I parked the blue car on level three"))
        await store.remember_many([req("agent-b", query, id=f"b{i}") for i in range(10_000)])
        resp = await store.recall(RecallRequest(agent_id="agent-a", query=query, k=5))
        assert [h.content for h in resp.results] == ["I parked the blue car on level three"]
        resp = await store.recall(RecallRequest(agent_id="agent-b", query=query, k=5))
        assert len(resp.results) == 5 and all(h.id.startswith("b") for h in resp.results)
    finally:
        await store.aclose()


async def test_knn_is_exact_against_numpy_and_sqlite_vec(tmp_path: Path) -> None:
    n = 3000
    emb = TableEmbedder(n + 20)
    path = tmp_path / "m.db"
    store = SqliteStore(path, embedder=emb,
                        recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-2.0,
                                       lexical_floor=-2.0))
    try:
        owners = [("a1" if i % 3 else "a2", f"u{i % 4}", list(MemoryType)[i % 4]) for i in range(n)]
        await store.remember_many([
            RememberRequest(agent_id=a, user_id=u, type=MemoryType.SEMANTIC if t is
                            MemoryType.PROCEDURAL else t, content=f"v{i}", id=f"m{i}")
            for i, (a, u, t) in enumerate(owners)
        ])
        conn = apsw.Connection(str(path))
        conn.enable_load_extension(True)
        import sqlite_vec

        conn.load_extension(sqlite_vec.loadable_path())
        for q in range(n, n + 20):
            qv = emb.table[q]
            user = f"u{q % 4}" if q % 2 else None
            in_scope = [i for i, (a, u, _) in enumerate(owners)
                        if a == "a1" and (user is None or u == user)]
            sims = emb.table[in_scope] @ qv
            order = sorted(range(len(in_scope)), key=lambda j: (-sims[j], in_scope[j]))
            want = [f"m{in_scope[j]}" for j in order[:10]]
            resp = await store.recall(RecallRequest(agent_id="a1", user_id=user, query=f"v{q}",
                                                    k=10))
            assert [h.id for h in resp.results] == want
            sql_rows = conn.execute(
                "SELECT m.id FROM memories m JOIN agents a ON a.agent_id = m.agent_id "
                "JOIN vectors v ON v.vid = ((a.no << 34) | m.rid) WHERE m.agent_id = ?"
                " AND (?1 IS NULL OR 1) AND (? IS NULL OR m.user_id = ?) "
                "ORDER BY vec_distance_cosine(v.embedding, ?), m.rowid LIMIT 10",
                ("a1", user, user, qv.tobytes()),
            ).fetchall()
            assert [r[0] for r in sql_rows] == want
        conn.close()
    finally:
        await store.aclose()


async def test_reopen_with_another_embedder_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = SqliteStore(path, embedder=HashingEmbedder(64))
    await store.remember(req("a", "something"))
    await store.aclose()
    with pytest.raises(EmbedderMismatch, match="hashing-bow-64"):
        SqliteStore(path, embedder=HashingEmbedder(128))
    again = SqliteStore(path, embedder=HashingEmbedder(64))
    assert len(await again.list(ListQuery(agent_id="a"))) == 1
    await again.aclose()


@pytest.mark.parametrize(
    "payload",
    [b"this is not a database at all\n" * 100, b"SQLite format 3\x00" + b"\xff" * 4080],
)
def test_corrupt_file_is_refused_and_left_untouched(tmp_path: Path, payload: bytes) -> None:
    path = tmp_path / "m.db"
    path.write_bytes(payload)
    with pytest.raises(StoreCorrupt):
        SqliteStore(path, embedder=HashingEmbedder(16))
    assert path.read_bytes() == payload
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.db"]


def test_foreign_sqlite_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE invoices(n INTEGER); INSERT INTO invoices VALUES(1)")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreCorrupt, match="not a memorywire store"):
        SqliteStore(path, embedder=HashingEmbedder(16))
    assert path.read_bytes() == before


async def test_hard_delete_leaves_no_content_bytes(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    secret = "Zanzibarquux passphrase is 'violet-otter-4471'"
    store = SqliteStore(path, embedder=HashingEmbedder(64))
    try:
        for i in range(50):
            await store.remember(req("a", f"ordinary memory number {i} about tea"))
        mid = (await store.remember(req("a", secret, metadata={"k": "zanzibarquux"}))).id
        await store.recall(RecallRequest(agent_id="a", query=secret))

        def files() -> bytes:
            return b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())

        assert secret.encode() in files()  # the test can fail: the bytes were there
        await store.forget(ForgetRequest(agent_id="a", ids=[mid]))  # soft first
        resp = await store.forget(ForgetRequest(agent_id="a", ids=[mid], hard_delete=True))
        assert resp.forgotten_ids == [mid]
        blob = files()
        # short needles ("4471") would also match hex ids and digits by chance
        for needle in (secret, "zanzibarquux", "violet-otter-4471", mid):
            assert needle.encode() not in blob.lower(), needle
        assert (await store.recall(RecallRequest(agent_id="a", query=secret))).results == []
    finally:
        await store.aclose()


async def test_batch_is_atomic(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder(32))
    try:
        await store.remember(req("a", "first", id="x"))
        with pytest.raises(Conflict):
            await store.remember_many([req("a", "new one", id="y"), req("a", "changed", id="x")])
        assert [r.id for r in await store.list(ListQuery(agent_id="a"))] == ["x"]
    finally:
        await store.aclose()


async def test_concurrent_tasks_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = SqliteStore(path, embedder=HashingEmbedder(32))
    async with anyio.create_task_group() as tg:
        for i in range(40):
            tg.start_soon(store.remember, req("a", f"concurrent fact {i}"))
    await store.aclose()
    again = SqliteStore(path, embedder=HashingEmbedder(32))
    assert len(await again.list(ListQuery(agent_id="a"))) == 40
    await again.aclose()


_WRITER = """
import anyio, sys
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import RememberRequest, ForgetRequest
async def main():
    s = SqliteStore(sys.argv[1], embedder=HashingEmbedder(32))
    await s.remember(RememberRequest(agent_id="a", type="semantic", id="p2",
                                     content="written by another process"))
    await s.forget(ForgetRequest(agent_id="a", ids=["p1"]))
    await s.aclose()
anyio.run(main)
"""


async def test_other_processes_writes_are_seen_through_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = SqliteStore(path, embedder=HashingEmbedder(32),
                        recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=0.5))
    try:
        await store.remember(req("a", "written by this process", id="p1"))
        hits = await store.recall(RecallRequest(agent_id="a", query="written by this process"))
        assert [h.id for h in hits.results] == ["p1"]  # the scope is now cached
        subprocess.run([sys.executable, "-c", _WRITER, str(path)], check=True, timeout=60)
        hits = await store.recall(RecallRequest(agent_id="a", query="written by another process"))
        assert [h.id for h in hits.results] == ["p2"]
        assert await store.get("a", "p1") is None
    finally:
        await store.aclose()


async def test_scope_cache_evicts_by_bytes_and_stays_exact(tmp_path: Path) -> None:
    emb = TableEmbedder(400)
    store = SqliteStore(tmp_path / "c.db", embedder=emb, cache_mb=0.04,
                        recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                       lexical_floor=-1.0))  # ~40 KB: one 200-row scope
    try:
        for agent, offset in (("a", 0), ("b", 200)):
            await store.remember_many([req(agent, f"v{offset + i}", id=f"{agent}{i}")
                                       for i in range(200)])
        for _ in range(2):
            for agent, offset in (("a", 0), ("b", 200)):
                for i in (3, 150):
                    resp = await store.recall(RecallRequest(agent_id=agent,
                                                            query=f"v{offset + i}", k=3))
                    sims = emb.table[offset:offset + 200] @ emb.table[offset + i]
                    want = [f"{agent}{j}" for j in np.argsort(-sims, kind="stable")[:3]]
                    assert [h.id for h in resp.results] == want
        assert len(store._caches) == 1
        assert store._caches.evictions >= 3
    finally:
        await store.aclose()


async def test_recall_commits_without_fsync_but_restores_full_sync(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db", embedder=HashingEmbedder())
    try:
        await store.remember(req("a", "Alice likes green tea"))
        await store.recall(RecallRequest(agent_id="a", query="green tea"))
        with store._db.tx() as conn:
            assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        listed = await store.list(ListQuery(agent_id="a"))
        assert listed[0].recall_count == 1
    finally:
        await store.aclose()


class DictEmbedder:
    """Fixed vectors per text, so a test can place a row at an exact cosine to the query."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = {t: np.asarray(v, dtype=np.float32) / np.linalg.norm(v)
                        for t, v in vectors.items()}

    @property
    def name(self) -> str:
        return "dict-3"

    @property
    def dim(self) -> int:
        return 3

    def embed(self, texts: Sequence[str]) -> Vectors:
        return np.stack([self.vectors[t] for t in texts])


async def test_full_text_evidence_admits_a_row_below_the_cosine_floor(tmp_path: Path) -> None:
    q = "Which users have food allergies?"
    emb = DictEmbedder({
        q: [1.0, 0.0, 0.0],
        "Alice is allergic to peanuts.": [0.34, 0.94, 0.0],  # cos 0.34, prefix "allerg"
        "Bob likes jazz.": [0.34, 0.0, 0.94],  # same cosine, no shared word
        "Carol has a pollen allergy.": [0.2, 0.98, 0.0],  # shares a word, cosine too low
    })
    store = SqliteStore(tmp_path / "l.db", embedder=emb,
                        recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=0.36,
                                       lexical_floor=0.30, tail_gap=None))  # the per-row rule
    try:
        await store.remember_many([req("a", t, id=t.split()[0].lower())
                                   for t in emb.vectors if t != q])
        resp = await store.recall(RecallRequest(agent_id="a", query=q, k=5))
        assert [h.id for h in resp.results] == ["alice"]
    finally:
        await store.aclose()
    # The list gate: alice clears the floors, so the others need only come within
    # RECOMMENDED_TAIL_GAP (0.3) of them; with nothing clearing them the answer stays empty.
    store = SqliteStore(tmp_path / "g.db", embedder=emb,
                        recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=0.36,
                                       lexical_floor=0.30, tail_gap=RECOMMENDED_TAIL_GAP))
    try:
        await store.remember_many([req("a", t, id=t.split()[0].lower())
                                   for t in emb.vectors if t != q])
        resp = await store.recall(RecallRequest(agent_id="a", query=q, k=5))
        assert [h.id for h in resp.results] == ["alice", "carol", "bob"]
        await store.forget(ForgetRequest(agent_id="a", ids=["alice"]))
        resp = await store.recall(RecallRequest(agent_id="a", query=q, k=5))
        assert resp.results == []
    finally:
        await store.aclose()


def test_lexical_query_quotes_terms_and_adds_prefixes() -> None:
    from memorywire.store.sqlite.search import lexical_query

    assert lexical_query("what is the") is None
    assert lexical_query('allergies "NEAR" diet*') == (
        '"allergies" OR "allerg"* OR "near" OR "diet"')


_V1_DDL = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE memories(
    rid INTEGER PRIMARY KEY, agent_id TEXT NOT NULL, id TEXT NOT NULL, user_id TEXT,
    type TEXT NOT NULL, content TEXT NOT NULL, metadata TEXT NOT NULL DEFAULT '{}',
    confidence REAL NOT NULL DEFAULT 1.0, source TEXT, created_at INTEGER NOT NULL,
    updated_at INTEGER, expires_at INTEGER, deleted_at INTEGER, archived_at INTEGER,
    demoted INTEGER NOT NULL DEFAULT 0, last_recalled_at INTEGER,
    recall_count INTEGER NOT NULL DEFAULT 0, UNIQUE(agent_id, id)
);
CREATE INDEX memories_by_age ON memories(agent_id, created_at, id);
CREATE TABLE vectors(rid INTEGER PRIMARY KEY, embedding BLOB NOT NULL);
CREATE TABLE links(agent_id TEXT NOT NULL, src TEXT NOT NULL, dst TEXT NOT NULL,
    kind TEXT NOT NULL, PRIMARY KEY(agent_id, src, dst, kind)) WITHOUT ROWID;
CREATE INDEX links_by_dst ON links(agent_id, dst);
CREATE TABLE scopes(agent_id TEXT PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID;
CREATE VIRTUAL TABLE memories_fts USING fts5(body, scope, content='', contentless_delete=1,
    tokenize='porter unicode61 remove_diacritics 2');
"""


async def test_schema_v1_database_is_migrated_with_its_data(tmp_path: Path) -> None:
    from memorywire.store.sqlite.schema import SCHEMA_VERSION, scope_token

    emb = TableEmbedder(8)
    path = tmp_path / "v1.db"
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(_V1_DDL)
    conn.executemany("INSERT INTO meta VALUES(?, ?)", [
        ("schema_version", "1"), ("embedder_name", emb.name), ("embedder_dim", str(emb.dim))])
    for rid, (agent, text) in enumerate([("a", "v1"), ("a", "v2"), ("b", "v3")], start=1):
        conn.execute("INSERT INTO memories(rid, agent_id, id, type, content, created_at) "
                     "VALUES(?, ?, ?, 'semantic', ?, 1000)", (rid, agent, f"m{rid}", text))
        conn.execute("INSERT INTO vectors VALUES(?, ?)", (rid, emb.embed([text])[0].tobytes()))
        conn.execute("INSERT INTO memories_fts(rowid, body, scope) VALUES(?, ?, ?)",
                     (rid, text, scope_token(agent)))
    conn.close()

    store = SqliteStore(path, embedder=emb,
                        recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                       lexical_floor=-1.0))
    try:
        resp = await store.recall(RecallRequest(agent_id="a", query="v2", k=5))
        assert resp.results[0].id == "m2"
        assert {h.id for h in resp.results} == {"m1", "m2"}
        assert [r.id for r in await store.list(ListQuery(agent_id="b"))] == ["m3"]
        await store.forget(ForgetRequest(agent_id="a", ids=["m1"], hard_delete=True))
        resp = await store.recall(RecallRequest(agent_id="a", query="v1", k=5))
        assert [h.id for h in resp.results] == ["m2"]
    finally:
        await store.aclose()
    check = apsw.Connection(str(path))
    try:
        version = check.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        assert version == (str(SCHEMA_VERSION),) == ("4",)
        assert check.execute("SELECT agent_id, no FROM agents ORDER BY no").fetchall() == [
            ("a", 1), ("b", 2)]
        assert check.execute("SELECT vid FROM vectors ORDER BY vid").fetchall() == [
            ((1 << 34) | 2,), ((2 << 34) | 3,)]
    finally:
        check.close()


def test_newer_schema_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "v9.db"
    conn = apsw.Connection(str(path))
    conn.execute(_V1_DDL)
    conn.execute("INSERT INTO meta VALUES('schema_version', '9')")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreCorrupt):
        SqliteStore(path, embedder=TableEmbedder(8))
    assert path.read_bytes() == before


def _fts_db() -> apsw.Connection:
    from memorywire.store.sqlite.schema import DDL, scope_token

    conn = apsw.Connection(":memory:")
    conn.execute(DDL)
    rows = [("agent-a", f"coffee note {i}") for i in range(30)]
    rows += [("agent-b", f"coffee note {i}") for i in range(30)]
    rows += [("agent-a", "coffee with quokka spice"), ("agent-b", "quokka trip")]
    for rid, (agent, body) in enumerate(rows, start=1):
        conn.execute("INSERT INTO memories_fts(rowid, body, scope) VALUES(?, ?, ?)",
                     (rid, body, scope_token(agent)))
    return conn


def test_lexical_units_keep_rarest_words_within_the_row_budget() -> None:
    from memorywire.store.sqlite.search import lexical_units

    conn = _fts_db()
    try:
        # coffee: 61 rows, note: 60, quokka: 2, unknownword: 0 (dropped: it ranks nothing).
        assert lexical_units(conn, "coffee quokka unknownword", budget=10) == (
            ['"quokka"'], 2)
        assert lexical_units(conn, "note quokka coffee", budget=62) == (
            ['"quokka"', '"note"'], 62)
        assert lexical_units(conn, "coffee note", budget=1000) == (['"note"', '"coffee"'], 121)
        assert lexical_units(conn, "coffee note", budget=59) == ([], 0)
    finally:
        conn.close()


def test_unscoped_lexical_match_ranks_like_the_scoped_one() -> None:
    from memorywire.store.sqlite import search as sqlite_search

    conn = _fts_db()
    try:
        scoped = sqlite_search.lexical_rids(conn, "agent-a", "quokka coffee", 1000)
        everyone = sqlite_search.lexical_rids(conn, "agent-a", "quokka coffee", 1000,
                                              scope_rows=10_000)
        assert everyone == sqlite_search.lexical_rids(conn, "agent-a", "quokka coffee", 5,
                                                      scope_rows=10_000)
        a_rows = set(range(1, 31)) | {61}
        assert scoped[0] == 61 and len(scoped) == 31 and set(scoped) == a_rows
        assert len(everyone) == 62 and [r for r in everyone if r in a_rows] == scoped
    finally:
        conn.close()


def test_a_match_bounded_by_the_agents_row_range_ranks_like_the_scoped_one() -> None:
    from memorywire.store.sqlite import search as sqlite_search

    conn = _fts_db()
    try:
        # agent-b's rows 31-60 and 62: a range of 32 row ids for 31 rows (tight, so the
        # range replaces the scope token).
        b_rows = set(range(31, 61)) | {62}
        scoped = sqlite_search.lexical_rids(conn, "agent-b", "quokka coffee", 1000)
        ranged = sqlite_search.lexical_rids(conn, "agent-b", "quokka coffee", 1000,
                                            scope_rows=31, rid_range=(31, 62))
        assert set(scoped) == b_rows and scoped[0] == 62
        assert [r for r in ranged if r in b_rows] == scoped
        assert set(ranged) - b_rows == {61}  # another agent's row inside the range
        # "quokka" matches 2 rows, fewer than agent-a holds: the unscoped match, bounded
        unscoped = sqlite_search.lexical_rids(conn, "agent-a", "quokka", 1000,
                                              scope_rows=31, rid_range=(1, 61))
        assert unscoped == [61]  # agent-b's quokka row (62) lies outside the range
        # a range spanning more than RANGE_SLACK times the agent's rows: the scope token
        a_scoped = sqlite_search.lexical_rids(conn, "agent-a", "quokka coffee", 1000)
        assert sqlite_search.lexical_rids(conn, "agent-a", "quokka coffee", 1000,
                                          scope_rows=20, rid_range=(1, 61)) == a_scoped
    finally:
        conn.close()


async def test_a_word_too_common_to_rank_is_skipped_but_rare_ones_still_count(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memorywire.store.sqlite import search as sqlite_search

    monkeypatch.setattr(sqlite_search, "LEXICAL_BUDGET", 5)
    emb = HashingEmbedder(64)
    store = SqliteStore(tmp_path / "b.db", embedder=emb,
                        recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=0.99,
                                       lexical_floor=-1.0))
    try:
        await store.remember_many([req("a", f"weather report {i}", id=f"w{i}")
                                   for i in range(20)])
        await store.remember(req("a", "the quokka weather", id="q"))
        await store.remember(req("b", "quokka", id="bq"))
        # "weather" (21 rows) is over budget, so only "quokka" ranks: with the cosine floor
        # out of reach, full-text evidence alone admits rows, and only agent a's.
        resp = await store.recall(RecallRequest(agent_id="a", query="quokka weather", k=5))
        assert [h.id for h in resp.results] == ["q"]
        resp = await store.recall(RecallRequest(agent_id="a", query="weather", k=5))
        assert resp.results == []
        # Under budget, "weather" still carries nothing: every memory of the scope holds it
        # (rank31: a word held by most of the scope is dropped from the lexical leg).
        monkeypatch.setattr(sqlite_search, "LEXICAL_BUDGET", 100)
        resp = await store.recall(RecallRequest(agent_id="a", query="weather", k=5))
        assert resp.results == []
    finally:
        await store.aclose()
