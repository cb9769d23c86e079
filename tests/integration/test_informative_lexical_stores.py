"""The full-text leg means the same in every store (issue 31): a word most of the recall's
scope holds ranks nothing, and the fusion weighs the full-text list by its best word's scope
idf (``core.informative``). Run on the reference store, SQLite and a real PostgreSQL
(pgserver), with vectors fixed by hand so the expected fused scores are exact: a store that
ranked by the name, or weighed a rare word's list less than fully, or a middling word's list
by anything but ``log(n/df)/log(10)``, gives other scores or another order."""

from __future__ import annotations

import math
import zlib
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memorywire.core.clock import FakeClock
from memorywire.core.informative import COMMON_SHARE, unit_weight
from memorywire.core.scoring import RRF_K
from memorywire.embed.function import FunctionEmbedder
from memorywire.store.memory import InMemoryStore
from memorywire.store.postgres import PostgresStore
from memorywire.store.sqlite import SqliteStore
from memorywire.testing import postgres as _pg
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio
pg_server = _pg.pg_server

DIM = 16
#: Ines's memories: every one holds her name; the answer to "What is Ines's trade?" (the
#: last) shares no content word with the question, is the longest and is written last, so
#: a list ranked by the name alone puts it last in every store (BM25 favours short texts;
#: ts_rank_cd and the reference store's overlap count tie, and ties go by time, then id).
FACTS = [
    "Ines bought bread.",
    "Ines went out.",
    "Ines fixed a squeaky door.",
    "Ines ran a marathon last spring.",
    "Ines is allergic to shellfish.",
    "Ines swam in the river.",
    "Ines read a novel by the river.",
    "Ines walked the old dog along the river.",
    "Ines has a brother called Rui who teaches chemistry.",
    "Ines works as a carpenter in Porto and builds oak cabinets for the shops nearby.",
]
ANSWER = len(FACTS) - 1
OTHER = ["Kofi plays the trumpet in a brass band.", "Kofi repaired his bicycle chain.",
         "Kofi cooked rice for his neighbours."]
EVENTS = ["The ferry left at noon.", "A parcel arrived.", "The power went off twice.",
          "Rain all afternoon.", "The neighbours had a party.", "A bus strike began.",
          "The library closed early.", "Snow fell overnight.", "The market moved squares.",
          "A new bakery opened.", "The tram line reopened.", "Fireworks over the bay."]
QUESTIONS = ["What is Ines's trade?", "Who is allergic to shellfish?",
             "What did Ines do by the river?"]


