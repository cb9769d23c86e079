"""Relative time expressions in a question, resolved into windows of event time.

"What did I buy last Saturday?" names a day only relative to when it is asked. This module
finds such English expressions ("yesterday", "two months ago", "a couple of weeks ago",
"last Saturday", "this morning", "in March", "on May 5th", "two weekends ago", "recently")
and turns each into a :class:`TimeWindow` of epoch milliseconds around a reference instant
(the time of asking). Recall uses the windows as a soft ranking signal
(:mod:`memorywire.recall.time_boost`), so a window errs on the wide side: people round ("two
months ago" for seven weeks), and a conversation about an event is often recorded a day
after it.

Rules, chosen to be predictable rather than clever:

- Calendar arithmetic is in UTC: the wire carries instants, not the asker's time zone.
- Day-sized windows ("yesterday", "last Saturday", "on May 5th") cover their calendar day
  widened by :data:`DAY_SLACK_MS` on each side.
- "N units ago" is centred on reference − N units, half as wide as one unit (at least a
  day) and a quarter of the distance for larger N; vague counts ("a few", "several") widen
  it by half again.
- A month or date without a year is its latest occurrence not after the reference.
- Only past references are resolved: "next week", "tonight", "this weekend" asked on a
  weekday, or "on Tuesdays" (a habit) give nothing.
- An expression right after "before", "after" or "until" is skipped: it bounds an open
  interval ("before today"), and boosting one side of it would favour nearly everything.
  "Most recent(ly)" asks for an order, not a period, and is skipped as well.
- Events named by other events ("before I moved") need the other event's time first and are
  not resolved here.

Text without any expression costs one regular-expression search and returns ``()``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memorywire.core.clock import DAY_MS

__all__ = ["DAY_SLACK_MS", "TimeWindow", "resolve"]

#: How far a day-sized window reaches into the neighbouring days.
DAY_SLACK_MS = DAY_MS
_UNIT_DAYS = {"day": 1.0, "week": 7.0, "month": 30.44, "year": 365.25}
_MONTHS = {name: i + 1 for i, name in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"))}
_MONTHS.update({name[:3]: n for name, n in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_WEEKDAYS = {name: i for i, name in enumerate(
    ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
            "a couple of": 2, "a couple": 2, "couple of": 2, "a few": 3, "few": 3,
            "several": 4}
_VAGUE = frozenset({"a couple of", "a couple", "couple of", "a few", "few", "several"})


@dataclass(frozen=True)
class TimeWindow:
    """``start <= t < end`` in epoch ms; ``phrase`` is the text it was resolved from."""

    start: int
    end: int
    phrase: str

    def contains(self, t: int) -> bool:
        return self.start <= t < self.end


_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY_RE = "|".join(_WEEKDAYS)
_NUM_RE = r"\d{1,3}|" + "|".join(sorted((re.escape(n) for n in _NUMBERS), key=len,
                                        reverse=True))
_ORD = r"(?:st|nd|rd|th)?"

#: One cheap test before the patterns run: every pattern contains one of these words.
_TRIGGER = re.compile(
    r"\b(?:ago|yesterday|today|last|this|past|recently|lately|other day|"
    rf"{_MONTH_RE})\b", re.IGNORECASE)
_SKIP_BEFORE = re.compile(r"\b(?:before|after|until|till)\s+(?:the\s+)?$")


def _day_start(t: datetime) -> datetime:
    return t.replace(hour=0, minute=0, second=0, microsecond=0)


def _ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


def _days(start: datetime, days: int = 1, slack: int = DAY_SLACK_MS) -> tuple[int, int]:
    """The calendar days ``[start, start + days)``, widened by ``slack`` on both sides."""
    return _ms(start) - slack, _ms(start + timedelta(days=days)) + slack


def _ago(ref: datetime, m: re.Match[str]) -> tuple[int, int] | None:
    word = m["n"].lower()
    n = int(word) if word.isdigit() else _NUMBERS[word]
    unit = m["unit"].lower()
    if unit == "weekend":
        return _weekend(ref, n)
    vague = 1.5 if word in _VAGUE else 1.0
    if unit == "day":  # a calendar day, not 24 hours around a clock time
        return _days(_day_start(ref) - timedelta(days=n),
                     slack=int(max(DAY_SLACK_MS, 0.25 * n * DAY_MS) * vague))
    span = _UNIT_DAYS[unit] * DAY_MS
    half = max(span / 2, 0.25 * n * span) * vague
    centre = _ms(ref) - n * span
    return int(centre - half), int(centre + half)


def _weekend(ref: datetime, n: int) -> tuple[int, int]:
    """The n-th weekend (Saturday and Sunday) that began before the reference's day."""
    today = _day_start(ref)
    back = (today.weekday() - 5) % 7 or 7  # days since the last Saturday before today
    saturday = today - timedelta(days=back + 7 * (n - 1))
    return _days(saturday, 2)


