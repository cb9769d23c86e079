"""Approval patterns in the reviewer UI, over a real GovernedStore in TestClient: offered
after the threshold of approvals in a row, reset by a rejection, never applied by itself,
and accepted as an audited policy change that a policy file keeps."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore, acting_as
from memorywire.governance.policies import PolicySet
from memorywire.store.memory import InMemoryStore
from memorywire.wire.models import RememberRequest, RememberResponse
from tests.integration.review_ui import A, csrf_of, ui_client

TOKENS = {"tok-reviewer": "reviewer"}
POLICY = {"rules": [{"name": "web waits", "match": {"source": "web_page"},
                     "decision": "review", "reason": "content from the open web"}]}
RULE = f"learned: {A} web_page semantic"


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(POLICY), encoding="utf-8")
    return path


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def gov(tmp_path: Path, policy_file: Path, clock: FakeClock) -> GovernedStore:
    return GovernedStore(InMemoryStore(embedder=HashingEmbedder(), clock=clock),
                         tmp_path / "gov.db", clock=clock, policies=policy_file)


@pytest.fixture
def client(gov: GovernedStore, policy_file: Path) -> Iterator[TestClient]:
    with ui_client(gov, TOKENS, pattern_threshold=3, policy_file=policy_file) as c:
        csrf = csrf_of(c.get("/ui/login").text)
        assert c.post("/ui/login", data={"token": "tok-reviewer", "csrf": csrf}).status_code \
            == 303
        yield c


def _web(c: TestClient, gov: GovernedStore, content: str) -> RememberResponse:
    async def run() -> RememberResponse:
        with acting_as("writer"):
            return await gov.remember(RememberRequest(agent_id=A, type="semantic",
                                                      content=content, source="web_page"))
    return c.portal.call(run)


def _decide(c: TestClient, gov: GovernedStore, clock: FakeClock, n: int,
            approve: bool = True) -> None:
    """Stage ``n`` web pages and approve (or reject) each, a second apart."""
    for _ in range(n):
        clock.advance(1000)
        staged = _web(c, gov, f"page fact written at {clock.now_ms()}")
        assert staged.pending_approval and staged.approval_id
        c.portal.call(gov.decide, staged.approval_id, "reviewer", approve)


def test_offered_after_threshold_and_reset_by_a_rejection(
        client: TestClient, gov: GovernedStore, clock: FakeClock) -> None:
    _decide(client, gov, clock, 2)
    assert "No pattern yet." in client.get("/ui/patterns").text
    _decide(client, gov, clock, 1)
    page = client.get("/ui/patterns").text
    assert "3 approvals in a row" in page and "web waits" in page
    assert f'<span class="add">+      &#34;name&#34;: &#34;{RULE}&#34;,</span>' in page
    assert gov.policies.to_dict() == PolicySet.from_dict(POLICY).to_dict()  # only offered
    _decide(client, gov, clock, 1, approve=False)
    assert "No pattern yet." in client.get("/ui/patterns").text
    _decide(client, gov, clock, 2)
    assert "No pattern yet." in client.get("/ui/patterns").text
    _decide(client, gov, clock, 1)
    assert "3 approvals in a row" in client.get("/ui/patterns").text


def test_accepting_writes_the_policy_audited_and_to_its_file(
        client: TestClient, gov: GovernedStore, policy_file: Path, clock: FakeClock) -> None:
    _decide(client, gov, clock, 3)
    page = client.get("/ui/patterns").text
    key = page.split('name="pattern" value="', 1)[1].split('"', 1)[0]
    sha = page.split('name="policy_sha" value="', 1)[1].split('"', 1)[0]
    csrf = csrf_of(page)
    assert client.post("/ui/patterns/accept", data={"pattern": key, "policy_sha": sha}
                       ).status_code == 403
    stale = client.post("/ui/patterns/accept", data={"csrf": csrf, "pattern": key,
                                                     "policy_sha": "0" * 64})
    assert stale.status_code == 409 and "policy_sha" in stale.text
    assert [r.name for r in gov.policies.rules] == ["web waits"]

    r = client.post("/ui/patterns/accept", data={"csrf": csrf, "pattern": key,
                                                 "policy_sha": sha})
    assert r.status_code == 303
    assert f"Rule &#39;{RULE}&#39; added and saved to {policy_file}" in \
        client.get("/ui/patterns").text
    assert [r.name for r in gov.policies.rules] == [RULE, "web waits"]
    assert PolicySet.from_file(policy_file).to_dict() == gov.policies.to_dict()
    [entry] = [e for e in gov.audit_entries(limit=1000) if e["action"] == "policy_changed"
               and e["actor"] == "reviewer"]
    assert entry["details"]["rule"]["name"] == RULE
    assert entry["details"]["learned_from"] == {"approvals": 3, "threshold": 3,
                                                "before_rule": "web waits"}
    # the rule now commits what reviewers kept approving; the offer is gone
    assert not _web(client, gov, "one more page fact").pending_approval
    assert "No pattern yet." in client.get("/ui/patterns").text
    again = client.post("/ui/patterns/accept", data={"csrf": csrf, "pattern": key,
                                                     "policy_sha": sha})
    assert again.status_code == 409
