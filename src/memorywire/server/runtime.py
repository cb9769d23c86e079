"""The one setup: configuration → opened store → governance → approvals → dispatcher.

``memorywire serve`` (through :mod:`memorywire.server.app`), ``memorywire mcp``, the CLI's
data commands on a local store and the interaction tests all build what they run on here, so
a store opened by one transport is wrapped, audited and limited exactly as by another. What
is opened here is closed by :meth:`Runtime.aclose` (or on leaving :func:`running`), in
reverse order, even when a later step fails.

The configuration is :class:`~memorywire.server.config.ServerConfig`; turning its store
setting into a store happens in :func:`open_configured_store` only, so a configuration that
names several stores becomes a router there and nowhere else.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from memorywire.errors import InvalidRequest
from memorywire.server.approvals import Approvals, GovernanceApprovals
from memorywire.server.auth import TokenStore
from memorywire.server.config import ServerConfig
from memorywire.server.dispatch import Dispatcher
from memorywire.server.limits import rate_limiters
from memorywire.store.base import MemoryStore

if TYPE_CHECKING:
    from memorywire.governance import GovernedStore
    from memorywire.server.observability import Observability

__all__ = ["Runtime", "open_configured_store", "open_runtime", "running"]

log = logging.getLogger(__name__)
#: Seconds between the server's looks at the router outbox (each entry has its own backoff).
OUTBOX_POLL_S = 2.0


def open_configured_store(
    config: ServerConfig, *, reads_need_file: bool = False
) -> MemoryStore:
    """The store a configuration names, opened (the caller closes it).

    ``reads_need_file``: for a one-shot command, a read of a store file that does not exist
    is an error naming the path (a mistyped path is the likely cause); servers, whose first
    caller may well read before anyone wrote, get an empty answer. Neither creates a file.
    """
    from memorywire.store.registry import open_store

    kw: dict[str, Any] = {}
    if config.embedder != "default":  # any spec of memorywire.embed.spec; unknown: refused
        from memorywire.embed.spec import embedder_from_spec

        kw["embedder"] = embedder_from_spec(config.embedder)
    if config.stores:
        return _open_router(config, kw, reads_need_file)
    store = open_store(config.store, **kw)
    if reads_need_file and hasattr(store, "reads_need_file"):
        store.reads_need_file = True
    return store


def _open_router(config: ServerConfig, kw: dict[str, Any], reads_need_file: bool) -> MemoryStore:
    """A router over the configured stores, the primary first (the router's primary is its
    first child). A child is named by its entry; unnamed children of a scheme that appears
    more than once are named ``sqlite-1``, ``sqlite-2``, ... (the router needs unique names),
    the others keep their store's own name."""
    from memorywire.router import MemoryRouter
    from memorywire.store.registry import open_store

    entries = sorted(config.stores, key=lambda e: not e.primary)
    named = [e.name for e in entries if e.name]
    if len(set(named)) != len(named):
        raise InvalidRequest(f"stores: names must be unique, got {named}")
    schemes = [e.url.split(":", 1)[0].split("+", 1)[0].lower() for e in entries]
    seen: dict[str, int] = {}
    opened: list[MemoryStore] = []
    for entry, scheme in zip(entries, schemes, strict=True):
        name = entry.name
        if not name and schemes.count(scheme) > 1:
            seen[scheme] = seen.get(scheme, 0) + 1
            name = f"{scheme}-{seen[scheme]}"
        store = open_store(entry.url, **kw, **({"name": name} if name else {}))
        opened.append(store)
        if reads_need_file and hasattr(store, "reads_need_file"):
            store.reads_need_file = True
    from memorywire.router.outbox import ForgetOutbox
    from memorywire.server.config import data_dir

    pairs = list(zip(opened, entries, strict=True))
    return MemoryRouter(
        opened, {s.name: e.weight for s, e in pairs}, timeout=config.router_deadline_s,
        quorum=config.quorum,
        remember_policy="primary_only" if config.remember_policy == "primary_only" else "all",
        rrf_k=config.rrf_k,
        outbox=ForgetOutbox(config.router_outbox or data_dir() / "router-outbox.db"),
        deadlines={s.name: e.deadline_s for s, e in pairs if e.deadline_s is not None},
        trust={s.name: e.trust for s, e in pairs if e.trust != 1.0},
    )


