"""Relative time expressions resolved against a fixed time of asking (UTC calendar)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memorywire.core.time_expressions import resolve

#: Thursday 9 March 2023, 15:47 UTC.
ASKED = datetime(2023, 3, 9, 15, 47, tzinfo=UTC)


def _ms(y: int, mo: int, d: int, h: int = 0, mi: int = 0) -> int:
    return int(datetime(y, mo, d, h, mi, tzinfo=UTC).timestamp() * 1000)


def _window(text: str, asked: datetime = ASKED) -> tuple[str, str, str]:
    found = resolve(text, int(asked.timestamp() * 1000))
    assert len(found) == 1, found
    w = found[0]

    def day(ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M")
    return w.phrase, day(w.start), day(w.end)


# (question, phrase, window start, window end): day-sized windows reach one day either side.
CASES = [
    ("What did I buy yesterday?", "yesterday", "2023-03-07 00:00", "2023-03-10 00:00"),
    ("the day before yesterday", "the day before yesterday", "2023-03-06 00:00",
     "2023-03-09 00:00"),
    ("Where did I eat today?", "today", "2023-03-08 00:00", "2023-03-11 00:00"),
    ("What did I do this morning?", "this morning", "2023-03-08 21:00", "2023-03-09 15:00"),
    ("Where was I last night?", "last night", "2023-03-08 15:00", "2023-03-09 09:00"),
    ("I received jewelry last Saturday from whom?", "last Saturday", "2023-03-03 00:00",
     "2023-03-06 00:00"),
    ("this past Monday", "this past Monday", "2023-03-05 00:00", "2023-03-08 00:00"),
    ("What did I read 3 days ago?", "3 days ago", "2023-03-05 00:00", "2023-03-08 00:00"),
    ("a week ago", "a week ago", "2023-02-27 03:47", "2023-03-06 03:47"),
    ("a couple of weeks ago", "a couple of weeks ago", "2023-02-18 09:47", "2023-02-28 21:47"),
    ("I visited a museum two months ago.", "two months ago", "2022-12-23 13:23",
     "2023-01-22 23:56"),
    ("two weekends ago", "two weekends ago", "2023-02-24 00:00", "2023-02-28 00:00"),
    ("last weekend", "last weekend", "2023-03-03 00:00", "2023-03-07 00:00"),
    ("last week", "last week", "2023-02-26 00:00", "2023-03-07 00:00"),
    ("last month", "last month", "2023-01-31 00:00", "2023-03-02 00:00"),
    ("last year", "last year", "2021-12-31 00:00", "2023-01-02 00:00"),
    ("this month", "this month", "2023-02-28 00:00", "2023-03-10 15:47"),
    ("in the last 3 days", "in the last 3 days", "2023-03-05 15:47", "2023-03-09 15:47"),
    ("the past week", "the past week", "2023-03-01 15:47", "2023-03-09 15:47"),
    ("What did I plant in March?", "in March", "2023-02-28 00:00", "2023-04-02 00:00"),
    ("in May", "in May", "2022-04-30 00:00", "2022-06-02 00:00"),
    ("in May 2021", "in May 2021", "2021-04-30 00:00", "2021-06-02 00:00"),
    ("last March", "last March", "2022-02-28 00:00", "2022-04-02 00:00"),
    ("What happened on May 5th?", "on May 5th", "2022-05-04 00:00", "2022-05-07 00:00"),
    ("on March 1st", "on March 1st", "2023-02-28 00:00", "2023-03-03 00:00"),
    ("the 5th of May, 2020", "the 5th of May, 2020", "2020-05-04 00:00", "2020-05-07 00:00"),
    ("What have I been reading recently?", "recently", "2023-02-07 15:47", "2023-03-10 15:47"),
    ("on December 1,2022", "on December 1,2022", "2022-11-30 00:00", "2022-12-03 00:00"),
    ("since last month", "last month", "2023-01-31 00:00", "2023-03-10 15:47"),
]


@pytest.mark.parametrize(("text", "phrase", "start", "end"), CASES)
def test_expression_resolves_to_its_window(text: str, phrase: str, start: str,
                                           end: str) -> None:
    assert _window(text) == (phrase, start, end)


@pytest.mark.parametrize("text", [
    "What is my favourite airline?",
    "How many days ago did I attend the service?",  # asks for a count: no period named
    "What time do I wake up on Tuesdays?",  # a habit, not a day
    "Which did I use most recently, a bus or a train?",  # an order, not a period
    "Which airlines did I fly before today?",  # an open bound
    "What did I do after last week?",
    "What will I do next week?",  # the future
    "I've got some free time tonight, any ideas?",
    "What should I serve for dinner this weekend?",  # asked on a Thursday: the coming one
    "I may 2 go",  # a verb, not the month
    "What happened on February 30th?",  # no such day
    "before I moved",  # an event, not a time
    "Where was I in the last week of August?",  # a week of a month, not the past week
    "",
])
def test_text_without_a_past_period_resolves_to_nothing(text: str) -> None:
    assert resolve(text, int(ASKED.timestamp() * 1000)) == ()


def test_every_expression_in_a_question_is_resolved_once_in_text_order() -> None:
    found = resolve("Did I meet Ann last Saturday or two weeks ago?",
                    int(ASKED.timestamp() * 1000))
    assert [w.phrase for w in found] == ["last Saturday", "two weeks ago"]


def test_case_and_a_saturday_asked_on_saturday() -> None:
    saturday = datetime(2023, 3, 11, 5, 28, tzinfo=UTC)
    (w,) = resolve("LAST SATURDAY", int(saturday.timestamp() * 1000))
    assert w.contains(_ms(2023, 3, 4, 12)) and not w.contains(_ms(2023, 3, 11, 1))


def test_this_weekend_asked_on_a_sunday_is_the_current_one() -> None:
    sunday = datetime(2023, 3, 12, 9, 0, tzinfo=UTC)
    (w,) = resolve("What did I cook this weekend?", int(sunday.timestamp() * 1000))
    assert w.contains(_ms(2023, 3, 11, 12)) and not w.contains(_ms(2023, 3, 4, 12))


def test_windows_hold_their_start_and_not_their_end() -> None:
    (w,) = resolve("yesterday", int(ASKED.timestamp() * 1000))
    assert w.contains(w.start) and not w.contains(w.end)
