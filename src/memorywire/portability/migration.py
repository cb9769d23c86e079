"""migrate: plan, copy every row page by page (or bulk-load an empty target), then verify.

A row-by-row migration writes a checkpoint file (the cursor of the last committed page) after
every page, atomically, so one killed at any point resumes where it stopped; the page after
the checkpoint is re-imported with ``replace`` (it may be half-written in a store without
transactions), which makes every record land exactly once. A bulk load
(:class:`memorywire.store.portable.BulkLoadable`) keeps its cursor in the target, committed
with each page, and resumes from there. Verification merge-joins the source and target
streams (both ordered by the same key, which an import keeps).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memorywire.core.records import Row
from memorywire.errors import Conflict, InvalidRequest
from memorywire.portability.dump import doc_of_row
from memorywire.portability.moves import PAGE, _write, portable, public_url, rows_of, same_embedder
from memorywire.portability.plan import FidelityPlan, FieldScan, plan_fidelity
from memorywire.store.portable import (
    BulkLoadable,
    BulkState,
    Cursor,
    ImportCounts,
    OnConflict,
    PortableStore,
    cursor_of,
)

__all__ = ["MigrateResult", "migrate", "verify"]


@dataclass
class MigrateResult:
    plan: FidelityPlan
    counts: ImportCounts = field(default_factory=ImportCounts)
    resumed: bool = False
    vectors: str = "re-embedded"
    verified: int = 0
    mismatches: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    #: ``rows`` (``import_rows`` page by page) or ``bulk`` (an empty target's bulk load).
    load: str = "rows"
    #: How a bulk load built what it deferred (the target's description), else ``None``.
    index: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"plan": self.plan.to_json(), "inserted": self.counts.inserted,
                "replaced": self.counts.replaced, "skipped": self.counts.skipped,
                "resumed": self.resumed, "vectors": self.vectors, "verified": self.verified,
                "mismatches": self.mismatches, "seconds": self.seconds, "load": self.load,
                "index": self.index}


def _save(path: Path, state: dict[str, Any]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _differences(a: Row, b: Row, compared: list[str]) -> list[str]:
    da, db = doc_of_row(a), doc_of_row(b)
    return [n for n in compared if da.get(n, da.get("content")) != db.get(n, db.get("content"))]


async def verify(src: PortableStore, dst: PortableStore, plan: FidelityPlan,
                 result: MigrateResult, agents: set[str]) -> None:
    """Read every source row back from the target and compare the fields the plan keeps.

    Agent by agent (a target may list one agent at a time), merge-joining the two ordered
    streams, so memory stays constant in the number of records."""
    compared = ["content" if f.field == "stored" else f.field
                for f in plan.fields if f.fate == "kept"]
    for agent_id in sorted(agents):
        target = rows_of(dst, agent_id)
        current: Row | None = await anext(target, None)
        async for row in rows_of(src, agent_id):
            while current is not None and cursor_of(current) < cursor_of(row):
                current = await anext(target, None)
            if current is None or cursor_of(current) != cursor_of(row):
                result.mismatches.append(f"{row.agent_id}/{row.id}: missing in the target")
                continue
            diff = _differences(row, current, compared)
            if diff:
                result.mismatches.append(f"{row.agent_id}/{row.id}: {', '.join(diff)} differ")
            result.verified += 1


async def _row_copy(src: PortableStore, dst: PortableStore, vectors_from: Any,
                    state: dict[str, Any], checkpoint: Path, result: MigrateResult, page: int,
                    total: int, progress: Callable[[int, int], None] | None) -> None:
    """Page by page through ``import_rows``; the checkpoint file follows each committed page
    and the page after it is rewritten with ``replace`` on resume."""
    on_conflict = OnConflict.REPLACE if result.resumed else OnConflict.FAIL
    after: Cursor | None = None if state["cursor"] is None else tuple(state["cursor"])
    if progress is not None:
        progress(state["done"], total)
    while not state["finished"]:
        rows = await src.export_rows(None, after, page)
        if rows:
            vectors = await vectors_from.vectors_of(rows) if vectors_from else None
            result.counts.add(await _write(dst, rows, vectors, on_conflict))
            after = cursor_of(rows[-1])
            state["cursor"], state["done"] = list(after), state["done"] + len(rows)
        state["finished"] = len(rows) < page
        _save(checkpoint, state)
        on_conflict = OnConflict.FAIL
        if progress is not None:
            progress(state["done"], total)


async def _bulk_copy(src: PortableStore, dst: BulkLoadable, vectors_from: Any, bulk: BulkState,
                     state: dict[str, Any], checkpoint: Path, result: MigrateResult, page: int,
                     total: int, progress: Callable[[int, int], None] | None) -> None:
    """Page by page through the target's bulk load, which commits each page with its cursor:
    the target's cursor, not the file's (which may be a page behind), says where to resume,
    and nothing is ever rewritten."""
    job = f"{state['from']} -> {state['to']}"
    result.load = "bulk"
    result.resumed = result.resumed or bulk.cursor is not None
    after = bulk.cursor
    state.update(bulk=True, cursor=None if after is None else list(after), done=bulk.done)
    if progress is not None:
        progress(state["done"], total)
    while True:
        rows = await src.export_rows(None, after, page)
        if rows:
            vectors = await vectors_from.vectors_of(rows) if vectors_from else None
            after = cursor_of(rows[-1])
            result.counts.add(await dst.bulk_load(job, rows, vectors, after))
            state["cursor"], state["done"] = list(after), state["done"] + len(rows)
            _save(checkpoint, state)
            if progress is not None:
                progress(state["done"], total)
        if len(rows) < page:
            return


async def migrate(source: Any, target: Any, *, source_url: str, target_url: str,
                  checkpoint: Path, dry_run: bool = False, allow_loss: set[str] | None = None,
                  reembed: bool = False, page: int = PAGE,
                  progress: Callable[[int, int], None] | None = None) -> MigrateResult:
    """Plan, refuse a lossy plan not allowed, copy every row (all states), then verify.

    Stored vectors are copied instead of re-embedded when both stores embed with the same
    embedder (and ``reembed`` is off)."""
    src, dst = portable(source), portable(target)
    started = time.perf_counter()
    scan = FieldScan()
    async for row in rows_of(src, page=page):
        scan.add(row)
    plan = plan_fidelity(public_url(source_url), public_url(target_url), src.kept_fields,
                         dst.kept_fields, scan)
    result = MigrateResult(plan)
    reuse = not reembed and same_embedder(source, target)
    if reuse:
        result.vectors = "reused"
    result.seconds["plan"] = time.perf_counter() - started
    plan.refuse_unless(allow_loss or set())
    if dry_run:
        return result
    state: dict[str, Any] = {"from": public_url(source_url), "to": public_url(target_url),
                             "cursor": None, "done": 0, "finished": False}
    if checkpoint.exists():
        saved = json.loads(checkpoint.read_text(encoding="utf-8"))
        if (saved.get("from"), saved.get("to")) != (state["from"], state["to"]):
            raise InvalidRequest(f"checkpoint {checkpoint} belongs to another migration "
                                 f"({saved.get('from')} -> {saved.get('to')})")
        state, result.resumed = saved, True
    copy_started = time.perf_counter()
    job = f"{state['from']} -> {state['to']}"
    loader = dst if isinstance(dst, BulkLoadable) and not state["finished"] else None
    bulk = None if loader is None else await loader.bulk_begin(job)
    if loader is not None and bulk is not None:
        try:
            await _bulk_copy(src, loader, source if reuse else None, bulk, state, checkpoint,
                             result, page, scan.rows, progress)
        except (Conflict, InvalidRequest):
            await loader.bulk_finish(job)  # a refusal ends the job: the table gets its index
            raise
        result.seconds["copy"] = time.perf_counter() - copy_started
        index_started = time.perf_counter()
        result.index = await loader.bulk_finish(job)
        result.seconds["index"] = time.perf_counter() - index_started
        state["finished"] = True
        _save(checkpoint, state)
    else:
        await _row_copy(src, dst, source if reuse else None, state, checkpoint, result, page,
                        scan.rows, progress)
        result.seconds["copy"] = time.perf_counter() - copy_started
    verify_started = time.perf_counter()
    await verify(src, dst, plan, result, scan.agents)
    result.seconds["verify"] = time.perf_counter() - verify_started
    return result
