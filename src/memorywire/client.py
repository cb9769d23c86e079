"""The Python SDK: the same methods and return types in-process, over HTTP, and blocking.

* :class:`Memory` runs operations in this process on the server's runtime (same dispatcher,
  validation, errors, limits, signing key and governance), over a store object, a store URL
  or a configuration.
* :class:`RemoteMemory` speaks the REST transport with a bearer token.
* :class:`SyncMemory` wraps either for scripts, on a private event loop thread.

Beside the five operations each offers the record operations ``get``, ``list`` (cursor
pages), ``update``, ``history`` and ``erase``. Every method takes the wire request as a model,
a mapping or keyword arguments, returns the wire response model (``RememberResponse``,
``ListResponse``, ...) and raises the
:mod:`memorywire.errors` tree; a remote error is rebuilt from its envelope, so
``except NotFound`` works the same on both sides.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar, cast

import httpx
from pydantic import BaseModel

from memorywire.client_methods import _MODELS, AsyncOperations, SyncOperations
from memorywire.errors import (
    BackendUnavailable,
    CapabilityMissing,
    InvalidRequest,
    MemorywireError,
    error_from_envelope,
)
from memorywire.server.auth import Principal
from memorywire.server.dispatch import FAILURES_HEADER, validate_request
from memorywire.store.base import MemoryStore
from memorywire.sync_loop import LoopThread
from memorywire.wire.models import (
    StoreFailure,
)
from memorywire.wire.routes import route_for, route_named

if TYPE_CHECKING:
    from memorywire.server.config import ServerConfig
    from memorywire.server.recovery import RecoveryResult
    from memorywire.server.runtime import Runtime

__all__ = ["AsyncMemoryAPI", "Memory", "RemoteMemory", "SyncMemory"]

Resp = TypeVar("Resp", bound=BaseModel)
#: The five wire operations, run by the dispatcher itself; the record operations by its
#: ``records``.
_WIRE_OPS = frozenset({"remember", "recall", "forget", "merge", "expire"})


class AsyncMemoryAPI(AsyncOperations):
    """What :class:`Memory` and :class:`RemoteMemory` both offer: the ten operations with
    their parameters (:class:`~memorywire.client_methods.AsyncOperations`), ``call`` for
    any other operation, and ``aclose``."""

    async def call(self, op: str, doc: Mapping[str, Any] | None = None) -> Any:
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError


class Memory(AsyncMemoryAPI):
    """In-process memory on the server's runtime (:mod:`memorywire.server.runtime`).

    Operations go through the dispatcher ``memorywire serve`` builds from the same
    configuration, with its signing key, limits and governance, so an answer here is the
    answer over REST (a hard forget returns the same signed receipt). What to run on:

    * a store URL (``memory://``, ``sqlite:///x.db``) or a store object: the runtime of a
      configuration naming that store (no governance unless ``config`` asks for it);
    * ``config``: a :class:`~memorywire.server.config.ServerConfig` (``load_config()``),
      opened here: its store, governance and signing key;
    * nothing: ``load_config()``, the deployment the ``memorywire`` command uses (the default
      store under the data directory, governed, unless the environment says otherwise);
    * ``runtime``: one the caller opened (``async with running(config) as rt``) and closes.

    The first implementation's shape works too (:mod:`memorywire.client05`):
    ``Memory(agent_id="bot", stores=[URL or store, ...])`` (several stores are a router),
    then ``remember("text", type=...)``, ``recall("query", k=5)`` iterated for its hits,
    ``forget(filter=...)``, ``health()`` and ``close()``.
    """

    def __init__(
        self,
        store: MemoryStore | str | None = None,
        *,
        agent_id: str | None = None,
        stores: Sequence[str | MemoryStore] | None = None,
        config: ServerConfig | None = None,
        runtime: Runtime | None = None,
        principal: Principal | None = None,
        own_store: bool = False,
        min_relevance: float | None = None,
        **store_kw: Any,
    ) -> None:
        """A URL is opened here and closed by :meth:`aclose`; so is a store with ``own_store``
        and whatever ``config`` opens. ``min_relevance``: the floor of a recall that names
        none (a configuration's ``min_relevance``). ``store_kw`` go to the store a URL opens
        (``embedder=``). ``agent_id``: every call is this agent's unless it names another;
        ``stores``: 0.5's list of stores, owned (closed) by this memory."""
        from memorywire.server.runtime import open_runtime

        if stores is not None:
            if isinstance(store, str) and "://" not in store and agent_id is None:
                agent_id, store = store, None  # 0.5's Memory("bot", stores=[...])
            if store is not None or runtime is not None:
                raise InvalidRequest("Memory: stores: not with store or runtime (give one)")
            from memorywire.client05 import open_stores

            store = open_stores(stores, store_kw, _close_now)
            store_kw, own_store = {}, True
        if agent_id is not None and not agent_id:
            raise InvalidRequest("Memory: agent_id must not be empty")
        self.agent_id = agent_id
        if runtime is not None:
            extra = [name for name, given in (
                ("store", store is not None), ("config", config is not None),
                ("own_store", own_store), ("min_relevance", min_relevance is not None),
                *((k, True) for k in sorted(store_kw))) if given]
            if extra:
                raise InvalidRequest(f"Memory: {', '.join(extra)}: not with runtime, whose "
                                     "store and configuration are already chosen")
        if store_kw and not isinstance(store, str):
            raise InvalidRequest(f"Memory: {', '.join(sorted(store_kw))}: store settings apply "
                                 "only to a store URL")
        self._runtime_owned = runtime is None
        self._store_owned = own_store or not isinstance(store, MemoryStore)
        if runtime is None:
            cfg = _config_for(store, config, min_relevance)
            opened = _open_store(store, cfg, store_kw)
            try:
                runtime = open_runtime(cfg, store=opened)
            except BaseException:
                if self._store_owned:
                    _close_now(opened)
                raise
        self.runtime = runtime
        self.store = runtime.store
        self._dispatcher = runtime.dispatcher
        self._principal = principal or Principal.local_admin()

    async def _operation(self, op: str, doc: dict[str, Any], model: type[Resp]) -> Resp:
        if op == "forget" and self.agent_id is not None and doc.get("filter"):
            from memorywire.client05 import forget_doc  # 0.5's filter on record fields

            doc = await forget_doc(self.store, doc)
        req = validate_request(_MODELS[op], doc, op)
        on = self._dispatcher if op in _WIRE_OPS else self._dispatcher.records
        out = await getattr(on, op)(req, self._principal)
        assert isinstance(out, model)
        if op == "recall" and self.agent_id is not None:
            from memorywire.client05 import RecallHits  # 0.5 answered the list of hits

            return RecallHits.of(out)  # type: ignore[arg-type,return-value]
        return out

    async def call(self, op: str, doc: Mapping[str, Any] | None = None) -> Any:
        """Any other dispatcher operation (``approvals.list``, ``health``, ...) as JSON."""
        return (await self._dispatcher.dispatch(op, dict(doc or {}), self._principal)).body

    async def recover(self, **kw: Any) -> RecoveryResult:
        """Clean poisoned memory as ``memorywire recover`` does: keyword arguments of
        :func:`memorywire.server.recovery.recover` (seeds ``source``/``sources``, ``ids``,
        ``since_ms``, ``until_ms``, or ``agent_id`` alone for 0.5's verdicts with
        ``trusted``, ``detectors``, ``quarantine``, ``hard``, ``expire_low_conf``; ``key``,
        ``dry_run``, ``reason``, ``audit``).
        Admins only. :meth:`RemoteMemory.recover` asks a server's admin route instead and
        returns its JSON (plan, receipt), with ``approval=True`` to stage the plan.
        Without ``key`` the runtime's signing key signs the receipt, and without ``audit``
        the receipt is chained into its governance audit log, as the server does."""
        from memorywire.server.recovery import recover

        if kw.get("key") is None and not kw.get("dry_run"):
            source = self._dispatcher.signing_key
            kw["key"] = source.get() if source is not None else None
        kw.setdefault("audit", self.runtime.governed)
        kw.setdefault("hold", self._dispatcher.recovery.quarantine)
        return await recover(self.store, self._principal, **kw)

    async def health(self) -> dict[str, Any]:
        """0.5's health dictionary: ``status`` and one row per store (``backend``,
        ``status``, ``memory_count``); ``call("health")`` is the server's answer."""
        from memorywire.client05 import health_doc

        return await health_doc(self.store)

    async def close(self) -> None:
        """:meth:`aclose` under 0.5's name."""
        await self.aclose()

    async def aclose(self) -> None:
        """Close what this object opened: its runtime (a ``runtime`` passed in is the
        caller's), and the store unless it was handed over without ``own_store``."""
        if not self._runtime_owned:
            return
        self._runtime_owned = False
        if self._store_owned:
            await self.runtime.aclose()
        elif self.runtime.governed is not None:  # the caller's store stays open
            await self.runtime.governed.aclose(inner=False)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _config_for(
    store: MemoryStore | str | None, config: ServerConfig | None, min_relevance: float | None
) -> ServerConfig:
    """The configuration a :class:`Memory` runs on, checked before anything is opened."""
    from dataclasses import replace

    from memorywire.server.config import ServerConfig, load_config

    if config is None:
        config = load_config() if store is None else ServerConfig()
    if isinstance(store, str):
        config = replace(config, store=store, stores=())
    elif store is not None and not config.governance_db:
        # The default governance database belongs to the default store, not to this one.
        config = replace(config, governance=False)
    if min_relevance is not None:
        config = replace(config, min_relevance=min_relevance)
    config.resolved()  # a bad setting is refused before a store is opened
    return config


def _open_store(
    store: MemoryStore | str | None, config: ServerConfig, store_kw: Mapping[str, Any]
) -> MemoryStore:
    if isinstance(store, MemoryStore):
        return store
    if isinstance(store, str):
        from memorywire.store.registry import open_store

        return open_store(store, **store_kw)
    from memorywire.server.runtime import open_configured_store

    return open_configured_store(config.resolved())


_closing: set[asyncio.Task[None]] = set()


def _close_now(store: MemoryStore) -> None:
    """Close a store this constructor opened when a later step failed: on the running loop
    if there is one (``__init__`` cannot await), else it is left to the garbage collector."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    task = loop.create_task(store.aclose())
    _closing.add(task)
    task.add_done_callback(_closing.discard)


class RemoteMemory(AsyncMemoryAPI):
    """Memory on a memorywire server, over REST with a bearer token."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, transport=transport
        )

    async def _send(
        self, method: str, path: str, body: Any = None, params: Mapping[str, Any] | None = None
    ) -> httpx.Response:
        try:
            resp = await self._http.request(
                method, path, json=body, params=dict(params) if params else None
            )
        except httpx.HTTPError as exc:
            raise BackendUnavailable(f"memorywire server unreachable: {exc}") from None
        if resp.status_code >= 400:
            raise _error_of(resp)
        return resp

    async def _operation(self, op: str, doc: dict[str, Any], model: type[Resp]) -> Resp:
        route = route_named(op)
        resp = await self._send(route.method, route.path, doc)
        out = model.model_validate(resp.json())
        failures = resp.headers.get(FAILURES_HEADER)
        if failures and "failures" in type(out).model_fields:
            parsed = [StoreFailure.model_validate(f) for f in json.loads(failures)]
            out = out.model_copy(update={"failures": parsed})
        return out

    async def recover(self, **selector: Any) -> dict[str, Any]:
        """``POST /v0/admin/recover`` (admin token): ``source``, ``agent_id``, ``since_ms``,
        ``until_ms``, ``ids``; ``dry_run=True`` for the plan, ``approval=True`` to stage it
        as one approval item; otherwise the plan is carried out and the receipt returned."""
        out = await self.call("recover", selector)
        assert isinstance(out, dict)
        return out

    async def call(self, op: str, doc: Mapping[str, Any] | None = None) -> Any:
        """Any other operation: on its REST route when it has one, else over JSON-RPC."""
        route = route_for(op, doc)
        if route is None:
            return await self._rpc(op, dict(doc or {}))
        path, rest = route.fill(doc or {})
        if route.method == "GET":
            return (await self._send("GET", path, params=rest)).json()
        return (await self._send("POST", path, rest)).json()

    async def _rpc(self, method: str, params: dict[str, Any]) -> Any:
        call = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        rpc = route_named("rpc")
        reply = (await self._send(rpc.method, rpc.path, call)).json()
        if "error" in reply:
            raise error_from_envelope(reply["error"].get("data") or {})
        return reply["result"]

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _error_of(resp: httpx.Response) -> MemorywireError:
    try:
        body = resp.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and "code" in body:
        return error_from_envelope(body)
    return MemorywireError(f"HTTP {resp.status_code} from server without an error envelope")


T = TypeVar("T")
A = TypeVar("A", bound=AsyncMemoryAPI)


class SyncMemory(SyncOperations, Generic[A]):
    """A blocking facade over :class:`Memory` or :class:`RemoteMemory`.

    The async object lives on a private event-loop thread, so this works from any plain
    script, including one with no event loop of its own.
    """

    def __init__(self, make: Callable[[], A]) -> None:
        loop = LoopThread()
        self._portal = loop.portal
        try:
            self._mem: A = self._portal.call(_construct, make)
        except BaseException:
            loop.shutdown()
            raise
        # A script that never calls close() still closes the store and exits (see sync_loop).
        self._finalizer = weakref.finalize(self, loop.shutdown, self._mem.aclose)

    @classmethod
    def local(cls, store: MemoryStore | str | None = None, **kw: Any) -> SyncMemory[Memory]:
        """:class:`Memory` in this process (its arguments); no store: the deployment's."""
        return SyncMemory(lambda: Memory(store, **kw))

    @classmethod
    def remote(cls, base_url: str, token: str | None = None, **kw: Any) -> SyncMemory[RemoteMemory]:
        return SyncMemory(lambda: RemoteMemory(base_url, token, **kw))

    def _blocking(self, op: str, doc: dict[str, Any], model: type[Resp]) -> Resp:
        fn = getattr(self._mem, op)

        async def go() -> Resp:
            return cast(Resp, await fn(doc))

        return self._portal.call(go)

    def call(self, op: str, doc: Mapping[str, Any] | None = None) -> Any:
        """Any other operation (``approvals.list``, ``health``, ...) as JSON."""

        async def go() -> Any:
            return await self._mem.call(op, doc)

        return self._portal.call(go)

    def recover(self, **kw: Any) -> RecoveryResult | dict[str, Any]:
        """:meth:`Memory.recover` in process (a :class:`RecoveryResult`), or
        :meth:`RemoteMemory.recover` on a server (its JSON answer)."""
        fn = getattr(self._mem, "recover", None)
        if fn is None:
            raise CapabilityMissing("recover is not available over this client; run "
                                    "`memorywire recover` where the store is")

        async def go() -> RecoveryResult | dict[str, Any]:
            return cast("RecoveryResult | dict[str, Any]", await fn(**kw))

        out: RecoveryResult | dict[str, Any] = self._portal.call(go)
        return out

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


async def _construct(make: Callable[[], T]) -> T:
    # Built inside the portal's loop so its HTTP client and store bind to that loop.
    return make()
