"""The ``MemoryStore`` protocol every backend, the router and governance implement.

Contract, for implementers and callers alike:

* **Scope.** Every operation is scoped to ``agent_id`` (and ``user_id`` when given). A store
  never returns, counts, changes or reveals a memory of another agent; "not found" and "not
  yours" are the same answer. Scoped k-NN is exact: the top-k is computed inside the scope,
  never on a global top-k filtered afterwards.
* **Atomicity.** Each call is one transaction from the caller's view: it either happened
  whole (rows, vectors, full-text, links, recall statistics) or not at all.
* **Failures.** A store raises only :mod:`memorywire.errors` types. Backend or driver errors
  are translated to ``BackendUnavailable`` (the backend could not be reached or failed) or
  ``StoreCorrupt`` (the data is not what we wrote). A feature the store cannot honour raises
  ``CapabilityMissing`` — never a silent skip.
* **Concurrency.** Methods are safe to call concurrently from many tasks of one event loop;
  stores that persist to disk are safe across processes that open the same location.
* **Identity.** ``remember`` honours a caller-supplied ``id``; a retry of the same id with the
  same content returns the original ``stored_at`` and writes nothing new. Ids are opaque.
* **Pending.** Stores never see staged (approval-pending) writes: staging lives in
  :class:`memorywire.governance.GovernedStore`, which wraps any store.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from memorywire.core.records import ListQuery, UpdateRequest
from memorywire.wire.models import (
    ExpireRequest,
    ExpireResponse,
    ForgetRequest,
    ForgetResponse,
    MemoryRecord,
    MergeRequest,
    MergeResponse,
    RecallRequest,
    RecallResponse,
    RememberRequest,
    RememberResponse,
)

__all__ = ["STORAGE_CAPABILITIES", "Capability", "Health", "ListQuery", "MemoryStore",
           "UpdateRequest", "list_all"]


class Capability(StrEnum):
    """What a store declares it can do (an open set; these are the v0 names)."""

    SEMANTIC = "semantic"
    EPISODIC = "episodic"
    PROCEDURAL = "procedural"
    EMOTIONAL = "emotional"
    FTS = "fts"
    VECTOR = "vector"
    GRAPH = "graph"
    GOVERNANCE = "governance"
    RECALL_TRACKING = "recall_tracking"
    #: Hard delete removes the content from the backend's storage, not only from read paths.
    #: A store that cannot promise this raises ``CapabilityMissing`` on ``hard_delete=True``.
    ERASE = "erase"
    #: Validity intervals, ``supersedes``, ``as_of`` and ``include_superseded`` are honoured
    #: (see ``core.timeline``); a router applies them itself around a child without it.
    TIME = "time"
    #: ``derived_from`` edges given on write are kept and listed back, so ``forget(cascade)``
    #: can follow them (see ``store.cascade``); a router declares it only if every child does.
    DERIVATION = "derivation"
    #: ``purge_expired`` physically removes expired memories in batches, for the expiry
    #: sweep (``governance.purge``); a store without it is refused by the sweep.
    PURGE = "purge"


#: What a store declares when it keeps its own rows, vectors, full-text index and edges (the
#: in-memory, SQLite and PostgreSQL stores): every v0 capability but governance, which only a
#: ``GovernedStore`` adds. Listed, not derived from the enum, so a new name is declared by
#: each store that implements it rather than by all three at once.
STORAGE_CAPABILITIES = frozenset({
    Capability.SEMANTIC, Capability.EPISODIC, Capability.PROCEDURAL, Capability.EMOTIONAL,
    Capability.FTS, Capability.VECTOR, Capability.GRAPH, Capability.RECALL_TRACKING,
    Capability.ERASE, Capability.TIME, Capability.DERIVATION, Capability.PURGE,
})


@dataclass(frozen=True)
class Health:
    """``status`` is ``ok``, ``degraded`` or ``down``; ``details`` is free-form and JSON-safe."""

    status: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "details": self.details}


@runtime_checkable
class MemoryStore(Protocol):
    """An async memory backend speaking wire format v0."""

    @property
    def name(self) -> str:
        """Short stable name reported in ``stores`` / ``source_store`` fields."""
        ...

    @property
    def capabilities(self) -> frozenset[Capability]: ...

    async def remember(self, req: RememberRequest) -> RememberResponse: ...

    async def recall(self, req: RecallRequest) -> RecallResponse: ...

    async def forget(self, req: ForgetRequest) -> ForgetResponse: ...

    async def merge(self, req: MergeRequest) -> MergeResponse: ...

    async def expire(self, req: ExpireRequest) -> ExpireResponse: ...

    async def get(self, agent_id: str, id: str, user_id: str | None = None) -> MemoryRecord | None:
        """A live (not deleted, not archived) memory in scope, or ``None``."""
        ...

    async def list(self, query: ListQuery) -> list[MemoryRecord]: ...

    async def update(self, req: UpdateRequest) -> MemoryRecord:
        """Raises ``NotFound`` when the memory is not live in scope."""
        ...

    async def health(self) -> Health: ...

    async def aclose(self) -> None: ...


async def list_all(store: MemoryStore, query: ListQuery) -> list[MemoryRecord]:
    """Every memory ``query`` matches, oldest first, fetched ``query.limit`` at a time:
    ``list`` answers one page, and callers that act on a whole scope need all of it."""
    out: list[MemoryRecord] = []
    after = query.after_id
    while True:
        page = await store.list(replace(query, after_id=after))
        out.extend(page)
        if len(page) < query.limit:
            return out
        after = page[-1].id
