"""A recall's rows as wire hits, and the statistics of the hits a caller actually got.

Kept apart from the search so that a recall which searches more than once (a re-ranker's
deeper pool, see ``store.timeline.RecallPlan``) turns each search's rows into hits the same
way, and records ``last_recalled_at`` / ``recall_count`` once, after re-ranking, for the
hits it returns: ``no_recall_in_days`` expiry must not count a memory as recalled because a
re-ranker looked at it and passed it over.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from memorywire.core.content import content_from_storage
from memorywire.core.scoring import Scored
from memorywire.store.sqlite.contexts import metadata_of
from memorywire.store.sqlite.db import IN_JSON
from memorywire.wire.models import MemoryType, RecallHit

__all__ = ["hits_of", "mark_recalled"]


def hits_of(ranked: Sequence[Scored], rows: Mapping[str, Any], store: str) -> list[RecallHit]:
    """``ranked`` as hits, from their ``rows`` (``COLS, rid`` by id)."""
    hits = []
    for s in ranked:
        r = rows[s.id]
        mtype = MemoryType(r[3])
        hits.append(RecallHit(
            id=r[0], type=mtype, content=content_from_storage(mtype, r[4]), score=s.score,
            relevance=round(s.relevance, 4),
            metadata=metadata_of(r[5], r[13]), created_at=r[8], supporting=[],
            source_store=store, user_id=r[2], source=r[7], confidence=r[6],
        ))
    return hits


def mark_recalled(conn: Any, agent_id: str, ids: Sequence[str], now: int) -> None:
    """Count memories ``ids`` of ``agent_id`` as recalled at ``now``."""
    if ids:
        conn.execute(
            "UPDATE memories SET last_recalled_at = ?, recall_count = recall_count + 1 "
            f"WHERE agent_id = ? AND id IN {IN_JSON}", (now, agent_id, json.dumps(list(ids))))
