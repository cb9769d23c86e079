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

What a source keeps beside its records and only governance can hold (0.5.0's audit log, its
writes staged for approval) travels when the target is governed: the log's entries become
imported entries of the target's audit chain (a memory's ``history`` shows them, each marked
with the source and its original sequence number and time, so a second import adds none), and
a staged write is staged again in the target's queue. Its plan note then reads
``transformed``; into an ungoverned target it stays ``lost``, refused unless allowed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from memorywire.core.records import Row
from memorywire.governance.store import GovernedStore
from memorywire.portability.governed import record_import, restage, split
from memorywire.portability.moves import _write, portable
from memorywire.portability.plan import FidelityPlan, FieldFate, FieldScan, plan_fidelity
from memorywire.store.portable import ImportCounts, OnConflict

__all__ = ["ForeignCounts", "ForeignData", "ForeignSource", "import_foreign"]

#: How many of an agent's latest audit entries a repeated import looks through for events an
#: earlier import of the same source carried.
_HELD_SCAN = 1_000_000


@dataclass
class ForeignData:
    rows: list[Row] = field(default_factory=list)
    notes: list[FieldFate] = field(default_factory=list)
    #: Audit events for the target's log (``actor``, ``action``, ``agent_id``,
    #: ``memory_ids``, ``details`` with ``imported: {source, seq, at}``), oldest first.
    history: list[dict[str, Any]] = field(default_factory=list)
    #: Staged operations for the target's queue, as dump ``pending`` objects.
    pending: list[dict[str, Any]] = field(default_factory=list)
    #: Note field -> how a governed target carries it (its fate becomes ``transformed``).
    carried: dict[str, str] = field(default_factory=dict)


@dataclass
class ForeignCounts(ImportCounts):
    """Rows written, and what governance took in beside them."""

    history: int = 0
    pending: int = 0


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
                         ) -> tuple[FidelityPlan, ForeignCounts]:
    """Read ``source`` whole, plan, refuse unallowed loss, then write page by page;
    ``progress(done, total)`` follows each page written."""
    store, gov = split(store)
    dst = portable(store)
    data = await source.read()
    scan = FieldScan()
    for row in data.rows:
        scan.add(row)
    notes = data.notes
    if gov is not None:
        notes = [replace(n, fate="transformed", how=data.carried[n.field])
                 if n.field in data.carried and n.fate == "lost" else n for n in notes]
    plan = plan_fidelity(source.name, getattr(store, "name", "?"), source.kept_fields,
                         dst.kept_fields, scan, tuple(notes))
    plan.refuse_unless(allow_loss or set())
    counts = ForeignCounts()
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
    if gov is not None:
        counts.history = await _carry_history(gov, data.history, source.name)
        fresh = [d for d in data.pending if await gov.get_item(str(d["id"])) is None]
        counts.pending, _ = await restage(gov, fresh, source.name, skip_conflicts=True)
    return plan, counts


async def _carry_history(gov: GovernedStore, events: list[dict[str, Any]], source: str) -> int:
    """Append the source's audit events to the target's chain, each once: an event whose
    ``(source, seq)`` an earlier import carried is skipped."""
    held: set[Any] = set()
    for agent in {str(e["agent_id"]) for e in events}:
        for entry in await gov.aaudit_entries(agent_id=agent, limit=_HELD_SCAN):
            mark = (entry.get("details") or {}).get("imported")
            if isinstance(mark, dict) and mark.get("source") == source:
                held.add(mark.get("seq"))
    added = 0
    for event in events:
        if event["details"]["imported"]["seq"] in held:
            continue
        await gov.record(event)
        added += 1
    return added
