"""What a running server tells its operator: metrics, traces and access logs, wired in once.

``/metrics`` (Prometheus) is on by default and answers loopback clients and admin tokens only,
because operation counts per outcome say something about every tenant. Traces (OTLP) and
structured access logs are off by default; when off, nothing of them is imported or wrapped.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memorywire.errors import Forbidden, MemorywireError, Unauthorized
from memorywire.server.auth import Role, TokenStore
from memorywire.server.config import ServerConfig, is_loopback
from memorywire.server.metrics import Metrics
from memorywire.store.base import MemoryStore

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from memorywire.governance import GovernedStore
    from memorywire.server.auth import Principal
    from memorywire.server.dispatch import DispatchResult
    from memorywire.server.tracing import Tracing

__all__ = ["ACCESS_LOGGER", "REQUEST_ID_HEADER", "Observability"]

ACCESS_LOGGER = "memorywire.access"
REQUEST_ID_HEADER = "x-request-id"
_SAFE_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
#: Per-request facts the access log prints: the id, and the operation once dispatched.
_REQUEST: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "memorywire_request", default=None
)
_BACKEND_CODES = ("backend_unavailable", "store_corrupt", "storage_full")

access_log = logging.getLogger(ACCESS_LOGGER)


class Observability:
    def __init__(
        self,
        *,
        metrics: Metrics | None = None,
        tracing: Tracing | None = None,
        access_log: bool = False,
    ) -> None:
        self.metrics = metrics
        self.tracing = tracing
        self.access_log = access_log

    @classmethod
    def from_config(cls, config: ServerConfig) -> Observability:
        tracing = None
        if config.tracing:
            from memorywire.server.tracing import Tracing

            tracing = Tracing()
        return cls(metrics=Metrics() if config.metrics else None, tracing=tracing,
                   access_log=config.access_log)

    # --- assembly ------------------------------------------------------------------------------

    def wrap_store(self, store: MemoryStore, step: str) -> MemoryStore:
        """A child span per call of ``store`` when tracing; the store itself otherwise."""
        if self.tracing is None:
            return store
        from memorywire.server.tracing import TracedStore

        system = store.name.split(":", 1)[0] if step == "store" else "memorywire.governance"
        return cast(MemoryStore, TracedStore(store, self.tracing, step=step, system=system))

    def attach_embedder(self, store: MemoryStore) -> None:
        """Batch-size metrics and model-call spans from the store's embedder, if it batches."""
        batcher = getattr(getattr(store, "embedder", None), "batcher", None)
        if batcher is None:
            return
        if self.metrics is not None:
            batcher.on_batch = self.metrics.observe_batch
        if self.tracing is not None:
            batcher.span_hook = self.tracing.embed_span(store.embedder.name)  # type: ignore[attr-defined]

    def watch_queue(self, governed: GovernedStore) -> None:
        if self.metrics is None:
            return

        async def depth() -> dict[tuple[tuple[str, str], ...], float]:
            counts = await governed.queue_counts()
            return {(("status", s),): float(n) for s, n in counts.items()}

        self.metrics.gauge("memorywire_approval_queue_depth",
                           "Approval queue items, by status (read at scrape time).", depth)

    def install(self, app: Starlette, tokens: TokenStore | None) -> None:
        """Add ``/metrics`` and, when asked for, the access log to ``app`` (before it starts)."""
        if self.metrics is not None:
            app.router.routes.append(
                Route("/metrics", _metrics_endpoint(self.metrics, tokens), methods=["GET"])
            )
        if self.access_log:
            if not access_log.handlers:  # serve configures no logging of its own
                handler = logging.StreamHandler()
                handler.setFormatter(logging.Formatter("%(message)s"))
                access_log.addHandler(handler)
                access_log.propagate = False
            access_log.setLevel(logging.INFO)
            app.add_middleware(AccessLog)

    # --- per operation -------------------------------------------------------------------------

    async def observe(
        self, op: str, principal: Principal, call: Callable[[], Awaitable[DispatchResult]]
    ) -> DispatchResult:
        """Run one dispatched operation under its span, counting its outcome and latency."""
        facts = _REQUEST.get()
        if facts is not None:
            facts.update(operation=op, principal=principal.name)
        started = time.perf_counter()
        outcome = "ok"
        try:
            if self.tracing is None:
                result = await call()
            else:
                request_id = facts.get("id") if facts else None
                with self.tracing.operation(op, principal.name, request_id):
                    result = await call()
        except MemorywireError as err:
            outcome = err.code
            if facts is not None:
                facts["error"] = err.code
            raise
        except Exception:
            outcome = "internal"
            raise
        finally:
            if self.metrics is not None:
                self.metrics.observe_operation(op, outcome, time.perf_counter() - started)
                if outcome in _BACKEND_CODES:
                    self._store_error("(all)", outcome)
        for failure in result.failures:
            self._store_error(failure.store, failure.code)
        return result

    def _store_error(self, store: str, code: str) -> None:
        if self.metrics is not None:
            self.metrics.inc("memorywire_store_errors_total", (("store", store), ("code", code)))


def _metrics_endpoint(
    metrics: Metrics, tokens: TokenStore | None
) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        from memorywire.server.http import error_response

        client = request.client.host if request.client else ""
        if not is_loopback(client):
            try:
                _require_admin(request, tokens)
            except MemorywireError as err:
                return error_response(err)
        return PlainTextResponse(await metrics.render(),
                                 media_type="text/plain; version=0.0.4; charset=utf-8")

    return endpoint


def _require_admin(request: Request, tokens: TokenStore | None) -> None:
    if tokens is None:
        raise Forbidden("/metrics answers loopback clients only on a server without tokens")
    scheme, _, secret = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        raise Unauthorized("a valid bearer token is required")
    p = tokens.authenticate(secret.strip())
    if p.role is not Role.ADMIN or p.agent_ids is not None:
        raise Forbidden("/metrics needs an unscoped admin token")


class AccessLog:
    """One JSON line per HTTP request on the ``memorywire.access`` logger, with a request id.

    The id is the caller's ``X-Request-Id`` when it is a short safe token, else a fresh one;
    it is echoed in the response and set on the operation's span.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(REQUEST_ID_HEADER.encode(), b"").decode(
            "latin-1")
        rid = given if _SAFE_ID.fullmatch(given) else uuid.uuid4().hex
        facts: dict[str, Any] = {"id": rid}
        token = _REQUEST.set(facts)
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = list(message.get("headers") or [])
                headers.append((REQUEST_ID_HEADER.encode(), rid.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            _REQUEST.reset(token)
            client = scope.get("client")
            access_log.info(json.dumps({
                "request_id": rid,
                "method": scope.get("method"),
                "path": scope.get("path"),
                "status": status,
                "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                "client": client[0] if client else None,
                **{k: v for k, v in facts.items() if k != "id"},
            }, separators=(",", ":")))
