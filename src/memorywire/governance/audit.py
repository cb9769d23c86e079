"""The append-only, hash-chained audit log, kept in SQLite or PostgreSQL (see :mod:`.db`).

Triggers refuse ``UPDATE`` and ``DELETE`` on the log, so an honest program cannot rewrite
history by mistake; the hash chain and signed checkpoints (see :mod:`.chain`) catch a dishonest
one that drops the triggers. :meth:`AuditLog.append` joins the caller's open transaction, which
is how :class:`~memorywire.governance.store.GovernedStore` writes an audit entry atomically with
the state change it records.

Entries never carry memory content: ``details`` holds content hashes, ids, counts and reasons.
``append`` refuses a ``content`` or ``query`` key so a careless caller cannot leak it here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import apsw
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.core.clock import Clock, SystemClock
from memorywire.errors import InvalidRequest
from memorywire.governance.chain import (
    GENESIS_HASH,
    AuditEntry,
    Checkpoint,
    VerifyReport,
    canonical_json,
    entry_hash,
    sign_checkpoint,
    verify_entries,
    verify_tail,
)
from memorywire.governance.db import GovDb, SqliteGovDb, open_governance_db, write_transaction

__all__ = ["ACTIONS", "AuditLog", "PendingEntry", "open_connection", "write_transaction"]

#: The actions memorywire writes; ``append`` accepts others so extensions can add their own.
ACTIONS = frozenset(
    {
        "remember",
        "staged",
        "approved",
        "rejected",
        "forget",
        "merge",
        "expire",
        "update",
        "promote",
        "evict",
        "recall",
    }
)

_FORBIDDEN_DETAIL_KEYS = frozenset({"content", "query"})

_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit_log(
    seq INTEGER PRIMARY KEY,
    ts INTEGER NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    agent_id TEXT,
    memory_ids TEXT NOT NULL,
    details TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_log_agent ON audit_log(agent_id, seq);
CREATE TRIGGER IF NOT EXISTS audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TABLE IF NOT EXISTS audit_checkpoints(
    seq INTEGER PRIMARY KEY,
    hash TEXT NOT NULL,
    signature TEXT NOT NULL,
    public_key TEXT NOT NULL,
    ts INTEGER NOT NULL
);
"""


def open_connection(path: str | Path) -> apsw.Connection:
    """A SQLite connection set up for governance: waits on locks, zeroes deleted bytes."""
    return SqliteGovDb.open(path).connection


def _row_to_entry(row: Sequence[Any]) -> AuditEntry:
    seq, ts, actor, action, agent_id, memory_ids, details, prev_hash, hash_ = row
    try:
        ids = tuple(str(i) for i in json.loads(memory_ids))
        det = json.loads(details)
    except (TypeError, ValueError):
        # Unparseable columns are themselves tampering; keep the row so verify reports it.
        ids, det = (f"<unparseable:{memory_ids!r}>",), {"unparseable": str(details)}
    return AuditEntry(
        seq=int(seq),
        ts=int(ts),
        actor=str(actor),
        action=str(action),
        agent_id=None if agent_id is None else str(agent_id),
        memory_ids=ids,
        details=det if isinstance(det, dict) else {"value": det},
        prev_hash=str(prev_hash),
        hash=str(hash_),
    )


@dataclass(frozen=True)
class PendingEntry:
    """An entry validated by :meth:`AuditLog.prepare`, not yet chained or written."""

    actor: str
    action: str
    agent_id: str | None
    memory_ids: tuple[str, ...]
    details: dict[str, Any]


_COLUMNS = "seq, ts, actor, action, agent_id, memory_ids, details, prev_hash, hash"


