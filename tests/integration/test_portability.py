"""export → import → export round trips, migrations between every pair of SQLite, PostgreSQL
and mem0, a kill -9 mid-migration resumed, and tampered dumps named by line."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.portability import export_dump, import_dump, migrate, verify_dump
from memorywire.portability.moves import rows_of
from memorywire.store.memory import InMemoryStore
from memorywire.store.portable import OnConflict
from memorywire.store.postgres import PostgresStore
from memorywire.store.sqlite import SqliteStore
from memorywire.testing import postgres as _pg
from memorywire.testing.mem0 import mem0_factory
from memorywire.wire import validate
from memorywire.wire.models import (
    MemoryType,
    RecallRequest,
    RememberRequest,
)
from tests.integration.conftest import Cli, kill_once_checkpointed, populate

pytestmark = pytest.mark.anyio
pg_server = _pg.pg_server
Factory = Callable[[], Any]


@pytest.fixture
def factories(tmp_path: Path, request: pytest.FixtureRequest,
              clock: FakeClock) -> dict[str, Factory]:
    counter = iter(range(1000))

    def sqlite() -> Any:
        return SqliteStore(tmp_path / f"s{next(counter)}.db", embedder=HashingEmbedder(),
                           clock=clock)

    def postgres() -> Any:
        dsn = request.getfixturevalue("pg_server").create_database()
        return PostgresStore(dsn, embedder=HashingEmbedder(), clock=clock)

    def mem0() -> Any:
        return mem0_factory(embedder=HashingEmbedder(), clock=clock)

    def memory() -> Any:
        return InMemoryStore(embedder=HashingEmbedder(), clock=clock)

    return {"memory": memory, "sqlite": sqlite, "postgres": postgres, "mem0": mem0}


async def _dump(store: Any, **kw: Any) -> list[dict[str, Any]]:
    out = io.BytesIO()
    await export_dump(store, out, url="x://", include_forgotten=True, **kw)
    return [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres", "mem0"])
async def test_round_trip_gives_the_same_records(kind: str, factories: dict[str, Factory],
                                                 clock: FakeClock,
                                                 tmp_path: Path) -> None:
    source, target = factories[kind](), factories[kind]()
    try:
        await populate(source, clock)
        path = tmp_path / "dump.jsonl.gz"
        with open(path, "wb") as f:
            await export_dump(source, f, url="x://", include_forgotten=True, gzip_it=True)
        assert verify_dump(str(path)) == 13
        with gzip.open(path) as lines:
            assert all(validate("export/line", json.loads(x)) == [] for x in lines)
        plan, counts = await import_dump(target, str(path))
        assert plan.lost == [] and counts.inserted == 13
        first, second = await _dump(source), await _dump(target)
        assert [line["record"] for line in first[1:-1]] == [line["record"]
                                                            for line in second[1:-1]]
        states = {r["record"]["id"]: r["record"] for r in first[1:-1]}
        assert states["m3"]["deleted_at"] is not None and states["m5"]["merged_into"] == "m4"
        assert states["m6"]["updated_at"] is not None
        # Idempotent by id: a second import writes nothing.
        _, again = await import_dump(target, str(path), on_conflict=OnConflict.SKIP)
        assert (again.inserted, again.skipped) == (0, 13)
        with pytest.raises(Exception, match="already exists"):
            await import_dump(target, str(path), on_conflict=OnConflict.FAIL)
        live = await target.get("a1", "m6")
        assert live is not None and live.metadata == {"i": 6, "x": 1}
        assert await target.get("a1", "m3") is None
    finally:
        await source.aclose()
        await target.aclose()


PAIRS = [(a, b) for a in ("sqlite", "postgres", "mem0") for b in ("sqlite", "postgres", "mem0")
         if a != b]


@pytest.mark.parametrize(("src_kind", "dst_kind"), PAIRS)
async def test_migrate_every_pair(src_kind: str, dst_kind: str, factories: dict[str, Factory],
                                  clock: FakeClock,
                                  tmp_path: Path) -> None:
    source, target = factories[src_kind](), factories[dst_kind]()
    try:
        await populate(source, clock)
        result = await migrate(source, target, source_url=src_kind + "://",
                               target_url=dst_kind + "://", checkpoint=tmp_path / "ck.json",
                               page=4)
        assert result.mismatches == [] and result.verified == 13
        assert result.counts.inserted == 13
        got = [r.id async for r in rows_of(target)]
        assert sorted(got) == sorted([f"m{i}" for i in range(12)] + ["e1"])
        hit = await target.recall(RecallRequest(agent_id="a1", query="fact number 7"))
        assert "m7" in [h.id for h in hit.results]
    finally:
        await source.aclose()
        await target.aclose()


async def test_lossy_plan_is_refused_unless_allowed(factories: dict[str, Factory],
                                                    clock: FakeClock,
                                                    tmp_path: Path) -> None:
    source, target = factories["sqlite"](), factories["mem0"]()
    try:
        await populate(source, clock)
        await source.recall(RecallRequest(agent_id="a1", query="fact number 2"))
        kw: dict[str, Any] = {"source_url": "sqlite://", "target_url": "mem0://",
                              "checkpoint": tmp_path / "ck.json"}
        with pytest.raises(InvalidRequest, match="--allow-loss") as err:
            await migrate(source, target, **kw)
        assert "recall_count" in str(err.value)
        assert [r async for r in rows_of(target)] == []  # nothing written
        result = await migrate(source, target, allow_loss={"recall_count", "last_recalled_at"},
                               **kw)
        lost = {f.field: f.records for f in result.plan.fields if f.fate == "lost"}
        assert set(lost) == {"recall_count", "last_recalled_at"} and lost["recall_count"] > 0
        assert result.mismatches == []
    finally:
        await source.aclose()
        await target.aclose()


async def test_tampered_line_is_named(factories: dict[str, Factory], clock: FakeClock,
                                      tmp_path: Path) -> None:
    source = factories["sqlite"]()
    try:
        await populate(source, clock)
        lines = [json.dumps(d) for d in await _dump(source)]
    finally:
        await source.aclose()
    doc = json.loads(lines[4])
    doc["record"]["content"] = "something the agent never said"
    tampered = [*lines[:4], json.dumps(doc), *lines[5:]]
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join(tampered) + "\n").encode()))
    with pytest.raises(InvalidRequest, match="line 5"):
        verify_dump(str(path))
    dropped = tmp_path / "dropped.jsonl"
    dropped.write_text("\n".join(lines[:3] + lines[4:]) + "\n")
    with pytest.raises(InvalidRequest, match="line 14: footer counts 13"):
        verify_dump(str(dropped))


async def test_migration_killed_and_resumed_lands_every_record_once(tmp_path: Path,
                                                                    cli: Cli) -> None:
    src = SqliteStore(tmp_path / "src.db", embedder=HashingEmbedder())
    await src.remember_many([RememberRequest(agent_id=f"a{i % 3}", id=f"r{i}",
                                             type=MemoryType.SEMANTIC, content=f"memory {i}")
                             for i in range(400)])
    await src.aclose()
    target = tmp_path / "dst.db"
    args = cli.args("migrate", "--from", f"sqlite:///{tmp_path}/src.db", "--to",
                    f"sqlite:///{target}", "--page", "5", "--quiet")
    proc = subprocess.Popen(args, env=cli.env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    state = kill_once_checkpointed(proc, Path(f"{target}.checkpoint.json"))
    assert not state["finished"], "the migration finished before it could be killed"
    done = subprocess.run(args, env=cli.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["resumed"] and report["verified"] == 400 and report["mismatches"] == []
    dst = SqliteStore(target, embedder=HashingEmbedder())
    try:
        ids = [r.id async for r in rows_of(dst)]
    finally:
        await dst.aclose()
    assert sorted(ids) == sorted(f"r{i}" for i in range(400))
    assert json.loads(Path(f"{target}.report.json").read_text())["verified"] == 400


class _CountingEmbedder(HashingEmbedder):
    """The same vectors as the hashing embedder, counting how many texts it embedded."""

    calls = 0

    def embed(self, texts: Any) -> Any:
        type(self).calls += len(texts)
        return super().embed(texts)


@pytest.mark.parametrize("reembed", [False, True])
async def test_vectors_travel_and_are_reused_only_when_the_embedder_matches(
        reembed: bool, clock: FakeClock, tmp_path: Path) -> None:
    source = SqliteStore(tmp_path / "a.db", embedder=HashingEmbedder(), clock=clock)
    await populate(source, clock)
    path = tmp_path / "v.jsonl"
    with open(path, "wb") as f:
        await export_dump(source, f, url="sqlite://", include_forgotten=True,
                          include_vectors=True)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert all(validate("export/line", d) == [] for d in lines)
    assert lines[1]["vector"]["embedder"] == HashingEmbedder().name
    _CountingEmbedder.calls = 0
    target = SqliteStore(tmp_path / "b.db", embedder=_CountingEmbedder(), clock=clock)
    try:
        await import_dump(target, str(path), reembed=reembed)
        assert _CountingEmbedder.calls == (13 if reembed else 0)
        rows = [r async for r in rows_of(source)]
        mine, theirs = await source.vectors_of(rows), await target.vectors_of(rows)
        assert all((a == b).all() for a, b in zip(mine, theirs, strict=True))
        hit = await target.recall(RecallRequest(agent_id="a1", query="fact number 7"))
        assert "m7" in [h.id for h in hit.results]
    finally:
        await source.aclose()
        await target.aclose()
    doc = lines[2]
    doc["vector"]["b64"] = doc["vector"]["b64"][::-1]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(json.dumps(d) for d in lines) + "\n")
    with pytest.raises(InvalidRequest, match="line 3"):
        verify_dump(str(bad))


async def test_migrate_reuses_vectors_between_same_embedder_stores(
        factories: dict[str, Factory], clock: FakeClock, tmp_path: Path) -> None:
    source, target = factories["sqlite"](), factories["postgres"]()
    try:
        await populate(source, clock)
        result = await migrate(source, target, source_url="sqlite://", target_url="pg://",
                               checkpoint=tmp_path / "ck.json")
        assert result.vectors == "reused" and result.mismatches == []
        rows = [r async for r in rows_of(source)]
        mine, theirs = await source.vectors_of(rows), await target.vectors_of(rows)
        assert all(np.allclose(a, b) for a, b in zip(mine, theirs, strict=True))
    finally:
        await source.aclose()
        await target.aclose()


async def test_cli_export_import_and_dry_run(clock: FakeClock, tmp_path: Path,
                                             cli: Cli) -> None:
    source = SqliteStore(tmp_path / "a.db", embedder=HashingEmbedder(), clock=clock)
    await populate(source, clock)
    await source.recall(RecallRequest(agent_id="a1", query="fact number 2"))
    await source.aclose()
    src_url, dst_url = f"sqlite:///{tmp_path}/a.db", f"sqlite:///{tmp_path}/b.db"
    dump = tmp_path / "d.jsonl.gz"
    with open(dump, "wb") as out:
        done = subprocess.run(cli.args("export", "--store", src_url, "--agent", "a1", "--gzip"),
                              env=cli.env, stdout=out, stderr=subprocess.PIPE, text=False,
                              timeout=120)
    assert done.returncode == 0, done.stderr
    assert verify_dump(str(dump)) == 10  # a1's 12 minus forgotten m3 and merged-away m5
    first = subprocess.run(cli.args("import", "--store", dst_url, str(dump)), env=cli.env,
                           capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {"inserted": 10, "replaced": 0, "skipped": 0}
    again = subprocess.run(cli.args("import", "--store", dst_url, str(dump)), env=cli.env,
                           capture_output=True, text=True, timeout=120)
    assert json.loads(again.stdout) == {"inserted": 0, "replaced": 0, "skipped": 10}
    mem0_target = "mem0://?collection=cli"
    dry = subprocess.run(cli.args("migrate", "--from", src_url, "--to", mem0_target, "--dry-run"),
                         env=cli.env, capture_output=True, text=True, timeout=120)
    assert dry.returncode == 1 and "--allow-loss" in dry.stderr and "recall_count" in dry.stderr
    allowed = subprocess.run(
        cli.args("migrate", "--from", src_url, "--to", mem0_target, "--dry-run", "--allow-loss",
                 "recall_count", "last_recalled_at"),
        env=cli.env, capture_output=True, text=True, timeout=120)
    assert allowed.returncode == 0, allowed.stderr
    lost = {f["field"]: f["records"] for f in json.loads(allowed.stdout)["plan"]["fields"]
            if f["fate"] == "lost"}
    assert set(lost) == {"recall_count", "last_recalled_at"}
    assert lost["recall_count"] == lost["last_recalled_at"] > 0  # the recalled records only


async def test_admin_export_streams_the_dump_over_http(clock: FakeClock, tmp_path: Path) -> None:
    import httpx

    from memorywire.server.auth import Principal, Role
    from memorywire.server.dispatch import Dispatcher
    from memorywire.server.http import create_app

    store = SqliteStore(tmp_path / "a.db", embedder=HashingEmbedder(), clock=clock)
    await populate(store, clock)

    class _Tokens:
        def authenticate(self, secret: str) -> Principal:
            role = Role.ADMIN if secret == "admin" else Role.AGENT
            return Principal(name=secret, role=role)

    app = create_app(Dispatcher(store), tokens=_Tokens())  # type: ignore[arg-type]
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            agent = await http.get("/v0/admin/export", headers={"authorization": "Bearer a"})
            assert agent.status_code == 403
            bad = await http.get("/v0/admin/export?colour=red",
                                 headers={"authorization": "Bearer admin"})
            assert bad.status_code == 400 and "colour" in bad.json()["message"]
            got = await http.get("/v0/admin/export?agent_id=a1&include_forgotten=true",
                                 headers={"authorization": "Bearer admin"})
            assert got.status_code == 200
            assert got.headers["content-type"].startswith("application/x-ndjson")
        path = tmp_path / "http.jsonl"
        path.write_bytes(got.content)
        assert verify_dump(str(path)) == 12
    finally:
        await store.aclose()


@pytest.mark.parametrize("kind", ["sqlite", "postgres", "mem0"])
async def test_same_id_and_time_in_two_agents_both_move_across_page_boundaries(
        kind: str, factories: dict[str, Factory], clock: FakeClock, tmp_path: Path) -> None:
    source, target = factories[kind](), factories["sqlite"]()
    try:
        for agent in ("b", "a", "c"):  # one clock instant: only the agent tells them apart
            await source.remember(RememberRequest(agent_id=agent, id="same",
                                                  type=MemoryType.SEMANTIC, content=agent))
        result = await migrate(source, target, source_url="x://", target_url="y://",
                               checkpoint=tmp_path / "ck.json", page=1)
        assert result.counts.inserted == 3 and result.verified == 3 and not result.mismatches
    finally:
        await source.aclose()
        await target.aclose()
