"""A process killed (SIGKILL) at the commit point, then restarted; and the content scrub.

The child approves a staged write through a wrapper that kills its own process either just
before or just after the inner SqliteStore commits. Whatever the moment, the restarted store
ends with exactly one memory under the staged id, the completion audit entry, and a chain that
verifies. Separately: after a hard forget, no byte of the content remains in any file of the
governance database.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore, acting_as
from memorywire.store.base import ListQuery
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import ForgetRequest, RememberRequest

pytestmark = pytest.mark.anyio
A = "agent-1"

CHILD = r"""
import os, signal, sys
from pathlib import Path
import anyio
from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore
from memorywire.store.sqlite import SqliteStore

mode, tmp, item_id, content_hash = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4]

class Killer:
    def __init__(self, inner):
        self._inner = inner
    def __getattr__(self, name):
        return getattr(self._inner, name)
    async def remember(self, req):
        if mode == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        resp = await self._inner.remember(req)
        if mode == "after":
            os.kill(os.getpid(), signal.SIGKILL)
        return resp

async def main():
    inner = SqliteStore(tmp / "mem.db", embedder=HashingEmbedder())
    g = GovernedStore(Killer(inner), tmp / "gov.db")
    await g.approve(item_id, "reviewer", content_hash)

anyio.run(main)
"""


@pytest.mark.parametrize("mode", ["before", "after"])
async def test_sigkill_at_commit_point_then_redrive(tmp_path: Path, mode: str) -> None:
    inner = SqliteStore(tmp_path / "mem.db", embedder=HashingEmbedder())
    g = GovernedStore(inner, tmp_path / "gov.db")
    with acting_as("writer"):
        staged = await g.remember(
            RememberRequest(agent_id=A, type="semantic", content="Judy", approval_required=True)
        )
    h = (await g.get_review(staged.id))["content_hash"]
    await g.aclose()

    proc = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(tmp_path), staged.id, h],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()

    inner = SqliteStore(tmp_path / "mem.db", embedder=HashingEmbedder())
    g = GovernedStore(inner, tmp_path / "gov.db")
    [stuck] = g.list_pending(status="committing")
    assert stuck["id"] == staged.id
    landed = [r.id for r in await inner.list(ListQuery(agent_id=A))]
    assert landed == ([staged.id] if mode == "after" else [])
    assert await g.recover() == [staged.id]
    assert [r.id for r in await g.list(ListQuery(agent_id=A))] == [staged.id]
    trail = [(e["action"], e["details"].get("phase")) for e in g.audit_entries(memory_id=staged.id)]
    assert trail == [("staged", None), ("approved", None), ("remember", "done")]
    assert g.verify()["ok"]
    await g.aclose()


def _files_containing(directory: Path, needle: bytes) -> list[str]:
    return [p.name for p in directory.iterdir() if p.is_file() and needle in p.read_bytes()]


async def test_hard_forget_leaves_no_content_in_governance_db(tmp_path: Path) -> None:
    gov_dir = tmp_path / "gov"
    gov_dir.mkdir()
    secret = "Kim's passport number is X1234-SECRET-5678"
    inner = SqliteStore(tmp_path / "mem.db", embedder=HashingEmbedder())
    g = GovernedStore(inner, gov_dir / "gov.db")
    with acting_as("writer"):
        direct = await g.remember(RememberRequest(agent_id=A, type="semantic", content=secret))
        staged = await g.remember(
            RememberRequest(
                agent_id=A, type="semantic", content=secret + " (staged)", approval_required=True
            )
        )
    assert _files_containing(gov_dir, b"SECRET") == ["gov.db"]  # staged content, until decided
    await g.approve(staged.id, "reviewer", (await g.get_review(staged.id))["content_hash"])
    with acting_as("writer"):
        out = await g.forget(
            ForgetRequest(agent_id=A, ids=[direct.id, staged.id], hard_delete=True)
        )
    assert sorted(out.forgotten_ids) == sorted([direct.id, staged.id])
    await g.aclose()
    assert _files_containing(gov_dir, b"SECRET") == []
    assert _files_containing(gov_dir, secret.encode("utf-8")) == []
    # the database and its HMAC key (hex digits, never content): no journal, no stray copy
    assert sorted(os.listdir(gov_dir)) == ["gov.db", "gov.db.audit-key"]
