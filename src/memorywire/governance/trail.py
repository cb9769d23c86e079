"""The audit writer of a :class:`~memorywire.governance.store.GovernedStore`.

Every audit entry a governed store writes goes through :class:`AuditTrail`: single entries
(a policy refusal, a policy change, an event of consolidation), the records of reads (which
have no effect to precede, so they are queued rather than awaited), and the
:class:`~memorywire.governance.bracket.AuditBracket` around each inner-store write. Details
never carry content: what identifies content is a keyed hash (:meth:`AuditTrail.keyed`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from memorywire.governance.audit import AuditLog
from memorywire.governance.bracket import AuditBracket, Outcome, Settle
from memorywire.governance.keys import AuditKey
from memorywire.governance.worker import GovWorker

__all__ = ["AuditTrail"]

R = TypeVar("R")


class AuditTrail:
    """Writes a governed store's audit entries on its governance worker."""

    def __init__(self, audit: AuditLog, worker: GovWorker, key: AuditKey) -> None:
        self._audit = audit
        self._w = worker
        self._key = key

    def keyed(self, name: str, value: Any) -> dict[str, str]:
        """``{name: keyed hash, "hmac_key": key id}`` for an entry's details."""
        return {name: self._key.digest(value), "hmac_key": self._key.key_id}

    async def append(self, **entry: Any) -> None:
        """Write one entry; returns once it is committed."""
        await self._w.append(self._audit.prepare(**entry))

    def write_now(self, **entry: Any) -> None:
        """:meth:`append` for a synchronous caller (it waits on the worker)."""
        prepared = self._audit.prepare(**entry)
        self._w.call(lambda: self._audit.write(prepared))

    async def record(self, event: Mapping[str, Any]) -> None:
        """The ``AuditSink`` face (consolidation, receipts): one entry from an event dict."""
        await self.append(
            actor=str(event.get("actor") or "system"),
            action=str(event.get("action") or ""),
            agent_id=event.get("agent_id"),
            memory_ids=[str(i) for i in event.get("memory_ids") or ()],
            details=event.get("details") or {},
        )

    async def record_read(self, *, fail_closed: bool, **entry: Any) -> None:
        """The record of a read (see :meth:`GovWorker.record_read` for when it is awaited)."""
        await self._w.record_read(self._audit.prepare(**entry), fail_closed=fail_closed)

    def bracket(
        self,
        action: str,
        agent_id: str,
        ids: Sequence[str],
        details: Mapping[str, Any],
        *,
        done: Callable[[R], Outcome] | None = None,
        settle: Callable[[R], Settle] | None = None,
        guard: Callable[[], None] | None = None,
    ) -> AuditBracket[R]:
        """The bracket for one inner-store write (see :class:`AuditBracket` for the hooks)."""
        return AuditBracket(self._audit, self._w, action, agent_id, ids, details,
                            done=done, settle=settle, guard=guard)
