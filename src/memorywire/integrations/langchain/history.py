"""A LangChain chat history whose turns are episodic memories with provenance.

The role of a message decides its ``source``: what a human typed is ``user``, what the model
said is ``agent`` and what a tool returned is ``tool_result``, so a poisoned tool answer can
later be found and removed by provenance without touching the human's turns. The session
(LangChain's ``session_id``, LangGraph's ``thread_id``) goes into metadata, which is what
``messages`` and ``clear`` filter on. The full message is kept in metadata too, so tool-call
ids and additional fields survive the round trip; ``content`` is the text recall searches.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from memorywire.client import SyncMemory
from memorywire.integrations._common import (
    SOURCE_AGENT,
    SOURCE_TOOL_RESULT,
    SOURCE_USER,
    require_committed,
)
from memorywire.wire.models import MemoryType

__all__ = ["MemorywireChatMessageHistory", "source_of"]

_SOURCES = {
    "human": SOURCE_USER,
    "ai": SOURCE_AGENT,
    "tool": SOURCE_TOOL_RESULT,
    # a function result is a tool result under its older name
    "function": SOURCE_TOOL_RESULT,
    "system": "system",
}


def source_of(message: BaseMessage) -> str:
    """The provenance of a message; an unknown role is refused, never guessed as trusted."""
    try:
        return _SOURCES[message.type]
    except KeyError:
        raise ValueError(
            f"message type {message.type!r} has no provenance mapping; known: {sorted(_SOURCES)}"
        ) from None


def _text(message: BaseMessage) -> str:
    text = message.text if isinstance(message.text, str) else str(message.text)
    if text.strip():
        return text
    calls = getattr(message, "tool_calls", None) or []
    names = ", ".join(str(c.get("name")) for c in calls)
    return f"({message.type} message calling tools: {names})" if names else f"({message.type})"


class MemorywireChatMessageHistory(BaseChatMessageHistory):
    """One conversation (``session_id``) of one agent, optionally of one user.

    A write staged by governance raises :class:`memorywire.errors.PendingApproval` instead
    of pretending the turn was stored.
    """

    def __init__(
        self,
        client: SyncMemory[Any],
        *,
        agent_id: str,
        session_id: str,
        user_id: str | None = None,
        session_key: str = "session_id",
    ) -> None:
        self.client = client
        self.agent_id = agent_id
        self.session_id = session_id
        self.user_id = user_id
        self.session_key = session_key

    def _scope(self) -> dict[str, Any]:
        scope: dict[str, Any] = {"agent_id": self.agent_id}
        if self.user_id is not None:
            scope["user_id"] = self.user_id
        return scope

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        rows: list[tuple[int, dict[str, Any]]] = []
        cursor: str | None = None
        while True:
            page = self.client.list(
                self._scope(),
                types=[MemoryType.EPISODIC.value],
                filter={self.session_key: self.session_id},
                limit=500,
                cursor=cursor,
            )
            for rec in page.memories:
                meta = rec.metadata or {}
                if "lc_message" in meta:
                    rows.append((int(meta.get("lc_seq", 0)), meta["lc_message"]))
            cursor = page.next_cursor
            if not cursor:
                break
        rows.sort(key=lambda r: r[0])
        return messages_from_dict([doc for _, doc in rows])

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        base = time.time_ns()
        for i, message in enumerate(messages):
            resp = self.client.remember(
                **self._scope(),
                type=MemoryType.EPISODIC.value,
                content=_text(message),
                source=source_of(message),
                metadata={
                    self.session_key: self.session_id,
                    "role": message.type,
                    "lc_seq": base + i,
                    "lc_message": message_to_dict(message),
                },
            )
            require_committed(resp, f"storing a {message.type} message")

    def clear(self) -> None:
        resp = self.client.forget(
            **self._scope(),
            filter={self.session_key: self.session_id},
            reason="chat history cleared",
        )
        require_committed(resp, "clearing the chat history")
