"""Imports from outside: data memorywire did not write, read into rows and moved like a dump.

A :class:`ForeignSource` reads one kind of foreign data (the first implementation's SQLite
file, a native mem0 collection, a Letta agent's archival passages, a Cognee dataset) into
:class:`~memorywire.core.records.Row` values, and names, as plan notes, what it holds that
no record field carries and where it went. :func:`import_foreign` then plans, refuses a
lossy plan ``allow_loss`` does not cover, and writes through the target's
:class:`~memorywire.store.portable.PortableStore` door, as a dump import does (ids kept, so
a second import is idempotent by id); a governed target takes the rows into its inner store
and records each written page as an ``import`` entry in its audit log, as a dump import
does, so ``audit verify`` does not flag them as written behind its back. Foreign data is
read whole before anything is written: not every source has a stable cursor, and the plan
must be complete before the first write.
Vectors never travel (0.5.0 and mem0 do not record which embedder made theirs); the target
embeds the text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from memorywire.core.records import Row
from memorywire.portability.governed import record_import, split
from memorywire.portability.moves import _write, portable
from memorywire.portability.plan import FidelityPlan, FieldFate, FieldScan, plan_fidelity
from memorywire.store.portable import ImportCounts, OnConflict

__all__ = ["ForeignData", "ForeignSource", "import_foreign"]


@dataclass
class ForeignData:
    rows: list[Row] = field(default_factory=list)
    notes: list[FieldFate] = field(default_factory=list)


class ForeignSource(Protocol):
    @property
    def name(self) -> str:
        """Where the data comes from, without secrets (the plan's ``source``)."""
        ...

    @property
    def kept_fields(self) -> frozenset[str]:
        """The row fields this kind of source can fill (the rest are never carried)."""
        ...

    async def read(self) -> ForeignData: ...


async def import_foreign(store: Any, source: ForeignSource, *,
                         on_conflict: OnConflict = OnConflict.SKIP,
                         allow_loss: set[str] | None = None,
                         page: int = 500,
                         progress: Callable[[int, int], None] | None = None,
                         ) -> tuple[FidelityPlan, ImportCounts]:
    """Read ``source`` whole, plan, refuse unallowed loss, then write page by page;
    ``progress(done, total)`` follows each page written."""
    store, gov = split(store)
    dst = portable(store)
    data = await source.read()
    scan = FieldScan()
    for row in data.rows:
        scan.add(row)
    plan = plan_fidelity(source.name, getattr(store, "name", "?"), source.kept_fields,
                         dst.kept_fields, scan, tuple(data.notes))
    plan.refuse_unless(allow_loss or set())
    counts = ImportCounts()
    total = len(data.rows)
    if progress is not None:
        progress(0, total)
    for start in range(0, total, page):
        batch = data.rows[start:start + page]
        wrote = await _write(dst, batch, None, on_conflict)
        counts.add(wrote)
        if gov is not None and (wrote.inserted or wrote.replaced):
            await record_import(gov, batch, source.name)
        if progress is not None:
            progress(min(start + page, total), total)
    return plan, counts
