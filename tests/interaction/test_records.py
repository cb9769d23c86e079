"""get, list, update, history and erase over every transport, without governance."""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.wire.validate import validate

from .conftest import World

pytestmark = pytest.mark.anyio

MISSING = "00000000-0000-7000-8000-000000000000"


async def _remember(t: Any, token: str, agent: str, content: str, **extra: Any) -> str:
    out = await t.call(
        "remember", {"agent_id": agent, "type": "semantic", "content": content, **extra}, token
    )
    assert out.ok, out.body
    return str(out.body["id"])


async def _list_all(t: Any, token: str, doc: dict[str, Any]) -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        page = await t.call("list", {**doc, **({"cursor": cursor} if cursor else {})}, token)
        assert page.ok, page.body
        assert not validate("list.response", page.body)
        ids += [m["id"] for m in page.body["memories"]]
        cursor = page.body["next_cursor"]
        if cursor is None:
            return ids


async def test_get_returns_the_stored_record(transport: Any, world: World) -> None:
    mid = await _remember(transport, world.agent_a, "A", "Carol is vegetarian",
                          user_id="carol", metadata={"topic": "diet"})
    out = await transport.call("get", {"agent_id": "A", "id": mid}, world.agent_a)
    assert out.ok and not validate("get.response", out.body), out.body
    rec = out.body["memory"]
    assert (rec["id"], rec["content"], rec["user_id"], rec["metadata"]) == (
        mid, "Carol is vegetarian", "carol", {"topic": "diet"}
    )
    other_user = await transport.call(
        "get", {"agent_id": "A", "id": mid, "user_id": "dave"}, world.agent_a
    )
    assert other_user.code == "not_found"


async def test_list_pages_with_an_opaque_cursor_and_filters(transport: Any, world: World) -> None:
    ids = [
        await _remember(transport, world.agent_a, "A", f"fact {i}",
                        metadata={"team": "red" if i % 2 else "blue"})
        for i in range(5)
    ]
    whole = await transport.call("list", {"agent_id": "A"}, world.agent_a)
    assert whole.ok and whole.body["next_cursor"] is None
    order = [m["id"] for m in whole.body["memories"]]  # oldest first; same-ms ties by id
    assert sorted(order) == sorted(ids)
    first = await transport.call("list", {"agent_id": "A", "limit": 2}, world.agent_a)
    assert first.ok and [m["id"] for m in first.body["memories"]] == order[:2]
    assert isinstance(first.body["next_cursor"], str)
    assert await _list_all(transport, world.agent_a, {"agent_id": "A", "limit": 2}) == order
    red = await _list_all(transport, world.agent_a, {"agent_id": "A", "filter": {"team": "red"}})
    assert sorted(red) == sorted([ids[1], ids[3]])
    none = await transport.call("list", {"agent_id": "A", "types": ["episodic"]}, world.agent_a)
    assert none.ok and none.body == {"memories": [], "next_cursor": None}
    bad = await transport.call("list", {"agent_id": "A", "cursor": "%%%"}, world.agent_a)
    assert bad.code == "invalid_request" and "cursor" in bad.body["message"]


async def test_update_changes_content_and_recall_finds_the_new_text(
    transport: Any, world: World
) -> None:
    mid = await _remember(transport, world.agent_a, "A", "Carol is vegetarian",
                          metadata={"topic": "diet", "stale": True})
    out = await transport.call(
        "update",
        {"agent_id": "A", "id": mid, "content": "Carol eats only kelp",
         "metadata": {"checked": True, "stale": None}, "confidence": 0.5},
        world.agent_a,
    )
    assert out.ok and not validate("update.response", out.body), out.body
    rec = out.body["memory"]
    assert rec["content"] == "Carol eats only kelp" and rec["confidence"] == 0.5
    assert rec["metadata"] == {"topic": "diet", "checked": True}
    assert rec["updated_at"] >= rec["created_at"]
    hits = await transport.call("recall", {"agent_id": "A", "query": "kelp"}, world.agent_a)
    assert hits.ok and [h["id"] for h in hits.body["results"]] == [mid]
    empty = await transport.call("update", {"agent_id": "A", "id": mid}, world.agent_a)
    assert empty.code == "invalid_request"
    typed = await transport.call(
        "update", {"agent_id": "A", "id": mid, "sentiment": "positive"}, world.agent_a
    )
    assert typed.code == "invalid_request" and "sentiment" in typed.body["message"]
    gone = await transport.call(
        "update", {"agent_id": "A", "id": MISSING, "content": "x"}, world.agent_a
    )
    assert gone.code == "not_found"


async def test_history_without_governance_says_what_is_missing(
    transport: Any, world: World
) -> None:
    mid = await _remember(transport, world.agent_a, "A", "a fact")
    out = await transport.call("history", {"agent_id": "A", "id": mid}, world.agent_a)
    assert out.code == "capability_missing" and "governance" in out.body["message"]


