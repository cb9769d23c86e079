"""Governance with its queue and audit log on PostgreSQL, over a PostgresStore in one database.

The SQLite suite (tests/unit/test_governance_store.py, test_audit*.py) covers the rules; this
module shows they hold on PostgreSQL too, plus what only a shared server adds: several
governance handles (one per server process) on one chain and one queue.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from typing import Any

import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.cli import main
from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import Conflict, Forbidden, PendingApproval
from memorywire.governance import AuditLog, GovernedStore, acting_as
from memorywire.governance.chain import GENESIS_HASH, entry_hash
from memorywire.governance.pg_backend import SCHEMA
from memorywire.store.base import ListQuery
from memorywire.store.postgres import PostgresStore
from memorywire.testing import postgres as _pg
from memorywire.wire.models import (
    ForgetRequest,
    MemoryType,
    RecallRequest,
    RememberRequest,
    RememberResponse,
)

pytestmark = pytest.mark.postgres
pg_server = _pg.pg_server
pg_dsn = _pg.pg_dsn

A = "agent-1"
EMB = HashingEmbedder(64)


def _governed(dsn: str, clock: FakeClock) -> GovernedStore:
    inner = PostgresStore(dsn, EMB, clock,
                          recall=replace(PostgresStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                         lexical_floor=-1.0))
    return GovernedStore(inner, dsn, clock=clock, approval_base_url="https://mw.example")


@pytest.fixture
async def gov(pg_dsn: str) -> AsyncIterator[GovernedStore]:
    g = _governed(pg_dsn, FakeClock())
    try:
        yield g
    finally:
        await g.aclose()


@pytest.fixture
def log(pg_dsn: str) -> Iterator[AuditLog]:
    lg = AuditLog.open(pg_dsn)
    try:
        yield lg
    finally:
        lg.close()


async def _remember(g: GovernedStore, content: str, **kw: Any) -> RememberResponse:
    with acting_as("writer"):
        req = RememberRequest(agent_id=A, type=MemoryType.SEMANTIC, content=content, **kw)
        return await g.remember(req)


async def _visible(g: GovernedStore, query: str) -> set[str]:
    hits = await g.recall(RecallRequest(agent_id=A, query=query, k=50))
    return {h.id for h in hits.results} | {r.id for r in await g.list(ListQuery(agent_id=A))}


def _raw(dsn: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute(f"SET search_path TO {SCHEMA}")
    return conn


@pytest.mark.anyio
async def test_gated_remember_is_invisible_until_approved_with_the_same_id(
    gov: GovernedStore,
) -> None:
    staged = await _remember(gov, "Alice prefers green tea", approval_required=True)
    assert staged.pending_approval and staged.stores == []
    assert staged.id not in await _visible(gov, "Alice green tea")
    assert await gov.get(A, staged.id) is None
    with pytest.raises(PendingApproval):
        await _remember(gov, "something else", id=staged.id)
    review = await gov.get_review(staged.id)
    done = await gov.approve(staged.id, "reviewer", review["content_hash"], "ok")
    assert done["status"] == "approved"
    rec = await gov.get(A, staged.id)
    assert rec is not None and rec.content == "Alice prefers green tea"
    assert staged.id in await _visible(gov, "Alice green tea")
    assert gov.verify()["ok"]


@pytest.mark.anyio
async def test_reject_scrubs_and_never_appears(gov: GovernedStore) -> None:
    staged = await _remember(gov, "Bob is allergic to nuts", approval_required=True)
    out = await gov.reject(staged.id, "reviewer", "not confirmed")
    assert out["status"] == "rejected" and out["request"]["scrubbed"]
    assert "content" not in out["request"]
    assert staged.id not in await _visible(gov, "Bob allergic nuts")
    with pytest.raises(Conflict):
        await gov.approve(staged.id, "reviewer", out["content_hash"])
    assert [e["action"] for e in gov.audit_entries(memory_id=staged.id)] == ["staged", "rejected"]


@pytest.mark.anyio
async def test_approve_is_idempotent(gov: GovernedStore) -> None:
    staged = await _remember(gov, "Carol runs on Tuesdays", approval_required=True)
    h = (await gov.get_review(staged.id))["content_hash"]
    for _ in range(3):
        await gov.approve(staged.id, "reviewer", h)
    assert [r.id for r in await gov.list(ListQuery(agent_id=A))].count(staged.id) == 1
    actions = [e["action"] for e in gov.audit_entries(memory_id=staged.id)]
    assert actions == ["staged", "approved", "remember"]


@pytest.mark.anyio
async def test_stale_hash_and_self_approval_are_refused(gov: GovernedStore) -> None:
    staged = await _remember(gov, "Dan likes jazz", approval_required=True)
    seen = (await gov.get_review(staged.id))["content_hash"]
    await _remember(gov, "Dan likes free jazz", approval_required=True, id=staged.id)
    with pytest.raises(Conflict):
        await gov.approve(staged.id, "reviewer", seen)
    fresh = (await gov.get_review(staged.id))["content_hash"]
    with pytest.raises(Forbidden):
        await gov.approve(staged.id, "writer", fresh)
    await gov.approve(staged.id, "reviewer", fresh)
    rec = await gov.get(A, staged.id)
    assert rec is not None and rec.content == "Dan likes free jazz"


@pytest.mark.anyio
async def test_two_servers_share_one_queue_and_one_chain(pg_dsn: str) -> None:
    """Staged through one handle, approved through the other; the approval lands once."""
    clock = FakeClock()
    g1, g2 = _governed(pg_dsn, clock), _governed(pg_dsn, clock)
    try:
        staged = await _remember(g1, "Erin moved to Porto", approval_required=True)
        [pending] = g2.list_pending(agent_id=A)
        assert pending["id"] == staged.id
        h = pending["content_hash"]
        await g2.approve(staged.id, "reviewer", h)
        await g1.approve(staged.id, "reviewer-2", h)  # already decided: returned as is
        rec = await g1.get(A, staged.id)
        assert rec is not None and rec.content == "Erin moved to Porto"
        actions = [e["action"] for e in g1.audit_entries(memory_id=staged.id)]
        assert actions == ["staged", "approved", "remember"]
        assert g1.verify()["ok"] and g2.verify()["entries"] == g1.verify()["entries"]
    finally:
        await g1.aclose()
        await g2.aclose()


def test_concurrent_appends_make_one_gap_free_chain(pg_dsn: str) -> None:
    """Four connections appending at once: seq 1..N, each linked to the one before."""
    logs = [AuditLog.open(pg_dsn) for _ in range(4)]
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(25):
                logs[i].append(actor=f"w{i}", action="remember", memory_ids=[f"m{i}-{j}"])
        except BaseException as exc:  # surfaced below: a thread cannot fail the test itself
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        entries = logs[0].entries()
        assert [e.seq for e in entries] == list(range(1, 101))
        assert entries[0].prev_hash == GENESIS_HASH
        assert all(b.prev_hash == a.hash for a, b in itertools.pairwise(entries))
        assert logs[1].verify().ok
    finally:
        for lg in logs:
            lg.close()


def test_servers_starting_together_create_the_schema_once(pg_dsn: str) -> None:
    """Regression: a stale catalog lookup made the losers of the setup race fail."""
    opened: list[AuditLog] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def start() -> None:
        barrier.wait()
        try:
            opened.append(AuditLog.open(pg_dsn))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for lg in opened:
        lg.close()
    assert errors == [] and len(opened) == 4


def test_triggers_refuse_update_delete_and_truncate(pg_dsn: str, log: AuditLog) -> None:
    log.append(actor="w", action="remember", memory_ids=["m1"])
    with _raw(pg_dsn) as conn:
        for stmt in (
            "UPDATE audit_log SET actor = 'mallory'",
            "DELETE FROM audit_log",
            "TRUNCATE audit_log",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
                conn.execute(stmt)
    [entry] = log.entries()
    assert entry.actor == "w" and log.verify().ok


def _tamper(dsn: str, *stmts: str) -> None:
    """What an attacker with the table owner's rights does: drop the triggers, then edit."""
    with _raw(dsn) as conn, conn.transaction():
        conn.execute("ALTER TABLE audit_log DISABLE TRIGGER USER")
        for s in stmts:
            conn.execute(s)
        conn.execute("ALTER TABLE audit_log ENABLE TRIGGER USER")


