"""The SqliteStore file format: DDL, opening checks and versioned migrations.

A database records its ``schema_version`` and the embedder it was built with in ``meta``. Opening
an older version migrates it in one transaction (data kept); a newer version, a foreign SQLite
database or a non-SQLite file is refused and left untouched.

Version 2 clusters what a cold scope load reads by agent. A vector's key is
``vid = agent number << 34 | rid`` (agent numbers in ``agents``), so one agent's vectors are
one contiguous range of the table's B-tree, stored in-page (a WITHOUT ROWID table would push
a 1.5 KB vector to an overflow page); a covering index holds the cached row columns. With a
thousand agents interleaved in one file, version 1 paid two random page reads per memory.

Version 3 keeps a memory's ``metadata.context`` text in ``contexts`` beside its row (see
:mod:`memorywire.store.sqlite.contexts`); a trigger drops it with the row, so every delete
path (hard forget, expiry purge) scrubs it too.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import apsw

from memorywire.embed.base import Embedder
from memorywire.errors import (
    BackendUnavailable,
    EmbedderMismatch,
    StoreCorrupt,
    UnsupportedVersion,
)

__all__ = [
    "SCHEMA_VERSION",
    "agent_number",
    "open_database",
    "scope_token",
    "vid",
    "vid_range",
]

SCHEMA_VERSION = 4
_HEADER = b"SQLite format 3\x00"

DDL = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS memories(
    rid INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL,
    id TEXT NOT NULL,
    user_id TEXT,
    type TEXT NOT NULL,
    content TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    confidence REAL NOT NULL DEFAULT 1.0,
    source TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER,
    expires_at INTEGER,
    deleted_at INTEGER,
    archived_at INTEGER,
    demoted INTEGER NOT NULL DEFAULT 0,
    last_recalled_at INTEGER,
    recall_count INTEGER NOT NULL DEFAULT 0,
    UNIQUE(agent_id, id)
);
CREATE INDEX IF NOT EXISTS memories_by_age ON memories(agent_id, created_at, id);
-- The export order over every agent (portability): without it each page sorts the table.
CREATE INDEX IF NOT EXISTS memories_by_export ON memories(created_at, id, agent_id);
CREATE INDEX IF NOT EXISTS memories_scope ON memories(
    agent_id, rid, id, user_id, type, created_at, expires_at, demoted, deleted_at, archived_at
);
CREATE TABLE IF NOT EXISTS agents(no INTEGER PRIMARY KEY, agent_id TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS vectors(vid INTEGER PRIMARY KEY, embedding BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS links(
    agent_id TEXT NOT NULL, src TEXT NOT NULL, dst TEXT NOT NULL, kind TEXT NOT NULL,
    PRIMARY KEY(agent_id, src, dst, kind)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS links_by_dst ON links(agent_id, dst);
CREATE TABLE IF NOT EXISTS scopes(agent_id TEXT PRIMARY KEY, version INTEGER NOT NULL)
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS contexts(rid INTEGER PRIMARY KEY, text TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS contexts_follow_rows AFTER DELETE ON memories BEGIN
    DELETE FROM contexts WHERE rid = old.rid;
END;
-- The recall statistics (store/sqlite/recalls.py); memories.last_recalled_at and
-- memories.recall_count are no longer read or written.
CREATE TABLE IF NOT EXISTS recalls(rid INTEGER PRIMARY KEY, at INTEGER, n INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS recalls_follow_rows AFTER DELETE ON memories BEGIN
    DELETE FROM recalls WHERE rid = old.rid;
END;
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    body, scope, content='', contentless_delete=1,
    tokenize='porter unicode61 remove_diacritics 2'
);
"""


_VID_SHIFT = 34


def vid(agent_no: int, rid: int) -> int:
    """The vectors-table key of memory ``rid`` of agent number ``agent_no``."""
    if not 0 <= rid < 1 << _VID_SHIFT:
        raise StoreCorrupt(f"row id {rid} is out of the vector key range")
    return (agent_no << _VID_SHIFT) | rid


