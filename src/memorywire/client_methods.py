"""The SDK's operations with real signatures, written once for every client.

Each method names its wire fields as typed keyword parameters, so an editor can show them
and a typo fails at the call; the one thing every call is about comes first and may be
positional (``remember(content)``, ``recall(query)``, ``get(id)``, ``forget(ids)``,
``merge(canonical, duplicates)``, ``expire(policy)``, ``update(id)``, ``history(id)``).

What was accepted before still is: a request model (``RememberRequest(...)``) or a mapping
of wire fields in that first place is the whole request, and keyword arguments are laid
over it. A positional mapping is therefore always a request document; structured content
goes by keyword (``remember(content={...}, ...)``). A parameter left at ``None`` is not
sent. ``remember`` without a ``type`` stores a ``semantic`` memory, as the CLI does.

:class:`AsyncOperations` is the base of :class:`~memorywire.client.Memory` and
:class:`~memorywire.client.RemoteMemory` (they say how one operation runs);
:class:`SyncOperations` the base of :class:`~memorywire.client.SyncMemory`.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from memorywire.errors import ErrorDetail, InvalidRequest
from memorywire.wire.memory_ops import (
    EraseRequest,
    EraseResponse,
    GetRequest,
    GetResponse,
    HistoryRequest,
    HistoryResponse,
    ListRequest,
    ListResponse,
    UpdateMemoryRequest,
    UpdateMemoryResponse,
)
from memorywire.wire.models import (
    ExpirePolicy,
    ExpireRequest,
    ExpireResponse,
    ForgetRequest,
    ForgetResponse,
    MergeRequest,
    MergeResponse,
    RecallRequest,
    RecallResponse,
    RememberRequest,
    RememberResponse,
)
from memorywire.wire.vocabulary import ExpireAction, Fusion, Link, MemoryType, MergeStrategy

__all__ = ["AsyncOperations", "SyncOperations", "compose"]

Resp = TypeVar("Resp", bound=BaseModel)
Doc = Mapping[str, Any]

#: The wire request model of each operation: its required fields are checked here, so a
#: missing one is named before anything is sent.
_MODELS: dict[str, type[BaseModel]] = {
    "remember": RememberRequest, "recall": RecallRequest, "get": GetRequest,
    "forget": ForgetRequest, "merge": MergeRequest, "expire": ExpireRequest,
    "list": ListRequest, "update": UpdateMemoryRequest, "history": HistoryRequest,
    "erase": EraseRequest,
}


def _wire(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, list | tuple):
        return [_wire(v) for v in value]
    return value


def _is_request(first: Any) -> bool:
    return isinstance(first, BaseModel | Mapping)


def _reads_as_request(op: str, first: Mapping[str, Any], first_field: str | None) -> bool:
    """Whether a mapping in the first place is the whole request rather than its value:
    ``remember(content={"name": ..., "states": ...})`` (a procedure) binds the same parameter
    as ``remember({"agent_id": ..., "content": ...})``. A mapping naming ``agent_id`` or
    holding only the request's own fields is a request (an unknown field in it is then
    refused by the request's schema); anything else is structured content."""
    if first_field is None or "agent_id" in first:
        return True
    return set(first) <= set(_MODELS[op].model_fields)


