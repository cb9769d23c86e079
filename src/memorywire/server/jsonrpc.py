"""JSON-RPC 2.0 over the dispatcher: single calls, batches and notifications.

Standard codes carry protocol faults (-32700 parse, -32600 invalid request, -32601 unknown
method, -32602 invalid params, -32603 internal); every application error also carries our
envelope in ``error.data`` so a client reads the same ``code`` as over REST. Store
diagnostics travel in a ``_meta`` member beside ``result``, never inside the v0 body.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from memorywire.errors import (
    ErrorDetail,
    InvalidRequest,
    MemorywireError,
    StoreCorrupt,
)
from memorywire.server.auth import Principal
from memorywire.server.dispatch import Dispatcher
from memorywire.server.limits import parse_json_body
from memorywire.wire.operations import by_rpc

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHODS",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "SERVER_ERROR",
    "handle_rpc",
    "rpc_error_code",
]

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: Application errors (not_found, forbidden, rate_limited, ...): the envelope says which.
SERVER_ERROR = -32000

MAX_BATCH = 100

#: Method name to dispatcher operation, from the operation table's ``rpc`` names.
METHODS: Mapping[str, str] = {method: spec.name for method, spec in by_rpc().items()}


def rpc_error_code(err: MemorywireError) -> int:
    if isinstance(err, InvalidRequest):
        return INVALID_PARAMS
    if type(err) is MemorywireError or isinstance(err, StoreCorrupt):
        return INTERNAL_ERROR
    return SERVER_ERROR


def _error(id_: Any, code: int, err: MemorywireError) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id_,
        "error": {"code": code, "message": err.message, "data": err.to_envelope()},
    }


async def _one(call: Any, dispatcher: Dispatcher, principal: Principal) -> dict[str, Any] | None:
    if not isinstance(call, Mapping) or call.get("jsonrpc") != "2.0":
        return _error(None, INVALID_REQUEST, InvalidRequest("not a JSON-RPC 2.0 request object"))
    is_notification = "id" not in call
    id_ = call.get("id")
    if not (id_ is None or isinstance(id_, str | int)) or isinstance(id_, bool):
        return _error(None, INVALID_REQUEST, InvalidRequest("id must be a string or integer"))
    method = call.get("method")
    if not isinstance(method, str):
        return _error(id_, INVALID_REQUEST, InvalidRequest("method must be a string"))
    params = call.get("params", {})
    try:
        op = METHODS.get(method)
        if op is None:
            unknown = MemorywireError(f"unknown method {method!r}")
            return None if is_notification else _error(id_, METHOD_NOT_FOUND, unknown)
        if not isinstance(params, Mapping):
            raise InvalidRequest(
                "params must be an object (by-name parameters)",
                [ErrorDetail("/params", "type", "expected an object")],
            )
        result = await dispatcher.dispatch(op, params, principal)
    except MemorywireError as err:
        return None if is_notification else _error(id_, rpc_error_code(err), err)
    except Exception:  # outermost handler for one call: the batch and the server go on
        log.exception("JSON-RPC method %s failed", method)
        internal = MemorywireError("internal error")
        return None if is_notification else _error(id_, INTERNAL_ERROR, internal)
    if is_notification:
        return None
    out: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "result": result.body}
    if result.failures:
        out["_meta"] = {"store_failures": result.failures_json()}
    return out


async def handle_rpc(raw: bytes, dispatcher: Dispatcher, principal: Principal) -> Any | None:
    """The response document, or ``None`` when every call was a notification."""
    try:
        doc = parse_json_body(raw, dispatcher.limits)
    except InvalidRequest as err:
        code = PARSE_ERROR if err.details and err.details[0].keyword == "json" else INVALID_REQUEST
        return _error(None, code, err)
    if isinstance(doc, list):
        if not doc:
            return _error(None, INVALID_REQUEST, InvalidRequest("empty batch"))
        if len(doc) > MAX_BATCH:
            return _error(
                None, INVALID_REQUEST, InvalidRequest(f"batch larger than {MAX_BATCH} calls")
            )
        replies = [await _one(call, dispatcher, principal) for call in doc]
        kept = [r for r in replies if r is not None]
        return kept or None
    return await _one(doc, dispatcher, principal)
