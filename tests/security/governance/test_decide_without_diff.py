"""Issue 20: approving or rejecting a staged write checked the caller's scope by building the
item's full review, whose diff is a recall of the inner store (a model call and a search)
per decision. The decision needs the item, not its neighbours; the review a reviewer reads
(``approvals.get``) still carries the diff.
"""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.store.sqlite import SqliteStore

from .conftest import Gov

pytestmark = pytest.mark.anyio


@pytest.fixture
def inner_recalls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = SqliteStore.recall

    async def counting(self: SqliteStore, req: Any) -> Any:
        calls.append(req.query)
        return await real(self, req)

    monkeypatch.setattr(SqliteStore, "recall", counting)
    return calls


@pytest.mark.parametrize("decision", ["approvals.approve", "approvals.reject"])
async def test_a_decision_does_not_recall_the_inner_store(
    rest: Any, gov: Gov, inner_recalls: list[str], decision: str
) -> None:
    first = {"agent_id": "A", "type": "semantic", "content": "the office is in Oslo"}
    assert (await rest.call("remember", first, gov.agent_a)).ok
    staged = await rest.call("remember", {**first, "content": "the office is in Bergen",
                                          "approval_required": True}, gov.agent_a)
    assert staged.ok and staged.body["pending_approval"] is True, staged.body
    item = staged.body["id"]

    shown = await rest.call("approvals.get", {"id": item}, gov.reviewer)
    assert shown.ok and inner_recalls, "the review a reviewer reads still computes its diff"
    inner_recalls.clear()

    done = await rest.call(decision, {"id": item, "reason": "checked"}, gov.reviewer)
    assert done.ok, done.body
    assert inner_recalls == []
    # scope is still checked first: another tenant's agent token sees "not found"
    again = await rest.call(decision, {"id": item}, gov.agent_b)
    assert (again.code, again.status) == ("not_found", 404)
