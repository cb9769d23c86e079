"""The HTTP server ``memorywire serve`` runs: the runtime plus REST, JSON-RPC, ``/ui`` and ``/mcp``.

What runs underneath (store, governance, approvals, dispatcher, tokens) is opened by
:mod:`memorywire.server.runtime`, the same setup every other transport uses; this module only
adds the HTTP surface on top and runs it under uvicorn.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, replace

from starlette.applications import Starlette

from memorywire.errors import InvalidRequest, MemorywireError
from memorywire.server.apidocs import DOCS_PATH, REDOC_INSTALL_HINT, REDOC_PATH, redoc_script
from memorywire.server.auth import LOCAL_OPERATOR, Role, TokenStore
from memorywire.server.config import ServerConfig
from memorywire.server.dispatch import Dispatcher
from memorywire.server.http import create_app
from memorywire.server.mcp.extra import INSTALL_HINT, mcp_available
from memorywire.server.mcp.http import McpHttp
from memorywire.server.observability import Observability
from memorywire.server.origin import BrowserRules
from memorywire.server.runtime import Runtime, open_runtime, running
from memorywire.store.base import MemoryStore
from memorywire.wire.routes import route_named

__all__ = [
    "LOG_LEVELS", "Server", "bind_port", "build_server", "endpoints", "http_app", "run_server",
    "serve",
]

#: uvicorn's levels; ``info`` and below add its access log (one line per request).
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


def _ui_auth(tokens: TokenStore | None, *, hashed: bool = False) -> Callable[[str], str | None]:
    """The reviewer UI shows every tenant's queue, so only unscoped reviewers/admins log in.
    ``hashed``: the argument is the SHA-256 of the token (shared sessions keep only that)."""

    def auth(secret: str) -> str | None:
        if tokens is None:
            # The human at the browser, a principal apart from the agents calling the API,
            # so an agent's staged write can be approved here (and not by the agent).
            return LOCAL_OPERATOR
        try:
            p = tokens.authenticate_hashed(secret) if hashed else tokens.authenticate(secret)
        except MemorywireError:
            return None
        if p.role not in (Role.REVIEWER, Role.ADMIN) or p.agent_ids is not None:
            return None
        return p.name

    return auth


def _review_ui(runtime: Runtime) -> Starlette:
    """The reviewer UI; with several workers its sessions and cookie key are files beside
    the token database, so a reviewer signed in through one worker is through all."""
    from memorywire.server.ui import review_app

    assert runtime.governed is not None
    cfg = runtime.config
    # a policy read from a file is written back there when a reviewer accepts a rule
    policy_file = cfg.policies if isinstance(cfg.policies, str) else None
    threshold = cfg.review_pattern_threshold
    if cfg.workers.strip() in ("", "1", "auto"):
        return review_app(runtime.governed, _ui_auth(runtime.tokens),
                          receipt_key=runtime.dispatcher.signing_key,
                          pattern_threshold=threshold, policy_file=policy_file)
    import secrets
    from pathlib import Path

    from memorywire.governance.keys import create_once
    from memorywire.server.ui.shared_sessions import SharedReviewSessions

    key_path = Path(cfg.tokens_db + ".ui-cookie-key")
    if not key_path.exists():
        create_once(key_path, secrets.token_hex(32).encode("ascii"))
    book = SharedReviewSessions(cfg.tokens_db + ".ui-sessions", _ui_auth(runtime.tokens),
                                _ui_auth(runtime.tokens, hashed=True))
    return review_app(runtime.governed, _ui_auth(runtime.tokens), sessions=book,
                      receipt_key=runtime.dispatcher.signing_key,
                      pattern_threshold=threshold, policy_file=policy_file,
                      secret_key=key_path.read_text(encoding="ascii").strip())


def http_app(runtime: Runtime) -> Starlette:
    """REST, JSON-RPC and OpenAPI over the runtime's dispatcher, with ``/mcp`` and, when
    governance is on, the reviewer UI at ``/ui``. Serve it with lifespan on (``/mcp``)."""
    ui_app = _review_ui(runtime) if runtime.governed is not None else None
    if not mcp_available():
        # Without the ``mcp`` extra the server still speaks REST and JSON-RPC; /mcp answers
        # 404 and the start-up line says how to install it.
        return create_app(runtime.dispatcher, tokens=runtime.tokens, ui_app=ui_app)

    mcp = McpHttp(
        runtime.dispatcher,
        tokens=runtime.tokens,
        allowed_origins=runtime.config.allowed_origins,
        defaults=runtime.config.tool_defaults(),
        stream_timeout_s=runtime.config.idle_timeout_s,
    )
    cfg = runtime.config
    app = create_app(
        runtime.dispatcher,
        tokens=runtime.tokens,
        ui_app=ui_app,
        mcp_app=mcp,
        lifespan_hooks=[mcp.lifespan],
        browser=BrowserRules.for_bind(cfg.host, cfg.allowed_origins, cfg.allowed_hosts),
    )
    if runtime.observability is not None:
        runtime.observability.install(app, runtime.tokens)
    return app


@dataclass
class Server:
    """A runtime with its HTTP app: serve ``app``, then await :meth:`aclose`."""

    runtime: Runtime
    app: Starlette

    @property
    def config(self) -> ServerConfig:
        return self.runtime.config

    @property
    def store(self) -> MemoryStore:
        return self.runtime.store

    @property
    def dispatcher(self) -> Dispatcher:
        return self.runtime.dispatcher

    @property
    def tokens(self) -> TokenStore | None:
        return self.runtime.tokens

    async def aclose(self) -> None:
        await self.runtime.aclose()


def build_server(
    config: ServerConfig,
    *,
    store: MemoryStore | None = None,
    tokens: TokenStore | None = None,
    observability: Observability | None = None,
) -> Server:
    """A ready app for callers that run their own server loop (tests, embedding)."""
    runtime = open_runtime(
        config, http=True, store=store, tokens=tokens, observability=observability
    )
    return Server(runtime, http_app(runtime))


def endpoints(app: Starlette, config: ServerConfig) -> list[tuple[str, str]]:
    """(what, where) for each surface ``app`` really serves, for the start-up message; a
    surface that is off says how to turn it on."""
    host = f"[{config.host}]" if ":" in config.host else config.host
    base = f"http://{host}:{config.port}"
    paths = {getattr(r, "path", "") for r in app.routes}
    out = [("REST", f"{base}/v0/"), ("JSON-RPC", base + route_named("rpc").path)]
    out.append(("MCP", f"{base}/mcp" if "/mcp" in paths
                else f"not installed: {INSTALL_HINT}"))
    out.append(("review UI", f"{base}/ui/" if "/ui" in paths
                else "off: start with --governance-db PATH"))
    if DOCS_PATH in paths:
        out.append(("API docs", base + DOCS_PATH))
    if REDOC_PATH in paths:
        out.append(("ReDoc", base + REDOC_PATH if redoc_script() is not None
                    else f"not installed: {REDOC_INSTALL_HINT}"))
    out.append(("OpenAPI", base + route_named("openapi").path))
    if "/metrics" in paths:
        out.append(("metrics", f"{base}/metrics"))
    return out


def serve(
    config: ServerConfig,
    *,
    on_ready: Callable[[ServerConfig, list[tuple[str, str]]], None] | None = None,
    log_level: str = "warning",
) -> None:
    """Open the runtime, serve it until interrupted, close it. ``on_ready`` sees the resolved
    configuration and :func:`endpoints` once everything is open, before the first request.
    ``log_level`` is uvicorn's; ``info`` or lower logs every request (its access log).

    With ``workers`` above 1 (or ``auto`` choosing more) the runtime opens in each of that
    many processes on one socket (:mod:`memorywire.server.workers`); ``on_ready`` then runs
    once, when every worker is ready, and its configuration says how many there are."""
    from memorywire.server.workers import serve_workers, worker_count

    if log_level not in LOG_LEVELS:
        raise InvalidRequest(f"log level {log_level!r} is not one of {', '.join(LOG_LEVELS)}")
    resolved = config.resolved()
    n = worker_count(resolved)
    if n == 1:
        run_server(replace(config, workers="1"), on_ready=on_ready, log_level=log_level)
    else:
        serve_workers(replace(config, workers=str(n)), n, run=run_server, on_ready=on_ready,
                      log_level=log_level)


def run_server(
    config: ServerConfig,
    *,
    on_ready: Callable[[ServerConfig, list[tuple[str, str]]], None] | None = None,
    log_level: str = "warning",
    listen: Callable[[], socket.socket] | None = None,
    worker: tuple[int, int] = (0, 1),
) -> None:
    """One serving process: :func:`serve` with one worker, or worker ``worker[0]`` of
    ``worker[1]`` on the socket ``listen`` opens after ``on_ready`` (so no connection waits
    in the queue of a worker still loading its model). Periodic jobs (expiry sweeps,
    the router outbox) run in worker 0 only, so several workers do not purge twice."""
    import anyio
    import uvicorn

    from memorywire.server import gc_tuning
    from memorywire.server.timeouts import uvicorn_config

    index, count = worker
    gc_settings = gc_tuning.settings_from_env()  # a malformed value fails before loading
    bound: socket.socket | None = None
    if listen is None:  # one process: hold the port before the model loads
        resolved = config.resolved()
        bound = bind_port(resolved.host, resolved.port)
        held = bound
        listen = lambda: held  # noqa: E731

    async def main() -> None:
        async with running(config, http=True) as runtime:
            cfg = runtime.config
            if count > 1 and runtime.observability is not None:
                metrics = runtime.observability.metrics
                if metrics is not None:
                    metrics.const_labels = (("worker", str(index)),)
            app = http_app(runtime)
            if on_ready is not None:
                on_ready(cfg, endpoints(app, cfg))
            gc_tuning.tune(gc_settings)  # startup's objects are never garbage: freeze them
            sockets = None if listen is None else [listen()]
            server = uvicorn.Server(
                uvicorn_config(app, cfg.host, cfg.port, cfg.timeouts(), log_level=log_level)
            )
            loops = [runtime.expiry_sweeper(), runtime.outbox_courier()] if index == 0 else []
            async with anyio.create_task_group() as tg:
                for loop in loops:
                    if loop is not None:
                        tg.start_soon(loop)
                await server.serve(sockets=sockets)
                tg.cancel_scope.cancel()

    # uvicorn re-raises the Ctrl-C it caught once it has stopped; that is a normal exit.
    try:
        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(main)
    finally:
        if bound is not None:
            bound.close()


def bind_port(host: str, port: int) -> socket.socket:
    """The serving socket, bound (not yet listening) before anything loads. A port in use
    is then one ``InvalidRequest`` naming it, where uvicorn would exit from inside the event
    loop with a traceback, after the banner said the server was up."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if os.name != "nt":  # as uvicorn does: a restart may bind over TIME_WAIT sockets
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        hint = (" (another program is using it; --port N picks another)"
                if exc.errno == errno.EADDRINUSE else "")
        raise InvalidRequest(f"cannot listen on {host}:{port}: {exc.strerror}{hint}") from None
    return sock
