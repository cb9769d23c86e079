"""Truth over time: validity intervals, supersession and point-in-time visibility, as pure rules.

A memory has two clocks. ``created_at`` (the wire's ``stored_at``) is when it was recorded;
``valid_from``/``valid_to`` is when the fact holds in the world (``valid_from`` defaults to
``created_at``, ``valid_to`` to open-ended). Both live in the record's metadata under the
reserved key :data:`TIME_KEY`, so every backend that keeps metadata keeps them with no schema
migration; the wire shows them as first-class fields on hits.

Rules (one place, every backend):

- *Supersession.* A memory N that ``supersedes`` O closes O's validity at N's ``valid_from``
  (never extending it: an O already closed earlier keeps its earlier end) and marks O with
  ``superseded_by = N``. Chains A→B→C need no special case: each write closes its
  predecessor. Branching (B and C both superseding A) is allowed; A's ``superseded_by`` is the
  latest writer, its end the earliest ``valid_from``.
- *Default recall* shows only current truth: memories not superseded whose interval contains
  "now". ``include_superseded`` shows the rest too, ranked below every current hit.
- *``as_of`` T* (valid time) shows what held at T as known now: memories whose interval
  contains T (``valid_from <= T < valid_to``), whenever they were recorded: a fact recorded
  today with ``valid_from`` in 2023 held in 2024.
- *``known_at`` K* (record time) shows what we knew at K: memories recorded by K
  (``created_at <= K``), each with its validity as known then: a close recorded after K (the
  supersession by a memory recorded later, kept as ``closed_at`` with the end it replaced,
  ``prior_valid_to``) had not happened. Alone it asks what we believed held at K; with
  ``as_of`` T, what we believed at K held at T. A close made before ``closed_at`` was kept
  counts as known from the memory's own recording.
- *Forgetting the newer fact does not reopen the older one.* Forgetting removes a record; it
  does not assert that the old value is true again (the user may have moved twice). A caller
  who wants the old value back re-remembers it, or clears ``valid_to`` with ``update``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from memorywire.errors import InvalidRequest
from memorywire.wire.models import RecallHit, RecallRequest, RememberRequest

__all__ = [
    "TIME_KEY",
    "HitView",
    "Validity",
    "annotate",
    "annotate_own",
    "closing_patch",
    "held_in_time",
    "hit_validity",
    "is_visible",
    "rank_current_first",
    "time_metadata",
    "validity_of",
]

#: The reserved metadata key holding ``{"valid_from", "valid_to", "superseded_by"}`` and, once
#: closed by a supersession, ``closed_at`` and ``prior_valid_to`` (see ``known_at``).
TIME_KEY = "_validity"


class HitView(Protocol):
    """What the rules that filter and re-rank a recall's hits read of a hit: a
    :class:`~memorywire.wire.models.RecallHit` is one. A store that ranks a deep pool may
    hand these rules a lighter view of its rows and build full hits only for the few it
    returns (SqliteStore: building 100 hits to return 10 was a fifth of a LoCoMo recall)."""

    @property
    def id(self) -> str: ...
    @property
    def content(self) -> str | dict[str, Any]: ...
    @property
    def metadata(self) -> dict[str, Any] | None: ...
    @property
    def created_at(self) -> int | None: ...
    @property
    def valid_from(self) -> int | None: ...
    @property
    def valid_to(self) -> int | None: ...
    @property
    def superseded_by(self) -> str | None: ...
    @property
    def model_extra(self) -> dict[str, Any] | None: ...


#: A hit or a view of one: the re-ranking rules return what they were given.
HitT = TypeVar("HitT", bound=HitView)


@dataclass(frozen=True)
class Validity:
    valid_from: int
    valid_to: int | None
    superseded_by: str | None
    #: When the close by ``superseded_by`` was recorded (``None``: never closed, or closed
    #: before this was kept), and the end the memory had before it.
    closed_at: int | None = None
    prior_valid_to: int | None = None

    def holds_at(self, t: int) -> bool:
        return self.valid_from <= t and (self.valid_to is None or t < self.valid_to)

    def known_at(self, t: int) -> Validity:
        """The validity as it was known at record time ``t``: a close recorded later had
        not happened."""
        if self.closed_at is None or t >= self.closed_at:
            return self
        return Validity(self.valid_from, self.prior_valid_to, None)


def validity_of(metadata: Mapping[str, Any] | None, created_at: int) -> Validity:
    raw = (metadata or {}).get(TIME_KEY) or {}
    if type(raw) is not dict and not isinstance(raw, Mapping):  # a dict: skip the ABC check
        raw = {}
    # Each key read once: a LongMemEval recall judges ~245 hits, each twice (visible, then
    # annotated).
    start, end, by = raw.get("valid_from"), raw.get("valid_to"), raw.get("superseded_by")
    closed, prior = raw.get("closed_at"), raw.get("prior_valid_to")
    return Validity(valid_from=start if isinstance(start, int) else created_at,
                    valid_to=end if isinstance(end, int) else None,
                    superseded_by=by if isinstance(by, str) else None,
                    closed_at=closed if isinstance(closed, int) else None,
                    prior_valid_to=prior if isinstance(prior, int) else None)


def held_in_time(metadata: Mapping[str, Any] | None, created_at: int, as_of: int | None,
                 known_at: int | None) -> bool:
    """Whether a stored memory answers a point-in-time question (one of ``as_of``/``known_at``
    given): recorded by ``known_at`` and, with its validity as known then (else as known
    now), holding at ``as_of`` (else at ``known_at``). :func:`is_visible`'s rule for a
    record (``list``), where there is no ranking and no current truth to fall back on."""
    point = as_of if as_of is not None else known_at
    assert point is not None, "a point in time is asked"
    v = validity_of(metadata, created_at)
    if known_at is not None:
        if created_at > known_at:
            return False
        v = v.known_at(known_at)
    return v.holds_at(point)


def time_metadata(req: RememberRequest) -> dict[str, Any] | None:
    """The request's metadata with its validity folded in (``None`` when it has neither)."""
    if req.metadata and TIME_KEY in req.metadata:
        raise InvalidRequest(f"metadata.{TIME_KEY} is reserved; send valid_from/valid_to")
    if req.valid_from is None and req.valid_to is None:
        return req.metadata
    out = dict(req.metadata or {})
    out[TIME_KEY] = {k: v for k, v in (("valid_from", req.valid_from),
                                       ("valid_to", req.valid_to)) if v is not None}
    return out


