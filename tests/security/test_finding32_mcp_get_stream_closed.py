"""Finding 32 (low): an authenticated ``GET /mcp/`` opened an event stream that was never
closed, so every token holder could pin connections and tasks for ever (our MCP sessions are
stateless: nothing is ever sent on it). It is now ended at the idle timeout (``idle_timeout_s``,
5 s by default) and the server keeps answering."""

from __future__ import annotations

import time

import anyio
import pytest

from memorywire.server.limits import Timeouts
from tests.security.conftest import Rig

pytestmark = pytest.mark.anyio


async def test_an_authenticated_get_stream_ends_at_the_idle_timeout(rig: Rig) -> None:
    start = time.monotonic()
    with anyio.move_on_after(Timeouts.idle_s + 10) as waited:
        r = await rig.http.get("/mcp/", headers={"authorization": f"Bearer {rig.admin}",
                                                 "accept": "text/event-stream"})
    assert not waited.cancelled_caught, "the GET stream was still open"
    elapsed = time.monotonic() - start
    assert r.status_code in (200, 204), r.text
    assert elapsed < Timeouts.idle_s + 3, elapsed

    listed = await rig.http.post(
        "/mcp/", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"authorization": f"Bearer {rig.admin}",
                 "accept": "application/json, text/event-stream"})
    assert listed.status_code == 200 and "result" in listed.json()


async def test_an_unauthenticated_get_is_refused_at_once(rig: Rig) -> None:
    with anyio.fail_after(5):
        r = await rig.http.get("/mcp/", headers={"accept": "text/event-stream"})
    assert r.status_code == 401
