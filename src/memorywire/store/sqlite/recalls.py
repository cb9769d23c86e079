"""Where SqliteStore keeps a memory's recall statistics: a narrow table beside the row.

Every recall counts the hits it returns (``last_recalled_at``, ``recall_count``: what
``no_recall_in_days`` expiry and consolidation's salience read). Kept as columns of the
wide ``memories`` row, that write rewrote each returned row's page: a LongMemEval S recall
returns ~245 rows, so ~30 pages a recall went to the WAL, and every ~30 recalls the WAL
reached its checkpoint size and the recall that crossed it paid the checkpoint
(docs/benchmarks.md, "lat19e"). In ``recalls(rid, at, n)`` the same 245 rows fill two or
three pages.

A row has an entry only once it has statistics (recalled, or imported with them); no entry
reads as never recalled (``at`` NULL, ``n`` 0), as the columns' defaults did. Readers select
:data:`STATS_SQL` where they selected the two columns, in the same place, so every record,
export and expiry decision reads the same values. The ``memories`` columns stay in the
table (schema version 3's files are migrated, their values moved here and the columns
cleared) but nothing reads or writes them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["STATS_SQL", "mark_recalled", "put_stats"]

#: ``last_recalled_at, recall_count`` of the ``memories`` row in scope; usable in any
#: ``SELECT ... FROM memories`` whose table is not aliased.
STATS_SQL = ("(SELECT at FROM recalls WHERE recalls.rid = memories.rid), "
             "coalesce((SELECT n FROM recalls WHERE recalls.rid = memories.rid), 0)")


def mark_recalled(conn: Any, rids: Sequence[int], now: int) -> None:
    """Count rows ``rids`` as recalled at ``now``: a recall calls it once, after
    re-ranking, for the hits it returns; ``no_recall_in_days`` expiry must not count a
    memory as recalled because a re-ranker's deeper pool looked at it and passed it over."""
    if rids:
        conn.execute(
            "INSERT INTO recalls(rid, at, n) SELECT value, ?, 1 FROM json_each(?) WHERE true "
            "ON CONFLICT(rid) DO UPDATE SET at = excluded.at, n = n + 1",
            (now, json.dumps(list(rids))))


def put_stats(conn: Any, rid: int, at: int | None, n: int) -> None:
    """Make row ``rid``'s statistics ``at`` and ``n`` (no entry when never recalled)."""
    if at is None and n == 0:
        conn.execute("DELETE FROM recalls WHERE rid = ?", (rid,))
    else:
        conn.execute("INSERT OR REPLACE INTO recalls(rid, at, n) VALUES(?, ?, ?)", (rid, at, n))
