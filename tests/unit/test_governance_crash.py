"""A process killed (SIGKILL) at the commit point, then restarted; and the content scrub.

The child approves a staged write through a wrapper that kills its own process either just
before or just after the inner SqliteStore commits. Whatever the moment, the restarted store
ends with exactly one memory under the staged id, the completion audit entry, and a chain that
verifies. Separately: after a hard forget, no byte of the content remains in any file of the
governance database.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore, acting_as
from memorywire.store.base import ListQuery
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import ForgetRequest, RememberRequest
from tests.unit.governance_kill import open_governed, run_killed

pytestmark = pytest.mark.anyio
A = "agent-1"

@pytest.mark.parametrize("mode", ["before", "after"])
async def test_sigkill_at_commit_point_then_redrive(
    tmp_path: Path, mode: Literal["before", "after"]
) -> None:
    _, g = open_governed(tmp_path)
    with acting_as("writer"):
        staged = await g.remember(
            RememberRequest(agent_id=A, type="semantic", content="Judy", approval_required=True)
        )
    h = (await g.get_review(staged.id))["content_hash"]
    await g.aclose()

    run_killed(tmp_path, mode, 'await g.approve(args[0], "reviewer", args[1])', staged.id, h)

    inner, g = open_governed(tmp_path)
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
