"""Duplicates on write: the pure rules (``core.duplicates``), the shared write path's answers
(``store.duplicates`` through ``remember_in_time``) on the embedded stores, and the router
passing the report on. Every backend's behaviour is in the conformance scenarios."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memorywire.core.clock import FakeClock
from memorywire.core.duplicates import (
    NEAR_DUPLICATE_COSINE,
    content_key,
    likeness,
    near_duplicates,
    same_metadata,
)
from memorywire.embed.hashing import HashingEmbedder
from memorywire.router import MemoryRouter
from memorywire.store.base import MemoryStore
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RememberRequest

pytestmark = pytest.mark.anyio
S = MemoryType.SEMANTIC


@pytest.mark.parametrize(("a", "b"), [
    ("The user is vegan.", "the USER  is\tvegan."),
    ("Café au lait", "Cafe\u0301 au lait"),  # NFC: composed and combining accents are one
    ("Straße", "STRASSE"),  # case folding, not lower-casing
    ("  padded ", "padded"),
])
def test_content_key_normalises_case_space_and_unicode(a: str, b: str) -> None:
    assert content_key(S, a) == content_key(S, b)


def test_content_key_keeps_punctuation_and_procedures_exact() -> None:
    assert content_key(S, "green tea.") != content_key(S, "green tea!")
    proc = '{"name": "Brew"}'
    assert content_key(MemoryType.PROCEDURAL, proc) != content_key(MemoryType.PROCEDURAL,
                                                                    proc.lower())


def test_likeness_splits_identical_from_same_words() -> None:
    rows = [("a", "The user likes green tea."), ("b", "the user likes GREEN tea!"),
            ("c", "The user likes tea."), ("d", "THE USER LIKES GREEN TEA.")]
    like = likeness(S, "The user likes green tea.", rows)
    assert like.identical == ["a", "d"] and like.same_words == ["b"]
    assert likeness(S, "...", [("x", "!!!")]).same_words == [], "no words, no likeness"
    assert likeness(MemoryType.PROCEDURAL, '{"a": 1}', [("p", '{"a": 1}')]).identical == ["p"]


def test_near_duplicates_rank_identical_words_and_meaning_and_skip() -> None:
    like = likeness(S, "The user likes green tea.",
                    [("same", "the user likes green tea."), ("words", "The user likes green tea!"),
                     ("close", "The user likes green tea a lot."), ("far", "Lisbon is sunny.")])
    cos = {"same": 1.0, "words": 0.96, "close": NEAR_DUPLICATE_COSINE + 0.01, "far": 0.2}
    assert near_duplicates(like, cos) == [("same", 1.0), ("close", 0.96), ("words", 0.96)]
    assert near_duplicates(like, None) == [("same", 1.0), ("words", 1.0)]
    assert near_duplicates(like, cos, skip=["same", "close"]) == [("words", 0.96)]
    assert near_duplicates(like, {"far": NEAR_DUPLICATE_COSINE - 0.001}) == [
        ("same", 1.0), ("words", 1.0)]


def test_same_metadata_treats_empty_as_none_and_compares_values() -> None:
    assert same_metadata(None, {}) and same_metadata({"s": 1}, {"s": 1})
    assert not same_metadata({"s": 1}, {"s": 2}) and not same_metadata(None, {"s": 1})


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryStore]:
    clock = FakeClock(1_000_000)
    s: MemoryStore = (InMemoryStore(embedder=HashingEmbedder(), clock=clock)
                      if request.param == "memory"
                      else SqliteStore(tmp_path / "d.db", embedder=HashingEmbedder(), clock=clock))
    yield s
    await s.aclose()


def _req(content: str, **kw: object) -> RememberRequest:
    return RememberRequest.model_validate({"agent_id": "a", "user_id": "u", "type": "semantic",
                                           "content": content, **kw})


async def test_typed_fields_and_validity_take_part_in_the_metadata(store: MemoryStore) -> None:
    first = await store.remember(_req("Felt calm at the lake.", type="emotional", valence=0.5))
    other = await store.remember(_req("Felt calm at the lake.", type="emotional", valence=0.6))
    same = await store.remember(_req("felt calm at the lake.", type="emotional",
                                     metadata={"valence": 0.5}))
    assert other.id != first.id and same.id == first.id and same.deduplicated
    dated = await store.remember(_req("Lived in Rome.", valid_from=1_000_000 - 500_000))
    undated = await store.remember(_req("Lived in Rome."))
    again = await store.remember(_req("lived in rome.", valid_from=1_000_000 - 500_000))
    assert undated.id != dated.id and again.id == dated.id and again.deduplicated


async def test_a_write_with_supersedes_is_never_a_repeat(store: MemoryStore) -> None:
    """It changes other memories, so it is stored as asked, beside the copy it names."""
    tea = await store.remember(_req("The user likes tea."))
    coffee = await store.remember(_req("The user likes coffee."))
    resp = await store.remember(_req("The user likes tea.", supersedes=[coffee.id]))
    assert resp.id != tea.id and not resp.deduplicated
    assert [n.id for n in resp.near_duplicates or []] == [tea.id]


async def test_a_repeat_answer_carries_no_conflicts(store: MemoryStore) -> None:
    await store.remember(_req("The user's favourite airline is KLM."))
    klm = await store.remember(_req("The user's favourite airline is Ryanair."))
    again = await store.remember(_req("the user's favourite airline is ryanair."))
    assert again.id == klm.id and again.conflicts is None and again.near_duplicates is None


async def test_the_router_passes_near_duplicates_on() -> None:
    """A router names every write's id, so a child stores it and reports the copy."""
    child = InMemoryStore(embedder=HashingEmbedder(), clock=FakeClock(1_000_000))
    router = MemoryRouter([child])
    first = await router.remember(_req("The user likes tea."))
    again = await router.remember(_req("The user likes tea."))
    assert again.id != first.id and not again.deduplicated
    assert [n.id for n in again.near_duplicates or []] == [first.id]
    await router.aclose()