def _build(log: AuditLog, n: int = 10) -> dict[str, Any]:
    for i in range(n):
        log.append(actor="w", action="remember", agent_id="a", memory_ids=[f"m{i}"],
                   details={"i": i})
    return log.checkpoint(Ed25519PrivateKey.generate())


def test_edit_delete_and_truncation_are_detected(pg_dsn: str, log: AuditLog) -> None:
    cp = _build(log)
    _tamper(pg_dsn, "UPDATE audit_log SET actor = 'mallory' WHERE seq = 4")
    report = log.verify(checkpoints=[cp])
    assert not report.ok and report.first_bad_seq == 4 and "edited" in report.kinds

    # Deleting a middle row is caught by the chain alone.
    _tamper(pg_dsn, "UPDATE audit_log SET actor = 'w' WHERE seq = 4",
            "DELETE FROM audit_log WHERE seq = 7")
    report = log.verify()
    assert not report.ok and report.first_bad_seq == 7 and "deleted" in report.kinds

    # Dropping the tail leaves a valid chain: only the exported checkpoint notices.
    _tamper(pg_dsn, "DELETE FROM audit_log WHERE seq >= 7")
    assert log.verify(checkpoints=[]).ok
    report = log.verify(checkpoints=[cp])
    assert not report.ok and "truncated" in report.kinds


