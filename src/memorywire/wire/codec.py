"""From bytes on the wire to typed models and back.

Servers call :func:`parse_request`: it decodes JSON (reporting line and column when it is
malformed), validates against the schema (every problem, with pointers), and only then builds
the pydantic model, so the schema is the one place a wire rule is enforced. :func:`to_wire`
is the inverse: absent optional fields are omitted rather than sent as ``null``, which keeps
our responses inside the published v0 shapes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, overload

from pydantic import BaseModel, ValidationError

from memorywire.errors import ErrorDetail, InvalidRequest, MemorywireError, error_from_envelope
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
    DecisionRequest,
    EmotionalRecord,
    EpisodicRecord,
    ExpireRequest,
    ExpireResponse,
    ForgetRequest,
    ForgetResponse,
    MemoryRecord,
    MergeRequest,
    MergeResponse,
    ProceduralRecord,
    Procedure,
    RecallRequest,
    RecallResponse,
    RememberRequest,
    RememberResponse,
    ReviewRequest,
    SemanticRecord,
)
from memorywire.wire.validate import check, pointer

__all__ = [
    "MODELS",
    "OPERATIONS",
    "RECORD_OPERATIONS",
    "Operation",
    "RecordOperation",
    "Request",
    "parse",
    "parse_error",
    "parse_json",
    "parse_record_request",
    "parse_request",
    "to_wire",
]

Operation = Literal["remember", "recall", "forget", "merge", "expire"]
OPERATIONS: tuple[Operation, ...] = ("remember", "recall", "forget", "merge", "expire")
Request = RememberRequest | RecallRequest | ForgetRequest | MergeRequest | ExpireRequest

#: Document kind to the model it becomes (the ``error`` envelope becomes an exception).
MODELS: Mapping[str, type[BaseModel]] = {
    "remember": RememberRequest,
    "remember.response": RememberResponse,
    "recall": RecallRequest,
    "recall.response": RecallResponse,
    "forget": ForgetRequest,
    "forget.response": ForgetResponse,
    "merge": MergeRequest,
    "merge.response": MergeResponse,
    "expire": ExpireRequest,
    "expire.response": ExpireResponse,
    "get": GetRequest,
    "get.response": GetResponse,
    "list": ListRequest,
    "list.response": ListResponse,
    "update": UpdateMemoryRequest,
    "update.response": UpdateMemoryResponse,
    "history": HistoryRequest,
    "history.response": HistoryResponse,
    "erase": EraseRequest,
    "erase.response": EraseResponse,
    "types/memory": MemoryRecord,
    "types/semantic": SemanticRecord,
    "types/episodic": EpisodicRecord,
    "types/procedural": ProceduralRecord,
    "types/emotional": EmotionalRecord,
    "types/fsm": Procedure,
    "governance/review": ReviewRequest,
    "governance/decision": DecisionRequest,
}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json(data: str | bytes | bytearray) -> Any:
    """Decode one JSON document; malformed input is an ``InvalidRequest`` naming line/column."""
    if isinstance(data, bytes | bytearray):
        try:
            data = bytes(data).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            msg = f"body is not UTF-8: invalid byte at offset {exc.start}"
            raise InvalidRequest(msg, [ErrorDetail("", "json", msg)]) from None
    try:
        return json.loads(data, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        msg = f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        raise InvalidRequest(msg, [ErrorDetail("", "json", msg)]) from None
    except ValueError as exc:  # NaN / Infinity
        msg = f"malformed JSON: {exc}"
        raise InvalidRequest(msg, [ErrorDetail("", "json", msg)]) from None


def _decoded(document: Any) -> Any:
    return parse_json(document) if isinstance(document, str | bytes | bytearray) else document


def parse(kind: str, document: Any) -> BaseModel:
    """Validate ``document`` (JSON text or decoded) as ``kind`` and build its model."""
    model = MODELS.get(kind)
    if model is None:
        raise InvalidRequest(f"no model for document kind {kind!r}")
    doc = _decoded(document)
    check(kind, doc)
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        # The schema is meant to catch everything first; this keeps any gap a 400, not a 500.
        details = [ErrorDetail(pointer(list(e["loc"])), e["type"], e["msg"]) for e in exc.errors()]
        raise InvalidRequest(f"invalid {kind}: {details[0].message}", details) from None


@overload
def parse_request(op: Literal["remember"], document: Any) -> RememberRequest: ...
@overload
def parse_request(op: Literal["recall"], document: Any) -> RecallRequest: ...
@overload
def parse_request(op: Literal["forget"], document: Any) -> ForgetRequest: ...
@overload
def parse_request(op: Literal["merge"], document: Any) -> MergeRequest: ...
@overload
def parse_request(op: Literal["expire"], document: Any) -> ExpireRequest: ...
@overload
def parse_request(op: str, document: Any) -> Request: ...
def parse_request(op: str, document: Any) -> Request:
    """The request model of operation ``op``; any problem raises ``InvalidRequest``."""
    if op not in OPERATIONS:
        raise InvalidRequest(f"unknown operation {op!r}; expected one of {', '.join(OPERATIONS)}")
    return parse(op, document)  # type: ignore[return-value]


RecordOperation = Literal["get", "list", "update", "history", "erase"]
RECORD_OPERATIONS: tuple[RecordOperation, ...] = ("get", "list", "update", "history", "erase")


def parse_record_request(op: str, document: Any) -> BaseModel:
    """The request model of record operation ``op``; any problem raises ``InvalidRequest``."""
    if op not in RECORD_OPERATIONS:
        raise InvalidRequest(
            f"unknown operation {op!r}; expected one of {', '.join(RECORD_OPERATIONS)}"
        )
    return parse(op, document)


def parse_error(document: Any) -> MemorywireError:
    """The exception a peer's error envelope describes (validated first)."""
    doc = _decoded(document)
    check("error", doc)
    return error_from_envelope(doc)


def to_wire(model: BaseModel) -> dict[str, Any]:
    """The JSON body of a model: fields left ``None`` are omitted, diagnostics excluded."""
    body = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(model, ListResponse):
        body["next_cursor"] = model.next_cursor  # required, null on the last page
    return body
