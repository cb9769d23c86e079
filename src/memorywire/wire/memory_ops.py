"""Typed models of the record operations: get, list, update, history, erase.

The five v0 operations speak in queries and scopes; users coming from mem0, Zep or Letta also
expect to address one memory by id, page through a scope, edit in place, read a memory's past
and erase a person. These models mirror ``schemas/v0/operations/{get,list,update,history,
erase}[.response].json`` exactly as :mod:`memorywire.wire.models` mirrors the rest, and the
same agreement test proves it.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, field_validator

from memorywire.wire.models import (
    AgentId,
    Confidence,
    Id,
    MemoryRecord,
    MemoryType,
    Millis,
    StoreCount,
    UserId,
    _Strict,
)

__all__ = [
    "EraseRequest",
    "EraseResponse",
    "GetRequest",
    "GetResponse",
    "HistoryRequest",
    "HistoryResponse",
    "ListRequest",
    "ListResponse",
    "Revision",
    "UpdateMemoryRequest",
    "UpdateMemoryResponse",
]

Limit = Annotated[int, Field(ge=1, le=1000)]


class GetRequest(_Strict):
    agent_id: AgentId
    id: Id
    user_id: UserId | None = None


class GetResponse(_Strict):
    memory: MemoryRecord


class ListRequest(_Strict):
    agent_id: AgentId
    user_id: UserId | None = None
    types: Annotated[list[MemoryType], Field(min_length=1)] | None = None
    filter: dict[str, Any] | None = None
    include_archived: bool = False
    limit: Limit = 100
    cursor: Annotated[str, Field(min_length=1)] | None = None
    #: v0.1: only what held at this time (valid time), as known now: recall's ``as_of``.
    as_of: Millis | None = None
    #: v0.1: only what was known at this time (record time): recall's ``known_at``.
    known_at: Millis | None = None

    @field_validator("filter")
    @classmethod
    def _filter_nonempty(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is not None and not v:
            raise ValueError("filter must name at least one key")
        return v


class ListResponse(_Strict):
    memories: list[MemoryRecord]
    #: Always on the wire (``null`` on the last page): :func:`memorywire.wire.codec.to_wire`
    #: keeps it, so a client loops on it without guessing.
    next_cursor: str | None


class UpdateMemoryRequest(_Strict):
    agent_id: AgentId
    id: Id
    user_id: UserId | None = None
    content: Annotated[str, Field(min_length=1)] | dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    confidence: Confidence | None = None
    #: NEW (v0.1): memories this one replaces, the rule of ``RememberRequest.supersedes``.
    supersedes: Annotated[list[Id], Field(min_length=1, max_length=100)] | None = None
    reason: str | None = None

    @field_validator("content", "metadata")
    @classmethod
    def _nonempty(cls, v: str | dict[str, Any] | None) -> str | dict[str, Any] | None:
        if isinstance(v, dict) and not v:
            raise ValueError("must not be an empty object")
        return v

    def model_post_init(self, __context: Any) -> None:
        if (self.content is None and self.metadata is None and self.confidence is None
                and self.supersedes is None):
            raise ValueError("update needs at least one of 'content', 'metadata', "
                             "'confidence', 'supersedes'")
        if self.supersedes is not None and self.id in self.supersedes:
            raise ValueError("supersedes must not name the memory itself")


class UpdateMemoryResponse(_Strict):
    pending_approval: bool
    memory: MemoryRecord | None = None
    approval_url: str | None = None
    #: NEW (v0.2): the approval item a reviewer decides, present while pending.
    approval_id: str | None = None


class HistoryRequest(_Strict):
    agent_id: AgentId
    id: Id
    user_id: UserId | None = None
    limit: Limit = 100


class Revision(_Strict):
    seq: Annotated[int, Field(ge=1)]
    at: Millis
    actor: str
    operation: str
    phase: str
    reason: str | None = None
    details: dict[str, Any] | None = None


class HistoryResponse(_Strict):
    id: Id
    revisions: list[Revision]


class EraseRequest(_Strict):
    agent_id: AgentId
    user_id: UserId | None = None
    reason: str | None = None


class EraseResponse(_Strict):
    erased_ids: list[str]
    stores: list[StoreCount]
    pending_approval: bool
    approval_url: str | None = None
    #: NEW (v0.2): the approval item a reviewer decides, present while pending.
    approval_id: str | None = None
    #: NEW (v0.1): the signed deletion receipt of the erase, where the server signs (as forget).
    receipt: dict[str, Any] | None = None
