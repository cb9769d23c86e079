"""The approval queue: staged operations and their state machine, in the governance db.

States: ``pending -> committing -> approved``, ``pending -> rejected``, and
``committing -> failed -> rejected`` when the inner store refuses an approved operation.
Every transition is one exclusive transaction of the governance database (SQLite or
PostgreSQL) that also appends the audit entry recording it, so the queue and the log can
never disagree. ``committing`` means "a reviewer approved; the inner store may or may not
have the change yet": :class:`~memorywire.governance.store.GovernedStore` re-drives such
items with the same id after a crash, which the inner store's idempotent ``remember`` (same
id, same content) turns into exactly one memory.

Staged content lives here only while undecided. Once decided the request is replaced by a
scrubbed copy (content and metadata values gone, a content hash kept); on SQLite under
``PRAGMA secure_delete``, so the bytes do not linger in free pages either.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memorywire.errors import Conflict, Forbidden, InvalidRequest, NotFound
from memorywire.governance.audit import AuditLog
from memorywire.governance.chain import canonical_json
from memorywire.governance.keys import AuditKey

__all__ = ["ApprovalQueue", "QueueItem", "content_hash_of", "scrub_request"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS approvals(
    id TEXT PRIMARY KEY,
    operation TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    user_id TEXT,
    request TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    reasoning TEXT,
    status TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    reviewer TEXT,
    reviewed_at INTEGER,
    reason TEXT,
    reviewed_hash TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    result TEXT
);
CREATE INDEX IF NOT EXISTS approvals_status ON approvals(status, agent_id, created_at);
"""

#: Columns added after the first release: (name, SQL type); added in place on open.
ADDED_COLUMNS = (("memory_id", "TEXT"), ("requester_id", "TEXT"))
_MEMORY_INDEX = (
    "CREATE INDEX IF NOT EXISTS approvals_memory ON approvals(agent_id, memory_id, status)"
)

_COLS = (
    "id, operation, agent_id, user_id, request, content_hash, requested_by, reasoning, status,"
    " created_at, updated_at, reviewer, reviewed_at, reason, reviewed_hash, attempts, result,"
    " memory_id, requester_id"
)


def content_hash_of(operation: str, request: Mapping[str, Any], key: AuditKey) -> str:
    """What a reviewer approves: the operation and its full request, keyed-hashed canonically
    (a plain hash of a short content could be brute-forced by whoever reads the log)."""
    return key.digest({"operation": operation, "request": dict(request)})


def scrub_request(request: Mapping[str, Any], key: AuditKey) -> dict[str, Any]:
    """The request minus anything that is memory content (keyed hashes kept instead)."""
    out = dict(request)
    if "content" in out:
        out["content_hmac"] = key.digest(out.pop("content"))
    if isinstance(out.get("metadata"), dict):
        out["metadata_keys"] = sorted(out.pop("metadata"))
    if isinstance(out.get("filter"), dict):
        out["filter_hmac"] = key.digest(out.pop("filter"))
    out["hmac_key"] = key.key_id
    out["scrubbed"] = True
    return out


@dataclass(frozen=True)
class QueueItem:
    id: str
    operation: str
    agent_id: str
    user_id: str | None
    request: dict[str, Any]
    content_hash: str
    requested_by: str
    reasoning: str | None
    status: str
    created_at: int
    updated_at: int
    reviewer: str | None = None
    reviewed_at: int | None = None
    reason: str | None = None
    reviewed_hash: str | None = None
    attempts: int = 0
    result: dict[str, Any] | None = None
    #: The memory a staged remember will create (the approval id may differ, see ``stage``).
    memory_id: str | None = None
    #: The writer's token id: who may amend the item (a name is not unique; an id is).
    requester_id: str | None = None

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> QueueItem:
        vals = list(row)
        vals[4] = json.loads(vals[4])
        vals[16] = None if vals[16] is None else json.loads(vals[16])
        return cls(*vals)


