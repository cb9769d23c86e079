"""What remember, forget, update, expire and list mean for one stored record: pure rules.

Every backend calls these, so a rule is written once: the row stores (memory, mem0, Letta,
Cognee) through :mod:`memorywire.store.rowstore`, SQLite and PostgreSQL around their own SQL.
:class:`Row` is the record as a store keeps it (content as stored text, lifecycle marks);
adding a record field means adding it here, in the wire model, and in each backend's
mapping of a row to its columns or payload.

Lifecycle. A row is *live* while it is neither deleted, archived, merged away nor past
``expires_at``; only live rows are read, merged, expired or updated. Re-remembering an id
whose row is not live is a new write (see :func:`remember_action`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from memorywire.core.content import (
    Edge,
    content_from_storage,
    content_to_storage,
    edges_of,
    links_of,
)
from memorywire.core.expiry import ExpiryFacts
from memorywire.core.filters import matches_filter
from memorywire.errors import Conflict
from memorywire.wire.fields import check_metadata_fields
from memorywire.wire.models import (
    ExpireAction,
    ForgetRequest,
    MemoryRecord,
    MemoryType,
    RememberRequest,
)

__all__ = [
    "ListQuery",
    "RememberAction",
    "Row",
    "UpdatePlan",
    "UpdateRequest",
    "expire_marks",
    "forget_selects",
    "list_page",
    "new_row",
    "patch_metadata",
    "plan_update",
    "remember_action",
]


@dataclass(frozen=True)
class ListQuery:
    """Enumerate live memories in a scope, oldest first, for consolidation, export and diffs.

    ``agent_id=None`` lists every agent (administrative callers only).
    """

    agent_id: str | None
    user_id: str | None = None
    types: Sequence[MemoryType] | None = None
    filter: dict[str, Any] | None = None
    include_archived: bool = False
    limit: int = 1000
    after_id: str | None = None


@dataclass(frozen=True)
class UpdateRequest:
    """Change a live memory in place (procedure state, tier promotion); id and scope stay."""

    agent_id: str
    id: str
    user_id: str | None = None
    content: str | dict[str, Any] | None = None
    metadata_patch: dict[str, Any] | None = None
    confidence: float | None = None
    #: Why the memory changed; stores ignore it, governance records it in the audit log.
    reason: str | None = None


@dataclass(frozen=True)
class Row:
    """One stored memory. ``stored`` is the content as kept (see :mod:`core.content`)."""

    id: str
    agent_id: str
    user_id: str | None
    type: MemoryType
    stored: str
    metadata: dict[str, Any]
    confidence: float
    source: str | None
    created_at: int
    updated_at: int | None = None
    expires_at: int | None = None
    deleted_at: int | None = None
    archived_at: int | None = None
    demoted: bool = False
    last_recalled_at: int | None = None
    recall_count: int = 0
    #: The id of the live memory that absorbed this one in a merge (the row is deleted too).
    merged_into: str | None = None

    def live(self, now: int) -> bool:
        return (self.deleted_at is None and self.archived_at is None
                and (self.expires_at is None or self.expires_at > now))

    def in_scope(self, agent_id: str | None, user_id: str | None) -> bool:
        """``agent_id=None`` is every agent (administrative listing only)."""
        return ((agent_id is None or self.agent_id == agent_id)
                and (user_id is None or self.user_id == user_id))

    def content(self) -> str | dict[str, Any]:
        return content_from_storage(self.type, self.stored)

    def links(self) -> list[str]:
        return links_of(self.metadata)

    def edges(self) -> list[Edge]:
        return edges_of(self.metadata)

    def expiry_facts(self) -> ExpiryFacts:
        return ExpiryFacts(self.type, self.created_at, self.confidence, self.last_recalled_at)

    def record(self, *, recall_stats: bool = False) -> MemoryRecord:
        """The wire record; ``recall_stats`` adds the recall counters (stores tracking them)."""
        doc: dict[str, Any] = {
            "id": self.id, "agent_id": self.agent_id, "type": self.type,
            "content": self.content(), "created_at": self.created_at, "user_id": self.user_id,
            "metadata": dict(self.metadata), "confidence": self.confidence,
            "source": self.source, "updated_at": self.updated_at, "expires_at": self.expires_at,
        }
        if recall_stats:
            doc["recall_count"] = self.recall_count
            doc["last_recalled_at"] = self.last_recalled_at
        return MemoryRecord.model_validate(doc)


def age_key(row: Row) -> tuple[int, str]:
    return (row.created_at, row.id)


# --- remember ------------------------------------------------------------------------------


class RememberAction(Enum):
    INSERT = "insert"
    #: A retry of a live memory: answer with its original ``stored_at``, write nothing.
    REPLAY = "replay"
    #: The id names a row that is no longer live: overwrite it with the new write.
    REVIVE = "revive"


def remember_action(existing: Row | None, req: RememberRequest, stored: str,
                    now: int) -> RememberAction:
    """What a remember of ``req`` (with ``existing``, the row its id names in the agent) does.

    A live row with the same type and stored content is a retry; with anything else it is a
    ``Conflict``. A row that is deleted, archived, merged away or expired is revived as a new
    write (new content, new ``stored_at``, marks cleared): the caller was told its write was
    stored, so it must be readable, never silently swallowed by a dead row.
    """
    if existing is None:
        return RememberAction.INSERT
    if not existing.live(now):
        return RememberAction.REVIVE
    if existing.stored != stored or existing.type is not req.type:
        raise Conflict(f"id {existing.id!r} already holds a different memory")
    return RememberAction.REPLAY


def new_row(req: RememberRequest, id: str, stored: str, now: int) -> Row:
    """The row a fresh (or reviving) remember writes."""
    return Row(id=id, agent_id=req.agent_id, user_id=req.user_id, type=req.type, stored=stored,
               metadata=dict(req.metadata or {}), confidence=req.confidence, source=req.source,
               created_at=now, expires_at=req.expires_at)


# --- forget, expire ------------------------------------------------------------------------


def forget_selects(row: Row, req: ForgetRequest) -> bool:
    """Whether ``req`` forgets ``row``: in scope, named (ids and filter ANDed), and for a soft
    forget not already deleted (a hard forget also erases soft-deleted rows)."""
    return (row.in_scope(req.agent_id, req.user_id)
            and (req.hard_delete or row.deleted_at is None)
            and (req.ids is None or row.id in req.ids)
            and (req.filter is None or matches_filter(row.metadata, req.filter)))


def expire_marks(action: ExpireAction, now: int) -> dict[str, Any]:
    """The row fields an expire action sets on a matched row."""
    if action is ExpireAction.FORGET:
        return {"deleted_at": now}
    if action is ExpireAction.ARCHIVE:
        return {"archived_at": now}
    return {"demoted": True}


# --- update --------------------------------------------------------------------------------


def patch_metadata(metadata: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """A key set to ``None`` is removed; any other value replaces. Links are re-validated."""
    out = dict(metadata)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    links_of(out)
    return out


@dataclass(frozen=True)
class UpdatePlan:
    """The fields an update changes; ``None`` is "unchanged".

    ``stored`` is set only when the stored text really changes, which is exactly when a store
    must re-embed and re-index the memory.
    """

    metadata: dict[str, Any] | None = None
    stored: str | None = None
    confidence: float | None = None
    links_changed: bool = False
    changes: dict[str, Any] = field(default_factory=dict)


def plan_update(row: Row, req: UpdateRequest, now: int) -> UpdatePlan:
    changes: dict[str, Any] = {"updated_at": now}
    metadata = None
    if req.metadata_patch is not None:
        metadata = changes["metadata"] = patch_metadata(row.metadata, req.metadata_patch)
        check_metadata_fields(row.type, metadata)
    stored = None
    if req.content is not None:
        candidate = content_to_storage(row.type, req.content)
        if candidate != row.stored:
            stored = changes["stored"] = candidate
    if req.confidence is not None:
        changes["confidence"] = req.confidence
    return UpdatePlan(metadata=metadata, stored=stored, confidence=req.confidence,
                      links_changed=req.metadata_patch is not None
                      and "links" in req.metadata_patch,
                      changes=changes)


# --- list ----------------------------------------------------------------------------------


def list_page(rows: Iterable[Row], query: ListQuery, now: int) -> list[Row]:
    """``MemoryStore.list``: live (and, if asked, archived) rows in scope matching the types
    and filter, oldest first, strictly after ``after_id`` (an unknown anchor starts at the
    beginning), at most ``limit``."""
    ordered = sorted(rows, key=age_key)
    after: tuple[int, str] | None = None
    if query.after_id is not None:
        anchor = next((r for r in ordered if r.id == query.after_id
                       and r.in_scope(query.agent_id, None)), None)
        after = age_key(anchor) if anchor is not None else None
    out: list[Row] = []
    for row in ordered:
        if not row.in_scope(query.agent_id, query.user_id) or row.deleted_at is not None:
            continue
        if row.expires_at is not None and row.expires_at <= now:
            continue
        if row.archived_at is not None and not query.include_archived:
            continue
        if query.types is not None and row.type not in query.types:
            continue
        if not matches_filter(row.metadata, query.filter):
            continue
        if after is not None and age_key(row) <= after:
            continue
        out.append(row)
        if len(out) >= query.limit:
            break
    return out
