"""PostgresStore's side of the entity-masked evidence rule (``core.entity_gate``).

The rule needs the examined hits' full-text keys and, only when no named hit shares a word
of the question beyond the name, their stored vectors and one embedding of the masked
question. Both come from one query over at most ``EVIDENCE_DEPTH`` rows, run inside the
recall's transaction before anything is marked recalled.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from memorywire.core.context_key import lexical_text
from memorywire.core.entity_gate import EVIDENCE_DEPTH, masked_check, masked_evidence
from memorywire.store.postgres.db import Conn, PgDb
from memorywire.store.postgres.sql import TABLE
from memorywire.wire.models import MemoryType

__all__ = ["answers"]


async def answers(conn: Conn, db: PgDb, agent_id: str, query: str, ids: Sequence[str]) -> bool:
    """Whether the best hits ``ids`` answer ``query`` beyond the names it mentions."""
    ids = list(ids[:EVIDENCE_DEPTH])
    cur = await conn.execute(
        f"SELECT id, type, content, metadata, embedding::text AS v FROM {TABLE} "
        "WHERE agent_id = %s AND id = ANY(%s)", (agent_id, ids))
    rows = {r["id"]: r for r in await cur.fetchall()}
    found = [rows[i] for i in ids if i in rows]
    check = masked_check(query, [
        lexical_text(MemoryType(r["type"]), r["content"], r["metadata"]) for r in found])
    if check is None:
        return True
    masked = (await db.embed([check.masked]))[0]
    return masked_evidence(masked, [
        np.asarray(json.loads(found[i]["v"]), dtype=np.float32) for i in check.rows])
