"""One memory as a self-contained revision document, for backends that cannot update in place.

Letta passages and Cognee data items cannot be edited, so those adapters write the whole
record as a new revision and delete the old one; readers keep the highest ``rev`` per id. The
record layout is the same for both, so it lives here once (a new optional key reads as absent
from older documents); liveness, scope and listing are the core rules of every store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memorywire.core.records import Row
from memorywire.wire.models import MemoryType

__all__ = ["RevisionRow", "revision_fields"]

#: Layout version of :meth:`RevisionRow.doc`; readers refuse what they do not know.
DOC_VERSION = 1


@dataclass(frozen=True)
class RevisionRow(Row):
    """A core row plus its revision number (readers keep the highest per id)."""

    rev: int = 1

    def doc(self) -> dict[str, Any]:
        """What the backend stores (JSON-safe)."""
        return {
            "v": DOC_VERSION, "id": self.id, "rev": self.rev, "agent_id": self.agent_id,
            "user_id": self.user_id, "type": self.type.value, "stored": self.stored,
            "metadata": self.metadata, "confidence": self.confidence, "source": self.source,
            "created_at": self.created_at, "updated_at": self.updated_at,
            "expires_at": self.expires_at, "deleted_at": self.deleted_at,
            "archived_at": self.archived_at, "demoted": self.demoted,
            "merged_into": self.merged_into,
        }


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
        "demoted": bool(d.get("demoted", False)), "merged_into": d.get("merged_into"),
    }