def vid_range(agent_no: int) -> tuple[int, int]:
    """``[lo, hi)`` of the agent's vector keys; ``vid - lo`` is the memory's rid."""
    return agent_no << _VID_SHIFT, (agent_no + 1) << _VID_SHIFT


def agent_number(conn: Any, agent_id: str, *, create: bool) -> int | None:
    if create:
        conn.execute("INSERT OR IGNORE INTO agents(agent_id) VALUES(?)", (agent_id,))
    row = conn.execute("SELECT no FROM agents WHERE agent_id = ?", (agent_id,)).fetchone()
    return None if row is None else int(row[0])


def scope_token(agent_id: str) -> str:
    """The FTS5 term that restricts a full-text match to one agent's rows."""
    return "s" + hashlib.blake2b(agent_id.encode("utf-8"), digest_size=10).hexdigest()


def _check_header(path: str) -> None:
    if path == ":memory:":
        return
    p = Path(path)
    if p.is_dir():
        raise StoreCorrupt(f"{path} is a directory, not a database file")
    if p.exists():
        with p.open("rb") as fh:
            head = fh.read(len(_HEADER))
        if head and head != _HEADER:
            raise StoreCorrupt(f"{path} is not a SQLite database; left untouched")


def _load_sqlite_vec(conn: Any) -> None:
    import sqlite_vec

    conn.enable_load_extension(True)
    try:
        conn.load_extension(sqlite_vec.loadable_path())
    finally:
        conn.enable_load_extension(False)


def _migrate_1_to_2(conn: apsw.Connection) -> None:
    conn.execute(f"""
        CREATE TABLE agents(no INTEGER PRIMARY KEY, agent_id TEXT NOT NULL UNIQUE);
        INSERT INTO agents(agent_id) SELECT DISTINCT agent_id FROM memories ORDER BY agent_id;
        CREATE TABLE vectors_v2(vid INTEGER PRIMARY KEY, embedding BLOB NOT NULL);
        INSERT INTO vectors_v2
            SELECT (a.no << {_VID_SHIFT}) | v.rid, v.embedding FROM vectors v
            JOIN memories m ON m.rid = v.rid JOIN agents a ON a.agent_id = m.agent_id
            ORDER BY 1;
        DROP TABLE vectors;
        ALTER TABLE vectors_v2 RENAME TO vectors;
        UPDATE meta SET value = '2' WHERE key = 'schema_version';
    """)


def _migrate_2_to_3(conn: apsw.Connection) -> None:
    # json_set replaces the value where it stands, so the metadata keeps its key order. The
    # full-text index is left as it is: it was built from the same context text.
    conn.execute("""
        CREATE TABLE contexts(rid INTEGER PRIMARY KEY, text TEXT NOT NULL);
        INSERT INTO contexts(rid, text)
            SELECT rid, json_extract(metadata, '$.context') FROM memories
            WHERE json_type(metadata, '$.context') = 'text';
        UPDATE memories SET metadata = json_set(metadata, '$.context', json('true'))
            WHERE rid IN (SELECT rid FROM contexts);
        UPDATE meta SET value = '3' WHERE key = 'schema_version';
    """)


def _migrate_3_to_4(conn: apsw.Connection) -> None:
    # The statistics move to their own table and the columns are cleared, so no stale copy
    # is left in the row; rows never recalled get no entry (read as at NULL, n 0).
    conn.execute("""
        CREATE TABLE recalls(rid INTEGER PRIMARY KEY, at INTEGER, n INTEGER NOT NULL);
        INSERT INTO recalls(rid, at, n)
            SELECT rid, last_recalled_at, recall_count FROM memories
            WHERE last_recalled_at IS NOT NULL OR recall_count != 0;
        UPDATE memories SET last_recalled_at = NULL, recall_count = 0
            WHERE rid IN (SELECT rid FROM recalls);
        UPDATE meta SET value = '4' WHERE key = 'schema_version';
    """)


