"""A scope about one person (one user's memories, each naming them or saying "The user"):
questions asked by meaning find their answer first, are never withheld because every memory
shares the subject, and ``relevance`` says which hit answers (``core.subject_gate``), on
SQLite, the in-memory store and PostgreSQL alike, with the default MiniLM model (the gate's
thresholds are that model's)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memorywire.embed import default_embedder
from memorywire.embed.base import Embedder
from memorywire.store.base import MemoryStore
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.testing import postgres as _pg
from memorywire.wire.models import RecallHit, RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio

pg_server = _pg.pg_server

FACTS = {
    "t1": "{S} works as a carpenter, building kitchen cabinets in a small workshop.",
    "t2": "{S} has a younger brother who teaches chemistry.",
    "t3": "{S} is allergic to shellfish.",
    "t4": "{S} picked up dry cleaning on Wednesday.",
    "t5": "{S} called {P} grandmother to wish her a happy birthday.",
    "t6": "{S} bought a new kettle at the hardware store on Monday.",
    "t7": "{S} took the tram to the dentist for a cleaning.",
    "t8": "{S} walked to work in the rain on Monday.",
    "t9": "{S} felt proud when a client cried with joy at a table from the workshop.",
    "t10": "{S} watered the plants on the balcony.",
}
#: (subject as a memory starts, its possessive, the subject as a question writes it)
PHRASINGS = {"name": ("Marta", "Marta's", "Marta"),
             "user": ("The user", "the user's", "the user")}


@pytest.fixture(scope="module")
def model() -> Embedder:
    return default_embedder()


@pytest.fixture(params=["sqlite", "memory", pytest.param("postgres", marks=pytest.mark.postgres)])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=sorted(PHRASINGS))
async def scope(request: pytest.FixtureRequest, kind: str, tmp_path: Path,
                model: Embedder) -> AsyncIterator[tuple[MemoryStore, str]]:
    subject, possessive, asked = PHRASINGS[request.param]
    store: MemoryStore
    if kind == "sqlite":
        store = SqliteStore(tmp_path / "facts.db", embedder=model)
    elif kind == "memory":
        store = InMemoryStore(model)
    else:
        from memorywire.store.postgres import PostgresStore

        handle: _pg.PgHandle = request.getfixturevalue("pg_server")
        store = PostgresStore(handle.create_database(), model)
    for mid, text in FACTS.items():
        await store.remember(RememberRequest(
            agent_id="a", user_id="u", type="semantic", id=mid,
            content=text.format(S=subject, P=possessive)))
    try:
        yield store, asked
    finally:
        await store.aclose()


async def _hits(scope: tuple[MemoryStore, str], question: str) -> list[RecallHit]:
    store, asked = scope
    got = await store.recall(RecallRequest(agent_id="a", user_id="u", k=5,
                                           query=question.replace("NAME", asked)))
    return got.results


@pytest.mark.parametrize(("question", "answer"), [
    ("How did NAME get to the tooth appointment?", "t7"),  # no content word shared
    ("Which sibling does NAME have?", "t2"),
    ("What food must NAME avoid?", "t3"),
])
async def test_a_question_by_meaning_finds_its_answer_first_and_says_so(
        scope: tuple[MemoryStore, str], question: str, answer: str) -> None:
    hits = await _hits(scope, question)
    assert hits[0].id == answer
    assert hits[0].relevance >= 0.5
    # the rest share only the subject: they do not read as answers
    assert all(h.relevance < 0.5 for h in hits[1:])


async def test_an_answer_sharing_only_the_subject_is_not_withheld(
        scope: tuple[MemoryStore, str]) -> None:
    # every memory holds the subject, so the cosine floor would cut the answer (cosine ~0.3)
    assert "t1" in [h.id for h in await _hits(scope, "What is NAME's trade?")]


@pytest.mark.parametrize("question", ["What is NAME's blood type?",
                                      "What is NAME's favourite colour?"])
async def test_a_topic_never_stored_reads_as_no_answer(
        scope: tuple[MemoryStore, str], question: str) -> None:
    hits = await _hits(scope, question)
    assert all(h.relevance < 0.5 for h in hits)
    assert [h.relevance for h in hits] == sorted((h.relevance for h in hits), reverse=True)


async def test_the_subject_alone_is_not_judged(scope: tuple[MemoryStore, str]) -> None:
    # nothing asked beyond the subject: the floors decide as for any question
    store, asked = scope
    got = await store.recall(RecallRequest(agent_id="a", user_id="u", k=5,
                                           query=f"Tell me about {asked}"))
    assert got.results  # every memory is about the subject


async def test_another_users_memories_leave_the_scope_as_it_was(
        scope: tuple[MemoryStore, str]) -> None:
    # The subject, its common words and the masked question's median are the recall's scope
    # (one user), not the agent's: another user's memories, none about the subject, change
    # nothing.
    store, _ = scope
    before = [(h.id, h.relevance) for q in ("How did NAME get to the tooth appointment?",
                                             "What is NAME's blood type?")
              for h in await _hits(scope, q)]
    for i, text in enumerate(["Piotr repairs bicycles.", "Piotr has a dentist phobia.",
                              "Piotr took a bus to the clinic.", "Piotr's blood type is O.",
                              "Piotr owns two cats.", "Piotr likes rainy days."]):
        await store.remember(RememberRequest(agent_id="a", user_id="v", type="semantic",
                                             id=f"v{i}", content=text))
    after = [(h.id, h.relevance) for q in ("How did NAME get to the tooth appointment?",
                                            "What is NAME's blood type?")
             for h in await _hits(scope, q)]
    assert [i for i, _ in after] == [i for i, _ in before]
    assert [r for _, r in after] == pytest.approx([r for _, r in before], abs=1e-3)
