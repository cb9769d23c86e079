"""The bulk path of a migration into an empty PostgreSQL store: the same records as row by row,
a working vector index at the end, exact searches while it loads, and kill -9 + resume."""

from __future__ import annotations

import io
import json
import logging
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import BackendUnavailable, InvalidRequest
from memorywire.governance.store import GovernedStore
from memorywire.portability import export_dump, import_dump, migrate
from memorywire.portability.moves import rows_of
from memorywire.store.portable import OnConflict, cursor_of
from memorywire.store.postgres import PostgresStore
from memorywire.store.sqlite import SqliteStore
from memorywire.testing import postgres as _pg
from memorywire.wire.models import (
    MemoryType,
    RecallRequest,
    RememberRequest,
)
from tests.integration.conftest import Cli, kill_once_checkpointed, populate

pytestmark = pytest.mark.anyio
pg_server = _pg.pg_server
def _has_hnsw(dsn: str) -> bool:
    with psycopg.connect(dsn) as conn:
        got = conn.execute("SELECT count(*) FROM pg_indexes "
                           "WHERE indexname = 'memorywire_memories_hnsw'").fetchone()
    return got is not None and got[0] == 1


async def _records(store: Any) -> list[dict[str, Any]]:
    out = io.BytesIO()
    await export_dump(store, out, url="x://", include_forgotten=True, include_vectors=True)
    return [json.loads(line)["record"] | {"vector": json.loads(line)["vector"]}
            for line in out.getvalue().splitlines() if b'"kind":"record"' in line]


async def _source(path: Path, clock: FakeClock) -> SqliteStore:
    """A SQLite store holding the standard records (see ``conftest.populate``)."""
    store = SqliteStore(path, embedder=HashingEmbedder(), clock=clock)
    await populate(store, clock)
    return store


async def test_bulk_path_gives_the_records_of_the_row_path_and_a_working_index(
        pg_server: _pg.PgHandle, tmp_path: Path) -> None:
    clock = FakeClock()
    source = await _source(tmp_path / "src.db", clock)
    bulk_dsn, rows_dsn = pg_server.create_database(), pg_server.create_database()
    bulk = PostgresStore(bulk_dsn, embedder=HashingEmbedder(), clock=clock)
    by_rows = PostgresStore(rows_dsn, embedder=HashingEmbedder(), clock=clock)
    try:
        result = await migrate(source, bulk, source_url="sqlite://", target_url="pg://",
                               checkpoint=tmp_path / "ck.json", page=4)
        assert result.load == "bulk" and result.vectors == "reused"
        assert result.verified == 13 and result.mismatches == []
        assert result.index is not None and result.index["rows"] == 13
        # The row path: a dump imported page by page through import_rows.
        dump = tmp_path / "d.jsonl"
        with open(dump, "wb") as f:
            await export_dump(source, f, url="sqlite://", include_forgotten=True,
                              include_vectors=True)
        await import_dump(by_rows, str(dump), on_conflict=OnConflict.FAIL)
        assert await _records(bulk) == await _records(by_rows)
        assert _has_hnsw(bulk_dsn)
        hit = await bulk.recall(RecallRequest(agent_id="a1", query="fact number 7"))
        assert hit.results[0].id == "m7"
        # Run again with its checkpoint: the copy is done, so it only verifies.
        again = await migrate(source, bulk, source_url="sqlite://", target_url="pg://",
                              checkpoint=tmp_path / "ck.json", page=4)
        assert again.load == "rows" and again.verified == 13 and again.counts.inserted == 0
    finally:
        for s in (source, bulk, by_rows):
            await s.aclose()


async def test_a_target_holding_rows_takes_the_row_path(pg_server: _pg.PgHandle,
                                                        tmp_path: Path) -> None:
    clock = FakeClock()
    source = await _source(tmp_path / "src.db", clock)
    dsn = pg_server.create_database()
    target = PostgresStore(dsn, embedder=HashingEmbedder(), clock=clock)
    try:
        await target.remember(RememberRequest(agent_id="other", type=MemoryType.SEMANTIC,
                                              content="already here"))
        result = await migrate(source, target, source_url="sqlite://", target_url="pg://",
                               checkpoint=tmp_path / "ck.json", page=4)
        assert result.load == "rows" and result.index is None and result.verified == 13
        assert _has_hnsw(dsn)
    finally:
        await source.aclose()
        await target.aclose()


