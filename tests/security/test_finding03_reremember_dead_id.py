"""Finding 3: re-remembering a soft-forgotten (or archived, expired) id with the same content
answered 200 with the old timestamp while the memory stayed deleted — an acknowledged write
silently lost. Now a dead id is revived as a new write (``core.records.remember_action``):
a new ``stored_at``, visible again on every read path."""

from __future__ import annotations

import pytest

from tests.security.conftest import Caller, Rig, rest

pytestmark = pytest.mark.anyio

_DOC = {"agent_id": "A", "type": "semantic", "content": "The gate code is 1234.", "id": "g1",
        "confidence": 0.2}


async def _kill(rig: Rig, how: str) -> None:
    if how == "forget":
        out = await rest(rig, "forget", {"agent_id": "A", "ids": ["g1"]}, rig.agent)
        assert out.ok and out.body["forgotten_ids"] == ["g1"], out
    else:
        out = await rest(rig, "expire", {"agent_id": "A", "policy": {"confidence_below": 0.5},
                                         "action": "archive"}, rig.agent)
        assert out.ok and out.body["matched_count"] == 1, out


@pytest.mark.parametrize("how", ["forget", "archive"])
async def test_remembering_a_dead_id_again_brings_it_back(
    rig: Rig, call: Caller, how: str
) -> None:
    first = await call("remember", _DOC, rig.agent)
    assert first.ok, first
    await _kill(rig, how)
    assert await rig.gov.get("A", "g1") is None
    again = await call("remember", _DOC, rig.agent)
    assert again.ok and again.body["id"] == "g1", again
    assert again.body["stored_at"] > first.body["stored_at"]  # a new write, not a replay
    assert await rig.gov.get("A", "g1") is not None
    hits = await call("recall", {"agent_id": "A", "query": "gate code"}, rig.agent)
    assert hits.ok and [h["id"] for h in hits.body["results"]] == ["g1"]
