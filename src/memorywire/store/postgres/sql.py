"""SQL building and row translation for :mod:`memorywire.store.postgres`: no I/O here."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg
import psycopg_pool

from memorywire.core.content import content_from_storage
from memorywire.core.records import Row
from memorywire.errors import BackendUnavailable, InvalidRequest, MemorywireError
from memorywire.wire.fields import FIELDS, MAX_MILLIS, MAX_TEXT
from memorywire.wire.models import MemoryRecord, MemoryType

__all__ = [
    "RECORD_COLS",
    "ROW_COLS",
    "TABLE",
    "PgVector",
    "Where",
    "add_metadata_filter",
    "add_typed_where",
    "record_from_row",
    "reject_nul",
    "row_of",
    "scope_where",
    "translate_error",
    "tsquery_text",
    "vector_literal",
]

TABLE = "memorywire_memories"
RECORD_COLS = (
    "id, agent_id, user_id, type, content, metadata, confidence, source, created_at, "
    "updated_at, expires_at, recall_count, last_recalled_at"
)
#: Every column of a core ``Row`` (``score_factor`` stands for ``demoted``).
ROW_COLS = (
    RECORD_COLS + ", deleted_at, archived_at, score_factor, merged_into"
)


def row_of(r: dict[str, Any]) -> Row:
    """A table row as a core :class:`Row`."""
    return Row(
        id=r["id"], agent_id=r["agent_id"], user_id=r["user_id"], type=MemoryType(r["type"]),
        stored=r["content"], metadata=dict(r["metadata"] or {}), confidence=r["confidence"],
        source=r["source"], created_at=r["created_at"], updated_at=r["updated_at"],
        expires_at=r["expires_at"], deleted_at=r["deleted_at"], archived_at=r["archived_at"],
        demoted=float(r["score_factor"]) != 1.0, last_recalled_at=r["last_recalled_at"],
        recall_count=r["recall_count"], merged_into=r["merged_into"])


@dataclass
class Where:
    """A conjunction of SQL conditions with their positional parameters."""

    parts: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)

    def add(self, sql: str, *params: Any) -> None:
        self.parts.append(sql)
        self.params.extend(params)

    def sql(self) -> str:
        return " AND ".join(self.parts) if self.parts else "TRUE"


def add_metadata_filter(w: Where, flt: dict[str, Any]) -> None:
    """Equality per top-level key (JSON equality, as :mod:`memorywire.core.filters`).

    ``@>`` lets the GIN index narrow the rows first; the per-key ``=`` keeps the meaning exact
    for arrays and objects, which ``@>`` alone would match by containment. jsonb equality
    already tells ``true`` from ``1`` and compares numbers by value.
    """
    w.add("metadata @> %s::jsonb", json.dumps(flt))
    for key, value in flt.items():
        w.add("metadata -> %s = %s::jsonb", key, json.dumps(value))


_CMP = {"eq": "=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}


def add_typed_where(w: Where, where: dict[str, dict[str, Any]]) -> None:
    """The recall ``where`` in SQL, meaning exactly :func:`memorywire.core.fields.matches_where`:
    the memory is of the field's type and holds a well-formed value that meets every operator.
    The ``CASE`` keeps the cast from ever seeing a value of another JSON type (PostgreSQL does
    not promise to evaluate ``AND`` left to right)."""
    for name, cond in where.items():
        f = FIELDS[name]
        w.add("type = %s", f.owner)
        if f.kind in ("number", "time"):
            value = (f"(CASE WHEN jsonb_typeof(metadata->'{name}') = 'number' "
                     f"THEN (metadata->>'{name}')::numeric END)")
            low, high = (f.low, f.high) if f.kind == "number" else (0, MAX_MILLIS)
            w.add(f"{value} BETWEEN %s AND %s", low, high)
            if f.kind == "time":
                w.add(f"{value} = trunc({value})")
            for op, want in cond.items():
                w.add(f"{value} {_CMP[op]} %s", want)
        elif f.kind == "text":
            w.add(f"jsonb_typeof(metadata->'{name}') = 'string'")
            w.add(f"char_length(metadata->>'{name}') <= %s", MAX_TEXT)
            if f.choices is not None:
                w.add(f"metadata->>'{name}' = ANY(%s)", list(f.choices))
            for op, want in cond.items():
                w.add(f"metadata->>'{name}' = ANY(%s)", want if op == "in" else [want])
        else:
            w.add(f"jsonb_typeof(metadata->'{name}') = 'array'")
            for want in cond.values():
                w.add(f"metadata->'{name}' @> %s::jsonb", json.dumps([want]))


def scope_where(
    *,
    agent_id: str,
    user_id: str | None,
    now_ms: int,
    types: Sequence[str] | None = None,
    metadata_filter: dict[str, Any] | None = None,
    created_after: int | None = None,
    include_archived: bool = False,
    typed_where: dict[str, dict[str, Any]] | None = None,
) -> Where:
    """Live rows in scope: not deleted, not archived (unless asked), not past ``expires_at``."""
    w = Where()
    w.add("agent_id = %s", agent_id)
    w.add("deleted_at IS NULL")
    if not include_archived:
        w.add("archived_at IS NULL")
    w.add("(expires_at IS NULL OR expires_at > %s)", now_ms)
    if user_id is not None:
        w.add("user_id = %s", user_id)
    if types:
        w.add("type = ANY(%s)", list(types))
    if metadata_filter:
        add_metadata_filter(w, metadata_filter)
    if typed_where:
        add_typed_where(w, typed_where)
    if created_after is not None:
        w.add("created_at >= %s", created_after)
    return w


def tsquery_text(words: Sequence[str]) -> str | None:
    """An OR query over quoted lexemes: any shared word is evidence, ranking sorts it out."""
    lexemes = []
    for word in words:
        cleaned = word.replace("'", "").replace("\\", "").strip()
        if cleaned:
            lexemes.append("'" + cleaned + "'")
    return " | ".join(dict.fromkeys(lexemes)) or None


def vector_literal(v: Any) -> str:
    """pgvector's text form; ``%.9g`` round-trips a float32 exactly."""
    return "[" + ",".join(f"{x:.9g}" for x in np.asarray(v, dtype=np.float32).tolist()) + "]"


