"""Reading the first implementation's SQLite file (PyPI ``memorywire`` 0.5.0, ``sqlite-vec://``).

0.5.0 had no export format; its store is one SQLite file (``SqliteVecStore._init_schema``):
``memories`` (one row per memory, content as text, metadata as JSON text), ``memories_fts``
and ``memories_vec`` (derived indexes), ``procedures`` (a copy of each procedural memory's
machine, written once), ``episodes`` (created, never written by 0.5.0) and ``audit_log``
(unchained JSON payloads). The file is opened read-only with the standard library; the vec0
table is never touched, so sqlite-vec is not needed.

How 0.5.0 encoded state, and what each becomes here:

- ``deleted_at = -1`` is a write staged for approval: not a memory yet. Into a governed
  target it is staged again for a reviewer (note ``pending``); elsewhere it is lost.
- an expire with ``action=archive`` set ``metadata.archived = true`` and ``deleted_at``:
  that is ``archived_at`` here, and the marker key is removed (note ``archived_marker``).
- a merge soft-deleted the losers without recording the survivor; the survivor is recovered
  from the merge's audit entry (note ``merge_survivor``; a merge whose survivor cannot be
  told apart leaves ``merged_into`` empty and is counted as lost).
- a demotion multiplied ``confidence`` by 0.25 and left no mark: the confidence carries it.
- recalls set ``last_recalled_at`` but were not counted: ``recall_count`` starts at 0.
- a machine 0.5.0 accepted that today's procedure rules refuse is not imported (note
  ``refused_procedure``, lost), nor is a row whose metadata is not a JSON object.
- ``audit_log`` (unchained, one row per operation, content in its payloads) becomes history:
  into a governed target each entry is an imported entry of the target's audit chain, naming
  the memories it touched, with the operation, time, sequence number, reviewer and reason of
  the original, but no content (this project's log keeps none). A memory's ``history`` then
  lists its 0.5 revisions. Into an ungoverned target the log is lost (note ``audit_log``).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio.to_thread

from memorywire.core.content import content_to_storage
from memorywire.core.records import Row
from memorywire.errors import InvalidRequest, MemorywireError
from memorywire.portability.plan import source_note
from memorywire.portability.sources import ForeignData
from memorywire.wire.models import PENDING_APPROVAL_DELETED_AT, MemoryType, RememberRequest

__all__ = ["COLUMNS", "Mw05Source"]

#: The ``memories`` columns of 0.5.0's DDL, in order.
COLUMNS = ("id", "agent_id", "user_id", "type", "content", "metadata", "confidence", "source",
           "created_at", "updated_at", "expires_at", "deleted_at", "last_recalled_at")
#: The tables 0.5.0 creates beside its indexes (today's SQLite store has a ``memories`` too).
TABLES = frozenset({"memories", "procedures", "episodes", "audit_log"})
#: Row fields a 0.5.0 file can fill (``demoted`` and ``recall_count`` never existed there).
KEPT = frozenset({"id", "agent_id", "user_id", "type", "stored", "metadata", "confidence",
                  "source", "created_at", "updated_at", "expires_at", "deleted_at",
                  "archived_at", "last_recalled_at", "merged_into"})
#: How far before its audit entry a merge may have stamped its losers (same transaction).
_MERGE_WINDOW_MS = 5_000


class Mw05Source:
    def __init__(self, path: str) -> None:
        if path.startswith("sqlite-vec://"):
            path = path[len("sqlite-vec://"):]
        self._path = path
        self._extra: list[str] = []

    @property
    def name(self) -> str:
        return f"memorywire-0.5:{self._path}"

    @property
    def kept_fields(self) -> frozenset[str]:
        return KEPT

    async def read(self) -> ForeignData:
        return await anyio.to_thread.run_sync(self._read)

    def check(self) -> None:
        """Refuse (``InvalidRequest``) unless the file is a 0.5 database; reads nothing more."""
        self._connect().close()

    def _connect(self) -> sqlite3.Connection:
        if not Path(self._path).is_file():
            raise InvalidRequest(f"no memorywire 0.5 database at {self._path}")
        con = sqlite3.connect(f"file:{self._path}?mode=ro", uri=True)
        con.row_factory = sqlite3.Row
        try:
            tables = {r["name"] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            columns = [r["name"] for r in con.execute("PRAGMA table_info(memories)")]
        except sqlite3.DatabaseError as exc:
            con.close()
            raise InvalidRequest(f"{self._path} is not a SQLite database: {exc}") from exc
        missing = sorted(TABLES - tables) + sorted(f"memories.{c}" for c in COLUMNS
                                                   if c not in columns)
        if missing:
            con.close()
            raise InvalidRequest(f"{self._path} is not a memorywire 0.5 database "
                                 f"(it lacks {', '.join(missing)})")
        self._extra = [c for c in columns if c not in COLUMNS]
        return con

    def _read(self) -> ForeignData:
        con = self._connect()
        try:
            raw = [dict(r) for r in con.execute("SELECT * FROM memories ORDER BY created_at, id")]
            audit_rows = [dict(r) for r in con.execute("SELECT * FROM audit_log ORDER BY id")]
            episodes = con.execute("SELECT count(*) FROM episodes").fetchone()[0]
        finally:
            con.close()
        return self._convert(raw, audit_rows, int(episodes))

    def _convert(self, raw: list[dict[str, Any]], audit_rows: list[dict[str, Any]],
                 episodes: int) -> ForeignData:
        merges = [r for r in audit_rows if r["operation"] == "merge"]
        pending = [r for r in raw if r["deleted_at"] == PENDING_APPROVAL_DELETED_AT]
        raw = [r for r in raw if r["deleted_at"] != PENDING_APPROVAL_DELETED_AT]
        survivors, unresolved = _merge_survivors(raw, merges)
        data = ForeignData()
        archived = refused = 0
        for r in raw:
            try:
                meta = json.loads(r["metadata"]) if r["metadata"] else {}
                if not isinstance(meta, dict):
                    raise InvalidRequest("metadata is not a JSON object")
                kind = MemoryType(r["type"])
                stored = content_to_storage(kind, r["content"])
            except (MemorywireError, ValueError):
                refused += 1
                continue
            deleted_at, archived_at = r["deleted_at"], None
            if deleted_at is not None and meta.get("archived") is True:
                archived_at, deleted_at = deleted_at, None
                del meta["archived"]
                archived += 1
            data.rows.append(Row(
                id=r["id"], agent_id=r["agent_id"], user_id=r["user_id"], type=kind,
                stored=stored, metadata=meta,
                confidence=1.0 if r["confidence"] is None else float(r["confidence"]),
                source=r["source"], created_at=int(r["created_at"]),
                updated_at=None if r["updated_at"] == r["created_at"] else r["updated_at"],
                expires_at=r["expires_at"], deleted_at=deleted_at, archived_at=archived_at,
                last_recalled_at=r["last_recalled_at"],
                merged_into=survivors.get((r["agent_id"], r["id"]))))
        data.history = _history(self.name, audit_rows, raw)
        data.pending = [doc for r in pending if (doc := _pending_doc(r)) is not None]
        data.carried = {
            "pending": "staged again in the target's approval queue for a reviewer",
            "audit_log": "carried as history: imported entries of the target's audit chain "
                         "(operation, time, memories, reviewer; no content)",
        }
        data.notes = [
            source_note("pending", len(pending), "lost",
                        "writes staged for approval (deleted_at = -1) are not memories yet; "
                        "a governed target (--governance-db) stages them again"),
            source_note("archived_marker", archived, "transformed",
                        "metadata.archived + deleted_at became archived_at"),
            source_note("merge_survivor", len(survivors), "transformed",
                        "merged_into recovered from the merge's audit entry"),
            source_note("merge_unresolved", unresolved, "lost",
                        "merged-away rows whose survivor the audit log does not determine "
                        "(kept as deleted, merged_into empty)"),
            source_note("refused_row", refused, "lost",
                        "a machine today's procedure rules refuse, an unknown type or "
                        "metadata that is not a JSON object"),
            source_note("audit_log", len(audit_rows), "lost",
                        "0.5.0's audit log needs a governed target (--governance-db) to be "
                        "carried as history"),
            source_note("episodes", episodes, "lost", "0.5.0's episodes table has no v0 form"),
            source_note("extra_columns", len(self._extra), "lost",
                        f"columns 0.5.0 did not define: {self._extra}"),
        ]
        return data


def _merge_survivors(raw: list[dict[str, Any]],
                     merges: list[dict[str, Any]]) -> tuple[dict[tuple[str, str], str], int]:
    """``(agent, loser id) -> survivor id`` for every merge the audit log determines, and the
    number of merged-away rows it does not.

    0.5.0 resolved each merge key as a row id, else as ``metadata.entity_name``; its losers
    were stamped ``deleted_at`` just before the audit entry, and the survivor (the canonical,
    the most confident row, or the row that absorbed the content) was left live. A merge is
    determined when exactly one of its rows was live at that moment.
    """
    out: dict[tuple[str, str], str] = {}
    seen_losers: set[tuple[str, str]] = set()
    for m in merges:
        try:
            payload = json.loads(m["payload"])
            keys = {str(payload["canonical"]), *map(str, payload["duplicates"])}
        except (ValueError, KeyError, TypeError):
            continue
        ts, agent = int(m["ts"]), m["agent_id"]
        rows = [r for r in raw if r["agent_id"] == agent
                and (r["id"] in keys or _entity(r) in keys)]
        losers = [r for r in rows if r["deleted_at"] is not None
                  and ts - _MERGE_WINDOW_MS <= r["deleted_at"] <= ts]
        live = [r for r in rows if r["deleted_at"] is None or r["deleted_at"] > ts]
        for r in losers:
            seen_losers.add((agent, r["id"]))
            if len(live) == 1:
                out[(agent, r["id"])] = live[0]["id"]
    return out, len(seen_losers) - len(out)


def _history(source: str, audit_rows: list[dict[str, Any]],
             raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each 0.5.0 audit row as an event of the target's log (see the module docstring)."""
    by_entity = {(r["agent_id"], name): r["id"] for r in raw
                 if (name := _entity(r)) is not None}
    out = []
    for a in audit_rows:
        payload, result = _obj(a["payload"]), _obj(a["result"])
        agent = str(a["agent_id"] or payload.get("agent_id") or "")
        if not agent:
            continue
        named: list[Any] = [a["memory_id"], *(payload.get("ids") or []),
                            *(result.get("forgotten_ids") or [])]
        if a["operation"] == "merge":
            named += [payload.get("canonical"), *(payload.get("duplicates") or [])]
        ids = list(dict.fromkeys(by_entity.get((agent, str(n)), str(n))
                                 for n in named if isinstance(n, str) and n))
        details: dict[str, Any] = {
            "phase": "event",
            "imported": {"source": source, "seq": int(a["id"]), "at": int(a["ts"])},
            "user_id": a["user_id"] or payload.get("user_id"),
            "request_keys": sorted(k for k in payload if k != "agent_id"),
            "result": {k: v for k, v in result.items() if k not in ("content", "results")},
        }
        for key in ("reason", "hard_delete", "strategy", "action", "k"):
            if key in payload:
                details[key] = payload[key]
        if a["approved_by"]:
            details["approved_by"] = a["approved_by"]
            details["approval_at"] = a["approval_at"]
        out.append({"actor": "memorywire-0.5", "action": str(a["operation"]),
                    "agent_id": agent, "memory_ids": ids, "details": details})
    return out


