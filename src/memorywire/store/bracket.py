"""A write bracket a store runs on its own worker thread: one thread hop per governed write.

Governance brackets every inner-store write with audit entries: an ``intent`` that must be
durable before the store acts, then ``done`` (or ``failed``) that must be durable before the
write is acknowledged. Through a store's async API that is three hops between the event loop
and worker threads per write (governance thread, store thread, governance thread), each a
thread wake-up, a future resolved on the loop and, on a busy machine, the loop's core given
away while it holds the GIL.

A store that declares :data:`HONOURS_BRACKET` instead runs the bracket on the worker thread
that does the write, in one hop from the loop: the caller (governance) puts a
:class:`WriteBracket` in :func:`bracketing`'s context, and the store's thread calls
:func:`run_bracketed`, which submits the intent, does the work that has no effect (the
model, the conflict scan's reads) while the intent commits, **waits for the intent** before
the write, and waits for ``done``/``failed`` after it. The order of entries and effects, and
what is durable when the call returns, are the same as through the async API.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

from memorywire.errors import MemorywireError

__all__ = ["HONOURS_BRACKET", "WriteBracket", "bracketing", "honours_bracket", "run_bracketed",
           "take_bracket"]

P = TypeVar("P")
R = TypeVar("R")

#: The class attribute a store sets to ``True`` when its ``remember`` runs a bracket found in
#: :func:`bracketing`'s context (exactly one, on the thread that writes).
HONOURS_BRACKET = "honours_write_bracket"


class WriteBracket(Protocol):
    """What a store's worker thread calls around one write; every method may block."""

    def begin(self) -> None:
        """Submit the ``intent`` (returns without waiting for it)."""

    def ready(self) -> None:
        """Wait until the ``intent`` is durable; raises when it could not be written (or was
        refused), and then nothing may be written."""

    def done(self, result: Any) -> None:
        """Write ``done`` for ``result`` and wait until it is durable."""

    def failed(self, exc: MemorywireError) -> None:
        """Write ``failed`` for ``exc`` and wait until it is durable."""


_current: ContextVar[WriteBracket | None] = ContextVar("memorywire_write_bracket", default=None)


def honours_bracket(store: object) -> bool:
    return getattr(store, HONOURS_BRACKET, False) is True


@contextmanager
def bracketing(bracket: WriteBracket) -> Iterator[None]:
    """Make ``bracket`` the one the next store write in this context runs."""
    token = _current.set(bracket)
    try:
        yield
    finally:
        _current.reset(token)


def take_bracket() -> WriteBracket | None:
    """The bracket for this write, if any; taken once, so a nested call never runs it again."""
    bracket = _current.get()
    if bracket is not None:
        _current.set(None)
    return bracket


def run_bracketed(bracket: WriteBracket | None, prepare: Callable[[], P],
                  write: Callable[[P], R]) -> R:
    """``write(prepare())`` inside ``bracket`` (on the store's worker thread).

    ``prepare`` must have no effect (embedding, reads): it runs while the intent commits. Its
    failure is the write's failure, reported after the intent as through the async API: the
    intent's own error wins, as it would have stopped the call before ``prepare`` ran.
    """
    if bracket is None:
        return write(prepare())
    bracket.begin()
    try:
        prepared = prepare()
    except MemorywireError as exc:
        bracket.ready()
        bracket.failed(exc)
        raise
    except BaseException:
        bracket.ready()
        raise
    bracket.ready()
    try:
        result = write(prepared)
    except MemorywireError as exc:
        bracket.failed(exc)
        raise
    bracket.done(result)
    return result
