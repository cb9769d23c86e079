"""Finding 10 (governance part): with governance on, a full disk failed reads too, with
"cannot rollback - no transaction is active". Now a write fails with a clear
``storage_full``; reads fail closed with a clear message by default, and keep working when
the deployment chose ``audit_failure="serve_reads"``.

The disk is filled for real, as far as SQLite can tell: ``max_page_count`` caps the
governance file at its current size, so the next page it needs answers SQLITE_FULL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore
from memorywire.governance.actor import acting_as
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import RecallRequest, RememberRequest

from .conftest import Gov

pytestmark = pytest.mark.anyio


def _fill(store: GovernedStore) -> None:
    conn = store.audit_log.connection
    pages = conn.execute("PRAGMA page_count").fetchall()[0][0]
    conn.execute(f"PRAGMA max_page_count = {pages}")


def _free(store: GovernedStore) -> None:
    store.audit_log.connection.execute("PRAGMA max_page_count = 1073741823")


async def _write_until_full(t: Any, g: Gov) -> Any:
    for i in range(500):  # a page holds several entries: write until one needs a new page
        out = await t.call("remember", {"agent_id": "A", "type": "semantic",
                                        "content": f"fact number {i} " + "x" * 200}, g.agent_a)
        if not out.ok:
            return out
    raise AssertionError("the governance file never filled up")


async def test_a_full_disk_is_a_clear_storage_full_and_reads_fail_closed(
    transport: Any, gov: Gov
) -> None:
    seed = await transport.call("remember", {"agent_id": "A", "type": "semantic",
                                             "content": "seeded before the disk filled"},
                                gov.agent_a)
    assert seed.ok
    _fill(gov.store)
    failed = await _write_until_full(transport, gov)
    assert failed.code == "storage_full", failed.body
    assert "cannot rollback" not in failed.body["message"]
    assert "disk is full" in failed.body["message"]
    read = await transport.call("recall", {"agent_id": "A", "query": "seeded"}, gov.agent_a)
    assert not read.ok and read.code == "storage_full", read.body
    assert "fails closed" in read.body["message"]
    _free(gov.store)
    again = await transport.call("recall", {"agent_id": "A", "query": "seeded"}, gov.agent_a)
    assert again.ok and again.body["results"], again.body
    assert gov.store.verify()["ok"]


async def test_reads_keep_working_when_the_deployment_chose_so(tmp_path: Path) -> None:
    inner = SqliteStore(tmp_path / "mem.db", embedder=HashingEmbedder())
    g = GovernedStore(inner, tmp_path / "gov.db", audit_failure="serve_reads")
    try:
        with acting_as("a"):
            await g.remember(RememberRequest(agent_id="A", type="semantic", content="kept"))
            _fill(g)
            with pytest.raises(Exception, match="disk is full"):
                for i in range(500):
                    await g.remember(RememberRequest(agent_id="A", type="semantic",
                                                     content=f"{i} " + "y" * 200))
            for _ in range(3):
                hits = await g.recall(RecallRequest(agent_id="A", query="kept"))
                assert [h.content for h in hits.results] == ["kept"]
            assert (await g.health()).status == "degraded"
    finally:
        _free(g)
        await g.aclose()


def test_the_setting_is_checked() -> None:
    with pytest.raises(ValueError, match="audit_failure"):
        GovernedStore(None, ":memory:", audit_failure="ignore")  # type: ignore[arg-type]
