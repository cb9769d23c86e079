"""Finding 6 (dispatcher side): a user-scoped token learned whether a guessed content
matched another user's memory by id (200 when it matched, 409 when not), and the 200
acknowledged a write it does not own. Now an id held under another user is one answer,
``conflict``, whatever the content, and the other user's memory is untouched."""

from __future__ import annotations

import pytest

from tests.security.conftest import Caller, Rig

pytestmark = pytest.mark.anyio


def _rem(content: str, user: str) -> dict[str, str]:
    return {"agent_id": "A", "user_id": user, "type": "semantic", "content": content, "id": "m1"}


async def test_guessing_another_users_content_by_id_gets_one_answer(
    rig: Rig, call: Caller
) -> None:
    owned = await call("remember", _rem("PIN is 4711", "u2"), rig.user2)
    assert owned.ok, owned
    right = await call("remember", _rem("PIN is 4711", "u1"), rig.user1)
    wrong = await call("remember", _rem("PIN is 0000", "u1"), rig.user1)
    assert (right.status, right.code) == (wrong.status, wrong.code) == (409, "conflict")
    assert right.body["message"] == wrong.body["message"]
    held = await rig.gov.get("A", "m1")
    assert held is not None and held.user_id == "u2"
    mine = await call("recall", {"agent_id": "A", "user_id": "u1", "query": "PIN"}, rig.user1)
    assert mine.ok and mine.body["results"] == []


async def test_the_owner_may_still_repeat_its_own_write(rig: Rig, call: Caller) -> None:
    first = await call("remember", _rem("PIN is 4711", "u2"), rig.user2)
    again = await call("remember", _rem("PIN is 4711", "u2"), rig.user2)
    assert first.ok and again.ok and again.body["id"] == "m1"
