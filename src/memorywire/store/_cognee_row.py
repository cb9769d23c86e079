"""One memorywire record as a Cognee data item: the whole record in ``external_metadata``."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from memorywire.errors import StoreCorrupt
from memorywire.store._common import content_from_storage
from memorywire.wire.models import MemoryRecord, MemoryType

__all__ = ["KEY", "Row", "row_from_data"]

KEY = "memorywire"


@dataclass(frozen=True)
class Row:
    data_id: uuid.UUID
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
        return {
            "v": 1, "id": self.id, "rev": self.rev, "agent_id": self.agent_id,
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


def row_from_data(data_id: Any, meta: Any) -> Row:
    try:
        d = meta[KEY]
        return Row(
            data_id=uuid.UUID(str(data_id)), id=str(d["id"]), rev=int(d["rev"]),
            agent_id=str(d["agent_id"]), user_id=d.get("user_id"), type=MemoryType(d["type"]),
            stored=str(d["stored"]), metadata=dict(d.get("metadata") or {}),
            confidence=float(d["confidence"]), source=d.get("source"),
            created_at=int(d["created_at"]), updated_at=d.get("updated_at"),
            expires_at=d.get("expires_at"), deleted_at=d.get("deleted_at"),
            archived_at=d.get("archived_at"), demoted=bool(d.get("demoted", False)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreCorrupt(f"Cognee data item {data_id!r} does not hold a memorywire record") \
            from exc