def _last_weekday(ref: datetime, m: re.Match[str]) -> tuple[int, int]:
    today = _day_start(ref)
    back = (today.weekday() - _WEEKDAYS[m["wd"].lower()]) % 7 or 7
    return _days(today - timedelta(days=back))


def _named_unit(ref: datetime, m: re.Match[str]) -> tuple[int, int] | None:
    """"last week/month/year/weekend" (the previous calendar one), "this ..." (the current
    one, up to now), "the past week" (the rolling one before now)."""
    which, unit = m["which"].lower(), m["unit"].lower()
    today = _day_start(ref)
    if unit == "weekend":
        if which != "this":
            return _weekend(ref, 1)
        if today.weekday() < 5:
            return None  # asked on a weekday, "this weekend" is the coming one
        return _days(today - timedelta(days=today.weekday() - 5), 2)
    if which in ("past", "the past", "the last"):
        return _ms(ref) - int(_UNIT_DAYS[unit] * DAY_MS) - DAY_SLACK_MS, _ms(ref)
    if unit == "week":
        start = today - timedelta(days=today.weekday())
        length = 7
    elif unit == "month":
        start, length = today.replace(day=1), 0
    else:
        start, length = today.replace(month=1, day=1), 0
    if which in ("last", "previous"):
        if unit == "week":
            start -= timedelta(days=7)
        elif unit == "month":
            start = (start - timedelta(days=1)).replace(day=1)
        else:
            start = start.replace(year=start.year - 1)
    if unit == "week":
        return _days(start, length)
    end = _ms(_next(start, unit))
    if which == "this":
        end = min(end, _ms(ref))
    return _ms(start) - DAY_SLACK_MS, end + DAY_SLACK_MS


def _next(start: datetime, unit: str) -> datetime:
    if unit == "month":
        return (start + timedelta(days=32)).replace(day=1)
    return start.replace(year=start.year + 1)


def _month(ref: datetime, m: re.Match[str]) -> tuple[int, int]:
    month = _MONTHS[m["month"].lower()]
    # "in March" asked in March is this March; "last March" is the one before.
    latest = ref.year - (month > ref.month)
    year = int(m["year"]) if m["year"] else latest - (m[0].lower().startswith("last")
                                                      and month == ref.month)
    start = datetime(year, month, 1, tzinfo=UTC)
    return _ms(start) - DAY_SLACK_MS, _ms(_next(start, "month")) + DAY_SLACK_MS


def _date(ref: datetime, m: re.Match[str]) -> tuple[int, int] | None:
    if m["month"] == "may" and not m[0].lower().startswith("on"):
        return None  # "I may 2 ..." is a verb; the month is written "May" or "on may 2"
    month = _MONTHS[m["month"].lower()]
    day = int(m["day"])
    year = int(m["year"]) if m["year"] else ref.year
    try:
        when = datetime(year, month, day, tzinfo=UTC)
        if not m["year"] and when > ref:
            when = when.replace(year=year - 1)
    except ValueError:  # February 30th, or February 29th of a common year
        return None
    return _days(when)


def _clock_part(ref: datetime, m: re.Match[str]) -> tuple[int, int]:
    today = _day_start(ref)
    part = (m["part"] or m["part2"]).lower()
    first, last = {"morning": (0, 12), "afternoon": (12, 18), "evening": (17, 24),
                   "last night": (-6, 6)}[part]
    slack = DAY_SLACK_MS // 8
    return (_ms(today + timedelta(hours=first)) - slack,
            _ms(today + timedelta(hours=last)) + slack)