def closing_patch(old_metadata: Mapping[str, Any] | None, old_created_at: int,
                  new_id: str, new_valid_from: int, *,
                  known_from: int | None = None) -> dict[str, Any]:
    """The metadata patch that closes an older memory superseded by ``new_id``; the close
    is known from ``known_from`` (the first close of a memory is the one kept: a later one
    only moves the end earlier)."""
    old = validity_of(old_metadata, old_created_at)
    end = new_valid_from if old.valid_to is None else min(old.valid_to, new_valid_from)
    out: dict[str, Any] = {"valid_from": old.valid_from, "valid_to": max(end, old.valid_from),
                           "superseded_by": new_id}
    if old.closed_at is not None:
        out["closed_at"] = old.closed_at
        if old.prior_valid_to is not None:
            out["prior_valid_to"] = old.prior_valid_to
    elif known_from is not None and old.superseded_by is None:
        out["closed_at"] = known_from
        if old.valid_to is not None:
            out["prior_valid_to"] = old.valid_to
    return {TIME_KEY: out}


def _created(hit: HitView) -> int:
    return hit.created_at if hit.created_at is not None else 0


def hit_validity(hit: HitView) -> Validity:
    """From the stored metadata, or from the wire fields of an already annotated hit (what a
    router receives from a child)."""
    if hit.metadata and TIME_KEY in hit.metadata:
        return validity_of(hit.metadata, _created(hit))
    return Validity(valid_from=hit.valid_from if hit.valid_from is not None else _created(hit),
                    valid_to=hit.valid_to, superseded_by=hit.superseded_by)


def annotate(hit: RecallHit) -> RecallHit:
    """The hit with its validity as wire fields, the reserved key taken out of metadata (a
    memory that never had a validity of its own is left as it was)."""
    if not (hit.metadata and TIME_KEY in hit.metadata):
        return hit
    v = hit_validity(hit)
    metadata = hit.metadata
    if metadata and TIME_KEY in metadata:
        metadata = {k: x for k, x in metadata.items() if k != TIME_KEY}
    return hit.model_copy(update={"valid_from": v.valid_from, "valid_to": v.valid_to,
                                  "superseded_by": v.superseded_by, "metadata": metadata})


def annotate_own(hit: RecallHit) -> RecallHit:
    """:func:`annotate` for a hit its caller just built and shares with no one: the same
    fields set to the same values (``model_copy``'s update: no validation, the keys added to
    ``model_fields_set``), on the hit itself. A LongMemEval recall returns ~245 hits, and
    copying each (``model_copy`` copies the hit's ``__dict__``, extras and fields set) was
    about a tenth of it (docs/benchmarks.md, "lat19d")."""
    if not (hit.metadata and TIME_KEY in hit.metadata):
        return hit
    v = hit_validity(hit)
    update = {"valid_from": v.valid_from, "valid_to": v.valid_to,
              "superseded_by": v.superseded_by,
              "metadata": {k: x for k, x in hit.metadata.items() if k != TIME_KEY}}
    hit.__dict__.update(update)
    hit.__pydantic_fields_set__.update(update)
    return hit


def is_visible(hit: HitView, req: RecallRequest, now: int) -> bool:
    """Whether ``hit`` answers ``req`` in time: current truth, or what held at ``as_of``
    (valid time) as known now or, with ``known_at``, as known then (record time)."""
    known = req.known_at
    point = req.as_of if req.as_of is not None else known
    if hit.valid_to is None and hit.superseded_by is None and not (
            hit.metadata and TIME_KEY in hit.metadata):
        # No validity of its own (most memories): valid from its start, never closed. The
        # rule below gives the same answer; a recall's pool judges 100 hits.
        start = hit.valid_from if hit.valid_from is not None else _created(hit)
        if point is not None:
            return start <= point and (known is None or _created(hit) <= known)
        return req.include_superseded or start <= now
    v = hit_validity(hit)
    if known is not None:
        if _created(hit) > known:
            return False
        v = v.known_at(known)
    if point is not None:
        return v.holds_at(point)
    if req.include_superseded:
        return True
    return v.superseded_by is None and v.holds_at(now)


def rank_current_first(hits: list[HitT], now: int, *, as_of: bool = False,
                       known_at: int | None = None) -> list[HitT]:
    """Current hits keep their order; no longer valid ones follow (stable within each).

    With ``as_of`` (``now`` is the asked point in time) only validity at ``now`` counts: a
    value superseded *later* was the truth then, and ranking it behind every hit never
    superseded made ``as_of`` answer an unrelated neighbour (issue 17's regression). With
    ``known_at``, validity as known at that record time.
    """
    def stale(h: HitT) -> bool:
        v = hit_validity(h)
        if known_at is not None:
            v = v.known_at(known_at)
        return (not as_of and v.superseded_by is not None) or not v.holds_at(now)
    return [h for h in hits if not stale(h)] + [h for h in hits if stale(h)]
