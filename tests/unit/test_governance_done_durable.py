"""A direct write's ``done`` entry is durable when the write is acknowledged, and an
``intent`` without ``done`` means only "the process died before it answered".

Recovery re-drives approvals left ``committing``; it does not reconcile a direct write's
``intent`` without ``done`` (several processes may share the governance database, and one
cannot tell another's write in flight from a crashed one). That mark is therefore only sound
while no acknowledged write can carry it, which is why ``done`` is awaited before the answer
(docs/decisions.md, "`done` stays on the critical path (issue 20, round 7)").
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from memorywire.governance import acting_as
from memorywire.store.base import UpdateRequest
from memorywire.wire.models import ForgetRequest, MergeRequest, RememberRequest
from tests.unit.governance_kill import open_governed, run_killed

pytestmark = pytest.mark.anyio
A = "agent-1"


def _phases_seen_elsewhere(db: Path, memory_id: str, action: str) -> list[str]:
    """The phases another connection (another process, a crash survivor) can read now."""
    conn = apsw.Connection(str(db))
    try:
        rows = conn.execute(
            "SELECT details FROM audit_log WHERE action = ? AND memory_ids LIKE ? ORDER BY seq",
            (action, f'%"{memory_id}"%'),
        ).fetchall()
    finally:
        conn.close()
    return [json.loads(str(r[0])).get("phase") for r in rows]


async def test_each_direct_write_is_answered_after_its_done_is_committed(tmp_path: Path) -> None:
    _, g = open_governed(tmp_path)
    db = tmp_path / "gov.db"
    with acting_as("writer"):
        for i in ("m1", "m2", "m3"):
            await g.remember(RememberRequest(agent_id=A, type="semantic", id=i,
                                             content=f"the office {i} is in Bergen"))
            assert _phases_seen_elsewhere(db, i, "remember") == ["intent", "done"]
        await g.update(UpdateRequest(agent_id=A, id="m1", confidence=0.4))
        assert _phases_seen_elsewhere(db, "m1", "update") == ["intent", "done"]
        await g.merge(MergeRequest(agent_id=A, canonical="m2", duplicates=["m3"]))
        assert _phases_seen_elsewhere(db, "m2", "merge") == ["intent", "done"]
        await g.forget(ForgetRequest(agent_id=A, ids=["m1"]))
        assert _phases_seen_elsewhere(db, "m1", "forget") == ["intent", "done"]
    await g.aclose()


#: The same kill on the bracketed path (store.bracket): SQLite's writing thread runs intent,
#: write and done in one call, so the kill goes between its write and its done.
CHILD_BRACKETED = r"""
import os, signal, sys
from pathlib import Path
import anyio
from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore, acting_as
from memorywire.store.sqlite import SqliteStore, writes
from memorywire.wire.models import RememberRequest

tmp = Path(sys.argv[1])
write = writes.remember_many

def kill_after_write(*args, **kwargs):
    out = write(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)  # the effect is committed, `done` not yet written
    return out

writes.remember_many = kill_after_write

async def main():
    inner = SqliteStore(tmp / "mem.db", embedder=HashingEmbedder())
    assert inner.honours_write_bracket
    g = GovernedStore(inner, tmp / "gov.db")
    with acting_as("writer"):
        await g.remember(RememberRequest(agent_id="agent-1", type="semantic", id="m-crash",
                                         content="Judy moved to Oslo"))

anyio.run(main)
"""


@pytest.mark.parametrize("bracketed", [False, True], ids=["async", "bracketed"])
async def test_a_kill_between_effect_and_answer_leaves_the_intent_for_an_operator(
    tmp_path: Path, bracketed: bool,
) -> None:
    # killed after the store wrote, before `done` was written
    if bracketed:
        proc = subprocess.run([sys.executable, "-c", CHILD_BRACKETED, str(tmp_path)],
                              capture_output=True, timeout=120, check=False)
        assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    else:
        run_killed(tmp_path, "after", """
            with acting_as("writer"):
                await g.remember(RememberRequest(agent_id="agent-1", type="semantic",
                                                 id="m-crash", content="Judy moved to Oslo"))
        """)

    inner, g = open_governed(tmp_path)
    assert await inner.get(A, "m-crash") is not None  # the effect survived the kill
    assert await g.recover() == []  # nothing to re-drive: no approval was committing
    trail = [(e["action"], e["details"].get("phase")) for e in g.audit_entries(memory_id="m-crash")]
    # the write was never acknowledged, and the trail says so: an intent without done
    assert trail == [("remember", "intent")]
    assert g.verify()["ok"]
    await g.aclose()
