"""The laptop flow with the reviewer UI, no tokens anywhere: ``memorywire serve --no-auth``
and ``memorywire mcp`` on the default store of a fresh home (governance on by default). An
agent over MCP stages a write; the agent cannot approve it over REST; the person follows the
approval's deep link in headless Chromium, signs in (any word: there are no tokens), lands on
the item and approves; the agent then recalls the memory.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from playwright.sync_api import expect, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
SRC = str(Path(__file__).resolve().parents[2] / "src")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing"),
]


def _env(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": os.environ.get("PATH", ""), "PYTHONPATH": SRC}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def home(tmp_path: Path) -> Path:
    out = tmp_path / "home"
    out.mkdir()
    return out


@pytest.fixture
def server(home: Path, tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    log = tmp_path / "serve.log"
    err = log.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "memorywire.cli", "serve", "--no-auth", "--port", str(port),
         "--embedder", "hashing"],
        env=_env(home), cwd=str(tmp_path), stderr=err)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                if httpx.get(f"{base}/v0/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "memorywire serve did not start"
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        err.close()


def _agent(home: Path, tmp_path: Path, tool: str, args: dict[str, Any]) -> Any:
    """One MCP call from a fresh ``memorywire mcp`` (as an agent host would start it)."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memorywire.cli", "mcp", "--embedder", "hashing"],
        env=_env(home), cwd=str(tmp_path))

    async def go() -> Any:
        async with Client(params) as client:
            res = await client.call_tool(tool, args)
            assert not res.is_error, res
            return json.loads(res.content[0].text)  # type: ignore[union-attr]

    return anyio.run(go)


def test_agent_stages_person_approves_in_the_ui_agent_recalls(
    home: Path, tmp_path: Path, server: str
) -> None:
    staged = _agent(home, tmp_path, "remember", {
        "agent_id": "A", "type": "semantic", "content": "Dana's flight lands at 9pm",
        "approval_required": True})
    assert staged["pending_approval"]
    # the agent side (a no-auth API caller) cannot approve what it wrote
    refused = httpx.post(f"{server}/v0/approvals/{staged['id']}/approve", json={})
    assert refused.status_code == 403 and "own write" in refused.text, refused.text

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--headless=new", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page()
            page.set_default_timeout(15_000)
            link = f"{server}/ui/approvals/{staged['id']}"
            page.goto(link)  # the deep link an approval_url gives
            page.get_by_label("Reviewer token").fill("me")
            page.get_by_role("button", name="Sign in").click()
            expect(page).to_have_url(link)  # the deep link survived the sign-in
            page.get_by_role("button", name="Approve").click()
            expect(page.locator("dl.facts")).to_contain_text("approved by operator")
        finally:
            browser.close()

    got = _agent(home, tmp_path, "recall", {"agent_id": "A", "query": "Dana flight"})
    assert [h["id"] for h in got["results"]] == [staged["id"]]
