"""The full-text leg carries information only (issue 31): a word held by most of a recall's
scope (the user's name in a per-user scope, "user" in mem0-style memories) ranks nothing, so
a question that shares only that word with the memories is ranked by meaning alone, exactly
as the vector list ranks it; a word that tells the memories apart still ranks them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from memorywire.core.clock import FakeClock
from memorywire.core.relevance import ordered
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.sqlite import SqliteStore
from memorywire.store.sqlite.search import COMMON_SHARE
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio
EMB = HashingEmbedder(64)
FACTS = ["Marta works as a carpenter in Porto.", "Marta is allergic to shellfish.",
         "Marta ran a marathon last spring.", "Marta bought bread.", "Marta went out.",
         "Marta's brother Rui teaches chemistry at a secondary school nearby.",
         "Marta walked the dog along the river before breakfast on Sunday.",
         "Marta fixed a squeaky door."]
OTHER = ["Kofi plays the trumpet in a brass band.", "Kofi repaired his bicycle chain."]


async def _store(tmp_path: Path) -> SqliteStore:
    settings = replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0, lexical_floor=-1.0,
                       entity_gate=False, feedback_weight=0.0, substance_weight=0.0,
                       turn_weight=0.0, session_weight=0.0, subject_weight=0.0,
                       subject_lexical_weight=0.0)
    store = SqliteStore(tmp_path / "m.db", EMB, FakeClock(), recall=settings)
    for user, texts in (("marta", FACTS), ("kofi", OTHER)):
        for i, text in enumerate(texts):
            await store.remember(RememberRequest(agent_id="a", user_id=user, id=f"{user}{i}",
                                                 type=MemoryType.SEMANTIC, content=text))
    return store


async def _ranked(store: SqliteStore, query: str) -> list[str]:
    resp = await store.recall(RecallRequest(agent_id="a", user_id="marta", query=query, k=8))
    return [h.id for h in resp.results]


def _by_cosine(query: str) -> list[str]:
    sims = EMB.embed(FACTS) @ EMB.embed([query])[0]
    return [f"marta{i}" for i in np.lexsort((np.arange(len(FACTS)), -sims))]


async def test_a_word_every_memory_of_the_scope_holds_ranks_nothing(tmp_path: Path) -> None:
    assert sum("Marta" in t for t in FACTS) > COMMON_SHARE * len(FACTS)
    store = await _store(tmp_path)
    try:
        # "river" tells one memory apart (it ranks first either way); "Marta" would rank
        # the other seven shortest first and reorder the vector list's tail.
        query = "What did Marta do before the walk on the river?"
        assert await _ranked(store, query) == _by_cosine(query)
    finally:
        await store.aclose()


async def test_a_word_that_tells_the_memories_apart_still_ranks_them(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        ranked = await _ranked(store, "Who did Marta see at the secondary school?")
        assert ranked[0] == "marta5"
    finally:
        await store.aclose()


def test_relevance_reads_in_the_answers_order() -> None:
    assert ordered([0.9, 0.95, None, 0.4, 0.6]) == [0.9, 0.9, None, 0.4, 0.4]
    assert ordered([]) == []
