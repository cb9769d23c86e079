"""The subject lexical list: a named person's memory that matches the question's words
(stemmed) comes up past other speakers' memories the store ranked higher; nothing moves for a
question that names no one, or with the weight at 0."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memorywire.errors import InvalidRequest
from memorywire.recall.plan import Search, recall_in_time
from memorywire.recall.rules import UNRANKED
from memorywire.recall.subject_lexical import (
    SUBJECT_LEXICAL_WEIGHT,
    bm25_scores,
    subject_lexical_ranked,
)
from memorywire.wire.models import Fusion, MemoryType, RecallHit, RecallRequest, RecallResponse

MELANIE = frozenset({"melanie"})
#: Only this rule's weight on (the plan's other rules off).
LEXICAL_ONLY = replace(UNRANKED, subject_lexical_weight=SUBJECT_LEXICAL_WEIGHT)
QUESTION = "What books has Melanie been reading?"


def _hit(id: str, speaker: str, text: str, context: str | None = None) -> RecallHit:
    meta: dict[str, object] = {"speaker": speaker}
    if context is not None:
        meta["context"] = context
    return RecallHit(id=id, type=MemoryType.EPISODIC, content=f"{speaker}: {text}", score=1.0,
                     created_at=1, metadata=meta)


def _pool() -> list[RecallHit]:
    """The store's order: eight turns of Caroline's small talk (the vector side liked
    them), then Melanie's turn that says it in other forms of the words."""
    chat = [_hit(f"x{i}", "Caroline", f"Such a lovely day, number {i}.") for i in range(8)]
    return [*chat, _hit("answer", "Melanie", "I read two novels by Toni Morrison; "
                                             "the book club loved them.")]


def _ids(hits: list[RecallHit]) -> list[str]:
    return [h.id for h in hits]


def test_the_named_persons_matching_memory_is_lifted_past_other_speakers() -> None:
    pool = _pool()
    assert _ids(pool).index("answer") == 8
    ranked = _ids(subject_lexical_ranked(pool, QUESTION, MELANIE))
    assert ranked == ["answer", *_ids(pool[:8])]
    # the list is the named person's: the same turn spoken by Caroline stays where it was
    other = [*pool[:8], _hit("answer", "Caroline", "I read two novels by Toni Morrison; "
                                                    "the book club loved them.")]
    assert _ids(subject_lexical_ranked(other, QUESTION, MELANIE)) == _ids(other)


def test_words_match_through_their_stems_and_the_context_key() -> None:
    texts = ["Melanie: I read books.", "Melanie: a lovely day", "Melanie: hi"]
    scores = bm25_scores("reading a book", texts)
    assert scores[0] > 0 and scores[1] == 0 and scores[2] == 0
    # Melanie's two short answers, next to each other: the one whose context holds the
    # question's words heads the list (weight 1: an equal list may swap neighbours)
    bare = _hit("bare", "Melanie", "Yes!", context="Caroline: a lovely day, isn't it?")
    said = _hit("said", "Melanie", "Yes!", context="Caroline: are you reading books?")
    ranked = _ids(subject_lexical_ranked([*_pool()[:8], bare, said], QUESTION, MELANIE, 1.0))
    assert ranked.index("said") < ranked.index("bare")


def test_no_name_no_match_or_weight_zero_keeps_the_order() -> None:
    pool = _pool()
    assert _ids(subject_lexical_ranked(pool, QUESTION, frozenset())) == _ids(pool)
    assert _ids(subject_lexical_ranked(pool, QUESTION, MELANIE, weight=0)) == _ids(pool)
    unnamed = [RecallHit(id=h.id, type=h.type, content=f"{h.content}"[10:], score=1.0,
                         created_at=1, metadata=h.metadata) for h in pool]
    assert _ids(subject_lexical_ranked(unnamed, "Did Melanie go swimming?", MELANIE)) == \
        _ids(pool)
    assert subject_lexical_ranked([], QUESTION, MELANIE) == []


def _search(hits: list[RecallHit], asked: list[int]) -> Search:
    async def search(req: RecallRequest) -> RecallResponse:
        asked.append(req.k)
        return RecallResponse(results=hits[:req.k], fusion_used=Fusion.RRF,
                              stores_queried=["s"], latency_ms=0)
    return search


@pytest.mark.anyio
async def test_the_plan_fetches_the_pool_and_lifts_the_answer_even_without_the_subject_boost(
) -> None:
    pool = _pool()
    req = RecallRequest(agent_id="a", query=QUESTION, k=5)
    asked: list[int] = []
    off = await recall_in_time(req, _search(pool, asked), 10, settings=UNRANKED)
    assert "answer" not in _ids(off.results)
    assert asked == [5]
    asked.clear()
    on = await recall_in_time(req, _search(pool, asked), 10, settings=LEXICAL_ONLY)
    assert _ids(on.results)[0] == "answer"
    assert asked == [5, 100]
    # a question that names no one: one search, the store's order
    asked.clear()
    plain = req.model_copy(update={"query": "what books were read?"})
    same = await recall_in_time(plain, _search(pool, asked), 10, settings=LEXICAL_ONLY)
    assert _ids(same.results) == _ids(pool[:5])
    assert asked == [5]


@pytest.mark.parametrize("bad", [-0.5, float("nan"), float("inf"), True])
def test_a_weight_that_cannot_work_is_refused_naming_the_setting(bad: float) -> None:
    with pytest.raises(InvalidRequest, match="subject_lexical_weight"):
        replace(UNRANKED, subject_lexical_weight=bad)
