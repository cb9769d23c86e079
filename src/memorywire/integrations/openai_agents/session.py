"""An Agents SDK ``Session`` whose conversation items are episodic memories with provenance.

Each input item becomes one memory: the user's messages are ``user``, the assistant's
messages, reasoning and tool calls are ``agent``, and a tool's output is ``tool_result``,
so poison that arrived through a tool can be removed by provenance. The item is kept whole
in metadata (the SDK replays it verbatim); ``content`` is its text for recall. The SDK's
session methods are async and the client blocks, so each call runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from agents.items import TResponseInputItem
from agents.memory.session_settings import SessionSettings

from memorywire.client import SyncMemory
from memorywire.integrations._common import (
    SOURCE_AGENT,
    SOURCE_TOOL_RESULT,
    SOURCE_USER,
    require_committed,
)
from memorywire.wire.models import MemoryRecord

__all__ = ["MemorywireSession", "source_of_item"]

_TOOL_OUTPUTS = ("function_call_output", "computer_call_output", "custom_tool_call_output",
                 "local_shell_call_output", "shell_call_output", "apply_patch_call_output",
                 "mcp_call")


def source_of_item(item: Any) -> str:
    """Provenance of one input item: by its role, else by its type."""
    role = item.get("role")
    kind = item.get("type", "message")
    if kind in _TOOL_OUTPUTS:
        return SOURCE_TOOL_RESULT
    if role == "user":
        return SOURCE_USER
    if role in ("system", "developer"):
        return "system"
    return SOURCE_AGENT


def _text(item: Any) -> str:
    for key in ("content", "output", "arguments"):
        value = item.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list):
            parts = [p.get("text") for p in value if isinstance(p, dict)]
            text = " ".join(p for p in parts if isinstance(p, str) and p)
            if text.strip():
                return text
    return json.dumps(item, sort_keys=True, default=str)[:2000]


class MemorywireSession:
    """The SDK's ``Session`` protocol over memorywire, one ``session_id`` per conversation."""

    def __init__(
        self,
        session_id: str,
        client: SyncMemory[Any],
        *,
        agent_id: str,
        user_id: str | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = session_id
        self.client = client
        self.agent_id = agent_id
        self.user_id = user_id
        self.session_settings = session_settings

    def _scope(self) -> dict[str, Any]:
        out: dict[str, Any] = {"agent_id": self.agent_id}
        if self.user_id is not None:
            out["user_id"] = self.user_id
        return out

    def _records(self) -> list[MemoryRecord]:
        out: list[MemoryRecord] = []
        cursor: str | None = None
        while True:
            page = self.client.list(
                self._scope(), types=["episodic"], filter={"session_id": self.session_id},
                limit=500, cursor=cursor,
            )
            out.extend(r for r in page.memories if "oa_item" in (r.metadata or {}))
            cursor = page.next_cursor
            if not cursor:
                break
        out.sort(key=lambda r: int((r.metadata or {})["oa_seq"]))
        return out

    def _get(self, limit: int | None) -> list[TResponseInputItem]:
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        rows = self._records()
        if limit is not None:
            rows = rows[-limit:] if limit > 0 else []
        return [(r.metadata or {})["oa_item"] for r in rows]

    def _add(self, items: list[TResponseInputItem]) -> None:
        base = time.time_ns()
        for i, item in enumerate(items):
            doc = dict(item)
            resp = self.client.remember(
                **self._scope(), type="episodic", content=_text(doc),
                source=source_of_item(doc),
                metadata={"session_id": self.session_id, "oa_seq": base + i, "oa_item": doc},
            )
            require_committed(resp, f"storing a {doc.get('type', 'message')} item")

    def _pop(self) -> TResponseInputItem | None:
        rows = self._records()
        if not rows:
            return None
        last = rows[-1]
        resp = self.client.forget(**self._scope(), ids=[last.id], reason="session pop_item")
        require_committed(resp, "removing the last session item")
        item: TResponseInputItem = (last.metadata or {})["oa_item"]
        return item

    def _clear(self) -> None:
        resp = self.client.forget(
            **self._scope(), filter={"session_id": self.session_id}, reason="session cleared"
        )
        require_committed(resp, "clearing the session")

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        return await asyncio.to_thread(self._get, limit)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        await asyncio.to_thread(self._add, list(items))

    async def pop_item(self) -> TResponseInputItem | None:
        return await asyncio.to_thread(self._pop)

    async def clear_session(self) -> None:
        await asyncio.to_thread(self._clear)
