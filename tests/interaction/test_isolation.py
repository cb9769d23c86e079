"""Agent A's token aimed at agent B's memories, over every transport: zero leaks.

For every operation, the answer for "B's id" must equal the answer for "an id that never
existed" (same status, same body once timing fields are dropped), and B's memories must be
untouched afterwards.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Outcome, World

pytestmark = pytest.mark.anyio

MISSING = "00000000-0000-7000-8000-000000000000"
MISSING2 = "00000000-0000-7000-8000-000000000001"


def _norm(o: Outcome, asked: list[str]) -> tuple[bool, str, Any]:
    body = dict(o.body) if isinstance(o.body, dict) else o.body
    if isinstance(body, dict):
        body.pop("latency_ms", None)
        if isinstance(body.get("message"), str):
            # A message may echo the id the caller asked about; that is the only allowed diff.
            for i in asked:
                body["message"] = body["message"].replace(i, "<id>")
    return (o.ok, o.code, body)


async def _seed_b(t: Any, world: World) -> list[str]:
    ids = []
    for content in ("b secret alpha", "b secret beta"):
        out = await t.call(
            "remember",
            {
                "agent_id": "B",
                "type": "semantic",
                "content": content,
                "metadata": {"entity_name": f"ent-{content[-4:]}", "team": "b"},
                "confidence": 0.1,
            },
            world.agent_b,
        )
        assert out.ok, out.body
        ids.append(out.body["id"])
    return ids


async def _b_intact(t: Any, world: World, ids: list[str]) -> None:
    rec = await t.call("recall", {"agent_id": "B", "query": "b secret", "k": 10}, world.agent_b)
    assert rec.ok
    assert sorted(h["id"] for h in rec.body["results"]) == sorted(ids)
    assert {h["content"] for h in rec.body["results"]} == {"b secret alpha", "b secret beta"}


def _with_ids(doc: Any, ids: list[str], fake: list[str]) -> tuple[Any, Any]:
    """The same request aimed at B's ids and at ids that never existed."""
    import json

    text = json.dumps(doc)
    real, missing = text, text
    for i, (b, m) in enumerate(zip(ids, fake, strict=True)):
        real = real.replace(f"$B{i}", b)
        missing = missing.replace(f"$B{i}", m)
    return json.loads(real), json.loads(missing)


# Requests in A's scope that name B's ids/entities/filters: must act as if B did not exist.
PROBES: list[tuple[str, dict[str, Any]]] = [
    ("recall", {"agent_id": "A", "query": "b secret alpha", "k": 1000}),
    ("recall", {"agent_id": "A", "query": "b secret", "filter": {"team": "b"}}),
    ("forget", {"agent_id": "A", "ids": ["$B0", "$B1"]}),
    ("forget", {"agent_id": "A", "ids": ["$B0"], "hard_delete": True}),
    ("forget", {"agent_id": "A", "filter": {"team": "b"}, "hard_delete": True}),
    ("merge", {"agent_id": "A", "canonical": "$B0", "duplicates": ["$B1"]}),
    ("merge", {"agent_id": "A", "canonical": "ent-lpha", "duplicates": ["ent-beta"]}),
    ("expire", {"agent_id": "A", "policy": {"confidence_below": 0.5}}),
    ("remember", {"agent_id": "A", "type": "semantic", "content": "x", "id": "$B0"}),
]


@pytest.mark.parametrize(("op", "doc"), PROBES, ids=[f"{o}{i}" for i, (o, _) in enumerate(PROBES)])
async def test_other_tenant_is_indistinguishable_from_missing(
    transport: Any, world: World, op: str, doc: dict[str, Any]
) -> None:
    ids = await _seed_b(transport, world)
    real, missing = _with_ids(doc, ids, [MISSING, MISSING2])
    if op == "remember":
        # Writing under an id B holds must not reveal, overwrite or collide with B's row.
        out = await transport.call(op, real, world.agent_a)
        assert out.ok or out.code != "conflict", out.body
        await _b_intact(transport, world, ids)
        return
    aimed_at_b = await transport.call(op, real, world.agent_a)
    aimed_at_nothing = await transport.call(op, missing, world.agent_a)
    asked = [*ids, MISSING, MISSING2]
    assert _norm(aimed_at_b, asked) == _norm(aimed_at_nothing, asked)
    assert "b secret" not in str(aimed_at_b.body)
    await _b_intact(transport, world, ids)


@pytest.mark.parametrize("op", ["remember", "recall", "forget", "merge", "expire"])
async def test_naming_agent_b_is_refused_whatever_b_holds(
    transport: Any, world: World, op: str
) -> None:
    docs = {
        "remember": {"agent_id": "B", "type": "semantic", "content": "x"},
        "recall": {"agent_id": "B", "query": "b secret"},
        "forget": {"agent_id": "B", "ids": ["$B0"]},
        "merge": {"agent_id": "B", "canonical": "$B0", "duplicates": ["$B1"]},
        "expire": {"agent_id": "B", "policy": {"confidence_below": 0.5}},
    }
    probe, _ = _with_ids(docs[op], [MISSING, MISSING2], [MISSING, MISSING2])
    before = await transport.call(op, probe, world.agent_a)
    ids = await _seed_b(transport, world)
    real, _ = _with_ids(docs[op], ids, [MISSING, MISSING2])
    after = await transport.call(op, real, world.agent_a)
    assert after.code == "forbidden"
    assert (before.ok, before.code, before.status) == (after.ok, after.code, after.status)
    await _b_intact(transport, world, ids)


async def test_reviewer_of_a_cannot_see_b_audit_or_verify(transport: Any, world: World) -> None:
    out = await transport.call("audit.list", {"agent_id": "B"}, world.reviewer_a)
    assert out.code == "forbidden"
    out = await transport.call("audit.verify", {}, world.reviewer_a)
    assert out.code == "forbidden"
    out = await transport.call("approvals.approve", {"id": MISSING}, world.agent_a)
    assert not out.ok
