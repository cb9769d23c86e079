"""The review of the store itself and the learned approval patterns, in a real headless
Chromium against a real uvicorn server (the rig of test_review_ui_browser.py: Debian
``chromium`` through Playwright, governance on the server's own event loop).

Screenshots (``review-store.png``, ``review-patterns.png``) land in ``$MEMORYWIRE_ARTIFACTS``
(else a temporary folder); docs/img holds the copies the README shows.
"""

from __future__ import annotations

import time
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

from memorywire.core.timeline import validity_of
from memorywire.governance import acting_as
from memorywire.wire.models import RememberRequest, RememberResponse
from tests.integration import test_review_ui_browser as rig
from tests.integration.test_review_ui_browser import AGENT, CHROMIUM, TIMEOUT_MS, Served, _login

pytestmark = rig.pytestmark
# the browser rig's fixtures: a real uvicorn server over a governed SQLite store, and where
# screenshots go
served = rig.served
artifacts = rig.artifacts

POLICY = {"rules": [{"name": "web waits", "match": {"source": "web_page"},
                     "decision": "review", "reason": "content from the open web"}]}


def _write(s: Served, content: str, source: str | None = None) -> RememberResponse:
    time.sleep(0.005)  # which of two memories is newer decides what supersedes what

    async def run() -> RememberResponse:
        with acting_as("agent:writer"):
            return await s.gov.remember(RememberRequest(agent_id=AGENT, type="semantic",
                                                        content=content, source=source))
    return s.portal.call(run)


def _browser(pw):  # type: ignore[no-untyped-def]
    return pw.chromium.launch(
        executable_path=str(CHROMIUM),
        args=["--no-sandbox", "--headless=new", "--disable-gpu", "--disable-dev-shm-usage"],
    )


def test_store_review_decided_in_bulk_in_chromium(served: Served, artifacts: Path) -> None:
    berlin = _write(served, "Alice lives in Berlin", "user_message")
    paris = _write(served, "Alice lives in Paris now", "user_message")
    tea = _write(served, "Bob drinks green tea.")
    copy = _write(served, "bob drinks green tea!")
    assert copy.near_duplicates and not copy.pending_approval

    with sync_playwright() as pw:
        browser = _browser(pw)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.set_default_timeout(TIMEOUT_MS)
            _login(page, served.base, "tok-alice")
            page.get_by_role("link", name="Store review").click()
            expect(page.get_by_role("heading", name="Store review")).to_be_visible()
            candidates = page.locator("fieldset.candidate")
            expect(candidates).to_have_count(2)
            expect(candidates.filter(has_text="contradiction")).to_contain_text(
                "Alice lives in Berlin")
            expect(candidates.filter(has_text="duplicate")).to_contain_text(
                "bob drinks green tea!")
            page.get_by_role("link", name="Select all 2 shown").click()
            expect(page.locator('input[name="pick"]:checked')).to_have_count(2)
            page.screenshot(path=str(artifacts / "review-store.png"), full_page=True)
            page.get_by_role("button", name="Apply selected").click()
            expect(page.get_by_role("status")).to_contain_text("Applied 2.")
            expect(page.get_by_text("Nothing to review")).to_be_visible()
        finally:
            browser.close()

    old = served.portal.call(served.gov.get, AGENT, berlin.id)
    assert old is not None
    assert validity_of(old.metadata, old.created_at).superseded_by == paris.id
    assert served.portal.call(served.gov.get, AGENT, copy.id) is None
    assert served.portal.call(served.gov.get, AGENT, tea.id) is not None
    actors = {(e["actor"], e["action"]) for e in served.gov.audit_entries(limit=1000)}
    assert {("reviewer:alice", "merge"), ("reviewer:alice", "update")} <= actors


def test_learned_pattern_offered_and_accepted_in_chromium(served: Served,
                                                         artifacts: Path) -> None:
    served.gov.set_policies(POLICY)
    staged = [_write(served, f"Fact {n} read on a travel page", "web_page") for n in range(5)]
    assert all(s.pending_approval for s in staged)

    with sync_playwright() as pw:
        browser = _browser(pw)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.set_default_timeout(TIMEOUT_MS)
            _login(page, served.base, "tok-alice")
            page.get_by_role("link", name="Patterns").click()
            expect(page.get_by_text("No pattern yet.")).to_be_visible()

            # five approvals in a row, in one bulk decision
            page.get_by_role("link", name="Queue").click()
            page.get_by_role("link", name="Select all 5 shown").click()
            page.get_by_role("button", name="Approve selected").click()
            expect(page.get_by_role("status")).to_contain_text("Approved 5.")

            page.get_by_role("link", name="Patterns").click()
            section = page.locator("section.pattern")
            expect(section).to_have_count(1)
            expect(section).to_contain_text("5 approvals in a row")
            expect(section.locator("pre.policy-diff .add").first).to_contain_text("{")
            expect(section.locator("pre.policy-diff")).to_contain_text(
                f'"name": "learned: {AGENT} web_page semantic"')
            assert [r.name for r in served.gov.policies.rules] == ["web waits"]  # offered only
            page.screenshot(path=str(artifacts / "review-patterns.png"), full_page=True)
            page.get_by_role("button", name="Accept this rule").click()
            expect(page.get_by_role("status")).to_contain_text(
                f"Rule 'learned: {AGENT} web_page semantic' added")
            expect(page.get_by_text("No pattern yet.")).to_be_visible()
        finally:
            browser.close()

    assert [r.name for r in served.gov.policies.rules] == [
        f"learned: {AGENT} web_page semantic", "web waits"]
    assert not _write(served, "Fact 6 read on a travel page", "web_page").pending_approval
    [entry] = [e for e in served.gov.audit_entries(limit=1000)
               if e["action"] == "policy_changed" and e["actor"] == "reviewer:alice"]
    assert entry["details"]["learned_from"]["approvals"] == 5
