"""Injectable time, so expiry, freshness and consolidation are testable without sleeping."""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["DAY_MS", "Clock", "FakeClock", "SystemClock"]

DAY_MS = 86_400_000


class Clock(Protocol):
    def now_ms(self) -> int: ...


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class FakeClock:
    """A clock tests move by hand."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> None:
        self._now += ms

    def advance_days(self, days: float) -> None:
        self._now += int(days * DAY_MS)
