"""PostgresStore's bulk load: an empty table filled by binary ``COPY``, the HNSW index built once.

Inserting a row into a table with an HNSW index costs PostgreSQL about 3 ms of CPU (the graph
is searched and relinked on every insert), which made a 100k migration run at 46 rows/s. Into
an *empty* table the index is dropped first and built once at the end, from the whole table,
which pgvector does an order of magnitude faster when its graph fits ``maintenance_work_mem``.

The job's state lives in the target, in ``memorywire_meta`` under :data:`BULK_KEY`
(``{"job", "cursor", "done"}``), and every page updates it in the transaction that inserts the
page: a page and its checkpoint commit together or not at all, so a load killed at any point
resumes after the last committed page with nothing written twice and nothing missing. While
the key exists the table has no HNSW index: searches run exact (a sequential scan), which
gives the right answer over the rows loaded so far, only slower; opening such a store logs a
warning naming the job (:class:`memorywire.store.postgres.db.PgDb`).
"""

from __future__ import annotations

import json
import logging
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.types import TypeInfo

from memorywire.core.content import embed_text, links_of
from memorywire.core.context_key import check_context, lexical_text
from memorywire.core.records import Row
from memorywire.core.scoring import DEMOTE_FACTOR
from memorywire.errors import Conflict, InvalidRequest
from memorywire.store.portable import BulkState, Cursor, ImportCounts, OnConflict, decide
from memorywire.store.postgres.db import Conn, PgDb
from memorywire.store.postgres.migrations import BULK_KEY, HNSW_INDEX, TS_CONFIG
from memorywire.store.postgres.sql import TABLE, reject_nul
from memorywire.store.postgres.writes import write_row

__all__ = ["BulkIndex", "begin", "finish", "index_memory_bytes", "load"]

log = logging.getLogger(__name__)

#: ``pg_advisory_xact_lock`` key: "mw" in ASCII, then a tag for bulk loads.
_LOCK = 0x6D77_0B01
#: The most ``maintenance_work_mem`` a build asks for unless told otherwise (4 GiB).
MAX_INDEX_MEMORY = 4 << 30

_STAGE = "memorywire_bulk_stage"
_COLS = ("agent_id", "id", "user_id", "type", "content", "metadata", "confidence", "source",
         "created_at", "updated_at", "expires_at", "deleted_at", "archived_at", "score_factor",
         "last_recalled_at", "recall_count", "merged_into", "embedding", "lexical")
_TYPES = ["text", "text", "text", "text", "text", "text", "float8", "text", "int8", "int8",
          "int8", "int8", "int8", "float8", "int8", "int4", "text"]


class _Vec(bytes):
    """A vector already in pgvector's binary wire format."""


def _vec_dumper(oid: int) -> type[Dumper]:
    class VectorDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj: Any) -> bytes:
            return bytes(obj)

    VectorDumper.oid = oid
    return VectorDumper


def _binary(vector: Any) -> _Vec:
    """pgvector's binary ``vector``: uint16 dim, uint16 unused, dim big-endian float4."""
    v = np.asarray(vector, dtype=np.float32)
    return _Vec(struct.pack(">HH", len(v), 0) + v.astype(">f4").tobytes())


@dataclass
class BulkIndex:
    """How the deferred index was built."""

    seconds: float
    rows: int
    maintenance_work_mem_mb: int
    parallel_workers: int  #: ``max_parallel_maintenance_workers`` during the build
    notices: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"seconds": round(self.seconds, 2), "rows": self.rows,
                "maintenance_work_mem_mb": self.maintenance_work_mem_mb,
                "parallel_workers": self.parallel_workers, "notices": self.notices}


async def _state(conn: Conn, *, lock: bool = False) -> dict[str, Any] | None:
    """The job's state; ``lock`` holds its row to the end of the transaction, so two
    processes loading the same job take turns and neither count is lost."""
    cur = await conn.execute("SELECT value FROM memorywire_meta WHERE key = %s"
                             + (" FOR UPDATE" if lock else ""), (BULK_KEY,))
    got = await cur.fetchone()
    return None if got is None else dict(json.loads(got["value"]))


