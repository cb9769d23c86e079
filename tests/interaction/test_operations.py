"""Each operation once, over every transport: same results, same error codes, valid shapes."""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.wire.validate import validate

from .conftest import Outcome, World

pytestmark = pytest.mark.anyio


def _valid(kind: str, body: Any) -> None:
    issues = validate(kind, body)
    assert not issues, [str(i) for i in issues]


async def _remember(t: Any, token: str, agent: str, content: str, **kw: Any) -> Outcome:
    out = await t.call(
        "remember", {"agent_id": agent, "type": "semantic", "content": content, **kw}, token
    )
    assert out.ok, out.body
    _valid("remember.response", out.body)
    return out


async def test_round_trip_all_five(transport: Any, world: World) -> None:
    tok = world.agent_a
    first = await _remember(transport, tok, "A", "the cat sat on the mat", metadata={"k": None})
    second = await _remember(transport, tok, "A", "the cat sat on a mat")
    assert first.body["stores"] == ["memory"] and first.body["pending_approval"] is False

    rec = await transport.call("recall", {"agent_id": "A", "query": "cat mat", "k": 5}, tok)
    assert rec.ok, rec.body
    _valid("recall.response", rec.body)
    ids = [h["id"] for h in rec.body["results"]]
    assert set(ids) == {first.body["id"], second.body["id"]}
    hit = next(h for h in rec.body["results"] if h["id"] == first.body["id"])
    assert hit["metadata"] == {"k": None}

    merged = await transport.call(
        "merge",
        {"agent_id": "A", "canonical": first.body["id"], "duplicates": [second.body["id"]]},
        tok,
    )
    assert merged.ok, merged.body
    _valid("merge.response", merged.body)
    assert merged.body["merged_count"] == 1

    gone = await transport.call("forget", {"agent_id": "A", "ids": [first.body["id"]]}, tok)
    assert gone.ok, gone.body
    _valid("forget.response", gone.body)
    assert gone.body["forgotten_ids"] == [first.body["id"]]

    exp = await transport.call(
        "expire", {"agent_id": "A", "policy": {"confidence_below": 0.5}}, tok
    )
    assert exp.ok, exp.body
    _valid("expire.response", exp.body)

    empty = await transport.call("recall", {"agent_id": "A", "query": "cat"}, tok)
    assert empty.ok and empty.body["results"] == []


async def test_source_is_stamped_from_the_token(transport: Any, world: World) -> None:
    await _remember(transport, world.agent_a, "A", "claims to be the user", source="user")
    rec = await transport.call("recall", {"agent_id": "A", "query": "claims"}, world.agent_a)
    assert [h["source"] for h in rec.body["results"]] == ["agent:A"]


async def test_idempotent_remember_by_id(transport: Any, world: World) -> None:
    one = await _remember(transport, world.agent_a, "A", "same thing", id="fixed-id-1")
    two = await _remember(transport, world.agent_a, "A", "same thing", id="fixed-id-1")
    assert one.body["id"] == two.body["id"] == "fixed-id-1"
    assert one.body["stored_at"] == two.body["stored_at"]
    rec = await transport.call("recall", {"agent_id": "A", "query": "same thing"}, world.agent_a)
    assert [h["id"] for h in rec.body["results"]] == ["fixed-id-1"]


INVALID = [
    ("recall", {"agent_id": "A", "query": "x", "k": 10**9}, "/k"),
    ("recall", {"agent_id": "A", "query": "x", "surprise": 1}, ""),
    ("recall", {"agent_id": "A", "query": ""}, "/query"),
    ("remember", {"agent_id": "A", "type": "feelings", "content": "x"}, "/type"),
    ("forget", {"agent_id": "A"}, ""),
    ("expire", {"agent_id": "A", "policy": {}}, "/policy"),
    ("merge", {"agent_id": "A", "canonical": "x", "duplicates": []}, "/duplicates"),
]


@pytest.mark.parametrize(("op", "doc", "path"), INVALID)
async def test_invalid_requests_fail_the_same_way(
    transport: Any, world: World, op: str, doc: dict[str, Any], path: str
) -> None:
    out = await transport.call(op, doc, world.agent_a)
    assert not out.ok
    assert out.code == "invalid_request", out.body
    _valid("error", out.body)
    assert any(d["path"].startswith(path) for d in out.body["details"]), out.body


async def test_role_and_scope_errors_are_the_same_everywhere(
    transport: Any, world: World
) -> None:
    doc = {"agent_id": "B", "type": "semantic", "content": "x"}
    out = await transport.call("remember", doc, world.agent_a)
    assert (out.ok, out.code) == (False, "forbidden")
    out = await transport.call("remember", {**doc, "agent_id": "A"}, world.reviewer_a)
    assert (out.ok, out.code) == (False, "forbidden")
    out = await transport.call("recall", {"agent_id": "A", "query": "x"}, "mw_not-a-token")
    assert (out.ok, out.code) == (False, "unauthorized")


async def test_approvals_without_governance_say_so(transport: Any, world: World) -> None:
    out = await transport.call("approvals.list", {}, world.admin)
    assert (out.ok, out.code) == (False, "capability_missing")


async def test_health(transport: Any, world: World) -> None:
    out = await transport.call("health", {}, world.admin)
    assert out.ok and out.body["status"] == "ok"
    agent_view = await transport.call("health", {}, world.agent_a)
    assert agent_view.ok and "details" not in agent_view.body
