"""Reviewer UI sessions every worker process sees: a small SQLite file instead of a dict.

With ``workers`` above 1 each browser connection lands on any worker, so a session opened by
one must be live in all of them and a logout in one must end it everywhere; the in-process
:class:`~memorywire.governance.sessions.ReviewSessions` would sign the reviewer out (or keep
a logged-out cookie alive) depending on which worker answered. The contract is the same:
the browser holds only a random session id, every request asks the token store again, and
logging out deletes the session.

What the file holds is no more than the token file already does: the SHA-256 of the session
id (so the file does not let anyone take a session over) and the SHA-256 of the reviewer's
token, the value the token store keeps, by which the token store is asked each time.
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

__all__ = ["SessionBook", "SharedReviewSessions"]

#: ``auth(token)`` / ``by_hash(sha256 of token)``: the reviewer's name while the token may
#: review, else None.
Auth = Callable[[str], str | None]

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


class SharedReviewSessions:
    """Open, check and end reviewer sessions in a file all workers share."""

    def __init__(
        self,
        path: str | Path,
        auth: Auth,
        by_hash: Auth,
        *,
        max_age_s: float = 8 * 3600,
        idle_s: float = 3600,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._auth = auth
        self._by_hash = by_hash
        self._max_age = max_age_s
        self._idle = idle_s
        self._clock = clock  # wall clock: the processes share no monotonic one
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), timeout=10, check_same_thread=False,
                                   isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute(_SCHEMA)

    def open(self, token: str) -> tuple[str, str] | None:
        """Sign in with ``token``: ``(session id, reviewer)``, or None if it may not review."""
        reviewer = self._auth(token) if token else None
        if not reviewer:
            return None
        sid = secrets.token_urlsafe(32)
        now = self._clock()
        with self._lock:
            self._db.execute(
                "DELETE FROM ui_sessions WHERE created < ? OR seen < ?",
                (now - self._max_age, now - self._idle),
            )
            self._db.execute("INSERT INTO ui_sessions VALUES (?, ?, ?, ?, ?)",
                             (_sha(sid), _sha(token), reviewer, now, now))
        return sid, reviewer

    def reviewer(self, sid: object) -> str | None:
        """The reviewer of a live session whose token is still valid; ends it otherwise."""
        if not isinstance(sid, str) or not sid:
            return None
        now = self._clock()
        key = _sha(sid)
        with self._lock:
            row = self._db.execute(
                "SELECT token_hash, created, seen FROM ui_sessions WHERE sid_hash = ?", (key,)
            ).fetchone()
            if row is None:
                return None
            token_hash, created, seen = row
            if now - created > self._max_age or now - seen > self._idle:
                self._db.execute("DELETE FROM ui_sessions WHERE sid_hash = ?", (key,))
                return None
            self._db.execute("UPDATE ui_sessions SET seen = ? WHERE sid_hash = ?", (now, key))
        reviewer = self._by_hash(str(token_hash))  # the token store decides, every time
        if reviewer is None:
            self.close(sid)
        return reviewer

    def close(self, sid: object) -> None:
        if isinstance(sid, str):
            with self._lock:
                self._db.execute("DELETE FROM ui_sessions WHERE sid_hash = ?", (_sha(sid),))

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM ui_sessions").fetchone()[0])
