"""Dump lines sealed under per-user data keys, so an erase reaches a dump written before it.

With ``per_user_keys`` on (:mod:`memorywire.governance.datakeys`), a record line keeps in the
clear only what locates the record (id, agent, user, type, times, confidence, source); its
``content``, ``metadata``, vector and history go into one AES-256-GCM box under the data key
of the record's agent and user, bound to those ids. The line's digest covers the sealed form,
so ``verify_dump`` checks a sealed dump without any key.

Opening needs the governance database that holds the keys. A line whose key was destroyed
(its user or agent was erased) cannot be opened by anyone, and an import leaves it out and
counts it (``sealed_erased``): an erased user does not come back from an old dump. A line
under a key this database never held (another deployment's dump) is refused, naming it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from memorywire.errors import InvalidRequest
from memorywire.governance.datakeys import Sealed, open_box, scope_aad, seal_box

__all__ = ["SEALED_FIELDS", "RecordOpener", "record_sealer"]

#: The record fields that travel only inside the box.
SEALED_FIELDS = ("content", "metadata")
_AAD = "memorywire/export-record"

Scope = tuple[str, str | None]
#: ``(record, vector object, history) -> sealed record`` (see ``DumpWriter.write``).
Sealer = Callable[[dict[str, Any], dict[str, Any] | None, list[Any] | None], dict[str, Any]]


def _aad(record: Mapping[str, Any]) -> bytes:
    return scope_aad(_AAD, str(record.get("agent_id")), record.get("user_id"),
                     str(record.get("id")))


def record_sealer(keys: Mapping[Scope, Sealed]) -> Sealer:
    """Seals each record under its scope's key, which ``keys`` must hold."""

    def seal(record: dict[str, Any], vector: dict[str, Any] | None,
             history: list[Any] | None) -> dict[str, Any]:
        key = keys[(str(record["agent_id"]), record.get("user_id"))]
        inside = {"content": record.get("content"), "metadata": record.get("metadata"),
                  "vector": vector, "history": history}
        plain = json.dumps(inside, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False).encode("utf-8")
        clear = {k: v for k, v in record.items() if k not in SEALED_FIELDS}
        return {**clear, "sealed": seal_box(key.key, key.kid, plain, _aad(record))}

    return seal


class RecordOpener:
    """Opens sealed record lines with the keys of one governance database.

    ``key(kid)`` answers a data key or ``None`` (destroyed, or never held here) and
    ``state(kid)`` which of the two; each key id is asked once.
    """

    def __init__(self, key: Callable[[str], bytes | None], state: Callable[[str], str]) -> None:
        self._key = key
        self._state = state
        self._seen: dict[str, bytes | None] = {}

    def __call__(self, record: dict[str, Any], line: int
                 ) -> tuple[dict[str, Any], Any, list[Any] | None] | None:
        """``(record, vector object, history)`` in the clear, or ``None`` when the line's
        key was destroyed (an erase): then nothing of it can be read, and the caller leaves
        it out."""
        box = record.get("sealed")
        kid = box.get("key") if isinstance(box, dict) else None
        if not isinstance(kid, str):
            raise InvalidRequest(f"dump line {line}: a sealed record without its key id")
        if kid not in self._seen:
            self._seen[kid] = self._key(kid)
            if self._seen[kid] is None and self._state(kid) != "destroyed":
                raise InvalidRequest(
                    f"dump line {line}: sealed under data key {kid!r}, which this "
                    "governance database never held (a dump of another deployment?)")
        key = self._seen[kid]
        if key is None:
            return None
        try:
            inside = json.loads(open_box(key, box, _aad(record)).decode("utf-8"))
        except InvalidRequest as exc:
            raise InvalidRequest(f"dump line {line}: {exc.message}") from None
        clear = {k: v for k, v in record.items() if k != "sealed"}
        return ({**clear, "content": inside["content"], "metadata": inside["metadata"]},
                inside["vector"], inside["history"])
