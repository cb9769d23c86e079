"""Finding 8: unauthenticated ``/v0/health`` recomputed the whole audit chain on the event
loop (1.5 s at 105k entries), so 4 anonymous clients stalled authenticated recalls; health
now reads cached state only (O(1)), and the chain is verified only on the authenticated admin
path, incrementally from where it got to.
"""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.governance.audit import AuditLog
from memorywire.governance.chain import AuditEntry, Checkpoint, VerifyReport
from memorywire.wire.versions import versions_doc

from .conftest import Gov

pytestmark = pytest.mark.anyio


async def test_health_never_walks_the_chain(
    rest: Any, gov: Gov, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(5):
        assert (await rest.call("remember", {"agent_id": "A", "type": "semantic",
                                             "content": f"fact {i}"}, gov.agent_a)).ok
    walked: list[str] = []
    real_entries = AuditLog.entries

    def spy(self: AuditLog, **kw: Any) -> list[AuditEntry]:
        walked.append("entries")
        return real_entries(self, **kw)

    def no_verify(self: AuditLog, checkpoints: list[Checkpoint] | None = None,
                  trusted_keys: list[str] | None = None) -> VerifyReport:
        walked.append("verify")
        raise AssertionError("health verified the chain")

    monkeypatch.setattr(AuditLog, "entries", spy)
    monkeypatch.setattr(AuditLog, "verify", no_verify)
    anon = await rest.call("health", {}, None)
    # The wire versions are public (a client checks them before calling); nothing else is.
    assert anon.ok and anon.body == {"status": "ok", "store": anon.body["store"],
                                     "wire_version": versions_doc()}
    admin = await rest.call("health", {}, gov.admin)
    assert admin.ok and "governance" in admin.body["details"]
    assert walked == []


async def test_verification_is_incremental_and_admin_only(rest: Any, gov: Gov) -> None:
    for i in range(3):
        assert (await rest.call("remember", {"agent_id": "A", "type": "semantic",
                                             "content": f"fact {i}"}, gov.agent_a)).ok
    refused = await rest.call("audit.verify", {}, gov.reviewer)
    assert not refused.ok and refused.code == "forbidden"
    first = await gov.store.averify_incremental()
    assert first["ok"] and first["checked"] == first["head_seq"] > 0
    assert (await rest.call("remember", {"agent_id": "A", "type": "semantic",
                                         "content": "one more"}, gov.agent_a)).ok
    second = await gov.store.averify_incremental()
    assert second["ok"] and second["checked"] == second["head_seq"] - first["head_seq"]
    health = await gov.store.health()
    assert health.details["governance"]["audit_verified_seq"] == second["verified_seq"]
