"""What the reviewer UI reports beyond the queue: the audit log as a download, and the
health page's facts (store, queue depth, last checkpoint, receipt key, memories by type/age).

Kept apart from the routes so each report is a plain function over a ``GovernedStore``.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

from memorywire.core.records import ListQuery
from memorywire.governance.receipt_trust import public_key_document
from memorywire.governance.signing import SigningKeySource
from memorywire.governance.store import GovernedStore

__all__ = ["AGE_BUCKETS", "EXPORT_FORMATS", "audit_export", "health_facts"]

#: Audit entries read per worker call while exporting (the log can be long).
_EXPORT_PAGE = 2000
#: Memories counted for the health page at most: a scan of a huge store would hold the page.
_COUNT_CAP = 50_000
_DAY_MS = 86_400_000
#: (label, upper bound in days): a memory falls in the first bucket whose bound exceeds its age.
AGE_BUCKETS: tuple[tuple[str, float], ...] = (
    ("under a day", 1), ("1-7 days", 7), ("7-30 days", 30), ("30-365 days", 365),
    ("over a year", float("inf")),
)
_CSV_COLUMNS = ("seq", "ts", "actor", "action", "agent_id", "memory_ids", "details",
                "prev_hash", "hash")
EXPORT_FORMATS = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson"}


async def _entries(governed: GovernedStore, agent_id: str | None,
                   memory_id: str | None) -> list[dict[str, Any]]:
    """Every matching entry, oldest first, read in pages on the governance worker."""
    out: list[dict[str, Any]] = []
    after = 0
    while True:
        page = await governed.aaudit_entries(agent_id=agent_id, memory_id=memory_id,
                                             limit=_EXPORT_PAGE, after_seq=after)
        out += page
        if len(page) < _EXPORT_PAGE:
            return out
        after = int(page[-1]["seq"])


async def audit_export(governed: GovernedStore, fmt: str, agent_id: str | None,
                       memory_id: str | None) -> Iterator[str]:
    """The audit entries as CSV (one row per entry; ``memory_ids`` and ``details`` as JSON
    in their cells) or JSON Lines (each entry as the log stores it). Every field is kept,
    hashes included, so an export can be re-verified outside memorywire."""
    entries = await _entries(governed, agent_id, memory_id)
    if fmt == "jsonl":
        return (json.dumps(e, ensure_ascii=False, sort_keys=True) + "\n" for e in entries)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(_CSV_COLUMNS)
    for e in entries:
        writer.writerow([
            json.dumps(e.get(c), ensure_ascii=False, sort_keys=True)
            if c in ("memory_ids", "details") else ("" if e.get(c) is None else e.get(c))
            for c in _CSV_COLUMNS
        ])
    return iter([buf.getvalue()])


def _bucket(age_ms: int) -> str:
    days = age_ms / _DAY_MS
    return next(label for label, bound in AGE_BUCKETS if days < bound)


async def health_facts(governed: GovernedStore, now_ms: int,
                       receipt_key: SigningKeySource | None) -> dict[str, Any]:
    """Everything the health page shows apart from the store's own health document."""
    counts = await governed.queue_counts(("pending", "committing", "failed"))
    head = await governed.audit_head()
    by_type: Counter[str] = Counter()
    by_age: Counter[str] = Counter()
    after: str | None = None
    counted, capped = 0, False
    while True:
        rows = await governed.list(ListQuery(agent_id=None, limit=1000, after_id=after))
        for r in rows:
            by_type[r.type.value] += 1
            by_age[_bucket(max(0, now_ms - r.created_at))] += 1
        counted += len(rows)
        if len(rows) < 1000:
            break
        if counted >= _COUNT_CAP:
            capped = True
            break
        after = rows[-1].id
    last = head["checkpoint"]
    return {
        "store": governed.name,
        "queue": counts,
        "audit_head": head["seq"],
        "last_checkpoint": None if last is None else {
            **last, "behind": head["seq"] - int(last["seq"])},
        "receipt_key": public_key_document(receipt_key),
        "memories": counted,
        "capped": capped,
        "by_type": dict(sorted(by_type.items())),
        "by_age": [(label, by_age.get(label, 0)) for label, _ in AGE_BUCKETS],
    }

