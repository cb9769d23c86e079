"""Truth over time for any store, in terms of its own operations: one implementation, every
backend.

:mod:`memorywire.core.timeline` holds the rules; this module applies them around a store's
own ``remember_many`` and ``recall`` (which know nothing of time): it folds the validity into
the record, closes the memories a write supersedes through the store's ``update``, looks for
contradiction candidates among the scope's memories. Recall's side (what is true now or at
``as_of``, and the ranking rules) is :mod:`memorywire.recall.plan`. Because both
only call the protocol, every backend behaves identically.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, cast, runtime_checkable

from memorywire.core.content import Edge, edges_of, edges_to_storage
from memorywire.core.contradiction import find_conflicts
from memorywire.core.records import ListQuery, UpdateRequest
from memorywire.core.timeline import (
    closing_patch,
    time_metadata,
    validity_of,
)
from memorywire.embed.base import Vectors
from memorywire.errors import InvalidRequest, NotFound
from memorywire.store.base import MemoryStore
from memorywire.wire.memory_ops import UpdateMemoryRequest
from memorywire.wire.models import (
    ConflictCandidate,
    Link,
    MemoryRecord,
    MemoryType,
    RememberRequest,
    RememberResponse,
)

__all__ = ["CONFLICT_SCAN_LIMIT", "Scan", "ScanningWrite", "TextScan", "VectorScan",
           "VectorScanNow", "apply_update", "conflicts_for", "no_conflict_scan",
           "remember_in_time", "supersede", "update_in_time"]

#: How many of the scope's memories (of the same type) the detector compares a write with.
CONFLICT_SCAN_LIMIT = 1000
_FACT_TYPES = (MemoryType.SEMANTIC, MemoryType.EPISODIC, MemoryType.EMOTIONAL)

Write = Callable[[Sequence[RememberRequest]], Awaitable[list[RememberResponse]]]
#: A store's own cheap read of the detector's candidates: ``(agent_id, user_id, type, limit)``
#: to ``(id, text)`` of the scope's current memories, newest first. Without one, a write reads
#: the scope through ``list`` (whole records: several times the cost on a large scope).
Scan = Callable[[str, str | None, "MemoryType", int], Awaitable[list[tuple[str, str]]]]
#: A store's batch write that first runs the given (blocking) conflict scan in the same
#: worker-thread call, so the scan costs no thread hop of its own. The store passes the scan
#: the batch's vectors (one row per request, computed before the write and reused by it), or
#: ``None``; with vectors the detector's meaning rule runs too.
ScanningWrite = Callable[[Sequence[RememberRequest], Callable[[Vectors | None], None]],
                         Awaitable[list[RememberResponse]]]
#: A store's embedding of a batch before its write (see ``remember_in_time``'s ``embed``).
Embed = Callable[[Sequence[RememberRequest]], Awaitable[Vectors]]


def _plain(req: RememberRequest) -> RememberRequest:
    """The request as a store without time sees it: validity folded into metadata."""
    if req.valid_from is None and req.valid_to is None and req.supersedes is None:
        return req
    links = list(req.links or [])
    known = {(x.id, x.type) for x in links}
    # the replaced memories also become typed ``supersedes`` edges of the graph
    links += [Link(id=old, type="supersedes") for old in req.supersedes or []
              if (old, "supersedes") not in known]
    return req.model_copy(update={"metadata": time_metadata(req), "valid_from": None,
                                  "valid_to": None, "supersedes": None,
                                  "links": links or None})


Scope = tuple[str, str | None, MemoryType]

#: Set while a caller has already looked, or asked not to look (a governance policy).
_NO_SCAN: ContextVar[bool] = ContextVar("memorywire_no_conflict_scan", default=False)


@contextmanager
def no_conflict_scan() -> Iterator[None]:
    """Remembers in this block (in this task and the tasks it starts) skip the conflict scan
    and report no ``conflicts``."""
    token = _NO_SCAN.set(True)
    try:
        yield
    finally:
        _NO_SCAN.reset(token)


@runtime_checkable
class TextScan(Protocol):
    """A store whose :data:`Scan` can also run blocking, inside its own worker thread (SQLite):
    ``current_texts`` is the async :data:`Scan`, ``current_texts_now`` the same read for a
    write's worker-thread call (see ``remember_in_time``'s ``scanning``)."""

    def current_texts_now(self, agent_id: str, user_id: str | None, mtype: MemoryType,
                          limit: int) -> list[tuple[str, str]]: ...

    async def current_texts(self, agent_id: str, user_id: str | None, mtype: MemoryType,
                            limit: int) -> list[tuple[str, str]]: ...


@runtime_checkable
class VectorScan(Protocol):
    """A store that can give each conflict candidate's cosine to a new memory's vector
    (computed where the vectors are stored), so the detector's meaning rule runs at no extra
    model call: ``embed_requests`` gives the vectors a remember of ``reqs`` stores (computed
    before the write; the embedder's cache, or the store passing them on, spares the write a
    second model call) and ``current_vectors`` the scan with cosines."""

    async def current_vectors(self, agent_id: str, user_id: str | None, mtype: MemoryType,
                              limit: int, vector: Any) -> list[tuple[str, str, float]]: ...

    async def embed_requests(self, reqs: Sequence[RememberRequest]) -> Vectors: ...


@runtime_checkable
class VectorScanNow(VectorScan, Protocol):
    """A :class:`VectorScan` whose scan can also run blocking, in a write's own worker-thread
    call (SQLite; see ``remember_in_time``'s ``scanning``)."""

    def current_vectors_now(self, agent_id: str, user_id: str | None, mtype: MemoryType,
                            limit: int, vector: Any) -> list[tuple[str, str, float]]: ...


def _split(rows: Sequence[tuple[str, str, float]]) -> tuple[list[tuple[str, str]],
                                                           dict[str, float]]:
    return [(r[0], r[1]) for r in rows], {r[0]: r[2] for r in rows}


async def _current(store: MemoryStore, scope: Scope) -> list[tuple[str, str]]:
    """``(id, text)`` of the scope's current memories of one type: the detector's candidates,
    through the store's own scan when it has one (a :class:`TextScan`), else ``list``."""
    agent_id, user_id, mtype = scope
    if isinstance(store, TextScan):
        return await store.current_texts(agent_id, user_id, mtype, CONFLICT_SCAN_LIMIT)
    try:
        rows = await store.list(ListQuery(agent_id=agent_id, user_id=user_id, types=[mtype],
                                          limit=CONFLICT_SCAN_LIMIT))
    except NotFound:  # a store file not created yet (CLI one-shot reads): nothing to contradict
        return []
    # Only what is current can be contradicted: an already superseded value is history.
    return [(r.id, r.content) for r in rows
            if isinstance(r.content, str) and r.user_id == user_id
            and validity_of(r.metadata, r.created_at).superseded_by is None]


def _scope(req: RememberRequest) -> Scope | None:
    """The scope a write is compared with; ``None`` for what the detector does not read (or
    inside :func:`no_conflict_scan`)."""
    if req.type not in _FACT_TYPES or not isinstance(req.content, str) or _NO_SCAN.get():
        return None
    return (req.agent_id, req.user_id, req.type)


def _candidates(req: RememberRequest, stored: Sequence[tuple[str, str]],
                closeness: Mapping[str, float] | None = None) -> list[ConflictCandidate]:
    assert isinstance(req.content, str)
    skip = {req.id, *(req.supersedes or [])}
    pairs = [(i, text) for i, text in stored if i not in skip]
    return [ConflictCandidate(id=c.id, similarity=c.similarity, why=c.why)
            for c in find_conflicts(req.content, pairs, closeness=closeness)]


async def _conflicts(store: MemoryStore, req: RememberRequest,
                     seen: dict[Scope, list[tuple[str, str]]],
                     scan: Scan | None) -> list[ConflictCandidate]:
    """Candidates for one write; ``seen`` shares one scan per scope across a batch (a batch
    is compared with what was stored before it, not with itself)."""
    scope = _scope(req)
    if scope is None:
        return []
    if scope not in seen:
        seen[scope] = (await scan(*scope, CONFLICT_SCAN_LIMIT) if scan is not None
                       else await _current(store, scope))
    return _candidates(req, seen[scope])


def _conflicts_now(store: TextScan, reqs: Sequence[RememberRequest],
                   scopes: Sequence[Scope | None],
                   vectors: Vectors | None = None) -> list[list[ConflictCandidate]]:
    """:func:`_conflicts` for a whole batch, blocking, for a store's own worker thread
    (``scopes`` are decided beforehand, in the caller's context). With the batch's
    ``vectors`` and a :class:`VectorScanNow` store each write reads its scope with its cosines
    (one scan per write, for the meaning rule); otherwise one scan per scope.

    A scope holding nothing current has nothing to contradict: for a scope with several
    writes in the batch one row read says so, and its writes skip their scans (the first
    batch of a new scope, a conversation written at once, paid a scan per
    write for an empty answer). A single write's own scan answers that as cheaply."""
    by_meaning = vectors is not None and isinstance(store, VectorScanNow)
    seen: dict[Scope, list[tuple[str, str]]] = {}
    empty: dict[Scope, bool] = {}
    writes = Counter(scopes)
    out: list[list[ConflictCandidate]] = []
    for n, (req, scope) in enumerate(zip(reqs, scopes, strict=True)):
        if scope is not None and by_meaning and writes[scope] > 1 and scope not in empty:
            empty[scope] = not store.current_texts_now(*scope, 1)
        if scope is None or empty.get(scope, False):
            out.append([])
        elif by_meaning and vectors is not None:
            rows = cast("VectorScanNow", store).current_vectors_now(*scope, CONFLICT_SCAN_LIMIT,
                                                                 vectors[n])
            out.append(_candidates(req, *_split(rows)))
        else:
            if scope not in seen:
                seen[scope] = store.current_texts_now(*scope, CONFLICT_SCAN_LIMIT)
            out.append(_candidates(req, seen[scope]))
    return out


async def conflicts_for(store: MemoryStore, req: RememberRequest) -> list[ConflictCandidate]:
    """What a remember of ``req`` would report as ``conflicts``, without writing it (for a
    policy that decides before the write; a store's own scan when it is a :class:`TextScan`,
    else ``list``, so any store works). A :class:`VectorScan` store embeds ``req`` first (its
    embedder's cache then serves the write's own embedding) so the meaning rule runs too."""
    scope = _scope(req)
    if scope is None or not isinstance(store, VectorScan):
        return await _conflicts(store, req, {}, None)
    vector = (await store.embed_requests([req]))[0]
    return _candidates(req, *_split(await store.current_vectors(*scope, CONFLICT_SCAN_LIMIT,
                                                                vector)))


async def remember_in_time(store: MemoryStore, reqs: Sequence[RememberRequest],
                           write: Write, scan: Scan | None = None, *,
                           scanning: ScanningWrite | None = None,
                           embed: Embed | None = None) -> list[RememberResponse]:
    """``write`` (the store's own batch remember) with validity, supersession and conflicts;
    ``scan``, when the store has one, reads the detector's candidates (see :data:`Scan`).

    Every id in ``supersedes`` must name a live memory of the same agent and user, checked
    before anything is written (``NotFound`` otherwise). A :class:`TextScan` store may pass
    ``scanning``, its write running the conflict scan first in the same worker-thread call:
    one thread hop per remember instead of two (each hop wakes a thread and, on a busy
    machine, costs the event loop its core). A :class:`VectorScan` store may pass ``embed``,
    which computes the batch's vectors before the write (and keeps them for ``write``): the
    scan then reads cosines and the detector's meaning rule runs.
    """
    olds = {}
    for req in reqs:
        for old_id in req.supersedes or []:
            rec = await store.get(req.agent_id, old_id, req.user_id)
            if rec is None:
                raise NotFound(f"supersedes: memory {old_id!r} not found")
            olds[(req.agent_id, old_id)] = rec
    plain = [_plain(req) for req in reqs]
    scopes = [_scope(req) for req in reqs]  # here: no_conflict_scan's flag is this context's
    if scanning is not None and isinstance(store, TextScan) and any(scopes):
        conflicts: list[list[ConflictCandidate]] = []
        scanner = store

        def run_scan(vectors: Vectors | None) -> None:
            conflicts.extend(_conflicts_now(scanner, reqs, scopes, vectors))

        responses = await scanning(plain, run_scan)
    elif embed is not None and isinstance(store, VectorScan) and any(scopes):
        vectors = await embed(reqs)
        conflicts = [[] if scope is None else _candidates(req, *_split(
            await store.current_vectors(*scope, CONFLICT_SCAN_LIMIT, vectors[n])))
            for n, (req, scope) in enumerate(zip(reqs, scopes, strict=True))]
        responses = await write(plain)
    else:
        seen: dict[Scope, list[tuple[str, str]]] = {}
        conflicts = [await _conflicts(store, req, seen, scan) for req in reqs]
        responses = await write(plain)
    out = []
    for req, resp, found in zip(reqs, responses, conflicts, strict=True):
        start = req.valid_from if req.valid_from is not None else resp.stored_at
        for old_id in req.supersedes or []:
            await _close(store, olds[(req.agent_id, old_id)], resp.id, start, req.user_id)
        out.append(resp.model_copy(update={"conflicts": found}) if found else resp)
    return out


async def _close(store: MemoryStore, old: MemoryRecord, new_id: str, start: int,
                 user_id: str | None) -> None:
    await store.update(UpdateRequest(
        agent_id=old.agent_id, id=old.id, user_id=user_id,
        metadata_patch=closing_patch(old.metadata, old.created_at, new_id, start),
        reason=f"superseded by {new_id}"))


async def supersede(store: MemoryStore, agent_id: str, new_id: str, old_ids: Sequence[str],
                    user_id: str | None = None) -> None:
    """Mark live memories ``old_ids`` as superseded by the stored memory ``new_id``: the
    same rule a remember with ``supersedes`` applies, for a conflict accepted afterwards (a
    reviewer's click, an auto-supersede policy). Goes through ``store.update``, so a governed
    store audits it."""
    new = await store.get(agent_id, new_id, user_id)
    if new is None:
        raise NotFound(f"memory {new_id!r} not found")
    start = validity_of(new.metadata, new.created_at).valid_from
    for old_id in old_ids:
        old = await store.get(agent_id, old_id, user_id)
        if old is None:
            raise NotFound(f"supersedes: memory {old_id!r} not found")
        await _close(store, old, new_id, start, user_id)


async def update_in_time(store: MemoryStore, req: UpdateRequest | None, agent_id: str, id: str,
                         supersedes: Sequence[str], user_id: str | None = None,
                         ) -> MemoryRecord:
    """An update (``req``; ``None`` when only ``supersedes`` was sent) that also makes memory
    ``id`` supersede ``supersedes``, with remember's rule: every id must name a live memory
    of the same agent and user, checked before anything changes (``NotFound``); then the
    update, a typed ``supersedes`` edge from ``id`` to each, and each closed at ``id``'s
    ``valid_from``. Goes through ``store.update``, so a governed store audits every step."""
    if id in supersedes:
        raise InvalidRequest("supersedes must not name the memory itself")
    if await store.get(agent_id, id, user_id) is None:
        raise NotFound(f"memory {id!r} not found")
    for old_id in supersedes:
        if await store.get(agent_id, old_id, user_id) is None:
            raise NotFound(f"supersedes: memory {old_id!r} not found")
    rec = await store.update(req) if req is not None else None
    if supersedes:
        current = rec or await store.get(agent_id, id, user_id)
        edges = edges_of(current.metadata if current else None)
        wanted = [*edges, *(Edge(old, "supersedes") for old in supersedes)]
        if len(dict.fromkeys(wanted)) > len(dict.fromkeys(edges)):
            await store.update(UpdateRequest(
                agent_id=agent_id, id=id, user_id=user_id,
                metadata_patch={"links": edges_to_storage(wanted)},
                reason=f"supersedes {', '.join(supersedes)}"))
        await supersede(store, agent_id, id, supersedes, user_id)
    final = await store.get(agent_id, id, user_id)
    if final is None:
        raise NotFound(f"memory {id!r} not found")
    return final


async def apply_update(store: MemoryStore, w: UpdateMemoryRequest) -> MemoryRecord:
    """The wire's ``update`` on a store (directly, or when a staged one is approved): a plain
    ``store.update``, or with ``supersedes`` the rule of :func:`update_in_time`."""
    plain = None if w.content is None and w.metadata is None and w.confidence is None else \
        UpdateRequest(agent_id=w.agent_id, id=w.id, user_id=w.user_id, content=w.content,
                      metadata_patch=w.metadata, confidence=w.confidence, reason=w.reason)
    if not w.supersedes:
        assert plain is not None  # the model refuses an update that changes nothing
        return await store.update(plain)
    return await update_in_time(store, plain, w.agent_id, w.id, w.supersedes, w.user_id)