class AuditLog:
    """Append, query, checkpoint and verify the chained log in one governance database."""

    def __init__(self, db: GovDb | apsw.Connection, clock: Clock | None = None) -> None:
        self._db: GovDb = SqliteGovDb(db) if isinstance(db, apsw.Connection) else db
        self._clock: Clock = clock or SystemClock()
        #: (seq, hash) of the newest entry known to extend a verified chain from genesis.
        self._verified: tuple[int, str] = (0, GENESIS_HASH)
        #: ``None`` until something was verified, then whether the chain held.
        self._verified_ok: bool | None = None
        self._problem: str | None = None
        if self._db.dialect == "sqlite":  # PostgreSQL sets its schema up on connect
            with self._db.transaction():
                self._db.execute(_SCHEMA)

    @classmethod
    def open(cls, target: str | Path, clock: Clock | None = None) -> AuditLog:
        """A SQLite file path or a ``postgresql://`` URL."""
        return cls(open_governance_db(target), clock)

    @property
    def db(self) -> GovDb:
        return self._db

    @property
    def connection(self) -> apsw.Connection:
        """The SQLite connection (for tests and tools that bracket their own transaction)."""
        if not isinstance(self._db, SqliteGovDb):
            raise InvalidRequest("this audit log is not in SQLite; use .db")
        return self._db.connection

    def close(self) -> None:
        self._db.close()

    # --- writing ------------------------------------------------------------------------

    def append(
        self,
        *,
        actor: str,
        action: str,
        agent_id: str | None = None,
        memory_ids: Sequence[str] = (),
        details: Mapping[str, Any] | None = None,
    ) -> AuditEntry:
        """Add one entry inside the caller's transaction (or a new one)."""
        return self.write(self.prepare(actor=actor, action=action, agent_id=agent_id,
                                       memory_ids=memory_ids, details=details))

    def prepare(
        self,
        *,
        actor: str,
        action: str,
        agent_id: str | None = None,
        memory_ids: Sequence[str] = (),
        details: Mapping[str, Any] | None = None,
    ) -> PendingEntry:
        """Validate an entry without touching the database.

        Split from :meth:`write` so a batch of entries written in one transaction can only
        fail for database reasons, never because one caller passed bad details.
        """
        if not action:
            raise InvalidRequest("audit action must be a non-empty string")
        try:
            det = json.loads(canonical_json(dict(details or {})))
            canonical_json(det).encode("utf-8")
            ids = tuple(str(i) for i in memory_ids)
            canonical_json([actor, agent_id, list(ids)]).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise InvalidRequest(f"audit details must be plain JSON: {exc}") from exc
        leaked = _FORBIDDEN_DETAIL_KEYS & det.keys()
        if leaked:
            raise InvalidRequest(f"audit details must not carry {sorted(leaked)}; store a hash")
        return PendingEntry(actor, action, agent_id, ids, det)

    def write(self, p: PendingEntry) -> AuditEntry:
        """Chain and insert a prepared entry, inside the caller's transaction (or a new one)."""
        with self._db.transaction():
            seq, prev = self.head()
            seq += 1
            entry = AuditEntry(
                seq=seq,
                ts=self._clock.now_ms(),
                actor=p.actor,
                action=p.action,
                agent_id=p.agent_id,
                memory_ids=p.memory_ids,
                details=p.details,
                prev_hash=prev,
                hash="",
            )
            h = entry_hash(prev, entry.body())
            self._db.execute(
                f"INSERT INTO audit_log({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    seq,
                    entry.ts,
                    p.actor,
                    p.action,
                    p.agent_id,
                    canonical_json(list(p.memory_ids)),
                    canonical_json(p.details),
                    prev,
                    h,
                ),
            )
        return replace(entry, hash=h)

    async def record(self, event: Mapping[str, Any]) -> None:
        """The ``AuditSink`` face: ``{action, actor?, agent_id?, memory_ids?, details?}``."""
        self.append(
            actor=str(event.get("actor") or "system"),
            action=str(event.get("action") or ""),
            agent_id=event.get("agent_id"),
            memory_ids=[str(i) for i in event.get("memory_ids") or ()],
            details=event.get("details") or {},
        )

    # --- reading ------------------------------------------------------------------------

    def entries(
        self,
        *,
        agent_id: str | None = None,
        memory_id: str | None = None,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> list[AuditEntry]:
        sql = f"SELECT {_COLUMNS} FROM audit_log WHERE seq > ?"
        args: list[Any] = [after_seq]
        if agent_id is not None:
            sql += " AND agent_id = ?"
            args.append(agent_id)
        if memory_id is not None:
            sql += " AND " + self._db.json_array_contains("audit_log.memory_ids")
            args.append(memory_id)
        sql += " ORDER BY seq"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [_row_to_entry(r) for r in self._db.query(sql, args)]

    def head(self) -> tuple[int, str]:
        rows = self._db.query("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1")
        return (0, GENESIS_HASH) if not rows else (int(rows[0][0]), str(rows[0][1]))

    # --- checkpoints and verification -----------------------------------------------------

    def checkpoint(self, private_key: Ed25519PrivateKey) -> dict[str, Any]:
        """Sign the current head; export the returned dict (JSON) somewhere the db is not."""
        with self._db.transaction():
            seq, hash_ = self.head()
            cp = sign_checkpoint(private_key, seq, hash_, self._clock.now_ms())
            self._db.execute(
                "INSERT INTO audit_checkpoints(seq, hash, signature, public_key, ts)"
                " VALUES (?,?,?,?,?) ON CONFLICT(seq) DO UPDATE SET hash = excluded.hash,"
                " signature = excluded.signature, public_key = excluded.public_key,"
                " ts = excluded.ts",
                (cp.seq, cp.hash, cp.signature, cp.public_key, cp.ts),
            )
        return cp.to_dict()

    def stored_checkpoints(self) -> list[Checkpoint]:
        """Checkpoints kept in the db itself: handy, but only as trustworthy as the file."""
        rows = self._db.query(
            "SELECT seq, hash, signature, public_key, ts FROM audit_checkpoints ORDER BY seq"
        )
        return [
            Checkpoint(seq=int(a), hash=str(b), signature=str(c), public_key=str(d), ts=int(e))
            for a, b, c, d, e in rows
        ]

    def verify(
        self,
        checkpoints: Sequence[Checkpoint | Mapping[str, Any]] | None = None,
        trusted_keys: Sequence[str] | None = None,
    ) -> VerifyReport:
        """Recompute the chain; ``checkpoints=None`` uses the ones stored in the db."""
        cps = (
            self.stored_checkpoints()
            if checkpoints is None
            else [c if isinstance(c, Checkpoint) else Checkpoint.from_dict(c) for c in checkpoints]
        )
        report = verify_entries(self.entries(), cps, trusted_keys)
        if report.ok and trusted_keys is None:
            row = self._db.query("SELECT hash FROM audit_log WHERE seq = ?", (report.last_seq,))
            self._verified = (report.last_seq, str(row[0][0]) if row else GENESIS_HASH)
            self._verified_ok, self._problem = True, None
        elif not report.ok:
            self._verified_ok = False
            self._problem = report.problems[0].message if report.problems else "chain broken"
        return report

    def verify_incremental(self, max_entries: int = 200_000) -> dict[str, Any]:
        """Verify only what was appended since the last verification (at most ``max_entries``).

        Where verification got to is kept on this object, so a caller that runs this
        periodically pays for new entries only. Entries already verified are not re-read: an
        edit behind that point needs :meth:`verify` with a signed checkpoint to be seen.
        """
        seq, hash_ = self._verified
        rows = self.entries(after_seq=seq, limit=max_entries)
        tail = verify_tail(rows, seq, hash_)
        if tail.ok:
            self._verified = (tail.last_seq, tail.last_hash)
            if self._verified_ok is None:
                self._verified_ok = True
        else:
            self._verified_ok = False
            self._problem = tail.problem.message if tail.problem else "chain broken"
        head_seq, _ = self.head()
        return {
            "ok": bool(self._verified_ok),
            "verified_seq": self._verified[0],
            "head_seq": head_seq,
            "checked": tail.checked,
            "complete": tail.ok and self._verified[0] >= head_seq,
            "problem": None if tail.problem is None else tail.problem.to_dict(),
            # the names a full VerifyReport uses, so one page can show either
            "entries": self._verified[0],
            "first_bad_seq": None if tail.problem is None else tail.problem.seq,
            "kinds": [] if tail.problem is None else [tail.problem.kind],
        }

    def verification_state(self) -> dict[str, Any]:
        """What the last verification found; reads nothing, so any health probe may ask."""
        return {
            "verified_seq": self._verified[0],
            "audit_chain_ok": self._verified_ok,
            "problem": self._problem,
        }