_MIGRATIONS = {1: _migrate_1_to_2, 2: _migrate_2_to_3, 3: _migrate_3_to_4}


def _create(conn: apsw.Connection, embedder: Embedder, existing: bool) -> dict[str, str]:
    if existing:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row else 0
        while version in _MIGRATIONS:
            _MIGRATIONS[version](conn)
            version += 1
    conn.execute(DDL)
    conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES('secure-delete', 1)")
    for key, value in (
        ("schema_version", str(SCHEMA_VERSION)),
        ("embedder_name", embedder.name),
        ("embedder_dim", str(embedder.dim)),
    ):
        conn.execute("INSERT OR IGNORE INTO meta VALUES(?, ?)", (key, value))
    return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}


#: The tables the first implementation (PyPI memorywire 0.2-0.5, ``sqlite-vec://`` URLs)
#: created in its store file, and which this one never creates.
FIRST_IMPLEMENTATION_TABLES = frozenset({"memories", "procedures", "episodes", "audit_log"})


def first_implementation_refusal(path: str) -> UnsupportedVersion:
    """What opening a 0.5 file as a store says: it is recognised, and the two ways in."""
    return UnsupportedVersion(
        f"{path} is a memorywire 0.5 database (the first implementation's sqlite-vec file); "
        f"this version does not open it as a store. Import it into your store with "
        f"`memorywire import --from-format memorywire-0.5 {path}` (add --store URL for "
        f"another store than the default), or convert the file in place, keeping a backup "
        f"beside it: `memorywire upgrade {path}`")


def _check_meta(path: str, meta: dict[str, str], embedder: Embedder) -> None:
    version = int(meta.get("schema_version", "0"))
    if version != SCHEMA_VERSION:
        raise StoreCorrupt(
            f"{path} has schema version {version}; this memorywire reads {SCHEMA_VERSION}"
        )
    name, dim = meta.get("embedder_name"), int(meta.get("embedder_dim", "0"))
    if name != embedder.name or dim != embedder.dim:
        raise EmbedderMismatch(
            f"{path} was built with embedder {name!r} (dim {dim}); refusing to mix in "
            f"vectors of {embedder.name!r} (dim {embedder.dim}). Open it with the "
            "original embedder, or re-embed into a new store."
        )


def open_database(path: str, embedder: Embedder, busy_timeout_ms: int) -> apsw.Connection:
    """Open (creating or migrating) a store file; every failure is a memorywire error."""
    _check_header(path)
    try:
        conn = apsw.Connection(path)
    except apsw.Error as exc:
        raise BackendUnavailable(f"cannot open {path}: {exc}") from exc
    try:
        conn.setbusytimeout(busy_timeout_ms)
        _load_sqlite_vec(conn)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        if "meta" not in tables and tables >= FIRST_IMPLEMENTATION_TABLES:
            raise first_implementation_refusal(path)
        if tables and "meta" not in tables:
            raise StoreCorrupt(f"{path} is a SQLite database but not a memorywire store")
        if tables:
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is not None and int(row[0]) > SCHEMA_VERSION:
                raise StoreCorrupt(f"{path} has schema version {row[0]}; this memorywire reads "
                                   f"up to {SCHEMA_VERSION}; left untouched")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA secure_delete=ON")
        conn.execute("BEGIN IMMEDIATE")
        try:
            meta = _create(conn, embedder, existing=bool(tables))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        _check_meta(path, meta, embedder)
    except (apsw.NotADBError, apsw.CorruptError) as exc:
        conn.close()
        raise StoreCorrupt(f"{path} is corrupt: {exc}") from exc
    except apsw.Error as exc:
        conn.close()
        raise BackendUnavailable(f"cannot open {path}: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return conn