async def begin(db: PgDb, job: str) -> BulkState | None:
    """Start bulk job ``job`` on an empty table (dropping the HNSW index), or find it to
    resume; ``None`` when the table holds rows and no bulk load, so rows go the normal way.
    A table mid-way through another job is refused: its rows are that job's."""
    async with db.tx() as conn:
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        state = await _state(conn)
        if state is not None:
            if state["job"] != job:
                raise InvalidRequest(
                    f"the target is in the middle of another bulk load ({state['job']}); "
                    "resume that migration, or use another database")
            cursor = state["cursor"]
            return BulkState(None if cursor is None else (int(cursor[0]), str(cursor[1]),
                                                          str(cursor[2])), int(state["done"]))
        cur = await conn.execute(f"SELECT EXISTS (SELECT 1 FROM {TABLE}) AS any")
        got = await cur.fetchone()
        if got is not None and got["any"]:
            return None
        await conn.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")
        await conn.execute(
            "INSERT INTO memorywire_meta (key, value) VALUES (%s, %s)",
            (BULK_KEY, json.dumps({"job": job, "cursor": None, "done": 0})))
    return BulkState(None, 0)


async def load(db: PgDb, job: str, rows: Sequence[Row], vectors: Sequence[Any] | None,
               cursor: Cursor, on_conflict: OnConflict = OnConflict.FAIL) -> ImportCounts:
    """Insert ``rows`` and move the job's checkpoint to ``cursor``, in one transaction. A row
    whose id exists (loaded earlier by the same job: the table started empty) is refused
    (``Conflict``, nothing of the page kept), skipped or rewritten, per ``on_conflict``."""
    for row in rows:
        links_of(row.metadata)
        reject_nul(row.stored, "content")
        reject_nul(json.dumps(row.metadata), "metadata")
        check_context(row.metadata)
    if vectors is None and rows:
        vectors = await db.embed([embed_text(r.type, r.stored) for r in rows])
    dim = db.embedder.dim
    if vectors is not None and any(len(v) != dim for v in vectors):
        raise InvalidRequest(f"given vectors do not have the store's dimension {dim}")
    async with db.tx() as conn:
        state = await _state(conn, lock=True)
        if state is None or state["job"] != job:
            raise Conflict(f"bulk load {job!r} is not in progress in the target")
        counts = ImportCounts()
        if rows:
            assert vectors is not None
            counts = await _copy_page(db, conn, rows, vectors, dim, on_conflict)
        await conn.execute(
            "UPDATE memorywire_meta SET value = %s WHERE key = %s",
            (json.dumps({"job": job, "cursor": list(cursor),
                         "done": int(state["done"]) + len(rows)}), BULK_KEY))
    return counts


