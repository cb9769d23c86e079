"""The reviewer UI for people: deep links through sign-in, readable queue rows, highlighted
contradictions, the decided comparison kept, human dates and short hashes on the audit page."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from memorywire.governance import GovernedStore
from memorywire.server.ui.present import age, details, iso, short
from tests.integration.review_ui import A, csrf_of, governed, stage, ui_client

TOKENS = {"tok-reviewer": "reviewer"}


@pytest.fixture
def gov(tmp_path: Path) -> GovernedStore:
    return governed(tmp_path)


@pytest.fixture
def client(gov: GovernedStore) -> Iterator[TestClient]:
    with ui_client(gov, TOKENS) as c:
        yield c


def test_an_approval_link_survives_sign_in(client: TestClient, gov: GovernedStore) -> None:
    """Regression: following an approval_url while signed out landed on the queue."""
    staged = stage(client, gov, "Bob likes chess")
    r = client.get(f"/ui/approvals/{staged.id}")
    assert r.status_code == 303
    assert r.headers["location"] == f"/ui/login?next=/ui/approvals/{staged.id}"
    form = client.get(r.headers["location"]).text
    assert f'name="next" value="/ui/approvals/{staged.id}"' in form
    signed = client.post("/ui/login", data={"token": "tok-reviewer", "csrf": csrf_of(form),
                                            "next": f"/ui/approvals/{staged.id}"})
    assert signed.headers["location"] == f"/ui/approvals/{staged.id}"


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/x", "/elsewhere"])
def test_sign_in_never_redirects_outside_the_ui(client: TestClient, target: str) -> None:
    form = client.get("/ui/login").text
    r = client.post("/ui/login", data={"token": "tok-reviewer", "csrf": csrf_of(form),
                                       "next": target})
    assert r.headers["location"] == "/ui/approvals"


def test_queue_rows_show_agent_type_excerpt_and_age(client: TestClient, gov: GovernedStore) -> None:
    stage(client, gov, "The user is allergic to peanuts and carries an epinephrine pen")
    form = client.get("/ui/login").text
    client.post("/ui/login", data={"token": "tok-reviewer", "csrf": csrf_of(form)})
    queue = client.get("/ui/approvals").text
    row = queue[queue.index("<tbody>"):]
    assert "allergic to peanuts" in row and A in row and "semantic" in row
    assert "ago" in row and "<time datetime=" in row


def test_contradiction_is_highlighted_and_the_decided_comparison_is_kept(
    client: TestClient, gov: GovernedStore
) -> None:
    stage(client, gov, "Alice likes green tea", gated=False)
    staged = stage(client, gov, "Alice does not like green tea")
    form = client.get("/ui/login").text
    client.post("/ui/login", data={"token": "tok-reviewer", "csrf": csrf_of(form)})
    page = client.get(f"/ui/approvals/{staged.id}").text
    assert 'class="contradiction-banner"' in page and "card  contradiction" in page
    h = re.search(r'name="content_hash" value="([0-9a-f]{64})"', page)
    assert h
    ok = client.post(f"/ui/approvals/{staged.id}/decide",
                     data={"action": "approve", "content_hash": h.group(1),
                           "csrf": csrf_of(page)})
    assert ok.status_code == 303
    after = client.get(f"/ui/approvals/{staged.id}").text
    assert "as it stood when this was decided" in after
    assert "Alice does not like green tea" in after and "Alice likes green tea" in after


def test_audit_page_shows_iso_dates_and_short_hashes(
    client: TestClient, gov: GovernedStore
) -> None:
    stage(client, gov, "Dana moved to Porto", gated=False)
    form = client.get("/ui/login").text
    client.post("/ui/login", data={"token": "tok-reviewer", "csrf": csrf_of(form)})
    audit = client.get("/ui/audit").text
    body = audit[audit.index("<tbody>"):]
    assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", body)
    assert not re.search(r">\d{13}<", body)  # no epoch milliseconds
    full = re.search(r'<code title="([0-9a-f]{64})">([0-9a-f]{12})…</code>', body)
    assert full and full.group(1).startswith(full.group(2))


def test_presentation_helpers() -> None:
    assert iso(0) == "1970-01-01T00:00:00Z" and iso("x") == ""
    assert age(0, 90_000) == "1 min ago" and age(0, 5_000) == "just now"
    assert str(short("a" * 64)) == f'<code title="{"a" * 64}">{"a" * 12}…</code>'
    assert str(short("abc")) == "<code>abc</code>"
    assert "<script>" not in str(details({"x": "<script>", "h": "f" * 64}))
