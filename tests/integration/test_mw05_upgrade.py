"""A memorywire 0.5 database met by this version: recognised on open (the error names the
commands), imported into the default governed store with its audit log carried as history,
or upgraded in place with a backup; every memory is recalled afterwards.

The file is ``tests/fixtures/mw05/memorywire-0.5.0.db``, written by the real 0.5.0 package
(``make_fixture.py`` beside it).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest, UnsupportedVersion
from memorywire.governance.store import GovernedStore
from memorywire.portability.foreign import import_foreign, open_foreign
from memorywire.store.registry import open_store
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.memory_ops import HistoryRequest
from memorywire.wire.models import RecallRequest

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "mw05" / "memorywire-0.5.0.db"
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tables(path: Path) -> list[list[Any]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [con.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()
                for t in ("memories", "audit_log", "procedures", "episodes")]
    finally:
        con.close()


def _live() -> dict[str, dict[str, Any]]:
    """The fixture's memories a 0.5 user would still recall: id -> row."""
    con = sqlite3.connect(f"file:{FIXTURE}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        return {r["id"]: dict(r) for r in con.execute(
            "SELECT * FROM memories WHERE deleted_at IS NULL")}
    finally:
        con.close()


async def _recalled_all(store: Any) -> dict[str, bool]:
    """Each live 0.5 memory, asked for by its own words: is it among the hits?"""
    out = {}
    for mid, row in _live().items():
        query = row["content"] if row["type"] != "procedural" else "book flight paying"
        hits = await store.recall(RecallRequest(agent_id=row["agent_id"], user_id=row["user_id"],
                                                query=query, k=10))
        out[mid] = mid in {h.id for h in hits.results}
    return out


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC, "MEMORYWIRE_HOME": str(home), "HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "memorywire.cli", *args], env=env,
                          capture_output=True, text=True, timeout=180)


def test_opening_a_0_5_file_as_a_store_names_both_commands(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    shutil.copy(FIXTURE, db)
    before = _sha(db)
    for url in (f"sqlite-vec://{db}", f"sqlite:///{db}"):
        with pytest.raises(UnsupportedVersion) as err:
            open_store(url, embedder=HashingEmbedder())
        assert f"memorywire import --from-format memorywire-0.5 {db}" in err.value.message
        assert f"memorywire upgrade {db}" in err.value.message
    assert _sha(db) == before
    # the CLI says the same, one line, no traceback
    done = _cli(tmp_path, "recall", "--store", f"sqlite-vec://{db}", "--agent", "travel-bot",
                "peanuts", "--embedder", "hashing")
    assert done.returncode == 1
    assert "unsupported_version" in done.stderr and "memorywire upgrade" in done.stderr
    assert "Traceback" not in done.stderr


def test_import_into_the_default_store_carries_the_audit_log_and_staged_writes(
        tmp_path: Path) -> None:
    """The documented command, no --store: the default store and its governance database;
    the audit log is history there (no --allow-loss for it), the staged write waits for a
    reviewer. Only the episodes row the fixture added by hand (0.5.0 never wrote one) is a
    loss to allow."""
    home = tmp_path / "home"
    refused = _cli(home, "import", "--from-format", "memorywire-0.5", str(FIXTURE),
                   "--embedder", "hashing")
    assert refused.returncode == 1 and "--allow-loss episodes" in refused.stderr
    assert "audit_log" not in refused.stderr.split("--allow-loss")[1]
    done = _cli(home, "import", "--from-format", "memorywire-0.5", str(FIXTURE),
                "--embedder", "hashing", "--allow-loss", "episodes")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    fates = {n["item"]: n["fate"] for n in report["plan"]["source_items"]}
    assert fates["audit_log"] == "transformed" and fates["pending"] == "transformed"
    assert report["inserted"] == 13 and report["pending"] == 1 and report["history"] == 22
    again = _cli(home, "import", "--from-format", "memorywire-0.5", str(FIXTURE),
                 "--embedder", "hashing", "--allow-loss", "episodes")
    assert again.returncode == 0, again.stderr
    second = json.loads(again.stdout)
    assert (second["skipped"], second["history"], second["pending"]) == (13, 0, 0)

    async def check() -> None:
        inner = SqliteStore(home / "mem.db", embedder=HashingEmbedder())
        gov = GovernedStore(inner, home / "mem.gov.db")
        try:
            assert all((await _recalled_all(gov)).values())
            peanuts = next(m for m, r in _live().items() if "peanuts" in r["content"])
            from memorywire.client import Memory

            mem = Memory(gov)
            hist = await mem.history(HistoryRequest(agent_id="travel-bot", id=peanuts,
                                                    user_id="alice"))
            ops = [(r.operation, r.actor) for r in hist.revisions]
            assert ("remember", "memorywire-0.5") in ops
            pending = await gov.alist_pending()
            assert [p["request"]["content"] for p in pending] == [
                "A staged memory awaiting review."]
        finally:
            await gov.aclose()

    anyio.run(check)


def test_upgrade_in_place_keeps_a_backup_and_the_same_url_then_opens(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    shutil.copy(FIXTURE, db)
    done = _cli(tmp_path, "upgrade", str(db), "--embedder", "hashing", "--allow-loss",
                "episodes")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["backup"] == f"{db}.0.5.bak" and report["verified"] == 13
    assert report["governance_db"] == str(tmp_path / "mem.gov.db")
    assert _tables(Path(report["backup"])) == _tables(FIXTURE)  # the 0.5 data, whole
    assert not Path(f"{db}.upgrading").exists()

    async def check() -> None:
        store = open_store(f"sqlite-vec://{db}", embedder=HashingEmbedder())
        try:
            assert all((await _recalled_all(store)).values())
        finally:
            await store.aclose()

    anyio.run(check)
    again = _cli(tmp_path, "upgrade", str(db), "--embedder", "hashing")
    assert again.returncode == 1 and "not a memorywire 0.5 database" in again.stderr


def test_a_failed_upgrade_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    shutil.copy(FIXTURE, db)
    original = _sha(db)
    refused = _cli(tmp_path, "upgrade", str(db), "--embedder", "hashing")  # episodes: lost
    assert refused.returncode == 1 and "--allow-loss episodes" in refused.stderr
    assert _sha(db) == original
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("mem.db")) == [
        "mem.db"]


@pytest.mark.anyio
async def test_an_ungoverned_target_still_refuses_the_log_as_a_loss(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "t.db", embedder=HashingEmbedder())
    try:
        with pytest.raises(InvalidRequest, match="loses audit_log"):
            await import_foreign(store, open_foreign("memorywire-0.5", str(FIXTURE)),
                                 allow_loss={"pending", "episodes"})
    finally:
        await store.aclose()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