async def _copy_page(db: PgDb, conn: Conn, rows: Sequence[Row], vectors: Sequence[Any],
                     dim: int, on_conflict: OnConflict) -> ImportCounts:
    info = await TypeInfo.fetch(conn, "vector")
    if info is None:
        raise InvalidRequest("the vector extension is not installed in the target")
    # Dropped at commit: nothing outlives the transaction in the server session, which a
    # pooler in transaction mode (PgBouncer) hands to other clients afterwards.
    await conn.execute(
        f"CREATE TEMP TABLE IF NOT EXISTS {_STAGE} (agent_id text, id text, user_id text, "
        "type text, content text, metadata text, confidence float8, source text, "
        "created_at int8, updated_at int8, expires_at int8, deleted_at int8, "
        "archived_at int8, score_factor float8, last_recalled_at int8, recall_count int4, "
        f"merged_into text, embedding vector({dim}), lexical text) ON COMMIT DROP")
    async with conn.cursor() as cur:
        cur.adapters.register_dumper(_Vec, _vec_dumper(info.oid))
        async with cur.copy(
                f"COPY {_STAGE} ({', '.join(_COLS)}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types([*_TYPES, info.oid, "text"])
            for row, vector in zip(rows, vectors, strict=True):
                await copy.write_row((
                    row.agent_id, row.id, row.user_id, row.type.value, row.stored,
                    json.dumps(row.metadata), row.confidence, row.source, row.created_at,
                    row.updated_at, row.expires_at, row.deleted_at, row.archived_at,
                    DEMOTE_FACTOR if row.demoted else 1.0, row.last_recalled_at,
                    row.recall_count, row.merged_into, _binary(vector),
                    lexical_text(row.type, row.stored, row.metadata)))
    cols = ", ".join(_COLS[:-1])
    picked = cols.replace("metadata", "metadata::jsonb")
    cur = await conn.execute(
        f"INSERT INTO {TABLE} ({cols}, tsv) SELECT {picked}, "
        f"to_tsvector('{TS_CONFIG}', lexical) FROM {_STAGE} "
        "ON CONFLICT (agent_id, id) DO NOTHING RETURNING agent_id, id")
    inserted = [(r["agent_id"], r["id"]) for r in await cur.fetchall()]
    added: dict[str, int] = {}
    for agent_id, _ in inserted:
        added[agent_id] = added.get(agent_id, 0) + 1
    for agent_id, n in sorted(added.items()):
        await conn.execute(
            "INSERT INTO memorywire_agent_counts (agent_id, rows) VALUES (%s, %s) "
            "ON CONFLICT (agent_id) DO UPDATE "
            "SET rows = memorywire_agent_counts.rows + EXCLUDED.rows", (agent_id, n))
    counts = ImportCounts(inserted=len(inserted))
    new = set(inserted)
    for row, vector in zip(rows, vectors, strict=True):
        if (row.agent_id, row.id) in new:
            new.discard((row.agent_id, row.id))  # a second row with that id is a conflict
        elif decide(True, row, on_conflict):  # raises Conflict for ``fail``
            await write_row(db, conn, row, True, vector)
            counts.replaced += 1
        else:
            counts.skipped += 1
    return counts


def index_memory_bytes(rows: int, dim: int, ceiling: int = MAX_INDEX_MEMORY) -> int:
    """``maintenance_work_mem`` for an HNSW build over ``rows`` vectors, so the graph fits:
    each element holds its vector and, at ``m = 16``, about 0.6 KB of neighbour lists and
    headers (a generous bound); at least 64 MiB, at most ``ceiling``."""
    need = int(rows * (dim * 4 + 640) * 1.2)
    return max(64 << 20, min(need, ceiling))


async def finish(db: PgDb, job: str, *, parallel_workers: int | None = None,
                 memory_ceiling: int = MAX_INDEX_MEMORY) -> BulkIndex:
    """Build the HNSW index once over the loaded table and end the job, in one transaction
    (a build killed half-way leaves the job to resume and build again). The build's
    notices (pgvector says when its graph no longer fits in memory) are kept."""
    notices: list[str] = []
    async with db.tx() as conn:
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        state = await _state(conn)
        if state is None or state["job"] != job:
            raise Conflict(f"bulk load {job!r} is not in progress in the target")
        cur = await conn.execute(f"SELECT count(*) AS n FROM {TABLE}")
        got = await cur.fetchone()
        rows = int(got["n"]) if got else 0
        memory = index_memory_bytes(rows, db.embedder.dim, memory_ceiling)
        mb = memory >> 20
        await conn.execute(f"SET LOCAL maintenance_work_mem = '{mb}MB'")
        if parallel_workers is not None:
            await conn.execute("SELECT set_config('max_parallel_maintenance_workers', %s, true)",
                               (str(max(0, int(parallel_workers))),))
        cur = await conn.execute("SELECT current_setting('max_parallel_maintenance_workers') "
                                 "AS w")
        got = await cur.fetchone()
        workers = int(got["w"]) if got else 0

        def keep(diag: psycopg.errors.Diagnostic) -> None:
            notices.append(str(diag.message_primary))

        conn.add_notice_handler(keep)
        started = time.perf_counter()
        try:
            await conn.execute(f"CREATE INDEX IF NOT EXISTS {HNSW_INDEX} ON {TABLE} "
                               "USING hnsw (embedding vector_cosine_ops)")
        finally:
            conn.remove_notice_handler(keep)
        seconds = time.perf_counter() - started
        await conn.execute("DELETE FROM memorywire_meta WHERE key = %s", (BULK_KEY,))
    async with db.tx() as conn:
        await conn.execute(f"ANALYZE {TABLE}")
    for notice in notices:
        log.warning("building %s: %s", HNSW_INDEX, notice)
    return BulkIndex(seconds, rows, mb, workers, notices)
