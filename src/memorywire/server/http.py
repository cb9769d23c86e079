"""REST and JSON-RPC over HTTP (Starlette), plus OpenAPI, the reviewer UI and MCP mounts.

Transport only: it reads a bounded body, authenticates the bearer token, hands the operation
to the :class:`Dispatcher` and renders the result or the error envelope with the status
that ``err.http_status`` names.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp

from memorywire.errors import (
    CapabilityMissing,
    ErrorDetail,
    InvalidRequest,
    MemorywireError,
    NotFound,
    PayloadTooLarge,
    Unauthorized,
)
from memorywire.governance.receipt_trust import public_key_document
from memorywire.server.apidocs import docs_mount, redoc_mount
from memorywire.server.auth import Principal, Role, TokenStore
from memorywire.server.dispatch import FAILURES_HEADER, Dispatcher, DispatchResult
from memorywire.server.dump_import import import_dump_response
from memorywire.server.export import export_response
from memorywire.server.jsonrpc import handle_rpc
from memorywire.server.limits import AnonymousPacer, parse_json_body
from memorywire.server.openapi import openapi_document
from memorywire.server.origin import BrowserRules, BrowserSafe
from memorywire.wire.operations import operation as spec_of
from memorywire.wire.routes import BODY_OPERATIONS, ROUTES
from memorywire.wire.versions import LATEST_MINOR, VERSION_HEADER, check_requested

__all__ = ["FAILURES_HEADER", "create_app"]

log = logging.getLogger(__name__)

#: Can read health and schemas only: every other operation needs a scope it does not have.
_ANONYMOUS = Principal(name="anonymous", role=Role.AGENT, agent_ids=frozenset())


class _Json(JSONResponse):
    def render(self, content: Any) -> bytes:
        text = json.dumps(content, ensure_ascii=False, separators=(",", ":"))
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate in stored data: escape, never crash
            return json.dumps(content, separators=(",", ":")).encode("ascii")


def error_response(err: MemorywireError, status: int | None = None) -> Response:
    headers = {}
    if err.retry_after is not None:
        headers["Retry-After"] = str(max(1, int(err.retry_after + 0.999)))
    if isinstance(err, Unauthorized):
        headers["WWW-Authenticate"] = 'Bearer realm="memorywire"'
    return _Json(err.to_envelope(), status_code=status or err.http_status, headers=headers)


def _ok(result: DispatchResult) -> Response:
    headers = {}
    if result.failures:
        headers[FAILURES_HEADER] = json.dumps(result.failures_json(), separators=(",", ":"))
    return _Json(result.body, headers=headers)


async def read_body(request: Request, limit: int, timeout: float = 30.0) -> bytes:
    """The body, refusing to buffer more than ``limit`` bytes whatever Content-Length says,
    or to wait more than ``timeout`` seconds for it."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"request body is {declared} bytes; the limit is {limit}")
    chunks: list[bytes] = []
    size = 0
    try:
        with anyio.fail_after(timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise PayloadTooLarge(f"request body exceeds the limit of {limit} bytes")
                chunks.append(chunk)
    except TimeoutError:
        raise BodyTimeout(f"request body not received within {timeout:g} s") from None
    return b"".join(chunks)


class BodyTimeout(Exception):
    """The client stopped sending its body: answered 408 with code ``invalid_request``."""


Endpoint = Callable[[Request], Awaitable[Response]]


def _guard(endpoint: Endpoint) -> Endpoint:
    """Every failure becomes an envelope; nothing escapes to kill the connection."""

    async def guarded(request: Request) -> Response:
        response = await _answer(request)
        response.headers[VERSION_HEADER] = LATEST_MINOR
        return response

    async def _answer(request: Request) -> Response:
        try:
            check_requested(request.headers.get(VERSION_HEADER), VERSION_HEADER)
            return await endpoint(request)
        except BodyTimeout as exc:
            err = InvalidRequest(str(exc), [ErrorDetail("", "timeout", str(exc))])
            return error_response(err, 408)
        except MemorywireError as err:
            return error_response(err)
        except ClientDisconnect:  # the client left: one line, no traceback, nobody to answer
            log.info("client disconnected during %s %s", request.method, request.url.path)
            return Response(status_code=499)
        except Exception:  # outermost handler: log it, answer 500, keep serving
            log.exception("unhandled error on %s", request.url.path)
            return error_response(MemorywireError("internal error"))

    return guarded


def create_app(
    dispatcher: Dispatcher,
    *,
    tokens: TokenStore | None,
    ui_app: ASGIApp | None = None,
    mcp_app: ASGIApp | None = None,
    lifespan_hooks: Sequence[Callable[[], AbstractAsyncContextManager[None]]] = (),
    on_shutdown: Callable[[], Awaitable[None]] | None = None,
    browser: BrowserRules | None = None,
) -> Starlette:
    """``tokens=None`` serves without authentication (the CLI allows it on loopback only).

    ``browser``: the Origin/Host/JSON rules of :mod:`memorywire.server.origin` on every
    route (``serve`` always passes them; ``None`` leaves them off for in-process tests).
    """

    def principal_of(request: Request, *, anonymous_ok: bool = False) -> Principal:
        if tokens is None:
            return Principal.local_admin()
        header = request.headers.get("authorization", "")
        scheme, _, secret = header.partition(" ")
        if not header and anonymous_ok:
            return _ANONYMOUS
        if scheme.lower() != "bearer":
            raise Unauthorized("a valid bearer token is required")
        return tokens.authenticate(secret.strip())

    limits = dispatcher.limits
    pacer = AnonymousPacer(limits.anonymous_rate, limits.anonymous_burst)

    async def run(request: Request, op: str, doc: Any, *,
                  principal: Principal | None = None) -> Response:
        # ``principal``: the caller was authenticated before its body was read; looking the
        # token up again would cost a second token-store query per request for nothing.
        # Without a token only the operations the table marks ``anonymous`` may run.
        p = principal if principal is not None else principal_of(
            request, anonymous_ok=spec_of(op).anonymous)
        if p is _ANONYMOUS:
            wait = pacer.reserve()
            if wait > 0:
                await anyio.sleep(wait)
        return _ok(await dispatcher.dispatch(op, doc, p))

    async def body_json(request: Request) -> Any:
        raw = await read_body(
            request, dispatcher.limits.max_body_bytes, dispatcher.limits.body_timeout_s
        )
        if not raw.strip():
            return {}
        return parse_json_body(raw, dispatcher.limits)

    def operation(op: str) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            p = principal_of(request)  # authenticate before reading a large body
            return await run(request, op, await body_json(request), principal=p)

        return endpoint

    async def approvals_list(request: Request) -> Response:
        return await run(request, "approvals.list", dict(request.query_params))

    async def approvals_get(request: Request) -> Response:
        return await run(request, "approvals.get", {"id": request.path_params["id"]})

    def decide(op: str) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            p = principal_of(request)
            doc = await body_json(request)
            if not isinstance(doc, dict):
                raise InvalidRequest('body must be a JSON object like {"reason": "..."}')
            unknown = set(doc) - {"reason"}
            if unknown:
                raise InvalidRequest(f"unknown field(s): {', '.join(sorted(unknown))}")
            return await run(request, op, {**doc, "id": request.path_params["id"]}, principal=p)

        return endpoint

    async def audit_list(request: Request) -> Response:
        return await run(request, "audit.list", dict(request.query_params))

    async def audit_verify(request: Request) -> Response:
        return await run(request, "audit.verify", {})

    async def admin_export(request: Request) -> Response:
        return await export_response(dispatcher.store, principal_of(request),
                                     request.query_params)

    async def admin_import(request: Request) -> Response:
        principal = principal_of(request)  # authenticate before reading a large body
        return _Json(await import_dump_response(dispatcher.store, principal, request,
                                                dispatcher.limits))

    async def health(request: Request) -> Response:
        return await run(request, "health", {})

    async def receipts_key(request: Request) -> Response:
        # Public, like health: a data subject holding a receipt has no token.
        if principal_of(request, anonymous_ok=True) is _ANONYMOUS:
            wait = pacer.reserve()
            if wait > 0:
                await anyio.sleep(wait)
        doc = public_key_document(dispatcher.signing_key)
        if doc is None:
            raise CapabilityMissing("this server signs no receipts: start it with governance "
                                    "or a signing_key")
        return _Json(doc)

    async def schemas(request: Request) -> Response:
        return await run(request, "schema", {})

    async def schema(request: Request) -> Response:
        return await run(request, "schema", {"name": request.path_params["name"]})

    async def rpc(request: Request) -> Response:
        p = principal_of(request)
        raw = await read_body(
            request, dispatcher.limits.max_body_bytes, dispatcher.limits.body_timeout_s
        )
        reply = await handle_rpc(raw, dispatcher, p)
        if reply is None:
            return Response(status_code=204)
        return _Json(reply)

    async def openapi(request: Request) -> Response:
        return _Json(openapi_document())

    endpoints: dict[str, Endpoint] = {op: operation(op) for op in BODY_OPERATIONS}
    endpoints |= {
        "approvals.list": approvals_list,
        "approvals.get": approvals_get,
        "approvals.approve": decide("approvals.approve"),
        "approvals.reject": decide("approvals.reject"),
        "audit.list": audit_list,
        "audit.verify": audit_verify,
        "admin.export": admin_export,
        "recover": operation("recover"),
        "admin.import": admin_import,
        "health": health,
        "receipts.key": receipts_key,
        "schemas": schemas,
        "schema": schema,
        "rpc": rpc,
        "openapi": openapi,
    }
    # The route table decides what is mounted; a route without an endpoint fails here.
    routes: list[BaseRoute] = [
        Route(r.path, _guard(endpoints[r.name]), methods=[r.method]) for r in ROUTES
    ]
    routes.append(docs_mount())
    routes.append(redoc_mount())
    if ui_app is not None:
        routes.append(Mount("/ui", app=ui_app))
    if mcp_app is not None:
        routes.append(Mount("/mcp", app=mcp_app))

    async def on_http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            return error_response(NotFound(f"no route {request.url.path}"))
        return error_response(InvalidRequest(str(exc.detail)), exc.status_code)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for hook in lifespan_hooks:
                await stack.enter_async_context(hook())
            try:
                yield
            finally:
                if on_shutdown is not None:
                    await on_shutdown()

    return Starlette(
        routes=routes,
        exception_handlers={HTTPException: on_http_error},
        lifespan=lifespan,
        middleware=[Middleware(BrowserSafe, rules=browser)] if browser is not None else None,
    )
