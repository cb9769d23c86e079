"""The reviewer UI over a real GovernedStore, driven through Starlette's TestClient."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from memorywire.governance import GovernedStore
from tests.integration.review_ui import A, csrf_of, governed, stage, ui_client

TOKENS = {"tok-reviewer": "reviewer", "tok-writer": "writer"}


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
    assert r.status_code == 303 and r.headers["location"] == "/ui/approvals"
    return csrf_of(c.get("/ui/approvals").text)


def test_login_required_and_bad_tokens_refused(client: TestClient) -> None:
    r = client.get("/ui/approvals")
    assert r.status_code == 303 and r.headers["location"] == "/ui/login"
    page = client.get("/ui/login")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    csrf = csrf_of(page.text)
    assert client.post("/ui/login", data={"token": "nope", "csrf": csrf}).status_code == 401
    assert client.post("/ui/login", data={"token": "tok-reviewer"}).status_code == 403
    assert client.get("/ui/approvals").status_code == 303
    _login(client)
    assert client.get("/ui/approvals").status_code == 200
    css = client.get("/ui/ui.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")


def test_pending_list_filters_and_side_by_side_diff(client: TestClient, gov: GovernedStore) -> None:
    old = stage(client, gov, "Alice drinks green tea every day", gated=False)
    staged = stage(client, gov, "Alice drinks green tea every day", gated=True)
    _login(client)
    listing = client.get("/ui/approvals").text
    assert staged.id in listing and old.id not in listing
    assert staged.id not in client.get("/ui/approvals?operation=forget").text
    assert staged.id not in client.get("/ui/approvals?agent_id=other").text
    detail = client.get(f"/ui/approvals/{staged.id}")
    assert detail.status_code == 200
    now, after = detail.text.split("After approval", 1)
    assert old.id in now and "duplicate" in now
    assert staged.id in after and "Alice drinks green tea" in after
    assert 'value="approve"' in detail.text
    assert "https://" not in detail.text and "cdn" not in detail.text.lower()


def test_approve_needs_csrf_then_commits(client: TestClient, gov: GovernedStore) -> None:
    staged = stage(client, gov, "Bob likes chess")
    csrf = _login(client)
    detail = client.get(f"/ui/approvals/{staged.id}").text
    h = re.search(r'name="content_hash" value="([0-9a-f]{64})"', detail)
    assert h
    url = f"/ui/approvals/{staged.id}/decide"
    bad = client.post(url, data={"action": "approve", "content_hash": h.group(1), "csrf": "x"})
    assert bad.status_code == 403
    assert gov.list_pending()[0]["id"] == staged.id
    stale = client.post(url, data={"action": "approve", "content_hash": "0" * 64, "csrf": csrf})
    assert stale.status_code == 409
    ok = client.post(
        url, data={"action": "approve", "content_hash": h.group(1), "csrf": csrf, "reason": "fine"}
    )
    assert ok.status_code == 303
    assert gov.list_pending() == []
    assert client.portal.call(gov.get, A, staged.id) is not None
    page = client.get(f"/ui/approvals/{staged.id}").text
    assert "approved by reviewer: fine" in page
    audit = client.get(f"/ui/audit?memory_id={staged.id}").text
    assert "Chain verified" in audit and "approved" in audit and "reviewer" in audit


def test_reject(client: TestClient, gov: GovernedStore) -> None:
    staged = stage(client, gov, "Carol is 120 years old")
    csrf = _login(client)
    h = gov.list_pending()[0]["content_hash"]
    r = client.post(
        f"/ui/approvals/{staged.id}/decide",
        data={"action": "reject", "content_hash": h, "csrf": csrf, "reason": "implausible"},
    )
    assert r.status_code == 303
    assert client.portal.call(gov.get, A, staged.id) is None
    assert gov.list_pending(status="rejected")[0]["id"] == staged.id
    assert "rejected by reviewer: implausible" in client.get(f"/ui/approvals/{staged.id}").text


def test_self_approval_refused(client: TestClient, gov: GovernedStore) -> None:
    staged = stage(client, gov, "Dan wrote this himself")
    csrf = _login(client, "tok-writer")
    detail = client.get(f"/ui/approvals/{staged.id}").text
    assert "another reviewer must decide" in detail and 'value="approve"' not in detail
    h = gov.list_pending()[0]["content_hash"]
    r = client.post(
        f"/ui/approvals/{staged.id}/decide",
        data={"action": "approve", "content_hash": h, "csrf": csrf},
    )
    assert r.status_code == 403 and "cannot approve its own write" in r.text
    assert gov.list_pending()[0]["id"] == staged.id


def test_logout_and_health(client: TestClient, gov: GovernedStore) -> None:
    csrf = _login(client)
    health = client.get("/ui/health")
    assert health.status_code == 200 and "audit_chain_ok" in health.text
    assert client.post("/ui/logout", data={"csrf": "wrong"}).status_code == 403
    assert client.post("/ui/logout", data={"csrf": csrf}).status_code == 303
    assert client.get("/ui/approvals").status_code == 303
