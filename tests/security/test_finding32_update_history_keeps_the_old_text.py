"""Issue 32 (update history): an update overwrote a memory and its history kept only an HMAC
of the old text, so nobody could see, let alone restore, what was overwritten. The text an
update replaces is now kept beside the audit log (readable, or sealed under the user's data
key, per the policy's ``history_text``) and ``history`` shows it as ``previous_content`` on
every transport; a hard forget of the memory removes it (the audit log itself still holds no
content), and ``history_text: "off"`` keeps the hash alone.

Before the fix: no revision carried ``previous_content`` (REST, JSON-RPC, MCP).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.security.conftest import Caller, Rig, open_rig, rest

pytestmark = pytest.mark.anyio


async def _update(rig: Rig, call: Caller, doc: dict[str, Any]) -> None:
    """An update by the operator; over MCP (a model acting) it is staged: a reviewer
    approves it."""
    out = await call("update", doc, rig.admin)
    assert out.ok, out
    if out.body["pending_approval"]:
        done = await rest(rig, "approvals.approve", {"id": out.body["approval_id"]},
                          rig.reviewer)  # a writer never approves its own write
        assert done.ok, done


def _previous(history: dict[str, Any]) -> list[Any]:
    return [r["details"]["previous_content"] for r in history["revisions"]
            if "previous_content" in (r.get("details") or {})]


async def test_history_shows_the_text_an_update_replaced(rig: Rig, call: Caller) -> None:
    made = await rest(rig, "remember", {"agent_id": "A", "id": "h1", "type": "semantic",
                                        "content": "Alice lives in Lisbon"}, rig.admin)
    assert made.ok, made
    await _update(rig, call, {"agent_id": "A", "id": "h1", "content": "Alice lives in Porto"})
    await _update(rig, call, {"agent_id": "A", "id": "h1", "content": "Alice lives in Faro"})
    hist = await call("history", {"agent_id": "A", "id": "h1"}, rig.agent)
    assert hist.ok, hist
    assert _previous(hist.body) == ["Alice lives in Lisbon", "Alice lives in Porto"], hist.body
    # the log itself still carries no content: the text is kept beside it and named
    log = " ".join(str(e["details"]) for e in rig.gov.audit_entries(limit=10_000))
    assert "Lisbon" not in log and "Porto" not in log


async def test_a_hard_forget_takes_the_kept_texts_with_it(rig: Rig) -> None:
    await rest(rig, "remember", {"agent_id": "A", "id": "g1", "type": "semantic",
                                 "content": "a secret"}, rig.admin)
    out = await rest(rig, "update", {"agent_id": "A", "id": "g1", "content": "redacted"},
                     rig.admin)
    assert out.ok and not out.body["pending_approval"], out
    assert rig.gov.audit_log.db.query("SELECT count(*) FROM revision_texts")[0][0] == 1
    gone = await rest(rig, "forget", {"agent_id": "A", "ids": ["g1"], "hard_delete": True},
                      rig.admin)
    assert gone.ok and gone.body["forgotten_ids"] == ["g1"], gone
    assert rig.gov.audit_log.db.query("SELECT count(*) FROM revision_texts")[0][0] == 0


async def test_history_text_off_keeps_the_hash_alone(tmp_path: Path) -> None:
    async with open_rig(tmp_path, policies={"history_text": "off"}) as rig:
        await rest(rig, "remember", {"agent_id": "A", "id": "o1", "type": "semantic",
                                     "content": "before"}, rig.admin)
        await rest(rig, "update", {"agent_id": "A", "id": "o1", "content": "after"},
                   rig.admin)
        hist = await rest(rig, "history", {"agent_id": "A", "id": "o1"}, rig.admin)
        assert hist.ok and _previous(hist.body) == [], hist.body
