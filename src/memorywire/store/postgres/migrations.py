"""Versioned schema migrations of :mod:`memorywire.store.postgres`.

Migrations are an ordered list; ``memorywire_schema_version`` holds one row per applied
step. The whole upgrade runs in one transaction under an advisory lock, so two processes
opening the same database never apply a step twice, and a failed step leaves the previous
version intact. Steps only add: data written by an older version stays readable.
"""

from __future__ import annotations

from typing import Any

import psycopg

from memorywire.embed.base import Embedder
from memorywire.errors import EmbedderMismatch, StoreCorrupt

__all__ = ["BULK_KEY", "HNSW_INDEX", "LATEST_VERSION", "MIGRATIONS", "TS_CONFIG", "migrate",
           "migration_sql"]

#: The text search configuration of the full-text index and of every query against it.
TS_CONFIG = "english"

#: The vector index (dropped and rebuilt by a bulk load, :mod:`memorywire.store.postgres.bulk`).
HNSW_INDEX = "memorywire_memories_hnsw"
#: The ``memorywire_meta`` key of a bulk load in progress (its job, cursor and count).
BULK_KEY = "bulk_load"

Conn = psycopg.AsyncConnection[dict[str, Any]]

#: An arbitrary constant for ``pg_advisory_xact_lock``: "mw" in ASCII, then a version tag.
MIGRATION_LOCK_KEY = 0x6D77_0001

# Statement lists; ``{dim}`` is the embedder dimension recorded at creation.
_V1 = [
    """CREATE TABLE IF NOT EXISTS memorywire_meta (
        key text PRIMARY KEY,
        value text NOT NULL)""",
    """CREATE TABLE memorywire_memories (
        agent_id text NOT NULL,
        id text NOT NULL,
        user_id text,
        type text NOT NULL,
        content text NOT NULL,
        content_json jsonb,
        metadata jsonb NOT NULL DEFAULT '{{}}'::jsonb,
        confidence double precision NOT NULL DEFAULT 1.0,
        source text,
        created_at bigint NOT NULL,
        updated_at bigint,
        expires_at bigint,
        deleted_at bigint,
        archived_at bigint,
        embedding vector({dim}) NOT NULL,
        PRIMARY KEY (agent_id, id))""",
    "CREATE INDEX memorywire_memories_scope ON memorywire_memories (agent_id, user_id)",
    """CREATE INDEX memorywire_memories_hnsw ON memorywire_memories
        USING hnsw (embedding vector_cosine_ops)""",
]

# v2: full-text search, recall statistics, demotion, merge provenance, per-agent row counts.
# ``tsv`` is filled by the writer (a procedure is indexed by its words, not its JSON);
# rows written by v1 are indexed from their stored text.
_V2 = [
    "ALTER TABLE memorywire_memories ADD COLUMN tsv tsvector",
    "UPDATE memorywire_memories SET tsv = to_tsvector('simple', content)",
    "CREATE INDEX memorywire_memories_tsv ON memorywire_memories USING gin (tsv)",
    "CREATE INDEX memorywire_memories_meta ON memorywire_memories USING gin (metadata)",
    "ALTER TABLE memorywire_memories ADD COLUMN last_recalled_at bigint",
    "ALTER TABLE memorywire_memories ADD COLUMN recall_count integer NOT NULL DEFAULT 0",
    """ALTER TABLE memorywire_memories
        ADD COLUMN score_factor double precision NOT NULL DEFAULT 1.0""",
    "ALTER TABLE memorywire_memories ADD COLUMN merged_into text",
    """CREATE TABLE memorywire_agent_counts (
        agent_id text PRIMARY KEY,
        rows bigint NOT NULL)""",
    """INSERT INTO memorywire_agent_counts (agent_id, rows)
        SELECT agent_id, count(*) FROM memorywire_memories GROUP BY agent_id""",
]

# v3: the full-text index stems English words and drops stop words (the ``english`` text
# search configuration), as SQLite's porter tokenizer does, so "allergies" finds "allergy".
# A row's text is re-indexed from its content; a procedure (indexed by its words, not its
# JSON) from the words its old index held, which is all the database has of them.
_V3 = [
    f"""UPDATE memorywire_memories SET tsv = CASE
        WHEN type = 'procedural' THEN
            to_tsvector('{TS_CONFIG}', array_to_string(tsvector_to_array(tsv), ' '))
        ELSE to_tsvector('{TS_CONFIG}', content) END""",
]

# v4: the export order ``(created_at, id, agent_id)``, over every agent and within one, is
# read from an index: without one every export page (a migration, its verification) sorted
# the whole table or the whole agent again, which is quadratic in the number of rows.
_V4 = [
    "CREATE INDEX memorywire_memories_export ON memorywire_memories (created_at, id, agent_id)",
    """CREATE INDEX memorywire_memories_agent_export ON memorywire_memories
        (agent_id, created_at, id)""",
]

MIGRATIONS: tuple[tuple[str, ...], ...] = (tuple(_V1), tuple(_V2), tuple(_V3), tuple(_V4))
LATEST_VERSION = len(MIGRATIONS)


def migration_sql(version: int, dim: int) -> list[str]:
    """The statements that bring the schema from ``version - 1`` to ``version``."""
    return [s.format(dim=int(dim)) for s in MIGRATIONS[version - 1]]


async def migrate(conn: Conn, embedder: Embedder, now_ms: int) -> None:
    """Bring the schema to :data:`LATEST_VERSION`; refuse a newer schema or another embedder."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS memorywire_schema_version ("
            "version integer PRIMARY KEY, applied_at bigint NOT NULL)"
        )
        cur = await conn.execute("SELECT coalesce(max(version), 0) AS v "
                                 "FROM memorywire_schema_version")
        row = await cur.fetchone()
        current = int(row["v"]) if row else 0
        if current > LATEST_VERSION:
            raise StoreCorrupt(
                f"database schema version {current} is newer than this memorywire "
                f"understands ({LATEST_VERSION}); upgrade memorywire"
            )
        if current >= 1:
            cur = await conn.execute("SELECT key, value FROM memorywire_meta")
            meta = {r["key"]: r["value"] for r in await cur.fetchall()}
            if (meta.get("embedder_name"), meta.get("embedder_dim")) != (
                embedder.name, str(embedder.dim)
            ):
                raise EmbedderMismatch(
                    f"this database holds vectors of {meta.get('embedder_name')!r} "
                    f"(dim {meta.get('embedder_dim')}), not {embedder.name!r} "
                    f"(dim {embedder.dim}); re-embed or use another database"
                )
        for version in range(current + 1, LATEST_VERSION + 1):
            for stmt in migration_sql(version, embedder.dim):
                await conn.execute(stmt)
            if version == 1:
                await conn.execute(
                    "INSERT INTO memorywire_meta (key, value) VALUES "
                    "('embedder_name', %s), ('embedder_dim', %s)",
                    (embedder.name, str(embedder.dim)),
                )
            await conn.execute(
                "INSERT INTO memorywire_schema_version (version, applied_at) VALUES (%s, %s)",
                (version, now_ms),
            )
