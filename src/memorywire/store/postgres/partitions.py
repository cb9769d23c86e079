"""The memories table partitioned by agent: every scoped query reads one partition.

Every search, list and write of the store names one ``agent_id``. Hash-partitioned on that
column, the table becomes ``partitions`` smaller tables, each with its own indexes (its own
HNSW graph, full-text and B-tree indexes), and PostgreSQL prunes a query to the one
partition that can hold the agent (``EXPLAIN`` shows a single partition scanned). A
filtered HNSW search then walks a graph of about ``1/partitions`` of the rows, whose share of
the agent's rows is ``partitions`` times larger; an exact scan reads a smaller index; and
a partition's index can be rebuilt alone.

The store's SQL does not change: it addresses ``memorywire_memories`` and the server routes.
:func:`partition_by_agent` converts the table of a database whose store has created its
schema but holds no memory yet (the schema's other tables stay as they are); a table that
holds rows is refused, since moving them is a dump and load (``memorywire migrate``).
"""

from __future__ import annotations

import re

from memorywire.errors import InvalidRequest
from memorywire.store.postgres.db import Conn
from memorywire.store.postgres.sql import TABLE

__all__ = ["is_partitioned", "partition_by_agent"]

_OLD = f"{TABLE}_unpartitioned"


async def is_partitioned(conn: Conn) -> bool:
    cur = await conn.execute(
        "SELECT c.relkind = 'p' AS partitioned FROM pg_class c "
        "WHERE c.oid = to_regclass(%s)", (TABLE,))
    row = await cur.fetchone()
    return bool(row and row["partitioned"])


async def partition_by_agent(conn: Conn, partitions: int) -> None:
    """Recreate the empty memories table hash-partitioned by ``agent_id`` into
    ``partitions`` tables, with the same columns, keys and indexes, in one transaction."""
    if not 2 <= partitions <= 1024:
        raise InvalidRequest("partitions must be between 2 and 1024")
    async with conn.transaction():
        await conn.execute(f"LOCK TABLE {TABLE} IN ACCESS EXCLUSIVE MODE")
        if await is_partitioned(conn):
            raise InvalidRequest(f"{TABLE} is partitioned already")
        cur = await conn.execute(f"SELECT EXISTS (SELECT 1 FROM {TABLE}) AS any")
        row = await cur.fetchone()
        if row is not None and row["any"]:
            raise InvalidRequest(f"{TABLE} holds memories; partition an empty database and "
                                 "load it with memorywire migrate")
        cur = await conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
            "AND tablename = %s AND indexname <> %s", (TABLE, f"{TABLE}_pkey"))
        indexes = [(r["indexname"], r["indexdef"]) for r in await cur.fetchall()]
        await conn.execute(f"ALTER TABLE {TABLE} RENAME TO {_OLD}")
        for name, _ in indexes:
            await conn.execute(f'ALTER INDEX "{name}" RENAME TO "{name}_unpartitioned"')
        await conn.execute(
            f"CREATE TABLE {TABLE} (LIKE {_OLD} INCLUDING DEFAULTS INCLUDING CONSTRAINTS "
            "INCLUDING STORAGE) PARTITION BY HASH (agent_id)")
        await conn.execute(f"ALTER TABLE {TABLE} ADD PRIMARY KEY (agent_id, id)")
        for i in range(partitions):
            await conn.execute(f"CREATE TABLE {TABLE}_p{i} PARTITION OF {TABLE} "
                               f"FOR VALUES WITH (MODULUS {partitions}, REMAINDER {i})")
        await conn.execute(f"DROP TABLE {_OLD}")
        for _, definition in indexes:
            # "CREATE INDEX name ON schema.table USING ..." (ONLY never appears on a plain table)
            await conn.execute(re.sub(r" ON (\S+\.)?" + TABLE + " ", f" ON {TABLE} ",
                                      definition, count=1))
