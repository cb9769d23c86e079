"""The detector's meaning rule: paraphrased updates that share no slot word are caught from
the vectors the store already holds, and look-alike notes about other slots are not."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from memorywire.core.clock import FakeClock
from memorywire.core.contradiction import find_conflicts
from memorywire.embed import MiniLMEmbedder, Vectors
from memorywire.store.sqlite import SqliteStore
from memorywire.store.timeline import conflicts_for
from memorywire.wire.models import MemoryType, RememberRequest

ISP = "The user's internet provider is Vodafone."
BROADBAND = "The user's broadband comes from Ziggo now."


def _ids(new: str, stored: dict[str, str], closeness: dict[str, float] | None) -> list[str]:
    return [c.id for c in find_conflicts(new, list(stored.items()), closeness=closeness)]


def test_a_paraphrase_sharing_no_slot_word_is_caught_by_meaning() -> None:
    stored = {"isp": ISP, "cats": "The user has 2 cats."}
    assert _ids(BROADBAND, stored, None) == []  # the word rules alone cannot see it
    found = find_conflicts(BROADBAND, list(stored.items()),
                           closeness={"isp": 0.55, "cats": 0.2})
    assert [c.id for c in found] == ["isp"]
    assert found[0].similarity == 0.55
    assert "vodafone → ziggo" in found[0].why


def test_only_the_closest_memory_is_named() -> None:
    stored = {"isp": ISP, "browser": "The user browses the web with Firefox."}
    assert _ids(BROADBAND, stored, {"isp": 0.6, "browser": 0.45}) == ["isp"]


def test_without_a_change_cue_more_closeness_is_needed() -> None:
    stored = {"boss": "The user's manager is Karen."}
    plain = "Peter is the user's boss."
    assert _ids(plain, stored, {"boss": 0.4}) == []
    assert _ids(plain, stored, {"boss": 0.55}) == ["boss"]
    assert _ids("Peter is the user's boss now.", stored, {"boss": 0.4}) == ["boss"]


@pytest.mark.parametrize(("old", "new"), [
    # one template, the slot words swapped: another slot, however close the vectors
    ("The user's dentist name is Berlin.", "The user's bank name is Vienna."),
    ("The user works at Nokia.", "The user's phone is a Pixel 8."),
    # another kind of value
    ("The user has 3 children.", "The user now drives a Volvo."),
    # the same value said again, or added to
    ("The user's internet provider is Ziggo.", BROADBAND),
    ("The user plays the piano.", "The user also plays the guitar now."),
])
def test_close_neighbours_that_are_not_a_changed_value(old: str, new: str) -> None:
    assert _ids(new, {"old": old}, {"old": 0.8}) == []


def test_a_value_opening_the_sentence_is_read_as_the_value() -> None:
    found = find_conflicts("Radiohead is the user's top artist now.",
                           [("band", "The user's favourite band is Abba.")],
                           closeness={"band": 0.5})
    assert [c.id for c in found] == ["band"]
    assert "abba → radiohead" in found[0].why


class Counting:
    """The real model (its own cache off), counting the texts it embeds: the meaning rule
    must not cost a remember a second model call."""

    def __init__(self, model: MiniLMEmbedder) -> None:
        self.model, self.texts = model, 0
        self.name, self.dim = model.name, model.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts += len(texts)
        return self.model.embed(texts)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> MiniLMEmbedder:
    return MiniLMEmbedder(cache_dir=tmp_path_factory.mktemp("mw-cache"), cache_entries=0)


def _req(text: str) -> RememberRequest:
    return RememberRequest(agent_id="a", user_id="u", type=MemoryType.SEMANTIC, content=text)


@pytest.mark.anyio
async def test_sqlite_reports_a_paraphrased_update_from_stored_vectors(
        tmp_path: Path, model: MiniLMEmbedder) -> None:
    counting = Counting(model)
    store = SqliteStore(tmp_path / "s.db", embedder=counting, clock=FakeClock(1_000_000))
    try:
        isp = (await store.remember(_req(ISP))).id
        await store.remember(_req("The user's dentist name is Berlin."))
        await store.remember(_req("The user has 2 cats."))
        # a policy that looks before the write (review) sees it too
        assert [c.id for c in await conflicts_for(store, _req(BROADBAND))] == [isp]
        before = counting.texts
        resp = await store.remember(_req(BROADBAND))
        assert counting.texts == before + 1  # one model call: the scan reuses the write's
        assert [c.id for c in resp.conflicts or []] == [isp]
        assert "closest in meaning" in (resp.conflicts or [])[0].why
        # a look-alike note about another slot is no conflict
        assert not (await store.remember(_req("The user's bank name is Vienna."))).conflicts
    finally:
        await store.aclose()


def test_an_additive_statement_replaces_nothing_for_the_word_rules_either() -> None:
    from memorywire.core.contradiction import judge

    assert judge("The user plays the piano.", "The user also plays the guitar now.") is None
    assert judge("The user plays the piano.", "The user plays the guitar now.") is not None
