"""Reviewer UI sessions kept on the server, re-checked against the token store every request.

The browser holds only a random session id (inside the signed cookie). The server keeps what
the id stands for: the reviewer's token, so that every request asks the token store again
whether that token is still live and still a reviewer. Revoking the token therefore ends its
sessions at once, and logging out deletes the session, so a copied cookie is worthless after
either. (A stateless signed cookie, as before, stayed valid for its whole lifetime.)

The token is held in this process's memory only, as the server already holds every bearer
token it reads; it is never written anywhere or sent back to the browser.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ReviewSessions"]

#: ``auth(token)``: the reviewer's name while the token is live and may review, else None.
Auth = Callable[[str], str | None]


@dataclass
class _Session:
    token: str
    reviewer: str
    created: float
    seen: float


class ReviewSessions:
    """Open, check and end reviewer sessions; bounded by a lifetime and an idle timeout."""

    def __init__(
        self,
        auth: Auth,
        *,
        max_age_s: float = 8 * 3600,
        idle_s: float = 3600,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._auth = auth
        self._max_age = max_age_s
        self._idle = idle_s
        self._clock = clock
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()

    def open(self, token: str) -> tuple[str, str] | None:
        """Sign in with ``token``: ``(session id, reviewer)``, or None if it may not review."""
        reviewer = self._auth(token) if token else None
        if not reviewer:
            return None
        sid = secrets.token_urlsafe(32)
        now = self._clock()
        with self._lock:
            self._expire(now)
            self._sessions[sid] = _Session(token, reviewer, now, now)
        return sid, reviewer

    def reviewer(self, sid: object) -> str | None:
        """The reviewer of a live session whose token is still valid; ends it otherwise."""
        if not isinstance(sid, str) or not sid:
            return None
        now = self._clock()
        with self._lock:
            s = self._sessions.get(sid)
            if s is None:
                return None
            if now - s.created > self._max_age or now - s.seen > self._idle:
                del self._sessions[sid]
                return None
            s.seen = now
            token = s.token
        reviewer = self._auth(token)  # the token store decides, every time
        if reviewer is None:
            self.close(sid)
        return reviewer

    def close(self, sid: object) -> None:
        if isinstance(sid, str):
            with self._lock:
                self._sessions.pop(sid, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def _expire(self, now: float) -> None:
        dead = [k for k, s in self._sessions.items()
                if now - s.created > self._max_age or now - s.seen > self._idle]
        for k in dead:
            del self._sessions[k]
