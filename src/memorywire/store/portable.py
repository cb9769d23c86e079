"""The narrow door for moving memories between stores: every row out, rows in as they were.

The public protocol shows live records only and stamps every write with the store's clock,
which is right for agents and wrong for a migration: a dump must carry deleted, archived and
merged rows, every timestamp and the merge edge, and an import must keep the original ids
and times. Stores that support moving data implement :class:`PortableStore` (two methods and
one declaration) instead of letting a tool reach into their tables; stores that can also hand
out and take stored vectors implement :class:`VectorPortable`.

``kept_fields`` names the :class:`memorywire.core.records.Row` fields the store keeps exactly
on import; anything else is lost there, and the fidelity planner says so before it writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from memorywire.core.records import Row
from memorywire.embed.base import Embedder
from memorywire.errors import Conflict

__all__ = ["ALL_FIELDS", "EXPORT_ORDER", "BulkLoadable", "BulkState", "Cursor", "ImportCounts",
           "OnConflict", "PortableStore", "VectorPortable", "cursor_of", "decide",
           "export_page_sql", "page_of"]

#: Every field of a core row, in declaration order.
ALL_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Row))

#: An export cursor: the ``(created_at, id, agent_id)`` of the last row of the previous page
#: (ids are unique per agent only, so the agent breaks ties between agents).
Cursor = tuple[int, str, str]
#: The export order, most significant column first: the columns of a :data:`Cursor`, which
#: :func:`cursor_of`, :func:`page_of` and every SQL store's :func:`export_page_sql` follow.
EXPORT_ORDER: tuple[str, str, str] = ("created_at", "id", "agent_id")


class OnConflict(StrEnum):
    """What an import does with a row whose id the target already holds in that agent."""

    SKIP = "skip"
    REPLACE = "replace"
    FAIL = "fail"


@dataclass
class ImportCounts:
    inserted: int = 0
    replaced: int = 0
    skipped: int = 0

    def add(self, other: ImportCounts) -> None:
        self.inserted += other.inserted
        self.replaced += other.replaced
        self.skipped += other.skipped


@runtime_checkable
class PortableStore(Protocol):
    @property
    def kept_fields(self) -> frozenset[str]:
        """The row fields an import keeps exactly (the rest are lost in this store)."""
        ...

    async def export_rows(self, agent_id: str | None, after: Cursor | None,
                          limit: int) -> list[Row]:
        """Rows in every state (live, deleted, archived, merged away, expired), ordered by
        ``(created_at, id, agent_id)``, strictly after ``after``; ``agent_id=None`` is every
        agent."""
        ...

    async def import_rows(self, rows: Sequence[Row], on_conflict: OnConflict) -> ImportCounts:
        """Store rows with their own ids, timestamps and marks (embedding their text); a row
        whose ``(agent_id, id)`` exists is skipped, replaced or refused (``Conflict``)."""
        ...


@runtime_checkable
class VectorPortable(Protocol):
    """A portable store that can hand out its stored vectors and take given ones, so a move
    between two stores with the same embedder (same ``embedder.name``) skips re-embedding."""

    @property
    def embedder(self) -> Embedder: ...

    async def vectors_of(self, rows: Sequence[Row]) -> list[Any]:
        """The stored float32 vector of each row (rows this store exported)."""
        ...

    async def import_rows(self, rows: Sequence[Row], on_conflict: OnConflict,
                          vectors: Sequence[Any] | None = None) -> ImportCounts:
        """As :meth:`PortableStore.import_rows`; ``vectors`` (one per row, from the same
        embedder) are stored instead of embedding the text."""
        ...


@dataclass
class BulkState:
    """Where a bulk load stands in its target: the cursor of the last committed page (``None``
    before the first) and how many rows it has loaded."""

    cursor: Cursor | None
    done: int


@runtime_checkable
class BulkLoadable(Protocol):
    """A store that loads a whole migration faster into an empty table than row by row: it
    defers its own indexing to :meth:`bulk_finish` and keeps the job's checkpoint itself,
    committed with each page, so a killed load resumes exactly after its last page."""

    async def bulk_begin(self, job: str) -> BulkState | None:
        """Start job ``job`` (a store holding no rows) or find it to resume; ``None`` when
        the store holds rows outside any bulk load (rows then go in by ``import_rows``)."""
        ...

    async def bulk_load(self, job: str, rows: Sequence[Row], vectors: Sequence[Any] | None,
                        cursor: Cursor, on_conflict: OnConflict = OnConflict.FAIL
                        ) -> ImportCounts:
        """Insert rows (embedding their text unless ``vectors`` are given) and move the job's
        checkpoint to ``cursor`` (its count by ``len(rows)``), atomically; a row whose id the
        job already loaded goes per ``on_conflict``."""
        ...

    async def bulk_finish(self, job: str) -> dict[str, Any]:
        """Build what was deferred and end the job; a description of the build."""
        ...


def export_page_sql(agent_id: str | None, after: Cursor | None,
                    mark: str) -> tuple[str, str, list[Any]]:
    """``(where, order by, parameters)`` of an export page in SQL, with ``mark`` as the
    dialect's placeholder (``?``, ``%s``): the keyset rule once, so a SQL store's pages
    follow the same order as :func:`page_of` (a row-value comparison, which SQLite and
    PostgreSQL both evaluate column by column)."""
    where = ["1 = 1"]
    params: list[Any] = []
    if agent_id is not None:
        where.append(f"agent_id = {mark}")
        params.append(agent_id)
    if after is not None:
        where.append(f"({', '.join(EXPORT_ORDER)}) > ({', '.join([mark] * len(after))})")
        params += list(after)
    return " AND ".join(where), ", ".join(EXPORT_ORDER), params


def cursor_of(row: Row) -> Cursor:
    return (row.created_at, row.id, row.agent_id)


def page_of(rows: Iterable[Row], agent_id: str | None, after: Cursor | None,
            limit: int) -> list[Row]:
    """An export page for stores that can only scan: sorted, after the cursor, at most
    ``limit``."""
    picked = [r for r in rows if r.in_scope(agent_id, None)
              and (after is None or cursor_of(r) > after)]
    picked.sort(key=cursor_of)
    return picked[:limit]


def decide(exists: bool, row: Row, on_conflict: OnConflict) -> bool:
    """Whether to write ``row``: always when new; per ``on_conflict`` when it exists."""
    if not exists:
        return True
    if on_conflict is OnConflict.FAIL:
        raise Conflict(f"id {row.id!r} of agent {row.agent_id!r} already exists in the target")
    return on_conflict is OnConflict.REPLACE
