"""Per-user data keys: what lets an erase reach the copies a delete cannot.

A hard forget removes a memory from the store, but not from a dump written last week or the
governance database's record of the memory's old texts. With ``per_user_keys`` on, those
copies are sealed (AES-256-GCM) under a data key of the memory's scope (its agent and user),
and the data keys live here, in the governance database, each wrapped under a key-encryption
key kept in a file outside it. An erase that empties a scope destroys the scope's key (the
row keeps its id and when it was destroyed, never the key): every sealed copy of that scope,
wherever it went, can no longer be opened by this deployment or anyone who later obtains
its database or its key file.

What the key does *not* reach: a copy of the governance database together with the key file
taken before the erase (a backup holds the wrapped key), plaintext dumps written while the
setting was off, and what a reader decrypted and kept. The store's own rows are not sealed;
the erase hard-deletes them (docs/security.md says what each store scrubs).

The setting is recorded in the database when first turned on and stays on: every tool that
opens this governance database (``serve``, ``mcp``, ``export``) then seals, so a later
command without the setting cannot write a plaintext dump by mistake.
"""

from __future__ import annotations

import base64
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from memorywire.core.ids import new_id
from memorywire.errors import InvalidRequest
from memorywire.governance.db import GovDb
from memorywire.governance.keys import create_once

__all__ = [
    "KEK_ENV",
    "DataKeys",
    "Sealed",
    "default_kek_path",
    "open_box",
    "scope_aad",
    "seal_box",
]

