"""What a dump carries from governance: revision history and pending approvals.

Neither lives in a store. A memory's history is the audit log's entries naming it, and a
pending approval is a queue item whose write has not reached the store yet, so both move only
between *governed* stores (a :class:`~memorywire.governance.store.GovernedStore` on each side).
Into an ungoverned target they are lost, and the fidelity plan says so before anything is
written (the pseudo-fields ``history`` and ``pending``).

The target's audit chain is append-only, so a restored revision is a new entry: the original
operation and actor, marked ``imported`` with the source's ``seq`` and time (``history``
reports that time). Every imported page is also recorded as an ``import`` entry naming its
memories, so ``audit verify`` does not mistake imported memories for writes made behind
governance's back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memorywire.core.records import Row
from memorywire.errors import CapabilityMissing, Conflict, InvalidRequest
from memorywire.governance.actor import current_actor
from memorywire.governance.queue import QueueItem
from memorywire.governance.store import GovernedStore

__all__ = ["EXTRA_FIELDS", "HISTORY_LIMIT", "history_of", "item_of_doc", "pending_docs",
           "record_import", "require_governance", "restage", "restore_history", "split"]

#: Plan entries beside the record fields: what governance holds about the records.
EXTRA_FIELDS = ("history", "pending")
#: The most revisions one memory carries into a dump (a memory rewritten more often than
#: this is a log to export with ``memorywire audit export``, not a record).
HISTORY_LIMIT = 10_000
_ITEM_KEYS = ("id", "operation", "agent_id", "user_id", "request", "requested_by",
              "requester_id", "reasoning", "created_at", "updated_at", "memory_id")


def split(store: Any) -> tuple[Any, GovernedStore | None]:
    """The store whose rows move, and the governance around it (``None``: ungoverned)."""
    if isinstance(store, GovernedStore):
        return store.inner, store
    return store, None


def require_governance(gov: GovernedStore | None, option: str) -> GovernedStore:
    if gov is None:
        raise CapabilityMissing(f"{option} needs governance: the audit log and the approval "
                                "queue live there (give --governance-db)")
    return gov


async def history_of(gov: GovernedStore, row: Row) -> list[dict[str, Any]]:
    """The memory's revisions, oldest first, in the wire form of ``history``."""
    entries = await gov.aaudit_entries(agent_id=row.agent_id, memory_id=row.id,
                                       limit=HISTORY_LIMIT)
    out = []
    for e in entries:
        details = dict(e.get("details") or {})
        imported = details.get("imported")
        at = imported.get("at") if isinstance(imported, dict) else None
        rev: dict[str, Any] = {"seq": int(e["seq"]), "at": int(at or e["ts"]),
                               "actor": str(e["actor"]), "operation": str(e["action"]),
                               "phase": str(details.pop("phase", None) or "event")}
        reason = details.pop("reason", None)
        if reason is not None:
            rev["reason"] = str(reason)
        if details:
            rev["details"] = details
        out.append(rev)
    return out


async def restore_history(gov: GovernedStore, row: Row, history: Sequence[dict[str, Any]],
                          source: str) -> int:
    """Append each revision to the target's chain, marked ``imported``; returns how many.

    A revision already imported from the same source (same ``seq``) is not appended again,
    so importing a dump twice leaves one copy of its history."""
    held = set()
    for e in await gov.aaudit_entries(agent_id=row.agent_id, memory_id=row.id,
                                      limit=HISTORY_LIMIT * 2):
        mark = (e.get("details") or {}).get("imported")
        if isinstance(mark, dict):
            held.add((mark.get("source"), mark.get("seq")))
    added = 0
    for n, rev in enumerate(history):
        try:
            details = dict(rev.get("details") or {})
            details["phase"] = str(rev["phase"])
            if rev.get("reason") is not None:
                details["reason"] = str(rev["reason"])
            details.setdefault("imported", {"seq": int(rev["seq"]), "at": int(rev["at"]),
                                            "source": source})
            event = {"actor": str(rev["actor"]), "action": str(rev["operation"]),
                     "agent_id": row.agent_id, "memory_ids": [row.id], "details": details}
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidRequest(f"history of {row.agent_id}/{row.id}, revision {n}: "
                                 f"not a revision ({exc})") from exc
        if (details["imported"].get("source"), details["imported"].get("seq")) in held:
            continue
        await gov.record(event)
        added += 1
    return added


async def record_import(gov: GovernedStore, rows: Sequence[Row], source: str) -> None:
    """One ``import`` entry per agent of the page, naming the memories written."""
    by_agent: dict[str, list[str]] = {}
    for row in rows:
        by_agent.setdefault(row.agent_id, []).append(row.id)
    for agent_id, ids in by_agent.items():
        await gov.record({"actor": current_actor(), "action": "import", "agent_id": agent_id,
                          "memory_ids": ids, "details": {"source": source, "count": len(ids)}})


async def pending_docs(gov: GovernedStore, agent_id: str | None,
                       user_id: str | None) -> list[dict[str, Any]]:
    """The pending items of the selection, as dump ``pending`` objects (without the
    source's content hash: it is keyed with the source's secret and means nothing
    elsewhere)."""
    items = await gov.pending_items()
    return [{k: getattr(i, k) for k in _ITEM_KEYS} for i in items
            if (agent_id is None or i.agent_id == agent_id)
            and (user_id is None or i.user_id == user_id)]


def item_of_doc(doc: dict[str, Any]) -> QueueItem:
    try:
        if not isinstance(doc["request"], dict):
            raise TypeError("request is not an object")
        return QueueItem(
            id=str(doc["id"]), operation=str(doc["operation"]), agent_id=str(doc["agent_id"]),
            user_id=doc.get("user_id"), request=doc["request"], content_hash="",
            requested_by=str(doc["requested_by"]), reasoning=doc.get("reasoning"),
            status="pending", created_at=int(doc["created_at"]),
            updated_at=int(doc["updated_at"]), memory_id=doc.get("memory_id"),
            requester_id=doc.get("requester_id"))
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidRequest(f"pending item {doc.get('id')!r}: not a staged operation "
                             f"({exc})") from exc


async def restage(gov: GovernedStore, docs: Sequence[dict[str, Any]], source: str,
                  skip_conflicts: bool) -> tuple[int, int]:
    """Stage every item in the target's queue: ``(staged, skipped)``. An id the target's
    queue holds for another operation is skipped when ``skip_conflicts``, else refused."""
    staged = skipped = 0
    for doc in docs:
        try:
            await gov.restage(item_of_doc(doc), source)
            staged += 1
        except Conflict:
            if not skip_conflicts:
                raise
            skipped += 1
    return staged, skipped