async def test_erase_a_user_removes_only_that_users_memories(
    transport: Any, world: World
) -> None:
    carol = [await _remember(transport, world.agent_a, "A", f"carol {i}", user_id="carol")
             for i in range(3)]
    dave = await _remember(transport, world.agent_a, "A", "dave likes tea", user_id="dave")
    out = await transport.call(
        "erase", {"agent_id": "A", "user_id": "carol", "reason": "GDPR"}, world.agent_a
    )
    assert out.ok and not validate("erase.response", out.body), out.body
    assert sorted(out.body["erased_ids"]) == sorted(carol)
    assert out.body["pending_approval"] is False
    assert "receipt" not in out.body  # no governance, no signing_key: nothing signs
    assert await _list_all(transport, world.agent_a, {"agent_id": "A"}) == [dave]
    for mid in carol:
        assert (await transport.call("get", {"agent_id": "A", "id": mid}, world.agent_a)
                ).code == "not_found"
    again = await transport.call("erase", {"agent_id": "A", "user_id": "carol"}, world.agent_a)
    assert again.ok and again.body["erased_ids"] == []


async def test_another_agents_memories_look_missing_and_cannot_be_erased(
    transport: Any, world: World
) -> None:
    b_id = await _remember(transport, world.agent_b, "B", "b secret")
    for op, extra in (("get", {}), ("update", {"content": "pwned"})):
        real = await transport.call(op, {"agent_id": "A", "id": b_id, **extra}, world.agent_a)
        fake = await transport.call(op, {"agent_id": "A", "id": MISSING, **extra}, world.agent_a)
        assert (real.ok, real.code) == (fake.ok, fake.code) == (False, "not_found")
        assert real.body["message"].replace(b_id, "<id>") == fake.body["message"].replace(
            MISSING, "<id>"
        )
    for op, doc in (
        ("get", {"agent_id": "B", "id": b_id}),
        ("list", {"agent_id": "B"}),
        ("update", {"agent_id": "B", "id": b_id, "content": "pwned"}),
        ("erase", {"agent_id": "B"}),
    ):
        out = await transport.call(op, doc, world.agent_a)
        assert out.code == "forbidden", (op, out.body)
    still = await transport.call("get", {"agent_id": "B", "id": b_id}, world.agent_b)
    assert still.ok and still.body["memory"]["content"] == "b secret"
    # A reviewer reads but never writes.
    assert (await transport.call("erase", {"agent_id": "A"}, world.reviewer_a)).code == "forbidden"


async def test_a_user_scoped_token_sees_and_erases_only_its_user(
    transport: Any, world: World
) -> None:
    carol_token, _ = world.tokens.create(
        role="agent", agent_ids=["A"], user_ids=["carol"], name="carol-app"
    )
    mine = await _remember(transport, world.agent_a, "A", "carol likes tea", user_id="carol")
    dave = await _remember(transport, world.agent_a, "A", "dave likes coffee", user_id="dave")
    listed = await transport.call("list", {"agent_id": "A", "user_id": "carol"}, carol_token)
    assert listed.ok and [m["id"] for m in listed.body["memories"]] == [mine]
    hidden = await transport.call("get", {"agent_id": "A", "id": dave, "user_id": "carol"},
                                  carol_token)
    assert hidden.code == "not_found"
    # Without user_id the call is refused, or (MCP fills user_id from the token) scoped to carol.
    unnamed = await transport.call("list", {"agent_id": "A"}, carol_token)
    assert unnamed.code == "forbidden" or [m["id"] for m in unnamed.body["memories"]] == [mine]
    for op, doc in (
        ("get", {"agent_id": "A", "id": dave, "user_id": "dave"}),
        ("erase", {"agent_id": "A"}),  # last: over MCP erase is staged, so the test stops here
        ("erase", {"agent_id": "A", "user_id": "dave"}),
    ):
        out = await transport.call(op, doc, carol_token)
        assert out.code == "forbidden", (op, out.body)
    still = await transport.call("get", {"agent_id": "A", "id": dave}, world.agent_a)
    assert still.ok


async def test_update_with_supersedes_replaces_the_old_memory(
    transport: Any, world: World
) -> None:
    """The rule of remember's ``supersedes``, sent on update: the old memory leaves default
    recall, keeps its content with superseded_by, and the edge is recorded."""
    old = await _remember(transport, world.agent_a, "A", "Carol lives in Lisbon")
    new = await _remember(transport, world.agent_a, "A", "Carol lives in Porto")
    out = await transport.call(
        "update", {"agent_id": "A", "id": new, "supersedes": [old], "reason": "moved"},
        world.agent_a,
    )
    assert out.ok and not validate("update.response", out.body), out.body
    assert {"id": old, "type": "supersedes"} in out.body["memory"]["links"]
    ask = {"agent_id": "A", "query": "where does Carol live", "k": 5}
    now = await transport.call("recall", ask, world.agent_a)
    assert [h["id"] for h in now.body["results"]] == [new]
    both = await transport.call("recall", {**ask, "include_superseded": True}, world.agent_a)
    assert [(h["id"], h.get("superseded_by")) for h in both.body["results"]] == [
        (new, None), (old, new)]
    unknown = await transport.call(
        "update", {"agent_id": "A", "id": new, "supersedes": [MISSING]}, world.agent_a)
    assert unknown.code == "not_found"
    itself = await transport.call(
        "update", {"agent_id": "A", "id": new, "supersedes": [new]}, world.agent_a)
    assert itself.code == "invalid_request"
