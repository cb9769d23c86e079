"""Reviewer UI session rules (governance/sessions.py), the same over both stores: this
process's memory and the file worker processes share."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from memorywire.governance.sessions import ReviewSessions
from memorywire.server.ui.shared_sessions import SharedReviewSessions

Make = Callable[[dict[str, str], list[float]], ReviewSessions]


def _in_memory(tmp_path: Path) -> Make:
    def make(live: dict[str, str], now: list[float]) -> ReviewSessions:
        return ReviewSessions(live.get, max_age_s=100, idle_s=10, clock=lambda: now[0])
    return make


def _shared(tmp_path: Path) -> Make:
    def make(live: dict[str, str], now: list[float]) -> ReviewSessions:
        def by_hash(h: str) -> str | None:
            return next((r for t, r in live.items()
                         if hashlib.sha256(t.encode()).hexdigest() == h), None)
        return SharedReviewSessions(tmp_path / "s.db", live.get, by_hash, max_age_s=100,
                                    idle_s=10, clock=lambda: now[0])
    return make


@pytest.fixture(params=[_in_memory, _shared], ids=["memory", "shared"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Make:
    factory: Callable[[Path], Make] = request.param
    return factory(tmp_path)


def test_only_a_live_reviewer_token_opens_a_session(make: Make) -> None:
    book = make({"mwt_good": "rita"}, [1000.0])
    assert book.open("mwt_bad") is None and book.open("") is None
    opened = book.open("mwt_good")
    assert opened is not None and opened[1] == "rita"
    assert book.reviewer(opened[0]) == "rita" and len(book) == 1
    assert book.reviewer("not-a-session") is None and book.reviewer(None) is None


def test_idle_and_lifetime_limits_end_a_session(make: Make) -> None:
    now = [1000.0]
    book = make({"mwt_good": "rita"}, now)
    idle = book.open("mwt_good")
    assert idle is not None
    now[0] += 11  # idle longer than idle_s
    assert book.reviewer(idle[0]) is None and len(book) == 0

    old = book.open("mwt_good")
    assert old is not None
    for _ in range(12):  # seen every 9 s, never idle, but older than max_age_s at the end
        now[0] += 9
        seen = book.reviewer(old[0])
    assert seen is None and len(book) == 0


def test_expired_sessions_are_swept_when_another_opens(make: Make) -> None:
    now = [1000.0]
    book = make({"mwt_good": "rita"}, now)
    assert book.open("mwt_good") is not None
    now[0] += 11
    assert book.open("mwt_good") is not None
    assert len(book) == 1


def test_revoking_the_token_or_closing_ends_the_session(make: Make) -> None:
    live = {"mwt_good": "rita"}
    book = make(live, [1000.0])
    first, second = book.open("mwt_good"), book.open("mwt_good")
    assert first is not None and second is not None
    book.close(first[0])
    assert book.reviewer(first[0]) is None and len(book) == 1
    live.pop("mwt_good")
    assert book.reviewer(second[0]) is None  # the token store said no
    assert len(book) == 0
