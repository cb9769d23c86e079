"""Bad input gets every problem back, each with a pointer, a keyword and a usable sentence."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memorywire.errors import InvalidRequest
from memorywire.wire import (
    best_match,
    check,
    parse,
    parse_json,
    parse_request,
    to_wire,
    validate,
)
from memorywire.wire.models import ExpireRequest, ForgetRequest, Procedure, RememberRequest


def _triples(kind: str, doc: Any) -> list[tuple[str, str]]:
    return [(i.path, i.keyword) for i in validate(kind, doc)]


def test_three_precise_errors_for_the_classic_bad_remember() -> None:
    issues = validate("remember", {"agent_id": "", "type": "semantik"})
    assert [(i.path, i.keyword) for i in issues] == [
        ("/agent_id", "minLength"),
        ("/content", "required"),
        ("/type", "enum"),
    ]
    by_path = {i.path: i.message for i in issues}
    assert by_path["/agent_id"] == "must not be empty"
    assert by_path["/content"] == "missing required field 'content'"
    for allowed in ("semantic", "episodic", "procedural", "emotional", '"semantik"'):
        assert allowed in by_path["/type"]


def test_valid_document_has_no_issues() -> None:
    assert validate("remember", {"agent_id": "a", "type": "semantic", "content": "x"}) == []
    assert best_match("remember", {"agent_id": "a", "type": "semantic", "content": "x"}) is None


def test_forget_without_scope_is_refused() -> None:
    issues = validate("forget", {"agent_id": "a"})
    assert [(i.path, i.keyword) for i in issues] == [("", "anyOf")]
    assert "'ids' or 'filter'" in issues[0].message
    with pytest.raises(InvalidRequest):
        parse_request("forget", {"agent_id": "a"})


def test_forget_with_empty_filter_is_refused() -> None:
    assert _triples("forget", {"agent_id": "a", "filter": {}}) == [("/filter", "minProperties")]


def test_forget_scoped_by_filter_alone_is_accepted() -> None:
    req = parse_request("forget", {"agent_id": "a", "filter": {"topic": "x"}})
    assert isinstance(req, ForgetRequest) and req.ids is None and not req.hard_delete


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"agent_id": "a", "policy": {}}, [("/policy", "minProperties")]),
        ({"agent_id": "a"}, [("/policy", "required")]),
        (
            {"agent_id": "a", "policy": {"older_than_days": 0}},
            [("/policy/older_than_days", "minimum")],
        ),
        ({"agent_id": "a", "policy": {"ttl": 3}}, [("/policy/ttl", "additionalProperties")]),
        (
            {"agent_id": "a", "policy": {"type": "episodic"}, "action": "purge"},
            [("/action", "enum")],
        ),
    ],
)
def test_expire_policy_rules(doc: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert _triples("expire", doc) == expected


def test_expire_policy_message_names_the_keys() -> None:
    (issue,) = validate("expire", {"agent_id": "a", "policy": {}})
    assert "no_recall_in_days" in issue.message and "older_than_days" in issue.message


@pytest.mark.parametrize(
    ("field", "value", "keyword"),
    [
        ("k", 0, "minimum"),
        ("k", 1001, "maximum"),
        ("k", 2.5, "type"),
        ("hops", 4, "maximum"),
        ("hops", -1, "minimum"),
        ("fusion", "borda", "enum"),
        ("types", ["semantic", "factual"], "enum"),
        ("fresher_than_days", -1, "minimum"),
        ("query", "", "minLength"),
    ],
)
def test_recall_bounds(field: str, value: Any, keyword: str) -> None:
    doc = {"agent_id": "a", "query": "q", field: value}
    assert [i.keyword for i in validate("recall", doc)] == [keyword]


def test_bounds_are_inclusive() -> None:
    for k, hops in ((1, 0), (1000, 3)):
        assert validate("recall", {"agent_id": "a", "query": "q", "k": k, "hops": hops}) == []


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"confidence": 1.01}, ("/confidence", "maximum")),
        ({"confidence": -0.1}, ("/confidence", "minimum")),
        ({"expires_at": -5}, ("/expires_at", "minimum")),
        ({"expires_at": 1.5}, ("/expires_at", "type")),
        ({"content": ""}, ("/content", "minLength")),
        ({"content": {}}, ("/content", "minProperties")),
        ({"content": 7}, ("/content", "type")),
        ({"agent_id": "x" * 257}, ("/agent_id", "maxLength")),
    ],
)
def test_remember_field_rules(doc: dict[str, Any], expected: tuple[str, str]) -> None:
    base = {"agent_id": "a", "type": "semantic", "content": "x"}
    assert _triples("remember", {**base, **doc}) == [expected]


def test_unknown_field_suggests_the_close_name() -> None:
    (issue,) = validate(
        "remember", {"agent_id": "a", "type": "semantic", "content": "x", "agentid": 1}
    )
    assert issue.path == "/agentid" and issue.keyword == "additionalProperties"
    assert "did you mean 'agent_id'" in issue.message


def test_merge_needs_a_duplicate() -> None:
    doc = {"agent_id": "a", "canonical": "Acme", "duplicates": []}
    assert _triples("merge", doc) == [("/duplicates", "minItems")]


# --- procedural content -------------------------------------------------------------------

FSM = {
    "name": "f",
    "initial": "a",
    "states": ["a", "b"],
    "transitions": [{"trigger": "go", "source": "*", "dest": "b"}],
}


def _remember_fsm(content: Any) -> dict[str, Any]:
    return {"agent_id": "a", "type": "procedural", "content": content}


def test_fsm_as_json_string_and_as_object_both_accepted() -> None:
    for content in (json.dumps(FSM), FSM):
        req = parse_request("remember", _remember_fsm(content))
        assert Procedure.model_validate_json(req.content_text()).initial == "a"


@pytest.mark.parametrize(
    "callback", ["before", "after", "prepare", "on_enter", "on_exit", "mod.fn"]
)
def test_fsm_callbacks_are_refused_in_string_and_object(callback: str) -> None:
    bad = {**FSM, "transitions": [{**FSM["transitions"][0], callback: "os.system"}]}  # type: ignore[dict-item]
    for content in (json.dumps(bad), bad):
        assert _triples("remember", _remember_fsm(content)) == [
            (f"/content/transitions/0/{callback.replace('/', '~1')}", "additionalProperties")
        ]


def test_fsm_string_that_is_not_json_names_line_and_column() -> None:
    (issue,) = validate("remember", _remember_fsm('{"name": "f",\n "states": [}'))
    assert issue.path == "/content" and issue.keyword == "contentMediaType"
    assert "line 2, column" in issue.message


def test_non_procedural_text_is_not_parsed_as_json() -> None:
    assert validate("remember", {"agent_id": "a", "type": "semantic", "content": "{not json"}) == []


# --- check / best_match / parse -----------------------------------------------------------


def test_check_raises_invalid_request_with_every_detail() -> None:
    with pytest.raises(InvalidRequest) as info:
        check("remember", {"agent_id": "", "type": "semantik"})
    err = info.value
    assert err.code == "invalid_request" and err.http_status == 400
    assert [d.path for d in err.details] == ["/agent_id", "/content", "/type"]
    assert "(and 2 more)" in err.message
    env = err.to_envelope()
    assert validate("error", env) == []


def test_best_match_is_one_line() -> None:
    line = best_match("recall", {"agent_id": "a", "query": "q", "k": 0})
    assert line == "/k: must be >= 1 (got 0)"


def test_parse_request_builds_the_model_with_defaults() -> None:
    req = parse_request("remember", '{"agent_id": "a", "type": "episodic", "content": "met Bo"}')
    assert isinstance(req, RememberRequest)
    assert req.confidence == 1.0 and req.approval_required is False
    exp = parse_request(
        "expire", {"agent_id": "a", "policy": {"no_recall_in_days": 30}, "action": "archive"}
    )
    assert isinstance(exp, ExpireRequest) and exp.policy.no_recall_in_days == 30


def test_parse_request_rejects_unknown_operation_and_response_kinds() -> None:
    with pytest.raises(InvalidRequest, match="unknown operation"):
        parse_request("remember.response", {})
    with pytest.raises(InvalidRequest, match="no model"):
        parse("error", {})


def test_to_wire_omits_unset_optionals() -> None:
    req = RememberRequest(agent_id="a", type="semantic", content="x")  # type: ignore[arg-type]
    body = to_wire(req)
    assert "user_id" not in body and body["confidence"] == 1.0
    assert validate("remember", body) == []


# --- malformed JSON ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ('{"agent_id": "a",\n  "type": }', 2, 11),
        ("{", 1, 2),
        ("", 1, 1),
        ('{"a": 1}\n\n x', 3, 2),
    ],
)
def test_malformed_json_reports_line_and_column(text: str, line: int, column: int) -> None:
    with pytest.raises(InvalidRequest) as info:
        parse_json(text)
    assert f"line {line}, column {column}" in info.value.message
    assert info.value.details[0].keyword == "json"


@pytest.mark.parametrize("text", ["NaN", '{"k": Infinity}', b"\xff\xfe{"])
def test_non_json_constants_and_bad_bytes_are_invalid(text: str | bytes) -> None:
    with pytest.raises(InvalidRequest):
        parse_json(text)


def test_parse_json_accepts_utf8_bytes() -> None:
    assert parse_json('{"c": "café"}'.encode()) == {"c": "café"}
