"""``POST /v0/admin/import``: a ``memorywire/export`` dump in, the fidelity report out.

Admin only, like the export, and within the token's scope: a token scoped to agents may import
records (and pending items) of those agents only; a line naming another agent refuses the
whole dump (``forbidden``) before anything is written. A token scoped to users may not import
at all: ids are unique per agent, not per user, so an import under one user could replace or
reveal another user's memory of the same id. The import is audited as the calling token.

Every record is held to ``remember``'s rules (:mod:`memorywire.portability.dump_rules`): the
first bad line refuses the dump, naming the line and the field, unless ``skip_invalid=true``
leaves bad lines out and reports them (``skipped_invalid``, ``invalid``). The unzipped size,
each line's length and the number of records are capped while the dump is read
(``max_import_unzipped_bytes``, ``max_import_line_bytes``, ``max_import_records``).

The body is the dump
as ``application/x-ndjson`` (the one route where a write is not JSON: the browser rule of
:mod:`memorywire.server.origin` admits this type here only, and a page still cannot send it
without a CORS preflight), gzip-compressed or not (``Content-Encoding: gzip``, or the gzip
magic bytes).

A dump can be far larger than any JSON request, so it is never held in memory: the body is
streamed to a temporary file (at most ``max_import_bytes``, 413 beyond, checked against
``Content-Length`` before reading and again while reading; the whole body must arrive within
``body_timeout_s``), then :func:`memorywire.portability.import_dump` verifies it and plans
before writing anything, exactly as the CLI does: the same ``on_conflict``, ``reembed`` and
``allow_loss`` (comma-separated) parameters and the same refusals. Behind governance the rows
go to the inner store, and the import, the dump's revision history and its pending approvals
are recorded in the governance database.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from typing import Any

import anyio
from starlette.requests import Request

from memorywire.errors import ErrorDetail, Forbidden, InvalidRequest, PayloadTooLarge
from memorywire.governance.actor import acting_as
from memorywire.portability.dump_rules import DumpLimits
from memorywire.portability.moves import import_dump
from memorywire.server.auth import Principal, Role
from memorywire.server.limits import Limits
from memorywire.store.portable import OnConflict

__all__ = ["IMPORT_PARAMS", "IMPORT_TYPES", "import_dump_response"]

IMPORT_PARAMS = ("on_conflict", "reembed", "allow_loss", "skip_invalid")
#: The media types this route reads (``application/jsonl`` is the other spelling in use).
IMPORT_TYPES = ("application/x-ndjson", "application/jsonl")


def _flag(query: Mapping[str, str], name: str) -> bool:
    value = query.get(name, "false").lower()
    if value not in ("true", "false", "1", "0"):
        raise InvalidRequest(f"{name} must be true or false, not {value!r}")
    return value in ("true", "1")


def dump_limits(limits: Limits) -> DumpLimits:
    """The server's caps on one dump being read."""
    return DumpLimits(max_bytes=limits.max_import_unzipped_bytes,
                      max_line_bytes=limits.max_import_line_bytes,
                      max_records=limits.max_import_records,
                      max_content_bytes=limits.max_content_bytes,
                      max_json_depth=limits.max_json_depth)


def _options(query: Mapping[str, str]) -> tuple[OnConflict, bool, set[str]]:
    unknown = set(query) - set(IMPORT_PARAMS)
    if unknown:
        raise InvalidRequest(f"unknown import parameter(s): {', '.join(sorted(unknown))}")
    try:
        on_conflict = OnConflict(query.get("on_conflict", "skip"))
    except ValueError:
        raise InvalidRequest("on_conflict must be skip, replace or fail",
                             [ErrorDetail("/on_conflict", "enum", "skip|replace|fail")]) from None
    allow = {f.strip() for f in query.get("allow_loss", "").split(",") if f.strip()}
    return on_conflict, _flag(query, "reembed"), allow


async def _spool(request: Request, limits: Limits, path: str) -> int:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limits.max_import_bytes:
        raise PayloadTooLarge(f"dump is {declared} bytes; the import limit is "
                              f"{limits.max_import_bytes} (max_import_bytes)")
    size = 0
    with open(path, "wb") as out:
        with anyio.fail_after(limits.body_timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limits.max_import_bytes:
                    raise PayloadTooLarge(f"dump exceeds the import limit of "
                                          f"{limits.max_import_bytes} bytes (max_import_bytes)")
                out.write(chunk)
    return size


async def import_dump_response(store: Any, principal: Principal, request: Request,
                               limits: Limits) -> dict[str, Any]:
    """The import's report: the fidelity plan and what was written."""
    principal.require(Role.ADMIN)
    if principal.user_ids is not None:
        raise Forbidden("a token scoped to users may not import: ids are unique per agent, "
                        "so an import could replace or reveal another user's memory")
    on_conflict, reembed, allow_loss = _options(request.query_params)
    skip_invalid = _flag(request.query_params, "skip_invalid")
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media not in IMPORT_TYPES:
        raise InvalidRequest(f"the body must be a dump, Content-Type: application/x-ndjson "
                             f"(got {media or 'none'!r})")
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", "gzip"):
        raise InvalidRequest(f"Content-Encoding {encoding!r} is not read here (gzip or none)")
    fd, path = tempfile.mkstemp(prefix="memorywire-import-", suffix=".jsonl")
    os.close(fd)
    try:
        try:
            size = await _spool(request, limits, path)
        except TimeoutError:
            raise InvalidRequest(f"dump not received within {limits.body_timeout_s:g} s "
                                 "(body_timeout_s)") from None
        if size == 0:
            raise InvalidRequest("the body is empty: send a memorywire/export dump")
        with acting_as(principal.name, principal.token_id):
            plan, counts = await import_dump(
                store, path, on_conflict=on_conflict, allow_loss=allow_loss, reembed=reembed,
                limits=dump_limits(limits), skip_invalid=skip_invalid,
                scope=principal.allows if principal.scoped else None)
    finally:
        os.unlink(path)
    return {"plan": plan.to_json(), **counts.to_json()}