def _unit(i: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    v = np.zeros(DIM)
    v[i] = 1.0
    return v


def _vector(text: str) -> list[float]:
    return [float(x) for x in _direction(text)]


def _direction(text: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Every question points along axis 0; the answer sits at cosine 0.9 to it and Ines's
    other memory ``i`` at ``0.5 - 0.03 i``: the vector list is the answer, then the others
    in order (:func:`_vector_rank`)."""
    if text in QUESTIONS:
        return _unit(0)
    if text in FACTS:
        i = FACTS.index(text)
        c = 0.9 if i == ANSWER else 0.5 - 0.03 * i
        return c * _unit(0) + math.sqrt(1 - c * c) * _unit(i + 1)
    if text in OTHER:
        return _unit(12 + OTHER.index(text))
    # anything else (the episodes): a fixed direction off every question's axis
    off_axis: np.ndarray[Any, np.dtype[np.float64]] = np.random.default_rng(
        zlib.crc32(text.encode())).random(DIM) * (_unit(0) == 0)
    return off_axis


def _vector_rank(i: int) -> int:
    return 0 if i == ANSWER else i + 1


EMB = FunctionEmbedder(_vector, DIM)
#: Every ranking rule and floor off: what is left is the two lists and their fusion.
OFF: dict[str, Any] = dict(
    relevance_floor=-1.0, lexical_floor=-1.0, entity_gate=False, substance_weight=0.0,
    turn_weight=0.0, session_weight=0.0, subject_weight=0.0, subject_lexical_weight=0.0)


@pytest.fixture(params=["memory", "sqlite",
                        pytest.param("postgres", marks=pytest.mark.postgres)])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    kind = request.param
    s: Any
    if kind == "memory":
        s = InMemoryStore(EMB, FakeClock(), recall=replace(InMemoryStore.DEFAULT_RECALL, **OFF))
    elif kind == "sqlite":
        s = SqliteStore(tmp_path / "m.db", EMB, FakeClock(), recall=replace(
            SqliteStore.DEFAULT_RECALL, feedback_weight=0.0, tail_gap=None, **OFF))
    else:
        server: _pg.PgHandle = request.getfixturevalue("pg_server")
        s = PostgresStore(server.create_database(), EMB, FakeClock(),
                          recall=replace(PostgresStore.DEFAULT_RECALL, **OFF))
    try:
        for user, texts in (("ines", FACTS), ("kofi", OTHER)):
            for i, text in enumerate(texts):
                await s.remember(RememberRequest(agent_id="a", user_id=user, id=f"{user}{i}",
                                                 type=MemoryType.SEMANTIC, content=text))
        yield s
    finally:
        await s.aclose()


async def _hits(store: Any, query: str, **kw: Any) -> list[tuple[str, float]]:
    resp = await store.recall(RecallRequest(agent_id="a", user_id="ines", query=query,
                                            k=len(FACTS), **kw))
    return [(h.id, h.score) for h in resp.results]


def _rrf(rank: int, weight: float = 1.0) -> float:
    return weight / (RRF_K + rank)


async def test_the_name_every_memory_holds_does_not_rank_the_scope(store: Any) -> None:
    assert all("Ines" in t for t in FACTS) and len(FACTS) > 1 / COMMON_SHARE
    hits = await _hits(store, "What is Ines's trade?")
    # The vector list alone: the answer first, then the rest in cosine order, each scored
    # by its vector rank only (a name-ranked list would have added to every score, and
    # ranked the answer below the memories that are both near and short).
    assert [i for i, _ in hits] == [f"ines{i}" for i in (ANSWER, *range(ANSWER))]
    assert [s for _, s in hits] == pytest.approx([_rrf(r) for r in range(len(FACTS))],
                                                 rel=1e-9)


async def test_a_rare_word_counts_fully(store: Any) -> None:
    hits = await _hits(store, "Who is allergic to shellfish?")
    # ines4 is sixth by vector and first (alone) in full text, at full weight.
    assert hits[0][0] == "ines4"
    assert hits[0][1] == pytest.approx(_rrf(_vector_rank(4)) + _rrf(0, 1.0), rel=1e-9)
    assert unit_weight(1, len(FACTS)) == 1.0


async def test_a_middling_word_weighs_by_its_scope_idf(store: Any) -> None:
    weight = unit_weight(3, len(FACTS))  # "river": 3 of Ines's 10 memories
    assert 0.5 < weight < 0.55
    scores = dict(await _hits(store, "What did Ines do by the river?"))
    # The river memories, shortest first in every store's full-text order.
    for lexical_rank, i in enumerate((5, 6, 7)):
        assert scores[f"ines{i}"] == pytest.approx(
            _rrf(_vector_rank(i)) + _rrf(lexical_rank, weight), rel=1e-9)
    assert scores[f"ines{ANSWER}"] == pytest.approx(_rrf(0), rel=1e-9)


async def test_the_scope_is_what_the_recall_may_return(store: Any) -> None:
    """Counted in the recall's scope: with a dozen of Ines's episodes that do not name her,
    her name is in under half of her memories and ranks them again; asked for her semantic
    memories only, it is in all of them and ranks nothing."""
    for i, text in enumerate(EVENTS):
        await store.remember(RememberRequest(agent_id="a", user_id="ines", id=f"ep{i}",
                                             type=MemoryType.EPISODIC, content=text))
    question = "What is Ines's trade?"
    everything = await _hits(store, question)
    assert everything[0][0] == "ines0"  # near and short: the name's list lifts it
    semantic = await _hits(store, question, types=[MemoryType.SEMANTIC])
    assert [i for i, _ in semantic] == [f"ines{i}" for i in (ANSWER, *range(ANSWER))]
