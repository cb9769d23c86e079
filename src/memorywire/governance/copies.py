"""What a governed store keeps beside the store, and what an erase does to it.

:class:`CopyKeeper` is the part of a :class:`~memorywire.governance.store.GovernedStore` that
holds the copies of memory content governance is answerable for: the texts an update
replaced (:mod:`.revision_texts`) and, with ``per_user_keys`` on, the per-user data keys
that seal those texts and every dump (:mod:`.datakeys`). After a hard forget it removes the
kept texts of the forgotten memories; when the forget left the scope (agent and user) empty,
as an erase does, it removes the scope's texts and destroys its data keys, and says which
copies that reached (the ``copies`` of the erase's receipt).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from memorywire.core.clock import Clock
from memorywire.core.ids import new_id
from memorywire.core.records import ListQuery
from memorywire.errors import InvalidRequest
from memorywire.governance.datakeys import DataKeys, Sealed
from memorywire.governance.db import GovDb
from memorywire.governance.policies import PolicySet
from memorywire.governance.revision_texts import RevisionTexts
from memorywire.governance.worker import GovWorker
from memorywire.store.base import MemoryStore

__all__ = ["NOT_COVERED", "CopyKeeper"]

#: Copies no erase here can reach; every receipt's ``copies`` names them.
NOT_COVERED = (
    "backups of the store or governance database files taken before the erase "
    "(with the key file, a backup still opens sealed copies)",
    "dumps written while per_user_keys was off",
    "text a reader already decrypted or copied elsewhere",
)


class CopyKeeper:
    """Kept texts and data keys of one governance database (see the module)."""

    def __init__(self, db: GovDb, worker: GovWorker, clock: Clock, kek_path: Path,
                 per_user_keys: bool) -> None:
        self._w = worker
        self._clock = clock
        self.keys = DataKeys(db, kek_path)
        if per_user_keys:
            self.keys.enable()
        #: Whether dumps and kept texts are sealed (recorded in the database: stays on).
        self.sealing = self.keys.enabled()
        self.texts = RevisionTexts(db, self.keys if self.sealing else None)

    def history_mode(self, policies: PolicySet) -> str:
        """``readable``, ``sealed`` or ``off`` (see :mod:`.revision_texts`)."""
        mode = policies.history_text or ("sealed" if self.sealing else "readable")
        if mode == "sealed" and not self.sealing:
            raise InvalidRequest("governance history_text 'sealed' needs per-user data keys: "
                                 "turn per_user_keys on, or choose readable or off")
        return mode

    # --- kept texts -----------------------------------------------------------------------

    async def keep_replaced(self, inner: MemoryStore, policies: PolicySet, agent_id: str,
                            memory_id: str, user_id: str | None, content: Any
                            ) -> tuple[str, Callable[[], None]] | None:
        """For an update about to set ``content``: the kept text's id and the worker job
        that keeps the text it replaces (run with the update's ``done`` entry), or ``None``
        (no new content, ``history_text: off``, or no such memory)."""
        mode = self.history_mode(policies)
        if content is None or mode == "off":
            return None
        old = await inner.get(agent_id, memory_id, user_id)
        if old is None:
            return None
        return self.keep_job(agent_id, old.user_id, memory_id, old.content, mode)

    def keep_job(self, agent_id: str, user_id: str | None, memory_id: str, content: Any,
                 mode: str) -> tuple[str, Callable[[], None]]:
        """A new kept text's id, and the worker job that stores it (run with ``done``)."""
        text_id = new_id(self._clock.now_ms())
        now = self._clock.now_ms()

        def job() -> None:
            self.texts.put(text_id, agent_id, user_id, memory_id, content, now,
                           sealed=mode == "sealed")

        return text_id, job

    def previous_texts(self, text_ids: Sequence[str]) -> dict[str, tuple[str, Any]]:
        """``{id: (state, content)}`` for ``history`` (see :meth:`RevisionTexts.read`)."""
        if not text_ids:
            return {}
        return self._w.call(lambda: self.texts.read(list(text_ids)))

    # --- dumps ------------------------------------------------------------------------------

    async def keys_for(self, scopes: Iterable[tuple[str, str | None]]
                       ) -> dict[tuple[str, str | None], Sealed]:
        """Each scope's live data key, created where a scope has none (an export seals)."""
        wanted = sorted(set(scopes), key=lambda s: (s[0], s[1] or ""))
        now = self._clock.now_ms()
        return await self._w.grouped(
            lambda: {s: self.keys.key_for(s[0], s[1], now) for s in wanted})

    def key(self, kid: str) -> bytes | None:
        """A data key by id for opening a sealed copy, ``None`` when destroyed or foreign.
        Asked once per key id by a dump reader (few: one per user)."""
        return self._w.call(lambda: self.keys.key(kid))

    def key_state(self, kid: str) -> str:
        return self._w.call(lambda: self.keys.state(kid))

    # --- after a hard forget ------------------------------------------------------------------

    async def after_hard_forget(self, inner: MemoryStore, agent_id: str, user_id: str | None,
                                ids: Sequence[str]) -> dict[str, Any]:
        """Drop what is kept of ``ids``; when the scope is now empty, drop all it kept and
        destroy its data keys. Idempotent: an erase retried after a crash finishes here.
        Returns the receipt's ``copies`` statement."""
        left = await inner.list(ListQuery(agent_id=agent_id, user_id=user_id,
                                          include_archived=True, limit=1))
        now = self._clock.now_ms()
        emptied = not left

        def job() -> tuple[list[str], list[str]]:
            self.texts.drop(agent_id, ids)
            if not emptied:
                return [], []
            self.texts.drop_scope(agent_id, user_id)
            return self.keys.destroy(agent_id, user_id, now), self.keys.destroyed(agent_id,
                                                                                 user_id)

        destroyed_now, destroyed = await self._w.grouped(job)
        return self._statement(emptied, destroyed_now, destroyed)

    def _statement(self, emptied: bool, destroyed_now: list[str],
                   destroyed: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {"store": "hard-deleted (see erased)",
                               "history_texts": "removed"}
        if not self.sealing:
            out["dumps"] = ("not covered: per_user_keys is off, so dumps written before "
                            "hold the content in plain text")
        elif not emptied:
            out["dumps"] = ("not covered: the scope still holds memories, so its data key "
                            "stays; it is destroyed when the scope is erased")
        elif not destroyed:
            out["dumps"] = "covered: no dump of this scope was ever sealed (it had no data key)"
        else:
            out["dumps"] = ("covered: every dump sealed under the destroyed data keys can no "
                            "longer be opened")
            out["data_keys_destroyed"] = destroyed
            out["data_keys_destroyed_now"] = destroyed_now
        out["not_covered"] = list(NOT_COVERED)
        return out
