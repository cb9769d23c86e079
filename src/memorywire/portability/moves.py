"""export and import as library functions, streaming a page of rows at a time.

Memory stays constant in the number of records: rows are read in ``(created_at, id, agent_id)``
pages through :class:`memorywire.store.portable.PortableStore`; an import reads its dump
twice (verify and plan, then write), never whole. ``migrate`` is in
:mod:`memorywire.portability.migration`.
"""

from __future__ import annotations

import gzip
import io
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from functools import partial
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

import anyio

from memorywire.core.records import Row
from memorywire.errors import CapabilityMissing, Conflict, InvalidRequest
from memorywire.portability.dump import DumpReader, DumpWriter, open_dump
from memorywire.portability.dump_rules import DumpLimits, LineRules, Scope
from memorywire.portability.governed import (
    history_of,
    pending_docs,
    record_import,
    require_governance,
    restage,
    restore_history,
    split,
)
from memorywire.portability.plan import FidelityPlan, FieldScan, plan_fidelity
from memorywire.store.portable import (
    ALL_FIELDS,
    BulkLoadable,
    Cursor,
    ImportCounts,
    OnConflict,
    PortableStore,
    VectorPortable,
    cursor_of,
)

__all__ = ["DumpImportCounts", "dump_chunks", "export_dump", "import_dump", "portable",
           "public_url", "rows_of", "same_embedder"]

PAGE = 500


def public_url(url: str) -> str:
    """``url`` without its password (a dump or report never carries a secret)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def portable(store: Any) -> PortableStore:
    if not isinstance(store, PortableStore):
        raise CapabilityMissing(f"store {getattr(store, 'name', store)!r} cannot export or "
                                "import rows (it does not implement PortableStore)")
    return store


async def rows_of(store: PortableStore, agent_id: str | None = None,
                  after: Cursor | None = None, page: int = PAGE) -> AsyncIterator[Row]:
    while True:
        rows = await store.export_rows(agent_id, after, page)
        for row in rows:
            yield row
        if len(rows) < page:
            return
        after = cursor_of(rows[-1])


def _wanted(row: Row, user_id: str | None, since: int | None, include_forgotten: bool) -> bool:
    if user_id is not None and row.user_id != user_id:
        return False
    if not include_forgotten and (row.deleted_at is not None or row.archived_at is not None):
        return False
    if since is not None:
        changed = max(t for t in (row.created_at, row.updated_at, row.deleted_at,
                                  row.archived_at) if t is not None)
        return changed >= since
    return True


def same_embedder(source: Any, target: Any) -> bool:
    """Whether ``target`` can take ``source``'s stored vectors as its own."""
    return (isinstance(source, VectorPortable) and isinstance(target, VectorPortable)
            and source.embedder.name == target.embedder.name
            and source.embedder.dim == target.embedder.dim)


async def dump_chunks(store: Any, *, url: str, agent_id: str | None = None,
                      user_id: str | None = None, since: int | None = None,
                      include_forgotten: bool = False, include_vectors: bool = False,
                      include_history: bool = False, include_pending: bool = False,
                      page: int = PAGE, scope: Scope | None = None) -> AsyncIterator[bytes]:
    """The dump's lines (uncompressed), a page at a time: what a file export and a streamed
    HTTP export both write. A governed ``store`` is read through its inner store; its
    governance supplies the history and pending items when asked for (an ungoverned one
    answers ``capability_missing``). ``scope`` keeps only the records and pending items of
    the agents and users it allows (a scoped token's export)."""
    store, gov = split(store)
    if include_history:
        require_governance(gov, "include_history")
    if include_pending:
        require_governance(gov, "include_pending")
    src = portable(store)
    if include_vectors and not isinstance(store, VectorPortable):
        raise CapabilityMissing(f"store {getattr(store, 'name', store)!r} cannot hand out its "
                                "vectors; export without include_vectors")
    embedder = getattr(store, "embedder", None)
    header = {
        "source": public_url(url), "store": getattr(store, "name", "?"),
        "capabilities": sorted(str(c) for c in getattr(store, "capabilities", ())),
        "kept_fields": sorted(src.kept_fields),
        "embedder": None if embedder is None else {"id": embedder.name, "dim": embedder.dim},
        "vectors": include_vectors, "created_at": int(time.time() * 1000),
        "selection": {"agent_id": agent_id, "user_id": user_id, "since": since,
                      "include_forgotten": include_forgotten},
    }
    # Only when asked for, so a dump without them is what it was before they existed.
    header |= {k: True for k, v in (("history", include_history),
                                    ("pending", include_pending)) if v}
    buffer = io.BytesIO()
    writer = DumpWriter(buffer, header, gzip_it=False)
    after: Cursor | None = None
    while True:
        rows = await src.export_rows(agent_id, after, page)
        picked = [r for r in rows if _wanted(r, user_id, since, include_forgotten)
                  and (scope is None or scope(r.agent_id, r.user_id))]
        vectors: list[Any] = [None] * len(picked)
        if include_vectors and picked:
            assert isinstance(store, VectorPortable)
            vectors = await store.vectors_of(picked)
        for row, vector in zip(picked, vectors, strict=True):
            history = await history_of(gov, row) if include_history and gov else None
            writer.write(row, vector, None if embedder is None else embedder.name, history)
        if len(rows) < page:
            break
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        after = cursor_of(rows[-1])
    if include_pending and gov is not None:
        for item in await pending_docs(gov, agent_id, user_id):
            if scope is None or scope(item["agent_id"], item["user_id"]):
                writer.write_pending(item)
    writer.close()
    yield buffer.getvalue()


