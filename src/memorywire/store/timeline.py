"""Truth over time for any store, in terms of its own operations: one implementation, every
backend.

:mod:`memorywire.core.timeline` holds the rules; this module applies them around a store's
own ``remember_many`` and ``recall`` (which know nothing of time): it folds the validity into
the record, closes the memories a write supersedes through the store's ``update``, looks for
contradiction candidates among the scope's memories, and filters recall to what is true now
(or at ``as_of``). Because it only calls the protocol, every backend behaves identically.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, runtime_checkable

from memorywire.core.contradiction import find_conflicts
from memorywire.core.records import ListQuery, UpdateRequest
from memorywire.core.timeline import (
    annotate,
    closing_patch,
    is_visible,
    rank_current_first,
    time_metadata,
    validity_of,
)
from memorywire.errors import NotFound
from memorywire.store.base import MemoryStore
from memorywire.wire.models import (
    ConflictCandidate,
    Link,
    MemoryRecord,
    MemoryType,
    RecallRequest,
    RecallResponse,
    RememberRequest,
    RememberResponse,
)

__all__ = [
    "CONFLICT_SCAN_LIMIT", "TextScan", "recall_in_time", "remember_in_time", "supersede",
]

#: How many of the scope's memories (of the same type) the detector compares a write with.
CONFLICT_SCAN_LIMIT = 1000
_FACT_TYPES = (MemoryType.SEMANTIC, MemoryType.EPISODIC, MemoryType.EMOTIONAL)

Write = Callable[[Sequence[RememberRequest]], Awaitable[list[RememberResponse]]]
Search = Callable[[RecallRequest], Awaitable[RecallResponse]]


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


@runtime_checkable
class TextScan(Protocol):
    """A store that reads the detector's candidates itself, cheaper than :func:`_current`'s
    records and with the same answer (SQLite). Blocking: call it from a worker thread."""

    def current_texts_now(self, agent_id: str, user_id: str | None, mtype: MemoryType,
                          limit: int) -> list[tuple[str, str]]: ...

    async def current_texts(self, agent_id: str, user_id: str | None, mtype: MemoryType,
                            limit: int) -> list[tuple[str, str]]: ...


#: A store's batch write that first runs the given scan in the same worker-thread call.
ScanningWrite = Callable[[Sequence[RememberRequest], Callable[[], None]],
                         Awaitable[list[RememberResponse]]]


async def _current(store: MemoryStore, scope: Scope) -> list[tuple[str, str]]:
    """``(id, text)`` of the scope's current memories of one type: the detector's candidates."""
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
    """The scope a write is compared with; ``None`` for what the detector does not read."""
    if req.type not in _FACT_TYPES or not isinstance(req.content, str):
        return None
    return (req.agent_id, req.user_id, req.type)


def _candidates(req: RememberRequest, stored: list[tuple[str, str]]) -> list[ConflictCandidate]:
    assert isinstance(req.content, str)
    skip = {req.id, *(req.supersedes or [])}
    pairs = [(i, text) for i, text in stored if i not in skip]
    return [ConflictCandidate(id=c.id, similarity=c.similarity, why=c.why)
            for c in find_conflicts(req.content, pairs)]


async def _conflicts(store: MemoryStore, req: RememberRequest,
                     seen: dict[Scope, list[tuple[str, str]]]) -> list[ConflictCandidate]:
    """Candidates for one write; ``seen`` shares one scan per scope across a batch (a batch
    is compared with what was stored before it, not with itself)."""
    scope = _scope(req)
    if scope is None:
        return []
    if scope not in seen:
        seen[scope] = await _current(store, scope)
    return _candidates(req, seen[scope])


def _conflicts_now(store: TextScan, reqs: Sequence[RememberRequest]
                   ) -> list[list[ConflictCandidate]]:
    """:func:`_conflicts` for a whole batch, blocking, for a store's own worker thread."""
    seen: dict[Scope, list[tuple[str, str]]] = {}
    out: list[list[ConflictCandidate]] = []
    for req in reqs:
        scope = _scope(req)
        if scope is None:
            out.append([])
            continue
        if scope not in seen:
            seen[scope] = store.current_texts_now(*scope, CONFLICT_SCAN_LIMIT)
        out.append(_candidates(req, seen[scope]))
    return out


async def remember_in_time(store: MemoryStore, reqs: Sequence[RememberRequest],
                           write: Write, *,
                           scanning: ScanningWrite | None = None) -> list[RememberResponse]:
    """``write`` (the store's own batch remember) with validity, supersession and conflicts.

    Every id in ``supersedes`` must name a live memory of the same agent and user, checked
    before anything is written (``NotFound`` otherwise). A :class:`TextScan` store may pass
    ``scanning``, its write running the conflict scan first in the same worker-thread call:
    one thread hop per remember instead of two (each hop wakes a thread and, on a busy
    machine, costs the event loop its core).
    """
    olds = {}
    for req in reqs:
        for old_id in req.supersedes or []:
            rec = await store.get(req.agent_id, old_id, req.user_id)
            if rec is None:
                raise NotFound(f"supersedes: memory {old_id!r} not found")
            olds[(req.agent_id, old_id)] = rec
    plain = [_plain(req) for req in reqs]
    if scanning is not None and isinstance(store, TextScan):
        conflicts: list[list[ConflictCandidate]] = []
        scanner = store

        def scan() -> None:
            conflicts.extend(_conflicts_now(scanner, reqs))

        responses = await scanning(plain, scan)
    else:
        seen: dict[Scope, list[tuple[str, str]]] = {}
        conflicts = [await _conflicts(store, req, seen) for req in reqs]
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


async def recall_in_time(req: RecallRequest, search: Search, now: int) -> RecallResponse:
    """``search`` (the store's own recall) showing only what is true now or at ``as_of``.

    The store is first asked for ``k``; only when that answer lost hits to the filter is it
    asked again for more, so a scope with nothing superseded costs what it did before.
    """
    plain = req.model_copy(update={"as_of": None, "include_superseded": False})
    resp = await search(plain)
    kept = [h for h in resp.results if is_visible(h, req, now)]
    if len(kept) < len(resp.results) and len(resp.results) >= req.k and req.k < 1000:
        resp = await search(plain.model_copy(update={"k": min(1000, req.k * 4 + 10)}))
        kept = [h for h in resp.results if is_visible(h, req, now)]
    hits = [annotate(h) for h in kept]
    if req.include_superseded or req.as_of is not None:
        hits = rank_current_first(hits, req.as_of if req.as_of is not None else now)
    return resp.model_copy(update={"results": hits[:req.k]})
