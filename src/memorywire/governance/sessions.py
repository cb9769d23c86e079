"""Reviewer UI sessions kept on the server, re-checked against the token store every request.

The browser holds only a random session id (inside the signed cookie). The server keeps what
the id stands for: the reviewer's token, so that every request asks the token store again
whether that token is still live and still a reviewer. Revoking the token therefore ends its
sessions at once, and logging out deletes the session, so a copied cookie is worthless after
either. (A stateless signed cookie, as before, stayed valid for its whole lifetime.)

The rules (lifetime, idle timeout, the re-check, closing) live once in :class:`ReviewSessions`;
where the sessions are kept is a :class:`SessionStore`. The default,
:class:`MemorySessionStore`, is this process's memory: the token is held there only, as the
server already holds every bearer token it reads, never written anywhere or sent back to the
browser. Several worker processes share a file instead
(:mod:`memorywire.server.ui.shared_sessions`).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["MemorySessionStore", "ReviewSessions", "Session", "SessionStore"]

#: ``auth(token)``: the reviewer's name while the token is live and may review, else None.
Auth = Callable[[str], str | None]


@dataclass
class Session:
    """What a session id stands for. ``token_ref`` is what the store keeps of the token (the
    token itself, or a hash of it) and what the re-check is asked about."""

    token_ref: str
    reviewer: str
    created: float
    seen: float


class SessionStore(Protocol):
    """Where sessions are kept, by session id. :class:`ReviewSessions` calls it under its own
    lock, so an implementation need not be thread-safe."""

    def put(self, sid: str, session: Session) -> None: ...

    def get(self, sid: str) -> Session | None: ...

    def touch(self, sid: str, seen: float) -> None: ...

    def drop(self, sid: str) -> None: ...

    def drop_older(self, created_before: float, seen_before: float) -> None:
        """Drop every session created before ``created_before`` or last seen before
        ``seen_before``."""
        ...

    def count(self) -> int: ...


class MemorySessionStore:
    """Sessions in a dict: this process only."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}

    def put(self, sid: str, session: Session) -> None:
        self._sessions[sid] = session

    def get(self, sid: str) -> Session | None:
        return self._sessions.get(sid)

    def touch(self, sid: str, seen: float) -> None:
        if (s := self._sessions.get(sid)) is not None:
            s.seen = seen

    def drop(self, sid: str) -> None:
        self._sessions.pop(sid, None)

    def drop_older(self, created_before: float, seen_before: float) -> None:
        dead = [k for k, s in self._sessions.items()
                if s.created < created_before or s.seen < seen_before]
        for k in dead:
            del self._sessions[k]

    def count(self) -> int:
        return len(self._sessions)


def _same(token: str) -> str:
    return token


class ReviewSessions:
    """Open, check and end reviewer sessions; bounded by a lifetime and an idle timeout.

    ``store``: where sessions are kept (default: this process's memory). ``token_ref``: what
    of the token the store keeps (default: the token); ``recheck(token_ref)`` asks the token
    store about it on every request (default: ``auth``, which takes the token itself).
    """

    def __init__(
        self,
        auth: Auth,
        *,
        store: SessionStore | None = None,
        token_ref: Callable[[str], str] = _same,
        recheck: Auth | None = None,
        max_age_s: float = 8 * 3600,
        idle_s: float = 3600,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._auth = auth
        self._store: SessionStore = MemorySessionStore() if store is None else store
        self._token_ref = token_ref
        self._recheck = auth if recheck is None else recheck
        self._max_age = max_age_s
        self._idle = idle_s
        self._clock = clock
        self._lock = threading.Lock()

    def open(self, token: str) -> tuple[str, str] | None:
        """Sign in with ``token``: ``(session id, reviewer)``, or None if it may not review."""
        reviewer = self._auth(token) if token else None
        if not reviewer:
            return None
        sid = secrets.token_urlsafe(32)
        now = self._clock()
        with self._lock:
            self._store.drop_older(now - self._max_age, now - self._idle)
            self._store.put(sid, Session(self._token_ref(token), reviewer, now, now))
        return sid, reviewer

    def reviewer(self, sid: object) -> str | None:
        """The reviewer of a live session whose token is still valid; ends it otherwise."""
        if not isinstance(sid, str) or not sid:
            return None
        now = self._clock()
        with self._lock:
            s = self._store.get(sid)
            if s is None:
                return None
            if now - s.created > self._max_age or now - s.seen > self._idle:
                self._store.drop(sid)
                return None
            self._store.touch(sid, now)
            token_ref = s.token_ref
        reviewer = self._recheck(token_ref)  # the token store decides, every time
        if reviewer is None:
            self.close(sid)
        return reviewer

    def close(self, sid: object) -> None:
        if isinstance(sid, str):
            with self._lock:
                self._store.drop(sid)

    def __len__(self) -> int:
        with self._lock:
            return self._store.count()
