"""How one memorywire record lives in mem0: payload keys, scope tokens, our embedder for mem0.

mem0 picks its own UUIDs, so our id, our exact scope and every v0 field travel in the payload
under ``mw_*`` keys (user metadata losslessly under ``mw_meta``); mem0's ``agent_id``/
``user_id`` hold the caller's ids where mem0 accepts them, otherwise a hash token.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memorywire.core.records import Row
from memorywire.embed.base import Embedder
from memorywire.errors import CapabilityMissing, StoreCorrupt
from memorywire.wire.models import MemoryType

__all__ = [
    "ARCHIVED",
    "DELETED",
    "LIVE",
    "NEVER",
    "PUSHDOWN_KEY",
    "SCAN_PAGE",
    "EmbedderForMem0",
    "Mem0Row",
    "import_mem0",
    "iso",
    "mem0_entity",
    "payload_of",
    "row_from_item",
    "scope_key",
]

LIVE, DELETED, ARCHIVED = "live", "deleted", "archived"
#: Sort key of "never expires", so one range filter hides expired rows (JSON-safe int).
NEVER = 2**53 - 1
#: Ids mem0 accepts verbatim; anything else (whitespace, ``*``) travels as a hash token.
MEM0_SAFE_ID = re.compile(r"[A-Za-z0-9._:@/+=-]{1,256}")
PUSHDOWN_KEY = re.compile(r"[A-Za-z0-9_]{1,64}")
SCAN_PAGE = 1000


def import_mem0() -> Any:
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    os.environ.setdefault("MEM0_DIR", os.path.join(tempfile.gettempdir(), f"memorywire-mem0-{uid}"))
    try:
        import mem0
    except ImportError as exc:
        raise CapabilityMissing(
            "the mem0 store needs mem0ai; install it with: pip install 'memorywire[mem0]'"
        ) from exc
    return mem0


def scope_key(value: str) -> str:
    """A filter value mem0 can never read as a wildcard, exact up to a 128-bit hash."""
    return hashlib.blake2b(value.encode("utf-8"), digest_size=16).hexdigest()


def mem0_entity(value: str) -> str:
    return value if MEM0_SAFE_ID.fullmatch(value) and value != "*" else "mw-" + scope_key(value)


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat()


class EmbedderForMem0:
    """Duck-types mem0's ``EmbeddingBase`` around a memorywire :class:`Embedder`."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self.config = None

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        return [float(x) for x in self._embedder.embed([text])[0]]

    def embed_batch(self, texts: Sequence[str], memory_action: str = "add") -> list[list[float]]:
        return [[float(x) for x in row] for row in self._embedder.embed(list(texts))]


@dataclass(frozen=True)
class Mem0Row(Row):
    """A row plus mem0's own id of the item that holds it."""

    uuid: str = ""


def row_from_item(item: dict[str, Any]) -> Mem0Row:
    """Decode a mem0 item; ``uuid`` is mem0's id, ``id`` ours."""
    p = item.get("metadata") or {}
    try:
        return Mem0Row(
            uuid=str(item["id"]), id=str(p["mw_id"]), agent_id=str(p["mw_agent_id"]),
            user_id=p.get("mw_user_id"), type=MemoryType(p["mw_type"]),
            stored=str(p["mw_content"]) if "mw_content" in p else str(item["memory"]),
            metadata=dict(p.get("mw_meta") or {}),
            confidence=float(p.get("mw_confidence", 1.0)), source=p.get("mw_source"),
            created_at=int(p["mw_created_at"]), updated_at=p.get("mw_updated_at"),
            expires_at=p.get("mw_expires_at"),
            deleted_at=(p.get("mw_deleted_at") or int(p["mw_created_at"])
                        if p.get("mw_state") == DELETED else None),
            archived_at=(p.get("mw_archived_at") or int(p["mw_created_at"])
                         if p.get("mw_state") == ARCHIVED else None),
            demoted=bool(p.get("mw_demoted", False)), merged_into=p.get("mw_merged_into"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreCorrupt(f"mem0 memory {item.get('id')!r} lacks memorywire fields: {exc}") \
            from exc


def payload_of(row: Row) -> dict[str, Any]:
    """Every ``mw_*`` key of a row (``None`` clears one on update: mem0 merges payloads)."""
    state = DELETED if row.deleted_at is not None else (
        ARCHIVED if row.archived_at is not None else LIVE)
    return {
        "mw_id": row.id, "mw_agent_id": row.agent_id, "mw_scope": scope_key(row.agent_id),
        "mw_user_id": row.user_id,
        "mw_user_scope": None if row.user_id is None else scope_key(row.user_id),
        "mw_type": row.type.value, "mw_meta": dict(row.metadata),
        "mw_confidence": row.confidence, "mw_source": row.source,
        "mw_created_at": row.created_at, "mw_updated_at": row.updated_at,
        "mw_expires_at": row.expires_at,
        "mw_expiry": NEVER if row.expires_at is None else row.expires_at,
        "mw_state": state, "mw_deleted_at": row.deleted_at, "mw_archived_at": row.archived_at,
        "mw_demoted": row.demoted, "mw_merged_into": row.merged_into,
        # mem0 embeds and shows ``data``: a procedure gives it its words, we keep the JSON.
        "mw_content": row.stored,
    }


