"""Who is acting: set by the layer that authenticated the caller, read by governance.

The ``MemoryStore`` protocol has no caller argument, so the server (or a script) wraps each
request in :func:`acting_as`; a task started inside inherits it, as context variables do.

Besides a name and an id, a caller is on one of two sides. The *agent side* is software
acting for itself (a model over MCP, an agent token, the in-process client of an agent):
governance stages its destructive writes for a person by default (the policy's
``agent_review``). The other side is a person or their script (the CLI operator, a reviewer,
an admin token), whose writes follow the policy rules alone. In-process code that sets
nothing is on the person's side, as it was before sides existed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["ANONYMOUS", "acting_as", "current_actor", "current_actor_id",
           "current_actor_is_agent"]

ANONYMOUS = "anonymous"
_actor: ContextVar[str] = ContextVar("memorywire_actor", default=ANONYMOUS)
_actor_id: ContextVar[str | None] = ContextVar("memorywire_actor_id", default=None)
_agent_side: ContextVar[bool] = ContextVar("memorywire_actor_is_agent", default=False)


def current_actor() -> str:
    """The caller's display name (what the audit log shows; not unique)."""
    return _actor.get()


def current_actor_id() -> str | None:
    """The caller's unique id (an API token's id), or None for in-process callers.

    Decisions about *who* may touch something (amending a staged write) use this, never the
    name: two tokens may carry one name.
    """
    return _actor_id.get()


def current_actor_is_agent() -> bool:
    """Whether the caller is on the agent side (see the module)."""
    return _agent_side.get()


@contextmanager
def acting_as(actor: str, actor_id: str | None = None, *, agent: bool = False) -> Iterator[None]:
    token = _actor.set(actor or ANONYMOUS)
    id_token = _actor_id.set(actor_id)
    side_token = _agent_side.set(agent)
    try:
        yield
    finally:
        _agent_side.reset(side_token)
        _actor_id.reset(id_token)
        _actor.reset(token)
