"""The audit log: append-only, chained, checkpointed, and never a home for content."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import apsw
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.core.clock import FakeClock
from memorywire.errors import BackendUnavailable, InvalidRequest
from memorywire.governance.audit import AuditLog
from memorywire.governance.chain import GENESIS_HASH, Checkpoint, entry_hash


@pytest.fixture
def log(tmp_path: Path) -> AuditLog:
    a = AuditLog.open(tmp_path / "gov.db", clock=FakeClock())
    yield a  # type: ignore[misc]
    a.close()


def _fill(log: AuditLog, n: int) -> None:
    for i in range(n):
        log.append(
            actor=f"user{i % 3}",
            action=["remember", "recall", "forget"][i % 3],
            agent_id=f"agent{i % 2}",
            memory_ids=[f"m{i}", f"m{i + 1}"],
            details={"content_sha256": f"{i:064x}", "n": i},
        )


def test_chain_links_each_entry_to_the_previous(log: AuditLog) -> None:
    _fill(log, 5)
    entries = log.entries()
    assert [e.seq for e in entries] == [1, 2, 3, 4, 5]
    assert entries[0].prev_hash == GENESIS_HASH
    for prev, cur in itertools.pairwise(entries):
        assert cur.prev_hash == prev.hash
        assert cur.hash == entry_hash(cur.prev_hash, cur.body())
    assert log.verify().ok


def test_triggers_refuse_update_and_delete(log: AuditLog) -> None:
    _fill(log, 2)
    with pytest.raises(apsw.ConstraintError):
        log.connection.execute("UPDATE audit_log SET actor = 'mallory' WHERE seq = 1")
    with pytest.raises(apsw.ConstraintError):
        log.connection.execute("DELETE FROM audit_log WHERE seq = 2")
    assert log.verify().ok


def test_details_refuse_content(log: AuditLog) -> None:
    with pytest.raises(InvalidRequest):
        log.append(actor="a", action="remember", details={"content": "secret"})
    with pytest.raises(InvalidRequest):
        log.append(actor="a", action="recall", details={"query": "secret"})
    assert log.entries() == []


def test_append_joins_the_callers_transaction(log: AuditLog) -> None:
    conn = log.connection
    with pytest.raises(RuntimeError), conn:
        log.append(actor="a", action="remember")
        raise RuntimeError("roll back")
    assert log.entries() == []


def test_queries_by_agent_and_memory(log: AuditLog) -> None:
    _fill(log, 6)
    assert {e.agent_id for e in log.entries(agent_id="agent1")} == {"agent1"}
    assert [e.seq for e in log.entries(memory_id="m3")] == [3, 4]


def test_checkpoint_is_signed_and_exportable(log: AuditLog) -> None:
    _fill(log, 3)
    key = Ed25519PrivateKey.generate()
    cp = log.checkpoint(key)
    exported = json.loads(json.dumps(cp))
    assert exported["seq"] == 3 and exported["hash"] == log.entries()[-1].hash
    assert Checkpoint.from_dict(exported).signature_valid()
    forged = dict(exported, hash="f" * 64)
    report = log.verify(checkpoints=[forged])
    assert not report.ok and report.kinds == ("bad_checkpoint",)
    assert log.verify(checkpoints=[exported]).ok
    other = Ed25519PrivateKey.generate()
    from memorywire.governance.chain import public_key_b64

    assert not log.verify(checkpoints=[exported], trusted_keys=[public_key_b64(other)]).ok
    assert log.verify(checkpoints=[exported], trusted_keys=[public_key_b64(key)]).ok
    assert [c.seq for c in log.stored_checkpoints()] == [3]


def test_truncation_after_checkpoint_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "gov.db"
    log = AuditLog.open(path)
    _fill(log, 10)
    cp = log.checkpoint(Ed25519PrivateKey.generate())
    log.connection.execute("DROP TRIGGER audit_log_no_delete")
    log.connection.execute("DELETE FROM audit_log WHERE seq > 7")
    report = log.verify(checkpoints=[cp])
    assert report.kinds == ("truncated",) and report.first_bad_seq == 8
    log.close()


@pytest.mark.anyio
async def test_record_is_an_audit_sink(log: AuditLog) -> None:
    await log.record({"action": "promote", "agent_id": "a", "memory_ids": ["x"], "actor": "c"})
    [e] = log.entries()
    assert (e.action, e.actor, e.memory_ids) == ("promote", "c", ("x",))


def test_unwritable_database_is_backend_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    with pytest.raises(BackendUnavailable):
        AuditLog.open(blocker / "gov.db")


def test_a_missing_folder_is_created(tmp_path: Path) -> None:
    """Data folders on demand: a fresh account has no folder for the governance database."""
    log = AuditLog.open(tmp_path / "missing-dir" / "gov.db")
    log.close()
    assert (tmp_path / "missing-dir" / "gov.db").is_file()
