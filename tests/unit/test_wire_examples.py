"""Every shipped example validates under its schema and its model, requests pair with responses."""

from __future__ import annotations

import json

import pytest

from memorywire.wire import (
    MODELS,
    Example,
    examples,
    parse,
    parse_error,
    schema_names,
    to_wire,
    validate,
)
from memorywire.wire.models import RememberRequest

OPERATIONS = ["remember", "recall", "forget", "merge", "expire"]
ALL = examples()


def test_examples_exist_for_every_kind() -> None:
    kinds = {e.kind for e in ALL}
    assert kinds == set(schema_names())
    for op in OPERATIONS:
        requests = {e.name for e in examples(op)}
        responses = {e.name for e in examples(f"{op}.response")}
        assert len(requests) >= 3, op
        assert requests == responses, f"{op}: every request has its response, by name"


@pytest.mark.parametrize("ex", ALL, ids=[f"{e.kind}:{e.name}" for e in ALL])
def test_example_validates_under_schema_and_model(ex: Example) -> None:
    assert validate(ex.kind, ex.document) == []
    if ex.kind in MODELS:
        model = parse(ex.kind, json.dumps(ex.document))
        assert validate(ex.kind, to_wire(model)) == []
    elif ex.kind == "error":
        assert parse_error(ex.document).code == ex.document["code"]


def test_published_v0_documents_are_present_and_read() -> None:
    published = [e for e in ALL if e.published]
    assert {e.kind for e in published} >= {"remember", "remember.response", "recall.response"}
    hits = next(e for e in published if e.kind == "recall.response").document["results"]
    assert set(hits[0]) - {"id", "type", "content", "score", "metadata", "created_at"}, "extra keys"
    nulls = [e for e in published if e.kind == "remember.response"]
    assert any(e.document.get("approval_url", "absent") is None for e in nulls)


@pytest.mark.parametrize("op", OPERATIONS)
def test_our_responses_have_no_extra_top_level_keys(op: str) -> None:
    kind = f"{op}.response"
    allowed = set(MODELS[kind].model_fields) - {"failures"}
    for ex in examples(kind):
        body = to_wire(parse(kind, ex.document))
        assert set(body) <= allowed
        assert validate(kind, {**body, "debug": 1})[0].keyword == "additionalProperties"


def test_required_coverage_of_the_brief() -> None:
    procedural = next(e for e in examples("remember") if e.document["type"] == "procedural")
    assert isinstance(procedural.document["content"], str)
    fsm = json.loads(procedural.document["content"])
    assert any(t["source"] == "*" for t in fsm["transitions"])
    assert any("filter" in e.document and "ids" not in e.document for e in examples("forget"))
    assert any(
        not e.document["canonical"].startswith("01") and len(e.document["duplicates"]) == 2
        for e in examples("merge")
    )
    assert any(
        "no_recall_in_days" in e.document["policy"] and e.document.get("action") == "archive"
        for e in examples("expire")
    )
    assert any(
        e.document.get("hops", 0) > 0 and "fresher_than_days" in e.document
        for e in examples("recall")
    )


def test_fsm_string_content_is_kept_as_text_by_the_model() -> None:
    ex = next(e for e in examples("remember") if e.name == "procedural-fsm-string")
    req = parse("remember", ex.document)
    assert isinstance(req, RememberRequest)
    assert json.loads(req.content_text())["initial"] == "idle"


def test_examples_are_fresh_copies() -> None:
    examples("error")[0].document["code"] = "mutated"
    assert examples("error")[0].document["code"] != "mutated"