def test_rewritten_tail_with_fresh_hashes_is_caught_by_the_checkpoint(
    pg_dsn: str, log: AuditLog
) -> None:
    cp = _build(log)
    entries = log.entries()
    forged = entries[5].body()
    forged["actor"] = "mallory"
    stmts: list[str] = []
    prev = entries[4].hash
    for e in entries[5:]:
        body = forged if e.seq == 6 else e.body()
        h = entry_hash(prev, body)
        stmts.append(
            f"UPDATE audit_log SET actor = '{body['actor']}', prev_hash = '{prev}',"
            f" hash = '{h}' WHERE seq = {e.seq}"
        )
        prev = h
    _tamper(pg_dsn, *stmts)
    assert log.verify(checkpoints=[]).ok  # a consistent forgery, seen from the chain alone
    report = log.verify(checkpoints=[cp])
    assert not report.ok and report.first_bad_seq is not None and report.first_bad_seq <= 6


def test_audit_cli_verifies_a_postgres_log(
    pg_dsn: str, log: AuditLog, capsys: pytest.CaptureFixture[str]
) -> None:
    _build(log, 3)
    assert main(["audit", "verify", "--db", pg_dsn]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["entries"] == 3


@pytest.mark.anyio
async def test_per_user_keys_seal_kept_texts_and_an_erase_destroys_them_on_postgres(
    pg_dsn: str, tmp_path: Any
) -> None:
    """Issue 32: the data keys and kept texts live in the PostgreSQL governance schema too."""
    from memorywire.portability.moves import dump_chunks
    from memorywire.store.base import UpdateRequest

    clock = FakeClock()
    inner = PostgresStore(pg_dsn, EMB, clock,
                          recall=replace(PostgresStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                         lexical_floor=-1.0))
    g = GovernedStore(inner, pg_dsn, clock=clock, per_user_keys=True,
                      data_kek=tmp_path / "kek", audit_key=tmp_path / "hmac")
    try:
        await g.remember(RememberRequest(agent_id=A, user_id="zoe", id="z1", type="semantic",
                                         content="Zoe's first text"))
        await g.update(UpdateRequest(agent_id=A, id="z1", user_id="zoe", content="second"))
        texts = g.audit_log.db.query(f"SELECT body FROM {SCHEMA}.revision_texts")
        assert len(texts) == 1 and "first text" not in str(texts), texts
        dump = b"".join([c async for c in dump_chunks(g, url="postgresql://")])
        assert b"second" not in dump and b'"sealed"' in dump
        gone = await g.forget(ForgetRequest(agent_id=A, user_id="zoe", ids=["z1"],
                                            hard_delete=True))
        assert gone.forgotten_ids == ["z1"]
        assert g.worker.call(lambda: g.copies.keys.destroyed(A, "zoe"))
        assert g.audit_log.db.query(f"SELECT count(*) FROM {SCHEMA}.revision_texts")[0][0] == 0
    finally:
        await g.aclose()


@pytest.mark.anyio
async def test_a_repeat_is_the_stored_memory_on_postgres(gov: GovernedStore) -> None:
    """The same content again through governance is answered with the stored memory, as by
    an ungoverned store: nothing written, one ``deduplicated`` entry naming the stored id,
    the chain verifies (governance/repeats.py)."""
    first = await _remember(gov, "The user is allergic to peanuts.", user_id="u")
    again = await _remember(gov, "the user is allergic to  peanuts.", user_id="u")
    assert again.id == first.id and again.deduplicated is True, again
    rows = await gov.list(ListQuery(agent_id=A, user_id="u"))
    assert [r.id for r in rows] == [first.id]
    mine = [(e["memory_ids"], e["details"].get("phase")) for e in gov.audit_entries()
            if e["action"] == "remember" and first.id in e["memory_ids"]]
    assert mine[-3:] == [([first.id], "intent"), ([first.id], "done"),
                         ([first.id], "deduplicated")]
    copy = await _remember(gov, "The user is allergic to peanuts.", user_id="u",
                           allow_duplicate=True)
    assert copy.id != first.id and not copy.deduplicated
    assert gov.verify()["ok"]
