"""Finding 1: a poisoned approval must not brick every tenant.

A staged remember whose commit fails (an id that already holds other content, ``expires_at``
= 2^63, a lone surrogate in metadata) used to stay ``committing`` forever, could no longer be
rejected, and after a restart the lazy recovery failed before every operation of every tenant
while health said ok. Now: what a commit would refuse is refused at staging; an item whose
commit still fails becomes ``failed`` with the error, is rejectable, and blocks nothing;
recovery handles each item alone and health says ``degraded`` with the reason.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

from memorywire.errors import Conflict
from memorywire.governance.actor import acting_as
from memorywire.server.ui import review_app
from memorywire.wire.models import RememberRequest

from .conftest import TRANSPORTS, Gov, open_governed

pytestmark = pytest.mark.anyio

POISON: list[tuple[str, dict[str, Any]]] = [
    ("expires_at_2_63", {"expires_at": 2**63}),
    ("lone_surrogate_in_metadata", {"metadata": {"note": "\ud800"}}),
    ("lone_surrogate_in_metadata_key", {"metadata": {"k\udfff": "v"}}),
]


async def _others_still_work(t: Any, g: Gov) -> None:
    """Every tenant can still write and read."""
    for token, agent in ((g.agent_a, "A"), (g.agent_b, "B")):
        w = await t.call("remember", {"agent_id": agent, "type": "semantic",
                                      "content": f"{agent} still writes"}, token)
        assert w.ok, w.body
        r = await t.call("recall", {"agent_id": agent, "query": "still writes"}, token)
        assert r.ok and [h["id"] for h in r.body["results"]] == [w.body["id"]], r.body


@pytest.mark.parametrize(("name", "extra"), POISON, ids=[p[0] for p in POISON])
async def test_a_request_no_store_could_commit_is_refused_at_staging(
    transport: Any, gov: Gov, name: str, extra: dict[str, Any]
) -> None:
    if transport.name == "mcp" and "surrogate" in name:
        pytest.skip("the MCP client cannot encode a lone surrogate, so it cannot send one")
    doc = {"agent_id": "A", "type": "semantic", "content": "poison", "approval_required": True,
           **extra}
    out = await transport.call("remember", doc, gov.agent_a)
    if out.ok:  # what staging let through, a reviewer may approve without poisoning anything
        item_id = out.body["id"]
        await gov.store.approve(item_id, "rv", None)
        assert gov.store.list_pending(status="approved")[0]["id"] == item_id
    else:
        assert out.code == "invalid_request", out.body
    assert gov.store.list_pending(status="committing") == []
    await _others_still_work(transport, gov)
    assert (await gov.store.health()).status == "ok"


@pytest.mark.parametrize("transport", TRANSPORTS[:2], indirect=True)
async def test_an_approved_commit_the_store_refuses_becomes_failed_and_rejectable(
    transport: Any, gov: Gov
) -> None:
    staged = await transport.call(
        "remember",
        {"agent_id": "A", "type": "semantic", "content": "the staged text", "id": "mem-1",
         "approval_required": True},
        gov.agent_a,
    )
    assert staged.ok, staged.body
    # Another text lands under the same id behind governance's back (another server, a
    # restore): the commit can no longer succeed.
    await gov.store.inner.remember(
        RememberRequest(agent_id="A", type="semantic", content="other text", id="mem-1")
    )
    approved = await transport.call("approvals.approve", {"id": "mem-1"}, gov.reviewer)
    assert not approved.ok and approved.code == "conflict", approved.body
    assert "failed" in approved.body["message"]
    shown = await transport.call("approvals.get", {"id": "mem-1"}, gov.reviewer)
    assert shown.ok and shown.body["commit_state"] == "failed"
    assert shown.body["result"]["error"] == "conflict"
    health = await gov.store.health()
    assert health.status == "degraded"
    assert "could not be committed" in " ".join(health.details["governance"]["reasons"])
    await _others_still_work(transport, gov)
    rejected = await transport.call("approvals.reject", {"id": "mem-1", "reason": "bad"},
                                    gov.reviewer)
    assert rejected.ok and rejected.body["status"] == "rejected", rejected.body
    assert (await gov.store.health()).status == "ok"


async def test_recovery_after_restart_handles_each_item_alone(gov: Gov) -> None:
    g = gov.store
    with acting_as("a"):
        bad = await g.remember(RememberRequest(agent_id="A", type="semantic",
                                               content="will clash", id="clash",
                                               approval_required=True))
        good = await g.remember(RememberRequest(agent_id="B", type="semantic",
                                                content="fine text", approval_required=True))
    # Both approved, then the process dies before either commit (the approval is recorded).
    g.audit_log  # noqa: B018  (waits until the governance worker is idle)
    for item_id in (bad.id, good.id):
        g._queue.begin_commit(item_id, "rv", None, None, 1)
    await g.inner.remember(RememberRequest(agent_id="A", type="semantic", content="other",
                                           id="clash"))
    await g.aclose()

    restarted = open_governed(gov.path)
    try:
        with acting_as("b"):  # the first operation after the restart runs recovery
            w = await restarted.remember(RememberRequest(agent_id="B", type="semantic",
                                                         content="after restart"))
        assert w.pending_approval is None or w.pending_approval is False
        report = restarted.recovery_report
        assert report.committed == [good.id] and list(report.failed) == [bad.id]
        assert restarted.list_pending(status="failed")[0]["id"] == bad.id
        health = await restarted.health()
        assert health.status == "degraded"
        assert restarted.verify()["ok"]
    finally:
        await restarted.aclose()
    gov.store = open_governed(gov.path)  # the fixture closes what it holds


def test_a_failed_item_is_shown_and_rejectable_in_the_reviewer_ui(tmp_path: Path) -> None:
    g = open_governed(tmp_path)
    app = Starlette(routes=[Mount("/ui", app=review_app(g, {"tok": "rv"}.get,
                                                        secret_key="k" * 32))])
    with TestClient(app, follow_redirects=False) as c:
        async def poison() -> str:
            with acting_as("a"):
                r = await g.remember(RememberRequest(agent_id="A", type="semantic",
                                                     content="staged", id="p1",
                                                     approval_required=True))
            await g.inner.remember(RememberRequest(agent_id="A", type="semantic",
                                                   content="other", id="p1"))
            with pytest.raises(Conflict):
                await g.approve(r.id, "rv", None)
            return r.id

        item = c.portal.call(poison)
        csrf = re.search(r'name="csrf" value="([^"]+)"', c.get("/ui/login").text)
        assert csrf
        c.post("/ui/login", data={"token": "tok", "csrf": csrf.group(1)})
        listed = c.get("/ui/approvals?status=failed").text
        assert item in listed
        page = c.get(f"/ui/approvals/{item}").text
        assert "refused to commit" in page and 'value="reject"' in page
        assert 'value="approve"' not in page
        token = re.search(r'name="csrf" value="([^"]+)"', page)
        h = re.search(r'name="content_hash" value="([^"]+)"', page)
        assert token and h
        r = c.post(f"/ui/approvals/{item}/decide",
                   data={"action": "reject", "content_hash": h.group(1),
                         "csrf": token.group(1), "reason": "clash"})
        assert r.status_code == 303
        assert g.list_pending(status="rejected")[0]["id"] == item
        c.portal.call(g.aclose)
