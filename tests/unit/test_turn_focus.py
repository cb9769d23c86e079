"""Turn focus: within a session, the turn whose own words answer comes first, and no session
gains or loses a place."""

from __future__ import annotations

from typing import Any

from memorywire.recall.turn_focus import (
    CONTEXT_SHARE,
    context_led,
    own_scores,
    turn_focused,
)
from memorywire.wire.models import MemoryType, RecallHit

QUESTION = "How many hours did I drive to Tybee Island?"
#: An assistant's reply, long beside the user's turn, as a context key.
REPLY = "Here is what I would suggest, step by step, with the details. " * 5


def _hit(id: str, content: str | dict[str, Any], session: str | None = None,
         context: str | None = None) -> RecallHit:
    meta: dict[str, Any] = {}
    if session is not None:
        meta["session"] = session
    if context is not None:
        meta["context"] = context
    return RecallHit(id=id, type=MemoryType.EPISODIC, content=content, score=1.0,
                     created_at=1, metadata=meta or None)


def _ids(hits: list[RecallHit]) -> list[str]:
    return [h.id for h in hits]


def _road_trip(reply: str = REPLY) -> list[RecallHit]:
    return [
        _hit("chat", "Thanks, that route sounds lovely.", "s1",
             context="Driving to Tybee Island takes a few hours along the coast. " + reply),
        _hit("other", "My dog ate my homework.", "s2", context=reply),
        _hit("plans", "What should I pack for the beach?", "s1", context=reply),
        _hit("answer", "I drove six hours to Tybee Island last spring.", "s1", context=reply),
        _hit("other2", "The cat sleeps all day.", "s2", context=reply),
    ]


def test_the_turn_that_says_it_takes_its_sessions_first_place() -> None:
    ranked = _ids(turn_focused(_road_trip(), QUESTION))
    assert ranked[0] == "answer"
    # the session keeps its places (0, 2, 3); the other session keeps 1 and 4
    assert ranked[1] == "other" and ranked[4] == "other2"
    assert set(ranked[i] for i in (0, 2, 3)) == {"answer", "chat", "plans"}


def test_which_sessions_come_first_never_changes() -> None:
    hits = [_hit(f"{s}{i}", f"turn {i} of {s} about Tybee Island" if i == 3 else "chat",
                 s, context=REPLY) for i in range(4) for s in ("a", "b", "c")]
    before = [(h.metadata or {})["session"] for h in hits]
    after = [(h.metadata or {})["session"] for h in turn_focused(hits, QUESTION)]
    assert after == before


def test_a_session_found_through_short_contexts_keeps_its_order() -> None:
    """Neighbouring lines as context (LoCoMo's keys) leave the store's order alone, as does
    a store without context keys."""
    short = _road_trip(reply="")
    assert not context_led([short[0], short[2], short[3]])
    assert _ids(turn_focused(short, QUESTION)) == _ids(short)
    bare = [h.model_copy(update={"metadata": {"session": (h.metadata or {})["session"]}})
            for h in _road_trip()]
    assert _ids(turn_focused(bare, QUESTION)) == _ids(bare)


def test_context_led_means_contexts_hold_the_share_of_the_own_texts() -> None:
    own = "x" * 100
    assert context_led([_hit("a", own, "s", context="y" * int(100 * CONTEXT_SHARE))])
    assert not context_led([_hit("a", own, "s", context="y" * int(100 * CONTEXT_SHARE - 1))])
    assert not context_led([_hit("a", "", "s")])


def test_only_the_turns_own_words_count_not_its_context() -> None:
    scores = own_scores(QUESTION, _road_trip())
    assert scores[0] == 0.0  # "chat": every matching word is in its context
    assert scores[3] > 0.0


def test_order_is_kept_without_sessions_one_hit_sessions_a_zero_weight_or_no_words() -> None:
    alone = [_hit("a", "nothing"), _hit("b", "I drove six hours to Tybee Island.")]
    assert _ids(turn_focused(alone, QUESTION)) == ["a", "b"]
    single = [_hit("a", "nothing", "s1", context=REPLY),
              _hit("b", "Tybee Island hours", "s2", context=REPLY)]
    assert _ids(turn_focused(single, QUESTION)) == ["a", "b"]
    assert _ids(turn_focused(_road_trip(), QUESTION, weight=0)) == _ids(_road_trip())
    assert _ids(turn_focused(_road_trip(), "what is it?")) == _ids(_road_trip())


def test_the_rule_is_soft_a_weak_own_match_far_down_its_session_stays_below() -> None:
    hits = [_hit(f"t{i}", f"small talk number {i}", "s1", context=REPLY) for i in range(40)]
    hits.append(_hit("late", "Tybee", "s1", context=REPLY))
    assert _ids(turn_focused(hits, QUESTION, weight=0.1))[0] == "t0"


def test_words_match_whole_plurals_and_long_words_by_their_first_six_letters() -> None:
    hits = [_hit("plural", "two islands"), _hit("inside", "restart the art"),
            _hit("prefix", "we were driving"), _hit("none", "a beach")]
    scores = own_scores("island art drivings", hits)
    assert scores[0] > 0  # "islands" for "island"
    assert scores[1] > 0  # "art" as a word ...
    assert own_scores("art", [_hit("x", "restart started")]) == [0.0]  # ... not inside one
    assert scores[2] > 0  # "driving" shares "drivin" with "drivings" (8 letters)
    assert scores[3] == 0.0


def test_a_structured_content_is_matched_by_its_values() -> None:
    hits = [_hit("a", {"note": "drove to Tybee Island"}), _hit("b", {"island": "no"})]
    scores = own_scores(QUESTION, hits)
    assert scores[0] > 0 and scores[1] == 0.0

