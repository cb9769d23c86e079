"""Reviewer UI sessions every worker process sees: a small SQLite file instead of a dict.

With ``workers`` above 1 each browser connection lands on any worker, so a session opened by
one must be live in all of them and a logout in one must end it everywhere; sessions kept in
one process's memory would sign the reviewer out (or keep a logged-out cookie alive)
depending on which worker answered. The rules are the same ones, those of
:class:`~memorywire.governance.sessions.ReviewSessions` (the browser holds only a random
session id, every request asks the token store again, logging out deletes the session); only
the store differs.

What the file holds is no more than the token file already does: the SHA-256 of the session
id (so the file does not let anyone take a session over) and the SHA-256 of the reviewer's
token, the value the token store keeps, by which the token store is asked each time.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from memorywire.governance.sessions import Auth, ReviewSessions, Session

__all__ = ["SessionBook", "SharedReviewSessions", "SqliteSessionStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ui_sessions(
    sid_hash TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    created REAL NOT NULL,
    seen REAL NOT NULL
)
"""


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


class SessionBook(Protocol):
    """What the review UI needs of its sessions (in process or shared)."""

    def open(self, token: str) -> tuple[str, str] | None: ...

    def reviewer(self, sid: object) -> str | None: ...

    def close(self, sid: object) -> None: ...


class SqliteSessionStore:
    """Sessions in a SQLite file, keyed by the SHA-256 of the session id (a
    :class:`~memorywire.governance.sessions.SessionStore`)."""

    def __init__(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), timeout=10, check_same_thread=False,
                                   isolation_level=None)
        self._db.execute(_SCHEMA)

    def put(self, sid: str, session: Session) -> None:
        self._db.execute("INSERT INTO ui_sessions VALUES (?, ?, ?, ?, ?)",
                         (_sha(sid), session.token_ref, session.reviewer, session.created,
                          session.seen))

    def get(self, sid: str) -> Session | None:
        row = self._db.execute(
            "SELECT token_hash, reviewer, created, seen FROM ui_sessions WHERE sid_hash = ?",
            (_sha(sid),),
        ).fetchone()
        if row is None:
            return None
        token_hash, reviewer, created, seen = row
        return Session(str(token_hash), str(reviewer), float(created), float(seen))

    def touch(self, sid: str, seen: float) -> None:
        self._db.execute("UPDATE ui_sessions SET seen = ? WHERE sid_hash = ?", (seen, _sha(sid)))

    def drop(self, sid: str) -> None:
        self._db.execute("DELETE FROM ui_sessions WHERE sid_hash = ?", (_sha(sid),))

    def drop_older(self, created_before: float, seen_before: float) -> None:
        self._db.execute("DELETE FROM ui_sessions WHERE created < ? OR seen < ?",
                         (created_before, seen_before))

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM ui_sessions").fetchone()[0])


class SharedReviewSessions(ReviewSessions):
    """Open, check and end reviewer sessions in a file all workers share.

    ``by_hash(sha256 of token)``: the reviewer's name while the token may review, else None;
    the file keeps only that hash of the token, so it is what each request asks about.
    """

    def __init__(
        self,
        path: str | Path,
        auth: Auth,
        by_hash: Auth,
        *,
        max_age_s: float = 8 * 3600,
        idle_s: float = 3600,
        clock: Callable[[], float] = time.time,  # wall clock: processes share no monotonic one
    ) -> None:
        super().__init__(auth, store=SqliteSessionStore(path), token_ref=_sha, recheck=by_hash,
                         max_age_s=max_age_s, idle_s=idle_s, clock=clock)
