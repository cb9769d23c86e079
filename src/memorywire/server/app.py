"""Assemble a running server from a :class:`ServerConfig`: store, tokens, governance, app."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette

from memorywire.errors import MemorywireError
from memorywire.server.approvals import Approvals, GovernanceApprovals
from memorywire.server.auth import Role, TokenStore
from memorywire.server.config import ServerConfig
from memorywire.server.dispatch import Dispatcher
from memorywire.server.http import create_app
from memorywire.server.limits import RateLimiter
from memorywire.server.mcp_http import McpHttp
from memorywire.server.observability import Observability
from memorywire.store.base import MemoryStore

__all__ = ["Server", "build_server", "open_configured_store"]


def open_configured_store(config: ServerConfig) -> MemoryStore:
    from memorywire.store.registry import open_store

    kw: dict[str, Any] = {}
    if config.embedder == "hashing":
        from memorywire.embed.hashing import HashingEmbedder

        kw["embedder"] = HashingEmbedder()
    return open_store(config.store, **kw)


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


@dataclass
class Server:
    config: ServerConfig
    store: MemoryStore
    dispatcher: Dispatcher
    tokens: TokenStore | None
    app: Starlette

    async def aclose(self) -> None:
        if self.tokens is not None:
            self.tokens.close()
        await self.store.aclose()


def build_server(
    config: ServerConfig,
    *,
    store: MemoryStore | None = None,
    approvals: Approvals | None = None,
    tokens: TokenStore | None = None,
    observability: Observability | None = None,
) -> Server:
    """A ready app; the caller serves ``server.app`` and awaits ``server.aclose()`` after."""
    config = config.resolved()
    store = store if store is not None else open_configured_store(config)
    obs = observability if observability is not None else Observability.from_config(config)
    obs.attach_embedder(store)
    store = obs.wrap_store(store, "store")
    limits = config.limits()
    if tokens is None and not config.no_auth:
        tokens = TokenStore(config.tokens_db)
    ui_app = None
    if config.governance_db and approvals is None:
        from memorywire.governance import GovernedStore
        from memorywire.governance.ui import review_app

        governed = GovernedStore(
            store, config.governance_db, approval_base_url=f"http://{config.host}:{config.port}"
        )
        store = obs.wrap_store(governed, "governance")
        approvals = GovernanceApprovals(governed)
        ui_app = review_app(governed, _ui_auth(tokens))
        obs.watch_queue(governed)
    dispatcher = Dispatcher(
        store,
        approvals=approvals,
        limits=limits,
        rate_limiter=RateLimiter(limits.recall_rate, limits.recall_burst),
        observer=obs.observe,
    )
    auth = None if config.no_auth else tokens
    mcp = McpHttp(dispatcher, tokens=auth, allowed_origins=config.allowed_origins)
    app = create_app(
        dispatcher, tokens=auth, ui_app=ui_app, mcp_app=mcp, lifespan_hooks=[mcp.lifespan]
    )
    obs.install(app, auth)
    return Server(config, store, dispatcher, None if config.no_auth else tokens, app)