async def export_dump(store: Any, out: IO[bytes], *, url: str, agent_id: str | None = None,
                      user_id: str | None = None, since: int | None = None,
                      include_forgotten: bool = False, include_vectors: bool = False,
                      include_history: bool = False, include_pending: bool = False,
                      gzip_it: bool = False, page: int = PAGE,
                      progress: Callable[[int, int | None], None] | None = None) -> int:
    """Write a dump of the selected rows to ``out``; returns the number of records.
    ``progress(done, None)`` follows each page (the total is not known before the end)."""
    sink: IO[bytes] = out
    if gzip_it:
        sink = gzip.GzipFile(fileobj=out, mode="wb", mtime=0)  # type: ignore[assignment]
    lines = pending = 0
    if progress is not None:
        progress(0, None)
    async for chunk in dump_chunks(store, url=url, agent_id=agent_id, user_id=user_id,
                                   since=since, include_forgotten=include_forgotten,
                                   include_vectors=include_vectors,
                                   include_history=include_history,
                                   include_pending=include_pending, page=page):
        if progress is not None and lines:
            progress(lines - 1, None)  # the pages before this one, less the header
        sink.write(chunk)
        lines += chunk.count(b"\n")  # a JSON line holds no raw newline
        # A pending line's first key is its kind (sorted keys), so it starts like this.
        pending += chunk.count(b'\n{"kind":"pending"') + chunk.startswith(b'{"kind":"pending"')
    if progress is not None:
        progress(lines - 2 - pending, lines - 2 - pending)
    if sink is not out:
        sink.close()
    out.flush()
    return lines - 2 - pending  # the header and the footer


async def _write(dst: PortableStore, rows: list[Row], vectors: list[Any] | None,
                 on_conflict: OnConflict) -> ImportCounts:
    if vectors is not None:
        assert isinstance(dst, VectorPortable)
        return await dst.import_rows(rows, on_conflict, vectors=vectors)
    return await dst.import_rows(rows, on_conflict)


@dataclass
class DumpImportCounts(ImportCounts):
    """An import's counts, with what it restored into the target's governance."""

    history: int = 0
    pending: int = 0
    pending_skipped: int = 0
    #: ``rows`` (``import_rows`` page by page) or ``bulk`` (an empty target's bulk load).
    load: str = "rows"
    #: Why a target that can bulk-load did not, when that was a choice (governance).
    load_note: str | None = None
    #: How a bulk load built what it deferred, else ``None``.
    index: dict[str, Any] | None = None
    #: With ``skip_invalid``: how many lines were left out, and the first of them.
    invalid: LineRules | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "inserted": self.inserted, "replaced": self.replaced, "skipped": self.skipped,
            "history": self.history, "pending": self.pending,
            "pending_skipped": self.pending_skipped, "load": self.load}
        if self.load_note is not None:
            out["load_note"] = self.load_note
        if self.index is not None:
            out["index"] = self.index
        if self.invalid is not None:
            out["skipped_invalid"] = self.invalid.skipped_count
            out["invalid"] = [s.to_json() for s in self.invalid.skipped]
        return out


