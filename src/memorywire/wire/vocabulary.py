"""The words every v0 message is built from: ids, scalar bounds, enums, procedures, links.

Split out of :mod:`memorywire.wire.models` (which re-exports every public name here, so
``memorywire.wire.models`` stays the one import path) so that the request, response and
record models there and in :mod:`.memory_ops` share one definition of each bound and enum.
``_Strict`` and ``_Open`` are the two model bases: unknown keys refused, or kept as v0 allows.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "PENDING_APPROVAL_DELETED_AT",
    "AgentId",
    "Confidence",
    "EdgeType",
    "ExpireAction",
    "Fusion",
    "Id",
    "Link",
    "MemoryType",
    "MergeStrategy",
    "Millis",
    "Procedure",
    "StateName",
    "Transition",
    "UserId",
]

#: The first implementation marks staged rows with ``deleted_at = -1``; kept for interop.
PENDING_APPROVAL_DELETED_AT = -1

AgentId = Annotated[str, Field(min_length=1, max_length=256)]
StateName = Annotated[str, Field(min_length=1, max_length=128)]
UserId = Annotated[str, Field(max_length=256)]
Millis = Annotated[int, Field(ge=0)]
Confidence = Annotated[float, Field(ge=0.0, le=1.0)]
Id = Annotated[str, Field(min_length=1, max_length=256)]


class MemoryType(StrEnum):
    SEMANTIC = "semantic"
    EPISODIC = "episodic"
    PROCEDURAL = "procedural"
    EMOTIONAL = "emotional"


class Fusion(StrEnum):
    RRF = "rrf"
    MAX = "max"
    WEIGHTED = "weighted"


class MergeStrategy(StrEnum):
    KEEP_CANONICAL = "keep_canonical"
    MERGE_CONTENT = "merge_content"
    KEEP_HIGHEST_CONFIDENCE = "keep_highest_confidence"


class ExpireAction(StrEnum):
    FORGET = "forget"
    ARCHIVE = "archive"
    DEMOTE = "demote"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_enum_values=False, populate_by_name=True)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", use_enum_values=False, populate_by_name=True)


# --- procedural FSM -------------------------------------------------------------------------


class Transition(_Strict):
    """One edge. Only these three keys exist: callbacks are code-execution vectors."""

    trigger: Annotated[str, Field(min_length=1, max_length=128)]
    source: str | list[str]
    dest: Annotated[str, Field(min_length=1, max_length=128)]
    #: NEW: guard names, accepted only when registered as safe predicates
    #: (``memorywire.procedural``); never resolved as code paths.
    conditions: str | list[str] | None = None
    unless: str | list[str] | None = None


class Procedure(_Strict):
    """A pytransitions-compatible state machine with no callbacks at all."""

    name: Annotated[str, Field(min_length=1, max_length=256)]
    initial: Annotated[str, Field(min_length=1, max_length=128)]
    states: Annotated[list[StateName], Field(min_length=1)]
    transitions: list[Transition] = Field(default_factory=list)
    current: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    metadata: dict[str, Any] | None = None


# --- graph edges -----------------------------------------------------------------------------

#: An edge type: ``related``, ``derived_from``, ``supersedes``, ``merged_into`` (v0 names) or
#: another lower-case name (the set is open).
EdgeType = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")]


class Link(_Strict):
    """A typed edge from the memory that carries it to the memory ``id`` (v0.1)."""

    id: Id
    type: EdgeType = "related"
