"""Who is acting: set by the layer that authenticated the caller, read by governance.

The ``MemoryStore`` protocol has no caller argument, so the server (or a script) wraps each
request in :func:`acting_as`; a task started inside inherits it, as context variables do.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["ANONYMOUS", "acting_as", "current_actor", "current_actor_id"]

ANONYMOUS = "anonymous"
_actor: ContextVar[str] = ContextVar("memorywire_actor", default=ANONYMOUS)
_actor_id: ContextVar[str | None] = ContextVar("memorywire_actor_id", default=None)


def current_actor() -> str:
    """The caller's display name (what the audit log shows; not unique)."""
    return _actor.get()


def current_actor_id() -> str | None:
    """The caller's unique id (an API token's id), or None for in-process callers.

    Decisions about *who* may touch something (amending a staged write) use this, never the
    name: two tokens may carry one name.
    """
    return _actor_id.get()


@contextmanager
def acting_as(actor: str, actor_id: str | None = None) -> Iterator[None]:
    token = _actor.set(actor or ANONYMOUS)
    id_token = _actor_id.set(actor_id)
    try:
        yield
    finally:
        _actor_id.reset(id_token)
        _actor.reset(token)
