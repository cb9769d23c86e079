"""Finding 2: a revoked reviewer token kept approving through ``/ui`` for up to 8 h, and a
cookie still worked after logout. Sessions now live on the server and are re-checked against
the token store on every request. Finding 8 (UI part): ``/ui/health`` needs a login.

Driven against the server ``serve`` builds (tokens on, governance on).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from memorywire.governance import GovernedStore, acting_as
from memorywire.server.app import Server, build_server
from memorywire.server.config import ServerConfig
from memorywire.wire.models import RememberRequest


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    cfg = ServerConfig(
        store=f"sqlite:///{tmp_path / 'mem.db'}",
        tokens_db=str(tmp_path / "tokens.db"),
        governance_db=str(tmp_path / "gov.db"),
        embedder="hashing",
    )
    srv = build_server(cfg)
    yield srv


def _login(c: TestClient, token: str) -> str:
    page = c.get("/ui/login").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf
    r = c.post("/ui/login", data={"token": token, "csrf": csrf.group(1)})
    assert r.status_code == 303, r.text
    after = re.search(r'name="csrf" value="([^"]+)"', c.get("/ui/approvals").text)
    assert after
    return after.group(1)


def _stage(c: TestClient, gov: GovernedStore, text: str) -> str:
    async def run() -> str:
        with acting_as("writer"):
            r = await gov.remember(RememberRequest(agent_id="A", type="semantic", content=text,
                                                   approval_required=True))
        return r.id

    return c.portal.call(run)


def test_a_revoked_reviewer_token_ends_its_ui_session(server: Server) -> None:
    assert server.tokens is not None
    secret, info = server.tokens.create(role="reviewer", name="rita")
    gov = server.store
    assert isinstance(gov, GovernedStore)
    with TestClient(server.app, base_url="http://127.0.0.1", follow_redirects=False) as c:
        csrf = _login(c, secret)
        item = _stage(c, gov, "to be approved by a revoked reviewer")
        h = gov.list_pending()[0]["content_hash"]
        server.tokens.revoke(info.id)
        r = c.post(f"/ui/approvals/{item}/decide",
                   data={"action": "approve", "content_hash": h, "csrf": csrf})
        assert r.status_code == 303 and r.headers["location"].endswith("/login")
        assert [i["id"] for i in gov.list_pending()] == [item]
        assert c.get("/ui/approvals").status_code == 303
        c.portal.call(server.aclose)


def test_a_cookie_is_worthless_after_logout(server: Server) -> None:
    assert server.tokens is not None
    secret, _ = server.tokens.create(role="reviewer", name="rita")
    with TestClient(server.app, base_url="http://127.0.0.1", follow_redirects=False) as c:
        csrf = _login(c, secret)
        stolen = dict(c.cookies)
        assert c.post("/ui/logout", data={"csrf": csrf}).status_code == 303
        c.cookies.clear()
        for k, v in stolen.items():  # replay the cookie from before the logout
            c.cookies.set(k, v)
        assert c.get("/ui/approvals").status_code == 303
        c.portal.call(server.aclose)


def test_ui_health_needs_a_login_and_shows_no_store_path(server: Server, tmp_path: Path) -> None:
    with TestClient(server.app, base_url="http://127.0.0.1", follow_redirects=False) as c:
        r = c.get("/ui/health")
        assert r.status_code == 303 and str(tmp_path) not in r.text
        c.portal.call(server.aclose)