class PgVector:
    """A vector sent as a binary ``real[]`` parameter, for SQL that casts it (``%s::vector``).

    The text form (:func:`vector_literal`) formats every float in Python and pgvector parses
    it back; on the request path that was a measurable share of an API server's CPU per
    operation (one or two vectors each). The binary array is built by numpy in one step and
    casts to ``vector`` exactly (pgvector's ``real[]`` cast): the same float32 values.
    """

    __slots__ = ("values",)

    def __init__(self, v: Any) -> None:
        self.values = np.asarray(v, dtype=np.float32).reshape(-1)


#: The element type of ``real[]`` (``float4``); fixed by PostgreSQL, in every database.
_FLOAT4_OID = 700
_FLOAT4_ARRAY_OID = 1021
_CELL = np.dtype([("size", ">i4"), ("value", ">f4")])


class _PgVectorDumper(psycopg.adapt.Dumper):
    """``real[]`` in the binary wire format: one dimension, no nulls, then each element as
    its byte length (4) and its big-endian value."""

    format = psycopg.pq.Format.BINARY
    oid = _FLOAT4_ARRAY_OID

    def dump(self, obj: Any) -> bytes:
        values = obj.values
        cells = np.empty(values.shape[0], dtype=_CELL)
        cells["size"] = 4
        cells["value"] = values
        header = np.array([1, 0, _FLOAT4_OID, values.shape[0], 1], dtype=">i4")
        return header.tobytes() + cells.tobytes()


# Every connection opened afterwards copies the global adapters, so this reaches them all.
psycopg.adapters.register_dumper(PgVector, _PgVectorDumper)


def reject_nul(text: str, what: str) -> None:
    # PostgreSQL text cannot hold U+0000; say so instead of failing inside the driver.
    if "\x00" in text:
        raise InvalidRequest(f"{what} contains a NUL character, which PostgreSQL cannot store")


def record_from_row(row: dict[str, Any]) -> MemoryRecord:
    mtype = MemoryType(row["type"])
    return MemoryRecord.model_validate({
        "id": row["id"],
        "agent_id": row["agent_id"],
        "type": mtype,
        "content": content_from_storage(mtype, row["content"]),
        "created_at": row["created_at"],
        "user_id": row["user_id"],
        "metadata": dict(row["metadata"] or {}),
        "confidence": row["confidence"],
        "source": row["source"],
        "updated_at": row["updated_at"],
        "expires_at": row["expires_at"],
        "recall_count": row["recall_count"],
        "last_recalled_at": row["last_recalled_at"],
    })


def translate_error(exc: Exception) -> MemorywireError:
    """The one place driver errors become memorywire errors."""
    unreachable = psycopg_pool.PoolTimeout | psycopg.OperationalError | psycopg.InterfaceError
    if isinstance(exc, unreachable):
        return BackendUnavailable(f"PostgreSQL is unreachable: {exc}")
    if isinstance(exc, psycopg.errors.DataError):
        return InvalidRequest(f"PostgreSQL refused a value: {exc}")
    return BackendUnavailable(f"PostgreSQL failed: {type(exc).__name__}: {exc}")
