"""The time of asking (``asked_at`` on recall), once over every transport."""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.wire.validate import validate

from .conftest import World

pytestmark = pytest.mark.anyio

DAY = 86_400_000
#: Thursday 9 March 2023, 15:47 UTC: long before the server's clock.
ASKED = 1_678_376_820_000


async def _put(t: Any, tok: str, content: str, valid_from: int) -> str:
    out = await t.call("remember", {"agent_id": "A", "type": "episodic", "content": content,
                                    "valid_from": valid_from}, tok)
    assert out.ok, out.body
    return str(out.body["id"])


async def test_last_saturday_counts_from_the_time_of_asking(transport: Any,
                                                            world: World) -> None:
    tok = world.agent_a
    saturday = await _put(transport, tok, "Bought a necklace at the market",
                          ASKED - 5 * DAY)  # Saturday 4 March
    earlier = await _put(transport, tok, "My aunt gave me the necklace I got for my birthday",
                         ASKED - 60 * DAY)
    doc = {"agent_id": "A", "query": "Who gave me the necklace I got last Saturday?",
           "k": 5, "min_relevance": 0}
    plain = await transport.call("recall", doc, tok)
    assert plain.ok, plain.body
    assert [h["id"] for h in plain.body["results"]] == [earlier, saturday]
    asked = await transport.call("recall", {**doc, "asked_at": ASKED}, tok)
    assert asked.ok, asked.body
    assert not validate("recall.response", asked.body)
    assert [h["id"] for h in asked.body["results"]] == [saturday, earlier]


async def test_a_bad_time_of_asking_is_refused_by_name(transport: Any, world: World) -> None:
    for value in (-1, "last week", 1.5):
        out = await transport.call("recall", {"agent_id": "A", "query": "x",
                                              "asked_at": value}, world.agent_a)
        assert not out.ok and out.code == "invalid_request", (value, out.body)
        assert "asked_at" in str(out.body), out.body
