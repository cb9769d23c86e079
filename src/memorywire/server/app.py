"""The HTTP server ``memorywire serve`` runs: the runtime plus REST, JSON-RPC, ``/ui`` and ``/mcp``.

What runs underneath (store, governance, approvals, dispatcher, tokens) is opened by
:mod:`memorywire.server.runtime`, the same setup every other transport uses; this module only
adds the HTTP surface on top and runs it under uvicorn.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from starlette.applications import Starlette

from memorywire.errors import MemorywireError
from memorywire.server.auth import Role, TokenStore
from memorywire.server.config import ServerConfig
from memorywire.server.dispatch import Dispatcher
from memorywire.server.http import create_app
from memorywire.server.mcp_http import McpHttp
from memorywire.server.observability import Observability
from memorywire.server.origin import BrowserRules
from memorywire.server.runtime import Runtime, open_runtime, running
from memorywire.store.base import MemoryStore

__all__ = ["Server", "build_server", "http_app", "serve"]


def _ui_auth(tokens: TokenStore | None) -> Callable[[str], str | None]:
    """The reviewer UI shows every tenant's queue, so only unscoped reviewers/admins log in."""

    def auth(secret: str) -> str | None:
        if tokens is None:
            return "local"
        try:
            p = tokens.authenticate(secret)
        except MemorywireError:
            return None
        if p.role not in (Role.REVIEWER, Role.ADMIN) or p.agent_ids is not None:
            return None
        return p.name

    return auth


def http_app(runtime: Runtime) -> Starlette:
    """REST, JSON-RPC and OpenAPI over the runtime's dispatcher, with ``/mcp`` and, when
    governance is on, the reviewer UI at ``/ui``. Serve it with lifespan on (``/mcp``)."""
    ui_app = None
    if runtime.governed is not None:
        from memorywire.server.ui import review_app

        ui_app = review_app(runtime.governed, _ui_auth(runtime.tokens))
    mcp = McpHttp(
        runtime.dispatcher,
        tokens=runtime.tokens,
        allowed_origins=runtime.config.allowed_origins,
        defaults=runtime.config.tool_defaults(),
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


def serve(
    config: ServerConfig, *, on_ready: Callable[[ServerConfig], None] | None = None
) -> None:
    """Open the runtime, serve it until interrupted, close it. ``on_ready`` sees the resolved
    configuration once everything is open, before the first request."""
    import anyio
    import uvicorn

    from memorywire.server.timeouts import uvicorn_config

    async def main() -> None:
        async with running(config, http=True) as runtime:
            cfg = runtime.config
            if on_ready is not None:
                on_ready(cfg)
            server = uvicorn.Server(
                uvicorn_config(http_app(runtime), cfg.host, cfg.port, cfg.timeouts())
            )
            await server.serve()

    # uvicorn re-raises the Ctrl-C it caught once it has stopped; that is a normal exit.
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(main)
