"""Reading memories plain mem0 wrote (``Memory.add``), not memorywire's mem0 adapter.

The location is the JSON file of the configuration the mem0 application passes to
``Memory.from_config``; only its ``vector_store`` block and ``history_db_path`` are used, so
no LLM or embedder is built (none is called). The collection is listed through mem0's own
vector-store class, the history database is read read-only with the standard library.

A mem0 item is a vector-store point whose payload holds ``data`` (the text), ``hash`` (MD5 of
the text), ``created_at``/``updated_at`` (ISO-8601), the scope ids ``user_id``, ``agent_id``,
``run_id``, the message's ``actor_id``/``role``, ``attributed_to``, ``memory_type``,
``expiration_date`` (a date), ``text_lemmatized`` (its BM25 text) and the caller's metadata
flattened beside them. Each becomes a ``semantic`` row with mem0's UUID as its id; what has no
row field travels under ``metadata.mem0`` (see :data:`CARRIED`).
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio.to_thread

from memorywire.core.records import Row
from memorywire.errors import InvalidRequest
from memorywire.portability.plan import source_note
from memorywire.portability.sources import ForeignData
from memorywire.store.mem0.mapping import import_mem0
from memorywire.wire.models import MemoryType

__all__ = ["CARRIED", "Mem0NativeSource"]

#: mem0 payload keys with no row field, kept under ``metadata.mem0``.
CARRIED = ("hash", "run_id", "actor_id", "role", "attributed_to", "memory_type")
#: mem0 payload keys that are not the caller's metadata.
_CORE = {"data", "created_at", "updated_at", "user_id", "agent_id", "expiration_date",
         "text_lemmatized", *CARRIED}
KEPT = frozenset({"id", "agent_id", "user_id", "type", "stored", "metadata", "created_at",
                  "updated_at", "expires_at"})


def _ms(value: Any) -> int | None:
    if value in (None, ""):
        return None
    stamp = datetime.fromisoformat(str(value))
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return int(stamp.timestamp() * 1000)


def _expiry(value: Any) -> int | None:
    """mem0 hides an item once ``expiration_date`` is before today (UTC): it lives through
    that whole day, so it expires at the next midnight."""
    if value in (None, ""):
        return None
    day = date.fromisoformat(str(value)[:10]) + timedelta(days=1)
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


class Mem0NativeSource:
    def __init__(self, config_path: str, *, default_agent: str | None = None) -> None:
        self._path = config_path
        self._agent = default_agent

    @property
    def name(self) -> str:
        return f"mem0:{self._path}"

    @property
    def kept_fields(self) -> frozenset[str]:
        return KEPT

    async def read(self) -> ForeignData:
        return await anyio.to_thread.run_sync(self._read)

    def _config(self) -> Any:
        try:
            raw = json.loads(Path(self._path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidRequest(f"cannot read the mem0 configuration {self._path}: {exc}") \
                from exc
        import_mem0()
        from mem0.configs.base import MemoryConfig

        try:
            return MemoryConfig(**{k: raw[k] for k in ("vector_store", "history_db_path")
                                   if k in raw})
        except Exception as exc:  # pydantic's ValidationError, mem0's own checks
            raise InvalidRequest(f"mem0 configuration {self._path}: {exc}") from exc

    def _read(self) -> ForeignData:
        config = self._config()
        from mem0.utils.factory import VectorStoreFactory

        store = VectorStoreFactory.create(config.vector_store.provider,
                                          config.vector_store.config)
        try:
            points = _list_all(store)
        finally:
            client = getattr(store, "client", None)
            if client is not None and hasattr(client, "close"):
                client.close()
        return self._convert(points, _history(config.history_db_path))

    def _convert(self, points: list[Any], history: list[dict[str, Any]]) -> ForeignData:
        data = ForeignData()
        unscoped = assigned = carried = expiring = dropped_index = 0
        for point in points:
            p = dict(point.payload or {})
            if "mw_id" in p:
                raise InvalidRequest(
                    f"mem0 item {point.id} was written by memorywire's mem0 store; move that "
                    "collection with: memorywire migrate --from mem0://?path=...&collection=...")
            agent = p.get("agent_id")
            if agent is None:
                if self._agent is None:
                    unscoped += 1
                    continue
                agent, assigned = self._agent, assigned + 1
            meta = {k: v for k, v in p.items() if k not in _CORE}
            extra = {k: p[k] for k in CARRIED if p.get(k) is not None}
            if extra:
                if "mem0" in meta:
                    raise InvalidRequest(f"mem0 item {point.id}: its metadata key 'mem0' would "
                                         "collide with the carried mem0 fields")
                meta["mem0"] = extra
                carried += 1
            created = _ms(p.get("created_at")) or 0
            updated = _ms(p.get("updated_at"))
            expires = _expiry(p.get("expiration_date"))
            expiring += expires is not None
            dropped_index += "text_lemmatized" in p
            data.rows.append(Row(
                id=str(point.id), agent_id=str(agent), user_id=p.get("user_id"),
                type=MemoryType.SEMANTIC, stored=str(p.get("data", "")), metadata=meta,
                confidence=1.0, source=None, created_at=created,
                updated_at=None if updated == created else updated, expires_at=expires))
        if unscoped:
            raise InvalidRequest(
                f"{unscoped} mem0 memories have no agent_id (mem0 scoped them by user_id or "
                "run_id only); pass --agent A to import them under agent A")
        present = {str(p.id) for p in points}
        revisions = sum(1 for h in history if h["event"] == "UPDATE"
                        and h["memory_id"] in present)
        deleted = len({h["memory_id"] for h in history if h["event"] == "DELETE"} - present)
        data.notes = [
            source_note("mem0_fields", carried, "transformed",
                        f"{', '.join(CARRIED)} kept under metadata.mem0"),
            source_note("expiration_date", expiring, "transformed",
                        "the date became expires_at (the next UTC midnight)"),
            source_note("agent_assigned", assigned, "transformed",
                        "memories without a mem0 agent_id were given --agent"),
            source_note("text_lemmatized", dropped_index, "derived",
                        "mem0's BM25 text is an index of the content; the target indexes it"),
            source_note("revisions", revisions, "lost",
                        "earlier texts of updated memories (mem0 history UPDATE events)"),
            source_note("deleted", deleted, "lost",
                        "memories mem0 deleted: only their text and id remain in its "
                        "history, not their scope"),
        ]
        return data


def _list_all(store: Any) -> list[Any]:
    """Every point: mem0's ``list`` has no cursor, so ask for more until fewer come back."""
    limit = 1000
    while True:
        got = store.list(filters=None, top_k=limit)
        if isinstance(got, tuple | list) and got and isinstance(got[0], tuple | list):
            got = got[0]
        points = list(got or [])
        if len(points) < limit:
            return points
        limit *= 4


def _history(path: str | None) -> list[dict[str, Any]]:
    if not path or path == ":memory:" or not Path(path).is_file():
        return []
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("SELECT memory_id, event FROM history")]
    except sqlite3.DatabaseError as exc:
        raise InvalidRequest(f"mem0 history database {path}: {exc}") from exc
    finally:
        con.close()
