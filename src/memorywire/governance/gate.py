"""Which governed calls run now, which wait for a reviewer, and which are refused.

:class:`PolicyGate` holds a governed store's :class:`~memorywire.governance.policies.PolicySet`
and the operations its deployment always sends to review (``require_approval_for``). A call
is staged when its policy says ``review``, when its operation is always gated, or when the
caller is inside :meth:`StagingDesk.staging <memorywire.governance.staging.StagingDesk.staging>`,
or when an agent-side caller makes a call of a kind the policy's ``agent_review`` names; a
``reject`` rule refuses it with ``Forbidden`` and records the refusal.

The kind of a forget depends on what it is part of: an erase reaches the store as a hard
forget of every id in its scope, so the erase marks the calls it makes with :func:`erasing`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from memorywire.errors import Forbidden
from memorywire.governance.actor import current_actor, current_actor_is_agent
from memorywire.governance.chain import canonical_json, sha256_hex
from memorywire.governance.policies import PolicyDecision, PolicySet
from memorywire.governance.trail import AuditTrail

__all__ = ["GATEABLE", "Policies", "PolicyGate", "as_policies", "erasing", "forget_kind"]

#: The operations ``require_approval_for`` may name.
GATEABLE = frozenset({"forget", "merge"})

#: What a policy set may be given as (see :func:`as_policies`).
Policies = PolicySet | Mapping[str, Any] | str | Path


_ERASING: ContextVar[bool] = ContextVar("memorywire_erasing", default=False)


@contextmanager
def erasing() -> Iterator[None]:
    """The forgets made in this block (in this task) are an erase (``agent_review``'s
    ``erase``), not single hard forgets."""
    token = _ERASING.set(True)
    try:
        yield
    finally:
        _ERASING.reset(token)


def forget_kind(hard_delete: bool) -> str:
    """``erase``, ``hard_forget`` or ``forget``: the ``agent_review`` kind of a forget."""
    if _ERASING.get():
        return "erase"
    return "hard_forget" if hard_delete else "forget"


def as_policies(p: Policies | None) -> PolicySet:
    """A policy set from a set, a dict, a file path, or ``None`` (commit everything)."""
    if p is None:
        return PolicySet()
    if isinstance(p, PolicySet):
        return p
    if isinstance(p, str | Path):
        return PolicySet.from_file(p)
    return PolicySet.from_dict(p)


class PolicyGate:
    """Decides ``commit`` or ``review`` for one call, or refuses it (see the module)."""

    def __init__(self, policies: Policies | None, require_approval_for: Iterable[str],
                 trail: AuditTrail, staging_now: Callable[[], bool]) -> None:
        self._policies = as_policies(policies)
        gated = set(require_approval_for)
        if gated - GATEABLE:
            raise ValueError(f"require_approval_for accepts {sorted(GATEABLE)}")
        self._gated = frozenset(gated)
        self._trail = trail
        self._staging_now = staging_now

    @property
    def policies(self) -> PolicySet:
        return self._policies

    def replace(self, policies: Policies, details: Mapping[str, Any] | None = None) -> None:
        """Take ``policies`` from now on; the change (its hash, and ``details``: what
        changed and why, where the caller knows) is recorded first."""
        new = as_policies(policies)
        self._trail.write_now(
            actor=current_actor(),
            action="policy_changed",
            details={**(details or {}),
                     "policy_sha256": sha256_hex(canonical_json(new.to_dict()))},
        )
        self._policies = new

    def agents_wait(self, kind: str) -> bool:
        """Whether the current caller's call of ``kind`` waits for a person because the
        caller is on the agent side (the policy's ``agent_review``)."""
        return current_actor_is_agent() and self._policies.agents_wait(kind)

    async def decide(self, operation: str, agent_id: str, user_id: str | None, req: Any,
                     kind: str | None = None) -> str:
        """``"commit"`` or ``"review"``; a ``reject`` rule raises ``Forbidden``. ``kind``
        (default: ``operation``) is what ``agent_review`` knows the call as."""
        d: PolicyDecision = self._policies.decide(operation, agent_id, user_id, req)
        if d.decision == "reject":
            await self._trail.append(
                actor=current_actor(),
                action="rejected",
                agent_id=agent_id,
                details={"operation": operation, "by": "policy", "rule": d.rule},
            )
            why = f": {d.reason}" if d.reason else ""
            raise Forbidden(f"governance policy rule '{d.rule}' refuses this {operation}{why}")
        if operation in self._gated or self._staging_now():
            return "review"
        if self.agents_wait(kind or operation):
            return "review"
        return d.decision
