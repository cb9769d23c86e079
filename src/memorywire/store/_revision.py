"""One memory as a self-contained revision document, for backends that cannot update in place.

Letta passages and Cognee data items cannot be edited, so those adapters write the whole
record as a new revision and delete the old one; readers keep the highest ``rev`` per id. The
record layout, its scope and liveness rules, and listing are the same for both, so they live
here once; each adapter adds only where its revision is stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from memorywire.core.filters import matches_filter
from memorywire.store._common import content_from_storage
from memorywire.store.base import ListQuery
from memorywire.wire.models import MemoryRecord, MemoryType

__all__ = ["RevisionRow", "list_rows", "revision_fields"]

#: Layout version of :meth:`RevisionRow.doc`; readers refuse what they do not know.
DOC_VERSION = 1


@dataclass(frozen=True)
class RevisionRow:
    id: str
    rev: int
    agent_id: str
    user_id: str | None
    type: MemoryType
    stored: str
    metadata: dict[str, Any]
    confidence: float
    source: str | None
    created_at: int
    updated_at: int | None
    expires_at: int | None
    deleted_at: int | None
    archived_at: int | None
    demoted: bool

    def live(self, now: int) -> bool:
        return (self.deleted_at is None and self.archived_at is None
                and (self.expires_at is None or self.expires_at > now))

    def in_scope(self, user_id: str | None) -> bool:
        return user_id is None or self.user_id == user_id

    def doc(self) -> dict[str, Any]:
        """What the backend stores (JSON-safe)."""
        return {
            "v": DOC_VERSION, "id": self.id, "rev": self.rev, "agent_id": self.agent_id,
            "user_id": self.user_id, "type": self.type.value, "stored": self.stored,
            "metadata": self.metadata, "confidence": self.confidence, "source": self.source,
            "created_at": self.created_at, "updated_at": self.updated_at,
            "expires_at": self.expires_at, "deleted_at": self.deleted_at,
            "archived_at": self.archived_at, "demoted": self.demoted,
        }

    def record(self) -> MemoryRecord:
        return MemoryRecord.model_validate({
            "id": self.id, "agent_id": self.agent_id, "type": self.type,
            "content": content_from_storage(self.type, self.stored),
            "created_at": self.created_at, "user_id": self.user_id,
            "metadata": dict(self.metadata), "confidence": self.confidence,
            "source": self.source, "updated_at": self.updated_at, "expires_at": self.expires_at,
        })


def revision_fields(d: Mapping[str, Any]) -> dict[str, Any]:
    """The constructor fields of a stored :meth:`RevisionRow.doc`.

    Raises ``KeyError``, ``TypeError`` or ``ValueError`` on a document that is not ours; the
    adapter turns that into ``StoreCorrupt`` naming its own storage unit.
    """
    if d.get("v", DOC_VERSION) != DOC_VERSION:
        raise ValueError(f"revision layout v{d.get('v')} is newer than this memorywire")
    return {
        "id": str(d["id"]), "rev": int(d["rev"]), "agent_id": str(d["agent_id"]),
        "user_id": d.get("user_id"), "type": MemoryType(d["type"]), "stored": str(d["stored"]),
        "metadata": dict(d.get("metadata") or {}), "confidence": float(d["confidence"]),
        "source": d.get("source"), "created_at": int(d["created_at"]),
        "updated_at": d.get("updated_at"), "expires_at": d.get("expires_at"),
        "deleted_at": d.get("deleted_at"), "archived_at": d.get("archived_at"),
        "demoted": bool(d.get("demoted", False)),
    }


R = TypeVar("R", bound=RevisionRow)


def list_rows(rows_by_id: Mapping[str, R], query: ListQuery, now: int) -> list[MemoryRecord]:
    """``MemoryStore.list`` over one agent's newest revisions: oldest first, paged by id."""
    rows = sorted(rows_by_id.values(), key=lambda r: (r.created_at, r.id))
    after: tuple[int, str] | None = None
    if query.after_id is not None and query.after_id in rows_by_id:
        anchor = rows_by_id[query.after_id]
        after = (anchor.created_at, anchor.id)
    out: list[MemoryRecord] = []
    for row in rows:
        if not row.in_scope(query.user_id) or row.deleted_at is not None:
            continue
        if row.expires_at is not None and row.expires_at <= now:
            continue
        if row.archived_at is not None and not query.include_archived:
            continue
        if query.types is not None and row.type not in query.types:
            continue
        if not matches_filter(row.metadata, query.filter):
            continue
        if after is not None and (row.created_at, row.id) <= after:
            continue
        out.append(row.record())
        if len(out) >= query.limit:
            break
    return out
