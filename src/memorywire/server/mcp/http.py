"""MCP over streamable HTTP, mounted at ``/mcp`` on ``memorywire serve``.

The official SDK's session manager speaks the protocol; this module is the door in front of
it. A browser page on another site must not reach a server on the user's loopback (DNS
rebinding, cross-site requests), so a request whose ``Origin`` is neither loopback nor
configured is refused with 403 before anything else. Every request then needs one of our API
bearer tokens (401 with ``WWW-Authenticate: Bearer`` otherwise, as the MCP authorization
guidance asks of a protected resource); its principal rides in the ASGI scope, and each tool
call runs as that principal through the dispatcher, exactly as a REST call does.

Sessions are stateless and answers are plain JSON: the tools never call back into the
client, so there is no per-session state to bind to a credential or to expire. The event
stream a ``GET`` opens therefore never carries anything; it is ended after
``stream_timeout_s`` (the server's ``idle_timeout_s``) instead of being held for ever.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send

from memorywire.errors import Forbidden, MemorywireError, Unauthorized
from memorywire.server.auth import Principal, TokenStore
from memorywire.server.config import is_loopback
from memorywire.server.dispatch import Dispatcher
from memorywire.server.http import error_response
from memorywire.server.limits import Timeouts
from memorywire.server.mcp.server import PRINCIPAL_SCOPE_KEY, build_mcp_server
from memorywire.server.mcp.tools import ToolDefaults
from memorywire.server.stream_limit import run_for_at_most

__all__ = ["McpHttp", "origin_allowed"]


def origin_allowed(origin: str | None, allowed: Iterable[str] = ()) -> bool:
    """No ``Origin`` (a non-browser client) or a loopback or configured one."""
    if origin is None:
        return True
    if origin in allowed:
        return True
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and is_loopback(parts.hostname or "")


class McpHttp:
    """The ``/mcp`` ASGI app; enter :meth:`lifespan` in the hosting app's lifespan."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        tokens: TokenStore | None,
        allowed_origins: Iterable[str] = (),
        defaults: ToolDefaults | None = None,
        stream_timeout_s: float = Timeouts.idle_s,
    ) -> None:
        """``tokens=None`` serves without authentication, as the process owner."""
        self._tokens = tokens
        self._stream_timeout_s = stream_timeout_s
        self._allowed = frozenset(allowed_origins)
        self._manager = StreamableHTTPSessionManager(
            build_mcp_server(dispatcher, defaults=defaults),
            json_response=True,
            stateless=True,
            max_request_body_size=dispatcher.limits.max_body_bytes,
        )

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        async with self._manager.run():
            yield

    def _principal(self, scope: Scope) -> Principal:
        headers = dict(scope.get("headers") or [])
        origin = headers.get(b"origin")
        if not origin_allowed(origin.decode("latin-1") if origin is not None else None,
                              self._allowed):
            raise Forbidden("this Origin may not call /mcp (allow it with allowed_origins)")
        if self._tokens is None:
            return Principal.local_admin()
        scheme, _, secret = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        if scheme.lower() != "bearer":
            raise Unauthorized("a valid bearer token is required")
        return self._tokens.authenticate(secret.strip())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            principal = self._principal(scope)
        except MemorywireError as err:
            await error_response(err)(scope, receive, send)
            return
        scope[PRINCIPAL_SCOPE_KEY] = principal
        if scope.get("method") == "GET":
            await run_for_at_most(self._stream_timeout_s, self._manager.handle_request,
                                  scope, receive, send)
            return
        await self._manager.handle_request(scope, receive, send)