def _pending_doc(r: dict[str, Any]) -> dict[str, Any] | None:
    """A 0.5.0 staged write as a pending ``remember`` for the target's queue (``None`` when
    today's rules refuse it: it could never be approved)."""
    try:
        meta = json.loads(r["metadata"]) if r["metadata"] else None
        request = RememberRequest(
            id=r["id"], agent_id=r["agent_id"], user_id=r["user_id"], type=MemoryType(r["type"]),
            content=r["content"], metadata=meta,
            confidence=1.0 if r["confidence"] is None else float(r["confidence"]),
            source=r["source"], expires_at=r["expires_at"])
        content_to_storage(request.type, request.content)
    except (MemorywireError, ValueError):
        return None
    return {"id": r["id"], "operation": "remember", "agent_id": r["agent_id"],
            "user_id": r["user_id"], "request": request.model_dump(mode="json", exclude_none=True),
            "requested_by": "memorywire-0.5",
            "reasoning": "staged for approval in memorywire 0.5 (approval_required)",
            "created_at": int(r["created_at"]), "updated_at": int(r["updated_at"] or
                                                                 r["created_at"]),
            "memory_id": r["id"]}


def _obj(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _entity(row: dict[str, Any]) -> str | None:
    try:
        meta = json.loads(row["metadata"]) if row["metadata"] else {}
    except ValueError:
        return None
    name = meta.get("entity_name") if isinstance(meta, dict) else None
    return None if name is None else str(name)
