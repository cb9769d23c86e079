"""Finding 6 (audit part): a user-scoped reviewer listed every user's audit entries by
omitting ``agent_id``/``user_id``, and the unsalted ``content_sha256`` in the log gave back a
4-digit PIN in 7 ms. Audit listing now holds to the token's user scope, and every content
hash in the log is an HMAC under a per-deployment key kept outside the database.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from memorywire.governance.chain import canonical_json

from .conftest import Gov

pytestmark = pytest.mark.anyio


async def test_a_user_scoped_reviewer_sees_only_its_users_entries(rest: Any, gov: Gov) -> None:
    for user in ("alice", "bob"):
        out = await rest.call("remember", {"agent_id": "A", "user_id": user, "type": "semantic",
                                           "content": f"{user}'s note"}, gov.agent_a)
        assert out.ok, out.body
    scoped, _ = gov.tokens.create(role="reviewer", agent_ids=["A"], user_ids=["alice"],
                                  name="alice-reviewer")
    listed = await rest.call("audit.list", {}, scoped)
    assert listed.ok, listed.body
    users = {e["details"].get("user_id") for e in listed.body["entries"]}
    assert users == {"alice"}, listed.body
    named = await rest.call("audit.list", {"agent_id": "A"}, scoped)
    assert not named.ok or {e["details"].get("user_id") for e in named.body["entries"]} == {
        "alice"}


async def test_a_short_secret_cannot_be_recovered_from_the_log(rest: Any, gov: Gov) -> None:
    out = await rest.call("remember", {"agent_id": "A", "type": "semantic", "content": "4821"},
                          gov.agent_a)
    assert out.ok
    entries = (await rest.call("audit.list", {"agent_id": "A"}, gov.admin)).body["entries"]
    written = json.dumps(entries)
    plain = {hashlib.sha256(canonical_json(f"{pin:04d}").encode()).hexdigest(): pin
             for pin in range(10_000)}
    plain |= {hashlib.sha256(f"{pin:04d}".encode()).hexdigest(): pin for pin in range(10_000)}
    assert not [pin for h, pin in plain.items() if h in written]
    assert all("hmac_key" in e["details"] for e in entries if "content_hmac" in e["details"])
    assert any("content_hmac" in e["details"] for e in entries)
