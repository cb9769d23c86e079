"""The reviewer UI's review of the store itself, over a real GovernedStore in TestClient:
near-duplicates and contradictions already stored are proposed, decided in bulk, and carried
out through governance as the reviewer (audited; staged where the policy gates them)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from memorywire.core.clock import FakeClock
from memorywire.core.timeline import validity_of
from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore, acting_as
from memorywire.store.memory import InMemoryStore
from memorywire.wire.models import RememberRequest, RememberResponse
from tests.integration.review_ui import A, csrf_of, ui_client

TOKENS = {"tok-reviewer": "reviewer"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def gov(tmp_path: Path, clock: FakeClock) -> GovernedStore:
    return GovernedStore(InMemoryStore(embedder=HashingEmbedder(), clock=clock),
                         tmp_path / "gov.db", clock=clock)


@pytest.fixture
def client(gov: GovernedStore) -> Iterator[TestClient]:
    with ui_client(gov, TOKENS) as c:
        yield c


def _write(c: TestClient, gov: GovernedStore, clock: FakeClock,
           content: str) -> RememberResponse:
    """Remember ``content`` a minute after the last write (which is newer matters)."""
    clock.advance(60_000)

    async def run() -> RememberResponse:
        with acting_as("writer"):
            return await gov.remember(RememberRequest(agent_id=A, type="semantic",
                                                      content=content))
    return c.portal.call(run)


def _login(c: TestClient) -> None:
    csrf = csrf_of(c.get("/ui/login").text)
    assert c.post("/ui/login", data={"token": "tok-reviewer", "csrf": csrf}).status_code == 303


def _candidates(html: str) -> dict[str, str]:
    """key -> kind of each candidate on the page."""
    return {m.group(2): m.group(1) for m in re.finditer(
        r'<fieldset class="candidate (\w+)">\s*<legend><label><input type="checkbox" '
        r'name="pick" value="(\w+)"', html)}


def _stored(c: TestClient, gov: GovernedStore,
            clock: FakeClock) -> tuple[RememberResponse, ...]:
    berlin = _write(c, gov, clock, "Alice lives in Berlin")
    paris = _write(c, gov, clock, "Alice lives in Paris now")
    tea = _write(c, gov, clock, "Bob drinks green tea.")
    copy = _write(c, gov, clock, "bob drinks green tea!")
    assert copy.id != tea.id and copy.near_duplicates
    return berlin, paris, tea, copy


def test_store_review_proposes_and_applies_in_bulk(client: TestClient, gov: GovernedStore,
                                                   clock: FakeClock) -> None:
    berlin, paris, tea, copy = _stored(client, gov, clock)
    _login(client)
    page = client.get("/ui/store-review")
    assert page.status_code == 200
    found = _candidates(page.text)
    assert sorted(found.values()) == ["contradiction", "duplicate"]
    assert "Alice lives in Berlin" in page.text and "bob drinks green tea!" in page.text
    dup = next(k for k, kind in found.items() if kind == "duplicate")
    con = next(k for k, kind in found.items() if kind == "contradiction")
    r = client.post("/ui/store-review/decide", data={
        "csrf": csrf_of(page.text), "pick": [dup, con], f"action-{dup}": "merge",
        f"action-{con}": "supersede", "back": ""})
    assert r.status_code == 303 and r.headers["location"] == "/ui/store-review"
    after = client.get("/ui/store-review")
    assert "Applied 2." in after.text and "Nothing to review" in after.text

    old = client.portal.call(gov.get, A, berlin.id)
    assert old is not None
    assert validity_of(old.metadata, old.created_at).superseded_by == paris.id
    assert client.portal.call(gov.get, A, copy.id) is None  # merged into the first
    assert client.portal.call(gov.get, A, tea.id) is not None
    # each decision went through governance, as the reviewer
    mine = {e["action"] for e in gov.audit_entries(limit=1000) if e["actor"] == "reviewer"}
    assert {"merge", "update"} <= mine, mine


def test_store_review_forget_waits_for_approval_where_policy_gates_it(
        client: TestClient, gov: GovernedStore, clock: FakeClock) -> None:
    _berlin, _paris, tea, copy = _stored(client, gov, clock)
    gov.set_policies({"rules": [{"name": "forgets wait", "match": {"operation": "forget"},
                                 "decision": "review"}]})
    _login(client)
    page = client.get("/ui/store-review")
    dup = next(k for k, kind in _candidates(page.text).items() if kind == "duplicate")
    client.post("/ui/store-review/decide", data={
        "csrf": csrf_of(page.text), "pick": [dup], f"action-{dup}": "forget"})
    shown = client.get("/ui/store-review").text
    assert "Staged for approval: 1." in shown and "forget of " + tea.id in shown
    assert client.portal.call(gov.get, A, copy.id) is not None  # nothing forgotten yet
    [item] = gov.list_pending(operation="forget")
    assert item["request"]["ids"] == [copy.id] and item["requested_by"] == "reviewer"


def test_store_review_refuses_what_it_cannot_do(client: TestClient, gov: GovernedStore,
                                                clock: FakeClock) -> None:
    _stored(client, gov, clock)
    _login(client)
    page = client.get("/ui/store-review")
    csrf = csrf_of(page.text)
    found = _candidates(page.text)
    con = next(k for k, kind in found.items() if kind == "contradiction")
    assert client.post("/ui/store-review/decide", data={"pick": [con]}).status_code == 403
    assert client.post("/ui/store-review/decide", data={"csrf": csrf}).status_code == 400
    client.post("/ui/store-review/decide", data={
        "csrf": csrf, "pick": [con, "0123456789abcdef"], f"action-{con}": "merge"})
    shown = client.get("/ui/store-review").text
    assert "Applied 0." in shown
    assert f"{con}: action must be supersede or forget" in shown
    assert "0123456789abcdef: no longer proposed" in shown
    assert _candidates(shown) == found  # nothing changed
