"""The reviewer UI's decisions beyond approve/reject (issue 34): a contradiction as an explicit
choice, source/type/operation on the page, ``?next=`` through a failed sign-in, bulk
decisions over a filtered queue, the audit download and the health page. Over a real
GovernedStore (in-memory inner store) in Starlette's TestClient."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from memorywire.core.records import ListQuery
from memorywire.governance import GovernedStore, acting_as
from memorywire.wire.models import ForgetRequest, RecallRequest, RememberRequest, RememberResponse
from tests.integration.review_ui import A, csrf_of, governed, stage, ui_client

TOKENS = {"tok-reviewer": "reviewer", "tok-writer": "writer"}
OLD = "Alice drinks green tea every day"
NEW = "Alice does not drink green tea any more"


@pytest.fixture
def gov(tmp_path: Path) -> GovernedStore:
    return governed(tmp_path)


@pytest.fixture
def client(gov: GovernedStore) -> Iterator[TestClient]:
    with ui_client(gov, TOKENS) as c:
        yield c


def _login(c: TestClient, token: str = "tok-reviewer") -> str:
    csrf = csrf_of(c.get("/ui/login").text)
    r = c.post("/ui/login", data={"token": token, "csrf": csrf})
    assert r.status_code == 303
    return csrf_of(c.get("/ui/approvals").text)


def _live(c: TestClient, gov: GovernedStore) -> set[str]:
    resp = c.portal.call(gov.recall, RecallRequest(agent_id=A, query="Alice green tea", k=20))
    return {h.id for h in resp.results}


def _hash(gov: GovernedStore, item_id: str) -> str:
    return next(i["content_hash"] for i in gov.list_pending(limit=500) if i["id"] == item_id)


def _contradiction(c: TestClient, gov: GovernedStore) -> tuple[RememberResponse, RememberResponse]:
    old = stage(c, gov, OLD, gated=False)
    new = stage(c, gov, NEW)
    assert new.pending_approval
    return old, new


def test_contradiction_is_an_explicit_choice(client: TestClient, gov: GovernedStore) -> None:
    old, new = _contradiction(client, gov)
    _login(client)
    page = client.get(f"/ui/approvals/{new.id}").text
    assert "Approve and supersede the old" in page and "Keep both" in page
    assert f'name="supersede" value="{old.id}" checked' in page
    assert 'value="approve"' not in page  # no plain approve that silently keeps both


def test_approve_and_supersede_closes_the_old_memory(client: TestClient,
                                                     gov: GovernedStore) -> None:
    old, new = _contradiction(client, gov)
    csrf = _login(client)
    url = f"/ui/approvals/{new.id}/decide"
    h = _hash(gov, new.id)
    # nothing ticked: refused, naming the field, and nothing decided
    r = client.post(url, data={"action": "supersede", "content_hash": h, "csrf": csrf})
    assert r.status_code == 400 and "supersede" in r.text
    # an id that is no live memory of this agent: refused before anything is recorded
    r = client.post(url, data={"action": "supersede", "supersede": "nope", "content_hash": h,
                               "csrf": csrf})
    assert r.status_code == 404 and "nope" in r.text
    assert gov.list_pending()[0]["id"] == new.id
    r = client.post(url, data={"action": "supersede", "supersede": old.id, "content_hash": h,
                               "csrf": csrf, "reason": "she stopped"})
    assert r.status_code == 303
    assert _live(client, gov) == {new.id}
    rec = client.portal.call(gov.get, A, old.id)
    assert rec is not None and new.id in json.dumps(rec.metadata)  # superseded_by the new one
    approved = [e for e in gov.audit_entries(memory_id=old.id) if e["action"] == "approved"]
    assert approved and approved[0]["details"]["supersedes"] == [old.id]


def test_keep_both_leaves_both_live(client: TestClient, gov: GovernedStore) -> None:
    old, new = _contradiction(client, gov)
    csrf = _login(client)
    r = client.post(f"/ui/approvals/{new.id}/decide",
                    data={"action": "keep_both", "content_hash": _hash(gov, new.id),
                          "csrf": csrf})
    assert r.status_code == 303
    assert _live(client, gov) == {old.id, new.id}


def test_reject_of_a_contradiction_changes_nothing(client: TestClient,
                                                    gov: GovernedStore) -> None:
    old, new = _contradiction(client, gov)
    csrf = _login(client)
    r = client.post(f"/ui/approvals/{new.id}/decide",
                    data={"action": "reject", "content_hash": _hash(gov, new.id), "csrf": csrf})
    assert r.status_code == 303
    assert _live(client, gov) == {old.id}


def test_source_type_and_real_operation_are_on_the_page(client: TestClient,
                                                        gov: GovernedStore) -> None:
    async def write() -> tuple[str, str]:
        with acting_as("writer"):
            kept = await gov.remember(RememberRequest(
                agent_id=A, type="episodic", content="Bob read about chess openings",
                source="web_page", approval_required=True))
            await gov.remember(RememberRequest(agent_id=A, type="semantic",
                                               content="Bob likes tea"))
            live = [r.id for r in await gov.list(_all())]
            erase = await gov.stage(ForgetRequest(agent_id=A, ids=live, hard_delete=True,
                                                  reason="erase"))
            assert erase.pending_approval and erase.approval_url
            return kept.id, erase.approval_url.rsplit("/", 1)[1]

    kept_id, erase_id = client.portal.call(write)
    _login(client)
    listing = client.get("/ui/approvals").text
    row = next(r for r in listing.split("<tr>") if kept_id in r)
    assert "web_page" in row and "episodic" in row
    detail = client.get(f"/ui/approvals/{kept_id}").text
    visible = detail.split("<details>", 1)[0]  # not only in the collapsed request panel
    assert 'class="source">web_page' in visible and "type: episodic" in visible
    assert "source: web_page" in visible
    erase = client.get(f"/ui/approvals/{erase_id}").text
    assert re.search(r"<h1>erase <span", erase) and "cannot be recovered" in erase
    only_erase = client.get("/ui/approvals?operation=erase").text
    assert erase_id in only_erase and kept_id not in only_erase
    assert erase_id not in client.get("/ui/approvals?operation=forget").text
    assert client.get("/ui/approvals?operation=bogus").status_code == 400


def _all() -> ListQuery:
    return ListQuery(agent_id=A)


def test_next_survives_a_failed_sign_in(client: TestClient, gov: GovernedStore) -> None:
    staged = stage(client, gov, "Carol likes jazz")
    r = client.get(f"/ui/approvals/{staged.id}")
    assert r.headers["location"] == f"/ui/login?next=/ui/approvals/{staged.id}"
    form = client.get(r.headers["location"]).text
    csrf = csrf_of(form)
    bad = client.post("/ui/login", data={"token": "wrong", "csrf": csrf,
                                         "next": f"/ui/approvals/{staged.id}"})
    assert bad.status_code == 401
    assert f'name="next" value="/ui/approvals/{staged.id}"' in bad.text
    good = client.post("/ui/login", data={"token": "tok-reviewer", "csrf": csrf_of(bad.text),
                                          "next": f"/ui/approvals/{staged.id}"})
    assert good.status_code == 303 and good.headers["location"] == f"/ui/approvals/{staged.id}"


def test_bulk_decisions_over_a_filtered_queue(client: TestClient, gov: GovernedStore) -> None:
    a = stage(client, gov, "Dan plays the cello")
    b = stage(client, gov, "Dan lives in Lyon")

    async def other() -> str:
        with acting_as("writer"):
            r = await gov.remember(RememberRequest(agent_id="agent-2", type="semantic",
                                                   content="Eve swims", approval_required=True))
            return r.id

    elsewhere = client.portal.call(other)
    csrf = _login(client)
    page = client.get(f"/ui/approvals?agent_id={A}&select=all").text
    picked = re.findall(r'name="item" value="([^"]+)" aria-label="[^"]+" checked', page)
    assert sorted(v.split(":")[0] for v in picked) == sorted([a.id, b.id])
    assert elsewhere not in page
    assert client.post("/ui/approvals/bulk", data={"csrf": "x", "action": "approve",
                                                   "item": picked}).status_code == 403
    assert len(gov.list_pending()) == 3
    stale = f"{b.id}:{'0' * 64}"
    r = client.post("/ui/approvals/bulk", data={
        "csrf": csrf, "action": "approve", "item": [picked[0] if a.id in picked[0]
                                                    else picked[1], stale],
        "back": f"agent_id={A}&select=all"})
    assert r.status_code == 303 and r.headers["location"] == f"/ui/approvals?agent_id={A}"
    assert client.portal.call(gov.get, A, a.id) is not None
    assert {i["id"] for i in gov.list_pending()} == {b.id, elsewhere}
    after = client.get(r.headers["location"]).text
    assert "Approved 1." in after and "stale content hash" in after
    r = client.post("/ui/approvals/bulk", data={
        "csrf": csrf, "action": "reject", "item": [f"{b.id}:{_hash(gov, b.id)}"],
        "reason": "spam"})
    assert r.status_code == 303
    assert [i["id"] for i in gov.list_pending(status="rejected")] == [b.id]
    assert [i["id"] for i in gov.list_pending()] == [elsewhere]
    # the writer cannot bulk-approve its own writes: reported, not decided
    client.post("/ui/logout", data={"csrf": csrf})
    csrf = _login(client, "tok-writer")
    r = client.post("/ui/approvals/bulk", data={
        "csrf": csrf, "action": "approve",
        "item": [f"{elsewhere}:{_hash(gov, elsewhere)}"]})
    assert "cannot approve its own write" in client.get("/ui/approvals").text
    assert [i["id"] for i in gov.list_pending()] == [elsewhere]


def test_audit_export_csv_and_jsonl(client: TestClient, gov: GovernedStore) -> None:
    staged = stage(client, gov, "Fay collects stamps")
    stage(client, gov, "Gus writes poems", gated=False)
    _login(client)
    entries = gov.audit_entries(limit=10_000)
    assert client.get("/ui/audit").text.count("/ui/audit/export?format=") == 2
    r = client.get("/ui/audit/export?format=jsonl")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    assert "attachment" in r.headers["content-disposition"]
    lines = [json.loads(x) for x in r.text.splitlines()]
    assert [e["hash"] for e in lines] == [e["hash"] for e in entries]
    assert lines[0]["prev_hash"] and lines[-1]["details"] == entries[-1]["details"]
    r = client.get("/ui/audit/export?format=csv")
    assert r.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert [int(x["seq"]) for x in rows] == [e["seq"] for e in entries]
    assert json.loads(rows[0]["memory_ids"]) == entries[0]["memory_ids"]
    one = client.get(f"/ui/audit/export?format=jsonl&memory_id={staged.id}").text.splitlines()
    assert one and all(staged.id in json.loads(x)["memory_ids"] for x in one)
    assert client.get("/ui/audit/export?format=xml").status_code == 400
    client.cookies.clear()
    assert client.get("/ui/audit/export?format=csv").status_code == 303  # sign-in first


def test_health_page_facts(client: TestClient, gov: GovernedStore) -> None:
    stage(client, gov, "Hal likes rain", gated=False)
    stage(client, gov, "Ida likes snow", gated=False)
    stage(client, gov, "Jo likes fog")
    _login(client)
    page = client.get("/ui/health")
    assert page.status_code == 200
    text = page.text
    assert re.search(r'class="queue-depth">1 pending · 0 committing · 0 failed', text)
    assert f'class="store">{gov.name}<' in text
    assert re.search(r'class="memories">2<', text)
    assert re.search(r"<td>semantic</td><td>2</td>", text)
    assert "none yet" in text  # no checkpoint
    assert "signs no deletion receipts" in text
    assert "over a year" in text
