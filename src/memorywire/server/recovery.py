"""Recovery by provenance for a caller in this process (``Memory.recover``).

The library (:mod:`memorywire.governance.recover`) plans and acts; this adds what every
entry point owes it: the caller must be an admin, a run that acts needs the deployment's
signing key, and the forgets are attributed to the caller in the audit log. ``memorywire
recover`` is the command-line face of the same library.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memorywire.core.clock import SystemClock
from memorywire.errors import InvalidRequest
from memorywire.governance.actor import acting_as
from memorywire.governance.erasure import AuditSink
from memorywire.governance.recover import (
    RecoveryResult,
    RecoverySelector,
    apply_recovery,
    plan_recovery,
    scan_all,
)
from memorywire.server.auth import Principal, Role
from memorywire.store.base import MemoryStore

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = ["RecoveryResult", "recover"]


async def recover(
    store: MemoryStore,
    principal: Principal,
    *,
    source: str | None = None,
    agent_id: str | None = None,
    since_ms: int | None = None,
    until_ms: int | None = None,
    ids: Sequence[str] | None = None,
    key: Ed25519PrivateKey | None = None,
    dry_run: bool = False,
    reason: str = "recover",
    audit: AuditSink | None = None,
) -> RecoveryResult:
    """Plan over every memory of ``store``, then (unless ``dry_run``) act through its own
    forget, so a governance policy can stage it; ``dry_run`` returns the plan with no
    receipt."""
    principal.require(Role.ADMIN)
    selector = RecoverySelector(source=source, agent_id=agent_id, since_ms=since_ms,
                                until_ms=until_ms, ids=ids)
    plan = plan_recovery(await scan_all(store), selector)
    if dry_run:
        return RecoveryResult(plan)
    if key is None:
        raise InvalidRequest("recover: key: the Ed25519 signing key is needed to sign the "
                             "receipt (or pass dry_run=True)")
    with acting_as(principal.name, principal.token_id):
        return await apply_recovery(store, plan, key, audit=audit, reason=reason,
                                    now_ms=SystemClock().now_ms())