def compose(
    op: str, first: Any, first_field: str | None, fields: Mapping[str, Any],
    defaults: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One wire request for ``op`` from its first argument and the keyword parameters.

    ``first`` is the request (a model or mapping) or the value of ``first_field``; keyword
    values that are not ``None`` are laid over it, and ``defaults`` fill what neither gave
    (a bound client's ``agent_id``). A required field still missing is an
    ``InvalidRequest`` naming it, before anything is sent."""
    doc: dict[str, Any] = {}
    if isinstance(first, BaseModel):
        doc = first.model_dump(mode="json", exclude_unset=True)
    elif isinstance(first, Mapping) and _reads_as_request(op, first, first_field):
        doc = dict(first)
    elif first is not None:
        if first_field is None:
            raise InvalidRequest(f"{op}: the positional argument must be a request model or "
                                 f"mapping, not {type(first).__name__}")
        doc[first_field] = first
    doc.update({k: _wire(v) for k, v in fields.items() if v is not None})
    for key, value in (defaults or {}).items():
        doc.setdefault(key, value)
    if op == "remember":
        doc.setdefault("type", MemoryType.SEMANTIC.value)
    missing = [name for name, f in _MODELS[op].model_fields.items()
               if f.is_required() and doc.get(name) is None]
    if missing:
        name = missing[0]
        raise InvalidRequest(
            f"{op}: missing argument {name!r} (e.g. {op}(..., {name}=...))",
            [ErrorDetail("", "required", f"'{m}' is a required property") for m in missing],
        )
    return doc


def _ids(ids: str | Sequence[str] | None) -> builtins.list[str] | None:
    return [ids] if isinstance(ids, str) else None if ids is None else builtins.list(ids)


def _expire_first(policy: Any) -> tuple[Any, Any]:
    """(request, policy): a mapping naming ``agent_id`` or ``policy`` is a request."""
    if isinstance(policy, ExpireRequest) or (
        isinstance(policy, Mapping) and ("policy" in policy or "agent_id" in policy)
    ):
        return policy, None
    return None, policy


class AsyncOperations:
    """The ten operations, async; a subclass says how one runs (:meth:`_operation`)."""

    #: The agent a call is for when it names none (``Memory(agent_id=...)``, 0.5's shape).
    agent_id: str | None = None

    async def _operation(self, op: str, doc: dict[str, Any], model: type[Resp]) -> Resp:
        raise NotImplementedError

    def _compose(self, op: str, first: Any, first_field: str | None,
                 fields: Mapping[str, Any]) -> dict[str, Any]:
        """:func:`compose`, the bound agent filled in where the call names none."""
        bound = {} if self.agent_id is None else {"agent_id": self.agent_id}
        return compose(op, first, first_field, fields, bound)

    async def remember(
        self, content: str | RememberRequest | Doc | None = None, *,
        agent_id: str | None = None, type: MemoryType | str | None = None,
        user_id: str | None = None, metadata: Doc | None = None,
        confidence: float | None = None, source: str | None = None,
        expires_at: int | None = None, id: str | None = None,
        approval_required: bool | None = None, supersedes: Sequence[str] | None = None,
        links: Sequence[Link | Doc] | None = None, valid_from: int | None = None,
        valid_to: int | None = None, event_time: int | None = None,
        location: str | None = None, participants: Sequence[str] | None = None,
        sentiment: str | None = None, valence: float | None = None,
        arousal: float | None = None, emotion: str | None = None, target: str | None = None,
        allow_duplicate: bool | None = None,
    ) -> RememberResponse:
        """Store one memory for ``agent_id`` (``type`` defaults to ``semantic``).

        ``content`` is the text (structured content: pass a dict as ``content=``);
        ``id`` makes retries idempotent; the same content again in the same scope answers
        the stored memory (``deduplicated``) unless ``allow_duplicate``; ``source`` records
        provenance; the episodic
        (``event_time``, ``location``, ``participants``) and emotional (``valence``,
        ``arousal``, ``emotion``, ``target``, ``sentiment``) fields apply to those types."""
        fields = {k: v for k, v in locals().items() if k not in ("self", "content")}
        return await self._operation(
            "remember", self._compose("remember", content, "content", fields),
            RememberResponse)

    async def recall(
        self, query: str | RecallRequest | Doc | None = None, *,
        agent_id: str | None = None, user_id: str | None = None, k: int | None = None,
        types: Sequence[MemoryType | str] | None = None, hops: int | None = None,
        fusion: Fusion | str | None = None, filter: Doc | None = None,
        fresher_than_days: int | None = None, min_relevance: float | None = None,
        as_of: int | None = None, include_superseded: bool | None = None,
        asked_at: int | None = None, where: Doc | None = None,
    ) -> RecallResponse:
        """Search ``agent_id``'s memories for ``query``, best first (``k`` at most).

        ``min_relevance`` (0..1) drops weaker hits; ``as_of`` (epoch ms) answers as the
        store stood then; ``hops`` follows links; ``filter`` matches metadata."""
        fields = {k_: v for k_, v in locals().items() if k_ not in ("self", "query")}
        return await self._operation("recall", self._compose("recall", query, "query", fields),
                                     RecallResponse)

    async def get(
        self, id: str | GetRequest | Doc | None = None, *,
        agent_id: str | None = None, user_id: str | None = None,
    ) -> GetResponse:
        """One memory by ``id`` (``NotFound`` if ``agent_id`` has none by that id)."""
        return await self._operation("get", self._compose("get", id, "id", {
            "agent_id": agent_id, "user_id": user_id}), GetResponse)

    async def forget(
        self, ids: str | Sequence[str] | ForgetRequest | Doc | None = None, *,
        agent_id: str | None = None, user_id: str | None = None, filter: Doc | None = None,
        hard_delete: bool | None = None, reason: str | None = None,
        cascade: bool | None = None,
    ) -> ForgetResponse:
        """Forget memories by id (one or several) or by metadata ``filter``; ``cascade``
        also forgets what was derived from them. May be staged for a reviewer."""
        first = ids if _is_request(ids) else _ids(ids)  # type: ignore[arg-type]
        return await self._operation("forget", self._compose("forget", first, "ids", {
            "agent_id": agent_id, "user_id": user_id, "filter": filter,
            "hard_delete": hard_delete, "reason": reason, "cascade": cascade}),
            ForgetResponse)

    async def merge(
        self, canonical: str | MergeRequest | Doc | None = None,
        duplicates: Sequence[str] | None = None, *, agent_id: str | None = None,
        user_id: str | None = None, strategy: MergeStrategy | str | None = None,
    ) -> MergeResponse:
        """Fold ``duplicates`` into the ``canonical`` memory."""
        return await self._operation("merge", self._compose("merge", canonical, "canonical", {
            "duplicates": _ids(duplicates), "agent_id": agent_id, "user_id": user_id,
            "strategy": strategy}), MergeResponse)

    async def expire(
        self, policy: ExpirePolicy | ExpireRequest | Doc | None = None, *,
        agent_id: str | None = None, user_id: str | None = None,
        action: ExpireAction | str | None = None,
    ) -> ExpireResponse:
        """Forget, archive or demote (``action``) what matches ``policy``
        (``{"older_than_days": 30}``, ...)."""
        request, pol = _expire_first(policy)
        return await self._operation("expire", self._compose("expire", request, None, {
            "policy": pol, "agent_id": agent_id, "user_id": user_id, "action": action}),
            ExpireResponse)

    async def list(
        self, request: ListRequest | Doc | None = None, *, agent_id: str | None = None,
        user_id: str | None = None, types: Sequence[MemoryType | str] | None = None,
        filter: Doc | None = None, include_archived: bool | None = None,
        limit: int | None = None, cursor: str | None = None, as_of: int | None = None,
        known_at: int | None = None,
    ) -> ListResponse:
        """A page of ``agent_id``'s memories, oldest first; pass ``next_cursor`` on as
        ``cursor`` for the next page. ``as_of`` (epoch ms) lists only what held then (valid
        time); ``known_at`` only what was known then (record time)."""
        return await self._operation("list", self._compose("list", request, None, {
            "agent_id": agent_id, "user_id": user_id, "types": types, "filter": filter,
            "include_archived": include_archived, "limit": limit, "cursor": cursor,
            "as_of": as_of, "known_at": known_at}),
            ListResponse)

    async def update(
        self, id: str | UpdateMemoryRequest | Doc | None = None, *,
        agent_id: str | None = None, user_id: str | None = None,
        content: str | Doc | None = None, metadata: Doc | None = None,
        confidence: float | None = None, supersedes: Sequence[str] | None = None,
        reason: str | None = None,
    ) -> UpdateMemoryResponse:
        """Change memory ``id``'s content, metadata or confidence, or name what it
        supersedes; its history keeps the change (with ``reason``)."""
        return await self._operation("update", self._compose("update", id, "id", {
            "agent_id": agent_id, "user_id": user_id, "content": content,
            "metadata": metadata, "confidence": confidence,
            "supersedes": _ids(supersedes), "reason": reason}), UpdateMemoryResponse)

    async def history(
        self, id: str | HistoryRequest | Doc | None = None, *, agent_id: str | None = None,
        user_id: str | None = None, limit: int | None = None,
    ) -> HistoryResponse:
        """Every recorded change of memory ``id``: who, when, why, which operation."""
        return await self._operation("history", self._compose("history", id, "id", {
            "agent_id": agent_id, "user_id": user_id, "limit": limit}), HistoryResponse)

    async def erase(
        self, request: EraseRequest | Doc | None = None, *, agent_id: str | None = None,
        user_id: str | None = None, reason: str | None = None,
    ) -> EraseResponse:
        """Erase every memory of ``agent_id`` (or only of ``user_id``)."""
        return await self._operation("erase", self._compose("erase", request, None, {
            "agent_id": agent_id, "user_id": user_id, "reason": reason}), EraseResponse)


class SyncOperations:
    """The ten operations, blocking, with the same parameters as :class:`AsyncOperations`;
    a subclass runs one request document (:meth:`_blocking`)."""

    def _blocking(self, op: str, doc: dict[str, Any], model: type[Resp]) -> Resp:
        raise NotImplementedError

    def remember(
        self, content: str | RememberRequest | Doc | None = None, *,
        agent_id: str | None = None, type: MemoryType | str | None = None,
        user_id: str | None = None, metadata: Doc | None = None,
        confidence: float | None = None, source: str | None = None,
        expires_at: int | None = None, id: str | None = None,
        approval_required: bool | None = None, supersedes: Sequence[str] | None = None,
        links: Sequence[Link | Doc] | None = None, valid_from: int | None = None,
        valid_to: int | None = None, event_time: int | None = None,
        location: str | None = None, participants: Sequence[str] | None = None,
        sentiment: str | None = None, valence: float | None = None,
        arousal: float | None = None, emotion: str | None = None, target: str | None = None,
        allow_duplicate: bool | None = None,
    ) -> RememberResponse:
        """Store one memory (see :meth:`AsyncOperations.remember`)."""
        fields = {k: v for k, v in locals().items() if k not in ("self", "content")}
        return self._blocking("remember", compose("remember", content, "content", fields),
                              RememberResponse)

    def recall(
        self, query: str | RecallRequest | Doc | None = None, *,
        agent_id: str | None = None, user_id: str | None = None, k: int | None = None,
        types: Sequence[MemoryType | str] | None = None, hops: int | None = None,
        fusion: Fusion | str | None = None, filter: Doc | None = None,
        fresher_than_days: int | None = None, min_relevance: float | None = None,
        as_of: int | None = None, include_superseded: bool | None = None,
        asked_at: int | None = None, where: Doc | None = None,
    ) -> RecallResponse:
        """Search memories, best first (see :meth:`AsyncOperations.recall`)."""
        fields = {k_: v for k_, v in locals().items() if k_ not in ("self", "query")}
        return self._blocking("recall", compose("recall", query, "query", fields),
                              RecallResponse)

    def get(
        self, id: str | GetRequest | Doc | None = None, *,
        agent_id: str | None = None, user_id: str | None = None,
    ) -> GetResponse:
        """One memory by ``id``."""
        return self._blocking("get", compose("get", id, "id", {
            "agent_id": agent_id, "user_id": user_id}), GetResponse)

    def forget(
        self, ids: str | Sequence[str] | ForgetRequest | Doc | None = None, *,
        agent_id: str | None = None, user_id: str | None = None, filter: Doc | None = None,
        hard_delete: bool | None = None, reason: str | None = None,
        cascade: bool | None = None,
    ) -> ForgetResponse:
        """Forget memories by id or ``filter`` (see :meth:`AsyncOperations.forget`)."""
        first = ids if _is_request(ids) else _ids(ids)  # type: ignore[arg-type]
        return self._blocking("forget", compose("forget", first, "ids", {
            "agent_id": agent_id, "user_id": user_id, "filter": filter,
            "hard_delete": hard_delete, "reason": reason, "cascade": cascade}),
            ForgetResponse)

    def merge(
        self, canonical: str | MergeRequest | Doc | None = None,
        duplicates: Sequence[str] | None = None, *, agent_id: str | None = None,
        user_id: str | None = None, strategy: MergeStrategy | str | None = None,
    ) -> MergeResponse:
        """Fold ``duplicates`` into the ``canonical`` memory."""
        return self._blocking("merge", compose("merge", canonical, "canonical", {
            "duplicates": _ids(duplicates), "agent_id": agent_id, "user_id": user_id,
            "strategy": strategy}), MergeResponse)

    def expire(
        self, policy: ExpirePolicy | ExpireRequest | Doc | None = None, *,
        agent_id: str | None = None, user_id: str | None = None,
        action: ExpireAction | str | None = None,
    ) -> ExpireResponse:
        """Forget, archive or demote what matches ``policy``."""
        request, pol = _expire_first(policy)
        return self._blocking("expire", compose("expire", request, None, {
            "policy": pol, "agent_id": agent_id, "user_id": user_id, "action": action}),
            ExpireResponse)

    def list(
        self, request: ListRequest | Doc | None = None, *, agent_id: str | None = None,
        user_id: str | None = None, types: Sequence[MemoryType | str] | None = None,
        filter: Doc | None = None, include_archived: bool | None = None,
        limit: int | None = None, cursor: str | None = None, as_of: int | None = None,
        known_at: int | None = None,
    ) -> ListResponse:
        """A page of memories, oldest first (``cursor``: the last ``next_cursor``)."""
        return self._blocking("list", compose("list", request, None, {
            "agent_id": agent_id, "user_id": user_id, "types": types, "filter": filter,
            "include_archived": include_archived, "limit": limit, "cursor": cursor,
            "as_of": as_of, "known_at": known_at}),
            ListResponse)

    def update(
        self, id: str | UpdateMemoryRequest | Doc | None = None, *,
        agent_id: str | None = None, user_id: str | None = None,
        content: str | Doc | None = None, metadata: Doc | None = None,
        confidence: float | None = None, supersedes: Sequence[str] | None = None,
        reason: str | None = None,
    ) -> UpdateMemoryResponse:
        """Change memory ``id``; its history keeps the change."""
        return self._blocking("update", compose("update", id, "id", {
            "agent_id": agent_id, "user_id": user_id, "content": content,
            "metadata": metadata, "confidence": confidence,
            "supersedes": _ids(supersedes), "reason": reason}), UpdateMemoryResponse)

    def history(
        self, id: str | HistoryRequest | Doc | None = None, *, agent_id: str | None = None,
        user_id: str | None = None, limit: int | None = None,
    ) -> HistoryResponse:
        """Every recorded change of memory ``id``."""
        return self._blocking("history", compose("history", id, "id", {
            "agent_id": agent_id, "user_id": user_id, "limit": limit}), HistoryResponse)

    def erase(
        self, request: EraseRequest | Doc | None = None, *, agent_id: str | None = None,
        user_id: str | None = None, reason: str | None = None,
    ) -> EraseResponse:
        """Erase every memory of ``agent_id`` (or only of ``user_id``)."""
        return self._blocking("erase", compose("erase", request, None, {
            "agent_id": agent_id, "user_id": user_id, "reason": reason}), EraseResponse)
