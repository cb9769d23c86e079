"""Typed memory fields and the recall ``where`` filter, once over every transport."""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.wire.validate import validate

from .conftest import World

pytestmark = pytest.mark.anyio


async def _emotional(t: Any, tok: str, content: str, **kw: Any) -> str:
    out = await t.call("remember", {"agent_id": "A", "type": "emotional", "content": content,
                                    **kw}, tok)
    assert out.ok, out.body
    return str(out.body["id"])


async def test_typed_fields_are_stored_returned_and_filtered(transport: Any,
                                                             world: World) -> None:
    tok = world.agent_a
    sad = await _emotional(transport, tok, "upset about the invoice", valence=-0.6,
                           sentiment="negative", emotion="anger", target="invoice")
    glad = await _emotional(transport, tok, "happy about the invoice", valence=0.7)
    rec = await transport.call("recall", {"agent_id": "A", "query": "invoice", "k": 10,
                                          "min_relevance": 0,
                                          "where": {"valence": {"lt": 0}}}, tok)
    assert rec.ok, rec.body
    assert not validate("recall.response", rec.body)
    assert [h["id"] for h in rec.body["results"]] == [sad]
    hit = rec.body["results"][0]
    assert (hit["valence"], hit["sentiment"], hit["emotion"], hit["target"]) == \
        (-0.6, "negative", "anger", "invoice")
    both = await transport.call("recall", {"agent_id": "A", "query": "invoice", "k": 10,
                                           "min_relevance": 0,
                                           "where": {"valence": {"gte": -1}}}, tok)
    assert both.ok and {h["id"] for h in both.body["results"]} == {sad, glad}
    got = await transport.call("get", {"agent_id": "A", "id": glad}, tok)
    assert got.ok, got.body
    assert got.body["memory"]["valence"] == 0.7


async def test_bad_typed_values_and_conditions_are_refused_by_name(transport: Any,
                                                                   world: World) -> None:
    tok = world.agent_a
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("remember", {"agent_id": "A", "type": "emotional", "content": "x", "valence": 5},
         "valence"),
        ("remember", {"agent_id": "A", "type": "emotional", "content": "x",
                      "metadata": {"arousal": 2}}, "arousal"),
        ("remember", {"agent_id": "A", "type": "semantic", "content": "x",
                      "event_time": 5}, "event_time"),
        ("recall", {"agent_id": "A", "query": "x", "where": {"valense": {"lt": 0}}},
         "valense"),
        ("recall", {"agent_id": "A", "query": "x", "where": {"valence": {"below": 0}}},
         "below"),
    ]
    for op, doc, name in cases:
        out = await transport.call(op, doc, tok)
        assert not out.ok and out.code == "invalid_request", (doc, out.body)
        assert name in str(out.body), (name, out.body)