async def test_another_jobs_bulk_load_is_refused(pg_server: _pg.PgHandle) -> None:
    target = PostgresStore(pg_server.create_database(), embedder=HashingEmbedder())
    try:
        assert await target.bulk_begin("a -> b") is not None
        with pytest.raises(InvalidRequest, match=r"another bulk load \(a -> b\)"):
            await target.bulk_begin("c -> b")
    finally:
        await target.aclose()


async def test_bulk_migration_killed_and_resumed_lands_every_record_once(
        pg_server: _pg.PgHandle, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        cli: Cli) -> None:
    src = SqliteStore(tmp_path / "src.db", embedder=HashingEmbedder())
    await src.remember_many([RememberRequest(agent_id=f"a{i % 3}", id=f"r{i}",
                                             type=MemoryType.SEMANTIC, content=f"memory {i}")
                             for i in range(400)])
    await src.aclose()
    dsn = pg_server.create_database()
    checkpoint = tmp_path / "ck.json"
    args = cli.args("migrate", "--from", f"sqlite:///{tmp_path}/src.db", "--to", dsn, "--page",
                    "5", "--checkpoint", str(checkpoint), "--quiet")
    proc = subprocess.Popen(args, env=cli.env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                            cwd=tmp_path)  # the report of a PostgreSQL target goes to ./
    state = kill_once_checkpointed(proc, checkpoint)
    assert state.get("bulk") and not state["finished"], "killed too late to test a resume"
    # Mid-load: no vector index, and a store opened now says so and still answers exactly.
    assert not _has_hnsw(dsn)
    mid = PostgresStore(dsn, embedder=HashingEmbedder(), exact_scope_limit=0)
    try:
        with caplog.at_level(logging.WARNING):
            # The index path (exact_scope_limit=0) with no index is an exact scan; nearest
            # reads without counting a recall, so verification still sees the source's rows.
            near = await mid.nearest("a1", "memory 1", k=1)
        assert "in the middle of a bulk load" in caplog.text
        assert near[0][0] == "r1" and near[0][1] == pytest.approx(1.0)
    finally:
        await mid.aclose()
    done = subprocess.run(args, env=cli.env, capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]
    report = json.loads(done.stdout)
    assert report["load"] == "bulk" and report["resumed"]
    assert report["verified"] == 400 and report["mismatches"] == []
    assert _has_hnsw(dsn)
    dst = PostgresStore(dsn, embedder=HashingEmbedder())
    try:
        ids = [r.id async for r in rows_of(dst)]
        hit = await dst.recall(RecallRequest(agent_id="a1", query="memory 7", k=1))
    finally:
        await dst.aclose()
    assert sorted(ids) == sorted(f"r{i}" for i in range(400))
    assert hit.results[0].content == "memory 7"


@asynccontextmanager
async def _pair(pg_server: _pg.PgHandle, tmp_path: Path,
                clock: FakeClock) -> AsyncIterator[tuple[SqliteStore, PostgresStore, str]]:
    """The standard source and an empty PostgreSQL target (with its DSN), closed after."""
    source = await _source(tmp_path / "src.db", clock)
    dsn = pg_server.create_database()
    target = PostgresStore(dsn, embedder=HashingEmbedder(), clock=clock)
    try:
        yield source, target, dsn
    finally:
        await source.aclose()
        await target.aclose()


async def _dump_of(store: Any, path: Path) -> str:
    with open(path, "wb") as f:
        await export_dump(store, f, url="sqlite://", include_forgotten=True,
                          include_vectors=True)
    return str(path)


