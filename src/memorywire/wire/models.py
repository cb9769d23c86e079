"""Typed models of wire format v0.

The JSON Schemas under ``schemas/v0`` are the truth; these models mirror them one to one and
``tests/unit/test_wire_agreement.py`` proves it (same properties, same required set, every
dump validates). Requests forbid unknown keys so a typo is an error naming the field;
responses forbid them where v0 does; stored records allow extras as v0 does.

The words these models are built from (ids, bounds, enums, procedures, links) live in
:mod:`.vocabulary`; every one stays importable from here (``import X as X`` marks a name this
module does not list in ``__all__`` as re-exported, for type checkers).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator

from memorywire.wire.fields import FIELDS, fold_fields, typed_fields, where_problem
from memorywire.wire.vocabulary import (
    PENDING_APPROVAL_DELETED_AT,
    ExpireAction,
    Fusion,
    MemoryType,
    MergeStrategy,
    Procedure,
    Transition,
)
from memorywire.wire.vocabulary import AgentId as AgentId
from memorywire.wire.vocabulary import Confidence as Confidence
from memorywire.wire.vocabulary import EdgeType as EdgeType
from memorywire.wire.vocabulary import Id as Id
from memorywire.wire.vocabulary import Link as Link
from memorywire.wire.vocabulary import Millis as Millis
from memorywire.wire.vocabulary import StateName as StateName
from memorywire.wire.vocabulary import UserId as UserId
from memorywire.wire.vocabulary import _Open as _Open
from memorywire.wire.vocabulary import _Strict as _Strict

__all__ = [
    "PENDING_APPROVAL_DELETED_AT",
    "ConflictCandidate",
    "DecisionRequest",
    "Diff",
    "EmotionalRecord",
    "EpisodicRecord",
    "ExpireAction",
    "ExpirePolicy",
    "ExpireRequest",
    "ExpireResponse",
    "ForgetRequest",
    "ForgetResponse",
    "Fusion",
    "MemoryRecord",
    "MemoryType",
    "MergeRequest",
    "MergeResponse",
    "MergeStrategy",
    "NearDuplicate",
    "ProceduralRecord",
    "Procedure",
    "RecallHit",
    "RecallRequest",
    "RecallResponse",
    "RememberRequest",
    "RememberResponse",
    "ReviewRequest",
    "SemanticRecord",
    "StoreCount",
    "StoreFailure",
    "Transition",
]


def links_from_metadata(metadata: dict[str, Any] | None) -> list[Link] | None:
    """The typed view of a stored ``metadata.links`` (ids are ``related`` edges); entries that
    are not edges are skipped here (stores validate them on write)."""
    raw = (metadata or {}).get("links")
    if not isinstance(raw, list):
        return None
    out: list[Link] = []
    for x in raw:
        try:
            out.append(Link(id=x) if isinstance(x, str) else Link.model_validate(x))
        except ValueError:
            continue
    return list({(ln.id, ln.type): ln for ln in out}.values()) or None


def lift_typed_fields(model: BaseModel) -> None:
    """Show the typed fields a memory keeps in its metadata (``core.fields``) as top-level
    fields of a hit or record; a value the model already carries wins."""
    mtype = getattr(model, "type", None)
    extra = model.__pydantic_extra__
    for name, value in typed_fields(str(mtype), getattr(model, "metadata", None)).items():
        if name in type(model).model_fields:
            if getattr(model, name) is None:
                setattr(model, name, value)
        elif extra is not None:
            extra.setdefault(name, value)


# --- requests --------------------------------------------------------------------------------


class RememberRequest(_Strict):
    agent_id: AgentId
    type: MemoryType
    content: Annotated[str, Field(min_length=1)] | dict[str, Any]
    user_id: UserId | None = None
    metadata: dict[str, Any] | None = None
    confidence: Confidence = 1.0
    source: Annotated[str, Field(max_length=256)] | None = None
    expires_at: Millis | None = None
    approval_required: bool = False
    #: NEW: caller-chosen id. A retry with the same id is idempotent; the router uses it to
    #: give one memory the same identity in every child store.
    id: Id | None = None
    #: NEW (v0.x, truth over time): when the fact holds in the world; ``valid_from`` absent
    #: means "from stored_at", ``valid_to`` absent means open-ended. See ``core.timeline``.
    valid_from: Millis | None = None
    valid_to: Millis | None = None
    #: NEW: ids this memory replaces (their validity closes at this one's ``valid_from``).
    supersedes: Annotated[list[Id], Field(max_length=100)] | None = None
    #: v0.1: store this memory even when the scope holds one with the same content (by
    #: default such a write is answered with the stored memory, see ``core.duplicates``).
    allow_duplicate: bool = False

    def model_post_init(self, __context: Any) -> None:
        if (self.valid_from is not None and self.valid_to is not None
                and self.valid_to <= self.valid_from):
            raise ValueError("valid_to must be after valid_from")
        if self.supersedes is not None and self.id is not None and self.id in self.supersedes:
            raise ValueError("supersedes must not name the memory itself")
        typed = self.typed()
        for name in typed:
            if FIELDS[name].owner != self.type:
                raise ValueError(f"{name} is a field of {FIELDS[name].owner} memories, "
                                 f"not {self.type.value}")
        # Refuses a bad metadata spelling of a typed field (InvalidRequest naming it) before
        # anything is staged or written. Without metadata there is nothing to refuse: every
        # typed field's owner was checked above (this runs for every request built).
        if self.metadata:
            fold_fields(self.type, self.metadata, typed)
    #: v0.1: typed graph edges from this memory (see :class:`Link`).
    links: Annotated[list[Link], Field(max_length=1000)] | None = None
    #: v0.1: typed fields of an emotional memory (``core.fields``); refused on other types.
    sentiment: Literal["positive", "negative", "neutral", "mixed"] | None = None
    valence: Annotated[float, Field(ge=-1.0, le=1.0)] | None = None
    arousal: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    emotion: Annotated[str, Field(max_length=256)] | None = None
    target: Annotated[str, Field(max_length=256)] | None = None
    #: v0.1: typed fields of an episodic memory.
    event_time: Millis | None = None
    location: Annotated[str, Field(max_length=256)] | None = None
    participants: Annotated[list[Annotated[str, Field(max_length=256)]],
                            Field(max_length=1000)] | None = None

    def typed(self) -> dict[str, Any]:
        """The typed fields this request sets (in ``FIELDS`` order: the stored metadata's)."""
        if self.model_fields_set.isdisjoint(FIELDS):
            return {}  # all default to None: one a request holds was set, so it is in the set
        return {n: v for n in FIELDS if (v := getattr(self, n)) is not None}

    @field_validator("content")
    @classmethod
    def _content_nonempty(cls, v: str | dict[str, Any]) -> str | dict[str, Any]:
        if isinstance(v, dict) and not v:
            raise ValueError("content object must not be empty")
        return v

    def content_text(self) -> str:
        """Content as text: procedural objects are serialised canonically."""
        if isinstance(self.content, str):
            return self.content
        return json.dumps(self.content, sort_keys=True, ensure_ascii=False)


class RecallRequest(_Strict):
    agent_id: AgentId
    query: Annotated[str, Field(min_length=1)]
    user_id: UserId | None = None
    k: Annotated[int, Field(ge=1, le=1000)] = 5
    types: list[MemoryType] | None = None
    hops: Annotated[int, Field(ge=0, le=3)] = 0
    fusion: Fusion = Fusion.RRF
    filter: dict[str, Any] | None = None
    fresher_than_days: Annotated[int, Field(ge=0)] | None = None
    #: Keep only hits whose calibrated ``relevance`` reaches this (instead of the store's
    #: configured floor); 0 keeps every ranked hit.
    min_relevance: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    #: NEW (v0.x): what held at this time (valid time), as known now; see core.timeline.
    as_of: Millis | None = None
    #: v0.1: what was known at this time (record time): memories recorded by then, with
    #: their validity as known then; alone, what was believed to hold then.
    known_at: Millis | None = None
    #: NEW: also return memories a newer one superseded (default: current truth only).
    include_superseded: bool = False
    #: v0.1: when the question is asked; relative times in it ("last Saturday") are counted
    #: from here (default ``as_of``, else the server's clock); see recall.time_boost.
    asked_at: Millis | None = None
    #: v0.1: conditions on typed fields, e.g. ``{"valence": {"lt": 0}}`` (``core.fields``).
    where: dict[str, dict[str, Any]] | None = None

    @field_validator("where")
    @classmethod
    def _where_known(cls, v: dict[str, dict[str, Any]] | None) -> dict[str, dict[str, Any]] | None:
        if v is not None:
            problem = where_problem(v)
            if problem is not None:
                raise ValueError(f"where{problem[0].replace('/', '.')}: {problem[1]}")
        return v


class ForgetRequest(_Strict):
    agent_id: AgentId
    user_id: UserId | None = None
    ids: list[Id] | None = None
    filter: dict[str, Any] | None = None
    hard_delete: bool = False
    reason: str | None = None
    #: NEW (v0 minor): also forget every memory derived from the selected ones.
    cascade: bool = False

    @field_validator("filter")
    @classmethod
    def _filter_nonempty(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is not None and not v:
            raise ValueError("filter must name at least one key (an empty filter matches all)")
        return v

    def model_post_init(self, __context: Any) -> None:
        if self.ids is None and self.filter is None:
            raise ValueError("forget needs 'ids' or 'filter'; a scope-less mass delete is refused")


class MergeRequest(_Strict):
    agent_id: AgentId
    canonical: Id
    duplicates: Annotated[list[Id], Field(min_length=1)]
    strategy: MergeStrategy = MergeStrategy.KEEP_CANONICAL
    #: NEW: optional user scope, as on every other operation.
    user_id: UserId | None = None


class ExpirePolicy(_Strict):
    older_than_days: Annotated[int, Field(ge=1)] | None = None
    type: MemoryType | None = None
    confidence_below: Confidence | None = None
    no_recall_in_days: Annotated[int, Field(ge=1)] | None = None

    def model_post_init(self, __context: Any) -> None:
        if all(getattr(self, f) is None for f in type(self).model_fields):
            raise ValueError("expire policy must set at least one key")


class ExpireRequest(_Strict):
    agent_id: AgentId
    policy: ExpirePolicy
    action: ExpireAction = ExpireAction.FORGET
    #: NEW: optional user scope.
    user_id: UserId | None = None


# --- responses -------------------------------------------------------------------------------


class StoreFailure(_Strict):
    """Why one child store was left out of an operation (never part of the v0 body)."""

    store: str
    error: str
    code: str = "backend_unavailable"


class ConflictCandidate(_Strict):
    """A stored memory that looks like an older value of the fact just remembered."""

    id: Id
    similarity: Annotated[float, Field(ge=0.0, le=1.0)]
    why: str


class NearDuplicate(_Strict):
    """A current memory of the scope that a stored write (nearly) repeats: the same content
    (similarity 1.0) or a stored vector this close (see ``core.duplicates``)."""

    id: Id
    similarity: Annotated[float, Field(ge=0.0, le=1.0)]


class RememberResponse(_Strict):
    id: Id
    stored_at: Millis
    stores: list[str]
    pending_approval: bool
    approval_url: str | None = None
    #: NEW (v0.2): the approval item a reviewer decides, present while pending.
    approval_id: str | None = None
    #: NEW (v0.x): contradiction candidates found on write (a hint; nothing was changed).
    #: ``None`` (omitted on the wire) when there are none, so a v0.0 reader that forbids
    #: unknown keys still reads every answer without a conflict.
    conflicts: list[ConflictCandidate] | None = None
    #: v0.1: ``True`` when the scope already held this memory (same content and metadata):
    #: ``id`` and ``stored_at`` are the stored memory's and nothing was written. ``None``
    #: (omitted) otherwise, as ``conflicts``.
    deduplicated: bool | None = None
    #: v0.1: memories of the scope this write was stored beside that (nearly) repeat it.
    near_duplicates: list[NearDuplicate] | None = None
    #: Transport-side diagnostics; excluded from the wire body (v0 forbids extra keys).
    failures: list[StoreFailure] = Field(default_factory=list, exclude=True)


class RecallHit(_Open):
    id: Id
    type: MemoryType
    content: str | dict[str, Any]
    score: float
    metadata: dict[str, Any] | None = None
    created_at: Millis | None = None
    #: Calibrated 0..1 (memorywire.core.relevance); absent where a store cannot compute it.
    relevance: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    supporting: list[str] = Field(default_factory=list)
    source_store: str | None = None
    user_id: str | None = None
    source: str | None = None
    confidence: Confidence | None = None
    #: NEW (v0.x): the validity interval and, for a superseded memory, what replaced it.
    valid_from: Millis | None = None
    valid_to: Millis | None = None
    superseded_by: Id | None = None
    #: v0.1: the memory's typed edges, read from its stored ``metadata.links``.
    links: list[Link] | None = None

    def model_post_init(self, __context: Any) -> None:
        if self.links is None:
            self.links = links_from_metadata(self.metadata)
        lift_typed_fields(self)


class RecallResponse(_Strict):
    results: list[RecallHit]
    fusion_used: Fusion
    stores_queried: list[str]
    latency_ms: Annotated[int, Field(ge=0)]
    #: v0.1: the children left out because they failed or missed the deadline, in the body
    #: (``failures`` below travels beside it: header, ``_meta``). ``None`` (omitted) when
    #: every child answered, so a v0.0 reader that forbids unknown keys reads those answers.
    stores_failed: list[StoreFailure] | None = None
    failures: list[StoreFailure] = Field(default_factory=list, exclude=True)

    def model_post_init(self, __context: Any) -> None:
        if self.stores_failed is None and self.failures:
            self.stores_failed = list(self.failures)
        elif self.stores_failed and not self.failures:
            self.failures = list(self.stores_failed)


class StoreCount(_Strict):
    store: str
    count: Annotated[int, Field(ge=0)]
    error: str | None = None


class ForgetResponse(_Strict):
    forgotten_ids: list[str]
    stores: list[StoreCount]
    hard_delete: bool
    pending_approval: bool | None = None
    approval_url: str | None = None
    #: NEW (v0.2): the approval item a reviewer decides, present while pending.
    approval_id: str | None = None
    #: NEW (v0 minor): the signed deletion receipt of a hard forget, where the server signs.
    receipt: dict[str, Any] | None = None


class MergeResponse(_Strict):
    canonical: str
    merged_count: Annotated[int, Field(ge=0)]
    strategy_used: MergeStrategy
    stores: list[str]
    pending_approval: bool | None = None
    approval_url: str | None = None
    #: NEW (v0.2): the approval item a reviewer decides, present while pending.
    approval_id: str | None = None
    errors: list[StoreFailure] | None = None


class ExpireResponse(_Strict):
    matched_count: Annotated[int, Field(ge=0)]
    action_taken: ExpireAction
    stores: list[str]
    matched_ids: list[str] | None = None
    pending_approval: bool | None = None
    approval_url: str | None = None
    #: NEW (v0.2): the approval item a reviewer decides, present while pending.
    approval_id: str | None = None
    errors: list[StoreFailure] | None = None


# --- stored records --------------------------------------------------------------------------


class MemoryRecord(_Open):
    """A stored memory as a backend holds it; v0 allows extra keys."""

    id: Id
    agent_id: AgentId
    type: MemoryType
    content: str | dict[str, Any]
    created_at: Millis
    user_id: str | None = None
    metadata: dict[str, Any] | None = None
    confidence: Confidence | None = None
    source: str | None = None
    updated_at: Millis | None = None
    expires_at: Millis | None = None
    #: v0.1: the memory's typed edges, read from its stored ``metadata.links``.
    links: list[Link] | None = None

    def model_post_init(self, __context: Any) -> None:
        if self.links is None:
            self.links = links_from_metadata(self.metadata)
        lift_typed_fields(self)


class SemanticRecord(MemoryRecord):
    type: Literal[MemoryType.SEMANTIC] = MemoryType.SEMANTIC


class EpisodicRecord(MemoryRecord):
    type: Literal[MemoryType.EPISODIC] = MemoryType.EPISODIC
    event_time: Millis | None = None
    location: str | None = None
    participants: list[str] | None = None


class EmotionalRecord(MemoryRecord):
    type: Literal[MemoryType.EMOTIONAL] = MemoryType.EMOTIONAL
    sentiment: Literal["positive", "negative", "neutral", "mixed"] | None = None
    valence: Annotated[float, Field(ge=-1.0, le=1.0)] | None = None
    arousal: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    emotion: str | None = None
    target: str | None = None


class ProceduralRecord(MemoryRecord):
    type: Literal[MemoryType.PROCEDURAL] = MemoryType.PROCEDURAL
    content: Procedure  # type: ignore[assignment]


# --- governance ------------------------------------------------------------------------------


class Diff(_Strict):
    added: list[dict[str, Any]] = Field(default_factory=list)
    removed: list[dict[str, Any]] = Field(default_factory=list)
    modified: list[dict[str, Any]] = Field(default_factory=list)


class ReviewRequest(_Open):
    """What a reviewer sees for one pending operation."""

    operation: Literal["remember", "forget", "merge", "expire", "update", "recover",
                       "quarantine"]
    agent_id: AgentId
    request: dict[str, Any]
    diff: Diff
    reasoning: str | None = None
    id: Id | None = None
    status: Literal["pending", "approved", "rejected"] | None = None
    created_at: Millis | None = None
    content_hash: str | None = None
    requested_by: str | None = None


class DecisionRequest(_Open):
    approved: bool
    reviewer: str
    reviewed_at: Millis
    reason: str | None = None
    content_hash: str | None = None
