"""SqliteStore's side of :mod:`memorywire.store.portable`: every row out, rows in as they were.

An imported row is written with its own id, timestamps and marks in one transaction per
batch, with its vector, full-text entry, link edges and merge edge, exactly as remember and
the maintenance writes would have left it; the agent's scope version is bumped so cached
indexes are rebuilt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memorywire.core.content import embed_text, links_of
from memorywire.core.context_key import check_context, lexical_text
from memorywire.core.records import Row
from memorywire.store.portable import Cursor, ImportCounts, OnConflict, decide, export_page_sql
from memorywire.store.sqlite.contexts import put_context, stored_metadata
from memorywire.store.sqlite.db import SqliteDb, checked_vectors
from memorywire.store.sqlite.maintenance import ROW_COLS, row_of, write_row
from memorywire.store.sqlite.recalls import put_stats
from memorywire.store.sqlite.schema import agent_number, scope_token, vid
from memorywire.store.sqlite.writes import index_last

__all__ = ["export_rows", "import_rows", "vectors_of"]


def _merged_into(conn: Any, agent_id: str, id: str) -> str | None:
    got = conn.execute("SELECT dst FROM links WHERE agent_id = ? AND src = ? AND kind = 'merge'",
                       (agent_id, id)).fetchone()
    return None if got is None else str(got[0])


def export_rows(db: SqliteDb, agent_id: str | None, after: Cursor | None,
                limit: int) -> list[Row]:
    where, order, args = export_page_sql(agent_id, after, "?")
    with db.tx(durable=False) as conn:
        got = [row_of(r)[1] for r in conn.execute(
            f"SELECT {ROW_COLS} FROM memories WHERE {where} ORDER BY {order} LIMIT ?",
            [*args, limit])]
        return [Row(**{**r.__dict__, "merged_into": _merged_into(conn, r.agent_id, r.id)})
                for r in got]


def vectors_of(db: SqliteDb, rows: Sequence[Row]) -> list[Any]:
    out = []
    with db.tx(durable=False) as conn:
        for row in rows:
            rid = conn.execute("SELECT rid FROM memories WHERE agent_id = ? AND id = ?",
                               (row.agent_id, row.id)).fetchone()[0]
            number = agent_number(conn, row.agent_id, create=False) or 0
            blob = conn.execute("SELECT embedding FROM vectors WHERE vid = ?",
                                (vid(number, rid),)).fetchone()[0]
            out.append(np.frombuffer(blob, dtype=np.float32))
    return out


def _set_vector(conn: Any, row: Row, rid: int, vector: Any) -> None:
    number = agent_number(conn, row.agent_id, create=True) or 0
    conn.execute("INSERT OR REPLACE INTO vectors VALUES(?, ?)",
                 (vid(number, rid), np.ascontiguousarray(vector, dtype=np.float32).tobytes()))
    conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (rid,))
    conn.execute("INSERT INTO memories_fts(rowid, body, scope) VALUES(?, ?, ?)",
                 (rid, lexical_text(row.type, row.stored, row.metadata),
                  scope_token(row.agent_id)))


def _insert(conn: Any, row: Row, vector: Any, indexed: list[tuple[int, str, str]]) -> None:
    """A new row; its full-text entry joins ``indexed``, written after the page's other
    rows (see :func:`~memorywire.store.sqlite.writes.index_last`). A new row id has no entry
    to delete: every path that deletes a row deletes its entry."""
    meta, context = stored_metadata(row.metadata)
    rid = conn.execute(
        "INSERT INTO memories(agent_id, id, user_id, type, content, metadata, confidence, "
        "source, created_at, updated_at, expires_at, deleted_at, archived_at, demoted) "
        "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING rid",
        (row.agent_id, row.id, row.user_id, row.type.value, row.stored,
         meta, row.confidence, row.source,
         row.created_at, row.updated_at, row.expires_at, row.deleted_at, row.archived_at,
         int(row.demoted)),
    ).fetchone()[0]
    put_context(conn, rid, context)
    if row.last_recalled_at is not None or row.recall_count:
        put_stats(conn, rid, row.last_recalled_at, row.recall_count)
    number = agent_number(conn, row.agent_id, create=True) or 0
    conn.execute("INSERT OR REPLACE INTO vectors VALUES(?, ?)",
                 (vid(number, rid), np.ascontiguousarray(vector, dtype=np.float32).tobytes()))
    indexed.append((rid, lexical_text(row.type, row.stored, row.metadata),
                    scope_token(row.agent_id)))
    conn.executemany("INSERT OR IGNORE INTO links VALUES(?, ?, ?, 'link')",
                     [(row.agent_id, row.id, d) for d in links_of(row.metadata)])
    if row.merged_into is not None:
        conn.execute("INSERT OR IGNORE INTO links VALUES(?, ?, ?, 'merge')",
                     (row.agent_id, row.id, row.merged_into))


def import_rows(db: SqliteDb, rows: Sequence[Row], on_conflict: OnConflict,
                given: Sequence[Any] | None = None) -> ImportCounts:
    for row in rows:
        links_of(row.metadata)
        check_context(row.metadata)
    texts = [embed_text(r.type, r.stored) for r in rows]
    vectors: Any = given if given is not None else db.embedder.embed(texts) if rows else []
    if given is not None:
        checked_vectors(np.asarray(given, dtype=np.float32), len(rows), db.embedder.dim)
    counts = ImportCounts()
    indexed: list[tuple[int, str, str]] = []
    with db.tx() as conn:
        touched: set[str] = set()
        for row, vector in zip(rows, vectors, strict=True):
            got = conn.execute(f"SELECT {ROW_COLS} FROM memories WHERE agent_id = ? AND id = ?",
                               (row.agent_id, row.id)).fetchone()
            if not decide(got is not None, row, on_conflict):
                counts.skipped += 1
                continue
            if got is None:
                _insert(conn, row, vector, indexed)
                counts.inserted += 1
            else:
                index_last(conn, indexed)  # the entries before this row's own, as written
                rid, old = row_of(got)
                write_row(db, conn, rid, old, row, False)
                if given is not None or old.stored != row.stored:
                    _set_vector(conn, row, rid, vector)
                counts.replaced += 1
            touched.add(row.agent_id)
        index_last(conn, indexed)
        for agent_id in sorted(touched):
            db.bump(conn, agent_id)
    return counts
