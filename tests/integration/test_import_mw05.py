"""Importing the first implementation's SQLite file (PyPI memorywire 0.5.0).

``tests/fixtures/mw05/memorywire-0.5.0.db`` was written by the real 0.5.0 package
(``make_fixture.py`` beside it says how): every state 0.5.0 could leave a row in. The
expected values are read from that file with plain SQL here, so the test checks the mapping,
not a copy of it.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.portability.foreign import import_foreign, open_foreign
from memorywire.portability.moves import rows_of
from memorywire.store.memory import InMemoryStore
from memorywire.store.portable import OnConflict
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "mw05" / "memorywire-0.5.0.db"
SRC = str(Path(__file__).resolve().parents[2] / "src")
ALLOW = {"pending", "audit_log", "episodes"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _raw(path: Path = FIXTURE) -> dict[str, dict[str, Any]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        return {r["content"]: dict(r) for r in con.execute("SELECT * FROM memories")}
    finally:
        con.close()


async def test_every_field_of_every_row_is_carried(tmp_path: Path) -> None:
    raw = _raw()
    store = SqliteStore(tmp_path / "t.db", embedder=HashingEmbedder())
    try:
        plan, counts = await import_foreign(store, open_foreign("memorywire-0.5", str(FIXTURE)),
                                            allow_loss=ALLOW)
        rows = {r.id: r async for r in rows_of(store)}
    finally:
        await store.aclose()
    staged = [r for r in raw.values() if r["deleted_at"] == -1]
    assert len(staged) == 1 and staged[0]["id"] not in rows  # a staged write is not a memory
    assert counts.inserted == len(raw) - 1 == len(rows)
    for content, r in raw.items():
        if r["deleted_at"] == -1:
            continue
        row = rows[r["id"]]
        meta = json.loads(r["metadata"]) if r["metadata"] else {}
        archived = meta.pop("archived", None) is True
        assert (row.agent_id, row.user_id, row.type.value) == (r["agent_id"], r["user_id"],
                                                               r["type"])
        if r["type"] == "procedural":
            assert json.loads(row.stored) == {**json.loads(content), **json.loads(row.stored)}
            assert json.loads(row.stored)["states"] == json.loads(content)["states"]
        else:
            assert row.stored == content
        assert row.metadata == meta
        assert (row.confidence, row.source, row.created_at, row.expires_at,
                row.last_recalled_at) == (r["confidence"], r["source"], r["created_at"],
                                          r["expires_at"], r["last_recalled_at"])
        assert row.updated_at == (None if r["updated_at"] == r["created_at"]
                                  else r["updated_at"])
        assert row.archived_at == (r["deleted_at"] if archived else None)
        assert row.deleted_at == (None if archived else r["deleted_at"])
    # The survivors of both merges, one by id and one by entity name, come from the audit log.
    by_text = {r["content"]: r["id"] for r in raw.values()}
    assert rows[by_text["User likes the aisle."]].merged_into == \
        by_text["The user prefers aisle seats."]
    assert rows[by_text["Drinks green tea in the morning."]].merged_into == \
        by_text["Prefers tea over coffee. | Drinks green tea in the morning."]
    notes = {n.field: (n.fate, n.records) for n in plan.notes}
    assert notes["pending"] == ("lost", 1) and notes["episodes"] == ("lost", 1)
    assert notes["archived_marker"] == ("transformed", 1)
    assert notes["merge_survivor"] == ("transformed", 2)
    assert notes["audit_log"][0] == "lost" and notes["audit_log"][1] > 10
    assert notes["refused_row"] == ("absent", 0)
    assert plan.lost == sorted(ALLOW, key=["pending", "audit_log", "episodes"].index)


async def test_a_lossy_plan_writes_nothing_until_allowed_and_a_second_import_is_a_no_op(
        tmp_path: Path) -> None:
    store = InMemoryStore(embedder=HashingEmbedder())
    source = open_foreign("memorywire-0.5", str(FIXTURE))
    with pytest.raises(InvalidRequest, match="loses audit_log, episodes in memory"):
        await import_foreign(store, source, allow_loss={"pending"})
    assert [r async for r in rows_of(store)] == []
    _, first = await import_foreign(store, source, allow_loss=ALLOW)
    _, again = await import_foreign(store, source, allow_loss=ALLOW)
    assert (first.inserted, again.inserted, again.skipped) == (13, 0, 13)
    hits = await store.recall(RecallRequest(agent_id="travel-bot",
                                            query="The user is allergic to peanuts."))
    assert hits.results[0].content == "The user is allergic to peanuts."
    with pytest.raises(Exception, match="already exists"):
        await import_foreign(store, source, allow_loss=ALLOW, on_conflict=OnConflict.FAIL)


async def test_rows_today_refuses_and_undetermined_merges_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "odd.db"
    shutil.copy(FIXTURE, path)
    con = sqlite3.connect(path)
    machine = {"name": "m", "initial": "a", "states": ["a", "b"],
               "transitions": [{"trigger": "go", "source": "a", "dest": "b",
                                "after": "os.system"}]}
    con.execute("UPDATE memories SET content = ? WHERE type = 'procedural'",
                (json.dumps(machine),))
    # A merge whose two rows were both merged away: its survivor cannot be told.
    con.execute("INSERT INTO memories (id, agent_id, type, content, created_at, updated_at, "
                "deleted_at) VALUES ('x1', 'z', 'semantic', 'one', 1, 2, 2), "
                "('x2', 'z', 'semantic', 'two', 1, 2, 2)")
    con.execute("INSERT INTO audit_log (ts, operation, agent_id, payload) VALUES "
                "(3, 'merge', 'z', ?)", (json.dumps({"canonical": "x1",
                                                     "duplicates": ["x2"]}),))
    con.execute("ALTER TABLE memories ADD COLUMN mood TEXT")
    con.commit()
    con.close()
    data = await open_foreign("memorywire-0.5", str(path)).read()
    notes = {n.field: (n.fate, n.records) for n in data.notes}
    assert notes["refused_row"] == ("lost", 1)
    assert notes["merge_unresolved"] == ("lost", 2)
    assert notes["extra_columns"] == ("lost", 1)
    ids = {r.id: r for r in data.rows}
    assert ids["x1"].deleted_at == 2 and ids["x1"].merged_into is None
    assert not any(r.type.value == "procedural" for r in data.rows)


async def test_files_that_are_not_0_5_databases_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match=r"no memorywire 0\.5 database"):
        await open_foreign("memorywire-0.5", str(tmp_path / "missing.db")).read()
    today = SqliteStore(tmp_path / "today.db", embedder=HashingEmbedder())
    await today.remember(RememberRequest(agent_id="a", type=MemoryType.SEMANTIC, content="x"))
    await today.aclose()
    with pytest.raises(InvalidRequest, match=r"not a memorywire 0\.5 database"):
        await open_foreign("memorywire-0.5", str(tmp_path / "today.db")).read()
    (tmp_path / "text.db").write_text("hello")
    with pytest.raises(InvalidRequest, match="not a SQLite database"):
        await open_foreign("memorywire-0.5", str(tmp_path / "text.db")).read()


def test_cli_imports_a_0_5_file_and_prints_the_report(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": SRC}
    url = f"sqlite:///{tmp_path}/t.db"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "memorywire.cli", "import", "--store",
                               url, "--embedder", "hashing", *args], env=env,
                              capture_output=True, text=True, timeout=120)

    refused = cli("--from-format", "memorywire-0.5", str(FIXTURE))
    assert refused.returncode == 1
    assert "--allow-loss pending audit_log episodes" in refused.stderr
    assert not (tmp_path / "t.db").exists()
    done = cli("--from-format", "memorywire-0.5", str(FIXTURE), "--allow-loss", *sorted(ALLOW))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["inserted"] == 13
    assert {n["item"]: n["fate"] for n in report["plan"]["source_items"]}["pending"] == "lost"
    assert "pending           lost         1" in done.stderr
    wrong = cli("--from-format", "memorywire-0.5", "--agent", "a", str(FIXTURE))
    assert wrong.returncode == 1 and "--agent does not apply" in wrong.stderr
    dump_agent = cli("--agent", "a", str(FIXTURE))
    assert dump_agent.returncode == 1 and "--agent applies to" in dump_agent.stderr


async def test_a_governed_target_audits_the_import_and_reports_progress(tmp_path: Path) -> None:
    """Into a governed store the rows go through its inner store with one audited ``import``
    entry per page, so the drift check finds nothing written behind governance's back."""
    from memorywire.governance.actor import acting_as
    from memorywire.governance.drift import unaudited_memories
    from memorywire.governance.store import GovernedStore

    inner = SqliteStore(tmp_path / "t.db", embedder=HashingEmbedder())
    gov = GovernedStore(inner, tmp_path / "t.gov.db")
    seen: list[tuple[int, int]] = []
    try:
        with acting_as("operator"):
            await gov.remember(RememberRequest(agent_id="a", type=MemoryType.SEMANTIC,
                                               content="written through governance"))
            _plan, counts = await import_foreign(
                gov, open_foreign("memorywire-0.5", str(FIXTURE)), allow_loss=ALLOW, page=5,
                progress=lambda done, total: seen.append((done, total)))
        assert counts.inserted == 13
        assert await unaudited_memories(inner, gov.audit_log) == []
        imports = [e for e in gov.audit_entries() if e["action"] == "import"]
        assert sum(len(e["memory_ids"]) for e in imports) == 13
        assert all(e["actor"] == "operator" for e in imports)
    finally:
        await gov.aclose()
    assert seen == [(0, 13), (5, 13), (10, 13), (13, 13)]
