"""Queue transitions share the audit entries' group transaction without losing anything.

Under load a governed remember used to wait for three commits of the governance database (the
"nothing staged under this id" read, the intent entry, the done entry), an approval for four.
Calls made through ``GovWorker.grouped`` now join the group of whatever is waiting: one commit
for all of it. What must not change: a caller resumes only once its work is durable, one
call's failure is its own, and a remember never reaches the store while its id is staged.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import apsw
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import Conflict, PendingApproval
from memorywire.governance import GovernedStore, acting_as
from memorywire.governance.audit import AuditLog
from memorywire.governance.worker import GovWorker
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import RememberRequest

pytestmark = pytest.mark.anyio


async def test_grouped_calls_share_commits_and_fail_alone(tmp_path: Path) -> None:
    log = AuditLog.open(tmp_path / "gov.db")
    w = GovWorker(log)
    other = apsw.Connection(str(tmp_path / "gov.db"))
    other.set_busy_timeout(10_000)  # the worker holds the write lock while this test reads
    outcomes: dict[int, str] = {}

    async def one(i: int) -> None:
        def job() -> int:
            log.append(actor="t", action="remember", details={"i": i})
            if i % 7 == 0:
                raise Conflict(f"job {i} refused")  # after its write: the write must go too
            return log.head()[0]

        try:
            seq = await w.grouped(job)
        except Conflict:
            outcomes[i] = "refused"
            return
        # durable when the caller resumes: another connection sees the entry already
        assert other.execute("SELECT max(seq) FROM audit_log").fetchall()[0][0] >= seq
        outcomes[i] = "ok"
        await w.append(log.prepare(actor="t", action="recall", details={"i": i}))

    async with anyio.create_task_group() as tg:
        for i in range(120):
            tg.start_soon(one, i)
    w.close()
    refused = {i for i in range(120) if i % 7 == 0}
    assert {i for i, o in outcomes.items() if o == "refused"} == refused
    entries = log.entries(limit=1000)
    written = sorted(e.details["i"] for e in entries if e.action == "remember")
    assert written == [i for i in range(120) if i not in refused]
    assert log.verify().ok
    assert w.grouped_calls == 120 and w.groups < 120 + 120 - len(refused)
    other.close()
    log.close()


async def test_a_remember_of_a_staged_id_writes_no_intent_and_stays_out(tmp_path: Path) -> None:
    g = GovernedStore(SqliteStore(tmp_path / "mem.db", embedder=HashingEmbedder()),
                      tmp_path / "gov.db")
    with acting_as("writer"):
        await g.remember(RememberRequest(agent_id="A", type="semantic", content="staged",
                                         id="m1", approval_required=True))

        async def direct(i: int) -> None:
            with pytest.raises(PendingApproval):
                await g.remember(RememberRequest(agent_id="A", type="semantic",
                                                 content=f"direct {i}", id="m1"))

        async with anyio.create_task_group() as tg:
            for i in range(10):
                tg.start_soon(direct, i)
            for i in range(10):  # other writes in the same groups go through
                tg.start_soon(g.remember, RememberRequest(agent_id="A", type="semantic",
                                                          content=f"other {i}", id=f"o{i}"))
    assert await g.get("A", "m1") is None
    for i in range(10):
        assert await g.get("A", f"o{i}") is not None
    await g.aclose()
    log = AuditLog.open(tmp_path / "gov.db")
    entries = log.entries(limit=1000)
    assert not [e for e in entries if e.action == "remember" and "m1" in e.memory_ids
                and e.details.get("phase") == "intent"]
    assert len([e for e in entries if e.details.get("phase") == "intent"]) == 10
    assert log.verify().ok
    log.close()
