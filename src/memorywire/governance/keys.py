"""The per-deployment secret that keys every content hash governance writes.

The audit log and the approval queue never hold memory content, only hashes of it, so that a
log can be shown to auditors and reviewers. A plain SHA-256 of a short secret (a 4-digit PIN,
a yes/no answer) is no protection: anyone who reads the log hashes the 10,000 candidates and
compares. Every such hash is therefore an HMAC-SHA256 under a 256-bit secret that lives in a
file of its own, outside the database, beside the checkpoint signing key; without it the
hashes say nothing, with it an operator can still check "does this entry refer to that text".

Where the file is: the ``audit_key`` argument (or ``MEMORYWIRE_AUDIT_KEY_FILE``); otherwise,
for a SQLite governance file, ``<file>.audit-key`` beside it; for PostgreSQL (several servers
must share one key) ``$MEMORYWIRE_HOME/audit-hmac.key``. A missing file is created (mode 0600).
Each keyed hash is written with the key's id (``hmac_key``), so after a rotation an operator
knows which archived key checks which entry; the hash chain itself does not use this key, so
rotating it never breaks verification. See docs/decisions.md for the rotation steps.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from pathlib import Path
from typing import Any

from memorywire.errors import InvalidRequest
from memorywire.governance.chain import canonical_json

__all__ = ["AuditKey", "create_once", "default_key_path"]

ENV = "MEMORYWIRE_AUDIT_KEY_FILE"


def create_once(path: Path, data: bytes) -> None:
    """Publish a secret file whole, or leave the one another process published first.

    Several servers sharing one PostgreSQL database start at once and each may find the key
    missing. Writing in place (``O_EXCL`` then ``write``) lets a second process see the file
    before its bytes are there and read an empty key; instead the bytes go to a private temp
    file that is hard-linked into place, which either appears complete or fails because the
    other process's file is already there, in which case theirs is used.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        with contextlib.suppress(FileExistsError):  # theirs is already in place
            os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def default_key_path(target: str | Path, *, postgres: bool) -> Path:
    explicit = os.environ.get(ENV)
    if explicit:
        return Path(explicit)
    if postgres:
        home = os.environ.get("MEMORYWIRE_HOME")
        return (Path(home) if home else Path.home() / ".memorywire") / "audit-hmac.key"
    return Path(str(target) + ".audit-key")


class AuditKey:
    """An HMAC-SHA256 key; :meth:`digest` is what governance writes instead of a SHA-256."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < 32:
            raise InvalidRequest("an audit HMAC key needs at least 32 bytes")
        self._secret = secret
        #: Names the key without revealing it (first 16 hex digits of its SHA-256).
        self.key_id = hashlib.sha256(b"memorywire-audit-key:" + secret).hexdigest()[:16]

    @classmethod
    def load_or_create(cls, path: str | Path) -> AuditKey:
        p = Path(path)
        if not p.exists():
            create_once(p, (secrets.token_hex(32) + "\n").encode("ascii"))
        text = p.read_text(encoding="utf-8").strip()
        try:
            return cls(bytes.fromhex(text))
        except ValueError:
            raise InvalidRequest(f"audit key file {p} must hold hex digits only") from None

    def digest(self, value: Any) -> str:
        """Keyed hash of a JSON value (strings are hashed as they are, not JSON-quoted)."""
        raw = value if isinstance(value, str) else canonical_json(value)
        return hmac.new(self._secret, raw.encode("utf-8"), hashlib.sha256).hexdigest()
