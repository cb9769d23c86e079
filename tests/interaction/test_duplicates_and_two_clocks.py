"""Duplicates on write (``deduplicated``, ``near_duplicates``, ``allow_duplicate``) and the
two clocks of recall (``as_of`` valid time, ``known_at`` record time), once over every
transport."""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.wire.validate import validate

from .conftest import World

pytestmark = pytest.mark.anyio


async def test_a_repeat_answers_with_the_stored_memory(transport: Any, world: World) -> None:
    tok = world.agent_a
    doc = {"agent_id": "A", "type": "semantic", "content": "The user is allergic to peanuts."}
    first = await transport.call("remember", doc, tok)
    assert first.ok, first.body
    assert "deduplicated" not in first.body and "near_duplicates" not in first.body
    again = await transport.call("remember", {**doc, "content": "the user is allergic to "
                                              "PEANUTS."}, tok)
    assert again.ok and not validate("remember.response", again.body), again.body
    assert again.body["id"] == first.body["id"] and again.body["deduplicated"] is True
    assert again.body["stored_at"] == first.body["stored_at"]
    copy = await transport.call("remember", {**doc, "allow_duplicate": True}, tok)
    assert copy.ok and not validate("remember.response", copy.body), copy.body
    assert copy.body["id"] != first.body["id"] and "deduplicated" not in copy.body
    assert copy.body["near_duplicates"] == [{"id": first.body["id"], "similarity": 1.0}]


async def test_as_of_is_valid_time_and_known_at_record_time(transport: Any,
                                                           world: World) -> None:
    tok = world.agent_a
    put = await transport.call("remember", {
        "agent_id": "A", "type": "semantic", "content": "The user lived in Lisbon.",
        "valid_from": 1_600_000_000_000, "valid_to": 1_700_000_000_000}, tok)
    assert put.ok, put.body
    doc = {"agent_id": "A", "query": "Where did the user live?", "k": 5, "min_relevance": 0}
    then = 1_650_000_000_000  # inside the interval, long before it was recorded
    by_validity = await transport.call("recall", {**doc, "as_of": then}, tok)
    assert by_validity.ok and not validate("recall.response", by_validity.body)
    assert [h["id"] for h in by_validity.body["results"]] == [put.body["id"]]
    by_record = await transport.call("recall", {**doc, "known_at": then}, tok)
    assert by_record.ok, by_record.body
    assert by_record.body["results"] == [], "known_at a time before it was recorded"
    both = await transport.call("recall", {**doc, "as_of": then,
                                           "known_at": put.body["stored_at"]}, tok)
    assert [h["id"] for h in both.body["results"]] == [put.body["id"]]


async def test_bad_new_fields_are_refused_by_name(transport: Any, world: World) -> None:
    tok = world.agent_a
    for value in (-1, "yesterday"):
        out = await transport.call("recall", {"agent_id": "A", "query": "x",
                                              "known_at": value}, tok)
        assert not out.ok and out.code == "invalid_request", (value, out.body)
        assert "known_at" in str(out.body), out.body
    out = await transport.call("remember", {"agent_id": "A", "type": "semantic",
                                            "content": "x", "allow_duplicate": "yes"}, tok)
    assert not out.ok and out.code == "invalid_request", out.body
    assert "allow_duplicate" in str(out.body), out.body


async def test_list_answers_by_valid_time_and_by_record_time(transport: Any,
                                                             world: World) -> None:
    """``list`` takes recall's two clocks: a fact recorded now with a validity long past is
    listed ``as_of`` a time inside it and not ``known_at`` a time before it was recorded;
    without either, list shows every live memory; bad values are refused by name."""
    tok = world.agent_a
    put = await transport.call("remember", {
        "agent_id": "A", "type": "semantic", "content": "The user lived in Porto.",
        "valid_from": 1_600_000_000_000, "valid_to": 1_700_000_000_000}, tok)
    assert put.ok, put.body
    now = await transport.call("remember", {
        "agent_id": "A", "type": "semantic", "content": "The user likes sardines."}, tok)
    assert now.ok, now.body
    then = 1_650_000_000_000

    async def ids(**kw: Any) -> list[str]:
        out = await transport.call("list", {"agent_id": "A", **kw}, tok)
        assert out.ok and not validate("list.response", out.body), out.body
        return [m["id"] for m in out.body["memories"]]

    assert set(await ids()) >= {put.body["id"], now.body["id"]}
    assert await ids(as_of=then) == [put.body["id"]]
    assert await ids(known_at=then) == [], "known_at a time before it was recorded"
    assert await ids(as_of=then, known_at=put.body["stored_at"]) == [put.body["id"]]
    assert now.body["id"] in await ids(known_at=now.body["stored_at"])
    assert put.body["id"] not in await ids(known_at=now.body["stored_at"]), "not valid then"
    for field in ("as_of", "known_at"):
        for value in (-1, "yesterday"):
            out = await transport.call("list", {"agent_id": "A", field: value}, tok)
            assert not out.ok and out.code == "invalid_request", (field, value, out.body)
            assert field in str(out.body), out.body
