"""MCP over stdio that answers every request line, however malformed.

The SDK's stdio transport drops a line it cannot parse (bad JSON, bad UTF-8, a lone
surrogate escape, an object id, a batch) and its server drops a request whose ``params``
is not an object, so the client waits forever for an answer that never comes. This module
reads the lines first and answers each faulty request itself with a JSON-RPC error whose
``data`` is our error envelope (id ``null`` when no id can be read, as JSON-RPC 2.0 asks);
good lines go on to the SDK unchanged. Notifications (no ``id``) are never answered.

The limits a request body has over HTTP hold here too (:class:`~memorywire.server.limits.Limits`):
a line longer than ``max_body_bytes`` is answered ``payload_too_large`` (read at most that
far, the rest of the line skipped), and one nesting deeper than ``max_json_depth`` is
answered ``invalid_request`` before any parser sees it: a 5,000-deep tool argument used to
exhaust the parser's recursion and end the process, so the next request was never answered.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from io import TextIOWrapper
from typing import Any, TextIO, cast

import anyio
import mcp_types as types
from anyio.abc import ObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from memorywire.core.json_depth import json_depth
from memorywire.errors import ErrorDetail, InvalidRequest, PayloadTooLarge
from memorywire.server.limits import Limits
from memorywire.wire.door import problems

__all__ = ["GuardedLines", "guarded_stdio_server", "line_error"]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


def _reply(id_: Any, code: int, err: InvalidRequest) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=id_,
        error=types.ErrorData(code=code, message=err.message, data=err.to_envelope()),
    )


# A JSON string or a bracket, and what may follow a top-level "id" key: found without a
# parser, because the line is refused precisely because parsing it is unsafe.
_TOKEN = re.compile(rb'"(?:[^"\\]++|\\.)*+"|[{}\[\]]')
_ID_VALUE = re.compile(rb'\s*:\s*(-?\d{1,18}(?![\d.eE])|"(?:[^"\\]++|\\.)*+")')


def _top_level_id(raw: bytes) -> Any:
    """The request's ``id`` read without parsing the line (``None`` when not found), so the
    client waiting on it gets its answer even for a line refused before parsing."""
    depth = 0
    for m in _TOKEN.finditer(raw):
        token = m.group()
        if token in (b"{", b"["):
            depth += 1
        elif token in (b"}", b"]"):
            depth -= 1
        elif depth == 1 and token == b'"id"':
            value = _ID_VALUE.match(raw, m.end())
            if value is None:
                return None
            try:
                found = json.loads(value.group(1))
            except ValueError:
                return None
            return found if isinstance(found, int | str) else None
    return None


def _too_big(line: str, limits: Limits) -> types.JSONRPCError | None:
    """The request body's limits, measured before parsing."""
    raw = line.encode("utf-8", "surrogatepass")
    if len(raw) > limits.max_body_bytes:
        err: InvalidRequest = PayloadTooLarge(f"request line is over {limits.max_body_bytes} bytes "
                              "(max_body_bytes)",
                              [ErrorDetail("", "maxBytes",
                                           f"at most {limits.max_body_bytes} bytes")])
        return _reply(_top_level_id(raw), INVALID_REQUEST, err)
    if raw.count(b"{") + raw.count(b"[") > limits.max_json_depth:
        depth = json_depth(raw)
        if depth > limits.max_json_depth:
            err = InvalidRequest(f"JSON nesting depth {depth} exceeds the limit of "
                                 f"{limits.max_json_depth}",
                                 [ErrorDetail("", "maxDepth",
                                              f"at most {limits.max_json_depth} levels")])
            return _reply(_top_level_id(raw), INVALID_REQUEST, err)
    return None