async def import_dump(store: Any, path: str, *, on_conflict: OnConflict = OnConflict.FAIL,
                      allow_loss: set[str] | None = None, reembed: bool = False,
                      page: int = PAGE,
                      progress: Callable[[int, int], None] | None = None,
                      limits: DumpLimits | None = None, skip_invalid: bool = False,
                      scope: Scope | None = None,
                      ) -> tuple[FidelityPlan, DumpImportCounts]:
    """Verify the whole dump and plan first (nothing is written from a bad dump), then
    import it page by page. The dump's vectors are reused when every record carries one,
    the target takes vectors and embeds with the same embedder, and ``reembed`` is off.
    ``progress(done, total)`` follows each page written.

    Every line is held to :mod:`memorywire.portability.dump_rules` within ``limits``: the
    first bad record refuses the dump, or, with ``skip_invalid``, every bad one is left out
    and reported (``counts.invalid``); a record or pending item outside ``scope`` refuses it.
    The verify pass runs in a worker thread, so a large dump does not hold the event loop.

    A governed ``store`` takes the rows into its inner store, records the import in its
    audit log, and restores the dump's revision history and pending approvals there; an
    ungoverned one loses them (the plan's ``history`` and ``pending``)."""
    store, gov = split(store)
    dst = portable(store)
    limits = limits or DumpLimits()
    first = LineRules(limits, skip_invalid=skip_invalid, scope=scope)
    seen = await anyio.to_thread.run_sync(partial(_verify_pass, path, first))
    scan, digest, source, embedder = seen.scan, seen.digest, seen.source, seen.embedder
    extras = {}
    if seen.history is not None:
        extras["history"] = (seen.history, gov is not None,
                             "the target has no governance: no audit log to hold it")
    if seen.pending is not None:
        extras["pending"] = (seen.pending, gov is not None,
                             "the target has no governance: no approval queue")
    plan = plan_fidelity(source, getattr(store, "name", "?"), seen.kept, dst.kept_fields, scan,
                         extras=extras)
    plan.refuse_unless(allow_loss or set())
    reuse = (not reembed and seen.all_vectors and isinstance(store, VectorPortable)
             and (embedder.get("id"), embedder.get("dim"))
             == (store.embedder.name, store.embedder.dim))
    counts = DumpImportCounts(invalid=first if skip_invalid else None)
    job = f"import of dump {digest}"
    loader = dst if isinstance(dst, BulkLoadable) else None
    if loader is not None and gov is not None:
        # History and the audit entry of a page are written after the page, outside its
        # transaction; a resumed bulk load skips committed pages, so it could skip those.
        loader = None
        counts.load_note = ("governed target: rows are imported page by page (no bulk "
                            "load), so each page's audit entry and history follow it")
    bulk = None if loader is None else await loader.bulk_begin(job)
    if bulk is not None:
        counts.load = "bulk"
    skip_first = 0 if bulk is None else bulk.done

    async def flush(batch: list[Row], vectors: list[Any],
                    histories: list[list[dict[str, Any]] | None]) -> None:
        nonlocal skip_first
        if loader is not None and bulk is not None:
            # The job's count says how many dump records a killed run committed already.
            drop = min(skip_first, len(batch))
            skip_first -= drop
            batch, vectors = batch[drop:], vectors[drop:]
            if batch:
                try:
                    counts.add(await loader.bulk_load(job, batch, vectors if reuse else None,
                                                      cursor_of(batch[-1]), on_conflict))
                except (Conflict, InvalidRequest):
                    await loader.bulk_finish(job)  # a refusal ends the job (index built)
                    raise
            return
        wrote = await _write(dst, batch, vectors if reuse else None, on_conflict)
        counts.add(wrote)
        if gov is None:
            return
        for row, history in zip(batch, histories, strict=True):
            if history:
                counts.history += await restore_history(gov, row, history, source)
        if wrote.inserted or wrote.replaced:  # after the history, so it reads in order
            await record_import(gov, batch, source)

    done = 0
    if progress is not None:
        progress(done, scan.rows)
    again = LineRules(limits, scope=scope, skip_lines=first.skipped_lines, check_repeats=False)
    with open_dump(path) as stream:
        reader = DumpReader(stream, again)
        batch: list[Row] = []
        vectors: list[Any] = []
        histories: list[list[dict[str, Any]] | None] = []
        for entry in reader.entries():
            batch.append(entry.row)
            vectors.append(entry.vector)
            histories.append(entry.history)
            if len(batch) >= page:
                await flush(batch, vectors, histories)
                done += len(batch)
                batch, vectors, histories = [], [], []
                if progress is not None:
                    progress(done, scan.rows)
        if batch:
            await flush(batch, vectors, histories)
            done += len(batch)
        if progress is not None:
            progress(done, scan.rows)
        if loader is not None and bulk is not None:
            counts.index = await loader.bulk_finish(job)
        if gov is not None and reader.pending:
            counts.pending, counts.pending_skipped = await restage(
                gov, reader.pending, source, skip_conflicts=on_conflict is not OnConflict.FAIL)
    return plan, counts


@dataclass
class _Verified:
    """What the verify pass learnt about a dump."""

    scan: FieldScan
    digest: str
    kept: frozenset[str]
    source: str
    embedder: dict[str, Any]
    all_vectors: bool
    #: Records carrying a history, when the header says the dump carries them.
    history: int | None
    #: Pending lines kept, when the dump carries any.
    pending: int | None


def _verify_pass(path: str, rules: LineRules) -> _Verified:
    """Read the whole dump once (digests, rules, the fields it uses), writing nothing."""
    scan = FieldScan()
    with open_dump(path) as stream:
        reader = DumpReader(stream, rules)
        all_vectors = True
        with_history = 0
        for entry in reader.entries():
            scan.add(entry.row)
            all_vectors = all_vectors and entry.vector is not None
            with_history += bool(entry.history)
        header = reader.header
        return _Verified(
            scan, str(reader.footer.get("digest")),
            frozenset(header.get("kept_fields") or ALL_FIELDS), str(header.get("source")),
            header.get("embedder") or {}, all_vectors,
            with_history if header.get("history") else None,
            len(reader.pending) if header.get("pending") or reader.pending else None)
