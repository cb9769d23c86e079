"""Duplicates on write for any store, in terms of its own reads (rules: ``core.duplicates``).

A remember reads its scope's current memories of its type before it writes (the same read
as the contradiction detector's, see :func:`memorywire.store.timeline.remember_in_time`);
this module decides, from what that read returned, which writes are memories already
stored, which are copies of an earlier write of the same batch, and what each stored write
is reported beside. Because it only calls the store's protocol (``get``) or a blocking read
the store lends, every backend answers alike.

Only writes without a caller-named ``id`` and without ``allow_duplicate`` are answered by a
stored memory: a named id is an identity the caller asked for (``MemoryStore``'s contract,
and how a router or governance gives one memory one id everywhere), so such a write is
stored and the identical memory reported as a near-duplicate at similarity 1.0. The read is
the scope's newest ``CONFLICT_SCAN_LIMIT`` current memories of the type; an older copy is
not seen. Two writers of the same content at the same moment may both store it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memorywire.core.content import content_to_storage, fold_request
from memorywire.core.duplicates import content_key, likeness, near_duplicates, same_metadata
from memorywire.wire.models import (
    ConflictCandidate,
    MemoryRecord,
    MemoryType,
    NearDuplicate,
    RememberRequest,
    RememberResponse,
)

__all__ = ["Look", "Verdict", "answer", "look_of", "settle", "settle_now", "twins", "verdict"]

Scope = tuple[str, str | None, MemoryType]
Get = Callable[[str, str, str | None], Awaitable[MemoryRecord | None]]
GetNow = Callable[[str, str, str | None], MemoryRecord | None]


@dataclass(frozen=True)
class Look:
    """What one write reads of its scope before it is stored."""

    #: The scope its read covers; ``None``: it reads nothing.
    scope: Scope | None
    #: Run the contradiction detector on what was read.
    conflicts: bool
    #: May be answered by a stored memory (no named id, no ``allow_duplicate``).
    dedupe: bool
    #: The content as the store keeps it (a procedure's canonical JSON).
    stored: str
    #: The metadata as the store keeps it (typed fields, validity and links folded in).
    metadata: Mapping[str, Any] | None


def look_of(req: RememberRequest, plain: RememberRequest, conflicts: bool) -> Look:
    """``plain``: ``req`` as the store writes it (validity folded into its metadata)."""
    dedupe = req.id is None and not req.allow_duplicate
    scope = (req.agent_id, req.user_id, req.type) if conflicts or dedupe else None
    return Look(scope, conflicts, dedupe, content_to_storage(req.type, req.content),
                fold_request(plain).metadata if dedupe else None)


@dataclass
class Verdict:
    """What one write's read found."""

    conflicts: list[ConflictCandidate] = field(default_factory=list)
    #: Current memories with the same normalised content.
    identical: list[str] = field(default_factory=list)
    near: list[NearDuplicate] = field(default_factory=list)
    #: The stored memory this write is (set by :func:`settle`), as its answer.
    duplicate: RememberResponse | None = None


def verdict(req: RememberRequest, look: Look, rows: Sequence[tuple[str, str]],
            closeness: Mapping[str, float] | None,
            conflicts: list[ConflictCandidate]) -> Verdict:
    """The verdict on one write from its read: ``rows`` (``(id, stored text)`` of the
    scope's current memories), ``closeness`` (their cosines to the new vector, where the
    store gives them) and the detector's ``conflicts``."""
    skip = {*(req.supersedes or []), *([req.id] if req.id is not None else [])}
    like = likeness(req.type, look.stored, rows)
    near = near_duplicates(like, closeness, skip | {c.id for c in conflicts})
    return Verdict(conflicts, [mid for mid in like.identical if mid not in skip],
                   [NearDuplicate(id=mid, similarity=sim) for mid, sim in near])


def _answer_from(rec: MemoryRecord, store: str) -> RememberResponse:
    return RememberResponse(id=rec.id, stored_at=rec.created_at, stores=[store],
                            pending_approval=False, deduplicated=True)


def _matches(look: Look, rec: MemoryRecord | None) -> bool:
    return rec is not None and same_metadata(look.metadata, rec.metadata)


async def settle(reqs: Sequence[RememberRequest], looks: Sequence[Look],
                 verdicts: Sequence[Verdict], get: Get, store: str) -> None:
    """Set ``duplicate`` on each write that is a stored memory: an identical one whose
    metadata is the write's (read through ``get``, the store's own)."""
    for req, look, v in zip(reqs, looks, verdicts, strict=True):
        if not look.dedupe:
            continue
        for mid in v.identical:
            rec = await get(req.agent_id, mid, req.user_id)
            if _matches(look, rec):
                assert rec is not None
                v.duplicate = _answer_from(rec, store)
                break


def settle_now(reqs: Sequence[RememberRequest], looks: Sequence[Look],
               verdicts: Sequence[Verdict], get: GetNow, store: str) -> None:
    """:func:`settle` with a blocking read, for a store's own worker thread."""
    for req, look, v in zip(reqs, looks, verdicts, strict=True):
        if not look.dedupe:
            continue
        for mid in v.identical:
            rec = get(req.agent_id, mid, req.user_id)
            if _matches(look, rec):
                assert rec is not None
                v.duplicate = _answer_from(rec, store)
                break


def twins(reqs: Sequence[RememberRequest], looks: Sequence[Look],
          verdicts: Sequence[Verdict]) -> dict[int, int]:
    """Writes of one batch that repeat an earlier write of it (same scope, content and
    metadata), both to be stored: position -> the earlier write's position. Only the
    earlier one is written; the later is answered with it."""
    first: dict[tuple[Any, ...], int] = {}
    out: dict[int, int] = {}
    for n, (req, look, v) in enumerate(zip(reqs, looks, verdicts, strict=True)):
        if not look.dedupe or v.duplicate is not None:
            continue
        key = (req.agent_id, req.user_id, req.type, content_key(req.type, look.stored),
               json.dumps(look.metadata, sort_keys=True, default=str) if look.metadata
               else "{}")
        if key in first:
            out[n] = first[key]
        else:
            first[key] = n
    return out


def answer(resp: RememberResponse, v: Verdict) -> RememberResponse:
    """A stored write's answer with what its read found (fields left out when empty)."""
    update: dict[str, Any] = {}
    if v.conflicts:
        update["conflicts"] = v.conflicts
    if v.near:
        update["near_duplicates"] = v.near
    return resp.model_copy(update=update) if update else resp