@dataclass
class Runtime:
    """Everything a transport needs, opened from one configuration."""

    config: ServerConfig
    #: What operations run on: the configured store, wrapped by governance when it is on.
    store: MemoryStore
    dispatcher: Dispatcher
    governed: GovernedStore | None = None
    approvals: Approvals | None = None
    #: ``None``: every caller is the local owner (stdio, the local CLI, ``--no-auth``).
    tokens: TokenStore | None = None
    #: Metrics, traces and the access log of the HTTP server (``None`` elsewhere).
    observability: Observability | None = None
    _closed: bool = field(default=False, repr=False)

    def expiry_sweeper(self) -> Callable[[], Coroutine[Any, Any, None]] | None:
        """The periodic expiry purge ``serve`` runs beside the HTTP server, or ``None``.

        Off when ``purge_interval_s`` is 0. A store that cannot purge (no ``purge_expired``)
        or a server without a signing key (receipts are part of the purge) also turns it off,
        with a warning naming why, so the operator sees it at start-up rather than never.
        """
        from memorywire.errors import CapabilityMissing
        from memorywire.governance.purge import purgeable

        cfg = self.config
        if cfg.purge_interval_s <= 0:
            return None
        try:
            target = purgeable(self.store)
        except CapabilityMissing as exc:
            log.warning("expiry sweeper off: %s (set purge_interval_s = 0 to silence this)",
                        exc.message)
            return None
        key = self.dispatcher.signing_key.get() if self.dispatcher.signing_key else None
        if key is None:
            log.warning("expiry sweeper off: no signing key for its receipts (set signing_key "
                        "or turn governance on)")
            return None
        grace_ms = int(cfg.purge_grace_hours * 3_600_000)

        async def run() -> None:
            from memorywire.errors import MemorywireError
            from memorywire.governance.purge import sweep_once

            while True:
                try:
                    done = await sweep_once(target, key, grace_ms=grace_ms, audit=self.governed)
                except MemorywireError as exc:  # a store outage waits for the next round
                    log.warning("expiry sweep failed, retrying in %.0f s: %s",
                                cfg.purge_interval_s, exc.message)
                else:
                    for rc in done:
                        log.info("expiry sweep purged %d memories (receipt %s)",
                                 sum(len(v) for v in rc["erased"].values()), rc["receipt_id"])
                await anyio.sleep(cfg.purge_interval_s)

        return run

    def outbox_courier(self) -> Callable[[], Coroutine[Any, Any, None]] | None:
        """The loop ``serve`` runs to re-send forgets a router child missed, or ``None``
        when the store is not a router with an outbox; a quiet server catches up too."""
        from memorywire.router import MemoryRouter

        router: Any = self.store
        while router is not None and not isinstance(router, MemoryRouter):
            router = getattr(router, "inner", None)
        if router is None or router.outbox is None:
            return None
        found: MemoryRouter = router

        async def run() -> None:
            while True:
                if found.outbox is not None and found.outbox.due():
                    taken = await found.deliver_outbox()
                    if taken:
                        log.info("router outbox: %d missed forgets delivered", taken)
                await anyio.sleep(OUTBOX_POLL_S)

        return run

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self.tokens is not None:
                self.tokens.close()
        finally:
            await self.store.aclose()


def open_runtime(
    config: ServerConfig,
    *,
    http: bool = False,
    store: MemoryStore | None = None,
    tokens: TokenStore | None = None,
    observability: Observability | None = None,
) -> Runtime:
    """Open what ``config`` describes; await :meth:`Runtime.aclose` when done.

    ``http=True`` is the network server: callers authenticate with tokens (unless
    ``no_auth``), recall is rate limited, and staged writes link to the reviewer UI on the
    configured address. Otherwise the caller is the process owner and nothing is limited by
    rate. ``store`` and ``tokens`` replace what the configuration would open (tests); the
    runtime closes them like its own when it uses them. Prefer :func:`running`, which also
    closes the store when a later step of the setup fails.
    """
    config = config.resolved()
    inner = store if store is not None else open_configured_store(config)
    obs = observability
    if obs is None and http:
        from memorywire.server.observability import Observability

        obs = Observability.from_config(config)
    if obs is not None:
        obs.attach_embedder(inner)
        inner = obs.wrap_store(inner, "store")
    in_use = None
    if http and not config.no_auth:
        in_use = tokens if tokens is not None else TokenStore(config.tokens_db)
    governed = None
    approvals: Approvals | None = None
    served: MemoryStore = inner
    if config.governance_db:
        from memorywire.governance import GovernedStore

        base_url = f"http://{config.host}:{config.port}" if http else None
        try:
            governed = GovernedStore(inner, config.governance_db, approval_base_url=base_url,
                                     policies=config.policies)
        except BaseException:
            if in_use is not None:
                in_use.close()
            raise
        served = governed if obs is None else obs.wrap_store(governed, "governance")
        approvals = GovernanceApprovals(governed)
        if obs is not None:
            obs.watch_queue(governed)
    limits = config.limits()
    dispatcher = Dispatcher(
        served,
        approvals=approvals,
        limits=limits,
        **rate_limiters(limits, enabled=http and config.rate_limited()),
        observer=None if obs is None else obs.observe,
        signing_key=config.signing_key_source(),
        receipts_audit=governed,
        min_relevance=config.min_relevance,
    )
    return Runtime(config, served, dispatcher, governed, approvals, in_use, obs)


@asynccontextmanager
async def running(
    config: ServerConfig,
    *,
    http: bool = False,
    store: MemoryStore | None = None,
    tokens: TokenStore | None = None,
    reads_need_file: bool = False,
) -> AsyncIterator[Runtime]:
    """:func:`open_runtime` as an async context manager: closed on exit, whatever happens.
    ``reads_need_file`` is :func:`open_configured_store`'s."""
    inner = store if store is not None else open_configured_store(
        config.resolved(), reads_need_file=reads_need_file)
    try:
        runtime = open_runtime(config, http=http, store=inner, tokens=tokens)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await inner.aclose()
        raise
    try:
        yield runtime
    finally:
        # Shielded: an interrupt (Ctrl-C cancels the main task) must not cut the close short.
        with anyio.CancelScope(shield=True):
            await runtime.aclose()
