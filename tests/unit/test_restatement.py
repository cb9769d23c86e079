"""Restated facts are one answer: a turn that says again what a higher hit of its session
said yields its place to the next distinct hit; nothing else moves."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from memorywire.errors import InvalidRequest
from memorywire.recall.restatement import DUPLICATE_SHARE, restated_last, word_grams
from memorywire.recall.settings import PORTABLE_RECALL, checked_share
from memorywire.wire.models import RecallHit
from tests.unit.test_turn_focus import _hit as _focus_hit
from tests.unit.test_turn_focus import _ids

GOAL = "My current goal is to reach level 150 in Apex Legends before the end of the year."
#: The same statement again, a few words around it (9 of its 13 5-grams are GOAL's).
AGAIN = "Like I said, my current goal is to reach level 150 in Apex Legends before summer."
OLD = "Before that I was determined to reach level 100, which felt like plenty back then."


def _hit(id: str, content: str | dict[str, Any], session: str | None = "s1",
         context: str | None = None) -> RecallHit:
    """Turn focus's test hit, in session ``s1`` unless told otherwise."""
    return _focus_hit(id, content, session, context)


def test_word_grams_are_lower_cased_word_sequences_and_none_for_short_texts() -> None:
    assert word_grams("One two, THREE four five six") == {
        ("one", "two", "three", "four", "five"), ("two", "three", "four", "five", "six")}
    assert word_grams("Thanks, that helps a lot!") == {("thanks", "that", "helps", "a", "lot")}
    assert word_grams("Thanks a lot!") == frozenset()


def test_a_restatement_yields_its_place_to_the_next_distinct_turn() -> None:
    hits = [_hit("goal", GOAL), _hit("again", AGAIN), _hit("old", OLD),
            _hit("else", "We played three matches with my friends on Saturday night.", "s2")]
    assert _ids(restated_last(hits, 0.3)) == ["goal", "old", "again", "else"]
    # off: the order it was given
    assert _ids(restated_last(hits, 0.0)) == ["goal", "again", "old", "else"]


def test_the_share_decides_what_counts_as_saying_it_again() -> None:
    hits = [_hit("goal", GOAL), _hit("again", AGAIN), _hit("old", OLD)]
    shared = len(word_grams(AGAIN) & word_grams(GOAL)) / len(word_grams(AGAIN))
    assert 0.5 < shared < 0.8
    assert _ids(restated_last(hits, shared)) == ["goal", "old", "again"]
    assert _ids(restated_last(hits, min(1.0, shared + 0.01))) == ["goal", "again", "old"]


def test_turns_of_different_sessions_and_hits_without_one_keep_their_places() -> None:
    other = [_hit("goal", GOAL, "s1"), _hit("again", AGAIN, "s2"), _hit("old", OLD, "s1")]
    assert _ids(restated_last(other, 0.3)) == ["goal", "again", "old"]
    loose = [_hit("goal", GOAL, None), _hit("again", AGAIN, None), _hit("old", OLD, None)]
    assert _ids(restated_last(loose, 0.3)) == ["goal", "again", "old"]


def test_only_the_turns_own_words_count_not_their_context() -> None:
    reply = "Here is a plan, step by step, to reach level 150 in Apex Legends this year. " * 3
    hits = [_hit("a", "Which weapons should I practise with this week?", context=reply),
            _hit("b", "How long should a practice session be for me?", context=reply),
            _hit("c", OLD)]
    assert _ids(restated_last(hits, 0.3)) == ["a", "b", "c"]


def test_copies_in_a_row_wait_behind_the_next_distinct_hit_in_their_order() -> None:
    hits = [_hit("goal", GOAL), _hit("again", AGAIN), _hit("third", GOAL + " Really."),
            _hit("old", OLD), _hit("tail", "The weekend tournament starts at noon on Sunday.")]
    assert _ids(restated_last(hits, 0.3)) == ["goal", "old", "again", "third", "tail"]
    # with no distinct hit after them, they end the list in their order
    assert _ids(restated_last(hits[:3], 0.3)) == ["goal", "again", "third"]


def test_hits_beyond_the_pool_are_left_alone() -> None:
    hits = [_hit("goal", GOAL), _hit("again", AGAIN), _hit("old", OLD)]
    assert _ids(restated_last(hits, 0.3, pool=2)) == ["goal", "again", "old"]


def test_the_default_is_off() -> None:
    assert DUPLICATE_SHARE == 0.0
    assert PORTABLE_RECALL.duplicate_share == 0.0


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), float("inf"), True])
def test_a_share_that_cannot_work_is_refused_naming_the_setting(bad: float) -> None:
    with pytest.raises(InvalidRequest, match="duplicate_share"):
        checked_share(bad)
    with pytest.raises(InvalidRequest, match="duplicate_share"):
        replace(PORTABLE_RECALL, duplicate_share=bad)


@pytest.mark.parametrize("good", [0, 0.3, 1])
def test_a_share_from_zero_to_one_is_taken(good: float) -> None:
    assert checked_share(good) == float(good)