def _day_offset(ref: datetime, m: re.Match[str]) -> tuple[int, int]:
    word = m["d"].lower()
    back = 2 if "before" in word else 1 if word == "yesterday" else 0
    return _days(_day_start(ref) - timedelta(days=back))


def _vague(ref: datetime, m: re.Match[str]) -> tuple[int, int]:
    days = 10 if "other" in m[0].lower() else 30
    return _ms(ref) - days * DAY_MS, _ms(ref) + DAY_SLACK_MS


def _rolling(ref: datetime, m: re.Match[str]) -> tuple[int, int]:
    word = m["n"].lower()
    n = int(word) if word.isdigit() else _NUMBERS[word]
    return _ms(ref) - int(n * _UNIT_DAYS[m["unit"].lower()] * DAY_MS) - DAY_SLACK_MS, _ms(ref)


def _ci(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_Handler = Callable[[datetime, re.Match[str]], "tuple[int, int] | None"]
#: Tried in this order; an earlier match claims its characters.
_PATTERNS: list[tuple[re.Pattern[str], _Handler]] = [
    (_ci(rf"\b(?:in|over|during) the (?:last|past) (?P<n>{_NUM_RE}) "
                r"(?P<unit>day|week|month|year)s?\b(?! of\b)"), _rolling),
    (_ci(rf"\b(?P<n>{_NUM_RE}) (?P<unit>day|week|weekend|month|year)s? ago\b"), _ago),
    (_ci(r"\b(?P<d>(?:the )?day before yesterday|yesterday|today)\b"), _day_offset),
    (_ci(r"\b(?P<part>last night)\b|\bthis (?P<part2>morning|afternoon|evening)\b"),
     _clock_part),
    (_ci(rf"\b(?:last|this past|past|previous) (?P<wd>{_DAY_RE})\b"), _last_weekday),
    (_ci(r"\b(?P<which>the past|the last|last|this|previous|past) "
                r"(?P<unit>week|weekend|month|year)\b(?! of\b)"), _named_unit),
    (_ci(rf"\b(?:on )?(?P<month>{_MONTH_RE})\.? (?P<day>[0-3]?\d){_ORD}\b"
                r"(?:,?\s*(?P<year>(?:19|20)\d\d)\b)?"), _date),
    (_ci(rf"\b(?:on )?(?:the )?(?P<day>[0-3]?\d){_ORD} of (?P<month>{_MONTH_RE})\b"
                r"(?:,?\s*(?P<year>(?:19|20)\d\d)\b)?"), _date),
    (_ci(rf"\b(?:in|during|last) (?:early |late |mid-?)?(?P<month>{_MONTH_RE})\b"
                r"(?:,?\s*(?P<year>(?:19|20)\d\d)\b)?"), _month),
    (_ci(r"\b(?<!most )(?:recently|lately)\b|\bthe other day\b"), _vague),
]


def resolve(text: str, reference_ms: int) -> tuple[TimeWindow, ...]:
    """The windows of every past time expression in ``text``, seen from ``reference_ms``.

    Matching is case-insensitive; each character belongs to at most one expression, so
    "two weeks ago" is not also read as "weeks ago". "since X" reaches from X up to the
    reference.
    """
    if not _TRIGGER.search(text):
        return ()
    ref = datetime.fromtimestamp(reference_ms / 1000, tz=UTC)
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, TimeWindow]] = []
    for pattern, handler in _PATTERNS:
        for m in pattern.finditer(text):
            if any(m.start() < b and a < m.end() for a, b in taken):
                continue
            taken.append(m.span())
            before = text[:m.start()].lower()
            if _SKIP_BEFORE.search(before):
                continue
            span = handler(ref, m)
            if span is None:
                continue
            start, end = span
            if before.rstrip().endswith("since"):
                end = max(end, reference_ms + DAY_SLACK_MS)
            if start < reference_ms + DAY_SLACK_MS:  # the past only
                found.append((m.start(), TimeWindow(start, end, text[m.start():m.end()])))
    return tuple(w for _, w in sorted(found, key=lambda f: f[0]))