def line_error(line: str, limits: Limits | None = None) -> types.JSONRPCError | None:
    """The answer to a line the SDK would drop, or ``None`` to pass it on (pure)."""
    too_big = _too_big(line, limits or Limits())
    if too_big is not None:
        return too_big
    try:
        doc = json.loads(line)
    except ValueError as exc:
        msg = f"malformed JSON: {exc}"
        return _reply(None, PARSE_ERROR, InvalidRequest(msg, [ErrorDetail("", "json", msg)]))
    if not isinstance(doc, dict):
        what = "batches are not supported" if isinstance(doc, list) else "not an object"
        return _reply(None, INVALID_REQUEST, InvalidRequest(f"invalid JSON-RPC message: {what}"))
    raw_id = doc.get("id")
    id_ok = isinstance(raw_id, str | int) and not isinstance(raw_id, bool)
    is_request = "method" in doc and "id" in doc
    if "id" in doc and not id_ok:
        return _reply(None, INVALID_REQUEST, InvalidRequest("id must be a string or integer"))
    if not is_request and "method" in doc:
        return None  # a notification: never answered, whatever it holds
    id_ = raw_id if id_ok else None
    if doc.get("jsonrpc") != "2.0":
        return _reply(id_, INVALID_REQUEST, InvalidRequest('"jsonrpc" must be "2.0"'))
    if not is_request:
        return None  # a response from the client: the SDK's business
    if not isinstance(doc["method"], str):
        return _reply(id_, INVALID_REQUEST, InvalidRequest("method must be a string"))
    if "params" in doc and not isinstance(doc["params"], dict):
        detail = [ErrorDetail("/params", "type", "expected an object")]
        return _reply(id_, INVALID_PARAMS, InvalidRequest("params must be an object", detail))
    if doc["method"] == "tools/call":
        params = doc.get("params") or {}
        if not isinstance(params.get("name"), str):
            detail = [ErrorDetail("/params/name", "type", "expected the tool name")]
            return _reply(id_, INVALID_PARAMS, InvalidRequest("tools/call needs a name", detail))
        if not isinstance(params.get("arguments", {}), dict):
            detail = [ErrorDetail("/params/arguments", "type", "expected an object")]
            err = InvalidRequest("tool arguments must be an object", detail)
            return _reply(id_, INVALID_PARAMS, err)
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as exc:
        found = problems(doc)  # most often a lone surrogate the SDK's parser refuses
        if found:
            head = found[0]
            err = InvalidRequest(f"{head.path}: {head.message}", found)
            return _reply(id_, INVALID_PARAMS, err)
        first = str(exc).splitlines()[0]
        return _reply(id_, INVALID_REQUEST, InvalidRequest(f"invalid MCP message: {first}"))
    return None


class GuardedLines:
    """The lines of ``source`` the SDK can take; the others are answered on ``attach``'s stream."""

    def __init__(self, source: Any, limits: Limits | None = None) -> None:
        self._source = source.__aiter__()
        self._limits = limits or Limits()
        self._write: ObjectSendStream[SessionMessage] | None = None
        self._attached = anyio.Event()

    def attach(self, write: ObjectSendStream[SessionMessage]) -> None:
        self._write = write
        self._attached.set()

    def __aiter__(self) -> GuardedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._source.__anext__()
            if not line.strip():
                continue
            reply = line_error(line, self._limits)
            if reply is None:
                return cast(str, line)
            await self._attached.wait()
            assert self._write is not None
            await self._write.send(SessionMessage(reply))


async def _bounded_lines(stdin: TextIO, limit: int) -> AsyncIterator[str]:
    """Lines of ``stdin``, each read at most ``limit + 1`` characters far (in a worker thread,
    as the SDK reads): a longer one is cut there (and refused by :func:`line_error`), the
    rest of it skipped, never held."""
    while True:
        line = await anyio.to_thread.run_sync(stdin.readline, limit + 1)
        if not line:
            return
        rest = line
        while len(rest) > limit and not rest.endswith("\n"):
            rest = await anyio.to_thread.run_sync(stdin.readline, limit + 1)
        yield line


@asynccontextmanager
async def guarded_stdio_server(
    stdin: Any = None, limits: Limits | None = None,
) -> AsyncIterator[tuple[Any, ObjectSendStream[SessionMessage]]]:
    """Like ``mcp.server.stdio.stdio_server`` (stdout handling unchanged), guarding stdin."""
    limits = limits or Limits()
    if stdin is None:
        stdin = _bounded_lines(TextIOWrapper(sys.stdin.buffer, encoding="utf-8",
                                             errors="replace"), limits.max_body_bytes)
    lines = GuardedLines(stdin, limits)
    async with stdio_server(stdin=cast(Any, lines)) as (read, write):
        lines.attach(write)
        yield read, write
