"""Truth over time for any store, in terms of its own operations: one implementation, every
backend.

:mod:`memorywire.core.timeline` holds the rules; this module applies them around a store's
own ``remember_many`` and ``recall`` (which know nothing of time): it folds the validity into
the record, closes the memories a write supersedes through the store's ``update``, looks for
contradiction candidates and, in the same search, for the memory a write repeats
(:mod:`memorywire.store.duplicates`: such a write is answered with it and not written),
through the store's own indexes (:class:`ConflictIndex`). Recall's side (what is true now or
at ``as_of``, and the ranking rules) is :mod:`memorywire.recall.plan`. Because both only
call the protocol, every backend behaves identically.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple, Protocol, cast, runtime_checkable

from memorywire.core.content import Edge, content_to_storage, edges_of, edges_to_storage
from memorywire.core.contradiction import find_conflicts
from memorywire.core.records import ListQuery, UpdateRequest
from memorywire.core.timeline import (
    closing_patch,
    time_metadata,
    validity_of,
)
from memorywire.embed.base import Vectors
from memorywire.errors import InvalidRequest, NotFound
from memorywire.store._gc import batch_collections
from memorywire.store.base import MemoryStore
from memorywire.store.duplicates import (
    Look,
    Verdict,
    answer,
    look_of,
    settle,
    settle_now,
    twins,
    verdict,
)
from memorywire.wire.memory_ops import UpdateMemoryRequest
from memorywire.wire.models import (
    ConflictCandidate,
    Link,
    MemoryRecord,
    MemoryType,
    RememberRequest,
    RememberResponse,
)

__all__ = ["CONFLICT_LEXICAL", "CONFLICT_NEIGHBOURS", "CONFLICT_SCAN_LIMIT", "ConflictIndex",
           "ConflictIndexNow", "Found", "Probe", "ScanningWrite", "apply_update",
           "conflicts_for", "no_conflict_scan", "remember_in_time", "repeated_memory",
           "supersede", "update_in_time"]

#: How many memories a write is compared with in a store that has no index of its own (the
#: scope's newest, through ``list``): the in-memory reference store and adapters.
CONFLICT_SCAN_LIMIT = 1000
#: How many of the scope's nearest memories by vector a :class:`ConflictIndex` store gives a
#: write (the detector's meaning rule names the closest; its word rules and the duplicate
#: rules read them too: a repeat is its own nearest neighbour).
CONFLICT_NEIGHBOURS = 16
#: How many of the scope's best full-text matches on the write's subject words it adds.
CONFLICT_LEXICAL = 16
_FACT_TYPES = (MemoryType.SEMANTIC, MemoryType.EPISODIC, MemoryType.EMOTIONAL)

Write = Callable[[Sequence[RememberRequest]], Awaitable[list[RememberResponse]]]


class Probe(NamedTuple):
    """One write's question to a :class:`ConflictIndex`: what in the scope ``(agent_id,
    user_id, type)`` might ``text`` (the content as stored; its vector is ``vector``, from
    the store's embedder) contradict or repeat?"""

    agent_id: str
    user_id: str | None
    type: MemoryType
    text: str
    vector: Any


#: A probe's candidates: ``(id, stored text, cosine to the probe's vector)`` of current
#: memories of the scope (not superseded, forgotten or expired), in no particular order.
Found = list[tuple[str, str, float]]

#: A store's batch write that first runs the given (blocking) search in the same
#: worker-thread call, so the search costs no thread hop of its own. The store passes the
#: search the batch's vectors (one row per request, computed before the write and reused by
#: it); the search returns the positions of the requests to write (the others repeat a
#: stored memory), and the store writes only those, in order, answering one response each.
ScanningWrite = Callable[[Sequence[RememberRequest], Callable[[Vectors], list[int]]],
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
class ConflictIndex(Protocol):
    """A store that finds a write's candidates (what it may contradict or repeat) through the
    indexes it already keeps for recall (the scope's nearest vectors, the full-text index on
    the write's subject words), so a write costs about the same in a scope of a hundred
    memories or of a hundred thousand. Reading the scope's newest rows instead cost a scan
    per write that grew with the bound (issue 35) and missed every fact stated before it.

    ``embed_requests`` gives the vectors a remember of ``reqs`` stores (computed before the
    write; the store passes them on to it, or its embedder's cache spares the second model
    call); ``conflict_candidates`` answers one :class:`Probe` per write, with cosines, so the
    detector's meaning rule and near-duplicates by meaning run at no extra model call."""

    async def conflict_candidates(self, probes: Sequence[Probe]) -> list[Found]: ...

    async def embed_requests(self, reqs: Sequence[RememberRequest]) -> Vectors: ...


@runtime_checkable
class ConflictIndexNow(ConflictIndex, Protocol):
    """A :class:`ConflictIndex` whose search can also run blocking, in a write's own
    worker-thread call (SQLite; see ``remember_in_time``'s ``scanning``), with ``get_now``
    its ``get``, blocking, for the same call."""

    def conflict_candidates_now(self, probes: Sequence[Probe]) -> list[Found]: ...

    def get_now(self, agent_id: str, id: str,
                user_id: str | None = None) -> MemoryRecord | None: ...


async def _current(store: MemoryStore, scope: Scope) -> list[tuple[str, str]]:
    """``(id, stored text)`` of the scope's newest current memories of one type, through
    ``list``: the candidates in a store without a :class:`ConflictIndex`."""
    agent_id, user_id, mtype = scope
    try:

        rows = await store.list(ListQuery(agent_id=agent_id, user_id=user_id, types=[mtype],
                                          limit=CONFLICT_SCAN_LIMIT))
    except NotFound:  # a store file not created yet (CLI one-shot reads): nothing to contradict
        return []
    # Only what is current can be contradicted (or repeated): a superseded value is history.
    return [(r.id, r.content if isinstance(r.content, str)
             else content_to_storage(r.type, r.content)) for r in rows
            if r.user_id == user_id
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


def _verdict(req: RememberRequest, look: Look, rows: Sequence[tuple[str, str]],
             closeness: Mapping[str, float] | None = None) -> Verdict:
    """What one write's read found: contradiction candidates (when it looks for them) and
    the memories it repeats or nearly repeats."""
    conflicts = _candidates(req, rows, closeness) if look.conflicts else []
    return verdict(req, look, rows, closeness, conflicts)


async def _read(store: MemoryStore, req: RememberRequest, look: Look,
                seen: dict[Scope, list[tuple[str, str]]]) -> Verdict:
    """The verdict on one write in a store without a :class:`ConflictIndex`; ``seen`` shares
    one read per scope across a batch (a batch is compared with what was stored before it,
    not with itself)."""
    scope = look.scope
    if scope is None:
        return Verdict()
    if scope not in seen:
        seen[scope] = await _current(store, scope)
    return _verdict(req, look, seen[scope])


def _probes(looks: Sequence[Look], vectors: Vectors) -> tuple[list[int], list[Probe]]:
    """The writes that read their scope (their positions in the batch) and their probes."""
    at = [n for n, look in enumerate(looks) if look.scope is not None]
    return at, [Probe(*cast("Scope", looks[n].scope), looks[n].stored, vectors[n]) for n in at]


def _verdicts(reqs: Sequence[RememberRequest], looks: Sequence[Look], at: Sequence[int],
              found: Sequence[Found]) -> list[Verdict]:
    """Each write's verdict from its probe's candidates (each once, with its cosine)."""
    out = [Verdict() for _ in reqs]
    for n, rows in zip(at, found, strict=True):
        if rows:
            # each id once (the last of its rows wins, in first-seen order)
            texts = {i: text for i, text, _ in rows}
            out[n] = _verdict(reqs[n], looks[n], list(texts.items()),
                              {i: cos for i, _, cos in rows})
    return out


async def _indexed(store: ConflictIndex, reqs: Sequence[RememberRequest],
                   looks: Sequence[Look], vectors: Vectors | None = None) -> list[Verdict]:
    """Verdicts for a batch from a :class:`ConflictIndex`, which embeds the batch unless
    given its vectors."""
    if vectors is None:
        vectors = await store.embed_requests(reqs)
    at, probes = _probes(looks, vectors)
    return _verdicts(reqs, looks, at, await store.conflict_candidates(probes) if probes else [])


async def conflicts_for(store: MemoryStore, req: RememberRequest) -> list[ConflictCandidate]:
    """What a remember of ``req`` would report as ``conflicts``, without writing it (for a
    policy that decides before the write). A :class:`ConflictIndex` store embeds ``req``
    first (its embedder's cache then serves the write's own embedding) and searches its
    indexes; any other store is read through ``list``."""
    scope = _scope(req)
    if scope is None:
        return []
    if isinstance(store, ConflictIndex):
        look = look_of(req, _plain(req), True)
        return (await _indexed(store, [req], [look]))[0].conflicts
    return _candidates(req, await _current(store, scope))


async def repeated_memory(store: MemoryStore, req: RememberRequest) -> RememberResponse | None:
    """The answer a remember of ``req`` would get from the stored memory it repeats (the
    duplicate rule of :mod:`memorywire.store.duplicates`, through the same reads), or
    ``None``; nothing is written. For a caller that must know before it writes, because it
    names the id first: governance, whose audit ``intent`` names the id it is about to write
    and so must not name one the store would then not write. ``req`` is judged as a write
    without a named id (its ``id`` is ignored); ``allow_duplicate`` answers ``None``."""
    if req.allow_duplicate:
        return None
    unnamed = req.model_copy(update={"id": None}) if req.id is not None else req
    look = look_of(unnamed, _plain(unnamed), False)
    if isinstance(store, ConflictIndex):
        found = (await _indexed(store, [unnamed], [look]))[0]
    else:
        found = await _read(store, unnamed, look, {})
    await settle([unnamed], [look], [found], store.get, store.name)
    return found.duplicate


@batch_collections
async def remember_in_time(store: MemoryStore, reqs: Sequence[RememberRequest],
                           write: Write, *, scanning: ScanningWrite | None = None,
                           embed: Embed | None = None) -> list[RememberResponse]:
    """``write`` (the store's own batch remember) with validity, supersession, conflicts and
    duplicates.

    Every id in ``supersedes`` must name a live memory of the same agent and user, checked
    before anything is written (``NotFound`` otherwise). A write that repeats a stored
    memory (:mod:`memorywire.store.duplicates`) is answered with it, ``deduplicated``, and
    not written; ``write`` gets the others only. A :class:`ConflictIndexNow` store may pass
    ``scanning``, its write running the search first in the same worker-thread call: one
    thread hop per remember instead of two (each hop wakes a thread and, on a busy machine,
    costs the event loop its core). A :class:`ConflictIndex` store may pass ``embed``, which
    computes the batch's vectors before the write (and keeps them for ``write``; called
    again with only the requests written when some repeat a stored memory). A store with
    neither is read through ``list`` (its newest :data:`CONFLICT_SCAN_LIMIT` memories of
    each scope).
    """
    olds: dict[tuple[str, str], MemoryRecord] = {}
    for req in reqs:
        for old_id in req.supersedes or []:
            rec = await store.get(req.agent_id, old_id, req.user_id)
            if rec is None:
                raise NotFound(f"supersedes: memory {old_id!r} not found")
            olds[(req.agent_id, old_id)] = rec
    plain = [_plain(req) for req in reqs]
    # here: no_conflict_scan's flag is this context's
    looks = [look_of(req, p, _scope(req) is not None)
             for req, p in zip(reqs, plain, strict=True)]
    reads = any(look.scope is not None for look in looks)
    copies: dict[int, int] = {}
    verdicts: list[Verdict] = []

    def kept() -> list[int]:
        copies.update(twins(reqs, looks, verdicts))
        return [n for n, v in enumerate(verdicts) if v.duplicate is None and n not in copies]

    if scanning is not None and isinstance(store, ConflictIndexNow) and reads:
        scanner = store

        def run_scan(vectors: Vectors) -> list[int]:
            at, probes = _probes(looks, vectors)
            verdicts.extend(_verdicts(reqs, looks, at, scanner.conflict_candidates_now(probes)))
            settle_now(reqs, looks, verdicts, scanner.get_now, scanner_name)
            return kept()

        scanner_name = store.name
        written = await scanning(plain, run_scan)
    else:
        if isinstance(store, ConflictIndex) and reads:
            verdicts.extend(await _indexed(store, reqs, looks,
                                           await embed(reqs) if embed is not None else None))
        else:
            seen: dict[Scope, list[tuple[str, str]]] = {}
            verdicts.extend([await _read(store, req, look, seen)
                             for req, look in zip(reqs, looks, strict=True)])
        await settle(reqs, looks, verdicts, store.get, store.name)
        keep = kept()
        if embed is not None and reads and 0 < len(keep) < len(reqs):
            await embed([reqs[n] for n in keep])  # the vectors the store's write takes
        written = await write([plain[n] for n in keep]) if keep else []
    return await _answers(store, reqs, verdicts, copies, written, olds)


async def _answers(store: MemoryStore, reqs: Sequence[RememberRequest],
                   verdicts: Sequence[Verdict], copies: Mapping[int, int],
                   written: Sequence[RememberResponse],
                   olds: Mapping[tuple[str, str], MemoryRecord]) -> list[RememberResponse]:
    """One answer per request: a repeat's stored memory, else the write's own answer (the
    memories it supersedes closed first), a batch's later copy answered like its first."""
    responses = iter(written)
    out: list[RememberResponse | None] = []
    for n, (req, v) in enumerate(zip(reqs, verdicts, strict=True)):
        if v.duplicate is not None or n in copies:
            out.append(v.duplicate)
            continue
        resp = next(responses)
        start = req.valid_from if req.valid_from is not None else resp.stored_at
        for old_id in req.supersedes or []:
            await _close(store, olds[(req.agent_id, old_id)], resp.id, start, req.user_id,
                         resp.stored_at)
        out.append(answer(resp, v))
    for n, first in copies.items():
        twin = out[first]
        assert twin is not None
        out[n] = RememberResponse(id=twin.id, stored_at=twin.stored_at, stores=twin.stores,
                                  pending_approval=False, deduplicated=True)
    done = [r for r in out if r is not None]
    assert len(done) == len(reqs), "a write left without an answer"
    return done


async def _close(store: MemoryStore, old: MemoryRecord, new_id: str, start: int,
                 user_id: str | None, known_from: int) -> None:
    """Close ``old`` at ``start``; the close is known from ``known_from`` (when the memory
    replacing it was recorded), which ``known_at`` reads."""
    await store.update(UpdateRequest(
        agent_id=old.agent_id, id=old.id, user_id=user_id,
        metadata_patch=closing_patch(old.metadata, old.created_at, new_id, start,
                                     known_from=known_from),
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
        await _close(store, old, new_id, start, user_id, new.created_at)


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
