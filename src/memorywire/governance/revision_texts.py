"""The text an update replaced, kept so a memory's history can show what it said before.

The audit log is append-only and holds no content (only keyed hashes), so it cannot be where
an old text lives: a hard forget or an erase could never remove it. The old text is kept
here instead, in a table of the governance database that a hard forget of the memory (direct
or approved) and an erase empty; the update's ``done`` audit entry names the row
(``previous_text``), and ``history`` reads it back as the revision's ``previous_content``.

The policy's ``history_text`` says how: ``readable`` keeps the text as it was, ``sealed``
keeps it sealed under the scope's data key (:mod:`.datakeys`: an erase that destroys the key
makes every kept text of the scope unreadable too), ``off`` keeps nothing (the hash alone, as
before). Left out, it is ``sealed`` where ``per_user_keys`` is on and ``readable`` elsewhere.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memorywire.governance.datakeys import DataKeys, open_box, scope_aad, seal_box
from memorywire.governance.db import GovDb

__all__ = ["HISTORY_TEXT", "RevisionTexts"]

#: The values of the policy's ``history_text``.
HISTORY_TEXT = ("readable", "sealed", "off")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS revision_texts(
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    user_id TEXT,
    memory_id TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS revision_texts_memory ON revision_texts(agent_id, memory_id);
CREATE INDEX IF NOT EXISTS revision_texts_user ON revision_texts(agent_id, user_id);
"""


class RevisionTexts:
    """Old texts of updated memories; every method runs on the governance worker."""

    def __init__(self, db: GovDb, keys: DataKeys | None) -> None:
        self._db = db
        self._keys = keys
        if db.dialect == "sqlite":  # PostgreSQL sets its schema up on connect
            with db.transaction():
                db.execute(_SCHEMA)

    def put(self, text_id: str, agent_id: str, user_id: str | None, memory_id: str,
            content: Any, now: int, *, sealed: bool) -> None:
        """Keep ``content`` (sealed under the scope's data key when ``sealed``)."""
        raw = json.dumps(content, ensure_ascii=False)
        body: Any = {"text": raw}
        if sealed:
            assert self._keys is not None, "sealed history text needs per-user data keys"
            key = self._keys.key_for(agent_id, user_id, now)
            body = {"sealed": seal_box(key.key, key.kid, raw.encode("utf-8"),
                                       scope_aad(agent_id, user_id, memory_id, text_id))}
        self._db.execute(
            "INSERT INTO revision_texts(id, agent_id, user_id, memory_id, created_at, body) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (text_id, agent_id, user_id, memory_id, now, json.dumps(body)))

    def read(self, text_ids: Sequence[str]) -> dict[str, tuple[str, Any]]:
        """``{id: (state, content)}``: state ``kept`` with the text, ``erased`` (the row or
        its data key is gone) with ``None``."""
        out: dict[str, tuple[str, Any]] = {i: ("erased", None) for i in text_ids}
        for text_id in text_ids:
            rows = self._db.query("SELECT agent_id, user_id, memory_id, body FROM "
                                  "revision_texts WHERE id = ?", (text_id,))
            if not rows:
                continue
            agent_id, user_id, memory_id, body_text = rows[0]
            body = json.loads(str(body_text))
            if "text" in body:
                out[text_id] = ("kept", json.loads(body["text"]))
                continue
            box = body["sealed"]
            key = None if self._keys is None else self._keys.key(str(box.get("key")))
            if key is None:
                continue
            raw = open_box(key, box, scope_aad(str(agent_id), None if user_id is None
                                               else str(user_id), str(memory_id), text_id))
            out[text_id] = ("kept", json.loads(raw.decode("utf-8")))
        return out

    def drop(self, agent_id: str, memory_ids: Sequence[str]) -> None:
        """Remove the kept texts of memories that were hard-deleted."""
        for memory_id in memory_ids:
            self._db.execute("DELETE FROM revision_texts WHERE agent_id = ? AND memory_id = ?",
                             (agent_id, memory_id))

    def drop_scope(self, agent_id: str, user_id: str | None) -> None:
        """Remove every kept text of an erased scope (``user_id=None``: the whole agent)."""
        if user_id is None:
            self._db.execute("DELETE FROM revision_texts WHERE agent_id = ?", (agent_id,))
        else:
            self._db.execute("DELETE FROM revision_texts WHERE agent_id = ? AND user_id = ?",
                             (agent_id, user_id))
