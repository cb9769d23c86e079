"""PostgresStore's side of the subject gate (:mod:`memorywire.core.subject_gate`).

The rule is the core module's; this module only reads what it needs in SQL, inside the
recall's transaction:

* the question's subject comes from the counts the full-text leg already took
  (``lexical.Leg``: the words the scope holds, and those most of it holds), so finding it
  costs no statement;
* the full-text list's agreement test (a scope about the subject) is one statement over its
  best row, each of the question's other words matched as the list matches it
  (``to_tsquery('english', word)``);
* the masked question's cosines are computed by pgvector over the scope's rows, or those
  holding a subject word, and only the cosines (one number a row) come back. Like the
  leg's counts they are read over at most ``SHARE_SAMPLE`` rows of the scope, its newest:
  every row of a scope that size or smaller, and for a larger one a sample whose median and
  best stand for the scope's without the cost growing with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from memorywire.core.context_key import lexical_text
from memorywire.core.entity_gate import EVIDENCE_DEPTH
from memorywire.core.scoring import Scored
from memorywire.core.subject_gate import (
    SUBJECT_AGREEMENT,
    Subject,
    lexical_evidence,
    masked_stands_out,
    subject_of,
    subject_relevance,
)
from memorywire.store.postgres.db import Conn, PgDb
from memorywire.store.postgres.lexical import SHARE_SAMPLE, Leg
from memorywire.store.postgres.sql import TABLE, PgVector, Where, tsquery_text
from memorywire.wire.models import MemoryType

__all__ = ["SubjectRun", "agreeing_weight", "judged", "subject_run"]


@dataclass(frozen=True)
class SubjectRun:
    """A recall's subject, and the masked question's vector (a ``%s::vector`` parameter) when
    every subject word is common: the scope is *about* the subject, and the vector list
    ranks by that vector."""

    subject: Subject
    common: frozenset[str]
    masked: PgVector | None

    @property
    def about(self) -> bool:
        return self.masked is not None


async def subject_run(db: PgDb, query: str, leg: Leg) -> SubjectRun | None:
    """The question's subject in the scope the leg counted (``None``: judged as before);
    the masked question is embedded here only for a scope about the subject."""
    subject = subject_of(query, leg.known, leg.common)
    if subject is None:
        return None
    masked = (PgVector((await db.embed([subject.masked]))[0])
              if subject.words <= leg.common else None)
    return SubjectRun(subject, leg.common, masked)


async def agreeing_weight(conn: Conn, agent_id: str, run: SubjectRun, words: Sequence[str],
                          best_id: str, weight: float) -> float:
    """The full-text list's weight in a scope about the subject: ``weight`` when its best
    row ``best_id`` holds ``SUBJECT_AGREEMENT`` of the question's ``words`` beyond the
    subject and the common words, else 0 (one shared everyday word says nothing)."""
    rest = [q for q in (tsquery_text([word]) for word in dict.fromkeys(words)
                        if word not in run.common and word not in run.subject.words)
            if q is not None]
    if len(rest) < SUBJECT_AGREEMENT:
        return 0.0
    held = " + ".join("(tsv @@ to_tsquery('english', %s))::int" for _ in rest)
    cur = await conn.execute(f"SELECT {held} AS shared FROM {TABLE} "
                             "WHERE agent_id = %s AND id = %s", [*rest, agent_id, best_id])
    row = await cur.fetchone()
    return weight if row is not None and int(row["shared"]) >= SUBJECT_AGREEMENT else 0.0


async def judged(conn: Conn, db: PgDb, agent_id: str, w: Where, run: SubjectRun,
                 ranked: list[Scored]) -> list[Scored]:
    """The subject gate on a ranked list: empty unless what the question asks beyond its
    subject finds something (the best hits' words, else the masked question's cosines).
    In a scope about the subject each hit's relevance becomes its masked cosine's lead over
    the scope's median; otherwise the list is returned as ranked."""
    ids = [s.id for s in ranked[:EVIDENCE_DEPTH]]
    cur = await conn.execute(
        f"SELECT id, type, content, metadata FROM {TABLE} WHERE agent_id = %s AND id = ANY(%s)",
        (agent_id, ids))
    rows = {r["id"]: r for r in await cur.fetchall()}
    texts = [lexical_text(MemoryType(rows[i]["type"]), rows[i]["content"], rows[i]["metadata"])
             for i in ids if i in rows]
    cosines = None
    if not lexical_evidence(run.subject, texts):
        vector = run.masked or PgVector((await db.embed([run.subject.masked]))[0])
        cosines = await _cosines(conn, w, vector, None if run.about else run.subject.words)
        if not masked_stands_out(cosines):
            return []
    if run.masked is None:
        return ranked
    if cosines is None:
        cosines = await _cosines(conn, w, run.masked, None)
    median = float(np.median(cosines)) if cosines.size else 0.0
    return [replace(s, relevance=subject_relevance(s.cosine, median)) for s in ranked]


async def _cosines(conn: Conn, w: Where, vector: PgVector,
                   words: frozenset[str] | None) -> npt.NDArray[np.float32]:
    """The cosines of ``vector`` with the scope's newest ``SHARE_SAMPLE`` rows, or those
    holding one of ``words`` in full text (as the full-text list matches a word)."""
    sql = f"SELECT 1 - (embedding <=> %s::vector) AS cos FROM {TABLE} WHERE {w.sql()}"
    params: list[object] = [vector, *w.params]
    held = tsquery_text(sorted(words)) if words is not None else None
    if words is not None:
        if held is None:
            return np.empty(0, dtype=np.float32)
        sql += " AND tsv @@ to_tsquery('english', %s)"
        params.append(held)
    cur = await conn.execute(sql + " ORDER BY created_at DESC, id DESC LIMIT %s",
                             [*params, SHARE_SAMPLE])
    return np.asarray([float(r["cos"]) for r in await cur.fetchall()], dtype=np.float32)
