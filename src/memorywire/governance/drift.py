"""Writes made behind governance's back: live memories the audit log cannot account for.

Governance sees only what goes through it; a program that opens the store file itself (the
library on ``mem.db``, a SQL client) leaves the hash chain intact and was therefore never
noticed. :func:`unaudited_memories` compares the store with the log: every live memory
created or changed since the log began must be named by a write entry of the log no earlier
than its last change (``TOLERANCE_MS`` allows for the store stamping a row a moment after the
log). Memories older than the first entry predate governance and are left alone.

Limits: a memory deleted behind governance's back is not seen (nothing is left to list), and
the check reads every live memory, so it belongs to ``audit verify``, not to every request.
"""

from __future__ import annotations

from typing import Any

from memorywire.core.records import ListQuery
from memorywire.governance.audit import AuditLog
from memorywire.store.base import MemoryStore

__all__ = ["TOLERANCE_MS", "unaudited_memories"]

TOLERANCE_MS = 2_000
#: Entries that name memories without writing them.
_NOT_WRITES = frozenset({"recall", "get", "list", "history", "staged", "rejected",
                         "policy_changed"})
#: Phases of write actions that changed nothing: a remember answered by a stored memory
#: (governance/repeats.py) does not explain a change made to that memory.
_NOT_WRITE_PHASES = frozenset({"deduplicated"})
_PAGE = 1000


def _last_writes(log: AuditLog) -> tuple[int | None, dict[str, int]]:
    first: int | None = None
    last: dict[str, int] = {}
    for entry in log.entries():
        first = entry.ts if first is None else first
        if entry.action in _NOT_WRITES or entry.details.get("phase") in _NOT_WRITE_PHASES:
            continue
        for memory_id in entry.memory_ids:
            last[memory_id] = max(last.get(memory_id, 0), entry.ts)
    return first, last


async def unaudited_memories(store: MemoryStore, log: AuditLog) -> list[dict[str, Any]]:
    """``[{agent_id, id, changed_at}]`` for each live memory no audited write explains."""
    first, last = _last_writes(log)
    if first is None:
        return []  # an empty log: whatever the store holds predates governance
    found: list[dict[str, Any]] = []
    after: str | None = None
    seen: set[str] = set()
    while True:
        page = await store.list(ListQuery(agent_id=None, include_archived=True, limit=_PAGE,
                                          after_id=after))
        fresh = [m for m in page if m.id not in seen]
        for m in fresh:
            seen.add(m.id)
            changed = max(m.created_at, m.updated_at or 0)
            if changed + TOLERANCE_MS < first:
                continue  # written before governance began
            written = last.get(m.id)
            if written is None or written + TOLERANCE_MS < changed:
                found.append({"agent_id": m.agent_id, "id": m.id, "changed_at": changed})
        if len(page) < _PAGE or not fresh:
            return found
        after = page[-1].id