KEK_ENV = "MEMORYWIRE_DATA_KEK_FILE"
#: A sealed value's ``alg``; a reader refuses any other.
ALG = "aes-256-gcm"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS data_keys(
    kid TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    wrapped TEXT,
    created_at INTEGER NOT NULL,
    destroyed_at INTEGER
);
CREATE INDEX IF NOT EXISTS data_keys_scope ON data_keys(agent_id, user_id, destroyed_at);
CREATE TABLE IF NOT EXISTS governance_settings(
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""
_SETTING = "per_user_keys"


def default_kek_path(target: str | Path, *, postgres: bool) -> Path:
    """``$MEMORYWIRE_DATA_KEK_FILE``; else ``<governance file>.data-kek`` for SQLite, and
    ``$MEMORYWIRE_HOME/data-kek.key`` for PostgreSQL (several servers share one)."""
    explicit = os.environ.get(KEK_ENV)
    if explicit:
        return Path(explicit)
    if postgres:
        home = os.environ.get("MEMORYWIRE_HOME")
        return (Path(home) if home else Path.home() / ".memorywire") / "data-kek.key"
    return Path(str(target) + ".data-kek")


def _load_kek(path: Path) -> bytes:
    if not path.exists():
        create_once(path, (secrets.token_hex(32) + "\n").encode("ascii"))
    try:
        kek = bytes.fromhex(path.read_text(encoding="utf-8").strip())
    except ValueError:
        raise InvalidRequest(f"data key-encryption key file {path} must hold hex digits "
                             "only") from None
    if len(kek) != 32:
        raise InvalidRequest(f"data key-encryption key file {path} must hold 32 bytes")
    return kek


def scope_aad(*parts: str | None) -> bytes:
    """Associated data binding a sealed value to where it belongs (ids, never content)."""
    return "\x00".join("" if p is None else p for p in parts).encode("utf-8")


def seal_box(key: bytes, kid: str, plaintext: bytes, aad: bytes) -> dict[str, str]:
    """``plaintext`` sealed under ``key``: ``{alg, key, nonce, data}`` (base64)."""
    nonce = secrets.token_bytes(12)
    data = AESGCM(key).encrypt(nonce, plaintext, aad)
    return {"alg": ALG, "key": kid, "nonce": base64.b64encode(nonce).decode("ascii"),
            "data": base64.b64encode(data).decode("ascii")}


def open_box(key: bytes, box: Any, aad: bytes) -> bytes:
    """The plaintext of :func:`seal_box`'s ``box``; ``InvalidRequest`` if it was changed."""
    try:
        if box.get("alg") != ALG:
            raise ValueError(f"unknown alg {box.get('alg')!r}")
        nonce = base64.b64decode(box["nonce"], validate=True)
        data = base64.b64decode(box["data"], validate=True)
        return AESGCM(key).decrypt(nonce, data, aad)
    except (AttributeError, KeyError, TypeError, ValueError, InvalidTag) as exc:
        raise InvalidRequest(f"a sealed value does not open under data key "
                             f"{box.get('key') if isinstance(box, dict) else '?'!r} "
                             f"(changed or misplaced): {type(exc).__name__}") from None


@dataclass(frozen=True)
class Sealed:
    """A scope's live data key, for sealing."""

    kid: str
    key: bytes


class DataKeys:
    """The data keys of one governance database. Every method runs on the governance worker
    (inside a transaction where it writes), as every other governance database call does."""

    def __init__(self, db: GovDb, kek_path: Path) -> None:
        self._db = db
        self._kek_path = kek_path
        self._kek: bytes | None = None
        if db.dialect == "sqlite":  # PostgreSQL sets its schema up on connect
            with db.transaction():
                db.execute(_SCHEMA)

    # --- the setting ------------------------------------------------------------------------

    def enabled(self) -> bool:
        rows = self._db.query("SELECT value FROM governance_settings WHERE name = ?",
                              (_SETTING,))
        return bool(rows) and rows[0][0] == "on"

    def enable(self) -> bool:
        """Turn sealing on for this database (it stays on); whether it was off before."""
        with self._db.transaction():
            if self.enabled():
                return False
            self._db.execute("INSERT INTO governance_settings(name, value) VALUES (?, 'on')",
                             (_SETTING,))
        self._wrapping()  # create the key file now, not at the first export
        return True

    # --- keys ---------------------------------------------------------------------------------

    def _wrapping(self) -> AESGCM:
        if self._kek is None:
            self._kek = _load_kek(self._kek_path)
        return AESGCM(self._kek)

    def _unwrap(self, kid: str, agent_id: str, user_id: str, wrapped: str) -> bytes:
        box = base64.b64decode(wrapped)
        return self._wrapping().decrypt(box[:12], box[12:], scope_aad(kid, agent_id, user_id))

    def key_for(self, agent_id: str, user_id: str | None, now: int) -> Sealed:
        """The scope's live key, created when it has none (after an erase: a new one)."""
        user = user_id or ""
        with self._db.transaction():
            rows = self._db.query(
                "SELECT kid, wrapped FROM data_keys WHERE agent_id = ? AND user_id = ? "
                "AND destroyed_at IS NULL ORDER BY created_at DESC LIMIT 1", (agent_id, user))
            if rows:
                kid, wrapped = str(rows[0][0]), str(rows[0][1])
                return Sealed(kid, self._unwrap(kid, agent_id, user, wrapped))
            kid, key = "dk_" + new_id(now), secrets.token_bytes(32)
            nonce = secrets.token_bytes(12)
            wrapped = base64.b64encode(
                nonce + self._wrapping().encrypt(nonce, key, scope_aad(kid, agent_id, user))
            ).decode("ascii")
            self._db.execute("INSERT INTO data_keys(kid, agent_id, user_id, wrapped, created_at)"
                             " VALUES (?, ?, ?, ?, ?)", (kid, agent_id, user, wrapped, now))
            return Sealed(kid, key)

    def key(self, kid: str) -> bytes | None:
        """The key ``kid``, or ``None`` when it was destroyed or never existed here."""
        rows = self._db.query("SELECT agent_id, user_id, wrapped FROM data_keys WHERE kid = ?",
                              (kid,))
        if not rows or rows[0][2] is None:
            return None
        agent_id, user, wrapped = (str(v) for v in rows[0])
        return self._unwrap(kid, agent_id, user, wrapped)

    def state(self, kid: str) -> str:
        """``live``, ``destroyed`` or ``unknown`` (another deployment's key)."""
        rows = self._db.query("SELECT destroyed_at FROM data_keys WHERE kid = ?", (kid,))
        if not rows:
            return "unknown"
        return "live" if rows[0][0] is None else "destroyed"

    def destroy(self, agent_id: str, user_id: str | None, now: int) -> list[str]:
        """Destroy the live keys of a scope (``user_id=None``: every user of the agent, and
        its memories without a user); returns their ids. The wrapped key is overwritten and
        the row kept, so a reader of an old copy learns when its key went."""
        where, args = "agent_id = ?", [agent_id]
        if user_id is not None:
            where, args = "agent_id = ? AND user_id = ?", [agent_id, user_id]
        with self._db.transaction():
            kids = [str(r[0]) for r in self._db.query(
                f"SELECT kid FROM data_keys WHERE {where} AND destroyed_at IS NULL", args)]
            for kid in kids:
                self._db.execute("UPDATE data_keys SET wrapped = NULL, destroyed_at = ? "
                                 "WHERE kid = ?", (now, kid))
        return kids

    def destroyed(self, agent_id: str, user_id: str | None) -> list[str]:
        """The ids of the scope's destroyed keys, oldest first."""
        where, args = "agent_id = ?", [agent_id]
        if user_id is not None:
            where, args = "agent_id = ? AND user_id = ?", [agent_id, user_id]
        return [str(r[0]) for r in self._db.query(
            f"SELECT kid FROM data_keys WHERE {where} AND destroyed_at IS NOT NULL "
            "ORDER BY destroyed_at, kid", args)]
