"""Policy rules (first match wins) and the pure review diffs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memorywire.core.diff import forget_diff, merge_diff, remember_diff, similarity
from memorywire.errors import InvalidRequest
from memorywire.governance import PolicySet
from memorywire.wire.models import ForgetRequest, MergeStrategy, RememberRequest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "policies.json"


def _req(**kw: Any) -> RememberRequest:
    base: dict[str, Any] = {"agent_id": "a", "type": "semantic", "content": "hello world"}
    return RememberRequest.model_validate({**base, **kw})


@pytest.mark.parametrize(
    ("kw", "decision", "rule"),
    [
        ({}, "commit", None),
        ({"source": "user"}, "commit", None),
        ({"source": "web_page"}, "review", "untrusted-sources"),
        ({"source": "tool_result"}, "review", "untrusted-sources"),
        ({"metadata": {"tags": ["health", "x"]}}, "review", "health-facts"),
        ({"metadata": {"tags": ["health"]}, "type": "episodic"}, "commit", None),
        ({"metadata": {"tags": "health"}}, "review", "health-facts"),
        ({"metadata": {"tags": ["sports"]}}, "commit", None),
    ],
)
def test_example_policies(kw: dict[str, Any], decision: str, rule: str | None) -> None:
    d = PolicySet.from_file(EXAMPLES).decide_remember(_req(**kw))
    assert (d.decision, d.rule) == (decision, rule)


def test_first_match_wins_and_conditions_are_anded() -> None:
    ps = PolicySet.from_dict(
        {
            "rules": [
                {
                    "name": "low",
                    "match": {"confidence_below": 0.5, "user_id": "u1"},
                    "decision": "reject",
                },
                {"name": "big", "match": {"content_size_over": 10}, "decision": "review"},
                {"name": "all-low", "match": {"confidence_below": 0.5}, "decision": "review"},
            ]
        }
    )
    assert ps.decide_remember(_req(confidence=0.2, user_id="u1")).rule == "low"
    assert ps.decide_remember(_req(confidence=0.2, user_id="u2")).rule == "big"
    assert ps.decide_remember(_req(confidence=0.2, content="short")).rule == "all-low"
    assert ps.decide_remember(_req(content="short")).decision == "commit"
    # "é" is two bytes: the size is counted in UTF-8.
    assert ps.decide_remember(_req(content="ééééé", confidence=0.9)).rule is None
    assert ps.decide_remember(_req(content="éééééé", confidence=0.9)).rule == "big"


def test_memory_facts_never_gate_other_operations() -> None:
    ps = PolicySet.from_dict(
        {
            "rules": [
                {
                    "name": "src",
                    "match": {"operation": ["forget"], "source": "x"},
                    "decision": "review",
                },
                {
                    "name": "user",
                    "match": {"operation": "forget", "user_id": "u"},
                    "decision": "review",
                },
            ]
        }
    )
    fr = ForgetRequest(agent_id="a", ids=["1"], user_id="u")
    assert ps.decide("forget", "a", "u", fr).rule == "user"
    assert ps.decide("forget", "a", None, fr).rule is None
    assert ps.decide_remember(_req(user_id="u")).rule is None


def test_bad_policy_is_invalid_request_with_paths(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest) as exc:
        PolicySet.from_dict({"rules": [{"name": "x", "decision": "maybe", "match": {"colour": 1}}]})
    paths = {d.path for d in exc.value.details}
    assert "/rules/0/decision" in paths and "/rules/0/match/colour" in paths
    bad = tmp_path / "p.json"
    bad.write_text("[1]", encoding="utf-8")
    with pytest.raises(InvalidRequest):
        PolicySet.from_file(bad)
    assert PolicySet.from_dict(PolicySet.from_file(EXAMPLES).to_dict()).to_dict() == (
        PolicySet.from_file(EXAMPLES).to_dict()
    )


def test_remember_diff_orders_floors_and_labels() -> None:
    new = {"id": "n", "content": "Alice likes green tea"}
    cands = [
        {"id": "dup", "content": "alice likes green tea", "score": 0.02},
        {"id": "neg", "content": "Alice does not like green tea", "score": 0.01},
        {"id": "far", "content": "the weather in Oslo", "score": 0.03},
        {"id": "n", "content": "Alice likes green tea", "score": 1.0},
    ]
    d = remember_diff(new, cands)
    assert d.added == [new]
    assert [(m["id"], m["relation"]) for m in d.modified] == [
        ("dup", "duplicate"),
        ("neg", "contradiction"),
    ]
    assert remember_diff(new, cands, top=1).modified[0]["id"] == "dup"
    assert similarity("a b", "c d") == 0.0 and similarity("", "") == 1.0


def test_forget_and_merge_diffs() -> None:
    recs = [
        {"id": "c", "content": "x", "created_at": 1, "confidence": 0.5, "metadata": {"k": 1}},
        {"id": "d", "content": "y", "created_at": 2, "confidence": 0.9, "metadata": {"k": 2}},
    ]
    assert forget_diff(recs).removed == recs
    keep = merge_diff(recs[0], recs[1:], MergeStrategy.KEEP_CANONICAL)
    assert [r["id"] for r in keep.removed] == ["d"]
    assert keep.modified[0]["after"]["content"] == "x"
    union = merge_diff(recs[0], recs[1:], MergeStrategy.MERGE_CONTENT)
    assert union.modified[0]["after"]["content"] == "x\ny"
    assert union.modified[0]["after"]["metadata"] == {"k": 2}
    best = merge_diff(recs[0], recs[1:], MergeStrategy.KEEP_HIGHEST_CONFIDENCE)
    assert best.modified[0]["id"] == "d" and [r["id"] for r in best.removed] == ["c"]
