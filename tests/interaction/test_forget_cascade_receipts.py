"""``cascade`` and the deletion receipt of a hard forget, over every transport that runs a forget
(MCP stages it instead: test_mcp_staging.py). Governance is on, so the server signs with the
key it keeps beside the governance database."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memorywire.governance.receipts import dump_receipt, verify_receipt
from memorywire.wire.validate import validate

from .conftest import World

pytestmark = pytest.mark.anyio


@pytest.fixture
def governed() -> bool:
    return True


@pytest.fixture(autouse=True)
def agents_commit(world: World) -> None:
    """This module tests what a carried-out hard forget and erase do, so agent tokens run
    them unreviewed here (``agent_review: []``); that by default they wait for a person is
    tests/security/test_finding32_agent_writes_wait_for_a_person.py."""
    gov = world.runtime.governed
    assert gov is not None
    gov.set_policies({"agent_review": []})


async def _remember(t: Any, tok: str, content: str, **extra: Any) -> str:
    out = await t.call("remember", {"agent_id": "A", "type": "semantic", "content": content,
                                    **extra}, tok)
    assert out.ok, out.body
    return str(out.body["id"])


async def _family(t: Any, tok: str) -> tuple[str, str, str, str]:
    seed = await _remember(t, tok, "The vault phrase is marmalade-8812")
    summ = await _remember(t, tok, "Summary: vault phrase marmalade-8812",
                           links=[{"id": seed, "type": "derived_from"}])
    dig = await _remember(t, tok, "Digest: marmalade-8812 and more",
                          links=[{"id": summ, "type": "derived_from"}])
    other = await _remember(t, tok, "The garden has three apple trees",
                            links=[{"id": seed, "type": "related"}])
    return seed, summ, dig, other


async def test_cascade_hard_forget_erases_descendants_and_returns_a_verifying_receipt(
    transport: Any, world: World
) -> None:
    tok = world.agent_a
    seed, summ, dig, other = await _family(transport, tok)
    out = await transport.call("forget", {"agent_id": "A", "ids": [seed], "hard_delete": True,
                                          "cascade": True}, tok)
    assert out.ok, out.body
    assert not validate("forget.response", out.body), out.body
    assert sorted(out.body["forgotten_ids"]) == sorted([seed, summ, dig])
    receipt = out.body["receipt"]
    assert sorted(receipt["erased"]["memory"]) == sorted([seed, summ, dig])
    assert receipt["actor"] == "a"
    raw = dump_receipt(receipt)
    assert verify_receipt(raw) == (True, "signature valid")
    tampered = raw.replace(seed.encode(), seed[:-1].encode() + b"X", 1)
    assert verify_receipt(tampered)[0] is False

    listed = await transport.call("list", {"agent_id": "A", "include_archived": True}, tok)
    assert [m["id"] for m in listed.body["memories"]] == [other]
    hits = await transport.call("recall", {"agent_id": "A", "query": "vault marmalade"}, tok)
    assert "marmalade" not in json.dumps(hits.body)


async def test_soft_cascade_by_filter_hides_descendants_and_signs_nothing(
    transport: Any, world: World
) -> None:
    tok = world.agent_a
    seed = await _remember(transport, tok, "poisoned note", metadata={"batch": "x"})
    child = await _remember(transport, tok, "derived note",
                            links=[{"id": seed, "type": "derived_from"}])
    out = await transport.call("forget", {"agent_id": "A", "filter": {"batch": "x"},
                                          "cascade": True}, tok)
    assert out.ok, out.body
    assert sorted(out.body["forgotten_ids"]) == sorted([seed, child])
    assert "receipt" not in out.body  # a soft forget erases nothing, so vouches for nothing


async def test_without_cascade_the_derived_memory_stays(transport: Any, world: World) -> None:
    tok = world.agent_a
    seed, summ, _dig, _ = await _family(transport, tok)
    out = await transport.call("forget", {"agent_id": "A", "ids": [seed], "hard_delete": True},
                               tok)
    assert out.ok and out.body["forgotten_ids"] == [seed], out.body
    assert out.body["receipt"]["erased"] == {"memory": [seed]}
    got = await transport.call("get", {"agent_id": "A", "id": summ}, tok)
    assert got.ok, got.body


async def test_erase_a_user_returns_a_verifying_receipt_for_exactly_that_users_memories(
    transport: Any, world: World
) -> None:
    tok = world.agent_a
    carol = [await _remember(transport, tok, f"carol's allergy note {i}", user_id="carol")
             for i in range(2)]
    dave = await _remember(transport, tok, "dave likes tea", user_id="dave")
    out = await transport.call("erase", {"agent_id": "A", "user_id": "carol",
                                         "reason": "GDPR art. 17"}, tok)
    assert out.ok, out.body
    assert not validate("erase.response", out.body), out.body
    assert out.body["pending_approval"] is False
    assert sorted(out.body["erased_ids"]) == sorted(carol)
    receipt = out.body["receipt"]
    assert sorted(receipt["erased"]["memory"]) == sorted(carol)
    assert receipt["actor"] == "a" and receipt["policy"] == "erase"
    assert receipt["details"]["user_id"] == "carol"
    raw = dump_receipt(receipt)
    assert verify_receipt(raw) == (True, "signature valid")
    i = raw.index(carol[0].encode())  # one flipped bit in an erased id breaks the signature
    flipped = raw[:i] + bytes([raw[i] ^ 0x01]) + raw[i + 1:]
    assert verify_receipt(flipped)[0] is False

    listed = await transport.call("list", {"agent_id": "A", "include_archived": True}, tok)
    assert [m["id"] for m in listed.body["memories"]] == [dave]
    again = await transport.call("erase", {"agent_id": "A", "user_id": "carol"}, tok)
    assert again.ok and again.body["erased_ids"] == [] and "receipt" not in again.body


@pytest.mark.parametrize("op", ["forget", "erase"])
async def test_a_staged_hard_forget_approved_later_stores_a_verifying_receipt(
    transport: Any, world: World, op: str
) -> None:
    gov = world.runtime.governed
    assert gov is not None
    gov.set_policies({"rules": [{"name": "forget-review", "match": {"operation": "forget"},
                                 "decision": "review"}]})
    tok = world.agent_a
    carol = await _remember(transport, tok, "carol's diagnosis note", user_id="carol")
    doc = ({"agent_id": "A", "ids": [carol], "hard_delete": True} if op == "forget"
           else {"agent_id": "A", "user_id": "carol"})
    out = await transport.call(op, doc, tok)
    assert out.ok and out.body["pending_approval"] is True, out.body
    assert "receipt" not in out.body  # nothing erased yet, so nothing vouched
    [item] = (await transport.call("approvals.list", {}, world.reviewer_a)).body["approvals"]
    done = await transport.call("approvals.approve", {"id": item["id"]}, world.reviewer_a)
    assert done.ok, done.body
    shown = await transport.call("approvals.get", {"id": item["id"]}, world.reviewer_a)
    receipt = shown.body["result"]["receipt"]
    assert receipt["erased"] == {"memory": [carol]} and receipt["policy"] == "approval"
    assert receipt["actor"] == "ra"  # the reviewer whose approval carried it out
    raw = dump_receipt(receipt)
    assert verify_receipt(raw) == (True, "signature valid")
    i = raw.index(carol.encode())
    assert verify_receipt(raw[:i] + bytes([raw[i] ^ 0x01]) + raw[i + 1:])[0] is False
    assert (await transport.call("get", {"agent_id": "A", "id": carol}, tok)).code == "not_found"


async def test_a_staged_soft_forget_approved_later_signs_nothing(
    transport: Any, world: World
) -> None:
    gov = world.runtime.governed
    assert gov is not None
    gov.set_policies({"rules": [{"name": "forget-review", "match": {"operation": "forget"},
                                 "decision": "review"}]})
    mid = await _remember(transport, world.agent_a, "a note to hide")
    out = await transport.call("forget", {"agent_id": "A", "ids": [mid]}, world.agent_a)
    assert out.ok and out.body["pending_approval"] is True, out.body
    [item] = (await transport.call("approvals.list", {}, world.reviewer_a)).body["approvals"]
    assert (await transport.call("approvals.approve", {"id": item["id"]}, world.reviewer_a)).ok
    shown = await transport.call("approvals.get", {"id": item["id"]}, world.reviewer_a)
    assert shown.body["status"] == "approved" and "receipt" not in shown.body["result"]


async def test_remote_python_client_erase_carries_the_receipt(world: World, asgi_app: Any) -> None:
    import httpx

    from memorywire.client import RemoteMemory

    remote = RemoteMemory("http://127.0.0.1", world.agent_a,
                          transport=httpx.ASGITransport(app=asgi_app))
    try:
        mid = (await remote.remember(agent_id="A", type="semantic", content="erin's address",
                                     user_id="erin")).id
        out = await remote.erase(agent_id="A", user_id="erin")
        assert out.erased_ids == [mid] and out.receipt is not None
        assert out.receipt["erased"] == {"memory": [mid]}
        assert verify_receipt(dump_receipt(out.receipt)) == (True, "signature valid")
    finally:
        await remote.aclose()
