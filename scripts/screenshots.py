"""Screenshots of the reviewer UI for docs/img/, taken in headless Chromium.

    .venv/bin/python scripts/screenshots.py [--out docs/img]

Stages a few writes (one contradicting a stored memory) into a temporary governed store,
serves the UI on a loopback port, signs in as a reviewer and saves: the queue, an approval
with its contradiction highlighted, the same approval after approving (the decided
comparison kept), the audit page, and the queue on a phone-sized screen. Uses the Debian
``/usr/bin/chromium`` through Playwright (never ``playwright install``).
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import uvicorn
from anyio.from_thread import start_blocking_portal
from playwright.sync_api import sync_playwright
from starlette.applications import Starlette
from starlette.routing import Mount

from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore, acting_as
from memorywire.server.ui import review_app
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import RememberRequest, RememberResponse

CHROMIUM = "/usr/bin/chromium"
TOKEN = "tok-screens"
AGENT = "travel-bot"


def _stage(gov: GovernedStore, content: str, *, gated: bool = True,
           agent: str = AGENT) -> Callable[[], Awaitable[RememberResponse]]:
    async def run() -> RememberResponse:
        with acting_as("agent:travel-bot"):
            return await gov.remember(RememberRequest(
                agent_id=agent, type="semantic", content=content, approval_required=gated))

    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/img"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, start_blocking_portal() as portal:
        gov = GovernedStore(SqliteStore(Path(tmp) / "store.db", embedder=HashingEmbedder()),
                            Path(tmp) / "gov.db")
        portal.call(_stage(gov, "The user likes green tea every morning", gated=False))
        contradicting = portal.call(_stage(gov, "The user does not like green tea"))
        portal.call(_stage(gov, "The user is allergic to peanuts and carries an epinephrine pen"))
        portal.call(_stage(gov, "Booked a window seat on the flight to Lisbon on 14 March",
                           agent="booking-agent"))
        app = Starlette(routes=[Mount("/ui", app=review_app(gov, {TOKEN: "reviewer:alice"}.get))])
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        base = f"http://127.0.0.1:{sock.getsockname()[1]}/ui"
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        running = portal.start_task_soon(server.serve, [sock])
        while not server.started:
            if running.done():
                running.result()
            time.sleep(0.02)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
                    "--no-sandbox", "--headless=new", "--disable-gpu", "--disable-dev-shm-usage"])
                page = browser.new_context(viewport={"width": 1280, "height": 760}).new_page()
                # a deep link: sign-in leads back to it
                page.goto(f"{base}/approvals/{contradicting.id}")
                page.get_by_label("Reviewer token").fill(TOKEN)
                page.get_by_role("button", name="Sign in").click()
                page.wait_for_url(f"{base}/approvals/{contradicting.id}")
                page.screenshot(path=str(args.out / "review-approval.png"), full_page=True)
                page.get_by_label("Reason").fill("the user changed their mind last week")
                page.get_by_role("button", name="Approve").click()
                page.wait_for_selector("p.kept")
                page.screenshot(path=str(args.out / "review-approved.png"), full_page=True)
                page.goto(f"{base}/approvals")
                page.screenshot(path=str(args.out / "review-queue.png"), full_page=True)
                page.goto(f"{base}/audit")
                page.screenshot(path=str(args.out / "review-audit.png"), full_page=True)
                phone = browser.new_context(viewport={"width": 390, "height": 800},
                                            device_scale_factor=1).new_page()
                phone.goto(f"{base}/login")
                phone.get_by_label("Reviewer token").fill(TOKEN)
                phone.get_by_role("button", name="Sign in").click()
                phone.wait_for_url(f"{base}/approvals")
                phone.screenshot(path=str(args.out / "review-queue-phone.png"), full_page=True)
                width = phone.evaluate("document.documentElement.scrollWidth")
                browser.close()
        finally:
            server.should_exit = True
            running.result(timeout=10)
            sock.close()
            portal.call(gov.aclose)
    print(f"screenshots in {args.out}; phone page width {width}px (viewport 390px)")
    return 0 if width <= 390 else 1


if __name__ == "__main__":
    sys.exit(main())
