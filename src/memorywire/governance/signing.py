"""The deployment's Ed25519 signing key: the one receipts and audit checkpoints are signed with.

A server signs deletion receipts without a human at hand, so the key is found without asking:
the ``signing_key`` setting (``MEMORYWIRE_SIGNING_KEY``, a PEM file) when given; otherwise,
when governance is on, a key beside the governance database (``<file>.signing-key.pem`` for a
SQLite file, ``$MEMORYWIRE_HOME/signing-key.pem`` for PostgreSQL, where several servers share
one), created on first use (mode 0600) exactly like the audit HMAC key beside it. Without
either, a hard forget still erases but returns no receipt. The key is read lazily, on the first
hard forget, so a server that never erases never creates one.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    load_pem_private_key,
)

from memorywire.errors import InvalidRequest
from memorywire.governance.db import is_postgres_url
from memorywire.governance.keys import create_once

__all__ = ["SigningKey", "SigningKeySource", "default_signing_key_path", "load_signing_key_file"]

#: The key type, for modules that must not import ``cryptography`` themselves.
SigningKey = Ed25519PrivateKey


def load_signing_key_file(path: str | Path) -> Ed25519PrivateKey:
    """The Ed25519 private key in the PEM file ``path``; anything else is refused."""
    try:
        key = load_pem_private_key(Path(path).read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise InvalidRequest(f"signing key {path}: cannot load an unencrypted PEM key "
                             f"({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise InvalidRequest(f"signing key {path}: must be an Ed25519 private key (PEM)")
    return key


def default_signing_key_path(governance_db: str) -> Path:
    if is_postgres_url(governance_db):
        home = os.environ.get("MEMORYWIRE_HOME")
        return (Path(home) if home else Path.home() / ".memorywire") / "signing-key.pem"
    return Path(governance_db + ".signing-key.pem")


class SigningKeySource:
    """A key read (or created) on first use; ``path=None`` means the server signs nothing."""

    def __init__(self, path: str | Path | None, *, create: bool) -> None:
        self.path = None if path is None else Path(path)
        self._create = create
        self._key: Ed25519PrivateKey | None = None

    def get(self) -> Ed25519PrivateKey | None:
        if self._key is None and self.path is not None:
            if self._create and not self.path.exists():
                pem = Ed25519PrivateKey.generate().private_bytes(
                    Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
                create_once(self.path, pem)  # another process may win: then theirs is used
            self._key = load_signing_key_file(self.path)
        return self._key
