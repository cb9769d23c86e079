"""``review_pattern_threshold`` and a policy file, set in the configuration, reach the served
reviewer UI: the pattern is offered after that many approvals, and accepting it writes the
rule back into the policy file the server read (so a restart keeps it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from memorywire.governance.policies import PolicySet
from memorywire.server.app import http_app
from memorywire.server.config import load_config
from memorywire.server.runtime import running

pytestmark = pytest.mark.anyio

POLICY = {"rules": [{"name": "web waits", "match": {"source": "web_page"},
                     "decision": "review"}]}


def _field(html: str, name: str) -> str:
    m = re.search(rf'name="{name}" value="([^"]+)"', html)
    assert m, html
    return m.group(1)


async def test_threshold_and_policy_file_from_the_config(tmp_path: Path) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(POLICY), encoding="utf-8")
    config = tmp_path / "mw.toml"
    config.write_text(
        f'[server]\nstore = "memory://"\nembedder = "hashing"\nno_auth = true\n'
        f'governance_db = "{tmp_path / "gov.db"}"\npolicies = "{policy}"\n'
        f"review_pattern_threshold = 2\n", encoding="utf-8")
    async with running(load_config(config, env={}), http=True) as runtime:
        assert runtime.governed is not None
        app = http_app(runtime)
        async with app.router.lifespan_context(app), httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
            for n in range(2):
                r = await c.post("/v0/remember", json={
                    "agent_id": "A", "type": "semantic", "source": "web_page",
                    "content": f"page fact {n}"})
                assert r.json()["pending_approval"], r.text
                await runtime.governed.decide(r.json()["approval_id"], "someone else", True)
            login = await c.get("/ui/login")
            r = await c.post("/ui/login", data={"token": "me", "csrf": _field(login.text,
                                                                               "csrf")})
            assert r.status_code == 303
            page = (await c.get("/ui/patterns")).text
            assert "2 approvals in a row" in page
            r = await c.post("/ui/patterns/accept", data={
                "csrf": _field(page, "csrf"), "pattern": _field(page, "pattern"),
                "policy_sha": _field(page, "policy_sha")})
            assert r.status_code == 303, r.text
    saved = PolicySet.from_file(policy)
    assert [r.name for r in saved.rules] == ["learned: A web_page semantic", "web waits"]