async def test_import_into_an_empty_target_is_a_bulk_load_and_idempotent(
        pg_server: _pg.PgHandle, tmp_path: Path, clock: FakeClock) -> None:
    async with _pair(pg_server, tmp_path, clock) as (source, target, dsn):
        dump = await _dump_of(source, tmp_path / "d.jsonl")
        _, counts = await import_dump(target, dump, on_conflict=OnConflict.SKIP, page=4)
        assert (counts.load, counts.inserted, counts.skipped) == ("bulk", 13, 0)
        assert counts.index is not None and _has_hnsw(dsn)
        assert await _records(target) == await _records(source)
        _, again = await import_dump(target, dump, on_conflict=OnConflict.SKIP, page=4)
        assert (again.load, again.inserted, again.skipped) == ("rows", 0, 13)


async def test_import_interrupted_mid_bulk_resumes_without_writing_twice(
        pg_server: _pg.PgHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        clock: FakeClock) -> None:
    real = PostgresStore.bulk_load
    calls = 0

    async def dies_on_the_third_page(self: PostgresStore, *args: Any, **kw: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise BackendUnavailable("connection lost (injected)")
        return await real(self, *args, **kw)

    async with _pair(pg_server, tmp_path, clock) as (source, target, dsn):
        dump = await _dump_of(source, tmp_path / "d.jsonl")
        monkeypatch.setattr(PostgresStore, "bulk_load", dies_on_the_third_page)
        with pytest.raises(BackendUnavailable):
            await import_dump(target, dump, on_conflict=OnConflict.FAIL, page=4)
        monkeypatch.setattr(PostgresStore, "bulk_load", real)
        assert not _has_hnsw(dsn)
        # FAIL would refuse any row written twice: the rerun starts after the 8 committed.
        _, counts = await import_dump(target, dump, on_conflict=OnConflict.FAIL, page=4)
        assert (counts.load, counts.inserted) == ("bulk", 5)
        assert await _records(target) == await _records(source) and _has_hnsw(dsn)


async def test_import_into_a_governed_target_goes_row_by_row_and_says_so(
        pg_server: _pg.PgHandle, tmp_path: Path) -> None:
    clock = FakeClock()
    source = await _source(tmp_path / "src.db", clock)
    dsn = pg_server.create_database()
    target = GovernedStore(PostgresStore(dsn, embedder=HashingEmbedder(), clock=clock),
                           tmp_path / "gov.db", clock=clock)
    try:
        dump = await _dump_of(source, tmp_path / "d.jsonl")
        _, counts = await import_dump(target, dump, on_conflict=OnConflict.SKIP, page=4)
        assert counts.load == "rows" and counts.inserted == 13
        assert counts.load_note is not None and "governed" in counts.to_json()["load_note"]
        assert _has_hnsw(dsn)
    finally:
        await source.aclose()
        await target.aclose()


async def test_a_load_killed_during_its_index_build_is_finished_by_the_rerun(
        pg_server: _pg.PgHandle, tmp_path: Path, clock: FakeClock) -> None:
    """Every page committed, the build never committed (a kill during CREATE INDEX rolls it
    back with the job's end): the rerun loads nothing, builds the index and verifies."""
    async with _pair(pg_server, tmp_path, clock) as (source, target, dsn):
        job = "sqlite:// -> pg://"
        assert await target.bulk_begin(job) is not None
        rows = [r async for r in rows_of(source)]
        await target.bulk_load(job, rows, await source.vectors_of(rows), cursor_of(rows[-1]))
        assert not _has_hnsw(dsn)
        result = await migrate(source, target, source_url="sqlite://", target_url="pg://",
                               checkpoint=tmp_path / "ck.json", page=4)
        assert result.load == "bulk" and result.resumed and result.counts.inserted == 0
        assert result.verified == 13 and result.mismatches == [] and _has_hnsw(dsn)


async def test_cli_import_says_it_bulk_loaded(pg_server: _pg.PgHandle, tmp_path: Path,
                                              cli: Cli) -> None:
    source = await _source(tmp_path / "src.db", FakeClock())
    try:
        dump = await _dump_of(source, tmp_path / "d.jsonl")
    finally:
        await source.aclose()
    dsn = pg_server.create_database()
    done = subprocess.run(cli.args("import", "--store", dsn, dump, "--quiet"), env=cli.env,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"inserted": 13, "replaced": 0, "skipped": 0}
    assert "bulk load into an empty store; vector index built over 13 rows" in done.stderr
    assert _has_hnsw(dsn)
