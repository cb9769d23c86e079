"""Assemble a running server from a :class:`ServerConfig`: store, tokens, governance, app."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette

from memorywire.server.approvals import Approvals
from memorywire.server.auth import TokenStore
from memorywire.server.config import ServerConfig
from memorywire.server.dispatch import Dispatcher
from memorywire.server.http import create_app
from memorywire.server.limits import RateLimiter
from memorywire.store.base import MemoryStore

__all__ = ["Server", "build_server", "open_configured_store"]


def open_configured_store(config: ServerConfig) -> MemoryStore:
    from memorywire.store.registry import open_store

    kw: dict[str, Any] = {}
    if config.embedder == "hashing":
        from memorywire.embed.hashing import HashingEmbedder

        kw["embedder"] = HashingEmbedder()
    return open_store(config.store, **kw)


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
) -> Server:
    """A ready app; the caller serves ``server.app`` and awaits ``server.aclose()`` after."""
    config = config.resolved()
    store = store if store is not None else open_configured_store(config)
    limits = config.limits()
    if tokens is None and not config.no_auth:
        tokens = TokenStore(config.tokens_db)
    dispatcher = Dispatcher(
        store,
        approvals=approvals,
        limits=limits,
        rate_limiter=RateLimiter(limits.recall_rate, limits.recall_burst),
    )
    app = create_app(dispatcher, tokens=None if config.no_auth else tokens)
    return Server(config, store, dispatcher, None if config.no_auth else tokens, app)
