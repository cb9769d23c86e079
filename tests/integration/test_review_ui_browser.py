"""The reviewer UI in a real headless Chromium against a real uvicorn server.

The TestClient tests (test_review_ui.py) prove the handlers; this one proves what only a
browser can: the CSP lets the stylesheet load, the forms submit the CSRF token they render,
the session cookie (SameSite=strict) survives the login redirect, and the Approve/Reject
buttons send their ``action``. Governance and the store run on the server's own event loop
(an anyio blocking portal), so the test stages and checks writes through the Python API on the
very objects the browser drives. We use the Debian ``chromium`` binary, never Playwright's
downloaded browsers.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn
from anyio.from_thread import BlockingPortal, start_blocking_portal
from playwright.sync_api import Page, expect, sync_playwright
from starlette.applications import Starlette
from starlette.routing import Mount

from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore, acting_as
from memorywire.server.ui import review_app
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import RecallRequest, RememberRequest, RememberResponse

CHROMIUM = Path("/usr/bin/chromium")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason=f"{CHROMIUM} is missing: run `apt-get install chromium` (scripts/ci-system-deps.sh)",
    ),
]

AGENT = "agent-1"
WRITER = "agent:writer"
TOKENS = {"tok-alice": "reviewer:alice"}
TIMEOUT_MS = 15_000


@dataclass
class Served:
    base: str
    gov: GovernedStore
    portal: BlockingPortal

    def stage(self, content: str, gated: bool = True) -> RememberResponse:
        async def run() -> RememberResponse:
            with acting_as(WRITER):
                return await self.gov.remember(
                    RememberRequest(
                        agent_id=AGENT, type="semantic", content=content, approval_required=gated
                    )
                )

        return self.portal.call(run)

    def recall_ids(self, query: str) -> list[str]:
        resp = self.portal.call(self.gov.recall, RecallRequest(agent_id=AGENT, query=query, k=20))
        return [h.id for h in resp.results]


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    out = Path(os.environ.get("MEMORYWIRE_ARTIFACTS") or tmp_path / "artifacts")
    out.mkdir(parents=True, exist_ok=True)
    print(f"review UI screenshots: {out}")
    return out


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with start_blocking_portal(backend="asyncio") as portal:
        gov = GovernedStore(
            SqliteStore(tmp_path / "store.db", embedder=HashingEmbedder()),
            tmp_path / "gov.db",
        )
        app = Starlette(routes=[Mount("/ui", app=review_app(gov, TOKENS.get, secret_key="k" * 32))])
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        server = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        )
        running = portal.start_task_soon(server.serve, [sock])
        deadline = time.monotonic() + 10
        while not server.started:
            assert not running.done(), running.exception()
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        try:
            yield Served(f"http://127.0.0.1:{port}", gov, portal)
        finally:
            server.should_exit = True
            running.result(timeout=10)
            sock.close()
            portal.call(gov.aclose)


def _login(page: Page, base: str, token: str) -> None:
    page.goto(f"{base}/ui/login")
    page.get_by_label("Reviewer token").fill(token)
    page.get_by_role("button", name="Sign in").click()


def test_reviewer_signs_in_approves_and_rejects_in_chromium(
    served: Served, artifacts: Path
) -> None:
    related = served.stage("Alice drinks green tea every morning", gated=False)
    keep = served.stage("Alice drinks green tea every day with honey")
    drop = served.stage("Carol is 120 years old and climbs mountains")
    assert keep.pending_approval and drop.pending_approval
    assert keep.id not in served.recall_ids("green tea honey")

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--headless=new", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.set_default_timeout(TIMEOUT_MS)
            css = []
            page.on(
                "response",
                lambda r: css.append(r.status) if r.url.endswith("/ui.css") else None,
            )

            # a bad token is refused and grants nothing
            _login(page, served.base, "not-a-token")
            expect(page.get_by_role("alert")).to_have_text("That token is not valid.")
            page.goto(f"{served.base}/ui/approvals")
            expect(page).to_have_url(f"{served.base}/ui/login")

            # the queue lists both staged writes, and only those
            _login(page, served.base, "tok-alice")
            expect(page).to_have_url(f"{served.base}/ui/approvals")
            expect(page.get_by_role("heading", name="Approval queue")).to_be_visible()
            rows = page.locator("tbody tr")
            expect(rows).to_have_count(2)
            expect(rows.filter(has_text=keep.id)).to_contain_text(WRITER)
            expect(rows.filter(has_text=drop.id)).to_contain_text("remember")
            expect(page.locator("tbody")).not_to_contain_text(related.id)
            assert css and css[-1] == 200, "stylesheet did not load under the CSP"
            # the stylesheet applied (a browser default table would have no padding)
            pad = page.locator("tbody td").first.evaluate("td => getComputedStyle(td).paddingLeft")
            assert pad != "0px", pad
            page.screenshot(path=str(artifacts / "queue.png"), full_page=True)

            # open one: its side-by-side diff shows the related memory now and the write after
            page.get_by_role("link", name=keep.id).click()
            expect(page).to_have_url(f"{served.base}/ui/approvals/{keep.id}")
            now = page.locator("section.side").filter(has_text="Now")
            after = page.locator("section.side").filter(has_text="After approval")
            expect(now).to_contain_text(related.id)
            expect(after.locator("article.card.added")).to_contain_text(
                "Alice drinks green tea every day with honey"
            )
            expect(after).to_contain_text(keep.id)
            page.screenshot(path=str(artifacts / "diff.png"), full_page=True)

            # approve through the rendered form (its hidden csrf + content_hash)
            page.get_by_label("Reason").fill("matches what Alice told us")
            page.get_by_role("button", name="Approve").click()
            expect(page).to_have_url(f"{served.base}/ui/approvals/{keep.id}")
            expect(page.locator("dl.facts")).to_contain_text(
                "approved by reviewer:alice: matches what Alice told us"
            )
            expect(page.get_by_role("button", name="Approve")).to_have_count(0)
            assert keep.id in served.recall_ids("green tea honey")

            # reject the other with a reason
            page.goto(f"{served.base}/ui/approvals")
            expect(page.locator("tbody tr")).to_have_count(1)
            page.get_by_role("link", name=drop.id).click()
            page.get_by_label("Reason").fill("implausible age")
            page.get_by_role("button", name="Reject").click()
            expect(page.locator("dl.facts")).to_contain_text(
                "rejected by reviewer:alice: implausible age"
            )
            page.goto(f"{served.base}/ui/approvals")
            expect(page.get_by_text("Nothing here.")).to_be_visible()
        finally:
            browser.close()

    assert drop.id not in served.recall_ids("Carol 120 years old mountains")
    assert served.portal.call(served.gov.get, AGENT, drop.id) is None
    assert [i["id"] for i in served.gov.list_pending(status="rejected")] == [drop.id]
    assert (artifacts / "queue.png").stat().st_size > 0
    assert (artifacts / "diff.png").stat().st_size > 0


def test_contradiction_choice_and_bulk_approve_in_chromium(
    served: Served, artifacts: Path
) -> None:
    old = served.stage("Alice drinks green tea every day", gated=False)
    new = served.stage("Alice does not drink green tea any more")
    bulk = [served.stage("Bob plays chess on Sundays"), served.stage("Bob lives in Oslo")]
    assert new.pending_approval and all(b.pending_approval for b in bulk)

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--headless=new", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.set_default_timeout(TIMEOUT_MS)
            # a bad token keeps the approval link; the good one then lands on it
            page.goto(f"{served.base}/ui/approvals/{new.id}")
            page.get_by_label("Reviewer token").fill("not-a-token")
            page.get_by_role("button", name="Sign in").click()
            expect(page.get_by_role("alert")).to_have_text("That token is not valid.")
            page.get_by_label("Reviewer token").fill("tok-alice")
            page.get_by_role("button", name="Sign in").click()
            expect(page).to_have_url(f"{served.base}/ui/approvals/{new.id}")

            # the contradiction is a choice, the old memory ticked for superseding
            expect(page.get_by_role("button", name="Keep both")).to_be_visible()
            expect(page.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
            expect(page.locator(f'input[name="supersede"][value="{old.id}"]')).to_be_checked()
            page.screenshot(path=str(artifacts / "contradiction.png"), full_page=True)
            page.get_by_role("button", name="Approve and supersede the old").click()
            expect(page.locator("dl.facts")).to_contain_text("approved by reviewer:alice")
            assert served.recall_ids("Alice green tea") == [new.id]

            # bulk: select every item the filter shows, approve them in one post
            page.goto(f"{served.base}/ui/approvals?agent_id={AGENT}")
            expect(page.locator("tbody tr")).to_have_count(2)
            page.get_by_role("link", name="Select all 2 shown").click()
            expect(page.locator('input[name="item"]:checked')).to_have_count(2)
            page.screenshot(path=str(artifacts / "bulk.png"), full_page=True)
            page.get_by_role("button", name="Approve selected").click()
            expect(page.get_by_role("status")).to_contain_text("Approved 2.")
            expect(page.get_by_text("Nothing here.")).to_be_visible()
        finally:
            browser.close()

    assert served.gov.list_pending() == []
    assert set(served.recall_ids("Bob chess Oslo")) >= {b.id for b in bulk}
