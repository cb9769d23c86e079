"""Reviewer UI sessions in a shared file (server/ui/shared_sessions.py): two books on one
file are two worker processes."""

from __future__ import annotations

import hashlib
from pathlib import Path

from memorywire.server.ui.shared_sessions import SharedReviewSessions

LIVE = {"mwt_good": "rita"}


def _auth(token: str) -> str | None:
    return LIVE.get(token)


def _by_hash(h: str) -> str | None:
    return next((r for t, r in LIVE.items()
                 if hashlib.sha256(t.encode()).hexdigest() == h), None)


def _pair(tmp_path: Path, now: list[float]) -> tuple[SharedReviewSessions, SharedReviewSessions]:
    path = tmp_path / "tokens.db.ui-sessions"
    return tuple(  # type: ignore[return-value]
        SharedReviewSessions(path, _auth, _by_hash, max_age_s=100, idle_s=10,
                             clock=lambda: now[0]) for _ in range(2))


def test_a_session_opened_in_one_is_live_in_the_other_until_closed(tmp_path: Path) -> None:
    now = [1000.0]
    a, b = _pair(tmp_path, now)
    opened = a.open("mwt_good")
    assert opened is not None and opened[1] == "rita"
    assert b.reviewer(opened[0]) == "rita"
    b.close(opened[0])
    assert a.reviewer(opened[0]) is None
    assert a.open("mwt_bad") is None and len(a) == 0


def test_the_file_keeps_no_session_id_and_no_token(tmp_path: Path) -> None:
    now = [1000.0]
    a, _ = _pair(tmp_path, now)
    opened = a.open("mwt_good")
    assert opened is not None
    raw = (tmp_path / "tokens.db.ui-sessions").read_bytes()
    assert opened[0].encode() not in raw and b"mwt_good" not in raw


def test_idle_expiry_and_revocation_end_a_session(tmp_path: Path) -> None:
    now = [1000.0]
    a, b = _pair(tmp_path, now)
    first = a.open("mwt_good")
    assert first is not None
    now[0] += 11  # idle longer than idle_s
    assert b.reviewer(first[0]) is None
    second = a.open("mwt_good")
    assert second is not None and b.reviewer(second[0]) == "rita"
    LIVE.pop("mwt_good")
    try:
        assert b.reviewer(second[0]) is None  # the token store said no: session ended
        assert len(a) == 0
    finally:
        LIVE["mwt_good"] = "rita"
