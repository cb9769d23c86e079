"""Approval patterns as pure rules (governance/patterns.py): what counts, what resets, where
the offered rule goes, and that the diff shows exactly that rule."""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.governance.patterns import learn, policy_diff, policy_sha, with_rule
from memorywire.governance.policies import PolicySet
from memorywire.governance.queue import QueueItem
from memorywire.wire.models import RememberRequest

POLICY = PolicySet.from_dict({"rules": [
    {"name": "no spam", "match": {"source": "spam"}, "decision": "reject"},
    {"name": "web waits", "match": {"source": "web_page"}, "decision": "review"},
]})
_n = iter(range(10_000))


def _item(status: str = "approved", source: Any = "web_page", agent: str = "a1",
          reasoning: str = "governance policy rule 'web waits'") -> QueueItem:
    n = next(_n)
    return QueueItem(id=f"i{n}", operation="remember", agent_id=agent, user_id=None,
                     request={"source": source, "type": "semantic", "agent_id": agent},
                     content_hash="h", requested_by="w", reasoning=reasoning, status=status,
                     created_at=n, updated_at=n, reviewed_at=n)


def test_threshold_counts_approvals_since_the_last_rejection() -> None:
    # newest first: three approvals, then (older) a rejection, then older approvals
    decided = [_item(), _item(), _item(), _item("rejected"), *[_item() for _ in range(5)]]
    assert learn(decided, POLICY, threshold=4) == []
    [p] = learn(decided, POLICY, threshold=3)
    assert (p.agent_id, p.source, p.type, p.approvals, p.staged_by) == \
        ("a1", "web_page", "semantic", 3, "web waits")
    # a newer rejection closes it whatever came before
    assert learn([_item("rejected"), *decided], POLICY, threshold=1) == []


def test_only_rule_staged_writes_with_a_source_count() -> None:
    asked = [_item(reasoning="the writer asked for approval") for _ in range(5)]
    sourceless = [_item(source=None) for _ in range(5)]
    assert learn(asked + sourceless, POLICY, threshold=5) == []
    other_agent = [_item(agent="a2") for _ in range(5)]
    assert [p.agent_id for p in learn([*other_agent, _item()], POLICY, threshold=5)] == ["a2"]
    with pytest.raises(ValueError, match="threshold"):
        learn([], POLICY, threshold=0)


def test_rule_goes_before_the_staging_rule_and_the_diff_shows_only_it() -> None:
    [p] = learn([_item() for _ in range(5)], POLICY)
    after = with_rule(POLICY, p)
    assert [r.name for r in after.rules] == ["no spam", p.rule().name, "web waits"]
    def write(source: str, agent: str = "a1") -> RememberRequest:
        return RememberRequest(agent_id=agent, type="semantic", content="x", source=source)

    assert after.decide_remember(write("web_page")).decision == "commit"
    assert after.decide_remember(write("web_page", agent="a2")).decision == "review"
    assert after.decide_remember(write("spam")).decision == "reject"
    added = [line for line in policy_diff(POLICY, after) if line.startswith("+ ")
             or (line.startswith("+") and not line.startswith("+++"))]
    assert any('"decision": "commit"' in line for line in added)
    assert not [line for line in policy_diff(POLICY, after)
                if line.startswith("-") and not line.startswith("---")]
    assert policy_sha(after) != policy_sha(POLICY)
    # offered no more once the policy has it, nor when its staging rule is gone
    assert learn([_item() for _ in range(5)], after) == []
    assert learn([_item() for _ in range(5)], PolicySet()) == []
