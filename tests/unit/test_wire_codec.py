"""From bytes to models and back: every refusal is an ``invalid_request`` that says where and
why, and a response carries no ``null`` the v0 shapes do not allow."""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.errors import InvalidRequest, NotFound, RateLimited
from memorywire.wire.codec import (
    MODELS,
    OPERATIONS,
    RECORD_OPERATIONS,
    parse,
    parse_error,
    parse_json,
    parse_record_request,
    parse_request,
    to_wire,
)
from memorywire.wire.memory_ops import GetRequest, ListResponse
from memorywire.wire.models import (
    ForgetRequest,
    MemoryType,
    RecallRequest,
    RememberRequest,
    RememberResponse,
)

REMEMBER = {"agent_id": "a", "type": "semantic", "content": "tea"}


def test_json_text_bytes_and_a_byte_order_mark_decode_alike() -> None:
    want = {"a": [1, "é"]}
    assert parse_json('{"a": [1, "é"]}') == want
    assert parse_json('{"a": [1, "é"]}'.encode()) == want
    assert parse_json(bytearray('{"a": [1, "é"]}'.encode())) == want
    assert parse_json(b"\xef\xbb\xbf" + '{"a": [1, "é"]}'.encode()) == want


def test_malformed_json_names_line_and_column() -> None:
    with pytest.raises(InvalidRequest) as exc:
        parse_json('{\n  "a": 1,\n  oops}')
    assert exc.value.message == (
        "malformed JSON at line 3, column 3: Expecting property name enclosed in double quotes")
    assert [(d.path, d.keyword, d.message) for d in exc.value.details] == [
        ("", "json", exc.value.message)]


def test_bytes_that_are_not_utf8_name_the_offset() -> None:
    with pytest.raises(InvalidRequest) as exc:
        parse_json(b'{"a": "\xff"}')
    assert exc.value.message == "body is not UTF-8: invalid byte at offset 7"
    assert [(d.path, d.keyword, d.message) for d in exc.value.details] == [
        ("", "json", "body is not UTF-8: invalid byte at offset 7")]


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(constant: str) -> None:
    with pytest.raises(InvalidRequest) as exc:
        parse_json(f'{{"x": {constant}}}')
    assert exc.value.message == f"malformed JSON: {constant} is not valid JSON"
    assert [(d.path, d.keyword, d.message) for d in exc.value.details] == [
        ("", "json", exc.value.message)]


def test_parse_builds_the_model_of_a_kind_from_text_or_a_document() -> None:
    from_text = parse("remember", '{"agent_id": "a", "type": "semantic", "content": "tea"}')
    from_doc = parse("remember", dict(REMEMBER))
    assert isinstance(from_text, RememberRequest) and from_text == from_doc
    assert from_doc.type is MemoryType.SEMANTIC
    with pytest.raises(InvalidRequest) as unknown:
        parse("remember.v2", REMEMBER)
    assert unknown.value.message == "no model for document kind 'remember.v2'"


def test_the_schema_refuses_before_any_model_is_built() -> None:
    with pytest.raises(InvalidRequest) as exc:
        parse("remember", {"agent_id": "a", "type": "semantic"})
    assert any("content" in d.message or d.path == "" for d in exc.value.details)
    assert exc.value.message.startswith("invalid remember")


def test_a_gap_in_the_schema_is_still_a_400_naming_each_field(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fault injection: a schema that lets a bad document through. The model refuses it, and
    the caller still gets ``invalid_request`` with a pointer per problem, not a 500."""
    from memorywire.wire import codec

    monkeypatch.setattr(codec, "check", lambda kind, doc: None)
    with pytest.raises(InvalidRequest) as exc:
        parse("remember", {"agent_id": "a", "type": "no-such-type"})
    assert [(d.path, d.keyword) for d in exc.value.details] == [
        ("/type", "enum"), ("/content", "missing")]
    first = exc.value.details[0].message
    assert first.startswith("Input should be") and exc.value.message == f"invalid remember: {first}"
    assert exc.value.details[1].message == "Field required"


def test_parse_request_knows_the_five_operations_and_names_the_rest() -> None:
    assert OPERATIONS == ("remember", "recall", "forget", "merge", "expire")
    assert isinstance(parse_request("recall", {"agent_id": "a", "query": "q"}), RecallRequest)
    assert isinstance(parse_request("forget", {"agent_id": "a", "ids": ["m"]}), ForgetRequest)
    with pytest.raises(InvalidRequest) as exc:
        parse_request("get", {"agent_id": "a", "id": "m"})
    assert exc.value.message == (
        "unknown operation 'get'; expected one of remember, recall, forget, merge, expire")


def test_parse_record_request_knows_the_record_operations_and_names_the_rest() -> None:
    assert RECORD_OPERATIONS == ("get", "list", "update", "history", "erase")
    got = parse_record_request("get", {"agent_id": "a", "id": "m"})
    assert got == GetRequest(agent_id="a", id="m")
    with pytest.raises(InvalidRequest) as exc:
        parse_record_request("remember", REMEMBER)
    assert exc.value.message == (
        "unknown operation 'remember'; expected one of get, list, update, history, erase")


def test_every_operation_has_a_request_and_a_response_model() -> None:
    for op in (*OPERATIONS, *RECORD_OPERATIONS):
        assert op in MODELS and f"{op}.response" in MODELS, op
    assert MODELS["remember"] is RememberRequest


def test_an_error_envelope_becomes_its_exception() -> None:
    err = parse_error({"code": "not_found", "message": "no memory 'm'",
                       "details": [{"path": "/id", "keyword": "exists", "message": "gone"}]})
    assert isinstance(err, NotFound) and err.message == "no memory 'm'"
    assert [(d.path, d.keyword) for d in err.details] == [("/id", "exists")]
    limited = parse_error(
        '{"code": "rate_limited", "message": "slow down", "details": [], "retry_after": 2}')
    assert isinstance(limited, RateLimited) and limited.retry_after == 2
    with pytest.raises(InvalidRequest):
        parse_error({"message": "no code"})


def test_to_wire_omits_absent_fields_but_keeps_the_list_cursor() -> None:
    body = to_wire(RememberResponse(id="m", stored_at=5, stores=["s"], pending_approval=False))
    assert body["id"] == "m" and body["stored_at"] == 5
    assert all(v is not None for v in body.values())
    assert "approval_url" not in body
    record = {"id": "m", "agent_id": "a", "type": "episodic", "content": "c", "created_at": 1}
    listed = to_wire(ListResponse.model_validate({"memories": [record], "next_cursor": None}))
    assert type(listed["memories"][0]["type"]) is str  # plain JSON values, not enum members
    assert listed["memories"][0]["type"] == "episodic"
    last_page = to_wire(ListResponse(memories=[], next_cursor=None))
    assert last_page == {"memories": [], "next_cursor": None}
    more: dict[str, Any] = to_wire(ListResponse(memories=[], next_cursor="c1"))
    assert more["next_cursor"] == "c1"
