"""Progress of long CLI work (migrate, import, export) on standard error, never stdout.

stdout carries what a command produces (``export`` writes the dump there, ``migrate`` and
``import`` their JSON report), so progress goes to stderr only. It is shown when stderr is a
terminal, or when asked with ``--progress`` (a CI log, a ``nohup`` file); ``--no-progress``
turns it off. On a terminal one line is redrawn in place (``\\r``); elsewhere a line is
written at most once every ``every_s`` seconds, plus the last, so a log stays readable.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """``progress(done, total)`` after each page: records done, of how many, and the rate.

    ``total`` is ``None`` when it is not known in advance (an export reads as it writes).
    ``enabled=None`` decides by whether ``stream`` is a terminal.
    """

    def __init__(
        self,
        label: str,
        *,
        enabled: bool | None = None,
        stream: TextIO | None = None,
        every_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.tty = _isatty(self.stream)
        self.enabled = self.tty if enabled is None else enabled
        self._every_s = every_s
        self._clock = clock
        self._started: float | None = None
        self._first = 0
        self._shown: float | None = None
        self._pending: str | None = None
        self._width = 0

    def __call__(self, done: int, total: int | None = None) -> None:
        if not self.enabled:
            return
        now = self._clock()
        if self._started is None:
            # the rate counts from here: a resumed migration starts with records already done
            self._started, self._first = now, done
        line = self._line(done, total, now)
        finished = total is not None and done >= total
        if self.tty:
            self._draw(line)
        elif finished or self._shown is None or now - self._shown >= self._every_s:
            self.stream.write(line + "\n")
            self.stream.flush()
            self._shown, self._pending = now, None
        else:
            self._pending = line

    def close(self) -> None:
        """End the redrawn line, or write the last state a throttled log skipped."""
        if not self.enabled:
            return
        if self.tty and self._width:
            self.stream.write("\n")
        elif self._pending is not None:
            self.stream.write(self._pending + "\n")
        self.stream.flush()
        self._pending, self._width = None, 0

    def _line(self, done: int, total: int | None, now: float) -> str:
        assert self._started is not None
        elapsed = now - self._started
        rate = (done - self._first) / elapsed if elapsed > 0 else 0.0
        if total is None:
            counted = f"{done} records"
        else:
            share = 100 if total == 0 else min(100, 100 * done // total)
            counted = f"{done}/{total} records ({share}%)"
        return f"{self.label}: {counted}, {rate:,.0f} records/s"

    def _draw(self, line: str) -> None:
        pad = max(0, self._width - len(line))
        self.stream.write("\r" + line + " " * pad)
        self.stream.flush()
        self._width = len(line)


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or unusual stream: not a terminal
        return False
