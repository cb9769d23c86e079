"""Merge strategies of wire v0, as plain functions over plain rows.

What a merge does, for every backend: the survivor takes the strategy's content, metadata
and confidence; its edges (``metadata.links``, typed) become the union of its own and the
absorbed rows' edges, each keeping its type (self-references dropped); every other live row
in scope with an edge to an absorbed row points that edge at the survivor instead; each
absorbed row is deleted, records ``merged_into`` and gains a ``merged_into`` edge to the
survivor.

``canonical`` and ``duplicates`` may be ids or entity names (``metadata.entity_name``). A
name for the canonical picks the oldest live row carrying it; a name among the duplicates
stands for every row carrying it. References that resolve to nothing are ignored, so a retry
of a merge that already happened merges nothing rather than failing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from memorywire.core.content import Edge, content_to_storage, edges_to_storage
from memorywire.core.records import Row
from memorywire.errors import NotFound
from memorywire.wire.models import MergeRequest, MergeStrategy

__all__ = [
    "LinkPlan",
    "MergeOutcome",
    "MergeRow",
    "RowMerge",
    "plan_links",
    "plan_merge",
    "plan_row_merge",
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

    @property
    def merged_into(self) -> dict[str, str]:
        """Each absorbed id and the survivor it now lives on in."""
        return {mid: self.canonical_id for mid in self.absorbed_ids}


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


@dataclass(frozen=True)
class LinkPlan:
    """Links after a merge: the survivor's (``None``: it keeps no ``links`` key) and the new
    ``metadata.links`` of every other row that pointed at an absorbed one."""

    survivor_links: list[str | dict[str, str]] | None
    relinked: dict[str, list[str | dict[str, str]]]

    def survivor_metadata(self, metadata: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(metadata)
        if self.survivor_links is not None:
            out["links"] = self.survivor_links
        return out


def plan_links(outcome: MergeOutcome, links_by_id: Mapping[str, Sequence[Edge]]) -> LinkPlan:
    """``links_by_id``: the typed edges of every live row in the merge's scope."""
    survivor = outcome.canonical_id
    gone = set(outcome.absorbed_ids)
    gathered = [*links_by_id.get(survivor, [])]
    for mid in outcome.absorbed_ids:
        gathered.extend(links_by_id.get(mid, []))
    had_links = bool(gathered) or "links" in outcome.metadata
    own = [e for e in gathered if e.id != survivor and e.id not in gone]
    relinked: dict[str, list[str | dict[str, str]]] = {}
    for rid, edges in links_by_id.items():
        if rid == survivor or rid in gone or not gone.intersection(e.id for e in edges):
            continue
        moved = [Edge(survivor, e.type) if e.id in gone else e for e in edges]
        relinked[rid] = edges_to_storage(e for e in moved if e.id != rid)
    return LinkPlan(edges_to_storage(own) if had_links else None, relinked)


@dataclass(frozen=True)
class RowMerge:
    """A merge planned over :class:`Row` values: each changed row and its new state.

    ``changes`` holds ``(old, new, text_changed)``; ``text_changed`` says the store must
    re-embed ``new`` (its stored content differs).
    """

    canonical_id: str
    absorbed_ids: tuple[str, ...]
    changes: list[tuple[Row, Row, bool]]


def plan_row_merge(live: Sequence[Row], req: MergeRequest, now: int) -> RowMerge:
    """The whole merge over the live rows of the request's scope."""
    plain = [MergeRow(r.id, r.content(), r.created_at, r.confidence, r.metadata) for r in live]
    canonical, dups = resolve_merge(req.canonical, req.duplicates, plain)
    if not dups:
        return RowMerge(canonical.id, (), [])
    plan = plan_merge(canonical, dups, req.strategy)
    by_id = {r.id: r for r in live}
    links = plan_links(plan, {r.id: r.edges() for r in live})
    old = by_id[plan.canonical_id]
    stored = content_to_storage(old.type, plan.content)
    changes = [(old, replace(old, stored=stored, metadata=links.survivor_metadata(plan.metadata),
                             confidence=plan.confidence, updated_at=now), stored != old.stored)]
    for mid in plan.absorbed_ids:
        gone = by_id[mid]
        edges = [*gone.edges(), Edge(plan.canonical_id, "merged_into")]
        changes.append((gone, replace(gone, deleted_at=now, merged_into=plan.canonical_id,
                                      metadata={**gone.metadata,
                                                "links": edges_to_storage(edges)}), False))
    for rid, new_links in links.relinked.items():
        row = by_id[rid]
        changes.append((row, replace(row, metadata={**row.metadata, "links": new_links}), False))
    return RowMerge(plan.canonical_id, plan.absorbed_ids, changes)
