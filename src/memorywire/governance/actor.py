"""Who is acting: set by the layer that authenticated the caller, read by governance.

The ``MemoryStore`` protocol has no caller argument, so the server (or a script) wraps each
request in :func:`acting_as`; a task started inside inherits it, as context variables do.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["ANONYMOUS", "acting_as", "current_actor"]

ANONYMOUS = "anonymous"
_actor: ContextVar[str] = ContextVar("memorywire_actor", default=ANONYMOUS)


def current_actor() -> str:
    return _actor.get()


@contextmanager
def acting_as(actor: str) -> Iterator[None]:
    token = _actor.set(actor or ANONYMOUS)
    try:
        yield
    finally:
        _actor.reset(token)
