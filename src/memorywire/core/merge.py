"""Merge strategies of wire v0, as plain functions over plain rows.

``canonical`` and ``duplicates`` may be ids or entity names (``metadata.entity_name``). A
name for the canonical picks the oldest live row carrying it; a name among the duplicates
stands for every row carrying it. References that resolve to nothing are ignored, so a retry
of a merge that already happened merges nothing rather than failing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memorywire.errors import NotFound
from memorywire.wire.models import MergeStrategy

__all__ = [
    "MergeOutcome",
    "MergeRow",
    "plan_merge",
    "remap_edges",
    "resolve_canonical",
    "resolve_duplicates",
    "resolve_merge",
]


@dataclass(frozen=True)
class MergeRow:
    id: str
    content: str | dict[str, Any]
    created_at: int
    confidence: float = 1.0
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MergeOutcome:
    """The surviving row's new state and the rows it absorbs (to be dropped)."""

    canonical_id: str
    content: str | dict[str, Any]
    metadata: dict[str, Any]
    confidence: float
    absorbed_ids: tuple[str, ...]


def _age_key(row: MergeRow) -> tuple[int, str]:
    return (row.created_at, row.id)


def _entity(row: MergeRow) -> Any:
    return (row.metadata or {}).get("entity_name")


def resolve_canonical(ref: str, rows: Sequence[MergeRow]) -> MergeRow | None:
    """An id wins over a name; among rows named ``ref`` the oldest is canonical."""
    for row in rows:
        if row.id == ref:
            return row
    named = [r for r in rows if _entity(r) == ref]
    return min(named, key=_age_key) if named else None


def resolve_duplicates(
    refs: Iterable[str], rows: Sequence[MergeRow], canonical_id: str
) -> list[MergeRow]:
    """Every row an id or name points at, canonical excluded, each once, oldest first."""
    by_id = {r.id: r for r in rows}
    picked: dict[str, MergeRow] = {}
    for ref in refs:
        if ref in by_id:
            picked[ref] = by_id[ref]
            continue
        for row in rows:
            if _entity(row) == ref:
                picked[row.id] = row
    picked.pop(canonical_id, None)
    return sorted(picked.values(), key=_age_key)



def resolve_merge(
    canonical_ref: str, duplicate_refs: Iterable[str], rows: Sequence[MergeRow]
) -> tuple[MergeRow, list[MergeRow]]:
    """The canonical row and its duplicates, as every store resolves a merge request.

    Raises ``NotFound`` when the canonical reference names no live row in scope; an empty
    duplicate list is a valid no-op merge.
    """
    canonical = resolve_canonical(canonical_ref, rows)
    if canonical is None:
        raise NotFound(f"canonical memory {canonical_ref!r} not found")
    return canonical, resolve_duplicates(duplicate_refs, rows, canonical.id)

def _join_contents(rows: Sequence[MergeRow]) -> str:
    texts: list[str] = []
    for row in rows:
        # A procedure is a state machine; concatenating it into text is meaningless.
        if isinstance(row.content, str) and row.content not in texts:
            texts.append(row.content)
    return "\n".join(texts)


def plan_merge(
    canonical: MergeRow, duplicates: Sequence[MergeRow], strategy: MergeStrategy
) -> MergeOutcome:
    everyone = [canonical, *[d for d in duplicates if d.id != canonical.id]]
    if strategy is MergeStrategy.KEEP_HIGHEST_CONFIDENCE:
        winner = min(everyone, key=lambda r: (-r.confidence, r.created_at, r.id))
        return MergeOutcome(
            canonical_id=winner.id,
            content=winner.content,
            metadata=dict(winner.metadata or {}),
            confidence=winner.confidence,
            absorbed_ids=tuple(r.id for r in everyone if r.id != winner.id),
        )
    absorbed = tuple(r.id for r in everyone[1:])
    if strategy is MergeStrategy.MERGE_CONTENT:
        ordered = sorted(everyone, key=_age_key)
        metadata: dict[str, Any] = {}
        for row in ordered:
            metadata.update(row.metadata or {})
        content: str | dict[str, Any] = (
            canonical.content if isinstance(canonical.content, dict) else _join_contents(ordered)
        )
        return MergeOutcome(
            canonical_id=canonical.id,
            content=content,
            metadata=metadata,
            confidence=max(r.confidence for r in everyone),
            absorbed_ids=absorbed,
        )
    return MergeOutcome(
        canonical_id=canonical.id,
        content=canonical.content,
        metadata=dict(canonical.metadata or {}),
        confidence=canonical.confidence,
        absorbed_ids=absorbed,
    )


def remap_edges(
    edges: Iterable[tuple[str, str]], absorbed: Iterable[str], canonical_id: str
) -> set[tuple[str, str]]:
    """Point every edge touching an absorbed row at the canonical; self-loops vanish."""
    gone = set(absorbed)
    out: set[tuple[str, str]] = set()
    for src, dst in edges:
        a = canonical_id if src in gone else src
        b = canonical_id if dst in gone else dst
        if a != b:
            out.add((a, b))
    return out
