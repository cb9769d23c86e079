"""A governance file written before approvals had memory_id/requester_id opens, gains the
columns in place, and its pending items keep working (looked up by their id as before)."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore, acting_as
from memorywire.store.memory import InMemoryStore
from memorywire.wire.models import RememberRequest

pytestmark = pytest.mark.anyio

_OLD = """
CREATE TABLE approvals(
    id TEXT PRIMARY KEY, operation TEXT NOT NULL, agent_id TEXT NOT NULL, user_id TEXT,
    request TEXT NOT NULL, content_hash TEXT NOT NULL, requested_by TEXT NOT NULL,
    reasoning TEXT, status TEXT NOT NULL, created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL, reviewer TEXT, reviewed_at INTEGER, reason TEXT,
    reviewed_hash TEXT, attempts INTEGER NOT NULL DEFAULT 0, result TEXT);
INSERT INTO approvals VALUES ('old-1', 'remember', 'A', NULL,
    '{"agent_id":"A","content":"from the old version","id":"old-1","type":"semantic"}',
    'h', 'writer', NULL, 'pending', 1, 1, NULL, NULL, NULL, NULL, 0, NULL);
"""


async def test_an_old_governance_file_is_migrated_in_place(tmp_path: Path) -> None:
    conn = apsw.Connection(str(tmp_path / "gov.db"))
    conn.execute(_OLD)
    conn.close()
    g = GovernedStore(InMemoryStore(HashingEmbedder()), tmp_path / "gov.db")
    try:
        cols = {r[1] for r in g.audit_log.connection.execute("PRAGMA table_info(approvals)")}
        assert {"memory_id", "requester_id"} <= cols
        with acting_as("writer"), pytest.raises(Exception, match="awaiting approval"):
            await g.remember(RememberRequest(agent_id="A", type="semantic",
                                             content="direct", id="old-1"))
        await g.approve("old-1", "reviewer", None)
        got = await g.get("A", "old-1")
        assert got is not None and got.content == "from the old version"
    finally:
        await g.aclose()
