"""What every integration shares: provenance names and the rule that a gated write is loud.

Frameworks have no notion of "written, but waiting for a reviewer", so an integration that
treated ``pending_approval`` as success would tell an agent a memory exists when it does not.
Writers therefore go through :func:`require_committed`, which raises
:class:`~memorywire.errors.PendingApproval` carrying the approval URL; tool-style integrations
catch it and tell the model instead.
"""

from __future__ import annotations

from typing import Protocol

from memorywire.errors import PendingApproval

__all__ = [
    "SOURCE_AGENT",
    "SOURCE_TOOL_RESULT",
    "SOURCE_USER",
    "pending_note",
    "require_committed",
]

#: Provenance (the wire ``source`` field) of what a human typed: trusted as the user's word.
SOURCE_USER = "user"
#: What the model itself said or decided to remember.
SOURCE_AGENT = "agent"
#: Text that came back from a tool: untrusted, the usual carrier of injected instructions,
#: and what recovery removes by source when a tool turns out to have been poisoned.
SOURCE_TOOL_RESULT = "tool_result"


class _Gated(Protocol):
    @property
    def pending_approval(self) -> bool | None: ...

    @property
    def approval_url(self) -> str | None: ...


def pending_note(resp: _Gated) -> str:
    """The sentence a tool returns to a model when its write waits for a reviewer."""
    where = f" at {resp.approval_url}" if resp.approval_url else ""
    return f"pending approval: a reviewer must approve this change{where}; it is not stored yet"


def require_committed(resp: _Gated, what: str) -> None:
    """Raise :class:`PendingApproval` when ``resp`` was staged instead of applied."""
    if resp.pending_approval:
        raise PendingApproval(f"{what}: {pending_note(resp)}")
