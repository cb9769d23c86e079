"""SqliteStore's remember: one batch embedded together and written in one transaction.

A retry of a live id answers from the stored row; an id whose row is no longer live is
revived in place (see :func:`memorywire.core.records.remember_action`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memorywire.core.content import (
    content_to_storage,
    embed_text,
    fold_request,
    links_of,
)
from memorywire.core.context_key import lexical_text
from memorywire.core.ids import new_id
from memorywire.core.records import RememberAction, new_row, remember_action
from memorywire.embed.base import Vectors
from memorywire.store._vector_cache import CachedRow
from memorywire.store.sqlite.contexts import put_context, stored_metadata
from memorywire.store.sqlite.db import SqliteDb
from memorywire.store.sqlite.maintenance import ROW_COLS, row_of, write_row
from memorywire.store.sqlite.schema import agent_number, scope_token, vid
from memorywire.wire.models import RememberRequest, RememberResponse

__all__ = ["embed_requests", "index_last", "remember_many"]


def remember_many(db: SqliteDb, reqs: Sequence[RememberRequest],
                  given: Vectors | None = None) -> list[RememberResponse]:
    reqs = [fold_request(r) for r in reqs]
    prepared = [(r, content_to_storage(r.type, r.content)) for r in reqs]
    if not prepared:
        return []
    links = [links_of(r.metadata) for r in reqs]
    # Everything that needs no database happens before the write lock is taken.
    texts = [embed_text(r.type, s) for r, s in prepared]
    keys = [lexical_text(r.type, s, r.metadata) for r, s in prepared]
    metas = [stored_metadata(r.metadata) for r in reqs]
    tokens = {a: scope_token(a) for a in {r.agent_id for r in reqs}}
    vectors = given if given is not None else db.embedder.embed(texts)
    blobs = [np.ascontiguousarray(v, dtype=np.float32).tobytes() for v in vectors]
    out: list[RememberResponse] = []
    # The new rows' full-text entries, written after every other row of the batch: see
    # index_last.
    indexed: list[tuple[int, str, str]] = []
    with db.tx() as conn:
        now = db.clock.now_ms()
        added: dict[str, list[CachedRow]] = {}
        revived: set[str] = set()
        numbers = {a: agent_number(conn, a, create=True) or 0 for a in tokens}
        scopes = {a: (numbers[a], tokens[a]) for a in tokens}
        # New rows wait here (position, memory id) and go in a few statements per run of
        # them (see _insert_new); any read of the table flushes them first.
        pending: list[tuple[int, str]] = []

        def flush() -> None:
            _insert_new(conn, pending, prepared, metas, links, keys, blobs, vectors, now,
                        scopes, indexed, added)
            pending.clear()

        for i, (r, stored) in enumerate(prepared):
            if r.id is not None:
                flush()  # the lookup must see this batch's earlier rows (a repeated id)
                got = conn.execute(f"SELECT {ROW_COLS} FROM memories WHERE agent_id = ? AND "
                                   "id = ?", (r.agent_id, r.id)).fetchone()
                if got is not None:
                    rid, old = row_of(got)
                    action = remember_action(old, r, stored, now)
                    if action is RememberAction.REPLAY:
                        out.append(RememberResponse(id=r.id, stored_at=old.created_at,
                                                    stores=[db.name], pending_approval=False))
                        continue
                    # A dead row revived in place: same rid, the new write's every field. The
                    # batch's entries so far go in first, so this row's own come after them.
                    index_last(conn, indexed)
                    write_row(db, conn, rid, old, new_row(r, r.id, stored, now), False)
                    conn.execute("INSERT OR REPLACE INTO vectors VALUES(?, ?)",
                                 (vid(numbers[r.agent_id], rid), blobs[i]))
                    conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (rid,))
                    conn.execute("INSERT INTO memories_fts(rowid, body, scope) VALUES(?, ?, ?)",
                                 (rid, keys[i], tokens[r.agent_id]))
                    revived.add(r.agent_id)
                    out.append(RememberResponse(id=r.id, stored_at=now, stores=[db.name],
                                                pending_approval=False))
                    continue
            mid = r.id or new_id(now)
            pending.append((i, mid))
            out.append(RememberResponse(id=mid, stored_at=now, stores=[db.name],
                                        pending_approval=False))
        flush()
        index_last(conn, indexed)
        for agent_id, rows in added.items():
            if agent_id not in revived:
                db.append_on_commit(conn, agent_id, rows)
        for agent_id in revived:
            db.bump(conn, agent_id)
    return out


_INSERT = ("INSERT INTO memories(agent_id, id, user_id, type, content, metadata, confidence, "
           "source, created_at, expires_at) VALUES(?,?,?,?,?,?,?,?,?,?) RETURNING rid")


def _insert_new(conn: Any, pending: Sequence[tuple[int, str]],
                prepared: Sequence[tuple[RememberRequest, str]],
                metas: Sequence[tuple[str, str | None]], links: Sequence[list[str]],
                keys: Sequence[str], blobs: Sequence[bytes], vectors: Vectors, now: int,
                scopes: dict[str, tuple[int, str]], indexed: list[tuple[int, str, str]],
                added: dict[str, list[CachedRow]]) -> None:
    """Insert the new rows ``pending`` (position in the batch, memory id): their ``memories``
    rows in one ``executemany`` (the rids it returns, in order, are those one statement per
    row would get), then their vectors in another, then contexts and links, their
    full-text entries queued on ``indexed``. Every table ends up holding what a row-by-row
    insert left; only the Python-to-SQLite round trips per row are fewer."""
    if not pending:
        return
    got = conn.executemany(_INSERT, [
        (r.agent_id, mid, r.user_id, r.type.value, stored, metas[i][0], r.confidence,
         r.source, now, r.expires_at)
        for i, mid in pending for r, stored in (prepared[i],)])
    rids = [row[0] for row in got]
    assert len(rids) == len(pending), "an insert answered no rid"
    conn.executemany("INSERT INTO vectors VALUES(?, ?)", [
        (vid(scopes[prepared[i][0].agent_id][0], rid), blobs[i])
        for (i, _), rid in zip(pending, rids, strict=True)])
    for (i, mid), rid in zip(pending, rids, strict=True):
        r = prepared[i][0]
        if metas[i][1] is not None:
            put_context(conn, rid, metas[i][1])
        indexed.append((rid, keys[i], scopes[r.agent_id][1]))
        if links[i]:
            conn.executemany("INSERT OR IGNORE INTO links VALUES(?, ?, ?, 'link')",
                             [(r.agent_id, mid, dst) for dst in links[i]])
        added.setdefault(r.agent_id, []).append(CachedRow(
            rid, mid, r.user_id, r.type, now, r.expires_at, False, vectors[i]))


def index_last(conn: Any, indexed: list[tuple[int, str, str]]) -> None:
    """Write (and forget) the full-text entries of ``indexed`` in one go.

    FTS5 keeps a transaction's new entries in memory and writes them out as one segment at
    commit, unless a statement savepoint comes first: FTS5 flushes its pending entries at
    every savepoint, and SQLite opens one for each statement that may abort half-way and
    writes several b-trees, such as the ``INSERT INTO memories`` of the next row (a unique
    index). Interleaved, every row became its own tiny segment and automerge rewrote them
    over and over: a turn carrying a 2,000-character reply cost about twice as much to write
    (docs/benchmarks.md, ingest19). The entries are the same, so is every ranking."""
    if indexed:
        conn.executemany("INSERT INTO memories_fts(rowid, body, scope) VALUES(?, ?, ?)",
                         indexed)
        indexed.clear()


def embed_requests(db: SqliteDb, reqs: Sequence[RememberRequest]) -> Vectors:
    """The vectors :func:`remember_many` would compute for ``reqs``: computed before the
    write so the conflict scan can compare them too, then passed to it (no second call)."""
    reqs = [fold_request(r) for r in reqs]
    return db.embedder.embed([embed_text(r.type, content_to_storage(r.type, r.content))
                              for r in reqs])
