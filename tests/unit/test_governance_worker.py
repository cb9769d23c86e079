"""The governance worker thread: grouped audit writes keep the chain, awaited entries are
committed before the caller resumes, failures reach the callers, and verification is
incremental from where it got to."""

from __future__ import annotations

from pathlib import Path

import anyio
import apsw
import pytest

from memorywire.errors import InvalidRequest, MemorywireError
from memorywire.governance.audit import AuditLog
from memorywire.governance.worker import GovWorker

pytestmark = pytest.mark.anyio


async def test_concurrent_entries_are_grouped_and_chained_in_order(tmp_path: Path) -> None:
    log = AuditLog.open(tmp_path / "gov.db")
    w = GovWorker(log)
    seqs: list[int] = []

    async def one(i: int) -> None:
        e = await w.append(log.prepare(actor="t", action="recall", details={"i": i}))
        seqs.append(e.seq)

    async with anyio.create_task_group() as tg:
        for i in range(300):
            tg.start_soon(one, i)
    w.close()
    assert sorted(seqs) == list(range(1, 301))
    assert w.grouped_entries == 300 and w.groups < 300  # several entries per transaction
    assert log.verify().ok
    log.close()


async def test_an_awaited_entry_is_committed_when_the_caller_resumes(tmp_path: Path) -> None:
    log = AuditLog.open(tmp_path / "gov.db")
    w = GovWorker(log)
    other = apsw.Connection(str(tmp_path / "gov.db"))
    for i in range(20):
        entry = await w.append(log.prepare(actor="t", action="remember", details={"i": i}))
        seen = other.execute("SELECT max(seq) FROM audit_log").fetchall()[0][0]
        assert seen == entry.seq  # another connection already sees it: durable, not pending
    other.close()
    w.close()
    log.close()


async def test_a_failed_group_fails_its_callers_and_is_remembered(tmp_path: Path) -> None:
    log = AuditLog.open(tmp_path / "gov.db")
    w = GovWorker(log)
    await w.append(log.prepare(actor="t", action="remember"))
    log.connection.execute("PRAGMA query_only = ON")  # every write now fails
    with pytest.raises(MemorywireError):
        await w.append(log.prepare(actor="t", action="remember"))
    assert w.post_error is not None
    w.post(log.prepare(actor="t", action="recall"))
    w.flush()
    assert w.post_error is not None
    log.connection.execute("PRAGMA query_only = OFF")
    await w.append(log.prepare(actor="t", action="remember"))
    assert w.post_error is None
    w.close()
    assert [e.action for e in log.entries()] == ["remember", "remember"]
    log.close()


async def test_posted_entries_are_written_by_close_and_calls_raise(tmp_path: Path) -> None:
    log = AuditLog.open(tmp_path / "gov.db")
    w = GovWorker(log)
    for i in range(50):
        w.post(log.prepare(actor="t", action="recall", details={"i": i}))

    def boom() -> None:
        raise InvalidRequest("refused")

    with pytest.raises(InvalidRequest):
        await w.run(boom)
    w.close()
    assert len(log.entries()) == 50 and log.verify().ok
    with pytest.raises(MemorywireError, match="closed"):
        w.post(log.prepare(actor="t", action="recall"))
    log.close()


def test_bad_details_are_refused_before_they_reach_a_group(tmp_path: Path) -> None:
    log = AuditLog.open(tmp_path / "gov.db")
    with pytest.raises(InvalidRequest):
        log.prepare(actor="t", action="remember", details={"content": "secret"})
    with pytest.raises(InvalidRequest):
        log.prepare(actor="t", action="remember", details={"x": "\ud800"})
    log.close()


def test_incremental_verification_reads_only_new_entries(tmp_path: Path) -> None:
    log = AuditLog.open(tmp_path / "gov.db")
    for i in range(10):
        log.append(actor="t", action="recall", details={"i": i})
    first = log.verify_incremental()
    assert first["ok"] and first["checked"] == 10 and first["complete"]
    for i in range(3):
        log.append(actor="t", action="recall", details={"i": 10 + i})
    second = log.verify_incremental()
    assert second["ok"] and second["checked"] == 3 and second["verified_seq"] == 13
    # an edit after the verified point is caught incrementally
    log.append(actor="t", action="recall")
    conn = log.connection
    conn.execute("DROP TRIGGER audit_log_no_update")
    conn.execute("UPDATE audit_log SET actor = 'mallory' WHERE seq = 14")
    third = log.verify_incremental()
    assert not third["ok"] and third["first_bad_seq"] == 14
    assert log.verification_state()["audit_chain_ok"] is False
    log.close()


def test_an_edit_behind_the_verified_point_needs_a_full_verify(tmp_path: Path) -> None:
    log = AuditLog.open(tmp_path / "gov.db")
    for i in range(5):
        log.append(actor="t", action="recall", details={"i": i})
    assert log.verify_incremental()["ok"]
    conn = log.connection
    conn.execute("DROP TRIGGER audit_log_no_update")
    conn.execute("UPDATE audit_log SET actor = 'mallory' WHERE seq = 2")
    assert log.verify_incremental()["ok"]  # documented: the tail alone is re-checked
    assert not log.verify().ok
    assert log.verification_state()["audit_chain_ok"] is False
    log.close()


async def test_concurrent_governed_writes_keep_intent_before_done(tmp_path: Path) -> None:
    from memorywire.embed.hashing import HashingEmbedder
    from memorywire.governance import GovernedStore, acting_as
    from memorywire.store.sqlite import SqliteStore
    from memorywire.wire.models import RecallRequest, RememberRequest

    g = GovernedStore(SqliteStore(tmp_path / "mem.db", embedder=HashingEmbedder()),
                      tmp_path / "gov.db")

    async def one(i: int) -> None:
        with acting_as("w"):
            await g.remember(RememberRequest(agent_id="A", type="semantic",
                                             content=f"fact {i}", id=f"m{i}"))
            await g.recall(RecallRequest(agent_id="A", query=f"fact {i}"))

    async with anyio.create_task_group() as tg:
        for i in range(40):
            tg.start_soon(one, i)
    w = g.worker
    await g.aclose()
    log = AuditLog.open(tmp_path / "gov.db")
    entries = log.entries()
    assert len(entries) == 40 * 3 and log.verify().ok
    for i in range(40):
        phases = [e.details.get("phase") for e in entries
                  if e.action == "remember" and f"m{i}" in e.memory_ids]
        assert phases == ["intent", "done"]
    assert w.groups < w.grouped_entries  # entries of concurrent requests shared commits
    log.close()