class ApprovalQueue:
    """Synchronous, transactional queue operations; callers never await inside one."""

    def __init__(self, audit: AuditLog, key: AuditKey) -> None:
        self._audit = audit
        self._key = key
        self._db = audit.db
        if self._db.dialect == "sqlite":  # PostgreSQL sets its schema up on connect
            with self._db.transaction():
                self._db.execute(_SCHEMA)
                have = {str(r[1]) for r in self._db.query("PRAGMA table_info(approvals)")}
                for col, kind in ADDED_COLUMNS:
                    if col not in have:
                        self._db.execute(f"ALTER TABLE approvals ADD COLUMN {col} {kind}")
                self._db.execute(_MEMORY_INDEX)

    def _get(self, item_id: str) -> QueueItem | None:
        rows = self._db.query(f"SELECT {_COLS} FROM approvals WHERE id = ?", (item_id,))
        return QueueItem.from_row(rows[0]) if rows else None

    def get(self, item_id: str) -> QueueItem | None:
        return self._get(item_id)

    def items(
        self,
        *,
        agent_id: str | None = None,
        operation: str | None = None,
        status: str | None = "pending",
        limit: int = 100,
    ) -> list[QueueItem]:
        sql = f"SELECT {_COLS} FROM approvals WHERE 1=1"
        args: list[Any] = []
        for col, val in (("agent_id", agent_id), ("operation", operation), ("status", status)):
            if val is not None:
                sql += f" AND {col} = ?"
                args.append(val)
        sql += " ORDER BY created_at, id LIMIT ?"
        args.append(limit)
        return [QueueItem.from_row(r) for r in self._db.query(sql, args)]

    def decided(self, operation: str, limit: int) -> list[QueueItem]:
        """Items of ``operation`` a reviewer approved or rejected, the latest decision first
        (what approval patterns are learned from); decisions in one millisecond by the
        newer item first."""
        sql = (f"SELECT {_COLS} FROM approvals WHERE operation = ? AND reviewed_at IS NOT NULL"
               " AND status IN ('approved', 'committing', 'failed', 'rejected')"
               " ORDER BY reviewed_at DESC, created_at DESC, id DESC LIMIT ?")
        return [QueueItem.from_row(r) for r in self._db.query(sql, (operation, limit))]

    def open_for_memory(self, agent_id: str, memory_id: str) -> QueueItem | None:
        """The pending or committing remember that will create ``memory_id`` in ``agent_id``."""
        rows = self._db.query(
            f"SELECT {_COLS} FROM approvals WHERE agent_id = ?"
            " AND (memory_id = ? OR (memory_id IS NULL AND id = ? AND operation = 'remember'))"
            " AND status IN ('pending', 'committing') ORDER BY created_at LIMIT 1",
            (agent_id, memory_id, memory_id),
        )
        return QueueItem.from_row(rows[0]) if rows else None

    def count(self, status: str = "pending") -> int:
        rows = self._db.query("SELECT count(*) FROM approvals WHERE status = ?", (status,))
        return int(rows[0][0]) if rows else 0

    def _write(self, sql: str, args: tuple[Any, ...]) -> None:
        self._db.execute(sql, args)

    def stage(
        self, item: QueueItem, details: Mapping[str, Any], fresh_id: str | None = None
    ) -> QueueItem:
        """Add (or amend, while still pending and by the same writer) one staged operation.

        A retry with the same id and the same request returns the stored item unchanged.
        The same writer means the same token (``requester_id``) for the same agent. When the
        id is held by another writer or agent and ``fresh_id`` is given (a remember, whose id
        names the memory and not the approval), the item is staged under ``fresh_id``: the
        caller learns nothing of the other item and cannot take its place.
        """
        with self._db.transaction():
            old = self._get(item.id)
            if old is not None:
                same_writer = (
                    old.agent_id == item.agent_id
                    and old.requester_id == item.requester_id
                    and old.requested_by == item.requested_by
                )
                if same_writer and old.content_hash == item.content_hash:
                    return old
                if same_writer and old.status == "pending":
                    self._write(
                        "UPDATE approvals SET request = ?, content_hash = ?, reasoning = ?,"
                        " updated_at = ? WHERE id = ?",
                        (
                            canonical_json(item.request),
                            item.content_hash,
                            item.reasoning,
                            item.updated_at,
                            item.id,
                        ),
                    )
                    self._audit_staged(item, details, amended=True)
                    return replace(old, request=item.request, content_hash=item.content_hash)
                if same_writer or fresh_id is None:
                    raise Conflict(f"id {item.id} is already used by another staged operation")
                item = replace(item, id=fresh_id)
            self._write(
                f"INSERT INTO approvals({_COLS})"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    item.id,
                    item.operation,
                    item.agent_id,
                    item.user_id,
                    canonical_json(item.request),
                    item.content_hash,
                    item.requested_by,
                    item.reasoning,
                    "pending",
                    item.created_at,
                    item.updated_at,
                    None,
                    None,
                    None,
                    None,
                    0,
                    None,
                    item.memory_id,
                    item.requester_id,
                ),
            )
            self._audit_staged(item, details, amended=False)
        return item

    def _audit_staged(self, item: QueueItem, details: Mapping[str, Any], amended: bool) -> None:
        self._audit.append(
            actor=item.requested_by,
            action="staged",
            agent_id=item.agent_id,
            memory_ids=[item.id] if item.memory_id in (None, item.id) else [item.id,
                                                                          item.memory_id],
            details={
                "operation": item.operation,
                "content_hash": item.content_hash,
                "amended": amended,
                "user_id": item.user_id,
                **details,
            },
        )

    def _audit_decision(self, item: QueueItem, actor: str, action: str, reason: str | None,
                        memory_ids: list[str], extra: Mapping[str, Any] | None = None) -> None:
        """The ``approved`` / ``rejected`` entry of a decision on ``item``."""
        self._audit.append(
            actor=actor,
            action=action,
            agent_id=item.agent_id,
            memory_ids=memory_ids,
            details={
                "operation": item.operation,
                "content_hash": item.content_hash,
                "requested_by": item.requested_by,
                "user_id": item.user_id,
                "reason": reason,
                **(extra or {}),
            },
        )

    def begin_commit(
        self, item_id: str, reviewer: str, content_hash: str | None, reason: str | None, now: int,
        supersedes: Sequence[str] | None = None,
    ) -> QueueItem:
        """Record an approval (``pending -> committing``); an already-approved or committing
        item is returned as is so the caller can finish or report it (retries are safe).

        ``supersedes`` (a remember only; ``None`` keeps the request as staged) is the
        reviewer's choice of which memories the write replaces: it is written into the stored
        request in the same transaction as the approval, so a re-drive after a crash commits
        the same choice, and the ``approved`` entry records it. ``content_hash`` stays the
        hash of what the writer staged and the reviewer was shown."""
        with self._db.transaction():
            item = self._get(item_id)
            if item is None:
                raise NotFound(f"no staged operation {item_id}")
            if item.status in ("committing", "approved"):
                return item
            if item.status == "rejected":
                raise Conflict(f"operation {item_id} was already rejected")
            if item.status == "failed":
                raise Conflict(
                    f"operation {item_id} was approved but could not be committed; reject it"
                )
            if item.requested_by == reviewer:
                raise Forbidden("a writer cannot approve its own write; ask another reviewer")
            if content_hash is not None and content_hash != item.content_hash:
                raise Conflict(
                    f"operation {item_id} changed since it was reviewed (stale content hash);"
                    " reload it and review again"
                )
            extra: dict[str, Any] = {}
            if supersedes is not None:
                if item.operation != "remember":
                    raise InvalidRequest(
                        f"supersedes: only a remember can supersede, not a {item.operation}")
                chosen = list(dict.fromkeys(supersedes))
                request = {k: v for k, v in item.request.items() if k != "supersedes"}
                if chosen:
                    request["supersedes"] = chosen
                self._write("UPDATE approvals SET request = ? WHERE id = ?",
                            (canonical_json(request), item_id))
                extra["supersedes"] = chosen
            self._write(
                "UPDATE approvals SET status = 'committing', reviewer = ?, reviewed_at = ?,"
                " reason = ?, reviewed_hash = ?, updated_at = ? WHERE id = ?",
                (reviewer, now, reason, item.content_hash, now, item_id),
            )
            self._audit_decision(item, reviewer, "approved", reason,
                                 [item.id, *extra.get("supersedes", [])], extra)
        got = self._get(item_id)
        assert got is not None
        return got

    def note_attempt(self, item_id: str) -> None:
        with self._db.transaction():
            self._write("UPDATE approvals SET attempts = attempts + 1 WHERE id = ?", (item_id,))

    def finish_commit(
        self,
        item: QueueItem,
        result: Mapping[str, Any],
        memory_ids: list[str],
        now: int,
    ) -> None:
        """``committing -> approved``, the completion audit entry, and the content scrub."""
        with self._db.transaction():
            current = self._get(item.id)
            if current is None or current.status != "committing":
                return
            self._write(
                "UPDATE approvals SET status = 'approved', request = ?, result = ?,"
                " updated_at = ? WHERE id = ?",
                (
                    canonical_json(scrub_request(item.request, self._key)),
                    canonical_json(dict(result)),
                    now,
                    item.id,
                ),
            )
            self._audit.append(
                actor=item.reviewer or "system",
                action=item.operation,
                agent_id=item.agent_id,
                memory_ids=memory_ids or [item.id],
                details={
                    "phase": "done",
                    "approval_id": item.id,
                    "content_hash": item.content_hash,
                    "requested_by": item.requested_by,
                    "user_id": item.user_id,
                    **dict(result),
                },
            )

    def note_transient(self, item: QueueItem, code: str) -> None:
        """A commit attempt failed for a reason outside the operation; it stays committing."""
        self._audit.append(
            actor=item.reviewer or "system",
            action=item.operation,
            agent_id=item.agent_id,
            memory_ids=[item.id],
            details={"phase": "failed", "approval_id": item.id, "error": code},
        )

    def fail_commit(self, item: QueueItem, code: str, message: str, now: int) -> None:
        """``committing -> failed``: the inner store refused; keep the error for reviewers."""
        with self._db.transaction():
            current = self._get(item.id)
            if current is None or current.status != "committing":
                return
            self._write(
                "UPDATE approvals SET status = 'failed', result = ?, updated_at = ? WHERE id = ?",
                (canonical_json({"error": code, "message": message}), now, item.id),
            )
            self._audit.append(
                actor=item.reviewer or "system",
                action=item.operation,
                agent_id=item.agent_id,
                memory_ids=[item.id],
                details={"phase": "failed", "approval_id": item.id, "error": code,
                         "user_id": item.user_id},
            )

    def withdraw(
        self, agent_id: str, user_id: str | None, ids: list[str], actor: str, now: int
    ) -> list[str]:
        """Close the pending remembers of ``agent_id`` that a forget names (content scrubbed),
        so a later approval cannot bring a forgotten memory back. Returns their ids."""
        closed: list[str] = []
        with self._db.transaction():
            for memory_id in ids:
                item = self.open_for_memory(agent_id, memory_id)
                if (
                    item is None
                    or item.status != "pending"
                    or (user_id is not None and item.user_id != user_id)
                ):
                    continue
                self._write(
                    "UPDATE approvals SET status = 'rejected', reviewer = ?, reviewed_at = ?,"
                    " reason = ?, request = ?, updated_at = ? WHERE id = ?",
                    (
                        actor,
                        now,
                        "forgotten before approval",
                        canonical_json(scrub_request(item.request, self._key)),
                        now,
                        item.id,
                    ),
                )
                self._audit_decision(item, actor, "rejected", "forgotten before approval",
                                     sorted({item.id, memory_id}))
                closed.append(memory_id)
        return closed

    def has_status(self, status: str) -> bool:
        """One index probe: whether any item is in ``status`` (cheap enough for health)."""
        rows = self._db.query("SELECT 1 FROM approvals WHERE status = ? LIMIT 1", (status,))
        return bool(rows)

    def reject(
        self, item_id: str, reviewer: str, reason: str | None, content_hash: str | None, now: int
    ) -> QueueItem:
        with self._db.transaction():
            item = self._get(item_id)
            if item is None:
                raise NotFound(f"no staged operation {item_id}")
            if item.status == "rejected":
                return item
            if item.status not in ("pending", "failed"):
                raise Conflict(f"operation {item_id} was already approved")
            if content_hash is not None and content_hash != item.content_hash:
                raise Conflict(f"operation {item_id} changed since it was reviewed")
            self._write(
                "UPDATE approvals SET status = 'rejected', reviewer = ?, reviewed_at = ?,"
                " reason = ?, reviewed_hash = ?, request = ?, updated_at = ? WHERE id = ?",
                (
                    reviewer,
                    now,
                    reason,
                    item.content_hash,
                    canonical_json(scrub_request(item.request, self._key)),
                    now,
                    item_id,
                ),
            )
            self._audit_decision(item, reviewer, "rejected", reason, [item.id])
        got = self._get(item_id)
        assert got is not None
        return got
