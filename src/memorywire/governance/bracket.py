"""A governed remember's audit bracket, run by the store's writing thread (one hop per write).

:class:`RememberBracket` is :class:`memorywire.store.bracket.WriteBracket` for
:meth:`GovernedStore.remember <memorywire.governance.store.GovernedStore.remember>`: the
same three entries as the async path (the staged-id check fused with ``intent``, then
``done`` or ``failed``), submitted to the governance worker from the store's thread and
awaited there on ``concurrent.futures`` futures, so the event loop takes no part between
them. The worker groups them with everyone else's entries exactly as before; ``ready``
returns only once the group holding the intent committed, ``done``/``failed`` likewise, so
"intent before effect" and "done before the answer" hold as on the async path.

Entries are prepared on the caller's side where they can be (the actor is the request's),
and from the result on the writing thread (``done`` names the stores that answered).
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memorywire.errors import MemorywireError
from memorywire.governance.actor import current_actor
from memorywire.governance.audit import AuditLog
from memorywire.governance.worker import GovWorker
from memorywire.wire.models import RememberResponse

__all__ = ["RememberBracket"]


class RememberBracket:
    """One governed remember's bracket (see the module docstring)."""

    def __init__(self, worker: GovWorker, audit: AuditLog, intent_job: Callable[[], None],
                 agent_id: str, memory_id: str, meta: Mapping[str, Any]) -> None:
        self._w = worker
        self._audit = audit
        self._job = intent_job
        self._actor = current_actor()
        self._agent_id = agent_id
        self._memory_id = memory_id
        self._meta = dict(meta)
        self._intent: concurrent.futures.Future[None] | None = None

    @property
    def begun(self) -> bool:
        """Whether the intent was submitted (the store's thread reached the write)."""
        return self._intent is not None

    def begin(self) -> None:
        self._intent = self._w.submit_grouped(self._job)

    def ready(self) -> None:
        assert self._intent is not None, "begin() first"
        self._intent.result()

    def done(self, result: Any) -> None:
        responses: Sequence[RememberResponse] = result
        (resp,) = responses
        self._phase("done", [resp.id], {**self._meta, "stores": resp.stores})

    def failed(self, exc: MemorywireError) -> None:
        self._phase("failed", [self._memory_id], {"error": exc.code})

    def _phase(self, phase: str, ids: Sequence[str], details: Mapping[str, Any]) -> None:
        entry = self._audit.prepare(actor=self._actor, action="remember",
                                    agent_id=self._agent_id, memory_ids=ids,
                                    details={"phase": phase, **details})
        self._w.submit_append(entry).result()
